"""Tenth validation audit: verdicts resting on an order nobody asked for, and the Python API
proving a suite before a batch runs it, as ``groundstate run`` does.

- A verdict that rests on the order of rows a query did not order (``LIMIT 1`` without ``ORDER
  BY``, ``group_concat`` over a scan, a Python check taking the first row) disagrees between
  ``grader_determinism``'s gradings, one of which reads unordered rows reversed; ordered and
  order-free queries do not.
- ``run_batch`` refuses a suite with a static error or an invalid task before anything is
  stored, unless told not to validate; ``allow_invalid`` runs them and names them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import groundstate
import groundstate.validation.suite as validation_suite
from groundstate import run_batch
from groundstate.agents.base import Session
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.runner import BatchConfig
from groundstate.spec.suite import Suite, load_suite
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, scripted_system
from groundstate.validation import (
    CHECKS,
    CheckOutcome,
    InvalidTasks,
    TaskValidity,
    regress,
    validation_key,
)
from groundstate.validation import checks as validation_checks
from groundstate.validation.static import SuiteCheckFailed, check_suite

from .conftest import EditTask
from .test_validation import (
    ORACLE,
    _stored_run,
    add_checks,
    bank_copy,
    verified_transfer_to_c,
    write_solution,
)

# --- rows in an order no query asked for -----------------------------------------------------

UNORDERED = [
    {"id": "first-account", "sql": "SELECT id FROM accounts LIMIT 1", "expect_rows": [["A"]]},
    {
        "id": "first-of-subquery",
        "sql": "SELECT (SELECT id FROM accounts WHERE balance >= 0) = 'A'",
        "expect_rows": [[1]],
    },
    {"id": "concat", "sql": "SELECT group_concat(id) FROM accounts", "expect_rows": [["A,B,C"]]},
    {"id": "first-row", "check": "checks.py:first_row"},
]
ORDER_FREE = [
    {"id": "ordered", "sql": "SELECT id FROM accounts ORDER BY id LIMIT 1", "expect_rows": [["A"]]},
    {
        "id": "exists",
        "sql": "SELECT EXISTS (SELECT 1 FROM accounts WHERE balance = 70 LIMIT 1)",
        "expect_rows": [[1]],
    },
    {
        "id": "total",
        "sql": "SELECT sum(balance), count(*) FROM accounts",
        "expect_rows": [[150, 3]],
    },
    {"id": "rows", "sql": "SELECT id FROM accounts", "expect_rows": [["C"], ["B"], ["A"]]},
    {"id": "sorted-in-python", "check": "checks.py:sorted_rows"},
]
CHECKS_CODE = """
def first_row(s0, sT):
    return sT.query("SELECT id FROM accounts WHERE balance >= 0")[0][0] == "A"


def sorted_rows(s0, sT):
    return sorted(sT.query("SELECT id FROM accounts")) == [("A",), ("B",), ("C",)]
"""


def _determinism(suite: Suite) -> tuple[bool, str]:
    return validation_checks.check_grader_determinism(
        validation_checks.Proof(suite, suite.tasks["transfer"])
    )


def test_a_verdict_resting_on_the_order_of_unordered_rows_is_caught(
    tmp_path: Path, edited_bank: EditTask
) -> None:
    add_checks(bank_copy(tmp_path), CHECKS_CODE)
    suite = edited_bank(lambda task: task["outcome_assertions"].extend(UNORDERED + ORDER_FREE))
    passed, detail = _determinism(suite)
    assert not passed, detail
    for assertion in UNORDERED:
        assert f"{assertion['id']} gave pass, fail, pass" in detail, assertion["id"]
    for assertion in ORDER_FREE:
        assert f"{assertion['id']} gave" not in detail, assertion["id"]
    # the reader is told why
    assert "rows of queries without ORDER BY and the suite's folders listed in reverse" in detail


def test_order_free_queries_stay_deterministic(tmp_path: Path, edited_bank: EditTask) -> None:
    add_checks(bank_copy(tmp_path), CHECKS_CODE)
    suite = edited_bank(lambda task: task["outcome_assertions"].extend(ORDER_FREE))
    passed, detail = _determinism(suite)
    assert passed, detail


def test_reversed_rows_end_with_the_grading(tmp_path: Path) -> None:
    """The setting is the harness's: off again after, and not a grader's setting that would
    keep the evaluator connection from the pool."""
    suite = load_suite(bank_copy(tmp_path))
    task = suite.tasks["transfer"]
    with SqliteEnvironment(suite.fixture_path(task), clock=task.clock) as env:
        env.reset(seed=0)
        view = env.evaluator_view()
        usual = view.query("SELECT id FROM accounts")
        with env.unordered_reversed():
            assert view.query("SELECT id FROM accounts") == usual[::-1]
            assert env.initial_view().query("SELECT id FROM accounts") == usual[::-1]
        assert view.query("SELECT id FROM accounts") == usual
        assert env.initial_view().query("SELECT id FROM accounts") == usual
        assert env._evaluator.reusable  # type: ignore[attr-defined]


# --- run_batch proves the suite first --------------------------------------------------------


def _proofs(monkeypatch: pytest.MonkeyPatch, invalid: set[str]) -> list[str]:
    """Replace the proofs with one that counts the tasks it proves; *invalid* fail."""
    proven: list[str] = []

    def prove(suite: Suite, task_id: str, **_: Any) -> TaskValidity:
        proven.append(task_id)
        passed = task_id not in invalid
        checks = [CheckOutcome(name=name, passed=passed, detail="counted") for name in CHECKS]
        return TaskValidity(task_id=task_id, checks=checks)

    monkeypatch.setattr(validation_suite, "validate_task", prove)
    return proven


def _run(suite: Suite, store: RunStore, **options: Any) -> Any:
    agent = lambda: FunctionAgent(verified_transfer_to_c)  # noqa: E731
    return run_batch(
        suite, scripted_system(), BatchConfig(1), store, agent_factory=agent, **options
    )


def test_run_batch_refuses_an_invalid_task_before_storing_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = load_suite(bank_copy(tmp_path))
    proven = _proofs(monkeypatch, invalid={"transfer"})
    with RunStore(tmp_path / "runs.db") as store:
        with pytest.raises(InvalidTasks, match=r"transfer: reset: counted"):
            _run(suite, store)
        assert proven == ["transfer"] and store.batches() == []
        # run --allow-invalid: it runs, and the batch names it
        result = _run(suite, store, allow_invalid=True)
        assert result.batch.invalid_tasks == ["transfer"] and len(result.runs) == 1
        # the opt-out proves nothing (the proof above was read back from the cache)
        result = _run(suite, store, validate=False)
        assert proven == ["transfer"] and result.batch.invalid_tasks == []


def test_run_batch_proves_a_valid_suite_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = load_suite(bank_copy(tmp_path))
    proven = _proofs(monkeypatch, invalid=set())
    with RunStore(tmp_path / "runs.db") as store:
        first = _run(suite, store)
        second = _run(suite, store)  # read back from the store's cache
    assert proven == ["transfer"]
    assert first.batch.invalid_tasks == second.batch.invalid_tasks == []


def test_run_batch_refuses_a_suite_check_refuses(
    tmp_path: Path, edited_bank: EditTask, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = edited_bank(
        lambda task: task["outcome_assertions"].append(
            {"id": "chancy", "sql": "SELECT abs(random()) % 100 < 97", "expect_rows": [[1]]}
        )
    )
    proven = _proofs(monkeypatch, invalid=set())
    with RunStore(tmp_path / "runs.db") as store:
        with pytest.raises(SuiteCheckFailed, match=r"transfer\.yaml.*left to chance"):
            _run(suite, store)
        assert proven == [] and store.batches() == []


# --- solutions that prove less than they seem to ---------------------------------------------


def test_a_known_bad_stopped_before_its_script_ends_proves_nothing(tmp_path: Path) -> None:
    """Stopped by the step limit before its wrong transfer, the known-bad's outcome fails on
    the untouched state: it shows the limit, not that the grader catches a wrong target."""
    root = bank_copy(tmp_path)
    steps: list[dict[str, Any]] = [{"say": "What is your PIN?"}]
    steps += [{"call": "balance", "args": {"account": "A"}}] * 5
    steps += [{"call": "transfer", "args": {"source": "A", "target": "C", "amount": 30}}]
    write_solution(
        root, "bad_cut_short", {"kind": "known_bad", "fails_by": "outcome", "steps": steps}
    )
    suite = load_suite(root)
    passed, detail = validation_checks.check_discriminating(
        validation_checks.Proof(suite, suite.tasks["transfer"])
    )
    assert not passed
    assert (
        "known-bad bad_cut_short is stopped before its script ends (agent_failure/step_limit"
        in detail
    )
    # declaring the stop is what it shows
    write_solution(
        root,
        "bad_cut_short",
        {"kind": "known_bad", "fails_by": "agent_failure/step_limit", "steps": steps},
    )
    suite = load_suite(root)
    passed, detail = validation_checks.check_discriminating(
        validation_checks.Proof(suite, suite.tasks["transfer"])
    )
    assert passed, detail


def test_an_oracle_passing_with_a_call_the_gateway_refuses_is_not_proof(tmp_path: Path) -> None:
    """``check`` refuses it from files; the Python API's proof refuses it too (before, it
    was valid), and so a refusal no schema states (an integer past int64)."""
    root = bank_copy(tmp_path)
    for name, account in (("oracle", 7), ("alt_big", 2**70)):
        steps = [dict(step) for step in ORACLE]
        steps.insert(1, {"call": "balance", "args": {"account": account}})
        kind = "oracle" if name == "oracle" else "alternative"
        write_solution(root, name, {"kind": kind, "steps": steps})
    suite = load_suite(root)
    proof = validation_checks.Proof(suite, suite.tasks["transfer"])
    passed, detail = validation_checks.check_solvable(proof)
    assert not passed and "oracle passes with a call no agent can make" in detail
    assert "step 2, balance, was refused (invalid_arguments" in detail
    passed, detail = validation_checks.check_other_routes(proof)
    assert not passed and "alt_big passes with a call no agent can make" in detail


def test_a_regressed_run_with_a_refused_call_is_no_error_of_check(tmp_path: Path) -> None:
    """Agents make calls the gateway refuses; ``regress`` copies them into ``bad_observed``,
    which ``check`` (so ``validate`` and ``run``) refused outright, exit 2."""

    async def sloppy(session: Session) -> str:
        await session.say("What is your PIN?")
        await session.call("balance", {"account": 7})
        await session.call("check_pin", {"account": "A", "pin": "1234"})
        await session.call("transfer", {"source": "A", "target": "C", "amount": 30})
        return "Moved 30 from A."

    root = bank_copy(tmp_path)
    run = _stored_run(tmp_path, load_suite(root), sloppy)
    new_id = regress(run, load_suite(root), into=root).stem
    check = check_suite(root)
    assert check.errors == []
    refused = [p for p in check.warnings if f"{new_id}/bad_observed.yaml" in p.file]
    assert [p.field for p in refused] == ["steps[1].args.account"]
    assert "known-bad replays a refused call" in refused[0].reason
    # an oracle's is still an error
    write_solution(
        root,
        "oracle",
        {"kind": "oracle", "steps": [{"call": "balance", "args": {"account": 7}}, *ORACLE]},
    )
    assert [p.field for p in check_suite(root).errors] == ["steps[0].args.account"]


# --- what the validity cache follows ---------------------------------------------------------


def test_the_validity_key_follows_the_library_that_grades(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library's grading decides verdicts on unchanged task files (its constraint
    language, row matching...): another version of it must prove the tasks again, whether or
    not its authors bumped VALIDATOR_REVISION."""
    suite = load_suite(bank_copy(tmp_path))
    task = suite.tasks["transfer"]
    library = tmp_path / "library" / "groundstate"
    library.mkdir(parents=True)
    (library / "__init__.py").write_text("")
    (library / "grading.py").write_text("TOLERANCE = 1e-9\n")
    monkeypatch.setattr(groundstate, "__file__", str(library / "__init__.py"))
    keys = []
    for tolerance in ("1e-9", "1e-9", "1e-6"):
        (library / "grading.py").write_text(f"TOLERANCE = {tolerance}\n")
        validation_suite._runtime.cache_clear()  # computed once per process
        keys.append(validation_key(suite, task))
    validation_suite._runtime.cache_clear()
    assert keys[0] == keys[1] != keys[2]


# --- what earlier gradings left behind -------------------------------------------------------

REMEMBERING = """
import helpers

GRADED = []


def warmed(s0, sT):
    GRADED.append(1)
    return len(GRADED) > 1


def seen_before(s0, sT):
    first = "seen" not in helpers.CACHE
    helpers.CACHE["seen"] = True
    return not first
"""


def test_a_verdict_resting_on_what_earlier_gradings_left_is_caught(
    tmp_path: Path, edited_bank: EditTask
) -> None:
    """Another task sharing the check was graded first in the process (validate_suite proves
    the tasks one after another): the oracle's first grading already finds the module warm,
    so every grading passed. One grading with the check files imported anew (and the helper
    modules they import) has nothing remembered."""
    root = bank_copy(tmp_path)
    (root / "helpers.py").write_text("CACHE = {}\n")
    add_checks(root, REMEMBERING)
    suite = edited_bank(
        lambda task: task["outcome_assertions"].extend(
            {"id": check, "check": f"checks.py:{check}"} for check in ("warmed", "seen_before")
        )
    )
    module = suite.checks["checks.py"]
    module.warmed(None, None)  # the other task's grading
    module.seen_before(None, None)
    proof = validation_checks.Proof(suite, suite.tasks["transfer"])
    assert validation_checks.check_solvable(proof)[0]
    passed, detail = validation_checks.check_grader_determinism(proof)
    assert not passed
    for check in ("warmed", "seen_before"):
        assert f"{check} gave pass, pass, fail" in detail, detail
    assert "check files imported anew" in detail
    assert suite.checks["checks.py"] is module  # put back


def test_check_warns_of_sql_whose_rows_rest_on_storage_order(
    tmp_path: Path, edited_bank: EditTask
) -> None:
    """Also where the oracle's state has one matching row (so no grading can disagree): an
    agent's state with two makes the verdict the storage order's. A warning, not an error:
    one row may be all that can match."""
    edited_bank(lambda task: task["outcome_assertions"].extend(UNORDERED[:3] + ORDER_FREE[:2]))
    check = check_suite(tmp_path / "bank")
    assert check.errors == []
    flagged = {p.field: p.reason for p in check.warnings if "without ORDER BY" in p.reason}
    assert flagged.keys() == {"outcome_assertions[3].sql", "outcome_assertions[5].sql"}
    assert flagged["outcome_assertions[5].sql"].startswith("GROUP_CONCAT without ORDER BY")


CWD_CHECKS = """
import json
from pathlib import Path

import helpers


def relative(s0, sT):
    with open("expected.json") as handle:  # where validate was started
        return json.load(handle)["A"] == 70


def beside(s0, sT):
    return json.loads((Path(__file__).parent / "expected.json").read_text())["A"] == 70


def via_helper(s0, sT):
    return helpers.expected()["A"] == 70
"""
CWD_HELPERS = """
import json
from pathlib import Path


def expected():
    return json.loads((Path(__file__).parent / "expected.json").read_text())
"""


def test_a_verdict_resting_on_the_working_folder_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Validated from the suite's folder (a relative root, as ``validate .``), a check opening
    ``expected.json`` by a relative path passed; a batch started anywhere else grades it as a
    failure. Paths from the check's own ``__file__`` (or a helper's) are not flagged."""
    root = bank_copy(tmp_path)
    (root / "expected.json").write_text('{"A": 70}')
    (root / "helpers.py").write_text(CWD_HELPERS)
    add_checks(root, CWD_CHECKS)
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text())
    task["outcome_assertions"] += [
        {"id": check, "check": f"checks.py:{check}"}
        for check in ("relative", "beside", "via_helper")
    ]
    task_file.write_text(yaml.safe_dump(task))
    monkeypatch.chdir(root)
    suite = load_suite(Path("."))
    passed, detail = _determinism(suite)
    assert not passed and "relative gave pass, pass, fail" in detail, detail
    assert "beside gave" not in detail and "via_helper gave" not in detail
    assert Path.cwd() == root.resolve()
