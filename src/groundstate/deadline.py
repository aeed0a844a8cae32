"""Hard time limits for code groundstate does not control (agents, Python checks).

Python cannot stop a thread, and code that blocks (``time.sleep``, a synchronous HTTP client)
or spins never gives an ``asyncio`` timeout a chance to fire. So such code runs in a daemon
thread of its own, and the caller stops *waiting* for it at the deadline: the attempt goes on
(and ends) without it. A thread left running cannot touch the attempt any more (the session
refuses its calls) and does not keep the process alive at exit. CPU time it still burns is
shared with the rest of the process until it returns; code that must be killed outright
belongs in a separate process.

The threads are kept for the next call: starting one costs more than most checks take. A
thread whose call returned (in time or not) waits for the next call; one still stuck in an
abandoned call is simply not available, and a new thread is started when none is idle. Calls
that run one after another anyway (an attempt's checks) are handed to a thread together,
each still under its own limit (:func:`call_each_with_time_limit`), also when separate parts
of the caller add them (:class:`PendingCalls`).
"""

from __future__ import annotations

import math
import queue
import threading
from collections.abc import Callable, Sequence
from contextvars import copy_context
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Generic, TypeVar

from groundstate.alarms import CLOCK
from groundstate.ourthreads import start
from groundstate.parked import Parked

T = TypeVar("T")


class DeadlineExceeded(TimeoutError):
    """The code did not finish within its time limit."""


class CalledCodeExited(RuntimeError):
    """The code raised ``SystemExit``, ``KeyboardInterrupt`` or another ``BaseException``."""


class Returned(Generic[T]):
    """What one call gave: its value, or the error it raised (or :class:`DeadlineExceeded`)."""

    def __init__(self) -> None:
        self.value: T | None = None
        self.error: BaseException | None = None

    def result(self) -> T:
        """The value, or raise the error here, in the caller's thread."""
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]


@dataclass(frozen=True)
class TimedCall(Generic[T]):
    """One call of code groundstate does not control, with its own time limit."""

    fn: Callable[[], T]
    limit: float
    """Seconds from the moment the call starts."""
    name: str = "groundstate-call"
    """The thread's name while it runs the call."""
    abandoned: Callable[[], None] | None = None
    """Run in the caller's thread as soon as the call is given up at its limit, before the
    next call starts (to stop what the abandoned call is still doing). An error it raises
    becomes the call's error."""


IDLE_THREADS = 8
"""Idle threads kept for later calls, at most; a thread finishing a call past this exits."""

IDLE_NAME = "groundstate-idle"
"""An idle thread's name; while it runs a call, it bears the call's *name*."""


_Job = tuple[Callable[[], None], threading.Event]
"""What to run (catching everything itself, naming the thread for each call) and the event
signalling that it returned."""


class _Worker:
    """A daemon thread running the jobs handed to it, one at a time."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.thread = start(threading.Thread(target=self._serve, name=IDLE_NAME, daemon=True))

    def _serve(self) -> None:
        while True:
            job, done = self.jobs.get()
            job()  # catches everything itself
            self.thread.name = IDLE_NAME
            # Parked before *done*: the caller's next call finds this thread idle.
            parked = _IDLE.park(self)
            done.set()
            if not parked:
                return


_IDLE: Parked[_Worker] = Parked(limit=IDLE_THREADS)


def _take() -> _Worker:
    while (worker := _IDLE.take()) is not None:
        if worker.thread.is_alive():
            return worker
    return _Worker()


def call_with_time_limit(fn: Callable[[], T], limit: float, name: str = "groundstate-call") -> T:
    """Return ``fn()``, or raise :class:`DeadlineExceeded` after *limit* seconds.

    Exceptions raised by *fn* are re-raised here, in the caller's thread. ``SystemExit``,
    ``KeyboardInterrupt`` and other non-``Exception`` errors raised by *fn* are *fn*'s faults,
    not requests to stop this process: they come back as :class:`CalledCodeExited`.
    """
    return call_each_with_time_limit([TimedCall(fn, limit, name)])[0].result()


def call_each_with_time_limit(calls: Sequence[TimedCall[T]]) -> list[Returned[T]]:
    """Run the calls in turn, each in a thread apart under its own limit; what each gave.

    The calls go to one thread together: handing each to a thread and waiting for it costs
    more than most checks take. Each call's clock starts when the call before it returns (the
    first's when they are handed over), and the caller wakes only at a limit or at the end. A
    call still running at its limit gives :class:`DeadlineExceeded`: its thread is abandoned
    with it (it runs none of the calls after it), its ``abandoned`` hook runs, and the calls
    after it go to another thread. Errors come back as in :func:`call_with_time_limit`; each
    call runs in its own copy of the caller's context.
    """
    returned: list[Returned[T]] = [Returned() for _ in calls]
    _run_each(calls, returned)
    return returned


def _run_each(calls: Sequence[TimedCall[T]], returned: Sequence[Returned[T]]) -> None:
    start = 0
    while start < len(calls):
        start = _Batch(calls[start:], returned[start:]).run() + start


class PendingCalls:
    """Time-limited calls added now and run when the first of their results is read, all
    the calls added by then together (:func:`call_each_with_time_limit`, in the order added):
    one hand-off to a thread for the calls that separate parts of one caller add (an
    attempt's outcome assertions and its Python constraints), instead of one each.

    For one caller thread: a grading pass's, which adds its calls and reads their results.
    """

    def __init__(self) -> None:
        self._calls: list[TimedCall[Any]] = []
        self._returned: list[_Pending[Any]] = []

    def add(self, calls: Sequence[TimedCall[T]]) -> list[Returned[T]]:
        """What each of *calls* will give; reading any of them runs every call not run yet."""
        pending: list[_Pending[T]] = [_Pending(self) for _ in calls]
        self._calls += calls
        self._returned += pending
        return list(pending)

    def run(self) -> None:
        """Run the calls added since the last run, each under its own limit."""
        calls, returned = self._calls, self._returned
        self._calls, self._returned = [], []
        for each in returned:
            each.pending = None
        _run_each(calls, returned)


class _Pending(Returned[T]):
    """A result of :class:`PendingCalls`: read before its call ran, it runs the calls
    pending."""

    def __init__(self, pending: PendingCalls) -> None:
        super().__init__()
        self.pending: PendingCalls | None = pending

    def result(self) -> T:
        if self.pending is not None:
            self.pending.run()
        return super().result()


class _Batch(Generic[T]):
    """Calls handed to one thread together, and how far that thread has got."""

    def __init__(self, calls: Sequence[TimedCall[T]], returned: Sequence[Returned[T]]) -> None:
        self.calls = calls
        self.returned = returned
        self.contexts = [copy_context() for _ in calls]
        self.lock = threading.Lock()
        self.current = 0
        """The call running (or about to); len(calls) once all returned."""
        self.started = CLOCK()
        """When the current call's clock started."""
        self.given_up = False
        from_each = accumulate(reversed([c.limit for c in calls]), min, initial=math.inf)
        self.shortest_after = list(from_each)[::-1][1:]
        """The shortest limit of the calls after each: how long the caller may sleep at most
        before one of them could be due."""

    def run(self) -> int:
        """Wait for the calls; return how many are settled (all, or up to an abandoned one)."""
        done = threading.Event()
        _take().jobs.put((self._serve, done))
        while True:
            with self.lock:
                if self.current == len(self.calls):
                    return self.current
                index = self.current
                left = self.started + self.calls[index].limit - CLOCK()
                self.given_up = left <= 0
            if self.given_up:
                return self._abandon(index)
            # A later call with a shorter limit may start meanwhile: wake in time for it too.
            done.wait(min(left, self.shortest_after[index]))

    def _abandon(self, index: int) -> int:
        call = self.calls[index]
        timed_out = DeadlineExceeded(f"did not finish within {call.limit:g}s")
        self.returned[index].error = timed_out
        try:
            if call.abandoned is not None:
                call.abandoned()
        except Exception as exc:  # this call's failure, not the other calls'
            exc.__context__ = timed_out
            self.returned[index].error = exc
        return index + 1

    def _serve(self) -> None:
        """In the worker: each call in turn, until the caller gives up on one."""
        thread = threading.current_thread()
        for index, call in enumerate(self.calls):
            thread.name = call.name
            outcome: Returned[T] = Returned()
            self.contexts[index].run(_call, call.fn, outcome)
            with self.lock:
                if self.given_up:  # too late: the caller has recorded the timeout
                    return
                settled = self.returned[index]  # the caller's: it reads it once current moves
                settled.value, settled.error = outcome.value, outcome.error
                self.current = index + 1
                self.started = CLOCK()


def _call(fn: Callable[[], T], outcome: Returned[T]) -> None:
    try:
        outcome.value = fn()
    except Exception as exc:
        outcome.error = exc
    except BaseException as exc:  # handed to the caller as an ordinary error
        outcome.error = CalledCodeExited(f"raised {type(exc).__name__}: {exc}")
        outcome.error.__cause__ = exc
