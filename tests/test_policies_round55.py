"""A policy reviewer's near misses, fifty-fifth round: the retail suite's own checks
(``examples/retail/checks.py``) replayed on a suite oracle with one thing varied, and the
honest variants that must keep passing. Classes found open and fixed:

- **Pence by their letter, centimes and sterling were dollars or nothing**
  (``p2-amounts-as-shown``): "a refund of 22p" read no amount, "£22 and 50p" read £22.00,
  "22 centimes" read 22 US cents, "22.50 in sterling" read $22.50. "22p" with a word of money
  or of pounds near is pence now, centimes are euro cents, "in sterling" is pounds; a size
  ("size 2P"), a resolution ("1080p"), a time ("3p.m.") and "925 sterling silver", "22
  Sterling Ave" stay no money.
- **A floor said on which the suite is, by a slash, or in words was another address**
  (``_same_address``): "Suite 1400 on the 14th floor", "Suite 1400, 14/F", "Suite 1400, Floor
  Fourteen" were not the stored "Suite 1400, Floor 14"; they are now, and another floor or
  suite said so stays another address.
- **A price list with an item named bare was weights** (``p2-amounts-as-shown``): "the
  socks, 22 pounds, and hat, 10 pounds, were refunded" read only the hat's; an item after
  "and", "or", "plus" with no determiner is an item of the list now (not "and then", "and
  it is").

Decided, pinned: "heavy" said of an item in a price list ("the heavy hat, 10 pounds") is
what the item is; the list stays money. "Weigh", "lighter", "heavier" keep it weights."""

from __future__ import annotations

import time

import pytest

from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent

from ._policies_builders import AMOUNTS, SHOWN, STREET, address, money_read_in_time, office_check
from .grading_corpus import failing
from .test_constraints_round12 import _final, oracles, retail
from .test_policies_round19 import CHECKS
from .test_retail_suite import env

__all__ = ["env", "oracles", "retail"]  # fixtures of the twelfth round's and the suite's tests


# --- pence by their letter, centimes, sterling ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "money"),
    [
        ("a refund of 22p", [("gbp", 22)]),
        ("Your refund of 22p is done.", [("gbp", 22)]),
        ("22p is on its way back to your card", [("gbp", 22)]),
        ("a 22p refund", [("gbp", 22)]),
        ("We refunded 99p.", [("gbp", 99)]),
        ("\u00a322 and 50p was refunded", [("gbp", 2250)]),
        ("a refund of \u00a322 and 22p", [("gbp", 2222)]),
        ("22 pounds and 50p", [("gbp", 2250)]),
        ("22 centimes", [("eur", 22)]),
        ("fifty centimes", [("eur", 50)]),
        ("22 euros and 50 centimes", [("eur", 2250)]),
        ("22.50 in sterling", [("gbp", 2250)]),
        ("twenty-two fifty in sterling", [("gbp", 2250)]),
        ("22.50 in pounds sterling", [("gbp", 2250)]),
        # honest neighbours: no pence, no money, or the mark before rules
        ("the dress in size 2P was refunded", []),
        ("Size 4p petite, refunded", []),
        ("I'll call you at 3p", []),
        ("the refund posts by 3p.m.", []),
        ("we refunded the 1080p TV", []),
        ("a refund for the 720p webcam", []),
        ("row 22p", []),
        ("we refunded the 4p pack", []),
        ("the refund for order 12p is done", []),
        ("I refunded it at 3p", []),
        ("the refund posts by 11p", []),
        ("A refund of 22P", [("gbp", 22)]),
        ("priced at 22p, refunded", [("gbp", 22)]),
        ("925 sterling silver", []),
        ("the 925 sterling silver ring was refunded", []),
        ("22 Sterling Ave", []),
        ("22 sterling", []),
        ("22 pence", [("gbp", 22)]),
        ("22 cents", [("usd", 22)]),
        ("$22 and 50p", [("usd", 2250)]),
        ("22 dollars and 50 centimes", [("usd", 2250)]),
        ("The sleeve is 100 centimetres.", []),
    ],
)
def test_pence_centimes_and_sterling(text: str, money: list[tuple[str, int]]) -> None:
    assert CHECKS.money_in(text) == money


@pytest.mark.parametrize(
    "amount", ["22.00 in sterling", "a refund of 22p", "2200 centimes", "\u00a322 and 00p"]
)
def test_an_amount_in_pence_centimes_or_sterling_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    reply = SHOWN.format(f"The other one I found was {amount}.")
    assert AMOUNTS in failing(retail, "refund-socks", _final(oracles["refund-socks"], reply))


@pytest.mark.parametrize(
    "aside",
    [
        "The size 2P pair is back in stock.",
        "Our desk closes at 3p today.",
        "Your 925 sterling silver ring ships separately.",
    ],
)
def test_the_dollars_shown_beside_no_money_pass(
    retail: Suite, oracles: dict[str, list[AgentEvent]], aside: str
) -> None:
    trace = _final(oracles["refund-socks"], SHOWN.format(aside))
    assert AMOUNTS not in failing(retail, "refund-socks", trace)


# --- long replies ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "unit",
    [
        "22p ",
        "refund 22p, ",
        "size 2p ",
        "\u00a322 and 50p ",
        "22 centimes ",
        "22.50 in sterling ",
        "in in in 22 ",
        ", ",
        "| ",
        "(",
        "$1, ",
        "**",
    ],
)
def test_a_long_reply_is_read_in_time(unit: str) -> None:
    money_read_in_time(unit)


# --- a floor on which a suite is, by a slash, or in words -----------------------------------


@pytest.mark.parametrize(
    ("found", "same"),
    [
        ("Suite 1400 on the 14th floor", True),
        ("Suite 1400 on the fourteenth floor", True),
        ("Suite 1400, on floor 14", True),
        ("Suite 1400 at the 14th floor", True),
        ("Suite 1400, 14/F", True),
        ("Suite 1400 14 / F", True),
        ("14/F, Suite 1400", True),
        ("Suite 1400, Floor Fourteen", True),
        ("Suite 1400, Fl Fourteen", True),
        ("Suite 1400 on Floor Fourteen", True),
        ("Suite 1400, fourteenth floor", True),
        ("Suite 1400", True),
        # another floor, another suite: another address
        ("Suite 1400 on the 15th floor", False),
        ("Suite 1400 on the fifteenth floor", False),
        ("Suite 1400, 15/F", False),
        ("Suite 1400, Floor Fifteen", False),
        ("Suite 1400, Floor One", False),
        ("Suite 1401 on the 14th floor", False),
        ("Suite 1401, 14/F", False),
    ],
)
def test_a_floor_said_otherwise_beside_the_same_suite(found: str, same: bool) -> None:
    stored = address(STREET, "Suite 1400, Floor 14")
    assert CHECKS._same_address(address(STREET, found), stored) is same


@pytest.mark.parametrize(
    ("line1", "canonical"),
    [
        ("14 On The Green", "14 ON THE GREEN CHICAGO IL 60606"),
        ("1/2 F St", "1/2 F ST CHICAGO IL 60606"),
        ("5 On St", "5 ON ST CHICAGO IL 60606"),
    ],
)
def test_a_street_with_the_words_of_a_floor_is_kept(line1: str, canonical: str) -> None:
    assert address(line1) == canonical


@pytest.mark.parametrize(
    ("line2", "passes"),
    [
        ("Suite 1400 on the 14th floor", True),
        ("Suite 1400, 14/F", True),
        ("Suite 1400, Floor Fourteen", True),
        ("Suite 1400 on the 15th floor", False),
        ("Suite 1400, 15/F", False),
    ],
)
def test_an_office_stored_with_its_floor(
    env: SqliteEnvironment, monkeypatch: pytest.MonkeyPatch, line2: str, passes: bool
) -> None:
    """The change-order-address check with the office stored as a suite on a floor."""
    monkeypatch.setattr(CHECKS, "OFFICE", address(STREET, "Suite 1400, Floor 14"))
    passed, evidence = office_check(env, STREET, line2)
    assert passed is passes, evidence


# --- a price list with an item named bare, or called heavy ----------------------------------


@pytest.mark.parametrize(
    ("text", "money"),
    [
        (
            "the socks, 22 pounds, and hat, 10 pounds, were refunded",
            [("gbp", 2200), ("gbp", 1000)],
        ),
        ("the socks (22 pounds) and hat (10 pounds)", [("gbp", 2200), ("gbp", 1000)]),
        ("the socks, 22 pounds, plus hat, 10 pounds", [("gbp", 2200), ("gbp", 1000)]),
        ("the socks - 22 pounds - and hat - 10 pounds", [("gbp", 2200), ("gbp", 1000)]),
        ("the socks, 22 pounds, and wool hat, 10 pounds", [("gbp", 2200), ("gbp", 1000)]),
        ("the bag, 22 pounds, and hat (10 pounds)", [("gbp", 2200), ("gbp", 1000)]),
        # decided: "heavy" said of an item in a price list is what the item is
        (
            "the socks, 22 pounds, and the heavy hat, 10 pounds, were refunded",
            [("gbp", 2200), ("gbp", 1000)],
        ),
        (
            "the heavy hat, 10 pounds, and the socks, 22 pounds, were refunded",
            [("gbp", 1000), ("gbp", 2200)],
        ),
        # honest neighbours: no second item, or weights said so, stay weights
        ("the set, 22 pounds, was refunded, 10 pounds lighter", []),
        ("the set, 22 pounds, and hat were refunded", []),
        ("the set, 22 pounds, and then, 10 pounds", []),
        ("the set, 22 pounds, and it is, 10 pounds", []),
        ("the dumbbells, 22 pounds, and kettlebell, 10 pounds, weigh a lot", []),
        ("the heavy dumbbells, 22 pounds, and the heavy bar, 10 pounds, weigh a lot", []),
        ("the lighter set, 22 pounds, and the heavier bar, 10 pounds", []),
        ("the heavy set, 22 pounds, was refunded", []),
        ("the set weighs 22 pounds, and the bar, 10 pounds, is lighter", []),
    ],
)
def test_a_price_list_with_an_item_bare_or_heavy(text: str, money: list[tuple[str, int]]) -> None:
    assert CHECKS.money_in(text) == money


@pytest.mark.parametrize(
    "prices",
    [
        "The socks, 22 pounds, and hat, 10 pounds, were refunded.",
        "The socks, 22 pounds, and the heavy hat, 10 pounds, were refunded.",
    ],
)
def test_a_price_list_in_pounds_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], prices: str
) -> None:
    trace = _final(oracles["refund-socks"], SHOWN.format(prices))
    assert AMOUNTS in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    "unit",
    [
        "the socks, 22 pounds, and hat, ",
        "22 pounds, plus hat (",
        "and and and hat, 22 pounds, ",
        "the heavy heavy hat, 10 pounds, ",
        "heavy ",
    ],
)
def test_a_long_price_list_is_read_in_time(unit: str) -> None:
    text = unit * (100_000 // len(unit))
    started = time.process_time()
    CHECKS.money_in(text)
    assert time.process_time() - started < 5
