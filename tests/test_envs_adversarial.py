"""Adversarial agents against the environments: state a tool call could leave behind outside
the tables (session settings, role defaults, large objects, locks, cursors) must be refused or
removed by reset, and never reach the next attempt."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import suppress
from datetime import datetime
from pathlib import Path

import pytest

from groundstate.environments.base import in_tool_call
from groundstate.environments.workspace import WorkspaceEnvironment
from groundstate.errors import PermissionDenied, ToolError
from groundstate.sandbox import find_bwrap

from .conftest import EXAMPLES

FIXTURE = EXAMPLES / "retail" / "fixtures" / "retail.sql"
CLOCK = datetime(2025, 6, 16)

psycopg = pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")

from groundstate.environments.postgres import PostgresEnvironment  # noqa: E402

from .test_postgres import needs_postgres  # noqa: E402


@pytest.fixture(scope="module")
def server() -> None:
    needs_postgres()


@pytest.fixture
def env(server: None) -> Iterator[PostgresEnvironment]:
    with PostgresEnvironment(FIXTURE, clock=CLOCK) as environment:
        yield environment


def _agent(env: PostgresEnvironment, sql: str) -> list[tuple[object, ...]]:
    with env.tool_transaction():
        return env.agent_db.execute(sql).fetchall()


SIDE_DOORS = [
    # role defaults every later agent connection (other attempts) would start with
    "ALTER ROLE CURRENT_USER SET timezone = 'Asia/Tokyo'",
    "ALTER ROLE CURRENT_USER SET statement_timeout = 1",
    "alter role current_user in database postgres set search_path = public",
    # revoking its own grants (the API schema) in a database the pool hands on
    "DROP OWNED BY CURRENT_USER",
    "GRANT SELECT ON public.refunds TO PUBLIC",
    "REVOKE USAGE ON SCHEMA groundstate FROM CURRENT_USER",
    # session settings past the call: another search_path reads the server's clock
    "SELECT set_config('search_path', 'public,pg_catalog', false)",
    "SELECT pg_catalog.set_config('statement_timeout', '0', true)",
    "SELECT set_config('groundstate.lastrowid', '7', false)",
    # large objects outlive a reset and a pooled database, unseen by the state hash
    "SELECT lo_from_bytea(0, 'remember me'::bytea)",
    "SELECT lo_create(0)",
    "SELECT lo_creat(-1)",
    # a cursor that outlives the call
    "DECLARE c CURSOR WITH HOLD FOR SELECT * FROM refunds",
    # DDL the server refuses already
    "CREATE SCHEMA evil",
    "CREATE TABLE public.x (a integer)",
    "CREATE TEMP TABLE t (a integer)",
    "CREATE EXTENSION IF NOT EXISTS pgcrypto",
    "CREATE ROLE evil",
    "CREATE SEQUENCE s",
]


@pytest.mark.parametrize("sql", SIDE_DOORS)
def test_state_outside_the_tables_is_refused_and_recorded(
    env: PostgresEnvironment, sql: str
) -> None:
    initial = env.reset()
    with pytest.raises(PermissionDenied), env.tool_transaction() as effects:
        env.agent_db.execute(sql).fetchall()
    assert effects.denied, sql
    assert env.reset() == initial
    # nothing reached the session, the role or the database
    [(clock, zone, timeout, objects)] = _agent(
        env,
        "SELECT now(), current_setting('TimeZone'), current_setting('statement_timeout'),"
        " (SELECT count(*) FROM pg_largeobject_metadata)",
    )
    assert (clock, zone, timeout, objects) == ("2025-06-16T00:00:00+00:00", "Etc/UTC", "0", 0)


def test_role_defaults_cannot_reach_another_attempt(server: None) -> None:
    with PostgresEnvironment(FIXTURE, clock=CLOCK) as first:
        first.reset()
        with suppress(PermissionDenied):
            _agent(first, "ALTER ROLE CURRENT_USER SET timezone = 'Asia/Tokyo'")
        with PostgresEnvironment(FIXTURE, clock=CLOCK) as second:
            second.reset()
            assert _agent(second, "SELECT current_setting('TimeZone'), now()") == [
                ("Etc/UTC", "2025-06-16T00:00:00+00:00")
            ]


def test_lastrowid_survives_the_revoked_set_config(env: PostgresEnvironment) -> None:
    env.reset()
    with env.tool_transaction():
        cursor = env.agent_db.execute(
            "INSERT INTO refunds (order_id, item_id, amount_cents, payment_method_id,"
            " created_at) VALUES (?, ?, ?, ?, ?)",
            ("O-1001", "I-1001-2", 100, "PM-C01-VISA", "x"),
        )
        assert cursor.lastrowid == 2
        # a statement after the insert sees no stale key
        assert env.agent_db.execute("UPDATE refunds SET amount_cents = 1").lastrowid is None


def test_reset_in_place_ends_what_the_agents_session_holds(env: PostgresEnvironment) -> None:
    initial = env.reset()
    # a session lock would outlive the call: refused since the fourth audit (test_envs_round4)
    with pytest.raises(PermissionDenied):
        _agent(env, "SELECT pg_advisory_lock(42)")
    # what the session may still hold (the harness's stand-in: a session setting) is gone
    default = env._agent_raw.execute("SHOW lock_timeout").fetchall()
    env._agent_raw.execute("SET lock_timeout = 4321")
    in_tool_call(env, lambda db: db.execute("DELETE FROM refunds"))
    assert env.reset() == initial
    locks = env.harness_rows("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
    assert locks == [(0,)]
    assert env._agent_raw.execute("SHOW lock_timeout").fetchall() == default


def test_a_swallowed_error_mid_call_leaves_nothing(env: PostgresEnvironment) -> None:
    initial = env.reset()

    def write_then_fail(db: object) -> None:
        db.execute("DELETE FROM refunds")  # type: ignore[attr-defined]
        with suppress(psycopg.Error):  # the transaction is aborted, the tool carries on
            db.execute("INSERT INTO products SELECT * FROM products")  # type: ignore[attr-defined]

    with pytest.raises(psycopg.Error), env.tool_transaction():
        write_then_fail(env.agent_db)
    assert env.state_hash() == initial
    assert _agent(env, "SELECT count(*) FROM refunds") == [(1,)]  # the next call works


# --- repository workspaces -------------------------------------------------------------------

MINI = Path(__file__).parent / "suites" / "workspace_mini"


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[WorkspaceEnvironment]:
    repo = tmp_path / "suite" / "repo"
    shutil.copytree(MINI / "repo", repo)
    (repo / ".gitignore").write_text("build/\n*.log\n")  # the fixture's own rules still hold
    sandbox = "bwrap" if find_bwrap() is not None else "none"
    with WorkspaceEnvironment(repo, clock=CLOCK, options={"sandbox": sandbox}) as env:
        env.reset()
        yield env


@pytest.mark.parametrize(
    "rules", [".gitignore", "src/.gitignore", "new/.gitignore"], ids=["root", "sub", "new-dir"]
)
def test_an_agents_ignore_rules_hide_nothing(workspace: WorkspaceEnvironment, rules: str) -> None:
    initial = workspace.state_hash()
    folder = rules.rpartition("/")[0]
    planted = f"{folder}/planted.py" if folder else "planted.py"
    with workspace.tool_transaction() as effects:
        workspace.handle.write(rules, "*\n")  # ignores everything, itself included
        workspace.handle.write(planted, "x = 1\n")
    written = {write.key for write in effects.writes}
    assert {rules, planted} <= written
    assert workspace.state_hash() != initial
    diff = workspace.diff()
    assert f"b/{planted}" in diff and f"b/{rules}" in diff
    assert workspace.reset() == initial


def test_the_fixtures_own_ignore_rules_still_hold(workspace: WorkspaceEnvironment) -> None:
    initial = workspace.state_hash()
    with workspace.tool_transaction() as effects:
        workspace.handle.write("build/out.txt", "artefact")
        workspace.handle.write("run.log", "noise")
    assert effects.writes == [] and workspace.state_hash() == initial
    assert workspace.diff() == ""


def _run(env: WorkspaceEnvironment, command: str) -> dict[str, object]:
    with env.tool_transaction():
        return env.handle.run(command, 20)


def test_a_huge_file_is_stopped_by_the_file_size_limit(tmp_path: Path) -> None:
    repo = tmp_path / "suite" / "repo"
    shutil.copytree(MINI / "repo", repo)
    sandbox = "bwrap" if find_bwrap() is not None else "none"
    options = {"sandbox": sandbox, "file_size_mb": 1}
    with WorkspaceEnvironment(repo, clock=CLOCK, options=options) as env:
        initial = env.reset()
        result = _run(env, "head -c 3000000 /dev/zero > big.bin")
        assert result["exit_code"] != 0
        assert (env.root / "big.bin").stat().st_size <= 1024 * 1024
        assert env.reset() == initial


def test_a_fifo_or_a_left_running_process_cannot_hang_or_outlive_a_call(
    workspace: WorkspaceEnvironment,
) -> None:
    initial = workspace.state_hash()
    _run(workspace, "mkfifo pipe; (sleep 0.3; echo late > late.txt) &")
    with pytest.raises(ToolError, match="not a regular file"):
        workspace.handle.read("pipe")
    assert workspace.handle.search("late")[0] == []  # the FIFO is skipped, not read
    time.sleep(0.6)
    assert not (workspace.root / "late.txt").exists()  # the sandbox ended with the command
    assert workspace.reset() == initial


def test_writes_outside_the_work_tree_go_nowhere(workspace: WorkspaceEnvironment) -> None:
    if find_bwrap() is None:
        pytest.skip("bubblewrap is not installed: commands are not confined")
    outside = workspace.root.parent
    before = sorted(p.name for p in outside.iterdir())
    _run(workspace, "echo x > ../outside.txt; echo y > /tmp/t.txt; mkdir -p ../git/hooks")
    assert sorted(p.name for p in outside.iterdir()) == before
    assert not (outside / "git" / "hooks" / "pre-commit").exists()


@pytest.mark.parametrize("path", [".git/config", "src/.GIT/hooks/pre-commit", "src/.git", ".Git. "])
def test_the_tools_refuse_paths_git_cannot_hold(workspace: WorkspaceEnvironment, path: str) -> None:
    with pytest.raises(ToolError, match="'\\.git' path"), workspace.tool_transaction():
        workspace.handle.write(path, "[core]\n\thooksPath = /tmp\n")


def test_git_state_made_by_a_command_neither_counts_nor_breaks_the_diff(
    workspace: WorkspaceEnvironment,
) -> None:
    initial = workspace.state_hash()
    _run(
        workspace,
        "git init -q . ; git config core.hooksPath /tmp; mkdir -p src/.GIT;"
        " echo x > src/.GIT/config; echo 'gitdir: /tmp' > tests/.git",
    )
    assert workspace.state_hash() == initial
    assert workspace.diff() == ""  # git could not carry these paths to the grader's checkout
    assert workspace.reset() == initial


def test_names_that_look_like_pathspecs_are_taken_literally(
    workspace: WorkspaceEnvironment,
) -> None:
    with workspace.tool_transaction():
        workspace.handle.write("*", "star\n")
        workspace.handle.write(":(glob)x", "magic\n")
        workspace.handle.remove("src/calc.py")
    diff = workspace.diff()
    assert "b/*" in diff and "b/:(glob)x" in diff and "deleted file" in diff
    assert "tests/check_calc.py" not in diff  # a glob would have added unchanged files


@pytest.mark.parametrize(
    "command",
    [
        "touch \"$(printf 'bad\\377name')\"",
        "mkdir \"$(printf 'd\\376')\" && touch \"$(printf 'd\\376/x')\"",
    ],
    ids=["file", "folder"],
)
def test_a_name_that_is_not_utf8_fails_the_call_and_leaves_nothing(
    workspace: WorkspaceEnvironment, command: str
) -> None:
    initial = workspace.state_hash()
    with pytest.raises(ToolError, match="UTF-8"), workspace.tool_transaction():
        workspace.handle.run(command + " && echo kept > src/also.py", 10)
    assert workspace.state_hash() == initial  # the whole call was undone
    assert workspace.diff() == ""
    # a later call with a plain name goes through
    with workspace.tool_transaction() as effects:
        workspace.handle.run("touch 'caf\u00e9 \n.txt'", 10)
    assert [write.key for write in effects.writes] == ["caf\u00e9 \n.txt"]
    assert workspace.reset() == initial


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid()",
        "SELECT query FROM pg_stat_activity",
        "SELECT pg_cancel_backend(pg_backend_pid() + 1)",
        "SELECT pg_terminate_backend(pg_backend_pid() + 1, 0)",
        "SELECT pg_stat_get_backend_activity(s) FROM pg_stat_get_backend_idset() s",
        "SELECT * FROM pg_stat_get_activity(NULL)",
    ],
)
def test_one_attempt_cannot_reach_another_on_the_server(server: None, sql: str) -> None:
    with (
        PostgresEnvironment(FIXTURE, clock=CLOCK) as mine,
        PostgresEnvironment(FIXTURE, clock=CLOCK) as theirs,
    ):
        mine.reset(), theirs.reset()
        with pytest.raises(PermissionDenied), mine.tool_transaction() as effects:
            mine.agent_db.execute(sql).fetchall()
        assert effects.denied
        assert _agent(theirs, "SELECT count(*) FROM refunds") == [(1,)]  # still connected


def test_sql_outside_a_tool_call_is_refused(env: PostgresEnvironment) -> None:
    initial = env.reset()
    kept = env.agent_db  # a tool keeps the handle, or leaves a thread writing after it returns
    for sql in ["DELETE FROM refunds", "SELECT count(*) FROM refunds"]:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="outside a tool call"):
            kept.execute(sql)
    assert env.state_hash() == initial
    with env.tool_transaction() as effects:
        env.agent_db.execute("SELECT 1").fetchall()
    assert effects.writes == [] and effects.changed_tables == []  # nothing carried into it


def test_permissions_a_command_took_away_are_given_back(workspace: WorkspaceEnvironment) -> None:
    initial = workspace.state_hash()
    _run(workspace, "chmod 000 src/calc.py; chmod 000 tests; chmod 100 src")
    for path in ["src", "tests", "src/calc.py", "tests/check_calc.py"]:
        mode = (workspace.root / path).stat().st_mode
        wanted = 0o700 if (workspace.root / path).is_dir() else 0o600
        assert mode & wanted == wanted, path
    assert workspace.state_hash() == initial  # the state keeps the executable bit only
    _run(workspace, "chmod +x src/calc.py")
    assert workspace.state_hash() != initial
    assert workspace.reset() == initial


def test_statements_prepared_before_a_reset_still_run_after_it(env: PostgresEnvironment) -> None:
    initial = env.reset()
    for _ in range(8):  # psycopg prepares a statement on the server after a few runs
        _agent(env, "SELECT count(*) FROM refunds")
    in_tool_call(env, lambda db: db.execute("DELETE FROM refunds"))
    assert env.reset() == initial  # in place: DISCARD ALL drops the server's prepared plans
    for _ in range(3):
        assert _agent(env, "SELECT count(*) FROM refunds") == [(1,)]
