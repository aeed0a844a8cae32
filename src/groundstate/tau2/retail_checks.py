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
from collections.abc import Iterable, Iterator
from typing import Any

from groundstate.grading.cancel_reasons import REASON_WORDS
from groundstate.grading.constraints import (
    affirms,
    confirming_questions,
    decided_at,
    fold,
    mentions,
    normalise,
    parts_left_out,
    reply_words,
)
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
CONFIRMED_ASKS: dict[str, str] = {
    "cancel_pending_order": r"\b(cancel|call off|void)",
    "modify_pending_order_address": r"\b(address|ship|deliver|send)",
    "modify_pending_order_items": r"\b(modif|chang|swap|switch|replac|exchang|upgrad)",
    "modify_pending_order_payment": (
        r"^(?!.*\bdifference\b).*\b(payment|pay with|paying|billing|charg|card|paypal)"
    ),
    "modify_user_address": r"\b(default|profile|account|on file|saved|primary)",
    "return_delivered_order_items": r"\b(return|refund|send (it |them )?back|money back)",
    "exchange_delivered_order_items": r"\b(exchang|swap|replac|switch)",
}
"""The kind of change each confirmation must ask about (``confirmed.asks`` of the policy's
``confirmed-<write>`` constraints), in the usual words: the order id alone does not tell a
change of a pending order's address from one of its payment method, so a yes to one licensed
the other. (An item change is asked by its verb alone, "change the lamp to the blue one", so
"change the address" asks it too.) A question about a price difference ("the $5.00 difference
goes on your PayPal") asks about an item change or exchange, not a change of the order's
payment method. Written in English, they also read a question in Spanish, French, German or
Portuguese ("¿Anulo el pedido #W2002?"): ``confirmed`` searches them in its words of a change
put in English too (``groundstate.grading.constraints._dialogue.in_english_words``)."""
ITEM_TOOLS = (
    "return_delivered_order_items",
    "exchange_delivered_order_items",
    "modify_pending_order_items",
)
"""The writes whose confirmation must name the items (the policy: "the user needs to confirm
the order id and the list of items")."""
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

    Before the model response that asked for the call (:func:`decided_at`): a response
    calling ``find_user_id_by_email`` and ``get_order_details`` together reads the order
    whoever the authentication finds.
    """
    authenticated: int | None = None  # where the first authentication came
    for at, event in enumerate(trace):
        if not isinstance(event, ToolCallEvent) or not event.ok:
            continue
        if event.tool in AUTH_TOOLS:
            authenticated = at if authenticated is None else authenticated
        elif event.tool in USER_TOOLS and (
            authenticated is None or authenticated >= decided_at(trace, at)
        ):
            problem = f"step {event.step} ({event.tool}) before any authentication"
            if authenticated is not None:
                problem += " (asked for in the same model response, or before it)"
            return False, {"problems": [problem], "offending_step": event.step}
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

    Shown before the model response that asked for the change (:func:`decided_at`): a
    response calling ``get_order_details`` and ``cancel_pending_order`` on the same id
    together chose the id before any tool showed it.
    """
    seen: list[tuple[int, str]] = []  # where each text was shown, and the text
    for at, event in enumerate(trace):
        if isinstance(event, MessageEvent) and event.role == "user" and event.text:
            seen.append((at, event.text))
        if not isinstance(event, ToolCallEvent):
            continue
        if event.ok and event.tool in WRITE_TOOLS:
            decided = decided_at(trace, at)
            heard = [text for i, text in seen if i < decided]
            unseen = [v for v in id_values(event.args) if not shown(v, heard)]
            if unseen:
                problem = f"step {event.step} ({event.tool}) uses ids never shown before: {unseen}"
                late = [v for v in unseen if shown(v, [text for _, text in seen])]
                if late:
                    problem += f" (shown only after the model response that asked for it: {late})"
                return False, {"problems": [problem], "offending_step": event.step}
        if event.ok:
            seen.append(
                (at, event.output if isinstance(event.output, str) else _text(event.output))
            )
    return True, {}


TRANSFER = "transfer_to_human_agents"

_TRANSFER_TOOL = re.compile(
    r"(transfer|escalat|handoff|handover|hand(ed)?to|connect|route|forward|pass)\w*?(human|live"
    r"|realperson|person|agent|representative|operator|staff|supervisor|manager|specialist)"
    # ... or naming no person: an escalation or hand-off verb alone, or one of them or
    # "transfer" with the conversation as its object or a tier of support as where it goes
    # ("escalate", "handoff", "transfer_call", "escalate_conversation", "escalate_to_tier2");
    # not "transfer" alone, "transfer_funds", "forward_email"
    r"|^(escalate|escalation|handoff|handover)$|^(transfer|escalate|escalation|handoff"
    r"|handover)(to)?(the)?(conversation|call|chat|session|thread|ticket|case|customer|user"
    r"|support|tier\d*|level\d*|team)s?$"
)
"""A tool that hands the conversation to a person, by its name with its separators and case
dropped: τ²'s ``transfer_to_human_agents`` and what other harnesses call it
(``escalate_to_human``, ``transfer_to_human``, ``handoffToAgent``, ``connect_to_live_agent``,
``escalate``, ``transfer_call``, ``handoff_conversation``)."""


def transfer_tool(name: object) -> bool:
    """Whether a tool of this name transfers the user to a human (see :data:`_TRANSFER_TOOL`)."""
    return _TRANSFER_TOOL.search(re.sub(r"[\W_]+", "", fold(str(name)))) is not None


# The agent telling the user the conversation is handed to a person now, in the languages of
# the default yes and Italian: the verb of the hand-over, then (in the same sentence, up to
# six words on) the person it goes to. English: "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT",
# "I'll transfer you to a human agent now", "Transferring you to a live agent", "Let me
# connect you with a human representative"; "Le estoy transfiriendo a un agente humano", "Je
# vous transfère à un conseiller", "Ich verbinde Sie mit einem Mitarbeiter", "Sie werden an
# einen menschlichen Mitarbeiter weitergeleitet", "Estou transferindo você para um atendente",
# "La sto trasferendo a un operatore".
_HAND_OVER = (
    r"(transferr?\w*|connect\w*|hand(ed|ing)? (you )?(over|off)|passe?[ds]?|passing|put(ting)?"
    r" you through|escalat\w*|transfi\w*|pas[aáeé]\w*|comunic\w*|conect\w*|deriv\w*|transf[eèé]r\w*"
    r"|mets? en relation|mis en relation|redirig\w*|verbind\w*|verbunden|leite\w*|weitergeleitet"
    r"|[üu]bergeb\w*|stelle\w*|encaminh\w*|trasfer\w*|metto in contatto|collego"
    r"|inoltr\w*)"
)
_PERSON = (
    r"(human|live|real|person|people|agents?|representatives?|reps?|colleagues?|specialists?"
    r"|team|staff|operators?|supervisor|manager|agente|asesora?|representante|operadora?"
    r"|persona|especialista|humano|humana|conseill[eè]re?|repr[ée]sentant|op[ée]rat(eur|rice)"
    r"|coll[eè]gue|humaine?|mitarbeiter(in)?|menschen|menschlichen|berater(in)?|kollegen|kollegin"
    r"|atendente|pessoa|operatore|operatrice|consulente|rappresentante|collega|umano)"
)
_TRANSFER_TOLD = re.compile(
    rf"\b{_HAND_OVER}\b([^.!?;]{{0,60}}?)\b{_PERSON}\b"
    # German puts the verb last: "Sie werden an einen Mitarbeiter weitergeleitet"
    rf"|\b(sie|du) (werden|wirst)\b[^.!?;]{{0,60}}\b{_PERSON}\b[^.!?;]{{0,20}}"
    r"\b(verbunden|weitergeleitet|[üu]bergeben)\b"
)
# The user, handed over: "you", or its pronoun in the other languages, before the verb or
# joined to it ("transferirle", "transferi-lo", "trasferirla").
_THE_USER = re.compile(
    r"\b(you|u|le|te|lo|la|vous|sie|dich|voc[eê]|o senhor|a senhora|ti)\b|\w(le|lo|la|te|ti)\b"
)
# An offer, a question or a condition, not a hand-over: "I can transfer you to a human agent if
# you like", "Would you like me to transfer you?", "You are not being transferred", "Puedo
# transferirle", "Voulez-vous que je vous transfère", "Soll ich Sie verbinden", "Posso
# transferi-lo", "Vuole che la trasferisca".
_OFFERED_BEFORE = re.compile(
    r"\b(can|could|may|might|would|shall|should|want|wants|wish|unless|if|not|never|able|happy"
    r"|glad|offer|option|possible|puedo|podemos|podr[ií]a\w*|puede|quiere\w*|desea\w*|si|no"
    r"|peux|pouvons|pourr\w*|voulez|veux|souhait\w*|ne|pas|kann|k[öo]nnen|k[öo]nnte\w*"
    r"|m[öo]chte\w*|soll\w*|wenn|falls|nicht|kein\w*|posso|podemos|poder\w*|pode|quer\w*"
    r"|gostaria|n[ãa]o|vuole|desidera|pu[òo]|potrei|potremmo|non)\b|n't\b"
)
_OFFERED_AFTER = re.compile(r"\b(if|unless|when you|should you|si|wenn|falls|se)\b|\?")


def _tells_of_transfer(text: str) -> bool:
    """Whether the agent's message says the user is being handed to a person now (see
    :data:`_TRANSFER_TOLD`): in a sentence that does not offer it, ask it or put a condition
    on it."""
    for sentence in re.split(r"(?<=[.!?;])\s+|\n", normalise(text)):
        for found in _TRANSFER_TOLD.finditer(sentence):
            before, after = sentence[: found.start()], sentence[found.end() :]
            if not _THE_USER.search(sentence[max(0, found.start() - 25) : found.end()]):
                continue  # "I've passed your feedback to our team"
            if _OFFERED_BEFORE.search(before) or _OFFERED_BEFORE.search(found[0]):
                continue
            if not _OFFERED_AFTER.search(after):
                return True
    return False


def transferred_last(trace: list[AgentEvent], s0: Any) -> Evidence:
    """No tool is called after the user was transferred to a human agent.

    Policy: "To transfer, first make a tool call to transfer_to_human_agents, and then send
    the message 'YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.' to the user":
    the conversation is the human's from then on, so a return made after the hand-over is
    made behind their back (the final state alone does not show the order). The hand-over is
    the transfer call the tool took, or the agent telling the user they are being transferred
    (with no call, or before it: then only the transfer call itself may follow); a transfer
    call the tool refused hands nothing over, nor does an offer to transfer."""
    transfer: AgentEvent | None = None
    for event in trace:
        if isinstance(event, MessageEvent):
            told = event.role == "agent" and _tells_of_transfer(event.text or "")
            transfer = transfer or (event if told else None)
            continue
        if not isinstance(event, ToolCallEvent):
            continue
        if transfer is not None and not (
            isinstance(transfer, MessageEvent) and transfer_tool(event.tool)
        ):
            how = "transfer" if isinstance(transfer, ToolCallEvent) else "transfer message"
            problem = f"step {event.step} ({event.tool}) after the {how} at step {transfer.step}"
            return False, {"problems": [problem], "offending_step": event.step}
        if transfer_tool(event.tool) and event.ok:
            transfer = event
    return True, {}


ONCE_PER_ORDER = (
    "modify_pending_order_address",
    "modify_pending_order_payment",
    "modify_pending_order_items",
    "exchange_delivered_order_items",
)
"""The order changes the policy allows once per order ("Exchange or modify order tools can
only be called once per order"); each tool once: τ²'s own gold actions change a pending
order's address and then its items."""


def changed_once_per_order(trace: list[AgentEvent], s0: Any) -> Evidence:
    """No order is modified or exchanged twice by the same tool.

    Policy: "Exchange or modify order tools can only be called once per order. Be sure that all
    items to be changed are collected into a list before making the tool call!!!" Once a call
    of one of these tools changed an order, any later call of that tool on that order breaks
    the rule, whether the tool makes the change (a second change of a pending order's address
    or payment method: the final state shows only the last) or refuses it (a second exchange
    of an order already exchanged: the call was made, as the policy forbids). A call the tool
    refused before any change is no first call (a retry after a mistyped order id). Order ids
    are compared as text, folded and trimmed ("#w0000001 " is #W0000001)."""
    first: dict[tuple[str, str], int] = {}
    for event in trace:
        if not isinstance(event, ToolCallEvent) or event.tool not in ONCE_PER_ORDER:
            continue
        if not isinstance(event.args, dict):
            continue
        order = event.args.get("order_id")
        key = (event.tool, " ".join(fold(str(order)).split()))
        if key in first:
            again = "again" if event.ok else "again (the tool refused it)"
            problem = (
                f"step {event.step} ({event.tool}) changes order {order} {again}, after step"
                f" {first[key]}"
            )
            return False, {"problems": [problem], "offending_step": event.step}
        if event.ok:
            first[key] = event.step
    return True, {}


def cancel_reason_confirmed(trace: list[AgentEvent], s0: Any) -> Evidence:
    """A cancellation records the reason its confirmation stated, in any words, and the
    question stated no other.

    Policy: "The user needs to confirm the order id and the reason (either 'no longer needed'
    or 'ordered by mistake')". The question is the one whose yes confirmed the call (as
    ``confirmed-cancel_pending_order`` finds it, which fails a call nothing confirmed), not
    the agent's last message ("Great, cancelling it now."): "... since you no longer need
    it" states the reason as well as "with the reason 'no longer needed'"."""
    for at, question in _confirming(trace, "cancel_pending_order").items():
        event = trace[at]
        if not isinstance(event, ToolCallEvent) or not isinstance(event.args, dict):
            continue
        text = normalise(question.text or "")
        said = sorted(reason for reason, words in REASON_WORDS.items() if affirms(words, text))
        recorded = event.args.get("reason")
        if said != [recorded]:
            stated = " and ".join(repr(r) for r in said) if said else "no reason"
            problem = (
                f"step {event.step} records {recorded!r}; the question it answers "
                f"(step {question.step}) stated {stated}"
            )
            return False, {"problems": [problem], "offending_step": event.step}
    return True, {}


def _confirming(trace: list[AgentEvent], tool: str) -> dict[int, MessageEvent]:
    """The question each call of *tool* was confirmed by (by its index in *trace*), as the
    policy's
    ``confirmed-<tool>`` constraint finds it (a yes to a question naming the order and
    asking this kind of change)."""
    rule = {"change": {"tool": tool, "ok": True}, "names": ["args.order_id"]}
    return confirming_questions(rule | {"asks": CONFIRMED_ASKS[tool]}, trace)


def items_confirmed(trace: list[AgentEvent], s0: Any) -> Evidence:
    """A return, exchange or item change was confirmed by a question naming its items.

    Policy: "The user needs to confirm the order id and the list of items to be returned"
    (an exchange and an item change: "confirm all the details are correct"). Each item is
    named by its id, or by its product name (a plural too) and, when the order has other
    items of that name the call leaves alone, an option value that tells it from them; each
    new item by its id or every option value it changes ("the desk lamp, in black"). Names and
    options are those the tools last showed (``get_order_details``, ``get_product_details``,
    ``get_item_details``); an item no tool described is named by its id. A call nothing
    confirmed is left to its ``confirmed-<tool>`` constraint."""
    items: dict[str, dict[str, Any]] = {}  # item id -> name and options, as last shown
    orders: dict[str, list[dict[str, Any]]] = {}  # order id -> its items, as last shown
    for event, question in _confirmed_calls(trace, ITEM_TOOLS):
        if question is not None:
            unnamed = _unnamed_items(normalise(question.text or ""), event.args, items, orders)
            if unnamed:
                return _unnamed(event, question, ", ".join(unnamed))
            left_out = _left_out_items(_answer(trace, question, event), event.args, items, orders)
            if left_out:
                problem = (
                    f"step {event.step} ({event.tool}) includes {', '.join(left_out)}; the "
                    f"user's answer to the question at step {question.step} left it out"
                )
                return False, {"problems": [problem], "offending_step": event.step}
        _learn(event.output, items, orders)
    return True, {}


def _confirmed_calls(
    trace: list[AgentEvent], tools: Iterable[str]
) -> Iterator[tuple[ToolCallEvent, MessageEvent | None]]:
    """Each successful call in *trace*, in order, with the question whose yes confirmed it
    when it is a call of one of *tools* with arguments (as ``confirmed-<tool>`` finds it),
    else None: the checks learn from every call's output and judge the confirmed ones."""
    questions = {at: q for tool in tools for at, q in _confirming(trace, tool).items()}
    for at, event in enumerate(trace):
        if isinstance(event, ToolCallEvent) and event.ok:
            question = questions.get(at) if isinstance(event.args, dict) else None
            yield event, question


def _unnamed(event: ToolCallEvent, question: MessageEvent, what: str) -> Evidence:
    problem = (
        f"step {event.step} ({event.tool}): the question it answers (step {question.step}) "
        f"does not name {what}"
    )
    return False, {"problems": [problem], "offending_step": event.step}


PAYMENT_TOOLS = ("modify_pending_order_payment", *ITEM_TOOLS)
"""The writes whose confirmation must name the payment method: the new one of an order, the
one a refund goes to, the one that pays or receives an exchange's or item change's price
difference (the policy: "the user must provide a payment method" for it, and the details
confirmed are the action's)."""
METHOD_WORDS = {"paypal": ("paypal",), "gift_card": ("gift card", "giftcard", "gift-card")}
"""How a person names a payment method by its kind; a credit card by "credit card", its
brand or its last four digits ("card" alone would be named by "gift card")."""
ORIGINAL = re.compile(
    r"\b(original|same) (payment|method|card|form of payment|account|paypal|gift card|credit card)"
    r"|\b(card|method|account) (that )?(you|it was|the order was) (originally )?(paid|used|bought"
    r"|ordered|purchased)"
)
"""How a person names the method an order was paid with: "the original payment method", "the
same card", "the card you paid with"."""


def payment_confirmed(trace: list[AgentEvent], s0: Any) -> Evidence:
    """A change of an order's payment method, a return, an exchange or an item change was
    confirmed by a question naming the method the call uses.

    Policy: "list the action details and obtain explicit user confirmation": a yes to the
    gift card does not license the credit card. A method is named by its id, or by its kind
    ("PayPal", "gift card", "credit card" or the card's brand or last four digits) and, when
    the user has other methods of that kind, the brand or last four digits that tell it apart;
    the order's original method also by "the original payment method". Methods
    are those ``get_user_details`` last showed; one it never showed is named by its id. A
    call nothing confirmed is left to its ``confirmed-<tool>`` constraint."""
    methods: dict[str, dict[str, Any]] = {}  # payment method id -> as last shown
    original: dict[str, str] = {}  # order id -> the method it was paid with
    for event, question in _confirmed_calls(trace, PAYMENT_TOOLS):
        if question is not None:
            method = str(event.args.get("payment_method_id"))
            first = original.get(str(event.args.get("order_id")))
            if event.tool == "modify_pending_order_payment":
                first = None  # the new method is never the original one
            if not _names_method(normalise(question.text or ""), method, methods, first):
                return _unnamed(event, question, f"the payment method {method}")
            answer = _answer(trace, question, event)
            picked = _picks_other_method(answer, method, methods, first)
            if picked is not None:
                problem = (
                    f"step {event.step} ({event.tool}) uses {method}; the user's answer to "
                    f"the question at step {question.step} picked {picked}"
                )
                return False, {"problems": [problem], "offending_step": event.step}
        _learn_methods(event.output, methods, original)
    return True, {}


def _answer(trace: list[AgentEvent], question: MessageEvent, change: ToolCallEvent) -> str:
    """The user's normalised words after *question*, before the agent spoke again or
    *change*: the answer that confirmed it."""
    said: list[str] = []
    after = False
    for event in trace:
        if event is question:
            after = True
        elif event is change:
            break
        elif after and isinstance(event, MessageEvent):
            if event.role != "user":
                break
            said.append(event.text or "")
    return reply_words(" ".join(said))


def _picks_other_method(
    answer: str,
    method_id: str,
    methods: dict[str, dict[str, Any]],
    first: str | None,
) -> str | None:
    """The other payment method the user's *answer* names (and does not turn down), when it
    does not name the call's: "Would you like it on your gift card or your PayPal?" "The
    gift card." licenses no refund to PayPal, though the question named PayPal."""
    if not answer or _names_method(answer, method_id, methods, first):
        return None
    for other in methods:
        if other != method_id and _names_method(answer, other, methods, None):
            return other
    return None


def _learn_methods(
    output: Any, methods: dict[str, dict[str, Any]], original: dict[str, str]
) -> None:
    if not isinstance(output, dict):
        return
    shown = output.get("payment_methods")
    if isinstance(shown, dict):
        methods.update({str(k): v for k, v in shown.items() if isinstance(v, dict)})
    history = output.get("payment_history")
    if isinstance(history, list) and history and isinstance(history[0], dict):
        paid = history[0].get("payment_method_id")
        if isinstance(output.get("order_id"), str) and isinstance(paid, str):
            original[output["order_id"]] = paid


def _names_method(
    text: str, method_id: str, methods: dict[str, dict[str, Any]], original: str | None
) -> bool:
    if mentions(text, method_id, chosen=True):
        return True
    kind = re.match(r"[a-z_]+_(?=\d)", method_id)
    if kind is not None and re.search(rf"\b{kind.group()}\d", text):
        return False  # it names another method of this kind by its id
    if method_id == original and ORIGINAL.search(text):
        return True
    method = methods.get(method_id)
    if method is None:
        return False
    source = method.get("source")
    details = [str(method[f]) for f in ("brand", "last_four") if method.get(f) is not None]
    words = METHOD_WORDS.get(str(source), ("credit card", *details))
    if not any(mentions(text, word, chosen=True) for word in words):
        return False
    others = [m for k, m in methods.items() if k != method_id and m.get("source") == source]
    telling = [
        str(method[f])
        for f in ("brand", "last_four")
        if method.get(f) is not None and any(m.get(f) != method[f] for m in others)
    ]
    return not others or any(mentions(text, value, chosen=True) for value in telling)


def _learn(
    output: Any, items: dict[str, dict[str, Any]], orders: dict[str, list[dict[str, Any]]]
) -> None:
    """Record the items a tool's output describes: an order's, a product's variants, an item."""
    if not isinstance(output, dict):
        return
    if isinstance(output.get("items"), list) and isinstance(output.get("order_id"), str):
        shown = [i for i in output["items"] if isinstance(i, dict) and "item_id" in i]
        orders[output["order_id"]] = shown
        for item in shown:
            items[str(item["item_id"])] = item
    variants = output.get("variants")
    if isinstance(variants, dict):
        for item_id, variant in variants.items():
            if isinstance(variant, dict):
                items[str(item_id)] = {"name": output.get("name")} | variant
    if "item_id" in output and isinstance(output.get("options"), dict):
        known = items.get(str(output["item_id"]), {})
        items[str(output["item_id"])] = {"name": known.get("name")} | output


def _call_items(
    args: dict[str, Any], orders: dict[str, list[dict[str, Any]]]
) -> tuple[list[str], list[dict[str, Any]]]:
    """The ids of the call's items (as text) and the other items of its order, as last
    shown: those whose id, as text, the call does not name (an id shown as the number
    1000000001 is the call's "1000000001")."""
    old = [str(i) for i in args.get("item_ids") or [] if i is not None]
    order = orders.get(str(args.get("order_id")), [])
    return old, [o for o in order if str(o.get("item_id")) not in old]


def _unnamed_items(
    text: str,
    args: dict[str, Any],
    items: dict[str, dict[str, Any]],
    orders: dict[str, list[dict[str, Any]]],
) -> list[str]:
    """The call's items and new items that *text* does not name, described for evidence."""
    old, others = _call_items(args, orders)
    new = [str(i) for i in args.get("new_item_ids") or [] if i is not None]
    unnamed: list[str] = []
    for position, item_id in enumerate(old):
        item = items.get(item_id, {})
        if not _names_item(text, item_id, item, others):
            unnamed.append(_described(item_id, item))
        if position < len(new) and not _names_new(text, new[position], items, item):
            unnamed.append("new " + _described(new[position], items.get(new[position], {})))
    return list(dict.fromkeys(unnamed))


def _left_out_items(
    answer: str,
    args: dict[str, Any],
    items: dict[str, dict[str, Any]],
    orders: dict[str, list[dict[str, Any]]],
) -> list[str]:
    """The call's items the user's normalised *answer* leaves out, described for evidence:
    each it turns down ("Yes, but not the kettle"), or, when it names some of the order's
    items ("Only the lamp", "Yes, the lamp"), each it does not name. A yes naming no item
    ("Yes, go ahead") leaves none out; "Both", "all of them" name every one."""
    old, others = _call_items(args, orders)
    if not answer or not old or re.search(r"\b(both|all|every|each)\b", answer):
        return []
    kept, left = parts_left_out(answer)

    def said(text: str, item: dict[str, Any]) -> bool:  # named, perhaps turned down
        forms = [f for form in _name_forms(item) for f in _number_forms(form)]
        return any(mentions(text, form) for form in forms)

    named = [i for i in old if _names_item(kept, i, items.get(i, {}), others)]
    turned_down = [
        i
        for i in old
        if said(left, items.get(i, {})) or (i not in named and said(kept, items.get(i, {})))
    ]
    picked = named or any(_names_item(kept, str(o.get("item_id")), o, []) for o in others)
    left_out = turned_down or ([i for i in old if i not in named] if picked else [])
    return list(dict.fromkeys(_described(i, items.get(i, {})) for i in left_out))


def _names_item(
    text: str, item_id: str, item: dict[str, Any], others: list[dict[str, Any]]
) -> bool:
    """Named by its id, or by its name or the name's last word ("the lamp" for a Desk Lamp),
    in the plural too, and, if some of the order's *others* (the items the call leaves alone)
    have that name, an option value that tells it from them."""
    if mentions(text, item_id, chosen=True):
        return True
    for form in _name_forms(item):
        if not any(mentions(text, said, chosen=True) for said in _number_forms(form)):
            continue
        alike = [o for o in others if form in _name_forms(o)]
        telling = {
            key: value
            for key, value in _options(item).items()
            if any(_options(other).get(key) != value for other in alike)
        }
        if not alike or any(_says_option(text, k, v) for k, v in telling.items()):
            return True
    return False


def _number_forms(name: str) -> list[str]:
    """A name in the singular and the plural: "lamp", "lamps"; "shoes", "shoe"."""
    if name.endswith("s") and not name.endswith("ss"):
        return [name, name[:-1]]
    return [name, name + "s", name + "es"]


def _name_forms(item: dict[str, Any]) -> list[str]:
    """An item's product name, and its last word, which a person says for it ("lamp")."""
    name = item.get("name")
    if not isinstance(name, str) or not name.split():
        return []
    return list(dict.fromkeys([normalise(name), normalise(re.split(r"[\s-]+", name)[-1])]))


def _names_new(
    text: str, item_id: str, items: dict[str, dict[str, Any]], old: dict[str, Any]
) -> bool:
    """Named by its id, or by every option value it changes from the item it replaces ("the
    red one" does not name a red T-shirt of another size)."""
    if mentions(text, item_id, chosen=True):
        return True
    before = _options(old)
    changed = {k: v for k, v in _options(items.get(item_id, {})).items() if before.get(k) != v}
    return bool(changed) and all(_says_option(text, k, v) for k, v in changed.items())


GENERIC_VALUES = frozenset({"yes", "no", "true", "false", "none", "n/a"})
"""Option values any question may say ("Please confirm with yes"): they name an option only
with its name ("waterproof: yes")."""


UNIT_WORDS = {
    "l": ("liter", "liters", "litre", "litres"),
    "ml": ("milliliter", "milliliters", "millilitre", "millilitres"),
    "ft": ("foot", "feet"),
    "inch": ("inches", "in"),
    "inches": ("inch", "in"),
    "gb": ("gigabytes",),
    "tb": ("terabyte", "terabytes"),
    "mm": ("millimeter", "millimeters", "millimetre", "millimetres"),
}
"""A measure's units and the words said for them ("1.5L", "1.5 liters")."""
_MEASURE = re.compile(r"(\d+(?:\.\d+)?)[ -]?([a-z]+)")


def _says_option(text: str, key: str, value: Any) -> bool:
    said = any(mentions(text, form, chosen=True) for form in _option_forms(str(value)))
    said = said or (normalise(key) == "size" and mentions(text, f"size {value}", chosen=True))
    return said and (normalise(str(value)) not in GENERIC_VALUES or mentions(text, str(key)))


def _option_forms(value: str) -> list[str]:
    """An option value as a person says it: as written, or a measure with its unit spelt out
    ("1.5 liters" for "1.5L")."""
    measure = _MEASURE.fullmatch(normalise(value))
    if measure is None:
        return [value]
    return [value, *(measure[1] + unit for unit in UNIT_WORDS.get(measure[2], ()))]


def _options(item: dict[str, Any]) -> dict[str, Any]:
    options = item.get("options")
    return options if isinstance(options, dict) else {}


def _described(item_id: str, item: dict[str, Any]) -> str:
    name = item.get("name")
    return f"item {item_id} ({name})" if isinstance(name, str) else f"item {item_id}"


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
