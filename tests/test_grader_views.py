"""The views graders get: sT's snapshot read once per attempt and shared as copies of one
image (the same rows, order and storage classes as a fresh read), table layouts read once per
schema, and the attempt's diff handed to checks as ``sT.changes()``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from groundstate.deadline import DeadlineExceeded
from groundstate.environments import sqlite_state
from groundstate.environments.base import Snapshot, StateDiff, diff_snapshots
from groundstate.environments.sqlite import SqliteEnvironment, SqliteView
from groundstate.grading.outcome import States, within_limit, within_limits

CLOCK = datetime(2024, 3, 1, 9, 30)
FIXTURE = """
CREATE TABLE items (id TEXT PRIMARY KEY, price REAL, qty INTEGER, blob BLOB, note);
CREATE TABLE pairs (a INTEGER, b TEXT, v, PRIMARY KEY (b, a)) WITHOUT ROWID;
CREATE TABLE log (line TEXT);
INSERT INTO items VALUES ('x', 1.0, 1, x'00ff', 1), ('a', 2.5, 3, NULL, 'one'),
                         ('m', 3, 2.0, x'', 1.5);
INSERT INTO pairs VALUES (2, 'b', 1), (1, 'b', 2.0), (1, 'a', x'01');
INSERT INTO log VALUES ('first'), ('second');
"""


@pytest.fixture
def env(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    fixture = tmp_path / "mixed.sql"
    fixture.write_text(FIXTURE, encoding="utf-8")
    with SqliteEnvironment(fixture, clock=CLOCK) as environment:
        environment.reset()
        yield environment


def _write(env: SqliteEnvironment, sql: str) -> None:
    with env.tool_transaction():
        env.agent_db.execute(sql)


def _typed(snapshot: Snapshot) -> list[Any]:
    """Everything a snapshot holds, in order, each value with its type (1 == 1.0 == True)."""
    return [
        (
            name,
            table.columns,
            table.key,
            [(k, [(c, type(v), v) for c, v in row.items()]) for k, row in table.rows.items()],
        )
        for name, table in snapshot.tables.items()
    ]


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts whole-database reads from now on."""
    reads: list[int] = []
    original = sqlite_state.read_snapshot

    def counted(connection: sqlite3.Connection) -> Snapshot:
        reads.append(1)
        return original(connection)

    monkeypatch.setattr("groundstate.environments.sqlite.read_snapshot", counted)
    return reads


def test_final_snapshot_is_read_once_and_each_caller_gets_its_own_identical_copy(
    env: SqliteEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(env, "UPDATE items SET price = 4, note = 5.5 WHERE id = 'a'")
    fresh = sqlite_state.read_snapshot(sqlite3.connect(env._live))  # an independent read
    reads = _reads(monkeypatch)
    view = env.evaluator_view()
    first = view.snapshot()
    first.tables["items"].rows['"a"']["price"] = "changed by a check"
    del first.tables["log"]
    second, third = view.snapshot(), view.snapshot()
    assert reads == [1]
    assert _typed(second) == _typed(third) == _typed(fresh)
    assert second.tables["items"].rows['"a"']["price"] == 4.0  # REAL column: a float
    assert type(second.tables["items"].rows['"a"']["note"]) is float  # 5.5 stays REAL
    assert second.tables["items"].rows['"x"']["blob"] == b"\x00\xff"
    second.tables["pairs"].rows.clear()
    assert _typed(view.snapshot()) == _typed(fresh)


def test_a_commit_by_another_connection_is_read_again(env: SqliteEnvironment) -> None:
    view = env.evaluator_view()
    assert view.snapshot().tables["items"].rows['"x"']["note"] == 1
    _write(env, "UPDATE items SET note = 'later' WHERE id = 'x'")
    assert view.snapshot().tables["items"].rows['"x"']["note"] == "later"


def test_a_new_schema_is_read_with_its_own_layout(env: SqliteEnvironment) -> None:
    """Layouts are kept by the schema's text: a column or table the same connection did not
    see at the last read shows up (the live file's connection stays open across the change)."""
    view = env.evaluator_view()
    assert view.snapshot().tables["items"].columns == ["id", "price", "qty", "blob", "note"]
    with sqlite3.connect(env._live) as other:  # outside the harness's tracking, on purpose
        other.execute("ALTER TABLE items ADD COLUMN extra INTEGER DEFAULT 7")
        other.execute("CREATE TABLE added (k INTEGER PRIMARY KEY)")
    snapshot = view.snapshot()
    assert snapshot.tables["items"].columns[-1] == "extra"
    assert snapshot.tables["items"].rows['"a"']["extra"] == 7
    assert list(snapshot.tables) == ["items", "pairs", "log", "added"]
    assert _typed(snapshot) == _typed(sqlite_state.read_snapshot(sqlite3.connect(env._live)))


def test_layouts_match_table_info_for_keys_without_rowid_and_composite(
    env: SqliteEnvironment,
) -> None:
    snapshot = env.evaluator_view().snapshot()
    assert snapshot.tables["pairs"].key == ["b", "a"]  # the primary key's order, not columns'
    assert list(snapshot.tables["pairs"].rows) == ['["a",1]', '["b",1]', '["b",2]']
    assert snapshot.tables["log"].key == ["rowid"]
    assert snapshot.tables["log"].columns == ["rowid", "line"]


def _states(env: SqliteEnvironment, diff: StateDiff) -> States:
    s0 = env.initial_view().snapshot()
    return States(env.initial_view(), env.evaluator_view(), s0, diff, Path("."))


def test_checks_get_the_attempts_diff_as_copies_of_their_own(env: SqliteEnvironment) -> None:
    _write(env, "UPDATE items SET qty = 9 WHERE id = 'x'")
    _write(env, "DELETE FROM log WHERE line = 'first'")
    _write(env, "INSERT INTO pairs VALUES (3, 'c', NULL)")
    diff = env.diff_from_initial()
    states = _states(env, diff)
    recorded = diff.model_dump()

    def spoils(s: States) -> StateDiff:
        changes: StateDiff = s.sT.changes()  # type: ignore[attr-defined]
        changes.tables["items"].changed[0].after["qty"] = -1
        changes.tables.pop("log")
        return changes

    def reads(s: States) -> StateDiff:
        changes: StateDiff = s.sT.changes()  # type: ignore[attr-defined]
        return changes

    spoilt, read = (r.result() for r in within_limits([(spoils, 5, "a"), (reads, 5, "b")], states))
    assert spoilt != read
    assert read.model_dump() == recorded == diff.model_dump()
    whole = diff_snapshots(states.s0.snapshot(), states.sT.snapshot())
    assert read == whole  # the diff two whole snapshots give


def test_changes_are_refused_once_the_checks_time_is_up(env: SqliteEnvironment) -> None:
    kept: list[Any] = []

    def keeps_its_view(s: States) -> None:
        kept.append(s.sT)
        raise DeadlineExceeded("pretend")

    with pytest.raises(DeadlineExceeded):
        within_limit(keeps_its_view, _states(env, StateDiff()), 5, "keeps")
    kept[0].expire()
    with pytest.raises(DeadlineExceeded, match="time limit has passed"):
        kept[0].changes()
    with pytest.raises(DeadlineExceeded, match="time limit has passed"):
        kept[0].snapshot()


def test_a_view_of_s0_still_copies_the_builds_snapshot(env: SqliteEnvironment) -> None:
    view = env.initial_view()
    assert isinstance(view, SqliteView)
    first = view.snapshot()
    first.tables["items"].rows.clear()
    assert len(view.snapshot().tables["items"].rows) == 3
