"""Amounts in words are read under a decimal context of the grader's own (forty-seventh round).

Reading "twenty-two dollars" makes a ``Decimal`` and normalises it, which rounds to the
context's precision. The context was the calling thread's: code running beside the harness (an
in-process agent, or its thread left running) that set ``getcontext().prec = 1`` read
"twelve dollars and forty-five cents" as ``1E+1``, and the readings the message checks keep per
process (``lru_cache``) kept that answer for every grading after, in every thread. Now every
kept reading, and every declarative check, runs under ``_text.EXACT`` (Python's default
context) whatever context its caller has."""

from __future__ import annotations

import threading
from decimal import Context, Decimal, getcontext, localcontext

import pytest

from groundstate.grading.constraints import mentions, normalise
from groundstate.grading.constraints._text import amounts_in_words
from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent

from .test_constraints2_round20 import QUESTION
from .test_constraints_round12 import oracles, retail
from .test_constraints_round21 import _refund

__all__ = ["oracles", "retail"]


def _in_a_thread_at_precision_one(read: object) -> object:
    """What *read* returns in a thread of its own whose decimal context holds one digit."""
    answer: list[object] = []

    def run() -> None:
        getcontext().prec = 1
        answer.append(read() if callable(read) else None)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return answer[0]


def test_a_reading_made_under_another_threads_context_is_kept_exact() -> None:
    """The thread's reading fills the cache; the harness's later reading is served from it."""
    text = normalise("That comes to twelve dollars and forty-five cents (first reading, A71).")
    seen = _in_a_thread_at_precision_one(lambda: amounts_in_words(text))
    assert seen == {Decimal("12.45")}
    assert amounts_in_words(text) == {Decimal("12.45")}
    said = "Shall I refund thirty-one dollars and twenty cents (first reading, B72)?"
    _in_a_thread_at_precision_one(lambda: mentions(normalise(said), "$31.20"))
    assert mentions(normalise(said), "$31.20")
    assert not mentions(normalise(said), "$30.00")


def test_the_callers_own_context_changes_no_reading() -> None:
    text = normalise("I can refund ninety-eight dollars and seventy-six cents (C73).")
    with localcontext(Context(prec=1)):
        assert amounts_in_words(text) == {Decimal("98.76")}
        assert mentions(text, "$98.76")
        assert not mentions(text, "$100.00")
    assert getcontext().prec == 28  # put back: the grader's context is only its own


@pytest.mark.parametrize(
    ("amount", "confirmed"),
    [("twenty-one dollars", False), ("twenty-two dollars", True)],
)
def test_a_confirmation_graded_under_a_one_digit_context_reads_the_amount(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str, confirmed: bool
) -> None:
    """The socks' refund is $22.00: asked in words, the yes confirms it, and a yes to another
    amount does not, whatever the grading thread's context (at one digit "twenty-one dollars"
    and $22.00 were both ``2E+1``: the yes to $21 confirmed the refund of $22)."""
    question = QUESTION.format(amount=amount)
    with localcontext(Context(prec=1)):
        failed = _refund(retail, oracles, question, "Yes, please go ahead.")
    assert ("p2-confirmed-refund" not in failed) is confirmed
