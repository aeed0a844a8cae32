"""Hard process constraints, checked on the trace: ``C_j(trace)``."""

from __future__ import annotations

from collections.abc import Sequence

from groundstate.grading.outcome import States
from groundstate.records import CheckResult
from groundstate.spec.task import (
    AtMostConstraint,
    BeforeConstraint,
    HardConstraint,
    Match,
    NeverConstraint,
)
from groundstate.trace import MessageEvent, TraceEvent


def matches(match: Match, event: TraceEvent) -> bool:
    if isinstance(event, MessageEvent):
        return (
            match.message == event.role
            and event.text is not None
            and (match.contains is None or match.contains.lower() in event.text.lower())
        )
    return (
        match.tool is not None
        and match.tool in ("*", event.tool)
        and (match.ok is None or match.ok == event.ok)
        and isinstance(event.args, dict)
        and all(event.args.get(k) == v for k, v in match.args.items())
    )


def evaluate_constraints(
    constraints: Sequence[HardConstraint], events: list[TraceEvent], states: States | None = None
) -> list[CheckResult]:
    """Check each constraint on the trace; *states* gives Python constraints ``s0``."""
    return [_evaluate(c, events) for c in constraints]


def _evaluate(constraint: HardConstraint, events: list[TraceEvent]) -> CheckResult:
    if isinstance(constraint, BeforeConstraint):
        return _before(constraint, events)
    if isinstance(constraint, NeverConstraint):
        hits = [e for e in events if matches(constraint.never, e)]
        return _result(constraint.id, "never", hits[:1])
    return _at_most(constraint, events)


def _before(constraint: BeforeConstraint, events: list[TraceEvent]) -> CheckResult:
    seen_first = False
    for event in events:
        if matches(constraint.before.then, event) and not seen_first:
            return _result(constraint.id, "before", [event])
        seen_first = seen_first or matches(constraint.before.first, event)
    return _result(constraint.id, "before", [])


def _at_most(constraint: AtMostConstraint, events: list[TraceEvent]) -> CheckResult:
    hits = [e for e in events if matches(constraint.at_most.match, e)]
    offending = hits[constraint.at_most.n :]
    result = _result(constraint.id, "at_most", offending[:1])
    result.evidence["count"] = len(hits)
    return result


def _result(constraint_id: str, kind: str, offending: list[TraceEvent]) -> CheckResult:
    evidence = {"offending_step": offending[0].model_dump(mode="json")} if offending else {}
    return CheckResult(id=constraint_id, kind=kind, passed=not offending, evidence=evidence)
