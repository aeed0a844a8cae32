"""Which part of τ²'s database a task's fixture holds.

The whole database (500 users, 1,000 orders, ~7,500 rows) costs about 0.3 s per reset and
per snapshot to hash on a busy machine, and validation resets and snapshots dozens of times
per task. A task's *world* is therefore, by default, smaller:

* the users the task concerns (named by its gold actions or its scenario) and their
  look-alikes: users who share a first name, a last name or a zip code with one of them
  (at most :data:`NEIGHBOURS`), with all their orders and payment methods. A look-up with a
  wrong name or zip still finds a wrong person, so the one-user and authentication checks
  keep something to catch;
* all 50 products, and the variants of those the task can concern: products in the task's
  users' orders, products the gold actions read, and products the scenario names.

``world="full"`` keeps τ²'s whole database in every fixture instead.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from groundstate.tau2.source import Tau2Task

World = Literal["task", "full"]
NEIGHBOURS = 8
"""At most this many look-alike users join a task's world (in user id order)."""

_ORDER_ID = re.compile(r"#?W\d{7}")
_WORD = re.compile(r"[a-z0-9_.@+-]+")


def task_users(db: dict[str, Any], task: Tau2Task) -> list[str]:
    """The users a task is about: named by its gold actions or by its scenario."""
    users: set[str] = set()
    for action in task.evaluation_criteria.actions:
        users |= _users_of_action(db, action.name, action.arguments)
    users |= _users_in_text(db, scenario_text(task))
    return sorted(users)


def world_users(db: dict[str, Any], task: Tau2Task, world: World) -> list[str]:
    """Every user whose records go into the task's fixture."""
    if world == "full":
        return list(db["users"])
    core = task_users(db, task)
    return core + _look_alikes(db, core)


def scenario_text(task: Tau2Task) -> str:
    """Everything the simulated user is told, as one text."""
    i = task.user_scenario.instructions
    return " ".join(t for t in (i.reason_for_call, i.known_info, i.task_instructions) if t)


def _users_of_action(db: dict[str, Any], name: str, args: dict[str, Any]) -> set[str]:
    users = db["users"]
    found: set[str] = set()
    if name == "find_user_id_by_email":
        email = str(args.get("email", "")).lower()
        found |= {uid for uid, u in users.items() if u["email"].lower() == email}
    elif name == "find_user_id_by_name_zip":
        found |= {
            uid
            for uid, u in users.items()
            if u["name"]["first_name"].lower() == str(args.get("first_name", "")).lower()
            and u["name"]["last_name"].lower() == str(args.get("last_name", "")).lower()
            and u["address"]["zip"] == args.get("zip")
        }
    if args.get("user_id") in users:
        found.add(args["user_id"])
    order = db["orders"].get(args.get("order_id"))
    if order is not None:
        found.add(order["user_id"])
    return found


def _users_in_text(db: dict[str, Any], text: str) -> set[str]:
    """Users the scenario names by id, email, order, or by full name with their zip code."""
    words = set(_WORD.findall(text.lower()))
    found = set()
    for uid, user in db["users"].items():
        name = {user["name"]["first_name"].lower(), user["name"]["last_name"].lower()}
        if (
            uid in words
            or user["email"].lower() in words
            or (name <= words and user["address"]["zip"] in words)
        ):
            found.add(uid)
    for order_id in _ORDER_ID.findall(text):
        order = db["orders"].get("#" + order_id.lstrip("#"))
        if order is not None:
            found.add(order["user_id"])
    return found


def _look_alikes(db: dict[str, Any], core: list[str]) -> list[str]:
    keys = {(field, value) for uid in core for field, value in _identity(db["users"][uid]).items()}
    alike = sorted(
        uid
        for uid, user in db["users"].items()
        if uid not in core and keys & set(_identity(user).items())
    )
    return alike[:NEIGHBOURS]


def _identity(user: dict[str, Any]) -> dict[str, str]:
    return {
        "first_name": user["name"]["first_name"].lower(),
        "last_name": user["name"]["last_name"].lower(),
        "zip": user["address"]["zip"],
    }


def world_products(db: dict[str, Any], task: Tau2Task) -> list[str]:
    """The products whose variants go into the task's fixture (look-alikes' orders aside)."""
    kept = set(task_users(db, task))
    products = {
        item["product_id"]
        for order in db["orders"].values()
        if order["user_id"] in kept
        for item in order["items"]
    }
    variant_of = {
        item_id: product_id
        for product_id, product in db["products"].items()
        for item_id in product["variants"]
    }
    for action in task.evaluation_criteria.actions:
        for value in _flat(action.arguments.values()):
            if value in db["products"]:
                products.add(value)
            elif value in variant_of:
                products.add(variant_of[value])
    text = _squash(scenario_text(task))
    products |= {pid for pid, p in db["products"].items() if _squash(p["name"]) in text}
    return sorted(products)


def _flat(values: Any) -> list[str]:
    flat: list[str] = []
    for value in values:
        flat.extend(str(v) for v in (value if isinstance(value, list) else [value]))
    return flat


def _squash(text: str) -> str:
    """Lower-case letters only: "T-Shirt" and "tshirts" both contain "tshirt"."""
    return re.sub(r"[^a-z]", "", text.lower())
