"""Fifty-third round: environments audit (SQLite kind).

Classes of defect fixed:

- **An FTS5 table's settings were outside the state**: a virtual table was hashed by its
  rows only and its shadow tables left out, so an agent with ``write`` permission that
  configured the table (``INSERT INTO docs(docs, rank) VALUES ('rank', 'bm25(10.0, 1.0)')``,
  or a row written straight into its ``docs_config`` shadow table) changed how every later
  ``ORDER BY rank`` orders searches, the graders' queries included, and the final state hash
  and the call's writes said nothing had changed. The settings in ``<table>_config`` (all but
  the ``version`` FTS5 writes itself) now count in the table's hash, and a call's writes show
  them (table ``docs_config``); a table never configured hashes as before, and honest use
  (documents written, 'rebuild', 'optimize', 'merge', 'integrity-check', a rank given for
  one query) moves nothing.
- **The agent's rank outlived the reset**: FTS5 keeps a connection's settings in memory and
  does not drop one the file no longer holds, so the agent's connection, kept across a reset
  and by the pool, ordered the next attempt's searches by the last attempt's rank. An
  attempt that wrote an FTS5 table is reset onto new connections and not pooled.
- **An SQL assertion's expected infinity was written null**: its evidence's ``expected``
  rows were pydantic's, which writes ``.inf`` as ``null``; they are now written as the found
  rows are (``{"real": "inf"}``, a BLOB ``{"blob": hex}``).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from groundstate.environments import sqlite_state
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.environments.sqlite_state import read_table_hashes, table_hash, table_kinds
from groundstate.errors import PermissionDenied
from groundstate.grading.outcome import States, evaluate_assertions
from groundstate.spec.canonical import hash_value
from groundstate.spec.task import Permissions, SqlAssertion

CLOCK = datetime(2026, 1, 15, 10, tzinfo=UTC)

DOCS = """
CREATE VIRTUAL TABLE docs USING fts5(title, body);
INSERT INTO docs(rowid, title, body) VALUES
  (1, 'fees', 'a refund of fees: refund refund refund'),
  (2, 'refund', 'how to ask for one');
CREATE VIRTUAL TABLE branches USING rtree(id, min_x, max_x, min_y, max_y);
INSERT INTO branches VALUES (1, 0, 1, 0, 1);
CREATE VIRTUAL TABLE notes USING fts4(body);
INSERT INTO notes VALUES ('refund note');
CREATE TABLE accounts (id TEXT PRIMARY KEY, balance REAL NOT NULL);
INSERT INTO accounts VALUES ('A', 100);
"""
SEARCH = "SELECT rowid FROM docs WHERE docs MATCH 'refund' ORDER BY rank"
WEIGHTED = "INSERT INTO docs(docs, rank) VALUES ('rank', 'bm25(10.0, 1.0)')"


def _env(tmp_path: Path, text: str = DOCS, **kwargs: Any) -> SqliteEnvironment:
    fixture = tmp_path / "docs.sql"
    fixture.write_text(text, encoding="utf-8")
    return SqliteEnvironment(fixture, clock=CLOCK, **kwargs)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    with _env(tmp_path) as environment:
        environment.reset()
        yield environment


def _run(env: SqliteEnvironment, sql: str) -> Any:
    with env.tool_transaction() as effects:
        env.agent_db.execute(sql).fetchall()
    return effects


def _agent_search(env: SqliteEnvironment) -> list[tuple[Any, ...]]:
    with env.tool_transaction():
        return env.agent_db.execute(SEARCH).fetchall()


def _direct_hash(env: SqliteEnvironment) -> str:
    """The state hash read whole, every table (as the tracking's fallback reads it), by a
    connection of the test's own."""
    direct = sqlite3.connect(f"file:{env._live}?mode=ro", uri=True)
    try:
        return hash_value(read_table_hashes(direct))
    finally:
        direct.close()


def _kinds(env: SqliteEnvironment) -> dict[str, str]:
    direct = sqlite3.connect(f"file:{env._live}?mode=ro", uri=True)
    try:
        return table_kinds(direct)
    finally:
        direct.close()


# --- an FTS5 table's settings are state --------------------------------------------------------


def test_configuring_the_rank_changes_the_graders_order_and_the_state(
    env: SqliteEnvironment,
) -> None:
    initial = env.state_hash()
    assert _agent_search(env) == [(1,), (2,)]
    effects = _run(env, WEIGHTED)
    # What made the defect matter: the graders' searches are ordered so too.
    assert env.evaluator_view().query(SEARCH) == [(2,), (1,)]
    assert env.state_hash() != initial
    assert [(w.table, w.key, w.before) for w in effects.writes] == [("docs_config", "rank", None)]
    assert effects.writes[0].after == {"k": "rank", "v": "bm25(10.0, 1.0)"}
    assert "docs_config" in effects.changed_tables


def test_the_tracked_hash_is_the_hash_read_whole(env: SqliteEnvironment) -> None:
    _run(env, WEIGHTED)
    assert env.state_hash() == _direct_hash(env)
    assert env.tracking_complete


@pytest.mark.parametrize(
    "sql", [WEIGHTED, "INSERT INTO docs_config VALUES ('rank', 'bm25(10.0, 1.0)')"]
)
def test_a_reset_restores_the_ranking_on_every_connection(env: SqliteEnvironment, sql: str) -> None:
    """FTS5 keeps a connection's settings in memory and does not drop one the file no longer
    holds: the agent's connection, written under, kept the agent's rank for the next
    attempt's searches."""
    initial = env.state_hash()
    _run(env, sql)
    _agent_search(env)
    env.evaluator_view().query(SEARCH)  # graders read the setting too
    assert env.reset() == initial
    assert _agent_search(env) == [(1,), (2,)]
    assert env.evaluator_view().query(SEARCH) == [(1,), (2,)]


def test_a_pooled_database_does_not_carry_the_ranking(tmp_path: Path) -> None:
    for attempt in range(3):
        with _env(tmp_path) as env:
            env.reset()
            assert _agent_search(env) == [(1,), (2,)], attempt
            assert env.evaluator_view().query(SEARCH) == [(1,), (2,)], attempt
            _run(env, WEIGHTED)
            assert _agent_search(env) == [(2,), (1,)]


def test_a_rolled_back_setting_leaves_no_ranking_behind(env: SqliteEnvironment) -> None:
    initial = env.state_hash()
    with pytest.raises(RuntimeError), env.tool_transaction():
        env.agent_db.execute(WEIGHTED)
        raise RuntimeError("the tool failed after configuring")
    assert env.state_hash() == initial
    assert env.reset() == initial
    assert _agent_search(env) == [(1,), (2,)]


def test_an_attempt_that_only_searched_keeps_its_connections(env: SqliteEnvironment) -> None:
    agent = env._agent
    _agent_search(env)
    env.reset()
    assert env._agent is agent


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO docs(docs, rank) VALUES ('automerge', 8)",
        "INSERT INTO docs(docs, rank) VALUES ('crisismerge', 20)",
        "INSERT INTO docs(docs, rank) VALUES ('pgsz', 2000)",
        "INSERT INTO docs(docs, rank) VALUES ('usermerge', 5)",
        "INSERT INTO docs_config VALUES ('rank', 'bm25(10.0, 1.0)')",
        "REPLACE INTO docs_config VALUES ('version', 4), ('rank', 'bm25(1.0, 10.0)')",
    ],
)
def test_every_setting_written_either_way_is_in_the_state(env: SqliteEnvironment, sql: str) -> None:
    initial = env.state_hash()
    effects = _run(env, sql)
    assert env.state_hash() != initial
    assert env.state_hash() == _direct_hash(env)
    assert {write.table for write in effects.writes} == {"docs_config"}


def test_a_setting_put_back_as_it_was_is_the_initial_state(env: SqliteEnvironment) -> None:
    initial = env.state_hash()
    _run(env, WEIGHTED)
    _run(env, "DELETE FROM docs_config WHERE k = 'rank'")
    assert env.state_hash() == initial


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO docs(docs) VALUES ('rebuild')",
        "INSERT INTO docs(docs) VALUES ('optimize')",
        "INSERT INTO docs(docs, rank) VALUES ('merge', 16)",
        "INSERT INTO docs(docs) VALUES ('integrity-check')",
        "SELECT rowid FROM docs WHERE docs MATCH 'refund' AND rank MATCH 'bm25(10.0, 1.0)'",
        "SELECT rowid, bm25(docs, 10.0, 1.0) FROM docs WHERE docs MATCH 'refund'",
        "UPDATE docs SET body = body WHERE rowid = 1",
    ],
)
def test_honest_search_use_leaves_the_state_as_it_was(env: SqliteEnvironment, sql: str) -> None:
    initial = env.state_hash()
    effects = _run(env, sql)
    assert effects.denied == []
    assert "docs_config" not in effects.changed_tables
    assert env.state_hash() == initial
    assert env.evaluator_view().query(SEARCH) == [(1,), (2,)]


def test_documents_written_and_undone_leave_the_state_as_it_was(env: SqliteEnvironment) -> None:
    initial = env.state_hash()
    effects = _run(env, "INSERT INTO docs(rowid, title, body) VALUES (3, 'x', 'refund y')")
    assert [write.table for write in effects.writes] == ["docs"]
    assert env.state_hash() != initial
    _run(env, "DELETE FROM docs WHERE rowid = 3")
    _run(env, "INSERT INTO docs(docs) VALUES ('rebuild')")
    assert env.state_hash() == initial


def test_a_table_never_configured_hashes_as_it_always_has(env: SqliteEnvironment) -> None:
    """No stored or declared hash of an unconfigured FTS5 table moves: its hash is its
    definition and rows, as before."""
    view = env.evaluator_view()
    [(sql,)] = view.query("SELECT sql FROM sqlite_master WHERE name = 'docs'")
    rows = view.query("SELECT * FROM docs")
    assert env.table_hashes()["docs"] == table_hash(sql, rows)


def test_only_fts5_tables_have_settings(env: SqliteEnvironment) -> None:
    kinds = _kinds(env)
    assert sqlite_state.fts5_settings(kinds) == {"docs": "docs_config"}
    assert not {"docs_config", "branches_node", "notes_stat"} & set(env.table_hashes())


def test_a_table_named_like_a_config_table_is_no_setting(tmp_path: Path) -> None:
    """An R-tree ``sites`` beside a table of the fixture's own named ``sites_config``: the
    table is hashed as a table, and the R-tree has no settings."""
    text = (
        "CREATE VIRTUAL TABLE sites USING rtree(id, a, b);\n"
        "CREATE TABLE sites_config (k TEXT PRIMARY KEY, v);\n"
        "INSERT INTO sites_config VALUES ('rank', 1);\n"
    )
    with _env(tmp_path, text) as env:
        env.reset()
        kinds = _kinds(env)
        assert sqlite_state.fts5_settings(kinds) == {}
        initial = env.state_hash()
        effects = _run(env, "UPDATE sites_config SET v = 2")
        assert [write.table for write in effects.writes] == ["sites_config"]
        assert env.state_hash() != initial


def test_a_fixture_that_configures_its_table_keeps_that_setting(tmp_path: Path) -> None:
    with _env(tmp_path, DOCS + WEIGHTED + ";\n") as env:
        env.reset()
        initial = env.state_hash()
        assert env.evaluator_view().query(SEARCH) == [(2,), (1,)]
        _run(env, "INSERT INTO docs(docs) VALUES ('rebuild')")
        assert env.state_hash() == initial
        _run(env, "INSERT INTO docs(docs, rank) VALUES ('rank', 'bm25()')")
        assert env.state_hash() != initial
        assert env.reset() == initial


def test_a_read_only_search_table_cannot_be_configured(tmp_path: Path) -> None:
    with _env(tmp_path, permissions=Permissions(tables={"docs": "read"})) as env:
        env.reset()
        initial = env.state_hash()
        for sql in (WEIGHTED, "INSERT INTO docs_config VALUES ('rank', 'bm25(10.0, 1.0)')"):
            with pytest.raises(PermissionDenied):
                _run(env, sql)
        assert env.state_hash() == initial
        assert env.evaluator_view().query(SEARCH) == [(1,), (2,)]


def test_an_external_content_table_hashes_its_settings_too(tmp_path: Path) -> None:
    text = (
        "CREATE TABLE pages (id INTEGER PRIMARY KEY, title TEXT, body TEXT);\n"
        "INSERT INTO pages VALUES (1, 'fees', 'refund refund'), (2, 'refund', 'one');\n"
        "CREATE VIRTUAL TABLE idx USING fts5(title, body, content=pages, content_rowid=id);\n"
        "INSERT INTO idx(idx) VALUES ('rebuild');\n"
    )
    with _env(tmp_path, text) as env:
        env.reset()
        initial = env.state_hash()
        _run(env, "INSERT INTO idx(idx) VALUES ('rebuild')")
        assert env.state_hash() == initial
        _run(env, "INSERT INTO idx(idx, rank) VALUES ('rank', 'bm25(10.0, 1.0)')")
        assert env.state_hash() != initial
        assert env.state_hash() == _direct_hash(env)


# --- an SQL assertion's evidence keeps an expected infinity ------------------------------------


def _evidence(env: SqliteEnvironment, assertion: SqlAssertion) -> tuple[bool, dict[str, Any]]:
    states = States(
        env.initial_view(),
        env.evaluator_view(),
        env.initial_view().snapshot(),
        env.diff_from_initial(),
        Path("."),
    )
    [result] = evaluate_assertions([assertion], states)
    return result.passed, json.loads(result.model_dump_json())["evidence"]


@pytest.mark.parametrize("ordered", [False, True])
def test_an_expected_infinity_is_tagged_in_the_evidence(
    env: SqliteEnvironment, ordered: bool
) -> None:
    _run(env, "UPDATE accounts SET balance = 9e999")
    expected = [["A", float("inf")]]
    assertion = SqlAssertion(
        id="s", sql="SELECT id, balance FROM accounts", expect_rows=expected, ordered=ordered
    )
    passed, evidence = _evidence(env, assertion)
    assert passed
    assert evidence["rows"] == [["A", {"real": "inf"}]]
    assert evidence["expected"] == [["A", {"real": "inf"}]]


def test_an_expected_minus_infinity_differs_from_null_in_the_evidence(
    env: SqliteEnvironment,
) -> None:
    assertion = SqlAssertion(
        id="s",
        sql="SELECT id, balance FROM accounts",
        expect_rows=[["A", float("-inf")], ["B", None]],
    )
    passed, evidence = _evidence(env, assertion)
    assert not passed
    assert evidence["expected"] == [["A", {"real": "-inf"}], ["B", None]]
    assert evidence["rows"] == [["A", 100.0]]


def test_finite_expected_rows_are_written_as_before(env: SqliteEnvironment) -> None:
    assertion = SqlAssertion(
        id="s", sql="SELECT id, balance FROM accounts", expect_rows=[["A", 100.0]]
    )
    passed, evidence = _evidence(env, assertion)
    assert passed and evidence["expected"] == [["A", 100.0]]


def test_hashing_a_configured_table_stays_fast(tmp_path: Path) -> None:
    """Its settings are a few rows: the hash still costs one read of the table."""
    rows = ",".join(f"({i}, 't{i}', 'refund body {i}')" for i in range(1, 3001))
    text = f"CREATE VIRTUAL TABLE docs USING fts5(title, body);\nINSERT INTO docs VALUES {rows};\n"
    text = text.replace("INSERT INTO docs VALUES", "INSERT INTO docs(rowid, title, body) VALUES")
    with _env(tmp_path, text) as env:
        env.reset()
        _run(env, WEIGHTED)
        start = time.perf_counter()
        env.state_hash()
        assert time.perf_counter() - start < 1.0


def test_sqlite_has_fts5_settings() -> None:
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE VIRTUAL TABLE d USING fts5(x)")
    connection.execute("INSERT INTO d(d, rank) VALUES ('rank', 'bm25(2.0)')")
    assert ("rank", "bm25(2.0)") in connection.execute("SELECT k, v FROM d_config").fetchall()
