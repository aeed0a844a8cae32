"""The state hash and the final state derived from the change tracking.

An attempt's final hash and diff are its initial state's with only the rows the write log saw
read again. Every way to change the state must show in them exactly as a from-scratch read
would: REPLACE conflicts, key updates, foreign-key cascades, a fixture's own triggers, tables
without rowid, NULL keys, storage-class changes (1 to 1.0, text to blob), unique indexes the
log cannot follow, writes outside a tool call and writes by another connection.
"""

from __future__ import annotations

import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundstate.environments import sqlite_state
from groundstate.environments.base import diff_snapshots
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.environments.sqlite_state import (
    RowDigests,
    read_table_hashes,
    row_digest,
    table_hash,
)
from groundstate.errors import EnvironmentFailure, PermissionDenied, ResetCheckFailed, ToolError
from groundstate.spec.canonical import hash_value

CLOCK = datetime(2026, 1, 15, 10, 0, tzinfo=UTC)
FIXTURE = """
CREATE TABLE plain (a, b);
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT UNIQUE, qty);
CREATE TABLE codes (code TEXT PRIMARY KEY, label) WITHOUT ROWID;
CREATE TABLE pairs (x INTEGER, y TEXT, v, PRIMARY KEY (x, y));
CREATE TABLE nullable (k TEXT PRIMARY KEY, v);
CREATE TABLE parent (id INTEGER PRIMARY KEY, n TEXT);
CREATE TABLE child (
    id INTEGER PRIMARY KEY,
    parent_id INTEGER REFERENCES parent(id) ON DELETE CASCADE ON UPDATE CASCADE,
    note
);
CREATE TABLE audit (id INTEGER PRIMARY KEY AUTOINCREMENT, what TEXT);
CREATE TRIGGER items_audit AFTER UPDATE ON items
BEGIN INSERT INTO audit (what) VALUES ('items ' || NEW.id); END;
CREATE TABLE lowered (id INTEGER PRIMARY KEY, email TEXT);
CREATE UNIQUE INDEX lowered_email ON lowered (lower(email));
CREATE TABLE folded (id INTEGER PRIMARY KEY, tag TEXT);
CREATE UNIQUE INDEX folded_tag ON folded (tag COLLATE NOCASE);
CREATE TABLE priced (id INTEGER PRIMARY KEY, price, doubled GENERATED ALWAYS AS (price * 2));
CREATE TABLE tickets (id INTEGER PRIMARY KEY AUTOINCREMENT, v);
INSERT INTO plain VALUES (1, 'one'), (1, 'one'), (2, x'02');
INSERT INTO items VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3.5);
INSERT INTO codes VALUES ('a', 1), ('b', 2);
INSERT INTO pairs VALUES (1, 'a', 1), (1, 'b', 2), (2, 'a', NULL);
INSERT INTO nullable VALUES (NULL, 1), (NULL, 2), ('a', 3);
INSERT INTO parent VALUES (1, 'p1'), (2, 'p2');
INSERT INTO child (parent_id, note) VALUES (1, 'c1'), (1, 'c2'), (2, 'c3');
INSERT INTO audit (what) VALUES ('start');
INSERT INTO lowered VALUES (1, 'Ann@x'), (2, 'bob@x');
INSERT INTO folded VALUES (1, 'Red'), (2, 'blue');
INSERT INTO priced VALUES (1, 10), (2, 2.5);
"""
VALUES = st.sampled_from(
    [None, 0, 1, 1.0, 2, 2.5, 0.1, 1e300, 3, "1", "a", "A", "b", b"\x01", b"a", b""]
)
SMALL = st.sampled_from([1, 2, 3, 4])
TEXT = st.sampled_from(["a", "A", "b", "c", "ann@x", "ANN@X", "red", "RED"])
STATEMENTS: list[tuple[str, tuple[st.SearchStrategy[Any], ...]]] = [
    ("INSERT INTO plain VALUES (?, ?)", (VALUES, VALUES)),
    ("DELETE FROM plain WHERE a IS ?", (VALUES,)),
    ("UPDATE plain SET b = ? WHERE a IS ?", (VALUES, VALUES)),
    ("DELETE FROM plain", ()),
    ("INSERT OR REPLACE INTO items (id, name, qty) VALUES (?, ?, ?)", (SMALL, TEXT, VALUES)),
    ("UPDATE OR REPLACE items SET name = ? WHERE id = ?", (TEXT, SMALL)),
    ("UPDATE items SET id = ? WHERE id = ?", (SMALL, SMALL)),
    ("UPDATE items SET qty = ? WHERE id = ?", (VALUES, SMALL)),
    (
        "INSERT INTO items (id, name, qty) VALUES (?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET qty = excluded.qty",
        (SMALL, TEXT, VALUES),
    ),
    ("INSERT OR REPLACE INTO codes VALUES (?, ?)", (TEXT, VALUES)),
    ("INSERT OR REPLACE INTO codes VALUES (?, ?)", (VALUES, VALUES)),  # blob and number keys
    ("UPDATE codes SET code = ? WHERE code = ?", (TEXT, TEXT)),
    ("DELETE FROM codes WHERE code = ?", (TEXT,)),
    ("INSERT OR REPLACE INTO pairs VALUES (?, ?, ?)", (SMALL, TEXT, VALUES)),
    ("UPDATE pairs SET v = ? WHERE x = ?", (VALUES, SMALL)),
    ("INSERT INTO nullable VALUES (?, ?)", (st.sampled_from([None, "a", "b"]), VALUES)),
    ("UPDATE nullable SET v = ? WHERE k IS ?", (VALUES, st.sampled_from([None, "a"]))),
    ("DELETE FROM nullable WHERE k IS ?", (st.sampled_from([None, "a", "b"]),)),
    ("DELETE FROM parent WHERE id = ?", (SMALL,)),
    ("UPDATE parent SET id = ? WHERE id = ?", (SMALL, SMALL)),
    ("INSERT INTO child (parent_id, note) VALUES (?, ?)", (SMALL, VALUES)),
    ("INSERT OR REPLACE INTO lowered (id, email) VALUES (?, ?)", (SMALL, TEXT)),
    ("INSERT OR REPLACE INTO folded (id, tag) VALUES (?, ?)", (SMALL, TEXT)),
    ("UPDATE priced SET price = ? WHERE id = ?", (VALUES, SMALL)),
    ("UPDATE items SET qty = qty + 1 WHERE id = ?", (SMALL,)),  # and back again:
    ("UPDATE items SET qty = qty - 1 WHERE id = ?", (SMALL,)),
    ("INSERT INTO tickets (v) VALUES (?)", (VALUES,)),
    ("DELETE FROM tickets", ()),
]
STATEMENT = st.sampled_from(STATEMENTS).flatmap(
    lambda pair: st.tuples(st.just(pair[0]), st.tuples(*pair[1]))
)


@pytest.fixture(scope="module")
def fixture_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("state") / "mixed.sql"
    path.write_text(FIXTURE)
    return path


def _from_scratch(env: SqliteEnvironment) -> str:
    connection = sqlite3.connect(env.health()["database"])
    try:
        return hash_value(read_table_hashes(connection))
    finally:
        connection.close()


def _call(env: SqliteEnvironment, sql: str, params: tuple[Any, ...]) -> None:
    try:
        with env.tool_transaction():
            env.agent_db.execute(sql, params)
    except (sqlite3.Error, ToolError):  # refused (a constraint, a type): rolled back
        pass


def _assert_tracked(env: SqliteEnvironment) -> None:
    assert env.state_hash() == _from_scratch(env)
    assert env.diff_from_initial() == diff_snapshots(env.initial_snapshot(), env.snapshot())


# --- the hash itself -----------------------------------------------------------------------


def test_a_table_hash_ignores_row_order_and_counts_duplicates() -> None:
    rows = [(1, "a"), (2, "b"), (2, "b")]
    sql = "CREATE TABLE t(x, y)"
    assert table_hash(sql, rows) == table_hash(sql, rows[::-1])
    assert table_hash(sql, rows) != table_hash(sql, rows[:2])
    assert table_hash(sql, rows) != table_hash("CREATE TABLE t(x, z)", rows)
    assert table_hash("CREATE TABLE t(x,  y)", rows) == table_hash(sql, rows)


def test_a_table_hash_tells_storage_classes_apart() -> None:
    cells: list[Any] = [1, 1.0, "1", None, b"1", b"\x01", "01"]
    hashes = {table_hash("CREATE TABLE t(x)", [(cell,)]) for cell in cells}
    assert len(hashes) == len(cells)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.binary(min_size=1, max_size=3), max_size=12),
    st.lists(st.binary(min_size=1, max_size=3), max_size=6),
    st.data(),
)
def test_replacing_digests_equals_building_the_multiset_again(
    start: list[bytes], added: list[bytes], data: st.DataObject
) -> None:
    digests = [row_digest((value,)) for value in start]
    removed = data.draw(st.lists(st.sampled_from(digests), unique=True)) if digests else []
    new = [row_digest((value,)) for value in added]
    kept = list(digests)
    for digest in removed:
        kept.remove(digest)
    replaced = RowDigests.of(digests).replaced(removed, new)
    assert replaced.table_hash("t") == RowDigests.of(kept + new).table_hash("t")
    assert RowDigests.of(digests).table_hash("t") == table_hash("t", [(v,) for v in start])


def test_removing_a_digest_that_is_not_there_is_refused() -> None:
    with pytest.raises(KeyError):
        RowDigests.of([row_digest((1,))]).replaced([row_digest((2,))], [])


# --- the tracked final state equals a from-scratch read --------------------------------------


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(STATEMENT, min_size=1, max_size=8))
def test_the_tracked_final_state_is_the_state_read_from_scratch(
    fixture_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    statements: list[tuple[str, tuple[Any, ...]]],
) -> None:
    # Row by row however many rows were touched: the fixture's tables are small enough that
    # the default would read most of them whole.
    monkeypatch.setattr(sqlite_state, "WHOLE_TABLE_SHARE", 0)
    with SqliteEnvironment(fixture_path, clock=CLOCK) as env:
        initial = env.reset()
        for sql, params in statements:
            _call(env, sql, params)
        assert env.tracking_complete  # derived from the tracked rows, not read whole
        _assert_tracked(env)
        assert env.reset() == initial == _from_scratch(env)
        assert env.diff_from_initial().is_empty()


@pytest.mark.parametrize(
    ("sql", "changed"),
    [
        ("INSERT OR REPLACE INTO items (id, name, qty) VALUES (9, 'a', 0)", {"items"}),
        ("UPDATE items SET qty = 1.0 WHERE id = 1", {"items", "audit", "sqlite_sequence"}),
        ("UPDATE plain SET b = CAST(b AS TEXT) WHERE a = 2", {"plain"}),
        ("DELETE FROM parent WHERE id = 1", {"parent", "child"}),
        ("UPDATE parent SET id = 7 WHERE id = 2", {"parent", "child"}),
        ("INSERT OR REPLACE INTO lowered (id, email) VALUES (5, 'ANN@X')", {"lowered"}),
        ("INSERT OR REPLACE INTO folded (id, tag) VALUES (5, 'RED')", {"folded"}),
        ("UPDATE codes SET code = 'z' WHERE code = 'a'", {"codes"}),
        ("DELETE FROM nullable WHERE k IS NULL", {"nullable"}),
        ("UPDATE priced SET price = 3 WHERE id = 1", {"priced"}),
        ("DELETE FROM plain", {"plain"}),
    ],
)
@pytest.mark.parametrize("share", [0, sqlite_state.WHOLE_TABLE_SHARE])  # row by row; whole
def test_every_kind_of_write_changes_the_hash_of_exactly_its_tables(
    fixture_path: Path, monkeypatch: pytest.MonkeyPatch, sql: str, changed: set[str], share: int
) -> None:
    monkeypatch.setattr(sqlite_state, "WHOLE_TABLE_SHARE", share)
    with SqliteEnvironment(fixture_path, clock=CLOCK) as env:
        before = env.table_hashes()
        _call(env, sql, ())
        assert env.tracking_complete
        after = env.table_hashes()
        assert {name for name in after if after[name] != before[name]} == changed
        _assert_tracked(env)


UNLOGGED = st.sampled_from(
    [
        "INSERT INTO tickets (v) SELECT 1 WHERE 0",  # records tickets in sqlite_sequence
        "INSERT OR IGNORE INTO audit (id, what) VALUES (1, 'again')",
        "INSERT OR IGNORE INTO tickets (id, v) VALUES (1, 'x')",
    ]
)
"""Statements that may change the file while writing no row the log sees: alone in a call,
they make the tracking give up (the file's counter moved with nothing logged); beside a
logged write they must still show in the final state."""
CALL = st.one_of(
    STATEMENT.map(lambda statement: [statement]),
    st.lists(STATEMENT, min_size=2, max_size=3),  # several statements in one tool call
    st.tuples(UNLOGGED, VALUES).map(
        lambda pair: [("INSERT INTO plain VALUES (?, 'logged')", (pair[1],)), (pair[0], ())]
    ),
)
ACTION = st.one_of(CALL, st.sampled_from(["check", "clock"]))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(ACTION, min_size=1, max_size=10),
    st.sampled_from([0, sqlite_state.WHOLE_TABLE_SHARE]),
)
def test_the_final_state_read_between_calls_is_the_state_read_from_scratch(
    fixture_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    actions: list[Any],
    share: int,
) -> None:
    # The hash and the diff share one read of the touched rows, kept until the file changes;
    # whole tables are read only when they can have changed. Reading between calls, moving
    # the clock and several statements per call must all leave them exact.
    monkeypatch.setattr(sqlite_state, "WHOLE_TABLE_SHARE", share)
    with SqliteEnvironment(fixture_path, clock=CLOCK) as env:
        initial = env.reset()
        for action in actions:
            if action == "check":
                _assert_tracked(env)
            elif action == "clock":
                env.advance_clock(1)
            else:
                _calls(env, action)
        assert env.tracking_complete
        _assert_tracked(env)
        assert env.table_hashes() == env.table_hashes()  # the kept read, the same answer
        assert env.reset() == initial == _from_scratch(env)


def _calls(env: SqliteEnvironment, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
    try:
        with env.tool_transaction():
            for sql, params in statements:
                env.agent_db.execute(sql, params)
    except (sqlite3.Error, ToolError):
        pass


def test_an_insert_of_no_rows_into_an_autoincrement_table_is_in_the_hash(
    fixture_path: Path,
) -> None:
    # It writes no row (no trigger fires) but records the table in sqlite_sequence; with a
    # logged write in the same call the file's counter moves as the tracking expects.
    with SqliteEnvironment(fixture_path, clock=CLOCK) as env:
        initial = env.reset()
        _calls(env, [("UPDATE items SET qty = 7 WHERE id = 1", ())])
        after_update = env.state_hash()
        _calls(
            env,
            [
                ("UPDATE items SET qty = 8 WHERE id = 1", ()),
                ("INSERT INTO tickets (v) SELECT 1 WHERE 0", ()),
            ],
        )
        assert env.tracking_complete
        assert "sqlite_sequence" not in {
            name for name, value in env.table_hashes().items() if value == initial
        }
        assert env.state_hash() not in {initial, after_update}
        _assert_tracked(env)


CASCADES = """
CREATE TABLE parent (id INTEGER PRIMARY KEY, n TEXT UNIQUE);
CREATE TABLE child (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES parent(id) ON DELETE CASCADE,
                    tag TEXT);
CREATE UNIQUE INDEX child_tag ON child (lower(tag));
CREATE TABLE nulled (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES parent(id) ON DELETE SET NULL);
INSERT INTO parent VALUES (1, 'a'), (2, 'b');
INSERT INTO child VALUES (1, 1, 'x'), (2, 2, 'y');
INSERT INTO nulled VALUES (1, 1), (2, 2);
"""


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT OR REPLACE INTO parent VALUES (1, 'z')",  # a REPLACE whose delete cascades
        "INSERT OR REPLACE INTO parent VALUES (3, 'a')",  # the same through a unique column
        "DELETE FROM parent WHERE id = 2",
        "INSERT OR REPLACE INTO child VALUES (3, 1, 'X')",  # a conflict the log cannot follow
    ],
)
def test_cascades_into_a_table_read_whole_only_when_written_are_not_missed(
    tmp_path: Path, sql: str
) -> None:
    # `child` has a unique index on an expression: it is read whole, and only once the log
    # saw a write to it; cascades and REPLACE conflicts all reach it as logged writes.
    fixture = tmp_path / "cascades.sql"
    fixture.write_text(CASCADES)
    with SqliteEnvironment(fixture, clock=CLOCK) as env:
        initial = env.reset()
        _call(env, sql, ())
        assert env.tracking_complete
        assert env.state_hash() != initial
        _assert_tracked(env)


def test_a_blob_written_in_place_is_refused(fixture_path: Path) -> None:
    # A blob write fires no trigger: the call's writes could not show it, so it is refused
    # (tests/test_envs_round8.py has the other ways past the authorizer).
    with SqliteEnvironment(fixture_path, clock=CLOCK) as env:
        initial = env.reset()
        with pytest.raises(PermissionDenied, match=r"write blob plain\.b"), env.tool_transaction():
            env.agent_db.execute("UPDATE items SET qty = 9 WHERE id = 1")
            with env.agent_db.blobopen("plain", "b", 3) as blob:
                blob.write(b"\x07")
        assert env.tracking_complete and env.state_hash() == initial
        _assert_tracked(env)


@pytest.mark.parametrize(
    "ddl",
    [
        "CREATE TRIGGER sneaky AFTER UPDATE ON codes BEGIN UPDATE plain SET b = 'x'; END",
        "ALTER TABLE codes ADD COLUMN extra DEFAULT 1",
        "CREATE TABLE extra (x); INSERT INTO extra VALUES (1)",
    ],
)
def test_a_schema_changed_by_another_connection_is_read_whole(fixture_path: Path, ddl: str) -> None:
    with SqliteEnvironment(fixture_path, clock=CLOCK) as env:
        initial = env.reset()
        _call(env, "UPDATE items SET qty = 5 WHERE id = 1", ())
        other = sqlite3.connect(env.health()["database"])
        other.executescript(ddl)
        other.close()
        _call(env, "UPDATE codes SET label = 'y' WHERE code = 'a'", ())
        assert not env.tracking_complete
        assert env.state_hash() != initial
        _assert_tracked(env)
        assert env.reset() == initial


@pytest.mark.parametrize("pooled", [True, False])
def test_a_schema_restored_and_changed_again_is_read_anew(fixture_path: Path, pooled: bool) -> None:
    # Two schema changes by another connection, one per attempt, give the file the same
    # schema cookie: a connection that read the first must not take the second for it.
    def attempt(env: SqliteEnvironment, ddl: str) -> None:
        initial = env.reset()
        _call(env, "UPDATE items SET qty = 5 WHERE id = 1", ())
        other = sqlite3.connect(env.health()["database"])
        other.executescript(ddl)
        other.close()
        _call(env, "UPDATE codes SET label = 'y' WHERE code = 'a'", ())
        assert env.state_hash() != initial
        _assert_tracked(env)

    first = "CREATE TRIGGER sneaky AFTER UPDATE ON codes BEGIN UPDATE plain SET b = 'x'; END"
    second = "ALTER TABLE codes ADD COLUMN extra DEFAULT 1"
    with SqliteEnvironment(fixture_path, clock=CLOCK) as env:
        attempt(env, first)
        if not pooled:
            attempt(env, second)
    if pooled:
        with SqliteEnvironment(fixture_path, clock=CLOCK) as env:
            attempt(env, second)


def test_a_header_broken_behind_sqlites_back_fails_the_final_state(fixture_path: Path) -> None:
    # A raw write that keeps the change counter: the header's soundness tells, and the final
    # state is not derived from a file that is no longer a database.
    with SqliteEnvironment(fixture_path, clock=CLOCK) as env:
        initial = env.reset()
        with Path(env.health()["database"]).open("r+b") as handle:
            counter = handle.read(28)[24:]
            handle.seek(0)
            handle.write(b"\0" * 24 + counter + b"\0" * 72)
        assert not env.tracking_complete
        with pytest.raises(EnvironmentFailure):
            env.state_hash()
        assert env.reset() == initial


# --- reset ---------------------------------------------------------------------------------


class _TamperedAfterSetup(SqliteEnvironment):
    """Its setup's file is changed by another connection before the first reset."""

    def _restore(self) -> None:
        super()._restore()
        if not hasattr(self, "tampered"):
            self.tampered = True
            other = sqlite3.connect(self._live)
            other.execute("DELETE FROM codes")
            other.commit()
            other.close()


class _AlwaysTampered(SqliteEnvironment):
    def _restore(self) -> None:
        super()._restore()
        with self._live.open("r+b") as handle:  # a raw write SQLite's counter would not show
            handle.seek(len(self._baseline.image) - 1)
            handle.write(b"\x7f")


def test_a_fresh_environments_file_is_checked_and_rewritten_when_it_differs(
    fixture_path: Path,
) -> None:
    with _TamperedAfterSetup(fixture_path, clock=CLOCK) as env:
        assert env.reset() == _from_scratch(env)
        assert env.snapshot().tables["codes"].rows


def test_a_reset_whose_bytes_differ_from_the_build_fails(fixture_path: Path) -> None:
    with _AlwaysTampered(fixture_path, clock=CLOCK) as env, pytest.raises(ResetCheckFailed):
        env.reset()


# --- health --------------------------------------------------------------------------------


def test_health_trusts_the_builds_check_only_while_every_write_was_seen(
    fixture_path: Path,
) -> None:
    with SqliteEnvironment(fixture_path, clock=CLOCK) as env:
        env.reset()
        _call(env, "UPDATE items SET qty = 5 WHERE id = 1", ())
        report = env.health()
        assert report["ok"] and report["integrity_of"].startswith("fixture build")
        other = sqlite3.connect(env.health()["database"])
        other.execute("DELETE FROM codes")
        other.commit()
        other.close()
        report = env.health()
        assert report["ok"] and "quick_check" in report["integrity_of"]


def test_health_checks_the_whole_file_when_its_header_does_not_add_up(fixture_path: Path) -> None:
    with SqliteEnvironment(fixture_path, clock=CLOCK) as env:
        env.reset()
        with Path(env.health()["database"]).open("ab") as handle:
            handle.write(b"\0" * 10)  # a page count that no longer fits the file
        assert "quick_check" in env.health()["integrity_of"]


CELLS = st.one_of(
    st.none(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(alphabet="ab|:t1n", max_size=6),
    st.binary(max_size=3),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(CELLS, max_size=4), st.lists(CELLS, max_size=4))
def test_different_rows_have_different_digests(one: list[Any], two: list[Any]) -> None:
    same = [(type(a), repr(a)) for a in one] == [(type(b), repr(b)) for b in two]  # -0.0
    assert (row_digest(one) == row_digest(two)) == same


# --- the build's cache key -----------------------------------------------------------------


def test_a_fixture_rewritten_in_place_is_built_again(tmp_path: Path) -> None:
    fixture = tmp_path / "f.sql"
    hashes = []
    for n, value in enumerate((1, 2, 3)):  # the same size every time
        fixture.write_text(f"CREATE TABLE t(x); INSERT INTO t VALUES ({value});")
        if n:  # settled: long enough ago that its stat may stand for its content
            os.utime(fixture, ns=(n * 10**9, n * 10**9))
        with SqliteEnvironment(fixture, clock=CLOCK) as env:
            hashes.append(env.reset())
    assert len(set(hashes)) == 3


def _write_behind(database: str) -> None:
    other = sqlite3.connect(database)
    other.execute("UPDATE codes SET label = 'behind' WHERE code = 'a'")
    other.commit()
    other.close()


@pytest.mark.parametrize("when", ["during the call", "after the call"])
@pytest.mark.parametrize("then", ["hash", "diff", "call", "clock", "health"])
def test_a_write_behind_a_call_that_changed_nothing_is_not_missed(
    fixture_path: Path, when: str, then: str
) -> None:
    """A call that changed nothing does not read the file's counter at its end: whatever
    comes next reads it and must see another connection's write during or after that call."""
    with SqliteEnvironment(fixture_path, clock=CLOCK) as env:
        env.reset()
        database = env.health()["database"]
        _call(env, "UPDATE items SET qty = 5 WHERE id = 1", ())  # a logged write first
        with env.tool_transaction():
            if when == "during the call":  # before the call's read takes its shared lock
                _write_behind(database)
            env.agent_db.execute("SELECT * FROM items").fetchall()
        if when == "after the call":
            _write_behind(database)
        if then == "call":
            _call(env, "SELECT 1", ())
        elif then == "clock":
            env.advance_clock(1)
        elif then == "health":
            assert "quick_check" in env.health()["integrity_of"]
        elif then == "diff":
            assert "codes" in env.diff_from_initial().tables
        assert not env.tracking_complete
        _assert_tracked(env)


@pytest.mark.parametrize("sql", ["INSERT INTO tickets (v) SELECT 1 WHERE 0", "SELECT 1"])
def test_a_call_that_logged_nothing_leaves_the_tracking_exact(fixture_path: Path, sql: str) -> None:
    with SqliteEnvironment(fixture_path, clock=CLOCK) as env:
        env.reset()
        _call(env, sql, ())
        _call(env, "UPDATE items SET qty = 5 WHERE id = 1", ())
        assert env.tracking_complete == (sql == "SELECT 1")  # the sequence moved unlogged
        _assert_tracked(env)
