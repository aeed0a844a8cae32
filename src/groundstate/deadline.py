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
abandoned call is simply not available, and a new thread is started when none is idle.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from groundstate.capture import in_context

T = TypeVar("T")


class DeadlineExceeded(TimeoutError):
    """The code did not finish within its time limit."""


class CalledCodeExited(RuntimeError):
    """The code raised ``SystemExit``, ``KeyboardInterrupt`` or another ``BaseException``."""


class _Outcome(Generic[T]):
    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: T | None = None
        self.error: BaseException | None = None


IDLE_THREADS = 8
"""Idle threads kept for later calls, at most; a thread finishing a call past this exits."""

IDLE_NAME = "groundstate-idle"
"""An idle thread's name; while it runs a call, it bears the call's *name*."""


_Job = tuple[Callable[[], None], str, threading.Event]
"""What to run (catching everything itself), the thread's name meanwhile, and the event
signalling that it returned."""


class _Worker:
    """A daemon thread running the calls handed to it, one at a time."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name=IDLE_NAME, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            job, name, done = self.jobs.get()
            self.thread.name = name
            job()  # catches everything itself
            self.thread.name = IDLE_NAME
            parked = _park(self)  # before *done*: the caller's next call finds this thread idle
            done.set()
            if not parked:
                return


_IDLE: list[_Worker] = []
_IDLE_LOCK = threading.Lock()


def _take() -> _Worker:
    with _IDLE_LOCK:
        while _IDLE:
            worker = _IDLE.pop()
            if worker.thread.is_alive():
                return worker
    return _Worker()


def _forget_idle() -> None:
    """In a forked child: the parent's threads do not exist there (a pool worker process)."""
    global _IDLE_LOCK
    _IDLE_LOCK = threading.Lock()
    _IDLE.clear()


os.register_at_fork(after_in_child=_forget_idle)


def _park(worker: _Worker) -> bool:
    """Offer *worker* for the next call; False when enough threads are idle already."""
    with _IDLE_LOCK:
        if len(_IDLE) >= IDLE_THREADS:
            return False
        _IDLE.append(worker)
        return True


def call_with_time_limit(fn: Callable[[], T], limit: float, name: str = "groundstate-call") -> T:
    """Return ``fn()``, or raise :class:`DeadlineExceeded` after *limit* seconds.

    Exceptions raised by *fn* are re-raised here, in the caller's thread. ``SystemExit``,
    ``KeyboardInterrupt`` and other non-``Exception`` errors raised by *fn* are *fn*'s faults,
    not requests to stop this process: they come back as :class:`CalledCodeExited`.
    """
    outcome: _Outcome[T] = _Outcome()

    def target() -> None:
        try:
            outcome.value = fn()
        except Exception as exc:
            outcome.error = exc
        except BaseException as exc:  # handed to the caller as an ordinary error
            outcome.error = CalledCodeExited(f"raised {type(exc).__name__}: {exc}")
            outcome.error.__cause__ = exc

    _take().jobs.put((in_context(target), name, outcome.done))
    if not outcome.done.wait(limit):
        raise DeadlineExceeded(f"did not finish within {limit:g}s")
    if outcome.error is not None:
        raise outcome.error
    return outcome.value  # type: ignore[return-value]
