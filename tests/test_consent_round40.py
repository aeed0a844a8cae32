"""A policy reviewer's near misses of consent, fortieth round: a yes to a question proposing
another amount than the change's, said in ways round 39 did not read.

- "Shall I refund $22 for the socks instead of the full $40?" "Yes." confirmed a refund of
  $40: an amount was read as turned down only when at most prepositions and articles stood
  between it and "instead of" / "rather than" / "not", so "the full", "the original", "your
  remaining", "only" or "the full price of" made the $40 proposed; nor was "as opposed to"
  or "in lieu of" read as turning anything down.
- "Shall I refund $22 for the socks (you paid $40)?" (or "..., which cost $40?") "Yes."
  confirmed a refund of $40: the aside telling what was paid was read as proposing it.
- "I can refund the socks: $22 now to your Visa, or $40 as store credit?" "The $22 one."
  confirmed a refund of $40 (as store credit, or to the Visa): the first option of the
  choice was read from the question's start, so it named the socks and both options held
  the change; the answer must pick the option naming the change's amount.
- "Shall I refund twenty-two dollars for the socks rather than forty dollars?" read "forty
  dollars" as proposed: amounts in words were counted even where turned down.

Each has a control that must keep its verdict.
"""

from __future__ import annotations

import pytest

from groundstate.grading.constraints._text import mentions, normalise

from .trace_builder import Trace, constraint


def _rule(names: list[str]) -> object:
    return constraint(
        id=f"confirm-refund-{len(names)}",
        confirmed={"change": {"tool": "refund", "ok": True}, "names": names, "asks": r"\brefund"},
    )


BY_AMOUNT = _rule(["args.item", "args.amount"])
BY_AMOUNT_AND_METHOD = _rule(["args.item", "args.amount", "args.method"])
BY_METHOD = _rule(["args.item", "args.method"])


def _refunded(
    question: str,
    amount: object,
    answer: str = "Yes.",
    rule: object = BY_AMOUNT,
    method: str = "Visa",
) -> bool:
    trace = Trace("Please help").agent(question).user(answer)
    args = {"item": "socks", "amount": amount, "method": method}
    return trace.call("refund", args).check(rule).passed  # type: ignore[arg-type]


# --- 1. an amount turned down with words describing it -----------------------------------------

DESCRIBED_DOWN = [
    "Shall I refund $22 for the socks instead of the full $40?",
    "Shall I refund $22 for the socks rather than the whole $40?",
    "Shall I refund $22 for the socks rather than the original $40?",
    "Shall I refund $22 for the socks instead of the entire $40?",
    "Shall I refund $22 for the socks instead of your remaining $40?",
    "Shall I refund $22 for the socks instead of the total of $40?",
    "Shall I refund $22 for the socks as opposed to $40?",
    "Shall I refund $22 for the socks in lieu of the $40?",
    "Shall I refund the socks for $22.00, not the full price of $40.00?",
    "Shall I refund the socks for $22, not the original purchase price of $40?",
]


@pytest.mark.parametrize("amount", [40, "$40.00"])
@pytest.mark.parametrize("question", DESCRIBED_DOWN)
def test_a_yes_confirms_no_refund_of_an_amount_turned_down(question: str, amount: object) -> None:
    assert not _refunded(question, amount)
    assert _refunded(question, 22)


def test_the_evidence_names_the_amount_proposed() -> None:
    trace = Trace("Please help").agent(DESCRIBED_DOWN[0]).user("Yes.")
    result = trace.call("refund", {"item": "socks", "amount": 40}).check(BY_AMOUNT)
    assert not result.passed
    assert "proposing the amount 22" in result.evidence["problems"][0]
    assert result.evidence["proposed_otherwise"]["answer_step"] == 2


@pytest.mark.parametrize(
    ("question", "amount"),
    [
        ("Shall I refund the full $40 for the socks?", 40),
        ("Shall I refund $40 for the socks rather than the $22 partial refund?", 40),
        ("Shall I refund $40 for the socks instead of only $22?", 40),
        ("Shall I refund $40 for the socks, not just $22?", 40),
        ("Shall I refund the original $40 for the socks instead of the $22 credit?", 40),
    ],
)
def test_controls_a_yes_to_the_amount_kept_confirms_it(question: str, amount: int) -> None:
    assert _refunded(question, amount)


def test_control_only_after_instead_of_turns_the_amount_down() -> None:
    assert not _refunded("Shall I refund $40 for the socks instead of only $22?", 22)


@pytest.mark.parametrize(
    ("text", "value", "kept"),
    [
        ("refund the socks, not only the shirt", "shirt", True),  # "not only ... but"
        ("refund the socks, not just the shirt", "shirt", True),
        ("refund the socks, not the original shirt", "shirt", False),
        ("refund to your visa, as opposed to your gift card", "gift card", False),
        ("refund to your visa, in lieu of the gift card", "gift card", False),
        ("refund to the visa instead of your original gift card", "gift card", False),
        ("you don't need the receipt", "receipt", True),  # a verb between: not turned down
    ],
)
def test_what_is_turned_down_in_a_question(text: str, value: str, kept: bool) -> None:
    assert mentions(normalise(text), value, chosen=True) is kept


# --- 2. an aside telling what was paid ---------------------------------------------------------

ASIDES = [
    "Shall I refund $22 for the socks (you paid $40)?",
    "Shall I refund $22 for the socks (originally $40)?",
    "Shall I refund $22 (the socks were $40) for the socks?",
    "Shall I refund $22 for the socks (their price was $40)?",
    "Shall I refund $22 for the socks (you paid $40, less an $18 restocking fee)?",
    "Shall I refund $22 for the socks, which cost $40?",
    "Shall I refund $22 for the socks, which you bought for $40?",
]


@pytest.mark.parametrize("amount", [40, "$40.00"])
@pytest.mark.parametrize("question", ASIDES)
def test_a_yes_confirms_no_refund_of_an_amount_in_an_aside(question: str, amount: object) -> None:
    assert not _refunded(question, amount)
    assert _refunded(question, 22)


@pytest.mark.parametrize(
    ("question", "amount"),
    [
        ("Shall I refund the socks ($40)?", 40),
        ("Shall I refund the socks (you paid $40)?", 40),
        ("Shall I refund $40 for the socks (the full price)?", 40),
        ("Shall I refund $40 for the socks (the amount you paid)?", 40),
        ("Shall I refund $40 for the socks, which you paid by Visa?", 40),
        ("Shall I refund $40 for the socks ($22 for the pair and $18 for shipping)?", 22),
    ],
)
def test_controls_an_aside_that_is_the_proposal_confirms(question: str, amount: int) -> None:
    assert _refunded(question, amount)


# --- 3. a choice answered by the amount --------------------------------------------------------

CHOICES = [
    "I can refund the socks: $22 now to your Visa, or $40 as store credit?",
    "For the socks, shall I refund $22 to your Visa, or $40 as store credit?",
    "Shall I refund the socks to your Visa for $22, or to store credit for $40?",
]
RULES = {"amount": BY_AMOUNT, "amount-method": BY_AMOUNT_AND_METHOD, "method": BY_METHOD}


@pytest.mark.parametrize("rule", RULES.values(), ids=RULES.keys())
@pytest.mark.parametrize("answer", ["The $22 one.", "$22 please.", "The twenty-two dollar one."])
@pytest.mark.parametrize("question", CHOICES)
def test_a_choice_picked_by_amount_confirms_only_that_amount(
    question: str, answer: str, rule: object
) -> None:
    assert not _refunded(question, 40, answer, rule, method="store credit")
    assert _refunded(question, 22, answer, rule, method="Visa")


@pytest.mark.parametrize("question", CHOICES)
def test_a_choice_picked_by_amount_confirms_no_other_amount_the_same_way(question: str) -> None:
    assert not _refunded(question, 40, "The $22 one.", BY_AMOUNT_AND_METHOD, method="Visa")


@pytest.mark.parametrize("answer", ["The $22 one.", "$22.", "$22 now."])
def test_a_choice_of_amounts_after_the_item_confirms_only_the_amount_picked(answer: str) -> None:
    question = "Shall I refund the socks, $22 now, or $40 later?"
    assert not _refunded(question, 40, answer)
    assert _refunded(question, 22, answer)


@pytest.mark.parametrize("question", CHOICES)
@pytest.mark.parametrize("answer", ["The $40 one.", "The store credit.", "$40 please."])
def test_controls_the_other_option_picked_confirms_it(question: str, answer: str) -> None:
    assert _refunded(question, 40, answer, BY_AMOUNT_AND_METHOD, method="store credit")
    assert not _refunded(question, 22, answer, BY_AMOUNT_AND_METHOD, method="Visa")


# --- 4. amounts in words, turned down --------------------------------------------------------

IN_WORDS = [
    "Shall I refund twenty-two dollars for the socks rather than forty dollars?",
    "Shall I refund twenty-two dollars for the socks instead of the full forty dollars?",
    "Shall I refund $22 for the socks, not the forty dollars you paid?",
    "Shall I refund $22 for the socks as opposed to forty dollars?",
]


@pytest.mark.parametrize("question", IN_WORDS)
def test_a_yes_confirms_no_refund_of_an_amount_in_words_turned_down(question: str) -> None:
    assert not _refunded(question, "$40.00")
    assert _refunded(question, "$22.00")


def test_control_an_amount_in_words_proposed_confirms() -> None:
    question = "Shall I refund forty dollars for the socks instead of twenty-two dollars?"
    assert _refunded(question, "$40.00")
    assert not _refunded(question, "$22.00")
