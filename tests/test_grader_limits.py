"""Python checks are held to GRADER_TIME_LIMIT on s0 as on sT: a runaway query is stopped."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.deadline import DeadlineExceeded
from groundstate.environments.base import Snapshot, StateDiff
from groundstate.grading.outcome import States, within_limit
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite
from groundstate.testing import FunctionAgent, attempt

from .conftest import BANK, HANG, EditTask

LIMIT = 1.0
"""The grader's time limit in these tests (seconds)."""
BOUND = HANG
"""The whole attempt ends within this (the limit, plus agent and grading time), or it hangs."""
RUNAWAY = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n"
"""A query that never ends on its own (no LIMIT, no stop condition)."""

CHECKS = f"""
import sqlite3


def runaway_s0(trace, s0):
    return s0.query("{RUNAWAY}") == []


def runaway_s0_outcome(s0, sT):
    return s0.query("{RUNAWAY}") == []


def runaway_sT_outcome(s0, sT):
    return sT.query("{RUNAWAY}") == []


def retries_s0(s0, sT):
    # Swallows the interrupt and starts again: the view must refuse it, not run it unbounded.
    while True:
        try:
            s0.query("{RUNAWAY}")
        except sqlite3.Error:
            pass


def reads_s0(s0, sT):
    return s0.query("SELECT balance FROM accounts WHERE id = 'A'") == [(100,)]
"""


async def _transfer(session: Session) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "done"


@pytest.fixture
def suite_with(tmp_path: Path, edited_bank: EditTask, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The bank suite with ``limit_checks.py``; *outcome* and *constraint* name its functions
    to add as a Python outcome check and a Python constraint of the transfer task."""
    monkeypatch.setattr("groundstate.grading.outcome.GRADER_TIME_LIMIT", LIMIT)
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    (root / "limit_checks.py").write_text(CHECKS)

    def load(outcome: tuple[str, ...] = (), constraint: str | None = None) -> Suite:
        def change(task: dict[str, Any]) -> None:
            task["outcome_assertions"] += [
                {"id": name, "check": f"limit_checks.py:{name}"} for name in outcome
            ]
            if constraint:
                task["hard_process_constraints"].append(
                    {"id": constraint, "check": f"limit_checks.py:{constraint}"}
                )

        return edited_bank(change)

    return load


def _timed(suite: Suite) -> tuple[AgentRun, float]:
    started = time.perf_counter()
    run = attempt(suite, "transfer", FunctionAgent(_transfer)).run
    return run, time.perf_counter() - started


def _result(run: AgentRun, check_id: str) -> Any:
    checks = run.outcome_assertion_results + run.constraint_results
    return next(c for c in checks if c.id == check_id)


def _no_grader_threads_left(within: float = HANG / 3) -> bool:
    """Every abandoned check thread has returned: its query was really stopped. (Looked for
    until it has; a loaded machine may take seconds to run a stopped thread to its end.)"""
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not [t for t in threading.enumerate() if "grader" in t.name or "check-" in t.name]:
            return True
        time.sleep(0.05)
    return False


def test_a_python_constraint_spinning_in_s0_is_a_grader_failure(suite_with: Any) -> None:
    run, took = _timed(suite_with(constraint="runaway_s0"))
    assert took < BOUND
    assert run.terminal_reason == "grader_failure"
    result = _result(run, "runaway_s0")
    assert result.error is not None and result.error.startswith("DeadlineExceeded")
    assert _no_grader_threads_left()


@pytest.mark.parametrize("function", ["runaway_s0_outcome", "runaway_sT_outcome", "retries_s0"])
def test_an_outcome_check_spinning_in_sql_is_a_grader_failure(
    suite_with: Any, function: str
) -> None:
    # reads_s0 runs after the runaway on the same connections: they must be free again.
    run, took = _timed(suite_with(outcome=(function, "reads_s0")))
    assert took < BOUND
    assert run.terminal_reason == "grader_failure"
    result = _result(run, function)
    assert result.error is not None and result.error.startswith("timed out")
    assert _result(run, "reads_s0").passed
    assert _no_grader_threads_left()


def test_checks_within_the_limit_still_read_s0(suite_with: Any) -> None:
    run, _ = _timed(suite_with(outcome=("reads_s0",)))
    assert run.terminal_reason == "success" and _result(run, "reads_s0").passed


class _DeafView:
    """A view whose query ignores the first interrupt (it came before the query's first step),
    as SQLite does when nothing is running yet."""

    def __init__(self) -> None:
        self.interrupts = 0
        self.stopped = threading.Event()

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        self.stopped.wait(30)
        raise RuntimeError("interrupted")

    def snapshot(self) -> Any:
        raise NotImplementedError

    def interrupt(self) -> None:
        self.interrupts += 1
        if self.interrupts >= 2:
            self.stopped.set()


def test_a_lost_interrupt_is_repeated_until_the_query_stops() -> None:
    s0, sT = _DeafView(), _DeafView()
    states = States(s0, sT, Snapshot(tables={}), StateDiff(tables={}), Path("."))
    started = time.perf_counter()
    with pytest.raises(DeadlineExceeded):
        within_limit(lambda bounded: bounded.s0.query("SELECT 1"), states, 0.2, "grader-deaf")
    assert s0.stopped.is_set() and s0.interrupts >= 2
    assert sT.interrupts == 0  # nothing was running there: nothing to interrupt
    assert time.perf_counter() - started < HANG  # not the 30 s the deaf query would wait
