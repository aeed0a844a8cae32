"""The builders the consent rounds' tests share (``test_consent_round*``): a consent question,
the user's reply and the change after it, checked by a ``confirmed`` rule.

The round files import what they use from here (and so still hold it, for a later round that
imports it from them).
"""

from __future__ import annotations

from .test_grading_round11 import REFUND
from .trace_builder import Trace, constraint

# --- the socks to the Visa, under the retail rule (rounds 37 to 39) ---------------------------

SOCKS_TO_VISA = "Shall I refund the socks to your Visa?"


def _socks(answer: str, question: str = SOCKS_TO_VISA) -> bool:
    trace = Trace("Please help").agent(question).user(answer)
    return trace.call("refund", {"item": "socks", "method": "Visa"}).check(REFUND).passed


# --- a refund under a rule naming some of its arguments (rounds 41 on) ------------------------


def _rule(*names: str) -> object:
    return constraint(
        id=f"confirm-refund-{len(names)}",
        confirmed={
            "change": {"tool": "refund", "ok": True},
            "names": [f"args.{name}" for name in names],
            "asks": r"\brefund",
        },
    )


ITEM = _rule("item")
ITEM_METHOD = _rule("item", "method")
ITEM_AMOUNT = _rule("item", "amount")
AMOUNT_METHOD = _rule("amount", "method")
ALL = _rule("item", "amount", "method")
ORDER = _rule("order_id", "item")


def _refunded(
    dialogue: list[str],
    rule: object,
    *,
    item: str = "socks",
    amount: object = 22,
    method: str = "Visa",
    order: str | None = None,
    shown: object = None,
) -> bool:
    """Whether a refund after *dialogue* (agent and user in turn, the agent first) passes."""
    trace = Trace("Please help")
    if shown is not None:
        trace.call("list_orders", {}, shown)
    for at, text in enumerate(dialogue):
        (trace.agent if at % 2 == 0 else trace.user)(text)
    args: dict[str, object] = {"item": item, "amount": amount, "method": method}
    if order is not None:
        args["order_id"] = order
    return trace.call("refund", args).check(rule).passed  # type: ignore[arg-type]


BLUE_SOCKS = {"orders": [{"order_id": "O-1001", "items": [{"name": "socks", "colour": "blue"}]}]}
"""A tool's output showing the socks blue."""

SHIRT = "Shall I refund the shirt?"


def _shirt(answer: str, shown: object = None, question: str = SHIRT) -> bool:
    return _refunded([question, answer], ITEM, item="shirt", shown=shown)


def _evidence(answer: str, question: str = SHIRT) -> dict[str, object]:
    """The evidence of the failing check of a refund of the shirt after *answer*."""
    trace = Trace("Please help").agent(question).user(answer)
    args = {"item": "shirt", "amount": 22, "method": "Visa"}
    result = trace.call("refund", args).check(ITEM)  # type: ignore[arg-type]
    assert not result.passed
    return result.evidence


# --- an address change (rounds 44 on) ---------------------------------------------------------

ADDRESS = constraint(
    id="confirm-address",
    confirmed={
        "change": {"tool": "modify_address", "ok": True},
        "names": ["args.address"],
        "asks": r"\baddress",
    },
)
ADDRESS_QUESTION = "Shall I change your address to 12 Oak Street?"


def _moved(answer: str, shown: object = None) -> bool:
    trace = Trace("Please help")
    if shown is not None:
        trace.call("get_user", {}, shown)
    trace.agent(ADDRESS_QUESTION).user(answer)
    return trace.call("modify_address", {"address": "12 Oak Street"}).check(ADDRESS).passed
