"""Adversarial agents against the environments: state a tool call could leave behind outside
the tables (session settings, role defaults, large objects, locks, cursors) must be refused or
removed by reset, and never reach the next attempt."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import suppress
from datetime import datetime
from pathlib import Path

import pytest

from groundstate.environments.base import in_tool_call
from groundstate.environments.workspace import WorkspaceEnvironment
from groundstate.errors import EnvironmentFailure, PermissionDenied
from groundstate.sandbox import find_bwrap

from .conftest import EXAMPLES

FIXTURE = EXAMPLES / "retail" / "fixtures" / "retail.sql"
CLOCK = datetime(2025, 6, 16)

psycopg = pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")

from groundstate.environments.postgres import PostgresEnvironment  # noqa: E402
from groundstate.environments.postgres_server import shared_server  # noqa: E402


@pytest.fixture(scope="module")
def server() -> None:
    if os.environ.get("GROUNDSTATE_SKIP_POSTGRES") == "1":
        pytest.skip("GROUNDSTATE_SKIP_POSTGRES=1: PostgreSQL could not be installed here")
    try:
        shared_server()
    except EnvironmentFailure as exc:
        pytest.skip(f"PostgreSQL is unavailable (scripts/ensure-postgres.sh installs it): {exc}")


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
    _agent(env, "SELECT pg_advisory_lock(42)")  # a session lock outlives the call
    in_tool_call(env, lambda db: db.execute("DELETE FROM refunds"))
    assert env.reset() == initial
    locks = env.harness_rows("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
    assert locks == [(0,)]


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
