"""Python constraints ``check: file.py:fn(trace, s0)``: verdicts, evidence, errors, time limit."""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from groundstate import deadline
from groundstate.agents.base import Session
from groundstate.errors import SpecError
from groundstate.grading import outcome
from groundstate.grading.constraints import evaluate_constraints
from groundstate.grading.outcome import suite_function
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite
from groundstate.spec.task import DiffAssertion
from groundstate.testing import FunctionAgent, attempt
from groundstate.trace import TraceCopies

from .conftest import BANK, HANG, HANG_SOURCE, EditTask
from .trace_builder import Trace, constraint

CHECKS = """
import threading
import time


def few_calls(trace, s0):
    calls = [e for e in trace if e.kind == "tool_call"]
    balance = s0.query("SELECT balance FROM accounts WHERE id = 'A'")[0][0]
    return len(calls) <= 1, {"calls": len(calls), "balance_a": balance}


def transfers_once(trace, s0):
    return sum(e.kind == "tool_call" and e.tool == "transfer" for e in trace) == 1


def raises(trace, s0):
    raise KeyError("no such step")


def sleeps(trace, s0):
    hang()
    return True


def says_maybe(trace, s0):
    return "maybe"


def edits_the_trace(trace, s0):
    trace[0].text = "edited"
    trace.clear()
    return True


def sees_the_original(trace, s0):
    return len(trace) >= 3 and trace[0].text.startswith("Please move 30"), {"n": len(trace)}


def exits(trace, s0):
    raise SystemExit(2)


def odd_evidence(trace, s0):
    return False, {"steps": {1, 2}, "object": object}


def on_its_thread(trace, s0):
    return True, {"thread": threading.get_ident()}


def states_on_its_thread(s0, sT):
    return True, {"thread": threading.get_ident()}


def sleeps_on_states(s0, sT):
    hang()
    return True


def odd_outcome_evidence(s0, sT):
    return False, {1: "number key", "steps": {1, 2}, "object": object}


class Unrepresentable:
    def __repr__(self):
        raise ValueError("no text for this")


def unrepresentable_evidence(s0, sT):
    return True, {"value": Unrepresentable()}
"""


async def _transfer(session: Session) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "done"


@pytest.fixture
def with_check(tmp_path: Path, edited_bank: EditTask) -> Iterator[Any]:
    """The bank suite with ``trace_checks.py`` and one more constraint calling *function*."""
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    (root / "trace_checks.py").write_text(CHECKS + HANG_SOURCE)

    def add(task: dict[str, Any], function: str) -> None:
        rules = [r for r in task["hard_process_constraints"] if r["id"] != "py"]
        task["hard_process_constraints"] = [
            *rules,
            {"id": "py", "check": f"trace_checks.py:{function}"},
        ]

    def load(function: str) -> Suite:
        return edited_bank(lambda task: add(task, function))

    yield load
    (root / "released").touch()  # a check blocked in hang() returns


def _run(suite: Suite) -> tuple[AgentRun, Any]:
    run = attempt(suite, "transfer", FunctionAgent(_transfer)).run
    return run, next(r for r in run.constraint_results if r.id == "py")


def test_a_python_constraint_reads_the_trace_and_s0(with_check: Any) -> None:
    run, result = _run(with_check("few_calls"))
    assert run.terminal_reason == "agent_failure/constraint_violation"
    assert result.kind == "check" and not result.passed and result.error is None
    assert result.evidence == {"calls": 2, "balance_a": 100}  # s0: before the transfer
    run, result = _run(with_check("transfers_once"))
    assert run.terminal_reason == "success" and result.passed and result.evidence == {}


@pytest.mark.parametrize(
    ("function", "error"),
    [
        ("raises", "KeyError: 'no such step'"),
        ("says_maybe", "TypeError: trace_checks.py:says_maybe returned str, expected bool"),
    ],
)
def test_a_python_constraint_that_fails_to_run_is_a_grader_failure(
    with_check: Any, function: str, error: str
) -> None:
    run, result = _run(with_check(function))
    assert run.terminal_reason == "grader_failure"
    assert result.error is not None and result.error.startswith(error)
    assert result.evidence["exception"]["type"] == error.split(":")[0]


def test_a_python_constraint_naming_no_function_is_refused_at_load(with_check: Any) -> None:
    with pytest.raises(SpecError, match=r"trace_checks\.py has no function 'no_such_function'"):
        with_check("no_such_function")


def test_a_python_constraint_past_the_time_limit_is_a_grader_failure(
    with_check: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("groundstate.grading.outcome.GRADER_TIME_LIMIT", 0.3)
    started = time.perf_counter()
    run, result = _run(with_check("sleeps"))
    assert time.perf_counter() - started < HANG
    assert run.terminal_reason == "grader_failure"
    assert result.error is not None and result.error.startswith("DeadlineExceeded")
    assert result.evidence["exception"]["type"] == "DeadlineExceeded"


def test_a_python_constraint_cannot_edit_the_recorded_trace(with_check: Any) -> None:
    run, result = _run(with_check("edits_the_trace"))
    assert result.passed
    assert run.observation_action_log[0].text == "Please move 30 from my account A to account B."
    assert len(run.observation_action_log) >= 3


def test_a_check_editing_its_trace_leaves_the_next_checks_copy_whole(
    with_check: Any, edited_bank: EditTask
) -> None:
    def both(task: dict[str, Any]) -> None:
        task["hard_process_constraints"] += [
            {"id": "edits", "check": "trace_checks.py:edits_the_trace"},
            {"id": "reads", "check": "trace_checks.py:sees_the_original"},
            {"id": "edits-again", "check": "trace_checks.py:edits_the_trace"},
            {"id": "reads-again", "check": "trace_checks.py:sees_the_original"},
        ]

    with_check("transfers_once")  # writes trace_checks.py beside the suite
    run = attempt(edited_bank(both), "transfer", FunctionAgent(_transfer)).run
    results = {r.id: r for r in run.constraint_results}
    assert results["reads"].passed and results["reads-again"].passed
    assert results["reads"].evidence == {"n": len(run.observation_action_log)}


def test_a_check_that_blocks_or_exits_among_others_fails_alone_and_in_its_own_time(
    with_check: Any, edited_bank: EditTask, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The checks of an attempt go to one thread together: the one past its limit is given
    # up at its own limit, and those after it still run, whole, on another thread.
    monkeypatch.setattr("groundstate.grading.outcome.GRADER_TIME_LIMIT", 0.5)

    def mixed(task: dict[str, Any]) -> None:
        task["hard_process_constraints"] += [
            {"id": "edits", "check": "trace_checks.py:edits_the_trace"},
            {"id": "sleeps", "check": "trace_checks.py:sleeps"},
            {"id": "reads", "check": "trace_checks.py:sees_the_original"},
            {"id": "exits", "check": "trace_checks.py:exits"},
            {"id": "counts", "check": "trace_checks.py:few_calls"},
        ]

    with_check("transfers_once")
    started = time.perf_counter()
    run = attempt(edited_bank(mixed), "transfer", FunctionAgent(_transfer)).run
    assert time.perf_counter() - started < HANG  # the sleeper was not waited for
    results = {r.id: r for r in run.constraint_results}
    assert run.terminal_reason == "grader_failure"
    assert (results["sleeps"].error or "").startswith("DeadlineExceeded: did not finish within")
    assert results["exits"].error == "CalledCodeExited: raised SystemExit: 2"
    assert results["edits"].passed and results["reads"].passed
    assert results["reads"].evidence == {"n": len(run.observation_action_log)}
    assert not results["counts"].passed and results["counts"].error is None
    assert results["counts"].evidence["balance_a"] == 100  # s0 still served after the timeout


def test_a_trace_that_cannot_be_pickled_is_still_copied_deeply() -> None:
    local = lambda: 1  # noqa: E731  # deepcopy keeps a function; pickle refuses a lambda
    events = Trace("hi").call("t", {"a": [1]}, output={"x": local}).events
    copies = TraceCopies(events)
    first, second = copies.fresh(), copies.fresh()
    first[1].args["a"].append(2)
    assert second[1].args == {"a": [1]} and events[1].args == {"a": [1]}


def test_copies_are_equal_to_the_trace_and_independent() -> None:
    events = Trace("hi").call("t", {"a": [1]}, output={"rows": [[1, "x"]]}).events
    copies = TraceCopies(events)
    first = copies.fresh()
    assert first == events and first[1] is not events[1]
    first[1].output["rows"][0][1] = "edited"
    assert copies.fresh() == events and events[1].output == {"rows": [[1, "x"]]}


def test_evidence_is_made_json_at_once(with_check: Any) -> None:
    run, result = _run(with_check("odd_evidence"))
    assert result.error is None and not result.passed
    assert isinstance(result.evidence["steps"], str) and "object" in result.evidence["object"]
    AgentRun.model_validate_json(run.model_dump_json())  # storable


def test_without_states_a_python_constraint_is_an_error() -> None:
    result = evaluate_constraints([constraint(id="py", check="x.py:f")], Trace("hi").events)[0]
    assert result.error is not None and "needs the grader's states" in result.error


def test_a_missing_check_file_is_a_spec_error(edited_bank: EditTask) -> None:
    rule = {"id": "py", "check": "nowhere.py:fn"}
    with pytest.raises(SpecError) as caught:
        edited_bank(lambda t: t["hard_process_constraints"].append(rule))
    assert caught.value.field == "hard_process_constraints[2].check"


def test_the_check_file_is_part_of_the_grader_revision(with_check: Any, tmp_path: Path) -> None:
    before = with_check("few_calls").tasks["transfer"].grader_revision
    (tmp_path / "bank" / "trace_checks.py").write_text(CHECKS + "\n# edited\n")
    assert with_check("few_calls").tasks["transfer"].grader_revision != before


def test_a_check_file_is_imported_once_and_again_when_it_changes(tmp_path: Path) -> None:
    checks = tmp_path / "checks.py"
    checks.write_text("def f():\n    return True\n")
    os.utime(checks, ns=(time.time_ns() - 10**10,) * 2)  # settled: looked up by its stat
    first = suite_function("checks.py:f", tmp_path)
    assert suite_function("checks.py:f", tmp_path) is first  # not imported again
    checks.write_text("def f():\n    return False\n")
    assert suite_function("checks.py:f", tmp_path)() is False


def test_a_check_file_just_written_is_read_again_even_with_the_same_stat(tmp_path: Path) -> None:
    checks = tmp_path / "checks.py"
    checks.write_text("def f():\n    return True\n")
    assert suite_function("checks.py:f", tmp_path)() is True
    stat = checks.stat()
    checks.write_text("def f():\n    return 1234\n")  # same size
    os.utime(checks, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same time
    assert suite_function("checks.py:f", tmp_path)() == 1234
    checks.unlink()
    with pytest.raises(SpecError, match="file not found"):
        suite_function("checks.py:f", tmp_path)


@pytest.mark.parametrize(
    "edited", ["checks.py", "helpers.py", "helpers/__init__.py", "helpers/words.py"]
)
def test_a_suite_file_is_compiled_from_its_source_where_python_caches_bytecode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edited: str
) -> None:
    """Where Python writes and trusts ``.pyc`` files (as it does by default), an edit of the
    same size within the same second ran the cached code of the version before: of the
    check's own file, or of a module it imports from its folder (a package's too), whose edit
    is in the check's hash, so the old code run under it was a record naming other code."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "pycache"))
    suite = tmp_path / "suite"
    (suite / "helpers").mkdir(parents=True)
    check = "def f():\n    return VALUE\n"
    if edited != "checks.py":
        module = "helpers.words" if edited.endswith("words.py") else "helpers"
        (suite / "checks.py").write_text(f"from {module} import VALUE\n\n{check}")
        check = ""
    if edited.startswith("helpers/"):
        (suite / "helpers" / "__init__.py").touch()
    file = suite / edited
    file.write_text(f"VALUE = True\n{check}")
    assert suite_function("checks.py:f", suite)() is True
    stat = file.stat()
    file.write_text(f"VALUE = 1234\n{check}")  # the same size
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same time
    assert suite_function("checks.py:f", suite)() == 1234
    assert not list((tmp_path / "pycache").rglob("*.pyc"))  # none written for a suite's file


def test_one_grading_pass_looks_each_check_up_once(
    with_check: Any, edited_bank: EditTask, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_up: list[str] = []
    real = outcome.suite_function

    def counted(ref: str, suite_root: Path, checks: Any = None) -> Any:
        looked_up.append(ref)
        return real(ref, suite_root, checks)

    def twice(task: dict[str, Any]) -> None:
        task["hard_process_constraints"] += [
            {"id": "once", "check": "trace_checks.py:transfers_once"},
            {"id": "again", "check": "trace_checks.py:transfers_once"},
        ]

    with_check("transfers_once")
    suite = edited_bank(twice)
    monkeypatch.setattr(outcome, "suite_function", counted)
    run = attempt(suite, "transfer", FunctionAgent(_transfer)).run
    assert run.terminal_reason == "success"
    # Three constraints call transfers_once (``py`` too); each function is looked up once.
    assert looked_up.count("trace_checks.py:transfers_once") == 1
    assert len(looked_up) == len(set(looked_up))
    attempt(suite, "transfer", FunctionAgent(_transfer))  # the next attempt looks again
    assert looked_up.count("trace_checks.py:transfers_once") == 2


def test_a_check_whose_function_went_away_is_a_grader_failure(with_check: Any) -> None:
    """Read from the file when the suite holds no module of it as loaded (a suite put
    together by hand); a loaded suite grades with the code as loaded, whatever the file
    holds since (``test_inprocess_tampering.py``)."""
    suite = with_check("transfers_once")
    (suite.root / "trace_checks.py").write_text("def other(trace, s0):\n    return True\n")
    os.utime(suite.root / "trace_checks.py", (1, 1))  # settled: the stat cache may keep it
    assert _run(suite)[0].terminal_reason == "success"  # the check as loaded
    run, result = _run(dataclasses.replace(suite, checks={}))
    assert run.terminal_reason == "grader_failure"
    assert result.error is not None and "transfers_once" in result.error


# --- one grading pass, one hand-off --------------------------------------------------------


@pytest.fixture
def hand_offs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the times checks are handed to a thread (each batch takes one)."""
    taken: list[int] = []
    real = deadline._take

    def counted() -> Any:
        taken.append(1)
        return real()

    monkeypatch.setattr(deadline, "_take", counted)
    return taken


def _with_outcome_check(function: str) -> Any:
    def edit(task: dict[str, Any]) -> None:
        task["outcome_assertions"].append({"id": "pyo", "check": f"trace_checks.py:{function}"})

    return edit


def test_outcome_checks_and_python_constraints_go_to_one_thread_together(
    with_check: Any, edited_bank: EditTask, hand_offs: list[int]
) -> None:
    with_check("on_its_thread")  # the ``py`` constraint
    suite = edited_bank(_with_outcome_check("states_on_its_thread"))
    hand_offs.clear()
    run = attempt(suite, "transfer", FunctionAgent(_transfer)).run
    assert run.terminal_reason == "success"
    # The SQL assertion, the two Python assertions and the Python constraint: one hand-off.
    assert len(hand_offs) == 1
    results = {r.id: r for r in [*run.outcome_assertion_results, *run.constraint_results]}
    assert results["pyo"].evidence["thread"] == results["py"].evidence["thread"]
    assert results["pyo"].evidence["thread"] != threading.get_ident()


def test_an_outcome_check_that_blocks_is_abandoned_and_the_constraints_after_it_still_run(
    with_check: Any, edited_bank: EditTask, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("groundstate.grading.outcome.GRADER_TIME_LIMIT", 0.4)
    with_check("few_calls")
    suite = edited_bank(_with_outcome_check("sleeps_on_states"))
    started = time.perf_counter()
    run, result = _run(suite)
    assert time.perf_counter() - started < HANG  # the sleeper was not waited for
    assertions = {r.id: r for r in run.outcome_assertion_results}
    assert assertions["pyo"].error == "timed out: did not finish within 0.4s"
    assert assertions["conserved"].passed and assertions["balances"].passed
    assert result.error is None and result.evidence["balance_a"] == 100  # s0 still served


def test_diff_assertions_alone_need_no_thread_and_their_errors_are_grader_failures(
    edited_bank: EditTask, hand_offs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    def diff_only(task: dict[str, Any]) -> None:
        task["outcome_assertions"] = [
            a for a in task["outcome_assertions"] if a["id"] == "exactly-one-transfer"
        ]
        task["partial_credit_rubric"] = [{"id": "state", "assertion": "exactly-one-transfer"}]

    suite = edited_bank(diff_only)
    hand_offs.clear()
    run = attempt(suite, "transfer", FunctionAgent(_transfer)).run
    assert run.terminal_reason == "success" and hand_offs == []
    [result] = run.outcome_assertion_results
    assert result.passed and result.evidence["diff"]["tables"]["transfers"]["added"]

    def broken(assertion: Any, states: Any) -> Any:
        raise RuntimeError("grader bug")

    evaluate = {**outcome._EVALUATE, DiffAssertion: broken}
    monkeypatch.setattr(outcome, "_EVALUATE", MappingProxyType(evaluate))
    run = attempt(suite, "transfer", FunctionAgent(_transfer)).run
    assert run.terminal_reason == "grader_failure"
    assert run.outcome_assertion_results[0].error == "RuntimeError: grader bug"


# --- evidence a Python outcome check returns is made JSON where the check runs --------------


def test_an_outcome_checks_odd_evidence_is_made_json_at_once(
    with_check: Any, edited_bank: EditTask
) -> None:
    with_check("few_calls")
    suite = edited_bank(_with_outcome_check("odd_outcome_evidence"))
    run = attempt(suite, "transfer", FunctionAgent(_transfer)).run
    [result] = [r for r in run.outcome_assertion_results if r.id == "pyo"]
    assert result.error is None and not result.passed
    # As pydantic stores them: keys as text, a set as a list, anything else its repr.
    assert result.evidence == {"1": "number key", "steps": [1, 2], "object": "<class 'object'>"}
    assert run.terminal_reason == "agent_failure/incorrect_state"
    AgentRun.model_validate_json(run.model_dump_json())  # storable, the batch goes on


def test_outcome_evidence_that_cannot_be_made_json_is_that_checks_grader_failure(
    with_check: Any, edited_bank: EditTask
) -> None:
    with_check("few_calls")
    suite = edited_bank(_with_outcome_check("unrepresentable_evidence"))
    run = attempt(suite, "transfer", FunctionAgent(_transfer)).run
    results = {r.id: r for r in run.outcome_assertion_results}
    assert run.terminal_reason == "grader_failure"
    assert results["pyo"].error is not None and "no text for this" in results["pyo"].error
    assert results["conserved"].error is None  # the other assertions keep their verdicts
    AgentRun.model_validate_json(run.model_dump_json())
