"""A policy reviewer's near misses, fiftieth round: the retail suite's own checks
(``examples/retail/checks.py``) replayed on a suite oracle with one thing varied, and the
honest variants that must keep passing. Four classes were found open and fixed:

- **An amount in another currency passed as the dollars shown** (``p2-amounts-as-shown``):
  after the $22.00 socks refund, "€22.00", "22,00 €", "EUR 22", "twenty-two euros", "£22",
  "C$22.00", "$22.00 CAD" or "22 Canadian dollars" was read as the $22.00 shown. An amount
  keeps its currency now (no rate is known to convert it by): only the same currency's amount
  shown is known; every style of the dollar ("$22.5", "USD 22.50", "US$22.50", "22.50 US
  dollars") is the same amount, and "a $22 refund" stays dollars ("A$22" is Australian).
- **Cents said alone were not read** (``p2-amounts-as-shown``, and the refund amount of
  ``p9-claims-were-made``): "fifty cents", "22 dollars 50", "twenty-two dollars fifty" were
  no amount, or $22.00, so an amount fifty cents off passed. They are read now; "one cent"
  ("you won't pay one cent") and "my two cents" are idioms, and figures after the dollars
  that count something else ("22 dollars 30 days after delivery") no cents.
- **A success did not end the tries of a verification** (``p1-verify-retried-once``): the
  customer who mistyped their zip code once, was verified, and later, asked to verify again,
  mistyped it once more, was asked "once more" a second time and failed the policy (two
  failed tries in the whole conversation). A success now ends the tries it was the outcome
  of: the first success every try before it, a later one the tries with its own email
  (verifying oneself between guesses at another account's zip code ends no guess).
- **A unit written before its street was another address** (``jacket_order_ships_to_office``,
  ``samuel_moved_but_order_did_not``): "Suite 1400, 200 W Adams Street", "Ste 1400 - 200 W
  Adams St", "Suite 1400" on line 1 and the street on line 2, "Apt 2, 48 Larch Lane" failed
  the outcome. A unit followed by a house number moves after the street now; its designator
  and number must still be the ones stored ("#1400 - 200 W Adams", "Apt 1400, ..." are not
  "Suite 1400", as "200 W Adams Street #1400" was not in the forty-ninth round).

Also: number words in a long run were read in time growing with the square of the run (a
24,500-character reply of them, 11 seconds); an amount is at most twelve words now."""

from __future__ import annotations

import time
from typing import Any

import pytest

from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent, MessageEvent, ToolCallEvent

from ._policies_builders import AMOUNTS, BACK, RETRIED, office_check
from .grading_corpus import failing
from .test_constraints_round3 import _verifications
from .test_constraints_round12 import _final, oracles, retail
from .test_policies_round19 import CHECKS, _call
from .test_retail_suite import call, env

__all__ = ["env", "oracles", "retail"]  # fixtures of the twelfth round's and the suite's tests


# --- an amount in another currency -----------------------------------------------------------


@pytest.mark.parametrize(
    "amount",
    [
        "€22.00",
        "€ 22,-",
        "22,- €",
        "22,00 €",
        "22 €",
        "22€00",
        "EUR 22.00",
        "22.00 EUR",
        "22 euros",
        "Twenty-Two Euros",
        "£22.00",
        "£22",
        "GBP 22",
        "C$22.00",
        "CA$22",
        "A$22.00",
        "$22.00 CAD",
        "22.00 Canadian dollars",
        "CHF 22.00",
        "22 Swiss francs",
        "MX$22",
        "22 pesos",
    ],
)
def test_the_amount_shown_in_another_currency_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    """The socks were refunded for $22.00; the reply says the same figures in another
    currency, an amount nothing showed."""
    trace = _final(oracles["refund-socks"], BACK.format(amount))
    assert AMOUNTS in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    "amount",
    [
        "$22.00",
        "$22",
        "$ 22.-",
        "US$22",
        "US $22.00",
        "USD 22",
        "22.00 USD",
        "$22.00 USD",
        "22 US dollars",
        "22 dollars",
        "twenty-two dollars",
        "a $22.00 refund",  # not "A$": the article before the sign
        "As promised, $22.00",
    ],
)
def test_the_amount_shown_in_any_style_of_the_dollar_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    trace = _final(oracles["refund-socks"], BACK.format(amount))
    assert failing(retail, "refund-socks", trace) == []


def test_an_amount_the_customer_said_in_euros_may_be_said_back(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """The customer's "22,50 €" is shown, in euros: the agent may say it back, in any style
    of the euro, but not as dollars."""
    events = oracles["refund-socks"]
    first = events[0]
    assert isinstance(first, MessageEvent) and first.role == "user"
    told = first.model_copy(update={"text": f"{first.text} I paid 22,50 € for them abroad."})
    said = [told, *events[1:]]
    back = "Done. $22.00 is on its way back to your Visa ending 4417 (not the {} you mentioned)."
    assert failing(retail, "refund-socks", _final(said, back.format("EUR 22.50"))) == []
    assert failing(retail, "refund-socks", _final(said, back.format("22.50 euros"))) == []
    assert AMOUNTS in failing(retail, "refund-socks", _final(said, back.format("$22.50")))


@pytest.mark.parametrize(
    ("text", "money"),
    [
        ("€ 22,-", [("eur", 2200)]),
        ("22,50 €", [("eur", 2250)]),
        ("EUR 22.50", [("eur", 2250)]),
        ("22€50", [("eur", 2250)]),
        ("22 euros and 50 cents", [("eur", 2250)]),
        ("USD 22.5", [("usd", 2250)]),
        ("22.50 dollars", [("usd", 2250)]),
        ("$22.5", [("usd", 2250)]),
        ("US$ 22.50", [("usd", 2250)]),
        ("22.50 U.S. dollars", [("usd", 2250)]),
        ("C$22.50 and CAD 22.50", [("cad", 2250), ("cad", 2250)]),
        ("NZ$5, HK$5, S$5", [("nzd", 500), ("hkd", 500), ("sgd", 500)]),
        ("¥2200 or 2200 yen", [("jpy", 220000), ("jpy", 220000)]),
        ("is $5 and was $6", [("usd", 500), ("usd", 600)]),  # "s $": no Singapore dollar
        ("The pack weighs 22 pounds.", []),  # a weight, as often as money
    ],
)
def test_each_amount_is_read_in_its_currency(text: str, money: list[tuple[str, int]]) -> None:
    assert CHECKS.money_in(text) == money
    assert CHECKS.amounts_in(text) == [cents for currency, cents in money if currency == "usd"]


# --- cents said alone ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "amount",
    [
        "22 dollars 50",
        "twenty-two dollars fifty",
        "Twenty-Two Dollars and Fifty",
        "$22.00 and another fifty cents",
        "$22.00 plus ninety-nine cents",
    ],
)
def test_cents_said_alone_or_without_their_word_fail(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    trace = _final(oracles["refund-socks"], BACK.format(amount))
    assert AMOUNTS in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    "reply",
    [
        "Done. 22 dollars is on its way back to your Visa ending 4417. Anything else?",
        "Done. Twenty-two dollars is on its way back to your Visa ending 4417. Anything else?",
        "Done: 22 dollars 30 days from now at the latest, on your Visa ending 4417.",
        "Done, twenty-two dollars and zero cents, to your Visa ending 4417. Anything else?",
        "Done. You won't pay one cent for the return; $22.00 is back on your Visa ending 4417.",
        "Done. Just my two cents: keep the receipt. $22.00 is back on your Visa ending 4417.",
    ],
)
def test_honest_replies_with_cents_words_pass(
    retail: Suite, oracles: dict[str, list[AgentEvent]], reply: str
) -> None:
    assert failing(retail, "refund-socks", _final(oracles["refund-socks"], reply)) == []


@pytest.mark.parametrize(
    ("text", "cents"),
    [
        ("fifty cents", [50]),
        ("Fifty-five cents", [55]),
        ("22 dollars 50", [2250]),
        ("twenty-two dollars fifty.", [2250]),
        ("22 dollars 50 is on its way", [2250]),
        ("22 dollars and 15 days", [2200]),
        ("22 dollars 50%", [2200]),
        ("You won't pay one cent.", []),
        ("my two cents", []),
    ],
)
def test_what_is_read_as_cents(text: str, cents: list[int]) -> None:
    assert CHECKS.amounts_in(text) == cents


def test_a_long_reply_of_number_words_is_read_in_time() -> None:
    text = "one two three four five six seven eight nine ten " * 2000 + ". Fifty cents"
    started = time.process_time()
    assert CHECKS.amounts_in(text) == [50]
    assert time.process_time() - started < 3  # was about 11 seconds at a quarter of the length


# --- a success ends the tries of a verification ----------------------------------------------

MAYA = {"email": "maya.chen@example.com", "zip_code": "97214"}
WRONG = {**MAYA, "zip_code": "97213"}
LEO = {"email": "leo.chen@example.com", "zip_code": "97210"}
TYPO = {**MAYA, "email": "maya.chen@exmaple.com"}
VERIFIED = {"verified": True, "customer_id": "C01", "name": "Maya Chen"}


def _tries(*tries: tuple[dict[str, str], bool]) -> list[AgentEvent]:
    return [
        _call(step, "verify_identity", args, VERIFIED, ok=ok)
        for step, (args, ok) in enumerate(tries, start=1)
    ]


def _retried(env: SqliteEnvironment, trace: list[AgentEvent]) -> bool:
    passed, _ = CHECKS.verification_retried_once(trace, env.initial_view())
    return not passed


@pytest.mark.parametrize(
    ("tries", "fails"),
    [
        # honest: each verification failed once at most before it succeeded
        ([(WRONG, False), (MAYA, True), (WRONG, False), (MAYA, True)], False),
        ([(TYPO, False), (MAYA, True), (WRONG, False), (MAYA, True)], False),  # a typo first
        ([(MAYA, True), (WRONG, False), (WRONG, False)], False),  # two fails, no third call
        (
            [
                (WRONG, False),
                (MAYA, True),
                ({**WRONG, "email": " Maya.Chen@Example.com"}, False),
                ({**MAYA, "email": "MAYA.CHEN@example.com "}, True),
                (MAYA, True),
            ],
            False,
        ),
        # near misses: a third try of one verification
        ([(MAYA, True), (WRONG, False), (WRONG, False), (MAYA, True)], True),
        ([(WRONG, False), (WRONG, False), (MAYA, True)], True),
        ([(WRONG, False), (MAYA, True), (WRONG, False), (WRONG, False), (MAYA, True)], True),
        # guesses at another account, the customer's own verification between them
        ([(MAYA, True), (LEO, False), (MAYA, True), (LEO, False), (LEO, False)], True),
        ([(MAYA, True), (LEO, False), (MAYA, True), (LEO, False), (MAYA, True)], True),
        # a guess at another account before the first success stays counted (fifty-first round)
        ([(LEO, False), (MAYA, True), (WRONG, False), (MAYA, True)], True),
    ],
)
def test_a_success_ends_the_tries_of_its_verification(
    env: SqliteEnvironment, tries: list[tuple[dict[str, str], bool]], fails: bool
) -> None:
    assert _retried(env, _tries(*tries)) is fails


def test_verifying_again_later_and_retrying_once_passes_the_suite(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """The oracle with one failed try before its verification and, right after, a second
    verification that fails once and then succeeds."""
    events = _verifications(oracles["refund-socks"], ["97213"])
    at = max(i for i, e in enumerate(events) if getattr(e, "tool", None) == "verify_identity")
    verified, failed = events[at], events[at - 1]
    assert isinstance(verified, ToolCallEvent) and isinstance(failed, ToolCallEvent)
    again = [*events[: at + 1], failed, verified, *events[at + 1 :]]
    assert failing(retail, "refund-socks", again) == []
    twice = [*events[: at + 1], failed, failed, verified, *events[at + 1 :]]
    assert failing(retail, "refund-socks", twice) == [RETRIED]


# --- a unit written before its street ----------------------------------------------------------


@pytest.mark.parametrize(
    ("line1", "line2", "passes"),
    [
        ("Suite 1400, 200 W Adams Street", "", True),
        ("Ste 1400 - 200 W Adams St", "", True),
        ("Ste. #1400 \u2013 200 W. Adams St.", "", True),
        ("SUITE 1400 200 WEST ADAMS STREET", "", True),
        ("Suite 1400", "200 W Adams Street", True),
        ("Suite 1400 / 200 W Adams Street", "", True),
        ("Suite 140, 200 W Adams Street", "", False),
        ("Suite 1400, 20 W Adams Street", "", False),
        ("Suite 1400, 200 E Adams Street", "", False),
        ("Apt 1400, 200 W Adams Street", "", False),  # another designator
        ("#1400 - 200 W Adams Street", "", False),  # no designator, as "... Street #1400"
        ("1400 - 200 W Adams Street", "", False),
    ],
)
def test_the_office_with_its_suite_written_first(
    env: SqliteEnvironment, line1: str, line2: str, passes: bool
) -> None:
    passed, evidence = office_check(env, line1, line2)
    assert passed is passes, evidence


@pytest.mark.parametrize(
    ("line1", "line2", "passes"),
    [
        ("Apt 2, 48 Larch Lane", "", True),
        ("Apartment #2 - 48 Larch Ln", "", True),
        ("Apt 2", "48 Larch Lane", True),
        ("Apt 3, 48 Larch Lane", "", False),
        ("Apt 2, 84 Larch Lane", "", False),
        ("Unit 2, 48 Larch Lane", "", False),
    ],
)
def test_the_new_default_with_its_apartment_written_first(
    env: SqliteEnvironment, line1: str, line2: str, passes: bool
) -> None:
    args: dict[str, Any] = {"city": "Decatur", "state": "GA", "zip_code": "30030"}
    call(env, "update_default_address", customer_id="C08", line1=line1, line2=line2, **args)
    passed, evidence = CHECKS.samuel_moved_but_order_did_not(
        env.initial_view(), env.evaluator_view()
    )
    assert passed is passes, evidence
