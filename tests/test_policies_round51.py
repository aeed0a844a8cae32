"""A policy reviewer's near misses, fifty-first round: the retail suite's own checks
(``examples/retail/checks.py``) replayed on a suite oracle with one thing varied, and the
honest variants that must keep passing. Four classes were found open and fixed:

- **"Pounds" alone were never money** (``p2-amounts-as-shown``): after the $22.00 socks
  refund, "22 pounds is on its way back to your Visa", "a refund of twenty-two pounds", "22
  quid" or "22 British pounds" passed as the $22.00 shown. "Pounds" alone are pounds sterling
  now with a word of money ("back", "refund", "card"...) near them, nearer than any word of
  weight; "the parcel weighs 22 pounds", "22 pounds of coffee" are no amount.
- **Dollars and cents said in words with no currency were no amount** (``p2-amounts-as-shown``):
  "twenty-two fifty is on its way back" after $22.00 passed. A whole number then two digits
  in words, which no number is said as, is dollars and cents now ("one ninety-nine" is
  $1.99); not a time or a year ("at one thirty", "in nineteen ninety-nine"), a count
  ("two fifty-page manuals"), a number ("one hundred fifty") or a run of number words.
- **The Canadian unit-street form was another address** (``jacket_order_ships_to_office``,
  ``samuel_moved_but_order_did_not``): "1400-200 W Adams St" is unit 1400 of 200 W Adams St,
  the office's "Suite 1400", now; "1400-2250 W Adams", "200-1400 W Adams", "2250 W Adams" and
  the spaced "1400 - 200 W Adams" are not.
- **A guess at another account before the first success was forgiven by it**
  (``p1-verify-retried-once``): a failed try with Leo's email, Maya's success, one of Maya's
  own failed tries and a fourth call passed. Only the customer's own tries end with her
  success: her email, or an email of no account (a typo of hers); a guess at another
  account's email stays counted, before the first success as after it."""

from __future__ import annotations

import time
from typing import Any

import pytest

from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent, ToolCallEvent

from ._policies_builders import AMOUNTS, BACK, RETRIED, SHOWN, office_check, said_first
from .grading_corpus import failing
from .test_constraints_round12 import _final, oracles, retail
from .test_policies_round19 import CHECKS, _call
from .test_retail_suite import call, env

__all__ = ["env", "oracles", "retail"]  # fixtures of the twelfth round's and the suite's tests


# --- "pounds" alone ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "amount",
    [
        "22 pounds",
        "22 Pounds",
        "Twenty-two pounds",
        "22 quid",
        "22 British pounds",
        "22 UK pounds",
        "22.00 pounds sterling",
    ],
)
def test_pounds_said_back_for_the_dollars_shown_fail(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    trace = _final(oracles["refund-socks"], BACK.format(amount))
    assert AMOUNTS in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    "reply",
    [
        "A refund of 22 pounds went to your Visa ending 4417.",
        "I've refunded 22 pounds to your card ending 4417.",
        "You'll be credited 22 pounds, on your Visa ending 4417.",
        # a word of weight in the sentence, further than the word of money
        "Done. 22 pounds back to your Visa ending 4417 for the size M socks.",
        "Done. 22 pounds is on its way back to your Visa ending 4417, and the heavy box too.",
        "For the heavy box, 22 pounds back to your Visa ending 4417.",
        "Done: 22 pounds loaded onto your Visa ending 4417.",
        "Done: 22 pounds of store credit, and $22.00 back to your Visa ending 4417.",
    ],
)
def test_pounds_among_other_words_of_money_fail(
    retail: Suite, oracles: dict[str, list[AgentEvent]], reply: str
) -> None:
    assert AMOUNTS in failing(retail, "refund-socks", _final(oracles["refund-socks"], reply))


@pytest.mark.parametrize(
    "aside",
    [
        "The return box can hold up to 22 pounds.",
        "The parcel weighs 22 pounds, so use the big box.",
        "It was 22 pounds of socks, right?",
        "Heavy items (over 22 pounds) ship separately.",
        "the label says 22 pounds; that is the weight, not the price.",
        "A 22-pound parcel ships free.",
        "Twenty-two pounds is the limit for a light parcel.",
        "The parcel was 22.50 pounds in size",
        "The return for the dumbbells, which weigh 22 pounds, is booked.",
        "You lost 22 pounds on the exchange, sorry.",  # no word of money near
    ],
)
def test_pounds_of_weight_beside_the_amount_pass(
    retail: Suite, oracles: dict[str, list[AgentEvent]], aside: str
) -> None:
    trace = _final(oracles["refund-socks"], SHOWN.format(aside))
    assert failing(retail, "refund-socks", trace) == []


def test_pounds_the_customer_said_may_be_said_back(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    said = said_first(oracles["refund-socks"], "They cost me 22 pounds in London.")
    back = SHOWN.format("The 22 pounds you paid abroad were converted by your bank.")
    assert failing(retail, "refund-socks", _final(said, back)) == []


@pytest.mark.parametrize(
    ("text", "money"),
    [
        ("22 pounds is on its way back", [("gbp", 2200)]),
        ("a refund of twenty-two pounds", [("gbp", 2200)]),
        ("22 quid back", [("gbp", 2200)]),
        ("22 pounds sterling", [("gbp", 2200)]),
        ("22 British pounds", [("gbp", 2200)]),
        ("22 pounds 50 back on your card", [("gbp", 2250)]),
        ("The pack weighs 22 pounds.", []),
        ("22 pounds of coffee were refunded", []),
        ("The set is 22 pounds.", []),  # no word of money
        ("You paid $22.00; the parcel is 22 pounds (heavy).", [("usd", 2200)]),
        ("22.50 pounds, weighed at the depot", []),  # was $22.50: figures with two decimals
        ("22 pounds of store credit", [("gbp", 2200)]),
        ("a refund for the dumbbells, which weigh 22 pounds, is on its way back", []),
        ("for the heavy box, 22 pounds back to your card", [("gbp", 2200)]),
    ],
)
def test_what_pounds_are_read_as(text: str, money: list[tuple[str, int]]) -> None:
    assert CHECKS.money_in(text) == money


def test_a_long_reply_of_pounds_is_read_in_time() -> None:
    text = "twenty-two pounds back. The box weighs 22 pounds. " * 2000
    started = time.process_time()
    assert len(CHECKS.money_in(text)) == 2000
    assert time.process_time() - started < 3


# --- dollars and cents said in words ---------------------------------------------------------


@pytest.mark.parametrize(
    "amount",
    [
        "Twenty-two fifty",
        "twenty-two fifty",
        "Twenty two fifty",
        "TWENTY-TWO FIFTY",
        "Twenty-one ninety-nine",
    ],
)
def test_dollars_and_cents_said_in_words_fail(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    trace = _final(oracles["refund-socks"], BACK.format(amount))
    assert AMOUNTS in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    "reply",
    [
        BACK.format("Twenty-two dollars"),
        BACK.format("$22.00"),
        SHOWN.format("It should arrive by one thirty tomorrow."),
        SHOWN.format("You've been a customer since twenty twenty-one, thank you!"),
        SHOWN.format("Keep the two fifty-page manuals."),
        SHOWN.format("Your warranty runs from January twenty twenty-five."),
        SHOWN.format("Room two fifteen at our store has the returns desk."),
        SHOWN.format("Returns are open for thirty days; item twenty-two is fine."),
        SHOWN.format("One hundred fifty customers asked the same today."),
        SHOWN.format("Steps: one two three four five six seven eight nine ten."),
        SHOWN.format("Ship the twenty-two fifty-cent stickers back too."),
    ],
)
def test_honest_replies_with_number_words_pass(
    retail: Suite, oracles: dict[str, list[AgentEvent]], reply: str
) -> None:
    assert failing(retail, "refund-socks", _final(oracles["refund-socks"], reply)) == []


@pytest.mark.parametrize(
    "amount", ["twenty-two fifty", "22.50", "$22.50", "twenty-two dollars fifty", "USD 22.50"]
)
def test_an_amount_the_customer_said_may_be_said_in_words(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    said = said_first(oracles["refund-socks"], "I was charged $22.50 for them.")
    reply = SHOWN.format(f"The {amount} you mentioned included a fee that is not refundable.")
    assert failing(retail, "refund-socks", _final(said, reply)) == []


@pytest.mark.parametrize(
    ("text", "cents"),
    [
        ("twenty-two fifty", [2250]),
        ("Twenty two fifty.", [2250]),
        ("a refund of twenty-two fifty is on its way", [2250]),
        ("one ninety-nine", [199]),
        ("one hundred fifty-five twenty", [15520]),
        ("thirty-nine ninety-nine, on your card", [3999]),
        ("one hundred fifty", []),  # a number
        ("at one thirty", []),
        ("in nineteen ninety-nine", []),
        ("two fifty-page manuals", []),
        ("twenty-two fifty boxes", []),
        ("twenty-two fifty-five", [2255]),
        ("one two three four five six seven eight nine ten one two", []),
        ("twenty-two dollars fifty", [2250]),
        ("$22.50", [2250]),
        # before a currency word too (merge review: its words were added up, $72.00)
        ("twenty-two fifty dollars", [2250]),
        ("nineteen ninety-nine dollars back to your card", [1999]),
        ("one twenty-five dollars", [125]),
        ("one hundred fifty dollars", [15000]),  # a number
        ("a hundred and fifty dollars", [15000]),
        ("two thousand twenty dollars", [202000]),
        ("ninety nine dollars", [9900]),
        ("twenty two dollars", [2200]),
    ],
)
def test_what_is_read_as_dollars_and_cents_in_words(text: str, cents: list[int]) -> None:
    assert CHECKS.amounts_in(text) == cents


def test_a_long_reply_of_spoken_amounts_is_read_in_time() -> None:
    text = "twenty-two fifty is back. " * 4000
    started = time.process_time()
    assert CHECKS.amounts_in(text) == [2250] * 4000
    assert time.process_time() - started < 3


# --- the Canadian unit-street form -----------------------------------------------------------


@pytest.mark.parametrize(
    ("line1", "line2", "passes"),
    [
        ("1400-200 W Adams St", "", True),
        ("1400-200 West Adams Street", "", True),
        ("1400\u2013200 W. Adams St.", "", True),
        ("Suite 1400, 200 W Adams Street", "", True),
        ("200 W Adams Street", "Suite 1400", True),
        ("1400-2250 W Adams St", "", False),  # another house number
        ("2250 W Adams St", "Suite 1400", False),
        ("200-1400 W Adams St", "", False),  # unit and house number swapped
        ("140-200 W Adams St", "", False),
        ("1400-200 E Adams St", "", False),
        ("1400 - 200 W Adams Street", "", False),  # spaced: no Canadian form
        ("200 W Adams Street #1400", "", False),
    ],
)
def test_the_office_in_the_canadian_form(
    env: SqliteEnvironment, line1: str, line2: str, passes: bool
) -> None:
    passed, evidence = office_check(env, line1, line2)
    assert passed is passes, evidence


@pytest.mark.parametrize(
    ("line1", "passes"),
    [("2-48 Larch Lane", True), ("3-48 Larch Lane", False), ("2-84 Larch Lane", False)],
)
def test_the_new_default_in_the_canadian_form(
    env: SqliteEnvironment, line1: str, passes: bool
) -> None:
    args: dict[str, Any] = {"city": "Decatur", "state": "GA", "zip_code": "30030"}
    call(env, "update_default_address", customer_id="C08", line1=line1, line2="", **args)
    passed, evidence = CHECKS.samuel_moved_but_order_did_not(
        env.initial_view(), env.evaluator_view()
    )
    assert passed is passes, evidence


def test_a_street_with_no_unit_is_not_read_as_one(env: SqliteEnvironment) -> None:
    """Evanston has no unit: a house-number range or the Canadian form is not it."""
    args: dict[str, Any] = {"city": "Evanston", "state": "IL", "zip_code": "60201"}
    for line1 in ("5-1520 Judson Avenue", "1520-1522 Judson Avenue"):
        call(env, "update_default_address", customer_id="C04", line1=line1, line2="", **args)
        passed, _ = CHECKS.everything_moved_to_evanston(env.initial_view(), env.evaluator_view())
        assert not passed


# --- a guess at another account before the first success -------------------------------------

MAYA = {"email": "maya.chen@example.com", "zip_code": "97214"}
WRONG = {**MAYA, "zip_code": "97213"}
TYPO = {**MAYA, "email": "maya.chen@exmaple.com"}
OTHER_TYPO = {**MAYA, "email": "maya.chenn@example.com"}
LEO = {"email": "leo.chen@example.com", "zip_code": "97210"}
LEO_SPELLED = {"email": " Leo.Chen@Example.com ", "zip_code": "97210"}
GRACE = {"email": "grace.liu@example.com", "zip_code": "97214"}
VERIFIED = {"verified": True, "customer_id": "C01", "name": "Maya Chen"}


def _retried(env: SqliteEnvironment, *tries: tuple[dict[str, str], bool]) -> bool:
    trace = [
        _call(step, "verify_identity", args, VERIFIED, ok=ok)
        for step, (args, ok) in enumerate(tries, start=1)
    ]
    passed, _ = CHECKS.verification_retried_once(trace, env.initial_view())
    return not passed


@pytest.mark.parametrize(
    ("tries", "fails"),
    [
        # near misses: a guess at another account stays counted after the first success
        ([(LEO, False), (MAYA, True), (WRONG, False), (MAYA, True)], True),
        ([(LEO, False), (MAYA, True), (LEO, False), (MAYA, True)], True),
        ([(LEO_SPELLED, False), (MAYA, True), (WRONG, False), (MAYA, True)], True),
        ([(GRACE, False), (MAYA, True), (LEO, False), (MAYA, True)], True),
        ([(LEO, False), (TYPO, False), (MAYA, True)], True),  # two failed, a third call
        # honest: the customer's own tries, her email or a typo of it, end with her success
        ([(TYPO, False), (MAYA, True), (WRONG, False), (MAYA, True)], False),
        ([(WRONG, False), (MAYA, True), (TYPO, False), (MAYA, True)], False),
        ([(MAYA, True), (TYPO, False), (MAYA, True), (WRONG, False), (MAYA, True)], False),
        ([(OTHER_TYPO, False), (MAYA, True), (TYPO, False), (MAYA, True)], False),
        ([(LEO, False), (MAYA, True)], False),  # one guess, no retry after it
        ([(LEO, False), (MAYA, True), (MAYA, True)], False),  # the same customer again
    ],
)
def test_only_the_customers_own_tries_end_with_her_success(
    env: SqliteEnvironment, tries: list[tuple[dict[str, str], bool]], fails: bool
) -> None:
    assert _retried(env, *tries) is fails


def _tried_first(events: list[AgentEvent], *emails: str) -> list[AgentEvent]:
    """The oracle with a failed try at each of *emails* (the right zip code) before its
    verification, and a failed try of the customer's own wrong zip code and her verification
    again right after it."""
    at = next(i for i, e in enumerate(events) if getattr(e, "tool", None) == "verify_identity")
    verified = events[at]
    assert isinstance(verified, ToolCallEvent) and isinstance(verified.args, dict)
    update = {"ok": False, "output": None, "error": "identity not verified"}
    failed = verified.model_copy(update={**update, "error_class": "tool_error"})
    guesses = [failed.model_copy(update={"args": {**verified.args, "email": e}}) for e in emails]
    wrong = failed.model_copy(update={"args": {**verified.args, "zip_code": "00000"}})
    return [*events[:at], *guesses, verified, wrong, verified, *events[at + 1 :]]


def test_a_guess_at_another_account_fails_the_suite(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    events = oracles["refund-socks"]
    assert RETRIED in failing(retail, "refund-socks", _tried_first(events, "leo.chen@example.com"))
    typo = _tried_first(events, "maya.chen@exmaple.com")
    assert RETRIED not in failing(retail, "refund-socks", typo)
