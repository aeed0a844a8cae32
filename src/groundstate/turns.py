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
(model judges, test runs), and a tool once one of its calls has outlasted the lease in this
process (it waits on a server or a command). The agent's other tool calls take a turn.

A turn held longer than :data:`TURN_LEASE` (an environment waiting on its server, a check
waiting on a service) is forfeited: the next waiter goes ahead beside it, so nothing that
waits can hold up the other attempts for more than a lease. The time an attempt waits for a
turn is queueing, not its own work: the episode leaves it out of the recorded latency.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

HARNESS_TURNS = 2
"""Attempts of one process doing the harness's work at once (each pool worker has its own).
Two on the 2-core machine measured: while one holder waits in SQLite (the GIL released) the
other runs Python; one slot left the core idle whenever its holder waited for the GIL."""

TURN_LEASE = 0.1
"""Seconds after which a turn still held is forfeited: the harness's work in one turn takes
a few milliseconds; a turn this long is waiting on something, not using the CPU."""


class Turns:
    """A semaphore whose permits are forfeited when held past a lease.

    Turns are given in the order they are taken where the threads' wake-ups allow (a thread
    arriving as a turn is given back may take it first). A forfeited turn's holder carries
    on; giving it back later changes nothing.
    """

    def __init__(self, slots: int = HARNESS_TURNS, lease: float = TURN_LEASE) -> None:
        self._slots, self._lease = slots, lease
        self._changed = threading.Condition(threading.Lock())
        self._held: dict[object, float] = {}
        """Turns held, by token, with when each was taken (oldest first)."""
        self.forfeited = 0
        """How many turns were forfeited so far (for tests and the bench)."""

    def take(self) -> object:
        """Wait for a turn; its token (to :meth:`give_back`)."""
        with self._changed:
            while len(self._held) >= self._slots:
                oldest, since = next(iter(self._held.items()))
                left = since + self._lease - time.monotonic()
                if left <= 0:
                    del self._held[oldest]
                    self.forfeited += 1
                    break
                self._changed.wait(left)
            token = object()
            self._held[token] = time.monotonic()
            return token

    def give_back(self, token: object) -> bool:
        """End the turn *token* names; False when it had been forfeited."""
        with self._changed:
            if self._held.pop(token, None) is None:
                return False
            self._changed.notify()
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
