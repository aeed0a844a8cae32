"""Replaying a task's gold actions with our tools, completed where the policy requires it.

τ²'s later tasks list only the writes that produce the expected state (task 70 is one
``exchange_delivered_order_items``), not a conversation a policy-abiding agent could have:
no authentication, no look at the order's status, ids nobody showed. The importer completes
such a list with the *reads* the policy requires, which cannot change the state:

* an authentication before the first call that reaches a user's records (by email when the
  scenario gives the user's email, else by name and zip code);
* ``get_order_details`` of an order before a write to it, unless it was read already;
* before a write that uses an id nobody has shown yet: ``get_user_details`` (orders and
  payment methods) or ``get_product_details`` of a new item's product.

Every added call is reported, so the audit can say which gold lists were incomplete.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import ToolError
from groundstate.tau2.retail_checks import AUTH_TOOLS, USER_TOOLS, WRITE_TOOLS, id_values, shown
from groundstate.tau2.source import Action
from groundstate.tools import Tool, ToolContext


@dataclass(frozen=True)
class Replayed:
    """One call as our tools answered it when the importer replayed it."""

    action: Action
    ok: bool
    output: Any
    error: str | None
    wrote: bool
    added: bool = False
    """Not in τ²'s gold list: a read the importer added (see the module docstring)."""


def call(env: SqliteEnvironment, tools: dict[str, Tool], action: Action) -> Replayed:
    """Make one call in its own transaction, as the gateway would."""
    try:
        with env.tool_transaction() as effects:
            output = tools[action.name].fn(ToolContext(env), **action.arguments)
    except ToolError as exc:
        return Replayed(action, ok=False, output=None, error=str(exc), wrote=False)
    return Replayed(action, ok=True, output=output, error=None, wrote=bool(effects.writes))


@dataclass
class _Progress:
    """What the conversation has established so far."""

    seen: list[str]
    authenticated: bool = False
    read_orders: set[str] | None = None
    read_users: bool = False

    def record(self, done: Replayed) -> None:
        if not done.ok:
            return
        output = done.output
        self.seen.append(output if isinstance(output, str) else json.dumps(output))
        if done.action.name in AUTH_TOOLS:
            self.authenticated = True
        if done.action.name == "get_order_details":
            assert self.read_orders is not None
            self.read_orders.add(str(done.action.arguments.get("order_id")))
        if done.action.name == "get_user_details":
            self.read_users = True


def replay_completed(
    env: SqliteEnvironment,
    tools: dict[str, Tool],
    actions: list[Action],
    *,
    db: dict[str, Any],
    opening: str,
    scenario: str,
) -> list[Replayed]:
    """Replay *actions*, adding the reads the policy requires before each (see above).

    *opening* is the user's request: ids in it count as shown. *scenario* is everything the
    user knows: an added authentication uses the email when it is there.
    """
    progress = _Progress(seen=[opening], read_orders=set())
    done: list[Replayed] = []
    for action in actions:
        for read in _missing_reads(action, progress, db, scenario):
            made = call(env, tools, read)
            done.append(Replayed(read, made.ok, made.output, made.error, made.wrote, True))
            progress.record(made)
        made = call(env, tools, action)
        done.append(made)
        progress.record(made)
    return done


def _missing_reads(
    action: Action, progress: _Progress, db: dict[str, Any], scenario: str
) -> list[Action]:
    reads: list[Action] = []
    owner = _owner(action, db)
    if action.name in USER_TOOLS and not progress.authenticated and owner is not None:
        reads.append(_authentication(db["users"][owner], scenario))
    if action.name not in WRITE_TOOLS:
        return reads
    order_id = action.arguments.get("order_id")
    if order_id is not None and str(order_id) not in (progress.read_orders or set()):
        reads.append(Action(name="get_order_details", arguments={"order_id": order_id}))
    shown_after = [*progress.seen, *(_expected_output(r, db) for r in reads)]
    unseen = [v for v in id_values(action.arguments) if not shown(v, shown_after)]
    if unseen and owner is not None and not progress.read_users:
        reads.append(Action(name="get_user_details", arguments={"user_id": owner}))
    for product_id in _products_of(unseen, db):
        reads.append(Action(name="get_product_details", arguments={"product_id": product_id}))
    return [r.model_copy(update={"action_id": "added"}) for r in reads]


def _owner(action: Action, db: dict[str, Any]) -> str | None:
    args = action.arguments
    if args.get("user_id") in db["users"]:
        return str(args["user_id"])
    order = db["orders"].get(args.get("order_id"))
    return None if order is None else str(order["user_id"])


def _authentication(user: dict[str, Any], scenario: str) -> Action:
    if user["email"].lower() in scenario.lower():
        return Action(name="find_user_id_by_email", arguments={"email": user["email"]})
    return Action(
        name="find_user_id_by_name_zip",
        arguments={
            "first_name": user["name"]["first_name"],
            "last_name": user["name"]["last_name"],
            "zip": user["address"]["zip"],
        },
    )


def _expected_output(read: Action, db: dict[str, Any]) -> str:
    """What a read will show, judged from τ²'s data (enough to know which ids it reveals)."""
    if read.name == "get_order_details":
        return json.dumps(db["orders"].get(read.arguments["order_id"]))
    return ""


def _products_of(item_ids: list[str], db: dict[str, Any]) -> list[str]:
    products = []
    for product_id, product in db["products"].items():
        if any(item_id in product["variants"] for item_id in item_ids):
            products.append(product_id)
    return products
