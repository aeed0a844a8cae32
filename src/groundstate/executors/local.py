"""Executors on this machine: attempts in threads of this process, or in a process pool."""

from __future__ import annotations

import asyncio
import io
import itertools
import math
import multiprocessing
import os
import pickle
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from contextvars import Context
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from typing import Any

from groundstate import steadyloop
from groundstate.environments.base import Environment
from groundstate.episode import (
    GRADING,
    AttemptJob,
    AttemptOutput,
    EnvironmentFactory,
    default_environment,
)
from groundstate.errors import ExecutorError
from groundstate.executors._job import (
    FRAME,
    PIPE_LOST,
    AgentFactory,
    Message,
    SuiteKey,
    _agents_alive,
    hard_limit,
    lost,
    native_threads,
    prepared,
    room_for,
    run_job,
    sendable,
    serve,
    shares_interpreter,
)
from groundstate.exitcause import TRY, grading_starts
from groundstate.loopthreads import abandon, handed, in_loop_thread, put_back_after
from groundstate.ourthreads import Threads, present, start
from groundstate.returned import text_of, type_name
from groundstate.spec.suite import Suite
from groundstate.spec.task import AgentTask
from groundstate.store import PreparedRun
from groundstate.store import _read_prepared as read_prepared
from groundstate.turns import Waiter
from groundstate.workdirs import process_dir

_Started = list[asyncio.Task[AttemptOutput] | None]
"""The attempt's task in its own loop, once it runs (to cancel it from the batch's loop),
put there by the attempt's thread; ``None``, put there by the batch as it cancels the
attempt. Whichever comes first is first (``list.append`` is atomic): a cancellation that
comes before the task is seen by the attempt as it starts (it was lost: the attempt ran to
its end, its agent calling its model after the batch had stopped). A plain list, not a
future of the batch's loop, which the thread would have to wake once per attempt to
settle."""

UNWIND_TIMEOUT = 10.0
"""Seconds a cancelled attempt gets to close its environment before the batch stops anyway."""


@dataclass
class _Turnstile:
    """Turns in the order attempts were submitted, for calling live factories in that order.

    Each ticket waits on a waiter of its own (a C lock, see :class:`groundstate.turns.Waiter`),
    woken when the ticket before it is done: one wake-up per turn. (One condition shared by
    every waiting attempt woke all of them at each turn: with 256 attempts waiting, tens of
    thousands of wake-ups per batch.) Not a ``threading.Event``: an agent that set
    ``threading.Event.set`` (or ``Condition.notify_all``) to drop the call while another
    attempt ended its turn held every later attempt, and the batch, for ever."""

    _next: int = 0
    _serving: int = 0
    _turns: dict[int, Waiter] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def ticket(self) -> int:
        with self._lock:
            ticket, self._next = self._next, self._next + 1
            self._turn(ticket)
            if ticket == self._serving:
                self._turns[ticket].wake()
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
                self._turn(self._serving).wake()

    def _turn(self, ticket: int) -> Waiter:
        """The waiter *ticket* waits on (the caller holds the lock; woken once)."""
        turn = self._turns.get(ticket)
        if turn is None:
            turn = self._turns[ticket] = Waiter()
        return turn


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
    _known: Threads = field(default_factory=present, init=False, repr=False)
    _unlisted: frozenset[int] | None = field(default=None, init=False, repr=False)
    _since: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.make_agent is not None or self.make_env is not default_environment:
            self._turns = _Turnstile()

    def open(self, concurrency: int) -> None:
        """Nothing to start (a thread per running attempt, at most *concurrency* at once) but
        room for their files (:func:`room_for`); the threads alive now (the host's, an earlier
        batch's) and the work handed so far are noted: no agent's of this batch."""
        self._known, self._unlisted, self._since = present(), native_threads(), handed()
        self.room(concurrency)

    def room(self, concurrency: int) -> None:
        room_for(concurrency)

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
            TRY.set(job.info.run_id)  # whose code ends the process, if any (exitcause)
            GRADING.set(grading_starts)  # and whether it is its checks' (exitcause)
            if turns is not None:
                turns.wait(ticket)  # blocks this attempt's own thread only
            try:
                if started[0] is None:  # the batch cancelled it before it started
                    raise asyncio.CancelledError
                return await run_job(job, self.suite, self.make_agent, make_env)
            finally:
                if turns is not None:
                    turns.done(ticket)

        name = f"attempt-{job.info.run_id[:8]}"
        kept: list[Any] = []  # the process-wide state as the attempt finds it (see abandon)
        watched = shares_interpreter(job, self.make_agent)  # as run_attempt decides it
        finished = in_loop_thread(attempt, name, crashes=False, kept=kept, watched=watched)
        (shared,) = kept
        begun = time.monotonic()
        try:
            output = await asyncio.shield(finished)
        except asyncio.CancelledError:
            if _cancelled_within(finished):
                put_back_after(shared)
                _refuse_others(job, started[0])
                return lost(job, self.suite, CANCELLED_WITHIN, begun, overdue=False)
            await _unwind(started, finished, shared)
            raise
        except BaseException as error:
            put_back_after(shared)
            if isinstance(error, Exception) and self._agents_left(job):
                said = f"{type_name(type(error))}: {text_of(error)}"
                cause = f"the harness failed while code an agent left ran ({said})"
                return lost(job, self.suite, cause, begun, overdue=False)
            raise
        put_back_after(shared)  # whatever its agent made its thread take its end for
        return output

    def _agents_left(self, job: AttemptJob) -> bool:
        """Whether code of an agent's may still run beside this try's (its own agent's work
        past its time limit, a thread an agent started: see ``_agents_alive``), so that an
        error out of the harness's own work on the try is taken for that code's doing (a
        thread rebinding ``builtins.len`` while the try was graded made the watch's own
        ``zip(..., strict=True)`` fail): the try is the agent's crash. Before, the batch
        stopped there with a traceback, the try unstored and drawn anew by ``--resume``."""

        def its_own(context: Context) -> bool:
            return context.get(TRY) == job.info.run_id

        return _agents_alive(self._known, its_own, self._unlisted, since=self._since)


CANCELLED_WITHIN = (
    "the attempt's task was cancelled in its own event loop by code in the process (no"
    " interruption of the batch asked for it)"
)


def _cancelled_within(finished: asyncio.Future[Any]) -> bool:
    """Whether the attempt ended cancelled though the batch's task awaiting it was not: code
    in the process (an agent that found the attempt's loop through ``sys._current_frames()``)
    cancelled it. Before, the cancellation reached the batch, which stopped with a traceback,
    the try unstored and drawn anew by ``--resume``."""
    current = asyncio.current_task()
    if current is None or current.cancelling() or not finished.done() or finished.cancelled():
        return False
    return isinstance(finished.exception(), asyncio.CancelledError)  # delivered from its loop


def _refuse_others(job: AttemptJob, task: asyncio.Task[Any] | None) -> None:
    """Raise :class:`ExecutorError` (the batch stops once the tries in flight are stored, and
    a resume runs this one again) when the attempt's task was cancelled by code of another
    try's agent, told as the call was made (:class:`steadyloop.HeldLoop`), or of an agent
    whose try had ended: its own agent is not to blame. Before, the attempt was stored as
    its crash whoever cancelled it."""
    loop = None if task is None else task.get_loop()
    who = loop.cancellers if isinstance(loop, steadyloop.HeldLoop) else set()
    if who and job.info.run_id not in who:
        others = ", ".join(sorted(w or "one that had ended" for w in who))
        raise ExecutorError(
            f"task {job.task_id!r} attempt {job.info.attempt} ({job.info.run_id}) was "
            f"cancelled in its own event loop by the code of another try's agent ({others}): "
            "no verdict on its own agent; the stored attempts are kept: resume the batch"
        )


async def _unwind(started: _Started, finished: asyncio.Future[AttemptOutput], shared: Any) -> None:
    """Cancel the attempt in its own loop and wait (bounded) until it has closed its
    environment, as it did when attempts shared the batch's loop (or, not started yet, it
    does not start: see :data:`_Started`)."""
    started.append(None)
    task = started[0]
    if task is not None:
        with suppress(RuntimeError):  # its loop has just finished
            task.get_loop().call_soon_threadsafe(task.cancel)
    with suppress(BaseException):
        await asyncio.wait_for(asyncio.shield(finished), UNWIND_TIMEOUT)
    if not finished.done():  # the batch stops anyway: nobody reads what the attempt ends with
        abandon(finished, shared)


HARD_GRACE = 60.0
"""Seconds past an attempt's time limit (and the wait for a call in flight) after which the
process pool kills the worker still running it: the agent holds it (a C call that keeps
the GIL, a blocked signal) so that not even the harness's own timeout can run."""

UNACKED_DEATHS = 2
"""Deaths of the workers a job was sent to, none of which said it started it, after which
it is taken for its own doing (an agent that kills its worker before the start message
has left it)."""

DEATH_CHECK = 0.1
"""Seconds between the pool's looks at its workers (dead ones, attempts past the hard
limit)."""


PIPE_CLOSED = "its results pipe was closed while it ran (by its agent)"

PIPE_CLOSED_WAIT = 1.0
"""Seconds a worker whose results pipe ended has to be dead (it exited, or was killed)
before the pool takes it for one whose agent closed the pipe, and kills it."""


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

    A process is also a wall around an attempt, which threads are not:

    - a worker that dies during an attempt (``os._exit``, SIGKILL, SIGSEGV, the kernel's
      out-of-memory killer) is replaced; the attempt it ran alone ends as
      ``agent_failure/crashed``. When it ran several, which one killed it is unknown: each
      is run again alone (a second death then names it);
    - an attempt still running :data:`HARD_GRACE` seconds past its time limit (its agent
      holds the worker in a C call) is killed with its worker and ends as
      ``agent_failure/time_limit`` (several at once: each is run again alone);
    - a worker that an attempt left something in (an agent or tool thread still running,
      a thread or child process of its own, a changed ``os.environ``, a rebound function
      of the harness: see :func:`~groundstate.executors._job.leftovers`) takes no more
      attempts and ends, with what was left, once its running attempts are done; another
      takes its place;
    - a worker that writes on its results pipe anything but whole messages about the jobs
      it runs (its agent forging another attempt's result), or closes it, is killed: its
      attempt ends as ``agent_failure/crashed``.
    """

    workers: int | None = None
    """Worker processes; default: the concurrency, at most the machine's cores."""
    preload: SuiteKey | None = None
    """The suite workers load as they start (path, hash, environment), before any job."""
    suite: Suite | None = None
    """The batch's suite as loaded here: the attempts' time limits, and the records of
    attempts lost with their worker (without it, a lost attempt stops the batch)."""
    grace: float = HARD_GRACE
    """Seconds past an attempt's time limit before it is killed with its worker."""
    name: str = "process"
    _pool: _WorkerPool | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        """Refuse a pool of no worker (a count computed as the cores less some, on a machine
        with fewer): it started none, and the batch waited for one for ever."""
        given = self.workers
        if given is not None and (
            isinstance(given, bool) or not isinstance(given, int) or given < 1
        ):
            raise ExecutorError(
                f"ProcessExecutor.workers is a whole number, at least 1 (or None: the "
                f"concurrency, at most the cores), not {given!r}"
            )

    def open(self, concurrency: int) -> None:
        if self._pool is not None:
            return
        size, slots = self._shape(concurrency)
        context: BaseContext = multiprocessing.get_context("spawn")  # Windows: no fork server
        if "forkserver" in multiprocessing.get_all_start_methods():
            context = multiprocessing.get_context("forkserver")
            multiprocessing.set_forkserver_preload(["groundstate.executors._job"])
        room_for(slots)  # here, before the workers start: they inherit it, or it is refused
        workdirs = str(process_dir() / "workers")
        self._pool = _WorkerPool(context, size, slots, (workdirs, self.preload), self._lost)

    def room(self, concurrency: int) -> None:
        room_for(self._shape(concurrency)[1])

    def _shape(self, concurrency: int) -> tuple[int, int]:
        """Worker processes for *concurrency*, and attempts each runs at once."""
        size = self.workers or max(1, min(concurrency, os.cpu_count() or 1))
        return size, -(-max(concurrency, 1) // size)

    def _lost(
        self, job: AttemptJob, cause: str, started: float, overdue: bool, grading: bool
    ) -> AttemptOutput:
        return lost(job, self.suite, cause, started, overdue, grading)

    def _limit(self, job: AttemptJob) -> float:
        return math.inf if self.suite is None else hard_limit(job, self.suite, self.grace)

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
        return await self._pool.run(job, self._limit(job))


Lose = Callable[[AttemptJob, str, float, bool, bool], AttemptOutput]
"""The record of a job lost with its worker: (job, what became of the worker, when it was
handed over, whether it was past its hard limit, whether its grading had started)."""


@dataclass
class _Waiting:
    """A job handed to the pool, until its output comes back."""

    job: AttemptJob
    future: asyncio.Future[AttemptOutput]
    limit: float
    """Seconds it may run in a worker before it is killed with it."""
    payload: bytes = b""
    """The job as sent (:func:`~groundstate.executors._job.sendable`)."""
    alone: bool = False
    """Run it in a worker with no other attempt (its last worker died with several)."""
    worker: _Worker | None = None
    """The worker running it, once it has one."""
    started: float = 0.0
    """When it was handed to its worker (``time.monotonic()``)."""
    overdue: bool = False
    """Killed with its worker at its hard limit."""
    acked: bool = False
    """Its worker said it started it (a job sent to a worker that died before it got it
    never ran: no attempt to blame)."""
    deaths: int = 0
    """Workers that died with it without having said so (see :data:`UNACKED_DEATHS`)."""
    grading: bool = False
    """Its worker said its grading started: a death from then on is the grader's."""


MESSAGE_LIMIT = 1 << 32
"""Bytes above which a message a worker announces is taken for junk (a record, its
artifacts included, is far smaller)."""


class _Inbox:
    """This process's end of a worker's results pipe (see
    :class:`~groundstate.executors._job.Outbox`), read without blocking: a message cut off
    by the worker's death (a process it forked may keep the pipe open) never holds the
    reader."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        os.set_blocking(connection.fileno(), False)
        self._buffer = bytearray()
        self.open = True
        """Until the worker's end is closed (it and what it forked have exited)."""

    def read(self) -> list[Message]:
        """The whole messages the worker has written since the last read. Raises
        :class:`ExecutorError` when what it wrote is not a message."""
        while self.open:
            try:
                data = os.read(self.connection.fileno(), 1 << 20)
            except BlockingIOError:
                break
            except OSError:
                data = b""
            self._buffer += data
            self.open = bool(data)
        messages = []
        while len(self._buffer) >= FRAME.size:
            end = FRAME.size + FRAME.unpack_from(self._buffer)[0]
            if end > MESSAGE_LIMIT:  # waiting for the rest would hold the attempt
                raise ExecutorError(f"it announced a message of {end} bytes on its results pipe")
            if len(self._buffer) < end:
                break
            try:
                messages.append(_message(_unpickled(self._buffer[FRAME.size : end])))
            except Exception as exc:
                what = f"it wrote something other than a message on its results pipe ({exc})"
                raise ExecutorError(what) from None
            del self._buffer[:end]
        return messages

    def close(self) -> None:
        self.open = False
        self.connection.close()


_VALUES: dict[str, type | tuple[type, ...]] = {
    "ready": (int, type(None)),
    "started": type(None),
    "grading": type(None),
    "done": PreparedRun,
    "failed": str,
    "retiring": str,
    "refused": type(None),
}
"""Each kind of :data:`Message` and the type of its value (a done job's record unpickled)."""


class _MessageUnpickler(pickle.Unpickler):
    """An unpickler of what a worker writes on its results pipe, which finds no global but
    the one a :class:`PreparedRun` is rebuilt with: the pipe is the agent's to write too
    (it runs in the worker), and a plain ``pickle.loads`` of its bytes ran any function it
    named, with any arguments, here in the parent (``os.system``, or a rewrite of the
    store), out of the worker's isolation. Messages are otherwise tuples, strings, numbers,
    bytes and None, which need no global."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("groundstate.store", "_read_prepared"):
            return read_prepared
        raise pickle.UnpicklingError(f"a message names no global, not {module:.40}.{name:.40}")


def _unpickled(data: bytes | bytearray) -> object:
    return _MessageUnpickler(io.BytesIO(data)).load()


def _message(message: object) -> Message:
    """*message* checked to be a :data:`Message` (its record unpickled), not something else
    an agent wrote on its worker's pipe: anything else would break the pool's reader, and
    with it the whole batch. Raises ``ValueError``."""
    if not (isinstance(message, tuple) and len(message) == 3):
        raise ValueError("not a message")
    kind, key, value = message
    if kind == "done" and isinstance(value, bytes):
        value = _unpickled(value)
    if kind not in _VALUES or type(key) is not int or not isinstance(value, _VALUES[kind]):
        raise ValueError(f"not a message: {kind!r:.40} about {key!r:.40}")
    return kind, key, value


@dataclass
class _Worker:
    """One worker process, its own job queue and results pipe, and the jobs it runs."""

    process: BaseProcess
    jobs: Any
    inbox: _Inbox
    running: set[int] = field(default_factory=set)
    alone: bool = False
    """It runs a job that must run alone."""
    retiring: bool = False
    """It takes no more jobs (an attempt left something in it) and ends when idle."""
    ready: bool = False
    """It has started (loaded the suite) and takes jobs."""
    fault: str | None = None
    """Why the pool killed it (what it did to its results pipe), for its attempts' records."""


class _WorkerPool:
    """Worker processes, each fed its jobs by this process (so it knows which attempts each
    one runs); a reader thread settles each job's future from the workers' results pipes,
    replaces workers that die or retire, and kills those holding an attempt past its hard
    limit (see :class:`ProcessExecutor`)."""

    def __init__(
        self,
        context: BaseContext,
        size: int,
        slots: int,
        setup: tuple[str, SuiteKey | None],
        lose: Lose,
    ) -> None:
        """*setup*: each worker's work-folder root and suite to preload."""
        self._context, self._setup, self._slots, self._lose = context, setup, slots, lose
        self._waiting: dict[int, _Waiting] = {}
        self._queued: deque[int] = deque()
        self._keys = itertools.count()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._idle_deaths = 0
        self._failure: str | None = None
        self._workers = [self._spawn(n) for n in range(size)]
        start(threading.Thread(target=self._read, name="groundstate-pool-reader", daemon=True))

    def _spawn(self, n: int) -> _Worker:
        jobs: Any = self._context.Queue()
        reader, writer = self._context.Pipe(duplex=False)
        process: BaseProcess = self._context.Process(  # type: ignore[attr-defined]
            target=serve,
            args=(jobs, writer, *self._setup, self._slots),
            name=f"groundstate-worker-{n}",
        )
        _start(process)
        writer.close()  # the worker's now: its death (with what it forked) ends the pipe
        return _Worker(process, jobs, _Inbox(reader))

    @property
    def pids(self) -> list[int]:
        return [w.process.pid for w in self._workers if w.process.pid is not None]

    async def run(self, job: AttemptJob, limit: float) -> AttemptOutput:
        future: asyncio.Future[AttemptOutput] = asyncio.get_running_loop().create_future()
        payload = sendable(job)  # here: a queue's feeder thread dropped what it could not pickle
        key = next(self._keys)
        with self._lock:
            if self._failure is not None:
                raise ExecutorError(self._failure)
            self._waiting[key] = _Waiting(job, future, limit, payload=payload)
            self._queued.append(key)
            self._dispatch()
        try:
            return await future
        finally:
            with self._lock:
                self._waiting.pop(key, None)

    def _dispatch(self) -> None:
        """Hand queued jobs to workers with a free slot, the least busy first (the caller
        holds the lock). A job to run alone waits for an idle worker."""
        while self._queued:
            waiting = self._waiting.get(self._queued[0])
            if waiting is None or waiting.future.done():
                self._queued.popleft()
                continue
            open_ = [
                w
                for w in self._workers
                if w.ready and not w.retiring and not w.alone and _alive(w.process)
            ]
            free = [w for w in open_ if len(w.running) < (1 if waiting.alone else self._slots)]
            if waiting.alone:
                free = [w for w in free if not w.running]
            if not free:
                return
            worker = min(free, key=lambda w: len(w.running))
            key = self._queued.popleft()
            worker.running.add(key)
            worker.alone = waiting.alone
            waiting.worker, waiting.started = worker, time.monotonic()
            worker.jobs.put((key, waiting.payload))

    def close(self) -> None:
        with self._lock:  # a worker the reader is replacing is in the list by now, or never
            self._closed.set()
            workers = list(self._workers)
        for worker in workers:
            worker.jobs.cancel_join_thread()  # exiting must not wait to flush what nobody reads
        for worker in workers:
            _kill(worker.process)  # with what its attempts started (its process group)
        for worker in workers:
            _ended(worker.process, UNWIND_TIMEOUT)
            worker.jobs.close()
        with self._lock:  # not while the reader reads them
            for worker in workers:
                worker.inbox.close()

    def _read(self) -> None:
        try:
            self._serve_results()
        except BaseException as exc:  # a bug here must not leave the batch waiting for ever
            with self._lock:
                self._broken(f"the pool's reader failed: {type(exc).__name__}: {exc}")
            raise

    def _serve_results(self) -> None:
        looked = time.monotonic()
        while not self._closed.is_set():
            with self._lock:
                inboxes = {w.inbox.connection: w for w in self._workers if w.inbox.open}
            try:
                ready = wait(list(inboxes), timeout=DEATH_CHECK)
            except (OSError, ValueError):  # closed under us: the pool is stopping
                return
            for connection in ready:
                self._receive(inboxes[connection])  # type: ignore[index]
            if time.monotonic() - looked >= DEATH_CHECK:  # also while results keep coming
                looked = time.monotonic()
                self._check_workers()

    def _receive(self, worker: _Worker) -> None:
        """Settle what *worker* has written; a worker writing something else (its agent
        wrote to the pipe) is killed, and its attempts end as they do when it dies."""
        with self._lock:  # not while the pool closes the pipes
            if self._closed.is_set():
                return
            try:
                messages = worker.inbox.read()
            except ExecutorError as exc:
                self._fail(worker, str(exc))
                return
            closed = not worker.inbox.open
        for message in messages:
            self._settle(worker, message)
        # a dying worker's pipe ends a moment before it is dead; one alive after closed it
        # itself: it cannot report
        if closed and _ended(worker.process, PIPE_CLOSED_WAIT) is None:
            with self._lock:
                self._fail(worker, PIPE_CLOSED)

    def _fail(self, worker: _Worker, fault: str) -> None:
        """Kill *worker*, which broke its results pipe (*fault*): its attempts end as they do
        when it dies, with *fault* as the cause (the caller holds the lock)."""
        worker.fault = worker.fault or fault
        worker.inbox.close()
        _kill(worker.process)

    def _settle(self, sender: _Worker, message: Message) -> None:
        kind, key, value = message
        with self._lock:
            if kind == "ready":
                sender.ready = True
                self._dispatch()
                return
            if sender.fault is not None:  # what followed its fault is not believed
                return
            if key not in sender.running:  # a job it is not running: forged by an agent
                self._fail(sender, f"it wrote a {kind!r} message about a job it did not run")
                return
            waiting = self._waiting.get(key)
            if kind == "retiring":
                sender.retiring = True
                return
            if kind == "started":
                if waiting is not None:
                    waiting.acked = True
                return
            if kind == "grading":
                if waiting is not None:
                    waiting.grading = waiting.acked
                return
            sender.running.discard(key)
            sender.alone = sender.alone and bool(sender.running)
            if kind == "refused":  # it reached a retiring worker: another one runs it
                self._queued.appendleft(key)
            elif waiting is not None:
                self._idle_deaths = 0
                if kind == "done":
                    _deliver(waiting.future, prepared(value))
                else:
                    _deliver(waiting.future, ExecutorError(value))
            self._dispatch()

    def _check_workers(self) -> None:
        """Kill the workers holding an attempt past its hard limit, then replace the dead."""
        now = time.monotonic()
        with self._lock:
            for key, waiting in self._waiting.items():
                worker = waiting.worker
                running = worker is not None and key in worker.running and not waiting.overdue
                if running and now - waiting.started > waiting.limit:
                    assert worker is not None
                    waiting.overdue = _kill(worker.process)
        dead = [w for w in self._workers if not _alive(w.process)]
        if not dead or self._closed.is_set() or self._failure is not None:
            return
        for worker in dead:  # what a dead worker sent before it died is not lost with it
            self._receive(worker)
        for worker in dead:
            self._replace(worker)

    def _replace(self, worker: _Worker) -> None:
        """Put a new worker in *worker*'s place and settle the jobs it died with: the one
        it ran alone is lost with it (a crash, or the time limit when it was killed for
        it); several are run again, each alone."""
        process = worker.process
        if process.pid is not None:  # what it forked (killed from outside, it could not)
            with suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
        cause = _death(process)
        if worker.fault is not None:
            cause = f"the worker process was killed: {worker.fault}"
        with self._lock:
            worker.inbox.close()
            if self._closed.is_set():  # seen open before: a worker started now would be left
                return  # running (the close has killed those it found)
            index = self._workers.index(worker)
            keys = sorted(worker.running)
            if not keys and not worker.retiring:
                self._idle_deaths += 1
            if self._idle_deaths > 2 * len(self._workers):
                self._broken(f"worker processes keep dying with no attempt running ({cause})")
                return
            self._workers[index] = self._spawn(index)
            worker.jobs.cancel_join_thread()
            worker.jobs.close()
            outs = [(k, self._waiting.get(k)) for k in keys]
            sole = len(keys) == 1 and not worker.retiring
            lost = []
            for key, waiting in outs:
                if waiting is None:
                    continue
                if (waiting.acked and (sole or waiting.alone)) or waiting.deaths >= UNACKED_DEATHS:
                    lost.append((waiting, cause))
                    continue
                waiting.deaths += not waiting.acked
                waiting.alone, waiting.worker, waiting.overdue = True, None, False
                waiting.acked = waiting.grading = False
                self._queued.appendleft(key)
            self._dispatch()
        for waiting, why in lost:  # outside the lock: building a record takes a while
            try:
                output = self._lose(
                    waiting.job, why, waiting.started, waiting.overdue, waiting.grading
                )
                _deliver(waiting.future, output)
            except ExecutorError as exc:
                _deliver(waiting.future, exc)

    def _broken(self, cause: str) -> None:
        """The pool cannot go on (*cause*): workers keep dying with no attempt running (the
        machine, not an agent), or its reader failed (the caller holds the lock). Every
        job still out, and every later one, fails: the batch stops."""
        self._failure = f"{cause}; the stored attempts are kept: resume the batch"
        for waiting in self._waiting.values():
            _deliver(waiting.future, ExecutorError(self._failure))


_STATUS = threading.Lock()
"""Held while a worker's exit status is read. A fork-server child's status comes once, on a
pipe: of two threads asking at once (the pool's reader and the event loop), the second read
the pipe's end and took 255 ("the fork server was killed") for the worker's own exit code,
and an agent's ``os._exit(3)`` was recorded as "exited with code 255"."""


FORK_SERVER_PAUSES = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)
"""Seconds to wait before each new try at starting a worker the fork server refused."""


def _start(process: BaseProcess) -> None:
    """Start *process*, trying again while the fork server refuses: an agent that writes junk
    on every pipe its worker holds (a fork server's child holds the server's) ends the server,
    and until the standard library sees it ended (and starts another) its socket refuses.
    Starting one reads the exit status of every ended child (see ``_STATUS``)."""
    for pause in (*FORK_SERVER_PAUSES, None):
        try:
            with _STATUS:
                process.start()
            return
        except ConnectionRefusedError:
            if pause is None:
                raise
            time.sleep(pause)


def _alive(process: BaseProcess) -> bool:
    with _STATUS:
        return process.is_alive()


def _ended(process: BaseProcess, timeout: float) -> int | None:
    """*process*'s exit code once it has ended, waiting up to *timeout* seconds; None while
    it runs."""
    wait([process.sentinel], timeout)
    with _STATUS:
        return process.exitcode


def _death(process: BaseProcess) -> str:
    """What became of a dead worker, in words."""
    code = _ended(process, UNWIND_TIMEOUT)
    if code == PIPE_LOST:
        return f"the worker process exited: {PIPE_CLOSED}"
    if code is not None and code < 0:
        with suppress(ValueError):
            return f"the worker process was killed by {signal.Signals(-code).name}"
    return f"the worker process exited with code {code}"


def _kill(process: BaseProcess) -> bool:
    """Kill *process* and the process group it leads (what its attempts started); whether
    it was still alive."""
    pid = process.pid
    if pid is None or not _alive(process):
        return False
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:  # not (yet) leading a group of its own
        with suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return True


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
