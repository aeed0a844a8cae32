"""τ²'s ``db.json`` as a relational fixture: one table per kind of record, each with a key.

τ² keeps each order's items, fulfilments and payments as nested lists; here they are rows
keyed by ``(order_id, line)``, so a state diff names the exact line that changed and a
``writes`` match can select it. Free-form option maps and id lists stay JSON text in one
column (they are compared whole). ``transfers`` is ours: a hand-over to a human is recorded as
state (see :mod:`groundstate.tau2.retail_tools`).
"""

from __future__ import annotations

import json
from typing import Any

from groundstate.errors import SpecError
from groundstate.tau2.retail_tools import ADDRESS_COLUMNS, LIST_EXTRAS, ORDER_EXTRAS

SCHEMA = """
CREATE TABLE users (
  user_id    TEXT PRIMARY KEY,
  first_name TEXT NOT NULL,
  last_name  TEXT NOT NULL,
  email      TEXT NOT NULL,
  address1   TEXT NOT NULL,
  address2   TEXT NOT NULL,
  city       TEXT NOT NULL,
  country    TEXT NOT NULL,
  state      TEXT NOT NULL,
  zip        TEXT NOT NULL
);
CREATE TABLE payment_methods (
  payment_method_id TEXT PRIMARY KEY,
  user_id           TEXT NOT NULL REFERENCES users(user_id),
  source            TEXT NOT NULL CHECK (source IN ('credit_card', 'gift_card', 'paypal')),
  brand             TEXT,          -- credit cards
  last_four         TEXT,          -- credit cards
  balance           REAL           -- gift cards, in dollars
);
CREATE TABLE products (
  product_id TEXT PRIMARY KEY,
  name       TEXT NOT NULL
);
CREATE TABLE variants (
  item_id    TEXT PRIMARY KEY,
  product_id TEXT NOT NULL REFERENCES products(product_id),
  options    TEXT NOT NULL,        -- JSON object, e.g. {"color": "blue", "size": "M"}
  available  INTEGER NOT NULL CHECK (available IN (0, 1)),
  price      REAL NOT NULL
);
CREATE TABLE orders (
  order_id    TEXT PRIMARY KEY,
  user_id     TEXT NOT NULL REFERENCES users(user_id),
  address1    TEXT NOT NULL,
  address2    TEXT NOT NULL,
  city        TEXT NOT NULL,
  country     TEXT NOT NULL,
  state       TEXT NOT NULL,
  zip         TEXT NOT NULL,
  status      TEXT NOT NULL,
  cancel_reason              TEXT,
  exchange_items             TEXT,  -- JSON list of item ids, sorted
  exchange_new_items         TEXT,  -- JSON list of item ids, sorted
  exchange_payment_method_id TEXT,
  exchange_price_difference  REAL,
  return_items               TEXT,  -- JSON list of item ids, sorted
  return_payment_method_id   TEXT
);
CREATE TABLE order_items (
  order_id   TEXT NOT NULL REFERENCES orders(order_id),
  line       INTEGER NOT NULL,     -- position in the order, from 1
  item_id    TEXT NOT NULL,
  product_id TEXT NOT NULL,
  name       TEXT NOT NULL,
  price      REAL NOT NULL,
  options    TEXT NOT NULL,
  PRIMARY KEY (order_id, line)
);
CREATE TABLE fulfillments (
  order_id     TEXT NOT NULL REFERENCES orders(order_id),
  line         INTEGER NOT NULL,
  tracking_ids TEXT NOT NULL,      -- JSON list
  item_ids     TEXT NOT NULL,      -- JSON list
  PRIMARY KEY (order_id, line)
);
CREATE TABLE payments (
  order_id          TEXT NOT NULL REFERENCES orders(order_id),
  line              INTEGER NOT NULL,
  transaction_type  TEXT NOT NULL CHECK (transaction_type IN ('payment', 'refund')),
  amount            REAL NOT NULL,
  payment_method_id TEXT NOT NULL,
  PRIMARY KEY (order_id, line)
);
CREATE TABLE transfers (
  transfer_id INTEGER PRIMARY KEY,
  summary     TEXT NOT NULL
);
"""


Rows = dict[str, list[dict[str, Any]]]


def fixture_from_db(
    db: dict[str, Any], users: list[str] | None = None, products: list[str] | None = None
) -> dict[str, Any]:
    """The ``{schema, rows}`` fixture for a τ² retail database.

    With *users*, only those users, their payment methods and their orders are kept; with
    *products*, only those products' variants (every product keeps its row); without,
    everything.
    """
    keep = set(db["users"] if users is None else users)
    keep_variants = set(db["products"] if products is None else products)
    try:
        rows: Rows = {"users": [], "payment_methods": [], "products": [], "variants": []}
        for user in db["users"].values():
            if user["user_id"] in keep:
                _add_user(rows, user)
        for product in db["products"].values():
            _add_product(rows, product, product["product_id"] in keep_variants)
        order_rows: Rows = {"orders": [], "order_items": [], "fulfillments": [], "payments": []}
        for order in db["orders"].values():
            if order["user_id"] in keep:
                _add_order(order_rows, order)
    except (KeyError, TypeError, AttributeError) as exc:
        raise SpecError("db.json", None, f"unexpected record shape ({exc!r})") from exc
    return {"schema": SCHEMA, "rows": rows | order_rows}


def _add_user(rows: Rows, user: dict[str, Any]) -> None:
    rows["users"].append(
        {
            "user_id": user["user_id"],
            "first_name": user["name"]["first_name"],
            "last_name": user["name"]["last_name"],
            "email": user["email"],
            **{field: user["address"][field] for field in ADDRESS_COLUMNS},
        }
    )
    for method in user["payment_methods"].values():
        rows["payment_methods"].append(
            {
                "payment_method_id": method["id"],
                "user_id": user["user_id"],
                "source": method["source"],
                "brand": method.get("brand"),
                "last_four": method.get("last_four"),
                "balance": method.get("balance"),
            }
        )


def _add_product(rows: Rows, product: dict[str, Any], with_variants: bool) -> None:
    rows["products"].append({"product_id": product["product_id"], "name": product["name"]})
    for variant in product["variants"].values() if with_variants else ():
        rows["variants"].append(
            {
                "item_id": variant["item_id"],
                "product_id": product["product_id"],
                "options": json.dumps(variant["options"]),
                "available": int(bool(variant["available"])),
                "price": variant["price"],
            }
        )


def _add_order(rows: Rows, order: dict[str, Any]) -> None:
    order_id = order["order_id"]
    extras = {
        field: (json.dumps(order.get(field)) if field in LIST_EXTRAS else order.get(field))
        if order.get(field) is not None
        else None
        for field in ORDER_EXTRAS
    }
    rows["orders"].append(
        {
            "order_id": order_id,
            "user_id": order["user_id"],
            **{field: order["address"][field] for field in ADDRESS_COLUMNS},
            "status": order["status"],
            **extras,
        }
    )
    for line, item in enumerate(order["items"], start=1):
        rows["order_items"].append(
            {
                "order_id": order_id,
                "line": line,
                "item_id": item["item_id"],
                "product_id": item["product_id"],
                "name": item["name"],
                "price": item["price"],
                "options": json.dumps(item["options"]),
            }
        )
    for line, fulfillment in enumerate(order["fulfillments"], start=1):
        rows["fulfillments"].append(
            {
                "order_id": order_id,
                "line": line,
                "tracking_ids": json.dumps(fulfillment["tracking_id"]),
                "item_ids": json.dumps(fulfillment["item_ids"]),
            }
        )
    for line, payment in enumerate(order["payment_history"], start=1):
        rows["payments"].append(
            {
                "order_id": order_id,
                "line": line,
                "transaction_type": payment["transaction_type"],
                "amount": payment["amount"],
                "payment_method_id": payment["payment_method_id"],
            }
        )
