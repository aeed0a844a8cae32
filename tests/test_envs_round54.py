"""Fifty-fourth round: environments audit (SQLite kind).

Classes of defect fixed:

- **An attempt's database had no size cap**: an agent that grew it (rows of
  ``randomblob(10000000)``, a loop of inserts) until the disk was full ended its attempt as
  ``environment_failure`` (invalid, rerun at no cost to the agent) instead of its own
  failure. The agent's connection now holds a cap (``PRAGMA max_page_count``, by default
  ``agent_database_cap``: 16 times the fixture's build, at least 256 MiB; a constructor's
  ``max_database_bytes``); a call that would pass it is the agent's ``ToolError``, whether
  the tool caught SQLite's error or not, and its writes are undone. A full disk with less
  room than the cap allows, or a limit another hand set, stays the environment's failure.
  The cap binds the agent's connection only: the harness's clock and the graders' reads go
  on, and it holds after a reset and on a pooled database.
- **SQLite out of memory, and a lock the harness held, were the agent's error**: a tool that
  made the database's errors its own turned ``NOMEM`` and ``BUSY`` while the harness's own
  connection held the write lock into the agent's ``tool_error``. Both are now the
  environment's failure; a lock of a connection the tool opened stays the agent's.
- **An index edited through its shadow tables hid rows from the graders**: ``DELETE FROM
  branches_rowid``, ``docs_data`` or ``notes_segdir`` rows removed, an external-content
  index told to 'delete' a row whose content stays: searches missed rows and the state hash
  did not move. A call that wrote a virtual table now runs SQLite's own check of it
  (``integrity-check``, ``rtreecheck``) and one out of step is the agent's error, undone;
  honest writes of every kind pass.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.scripted import ScriptedAgent
from groundstate.environments import sqlite as sqlite_env
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.environments.sqlite_live import POOL
from groundstate.episode import AttemptInfo, run_attempt
from groundstate.errors import EnvironmentFailure, ToolError
from groundstate.spec.solution import Step
from groundstate.spec.suite import Suite
from groundstate.testing import scripted_system
from groundstate.trace import ToolCallEvent

from ._envs_builders import SAVE_NOTE, bank_with_a_tool

CLOCK = datetime(2026, 1, 15, 10, tzinfo=UTC)
MiB = 1024 * 1024
FIXTURE = "CREATE TABLE t (id INTEGER PRIMARY KEY, v);\nINSERT INTO t VALUES (1, 'a');\n"
BLOB = "INSERT INTO t (v) VALUES (randomblob(300000))"


def _env(tmp_path: Path, **kwargs: Any) -> SqliteEnvironment:
    fixture = tmp_path / "grow.sql"
    fixture.write_text(FIXTURE, encoding="utf-8")
    return SqliteEnvironment(fixture, clock=CLOCK, **kwargs)


@pytest.fixture
def capped(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    with _env(tmp_path, max_database_bytes=MiB) as env:
        env.reset()
        yield env


@pytest.fixture
def plain(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    with _env(tmp_path) as env:
        env.reset()
        yield env


def _grow(env: SqliteEnvironment, times: int = 8, *, wrap: bool = False) -> None:
    """One call that inserts *times* blobs of 300 KB (a tool that makes SQLite's error its
    own when *wrap*)."""
    with env.tool_transaction():
        try:
            for _ in range(times):
                env.agent_db.execute(BLOB)
        except sqlite3.Error as exc:
            if wrap:
                raise ToolError(f"could not save: {exc}") from exc
            raise


def _size(env: SqliteEnvironment) -> int:
    return int(env.evaluator_view().query("SELECT count(*) FROM t")[0][0])


# --- an attempt's database is capped: past the cap is the agent's error ------------------------


@pytest.mark.parametrize("wrap", [False, True])
def test_growing_past_the_cap_is_the_agents_error(capped: SqliteEnvironment, wrap: bool) -> None:
    initial = capped.state_hash()
    with pytest.raises(ToolError, match=r"past the 1 MiB .*undone") as error:
        _grow(capped, wrap=wrap)
    assert not isinstance(error.value, EnvironmentFailure)
    assert capped.state_hash() == initial
    assert _size(capped) == 1


def test_writes_under_the_cap_pass_and_the_cap_is_the_whole_database(
    capped: SqliteEnvironment,
) -> None:
    _grow(capped, times=2)
    assert _size(capped) == 3
    with pytest.raises(ToolError):
        _grow(capped, times=2)  # 1.2 MB more: the database, not the call, is capped
    _run_small(capped)
    assert _size(capped) == 4


def _run_small(env: SqliteEnvironment) -> None:
    with env.tool_transaction():
        env.agent_db.execute("INSERT INTO t (v) VALUES ('small')")


def test_the_default_cap_binds_the_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the default (scaled down here: the real one is 256 MiB), an agent that writes
    more than it allows meets the agent's error, not a disk filled to the end."""
    monkeypatch.setattr(sqlite_env, "AGENT_DATABASE_MIN_BYTES", MiB, raising=False)
    with _env(tmp_path) as env:
        env.reset()
        with pytest.raises(ToolError):
            _grow(env)
        assert _size(env) == 1


def test_the_default_cap_scales_with_the_fixture() -> None:
    assert sqlite_env.agent_database_cap(b"x" * 4096) == 256 * MiB
    assert sqlite_env.agent_database_cap(b"x" * 64 * MiB) == 16 * 64 * MiB


@pytest.mark.parametrize("wrap", [False, True])
def test_a_full_disk_with_less_room_than_the_cap_stays_the_environments(
    capped: SqliteEnvironment, monkeypatch: pytest.MonkeyPatch, wrap: bool
) -> None:
    monkeypatch.setattr(sqlite_env, "free_bytes", lambda path: 4096, raising=False)
    failure = pytest.raises(EnvironmentFailure, match=r"^sqlite environment: .*SQLITE_FULL")
    with failure:
        _grow(capped, wrap=wrap)


def test_a_limit_set_by_another_hand_is_no_cap_of_the_agents(tmp_path: Path) -> None:
    """A disk full at the file's own size (simulated, as an earlier round's tests do, by the
    connection's page limit): not this environment's cap, so not the agent's doing."""
    with _env(tmp_path) as env:
        env.reset()
        pages = env._harness("PRAGMA page_count")[0][0]
        env._harness(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(EnvironmentFailure, match="SQLITE_FULL"):
            _grow(env, wrap=True)


def test_the_agents_own_other_errors_keep_their_messages(capped: SqliteEnvironment) -> None:
    with pytest.raises(ToolError, match="UNIQUE"), capped.tool_transaction():
        try:
            capped.agent_db.execute("INSERT INTO t VALUES (1, 'again')")
        except sqlite3.Error as exc:
            raise ToolError(str(exc)) from exc


def test_the_cap_holds_after_a_reset(capped: SqliteEnvironment) -> None:
    initial = capped.state_hash()
    _grow(capped, times=3)
    assert capped.reset() == initial
    with pytest.raises(ToolError):
        _grow(capped)
    assert capped.reset() == initial
    _grow(capped, times=3)  # the room of the first attempt, again
    assert _size(capped) == 4


def test_a_pooled_database_keeps_the_cap(tmp_path: Path) -> None:
    POOL.drain()
    try:
        for attempt in range(3):
            with _env(tmp_path, max_database_bytes=MiB) as env:
                env.reset()
                _grow(env, times=2)
                with pytest.raises(ToolError):
                    _grow(env)
                assert _size(env) == 3, attempt
    finally:
        POOL.drain()


def test_a_pooled_database_takes_the_new_environments_cap(tmp_path: Path) -> None:
    POOL.drain()
    try:
        with _env(tmp_path, max_database_bytes=8 * MiB) as env:
            env.reset()
            _grow(env, times=2)
        with _env(tmp_path, max_database_bytes=MiB) as env:
            env.reset()
            with pytest.raises(ToolError):
                _grow(env, times=4)
    finally:
        POOL.drain()


def test_the_harness_and_the_graders_are_not_capped(capped: SqliteEnvironment) -> None:
    """The database at its cap: the clock still moves, the state is read whole, the graders'
    queries and a restore of rows go on."""
    initial = capped.state_hash()
    _grow(capped, times=3)
    with pytest.raises(ToolError):
        _grow(capped, times=1)
    capped.advance_clock(3600)
    assert capped.evaluator_view().query("SELECT count(*) FROM t") == [(4,)]
    assert capped.state_hash() != initial
    assert capped.diff_from_initial().tables["t"].added
    capped.restore_collection("t")
    assert _size(capped) == 1


def test_a_database_that_met_its_cap_is_not_pooled(tmp_path: Path) -> None:
    POOL.drain()
    try:
        with _env(tmp_path, max_database_bytes=MiB) as env:
            env.reset()
            with pytest.raises(ToolError):
                _grow(env)
        assert len(POOL) == 0
    finally:
        POOL.drain()


# --- in an attempt: the agent's tool error, graded ----------------------------------------------


def _bank_with_a_note_tool(tmp_path: Path) -> Suite:
    return bank_with_a_tool(tmp_path, "save_note", SAVE_NOTE)


def test_an_agent_that_grows_the_database_fails_its_own_attempt(tmp_path: Path) -> None:
    suite = _bank_with_a_note_tool(tmp_path)
    task = suite.tasks["transfer"]
    steps = [
        Step(call="check_pin", args={"account": "A", "pin": "1234"}),
        Step(call="save_note", args={"account": "A", "note": "x" * 100_000, "copies": 40}),
        Step(finish="Done."),
    ]

    def make_env(task: Any, suite: Suite) -> SqliteEnvironment:
        return SqliteEnvironment(
            suite.fixture_path(task),
            clock=task.clock,
            permissions=task.permissions,
            max_database_bytes=2 * MiB,
        )

    info = AttemptInfo(run_id="r54", batch_id="adhoc", attempt=1, seed=0)
    output = asyncio.run(
        run_attempt(task, suite, scripted_system(), ScriptedAgent(steps), info, make_env)
    )
    run = output.run
    assert not run.terminal_reason.startswith("environment_failure"), run.terminal_reason
    calls = [event for event in run.observation_action_log if isinstance(event, ToolCallEvent)]
    assert [call.error_class for call in calls] == [None, "tool_error"], calls
    assert "MiB an attempt's database may hold" in (calls[1].error or "")


# --- a lock and memory: whose failure ----------------------------------------------------------


def _short_wait(env: SqliteEnvironment) -> None:
    env._harness("PRAGMA busy_timeout = 50")  # SQLite's wait for a lock, shortened


@pytest.mark.parametrize("wrap", [False, True])
def test_a_lock_the_harness_holds_is_the_environments_failure(
    plain: SqliteEnvironment, wrap: bool
) -> None:
    """The harness's own connection holding the write lock: no doing of the agent's."""
    _short_wait(plain)
    plain._control.execute("BEGIN IMMEDIATE")
    try:
        failure = pytest.raises(EnvironmentFailure, match=r"^sqlite environment: .*SQLITE_BUSY")
        with failure, plain.tool_transaction():
            try:
                plain.agent_db.execute("INSERT INTO t (v) VALUES ('x')")
            except sqlite3.Error as exc:
                if wrap:
                    raise ToolError(f"could not save: {exc}") from exc
                raise
    finally:
        plain._control.execute("ROLLBACK")


def test_a_lock_of_the_agents_own_connection_stays_the_agents_error(
    plain: SqliteEnvironment,
) -> None:
    """A tool's own second connection left in a transaction: the agent's doing."""
    _short_wait(plain)
    own = sqlite3.connect(plain._live, isolation_level=None)
    try:
        own.execute("BEGIN IMMEDIATE")
        with pytest.raises(ToolError, match="locked"), plain.tool_transaction():
            try:
                plain.agent_db.execute("INSERT INTO t (v) VALUES ('x')")
            except sqlite3.Error as exc:
                raise ToolError(f"could not save: {exc}") from exc
        own.execute("ROLLBACK")
    finally:
        own.close()


def _out_of_memory() -> sqlite3.OperationalError:
    error = sqlite3.OperationalError("out of memory")
    error.sqlite_errorcode = sqlite3.SQLITE_NOMEM
    error.sqlite_errorname = "SQLITE_NOMEM"
    return error


@pytest.mark.parametrize("wrap", [False, True])
def test_sqlite_out_of_memory_is_the_environments_failure(
    plain: SqliteEnvironment, wrap: bool
) -> None:
    initial = plain.state_hash()
    failure = pytest.raises(EnvironmentFailure, match=r"out of memory \(SQLITE_NOMEM\)")
    with failure, plain.tool_transaction():
        plain.agent_db.execute("INSERT INTO t (v) VALUES ('x')")
        if wrap:
            raise ToolError("could not save") from _out_of_memory()
        raise _out_of_memory()
    assert plain.state_hash() == initial


# --- an index edited through its shadow tables ---------------------------------------------------

SEARCHES = """
CREATE VIRTUAL TABLE docs USING fts5(title, body);
INSERT INTO docs(rowid, title, body) VALUES (1, 'fees', 'a refund of fees'), (2, 'refund', 'how');
CREATE VIRTUAL TABLE branches USING rtree(id, min_x, max_x, min_y, max_y);
INSERT INTO branches VALUES (1, 0, 1, 0, 1), (2, 5, 6, 5, 6);
CREATE VIRTUAL TABLE notes USING fts4(body);
INSERT INTO notes VALUES ('refund note');
CREATE TABLE pages (id INTEGER PRIMARY KEY, title TEXT, body TEXT);
INSERT INTO pages VALUES (1, 'fees', 'refund refund'), (2, 'refund', 'one');
CREATE VIRTUAL TABLE idx USING fts5(title, body, content=pages, content_rowid=id);
INSERT INTO idx(idx) VALUES ('rebuild');
"""


@pytest.fixture
def searches(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    fixture = tmp_path / "searches.sql"
    fixture.write_text(SEARCHES, encoding="utf-8")
    with SqliteEnvironment(fixture, clock=CLOCK) as env:
        env.reset()
        yield env


def _call(env: SqliteEnvironment, *sql: str) -> None:
    with env.tool_transaction():
        for statement in sql:
            env.agent_db.execute(statement).fetchall()


FOUND = {
    "docs": "SELECT rowid FROM docs WHERE docs MATCH 'refund' ORDER BY rowid",
    "branches": "SELECT id FROM branches WHERE id = 1",
    "notes": "SELECT rowid FROM notes WHERE notes MATCH 'refund'",
    "idx": "SELECT rowid FROM idx WHERE idx MATCH 'refund' ORDER BY rowid",
}


@pytest.mark.parametrize(
    ("table", "sql"),
    [
        ("branches", "DELETE FROM branches_rowid WHERE rowid = 1"),
        ("docs", "DELETE FROM docs_data WHERE id > 10"),
        ("notes", "DELETE FROM notes_segdir"),
        ("idx", "INSERT INTO idx(idx, rowid, title, body) VALUES ('delete', 1, 'fees', "
         "'refund refund')"),
    ],
)  # fmt: skip
def test_an_index_edited_by_hand_is_refused_and_undone(
    searches: SqliteEnvironment, table: str, sql: str
) -> None:
    initial = searches.state_hash()
    before = searches.evaluator_view().query(FOUND[table])
    assert before
    with pytest.raises(ToolError, match=f"index of {table} out of step"):
        _call(searches, sql)
    assert searches.evaluator_view().query(FOUND[table]) == before
    assert searches.state_hash() == initial


@pytest.mark.parametrize(
    "sql",
    [
        ("INSERT INTO docs(rowid, title, body) VALUES (3, 'x', 'refund y')",),
        ("DELETE FROM docs WHERE rowid = 1", "INSERT INTO docs(docs) VALUES ('optimize')"),
        ("UPDATE docs SET body = 'no longer' WHERE rowid = 2",),
        ("INSERT INTO docs(docs) VALUES ('rebuild')",),
        ("INSERT INTO docs(docs, rank) VALUES ('rank', 'bm25(10.0, 1.0)')",),
        ("INSERT INTO branches VALUES (3, 1, 2, 1, 2)", "DELETE FROM branches WHERE id = 2"),
        ("UPDATE branches SET max_x = 9 WHERE id = 1",),
        ("INSERT INTO notes VALUES ('another refund')", "DELETE FROM notes WHERE rowid = 1"),
        (
            "DELETE FROM pages WHERE id = 1",
            "INSERT INTO idx(idx, rowid, title, body) VALUES ('delete', 1, 'fees', "
            "'refund refund')",
        ),
        (
            "INSERT INTO pages VALUES (3, 'new', 'refund z')",
            "INSERT INTO idx(rowid, title, body) VALUES (3, 'new', 'refund z')",
        ),
    ],
)
def test_honest_writes_of_search_tables_pass(searches: SqliteEnvironment, sql: tuple[str]) -> None:
    _call(searches, *sql)


def test_an_honest_search_table_write_in_a_later_call_is_still_checked(
    searches: SqliteEnvironment,
) -> None:
    """FTS5 keeps its own prepared statements: the shadow write of a later call may not ask
    the authorizer again, but the agent's statement on the table does."""
    _call(searches, "INSERT INTO docs(rowid, title, body) VALUES (3, 'x', 'refund y')")
    _call(searches, "INSERT INTO docs(rowid, title, body) VALUES (4, 'x', 'refund y')")
    with pytest.raises(ToolError, match="index of docs"):
        _call(searches, "DELETE FROM docs_data WHERE id > 10")
