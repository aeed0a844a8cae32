"""File descriptors held back from in-process agents, for the harness's work after them.

An agent that opened files until the process had no descriptor left made its own attempt's
checks fail to open the initial state's database (``grader_failure``: its failure turned into
an invalid attempt, rerun), and the record's artifacts fail to be stored. The harness holds
:data:`SPARE` descriptors (on ``/dev/null``) while an agent runs and lets them go once it
has ended when the process has fewer than :data:`ROOM` free: the grading, the record and the
next attempt's environment then have them. Taken again as the next agent's run starts only
as far as :data:`SPARE` stay free besides: the harness's work still under way then (the record
before, stored as the next attempt's environment opens) has those. Leaving only a few free
(eight, once) let that environment take the last of them on a busy machine, and the record's
artifact found none (``StoreError``: too many open files).

Exhaustion is "fewer than :data:`ROOM` free", not "none free": a few descriptors freed
between the agent's end and the look (an idle loop thread of the harness's ending and closing
its loop, a file another thread let go) left the agent's exhaustion unnoticed before, its
attempt graded with what those few allowed.
"""

from __future__ import annotations

import errno
import os
import threading

SPARE = 32
"""Descriptors held back: a grading opens a few (the initial state's database, a check's
files), storing the record one at a time (its artifacts)."""

ROOM = 8
"""Fewer descriptors free than this after an agent's run is exhaustion (a few freed meanwhile,
as by a loop thread ending, do not hide it)."""

_EXHAUSTED = (errno.EMFILE, errno.ENFILE)


def _devnull() -> int | None:
    """A new descriptor (on ``/dev/null``), None when the process has none free."""
    try:
        return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno not in _EXHAUSTED:
            raise
        return None


def _copies(fd: int, most: int) -> list[int]:
    """Up to *most* new descriptors of *fd*'s file (``dup``: a tenth of an ``open``'s cost),
    fewer when the process has no more."""
    made: list[int] = []
    try:
        while len(made) < most:
            made.append(os.dup(fd))
    except OSError as exc:
        if exc.errno not in _EXHAUSTED:
            _close(made)
            raise
    return made


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


class Reserve:
    def __init__(self) -> None:
        self._held: list[int] = []
        self._lock = threading.Lock()

    def keep(self) -> None:
        """Hold :data:`SPARE` descriptors, or fewer so that :data:`SPARE` more stay free."""
        with self._lock:
            if len(self._held) == SPARE:
                return
            _close(self._held)
            self._held = []
            first = _devnull()
            if first is None:
                return
            made = [first, *_copies(first, 2 * SPARE - 1)]  # as many free as it may hold
            kept = max(0, min(SPARE, len(made) - SPARE))
            _close(made[kept:])
            self._held = made[:kept]

    def spend_if_exhausted(self) -> bool:
        """Let the held descriptors go when the process has fewer than :data:`ROOM` free;
        True if it had."""
        with self._lock:
            if self._free() >= ROOM:
                return False
            held, self._held = self._held, []
        _close(held)
        return True

    def _free(self) -> int:
        """How many descriptors the process could open now, up to :data:`ROOM`."""
        if self._held:
            probe = _copies(self._held[0], ROOM)
        else:
            first = _devnull()
            probe = [] if first is None else [first, *_copies(first, ROOM - 1)]
        _close(probe)
        return len(probe)

    def forked(self) -> None:
        """In a forked child: its copies of the parent's descriptors let go."""
        self._lock = threading.Lock()  # another thread of the parent's may have held it
        held, self._held = self._held, []
        _close(held)


RESERVE = Reserve()
os.register_at_fork(after_in_child=RESERVE.forked)
