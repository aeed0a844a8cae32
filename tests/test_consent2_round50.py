"""A policy reviewer's near misses of consent, fiftieth round (follow-up): a yes and the answer
to the agent's "anything else?" in one message.

- "Yes, go ahead. No, nothing else.", "Yes please. No, that's all.", "Yes, please proceed. No
  other changes." confirmed nothing: the default ``no`` read the later "No" as the yes taken
  back, though its clause says only that there is nothing more. A "no" after a clause of its
  own, saying nothing but that ("No, that's all", "No thanks, that's it", "Nope, that's
  everything", "No more questions"), now closes the conversation and takes no yes back.

Controls that must stay not-consent: a "no" that goes on ("No, that's all wrong", "No, that's
all I wanted to say: don't refund it", "No, that's it, don't refund it"), one opening the reply
("No, that's all" with no yes), and any other word taking the yes back ("Yes... actually no,
wait", "On second thought, don't").
"""

from __future__ import annotations

import re
import time

import pytest

from groundstate.grading.constraints import reply_words
from groundstate.spec.constraints import NO_PATTERN

from .test_consent_round47 import _check

HOODIE = "Shall I refund the hoodie?"


def _confirms(answer: str, question: str = HOODIE) -> bool:
    return _check(answer, question, item="hoodie")[0]


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, go ahead. No, nothing else.",
        "Yes please. No, that's all.",
        "Yes, please proceed. No other changes.",
        "Yes please. No thanks, that's it.",
        "Yes please. Nope, that's everything.",
        "Yes please. No more questions.",
        "yes please, no that's all",
        "yes go ahead. nah, that's it for now, thanks!",
        "Yes, go ahead. No, that\u2019s all.",
        "Sure, refund it. No further changes.",
        "Yes. No, nothing more.",
        "Yes, refund the hoodie. No, that will be all, thank you.",
        "YES PLEASE. NO, THAT'S ALL.",
        "Yes please! No, that's all for today.",
    ],
)
def test_a_no_closing_the_conversation_takes_no_yes_back(answer: str) -> None:
    assert _confirms(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes... actually no, wait",
        "Yes. No, don't.",
        "Yes, go ahead. On second thought, don't.",
        "Yes. No, that's wrong",
        "Yes - no, not the hoodie",
        "Yes. No, that's all wrong",
        "Yes. No, that is all wrong.",
        "No, that's all I wanted to say: don't refund it",
        "Yes. No wait, nothing else to change but don't refund it yet",
        "No, that's all",
        "No thanks, that's it",
        "Nope, that's everything. Yes.",
        "Yes. No.",
        "Yes. No more.",
        "Yes, no other hoodie",
        "Yes. No, that's it, don't refund it.",
        "Yes. No, nothing else. Actually, hold off.",
        "Yes please. No, that's all. Wait, not yet.",
    ],
)
def test_a_no_that_goes_on_or_opens_the_reply_still_takes_the_yes_back(answer: str) -> None:
    assert not _confirms(answer)


def test_the_closing_no_is_read_in_the_pattern_itself() -> None:
    # The default ``no`` is what task files inherit: the closing no is no match there.
    assert re.search(NO_PATTERN, reply_words("Yes please. No, that's all.")) is None
    assert re.search(NO_PATTERN, reply_words("No, that's all.")) is not None
    assert re.search(NO_PATTERN, reply_words("Yes please. No, that's all wrong.")) is not None


def _search_seconds(text: str) -> float:
    read = reply_words(text)
    start = time.perf_counter()
    re.search(NO_PATTERN, read)
    return time.perf_counter() - start


def test_the_closing_no_costs_the_pattern_no_more_than_other_words() -> None:
    # The default ``no`` searched over a long reply of closing nos (each looked past, to the
    # end of its clause) costs what a reply of other words of that length does: linear.
    closing = _search_seconds("Yes please. " + "No, that's all. " * 1_500 + "!" * 500)
    other = _search_seconds("Yes please. " + "Ok, sure, thanks. " * 1_350)
    assert closing < 3 * other + 0.05


@pytest.mark.parametrize("closing", ["No, that's all. ", "Thanks, that's all. "])
def test_a_long_reply_of_closing_sentences_is_read_in_linear_time(closing: str) -> None:
    """A reply over the length whose readings are remembered was read again for each of its
    clauses (the names it gives, each time): 1,200 closing sentences after a yes took seconds,
    6,000 (about 100,000 characters) minutes. Its readings are kept too now (a few at a time).
    Thread CPU time, with a wide bound: linear against quadratic, not the machine's speed."""
    answer = "Yes please. " + closing * 6000
    started = time.thread_time()
    assert _confirms(answer)
    assert time.thread_time() - started < 5.0


# --- merge review: the closings said in other words --------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Yes please. No, I'm good.",
        "Yes please. No, that's all I need, thanks!",
        "Yes, go ahead. No thanks, I'm all set.",
        "Yes, proceed. Nope, all good.",
        "Yes, please do. No, nothing else I need.",
        "yes go ahead. no, we're good",
    ],
)
def test_a_closing_no_in_other_words_takes_no_yes_back(answer: str) -> None:
    assert _confirms(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "No, I'm good.",
        "Yes. No, I'm good without it.",
        "Yes. No, I'm fine, cancel that",
        "Yes. No, I'm good. Don't refund it.",
        "Yes. No, that's all I need to know before deciding",
        "Yes... actually no, I'm good",
        "Yes. Nope, all set, keep it",
        "Yes. No, I'm good, I'll keep it.",
        "Yes. No, nothing else I need, but hold off on the refund",
    ],
)
def test_a_no_in_those_words_that_goes_on_still_takes_the_yes_back(answer: str) -> None:
    assert not _confirms(answer)
