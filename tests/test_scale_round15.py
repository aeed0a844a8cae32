"""Scale and harness overhead, fifteenth round: the bench measures what ``groundstate run``
pays, with the same checks in force."""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.agents.scripted import ScriptedAgent
from groundstate.spec.suite import Suite, load_suite
from groundstate.testing import FunctionAgent, attempt

from .conftest import BANK, EditTask

BENCH = Path(__file__).resolve().parent.parent / "bench" / "overhead.py"


@pytest.fixture(scope="module")
def overhead() -> ModuleType:
    """``bench/overhead.py`` as a module (the bench folder is no package)."""
    spec = importlib.util.spec_from_file_location("_bench_overhead", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it executes
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


@pytest.fixture
def bank_copy(tmp_path: Path) -> Suite:
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    return load_suite(root)


def test_the_benchs_one_task_suite_grades_with_the_checks_pinned_at_load(
    overhead: ModuleType, bank_copy: Suite
) -> None:
    """The concurrency batches of ``bench/overhead.py`` run a suite of one task. Built field by
    field, it lost the check modules pinned when the suite was loaded: every check call went
    to the file on disk (a stat each, and the file as it is now, not as loaded), which is not
    what ``groundstate run`` grades with."""
    one = overhead.one_task_suite(bank_copy, "transfer")
    assert set(one.tasks) == {"transfer"} and one.config.canary is None
    assert one.checks["checks.py"] is bank_copy.checks["checks.py"]
    checks = bank_copy.root / "checks.py"
    checks.write_text(checks.read_text() + "\n\ndef money_conserved(*args):\n    return False\n")
    steps = one.solutions["transfer"]["oracle"].steps
    run = attempt(one, "transfer", ScriptedAgent(steps)).run
    assert run.success, run.outcome_assertion_results
    assert run.model_dump(include={"outcome_assertion_results", "constraint_results"}) == (
        attempt(bank_copy, "transfer", ScriptedAgent(steps)).run.model_dump(
            include={"outcome_assertion_results", "constraint_results"}
        )
    )


def test_the_benchs_one_task_suite_still_stops_an_agent_that_changes_its_task(
    overhead: ModuleType, bank_copy: Suite
) -> None:
    """Without the task's grader shape, the watch for a task changed in memory had nothing to
    compare with: an agent that emptied its assertions passed on the bench's suite."""
    one = overhead.one_task_suite(bank_copy, "transfer")

    async def empties_its_assertions(session: Session) -> str:
        one.tasks["transfer"].outcome_assertions.clear()
        return "Moved 30 from A to B."

    run = attempt(one, "transfer", FunctionAgent(empties_its_assertions)).run
    assert run.terminal_reason == "agent_failure/prohibited_action"
    assert "changed in memory" in run.infrastructure_status["stop"]["message"]


def test_the_bench_keeps_a_retired_workers_cpu_and_counts_its_replacement_from_its_start(
    overhead: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process pool replaces a worker that retires (an attempt left something in it).
    The bench summed the live workers' CPU at the end less their sum at the first job: the
    retired worker's CPU was lost and its replacement's counted against it, and the
    concurrency table printed a negative CPU per attempt (-4.5 ms at concurrency 8)."""
    readings = iter(
        [
            {1: 5.0, 2: 5.0},  # the first job starts
            {1: 6.0, 2: 7.0},  # it ends; worker 2 then retires, 3 takes its place
            {1: 8.0, 3: 0.5},  # the second job ends
            {1: 9.0, 3: 1.0},  # the pool closes
        ]
    )
    monkeypatch.setattr(overhead, "_workers_cpu", lambda executor: next(readings))

    class Pool:
        name = "process"

        def open(self, concurrency: int) -> None:
            pass

        def close(self) -> None:
            pass

        async def run(self, job: object) -> str:
            return "done"

    metered = overhead._Metered(Pool())
    job = SimpleNamespace(info=SimpleNamespace(batch_id="b1"))
    for _ in range(2):
        assert asyncio.run(metered.run(job)) == "done"
    metered.close()
    assert metered.workers == pytest.approx((9.0 - 5.0) + (7.0 - 5.0) + 1.0)
    assert metered.own is not None  # this process's usage is read from the first job too


SEES_NO_LEFTOVERS = '''

SEEN = []


def sees_no_leftovers(s0, sT):
    """While an attempt's outcome assertion runs, another attempt of the same pool worker
    may end: would that one's worker take this thread for one left behind?"""
    import threading

    from groundstate.ourthreads import foreign

    here = threading.current_thread()
    SEEN.append((here.name, here not in foreign()))
    return True
'''


def test_an_attempts_running_assertion_is_no_thread_left_behind(
    edited_bank: EditTask,
) -> None:
    """A pool worker runs several attempts at once; when one ends, any thread alive that is
    not the harness's (told by who started it: ``groundstate.ourthreads``; by its name before
    the twenty-first round) is taken for one it left behind, and the worker retires (a
    restart: the suite loaded again). An attempt still grading must not make its
    neighbour's worker retire (3 needless restarts in a batch of 128 at concurrency 64)."""

    def add_assertion(task: dict[str, Any]) -> None:
        task["outcome_assertions"].append(
            {"id": "no-leftovers", "check": "checks.py:sees_no_leftovers"}
        )

    checks = BANK / "checks.py"
    suite = edited_bank(lambda task: None)
    (suite.root / "checks.py").write_text(checks.read_text() + SEES_NO_LEFTOVERS)
    suite = edited_bank(add_assertion)
    steps = suite.solutions["transfer"]["oracle"].steps
    run = attempt(suite, "transfer", ScriptedAgent(steps)).run
    assert run.success, run.outcome_assertion_results
    # (leftovers() itself would also name threads other tests left in this process)
    assert suite.checks["checks.py"].SEEN == [("groundstate-grader-no-leftovers", True)]
