"""Task validity: every check passes on good suites and catches its purpose-built breakage.

Broken suites are edited copies of the test bank, made in ``tmp_path``: a fixture that does not
match its declared hash, resets that forget a row, the clock or a counter, failing oracles,
passing or mis-declared known-bad solutions, graders that ignore a step or read the wall clock.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from groundstate.agents.base import Session
from groundstate.cli import main
from groundstate.environments.sqlite import SqliteEnvironment, SqliteView
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, plan_batch
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.task import AgentTask, Permissions
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, attempt, scripted_system
from groundstate.validation import (
    CHECKS,
    LOCK_FILE,
    RegressionRefused,
    SuiteLockMismatch,
    TaskValidity,
    check_environment,
    check_lock,
    ensure_valid,
    lock_suite,
    regress,
    require_lock,
    validate_task,
    validation_key,
)
from groundstate.validation import suite as suite_validation

from .conftest import BANK, EXAMPLES, EditTask

RETAIL = EXAMPLES / "retail"
ORACLE = [
    {"say": "What is your PIN?"},
    {"call": "check_pin", "args": {"account": "A", "pin": "1234"}},
    {"call": "transfer", "args": {"source": "A", "target": "B", "amount": 30}},
    {"finish": "Done."},
]


# --- helpers ---------------------------------------------------------------------------------


def bank_copy(tmp_path: Path) -> Path:
    """A copy of the bank suite the ``edited_bank`` fixture will keep editing."""
    root = tmp_path / "bank"
    if not root.exists():
        shutil.copytree(BANK, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def write_solution(root: Path, name: str, data: dict[str, Any] | None) -> None:
    """Write (or, with None, delete) solution *name* of the transfer task."""
    path = root / "solutions" / "transfer" / f"{name}.yaml"
    if data is None:
        path.unlink()
    else:
        path.write_text(yaml.safe_dump(data))


def add_checks(root: Path, code: str) -> None:
    with (root / "checks.py").open("a") as handle:
        handle.write("\n\n" + code)


def only_assertion(assertion: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def change(task: dict[str, Any]) -> None:
        task["outcome_assertions"] = [assertion]
        task.pop("partial_credit_rubric", None)

    return change


def checked(validity: TaskValidity, failing: set[str]) -> None:
    """Exactly the checks in *failing* failed."""
    assert {c.name for c in validity.failures} == failing, validity.to_dict()


def initial_hash(suite: Suite) -> str:
    task = suite.tasks["transfer"]
    with SqliteEnvironment(suite.fixture_path(task), clock=task.clock) as env:
        return env.state_hash()


async def verified_transfer_to_c(session: Session) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "C", "amount": 30})
    return "Moved 30 from A."


# --- good suites are valid -------------------------------------------------------------------


def test_bank_task_is_valid_with_evidence_for_each_check(bank: Suite) -> None:
    validity = validate_task(bank, "transfer")
    assert validity.valid
    assert [c.name for c in validity.checks] == list(CHECKS)
    reset = validity.check("reset").detail
    assert f"initial state {initial_hash(bank)} is undeclared" in reset
    for change in (
        "deleted a row of accounts",
        "bumped the AUTOINCREMENT counter of transfers",
        "advanced the clock 3600s",
    ):
        assert change in reset
    assert validity.check("other_routes").detail == "none declared"
    discriminating = validity.check("discriminating").detail
    for evidence in (
        "bad_claims fails by outcome",
        "bad_no_pin fails by constraint:pin-first",
        "bad_wrong_target fails by outcome",
        "do-nothing agent fails (agent_failure/incorrect_state)",
        "claims-without-acting agent fails (agent_failure/incorrect_state)",
    ):
        assert evidence in discriminating
    assert "step 3 of oracle, transfer" in validity.check("grader_sensitivity").detail
    assert "balances=pass" in validity.check("grader_determinism").detail


def test_declared_initial_hash_is_checked_and_reported(bank: Suite, edited_bank: EditTask) -> None:
    digest = initial_hash(bank)
    declared = edited_bank(lambda t: t.update(reset_check={"initial_state_hash": digest}))
    reset = validate_task(declared, "transfer").check("reset")
    assert reset.passed and f"initial state {digest[:12]} as declared" in reset.detail


def test_validation_works_inside_a_running_event_loop(bank: Suite) -> None:
    async def from_async_code() -> TaskValidity:
        return validate_task(bank, "transfer")

    assert asyncio.run(from_async_code()).valid


# --- reset -----------------------------------------------------------------------------------


def test_fixture_that_does_not_match_its_declared_hash(edited_bank: EditTask) -> None:
    suite = edited_bank(lambda t: t.update(reset_check={"initial_state_hash": "0" * 64}))
    validity = validate_task(suite, "transfer")
    assert "the task declares " + "0" * 64 in validity.check("reset").detail
    assert not validity.check("reset").passed


def test_fixture_that_builds_differently_each_time(tmp_path: Path) -> None:
    """Two builds in one process must really be two builds, whatever environments cache."""
    root = bank_copy(tmp_path)
    with (root / "fixtures" / "bank.sql").open("a") as handle:
        handle.write("CREATE TABLE noise (x); INSERT INTO noise VALUES (random());\n")
    reset = validate_task(load_suite(root), "transfer").check("reset")
    assert not reset.passed and "two fresh builds differ" in reset.detail


def test_initial_state_that_depends_on_the_wall_clock(bank: Suite) -> None:
    def wall_clock(task: AgentTask, suite: Suite) -> SqliteEnvironment:
        return SqliteEnvironment(suite.fixture_path(task), clock=datetime.now(UTC))

    reset = validate_task(bank, "transfer", make_env=wall_clock).check("reset")
    assert not reset.passed and "two fresh builds differ" in reset.detail


class ForgetsRows(SqliteEnvironment):
    """Reset keeps the accounts table as the attempt left it."""

    def reset(self, *, seed: int | None = None) -> str:
        kept = list(self.snapshot().tables["accounts"].rows.values()) if self._opened else None
        digest = super().reset(seed=seed)
        if kept is None:
            return digest
        with self.tool_transaction():
            self.agent_db.execute("DELETE FROM accounts")
            self.agent_db.executemany(
                "INSERT INTO accounts VALUES (:id, :owner, :balance, :pin)", kept
            )
        return self.state_hash()


class ForgetsClock(SqliteEnvironment):
    """Reset restores the rows but leaves the clock where the attempt moved it."""

    def reset(self, *, seed: int | None = None) -> str:
        now = self.now() if self._opened else None
        digest = super().reset(seed=seed)
        if now is None:
            return digest
        self.advance_clock((now - self.now()).total_seconds())
        return self.state_hash()


class ForgetsCounters(SqliteEnvironment):
    """Reset restores rows and clock but not AUTOINCREMENT counters (a truncate-and-reload)."""

    def reset(self, *, seed: int | None = None) -> str:
        counters = (
            self.evaluator_view().query("SELECT name, seq FROM sqlite_sequence")
            if self._opened
            else []
        )
        super().reset(seed=seed)
        self._control.executemany("INSERT INTO sqlite_sequence VALUES (?, ?)", counters)
        return self.state_hash()


def _factory(cls: type[SqliteEnvironment]) -> Callable[[AgentTask, Suite], SqliteEnvironment]:
    def make(task: AgentTask, suite: Suite) -> SqliteEnvironment:
        return cls(suite.fixture_path(task), clock=task.clock, permissions=task.permissions)

    return make


@pytest.mark.parametrize(
    ("environment", "evidence"),
    [
        (ForgetsRows, "rows of accounts differ"),
        (ForgetsClock, "clock is 2026-01-15T11:00:00+00:00, not 2026-01-15T10:00:00+00:00"),
        (ForgetsCounters, "AUTOINCREMENT counter of transfers is 1, not None"),
    ],
)
def test_reset_that_leaves_something_behind(
    bank: Suite, environment: type[SqliteEnvironment], evidence: str
) -> None:
    validity = validate_task(bank, "transfer", make_env=_factory(environment))
    checked(validity, {"reset"})
    assert evidence in validity.check("reset").detail


# --- solutions -------------------------------------------------------------------------------


def test_oracle_that_fails(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    wrong = [
        *ORACLE[:2],
        {"call": "transfer", "args": {"source": "A", "target": "C", "amount": 30}},
    ]
    write_solution(root, "oracle", {"kind": "oracle", "steps": wrong})
    validity = validate_task(load_suite(root), "transfer")
    solvable = validity.check("solvable")
    assert not solvable.passed
    assert solvable.detail.startswith("oracle fails: agent_failure/incorrect_state")
    assert 'balances failed (rows [["A",70],["B",50],["C",30]]' in solvable.detail
    assert "does not pass" in validity.check("grader_sensitivity").detail


def test_task_without_oracle_is_not_solvable(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    write_solution(root, "oracle", None)
    validity = validate_task(load_suite(root), "transfer")
    assert "no oracle solution" in validity.check("solvable").detail
    checked(validity, {"solvable", "grader_sensitivity", "grader_determinism", "mutation"})


def test_alternative_routes_must_pass(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    checked_balance = [ORACLE[0], {"call": "balance", "args": {"account": "A"}}, *ORACLE[1:]]
    write_solution(root, "alt_check_balance", {"kind": "alternative", "steps": checked_balance})
    wrong = [*ORACLE[:2], {"call": "transfer", "args": {"source": "A", "target": "B", "amount": 3}}]
    write_solution(root, "alt_wrong_amount", {"kind": "alternative", "steps": wrong})
    routes = validate_task(load_suite(root), "transfer").check("other_routes")
    assert not routes.passed
    assert "alt_check_balance" not in routes.detail
    assert routes.detail.startswith("alt_wrong_amount fails: agent_failure/incorrect_state")


# --- discriminating --------------------------------------------------------------------------


def test_known_bad_solution_that_passes(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    write_solution(root, "bad_fine", {"kind": "known_bad", "fails_by": "outcome", "steps": ORACLE})
    validity = validate_task(load_suite(root), "transfer")
    checked(validity, {"discriminating"})
    assert "known-bad bad_fine passes" in validity.check("discriminating").detail


@pytest.mark.parametrize(
    ("fails_by", "evidence"),
    [
        ("outcome", "fails for another reason than outcome: agent_failure/constraint_violation"),
        ("constraint:one-transfer", "another reason than constraint:one-transfer"),
        ("constraint:no-such", "the task has no constraint 'no-such'"),
        ("agent_failure/step_limit", "another reason than agent_failure/step_limit"),
    ],
)
def test_known_bad_failing_for_another_reason(tmp_path: Path, fails_by: str, evidence: str) -> None:
    root = bank_copy(tmp_path)
    no_pin = [{"call": "transfer", "args": {"source": "A", "target": "B", "amount": 30}}]
    write_solution(root, "bad_no_pin", {"kind": "known_bad", "fails_by": fails_by, "steps": no_pin})
    discriminating = validate_task(load_suite(root), "transfer").check("discriminating")
    assert not discriminating.passed
    assert discriminating.detail.startswith("known-bad bad_no_pin ")
    assert evidence in discriminating.detail


def test_known_bad_may_declare_a_terminal_reason(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    snoop = {
        "kind": "known_bad",
        "fails_by": "agent_failure/prohibited_action",
        "steps": [{"call": "read_audit"}, *ORACLE],
    }
    write_solution(root, "bad_reads_audit", snoop)
    discriminating = validate_task(load_suite(root), "transfer").check("discriminating")
    assert discriminating.passed
    assert "bad_reads_audit fails by agent_failure/prohibited_action" in discriminating.detail


def test_do_nothing_and_claims_agents_must_fail(edited_bank: EditTask) -> None:
    """A grader that only checks money is conserved lets both straw agents through."""
    suite = edited_bank(only_assertion({"id": "conserved", "check": "checks.py:money_conserved"}))
    detail = validate_task(suite, "transfer").check("discriminating").detail
    assert "the do-nothing agent passes" in detail
    assert "the claims-without-acting agent passes" in detail
    assert "known-bad bad_claims passes" in detail


def _no_change_task(task: dict[str, Any], declared: bool = True) -> None:
    task["outcome_assertions"] = [{"id": "nothing-changed", "state_diff": {}}]
    task.pop("partial_credit_rubric")
    task["expect_no_change"] = declared


def test_no_change_task_must_declare_it(tmp_path: Path, edited_bank: EditTask) -> None:
    write_solution(bank_copy(tmp_path), "oracle", {"kind": "oracle", "steps": [ORACLE[0]]})
    suite = edited_bank(partial(_no_change_task, declared=False))
    discriminating = validate_task(suite, "transfer").check("discriminating")
    assert not discriminating.passed
    assert "declare expect_no_change: true" in discriminating.detail


def test_declared_no_change_task_proves_that_harm_fails(
    tmp_path: Path, edited_bank: EditTask
) -> None:
    root = bank_copy(tmp_path)
    write_solution(root, "oracle", {"kind": "oracle", "steps": [ORACLE[0]]})
    write_solution(root, "bad_claims", None)  # changes nothing, so it passes a no-change task
    suite = edited_bank(_no_change_task)
    validity = validate_task(suite, "transfer")
    assert validity.valid, validity.to_dict()
    detail = validity.check("discriminating").detail
    assert "harmful bad_no_pin, bad_wrong_target changes the state and fails" in detail
    assert "no state: no step to leave out" in validity.check("grader_sensitivity").detail


def test_declared_no_change_task_without_a_harmful_known_bad(
    tmp_path: Path, edited_bank: EditTask
) -> None:
    root = bank_copy(tmp_path)
    write_solution(root, "oracle", {"kind": "oracle", "steps": [ORACLE[0]]})
    for name in ("bad_claims", "bad_no_pin", "bad_wrong_target"):
        write_solution(root, name, None)
    detail = validate_task(edited_bank(_no_change_task), "transfer").check("discriminating").detail
    assert detail == "no known-bad solution changes the state and fails"


def test_no_change_declared_but_the_oracle_changes_state(edited_bank: EditTask) -> None:
    def declared_only(task: dict[str, Any]) -> None:
        task["expect_no_change"] = True

    detail = validate_task(edited_bank(declared_only), "transfer").check("discriminating").detail
    assert "declares expect_no_change, but oracle oracle changes it" in detail


# --- the grader ------------------------------------------------------------------------------


def test_grader_that_ignores_a_state_changing_step(edited_bank: EditTask) -> None:
    suite = edited_bank(only_assertion({"id": "conserved", "check": "checks.py:money_conserved"}))
    sensitivity = validate_task(suite, "transfer").check("grader_sensitivity")
    assert not sensitivity.passed
    assert sensitivity.detail.startswith(
        'grader gap: step 3 of oracle, transfer({"amount":30,"source":"A","target":"B"}) '
        "changes accounts, transfers, yet the task passes without it"
    )


def test_grader_whose_verdict_flips_between_gradings(tmp_path: Path, edited_bank: EditTask) -> None:
    add_checks(
        bank_copy(tmp_path),
        "_CALLS = [0]\n\n\ndef flips(s0, sT):\n    _CALLS[0] += 1\n    return _CALLS[0] % 2 == 1\n",
    )
    suite = edited_bank(only_assertion({"id": "flips", "check": "checks.py:flips"}))
    determinism = validate_task(suite, "transfer").check("grader_determinism")
    assert not determinism.passed
    assert re.search(
        r"3 gradings of one final state disagree: flips gave (pass|fail), ", determinism.detail
    )


def test_grader_that_reads_the_wall_clock(
    tmp_path: Path, edited_bank: EditTask, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_checks(
        bank_copy(tmp_path),
        "import time\n\n\ndef even_time(s0, sT):\n    return time.time_ns() % 2 == 0\n",
    )
    ticks = itertools.count()
    monkeypatch.setattr(time, "time_ns", lambda: next(ticks))  # a clock that always moves
    suite = edited_bank(only_assertion({"id": "even-time", "check": "checks.py:even_time"}))
    determinism = validate_task(suite, "transfer").check("grader_determinism")
    assert not determinism.passed and "even-time gave" in determinism.detail


def _edited_revision(tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> str:
    root = tmp_path / str(len(list(tmp_path.iterdir())))
    shutil.copytree(BANK, root, ignore=shutil.ignore_patterns("__pycache__"))
    task_file = root / "tasks" / "transfer.yaml"
    data = yaml.safe_load(task_file.read_text())
    change(data)
    task_file.write_text(yaml.safe_dump(data))
    return load_suite(root).tasks["transfer"].grader_revision


def test_grader_revision_follows_every_part_of_the_grader(tmp_path: Path) -> None:
    base = load_suite(BANK).tasks["transfer"].grader_revision

    def assertion(task: dict[str, Any]) -> None:
        task["outcome_assertions"][0]["sql"] += " ORDER BY id"

    def constraint(task: dict[str, Any]) -> None:
        task["hard_process_constraints"][1]["at_most"]["n"] = 2

    def rubric(task: dict[str, Any]) -> None:
        task["partial_credit_rubric"][0]["weight"] = 2

    def request(task: dict[str, Any]) -> None:
        task["user_request"] = "Please move 30 from A to B, thanks."

    for change in (assertion, constraint, rubric):
        assert _edited_revision(tmp_path, change) != base, change.__name__
    assert _edited_revision(tmp_path, request) == base


def test_manifest_lists_every_solution_with_its_hash(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    before = load_suite(root).tasks["transfer"]
    assert set(before.grader_test_manifest) == {
        "oracle",
        "bad_claims",
        "bad_no_pin",
        "bad_wrong_target",
    }
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in before.grader_test_manifest.values())
    write_solution(root, "oracle", {"kind": "oracle", "steps": [*ORACLE[:3], {"finish": "Ok."}]})
    after = load_suite(root).tasks["transfer"]
    assert after.grader_test_manifest["oracle"] != before.grader_test_manifest["oracle"]
    assert after.grader_test_manifest["bad_claims"] == before.grader_test_manifest["bad_claims"]
    assert after.grader_revision == before.grader_revision


def test_grader_revision_counts_only_check_code_the_task_uses(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    before = load_suite(root).tasks["transfer"].grader_revision
    add_checks(root, "def unused(s0, sT):\n    return True\n")
    assert load_suite(root).tasks["transfer"].grader_revision != before  # checks.py is one file
    (root / "policy.md").write_text("A new policy.\n")
    assert (
        load_suite(root).tasks["transfer"].grader_revision
        == load_suite(root).tasks["transfer"].grader_revision
    )


# --- the validity cache ----------------------------------------------------------------------


def test_ensure_valid_proves_each_task_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = bank_copy(tmp_path)
    proven: list[str] = []

    def counting(suite: Suite, task_id: str, **kwargs: Any) -> TaskValidity:
        proven.append(task_id)
        return validate_task(suite, task_id, **kwargs)

    monkeypatch.setattr(suite_validation, "validate_task", counting)
    with RunStore(tmp_path / "runs.db") as store:
        first = ensure_valid(load_suite(root), store)
        second = ensure_valid(load_suite(root), store)
        assert proven == ["transfer"]
        assert second == first and first["transfer"].valid
        add_checks(root, "def unused(s0, sT):\n    return True\n")
        ensure_valid(load_suite(root), store)
    assert proven == ["transfer", "transfer"]


@pytest.mark.parametrize(
    ("edit", "text"),
    [
        ("fixtures/bank.sql", "-- edited\n"),
        ("tools.py", "# edited\n"),
        ("checks.py", "# edited\n"),
        ("tasks/transfer.yaml", "# edited\n"),
        ("solutions/transfer/bad_claims.yaml", "  - say: edited\n"),  # hashed by content
    ],
)
def test_validation_key_follows_what_validity_depends_on(
    tmp_path: Path, edit: str, text: str
) -> None:
    root = bank_copy(tmp_path)
    suite = load_suite(root)
    key = validation_key(suite, suite.tasks["transfer"])
    assert validation_key(load_suite(root), load_suite(root).tasks["transfer"]) == key
    with (root / edit).open("a") as handle:
        handle.write(text)
    edited = load_suite(root)
    assert validation_key(edited, edited.tasks["transfer"]) != key


# --- suite locks -----------------------------------------------------------------------------


def test_lock_is_clean_until_something_changes(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    assert check_lock(load_suite(root)) == [
        f"no {LOCK_FILE}: lock the suite with `groundstate lock {root}`"
    ]
    path = lock_suite(load_suite(root))
    assert path == root / LOCK_FILE
    locked = json.loads(path.read_text())
    assert (
        locked["tasks"]["transfer"]["grader_revision"]
        == load_suite(root).tasks["transfer"].grader_revision
    )
    assert set(locked["tasks"]["transfer"]["solutions"]) == {
        "oracle",
        "bad_claims",
        "bad_no_pin",
        "bad_wrong_target",
    }
    assert check_lock(load_suite(root)) == []
    require_lock(load_suite(root))


def test_lock_names_each_changed_added_and_removed_file_and_task(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    lock_suite(load_suite(root))
    add_checks(root, "def unused(s0, sT):\n    return True\n")
    shutil.copy(root / "tasks" / "transfer.yaml", root / "tasks" / "transfer-2.yaml")
    text = (
        (root / "tasks" / "transfer-2.yaml")
        .read_text()
        .replace("task_id: transfer", "task_id: transfer-2")
    )
    (root / "tasks" / "transfer-2.yaml").write_text(text)
    (root / "solutions" / "transfer" / "bad_claims.yaml").unlink()
    lines = check_lock(load_suite(root))
    transfer = load_suite(root).tasks["transfer"]
    assert lines[0] == "task transfer-2: added since the lock"
    assert any(
        re.fullmatch(rf"task transfer: grader revision \w+ → {transfer.grader_revision}", line)
        for line in lines
    )
    assert "task transfer: solution bad_claims: removed" in lines
    assert "file checks.py: changed" in lines
    assert "file tasks/transfer-2.yaml: added" in lines
    assert "file solutions/transfer/bad_claims.yaml: removed" in lines
    with pytest.raises(SuiteLockMismatch, match=r"does not match its suite\.lock") as raised:
        require_lock(load_suite(root))
    assert raised.value.lines == lines


def test_lock_names_a_changed_fixture_under_its_task(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    lock_suite(load_suite(root))
    with (root / "fixtures" / "bank.sql").open("a") as handle:
        handle.write("INSERT INTO audit VALUES (2, 'another');\n")
    assert check_lock(load_suite(root)) == [
        "task transfer: fixture fixtures/bank.sql changed",
        "file fixtures/bank.sql: changed",
    ]


# --- regression cases ------------------------------------------------------------------------


def _stored_run(tmp_path: Path, suite: Suite, fn: Callable[[Session], Any]) -> AgentRun:
    """Run *fn* on the transfer task and store the run in a batch, as ``groundstate run`` does."""
    batch = plan_batch(suite, scripted_system(), BatchConfig())
    output = attempt(suite, "transfer", FunctionAgent(fn))
    run = output.run.model_copy(update={"batch_id": batch.batch_id})
    with RunStore(tmp_path / "runs.db") as store:
        store.add_batch(batch)
        return store.add_run(run, output.artifacts)


def test_regress_turns_a_failing_run_into_a_valid_task(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    suite = load_suite(root)
    run = _stored_run(tmp_path, suite, verified_transfer_to_c)
    path = regress(run, suite, into=root)
    new_id = f"transfer-regress-{run.run_id[:8]}"
    assert path == root / "tasks" / f"{new_id}.yaml"
    assert "REVIEW" in path.read_text()
    regressed = load_suite(root)
    task, original = regressed.tasks[new_id], suite.tasks["transfer"]
    for name in (
        "initial_state_fixture",
        "clock",
        "user_request",
        "user",
        "available_tools",
        "permissions",
        "hard_process_constraints",
        "step_limit",
        "time_limit",
        "outcome_assertions",
        "terminal_conditions",
    ):
        assert getattr(task, name) == getattr(original, name), name
    assert run.run_id in task.source and run.batch_id in task.source
    assert run.system_spec_hash in task.source
    assert "regression" in task.slice_labels
    bad = regressed.solutions[new_id]["bad_observed"]
    assert (bad.kind, bad.fails_by) == ("known_bad", "outcome")
    assert [s.model_dump(exclude_defaults=True) for s in bad.steps] == [
        {"say": "What is your PIN?"},
        {"call": "check_pin", "args": {"account": "A", "pin": "1234"}},
        {"call": "transfer", "args": {"source": "A", "target": "C", "amount": 30}},
        {"finish": "Moved 30 from A."},
    ]
    validity = validate_task(regressed, new_id)
    assert validity.valid, validity.to_dict()
    assert "bad_observed fails by outcome" in validity.check("discriminating").detail


async def _no_pin(session: Session) -> str:
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Done."


async def _snoops(session: Session) -> None:
    await session.call("read_audit")


async def _chatty(session: Session) -> None:
    for _ in range(10):
        await session.call("balance", {"account": "A"})


@pytest.mark.parametrize(
    ("agent", "fails_by"),
    [
        (_no_pin, "constraint:pin-first"),
        (_snoops, "agent_failure/prohibited_action"),
        (_chatty, "agent_failure/step_limit"),
    ],
)
def test_regressed_trajectory_fails_for_the_reason_the_run_did(
    tmp_path: Path, agent: Callable[[Session], Any], fails_by: str
) -> None:
    root = bank_copy(tmp_path)
    run = _stored_run(tmp_path, load_suite(root), agent)
    new_id = regress(run, load_suite(root), into=root).stem
    regressed = load_suite(root)
    assert regressed.solutions[new_id]["bad_observed"].fails_by == fails_by
    discriminating = validate_task(regressed, new_id).check("discriminating")
    assert discriminating.passed and f"bad_observed fails by {fails_by}" in discriminating.detail


def test_regress_into_a_new_suite_copies_what_the_task_needs(tmp_path: Path) -> None:
    suite = load_suite(bank_copy(tmp_path))
    run = _stored_run(tmp_path, suite, verified_transfer_to_c)
    target = tmp_path / "regressions"
    path = regress(run, suite, into=target)
    assert path.parent == target / "tasks"
    for name in ("suite.yaml", "policy.md", "tools.py", "checks.py", "fixtures/bank.sql"):
        assert (target / name).is_file(), name
    regressed = load_suite(target)
    assert regressed.name == "bank-regressions"
    assert validate_task(regressed, path.stem).valid


def test_regress_into_a_new_suite_copies_python_constraint_files(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    (root / "process_checks.py").write_text("def pin_asked(trace, s0):\n    return True\n")
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text())
    task["hard_process_constraints"].append(
        {"id": "pin-asked", "check": "process_checks.py:pin_asked"}
    )
    task_file.write_text(yaml.safe_dump(task))
    suite = load_suite(root)
    run = _stored_run(tmp_path, suite, verified_transfer_to_c)
    target = tmp_path / "regressions"
    regress(run, suite, into=target)
    assert (target / "process_checks.py").is_file()
    assert load_suite(target).tasks  # loads: the constraint's file came along


def test_regress_refuses_a_different_file_of_the_same_name(tmp_path: Path) -> None:
    suite = load_suite(bank_copy(tmp_path))
    run = _stored_run(tmp_path, suite, verified_transfer_to_c)
    target = tmp_path / "regressions"
    regress(run, suite, into=target)
    (target / "fixtures" / "bank.sql").write_text("CREATE TABLE other (x);\n")
    other = _stored_run(tmp_path / "second", suite, verified_transfer_to_c)
    with pytest.raises(RegressionRefused, match=r"bank\.sql differs"):
        regress(other, suite, into=target)


def test_regress_refuses_a_successful_run_and_a_repeat(tmp_path: Path, bank: Suite) -> None:
    async def verified(session: Session) -> str:
        await session.say("What is your PIN?")
        await session.call("check_pin", {"account": "A", "pin": "1234"})
        await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        return "Done."

    root = bank_copy(tmp_path)
    with pytest.raises(RegressionRefused, match="succeeded: only failing runs"):
        regress(_stored_run(tmp_path, bank, verified), bank, into=root)
    failing = _stored_run(tmp_path / "second", bank, verified_transfer_to_c)
    regress(failing, load_suite(root), into=root)
    with pytest.raises(RegressionRefused, match="regressed already"):
        regress(failing, load_suite(root), into=root)


# --- environment conformance -----------------------------------------------------------------


def _fixtures() -> list[Path]:
    return [BANK / "fixtures" / "bank.sql", *sorted((RETAIL / "fixtures").glob("*.sql"))]


@pytest.mark.parametrize("fixture", _fixtures(), ids=lambda p: p.name)
def test_sqlite_environment_conforms(fixture: Path) -> None:
    assert check_environment(partial(SqliteEnvironment, fixture, clock=datetime(2026, 1, 15))) == []


class WritableEvaluator(SqliteEnvironment):
    def evaluator_view(self) -> SqliteView:
        return SqliteView(self._control)


class IgnoresPermissions(SqliteEnvironment):
    def __init__(
        self, fixture: Path, *, clock: datetime, permissions: Permissions | None = None
    ) -> None:
        super().__init__(fixture, clock=clock)


@pytest.mark.parametrize(
    ("environment", "problem"),
    [
        (WritableEvaluator, "evaluator view: the evaluator view ran 'DELETE FROM \"accounts\"'"),
        (IgnoresPermissions, "agent view: with accounts: none, the agent read accounts"),
        (ForgetsClock, "clock is 2026-01-15T01:00:00, not 2026-01-15T00:00:00"),
        (ForgetsCounters, "AUTOINCREMENT counter of transfers is 1, not None"),
    ],
)
def test_conformance_names_the_broken_promise(
    environment: type[SqliteEnvironment], problem: str
) -> None:
    problems = check_environment(
        partial(environment, BANK / "fixtures" / "bank.sql", clock=datetime(2026, 1, 15))
    )
    assert any(problem in line for line in problems), problems


# --- the command line ------------------------------------------------------------------------


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_validate_json_has_the_documented_shape(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    code, out, _ = _invoke("validate", str(BANK), "--json", "--store", str(store))
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"suite", "suite_hash", "tasks", "mutation", "unexercised_shared"}
    assert data["suite"] == "bank" and data["suite_hash"] == load_suite(BANK).suite_hash
    [task] = data["tasks"]
    assert set(task) == {
        "task_id",
        "valid",
        "checks",
        "mutation",
        "unexercised",
        "shared_failed",
        "warnings",
    }
    assert task["valid"] is True
    assert [c["name"] for c in task["checks"]] == list(CHECKS)
    assert all(set(c) == {"name", "passed", "detail"} for c in task["checks"])
    assert all(isinstance(c["detail"], str) for c in task["checks"])
    with RunStore(store) as runs:
        suite = load_suite(BANK)
        assert runs.validation(validation_key(suite, suite.tasks["transfer"])) == task


def test_validate_table_and_exit_code_for_an_invalid_suite(
    tmp_path: Path, edited_bank: EditTask
) -> None:
    edited_bank(only_assertion({"id": "conserved", "check": "checks.py:money_conserved"}))
    code, out, _ = _invoke("validate", str(tmp_path / "bank"), "--no-cache")
    assert code == 1
    assert re.search(r"transfer +pass +pass +pass +FAIL +FAIL +pass", out), out
    assert "transfer · discriminating: known-bad bad_claims passes" in out
    assert "0 of 1 task valid" in out


def test_validate_reports_user_errors_with_exit_code_2(tmp_path: Path) -> None:
    code, _, err = _invoke("validate", str(tmp_path / "nowhere"), "--no-cache")
    assert code == 2 and "not a suite folder" in err


def test_lock_and_check_from_the_command_line(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    code, out, _ = _invoke("lock", str(root))
    assert code == 0 and out.strip() == f"locked 1 task in {root / LOCK_FILE}"
    assert _invoke("lock", str(root), "--check")[:2] == (0, f"{root} matches its lock\n")
    add_checks(root, "def unused(s0, sT):\n    return True\n")
    code, out, _ = _invoke("lock", str(root), "--check")
    assert code == 1 and "file checks.py: changed" in out


def test_regress_from_the_command_line(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    run = _stored_run(tmp_path, load_suite(root), verified_transfer_to_c)
    store = str(tmp_path / "runs.db")
    code, out, _ = _invoke("regress", run.run_id[:10], "--into", str(root), "--store", store)
    assert code == 0
    assert out.strip() == str(root / "tasks" / f"transfer-regress-{run.run_id[:8]}.yaml")
    code, _, err = _invoke("regress", run.run_id, "--into", str(root), "--store", store)
    assert code == 2 and "regressed already" in err
