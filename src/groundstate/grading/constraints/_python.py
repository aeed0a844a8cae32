"""Python constraints: ``fn(trace, s0) -> bool | (bool, evidence)``, run under a time limit."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial

from groundstate.deadline import Returned
from groundstate.grading.outcome import Evaluated, States, call_check, within_limits
from groundstate.records import CheckResult
from groundstate.returned import shown
from groundstate.spec.constraints import PythonConstraint
from groundstate.trace import AgentEvent, TraceCopies


def python_checks(
    constraints: Sequence[PythonConstraint],
    events: TraceCopies[AgentEvent],
    states: States | None,
    limit: float,
) -> list[CheckResult]:
    """Run each function on a copy of the trace from *events* (its own while it runs, see
    :meth:`~groundstate.trace.TraceCopies.lend`), each under *limit*
    (handed to one thread together); an exception or a timeout is an error (a grader
    failure), not a fail."""
    if not constraints:
        return []
    if states is None:
        error = ValueError("a Python constraint needs the grader's states (s0)")
        return [_error(c, error) for c in constraints]
    calls = [(partial(_run, c, events), limit, f"groundstate-check-{c.id}") for c in constraints]
    returned = within_limits(calls, states)
    return [_result(c, r) for c, r in zip(constraints, returned, strict=True)]


def _result(constraint: PythonConstraint, returned: Returned[Evaluated]) -> CheckResult:
    try:
        passed, evidence = returned.result()
    except Exception as exc:  # the grader is software too: record, don't crash the batch
        return _error(constraint, exc)
    # Checked already: *passed* a bool (call_check), *evidence* a dict read back from JSON
    # (_run), so its keys are strings; the constructor's validation would find nothing.
    return CheckResult.trusted(constraint.id, "check", passed, evidence)


def _error(constraint: PythonConstraint, exc: Exception) -> CheckResult:
    return CheckResult(
        id=constraint.id,
        kind="check",
        passed=False,
        error=f"{type(exc).__name__}: {exc}",
        evidence={"exception": {"type": type(exc).__name__, "message": str(exc)}},
    )


def _run(
    constraint: PythonConstraint, events: TraceCopies[AgentEvent], states: States
) -> Evaluated:
    # A copy: the function may not edit the trace the record keeps, nor another check's.
    passed, evidence = events.lend(
        lambda trace: call_check(constraint.check, states, trace, states.s0)
    )
    # Evidence goes into the run record, which is JSON: make it so now, not at storing time
    # (nothing to make of none, the usual evidence of a pass). A set or an object becomes its
    # address-free repr, a set's items sorted: the same in every process and run.
    if not evidence:
        return passed, {}
    return passed, json.loads(json.dumps(evidence, default=shown))
