"""Row-level write history of a SQLite database, one tool call at a time.

TEMP triggers on every fixture table log the old and new image of each written row into a
TEMP table (``temp`` objects live outside the main file, so the state hash never sees them).
At the end of a call the log is read and cleared in one statement and netted out per row (a
row written twice in one call is one write: its value before the call and after it); a
rolled-back call leaves no log, because TEMP tables are transactional too. The work is one
trigger step per written row: it scales with the rows written, never with the size of a table.

``INSERT OR REPLACE`` deletes conflicting rows without firing delete triggers (unless
recursive triggers are on, which would change a fixture's own triggers). So ``BEFORE`` triggers
also log the rows a new row would conflict with (same primary key or unique columns); such a
row that nothing else touched and that is gone at the end of the call was deleted.

Cells are logged as SQL literals written by the harness's :data:`IMAGE` function (see
:func:`image`), so values come back exactly, with their storage class: SQLite's JSON would round
a REAL to 15 digits and ``quote()`` rounds it too and ends a text at a NUL. A BLOB is recorded
as hex text. The connection must have the :data:`IMAGE` function. One function call per image
keeps the triggers short: SQLite parses every trigger when it is created, and a SQL expression
per cell had made installing the triggers the largest cost of a fresh environment (20 ms for
the retail example's 50 triggers, 6.5 ms this way, both on the 2026-12-03 machine).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from groundstate.environments.base import ONE_TYPE, WHOLE_ONLY, Row, RowWrite, TableState, same_row
from groundstate.environments.sqlite_state import KEY_JSON, tracking_key

LOG = "_gs_writes"
"""The TEMP table the triggers write; trigger names start with it too."""
_CHUNK = 100  # columns per IMAGE call: SQLite allows at most 127 arguments
_RETURNING = sqlite3.sqlite_version_info >= (3, 35, 0)
"""Whether ``DELETE ... RETURNING`` can read and clear the log in one statement."""

Run = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]
"""Runs one of the harness's own statements (past the agent's authorizer)."""
Touched = dict[str, dict[str, tuple[Any, ...]]]
"""Table -> tracking key -> key values of every row a call's log names."""


@dataclass(frozen=True)
class LoggedTable:
    name: str
    columns: list[str]
    """As in snapshots: ``rowid`` first for a table without a primary key."""
    key: list[str]
    unique: list[list[str]]
    """Column sets a new row may conflict on: the key and every unique index."""
    collations: list[list[str]] | None = None
    """Each :attr:`unique` column's collation in its index (None: the columns' own)."""
    defaults: dict[str, str] | None = None
    """The default (SQL) of each ``NOT NULL`` column that has one: ``OR REPLACE`` writes it in
    place of a NULL after the ``BEFORE`` triggers ran, which saw the NULL."""
    whole: list[str] | None = None
    """The INTEGER columns a write may not leave a non-whole number in (see :func:`_whole`)."""
    held: dict[str, str] | None = None
    """The one storage class (``typeof``) each typed column may hold (see :func:`_held`)."""

    def key_of(self, row: Row) -> Any:
        values = [row[c] for c in self.key]
        return values[0] if len(values) == 1 else values

    def exact_key(self, cells: list[Cell]) -> tuple[Any, ...]:
        """The key values of a logged row image's cells, blobs as bytes (not as their hex
        text)."""
        return tuple([_literal(cells[self.columns.index(column)]) for column in self.key])


class WriteLog:
    """The triggers and the log of one connection (valid until the connection closes).

    They are installed at the first call, not at reset: a reset that no call follows (a reset
    check, a probe) costs nothing, and one that does pays a few milliseconds once.
    """

    def __init__(
        self, tables: list[str], changes: Callable[[], int], *, build: str | None = None
    ) -> None:
        self._names = tables
        self._changes = changes
        """The connection's ``total_changes``: every row any statement of it wrote moves it."""
        self._quiet: int | None = None
        """``total_changes`` when the harness last emptied the log by a statement that deleted
        nothing: while it has not moved, nothing wrote the log and SQL's ``changes()`` is
        still 0, so there is nothing for :meth:`start` to clear."""
        self._empty_at: int | None = None
        """``total_changes`` when the log was last known empty: while it has not moved, no
        statement wrote a row, so no trigger logged one and :meth:`read` has nothing to take."""
        self._build = build
        """The fixture build's digest, under which the tables' descriptions are kept: every
        connection to a file of that build describes them the same."""
        self._tables: list[LoggedTable] = []
        self.installed = False
        self._kept: list[Any] = []
        """The long cells the call's images named by their place (see :meth:`image`)."""
        self.logged = 0
        """Rows the triggers wrote into the log (rolled back or not): SQLite's
        ``total_changes()`` counts them, which the agent's must not (see ``TotalChanges``)."""
        self.limit: int | None = None
        """The bytes one call's log may hold (its images and long cells), None: no bound."""
        self._size = 0
        """The bytes the call's log holds so far."""
        self.overflowed = False
        """Whether the call's writes passed :attr:`limit` (see :meth:`image`)."""

    def image(self, counted: int, *values: Any) -> str:
        """The :data:`IMAGE` function of the connection this log logs: a row's cells as
        :func:`image` writes them, but a text or blob longer than :data:`INLINE` kept here
        and named by its place (``@3``). A row is at most SQLite's length limit, and so was
        its image: a blob of more than half the limit (its hex twice as long), or a text of
        quotes, could not be written at all. *counted* is 1 for the first chunk of a log
        row's first image, which counts the row (:attr:`logged`).

        The log lives in the agent connection's TEMP database and here, outside the capped
        main file: past :attr:`limit` the image is refused (the agent's statement fails), and
        :attr:`overflowed` makes the call the agent's error whether its tool caught that or
        not. Unbounded, a call updating one large row over and over filled the memory or the
        TEMP disk: the harness's failure, not the agent's."""
        kept = self._kept
        cells = []
        long: list[str | bytes] = []
        for value in values:
            if isinstance(value, str | bytes) and len(value) > INLINE:
                cells.append(f"@{len(kept) + len(long)}")
                long.append(value)
            else:
                cells.append(_cell(value))
        text = json.dumps(cells)
        self._size += len(text) + sum(map(len, long))
        if self.limit is not None and self._size > self.limit:
            self.overflowed = True  # nothing more kept: the call fails
            raise OverflowError(f"the write log holds over {self.limit} bytes")
        kept.extend(long)
        self.logged += counted
        return text

    @property
    def objects(self) -> int:
        """The TEMP objects it made: the log and five triggers per table."""
        return 1 + 5 * len(self._tables) if self.installed else 0

    def start(self, run: Run) -> None:
        """Prepare for a call: install the triggers if needed, empty the log.

        Call it before the call's transaction begins, so that a rolled-back call cannot take
        the triggers with it.
        """
        if not self.installed:
            self._install(run)
        if self._kept:
            self._kept = []
        self._size, self.overflowed = 0, False
        # Each statement skipped is a GIL release saved: a context switch under load.
        if self._changes() != self._quiet:
            run(f"DELETE FROM temp.{LOG}", ())
            self._note_cleared(self._changes())
        self._empty_at = self._changes()

    def forget_rowid(self, run: Run) -> None:
        """Make ``last_insert_rowid()`` 0 and leave ``changes()`` 0, as on a new connection
        (a reused one, between attempts): the log written and emptied, then emptied again
        deleting nothing, so the next :meth:`start` has nothing to clear."""
        run(f"INSERT INTO temp.{LOG}(seq) VALUES (0)", ())
        run(f"DELETE FROM temp.{LOG}", ())
        before = self._changes()
        run(f"DELETE FROM temp.{LOG}", ())
        self._note_cleared(before)

    def _note_cleared(self, before: int) -> None:
        """After the harness emptied the log: whether its statement deleted nothing (the
        count did not move since *before*), which left ``changes()`` 0."""
        after = self._changes()
        self._quiet = after if after == before else None

    def _install(self, run: Run) -> None:
        tables = _DESCRIBED.get(self._build or "") or [_describe(run, n) for n in self._names]
        if self._build is not None:
            _DESCRIBED[self._build] = tables
        run("BEGIN", ())  # one transaction for the whole TEMP schema
        run(
            f"CREATE TEMP TABLE {LOG}"
            "(seq INTEGER PRIMARY KEY, tbl INTEGER, op TEXT, old TEXT, new TEXT)",
            (),
        )
        for index, table in enumerate(tables):
            for sql in _triggers(index, table):
                run(sql, ())
        run("COMMIT", ())
        self._tables, self.installed = tables, True

    def read(self, run: Run) -> tuple[list[RowWrite], list[str], Touched]:
        """The call's writes, netted per row, in the order rows were first written; the
        tables it wrote at all (a row written and restored in the same call has no write, but
        its table was written, as a counter bumped by an insert that was deleted again); and
        the keys of every row the log names, for the change tracking (not netted: a row written
        and written back in the call is read again all the same)."""
        taken = self._take(run)
        if not taken:  # most calls: nothing logged, nothing to net
            return [], [], {}
        # Each image parsed once: its values for the netting, its exact key for the tracking.
        entries = [(tbl, op, self._cells(old), self._cells(new)) for tbl, op, old, new in taken]
        net = Netting(self._tables)
        for tbl, op, old, new in entries:
            net.add(tbl, op, _values(old), _values(new))
        written = sorted({self._tables[tbl].name for tbl, op, _, _ in entries if op != "pre"})
        return net.writes(lambda table, row: _exists(run, table, row)), written, self._keys(entries)

    def _take(self, run: Run) -> list[tuple[Any, ...]]:
        """The log's entries in the order they were written, the log emptied and
        ``changes()`` left 0 (inside the call's transaction: the next :meth:`start` then has
        nothing to clear)."""
        before = self._changes()
        if before == self._empty_at:  # most calls only read: no statement, no GIL release
            return []
        if _RETURNING:  # RETURNING gives rows in no set order: sort them by seq
            rows = sorted(run(f"DELETE FROM temp.{LOG} RETURNING seq, tbl, op, old, new", ()))
            entries = [row[1:] for row in rows]
        else:
            entries = run(f"SELECT tbl, op, old, new FROM temp.{LOG} ORDER BY seq", ())
            run(f"DELETE FROM temp.{LOG}", ())
        if self._changes() != before:  # it deleted rows: changes() is their count
            # Empty it again, deleting nothing, so changes() is 0: here, in the call's own
            # transaction, rather than as the next call begins (a transaction of its own).
            before = self._changes()
            run(f"DELETE FROM temp.{LOG}", ())
        self._note_cleared(before)
        self._empty_at = self._changes()
        return entries

    def _cells(self, image: str | None) -> list[Cell] | None:
        """A logged row image's cells: each a SQL literal, or a long value it kept."""
        if image is None:
            return None
        cells = [cell for chunk in json.loads(image) for cell in chunk]
        return [Kept(self._kept[int(cell[1:])]) if cell[0] == "@" else cell for cell in cells]

    def _keys(self, entries: list[tuple[Any, ...]]) -> Touched:
        touched: Touched = {}
        for tbl, _, old, new in entries:
            table = self._tables[tbl]
            for cells in (old, new):
                if cells is not None:
                    values = table.exact_key(cells)
                    touched.setdefault(table.name, {})[tracking_key(values)] = values
        return touched


_DESCRIBED: dict[str, list[LoggedTable]] = {}
"""The logged tables of each fixture build (by image digest), described once per process."""


class Netting:
    """Folds logged row images into one write per row."""

    def __init__(self, tables: list[LoggedTable]) -> None:
        self._tables = tables
        self._rows: dict[tuple[int, str], list[Any]] = {}  # -> [table, key, before, after]
        self._conflicts: dict[tuple[int, str], Row] = {}
        self._suspect: set[tuple[int, str]] = set()
        """Rows written earlier in the call that a later statement's row conflicted with
        since: a REPLACE may have deleted them, which no trigger logs."""

    def add(self, tbl: int, op: str, old: list[Any] | None, new: list[Any] | None) -> None:
        table = self._tables[tbl]
        before = _row(table, old)
        after = _row(table, new)
        if op == "pre":
            assert before is not None
            slot = self._slot(tbl, table.key_of(before))
            self._conflicts.setdefault(slot, before)
            if slot in self._rows:
                self._suspect.add(slot)
            return
        moved = before is not None and after is not None and _moved(table, before, after)
        if moved:  # an update of the key: the old row goes, a new one comes
            self._write(tbl, before, None)
            self._write(tbl, None, after)
        else:
            self._write(tbl, before, after)

    def _write(self, tbl: int, before: Row | None, after: Row | None) -> None:
        table = self._tables[tbl]
        key = table.key_of(before if before is not None else after or {})
        slot = self._slot(tbl, key)
        self._suspect.discard(slot)
        if slot in self._rows:
            self._rows[slot][3] = after
            return
        if before is None:  # an insert that replaced a conflicting row: that row was here
            before = self._conflicts.get(slot)
        self._rows[slot] = [table.name, key, before, after]

    def writes(self, exists: Callable[[LoggedTable, Row], bool]) -> list[RowWrite]:
        for slot, row in self._conflicts.items():
            table = self._tables[slot[0]]
            if slot not in self._rows and not exists(table, row):  # deleted by a REPLACE
                self._rows[slot] = [table.name, table.key_of(row), row, None]
        for slot in self._suspect:  # written, then deleted by a REPLACE?
            written = self._rows[slot]
            if written[3] is not None and not exists(self._tables[slot[0]], written[3]):
                written[3] = None
        return [
            RowWrite(table=name, key=key, before=before, after=after)
            for name, key, before, after in self._rows.values()
            if not same_row(before, after)
        ]

    @staticmethod
    def _slot(tbl: int, key: Any) -> tuple[int, str]:
        return tbl, KEY_JSON(key)


def state_writes(before: dict[str, TableState], after: dict[str, TableState]) -> list[RowWrite]:
    """The row writes between two states of the same tables (for tables triggers cannot log)."""
    writes = []
    for name, old in before.items():
        new = after[name].rows
        for slot in dict.fromkeys([*old.rows, *new]):
            if not same_row(old.rows.get(slot), new.get(slot)):
                key = json.loads(slot)
                writes.append(
                    RowWrite(table=name, key=key, before=old.rows.get(slot), after=new.get(slot))
                )
    return writes


def _moved(table: LoggedTable, before: Row, after: Row) -> bool:
    return KEY_JSON(table.key_of(before)) != KEY_JSON(table.key_of(after))


def _exists(run: Run, table: LoggedTable, row: Row) -> bool:
    """Whether *row*'s key is still in *table*, exactly: SQL's match follows the column's
    collation and compares numbers across storage classes (a ``NOCASE`` key 'a' replaced by
    'A', a key 1 replaced by 1.0, was found still there), so it only filters."""
    keys = ", ".join(_column(c) for c in table.key)
    match = " AND ".join(f"{_column(c)} IS ?" for c in table.key)
    values = tuple([row[c] for c in table.key])
    found = run(f"SELECT {keys} FROM main.{_quote(table.name)} WHERE {match}", values)
    return any(tracking_key(key) == tracking_key(values) for key in found)


# --- schema and triggers ----------------------------------------------------------------------


def _describe(run: Run, name: str) -> LoggedTable:
    info = run(f"PRAGMA main.table_info({_quote(name)})", ())
    columns = [column[1] for column in info]
    key = [column[1] for column in sorted(info, key=lambda column: column[5]) if column[5] > 0]
    if not key:
        key, columns = ["rowid"], ["rowid", *columns]
    indexes = _unique_indexes(run, name)
    # The key's own index gives its collations (``PRIMARY KEY (k COLLATE NOCASE)``); a rowid
    # or an INTEGER PRIMARY KEY has none, and compares as BINARY.
    by_pk = dict(next((index for origin, index in indexes if origin == "pk"), []))
    unique = [
        key,
        *([column for column, _ in index] for origin, index in indexes if origin != "pk"),
    ]
    collations = [
        [by_pk.get(column, "BINARY") for column in key],
        *([collation for _, collation in index] for origin, index in indexes if origin != "pk"),
    ]
    defaults = {column[1]: column[4] for column in info if column[3] and column[4] is not None}
    return LoggedTable(
        name,
        columns,
        key,
        unique,
        collations,
        defaults,
        _whole(run, name, info),
        _held(run, name, info),
    )


def _whole(run: Run, table: str, info: list[tuple[Any, ...]]) -> list[str]:
    """The table's INTEGER-affinity columns holding no REAL now (the fixture's rows: the log
    is described before the first call). A write leaving a non-whole number in one is refused,
    as on PostgreSQL, whose ``bigint`` would round it (``postgres_schema.cast_sql``): SQLite
    keeps the REAL 2.5 in an INTEGER column, and the state of the two kinds differed."""
    integers = [str(column[1]) for column in info if "INT" in str(column[2]).upper()]
    return [
        column
        for column in integers
        if not run(
            f"SELECT 1 FROM main.{_quote(table)} WHERE typeof({_column(column)}) = 'real' LIMIT 1",
            (),
        )
    ]


_AFFINITY_CLASSES = (
    (("INT",), "integer"),
    (("CHAR", "CLOB", "TEXT"), "text"),
    (("BLOB",), "blob"),
    (("REAL", "FLOA", "DOUB"), "real"),
)
"""SQLite's affinity rules (in their order) and the one storage class a column of each holds
on PostgreSQL (``bigint``, ``text``, ``bytea``, ``double precision``)."""


def _held(run: Run, table: str, info: list[tuple[Any, ...]]) -> dict[str, str]:
    """Each column of INTEGER, TEXT, REAL or no affinity (BLOB) whose fixture values are all of
    its one storage class: a write leaving a value of another class in one is refused, as on
    PostgreSQL, whose typed column cannot hold it. SQLite kept the text ``'abc'`` in a REAL
    column, the REAL 2.5 in a BLOB one, bytes in a TEXT one, and PostgreSQL failed the write:
    the state of the two kinds differed. (A column of NUMERIC affinity, which PostgreSQL does
    not carry but for dates held as text, is left as it is, and so is a column of no declared
    type holding no bytes yet.)"""
    held = {}
    for column in info:
        declared = str(column[2]).upper()
        kind = next(
            (k for words, k in _AFFINITY_CLASSES if any(w in declared for w in words)),
            None if declared else "blob",
        )
        if kind is None:
            continue
        classes = {
            str(row[0])
            for row in run(
                f"SELECT DISTINCT typeof({_column(column[1])}) FROM main.{_quote(table)}", ()
            )
        } - {"null"}
        # an untyped column is held only where it holds bytes (an empty one may be anything)
        if classes <= {kind} and (declared or classes):
            held[str(column[1])] = kind
    return held


def _unique_indexes(run: Run, table: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """The unique indexes' origins (``pk`` for the primary key's) and their columns, each
    with the collation the index compares it by: a ``NOCASE`` index on a ``BINARY`` column
    makes 'A' conflict with 'a', which the column's own comparison would not see. An index
    on an expression is left out (see ``Baseline.compared``)."""
    found = []
    for index in run(f"PRAGMA main.index_list({_quote(table)})", ()):
        if index[2]:
            info = run(f"PRAGMA main.index_xinfo({_quote(index[1])})", ())
            keys = [(column[2], str(column[4])) for column in info if column[5]]
            if all(column is not None for column, _ in keys):
                found.append((str(index[3]), keys))
    return found


def _triggers(index: int, table: LoggedTable) -> list[str]:
    name, on = f"{LOG}_{index}", f"ON main.{_quote(table.name)}"
    log = f"INSERT INTO {LOG}(tbl, op, old, new)"
    collations = table.collations or [["BINARY"] * len(columns) for columns in table.unique]
    conflicts = " OR ".join(
        "("
        + " AND ".join(
            f"{_column(c)} = {_new(table, c)}{_collate(collation)}"
            for c, collation in zip(columns, collation_of, strict=True)
        )
        + ")"
        for columns, collation_of in zip(table.unique, collations, strict=True)
    )
    pre = (
        f"{log} SELECT {index}, 'pre', {_image(table, None, 1)}, NULL "
        f"FROM main.{_quote(table.name)} WHERE {conflicts}"
    )
    old, new = _image(table, "OLD", 1), _image(table, "NEW", 0)
    whole = _type_check(table)
    return [
        f"CREATE TEMP TRIGGER {name}_pre_insert BEFORE INSERT {on} BEGIN {pre}; END",
        f"CREATE TEMP TRIGGER {name}_pre_update BEFORE UPDATE {on} BEGIN {pre}; END",
        f"CREATE TEMP TRIGGER {name}_insert AFTER INSERT {on} BEGIN {whole}"
        f"{log} VALUES ({index}, 'insert', NULL, {_image(table, 'NEW', 1)}); END",
        f"CREATE TEMP TRIGGER {name}_update AFTER UPDATE {on} BEGIN {whole}"
        f"{log} VALUES ({index}, 'update', {old}, {new}); END",
        f"CREATE TEMP TRIGGER {name}_delete AFTER DELETE {on} "
        f"BEGIN {log} VALUES ({index}, 'delete', {old}, NULL); END",
    ]


def _type_check(table: LoggedTable) -> str:
    """The statement refusing a row that leaves a REAL in one of the table's :attr:`whole`
    columns, or a value of another storage class in one of its :attr:`held` columns, naming
    the column (empty when it has none)."""
    whole = [
        f"WHEN typeof(NEW.{_column(c)}) = 'real' THEN RAISE(ABORT, "
        + _text(f"column {table.name}.{c}: the value {WHOLE_ONLY}")
        + ")"
        for c in table.whole or []
    ]
    held = [
        f"WHEN typeof(NEW.{_column(c)}) NOT IN ('null', '{kind}') THEN RAISE(ABORT, "
        + _text(f"column {table.name}.{c}: the value is not {_CLASS_NAMES[kind]}: {ONE_TYPE}")
        + ")"
        for c, kind in (table.held or {}).items()
    ]
    return f"SELECT CASE {' '.join(whole + held)} END; " if whole or held else ""


_CLASS_NAMES = {"integer": "an integer", "text": "text", "blob": "bytes", "real": "a REAL"}


def _text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _new(table: LoggedTable, column: str) -> str:
    """The value a new row will have in *column*: its default in place of a NULL where the
    column is ``NOT NULL`` with a default (a REPLACE of a NULL conflicts on the default)."""
    new = f"NEW.{_column(column)}"
    default = (table.defaults or {}).get(column)
    return new if default is None else f"coalesce({new}, ({default}))"


def _collate(collation: str) -> str:
    """The COLLATE clause of a comparison by an index's *collation* (BINARY: none needed)."""
    return "" if collation.upper() == "BINARY" else f" COLLATE {_quote(collation)}"


def _image(table: LoggedTable, ref: str | None, counted: int) -> str:
    """SQL for a row image: JSON arrays of the columns' SQL literals, chunk by chunk; the
    first chunk's call counts a log row when *counted* is 1."""
    cells = [f"{ref}.{_column(c)}" if ref else _column(c) for c in table.columns]
    chunks = [cells[i : i + _CHUNK] for i in range(0, len(cells), _CHUNK)]
    arrays = [
        f"{IMAGE}({counted if i == 0 else 0}, {', '.join(chunk)})" for i, chunk in enumerate(chunks)
    ]
    return "'[' || " + " || ',' || ".join(arrays) + " || ']'"


IMAGE = f"{LOG}_image"
"""The harness's SQL function that writes the image of a row's cells (see :func:`image`), on
every connection a :class:`WriteLog` logs. A text that is not UTF-8 cannot reach it (Python
cannot read it): the agent's statement fails with SQLite's "user-defined function raised
exception", and nothing of it is written (see :data:`NOT_UTF8`)."""

NOT_UTF8 = "user-defined function raised exception"
"""How a statement fails whose row the :data:`IMAGE` function could not read: a text that is
not UTF-8 (``CAST(x'ff' AS TEXT)``)."""


def image(*values: Any) -> str:
    """A row's cells as a JSON array of SQL literals, each of which :func:`_literal` reads back
    as the same value with its storage class: a REAL as the shortest text that reads back as
    the same float (``-0.0`` included), a text holding NUL as its JSON string."""
    return json.dumps([_cell(value) for value in values])


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return json.dumps(value) if "\0" in value else "'" + value.replace("'", "''") + "'"
    if isinstance(value, bytes):
        return f"X'{value.hex().upper()}'"
    return repr(value)  # int, or float: shortest round trip


INLINE = 256
"""The longest text (characters) or blob (bytes) a row image writes inline (see
:meth:`WriteLog.image`): an image is then short whatever the row holds."""


@dataclass(frozen=True)
class Kept:
    """A long cell of a row image, kept by the log rather than written (see
    :meth:`WriteLog.image`)."""

    value: str | bytes


Cell = str | Kept
"""A cell of a logged row image: a SQL literal (see :func:`_cell`), or a long value kept."""


def _values(cells: list[Cell] | None) -> list[Any] | None:
    return None if cells is None else [_literal(cell) for cell in cells]


def _literal(sql: Cell) -> Any:
    """The value of a literal :func:`_cell` wrote: NULL, 'text', X'blob' (as bytes: as its
    hex text, a blob written over the text of its hex digits was no write), a number, or a
    text holding NUL as its JSON string; or a long value the log kept."""
    if isinstance(sql, Kept):
        return sql.value
    if sql == "NULL":
        return None
    if sql.startswith('"'):
        return json.loads(sql)
    if sql.startswith("'"):
        return sql[1:-1].replace("''", "'")
    if sql.startswith("X'"):
        return bytes.fromhex(sql[2:-1])
    try:
        return int(sql)
    except ValueError:
        return float(sql)  # repr() of a float reads back as the same float


def _row(table: LoggedTable, values: list[Any] | None) -> Row | None:
    return None if values is None else dict(zip(table.columns, values, strict=True))


def _column(name: str) -> str:
    # rowid must stay bare: a quoted "rowid" that names no column is read as a string literal.
    return name if name == "rowid" else _quote(name)


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'
