"""Executors on this machine: attempts in threads of this process, or in a process pool."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import suppress
from dataclasses import dataclass, field
from multiprocessing.context import BaseContext

from groundstate.environments.base import Environment
from groundstate.episode import (
    AttemptJob,
    AttemptOutput,
    EnvironmentFactory,
    default_environment,
    in_thread,
)
from groundstate.errors import ExecutorError
from groundstate.executors._job import AgentFactory, execute, init_worker, run_job
from groundstate.spec.suite import Suite
from groundstate.spec.task import AgentTask
from groundstate.workdirs import process_dir

_Started = asyncio.Future[asyncio.Task[AttemptOutput]]
"""The attempt's task in its own loop, once it runs (to cancel it from the batch's loop)."""

UNWIND_TIMEOUT = 10.0
"""Seconds a cancelled attempt gets to close its environment before the batch stops anyway."""


@dataclass
class _Turnstile:
    """Turns in the order attempts were submitted, for calling live factories in that order.

    Each ticket waits on an event of its own, set when the ticket before it is done: one
    wake-up per turn. (One condition shared by every waiting attempt woke all of them at each
    turn: with 256 attempts waiting, tens of thousands of wake-ups per batch.)"""

    _next: int = 0
    _serving: int = 0
    _turns: dict[int, threading.Event] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def ticket(self) -> int:
        with self._lock:
            ticket, self._next = self._next, self._next + 1
            self._turn(ticket)
            if ticket == self._serving:
                self._turns[ticket].set()
        return ticket

    def wait(self, ticket: int) -> None:
        with self._lock:
            turn = self._turn(ticket)
        turn.wait()

    def done(self, ticket: int) -> None:
        """End *ticket*'s turn (again is harmless)."""
        with self._lock:
            if self._serving != ticket:
                return
            self._turns.pop(ticket, None)
            self._serving += 1
            if self._serving < self._next:
                self._turn(self._serving).set()

    def _turn(self, ticket: int) -> threading.Event:
        """The event *ticket* waits on (the caller holds the lock)."""
        return self._turns.setdefault(ticket, threading.Event())


@dataclass
class InProcessExecutor:
    """Each attempt in a thread of this process with an event loop of its own.

    An attempt's own work (reset, hashing, grading) then never waits behind another's on a
    shared loop, so its recorded latency is its own, not the queue's. The live suite and
    factories are used as given (test doubles, fault injection), so nothing is pickled.
    Live factories are called one attempt at a time in the order the attempts were
    submitted, as when attempts shared one loop: test doubles count on it ("the first
    environment built fails"), and a seeded fault injector stays reproducible.
    """

    suite: Suite
    make_agent: AgentFactory | None = None
    make_env: EnvironmentFactory = default_environment
    name: str = "in-process"
    _turns: _Turnstile | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.make_agent is not None or self.make_env is not default_environment:
            self._turns = _Turnstile()

    def open(self, concurrency: int) -> None:
        """Nothing to start: a thread per attempt, at most *concurrency* at once."""

    def close(self) -> None:
        """Nothing to stop: a cancelled attempt unwinds in :meth:`run`."""

    async def run(self, job: AttemptJob) -> AttemptOutput:
        outer = asyncio.get_running_loop()
        started: _Started = outer.create_future()
        turns = self._turns
        ticket = turns.ticket() if turns is not None else 0

        def make_env(task: AgentTask, suite: Suite) -> Environment:
            if turns is not None and self.make_env is default_environment:
                turns.done(ticket)  # only the agent factory is live: builds run in parallel
            try:
                return self.make_env(task, suite)
            finally:  # the agent was built before it: the factories are done
                if turns is not None:
                    turns.done(ticket)

        async def attempt() -> AttemptOutput:
            current: asyncio.Task[AttemptOutput] = asyncio.current_task()  # type: ignore[assignment]
            outer.call_soon_threadsafe(_settle, started, current)
            if turns is not None:
                turns.wait(ticket)  # blocks this attempt's own thread only
            try:
                return await run_job(job, self.suite, self.make_agent, make_env)
            finally:
                if turns is not None:
                    turns.done(ticket)

        name = f"attempt-{job.info.run_id[:8]}"
        finished = in_thread(lambda: asyncio.run(attempt()), name, crashes=False)
        try:
            return await asyncio.shield(finished)
        except asyncio.CancelledError:
            await _unwind(started, finished)
            raise


def _settle(future: _Started, task: asyncio.Task[AttemptOutput]) -> None:
    if not future.done():
        future.set_result(task)


async def _unwind(started: _Started, finished: asyncio.Future[AttemptOutput]) -> None:
    """Cancel the attempt in its own loop and wait (bounded) until it has closed its
    environment, as it did when attempts shared the batch's loop."""
    if started.done():
        task = started.result()
        with suppress(RuntimeError):  # its loop has just finished
            task.get_loop().call_soon_threadsafe(task.cancel)
    with suppress(BaseException):
        await asyncio.wait_for(asyncio.shield(finished), UNWIND_TIMEOUT)


@dataclass
class ProcessExecutor:
    """Attempts in a pool of worker processes, one attempt per worker at a time.

    For CPU-bound attempts (large fixtures, heavy grading, agents that compute): the work of
    concurrent attempts runs on all cores instead of sharing one interpreter. Workers load
    the suite from its path (checked against the batch's hash) and build the agent from the
    system spec; only this process writes to the store. Workers start through a fork server
    (not a fork of this threaded process) and ignore Ctrl-C, which the batch handles.
    """

    workers: int | None = None
    """Worker processes; default: the concurrency, at most the machine's cores."""
    name: str = "process"
    _pool: ProcessPoolExecutor | None = field(default=None, init=False, repr=False)

    def open(self, concurrency: int) -> None:
        if self._pool is not None:
            return
        size = self.workers or max(1, min(concurrency, os.cpu_count() or 1))
        context: BaseContext = multiprocessing.get_context("spawn")  # Windows: no fork server
        if "forkserver" in multiprocessing.get_all_start_methods():
            context = multiprocessing.get_context("forkserver")
            multiprocessing.set_forkserver_preload(["groundstate.executors._job"])
        self._pool = ProcessPoolExecutor(
            size,
            mp_context=context,
            initializer=init_worker,
            initargs=(str(process_dir() / "workers"),),
        )

    def close(self) -> None:
        """Stop the workers; an attempt still running (the batch was interrupted) is killed:
        it would not be stored anyway."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        processes = list((pool._processes or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(UNWIND_TIMEOUT)

    async def run(self, job: AttemptJob) -> AttemptOutput:
        if self._pool is None:
            raise ExecutorError("the process executor is not open")
        try:
            return await asyncio.wrap_future(self._pool.submit(execute, job))
        except BrokenProcessPool as exc:
            raise ExecutorError(
                f"a worker process died while running task {job.task_id!r} attempt "
                f"{job.info.attempt} ({exc}); the stored attempts are kept: resume the batch"
            ) from None
