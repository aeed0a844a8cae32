"""One attempt's trace, indexed once for all its declarative constraints.

A task has dozens of constraints and most name one tool or one role: looking each one's
steps up among the calls of that tool (or the messages of that role), and working out the
steps of equal matches once (a ``first`` shared by every ``before``, the default ``yes``
and ``no`` of every ``confirmed``), costs a fraction of testing every match on every step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from groundstate.grading.constraints._match import compiled
from groundstate.spec.constraints import Match
from groundstate.trace import AgentEvent, MessageEvent, ModelCallEvent, ToolCallEvent, TraceEvent


class TraceIndex:
    """The steps of one trace by tool and by role, and the steps each match selects."""

    def __init__(
        self, events: Sequence[AgentEvent], requested: dict[int, int] | None = None
    ) -> None:
        self.events = list(events)
        self.requested = requested or {}
        """Tool-call index -> the index of the first event after the model call that asked for
        it (see :func:`requested_at`); calls no recorded model call asked for are absent."""
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
    """For each tool call a recorded model response asked for, where that response came, as
    the index (among the trace's events without model calls) of the first event after it.

    A model that asks the user and acts in one response (``talk_to_user`` and ``refund_item``
    together) has the call made after the user's reply, but decided before it: the trace
    reads question, yes, call, and only the model call shows the call was not waiting for
    the yes. A call is paired with the latest model response that listed its tool and has
    not been paired up to that many calls of it."""
    found: dict[int, int] = {}
    pending: list[str] = []
    at = -1  # where the latest model response came
    index = 0
    for event in trace:
        if isinstance(event, ModelCallEvent):
            if event.response is not None and event.response.tool_calls:
                pending = [call.name for call in event.response.tool_calls]
                at = index
            continue
        if isinstance(event, ToolCallEvent) and event.tool in pending:
            pending.remove(event.tool)
            found[index] = at
        index += 1
    return found
