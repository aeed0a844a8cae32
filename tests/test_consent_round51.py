"""A policy reviewer's near misses of consent, fifty-first round: a word before the yes, a thing
after "thanks", and a closing no with no mark before it.

- "Shall I refund the hoodie?" "Sam, yes" was unread (and "sam, yes" another thing) when the
  conversation gave no name "Sam": the yes plainly answers. A word alone before the yes is now
  a person addressed, in any case, unless a message of the conversation, the question or a
  tool call's arguments name it and no value of the change does: then it is another item, a
  correction ("I bought a shirt and a hoodie" ... "Shirt, yes"). A yes of the reply's opening
  ("sure", "ok", "sí", "oui") after one word and a comma ("Sam, sure", "Oh, sí") is a yes.
- "Yes, thanks shirt" (and "yes thanks, shirt", "Yes thank you shirt") confirmed the hoodie:
  a thing after "thanks" was read as a person thanked. It is read as after the yes now; a name
  written capitalised there ("Yes, thanks Sam") is still a person thanked.
- "yes go ahead no that's all", "yes please no thats it thanks" took the yes back: a closing
  no was read only after a mark. After an emoji, or unmarked after a word ending a yes
  ("please", "ahead", "it", "thanks"...), it closes the conversation now ("thats", "im" too).

Controls that must stay not-consent: another item of the conversation before the yes, in any
case or punctuation; a thing after thanks; "yes no wait", "yes go ahead no don't", "yes
actually no that's all", a closing no going on or opening the reply.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest

from groundstate.grading.constraints import reply_words
from groundstate.spec.constraints import NO_PATTERN, YES_PATTERN

from .test_consent_round47 import _check, _rule
from .trace_builder import Trace

HOODIE = "Shall I refund the hoodie?"
BOTH_BOUGHT = "I bought a shirt and a hoodie, can you help?"


def _hoodie(
    answer: str, request: str = "Please help with my order"
) -> tuple[bool, dict[str, object]]:
    return _check(answer, HOODIE, item="hoodie", request=request)


def _confirms(answer: str, request: str = "Please help with my order") -> bool:
    return _hoodie(answer, request)[0]


# --- 1. a word before the yes ------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Sam, yes",
        "sam, yes",
        "Sam yes",
        "sam yes",
        "Sam: yes please",
        "Sam - yes",
        "Tariq, yes",
        "SAM, YES",
        "Sam, yes yes",
        "Sam 👍 yes",
        "Sam, yes please, go ahead",
        "Sam, sure",
        "Sam, ok",
        "Sam, sí",
        "Ana, oui",
        "Oh, sure",
    ],
)
def test_a_word_before_the_yes_the_conversation_does_not_name_is_a_person(answer: str) -> None:
    passed, evidence = _hoodie(answer)
    assert passed, evidence
    assert _confirms(answer, BOTH_BOUGHT)  # the conversation names a shirt, not Sam


@pytest.mark.parametrize(
    "answer",
    [
        "Shirt, yes",
        "shirt yes",
        "SHIRT, YES",
        "Shirt - yes",
        "Shirt: yes please",
        "shirt, yes please",
        "Shirts, yes",
        "shirt yes yes",
        "Shirt 👍 yes",
        "Shirt, sure",
        "shirt, ok",
        "Shirt, sí",
    ],
)
def test_another_item_of_the_conversation_before_the_yes_is_a_correction(answer: str) -> None:
    passed, evidence = _hoodie(answer, BOTH_BOUGHT)
    assert not passed
    assert "counter_offer" in evidence, evidence


def _in_trace(answer: str, trace: Trace) -> tuple[bool, dict[str, object]]:
    trace.agent(HOODIE).user(answer)
    result = trace.call("refund", {"item": "hoodie", "amount": 22, "method": "Visa"}).check(
        _rule()  # type: ignore[arg-type]
    )
    return result.passed, result.evidence


def _agent_names_both() -> Trace:
    return Trace("Help").agent("I see a shirt and a hoodie on order O-1.")


def _looked_up_a_shirt() -> Trace:
    return Trace("Help").call("get_item", {"name": "shirt"}, {"ok": True})


def _listed() -> Trace:
    output = {"items": [{"name": "shirt"}, {"name": "hoodie"}]}
    return Trace("Help").call("get_order", {"order_id": "O-1"}, output)


@pytest.mark.parametrize("trace", [_agent_names_both, _looked_up_a_shirt, _listed])
@pytest.mark.parametrize("answer", ["Shirt, yes", "shirt yes", "Yes, thanks shirt"])
def test_an_item_an_agent_message_a_call_or_an_output_names_is_a_correction(
    answer: str, trace: Callable[[], Trace]
) -> None:
    passed, evidence = _in_trace(answer, trace())
    assert not passed and "counter_offer" in evidence, evidence


def test_an_item_the_question_itself_names_before_the_yes_is_a_correction() -> None:
    question = "A shirt and a hoodie are eligible. Shall I refund the hoodie?"
    trace = Trace("Help").agent(question).user("Shirt, yes")
    result = trace.call("refund", {"item": "hoodie", "amount": 22, "method": "Visa"}).check(
        _rule()  # type: ignore[arg-type]
    )
    assert not result.passed and "counter_offer" in result.evidence, result.evidence


@pytest.mark.parametrize("trace", [_agent_names_both, _looked_up_a_shirt, _listed])
@pytest.mark.parametrize("answer", ["Sam, yes", "sam yes", "Hoodie, yes", "Yes, thanks Sam"])
def test_a_person_or_the_item_asked_next_to_the_yes_confirms_there_too(
    answer: str, trace: Callable[[], Trace]
) -> None:
    passed, evidence = _in_trace(answer, trace())
    assert passed, evidence


def test_a_customer_name_a_tool_showed_before_the_yes_confirms() -> None:
    output = {"customer": {"name": "Sam Lee"}, "items": [{"name": "hoodie"}]}
    trace = Trace("Help").call("get_order", {"order_id": "O-1"}, output)
    assert _in_trace("Sam, yes", trace)[0]


def test_a_name_the_agent_writes_in_its_question_is_no_item() -> None:
    trace = Trace("Help").agent("Thanks for waiting. Shall I refund the hoodie, Tariq?")
    trace.user("Tariq, yes")
    result = trace.call("refund", {"item": "hoodie", "amount": 22, "method": "Visa"}).check(
        _rule()  # type: ignore[arg-type]
    )
    assert result.passed, result.evidence


@pytest.mark.parametrize("answer", ["Refund, yes", "Visa, yes", "Hoodie, yes", "Okay, yes"])
def test_a_word_of_the_change_before_the_yes_still_confirms(answer: str) -> None:
    assert _confirms(answer, BOTH_BOUGHT)


@pytest.mark.parametrize(
    "answer", ["Sam, sure", "Oh, ok", "Ana, sí", "hmm, sure thing", "Sam, proceed"]
)
def test_an_opening_yes_after_one_word_and_a_comma_is_a_yes(answer: str) -> None:
    assert re.search(YES_PATTERN, reply_words(answer)) is not None


@pytest.mark.parametrize("answer", ["I sure do not", "Pretty sure", "I was sure", "Not sure"])
def test_an_opening_yes_word_inside_a_clause_is_no_yes(answer: str) -> None:
    assert re.search(YES_PATTERN, reply_words(answer)) is None


# --- 2. a thing after "thanks" -----------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, thanks shirt",
        "yes thanks shirt",
        "yes thanks, shirt",
        "Yes thank you shirt",
        "Yes, thanks shirt!",
        "YES THANKS SHIRT",
        "ok thanks shirt",
    ],
)
def test_a_thing_after_thanks_is_read_as_after_the_yes(answer: str) -> None:
    for request in ["Please help with my order", BOTH_BOUGHT]:
        passed, evidence = _hoodie(answer, request)
        assert not passed and "counter_offer" in evidence, (request, evidence)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, thanks!",
        "Yes, the hoodie please",
        "yes thanks so much",
        "Yes, thanks Hoodie",
        "yes thanks, hoodie",
        "Yes, thanks Sam",
        "Yes thank you, John",
        "yes thanks a lot",
        "Yes, thank you very much!",
        "Yes thanks 🙏",
        "Sí, gracias",
    ],
)
def test_thanks_and_the_item_asked_or_a_person_keeps_confirming(answer: str) -> None:
    passed, evidence = _hoodie(answer, BOTH_BOUGHT)
    assert passed, evidence


# --- 3. a closing no with no mark before it ----------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "yes go ahead no that's all",
        "yes please no thats it thanks",
        "yes please no that's everything",
        "sure go ahead nope all good",
        "yes do it no nothing else",
        "yes please nah thats it",
        "ok thanks no that's all",
        "yes please no im good",
        "YES PLEASE NO THATS ALL",
        "yes yes no thats all",
        "Yes 👍 no that's all",
        "yes go ahead 🙂 no nothing else thanks",
        "Yes thank you no that's it for now",
    ],
)
def test_a_closing_no_after_an_unmarked_yes_takes_no_yes_back(answer: str) -> None:
    passed, evidence = _hoodie(answer)
    assert passed, evidence


@pytest.mark.parametrize(
    "answer",
    [
        "yes no wait",
        "yes go ahead no don't",
        "yes actually no that's all",
        "yes please no that's all wrong",
        "yes please no that's it don't refund it",
        "yes go ahead no wait",
        "no that's all",
        "no thats it thanks",
        "yes please no not the hoodie",
        "yes no im not sure",
        "yes hmm no that's all",
        "yes please no that's all. Actually, hold off.",
    ],
)
def test_a_no_that_goes_on_or_follows_another_word_still_takes_the_yes_back(answer: str) -> None:
    assert not _confirms(answer)


def test_the_unmarked_closing_is_read_in_the_pattern_itself() -> None:
    assert re.search(NO_PATTERN, reply_words("yes go ahead no that's all")) is None
    assert re.search(NO_PATTERN, reply_words("no that's all")) is not None
    assert re.search(NO_PATTERN, reply_words("yes so no that's all")) is not None


# --- 4. long replies ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "yes please " + "no thats all " * 7500,
        "yes go ahead no that's all " * 3700,
        "Sam, " * 20000 + "yes",
        "Shirt, " * 20000 + "yes",
        "yes thanks " * 9000 + "shirt",
        "Shirt, yes. " + "Thanks, that's all. " * 5000,
        "yes 👍 no that's all " * 5000,
        "Sam, sure " * 10000,
    ],
)
def test_a_long_reply_grades_in_linear_time(answer: str) -> None:
    """About 100,000 characters each; thread CPU time with a wide bound (linear against
    quadratic, not the machine's speed)."""
    started = time.thread_time()
    _hoodie(answer, BOTH_BOUGHT)
    assert time.thread_time() - started < 3.0
