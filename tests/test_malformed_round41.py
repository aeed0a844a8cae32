"""Bad input, forty-first round: a command-line value blamed on a file, a blank ``-k``, a
``suite.lock`` read past the hardened JSON reader, and a data fixture's later problems hidden.

- ``run``/``validate --environment sqlight`` said ``retail/suite.yaml:21: environment: unknown
  environment kind 'sqlight'``: the file's line holds ``environment: sqlite``, which is right.
- ``run -k ''`` (``-k "$PATTERN"`` with the variable unset) ran the whole suite.
- ``suite.lock`` was read with ``json.loads``: duplicate keys and ``NaN`` passed, and a lock of
  another shape said ``(KeyError: 'tasks')`` or ``(TypeError: list indices must be integers
  or slices, not str)``; ``run --locked`` printed the mismatch with a literal ``\\n``.
- ``check`` on a JSON or YAML data fixture with two problems printed the first and "(and 1
  more problem)", with no way to see the other.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_workspace import (
    SYSTEM,
    TASK,
    assert_refused,
    digest,
    groundstate,
)
from tests.conftest import EXAMPLES

RUN = ["run", "retail", "--system", SYSTEM, "--store", "s.db"]


# --- --environment names itself ----------------------------------------------------------


@pytest.mark.parametrize(
    "command", [RUN, ["validate", "retail", "--store", "s.db"]], ids=["run", "validate"]
)
@pytest.mark.parametrize("kind", ["sqlight", "", "SQLITE"])
def test_an_unknown_environment_option_is_the_options_error_not_the_suite_files(
    copy: Path, command: list[str], kind: str
) -> None:
    """Fails on the old code: the error named suite.yaml's line 21 and its field."""
    store = digest(copy / "s.db")
    outcome = groundstate(*command, "--environment", kind, cwd=copy)
    assert_refused(outcome, "--environment", f"unknown environment kind {kind!r}", "sqlite")
    assert "suite.yaml" not in outcome.err
    assert digest(copy / "s.db") == store


def test_a_suites_options_unfit_for_the_environment_option_name_both(tmp_path: Path) -> None:
    """The bugfix suite's ``environment_options`` are the workspace kind's: with
    ``--environment sqlite`` the file's field is at fault only with the option, so both are
    named. Fails on the old code: the option went unmentioned."""
    outcome = groundstate(
        "validate", EXAMPLES / "bugfix", "--environment", "sqlite", "--store", "s.db", cwd=tmp_path
    )
    assert_refused(outcome, "suite.yaml", "environment_options", "with --environment sqlite")
    assert not (tmp_path / "s.db").exists()


def test_a_known_environment_option_still_runs(copy: Path) -> None:
    """False-positive guard: the suite's own kind, given on the command line."""
    outcome = groundstate(*RUN, "--task", TASK, "--environment", "sqlite", cwd=copy)
    assert outcome.code == 0, outcome.text


# --- a blank -k ---------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", ["", " ", "\t"])
def test_a_blank_k_pattern_is_refused_not_the_whole_suite(copy: Path, pattern: str) -> None:
    """Fails on the old code: every task of the suite ran (exit 0, a batch stored)."""
    store = digest(copy / "s.db")
    outcome = groundstate(*RUN, "-k", pattern, cwd=copy)
    assert_refused(outcome, "-k", "blank pattern matches every task")
    assert digest(copy / "s.db") == store


def test_a_k_pattern_still_selects(copy: Path) -> None:
    """False-positive guard: a real pattern runs its tasks only."""
    outcome = groundstate(*RUN, "-k", "socks", "--json", cwd=copy)
    assert outcome.code == 0, outcome.text
    ran = {run["task_id"] for run in json.loads(outcome.out)["runs"]}
    assert ran == {TASK}


# --- suite.lock ---------------------------------------------------------------------------

BAD_LOCKS = {
    "a list": ("[]", "not a suite lock"),
    "no tables": ('{"format": 1}', "not a suite lock"),
    "tables of another shape": ('{"format": 1, "tasks": [], "files": {}}', "not a suite lock"),
    "NaN": ('{"format": NaN, "tasks": {}, "files": {}}', "NaN is not a finite number"),
    "a key twice": ('{"format": 1, "tasks": {}, "tasks": {}, "files": {}}', "duplicate key"),
    "bad syntax": ('{\n"format": 1,\n}', "suite.lock line 3 is unreadable (not valid JSON"),
    "not UTF-8": (b'{"format": 1, "files": {"\xff": 1}}', "not UTF-8"),
}


@pytest.mark.parametrize("name", list(BAD_LOCKS))
def test_a_malformed_lock_says_what_is_wrong_in_the_files_terms(copy: Path, name: str) -> None:
    """Fails on the old code for all but the syntax error and the list: a Python exception's
    name (KeyError, TypeError), or the lock read as valid (NaN, a key twice)."""
    text, reason = BAD_LOCKS[name]
    lock = copy / "retail" / "suite.lock"
    lock.write_bytes(text if isinstance(text, bytes) else text.encode())
    checked = groundstate("lock", "retail", "--check", cwd=copy)
    assert checked.code == 1, checked.text
    assert reason in checked.out and "lock the suite again" in checked.out, checked.text
    assert "Error:" not in checked.text and "Traceback" not in checked.text
    store = digest(copy / "s.db")
    ran = groundstate(*RUN, "--task", TASK, "--locked", cwd=copy)
    assert_refused(ran, "does not match its suite.lock", reason)
    assert "\\n" not in ran.err  # one line, not a line break shown escaped
    assert digest(copy / "s.db") == store


def test_a_fresh_lock_still_matches(copy: Path) -> None:
    """False-positive guard: what ``lock`` writes reads back as a match."""
    assert groundstate("lock", "retail", cwd=copy).code == 0
    checked = groundstate("lock", "retail", "--check", cwd=copy)
    assert checked.code == 0 and "matches its lock" in checked.out, checked.text


# --- every problem of a data fixture ------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("x.json", '{"rows": {"t": [{"a": 1}]}, "tabels": {}}'),
        ("x.yaml", "rows: {t: [{a: 1}]}\ntabels: {}\n"),
    ],
)
def test_check_names_each_problem_of_a_data_fixture(copy: Path, name: str, text: str) -> None:
    """Fails on the old code: ``schema: required field is missing (and 1 more problem)``."""
    (copy / "retail" / "fixtures" / name).write_text(text)
    task = copy / "retail" / "tasks" / f"{TASK}.yaml"
    pointed = task.read_text().replace("fixture: retail.sql", f"fixture: {name}")
    task.write_text(pointed)
    outcome = groundstate("check", "retail", cwd=copy)
    assert outcome.code == 2, outcome.text
    lines = [line for line in outcome.out.splitlines() if f"fixtures/{name}" in line]
    assert any("schema: required field is missing" in line for line in lines), outcome.text
    assert any("tabels: unknown field" in line for line in lines), outcome.text
    assert "more problem" not in outcome.out
