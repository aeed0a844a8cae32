"""Amounts of money as integer cents.

Floats are fine for reading a number a person typed, but every amount this package hands
back is an ``int`` number of cents, so sums and comparisons are exact.
"""

from __future__ import annotations

from collections.abc import Sequence


def parse_amount(text: str) -> int:
    """Parse an amount such as ``"12.50"``, ``"$1,299.99"`` or ``"-3.5"`` into cents.

    A dollar sign and thousands separators are ignored. Fractions of a cent are rounded
    half up, away from zero, as on a printed invoice: ``"0.125"`` is 13 cents and
    ``"-0.125"`` is -13 cents.
    """
    cleaned = text.strip().replace("$", "").replace(",", "")
    try:
        value = float(cleaned)
    except ValueError:
        raise ValueError(f"not an amount: {text!r}") from None
    return round(value * 100)


def format_cents(cents: int, symbol: str = "$") -> str:
    """Format cents for people: ``123456`` is ``"$1,234.56"``, ``-5`` is ``"-$0.05"``."""
    sign = "-" if cents < 0 else ""
    dollars, rest = divmod(abs(cents), 100)
    return f"{sign}{symbol}{dollars:,}.{rest:02d}"


def split_evenly(total_cents: int, parts: int) -> list[int]:
    """Split a total into ``parts`` shares that differ by at most a cent and sum to it.

    The first shares get the extra cents: 100 in 3 parts is ``[34, 33, 33]``.
    """
    if parts <= 0:
        raise ValueError(f"parts must be positive, got {parts}")
    share, extra = divmod(total_cents, parts)
    return [share + 1 if index < extra else share for index in range(parts)]


def allocate(total_cents: int, weights: Sequence[int]) -> list[int]:
    """Split a total in proportion to non-negative integer weights, summing exactly to it.

    Each share is rounded down, then the cents left over go to the shares that lost the
    most in rounding (largest remainder; ties go to the earlier share).
    """
    if not weights or any(weight < 0 for weight in weights) or sum(weights) == 0:
        raise ValueError("weights must be non-negative and not all zero")
    whole = sum(weights)
    shares = [total_cents * weight // whole for weight in weights]
    remainders = [total_cents * weight % whole for weight in weights]
    left = total_cents - sum(shares)
    order = sorted(range(len(weights)), key=lambda index: (-remainders[index], index))
    for index in order[:left]:
        shares[index] += 1
    return shares
