"""Reused live databases: a clean attempt's file and connections serve the next environment of
the same build, which then behaves as a new one would; nothing of the attempt carries over, and
a database whose attempt went wrong, or that anything could still touch, is never reused."""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from groundstate.environments import sqlite as sqlite_env
from groundstate.environments import sqlite_live
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.environments.sqlite_live import POOL
from groundstate.errors import EnvironmentFailure, PermissionDenied, TimeLimitReached, ToolError
from groundstate.spec.suite import Suite
from groundstate.spec.task import Permissions
from groundstate.testing import run_solution

from .conftest import HANG, without_keys

CLOCK = datetime(2026, 1, 15, 10, 0)
FIXTURE = """
CREATE TABLE accounts (id TEXT PRIMARY KEY, balance INTEGER NOT NULL CHECK (balance >= 0));
CREATE TABLE entries (n INTEGER PRIMARY KEY AUTOINCREMENT, note TEXT UNIQUE);
CREATE TABLE secrets (k TEXT PRIMARY KEY, v TEXT);
INSERT INTO accounts VALUES ('a', 10), ('b', 20);
INSERT INTO entries (note) VALUES ('opened');
INSERT INTO secrets VALUES ('pin', '1234');
"""
COUNTERS = "SELECT changes(), last_insert_rowid(), total_changes()"
SETTINGS = [
    "foreign_keys",
    "reverse_unordered_selects",
    "recursive_triggers",
    "query_only",
    "ignore_check_constraints",
    "defer_foreign_keys",
    "journal_mode",
    "locking_mode",
    "synchronous",
    "writable_schema",
    "trusted_schema",
    "automatic_index",
    "cell_size_check",
    "legacy_alter_table",
    "temp_store",
    "cache_size",
    "busy_timeout",
    "read_uncommitted",
    "secure_delete",
]


@pytest.fixture(autouse=True)
def empty_pool() -> Iterator[None]:
    POOL.drain()
    POOL.reused = 0
    yield
    POOL.drain()


@pytest.fixture
def fixture(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.sql"
    path.write_text(FIXTURE)
    return path


def _env(fixture: Path, permissions: Permissions | None = None) -> SqliteEnvironment:
    return SqliteEnvironment(fixture, clock=CLOCK, permissions=permissions)


def _fresh(fixture: Path, tmp_path: Path) -> SqliteEnvironment:
    """An environment in a folder of its own: it neither takes nor gives pooled databases."""
    folder = tmp_path / f"fresh-{time.monotonic_ns()}"
    return SqliteEnvironment(fixture, clock=CLOCK, workdir=folder)


def _call(env: SqliteEnvironment, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    with env.tool_transaction():
        return env.agent_db.execute(sql, params).fetchall()


def _settings(env: SqliteEnvironment) -> list[Any]:
    return [env._harness(f"PRAGMA {name}") for name in SETTINGS]


def _a_busy_attempt(env: SqliteEnvironment) -> None:
    """Rows, counters, the clock and the connection's own counts all moved."""
    env.reset()
    _call(env, "UPDATE accounts SET balance = 0 WHERE id = 'a'")
    _call(env, "INSERT INTO entries (note) VALUES ('x'), ('y')")
    _call(env, "DELETE FROM entries WHERE note = 'x'")
    env.advance_clock(3600)


def test_a_clean_attempts_database_serves_the_next_environment_as_a_new_one(
    fixture: Path, tmp_path: Path
) -> None:
    first = _env(fixture)
    _a_busy_attempt(first)
    agent = first.agent_db
    first.close()
    assert len(POOL) == 1
    taken = POOL.reused
    with _env(fixture) as second, _fresh(fixture, tmp_path) as fresh:
        assert POOL.reused == taken + 1 and second.agent_db is agent  # the same connection
        assert second.reset() == fresh.reset()
        assert second.snapshot() == fresh.snapshot() and second.now() == fresh.now() == CLOCK
        assert _call(second, COUNTERS) == _call(fresh, COUNTERS)  # as a new connection's
        assert _settings(second) == _settings(fresh)
        for env in (second, fresh):  # the write log's triggers work as they did
            _call(env, "INSERT INTO entries (note) VALUES ('z')")
            _call(env, "UPDATE accounts SET balance = balance + 1")
        assert _call(second, COUNTERS) == _call(fresh, COUNTERS)
        assert second.tracking_complete and fresh.tracking_complete
        assert second.state_hash() == fresh.state_hash()
        assert second.diff_from_initial() == fresh.diff_from_initial()
        assert second.health()["ok"]


def test_another_build_does_not_take_it(fixture: Path, tmp_path: Path) -> None:
    _env(fixture).close()
    other = tmp_path / "other.sql"
    other.write_text(FIXTURE + "INSERT INTO accounts VALUES ('c', 1);")
    with _env(other) as env:
        assert len(POOL) == 1 and _call(env, "SELECT id FROM accounts WHERE id='c'") == [("c",)]


def test_the_new_environments_permissions_and_deadline_apply(fixture: Path) -> None:
    with _env(fixture) as first:
        assert _call(first, "SELECT v FROM secrets") == [("1234",)]
        first.set_deadline(time.monotonic() + 3600)
    with _env(fixture, Permissions(tables={"secrets": "none"})) as second:
        assert POOL.reused == 1
        with pytest.raises(PermissionDenied, match="read secrets"):
            _call(second, "SELECT v FROM secrets")
        second.set_deadline(time.monotonic() - 1)  # its own progress handler, not first's
        with pytest.raises(TimeLimitReached):
            _call(second, "SELECT count(*) FROM accounts")
    with _env(fixture) as third:  # second's attempt hit its time limit: not reused
        assert POOL.reused == 1
        assert _call(third, "SELECT v FROM secrets") == [("1234",)]


def test_tool_errors_denials_and_undone_python_settings_do_not_stop_reuse(fixture: Path) -> None:
    with _env(fixture, Permissions(tables={"secrets": "read"})) as first:
        with pytest.raises(ToolError), first.tool_transaction():
            first.agent_db.execute("UPDATE accounts SET balance = 1")
            raise ToolError("no such account")
        with pytest.raises(PermissionDenied):
            _call(first, "DELETE FROM secrets")
        with first.tool_transaction():  # a tool's Python changes the connection object
            first.agent_db.row_factory = sqlite3.Row
            first.agent_db.text_factory = bytes
            first.agent_db.isolation_level = "DEFERRED"
        agent = first.agent_db
    assert len(POOL) == 1
    with _env(fixture) as second:
        assert second.agent_db is agent
        assert agent.row_factory is None and agent.text_factory is str
        assert agent.isolation_level is None
        assert _call(second, "SELECT id FROM accounts ORDER BY id") == [("a",), ("b",)]


AGENT_TRIES = [
    "PRAGMA case_sensitive_like = ON",
    "PRAGMA reverse_unordered_selects = ON",
    "PRAGMA foreign_keys = OFF",
    "PRAGMA recursive_triggers = ON",
    "PRAGMA query_only = ON",
    "PRAGMA journal_mode = WAL",
    "PRAGMA locking_mode = EXCLUSIVE",
    "ATTACH ':memory:' AS other",
    "CREATE TEMP TABLE leftover (x)",
    "CREATE TEMP VIEW leftover AS SELECT 1",
    "CREATE TEMP TRIGGER leftover AFTER INSERT ON accounts BEGIN SELECT 1; END",
    "COMMIT",
    "BEGIN",
]


def test_what_the_agents_sql_tries_to_leave_behind_never_reaches_the_next_attempt(
    fixture: Path, tmp_path: Path
) -> None:
    """Each try is denied and its call rolled back (a clean attempt: the database is reused);
    a savepoint left open ends with the call. The next attempt's connection is as new."""
    with _env(fixture) as first:
        agent = first.agent_db
        for sql in AGENT_TRIES:
            with pytest.raises(PermissionDenied):
                _call(first, sql)
        with first.tool_transaction():
            first.agent_db.execute("SAVEPOINT left_open")
            first.agent_db.execute("UPDATE accounts SET balance = 1 WHERE id = 'a'")
    with _env(fixture) as second, _fresh(fixture, tmp_path) as fresh:
        assert second.agent_db is agent
        assert second.reset() == fresh.reset()
        assert _settings(second) == _settings(fresh)
        assert second._fingerprint() == fresh._fingerprint()
        assert not second.agent_db.in_transaction
        like = "SELECT count(*) FROM accounts WHERE id LIKE 'A'"
        assert _call(second, like) == _call(fresh, like) == [(1,)]


def _crash(env: SqliteEnvironment) -> None:
    with pytest.raises(RuntimeError), env.tool_transaction():
        env.agent_db.execute("UPDATE accounts SET balance = 1")
        raise RuntimeError("a bug in the tool")


def _time_limit(env: SqliteEnvironment) -> None:
    env.set_deadline(time.monotonic() - 1)
    with pytest.raises(TimeLimitReached):
        _call(env, "SELECT * FROM accounts")


def _broken_file(env: SqliteEnvironment) -> None:
    env.break_database()
    assert not env.health()["ok"]


def _in_a_tool(
    action: Callable[[sqlite3.Connection], object],
) -> Callable[[SqliteEnvironment], None]:
    def act(env: SqliteEnvironment) -> None:
        with env.tool_transaction():
            action(env.agent_db)

    return act


KEPT: list[object] = []  # what a tool kept alive past its call


def _reading_on(db: sqlite3.Connection) -> None:
    cursor = db.execute("SELECT * FROM accounts, accounts AS again")
    cursor.fetchone()  # not exhausted: the statement holds its read lock
    KEPT.append(cursor)


LEFTOVERS: dict[str, Callable[[SqliteEnvironment], None]] = {
    "a tool crashed": _crash,
    "the time limit": _time_limit,
    "a broken file": _broken_file,
    "a function": _in_a_tool(lambda db: db.create_function("leak", 0, lambda: 1)),
    "an aggregate": _in_a_tool(lambda db: db.create_aggregate("leak", 0, object)),
    "a collation": _in_a_tool(lambda db: db.create_collation("leak", lambda a, b: 0)),
    "a limit": _in_a_tool(lambda db: db.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, 100)),
    "a statement still reading": _in_a_tool(_reading_on),
    # A tool's own cache on the connection object carried one attempt's state to the next.
    "an attribute of a tool's": _in_a_tool(lambda db: setattr(db, "seen", {"pin": "1234"})),
    "the harness's names changed": _in_a_tool(
        lambda db: setattr(db, "_harness_names", frozenset())
    ),
    # Past the authorizer, as if it had a hole: each must still be caught.
    "a TEMP table": lambda env: env._harness("CREATE TEMP TABLE leftover (x)"),
    "a TEMP trigger": lambda env: env._harness(
        "CREATE TEMP TRIGGER leftover AFTER INSERT ON main.entries BEGIN SELECT 1; END"
    ),
    "an attached database": lambda env: env._harness("ATTACH ':memory:' AS other"),
    "case-sensitive LIKE": lambda env: env._harness("PRAGMA case_sensitive_like = ON"),
    "an open transaction": lambda env: env._harness("BEGIN"),
}


@pytest.mark.parametrize("leftover", LEFTOVERS, ids=str)
def test_an_attempt_that_leaves_something_behind_is_not_reused(
    fixture: Path, tmp_path: Path, leftover: str
) -> None:
    first = _env(fixture)
    first.reset()
    _call(first, "INSERT INTO entries (note) VALUES ('first')")  # triggers installed
    LEFTOVERS[leftover](first)
    agent = first.agent_db
    first.close()
    KEPT.clear()
    assert len(POOL) == 0
    with _env(fixture) as second, _fresh(fixture, tmp_path) as fresh:
        assert second.agent_db is not agent and POOL.reused == 0
        assert second.reset() == fresh.reset()
        assert _call(second, COUNTERS) == _call(fresh, COUNTERS)


def test_an_exception_through_the_with_block_keeps_it_out(fixture: Path) -> None:
    with pytest.raises(KeyError), _env(fixture) as env:
        env.reset()
        raise KeyError("the attempt was cancelled")
    assert len(POOL) == 0


def test_a_database_closed_under_a_running_tool_is_not_reused(fixture: Path) -> None:
    env = _env(fixture)
    env.reset()
    inside, release = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def tool() -> None:
        try:
            with env.tool_transaction():
                inside.set()
                release.wait(5)
                env.agent_db.execute("UPDATE accounts SET balance = 5")
        except BaseException as exc:  # the late tool meets a closed database
            failures.append(exc)

    thread = threading.Thread(target=tool)
    thread.start()
    assert inside.wait(HANG)
    env.close()  # the attempt gave up on the call
    release.set()
    thread.join(HANG)
    assert len(POOL) == 0 and failures


def test_a_late_caller_of_a_pooled_environment_cannot_reach_its_database(fixture: Path) -> None:
    first = _env(fixture)
    first.reset()
    view, handle = first.evaluator_view(), first.agent_db
    first.close()
    with _env(fixture, Permissions(tables={"secrets": "none"})) as second:
        assert POOL.reused == 1 and second.agent_db is handle
        with pytest.raises(EnvironmentFailure, match="closed"), first.tool_transaction():
            pass
        with pytest.raises(sqlite3.ProgrammingError):
            first.agent_db.execute("DELETE FROM accounts")
        with pytest.raises(sqlite3.ProgrammingError):
            view.query("SELECT * FROM accounts")
        for sql in ["SELECT * FROM accounts", "DELETE FROM accounts"]:  # outside its calls
            with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
                handle.execute(sql)
        assert len(second.snapshot().tables["accounts"].rows) == 2


def test_a_write_that_left_the_change_counter_alone_leaves_no_stale_page(fixture: Path) -> None:
    """A raw write with the header's counter unchanged is invisible to SQLite's cache check:
    the in-place restore drops every cached page all the same."""
    env = _env(fixture)
    with env:
        live = Path(env.health()["database"])
        image = live.read_bytes()
        tampered = sqlite3.connect(":memory:", isolation_level=None)
        tampered.deserialize(image)
        tampered.execute("UPDATE accounts SET balance = 99 WHERE id = 'a'")
        forged = bytearray(tampered.serialize())
        forged[24:40], forged[92:100] = image[24:40], image[92:100]  # the counters as they were
        env._control.execute("PRAGMA shrink_memory")  # the next reads cache the forged page
        env._harness("PRAGMA shrink_memory")
        live.write_bytes(bytes(forged))
        read = "SELECT balance FROM accounts WHERE id = 'a'"
        assert env._control.execute(read).fetchall() == [(99,)]  # now in the caches
        assert _call(env, read) == [(99,)]
        env.reset()  # the bytes differ: restored in place under the open connections
        assert env._control.execute(read).fetchall() == [(10,)]
        assert _call(env, read) == [(10,)]
        assert env.evaluator_view().query(read) == [(10,)]


def test_a_forked_child_never_reuses_the_parents_databases(fixture: Path) -> None:
    first = _env(fixture)
    first.reset()
    parents = first.agent_db
    first.close()
    assert len(POOL) == 1
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without running anything of pytest's
        ok = False
        try:
            empty = len(POOL) == 0
            with _env(fixture) as env:
                ok = empty and env.agent_db is not parents and env.reset() != ""
                ok = ok and _call(env, "SELECT count(*) FROM accounts") == [(2,)]
        finally:
            os.write(write, b"ok" if ok else b"no")
            os._exit(0)
    os.close(write)
    answer = os.read(read, 2)
    os.close(read)
    os.waitpid(pid, 0)
    assert answer == b"ok"
    with _env(fixture) as env:  # the parent's pooled database is intact and still its own
        assert env.agent_db is parents and env.reset()
        assert _call(env, "SELECT count(*) FROM accounts") == [(2,)]


def test_a_pooled_database_whose_folder_was_removed_is_not_taken(fixture: Path) -> None:
    first = _env(fixture)
    folder = Path(first.health()["database"]).parent
    first.close()
    shutil.rmtree(folder)  # as remove_own() does to the process's folder at a signal
    with _env(fixture) as env:
        assert POOL.reused == 0 and len(POOL) == 0
        assert env.reset() and env.initial_view().query("SELECT count(*) FROM accounts")


def _written_while_pooled(path: Path, how: str) -> sqlite3.Connection | None:
    """A connection an earlier attempt's agent kept (a thread, a handle) acting on a pooled
    database file: a committed write, a switch to WAL left open, or a journal left behind."""
    db = sqlite3.connect(path, isolation_level=None)
    if how == "commit":
        db.execute("UPDATE accounts SET balance = 99 WHERE id = 'a'")
    elif how == "wal":
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("SELECT count(*) FROM accounts").fetchall()
        return db  # kept open: in WAL mode it holds the file against the next writer
    else:
        (path.parent / f"{path.name}-journal").write_bytes(b"")
    db.close()
    return None


@pytest.mark.parametrize("how", ["commit", "wal", "journal"])
def test_a_pooled_database_written_while_pooled_is_not_taken(fixture: Path, how: str) -> None:
    first = _env(fixture)
    path = Path(first.health()["database"])
    first.close()
    assert len(POOL) == 1
    kept = _written_while_pooled(path, how)
    try:
        with _env(fixture) as env:
            assert POOL.reused == 0 and len(POOL) == 0
            assert env.reset() and env.health()["ok"]
            assert _call(env, "SELECT balance FROM accounts WHERE id = 'a'") == [(10,)]
            _call(env, "UPDATE accounts SET balance = 11 WHERE id = 'a'")  # not locked out
            assert env.diff_from_initial() and env.tracking_complete
    finally:
        if kept is not None:
            kept.close()


def test_running_out_of_descriptors_closes_the_pooled_databases(
    fixture: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _env(fixture).close()
    monkeypatch.setattr(sqlite_env.time, "sleep", lambda seconds: None)
    refusals = [OSError(errno.EMFILE, "Too many open files")]

    def open_once() -> str:
        if refusals:
            raise refusals.pop()
        return "opened"

    assert len(POOL) == 1 and sqlite_env._opening(open_once) == "opened"
    assert len(POOL) == 0


def test_the_pool_is_bounded(
    fixture: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It keeps at most as many databases as were open at once (at least POOL_SIZE): a
    batch's next wave reuses its last, and what other builds left is closed first."""
    monkeypatch.setattr(sqlite_live, "POOL_SIZE", 2)
    monkeypatch.setattr(POOL, "peak", 0)
    monkeypatch.setattr(POOL, "live", 0)  # not an environment an earlier test left open
    other = tmp_path / "other.sql"
    other.write_text(FIXTURE + "CREATE TABLE more (x);")
    folders = {}
    for build in (fixture, other):
        envs = [_env(build) for _ in range(3)]
        folders[build] = [Path(env.health()["database"]).parent for env in envs]
        for env in envs:
            env.close()
        assert len(POOL) == 3 and POOL.peak == 3
    assert [folder.exists() for folder in folders[fixture]] == [False] * 3  # closed first
    assert [folder.exists() for folder in folders[other]] == [True] * 3


VARYING = {"run_id", "started_at", "latency", "at", "duration_ms", "database"}
"""Record fields that differ from one attempt to the next whatever the environment."""


def test_records_are_the_same_with_and_without_reuse(
    bank: Suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    def records() -> list[Any]:
        return [
            without_keys(run_solution(bank, "transfer", solution).model_dump(mode="json"), VARYING)
            for solution in ("oracle", "bad_no_pin", "bad_wrong_target")
        ]

    reused = [records() for _ in range(2)]
    assert POOL.reused >= 5
    monkeypatch.setattr(sqlite_live, "POOL_SIZE", 0)
    POOL.drain()
    assert reused == [records()] * 2


# --- the graders' connection ---------------------------------------------------------------

EVALUATOR_SETTINGS = ["reverse_unordered_selects", "case_sensitive_like", "busy_timeout"]


def _evaluator(env: SqliteEnvironment) -> sqlite3.Connection:
    return env._evaluator


def test_a_clean_attempts_graders_connection_is_reused_and_reads_the_restored_state(
    fixture: Path, tmp_path: Path
) -> None:
    first = _env(fixture)
    _a_busy_attempt(first)
    view = first.evaluator_view()
    assert view.query("SELECT balance FROM accounts WHERE id = 'a'") == [(0,)]
    view.snapshot()  # its pages cached
    evaluator = _evaluator(first)
    first.close()
    with _env(fixture) as second, _fresh(fixture, tmp_path) as fresh:
        assert _evaluator(second) is evaluator
        second.reset()
        fresh.reset()
        assert second.evaluator_view().snapshot() == fresh.evaluator_view().snapshot()
        assert second.evaluator_view().query("SELECT balance FROM accounts WHERE id = 'a'") == [
            (10,)
        ]
        assert second.health()["ok"]


CHECK_CHANGES = [
    "PRAGMA reverse_unordered_selects = 1",  # would reorder a later check's rows
    "PRAGMA case_sensitive_like = 1",
    "PRAGMA busy_timeout = 1",
    "CREATE TEMP TABLE scratch (x)",
    "CREATE TEMP VIEW accounts AS SELECT 'forged' AS id, 0 AS balance",
    "ATTACH DATABASE ':memory:' AS other",
    "BEGIN",
]
"""What a check may leave on a connection it reads through: a connection left so is not
reused (here, and by the initial-state connections of tests/test_overhead_round26.py)."""


@pytest.mark.parametrize("sql", CHECK_CHANGES)
def test_a_graders_connection_a_check_changed_is_not_reused(fixture: Path, sql: str) -> None:
    first = _env(fixture)
    first.reset()
    first.evaluator_view().query(sql)
    evaluator = _evaluator(first)
    first.close()
    with _env(fixture) as second:
        assert _evaluator(second) is not evaluator
        assert POOL.reused == 1  # the rest of the database was reused all the same
        view = second.evaluator_view()
        assert view.query("SELECT id FROM accounts ORDER BY id") == [("a",), ("b",)]
        assert view.query("SELECT count(*) FROM temp.sqlite_master") == [(0,)]
        assert "other" not in [row[1] for row in view.query("PRAGMA database_list")]
        assert view.query("SELECT 'a' LIKE 'A'") == [(1,)]


def test_what_checks_read_does_not_keep_the_graders_connection_from_reuse(fixture: Path) -> None:
    first = _env(fixture)
    first.reset()
    view = first.evaluator_view()
    view.query("PRAGMA table_info(accounts)")
    view.query("SELECT json_extract('{\"a\": 1}', '$.a'), lower(id) FROM accounts")
    view.query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3) "
        "SELECT count(*) FROM n"
    )
    view.snapshot()
    evaluator = _evaluator(first)
    first.close()
    with _env(fixture) as second:
        assert _evaluator(second) is evaluator


def test_a_view_left_behind_can_neither_query_nor_interrupt_the_next_attempt(
    fixture: Path,
) -> None:
    first = _env(fixture)
    first.reset()
    stale = first.evaluator_view()
    stale.query("SELECT 1")
    first.close()
    with _env(fixture) as second:
        second.reset()
        with pytest.raises(sqlite3.ProgrammingError):
            stale.query("SELECT id FROM accounts")
        stale.interrupt()  # a no-op now
        assert second.evaluator_view().query("SELECT count(*) FROM accounts") == [(2,)]
        with pytest.raises(EnvironmentFailure):
            stale.snapshot()


def test_a_graders_connection_in_use_at_close_is_not_reused(fixture: Path) -> None:
    first = _env(fixture)
    first.reset()
    lease = first._lease
    started, release = threading.Event(), threading.Event()

    def slow(connection: sqlite3.Connection) -> None:
        started.set()
        release.wait(5)

    worker = threading.Thread(target=lease.query, args=(slow,))
    worker.start()
    started.wait(5)
    evaluator = _evaluator(first)
    first.close()
    release.set()
    worker.join()
    with _env(fixture) as second:
        assert _evaluator(second) is not evaluator
