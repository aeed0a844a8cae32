"""Twentieth environments audit, second pass: what the first pass's differential test left
answered otherwise by the SQLite and PostgreSQL kinds.

- Two columns, text and a number (``code = qty``): SQLite compares by number (the number
  column's affinity), PostgreSQL compared as text. A string literal against a number literal
  (``'3' = 3``): SQLite's type order (false), PostgreSQL read ``'3'`` as 3 (true) and failed
  on ``'a' > 1``. Now SQLite's on both.
- SQLite's functions (``typeof``, ``ifnull``, ``iif``, ``instr``, ``hex``, ``group_concat``,
  ``length`` and ``substr`` of a number, ``max(a, b)``, ``date``/``time``/``datetime``/
  ``julianday``/``strftime``) were "function does not exist" on PostgreSQL, and
  ``date('now')`` its server's date, not the task's clock. Now SQLite's meaning on both,
  or a clear refusal naming what is not carried.
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
    both,
    fixture_of,
)
from .test_validation_round15 import _postgres

FIXTURE = (
    "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, r REAL, s TEXT, b BLOB, code TEXT,"
    " d TEXT);\n"
    "INSERT INTO t VALUES (1, 4, 1.5, 'a', x'00ff', '4', '2026-01-31'),"
    " (2, 3, 2.0, NULL, NULL, '03', '2026-01-15 09:30:00'),"
    " (3, NULL, NULL, '', x'', 'abc', NULL), (4, 3000000000, 1e300, '5', NULL, ' 5', 'x'),"
    " (5, -7, -0.0, 'é', NULL, '-7.0', '2024-02-29T23:59:59.250'),"
    " (6, 0, 0.1, '2026-01-15', x'41', '1e1', '12:30');\n"
)

fixture = fixture_of(FIXTURE)


ANSWERED_ALIKE = [
    # two columns, text and a number: by number where the text reads as one
    "SELECT id FROM t WHERE code = n ORDER BY id",
    "SELECT id FROM t WHERE t.code < t.n ORDER BY id",
    "SELECT id, code = n, n <> code, code >= n, n > code FROM t ORDER BY id",
    "SELECT a.id, b.id FROM t a JOIN t b ON a.code = b.n ORDER BY a.id, b.id",
    "SELECT id FROM t WHERE s = code OR r = code ORDER BY id",
    # a string literal against a number literal: SQLite's type order
    "SELECT '3' = 3, 3 = '3', '3' < 3, 'a' > 1, '1' <> 1, 9 < 'x'",
    # SQLite's functions
    "SELECT id, typeof(n), typeof(r), typeof(s), typeof(b), typeof(NULL), typeof(1), "
    "typeof(1.5), typeof('x') FROM t ORDER BY id",
    "SELECT id, ifnull(n, -1), ifnull(s, 'none'), ifnull(NULL, NULL) FROM t ORDER BY id",
    "SELECT id, iif(n > 3, 'big', 'small'), iif(n, 1, 0), iif(r, 'y', 'n') FROM t ORDER BY id",
    "SELECT id, instr(s, 'a'), instr(code, '0'), instr(b, b), instr(n, '0') FROM t ORDER BY id",
    "SELECT id, hex(b), hex(s), hex(n), hex(r), hex(NULL) FROM t ORDER BY id",
    "SELECT id, length(n), length(r), length(s), length(b) FROM t ORDER BY id",
    "SELECT id, substr(n, 2), substr(n, -3, 2), substr(r, 1, 3) FROM t ORDER BY id",
    "SELECT group_concat(s), group_concat(n, ';'), group_concat(r) "
    "FROM (SELECT * FROM t ORDER BY id) q",
    "SELECT group_concat(code, ' | ') FROM (SELECT code, id FROM t ORDER BY id) q WHERE id > 9",
    "SELECT id, max(n * 1.0, r), min(n, 2), max(n, 1, id) FROM t ORDER BY id",
    # the date functions, on the task's clock
    "SELECT date('now'), time('now'), datetime('now'), julianday('now'), "
    "strftime('%Y-%m-%d %H:%M:%S', 'now')",
    "SELECT date('now', '+1 day'), date('2026-01-31', '+1 month'), "
    "date('2026-03-15', 'start of month', '-1 day'), datetime('now', '-90 minutes'), "
    "date('2026-01-15', 'weekday 0'), date('2026-01-15', '+1.5 days'), "
    "date('2026-01-15', 'bogus'), date('x'), date(NULL), date('2026-12-31', '+2 years')",
    "SELECT id, date(d), time(d), datetime(d), julianday(d), strftime('%w %W %j %f %s %%', d) "
    "FROM t ORDER BY id",
    "SELECT id FROM t WHERE date(d) < date('now') ORDER BY id",
    "SELECT datetime(1767225600, 'unixepoch'), date(2461056.5), strftime('%s', '2026-01-01')",
    # controls: a column against a literal keeps the text column's affinity
    "SELECT id FROM t WHERE code = 4 ORDER BY id",
    "SELECT id FROM t WHERE n = '4' ORDER BY id",
    "SELECT id FROM t WHERE code = '03' ORDER BY id",
    "SELECT a.id FROM t a JOIN t b ON a.n = b.n AND a.s = b.s ORDER BY a.id",
    "SELECT id, length(s), substr(s, 2), max(id) OVER () FROM t ORDER BY id",
]


@pytest.mark.parametrize("sql", ANSWERED_ALIKE)
def test_the_same_sql_is_answered_alike(fixture: Path, sql: str) -> None:
    assert_answered_alike(fixture, sql)


NOT_CARRIED = [
    ("SELECT date('now', 'localtime')", "the date modifier localtime"),
    ("SELECT date('2026-01-15', '+0.5 months')", "a fraction of a month"),
    ("SELECT strftime('%J', 'now')", "%J is not carried"),
    ("SELECT date(code) FROM t", "the Julian day 4 is not carried"),
    ("SELECT date('2026-02-30')", "a day past the end of its month"),
    ("SELECT datetime('2026-01-15 09:30+02:00')", "a time zone"),
    ("SELECT datetime('2026-01-15 09:30:00Z')", "a time zone"),
    ("SELECT date('0000-01-01')", "the year 0000"),
]


@pytest.mark.parametrize(("sql", "reason"), NOT_CARRIED)
def test_what_is_not_carried_is_refused_naming_it(fixture: Path, sql: str, reason: str) -> None:
    """What the harness's functions do not mean as SQLite does (a time zone of the
    process, a fraction of a month, a Julian day before year 1) fails naming it, never an
    answer of its own."""
    with _postgres()(fixture, clock=CLOCK) as env:
        with pytest.raises(Exception) as caught, env.tool_transaction():
            env.agent_db.execute(sql).fetchall()
        assert reason in str(caught.value) and "postgres kind" in str(caught.value)


def test_a_default_of_the_clock_is_still_refused_naming_the_column(tmp_path: Path) -> None:
    """Control: ``DEFAULT (datetime('now'))`` now calls the harness's ``datetime``, but its
    value when the fixture is built is not SQLite's (no task clock yet there): still
    FixtureNotCarried, naming the column."""
    from groundstate.errors import FixtureNotCarried

    path = tmp_path / "a.sql"
    path.write_text(
        "CREATE TABLE a (id INTEGER PRIMARY KEY, at TEXT NOT NULL DEFAULT (datetime('now')));\n"
        "INSERT INTO a VALUES (1, '2026-01-01');\n"
    )
    with pytest.raises(FixtureNotCarried) as caught:
        _postgres()(path, clock=CLOCK).close()
    assert "column a.at DEFAULT datetime('now')" in str(caught.value)


def test_integer_overflow_is_an_error_not_another_value(fixture: Path) -> None:
    """Control (still different, documented): past 2^63 SQLite's integer arithmetic gives a
    REAL, which a PostgreSQL expression of a fixed type cannot; it is an error there, never
    a wrapped or rounded integer."""
    ours, theirs = both(fixture)
    with ours, theirs:
        sql = "SELECT n * 4000000000 FROM t WHERE id = 4"
        assert ask(ours, sql) == [(1.2e19,)]
        assert ask(theirs, sql) == "error"


def test_a_join_of_two_columns_keeps_its_plan(fixture: Path) -> None:
    """The comparison of two columns is the harness's function, inlined by the planner: a
    join of one type keeps its hash condition (a function call would scan every pair)."""
    with _postgres()(fixture, clock=CLOCK) as env:
        plan = env.evaluator_view().query("EXPLAIN SELECT a.id FROM t a JOIN t b ON a.n = b.n")
        text = "\n".join(row[0] for row in plan)
        assert "Cond: (a.n = b.n)" in text and "cmp_" not in text


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE t SET a = b, c = d WHERE id = 1",
        "SELECT CAST(x AS time(3)), x.date(1) FROM t",
        "SELECT a + b = c, a = b + c, a = f(b), -a = b, a = ? FROM t",
        "INSERT INTO t (a) VALUES (?) ON CONFLICT (id) DO UPDATE SET a = excluded.a",
    ],
)
def test_what_is_not_a_comparison_of_two_columns_is_left_as_written(sql: str) -> None:
    """Control: assignments, expressions on either side and type names are not rewritten."""
    assert "cmp_" not in sqlite_meaning(sql) and "sqlite_" not in sqlite_meaning(sql)


# --- generated: writes of text and numbers, then the comparisons and functions --------------

CODES: list[Any] = [
    None, "", "4", "03", " 5 ", "5.0", "-7", "1e1", "+2", ".5", "1.", "abc", "0x10", "NaN",
    "Infinity", "99999999999999999999", "é", "2026-01-15",
]  # fmt: skip
NUMBERS: list[Any] = [None, 0, 1, -7, 3, 4, 5, 10, 2**31, -(2**40), 2**62]
DATES: list[Any] = [
    None, "", "now", "2026-01-31", "2026-02-28", "2024-02-29 12:00", "2026-13-01",
    "2026-01-15T09:30:00",
    "2026-01-15 09:30:00.5", "23:59", "x", "2026-1-5", "2026-01-15Z",
]  # fmt: skip
MODIFIERS: list[Any] = [
    "+1 day", "-2 months", "+1 year", "start of month", "start of year", "start of day",
    "weekday 1", "+36 hours", "-0.5 days", "+90 minutes", "bogus", "+1 months",
]  # fmt: skip
CALLS: list[tuple[str, Any]] = [
    ("UPDATE t SET code = ? WHERE id = 1", CODES),
    ("UPDATE t SET code = ? WHERE id = 3", CODES),
    ("UPDATE t SET n = ? WHERE id = 2", NUMBERS),
    ("UPDATE t SET d = ? WHERE id = 4", DATES),
    ("INSERT INTO t (n, code, d) VALUES (?, ?, ?)", [NUMBERS, CODES, DATES]),
    ("SELECT id, code = n, code < n, n >= code, code <> n FROM t ORDER BY id", []),
    ("SELECT a.id, b.id FROM t a JOIN t b ON a.code = b.n ORDER BY a.id, b.id", []),
    (
        "SELECT id, typeof(code), ifnull(code, 'z'), instr(code, '0'), hex(code) "
        "FROM t ORDER BY id",
        [],
    ),
    ("SELECT id, length(n), hex(n), substr(n, 2), iif(n, code, s) FROM t ORDER BY id", []),
    ("SELECT group_concat(code, '/') FROM (SELECT code FROM t ORDER BY id) q", []),
    (
        "SELECT id, date(d), datetime(d), julianday(d), strftime('%j %W %w', d) FROM t ORDER BY id",
        [],
    ),
    ("SELECT id, date(d, ?), datetime(d, ?, 'start of day') FROM t ORDER BY id", MODIFIERS),
    ("SELECT date(?, ?, ?)", [DATES, MODIFIERS, MODIFIERS]),
    ("SELECT date(?, ?)", [DATES, MODIFIERS]),
]
"""Each call and the values of its parameters (one pool, or one per parameter)."""


@pytest.mark.parametrize("seed", range(1, 17))
def test_generated_comparisons_and_functions_answer_alike(fixture: Path, seed: int) -> None:
    assert_generated_alike(fixture, CALLS, seed, count=25)
