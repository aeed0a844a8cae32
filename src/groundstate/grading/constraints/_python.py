"""Python constraints: ``fn(trace, s0) -> bool | (bool, evidence)``, run under a time limit."""

from __future__ import annotations

import json
from typing import Any

from groundstate.grading.outcome import States, call_check, within_limit
from groundstate.records import CheckResult
from groundstate.spec.constraints import PythonConstraint
from groundstate.trace import AgentEvent, TraceCopies


def python_check(
    constraint: PythonConstraint,
    events: TraceCopies[AgentEvent],
    states: States | None,
    limit: float,
) -> CheckResult:
    """Run the function on a copy of the trace from *events*; an exception or a timeout is an
    error (a grader failure), not a fail."""
    try:
        if states is None:
            raise ValueError("a Python constraint needs the grader's states (s0)")
        passed, evidence = within_limit(
            lambda bounded: _run(constraint, events, bounded),
            states,
            limit,
            f"groundstate-check-{constraint.id}",
        )
    except Exception as exc:  # the grader is software too: record, don't crash the batch
        return CheckResult(
            id=constraint.id,
            kind="check",
            passed=False,
            error=f"{type(exc).__name__}: {exc}",
            evidence={"exception": {"type": type(exc).__name__, "message": str(exc)}},
        )
    return CheckResult(id=constraint.id, kind="check", passed=passed, evidence=evidence)


def _run(
    constraint: PythonConstraint, events: TraceCopies[AgentEvent], states: States
) -> tuple[bool, dict[str, Any]]:
    # A copy: the function may not edit the trace the record keeps, nor another check's.
    trace = events.fresh()
    passed, evidence = call_check(constraint.check, states.suite_root, trace, states.s0)
    # Evidence goes into the run record, which is JSON: make it so now, not at storing time.
    return passed, json.loads(json.dumps(evidence, default=repr))
