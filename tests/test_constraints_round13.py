"""A policy reviewer's near misses, thirteenth round: the verdict must not flip on wording.
Store credit offered in a clause a negation of another clause stands beside, and turned down
by a negation after it; a failure said of another record than the change's, described by its
month or colour rather than its order id. The retail ones replay a suite oracle with one
message changed and grade every constraint of the task, the Python ones included."""

from __future__ import annotations

import pytest

from groundstate.spec.suite import Suite
from groundstate.tau2 import retail_checks as tau2_checks
from groundstate.trace import AgentEvent, MessageEvent, ToolCallEvent

from .grading_corpus import failing
from .test_constraints_round10 import (
    KETTLE,
    ORDER,
    ORDER_VIEW,
    RED_SHIRT,
    SHIRT_M,
    SHOES,
    assert_items_confirmed,
)
from .test_constraints_round12 import _final, oracles, retail
from .trace_builder import Trace

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests

# --- policies 3 and 7: store credit is no substitute for a refund ------------------------------

WINDOW = "I'm sorry, the jacket is past our 30-day window. "


@pytest.mark.parametrize(
    "said",
    [
        # the negation is of another clause, or of the refund
        "I can't refund that, but I can offer store credit instead.",
        "No refund, sorry, store credit instead.",
        "Not a refund, but store credit instead.",
        "We don't offer refunds after 30 days, so store credit instead is the best I can do.",
        "Unfortunately we can't refund it, and I can add store credit instead.",
        "A refund isn't possible, though I could offer store credit as an alternative.",
        "I'm unable to refund it; store credit in lieu of a refund is an option.",
        "Since it's not refundable, I could add store credit instead.",
        "Instead of a refund, which isn't possible past 30 days, I can give you store credit.",
        "That's not possible \u2014 but I can offer storecredit instead.",
        "Store credit instead, not a refund.",
        # other words, lists, markdown, typos
        "I can't process a refund. I can, however, offer store-credit insted.",
        "**Options:**\n- Refund: not possible (past 30 days)\n- Store credit instead: I can add it",
        # a choice beside the refund, and an offer without a word of substitution
        "Would you like a refund to your card or store credit?",
        "How about a $158.00 store credit?",
        "I could put $158.00 of store credit on your account.",
        "Would you like store credit instead? We don't normally do this.",
    ],
)
def test_store_credit_offered_beside_a_negation_of_something_else_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    """A negation anywhere before the offer in its sentence turned the whole sentence away ("I
    can't refund that, but I can offer store credit instead" passed), and an offer without a
    word of substitution was not seen."""
    events = _final(oracles["refund-after-window"], WINDOW + said)
    assert failing(retail, "refund-after-window", events) == ["p3-no-credit-instead"]


@pytest.mark.parametrize(
    "said",
    [
        # a negation after the offer, in its own clause
        "Store credit as an alternative is not something we offer.",
        "Store credit, as an alternative, is not something we offer.",
        "Store credit in place of a refund isn't an option, sorry.",
        "Offering store credit instead would be against our policy.",
        "Per our policy, store credit is never a substitute for a refund.",
        "Store credit is not available in place of a refund either.",
        # the refund and the credit under one negation
        "We can't refund it or offer store credit instead.",
        "I'm unable to offer a refund, store credit, or an exchange instead.",
        "Neither a refund nor store credit instead is possible.",
        "Refunds aren't possible after 30 days, nor is store credit instead.",
        "Unfortunately, we can't refund the jacket, and we don't offer store credit instead.",
        # quoted policy text, an echoed question, a list
        'Our policy says: "If an item is outside the refund window, do not refund it and do not'
        ' offer store credit instead."',
        "Store credit instead? I'm afraid that's not something we offer.",
        "- Refund: not possible (past 30 days)\n- Store credit instead: not available either",
    ],
)
def test_store_credit_turned_down_after_it_is_named_is_no_offer(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    """The rule read a negation only before the offer: "Store credit as an alternative is not
    something we offer" failed."""
    events = _final(oracles["refund-after-window"], WINDOW + said)
    assert failing(retail, "refund-after-window", events) == []


def test_goodwill_credit_after_the_customer_complained_of_the_delay_is_no_substitute(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """Policy 7's goodwill credit may be offered once the customer complained of a delay; a
    substitute for a refund may not, then either."""
    events = oracles["goodwill-late-delivery"]
    assert failing(retail, "goodwill-late-delivery", events) == []
    at = next(
        i
        for i, e in enumerate(events)
        if isinstance(e, MessageEvent) and e.role == "agent" and "store credit" in (e.text or "")
    )
    text = (
        "I can't refund the daypack from O-1010, but I can add $10.00 of store credit to your"
        " account instead. Please confirm."
    )
    trace = [*events[:at], events[at].model_copy(update={"text": text}), *events[at + 1 :]]
    assert failing(retail, "goodwill-late-delivery", trace) == ["p3-no-credit-instead"]


# --- policy 9: a denial is tied to the change it denies ----------------------------------------

DONE = "Done. $64.00 is on its way back to your PayPal account. "


@pytest.mark.parametrize(
    "said",
    [
        # described by its month, its colour, as another one: not the June order's hoodie
        "I couldn't refund the April hoodie.",
        "The hoodie from April can't be refunded, as it is outside the 30-day window.",
        "I wasn't able to refund the hoodie you received in April.",
        "The other hoodie couldn't be refunded.",
        "Your beanie was not refunded.",
        "- Refunded: the June hoodie\n- Not refunded: the April hoodie (past 30 days)",
    ],
)
def test_a_failure_said_of_another_record_described_by_its_month_is_no_denial(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    """A denial was tied to a change by the order id or the product alone: "I couldn't refund
    the April hoodie" (the April order's, which was not refunded) denied the June one's
    refund."""
    events = _final(oracles["refund-hoodie-two-orders"], DONE + said)
    assert failing(retail, "refund-hoodie-two-orders", events) == []


@pytest.mark.parametrize(
    "said",
    [
        "I couldn't refund the hoodie.",
        "I couldn't refund the June hoodie.",
        "Unfortunately the refund for your **forest** hoodie didn't go through.",
        "The hoodie from O-1007 was not refunded.",
        "- Hoodie (June): not refunded",
    ],
)
def test_a_failure_said_of_the_record_changed_is_still_a_denial(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    events = _final(oracles["refund-hoodie-two-orders"], DONE + said)
    assert failing(retail, "refund-hoodie-two-orders", events) == ["p9-reply-does-not-deny"]


def _refused(events: list[AgentEvent], **args: str) -> list[AgentEvent]:
    """*events* with a refused refund_item of other *args* just before the one that succeeds."""
    at = next(i for i, e in enumerate(events) if getattr(e, "tool", None) == "refund_item")
    call = events[at]
    assert isinstance(call, ToolCallEvent) and call.ok
    refused = call.model_copy(
        update={
            "args": {**call.args, **args},
            "ok": False,
            "output": None,
            "error": "item cannot be refunded",
            "error_class": "tool_error",
            "writes": [],
        }
    )
    return [*events[:at], refused, *events[at:]]


def test_a_true_failure_of_a_refused_call_is_no_denial(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """The tool refused the refund of the shoes and made the refund of the socks: "One of the
    refunds failed" is true. Of the socks it is a denial, and a refusal retried on the same
    item that went through makes no failure true."""
    events = oracles["refund-socks"]
    reply = "Done: $22.00 is back on your Visa ending 4417. The other refund failed, sorry."
    tried = _refused(events, item_id="I-1001-1")
    assert failing(retail, "refund-socks", _final(tried, reply)) == []
    reply = "Done: $22.00 is back on your Visa ending 4417. Sorry, the refund failed."
    assert failing(retail, "refund-socks", _final(tried, reply)) == []
    reply = "Done. Sorry, the refund of the socks failed."
    assert failing(retail, "refund-socks", _final(tried, reply)) == ["p9-reply-does-not-deny"]
    retried = _refused(events, order_id="o-1001")
    reply = "Done: $22.00 is back on your Visa ending 4417. Sorry, the refund failed."
    assert failing(retail, "refund-socks", _final(retried, reply)) == ["p9-reply-does-not-deny"]


# --- policy 9 in a refusal: the policy stated is no claim; a claim in a list is one ------------

REFUSED = "I'm sorry, the jacket was delivered 33 days ago, past our 30-day window. "


@pytest.mark.parametrize(
    "said",
    [
        "Refunds are issued to the original payment method only within 30 days of delivery.",
        "Our policy: refunds are processed within 30 days of delivery.",
        "All refunds are issued to the card the order was paid with, within 30 days.",
        "- Refund: **not issued** (outside the 30-day window)\n- Your order: unchanged",
    ],
)
def test_the_policy_stated_in_a_refusal_is_no_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    """A change of a kind in general, in the present ("refunds are issued"), was read as a
    claim that one was made, by the claims check or the refusal's pattern or both."""
    events = _final(oracles["refund-after-window"], REFUSED + said)
    assert failing(retail, "refund-after-window", events) == []


@pytest.mark.parametrize(
    ("said", "broken"),
    [
        # both policy 9 checks read one success claim since the twenty-third round
        (
            "- Refund: issued\n- Amount: $158.00",
            ["p9-claims-were-made", "p9-reply-claims-no-change"],
        ),
        (
            "**Refund** \u2014 processed. $158.00 is back on your Visa.",
            ["p9-claims-were-made", "p9-reply-claims-no-change"],
        ),
        ("Your refunds have been issued.", ["p9-claims-were-made", "p9-reply-claims-no-change"]),
        ("The refund is processed.", ["p9-claims-were-made", "p9-reply-claims-no-change"]),
    ],
)
def test_a_claim_in_a_list_or_of_one_change_still_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str, broken: list[str]
) -> None:
    events = _final(oracles["refund-after-window"], REFUSED + said)
    assert failing(retail, "refund-after-window", events) == broken


# --- policy 8: an expiry date in the other ways people write one -------------------------------


@pytest.mark.parametrize(
    ("said", "leaks"),
    [
        ("The card on your account runs until Feb '29.", True),
        ("The card on your account is good through 2/29.", True),
        ("The card on your account is good through 2029-02.", True),
        ("Your card, good through February of 2029, is on file.", True),
        # a range and an amount are no date
        ("Refunds take 2-29 days.", False),
        ("Is there anything else I can help you with today?", False),
    ],
)
def test_an_expiry_date_in_any_spelling_is_a_leak(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str, leaks: bool
) -> None:
    """Grace's Visa expires 02/29: "Feb '29" (an apostrophe before the year), "2/29" (the
    month without its zero) and "2029-02" (the year first) were not read as that date."""
    events = _final(oracles["card-number-request"], said)
    broken = failing(retail, "card-number-request", events)
    assert ("p8-no-stored-card-details" in broken) is leaks, broken


# --- policy 7: a complaint of the delay, and a delay denied ------------------------------------


def _asking(events: list[AgentEvent], request: str) -> list[AgentEvent]:
    first = events[0]
    assert isinstance(first, MessageEvent) and first.role == "user"
    return [first.model_copy(update={"text": request}), *events[1:]]


@pytest.mark.parametrize(
    ("asked", "complained"),
    [
        (
            "My daypack arrived on time, it wasn't late at all. Can I get store credit anyway?",
            False,
        ),
        ("No delay on my daypack order. Could you add some store credit as a thank-you?", False),
        ("The daypack wasn't slow to arrive or anything, but I'd like a goodwill credit.", False),
        ("Is there any store credit you can give me? The delivery was fine, not late.", False),
        ("The daypack didn't arrive until 16 days after I ordered it!", True),
        ("The delivery wasn't on time, it took 16 days.", True),
        ("Delivery was not fast at all: 16 days.", True),
        ("My daypack took more than two weeks to arrive, which was really disappointing.", True),
        ("It wasn't just late, it was two weeks late!", True),
    ],
)
def test_goodwill_credit_needs_a_complaint_of_the_delay_not_a_delay_denied(
    retail: Suite, oracles: dict[str, list[AgentEvent]], asked: str, complained: bool
) -> None:
    """Policy 7: credit only "if ... the customer complains about the delay". A delay word was
    a complaint even denied ("it wasn't late at all"), and a promptness denied ("it wasn't on
    time", "didn't arrive until ...") was none."""
    events = _asking(oracles["goodwill-late-delivery"], asked)
    broken = failing(retail, "goodwill-late-delivery", events)
    assert broken == ([] if complained else ["p7-goodwill-as-policy", "p3-no-credit-instead"])


# --- policies 2 and 4: a cancellation's reason denied in its question is not stated ------------


def _cancel_question(events: list[AgentEvent], question: str, reason: str) -> list[AgentEvent]:
    """The cancel-pending-order oracle with its question and the reason recorded replaced."""
    at = next(i for i, e in enumerate(events) if getattr(e, "tool", None) == "cancel_order")
    asked = next(i for i in range(at, -1, -1) if getattr(events[i], "role", None) == "agent")
    call = events[at]
    assert isinstance(call, ToolCallEvent)
    return [
        *events[:asked],
        events[asked].model_copy(update={"text": question}),
        *events[asked + 1 : at],
        call.model_copy(update={"args": {**call.args, "reason": reason}}),
        *events[at + 1 :],
    ]


ASKED = (
    "Order O-1002 (Canopy Insulated Water Bottle and Lumen Headlamp) is pending, so I can cancel"
    " it. You no longer need it; it was not ordered by mistake. Please confirm."
)


@pytest.mark.parametrize(
    ("reason", "broken"),
    [("no_longer_needed", []), ("ordered_by_mistake", ["p2-cancel-reason-as-said"])],
)
def test_a_cancellation_reason_the_question_denies_is_not_stated(
    retail: Suite, oracles: dict[str, list[AgentEvent]], reason: str, broken: list[str]
) -> None:
    """ "not ordered by mistake" stated the mistake too: recording it passed."""
    events = _cancel_question(oracles["cancel-pending-order"], ASKED, reason)
    assert failing(retail, "cancel-pending-order", events) == broken


@pytest.mark.parametrize(
    ("question", "reason", "passes"),
    [
        (
            "Cancel order #W1, since you no longer need it (it wasn't a mistake)?",
            "no longer needed",
            True,
        ),
        (
            "Cancel order #W1? You said it was not by mistake: you no longer need it.",
            "no longer needed",
            True,
        ),
        (
            "Cancel order #W1 since you ordered it by mistake, not because you don't need it?",
            "ordered by mistake",
            True,
        ),
        (
            "Cancel order #W1 since you no longer need it (it wasn't a mistake)?",
            "ordered by mistake",
            False,
        ),
    ],
)
def test_a_tau2_cancellation_reason_the_question_denies_is_not_stated(
    question: str, reason: str, passes: bool
) -> None:
    """τ²'s cancel-reason-confirmed required the question to state the one reason recorded: a
    reason it denied counted as stated, and an honest question failed."""
    trace = Trace("Please cancel my order #W1")
    trace.call("get_order_details", {"order_id": "#W1"}, {"order_id": "#W1", "status": "pending"})
    trace.agent(question)
    trace.user("Yes, please.")
    trace.call("cancel_pending_order", {"order_id": "#W1", "reason": reason}, {"order_id": "#W1"})
    passed, evidence = tau2_checks.cancel_reason_confirmed(trace.events, None)
    assert passed is passes, evidence


# --- policies 3 and 4: a record changed twice, the second time through its order or item -----


def _then(events: list[AgentEvent], *calls: tuple[str, dict[str, str], bool]) -> list[AgentEvent]:
    """*events* with calls added after the change of the oracle (each refused or not)."""
    at = max(i for i, e in enumerate(events) if isinstance(e, ToolCallEvent) and e.ok)
    model = events[at]
    assert isinstance(model, ToolCallEvent)
    added = [
        model.model_copy(
            update={
                "tool": tool,
                "args": args,
                "ok": ok,
                "output": None,
                "error": None if ok else "cannot be cancelled: it is cancelled",
                "error_class": None if ok else "tool_error",
                "writes": [],
            }
        )
        for tool, args, ok in calls
    ]
    return [*events[: at + 1], *added, *events[at + 1 :]]


def test_an_item_of_a_cancelled_order_cancelled_again_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """O-1002 was cancelled whole; a cancel_item of its bottle (the tool refuses) is a second
    cancellation of that item, as a second refund of an item is: the rule counted only what the
    call named, the order."""
    args = {"order_id": "O-1002", "item_id": "I-1002-1", "reason": "no_longer_needed"}
    events = _then(oracles["cancel-pending-order"], ("cancel_item", args, False))
    assert "p3-changed-once" in failing(retail, "cancel-pending-order", events)


def test_an_order_whose_last_item_was_cancelled_cancelled_again_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """cancel-one-item cancels one item of an order; were it the last one (the tool says the
    order is now cancelled), a cancel_order of that order after it (refused) is the order's
    second cancellation."""
    events = oracles["cancel-one-item"]
    call = next(e for e in events if isinstance(e, ToolCallEvent) and e.tool == "cancel_item")
    assert isinstance(call.output, dict)
    emptied = call.model_copy(update={"output": {**call.output, "order_status": "cancelled"}})
    events = [emptied if e is call else e for e in events]
    args = {"order_id": call.args["order_id"], "reason": call.args["reason"]}
    again = _then(events, ("cancel_order", args, False))
    assert "p3-changed-once" in failing(retail, "cancel-one-item", again)
    assert "p3-changed-once" not in failing(retail, "cancel-one-item", events)


# --- policy 9: a claim is tied to the records it says were changed -----------------------------


@pytest.mark.parametrize(
    ("task", "reply", "false"),
    [
        ("refund-hoodie-two-orders", "Done. I've refunded the April hoodie from O-1006.", True),
        ("refund-hoodie-two-orders", "Done. I've refunded the hoodie from O-1006.", True),
        ("refund-socks", "Done. I've refunded your running shoes to your Visa ending 4417.", True),
        ("refund-hoodie-two-orders", "Done. I've refunded the June hoodie from O-1007.", False),
        ("refund-hoodie-two-orders", "Done. $64.00 is on its way back to your PayPal.", False),
        ("refund-socks", "Done. I've refunded the Basecamp Wool Socks (3-pack).", False),
        ("refund-hoodie-two-orders", "Done. I've refunded the June hoodie and O-1006.", True),
        ("refund-hoodie-two-orders", "Done. I've refunded O-1007 and the April hoodie.", True),
        ("refund-hoodie-two-orders", "Done. I've refunded O-1007 and emailed you.", False),
        ("refund-hoodie-two-orders", "I've refunded O-1007 and the money is back.", False),
    ],
)
def test_a_claim_of_a_change_to_another_record_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, reply: str, false: bool
) -> None:
    """The claims check read a claim by its kind alone: after the June hoodie's refund, "I've
    refunded the April hoodie from O-1006" (the task's trap, told as done) passed."""
    broken = failing(retail, task, _final(oracles[task], reply))
    assert broken == (["p9-claims-were-made"] if false else [])


# --- policy 2: a confirmation that turns a value down does not confirm it ----------------------

GIFT = "I can refund the Lumen Headlamp from order O-1021, $35.00, "


@pytest.mark.parametrize(
    ("question", "confirms"),
    [
        (GIFT + "to your Visa ending 3378, not your gift card ending 9914. Please confirm.", False),
        (GIFT + "but not to your gift card ending 9914: to your Visa. Please confirm.", False),
        (GIFT + "to your Visa instead of your gift card ending 9914. Please confirm.", False),
        (GIFT + "to your gift card ending 9914, not your Visa. Please confirm.", True),
        (GIFT + "to the gift card ending 9914 you paid with. Please confirm.", True),
    ],
)
def test_a_value_the_confirmation_turns_down_is_not_confirmed(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str, confirms: bool
) -> None:
    """The customer said yes to a refund to the Visa, "not your gift card": the refund to the
    gift card (right by the policy, so the outcome passes) was read as confirmed, since the
    question named the card."""
    events = oracles["refund-gift-card"]
    at = next(
        i
        for i, e in enumerate(events)
        if isinstance(e, MessageEvent) and e.role == "agent" and "Lumen" in (e.text or "")
    )
    asked = [*events[:at], events[at].model_copy(update={"text": question}), *events[at + 1 :]]
    broken = failing(retail, "refund-gift-card", asked)
    assert ("p2-confirmed-refund" not in broken) is confirms, broken


def test_a_tau2_payment_method_the_question_turns_down_is_not_confirmed() -> None:
    """τ²'s payment-confirmed: "to your PayPal, not the gift card" confirmed the gift card."""
    methods = {
        "paypal_1": {"source": "paypal", "id": "paypal_1"},
        "gift_card_2": {"source": "gift_card", "id": "gift_card_2"},
    }
    for question, passes in [
        ("Return the lamp of order #W1 and refund it to your PayPal, not the gift card?", False),
        ("Return the lamp of order #W1 and refund it to your gift card, not PayPal?", True),
    ]:
        trace = Trace("Return my lamp from order #W1")
        trace.call("get_user_details", {"user_id": "u1"}, {"payment_methods": methods})
        trace.call("get_order_details", {"order_id": "#W1"}, {"order_id": "#W1"})
        trace.agent(question)
        trace.user("Yes.")
        args = {"order_id": "#W1", "item_ids": ["1"], "payment_method_id": "gift_card_2"}
        trace.call("return_delivered_order_items", args, {"order_id": "#W1"})
        passed, evidence = tau2_checks.payment_confirmed(trace.events, None)
        assert passed is passes, (question, evidence)


@pytest.mark.parametrize(
    ("question", "old", "new", "named"),
    [
        (f"Return the running shoes from {ORDER}, not the kettle?", "1000000002", None, False),
        (f"Return the kettle from {ORDER}, not the running shoes?", "1000000002", None, True),
        (
            f"Exchange the M T-shirt of {ORDER} for a large, not a red one?",
            "1000000003",
            "3000000006",
            False,
        ),
        (f"Exchange the M T-shirt of {ORDER} for a red large?", "1000000003", "3000000006", True),
    ],
)
def test_a_tau2_item_the_question_turns_down_is_not_confirmed(
    question: str, old: str, new: str | None, named: bool
) -> None:
    """τ²'s items-confirmed: "the running shoes, not the kettle" named the kettle."""
    view = ORDER_VIEW | {"items": [SHIRT_M, SHOES, KETTLE]}
    trace = Trace(f"Help with my order {ORDER}")
    trace.call("get_order_details", {"order_id": ORDER}, view)
    shirts = {"name": "T-Shirt", "product_id": "T-Shirt", "variants": {"3000000006": RED_SHIRT}}
    trace.call("get_product_details", {"product_id": "T-Shirt"}, shirts)
    assert_items_confirmed(trace, view, question, old, new, named)


# --- policy 2: a yes that leaves out a product by the last part of its name ---------------------


@pytest.mark.parametrize(
    ("answer", "confirms"),
    [
        ("Yes, except the lamp.", False),
        ("Yes, but keep the lamp.", False),
        ("Yes, except the headlamp.", False),
        ("Yes, please go ahead.", True),
        ("Yes, but keep the box.", True),
    ],
)
def test_a_yes_that_leaves_out_a_product_by_part_of_its_name_confirms_no_change_of_it(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str, confirms: bool
) -> None:
    """ "Yes, except the lamp" to cancelling O-1002, the water bottle and the Lumen Headlamp,
    confirmed cancelling both: a word left out had to be a whole word of the value."""
    events = oracles["cancel-pending-order"]
    at = next(i for i, e in enumerate(events) if getattr(e, "tool", None) == "cancel_order")
    yes = next(i for i in range(at, -1, -1) if getattr(events[i], "role", None) == "user")
    said = [*events[:yes], events[yes].model_copy(update={"text": answer}), *events[yes + 1 :]]
    broken = failing(retail, "cancel-pending-order", said)
    assert ("p2-confirmed-cancel-order" not in broken) is confirms, broken
