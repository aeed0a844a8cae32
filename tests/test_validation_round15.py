"""Fifteenth task validation and environments audit: the postgres kind refuses what it cannot
carry over, a failed regression leaves nothing behind, and validation proves what it says."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from groundstate.errors import EnvironmentFailure, SpecError
from groundstate.spec.suite import load_suite
from groundstate.validation import regress

from .test_validation import _stored_run, bank_copy, verified_transfer_to_c

CLOCK = datetime(2026, 1, 15, 9, 30)


def _postgres() -> Any:
    """The postgres kind's class, or a skip saying why it is not here."""
    pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")
    from groundstate.environments.postgres import PostgresEnvironment

    from .test_postgres import needs_postgres

    needs_postgres()
    return PostgresEnvironment


# --- what the postgres kind cannot carry over is refused, by name -------------------------------

TABLE = "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT, s TEXT);\n"
NOT_CARRIED = {
    "trigger": (
        "CREATE TABLE log (id INTEGER PRIMARY KEY, m TEXT);\n"
        "CREATE TRIGGER audit AFTER UPDATE ON a BEGIN INSERT INTO log (m) VALUES ('x'); END;",
        "trigger audit (on table a)",
    ),
    "view": ("CREATE VIEW shown AS SELECT id FROM a;", "view shown"),
    "partial unique index": (
        "CREATE UNIQUE INDEX one_on ON a (v) WHERE s = 'on';",
        "UNIQUE index one_on of a (partial: WHERE)",
    ),
    "unique index on an expression": (
        "CREATE UNIQUE INDEX lowered ON a (lower(v));",
        "UNIQUE index lowered of a (on an expression)",
    ),
    "unique index by another collation": (
        "CREATE UNIQUE INDEX folded ON a (v COLLATE NOCASE);",
        "UNIQUE index folded of a (COLLATE NOCASE on v)",
    ),
    "column collation": (
        "CREATE TABLE b (id INTEGER PRIMARY KEY, email TEXT COLLATE NOCASE UNIQUE);",
        "column b.email (COLLATE NOCASE)",
    ),
    "generated column": (
        "CREATE TABLE b (id INTEGER PRIMARY KEY, v INTEGER, twice INTEGER AS (v * 2));",
        "generated column b.twice",
    ),
    "virtual table": ("CREATE VIRTUAL TABLE notes USING fts5(body);", "virtual table notes"),
}


@pytest.mark.parametrize("what", sorted(NOT_CARRIED))
def test_postgres_refuses_what_it_cannot_carry_over_naming_it_and_the_fixture(
    tmp_path: Path, what: str
) -> None:
    """Triggers and views were dropped without a word (an audit row the trigger wrote on
    SQLite was never written, a view the tools read did not exist); a partial UNIQUE index
    became a whole-column one and refused valid rows, one on an expression or by NOCASE was
    dropped or made case-sensitive, and a generated column failed the build with "extra data
    after last expected column". Each is now refused, named, with the fixture's path."""
    postgres = _postgres()
    sql, named = NOT_CARRIED[what]
    fixture = tmp_path / "shop.sql"
    fixture.write_text(f"{TABLE}{sql}\nINSERT INTO a VALUES (1, 'x', 'on');\n")
    with pytest.raises(EnvironmentFailure) as caught:
        postgres(fixture, clock=CLOCK).close()
    message = str(caught.value)
    assert named in message
    assert str(fixture) in message
    assert "does not carry over" in message


def test_postgres_still_carries_a_plain_unique_index_and_a_binary_collation(
    tmp_path: Path,
) -> None:
    postgres = _postgres()
    fixture = tmp_path / "shop.sql"
    fixture.write_text(
        f"{TABLE}CREATE UNIQUE INDEX by_v ON a (v COLLATE BINARY, s);\n"
        "CREATE INDEX folded ON a (v COLLATE NOCASE);\n"  # not unique: only a way to search
        "INSERT INTO a VALUES (1, 'x', 'on');\n"
    )
    with postgres(fixture, clock=CLOCK) as env:
        assert [t.name for t in env.tables] == ["a"]
        assert 'UNIQUE ("v", "s")' in env.tables[0].ddl


# --- a regression that fails leaves nothing behind ---------------------------------------------


def _tools_reading_a_data_file(root: Path) -> None:
    (root / "limit.json").write_text("5")
    with (root / "tools.py").open("a") as handle:
        handle.write(
            "\nimport json, pathlib\n"
            "LIMIT = json.loads((pathlib.Path(__file__).parent / 'limit.json').read_text())\n"
        )


def test_a_failed_regression_into_a_new_folder_leaves_nothing(tmp_path: Path) -> None:
    """The case's copy did not load (its tools read a data file regress does not know of):
    the task file and solutions were removed, but suite.yaml, the fixture, tools.py,
    checks.py, the policy and the folders stayed: a half-made suite that loaded as a suite."""
    root = bank_copy(tmp_path)
    _tools_reading_a_data_file(root)
    suite = load_suite(root)
    run = _stored_run(tmp_path, suite, verified_transfer_to_c)
    target = tmp_path / "new" / "regressions"
    with pytest.raises(SpecError, match="limit.json"):
        regress(run, suite, into=target)
    assert not (tmp_path / "new").exists()


def test_a_failed_regression_into_a_suite_removes_only_what_it_added(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    _tools_reading_a_data_file(root)
    suite = load_suite(root)
    run = _stored_run(tmp_path, suite, verified_transfer_to_c)
    target = tmp_path / "regressions"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    with pytest.raises(SpecError, match="limit.json"):
        regress(run, suite, into=target)
    assert sorted(p.name for p in target.iterdir()) == ["notes.txt"]
    shutil.copyfile(root / "limit.json", target / "limit.json")  # what it lacked
    case = regress(run, suite, into=target)
    assert case.stem in load_suite(target).tasks
