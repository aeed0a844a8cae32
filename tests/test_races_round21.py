"""Races between the threads of the harness (twenty-first round).

Each race is made to happen every time: a barrier or an event holds one thread at the
racy step while the other does what it did only now and then under load."""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.episode import AttemptInfo, AttemptJob
from groundstate.executors import InProcessExecutor, local
from groundstate.executors.local import _alive, _WorkerPool
from groundstate.loopthreads import working
from groundstate.spec.suite import Suite
from groundstate.spec.system import load_system
from groundstate.testing import FunctionAgent

from .conftest import BANK_SYSTEM

WAIT = 30.0
"""Seconds a step that must happen is waited for (an upper bound: it takes milliseconds)."""


def _lose(*_: Any) -> Any:
    raise AssertionError("no job runs in these tests")


def _pool(tmp_path: Path) -> _WorkerPool:
    context = multiprocessing.get_context("forkserver")
    return _WorkerPool(context, 1, 1, (str(tmp_path), None), _lose)


def _reader() -> threading.Thread:
    return next(t for t in threading.enumerate() if t.name == "groundstate-pool-reader")


def test_a_pool_closed_while_it_replaces_a_dead_worker_leaves_no_worker_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch closes the pool just as its reader replaces a worker that died (one that
    retired after the batch's last attempt: the usual end of a batch). The reader had seen
    the pool open; the worker it then started, after the close had killed the workers, was
    left running (waiting for work until the harness's process ended) with its pipe open."""
    replacing, death = threading.Event(), local._death

    def slow_death(process: Any) -> str:
        replacing.set()
        deadline = time.monotonic() + WAIT
        while not pool._closed.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # the close goes on meanwhile
        return death(process)

    monkeypatch.setattr(local, "_death", slow_death)
    pool = _pool(tmp_path)
    reader = _reader()
    first = pool._workers[0].process
    local._kill(first)
    assert replacing.wait(WAIT)
    pool.close()
    reader.join(WAIT)
    assert not reader.is_alive()
    left = [w.process for w in pool._workers if w.process is not first]
    running = [p.pid for p in left if _alive(p)]
    for process in left:  # not left to the end of the test session
        local._kill(process)
    assert running == []
    assert all(not w.inbox.open for w in pool._workers)


def _job(bank: Suite, attempt: int = 1) -> AttemptJob:
    info = AttemptInfo(run_id=f"race-{attempt}", batch_id="b", attempt=attempt, seed=attempt)
    return AttemptJob(str(bank.root), bank.suite_hash, load_system(BANK_SYSTEM), "transfer", info)


def test_an_attempt_cancelled_before_its_thread_starts_it_never_runs(
    bank: Suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch stops (Ctrl-C, a stop) just after handing an in-process attempt to its
    thread, before that thread has started it: the cancellation looked for the attempt's
    task, found none yet, and was lost. The attempt then ran to its end (its agent calling
    its model after the batch had stopped) while the batch waited for it."""
    ran = threading.Event()

    async def agent(session: Session) -> None:
        ran.set()

    hold, real = threading.Event(), local.in_loop_thread

    def late_start(work: Any, name: str, **options: Any) -> Any:
        def held() -> Any:
            hold.wait(WAIT)  # the thread is slow to start the attempt (a busy machine)
            return work()

        return real(held, name, **options)

    monkeypatch.setattr(local, "in_loop_thread", late_start)
    executor = InProcessExecutor(bank, make_agent=lambda: FunctionAgent(agent))

    async def stop_at_once() -> None:
        running = asyncio.create_task(executor.run(_job(bank)))
        await asyncio.sleep(0)  # handed to its thread: it waits for its output
        running.cancel()
        await asyncio.sleep(0)  # the cancellation is under way
        hold.set()
        with pytest.raises(asyncio.CancelledError):
            await running

    asyncio.run(stop_at_once())
    assert not ran.is_set()


def test_an_attempt_cancelled_while_it_runs_is_stopped(bank: Suite) -> None:
    """Control: the batch stops while the attempt's agent runs: it is cancelled there and
    the batch does not wait for its end."""
    started, stop = threading.Event(), threading.Event()

    async def agent(session: Session) -> None:
        started.set()
        while not stop.is_set():  # past the cancellation: the test's end stops it
            await asyncio.sleep(0.01)

    executor = InProcessExecutor(bank, make_agent=lambda: FunctionAgent(agent))

    async def stop_while_running() -> float:
        running = asyncio.create_task(executor.run(_job(bank)))
        while not started.is_set():
            await asyncio.sleep(0.01)
        begun = time.monotonic()
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        return time.monotonic() - begun

    try:
        assert asyncio.run(stop_while_running()) < local.UNWIND_TIMEOUT
    finally:
        stop.set()
        deadline = time.monotonic() + WAIT
        while _agents_working() and time.monotonic() < deadline:
            time.sleep(0.01)


def _agents_working() -> bool:
    return any(name.startswith("agent-") for name, _ in working().values())
