"""How the terminal and HTML reports print a number, so the two agree with each other."""

from __future__ import annotations


def fixed(value: float, digits: int) -> str:
    """*digits* fixed decimals, but in exponent form past a trillion (a 1e308 cost would
    otherwise print 309 digits)."""
    return f"{value:.{digits}f}" if abs(value) < 1e12 else f"{value:.{digits}g}"


def amount(value: float, digits: int) -> str:
    """A cost or latency: :func:`fixed`, but in exponent form where fixed decimals would
    print a value that is not 0 as 0 (a cost of 0.00004 per attempt is not free)."""
    if 0 < abs(value) < 0.5 * 10.0**-digits:
        return f"{value:.{digits}g}"
    return fixed(value, digits)


def counted_of(tasks: int, excluded: int) -> str:
    """A slice's tasks as its figures count them: ``"1 of 2"`` when some of its tasks have no
    counted attempt in the view (a bare 2 beside a rate over 1 task misstates its
    denominator)."""
    return str(tasks) if not excluded else f"{tasks - excluded} of {tasks}"
