"""Seventeenth environments and task validation audit: the same fixture and SQL mean the same
on SQLite and PostgreSQL, or the fixture or assertion is refused by name.

SQLite's ``LIKE`` ignores ASCII case and has no escape character, its NULLs sort first, a
column of no or NUMERIC affinity stores values as given, and a default is stored under the
column's affinity. PostgreSQL differed on each, silently: the same task graded otherwise."""

from __future__ import annotations

import random
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from groundstate.environments.postgres_sql import sqlite_meaning
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import FixtureNotCarried
from groundstate.validation.static import check_suite

from .conftest import EditTask
from .test_validation_round15 import _postgres

CLOCK = datetime(2026, 1, 15, 9, 30)


# --- the rewrite itself (no server needed) ------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "meant"),
    [
        ("SELECT 1 FROM t WHERE a LIKE ?", "SELECT 1 FROM t WHERE a ILIKE ? ESCAPE ''"),
        (
            "SELECT 1 FROM t WHERE a NOT LIKE '%' || ? || '%' AND b = 1",
            "SELECT 1 FROM t WHERE a NOT ILIKE '%' || ? || '%' ESCAPE '' AND b = 1",
        ),
        (
            "SELECT 1 FROM t WHERE a LIKE 'x!%' ESCAPE '!'",
            "SELECT 1 FROM t WHERE a ILIKE 'x!%' ESCAPE '!'",
        ),
        ("SELECT (a LIKE lower(?)) FROM t", "SELECT (a ILIKE lower(?) ESCAPE '') FROM t"),
        (
            "SELECT a FROM t ORDER BY a, b DESC, c NULLS LAST, 1 LIMIT 2",
            "SELECT a FROM t ORDER BY a NULLS FIRST, b DESC NULLS LAST, c NULLS LAST, "
            "1 NULLS FIRST LIMIT 2",
        ),
        (
            "SELECT rank() OVER (ORDER BY x DESC) FROM (SELECT x FROM t ORDER BY x) s",
            "SELECT rank() OVER (ORDER BY x DESC NULLS LAST) FROM (SELECT x FROM t ORDER BY x "
            "NULLS FIRST) s",
        ),
        # what only looks like SQL is left alone: strings, quoted names, comments
        ("SELECT 'a LIKE b ORDER BY c', \"LIKE\" FROM t -- ORDER BY x", None),
    ],
)
def test_like_and_order_by_are_written_as_sqlite_means_them(sql: str, meant: str | None) -> None:
    assert sqlite_meaning(sql) == (meant or sql)


# --- generated fixtures: the same answers on both kinds ----------------------------------------

_NAMES = ["Alice", "alice", "ALICE", "bob", "Bob ", "a_b", "a\\b", "a%b", "École", "école", ""]


def _generated_fixture(path: Path, seed: int) -> Path:
    """Rows whose names differ by case, trailing spaces, LIKE's wildcards and a backslash,
    with NULLs in every sortable column."""
    draw = random.Random(seed)
    rows = []
    for key in range(1, 13):
        name = draw.choice([*_NAMES, None])
        n = draw.choice([None, draw.randint(-3, 3)])
        x = draw.choice([None, draw.randint(-2, 2) / 2])
        quoted = "NULL" if name is None else "'" + name.replace("'", "''") + "'"
        rows.append(
            f"({key}, {quoted}, {'NULL' if n is None else n}, {'NULL' if x is None else x})"
        )
    path.write_text(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER, x REAL);\n"
        f"INSERT INTO t VALUES {', '.join(rows)};\n"
    )
    return path


_QUERIES = [
    ("SELECT id FROM t WHERE name LIKE ? ORDER BY id", (pattern,))
    for pattern in ["alice", "ALI%", "%b", "a_b", "a\\b", "a\\_b", "%\\%", "bob", "bob%", "é%", "%"]
] + [
    ("SELECT id FROM t WHERE name NOT LIKE 'a%' ORDER BY id", ()),
    ("SELECT id FROM t WHERE name LIKE 'A' || '%' ESCAPE '!' ORDER BY id", ()),
    ("SELECT id FROM t ORDER BY n, id", ()),
    ("SELECT id FROM t ORDER BY n DESC, id", ()),
    ("SELECT id FROM t ORDER BY x DESC, n, id DESC", ()),
    ("SELECT id FROM t ORDER BY name, id LIMIT 3", ()),
    ("SELECT id, row_number() OVER (ORDER BY n DESC, id) FROM t ORDER BY id", ()),
    ("SELECT id FROM t WHERE name = 'Bob' ORDER BY id", ()),
    ("SELECT id FROM t WHERE name = 'Bob ' ORDER BY id", ()),
    ("SELECT id FROM t WHERE n = '1' ORDER BY id", ()),
    ("SELECT id FROM t WHERE n > ? ORDER BY id", ("0",)),
]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_fixtures_answer_alike_on_both_kinds(tmp_path: Path, seed: int) -> None:
    """LIKE matched case-sensitively and took ``\\`` as an escape on PostgreSQL, and NULLs
    sorted last ascending: a tool's search or a grader's ``ORDER BY ... LIMIT`` found other
    rows. Every query now answers as on SQLite."""
    postgres = _postgres()
    fixture = _generated_fixture(tmp_path / "t.sql", seed)
    with SqliteEnvironment(fixture, clock=CLOCK) as ours, postgres(fixture, clock=CLOCK) as theirs:
        assert ours.state_hash() == theirs.state_hash()
        for sql, params in _QUERIES:
            expected = ours.evaluator_view().query(sql, params)
            assert theirs.evaluator_view().query(sql, params) == expected, (sql, params)


def test_an_agents_like_and_a_checks_like_are_sqlite_s_on_postgres(tmp_path: Path) -> None:
    """The agent's connection and a fixture's CHECK take LIKE as SQLite does: a status the
    CHECK lets in on SQLite is let in on PostgreSQL, and the tool's search finds it."""
    postgres = _postgres()
    fixture = tmp_path / "c.sql"
    fixture.write_text(
        "CREATE TABLE o (id INTEGER PRIMARY KEY, status TEXT CHECK (status LIKE 'open%'));\n"
        "INSERT INTO o VALUES (1, 'OPEN');\n"
    )
    with postgres(fixture, clock=CLOCK) as env, env.tool_transaction():
        env.agent_db.execute("INSERT INTO o (status) VALUES (?)", ("Open-late",))
        found = env.agent_db.execute("SELECT id FROM o WHERE status LIKE ? ORDER BY id", ("open%",))
        assert found.fetchall() == [(1,), (2,)]


# --- what cannot mean the same is refused, by fixture, column and reason ------------------------

REFUSED = {
    "a default stored as REAL by SQLite, rounded by PostgreSQL": (
        "CREATE TABLE t (id INTEGER PRIMARY KEY, q INTEGER DEFAULT 1.5);",
        ["column t.q DEFAULT 1.5 gives 2 on PostgreSQL, where SQLite stores 1.5"],
    ),
    "a default SQLite stores as other text": (
        "CREATE TABLE t (id INTEGER PRIMARY KEY, q TEXT DEFAULT 1e3);",
        ["column t.q DEFAULT 1e3 gives '1000' on PostgreSQL, where SQLite stores '1000.0'"],
    ),
    "a clock default in an INTEGER column": (
        "CREATE TABLE t (id INTEGER PRIMARY KEY, at INTEGER DEFAULT CURRENT_DATE);",
        ["PostgreSQL refuses column t.at DEFAULT CURRENT_DATE"],
    ),
    "a column of no type": (
        "CREATE TABLE t (id INTEGER PRIMARY KEY, u);\nINSERT INTO t VALUES (1, 5);",
        ["column t.u (no type) has no type affinity"],
    ),
    "text in a BLOB column": (
        "CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB);\nINSERT INTO t VALUES (1, 'x');",
        ["column t.b (BLOB) has no type affinity"],
    ),
    "a DECIMAL column of whole numbers": (
        "CREATE TABLE t (id INTEGER PRIMARY KEY, price DECIMAL(10,2));\n"
        "INSERT INTO t VALUES (1, 3);",
        ["column t.price (DECIMAL(10,2)) has NUMERIC affinity", "PostgreSQL's bigint rounds 2.5"],
    ),
    "an empty NUMERIC column": (
        "CREATE TABLE t (id INTEGER PRIMARY KEY, amount NUMERIC);",
        ["column t.amount (NUMERIC) has NUMERIC affinity"],
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_fixture_postgres_would_read_otherwise_is_refused_by_name(
    tmp_path: Path, case: str
) -> None:
    postgres = _postgres()
    sql, said = REFUSED[case]
    fixture = tmp_path / "f.sql"
    fixture.write_text(sql + "\n")
    with pytest.raises(FixtureNotCarried) as refused:
        postgres.check_fixture(fixture, CLOCK)
    assert str(refused.value).startswith(f"fixture {fixture}: ")
    for words in said:
        assert words in str(refused.value)
    with SqliteEnvironment(fixture, clock=CLOCK) as env:  # SQLite builds it as ever
        assert env.state_hash()


def test_what_both_kinds_store_alike_is_still_carried(tmp_path: Path) -> None:
    postgres = _postgres()
    fixture = tmp_path / "ok.sql"
    fixture.write_text(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, q INTEGER DEFAULT 0, r REAL DEFAULT 2, "
        "s TEXT DEFAULT 'open', d DATE, b BLOB, c INTEGER DEFAULT '7');\n"
        "INSERT INTO t (id, d, b) VALUES (1, '2026-01-01', x'00ff');\n"
    )
    with SqliteEnvironment(fixture, clock=CLOCK) as ours, postgres(fixture, clock=CLOCK) as theirs:
        assert ours.state_hash() == theirs.state_hash()
        for env in (ours, theirs):
            with env.tool_transaction():
                env.agent_db.execute("INSERT INTO t (id, b) VALUES (2, ?)", (b"\x01",))
        assert ours.state_hash() == theirs.state_hash()
        row = "SELECT q, r, s, c, b FROM t WHERE id = 2"
        assert theirs.evaluator_view().query(row) == [(0, 2.0, "open", 7, b"\x01")]


def test_a_clock_default_reads_the_tasks_clock_on_both_kinds(tmp_path: Path) -> None:
    """``DEFAULT CURRENT_TIMESTAMP`` gave the task's clock as SQLite's text on SQLite and the
    server's clock, in PostgreSQL's text (``2026-12-04 11:10:00.12+00``), on PostgreSQL: every
    row an agent inserted differed. It is now written on the harness's clock."""
    postgres = _postgres()
    fixture = tmp_path / "clock.sql"
    fixture.write_text(
        "CREATE TABLE n (id INTEGER PRIMARY KEY, note TEXT, at TEXT DEFAULT CURRENT_TIMESTAMP, "
        "d TEXT DEFAULT (CURRENT_DATE), t TEXT DEFAULT current_time);\n"
    )
    with SqliteEnvironment(fixture, clock=CLOCK) as ours, postgres(fixture, clock=CLOCK) as theirs:
        for env in (ours, theirs):
            env.advance_clock(61.5)
            with env.tool_transaction():
                env.agent_db.execute("INSERT INTO n (note) VALUES ('x')")
        expected = [("2026-01-15 09:31:01", "2026-01-15", "09:31:01")]
        for env in (ours, theirs):
            assert env.evaluator_view().query("SELECT at, d, t FROM n") == expected
        assert ours.state_hash() == theirs.state_hash()


# --- check: a grader's query answered otherwise on the suite's kind ----------------------------


def _bank_on_postgres(edited_bank: EditTask, assertion: dict[str, Any]) -> Path:
    def edit(task: dict[str, Any]) -> None:
        task["outcome_assertions"].append(assertion)

    root = edited_bank(edit).root
    (root / "suite.yaml").write_text((root / "suite.yaml").read_text() + "environment: postgres\n")
    return root


def test_check_names_a_grader_query_postgres_answers_otherwise(edited_bank: EditTask) -> None:
    """``9223372036854775807 + 1`` is a REAL on SQLite and an error on PostgreSQL (until the
    twentieth round: ``CAST(4e9 AS INTEGER)``, now SQLite's 64 bits on both): the task passed
    on one kind and was a grader failure on the other, with nothing said before. (Until the
    nineteenth round the example was ``pin = 1234`` on a TEXT column, now compared as on
    SQLite: ``tests/test_envs_round19.py``.)"""
    _postgres()
    root = _bank_on_postgres(
        edited_bank,
        {
            "id": "typed",
            "sql": "SELECT count(*) FROM accounts WHERE pin = 1234 AND 9223372036854775807 + 1 > 0",
            "expect_rows": [[1]],
        },
    )
    problems = [p for p in check_suite(root).problems if p.severity == "error"]
    assert [(p.file, p.field) for p in problems] == [
        (str(root / "tasks" / "transfer.yaml"), "outcome_assertions[3].sql")
    ]
    reason = problems[0].reason
    assert "answered otherwise on the postgres kind than on SQLite" in reason
    assert "SQLite: [(1,)]" in reason
    assert "postgres: error: bigint out of range" in reason
    assert problems[0].line is not None


def test_check_passes_a_grader_query_carried_alike(edited_bank: EditTask) -> None:
    _postgres()
    root = _bank_on_postgres(
        edited_bank,
        {
            "id": "alike",
            "sql": "SELECT owner FROM accounts WHERE owner LIKE 'A%' ORDER BY balance DESC",
            "expect_rows": [["ana"]],
        },
    )
    assert [p for p in check_suite(root).problems if p.severity == "error"] == []


# --- malformed fixtures: text in a numeric column of a SQL fixture -----------------------------


def test_check_names_text_in_a_numeric_column_of_a_sql_fixture(tmp_path: Path) -> None:
    """A data fixture's ``balance: ten`` was an error; the same row written in SQL
    (``'1,000'``) passed, and compared above every number (``balance >= 30`` held)."""
    import shutil

    from .conftest import BANK

    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    fixture = root / "fixtures" / "bank.sql"
    fixture.write_text(
        fixture.read_text()
        + "INSERT INTO accounts VALUES ('D', 'dee', '1,000', '1'), ('E', 'ed', 'lots', '2');\n"
    )
    problems = [p for p in check_suite(root).problems if p.severity == "error"]
    assert [(p.file, p.field, p.line) for p in problems] == [(str(fixture), "accounts.balance", 6)]
    assert problems[0].reason.startswith(
        "holds the text '1,000' in the row with key \"D\" (and in 1 more rows), but "
        "accounts.balance is INTEGER"
    )


# --- functions: SQLite's substr and round ---------------------------------------------------------


def _grid_fixture(path: Path) -> Path:
    """Every start and length from -7 to 7 on words with and without accents, and REALs
    around every half."""
    rows = []
    key = 0
    for word in ["hello", "", "héllo"]:
        for start in range(-7, 8):
            for length in range(-7, 8):
                key += 1
                real = (key - 300) / 8 + (0.005 if key % 3 == 0 else 0)
                rows.append(f"({key}, '{word}', {start}, {length}, {real!r})")
    path.write_text(
        "CREATE TABLE g (id INTEGER PRIMARY KEY, w TEXT, a INTEGER, b INTEGER, r REAL);\n"
        f"INSERT INTO g VALUES {', '.join(rows)};\n"
    )
    return path


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT id, substr(w, a, b), substr(w, a), substring(w, a, b) FROM g ORDER BY id",
        "SELECT id, substr(w, -2), substr(w, 0, 2), substr(w, a, 3) FROM g ORDER BY id",
        "SELECT id, round(r), round(r, 1), round(r, 2), round(r, a) FROM g ORDER BY id",
        "SELECT id, round(r * 1.1, 2), round(-r) FROM g WHERE round(r) = 2 ORDER BY id",
    ],
)
def test_substr_and_round_give_sqlite_s_values_on_postgres(tmp_path: Path, sql: str) -> None:
    """``substr(w, -3)`` is the last three characters on SQLite and the whole word on
    PostgreSQL, ``substr(w, -3, 2)`` two of them and ``''``, and ``round(2.5)`` of a REAL is
    3 on SQLite and 2 on PostgreSQL (half to even); a ``round(r, 2)`` of a REAL, and a
    ``substr`` given an INTEGER column, were errors there. A price a tool rounds, or a code a
    grader cuts, was another value on the other kind."""
    postgres = _postgres()
    fixture = _grid_fixture(tmp_path / "g.sql")
    with SqliteEnvironment(fixture, clock=CLOCK) as ours, postgres(fixture, clock=CLOCK) as theirs:
        expected = ours.evaluator_view().query(sql)
        assert expected
        assert theirs.evaluator_view().query(sql) == expected


# --- a reset that does not restore the rows is proven invalid on PostgreSQL -----------------------


def test_postgres_reset_check_catches_a_reset_that_keeps_the_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The counters (sixteenth round) and the clock were probed on PostgreSQL; a reset that
    put them back and left the agent's rows as they were fails ``reset`` too, naming the
    table."""
    _postgres()
    from groundstate.environments import postgres
    from groundstate.spec.suite import load_suite, with_environment
    from groundstate.validation.checks import check_reset
    from groundstate.validation.replay import Proof

    from .conftest import BANK

    def keeps_rows(db: Any, template: Any, tables: Any) -> None:
        with db.transaction():
            db.execute(f"TRUNCATE {postgres.INTERNAL}.meta")
            postgres._fill_internal(db, template.fixture)

    suite = with_environment(load_suite(BANK), "postgres")
    monkeypatch.setattr(postgres, "_reload", keeps_rows)
    passed, detail = check_reset(Proof(suite, suite.tasks["transfer"]))
    assert not passed
    assert "rows of accounts differ" in detail
