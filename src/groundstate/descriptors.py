"""File descriptors held back from in-process agents, for the harness's work after them.

An agent that opened files until the process had no descriptor left made its own attempt's
checks fail to open the initial state's database (``grader_failure``: its failure turned into
an invalid attempt, rerun), and the record's artifacts fail to be stored. The harness holds
:data:`SPARE` descriptors (on ``/dev/null``) while an agent runs and lets them go once it
has ended when the process has fewer than :data:`SPARE` free: the grading, the record and the
next attempt's environment then have them. Taken again as the next agent's run starts, never
the last :data:`SPARE` free: the harness's work still under way (the record before, stored
as the next attempt starts) has those.

Exhaustion is "fewer than :data:`SPARE` free", not "none free": a few descriptors freed
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

_EXHAUSTED = (errno.EMFILE, errno.ENFILE)


def _opened(most: int) -> list[int]:
    """Up to *most* descriptors newly opened, fewer when the process has no more."""
    opened: list[int] = []
    try:
        while len(opened) < most:
            opened.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
    except OSError as exc:
        if exc.errno not in _EXHAUSTED:
            for fd in opened:
                os.close(fd)
            raise
    return opened


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


class Reserve:
    def __init__(self) -> None:
        self._held: list[int] = []
        self._lock = threading.Lock()

    def keep(self) -> None:
        """Hold :data:`SPARE` descriptors, or fewer so that :data:`SPARE` stay free."""
        with self._lock:
            every = self._held + _opened(2 * SPARE - len(self._held))
            kept = max(0, min(SPARE, len(every) - SPARE))
            self._held = every[:kept]
            _close(every[kept:])

    def spend_if_exhausted(self) -> bool:
        """Let the held descriptors go when the process has fewer than :data:`SPARE` free;
        True if it had."""
        with self._lock:
            free = _opened(SPARE)
            _close(free)
            if len(free) >= SPARE:
                return False
            held, self._held = self._held, []
        _close(held)
        return True

    def forked(self) -> None:
        """In a forked child: its copies of the parent's descriptors let go."""
        self._lock = threading.Lock()  # another thread of the parent's may have held it
        held, self._held = self._held, []
        _close(held)


RESERVE = Reserve()
os.register_at_fork(after_in_child=RESERVE.forked)
