"""How state values are matched against what a task expects (``sql`` rows, ``state_diff``
rows and values): as a reviewer reading the database would match them.

- Numbers are compared as numbers: ``1``, ``1.0`` and ``true`` are the same (SQLite has no
  boolean; a REAL column gives ``70.0`` for ``70``), and floats agree when they agree to 15
  significant digits, the precision a double holds (``0.1 + 0.2`` is ``0.3``; ``1e10 + 0.01``
  is not ``1e10``). Text and numbers never match (``"70"`` is not ``70``); text is compared
  exactly (case, spaces, Unicode normalisation count), and ``NULL`` only matches ``null``.
- Text holding a JSON object or array (a column of options or ids) is compared as the
  document: key order and spacing do not count, an array's order does.
- Rows expected as a set are matched as a multiset under that equality, whatever order the
  query or the expectation lists them in.
- Each expected ``added`` row takes a distinct actual row, and a match is found whenever one
  exists (not only the first the rows' order suggests).

The state hash stays exact (storage classes count): it says whether a state is the same, this
says whether it is the expected one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from groundstate.spec.canonical import canonical_json

SIGNIFICANT_DIGITS = 15
"""Digits of a float that count when it is compared with an expected value (``DBL_DIG``)."""


def comparable(value: Any) -> Any:
    """*value* as it is compared: a number in one form per value, text holding a JSON object
    or array as that document (see :func:`_document`), anything else as it is."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and math.isfinite(value):
        rounded = float(f"{value:.{SIGNIFICANT_DIGITS}g}")
        return int(rounded) if rounded.is_integer() else rounded
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        return _document(value)
    return value


class _Document(str):
    """A JSON document's canonical text: equal only to another document, never to text."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Document) and str.__eq__(self, other)

    __hash__ = str.__hash__


def _document(text: str) -> Any:
    """Text holding a JSON object or array, as the document it holds: key order and spacing
    do not count (``{"b": 2, "a": 1}`` is ``{"a":1,"b":2}``), an array's order does, and
    its numbers compare as numbers. Other text (invalid JSON, ``NaN``) stays as it is."""
    try:
        parsed = json.loads(text, parse_constant=_no_constant)
    except ValueError:
        return text
    if not isinstance(parsed, dict | list):
        return text
    return _Document(canonical_json(_leaves(parsed)))


def _leaves(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _leaves(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_leaves(item) for item in value]
    # a boolean stays one: in JSON, true is not 1
    return value if isinstance(value, bool | str) else comparable(value)


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def same_value(actual: Any, expected: Any) -> bool:
    return bool(comparable(actual) == comparable(expected))


def same_rows(actual: Sequence[Sequence[Any]], expected: Sequence[Sequence[Any]]) -> bool:
    """Whether the rows are the same, in the same order, value by value."""
    return len(actual) == len(expected) and all(
        len(a) == len(e) and all(map(same_value, a, e))
        for a, e in zip(actual, expected, strict=True)
    )


def same_row_multisets(actual: Sequence[Sequence[Any]], expected: Sequence[Sequence[Any]]) -> bool:
    """Whether the rows are the same in some order: sorted by their comparable form, which
    equal rows share (sorting by the raw values' text put ``1`` and ``1.0`` apart)."""
    return same_rows(sorted(actual, key=_row_order), sorted(expected, key=_row_order))


def _row_order(row: Sequence[Any]) -> str:
    return canonical_json([comparable(value) for value in row])


def row_matches(row: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Whether *row* has each value of *wanted* in its column."""
    return all(column in row and same_value(row[column], v) for column, v in wanted.items())


def pair_rows(
    wanted: list[dict[str, Any]], rows: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Give as many expected rows as can be a distinct matching actual row (a maximum
    matching: ``[{src: A}, {src: A, memo: b}]`` against rows ``memo: b`` then ``memo: c``
    pairs both, which taking the first match for each did not).

    Returns the expected rows left without a match and the actual rows left over, each in
    its order. Where the first free match serves every expected row, that is the pairing."""
    candidates = [[i for i, row in enumerate(rows) if row_matches(row, want)] for want in wanted]
    owner: dict[int, int] = {}  # actual row -> the expected row it serves
    for index, mine in enumerate(candidates):
        free = next((i for i in mine if i not in owner), None)
        if free is not None:
            owner[free] = index
        else:
            _augment(index, candidates, owner, set())
    taken = set(owner.values())
    unmatched = [want for index, want in enumerate(wanted) if index not in taken]
    return unmatched, [row for i, row in enumerate(rows) if i not in owner]


def _augment(
    index: int, candidates: list[list[int]], owner: dict[int, int], seen: set[int]
) -> bool:
    """Find expected row *index* an actual row by moving others along (Kuhn's algorithm)."""
    for row in candidates[index]:
        if row in seen:
            continue
        seen.add(row)
        if row not in owner or _augment(owner[row], candidates, owner, seen):
            owner[row] = index
            return True
    return False
