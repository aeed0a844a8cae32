"""Eighth environments audit: what a tool's Python can do on the agent's SQLite connection
past the authorizer, and what an attempt leaves on that connection for the next one.

The authorizer enforces the task's permissions and the write log's triggers make each call's
writes; both live on the agent's connection, which tools hold as a Python object. Its methods
that would go past them (another authorizer, a function named like a built-in the triggers
call, a blob write no trigger sees, a copy of every table) are denials: the call is rolled
back, nothing changes, and the permissions still hold for the next call."""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import pytest

from groundstate.environments.base import (
    Snapshot,
    TableState,
    cell_key,
    diff_snapshots,
    same_cell,
)
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import EnvironmentFailure, PermissionDenied
from groundstate.grading.constraints._history import no_undo
from groundstate.grading.outcome import States, evaluate_assertions
from groundstate.spec.constraints import NoUndoConstraint
from groundstate.spec.task import DiffAssertion, Permissions
from groundstate.trace import ToolCallEvent

FIXTURE = """
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, data BLOB);
CREATE TABLE prices (id INTEGER PRIMARY KEY, cents INTEGER);
CREATE TABLE cards (id INTEGER PRIMARY KEY, number TEXT);
CREATE TABLE mixed (id INTEGER PRIMARY KEY, data BLOB);
INSERT INTO items VALUES (1, 'pen', x'0102');
INSERT INTO mixed VALUES (1, x'0102'), (2, 'text');
INSERT INTO prices VALUES (1, 100);
INSERT INTO cards VALUES (1, '4111');
"""
PERMISSIONS = Permissions(tables={"prices": "read", "cards": "none"})


@pytest.fixture
def env(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    fixture = tmp_path / "shop.sql"
    fixture.write_text(FIXTURE, encoding="utf-8")
    with SqliteEnvironment(
        fixture, clock=datetime(2024, 1, 1), permissions=PERMISSIONS
    ) as environment:
        environment.reset()
        yield environment


def _blob(table: str, column: str, *, readonly: bool) -> Callable[[sqlite3.Connection], Any]:
    def act(db: sqlite3.Connection) -> Any:
        with db.blobopen(table, column, 1, readonly=readonly) as blob:
            return blob.read() if readonly else blob.write(b"\x09\x09")

    return act


def _empty_image() -> bytes:
    with closing(sqlite3.connect(":memory:")) as connection:
        connection.execute("CREATE TABLE items (id)")
        return connection.serialize()


_EMPTY_IMAGE = _empty_image()
PAST_THE_AUTHORIZER: dict[str, Callable[[sqlite3.Connection], Any]] = {
    "set_authorizer": lambda db: db.set_authorizer(None),
    "set_progress_handler": lambda db: db.set_progress_handler(None, 0),
    # the write log's triggers call quote() and json_array(): the call showed no write
    "function quote": lambda db: db.create_function("quote", 1, lambda value: "NULL"),
    "function JSON_ARRAY": lambda db: db.create_function("JSON_ARRAY", -1, lambda *_: "[]"),
    "function upper": lambda db: db.create_aggregate("upper", 1, object),
    "write blob items.data": _blob("items", "data", readonly=False),
    "write blob prices.cents": _blob("prices", "cents", readonly=False),
    "read cards": _blob("cards", "number", readonly=True),
    "backup": lambda db: db.backup(sqlite3.connect(":memory:")),
    "deserialize": lambda db: db.deserialize(_EMPTY_IMAGE),
    "enable_load_extension": lambda db: db.enable_load_extension(True),
    "executescript": lambda db: db.executescript("UPDATE items SET name = 'x';"),
}


@pytest.mark.parametrize("action", PAST_THE_AUTHORIZER, ids=str)
def test_what_a_tools_python_could_do_past_the_authorizer_is_a_denial(
    env: SqliteEnvironment, action: str
) -> None:
    """Before: each ran. Another authorizer lifted the permissions for the rest of the
    attempt; a tool's own ``quote`` made an UPDATE no write of the call; a blob write changed
    a read-only table with no write recorded; a blob read or a backup read the hidden table."""
    initial = env.state_hash()
    denied = pytest.raises(PermissionDenied, match=re.escape(action))
    with denied, env.tool_transaction() as effects:
        env.agent_db.execute("UPDATE items SET name = 'ink' WHERE id = 1")
        PAST_THE_AUTHORIZER[action](env.agent_db)
        env.agent_db.execute("UPDATE items SET name = 'cap' WHERE id = 1")
    assert effects.denied and effects.writes == []
    assert env.state_hash() == initial and env.diff_from_initial().is_empty()
    for sql in ("UPDATE prices SET cents = 1", "SELECT number FROM cards"):
        with pytest.raises(PermissionDenied), env.tool_transaction():
            env.agent_db.execute(sql).fetchall()
    with env.tool_transaction() as effects:
        env.agent_db.execute("UPDATE items SET name = 'cap' WHERE id = 1")
    assert [(write.table, write.columns) for write in effects.writes] == [("items", ["name"])]
    assert env.written_outside_calls() is None


def test_a_blob_read_the_permissions_allow_still_works(env: SqliteEnvironment) -> None:
    with env.tool_transaction() as effects:
        assert _blob("items", "data", readonly=True)(env.agent_db) == b"\x01\x02"
    assert effects.denied == [] and effects.writes == []


PYTHON_SETTINGS: dict[str, Callable[[sqlite3.Connection], Any]] = {
    "transactions": lambda db: setattr(db, "isolation_level", "DEFERRED"),
    "rows": lambda db: setattr(db, "row_factory", sqlite3.Row),
    "text": lambda db: setattr(db, "text_factory", bytes),
    "a collation": lambda db: db.create_collation("NOCASE", lambda a, b: 0),
}


@pytest.mark.parametrize("setting", PYTHON_SETTINGS, ids=str)
def test_what_a_tools_python_set_on_the_connection_does_not_outlive_a_reset(
    env: SqliteEnvironment, setting: str
) -> None:
    """Validation resets one environment between calls. Before: Python's implicit
    transactions made the next attempt's first call fail ("cannot start a transaction within a
    transaction", an environment failure), and a row factory, a text factory or a collation of
    an earlier attempt's tool answered the next attempt's queries."""
    with env.tool_transaction():
        PYTHON_SETTINGS[setting](env.agent_db)
        env.agent_db.execute("UPDATE items SET name = 'nib' WHERE id = 1")
    env.reset()
    with env.tool_transaction():
        db = env.agent_db
        db.execute("SAVEPOINT s")
        db.execute("UPDATE items SET name = 'Ink' WHERE id = 1")
        db.execute("RELEASE s")
        db.execute("INSERT INTO items VALUES (2, 'cap', NULL)")
        names = db.execute("SELECT name FROM items ORDER BY name COLLATE NOCASE").fetchall()
    assert names == [("cap",), ("Ink",)]
    assert type(names[0]) is tuple


@pytest.mark.parametrize("setting", ["transactions", "rows", "text"])
def test_a_tools_python_settings_are_its_own_within_the_attempt(
    env: SqliteEnvironment, setting: str
) -> None:
    """Before: ``row_factory = sqlite3.Row`` in a tool that wrote made reading the write log
    fail (the call an environment failure); ``isolation_level = 'DEFERRED'`` made the next
    call fail before the tool ran. The tool's setting stays for its own queries."""
    for name in ("ink", "nib"):
        with env.tool_transaction() as effects:
            PYTHON_SETTINGS[setting](env.agent_db)
            env.agent_db.execute("UPDATE items SET name = ? WHERE id = 1", (name,))
            row = env.agent_db.execute("SELECT name FROM items").fetchone()
        assert [write.after for write in effects.writes] == [
            {"id": 1, "name": name, "data": b"\1\2"}
        ]
    assert row[0] == (b"nib" if setting == "text" else "nib")
    assert type(row) is (sqlite3.Row if setting == "rows" else tuple)


def test_a_blob_replaced_by_the_text_of_its_hex_digits_is_a_write(
    env: SqliteEnvironment,
) -> None:
    """The write log read a blob back as its hex text: ``x'0102'`` and ``'0102'`` were the
    same, so the call had no write while the state hash and the diff saw the change. (A
    column holding bytes only refuses text since the twentieth round: ``mixed`` holds both.)"""
    with env.tool_transaction() as effects:
        env.agent_db.execute("UPDATE mixed SET data = '0102' WHERE id = 1")
    assert [(write.before, write.after) for write in effects.writes] == [
        ({"id": 1, "data": b"\x01\x02"}, {"id": 1, "data": "0102"})
    ]
    assert env.diff_from_initial().tables["mixed"].changed[0].columns == ["data"]


# --- rows of a table without a primary key: one notion of "the same content" -------------------

VARIANTS = [
    None,
    "",
    "a",
    "a ",
    "A",
    "\u00e9",  # é, composed
    "e\u0301",  # é, decomposed: another text
    1,
    1.0,
    "1",
    b"1",
    True,
    0.0,
    -0.0,
    math.nan,
    math.inf,
    2**63,
    float(2**63),
    2**70,
]
PAIRS = [(a, b) for a in VARIANTS for b in VARIANTS]


def _log(rows: dict[int, Any]) -> Snapshot:
    return Snapshot(
        tables={
            "log": TableState(
                columns=["rowid", "x"],
                key=["rowid"],
                rows={str(rowid): {"rowid": rowid, "x": x} for rowid, x in rows.items()},
            )
        }
    )


def test_a_moved_row_and_a_twin_are_the_same_content_exactly_when_their_cells_are() -> None:
    """The diff leaves out a row of a table without a key that only moved to another rowid,
    and a ``state_diff`` takes a twin for the row it names: both must call two rows the same
    exactly when the state hash (``same_cell``) does. (They used two notions, JSON of typed
    values and ``same_row``; now both use ``row_content``.)"""
    assertion = DiffAssertion.model_validate(
        {"id": "d", "state_diff": {"log": {"removed": [1]}}, "nothing_else_changed": True}
    )
    view = cast(Any, None)
    for a, b in PAIRS:
        same = same_cell(a, b)
        assert (cell_key(a) == cell_key(b)) is same, (a, b)
        assert diff_snapshots(_log({1: a}), _log({2: b})).is_empty() is same, (a, b)
        initial = _log({1: a, 2: b})
        diff = diff_snapshots(initial, _log({1: a}))  # the agent deleted row 2
        states = States(view, view, initial, diff, Path("."))
        (result,) = evaluate_assertions([assertion], states)
        assert result.passed is same, (a, b)


@pytest.mark.parametrize("index", ["", "CREATE UNIQUE INDEX u ON log(v COLLATE NOCASE);"])
def test_a_keyless_table_with_a_column_named_rowid_is_refused_at_build(
    tmp_path: Path, index: str
) -> None:
    """The column hid SQLite's rowid, which keys a table without a primary key: two rows with
    the same value in it were one row of the snapshot, and an agent's change to the other one
    was missing from the diff while the state hash saw it."""
    fixture = tmp_path / "log.sql"
    fixture.write_text(
        f"CREATE TABLE log (RowId TEXT, v); {index} INSERT INTO log VALUES ('a', 1);"
    )
    with pytest.raises(EnvironmentFailure, match=r"log\.sql: table 'log' .* column named rowid"):
        SqliteEnvironment(fixture, clock=datetime(2024, 1, 1))


def test_postgres_writes_give_a_blob_as_bytes_as_the_diff_does(tmp_path: Path) -> None:
    """Both kinds' writes gave a BLOB as its hex text while their diffs gave bytes."""
    pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")
    from groundstate.environments.postgres import PostgresEnvironment

    from .test_postgres import needs_postgres

    needs_postgres()
    fixture = tmp_path / "pg.sql"
    fixture.write_text(
        "CREATE TABLE items (id INTEGER PRIMARY KEY, data BLOB);"
        "INSERT INTO items VALUES (1, x'0102');"
    )
    with PostgresEnvironment(fixture, clock=datetime(2024, 1, 1)) as env:
        env.reset()
        with env.tool_transaction() as effects:
            env.agent_db.execute("UPDATE items SET data = ?", (b"0102",))
        changed = diff_snapshots(env.initial_view().snapshot(), env.snapshot())
    (write,) = effects.writes
    (change,) = changed.tables["items"].changed
    assert (write.before, write.after) == (change.before, change.after)
    assert write.after == {"id": 1, "data": b"0102"}


def test_no_undo_tells_a_blob_from_the_text_of_its_repr(env: SqliteEnvironment) -> None:
    """A call's writes give a blob as bytes now; ``no_undo`` keyed values by ``str`` of them,
    so the text ``"b'ink'"`` written over what a blob ``b'ink'`` became was its undoing."""
    events: list[Any] = []
    for step, value in enumerate([b"ink", "z", "b'ink'"]):
        with env.tool_transaction() as effects:
            env.agent_db.execute("UPDATE mixed SET data = ? WHERE id = 1", (value,))
        call = {"step": step, "tool": "t", "args": {}, "ok": True, "duration_ms": 1, "at": 0}
        events.append(ToolCallEvent.model_validate({**call, "writes": effects.writes}))
    constraint = NoUndoConstraint.model_validate({"id": "u", "no_undo": None})
    assert no_undo(constraint, events).passed
