"""A policy reviewer's near misses of consent, fifty-fifth round: a plural standing before a
noun as its kind, a colour naming one of two items, another item on its way named in the
question, and a person arriving at a person's place.

- "I bought my kids shirt for school and a hoodie" ... "Shall I refund the hoodie?" "Yes,
  Shirt" confirmed: "shirt" after the plural "kids", before "for", was read as a verb
  ("prices rose for ..."). A plural that stands before a noun as its kind ("kids", "mens",
  "womens", "girls", ...) is followed by that noun, not a verb.
- "I bought an olive jacket and a navy jacket" ... "Shall I refund the navy jacket?" "Yes,
  Olive" confirmed: a colour alone names no thing. A colour, size or stuff alone that a
  message says before an item's noun, and the change's values do not, names that item: a
  correction. "Yes, Olive" where nothing is olive, or where the olive one is the one asked,
  still confirms.
- Decided: "The shirt will ship separately. Shall I refund the hoodie?" "Yes, the shirt"
  confirmed (round 52 read the question's words as about the change). A word the question
  says as an item shipping, arriving or out of stock, none of the change's values, is another
  item: a correction. "Yes, policy" to "your refund policy" still confirms.
- "Mark should arrive at the desk soon." ... "Yes, Mark" was a correction (round 54 read a
  word opening a sentence before what a thing does as an item): a person's place ("at the
  desk", "at reception") or help ("to help") after it names a person; "Shirt should arrive
  tomorrow" stays an item.
"""

from __future__ import annotations

import time

import pytest

from groundstate.grading.constraints import _dialogue

from .test_consent_round53 import _confirms, _corrects, _run

HOODIE = "Shall I refund the hoodie?"
NAVY = "Shall I refund the navy jacket?"
JACKETS = "I bought an olive jacket and a navy jacket"

# --- 1. a plural before a noun as its kind ----------------------------------------------------


@pytest.mark.parametrize(
    "request_",
    [
        "I bought my kids shirt for school and a hoodie",
        "I bought a hoodie and my kids shirt for school",
        "i bought my kids shirt, and a hoodie",
        "I got a mens shirt in May and a hoodie",
        "I bought a hoodie. Also the girls shirt.",
    ],
)
@pytest.mark.parametrize("answer", ["Yes, Shirt", "Shirt, yes", "Yes, the shirt"])
def test_a_noun_after_a_plural_kind_is_an_item(request_: str, answer: str) -> None:
    _corrects([request_, HOODIE], answer, item="hoodie")


@pytest.mark.parametrize(
    "said", ["Prices rose last week.", "prices rose sharply.", "Our prices rose by 5%."]
)
def test_a_verb_after_a_plural_is_still_no_item(said: str) -> None:
    _confirms(["I bought a shirt and a hoodie", said + " " + HOODIE], "Yes, Rose", item="hoodie")


def test_the_words_after_a_plural_kind() -> None:
    assert "shirt" in _dialogue._item_words("my kids shirt for school")
    assert "shirt" in _dialogue._item_words("a mens shirt.")
    assert "rose" not in _dialogue._item_words("Prices rose last week.")


# --- 2. a colour naming one of two items -------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    ["Yes, Olive", "Olive, yes", "yes, olive", "Yes, the olive one", "Yes, the olive!"],
)
@pytest.mark.parametrize(
    "request_",
    [
        JACKETS,
        "I bought a navy jacket and an olive jacket.",
        "i bought an olive jacket, and a navy jacket",
        "I bought an olive scarf and a navy jacket",
    ],
)
def test_a_colour_of_another_item_corrects(request_: str, answer: str) -> None:
    _corrects([request_, NAVY], answer, item="navy jacket")


@pytest.mark.parametrize(
    ("request_", "question", "item"),
    [
        (JACKETS, "Shall I refund the olive jacket?", "olive jacket"),
        ("I bought a shirt and a navy jacket", NAVY, "navy jacket"),
        ("I bought a navy jacket", NAVY, "navy jacket"),
        ("I bought an olive jacket", "Shall I refund the jacket?", "jacket"),
        ("I bought a navy jacket on Black Friday", NAVY, "navy jacket"),
    ],
)
@pytest.mark.parametrize("answer", ["Yes, Olive", "Olive, yes", "Yes, thanks Olive"])
def test_a_colour_of_no_other_item_confirms(
    request_: str, question: str, item: str, answer: str
) -> None:
    _confirms([request_, question], answer, item=item)


@pytest.mark.parametrize(
    ("request_", "answer"),
    [
        ("I'd like refunds for both items I bought, a navy jacket and a scarf", "Yes, both."),
        ("Both items arrived late. I bought a navy jacket", "Yes, both"),
        ("I have a new address and bought a navy jacket", "Yes, the new one."),
        ("All items are here. I bought a navy jacket", "Yes, all."),
        ("The other jacket is fine; I bought a navy jacket", "Yes, the other one"),
    ],
)
def test_a_count_or_which_one_is_no_colour_of_another_item(request_: str, answer: str) -> None:
    # merge review: "Yes, both." to a question about two refunds failed once "both items" had
    # been said (a word saying how many read as a colour of another item)
    _confirms([request_, NAVY], answer, item="navy jacket")


@pytest.mark.parametrize("piece", ["olive ", "an olive jacket and ", "Yes, olive ", ", "])
def test_a_repeated_piece_is_read_in_linear_time(piece: str) -> None:
    text = piece * (99_000 // len(piece))
    started = time.thread_time()
    for messages, answer in (
        ([text, NAVY], "Yes, Olive"),
        ([JACKETS, text + NAVY], "Yes, Olive"),
        ([JACKETS, NAVY], "Yes, " + text),
    ):
        _run(messages, answer, item="navy jacket")
    assert time.thread_time() - started < 5.0


# --- 3. another item on its way named in the question ------------------------------------------

ON_ITS_WAY = [
    "The shirt will ship separately. " + HOODIE,
    "Your shirt has already shipped, so " + HOODIE.lower(),
    "the shirt is out of stock. " + HOODIE,
    "Good news: the shirts arrived! " + HOODIE,
    HOODIE + " The shirt will not be dispatched.",
]


@pytest.mark.parametrize("question", ON_ITS_WAY)
@pytest.mark.parametrize("answer", ["Yes, the shirt", "Yes, the shirt.", "yes the shirt please"])
def test_another_item_on_its_way_in_the_question_corrects(question: str, answer: str) -> None:
    _corrects(["I bought a hoodie", question], answer, item="hoodie")


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("The hoodie will ship back free. " + HOODIE, "Yes, the hoodie"),
        ("Shall I refund the hoodie? Your refund policy allows it.", "Yes, policy"),
        ("Shall I refund the blue hoodie from the winter sale?", "Yes, the winter one"),
        ("The label will arrive by email. " + HOODIE, "Yes, the label"),
        ("The shirt will ship separately. " + HOODIE, "Yes"),
        ("The shirt will ship separately. " + HOODIE, "Yes, the hoodie"),
        ("Your package will ship back free. " + HOODIE, "Yes, the package"),
    ],
)
def test_a_word_of_the_question_about_the_change_still_confirms(question: str, answer: str) -> None:
    _confirms(["I bought a hoodie", question], answer, item="hoodie")


def test_a_long_question_of_items_on_their_way_is_read_in_linear_time() -> None:
    started = time.thread_time()
    for piece in ("shirt will ship ", "the shirt is ", "will ", "a b "):
        _run(["I bought a hoodie", piece * (99_000 // len(piece)) + HOODIE], "Yes, the shirt")
    assert time.thread_time() - started < 5.0


# --- 4. a person arriving at a person's place ---------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "Mark should arrive at the desk soon.",
        "mark will arrive at the front desk shortly.",
        "Mark will be at the counter soon!",
        "Mark will arrive shortly to help.",
        "Thanks. Mark should arrive at our office, ok?",
    ],
)
@pytest.mark.parametrize("answer", ["Yes, Mark", "Mark, yes", "Yes, thanks Mark"])
def test_a_person_arriving_at_a_persons_place_is_a_person(said: str, answer: str) -> None:
    _confirms(["I bought a shirt and a hoodie", said + " " + HOODIE], answer, item="hoodie")


@pytest.mark.parametrize(
    "said",
    [
        "Shirt should arrive tomorrow.",
        "Shirt will arrive at your door.",
        "shirt should arrive soon.",
        "Shirt will ship to the office.",
    ],
)
def test_a_thing_arriving_is_still_an_item(said: str) -> None:
    _corrects(["I bought a hoodie", said, "ok", HOODIE], "Yes, Shirt", item="hoodie")
