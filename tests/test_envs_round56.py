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

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import ToolError

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
