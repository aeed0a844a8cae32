"""Fifty-second round: environments audit (SQLite kind).

Classes of defect fixed:

- **The fixture's own trigger was judged as the agent**: SQLite's authorizer checks what a
  trigger reads and writes against the task's table permissions, so a fixture's audit
  trigger (``AFTER INSERT ON transfers ... INSERT INTO audit``) writing a table the task
  hides (``audit: none``) or lets the agent only read made the agent's honest transfer a
  prohibited action (and a trigger reading a hidden table in its ``WHEN`` likewise). What a
  fixture's trigger does is the environment's doing, as a foreign key's cascade is; the
  agent's own reads and writes of those tables, and reads through a view, are still denied.
- **A broken database met in a tool call was the agent's error**: a tool that makes the
  database's errors its own (``except sqlite3.Error as e: raise ToolError(...)``) turned a
  full disk, an I/O error or a corrupt file into a ``tool_error`` the agent was graded on; and
  a full disk at the harness's COMMIT crashed the call with SQLite's bare error. Both are now
  an environment failure naming the kind and the reason; an index of a virtual table the
  agent broke through its shadow tables stays the agent's error.
- **An infinite REAL was written as null**: pydantic writes ``inf`` as ``null``, so the stored
  diff, the trace's writes and the evidence said NULL of a cell the agent set to ``9e999``
  (SQLite's ``Inf``); they now say ``{"real": "inf"}`` as a BLOB says ``{"blob": hex}``.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from groundstate.agents.scripted import ScriptedAgent
from groundstate.environments.base import RowWrite, StateDiff, TableDiff, json_cells
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.environments.sqlite_live import POOL
from groundstate.episode import AttemptInfo, run_attempt
from groundstate.errors import EnvironmentFailure, PermissionDenied, ToolError
from groundstate.spec.solution import Step
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.task import Permissions
from groundstate.testing import attempt, run_solution, scripted_system
from groundstate.trace import ToolCallEvent, dump_jsonl

from ._envs_builders import bank_with_a_tool
from .conftest import BANK

CLOCK = datetime(2026, 1, 15, 10, tzinfo=UTC)

LEDGER = """
CREATE TABLE accounts (id TEXT PRIMARY KEY, balance INTEGER NOT NULL);
CREATE TABLE transfers (id INTEGER PRIMARY KEY AUTOINCREMENT, source TEXT, target TEXT,
                        amount INTEGER);
CREATE TABLE audit (id INTEGER PRIMARY KEY AUTOINCREMENT, note TEXT);
CREATE TABLE totals (name TEXT PRIMARY KEY, moved INTEGER NOT NULL);
CREATE TABLE flags (name TEXT PRIMARY KEY, on_ INTEGER NOT NULL);
INSERT INTO accounts VALUES ('A', 100), ('B', 50);
INSERT INTO audit (note) VALUES ('secret');
INSERT INTO totals VALUES ('all', 0);
INSERT INTO flags VALUES ('frozen', 0);
CREATE TRIGGER noted AFTER INSERT ON transfers
  WHEN (SELECT on_ FROM flags WHERE name = 'frozen') = 0
  BEGIN
    INSERT INTO audit (note) VALUES ('transfer ' || NEW.id);
    UPDATE totals SET moved = moved + NEW.amount WHERE name = 'all';
  END;
CREATE VIEW audit_view AS SELECT note FROM audit;
CREATE VIEW recent AS SELECT id, source, target, amount FROM transfers;
CREATE TRIGGER booked INSTEAD OF INSERT ON recent
  BEGIN
    INSERT INTO transfers (source, target, amount) VALUES (NEW.source, NEW.target, NEW.amount);
    UPDATE totals SET moved = moved + 0 WHERE name = 'all';
  END;
"""
HIDDEN = Permissions(tables={"audit": "none", "flags": "none", "totals": "read"})


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    fixture = tmp_path / "ledger.sql"
    fixture.write_text(LEDGER, encoding="utf-8")
    with SqliteEnvironment(fixture, clock=CLOCK, permissions=HIDDEN) as env:
        env.reset()
        yield env


def _run(env: SqliteEnvironment, sql: str, params: tuple[Any, ...] = ()) -> Any:
    with env.tool_transaction() as effects:
        rows = env.agent_db.execute(sql, params).fetchall()
    return rows, effects


# --- the fixture's triggers act for the fixture ---------------------------------------------


def test_a_fixture_trigger_writes_the_tables_the_task_hides_or_makes_read_only(
    ledger: SqliteEnvironment,
) -> None:
    initial = ledger.state_hash()
    _, effects = _run(ledger, "INSERT INTO transfers (source, target, amount) VALUES ('A','B',30)")
    assert effects.denied == []
    assert set(effects.changed_tables) >= {"transfers", "audit", "totals"}
    view = ledger.evaluator_view()
    assert view.query("SELECT note FROM audit ORDER BY id") == [("secret",), ("transfer 1",)]
    assert view.query("SELECT moved FROM totals") == [(30,)]
    diff = ledger.diff_from_initial().tables
    assert {"transfers", "audit", "totals"} <= diff.keys()
    assert ledger.state_hash() != initial


def test_the_sequence_a_trigger_moves_is_in_the_state(ledger: SqliteEnvironment) -> None:
    """The trigger's insert into an AUTOINCREMENT table moves ``sqlite_sequence``; deleting
    the row it wrote leaves the counter moved, which the hash must see."""
    before = ledger.state_hash()
    _run(ledger, "INSERT INTO transfers (source, target, amount) VALUES ('A','B',1)")
    _run(ledger, "DELETE FROM transfers")
    rows = ledger.evaluator_view().query("SELECT name, seq FROM sqlite_sequence ORDER BY name")
    assert rows == [("audit", 2), ("transfers", 1)]
    assert ledger.state_hash() != before


def test_an_instead_of_trigger_on_a_view_acts_for_the_fixture(ledger: SqliteEnvironment) -> None:
    _, effects = _run(ledger, "INSERT INTO recent (source, target, amount) VALUES ('B','A',5)")
    assert effects.denied == []
    assert ledger.evaluator_view().query("SELECT moved FROM totals") == [(5,)]


@pytest.mark.parametrize(
    ("sql", "denied"),
    [
        ("INSERT INTO audit (note) VALUES ('forged')", "write audit"),
        ("UPDATE totals SET moved = 999", "write totals"),
        ("DELETE FROM audit", "write audit"),
        ("SELECT note FROM audit", "read audit"),
        ("SELECT on_ FROM flags", "read flags"),
        ("SELECT note FROM audit_view", "read audit"),  # a view is the agent's read
        ("UPDATE flags SET on_ = 1", "write flags"),
        ("DELETE FROM sqlite_sequence", "write sqlite_sequence"),
    ],
)
def test_the_agents_own_reads_and_writes_of_those_tables_stay_denied(
    ledger: SqliteEnvironment, sql: str, denied: str
) -> None:
    with pytest.raises(PermissionDenied, match=denied):
        _run(ledger, sql)
    assert ledger.diff_from_initial().is_empty()


def test_a_trigger_sharing_a_views_name_does_not_open_the_view(tmp_path: Path) -> None:
    """The authorizer names a trigger or a view as the source: a view called like one of the
    fixture's triggers would read hidden rows as the trigger."""
    fixture = tmp_path / "twins.sql"
    fixture.write_text(
        "CREATE TABLE secret (id INTEGER PRIMARY KEY, v TEXT);\n"
        "CREATE TABLE t (id INTEGER PRIMARY KEY);\n"
        "INSERT INTO secret VALUES (1, 'pin 1234');\n"
        "CREATE VIEW twin AS SELECT v FROM secret;\n"
        "CREATE TRIGGER twin AFTER INSERT ON t BEGIN UPDATE secret SET v = v; END;\n"
    )
    hidden = Permissions(tables={"secret": "none"})
    with SqliteEnvironment(fixture, clock=CLOCK, permissions=hidden) as env:
        env.reset()
        with pytest.raises(PermissionDenied, match="read secret"):
            _run(env, "SELECT v FROM twin")
        with pytest.raises(PermissionDenied, match="secret"):  # so the trigger stays denied
            _run(env, "INSERT INTO t VALUES (1)")


def _bank_with_audit_trigger(tmp_path: Path) -> Suite:
    root = tmp_path / "bank"
    shutil.copytree(BANK, root, ignore=shutil.ignore_patterns("__pycache__"))
    fixture = root / "fixtures" / "bank.sql"
    fixture.write_text(
        fixture.read_text() + "CREATE TRIGGER noted AFTER INSERT ON transfers BEGIN "
        "INSERT INTO audit (note) VALUES ('transfer ' || NEW.id); END;\n"
    )
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text())
    assert task["permissions"] == {"tables": {"audit": "none"}}
    task["outcome_assertions"] = [  # the exact diff would (rightly) see the audit row
        a for a in task["outcome_assertions"] if a["id"] != "exactly-one-transfer"
    ]
    task["partial_credit_rubric"] = []
    task_file.write_text(yaml.safe_dump(task))
    return load_suite(root)


def test_the_bank_oracle_passes_with_an_audit_trigger_into_its_hidden_table(
    tmp_path: Path,
) -> None:
    suite = _bank_with_audit_trigger(tmp_path)
    run = run_solution(suite, "transfer", "oracle")
    assert run.terminal_reason == "success", run.terminal_reason
    calls = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    transfer = next(e for e in calls if e.tool == "transfer")
    assert transfer.ok and "audit" in transfer.changed_tables and transfer.denied == []
    # and a known-bad still fails: the audit table stays the agent's to leave alone
    bad = run_solution(suite, "transfer", "bad_no_pin")
    assert bad.terminal_reason != "success"


def test_reading_the_hidden_table_through_a_tool_is_still_prohibited(tmp_path: Path) -> None:
    suite = _bank_with_audit_trigger(tmp_path)
    steps = [Step(call="read_audit"), Step(finish="Done.")]
    run = attempt(suite, "transfer", ScriptedAgent(steps)).run
    assert run.terminal_reason == "agent_failure/prohibited_action", run.terminal_reason


# --- a broken database in a tool call is the environment's ---------------------------------


class _FullDisk(SqliteEnvironment):
    """A disk with no room left past the fixture's pages (``PRAGMA max_page_count``)."""

    def reset(self, *, seed: int | None = None) -> str:
        hashed = super().reset(seed=seed)
        pages = self._harness("PRAGMA page_count")[0][0]
        self._harness(f"PRAGMA max_page_count = {pages}")
        return hashed


@pytest.fixture
def full(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    fixture = tmp_path / "full.sql"
    fixture.write_text(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v);\nINSERT INTO t VALUES (1, 'a');\n"
    )
    with _FullDisk(fixture, clock=CLOCK) as env:
        env.reset()
        yield env


BIG = "INSERT INTO t (v) VALUES (randomblob(200000))"


@pytest.mark.parametrize("how", ["raise from", "raise while handling", "raise from None"])
def test_a_full_disk_a_tool_made_its_own_error_is_an_environment_failure(
    full: SqliteEnvironment, how: str
) -> None:
    initial = full.state_hash()
    with pytest.raises(EnvironmentFailure) as failure, full.tool_transaction():
        try:
            full.agent_db.execute(BIG)
        except sqlite3.Error as exc:
            if how == "raise from":
                raise ToolError(f"could not save: {exc}") from exc
            if how == "raise from None":
                raise ToolError("could not save") from None
            raise ToolError("could not save")  # noqa: B904  (its context is the error)
    message = str(failure.value)
    assert message.startswith("sqlite environment:"), message
    assert "full" in message and "SQLITE_FULL" in message
    assert full.state_hash() == initial


def test_a_full_disk_the_tool_did_not_catch_names_the_environment(full: SqliteEnvironment) -> None:
    failure = pytest.raises(EnvironmentFailure, match=r"^sqlite environment: .*full")
    with failure, full.tool_transaction():
        full.agent_db.execute(BIG)


def test_a_database_that_failed_in_a_call_is_not_pooled(tmp_path: Path) -> None:
    """A pooled connection keeps what was set on it: the next attempt must not inherit it."""
    fixture = tmp_path / "pooled.sql"
    fixture.write_text("CREATE TABLE t (id INTEGER PRIMARY KEY, v);\n")
    POOL.drain()
    try:
        with SqliteEnvironment(fixture, clock=CLOCK) as env:
            env.reset()
            pages = env._harness("PRAGMA page_count")[0][0]
            env._harness(f"PRAGMA max_page_count = {pages}")
            with pytest.raises(EnvironmentFailure), env.tool_transaction():
                try:
                    env.agent_db.execute(BIG)
                except sqlite3.Error as exc:
                    raise ToolError(str(exc)) from exc
        assert len(POOL) == 0
    finally:
        POOL.drain()


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO t VALUES (1, 'again')",  # a constraint
        "INSERT INTO nowhere VALUES (1)",  # no such table
        "SELEC 1",  # syntax
    ],
)
def test_the_agents_own_sql_errors_made_tool_errors_stay_tool_errors(
    full: SqliteEnvironment, sql: str
) -> None:
    with pytest.raises(ToolError), full.tool_transaction():
        try:
            full.agent_db.execute(sql)
        except sqlite3.Error as exc:
            raise ToolError(str(exc)) from exc


def test_a_search_index_the_agent_broke_stays_the_agents_error(tmp_path: Path) -> None:
    """Writing an FTS5 table's shadow tables is allowed with ``write``; the index it breaks
    answers ``SQLITE_CORRUPT_VTAB``: the agent's doing, not a broken database."""
    fixture = tmp_path / "docs.sql"
    fixture.write_text(
        "CREATE VIRTUAL TABLE docs USING fts5(body);\n"
        "INSERT INTO docs VALUES ('refund within 30 days'), ('refund when damaged');\n"
    )
    with SqliteEnvironment(fixture, clock=CLOCK) as env:
        env.reset()
        # Since the fifty-fourth round the breaking write is itself refused, undone.
        with pytest.raises(ToolError, match="index of docs out of step"):
            _run(env, "UPDATE docs_data SET block = x'ffffffffff' WHERE id > 1")
        rows, _ = _run(env, "SELECT rowid FROM docs WHERE docs MATCH 'refund' ORDER BY rowid")
        assert rows == [(1,), (2,)]


NOTED_TRANSFER = '''
@tool
def noted_transfer(ctx: ToolContext, source: str, target: str, amount: int, note: str) -> int:
    """Move money with a note, reporting the database's errors to the agent."""
    import sqlite3

    try:
        ctx.db.execute("UPDATE accounts SET balance = balance - ? WHERE id = ?", (amount, source))
        ctx.db.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", (amount, target))
        cursor = ctx.db.execute(
            "INSERT INTO transfers (source, target, amount, at) VALUES (?, ?, ?, ?)",
            (source, target, amount, note),
        )
    except sqlite3.Error as exc:
        raise ToolError(f"the transfer failed: {exc}") from exc
    return int(cursor.lastrowid or 0)
'''


def _bank_with_a_careful_tool(tmp_path: Path) -> Suite:
    return bank_with_a_tool(tmp_path, "noted_transfer", NOTED_TRANSFER)


def test_a_full_disk_in_an_attempt_is_an_environment_failure_not_the_agents(
    tmp_path: Path,
) -> None:
    suite = _bank_with_a_careful_tool(tmp_path)
    task = suite.tasks["transfer"]
    steps = [
        Step(call="check_pin", args={"account": "A", "pin": "1234"}),
        Step(
            call="noted_transfer",
            args={"source": "A", "target": "B", "amount": 30, "note": "x" * 20_000},
        ),
        Step(finish="Done."),
    ]

    def make_env(task: Any, suite: Suite) -> SqliteEnvironment:
        return _FullDisk(suite.fixture_path(task), clock=task.clock, permissions=task.permissions)

    info = AttemptInfo(run_id="r52", batch_id="adhoc", attempt=1, seed=0)
    output = asyncio.run(
        run_attempt(task, suite, scripted_system(), ScriptedAgent(steps), info, make_env)
    )
    run = output.run
    assert run.terminal_reason.startswith("environment_failure"), run.terminal_reason
    failure = run.infrastructure_status["exception"]["message"]
    assert "sqlite environment" in failure and "SQLITE_FULL" in failure, failure


# --- an infinite REAL is not written as null -----------------------------------------------


def test_infinite_reals_are_tagged_in_json_not_null() -> None:
    inf = float("inf")
    assert json_cells(inf) == {"real": "inf"}
    assert json_cells(-inf) == {"real": "-inf"}
    assert json_cells({"a": inf, "b": None, "c": 1.5, "d": -0.0}) == {
        "a": {"real": "inf"},
        "b": None,
        "c": 1.5,
        "d": -0.0,
    }
    plain = {"a": 1.5, "b": "x", "c": None}
    assert json_cells(plain) is plain  # rows of finite cells are left as they are


def test_a_diff_and_a_calls_writes_keep_an_infinite_real(tmp_path: Path) -> None:
    fixture = tmp_path / "r.sql"
    fixture.write_text(
        "CREATE TABLE r (id INTEGER PRIMARY KEY, x REAL);\nINSERT INTO r VALUES (1, 0);\n"
    )
    with SqliteEnvironment(fixture, clock=CLOCK) as env:
        env.reset()
        _, effects = _run(env, "UPDATE r SET x = 9e999 WHERE id = 1")
        _run(env, "INSERT INTO r VALUES (2, -9e999), (3, NULL)")
        diff = json.loads(env.diff_from_initial().model_dump_json())["tables"]["r"]
        assert diff["changed"][0]["after"] == {"id": 1, "x": {"real": "inf"}}
        added = sorted(diff["added"], key=lambda row: row["id"])
        assert added == [{"id": 2, "x": {"real": "-inf"}}, {"id": 3, "x": None}]
        event = ToolCallEvent(
            step=1, tool="t", args={}, ok=True, writes=effects.writes, at=0.0, duration_ms=1
        )
        line = json.loads(dump_jsonl([event]))
        assert line["writes"][0]["after"]["x"] == {"real": "inf"}
        assert line["writes"][0]["before"]["x"] == 0.0


def test_a_blob_and_infinity_in_keys_and_rows_stay_apart() -> None:
    diff = StateDiff(
        tables={"t": TableDiff(added=[{"k": b"\x00", "x": float("inf")}, {"k": "inf", "x": None}])}
    )
    rows = json.loads(diff.model_dump_json())["tables"]["t"]["added"]
    assert rows == [{"k": {"blob": "00"}, "x": {"real": "inf"}}, {"k": "inf", "x": None}]
    write = RowWrite(table="t", key=float("-inf"), before=None, after={"x": 1})
    assert json.loads(write.model_dump_json())["key"] == {"real": "-inf"}
