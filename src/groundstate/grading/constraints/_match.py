"""Which trace steps a :class:`~groundstate.spec.task.Match` selects."""

from __future__ import annotations

from groundstate.environments.base import RowWrite
from groundstate.grading.constraints._paths import holds
from groundstate.grading.constraints._text import normalise, search
from groundstate.spec.canonical import canonical_json
from groundstate.spec.constraints import Match, WriteMatch
from groundstate.trace import AgentEvent, MessageEvent, ToolCallEvent


def matches(match: Match, event: AgentEvent) -> bool:
    """Whether *event* is one of the steps *match* selects (its ``where`` literals included)."""
    if isinstance(event, MessageEvent):
        selected = match.message == event.role and _text_matches(match, event)
    else:
        selected = not match.is_message and _call_matches(match, event)
    return selected and holds(event, match.where, {})


def _text_matches(match: Match, event: MessageEvent) -> bool:
    if event.text is None or (match.final is not None and match.final != event.final):
        return False
    text = normalise(event.text)
    return (match.contains is None or normalise(match.contains) in text) and (
        match.matches is None or search(match.matches, text)
    )


def _call_matches(match: Match, event: ToolCallEvent) -> bool:
    return (
        match.tool in (None, "*", event.tool)
        and (match.ok is None or match.ok == event.ok)
        and isinstance(event.args, dict)
        and all(event.args.get(k) == v for k, v in match.args.items())
        and (match.writes is None or any(_wrote(match.writes, w) for w in event.writes))
    )


def _wrote(wanted: WriteMatch, write: RowWrite) -> bool:
    return (
        write.table == wanted.table
        and (wanted.key is None or canonical_json(write.key) == canonical_json(wanted.key))
        and (not wanted.columns or not set(wanted.columns).isdisjoint(write.columns))
    )
