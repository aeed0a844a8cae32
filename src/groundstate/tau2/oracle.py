"""A τ² task's gold actions as a groundstate oracle, and what its scripted user knows.

τ² lists the tool calls of a correct conversation, not the conversation. The oracle adds
the turns a policy-abiding agent needs around those calls, and nothing more:

* before the first authentication, one question asking for the facts the successful look-ups
  use (email, or first name, last name and zip code): the scripted user answers with those
  facts, so their provenance is the user;
* before each write, a confirmation naming what the policy says the user must confirm (the
  order, a cancellation's reason, a new address), answered "yes";
* a final reply carrying every string τ² requires the agent to communicate.

The scripted user reveals a fact when the agent's message contains its name (``zip`` in "zip
code"), so the questions and confirmations here never contain a fact's name by accident.
"""

from __future__ import annotations

from typing import Any

from groundstate.tau2.replay import Replayed
from groundstate.tau2.retail_checks import AUTH_TOOLS

AUTH_FACTS = {
    "find_user_id_by_email": ("email",),
    "find_user_id_by_name_zip": ("first_name", "last_name", "zip"),
}
"""The arguments of each authentication tool, which are facts only the user can give."""

SPOKEN_ADDRESS = ("address1", "address2", "city", "state", "country", "zip")
"""An address as a person reads it out (the tools' parameter order)."""


def user_knowledge(replayed: list[Replayed]) -> tuple[dict[str, str], list[str]]:
    """The facts the scripted user gives when asked, and notes on conflicting gold values.

    The facts are the arguments of the *successful* look-ups (failed ones are the gold
    conversation's false starts). A user id the scenario states is not among them: the policy
    has the agent find it by a look-up "even when the user already provides the user id".
    """
    knowledge: dict[str, str] = {}
    notes: list[str] = []
    for call in replayed:
        if call.action.name not in AUTH_TOOLS or not call.ok:
            continue
        for fact in AUTH_FACTS[call.action.name]:
            value = str(call.action.arguments.get(fact, ""))
            if knowledge.setdefault(fact, value) != value:
                notes.append(f"gold look-ups use two values of {fact}: kept {knowledge[fact]!r}")
    return knowledge, notes


def oracle_steps(
    replayed: list[Replayed], knowledge: dict[str, str], communicate: list[str]
) -> list[dict[str, Any]]:
    """The oracle's steps: the gold calls in order, with the turns described above."""
    steps: list[dict[str, Any]] = []
    asked = False
    for call in replayed:
        name = call.action.name
        if name in AUTH_TOOLS and not asked and _auth_facts(knowledge):
            steps.append({"say": _identity_question(knowledge)})
            asked = True
        if call.ok and name in CONFIRMATIONS:  # a write that changes nothing is asked too
            steps.append({"say": CONFIRMATIONS[name](call.action.arguments)})
        steps.append({"call": name, "args": call.action.arguments})
    steps.append({"finish": final_reply(communicate)})
    return steps


def final_reply(communicate: list[str]) -> str:
    if not communicate:
        return "Thank you for your patience; your request has been handled."
    return "Thank you for your patience. As requested: " + "; ".join(communicate) + "."


def _auth_facts(knowledge: dict[str, str]) -> list[str]:
    return [fact for fact in ("email", "first_name", "last_name", "zip") if fact in knowledge]


def _identity_question(knowledge: dict[str, str]) -> str:
    facts = [fact.replace("_", " ") for fact in _auth_facts(knowledge)]
    listed = facts[0] if len(facts) == 1 else ", ".join(facts[:-1]) + " and " + facts[-1]
    listed = listed.replace("zip", "zip code")
    return f"Before I can help, I need to authenticate you. Please tell me your {listed}."


def _ask(what: str) -> str:
    return f"{what} Please confirm with yes to proceed."


def _one_line(args: dict[str, Any]) -> str:
    return ", ".join(str(args.get(part, "")) for part in SPOKEN_ADDRESS if args.get(part))


CONFIRMATIONS = {
    "cancel_pending_order": lambda a: _ask(
        f"I can cancel order {a.get('order_id')} with the reason '{a.get('reason')}'."
    ),
    "modify_pending_order_address": lambda a: _ask(
        f"I can change the shipping address of order {a.get('order_id')} to {_one_line(a)}."
    ),
    "modify_pending_order_items": lambda a: _ask(
        f"I can change items {_ids(a.get('item_ids'))} of order {a.get('order_id')} to items "
        f"{_ids(a.get('new_item_ids'))}; {_settled(a)}; this can be done only once, so the list "
        "must be complete."
    ),
    "modify_pending_order_payment": lambda a: _ask(
        f"I can switch the payment of order {a.get('order_id')} to {a.get('payment_method_id')}."
    ),
    "modify_user_address": lambda a: _ask(f"I can change your default address to {_one_line(a)}."),
    "return_delivered_order_items": lambda a: _ask(
        f"I can request the return of items {_ids(a.get('item_ids'))} from order "
        f"{a.get('order_id')}; the money goes to {a.get('payment_method_id')}."
    ),
    "exchange_delivered_order_items": lambda a: _ask(
        f"I can exchange items {_ids(a.get('item_ids'))} of order {a.get('order_id')} for "
        f"items {_ids(a.get('new_item_ids'))}; {_settled(a)}; this can be done only once, so "
        "the list must be complete."
    ),
}
"""Per write tool: the confirmation question, naming what the suite's ``confirmed``
constraints require (see :data:`groundstate.tau2.policy.CONFIRMED_NAMES`), the items by
their ids (``items-confirmed``) and the payment method by its id (``payment-confirmed``)."""


def _settled(args: dict[str, Any]) -> str:
    return f"the price difference is settled with {args.get('payment_method_id')}"


def _ids(values: Any) -> str:
    """Item ids as a question lists them: "1, 2 and 3" (a comma, never a bare space, between
    two ids: normalised text would join "1008292230 2345678901" into one number)."""
    ids = [str(v) for v in values] if isinstance(values, list) else [str(values)]
    return ids[0] if len(ids) == 1 else ", ".join(ids[:-1]) + " and " + ids[-1]
