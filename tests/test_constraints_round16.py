"""A policy reviewer's near misses, sixteenth round: a yes taken back in other words ("Cancel
that.", "Undo that", "Abort"); a yes naming another record than the question's; claims about
several records when only some changed; amounts in other notations. The retail ones replay a
suite oracle with one message changed or added and grade every constraint of the task, the
Python ones included."""

from __future__ import annotations

import pytest

from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent, MessageEvent

from .grading_corpus import failing
from .test_constraints_round12 import _final, oracles, retail
from .test_constraints_round15 import CHANGES, _answered
from .trace_builder import Trace, constraint

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests


def _before_change(events: list[AgentEvent], *said: tuple[str, str]) -> list[AgentEvent]:
    """*events* with the messages *said* (role, text) put between the customer's yes and the
    first change."""
    at = next(i for i, e in enumerate(events) if getattr(e, "tool", None) in CHANGES)
    yes = events[at - 1]
    added = [MessageEvent(step=yes.step, role=role, text=text, at=yes.at) for role, text in said]
    return [*events[:at], *added, *events[at:]]


# --- policy 2: a yes taken back before the change, in other words ----------------------------


@pytest.mark.parametrize(
    ("retraction", "taken_back"),
    [
        ("Cancel that.", True),
        ("Oh wait, cancel that!", True),
        ("Undo that.", True),
        ("Abort.", True),
        ("Belay that.", True),
        ("Call it off.", True),
        ("Actually I'll keep them.", True),
        ("Cancela eso.", True),
        ("Annule ça.", True),
        ("Halt!", True),
        ("Abbrechen!", True),
        # thanks, and a yes kept, take nothing back
        ("OK, thanks.", False),
        ("Great", False),
    ],
)
def test_a_retraction_after_processing_takes_the_yes_back(
    retail: Suite, oracles: dict[str, list[AgentEvent]], retraction: str, taken_back: bool
) -> None:
    """The customer said yes to the socks' refund, the agent said "Processing." and the
    customer said "Cancel that." (or "Undo that", "Abort", "Call it off"): the refund made
    next passed `p2-confirmed-refund`, since none of these read as a no."""
    events = _before_change(oracles["refund-socks"], ("agent", "Processing."), ("user", retraction))
    broken = ["p2-confirmed-refund"] if taken_back else []
    assert failing(retail, "refund-socks", events) == broken


def test_cancel_it_to_a_cancellation_orders_it(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """ "Cancel that" retracts what the agent is about to do, unless that is a cancellation:
    then it orders the change."""
    events = _before_change(
        oracles["cancel-pending-order"], ("agent", "Cancelling it now."), ("user", "Cancel that.")
    )
    assert failing(retail, "cancel-pending-order", events) == []
    events = _before_change(
        oracles["cancel-pending-order"], ("agent", "Cancelling it now."), ("user", "Undo that.")
    )
    assert failing(retail, "cancel-pending-order", events) == ["p2-confirmed-cancel-order"]


# --- policies 2 and 9: amounts with their thousands grouped, or the sign after them -----------


@pytest.mark.parametrize(
    ("question", "confirmed"),
    [
        ("Refund the tent, $1,234.50, to your Visa? Please confirm.", True),
        ("Refund the tent, $1234.50, to your Visa? Please confirm.", True),
        ("Refund the tent, USD 1,234.50, to your Visa? Please confirm.", True),
        ("Refund the tent, 1.234,50 $, to your Visa? Please confirm.", True),
        ("Refund the tent, 1 234,50 $, to your Visa? Please confirm.", True),
        ("Refund the tent, 1234.50 dollars, to your Visa? Please confirm.", True),
        # another amount is not this one
        ("Refund the tent, $1,234, to your Visa? Please confirm.", False),
        ("Refund the tent, $234.50, to your Visa? Please confirm.", False),
    ],
)
@pytest.mark.parametrize("amount", ["$1,234.50", "$1234.50"])
def test_an_amount_is_named_with_its_thousands_grouped_or_not(
    question: str, confirmed: bool, amount: str
) -> None:
    """A tool's "$1234.50" was not named by a question saying "$1,234.50" (nor "$1,234.50" by
    "$1234.50", "1.234,50 $" or "1 234,50 $"): a correct confirmation of a large refund
    failed."""
    trace = Trace("Please refund my tent.").agent(question).user("Yes, please go ahead.")
    trace.call("refund_item", {"item_id": "I-1"}, {"amount": amount, "product": "tent"})
    rule = constraint(
        id="confirmed-refund",
        confirmed={"change": {"tool": "refund_item"}, "names": ["output.amount"]},
    )
    result = trace.check(rule)
    assert result.passed is confirmed, result.evidence


@pytest.mark.parametrize(
    ("reply", "broken"),
    [
        ("Done. 22,00 $ are on their way back to your Visa ending 4417.", []),
        ("Done. 2,00 $ are on their way back to your Visa ending 4417.", ["p2-amounts-as-shown"]),
        ("Done. 20.00$ is on its way back to your Visa ending 4417.", ["p2-amounts-as-shown"]),
    ],
)
def test_an_amount_with_the_sign_after_it_or_grouped_by_spaces_is_read(
    retail: Suite, oracles: dict[str, list[AgentEvent]], reply: str, broken: list[str]
) -> None:
    """After refunding the socks' $22.00, "2,00 $ are on their way back" (the sign after the
    figures, as French and Canadian customers write it) passed `p2-amounts-as-shown`: the
    amount was not read."""
    events = oracles["refund-socks"]
    failed = failing(retail, "refund-socks", _final(events, reply))
    assert [f for f in failed if f == "p2-amounts-as-shown"] == broken


# --- policy 9: a claim about several records when only some changed ---------------------------


def _headlamp_refused(events: list[AgentEvent]) -> list[AgentEvent]:
    """several-changes' oracle with the headlamp's refund refused by the tool."""
    at = next(i for i, e in enumerate(events) if getattr(e, "tool", None) == "refund_item")
    refused = events[at + 1]
    assert getattr(refused, "tool", None) == "refund_item"
    update = {"ok": False, "output": None, "error": "refused", "error_class": "tool_error"}
    return [*events[: at + 1], refused.model_copy(update=update), *events[at + 2 :]]


REST = " The beanie is cancelled and your address is updated."


@pytest.mark.parametrize(
    ("said", "claims_too_much"),
    [
        ("All done. Both refunds went through.", True),
        ("All done. The two refunds are complete.", True),
        ("All done. Your refunds have been processed.", True),
        ("All done. I've refunded both items.", True),
        ("All done. All refunds went through.", True),
        ("All done. Both are refunded.", True),
        # "All done." with the headlamp's refusal untold claims too much (nineteenth round)
        ("All done. The refund of the bottle went through.", True),
        # the one refund made, said as it is, the refusal told
        ("The bottle was refunded, but the headlamp's refund failed.", False),
        ("I've refunded the bottle; the headlamp could not be refunded.", False),
    ],
)
def test_a_claim_about_several_records_when_only_some_changed_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str, claims_too_much: bool
) -> None:
    """The tool refused the headlamp's refund and refunded the bottle; the reply said "Both
    refunds went through" (or "the two refunds are complete", "all refunds went through"):
    a claim that names no record was read by its kind alone, and a refund had been made."""
    events = _final(_headlamp_refused(oracles["several-changes"]), said + REST)
    assert ("p9-claims-were-made" in failing(retail, "several-changes", events)) is claims_too_much


@pytest.mark.parametrize(
    "said",
    [
        "All done. Both refunds went through." + REST,
        "All done. I've refunded both items." + REST,
        "All done. Everything went through: the refunds, the beanie and your address.",
    ],
)
def test_a_claim_about_several_records_that_all_changed_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    events = _final(oracles["several-changes"], said)
    assert failing(retail, "several-changes", events) == []


@pytest.mark.parametrize("said", ["Both items are cancelled.", "I've cancelled both items."])
def test_an_order_cancelled_whole_counts_each_item(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    """One cancel_order of O-1002 cancels its two items: "both items are cancelled" is true."""
    events = _final(oracles["cancel-pending-order"], said + " You will not be charged for it.")
    assert failing(retail, "cancel-pending-order", events) == []


# --- policy 2: a yes naming another record than the question's ---------------------------------


@pytest.mark.parametrize(
    ("answer", "confirms"),
    [
        ("Yes, refund O-1003.", False),
        ("Yes please, for order O-1003", False),
        ("Yes, the hoodie please.", False),
        ("Yes, the Ridge Fleece Hoodie.", False),
        ("Yes, I meant the hoodie", False),
        # the question's record, a record turned down, asked about after the yes or besides
        ("Yes, refund order O-1001.", True),
        ("Yes please, the wool socks", True),
        ("Yes, not the hoodie.", True),
        ("Yes, please go ahead. Where is my hoodie, by the way?", True),
        ("Yes please, to my card.", True),
    ],
)
def test_a_yes_naming_another_record_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str, confirms: bool
) -> None:
    """Asked to refund the socks of O-1001, "Yes, refund O-1003" or "Yes, the hoodie please"
    confirmed the socks' refund: a counter-offer was read for another way of paying or
    amount only, not for another order or product the tools had shown."""
    events = _answered(oracles["refund-socks"], answer)
    assert failing(retail, "refund-socks", events) == ([] if confirms else ["p2-confirmed-refund"])


def test_a_yes_naming_another_record_besides_the_questions_confirms_them(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """ "Yes, the socks too" asks for more than the headlamp and the bottle: both refunds are
    confirmed; "Yes, the socks" names another product instead."""
    events = oracles["several-changes"]
    assert failing(retail, "several-changes", _answered(events, "Yes, the socks too.")) == []
    assert failing(retail, "several-changes", _answered(events, "Yes, the socks.")) == [
        "p2-confirmed-refund"
    ]


@pytest.mark.parametrize(("answer", "passes"), [("Yes, #W2.", False), ("Yes, #W1.", True)])
def test_a_yes_naming_another_order_of_the_list_confirms_nothing(answer: str, passes: bool) -> None:
    """Any suite's: the other record is a value the tools showed at the change's value's place
    (another order id of the same list)."""
    trace = Trace("Return my lamp.")
    trace.call("get_user_details", {"user_id": "u1"}, {"orders": ["#W1", "#W2"]})
    trace.agent("Return the lamp of order #W1? Confirm?").user(answer)
    trace.call("return_delivered_order_items", {"order_id": "#W1"}, {"order_id": "#W1"})
    rule = constraint(
        id="confirmed-return",
        confirmed={"change": {"tool": "return_delivered_order_items"}, "names": ["args.order_id"]},
    )
    result = trace.check(rule)
    assert result.passed is passes, result.evidence


@pytest.mark.parametrize("retraction", ["Cancel that.", "Undo that.", "Cancel th\u0430t."])
def test_a_retraction_in_a_second_message_takes_the_yes_back(
    retail: Suite, oracles: dict[str, list[AgentEvent]], retraction: str
) -> None:
    """ "Yes, please go ahead." then, before the agent answered, "Cancel that." (its
    "a" written as a Cyrillic letter too): the refund made next is not confirmed."""
    events = _before_change(oracles["refund-socks"], ("user", retraction))
    assert failing(retail, "refund-socks", events) == ["p2-confirmed-refund"]


@pytest.mark.parametrize(
    ("answer", "confirms"),
    [
        ("Yes, to the card ending 9999.", False),
        ("Sure, to my card ending in 1234.", False),
        ("Yes, to my Visa ending 4417.", True),
        ("Yes, to the card ending in 4417.", True),
    ],
)
def test_a_yes_naming_another_card_by_its_last_digits_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str, confirms: bool
) -> None:
    """Asked to refund to the Visa ending 4417, "Yes, to the card ending 9999" confirmed it:
    another way of paying was read by its kind alone ("gift card", "PayPal")."""
    events = _answered(oracles["refund-socks"], answer)
    assert failing(retail, "refund-socks", events) == ([] if confirms else ["p2-confirmed-refund"])
