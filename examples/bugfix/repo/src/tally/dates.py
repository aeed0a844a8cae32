"""Invoice dates: parsing, payment terms, due dates and business days."""

from __future__ import annotations

import re
from datetime import date, timedelta

_DAY_FIRST = re.compile(r"(\d{1,2})[./](\d{1,2})[./](\d{4})")
_NET = re.compile(r"net\s*(\d+)(?:\s+days?)?", re.IGNORECASE)
_ON_RECEIPT = ("due on receipt", "on receipt", "immediate", "cod")


def parse_date(text: str) -> date:
    """Parse ``2024-03-05`` (ISO) or ``05.03.2024`` / ``05/03/2024`` (day first)."""
    text = text.strip()
    found = _DAY_FIRST.fullmatch(text)
    try:
        if found:
            day, month, year = (int(part) for part in found.groups())
            return date(year, month, day)
        return date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not a date: {text!r}") from None


def parse_terms(terms: str) -> int:
    """Days until payment is due for terms such as ``"Net 30"``, ``"net45"`` or ``"due on receipt"``."""
    cleaned = " ".join(terms.split()).lower()
    if cleaned in _ON_RECEIPT:
        return 0
    found = _NET.fullmatch(cleaned)
    if found is None:
        raise ValueError(f"unknown payment terms: {terms!r}")
    return int(found.group(1))


def due_date(issued: date, terms: str) -> date:
    """The day payment is due: the issue date plus the days the terms allow."""
    return issued + timedelta(days=parse_terms(terms))


def business_days(start: date, end: date) -> int:
    """Weekdays (Monday to Friday) from ``start`` to ``end``, both included; 0 if ``end`` is earlier."""
    if end < start:
        return 0
    weeks, extra = divmod((end - start).days + 1, 7)
    count = weeks * 5
    for offset in range(extra):
        if (start + timedelta(days=weeks * 7 + offset)).weekday() < 5:
            count += 1
    return count


def is_overdue(issued: date, terms: str, today: date) -> bool:
    """True once the due date has passed (the due date itself is not overdue)."""
    return today > due_date(issued, terms)
