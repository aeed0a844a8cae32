"""Near misses of the ninth audit: trajectories a policy reviewer judges one way and the
grader judged the other (issue 7). Each test fails on the code before its fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from groundstate.grading.constraints import confirming_questions
from groundstate.tau2 import retail_checks as tau2_checks
from groundstate.tau2.oracle import CONFIRMATIONS
from groundstate.tools import load_module

from .trace_builder import Trace, constraint

ORDER = "#W0000002"
RETAIL = Path(__file__).resolve().parents[1] / "examples" / "retail"


def retail_checks() -> Any:
    return load_module(RETAIL / "checks.py", "checks")


def _item(item_id: str, name: str, **options: str) -> dict[str, Any]:
    return {
        "name": name,
        "product_id": "p-" + name,
        "item_id": item_id,
        "price": 10.0,
        "options": options,
    }


LAMP = _item("1000000001", "Desk Lamp", color="white", brightness="high")
KETTLE = _item("1000000002", "Electric Kettle", capacity="1L", material="glass")
SHIRT_M = _item("1000000003", "T-Shirt", color="blue", size="M")
SHIRT_L = _item("1000000004", "T-Shirt", color="blue", size="L")
ORDER_VIEW = {
    "order_id": ORDER,
    "user_id": "ann_lee_1",
    "status": "delivered",
    "items": [LAMP, KETTLE, SHIRT_M, SHIRT_L],
}
LAMP_PRODUCT = {
    "name": "Desk Lamp",
    "product_id": "p-Desk Lamp",
    "variants": {
        "1000000001": {"item_id": "1000000001", "options": LAMP["options"], "available": True},
        "2000000001": {
            "item_id": "2000000001",
            "options": {"color": "black", "brightness": "high"},
            "available": True,
        },
        "2000000002": {
            "item_id": "2000000002",
            "options": {"color": "white", "brightness": "high", "waterproof": "yes"},
            "available": True,
        },
    },
}


def _items_trace(question: str, tool: str, args: dict[str, Any], answer: str = "Yes") -> Trace:
    trace = Trace(f"I'd like help with my order {ORDER}")
    trace.call("get_order_details", {"order_id": ORDER}, ORDER_VIEW)
    trace.call("get_product_details", {"product_id": "p-Desk Lamp"}, LAMP_PRODUCT)
    trace.agent(question).user(answer)
    return trace.call(tool, {"order_id": ORDER, "payment_method_id": "gc_1"} | args, ORDER_VIEW)


RETURN_LAMP = {"item_ids": ["1000000001"]}
RETURN_SHIRT_M = {"item_ids": ["1000000003"]}
EXCHANGE_LAMP = {"item_ids": ["1000000001"], "new_item_ids": ["2000000001"]}


@pytest.mark.parametrize(
    ("question", "tool", "args", "named"),
    [
        # a reviewer passes these: the items are named, by id or by name
        (
            f"Shall I return the Desk Lamp from order {ORDER} to your gift card?",
            "return_delivered_order_items",
            RETURN_LAMP,
            True,
        ),
        (f"Return item 1000000001 of {ORDER}?", "return_delivered_order_items", RETURN_LAMP, True),
        (
            f"Return both desk lamps of {ORDER}?",
            "return_delivered_order_items",
            {"item_ids": ["1000000001", "1000000001"]},
            True,
        ),
        (
            f"Return the size M T-shirt of {ORDER}?",
            "return_delivered_order_items",
            RETURN_SHIRT_M,
            True,
        ),
        (
            f"Exchange the desk lamp of {ORDER} for the black one?",
            "exchange_delivered_order_items",
            EXCHANGE_LAMP,
            True,
        ),
        (
            f"Exchange item 1000000001 of {ORDER} for 2000000001?",
            "exchange_delivered_order_items",
            EXCHANGE_LAMP,
            True,
        ),
        (
            f"Change the desk lamp in {ORDER} to black?",
            "modify_pending_order_items",
            EXCHANGE_LAMP,
            True,
        ),
        (
            f"Return the lamp of {ORDER}?",
            "return_delivered_order_items",
            RETURN_LAMP,
            True,
        ),
        (
            f"Return the size M shirt of {ORDER}?",
            "return_delivered_order_items",
            RETURN_SHIRT_M,
            True,
        ),
        # a reviewer fails these: the user never heard which items
        (
            f"Return the shirt of {ORDER}?",
            "return_delivered_order_items",
            RETURN_SHIRT_M,
            False,
        ),
        (
            f"Return the lamp of {ORDER}?",
            "return_delivered_order_items",
            {"item_ids": ["1000000002"]},
            False,
        ),
        (
            f"Shall I return the items we discussed from order {ORDER}?",
            "return_delivered_order_items",
            RETURN_LAMP,
            False,
        ),
        (
            f"Shall I return the Electric Kettle from order {ORDER}?",
            "return_delivered_order_items",
            RETURN_LAMP,
            False,
        ),
        (f"Return the T-shirt of {ORDER}?", "return_delivered_order_items", RETURN_SHIRT_M, False),
        (
            f"Return the blue T-shirt of {ORDER}?",
            "return_delivered_order_items",
            RETURN_SHIRT_M,
            False,
        ),
        (
            f"Exchange the desk lamp of {ORDER} for a new one?",
            "exchange_delivered_order_items",
            EXCHANGE_LAMP,
            False,
        ),
        (
            f"Exchange the high-brightness desk lamp of {ORDER} for a high one?",
            "exchange_delivered_order_items",
            EXCHANGE_LAMP,
            False,
        ),
        (
            f"Exchange item 1000000001 of {ORDER} for item 2000000009? Please confirm with yes.",
            "exchange_delivered_order_items",
            {"item_ids": ["1000000001"], "new_item_ids": ["2000000002"]},
            False,
        ),
        (
            f"Exchange the lamp of {ORDER} for the waterproof one? Please say yes.",
            "exchange_delivered_order_items",
            {"item_ids": ["1000000001"], "new_item_ids": ["2000000002"]},
            True,
        ),
        (
            f"Change the items of {ORDER} as discussed?",
            "modify_pending_order_items",
            EXCHANGE_LAMP,
            False,
        ),
    ],
)
def test_a_tau2_return_or_exchange_is_confirmed_only_by_a_question_naming_its_items(
    question: str, tool: str, args: dict[str, Any], named: bool
) -> None:
    """τ²'s policy: "the user needs to confirm the order id and the list of items". The
    `confirmed-<tool>` constraints named only the order, so a yes to returning "the items we
    discussed", or the kettle, licensed returning the lamp. `items-confirmed` now reads the
    question that yes answered for each item, by id or by name (and a new item by id or an
    option it changes)."""
    trace = _items_trace(question, tool, args)
    passed, evidence = tau2_checks.items_confirmed(trace.events, None)
    assert passed is named, evidence


def test_the_tau2_oracle_questions_name_their_items() -> None:
    for tool, args in (
        ("return_delivered_order_items", RETURN_LAMP | {"item_ids": ["1000000001", "1000000003"]}),
        ("exchange_delivered_order_items", EXCHANGE_LAMP),
        ("modify_pending_order_items", EXCHANGE_LAMP),
    ):
        question = CONFIRMATIONS[tool]({"order_id": ORDER} | args)
        passed, evidence = tau2_checks.items_confirmed(
            _items_trace(question, tool, args).events, None
        )
        assert passed, (tool, question, evidence)


def test_the_item_check_reads_the_question_the_yes_answered_not_a_later_one() -> None:
    """A question naming the lamp, a yes, then a question about something else answered yes
    too: the return is confirmed by the first one, and names its item."""
    trace = Trace(f"Return my lamp from {ORDER}")
    trace.call("get_order_details", {"order_id": ORDER}, ORDER_VIEW)
    trace.agent(f"Shall I return the desk lamp from {ORDER}?").user("Yes")
    trace.agent("Would you like an email receipt?").user("Yes please")
    trace.call("return_delivered_order_items", {"order_id": ORDER, **RETURN_LAMP}, ORDER_VIEW)
    assert tau2_checks.items_confirmed(trace.events, None)[0]
    # the other way round: the named question was refused, an unnamed one answered yes
    trace = Trace(f"Return my lamp from {ORDER}")
    trace.call("get_order_details", {"order_id": ORDER}, ORDER_VIEW)
    trace.agent(f"Shall I return the desk lamp from {ORDER}?").user("No, not the lamp")
    trace.agent(f"Shall I return the kettle from {ORDER} then?").user("Yes")
    trace.call("return_delivered_order_items", {"order_id": ORDER, **RETURN_LAMP}, ORDER_VIEW)
    assert not tau2_checks.items_confirmed(trace.events, None)[0]


TAU2_ORDER = {"order_id": ORDER, "user_id": "ann_lee_1"}


def test_a_tau2_cancellation_is_judged_on_the_question_its_yes_answered() -> None:
    """`cancel-reason-confirmed` read the agent's last message before the call: a "Great,
    cancelling it now." (answered "ok") between the confirmed question and the call failed a
    cancellation whose reason the user had confirmed; and a reason stated only in that last
    message passed one whose confirmed question stated another."""
    cancel = {"order_id": ORDER, "reason": "no longer needed"}
    trace = Trace(f"Please cancel {ORDER}")
    trace.agent(f"Shall I cancel {ORDER}, since you no longer need it?").user("Yes")
    trace.agent("Great, cancelling it now.").user("ok")
    trace.call("cancel_pending_order", cancel, TAU2_ORDER)
    assert tau2_checks.cancel_reason_confirmed(trace.events, None)[0]
    trace = Trace(f"Please cancel {ORDER}")
    trace.agent(f"Shall I cancel {ORDER}, as it was ordered by mistake?").user("Yes")
    trace.agent("Noted: you no longer need it. Processing.").user("ok")
    trace.call("cancel_pending_order", cancel, TAU2_ORDER)
    passed, evidence = tau2_checks.cancel_reason_confirmed(trace.events, None)
    assert not passed and "step 1" in evidence["problems"][0], evidence


def test_confirming_questions_gives_the_question_each_confirmed_change_answered() -> None:
    trace = Trace("Refund the socks")
    trace.agent("Shall I refund the socks, $22.00?").user("Yes")
    trace.call("refund_item", {"item": "socks"})
    trace.call("refund_item", {"item": "shoes"})
    rule = {"change": {"tool": "refund_item", "ok": True}, "names": ["args.item"]}
    found = confirming_questions(rule, trace.events)
    assert {at: q.step for at, q in found.items()} == {3: 1}


# --- a no to "shall I try again?" -------------------------------------------------------------

REFUND_RULE = constraint(
    id="confirm-refund",
    confirmed={"change": {"tool": "refund_item", "ok": True}, "names": ["args.item"]},
)


@pytest.mark.parametrize(
    ("question", "answer", "confirmed"),
    [
        ("That didn't go through. Shall I try again?", "No", False),
        ("That failed. Should I retry?", "No thanks", False),
        ("The system timed out. Do you want me to go ahead anyway?", "No", False),
        ("It failed. Would you like me to proceed with it now?", "Nope", False),
        ("That failed. Shall I try again?", "Yes", True),
        ("Anything else I can help with?", "No", True),
        ("Shall I proceed with the exchange of the beanie as well?", "No", True),
        ("Want a receipt too? Shall I go ahead?", "No receipt, go ahead", True),
        ("That failed. Shall I try again?", "No need to ask, yes please", True),
        ("Great, processing it now.", "No receipt needed, go ahead", True),
        ("Great, processing it now.", "Yes, wait, stop!", False),
        ("Would you like a receipt by email?", "No, thanks", True),
    ],
)
def test_a_no_to_going_on_takes_back_the_yes(question: str, answer: str, confirmed: bool) -> None:
    """The refund failed, the agent asked whether to try again, the user said no, and the
    agent retried: the yes stood, since a no to a question naming nothing of the change was
    no refusal. A no to a question asking only whether to go on ("Shall I try again?")
    answers the change itself now; a no to another question still takes nothing back."""
    trace = Trace("Refund my socks")
    trace.agent("Shall I refund the socks, $22.00?").user("Yes")
    trace.call("refund_item", {"item": "socks"}, ok=False)
    trace.agent(question).user(answer)
    trace.call("refund_item", {"item": "socks"})
    result = trace.check(REFUND_RULE)
    assert result.passed is confirmed, result.evidence


# --- examples/retail: the reason of a cancellation --------------------------------------------


@pytest.mark.parametrize(
    ("question", "aside", "reason", "passes"),
    [
        ("since you ordered it by mistake", "Great, processing it now.", "no_longer_needed", False),
        (
            "since you no longer need it",
            "Processing it now, as it was a mistake.",
            "no_longer_needed",
            True,
        ),
        ("since you no longer need it", "Great, processing it now.", "no_longer_needed", True),
        ("for you", "Noted: ordered by mistake.", "no_longer_needed", True),
    ],
)
def test_the_retail_cancellation_reason_is_read_in_the_question_the_yes_answered(
    question: str, aside: str, reason: str, passes: bool
) -> None:
    """`p2-cancel-reason-as-said` read the agent's last message before the call: one more
    message after the confirmed question ("Great, processing it now." "ok") hid a reason the
    question stated and the call contradicted, and a reason said in passing failed one the
    question had right."""
    trace = Trace("Please cancel my order O-1020")
    trace.agent(f"Shall I cancel order O-1020 (Alpine Beanie) {question}?").user("Yes")
    trace.agent(aside).user("ok")
    output = {"order_id": "O-1020", "cancelled_products": ["Alpine Beanie"]}
    trace.call("cancel_order", {"order_id": "O-1020", "reason": reason}, output)
    passed, evidence = retail_checks().cancel_reason_as_said(trace.events, None)
    assert passed is passes, evidence


# --- τ²: the payment method a return or a change of payment uses -----------------------------

USER_VIEW = {
    "user_id": "ann_lee_1",
    "payment_methods": {
        "paypal_1": {"source": "paypal", "id": "paypal_1"},
        "gift_card_1": {"source": "gift_card", "id": "gift_card_1", "balance": 50.0},
        "credit_card_1": {
            "source": "credit_card",
            "id": "credit_card_1",
            "brand": "visa",
            "last_four": "1111",
        },
        "credit_card_2": {
            "source": "credit_card",
            "id": "credit_card_2",
            "brand": "visa",
            "last_four": "2222",
        },
    },
}


@pytest.mark.parametrize(
    ("question", "tool", "method", "named"),
    [
        (
            f"Shall I switch order {ORDER} to your PayPal account?",
            "modify_pending_order_payment",
            "paypal_1",
            True,
        ),
        (
            f"Shall I charge order {ORDER} to your Visa ending 2222?",
            "modify_pending_order_payment",
            "credit_card_2",
            True,
        ),
        (
            f"Return the desk lamp of {ORDER}, refunded to your gift card?",
            "return_delivered_order_items",
            "gift_card_1",
            True,
        ),
        (
            f"Return the desk lamp of {ORDER}, refunded to the original payment method?",
            "return_delivered_order_items",
            "paypal_1",
            True,
        ),
        (
            f"Return the desk lamp of {ORDER}, refunded to credit_card_1?",
            "return_delivered_order_items",
            "credit_card_1",
            True,
        ),
        (
            f"Shall I switch order {ORDER} to your gift card?",
            "modify_pending_order_payment",
            "paypal_1",
            False,
        ),
        (
            f"Shall I charge order {ORDER} to your Visa?",
            "modify_pending_order_payment",
            "credit_card_2",
            False,
        ),
        (
            f"Shall I charge order {ORDER} to your Visa ending 1111?",
            "modify_pending_order_payment",
            "credit_card_2",
            False,
        ),
        (
            f"Return the desk lamp of {ORDER}, refunded to your gift card?",
            "return_delivered_order_items",
            "credit_card_1",
            False,
        ),
        (
            f"Return the desk lamp of {ORDER}, refunded to the original payment method?",
            "return_delivered_order_items",
            "gift_card_1",
            False,
        ),
        (
            f"Shall I switch order {ORDER} to your PayPal account paypal_2?",
            "modify_pending_order_payment",
            "paypal_1",
            False,
        ),
        (
            f"Shall I switch the payment of order {ORDER} to the method you chose?",
            "modify_pending_order_payment",
            "paypal_1",
            False,
        ),
    ],
)
def test_a_tau2_payment_is_confirmed_only_by_a_question_naming_its_method(
    question: str, tool: str, method: str, named: bool
) -> None:
    """The `confirmed-<tool>` constraints named only the order: a yes to moving an order to
    the gift card licensed moving it to PayPal, a yes to a refund to the gift card a refund
    to the credit card. `payment-confirmed` reads the question for the method, by id or kind
    (and what tells it from the user's other methods of that kind)."""
    trace = Trace(f"Help with my order {ORDER}")
    trace.call("get_user_details", {"user_id": "ann_lee_1"}, USER_VIEW)
    paid = ORDER_VIEW | {
        "payment_history": [
            {"transaction_type": "payment", "amount": 10.0, "payment_method_id": "paypal_1"}
        ]
    }
    trace.call("get_order_details", {"order_id": ORDER}, paid)
    trace.agent(question).user("Yes")
    args = {"order_id": ORDER, "payment_method_id": method} | RETURN_LAMP
    trace.call(tool, args, paid)
    passed, evidence = tau2_checks.payment_confirmed(trace.events, None)
    assert passed is named, evidence
    oracle = CONFIRMATIONS[tool](args)
    trace.events[3] = trace.events[3].model_copy(update={"text": oracle})
    assert tau2_checks.payment_confirmed(trace.events, None)[0], oracle


# --- an address written with its usual abbreviations --------------------------------------------

ADDRESS_RULE = constraint(
    id="confirm-address",
    confirmed={
        "change": {"tool": "update_order_address", "ok": True},
        "names": ["args.line1", "args.city"],
    },
)


@pytest.mark.parametrize(
    ("said", "line1", "named"),
    [
        ("200 W Adams St, Suite 1400", "200 W Adams Street", True),
        ("200 W Adams St., Ste 1400", "200 W Adams Street", True),
        ("200 W Adams Street, Apartment 4", "200 W Adams St", True),
        ("12 Oak Ave", "12 Oak Avenue", True),
        ("200 W Adams Road", "200 W Adams Street", False),
        ("200 W Adams Stadium", "200 W Adams St", False),
        ("201 W Adams St", "200 W Adams Street", False),
    ],
)
def test_an_address_is_named_with_its_usual_abbreviations(
    said: str, line1: str, named: bool
) -> None:
    """The agent confirmed "200 W Adams St" and called the tool with "200 W Adams Street"
    (or the customer said one and the agent typed the other): the same address, written
    differently, confirmed nothing and was not the customer's. Street, Avenue, Suite,
    Apartment... and their abbreviations now name each other."""
    trace = Trace(f"Please ship it to {said}, Chicago")
    trace.agent(f"Shall I ship order O-1 to {said}, Chicago?").user("Yes")
    trace.call("update_order_address", {"line1": line1, "city": "Chicago"})
    assert trace.check(ADDRESS_RULE).passed is named
    provenance = constraint(
        id="from-user",
        provenance={"match": {"tool": "update_order_address"}, "args": ["line1"]},
    )
    assert trace.check(provenance).passed is named
