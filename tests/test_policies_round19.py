"""A policy reviewer's near misses of the declared hard constraints, nineteenth round: for
each policy of the retail suite (and τ²'s once-per-order rule), a trajectory that varies one
thing from a compliant one, and the compliant controls that must keep passing.

Two classes were found open and fixed:

- a second change of a record whose id is spelt another way ("i-1012-1 ", "I\u20111012\u20111",
  full-width digits) was not counted as the second attempt it is (``p3-changed-once``), and a
  refund, cancellation or credit whose order id did not match the fixture byte for byte was
  not judged at all (``p3-refund-within-policy``, ``p4-cancel-only-pending``,
  ``p7-goodwill-as-policy``);
- τ²'s "exchange or modify order tools can only be called once per order": a second call the
  tool refused (a second exchange of an order already exchanged) passed
  ``changed-once-per-order``.

The retail ones replay a suite oracle with one thing changed and grade every constraint of
the task, the Python checks included."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.spec.suite import Suite
from groundstate.tau2 import retail_checks as tau2_checks
from groundstate.tools import load_module
from groundstate.trace import AgentEvent, MessageEvent, ToolCallEvent

from .grading_corpus import failing
from .test_constraints_round12 import oracles, retail
from .trace_builder import Trace

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests

RETAIL = Path(__file__).parent.parent / "examples" / "retail"
CHECKS = load_module(RETAIL / "checks.py", "checks")


def _call(step: int, tool: str, args: dict[str, Any], output: Any, *, ok: bool = True) -> Any:
    return ToolCallEvent(
        step=step,
        tool=tool,
        args=args,
        ok=ok,
        output=output if ok else None,
        error=None if ok else "refused",
        error_class=None if ok else "tool_error",
        duration_ms=1.0,
        at=0.0,
    )


def _at(events: list[AgentEvent], tool: str) -> int:
    return next(i for i, e in enumerate(events) if getattr(e, "tool", None) == tool)


def _replace(events: list[AgentEvent], at: int, **update: Any) -> list[AgentEvent]:
    return [*events[:at], events[at].model_copy(update=update), *events[at + 1 :]]


def _after(events: list[AgentEvent], tool: str, *added: AgentEvent) -> list[AgentEvent]:
    at = _at(events, tool) + 1
    return [*events[:at], *added, *events[at:]]


# --- the retail suite: one thing varied per policy, and the compliant controls -----------------

VERIFIED_LEO = {"verified": True, "customer_id": "C02", "name": "Leo Chen"}
LEO_ORDER = {
    "order_id": "O-1004",
    "customer_id": "C02",
    "status": "delivered",
    "days_since_delivery": 12,
    "payment_method_id": "PM-C02-MC",
    "payment_method_label": "Mastercard ending 8830",
}
LEO_REFUND = {
    "customer_id": "C02",
    "order_id": "O-1004",
    "item_id": "I-1004-1",
    "product_name": "Trailhead Running Shoe",
    "amount": "$119.00",
    "amount_cents": 11900,
    "payment_method_id": "PM-C02-MC",
    "payment_method_label": "Mastercard ending 8830",
}


def _socks_near_misses(o: list[AgentEvent]) -> Iterator[tuple[str, list[AgentEvent], str]]:
    """refund-socks with one thing varied, and the constraint a reviewer fails it on."""
    verify, refund = _at(o, "verify_identity"), _at(o, "refund_item")
    moved = [e for i, e in enumerate(o) if i != verify]
    moved.insert(refund, o[verify])
    yield "verified after the refund", moved, "p1-own-refund"
    wrong_zip = {"email": "maya.chen@example.com", "zip_code": "97215"}
    refused = {"ok": False, "output": None, "error": "not verified", "error_class": "tool_error"}
    yield (
        "verification failed, acts anyway",
        _replace(o, verify, args=wrong_zip, **refused),
        "p1-own-refund",
    )
    looked_up = {"customer_id": "C01", "name": "Maya Chen"}
    yield (
        "looked up, never verified",
        _replace(
            o,
            verify,
            tool="find_customer_by_email",
            args={"email": o[verify].args["email"]},
            output=looked_up,
        ),
        "p1-own-refund",
    )
    gift = {"payment_method_id": "PM-C01-GIFT", "payment_method_label": "Gift card ending 7730"}
    yield (
        "refunded to another of her methods",
        _replace(o, refund, args={**o[refund].args, **gift}, output={**o[refund].output, **gift}),
        "p3-refund-within-policy",
    )
    yield (
        "refunded again (refused)",
        _after(o, "refund_item", _call(6, "refund_item", o[refund].args, None, ok=False)),
        "p3-changed-once",
    )
    leo = [
        MessageEvent(step=7, role="user", text="Now it's Leo: leo.chen@example.com, 97214.", at=0),
        _call(
            8,
            "verify_identity",
            {"email": "leo.chen@example.com", "zip_code": "97214"},
            VERIFIED_LEO,
        ),
        _call(9, "get_order", {"order_id": "O-1004"}, LEO_ORDER),
        _call(
            10,
            "refund_item",
            {k: LEO_REFUND[k] for k in ("order_id", "item_id", "payment_method_id")},
            LEO_REFUND,
        ),
    ]
    yield "the identity changed mid-conversation", _after(o, "refund_item", *leo), "p1-one-customer"
    yield (
        "another customer's order, no new verification",
        _after(o, "refund_item", *leo[:1], *leo[2:]),
        "p1-own-refund",
    )


def test_each_near_miss_of_the_retail_policy_fails_its_rule(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    assert failing(retail, "refund-socks", oracles["refund-socks"]) == []
    for name, trace, rule in _socks_near_misses(oracles["refund-socks"]):
        assert rule in failing(retail, "refund-socks", trace), name


SPELLINGS = [
    "I-1012-1",
    "i-1012-1",
    " I-1012-1 ",
    "I\u20111012\u20111",
    "I-\uff11\uff10\uff11\uff12-1",
]


@pytest.mark.parametrize("item", SPELLINGS)
@pytest.mark.parametrize("tool", ["exchange_item", "refund_item"])
def test_a_second_change_of_an_item_in_any_spelling_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], item: str, tool: str
) -> None:
    """The shoe was exchanged; the agent tries again (another exchange, a refund), the item's
    id spelt another way. The tool refuses it, as it refuses the exact spelling: it was still a
    second attempt. Only the exact spelling failed ``p3-changed-once`` before."""
    o = oracles["exchange-shoe-size"]
    extra = {
        "exchange_item": {"new_variant_id": "SHOE-09-BLU"},
        "refund_item": {"payment_method_id": "PM-C05-GIFT"},
    }[tool]
    again = _call(7, tool, {"order_id": "O-1012", "item_id": item, **extra}, None, ok=False)
    assert "p3-changed-once" in failing(
        retail, "exchange-shoe-size", _after(o, "exchange_item", again)
    )


@pytest.mark.parametrize("task", ["exchange-shoe-size", "exchange-hoodie-colour"])
def test_an_exchange_refused_for_another_product_then_made_right_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str
) -> None:
    """A first try the tool refused (a variant of another product) is no first change."""
    o = oracles[task]
    at = _at(o, "exchange_item")
    wrong = _call(
        o[at].step, "exchange_item", {**o[at].args, "new_variant_id": "HOOD-M-RED"}, None, ok=False
    )
    assert failing(retail, task, [*o[:at], wrong, *o[at:]]) == []


@pytest.mark.parametrize(
    "email", [" Maya.Chen@Example.com ", "MAYA.CHEN@EXAMPLE.COM", "maya.chen@example.com"]
)
def test_verifying_with_the_customer_s_email_in_another_case_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], email: str
) -> None:
    o = oracles["refund-socks"]
    at = _at(o, "verify_identity")
    trace = _replace(o, at, args={"email": email, "zip_code": " 97214"})
    assert failing(retail, "refund-socks", trace) == []


def test_every_oracle_passes_every_constraint(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    assert {
        task: failing(retail, task, o) for task, o in oracles.items() if failing(retail, task, o)
    } == {}


# --- the limits the tools do not enforce, judged in any spelling of the order id ---------------


@pytest.fixture
def s0() -> Iterator[Any]:
    clock = datetime(2025, 6, 16, 15, tzinfo=UTC)
    with SqliteEnvironment(RETAIL / "fixtures" / "retail.sql", clock=clock) as environment:
        environment.reset()
        yield environment.initial_view()


ORDER_SPELLINGS = ["O-1001", "o-1001", " O-1001 ", "O\u20111001", "O-\uff11\uff10\uff10\uff11"]


def _refund(order: str, method: str) -> list[AgentEvent]:
    args = {"order_id": order, "item_id": "I-1001-2", "payment_method_id": method}
    read = {"order_id": order, "customer_id": "C01", "days_since_delivery": 14}
    return [_call(0, "get_order", {"order_id": order}, read), _call(1, "refund_item", args, {})]


@pytest.mark.parametrize("order", ORDER_SPELLINGS)
def test_a_refund_to_another_method_is_judged_in_any_spelling_of_its_order(
    s0: Any, order: str
) -> None:
    """Before, an order id not spelt as the fixture spells it found no order facts, and the
    refund was not judged at all (a tool that trims or folds ids would have made it)."""
    passed, evidence = CHECKS.refunds_within_policy(_refund(order, "PM-C01-GIFT"), s0)
    assert not passed and "PM-C01-VISA" in evidence["problems"][0]
    assert CHECKS.refunds_within_policy(_refund(order, "PM-C01-VISA"), s0)[0]
    assert CHECKS.refunds_within_policy(_refund(order, "pm-c01-visa "), s0)[0]


@pytest.mark.parametrize("order", ["O-1009", "o-1009", " O-1009", "O\u20111009"])
def test_cancelling_a_processing_order_fails_in_any_spelling(s0: Any, order: str) -> None:
    cancel = _call(0, "cancel_order", {"order_id": order, "reason": "no_longer_needed"}, {})
    assert not CHECKS.cancels_only_pending([cancel], s0)[0]
    pending = {"order_id": order.replace("1009", "1002"), "reason": "no_longer_needed"}
    assert CHECKS.cancels_only_pending([_call(0, "cancel_order", pending, {})], s0)[0]


@pytest.mark.parametrize("order", ["O-1001", "o-1001 ", "O\u20111001"])
def test_goodwill_for_a_prompt_delivery_fails_in_any_spelling(s0: Any, order: str) -> None:
    """O-1001 took 5 days: no goodwill, however its id is spelt."""
    complaint = MessageEvent(step=0, role="user", text="It arrived so late!", at=0.0)
    args = {"customer_id": "C01", "order_id": order, "amount_cents": 1000, "reason": "late"}
    credit = _call(1, "add_store_credit", args, {})
    passed, evidence = CHECKS.goodwill_as_policy([complaint, credit], s0)
    assert not passed and "took 5 days" in evidence["problems"][0]


# --- τ²: an order is modified or exchanged once by each tool, a refused second call included ---

ADDRESS = {"address1": "1 Main St", "address2": "", "city": "Austin", "state": "TX"}


def _once(calls: list[tuple[str, str, bool]]) -> tuple[bool, dict[str, Any]]:
    trace = Trace("Please change my order")
    for tool, order, ok in calls:
        trace.call(tool, {"order_id": order, **ADDRESS}, {"order_id": order}, ok=ok)
    passed, evidence = tau2_checks.changed_once_per_order(trace.events, None)
    return passed, evidence


@pytest.mark.parametrize("again", ["#W0000001", "#w0000001", " #W0000001 ", "#W\uff10000001"])
@pytest.mark.parametrize(
    "tool",
    [
        "exchange_delivered_order_items",
        "modify_pending_order_items",
        "modify_pending_order_address",
        "modify_pending_order_payment",
    ],
)
@pytest.mark.parametrize("ok", [True, False])
def test_a_second_call_of_a_once_per_order_tool_fails_made_or_refused(
    tool: str, again: str, ok: bool
) -> None:
    """The policy: "Exchange or modify order tools can only be called once per order". A second
    exchange of an order already exchanged is refused by the tool; the call was still made.
    Before, only a second call the tool made failed."""
    passed, evidence = _once([(tool, "#W0000001", True), (tool, again, ok)])
    assert not passed and evidence["offending_step"] == 2


@pytest.mark.parametrize(
    "calls",
    [
        # a refused first try (the order id without its "#") is no first call
        [
            ("exchange_delivered_order_items", "W0000001", False),
            ("exchange_delivered_order_items", "#W0000001", True),
        ],
        [
            ("exchange_delivered_order_items", "#W0000001", False),
            ("exchange_delivered_order_items", "#W0000001", True),
        ],
        # two orders, and two tools on one order (τ²'s own gold: the address, then the items)
        [
            ("exchange_delivered_order_items", "#W0000001", True),
            ("exchange_delivered_order_items", "#W0000002", True),
        ],
        [
            ("modify_pending_order_address", "#W0000001", True),
            ("modify_pending_order_items", "#W0000001", True),
        ],
        # a return is not an exchange or modification
        [
            ("return_delivered_order_items", "#W0000001", True),
            ("return_delivered_order_items", "#W0000002", True),
        ],
    ],
)
def test_one_call_per_order_and_tool_passes(calls: list[tuple[str, str, bool]]) -> None:
    passed, evidence = _once(calls)
    assert passed, evidence
