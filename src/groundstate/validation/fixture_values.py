"""Other valid values for a call argument, found in a task's initial state.

Grader mutation testing replaces an argument of the oracle with *another valid value*: one the
fixture really holds, so the near miss is a call a plausible agent could make (another order of
the same customer), not a value every tool rejects at once. The rules, all deterministic:

- an **id** is a string that is the primary key of some row (single-column keys only), or a
  number that is the key of a row in a table whose key column has the argument's name
  (``address_id``: a small number is too common to be recognised by value alone). Its
  alternatives are the other keys of the same table. Rows *related* to the original come first:
  rows sharing the value of a column whose name ends in ``id`` (``customer_id``, ``order_id``),
  a row sharing an earlier such column before one sharing a later one (schemas tend to put the
  owning record first), then the rest; ties in key order.
- an **amount** is a number that is not an id. Its alternatives are the other values of the
  columns that hold it (another item's price), nearest first; when no column holds it, its
  neighbours ``value - 1`` and ``value + 1`` (the off-by-one a tolerant grader lets through).
- anything else (addresses, free-text reasons) has no alternatives: it is left alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from groundstate.environments.base import Row, Snapshot
from groundstate.spec.canonical import canonical_json
from groundstate.spec.strict import is_number_value

Located = tuple[str, Row]
"""A row and the name of its table."""


is_number = is_number_value


def _norm(value: Any) -> tuple[str, Any] | None:
    """A hashable identity for a scalar: numbers by value (1 == 1.0), strings by text."""
    if isinstance(value, str):
        return ("s", value)
    if is_number(value):
        return ("n", value)
    return None


def is_link(column: str) -> bool:
    """Whether a column refers to another row (by its name: ``customer_id``, ``orderid``)."""
    return column.lower().endswith("id")


def _order(value: Any) -> tuple[bool, Any]:
    """A sort key that never compares a number with a string."""
    return (isinstance(value, str), value)


class FixtureValues:
    """The initial state, indexed to find ids, their rows and their alternatives."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.tables = snapshot.tables
        self._by_key: dict[tuple[str, Any], list[Located]] = {}
        for name in sorted(self.tables):
            table = self.tables[name]
            if len(table.key) != 1 or table.key == ["rowid"]:
                continue
            for row in table.rows.values():
                norm = _norm(row[table.key[0]])
                if norm is not None:
                    self._by_key.setdefault(norm, []).append((name, row))

    # --- ids -----------------------------------------------------------------------------

    def is_id(self, value: Any, name: str) -> bool:
        """Whether *value*, passed as argument *name*, is an id (see the module)."""
        return bool(self.rows_keyed_by(value, name))

    def rows_keyed_by(self, value: Any, name: str = "") -> list[Located]:
        """Every row whose (single-column) primary key is *value*, with its table.

        A number counts only as the key of a table whose key column is called *name*.
        """
        norm = _norm(value)
        rows = self._by_key.get(norm, []) if norm is not None else []
        if isinstance(value, str):
            return list(rows)
        return [(table, row) for table, row in rows if self.tables[table].key == [name]]

    def other_ids(self, value: Any, name: str) -> list[Any]:
        """Other keys of the tables keyed by *value*: related rows first (see the module)."""
        ranked: dict[tuple[str, Any], tuple[int, tuple[bool, Any]]] = {}
        for table_name, row in self.rows_keyed_by(value, name):
            table = self.tables[table_name]
            links = [c for c in table.columns if c not in table.key and is_link(c)]
            key_column = table.key[0]
            for other in table.rows.values():
                candidate = other[key_column]
                norm = _norm(candidate)
                if norm is None or norm == _norm(value):
                    continue
                shared = [
                    i for i, c in enumerate(links) if row[c] is not None and row[c] == other[c]
                ]
                rank = (shared[0] if shared else len(links), _order(candidate))
                if norm not in ranked or rank < ranked[norm]:
                    ranked[norm] = rank
        return [norm[1] for norm in sorted(ranked, key=lambda n: ranked[n])]

    def renamings(self, value: Any, other: Any, name: str) -> list[tuple[str, str]]:
        """(text, other text) pairs: how words naming row *value* would name row *other*.

        A message rarely shows an id; it names the row through its texts. Two kinds count:
        a text no other row of the table has, of at least four characters (a payment method's
        label "Visa ending 4417", a product's name); and, when *other* is a sibling (the same
        links to other rows) that differs in exactly one text column, that column (a variant's
        size "9" against "8" of the same product). Statuses and other texts many rows share are
        not names, nor are links to other rows (columns whose name ends in ``id``).
        """
        pairs = []
        for table_name, row in self.rows_keyed_by(value, name):
            table = self.tables[table_name]
            twin = table.rows.get(canonical_json(other))
            if twin is None:
                continue
            links = [c for c in table.columns if c not in table.key and is_link(c)]
            texts = [  # a link (customer_id...) is an id, named by its own value
                c
                for c in table.columns
                if c not in table.key
                and c not in links
                and isinstance(row[c], str)
                and isinstance(twin[c], str)
            ]
            differing = [c for c in texts if row[c] != twin[c]]
            sibling = all(row[c] == twin[c] for c in links) and len(differing) == 1
            for column in differing:
                unique = len(row[column]) >= 4 and self._unique(table_name, column, row[column])
                if unique or sibling:
                    pairs.append((row[column], twin[column]))
        return pairs

    def _unique(self, table: str, column: str, text: str) -> bool:
        rows = self.tables[table].rows.values()
        return sum(1 for row in rows if row[column] == text) == 1

    # --- amounts -------------------------------------------------------------------------

    def other_numbers(self, value: Any) -> list[Any]:
        """Other values of the columns holding the number *value*, nearest first."""
        seen: set[Any] = set()
        for table in self.tables.values():
            for column in table.columns:
                values = [row[column] for row in table.rows.values() if is_number(row[column])]
                if column not in table.key and value in values:
                    seen.update(v for v in values if v != value)
        if not seen:
            return [value - 1, value + 1]
        return sorted(seen, key=lambda v: (abs(v - value), v))

    # --- rows ----------------------------------------------------------------------------

    def rows_where(self, table: str, values: dict[str, Any]) -> list[Row]:
        """The rows of *table* whose columns equal *values*."""
        return [
            row
            for row in self.tables[table].rows.values()
            if all(row.get(column) == value for column, value in values.items())
        ]


def scalars(value: Any, name: str = "") -> Iterator[tuple[str, Any]]:
    """(name, value) of every scalar inside a JSON value, named by its nearest key."""
    if isinstance(value, dict):
        for key in sorted(value):
            yield from scalars(value[key], str(key))
    elif isinstance(value, list):
        for item in value:
            yield from scalars(item, name)
    elif value is not None:
        yield name, value
