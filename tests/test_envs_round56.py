"""Fifty-sixth round: environments audit (SQLite kind).

Classes of defect fixed:

- **What a search table keeps beside its index was written by hand unchecked**: SQLite's
  ``integrity-check`` reads an index against its rows, not an FTS5 table's settings nor an
  FTS4 table's totals. ``UPDATE docs_config SET v = 99 WHERE k = 'version'`` (or the row
  deleted) committed, and every later read of ``docs`` failed on a fresh connection (the
  graders') while the state hash did not move; a ``rank`` naming no function (by hand or by
  FTS5's own command) made every ranked search fail; a key or value FTS5 refuses (``('foo',
  1)``, ``('pgsz', 'abc')``) moved the state hash while no read changed; ``notes_stat`` or
  ``notes_docsize`` edited changed what ``matchinfo`` reads and not the hash. Each is now the
  agent's error, undone; honest writes and commands of every kind pass, and a setting FTS5
  takes (by its command or by hand) stays state, as the fifty-third round decided.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from groundstate.agents.scripted import ScriptedAgent
from groundstate.environments.sqlite import AGENT_DATABASE_MIN_BYTES, SqliteEnvironment
from groundstate.episode import AttemptInfo, run_attempt
from groundstate.errors import EnvironmentFailure, SpecError, ToolError
from groundstate.spec.solution import Step
from groundstate.spec.suite import load_suite
from groundstate.testing import scripted_system
from groundstate.trace import ToolCallEvent

from ._envs_builders import SAVE_NOTE, bank_with_a_tool

CLOCK = datetime(2026, 1, 15, 10, tzinfo=UTC)

# --- what a search table keeps beside its index -------------------------------------------------

SEARCHES = """
CREATE VIRTUAL TABLE docs USING fts5(title, body);
INSERT INTO docs(rowid, title, body) VALUES (1, 'fees', 'a refund of fees'), (2, 'refund', 'how');
CREATE VIRTUAL TABLE notes USING fts4(body);
INSERT INTO notes VALUES ('refund note');
INSERT INTO notes VALUES ('another note on a refund');
CREATE TABLE pages (id INTEGER PRIMARY KEY, body TEXT);
INSERT INTO pages VALUES (1, 'refund refund'), (2, 'one');
CREATE VIRTUAL TABLE pagex USING fts4(content='pages', body);
INSERT INTO pagex(pagex) VALUES ('rebuild');
"""

READS = {
    "docs": "SELECT rowid FROM docs WHERE docs MATCH 'refund' ORDER BY rank",
    "notes": "SELECT docid, matchinfo(notes, 'pcnal') FROM notes WHERE notes MATCH 'refund'",
}


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


def _fresh_reads(env: SqliteEnvironment) -> dict[str, list[tuple[object, ...]]]:
    """What a new connection (as the graders') reads of the search tables."""
    connection = sqlite3.connect(f"file:{env._live}?mode=ro", uri=True)
    try:
        return {table: connection.execute(sql).fetchall() for table, sql in READS.items()}
    finally:
        connection.close()


@pytest.mark.parametrize(
    ("table", "sql"),
    [
        ("docs", "UPDATE docs_config SET v = 99 WHERE k = 'version'"),
        ("docs", "UPDATE docs_config SET v = v + 1 WHERE k = 'version'"),
        ("docs", "DELETE FROM docs_config WHERE k = 'version'"),
        ("docs", "DELETE FROM docs_config"),
        ("docs", "INSERT INTO docs_config VALUES ('rank', 'nosuch()')"),
        ("docs", "INSERT INTO docs(docs, rank) VALUES ('rank', 'nosuch()')"),
        ("docs", "INSERT INTO docs(docs, rank) VALUES ('rank', 'highlight(1)')"),
        ("docs", "INSERT INTO docs_config VALUES ('foo', 1)"),
        ("docs", "INSERT INTO docs_config VALUES ('VERSION', 4)"),
        ("docs", "INSERT INTO docs_config VALUES ('pgsz', 'abc')"),
        ("docs", "INSERT INTO docs_config VALUES ('automerge', -3)"),
        ("notes", "UPDATE notes_stat SET value = x'0505' WHERE id = 0"),
        ("notes", "UPDATE notes_docsize SET size = x'09' WHERE docid = 1"),
        ("notes", "DELETE FROM notes_docsize WHERE docid = 2"),
        ("notes", "DELETE FROM notes_stat"),
    ],
)
def test_what_a_search_table_keeps_written_by_hand_is_refused_and_undone(
    searches: SqliteEnvironment, table: str, sql: str
) -> None:
    initial, reads = searches.state_hash(), _fresh_reads(searches)
    with pytest.raises(ToolError, match=f"search table {table} keeps beside its index"):
        _call(searches, sql)
    assert _fresh_reads(searches) == reads
    assert searches.evaluator_view().query(READS[table]) == reads[table]
    assert searches.state_hash() == initial


def test_a_refusal_names_what_fts5_said(searches: SqliteEnvironment) -> None:
    with pytest.raises(ToolError, match=r"invalid fts5 file format \(found 99"):
        _call(searches, "UPDATE docs_config SET v = 99 WHERE k = 'version'")
    with pytest.raises(ToolError, match="no such function: nosuch"):
        _call(searches, "INSERT INTO docs(docs, rank) VALUES ('rank', 'nosuch()')")
    with pytest.raises(ToolError, match="FTS5 refuses the setting 'foo' = 1"):
        _call(searches, "INSERT INTO docs_config VALUES ('foo', 1)")


@pytest.mark.parametrize(
    "sql",
    [
        ("INSERT INTO docs(rowid, title, body) VALUES (3, 'x', 'refund y')",),
        ("DELETE FROM docs WHERE rowid = 1", "INSERT INTO docs(docs) VALUES ('optimize')"),
        ("INSERT INTO docs(docs) VALUES ('rebuild')",),
        ("INSERT INTO docs(docs, rank) VALUES ('rank', 'bm25(10.0, 1.0)')",),
        ("INSERT INTO docs(docs, rank) VALUES ('RANK', 'bm25(0.0, 1.0)')",),
        ("INSERT INTO docs_config VALUES ('rank', 'bm25(0.0, 1.0)')",),
        ("INSERT INTO docs(docs, rank) VALUES ('automerge', 8)",),
        ("INSERT INTO docs(docs, rank) VALUES ('pgsz', 4000)",),
        ("INSERT INTO docs(docs, rank) VALUES ('crisismerge', 20)",),
        ("INSERT INTO docs_config VALUES ('usermerge', 4)",),
        ("UPDATE docs_config SET v = v WHERE k = 'version'",),
        ("INSERT INTO docs(docs, rank) VALUES ('merge', 10)",),
        ("INSERT INTO notes VALUES ('a third refund')", "DELETE FROM notes WHERE docid = 1"),
        ("UPDATE notes SET body = 'no refund at all' WHERE docid = 2",),
        ("INSERT INTO notes(notes) VALUES ('optimize')",),
        ("INSERT INTO notes(notes) VALUES ('automerge=4')",),
        ("INSERT INTO notes(notes) VALUES ('rebuild')",),
        (
            "INSERT INTO pages VALUES (3, 'refund z')",
            "INSERT INTO pagex(docid, body) VALUES (3, 'refund z')",
        ),
    ],
)
def test_honest_writes_and_commands_of_search_tables_pass(
    searches: SqliteEnvironment, sql: tuple[str]
) -> None:
    _call(searches, *sql)
    fresh = sqlite3.connect(f"file:{searches._live}?mode=ro", uri=True)
    try:
        fresh.execute(READS["docs"]).fetchall()  # still readable afresh
    finally:
        fresh.close()


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO docs(docs, rank) VALUES ('automerge', 8)",
        "INSERT INTO docs_config VALUES ('usermerge', 4)",
        "INSERT INTO docs(docs, rank) VALUES ('rank', 'bm25(0.0, 1.0)')",
        "INSERT INTO docs(docs, rank) VALUES ('RANK', 'bm25(0.0, 1.0)')",
    ],
)
def test_a_setting_fts5_takes_stays_state(searches: SqliteEnvironment, sql: str) -> None:
    """What FTS5 itself would write is the agent's configuration, as the fifty-third round
    decided: it passes and moves the state."""
    initial = searches.state_hash()
    _call(searches, sql)
    assert searches.state_hash() != initial


def test_a_later_call_after_a_refusal_is_checked_afresh(searches: SqliteEnvironment) -> None:
    """A refused call leaves no cached settings behind: the next honest call passes and the
    next hand-written one is refused again."""
    with pytest.raises(ToolError):
        _call(searches, "UPDATE docs_config SET v = 99 WHERE k = 'version'")
    _call(searches, "INSERT INTO docs(rowid, title, body) VALUES (3, 'x', 'refund y')")
    with pytest.raises(ToolError):
        _call(searches, "DELETE FROM docs_config WHERE k = 'version'")
    assert len(_fresh_reads(searches)["docs"]) == 3


# --- the database cap in suite.yaml ------------------------------------------------------------

MiB = 1024 * 1024


def _bank_with_options(tmp_path: Path, options: dict[str, object]) -> Path:
    suite = bank_with_a_tool(tmp_path, "save_note", SAVE_NOTE)
    config = yaml.safe_load((suite.root / "suite.yaml").read_text())
    config["environment_options"] = options
    (suite.root / "suite.yaml").write_text(yaml.safe_dump(config))
    return suite.root


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_database_mb": 0}, "max_database_mb: Input should be greater than or equal to 1"),
        ({"max_database_mb": -5}, "max_database_mb: Input should be greater than or equal to 1"),
        ({"max_database_mb": 2_000_000}, "max_database_mb: Input should be less than"),
        ({"max_database_mb": "2"}, "max_database_mb: Input should be a valid integer"),
        ({"max_database_mb": True}, "max_database_mb: Input should be a valid integer"),
        ({"max_database_mb": 2.5}, "max_database_mb: Input should be a valid integer"),
        ({"max_database_bytes": 2 * MiB}, "max_database_bytes: Extra inputs are not permitted"),
    ],
)
def test_a_bad_cap_in_suite_yaml_names_the_file_and_the_field(
    tmp_path: Path, options: dict[str, object], message: str
) -> None:
    root = _bank_with_options(tmp_path, options)
    with pytest.raises(SpecError) as raised:
        load_suite(root)
    text = str(raised.value)
    assert str(root / "suite.yaml") in text and "environment_options" in text, text
    assert message in text, text


def test_the_cap_in_suite_yaml_binds_the_agents_attempt(tmp_path: Path) -> None:
    suite = load_suite(_bank_with_options(tmp_path, {"max_database_mb": 2}))
    task = suite.tasks["transfer"]
    steps = [
        Step(call="check_pin", args={"account": "A", "pin": "1234"}),
        Step(call="save_note", args={"account": "A", "note": "x" * 100_000, "copies": 40}),
        Step(finish="Done."),
    ]
    info = AttemptInfo(run_id="r56", batch_id="adhoc", attempt=1, seed=0)
    output = asyncio.run(run_attempt(task, suite, scripted_system(), ScriptedAgent(steps), info))
    run = output.run
    assert not run.terminal_reason.startswith("environment_failure"), run.terminal_reason
    calls = [event for event in run.observation_action_log if isinstance(event, ToolCallEvent)]
    assert [call.error_class for call in calls] == [None, "tool_error"], calls
    assert "past the 2 MiB an attempt's database may hold" in (calls[1].error or "")


def test_honest_writes_under_the_cap_in_suite_yaml_pass(tmp_path: Path) -> None:
    suite = load_suite(_bank_with_options(tmp_path, {"max_database_mb": 2}))
    task = suite.tasks["transfer"]
    steps = [
        Step(call="check_pin", args={"account": "A", "pin": "1234"}),
        Step(call="save_note", args={"account": "A", "note": "x" * 1000, "copies": 40}),
        Step(finish="Done."),
    ]
    info = AttemptInfo(run_id="r56", batch_id="adhoc", attempt=1, seed=0)
    output = asyncio.run(run_attempt(task, suite, scripted_system(), ScriptedAgent(steps), info))
    calls = [e for e in output.run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert [call.error_class for call in calls] == [None, None], calls


def _small_fixture(tmp_path: Path, blob: int = 0) -> Path:
    fixture = tmp_path / "small.sql"
    fixture.write_text(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v);\n"
        f"INSERT INTO t VALUES (1, zeroblob({blob}));\n",
        encoding="utf-8",
    )
    return fixture


def test_the_options_set_the_cap_and_none_keeps_the_default(tmp_path: Path) -> None:
    fixture = _small_fixture(tmp_path)
    with SqliteEnvironment(fixture, clock=CLOCK, options={"max_database_mb": 3}) as env:
        assert env._max_bytes == 3 * MiB
    with SqliteEnvironment(fixture, clock=CLOCK, options={}) as env:
        assert env._max_bytes == AGENT_DATABASE_MIN_BYTES
    with SqliteEnvironment(fixture, clock=CLOCK, options={"max_database_mb": None}) as env:
        assert env._max_bytes == AGENT_DATABASE_MIN_BYTES


def test_a_cap_below_the_fixture_is_refused_by_name(tmp_path: Path) -> None:
    fixture = _small_fixture(tmp_path, blob=3 * MiB)
    failure = pytest.raises(
        EnvironmentFailure, match=r"environment_options\.max_database_mb is 2, less than"
    )
    with failure, SqliteEnvironment(fixture, clock=CLOCK, options={"max_database_mb": 2}):
        pass
    with SqliteEnvironment(fixture, clock=CLOCK, options={"max_database_mb": 4}) as env:
        env.reset()


# --- the write log is capped too ---------------------------------------------------------------

BLOB_UPDATE = "UPDATE t SET v = randomblob(200000) WHERE id = 1"


@pytest.fixture
def capped(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    with SqliteEnvironment(_small_fixture(tmp_path), clock=CLOCK, max_database_bytes=MiB) as env:
        env.reset()
        yield env


def _rewrite(env: SqliteEnvironment, times: int, *, swallow: bool = False) -> None:
    """One call updating one row *times* (a tool that swallows SQLite's errors, or not)."""
    with env.tool_transaction():
        for _ in range(times):
            try:
                env.agent_db.execute(BLOB_UPDATE)
            except sqlite3.Error:
                if not swallow:
                    raise


@pytest.mark.parametrize("swallow", [False, True])
def test_a_call_whose_writes_overfill_the_log_is_the_agents_error(
    capped: SqliteEnvironment, swallow: bool
) -> None:
    """A row of 200 KB rewritten 60 times: the database stays under its 1 MiB cap, but the
    log of the call's rows before and after held 24 MB (in TEMP and the harness's memory)."""
    initial = capped.state_hash()
    with pytest.raises(ToolError, match=r"would log more than 2 MiB of rows before and after"):
        _rewrite(capped, 60, swallow=swallow)
    assert capped.state_hash() == initial
    assert len(capped._writes._kept) <= 12  # what the log held stopped at its bound
    _rewrite(capped, 2)  # the next call starts with an empty log
    assert capped.state_hash() != initial


def test_honest_calls_under_the_logs_bound_pass(capped: SqliteEnvironment) -> None:
    _rewrite(capped, 3)
    with capped.tool_transaction():
        for value in range(5000):
            capped.agent_db.execute("UPDATE t SET v = ? WHERE id = 1", (bytes([value % 7]),))
    assert capped.evaluator_view().query("SELECT v FROM t") == [(bytes([4999 % 7]),)]


def test_the_logs_bound_holds_after_a_reset(capped: SqliteEnvironment) -> None:
    capped.reset()
    with pytest.raises(ToolError, match="would log more than 2 MiB"):
        _rewrite(capped, 60)


REWRITE_NOTE = '''
@tool
def rewrite_note(ctx: ToolContext, account: str, note: str, times: int) -> int:
    """Keep a note on an account as a transfer of nothing, rewritten *times* times."""
    cursor = ctx.db.execute(
        "INSERT INTO transfers (source, target, amount, at) VALUES (?, ?, 0, '')",
        (account, account),
    )
    for index in range(times):
        ctx.db.execute(
            "UPDATE transfers SET at = ? WHERE id = ?", (f"{note}{index}", cursor.lastrowid)
        )
    return times
'''


def test_an_agent_whose_writes_overfill_the_log_fails_its_own_attempt(tmp_path: Path) -> None:
    suite = bank_with_a_tool(tmp_path, "rewrite_note", REWRITE_NOTE)
    config = yaml.safe_load((suite.root / "suite.yaml").read_text())
    config["environment_options"] = {"max_database_mb": 1}
    (suite.root / "suite.yaml").write_text(yaml.safe_dump(config))
    suite = load_suite(suite.root)
    task = suite.tasks["transfer"]
    steps = [
        Step(call="check_pin", args={"account": "A", "pin": "1234"}),
        Step(call="rewrite_note", args={"account": "A", "note": "x" * 100_000, "times": 40}),
        Step(finish="Done."),
    ]
    info = AttemptInfo(run_id="r56", batch_id="adhoc", attempt=1, seed=0)
    output = asyncio.run(run_attempt(task, suite, scripted_system(), ScriptedAgent(steps), info))
    run = output.run
    assert not run.terminal_reason.startswith("environment_failure"), run.terminal_reason
    calls = [event for event in run.observation_action_log if isinstance(event, ToolCallEvent)]
    assert [call.error_class for call in calls] == [None, "tool_error"], calls
    assert "would log more than 2 MiB" in (calls[1].error or "")
