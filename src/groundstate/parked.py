"""Idle worker threads kept for their next job: the registry both kinds of reused thread use
(:mod:`groundstate.deadline`'s for time-limited calls, :mod:`groundstate.loopthreads`'s for
agents and attempts).

A worker parks itself when its job has returned and is taken by the next submitter; a worker
still running a job the caller gave up on is simply not here. A forked child (a pool worker
process) starts with none: the parent's threads do not exist there.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Generic, TypeVar

W = TypeVar("W")


class Parked(Generic[W]):
    """The idle workers of one kind, most recently parked first; at most *limit* of them."""

    def __init__(self, limit: int | None = None) -> None:
        self._limit = limit
        self._idle: list[W] = []
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self._forget)

    def take(self) -> W | None:
        """An idle worker, now no longer idle; None when there is none."""
        with self._lock:
            return self._idle.pop() if self._idle else None

    def park(self, worker: W) -> bool:
        """Offer *worker* for the next job; False when *limit* workers are idle already."""
        with self._lock:
            if self._limit is not None and len(self._idle) >= self._limit:
                return False
            self._idle.append(worker)
            return True

    def unpark(self, worker: W) -> bool:
        """Take *worker* off the idle list; False when a submitter took it first."""
        with self._lock:
            if worker in self._idle:
                self._idle.remove(worker)
                return True
            return False

    def __len__(self) -> int:
        with self._lock:
            return len(self._idle)

    def __iter__(self) -> Iterator[W]:
        with self._lock:
            return iter(list(self._idle))

    def _forget(self) -> None:
        self._lock = threading.Lock()
        self._idle.clear()
