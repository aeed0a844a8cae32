"""Twelfth environments audit: a call's writes, the diff and the hash equal what reading the
database directly gives, whatever the collations, storage classes and indexes."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import MappingProxyType

import pytest

from groundstate.environments import sqlite as sqlite_env
from groundstate.environments.base import diff_snapshots, same_row
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.environments.sqlite_state import KEY_JSON, read_snapshot, read_table_hashes
from groundstate.environments.workspace import WorkspaceEnvironment
from groundstate.errors import ToolError
from groundstate.spec.canonical import hash_value

CLOCK = datetime(2024, 1, 1)


def _direct(env: SqliteEnvironment) -> sqlite3.Connection:
    """A connection of the test's own to the live file, read-only."""
    return sqlite3.connect(f"file:{env._live}?mode=ro", uri=True)


def _written(env: SqliteEnvironment, sql: str, params: tuple[object, ...] = ()) -> list[tuple]:
    """The call's writes as the environment reports them, and as two direct reads around the
    call give them: both must be equal."""
    direct = _direct(env)
    try:
        before = read_snapshot(direct)
        with env.tool_transaction() as effects:
            env.agent_db.execute(sql, params)
        after = read_snapshot(direct)
    finally:
        direct.close()
    want = sorted(
        (name, slot, repr(old.rows.get(slot)), repr(after.tables[name].rows.get(slot)))
        for name, old in before.tables.items()
        for slot in {*old.rows, *after.tables[name].rows}
        if not same_row(old.rows.get(slot), after.tables[name].rows.get(slot))
    )
    got = sorted((w.table, KEY_JSON(w.key), repr(w.before), repr(w.after)) for w in effects.writes)
    assert got == want
    return got


def _matches_direct_read(env: SqliteEnvironment) -> None:
    direct = _direct(env)
    try:
        assert env.state_hash() == hash_value(read_table_hashes(direct))
        assert env.diff_from_initial() == diff_snapshots(
            env.initial_snapshot(), read_snapshot(direct)
        )
    finally:
        direct.close()


REPLACED = """
CREATE TABLE nocase (k TEXT COLLATE NOCASE PRIMARY KEY, v);
CREATE TABLE anything (k PRIMARY KEY, v);
CREATE TABLE indexed (id INTEGER PRIMARY KEY, e TEXT, v);
CREATE UNIQUE INDEX indexed_e ON indexed(e COLLATE NOCASE);
CREATE TABLE pk_collated (k TEXT, v, PRIMARY KEY (k COLLATE NOCASE)) WITHOUT ROWID;
CREATE TABLE expression (id INTEGER PRIMARY KEY, e TEXT, v);
CREATE UNIQUE INDEX expression_e ON expression(lower(e));
CREATE TABLE defaulted (id INTEGER PRIMARY KEY, e TEXT NOT NULL DEFAULT 'd' UNIQUE, v);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 12)
INSERT INTO defaulted SELECT i, CASE i WHEN 1 THEN 'd' ELSE 'e' || i END, i FROM n;
CREATE TABLE keyed_default (code TEXT NOT NULL DEFAULT 'x' PRIMARY KEY, v);
INSERT INTO keyed_default VALUES ('x', 1), ('y', 2);
INSERT INTO nocase VALUES ('a', 1);
INSERT INTO anything VALUES (1, 'int');
INSERT INTO indexed VALUES (1, 'e1', 1);
INSERT INTO pk_collated VALUES ('a', 1);
INSERT INTO expression VALUES (1, 'e1', 1);
"""


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT OR REPLACE INTO nocase VALUES ('A', 2)",  # the key's collation
        "INSERT OR REPLACE INTO anything VALUES (1.0, 'real')",  # 1 = 1.0 in SQL
        "INSERT OR REPLACE INTO indexed VALUES (2, 'E1', 2)",  # the index's collation
        "INSERT OR REPLACE INTO pk_collated VALUES ('A', 2)",  # the key index's collation
        "INSERT OR REPLACE INTO expression VALUES (2, 'E1', 2)",  # an expression index
        "UPDATE OR REPLACE indexed SET e = 'E1' WHERE id = 1",  # its own row: no conflict
        # A NULL in a NOT NULL column with a default: REPLACE writes the default, after the
        # BEFORE triggers saw the NULL (a large table: the hash missed the row too).
        "INSERT OR REPLACE INTO defaulted VALUES (20, NULL, 0)",
        "UPDATE OR REPLACE defaulted SET e = NULL WHERE id = 2",
        "INSERT OR REPLACE INTO keyed_default VALUES (NULL, 5)",
        # A row the call wrote, then deleted by a later REPLACE: it was shown as inserted.
        "INSERT OR REPLACE INTO nocase VALUES ('A', 2), ('a', 3)",
        "INSERT OR REPLACE INTO defaulted VALUES (30, 'new', 1), (31, 'new', 2)",
    ],
)
def test_a_row_replace_deleted_is_in_the_calls_writes(tmp_path: Path, sql: str) -> None:
    """REPLACE deletes a row whose key or unique value the new one's equals by the index's
    comparison (a collation, SQL's numeric equality, an expression, a default written in place
    of a NULL), not by identity: the
    deleted row was missing from the call's writes (the log matched conflicts by the column's
    comparison and then took a row of the equal new key for the deleted one still there), so
    a constraint on deletions never saw it."""
    fixture = tmp_path / "replaced.sql"
    fixture.write_text(REPLACED)
    with SqliteEnvironment(fixture, clock=CLOCK) as env:
        env.reset()
        writes = _written(env, sql)
        assert writes
        _matches_direct_read(env)


def test_the_diff_of_a_table_without_key_pairs_twins_as_a_whole_read_does(tmp_path: Path) -> None:
    """Of two identical rows of a table without a primary key, one changed and the other
    moved to a new rowid: the diff from the rows the tracking saw paired them in the order
    they were first written (a removed row and an added one), a whole read in rowid order (a
    changed row): two diffs of one state change, by how it was read."""
    fixture = tmp_path / "twins.sql"
    fixture.write_text("CREATE TABLE t (x, y); INSERT INTO t VALUES (1, 1), (1, 1), (2, 2);")
    with SqliteEnvironment(fixture, clock=CLOCK) as env:
        env.reset()
        _written(env, "UPDATE t SET x = 5 WHERE rowid = 2")
        _written(env, "UPDATE t SET rowid = 9 WHERE rowid = 1")
        _matches_direct_read(env)
        (table,) = env.diff_from_initial().tables.values()
        assert not table.added and not table.removed and len(table.changed) == 1


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _link_out(path: Path) -> None:
    path.symlink_to(path.parent.parent)  # the work directory: outside the tree


@pytest.mark.parametrize("replace", [_fifo, _link_out], ids=["a FIFO", "a link out"])
def test_a_failed_call_is_undone_whatever_took_a_folders_place(
    tmp_path: Path, replace: Callable[[Path], None]
) -> None:
    """The undo made a restored file's folders again, and a FIFO in a folder's place (not
    state: nothing removed it first) crashed it: an environment failure, an invalid attempt
    the agent caused."""
    repo = tmp_path / "suite" / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    with WorkspaceEnvironment(repo, clock=CLOCK, options={"sandbox": "none"}) as env:
        initial = env.reset()
        with pytest.raises(RuntimeError), env.tool_transaction():
            shutil.rmtree(env.root / "src")
            replace(env.root / "src")
            raise RuntimeError("the tool failed")
        assert env.state_hash() == initial and (env.root / "src").is_dir()
        assert not (env.root / "src").is_symlink()


def test_a_deferred_constraint_the_call_breaks_is_the_agents_error_and_undone(
    tmp_path: Path,
) -> None:
    """A deferred foreign key fails at the harness's COMMIT, after the tool returned: the
    call crashed (an environment failure, an invalid attempt the agent's arguments caused)."""
    fixture = tmp_path / "deferred.sql"
    fixture.write_text(
        "CREATE TABLE parent (id INTEGER PRIMARY KEY);"
        "CREATE TABLE child (id INTEGER PRIMARY KEY,"
        " p INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);"
        "INSERT INTO parent VALUES (1);"
    )
    with SqliteEnvironment(fixture, clock=CLOCK) as env:
        initial = env.reset()
        with pytest.raises(ToolError, match="deferred constraint"), env.tool_transaction():
            env.agent_db.execute("INSERT INTO child VALUES (1, 99)")
        assert env.state_hash() == initial and not env._tainted
        assert _written(env, "INSERT INTO child VALUES (2, 1)")  # the environment goes on
        _matches_direct_read(env)


LIMIT = 100_000
"""The agent connection's length limit in these tests (16 MB in use: the same at a 160th)."""


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        ("UPDATE t SET b = zeroblob(60000) WHERE id = 1", ()),  # its hex: 120,000 characters
        ("UPDATE t SET s = ? WHERE id = 1", ("'" * 60_000,)),  # each quote doubled
        ("INSERT INTO t VALUES (?, ?, ?)", (2, b"\x01" * 300, "long " * 300)),
    ],
    ids=["a blob over half the limit", "a text of quotes", "long cells"],
)
def test_a_row_within_the_length_limit_is_written_and_logged_whatever_its_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sql: str, params: tuple[object, ...]
) -> None:
    """A row image held every cell as a SQL literal, and SQLite's length limit on the agent's
    connection bounds an image as it bounds a row: a blob of more than half the limit (8 MB),
    written as hex, failed the agent's statement ("string or blob too big"), a tool crash."""
    limits = {**sqlite_env._AGENT_LIMITS, sqlite3.SQLITE_LIMIT_LENGTH: LIMIT}
    monkeypatch.setattr(sqlite_env, "_AGENT_LIMITS", MappingProxyType(limits))
    fixture = tmp_path / "long.sql"
    fixture.write_text(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB, s TEXT);"
        "INSERT INTO t VALUES (1, x'00', 'a');"
    )
    with SqliteEnvironment(fixture, clock=CLOCK) as env:
        env.reset()
        assert _written(env, sql, params)
        _matches_direct_read(env)
        with pytest.raises(sqlite3.DataError), env.tool_transaction():  # the limit holds
            env.agent_db.execute("UPDATE t SET s = zeroblob(?)", (LIMIT + 1,))


def test_the_reset_probe_deletes_a_row_of_every_table_it_may(tmp_path: Path) -> None:
    """The probe deleted a row by rowid within one statement: a WITHOUT ROWID table has no
    rowid, and an R-tree cannot delete while a subquery reads it, so their resets went
    unprobed, reported as refused by "the task's permissions or the schema"."""
    fixture = tmp_path / "probed.sql"
    fixture.write_text(
        'CREATE TABLE "w t" ("k k" TEXT, n INT, v, PRIMARY KEY ("k k", n)) WITHOUT ROWID;'
        "INSERT INTO \"w t\" VALUES ('a', 1, 1), ('b', 2, 2);"
        "CREATE VIRTUAL TABLE boxes USING rtree(id, x0, x1);"
        "INSERT INTO boxes VALUES (1, 0, 1), (2, 2, 3);"
        "CREATE TABLE plain (v); INSERT INTO plain VALUES (1);"
    )
    with SqliteEnvironment(fixture, clock=CLOCK) as env:
        initial = env.reset()
        done = env.probes.mutate(env)
        assert {"deleted a row of w t", "deleted a row of boxes", "deleted a row of plain"} <= {
            *done
        }, done
        assert env.reset() == initial


COUNTED = [
    "INSERT INTO t VALUES (2, 'b', 1)",
    "UPDATE t SET v = v + 1",
    "INSERT OR REPLACE INTO t VALUES (3, 'b', 1)",  # the row it replaces is not counted
    "SAVEPOINT s",
    "UPDATE t SET v = 0",
    "ROLLBACK TO s",  # rolled-back changes stay counted
    "RELEASE s",
    "DELETE FROM t WHERE id = 1",
]


def test_total_changes_counts_the_agents_rows_as_a_plain_connection_does(tmp_path: Path) -> None:
    """SQL's total_changes() counted the rows the harness wrote on the agent's connection too
    (the write log's): an insert of one row answered 3, an update of two rows 13 more."""
    schema = "CREATE TABLE t (id INTEGER PRIMARY KEY, e TEXT UNIQUE, v);"
    fixture = tmp_path / "counted.sql"
    fixture.write_text(schema + "INSERT INTO t VALUES (1, 'a', 1);")
    plain = sqlite3.connect(":memory:", isolation_level=None)
    plain.executescript(fixture.read_text())
    start = plain.total_changes
    want = []
    for sql in COUNTED:
        plain.execute(sql)
        want.append(plain.total_changes - start)
    for _ in range(2):  # a new environment, then one reusing its database
        with SqliteEnvironment(fixture, clock=CLOCK) as env:
            env.reset()
            got = []
            with env.tool_transaction():
                for sql in COUNTED[:3]:
                    env.agent_db.execute(sql)
                    got.append(env.agent_db.execute("SELECT total_changes()").fetchone()[0])
            with env.tool_transaction():  # the next call goes on counting
                for sql in COUNTED[3:]:
                    env.agent_db.execute(sql)
                    got.append(env.agent_db.execute("SELECT total_changes()").fetchone()[0])
            assert got == want
