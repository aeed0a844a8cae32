"""Hard process constraints, checked on the trace: ``C_j(trace)``.

Each constraint gives one :class:`~groundstate.records.CheckResult`. A failure's evidence has
``problems`` (one line saying what went wrong), ``offending_step`` (the step that broke it,
as recorded; absent for ``at_least``, which fails on the trace as a whole) and detail of its
kind. A constraint that cannot be evaluated (a Python check that raises or runs past
:data:`groundstate.grading.outcome.GRADER_TIME_LIMIT`) has ``error`` set: the attempt is
then a grader failure. The language is documented in ``docs/constraints.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import localcontext
from typing import Any

from groundstate.grading import outcome
from groundstate.grading.constraints._dialogue import (
    confirmed,
    confirming_questions,
    parts_left_out,
    provenance,
)
from groundstate.grading.constraints._history import no_undo
from groundstate.grading.constraints._index import TraceIndex, requested_at
from groundstate.grading.constraints._match import matches
from groundstate.grading.constraints._order import at_least, at_most, before, never
from groundstate.grading.constraints._python import python_checks
from groundstate.grading.constraints._result import failed, passed
from groundstate.grading.constraints._text import (
    EXACT,
    MAX_READ_CHARS,
    Unreadable,
    affirms,
    fold,
    mentions,
    normalise,
    reply_words,
    unreadable,
    within_bound,
)
from groundstate.grading.outcome import States
from groundstate.records import CheckResult
from groundstate.spec.constraints import (
    CONSTRAINT_KINDS,
    AtLeastConstraint,
    AtMostConstraint,
    BeforeConstraint,
    ConfirmedConstraint,
    HardConstraint,
    NeverConstraint,
    NoUndoConstraint,
    ProvenanceConstraint,
    PythonConstraint,
)
from groundstate.trace import (
    AgentEvent,
    MessageEvent,
    TraceCopies,
    TraceEvent,
    agent_events,
)

__all__ = [
    "MAX_READ_CHARS",
    "affirms",
    "confirming_questions",
    "decided_at",
    "evaluate_constraints",
    "fold",
    "matches",
    "mentions",
    "normalise",
    "parts_left_out",
    "reply_words",
]


def evaluate_constraints(
    constraints: Sequence[HardConstraint], events: list[TraceEvent], states: States | None = None
) -> list[CheckResult]:
    """Check each constraint on the trace; *states* gives Python constraints ``s0``.

    Model calls are left out: constraints are about what the agent did and was told. A
    check reads at most :data:`MAX_READ_CHARS` characters of a message: one that must read a
    longer agent message fails unread (every Python check, which is given the whole trace),
    and of a longer user message its start and end are read.
    """
    requested = requested_at(events)
    actions = [_decided(i, _within_bound(e), requested) for i, e in enumerate(agent_events(events))]
    # one index of the trace for all the declarative ones
    index = TraceIndex(actions, requested)
    python = [c for c in constraints if isinstance(c, PythonConstraint)]
    too_long = unreadable(actions)
    if too_long is not None:
        checked = iter([_unread(c, too_long) for c in python])
    else:
        # The Python ones go to a thread together, each on a copy of the trace of its own
        # while it runs (TraceCopies.lend: one copy lent on while no check edits or keeps it);
        # the limit is read at call time: one for every grader (set in grading.outcome).
        limit = outcome.GRADER_TIME_LIMIT
        checked = iter(python_checks(python, TraceCopies(actions), states, limit))
    with localcontext(EXACT):  # amounts read exactly whatever this thread's context is
        return [
            next(checked) if isinstance(c, PythonConstraint) else _evaluate(c, index)
            for c in constraints
        ]


def _decided(at: int, event: AgentEvent, requested: dict[int, int]) -> AgentEvent:
    """*event* as checks read it: carrying where the model response that asked for it came
    (``requested_at``, what a trace file says of it replaced), a copy where that differs
    from what the event holds."""
    if event.requested_at == requested.get(at):
        return event
    return event.model_copy(update={"requested_at": requested.get(at)})


def decided_at(trace: Sequence[AgentEvent], at: int) -> int:
    """Where the agent decided ``trace[at]``, a call or a message: the index of the first
    event after the model response that asked for it, or *at* when no recorded model
    response did (an imported trace, an agent whose model calls are not recorded, a user's
    message, the final reply: written after all before it).

    ``trace[:decided_at(trace, at)]`` is what the agent knew when it chose the call's
    arguments or the message's words: a response calling ``list_orders`` and
    ``get_order("O-1002")`` together chose the id before the listing showed it, though the
    trace reads listing, then read; one calling ``get_order`` and ``talk_to_user`` wrote the
    message before the order showed anything. For Python checks, on the trace they are given
    (its indexes)."""
    requested = getattr(trace[at], "requested_at", None)
    return at if not isinstance(requested, int) else min(requested, at)


def _within_bound(event: AgentEvent) -> AgentEvent:
    """A user message over the bound as checks read it (its start and end); anything else as
    is."""
    if not isinstance(event, MessageEvent) or event.role == "agent":
        return event
    if len(event.text or "") <= MAX_READ_CHARS:
        return event
    return event.model_copy(update={"text": within_bound(event.text or "")})


def _unread(constraint: HardConstraint, error: Unreadable) -> CheckResult:
    """The failure of a constraint that must read an agent message too long to judge."""
    kind = _kind_name(constraint)
    return failed(constraint.id, kind, error.message, str(error), unreadable=error.evidence())


def _evaluate(constraint: HardConstraint, index: TraceIndex) -> CheckResult:
    try:
        idle = _idle(constraint, index)
        return idle if idle is not None else _declarative(constraint, index)
    except Unreadable as too_long:  # the agent's message is too long to judge: not ours
        return _unread(constraint, too_long)
    except Exception as exc:  # a grader bug is a grader failure, not the agent's
        error = f"{type(exc).__name__}: {exc}"
        return CheckResult(
            id=str(getattr(constraint, "id", "?")),
            kind=_kind_name(constraint),
            passed=False,
            error=error,
            evidence={"exception": {"type": type(exc).__name__, "message": str(exc)}},
        )


def _kind_name(constraint: object) -> str:
    """The kind key of a constraint; ``unknown`` for an object of no known kind (one that did
    not come through the spec's validation), so its error result can still be made."""
    fields = getattr(type(constraint), "model_fields", {})
    return next((k for k in CONSTRAINT_KINDS if k in fields), "unknown")


@dataclass(frozen=True)
class _Kind:
    """How constraints of one declarative kind are evaluated, and when they can be skipped."""

    name: str
    evaluate: Callable[[Any, TraceIndex], CheckResult]
    """The full evaluation."""
    idle: Callable[[Any, TraceIndex], bool] | None
    """True when the trace has no step the constraint guards (no call of the tool, no
    message of the role, no write): it passes without evaluation. None: always evaluated."""
    idle_evidence: dict[str, Any] = field(default_factory=dict)
    """The evidence the full evaluation gives a pass on an empty selection."""


_KINDS: dict[type[HardConstraint], _Kind] = {
    BeforeConstraint: _Kind("before", before, lambda c, i: not i.may_select(c.before.then)),
    NeverConstraint: _Kind("never", never, lambda c, i: not i.may_select(c.never)),
    AtMostConstraint: _Kind(
        "at_most", at_most, lambda c, i: not i.may_select(c.at_most.match), {"count": 0}
    ),
    AtLeastConstraint: _Kind("at_least", at_least, None),  # fails on an empty selection
    ConfirmedConstraint: _Kind(
        "confirmed", confirmed, lambda c, i: not i.may_select(c.confirmed.change)
    ),
    ProvenanceConstraint: _Kind(
        "provenance", provenance, lambda c, i: not i.may_select(c.provenance.match)
    ),
    NoUndoConstraint: _Kind(
        "no_undo", lambda c, i: no_undo(c, i.events), lambda c, i: not i.written
    ),
}
"""By the constraint's class: looked up, not matched class by class (pydantic models are
ABCs, so each ``isinstance`` that misses costs several dict lookups, and a task has dozens of
constraints)."""


def _kind(constraint: HardConstraint) -> _Kind:
    found = _KINDS.get(type(constraint))
    if found is None:  # a subclass
        found = next((k for t, k in _KINDS.items() if isinstance(constraint, t)), None)
    if found is None:
        raise TypeError(f"unknown constraint kind {type(constraint).__name__}")
    return found


def _idle(constraint: HardConstraint, index: TraceIndex) -> CheckResult | None:
    """The result of a constraint that the trace gives nothing to judge, without evaluating it.

    Most of a task's constraints guard tools its conversation never calls: when no step could
    be what a constraint guards, it passes with the evidence :func:`_declarative` gives an
    empty selection. None: evaluate it.
    """
    kind = _kind(constraint)
    if kind.idle is None or not kind.idle(constraint, index):
        return None
    return passed(constraint.id, kind.name, **kind.idle_evidence)


def _declarative(constraint: HardConstraint, index: TraceIndex) -> CheckResult:
    """The full evaluation of a declarative constraint on the indexed trace."""
    return _kind(constraint).evaluate(constraint, index)
