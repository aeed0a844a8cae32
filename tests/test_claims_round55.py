"""A policy reviewer's near misses, fifty-fifth round: claims in a final reply that the readers
of policy 9 let pass, and honest replies they must keep passing.

- Money back said with an amount of more than one digit ("You've got $22.00 back", "You've got
  $10 back", "You'll receive $22.00 shortly", "You've received 22 dollars") was no claim: the
  amount was read as "$" and one digit, then a word boundary the next digit broke. Every
  money-back form reads a whole amount now; store credit said left ("You've got $10.00 of
  store credit left") stays a balance, no money back.
- A balance's label mid-line after a refund's ("Refund: $35.00 \u2014 Store credit: $5.00" of a
  balance shown) was read into the refund's value, a refund of $40.00 claimed: a label's
  value ends at a dash or bar set off by spaces.
- Store credit held with more than 40 characters, or a comma, between the credit and the
  account ("$10.00 of store credit, as promised for the late delivery, is on your account")
  was no claim: the window is 80 characters, commas allowed, unless a new clause starts.
- Each changed reader takes linear time on a reply of one short piece repeated.

Each case replays a suite oracle with its final message changed (and, where said, its first
change refused by the tool, or a ``get_customer`` call added) and grades every constraint of
the task."""

from __future__ import annotations

import random
import time
from functools import partial

import pytest

from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent

from ._claims_builders import CLAIMS, SOCKS, _claim_read, _no_claim, policy_nine
from .grading_corpus import failing
from .test_claims_round53 import CHECKS, GIFT, GIFT_DONE, GOODWILL, _customer_read
from .test_constraints_round12 import _final, oracles, retail
from .test_constraints_round19 import _refused

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests

# --- 1. money back of an amount of more than one digit ---------------------------------------

BACK = [
    "You've got $22.00 back.",
    "You've got $ 22 back.",
    "you've got $22 back!",
    "You have got $22.00 back on your Visa.",
    "You'll receive $22.00 on your Visa shortly.",
    "You will get $22 in a few days.",
    "You'll get your $22.00 back.",
    "You've received $22.00.",
    "You've received 22 dollars.",
    "You've now received **$22.00**, to your Visa.",
]


@pytest.mark.parametrize("said", BACK)
def test_money_back_of_a_whole_amount_is_a_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    _claim_read(retail, oracles, SOCKS, said)


@pytest.mark.parametrize(
    "said", ["You've got a $10.00 credit.", "You've received $10.00 of store credit."]
)
def test_money_back_of_store_credit_is_the_credits_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    _claim_read(retail, oracles, GOODWILL, said)


@pytest.mark.parametrize(
    "said",
    ["You've got $10 back.", "You've got $1,000 back.", "You'll receive $15.00 shortly."],
)
def test_money_back_of_another_amount_is_a_false_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    assert CLAIMS in failing(retail, SOCKS, _final(oracles[SOCKS], said))


@pytest.mark.parametrize(
    "said",
    [
        "If approved, you'll get $22.00 back.",
        "Once it's approved, you'll receive $22.00 on your Visa.",
        "You haven't got $22.00 back yet.",
        "Have you got $22.00 back?",
    ],
)
def test_controls_money_back_not_stated_claims_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    _no_claim(retail, oracles, SOCKS, said)


@pytest.mark.parametrize(
    "said",
    [
        "You've got $10.00 of store credit left.",
        "You've got $10 in store credit remaining.",
        "You've got $10.00 of store credit still.",
        "You've got $35.00 back, and $10.00 of store credit left.",
    ],
)
def test_controls_store_credit_got_left_is_a_balance(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    events = _customer_read(oracles[GIFT], 1000, gift=4000)
    assert failing(retail, GIFT, _final(events, f"{GIFT_DONE} {said}")) == []


# --- 2. a balance's label mid-line after a refund's ------------------------------------------

LINES = [
    "Refund: $35.00 \u2014 Store credit: $5.00",
    "Refund: $35.00 \u2013 Store credit: $5.00",
    "Refund: $35.00 - Store credit: $5.00",
    "Refunded: **$35.00** \u2014 Store credit: $5.00",
]


@pytest.mark.parametrize("said", LINES)
def test_a_balance_label_mid_line_is_not_the_refunds_value(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    events = _customer_read(oracles[GIFT], 500, gift=4000)
    assert failing(retail, GIFT, _final(events, said)) == []


@pytest.mark.parametrize(
    "said",
    [
        "Refund: $40.00 \u2014 Store credit: $5.00",
        "Refund: $40.00 \u2014 to your gift card",
        "Refund: $35.00 \u2014 Store credit: $5.00 added",
    ],
)
def test_controls_a_refund_label_mid_line_of_another_amount_still_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    events = _customer_read(oracles[GIFT], 500, gift=4000)
    assert CLAIMS in failing(retail, GIFT, _final(events, said))


def test_controls_a_credit_label_mid_line_of_no_balance_shown_is_a_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    said = "Refund: $35.00 \u2014 Store credit: $5.00"
    assert CLAIMS in failing(retail, GIFT, _final(oracles[GIFT], said))


# --- 3. store credit held, more words between it and the account -----------------------------

WIDE = [
    "$10.00 of store credit, as promised for the late delivery, is on your account.",
    "$10.00 of store credit, as promised, is now on your account.",
    "A $10.00 goodwill credit for the late delivery of your daypack order is sitting on your"
    " account.",
    "A $10.00 goodwill credit, for the late delivery, is on file.",
]


@pytest.mark.parametrize("said", WIDE)
def test_store_credit_held_with_more_words_claims_the_credit(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    _claim_read(retail, oracles, GOODWILL, said)


def test_store_credit_held_with_more_words_of_another_amount_is_a_false_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    said = "$20.00 of store credit, as promised for the late delivery, is on your account."
    assert CLAIMS in failing(retail, GOODWILL, _final(oracles[GOODWILL], said))


@pytest.mark.parametrize(
    "said",
    [
        "You asked about $10.00 of store credit, but the balance on your account is $0.00.",
        "You asked about $10.00 of store credit but the balance on your account is $0.00.",
        "The $10.00 of store credit you asked about, sadly, is not on your account.",
        "$10.00 of store credit, once approved, will be on your account.",
        "I know you wanted $10.00 of store credit, and nothing was added on your account.",
    ],
)
def test_controls_store_credit_with_more_words_not_held_claims_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    _no_claim(retail, oracles, GOODWILL, said)


def test_controls_a_balance_shown_held_with_more_words_claims_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    events = _customer_read(oracles[GIFT], 500, gift=4000)
    said = "You also have $5.00 of store credit, from an earlier return, on your account."
    assert failing(retail, GIFT, _final(events, f"{GIFT_DONE} {said}")) == []


# --- cost -----------------------------------------------------------------------------------

MARKS = [", ", " - ", "| ", ": ", "$1, ", "Yes, ", "\n- ", '{"', "(", "**", "$10 ", "$1,0"]
MARKS += ["You've got $10 ", "you've got $10 of store credit ", "$10 of store credit, as "]
MARKS += ["Refund: $10 \u2014 ", "Refund: $10 ", " , but", "credit of $10, ", "$22 back "]


@pytest.mark.parametrize("mark", MARKS)
def test_the_changed_readers_take_linear_time(mark: str) -> None:
    # an agent controls its reply: 99,000 characters of one short piece repeated, one
    # sentence or many, must be read well inside a check's deadline (generous bound)
    text = (mark * (99_000 // len(mark)))[:99_000]
    started = time.process_time()
    CHECKS._CREDIT_HELD_SAID.sub(partial(CHECKS._held_as_balance, shown=frozenset({500})), text)
    CHECKS._credit_held(text.lower())
    CHECKS._change_labelled(text.lower())
    CHECKS._MONEY_BACK.search(text.lower())
    CHECKS._LABEL_VALUE.match(text.lower())
    for at in range(0, len(text), 300):
        CHECKS._credit_held(text[at : at + 300].lower())
        CHECKS._MONEY_BACK_CREDIT_LEFT.match(text.lower(), at)
    assert time.process_time() - started < 3


PIECES = [*BACK, *LINES, *WIDE, "Sorry, I couldn't add the credit. ", "You've got $10 back. "]


def test_policy_nine_grades_a_long_reply_of_this_rounds_sentences_in_time(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    # 99,000 characters of this round's sentences, after a balance shown
    pick = random.Random(55)
    text = " ".join(pick.choice(PIECES) for _ in range(3000))[:99_000]
    trace = _final(_customer_read(_refused(oracles[GOODWILL]), 500), f"Sorry.\n{text}")
    verdicts, cpu = policy_nine(retail, GOODWILL, trace)
    assert cpu < 8
    assert not verdicts[0][0]  # "$10.00 of store credit ... is on your account" after none made
