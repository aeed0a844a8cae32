"""How every printed figure is rounded, and the smallest p-value any figure states: one rule
for the text, HTML and notes of every report.

Python's formatting rounds the binary float half to even, so a tie printed by accident of
representation: 9/16 and 1/16 (exact in binary) as 0.562 and 0.062, 0.1625 (stored a little
above) as 0.163, and a mean of 9/16 computed a little below 0.5625 as 0.562 under any tie rule.
A reader, or a re-computation in exact fractions, rounds 9/16 to 0.563. Pure standard library,
so the light CLI paths can import it.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal

SMALLEST_P = 1e-300
"""The smallest p-value any comparison gives: a p-value below it is given as it (the text
prints ``<1e-300``), never as 0. Fisher's exact p of 0/600 against 600/600, a paired t test
at t = 8,000 and the sign-test bound of 2,000 tasks that all moved underflow to 0.0, which
printed as "0": a claim of certainty no finite sample makes."""

SNAP_DIGITS = 12
"""Significant digits a value is read to before it is rounded for print: beyond them a
difference is float noise (a weighted mean of 9/16 computed as 0.5624999999999999)."""


OUTWARD = {"down": ROUND_FLOOR, "up": ROUND_CEILING}
"""How an interval end is rounded (*toward* of :func:`rounded`): its lower end down, its upper
end up, so that the printed interval holds the computed one. Rounded to nearest, a lower end
of 0.6926 printed 0.693, claiming a narrower interval than the one computed."""


def rounded(
    value: float, digits: int, *, significant: bool = False, toward: str | None = None
) -> float:
    """*value* rounded half away from zero to *digits* decimals (*significant*: significant
    digits), as the float that prints as that decimal; with *toward* ``"down"`` or ``"up"``
    (:data:`OUTWARD`), rounded toward minus or plus infinity instead (an interval's ends).

    The value's decimal expansion is read to :data:`SNAP_DIGITS` significant digits first, so
    a tie computed a little off (0.5624999999999999) is the tie, and an end computed a little
    below 0.692 is 0.692 rounded down. Past 15 significant digits a float has no decimal to
    round: the value is returned as it is."""
    if not math.isfinite(value) or value == 0:
        return value
    exponent = math.floor(math.log10(abs(value)))
    places = digits - 1 - exponent if significant else digits
    shown = places + exponent + 1  # significant digits the print shows
    if shown > 15:
        return value
    exact = Decimal(f"{value:.{SNAP_DIGITS}g}") if shown < SNAP_DIGITS else Decimal(value)
    rule = ROUND_HALF_UP if toward is None else OUTWARD[toward]
    return float(exact.quantize(Decimal(1).scaleb(-places), rounding=rule))


def decimals(
    value: float, digits: int, *, sign: str = "", percent: bool = False, toward: str | None = None
) -> str:
    """*value* with *digits* decimals (a percentage with *percent*), rounded half away from
    zero by :func:`rounded` (or *toward* ``"down"`` / ``"up"``); *sign* ``"+"`` signs it."""
    if percent:
        return f"{rounded(value, digits + 2, toward=toward):{sign}.{digits}%}"
    return f"{rounded(value, digits, toward=toward):{sign}.{digits}f}"


def significant(value: float, digits: int) -> str:
    """*value* to *digits* significant digits (``g`` form), rounded as :func:`rounded`."""
    return f"{rounded(value, digits, significant=True):.{digits}g}"
