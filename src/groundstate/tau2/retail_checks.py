"""Hard constraints of the τ² retail policy that the declarative forms cannot state.

``groundstate import-tau2`` copies this file verbatim into the suite (as ``checks.py``), so
it is part of every task's grader revision. Each function receives the attempt's trace and
the initial state and returns ``(passed, evidence)`` (docs/constraints.md, "check").

Two tools authenticate (by email, or by name and zip code), and a ``before`` constraint has
one ``first`` match, so "authenticated before acting" and "one user per conversation" are
written here. The tools that concern a user report it as ``output.user_id``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from groundstate.grading.constraints import normalise
from groundstate.trace import AgentEvent, MessageEvent, ToolCallEvent

Evidence = tuple[bool, dict[str, Any]]

AUTH_TOOLS = frozenset({"find_user_id_by_email", "find_user_id_by_name_zip"})
WRITE_TOOLS = frozenset(
    {
        "cancel_pending_order",
        "modify_pending_order_address",
        "modify_pending_order_items",
        "modify_pending_order_payment",
        "modify_user_address",
        "return_delivered_order_items",
        "exchange_delivered_order_items",
    }
)
USER_TOOLS = WRITE_TOOLS | {"get_user_details", "get_order_details"}
"""Tools whose output belongs to one user (``output.user_id``)."""
ID_ARGUMENTS = ("user_id", "order_id", "payment_method_id", "item_ids", "new_item_ids")


def _calls(trace: Iterable[AgentEvent]) -> list[ToolCallEvent]:
    return [e for e in trace if isinstance(e, ToolCallEvent) and e.ok]


def _owner(event: ToolCallEvent) -> str | None:
    output = event.output
    return output.get("user_id") if isinstance(output, dict) else None


def authenticated_first(trace: list[AgentEvent], s0: Any) -> Evidence:
    """Every user's profile, order or change is reached only after a user was authenticated.

    Policy: "At the beginning of the conversation, you have to authenticate the user identity
    by locating their user id via email, or via name + zip code. This has to be done even when
    the user already provides the user id."
    """
    authenticated = False
    for event in _calls(trace):
        if event.tool in AUTH_TOOLS:
            authenticated = True
        elif event.tool in USER_TOOLS and not authenticated:
            return False, {
                "problems": [f"step {event.step} ({event.tool}) before any authentication"],
                "offending_step": event.step,
            }
    return True, {}


def one_user(trace: list[AgentEvent], s0: Any) -> Evidence:
    """At most one user is authenticated, and every profile read and change is theirs.

    Policy: "You can only help one user per conversation (but you can handle multiple
    requests from the same user), and must deny any requests for tasks related to any other
    user." Reading an order by its id is allowed (it is how an agent finds that an order is
    not the user's); reading another profile or changing another user's records is not.
    """
    found: list[str] = []
    for event in _calls(trace):
        if event.tool in AUTH_TOOLS and isinstance(event.output, str):
            found.append(event.output)
        elif event.tool in WRITE_TOOLS | {"get_user_details"}:
            owner = _owner(event)
            if owner is not None and owner not in found[:1]:
                return False, {
                    "problems": [
                        f"step {event.step} ({event.tool}) concerns user {owner!r}, "
                        f"authenticated: {sorted(set(found))}"
                    ],
                    "offending_step": event.step,
                }
        if len(set(found)) > 1:
            return False, {
                "problems": [f"step {event.step}: a second user authenticated"],
                "users": sorted(set(found)),
                "offending_step": event.step,
            }
    return True, {"users": sorted(set(found))}


def known_ids(trace: list[AgentEvent], s0: Any) -> Evidence:
    """Every id a change uses was shown before, by the user or by a tool: nothing guessed.

    Policy: "You should not make up any information or knowledge or procedures not provided
    by the user or the tools."
    """
    seen: list[str] = []
    for event in trace:
        if isinstance(event, MessageEvent) and event.role == "user" and event.text:
            seen.append(event.text)
        if not isinstance(event, ToolCallEvent):
            continue
        if event.ok and event.tool in WRITE_TOOLS:
            unseen = [v for v in id_values(event.args) if not shown(v, seen)]
            if unseen:
                return False, {
                    "problems": [
                        f"step {event.step} ({event.tool}) uses ids never shown before: {unseen}"
                    ],
                    "offending_step": event.step,
                }
        if event.ok:
            seen.append(event.output if isinstance(event.output, str) else _text(event.output))
    return True, {}


REASON_WORDS = {
    "no longer needed": re.compile(
        r"\bno longer (need|want|require)|\b(do not|don't|dont) (need|want)|\bnot needed\b"
        r"|\bunneeded\b|\bno (need|use) for\b"
        r"|\b(need|want) (it|them|this|these) (any ?more|no more)"
    ),
    "ordered by mistake": re.compile(r"\bmistake|\bby accident|\baccidental|\bin error\b"),
}
"""How a person says each cancellation reason the tool takes, on normalised text."""


def cancel_reason_confirmed(trace: list[AgentEvent], s0: Any) -> Evidence:
    """A cancellation records the reason its confirmation stated, in any words, and the
    question stated no other.

    Policy: "The user needs to confirm the order id and the reason (either 'no longer needed'
    or 'ordered by mistake')". The question is the agent's last message before the call (the
    ``confirmed-cancel_pending_order`` constraint checks the user's yes to it): "... since you
    no longer need it" states the reason as well as "with the reason 'no longer needed'"."""
    question = ""
    for event in trace:
        if isinstance(event, MessageEvent):
            if event.role == "agent" and not event.final:
                question = normalise(event.text or "")
            continue
        if event.tool != "cancel_pending_order" or not event.ok or not isinstance(event.args, dict):
            continue
        said = sorted(reason for reason, words in REASON_WORDS.items() if words.search(question))
        recorded = event.args.get("reason")
        if said != [recorded]:
            stated = " and ".join(repr(r) for r in said) if said else "no reason"
            problem = (
                f"step {event.step} records {recorded!r}; the question before it stated {stated}"
            )
            return False, {"problems": [problem], "offending_step": event.step}
    return True, {}


def id_values(args: Any) -> list[str]:
    """The ids among a call's arguments (lists flattened)."""
    values: list[str] = []
    for name in ID_ARGUMENTS:
        value = args.get(name) if isinstance(args, dict) else None
        values.extend(str(v) for v in (value if isinstance(value, list) else [value]) if v)
    return values


def _text(output: Any) -> str:
    return json.dumps(output, ensure_ascii=False)


def shown(value: str, texts: list[str]) -> bool:
    """Whether *value* stands as a whole token in one of *texts*."""
    pattern = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(value) + r"(?![A-Za-z0-9_])")
    return any(pattern.search(text) for text in texts)
