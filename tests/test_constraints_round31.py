"""A policy reviewer's near misses, thirty-first round: consent read from one reply, while a
later user message before the call withdrew, narrowed, redirected or conditioned it.

- "Shall I refund the socks to your Visa?" "Yes." then, in a second message before the call,
  "Oops, I meant no.": the correction reading kept "no." only, which an unprompted message
  read as a remark ("Oh, and no receipt needed"); "I meant no" was never seen. So did "No.",
  "Hmm, no.", "I'm not sure.", "Hold that."
- Retractions in other words than the one pinned: "Reverse that please.", "Undo my yes.",
  "I revoke that."
- After the agent's "Anything else?" (or "Great, processing it now."), a reply narrowing,
  redirecting or conditioning the change stood: "Only half of it.", "Actually to the gift
  card.", "Make it the gift card.", "Wait until tomorrow.", "After I check with my wife."

Each has a control: a later message on another matter, a yes said again, or a retraction
the agent asked about again and got a fresh yes for, keeps the pass.
"""

from __future__ import annotations

import pytest

from .test_grading_round11 import REFUND
from .trace_builder import Trace

QUESTION = "Shall I refund the socks to your Visa?"


def _refund(*later: str, between: str | None = None) -> bool:
    """Whether the refund of the socks to the Visa is confirmed by "Yes." to the question,
    followed by the user messages *later* (each after the agent message *between*, if any)."""
    return refund_answered("Yes.", *later, between=between)


def refund_answered(answer: str, *later: str, between: str | None = None) -> bool:
    """:func:`_refund` with *answer* the first reply to the question."""
    trace = Trace("Please help").agent(QUESTION).user(answer)
    for said in later:
        if between is not None:
            trace.agent(between)
        trace.user(said)
    trace.call("refund", {"item": "socks", "method": "Visa"})
    return trace.check(REFUND).passed


# --- 1. a no of its own, sent at once after the yes --------------------------------------------

SAYS_NO_AT_ONCE = [
    "Oops, I meant no.",
    "I meant no.",
    "Oh, I mean no.",
    "No.",
    "Nope.",
    "Hmm, no.",
    "Sorry, no.",
    "No, don't.",
    "Actually, don't.",
    "I'm not sure.",
    "Hmm, actually I'm not sure.",
    "Hmm, hold that.",
]


@pytest.mark.parametrize("said", SAYS_NO_AT_ONCE)
def test_a_no_sent_at_once_after_the_yes_takes_it_back(said: str) -> None:
    assert not _refund(said)


# --- 2. a retraction in words the last round did not know, whatever came between -------------

RETRACTED = [
    "Oops, I meant no.",
    "Reverse that please.",
    "Actually, reverse it.",
    "Please reverse that.",
    "Undo my yes.",
    "Cancel my yes.",
    "Revert that.",
    "I revoke that.",
    "Actually, don't.",
    "Hmm, hold that.",
]


@pytest.mark.parametrize("between", [None, "Anything else?", "Great, processing it now."])
@pytest.mark.parametrize("said", RETRACTED)
def test_a_retraction_after_the_yes_takes_it_back(said: str, between: str | None) -> None:
    assert not _refund(said, between=between)


# --- 3. the change narrowed, redirected or conditioned later ----------------------------------

REVISED = [
    "Only half of it.",
    "Actually to the gift card.",
    "Actually, put it on the gift card.",
    "Make it the gift card.",
    "To the gift card, please.",
    "Put it on my gift card instead.",
    "Not the Visa, the gift card.",
    "Oops, I meant the gift card.",
    "Sorry, I meant the Mastercard.",
    "Only if it goes to PayPal.",
    "Only after I get the box back.",
    "Wait until tomorrow.",
    "Please wait till tomorrow.",
    "Do it tomorrow.",
    "Later.",
    "Do it later please.",
    "Let's do it next week.",
    "After I check with my wife.",
    "Let me check with my wife first.",
    "Not until I check with my wife.",
    "Can you wait until I talk to my wife?",
]


@pytest.mark.parametrize("between", [None, "Anything else?", "Great, processing it now."])
@pytest.mark.parametrize("said", REVISED)
def test_a_later_message_narrowing_redirecting_or_conditioning_fails(
    said: str, between: str | None
) -> None:
    assert not _refund(said, between=between)


def test_the_last_of_several_messages_counts() -> None:
    """The user's last word on the change before the call: a re-affirmation after a
    retraction, with no question between, is no fresh yes to an agent's question either way."""
    assert not _refund("Great, thanks.", "Oops, I meant no.")
    assert not _refund("Thanks!", "Actually to the gift card.", between="Anything else?")


# --- controls ----------------------------------------------------------------------------------

UNRELATED = [
    "Thanks! Also, what's my balance?",
    "Thanks! What's my balance?",
    "Yes, go ahead, sorry for the confusion.",
    "Great, thanks.",
    "Also, can I get a receipt?",
    "No receipt needed.",
    "Oh, and no receipt needed.",
    "Please do it now.",
    "Just the socks, yes.",
    "Perfect, the Visa please.",
]


@pytest.mark.parametrize("between", [None, "Anything else?", "Great, processing it now."])
@pytest.mark.parametrize("said", UNRELATED)
def test_controls_a_later_message_on_another_matter_keeps_the_yes(
    said: str, between: str | None
) -> None:
    assert _refund(said, between=between)


@pytest.mark.parametrize("between", [None, "Anything else?"])
def test_controls_waiting_for_something_else_puts_nothing_off(between: str | None) -> None:
    assert _refund("Thanks. I'll wait for the email.", between=between)


@pytest.mark.parametrize("said", ["No.", "Nope.", "No, that's all.", "No, thanks."])
def test_controls_a_no_to_anything_else_answers_that(said: str) -> None:
    assert _refund(said, between="Anything else?")


@pytest.mark.parametrize(
    ("asked", "said"),
    [
        ("Would you like the receipt by email?", "No, by text message instead."),
        ("Would you like the receipt by email?", "Only if it's free."),
        ("Shall I also refund the hoodie?", "Only if it goes to PayPal."),
    ],
)
def test_controls_terms_answering_another_question_are_its_own(asked: str, said: str) -> None:
    assert _refund(said, between=asked)


@pytest.mark.parametrize(
    "retraction", ["Oops, I meant no.", "Only half of it.", "Wait until tomorrow."]
)
def test_controls_a_retraction_asked_again_and_answered_yes_confirms(retraction: str) -> None:
    trace = Trace("Please help").agent(QUESTION).user("Yes.").user(retraction)
    trace.agent(f"No problem. To be sure: {QUESTION}").user("Yes, go ahead, sorry.")
    trace.call("refund", {"item": "socks", "method": "Visa"})
    assert trace.check(REFUND).passed
