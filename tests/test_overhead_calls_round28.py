"""Overhead, twenty-eighth round: the harness's own work on each tool call.

- A call that wrote empties the write log (``DELETE ... RETURNING``), then deletes nothing
  from it so that SQL's ``changes()`` reads 0 at the next call: inside its own transaction,
  where the next call ran that DELETE first, in a transaction of its own. A reused database
  leaves ``changes()`` 0 the same way when it is rewritten for the next attempt.
- The gateway encodes the arguments once, for the JSON check and the size check (it encoded
  them twice).

These tests hold what the grader sees to be as before: after a write, a failed call (a tool
error, a denial, a deferred constraint broken at the COMMIT, after the log was read) and
another write, the write log and the diff are exact, the state is as the failed call found
it, and every call starts with ``changes()`` 0; arguments that are not JSON or are oversized
are refused with the same words.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundstate.environments.base import RowWrite, diff_snapshots
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.environments.sqlite_live import POOL
from groundstate.errors import PermissionDenied, ToolError
from groundstate.gateway import MAX_ARGUMENT_CHARS, ToolGateway, _json_problem
from groundstate.spec.task import Permissions
from groundstate.tools import ToolContext, tool
from groundstate.trace import ToolCallEvent

CLOCK = __import__("datetime").datetime(2026, 1, 15, 10, 0)
FIXTURE = """
CREATE TABLE customers (id TEXT PRIMARY KEY, name TEXT);
CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT,
                     customer TEXT REFERENCES customers(id) DEFERRABLE INITIALLY DEFERRED);
CREATE TABLE secrets (k TEXT PRIMARY KEY, v TEXT);
INSERT INTO customers VALUES ('C-1', 'Ada'), ('C-2', 'Bo');
INSERT INTO orders VALUES ('O-1', 'pending', 'C-1'), ('O-2', 'pending', 'C-2');
INSERT INTO secrets VALUES ('pin', '1234');
"""


@pytest.fixture(autouse=True)
def empty_pool() -> Iterator[None]:
    POOL.drain()
    yield
    POOL.drain()


@pytest.fixture
def fixture(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sql"
    path.write_text(FIXTURE)
    return path


def _env(fixture: Path) -> SqliteEnvironment:
    permissions = Permissions(tables={"secrets": "none"})
    return SqliteEnvironment(fixture, clock=CLOCK, permissions=permissions)


def _traced(env: SqliteEnvironment, *statements: str) -> tuple[list[str], list[RowWrite]]:
    """The harness's own statements of one call (besides its tool's), and its writes; the
    call first checks that ``changes()`` reads 0."""
    seen: list[str] = []
    connection = env.agent_db
    sqlite3.Connection.set_trace_callback(connection, seen.append)
    try:
        with env.tool_transaction() as effects:
            assert connection.execute("SELECT changes()").fetchone() == (0,)
            for sql in statements:
                connection.execute(sql)
    finally:
        sqlite3.Connection.set_trace_callback(connection, None)
    tools = {*statements, "SELECT changes()"}
    return [sql for sql in seen if sql not in tools and not sql.startswith("--")], effects.writes


def _fail(env: SqliteEnvironment, how: str) -> None:
    with pytest.raises((ToolError, PermissionDenied)), env.tool_transaction():
        assert env.agent_db.execute("SELECT changes()").fetchone() == (0,)
        env.agent_db.execute("UPDATE orders SET status = 'lost' WHERE id = 'O-1'")
        if how == "denied":
            env.agent_db.execute("SELECT * FROM secrets")
        elif how == "deferred":  # broken at the COMMIT, after the log was read and emptied
            env.agent_db.execute("UPDATE orders SET customer = 'C-9' WHERE id = 'O-2'")
        else:
            raise ToolError("no such order")


def _write(table: str, key: str, before: dict[str, Any], after: dict[str, Any]) -> RowWrite:
    return RowWrite(table=table, key=key, before=before, after=after)


ADA = {"id": "C-1", "name": "Ada"}
O1 = {"id": "O-1", "status": "pending", "customer": "C-1"}


@pytest.mark.parametrize("how", ["tool error", "denied", "deferred"])
def test_a_write_a_failed_call_and_a_write_log_and_diff_exactly(fixture: Path, how: str) -> None:
    with _env(fixture) as env:
        env.reset()
        first = env.snapshot()
        _, writes = _traced(env, "UPDATE customers SET name = 'Ada L' WHERE id = 'C-1'")
        assert writes == [_write("customers", "C-1", ADA, {**ADA, "name": "Ada L"})]
        after_write = env.snapshot()
        for _ in range(2):  # twice: the failure after a failure too
            _fail(env, how)
            assert env.snapshot() == after_write  # the failed call left the state as before
        _, writes = _traced(env, "UPDATE orders SET status = 'done' WHERE id = 'O-1'")
        assert writes == [_write("orders", "O-1", O1, {**O1, "status": "done"})]
        _, writes = _traced(env, "SELECT * FROM orders")
        assert writes == []
        final = env.snapshot()
        assert env.tracking_complete
        diff = env.diff_from_initial()
        assert diff == diff_snapshots(first, final)  # the tracked diff is the full one
        assert sorted(diff.tables) == ["customers", "orders"]
        assert env.health()["ok"]


def test_the_call_after_a_write_runs_no_statement_to_empty_the_log(fixture: Path) -> None:
    """On the old code the read-only call after a writing one began with the log's empty
    DELETE, in a transaction of its own: this fails there."""
    with _env(fixture) as env:
        env.reset()
        _traced(env, "SELECT 1")  # the log installed
        own, _ = _traced(env, "UPDATE orders SET status = 'x'")
        assert own[0] == "BEGIN" and own[-2:] == ["DELETE FROM temp._gs_writes", "COMMIT"], own
        own, _ = _traced(env, "SELECT * FROM orders")
        assert own == ["BEGIN", "COMMIT"], own


def test_a_reused_database_starts_with_changes_0_and_no_statement_to_empty_the_log(
    fixture: Path,
) -> None:
    """The rewrite for the next attempt leaves ``last_insert_rowid()`` and ``changes()`` 0, as
    a new connection's, and the first call has nothing to clear (on the old code it ran the
    log's DELETE: this fails there)."""
    first = _env(fixture)
    first.reset()
    _traced(first, "INSERT INTO customers VALUES ('C-3', 'Cy')")
    agent = first.agent_db
    first.close()
    with _env(fixture) as second:
        assert second.agent_db is agent  # reused
        second.reset()
        own, writes = _traced(second, "SELECT * FROM customers")  # changes() 0: checked
        assert own == ["BEGIN", "COMMIT"] and writes == [], own
        with second.tool_transaction():
            assert second.agent_db.execute("SELECT last_insert_rowid()").fetchone() == (0,)
        _, writes = _traced(second, "INSERT INTO customers VALUES ('C-3', 'Cy')")
        assert writes == [_write("customers", "C-3", None, {"id": "C-3", "name": "Cy"})]  # type: ignore[arg-type]


# --- arguments: encoded once, refused with the same words ----------------------------------


@tool
def lookup(ctx: ToolContext, order: str, note: str = "") -> list[Any]:
    """Look up an order."""
    return [list(row) for row in ctx.db.execute("SELECT id FROM orders WHERE id = ?", (order,))]


def _gateway(env: SqliteEnvironment) -> tuple[ToolGateway, list[ToolCallEvent]]:
    events: list[ToolCallEvent] = []
    return ToolGateway({"lookup": lookup}, env, events.append, time.monotonic), events


@pytest.mark.parametrize(
    "args",
    [
        {"order": "O-1", "note": float("nan")},
        {"order": "O-1", "note": {1, 2}},
        {"order": "O-1", "note": b"\x00"},
        "O-1",
    ],
    ids=["nan", "set", "bytes", "not an object"],
)
def test_arguments_that_are_not_json_are_refused_naming_what(fixture: Path, args: Any) -> None:
    with _env(fixture) as env:
        env.reset()
        gateway, events = _gateway(env)
        result = gateway.call(1, "lookup", args)
        assert (result.ok, result.error_class) == (False, "invalid_arguments")
        problem = _json_problem(args)
        if problem is None:
            assert result.error == "invalid arguments: arguments must be an object, got str"
        else:
            assert result.error == f"invalid arguments: arguments are not JSON: {problem}"
        assert events[-1].error == result.error


@pytest.mark.parametrize("char", ["A", "é", "\ud800"], ids=["ascii", "non-ascii", "surrogate"])
def test_oversized_arguments_are_refused_with_their_size_in_characters(
    fixture: Path, char: str
) -> None:
    """The size is the JSON's characters as written with ``ensure_ascii=False`` (an ``é`` is
    one, not the six of ``\\u00e9``), and the digest that text's."""
    note = char * (MAX_ARGUMENT_CHARS // 2 + 5)
    args = {"order": "O-1", "note": note}
    with _env(fixture) as env:
        env.reset()
        gateway, events = _gateway(env)
        result = gateway.call(1, "lookup", args)
        text = json.dumps(args, ensure_ascii=False)
        big = len(text) > MAX_ARGUMENT_CHARS
        if char == "\ud800":  # not encodable: refused as such, whatever its size
            assert result.error_class == "invalid_arguments"
            assert "not encodable text" in (result.error or "")
        elif not big:  # half the limit of one-character cells: within it, it runs
            assert result.ok, result.error
            return
        if big:
            digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
            assert f"{len(text):,} characters of JSON, sha256 {digest}" in (result.error or "")
        assert events[-1].error == result.error


def test_arguments_over_the_limit_only_as_escapes_are_within_it(fixture: Path) -> None:
    """Counted as ``ensure_ascii=True`` JSON, ``é`` x 300,000 is 1.8 million characters; as
    the size check counts it (and has always), 300,000: the call runs."""
    args = {"order": "O-1", "note": "é" * 300_000}
    assert len(json.dumps(args)) > MAX_ARGUMENT_CHARS
    with _env(fixture) as env:
        env.reset()
        gateway, _ = _gateway(env)
        assert gateway.call(1, "lookup", args).ok


def test_oversized_and_more_padding_is_refused_with_the_size(fixture: Path) -> None:
    args = {"order": "O-1", "note": "x" * (MAX_ARGUMENT_CHARS + 1)}
    with _env(fixture) as env:
        env.reset()
        gateway, events = _gateway(env)
        result = gateway.call(1, "lookup", args)
        size = len(json.dumps(args, ensure_ascii=False))
        assert (result.ok, result.error_class) == (False, "invalid_arguments")
        said = f"arguments: {size:,} characters of JSON, over the {MAX_ARGUMENT_CHARS:,}"
        assert result.error is not None and result.error.startswith(f"invalid arguments: {said}")
        assert len(json.dumps(events[-1].args)) < 10_000  # kept cut
