"""Fourth environments audit (issues 2 and 9): states the agent leaves behind that look equal
when printed but are not (1 and 1.0, 0.0 and -0.0), and state outside the rows. The grader
must see exactly what the state hash sees: a change the hash counts is in the diff, the
call's writes and the collateral check, and a state the hash calls unchanged is no change."""

from __future__ import annotations

import contextlib
import math
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from groundstate.environments.base import (
    Snapshot,
    TableState,
    diff_snapshots,
    same_cell,
    same_row,
)
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.environments.sqlite_state import read_snapshot
from groundstate.grading.outcome import States, evaluate_assertions
from groundstate.spec.task import DiffAssertion

FIXTURE = """
CREATE TABLE acc (id TEXT PRIMARY KEY, bal REAL, note);
CREATE TABLE s (id INTEGER PRIMARY KEY, v ANY) STRICT;
CREATE TABLE w (k TEXT PRIMARY KEY, v) WITHOUT ROWID;
CREATE TABLE nk (x, y);
CREATE TABLE z (id INTEGER PRIMARY KEY, v);
INSERT INTO acc VALUES ('A', 0.5, 1), ('B', 2, 'x');
INSERT INTO s VALUES (1, 1), (2, 'a');
INSERT INTO w VALUES ('a', 1);
INSERT INTO nk VALUES (1, 2);
INSERT INTO z VALUES (1, 0.0);
"""


@pytest.fixture
def env(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    fixture = tmp_path / "round4.sql"
    fixture.write_text(FIXTURE, encoding="utf-8")
    with SqliteEnvironment(fixture, clock=datetime(2024, 1, 1)) as environment:
        environment.reset()
        yield environment


def _from_scratch(env: SqliteEnvironment) -> Snapshot:
    with contextlib.closing(sqlite3.connect(env._live)) as connection:
        return read_snapshot(connection)


# --- a value that prints alike but is stored otherwise ------------------------------------------

LOOK_ALIKE = [
    ("acc", "UPDATE acc SET note = 1.0 WHERE id = 'A'"),  # INTEGER 1 -> REAL 1.0, no affinity
    ("s", "UPDATE s SET v = 1.0 WHERE id = 1"),  # a STRICT table's ANY column
    ("w", "UPDATE w SET v = 1.0 WHERE k = 'a'"),  # a WITHOUT ROWID table
    ("nk", "UPDATE nk SET x = 1.0"),  # a table without a primary key, diffed by content
    ("z", "UPDATE z SET v = -0.0 WHERE id = 1"),  # 0.0 -> -0.0 (a REAL column would keep 0.0)
    ("z", "UPDATE z SET v = 0 WHERE id = 1"),  # REAL 0.0 -> INTEGER 0
]


@pytest.mark.parametrize(("table", "sql"), LOOK_ALIKE)
def test_a_change_of_storage_class_alone_is_a_change_in_the_record(
    env: SqliteEnvironment, table: str, sql: str
) -> None:
    """The hash told 1 from 1.0 and 0.0 from -0.0; the diff and the call's writes compared
    with ``==`` and saw nothing. The record shows the change now; the collateral check
    compares values as expected values are compared (numbers as numbers, to 15 significant
    digits: see ``grading/matching.py``), so an equal number written back is no unexpected
    change there (a balance credited and debited again must not fail a task)."""
    initial = env.state_hash()
    with env.tool_transaction() as effects:
        env.agent_db.execute(sql)
    assert env.state_hash() != initial
    assert effects.changed_tables == [table]
    assert [w.table for w in effects.writes] == [table] and all(w.columns for w in effects.writes)
    tracked = env.diff_from_initial()
    assert list(tracked.tables) == [table]
    assert tracked == diff_snapshots(env.initial_snapshot(), _from_scratch(env))
    changed = tracked.tables[table].changed
    assert table == "nk" or (len(changed) == 1 and changed[0].columns)
    assert _nothing_else_changed(env).passed


def test_writing_a_value_back_as_it_was_stored_is_still_no_change(env: SqliteEnvironment) -> None:
    """The near miss on the other side: the same storage class and value is no write."""
    initial = env.state_hash()
    with env.tool_transaction() as effects:
        env.agent_db.execute("UPDATE acc SET note = 1 WHERE id = 'A'")
        env.agent_db.execute("UPDATE z SET v = 0.0 WHERE id = 1")
        env.agent_db.execute("UPDATE acc SET bal = -0.0 WHERE id = 'A'")  # REAL keeps 0.0
        env.agent_db.execute("UPDATE acc SET bal = 0.5 WHERE id = 'A'")
    assert env.state_hash() == initial
    assert effects.writes == [] and env.diff_from_initial().is_empty()
    assert _nothing_else_changed(env).passed


def _nothing_else_changed(env: SqliteEnvironment) -> Any:
    assertion = DiffAssertion.model_validate(
        {"id": "d", "state_diff": {}, "nothing_else_changed": True}
    )
    states = States(
        env.initial_view(),
        env.evaluator_view(),
        env.initial_view().snapshot(),
        env.diff_from_initial(),
        Path("."),
    )
    (result,) = evaluate_assertions([assertion], states)
    return result


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (1, 1.0, False),
        (True, 1, False),
        ("1", 1, False),
        (b"1", "1", False),
        (0.0, -0.0, False),
        (None, 0, False),
        (math.nan, math.nan, True),  # PostgreSQL's float8 holds NaN: a row with one is itself
        (2**63, float(2**63), False),
        (0.1 + 0.2, 0.3, False),  # exact, as the hash (matching by value is the grader's)
        (1.5, 1.5, True),
        (b"\x00", b"\x00", True),
    ],
)
def test_cells_are_the_same_only_as_the_hash_would_say(a: Any, b: Any, same: bool) -> None:
    assert same_cell(a, b) is same and same_cell(b, a) is same
    assert same_row({"c": a}, {"c": b}) is same


def test_a_row_holding_nan_is_not_a_change_from_itself() -> None:
    """NaN != NaN in Python: a state holding one differed from itself in every diff."""
    table = TableState(columns=["id", "v"], key=["id"], rows={"1": {"id": 1, "v": math.nan}})
    again = TableState(columns=["id", "v"], key=["id"], rows={"1": {"id": 1, "v": float("nan")}})
    assert diff_snapshots(Snapshot(tables={"t": table}), Snapshot(tables={"t": again})).is_empty()


# --- PostgreSQL: the write log keeps what the columns hold ---------------------------------------


@pytest.fixture
def pg_env(tmp_path: Path) -> Iterator[Any]:
    pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")
    from groundstate.environments.postgres import PostgresEnvironment

    from .test_postgres import needs_postgres

    needs_postgres()
    fixture = tmp_path / "pg.sql"
    fixture.write_text(
        "CREATE TABLE acc (id TEXT PRIMARY KEY, bal REAL, n INTEGER);"
        "INSERT INTO acc VALUES ('A', 0.0, 5), ('B', 2.5, 7);",
        encoding="utf-8",
    )
    with PostgresEnvironment(fixture, clock=datetime(2024, 1, 1)) as environment:
        environment.reset()
        yield environment


def test_postgres_logs_a_negative_zero_as_the_column_holds_it(pg_env: Any) -> None:
    """``to_jsonb`` writes a double precision -0 as 0 (and JSON's ``-0`` reads as 0): the
    call's writes said 0.0 where the state held -0.0. Since the twentieth round a REAL column
    holds ``0.0`` for ``-0.0``, as SQLite's does (it keeps a whole REAL as an integer): the
    write over 0.0 is no write, the one over 2.5 writes 0.0, and the log says so."""
    initial = pg_env.state_hash()
    with pg_env.tool_transaction() as effects:
        pg_env.agent_db.execute("UPDATE acc SET bal = -CAST(0 AS REAL) WHERE id = 'A'")
        pg_env.agent_db.execute("UPDATE acc SET bal = CAST('-0' AS REAL) WHERE id = 'B'")
    assert pg_env.state_hash() != initial
    (b,) = effects.writes
    assert repr(b.after["bal"]) == "0.0" and b.before["bal"] == 2.5
    assert pg_env.evaluator_view().query("SELECT bal FROM acc ORDER BY id") == [(0.0,), (0.0,)]
    rows = pg_env.evaluator_view().query("SELECT bal FROM acc ORDER BY id")
    assert all(math.copysign(1, bal) == 1 for (bal,) in rows)


def test_postgres_a_nan_written_again_is_no_write(pg_env: Any) -> None:
    """NaN != NaN: a row holding one, written again as it was, was a write of every call.
    Since the twentieth round a NaN is stored as NULL, as SQLite stores it (it has no NaN)."""
    nan = "UPDATE acc SET bal = ? WHERE id = 'A'"
    with pg_env.tool_transaction() as first:
        pg_env.agent_db.execute(nan, (float("nan"),))
    with pg_env.tool_transaction() as again:
        pg_env.agent_db.execute(nan, (float("nan"),))
    assert [w.columns for w in first.writes] == [["bal"]] and again.writes == []
    assert first.writes[0].after is not None and first.writes[0].after["bal"] is None


# --- workspaces: a failed call is undone whatever it left in a file's place ---------------------

NOT_UTF8 = "; touch \"$(printf 'x\\377')\""  # fails the call: file names must be UTF-8
"""Appended to a command: the call fails after the command ran, so it must be undone."""


@pytest.fixture
def ws_env(tmp_path: Path) -> Iterator[Any]:
    import shutil

    from groundstate.environments.workspace import WorkspaceEnvironment
    from groundstate.sandbox import find_bwrap

    repo = tmp_path / "suite" / "repo"
    shutil.copytree(Path(__file__).parent / "suites" / "workspace_mini" / "repo", repo)
    (repo / "inside").symlink_to("src")  # a fixture's own link
    sandbox = "bwrap" if find_bwrap() is not None else "none"
    with WorkspaceEnvironment(
        repo, clock=datetime(2026, 1, 15), options={"sandbox": sandbox}
    ) as env:
        env.reset()
        yield env


def _command(env: Any, command: str) -> Any:
    from groundstate.environments.workspace_tools import TOOLS
    from groundstate.gateway import ToolGateway

    events: list[Any] = []
    ToolGateway(TOOLS, env, events.append, lambda: 0.0).call(1, "run_command", {"command": command})
    return events[0]


@pytest.mark.parametrize(
    "command",
    [
        "rm inside && ln -s tests inside",  # a fixture's link pointed elsewhere
        "rm inside && echo hi > inside",  # a link replaced by a file
        "rm src/calc.py && mkdir src/calc.py && echo x > src/calc.py/y",  # a file by a folder
        "rm src/calc.py && ln -s ../tests/check_calc.py src/calc.py",  # a file by a link
        "chmod +x src/calc.py && echo changed >> src/calc.py",
        "rm -r src && ln -s tests src",  # a folder by a link to another
        "rm src/calc.py && mkfifo src/calc.py",  # a file by a FIFO
    ],
)
def test_a_failed_call_is_undone_whatever_took_a_files_place(ws_env: Any, command: str) -> None:
    """The undo left a fixture's link removed (the state changed by a call that failed) and
    crashed on a folder in a file's place (an environment failure the agent could cause)."""
    initial = ws_env.state_hash()
    event = _command(ws_env, command + NOT_UTF8)
    assert event.error_class == "tool_error" and "UTF-8" in str(event.error)
    assert ws_env.state_hash() == initial
    inside = ws_env.root / "inside"
    assert inside.is_symlink() and str(inside.readlink()) == "src"
    assert (ws_env.root / "src" / "calc.py").is_file()
    assert not (ws_env.root / "src").is_symlink()


@pytest.mark.parametrize(
    "command",
    [
        "mkfifo pipe",
        "mkdir -p empty/deeper",
        "touch -d 2001-01-01 src/calc.py",  # mtime alone
        "chmod 600 src/calc.py",  # git keeps the owner's x bit only
        "python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('sock')\"",
    ],
)
def test_what_git_would_not_hold_is_no_change_and_reset_removes_it(
    ws_env: Any, command: str
) -> None:
    initial, listing = ws_env.state_hash(), _entries(ws_env.root)
    event = _command(ws_env, command)
    assert event.error_class is None, event.error
    assert ws_env.state_hash() == initial and ws_env.diff() == "" and event.writes == []
    ws_env.reset()
    assert _entries(ws_env.root) == listing


def _entries(root: Path) -> list[tuple[str, int]]:
    """Every entry under *root* with its mode bits: what a later attempt could find."""
    return sorted(
        (path.relative_to(root).as_posix(), path.lstat().st_mode) for path in root.rglob("*")
    )


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("mv src/calc.py src/Calc.py", {"src/calc.py", "src/Calc.py"}),  # case alone
        ("chmod +x src/calc.py", {"src/calc.py"}),
        ("ln src/calc.py hard.py && echo more >> hard.py", {"src/calc.py", "hard.py"}),
        ("rm src/calc.py && mkfifo src/calc.py", {"src/calc.py"}),  # a FIFO is no file
    ],
)
def test_the_diff_the_writes_and_the_hash_agree_on_what_changed(
    ws_env: Any, command: str, paths: set[str]
) -> None:
    from groundstate.environments.base import diff_from_initial

    initial = ws_env.state_hash()
    event = _command(ws_env, command)
    assert event.error_class is None, event.error
    assert ws_env.state_hash() != initial
    assert {write.key for write in event.writes} == paths
    diff = diff_from_initial(ws_env, ws_env.initial_snapshot()).tables["files"]
    rows = [*diff.added, *diff.removed, *(change.after for change in diff.changed)]
    assert {row["path"] for row in rows} == paths
    assert all(f"b/{path}" in ws_env.diff() or f"a/{path}" in ws_env.diff() for path in paths)
    ws_env.reset()
    assert ws_env.state_hash() == initial


# --- work left uncommitted at the end of an attempt ---------------------------------------------


def test_a_call_still_open_at_grading_is_not_graded_and_blocks_nothing(
    env: SqliteEnvironment,
) -> None:
    """A tool blocked in Python (left behind when its attempt ends) holds a write transaction
    open: the grader reads, without waiting, the committed state only; the call's writes
    were never made."""
    import threading

    initial, s0 = env.state_hash(), env.evaluator_view().snapshot()
    written, release = threading.Event(), threading.Event()

    def blocked_tool() -> None:
        with contextlib.suppress(RuntimeError), env.tool_transaction():
            env.agent_db.execute("UPDATE acc SET bal = 99 WHERE id = 'A'")
            env.agent_db.execute("INSERT INTO z VALUES (2, 1)")
            written.set()
            release.wait(10)
            raise RuntimeError("the tool gives up at last")

    thread = threading.Thread(target=blocked_tool)
    thread.start()
    try:
        assert written.wait(10)
        assert env.state_hash() == initial
        assert env.diff_from_initial().is_empty()
        assert env.evaluator_view().snapshot() == s0
        assert env.evaluator_view().query("SELECT bal FROM acc WHERE id = 'A'") == [(0.5,)]
    finally:
        release.set()
        thread.join(10)
    assert env.state_hash() == initial and env.diff_from_initial().is_empty()


# --- SQL's 'now' is the task's clock ----------------------------------------------------------


def test_sqls_now_is_the_controlled_clock_for_the_agent_and_the_graders(tmp_path: Path) -> None:
    """The date functions read the wall clock: the agent's ``datetime('now')`` wrote the day
    the batch ran and a fixture view over ``date('now')`` gave another state each day, while
    the tools' ``ctx.now()`` was the task's clock."""
    fixture = tmp_path / "clocked.sql"
    fixture.write_text(
        "CREATE TABLE due (id INTEGER PRIMARY KEY, day TEXT, stamp TEXT);"
        "INSERT INTO due VALUES (1, '2024-01-01', NULL), (2, '2024-03-01', NULL);"
        "CREATE VIEW overdue AS SELECT id FROM due WHERE day < date('now');",
        encoding="utf-8",
    )
    with SqliteEnvironment(fixture, clock=datetime(2024, 2, 1, 12, 30)) as env:
        env.reset()
        with env.tool_transaction():
            env.agent_db.execute(
                "UPDATE due SET stamp = datetime('now') || '|' || CURRENT_TIMESTAMP || '|' || "
                "date() || '|' || strftime('%Y', 'now') || '|' || date('now', '+1 day') || '|' "
                "|| unixepoch('now') WHERE id = 1"
            )
            seen = env.agent_db.execute("SELECT id FROM overdue").fetchall()
        stamp = "2024-02-01 12:30:00|2024-02-01 12:30:00|2024-02-01|2024|2024-02-02|1706790600"
        assert seen == [(1,)]
        assert env.evaluator_view().query("SELECT stamp FROM due WHERE id = 1") == [(stamp,)]
        assert env.evaluator_view().query("SELECT id FROM overdue") == [(1,)]
        env.advance_clock(40 * 86400)
        assert env.evaluator_view().query("SELECT id FROM overdue") == [(1,), (2,)]
        assert env.initial_view().query("SELECT id, date('now') FROM overdue") == [
            (1, "2024-02-01")
        ]
        # fixed values are untouched
        assert env.evaluator_view().query("SELECT date('2020-05-05', '+1 day')") == [
            ("2020-05-06",)
        ]


def test_postgres_a_call_still_open_at_grading_is_not_graded_and_blocks_nothing(
    pg_env: Any,
) -> None:
    import threading

    initial, s0 = pg_env.state_hash(), pg_env.evaluator_view().snapshot()
    written, release = threading.Event(), threading.Event()

    def blocked_tool() -> None:
        with contextlib.suppress(RuntimeError), pg_env.tool_transaction():
            pg_env.agent_db.execute("UPDATE acc SET bal = 99 WHERE id = 'A'")
            pg_env.agent_db.execute("INSERT INTO acc VALUES ('C', 1.5, 1)")
            written.set()
            release.wait(10)
            raise RuntimeError("the tool gives up at last")

    thread = threading.Thread(target=blocked_tool)
    thread.start()
    try:
        assert written.wait(10)
        assert pg_env.state_hash() == initial
        assert pg_env.evaluator_view().snapshot() == s0
        assert pg_env.evaluator_view().query("SELECT count(*) FROM acc") == [(2,)]
    finally:
        release.set()
        thread.join(10)
    assert pg_env.state_hash() == initial


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT pg_advisory_lock(1)",
        "SELECT pg_advisory_lock_shared(1, 2)",
        "SELECT pg_try_advisory_lock(1)",
        "SELECT pg_advisory_xact_lock(1)",
        "SELECT pg_try_advisory_xact_lock_shared(1)",
        "SELECT count(pg_advisory_lock(g)) FROM generate_series(1, 50) AS g",
    ],
)
def test_postgres_advisory_locks_are_refused_and_recorded(pg_env: Any, sql: str) -> None:
    """Session advisory locks outlive the call (a rollback too) and fill the server's one
    shared lock table: 200,000 of them made every other attempt's SQL fail."""
    from groundstate.errors import PermissionDenied

    with pytest.raises(PermissionDenied) as denied, pg_env.tool_transaction():
        pg_env.agent_db.execute(sql).fetchall()
    assert "advisory" in str(denied.value)


@pytest.mark.parametrize(
    "path", ["src/calc.py/x.py", "src/calc.py/deeper/x.py", "inside/calc.py/x"]
)
def test_writing_under_a_file_is_the_agents_error(ws_env: Any, path: str) -> None:
    """``write_file`` under a file crashed (``FileExistsError``): an environment failure, so an
    invalid run, that the agent could cause at will."""
    from groundstate.environments.workspace_tools import TOOLS
    from groundstate.gateway import ToolGateway

    initial, events = ws_env.state_hash(), []
    ToolGateway(TOOLS, ws_env, events.append, lambda: 0.0).call(
        1, "write_file", {"path": path, "content": "x"}
    )
    assert events[0].error_class == "tool_error" and "folder is needed" in str(events[0].error)
    assert ws_env.state_hash() == initial


@pytest.mark.parametrize("tool", ["write_file", "read_file", "list_files", "search"])
@pytest.mark.parametrize(
    "path", ["a" * 256, "src/" + "é" * 128, "/".join(["d" * 200] * 21), "a" * 256 + "/x"]
)
def test_a_name_too_long_is_the_agents_error(ws_env: Any, tool: str, path: str) -> None:
    """Every file tool crashed on ``ENAMETOOLONG``: an environment failure at the agent's will."""
    from groundstate.environments.workspace_tools import TOOLS
    from groundstate.gateway import ToolGateway

    args = {"path": path, "content": "x"} if tool == "write_file" else {"path": path}
    if tool == "search":
        args["pattern"] = "x"
    initial, events = ws_env.state_hash(), []
    ToolGateway(TOOLS, ws_env, events.append, lambda: 0.0).call(1, tool, args)
    assert events[0].error_class == "tool_error"
    assert ws_env.state_hash() == initial


def test_the_longest_name_allowed_still_works(ws_env: Any) -> None:
    from groundstate.environments.workspace_tools import TOOLS
    from groundstate.gateway import ToolGateway

    events: list[Any] = []
    gateway = ToolGateway(TOOLS, ws_env, events.append, lambda: 0.0)
    gateway.call(1, "write_file", {"path": "src/" + "n" * 255, "content": "x"})
    gateway.call(2, "read_file", {"path": "src/" + "n" * 255})
    assert [event.error_class for event in events] == [None, None]
