"""SIGINT and SIGTERM while a batch runs, as data: what the signal handlers of ``run`` set and
what a batch raises when they stop it. Light (no asyncio, no pydantic), so that ``run`` takes
its signals before it imports the library: a Ctrl-C while it loads is an interruption (exit
130), not a traceback or click's "Aborted!" (exit 1)."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

SHUT_OUT = (signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGUSR1, signal.SIGUSR2)
"""Signals whose default action ends a process and that an agent can aim at the process it
runs in from any thread (``signal.alarm``, ``setitimer``, ``os.kill(os.getpid(), ...)``):
ignored in a pool worker, and in ``run`` while it runs a batch in-process, so that one
attempt cannot end the process later, during other attempts."""


_ctrl_c = {"watched": False, "seen": False}
"""Whether :func:`watch_ctrl_c` is in force, and whether a SIGINT arrived under it."""


def watch_ctrl_c() -> None:
    """Note each SIGINT before raising ``KeyboardInterrupt`` as Python does, so that one that
    user code raised (``raise KeyboardInterrupt`` in a tools, checks or agent module) can be
    told from the user's Ctrl-C (:func:`from_ctrl_c`). Set by the ``groundstate`` command as
    the process starts (in the main thread: only there can a handler be set); ``run`` replaces
    the handler with its own while a batch runs, which raises :class:`Interrupted` instead."""

    def handler(signum: int, frame: Any) -> None:
        _ctrl_c["seen"] = True
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread (the command called from a thread): no watch
        return
    _ctrl_c["watched"] = True


def from_ctrl_c() -> bool:
    """Whether a ``KeyboardInterrupt`` caught now may be the user's Ctrl-C: one arrived, or
    nobody watches (a library caller's process: taken for one, as Python does)."""
    return _ctrl_c["seen"] or not _ctrl_c["watched"]


class Interrupted(BaseException):
    """The process got SIGINT or SIGTERM while running a batch.

    A ``BaseException``, like ``KeyboardInterrupt``, so that code catching ``Exception``
    (graders, tools, environments) cannot swallow it and record the interruption as a fault.
    """

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)

    @property
    def exit_code(self) -> int:
        """128 + the signal number, as a shell reports it: 130 for SIGINT, 143 for SIGTERM."""
        return 128 + self.signum


@dataclass
class InterruptFlag:
    """Set by a signal handler; checked between the steps of a batch, so an interruption
    that some code swallowed still stops the batch before another try is stored."""

    signum: int | None = None
    task: asyncio.Task[Any] | None = None
    """The task running the batch, while it runs: a signal cancels it (see :meth:`cancel`)."""

    def check(self) -> None:
        if self.signum is not None:
            raise Interrupted(self.signum)

    def cancel(self) -> bool:
        """Cancel the running batch from a signal handler in its loop's thread, as
        ``asyncio.run`` does for Ctrl-C: the batch then unwinds at its next ``await``
        instead of wherever the signal landed (inside the loop's own bookkeeping, say).
        False when no batch is running (the handler raises :class:`Interrupted` instead)."""
        task = self.task
        if task is None or task.done():
            return False
        task.cancel()
        task.get_loop().call_soon_threadsafe(lambda: None)  # wake a loop blocked in select
        return True
