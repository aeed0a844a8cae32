"""Twenty-first environments audit: comparisons the SQLite and PostgreSQL kinds answered
otherwise with no error, and SQLite-only literals PostgreSQL misread.

- SQLite converts a comparison's sides by where they come from: a column (or a ``CAST``)
  has its type's affinity, any other expression, literal or parameter none. The rewriting
  saw only two columns; with an expression or parameter on one side the harness's operators
  took the left side's affinity, and with none on either side compared text and a number as
  text. ``strftime('%Y', d) = 2026`` (SQLite: no row, by type order) found rows on
  PostgreSQL, ``? = code`` and ``qty + 0 = code`` compared by number where SQLite compares as
  text, ``count(*) = '3'`` was true. A grader's query or a tool's ``UPDATE ... WHERE`` then
  read or wrote other rows. Now SQLite's on both (``groundstate.left_/right_/plain_<op>``).
- ``qty = ?`` (or ``qty = 'abc'``) given text that is not a number failed on PostgreSQL
  (read as an integer); SQLite compares by type order. Now SQLite's.
- ``==`` was no PostgreSQL operator; ``x'00ff'`` was a bit string (an insert into a BLOB
  column failed). Now ``=`` and bytes.
- Integer arithmetic past 2^63 (a REAL on SQLite) is still an error on PostgreSQL, now one
  naming what is not carried.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from groundstate.environments.postgres_sql import sqlite_meaning

from .envs_differential import (
    CLOCK,
    ask,
    assert_answered_alike,
    assert_generated_alike,
    assert_written_alike,
    both,
    fixture_of,
)
from .test_validation_round15 import _postgres

FIXTURE = (
    "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, r REAL, s TEXT, b BLOB, code TEXT,"
    " d TEXT);\n"
    "INSERT INTO t VALUES (1, 4, 1.5, 'a', x'00ff', '4', '2026-01-31'),"
    " (2, 5, 2.0, NULL, NULL, '05', '2026-01-15 09:30:00'),"
    " (3, NULL, NULL, '', x'', 'abc', NULL), (4, 2026, -0.5, '5', x'41', ' 5', '2025-12-31'),"
    " (5, -7, 5.0, 'é', NULL, '5.0', '2026-02-01');\n"
)

fixture = fixture_of(FIXTURE)


# --- answered otherwise before, each now SQLite's on both kinds ----------------------------------

ANSWERED_ALIKE: list[tuple[str, tuple[Any, ...]]] = [
    # neither side has an affinity: text and a number by type order
    ("SELECT id FROM t WHERE strftime('%Y', d) = 2026 ORDER BY id", ()),
    ("SELECT id FROM t WHERE substr(d, 1, 4) >= 2026 ORDER BY id", ()),
    ("SELECT count(*) = '5', count(*) > '1', sum(n) <> '2028' FROM t", ()),
    ("SELECT id, n + 0 = '5', n * 1 < 'x' FROM t ORDER BY id", ()),
    ("SELECT id FROM t WHERE ? = ? + 0 ORDER BY id", ("5", 5)),
    # the right side only: the left takes its affinity
    ("SELECT id FROM t WHERE ? = code ORDER BY id", (5,)),
    ("SELECT id FROM t WHERE ? < code ORDER BY id", (4,)),
    ("SELECT id FROM t WHERE n + 0 = code ORDER BY id", ()),
    ("SELECT id FROM t WHERE length(code) + 3 = code ORDER BY id", ()),
    ("SELECT id FROM t WHERE code || '' = n ORDER BY id", ()),
    ("SELECT id FROM t WHERE 'abc' > n ORDER BY id", ()),
    ("SELECT id, CASE WHEN n * 1 >= code THEN 'y' ELSE 'n' END FROM t ORDER BY id", ()),
    # the left side only, beside text that is not a number: by type order, not an error
    ("SELECT id FROM t WHERE n = ? ORDER BY id", ("abc",)),
    ("SELECT id FROM t WHERE n < ? ORDER BY id", ("x",)),
    ("SELECT id FROM t WHERE r >= 'abc' ORDER BY id", ()),
    ("SELECT id FROM t WHERE n <> ? ORDER BY id", ("5",)),
    # SQLite's == and blob literals
    ("SELECT id FROM t WHERE n == 4 OR code == '05' ORDER BY id", ()),
    ("SELECT id FROM t WHERE b = x'00ff' OR b = X'41' ORDER BY id", ()),
    ("SELECT hex(x'00ff'), length(x''), x'41' = x'41'", ()),
]


@pytest.mark.parametrize(("sql", "params"), ANSWERED_ALIKE)
def test_the_same_comparison_is_answered_alike(
    fixture: Path, sql: str, params: tuple[Any, ...]
) -> None:
    assert_answered_alike(fixture, sql, params)


WRITES: list[tuple[str, tuple[Any, ...]]] = [
    ("UPDATE t SET s = 'hit' WHERE strftime('%Y', d) = 2026", ()),
    ("UPDATE t SET s = 'hit' WHERE ? = code", (5,)),
    ("DELETE FROM t WHERE n + 0 = code", ()),
    ("UPDATE t SET n = n + 1 WHERE code || '' = n", ()),
    ("UPDATE t SET s = (n * 1 = code) WHERE id = 2", ()),
    ("DELETE FROM t WHERE n = ?", ("abc",)),
    ("INSERT INTO t (b) VALUES (x'00ff'), (x'')", ()),
    ("UPDATE t SET b = x'0102' WHERE id == 3", ()),
]


@pytest.mark.parametrize(("sql", "params"), WRITES)
def test_a_write_by_such_a_comparison_leaves_the_same_state(
    fixture: Path, sql: str, params: tuple[Any, ...]
) -> None:
    """The rows a tool's write chose by such a comparison were other rows on PostgreSQL (or
    the write failed there): the final states, and so the verdicts, differed."""
    assert_written_alike(fixture, sql, params)


def test_a_fixture_check_compares_as_sqlite(tmp_path: Path) -> None:
    """A CHECK comparing an expression with text is SQLite's meaning too."""
    path = tmp_path / "c.sql"
    path.write_text(
        "CREATE TABLE c (id INTEGER PRIMARY KEY, code TEXT CHECK (length(code) + 0 < '9'));\n"
        "INSERT INTO c VALUES (1, 'abc');\n"
    )
    ours, theirs = both(path)
    with ours, theirs:
        for code in ("x" * 12, "5"):
            sql = "INSERT INTO c (code) VALUES (?)"
            assert ask(theirs, sql, (code,)) == ask(ours, sql, (code,)), code
            assert theirs.state_hash() == ours.state_hash(), code


def test_integer_overflow_is_refused_naming_what_is_not_carried(fixture: Path) -> None:
    """Still different (documented): past 2^63 SQLite's integer arithmetic is a REAL; on
    PostgreSQL an error, which now says so (it said only "bigint out of range")."""
    ours, theirs = both(fixture)
    with ours, theirs:
        sql = "SELECT n * 4000000000000000000 FROM t WHERE id = 1"
        assert ask(ours, sql) == [(1.6e19,)]
        with pytest.raises(Exception) as caught, theirs.tool_transaction():
            theirs.agent_db.execute(sql).fetchall()
        assert "integer arithmetic past 2^63 is not carried to the postgres kind" in str(
            caught.value
        )
        with pytest.raises(Exception) as caught:
            theirs.evaluator_view().query(sql)
        assert "past 2^63" in str(caught.value)
        initial = theirs.state_hash()
        assert ask(theirs, "UPDATE t SET r = n * 9223372036854775807 WHERE id = 1") == "error"
        assert theirs.state_hash() == initial


def test_a_comparison_keeps_its_index(fixture: Path) -> None:
    """Control: a key compared with a number parameter, on either side, keeps its index
    (the harness's functions are inlined for two numbers)."""
    with _postgres()(fixture, clock=CLOCK) as env:
        for sql in ("EXPLAIN SELECT * FROM t WHERE id = ?", "EXPLAIN SELECT * FROM t WHERE ? = id"):
            plan = "\n".join(row[0] for row in env.evaluator_view().query(sql, (2,)))
            assert "Index" in plan and "_eq" not in plan, plan


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE t SET a = b, c = d WHERE id = 1",
        "SELECT a FROM t WHERE id = 5 AND s = code2",
        "SELECT a FROM t WHERE (SELECT max(id) FROM t) = ?",
        "SELECT a FROM t WHERE (a, b) = (1, 2) OR a = b COLLATE NOCASE OR a = b = c",
        "INSERT INTO t (a) VALUES (?) ON CONFLICT (id) DO UPDATE SET a = excluded.a",
        "SELECT 'x = 1' FROM t -- a = 1",
    ],
)
def test_what_the_rewriting_cannot_tell_is_left_as_written(sql: str) -> None:
    """Control: assignments, a column beside a number, subqueries, rows of values, chains and
    collations are not wrapped (nor anything in a string or comment)."""
    rewritten = sqlite_meaning(sql)
    assert "left_" not in rewritten and "right_" not in rewritten and "plain_" not in rewritten
    assert "cmp_" not in rewritten or "s = code2" in sql


# --- generated: comparisons of every kind of side, reading and writing ---------------------------

VALUES: list[Any] = [
    None, 0, 4, 5, -7, 2026, 2**40, 1.5, 5.0, -0.5, "", "4", "05", " 5", "5.0", "abc", "2026",
    "x", "1e1",
]  # fmt: skip
NUMBERS: list[Any] = [None, 0, 4, 5, -7, 2026, 1.5, 5.0]
CALLS: list[tuple[str, list[Any]]] = [
    ("SELECT id FROM t WHERE ? = code ORDER BY id", VALUES),
    ("SELECT id FROM t WHERE ? < n ORDER BY id", VALUES),
    ("SELECT id FROM t WHERE n = ? ORDER BY id", VALUES),
    ("SELECT id FROM t WHERE r > ? ORDER BY id", VALUES),
    ("SELECT id FROM t WHERE code >= ? ORDER BY id", VALUES),
    ("SELECT id FROM t WHERE n + 0 = code OR r * 1 < code ORDER BY id", []),
    ("SELECT id FROM t WHERE code || '' = ? ORDER BY id", VALUES),
    ("SELECT id FROM t WHERE substr(d, 1, 4) = ? ORDER BY id", VALUES),
    ("SELECT id, ? = ?, ? < ? FROM t WHERE id = 1", VALUES),
    ("SELECT count(*) = ?, sum(n) > ? FROM t", VALUES),
    ("UPDATE t SET code = ? WHERE id = 2", VALUES[:7] + VALUES[10:]),
    ("UPDATE t SET n = ? WHERE id = 3", NUMBERS[:6]),
    ("UPDATE t SET s = 'w' WHERE ? = code", VALUES),
    ("UPDATE t SET s = 'v' WHERE n * 1 >= ?", VALUES),
    ("UPDATE t SET s = s || '!' WHERE code || '' = n", []),
    ("DELETE FROM t WHERE id > 5 AND ? = code", VALUES),
    ("INSERT INTO t (n, code) VALUES (?, ?)", NUMBERS[:6]),
]
"""Each call and the values of its parameters: numbers, text that reads as a number (with
spaces, a decimal point, an exponent) and text that does not, on either side of columns and
of expressions. Text is not passed where a number is stored (SQLite converts it there)."""


@pytest.mark.parametrize("seed", range(1, 13))
def test_generated_comparisons_store_and_answer_alike(fixture: Path, seed: int) -> None:
    assert_generated_alike(fixture, CALLS, seed)
