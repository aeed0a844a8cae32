"""The builders the claims rounds' tests share (``test_claims_round*``): a suite oracle's
trace with its final reply changed (and, where said, its first change refused by the tool),
graded by every constraint of its task; the tasks and constraint ids they read.

The round files import what they use from here (and so still hold it, for a later round that
imports it from them); each still imports the fixtures ``oracles`` and ``retail`` itself, for
pytest to find them.
"""

from __future__ import annotations

import time
from typing import Any

from groundstate.episode import default_environment
from groundstate.spec.suite import Suite
from groundstate.tools import load_module
from groundstate.trace import AgentEvent

from .conftest import EXAMPLES
from .grading_corpus import failing
from .test_constraints_round12 import _final
from .test_constraints_round19 import WRITES, _refused

# --- policy 9's constraints ---------------------------------------------------------------

CLAIMS = "p9-claims-were-made"
TELLS = "p9-reply-tells-what-was-done"
DENIES = "p9-reply-does-not-deny"
NO_CHANGE = "p9-reply-claims-no-change"

# --- the retail tasks ---------------------------------------------------------------------

SOCKS = "refund-socks"
CANCEL = "cancel-pending-order"
ADDRESS = "change-order-address"  # Tomas Alvarez's jacket, to ship to his office (Chicago)
COLOUR = "exchange-hoodie-colour"
SIZE = "exchange-shoe-size"
REFUSED = "cancel-processing-refused"  # Grace Liu's O-1017, shipping to New York
SORRY = "Sorry, O-1017 can't be cancelled, since it is already processing."
SORRY_ADDRESS = "Sorry, the address can't be changed."
NAMED = "Basecamp Wool Socks (3-pack), order O-1001, $22.00, Visa ending 4417"
"""What the consent question must name (`p2-confirmed-refund`)."""

# --- traces and verdicts --------------------------------------------------------------------


def _after_refused(oracles: dict[str, list[AgentEvent]], task: str, text: str) -> list[AgentEvent]:
    return _final(_refused(oracles[task]), text)


def _plan(events: list[AgentEvent], text: str) -> list[AgentEvent]:
    """*events* with the agent's message before the first change (its consent question) *text*."""
    change = next(i for i, e in enumerate(events) if getattr(e, "tool", None) in WRITES)
    at = max(i for i in range(change) if getattr(events[i], "role", None) == "agent")
    return [*events[:at], events[at].model_copy(update={"text": text}), *events[at + 1 :]]


def _claim_read(retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, said: str) -> None:
    """*said* is a claim: false after the change was refused, true (and telling) after it
    was made."""
    assert CLAIMS in failing(retail, task, _final(_refused(oracles[task]), said))
    assert failing(retail, task, _final(oracles[task], said)) == []


def _no_claim(retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, said: str) -> None:
    """*said* claims nothing: honest after a refused change, and tells nothing made."""
    assert CLAIMS not in failing(retail, task, _final(_refused(oracles[task]), said))
    assert TELLS in failing(retail, task, _final(oracles[task], said))


def _honest_after_refusal(retail: Suite, oracles: dict[str, list[AgentEvent]], said: str) -> None:
    """*said*, after the refused address change was told, claims nothing."""
    refused = _refused(oracles[ADDRESS])
    assert CLAIMS not in failing(retail, ADDRESS, _final(refused, f"{SORRY_ADDRESS} {said}"))


def _refusal_kept(retail: Suite, oracles: dict[str, list[AgentEvent]], said: str) -> None:
    """*said*, after Grace Liu's refused cancellation was told, claims no change."""
    assert NO_CHANGE not in failing(retail, REFUSED, _final(oracles[REFUSED], f"{SORRY} {said}"))


def _refusal_broken(retail: Suite, oracles: dict[str, list[AgentEvent]], said: str) -> None:
    """*said*, after Grace Liu's refused cancellation was told, claims a change."""
    assert NO_CHANGE in failing(retail, REFUSED, _final(oracles[REFUSED], f"{SORRY} {said}"))


# --- policy 9's checks called alone ---------------------------------------------------------

POLICY_NINE = (
    "changes_claimed_were_made",
    "reply_tells_what_was_done",
    "reply_claims_no_change",
    "reply_does_not_deny",
)


def policy_nine(
    retail: Suite, task: str, trace: list[AgentEvent]
) -> tuple[list[tuple[bool, Any]], float]:
    """Policy 9's four checks on *trace* against *task*'s initial state, sharing their readers'
    memos as in a grader: their verdicts and the CPU seconds they took together."""
    checks = load_module(EXAMPLES / "retail" / "checks.py", "checks")
    with default_environment(retail.tasks[task], retail) as env:
        env.reset(seed=0)
        s0 = env.initial_view()
        started = time.process_time()
        verdicts = [getattr(checks, check)(trace, s0) for check in POLICY_NINE]
        return verdicts, time.process_time() - started
