"""A policy reviewer's near misses of consent, fifty-third round: a name the conversation says
as a verb, a brand inside a message, a brand only a tool's output gives, and an agent naming
itself in lower case.

- "I'll mark it as urgent." (or "mark will process it.") ... "Shall I refund the hoodie?"
  "Yes, Mark" was a correction: a word the conversation says only as a verb, or as a person
  opening a sentence before a modal, was read as an item. Where a message says a word after
  a subject, a modal, "to" or "please", before "it" or "them", or before a modal or a verb of
  saying opening a sentence, it says no item there.
- "I also bought Nike shoes" ... "Shall I refund the shirt?" "Yes, Nike." confirmed the shirt:
  a word capitalised inside a sentence was always a name. One directly before a noun (not a
  preposition, pronoun, adverb or verb: "Thanks Sam for waiting", "Sam will call") is an
  item's name now, the change's when that noun is one of its values ("the Nike shoes").
- {"brand": "Nike", "name": "shoes"} beside the shirt in a tool's output: "Yes, Nike." to the
  shirt confirmed. A word a named record of no value of the change shows as a detail, and no
  record of the change shows, is that record's: a correction.
- "sam here." / "this is sam from support." "Yes, Sam" was a correction: a self-introduction
  in lower case was not recognised.

Controls that must keep passing: names next to the yes in every position and case after an
agent naming itself; people named inside a sentence before a preposition, an adverb or a verb;
the item asked named by its brand; a customer's name in a record.
"""

from __future__ import annotations

import time

import pytest

from groundstate.grading.constraints import _dialogue

from .test_consent_round47 import _rule
from .trace_builder import Trace

SHIRT = "Shall I refund the shirt?"
SHIRT_REFUND = {"item": "shirt", "amount": 22, "method": "Visa"}


def _run(
    messages: list[str], answer: str, output: object = None, item: str = "shirt"
) -> tuple[bool, dict[str, object]]:
    """The refund of *item* after *messages* (the user's first, then the agent's and the
    user's in turn), an optional order lookup showing *output* first, and the user's
    *answer*."""
    trace = Trace(messages[0])
    if output is not None:
        trace.call("get_order", {"order_id": "O-1"}, output)
    for at, text in enumerate(messages[1:]):
        (trace.agent if at % 2 == 0 else trace.user)(text)
    trace.user(answer)
    refund = {**SHIRT_REFUND, "item": item}
    result = trace.call("refund", refund).check(_rule())  # type: ignore[arg-type]
    return result.passed, result.evidence


def _confirms(messages: list[str], answer: str, output: object = None, item: str = "shirt"):
    passed, evidence = _run(messages, answer, output, item)
    assert passed, (messages, answer, evidence)


def _corrects(messages: list[str], answer: str, output: object = None, item: str = "shirt"):
    passed, evidence = _run(messages, answer, output, item)
    assert not passed and "counter_offer" in evidence, (messages, answer, evidence)


# --- 1. a name the conversation says as a verb ------------------------------------------------

A_VERB_BEFORE = [
    ("I'll mark it as urgent. " + SHIRT, "Mark"),
    ("mark will process it. " + SHIRT, "Mark"),
    ("Mark will process it. " + SHIRT, "Mark"),
    ("Let me mark this as a priority. " + SHIRT, "Mark"),
    ("We'll mark your order as urgent. " + SHIRT, "Mark"),
    ("I need to mark the order first. " + SHIRT, "Mark"),
    ("I can bill your card today. " + SHIRT, "Bill"),
    ("I'll chase it up with the warehouse. " + SHIRT, "Chase"),
    ("We can grant an exception. " + SHIRT, "Grant"),
    ("To be frank, it is late. " + SHIRT, "Frank"),
    ("I'll mark it. we will mark it again. " + SHIRT, "Mark"),
]


@pytest.mark.parametrize(("question", "name"), A_VERB_BEFORE)
@pytest.mark.parametrize(
    "shape", ["Yes, {}", "Yes {}!", "{}, yes", "Yes, thanks {}", "Okay {}, yes"]
)
def test_a_word_said_only_as_a_verb_is_no_item(question: str, name: str, shape: str) -> None:
    _confirms(["Please help with my order", question], shape.format(name))


@pytest.mark.parametrize(
    ("request_", "question"),
    [
        ("I bought a shirt and a hoodie", "I'll mark it as urgent. Shall I refund the hoodie?"),
        ("I'll mark it, I bought a shirt and a hoodie", "Shall I refund the hoodie?"),
        ("I want to return the shirt and the hoodie", "Shall I refund the hoodie?"),
        ("Can you refund the shirt and hoodie?", "I will check. Shall I refund the hoodie?"),
    ],
)
@pytest.mark.parametrize("answer", ["Yes, Shirt", "Shirt, yes", "Yes, thanks Shirt"])
def test_an_item_said_as_one_elsewhere_is_still_a_correction(
    request_: str, question: str, answer: str
) -> None:
    _corrects([request_, question], answer, item="hoodie")


def test_the_places_a_word_is_said_as_a_verb() -> None:
    words = _dialogue._item_words("I'll mark it. mark will call. The shirt will ship. Bill it.")
    assert "mark" not in words and "bill" not in words and "shirt" in words
    assert "hoodie" in _dialogue._item_words("Hoodie it is!")
    assert "hoodie" in _dialogue._item_words("I'll refund the hoodie")


# --- 2. a brand inside a message ------------------------------------------------------------------

BRANDS = [
    ("I bought a shirt. I also bought Nike shoes", "Nike"),
    ("I bought a shirt and Adidas sneakers", "Adidas"),
    ("I ordered a shirt, and my Apple watch came too", "Apple"),
    ("I got a shirt and two Levi jeans", "Levi"),
]


@pytest.mark.parametrize(("request_", "brand"), BRANDS)
@pytest.mark.parametrize("shape", ["Yes, {}.", "{}, yes", "Yes, thanks {}", "Okay {}, yes"])
def test_a_brand_of_another_item_is_a_correction(request_: str, brand: str, shape: str) -> None:
    _corrects([request_, SHIRT], shape.format(brand))


@pytest.mark.parametrize(
    ("request_", "question", "answer", "item"),
    [
        (
            "I bought a shirt and Nike shoes",
            "Shall I refund the Nike shoes?",
            "Yes, Nike.",
            "shoes",
        ),
        ("I bought a Nike shirt and Adidas shoes", SHIRT, "Yes, Nike", "shirt"),
        ("I bought a Nike shirt", SHIRT, "Nike, yes", "shirt"),
    ],
)
def test_the_brand_of_the_item_asked_confirms(
    request_: str, question: str, answer: str, item: str
) -> None:
    _confirms([request_, question], answer, item=item)


PEOPLE_INSIDE = [
    "Thanks Sam for waiting. " + SHIRT,
    "I asked Sam yesterday. " + SHIRT,
    "My colleague Mark handles refunds. " + SHIRT,
    "My colleague Mark manages refunds. " + SHIRT,
    "Please let Mark know. " + SHIRT,
    "I spoke with Sam earlier, and " + SHIRT.lower(),
    "Ask Sam about it anytime. " + SHIRT,
    "I'll tell Sam everything. " + SHIRT,
    "Our agent Sam will call you. " + SHIRT,
    "Sam Lee from billing agreed. " + SHIRT,
    "Sam said it's fine. " + SHIRT,
    "I'll have Sam look into it. " + SHIRT,
    "Let me ask Sam whether we can. " + SHIRT,
    "Sam here 👋 " + SHIRT,
]


@pytest.mark.parametrize("question", PEOPLE_INSIDE)
@pytest.mark.parametrize("answer", ["Yes, Sam", "Sam, yes", "Yes, thanks Sam", "Yes, Mark"])
def test_a_person_named_inside_a_sentence_is_still_a_person(question: str, answer: str) -> None:
    _confirms(["I bought a shirt and a hoodie", question], answer)


def test_the_brands_a_message_writes() -> None:
    assert _dialogue._brands_of("I also bought Nike shoes") == {("nike", "shoes")}
    assert _dialogue._brands_of("Thanks Sam for waiting, Sam will call") == frozenset()
    assert _dialogue._brands_of("Nike shoes arrived") == frozenset()  # opens a sentence
    assert "nike" in _dialogue._item_words("I also bought Nike shoes")
    assert "sam" not in _dialogue._item_words("I asked Sam yesterday")


# --- 3. a brand only a tool's output gives --------------------------------------------------------

ORDER = {"items": [{"brand": "Nike", "name": "shoes"}, {"name": "shirt"}]}


@pytest.mark.parametrize(
    "answer", ["Yes, Nike.", "Nike, yes", "Yes, thanks Nike", "Okay Nike, yes", "Yes Nike!"]
)
def test_a_detail_of_another_record_is_a_correction(answer: str) -> None:
    _corrects(["Please help", SHIRT], answer, ORDER)


@pytest.mark.parametrize(
    ("output", "question", "answer"),
    [
        (
            {"items": [{"brand": "Nike", "name": "shoes"}, {"brand": "Nike", "name": "shirt"}]},
            SHIRT,
            "Yes, Nike.",
        ),
        ({"items": [{"brand": "Nike", "name": "shirt"}]}, SHIRT, "Nike, yes"),
        (ORDER, SHIRT, "Yes, Sam"),
        (ORDER, "Sam here. " + SHIRT, "Yes, Sam"),
        (
            {"order_id": "O-1", "customer_name": "Sam Lee", "items": [{"name": "shirt"}]},
            SHIRT,
            "Yes, Sam",
        ),
        (
            {"items": [{"name": "shoes", "agent": "Sam"}, {"name": "shirt"}]},
            "Sam here. " + SHIRT,
            "Sam, yes",
        ),
    ],
)
def test_a_detail_of_the_record_asked_or_a_person_confirms(
    output: object, question: str, answer: str
) -> None:
    _confirms(["Please help", question], answer, output)


# --- 4. an agent naming itself in lower case ------------------------------------------------------

LOWER_SELF_NAMED = [
    "sam here. " + SHIRT,
    "hi, sam here! " + SHIRT,
    "Hi! sam here. " + SHIRT,
    "sam here from the returns team. " + SHIRT,
    "this is sam from support. " + SHIRT,
    "this is sam with the returns team. " + SHIRT,
    "this is sam. " + SHIRT,
    "hello, this is sam here. " + SHIRT,
    "sam here 👋 " + SHIRT,
]


@pytest.mark.parametrize("question", LOWER_SELF_NAMED)
@pytest.mark.parametrize(
    "answer", ["Yes, Sam", "sam, yes", "Yes, sam", "Sam 👍 yes", "Yes, thanks Sam"]
)
def test_a_lower_case_self_introduction_names_the_agent(question: str, answer: str) -> None:
    _confirms(["Please help", question], answer)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("sam here. shall I?", {"sam"}),
        ("hi, sam here!", {"sam"}),
        ("this is sam from support.", {"sam"}),
        ("everything here is fine.", set()),
        ("more info here.", set()),
        ("i'm sorry from the bottom of my heart", set()),
        ("this is urgent from our side", set()),
    ],
)
def test_the_names_given_in_lower_case(text: str, names: set[str]) -> None:
    assert _dialogue._names_given(text) == names


@pytest.mark.parametrize(
    "request_", ["Hi Sam hope you're well. I bought a shirt", "Hey Sam quick question, a shirt"]
)
def test_a_name_the_user_greets_before_a_word_is_still_a_name(request_: str) -> None:
    _confirms([request_, SHIRT], "Yes, Sam")


def test_a_lower_case_self_introduction_does_not_hide_another_item() -> None:
    question = "shirt here from the returns. " + SHIRT.replace("shirt", "hoodie")
    _corrects(["I bought a shirt and a hoodie", question], "Shirt, yes", item="hoodie")


# --- 5. long messages -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "I'll mark it. " * 7000 + SHIRT,
        "I bought Nike shoes. " * 5000 + SHIRT,
        "sam here, " * 10000 + SHIRT,
        "this is sam from " * 6000 + SHIRT,
        "Nike " * 20000 + SHIRT,
        "mark will " * 10000 + SHIRT,
    ],
)
def test_a_long_agent_message_is_read_in_linear_time(question: str) -> None:
    """About 100,000 characters each; thread CPU time with a wide bound."""
    started = time.thread_time()
    _run(["I bought a shirt and a hoodie", question], "Yes, Nike")
    _run(["I bought a shirt and a hoodie", question], "Mark, yes", ORDER)
    assert time.thread_time() - started < 3.0


@pytest.mark.parametrize("answer", ["Yes, " + "Nike " * 20000, "Okay " + "Mark " * 20000 + ", yes"])
def test_a_long_reply_grades_in_linear_time(answer: str) -> None:
    started = time.thread_time()
    _run(["I bought a shirt. I also bought Nike shoes", SHIRT], answer, ORDER)
    assert time.thread_time() - started < 3.0
