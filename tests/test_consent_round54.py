"""A policy reviewer's near misses of consent, fifty-fourth round: a reply of one repeated
piece read in time, a word the conversation says as a noun's kind or a verb, a thing opening a
sentence before what a thing does, and a brand opening a sentence.

- "Yes, , , , ..." (99,000 characters) took minutes: the clause before a closing "only" was
  looked for after every comma, each look running over every mark to the end. Every reader
  of a conversation of one repeated piece ("Yes, ", ", ", "Sam, ", "Nike ", "\\n- ", ...)
  decides in time linear in its length now.
- "There is a grace period." (or "Prices rose last week.") ... "Shall I refund the hoodie?"
  "Yes, Grace" was a correction: a word between an article and a noun (no colour, size or
  stuff) names the noun's kind, and a word after a plural noun before a clause's end, a
  preposition, a time or an adverb is a verb; neither is an item. "the Rose candle" ... "Yes,
  the Rose" or "Yes, Rose" stays a correction (a capitalised word before a noun is a brand).
- "Shirt will ship separately." ... "Yes, Shirt" to the hoodie confirmed (round 53 read any
  word opening a sentence before a modal as a person's): before what a thing does ("will
  ship", "should arrive", "will be refunded") it is an item again; "Mark will process it",
  "Mark will not ship it" still name a person.
- Decided: a capitalised word opening a sentence before a verb a person does ("Nike handles
  returns", "Sam processes refunds") is a name: "Yes, Nike" confirms; before a noun ("Nike
  shirt arrived damaged") it is that noun's brand: "Yes, Nike" confirms the shirt and
  corrects another item ("Nike shoes are out of stock" ... "Yes, Nike" to the shirt).
"""

from __future__ import annotations

import time

import pytest

from groundstate.grading.constraints import _dialogue

from .test_consent_round53 import ORDER, SHIRT, _confirms, _corrects, _run

HOODIE = "Shall I refund the hoodie?"
BOTH = "I bought a shirt and a hoodie"

# --- 1. a reply or a message of one repeated piece --------------------------------------------

PIECES = ["Yes, ", ", ", "Sam, ", "ok ", "the shirt and ", "I bought a ", "Nike ", "\n- "]


@pytest.mark.parametrize("piece", PIECES)
def test_a_repeated_piece_is_read_in_linear_time(piece: str) -> None:
    """99,000 characters in the request, before the question and in the reply; thread CPU
    time of every reading together, with a wide bound (", " after a yes took minutes)."""
    text = piece * (99_000 // len(piece))
    started = time.thread_time()
    _run([text, SHIRT], "Yes")
    _run([BOTH, text + SHIRT], "Yes, Sam", ORDER)
    _run([BOTH, SHIRT], "Yes, " + text, ORDER)
    _run([BOTH, SHIRT], text)
    assert time.thread_time() - started < 12.0


def test_many_commas_after_a_yes_still_confirm() -> None:
    started = time.thread_time()
    _confirms([BOTH, SHIRT], "Yes, " + ", " * 49_000)
    assert time.thread_time() - started < 5.0


@pytest.mark.parametrize(
    ("answer", "confirms"),
    [
        ("Yes, the shirt only", True),
        ("Yes,   the shirt only please", True),
        ("Yes, the hoodie only", False),
        ("Yes, , , the hoodie only", False),
    ],
)
def test_a_closing_only_is_still_read(answer: str, confirms: bool) -> None:
    assert _run([BOTH, "Shall I refund the shirt and the hoodie?"], answer)[0] is confirms


# --- 2. a word said as a noun's kind or a verb --------------------------------------------------

KIND_OR_VERB = [
    ("Prices rose last week. " + HOODIE, "Rose"),
    ("prices rose sharply. " + HOODIE, "Rose"),
    ("Costs rose by 5%, sorry. " + HOODIE, "Rose"),
    ("Our prices rose. " + HOODIE, "Rose"),
    ("There is a grace period. " + HOODIE, "Grace"),
    ("You have a grace period of 30 days. " + HOODIE, "Grace"),
    ("the grace period applies, so " + HOODIE.lower(), "Grace"),
    ("We can mark it. " + HOODIE, "Mark"),
]


@pytest.mark.parametrize(("question", "name"), KIND_OR_VERB)
@pytest.mark.parametrize("shape", ["Yes, {}", "Yes {}!", "{}, yes", "Yes, thanks {}", "ok {}, yes"])
def test_a_word_said_as_a_kind_or_a_verb_is_no_item(question: str, name: str, shape: str) -> None:
    _confirms([BOTH, question], shape.format(name), item="hoodie")


@pytest.mark.parametrize(
    ("request_", "question", "answer"),
    [
        ("I bought a shirt and the Rose candle", SHIRT, "Yes, the Rose"),
        ("I bought a shirt and the Rose candle", SHIRT, "Yes, Rose"),
        ("I bought a shirt and a Rose candle", SHIRT, "Rose, yes"),
        ("I bought a shirt and a rose", SHIRT, "Yes, the rose"),
        ("I bought a shirt and a rose", SHIRT, "Yes, Rose"),
        (BOTH, "The shirt rose in price. " + HOODIE, "Yes, Shirt"),
        ("I bought the shirt instead of a hoodie and a hoodie", HOODIE, "Yes, Shirt"),
    ],
)
def test_an_item_of_that_name_is_still_a_correction(
    request_: str, question: str, answer: str
) -> None:
    item = "hoodie" if "hoodie" in question else "shirt"
    _corrects([request_, question], answer, item=item)


def test_the_places_a_word_is_a_kind_or_a_verb() -> None:
    words = _dialogue._item_words("Prices rose last week. There is a grace period.")
    assert "rose" not in words and "grace" not in words and "period" in words
    assert "olive" in _dialogue._item_words("I see an olive jacket")
    assert "shirt" in _dialogue._item_words("I bought a shirt and a hoodie")
    assert "shirt" in _dialogue._item_words("I want the shirt instead")
    assert "rose" in _dialogue._item_words("I bought a rose. Prices rose.")
    assert "shirt" in _dialogue._item_words("I bought a kids shirt.")
    # a lower-case brand where an item's phrase stands stays the item's
    assert "nike" in _dialogue._item_words("I see a shirt and a nike jacket")
    assert "nike" in _dialogue._item_words("I bought a nike jacket")


# --- 3. a thing opening a sentence before what a thing does ----------------------------------

THING_OPENING = [
    "Shirt will ship separately.",
    "shirt will ship separately.",
    "Shirt should arrive tomorrow.",
    "Good news! Shirt will be refunded separately.",
    "the shirt will ship separately.",
    "The shirt will ship separately.",
]


@pytest.mark.parametrize("said", THING_OPENING)
@pytest.mark.parametrize("answer", ["Yes, Shirt", "Shirt, yes", "Yes, thanks Shirt"])
def test_a_thing_opening_a_sentence_is_an_item(said: str, answer: str) -> None:
    _corrects(["I bought a hoodie", said, "ok", HOODIE], answer, item="hoodie")


@pytest.mark.parametrize(
    "said",
    [
        "Mark will process it.",
        "mark will call you.",
        "Mark will not ship it.",
        "Mark will be in touch.",
    ],
)
@pytest.mark.parametrize("answer", ["Yes, Mark", "Mark, yes"])
def test_a_person_opening_a_sentence_is_still_a_person(said: str, answer: str) -> None:
    _confirms([BOTH, said + " " + HOODIE], answer, item="hoodie")


# --- 4. a brand opening a sentence ------------------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "Nike handles returns.",
        "Nike processes returns within a week.",
        "Sam handles refunds.",
        "Nike shirt arrived damaged, I see.",
        "Nike shirt: arrived damaged.",
    ],
)
@pytest.mark.parametrize("answer", ["Yes, Nike", "Nike, yes", "Yes, Sam"])
def test_a_name_or_the_brand_asked_opening_a_sentence_confirms(said: str, answer: str) -> None:
    _confirms(["I bought a shirt", said + " " + SHIRT], answer)


@pytest.mark.parametrize(
    "said", ["Nike shoes are out of stock.", "Nike shoes arrived.", "I see Nike shoes too."]
)
@pytest.mark.parametrize("answer", ["Yes, Nike", "Nike, yes", "Yes, thanks Nike"])
def test_the_brand_of_another_item_opening_a_sentence_corrects(said: str, answer: str) -> None:
    _corrects(["I bought a shirt and shoes", said + " " + SHIRT], answer)


def test_a_long_message_of_kinds_and_verbs_is_read_in_linear_time() -> None:
    started = time.thread_time()
    for text in ("prices rose " * 8000, "a grace " * 12000, "Shirt will ship. " * 6000):
        assert len(_dialogue._item_words(text)) < 10
    assert time.thread_time() - started < 3.0
