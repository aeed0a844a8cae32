"""Executors on this machine: attempts in threads of this process, or in a process pool."""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
import os
import pickle
import queue
import threading
from contextlib import suppress
from dataclasses import dataclass, field
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from typing import Any

from groundstate.environments.base import Environment
from groundstate.episode import (
    AttemptJob,
    AttemptOutput,
    EnvironmentFactory,
    default_environment,
)
from groundstate.errors import ExecutorError
from groundstate.executors._job import AgentFactory, SuiteKey, prepared, run_job, serve
from groundstate.loopthreads import in_loop_thread
from groundstate.spec.suite import Suite
from groundstate.spec.task import AgentTask
from groundstate.workdirs import process_dir

_Started = list[asyncio.Task[AttemptOutput]]
"""The attempt's task in its own loop, once it runs (to cancel it from the batch's loop): set
by the attempt's thread, read only when the batch cancels it. A plain list, not a future of
the batch's loop, which the thread would have to wake once per attempt to settle."""

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
    """Each attempt in a thread of this process with an event loop of its own (threads and
    loops reused from attempt to attempt: see :mod:`groundstate.loopthreads`).

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
        """Nothing to start: a thread per running attempt, at most *concurrency* at once."""

    def close(self) -> None:
        """Nothing to stop: a cancelled attempt unwinds in :meth:`run`."""

    async def run(self, job: AttemptJob) -> AttemptOutput:
        started: _Started = []
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
            started.append(current)
            if turns is not None:
                turns.wait(ticket)  # blocks this attempt's own thread only
            try:
                return await run_job(job, self.suite, self.make_agent, make_env)
            finally:
                if turns is not None:
                    turns.done(ticket)

        name = f"attempt-{job.info.run_id[:8]}"
        finished = in_loop_thread(attempt, name, crashes=False)
        try:
            return await asyncio.shield(finished)
        except asyncio.CancelledError:
            await _unwind(started, finished)
            raise


async def _unwind(started: _Started, finished: asyncio.Future[AttemptOutput]) -> None:
    """Cancel the attempt in its own loop and wait (bounded) until it has closed its
    environment, as it did when attempts shared the batch's loop."""
    if started:
        task = started[0]
        with suppress(RuntimeError):  # its loop has just finished
            task.get_loop().call_soon_threadsafe(task.cancel)
    with suppress(BaseException):
        await asyncio.wait_for(asyncio.shield(finished), UNWIND_TIMEOUT)


@dataclass
class ProcessExecutor:
    """Attempts in a pool of worker processes, several attempts per worker at once.

    For CPU-bound attempts (large fixtures, heavy grading, agents that compute): the work of
    concurrent attempts runs on all cores instead of sharing one interpreter. Each worker
    runs up to ``ceil(concurrency / workers)`` attempts at a time, each in a thread of its
    own, so attempts that wait on a model still overlap. Workers load the suite from its
    path (checked against the batch's hash) and build the agent from the system spec; only
    this process writes to the store. Workers start through a fork server (not a fork of
    this threaded process) and ignore Ctrl-C, which the batch handles.
    """

    workers: int | None = None
    """Worker processes; default: the concurrency, at most the machine's cores."""
    preload: SuiteKey | None = None
    """The suite workers load as they start (path, hash, environment), before any job."""
    name: str = "process"
    _pool: _WorkerPool | None = field(default=None, init=False, repr=False)

    def open(self, concurrency: int) -> None:
        if self._pool is not None:
            return
        size = self.workers or max(1, min(concurrency, os.cpu_count() or 1))
        context: BaseContext = multiprocessing.get_context("spawn")  # Windows: no fork server
        if "forkserver" in multiprocessing.get_all_start_methods():
            context = multiprocessing.get_context("forkserver")
            multiprocessing.set_forkserver_preload(["groundstate.executors._job"])
        slots = -(-max(concurrency, 1) // size)
        workdirs = str(process_dir() / "workers")
        self._pool = _WorkerPool(context, size, (workdirs, slots, self.preload))

    def close(self) -> None:
        """Stop the workers; an attempt still running (the batch was interrupted) is killed:
        it would not be stored anyway."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    @property
    def worker_pids(self) -> list[int]:
        """The worker processes' ids while open (to measure their CPU: they are the fork
        server's children, not this process's)."""
        return [] if self._pool is None else self._pool.pids

    async def run(self, job: AttemptJob) -> AttemptOutput:
        if self._pool is None:
            raise ExecutorError("the process executor is not open")
        return await self._pool.run(job)


@dataclass
class _Waiting:
    """A job handed to the pool, until its output comes back."""

    job: AttemptJob
    future: asyncio.Future[AttemptOutput]
    worker: int | None = None
    """The pid of the worker running it, once one has taken it."""


class _WorkerPool:
    """Worker processes fed from one job queue; a reader thread settles each job's future
    from the results queue, and fails every job still out when a worker dies (the batch then
    stops; a resume completes it)."""

    def __init__(
        self, context: BaseContext, size: int, setup: tuple[str, int, SuiteKey | None]
    ) -> None:
        """*setup*: each worker's work-folder root, attempt slots and suite to preload."""
        self._jobs: Any = context.Queue()
        self._results: Any = context.Queue()
        self._started: Any = context.SimpleQueue()
        self._waiting: dict[int, _Waiting] = {}
        self._keys = itertools.count()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._processes: list[BaseProcess] = [
            context.Process(  # type: ignore[attr-defined]
                target=serve,
                args=(self._jobs, self._results, self._started, *setup),
                name=f"groundstate-worker-{n}",
            )
            for n in range(size)
        ]
        for process in self._processes:
            process.start()
        threading.Thread(target=self._read, name="groundstate-pool-reader", daemon=True).start()

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._processes if p.pid is not None]

    async def run(self, job: AttemptJob) -> AttemptOutput:
        future: asyncio.Future[AttemptOutput] = asyncio.get_running_loop().create_future()
        key = next(self._keys)
        with self._lock:
            self._waiting[key] = _Waiting(job, future)
        self._jobs.put((key, job))
        try:
            return await future
        finally:
            with self._lock:
                self._waiting.pop(key, None)

    def close(self) -> None:
        self._closed.set()
        for channel in (self._jobs, self._results):
            channel.cancel_join_thread()  # exiting must not wait to flush what nobody reads
        for process in self._processes:
            process.terminate()
        for process in self._processes:
            process.join(UNWIND_TIMEOUT)
        for channel in (self._jobs, self._results, self._started):
            channel.close()

    def _read(self) -> None:
        while not self._closed.is_set():
            try:
                self._note_started()  # each turn: a pipe left unread fills, and blocks workers
                kind, key, value = self._results.get(timeout=0.2)
            except queue.Empty:
                self._check_workers()
                continue
            except (OSError, EOFError, ValueError):  # closed under us: the pool is stopping
                return
            with self._lock:
                waiting = self._waiting.get(key)
            if waiting is None:
                continue
            if kind == "done":
                _deliver(waiting.future, prepared(pickle.loads(value)))
            else:
                _deliver(waiting.future, ExecutorError(value))

    def _note_started(self) -> None:
        """Which worker runs which job, from what the workers wrote on *started* so far."""
        while not self._started.empty():
            key, pid = self._started.get()
            with self._lock:
                waiting = self._waiting.get(key)
            if waiting is not None:
                waiting.worker = pid

    def _check_workers(self) -> None:
        """A dead worker breaks the pool, as a broken process pool does: every job still out
        fails, naming the one it was running."""
        dead = {p.pid for p in self._processes if not p.is_alive()}
        if not dead or self._closed.is_set():
            return
        self._note_started()  # what a worker wrote before it died
        with self._lock:
            out = list(self._waiting.values())
        for waiting in out:
            job = waiting.job
            where = "while running" if waiting.worker in dead else "before it could run"
            _deliver(
                waiting.future,
                ExecutorError(
                    f"a worker process died {where} task {job.task_id!r} attempt "
                    f"{job.info.attempt}; the stored attempts are kept: resume the batch"
                ),
            )


def _deliver(future: asyncio.Future[AttemptOutput], value: AttemptOutput | Exception) -> None:
    """Settle *future* from the reader thread, in its loop's thread."""

    def settle() -> None:
        if future.done():
            return
        if isinstance(value, Exception):
            future.set_exception(value)
        else:
            future.set_result(value)

    with suppress(RuntimeError):  # its loop has closed: nobody waits any more
        future.get_loop().call_soon_threadsafe(settle)
