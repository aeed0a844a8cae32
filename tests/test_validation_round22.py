"""Twenty-second validation audit: checks no replay of validation ever made fail.

A task's outcome assertions and hard constraints are proven only together: the do-nothing
agent fails, the known-bad solutions fail, the mutants are killed. An assertion that is always
true (``SELECT 1``, a Python check returning True, a limit no trajectory reaches) rode along
unnoticed: the task looked valid with a check that checks nothing. Validation now reports, per
task, the checks no replay saw fail (the ``exercised`` check: a warning by default, a failure
under ``exercised_checks: required`` or ``validate --strict``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.records import CheckResult
from groundstate.spec.suite import Suite, load_suite
from groundstate.store import RunStore
from groundstate.validation import SuiteValidity, TaskValidity, validate_suite
from groundstate.validation.checks import UNEXERCISED, fails_as_declared, validate_task
from groundstate.validation.replay import Proof
from groundstate.validation.results import CheckOutcome

from .conftest import BANK

ALWAYS_SQL = {"id": "always", "sql": "SELECT 1", "expect_rows": [[1]]}
"""An outcome assertion no final state fails."""
ALWAYS_CHECK = {"id": "always-check", "check": "checks.py:always_true"}
NEVER_REACHED = {"id": "at-most-five", "at_most": {"n": 5, "match": {"tool": "transfer"}}}
"""A constraint no replay reaches: the step limit is 6, the oracle makes one transfer."""


def _bank(
    tmp_path: Path,
    *,
    assertions: list[dict[str, Any]] = (),  # type: ignore[assignment]
    constraints: list[dict[str, Any]] = (),  # type: ignore[assignment]
    config: dict[str, Any] | None = None,
) -> Path:
    """A copy of the test bank with *assertions* and *constraints* added to its task and
    *config* to its suite.yaml."""
    root = tmp_path / "bank"
    shutil.copytree(BANK, root, ignore=shutil.ignore_patterns("__pycache__"))
    with (root / "checks.py").open("a") as handle:
        handle.write("\n\ndef always_true(s0, sT):\n    return True\n")
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text())
    task["outcome_assertions"] += list(assertions)
    task["hard_process_constraints"] += list(constraints)
    task_file.write_text(yaml.safe_dump(task, sort_keys=False))
    if config:
        suite_file = root / "suite.yaml"
        suite_file.write_text(yaml.safe_dump({**yaml.safe_load(suite_file.read_text()), **config}))
    return root


def _validity(root: Path) -> TaskValidity:
    return validate_suite(load_suite(root)).task("transfer")


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout


# --- the report ------------------------------------------------------------------------------


def test_an_always_true_assertion_is_reported(tmp_path: Path) -> None:
    validity = _validity(_bank(tmp_path, assertions=[ALWAYS_SQL, ALWAYS_CHECK]))
    assert validity.unexercised == ["outcome:always", "outcome:always-check"]
    assert validity.valid  # a warning by default: the verdicts of existing suites stand
    check = validity.check("exercised")
    assert check.passed and "warning: 2 of 7 checks never failed" in check.detail
    assert "outcome:always, outcome:always-check" in check.detail
    assert validity.warnings == [check.detail]


def test_a_constraint_no_replay_reaches_is_reported(tmp_path: Path) -> None:
    validity = _validity(_bank(tmp_path, constraints=[NEVER_REACHED]))
    assert validity.unexercised == ["constraint:at-most-five"]


def test_a_task_whose_checks_all_fail_somewhere_has_no_warning(tmp_path: Path) -> None:
    """Control: every check of the bank fails in some replay (``conserved`` only when one
    account's row is put back alone by grader_sensitivity)."""
    validity = _validity(_bank(tmp_path))
    assert validity.unexercised == [] and validity.warnings == []
    assert validity.check("exercised").detail == "each of the task's 5 checks failed in a replay"


def test_required_fails_the_task_and_says_why(tmp_path: Path) -> None:
    root = _bank(tmp_path, assertions=[ALWAYS_SQL], config={"exercised_checks": "required"})
    validity = _validity(root)
    assert not validity.valid and [c.name for c in validity.failures] == ["exercised"]
    assert "outcome:always" in validity.failures[0].detail
    assert UNEXERCISED in validity.failures[0].detail
    assert validity.warnings == []  # a failure, not a warning


def test_required_passes_a_task_whose_checks_all_fail_somewhere(tmp_path: Path) -> None:
    assert _validity(_bank(tmp_path, config={"exercised_checks": "required"})).valid


def test_off_does_not_look(tmp_path: Path) -> None:
    root = _bank(tmp_path, assertions=[ALWAYS_SQL], config={"exercised_checks": "off"})
    validity = _validity(root)
    assert validity.unexercised is None and validity.warnings == [] and validity.valid
    assert validity.check("exercised").detail.startswith("off")


def test_a_check_that_only_raises_is_not_exercised(tmp_path: Path) -> None:
    """A check that fails only by raising (a timeout, a bug) is no evidence it tells a bad
    state from a good one; a failing verdict is."""
    suite = load_suite(BANK)
    proof = Proof(suite, suite.tasks["transfer"])
    raised = CheckResult(id="balances", kind="sql", passed=False, error="ZeroDivisionError")
    proof.saw([raised], [CheckResult(id="pin-first", kind="before", passed=True)])
    assert proof.seen_failing == set()
    proof.saw([], [CheckResult(id="balances", kind="before", passed=False)])
    assert proof.seen_failing == {"constraint:balances"}  # not the assertion of that name


# --- the suite's constraint sets ---------------------------------------------------------------


def _with_sets(tmp_path: Path) -> Suite:
    """The bank with its constraints moved into a constraint set, with a set constraint no
    replay reaches."""
    root = _bank(tmp_path)
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text())
    sets = {"banking": [*task.pop("hard_process_constraints"), NEVER_REACHED]}
    task["constraint_sets"] = ["banking"]
    task_file.write_text(yaml.safe_dump(task, sort_keys=False))
    suite_file = root / "suite.yaml"
    suite_file.write_text(
        yaml.safe_dump({**yaml.safe_load(suite_file.read_text()), "constraint_sets": sets})
    )
    return load_suite(root)


def test_a_sets_constraints_are_judged_over_the_suite(tmp_path: Path) -> None:
    result = validate_suite(_with_sets(tmp_path))
    task = result.task("transfer")
    assert task.unexercised == []  # the task's own checks (its assertions) all failed
    assert task.shared_failed == {
        "constraint:pin-first": True,
        "constraint:one-transfer": True,
        "constraint:at-most-five": False,
    }
    assert result.unexercised_shared == ["constraint:at-most-five"]
    assert result.to_dict()["unexercised_shared"] == ["constraint:at-most-five"]


def _task(task_id: str, shared: dict[str, bool]) -> TaskValidity:
    check = CheckOutcome(name="exercised", passed=True, detail="")
    return TaskValidity(task_id=task_id, checks=[check], unexercised=[], shared_failed=shared)


def test_a_set_constraint_failed_by_one_task_is_exercised_for_all() -> None:
    """A set's rule about refunds cannot fail in a task with no refund: it is exercised when a
    replay of any task that includes it fails it."""
    result = SuiteValidity(
        suite="s",
        suite_hash="0" * 64,
        tasks=[
            _task("refund", {"constraint:own-refund": True, "constraint:never": False}),
            _task("cancel", {"constraint:own-refund": False, "constraint:never": False}),
            _task("other", {}),
        ],
    )
    assert result.unexercised_shared == ["constraint:never"]


# --- what the command line and the cache show ------------------------------------------------


def test_validate_warns_in_text_and_json_and_exits_0(tmp_path: Path) -> None:
    root = _bank(tmp_path, assertions=[ALWAYS_SQL])
    code, out = _invoke("validate", str(root), "--no-cache")
    assert code == 0, out
    flat = " ".join(out.split())
    assert "transfer · exercised: warning: 1 of 6 checks never failed in a replay: " in flat
    assert "outcome:always" in flat
    assert " ".join(f"checks that never failed: {UNEXERCISED}".split()) in flat
    assert "1 of 1 task valid (1 with warnings)" in flat
    code, out = _invoke("validate", str(root), "--no-cache", "--json")
    [task] = json.loads(out)["tasks"]
    assert code == 0 and task["unexercised"] == ["outcome:always"] and task["valid"]
    assert task["warnings"] and "outcome:always" in task["warnings"][0]


def test_validate_strict_fails_the_task(tmp_path: Path) -> None:
    root = _bank(tmp_path, assertions=[ALWAYS_SQL])
    store = str(tmp_path / "runs.db")
    code, out = _invoke("validate", str(root), "--strict", "--store", store)
    flat = " ".join(out.split())
    assert code == 1 and "transfer · exercised: 1 of 6 checks never failed" in flat, out
    assert "0 of 1 task valid" in flat
    assert flat.count(" ".join(UNEXERCISED.split())) == 1  # in the failure's detail alone
    # the strict verdict is cached under a key of its own: the default still warns
    code, out = _invoke("validate", str(root), "--store", store)
    assert code == 0 and "(1 with warnings)" in out


def test_validate_strict_passes_a_sound_task_and_the_text_stays_quiet(tmp_path: Path) -> None:
    code, out = _invoke("validate", str(_bank(tmp_path)), "--no-cache", "--strict")
    assert code == 0, out
    assert "never failed" not in out and "with warnings" not in out
    assert "exer-" not in out  # no column unless a task fails the check


def test_validate_strict_fails_on_a_set_constraint_no_task_failed(tmp_path: Path) -> None:
    root = _with_sets(tmp_path).root
    code, out = _invoke("validate", str(root), "--no-cache")
    flat = " ".join(out.split())
    assert code == 0 and "never failed in a replay of any task: constraint:at-most-five" in flat
    assert _invoke("validate", str(root), "--no-cache", "--strict")[0] == 1


def test_the_cached_validity_keeps_the_report(tmp_path: Path) -> None:
    suite = load_suite(_bank(tmp_path, assertions=[ALWAYS_SQL]))
    with RunStore(tmp_path / "runs.db") as store:
        first = validate_suite(suite, store=store).task("transfer")
        again = validate_suite(suite, store=store).task("transfer")
    assert again == first and again.unexercised == ["outcome:always"]
    assert again.warnings == first.warnings != []


@pytest.mark.parametrize("stored", [{}, {"unexercised": None, "shared_failed": None}])
def test_a_validity_stored_before_the_report_reads_back(stored: dict[str, Any]) -> None:
    data = {"task_id": "t", "checks": [], "mutation": None, **stored}
    validity = TaskValidity.from_dict(data)
    assert validity.unexercised is None and validity.warnings == []


# --- a judged verdict is no proof the state is checked ----------------------------------------

REPLY_JUDGE = """
def names_amount(s0, sT, final_message, trace):
    return "30" in (final_message or ""), "the reply names 30"
"""
REPLY_LABELS = [
    ("Moved 30 to B.", True),
    ("Done, 30 sent to B.", True),
    ("Transferred thirty to B.", True),
    ("I could not move it.", False),
    ("I tried to send 30 but it failed.", False),
    ("Nothing was done.", False),
    ("Sent 30.", True),
    ("No.", False),
]
"""The judge agrees with these labels with a kappa of 0.5 (see tests/test_judges.py)."""
STATE_UNREAD = {
    "id": "three-accounts",
    "sql": "SELECT COUNT(*) FROM accounts",
    "expect_rows": [[3]],
}
"""A state assertion every state of the bank passes: the change is left to the judge."""
TRANSFERRED = {"id": "transferred", "at_least": {"n": 1, "match": {"tool": "transfer", "ok": True}}}
"""Fails an attempt making no transfer, so the straw agents fail by a constraint."""


def _judged_bank(tmp_path: Path, *, state_checked: bool) -> Suite:
    """The bank whose only state assertion reads nothing the oracle changes (unless
    *state_checked*: then the bank's own), beside a judge of the final reply, which
    fails the straw agents and the known-bad that only claims."""
    root = _bank(tmp_path, constraints=[TRANSFERRED], config={"mutation_testing": "off"})
    (root / "judges.py").write_text(REPLY_JUDGE)
    (root / "judges").mkdir()
    (root / "judges" / "reply.jsonl").write_text(
        "".join(
            json.dumps({"id": f"item-{i}", "final_message": text, "label": label}) + "\n"
            for i, (text, label) in enumerate(REPLY_LABELS, start=1)
        )
    )
    judge = {"id": "reply", "judge": "judges.py:names_amount", "labels": "judges/reply.jsonl"}
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text())
    kept = task["outcome_assertions"] if state_checked else [STATE_UNREAD]
    task["outcome_assertions"] = [*kept, {**judge, "min_agreement": 0.4}]
    task.pop("partial_credit_rubric", None)
    task_file.write_text(yaml.safe_dump(task, sort_keys=False))
    # a wrong target passes a task whose state is unread, on the old code too
    (root / "solutions" / "transfer" / "bad_wrong_target.yaml").unlink()
    return load_suite(root)


def test_a_judge_failing_the_straw_agents_does_not_prove_the_state_is_checked(
    tmp_path: Path,
) -> None:
    """The do-nothing agent failed by a constraint and the judge: the judge's failure was
    read as an outcome assertion catching it, though a judge never decides success (an agent
    saying "30" in its reply, with the money moved anywhere, succeeds)."""
    validity = validate_task(_judged_bank(tmp_path, state_checked=False), "transfer")
    detail = validity.check("discriminating").detail
    assert not validity.check("discriminating").passed, detail
    assert "every outcome assertion passes for the do-nothing agent" in detail
    assert "known-bad bad_claims fails for another reason than outcome" in detail


def test_a_judge_failing_a_restored_table_is_no_check_of_it(tmp_path: Path) -> None:
    validity = validate_task(_judged_bank(tmp_path, state_checked=False), "transfer")
    detail = validity.check("grader_sensitivity").detail
    assert not validity.check("grader_sensitivity").passed
    assert "grader gap: oracle changes accounts, yet its final state passes" in detail, detail


def test_the_same_task_reading_the_state_is_valid(tmp_path: Path) -> None:
    """Control: with the balances checked, the judge beside them changes nothing."""
    validity = validate_task(_judged_bank(tmp_path, state_checked=True), "transfer")
    assert validity.valid, [f"{c.name}: {c.detail}" for c in validity.failures]


def test_a_known_bad_declared_to_fail_by_a_judge_is_refused(tmp_path: Path) -> None:
    suite = _judged_bank(tmp_path, state_checked=True)
    proof = Proof(suite, suite.tasks["transfer"])
    problem = fails_as_declared(suite.tasks["transfer"], proof.run("bad_claims"), "outcome:reply")
    assert problem is not None and "a judged assertion, which never decides success" in problem


def test_check_refuses_a_known_bad_declared_to_fail_by_a_judge(tmp_path: Path) -> None:
    root = _judged_bank(tmp_path, state_checked=True).root
    bad = root / "solutions" / "transfer" / "bad_claims.yaml"
    bad.write_text(bad.read_text().replace("fails_by: outcome", "fails_by: outcome:reply"))
    result = CliRunner().invoke(main, ["check", str(root)])
    said = " ".join((result.stdout + result.stderr).split())
    assert result.exit_code != 0, said
    assert "bad_claims.yaml" in said and "fails_by" in said
    assert "'reply' of tasks/transfer.yaml is a judged assertion" in said


# --- the switch in suite.yaml ---------------------------------------------------------------


def test_a_bare_off_in_suite_yaml_means_off(tmp_path: Path) -> None:
    root = _bank(tmp_path, assertions=[ALWAYS_SQL])
    with (root / "suite.yaml").open("a") as handle:
        handle.write("exercised_checks: off\n")
    assert load_suite(root).config.exercised_checks == "off"


def test_a_wrong_switch_names_the_file_and_the_field(tmp_path: Path) -> None:
    root = _bank(tmp_path)
    with (root / "suite.yaml").open("a") as handle:
        handle.write("exercised_checks: sometimes\n")
    result = CliRunner().invoke(main, ["validate", str(root), "--no-cache"])
    said = result.stdout + result.stderr
    assert result.exit_code == 2 and "suite.yaml" in said and "exercised_checks" in said, said


# --- a check that raises on a state an agent can leave ------------------------------------------

PER_TRANSFER = """

def per_transfer(s0, sT):
    gained = sT.query("SELECT balance FROM accounts WHERE id = 'B'")[0][0] - 50
    if gained == 0:
        return False, {"gained": 0}
    made = sT.query("SELECT COUNT(*) FROM transfers")[0][0]
    return gained / made == 30, {"gained": gained, "transfers": made}
"""
"""Fails the untouched state cleanly, but raises (a division by zero) on B credited with no
transfer row: the state the oracle leaves with ``transfers`` put back."""


def test_a_check_raising_on_a_restored_table_fails_grader_sensitivity(tmp_path: Path) -> None:
    """An agent crediting B without a transfer row makes its attempt a grader failure (rerun,
    never failed) though ``exactly-one-transfer`` would fail it: the raise was counted as the
    check catching the change."""
    root = _bank(tmp_path, assertions=[{"id": "per-transfer", "check": "checks.py:per_transfer"}])
    with (root / "checks.py").open("a") as handle:
        handle.write(PER_TRANSFER)
    validity = _validity(root)
    check = validity.check("grader_sensitivity")
    assert not check.passed, check.detail
    assert "with transfers as it was, oracle's final state gets no verdict: per-transfer " in (
        check.detail
    )
    assert "ZeroDivisionError" in check.detail
    assert validity.check("discriminating").passed  # the straw agents fail it cleanly
