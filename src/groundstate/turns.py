"""Turns at the harness's own work: at most :data:`HARNESS_TURNS` attempts of one process
build, reset, hash, diff, grade and record at once; the others wait for a turn.

Why: in one interpreter such work only takes turns on the GIL anyway, and taking them there
is costly. Each SQLite call releases the GIL; with hundreds of attempt threads at work, another
thread always takes it, and the caller waits to get it back: a context switch per call. At 256
concurrent attempts that put the kernel's share of the CPU at 23-44% and the voluntary context
switches at 400-2,900 per attempt (40-70 one at a time), and the CPU per attempt at two to
three times its cost alone. Waiting here is one switch per turn instead of one per SQLite call.

What is not in turns: the agent (its own thread; an agent that blocks or spins holds no
turn), the simulated user (it may wait on a model), checks that wait on something by nature
(model judges, test runs), and a tool whose calls outlasted the lease several times in a row
in this process (it waits on a server or a command; see ``episode.WAITING_AFTER``). The
agent's other tool calls take a turn.

A turn held longer than :data:`TURN_LEASE` (an environment waiting on its server, a check
waiting on a service) is forfeited: the next waiter goes ahead beside it, so nothing that
waits can hold up the other attempts for more than a lease. A waiter's lease runs from when
it runs again with its turn, not from when the turn was handed to it: on a busy machine the
wake-up itself can take a while, and is not the holder's doing. The time an attempt waits for a
turn is queueing, not its own work: the episode leaves it out of the recorded latency.
"""

from __future__ import annotations

import os
import threading
from _thread import allocate_lock as _allocate_lock
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

from groundstate.alarms import CLOCK
from groundstate.ourthreads import start

HARNESS_TURNS = 2
"""Attempts of one process doing the harness's work at once (each pool worker has its own).
Two on the 2-core machine measured: while one holder waits in SQLite (the GIL released) the
other runs Python; one slot left the core idle whenever its holder waited for the GIL."""

TURN_LEASE = 0.1
"""Seconds after which a turn still held is forfeited: the harness's work in one turn takes
a few milliseconds; a turn this long is waiting on something, not using the CPU."""

WATCHER_IDLE = 10.0
"""Seconds the lease watcher of a :class:`Turns` stays without waiters before it leaves."""


class Turns:
    """A semaphore whose permits are forfeited when held past a lease.

    Waiters are woken in the order they asked, each on a lock of its own: a turn given back
    wakes the first waiter (one wake-up per turn, none for the others). A thread that asks
    while a slot is free takes it at once, even if a woken waiter is on its way to it; that
    waiter waits again, first in line (handing the turn to a thread still asleep would leave
    the slot idle until it woke). The waiters do not time their waits: one watcher thread,
    alive while there are waiters (and a while after), forfeits the oldest turn when its
    lease runs out, looking every half lease while nobody waits. (When every waiter timed
    its wait to the lease, hundreds of attempts waiting for two turns woke about ten times a
    second each to find the turn still held: at 256 concurrent attempts, some 80 wake-ups per
    attempt, each a context switch or three.) A forfeited turn's holder carries on; giving
    it back later changes nothing.
    """

    def __init__(self, slots: int = HARNESS_TURNS, lease: float = TURN_LEASE) -> None:
        self._slots, self._lease = slots, lease
        self._lock = threading.Lock()
        self._held: dict[object, float] = {}
        """Turns held, by token, with when each was taken (oldest first)."""
        self._waiting: deque[Waiter] = deque()
        """Who waits for a turn, first first (a woken waiter has left it)."""
        self._watch = threading.Condition(self._lock)
        """What the watcher sleeps on (under the lock), between its rounds."""
        self._watcher: threading.Thread | None = None
        self.forfeited = 0
        """How many turns were forfeited so far (for tests and the bench)."""

    def take(self) -> object:
        """Wait for a turn; its token (to :meth:`give_back`)."""
        with self._lock:
            if len(self._held) < self._slots:
                return self._grant()
            waiter = Waiter()
            self._waiting.append(waiter)
            self._watch_lease()
        while True:
            try:
                waiter.wait()
            except BaseException:  # interrupted (Ctrl-C in the main thread): no turn kept
                with self._lock:
                    if waiter in self._waiting:
                        self._waiting.remove(waiter)
                    else:  # woken for a free slot: the next waiter gets the wake-up
                        self._wake_first()
                raise
            with self._lock:
                if len(self._held) < self._slots:
                    return self._grant()  # the lease runs from now, as it runs
                self._waiting.appendleft(waiter)  # a running thread took it first

    def give_back(self, token: object) -> bool:
        """End the turn *token* names; False when it had been forfeited."""
        with self._lock:
            if self._held.pop(token, None) is None:
                return False
            self._wake_first()
            return True

    @contextmanager
    def held(self) -> Iterator[Turn]:
        """A turn for the ``with`` block: the :class:`Turn` says how long it took to get
        and can be given back for a while (:meth:`Turn.paused`)."""
        turn = Turn(self)
        try:
            yield turn
        finally:
            turn.end()

    def _grant(self) -> object:
        """A new turn (the caller holds the lock and has checked that a slot is free)."""
        token = object()
        self._held[token] = CLOCK()
        return token

    def _wake_first(self) -> None:
        """A slot was freed: wake the first waiter to take it (the caller holds the lock)."""
        if self._waiting and len(self._held) < self._slots:
            self._waiting.popleft().wake()

    def _watch_lease(self) -> None:
        """Make sure the watcher runs (the caller holds the lock and has just queued). It is
        not woken: with tens of attempts, a queue forms and empties hundreds of times a
        second, and a wake-up each time cost more than the watcher's own rounds."""
        if self._watcher is None:
            self._watcher = start(
                threading.Thread(
                    target=self._watch_leases, name="groundstate-turn-lease", daemon=True
                )
            )

    def _watch_leases(self) -> None:
        """The watcher: while anyone waits, forfeit the oldest turn when its lease runs out;
        with nobody waiting, look again every half lease. Leaves after :data:`WATCHER_IDLE`
        seconds without waiters."""
        idle_since = CLOCK()
        with self._lock:
            while True:
                if not self._waiting:
                    if CLOCK() - idle_since >= WATCHER_IDLE:
                        self._watcher = None
                        return
                    self._watch.wait(self._lease / 2)
                    continue
                idle_since = CLOCK()
                if len(self._held) < self._slots:  # a woken waiter is on its way to it
                    self._watch.wait(self._lease / 2)
                    continue
                since = next(iter(self._held.values()))
                left = since + self._lease - CLOCK()
                if left > 0:
                    self._watch.wait(left)
                    continue
                del self._held[next(iter(self._held))]
                self.forfeited += 1
                self._wake_first()


class Waiter:
    """One thread waiting for a turn, on a lock of its own (released to wake it)."""

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = _allocate_lock()  # as imported: ``threading.Lock`` may be rebound since
        self._lock.acquire()

    def wait(self) -> None:
        """Until woken; then held again, for the next wait."""
        self._lock.acquire()

    def wake(self) -> None:
        self._lock.release()


class Turn:
    """One holder's turn, taken at construction."""

    def __init__(self, turns: Turns) -> None:
        self._turns = turns
        self.waited = 0.0
        """Seconds spent waiting for this turn so far (taking it, and again after pauses)."""
        self.forfeited = False
        """Whether this turn was held past the lease (by what the holder waited on)."""
        self._token: object | None = None
        self._take()

    @contextmanager
    def paused(self, pause: bool = True) -> Iterator[None]:
        """Give the turn back for the ``with`` block (waiting on the agent, on a model) and
        wait for it again after; with *pause* False, keep it."""
        if not pause or self._token is None:
            yield
            return
        self.end()
        try:
            yield
        finally:
            self._take()

    def end(self) -> None:
        token, self._token = self._token, None
        if token is not None and not self._turns.give_back(token):
            self.forfeited = True

    def _take(self) -> None:
        started = CLOCK()
        self._token = self._turns.take()
        self.waited += CLOCK() - started


HARNESS = Turns()
"""This process's turns (a pool worker, started afresh, has its own)."""


def _afresh() -> None:
    """In a forked child: turns held by the parent's threads do not exist there."""
    HARNESS.__init__()  # type: ignore[misc]


os.register_at_fork(after_in_child=_afresh)
