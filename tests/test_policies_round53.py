"""A policy reviewer's near misses, fifty-third round: the retail suite's own checks
(``examples/retail/checks.py``) replayed on a suite oracle with one thing varied, and the
honest variants that must keep passing. Four classes were found open and fixed:

- **Pounds set off by commas or dashes after an item were money** (``p2-amounts-as-shown``):
  "the set, 22 pounds, was refunded" and "the dumbbells - 22 pounds each - were refunded"
  read £22, so an honest reply naming a weight beside the $22.00 refund failed. An aside
  after an item's word (with a determiner: "the set", "your dumbbells") with no word of money
  in it is a weight now; "the refund, 22 pounds, is on its way", "Done, 22 pounds, back to
  your card" and "the set, 22 pounds." (no end to the aside) stay money.
- **Dollars and cents joined by "and" with no currency were cents** (``p2-amounts-as-shown``):
  "twenty-two and fifty cents" read 72 cents; it is $22.50 now ("one hundred and fifty cents"
  is still 150 cents, "between twenty and fifty cents" no sum). An amount before "in" and a
  currency ("twenty-two fifty in USD", "22.50 in EUR") was no amount, or dollars; it is read
  in that currency now.
- **A floor beside the same unit was another address** (``_same_address``): "Suite 1400,
  14th Floor" was not the stored "Suite 1400". A floor named on one side only, beside an
  apartment, suite, unit or room both name, and the same floor in another place ("14th Floor,
  Suite 1400"), tell no address apart now; another floor ("Suite 1400, 15th Floor" for
  "Suite 1400, 14th Floor"), a floor beside a building or the street alone still do.
- **A floor's plain number before the word was no floor** (``_units_named``): "14 Floor",
  "14 Fl" were not the stored "Floor 14"; they are now ("Ste 140 Fl 14" is still suite 140
  on floor 14)."""

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


# --- pounds set off by commas or dashes ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "money"),
    [
        # a weight: an aside after an item's word, with no word of money in it
        ("the set, 22 pounds, was refunded", []),
        ("The set, 22 pounds, was refunded to your card", []),
        ("the dumbbells - 22 pounds each - were refunded", []),
        ("the dumbbells, 22 pounds each, were refunded", []),
        ("the dumbbells \u2014 22 pounds each \u2014 were refunded", []),
        ("the dumbbells\u201422 pounds each\u2014were refunded", []),
        ("the dumbbells \u2013 22 pounds \u2013 were refunded", []),
        ("the dumbbells -- 22 pounds -- were refunded", []),
        ("the adjustable dumbbell set, about 22 pounds, was refunded", []),
        ("your kettlebell, 22 pounds, is on its way back", []),
        ("two dumbbells, 22 pounds each, were refunded", []),
        # money: a word of money before or in the aside, no item, or no end to the aside
        ("the refund, 22 pounds, is on its way", [("gbp", 2200)]),
        ("the amount, 22 pounds, is back on your card", [("gbp", 2200)]),
        ("your card, 22 pounds, back", [("gbp", 2200)]),
        ("Done, 22 pounds, back to your card", [("gbp", 2200)]),
        ("we refunded you, 22 pounds, to your card", [("gbp", 2200)]),
        ("the set, 22 pounds back to your card, is done", [("gbp", 2200)]),
        ("the set, refunded 22 pounds, is done", [("gbp", 2200)]),
        ("We refunded the set, 22 pounds.", [("gbp", 2200)]),
        ("the set, 22 pounds - refunded", [("gbp", 2200)]),
        ("your order, 22 pounds, was refunded", [("gbp", 2200)]),
        ("the purchase - 22 pounds - was refunded", [("gbp", 2200)]),
        ("your order (22 pounds) was refunded", [("gbp", 2200)]),
        ("the order, 22 pounds, ships free", []),
        ("the set, 22 GBP, was refunded", [("gbp", 2200)]),
        ("the set, \u00a322, was refunded", [("gbp", 2200)]),
        ("the set, 22 dollars, was refunded", [("usd", 2200)]),
    ],
)
def test_pounds_set_off_after_an_item_are_a_weight(text: str, money: list[tuple[str, int]]) -> None:
    assert CHECKS.money_in(text) == money


@pytest.mark.parametrize(
    "aside",
    [
        "The dumbbell set, 22 pounds, was refunded last month.",
        "The kettlebell - 22 pounds - is not covered by this refund.",
        "The dumbbells, 22 pounds each, need a label before a refund.",
        "The dumbbells \u2014 22 pounds each \u2014 were refunded separately.",
    ],
)
def test_a_weight_set_off_among_words_of_money_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], aside: str
) -> None:
    trace = _final(oracles["refund-socks"], SHOWN.format(aside))
    assert AMOUNTS not in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    "amount",
    [
        "The refund, 22 pounds,",
        "Your refund - 22 pounds -",
        "The amount, 22 pounds,",
        "Your order, 22 pounds,",
    ],
)
def test_pounds_set_off_after_money_fail(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    trace = _final(oracles["refund-socks"], BACK.format(amount))
    assert AMOUNTS in failing(retail, "refund-socks", trace)


# --- dollars and cents joined by "and", a currency after "in" ---------------------------------


@pytest.mark.parametrize(
    ("text", "money"),
    [
        ("twenty-two and fifty cents", [("usd", 2250)]),
        ("Twenty-two and fifty cents is on its way back", [("usd", 2250)]),
        ("twenty-two and fifty-five cents", [("usd", 2255)]),
        ("twenty-two and five cents", [("usd", 2205)]),
        ("twenty-two and 50 cents", [("usd", 2250)]),
        ("22 and 50 cents", [("usd", 2250)]),
        ("one hundred and twenty-two and fifty cents", [("usd", 12250)]),
        ("twenty-two and fifty \u00a2", [("usd", 2250)]),
        ("twenty-two fifty in USD", [("usd", 2250)]),
        ("twenty-two fifty in usd back to your card", [("usd", 2250)]),
        ("twenty-two in euros", [("eur", 2200)]),
        ("twenty-two fifty in EUR", [("eur", 2250)]),
        ("22.50 in EUR", [("eur", 2250)]),
        ("22 in USD", [("usd", 2200)]),
        ("a refund of 22 in Canadian dollars", [("cad", 2200)]),
        # honest neighbours: the readings kept
        ("one hundred and fifty cents", [("usd", 150)]),
        ("one thousand and fifty cents", [("usd", 1050)]),
        ("the fee is between 22 and 50 cents", [("usd", 50)]),
        ("fifty cents", [("usd", 50)]),
        ("2200 cents", [("usd", 2200)]),
        ("twenty-two dollars and fifty cents", [("usd", 2250)]),
        ("$22 and 50 cents", [("usd", 2250)]),
        ("USD twenty-two and fifty cents", [("usd", 2250)]),
        ("twenty-two fifty", [("usd", 2250)]),
        ("twenty-two fifty in total", [("usd", 2250)]),
        ("charged in EUR two weeks ago", []),
        ("22.50 in store credit", [("usd", 2250)]),
        ("two in stock", []),
    ],
)
def test_dollars_and_cents_said_with_and_or_in(text: str, money: list[tuple[str, int]]) -> None:
    assert CHECKS.money_in(text) == money


@pytest.mark.parametrize(
    "amount",
    [
        "Twenty-three fifty in USD",
        "Twenty-three in USD",
        "Twenty-two in euros",
        "22.00 in EUR",
        "Twenty-two and fifty cents",
    ],
)
def test_an_amount_in_a_currency_or_with_its_cents_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    trace = _final(oracles["refund-socks"], BACK.format(amount))
    assert AMOUNTS in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    "amount",
    ["twenty-two and fifty cents", "twenty-two fifty in USD", "22 and 50 cents", "22.50 in USD"],
)
def test_the_customers_amount_said_back_with_and_or_in_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    said = said_first(oracles["refund-socks"], "I was charged $22.50 for them.")
    reply = SHOWN.format(f"The {amount} you mentioned included a fee that is not refundable.")
    assert failing(retail, "refund-socks", _final(said, reply)) == []


def test_the_dollars_shown_said_in_usd_pass(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    for amount in ("Twenty-two in USD", "22.00 in USD", "Twenty-two dollars and no cents"):
        trace = _final(oracles["refund-socks"], BACK.format(amount))
        assert failing(retail, "refund-socks", trace) == []


@pytest.mark.parametrize(
    "unit",
    [
        "the set, 22 pounds, was refunded. ",
        "the dumbbells - 22 pounds each - were refunded ",
        ", , , , 22 pounds ",
        "the a the a the, 22 pounds, ",
        "twenty-two and fifty cents ",
        "one two three four five six seven eight nine ten eleven and fifty cents ",
        "twenty-two fifty in USD ",
        "22 in 22 in 22 in USD ",
    ],
)
def test_a_long_reply_is_read_in_time(unit: str) -> None:
    money_read_in_time(unit)


# --- a floor beside the same unit, a floor's plain number -------------------------------------


@pytest.mark.parametrize(
    ("found", "stored", "same"),
    [
        ("Suite 1400, 14th Floor", "Suite 1400", True),
        ("Suite 1400, 14 Floor", "Suite 1400", True),
        ("14th Floor, Suite 1400", "Suite 1400", True),
        ("Suite 1400", "Suite 1400, 14th Floor", True),
        ("14th Floor, Suite 1400", "Suite 1400, 14th Floor", True),
        ("Ste 1400 Fl 14", "Suite 1400, 14th Floor", True),
        ("Apt 5F, 5th Floor", "Apt 5F", True),
        ("Unit 14, 2nd Floor", "Unit 14", True),
        ("Room 14, Level 2", "Room 14", True),
        # still another address
        ("Suite 1400, 15th Floor", "Suite 1400, 14th Floor", False),
        ("Suite 1401, 14th Floor", "Suite 1400", False),
        ("Suite 1401", "Suite 1400, 14th Floor", False),
        ("Suite 1400, 14th Floor", "Floor 14", False),  # a suite is not the whole floor
        ("14th Floor", "", False),
        ("", "14th Floor", False),
        ("Bldg 2, 3rd Floor", "Bldg 2", False),  # a building is on more than one floor
        ("Apt 14, 5th Floor", "Unit 14", False),
    ],
)
def test_a_floor_beside_the_same_unit(found: str, stored: str, same: bool) -> None:
    assert CHECKS._same_address(address(STREET, found), address(STREET, stored)) is same


@pytest.mark.parametrize(
    ("line1", "line2", "same"),
    [
        (STREET, "14 Floor", True),
        (STREET, "14 FL", True),
        (STREET, "14 Flr.", True),
        ("14 Floor, 200 W Adams Street", "", True),
        ("200 W Adams Street, 14 Floor", "", True),
        (STREET, "15 Floor", False),
        (STREET, "Suite 14 Floor", False),  # a suite's number, then a word
        (STREET, "140 Floor", False),
    ],
)
def test_a_floors_plain_number(line1: str, line2: str, same: bool) -> None:
    assert CHECKS._same_address(address(line1, line2), address(STREET, "Floor 14")) is same


def test_a_units_number_before_a_floors_is_no_floor() -> None:
    assert address(STREET, "Ste 140 Fl 14") == "200 W ADAMS ST STE 140 FL 14 CHICAGO IL 60606"
    assert address("14 Level St") == "14 LEVEL ST CHICAGO IL 60606"
    # the state Florida before its ZIP code is no floor to set apart
    miami = ("Miami", "FL", "33101")
    assert not CHECKS._same_address(
        CHECKS._address("100 W 3rd", "Suite 4", *miami),
        CHECKS._address("100 W 3rd", "Suite 4", "Miami", "FL", "33102"),
    )


@pytest.mark.parametrize(
    ("line1", "line2", "passes"),
    [
        (STREET, "Suite 1400, 14th Floor", True),
        (STREET, "14th Floor, Suite 1400", True),
        (STREET, "Ste 1400, 14 Fl", True),
        ("Suite 1400, 200 W Adams St", "14th Floor", True),
        (STREET, "Suite 1401, 14th Floor", False),
        (STREET, "14th Floor", False),
    ],
)
def test_the_suite_stored_beside_a_floor(
    env: SqliteEnvironment, line1: str, line2: str, passes: bool
) -> None:
    passed, evidence = office_check(env, line1, line2)
    assert passed is passes, evidence


@pytest.mark.parametrize(
    ("line2", "passes"),
    [("Suite 1400, 14th Floor", True), ("Suite 1400", True), ("Suite 1400, 15th Floor", False)],
)
def test_an_office_stored_with_its_floor(
    env: SqliteEnvironment, monkeypatch: pytest.MonkeyPatch, line2: str, passes: bool
) -> None:
    """The change-order-address check with the office stored as a suite on a floor."""
    monkeypatch.setattr(CHECKS, "OFFICE", address(STREET, "Suite 1400, 14th Floor"))
    passed, evidence = office_check(env, STREET, line2)
    assert passed is passes, evidence
