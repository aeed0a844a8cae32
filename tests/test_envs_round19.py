"""Nineteenth environments audit: where PostgreSQL stored or answered otherwise than SQLite
without a word, it now gives SQLite's meaning or both kinds refuse alike.

- A non-whole number written to an INTEGER column: SQLite kept the REAL 2.5, PostgreSQL's
  ``bigint`` rounded it (state differed). Both kinds now refuse the write (a tool error).
- ``sum()`` of integers past 2^63: an error on SQLite, a ``numeric`` on PostgreSQL. Both err.
- A REAL as text (``CAST(r AS TEXT)``, a REAL written to a TEXT column): ``'1.0'`` on SQLite,
  ``'1'`` on PostgreSQL. Now SQLite's text on both. ``CAST(2.7 AS INTEGER)`` truncates (2) on
  both, where PostgreSQL rounded (3); ``total()`` exists on both.
"""

from __future__ import annotations

import math
import random
import sqlite3
import struct
from datetime import datetime
from decimal import ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Any

import pytest

from groundstate.environments.base import WHOLE_ONLY
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import ToolError

from .test_validation_round15 import _postgres

CLOCK = datetime(2026, 1, 15, 9, 30)
FIXTURE = (
    "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, r REAL, s TEXT);\n"
    "INSERT INTO t VALUES (1, 4, 1.5, 'a'), (2, 3, 2.0, NULL), (3, NULL, NULL, '');\n"
)
_NUMBERS = [0, 7, -3, 2**62, 2**63 - 1, 2.0, -4.0, 2.5, -0.5, 0.1, 1e15, 1e20, 1e-7, 2**53 + 0.0]
_WRITES = [
    "INSERT INTO t (n) VALUES (?)",
    "INSERT INTO t (s) VALUES (?)",
    "INSERT INTO t (r, s) VALUES (?, ?)",
    "UPDATE t SET n = n * ? WHERE id = 2",
    "UPDATE t SET n = ? WHERE id = 1",
    "UPDATE t SET s = ? WHERE id = 3",
    "UPDATE t SET n = CAST(? AS INTEGER) WHERE id = 3",
    "UPDATE t SET s = CAST(? AS TEXT) WHERE id = 2",
    "UPDATE t SET n = n + 1.5 WHERE id = ?",
]
_QUERIES = [
    "SELECT id, n, r, s FROM t ORDER BY id",
    "SELECT id, CAST(r AS TEXT), CAST(n AS TEXT) FROM t ORDER BY id",
    # PostgreSQL's INTEGER is 32 bits: a cast past 2^31 is its error (SQLite's value), loud
    "SELECT id, CAST(r AS INTEGER) FROM t WHERE abs(r) < 2e9 ORDER BY id",
    "SELECT sum(n), total(n), total(r), count(*) FROM t",
    "SELECT sum(n) FROM t WHERE n < 0",
    "SELECT CAST(2.7 AS INTEGER), CAST(-2.7 AS INTEGER), CAST(1.0 AS TEXT), CAST(1e20 AS TEXT)",
]


def _outcome(env: Any, sql: str, params: tuple[Any, ...]) -> str:
    """``ok`` or ``error`` (the call's transaction rolled back either way alike)."""
    try:
        with env.tool_transaction():
            env.agent_db.execute(sql, params)
    except Exception:
        return "error"
    return "ok"


def _answer(env: Any, sql: str) -> Any:
    try:
        return env.evaluator_view().query(sql)
    except Exception:
        return "error"


def _calls(seed: int) -> list[tuple[str, tuple[Any, ...]]]:
    rng = random.Random(seed)
    calls = []
    for _ in range(14):
        sql = rng.choice(_WRITES)
        # PostgreSQL's INTEGER is 32 bits: CAST(1e20 AS INTEGER) is its error (SQLite clamps)
        numbers = [x for x in _NUMBERS if abs(x) < 2**31] if "CAST(?" in sql else _NUMBERS
        params = tuple(rng.choice(numbers) for _ in range(sql.count("?")))
        calls.append((sql, params))
    return calls


@pytest.fixture
def fixture(tmp_path: Path) -> Path:
    path = tmp_path / "t.sql"
    path.write_text(FIXTURE)
    return path


def test_generated_edge_writes_leave_the_same_state_and_answers(fixture: Path) -> None:
    postgres = _postgres()
    for seed in range(1, 7):
        with (
            SqliteEnvironment(fixture, clock=CLOCK) as ours,
            postgres(fixture, clock=CLOCK) as theirs,
        ):
            for sql, params in _calls(seed):
                outcomes = [_outcome(env, sql, params) for env in (ours, theirs)]
                assert outcomes[0] == outcomes[1], (seed, sql, params, outcomes)
                assert ours.state_hash() == theirs.state_hash(), (seed, sql, params)
            for sql in _QUERIES:
                assert _answer(theirs, sql) == _answer(ours, sql), (seed, sql)


def test_a_non_whole_number_in_an_integer_column_is_refused_on_both_kinds(fixture: Path) -> None:
    postgres = _postgres()
    with SqliteEnvironment(fixture, clock=CLOCK) as ours, postgres(fixture, clock=CLOCK) as theirs:
        before = ours.state_hash()
        assert theirs.state_hash() == before
        for env in (ours, theirs):
            for sql, params in [
                ("INSERT INTO t (n) VALUES (?)", (2.5,)),
                ("UPDATE t SET n = ? WHERE id = 1", (-0.5,)),
                ("UPDATE t SET n = n * 1.5 WHERE id = 2", ()),  # 3 * 1.5
                ("INSERT INTO t (n) VALUES (2.5)", ()),
            ]:
                with pytest.raises(Exception, match=WHOLE_ONLY), env.tool_transaction():
                    env.agent_db.execute(sql, params)
            assert env.state_hash() == before
            with env.tool_transaction():  # a whole REAL is the integer, as SQLite stores it
                env.agent_db.execute("UPDATE t SET n = ? WHERE id = 1", (6.0,))
                env.agent_db.execute("UPDATE t SET n = n * 1.5 WHERE id = 1")
            assert env.evaluator_view().query("SELECT n FROM t WHERE id = 1") == [(9,)]
            value = env.evaluator_view().query("SELECT n FROM t WHERE id = 1")[0][0]
            assert isinstance(value, int)
        assert ours.state_hash() == theirs.state_hash()


def test_the_sqlite_refusal_names_the_table_and_column(fixture: Path) -> None:
    with SqliteEnvironment(fixture, clock=CLOCK) as env:
        with pytest.raises(ToolError) as caught, env.tool_transaction():
            env.agent_db.execute("UPDATE t SET n = 7.25 WHERE id = 2")
        assert str(caught.value).endswith("column t.n: the value " + WHOLE_ONLY)
        assert isinstance(caught.value.__cause__, sqlite3.IntegrityError)


def test_a_fixture_real_already_in_an_integer_column_does_not_block_other_writes(
    tmp_path: Path,
) -> None:
    """The SQLite kind takes such a fixture (the postgres kind refuses it by name): its row's
    other columns stay writable, and a harness restore of it is not refused."""
    path = tmp_path / "t.sql"
    path.write_text("CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, s TEXT);\n"
                    "INSERT INTO t VALUES (1, 2.5, 'a');\n")  # fmt: skip
    with SqliteEnvironment(path, clock=CLOCK) as env:
        initial = env.state_hash()
        with env.tool_transaction():
            env.agent_db.execute("UPDATE t SET s = 'b' WHERE id = 1")
            env.agent_db.execute("INSERT INTO t (n) VALUES (0.5)")
        assert env.evaluator_view().query("SELECT n FROM t ORDER BY id") == [(2.5,), (0.5,)]
        assert env.reset() == initial


def test_sum_past_2_63_is_an_error_on_both_kinds_and_total_is_sqlites(fixture: Path) -> None:
    postgres = _postgres()
    with SqliteEnvironment(fixture, clock=CLOCK) as ours, postgres(fixture, clock=CLOCK) as theirs:
        for env in (ours, theirs):
            view = env.evaluator_view()
            assert view.query("SELECT sum(n), total(n), total(r) FROM t") == [(7, 7.0, 3.5)]
            assert view.query("SELECT sum(n), total(n) FROM t WHERE id > 9") == [(None, 0.0)]
            with env.tool_transaction():
                env.agent_db.execute("UPDATE t SET n = ? WHERE id = 3", (2**63 - 4,))
            with pytest.raises(Exception, match=r"overflow|out of range"):
                env.evaluator_view().query("SELECT sum(n) FROM t")
            with pytest.raises(Exception, match=r"overflow|out of range"), env.tool_transaction():
                env.agent_db.execute("SELECT sum(n) FROM t").fetchall()


def _tie(value: float) -> bool:
    """Whether *value* lies exactly halfway between two 15-digit numbers (6619142780083655):
    SQLite's own rounding of those differs between its versions (3.40 rounds that one down,
    ``printf`` half to even), so they are not compared (documented)."""
    exact = Decimal(value)
    if exact == 0:
        return False
    scaled = abs(exact).scaleb(14 - exact.adjusted())
    return scaled - scaled.to_integral_value(rounding=ROUND_FLOOR) == Decimal("0.5")


def _doubles(seed: int, count: int) -> list[float]:
    """Edge and random doubles: every magnitude, halves, whole numbers near 10^15 (but no exact
    15-digit ties, see :func:`_tie`)."""
    rng = random.Random(seed)
    values = [1.0, -1.0, 0.1, 0.5, 1e15, 1e15 - 1, 1e14, 123456.789, 1e-4, 1e-5, 1e300,
              2.0**-1074, 1.7976931348623157e308, 99999999999999.99, 0.30000000000000004,
              2.0**53, 1e16]  # fmt: skip
    while len(values) < count:
        bits = rng.getrandbits(64)
        value = struct.unpack("<d", bits.to_bytes(8, "little"))[0]
        if math.isfinite(value):
            values.append(value)
        values.append(round(rng.uniform(-1e6, 1e6), rng.randint(0, 6)))
        values.append(float(rng.randint(-(10**17), 10**17)))
    return [value for value in values if not _tie(value)]


def test_a_real_reads_as_the_same_text_on_both_kinds(fixture: Path) -> None:
    postgres = _postgres()
    values = _doubles(19, 300)
    with SqliteEnvironment(fixture, clock=CLOCK) as ours, postgres(fixture, clock=CLOCK) as theirs:
        for env in (ours, theirs):
            with env.tool_transaction():
                for i, value in enumerate(values):
                    env.agent_db.execute(
                        "INSERT INTO t (id, r, s) VALUES (?, ?, ?)", (100 + i, value, value)
                    )
        assert ours.state_hash() == theirs.state_hash()
        sql = "SELECT id, s, CAST(r AS TEXT), CAST(r AS VARCHAR(40)) FROM t ORDER BY id"
        expected = ours.evaluator_view().query(sql)
        got = theirs.evaluator_view().query(sql)
        assert [row for row in got if row not in expected] == []
        literal = (
            "SELECT CAST(1.0 AS TEXT), CAST(-0.0 AS TEXT), CAST(1e-7 AS TEXT), CAST(2.50 AS TEXT)"
        )
        assert theirs.evaluator_view().query(literal) == ours.evaluator_view().query(literal)


# --- malformed fixtures: named by file, column and value ---------------------------------------


@pytest.mark.parametrize(
    ("cell", "named"),
    [
        ("2.5", "(INTEGER) holds REAL values, such as 2.5"),
        ("'x'", "(INTEGER) holds TEXT values, such as 'x'"),
    ],
)
def test_postgres_names_the_one_odd_value_of_a_column(
    tmp_path: Path, cell: str, named: str
) -> None:
    """A column of one wrong type was said to hold "values of several types (float)"."""
    from groundstate.errors import FixtureNotCarried

    postgres = _postgres()
    path = tmp_path / "shop.yaml"
    path.write_text(
        "schema: 'CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER)'\n"
        f"rows:\n  t:\n    - {{id: 1, n: {cell}}}\n"
    )
    with pytest.raises(FixtureNotCarried) as caught:
        postgres(path, clock=CLOCK).close()
    assert str(path) in str(caught.value)
    assert f"column t.n {named}" in str(caught.value)
    assert "several types" not in str(caught.value)


def test_health_says_whether_the_sqlite_casts_are_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server user that may not change the catalog (not a superuser) keeps PostgreSQL's
    casts: the environment still builds, and ``health`` says so (simulated by a cast
    statement refused for privilege, in a fixture of its own so its template is new)."""
    import groundstate.environments.postgres as kind

    postgres = _postgres()
    path = tmp_path / "own.sql"
    path.write_text(FIXTURE + "-- a template of its own\n")
    with postgres(path, clock=CLOCK) as env:
        assert env.health()["sqlite_casts"] is True
    refused = "DO $gs$BEGIN RAISE insufficient_privilege; END$gs$"
    monkeypatch.setattr(kind, "cast_sql", lambda: [refused])
    path.write_text(FIXTURE + "-- another template\n")
    with postgres(path, clock=CLOCK) as env:
        assert env.health()["sqlite_casts"] is False
        with env.tool_transaction():  # PostgreSQL's own cast: rounded, as documented
            env.agent_db.execute("UPDATE t SET n = 2.5 WHERE id = 1")
        # (the literal is a double since the twentieth round: rounded half to even)
        assert env.evaluator_view().query("SELECT n FROM t WHERE id = 1") == [(2,)]


_COMPARED_TEXTS = ["5", "10", "abc", "5.0", " 7 ", "-3", "1e3", "", "0x10", "4.50", "\u0661"]


@pytest.mark.parametrize("op", ["=", "<>", "<", "<=", ">", ">="])
def test_text_compared_with_a_number_is_answered_as_on_sqlite(tmp_path: Path, op: str) -> None:
    """PostgreSQL had no ``text = integer``: a tool's ``WHERE code = 5`` (or ``sku = ?`` given
    a number) failed there and ran on SQLite."""
    postgres = _postgres()
    rng = random.Random(op)
    rows = ", ".join(
        f"({i}, {rng.choice(['NULL', '4', '5', '10', '-3'])}, "
        f"{rng.choice(['NULL', '5.0', '4.5', '1000.0'])}, "
        f"'{rng.choice(_COMPARED_TEXTS)}')"
        for i in range(1, 40)
    )
    path = tmp_path / "t.sql"
    path.write_text(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, r REAL, s TEXT);\n"
        f"INSERT INTO t VALUES {rows};\n"
    )
    asked = [
        (f"SELECT id FROM t WHERE s {op} 5 ORDER BY id", ()),
        (f"SELECT id FROM t WHERE s {op} 5.0 ORDER BY id", ()),
        (f"SELECT id FROM t WHERE s {op} -3 ORDER BY id", ()),
        *[(f"SELECT id FROM t WHERE s {op} ? ORDER BY id", (v,)) for v in (5, 10, 5.0, 4.5)],
        (f"SELECT id FROM t WHERE n {op} s ORDER BY id", ()),
        (f"SELECT id FROM t WHERE r {op} s ORDER BY id", ()),
        ("SELECT id FROM t WHERE s IN (5, 10, -3) ORDER BY id", ()),
    ]
    with SqliteEnvironment(path, clock=CLOCK) as ours, postgres(path, clock=CLOCK) as theirs:
        for sql, params in asked:
            answers = []
            for env in (ours, theirs):
                with env.tool_transaction():
                    answers.append(env.agent_db.execute(sql, params).fetchall())
            assert answers[0] == answers[1], (sql, params)
