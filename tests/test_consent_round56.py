"""A policy reviewer's near misses of consent, fifty-sixth round: a person opening a sentence
before what a thing does, another item in a state of its own named in the question, and a
long reply of one short piece.

- "Mark will arrive shortly." ... "Shall I refund the hoodie?" "Yes, Mark" was a correction
  (as "Mark is on his way", "Mark has arrived", "Sam is on his way"): a word opening a
  sentence before what a thing does, or before "is", "has" or a verb with no modal, was read
  as an item. A subject opening a sentence is a person's when it is a given name (one that is
  a word, a brand or a thing as well too: "Mark", "Jordan", "Rose") or a person's pronoun
  takes it up in its clause ("... on his way"); a thing ("Shirt will arrive shortly", "Shirt
  is on its way") stays an item, and a name the conversation says as an item elsewhere ("I
  bought Jordan shoes") stays a correction.
- "The shirt is on backorder. Shall I refund the hoodie?" "Yes, the shirt" confirmed: only an
  item shipping, arriving or out of stock was another item of the question. An item in a
  state of its own (on backorder, damaged, lost, not eligible, final sale, already refunded,
  on its way) is another item too: a correction.
- A user's reply of 99,000 characters of "ok " or ", " cost 0.2 to 0.4 s for each `confirmed`
  constraint after the first: the reply was normalised again some twenty times for each (a
  text past 4,096 characters was kept by no memo). The last few long replies are kept now;
  the default yes and no patterns are searched once for all the constraints of a task.
"""

from __future__ import annotations

import time

import pytest

from groundstate.grading.constraints import evaluate_constraints

from .test_consent_round53 import _confirms, _corrects
from .trace_builder import Trace, constraint

HOODIE = "Shall I refund the hoodie?"
BOUGHT = "I bought a shirt and a hoodie"

# --- 1. a person opening a sentence before what a thing does -----------------------------------

A_PERSON_COMING = [
    "Mark will arrive shortly.",
    "Mark arrives shortly.",
    "Mark is on his way.",
    "Thanks! Mark's on his way.",
    "Mark has arrived.",
    "Mark should arrive soon.",
    "Mark will arrive in 10 minutes.",
    "mark will arrive shortly.",
    "Jordan will arrive shortly.",
    "Rose will arrive shortly, ok?",
    "Sam is on his way.",
    "John has arrived.",
    "Dash will come by and he will help.",
]


@pytest.mark.parametrize("said", A_PERSON_COMING)
@pytest.mark.parametrize("shape", ["Yes, {}", "{}, yes", "Yes, thanks {}"])
def test_a_person_coming_is_a_person(said: str, shape: str) -> None:
    name = said.removeprefix("Thanks! ").split()[0].split("'")[0].capitalize()
    for messages in ([BOUGHT, said + " " + HOODIE], ["I bought a hoodie", said, "ok", HOODIE]):
        _confirms(messages, shape.format(name), item="hoodie")


A_THING_COMING = [
    "Shirt will arrive shortly.",
    "Shirt arrives shortly.",
    "Shirt is on its way.",
    "Shirt has arrived.",
    "shirt should arrive soon.",
    "Shirt will arrive shortly and it will fit him.",
    "Shirt is on its way to him.",
]


@pytest.mark.parametrize("said", A_THING_COMING)
@pytest.mark.parametrize("answer", ["Yes, Shirt", "Shirt, yes", "Yes, the shirt"])
def test_a_thing_coming_is_still_an_item(said: str, answer: str) -> None:
    _corrects([BOUGHT, said + " " + HOODIE], answer, item="hoodie")
    _corrects(["I bought a hoodie", said, "ok", HOODIE], answer, item="hoodie")


@pytest.mark.parametrize(
    ("request_", "said", "name"),
    [
        ("I bought Jordan shoes and a hoodie", "Jordan will arrive shortly.", "Jordan"),
        ("I bought a hoodie", "Jordan shoes will arrive shortly.", "Jordan"),
        ("I bought a hoodie and the Rose candle", "Rose will arrive shortly.", "Rose"),
        ("I bought a hoodie", "Your Jordan sneakers shipped. Jordan will arrive.", "Jordan"),
    ],
)
def test_a_name_said_as_an_item_elsewhere_is_still_an_item(
    request_: str, said: str, name: str
) -> None:
    _corrects([request_, said + " " + HOODIE], f"Yes, {name}", item="hoodie")


# --- 2. another item in a state of its own named in the question -------------------------------

IN_A_STATE = [
    "The shirt is on backorder. " + HOODIE,
    "The shirt is currently backordered. " + HOODIE,
    "The shirt was already refunded. " + HOODIE,
    "The shirt isn't eligible. " + HOODIE,
    "The shirt is final sale. " + HOODIE,
    "the shirts are on their way. " + HOODIE,
    "Your shirt was lost in transit, so " + HOODIE.lower(),
    HOODIE + " The shirt is damaged.",
]


@pytest.mark.parametrize("question", IN_A_STATE)
@pytest.mark.parametrize("answer", ["Yes, the shirt", "Yes, the shirt.", "yes the shirt please"])
def test_another_item_in_a_state_in_the_question_corrects(question: str, answer: str) -> None:
    _corrects(["I bought a hoodie", question], answer, item="hoodie")


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("The shirt is on backorder. " + HOODIE, "Yes"),
        ("The shirt is on backorder. " + HOODIE, "Yes, the hoodie"),
        ("The hoodie is damaged. " + HOODIE, "Yes, the hoodie"),
        ("Your refund is delayed. " + HOODIE, "Yes, the refund"),
        ("Your refund will be returned to your card. " + HOODIE, "Yes, the card"),
        ("The label will arrive by email. " + HOODIE, "Yes, the label"),
        ("Your package will ship back free. " + HOODIE, "Yes, the package"),
        ("Your receipt was emailed. " + HOODIE, "Yes, the receipt"),
        ("Shall I refund the hoodie? Your refund policy allows it.", "Yes, policy"),
    ],
)
def test_a_word_of_the_question_about_the_change_still_confirms(question: str, answer: str) -> None:
    _confirms(["I bought a hoodie", question], answer, item="hoodie")


# --- 3. a long reply of one short piece, read for several constraints ---------------------------

RULES = [
    constraint(
        id=f"confirm-{at}",
        confirmed={"change": {"tool": "refund", "ok": True}, "names": ["args.item"]},
    )
    for at in range(6)
]


def _long_reply(answer: str) -> list:
    trace = Trace(BOUGHT)
    trace.agent(HOODIE)
    trace.user(answer)
    trace.call("refund", {"item": "hoodie", "amount": 22, "method": "Visa"})
    return trace.events


@pytest.mark.parametrize("piece", ["ok ", ", ", "| ", "Yes, ", "\n- ", '{"', "**", ": "])
@pytest.mark.parametrize("opening", ["", "Yes, "])
def test_a_long_reply_costs_little_for_each_further_constraint(piece: str, opening: str) -> None:
    events = _long_reply(opening + piece * (99_000 // len(piece)))
    started = time.process_time()
    one = evaluate_constraints(RULES[:1], events)
    first = time.process_time() - started
    started = time.process_time()
    every = evaluate_constraints(RULES, events)
    assert time.process_time() - started < first + 5 * 0.6  # each further one well under 0.6 s
    assert first < 5.0
    assert all(result.error is None for result in [*one, *every])
    assert {result.passed for result in every} == {one[0].passed}


# --- 4. a yes quoted in a question -------------------------------------------------------------

AMOUNT_RULE = constraint(
    id="confirm-amount",
    confirmed={"change": {"tool": "refund", "ok": True}, "names": ["args.item", "args.amount"]},
)
ASKED = "Shall I refund $32 for the hoodie?"


def _confirmed(answer: str, question: str = ASKED) -> bool:
    trace = Trace("I bought a hoodie")
    trace.agent(question)
    trace.user(answer)
    result = trace.call("refund", {"item": "hoodie", "amount": 32}).check(AMOUNT_RULE)
    assert result.error is None
    return result.passed


@pytest.mark.parametrize(
    "answer",
    [
        'Why did you write "yes, refund it"?',
        'What do you mean by "yes"?',
        'You wrote "go ahead" for me?',
        'Where did "yes, go ahead" come from?',
        'Did you say "yes"?',
        "did you say 'yes'?",
        "Who typed \u201cyes, please do\u201d here?",
    ],
)
def test_a_yes_quoted_in_a_question_is_no_yes(answer: str) -> None:
    assert not _confirmed(answer)


@pytest.mark.parametrize(
    "answer",
    [
        '"Yes, refund it."',
        'Yes, as you said, "go ahead".',
        'Yes. My answer is "yes".',
        'I say "yes"!',
        'Yes \u2014 why did you write "refund"?',
        "Yes, go ahead, it's the 'hoodie' one, isn't it?",
        'Yes, go ahead. Is "refund" the right word?',
        "yes",
    ],
)
def test_a_yes_of_ones_own_beside_a_quote_still_confirms(answer: str) -> None:
    assert _confirmed(answer)


@pytest.mark.parametrize(
    ("question", "answer"),
    [("Shall I refund $22 for the hoodie?", "yes"), (ASKED, "yes if it's free")],
)
def test_a_yes_to_another_amount_or_with_a_condition_is_no_yes(question: str, answer: str) -> None:
    assert not _confirmed(answer, question)


@pytest.mark.parametrize("piece", ['"a" ', '"yes"? ', "'", '"', "? "])
def test_a_long_reply_of_quotes_is_read_in_linear_time(piece: str) -> None:
    text = piece * (99_000 // len(piece))
    started = time.process_time()
    _confirmed("Yes, " + text)
    _confirmed(text)
    assert time.process_time() - started < 8.0
