"""Twenty-third environments audit: SQLite's dialect the postgres kind met with PostgreSQL's
raw error, or answered otherwise without a word.

- ``a IS b`` and ``a IS NOT b`` with a value (SQLite's null-safe equality) were syntax errors.
- ``GLOB`` (SQLite's case-sensitive wildcard match) was a syntax error.
- ``quote``, ``char``, ``unicode``, ``zeroblob``, ``likelihood``/``likely``/``unlikely``,
  ``lower``/``upper`` of a number were "function does not exist"; ``sign`` gave a REAL
  (``1.0``) where SQLite gives an integer.
- ``group_concat(DISTINCT x)`` joined the values sorted (PostgreSQL's DISTINCT sorts), not in
  the order SQLite meets them: a silent other answer.
- ``ORDER BY x COLLATE NOCASE`` failed ("collation nocase does not exist").
- printf's ``%c``, ``%q``, ``%Q`` and ``%o`` were refused.
- What stays beyond the kind (``COLLATE NOCASE`` in a comparison, a REAL past the double's
  range, ``||`` of two numbers, a function SQLite has and PostgreSQL lacks, SQLite's syntax
  PostgreSQL rejects) is refused naming what is not carried, never PostgreSQL's bare error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from groundstate.environments.sqlite import SqliteEnvironment

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

ANSWERED_ALIKE: list[tuple[str, tuple[Any, ...]]] = [
    # IS and IS NOT of values: SQLite's null-safe equality, with a column's affinity
    ("SELECT 1 IS 1, 1 IS 2, 'a' IS 'a', NULL IS NULL, 1 IS NULL, 1 IS NOT 2, NULL IS NOT 1", ()),
    ("SELECT id FROM t WHERE n IS 4 ORDER BY id", ()),
    ("SELECT id FROM t WHERE s IS NOT 'a' ORDER BY id", ()),
    ("SELECT id FROM t WHERE code IS 4 ORDER BY id", ()),
    ("SELECT id FROM t WHERE n IS ? ORDER BY id", (None,)),
    ("SELECT id FROM t WHERE n IS NOT ? ORDER BY id", (5,)),
    ("SELECT id, s IS NOT NULL, r IS NOT DISTINCT FROM 1.5 FROM t ORDER BY id", ()),
    # GLOB: case-sensitive wildcards, classes and ranges, regular expressions' marks literal
    ("SELECT 'abc' GLOB 'a*', 'ABC' GLOB 'a*', 'a.c' GLOB 'a?c', 'abc' GLOB 'a.c', "
     "'abc' GLOB '[a-c]bc', 'x' GLOB '[^a-c]', 'b' GLOB '[^a-c]', ']' GLOB '[]]'", ()),
    ("SELECT 'a+b(c)$' GLOB 'a+b(c)$', 'a\\b' GLOB 'a\\b', '^x|' GLOB '^x|', "
     "'a%_' GLOB 'a%_', '' GLOB '*', NULL GLOB '*', 'a' GLOB NULL, 'ab' GLOB '[ab'", ()),
    ("SELECT id FROM t WHERE s GLOB '*' ORDER BY id", ()),
    ("SELECT id FROM t WHERE s NOT GLOB 'a*' ORDER BY id", ()),
    ("SELECT id FROM t WHERE code GLOB ? ORDER BY id", ("*5*",)),
    ("SELECT id FROM t WHERE n GLOB '2*' OR r GLOB '*.5' ORDER BY id", ()),
    ("SELECT id FROM t WHERE s || 'x' GLOB 'a' || '*' ORDER BY id", ()),
    # SQLite's functions PostgreSQL lacks or means otherwise
    ("SELECT quote('a''b'), quote(1), quote(1.5), quote(NULL), quote(x'00ff'), quote(-2)", ()),
    ("SELECT id, quote(n), quote(r), quote(s), quote(b) FROM t ORDER BY id", ()),
    ("SELECT char(65, 66), char(), char(233, 8364), char(?)", (97,)),
    ("SELECT unicode('A'), unicode('é'), unicode(''), unicode(NULL), unicode('ab')", ()),
    ("SELECT zeroblob(3), length(zeroblob(4)), zeroblob(0), typeof(zeroblob(2))", ()),
    ("SELECT likelihood(1, 0.5), likely(2), unlikely(NULL)", ()),
    ("SELECT lower(1), upper(n), lower(r), upper(NULL) FROM t WHERE id = 1", ()),
    ("SELECT sign(2.5), sign(-0.5), sign(0.0), sign(3), sign(-3), sign(NULL)", ()),
    ("SELECT id, sign(r), sign(n) FROM t ORDER BY id", ()),
    # group_concat(DISTINCT ...): the values in the order SQLite meets them
    ("SELECT group_concat(DISTINCT code) FROM t", ()),
    ("SELECT group_concat(DISTINCT s), group_concat(DISTINCT n) FROM t", ()),
    ("SELECT group_concat(DISTINCT r) FROM t WHERE id > 9", ()),
    # ORDER BY ... COLLATE NOCASE: ASCII letters folded, others by their bytes
    ("SELECT id FROM t ORDER BY s COLLATE NOCASE, id", ()),
    ("SELECT id FROM t ORDER BY code COLLATE NOCASE DESC, id", ()),
    ("SELECT v FROM (SELECT 'b' AS v UNION ALL SELECT 'A' UNION ALL SELECT '_' "
     "UNION ALL SELECT 'a' UNION ALL SELECT 'B') AS x ORDER BY v COLLATE NOCASE, v", ()),
    # printf's %c, %q, %Q and %o
    ("SELECT printf('%c|%5c|%-3c|%c', 'xyz', 'ab', 'q', 12)", ()),
    ("SELECT printf('%q|%Q|%Q|%Q', 'it''s', 'it''s', NULL, 5)", ()),
    ("SELECT printf('%o|%5o|%-5o|%05o|%o', 8, 64, 7, 9, 0)", ()),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "params"), ANSWERED_ALIKE)
def test_the_same_query_is_answered_alike(fixture: Path, sql: str, params: tuple[Any, ...]) -> None:
    assert_answered_alike(fixture, sql, params, shown=repr)


WRITTEN_ALIKE: list[tuple[str, tuple[Any, ...]]] = [
    ("UPDATE t SET s = quote(s) || char(66) WHERE id IS NOT 3", ()),
    ("UPDATE t SET b = zeroblob(2) WHERE s GLOB '[a-z]*'", ()),
    ("UPDATE t SET code = (SELECT group_concat(DISTINCT code) FROM t) WHERE id IS 1", ()),
    ("UPDATE t SET r = ? WHERE id = 1", (-0.0,)),
    ("UPDATE t SET r = ? WHERE id = 2", (1e308,)),
    ("UPDATE t SET r = ? WHERE id = 3", (5e-324,)),
    ("UPDATE t SET b = ? WHERE id = 4", (bytes(range(256)),)),
    ("UPDATE t SET s = ? WHERE id = 5", ("xé\U0001f600" * 50000,)),
]


@pytest.mark.parametrize(("sql", "params"), WRITTEN_ALIKE)
def test_the_same_write_leaves_the_same_state(
    fixture: Path, sql: str, params: tuple[Any, ...]
) -> None:
    assert_written_alike(fixture, sql, params)


_COLLATE = "COLLATE NOCASE outside ORDER BY is not carried to the postgres kind"
_CARRIED = "is not carried to the postgres kind"
REFUSED: list[tuple[str, tuple[Any, ...], str]] = [
    ("SELECT 'a' = 'A' COLLATE NOCASE", (), _COLLATE),
    ("SELECT id FROM t WHERE s = ? COLLATE NOCASE", ("A",), _COLLATE),
    ("SELECT 1e308 * 10", (), "a REAL past the double's range"),
    ("SELECT r * 1e308 * 1e308 FROM t", (), "a REAL past the double's range"),
    ("SELECT 1 || 2", (), "|| of two numbers"),
    ("SELECT n || n FROM t", (), "|| of two numbers"),
    ("SELECT json_extract('{\"a\": 1}', '$.a')", (), "json_extract"),
    ("SELECT randomblob(4) IS NOT NULL", (), "randomblob"),
    ("SELECT id FROM t INDEXED BY nothing", (), _CARRIED),
    ("SELECT printf('%g', 2.5)", (), "printf's %g is not carried"),
    ("SELECT char(0)", (), _CARRIED),
]


@pytest.mark.parametrize(("sql", "params", "named"), REFUSED)
def test_what_differs_is_refused_naming_it(
    fixture: Path, sql: str, params: tuple[Any, ...], named: str
) -> None:
    """Each is an answer (or, INDEXED BY an unknown index, SQLite's own error) on SQLite; on
    PostgreSQL a refusal saying what is not carried (before, PostgreSQL's "collation does not
    exist", "value out of range: overflow", "operator does not exist", "function does not
    exist", "syntax error"), and a write by it changes nothing."""
    ours, theirs = both(fixture)
    with ours, theirs:
        with pytest.raises(Exception) as caught, theirs.tool_transaction():
            theirs.agent_db.execute(sql, params).fetchall()
        assert named in str(caught.value)
        assert "not carried to the postgres kind" in str(caught.value)
        with pytest.raises(Exception) as viewed:
            theirs.evaluator_view().query(sql, params)
        assert named in str(viewed.value)
        initial = theirs.state_hash()
        assert ask(theirs, f"UPDATE t SET s = ({sql}) WHERE id = 2", params) == "error"
        assert theirs.state_hash() == initial


def test_a_failed_write_leaves_both_kinds_at_their_start(fixture: Path) -> None:
    """A tool call that wrote, then failed (its statement refused on PostgreSQL, an error on
    both), is rolled back on both kinds: the states stay alike and reset gives the start."""
    ours, theirs = both(fixture)
    with ours, theirs:
        initial = ours.state_hash()
        assert theirs.state_hash() == initial
        for env in (ours, theirs):
            with pytest.raises(Exception) as caught, env.tool_transaction():
                env.agent_db.execute("UPDATE t SET s = 'changed' WHERE id IS 1")
                env.agent_db.execute("INSERT INTO t (id) VALUES (1)")  # the key is taken
            assert "UNIQUE" in str(caught.value).upper()
            assert env.state_hash() == initial
            assert ask(env, "UPDATE t SET s = 'kept' WHERE s GLOB 'a'") == []
        assert ours.state_hash() == theirs.state_hash() != initial
        assert ours.reset() == theirs.reset()
        assert ours.state_hash() == theirs.state_hash() == initial


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("CREATE TABLE a (id INTEGER PRIMARY KEY;\n", "syntax error"),
        ("CREATE TABLE a (id INTEGER PRIMARY KEY);\nINSERT INTO b VALUES (1);\n", "no such table"),
    ],
)
def test_a_malformed_fixture_is_refused_naming_the_file(
    tmp_path: Path, text: str, reason: str
) -> None:
    """Control: a fixture SQLite cannot build is refused on both kinds, naming its file."""
    from .test_validation_round15 import _postgres

    path = tmp_path / "broken.sql"
    path.write_text(text)
    for make in (SqliteEnvironment, _postgres()):
        with pytest.raises(Exception) as caught:
            make(path, clock=CLOCK).close()
        assert str(path) in str(caught.value) or path.name in str(caught.value)
        assert reason in str(caught.value)


TEXTS: list[Any] = [None, "", "abc", "ABC", "a*", "[a-c]*", "*b*", "?", "é", "a.c", "[^a]*"]
VALUES: list[Any] = [None, 0, 1, -1, 2.5, -0.5, "a", "A", "1", "é", b"\x00"]
CALLS: list[tuple[str, list[Any]]] = [
    ("SELECT ? GLOB ?, ? NOT GLOB ?", TEXTS),
    ("SELECT ? IS ?, ? IS NOT ?", TEXTS),
    ("SELECT ? IS ?, ? IS NOT ?", [n for n in VALUES if not isinstance(n, str | bytes)]),
    ("SELECT quote(?), unicode(?), sign(?)", [VALUES, TEXTS, [None, 0, 1, -1, 2.5, -0.5]]),
    ("SELECT id FROM t WHERE s GLOB ? ORDER BY id", TEXTS),
    ("SELECT id FROM t WHERE n IS ? OR s IS ? ORDER BY id", VALUES[:6]),
    ("SELECT id FROM t ORDER BY s COLLATE NOCASE DESC, id", []),
    ("UPDATE t SET s = ? WHERE id IS ?", [TEXTS, [1, 2, 3, 4, 5]]),
    ("UPDATE t SET code = quote(?) WHERE code GLOB ?", [VALUES, TEXTS]),
    ("UPDATE t SET s = printf('%c%q', ?, ?) WHERE id = 3", TEXTS[2:]),
]
"""Null-safe equality, GLOB, quote/unicode/sign, NOCASE ordering and printf's new
conversions, on values a tool passes, on either kind (``group_concat`` is left out: after an
UPDATE, PostgreSQL meets the rows in another order than SQLite's rowid order)."""


@pytest.mark.parametrize("seed", range(1, 9))
def test_generated_dialect_answers_alike(fixture: Path, seed: int) -> None:
    assert_generated_alike(fixture, CALLS, seed, shown=repr)


def test_a_glob_check_is_carried_and_refuses_alike(tmp_path: Path) -> None:
    """A fixture's ``CHECK (sku GLOB 'S-*')`` was ``FixtureNotCarried`` (a syntax error to
    PostgreSQL); it now builds, and refuses the same writes on both kinds."""
    path = tmp_path / "shop.sql"
    path.write_text(
        "CREATE TABLE a (id INTEGER PRIMARY KEY, sku TEXT CHECK (sku GLOB 'S-*'));\n"
        "INSERT INTO a VALUES (1, 'S-1');\n"
    )
    ours, theirs = both(path)
    with ours, theirs:
        for sql in ("INSERT INTO a VALUES (2, 's-2')", "UPDATE a SET sku = 'X' WHERE id = 1"):
            assert ask(ours, sql) == ask(theirs, sql) == "error"
        assert ask(ours, "INSERT INTO a VALUES (2, 'S-2')") == []
        assert ask(theirs, "INSERT INTO a VALUES (2, 'S-2')") == []
        assert ours.state_hash() == theirs.state_hash()


@pytest.mark.parametrize(
    "sql",
    [
        'CREATE TABLE x ("n" CHAR(5), c char(3), d TEXT)',
        "SELECT CAST(1 AS char(3)), s.char(1) FROM t AS s",
        "SELECT id FROM t WHERE s IS NOT NULL AND n IS NULL AND (n > 1) IS TRUE",
        "SELECT 'a GLOB b', \"IS\" FROM t -- char(65) GLOB",
    ],
)
def test_what_is_not_sqlite_s_call_or_operator_is_left_as_written(sql: str) -> None:
    """Control: a column's type ``CHAR(5)`` (after a quoted name too), a cast's, a qualified
    name, ``IS NULL``/``IS TRUE``, and the words in a string, a quoted name or a comment are
    not rewritten (no server needed)."""
    from groundstate.environments.postgres_sql import sqlite_meaning

    written = sqlite_meaning(sql)
    assert 'groundstate."char"' not in written and "OPERATOR(" not in written
    assert "DISTINCT FROM" not in written
