"""Verdicts of constraints, with evidence that names the offending step."""

from __future__ import annotations

from typing import Any

from groundstate.records import CheckResult
from groundstate.trace import AgentEvent


def passed(constraint_id: str, kind: str, **evidence: Any) -> CheckResult:
    return CheckResult.trusted(constraint_id, kind, True, evidence)


def failed(
    constraint_id: str, kind: str, event: AgentEvent | None, problem: str, **evidence: Any
) -> CheckResult:
    """A failure: *problem* in one line, the offending step (when there is one) and detail."""
    found: dict[str, Any] = {"problems": [problem]}
    if event is not None:
        found["offending_step"] = step_of(event)
    return CheckResult.trusted(constraint_id, kind, False, found | evidence)


def step_of(event: AgentEvent) -> dict[str, Any]:
    return event.model_dump(mode="json")


def label(event: AgentEvent) -> str:
    """``step 4 (get_order)`` or ``step 5 (agent message)``, for one-line problems."""
    what = getattr(event, "tool", None) or f"{getattr(event, 'role', '?')} message"
    return f"step {event.step} ({what})"
