"""Alarms on a clock the code under evaluation cannot stop: the attempt's hard time limit.

An ``asyncio`` timeout reads the loop's clock, which calls ``time.monotonic`` through the
``time`` module at every turn of the loop. An in-process agent that replaces it (a
``freezegun``-style clock frozen for its own tests, or on purpose) would freeze every loop of
the process: the episode's wait for the agent would never time out, and the attempt, and the
batch, would outlive the limit. The alarms here keep the clock as it was when groundstate was
imported, and one daemon thread rings them; its waits are the C library's timed lock waits,
which no Python-level patch reaches. The thread leaves after :data:`IDLE_SECONDS` without
alarms, and a forked child starts without it.
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable
from contextlib import suppress

from groundstate.ourthreads import start

CLOCK = time.monotonic
"""The monotonic clock, as imported: ``time.monotonic`` replaced later does not change it."""

IDLE_SECONDS = 10.0
"""The ringing thread waits this long without alarms, then exits."""


class Alarm:
    """One alarm; :meth:`cancel` before it rings and it never does."""

    __slots__ = ("cancelled", "ring")

    def __init__(self, ring: Callable[[], None]) -> None:
        self.ring = ring
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class _Alarms:
    def __init__(self) -> None:
        self._due: list[tuple[float, int, Alarm]] = []
        self._order = itertools.count()
        self._wake = threading.Condition(threading.Lock())
        self._thread: threading.Thread | None = None

    def set(self, seconds: float, ring: Callable[[], None]) -> Alarm:
        """Call *ring* (in the alarms' thread: it must be quick and not raise) *seconds* from
        now."""
        alarm = Alarm(ring)
        with self._wake:
            heapq.heappush(self._due, (CLOCK() + seconds, next(self._order), alarm))
            if self._thread is None:
                self._thread = start(
                    threading.Thread(target=self._serve, name="groundstate-alarms", daemon=True)
                )
            elif self._due[0][2] is alarm:  # earlier than the thread waits for: wake it
                self._wake.notify()
        return alarm

    def _serve(self) -> None:
        while True:
            with self._wake:
                due = self._pop_due()
                if not due and not self._due:
                    self._wake.wait(IDLE_SECONDS)
                    if not self._due:
                        self._thread = None
                        return
                elif not due:
                    self._wake.wait(self._due[0][0] - CLOCK())
            for alarm in due:
                if not alarm.cancelled:
                    with suppress(Exception):  # one bad alarm must not silence the others
                        alarm.ring()

    def _pop_due(self) -> list[Alarm]:
        now, due = CLOCK(), []
        while self._due and (self._due[0][0] <= now or self._due[0][2].cancelled):
            due.append(heapq.heappop(self._due)[2])
        return due

    def _forget(self) -> None:
        self.__init__()  # type: ignore[misc]


ALARMS = _Alarms()
"""This process's alarms."""

os.register_at_fork(after_in_child=ALARMS._forget)
