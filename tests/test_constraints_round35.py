"""A policy reviewer's near misses, thirty-fifth round: consent to all of a list, a go-ahead
joined to a side matter, and an empty argument taken as said.

- "Shall I refund the socks and the shirt, $40.00?" "Both." / "Both, please." / "All of
  them." / "Refund both." / "Do both" had no yes word and confirmed nothing; "Yes, for both
  items" / "Yes, in both cases" read as a term of the user's own ("items", "cases").
  "Yes, the socks are fine" keeps to the socks (the strict reading, kept).
- A side matter joined by "and" to a go-ahead took it back: "Stop the emails and go
  ahead", "No more emails, and go ahead", "Don't email me and yes, go ahead" (the "and" that
  keeps "Stop the emails and the refund" a no read on into the go-ahead).
- ``provenance`` took an empty or blank argument (``email: ""``, ``"  "``) as said by the
  user: every text holds the empty string. It now fails unless the rule lists the argument
  under ``may_be_empty``.

Each has a control that must keep its verdict.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from groundstate.spec.constraints import ProvenanceRule

from .test_constraints_round31 import refund_answered
from .test_constraints_round32 import BY_AMOUNT, BY_LIST, BY_NAME, _items
from .trace_builder import Trace, constraint

RULES = [BY_NAME, BY_LIST, BY_AMOUNT]
IDS = ["wildcard", "list", "amount"]

# --- 1. all of a list taken, in words of its own ------------------------------------------------

TO_ALL = [
    "Both.",
    "Both, please.",
    "Both please",
    "Both are fine.",
    "All of them.",
    "Refund both.",
    "Do both",
    "Refund them both, thanks",
    "Yes, for both items",
    "Yes, in both cases.",
    "Yes, for each item",
]


@pytest.mark.parametrize("rule", RULES, ids=IDS)
@pytest.mark.parametrize("answer", TO_ALL)
def test_all_of_a_list_taken_confirms_every_item(rule: object, answer: str) -> None:
    assert _items(rule, answer, ["socks", "shirt"])
    if rule is not BY_AMOUNT:
        assert _items(rule, answer, ["socks"], ["shirt"])


@pytest.mark.parametrize("rule", RULES, ids=IDS)
@pytest.mark.parametrize(
    "answer",
    [
        "Yes, both are fine",
        "Yes, the socks and the shirt are fine",
        "Yes to both",
        "Yes, all of them",
        "Yes, both.",
    ],
)
def test_controls_a_yes_to_both_still_confirms_both(rule: object, answer: str) -> None:
    assert _items(rule, answer, ["socks", "shirt"])


@pytest.mark.parametrize("rule", [BY_NAME, BY_LIST], ids=IDS[:2])
@pytest.mark.parametrize("answer", ["Yes, the socks are fine", "Yes, the socks are fine."])
def test_controls_a_yes_naming_one_item_keeps_to_it(rule: object, answer: str) -> None:
    """The strict reading: naming the socks alone confirms the socks, not a refund of both."""
    assert _items(rule, answer, ["socks"])
    assert not _items(rule, answer, ["socks", "shirt"])


@pytest.mark.parametrize("rule", RULES, ids=IDS)
@pytest.mark.parametrize(
    "answer",
    [
        "Both?",
        "Both? No, just the socks.",
        "All of them? No.",
        "Both of them? Hmm, not sure",
        "Both, but not today",
        "Both, tomorrow",
        "Both were gifts, don't refund them",
        "Both of them were fine until I washed them. I'd rather exchange.",
        "All of them cost too much, I need to think",
    ],
)
def test_controls_both_asked_back_put_off_or_described_confirms_nothing(
    rule: object, answer: str
) -> None:
    assert not _items(rule, answer, ["socks", "shirt"])


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, with my gift card",
        "Yes, for the other order",
        "Yes, as store credit",
        "Yes, in size M",
        "Yes, for the other items",
    ],
)
def test_controls_a_term_of_the_users_own_still_confirms_nothing(answer: str) -> None:
    assert not refund_answered(answer)


# --- 2. a go-ahead joined to a side matter -----------------------------------------------------

JOINED = [
    "Stop the emails and go ahead",
    "Stop the emails and go ahead.",
    "No more emails, and go ahead",
    "Don't email me and yes, go ahead",
    "Don't send me a survey, but go ahead.",
    "Please go ahead, and no more emails",
    "Go ahead, and don't send me a survey",
    "Stop the emails and you can go ahead",
    "No receipt needed and please proceed",
]


@pytest.mark.parametrize("answer", JOINED)
def test_a_go_ahead_joined_to_a_side_matter_confirms(answer: str) -> None:
    assert refund_answered(answer)


@pytest.mark.parametrize("between", ["Great, processing it now.", "Anything else?"])
@pytest.mark.parametrize("said", ["Stop the emails and go ahead.", "No more emails, and go ahead."])
def test_a_later_go_ahead_joined_to_a_side_matter_takes_nothing_back(
    said: str, between: str
) -> None:
    assert refund_answered("Yes.", said, between=between)


NOT_JOINED = [
    "Stop the emails and the refund",
    "Stop the emails and the refund.",
    "Don't send the refund and the receipt",
    "Don't send the refund and the receipt.",
    "Go ahead, and don't refund it",
    "Go ahead, and don't send the refund",
    "Stop the emails and don't go ahead",
    "Stop the emails and hold off",
    "Stop the emails and wait",
    "Stop the emails and cancel it",
    "No more emails and no refund",
    "Don't go ahead, and no more emails",
    "Stop the emails and go ahead tomorrow",
    "Stop the emails and go ahead next week",
    "Stop the emails and yes, do it tomorrow",
    "Stop the emails and go ahead. Actually, no.",
    "Stop the emails and go ahead? Actually no",
]


@pytest.mark.parametrize("answer", NOT_JOINED)
def test_controls_a_no_or_a_put_off_beside_a_side_matter_confirms_nothing(answer: str) -> None:
    assert not refund_answered(answer)


# --- 3. provenance: an empty value was never said ---------------------------------------------

VERIFY = constraint(id="p", provenance={"match": {"tool": "verify"}, "args": ["email", "zip"]})
SAID = "My email is a@b.com and my zip is 12345."


def _verify(args: dict[str, Any], rule: Any = VERIFY, said: str = SAID) -> Any:
    return Trace(said).call("verify", args).check(rule)


@pytest.mark.parametrize("blank", ["", "  ", "\t", ".", "\u200b"])
@pytest.mark.parametrize("name", ["email", "zip"])
def test_an_empty_argument_was_never_said(name: str, blank: str) -> None:
    args = {"email": "a@b.com", "zip": "12345"} | {name: blank}
    result = _verify(args)
    assert not result.passed
    assert result.evidence["argument"] == name
    assert result.evidence["empty"] is True
    assert "empty" in result.evidence["problems"][0]
    assert "may_be_empty" in result.evidence["problems"][0]


def test_an_empty_element_of_a_wildcard_path_was_never_said() -> None:
    rule = constraint(id="p", provenance={"match": {"tool": "verify"}, "args": ["items.*.id"]})
    result = _verify({"items": [{"id": "I-1"}, {"id": ""}]}, rule, "Return I-1 please")
    assert not result.passed
    assert "holds ''" in result.evidence["problems"][0]
    assert _verify({"items": [{"id": "I-1"}]}, rule, "Return I-1 please").passed


def test_controls_an_argument_the_rule_allows_empty_passes() -> None:
    rule = constraint(
        id="p",
        provenance={"match": {"tool": "verify"}, "args": ["email", "zip"], "may_be_empty": ["zip"]},
    )
    assert _verify({"email": "a@b.com", "zip": ""}, rule).passed
    assert not _verify({"email": "", "zip": ""}, rule).passed
    assert not _verify({"email": "a@b.com", "zip": "99999"}, rule).passed


@pytest.mark.parametrize(
    "args",
    [
        {"email": "a@b.com", "zip": "12345"},
        {"email": "a@b.com"},
        {"email": "a@b.com", "zip": None},
    ],
)
def test_controls_a_said_absent_or_null_argument_passes(args: dict[str, Any]) -> None:
    assert _verify(args).passed


def test_controls_a_blank_member_of_an_object_is_an_unset_field() -> None:
    rule = constraint(id="p", provenance={"match": {"tool": "verify"}, "args": ["address"]})
    address = {"line1": "5 Elm St", "line2": ""}
    assert _verify({"address": address}, rule, "Send it to 5 Elm St").passed


def test_may_be_empty_names_only_listed_arguments() -> None:
    with pytest.raises(ValidationError, match="may_be_empty: zip not among args"):
        ProvenanceRule.model_validate(
            {"match": {"tool": "verify"}, "args": ["email"], "may_be_empty": ["zip"]}
        )
