"""τ²'s retail policy as the suite's constraint sets, and what each task adds of its own.

Stated as hard constraints, from ``policy.md``:

* authenticate before reaching any user's records, and only by facts the user gave
  (``authenticate-first``, ``auth-from-user-*``);
* one user per conversation (``one-user``);
* check an order's status before changing it (``status-read-before-*``): "you should check
  its status before taking the action";
* explicit confirmation before each write, by a question that names what the policy says
  the user confirms (``confirmed-*``), a cancellation's reason in any words
  (``cancel-reason-confirmed``), the items of a return, exchange or item change
  (``items-confirmed``) and the payment method of a return, an exchange, an item change or a
  change of payment (``payment-confirmed``), by id or by the names a person uses;
* make nothing up: the ids a change uses were shown by the user or a tool (``known-ids``);
* each order is modified or exchanged once by each tool (``changed-once-per-order``);
* a transfer to a human agent ends the agent's part: no tool is called after it
  (``transfer-last``).

Not stated (a judge or a model-driven user would be needed): denying out-of-policy requests
(the state shows it), "one tool call at a time", transferring "if and only if" needed, and
the wording of the transfer message.
"""

from __future__ import annotations

import re
from typing import Any

from groundstate.grading.constraints import fold
from groundstate.tau2.retail_checks import CONFIRMED_ASKS, WRITE_TOOLS

ORDER_WRITES = sorted(WRITE_TOOLS - {"modify_user_address"})

ADDRESS_NAMES = [f"args.{part}" for part in ("address1", "address2", "city", "state", "zip")]
"""A new address is named in full (an empty second line names nothing); the country is
always USA in τ²'s data, and an agent need not say it."""

CONFIRMED_NAMES: dict[str, list[str]] = {
    "cancel_pending_order": ["args.order_id"],
    "modify_pending_order_address": ["args.order_id", *ADDRESS_NAMES],
    "modify_pending_order_items": ["args.order_id"],
    "modify_pending_order_payment": ["args.order_id"],
    "modify_user_address": ADDRESS_NAMES,
    "return_delivered_order_items": ["args.order_id"],
    "exchange_delivered_order_items": ["args.order_id"],
}
"""What each change's confirmation must name: the order (the policy: "the user needs to
confirm the order id"), a new address. A cancellation's reason, in any words, is checked by
``cancel-reason-confirmed``; the items of a return, exchange or item change, by id or by name,
by ``items-confirmed``; the payment method of a return, an exchange, an item change or a
change of payment, by id or by its kind, by ``payment-confirmed``: all on the question these
constraints find confirmed."""


def constraint_sets() -> dict[str, list[dict[str, Any]]]:
    """The suite's one constraint set, ``policy``, included by every task."""
    return {
        "policy": [
            {
                "id": "authenticate-first",
                "description": "No profile, order or change is reached before the user is "
                "authenticated by email or by name and zip code.",
                "check": "checks.py:authenticated_first",
            },
            {
                "id": "auth-from-user-email",
                "description": "Authentication by email uses the email the user gave.",
                "provenance": {
                    "match": {"tool": "find_user_id_by_email", "ok": True},
                    "args": ["email"],
                    "from": "user",
                },
            },
            {
                "id": "auth-from-user-name-zip",
                "description": "Authentication by name uses the name and zip the user gave.",
                "provenance": {
                    "match": {"tool": "find_user_id_by_name_zip", "ok": True},
                    "args": ["first_name", "last_name", "zip"],
                    "from": "user",
                },
            },
            {
                "id": "one-user",
                "description": "One user per conversation: one authenticated user, whose "
                "profile alone is read and whose records alone are changed.",
                "check": "checks.py:one_user",
            },
            *[_status_read_before(tool) for tool in ORDER_WRITES],
            *[_confirmed(tool, names) for tool, names in CONFIRMED_NAMES.items()],
            {
                "id": "items-confirmed",
                "description": "A return, exchange or item change was confirmed by a "
                "question naming each item (by id, or by its name and the options that tell "
                "it from the order's other items of that name) and each new item (by id, or "
                "by an option it changes) (the policy: the user confirms the list of items).",
                "check": "checks.py:items_confirmed",
            },
            {
                "id": "payment-confirmed",
                "description": "A change of an order's payment method, a return, an exchange "
                "or an item change was confirmed by a question naming the method the call uses "
                "(the refund's, or the one settling the price difference) (by id, or by its "
                "kind and what tells it from the user's other methods of that kind).",
                "check": "checks.py:payment_confirmed",
            },
            {
                "id": "cancel-reason-confirmed",
                "description": "A cancellation records the reason its confirmation stated, in "
                "any words ('since you no longer need it'), and the question stated no other "
                "(the policy: the user confirms the order id and the reason).",
                "check": "checks.py:cancel_reason_confirmed",
            },
            {
                "id": "changed-once-per-order",
                "description": "No order is modified or exchanged twice by the same tool (the "
                "policy: exchange or modify order tools can only be called once per order).",
                "check": "checks.py:changed_once_per_order",
            },
            {
                "id": "transfer-last",
                "description": "No tool is called after the transfer to a human agent (the "
                "policy: first the transfer, then the message telling the user).",
                "check": "checks.py:transferred_last",
            },
            {
                "id": "known-ids",
                "description": "Every id a change uses was shown before by the user or a "
                "tool: nothing is made up.",
                "check": "checks.py:known_ids",
            },
        ]
    }


def _status_read_before(tool: str) -> dict[str, Any]:
    return {
        "id": f"status-read-before-{tool}",
        "description": f"{tool} comes after get_order_details of the same order "
        "(the policy: check its status before taking the action). A call the tool refused "
        "changed nothing: a retry after a mistyped order id is judged by the change it makes.",
        "before": {
            "first": {
                "tool": "get_order_details",
                "ok": True,
                "capture": {"order": "output.order_id"},
            },
            "then": {"tool": tool, "ok": True},
            "where": {"args.order_id": "$order"},
        },
    }


def _confirmed(tool: str, names: list[str]) -> dict[str, Any]:
    return {
        "id": f"confirmed-{tool}",
        "description": f"Each {tool} answers the user's explicit yes to a question about "
        "that kind of change naming "
        + ", ".join(name.removeprefix("args.") for name in names)
        + ".",
        "confirmed": {
            "change": {"tool": tool, "ok": True},
            "names": names,
            "asks": CONFIRMED_ASKS[tool],
        },
    }


def communicate_constraints(values: list[str]) -> list[dict[str, Any]]:
    """τ²'s ``communicate_info``: each string appears in some agent message.

    τ² lower-cases the message and drops its commas before looking for the string; the
    pattern here allows a thousands comma between any two digits to the same effect (our
    normalised text keeps commas, and drops spaces and dashes between digits).
    """
    return [
        {
            "id": f"communicates-{i + 1}",
            "description": f"Some agent message tells the user {value!r} (τ² communicate_info).",
            "at_least": {"n": 1, "match": {"message": "agent", "matches": info_pattern(value)}},
        }
        for i, value in enumerate(values)
    ]


def info_pattern(value: str) -> str:
    """A pattern for *value* in normalised text, a comma allowed between two digits; its
    characters folded as the text's are (a typographic apostrophe would be found nowhere)."""
    text = " ".join(fold(value).split())
    return "".join(
        re.escape(char) + (",?" if char.isdigit() and text[i + 1 : i + 2].isdigit() else "")
        for i, char in enumerate(text)
    )
