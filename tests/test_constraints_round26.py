"""A policy reviewer's near misses, twenty-sixth round: compliant replies the ``confirmed``
reader took for a no, the payment method a τ² answer picks, and a cancellation's reason said
in words only the τ² checks read.

- "Yes, but not the cancellation." and "Yes, but don't cancel the beanie" to a question
  proposing two refunds and a cancellation confirmed nothing ("but not", "don't" read as a
  no); they confirm the refunds and leave the cancellation out. "Yes, but not now", "Yes but
  don't do it yet", "Yes, but I don't want the refund" stay a no.
- "The Visa rather than the gift card." to a choice between them picked nothing ("rather
  than" read as a term); "I'd rather not", "I'd rather you didn't" stay a no.
- "Forty.", "forty dollars", "Make it 40." to "$25 or $40?" picked nothing; "forty-five"
  and "not forty" still pick no 40.
- τ²'s ``payment-confirmed`` read only the question: "Would you like the refund on your gift
  card or your PayPal?" "The gift card." then a refund to PayPal passed.
- The retail example's ``p2-cancel-reason-as-said`` had its own, narrower, reading of a
  cancellation's reason than τ²'s ``cancel-reason-confirmed``: "... since you won't need it"
  or "... as it's unnecessary" said no reason, so recording "ordered by mistake" passed. It
  now reads the reason with τ²'s words (one reading for both suites).
"""

from __future__ import annotations

from typing import Any

import pytest

from groundstate.spec.suite import Suite
from groundstate.tau2 import retail_checks as tau2_checks
from groundstate.trace import AgentEvent

from .grading_corpus import failing
from .test_constraints2_round20 import _asked
from .test_constraints_round9 import ORDER, ORDER_VIEW, USER_VIEW
from .test_constraints_round12 import oracles, retail
from .test_constraints_round25 import (
    AMOUNT_QUESTIONS,
    CANCEL,
    CHOICE,
    QUESTION,
    REFUND,
    _mixed,
    _refunded,
    _socks,
)
from .trace_builder import Trace

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests


# --- 1. a yes leaving out a kind of change ----------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, but not the cancellation.",
        "Sure, but not the cancellation please.",
        "Yes, but don't cancel the beanie",
        "Yes, but don't cancel the beanie.",
        "Yes, but do not cancel the beanie, thanks.",
        "OK, but please don't cancel the beanie.",
    ],
)
def test_a_yes_but_not_the_cancellation_confirms_the_refunds_only(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """ "Yes, but not the cancellation." and "Yes, but don't cancel the beanie" confirmed
    nothing: "but not" and "don't" made the reply a no."""
    failed = _mixed(retail, oracles, answer)
    assert REFUND not in failed
    assert CANCEL in failed


@pytest.mark.parametrize("answer", ["Yes, but don't refund them.", "Yes, but not the refunds."])
def test_a_yes_but_not_the_refunds_confirms_the_cancellation_only(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    failed = _mixed(retail, oracles, answer)
    assert REFUND in failed
    assert CANCEL not in failed


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, but not now.",
        "Yes but don't do it yet",
        "Yes, but not yet.",
        "Yes, but not today.",
        "Yes, but don't cancel anything yet.",
        "Yes, but I don't want the refund.",
        "Yes, but not like that.",
        "Yes, but don't.",
        "Yes, but never mind the refunds.",
        # "Yes, but not the headlamp." and "Yes, but not the beanie cancellation." confirm the
        # rest since the twenty-seventh round (tests/test_constraints_round27.py)
        "No, not the cancellation.",
        "Not the cancellation.",
    ],
)
def test_a_yes_put_off_or_refusing_more_than_a_kind_stays_a_no(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """Controls: a time, a verb negated, or a part naming a thing keeps the reply a no."""
    assert {REFUND, CANCEL} <= set(_mixed(retail, oracles, answer))


# --- 2. an option picked "rather than" another --------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "The Visa rather than the gift card.",
        "Visa rather than gift card",
        "The Visa instead of the gift card.",
        "Yes, the Visa rather than the gift card.",
    ],
)
def test_the_option_picked_rather_than_the_other_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """ "The Visa rather than the gift card." was a no ("rather than" a term of its own)."""
    assert REFUND not in _socks(retail, oracles, CHOICE, answer)


@pytest.mark.parametrize(
    "answer",
    [
        "The gift card rather than the Visa.",
        "Gift card instead of the Visa.",
        "I'd rather not.",
        "Rather not.",
        "I'd rather you didn't.",
        "I would rather not, thanks.",
        "Rather than the Visa.",
    ],
)
def test_the_other_option_or_a_rather_not_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert REFUND in _socks(retail, oracles, CHOICE, answer)


@pytest.mark.parametrize(
    "answer", ["Yes, but not the Visa.", "Yes, but not to the Visa.", "Yes, not the refund."]
)
def test_turning_down_what_a_question_without_a_choice_proposes_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """Controls: the question proposes the Visa alone; turning it down is a counter-offer."""
    assert REFUND in _socks(retail, oracles, QUESTION, answer)


# --- 3. an amount of a choice in words --------------------------------------------------------


@pytest.mark.parametrize("question", AMOUNT_QUESTIONS)
@pytest.mark.parametrize(
    "answer", ["Forty.", "forty dollars", "Make it 40.", "Make it forty.", "Forty, please"]
)
def test_the_amount_picked_in_words_confirms_it_and_not_the_other(
    question: str, answer: str
) -> None:
    """ "$25 or $40?" "Forty." (or "forty dollars", "Make it 40.") picked nothing."""
    assert _refunded(question, answer, "$40.00")
    assert not _refunded(question, answer, "$25.00")


@pytest.mark.parametrize("question", AMOUNT_QUESTIONS)
@pytest.mark.parametrize(
    "answer", ["forty-five", "Forty five.", "not forty", "Not 40.", "Make it 45.", "fourty"]
)
def test_another_amount_in_words_or_forty_turned_down_picks_no_forty(
    question: str, answer: str
) -> None:
    assert not _refunded(question, answer, "$40.00")


# --- 4. τ²: the payment method the answer picks ---------------------------------------------

PAID = ORDER_VIEW | {
    "payment_history": [
        {"transaction_type": "payment", "amount": 10.0, "payment_method_id": "paypal_1"}
    ]
}
CHOICES = {
    "return_delivered_order_items": f"I can return the desk lamp of {ORDER}. Would you like "
    "the refund on your gift card or your PayPal?",
    "exchange_delivered_order_items": f"I can exchange the desk lamp of {ORDER} for the black "
    "one. Would you like the price difference settled with your gift card or your PayPal?",
}


def _returned(answer: str, method: str, tool: str) -> tuple[bool, Any]:
    question = CHOICES[tool]
    trace = Trace(f"Help with my order {ORDER}")
    trace.call("get_user_details", {"user_id": "ann_lee_1"}, USER_VIEW)
    trace.call("get_order_details", {"order_id": ORDER}, PAID)
    trace.agent(question).user(answer)
    args = {"order_id": ORDER, "item_ids": ["1000000001"], "payment_method_id": method}
    if tool == "exchange_delivered_order_items":
        args["new_item_ids"] = ["2000000001"]
    trace.call(tool, args, PAID)
    return tau2_checks.payment_confirmed(trace.events, None)


TOOLS = list(CHOICES)


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize(
    ("answer", "method"),
    [
        ("The gift card.", "paypal_1"),
        ("Yes, the gift card", "paypal_1"),
        ("Gift card rather than PayPal", "paypal_1"),
        ("PayPal please", "gift_card_1"),
        ("Not the gift card, PayPal.", "gift_card_1"),
    ],
)
def test_a_tau2_refund_to_a_method_the_answer_did_not_pick_fails(
    answer: str, method: str, tool: str
) -> None:
    """`payment-confirmed` read the question alone, which named both methods."""
    passed, evidence = _returned(answer, method, tool)
    assert not passed
    assert "picked" in evidence["problems"][0]


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize(
    ("answer", "method"),
    [
        ("The gift card.", "gift_card_1"),
        ("PayPal please", "paypal_1"),
        ("Not the gift card, PayPal.", "paypal_1"),
        ("Yes, go ahead.", "paypal_1"),
        ("Gift card, yes; keep PayPal for the next one.", "gift_card_1"),
    ],
)
def test_a_tau2_refund_to_the_method_picked_passes(answer: str, method: str, tool: str) -> None:
    """Controls: the method picked, or none named (the question names the call's)."""
    passed, evidence = _returned(answer, method, tool)
    assert passed, evidence


# --- 5. a cancellation's reason, one reading for both suites -----------------------------------

REASONS = [
    "since you won't need it",
    "as it's unnecessary",
    "since it's not necessary anymore",
    "since you have no use for it",
]


@pytest.mark.parametrize("reason", REASONS)
def test_a_reason_said_in_other_words_than_the_one_recorded_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], reason: str
) -> None:
    """The retail example read none of these as "no longer needed"; τ²'s checks did."""
    question = (
        f"I can cancel the Alpine Merino Beanie from order O-1020, {reason}. The Ridge Fleece "
        "Hoodie stays on the order. Please confirm."
    )
    events = _asked(oracles["cancel-one-item"], question, "Yes.")
    assert "p2-cancel-reason-as-said" in failing(retail, "cancel-one-item", events)


@pytest.mark.parametrize(
    "reason", ["since you ordered it by mistake", "since you ordered the wrong one"]
)
def test_the_reason_recorded_said_in_other_words_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], reason: str
) -> None:
    question = (
        f"I can cancel the Alpine Merino Beanie from order O-1020, {reason}. The Ridge Fleece "
        "Hoodie stays on the order. Please confirm."
    )
    events = _asked(oracles["cancel-one-item"], question, "Yes.")
    assert "p2-cancel-reason-as-said" not in failing(retail, "cancel-one-item", events)


def test_both_suites_read_a_reason_with_the_same_words() -> None:
    from .test_constraints_round9 import retail_checks

    checks = retail_checks()
    assert checks.REASON_WORDS["no_longer_needed"] is tau2_checks.REASON_WORDS["no longer needed"]
    assert (
        checks.REASON_WORDS["ordered_by_mistake"] is tau2_checks.REASON_WORDS["ordered by mistake"]
    )
