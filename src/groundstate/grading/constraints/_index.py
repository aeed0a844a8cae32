"""One attempt's trace, indexed once for all its declarative constraints.

A task has dozens of constraints and most name one tool or one role: looking each one's
steps up among the calls of that tool (or the messages of that role), and working out the
steps of equal matches once (a ``first`` shared by every ``before``, the default ``yes``
and ``no`` of every ``confirmed``), costs a fraction of testing every match on every step.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from groundstate.agents.model_loop import TALK_TO_USER, parse_arguments
from groundstate.grading.constraints._match import compiled
from groundstate.spec.constraints import Match
from groundstate.trace import (
    AgentEvent,
    MessageEvent,
    ModelCallEvent,
    ModelToolCall,
    ToolCallEvent,
    TraceEvent,
    recordable,
)


class TraceIndex:
    """The steps of one trace by tool and by role, and the steps each match selects."""

    def __init__(
        self, events: Sequence[AgentEvent], requested: dict[int, int] | None = None
    ) -> None:
        self.events = list(events)
        self.requested = requested or {}
        """Tool-call (and agent-message) index -> the index of the first event after the model
        response that asked for it (see :func:`requested_at`); steps no recorded model
        response asked for are absent."""
        self._calls: list[int] = []
        self._by_tool: dict[str, list[int]] = {}
        self._by_role: dict[str, list[int]] = {}
        self.written = False
        """Whether any call recorded a row-level write."""
        for index, event in enumerate(self.events):
            if isinstance(event, MessageEvent):
                self._by_role.setdefault(event.role, []).append(index)
            else:
                self._calls.append(index)
                self._by_tool.setdefault(event.tool, []).append(index)
                self.written = self.written or bool(event.writes)
        self._hits: dict[str, tuple[list[int], frozenset[int]]] = {}
        self._worked_out: dict[Any, Any] = {}

    def before(self, at: int) -> Before:
        """The steps before step *at*, carrying what checks worked out from this trace's steps
        (shared by every prefix of it: the strings each tool output shows, read once per
        attempt rather than once per change and per check)."""
        return Before(self.events[:at], self._worked_out)

    def hits(self, match: Match) -> list[int]:
        """The indexes of the steps *match* selects, in trace order."""
        return self._selected(match)[0]

    def hit_set(self, match: Match) -> frozenset[int]:
        """The same indexes as a set, to ask of a step whether *match* selects it."""
        return self._selected(match)[1]

    def may_select(self, match: Match) -> bool:
        """False when no step could match: the trace has no call of its tool (no call at all,
        for any tool) or no message of its role. Costs a lookup, not a test of every step."""
        return bool(self._candidates(match))

    def _selected(self, match: Match) -> tuple[list[int], frozenset[int]]:
        found = compiled(match)
        known = self._hits.get(found.key)
        if known is None:
            hits = [i for i in self._candidates(match) if found.selects(self.events[i])]
            known = self._hits[found.key] = (hits, frozenset(hits))
        return known

    def _candidates(self, match: Match) -> list[int]:
        """The steps that can match at all: the messages of its role, the calls of its tool."""
        if match.message is not None:
            return self._by_role.get(match.message, [])
        if match.tool in (None, "*"):
            return self._calls
        return self._by_tool.get(match.tool, [])


class Before(list[AgentEvent]):
    """The steps of a trace before one of them (a plain list of them), with a memo shared by
    every prefix of the same trace: ``worked_out`` maps a key naming what was worked out,
    from which steps, to the result. Only values that depend on nothing but those steps go in
    it, and only while one evaluation reads the trace (a :class:`TraceIndex` lives for one)."""

    def __init__(self, events: Sequence[AgentEvent], worked_out: dict[Any, Any]) -> None:
        super().__init__(events)
        self.worked_out = worked_out


def requested_at(trace: Sequence[TraceEvent]) -> dict[int, int]:
    """For each tool call and agent message a recorded model response asked for, where that
    response came, as the index (among the trace's events without model calls) of the first
    event after it.

    A model that asks the user and acts in one response (``talk_to_user`` and ``refund_item``
    together) has the call made after the user's reply, but decided before it: the trace
    reads question, yes, call, and only the model call shows the call was not waiting for
    the yes. Likewise a message asked for beside a call was written before the call's output
    came, though the trace reads output, then message.

    Trace events carry no call id, so a step is paired with a request of the same tool and
    the same arguments (a message, with a ``talk_to_user`` request saying its text): from
    the latest response before it that has one not paired yet, the first of them in that
    response. A call refused for its arguments, which the trace may keep otherwise than the
    model wrote them (cut when oversized, a ``repr`` when no JSON), is then paired by its
    tool alone with a request of the latest response before it that no step matched. A
    request never made pairs with nothing, and a step no request asked for (a call the
    agent's own code made) is judged where it came: a call is never paired by its tool
    alone with a request that asked for other arguments (the id guessed in the listing's
    response, or a request the agent never made, would pass to a call made later)."""
    steps: list[tuple[int, AgentEvent]] = []  # each step, with the latest response before it
    requests: list[_Request] = []  # every response's, oldest first
    by_key: dict[tuple[str, str], list[_Request]] = {}
    at = -1  # the latest response that asked for anything, as the index of the step after it
    for event in trace:
        if isinstance(event, ModelCallEvent):
            calls = event.response.tool_calls if event.response is not None else []
            for call in calls:
                request = _Request(len(steps), call.name)
                requests.append(request)
                for key in _asked(call):
                    by_key.setdefault(key, []).append(request)
            at = len(steps) if calls else at
        else:
            steps.append((at, event))
    if not requests:  # no recorded model response asked for anything: nothing to pair
        return {}
    found: dict[int, _Request] = {}
    for index, (_, event) in enumerate(steps):
        made = _made(event)
        asked = by_key.get(made, []) if made is not None else []
        exact = [r for r in asked if r.at <= index and not r.paired]
        if exact:
            latest = max(r.at for r in exact)
            found[index] = next(r for r in exact if r.at == latest).pair()
    for index, (latest, event) in enumerate(steps):
        if index in found or not _refused_for_arguments(event):
            continue
        named = (r for r in requests if (r.at, r.name) == (latest, event.tool) and not r.paired)
        first = next(named, None)
        if first is not None:
            found[index] = first.pair()
    return {index: request.at for index, request in found.items()}


@dataclass(eq=False)
class _Request:
    """One tool call a model response asked for."""

    at: int
    """The index of the first step after the response."""
    name: str
    paired: bool = False

    def pair(self) -> _Request:
        self.paired = True
        return self


def _refused_for_arguments(event: AgentEvent) -> TypeGuard[ToolCallEvent]:
    """Whether *event* is a call refused before it ran, for its arguments or its tool's
    name (the trace keeps oversized arguments cut either way)."""
    return (
        isinstance(event, ToolCallEvent)
        and not event.ok
        and event.error_class in ("invalid_arguments", "unknown_tool")
    )


def _asked(call: ModelToolCall) -> set[tuple[str, str]]:
    """The keys (:func:`_made`) of the steps that make *call*: a message for a
    ``talk_to_user`` saying one; a call of its tool with its arguments as the model loop
    passes them to the session (:func:`~groundstate.agents.model_loop.parse_arguments`,
    each string as a trace records it), or as the model wrote them (what a call cut off by
    the answer's end is given). Arguments nested too deeply to walk are keyed as written
    only: the gateway refuses such a call, which is then paired by its tool alone."""
    try:
        arguments = recordable(parse_arguments(call.arguments)[0])
    except RecursionError:  # the model's own text: its mistake, not the grader's crash
        arguments = call.arguments
    if call.name == TALK_TO_USER:
        said = arguments.get("message") if isinstance(arguments, dict) else None
        return {("", said)} if isinstance(said, str) else set()
    return {(call.name, _canonical(arguments)), (call.name, _canonical(call.arguments))}


def _made(event: AgentEvent) -> tuple[str, str] | None:
    """What a request must ask for to be paired with *event* (an agent message: ``""`` and
    its text; a call: its tool and its arguments' canonical JSON); None for a user's."""
    if isinstance(event, MessageEvent):
        return ("", event.text) if event.role == "agent" and event.text is not None else None
    return (event.tool, _canonical(event.args))


def _canonical(value: Any) -> str:
    """*value* as JSON with sorted keys (``1``, ``1.0`` and ``true`` differ), or its repr
    (nested too deeply for either: a key of its own, which nothing else makes)."""
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        try:
            return repr(value)
        except RecursionError:
            return f"\0nested too deeply: {id(value)}"
