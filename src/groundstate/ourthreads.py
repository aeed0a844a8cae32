"""The harness's threads, told by who started them and what they run, never by their names.

Whether code of an agent's may still run in a process (a pool worker's grading, an
in-process try's; what a worker leaves to its next attempts) was decided by thread names:
any thread named ``groundstate-...``, ``asyncio_...``, ``attempt-...`` passed as the
harness's. An agent's own thread, named so, that ended the process once a check had started
made its crash an uncounted grader failure (rerun); left in a pool worker, it outlived its
attempt into the next ones. A name is anyone's to give.

Here the harness starts its threads through :func:`start`, which keeps each ``Thread`` object
(by identity: a subclass's ``__eq__`` or ``__hash__`` is never asked). A library's pool
thread the harness uses (a loop's default executor, AnyIO's worker threads, a
``multiprocessing`` queue's feeder) is told by the code it runs: its stack, read from the
interpreter (a frame's code cannot be faked), must be the pool's loop, entered from
``threading``'s own start, waiting in ``threading``/``queue`` for work. Busy, it runs
someone's work (maybe an agent's ``asyncio.to_thread`` call): not the harness's.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from concurrent.futures import thread as _executor_threads
from types import CodeType, FrameType
from typing import Any

_enumerate, _main_thread, _current_frames = (
    threading.enumerate,
    threading.main_thread,
    sys._current_frames,
)
"""As imported, before any agent runs: one that rebinds them (to hide a thread of its own, or
pass it for the main thread) changes what they are for everyone else, not here."""

_STARTED: dict[int, weakref.ref[threading.Thread]] = {}
"""The threads the harness started, by ``id`` (each checked to be that very object)."""

Threads = dict[int, threading.Thread]
"""Threads by ``id``, held (so no other object takes the ``id``): see :func:`present`."""


def start(thread: threading.Thread) -> threading.Thread:
    """Note *thread* as the harness's, then start it. ``threading``'s classes are put back
    first (:func:`groundstate.loopthreads.put_back_wake_path`): ``Thread.start`` waits on an
    ``Event`` the new thread sets, and an agent that set ``threading.Event.set`` to drop the
    call and blocked held every thread the harness started after it."""
    from groundstate.loopthreads import put_back_wake_path

    put_back_wake_path(None)
    key = id(thread)

    def forget(ref: weakref.ref[threading.Thread]) -> None:
        if _STARTED.get(key) is ref:
            _STARTED.pop(key, None)

    _STARTED[key] = weakref.ref(thread, forget)
    thread.start()
    return thread


def present() -> Threads:
    """The threads alive now (a host's before a batch)."""
    return {id(t): t for t in _enumerate()}


def foreign(
    known: Threads | None = None, left: Callable[[threading.Thread], bool] | None = None
) -> list[threading.Thread]:
    """The threads alive now that are neither the harness's nor in *known* nor, unless a
    pool's (which runs anyone's work), ones *left* accepts: the main thread, one
    :func:`start` started, or a library pool's thread waiting for work are the harness's.
    Read again when every thread found is a pool's at work: one that has just handed back
    its work is back waiting a moment later."""
    for _ in range(3):
        found, settling = _foreign_now(known, left)
        if len(settling) < len(found) or not found:
            break
        time.sleep(0.005)
    return found


def _foreign_now(
    known: Threads | None, left: Callable[[threading.Thread], bool] | None
) -> tuple[list[threading.Thread], list[threading.Thread]]:
    """The threads :func:`foreign` finds now, and those of them that run a pool's loop."""
    main = _main_thread()
    frames: dict[int, FrameType] | None = None
    found, settling = [], []
    for thread in _enumerate():
        if thread is main or _is_ours(thread) or (known and known.get(id(thread)) is thread):
            continue
        if frames is None:
            frames = _current_frames()
        waiting, in_pool = _pool_thread_now(thread, frames.get(thread.ident or -1))
        if not waiting and (in_pool or left is None or not left(thread)):
            found.append(thread)
            if in_pool:
                settling.append(thread)
    return found, settling


def _is_ours(thread: threading.Thread) -> bool:
    ref = _STARTED.get(id(thread))
    return ref is not None and ref() is thread


def _pool_thread_now(thread: threading.Thread, frame: FrameType | None) -> tuple[bool, bool]:
    """:func:`_pool_thread` of *thread*'s innermost *frame*, remembered while the thread stays
    at the same instruction of the same frame (an executor's worker waiting in C): reading a
    thread's stack afresh makes a frame object of each caller (microseconds each, twice per
    attempt in a pool worker). The same frame, at the same instruction, has the same
    callers, so the same answer."""
    if frame is None:
        return False, False
    key, seen = id(thread), _SEEN.get(id(thread))
    if seen is not None and seen[0] is frame and seen[1] == frame.f_lasti:
        return seen[2]
    answer = _pool_thread(frame)
    _SEEN[key] = (frame, frame.f_lasti, answer) if answer[0] else None
    if len(_SEEN) > 64:  # threads come and go
        _SEEN.clear()
    return answer


_SEEN: dict[int, tuple[FrameType, int, tuple[bool, bool]] | None] = {}
"""Per thread (by ``id``), its innermost frame found waiting, that frame's instruction then
and the answer."""


def in_pool_loop(frame: FrameType | None) -> bool:
    """Whether the stack ending in *frame* runs in a library pool's loop (see below)."""
    return _pool_thread(frame)[1]


def _pool_thread(frame: FrameType | None) -> tuple[bool, bool]:
    """Whether the stack ending in *frame* is a library pool's loop, entered from
    ``threading``'s start, waiting in ``threading`` or ``queue`` (or in C) for work; and
    whether it is such a loop at all (at work). Each frame's code is compared by identity
    with those modules' own (code compares equal by value, and a file name is anyone's to
    compile with)."""
    loops, waits = _pool_loops(), _WAITS
    waiting = True  # the frames inside the loop's, innermost first
    while frame is not None:
        code = frame.f_code
        frame = frame.f_back
        if loops.get(id(code)) is code:
            while frame is not None:  # the loop's callers: threading's start only
                code = frame.f_code
                if waits.get(id(code)) is not code:
                    return False, True
                frame = frame.f_back
            return waiting, True
        if waiting and waits.get(id(code)) is not code:
            waiting = False
    return False, False


def _pool_loops() -> dict[int, CodeType]:
    """The loops of the library pools the harness uses (those loaded in this process)."""
    feeder = sys.modules.get("multiprocessing.queues")
    anyio = sys.modules.get("anyio._backends._asyncio")
    key = (id(feeder), id(anyio))
    if _LOOPS[0] != key:
        loops: list[CodeType] = [_executor_threads._worker.__code__]
        if feeder is not None:
            loops.append(feeder.Queue._feed.__code__)
        worker = getattr(anyio, "WorkerThread", None)
        if worker is not None:
            loops.append(worker.run.__code__)
        _LOOPS[:] = [key, {id(c): c for c in loops}]
    return _LOOPS[1]  # type: ignore[no-any-return]


_LOOPS: list[Any] = [None, {}]
"""The modules the loops were last read from, and the loops' code by ``id``."""


def _codes_of(*modules: Any) -> dict[int, CodeType]:
    """The code of the functions and methods of *modules*, by ``id``."""
    codes: dict[int, CodeType] = {}
    for module in modules:
        for value in list(vars(module).values()):
            members = vars(value).values() if isinstance(value, type) else (value,)
            for member in members:
                code = getattr(getattr(member, "__func__", member), "__code__", None)
                if isinstance(code, CodeType):
                    codes[id(code)] = code
    return codes


_WAITS = _codes_of(threading, queue)
"""The code of ``threading``'s and ``queue``'s functions and methods (a thread's start, a
wait for work), taken as the harness imports this module, before any agent runs."""


def names(threads: Iterable[threading.Thread]) -> list[str]:
    """The names of *threads*, sorted (for a message)."""
    return sorted(t.name for t in threads)
