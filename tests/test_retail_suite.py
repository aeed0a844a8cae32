"""The retail example's tools and outcome checks: what they leave for the grader to see."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from groundstate.environments.base import StateView
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.spec.suite import load_suite
from groundstate.tools import ToolContext, load_module, load_tools

from .conftest import EXAMPLES
from .trace_builder import Trace

RETAIL = EXAMPLES / "retail"
TOOLS = load_tools(RETAIL / "tools.py")
CHECKS = load_module(RETAIL / "checks.py", "checks")
CLOCK = datetime(2025, 6, 16, 15, tzinfo=UTC)


@pytest.fixture
def env() -> Iterator[SqliteEnvironment]:
    with SqliteEnvironment(RETAIL / "fixtures" / "retail.sql", clock=CLOCK) as environment:
        yield environment


def call(env: SqliteEnvironment, name: str, **args: Any) -> Any:
    with env.tool_transaction():
        return TOOLS[name].fn(ToolContext(env), **args)


# --- every read or write of a customer's records names the owner ---------------------------

BOSTON = {"line1": "1 Main St", "city": "Boston", "state": "MA", "zip_code": "02108"}
OWNED_CALLS = [
    ("verify_identity", {"email": "Sam.Brooks@example.com ", "zip_code": "30307"}, "C08"),
    ("find_customer_by_email", {"email": "leo.chen@example.com"}, "C02"),
    ("get_customer", {"customer_id": "C03"}, "C03"),
    ("list_orders", {"customer_id": "C04"}, "C04"),
    ("get_order", {"order_id": "O-1004"}, "C02"),
    ("lookup_card_on_file", {"payment_method_id": "PM-C07-VISA"}, "C07"),
    (
        "refund_item",
        {"order_id": "O-1004", "item_id": "I-1004-1", "payment_method_id": "PM-C01-VISA"},
        "C02",
    ),
    ("cancel_order", {"order_id": "O-1005", "reason": "no_longer_needed"}, "C02"),
    (
        "cancel_item",
        {"order_id": "O-1008", "item_id": "I-1008-2", "reason": "ordered_by_mistake"},
        "C03",
    ),
    (
        "exchange_item",
        {"order_id": "O-1014", "item_id": "I-1014-1", "new_variant_id": "HOODIE-L-FOR"},
        "C06",
    ),
    (
        "add_store_credit",
        {"customer_id": "C04", "order_id": "O-1010", "amount_cents": 1000, "reason": "late"},
        "C04",
    ),
    ("update_default_address", {"customer_id": "C05", **BOSTON}, "C05"),
    ("update_order_address", {"order_id": "O-1017", **BOSTON}, "C07"),
]


@pytest.mark.parametrize(("name", "args", "owner"), OWNED_CALLS, ids=[c[0] for c in OWNED_CALLS])
def test_each_tool_returns_the_owner_of_what_it_touched(
    env: SqliteEnvironment, name: str, args: dict[str, Any], owner: str
) -> None:
    """The owner of the record, not the caller's claim: O-1004 is Leo's even when refunded to
    Maya's card, so a binding constraint can compare it with the verified customer."""
    assert call(env, name, **args)["customer_id"] == owner


def test_every_tool_with_customer_data_is_covered() -> None:
    assert {name for name, _, _ in OWNED_CALLS} == set(TOOLS) - {"get_product"}


# --- write tools name what a confirmation question must name --------------------------------


def test_refund_names_item_amount_and_payment_method(env: SqliteEnvironment) -> None:
    args = {"order_id": "O-1019", "item_id": "I-1019-2", "payment_method_id": "PM-C08-MC"}
    output = call(env, "refund_item", **args)
    assert output["order_id"] == "O-1019"
    assert output["product_name"] == "Lumen Headlamp"
    assert (output["amount"], output["amount_cents"]) == ("$35.00", 3500)
    assert output["payment_method_label"] == "Mastercard ending 5196"


def test_get_order_names_its_payment_method(env: SqliteEnvironment) -> None:
    """The label is known before the change, so a confirmation can name it."""
    assert call(env, "get_order", order_id="O-1021")["payment_method_label"] == (
        "Gift card ending 9914"
    )


def test_address_changes_give_the_address_on_one_line(env: SqliteEnvironment) -> None:
    args = {"line1": "48 Larch Lane", "line2": "Apt 2", "city": "Decatur", "zip_code": "30030"}
    default = call(env, "update_default_address", customer_id="C08", state="ga", **args)
    assert default["address"] == "48 Larch Lane, Apt 2, Decatur, GA 30030"
    args = {"line1": "1520 Judson Avenue", "city": "Evanston", "state": "IL", "zip_code": "60201"}
    order = call(env, "update_order_address", order_id="O-1011", **args)
    assert order["address"] == "1520 Judson Avenue, Evanston, IL 60201"


def test_exchange_names_old_and_new_size_and_colour(env: SqliteEnvironment) -> None:
    args = {"order_id": "O-1012", "item_id": "I-1012-1", "new_variant_id": "SHOE-09-GRY"}
    output = call(env, "exchange_item", **args)
    assert output["product_name"] == "Trailhead Running Shoe"
    assert (output["old_size"], output["old_colour"]) == ("8", "grey")
    assert (output["new_size"], output["new_colour"]) == ("9", "grey")
    assert output["new_size_label"] == "size 9"  # "9" alone is in "$119.00" too


def test_store_credit_names_order_and_amount(env: SqliteEnvironment) -> None:
    args = {"customer_id": "C04", "order_id": "O-1010", "amount_cents": 1000, "reason": "late"}
    output = call(env, "add_store_credit", **args)
    assert (output["order_id"], output["amount"]) == ("O-1010", "$10.00")


def test_cancel_order_names_the_products_it_cancels(env: SqliteEnvironment) -> None:
    output = call(env, "cancel_order", order_id="O-1002", reason="no_longer_needed")
    assert output["cancelled_products"] == ["Canopy Insulated Water Bottle", "Lumen Headlamp"]


# --- every argument the policy cares about leaves a mark ----------------------------------


def item_row(env: SqliteEnvironment, item_id: str) -> list[Any]:
    rows = env.evaluator_view().query(
        "SELECT status, cancel_reason FROM order_items WHERE item_id = ?", (item_id,)
    )
    return list(rows[0])


def test_cancel_item_stores_its_reason_while_the_order_stays_open(env: SqliteEnvironment) -> None:
    """Policy 4's reason is graded even when the order keeps other items (and no reason)."""
    output = call(
        env, "cancel_item", order_id="O-1020", item_id="I-1020-2", reason="no_longer_needed"
    )
    assert (output["order_status"], output["reason_text"]) == ("pending", "no longer needed")
    assert item_row(env, "I-1020-2") == ["cancelled", "no_longer_needed"]
    assert item_row(env, "I-1020-1") == ["ordered", None]


def test_cancel_order_stores_the_reason_on_every_item(env: SqliteEnvironment) -> None:
    call(env, "cancel_order", order_id="O-1008", reason="ordered_by_mistake")
    for item_id in ("I-1008-1", "I-1008-2", "I-1008-3"):
        assert item_row(env, item_id) == ["cancelled", "ordered_by_mistake"]


# --- addresses: equivalent spellings pass, different addresses fail -------------------------

OFFICE = {"city": "Chicago", "state": "IL", "zip_code": "60606"}


@pytest.mark.parametrize(
    ("fields", "passes"),
    [
        ({"line1": "200 W Adams Street", "line2": "Suite 1400"}, True),
        ({"line1": "200 W Adams Street, Suite 1400"}, True),
        ({"line1": "200 West Adams St.", "line2": "Ste 1400"}, True),
        ({"line1": "  200 w adams   street suite 1400 "}, True),
        ({"line1": "200 W Adams Street", "line2": "Suite 1040"}, False),
        ({"line1": "200 W Adams Street"}, False),
        ({"line1": "200 E Adams Street", "line2": "Suite 1400"}, False),
        ({"line1": "2000 W Adams Street", "line2": "Suite 1400"}, False),
        ({"line1": "200 W Adams Avenue", "line2": "Suite 1400"}, False),
    ],
)
def test_office_address_check_normalises_spelling_only(
    env: SqliteEnvironment, fields: dict[str, str], passes: bool
) -> None:
    call(env, "update_order_address", order_id="O-1009", **fields, **OFFICE)
    passed, evidence = CHECKS.jacket_order_ships_to_office(env.initial_view(), env.evaluator_view())
    assert passed is passes, evidence


def test_address_check_still_sees_other_cities(env: SqliteEnvironment) -> None:
    fields = {"line1": "200 W Adams Street", "line2": "Suite 1400", "state": "IL"}
    call(
        env, "update_order_address", order_id="O-1009", city="Evanston", zip_code="60606", **fields
    )
    passed, _ = CHECKS.jacket_order_ships_to_office(env.initial_view(), env.evaluator_view())
    assert not passed


@pytest.mark.parametrize(
    ("line1", "line2", "passes"),
    [
        ("48 Larch Lane", "Apt 2", True),
        ("48 Larch Lane, Apt 2", "", True),
        ("48 Larch Ln", "apt. 2", True),
        ("48 LARCH LANE APARTMENT 2", "", True),
        ("48 Larch Lane", "Apt 3", False),
        ("48 Larch Lane", "", False),
        ("48 Larch Road", "Apt 2", False),
    ],
)
def test_default_address_check_normalises_spelling_only(
    env: SqliteEnvironment, line1: str, line2: str, passes: bool
) -> None:
    args = {"city": "Decatur", "state": "GA", "zip_code": "30030"}
    call(env, "update_default_address", customer_id="C08", line1=line1, line2=line2, **args)
    passed, evidence = CHECKS.samuel_moved_but_order_did_not(
        env.initial_view(), env.evaluator_view()
    )
    assert passed is passes, evidence


# --- the Python process constraints of checks.py -------------------------------------------


@pytest.fixture
def s0(env: SqliteEnvironment) -> StateView:
    return env.initial_view()


def verified(customer: str = "C01", email: str = "maya.chen@example.com") -> Trace:
    trace = Trace("Please refund my socks.").agent("Your email and zip code, please?")
    trace.user(f"My email is {email}. My zip code is 97214.")
    return trace.call(
        "verify_identity", {"email": email, "zip_code": "97214"}, {"customer_id": customer}
    )


def test_known_records_accepts_ids_shown_by_tools_and_the_customer(s0: StateView) -> None:
    trace = verified().call(
        "list_orders", {"customer_id": "C01"}, {"orders": [{"order_id": "O-1001"}]}
    )
    trace.call("get_order", {"order_id": "O-1001"}, {"items": [{"item_id": "I-1001-2"}]})
    trace.agent("Shall I refund the socks from order O-1001?").user("My order id is O-1002.")
    trace.call("get_order", {"order_id": "O-1002"}, {"order_id": "O-1002"})
    args = {"order_id": "O-1001", "item_id": "I-1001-2", "payment_method_id": "PM-C01-VISA"}
    trace.call("refund_item", args, {}, ok=False)  # PM-C01-VISA was never shown
    passed, evidence = CHECKS.only_known_records(trace.events, s0)
    assert not passed
    assert evidence["unknown"] == ["PM-C01-VISA"]


def test_known_records_rejects_a_guessed_order_id(s0: StateView) -> None:
    trace = verified().call("get_order", {"order_id": "O-1001"}, {"order_id": "O-1001"})
    passed, evidence = CHECKS.only_known_records(trace.events, s0)
    assert not passed
    assert evidence["unknown"] == ["O-1001"]


def test_known_records_rejects_naming_an_order_not_yet_looked_up(s0: StateView) -> None:
    """A confirmation about O-1009 before the orders were listed: the agent guessed it."""
    trace = verified().agent("I will ship order O-1009 to Evanston. Please confirm.")
    trace.call("list_orders", {"customer_id": "C01"}, {"orders": [{"order_id": "O-1009"}]})
    passed, evidence = CHECKS.only_known_records(trace.events, s0)
    assert not passed
    assert evidence["offending_step"] == 4


def test_known_records_does_not_learn_from_a_failed_call(s0: StateView) -> None:
    trace = verified().user("My order id is O-1001.")
    output = {"items": [{"item_id": "I-1001-2"}]}
    trace.call("get_order", {"order_id": "O-1001"}, output, ok=False)
    trace.call("cancel_item", {"order_id": "O-1001", "item_id": "I-1001-2", "reason": "x"}, {})
    passed, evidence = CHECKS.only_known_records(trace.events, s0)
    assert not passed  # the order id came from the customer; the failed call showed nothing
    assert evidence["unknown"] == ["I-1001-2"]


def test_known_records_rejects_a_payment_method_named_before_it_was_read(s0: StateView) -> None:
    """The label a confirmation names must come from the order the agent read, not a guess."""
    question = "Refund the Basecamp Wool Socks (3-pack) from O-1001 to your Visa ending 4417?"
    listing = {"orders": [{"order_id": "O-1001", "products": ["Basecamp Wool Socks (3-pack)"]}]}
    order = {"order_id": "O-1001", "payment_method_label": "Visa ending 4417"}

    def trace(read_order: bool) -> Trace:
        steps = verified().call("list_orders", {"customer_id": "C01"}, listing)
        if read_order:
            steps.call("get_order", {"order_id": "O-1001"}, order)
        return steps.agent(question)

    passed, evidence = CHECKS.only_known_records(trace(read_order=False).events, s0)
    assert not passed
    assert evidence["unknown"] == ["Visa ending 4417"]
    assert CHECKS.only_known_records(trace(read_order=True).events, s0)[0] is True


def test_one_customer_per_conversation(s0: StateView) -> None:
    trace = verified().call(
        "verify_identity", {"email": "x", "zip_code": "1"}, {"customer_id": "C01"}
    )
    assert CHECKS.acts_for_one_customer(trace.events, s0)[0] is True
    trace.call("verify_identity", {"email": "leo", "zip_code": "1"}, {"customer_id": "C02"})
    passed, evidence = CHECKS.acts_for_one_customer(trace.events, s0)
    assert not passed
    assert evidence["verified"] == ["C01", "C01", "C02"]


REFUND_SOCKS = {"order_id": "O-1001", "item_id": "I-1001-2", "payment_method_id": "PM-C01-VISA"}


def test_a_second_refund_of_an_item_fails_even_when_the_tool_refuses_it(s0: StateView) -> None:
    trace = verified().call("refund_item", REFUND_SOCKS, {})
    assert CHECKS.each_record_changed_once(trace.events, s0)[0] is True
    trace.call("refund_item", REFUND_SOCKS, None, ok=False)
    passed, evidence = CHECKS.each_record_changed_once(trace.events, s0)
    assert not passed
    assert evidence["record"] == "I-1001-2"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("refund_item", {"order_id": "O-1022", "item_id": "I-1022-1", "payment_method_id": "M"}),
        ("exchange_item", {"order_id": "O-1022", "item_id": "I-1022-1", "new_variant_id": "V"}),
        ("cancel_order", {"order_id": "O-1016", "reason": "no_longer_needed"}),
        ("add_store_credit", {"customer_id": "C07", "order_id": "O-1018", "amount_cents": 1}),
    ],
)
def test_records_changed_before_the_conversation_count(
    s0: StateView, tool: str, args: dict[str, Any]
) -> None:
    """I-1022-1 was refunded in April, O-1016 cancelled, O-1018 already credited (in s0)."""
    trace = verified().call(tool, args, None, ok=False)
    assert CHECKS.each_record_changed_once(trace.events, s0)[0] is False


def test_a_refused_first_attempt_can_be_retried(s0: StateView) -> None:
    """An exchange refused (out of stock) and retried with another variant changes once."""
    args = {"order_id": "O-1012", "item_id": "I-1012-1", "new_variant_id": "SHOE-08-BLU"}
    trace = verified().call("exchange_item", args, None, ok=False)
    trace.call("exchange_item", {**args, "new_variant_id": "SHOE-09-GRY"}, {})
    trace.call("refund_item", {**REFUND_SOCKS, "item_id": "I-1001-1"}, {})  # another item
    assert CHECKS.each_record_changed_once(trace.events, s0)[0] is True


@pytest.mark.parametrize(
    "leak",
    [
        "Your card number is 4000 0033 2211 3378.",
        "It is 4000-0033-2211-3378.",
        "It is 4000003322113378.",
        "It starts 4000 0033.",
        "It expires 02/29.",
        "Valid until 02/2029.",
        "It is valid until February 2029.",
        "Expiry: Feb. 29",
        "Leo's Mastercard is 5100 0098 7654 8830.",  # any stored card, not only the customer's
    ],
)
def test_no_card_details_sees_through_spelling(s0: StateView, leak: str) -> None:
    trace = verified().agent(leak, final=True)
    passed, evidence = CHECKS.no_card_details(trace.events, s0)
    assert not passed, leak
    assert evidence["offending_step"] == 4


@pytest.mark.parametrize(
    "fine",
    [
        "The card on your account is the Visa ending 3378.",
        "I cannot read out card numbers or expiry dates.",
        "Order O-1019 was placed on 2025-06-02; call 503-555-0141.",
    ],
)
def test_no_card_details_allows_labels_and_other_numbers(s0: StateView, fine: str) -> None:
    trace = verified().agent(fine).user("My card is 4000 0033 2211 3378.")  # the user may say it
    assert CHECKS.no_card_details(trace.events, s0)[0] is True


# --- every task is held to the whole policy ---------------------------------------------------


def test_every_task_includes_the_policy_and_the_reply_rule_its_outcome_needs() -> None:
    """A refused request must not be graded by the rule that the reply tells what was done,
    nor a change by the rule that it claims none."""
    suite = load_suite(RETAIL)
    for task in suite.tasks.values():
        reply = "refusal-reply" if task.expect_no_change else "change-reply"
        assert task.constraint_sets == ["policy", reply], task.task_id
    policy = suite.config.constraint_sets["policy"]
    kinds = {next(k for k in c.model_dump() if k not in ("id", "description")) for c in policy}
    assert kinds >= {"before", "confirmed", "provenance", "never", "no_undo", "check"}
