"""A policy reviewer's near misses of consent, forty-second round: a yes naming another thing.

"Shall I refund the socks?" "Yes, the shirt." confirmed the socks' refund unless a tool had
listed the shirt beside them. A yes naming only a thing (a phrase after an article ending
its sentence) whose last word the question, the change's values and the tools' outputs do
not say, and that is no generic word ("the full amount", "the usual card"), no way of
paying, no kind of change and no time, now names another thing than the question's.
Controls: honest yeses that must keep confirming.
"""

from __future__ import annotations

import pytest

from ._consent_builders import ALL, AMOUNT_METHOD, BLUE_SOCKS, ITEM, ITEM_METHOD, ORDER, _refunded

QUESTION = "Shall I refund the socks?"


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, the shirt.",
        "Yes, the shirt please.",
        "Yes please, the shirt.",
        "Sure, refund the shirt.",
        "Yes, just the shirt.",
        "Yes, the shirt instead.",
        "Yes, the shirt, thanks.",
        "Yes, the shirt, please go ahead.",
        "Yes, the red shirt.",
        "Yes, the hoodie.",
        "Yes, my jacket.",
        "Ok, the beanie then.",
        "The shirt, yes.",
        "Sí, la camisa.",
    ],
)
@pytest.mark.parametrize("shown", [None, BLUE_SOCKS])
def test_a_yes_naming_another_thing_confirms_no_refund_of_the_socks(
    answer: str, shown: object
) -> None:
    assert not _refunded([QUESTION, answer], ITEM, shown=shown)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, the shirt.",
        "Yes, the shirt please.",
        "Sure, refund the shirt.",
        "The shirt, yes.",
    ],
)
def test_the_shirt_is_confirmed_when_the_question_named_it(answer: str) -> None:
    question = "Shall I refund the shirt?"
    assert _refunded([question, answer], ITEM, item="shirt")
    assert not _refunded([question, answer], ITEM, item="socks")


@pytest.mark.parametrize(
    ("question", "rule"),
    [
        ("Shall I refund the socks to your Visa?", ITEM_METHOD),
        ("Shall I refund $22 for the socks to your Visa?", ALL),
        ("Shall I refund the socks from O-1001?", ORDER),
    ],
)
def test_another_thing_is_read_under_rules_naming_more(question: str, rule: object) -> None:
    assert not _refunded([question, "Yes, the shirt."], rule, order="O-1001")
    assert _refunded([question, "Yes, the socks please."], rule, order="O-1001")


HONEST = [
    "Yes, the sooner the better.",
    "Yes, the socks please.",
    "Yes, the socks, thanks.",
    "Yes, the socks, please go ahead.",
    "Yes, the full amount, thank you.",
    "Yes, the sock.",
    "Yes, the full amount.",
    "Yes, the whole amount please.",
    "Yes, the usual card.",
    "Yes, the one you said.",
    "Yes, the refund please.",
    "Yes, the pair I bought.",
    "Yes, the blue ones.",
    "Yes, the whole lot.",
    "Yes, the same.",
    "Yes, the usual way.",
    "Yes, the first one.",
    "Yes, the Visa.",
    "Yes, the store credit.",
    "Yes, the whole order.",
    "Yes, the entire purchase.",
    "Yes, my money back please.",
    "Yes, the faster the better.",
    "Yes, the rest too.",
    "Yes, the socks and the shirt too.",
    "Yes, the morning is fine.",
    "Yes.",
    "Yes, please go ahead.",
]


@pytest.mark.parametrize("answer", HONEST)
@pytest.mark.parametrize("shown", [None, BLUE_SOCKS])
def test_honest_yeses_keep_confirming(answer: str, shown: object) -> None:
    assert _refunded([QUESTION, answer], ITEM, shown=shown)


def test_a_detail_the_tools_showed_names_the_socks() -> None:
    assert _refunded([QUESTION, "Yes, the blue."], ITEM, shown=BLUE_SOCKS)
    assert _refunded([QUESTION, "Yes, the blue pair."], ITEM, shown=BLUE_SOCKS)


def test_a_word_of_the_changes_value_names_it() -> None:
    question = "Shall I refund the Wool Socks 3-pack?"
    for answer in ["Yes, the pack.", "Yes, the wool ones.", "Yes, the socks."]:
        assert _refunded([question, answer], ITEM, item="Wool Socks 3-pack")
    assert not _refunded([question, "Yes, the scarf."], ITEM, item="Wool Socks 3-pack")


def test_a_rule_naming_no_thing_reads_no_other_thing() -> None:
    # the change's values are an amount and a way of paying: the yes names what they are for
    question = "Shall I refund $22 to your Visa?"
    assert _refunded([question, "Yes, the socks please."], AMOUNT_METHOD)
    assert _refunded([question, "Yes, the shirt."], AMOUNT_METHOD, item="shirt")


def test_a_later_plain_yes_to_the_socks_confirms_again() -> None:
    dialogue = [QUESTION, "Yes, the shirt.", "Just to be sure: shall I refund the socks?", "Yes."]
    assert _refunded(dialogue, ITEM)
