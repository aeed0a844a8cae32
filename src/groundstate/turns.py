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
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

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

    Turns are given strictly in the order they are asked for: a turn given back goes to the
    first waiter, whose own lock is released (one wake-up per turn, none for the others). The
    waiters do not time their waits; one watcher thread, alive while there are waiters, wakes
    when the oldest holder's lease runs out and forfeits that turn to the first waiter. (When
    every waiter timed its wait to the lease, hundreds of attempts waiting for two turns woke
    about ten times a second each, to find the turn still held: at 256 concurrent attempts,
    some 80 wake-ups per attempt, each a context switch or three.) A forfeited turn's holder
    carries on; giving it back later changes nothing.
    """

    def __init__(self, slots: int = HARNESS_TURNS, lease: float = TURN_LEASE) -> None:
        self._slots, self._lease = slots, lease
        self._lock = threading.Lock()
        self._held: dict[object, float] = {}
        """Turns held, by token, with when each was taken (oldest first)."""
        self._waiting: deque[_Waiter] = deque()
        """Who waits for a turn, first first. Empty whenever a slot is free."""
        self._watch = threading.Condition(self._lock)
        """Wakes the watcher: a first waiter arrived."""
        self._watcher: threading.Thread | None = None
        self.forfeited = 0
        """How many turns were forfeited so far (for tests and the bench)."""

    def take(self) -> object:
        """Wait for a turn; its token (to :meth:`give_back`)."""
        with self._lock:
            if len(self._held) < self._slots:
                return self._grant()
            waiter = _Waiter()
            self._waiting.append(waiter)
            self._watch_lease()
        try:
            waiter.wait()
        except BaseException:  # interrupted (Ctrl-C in the main thread): no turn kept
            with self._lock:
                if waiter.token is None:
                    self._waiting.remove(waiter)
            if waiter.token is not None:
                self.give_back(waiter.token)
            raise
        with self._lock:  # the lease runs from now: the wake-up was not the holder's doing
            if self._held.pop(waiter.token, None) is not None:
                self._held[waiter.token] = time.monotonic()  # the newest again
        assert waiter.token is not None
        return waiter.token

    def give_back(self, token: object) -> bool:
        """End the turn *token* names; False when it had been forfeited."""
        with self._lock:
            if self._held.pop(token, None) is None:
                return False
            self._hand_on()
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
        self._held[token] = time.monotonic()
        return token

    def _hand_on(self) -> None:
        """Give free slots to the first waiters (the caller holds the lock)."""
        while self._waiting and len(self._held) < self._slots:
            waiter = self._waiting.popleft()
            waiter.token = self._grant()
            waiter.wake()

    def _watch_lease(self) -> None:
        """Make sure the watcher runs (the caller holds the lock and has just queued)."""
        if self._watcher is None:
            self._watcher = threading.Thread(
                target=self._watch_leases, name="groundstate-turn-lease", daemon=True
            )
            self._watcher.start()
        elif len(self._waiting) == 1:
            self._watch.notify()

    def _watch_leases(self) -> None:
        """The watcher: while anyone waits, forfeit the oldest turn when its lease runs out.
        Leaves after :data:`WATCHER_IDLE` seconds without waiters."""
        with self._lock:
            while True:
                if not self._waiting:
                    if not self._watch.wait(WATCHER_IDLE) and not self._waiting:
                        self._watcher = None
                        return
                    continue
                since = next(iter(self._held.values()))
                left = since + self._lease - time.monotonic()
                if left > 0:
                    self._watch.wait(left)
                    continue
                del self._held[next(iter(self._held))]
                self.forfeited += 1
                self._hand_on()


class _Waiter:
    """One thread waiting for a turn, on a lock of its own (released to wake it)."""

    __slots__ = ("_lock", "token")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self.token: object | None = None
        """The turn given to this waiter, once given (set before the wake-up)."""

    def wait(self) -> None:
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
        started = time.perf_counter()
        self._token = self._turns.take()
        self.waited += time.perf_counter() - started


HARNESS = Turns()
"""This process's turns (a pool worker, started afresh, has its own)."""


def _afresh() -> None:
    """In a forked child: turns held by the parent's threads do not exist there."""
    HARNESS.__init__()  # type: ignore[misc]


os.register_at_fork(after_in_child=_afresh)
