"""Eighth environments audit: what a tool's Python can do on the agent's SQLite connection
past the authorizer, and what an attempt leaves on that connection for the next one.

The authorizer enforces the task's permissions and the write log's triggers make each call's
writes; both live on the agent's connection, which tools hold as a Python object. Its methods
that would go past them (another authorizer, a function named like a built-in the triggers
call, a blob write no trigger sees, a copy of every table) are denials: the call is rolled
back, nothing changes, and the permissions still hold for the next call."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import PermissionDenied
from groundstate.spec.task import Permissions

FIXTURE = """
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, data BLOB);
CREATE TABLE prices (id INTEGER PRIMARY KEY, cents INTEGER);
CREATE TABLE cards (id INTEGER PRIMARY KEY, number TEXT);
INSERT INTO items VALUES (1, 'pen', x'0102');
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
