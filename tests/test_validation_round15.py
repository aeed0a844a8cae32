"""Fifteenth task validation and environments audit: the postgres kind refuses what it cannot
carry over, a failed regression leaves nothing behind, and validation proves what it says."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from groundstate.environments.base import diff_snapshots
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import EnvironmentFailure, SpecError
from groundstate.spec.suite import load_suite, with_environment
from groundstate.validation import regress, validate_task, validation_key
from groundstate.validation.regress import RegressionRefused

from .conftest import BANK, EditTask
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
    with pytest.raises(SpecError, match=r"limit\.json"):
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
    with pytest.raises(SpecError, match=r"limit\.json"):
        regress(run, suite, into=target)
    assert sorted(p.name for p in target.iterdir()) == ["notes.txt"]
    shutil.copyfile(root / "limit.json", target / "limit.json")  # what it lacked
    case = regress(run, suite, into=target)
    assert case.stem in load_suite(target).tasks


# --- the per-table grader-sensitivity probe on PostgreSQL --------------------------------------


def _only_balances(task: dict[str, Any]) -> None:
    task["outcome_assertions"] = [
        a for a in task["outcome_assertions"] if a["id"] != "exactly-one-transfer"
    ]


def test_postgres_finds_a_table_the_oracle_changes_and_no_assertion_reads(
    edited_bank: EditTask,
) -> None:
    """The probe put tables back only where the environment had ``restore_collection``: the
    SQLite kind. The same task on PostgreSQL passed grader_sensitivity with its transfers
    table read by no assertion; now it fails there too, naming the table."""
    _postgres()
    suite = with_environment(edited_bank(_only_balances), "postgres")
    sensitivity = validate_task(suite, "transfer").check("grader_sensitivity")
    assert not sensitivity.passed
    assert "grader gap: oracle changes transfers, yet its final state passes with transfers" in (
        sensitivity.detail
    )
    assert "changes accounts" not in sensitivity.detail


def test_postgres_a_task_checking_every_table_it_changes_says_so(edited_bank: EditTask) -> None:
    _postgres()
    suite = with_environment(edited_bank(lambda task: None), "postgres")
    sensitivity = validate_task(suite, "transfer").check("grader_sensitivity")
    assert sensitivity.passed, sensitivity.detail
    assert "with transfers as it was: exactly-one-transfer fail" in sensitivity.detail


def test_postgres_restores_one_table_past_its_foreign_keys_and_reset_undoes_it(
    tmp_path: Path,
) -> None:
    """Putting a parent table back neither cascades into its children nor is refused for
    the child rows that now refer to nothing (as on SQLite); the state, its hash and the
    next reset read the restored table."""
    postgres = _postgres()
    fixture = tmp_path / "shop.sql"
    fixture.write_text(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY AUTOINCREMENT, status TEXT);\n"
        "CREATE TABLE items (id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL "
        "REFERENCES orders(id) ON DELETE CASCADE, sku TEXT);\n"
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);\n"
        "INSERT INTO orders VALUES (1, 'open');\n"
        "INSERT INTO items VALUES (1, 1, 'sock');\n"
    )
    with postgres(fixture, clock=CLOCK) as env:
        initial = env.reset()
        with env.tool_transaction():
            env.agent_db.execute("UPDATE orders SET status = 'closed' WHERE id = 1")
            env.agent_db.execute("INSERT INTO orders (status) VALUES ('new')")
            env.agent_db.execute("INSERT INTO items VALUES (2, 2, 'hat')")
            env.agent_db.execute("INSERT INTO notes VALUES (1, 'kept')")
        env.restore_collection("orders")
        assert env.evaluator_view().query("SELECT id, status FROM orders") == [(1, "open")]
        assert sorted(env.evaluator_view().query("SELECT id FROM items")) == [(1,), (2,)]
        changed = diff_snapshots(env.initial_view().snapshot(), env.snapshot()).tables
        assert set(changed) == {"items", "notes"}
        with env.tool_transaction() as effects:  # the restore is no write of the agent's
            env.agent_db.execute("SELECT 1")
        assert effects.writes == []
        env.restore_collection("items")
        env.restore_collection("notes")
        assert env.state_hash() != initial  # the AUTOINCREMENT counter moved: not a table
        assert env.reset() == initial
        with env.tool_transaction():
            env.agent_db.execute("INSERT INTO orders (status) VALUES ('again')")
        assert env.evaluator_view().query("SELECT max(id) FROM orders") == [(2,)]


# --- the validation cache follows the PostgreSQL server's version ------------------------------


def test_a_postgres_suite_is_proven_again_on_another_server_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The key held SQLite's version, which a postgres suite's proofs do not run on, and not
    the server's: a verdict cached against one server (say 14, given by URL) was read back
    on another (16), where the same SQL may answer otherwise."""
    _postgres()
    from groundstate.environments.postgres_server import shared_server

    suite = with_environment(load_suite(BANK), "postgres")
    before = validation_key(suite, suite.tasks["transfer"])
    assert validation_key(suite, suite.tasks["transfer"]) == before
    monkeypatch.setattr(shared_server(), "version", shared_server().version + 10000)
    assert validation_key(suite, suite.tasks["transfer"]) != before


# --- a regression into another suite is proven on the run's fixture and environment -----------


def _other_suite(root: Path, target: Path, more: str = "") -> None:
    """A suite at *target* with the bank's tools and policy, its fixtures in ``data/``."""
    target.mkdir()
    for name in ("tools.py", "policy.md"):
        shutil.copyfile(root / name, target / name)
    config = (root / "suite.yaml").read_text().replace("canary: transfer\n", "")
    (target / "suite.yaml").write_text(f"{config}\nfixtures: data\n{more}")


def test_a_regression_into_a_suite_with_another_fixtures_folder_uses_the_runs_fixture(
    tmp_path: Path,
) -> None:
    """The fixture was copied to the original suite's fixtures folder (``fixtures/``) inside
    the target, whose tasks read theirs from ``data/``: the case loaded, and was proven on the
    target's own ``data/bank.sql``, another database than the run's. The fixture now goes
    where the target looks, and a different file there is refused."""
    root = bank_copy(tmp_path)
    suite = load_suite(root)
    run = _stored_run(tmp_path, suite, verified_transfer_to_c)
    target = tmp_path / "other"
    _other_suite(root, target)
    case = regress(run, suite, into=target)
    regressed = load_suite(target)
    fixture = regressed.fixture_path(regressed.tasks[case.stem])
    assert fixture == target / "data" / "bank.sql"
    assert fixture.read_bytes() == (root / "fixtures" / "bank.sql").read_bytes()
    assert not (target / "fixtures").exists()

    elsewhere = tmp_path / "elsewhere"
    _other_suite(root, elsewhere)
    (elsewhere / "data").mkdir()
    (elsewhere / "data" / "bank.sql").write_text("CREATE TABLE accounts (id TEXT PRIMARY KEY);\n")
    with pytest.raises(RegressionRefused, match=r"data/bank\.sql differs"):
        regress(run, suite, into=elsewhere)


def test_a_regression_into_a_suite_on_another_environment_is_refused(tmp_path: Path) -> None:
    """A target suite on ``environment: postgres`` took a case whose run was on SQLite, and
    proved it there without a word."""
    root = bank_copy(tmp_path)
    suite = load_suite(root)
    run = _stored_run(tmp_path, suite, verified_transfer_to_c)
    target = tmp_path / "other"
    _other_suite(root, target, "environment: postgres\n")
    with pytest.raises(RegressionRefused, match="on environment 'postgres'"):
        regress(run, suite, into=target)
    assert sorted(p.name for p in target.iterdir()) == ["policy.md", "suite.yaml", "tools.py"]


# --- a row the oracle changes that no assertion reads ------------------------------------------


def _credit_only(task: dict[str, Any]) -> None:
    """Balances checked for B alone: the debit of A is read by nothing."""
    task["outcome_assertions"] = [
        {
            "id": "credited",
            "sql": "SELECT balance FROM accounts WHERE id = 'B'",
            "expect_rows": [[80]],
        },
        {
            "id": "one-transfer-row",
            "state_diff": {"transfers": {"added": [{"source": "A", "target": "B", "amount": 30}]}},
            "nothing_else_changed": False,
        },
    ]
    task.pop("partial_credit_rubric", None)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_row_the_oracle_changes_and_no_assertion_reads_is_a_grader_gap(
    edited_bank: EditTask, kind: str
) -> None:
    """The transfer debits A and credits B in one table, one call. Graded on B's balance
    alone, leaving the call out fails and putting accounts back whole fails, so every probe
    found a check; yet an agent crediting B from nowhere, A untouched, passed. Each changed
    row is now put back alone too: A's is a gap, named by its key."""
    if kind == "postgres":
        _postgres()
    suite = with_environment(edited_bank(_credit_only), kind)
    sensitivity = validate_task(suite, "transfer").check("grader_sensitivity")
    assert not sensitivity.passed
    assert 'grader gap: oracle changes the row "A" of accounts' in sensitivity.detail
    assert 'the row "B"' not in sensitivity.detail


def test_a_task_checking_every_row_it_changes_passes_the_row_probe(
    edited_bank: EditTask,
) -> None:
    sensitivity = validate_task(edited_bank(lambda task: None), "transfer").check(
        "grader_sensitivity"
    )
    assert sensitivity.passed, sensitivity.detail
    assert "the row" not in sensitivity.detail


def test_restoring_rows_leaves_the_others_and_reset_undoes_it(tmp_path: Path) -> None:
    fixture = tmp_path / "f.sql"
    fixture.write_text(
        "CREATE TABLE a (id INTEGER PRIMARY KEY, v);\n"
        "CREATE TABLE b (x);\n"  # no primary key: rows are keyed by rowid
        "INSERT INTO a VALUES (1, 10), (2, 20);\n"
        "INSERT INTO b VALUES ('one'), ('two');\n"
    )
    with SqliteEnvironment(fixture, clock=CLOCK) as env:
        initial = env.reset()
        with env.tool_transaction():
            env.agent_db.execute("UPDATE a SET v = 11 WHERE id = 1")
            env.agent_db.execute("DELETE FROM a WHERE id = 2")
            env.agent_db.execute("INSERT INTO a VALUES (3, 30)")
            env.agent_db.execute("UPDATE b SET x = 'changed'")
        env.restore_rows("a", ["2", "3"])
        assert env.evaluator_view().query("SELECT id, v FROM a ORDER BY id") == [(1, 11), (2, 20)]
        env.restore_rows("b", ["1"])
        rows = env.evaluator_view().query("SELECT rowid, x FROM b ORDER BY rowid")
        assert rows == [(1, "one"), (2, "changed")]
        env.restore_rows("a", ["1"])
        env.restore_rows("b", ["2"])
        assert env.state_hash() == initial
        assert env.reset() == initial


def test_postgres_reset_check_says_which_table_it_could_not_probe(edited_bank: EditTask) -> None:
    """The SQLite kind's reset check says a table the task lets no agent write went unprobed
    by a deletion; the postgres kind left it out of its evidence without a word."""
    _postgres()
    suite = with_environment(edited_bank(lambda task: None), "postgres")
    reset = validate_task(suite, "transfer").check("reset")
    assert reset.passed, reset.detail
    assert "deleted a row of accounts" in reset.detail
    assert "could not delete a row of audit (the task's permissions" in reset.detail
