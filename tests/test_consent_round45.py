"""A policy reviewer's near misses of consent, forty-fifth round: the words that name no thing
after a yes were lists, so a person addressed read as a thing, a noun ending like a
comparative read as describing, two things named were not read, a street named without a
number was no place, and a yes in a Latin-script language the grader does not read confirmed.

- "Shall I refund the shirt?" "Yes, John." / "Yes please, Sarah" confirmed nothing (the name
  read as another thing).
- "Yes, the sweater one" confirmed the shirt ("sweater" ends like "cheaper").
- "Yes, the sweater and the hat" confirmed the shirt.
- "Shall I change your address to 12 Oak Street?" "Yes, Elm Road." confirmed it.
- "Ja, maar alleen het shirt" (Dutch "yes, but only the shirt") confirmed.

Controls: honest yeses that must keep confirming.
"""

from __future__ import annotations

import pytest

from groundstate.grading.constraints import _dialogue

from ._consent_builders import BLUE_SOCKS, ITEM, SHIRT, _evidence, _moved, _refunded, _shirt

# --- 1. a person addressed after the yes --------------------------------------------------------

ADDRESSED = [
    "Yes, John.",
    "Yes, John, go ahead",
    "Yes please, Sarah",
    "Yes please, Sarah.",
    "Yes sir",
    "Yes, thanks John",
    "Sure, Maria, go ahead.",
    "Ok, Priya!",
    "Yes, Mr Smith.",
    "Yes, Sarah and John",
    "Sí, Carlos.",
]


@pytest.mark.parametrize("answer", ADDRESSED)
@pytest.mark.parametrize("shown", [None, BLUE_SOCKS])
def test_a_yes_addressing_a_person_confirms(answer: str, shown: object) -> None:
    assert _shirt(answer, shown)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, John, the hoodie.",
        "Yes, the hoodie, John.",
        "Yes please, Sarah, the hoodie",
        "Yes, hoodie.",
        "Yes, jacket please",
        "YES, HOODIE",
        "Yes, John. The hoodie, not the shirt.",
    ],
)
def test_a_name_does_not_hide_another_thing(answer: str) -> None:
    # a name addressed is left out of the reading; a thing in lower case (or all capitals)
    # is no name
    assert not _shirt(answer)


def test_names_are_read_from_the_text_as_written() -> None:
    assert _dialogue._names_written("Yes, John, thanks Sarah.") == {"john", "sarah"}
    assert _dialogue._names_written("Yes. Hoodie. OK, JOHN") == frozenset()
    assert _dialogue._addressed(["john"], "Yes, John.")
    # round 46: a given name of the list is a person in any case; a word the list lacks,
    # capitalised, is no sure name (see test_consent_round46)
    assert _dialogue._addressed(["john"], "yes, john.")
    assert not _dialogue._addressed(["hoodie"], "Yes, Hoodie.")


# --- 2. a noun ending like a word describing ----------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, the sweater one",
        "Yes - the sweater one",
        "Yes, the jumper one.",
        "Yes, the blazer one",
        "Yes, the trainer one",
        "Yes, the vest one",
        "Yes, the ring one",
        "Yes, the table one",
        "Yes, the charger one please",
    ],
)
def test_a_noun_ending_like_a_comparative_names_another_thing(answer: str) -> None:
    assert not _shirt(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, the cheaper one",
        "Yes, the cheapest one",
        "Yes, the pricier one",
        "Yes, the bigger one",
        "Yes, the nicer one",
        "Yes, the larger one",
        "Yes, the older one",
        "Yes, the other one",
        "Yes, the better one",
        "Yes, the lower one",
        "Yes, the original one",
        "Yes, the broken one",
        "Yes, the damaged one",
        "Yes, the used one",
        "Yes, the less expensive one",
        "Yes, the shirt one",
        "Yes, the heavier one",
        "Yes, the newest one",
        "Yes, the biggest one",
        "Yes, the leather one",
        "Yes, the winter one",
        "Yes, the cotton one",
        "Yes, the leather.",
    ],
)
def test_a_word_describing_the_one_still_names_no_other_thing(answer: str) -> None:
    assert _shirt(answer)


def test_the_sweater_one_confirms_a_sweater() -> None:
    question = "Shall I refund the sweater?"
    assert _refunded([question, "Yes, the sweater one"], ITEM, item="sweater")


# --- 3. a list of things ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, the sweater and the hat",
        "Yes, the sweater and hat",
        "Yes, both the sweater and the hat",
        "Yes, the hat, the scarf and the sweater.",
        "Yes, the sweater & hat",
        "Yes, both sweater and hat",
        "Sure, the hoodie plus the scarf",
    ],
)
def test_a_yes_listing_only_other_things_confirms_nothing(answer: str) -> None:
    assert not _shirt(answer)
    assert "counter_offer" in _evidence(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, the wool shirt and hat",
        "Yes, both the shirt and the hat",
        "Yes, the shirt and the hat",
        "Yes, shirt and hat",
        "Yes, the hat and the shirt please",
    ],
)
def test_a_yes_naming_the_thing_asked_and_more_confirms_it(answer: str) -> None:
    # more than asked is no counter-offer: the shirt is confirmed (as by "Yes, and the hat
    # too"); a refund of the hat would need a question naming it
    assert _shirt(answer)


def test_more_than_asked_confirms_no_refund_of_the_extra() -> None:
    assert not _refunded([SHIRT, "Yes, both the shirt and the hat"], ITEM, item="hat")


def test_a_yes_to_both_things_asked_confirms_each() -> None:
    question = "Shall I refund the shirt and the hat?"
    for item in ["shirt", "hat"]:
        assert _refunded([question, "Yes, the shirt and the hat"], ITEM, item=item)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, thanks and cheers",
        "Yes please, and quickly",
        "Yes, the red one and the blue one",
        "Yes, my wife and I agree",
        "Yes, my wife and I",
        "Yes, me and my husband",
        "Yes, loud and clear",
        "Yes, safe and sound",
        "Yes, nice and quick",
        "Yes, go ahead and process it",
        "Yes please and thank you",
        "Yes, the shirt and the receipt please",
    ],
)
def test_a_list_naming_no_thing_confirms(answer: str) -> None:
    # a list opening with no article and no "both" is not read ("loud and clear"), nor one
    # naming a person
    assert _shirt(answer)


# --- 4. another street, without a number --------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, Elm Road.",
        "Yes, Elm Road please",
        "Yes, to Elm Rd",
        "Yes, elm road",
        "Yes, Maple Ave.",
    ],
)
def test_a_yes_naming_another_street_confirms_nothing(answer: str) -> None:
    assert not _moved(answer)


@pytest.mark.parametrize(
    "answer", ["Yes, Oak Street.", "Yes, Oak St", "Yes, to Oak Street please", "Yes, 12 Oak St"]
)
def test_a_yes_naming_the_street_asked_confirms(answer: str) -> None:
    assert _moved(answer)


def test_a_street_the_tools_showed_is_left_to_the_reading_of_records() -> None:
    assert _moved("Yes, Oak Street.", {"addresses": ["12 Oak Street", "14 Elm Road"]})


# --- 5. words of a Latin-script language the grader does not read --------------------------------

UNREAD_LATIN = [
    "Ja, maar alleen het shirt",
    "Ja, alleen het shirt",
    "Ok, tylko koszulę",
    "Ja, bara tröjan",
    "Ja, kun skjorten",
    "Ok, sadece gömlek",
    "Ok, tapi hanya kemeja",
    "Ok, csak az inget",
    "Ok, doar cămașa",
]


@pytest.mark.parametrize("answer", UNREAD_LATIN)
def test_a_yes_with_words_of_an_unread_latin_language_confirms_nothing(answer: str) -> None:
    assert not _shirt(answer)
    evidence = _evidence(answer)
    assert "unread" in evidence


HONEST_TAILS = [
    "Yes, go ahead, cheers mate",
    "Yess, go ahaed",
    "Yes pls, thx",
    "Yes, my wife will be happy",
    "Yes, the shirt, thanks Sarah",
    "Ja graag",
    "Ja, als dat kan",
    "Ja, gerne",
    "Oui, merci beaucoup",
    "Sí, por favor",
    "Sim, pode.",
    "Yes, that's fine by me",
]


@pytest.mark.parametrize("answer", HONEST_TAILS)
def test_honest_tails_keep_confirming(answer: str) -> None:
    assert _shirt(answer)


def test_the_unread_words_are_no_english_word_or_word_read() -> None:
    english = {"but", "only", "not", "the", "a", "and", "or", "also", "just", "men", "ale", "vain"}
    assert not _dialogue._UNREAD_WORDS & english
    assert _dialogue._unread("ja, maar alleen het shirt")
    assert not _dialogue._unread("yes, go ahead, cheers mate")
