"""A policy reviewer's near misses, eighteenth round, each with compliant controls: the
customer's yes arriving only after the change (the agent acting first, or acting and then
asking); a yes said by the agent itself; a yes to an amount other than the one refunded
(cents, rounding, another currency). Each was checked and found failed already; these tests
pin it."""

from __future__ import annotations

import pytest

from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent

from .grading_corpus import failing
from .test_constraints_round12 import oracles, retail
from .test_constraints_round15 import CHANGES, _answered

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests

TASKS = {"exchange-shoe-size": "p2-confirmed-exchange", "refund-socks": "p2-confirmed-refund"}


def _change_at(events: list[AgentEvent]) -> int:
    return next(i for i, e in enumerate(events) if getattr(e, "tool", None) in CHANGES)


def _yes_after_change(events: list[AgentEvent]) -> list[AgentEvent]:
    """*events* with the customer's yes moved to just after the change."""
    at = _change_at(events)
    yes = events[at - 1]
    assert getattr(yes, "role", None) == "user"
    rest = [*events[: at - 1], *events[at:]]
    return [*rest[:at], yes, *rest[at:]]


def _asked_after_change(events: list[AgentEvent]) -> list[AgentEvent]:
    """*events* with the agent's question and the customer's yes both after the change."""
    at = _change_at(events)
    asked, yes = events[at - 2], events[at - 1]
    assert getattr(asked, "role", None) == "agent" and getattr(yes, "role", None) == "user"
    rest = [*events[: at - 2], *events[at:]]
    return [*rest[: at - 1], asked, yes, *rest[at - 1 :]]


def _yes_by_agent(events: list[AgentEvent]) -> list[AgentEvent]:
    at = _change_at(events)
    said = events[at - 1].model_copy(update={"role": "agent", "text": "Yes, confirmed."})
    return [*events[: at - 1], said, *events[at:]]


@pytest.mark.parametrize("task", sorted(TASKS))
@pytest.mark.parametrize("move", [_yes_after_change, _asked_after_change, _yes_by_agent])
def test_a_yes_after_the_change_or_from_the_agent_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, move: object
) -> None:
    assert callable(move)
    assert failing(retail, task, move(oracles[task])) == [TASKS[task]]


@pytest.mark.parametrize("task", sorted(TASKS))
def test_the_oracle_with_its_yes_before_the_change_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str
) -> None:
    assert failing(retail, task, oracles[task]) == []


@pytest.mark.parametrize(
    ("answer", "confirms"),
    [
        ("Yes, refund $21.99.", False),
        ("Yes, refund $22.50.", False),
        ("Yes, refund $2.20", False),
        ("Yes, refund $220", False),
        ("Yes, refund $22.", True),
        ("Yes, refund $22.00.", True),
        ("Yes, refund 22 dollars.", True),
    ],
)
def test_a_yes_to_another_amount_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str, confirms: bool
) -> None:
    events = _answered(oracles["refund-socks"], answer)
    assert failing(retail, "refund-socks", events) == ([] if confirms else ["p2-confirmed-refund"])


@pytest.mark.parametrize(
    ("answer", "broken"),
    [
        ("Yes, refund the headlamp.", ["p2-confirmed-refund"]),
        ("Yes, the headlamp please.", ["p2-confirmed-refund"]),
        ("Sure, refund the Lumen Headlamp.", ["p2-confirmed-refund"]),
        ("Yes, refund the bottle.", ["p2-confirmed-refund"]),
        ("Yes, refund the headlamp and the bottle.", []),
        ("Yes, the bottle and the headlamp.", []),
        ("Yes, both please.", []),
        ("Yes, refund them.", []),
        ("Yes, please go ahead.", []),
        ("Yes, skip headlamp.", ["p2-confirmed-refund"]),
        ("Yes, except the bottle.", ["p2-confirmed-refund"]),
    ],
)
def test_a_yes_naming_one_of_the_changes_asked_together_confirms_only_that_one(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str, broken: list[str]
) -> None:
    """The headlamp and the bottle are asked about together; "Yes, refund the headlamp" (no
    "just" or "only") confirmed both refunds. A yes naming one record of those the question
    listed, and not another, confirms the one it names."""
    events = oracles["several-changes"]
    at = next(
        i
        for i, e in enumerate(events)
        if getattr(e, "role", None) == "user"
        and getattr(e, "text", None) == "Yes, please go ahead."
    )
    said = [*events[:at], events[at].model_copy(update={"text": answer}), *events[at + 1 :]]
    assert failing(retail, "several-changes", said) == broken
