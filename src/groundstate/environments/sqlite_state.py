"""The state of a SQLite database as groundstate hashes, snapshots and diffs it, and an
attempt's final state derived from its initial one and the rows the change tracking saw.

**The state hash** (revision :data:`STATE_HASH_REVISION`) is the hash of ``{table: table
hash}``. A table's hash covers its definition (whitespace folded) and the multiset of its rows:
each row's digest is the sha256 of its cells tagged with their storage class; the digests fall
into :data:`BUCKETS` buckets by their first byte, each bucket is hashed over its digests in
sorted order, and the table hash is the sha256 of the definition and the bucket hashes. Row
order and page layout do not count; any change of one row changes one bucket's hash. Finding
two states with the same hash means finding a sha256 collision (unlike a sum of row digests,
which a generalised birthday search can collide), and a change of a few rows rehashes a few
buckets of ``rows / 256`` digests, not the table.

**The final state** of an attempt is its initial state, read once per process from the
fixture's build (:class:`Baseline`), with only the rows the write log saw replaced
(:class:`ChangeTracker`): those are read back by key and hashed, and their before and after
values make the diff. A table the write log cannot follow completely (a virtual table,
``sqlite_sequence``, the clock, a table with a unique index on an expression or with a
collation other than BINARY, whose ``REPLACE`` conflicts the log would miss) is read whole
every time, and any write the tracking did not see (outside a tool call, or by another
connection) makes the tracker fall back to reading every table.
"""

from __future__ import annotations

import json
import sqlite3
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from hashlib import sha256
from typing import Any

from groundstate.environments.base import (
    Row,
    Snapshot,
    StateDiff,
    TableState,
    diff_rows,
    diff_snapshots,
    quote,
)
from groundstate.spec.canonical import hash_value

META_TABLE = "_groundstate_meta"
STATE_HASH_REVISION = 2
"""Bumped whenever the state hash's definition changes (2: row digests in sorted buckets, so
that a final state's hash can be updated row by row). Hashes of older records stay as stored;
declared ``initial_state_hash`` values and cached validity must be computed anew."""
BUCKETS = 256
_EMPTY_BUCKET = sha256(b"").digest()
_NO_DIGESTS: list[bytes] = []
_TABLE_PREFIX = b"groundstate table 2\0"
_CELL: dict[type, Callable[[Any], str]] = {  # a cell's storage class, then its value
    type(None): lambda value: "n",
    int: lambda value: f"i{value}",
    float: lambda value: f"r{value!r}",  # the shortest text that reads back as the same float
    str: lambda value: f"t{len(value)}:{value}",  # its length: a text may hold the separator
    bytes: lambda value: f"b{value.hex()}",
}


def _blob(value: Any) -> Any:
    """A BLOB in a snapshot key, as no text or number can be (its ``str`` was the text
    ``"b'\\x01'"``: a text key of those characters named the same row)."""
    return {"blob": value.hex()} if isinstance(value, bytes) else str(value)


KEY_JSON = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=_blob
).encode
"""canonical_json (BLOBs aside), without building an encoder per row: snapshots key their
rows with it, and the write log nets a call's writes by it."""
WHOLE_TABLE_SHARE = 4
"""A table whose touched keys number more than 1/WHOLE_TABLE_SHARE of its rows is read whole:
one scan is cheaper than that many lookups."""


# --- the hash --------------------------------------------------------------------------------


def row_digest(row: Sequence[Any]) -> bytes:
    """sha256 of one row's cells, each tagged with its storage class (1, 1.0, '1', b'1' and
    NULL differ)."""
    return sha256(_encoded(row).encode()).digest()


def _encoded(cells: Sequence[Any]) -> str:
    """Cells as one text that tells them apart: each cell's storage class and value, a text
    cell with its length, so no two different rows give the same text."""
    return "|".join([_CELL[type(value)](value) for value in cells])


@dataclass(frozen=True)
class RowDigests:
    """A multiset of row digests in buckets by first byte, each bucket sorted, and each
    bucket's hash. Treated as immutable: :meth:`replaced` copies the buckets it changes."""

    buckets: list[list[bytes]]
    hashes: list[bytes]

    @classmethod
    def of(cls, digests: Iterable[bytes]) -> RowDigests:
        grouped: dict[int, list[bytes]] = {}
        for digest in digests:
            grouped.setdefault(digest[0], []).append(digest)
        # Empty buckets share one list and one hash (a small table fills few of the 256):
        # replaced() copies a bucket before it changes it.
        buckets, hashes = [_NO_DIGESTS] * BUCKETS, [_EMPTY_BUCKET] * BUCKETS
        for index, bucket in grouped.items():
            bucket.sort()
            buckets[index], hashes[index] = bucket, _bucket_hash(bucket)
        return cls(buckets, hashes)

    def replaced(self, removed: Iterable[bytes], added: Iterable[bytes]) -> RowDigests:
        """A copy with one occurrence of each *removed* digest taken out and *added* put in.

        Raises KeyError for a removed digest that is not here (the tracking was wrong)."""
        buckets, hashes = list(self.buckets), list(self.hashes)
        copied: set[int] = set()

        def bucket(digest: bytes) -> list[bytes]:
            if digest[0] not in copied:
                buckets[digest[0]] = list(buckets[digest[0]])
                copied.add(digest[0])
            return buckets[digest[0]]

        for digest in removed:
            items = bucket(digest)
            at = bisect_left(items, digest)
            if at == len(items) or items[at] != digest:
                raise KeyError(digest.hex())
            del items[at]
        for digest in added:
            insort(bucket(digest), digest)
        for index in copied:
            hashes[index] = _bucket_hash(buckets[index])
        return RowDigests(buckets, hashes)

    def table_hash(self, schema_sql: str) -> str:
        definition = " ".join(schema_sql.split()).encode()
        return sha256(_TABLE_PREFIX + definition + b"\0" + b"".join(self.hashes)).hexdigest()


def _bucket_hash(bucket: list[bytes]) -> bytes:
    return sha256(b"".join(bucket)).digest() if bucket else _EMPTY_BUCKET


def table_hash(schema_sql: str, rows: Iterable[Sequence[Any]]) -> str:
    """The hash of one table: its definition (whitespace folded) and its rows in any order
    (the PostgreSQL kind hashes its tables with this too)."""
    return RowDigests.of(row_digest(row) for row in rows).table_hash(schema_sql)


def read_table_hashes(connection: sqlite3.Connection) -> dict[str, str]:
    """One hash per table of the main database, every table read whole.

    A virtual table is hashed by its rows (an FTS5 table's documents, an R-tree's boxes) and
    its settings (see :func:`fts5_settings`); its shadow tables are left out: they hold the
    same content again, in an index whose layout depends on the order of writes and merges,
    not on the state.
    """
    settings = fts5_settings(table_kinds(connection))
    return {
        name: _read_table_hash(connection, name, sql, settings.get(name))
        for name, sql in hashed_tables(connection).items()
    }


def hashed_tables(connection: sqlite3.Connection) -> dict[str, str]:
    """The tables the state hash covers, with their definitions."""
    shadows = {name for name, kind in table_kinds(connection).items() if kind == "shadow"}
    tables = connection.execute("SELECT name, sql FROM main.sqlite_master WHERE type = 'table'")
    return {
        name: sql
        for name, sql in tables.fetchall()
        # statistics depend on ANALYZE, not on state
        if not name.startswith("sqlite_stat") and name not in shadows
    }


def _read_table_hash(
    connection: sqlite3.Connection, name: str, sql: str, settings: str | None = None
) -> str:
    """The hash of one table read whole; *settings* names an FTS5 table's configuration
    table, whose settings count with its definition."""
    if settings is not None:
        sql += _fts5_configured(connection, settings)
    return table_hash(sql, connection.execute(f"SELECT * FROM main.{quote(name)}"))


def fts5_settings(kinds: dict[str, str]) -> dict[str, str]:
    """Each FTS5 table's configuration table (``docs`` -> ``docs_config``), by *kinds* (see
    :func:`table_kinds`): the only shadow table that holds settings rather than the content
    again. What it says changes what reads of the table give (``INSERT INTO docs(docs, rank)
    VALUES ('rank', 'bm25(10.0, 1.0)')`` orders every later ``ORDER BY rank``, the graders'
    too), so it is part of the state."""
    return {
        name: f"{name}_config"
        for name, kind in kinds.items()
        if kind == "virtual" and kinds.get(f"{name}_config") == "shadow"
    }


def _fts5_configured(connection: sqlite3.Connection, settings: str) -> str:
    """What an FTS5 table's configuration table sets, as text to add to its definition:
    nothing when it holds only the index format's ``version``, which FTS5 writes itself (a
    'rebuild' rewrites it), so that a table never configured hashes as it always has."""
    rows = connection.execute(
        f"SELECT k, v FROM main.{quote(settings)} WHERE k IS NOT 'version' ORDER BY k"
    ).fetchall()
    return f"\0settings {_encoded([cell for row in rows for cell in row])}" if rows else ""


# --- snapshots -------------------------------------------------------------------------------


def read_snapshot(connection: sqlite3.Connection) -> Snapshot:
    """Every user table keyed by primary key; the clock and SQLite internals are left out."""
    tables = {
        name: _read_rows(connection, name, columns, key)
        for name, columns, key in _layouts(connection)
    }
    return Snapshot.model_construct(tables=tables)


def table_state(connection: sqlite3.Connection, table: str) -> TableState:
    """One table's rows keyed by the canonical JSON of their primary key."""
    return _read_rows(connection, table, *_columns(connection, table))


def _read_rows(
    connection: sqlite3.Connection, table: str, columns: list[str], key: list[str]
) -> TableState:
    selected = ", ".join(_column(column) for column in columns)
    cursor = connection.execute(f"SELECT {selected} FROM main.{quote(table)}")
    rows = (dict(zip(columns, values, strict=True)) for values in cursor)
    # Built here from the database's own values: validating would only copy every row.
    return TableState.model_construct(
        columns=list(columns), key=list(key), rows=keyed_rows(rows, key)
    )


Layout = tuple[tuple[str, list[str], list[str]], ...]
"""Each user table's name, columns and key, as a snapshot reads them."""
_LAYOUTS: dict[tuple[tuple[Any, ...], ...], Layout] = {}
LAYOUTS_KEPT = 64
"""Schemas whose table layouts are kept (a process grades few fixtures; a bound all the same,
for schemas an agent's DDL made)."""


def _layouts(connection: sqlite3.Connection) -> Layout:
    """The user tables' layouts, read with ``PRAGMA table_info`` once per schema: a table's
    columns, key and kind follow from the schema's text, which one query reads whole (the
    pragmas cost a query per table on every snapshot)."""
    schema = tuple(
        connection.execute("SELECT type, name, tbl_name, sql FROM main.sqlite_master").fetchall()
    )
    layout = _LAYOUTS.get(schema)
    if layout is None:
        layout = tuple([(name, *_columns(connection, name)) for name in user_tables(connection)])
        if len(_LAYOUTS) >= LAYOUTS_KEPT:
            _LAYOUTS.clear()
        _LAYOUTS[schema] = layout
    return layout


def _columns(connection: sqlite3.Connection, table: str) -> tuple[list[str], list[str]]:
    """A table's columns as snapshots show them, and its key (``rowid`` first in both for a
    table without a primary key)."""
    info = connection.execute(f"PRAGMA main.table_info({quote(table)})").fetchall()
    columns = [column[1] for column in info]
    key = [column[1] for column in sorted(info, key=lambda column: column[5]) if column[5] > 0]
    if not key:
        if any(column.lower() == "rowid" for column in columns):
            # It hides the rowid: rows sharing its value were one row of the snapshot, and a
            # change to any but the last was missing from the diff (the hash still saw it).
            raise ValueError(
                f"table {table!r} has no primary key and a column named rowid, which hides "
                "SQLite's own rowid that keys its rows: rename the column or declare a key"
            )
        key, columns = ["rowid"], ["rowid", *columns]
    return columns, key


def keyed_rows(rows: Iterable[Row], key: list[str]) -> dict[str, Row]:
    """*rows* by their snapshot keys.

    A primary key of a rowid table may hold NULL (SQLite's old leniency: ``TEXT PRIMARY
    KEY`` takes any number of NULL keys), and then it names no row: such a row is keyed by
    its content, and identical ones by their order, as rows of a table without a key are
    matched by content. Keyed by their key alone, all but one of them were left out of the
    snapshot and so of the diff (a duplicate row an agent added went unseen)."""
    keyed: dict[str, Row] = {}
    for row in rows:
        values = [row[column] for column in key]
        if None in values:
            content = KEY_JSON([values, list(row.items())])
            slot, copies = content, 1
            while slot in keyed:
                slot, copies = f"{content}#{copies}", copies + 1
        else:
            slot = snapshot_key(values)
        keyed[slot] = row
    return keyed


def snapshot_key(values: Sequence[Any]) -> str:
    """The key of a row in a snapshot, from its key columns' values."""
    return KEY_JSON(values[0] if len(values) == 1 else list(values))


def tracking_key(values: Sequence[Any]) -> str:
    """The key of a row for the change tracking: exact, storage classes included (a blob
    key and its hex text differ)."""
    return _encoded(values)


def user_tables(connection: sqlite3.Connection) -> list[str]:
    """The fixture's own tables, virtual ones included: neither SQLite internals, shadow
    tables nor the harness's clock."""
    return [name for name, kind in table_kinds(connection).items() if kind != "shadow"]


def table_kinds(connection: sqlite3.Connection) -> dict[str, str]:
    """The fixture's tables by kind: ``table``, ``virtual`` or ``shadow`` (the tables an FTS5
    or R-tree table keeps its content and index in), in schema order."""
    kinds = dict(
        connection.execute("SELECT name, type FROM pragma_table_list WHERE schema = 'main'")
    )
    tables = connection.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")
    return {
        name: kinds.get(name, "table")
        for (name,) in tables
        if not name.startswith("sqlite_") and name != META_TABLE
    }


def _column(name: str) -> str:
    # rowid must stay bare: a quoted "rowid" that names no column is read as a string literal.
    return name if name == "rowid" else quote(name)


# --- the initial state, read once per process --------------------------------------------------


@dataclass(frozen=True)
class Touched:
    """One tracked table's touched rows as they are now, read once for both the final hash
    and the diff."""

    hash: str
    rows: dict[str, Row]
    """The touched rows that exist now, keyed as snapshots key them, in the order of the
    touched keys (the order the diff has always read them in)."""


@dataclass(frozen=True)
class TableBaseline:
    """One table of the initial state the write log follows: its rows' digests, by key."""

    name: str
    sql: str
    key: list[str]
    columns: list[str]
    """As snapshots show them (``rowid`` first for a table without a primary key)."""
    stored: int
    """How many columns ``SELECT *`` gives, which the row digest covers (generated columns
    included, which ``table_info`` and so snapshots leave out)."""
    digests: RowDigests
    by_key: dict[str, list[bytes]]
    """Tracking key -> digests of the rows with that key (several where a primary key of a
    rowid table holds NULLs)."""
    rows: int

    def touched(self, connection: sqlite3.Connection, keys: dict[str, tuple[Any, ...]]) -> Touched:
        """The table's hash once the rows of *keys* are as they are now on *connection*, and
        those rows: one read serves both (the rows by key, or the whole table where many
        keys were touched or the tracking and the baseline disagree)."""
        found: dict[str, list[tuple[Any, ...]]] | None = None
        digests: RowDigests | None = None
        if len(keys) * WHOLE_TABLE_SHARE <= self.rows:
            found = {}
            for wanted, row in _rows_by_key(connection, self._select, self.key, keys):
                found.setdefault(wanted, []).append(row)
            removed = [digest for key in keys for digest in self.by_key.get(key, [])]
            added = [self._digest(row) for rows in found.values() for row in rows]
            try:
                digests = self.digests.replaced(removed, added)
            except KeyError:  # the tracking and the baseline disagree: trust neither, read it all
                digests = None
        if digests is None or found is None:
            found, digests = self._read_whole(connection, keys)
        return Touched(digests.table_hash(self.sql), self._snapshot_rows(found, keys))

    @cached_property
    def _select(self) -> str:
        """The key columns, the stored columns (hashed) and the snapshot's columns."""
        listed = ", ".join(map(_column, self.key))
        shown = ", ".join(map(_column, self.columns))
        return f"SELECT {listed}, *, {shown} FROM main.{quote(self.name)}"

    def _digest(self, row: tuple[Any, ...]) -> bytes:
        return row_digest(row[len(self.key) : len(self.key) + self.stored])

    def _read_whole(
        self, connection: sqlite3.Connection, keys: dict[str, tuple[Any, ...]]
    ) -> tuple[dict[str, list[tuple[Any, ...]]], RowDigests]:
        found: dict[str, list[tuple[Any, ...]]] = {}
        digests = []
        width = len(self.key)
        for row in connection.execute(self._select):
            digests.append(self._digest(row))
            wanted = tracking_key(row[:width])
            if wanted in keys:
                found.setdefault(wanted, []).append(row)
        return found, RowDigests.of(digests)

    def _snapshot_rows(
        self, found: dict[str, list[tuple[Any, ...]]], keys: dict[str, tuple[Any, ...]]
    ) -> dict[str, Row]:
        start = len(self.key) + self.stored
        return keyed_rows(
            (
                dict(zip(self.columns, values[start:], strict=True))
                for wanted in keys
                for values in found.get(wanted, ())
            ),
            self.key,
        )


def _rows_by_key(
    connection: sqlite3.Connection, select: str, key: list[str], keys: dict[str, tuple[Any, ...]]
) -> Iterable[tuple[str, tuple[Any, ...]]]:
    """The rows whose leading key columns are exactly one of *keys* (the SQL match, which
    follows the column's collation, is only a filter: the tracking key decides)."""
    where = " AND ".join(f"{_column(column)} IS ?" for column in key)
    for wanted, values in keys.items():
        for row in connection.execute(f"{select} WHERE {where}", values):
            if tracking_key(row[: len(key)]) == wanted:
                yield wanted, tuple(row)


@dataclass
class Baseline:
    """A fixture's built image read once: its hashes, and the row digests of the tables the
    write log follows completely (the others are read whole for every final state)."""

    image: bytes
    hashes: dict[str, str]
    sql: dict[str, str]
    tracked: dict[str, TableBaseline]
    kinds: dict[str, str]
    """The fixture's tables by kind (see :func:`table_kinds`): the live file's schema is the
    build's, so environments read it here rather than from their connections."""
    autoincrement: frozenset[str] = frozenset()
    """The tables (lower case) whose inserts may change ``sqlite_sequence``: those whose
    definition says AUTOINCREMENT anywhere."""
    compared: frozenset[str] = frozenset()
    """The tables with a unique index on an expression: the write log's triggers cannot tell
    which rows an ``INSERT OR REPLACE`` deletes for conflicting on it, so a call's writes to
    them are their rows before and after the call compared, as a virtual table's."""
    triggers: frozenset[str] = frozenset()
    """The fixture's own triggers (no view shares the name): what they read and write, the
    fixture does (see ``SqliteEnvironment._decide``)."""

    @classmethod
    def read(cls, image: bytes) -> Baseline:
        connection = _deserialized(image)
        try:
            sql = hashed_tables(connection)
            kinds = table_kinds(connection)
            for name, kind in kinds.items():  # refuse a layout no snapshot can key now
                if kind == "table":
                    _columns(connection, name)
            followed = [
                n for n, kind in kinds.items() if kind == "table" and _followed(connection, n)
            ]
            tracked = {name: _table_baseline(connection, name, sql[name]) for name in followed}
            settings = fts5_settings(kinds)
            hashes = {
                name: tracked[name].digests.table_hash(text)
                if name in tracked
                else _read_table_hash(connection, name, text, settings.get(name))
                for name, text in sql.items()
            }
            autoincrement = frozenset(
                name.lower() for name, text in sql.items() if "autoincrement" in text.lower()
            )
            compared = frozenset(
                n
                for n, kind in kinds.items()
                if kind == "table" and _unique_on_expression(connection, n)
            )
            triggers = _fixture_triggers(connection)
            return cls(image, hashes, sql, tracked, kinds, autoincrement, compared, triggers)
        finally:
            connection.close()

    @cached_property
    def state_hash(self) -> str:
        """The hash of :attr:`hashes` (every reset returns it: computed once)."""
        return hash_value(self.hashes)

    def state_hash_of(self, hashes: dict[str, str]) -> str:
        """The state hash of *hashes*: this build's own where they are its (most final
        states of a read-only attempt), else ``hash_value`` of them."""
        return self.state_hash if hashes == self.hashes else hash_value(hashes)

    @cached_property
    def snapshot(self) -> Snapshot:
        """The initial snapshot, read on first use (shared: callers must not change it)."""
        connection = _deserialized(self.image)
        try:
            return read_snapshot(connection)
        finally:
            connection.close()

    @cached_property
    def image_digest(self) -> str:
        return sha256(self.image).hexdigest()

    @cached_property
    def integrity(self) -> str:
        """``PRAGMA quick_check`` of the build, run on first use."""
        connection = _deserialized(self.image)
        try:
            checks = connection.execute("PRAGMA quick_check").fetchall()
            return "; ".join(str(check[0]) for check in checks)
        finally:
            connection.close()

    @cached_property
    def settings(self) -> dict[str, str]:
        """Each FTS5 table's configuration table (see :func:`fts5_settings`)."""
        return fts5_settings(self.kinds)

    @cached_property
    def user_tables(self) -> list[str]:
        """As :func:`user_tables` reads them from a connection."""
        return [name for name, kind in self.kinds.items() if kind != "shadow"]

    @property
    def whole(self) -> list[str]:
        """The tables read whole for every final state."""
        return [name for name in self.sql if name not in self.tracked]


def _deserialized(image: bytes) -> sqlite3.Connection:
    connection = sqlite3.connect(":memory:")
    connection.deserialize(image)
    return connection


def _fixture_triggers(connection: sqlite3.Connection) -> frozenset[str]:
    """The names of the main schema's triggers that no view shares: SQLite's authorizer names
    a trigger or a view as the source of what it reads and writes, so a name both bear could
    not tell the fixture's trigger from the agent's read through the view."""
    rows = connection.execute(
        "SELECT name FROM main.sqlite_master WHERE type = 'trigger' AND lower(name) NOT IN "
        "(SELECT lower(name) FROM main.sqlite_master WHERE type = 'view')"
    )
    return frozenset(name for (name,) in rows)


def _followed(connection: sqlite3.Connection, table: str) -> bool:
    """Whether the write log sees every row a statement can change in *table*: its triggers
    log ``REPLACE`` conflicts by comparing the columns of each unique index with the column's
    own collation, which misses conflicts on an expression or under another collation."""
    for index in connection.execute(f"PRAGMA main.index_list({quote(table)})").fetchall():
        if not index[2]:
            continue
        info = connection.execute(f"PRAGMA main.index_xinfo({quote(index[1])})").fetchall()
        for column in info:
            if column[5] and (column[1] < 0 or str(column[4]).upper() != "BINARY"):
                return False
    return True


def _unique_on_expression(connection: sqlite3.Connection, table: str) -> bool:
    for index in connection.execute(f"PRAGMA main.index_list({quote(table)})").fetchall():
        if index[2]:
            info = connection.execute(f"PRAGMA main.index_xinfo({quote(index[1])})").fetchall()
            if any(column[5] and column[1] == -2 for column in info):
                return True
    return False


def _table_baseline(connection: sqlite3.Connection, name: str, sql: str) -> TableBaseline:
    columns, key = _columns(connection, name)
    stored = len(connection.execute(f"SELECT * FROM main.{quote(name)} LIMIT 0").description)
    select = f"SELECT {', '.join(map(_column, key))}, * FROM main.{quote(name)}"
    by_key: dict[str, list[bytes]] = {}
    digests = []
    for row in connection.execute(select):
        digest = row_digest(row[len(key) :])
        by_key.setdefault(tracking_key(row[: len(key)]), []).append(digest)
        digests.append(digest)
    return TableBaseline(
        name, sql, key, columns, stored, RowDigests.of(digests), by_key, len(digests)
    )


# --- the final state ---------------------------------------------------------------------------


class ChangeTracker:
    """The rows an attempt may have changed since its reset, by table and tracking key; and
    the final state's hashes and diff derived from them and the :class:`Baseline`.

    A table read whole is read only when it can have changed: a virtual table always (the
    write log cannot follow it), the clock's table once the clock moved, ``sqlite_sequence``
    once an INSERT into an AUTOINCREMENT table was prepared (such an insert may change it
    without writing a row: ``INSERT ... SELECT`` of no rows still records the table), and any
    other table once the write log saw a write to it (a REPLACE conflict the log cannot
    follow is still an insert into that table, which it logs). The touched rows are read once
    for the hash and the diff together, and again only after the file changed.
    """

    def __init__(self, baseline: Baseline) -> None:
        self._baseline = baseline
        self._keys: dict[str, dict[str, tuple[Any, ...]]] = {}
        self.complete = True
        """False once a write happened that the tracking did not see: then every table is
        read whole."""
        self.clock_moved = False
        """Set by the harness when it writes the clock."""
        self.sequence_moved = False
        """Set when the agent's SQL prepared an INSERT into an AUTOINCREMENT table."""
        self._read: tuple[int, dict[str, Touched]] | None = None
        """The file's change counter when the touched rows were read, and what was read."""

    def add(self, touched: dict[str, dict[str, tuple[Any, ...]]]) -> None:
        """Record the rows one committed tool call wrote (a superset is harmless)."""
        for table, keys in touched.items():
            self._keys.setdefault(table, {}).update(keys)
        self._read = None

    def hashes(self, connection: sqlite3.Connection, version: int) -> dict[str, str]:
        """The final state's table hashes; *version* is the file's change counter now."""
        if not self.complete:
            return read_table_hashes(connection)
        hashes = dict(self._baseline.hashes)
        for name in self._whole():
            sql, settings = self._baseline.sql[name], self._baseline.settings.get(name)
            hashes[name] = _read_table_hash(connection, name, sql, settings)
        for name, touched in self._touched(connection, version).items():
            hashes[name] = touched.hash
        return hashes

    def diff(self, connection: sqlite3.Connection, version: int) -> StateDiff:
        """The diff from the initial state, the same as a whole snapshot's diff would be."""
        s0 = self._baseline.snapshot
        if not self.complete:
            return diff_snapshots(s0, read_snapshot(connection))
        tables: list[tuple[str, dict[str, Row], dict[str, Row], list[str]]] = []
        whole = set(self._whole())
        touched = self._touched(connection, version)
        for name in self._baseline.user_tables:
            initial = s0.tables[name]
            if name in whole:
                tables.append((name, initial.rows, table_state(connection, name).rows, initial.key))
            elif any(None in values for values in self._keys.get(name, {}).values()):
                # rows keyed by content (see keyed_rows): which of s0's a key names is unknown
                tables.append((name, initial.rows, table_state(connection, name).rows, initial.key))
            elif name in touched:
                slots = [snapshot_key(values) for values in self._keys[name].values()]
                old = {slot: initial.rows[slot] for slot in slots if slot in initial.rows}
                tables.append((name, old, touched[name].rows, initial.key))
        return diff_rows(tables)

    def _whole(self) -> list[str]:
        """The tables to read whole for this final state (see the class's docstring)."""
        baseline = self._baseline
        return [
            name
            for name in baseline.whole
            if baseline.kinds.get(name) == "virtual"
            or (name == META_TABLE and self.clock_moved)
            or (name == "sqlite_sequence" and self.sequence_moved)
            or (name in baseline.kinds and name in self._keys)
            or (name not in baseline.kinds and name not in _FOLLOWED_WHOLE)
        ]

    def _touched(self, connection: sqlite3.Connection, version: int) -> dict[str, Touched]:
        if self._read is None or self._read[0] != version:
            tracked = self._baseline.tracked
            read = {
                name: tracked[name].touched(connection, keys)
                for name, keys in self._keys.items()
                if name in tracked
            }
            self._read = (version, read)
        return self._read[1]


_FOLLOWED_WHOLE = frozenset({META_TABLE, "sqlite_sequence"})
"""The tables outside the fixture's own whose changes the tracker follows by flags."""
