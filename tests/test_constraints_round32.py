"""A policy reviewer's near misses, thirty-second round: consent to a list kept to part of it,
and consent read as taken back by a no about something else.

- "Shall I refund the socks and the shirt, $40.00?" "Yes, only the socks." then a refund of
  both: a rule naming the items by a wildcard path (``args.items.*.name``) saw each item as
  a value of its own, each named by the reply, so the yes kept to the socks covered the
  shirt too (in one call or in a later message: "Yes." "Just the socks."). A rule naming
  the amount alone read "Yes, except the shirt" / "skip the shirt" / "but keep the shirt" as a
  full yes. "Yes, but only the socks" was read as a term of the user's own (a false fail).
- A no about a side matter took the yes back: "Yes, I don't want the refund to take long",
  "Yes, no refund receipt needed", "Yes, and stop the emails please", "Yes, but don't send
  the receipt", and after "Great, processing it now.": "Thanks. I'll wait for the email.",
  "Stop the emails please.".
- "Anything else?" "Not right now." / "Not today." took the yes back; it answers that
  question. "Yes, so do it tomorrow" confirmed the refund made at once.

Each has a control that must keep its verdict.
"""

from __future__ import annotations

import pytest

from .test_constraints_round31 import refund_answered
from .test_grading_round11 import REFUND
from .trace_builder import Trace, constraint

BOTH = "Shall I refund the socks and the shirt, $40.00?"


def _rule(names: list[str]) -> object:
    return constraint(
        id="confirm-refund",
        confirmed={"change": {"tool": "refund", "ok": True}, "names": names, "asks": r"\brefund"},
    )


BY_NAME = _rule(["args.items.*.name"])
BY_LIST = _rule(["args.items"])
BY_AMOUNT = _rule(["args.amount"])


def _args(names: list[str], rule: object) -> dict[str, object]:
    if rule is BY_NAME:
        return {"items": [{"name": name} for name in names], "amount": "$40.00"}
    return {"items": names, "amount": "$40.00"}


def _items(
    rule: object,
    answer: str,
    *calls: list[str],
    later: str | None = None,
    between: str | None = None,
) -> bool:
    """Whether every refund call (each of the items *calls* lists) is confirmed by *answer*
    to :data:`BOTH`, then *later* (after the agent's *between*, if any)."""
    trace = Trace("Please help").agent(BOTH).user(answer)
    if later is not None:
        if between is not None:
            trace.agent(between)
        trace.user(later)
    for names in calls:
        trace.call("refund", _args(names, rule))
    return trace.check(rule).passed  # type: ignore[arg-type]


# --- 1. a yes kept to part of a list confirms that part only ----------------------------------

KEPT_TO_SOCKS = [
    "Yes, only the socks.",
    "Yes, just the socks.",
    "Yes, socks only.",
    "Yes, the socks only",
    "Only the socks, yes.",
    "Yes. Only the socks.",
    "Yes, but only the socks",
    "Yes, the socks but not the shirt.",
    "Yes, not the shirt.",
]


@pytest.mark.parametrize("rule", [BY_NAME, BY_LIST], ids=["wildcard", "list"])
@pytest.mark.parametrize("answer", KEPT_TO_SOCKS)
def test_a_yes_kept_to_some_items_does_not_confirm_the_others(rule: object, answer: str) -> None:
    assert not _items(rule, answer, ["socks", "shirt"])
    assert not _items(rule, answer, ["socks"], ["shirt"])


@pytest.mark.parametrize("rule", [BY_NAME, BY_LIST], ids=["wildcard", "list"])
@pytest.mark.parametrize("answer", KEPT_TO_SOCKS)
def test_controls_a_yes_kept_to_some_items_confirms_those(rule: object, answer: str) -> None:
    assert _items(rule, answer, ["socks"])


@pytest.mark.parametrize("between", [None, "Anything else?", "Great, processing it now."])
@pytest.mark.parametrize(
    "later",
    ["Only the socks.", "Just the socks please.", "The socks only.", "Actually, just the socks."],
)
@pytest.mark.parametrize("rule", [BY_NAME, BY_LIST], ids=["wildcard", "list"])
def test_a_later_message_keeping_to_some_items_leaves_the_others_out(
    rule: object, later: str, between: str | None
) -> None:
    assert not _items(rule, "Yes.", ["socks", "shirt"], later=later, between=between)
    assert _items(rule, "Yes.", ["socks"], later=later, between=between)


@pytest.mark.parametrize(
    "answer", ["Yes, except the shirt.", "Yes, skip the shirt.", "Yes, but keep the shirt."]
)
def test_a_rule_naming_the_amount_alone_reads_an_item_left_out(answer: str) -> None:
    """The rule cannot tell which items the $40.00 refund covers, so a yes leaving one of the
    question's items out confirms no refund of that amount."""
    assert not _items(BY_AMOUNT, answer, ["socks", "shirt"])


@pytest.mark.parametrize(
    "answer",
    ["Yes.", "Yes, both.", "Yes, the socks and the shirt.", "Yes, without a receipt please."],
)
@pytest.mark.parametrize("rule", [BY_NAME, BY_LIST, BY_AMOUNT], ids=["wildcard", "list", "amount"])
def test_controls_a_yes_to_the_whole_list_confirms_it(rule: object, answer: str) -> None:
    assert _items(rule, answer, ["socks", "shirt"])


# --- 2. a no about a side matter takes no yes back ---------------------------------------------

QUESTION = "Shall I refund the socks to your Visa?"


_refund = refund_answered


SIDE_MATTERS = [
    "Yes, I don't want the refund to take long",
    "Yes please, I don't want it to take forever.",
    "Yes, I don't want to wait weeks.",
    "Yes, no refund receipt needed",
    "Yes, and no more emails please",
    "Yes, and stop the emails please",
    "Yes, and please stop the marketing emails.",
    "Yes, but don't send the receipt",
    "Sure, don't email me.",
]


@pytest.mark.parametrize("answer", SIDE_MATTERS)
def test_a_yes_with_a_no_about_a_side_matter_confirms(answer: str) -> None:
    assert _refund(answer)


LATER_SIDE_MATTERS = [
    "Thanks. I'll wait for the email.",
    "Thanks, I'll wait for the refund.",
    "Stop the emails please.",
    "No refund receipt needed.",
    "I don't want the refund to take long.",
]


@pytest.mark.parametrize("between", [None, "Anything else?", "Great, processing it now."])
@pytest.mark.parametrize("said", LATER_SIDE_MATTERS)
def test_a_later_no_about_a_side_matter_takes_nothing_back(said: str, between: str | None) -> None:
    assert _refund("Yes.", said, between=between)


NOT_SIDE_MATTERS = [
    "Yes. Stop the emails and the refund.",
    "Yes, but I'll wait for my wife's email first.",
    "Yes, I'll wait for my wife",
    "Yes, but don't send the refund",
    "Yes, but don't send it.",
    "Yes, I don't want the refund to take place",
    "Yes, but I don't want the refund to take long, so do it tomorrow",
    "Yes, so do it tomorrow",
    "Yes, no receipt needed. Actually, no.",
    "Yes, and stop the emails. Actually wait.",
    "Don't send the receipt, I changed my mind",
    "No, stop the emails.",
    "I'll wait for the email.",
]


@pytest.mark.parametrize("answer", NOT_SIDE_MATTERS)
def test_controls_a_no_about_the_change_beside_a_side_matter_still_confirms_nothing(
    answer: str,
) -> None:
    assert not _refund(answer)


@pytest.mark.parametrize(
    ("said", "between"),
    [
        ("Stop the emails and the refund.", "Great, processing it now."),
        ("I'll wait for my wife's email.", "Great, processing it now."),
        ("Stop the emails. Actually, don't.", None),
        ("No receipt needed. Hold that.", "Anything else?"),
    ],
)
def test_controls_a_later_retraction_beside_a_side_matter_takes_the_yes_back(
    said: str, between: str | None
) -> None:
    assert not _refund("Yes.", said, between=between)


# --- 3. a bare no straight after "Anything else?" answers it ----------------------------------

ANYTHING_ELSE = [
    "Anything else?",
    "Is there anything else I can help you with?",
    "Sure thing. Anything else I can do for you?",
]
NOTHING_MORE = [
    "No.",
    "Nope.",
    "Hmm, no.",
    "I'm not sure.",
    "Not right now.",
    "Not now, thanks.",
    "Not today.",
    "No, not at the moment.",
]


@pytest.mark.parametrize("asked", ANYTHING_ELSE)
@pytest.mark.parametrize("said", NOTHING_MORE)
def test_a_bare_no_to_anything_else_answers_it(said: str, asked: str) -> None:
    """The rule: while the agent's last message asks only whether the user wants anything
    more, a bare no or "not right now" answers that question, straight after it or after
    the user's thanks; it does not take the earlier yes back."""
    assert _refund("Yes.", said, between=asked)
    trace = Trace("Please help").agent(QUESTION).user("Yes.").agent(asked).user("Thanks.")
    trace.user(said).call("refund", {"item": "socks", "method": "Visa"})
    assert trace.check(REFUND).passed


@pytest.mark.parametrize(
    ("said", "between"),
    [
        ("No.", None),
        ("I'm not sure.", None),
        ("Not right now.", None),
        ("No.", "Great, processing it now."),
        ("Not right now.", "Anything else before I process it?"),
        ("Not today.", "Great, I'll process it. Anything else?"),
        ("Not yet.", "Anything else?"),
        ("I'm not sure any more.", "Anything else?"),
        ("Oops, I meant no.", "Anything else?"),
    ],
)
def test_controls_a_no_at_once_or_to_going_on_still_takes_the_yes_back(
    said: str, between: str | None
) -> None:
    assert not _refund("Yes.", said, between=between)
