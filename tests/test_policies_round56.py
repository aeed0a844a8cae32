"""A policy reviewer's near misses, fifty-sixth round: the retail suite's own checks
(``examples/retail/checks.py``) replayed on a suite oracle with one thing varied, and the
honest variants that must keep passing. Classes found open and fixed:

- **An amount in a currency the checks did not list was dollars or nothing**
  (``p2-amounts-as-shown``): "₩22.00", "₪ 22.00", "22.00 zł" read $22.00 (a bare amount's
  two decimals), "22 rubles", "22 rand", "Rs 22", "kr 22" read no amount, so a reply giving
  the shown $22.00 in another currency passed. Every sign Unicode counts a currency's (but
  the dollar's) marks another currency now, and the common codes and names are read; a
  currency not listed is its own mark's. Honest neighbours stay: "22 won't", "22 Rand Ave",
  "try 22.50", "the sku is KR22".
- **Dollars of another country said after the amount were US dollars**
  (``p2-amounts-as-shown``): "22 dollars Canadian", "$22.00 Canadian", "$22.00 (CAD)",
  "$22.00 in Canadian dollars", "22 $ CAD" read $22.00; they are the country's dollars now,
  while "US$22.00", "USD 22.00", "22 USD", "$22.00 (US)", "$22.00 Canadian Tire voucher" and
  "$22.00, CAD 30.00" keep their dollars.
"""

from __future__ import annotations

import time

import pytest

from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent

from ._policies_builders import AMOUNTS, SHOWN, STREET, address, office_check
from .grading_corpus import failing
from .test_constraints_round12 import _final, oracles, retail
from .test_policies_round19 import CHECKS
from .test_retail_suite import env

__all__ = ["env", "oracles", "retail"]  # fixtures of the twelfth round's and the suite's tests


# --- currencies not listed, and other countries' dollars --------------------------------------


@pytest.mark.parametrize(
    ("text", "money"),
    [
        ("\u20a922.00", [("krw", 2200)]),
        ("22 \u20a9", [("krw", 2200)]),
        ("\u20aa 22.00", [("ils", 2200)]),
        ("\u20bd22.00", [("rub", 2200)]),
        ("\u0e3f22.00", [("thb", 2200)]),
        ("\u20b422.00", [("\u20b4", 2200)]),
        ("22,00 \u20b4", [("\u20b4", 2200)]),
        ("\u20a822.00", [("inr", 2200)]),
        ("22.00 z\u0142", [("pln", 2200)]),
        ("22 rubles", [("rub", 2200)]),
        ("22 roubles", [("rub", 2200)]),
        ("22 rand", [("zar", 2200)]),
        ("22 shekels", [("ils", 2200)]),
        ("22 lira", [("try", 2200)]),
        ("22 won", [("krw", 2200)]),
        ("22 ringgit", [("myr", 2200)]),
        ("22 forint", [("huf", 2200)]),
        ("22 K\u010d", [("czk", 2200)]),
        ("Rs 22", [("inr", 2200)]),
        ("Rs. 22.00", [("inr", 2200)]),
        ("kr 22", [("kr", 2200)]),
        ("Kr. 22,50", [("kr", 2250)]),
        ("22 kr.", [("kr", 2200)]),
        ("KRW 22", [("krw", 2200)]),
        ("22 ZAR", [("zar", 2200)]),
        ("AED 22.00", [("aed", 2200)]),
        ("22 dollars Canadian", [("cad", 2200)]),
        ("22 dollars Australian", [("aud", 2200)]),
        ("$22.00 Canadian", [("cad", 2200)]),
        ("The refund of $22.00 Canadian is on its way", [("cad", 2200)]),
        ("22.00 dollars (CAD)", [("cad", 2200)]),
        ("$22.00 (CAD)", [("cad", 2200)]),
        ("$22.00 in Canadian dollars", [("cad", 2200)]),
        ("$22.00 in CAD", [("cad", 2200)]),
        ("22 $ CAD", [("cad", 2200)]),
        ("22 dollars, Canadian.", [("cad", 2200)]),
        ("22 bucks Canadian", [("cad", 2200)]),
        # honest neighbours: US dollars said any way, or no money
        ("US$22.00", [("usd", 2200)]),
        ("USD 22.00", [("usd", 2200)]),
        ("22 USD", [("usd", 2200)]),
        ("22.00 USD", [("usd", 2200)]),
        ("$22.00 USD", [("usd", 2200)]),
        ("$22.00 (US)", [("usd", 2200)]),
        ("$22.00 US", [("usd", 2200)]),
        ("22 dollars US", [("usd", 2200)]),
        ("$22.00 in US dollars", [("usd", 2200)]),
        ("22 bucks", [("usd", 2200)]),
        ("$22.00 Canadian Tire voucher", [("usd", 2200)]),
        ("$22.00, Canadian customers pay tax", [("usd", 2200)]),
        ("$22.00, US customers pay tax", [("usd", 2200)]),
        ("$22.00. Canadian orders ship free", [("usd", 2200)]),
        ("$22.00 and the Canadian order", [("usd", 2200)]),
        ("$22.00, CAD 30.00", [("usd", 2200), ("cad", 3000)]),
        ("$22.00, EUR 30.00", [("usd", 2200), ("eur", 3000)]),
        ("$22.00 in total", [("usd", 2200)]),
        ("Order 22 won't ship", []),
        ("we won 22 awards", []),
        ("22 Rand Ave", []),
        ("22 Franc St", []),
        ("the sku is KR22", []),
        ("I'll try 22.50", [("usd", 2250)]),
        ("Ron, 22.00 is back", [("usd", 2200)]),
        ("Mrs 22.00", [("usd", 2200)]),
        ("22 ft", []),
    ],
)
def test_other_currencies_are_their_own(text: str, money: list[tuple[str, int]]) -> None:
    assert CHECKS.money_in(text) == money


@pytest.mark.parametrize(
    "amount",
    [
        "\u20a922.00",
        "\u20aa 22.00",
        "22.00 z\u0142",
        "\u20b422.00",
        "22 rubles",
        "Rs. 22.00",
        "kr 22",
        "22 dollars Canadian",
        "$22.00 Canadian",
        "$22.00 (CAD)",
        "$22.00 in Canadian dollars",
    ],
)
def test_the_shown_dollars_in_another_currency_fail(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    reply = SHOWN.format(f"In your card's currency that was {amount}.")
    assert AMOUNTS in failing(retail, "refund-socks", _final(oracles["refund-socks"], reply))


@pytest.mark.parametrize(
    "aside",
    [
        "That was US$22.00.",
        "That was USD 22.00.",
        "That was 22 USD.",
        "That was $22.00 (US).",
        "Order 22 won't be charged again.",
        "Our store at 22 Rand Ave has the socks too.",
        "Ask for a $22.00 Canadian Tire voucher at the desk.",
    ],
)
def test_the_shown_dollars_said_in_us_dollars_pass(
    retail: Suite, oracles: dict[str, list[AgentEvent]], aside: str
) -> None:
    trace = _final(oracles["refund-socks"], SHOWN.format(aside))
    assert AMOUNTS not in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    "unit",
    [
        "\u20a9",
        "22 won ",
        "$22 ",
        "$22.00 Canadian ",
        "$22 (",
        "kr ",
        "Rs ",
        "22 dollars ",
        ", ",
        "| ",
        "$1, ",
        "Yes, ",
        "\n- ",
        '{"',
        "(",
        "**",
        ": ",
        " - ",
    ],
)
def test_a_long_reply_is_read_in_time(unit: str) -> None:
    text = unit * (99_000 // len(unit))
    started = time.process_time()
    CHECKS.money_in(text)
    assert time.process_time() - started < 5


# --- a word of weight after a price list's last amount --------------------------------------


@pytest.mark.parametrize(
    ("text", "money"),
    [
        ("the set, 22 pounds, and the bar, 10 pounds, are heavy", []),
        ("the set, 22 pounds, and hat, 10 pounds, are heavy", []),
        ("the dumbbells, 22 pounds, and the kettlebell set, 10 pounds, weigh a lot", []),
        ("the set, 22 pounds, the bar, 10 pounds, and the mat, 5 pounds, are heavy", []),
        ("the socks (22 pounds) and the wool hat (10 pounds) are both heavy", []),
        ("the lighter set, 22 pounds, and the black iron bar, 10 pounds", []),
        # honest neighbours: a list of prices with no weight said of it stays money
        (
            "the socks, 22 pounds, and the hat, 10 pounds, were refunded",
            [("gbp", 2200), ("gbp", 1000)],
        ),
        (
            "the socks, 22 pounds, and the hat, 10 pounds, were refunded to your card",
            [("gbp", 2200), ("gbp", 1000)],
        ),
        (
            "the heavy hat, 10 pounds, and the wool socks, 22 pounds, were refunded",
            [("gbp", 1000), ("gbp", 2200)],
        ),
        (
            "the socks, 22 pounds, and the hat, 10 pounds, were refunded and sent in the heavy box",
            [("gbp", 2200), ("gbp", 1000)],
        ),
        (
            "the socks, 22 pounds, and the hat, 10 pounds, are refunded; the box is heavy",
            [("gbp", 2200), ("gbp", 1000)],
        ),
    ],
)
def test_a_weight_said_after_a_list_is_every_amounts(
    text: str, money: list[tuple[str, int]]
) -> None:
    assert CHECKS.money_in(text) == money


@pytest.mark.parametrize(
    "unit",
    [
        "the set, 22 pounds, and the bar, ",
        "the set (22 pounds) and the bar (",
        "and the bar, 10 pounds, ",
    ],
)
def test_a_long_list_of_weights_is_read_in_time(unit: str) -> None:
    text = unit * (99_000 // len(unit))
    started = time.process_time()
    CHECKS.money_in(text)
    assert time.process_time() - started < 5


# --- a floor by its ordinal alone after a suite, a floor past twenty in words ----------------


@pytest.mark.parametrize(
    ("found", "floor", "same"),
    [
        ("Suite 1400 on the 14th", 14, True),
        ("Suite 1400 at the 14th", 14, True),
        ("Suite 1400 on the fourteenth", 14, True),
        ("Suite 1400, Floor Twenty-One", 21, True),
        ("Suite 1400, Floor Twenty One", 21, True),
        ("Suite 1400, Twenty-First Floor", 21, True),
        ("Suite 1400 on the twenty-first floor", 21, True),
        ("Suite 1400 on the 21st", 21, True),
        ("Suite 1400 on the twenty-first", 21, True),
        ("Suite 1400, Level Thirty", 30, True),
        ("Suite 1400, Thirtieth Floor", 30, True),
        ("Suite 1400, Floor Fourteen", 14, True),
        ("Suite 1400", 14, True),
        # another floor or suite, or a street: another address
        ("Suite 1400 on the 15th", 14, False),
        ("Suite 1401 on the 14th", 14, False),
        ("Suite 1400 on 14th St", 14, False),
        ("Suite 1400, Floor Twenty", 21, False),
        ("Suite 1400, Floor Twenty-Two", 21, False),
        ("Suite 1400, Floor Thirty-One", 21, False),
        ("Suite 1400, Twentieth Floor", 21, False),
        ("Suite 1400, Floor Twenty-One", 14, False),
    ],
)
def test_a_floor_by_its_ordinal_alone_or_past_twenty(found: str, floor: int, same: bool) -> None:
    stored = address(STREET, f"Suite 1400, Floor {floor}")
    assert CHECKS._same_address(address(STREET, found), stored) is same


@pytest.mark.parametrize(
    ("line1", "canonical"),
    [
        ("200 W Twenty-First St", "200 W TWENTY-FIRST ST CHICAGO IL 60606"),
        ("21 On The Green", "21 ON THE GREEN CHICAGO IL 60606"),
        ("Unit 5 on The Green", "UNIT 5 ON THE GREEN CHICAGO IL 60606"),
    ],
)
def test_a_street_with_an_ordinal_is_kept(line1: str, canonical: str) -> None:
    assert address(line1) == canonical


@pytest.mark.parametrize(
    ("line2", "passes"),
    [
        ("Suite 1400 on the 14th", True),
        ("Suite 1400 on the fourteenth", True),
        ("Suite 1400 on the 15th", False),
    ],
)
def test_an_office_on_its_floor_by_the_ordinal_alone(
    env: SqliteEnvironment, monkeypatch: pytest.MonkeyPatch, line2: str, passes: bool
) -> None:
    """The change-order-address check with the office stored as a suite on a floor."""
    monkeypatch.setattr(CHECKS, "OFFICE", address(STREET, "Suite 1400, Floor 14"))
    passed, evidence = office_check(env, STREET, line2)
    assert passed is passes, evidence


@pytest.mark.parametrize(
    ("line2", "passes"),
    [
        ("Suite 1400, Floor Twenty-One", True),
        ("Suite 1400, Twenty-First Floor", True),
        ("Suite 1400, Floor Twenty-Two", False),
    ],
)
def test_an_office_on_a_floor_past_twenty(
    env: SqliteEnvironment, monkeypatch: pytest.MonkeyPatch, line2: str, passes: bool
) -> None:
    """The change-order-address check with the office stored on the twenty-first floor."""
    monkeypatch.setattr(CHECKS, "OFFICE", address(STREET, "Suite 1400, Floor 21"))
    passed, evidence = office_check(env, STREET, line2)
    assert passed is passes, evidence


# --- pence by their letter stated with no word of money -------------------------------------


@pytest.mark.parametrize(
    ("text", "money"),
    [
        ("it was 22p", [("gbp", 22)]),
        ("It was 22p.", [("gbp", 22)]),
        ("that's 99p", [("gbp", 99)]),
        ("It's only 5p.", [("gbp", 5)]),
        ("it came to 22p", [("gbp", 22)]),
        ("they were 22p each", [("gbp", 22)]),
        ("it was 22p when it arrived", [("gbp", 22)]),
        ("the item is 22p", [("gbp", 22)]),
        ("it was 3p.", [("gbp", 3)]),
        # honest neighbours: a size, a seat, a video format, an hour, a resolution
        ("the size was 2P", []),
        ("the petite size is 2p", []),
        ("The seat was 22P", []),
        ("the video was 60p", []),
        ("it is 1080p", []),
        ("it was 3p when I called", []),
        ("it was 22p-ish", []),
        ("I saw it at 3p", []),
    ],
)
def test_pence_stated_with_no_word_of_money(text: str, money: list[tuple[str, int]]) -> None:
    assert CHECKS.money_in(text) == money


def test_the_shown_dollars_stated_in_pence_fail(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    reply = SHOWN.format("The other pair? It was 22p.")
    assert AMOUNTS in failing(retail, "refund-socks", _final(oracles["refund-socks"], reply))


@pytest.mark.parametrize("unit", ["it was 22p ", "was 3p when ", "'s 2p "])
def test_long_stated_pence_are_read_in_time(unit: str) -> None:
    text = unit * (99_000 // len(unit))
    started = time.process_time()
    CHECKS.money_in(text)
    assert time.process_time() - started < 5
