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

from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent

from ._policies_builders import AMOUNTS, SHOWN
from .grading_corpus import failing
from .test_constraints_round12 import _final, oracles, retail
from .test_policies_round19 import CHECKS

__all__ = ["oracles", "retail"]  # fixtures of the twelfth round's tests


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
