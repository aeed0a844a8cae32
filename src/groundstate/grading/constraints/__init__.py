"""Hard process constraints, checked on the trace: ``C_j(trace)``.

Each constraint gives one :class:`~groundstate.records.CheckResult`. A failure's evidence has
``problems`` (one line saying what went wrong), ``offending_step`` (the step that broke it,
as recorded; absent for ``at_least``, which fails on the trace as a whole) and detail of its
kind. A constraint that cannot be evaluated (a Python check that raises or runs past
:data:`groundstate.grading.outcome.GRADER_TIME_LIMIT`) has ``error`` set: the attempt is
then a grader failure. The language is documented in ``docs/constraints.md``.
"""

from __future__ import annotations

from collections.abc import Sequence

from groundstate.grading import outcome
from groundstate.grading.constraints._dialogue import confirmed, provenance
from groundstate.grading.constraints._history import no_undo
from groundstate.grading.constraints._index import TraceIndex
from groundstate.grading.constraints._match import matches
from groundstate.grading.constraints._order import at_least, at_most, before, never
from groundstate.grading.constraints._python import python_checks
from groundstate.grading.constraints._result import passed
from groundstate.grading.constraints._text import normalise
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
from groundstate.trace import TraceCopies, TraceEvent, agent_events

__all__ = ["evaluate_constraints", "matches", "normalise"]


def evaluate_constraints(
    constraints: Sequence[HardConstraint], events: list[TraceEvent], states: States | None = None
) -> list[CheckResult]:
    """Check each constraint on the trace; *states* gives Python constraints ``s0``.

    Model calls are left out: constraints are about what the agent did and was told.
    """
    actions = agent_events(events)
    index = TraceIndex(actions)  # one index of the trace for all the declarative ones
    python = [c for c in constraints if isinstance(c, PythonConstraint)]
    # The Python ones go to a thread together, each on its copy of one image of the trace;
    # the limit is read at call time: one for every grader (set in grading.outcome).
    checked = iter(python_checks(python, TraceCopies(actions), states, outcome.GRADER_TIME_LIMIT))
    return [
        next(checked) if isinstance(c, PythonConstraint) else _evaluate(c, index)
        for c in constraints
    ]


def _evaluate(constraint: HardConstraint, index: TraceIndex) -> CheckResult:
    try:
        idle = _idle(constraint, index)
        return idle if idle is not None else _declarative(constraint, index)
    except Exception as exc:  # a grader bug is a grader failure, not the agent's
        error = f"{type(exc).__name__}: {exc}"
        kind = next(k for k in CONSTRAINT_KINDS if k in type(constraint).model_fields)
        return CheckResult(id=constraint.id, kind=kind, passed=False, error=error)


def _idle(constraint: HardConstraint, index: TraceIndex) -> CheckResult | None:
    """The result of a constraint that the trace gives nothing to judge, without evaluating it.

    Most of a task's constraints guard tools its conversation never calls: when no step could
    be what a constraint guards (no call of the tool, no message of the role, no write), it
    passes with the evidence :func:`_declarative` gives an empty selection. None: evaluate it.
    """
    match constraint:
        case BeforeConstraint():
            guarded, kind = constraint.before.then, "before"
        case NeverConstraint():
            guarded, kind = constraint.never, "never"
        case AtMostConstraint():
            if index.may_select(constraint.at_most.match):
                return None
            return passed(constraint.id, "at_most", count=0)
        case ConfirmedConstraint():
            guarded, kind = constraint.confirmed.change, "confirmed"
        case ProvenanceConstraint():
            guarded, kind = constraint.provenance.match, "provenance"
        case NoUndoConstraint():
            return None if index.written else passed(constraint.id, "no_undo")
        case _:  # at_least fails on an empty selection: it is always evaluated
            return None
    return None if index.may_select(guarded) else passed(constraint.id, kind)


def _declarative(constraint: HardConstraint, index: TraceIndex) -> CheckResult:
    """The full evaluation of a declarative constraint on the indexed trace."""
    match constraint:
        case BeforeConstraint():
            return before(constraint, index)
        case NeverConstraint():
            return never(constraint, index)
        case AtMostConstraint():
            return at_most(constraint, index)
        case AtLeastConstraint():
            return at_least(constraint, index)
        case ConfirmedConstraint():
            return confirmed(constraint, index)
        case ProvenanceConstraint():
            return provenance(constraint, index)
        case NoUndoConstraint():
            return no_undo(constraint, index.events)
    raise TypeError(f"unknown constraint kind {type(constraint).__name__}")
