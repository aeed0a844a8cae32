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
from functools import partial
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
    """The event loop classes ``asyncio`` defines (on this platform)."""
    import asyncio

    return frozenset(
        value
        for name, module in list(sys.modules.items())
        if name == "asyncio" or name.startswith("asyncio.")
        for value in list(vars(module).values())
        if isinstance(value, type) and issubclass(value, asyncio.AbstractEventLoop)
    )


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

        from groundstate.loopthreads import put_back_builtins

        if type(future) is not asyncio.Future:
            raise TypeError(f"an alarm settles an asyncio.Future, not {type(future).__name__}")
        self._inbox.put((CLOCK() + float(seconds), next(self._order), future))
        if not _serving(self._thread):
            args = (self._inbox, asyncio.Future, _loop_classes(), put_back_builtins, self)
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
    put_back_builtins: Callable[[], None],
    alarms: _Alarms,
) -> None:
    """The ringing thread: everything it rings by is a local variable of this frame, bound
    as it starts (the clock included); *alarms* only to say it has left."""
    clock, take, empty, idle, place = CLOCK, inbox.get, queue.Empty, IDLE_SECONDS, bisect_right
    due: tuple[tuple[float, int, Any], ...] = ()
    while True:
        try:
            # At most *idle* at a time: a far deadline (put there by anyone) is no error.
            item = take(timeout=min(max(due[0][0] - clock(), 0.0), idle) if due else idle)
        except empty:
            item = None
            if not due:  # idle: leave, unless an alarm came in meanwhile
                if alarms._thread is threading.current_thread():
                    alarms._thread = None
                try:
                    item = inbox.get_nowait()
                except empty:
                    return
        if _well_formed(item, future_class):  # in order of time (alarms are never taken
            at = place(due, _when(item), key=_when)  # out early: there may be many)
            due = (*due[:at], item, *due[at:])
        ripe = place(due, (clock(), math.inf), key=_when)
        ringing, due = due[:ripe], due[ripe:]
        for _at, _order, future in ringing:
            if not future.done():
                with suppress(Exception):  # one bad alarm must not silence the others
                    _ring(future, loops, put_back_builtins)


def _well_formed(item: Any, future_class: type) -> bool:
    return (
        type(item) is tuple
        and len(item) == 3
        and type(item[0]) is float
        and item[0] == item[0]  # not NaN
        and type(item[1]) is int
        and type(item[2]) is future_class
    )


def _when(item: tuple[float, int, Any]) -> tuple[float, int]:
    return item[0], item[1]


def _ring(future: Any, loops: frozenset[type], put_back_builtins: Callable[[], None]) -> None:
    """Settle *future* in its loop. The agent given up on may have replaced builtins that
    ``asyncio`` calls here and in the episode's loop (a lying ``isinstance`` made
    ``call_soon_threadsafe`` refuse the callback): they are put back first."""
    loop = future.get_loop()
    kind = type(loop)
    if kind not in loops and kind.__flags__ & _HEAP_TYPE:  # a loop class of someone's own
        return
    put_back_builtins()
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


POLL_SECONDS = 1.0
"""How often the thread of a :func:`settled_by` wait looks again, whatever it was told."""


async def settled_by(finished: Any, until: float = math.inf) -> bool:
    """Wait until *finished* (an ``asyncio`` future or task of the running loop) is done, or
    until :data:`CLOCK` reads *until*; return whether it is done.

    Nothing the code under evaluation can reach keeps this wait asleep. It awaits a
    :class:`_Ring`, whose thread (:func:`_watch`) holds the awaiting task, the task's own
    wakeup, the ring and *until* in its frame's locals, and wakes the task in its loop (if
    it still awaits that very ring, read from the task itself) at *until*, every
    :data:`POLL_SECONDS`, and as soon as *finished* settles (a done callback lets its lock
    go: only the prompt path). Before, the attempt's wait was ``asyncio.wait`` on *finished*
    and an alarm's future: done callbacks, which an in-process agent found through ``gc``
    and took out (``remove_done_callback``), then blocked, holding its attempt, and the
    batch, for ever; and the alarm went through a queue every attempt shared, from which an
    agent beside it could take it first. A wakeup that comes early only makes this look
    again."""
    ring = _Ring(finished.get_loop(), until)
    finished.add_done_callback(ring.let_go)
    try:
        while not finished.done() and CLOCK() < until:
            await ring
    finally:
        ring._over = True
        ring.let_go()  # its thread sees the wait is over, and leaves
    return bool(finished.done())


class _Ring:
    """What :func:`settled_by` awaits: a future to ``asyncio``'s tasks (which hand it their
    wakeup), rung by its thread (:func:`_watch`), never by a callback."""

    def __init__(self, loop: Any, until: float) -> None:
        self._loop, self._until = loop, until
        self._asyncio_future_blocking = False
        self._cancelled = False
        self._lock = _allocate_lock()
        self._lock.acquire()
        self._watching = False
        self._over = False

    def let_go(self, *_: object) -> None:
        """Wake its thread now (it rings; the task looks again)."""
        with suppress(RuntimeError):  # let go already
            self._lock.release()

    def __await__(self) -> Any:
        self._asyncio_future_blocking = True
        yield self
        if self._cancelled:
            self._cancelled = False
            task = _current_task(self._loop)
            if task is not None and task.cancelling():  # asked for by a cancel, not set
                raise _CancelledError()

    def get_loop(self) -> Any:
        return self._loop

    def add_done_callback(self, wakeup: Any, *, context: Any = None) -> None:
        """Called by the awaiting task with its wakeup: the first hands both to the ring's
        thread (each later one is the same task's)."""
        task = getattr(wakeup, "__self__", None)
        if not isinstance(task, _Task):
            raise TypeError("only an asyncio task awaits this")
        if self._watching:
            return
        self._watching = True
        from groundstate.loopthreads import put_back_builtins

        step = wakeup if context is None else partial(context.run, wakeup)  # in its context
        args = (self._until, self._loop, task, step, self._lock, self)
        args += (_LOOPS, POLL_SECONDS, put_back_builtins)  # type: ignore[assignment]
        start(threading.Thread(target=_watch, args=args, name="groundstate-ring", daemon=True))

    def remove_done_callback(self, fn: Any) -> int:
        return 0

    def result(self) -> None:
        return None

    def done(self) -> bool:
        return False

    def cancelled(self) -> bool:
        return False

    def cancel(self, msg: Any = None) -> bool:
        """The awaiting task is cancelled (a batch interrupted): wake it now, to raise."""
        self._cancelled = True
        self.let_go()
        return True


def _watch(
    until: float,
    loop: Any,
    task: Any,
    step: Any,
    lock: Any,
    ring: _Ring,
    loops: dict[type, Callable[..., Any]],
    every: float,
    put_back_builtins: Callable[[], None],
) -> None:
    """A :class:`_Ring`'s thread: at *until*, every *every* seconds and whenever its lock is
    let go, wakes *task* in *loop* if it still awaits *ring*; leaves once the task is done,
    or once its wait is over (:func:`settled_by` has returned: the ring says so, and the
    task awaits it no more). What it acts by is this frame's own: the lock's wait is the C
    library's, the clock and ``call_soon_threadsafe`` as imported (a loop class of
    someone's own: its own method)."""
    clock, wake = CLOCK, _wake
    soon = loops.get(type(loop)) or type(loop).call_soon_threadsafe
    while True:
        left = until - clock()
        lock.acquire(timeout=left if 0 < left < every else every)  # never a busy loop
        if task.done() or (ring._over and task._fut_waiter is not ring):
            return
        put_back_builtins()  # a lying ``isinstance`` made ``call_soon_threadsafe`` refuse
        try:
            soon(loop, wake, task, step, ring)
        except RuntimeError:  # the loop has closed
            return


def _wake(task: Any, step: Any, ring: _Ring) -> None:
    """In the task's loop: step it, if it still awaits *ring* (``_fut_waiter`` is the C
    task's own: never a task that has moved on to await something else)."""
    if task._fut_waiter is ring and not task.done():
        step(ring)


import asyncio as _asyncio  # noqa: E402  (after the alarms: asyncio's classes as imported)

_Task = _asyncio.Task
_CancelledError = _asyncio.CancelledError
_current_task = _asyncio.current_task
_allocate_lock = threading.Lock
_LOOPS = {kind: kind.call_soon_threadsafe for kind in _loop_classes()}  # type: ignore[attr-defined]
"""``asyncio``'s loop classes and their ``call_soon_threadsafe`` as imported: an agent that
rebinds the method on the class (to one that does nothing) does not silence a ring."""

ALARMS = _Alarms()
"""This process's alarms."""

os.register_at_fork(after_in_child=ALARMS._forget)
