"""Round 45: whether code of an agent's still runs is judged for the batch at hand only.

The in-process executor lays a harness error on a try at an agent's door while code an agent
left may still run (``_agents_left``), and a try's grading is not noted as started then
(``exitcause.grading_starts``). Both counted what ran before the batch: an agent's work left
running past its limit by an episode outside any batch (or an earlier batch's preflight, whose
try ids recur), so the harness's own error was stored as an agent's crash, and the tests that
checked it failed or passed by the order they ran in. Native threads were judged by count,
so one an earlier batch left that ended hid one this batch's agent started. Now only work
handed since the batch opened, in the try's own context, counts; native threads by identity.
"""

from __future__ import annotations

import _thread
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from groundstate import exitcause
from groundstate.agents.base import Session
from groundstate.loopthreads import submit
from groundstate.spec.suite import Suite, grader_shape, load_suite
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, attempt

from .conftest import BANK, BANK_SYSTEM, in_a_fresh_process
from .test_agents_round43 import _do_the_task
from .test_exitcause_round19 import _mark
from .test_gradexit_round19 import _in_try

HARNESS_BUG = "zip() argument 2 is shorter than argument 1"


@contextmanager
def _short_limit(suite: Suite, seconds: float) -> Iterator[Suite]:
    """*suite* with its task's time limit at *seconds* (an agent that blocks is stopped)."""
    task, shape = suite.tasks["transfer"], suite.graders.get("transfer")
    short = task.model_copy(update={"time_limit": seconds})
    suite.tasks["transfer"], suite.graders["transfer"] = short, grader_shape(short)
    try:
        yield suite
    finally:
        suite.tasks["transfer"] = task
        if shape is not None:
            suite.graders["transfer"] = shape


def _blocking(release: threading.Event) -> FunctionAgent:
    async def agent(session: Session) -> str:
        release.wait(60)  # holds its thread past its time limit
        return "done"

    return FunctionAgent(agent)


def _batch(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    act: Callable[[Session], Any] | None = None,
    fails: Callable[[Any], bool] = lambda job: job.info.attempt == 2,
    suite: Suite | None = None,
    name: str = "runs.db",
) -> tuple[Any, RunStore]:
    """A two-attempt in-process batch whose harness work fails on the jobs *fails* picks;
    attempt 2's agent runs *act* first."""
    import groundstate.executors.local as local
    from groundstate.runner import BatchConfig, run_batch
    from groundstate.spec.system import load_system

    real = local.run_job

    async def failing(job: Any, *args: Any) -> Any:
        output = await real(job, *args)
        if fails(job):
            raise ValueError(HARNESS_BUG)
        return output

    monkeypatch.setattr(local, "run_job", failing)
    runs: list[int] = []

    async def agent(session: Session) -> str:
        if session.seed != 0:
            runs.append(1)
        if act is not None and len(runs) == 2:
            result = act(session)
            if result is not None:
                return await result  # type: ignore[no-any-return]
        return await _do_the_task(session)

    store = RunStore(tmp_path / name)
    factory = lambda: FunctionAgent(agent)  # noqa: E731
    try:
        config = BatchConfig(attempts=2)
        system = load_system(BANK_SYSTEM)
        return run_batch(
            suite or load_suite(BANK), system, config, store, agent_factory=factory
        ), store
    except BaseException:
        store.close()
        raise


def _stops_with_the_harness_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="zip"):
        _batch(monkeypatch, tmp_path)
    with RunStore(tmp_path / "runs.db") as store:
        assert [r.terminal_reason for r in store.runs(store.batch().batch_id)] == ["success"]


def _laid_at_the_agent(result: Any, store: RunStore) -> None:
    with store:
        reasons = {r.attempt: r.terminal_reason for r in result.runs}
        assert reasons == {1: "success", 2: "agent_failure/crashed"}
        (second,) = [r for r in result.runs if r.attempt == 2]
        message = second.infrastructure_status["exception"]["message"]
        assert f"while code an agent left ran (ValueError: {HARNESS_BUG})" in message


# --- what ran before the batch is none of its agents' ------------------------------------------


def test_an_agent_left_running_by_an_episode_outside_any_batch_is_no_later_batchs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, release: threading.Event
) -> None:
    """Before: the abandoned agent's work (run in no try's context) was taken for the batch's
    try's own: the harness's error was stored as attempt 2's crash, the batch going on."""
    with _short_limit(load_suite(BANK), 0.5) as suite:
        run = attempt(suite, "transfer", _blocking(release)).run
    assert run.terminal_reason == "agent_failure/time_limit"  # and its thread still blocks
    _stops_with_the_harness_error(monkeypatch, tmp_path)


def test_an_earlier_batchs_preflight_agent_left_running_is_no_later_batchs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, release: threading.Event
) -> None:
    """The smoke run's try id is the same in every batch ("smoke"): an earlier batch's smoke
    agent, left blocked past its limit, is not the next batch's smoke run's agent. Its
    harness error stops the batch before anything is stored, as the harness's."""
    from groundstate.runner import BatchConfig, run_batch
    from groundstate.spec.system import load_system

    async def agent(session: Session) -> str:
        if session.seed == 0:  # the smoke run only
            release.wait(60)
        return await _do_the_task(session)

    with _short_limit(load_suite(BANK), 1) as suite, RunStore(tmp_path / "first.db") as first:
        config, system = BatchConfig(attempts=1), load_system(BANK_SYSTEM)
        factory = lambda: FunctionAgent(agent)  # noqa: E731
        run_batch(suite, system, config, first, agent_factory=factory)  # its smoke run: late
    with pytest.raises(ValueError, match="zip"):
        _batch(monkeypatch, tmp_path, fails=lambda job: job.info.run_id == "smoke")


def test_a_native_thread_an_earlier_batch_left_that_ends_hides_none_of_this_batchs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, release: threading.Event
) -> None:
    """Before: native threads were counted, not named; the earlier one ending as the agent
    started its own (through ``_thread``, out of ``threading``'s sight) left the count as it
    was, and the harness's error on that try stopped the batch as if nothing of the agent's
    ran."""
    earlier, ended = threading.Event(), threading.Event()
    tid: list[int] = []

    def left() -> None:
        tid.append(threading.get_native_id())
        earlier.wait(60)
        ended.set()

    _thread.start_new_thread(left, ())
    while not tid:
        time.sleep(0.01)

    def swap(session: Session) -> None:
        earlier.set()
        assert ended.wait(30)
        while str(tid[0]) in os.listdir("/proc/self/task"):  # gone from the kernel's list
            time.sleep(0.01)
        _thread.start_new_thread(release.wait, (60,))

    _laid_at_the_agent(*_batch(monkeypatch, tmp_path, act=swap))


# --- false-positive guards: this batch's own agents' code still counts -------------------------


def test_this_batchs_agent_left_blocked_past_its_limit_still_takes_the_harness_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, release: threading.Event
) -> None:
    """Attempt 2's own agent, stopped at its limit and still blocking in its thread, is
    code an agent left: the error on its try is its crash (an earlier episode's leftover
    in the process changes nothing)."""
    with _short_limit(load_suite(BANK), 0.5) as suite:
        attempt(suite, "transfer", _blocking(release))

    def block(session: Session) -> None:
        release.wait(60)

    with _short_limit(load_suite(BANK), 3) as suite:
        result, store = _batch(monkeypatch, tmp_path, act=block, suite=suite)
    with store:
        (second,) = [r for r in result.runs if r.attempt == 2]
        assert second.terminal_reason == "agent_failure/crashed"
        assert (
            "while code an agent left ran" in second.infrastructure_status["exception"]["message"]
        )


def test_a_python_thread_this_batchs_agent_starts_after_an_earlier_one_still_counts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, release: threading.Event
) -> None:
    """A thread left before the batch is known; one the try's agent starts is not."""
    threading.Thread(target=release.wait, args=(60,), daemon=True).start()

    def leave(session: Session) -> None:
        threading.Thread(target=release.wait, args=(60,), daemon=True).start()

    _laid_at_the_agent(*_batch(monkeypatch, tmp_path, act=leave))


def test_with_nothing_of_this_batchs_agents_left_the_harness_error_stops_the_batch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, release: threading.Event
) -> None:
    """Control, with leftovers of every kind from before the batch in the process."""
    with _short_limit(load_suite(BANK), 0.5) as suite:
        attempt(suite, "transfer", _blocking(release))
    threading.Thread(target=release.wait, args=(60,), daemon=True).start()
    _thread.start_new_thread(release.wait, (60,))
    _stops_with_the_harness_error(monkeypatch, tmp_path)


# --- grading's start (exitcause), the same judgment ---------------------------------------------


def test_grading_starts_unbarred_by_agent_work_handed_before_the_batch(tmp_path: Path) -> None:
    """In a fresh process (it leaves threads)."""
    in_a_fresh_process(_grading_by_batch, str(tmp_path))


def _grading_by_batch(tmp: str) -> None:
    release, outcomes = threading.Event(), []  # type: ignore[var-annotated]
    blocked = threading.Semaphore(0)

    async def agent() -> None:
        blocked.release()
        release.wait(60)

    with RunStore(Path(tmp) / "runs.db") as store:
        for run_id in ("r1", "r2"):
            _mark(store, run_id)
        try:
            _in_try(None, submit, agent, "agent-before", outcomes.append)  # no try's
            assert blocked.acquire(timeout=30)
            _in_try("r1", submit, agent, "agent-r1-before", outcomes.append)  # an earlier r1
            assert blocked.acquire(timeout=30)
            with exitcause.watching(store.path) as watch:
                watch.started("r1")
                watch.started("r2")
                _in_try("r1", exitcause.grading_starts)  # before: barred by both
                assert watch.grading == {"r1"}
                _in_try("r2", submit, agent, "agent-r2", outcomes.append)  # this batch's
                assert blocked.acquire(timeout=30)
                _in_try("r2", exitcause.grading_starts)  # its own agent's work: a bar
                assert watch.grading == {"r1"}
        finally:
            release.set()
