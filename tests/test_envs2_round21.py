"""Twenty-first environments audit, second pass: what the SQLite and PostgreSQL kinds still
answered otherwise with no error, and what PostgreSQL failed on that SQLite answers.

- ``a IN (x, y)`` is ``a = +x OR a = +y`` in SQLite (the values have no affinity, even a
  column) and ``a BETWEEN b AND c`` is ``a >= b AND a <= c``, each side converted by where it
  comes from; PostgreSQL typed all sides together: ``strftime('%Y', d) IN (2026)``,
  ``substr(d, 1, 4) BETWEEN 2025 AND 2026`` and ``? IN (code)`` found rows where SQLite finds
  none (a grader's count, a tool's ``UPDATE``: another state), and ``n IN (?)`` or
  ``n BETWEEN ? AND ?`` given text that is not a number failed.
- ``max(a, b)``/``min(a, b)`` of an integer and a REAL was a REAL on PostgreSQL (3.0 where
  SQLite keeps the chosen integer 3: another ``typeof``, another text in a TEXT column). Now
  the REAL when it is chosen, the integer refused by name.
- ``printf`` did not exist on PostgreSQL, and its own ``format('%s', 1.0)`` was ``1`` where
  SQLite's is ``1.0``. Now SQLite's ``%s``, ``%d``, ``%i``, ``%f`` (width, precision, flags
  ``-+0``); other conversions refused by name.
"""

from __future__ import annotations

import sqlite3
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
from .test_envs_round21 import FIXTURE

fixture = fixture_of(FIXTURE)


def _refusal(env: Any, sql: str, params: tuple[Any, ...] = ()) -> str:
    """The message of the error the statement raised in a tool call (which rolled back)."""
    with pytest.raises(Exception) as caught, env.tool_transaction():
        env.agent_db.execute(sql, params).fetchall()
    return str(caught.value)


# --- answered otherwise (or failed) before, each now SQLite's on both kinds ----------------------

ANSWERED_ALIKE: list[tuple[str, tuple[Any, ...]]] = [
    # IN: the values have no affinity; the left side's, where it has one, is theirs
    ("SELECT id FROM t WHERE strftime('%Y', d) IN (2026) ORDER BY id", ()),
    ("SELECT id FROM t WHERE strftime('%Y', d) NOT IN (2026, '2025') ORDER BY id", ()),
    ("SELECT id FROM t WHERE ? IN (code) ORDER BY id", (5,)),
    ("SELECT id FROM t WHERE ? NOT IN (code, n) AND id > ? ORDER BY id", (5, 1)),
    ("SELECT id FROM t WHERE length(code) IN ('1', 2) ORDER BY id", ()),
    ("SELECT id FROM t WHERE n IN (?, ?) ORDER BY id", ("4", "abc")),
    ("SELECT id, n IN (4, NULL), n NOT IN (4, NULL) FROM t ORDER BY id", ()),
    # BETWEEN: two comparisons, each converting its sides by where they come from
    ("SELECT id FROM t WHERE substr(d, 1, 4) BETWEEN 2025 AND 2026 ORDER BY id", ()),
    ("SELECT id FROM t WHERE n BETWEEN ? AND ? ORDER BY id", ("3", "abc")),
    ("SELECT id FROM t WHERE n NOT BETWEEN ? AND ? ORDER BY id", ("3", "abc")),
    ("SELECT id FROM t WHERE ? BETWEEN n AND ? ORDER BY id", ("5", 3000)),
    ("SELECT id, code BETWEEN n AND 9, n BETWEEN 1 AND 5 FROM t ORDER BY id", ()),
    # max/min of two values: the chosen value as it is
    ("SELECT max(1, 2.5), min(3, 2.5), max(2.5, 1), max(3.0, 3), min(3, 3.0) FROM t", ()),
    ("SELECT max(n, 3), min(n, 3), typeof(max(n, 3)), max(n, NULL), min(NULL, r) FROM t", ()),
    ("SELECT max(?, ?), min(?, ?), max('a', 'b'), max(NULL, NULL) FROM t", ("a", "b", 1, 2)),
    ("SELECT typeof(max(n, r)), max(n, r) FROM t WHERE id IN (3, 5)", ()),
    ("SELECT max(n, 1, id), min(3, 2.5, 7), max(n, NULL, 1), min(?, 1.5, 2.5) FROM t", (9.5,)),
    ("SELECT max('a', 'b', 'c'), min(?, ?, ?)", ("x", "y", "a")),
    # printf and format
    ("SELECT format('%s', 1.0), format('%s-%s', 'a', 'b'), printf('abc'), printf(NULL)", ()),
    ("SELECT printf('[%8.2f][%-8.2f][%08.2f][%+.1f]', -3.14159, 2.5, -1.5, 2.25)", ()),
    ("SELECT printf('%s %d|%5d|%-5d|%05d|%+d', 2.0, 3.0, -3, 7, -42, 5)", ()),
    ("SELECT printf('%.0f %.0f %.1f %.2f %f %.2f', 0.5, 1.5, 0.25, 1.005, 0.1 + 0.2, -0.001)", ()),
    ("SELECT printf('%d|%f|%s|%s %s', NULL, NULL, x'4142', 1)", ()),
    ("SELECT printf('%.3s|%5s|', 'abc', 'é'), printf(4, 5), printf(1.5), printf(x'2573', 2)", ()),
    ("SELECT printf('%d %d %.2f', 'abc', 1e20, '3.14159x'), printf('100%% %s', 'ok')", ()),
    ("SELECT id, printf('%s|%d|%.2f|%5s', n, r, r, code) FROM t ORDER BY id", ()),
    ("SELECT printf('%s: %.2f', ?, ?)", ("total", 12.345)),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "params"), ANSWERED_ALIKE)
def test_the_same_query_is_answered_alike(fixture: Path, sql: str, params: tuple[Any, ...]) -> None:
    assert_answered_alike(fixture, sql, params, shown=repr)  # 3 is not 3.0


WRITES: list[tuple[str, tuple[Any, ...]]] = [
    ("UPDATE t SET s = 'hit' WHERE strftime('%Y', d) IN (2026)", ()),
    ("UPDATE t SET s = 'hit' WHERE ? IN (code)", (5,)),
    ("DELETE FROM t WHERE substr(d, 1, 4) NOT BETWEEN 2025 AND 2026", ()),
    ("UPDATE t SET s = 'hit' WHERE n BETWEEN ? AND ?", ("3", "abc")),
    ("UPDATE t SET s = printf('%s/%.1f', r, r), code = format('%s', r)", ()),
    ("UPDATE t SET s = max(n, r) WHERE id = 5", ()),
]


@pytest.mark.parametrize(("sql", "params"), WRITES)
def test_a_write_by_such_a_query_leaves_the_same_state(
    fixture: Path, sql: str, params: tuple[Any, ...]
) -> None:
    assert_written_alike(fixture, sql, params)


# --- what cannot be answered alike is refused, by name --------------------------------------------


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ("SELECT max(3, 2.5)", "max() of an INTEGER and a REAL chose the INTEGER 3"),
        ("SELECT min(3.0, 3)", "min() of an INTEGER and a REAL chose the INTEGER 3"),
        ("SELECT max(3, 2.5, 1)", "max() of an INTEGER and a REAL chose the INTEGER 3"),
        ("SELECT max(n, r) FROM t WHERE id = 1", "chose the INTEGER 4"),
        ("SELECT printf('%w', 'x')", "printf's %w is not carried to the postgres kind"),
        ("SELECT printf('%, d', 5)", "printf's %, d is not carried"),
        ("SELECT printf('%.2f', 1e16)", "only numbers below 10^15"),
    ],
)
def test_what_differs_is_refused_naming_it(fixture: Path, sql: str, named: str) -> None:
    """SQLite answers each (``max(3, 2.5)`` is the integer 3, which a PostgreSQL result of
    one planned type cannot be beside a REAL); PostgreSQL refuses, saying what differs, and
    a write by it changes nothing."""
    ours, theirs = both(fixture)
    with ours, theirs:
        assert ask(ours, sql) != "error"
        assert named in _refusal(theirs, sql)
        initial = theirs.state_hash()
        assert ask(theirs, f"UPDATE t SET s = ({sql}) WHERE id = 2") == "error"
        assert theirs.state_hash() == initial


def test_sqlite_tie_and_type_rules_of_max_and_min() -> None:
    """Control (the rule the harness's functions follow): of equal values ``max`` keeps the
    first, ``min`` the second; the chosen value keeps its type."""
    rows = sqlite3.connect(":memory:").execute(
        "SELECT max(3, 3.0), max(3.0, 3), min(3, 3.0), min(3.0, 3), typeof(max(3, 2.5))"
    )
    assert repr(rows.fetchall()) == "[(3, 3.0, 3.0, 3, 'integer')]"


def test_a_column_in_a_list_keeps_its_index(fixture: Path) -> None:
    """Control: ``id IN (1, 2)`` and ``id BETWEEN ? AND ?`` keep the key's index (a column's
    list of numbers is left as written; the comparisons of a number are inlined)."""
    from .test_validation_round15 import _postgres

    with _postgres()(fixture, clock=CLOCK) as env:
        for sql, params in (
            ("EXPLAIN SELECT * FROM t WHERE id IN (1, 2)", ()),
            ("EXPLAIN SELECT * FROM t WHERE id BETWEEN ? AND ?", (2, 3)),
        ):
            plan = "\n".join(row[0] for row in env.evaluator_view().query(sql, params))
            assert "Index" in plan, plan


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT a FROM t WHERE a IN (SELECT b FROM u)",
        "SELECT a FROM t WHERE a IN (1, 2, 3)",
        "SELECT a FROM t WHERE a.b IN (1, ?) = 1",
        "SELECT 'x IN (1) BETWEEN printf(' FROM t -- a BETWEEN 1 AND 2",
        "SELECT t.format(a), s.max(a, b, c) FROM t",
    ],
)
def test_what_the_rewriting_need_not_change_is_left_as_written(sql: str) -> None:
    """Control: a subquery, a column's list of numbers, an ``IN`` inside a larger comparison,
    strings and comments and a qualified ``format`` or ``max`` are left as they are."""
    assert sqlite_meaning(sql) == sql


# --- generated: IN, BETWEEN, max/min and printf of every kind of side -----------------------------

VALUES: list[Any] = [None, 0, 4, 5, -7, 2026, 1.5, 5.0, -0.5, "", "4", "05", " 5", "5.0", "abc",
                     "2026", "x", "1e1"]  # fmt: skip
NUMBERS: list[Any] = [None, 0, 4, 5, -7, 2026, 1.5, 5.0, -0.5]
FORMATS: list[Any] = ["%s", "%d", "%.2f", "%5s|%-4d", "%+.1f", "%05d", "[%s]", None, "%%"]
CALLS: list[tuple[str, list[Any]]] = [
    ("SELECT id FROM t WHERE code IN (?, ?) ORDER BY id", VALUES),
    ("SELECT id FROM t WHERE n IN (?, 5) ORDER BY id", VALUES),
    ("SELECT id FROM t WHERE ? IN (code, n) ORDER BY id", VALUES),
    ("SELECT id FROM t WHERE substr(d, 1, 4) IN (?) ORDER BY id", VALUES),
    ("SELECT id FROM t WHERE n BETWEEN ? AND ? ORDER BY id", VALUES),
    ("SELECT id FROM t WHERE code NOT BETWEEN ? AND 9 ORDER BY id", VALUES),
    ("SELECT id FROM t WHERE ? BETWEEN n AND code ORDER BY id", VALUES),
    ("SELECT id, max(r, ?), min(?, r) FROM t ORDER BY id", [None, 1.5, -0.5, 5.0, 100.0]),
    ("SELECT id, max(n, ?), min(?, n) FROM t ORDER BY id", [None, 0, 4, 5, 3000]),
    ("SELECT id, printf(?, n), printf(?, r), format(?, code) FROM t ORDER BY id", FORMATS),
    ("UPDATE t SET s = printf(?, ?) WHERE id = 4", FORMATS[:3] + NUMBERS),
    ("UPDATE t SET s = 'w' WHERE ? IN (code)", VALUES),
    ("UPDATE t SET s = 'v' WHERE n NOT BETWEEN ? AND ?", VALUES),
    ("DELETE FROM t WHERE id > 5 AND code IN (?, ?)", VALUES),
    ("INSERT INTO t (n, code) VALUES (?, ?)", NUMBERS[:6]),
]
"""Each call and the values of its parameters, on either side of columns and expressions.
``max``/``min`` take values of the column's own kind (an integer beside a REAL is refused
on PostgreSQL: :func:`test_what_differs_is_refused_naming_it`)."""


@pytest.mark.parametrize("seed", range(1, 13))
def test_generated_queries_store_and_answer_alike(fixture: Path, seed: int) -> None:
    assert_generated_alike(fixture, CALLS, seed, shown=repr)
