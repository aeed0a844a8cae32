"""Alarms on a clock the code under evaluation cannot stop: the attempt's hard time limit.

An ``asyncio`` timeout reads the loop's clock, which calls ``time.monotonic`` through the
``time`` module at every turn of the loop. An in-process agent that replaces it (a
``freezegun``-style clock frozen for its own tests, or on purpose) would freeze every loop of
the process: the episode's wait for the agent would never time out, and the attempt, and the
batch, would outlive the limit. The alarms here keep the clock as it was when groundstate was
imported, and one daemon thread rings them; its waits are the C library's timed lock waits,
which no Python-level patch reaches. The thread leaves after :data:`IDLE_SECONDS` without
alarms, and a forked child starts without it.

Nothing an agent can reach and write decides whether, or when, an alarm rings. The alarms
due are held in the ringing thread's own local variables, as tuples (a running frame's
locals are not Python's to set from another thread), and reach it through a C queue; an
alarm is never cancelled (one for a future already done does nothing), and no lock is
taken. Before, they were a list and flags on objects an agent found through ``gc`` (or as
``ALARMS._due``): one that set its alarm's ``cancelled``, emptied the list, put its deadline
an hour later or took the lock the thread waits with, and then blocked, held its attempt,
and the batch, for as long as it blocked. An alarm is an ``asyncio`` future (the C class's:
a subclass's methods would be the agent's code) of a loop of ``asyncio``'s own classes (or a
compiled one's): settled, in its loop, at its time. What the thread was handed is checked,
since the queue is reachable too: anything else put there is dropped, never called.
"""

from __future__ import annotations

import itertools
import math
import os
import queue
import sys
import threading
import time
from bisect import bisect_right
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from groundstate.ourthreads import start

CLOCK = time.monotonic
"""The monotonic clock, as imported: ``time.monotonic`` replaced later does not change it."""

IDLE_SECONDS = 10.0
"""The ringing thread waits this long without alarms, then exits."""

_current_frames = sys._current_frames
"""As imported: one an agent rebinds (to show a ringing thread that has left) is not read."""

_HEAP_TYPE = 1 << 9
"""``Py_TPFLAGS_HEAPTYPE``: a class made by a ``class`` statement (its methods can be set)."""


def _settle(future: Any) -> None:
    """Called in *future*'s loop: the alarm rang."""
    if not future.done():
        future.set_result(None)


def _loop_classes() -> frozenset[type]:
    """The event loop classes ``asyncio`` defines (on this platform), and the harness's own
    (:class:`groundstate.steadyloop.HeldLoop`, which the batch's and every attempt's loop
    is). Without it, an alarm for an attempt's loop was taken for one of a class of
    someone's own and never rang: an agent that blocked its thread held its try, and the
    batch, until it returned (the forty-fourth round's held loops)."""
    import asyncio

    from groundstate.steadyloop import HeldLoop  # not at the top: kept light as it loads

    return frozenset(
        value
        for name, module in list(sys.modules.items())
        if name == "asyncio" or name.startswith("asyncio.")
        for value in list(vars(module).values())
        if isinstance(value, type) and issubclass(value, asyncio.AbstractEventLoop)
    ) | {HeldLoop}


class _Alarms:
    def __init__(self) -> None:
        self._inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        """The ringing thread, a hint only: whether it still serves is read from its stack."""

    def set(self, seconds: float, future: Any) -> None:
        """Settle *future* (an ``asyncio`` future: its result set to None, in its loop)
        *seconds* from now, unless it is done by then. Cannot be cancelled: a future done
        (or cancelled) is left as it is."""
        import asyncio

        from groundstate.loopthreads import put_back_wake_path

        if type(future) is not asyncio.Future:
            raise TypeError(f"an alarm settles an asyncio.Future, not {type(future).__name__}")
        self._inbox.put((CLOCK() + float(seconds), next(self._order), future))
        if not _serving(self._thread):
            args = (self._inbox, asyncio.Future, _loop_classes(), put_back_wake_path, self)
            thread = threading.Thread(
                target=_serve, args=args, name="groundstate-alarms", daemon=True
            )
            self._thread = thread
            start(thread)

    def _forget(self) -> None:
        """In a forked child: no thread serves (the alarms due were the parent's)."""
        self._thread = None
        with suppress(queue.Empty):
            while True:
                self._inbox.get_nowait()


def _serve(
    inbox: queue.SimpleQueue[Any],
    future_class: type,
    loops: frozenset[type],
    put_back: Callable[[Any], None],
    alarms: _Alarms,
    builtin: tuple[Any, ...] = (type, len, min, max),
) -> None:
    """The ringing thread: everything it rings by is a local variable of this frame, bound
    as it starts (the clock included); *alarms* only to say it has left. The builtins it
    calls are those of groundstate's import (*builtin*): an agent that set ``len`` or
    ``type`` to a lie as its alarm was handed over had it dropped as not well formed, and
    ran past its limit until it returned."""
    clock, take, empty, idle, place = CLOCK, inbox.get, queue.Empty, IDLE_SECONDS, bisect_right
    kind, size, low, high = builtin
    due: tuple[tuple[float, int, Any], ...] = ()
    while True:
        try:
            # At most *idle* at a time: a far deadline (put there by anyone) is no error.
            item = take(timeout=low(high(due[0][0] - clock(), 0.0), idle) if due else idle)
        except empty:
            item = None
            if not due:  # idle: leave, unless an alarm came in meanwhile
                if alarms._thread is threading.current_thread():
                    alarms._thread = None
                try:
                    item = inbox.get_nowait()
                except empty:
                    return
        if _well_formed(item, future_class, kind, size):  # in order of time (alarms are never taken
            at = place(due, _when(item), key=_when)  # out early: there may be many)
            due = (*due[:at], item, *due[at:])
        ripe = place(due, (clock(), math.inf), key=_when)
        ringing, due = due[:ripe], due[ripe:]
        for _at, _order, future in ringing:
            if not future.done():
                with suppress(Exception):  # one bad alarm must not silence the others
                    _ring(future, loops, put_back, kind)


def _well_formed(item: Any, future_class: type, kind: Any, size: Any) -> bool:
    """Whether *item* is an alarm (*kind* and *size*: ``type`` and ``len``, see _serve)."""
    return (
        kind(item) is tuple
        and size(item) == 3
        and kind(item[0]) is float
        and item[0] == item[0]  # not NaN
        and kind(item[1]) is int
        and kind(item[2]) is future_class
    )


def _when(item: tuple[float, int, Any]) -> tuple[float, int]:
    return item[0], item[1]


def _ring(future: Any, loops: frozenset[type], put_back: Callable[[Any], None], kind: Any) -> None:
    """Settle *future* in its loop. The agent given up on may have replaced builtins that
    ``asyncio`` calls here and in the episode's loop (a lying ``isinstance`` made
    ``call_soon_threadsafe`` refuse the callback), or the loop's own methods that take the
    callback (``call_soon_threadsafe`` set to drop it): they are put back first
    (:func:`groundstate.loopthreads.put_back_wake_path`)."""
    loop = future.get_loop()
    made = kind(loop)
    if made not in loops and made.__flags__ & _HEAP_TYPE:  # a loop class of someone's own
        return
    put_back(loop)
    with suppress(RuntimeError):  # the loop has closed (the attempt cancelled)
        loop.call_soon_threadsafe(_settle, future)


def _serving(thread: threading.Thread | None) -> bool:
    """Whether *thread* is a ringing thread, running :func:`_serve` now (read from its
    stack: a frame's code cannot be faked)."""
    if type(thread) is not threading.Thread or thread.ident is None:
        return False
    frame = _current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code is _SERVE_CODE:
            return True
        frame = frame.f_back
    return False


_SERVE_CODE = _serve.__code__

ALARMS = _Alarms()
"""This process's alarms."""

os.register_at_fork(after_in_child=ALARMS._forget)
