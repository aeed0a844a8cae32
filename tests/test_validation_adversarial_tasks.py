"""Broken tasks an outside team would write to test ``validate`` (third audit of issues 4, 12):
each must be reported invalid with the right check named and a clear reason, and each near
miss (the correct form of the same thing) must still pass.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import yaml

from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.spec.suite import load_suite
from groundstate.store import RunStore
from groundstate.validation import ensure_valid, validate_task
from groundstate.validation.static import check_suite

from .conftest import EditTask
from .test_validation import add_checks, bank_copy, write_solution

# --- a grader that passes only the first time it is asked ------------------------------------

FIRST_TIME = """
CALLS = []


def first_call_only(s0, sT):
    CALLS.append(1)
    return len(CALLS) == 1


def first_run_only(s0, sT):
    import pathlib, tempfile

    marker = pathlib.Path(tempfile.gettempdir()) / MARKER
    if marker.exists():
        return False
    marker.write_text("graded")
    return True
"""


@pytest.mark.parametrize("check", ["first_call_only", "first_run_only"])
def test_a_check_that_passes_only_the_first_time_it_grades_is_caught(
    tmp_path: Path, edited_bank: EditTask, check: str
) -> None:
    marker = f"groundstate-first-run-{tmp_path.name}"
    add_checks(bank_copy(tmp_path), FIRST_TIME + f"\nMARKER = {marker!r}\n")
    try:
        suite = edited_bank(
            lambda task: task["outcome_assertions"].append(
                {"id": "lucky-once", "check": f"checks.py:{check}"}
            )
        )
        validity = validate_task(suite, "transfer")
    finally:
        (Path(__import__("tempfile").gettempdir()) / marker).unlink(missing_ok=True)
    assert validity.check("solvable").passed  # the oracle's own attempt was the first grading
    determinism = validity.check("grader_determinism")
    assert not determinism.passed
    assert "lucky-once=pass vs lucky-once=fail" in determinism.detail, determinism.detail
    assert "depends on earlier gradings or runs" in determinism.detail


# --- a fixture that builds differently each time ----------------------------------------------

NOT_DETERMINISTIC = [
    ("INSERT INTO audit VALUES (2, random());", "random()"),
    ("INSERT INTO audit VALUES (2, hex(randomblob(4)));", "randomblob(4)"),
    ("INSERT INTO audit VALUES (2, datetime('now'));", "datetime('now')"),
    ("INSERT INTO audit VALUES (2, date());", "date()"),
    ("INSERT INTO audit VALUES (2, julianday(' NOW '));", "julianday(' NOW ')"),
    ("INSERT INTO audit VALUES (2, strftime('%s', 'now', '-1 day'));", "strftime('%s', 'now'"),
    ("INSERT INTO audit VALUES (2, strftime('%Y'));", "strftime('%Y')"),
    ("INSERT INTO audit VALUES (2, CURRENT_DATE);", "CURRENT_DATE"),
    (
        "CREATE TABLE seen (id INTEGER PRIMARY KEY, at TEXT DEFAULT CURRENT_TIMESTAMP);"
        " INSERT INTO seen (id) VALUES (1);",
        "CURRENT_TIMESTAMP",
    ),
]


@pytest.mark.parametrize(("sql", "named"), NOT_DETERMINISTIC)
def test_a_fixture_drawing_random_values_or_the_wall_clock_is_refused(
    tmp_path: Path, sql: str, named: str
) -> None:
    root = bank_copy(tmp_path)
    fixture = root / "fixtures" / "bank.sql"
    fixture.write_text(fixture.read_text() + sql + "\n")
    # two builds within one second agree on the clock (and may on a coin), so the reset check
    # alone would pass it: the build itself must refuse
    problems = check_suite(root).errors
    assert [p.file for p in problems] == [str(fixture)], problems
    assert named in problems[0].reason and "two fresh builds differ" in problems[0].reason
    reset = validate_task(load_suite(root), "transfer").check("reset")
    assert not reset.passed and named in reset.detail


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO audit VALUES (2, date('2026-01-15', '+1 day'));",
        "INSERT INTO audit VALUES (2, strftime('%Y-%m', '2026-01-15 10:00'));",
        "INSERT INTO audit VALUES (2, julianday('2026-01-15') - julianday('2026-01-01'));",
        "CREATE TABLE seen (id INTEGER PRIMARY KEY, at TEXT DEFAULT CURRENT_TIMESTAMP);"
        " INSERT INTO seen VALUES (1, '2026-01-15 10:00:00');",
        "CREATE TABLE days (d TEXT, day TEXT GENERATED ALWAYS AS (date(d)));"
        " CREATE INDEX days_by_month ON days (strftime('%m', d));"
        " INSERT INTO days (d) VALUES ('2026-01-15 10:00');",
    ],
)
def test_fixed_dates_and_unused_clock_defaults_still_build(tmp_path: Path, sql: str) -> None:
    root = bank_copy(tmp_path)
    fixture = root / "fixtures" / "bank.sql"
    fixture.write_text(fixture.read_text() + sql + "\n")
    assert check_suite(root).errors == []
    with SqliteEnvironment(fixture, clock=load_suite(root).tasks["transfer"].clock) as env:
        audit = env.initial_view().query("SELECT note FROM audit WHERE id = 2")
    plain = sqlite3.connect(":memory:")  # the date functions answer as SQLite's own do
    plain.executescript(fixture.read_text())
    assert audit == plain.execute("SELECT note FROM audit WHERE id = 2").fetchall()
    assert ("INTO audit" in sql) == (audit != [])


# --- cached validity follows every file a task depends on -------------------------------------

SCALED = "(amount, source))"


def _tools_through(root: Path, module: str, line: str) -> None:
    """The bank's transfer debits ``amount * FACTOR``, FACTOR read from *module*."""
    tools = (root / "tools.py").read_text()
    tools = tools.replace("from typing import Any\n", f"from typing import Any\n\n{line}\n")
    tools = tools.replace(SCALED, f"(amount * {module}.FACTOR, source))", 1)
    (root / "tools.py").write_text(tools)


@pytest.mark.parametrize(
    ("files", "line", "edited"),
    [
        ({"helpers.py": "FACTOR = 1\n"}, "import helpers", "helpers.py"),
        (  # a helper the tools reach through another helper
            {"helpers.py": "from rates import FACTOR\n", "rates.py": "FACTOR = 1\n"},
            "import helpers",
            "rates.py",
        ),
        (  # a package: every module in it
            {
                "bankpkg/__init__.py": "from bankpkg.rates import FACTOR\n",
                "bankpkg/rates.py": "FACTOR = 1\n",
            },
            "import bankpkg as helpers",
            "bankpkg/rates.py",
        ),
    ],
)
def test_a_cached_validity_is_proven_again_when_a_module_the_tools_import_changes(
    tmp_path: Path, files: dict[str, str], line: str, edited: str
) -> None:
    root = bank_copy(tmp_path)
    for name, text in files.items():
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text(text)
    _tools_through(root, "helpers", line)
    with RunStore(tmp_path / "runs.db") as store:
        assert ensure_valid(load_suite(root), store)["transfer"].valid
        # the transfer now debits nothing: the oracle fails, whatever the cache remembers
        (root / edited).write_text((root / edited).read_text().replace("FACTOR = 1", "FACTOR = 0"))
        again = ensure_valid(load_suite(root), store)["transfer"]
    assert not again.check("solvable").passed, again.to_dict()


def test_a_cached_validity_is_proven_again_when_a_module_a_check_imports_changes(
    tmp_path: Path, edited_bank: EditTask
) -> None:
    root = bank_copy(tmp_path)
    (root / "limits.py").write_text("OK = True\n")
    add_checks(root, "import limits\n\n\ndef gate(s0, sT):\n    return limits.OK\n")
    gate = {"id": "gate", "check": "checks.py:gate"}
    suite = edited_bank(lambda task: task["outcome_assertions"].append(gate))
    with RunStore(tmp_path / "runs.db") as store:
        assert ensure_valid(suite, store)["transfer"].check("solvable").passed
        (root / "limits.py").write_text("OK = False\n")  # in the same process, as a watcher would
        again = ensure_valid(load_suite(root), store)["transfer"]
    assert "gate failed" in again.check("solvable").detail, again.to_dict()


# --- a solution that goes against its simulated user -----------------------------------------

ASK = {"say": "Shall I move 30 from A to B? Please confirm."}


@pytest.mark.parametrize(("confirms", "kind"), [(False, "oracle"), (False, "alt"), (True, "")])
def test_a_solution_that_acts_after_the_user_declined_proves_nothing(
    tmp_path: Path, edited_bank: EditTask, confirms: bool, kind: str
) -> None:
    root = bank_copy(tmp_path)
    oracle = yaml.safe_load((root / "solutions/transfer/oracle.yaml").read_text())
    oracle["steps"].insert(2, ASK)  # asks after the PIN, then transfers whatever the answer
    name = "alt" if kind == "alt" else "oracle"
    if kind == "alt":
        oracle["kind"] = "alternative"
    write_solution(root, name, oracle)
    suite = edited_bank(lambda task: task["user"].update(confirms=confirms))
    check = validate_task(suite, "transfer").check(
        "solvable" if name == "oracle" else "other_routes"
    )
    if not kind:  # the user says yes: the same route is a fine oracle
        assert check.passed, check.detail
        return
    assert not check.passed
    assert f"{name} passes, but the user declined at step 3" in check.detail, check.detail
    assert "changed accounts, transfers with transfer" in check.detail
