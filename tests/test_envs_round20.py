"""Twentieth environments audit: the same SQL, on the same fixture, answered and stored alike
by the SQLite and PostgreSQL kinds (the parity promise), found by a differential test.

Where PostgreSQL answered otherwise with no error, or failed where SQLite answered:

- a REAL literal (``0.1``, ``1e3``) was PostgreSQL's exact ``numeric``: ``0.1 + 0.2`` was
  ``0.3`` (SQLite's ``0.30000000000000004``), ``5.5 % 2`` was ``1.5`` (SQLite's ``1.0``),
  ``1e308 * 10`` a 309-digit integer (SQLite's ``Inf``). Now a ``double precision``.
- ``CAST(x AS INTEGER)`` was PostgreSQL's 32-bit, failing past 2^31 and on text that is not
  a number (SQLite: 64 bits, clamped; ``'12abc'`` is 12, ``'abc'`` 0). Now SQLite's.
- ``a / 0`` and ``a % 0`` failed ("division by zero"); SQLite gives NULL. Now NULL.
- ``sum()``, ``avg()`` and ``total()`` of REALs past the double range failed; SQLite gives
  ``Inf``. Now ``Inf``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from groundstate.environments.sqlite import SqliteEnvironment

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
    "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, r REAL, s TEXT, b BLOB);\n"
    "INSERT INTO t VALUES (1, 4, 1.5, 'a', x'00ff'), (2, 3, 2.0, NULL, NULL),"
    " (3, NULL, NULL, '', x''), (4, 3000000000, 1e300, '5', NULL),"
    " (5, -7, -0.0, 'é', NULL), (6, 0, 0.1, '2026-01-15', x'41');\n"
)

fixture = fixture_of(FIXTURE)


# --- what was answered otherwise, each now SQLite's on both kinds --------------------------------

ANSWERED_ALIKE = [
    # REAL literals were PostgreSQL's numeric: another value, no error
    "SELECT 0.1 + 0.2, 1.5 * 3, 1e3, 2.5e-3 * 4",
    "SELECT sum(v) FROM (SELECT 0.1 AS v UNION ALL SELECT 0.2 UNION ALL SELECT 0.3) q",
    "SELECT 99999999999999999999 + 0, 10 / 4.0, 1.0 * n FROM t ORDER BY id",
    "SELECT 5.5 % 2, -7.5 % 2, 7 % 2.5, r % 2 FROM t ORDER BY id",
    "SELECT id FROM t WHERE r > 0.1 ORDER BY id",
    "SELECT CAST(0.1 + 0.2 AS TEXT), 0.1 + 0.2 = 0.3",
    # CAST(... AS INTEGER): 64 bits, clamped, text by its leading digits
    "SELECT CAST(3000000000 AS INTEGER), CAST(-1e20 AS INTEGER), CAST(1e20 AS BIGINT)",
    "SELECT CAST(n AS INTEGER), CAST(r AS INT) FROM t WHERE abs(r) < 1e18 ORDER BY id",
    "SELECT CAST(s AS INTEGER), CAST(n * 1000000 AS INTEGER) FROM t ORDER BY id",
    "SELECT CAST('12abc' AS INTEGER), CAST('  -7' AS INTEGER), CAST('1e3' AS INTEGER), "
    "CAST('99999999999999999999' AS INTEGER), CAST(NULL AS INTEGER), CAST('' AS INTEGER)",
    "SELECT CAST(2.9 AS INTEGER), CAST(-2.9 AS INTEGER), CAST(n > 3 AS INTEGER) FROM t",
    "SELECT id FROM t WHERE CAST(s AS INTEGER) = 5",
    # division and remainder by zero: NULL
    "SELECT 1 / 0, 1.0 / 0, 7 % 0, 7.5 % 0.5",
    "SELECT n / 0, r / 0, n % 0, n / (id - 1), r / n FROM t ORDER BY id",
    "SELECT -7 / 2, -7 % 3, 7 / -2, n / 2, n % 3 FROM t ORDER BY id",
    # sums of REALs past the double range: Inf
    "SELECT sum(r), avg(r), total(r) FROM t",
    "SELECT sum(r) FROM t WHERE id > 100",
    "SELECT sum(v), avg(v), total(v) FROM (SELECT 1e308 AS v UNION ALL SELECT 1e308) q",
    "SELECT sum(v), avg(v) FROM (SELECT -1e308 AS v UNION ALL SELECT -1e308) q",
    "SELECT avg(n), sum(n) FROM t",
    # controls, alike before: a REAL made text by ||, integer division and remainder
    "SELECT id, r || '', 'x' || r, 1.0 || '', 2.5e20 || 'x' FROM t ORDER BY id",
    "SELECT CAST('Infinity' AS REAL), CAST('nan' AS REAL), CAST(r AS TEXT) FROM t",
]


@pytest.mark.parametrize("sql", ANSWERED_ALIKE)
def test_the_same_sql_is_answered_alike(fixture: Path, sql: str) -> None:
    assert_answered_alike(fixture, sql)


def test_a_check_clause_casts_as_sqlite(tmp_path: Path) -> None:
    """A fixture's CHECK is SQLite's meaning too: ``CAST(code AS INTEGER)`` of a text past
    2^31 is the 64-bit value (PostgreSQL's 32-bit cast refused every row)."""
    path = tmp_path / "c.sql"
    path.write_text(
        "CREATE TABLE c (id INTEGER PRIMARY KEY, code TEXT "
        "CHECK (CAST(code AS INTEGER) > 2000000000));\n"
        "INSERT INTO c VALUES (1, '3000000000');\n"
    )
    ours, theirs = both(path)
    with ours, theirs:
        for code in ("4000000000x", "5", "abc"):
            sql = "INSERT INTO c (code) VALUES (?)"
            assert ask(theirs, sql, (code,)) == ask(ours, sql, (code,)), code
            assert theirs.state_hash() == ours.state_hash(), code


# --- generated: the same tool calls, over many kinds of value ------------------------------------

NUMBERS: list[Any] = [
    None, 0, 1, -1, 7, 2**31, -(2**31) - 1, 2**53 + 1, 2**63 - 1, -(2**63),
    0.0, -0.0, 0.1, 2.5, -4.0, 1e15, 1e20, 1e-7, 1e300, 2.0**53,
]  # fmt: skip
TEXTS: list[Any] = [
    None, "", "x", "é", "日本", "emoji \U0001f600", " 5 ", "5", "-0", "1e3", "NaN", "Infinity",
    "2026-01-15", "2026-01-15T09:30:00", "true", "0x10", "a'b", 'q"q', "%_\\", "abc",
]  # fmt: skip
BYTES: list[Any] = [None, b"", b"\x00", b"\xff\xfe", b"abc"]
ANY = NUMBERS + TEXTS + BYTES
"""Parameters a tool passes through: NULL, empty and unicode text, numbers at the edges of
32 and 64 bits and of a double, negative zero, text that only looks like a number or a
date, bytes. A text parameter is passed where text goes (see ``KNOWN``)."""
CALLS: list[tuple[str, list[Any]]] = [
    ("INSERT INTO t (n) VALUES (?)", NUMBERS + BYTES),
    ("INSERT INTO t (r) VALUES (?)", NUMBERS + BYTES),
    ("INSERT INTO t (s) VALUES (?)", ANY),
    ("INSERT INTO t (b) VALUES (?)", NUMBERS + BYTES),
    ("INSERT INTO t (n, r, s) VALUES (?, ?, ?)", NUMBERS),
    ("UPDATE t SET s = ? WHERE id = 1", ANY),
    ("UPDATE t SET r = ? WHERE id = 2", NUMBERS + BYTES),
    ("UPDATE t SET n = ? WHERE id = 3", NUMBERS + BYTES),
    ("UPDATE t SET b = ? WHERE id = 6", NUMBERS + BYTES),
    ("UPDATE t SET s = s || ? WHERE id = 6", NUMBERS + TEXTS),
    ("UPDATE t SET n = n + ? WHERE id = 1", NUMBERS),
    ("UPDATE t SET r = r * ? WHERE id = 5", NUMBERS),
    ("UPDATE t SET r = CAST(? AS REAL) WHERE id = 3", ANY[: -len(BYTES)]),
    ("UPDATE t SET n = CAST(? AS INTEGER) WHERE id = 2", ANY[: -len(BYTES)]),
    ("UPDATE t SET n = CAST(s AS INTEGER) WHERE id = ?", NUMBERS),
    ("UPDATE t SET r = n / ? WHERE id = 4", NUMBERS),
    ("DELETE FROM t WHERE id > 6 AND s = ?", NUMBERS + TEXTS),
    ("DELETE FROM t WHERE id > 6 AND n = ?", NUMBERS),
    ("SELECT id FROM t WHERE s = ? ORDER BY id", NUMBERS + TEXTS),
    ("SELECT id FROM t WHERE n < ? ORDER BY id", NUMBERS),
    ("SELECT id FROM t WHERE r >= ? ORDER BY id", NUMBERS),
    ("SELECT id FROM t WHERE b = ? ORDER BY id", BYTES),
    ("SELECT id, n / ?, r / ?, n % ? FROM t ORDER BY id", NUMBERS),
    ("SELECT sum(r), avg(r), total(n), avg(n) FROM t WHERE id <> ?", NUMBERS),
    ("SELECT id, length(s), s || ? FROM t ORDER BY id", TEXTS),
]
KNOWN = """Still different (docs/environments.md): a text parameter in a number's or bytes' place
(PostgreSQL reads it as the column's type where it can, ``'5'`` as 5 and ``'x'`` as bytes,
and fails otherwise; SQLite keeps the text), and a parameter of one type used where the
expression gives another (``coalesce(?, 'none')`` given a number)."""


@pytest.mark.parametrize("seed", range(1, 13))
def test_generated_tool_calls_store_and_answer_alike(fixture: Path, seed: int) -> None:
    assert_generated_alike(fixture, CALLS, seed)


# --- one type of value per column, on both kinds ------------------------------------------------

WRONG_CLASS = [
    ("INSERT INTO t (r) VALUES (?)", ("abc",), "t.r", "a REAL"),
    ("UPDATE t SET r = ? WHERE id = 1", (b"\x00",), "t.r", "a REAL"),
    ("UPDATE t SET b = ? WHERE id = 1", (2.5,), "t.b", "bytes"),
    ("INSERT INTO t (b) VALUES (?)", (7,), "t.b", "bytes"),
    ("UPDATE t SET s = ? WHERE id = 1", (b"abc",), "t.s", "text"),
    ("INSERT INTO t (n) VALUES (?)", (b"\x01",), "t.n", "an integer"),
    ("UPDATE t SET n = 'abc' WHERE id = 1", (), "t.n", "an integer"),
]


@pytest.mark.parametrize(("sql", "params", "column", "kind"), WRONG_CLASS)
def test_a_value_of_another_type_is_refused_on_both_kinds(
    fixture: Path, sql: str, params: tuple[Any, ...], column: str, kind: str
) -> None:
    """SQLite kept ``'abc'`` in a REAL column, 2.5 in a BLOB one, bytes in a TEXT one (which
    PostgreSQL stored as their ``\\x`` hex text), and PostgreSQL failed or changed the write:
    the two kinds' states differed. Both refuse it now, SQLite naming the column."""
    ours, theirs = both(fixture)
    with ours, theirs:
        initial = ours.state_hash()
        with pytest.raises(Exception) as caught, ours.tool_transaction():
            ours.agent_db.execute(sql, params)
        assert f"column {column}: the value is not {kind}" in str(caught.value)
        assert ask(theirs, sql, params) == "error"
        assert ours.state_hash() == theirs.state_hash() == initial


def test_a_column_the_fixture_mixes_types_in_stays_as_sqlite_keeps_it(tmp_path: Path) -> None:
    """Control: a fixture whose REAL column already holds text (SQLite-only: the postgres kind
    refuses to carry it) keeps SQLite's own typing; a column of NUMERIC affinity too."""
    path = tmp_path / "mixed.sql"
    path.write_text(
        "CREATE TABLE m (id INTEGER PRIMARY KEY, r REAL, d DECIMAL);\n"
        "INSERT INTO m VALUES (1, 'n/a', 1.5);\n"
    )
    with SqliteEnvironment(path, clock=CLOCK) as env:
        with env.tool_transaction():
            env.agent_db.execute("INSERT INTO m (r, d) VALUES ('x', 'y')")
        assert env.evaluator_view().query("SELECT r, d FROM m WHERE id = 2") == [("x", "y")]


def test_a_nan_parameter_is_stored_as_null_on_both_kinds(fixture: Path) -> None:
    """SQLite has no NaN: a ``float('nan')`` a tool passes is stored as NULL. PostgreSQL
    stored NaN, and the states differed."""
    ours, theirs = both(fixture)
    with ours, theirs:
        for sql in ("UPDATE t SET r = ? WHERE id = 1", "INSERT INTO t (r) VALUES (?)"):
            assert ask(theirs, sql, (math.nan,)) == ask(ours, sql, (math.nan,))
        assert ours.state_hash() == theirs.state_hash()
        assert theirs.evaluator_view().query("SELECT r FROM t WHERE id IN (1, 7)") == [
            (None,),
            (None,),
        ]


def test_negative_zero_in_a_real_column_is_stored_as_sqlite_stores_it(fixture: Path) -> None:
    """SQLite keeps a whole REAL as an integer, so ``-0.0`` written to a REAL column reads
    back ``0.0``; PostgreSQL kept ``-0.0`` and the final states hashed otherwise."""
    ours, theirs = both(fixture)
    with ours, theirs:
        for sql, params in [
            ("UPDATE t SET r = r * -1 WHERE id = 5", ()),
            ("UPDATE t SET r = 0.0 * -1 WHERE id = 1", ()),
            ("INSERT INTO t (r) VALUES (?)", (-0.0,)),
            ("UPDATE t SET r = ? WHERE id = 2", (-0.0,)),
        ]:
            assert ask(theirs, sql, params) == ask(ours, sql, params)
            assert ours.state_hash() == theirs.state_hash(), sql
        assert ours.snapshot() == theirs.snapshot()


# --- malformed fixtures: a clear error naming the file and the reason (controls) ----------------

_TABLE = b"CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT);\n"
MALFORMED = {
    "bad_sql.sql": (_TABLE + b"INSERT INTO a VALUES (1, ;\n", "syntax error"),
    "not_utf8.sql": (_TABLE + b"INSERT INTO a VALUES (1, '\xff');\n", "not UTF-8"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_fixture_is_named_with_its_reason_on_both_kinds(
    tmp_path: Path, name: str
) -> None:
    content, reason = MALFORMED[name]
    path = tmp_path / name
    path.write_bytes(content)
    for kind in (SqliteEnvironment, _postgres()):
        with pytest.raises(Exception) as caught:
            kind(path, clock=CLOCK).close()
        assert str(path) in str(caught.value) and reason in str(caught.value), kind
    assert path.read_bytes() == content  # the file is left as it was
