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
from collections.abc import Callable
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal
from fractions import Fraction

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


FIGURE_DIGITS = 3
"""Decimals a rate or suite value prints with."""


def faithful(value: float, exact: Callable[[], Fraction], digits: int = FIGURE_DIGITS) -> float:
    """*value*, a float computed for the rational *exact* gives, or, where :func:`rounded`
    would round it to *digits* decimals otherwise than that rational rounds (half away from
    zero), the float nearest it that rounds as the rational does.

    :func:`rounded` reads a value to :data:`SNAP_DIGITS` significant digits, so a tie computed a
    little off is the tie; but a value that is not a tie may lie that close to one. The mean
    of a pass@k of 1 - 1e-13 (a task of 1,200 attempts) and 0.035 is 0.5175 - 5e-14, which
    printed "0.518" where the exact fraction prints "0.517"; of 1 - 1e-181 and 0.035 no float
    is below the tie at all. *exact* is called only for a value within a millionth of a
    decimal of a tie; the float given then differs from the exact value by at most about
    1e-12 of it, and only where the print would otherwise be wrong."""
    if not math.isfinite(value):
        return value
    scale = 10**digits
    lower = math.floor(value * scale)
    if abs(value * scale - lower - 0.5) > 1e-6:
        return value
    rational = exact()
    shown = math.floor(abs(rational) * scale + Fraction(1, 2)) * (1 if rational >= 0 else -1)
    want = shown / scale
    if rounded(value, digits) == want:
        return value
    tie = float(Fraction(2 * lower + 1, 2 * scale))
    step = 1 if rational > Fraction(2 * lower + 1, 2 * scale) else -1
    found = float(rational)
    for size in (2e-12, 1e-11, 1e-10):
        moved = tie + step * size * max(abs(tie), 1e-300)
        candidate = max(found, moved) if step > 0 else min(found, moved)
        if rounded(candidate, digits) == want:
            return candidate
    return value


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """A count with its noun in the number it takes: ``"1 task"``, ``"2 tasks"``, ``"0 tries"``
    (*plural* where adding "s" is wrong: ``counted(1, "try", "tries")``). Every count a report,
    comparison or plan prints goes through it ("1 tries" and "1 attempts" were printed)."""
    return f"{count} {inflected(count, noun, plural)}"


def inflected(count: int, noun: str, plural: str | None = None) -> str:
    """*noun* in the number *count* takes, without the count: for a noun that names the list
    after it (``f"unknown {inflected(len(names), 'field')} {', '.join(names)}"`` reads
    "unknown field 'a'" or "unknown fields 'a', 'b'", never "field(s)"). Also a verb's number:
    ``inflected(n, "is", "are")``."""
    return noun if count == 1 else plural or noun + "s"
