"""Tools of the retail suite (Fernhill Outfitters customer service).

The tools keep the data consistent (unknown ids, items that are not in the order, a refund
of an item that was never delivered...) and refuse with :class:`ToolError` when it would not
be. They do **not** enforce the written policy (identity checks, refund window, original
payment method, confirmation, cancelling only pending orders...): following the policy is
the agent's job, and the tasks check it through their outcome assertions and hard process
constraints.

Every tool acts through ``ctx.db``; the harness wraps each call in a transaction, so the
tools never begin or commit. Dates come from ``ctx.now()``, the environment's clock.

Two rules keep the tasks gradable:

* every argument the policy cares about leaves a mark in the state (a cancellation stores its
  reason on each item, a refund its payment method, an exchange its variant, store credit its
  order), so the outcome assertions can see a wrong one;
* every tool that reads or changes a customer's order, item, profile or payment method
  returns the owning ``customer_id``, and every tool that changes something also returns the
  human-readable values a confirmation question names (order id, product name, amount as
  "$35.00", payment method label, address on one line, size and colour), so a constraint can
  tie the call to the verified customer and to what the customer agreed to.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from groundstate.errors import ToolError
from groundstate.tools import ToolContext, tool

CancelReason = Literal["no_longer_needed", "ordered_by_mistake"]

_ITEM_SELECT = """
    SELECT i.item_id, i.order_id, p.product_id, p.name AS product_name, i.variant_id,
           v.size, v.colour, i.price_cents, i.status, i.exchange_variant_id, i.cancel_reason
    FROM order_items i
    JOIN variants v ON v.variant_id = i.variant_id
    JOIN products p ON p.product_id = v.product_id
"""


# --- helpers (plain functions, not tools) -----------------------------------------------


def _rows(ctx: ToolContext, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    cursor = ctx.db.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _one(ctx: ToolContext, sql: str, params: tuple[Any, ...], missing: str) -> dict[str, Any]:
    rows = _rows(ctx, sql, params)
    if not rows:
        raise ToolError(missing)
    return rows[0]


def _customer(ctx: ToolContext, customer_id: str) -> dict[str, Any]:
    return _one(
        ctx,
        "SELECT * FROM customers WHERE customer_id = ?",
        (customer_id,),
        f"no customer with id {customer_id!r}",
    )


def _order(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    return _one(
        ctx, "SELECT * FROM orders WHERE order_id = ?", (order_id,), f"no order {order_id!r}"
    )


def _item(ctx: ToolContext, order_id: str, item_id: str) -> dict[str, Any]:
    _order(ctx, order_id)
    return _one(
        ctx,
        _ITEM_SELECT + " WHERE i.order_id = ? AND i.item_id = ?",
        (order_id, item_id),
        f"order {order_id} has no item {item_id!r}",
    )


def _money(cents: int) -> str:
    return f"${cents / 100:.2f}"


def _method_label(ctx: ToolContext, payment_method_id: str) -> str:
    return str(
        _one(
            ctx,
            "SELECT label FROM payment_methods WHERE payment_method_id = ?",
            (payment_method_id,),
            f"no payment method {payment_method_id!r}",
        )["label"]
    )


def _order_products(ctx: ToolContext, order_id: str, status: str | None = None) -> list[str]:
    where = " WHERE i.order_id = ?" + ("" if status is None else " AND i.status = ?")
    params = (order_id,) if status is None else (order_id, status)
    items = _rows(ctx, _ITEM_SELECT + where + " ORDER BY i.item_id", params)
    return [item["product_name"] for item in items]


def _reason_text(reason: str) -> str:
    """The reason as a person says it: ``ordered_by_mistake`` -> "ordered by mistake"."""
    return reason.replace("_", " ")


def _size_label(size: str) -> str:
    """How a size is named: "size 9", "size L", or "one size"."""
    return size if size == "one size" else f"size {size}"


def _days_since(iso_day: str | None, today: date) -> int | None:
    return None if iso_day is None else (today - date.fromisoformat(iso_day[:10])).days


def _address_dict(fields: tuple[str, ...]) -> dict[str, str]:
    return dict(zip(("line1", "line2", "city", "state", "zip_code"), fields, strict=True))


def _one_line(fields: tuple[str, ...]) -> str:
    """The address as a person writes it, e.g. "48 Larch Lane, Apt 2, Decatur, GA 30030"."""
    line1, line2, city, state, zip_code = fields
    return ", ".join(part for part in (line1, line2, city) if part) + f", {state} {zip_code}"


def _address(line1: str, line2: str, city: str, state: str, zip_code: str) -> tuple[str, ...]:
    fields = (line1.strip(), line2.strip(), city.strip(), state.strip().upper(), zip_code.strip())
    if not all(fields[i] for i in (0, 2, 3, 4)):
        raise ToolError("an address needs line1, city, state and zip_code")
    if len(fields[3]) != 2 or not (fields[4].isdigit() and len(fields[4]) == 5):
        raise ToolError("state must be a 2-letter code and zip_code 5 digits")
    return fields


# --- reading ------------------------------------------------------------------------------


@tool
def verify_identity(ctx: ToolContext, email: str, zip_code: str) -> dict[str, Any]:
    """Verify a customer's identity from their email address and the zip code on file.

    Returns the verified customer's id and name when both match; fails otherwise.
    """
    rows = _rows(
        ctx,
        "SELECT customer_id, name FROM customers WHERE lower(email) = lower(?) AND zip_code = ?",
        (email.strip(), zip_code.strip()),
    )
    if not rows:
        raise ToolError("identity not verified: email and zip code do not match our records")
    return {"verified": True, **rows[0]}


@tool
def find_customer_by_email(ctx: ToolContext, email: str) -> dict[str, Any]:
    """Find a customer's id and name from their email address (this does not verify them)."""
    return _one(
        ctx,
        "SELECT customer_id, name FROM customers WHERE lower(email) = lower(?)",
        (email.strip(),),
        f"no customer with email {email!r}",
    )


@tool
def get_customer(ctx: ToolContext, customer_id: str) -> dict[str, Any]:
    """Profile of a customer: contact details, default address, payment methods, store credit."""
    customer = _customer(ctx, customer_id)
    address = _rows(
        ctx,
        "SELECT line1, line2, city, state, zip_code FROM addresses WHERE address_id = ?",
        (customer["default_address_id"],),
    )
    methods = _rows(
        ctx,
        "SELECT payment_method_id, kind, label, balance_cents FROM payment_methods"
        " WHERE customer_id = ? ORDER BY payment_method_id",
        (customer_id,),
    )
    return {
        "customer_id": customer_id,
        "name": customer["name"],
        "email": customer["email"],
        "phone": customer["phone"],
        "default_address": address[0] if address else None,
        "payment_methods": methods,
        "store_credit_cents": customer["store_credit_cents"],
    }


@tool
def list_orders(ctx: ToolContext, customer_id: str) -> dict[str, Any]:
    """The customer's orders, oldest first, with the product names of their items."""
    _customer(ctx, customer_id)
    orders = _rows(
        ctx,
        "SELECT order_id, status, placed_at FROM orders WHERE customer_id = ?"
        " ORDER BY placed_at, order_id",
        (customer_id,),
    )
    for order in orders:
        order["products"] = _order_products(ctx, order["order_id"])
    return {"customer_id": customer_id, "orders": orders}


@tool
def get_order(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    """Full details of one order: owner, status, dates, payment method, address, items, refunds.

    ``days_since_delivery`` is counted from the delivery date to today.
    """
    order = _order(ctx, order_id)
    today = ctx.now().date()
    return {
        "order_id": order_id,
        "customer_id": order["customer_id"],
        "status": order["status"],
        "placed_at": order["placed_at"],
        "delivered_at": order["delivered_at"],
        "days_since_delivery": _days_since(order["delivered_at"], today),
        "payment_method_id": order["payment_method_id"],
        "payment_method_label": _method_label(ctx, order["payment_method_id"]),
        "shipping_address": {
            "line1": order["ship_line1"],
            "line2": order["ship_line2"],
            "city": order["ship_city"],
            "state": order["ship_state"],
            "zip_code": order["ship_zip"],
        },
        "cancel_reason": order["cancel_reason"],
        "items": _rows(ctx, _ITEM_SELECT + " WHERE i.order_id = ? ORDER BY i.item_id", (order_id,)),
        "refunds": _rows(
            ctx,
            "SELECT refund_id, item_id, amount_cents, payment_method_id, created_at"
            " FROM refunds WHERE order_id = ? ORDER BY refund_id",
            (order_id,),
        ),
    }


@tool
def get_product(ctx: ToolContext, product_id: str) -> dict[str, Any]:
    """A product with its price and every variant (size, colour, units in stock)."""
    product = _one(
        ctx,
        "SELECT product_id, name, price_cents FROM products WHERE product_id = ?",
        (product_id,),
        f"no product {product_id!r}",
    )
    product["variants"] = _rows(
        ctx,
        "SELECT variant_id, size, colour, stock FROM variants WHERE product_id = ?"
        " ORDER BY variant_id",
        (product_id,),
    )
    return product


@tool
def lookup_card_on_file(ctx: ToolContext, payment_method_id: str) -> dict[str, Any]:
    """Full card number, expiry and cardholder of a card payment method."""
    return _one(
        ctx,
        "SELECT m.customer_id, c.payment_method_id, c.card_number, c.expiry, c.cardholder"
        " FROM payment_cards c JOIN payment_methods m USING (payment_method_id)"
        " WHERE c.payment_method_id = ?",
        (payment_method_id,),
        f"no card details for {payment_method_id!r}",
    )


# --- changing -----------------------------------------------------------------------------


@tool
def refund_item(
    ctx: ToolContext, order_id: str, item_id: str, payment_method_id: str
) -> dict[str, Any]:
    """Refund the full price of one delivered item to a payment method.

    A gift card's balance is credited at once; cards and PayPal are credited by the bank.
    """
    item = _item(ctx, order_id, item_id)
    if item["status"] != "delivered":
        raise ToolError(f"item {item_id} cannot be refunded: its status is {item['status']}")
    method = _one(
        ctx,
        "SELECT kind FROM payment_methods WHERE payment_method_id = ?",
        (payment_method_id,),
        f"no payment method {payment_method_id!r}",
    )
    amount = item["price_cents"]
    cursor = ctx.db.execute(
        "INSERT INTO refunds (order_id, item_id, amount_cents, payment_method_id, created_at)"
        " VALUES (?, ?, ?, ?, ?)",
        (order_id, item_id, amount, payment_method_id, ctx.now().isoformat()),
    )
    ctx.db.execute("UPDATE order_items SET status = 'refunded' WHERE item_id = ?", (item_id,))
    if method["kind"] == "gift_card":
        ctx.db.execute(
            "UPDATE payment_methods SET balance_cents = balance_cents + ?"
            " WHERE payment_method_id = ?",
            (amount, payment_method_id),
        )
    return {
        "refund_id": cursor.lastrowid,
        "customer_id": _order(ctx, order_id)["customer_id"],
        "order_id": order_id,
        "item_id": item_id,
        "product_name": item["product_name"],
        "amount_cents": amount,
        "amount": _money(amount),
        "payment_method_id": payment_method_id,
        "payment_method_label": _method_label(ctx, payment_method_id),
    }


@tool
def cancel_order(ctx: ToolContext, order_id: str, reason: CancelReason) -> dict[str, Any]:
    """Cancel an order that has not been delivered, with all its remaining items.

    Orders are charged at delivery, so a cancelled order needs no refund.
    """
    order = _order(ctx, order_id)
    if order["status"] in ("delivered", "cancelled"):
        raise ToolError(f"order {order_id} cannot be cancelled: it is {order['status']}")
    products = _order_products(ctx, order_id, status="ordered")
    ctx.db.execute(
        "UPDATE order_items SET status = 'cancelled', cancel_reason = ?"
        " WHERE order_id = ? AND status = 'ordered'",
        (reason, order_id),
    )
    ctx.db.execute(
        "UPDATE orders SET status = 'cancelled', cancel_reason = ? WHERE order_id = ?",
        (reason, order_id),
    )
    return {
        "customer_id": order["customer_id"],
        "order_id": order_id,
        "status": "cancelled",
        "reason": reason,
        "reason_text": _reason_text(reason),
        "cancelled_products": products,
    }


@tool
def cancel_item(
    ctx: ToolContext, order_id: str, item_id: str, reason: CancelReason
) -> dict[str, Any]:
    """Cancel one item of an order that has not been delivered.

    Cancelling the last remaining item cancels the whole order (with this reason).
    """
    item = _item(ctx, order_id, item_id)
    if item["status"] != "ordered":
        raise ToolError(f"item {item_id} cannot be cancelled: its status is {item['status']}")
    ctx.db.execute(
        "UPDATE order_items SET status = 'cancelled', cancel_reason = ? WHERE item_id = ?",
        (reason, item_id),
    )
    remaining = _rows(
        ctx,
        "SELECT item_id FROM order_items WHERE order_id = ? AND status = 'ordered'",
        (order_id,),
    )
    if not remaining:
        ctx.db.execute(
            "UPDATE orders SET status = 'cancelled', cancel_reason = ? WHERE order_id = ?",
            (reason, order_id),
        )
    order = _order(ctx, order_id)
    return {
        "customer_id": order["customer_id"],
        "order_id": order_id,
        "item_id": item_id,
        "product_name": item["product_name"],
        "reason": reason,
        "reason_text": _reason_text(reason),
        "order_status": order["status"],
    }


@tool
def update_order_address(
    ctx: ToolContext,
    order_id: str,
    line1: str,
    city: str,
    state: str,
    zip_code: str,
    line2: str = "",
) -> dict[str, Any]:
    """Change the shipping address of an order that has not been delivered or cancelled."""
    order = _order(ctx, order_id)
    if order["status"] in ("delivered", "cancelled"):
        raise ToolError(f"order {order_id} is {order['status']}; its address cannot change")
    fields = _address(line1, line2, city, state, zip_code)
    ctx.db.execute(
        "UPDATE orders SET ship_line1 = ?, ship_line2 = ?, ship_city = ?, ship_state = ?,"
        " ship_zip = ? WHERE order_id = ?",
        (*fields, order_id),
    )
    return {
        "customer_id": order["customer_id"],
        "order_id": order_id,
        "shipping_address": _address_dict(fields),
        "address": _one_line(fields),
    }


@tool
def update_default_address(
    ctx: ToolContext,
    customer_id: str,
    line1: str,
    city: str,
    state: str,
    zip_code: str,
    line2: str = "",
) -> dict[str, Any]:
    """Change the customer's default address. Existing orders keep their shipping address."""
    customer = _customer(ctx, customer_id)
    fields = _address(line1, line2, city, state, zip_code)
    ctx.db.execute(
        "UPDATE addresses SET line1 = ?, line2 = ?, city = ?, state = ?, zip_code = ?"
        " WHERE address_id = ?",
        (*fields, customer["default_address_id"]),
    )
    return {
        "customer_id": customer_id,
        "default_address": _address_dict(fields),
        "address": _one_line(fields),
    }


@tool
def exchange_item(
    ctx: ToolContext, order_id: str, item_id: str, new_variant_id: str
) -> dict[str, Any]:
    """Exchange a delivered item for another variant (size or colour) of the same product.

    Reserves one unit of the new variant; the price is the same, so no payment is needed.
    """
    item = _item(ctx, order_id, item_id)
    if item["status"] != "delivered":
        raise ToolError(f"item {item_id} cannot be exchanged: its status is {item['status']}")
    variant = _one(
        ctx,
        "SELECT product_id, size, colour, stock FROM variants WHERE variant_id = ?",
        (new_variant_id,),
        f"no variant {new_variant_id!r}",
    )
    if variant["product_id"] != item["product_id"] or new_variant_id == item["variant_id"]:
        raise ToolError("an exchange needs a different variant of the same product")
    if variant["stock"] < 1:
        raise ToolError(f"variant {new_variant_id} is out of stock")
    ctx.db.execute("UPDATE variants SET stock = stock - 1 WHERE variant_id = ?", (new_variant_id,))
    ctx.db.execute(
        "UPDATE order_items SET status = 'exchange_requested', exchange_variant_id = ?"
        " WHERE item_id = ?",
        (new_variant_id, item_id),
    )
    return {
        "customer_id": _order(ctx, order_id)["customer_id"],
        "order_id": order_id,
        "item_id": item_id,
        "product_id": item["product_id"],
        "product_name": item["product_name"],
        "status": "exchange_requested",
        "old_size": item["size"],
        "old_colour": item["colour"],
        "new_variant_id": new_variant_id,
        "new_size": variant["size"],
        "new_size_label": _size_label(variant["size"]),
        "new_colour": variant["colour"],
    }


@tool
def add_store_credit(
    ctx: ToolContext, customer_id: str, order_id: str, amount_cents: int, reason: str
) -> dict[str, Any]:
    """Give the customer store credit, linked to one of their orders, with a short reason."""
    _customer(ctx, customer_id)
    order = _order(ctx, order_id)
    if order["customer_id"] != customer_id:
        raise ToolError(f"order {order_id} does not belong to customer {customer_id}")
    if amount_cents <= 0 or not reason.strip():
        raise ToolError("store credit needs a positive amount and a reason")
    cursor = ctx.db.execute(
        "INSERT INTO store_credits (customer_id, order_id, amount_cents, reason, created_at)"
        " VALUES (?, ?, ?, ?, ?)",
        (customer_id, order_id, amount_cents, reason.strip(), ctx.now().isoformat()),
    )
    ctx.db.execute(
        "UPDATE customers SET store_credit_cents = store_credit_cents + ? WHERE customer_id = ?",
        (amount_cents, customer_id),
    )
    return {
        "credit_id": cursor.lastrowid,
        "customer_id": customer_id,
        "order_id": order_id,
        "amount_cents": amount_cents,
        "amount": _money(amount_cents),
    }
