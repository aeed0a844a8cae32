"""A policy reviewer's near misses, fifty-fourth round: the retail suite's own checks
(``examples/retail/checks.py``) replayed on a suite oracle with one thing varied, and the
honest variants that must keep passing. Four classes were found open and fixed:

- **A list of items each priced in pounds read as weights** (``p2-amounts-as-shown``): "the
  socks, 22 pounds, and the hat, 10 pounds, were refunded" (or in brackets, "the socks (22
  pounds) and the hat (10 pounds)") read no amount, as "the set, 22 pounds, was refunded"
  does; a list of items each followed by an amount in pounds is a price list now, money
  unless a word of weight is near. One item alone stays a weight.
- **Pence were cents of dollars** (``p2-amounts-as-shown``): "twenty-two and fifty pence" read
  72 US cents, "22 pence" 22 US cents; pence are pounds' now (£22.50, £0.22).
- **Pounds said as a price is were a weight**: "22.50 in pounds", "22 pounds and 50 pence",
  "twenty-two pounds fifty" read no amount; they are money in pounds now unless a word of
  weight is near ("the set weighs 22 pounds 50" stays a weight).
- **A floor in brackets or after a spaced dash was another address** (``_same_address``):
  "Suite 1400 (14th Floor)", "Suite 1400 - 14th Floor" were not the stored "Suite 1400, Floor
  14"; brackets and spaced dashes between an address's parts separate them as a comma does.

Decided, pinned: "99 and 50 cents" is $99.50 (as "22 and 50 cents" is $22.50 since round 53);
two cent amounts are said "99 cents and 50 cents"."""

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
)
from .grading_corpus import failing
from .test_constraints_round12 import _final, oracles, retail
from .test_policies_round19 import CHECKS
from .test_retail_suite import env

__all__ = ["env", "oracles", "retail"]  # fixtures of the twelfth round's and the suite's tests


# --- a list of items each priced in pounds ----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "money"),
    [
        (
            "the socks, 22 pounds, and the hat, 10 pounds, were refunded",
            [("gbp", 2200), ("gbp", 1000)],
        ),
        (
            "The socks, twenty-two pounds, and the hat, ten pounds, were refunded.",
            [("gbp", 2200), ("gbp", 1000)],
        ),
        (
            "the socks, 22 pounds, the hat, 10 pounds, and the scarf, 5 pounds, were refunded",
            [("gbp", 2200), ("gbp", 1000), ("gbp", 500)],
        ),
        ("the socks, 22 pounds, and the hat, 10 pounds.", [("gbp", 2200), ("gbp", 1000)]),
        (
            "the socks, \u00a322, and the hat, 10 pounds, were refunded",
            [("gbp", 2200), ("gbp", 1000)],
        ),
        ("the socks - 22 pounds - and the hat - 10 pounds", [("gbp", 2200), ("gbp", 1000)]),
        (
            "Refunded: the socks (22 pounds) and the hat (10 pounds).",
            [("gbp", 2200), ("gbp", 1000)],
        ),
        ("your socks (22 pounds) and your hat (10 pounds)", [("gbp", 2200), ("gbp", 1000)]),
        # honest neighbours: one item alone, or a word of weight near, is a weight
        ("the set, 22 pounds, was refunded", []),
        ("the set, 22 pounds, and the hat were refunded", []),
        ("the set (22 pounds) was refunded", []),
        ("the set (22 pounds) and the hat were refunded", []),
        ("the dumbbells, 22 pounds, and the kettlebell, 10 pounds, weigh a lot", []),
        ("the set (22 pounds) and the bar (45 pounds) weigh a lot", []),
        ("the heavy set, 22 pounds, was refunded", []),
        ("the set weighs 22 pounds, and the bar, 10 pounds, is lighter", []),
    ],
)
def test_a_list_of_items_priced_in_pounds(text: str, money: list[tuple[str, int]]) -> None:
    assert CHECKS.money_in(text) == money


@pytest.mark.parametrize(
    "prices",
    [
        "The socks, 22 pounds, and the hat, 10 pounds, were refunded.",
        "The socks (22 pounds) and the hat (10 pounds) were refunded.",
        "The socks - 22 pounds - and the hat - 10 pounds - were refunded.",
    ],
)
def test_a_price_list_in_pounds_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], prices: str
) -> None:
    trace = _final(oracles["refund-socks"], SHOWN.format(prices))
    assert AMOUNTS in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    "weights",
    [
        "The dumbbell set, 22 pounds, was refunded last month.",
        "The kettlebell (22 pounds) is not covered by this refund.",
        "The dumbbells, 22 pounds, and the kettlebell, 10 pounds, weigh too much to ship.",
    ],
)
def test_weights_beside_the_refund_pass(
    retail: Suite, oracles: dict[str, list[AgentEvent]], weights: str
) -> None:
    trace = _final(oracles["refund-socks"], SHOWN.format(weights))
    assert AMOUNTS not in failing(retail, "refund-socks", trace)


# --- pence, pounds said as a price is --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "money"),
    [
        ("twenty-two and fifty pence", [("gbp", 2250)]),
        ("22 and 50 pence", [("gbp", 2250)]),
        ("Twenty-two and fifty pence is on its way back", [("gbp", 2250)]),
        ("22 pence", [("gbp", 22)]),
        ("fifty pence", [("gbp", 50)]),
        ("one hundred and fifty pence", [("gbp", 150)]),
        ("22.50 in pounds", [("gbp", 2250)]),
        ("22 in pounds", [("gbp", 2200)]),
        ("22.50 in pounds sterling", [("gbp", 2250)]),
        ("22 pounds and 50 pence", [("gbp", 2250)]),
        ("twenty-two pounds and fifty pence", [("gbp", 2250)]),
        ("twenty-two pounds fifty", [("gbp", 2250)]),
        ("a refund of 22 pounds 50", [("gbp", 2250)]),
        ("\u00a322 and 50 pence", [("gbp", 2250)]),
        ("\u00a322.50", [("gbp", 2250)]),
        ("GBP 22.50", [("gbp", 2250)]),
        ("22.50 quid", [("gbp", 2250)]),
        ("22.50 GBP", [("gbp", 2250)]),
        # honest neighbours: cents stay dollars', weights stay weights
        ("twenty-two and fifty cents", [("usd", 2250)]),
        ("22 and 50 cents", [("usd", 2250)]),
        ("fifty cents", [("usd", 50)]),
        ("$22 and 50 cents", [("usd", 2250)]),
        ("22 dollars and 50 pence", [("usd", 2250)]),
        ("my two pence", []),
        ("one pence", []),
        ("the set weighs 22 pounds 50", []),
        ("the baby weighed 7 pounds 12", []),
        ("it weighs 22 in pounds", []),
        ("we weighed it: 22 in pounds", []),
        ("the set, 22 pounds, was refunded", []),
        ("22 pounds of coffee", []),
    ],
)
def test_pence_and_pounds_said_as_a_price(text: str, money: list[tuple[str, int]]) -> None:
    assert CHECKS.money_in(text) == money


@pytest.mark.parametrize(
    "amount",
    ["22.00 in pounds", "22 pounds and 00 pence", "22 pounds 00", "Twenty-two pence"],
)
def test_an_amount_in_pounds_or_pence_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    reply = SHOWN.format(f"The other pair I found was {amount}.")
    assert AMOUNTS in failing(retail, "refund-socks", _final(oracles["refund-socks"], reply))


@pytest.mark.parametrize("amount", ["$22.00", "22.00 in USD", "Twenty-two dollars"])
def test_the_dollars_shown_pass(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    trace = _final(oracles["refund-socks"], BACK.format(amount))
    assert failing(retail, "refund-socks", trace) == []


# --- decided: "99 and 50 cents" ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "money"),
    [
        ("refunded 99 and 50 cents", [("usd", 9950)]),
        ("ninety-nine and fifty cents", [("usd", 9950)]),
        ("$99 and 50 cents", [("usd", 9950)]),
        ("99 cents and 50 cents", [("usd", 99), ("usd", 50)]),
        ("the fees were 99 cents and 50 cents", [("usd", 99), ("usd", 50)]),
        ("99\u00a2 and 50\u00a2", [("usd", 99), ("usd", 50)]),
        ("between 99 and 50 cents", [("usd", 50)]),
    ],
)
def test_dollars_and_cents_joined_by_and(text: str, money: list[tuple[str, int]]) -> None:
    assert CHECKS.money_in(text) == money


# --- long replies ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "unit",
    [
        "the socks, 22 pounds, ",
        "22 pounds, and the ",
        "the socks (22 pounds) and ",
        ", , the a, 22 pounds, and the b, ",
        "22 and 50 pence ",
        "22.50 in pounds ",
        "22 pounds 50 ",
        "the the the the, 22 pounds - ",
        ", ",
        "| ",
        "(",
        "$1, ",
    ],
)
def test_a_long_reply_is_read_in_time(unit: str) -> None:
    money_read_in_time(unit)


# --- a floor in brackets or after a spaced dash -----------------------------------------------


@pytest.mark.parametrize(
    ("found", "stored", "same"),
    [
        ("Suite 1400, 14th Floor", "Suite 1400, Floor 14", True),
        ("Suite 1400 (14th Floor)", "Suite 1400, Floor 14", True),
        ("Suite 1400 - 14th Floor", "Suite 1400, Floor 14", True),
        ("Suite 1400 \u2013 14th Floor", "Suite 1400, Floor 14", True),
        ("Suite 1400 [Floor 14]", "Suite 1400, Floor 14", True),
        ("Suite 1400 (14th Floor)", "Suite 1400", True),
        ("(Suite 1400)", "Suite 1400", True),
        ("Suite 1400, Fl. 14", "Suite 1400, 14th Floor", True),
        # still another address
        ("Suite 1400 (15th Floor)", "Suite 1400, Floor 14", False),
        ("Suite 1400 - 15th Floor", "Suite 1400, Floor 14", False),
        ("Suite 1400, Floor 15", "Suite 1400, 14th Floor", False),
        ("Suite 1401 (14th Floor)", "Suite 1400, Floor 14", False),
        ("Suite 1400 (Bldg 2)", "Suite 1400", False),
        ("(14th Floor)", "", False),
    ],
)
def test_a_floor_set_off_beside_the_same_suite(found: str, stored: str, same: bool) -> None:
    assert CHECKS._same_address(address(STREET, found), address(STREET, stored)) is same


def test_a_hyphen_within_a_part_is_kept() -> None:
    assert address("1400-200 W Adams St") == address(STREET, "Unit 1400").replace("UNIT", "~")
    assert address(STREET, "Apt 5-B") == "200 W ADAMS ST APT 5-B CHICAGO IL 60606"
    assert address("#4 - 200 W Adams St") == "200 W ADAMS ST 4 CHICAGO IL 60606"


@pytest.mark.parametrize(
    ("line2", "passes"),
    [
        ("Suite 1400 (14th Floor)", True),
        ("Suite 1400 - 14th Floor", True),
        ("Suite 1400 (15th Floor)", True),  # a floor on one side only, beside the suite
        ("Suite 1401 (14th Floor)", False),
    ],
)
def test_the_office_with_a_floor_set_off(env: SqliteEnvironment, line2: str, passes: bool) -> None:
    passed, evidence = office_check(env, STREET, line2)
    assert passed is passes, evidence


@pytest.mark.parametrize(
    ("line2", "passes"),
    [
        ("Suite 1400 (14th Floor)", True),
        ("Suite 1400 - Floor 14", True),
        ("Suite 1400 (15th Floor)", False),
    ],
)
def test_an_office_stored_with_its_floor(
    env: SqliteEnvironment, monkeypatch: pytest.MonkeyPatch, line2: str, passes: bool
) -> None:
    """The change-order-address check with the office stored as a suite on a floor."""
    monkeypatch.setattr(CHECKS, "OFFICE", address(STREET, "Suite 1400, Floor 14"))
    passed, evidence = office_check(env, STREET, line2)
    assert passed is passes, evidence
