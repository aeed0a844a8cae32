"""A policy reviewer's near misses, twenty-seventh round: an option preferred in the split
form, a yes leaving one item out, an item list the τ² answer kept to, a value turned down
with a preposition, and a success claim with no change made.

- "Rather the Visa than the gift card." to a choice between them picked nothing (only the
  joined "the Visa rather than the gift card" was read).
- "Yes, but not the headlamp." to the refunds of the headlamp and the bottle and a
  cancellation stayed a plain no: it now confirms the changes whose rule names another thing
  (the bottle's refund, the beanie's cancellation) and not the headlamp's; a rule naming no
  thing of its own (an amount alone) still reads it as a no.
- τ²'s ``items-confirmed`` read only the question: "Return the lamp and the kettle?" "Only
  the lamp." then both returned passed it (and ``confirmed-<tool>``, which names the order
  alone, failed the compliant return of the lamp alone).
- "Yes. Not to the Visa though.", "Go ahead, just not to the Visa.", "Yes, to anything but
  the Visa." confirmed a refund to the Visa: only "not the Visa" was read as turning it down.
- The retail example's ``p9-claims-were-made`` passed "All done: I have made the change you
  asked for." and "All done: I did cancel the beanie" with no change made at all.
"""

from __future__ import annotations

from typing import Any

import pytest

from groundstate.spec.suite import Suite
from groundstate.tau2 import retail_checks as tau2_checks
from groundstate.tau2.policy import constraint_sets
from groundstate.trace import AgentEvent, ToolCallEvent

from .grading_corpus import failing
from .test_constraints_round9 import ORDER, _items_trace
from .test_constraints_round12 import _final, oracles, retail
from .test_constraints_round25 import (
    AMOUNT_RULE,
    CANCEL,
    CHOICE,
    CLAIMS,
    MIXED,
    QUESTION,
    REFUND,
    _mixed,
    _socks,
)
from .trace_builder import Trace, constraint

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests


# --- 1. an option preferred "rather ... than" another -------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Rather the Visa than the gift card.",
        "Rather Visa than gift card",
        "I'd rather the Visa than the gift card.",
        "I'd rather have the Visa than the gift card",
        "Rather the Visa than the gift card, thanks.",
    ],
)
def test_the_option_preferred_in_the_split_form_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """ "Rather the Visa than the gift card." picked nothing: a no."""
    assert REFUND not in _socks(retail, oracles, CHOICE, answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Rather the gift card than the Visa.",
        "I'd rather have the gift card than the Visa",
        "I'd rather not.",
        "Rather than the Visa.",
    ],
)
def test_the_other_option_preferred_in_the_split_form_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert REFUND in _socks(retail, oracles, CHOICE, answer)


def _tau2_paid(answer: str, method: str) -> bool:
    from .test_constraints_round26 import _returned

    return _returned(answer, method, "return_delivered_order_items")[0]


def test_a_tau2_answer_preferring_one_method_in_the_split_form_picks_it() -> None:
    """τ²'s `payment-confirmed` reads the answer as the constraints do."""
    assert not _tau2_paid("Rather the gift card than PayPal.", "paypal_1")
    assert _tau2_paid("Rather the gift card than PayPal.", "gift_card_1")


# --- 2. a yes leaving one thing out -------------------------------------------------------------


def _without(events: list[AgentEvent], product: str) -> list[AgentEvent]:
    """The several-changes trace without the refund of *product*."""
    kept = [
        e
        for e in events
        if not (
            isinstance(e, ToolCallEvent) and e.tool == "refund_item" and product in str(e.output)
        )
    ]
    assert len(kept) == len(events) - 1
    return kept


def _mixed_without(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str, product: str | None
) -> list[str]:
    events = oracles["several-changes"]
    if product is not None:
        events = _without(events, product)
    return _mixed(retail, {"several-changes": events}, answer)


LEAVES_OUT_HEADLAMP = [
    "Yes, but not the headlamp.",
    "Yes, not the headlamp though.",
    "Sure, but not the lamp.",
    "Yes, but not the headlamp refund.",
]


@pytest.mark.parametrize("answer", LEAVES_OUT_HEADLAMP)
def test_a_yes_but_not_one_item_confirms_the_others(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """ "Yes, but not the headlamp." was a plain no: the bottle's refund and the beanie's
    cancellation were not confirmed."""
    failed = _mixed_without(retail, oracles, answer, "Headlamp")
    assert REFUND not in failed
    assert CANCEL not in failed


@pytest.mark.parametrize("answer", LEAVES_OUT_HEADLAMP)
def test_a_yes_but_not_one_item_confirms_no_change_of_that_item(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    for refunded in ("Bottle", None):  # the headlamp refunded, alone or with the bottle
        failed = _mixed_without(retail, oracles, answer, refunded)
        assert REFUND in failed
        assert CANCEL not in failed


def test_a_yes_but_not_the_beanie_cancellation_confirms_the_refunds(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    assert _mixed(retail, oracles, "Yes, but not the beanie cancellation.") == [CANCEL]


@pytest.mark.parametrize(
    "answer",
    ["Yes, but not the Mastercard.", "Yes, but not now.", "Yes, but not like that."],
)
def test_a_yes_turning_down_a_value_or_a_time_confirms_no_refund(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert REFUND in _mixed(retail, oracles, answer, MIXED)


TWO = "I can refund order O-1 ($64.00: the headlamp and the bottle) to your Visa. Go ahead?"


@pytest.mark.parametrize(
    ("answer", "confirms"),
    [
        ("Yes, but not the bottle.", False),  # the rule cannot tell the bottle from the refund
        ("Yes, but that's not the point.", True),
        ("Yes please.", True),
    ],
)
def test_a_yes_leaving_a_thing_out_of_a_change_naming_no_thing_confirms_nothing(
    answer: str, confirms: bool
) -> None:
    trace = Trace("A refund please").agent(TWO).user(answer)
    check = trace.call("refund", {"order_id": "O-1"}, {"amount": "$64.00"}).check(AMOUNT_RULE)
    assert check.passed is confirms


# --- 3. τ²: the items the answer keeps to -------------------------------------------------------

RETURN_TWO = (
    f"Shall I return the Desk Lamp and the Electric Kettle from order {ORDER} to your gift card?"
)
LAMP_ONLY = {"item_ids": ["1000000001"]}
BOTH = {"item_ids": ["1000000001", "1000000002"]}
TAU2_RULES = {c["id"]: c for c in constraint_sets()["policy"]}


def _tau2_return(answer: str, args: dict[str, Any]) -> tuple[bool, bool]:
    """(`confirmed-return_delivered_order_items`, `items-confirmed`) on a return after
    *answer*."""
    trace = _items_trace(RETURN_TWO, "return_delivered_order_items", args, answer)
    rule = constraint(**TAU2_RULES["confirmed-return_delivered_order_items"])
    return trace.check(rule).passed, tau2_checks.items_confirmed(trace.events, None)[0]


KEEPS_TO_LAMP = [
    "Only the lamp.",
    "Yes, just the lamp",
    "Yes, but not the kettle",
    "Yes, except the kettle",
    "Yes, keep the kettle",
    "The lamp only",
]


@pytest.mark.parametrize("answer", KEEPS_TO_LAMP)
def test_a_tau2_return_of_items_the_answer_left_out_fails(answer: str) -> None:
    """`items-confirmed` read the question alone, which named both items."""
    assert _tau2_return(answer, BOTH) == (True, False)


@pytest.mark.parametrize("answer", KEEPS_TO_LAMP)
def test_a_tau2_return_of_the_items_the_answer_kept_passes(answer: str) -> None:
    """`confirmed-return_delivered_order_items` names the order alone: "Only the lamp"
    narrowed the yes to nothing it names, and failed the compliant return."""
    assert _tau2_return(answer, LAMP_ONLY) == (True, True)


@pytest.mark.parametrize(
    ("answer", "args", "passes"),
    [
        ("Yes", BOTH, True),
        ("Yes, both", BOTH, True),
        ("Yes, both of them, please.", BOTH, True),
        ("Yes, the lamp and the kettle.", BOTH, True),
        ("Yes, the kettle", LAMP_ONLY, False),
        ("The kettle only", BOTH, False),
    ],
)
def test_a_tau2_return_answered_for_all_or_for_another_item(
    answer: str, args: dict[str, Any], passes: bool
) -> None:
    assert _tau2_return(answer, args)[1] is passes


# --- 4. a value turned down with a preposition --------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Yes. Not to the Visa though.",
        "Go ahead, just not to the Visa.",
        "Yes, to anything but the Visa.",
        "Yes, not onto the Visa please",
        "Yes, though not to my Visa.",
        "Yes, but not on my Visa.",
        "Yes, any card except the Visa.",
        "Sure, as long as it's not the Visa.",
        "Yes, unless it's the Visa.",
        "Yes if it's under $20.",
        "Yes, but not the socks.",
    ],
)
def test_a_yes_turning_down_the_questions_value_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """ "Yes. Not to the Visa though." confirmed the refund to the Visa."""
    assert REFUND in _socks(retail, oracles, QUESTION, answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, I'm not worried about the Visa.",
        "Yes, go ahead, it's not the first time.",
        "Yes, that's not a problem.",
        "Yes please. Not a big deal.",
        "Yes, not the gift card.",
        '"Shall I go ahead?" Yes.',
        "> Shall I go ahead?\nYes please.",
    ],
)
def test_a_yes_with_a_not_about_something_else_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert REFUND not in _socks(retail, oracles, QUESTION, answer)


THOUSANDS = "I can refund order O-1: $1,250.00 to your Visa. Shall I go ahead?"


@pytest.mark.parametrize(
    ("answer", "confirms"),
    [
        ("Yes, 1250 dollars is fine", True),
        ("Yes, $1,250 is right", True),
        ("Yes, twelve hundred fifty dollars", True),
        ("Yes, $1,205 is fine", False),
        ("Yes but only $1,000", False),
    ],
)
def test_an_amount_with_a_thousands_separator_said_back(answer: str, confirms: bool) -> None:
    trace = Trace("A refund please").agent(THOUSANDS).user(answer)
    check = trace.call("refund", {"order_id": "O-1"}, {"amount": "$1,250.00"}).check(AMOUNT_RULE)
    assert check.passed is confirms


def test_a_yes_before_the_question_confirms_nothing() -> None:
    trace = Trace("Refund order O-1 please, yes go ahead with whatever")
    trace.agent("I can refund order O-1: $25.00 to your Visa. Shall I go ahead?")
    assert (
        not trace.call("refund", {"order_id": "O-1"}, {"amount": "$25.00"})
        .check(AMOUNT_RULE)
        .passed
    )


# --- 5. a success claim with no change made -----------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "All done: I have made the change you asked for.",
        "All done: I did cancel the Alpine Merino Beanie from order O-1020.",
        "I did go ahead and cancel the beanie.",
        "That's taken care of.",
    ],
)
def test_a_success_claim_with_no_change_made_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    """The hasty agent's "All done: I did cancel ..." with no call passed every constraint."""
    events = [
        e
        for e in _final(oracles["cancel-one-item"], said)
        if not (isinstance(e, ToolCallEvent) and e.tool == "cancel_item")
    ]
    assert CLAIMS in failing(retail, "cancel-one-item", events)


@pytest.mark.parametrize(
    "said",
    [
        "I did cancel the Alpine Merino Beanie from order O-1020.",
        "All done: the beanie is cancelled.",
    ],
)
def test_a_success_claim_after_the_change_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    assert CLAIMS not in failing(
        retail, "cancel-one-item", _final(oracles["cancel-one-item"], said)
    )


@pytest.mark.parametrize(
    "said",
    ["I did not cancel anything.", "Sorry, I could not make that change. Anything else?"],
)
def test_no_claim_with_no_change_made_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    events = [
        e
        for e in _final(oracles["cancel-one-item"], said)
        if not (isinstance(e, ToolCallEvent) and e.tool == "cancel_item")
    ]
    assert CLAIMS not in failing(retail, "cancel-one-item", events)
