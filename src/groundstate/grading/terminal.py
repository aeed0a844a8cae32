"""Terminal reasons: exactly one per attempt, assigned by fixed rules.

The rules, applied in order (the first that holds decides):

1. The environment could not be built, reset to its checked initial state, or read at the
   end, a tool implementation crashed, the simulated user failed, or the model's serving
   infrastructure kept failing past its retries (or was still being retried when the time
   limit struck): ``environment_failure/<setup|reset|
   reset_check|tool_crash|final_state|user_simulator|model_serving>``. Invalid: rerun under
   the batch's policy.
2. The agent signalled that it cannot use the harness or tool protocol as configured, or broke
   the protocol: ``harness_compatibility_failure`` (``.../context_window`` when the model's
   API refused the conversation for its length). Counts against the system.
3. The agent's loop ended abnormally: ``agent_failure/<step_limit|time_limit|budget|
   prohibited_action|gave_up|crashed>``.
4. An outcome assertion or constraint could not be evaluated: ``grader_failure``. Invalid.
   Not a judged assertion (kind ``judge``): it never decides the result, so one that could
   not judge leaves the result to the rest and the partial score unknown.
5. An outcome assertion failed (``G = 0``): ``agent_failure/incorrect_state``.
6. A hard process constraint failed (some ``C_j = 0``): ``agent_failure/constraint_violation``.
7. Otherwise ``success`` (``Y = 1``).

Whose is a failure that depends on what the agent sent (an exhausted memory or stack, a
check too slow to finish)? An environment failure is one "independently of the agent's
decisions", so the harness bounds what an agent can send and serves everything within the
bounds: a call's arguments (``gateway.MAX_ARGUMENT_CHARS`` of JSON, plain JSON values nested at
most ``gateway.MAX_ARGUMENT_DEPTH`` levels), the
stack a tool or the user runs on (``episode.HEADROOM`` frames), the text the scripted user
and every check read (``constraints.MAX_READ_CHARS``). Within them, a ``MemoryError`` or
``RecursionError`` raised by a suite tool is the tool's crash (rule 1, ``tool_crash``:
``validate``'s robustness check finds tools that crash on schema-valid input), and one raised
by the simulated user or a check the instrument's (rules 1 and 4). Past them the agent's
request is refused as its own mistake: arguments too large fail the call
(``invalid_arguments``, the attempt goes on), and a check that must read an agent message
longer than the bound fails unread (rule 6, ``constraint_violation``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from groundstate.errors import (
    AgentGaveUp,
    BudgetExceeded,
    ContextWindowExceeded,
    EnvironmentFailure,
    HarnessCompatibilityError,
    ModelServingFailure,
    ProhibitedAction,
    ResetCheckFailed,
    StepLimitReached,
    TimeLimitReached,
)
from groundstate.records import JUDGED, CheckResult

SUCCESS = "success"
COMPATIBILITY = "harness_compatibility_failure"
CONTEXT_WINDOW = f"{COMPATIBILITY}/context_window"


def is_compatibility_failure(reason: str) -> bool:
    """Whether *reason* is a ``harness_compatibility_failure``, bare or with its kind
    (``.../context_window``): compared whole, a kind made the failure another outcome."""
    return reason.partition("/")[0] == COMPATIBILITY


_AGENT_STOPS: Mapping[type[BaseException], str] = MappingProxyType(
    {
        StepLimitReached: "agent_failure/step_limit",
        TimeLimitReached: "agent_failure/time_limit",
        BudgetExceeded: "agent_failure/budget",
        ProhibitedAction: "agent_failure/prohibited_action",
        AgentGaveUp: "agent_failure/gave_up",
        ContextWindowExceeded: CONTEXT_WINDOW,  # before its base class: first match decides
        HarnessCompatibilityError: COMPATIBILITY,
    }
)


AGENT_FAILURES = frozenset(
    {
        *(reason for reason in _AGENT_STOPS.values() if reason.startswith("agent_failure/")),
        "agent_failure/crashed",
        "agent_failure/incorrect_state",
        "agent_failure/constraint_violation",
    }
)
"""Every ``agent_failure/...`` terminal reason an attempt can end with (rules 3, 5 and 6)."""


def interruption_reason(exc: BaseException, stage: str) -> str:
    """The terminal reason for an exception that ended the episode at *stage*."""
    if isinstance(exc, ResetCheckFailed):
        return "environment_failure/reset_check"
    if isinstance(exc, ModelServingFailure):
        return "environment_failure/model_serving"
    if isinstance(exc, EnvironmentFailure):
        return f"environment_failure/{stage}"
    for kind, reason in _AGENT_STOPS.items():
        if isinstance(exc, kind):
            return reason
    return "agent_failure/crashed"


def _decides(result: CheckResult) -> bool:
    """Whether *result* counts in the binary result (a judged verdict never does)."""
    return result.kind != JUDGED


def classify(
    interruption: str | None, assertions: list[CheckResult], constraints: list[CheckResult]
) -> str:
    if interruption is not None:
        return interruption
    # The binary result rests on state and process alone: a judged verdict (kind ``judge``)
    # is reported beside it and counts in the partial score, never in ``success``. So a judge
    # that could not judge leaves the result as the rest decides it (its partial score is
    # unknown): else an agent that failed could make its attempt invalid, and rerun, by
    # sending what the judge's service refuses.
    if any(result.error is not None for result in assertions + constraints if _decides(result)):
        return "grader_failure"
    if not all(result.passed for result in assertions if _decides(result)):
        return "agent_failure/incorrect_state"
    if not all(result.passed for result in constraints):
        return "agent_failure/constraint_violation"
    return SUCCESS
