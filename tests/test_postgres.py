"""The postgres kind: a private server, per-attempt databases, server-enforced permissions,
and the retail suite giving every solution the same verdict as on SQLite."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from datetime import datetime
from pathlib import Path

import pytest

from groundstate.agents.base import Session
from groundstate.environments.base import in_tool_call
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import EnvironmentFailure, PermissionDenied
from groundstate.spec.suite import Suite, load_suite, with_environment
from groundstate.spec.task import Permissions
from groundstate.testing import FunctionAgent, attempt, run_solution
from groundstate.trace import ToolCallEvent
from groundstate.validation import check_environment

from .conftest import BANK, EXAMPLES

RETAIL = EXAMPLES / "retail"
CLOCK = datetime(2025, 6, 16)

psycopg = pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")

from groundstate.environments.postgres import PostgresEnvironment  # noqa: E402
from groundstate.environments.postgres_server import shared_server  # noqa: E402


def needs_postgres() -> None:
    """Start the shared server, or skip saying why (the project's script installs it)."""
    if os.environ.get("GROUNDSTATE_SKIP_POSTGRES") == "1":
        pytest.skip("GROUNDSTATE_SKIP_POSTGRES=1: PostgreSQL could not be installed here")
    try:
        shared_server()
    except EnvironmentFailure as exc:
        pytest.skip(f"PostgreSQL is unavailable (scripts/ensure-postgres.sh installs it): {exc}")


@pytest.fixture(scope="module", autouse=True)
def server() -> None:
    needs_postgres()


@pytest.fixture
def retail_env() -> Iterator[PostgresEnvironment]:
    with PostgresEnvironment(
        RETAIL / "fixtures" / "retail.sql",
        clock=CLOCK,
        permissions=Permissions(tables={"payment_cards": "none", "products": "read"}),
    ) as env:
        yield env


def test_the_same_fixture_hashes_alike_on_both_kinds(retail_env: PostgresEnvironment) -> None:
    with SqliteEnvironment(RETAIL / "fixtures" / "retail.sql", clock=CLOCK) as sqlite:
        assert retail_env.reset() == sqlite.reset()
        assert retail_env.snapshot() == sqlite.snapshot()


def test_tools_speak_sqlite_sql(retail_env: PostgresEnvironment) -> None:
    insert = (
        "INSERT INTO refunds (order_id, item_id, amount_cents, payment_method_id, created_at)"
        " VALUES (?, ?, ?, ?, ?)"
    )
    with retail_env.tool_transaction() as effects:
        db = retail_env.agent_db
        cursor = db.execute(insert, ("O-1001", "I-1001-2", 2200, "PM-C01-VISA", "x"))
        assert cursor.lastrowid == 2  # max + 1, as SQLite's AUTOINCREMENT gives
        rows = db.execute(
            "SELECT count(*), sum(amount_cents), now(), 1 = 1 FROM refunds WHERE item_id LIKE '%-2'"
        ).fetchall()
    assert rows == [(1, 2200, "2025-06-16T00:00:00+00:00", 1)]  # ints, ISO text, 0/1
    assert effects.changed_tables == ["refunds"]
    [write] = effects.writes
    assert write.table == "refunds" and write.key == 2 and write.before is None
    assert write.after is not None and write.after["amount_cents"] == 2200


def test_the_server_denies_and_the_denial_is_recorded(retail_env: PostgresEnvironment) -> None:
    initial = retail_env.reset()
    for sql, denied in [
        ("SELECT * FROM payment_cards", "read payment_cards"),
        ("UPDATE products SET price_cents = 1", "write products"),
        ("COMMIT", "transaction commit"),
        ("SET statement_timeout = 0", "setting set"),
        ("SELECT * FROM _gs.meta", "permission denied for schema _gs"),
        ("SELECT * FROM groundstate.take_writes('guess')", "permission denied for write log"),
        ("CREATE TEMP TABLE t (x integer)", "temporary tables"),
    ]:
        with pytest.raises(PermissionDenied), retail_env.tool_transaction() as effects:
            retail_env.agent_db.execute(sql).fetchall()
        assert effects is not None and any(denied in d for d in effects.denied), (sql, effects)
    assert retail_env.state_hash() == initial


def test_a_swallowed_denial_still_rolls_the_call_back(retail_env: PostgresEnvironment) -> None:
    initial = retail_env.reset()

    def write_then_peek(db: object) -> None:
        db.execute("DELETE FROM refunds")  # type: ignore[attr-defined]
        with suppress(psycopg.Error):
            db.execute("SELECT * FROM payment_cards")  # type: ignore[attr-defined]

    assert in_tool_call(retail_env, write_then_peek) == []
    assert retail_env.state_hash() == initial


def test_reset_restores_rows_counters_and_clock(retail_env: PostgresEnvironment) -> None:
    initial = retail_env.reset()
    retail_env.advance_clock(3600)
    retail_env.probes.mutate(retail_env)
    assert retail_env.state_hash() != initial
    assert retail_env.probes.counters(retail_env) != {"AUTOINCREMENT counter of refunds": 1}
    assert retail_env.reset() == initial
    assert retail_env.now() == CLOCK


def test_concurrent_attempts_are_isolated() -> None:
    fixture = RETAIL / "fixtures" / "retail.sql"
    envs = [PostgresEnvironment(fixture, clock=CLOCK) for _ in range(3)]
    try:
        initial = envs[0].reset()

        def wipe(env: PostgresEnvironment) -> None:
            in_tool_call(env, lambda db: db.execute("DELETE FROM refunds"))

        threads = [threading.Thread(target=wipe, args=(env,)) for env in envs[:2]]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert envs[2].state_hash() == initial
        assert all(env.state_hash() != initial for env in envs[:2])
    finally:
        for env in envs:
            env.close()


@pytest.mark.parametrize(
    "fixture", [None, BANK / "fixtures" / "bank.sql"], ids=["built-in", "bank"]
)
def test_postgres_conforms(fixture: Path | None) -> None:
    assert check_environment("postgres", fixture=fixture) == []


@pytest.fixture(scope="module")
def retail() -> tuple[Suite, Suite]:
    suite = load_suite(RETAIL)
    return suite, with_environment(suite, "postgres")


@pytest.mark.parametrize("task_id", sorted(load_suite(RETAIL).tasks))
def test_every_retail_solution_gets_the_same_verdict(
    retail: tuple[Suite, Suite], task_id: str
) -> None:
    sqlite, postgres = retail
    names = sorted(sqlite.solutions[task_id])
    # Attempts side by side, as a batch with concurrency runs them (each its own database).
    with ThreadPoolExecutor(max_workers=4) as pool:
        others = list(pool.map(lambda name: run_solution(postgres, task_id, name), names))
    for name, other in zip(names, others, strict=True):
        one = run_solution(sqlite, task_id, name)
        assert other.infrastructure_status["environment"] == "postgres"
        assert (other.terminal_reason, other.success) == (one.terminal_reason, one.success), name
        assert other.final_state_hash == one.final_state_hash, name
        for mine, theirs in zip(
            one.outcome_assertion_results + one.constraint_results,
            other.outcome_assertion_results + other.constraint_results,
            strict=True,
        ):
            assert (mine.id, mine.passed, mine.error) == (theirs.id, theirs.passed, theirs.error)


def test_check_env_runs_every_kind() -> None:
    from click.testing import CliRunner

    from groundstate.cli import main

    result = CliRunner().invoke(main, ["check-env", "--json"])  # every registered kind
    assert result.exit_code == 0, result.output
    reports = {report["kind"]: report for report in json.loads(result.stdout)}
    assert {"sqlite", "postgres"} <= set(reports)
    assert all(report["conforms"] and all(report["checks"].values()) for report in reports.values())


def test_reset_repairs_a_write_the_log_did_not_see(retail_env: PostgresEnvironment) -> None:
    initial = retail_env.reset()
    # The harness's own connection writes past the agent's write log: a reset that reloaded
    # only the logged tables would miss it; the hash check catches it and reloads everything.
    retail_env._db.execute("UPDATE public.products SET price_cents = 1")
    retail_env._state = None
    assert retail_env.state_hash() != initial
    assert retail_env.reset() == initial
    assert retail_env.snapshot().tables["products"].rows['"P-SOCKS"']["price_cents"] == 2200


def test_a_pooled_database_comes_back_clean_with_new_permissions() -> None:
    fixture = RETAIL / "fixtures" / "retail.sql"
    with PostgresEnvironment(fixture, clock=CLOCK) as first:
        initial = first.reset()
        in_tool_call(first, lambda db: db.execute("DELETE FROM refunds"))
        used = first._live
    hidden = Permissions(tables={"refunds": "none"})
    with PostgresEnvironment(fixture, clock=CLOCK, permissions=hidden) as second:
        assert second._live == used  # the pool gave the same database back
        assert second.reset() == initial
        with pytest.raises(PermissionDenied), second.tool_transaction():
            second.agent_db.execute("SELECT * FROM refunds")


def test_text_postgres_cannot_store_is_refused_not_crashed() -> None:
    async def nul_email(session: Session) -> str:
        result = await session.call("find_customer_by_email", {"email": "maya\x00@example.com"})
        return str(result.error_class)

    postgres = with_environment(load_suite(RETAIL), "postgres")
    run = attempt(postgres, "refund-socks", FunctionAgent(nul_email)).run
    assert run.terminal_reason.startswith("agent_failure")  # not an environment failure
    assert run.final_message == "invalid_arguments"
    [call] = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert call.error is not None and "NUL character" in call.error


@pytest.mark.parametrize(
    ("sqlite", "postgres"),
    [
        ("SELECT * FROM t WHERE a = ? AND b = ?",
         "SELECT * FROM t WHERE groundstate.left_eq(a, %s) AND groundstate.left_eq(b, %s)"),
        ("SELECT '?', a FROM t WHERE b LIKE 'x%' AND c = ?",
         "SELECT '?', a FROM t WHERE b ILIKE 'x%%' ESCAPE '' AND groundstate.left_eq(c, %s)"),
        ("SELECT 'it''s ?', \"odd?name\" FROM t WHERE d = ?",
         "SELECT 'it''s ?', \"odd?name\" FROM t WHERE groundstate.left_eq(d, %s)"),
        ("SELECT 100 % 7", "SELECT 100 %% 7"),
    ],
)  # fmt: skip
def test_placeholders_translate_outside_literals_only(sqlite: str, postgres: str) -> None:
    from groundstate.environments.postgres_dialect import translate

    assert translate(sqlite) == postgres


@pytest.mark.parametrize(
    ("sql", "verb"),
    [
        ("  -- a comment\n  COMMIT", "commit"),
        ("/* x */ (SELECT 1)", "select"),
        ("with x as (select 1) select * from x", "with"),
        ("\tSeT statement_timeout = 0", "set"),
        ("/* a */ /* b */\n-- c\n COMMIT", "commit"),
        ("--only a comment", ""),
    ],
)
def test_the_first_keyword_is_found_past_comments(sql: str, verb: str) -> None:
    from groundstate.environments.postgres_dialect import keyword

    assert keyword(sql) == verb
