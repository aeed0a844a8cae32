"""Ninth validation audit: nondeterministic graders, and what the validity cache follows.

- A verdict drawn from chance or read off the wall clock through a name bound before
  validation (``from random import random``, ``from datetime import datetime``, ``import
  time``, in the checks file or a helper it imports) is caught every time, and a check that
  only uses dates is not flagged; SQL in an assertion that draws ``random()`` is refused.
- The cache follows data files kept in ``tasks/`` or a solutions folder, gives a batch of some
  tasks the keys ``validate`` stored, and never keeps a failure that rests on a replay with no
  verdict or a check that raised.
"""

from __future__ import annotations

import dataclasses
import datetime
import random
import re
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import groundstate.validation.suite as validation_suite
from groundstate.cli import main
from groundstate.spec.suite import Suite, load_suite
from groundstate.store import RunStore
from groundstate.validation import (
    CHECKS,
    CheckOutcome,
    TaskValidity,
    ensure_valid,
    require_valid,
    validate_task,
    validation_key,
)
from groundstate.validation import checks as validation_checks
from groundstate.validation.skew import SKEWED
from groundstate.validation.static import check_suite

from .conftest import BANK, EditTask
from .test_validation import add_checks, bank_copy, write_solution

# --- chance and the wall clock, bound before validation --------------------------------------

BOUND = """
from datetime import datetime
import datetime as dates
import time
from time import time as seconds
from random import random as draw
import helpers
from helpers import lucky as helper_lucky


def drawn(s0, sT):
    return draw() < 0.99


def this_century(s0, sT):
    return datetime.now().year < 2090


def weekday(s0, sT):
    return dates.date.today().weekday() < 5


def before_eleven_pm(s0, sT):
    return time.localtime().tm_hour < 23


def epoch(s0, sT):
    return seconds() < 4e9


def via_helper_module(s0, sT):
    return helpers.minute() < 59 or helpers.minute() == 0


def via_helper_function(s0, sT):
    return helper_lucky()


def dates_only(s0, sT):
    # uses the datetime classes without reading the clock: deterministic
    moment = datetime.fromisoformat("2026-01-15T10:00:00")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # the durations clock is left alone
        break
    return isinstance(moment, datetime) and moment < datetime(2026, 2, 1)
"""

HELPERS = """
from datetime import datetime
from random import randint


def minute():
    return datetime.now().minute


def lucky():
    return randint(1, 1000) <= 990
"""


def _bound_checks(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    (root / "helpers.py").write_text(HELPERS)
    add_checks(root, BOUND)


CHANCY = (
    "drawn",
    "this_century",
    "weekday",
    "before_eleven_pm",
    "epoch",
    "via_helper_module",
    "via_helper_function",
)


def test_a_verdict_from_chance_or_the_clock_bound_before_validation_is_caught(
    tmp_path: Path, edited_bank: EditTask
) -> None:
    _bound_checks(tmp_path)
    suite = edited_bank(
        lambda task: task["outcome_assertions"].extend(
            {"id": check, "check": f"checks.py:{check}"} for check in CHANCY
        )
    )
    passed, detail = validation_checks.check_grader_determinism(
        validation_checks.Proof(suite, suite.tasks["transfer"])
    )
    assert not passed, detail
    # graded once as an attempt, then low, then high: each check gives two verdicts
    for check in CHANCY:
        assert re.search(rf"\b{check} gave (pass|fail), (pass|fail), (pass|fail)", detail), check
        assert re.search(rf"\b{check} gave [a-z]+, (pass, fail|fail, pass)\b", detail), check


def test_a_check_that_uses_dates_without_the_clock_stays_deterministic(
    tmp_path: Path, edited_bank: EditTask
) -> None:
    _bound_checks(tmp_path)
    suite = edited_bank(
        lambda task: task["outcome_assertions"].append(
            {"id": "dates", "check": "checks.py:dates_only"}
        )
    )
    before = {name: getattr(random, name) for name in SKEWED}
    passed, detail = validation_checks.check_grader_determinism(
        validation_checks.Proof(suite, suite.tasks["transfer"])
    )
    assert passed, detail
    assert "dates=pass" in detail
    # every name is bound as before: the module's, the checks' and the helper's
    assert {name: getattr(random, name) for name in SKEWED} == before
    checks = next(iter(suite.checks.values()))
    assert checks.datetime is datetime.datetime and checks.dates is datetime
    assert checks.time is time and checks.seconds is time.time
    assert checks.draw is random.random and checks.helpers.datetime is datetime.datetime


# --- SQL that draws random numbers -----------------------------------------------------------


CHANCY_SQL = (
    "SELECT abs(random()) % 100 < 97",
    "SELECT COUNT(*) > 0 FROM accounts WHERE length(RANDOMBLOB(2)) = 2 OR 1",
    # drawn only on some states: a draw all the same
    "SELECT CASE WHEN SUM(balance) = 0 THEN random() > 0 ELSE 1 END FROM accounts",
)


def test_an_assertion_whose_sql_draws_random_numbers_is_refused(
    tmp_path: Path, edited_bank: EditTask
) -> None:
    edited_bank(
        lambda task: task["outcome_assertions"].extend(
            {"id": f"chancy{i}", "sql": sql, "expect_rows": [[1]]}
            for i, sql in enumerate(CHANCY_SQL)
        )
    )
    problems = [str(p) for p in check_suite(tmp_path / "bank").problems]
    for i, call in enumerate(["random()", "randomblob()", "random()"]):
        assert any(
            "transfer.yaml" in p
            and f"outcome_assertions[{3 + i}].sql: calls {call}: the verdict would be left to "
            "chance"
            in p
            for p in problems
        ), (call, problems)
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "bank")])
    assert result.exit_code == 2 and "left to chance" in result.stderr  # before any proof


# --- what the cache follows ------------------------------------------------------------------


@pytest.mark.parametrize("data_file", ["tasks/expected.json", "solutions/transfer/notes.json"])
def test_a_data_file_beside_the_tasks_or_solutions_is_part_of_the_key(
    tmp_path: Path, data_file: str
) -> None:
    root = bank_copy(tmp_path)
    (root / data_file).write_text('{"A": 70}')
    before = load_suite(root)
    (root / data_file).write_text('{"A": 71}')  # a check reading it now fails the oracle
    after = load_suite(root)
    task = before.tasks["transfer"]
    assert validation_key(before, task) != validation_key(after, after.tasks["transfer"])


def _two_tasks(tmp_path: Path) -> Suite:
    """The bank with a second task on a fixture of its own."""
    root = bank_copy(tmp_path)
    shutil.copy(root / "fixtures" / "bank.sql", root / "fixtures" / "bank2.sql")
    data = yaml.safe_load((root / "tasks" / "transfer.yaml").read_text())
    data.update(task_id="second", initial_state_fixture="bank2.sql")
    (root / "tasks" / "second.yaml").write_text(yaml.safe_dump(data))
    shutil.copytree(root / "solutions" / "transfer", root / "solutions" / "second")
    return load_suite(root)


def _counted(monkeypatch: pytest.MonkeyPatch, valid: bool = True) -> list[str]:
    """Replace the proofs with one that counts the tasks it proves."""
    proven: list[str] = []

    def prove(suite: Suite, task_id: str, **_: Any) -> TaskValidity:
        proven.append(task_id)
        checks = [CheckOutcome(name=name, passed=valid, detail="counted") for name in CHECKS]
        return TaskValidity(task_id=task_id, checks=checks)

    monkeypatch.setattr(validation_suite, "validate_task", prove)
    return proven


def test_a_batch_of_some_tasks_reads_the_proofs_validate_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _two_tasks(tmp_path)
    proven = _counted(monkeypatch)
    with RunStore(tmp_path / "runs.db") as store:
        ensure_valid(suite, store)
        assert sorted(proven) == ["second", "transfer"]
        assert require_valid(suite, store, tasks=["transfer"]) == []
        assert sorted(proven) == ["second", "transfer"]  # read back, not proven again
    # a suite cut down to the task would have keyed it otherwise (the other fixture joined it)
    cut = dataclasses.replace(suite, tasks={"transfer": suite.tasks["transfer"]})
    task = suite.tasks["transfer"]
    assert validation_key(cut, task) != validation_key(suite, task)


def test_run_of_one_task_reads_the_proof_validate_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _two_tasks(tmp_path)
    proven = _counted(monkeypatch)
    store = str(tmp_path / "runs.db")
    runner = CliRunner()
    assert runner.invoke(main, ["validate", str(suite.root), "--store", store]).exit_code == 0
    system = str(Path(BANK).parent / "bank_system.yaml")
    args = ["run", str(suite.root), "--system", system, "--store", store, "--task", "second"]
    result = runner.invoke(main, args)
    assert result.exit_code in (0, 3, 4), result.output
    assert sorted(proven) == ["second", "transfer"]


def test_a_failure_without_a_verdict_is_proven_again_not_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = load_suite(bank_copy(tmp_path))
    outcomes = iter([False, True])  # a tool past its limit on a busy machine, then healthy

    def prove(suite: Suite, task_id: str, **_: Any) -> TaskValidity:
        passed = next(outcomes)
        check = CheckOutcome(name="solvable", passed=passed, detail="oracle")
        return TaskValidity(task_id=task_id, checks=[check], settled=passed)

    monkeypatch.setattr(validation_suite, "validate_task", prove)
    with RunStore(tmp_path / "runs.db") as store:
        assert not ensure_valid(suite, store)["transfer"].valid
        assert ensure_valid(suite, store)["transfer"].valid  # proven again
        assert ensure_valid(suite, store)["transfer"].valid  # now read back
        assert store.validation(validation_key(suite, suite.tasks["transfer"])) is not None


def test_a_check_that_raises_leaves_the_failure_unsettled(
    bank: Suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(proof: Any) -> tuple[bool, str]:
        raise OSError("no space left on device")

    def fails(proof: Any) -> tuple[bool, str]:
        return False, "a real failure"

    monkeypatch.setattr(validation_checks, "CHECKS", {"reset": broken})
    raised = validate_task(bank, "transfer")
    assert not raised.valid and not raised.settled
    assert "could not be checked: OSError" in raised.check("reset").detail
    monkeypatch.setattr(validation_checks, "CHECKS", {"reset": fails})
    assert validate_task(bank, "transfer").settled  # a verdict: cached like any other


def test_a_replay_without_a_verdict_leaves_the_failure_unsettled(
    tmp_path: Path, edited_bank: EditTask, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = edited_bank(lambda task: None)
    (suite.root / "solutions" / "transfer" / "bad_explodes.yaml").write_text(
        yaml.safe_dump(
            {"kind": "known_bad", "fails_by": "outcome", "steps": [{"call": "explode", "args": {}}]}
        )
    )
    suite = load_suite(suite.root)
    check = validation_checks.check_discriminating
    monkeypatch.setattr(validation_checks, "CHECKS", {"discriminating": check})
    validity = validate_task(suite, "transfer")
    assert "bad_explodes gets no verdict" in validity.check("discriminating").detail
    assert not validity.settled


@pytest.mark.parametrize("record", ['{"task_id": "transfer"}', "not json", '{"checks": 3}'])
def test_a_damaged_cached_validity_is_proven_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record: str
) -> None:
    suite = load_suite(bank_copy(tmp_path))
    proven = _counted(monkeypatch)
    with RunStore(tmp_path / "runs.db") as store:
        ensure_valid(suite, store)
    with sqlite3.connect(tmp_path / "runs.db") as db:
        db.execute("UPDATE validations SET record = ?", (record,))
    with RunStore(tmp_path / "runs.db") as store:
        assert ensure_valid(suite, store)["transfer"].valid
        assert proven == ["transfer", "transfer"]  # proven again, and stored again
        assert ensure_valid(suite, store)["transfer"].valid
    assert proven == ["transfer", "transfer"]


def test_tool_robustness_is_not_shared_between_environment_kinds_or_options(
    bank: Suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    tried: list[str] = []
    monkeypatch.setattr(validation_checks, "_ROBUSTNESS", {})  # none shared with other tests
    monkeypatch.setattr(validation_checks, "find_crash", lambda tool, make: tried.append(tool.name))
    for config in (
        bank.config,
        bank.config.model_copy(update={"environment": "postgres"}),
        bank.config.model_copy(update={"environment_options": {"journal": "wal"}}),
        bank.config,  # the first again: shared
    ):
        suite = dataclasses.replace(bank, config=config)
        validation_checks._robustness(
            validation_checks.Proof(suite, suite.tasks["transfer"]), "balance"
        )
    assert tried == ["balance"] * 3


ROUTE_CHANCE = """
import random


def chancy_on_c(s0, sT):
    # deterministic on the oracle's state; a draw on the state the alternative reaches
    [[n]] = sT.query("SELECT COUNT(*) FROM transfers")
    return n == 1 or random.random() < 0.99
"""


def test_a_draw_only_on_an_alternative_routes_state_is_caught(
    tmp_path: Path, edited_bank: EditTask
) -> None:
    """The alternative moves 30 through C (two transfers, the same balances); only on its
    state does the check draw."""
    add_checks(bank_copy(tmp_path), ROUTE_CHANCE)

    def change(task: dict[str, Any]) -> None:
        task["outcome_assertions"] = [
            {
                "id": "a-and-b",
                "sql": "SELECT id, balance FROM accounts WHERE id IN ('A', 'B')",
                "expect_rows": [["A", 70], ["B", 80]],
            },
            {"id": "chancy", "check": "checks.py:chancy_on_c"},
        ]
        task.pop("partial_credit_rubric", None)
        task["hard_process_constraints"] = []
        task["step_limit"] = 10

    suite = edited_bank(change)
    steps = [
        {"call": "transfer", "args": {"source": "A", "target": "C", "amount": 30}},
        {"call": "transfer", "args": {"source": "C", "target": "B", "amount": 30}},
        {"finish": "Done."},
    ]
    (suite.root / "solutions" / "transfer" / "alt_via_c.yaml").write_text(
        yaml.safe_dump({"kind": "alternative", "steps": steps})
    )
    suite = load_suite(suite.root)
    proof = validation_checks.Proof(suite, suite.tasks["transfer"])
    passed, detail = validation_checks.check_grader_determinism(proof)
    assert not passed, detail
    assert re.search(r"alt_via_c: 3 gradings of one final state disagree: chancy gave", detail)
    assert "oracle:" not in detail  # the oracle's state gives one verdict


# --- a no-change task whose outcome does not see a change ------------------------------------


def test_a_no_change_task_whose_outcome_holds_on_a_harmful_change_is_not_discriminating(
    tmp_path: Path, edited_bank: EditTask
) -> None:
    """The refusal task graded by "money is conserved" (true after any transfer): its one
    harmful known-bad (a transfer without the PIN) fails by the pin-first constraint alone, so
    an agent transferring after asking for the PIN would pass."""
    root = bank_copy(tmp_path)
    write_solution(root, "oracle", {"kind": "oracle", "steps": [{"finish": "I cannot."}]})
    for name in ("bad_claims", "bad_wrong_target"):
        write_solution(root, name, None)

    def change(task: dict[str, Any]) -> None:
        task["outcome_assertions"] = [{"id": "conserved", "check": "checks.py:money_conserved"}]
        task.pop("partial_credit_rubric")
        task["expect_no_change"] = True

    suite = edited_bank(change)
    passed, detail = validation_checks.check_discriminating(
        validation_checks.Proof(suite, suite.tasks["transfer"])
    )
    assert not passed, detail
    assert "fail by constraints alone: bad_no_pin (outcome assertion conserved holds)" in detail

    def seen(task: dict[str, Any]) -> None:  # the near miss: the outcome sees the change
        task["outcome_assertions"].append({"id": "nothing-changed", "state_diff": {}})

    suite = edited_bank(seen)
    passed, detail = validation_checks.check_discriminating(
        validation_checks.Proof(suite, suite.tasks["transfer"])
    )
    assert passed, detail
    assert "harmful bad_no_pin changes the state and fails" in detail
