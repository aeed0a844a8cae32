"""A policy reviewer's near misses of consent, forty-first round: a yes to another option of a
choice whose options share a value, a term restating the question, records the dialogue names
that no tool showed, a question about finding something out.

- "Shall I refund $22 to your Visa, or $22 as store credit?" "The Visa." confirmed the store
  credit: both options named the $22, so both were read as holding the change, and a pick of
  either confirmed it. Now the option picked must not name, in the place of one of the
  change's values another option names, another of its kind (a way of paying, an amount, a
  thing). "... to your Visa or as store credit?" was not split at "as" at all.
- "Shall I refund the socks to your Visa, or the shirt to your Visa?" "The shirt." confirmed
  the socks: the first option was cut at its last article ("your Visa").
- "Ja, als Gutschrift." to "Soll ich ... als Gutschrift erstatten?" was read as a condition
  (the Dutch "als", "if"), and "Yes, as store credit works for me." as a term of its own.
- "Shall I refund the socks ($22) and the shirt ($22)?" "Yes, the shirt." confirmed the
  socks: a list with prices beside its things was no list.
- "Shall I refund the socks from O-1001?" "Yes, O-1003." confirmed the refund from O-1001
  unless a tool had shown O-1003.
- "Do you want me to check whether the socks can be refunded?" "Yes." confirmed a refund.

Each has controls that must keep passing.
"""

from __future__ import annotations

import pytest

from ._consent_builders import (
    ALL,
    AMOUNT_METHOD,
    ITEM,
    ITEM_AMOUNT,
    ITEM_METHOD,
    ORDER,
    _refunded,
)

# --- 1. options sharing an amount, picked by the way of paying ---------------------------------

SHARED = [
    "Shall I refund $22 to your Visa, or $22 as store credit?",
    "For the socks, shall I refund $22 to your Visa, or $22 as store credit?",
    "Shall I refund $22 for the socks to your Visa, or $22 as store credit?",
    "For the socks, shall I refund $22 to your Visa or $22 to your gift card?",
]
VISA_PICKS = ["The Visa.", "Visa please.", "To the Visa.", "The first.", "Yes, the Visa."]
OTHER_PICKS = ["The {}.", "{} please.", "The {} one.", "The second one."]


def _other_method(question: str) -> str:
    return "gift card" if "gift card" in question else "store credit"


@pytest.mark.parametrize("answer", VISA_PICKS)
@pytest.mark.parametrize("question", SHARED)
def test_a_pick_of_the_visa_confirms_no_other_way_of_paying(question: str, answer: str) -> None:
    other = _other_method(question)
    assert not _refunded([question, answer], AMOUNT_METHOD, method=other)
    assert _refunded([question, answer], AMOUNT_METHOD, method="Visa")


@pytest.mark.parametrize("answer", OTHER_PICKS)
@pytest.mark.parametrize("question", SHARED)
def test_a_pick_of_the_other_way_confirms_no_refund_to_the_visa(question: str, answer: str) -> None:
    other = _other_method(question)
    answer = answer.format(other).capitalize()
    assert not _refunded([question, answer], AMOUNT_METHOD, method="Visa")
    assert _refunded([question, answer], AMOUNT_METHOD, method=other)


@pytest.mark.parametrize(
    "question",
    [
        "Shall I refund the socks to your Visa or as store credit?",
        "Shall I refund the socks to your Visa, your PayPal, or as store credit?",
        "Shall I refund the socks via Visa or via store credit?",
        "Shall I refund the socks by Visa or by store credit?",
    ],
)
def test_an_option_opening_with_as_via_or_by_is_an_option(question: str) -> None:
    assert not _refunded([question, "The Visa."], ITEM_METHOD, method="store credit")
    assert _refunded([question, "The Visa."], ITEM_METHOD, method="Visa")
    assert not _refunded([question, "Store credit."], ITEM_METHOD, method="Visa")
    assert _refunded([question, "Store credit."], ITEM_METHOD, method="store credit")


def test_a_pick_by_the_way_of_paying_confirms_no_other_amount_either() -> None:
    question = "Shall I refund $22 to your Visa, or $25 as store credit, for the socks?"
    assert not _refunded([question, "The Visa."], ALL, amount=25, method="store credit")
    assert not _refunded([question, "The Visa."], ALL, amount=25, method="Visa")
    assert _refunded([question, "The Visa."], ALL, amount=22, method="Visa")


@pytest.mark.parametrize("answer", ["Either is fine.", "Whichever.", "Up to you."])
def test_control_either_of_options_sharing_the_item_takes_any(answer: str) -> None:
    question = "Shall I refund $22 for the socks to your Visa, or $22 as store credit?"
    assert _refunded([question, answer], ALL, method="Visa")
    assert _refunded([question, answer], ALL, method="store credit")


def test_control_either_of_two_things_leaves_the_pick_to_the_agent() -> None:
    question = "Shall I refund the socks for $22, or the shirt for $22?"
    assert _refunded([question, "Either."], ITEM_AMOUNT)
    assert _refunded(["Shall I refund the socks or the shirt?", "Either."], ITEM)


@pytest.mark.parametrize(
    ("answer", "method", "passes"),
    [
        ("The Visa, not store credit.", "Visa", True),
        ("The Visa, not store credit.", "store credit", False),
        ("Yes, store credit please.", "Visa", False),
        ("Yes.", "Visa", False),  # a choice unmade
    ],
)
def test_controls_what_else_a_pick_says(answer: str, method: str, passes: bool) -> None:
    question = "Shall I refund $22 for the socks to your Visa, or $22 as store credit?"
    assert _refunded([question, answer], ALL, method=method) is passes


# --- 2. options sharing a way of paying or an amount, picked by the thing ----------------------

THINGS = [
    "Shall I refund the socks to your Visa, or the shirt to your Visa?",
    "Shall I refund the socks for $22, or the shirt for $22?",
    "Shall I refund the socks ($22) or the shirt ($22) to your Visa?",
    "Shall I refund the socks, $22, or the shirt, $22?",
    "Shall I refund the socks for $22 to your Visa, or the shirt for $22 to your Visa?",
]


@pytest.mark.parametrize("answer", ["The shirt.", "Shirt please.", "The second one."])
@pytest.mark.parametrize("question", THINGS)
def test_a_pick_of_the_shirt_confirms_no_refund_of_the_socks(question: str, answer: str) -> None:
    assert not _refunded([question, answer], ITEM)
    assert _refunded([question, answer], ITEM, item="shirt")


@pytest.mark.parametrize("answer", ["The socks.", "The first one.", "Socks please."])
@pytest.mark.parametrize("question", THINGS)
def test_controls_a_pick_of_the_socks_confirms_them(question: str, answer: str) -> None:
    assert _refunded([question, answer], ITEM)
    assert not _refunded([question, answer], ITEM, item="shirt")


# --- 3. a list with prices beside its things ---------------------------------------------------

PRICED_LISTS = [
    "Shall I refund the socks ($22) and the shirt ($22) to your Visa?",
    "Shall I refund the socks for $22 and the shirt for $22 to your Visa?",
    "Shall I refund the socks, $22, and the shirt, $22, to your Visa?",
    "Shall I refund the socks ($22), the shirt ($22) and the hat ($22) to your Visa?",
]


@pytest.mark.parametrize("answer", ["Yes, the shirt.", "Yes, refund the shirt."])
@pytest.mark.parametrize("question", PRICED_LISTS)
def test_a_yes_naming_one_priced_thing_confirms_no_other(question: str, answer: str) -> None:
    assert not _refunded([question, answer], ALL)
    assert _refunded([question, answer], ALL, item="shirt")


@pytest.mark.parametrize("answer", ["Yes.", "Yes, both.", "Yes, all of them.", "Yes please."])
@pytest.mark.parametrize("question", PRICED_LISTS)
def test_controls_a_yes_to_the_whole_priced_list(question: str, answer: str) -> None:
    assert _refunded([question, answer], ALL)
    assert _refunded([question, answer], ALL, item="shirt")


# --- 4. a term restating the question's ---------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, as store credit is fine.",
        "Yes, as store credit works for me.",
        "Yes, as store credit would be great.",
        "Yes, as store credit, thanks.",
        "As store credit is fine, yes.",
    ],
)
def test_a_yes_restating_the_way_proposed_confirms(answer: str) -> None:
    question = "Shall I refund $22 for the socks as store credit?"
    assert _refunded([question, answer], ALL, method="store credit")
    assert not _refunded([question, answer], ALL, method="Visa")


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, as store credit is fine.",
        "Yes, as store credit works for me.",
        "Yes, as store credit.",
        "Yes, as a gift card is fine.",
        "Yes, in store credit.",
    ],
)
def test_a_yes_naming_another_way_as_fine_confirms_nothing(answer: str) -> None:
    question = "Shall I refund $22 for the socks to your Visa?"
    assert not _refunded([question, answer], ITEM_AMOUNT, method="Visa")
    assert not _refunded([question, answer], ALL, method="Visa")


@pytest.mark.parametrize(
    ("question", "answer", "item", "method"),
    [
        (
            "Soll ich die Socken als Gutschrift erstatten?",
            "Ja, als Gutschrift.",
            "Socken",
            "Gutschrift",
        ),
        (
            "Soll ich die Socken als Gutschrift erstatten?",
            "Ja, als Gutschrift ist gut.",
            "Socken",
            "Gutschrift",
        ),
        (
            "Soll ich die Socken als Gutschrift erstatten?",
            "Ja, als Gutschrift passt.",
            "Socken",
            "Gutschrift",
        ),
        (
            "Shall I refund the socks to your Visa?",
            "Yes, to my Visa works for me.",
            "socks",
            "Visa",
        ),
    ],
)
def test_a_yes_restating_the_term_in_another_language_confirms(
    question: str, answer: str, item: str, method: str
) -> None:
    assert _refunded([question, answer], ITEM_METHOD, item=item, method=method)


@pytest.mark.parametrize(
    ("question", "answer", "item"),
    [
        (
            "Soll ich die Socken als Gutschrift erstatten?",
            "Ja, als es auf meine Visa geht.",
            "Socken",
        ),
        ("Soll ich die Socken auf Ihre Visa erstatten?", "Ja, als Gutschrift ist gut.", "Socken"),
        ("Zal ik de sokken terugbetalen op uw Visa?", "Ja, als het naar PayPal gaat.", "sokken"),
    ],
)
def test_controls_a_term_or_condition_of_its_own_confirms_nothing(
    question: str, answer: str, item: str
) -> None:
    assert not _refunded([question, answer], ITEM, item=item)


@pytest.mark.parametrize(
    ("answer", "method", "passes"),
    [
        ("Yes, as store credit is fine.", "store credit", True),
        ("Yes, as store credit is fine.", "Visa", False),
        ("As store credit is fine.", "store credit", True),
        ("As store credit is fine.", "Visa", False),
        ("Store credit is fine.", "Visa", False),
    ],
)
def test_a_restated_option_picks_it(answer: str, method: str, passes: bool) -> None:
    question = "Shall I refund $22 for the socks to your Visa or as store credit?"
    assert _refunded([question, answer], ALL, method=method) is passes


# --- 5. records the dialogue names that no tool showed -----------------------------------------

ONLY_OWN = [{"order_id": "O-1001", "items": [{"name": "socks"}]}]
BOTH_SHOWN = [{"order_id": "O-1001"}, {"order_id": "O-1003"}]


@pytest.mark.parametrize("shown", [None, ONLY_OWN, BOTH_SHOWN], ids=["none", "own", "both"])
@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Shall I refund the socks from O-1001?", "Yes, O-1003."),
        ("Shall I refund the socks from O-1001?", "Yes, from O-1003."),
        ("Shall I refund the socks from O-1001?", "Yes, order O-1003 please."),
        ("Shall I refund the socks from O-1001 and O-1003?", "Yes, O-1003."),
        ("Shall I refund the socks from O-1001 and O-1003?", "Yes, just O-1003."),
        ("Shall I refund the socks from O-1001 or from O-1003?", "O-1003."),
        (
            "I can refund the socks from O-1001, $22.00, to your Visa. Separately, should I"
            " cancel order O-1003?",
            "Yes.",
        ),
    ],
)
def test_a_yes_to_another_order_confirms_no_refund_from_this_one(
    question: str, answer: str, shown: object
) -> None:
    assert not _refunded([question, answer], ORDER, order="O-1001", shown=shown)


@pytest.mark.parametrize("shown", [None, ONLY_OWN], ids=["none", "own"])
@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Shall I refund the socks from O-1001?", "Yes, O-1001."),
        ("Shall I refund the socks from O-1001?", "Yes, thanks, that's order O-1001."),
        ("Shall I refund the socks from O-1001 and O-1003?", "Yes, both."),
        ("Shall I refund the socks from O-1001 or from O-1003?", "O-1001."),
        ("Shall I refund the socks from order #1001?", "Yes."),
        ("Shall I refund the socks from O-1001?", "Yes, and my number is AB-1234."),
    ],
)
def test_controls_a_yes_to_this_order_confirms(question: str, answer: str, shown: object) -> None:
    assert _refunded([question, answer], ORDER, order="O-1001", shown=shown)


# --- 6. a question about finding out ----------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "Do you want me to check whether the socks can be refunded?",
        "Would you like me to check if the socks can be refunded?",
        "Want me to find out how much I can refund for the socks?",
        "Would you like me to look up whether the socks qualify for a refund?",
        "Shall I quickly check whether I can refund the socks?",
    ],
)
def test_a_yes_to_finding_out_confirms_no_refund(question: str) -> None:
    assert not _refunded([question, "Yes."], ITEM)
    assert _refunded(
        [question, "Yes, and if they can, refund them.", "Shall I refund the socks?", "Yes."], ITEM
    )


# --- 7. a later yes to another way, asked as what would be better -------------------------------


def test_a_later_yes_to_a_better_way_takes_the_first_pick_back() -> None:
    dialogue = [
        "Shall I refund the socks to your Visa or as store credit?",
        "Visa.",
        "OK. Actually, would store credit be better?",
        "Sure.",
    ]
    assert not _refunded(dialogue, ITEM_METHOD, method="Visa")


# --- 8. controls: honest dialogues across the class ---------------------------------------------


@pytest.mark.parametrize(
    ("dialogue", "method"),
    [
        (["Shall I refund the socks?", "Sí, adelante."], "Visa"),
        (["Shall I refund the socks?", "Oui, allez-y."], "Visa"),
        (["Shall I refund the socks?", "Ja, gerne."], "Visa"),
        (["Shall I refund the socks to your Visa?", "Yes, via the Visa please."], "Visa"),
        (["Shall I refund the socks to your Visa?", "Yes, to the Visa is fine."], "Visa"),
        (
            ["Shall I refund the socks as store credit?", "Yes, as store credit, not to the Visa."],
            "store credit",
        ),
        (
            ["Shall I refund the socks to your Visa or as store credit?", "Whatever is quicker."],
            "Visa",
        ),
        (
            [
                "I could refund the socks to your Visa, or exchange them. What would you like?",
                "The refund please.",
            ],
            "Visa",
        ),
    ],
)
def test_controls_honest_consent_passes(dialogue: list[str], method: str) -> None:
    named = method.lower() in dialogue[0].lower()
    assert _refunded(dialogue, ITEM_METHOD if named else ITEM, method=method)


@pytest.mark.parametrize(
    "dialogue",
    [
        ["Shall I refund the socks?", "My wife says go ahead."],
        ["Shall I refund the socks?", "Yes, if the shirt can't be exchanged."],
        ["Shall I refund the socks?", "Yes.", "Great.", "Actually, hold off."],
        ["Shall I refund the socks as store credit?", "Yes, as store credit, not to the Visa."],
        ["Shall I refund the socks to your Visa, or $22 as store credit?", "Store credit."],
    ],
)
def test_controls_near_misses_still_fail(dialogue: list[str]) -> None:
    assert not _refunded(dialogue, ITEM_METHOD, method="Visa")


# --- 9. options worded unlike each other -----------------------------------------------------

RATHER = (
    "For the socks, shall I refund $22 to your Visa, or would you rather have $22 in store credit?"
)


@pytest.mark.parametrize(
    ("question", "answer", "method", "passes"),
    [
        (RATHER, "Visa please.", "Visa", True),
        (RATHER, "Store credit.", "store credit", True),
        (RATHER, "Store credit.", "Visa", False),
        (RATHER, "Visa please.", "store credit", False),
        (
            "Shall I refund the wool socks to your Visa, or the wool socks to your PayPal?",
            "PayPal.",
            "PayPal",
            True,
        ),
        (
            "Shall I refund the wool socks to your Visa, or the wool socks to your PayPal?",
            "PayPal.",
            "Visa",
            False,
        ),
        (
            "Shall I refund the socks in full to your Visa, or in part as store credit?",
            "In full.",
            "Visa",
            True,
        ),
        (
            "Shall I refund the socks in full to your Visa, or in part as store credit?",
            "In full.",
            "store credit",
            False,
        ),
    ],
)
def test_options_worded_unlike_each_other(
    question: str, answer: str, method: str, passes: bool
) -> None:
    item = "wool socks" if "wool" in question else "socks"
    rule = AMOUNT_METHOD if "$" in question else ITEM_METHOD
    assert _refunded([question, answer], rule, item=item, method=method) is passes


LONG_NAMES = (
    "Shall I refund the Lumen Headlamp ($35.00) and the Canopy Insulated Water Bottle ($29.00)"
    " to your Visa?"
)


@pytest.mark.parametrize(
    ("answer", "passes"),
    [
        ("Yes, the bottle and the headlamp.", True),
        ("Yes, refund the headlamp and the bottle.", True),
        ("Yes, the headlamp.", False),
        ("Yes, refund the headlamp.", False),
    ],
)
def test_a_priced_list_of_long_names(answer: str, passes: bool) -> None:
    item = "Canopy Insulated Water Bottle"
    assert _refunded([LONG_NAMES, answer], ITEM, item=item) is passes
