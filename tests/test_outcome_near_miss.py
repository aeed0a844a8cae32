"""Near-miss final states judged as a reviewer reading the database would judge them: numbers
by value (``1``, ``1.0``, ``0.1 + 0.2`` and ``0.3``), text exactly, expected rows paired
whenever a pairing exists, rows expected as a set in any order, and rows of a table without a
primary key by their content, not their ``rowid``."""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
import unicodedata
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundstate.environments.base import StateDiff, TableDiff, diff_snapshots
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.environments.sqlite_state import read_snapshot
from groundstate.errors import PermissionDenied
from groundstate.grading.matching import pair_rows, same_row_multisets, same_value
from groundstate.grading.outcome import States, evaluate_assertions
from groundstate.records import CheckResult
from groundstate.spec.task import DiffAssertion, SqlAssertion

FIXTURE = """
CREATE TABLE acc (id TEXT PRIMARY KEY, bal REAL, note);
CREATE TABLE log (line TEXT, amount);
CREATE TABLE tr (id INTEGER PRIMARY KEY AUTOINCREMENT, src TEXT, amount REAL, memo TEXT);
INSERT INTO acc VALUES ('A', 0.1, 1), ('B', 2, 'x');
INSERT INTO log VALUES ('first', 1), ('second', 2), ('first', 1);
"""


@pytest.fixture
def env(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    fixture = tmp_path / "near.sql"
    fixture.write_text(FIXTURE, encoding="utf-8")
    with SqliteEnvironment(fixture, clock=datetime(2024, 1, 1)) as environment:
        environment.reset()
        yield environment


def _graded(env: SqliteEnvironment, writes: list[str], *assertions: Any) -> list[CheckResult]:
    for sql in writes:
        with env.tool_transaction():
            env.agent_db.execute(sql)
    s0 = env.initial_view().snapshot()
    states = States(
        env.initial_view(), env.evaluator_view(), s0, env.diff_from_initial(), Path(".")
    )
    return evaluate_assertions(list(assertions), states)


def _diff(state_diff: dict[str, Any], nothing_else_changed: bool = True) -> DiffAssertion:
    return DiffAssertion.model_validate(
        {"id": "d", "state_diff": state_diff, "nothing_else_changed": nothing_else_changed}
    )


def _sql(sql: str, rows: list[list[Any]], ordered: bool = False) -> SqlAssertion:
    return SqlAssertion(id="s", sql=sql, expect_rows=rows, ordered=ordered)


# --- numbers by value, text exactly ------------------------------------------------------------


def test_an_amount_reached_by_float_arithmetic_is_the_amount(env: SqliteEnvironment) -> None:
    """0.1 + 0.2 is stored as 0.30000000000000004; the oracle that wrote 0.3 and the agent
    that added 0.2 left the same balance."""
    results = _graded(
        env,
        ["UPDATE acc SET bal = bal + 0.2 WHERE id = 'A'"],
        _sql("SELECT bal FROM acc WHERE id = 'A'", [[0.3]]),
        _sql("SELECT id, bal FROM acc", [["A", 0.3], ["B", 2]], ordered=True),
        _diff({"acc": {"changed": [{"key": "A", "set": {"bal": 0.3}}]}}),
    )
    assert [r.passed for r in results] == [True, True, True]
    assert results[0].evidence["rows"] == [[0.30000000000000004]]  # the evidence stays exact


def test_an_added_rows_float_amount_matches_by_value(env: SqliteEnvironment) -> None:
    [result] = _graded(
        env,
        ["INSERT INTO tr (src, amount) VALUES ('A', 0.1 + 0.7)"],
        _diff({"tr": {"added": [{"src": "A", "amount": 0.8}]}}),
    )
    assert result.passed, result.evidence["problems"]


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ("10000000000.01", 1e10),  # a cent on ten billion is a difference
        ("0.31", 0.3),
        ("'0.3'", 0.3),  # text is not a number
        ("NULL", 0),
        ("-0.3", 0.3),
    ],
)
def test_a_different_amount_still_fails(env: SqliteEnvironment, stored: str, expected: Any) -> None:
    results = _graded(
        env,
        [f"UPDATE acc SET bal = {stored}, note = {stored} WHERE id = 'A'"],
        _sql("SELECT note FROM acc WHERE id = 'A'", [[expected]]),
        _diff({"acc": {"changed": [{"key": "A", "set": {"note": expected}}]}}),
    )
    assert [r.passed for r in results] == [False, False]


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ("x ", "x"),  # a trailing space
        ("X", "x"),  # case
        ("", None),  # empty text is not NULL
        (unicodedata.normalize("NFD", "café"), unicodedata.normalize("NFC", "café")),
        ("1", 1),  # text '1' in an untyped column is not the number
    ],
)
def test_text_is_compared_exactly(env: SqliteEnvironment, stored: str, expected: Any) -> None:
    with env.tool_transaction():
        env.agent_db.execute("UPDATE acc SET note = ? WHERE id = 'B'", (stored,))
    results = _graded(
        env,
        [],
        _sql("SELECT note FROM acc WHERE id = 'B'", [[expected]]),
        _diff({"acc": {"changed": [{"key": "B", "set": {"note": expected}}]}}),
    )
    assert [r.passed for r in results] == [False, False]


def test_an_expected_column_the_row_lacks_is_not_matched_as_null(env: SqliteEnvironment) -> None:
    results = _graded(
        env,
        ["INSERT INTO tr (src) VALUES ('A')", "UPDATE acc SET note = NULL WHERE id = 'B'"],
        _diff({"tr": {"added": [{"src": "A", "colour": None}]}}, nothing_else_changed=False),
        _diff({"acc": {"changed": [{"key": "B", "set": {"colour": None}}]}}, False),
    )
    assert [r.passed for r in results] == [False, False]


@given(st.lists(st.sampled_from([1, 1.0, 1.5, 2, 2.0, 10, 10.0, True, -0.0, 0]), max_size=6))
@settings(max_examples=60, deadline=None)
def test_rows_expected_as_a_set_match_in_any_order(values: list[Any]) -> None:
    """Sorting by the raw values' JSON put 1.5 before 1 but after 1.0: equal multisets of
    rows compared unequal, depending on the order."""
    rows = [[value] for value in values]
    for shuffled in itertools.islice(itertools.permutations(rows), 6):
        as_floats = [[float(value)] for [value] in shuffled]
        assert same_row_multisets(rows, as_floats)
        assert same_row_multisets(as_floats, rows)
    if rows:
        assert not same_row_multisets(rows, [*rows[1:], ["1"]])


def test_an_unordered_query_with_ints_and_floats_mixed_passes(env: SqliteEnvironment) -> None:
    [result] = _graded(
        env,
        ["UPDATE acc SET bal = 1.5 WHERE id = 'B'", "UPDATE acc SET bal = 1 WHERE id = 'A'"],
        _sql("SELECT bal FROM acc", [[1], [1.5]]),  # REAL column: 1.0 and 1.5 come back
    )
    assert result.passed, result.evidence


def test_value_equality_is_what_the_docs_say() -> None:
    assert same_value(1, 1.0) and same_value(True, 1) and same_value(0.1 + 0.2, 0.3)
    assert same_value(-0.0, 0) and same_value(70.00000000000001, 70)
    assert not same_value(10**17 + 1, 1e17)  # integers stay exact
    assert not same_value("70", 70) and not same_value(b"x", "x") and not same_value(None, 0)
    assert not same_value(1e10 + 0.01, 1e10) and not same_value(0.1, 0.10000000000001)


# --- expected rows are paired whenever a pairing exists ---------------------------------------


def test_a_loose_expected_row_does_not_take_the_row_a_stricter_one_needs(
    env: SqliteEnvironment,
) -> None:
    [result] = _graded(
        env,
        [
            "INSERT INTO tr (src, amount, memo) VALUES ('A', 1, 'b')",
            "INSERT INTO tr (src, amount, memo) VALUES ('A', 1, 'c')",
        ],
        _diff({"tr": {"added": [{"src": "A"}, {"src": "A", "memo": "b"}]}}),
    )
    assert result.passed, result.evidence["problems"]


def test_two_expected_rows_need_two_added_rows(env: SqliteEnvironment) -> None:
    [result] = _graded(
        env,
        ["INSERT INTO tr (src, amount, memo) VALUES ('A', 1, 'b')"],
        _diff({"tr": {"added": [{"src": "A"}, {"src": "A", "memo": "b"}]}}),
    )
    assert not result.passed and len(result.evidence["problems"]) == 1
    assert result.evidence["problems"][0].startswith("tr: no added row matches")


def _max_matching(wanted: list[dict[str, Any]], rows: list[dict[str, Any]]) -> int:
    """The largest number of expected rows that distinct rows can serve, by brute force."""
    best = 0
    for size in range(len(wanted), 0, -1):
        for chosen in itertools.combinations(range(len(wanted)), size):
            for used in itertools.permutations(range(len(rows)), size):
                if all(
                    all(rows[r].get(c) == v for c, v in wanted[w].items())
                    for w, r in zip(chosen, used, strict=True)
                ):
                    return size
        if best:
            break
    return best


_ROW = st.fixed_dictionaries({}, optional={"a": st.sampled_from([1, 2]), "b": st.just("x")})


@given(st.lists(_ROW, max_size=4), st.lists(_ROW, max_size=4))
@settings(max_examples=150, deadline=None)
def test_pairing_serves_as_many_expected_rows_as_can_be(
    wanted: list[dict[str, Any]], rows: list[dict[str, Any]]
) -> None:
    unmatched, left = pair_rows(wanted, rows)
    served = len(wanted) - len(unmatched)
    assert served == _max_matching(wanted, rows)
    assert len(left) == len(rows) - served


# --- rows of a table without a primary key are their content ----------------------------------


def _no_change(env: SqliteEnvironment, writes: list[str]) -> tuple[bool, str]:
    initial = env.state_hash()
    [result] = _graded(env, writes, _diff({}))
    return result.passed, "same" if env.state_hash() == initial else "moved"


def test_a_keyless_row_deleted_and_inserted_again_as_it_was_is_no_change(
    env: SqliteEnvironment,
) -> None:
    """Its rowid changed, which the state hash leaves out: the diff said 'log: unexpected
    change' for a state whose hash had not moved."""
    writes = ["DELETE FROM log WHERE line = 'second'", "INSERT INTO log VALUES ('second', 2)"]
    assert _no_change(env, writes) == (True, "same")
    assert env.diff_from_initial().is_empty()


def test_keyless_rows_that_swap_contents_are_no_change(env: SqliteEnvironment) -> None:
    writes = [
        "UPDATE log SET line = CASE line WHEN 'first' THEN 'second' ELSE 'first' END, "
        "amount = CASE amount WHEN 1 THEN 2 ELSE 1 END WHERE rowid IN (1, 2)"
    ]
    assert _no_change(env, writes) == (True, "same")


@pytest.mark.parametrize(
    ("writes", "diff"),
    [
        # one of the two identical rows deleted: one fewer
        (["DELETE FROM log WHERE rowid = 3"], {"removed": 1, "added": 0}),
        # inserted again with 1.0 in the untyped column: another row (the hash says so too)
        (
            ["DELETE FROM log WHERE line = 'second'", "INSERT INTO log VALUES ('second', 2.0)"],
            {"removed": 1, "added": 1},
        ),
        # a row changed, and its old content inserted as a new one: one row more
        (
            [
                "UPDATE log SET line = 'third' WHERE rowid = 2",
                "INSERT INTO log VALUES ('second', 2)",
            ],
            {"removed": 0, "added": 1},
        ),
    ],
)
def test_a_real_change_of_keyless_rows_is_still_seen(
    env: SqliteEnvironment, writes: list[str], diff: dict[str, int]
) -> None:
    assert _no_change(env, writes) == (False, "moved")
    table = env.diff_from_initial().tables["log"]
    assert {"removed": len(table.removed), "added": len(table.added)} == diff


def test_a_keyed_row_deleted_and_inserted_again_or_set_to_its_value_is_no_change(
    env: SqliteEnvironment,
) -> None:
    writes = [
        "DELETE FROM acc WHERE id = 'B'",
        "INSERT INTO acc VALUES ('B', 2, 'x')",
        "UPDATE acc SET bal = bal, note = note",
    ]
    assert _no_change(env, writes) == (True, "same")


def test_a_change_in_a_table_the_task_never_names_is_collateral_damage(
    env: SqliteEnvironment,
) -> None:
    [result] = _graded(
        env,
        ["INSERT INTO tr (src) VALUES ('A')", "UPDATE log SET amount = 3 WHERE rowid = 1"],
        _diff({"tr": {"added": [{"src": "A"}]}}),
    )
    assert result.evidence["problems"] == ["log: unexpected change"]


# --- a primary key that names no row ------------------------------------------------------------

KEYS = """
CREATE TABLE c (code TEXT PRIMARY KEY, v TEXT);
CREATE TABLE k (id PRIMARY KEY, v TEXT);
INSERT INTO c VALUES ('a', 'one'), (NULL, 'old');
INSERT INTO k VALUES (x'01', 'blob'), ('plain', 'text');
"""
# k.id holds bytes and text: an untyped column holding only bytes refuses text since the
# twentieth round (a PostgreSQL bytea column could not hold it), and the key test needs both


@pytest.fixture
def keys(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    fixture = tmp_path / "keys.sql"
    fixture.write_text(KEYS, encoding="utf-8")
    with SqliteEnvironment(fixture, clock=datetime(2024, 1, 1)) as environment:
        environment.reset()
        yield environment


def _from_scratch(env: SqliteEnvironment) -> StateDiff:
    with contextlib.closing(sqlite3.connect(env._live)) as connection:
        return diff_snapshots(env.initial_view().snapshot(), read_snapshot(connection))


@pytest.mark.parametrize(
    ("writes", "added", "removed"),
    [
        # SQLite lets a TEXT PRIMARY KEY hold any number of NULLs: each row is one more
        (["INSERT INTO c VALUES (NULL, 'x')", "INSERT INTO c VALUES (NULL, 'x')"], 2, 0),
        (["INSERT INTO c VALUES (NULL, 'x')", "INSERT INTO c VALUES (NULL, 'junk')"], 2, 0),
        (["INSERT INTO c VALUES (NULL, 'old')"], 1, 0),  # the same as the fixture's NULL row
        (["UPDATE c SET v = 'new' WHERE code IS NULL"], 1, 1),  # no identity: content
        (["UPDATE c SET code = 'b' WHERE code IS NULL"], 1, 1),
        (["DELETE FROM c WHERE code IS NULL", "INSERT INTO c VALUES (NULL, 'old')"], 0, 0),
    ],
)
def test_rows_whose_key_is_null_are_each_in_the_diff(
    keys: SqliteEnvironment, writes: list[str], added: int, removed: int
) -> None:
    """Keyed by their NULL key alone, all but one such row were left out of the snapshot: a
    duplicate row the agent added passed a nothing_else_changed expecting one."""
    _graded(keys, writes)
    diff = keys.diff_from_initial()
    table = diff.tables.get("c", TableDiff())
    assert (len(table.added), len(table.removed)) == (added, removed)
    assert diff == _from_scratch(keys)  # the tracked diff is the whole snapshots' diff


def test_a_duplicate_row_under_a_null_key_is_collateral_damage(keys: SqliteEnvironment) -> None:
    writes = ["INSERT INTO c VALUES (NULL, 'x')", "INSERT INTO c VALUES (NULL, 'x')"]
    [result] = _graded(keys, writes, _diff({"c": {"added": [{"v": "x"}]}}))
    assert result.evidence["problems"] == ["c: unexpected added row {'code': None, 'v': 'x'}"]


def test_a_text_key_spelling_a_blobs_repr_is_another_row(keys: SqliteEnvironment) -> None:
    """The blob x'01' and the text "b'\\x01'" had the same snapshot key: the new text row
    read as the blob row changed."""
    [result] = _graded(
        keys,
        ["INSERT INTO k VALUES ('b''\\x01''', 'text')"],
        _diff({"k": {"added": [{"v": "text"}]}}),
    )
    assert result.passed, result.evidence["problems"]
    assert keys.initial_view().snapshot().tables["k"].rows == {
        '{"blob":"01"}': {"id": b"\x01", "v": "blob"},
        '"plain"': {"id": "plain", "v": "text"},
    }


def test_an_insert_taken_back_moves_only_the_counter_which_the_diff_leaves_out(
    env: SqliteEnvironment,
) -> None:
    """As docs/reference/state-diff.md says: the hash sees the AUTOINCREMENT counter, the
    diff does not (undoing is the no_undo constraint's to catch)."""
    writes = ["INSERT INTO tr (src) VALUES ('A')", "DELETE FROM tr"]
    assert _no_change(env, writes) == (True, "moved")


@pytest.mark.parametrize(
    "ddl",
    [
        "CREATE VIEW rich AS SELECT * FROM acc",
        "CREATE INDEX by_bal ON acc (bal)",
        "CREATE TRIGGER later AFTER UPDATE ON acc BEGIN DELETE FROM log; END",
        "CREATE TEMP TABLE scratch (x)",
        "CREATE TEMP TRIGGER t AFTER INSERT ON log BEGIN DELETE FROM acc; END",
        "CREATE TABLE empty (x)",  # no rows: nothing a diff would show
        "ALTER TABLE acc RENAME COLUMN note TO memo",
        "DROP TABLE tr",
    ],
)
def test_schema_the_hash_and_diff_would_not_see_cannot_be_made(
    env: SqliteEnvironment, ddl: str
) -> None:
    """The state hash and the diff cover tables' definitions and rows only (not views,
    indexes or triggers, and an empty new table adds no row): the agent can make none."""
    initial, schema = env.state_hash(), _schema(env)
    with pytest.raises(PermissionDenied), env.tool_transaction():
        env.agent_db.execute(ddl)
    assert env.state_hash() == initial and env.diff_from_initial().is_empty()
    assert _schema(env) == schema


def _schema(env: SqliteEnvironment) -> list[tuple[str, ...]]:
    with contextlib.closing(sqlite3.connect(env._live)) as connection:
        return connection.execute("SELECT type, name, sql FROM sqlite_master ORDER BY 2").fetchall()


@pytest.mark.xfail(
    strict=True,
    reason="known limit (docs/environments.md): TEXT that is not UTF-8 breaks the write log's read",
)
def test_text_that_is_not_utf8_is_state_like_any_other(env: SqliteEnvironment) -> None:
    initial = env.state_hash()
    with env.tool_transaction():
        env.agent_db.execute("UPDATE acc SET note = CAST(x'ff' AS TEXT) WHERE id = 'B'")
    assert env.state_hash() != initial
    assert "acc" in env.diff_from_initial().tables
