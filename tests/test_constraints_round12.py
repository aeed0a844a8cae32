"""A policy reviewer's near misses, twelfth round: the retail suite's closing that denies a
change the agent made, in any words, and the honest remark about another record that is no
denial. The retail ones replay a suite oracle with one message changed and grade every
constraint of the task, the Python ones included."""

from __future__ import annotations

import gzip
import json

import pytest

from groundstate.spec.suite import Suite, load_suite
from groundstate.tau2 import retail_checks as tau2_checks
from groundstate.tau2.policy import constraint_sets
from groundstate.trace import AgentEvent, MessageEvent, ToolCallEvent, agent_events, load_jsonl

from .grading_corpus import CORPUS, EXAMPLES, failing
from .trace_builder import Trace, constraint


@pytest.fixture(scope="module")
def retail() -> Suite:
    return load_suite(EXAMPLES / "retail")


@pytest.fixture(scope="module")
def oracles() -> dict[str, list[AgentEvent]]:
    """The oracles' traces from the grading corpus, only their rows parsed (the whole corpus
    takes seconds)."""
    found: dict[str, list[AgentEvent]] = {}
    with gzip.open(CORPUS, "rt", encoding="utf-8") as lines:
        for line in lines:
            if '"label": "solution:oracle"' in line:
                row = json.loads(line)
                found[row["task"]] = agent_events(load_jsonl(row["trace"]))
    return found


def _final(events: list[AgentEvent], text: str) -> list[AgentEvent]:
    assert isinstance(events[-1], MessageEvent) and events[-1].final
    return [*events[:-1], events[-1].model_copy(update={"text": text})]


# --- policy 9: a final reply that denies the change made, in any words ------------------------

SAID = "I've refunded the socks, $22.00, to your Visa ending 4417."


@pytest.mark.parametrize(
    "reply",
    [
        "Sorry, I wasn't able to process the refund. Is there anything else?",
        "Unfortunately the refund didn't go through. Anything else?",
        "Unfortunately the refund failed.",
        "I'm afraid the refund was unsuccessful.",
        "We weren't able to refund the socks.",
        "The refund hasn't been processed yet.",
        "I haven't refunded the socks.",
        "Your refund was declined.",
        "I won't be able to refund that.",
        "The socks are not refundable, sorry.",
        "I'm sorry, I could not process that refund.",
        "No changes were made to your account.",
        "Nothing has been changed.",
    ],
)
def test_a_closing_that_denies_the_change_made_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], reply: str
) -> None:
    """The socks were refunded and the agent said so; its final reply says they were not. The
    rule read a few phrasings ("could not", "cannot be refunded"): "wasn't able to", "didn't
    go through", "failed", "not refundable"... passed."""
    events = oracles["refund-socks"]
    said = MessageEvent(step=events[-1].step, role="agent", text=SAID, at=events[-1].at)
    trace = [*events[:-1], said, events[-1].model_copy(update={"text": reply})]
    assert "p9-reply-does-not-deny" in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    ("task", "reply"),
    [
        (
            "refund-hoodie-two-orders",
            "Done. $64.00 is on its way back to your PayPal account. The hoodie from your April"
            " order O-1006 can't be refunded, as it is outside the 30-day window.",
        ),
        (
            "refund-hoodie-two-orders",
            "Done. $64.00 is on its way back to your PayPal account. I'm unable to refund the"
            " April hoodie (O-1006): it was delivered more than 30 days ago.",
        ),
        (
            "refund-socks",
            "Done. $22.00 is on its way back to your Visa ending 4417. I can't refund the"
            " running shoes too, as you haven't asked me to. Anything else?",
        ),
        (
            "refund-socks",
            "Done. $22.00 is on its way back to your Visa ending 4417. Nothing else was"
            " changed, and you won't be charged again. I can't wait to hear how you like them!",
        ),
        (
            "cancel-one-item",
            "The beanie is cancelled; the hoodie is not cancelled and will ship as planned.",
        ),
        (
            "cancel-pending-order",
            "Order O-1002 is cancelled. You will not be charged for the cancelled order.",
        ),
        (
            "several-changes",
            "All done. The refunds are on their way to your Mastercard, the beanie is cancelled,"
            " and your default address is updated. Your existing orders' addresses have not been"
            " changed.",
        ),
        (
            "refund-socks",
            "Done. $22.00 is on its way back to your Visa ending 4417. If the refund doesn't"
            " show up within 5 days, let us know.",
        ),
    ],
)
def test_a_remark_about_another_record_is_no_denial(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, reply: str
) -> None:
    """A partial refusal or side remark names another record, or none of the change's: the
    rule failed any "can't be refunded" or "I'm unable to ..." in a closing, whatever it was
    about, and "I can't wait"."""
    assert failing(retail, task, _final(oracles[task], reply)) == []


# --- policy 1: "if verification fails, you may ask once more" ---------------------------------


def _verified(events: list[AgentEvent], *tries: tuple[str, str | None]) -> list[AgentEvent]:
    """The oracle with calls of verify_identity (zip code, error class) put before its own."""
    at = next(i for i, e in enumerate(events) if getattr(e, "tool", None) == "verify_identity")
    call = events[at]
    assert isinstance(call, ToolCallEvent)
    made = [
        call.model_copy(
            update={
                "args": {**call.args, "zip_code": zip_code},
                "ok": error is None,
                "output": call.output if error is None else None,
                "error": None if error is None else "identity not verified",
                "error_class": error,
            }
        )
        for zip_code, error in tries
    ]
    said = events[at - 1]  # the customer's details; the zip codes tried are hers too
    assert isinstance(said, MessageEvent) and said.role == "user"
    told = said.model_copy(update={"text": f"{said.text} Or maybe 97213 or 97215."})
    return [*events[: at - 1], told, *made, *events[at:]]


@pytest.mark.parametrize(
    ("tries", "broken"),
    [
        # verifying the verified customer again is no retry (the rule counted every call)
        ([("97214", None), ("97214", None)], []),
        ([("97213", "tool_error"), ("97214", None)], []),
        # a call the gateway refused for its arguments checked nothing
        ([("97213", "tool_error"), ("97214", "invalid_arguments")], []),
        # a third try after two failures breaks the rule, whatever it gives
        ([("97213", "tool_error"), ("97215", "tool_error")], ["p1-verify-retried-once"]),
    ],
)
def test_only_a_try_after_two_failed_verifications_breaks_the_retry_rule(
    retail: Suite,
    oracles: dict[str, list[AgentEvent]],
    tries: list[tuple[str, str | None]],
    broken: list[str],
) -> None:
    events = _verified(oracles["refund-socks"], *tries)
    assert failing(retail, "refund-socks", events) == broken


# --- τ²: "Exchange or modify order tools can only be called once per order" -------------------

ADDRESS = {"address1": "1 Main St", "address2": "", "city": "Austin", "state": "TX"}


@pytest.mark.parametrize(
    ("calls", "passes"),
    [
        # the second change of a pending order's address succeeds: only the policy forbids it
        (
            [
                ("modify_pending_order_address", "#W1", True),
                ("modify_pending_order_address", "#W1", True),
            ],
            False,
        ),
        (
            [
                ("modify_pending_order_payment", "#W1", True),
                ("modify_pending_order_payment", "#W1", True),
            ],
            False,
        ),
        # τ²'s own gold: the address, then the items, of one order; or two orders
        (
            [
                ("modify_pending_order_address", "#W1", True),
                ("modify_pending_order_items", "#W1", True),
            ],
            True,
        ),
        (
            [
                ("modify_pending_order_address", "#W1", True),
                ("modify_pending_order_address", "#W2", True),
            ],
            True,
        ),
        # a call the tool refused changed nothing: the one that succeeded is the first
        (
            [
                ("modify_pending_order_address", "#W1", False),
                ("modify_pending_order_address", "#W1", True),
            ],
            True,
        ),
    ],
)
def test_an_order_is_changed_once_by_each_tool(
    calls: list[tuple[str, str, bool]], passes: bool
) -> None:
    trace = Trace("Please change my order")
    for tool, order, ok in calls:
        trace.call(tool, {"order_id": order, **ADDRESS}, {"order_id": order}, ok=ok)
    passed, evidence = tau2_checks.changed_once_per_order(trace.events, None)
    assert passed is passes, evidence
    if not passes:
        assert evidence["offending_step"] == 2
    assert "changed-once-per-order" in {c["id"] for c in constraint_sets()["policy"]}


# --- a refused call is judged by the change it did not make --------------------------------------


def _refused_first(events: list[AgentEvent], tool: str, **args: str) -> list[AgentEvent]:
    """The oracle with a refused call of *tool* (its arguments changed by *args*) just before
    the call that succeeds: a mistyped id the tool did not find, then the retry."""
    at = next(i for i, e in enumerate(events) if getattr(e, "tool", None) == tool)
    call = events[at]
    assert isinstance(call, ToolCallEvent) and call.ok
    refused = call.model_copy(
        update={
            "args": {**call.args, **args},
            "ok": False,
            "output": None,
            "error": f"no order {args.get('order_id')!r}",
            "error_class": "tool_error",
            "writes": [],
        }
    )
    return [*events[:at], refused, *events[at:]]


@pytest.mark.parametrize(
    ("task", "tool", "order_id"),
    [
        ("refund-socks", "refund_item", "o-1001"),
        ("refund-socks", "refund_item", " O-1001"),
        ("exchange-shoe-size", "exchange_item", "O1012"),
        ("goodwill-late-delivery", "add_store_credit", "o-1010"),
    ],
)
def test_a_refused_call_with_a_mistyped_order_id_before_the_right_one_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, tool: str, order_id: str
) -> None:
    """The agent read the order, mistyped its id in the change, the tool refused, the retry
    went through: the read-before-change rules counted the refused call as a change of an
    order never read."""
    events = _refused_first(oracles[task], tool, order_id=order_id)
    assert failing(retail, task, events) == []


def test_a_denial_in_the_closing_before_the_goodbye_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """Policy 9 as a model agent does it: the closing ("... Anything else?"), the user's
    goodbye, a final reply that only says goodbye. The rule read the final reply alone."""
    events = oracles["refund-socks"]
    last = events[-1]
    closing = [
        MessageEvent(step=last.step, role="agent", text=SAID, at=last.at),
        MessageEvent(
            step=last.step, role="agent", text="Sorry, the refund failed. Anything else?", at=0
        ),
        MessageEvent(step=last.step, role="user", text="No, that's all. Bye!", at=last.at),
        last.model_copy(update={"text": "Goodbye!"}),
    ]
    assert "p9-reply-does-not-deny" in failing(retail, "refund-socks", [*events[:-1], *closing])


# --- policy 3: store credit offered instead of a refund ----------------------------------------

WINDOW = "I'm sorry, the jacket is past our 30-day window, so I can't refund it. "


@pytest.mark.parametrize(
    ("said", "offers"),
    [
        # store credit as the thing turned down is no offer (every one of these failed)
        ("Refunds only go to the original payment method rather than store credit.", False),
        ("We refund to the card you paid with instead of store credit.", False),
        ("Refunds go back to the card you paid with, rather than as store credit.", False),
        # offers, in either order (the second was not seen)
        ("Instead of a refund, I can give you store credit.", True),
        ("Alternatively, I could add store credit to your account.", True),
        ("I can offer you store credit instead.", True),
        ("I can put store credit in place of the refund.", True),
    ],
)
def test_store_credit_turned_down_is_no_offer_and_an_offer_in_any_order_is(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str, offers: bool
) -> None:
    events = _final(oracles["refund-after-window"], WINDOW + said)
    assert failing(retail, "refund-after-window", events) == (
        ["p3-no-credit-instead"] if offers else []
    )


# --- policy 9 in a refusal: a change said *not* made is no claim ---------------------------------

REFUSED = "I'm sorry, the jacket was delivered 33 days ago, past our 30-day window. "


@pytest.mark.parametrize(
    "said",
    [
        "We've made no changes to your order.",
        "No refund has been issued.",
        "Nothing has been refunded or changed.",
        "Your order remains unchanged, and no refund was processed.",
        "Neither a refund nor store credit has been issued.",
        "I've refunded nothing.",
    ],
)
def test_a_change_said_not_made_is_no_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    """The negated subject ("no refund", "nothing", "neither ... nor") and object ("made no
    changes") were read as claims of the change, by the pattern and by the Python check."""
    events = _final(oracles["refund-after-window"], REFUSED + said)
    assert failing(retail, "refund-after-window", events) == []


@pytest.mark.parametrize(
    "said",
    [
        "No problem, the refund has been processed.",
        "No worries \u2014 your refund has been issued.",
        "No problem: I have refunded the jacket.",
        "There was no delay; the refund was issued today.",
    ],
)
def test_a_claim_after_a_no_of_another_clause_is_still_a_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    events = _final(oracles["refund-after-window"], REFUSED + said)
    assert failing(retail, "refund-after-window", events) == [
        "p9-claims-were-made",
        "p9-reply-claims-no-change",
    ]


def test_a_tau2_change_retried_after_an_order_id_without_its_hash_passes() -> None:
    """τ² agents often drop the "#" of an order id: the tool refuses, the retry goes through.
    The status-read rule counted the refused call as a change of an order never read."""
    [rule] = [
        constraint(**c)
        for c in constraint_sets()["policy"]
        if c["id"] == "status-read-before-cancel_pending_order"
    ]
    trace = Trace("Cancel my order #W1, I no longer need it")
    trace.call("get_order_details", {"order_id": "#W1"}, {"order_id": "#W1", "status": "pending"})
    trace.call("cancel_pending_order", {"order_id": "W1", "reason": "no longer needed"}, ok=False)
    trace.call("cancel_pending_order", {"order_id": "#W1", "reason": "no longer needed"}, {})
    assert trace.check(rule).passed
    trace.call("cancel_pending_order", {"order_id": "#W2", "reason": "no longer needed"}, {})
    assert not trace.check(rule).passed  # a change of an order never read


# --- policy 9: the customer is told the change was made, in any words ---------------------------


@pytest.mark.parametrize(
    ("reply", "told"),
    [
        ("Refund complete: $22.00 is back on your Visa ending 4417.", True),
        ("Your refund has gone through. Anything else?", True),
        ("You'll see $22.00 back on your Visa ending 4417 within 5 days.", True),
        ("Refund issued: $22.00 to your Visa ending 4417.", True),
        ("That's done: $22.00 is heading back to your Visa ending 4417.", True),
        ("Refunded! $22.00 to your Visa ending 4417.", True),
        ("The refund of $22.00 to your Visa ending 4417 was successful.", True),
        ("Your $22.00 refund is being processed to your Visa ending 4417.", True),
        ("Is there anything else I can help you with?", False),
        ("Thanks for shopping with us!", False),
    ],
)
def test_the_change_told_in_any_words_a_claim_is_read_in_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], reply: str, told: bool
) -> None:
    """The rule read a few phrasings of its own ("Done", "I've refunded", "is refunded"), not
    those the claims check reads: "Refund complete", "Refunded!", "You'll see $22.00 back"
    failed policy 9 after the refund was made."""
    failed = failing(retail, "refund-socks", _final(oracles["refund-socks"], reply))
    assert failed == ([] if told else ["p9-reply-tells-what-was-done"])


def test_an_intention_not_to_make_another_change_is_no_denial(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """The beanie was cancelled; the customer declined cancelling the hoodie too."""
    events = oracles["cancel-one-item"]
    reply = "The beanie is cancelled. As you asked, I won't cancel it."
    assert failing(retail, "cancel-one-item", _final(events, reply)) == []
    reply = "The beanie is cancelled. I won't be able to cancel it, sorry."
    assert failing(retail, "cancel-one-item", _final(events, reply)) == ["p9-reply-does-not-deny"]
