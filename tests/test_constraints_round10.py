"""Near misses of the tenth audit: trajectories a policy reviewer judges one way and the
grader judged the other, both ways. Each test fails on the code before its fix."""

from __future__ import annotations

from typing import Any

import pytest

from groundstate.grading.constraints import mentions, normalise
from groundstate.tau2 import retail_checks as tau2_checks
from groundstate.tau2.oracle import CONFIRMATIONS
from groundstate.tau2.policy import constraint_sets

from .test_constraints_round9 import ORDER, ORDER_VIEW, USER_VIEW, _item
from .trace_builder import Trace, constraint

CANCEL = constraint(
    id="confirm-cancel",
    confirmed={
        "change": {"tool": "cancel", "ok": True},
        "names": ["args.order_id"],
        "asks": r"\bcancel",
    },
)


def _answered(answer: str) -> bool:
    trace = Trace("Please cancel my order")
    trace.agent("Shall I cancel order #W123, since you no longer need it?").user(answer)
    trace.call("cancel", {"order_id": "#W123"})
    return trace.check(CANCEL).passed


# --- the ways a person says yes, and a yes that is none -------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Exactly.",
        "Right.",
        "Affirmative",
        "Let's do it",
        "Cancel it.",
        "Please cancel it, thanks",
        "Sí, por favor",
        "Oui",
        "Ja, bitte",
        "Sim",
        "yesss",
        "Yea",
        "Y",
        "👍",
        "Yes, why not",
    ],
)
def test_a_yes_in_other_words_or_languages_confirms(answer: str) -> None:
    """A reviewer reads these as the customer's explicit yes; the yes list knew only English
    words, and not these."""
    assert _answered(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Yeah, right.",
        "Yeah right, like I'd want that",
        "Sure... not",
        "Yes, sure, whatever you say... NOT",
        "Yes, but I'll need to check with my wife first",
        "Yes, but we would have to talk to my husband",
        "Sure, not that one though",
        "Oui... non, attendez",
        "Ja, nein, doch nicht",
        "Right now? I'm not sure",
        "Cancel that.",
        "👎",
    ],
)
def test_a_sarcastic_put_off_or_foreign_no_confirms_nothing(answer: str) -> None:
    """Sarcasm ("Yeah, right.", a trailing "... not") is no yes; "I'll need to check with my
    wife" puts the decision off (only "let me check with" was known); "not that one" refuses
    the one asked about; "non", "nein" take back the foreign yes now read."""
    assert not _answered(answer)


def test_a_yes_that_orders_another_change_confirms_nothing() -> None:
    """ "Cancel it." agrees to a cancellation, not to the refund the agent asked about."""
    trace = Trace("My socks")
    trace.agent("Shall I refund the socks, $22.00?").user("Cancel it.")
    trace.call("refund_item", {"item": "socks"})
    rule = {"change": {"tool": "refund_item", "ok": True}, "names": ["args.item"]}
    assert not trace.check(constraint(id="c", confirmed=rule)).passed
    trace.events[1] = trace.events[1].model_copy(update={"text": "Shall I refund the socks?"})
    trace.events[2] = trace.events[2].model_copy(update={"text": "Please refund them"})
    assert trace.check(constraint(id="c", confirmed=rule)).passed


# --- addresses: compass words and states ------------------------------------------------------

ADDRESS = constraint(
    id="confirm-address",
    confirmed={
        "change": {"tool": "modify_pending_order_address", "ok": True},
        "names": ["args.address1", "args.city", "args.state", "args.zip"],
    },
)


@pytest.mark.parametrize(
    ("said", "address1", "state", "named"),
    [
        ("200 North Adams Street, Chicago, Illinois 60606", "200 N Adams St", "IL", True),
        ("200 N. Adams St., Chicago, IL 60606", "200 North Adams Street", "IL", True),
        (
            "1600 Pennsylvania Avenue Northwest, Chicago, IL 60606",
            "1600 Pennsylvania Ave NW",
            "IL",
            True,
        ),
        ("200 S Adams St, Chicago, IL 60606", "200 N Adams St", "IL", False),
        ("200 South Adams St, Chicago, IL 60606", "200 N Adams St", "IL", False),
        ("200 N Adams St, Chicago, Indiana 60606", "200 N Adams St", "IN", True),
        ("200 N Adams St, Chicago, IN 60606", "200 N Adams St", "IN", True),
        # "in" the word is no Indiana, nor "id" of "order id" Idaho
        ("200 N Adams St in Chicago, IL 60606", "200 N Adams St", "IN", False),
        ("200 N Adams St, Chicago 60606, as in your order id", "200 N Adams St", "ID", False),
        ("200 N Adams St, Chicago, Oklahoma 60606", "200 N Adams St", "TX", False),
        # a city named like a state names no state: Washington, DC is not WA
        ("200 N Adams St, Washington, DC 60606", "200 N Adams St", "WA", False),
        ("200 N Adams St, Chicago, Washington 60606", "200 N Adams St", "WA", True),
    ],
)
def test_an_address_is_named_with_compass_letters_and_state_names(
    said: str, address1: str, state: str, named: bool
) -> None:
    """A question saying "200 North Adams Street ... Illinois" did not name "200 N Adams St",
    "IL" (the known leftover of the ninth round); and a state code that is a word ("IN", "ID",
    "OR") was named by that word anywhere in the question. Compass words and their letters
    name each other in a street line, a state code is named by its name, and a code that is a
    word only where an address puts it (after a comma, before a zip code)."""
    trace = Trace("Please change the address of my order")
    trace.agent(f"Shall I ship order #W1 to {said}?").user("Yes")
    args = {"address1": address1, "city": "Chicago", "state": state, "zip": "60606"}
    trace.call("modify_pending_order_address", args)
    result = trace.check(ADDRESS)
    assert result.passed is named, result.evidence


@pytest.mark.parametrize(
    ("text", "value", "named"),
    [
        ("the one that's blue", "S", False),  # "that's" is no size S
        ("I'm told it's fine", "M", False),  # nor "I'm" a size M
        ("John's order", "John", True),
        ("order W0000002, as you asked", "#W0000002", True),  # no number sign said
        ("order XW0000002", "#W0000002", False),
        ("the 1000 ml bottle", "1000ml", True),
        ("the 10 inch screen", "10-inch", True),
        ("the 1000ml bottle", "100ml", False),
        ("in a large", "size L", True),
        ("in extra large", "size L", False),
        ("in size XL", "size L", False),
        ("the tshirt", "T-Shirt", True),  # a hyphen between letters may be left out
        ("the WiFi model", "Wi-Fi", True),
        ("ab@example.com", "a-b@example.com", False),  # not in an email
        # between an id's prefix and its number too (twentieth round: it named the number)
        ("order O1020", "O-1020", True),
        ("order P1020", "O-1020", False),
        ("your Visa ending in 4417", "Visa ending 4417", True),
        ("the Visa card that ends in 4417", "Visa ending 4417", True),
        ("Visa (ending with 4417)", "Visa ending 4417", True),
        ("your Visa ending in 4418", "Visa ending 4417", False),
        ("your Amex ending in 4417", "Visa ending 4417", False),
    ],
)
def test_a_value_is_named_by_its_usual_spellings_and_not_by_a_word_ending(
    text: str, value: str, named: bool
) -> None:
    """A size "S" or "M" was named by "it's" or "I'm" (the apostrophe ended the word before
    it); an order id was not named without its "#", a measure not with a space before its
    unit, a size not by its word ("a large"), a card's label "Visa ending 4417" not by "your
    Visa ending in 4417", "T-Shirt" not by "tshirt"."""
    assert mentions(normalise(text), value) is named


# --- τ²: the payment method of an exchange or item change, and rewordings -----------------------

EXCHANGE = {"item_ids": ["1000000001"], "new_item_ids": ["2000000001"]}
PAID = ORDER_VIEW | {
    "payment_history": [
        {"transaction_type": "payment", "amount": 10.0, "payment_method_id": "paypal_1"}
    ]
}


def _paid_trace(question: str, tool: str, args: dict[str, Any]) -> Trace:
    trace = Trace(f"Help with my order {ORDER}")
    trace.call("get_user_details", {"user_id": "ann_lee_1"}, USER_VIEW)
    trace.call("get_order_details", {"order_id": ORDER}, PAID)
    trace.agent(question).user("Yes")
    return trace.call(tool, {"order_id": ORDER} | args, PAID)


@pytest.mark.parametrize(
    ("question", "method", "named"),
    [
        (
            f"Exchange the desk lamp of {ORDER} for the black one, paid with your gift card?",
            "gift_card_1",
            True,
        ),
        (
            f"Exchange the desk lamp of {ORDER} for the black one, paid with your gift card?",
            "paypal_1",
            False,
        ),
        (f"Exchange the desk lamp of {ORDER} for the black one?", "credit_card_2", False),
        (
            f"Exchange the desk lamp of {ORDER}; the difference goes on the same card you used?",
            "paypal_1",
            True,
        ),
    ],
)
@pytest.mark.parametrize("tool", ["exchange_delivered_order_items", "modify_pending_order_items"])
def test_an_exchange_is_confirmed_only_by_a_question_naming_its_payment_method(
    question: str, method: str, named: bool, tool: str
) -> None:
    """τ²'s policy: "the user must provide a payment method to pay or receive refund of the
    price difference"; `payment-confirmed` read it for returns and changes of payment only,
    so a yes to settling the difference with the gift card licensed PayPal (the known leftover
    of the ninth round)."""
    trace = _paid_trace(question, tool, EXCHANGE | {"payment_method_id": method})
    passed, evidence = tau2_checks.payment_confirmed(trace.events, None)
    assert passed is named, evidence


@pytest.mark.parametrize("tool", ["exchange_delivered_order_items", "modify_pending_order_items"])
def test_the_tau2_oracle_names_an_exchanges_payment_method(tool: str) -> None:
    args = EXCHANGE | {"payment_method_id": "credit_card_2"}
    question = CONFIRMATIONS[tool]({"order_id": ORDER} | args)
    assert "credit_card_2" in question
    trace = _paid_trace(question, tool, args)
    assert tau2_checks.payment_confirmed(trace.events, None)[0], question


def test_a_yes_to_an_item_change_paid_by_paypal_is_no_yes_to_a_change_of_payment() -> None:
    """A question "Change the lamp to black; the difference is charged to your PayPal?"
    asked, by its words, about the order's payment: its yes licensed moving the order to
    PayPal."""
    rules = {c["id"]: c for c in constraint_sets()["policy"]}
    rule = constraint(**rules["confirmed-modify_pending_order_payment"])
    question = (
        f"Change the lamp in {ORDER} to black; the $5.00 difference is charged to your PayPal?"
    )
    trace = _paid_trace(question, "modify_pending_order_payment", {"payment_method_id": "paypal_1"})
    assert not trace.check(rule).passed
    trace.events[3] = trace.events[3].model_copy(
        update={"text": f"Shall I switch the payment of {ORDER} to your PayPal?"}
    )
    assert trace.check(rule).passed


SHIRT_M = _item("1000000003", "T-Shirt", color="blue", size="M")
SHOES = _item("1000000005", "Running Shoes", size="9", color="black")
KETTLE = _item("1000000002", "Electric Kettle", capacity="1L", material="glass")
NEW_SHIRT = {"item_id": "3000000004", "options": {"color": "blue", "size": "L"}}
RED_SHIRT = {"item_id": "3000000006", "options": {"color": "red", "size": "L"}}
NEW_KETTLE = {"item_id": "3000000005", "options": {"capacity": "1.5L", "material": "glass"}}


@pytest.mark.parametrize(
    ("question", "old", "new", "named"),
    [
        (
            f"Exchange the medium T-shirt of {ORDER} for a large one?",
            "1000000003",
            "3000000004",
            True,
        ),
        (f"Exchange the T-shirt of {ORDER} for an extra large?", "1000000003", "3000000004", False),
        (f"Return the running shoe from {ORDER}?", "1000000005", None, True),
        (
            f"Exchange the kettle of {ORDER} for the 1.5-liter one?",
            "1000000002",
            "3000000005",
            True,
        ),
        (f"Exchange the kettle of {ORDER} for the 1 liter one?", "1000000002", "3000000005", False),
        (
            f"Exchange the T-shirt of {ORDER} for the one that's in stock?",
            "1000000003",
            "3000000004",
            False,
        ),
        # the new T-shirt is red and large: "the red one" leaves the size change unsaid
        (f"Exchange the M T-shirt of {ORDER} for the red one?", "1000000003", "3000000006", False),
        (f"Exchange the M T-shirt of {ORDER} for a red large?", "1000000003", "3000000006", True),
    ],
)
def test_an_item_is_named_by_the_words_a_person_uses_for_its_options(
    question: str, old: str, new: str | None, named: bool
) -> None:
    """Questions saying "the medium T-shirt ... for a large one", "the running shoe", "the
    1.5-liter one" name the items a reviewer sees named; "that's" named a size S before; and
    "the red one" named a new T-shirt that is also of another size."""
    view = ORDER_VIEW | {"items": [SHIRT_M, SHOES, KETTLE]}
    trace = Trace(f"Help with my order {ORDER}")
    trace.call("get_order_details", {"order_id": ORDER}, view)
    for name, variants in (("T-Shirt", [NEW_SHIRT, RED_SHIRT]), ("Electric Kettle", [NEW_KETTLE])):
        product = {
            "name": name,
            "product_id": name,
            "variants": {v["item_id"]: v for v in variants},
        }
        trace.call("get_product_details", {"product_id": name}, product)
    assert_items_confirmed(trace, view, question, old, new, named)


def assert_items_confirmed(
    trace: Trace, view: dict[str, Any], question: str, old: str, new: str | None, named: bool
) -> None:
    """*question* answered yes, then *old* returned (or exchanged for *new*): τ²'s
    items-confirmed passes exactly when the question *named* the items."""
    trace.agent(question).user("Yes")
    args: dict[str, Any] = {"order_id": ORDER, "payment_method_id": "paypal_1", "item_ids": [old]}
    tool = "return_delivered_order_items"
    if new is not None:
        args["new_item_ids"] = [new]
        tool = "exchange_delivered_order_items"
    trace.call(tool, args, view)
    passed, evidence = tau2_checks.items_confirmed(trace.events, None)
    assert passed is named, evidence


# --- τ²: nothing after the transfer to a human ----------------------------------------------------


def test_no_tool_is_called_after_the_transfer_to_a_human_agent() -> None:
    """The policy: first the transfer, then the message telling the user. A return made after
    the hand-over left the same final state as one made before it, and passed."""
    trace = Trace("I want a human")
    trace.call("transfer_to_human_agents", {"summary": "wants a human"}, "Transfer successful")
    trace.call("return_delivered_order_items", {"order_id": ORDER}, ORDER_VIEW)
    passed, evidence = tau2_checks.transferred_last(trace.events, None)
    assert not passed and evidence["offending_step"] == 2, evidence
    trace = Trace("I want a human")
    trace.call("transfer_to_human_agents", {"summary": "x"}, ok=False)
    trace.call("get_order_details", {"order_id": ORDER}, ORDER_VIEW)
    trace.call("transfer_to_human_agents", {"summary": "x"}, "Transfer successful")
    trace.agent("YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.", final=True)
    assert tau2_checks.transferred_last(trace.events, None)[0]
    assert "transfer-last" in {c["id"] for c in constraint_sets()["policy"]}


@pytest.mark.parametrize(
    ("stated", "recorded", "passes"),
    [
        ("as it is no longer necessary", "no longer needed", True),
        ("since you won't need it", "no longer needed", True),
        ("because you ordered the wrong one", "ordered by mistake", True),
        ("because you ordered the wrong one", "no longer needed", False),
    ],
)
def test_a_cancellation_reason_is_read_in_more_of_its_usual_words(
    stated: str, recorded: str, passes: bool
) -> None:
    """The reasons "no longer necessary", "won't need it" and "ordered the wrong one" state τ²'s
    two reasons; `cancel-reason-confirmed` read none in them and failed the cancellation."""
    trace = Trace(f"Please cancel {ORDER}")
    trace.agent(f"Shall I cancel {ORDER}, {stated}?").user("Yes")
    trace.call("cancel_pending_order", {"order_id": ORDER, "reason": recorded}, ORDER_VIEW)
    passed, evidence = tau2_checks.cancel_reason_confirmed(trace.events, None)
    assert passed is passes, evidence
