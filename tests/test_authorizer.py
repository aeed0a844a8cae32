"""The agent connection's authorizer as an allowlist, the deadline on its SQL, and reset checks."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from groundstate.environments.sqlite import AGENT_FUNCTIONS, SqliteEnvironment
from groundstate.errors import PermissionDenied, ResetCheckFailed, TimeLimitReached
from groundstate.spec.task import Permissions

from .conftest import HANG

CLOCK = datetime(2026, 1, 15, 10, tzinfo=UTC)
FIXTURE = """
CREATE TABLE orders (order_id TEXT PRIMARY KEY, total INTEGER, placed TEXT);
CREATE TABLE secrets (id INTEGER PRIMARY KEY, value TEXT);
INSERT INTO orders VALUES ('o1', 1200, '2026-01-01'), ('o2', 300, '2026-01-10');
INSERT INTO secrets VALUES (1, 'hunter2');
"""


@pytest.fixture
def env(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    fixture = tmp_path / "shop.sql"
    fixture.write_text(FIXTURE)
    permissions = Permissions(tables={"secrets": "none"})
    with SqliteEnvironment(fixture, clock=CLOCK, permissions=permissions) as environment:
        yield environment


def _agent(env: SqliteEnvironment, sql: str) -> list[tuple[object, ...]]:
    with env.tool_transaction():
        return env.agent_db.execute(sql).fetchall()  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT upper(order_id), lower('A'), length(order_id), substr(order_id, 2) FROM orders",
        "SELECT count(*), sum(total), avg(total), max(total), group_concat(order_id) FROM orders",
        "SELECT date(placed, '+1 day'), strftime('%Y', placed), julianday(placed) FROM orders",
        "SELECT round(total / 7.0, 2), abs(-total), coalesce(NULL, total) FROM orders",
        "SELECT json_object('id', order_id), json_extract('{\"a\": 1}', '$.a') FROM orders",
        "SELECT value FROM json_each('[1, 2]')",
        "SELECT row_number() OVER (ORDER BY total) FROM orders",
        "SELECT typeof(total), printf('%05d', total), replace(order_id, 'o', '#') FROM orders",
        "SELECT length(randomblob(1000))",
        "PRAGMA table_info(orders)",
        "SELECT name FROM pragma_table_info('orders')",
        "PRAGMA foreign_keys",
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5) "
        "SELECT count(*) FROM c",
    ],
)
def test_the_usual_sql_is_allowed(env: SqliteEnvironment, sql: str) -> None:
    assert _agent(env, sql) is not None


@pytest.mark.parametrize(
    ("sql", "denial"),
    [
        ("SELECT fts3_tokenizer('simple')", "function fts3_tokenizer"),
        ("SELECT load_extension('/tmp/evil')", "function load_extension"),
        ("SELECT sqlite_compileoption_used('THREADSAFE')", "function sqlite_compileoption_used"),
        ("SELECT sqlite_version()", "function sqlite_version"),
        ("SELECT name FROM sqlite_master", "read sqlite_master"),
        ("SELECT sql FROM sqlite_schema WHERE name = 'secrets'", "read sqlite_master"),
        ("SELECT count(*) FROM sqlite_master", "read sqlite_master"),
        ("SELECT name, pgsize FROM dbstat", "read"),
        ("PRAGMA database_list", "pragma database_list"),
        ("SELECT file FROM pragma_database_list", "pragma database_list"),
        ("PRAGMA function_list", "pragma function_list"),
        ("PRAGMA compile_options", "pragma compile_options"),
        ("SELECT value FROM secrets", "read secrets"),
    ],
)
def test_side_channels_are_denied(env: SqliteEnvironment, sql: str, denial: str) -> None:
    with pytest.raises(PermissionDenied, match=denial):
        _agent(env, sql)


def test_a_huge_blob_fails_instead_of_allocating(env: SqliteEnvironment) -> None:
    with pytest.raises(sqlite3.DataError, match="too big"):
        _agent(env, "SELECT length(randomblob(300000000))")
    assert _agent(env, "SELECT count(*) FROM orders") == [(2,)]  # the connection still works


def test_the_allowlist_names_no_dangerous_function() -> None:
    for name in ("load_extension", "fts3_tokenizer", "sqlite_version", "fts5", "rtreenode"):
        assert name not in AGENT_FUNCTIONS


# --- the deadline ---------------------------------------------------------------------------

RUNAWAY = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


def test_a_runaway_query_stops_at_the_deadline(env: SqliteEnvironment) -> None:
    env.set_deadline(time.monotonic() + 0.3)
    started = time.perf_counter()
    with pytest.raises(TimeLimitReached, match="time limit"):
        _agent(env, RUNAWAY)
    assert time.perf_counter() - started < HANG


def test_a_tool_that_swallows_the_interrupt_still_ends_at_the_deadline(
    env: SqliteEnvironment,
) -> None:
    env.set_deadline(time.monotonic() + 0.2)
    before = env.state_hash()
    with pytest.raises(TimeLimitReached), env.tool_transaction():
        env.agent_db.execute("UPDATE orders SET total = 0")
        with contextlib.suppress(sqlite3.OperationalError):  # the tool carries on regardless
            env.agent_db.execute(RUNAWAY).fetchall()
    assert env.state_hash() == before  # its writes were rolled back


def test_without_a_deadline_nothing_is_interrupted(env: SqliteEnvironment) -> None:
    env.set_deadline(time.monotonic() + 60)
    bounded = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000)"
    assert _agent(env, bounded + " SELECT count(*) FROM c") == [(200000,)]


def test_the_harness_can_still_roll_back_after_the_deadline(env: SqliteEnvironment) -> None:
    env.set_deadline(time.monotonic() - 1)  # already past
    with pytest.raises(TimeLimitReached):
        _agent(env, "SELECT count(*) FROM orders")
    env.set_deadline(None)
    assert not env.agent_db.in_transaction
    assert _agent(env, "SELECT count(*) FROM orders") == [(2,)]


# --- reset is checked against the first build ------------------------------------------------


class _StrayWrite(SqliteEnvironment):
    def _restore(self) -> None:
        super()._restore()
        self._control.execute("DELETE FROM orders WHERE order_id = 'o2'")


def test_a_reset_that_does_not_restore_is_caught_without_a_declared_hash(tmp_path: Path) -> None:
    fixture = tmp_path / "shop.sql"
    fixture.write_text(FIXTURE)
    env = _StrayWrite(fixture, clock=CLOCK)
    with env, pytest.raises(ResetCheckFailed, match="the fixture built"):
        env.reset()


def test_an_honest_reset_passes_after_the_agent_changed_things(env: SqliteEnvironment) -> None:
    first = env.reset()
    with env.tool_transaction():
        env.agent_db.execute("DELETE FROM orders")
    env.advance_clock(3600)
    assert env.reset() == first


def test_kept_answers_never_cross_permissions_and_denials_repeat(tmp_path: Path) -> None:
    """The authorizer keeps allowed answers per fixture and permissions: a read allowed under
    one task's permissions stays denied under another's on the same fixture (asked in both
    orders), and a denial asked again is denied and recorded again."""
    fixture = tmp_path / "shop.sql"
    fixture.write_text(FIXTURE)
    open_to_all, closed = Permissions(), Permissions(tables={"secrets": "none"})
    for order in ([open_to_all, closed, open_to_all], [closed, open_to_all, closed]):
        for permissions in order:
            with SqliteEnvironment(fixture, clock=CLOCK, permissions=permissions) as env:
                for _ in range(2):
                    if permissions is closed:
                        with pytest.raises(PermissionDenied, match="read secrets"):
                            _agent(env, "SELECT value FROM secrets")
                    else:
                        assert _agent(env, "SELECT value FROM secrets") == [("hunter2",)]
                    assert _agent(env, "SELECT total FROM orders WHERE order_id = 'o2'") == [(300,)]
