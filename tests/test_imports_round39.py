"""Thirty-ninth round, imports: Terminal-Bench and AppWorld files probed against their writers.

Terminal-Bench (``terminal_bench/harness/harness.py``, ``harness/models.py``): after any agent
failure the tests still run, and ``parser_results`` and ``is_resolved`` are written together
(``_is_resolved``: every test ``passed``), whatever ``failure_mode`` says; the statuses are
``UnitTestStatus``'s two. The check of one against the other ran only for a normal end, and a
status of any text was a failed test. AppWorld (``appworld/evaluator.py``, ``TestTracker``):
``success`` is ``pass_count == num_tests``, so a task with no test "succeeded"; test entries
and the ``pass_count``/``fail_count`` some tools write beside them were not checked. A
Terminal-Bench run written on one line was sent to ``--format jsonl`` by the refusal's hint.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groundstate.importers import read_rows
from tests.test_imports_formats import Store, cli, write_json
from tests.test_imports_round4 import simulation, tau2_file
from tests.test_imports_round14 import tb_run, tb_trial
from tests.test_imports_round38 import _digest, _job


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _run(tmp_path: Path, trials: list[dict[str, Any]]) -> Path:
    folder = tmp_path / "run"
    folder.mkdir(exist_ok=True)
    return write_json(folder / "results.json", tb_run(trials))


def _report(path: Path, tmp_path: Path, *extra: str) -> dict[str, Any]:
    code, out, err = cli("import-results", str(path), "--name", "x", "--json",
                         "--store", str(tmp_path / "r.db"), *extra)  # fmt: skip
    assert code == 0, err
    return dict(json.loads(out))


# --- Terminal-Bench: parser_results against is_resolved under every failure mode -----------


@pytest.mark.parametrize(
    "mode", ["agent_timeout", "context_length_exceeded", "unknown_agent_error", "none"]
)
def test_a_resolved_trial_whose_tests_failed_is_refused_under_any_failure_mode(
    store: Store, tmp_path: Path, mode: str
) -> None:
    """``tb run`` runs the tests after an agent's failure and writes both: an ``is_resolved``
    true beside a failed test is an edited file, whatever the mode (it was checked only for a
    normal end, and read past under ``agent_timeout``)."""
    trials = [tb_trial("hello", 1, True, mode, parser_results={"t1": "passed", "t2": "failed"}),
              tb_trial("hello", 2, False, parser_results={"t1": "failed"})]  # fmt: skip
    err = store.refused(_run(tmp_path, trials))
    assert "results[0]: parser_results.t2: 'failed', but is_resolved is true" in err


def test_an_unresolved_trial_whose_tests_all_passed_is_refused_after_a_timeout(
    store: Store, tmp_path: Path
) -> None:
    trials = [tb_trial("hello", 1, False, "agent_timeout", parser_results={"t1": "passed"}),
              tb_trial("hello", 2, False, parser_results={"t1": "failed"})]  # fmt: skip
    err = store.refused(_run(tmp_path, trials))
    assert "results[0]: is_resolved: false, but the one test in parser_results passed" in err


def test_test_results_beside_a_null_is_resolved_are_refused(store: Store, tmp_path: Path) -> None:
    """Terminal-Bench sets ``is_resolved`` whenever it has test results: a null beside them
    (read as never graded: invalid, out of every denominator) is not its file."""
    trials = [tb_trial("hello", 1, None, "agent_timeout", parser_results={"t1": "passed"}),
              tb_trial("hello", 2, False, parser_results={"t1": "failed"})]  # fmt: skip
    err = store.refused(_run(tmp_path, trials))
    assert "results[0]: is_resolved: null, but parser_results holds 1 test results" in err


@pytest.mark.parametrize("status", ["skipped", "PASSED", "error", None, 1])
def test_a_test_status_terminal_bench_never_writes_is_refused(
    store: Store, tmp_path: Path, status: Any
) -> None:
    """``UnitTestStatus`` has two values (a pytest skip is written ``passed``): any other was a
    failed test, read past (``PASSED`` upper-cased made a resolved trial's tests "fail")."""
    trials = [tb_trial("hello", 1, False, parser_results={"t1": "failed", "t2": status}),
              tb_trial("hello", 2, False, parser_results={"t1": "failed"})]  # fmt: skip
    err = store.refused(_run(tmp_path, trials))
    assert "results[0]: parser_results.t2: must be 'passed' or 'failed'" in err
    assert repr(status) in err


def test_real_format_trials_keep_their_verdicts_and_every_attempt_counts(tmp_path: Path) -> None:
    """What ``_run_trial`` writes: an agent timeout whose tests then passed, an agent error
    whose tests failed, a test timeout (no results), a harness crash (``_execute_single_trial``:
    ``unknown_agent_error``, nothing else), each an attempt with its reason; none dropped."""
    trials = [
        tb_trial("a", 1, True, "agent_timeout", parser_results={"t": "passed"}),
        tb_trial("a", 2, False, "unknown_agent_error", parser_results={"t": "failed"}),
        tb_trial("b", 1, None, "test_timeout"),
        tb_trial("b", 2, None, "unknown_agent_error", total_input_tokens=None,
                 total_output_tokens=None, agent_started_at=None, agent_ended_at=None),
    ]  # fmt: skip
    rows = read_rows(_run(tmp_path, trials))
    assert [(r.task_id, r.label, r.success, r.terminal_reason) for r in rows] == [
        ("a", 1, False, "agent_failure/time_limit"),
        ("a", 2, False, "agent_failure/crashed"),
        ("b", 1, False, "agent_failure/ungraded"),
        ("b", 2, False, "agent_failure/crashed"),
    ]
    report = _report(_run(tmp_path, trials), tmp_path, "--errors", "environment")
    assert report["attempts"] == 4
    assert report["mapped"]["test_timeout -> grader_failure"] == 1


def test_a_run_written_on_one_line_is_not_sent_to_the_row_format(
    store: Store, tmp_path: Path
) -> None:
    """The refusal of a Terminal-Bench run on one line (``json.dumps`` without ``indent``)
    ended "(the file looks like JSON Lines rows: give --format jsonl ...)": an object with no
    ``task_id`` of its own is no row of ours."""
    trial = tb_trial("hello", 1, True, task_id=None)
    path = write_json(tmp_path / "results.json", {"id": "r", "results": [trial]})
    err = store.refused(path, "--format", "terminal-bench")
    assert "task_id: required" in err and "JSON Lines" not in err and "jsonl" not in err
    rows = tmp_path / "rows.json"
    rows.write_text('{"task_id": "t", "attempt": 1, "success": true}\n')
    err = store.refused(rows, "--format", "terminal-bench")
    assert "give --format jsonl" in err  # a row of ours still is


# --- AppWorld --------------------------------------------------------------------------------


def _task(success: bool, passes: int, failures: int, **extra: Any) -> dict[str, Any]:
    """One task as ``TestTracker.to_dict`` writes it."""
    return {
        "success": success, "difficulty": 1, "num_tests": passes + failures,
        "passes": [{"requirement": f"p{i}", "label": "no_op_fail"} for i in range(passes)],
        "failures": [{"requirement": f"f{i}", "trace": "assert", "label": "no_op_fail"}
                     for i in range(failures)],
        **extra,
    }  # fmt: skip


def _evaluation(tmp_path: Path, tasks: dict[str, Any]) -> Path:
    data = {"aggregate": {"task_goal_completion": 0.0, "scenario_goal_completion": 0.0},
            "individual": tasks}  # fmt: skip
    path = tmp_path / "exp" / "evaluations" / "dev.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_json(path, data)


@pytest.mark.parametrize("given", [{"num_tests": 0}, {"num_tests": None}])
def test_an_appworld_success_with_no_test_is_refused(
    store: Store, tmp_path: Path, given: dict[str, Any]
) -> None:
    """``success`` is ``pass_count == num_tests``: 0 of 0 "succeeded", and was imported as a
    success though nothing graded the final state."""
    path = _evaluation(tmp_path, {"a_1": _task(True, 0, 0, **given), "b_1": _task(False, 1, 1)})
    err = store.refused(path)
    assert "individual.a_1: success: true, but no test ran" in err


def test_an_appworld_failure_with_no_test_stays_refused(store: Store, tmp_path: Path) -> None:
    """AppWorld calls 0 of 0 a success: a ``false`` there contradicts it (as before)."""
    err = store.refused(_evaluation(tmp_path, {"a_1": _task(False, 0, 0)}))
    assert "individual.a_1: success: False, but 0 of 0 tests failed" in err


@pytest.mark.parametrize("entry", ["oops", {"trace": "x"}, None, {"requirement": 3}])
def test_an_appworld_test_entry_that_is_not_a_test_is_refused(
    store: Store, tmp_path: Path, entry: Any
) -> None:
    task = _task(False, 1, 1)
    task["failures"] = [entry]
    err = store.refused(_evaluation(tmp_path, {"a_1": task}))
    assert "individual.a_1: failures[0]: must be a test" in err


@pytest.mark.parametrize(
    ("task", "error"),
    [
        ({"success": True, "difficulty": 1, "num_tests": 3, "pass_count": 2, "fail_count": 1},
         "success: true, but pass_count is 2 and fail_count 1 of 3 tests"),
        ({**_task(True, 2, 0), "pass_count": 3}, "pass_count: 3, but passes holds 2"),
        ({"success": True, "difficulty": 1, "num_tests": 3, "pass_count": 2, "fail_count": 0},
         "num_tests: 3, but pass_count and fail_count sum to 2"),
        ({"success": True, "difficulty": 1, "num_tests": 1, "fail_count": "0"}, "fail_count: "),
    ],
)  # fmt: skip
def test_appworld_pass_and_fail_counts_must_be_the_tests(
    store: Store, tmp_path: Path, task: dict[str, Any], error: str
) -> None:
    """Some tools write ``TestTracker.pass_count``/``fail_count`` beside (or instead of) the
    lists: read past, a ``success`` beside a ``fail_count`` of 1 passed a failed task."""
    err = store.refused(_evaluation(tmp_path, {"a_1": task}))
    assert f"individual.a_1: {error}" in err


def test_appworld_counts_that_agree_are_read(tmp_path: Path) -> None:
    task = {**_task(False, 2, 1), "pass_count": 2, "fail_count": 1}
    (row,) = read_rows(_evaluation(tmp_path, {"a_1": task}))
    assert (row.success, row.terminal_reason) == (False, "agent_failure/incorrect_state")


# --- τ²: an unknown termination reason -------------------------------------------------------


def test_an_unknown_tau2_termination_reason_keeps_its_reward_and_is_warned_by_name(
    tmp_path: Path,
) -> None:
    sims = [simulation("t1", 0, 1.0, termination_reason="whatever"), simulation("t1", 1, 0.0)]
    path = write_json(tmp_path / "tau2.json", tau2_file(sims))
    row = read_rows(path)[0]
    assert (row.success, row.reward, row.terminal_reason) == (True, 1.0, "success")
    warnings = _report(path, tmp_path)["warnings"]
    assert any("termination_reason 'whatever' has no mapping" in w for w in warnings), warnings


# --- Harbor: the lock's task.digest is not the trials' task_checksum --------------------------


def test_a_lock_digest_unlike_the_trials_checksum_is_not_a_mismatch(tmp_path: Path) -> None:
    """Harbor's lock digest is its packager's content hash (``sha256:``-prefixed); a trial's
    ``task_checksum`` is a ``dirhash`` of the task folder: they differ for one task by design,
    so they are not compared (no refusal, no warning), and each row keeps the lock's."""
    folder = _job(tmp_path, {"a": 2}, {"a": 2})
    report = _report(folder, tmp_path)
    assert report["attempts"] == 2
    assert not any("checksum" in w or "digest" in w for w in report["warnings"])
    rows = read_rows(folder)
    assert {r.origin["task_digest"] for r in rows if r.origin} == {_digest("a")}
    assert {r.origin["task_checksum"] for r in rows if r.origin} != {_digest("a")}
