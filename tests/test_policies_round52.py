"""A policy reviewer's near misses, fifty-second round: the retail suite's own checks
(``examples/retail/checks.py``) replayed on a suite oracle with one thing varied, and the
honest variants that must keep passing. Three classes were found open and fixed:

- **Pounds qualifying a thing were money among words of money** (``p2-amounts-as-shown``):
  "the set (22 pounds) was refunded", "we refunded the 22 pound dumbbell set" read £22. Pounds
  in brackets after an item's word, or written as a thing's quality ("the 22 pound set", "a
  22-pound box") are a weight now; "a 22 pound refund", "a 22-pound voucher", "the refund (22
  pounds)" and "Refund: 22 pounds" are money. An amount joined to its currency by a hyphen ("a
  23-dollar refund") was no amount at all; it is one now.
- **A currency word beside an amount in words was not read** (``p2-amounts-as-shown``):
  "twenty-two fifty USD", "twenty-two EUR" and "GBP twenty-two" were no amount, and "EUR
  twenty-two fifty", "€twenty-two fifty", "C$ twenty-two fifty" were read as dollars. Every
  mark the readers know (symbols, codes, names) is read before or after an amount in words.
- **A floor written otherwise was another address** (``_same_address``): "14th Floor", "Fl
  14", "Level 14", "Fourteenth Floor" and "14th Floor, 200 W Adams St" were not the stored
  "Floor 14", nor "Ste1400" the stored "Suite 1400". Publication 28's designators are
  compared in one spelling, apart from the number, a floor's ordinal read as its number; a
  floor is still not a suite, nor "#14" a unit."""

from __future__ import annotations

import pytest

from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent

from ._policies_builders import (
    AMOUNTS,
    BACK,
    SHOWN,
    STREET,
    address,
    money_read_in_time,
    office_check,
    said_first,
)
from .grading_corpus import failing
from .test_constraints_round12 import _final, oracles, retail
from .test_policies_round19 import CHECKS
from .test_retail_suite import env

__all__ = ["env", "oracles", "retail"]  # fixtures of the twelfth round's and the suite's tests


# --- pounds that qualify a thing -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "money"),
    [
        # a weight: in brackets after an item, or the quality of a thing
        ("the set (22 pounds) was refunded", []),
        ("the set (about 22 pounds) was refunded to your card", []),
        ("the dumbbells [22 pounds] were refunded", []),
        ("we refunded the 22 pound dumbbell set", []),
        ("We refunded the 22-pound dumbbell set", []),
        ("we refunded the twenty-two-pound set", []),
        ("we refunded the twenty-two pound set", []),
        ("two 22 pound dumbbells were refunded", []),
        ("your refund for the 22 pound kettlebell is on its way back", []),
        ("a 22-pound box ships free", []),
        ("we refunded the 22 lb dumbbell set", []),
        # money: a thing of money qualified, a word of money at the bracket, a label
        ("a 22 pound refund is on its way back", [("gbp", 2200)]),
        ("the 22 pound refund is on its way back", [("gbp", 2200)]),
        ("A twenty-two pound refund is on its way", [("gbp", 2200)]),
        ("a 22-pound refund went to your card", [("gbp", 2200)]),
        ("a 22 pound voucher was added to your account", [("gbp", 2200)]),
        ("the 22 pound difference is back on your card", [("gbp", 2200)]),
        ("the 22 pound shipping fee was refunded", [("gbp", 2200)]),
        ("a 22-pound restocking fee applies", [("gbp", 2200)]),
        ("we refunded the 22 pound return box", []),
        ("the refund (22 pounds) is on its way back", [("gbp", 2200)]),
        ("the refund amount (22 pounds) is on its way", [("gbp", 2200)]),
        ("the set (22 pounds back to your card) is done", [("gbp", 2200)]),
        ("the set (refunded: 22 pounds)", [("gbp", 2200)]),
        ("sent back to you (22 pounds)", [("gbp", 2200)]),
        ("Refund: 22 pounds", [("gbp", 2200)]),
        ("Total refunded: 22 pounds", [("gbp", 2200)]),
        ("the 22 pound is back on your card", [("gbp", 2200)]),
        ("your 22 pounds is on its way back", [("gbp", 2200)]),
        ("22 pounds is on its way back", [("gbp", 2200)]),
        ("Weight: 22 pounds", []),
    ],
)
def test_pounds_qualifying_a_thing_are_a_weight(text: str, money: list[tuple[str, int]]) -> None:
    assert CHECKS.money_in(text) == money


@pytest.mark.parametrize(
    "aside",
    [
        "Your refund for the dumbbell set (22 pounds) is a separate request.",
        "Your refund covers the socks, not the 22 pound dumbbell set.",
        "The refund is for the socks only, not the 22-pound kettlebell.",
        "A refund for the two 22 pound dumbbells needs a return label first.",
    ],
)
def test_a_weight_among_words_of_money_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], aside: str
) -> None:
    trace = _final(oracles["refund-socks"], SHOWN.format(aside))
    assert AMOUNTS not in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    "amount",
    [
        "A 22 pound refund",
        "A 22-pound refund",
        "Your refund (22 pounds)",
        "A 23-dollar refund",
        "A twenty-three-dollar refund",
    ],
)
def test_money_qualifying_a_refund_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    trace = _final(oracles["refund-socks"], BACK.format(amount))
    assert AMOUNTS in failing(retail, "refund-socks", trace)


def test_an_amount_joined_by_a_hyphen_as_shown_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    for amount in ("A 22-dollar refund", "A twenty-two-dollar refund"):
        trace = _final(oracles["refund-socks"], BACK.format(amount))
        assert failing(retail, "refund-socks", trace) == []


# --- a currency word beside an amount in words -------------------------------------------------


@pytest.mark.parametrize(
    ("text", "money"),
    [
        ("twenty-two fifty USD", [("usd", 2250)]),
        ("twenty-two fifty usd back to your card", [("usd", 2250)]),
        ("twenty-two fifty bucks", [("usd", 2250)]),
        ("twenty-two USD", [("usd", 2200)]),
        ("twenty-two fifty EUR", [("eur", 2250)]),
        ("twenty-two fifty €", [("eur", 2250)]),
        ("twenty-two fifty CAD", [("cad", 2250)]),
        ("twenty-two fifty GBP", [("gbp", 2250)]),
        ("twenty-two fifty quid", [("gbp", 2250)]),
        ("twenty-two USD fifty", [("usd", 2250)]),
        ("USD twenty-two fifty", [("usd", 2250)]),
        ("USD twenty-two", [("usd", 2200)]),
        ("$twenty-two fifty", [("usd", 2250)]),
        ("$ twenty-two fifty", [("usd", 2250)]),
        ("EUR twenty-two fifty", [("eur", 2250)]),
        ("€twenty-two fifty", [("eur", 2250)]),
        ("€ twenty-two", [("eur", 2200)]),
        ("C$ twenty-two fifty", [("cad", 2250)]),
        ("CAD twenty-two fifty", [("cad", 2250)]),
        ("GBP twenty-two", [("gbp", 2200)]),
        ("USD one hundred fifty", [("usd", 15000)]),
        ("one hundred fifty USD", [("usd", 15000)]),
        ("USD twenty-two and fifty cents", [("usd", 2250)]),
        ("USD twenty-two fifty is back on your card", [("usd", 2250)]),
        # honest neighbours: no amount in words after a code, and the readings kept
        ("charged in EUR two weeks ago", []),
        ("in USD one way or another", []),
        ("22.50", [("usd", 2250)]),
        ("$22.50", [("usd", 2250)]),
        ("twenty-two dollars fifty", [("usd", 2250)]),
        ("twenty-two fifty dollars", [("usd", 2250)]),
        ("twenty-two fifty", [("usd", 2250)]),
        ("USD 22 back", [("usd", 2200)]),
    ],
)
def test_a_currency_beside_an_amount_in_words(text: str, money: list[tuple[str, int]]) -> None:
    assert CHECKS.money_in(text) == money


@pytest.mark.parametrize(
    "amount",
    [
        "Twenty-two fifty USD",
        "twenty-two fifty usd",
        "Twenty-two fifty bucks",
        "Twenty-two EUR",
        "EUR twenty-two",
        "EUR twenty-two fifty",
        "€twenty-two",
        "C$ twenty-two",
        "Twenty-two CAD",
        "GBP twenty-two",
        "USD twenty-three",
        "$twenty-two fifty",
    ],
)
def test_a_currency_beside_an_amount_in_words_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    trace = _final(oracles["refund-socks"], BACK.format(amount))
    assert AMOUNTS in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    "amount", ["Twenty-two USD", "USD twenty-two", "$twenty-two", "Twenty-two dollars", "$22.00"]
)
def test_the_dollars_shown_beside_a_currency_word_pass(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    trace = _final(oracles["refund-socks"], BACK.format(amount))
    assert failing(retail, "refund-socks", trace) == []


@pytest.mark.parametrize(
    "amount",
    ["twenty-two fifty USD", "USD twenty-two fifty", "$twenty-two fifty", "22.50", "$22.50"],
)
def test_the_customers_amount_said_back_with_a_currency_word_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    said = said_first(oracles["refund-socks"], "I was charged $22.50 for them.")
    reply = SHOWN.format(f"The {amount} you mentioned included a fee that is not refundable.")
    assert failing(retail, "refund-socks", _final(said, reply)) == []


@pytest.mark.parametrize(
    "unit",
    [
        "USD twenty-two fifty is back. ",
        "the set (22 pounds) was refunded. ",
        "we refunded the 22 pound dumbbell set. ",
        "((((( 22 pounds ",
        "Refund: 22 pounds ",
        "$ one two three four five six seven eight nine ten eleven twelve ",
        "twenty-two fifty USD ",
    ],
)
def test_a_long_reply_is_read_in_time(unit: str) -> None:
    money_read_in_time(unit)


# --- floors and other units ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line1", "line2", "same"),
    [
        (STREET, "14th Floor", True),
        (STREET, "14TH FL", True),
        (STREET, "14th Fl.", True),
        (STREET, "Fl 14", True),
        (STREET, "Flr 14", True),
        (STREET, "Floor 14", True),
        (STREET, "floor #14", True),
        (STREET, "Level 14", True),
        (STREET, "Fourteenth Floor", True),
        ("14th Floor, 200 W Adams Street", "", True),
        ("Level 14, 200 W Adams St", "", True),
        ("200 W Adams Street, 14th Floor", "", True),
        ("14-200 W Adams St", "", True),  # the Canadian form: any designator
        (STREET, "15th Floor", False),
        (STREET, "Floor 15", False),
        (STREET, "Fifteenth Floor", False),
        ("15th Floor, 200 W Adams Street", "", False),
        ("14th Floor, 2250 W Adams Street", "", False),  # another house number
        (STREET, "Suite 14", False),  # a floor is not a suite
        (STREET, "Unit 14", False),
        (STREET, "#14", False),
        (STREET, "", False),
    ],
)
def test_a_floor_in_any_spelling(line1: str, line2: str, same: bool) -> None:
    stored = address(STREET, "Floor 14")
    assert CHECKS._same_address(address(line1, line2), stored) is same
    assert CHECKS._same_address(address(line1, line2), address(STREET, "14th Floor")) is same


@pytest.mark.parametrize(
    ("stored", "found", "same"),
    [
        ("Unit 14", "unit #14", True),
        ("Unit 14", "Unit 15", False),
        ("Unit 14", "Apt 14", False),
        ("Apt. 14", "Apartment 14", True),
        ("Apt. 14", "Apt #14", True),
        ("Apt. 14", "Apt 41", False),
        ("Apt. 14", "Unit 14", False),
        ("Room 14", "Rm 14", True),
        ("Room 14", "Rm. 15", False),
        ("Suite 1400", "Ste. 1400", True),
        ("Suite 1400", "Ste1400", True),
        ("Suite 1400", "Suite1400", True),
        ("Suite 1400", "Ste140", False),
        ("Apt 5F", "Apt5F", True),
        ("Apt 5F", "Apt. 5f", True),
        ("Apt 5F", "Apt 5E", False),
        ("Suite 1400", "14th Floor", False),
        ("Suite 1400", "Floor 1400", False),
        ("Building 2", "Bldg 2", True),
        ("Building 2", "Bldg 3", False),
        ("#14", "#14", True),
        ("#14", "Unit 14", False),
    ],
)
def test_other_units_in_any_spelling(stored: str, found: str, same: bool) -> None:
    assert CHECKS._same_address(address(STREET, found), address(STREET, stored)) is same


def test_a_streets_ordinal_is_no_floor() -> None:
    assert address("610 W 112th Street", "Apt 3C") == "610 W 112TH ST APT 3C CHICAGO IL 60606"
    assert address("610 W 112th Street", "2nd Floor") == "610 W 112TH ST FL 2 CHICAGO IL 60606"
    # a street's ordinal before the state Florida is no floor either
    assert CHECKS._address("100 W 3rd", "", "", "FL", "33101") == "100 W 3RD FL 33101"


@pytest.mark.parametrize(
    ("line1", "line2", "passes"),
    [
        ("200 W Adams Street", "14th Floor", True),
        ("14th Floor, 200 W Adams St", "", True),
        ("200 W Adams St", "Level 14", True),
        ("200 W Adams St", "15th Floor", False),
        ("200 W Adams St", "Suite 14", False),
    ],
)
def test_an_office_on_a_floor(
    env: SqliteEnvironment,
    monkeypatch: pytest.MonkeyPatch,
    line1: str,
    line2: str,
    passes: bool,
) -> None:
    """The change-order-address check with the office stored as a floor."""
    monkeypatch.setattr(CHECKS, "OFFICE", address(STREET, "Floor 14"))
    passed, evidence = office_check(env, line1, line2)
    assert passed is passes, evidence


@pytest.mark.parametrize(
    ("line2", "passes"),
    [
        ("Suite 1400", True),
        ("Ste 1400", True),
        ("Ste1400", True),
        ("14th Floor", False),
        ("Floor 14", False),
        ("Fl 1400", False),
    ],
)
def test_the_suite_stored_is_no_floor(env: SqliteEnvironment, line2: str, passes: bool) -> None:
    passed, evidence = office_check(env, STREET, line2)
    assert passed is passes, evidence
