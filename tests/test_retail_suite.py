"""The retail example's tools and outcome checks: what they leave for the grader to see."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.tools import ToolContext, load_module, load_tools

from .conftest import EXAMPLES

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
