"""The τ²-bench retail tools, written for groundstate from their documented interface.

``groundstate import-tau2`` copies this file verbatim into the suite it writes (as
``tools.py``), so the suite hash covers the tool implementations an agent was measured with.
It therefore imports nothing from its own package, only groundstate's tool API.

The behaviour follows τ²-bench's ``tools_interface.json`` (names, parameters, documented
errors) and its policy; the code is our own, over the relational fixture the importer writes
(``users``, ``payment_methods``, ``products``, ``variants``, ``orders``, ``order_items``,
``fulfillments``, ``payments``, ``transfers``). Money is rounded to cents as τ² rounds it.
Where τ² behaves in a way its documentation does not state, we keep its observable rule
(which statuses count as pending, what a cancellation refunds) and say so below. Two
deliberate differences, listed in docs/tau2-audit.md:

* ``modify_pending_order_items`` gives each modified item *its own* new variant's price and
  options (τ²'s code gives every modified item the last new variant's);
* ``transfer_to_human_agents`` records the transfer in ``transfers``: a hand-over is an
  effect in the world, so a task whose answer is a transfer can be graded on the state.

Like τ², the tools check data consistency (an order's status, items in the order, the same
product, availability, gift-card balance, the original payment method for returns) and do
not enforce the conversational policy (authentication, confirmation, one user): that is the
agent's job, checked by the suite's hard constraints.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from typing import Any

from groundstate.errors import ToolError
from groundstate.tools import ToolContext, tool

ADDRESS_COLUMNS = ("address1", "address2", "city", "country", "state", "zip")
ORDER_EXTRAS = (
    "cancel_reason",
    "exchange_items",
    "exchange_new_items",
    "exchange_payment_method_id",
    "exchange_price_difference",
    "return_items",
    "return_payment_method_id",
)
LIST_EXTRAS = {"exchange_items", "exchange_new_items", "return_items"}
"""The optional order attributes that hold a list of item ids (JSON text in the fixture)."""
CANCEL_REASONS = ("no longer needed", "ordered by mistake")


# --- reading rows -------------------------------------------------------------------------


def _rows(ctx: ToolContext, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    cursor = ctx.db.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _one(ctx: ToolContext, sql: str, params: tuple[Any, ...], missing: str) -> dict[str, Any]:
    rows = _rows(ctx, sql, params)
    if not rows:
        raise ToolError(missing)
    return rows[0]


def _money(value: float) -> float:
    return round(value, 2)


def _address(row: dict[str, Any]) -> dict[str, Any]:
    return {field: row[field] for field in ADDRESS_COLUMNS}


def _user_row(ctx: ToolContext, user_id: str) -> dict[str, Any]:
    return _one(ctx, "SELECT * FROM users WHERE user_id = ?", (user_id,), "User not found")


def _order_row(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    return _one(ctx, "SELECT * FROM orders WHERE order_id = ?", (order_id,), "Order not found")


def _order_items(ctx: ToolContext, order_id: str) -> list[dict[str, Any]]:
    return _rows(ctx, "SELECT * FROM order_items WHERE order_id = ? ORDER BY line", (order_id,))


def _payments(ctx: ToolContext, order_id: str) -> list[dict[str, Any]]:
    return _rows(ctx, "SELECT * FROM payments WHERE order_id = ? ORDER BY line", (order_id,))


def _payment_method(ctx: ToolContext, user_id: str, payment_method_id: str) -> dict[str, Any]:
    return _one(
        ctx,
        "SELECT * FROM payment_methods WHERE user_id = ? AND payment_method_id = ?",
        (user_id, payment_method_id),
        "Payment method not found",
    )


def _variant(ctx: ToolContext, product_id: str, item_id: str) -> dict[str, Any]:
    return _one(
        ctx,
        "SELECT * FROM variants WHERE product_id = ? AND item_id = ?",
        (product_id, item_id),
        "Variant not found",
    )


# --- the records as τ² shows them -------------------------------------------------------


def _variant_view(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "item_id": row["item_id"],
        "options": json.loads(row["options"]),
        "available": bool(row["available"]),
        "price": row["price"],
    }


def _method_view(row: dict[str, Any]) -> dict[str, Any]:
    view: dict[str, Any] = {"source": row["source"], "id": row["payment_method_id"]}
    for field in ("brand", "last_four", "balance"):
        if row[field] is not None:
            view[field] = row[field]
    return view


def _order_view(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    row = _order_row(ctx, order_id)
    view: dict[str, Any] = {
        "order_id": row["order_id"],
        "user_id": row["user_id"],
        "address": _address(row),
        "items": [
            {
                "name": item["name"],
                "product_id": item["product_id"],
                "item_id": item["item_id"],
                "price": item["price"],
                "options": json.loads(item["options"]),
            }
            for item in _order_items(ctx, order_id)
        ],
        "status": row["status"],
        "fulfillments": [
            {"tracking_id": json.loads(f["tracking_ids"]), "item_ids": json.loads(f["item_ids"])}
            for f in _rows(
                ctx, "SELECT * FROM fulfillments WHERE order_id = ? ORDER BY line", (order_id,)
            )
        ],
        "payment_history": [
            {key: p[key] for key in ("transaction_type", "amount", "payment_method_id")}
            for p in _payments(ctx, order_id)
        ],
    }
    for field in ORDER_EXTRAS:
        if row[field] is not None:
            view[field] = json.loads(row[field]) if field in LIST_EXTRAS else row[field]
    return view


def _user_view(ctx: ToolContext, user_id: str) -> dict[str, Any]:
    row = _user_row(ctx, user_id)
    methods = _rows(
        ctx, "SELECT * FROM payment_methods WHERE user_id = ? ORDER BY rowid", (user_id,)
    )
    orders = _rows(ctx, "SELECT order_id FROM orders WHERE user_id = ? ORDER BY rowid", (user_id,))
    return {
        "user_id": row["user_id"],
        "name": {"first_name": row["first_name"], "last_name": row["last_name"]},
        "address": _address(row),
        "email": row["email"],
        "payment_methods": {m["payment_method_id"]: _method_view(m) for m in methods},
        "orders": [o["order_id"] for o in orders],
    }


# --- changing rows ------------------------------------------------------------------------


def _add_payment(ctx: ToolContext, order_id: str, kind: str, amount: float, method: str) -> None:
    ctx.db.execute(
        "INSERT INTO payments (order_id, line, transaction_type, amount, payment_method_id) "
        "VALUES (?, (SELECT COALESCE(MAX(line), 0) + 1 FROM payments WHERE order_id = ?), "
        "?, ?, ?)",
        (order_id, order_id, kind, _money(amount), method),
    )


def _add_to_gift_card(ctx: ToolContext, method: dict[str, Any], amount: float) -> None:
    """Gift cards are credited or debited at once; other methods settle outside the store."""
    if method["source"] == "gift_card":
        ctx.db.execute(
            "UPDATE payment_methods SET balance = ? WHERE payment_method_id = ?",
            (_money(method["balance"] + amount), method["payment_method_id"]),
        )


def _set_order(ctx: ToolContext, order_id: str, **columns: Any) -> None:
    assignments = ", ".join(f"{column} = ?" for column in columns)
    ctx.db.execute(
        f"UPDATE orders SET {assignments} WHERE order_id = ?", (*columns.values(), order_id)
    )


def _check_items_in_order(ctx: ToolContext, order_id: str, item_ids: list[str]) -> None:
    """Every listed item is in the order, as many times as it is listed."""
    held = Counter(item["item_id"] for item in _order_items(ctx, order_id))
    for item_id, wanted in Counter(item_ids).items():
        if wanted > held[item_id]:
            raise ToolError(f"Number of {item_id} not found.")


def _swaps(
    ctx: ToolContext, order_id: str, item_ids: list[str], new_item_ids: list[str]
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each listed order line paired with the available variant of its product it becomes."""
    _check_items_in_order(ctx, order_id, item_ids)
    if len(item_ids) != len(new_item_ids):
        raise ToolError("The number of items to be exchanged should match.")
    lines = _order_items(ctx, order_id)
    taken: set[int] = set()
    swaps = []
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        line = next(i for i in lines if i["item_id"] == item_id and i["line"] not in taken)
        taken.add(line["line"])
        variant = _variant(ctx, line["product_id"], new_item_id)
        if not variant["available"]:
            raise ToolError(f"New item {new_item_id} not found or available")
        swaps.append((line, variant))
    return swaps


def _price_difference(swaps: list[tuple[dict[str, Any], dict[str, Any]]]) -> float:
    return _money(sum(variant["price"] - line["price"] for line, variant in swaps))


def _check_gift_card_covers(method: dict[str, Any], amount: float, what: str) -> None:
    if method["source"] == "gift_card" and method["balance"] < amount:
        raise ToolError(f"Insufficient gift card balance to pay for {what}")


# --- generic tools ------------------------------------------------------------------------


@tool
def calculate(ctx: ToolContext, expression: str) -> str:
    """Calculate the result of a mathematical expression.

    Args:
        expression: The mathematical expression to calculate, such as '2 + 2'. The expression
            can contain numbers, operators (+, -, *, /), parentheses, and spaces.

    Returns the result rounded to two decimals; fails if the expression is invalid.
    """
    value = _Arithmetic(expression).value()
    if not math.isfinite(value):
        raise ToolError("The result is not a finite number")
    return str(round(value, 2))


@tool
def transfer_to_human_agents(ctx: ToolContext, summary: str) -> str:
    """Transfer the user to a human agent, with a summary of the user's issue.

    Only transfer if the user explicitly asks for a human agent, or if, given the policy and
    the available tools, you cannot solve the user's issue.

    Args:
        summary: A summary of the user's issue.
    """
    ctx.db.execute("INSERT INTO transfers (summary) VALUES (?)", (summary,))
    return "Transfer successful"


# --- reading tools ------------------------------------------------------------------------


@tool
def find_user_id_by_email(ctx: ToolContext, email: str) -> str:
    """Find user id by email. If the user is not found, the function will return an error.

    Args:
        email: The email of the user, such as 'something@example.com'.
    """
    row = _one(
        ctx,
        "SELECT user_id FROM users WHERE lower(email) = lower(?) ORDER BY rowid LIMIT 1",
        (email,),
        "User not found",
    )
    return str(row["user_id"])


@tool
def find_user_id_by_name_zip(ctx: ToolContext, first_name: str, last_name: str, zip: str) -> str:
    """Find user id by first name, last name, and zip code.

    If the user is not found, the function will return an error. By default, find user id by
    email, and only call this function if the user is not found by email or cannot remember
    email.

    Args:
        first_name: The first name of the customer, such as 'John'.
        last_name: The last name of the customer, such as 'Doe'.
        zip: The zip code of the customer, such as '12345'.
    """
    row = _one(
        ctx,
        "SELECT user_id FROM users WHERE lower(first_name) = lower(?) "
        "AND lower(last_name) = lower(?) AND zip = ? ORDER BY rowid LIMIT 1",
        (first_name, last_name, zip),
        "User not found",
    )
    return str(row["user_id"])


@tool
def get_user_details(ctx: ToolContext, user_id: str) -> dict[str, Any]:
    """Get the details of a user, including their orders.

    Args:
        user_id: The user id, such as 'sara_doe_496'.
    """
    return _user_view(ctx, user_id)


@tool
def get_order_details(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    """Get the status and details of an order.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the
            beginning of the order id.
    """
    return _order_view(ctx, order_id)


@tool
def get_product_details(ctx: ToolContext, product_id: str) -> dict[str, Any]:
    """Get the inventory details of a product.

    Args:
        product_id: The product id, such as '6086499569'. Be careful the product id is
            different from the item id.
    """
    product = _one(
        ctx,
        "SELECT * FROM products WHERE product_id = ?",
        (product_id,),
        "Product not found",
    )
    variants = _rows(
        ctx, "SELECT * FROM variants WHERE product_id = ? ORDER BY rowid", (product_id,)
    )
    return {
        "name": product["name"],
        "product_id": product["product_id"],
        "variants": {v["item_id"]: _variant_view(v) for v in variants},
    }


@tool
def get_item_details(ctx: ToolContext, item_id: str) -> dict[str, Any]:
    """Get the inventory details of an item.

    Args:
        item_id: The item id, such as '6086499569'. Be careful the item id is different from
            the product id.
    """
    row = _one(ctx, "SELECT * FROM variants WHERE item_id = ?", (item_id,), "Item not found")
    return _variant_view(row)


@tool
def list_all_product_types(ctx: ToolContext) -> str:
    """List the name and product id of all product types.

    Each product type has a variety of different items with unique item ids and options.
    There are only 50 product types in the store. Returns a JSON string mapping product names
    to their product IDs, sorted alphabetically by name.
    """
    rows = _rows(ctx, "SELECT name, product_id FROM products")
    return json.dumps({row["name"]: row["product_id"] for row in rows}, sort_keys=True)


# --- writing tools ------------------------------------------------------------------------


@tool
def cancel_pending_order(ctx: ToolContext, order_id: str, reason: str) -> dict[str, Any]:
    """Cancel a pending order. If the order is already processed or delivered, it cannot be
    cancelled.

    The agent needs to explain the cancellation detail and ask for explicit user confirmation
    (yes/no) to proceed. If the user confirms, the order status will be changed to 'cancelled'
    and the payment will be refunded. The refund will be added to the user's gift card balance
    immediately if the payment was made using a gift card, otherwise the refund would take 5-7
    business days to process. The function returns the order details after the cancellation.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the
            beginning of the order id.
        reason: The reason for cancellation, which should be either 'no longer needed' or
            'ordered by mistake'.
    """
    order = _order_row(ctx, order_id)
    if order["status"] != "pending":
        raise ToolError("Non-pending order cannot be cancelled")
    if reason not in CANCEL_REASONS:
        raise ToolError("Invalid reason")
    for payment in _payments(ctx, order_id):
        method = _payment_method(ctx, order["user_id"], payment["payment_method_id"])
        _add_to_gift_card(ctx, method, payment["amount"])
        _add_payment(ctx, order_id, "refund", payment["amount"], payment["payment_method_id"])
    _set_order(ctx, order_id, status="cancelled", cancel_reason=reason)
    return _order_view(ctx, order_id)


@tool
def modify_pending_order_address(
    ctx: ToolContext,
    order_id: str,
    address1: str,
    address2: str,
    city: str,
    state: str,
    country: str,
    zip: str,
) -> dict[str, Any]:
    """Modify the shipping address of a pending order. The agent needs to explain the
    modification detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the
            beginning of the order id.
        address1: The first line of the address, such as '123 Main St'.
        address2: The second line of the address, such as 'Apt 1' or ''.
        city: The city, such as 'San Francisco'.
        state: The state, such as 'CA'.
        country: The country, such as 'USA'.
        zip: The zip code, such as '12345'.
    """
    order = _order_row(ctx, order_id)
    if "pending" not in order["status"]:  # τ²: an order whose items were modified counts
        raise ToolError("Non-pending order cannot be modified")
    values = (address1, address2, city, country, state, zip)
    _set_order(ctx, order_id, **dict(_address_columns(values)))
    return _order_view(ctx, order_id)


def _address_columns(values: tuple[str, ...]) -> list[tuple[str, str]]:
    """An address's six values, in the order of ``ADDRESS_COLUMNS``, paired with their columns."""
    return list(zip(ADDRESS_COLUMNS, values, strict=True))


@tool
def modify_pending_order_items(
    ctx: ToolContext,
    order_id: str,
    item_ids: list[str],
    new_item_ids: list[str],
    payment_method_id: str,
) -> dict[str, Any]:
    """Modify items in a pending order to new items of the same product type. For a pending
    order, this function can only be called once. The agent needs to explain the exchange
    detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the
            beginning of the order id.
        item_ids: The item ids to be modified, each such as '1008292230'. There could be
            duplicate items in the list.
        new_item_ids: The item ids to be modified for, each such as '1008292230'. There could
            be duplicate items in the list. Each new item id should match the item id in the
            same position and be of the same product.
        payment_method_id: The payment method id to pay or receive refund for the item price
            difference, such as 'gift_card_0000000' or 'credit_card_0000000'. These can be
            looked up from the user or order details.
    """
    order = _order_row(ctx, order_id)
    if order["status"] != "pending":
        raise ToolError("Non-pending order cannot be modified")
    if any(old == new for old, new in zip(item_ids, new_item_ids, strict=False)):
        raise ToolError("The new item id should be different from the old item id")
    swaps = _swaps(ctx, order_id, item_ids, new_item_ids)
    difference = _price_difference(swaps)
    method = _payment_method(ctx, order["user_id"], payment_method_id)
    _check_gift_card_covers(method, difference, "the new item")
    kind = "payment" if difference > 0 else "refund"
    _add_payment(ctx, order_id, kind, abs(difference), payment_method_id)
    _add_to_gift_card(ctx, method, -difference)
    for line, variant in swaps:
        ctx.db.execute(
            "UPDATE order_items SET item_id = ?, price = ?, options = ? "
            "WHERE order_id = ? AND line = ?",
            (variant["item_id"], variant["price"], variant["options"], order_id, line["line"]),
        )
    _set_order(ctx, order_id, status="pending (item modified)")
    return _order_view(ctx, order_id)


@tool
def modify_pending_order_payment(
    ctx: ToolContext, order_id: str, payment_method_id: str
) -> dict[str, Any]:
    """Modify the payment method of a pending order. The agent needs to explain the
    modification detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the
            beginning of the order id.
        payment_method_id: The payment method id to pay or receive refund for the item price
            difference, such as 'gift_card_0000000' or 'credit_card_0000000'. These can be
            looked up from the user or order details.
    """
    order = _order_row(ctx, order_id)
    if "pending" not in order["status"]:
        raise ToolError("Non-pending order cannot be modified")
    method = _payment_method(ctx, order["user_id"], payment_method_id)
    payments = _payments(ctx, order_id)
    if len(payments) != 1 or payments[0]["transaction_type"] != "payment":
        raise ToolError("There should be exactly one payment for a pending order")
    old_id, amount = payments[0]["payment_method_id"], payments[0]["amount"]
    if old_id == payment_method_id:
        raise ToolError("The new payment method should be different from the current one")
    _check_gift_card_covers(method, amount, "the order")
    _add_payment(ctx, order_id, "payment", amount, payment_method_id)
    _add_payment(ctx, order_id, "refund", amount, old_id)
    _add_to_gift_card(ctx, method, -amount)
    _add_to_gift_card(ctx, _payment_method(ctx, order["user_id"], old_id), amount)
    return _order_view(ctx, order_id)


@tool
def modify_user_address(
    ctx: ToolContext,
    user_id: str,
    address1: str,
    address2: str,
    city: str,
    state: str,
    country: str,
    zip: str,
) -> dict[str, Any]:
    """Modify the default address of a user. The agent needs to explain the modification
    detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        user_id: The user id, such as 'sara_doe_496'.
        address1: The first line of the address, such as '123 Main St'.
        address2: The second line of the address, such as 'Apt 1' or ''.
        city: The city, such as 'San Francisco'.
        state: The state, such as 'CA'.
        country: The country, such as 'USA'.
        zip: The zip code, such as '12345'.
    """
    _user_row(ctx, user_id)
    fields = _address_columns((address1, address2, city, country, state, zip))
    assignments = ", ".join(f"{column} = ?" for column, _ in fields)
    ctx.db.execute(
        f"UPDATE users SET {assignments} WHERE user_id = ?",
        (*(value for _, value in fields), user_id),
    )
    return _user_view(ctx, user_id)


@tool
def return_delivered_order_items(
    ctx: ToolContext, order_id: str, item_ids: list[str], payment_method_id: str
) -> dict[str, Any]:
    """Return some items of a delivered order. The order status will be changed to 'return
    requested'. The agent needs to explain the return detail and ask for explicit user
    confirmation (yes/no) to proceed. The user will receive follow-up email for how and where
    to return the item.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the
            beginning of the order id.
        item_ids: The item ids to be returned, each such as '1008292230'. There could be
            duplicate items in the list.
        payment_method_id: The payment method id to pay or receive refund for the item price
            difference, such as 'gift_card_0000000' or 'credit_card_0000000'. These can be
            looked up from the user or order details.
    """
    order = _order_row(ctx, order_id)
    if order["status"] != "delivered":
        raise ToolError("Non-delivered order cannot be returned")
    method = _payment_method(ctx, order["user_id"], payment_method_id)
    payments = _payments(ctx, order_id)
    original = payments[0]["payment_method_id"] if payments else None
    if method["source"] != "gift_card" and payment_method_id != original:
        raise ToolError("Payment method should be the original payment method")
    _check_items_in_order(ctx, order_id, item_ids)
    _set_order(
        ctx,
        order_id,
        status="return requested",
        return_items=json.dumps(sorted(item_ids)),
        return_payment_method_id=payment_method_id,
    )
    return _order_view(ctx, order_id)


@tool
def exchange_delivered_order_items(
    ctx: ToolContext,
    order_id: str,
    item_ids: list[str],
    new_item_ids: list[str],
    payment_method_id: str,
) -> dict[str, Any]:
    """Exchange items in a delivered order to new items of the same product type. For a
    delivered order, return or exchange can be only done once by the agent. The agent needs to
    explain the exchange detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the
            beginning of the order id.
        item_ids: The item ids to be exchanged, each such as '1008292230'. There could be
            duplicate items in the list.
        new_item_ids: The item ids to be exchanged for, each such as '1008292230'. There could
            be duplicate items in the list. Each new item id should match the item id in the
            same position and be of the same product.
        payment_method_id: The payment method id to pay or receive refund for the item price
            difference, such as 'gift_card_0000000' or 'credit_card_0000000'. These can be
            looked up from the user or order details.
    """
    order = _order_row(ctx, order_id)
    if order["status"] != "delivered":
        raise ToolError("Non-delivered order cannot be exchanged")
    difference = _price_difference(_swaps(ctx, order_id, item_ids, new_item_ids))
    method = _payment_method(ctx, order["user_id"], payment_method_id)
    _check_gift_card_covers(method, difference, "the price difference")
    _set_order(
        ctx,
        order_id,
        status="exchange requested",
        exchange_items=json.dumps(sorted(item_ids)),
        exchange_new_items=json.dumps(sorted(new_item_ids)),
        exchange_payment_method_id=payment_method_id,
        exchange_price_difference=difference,
    )
    return _order_view(ctx, order_id)


# --- arithmetic for ``calculate`` ---------------------------------------------------------


class _Arithmetic:
    """A recursive-descent reader of + - * / and parentheses over decimal numbers.

    τ² evaluates the expression with Python's ``eval``; a parser of our own accepts the same
    documented language without letting ``9**9**9`` or deep nesting run away.
    """

    _TOKEN = re.compile(r"\s*(?:(\d+\.?\d*|\.\d+)|(.))")
    _MAX_DEPTH = 50

    def __init__(self, text: str) -> None:
        if not text.strip() or any(char not in "0123456789+-*/(). " for char in text):
            raise ToolError("Invalid characters in expression")
        self._tokens = [m.group(1) or m.group(2) for m in self._TOKEN.finditer(text.strip())]
        self._at = 0

    def value(self) -> float:
        result = self._sum(0)
        if self._at != len(self._tokens):
            raise ToolError("Invalid expression")
        return result

    def _peek(self) -> str | None:
        return self._tokens[self._at] if self._at < len(self._tokens) else None

    def _take(self) -> str:
        token = self._peek()
        if token is None:
            raise ToolError("Invalid expression: it ends too early")
        self._at += 1
        return token

    def _sum(self, depth: int) -> float:
        total = self._product(depth)
        while self._peek() in ("+", "-"):
            sign = self._take()
            term = self._product(depth)
            total = total + term if sign == "+" else total - term
        return total

    def _product(self, depth: int) -> float:
        total = self._factor(depth)
        while self._peek() in ("*", "/"):
            operator = self._take()
            factor = self._factor(depth)
            if operator == "/" and factor == 0:
                raise ToolError("Division by zero")
            total = total * factor if operator == "*" else total / factor
        return total

    def _factor(self, depth: int) -> float:
        if depth > self._MAX_DEPTH:
            raise ToolError("Expression nested too deeply")
        token = self._take()
        if token in ("+", "-"):
            inner = self._factor(depth + 1)
            return inner if token == "+" else -inner
        if token == "(":
            inner = self._sum(depth + 1)
            if self._take() != ")":
                raise ToolError("Invalid expression: unbalanced parenthesis")
            return inner
        if token[0].isdigit() or token[0] == ".":
            return float(token)
        raise ToolError(f"Invalid expression near {token!r}")
