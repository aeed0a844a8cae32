"""Twenty-second environments audit.

- A fixture was hashed by one read and built from another (``postgres._template`` hashed
  the file, then the build read it again; the SQLite kind's build did the same behind its
  hash cache): a fixture replaced in between was built under the hash of what it no longer
  held, and every later environment of the old content restored the new one. The bytes are
  now read once, hashed and built from.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
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
from .test_envs_round21 import FIXTURE
from .test_validation_round15 import _postgres

# --- a fixture replaced between two reads ---------------------------------------------------------


def _fixture_text(value: str) -> str:
    return (
        f"CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT);\nINSERT INTO a VALUES (1, '{value}');\n"
    )


def _replaced_after_first_read(
    monkeypatch: pytest.MonkeyPatch, path: Path, replacement: str
) -> None:
    """The first read of *path* (by ``read_bytes`` or ``open``) reads what it holds; the file
    is then replaced (written aside and renamed over it, as an editor or ``git checkout``
    does), so that any later read sees *replacement*."""
    done: list[bool] = []

    def replace() -> None:
        if not done:
            done.append(True)
            aside = path.with_name(path.name + ".new")
            aside.write_text(replacement)
            os.replace(aside, path)

    original_open: Callable[..., Any] = Path.open
    original_read_bytes: Callable[..., bytes] = Path.read_bytes

    def open_(self: Path, *args: Any, **kwargs: Any) -> Any:
        handle = original_open(self, *args, **kwargs)
        if self == path:
            replace()  # the open handle still reads the file it opened
        return handle

    def read_bytes(self: Path) -> bytes:
        data = original_read_bytes(self)
        if self == path:
            replace()
        return data

    monkeypatch.setattr(Path, "open", open_)
    monkeypatch.setattr(Path, "read_bytes", read_bytes)


def _values(env: Any) -> list[Any]:
    return [row[0] for row in env.evaluator_view().query("SELECT v FROM a ORDER BY id")]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_fixture_replaced_between_reads_is_built_from_what_was_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Replaced right after the first read: the environment is built from one of the two
    contents, and each content later gets its own (before, the old content's hash held the
    new content's build: an environment of the old file restored the new one)."""
    make = SqliteEnvironment if kind == "sqlite" else _postgres()
    old, new = f"old-{uuid.uuid4().hex}", f"new-{uuid.uuid4().hex}"  # no build of either yet
    path = tmp_path / "t.sql"
    path.write_text(_fixture_text(old))
    _replaced_after_first_read(monkeypatch, path, _fixture_text(new))
    with make(path, clock=CLOCK) as env:
        assert _values(env) in ([old], [new])
    monkeypatch.undo()
    assert path.read_text() == _fixture_text(new)
    with make(path, clock=CLOCK) as env:
        assert _values(env) == [new]
    path.write_text(_fixture_text(old))
    with make(path, clock=CLOCK) as env:
        assert _values(env) == [old]
    path.write_text(_fixture_text(new))
    with make(path, clock=CLOCK) as env:
        assert _values(env) == [new]


def test_the_postgres_kind_builds_what_it_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The PostgreSQL kind reads the fixture once: the environment is the content its
    template's key hashed (the first read), not what the file held at a second read."""
    postgres = _postgres()
    old, new = f"old-{uuid.uuid4().hex}", f"new-{uuid.uuid4().hex}"
    path = tmp_path / "t.sql"
    path.write_text(_fixture_text(old))
    _replaced_after_first_read(monkeypatch, path, _fixture_text(new))
    with postgres(path, clock=CLOCK) as env:
        assert _values(env) == [old]


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_data_fixture_is_built_from_the_bytes_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    """Control: a YAML or JSON fixture builds as before (its bytes read once, then parsed by
    the same loaders), and its limits and errors are the same."""
    value = uuid.uuid4().hex
    path = tmp_path / f"t{suffix}"
    schema = "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT);"
    if suffix == ".json":
        path.write_text(f'{{"schema": "{schema}", "rows": {{"a": [{{"id": 1, "v": "{value}"}}]}}}}')
    else:
        path.write_text(f"schema: '{schema}'\nrows:\n  a:\n    - {{id: 1, v: '{value}'}}\n")
    for make in (SqliteEnvironment, _postgres()):
        with make(path, clock=CLOCK) as env:
            assert _values(env) == [value]
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing\n")
    with pytest.raises(Exception, match="the file is empty"):
        SqliteEnvironment(empty, clock=CLOCK).close()


# --- parity: printf %e and %x, text where a number goes, string functions -------------------

fixture = fixture_of(FIXTURE)

ANSWERED_ALIKE: list[tuple[str, tuple[Any, ...]]] = [
    # printf's %e/%E (SQLite's digits, exponent of two digits or more) and %x/%X (64 bits)
    ("SELECT printf('%e|%E|%.2e|%.0e|%12.3e|%-12.1e|%012.2e|%+e', 1.5, 12345.678, "
     "-0.000123, 5.5, 1e300, 2.5, -3.25, 7)", ()),
    ("SELECT printf('%e %e %e %e', 0, 0.0, -1, 1e-300), printf('%e', 'abc'), printf('%e', NULL)",
     ()),
    ("SELECT printf('%.2e', 1.125), printf('%.0e', 0.25), printf('%.1e', 0.35), "
     "printf('%.0e', 9.5), printf('%.13e', 0.1), printf('%.2e', 9.999), printf('%e', 0.1 + 0.2)",
     ()),
    ("SELECT printf('%x|%X|%5x|%-5X|%05x|%x|%x|%x', 255, 255, 10, 10, 10, -1, 0, 1.9)", ()),
    ("SELECT printf('%x %x %X %x', 'abc', NULL, 9223372036854775807, -9223372036854775808)", ()),
    ("SELECT id, printf('%e|%x', r, n) FROM t ORDER BY id", ()),
    # positions and places given as parameters: a small integer is a smallint, NULL untyped
    ("SELECT id, substr(s, ?), substr(code, ?, ?), round(r, ?) FROM t ORDER BY id", (2, -2, 1, 1)),
    ("SELECT substr(?, ?), substr(?, ?, ?), round(?, ?)", ("hello", None, "x", 2, None, 2.5, None)),
    ("SELECT substr(?, ?, ?), substr(n, ?, ?) FROM t WHERE id = 4", ("hello", 2, 5000000000, 2, 2)),
    # text in arithmetic that PostgreSQL reads as the number SQLite converts it to
    ("SELECT n + ? FROM t WHERE id = 1", ("5",)),
    ("SELECT n + ? FROM t WHERE id = 1", (" 5",)),
    # string functions, rounding, integer division, LIKE, NULLs in ORDER BY, casts, typeof
    ("SELECT substr('hello', -3), substr('hello', -3, 2), substr('hello', 0, 2), "
     "substr('hello', 2, -1), substr('hello', -10, 3)", ()),
    ("SELECT instr('hello', 'l'), instr('hello', ''), instr(NULL, 'a'), replace('aaa', 'a', 'bb'),"
     " replace('abc', '', 'x')", ()),
    ("SELECT trim('xxhixx', 'x'), ltrim('  hi'), rtrim('hi  '), trim('abcba', 'ab'), "
     "ltrim('xyhi', 'yx'), upper('éa'), lower('ÉA')", ()),
    ("SELECT round(2.5), round(-2.5), round(0.5), round(2.675, 2), round(3), typeof(round(3))", ()),
    ("SELECT -7 / 2, -7 % 2, 7 % -3, -7 % -3, 10 / 3, 1 / 2", ()),
    ("SELECT 'abc' LIKE 'ABC', 'é' LIKE 'É', 'a_c' LIKE 'a\\_c' ESCAPE '\\', "
     "'a%' LIKE 'a!%' ESCAPE '!'", ()),
    ("SELECT id, n FROM t ORDER BY n, id", ()),
    ("SELECT id, s FROM t ORDER BY s DESC, id", ()),
    ("SELECT CAST('  12' AS INTEGER), CAST(' 1.5 ' AS REAL), CAST('  12  ' AS NUMERIC), "
     "CAST('12abc' AS REAL)", ()),
    ("SELECT typeof(1 + 1.0), typeof('a' || 1), typeof(NULL + 1), typeof(x'00'), "
     "typeof(CAST(1 AS TEXT))", ()),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "params"), ANSWERED_ALIKE)
def test_the_same_query_is_answered_alike(fixture: Path, sql: str, params: tuple[Any, ...]) -> None:
    assert_answered_alike(fixture, sql, params, shown=repr)


_TEXT = "text where a number goes (a text parameter in arithmetic"
REFUSED: list[tuple[str, tuple[Any, ...], str]] = [
    ("SELECT n + ? FROM t WHERE id = 1", ("abc",), _TEXT),
    ("SELECT n + ? FROM t WHERE id = 1", ("1.5",), _TEXT),
    ("SELECT r * ? FROM t WHERE id = 1", ("x",), _TEXT),
    ("SELECT CAST('x' AS NUMERIC)", (), _TEXT),
    ("SELECT printf('%g', 2.5)", (), "printf's %g is not carried to the postgres kind"),
    ("SELECT printf('%#o', 8)", (), "printf's %#o is not carried"),
    ("SELECT printf('%+x', 8)", (), "printf's %+x is not carried"),
    ("SELECT printf('%.3e', 1.0005)", (), "(a tie, which SQLite rounds in binary)"),
    ("SELECT printf('%.15e', 0.1)", (), "to 14 digits"),
    ("SELECT printf('%e', 1e-320)", (), "not subnormal"),
]


@pytest.mark.parametrize(("sql", "params", "named"), REFUSED)
def test_what_differs_is_refused_naming_it(
    fixture: Path, sql: str, params: tuple[Any, ...], named: str
) -> None:
    """SQLite answers each (``n + 'abc'`` is n + 0, ``%.3e`` of the double nearest 1.0005
    goes down in SQLite's binary arithmetic); PostgreSQL refuses, saying what differs (it
    said "invalid input syntax for type bigint", or refused ``%e`` and ``%x`` altogether),
    and a write by it changes nothing."""
    ours, theirs = both(fixture)
    with ours, theirs:
        assert ask(ours, sql, params) != "error"
        with pytest.raises(Exception) as caught, theirs.tool_transaction():
            theirs.agent_db.execute(sql, params).fetchall()
        assert named in str(caught.value)
        initial = theirs.state_hash()
        assert ask(theirs, f"UPDATE t SET s = ({sql}) WHERE id = 2", params) == "error"
        assert theirs.state_hash() == initial


TEXTS: list[Any] = [None, "", "hello", "é", "ÉA", "  pad  ", "a_c", "a%", "xyx", "5", " 12"]
NUMBERS: list[Any] = [None, 0, 1, -1, 2, -3, 7, -7, 0.5, 2.5, -2.5, 1.125, 12345.678, 1e-5]
FORMATS: list[Any] = ["%e", "%E", "%.2e", "%10.1e", "%-8x", "%X", "%05x", "%s|%d", "%.3f"]
CALLS: list[tuple[str, list[Any]]] = [
    ("SELECT substr(?, ?), substr(?, ?, ?)", [TEXTS, NUMBERS[:8], TEXTS, NUMBERS[:8], NUMBERS[:8]]),
    ("SELECT instr(?, ?), replace(?, ?, 'z')", TEXTS),
    ("SELECT trim(?, ?), ltrim(?), rtrim(?, 'x')", TEXTS),
    ("SELECT upper(?), lower(?), length(?)", TEXTS),
    ("SELECT round(?), round(?, 1), round(?, 2)", NUMBERS),
    ("SELECT ? / ?, ? % ?", [n for n in NUMBERS if isinstance(n, int)]),
    ("SELECT ? LIKE ?, ? LIKE ? ESCAPE '_'", TEXTS),
    ("SELECT typeof(?), CAST(? AS INTEGER), CAST(? AS REAL)", TEXTS + NUMBERS),
    ("SELECT printf(?, ?), printf(?, ?)", [FORMATS, NUMBERS, FORMATS, NUMBERS]),
    ("UPDATE t SET s = printf(?, ?) WHERE id = 3", [FORMATS, NUMBERS]),
    ("UPDATE t SET s = substr(s || ?, ?) WHERE id = 1", [TEXTS, NUMBERS[:8]]),
    ("UPDATE t SET n = ? WHERE id = 2", [n for n in NUMBERS if not isinstance(n, float)]),
    ("SELECT id, s, n FROM t ORDER BY n DESC, id", []),
    ("SELECT id FROM t ORDER BY s, id", []),
]
"""String functions with negative and zero positions, rounding at halves, integer division
and remainder of negatives, LIKE's case folding and escapes, casts and typeof of text and
numbers, printf's conversions: values a tool passes, on either kind."""


@pytest.mark.parametrize("seed", range(1, 11))
def test_generated_functions_answer_alike(fixture: Path, seed: int) -> None:
    assert_generated_alike(fixture, CALLS, seed, shown=repr)
