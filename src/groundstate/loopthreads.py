"""Reused daemon threads, each with an event loop, for work the caller must be able to stop
waiting for: an agent (which may block or spin), an in-process attempt.

A new thread and ``asyncio.run`` for each such piece of work cost about 0.4 ms of CPU, twice
per attempt, and more when hundreds of attempts run at once. Here a thread whose work has
returned parks for the next piece, keeping its loop, under rules that keep one piece from
seeing the one before:

- each piece runs in a fresh copy of its submitter's context (its ``contextvars``, among them
  where the attempt's prints go) and under its own thread name; the thread's current event
  loop, trace and profile functions and blocked signals (``signal.pthread_sigmask``) are
  put back afterwards, and so is process-wide state
  the piece changed that the harness relies on: the builtins (a lying ``isinstance`` makes
  ``asyncio`` refuse callbacks), the hooks of threads started later
  (``threading.settrace``/``setprofile``: the graders', later attempts'), the event loop
  policy, the garbage collector's callbacks (run by whichever thread collects: the
  episode's), ``sys.stdout``/``sys.stderr`` and the hooks for uncaught errors
  (``sys.unraisablehook``, ``sys.excepthook``, ``threading.excepthook``) replaced by objects
  of the piece's own, the functions of the ``time`` module, the recursion limit and switch
  interval (``sys.setrecursionlimit``, ``sys.setswitchinterval``), the warning filters, the
  environment variables, the process's descriptor, CPU, file size and memory limits
  (``resource.setrlimit``), an interval timer armed (``signal.alarm``), the handlers of
  the signals that end a process or that the harness sets (:data:`_HANDLED`, set in the
  main thread through its loop) and the submitting thread's blocked signals, the umask, the
  locale, the root logger's configuration and ``sqlite3``'s adapters and converters
  (``register_adapter(str, ...)``), and the interpreter's switches of
  :mod:`groundstate.switches` (the garbage collector, ``decimal``'s contexts). A piece the
  caller gives up on (see :func:`abandon`)
  has them put back then, by the caller;
- the loop is kept only when the work left it as a new loop is (no task, callback, timer,
  file watch, async generator or executor, no handler, task factory, debug setting or
  attribute changed). Otherwise it is shut down as ``asyncio.run`` shuts its loop down
  (pending tasks cancelled and waited for) *before* the outcome is delivered, so an agent
  that leaves work behind ends exactly as it did under ``asyncio.run``; the next piece gets
  a new loop;
- a thread still running work the caller gave up on (an agent past its time limit) is never
  handed more: it is idle only once that work has returned.
- the threads of a loop's default executor (``asyncio.to_thread``) are left out of the join
  Python makes as it exits once the loop is shut or its work given up on: a call blocked
  there must not hold the process open.

Not put back: ``threading.local`` data and module state, which code run in this process
shares with the next attempt whichever thread that runs on. Idle threads exit after
:data:`IDLE_SECONDS` without work.
"""

from __future__ import annotations

import asyncio
import builtins
import concurrent.futures
import gc
import itertools
import locale
import logging
import os
import queue
import resource
import selectors
import signal
import sqlite3
import sys
import threading
import time
import warnings
import weakref
from collections import deque
from collections.abc import Callable, Coroutine, MutableMapping, Sequence
from concurrent.futures import thread as _executor_threads
from contextlib import suppress
from contextvars import Context, copy_context
from itertools import repeat
from operator import is_, is_not
from types import MethodType
from typing import Any, NamedTuple, TypeVar

from groundstate import steadyloop
from groundstate.bindings import _dict_of, _read, _version_words
from groundstate.capture import put_back_streams, streams
from groundstate.ourthreads import in_pool_loop, start
from groundstate.parked import Parked
from groundstate.returned import text_of, type_name
from groundstate.switches import Switches, put_back_switches, read_switches

T = TypeVar("T")

IDLE_SECONDS = 30.0
"""An idle thread waits this long for work, then exits (closing its loop)."""

IDLE_NAME = "groundstate-loop-idle"
"""An idle thread's name; while it works, it bears the work's name."""

Work = Callable[[], Coroutine[Any, Any, T]]
"""Called in the thread (in the submitter's context); the coroutine it returns is run on the
thread's loop. What it raises before returning one is the outcome too."""

Outcome = tuple[BaseException | None, Any]
"""``(None, value)`` or ``(exception, None)``."""

Done = Callable[[Outcome], None]
"""Receives the outcome in the worker thread; must not raise."""

_Job = tuple[Work[Any], str, Context, Done, threading.Event, "_SharedHooks | None", int]
"""The work, its thread's name, the context it runs in, where its outcome goes, whether its
caller gave up on it (see :func:`abandon`), and the process-wide state as the work found it
(None: not watched, see :func:`submit`)."""


def put_back_hooks(trace: Any, profile: Any) -> None:
    """This thread's trace and profile functions as they were before a piece ran.

    Only one the piece changed is set again: ``sys.setprofile`` refuses what
    ``sys.getprofile`` gives back while a ``cProfile`` profiler runs on the thread (the
    profiler object, which is not callable), and the error would end the thread before the
    piece's outcome is delivered: the attempt would wait for it for ever. Such a profiler,
    turned off by the piece, is turned back on by its own method.
    """
    if sys.gettrace() is not trace and (trace is None or callable(trace)):
        sys.settrace(trace)
    if sys.getprofile() is profile:
        return
    if profile is None or callable(profile):
        sys.setprofile(profile)
        return
    import _lsprof  # only here: a profiled process has it loaded already

    if isinstance(profile, _lsprof.Profiler):
        profile.enable()


def blocked_signals() -> frozenset[int] | None:
    """The signals this thread blocks (``signal.pthread_sigmask``); None where there is no
    such call."""
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return frozenset(signal.pthread_sigmask(signal.SIG_BLOCK, ()))


def put_back_blocked(mask: frozenset[int] | None) -> None:
    """This thread's blocked signals as :func:`blocked_signals` gave them before a piece ran.
    The mask is the thread's: one an agent's piece set (``SIGTERM``, ``SIGINT`` blocked)
    stayed for every later piece on the thread (the next attempts' agents) and for each
    thread and process started from it (a process inherits its starter's mask: a command
    a later agent or tool ran could not be stopped with ``SIGTERM``)."""
    if mask is not None and blocked_signals() != mask:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


_WORKING: dict[int, tuple[str, Context, int]] = {}
"""The threads of this module at work (by identity: ``id`` of each ``Thread``, which code
run there cannot change): the name their work was given, its context, and its number
(:func:`handed`)."""

handed = itertools.count().__next__
"""A number below every piece of work handed from now on (and above all handed before):
what a batch notes as it opens, to tell its own work from work left running by whatever
ran in the process before it (:func:`working`). A bound method: no builtin an agent could
rebind is called."""


def working(since: int = 0) -> dict[int, tuple[str, Context]]:
    """Each thread of this module at work now (``id`` of its ``Thread``), with the name its
    work was given and the context it runs in: what the work is, as its submitter said,
    whatever name the code it runs has since given its thread (an agent's that renames its
    thread still runs an agent's work). With *since* (:func:`handed`), only work handed
    from then on."""
    now = _WORKING.copy().items()
    return {key: (name, context) for key, (name, context, number) in now if number >= since}


_ORIGINS: dict[int, tuple[weakref.ref[threading.Thread], int]] = {}
"""Each thread ``threading`` started from a piece of work (by ``id`` of its ``Thread``, checked
to be that very object), with that work's number (:func:`handed`); one a thread so noted
started inherits its starter's."""

_current_thread = threading.current_thread
_START_NAME = next(
    n for n in ("_start_joinable_thread", "_start_new_thread") if hasattr(threading, n)
)


def _origin(thread: threading.Thread) -> int | None:
    entry = _ORIGINS.get(id(thread))
    return entry[1] if entry is not None and entry[0]() is thread else None


def _origin_here() -> int | None:
    """The number of the work that runs here: this loop thread's, or the work this thread
    was started from, directly or not. None in a pool's thread (a loop's default executor
    runs any later work on it too) or one started from no work."""
    me = _current_thread()
    work = _WORKING.get(id(me))
    if work is not None:
        return work[2]
    origin = _origin(me)
    return None if origin is None or in_pool_loop(sys._getframe()) else origin


def _noting_start(start_thread: Callable[..., Any]) -> Callable[..., Any]:
    """``threading``'s own start of a thread, noting which work the new thread descends from
    (:func:`started_before`). Put in ``threading`` as groundstate is imported, before any
    agent runs; put back with the rest of ``threading`` (:func:`put_back_wake_path`). A thread
    started past it (``_thread``, a start rebound) is noted from no work: it counts."""

    def start_noted(function: Any, *args: Any, **kwargs: Any) -> Any:
        thread = function.__self__ if type(function) is MethodType else None
        origin = _origin_here() if isinstance(thread, threading.Thread) else None
        if origin is not None:
            key = id(thread)

            def forget(ref: weakref.ref[threading.Thread]) -> None:
                if _ORIGINS.get(key, (None,))[0] is ref:
                    _ORIGINS.pop(key, None)

            _ORIGINS[key] = (weakref.ref(thread, forget), origin)  # type: ignore[arg-type]
        return start_thread(function, *args, **kwargs)

    start_noted.noting = True  # type: ignore[attr-defined]
    return start_noted


if not getattr(getattr(threading, _START_NAME), "noting", False):  # once (a module reloaded)
    setattr(threading, _START_NAME, _noting_start(getattr(threading, _START_NAME)))


def started_before(since: int) -> Callable[[threading.Thread], bool]:
    """Whether a thread was started from work handed before *since* (:func:`handed`), or
    from a thread that was (not a pool's): code an earlier batch's agent left running
    (blocked past its time limit) that started it during a later batch is none of that
    batch's agents' code."""

    def before(thread: threading.Thread) -> bool:
        origin = _origin(thread)
        return origin is not None and origin < since

    return before


class _LoopThread:
    """A daemon thread running the work handed to it, one piece at a time, on its loop."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._runner: asyncio.Runner | None = None
        self._loop_now: asyncio.AbstractEventLoop | None = None
        self._fresh: tuple[Any, ...] = ()
        self.thread = start(threading.Thread(target=self._serve, name=IDLE_NAME, daemon=True))

    def give(self, job: _Job) -> None:
        self._jobs.put(job)

    def _serve(self) -> None:
        hooks = sys.gettrace(), sys.getprofile()  # a tracer set for every thread (coverage)
        mask = blocked_signals()
        while True:
            job = self._wait()
            if job is None:
                self._shut()
                return
            work, name, context, done, given_up, shared, number = job
            _WORKING[id(self.thread)] = name, context, number  # before the name: never missed
            self.thread.name = name
            try:
                outcome = context.run(self._run, work)
            finally:
                try:  # first: the rest calls builtins (``str``) the work replaced
                    if shared is not None:
                        put_back = _put_back_shared(shared, streams=not given_up.is_set())
                        if put_back:
                            _note_put_back(shared, put_back)
                except BaseException as exc:  # delivered: a thread gone held its submitter
                    outcome = (exc, None)
                self.thread.name = IDLE_NAME
                _WORKING.pop(id(self.thread), None)
                asyncio.set_event_loop(None)
                put_back_hooks(*hooks)
                put_back_blocked(mask)
            _IDLE.park(self)  # before *done*: the submitter's next piece finds this thread idle
            try:
                done(outcome)
            except BaseException:
                if _IDLE.unpark(self):  # leave (the error is reported); else serve what was given
                    self._shut()
                    raise

    def _wait(self) -> _Job | None:
        """The next piece of work; None when none came in time and this thread has left."""
        try:
            return self._jobs.get(timeout=IDLE_SECONDS)
        except queue.Empty:
            if _IDLE.unpark(self):
                return None
            return self._jobs.get()  # taken just now: its work is on the way

    def _run(self, work: Work[Any]) -> Outcome:
        """Run *work* to its end on this thread's loop (in the caller's context, copied)."""
        outcome: Outcome
        try:
            coroutine = work()
            runner = self._loop()
            asyncio.set_event_loop(runner.get_loop())  # as asyncio.run has it
            loop = runner.get_loop()
            outcome = (None, steadyloop.run_on(loop, coroutine, copy_context()))
        except BaseException as exc:  # delivered: the submitter decides what it means
            outcome = (exc, None)
        if self._runner is not None and not self._reusable(outcome[0]):
            try:
                self._shut()  # as asyncio.run ends: leftover tasks cancelled, waited for
            except BaseException as exc:
                outcome = (exc, None)
        return outcome

    def _loop(self) -> asyncio.Runner:
        if self._runner is None:
            self._runner = asyncio.Runner(loop_factory=steadyloop.HeldLoop)
            self._loop_now = self._runner.get_loop()
            self._fresh = _state(self._loop_now)
        return self._runner

    def _reusable(self, error: BaseException | None) -> bool:
        if error is not None and not isinstance(error, Exception):
            return False  # SystemExit, KeyboardInterrupt, a cancellation: start afresh
        return self._runner is not None and _state(self._runner.get_loop()) == self._fresh

    def _shut(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            self.not_joined_at_exit()  # closing waits for them (here: a daemon thread)
            runner.close()

    def not_joined_at_exit(self) -> None:
        """Leave the threads of this loop's default executor (``asyncio.to_thread``,
        ``run_in_executor``) out of the join Python makes as it exits: ``concurrent.futures``
        waits there for every executor's thread, so an agent's call blocked past its time
        limit held ``groundstate run`` open after its batch, for as long as the call lasted.
        They are daemon threads (as the agent's, which started them), ended with the process."""
        executor = getattr(self._loop_now, "_default_executor", None)
        threads = list(getattr(executor, "_threads", ()))
        with _EXIT_LOCK:
            for thread in threads:
                _JOINED_AT_EXIT.pop(thread, None)


class _SharedHooks(NamedTuple):
    """The process-wide hooks a piece of work could change for everyone after it: those of
    threads started later, the event loop policy (which makes every new loop), the output
    streams, the garbage collector's callbacks and the hooks for errors nobody catches (code
    of the piece's that any thread would run: the episode's, a grader's), the recursion limit,
    the GIL's switch interval, the warning filters, the environment variables, the
    process's resource limits, interval timers and signal handlers, its umask and locale,
    the submitting thread's blocked signals, the root logger's
    configuration, ``sqlite3``'s adapters and converters, and the interpreter's switches
    (:mod:`groundstate.switches`).

    A tuple of tuples (no dict, no list: nothing in it can be edited), taken by
    :func:`_shared_hooks` and put back by :func:`_put_back_shared`, which first gives it
    this class again: an agent that found the object (``gc.get_objects()``) and set its
    ``sqlite`` to the adapters with its own ``register_adapter(str, lie)`` in them kept the
    lie for the store's writes (a failed attempt stored as a ``success``); one that set its
    ``environ`` kept its variables for the next attempts."""

    trace: Any
    profile: Any
    policy: Any
    streams: tuple[Any, ...]
    collected: tuple[Any, ...]
    clocks: tuple[tuple[str, Any], ...]
    uncaught: tuple[Any, ...]
    recursion: int
    switch: float
    limits: tuple[tuple[int, tuple[int, int]], ...]
    timers: tuple[tuple[int, bool], ...]
    environ: tuple[tuple[bytes, bytes], ...]
    umask: int
    locale: str
    logging: _LoggingState
    sqlite: tuple[tuple[tuple[Any, Any], ...], tuple[tuple[Any, Any], ...]]
    warnings: tuple[Any, tuple[Any, ...], Any]
    handlers: tuple[tuple[int, Any], ...]
    blocked: tuple[int, frozenset[int] | None]
    """The submitting thread (its ``threading.get_ident()``) and the signals it blocked."""
    switches: Switches
    """The collector's, ``decimal``'s and the like (see :mod:`groundstate.switches`)."""


def _shared_hooks() -> _SharedHooks:
    """The process-wide state as it is now (see :class:`_SharedHooks`)."""
    return _SharedHooks(
        threading.gettrace(),
        threading.getprofile(),
        asyncio.get_event_loop_policy(),
        streams(),
        tuple(_COLLECTING),
        tuple(vars(time).items()),
        _uncaught_hooks(),
        sys.getrecursionlimit(),
        sys.getswitchinterval(),
        # Tuples by way of lists (see groundstate.bindings._items).
        tuple([(kind, resource.getrlimit(kind)) for kind in _LIMITS]),
        tuple([(which, signal.getitimer(which) != (0.0, 0.0)) for which in _TIMERS]),
        tuple(_ENVIRON.items()),
        umask(),
        locale.setlocale(locale.LC_ALL),
        _logging_state(),
        (tuple(sqlite3.adapters.items()), tuple(sqlite3.converters.items())),
        (warnings.filters, tuple(warnings.filters), warnings.showwarning),
        tuple([(number, _handler(number)) for number in _HANDLED]),
        (threading.get_ident(), blocked_signals()),
        read_switches(),
    )


def _put_back_shared(shared: _SharedHooks, *, streams: bool) -> list[str]:
    """Put back what the work changed (only that: another thread may set its own), the
    output streams and the hooks for uncaught errors only with *streams* (the caller
    still waits for the piece: the harness has put none of its own since); return what was
    put back, named (the streams and what its own put-backs set unnamed). First the
    builtins and ``asyncio``'s wake path (:func:`put_back_wake_path`): until then, every
    callback handed to a loop from another thread (another attempt's agent's end, an
    attempt's end, which the batch waits for without an alarm) could be dropped."""
    put_back_wake_path(None)
    if type(shared) is not _SharedHooks:  # given a class of the agent's, its fields its own
        object.__setattr__(shared, "__class__", _SharedHooks)
    # A ``time.perf_counter`` giving NaN, or a ``time.monotonic`` leaping ahead, reached
    # every library that times with them (an HTTP client's timeouts, the next agent) for
    # the rest of the process. (The harness times itself on the clock as imported,
    # :data:`groundstate.alarms.CLOCK`.) Only what the piece changed: a test's own
    # patch from before it stays.
    _put_back(vars(time), shared.clocks)
    found = []
    if threading.gettrace() is not shared.trace:
        threading.settrace(shared.trace)
        found.append("threading.settrace()")
    if threading.getprofile() is not shared.profile:
        threading.setprofile(shared.profile)
        found.append("threading.setprofile()")
    if asyncio.get_event_loop_policy() is not shared.policy:
        asyncio.set_event_loop_policy(shared.policy)
        found.append("asyncio.set_event_loop_policy()")
    # A callback that blocks ran on whichever thread collected next: the episode's, which
    # runs every attempt (compared by identity: ``==`` would call the piece's code).
    if _changed(_COLLECTING, shared.collected):
        _COLLECTING[:] = shared.collected
        found.append("gc.callbacks")
    if streams:
        put_back_streams(shared.streams)
        if any(map(is_not, _uncaught_hooks(), shared.uncaught)):
            sys.unraisablehook, sys.excepthook, threading.excepthook = shared.uncaught
            found.append("the hooks for uncaught errors")
    # The interpreter's limits: a recursion limit of 20 left the harness unable to grade
    # this very attempt (it had no record); a switch interval of 1000 s lets any thread
    # that spins keep the GIL, the alarms' thread's included, that long.
    if sys.getrecursionlimit() != shared.recursion:
        with suppress(RecursionError):  # deeper now than it was: impossible here
            sys.setrecursionlimit(shared.recursion)
        found.append("sys.setrecursionlimit()")
    if sys.getswitchinterval() != shared.switch:
        sys.setswitchinterval(shared.switch)
        found.append("sys.setswitchinterval()")
    # ``sqlite3.register_adapter(str, ...)`` rewrote every text the harness bound to a
    # statement after it, in every thread: the store's records (a failed attempt stored
    # as a ``success``), the checks' parameters.
    if _put_back_registry(sqlite3.adapters, shared.sqlite[0]):
        found.append("sqlite3.register_adapter()")
    if _put_back_registry(sqlite3.converters, shared.sqlite[1]):
        found.append("sqlite3.register_converter()")
    if streams:
        found += _put_back_settings(shared)
    return found


def _put_back_settings(shared: _SharedHooks) -> list[str]:
    """What the harness may set itself between a piece's start and its end when the caller
    no longer waits for it (a test's ``setenv``, ``setrlimit``, warning filters): put
    back only while it waits, as the streams are; return what was, named."""
    found = []
    # A descriptor limit lowered to what was open left the grading unable to open the
    # initial state (an invalid attempt); a CPU limit ends the process with SIGXCPU, a
    # file size limit fails the store's writes. (A hard limit lowered stays lowered.)
    for kind, limit in shared.limits:
        if resource.getrlimit(kind) != limit:
            with suppress(ValueError, OSError):
                resource.setrlimit(kind, limit)
            found.append("resource.setrlimit()")
    # ``signal.alarm(5)`` (or ``setitimer``) left armed killed the process seconds later,
    # whatever attempt ran then, or the store's write (the timers' signals end a process
    # by default). A timer armed before the piece (a test runner's timeout) stays.
    for which, armed in shared.timers:
        if not armed and signal.getitimer(which) != (0.0, 0.0):
            signal.setitimer(which, 0.0)
            found.append("signal.setitimer()")
    # A piece cannot set a signal handler from its own thread, but it can hand the call to
    # the loop of the main thread (``call_soon_threadsafe(signal.signal, SIGINT, SIG_IGN)``,
    # the episode's or the batch's loop found with ``gc.get_objects()``), or block SIGINT
    # and SIGTERM there (``pthread_sigmask``): the user's Ctrl-C, and ``run``'s handler
    # that stores the batch's interruption, were gone for the rest of the process. Put back
    # by the caller in the main thread (only there can a handler be set); the mask by the
    # thread that submitted the piece, which is the thread it was read in.
    for number, handler in shared.handlers:
        if _handler(number) is not handler:
            with suppress(ValueError, TypeError, OSError):  # not the main thread; None: C's
                signal.signal(number, handler)
                found.append(f"signal.signal({number})")
    ident, mask = shared.blocked
    if ident == threading.get_ident():
        put_back_blocked(mask)
    # ``GROUNDSTATE_TMPDIR`` pointed at a file failed every later environment's build (an
    # invalid attempt each), a proxy variable sent later attempts' model calls through
    # the agent's own server.
    if len(_ENVIRON) != len(shared.environ) or any(
        _ENVIRON.get(key) != value for key, value in shared.environ
    ):
        _put_back_environ(dict(shared.environ))
        found.append("os.environ")
    # ``warnings.simplefilter("error")`` made every warning raised in the harness and the
    # checks (a library's deprecation) an exception: a check's grader failure, an invalid
    # attempt, for the rest of the process.
    kept, filters, show = shared.warnings
    if _changed(list(warnings.filters), filters) or warnings.showwarning is not show:
        kept[:] = filters
        warnings.filters, warnings.showwarning = kept, show
        warnings._filters_mutated()  # type: ignore[attr-defined]
        found.append("warnings.filters")
    # A umask of 0o777 made every file the harness created later unreadable (the next
    # environment's database: an invalid attempt); ``setlocale(LC_ALL, "C")`` made text
    # files opened without an encoding ASCII (a check reading one failed on "é").
    if os.umask(shared.umask) != shared.umask:
        found.append("os.umask()")
    if locale.setlocale(locale.LC_ALL) != shared.locale:
        with suppress(locale.Error):
            locale.setlocale(locale.LC_ALL, shared.locale)
        found.append("locale.setlocale()")
    # A handler of the root logger's runs on every thread that logs (a check's HTTP
    # client, the next attempt's model adapter): one that blocks held them.
    if _logging_changed(shared.logging):
        _put_back_logging(shared.logging)
        found.append("the root logger")
    # ``gc.disable()`` left every later attempt without a collector; ``decimal.DefaultContext
    # .prec = 1`` left the graders' amounts computed to one digit.
    return found + put_back_switches(shared.switches)


def umask() -> int:
    """The process's file-mode mask, from ``/proc`` where it says (setting it to read it races
    with the other threads creating files), else read by setting it back."""
    with suppress(ValueError):
        return int(proc_status("Umask") or "", 8)
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def proc_status(field: str) -> str | None:
    """The value of *field* in ``/proc/self/status`` (Linux); None where it is not there.

    Read as bytes through the descriptor (``os.open``, ``os.read``), not a text file iterated
    line by line: read once per attempt (the umask), where the file object's own calls (its
    buffer, decoder, ``isatty`` and ``seek`` probes, each releasing the GIL) cost twice the
    read itself."""
    try:
        fd = os.open("/proc/self/status", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 16384):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    # The field's line found, not every line split (the kernel escapes a newline in the
    # process's name, the one field an agent sets: no line can be forged).
    text, name = b"\n" + b"".join(chunks), b"\n" + field.encode("ascii", "replace") + b":"
    at = text.find(name) if field else -1
    if at < 0:
        return None
    end = text.find(b"\n", at + 1)
    value = text[at + len(name) : end if end >= 0 else len(text)]
    return value.strip().decode("ascii", "replace")


_LoggingState = tuple[tuple[logging.Handler, ...], tuple[Any, ...], int, int, bool]


def _logging_state() -> _LoggingState:
    """The root logger's handlers, filters and level, the level ``logging.disable`` set, and
    whether records go up to the root at all (``logging.root.propagate``)."""
    root = logging.root
    return (
        tuple(root.handlers),
        tuple(root.filters),
        root.level,
        root.manager.disable,
        root.propagate,
    )


def _logging_changed(before: _LoggingState) -> bool:
    """Compared by identity: ``==`` would call the piece's code (a handler's ``__eq__``)."""
    now = _logging_state()
    return (
        _changed(now[0], before[0])
        or _changed(now[1], before[1])
        or _changed(list(now[2:]), list(before[2:]))
    )


def _put_back_logging(state: _LoggingState) -> None:
    handlers, filters, level, disabled, propagate = state
    root = logging.root
    root.handlers[:], root.filters[:] = handlers, filters
    root.setLevel(level)
    logging.disable(disabled)
    root.propagate = propagate


_LIMITS = (resource.RLIMIT_NOFILE, resource.RLIMIT_CPU, resource.RLIMIT_FSIZE, resource.RLIMIT_AS)
"""The process's resource limits an agent could set against the harness (``setrlimit``)."""

_HANDLED_NAMES = (
    "SIGINT SIGTERM SIGHUP SIGQUIT SIGPIPE SIGCHLD SIGXCPU SIGXFSZ"
    " SIGALRM SIGVTALRM SIGPROF SIGUSR1 SIGUSR2"
)
_HANDLED = tuple([getattr(signal, n) for n in _HANDLED_NAMES.split() if hasattr(signal, n)])
"""The signals whose handlers a piece may not leave changed: those the harness sets
(``run``'s SIGINT and SIGTERM, the signals it ignores while a batch runs), and those whose
default action ends the process or that Python itself sets (SIGPIPE ignored)."""

_handler: Callable[[int], Any] = getattr(sys.modules.get("_signal"), "getsignal", signal.getsignal)
"""A signal's handler as set (``SIG_DFL`` and ``SIG_IGN`` as their numbers): CPython's
``_signal.getsignal``, which ``signal`` imports; ``signal.getsignal`` makes an enum of each
(ten times the read: 13 signals read as each attempt's agent starts, and again after)."""

_TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)
"""The process's interval timers (``signal.alarm`` arms the first), whose signals end it."""

_ENVIRON: dict[bytes, bytes] = getattr(os.environ, "_data", {})
"""The environment variables as ``os.environ`` holds them (encoded), compared cheaply."""


def _put_back_environ(before: dict[bytes, bytes]) -> None:
    """Set the environment variables as *before* (through ``os.environ``: ``putenv`` too)."""
    decode = os.fsdecode
    for key in [key for key in list(_ENVIRON) if key not in before]:  # a copy: threads add
        os.environ.pop(decode(key), None)
    for key, value in before.items():
        if _ENVIRON.get(key) != value:
            os.environ[decode(key)] = decode(value)


_COLLECTING: list[Any] = gc.callbacks
"""The list of callbacks the garbage collector calls (``gc.callbacks`` can be rebound)."""


def _changed(now: Sequence[Any], before: Sequence[Any]) -> bool:
    return len(now) != len(before) or any(map(is_not, now, before))


def _uncaught_hooks() -> tuple[Any, ...]:
    """Where errors nobody catches go: in a finalizer or a garbage collection
    (``sys.unraisablehook``), in a thread, at the top."""
    return sys.unraisablehook, sys.excepthook, threading.excepthook


_BUILTINS = tuple(vars(builtins).items())
"""The builtins as groundstate found them (names added since are left alone): a tuple, which
code run here cannot edit as it could a dict."""

_MISSING = object()


def put_back_builtins() -> None:
    """Put back every builtin that code run here replaced or deleted (``builtins.isinstance
    = lambda *a: True`` would make the harness's own checks, and ``asyncio``'s, lie)."""
    _put_back(vars(builtins), _BUILTINS)


_WAKE_NAMES = (
    "call_soon_threadsafe",
    "_call_soon",
    "_check_closed",
    "_write_to_self",
    "_run_once",
    "_process_events",
    "_read_from_self",
    "_process_self_data",
    "_run",
    "_as",
)
"""The methods a loop of ``asyncio``'s runs to take a callback from another thread and run
it: how the time limit's alarm wakes the episode (:mod:`groundstate.alarms`); ``_as``, the
harness's loop's (:class:`groundstate.steadyloop.HeldLoop`), which runs a callback handed
over from an agent's code."""

_class_dict = type.__dict__["__dict__"].__get__
_set_on_class, _del_on_class = type.__setattr__, type.__delattr__


def _wake_path() -> tuple[tuple[type, tuple[tuple[str, Any], ...]], ...]:
    """Each class of ``asyncio``'s loops (with what they inherit) and handles, with what it
    binds each name of :data:`_WAKE_NAMES` to (:data:`_MISSING`: nothing, it inherits)."""
    from groundstate.alarms import _loop_classes

    classes = {asyncio.events.Handle: None, asyncio.events.TimerHandle: None}
    for loop_class in sorted(_loop_classes(), key=lambda c: c.__qualname__):
        classes.update(dict.fromkeys(loop_class.__mro__))
    return tuple(
        [
            (cls, tuple([(name, _class_dict(cls).get(name, _MISSING)) for name in _WAKE_NAMES]))
            for cls in classes
            if cls.__flags__ & (1 << 9)  # a heap type: one whose methods can be set
        ]
    )


def _unchanged(now: Any, names: tuple[str, ...], values: tuple[Any, ...]) -> bool:
    return all(map(is_, map(now.get, names, repeat(_MISSING)), values))


def _split(pairs: tuple[tuple[str, Any], ...]) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    return tuple([n for n, _ in pairs]), tuple([v for _, v in pairs])


_WAKE_PATH = tuple([(cls, *_split(first)) for cls, first in _wake_path()])

_WAITED_WITH = (
    threading.Event,
    threading.Condition,
    threading.Semaphore,
    threading.BoundedSemaphore,
    threading.Barrier,
    threading.Thread,
    threading.Timer,
    queue.Queue,
    queue.LifoQueue,
    queue.PriorityQueue,
    _executor_threads.ThreadPoolExecutor,
    _executor_threads._WorkItem,
    concurrent.futures.Future,
    *[
        value
        for value in vars(selectors).values()
        if isinstance(value, type) and issubclass(value, selectors.BaseSelector)
    ],
)
"""The standard library's classes the harness waits, starts threads and selects with:
``threading.Thread.start`` waits on an ``Event`` the new thread sets, an event loop selects
with ``selectors``, a loop's default executor is ``concurrent.futures``'. An agent that set
``threading.Event.set`` to drop the call held every thread started after it (the harness's
loop threads and alarms': every attempt, the batch) for ever; one that set
``selectors.EpollSelector.select`` to block held every loop entering it."""


def _methods(cls: type) -> tuple[tuple[str, Any], ...]:
    """Every name *cls* has (its own and inherited, but ``object``'s), with what *cls* itself
    binds it to (:data:`_MISSING`: it inherits)."""
    own = _class_dict(cls)
    names = {name for base in cls.__mro__[:-1] for name in _class_dict(base)}
    names -= {"__dict__", "__weakref__", "__doc__", "__module__", "__slotnames__"}
    return tuple([(name, own.get(name, _MISSING)) for name in sorted(names)])


_STDLIB = tuple([(cls, *_split(_methods(cls))) for cls in _WAITED_WITH])

_SELECTOR_NAMES = frozenset(
    name for cls, names, _ in _STDLIB if issubclass(cls, selectors.BaseSelector) for name in names
)
"""Methods of a selector, which one set on the loop's selector object itself shadows."""

_STDLIB_NAMES = tuple(
    [
        (
            module,
            *_split(
                tuple([(n, v) for n, v in vars(module).items() if callable(v) and n not in free])
            ),
        )
        for module, free in (
            (threading, {"excepthook", "__excepthook__"}),  # set lawfully (pytest, per test)
            (queue, set()),
            (selectors, set()),
            (_executor_threads, set()),
            (concurrent.futures, {"__getattr__"}),
        )
    ]
)
"""The functions and classes those modules name (``threading.Event``,
``selectors.DefaultSelector``, ``threading._start_new_thread``), as first seen."""

WAKE_RESTORED: deque[tuple[int, str]] = deque(maxlen=64)
"""What :func:`put_back_wake_path` set back (``asyncio.base_events.BaseEventLoop.
call_soon_threadsafe``), each with its number in order, for the next look of every attempt
running then to name: set back before the look (as a piece of work ends, before its outcome
is handed over, or as another attempt's thread starts), the watch would find only the class
written to (:func:`take_wake_restored`). Not taken out by the first look: in a batch, the
attempt that looked first was named for it, and the one whose agent rebound it and
blocked was recorded at its time limit."""

_RESTORES = itertools.count(1)


def _restored(name: str) -> None:
    WAKE_RESTORED.append((next(_RESTORES), name))


def wake_restores_now() -> list[int]:
    """Where an attempt's :func:`take_wake_restored` starts from: now."""
    return [WAKE_RESTORED[-1][0] if WAKE_RESTORED else 0]


def take_wake_restored(since: list[int]) -> list[str]:
    """The names :func:`put_back_wake_path` set back after *since* (from
    :func:`wake_restores_now`, moved on to the last one taken)."""
    taken = [(n, name) for n, name in list(WAKE_RESTORED) if n > since[0]]
    if taken:
        since[0] = taken[-1][0]
    return [name for _, name in taken]


def _spaces() -> tuple[tuple[Any, dict[str, Any], tuple[str, ...], tuple[Any, ...]], ...]:
    """Each module of :data:`_STDLIB_NAMES` and class of :data:`_WAKE_PATH` and
    :data:`_STDLIB`, with its namespace (a class's own dict, not the ``mappingproxy`` over
    it: a look-up through that calls the dict's ``get`` by name, twice the cost), the names
    looked at in it and what each was first bound to."""
    return tuple(
        [(module, vars(module), names, values) for module, names, values in _STDLIB_NAMES]
        + [(cls, _dict_of(cls), names, values) for cls, names, values in _WAKE_PATH + _STDLIB]
    )


_SPACES = _spaces()
_WORDS = _version_words([vars(builtins), *[space for _, space, _, _ in _SPACES]])
"""What reads the version of the builtins' dict and of each namespace of :data:`_SPACES`
now (:func:`groundstate.bindings._version_words`; None where CPython keeps none)."""
_FIRST_WORDS = b"" if _WORDS is None else _read(_WORDS).tobytes()
_FIRST_VERSIONS = () if _WORDS is None else tuple(_read(_WORDS).tolist())
"""Those versions as groundstate's import found them: bytes and a tuple, which no code can
edit (their names are the harness's, watched: :data:`groundstate.bindings.HARNESS`)."""


def _moved() -> list[int]:
    """The places in ``[builtins, *_SPACES]`` whose dict was written since groundstate's
    import (each written dict moves its version: see :func:`groundstate.bindings._versions`);
    every place where no version is kept. A written dict is looked at name by name ever
    after (``threading.excepthook``, set by pytest around each test, moves ``threading``'s)."""
    if _WORDS is None:
        return list(range(len(_SPACES) + 1))
    now = _read(_WORDS)
    if now.tobytes() == _FIRST_WORDS:  # the usual case: nothing written, one compare in C
        return []
    return [i for i, (a, b) in enumerate(zip(now.tolist(), _FIRST_VERSIONS, strict=True)) if a != b]


def put_back_wake_path(loop: Any) -> None:
    """Put back the builtins and the methods by which *loop* takes a callback from another
    thread (:data:`_WAKE_NAMES`), on its class and those of ``asyncio``'s loops and handles,
    and take out those set on *loop* itself. Called by the alarms' thread before it rings:
    an agent that set ``BaseEventLoop.call_soon_threadsafe`` (or ``_write_to_self``, or
    ``Handle._run``) to drop its call and then blocked held its attempt, and the batch,
    for ever (the outcome of its thread is delivered the same way). Each write moves the
    class's dict version: the attempt's look still names it (``written and put back``).

    Only the namespaces whose dict was written since groundstate's import are looked at
    name by name (:func:`_moved`): some 575 names, 50 µs a call when each was looked up,
    three to six calls per attempt."""
    stdlib = False
    for place in _moved():
        if place == 0:
            put_back_builtins()
            continue
        owner, now, names, values = _SPACES[place - 1]
        if _unchanged(now, names, values):
            continue
        module = place <= len(_STDLIB_NAMES)
        stdlib = stdlib or module or owner.__module__ != "asyncio.base_events"
        for name, value in zip(names, values, strict=True):
            if now.get(name, _MISSING) is value:
                continue
            if module:  # its namespace is written as it is
                now[name] = value
                _restored(f"{owner.__name__}.{name}")
                continue
            with suppress(Exception):
                if value is _MISSING:
                    _del_on_class(owner, name)
                else:
                    _set_on_class(owner, name, value)
                _restored(f"{owner.__module__}.{owner.__qualname__}.{name}")
    if stdlib:
        _started_meanwhile()
    own = getattr(loop, "__dict__", None)  # an instance of asyncio's loop classes has one
    if type(own) is dict:
        for name in _WAKE_NAMES:
            if own.pop(name, _MISSING) is not _MISSING:
                _restored(f"the event loop's own {name}")
        selector = own.get("_selector")
        mine = getattr(selector, "__dict__", None)
        if issubclass(type(selector), selectors.BaseSelector) and type(mine) is dict:
            for name in _SELECTOR_NAMES:
                if mine.pop(name, _MISSING) is not _MISSING:
                    _restored(f"the event loop's selector's own {name}")


_event_set, _event_is_set = threading.Event.set, threading.Event.is_set
_active, _limbo = threading._active, threading._limbo  # type: ignore[attr-defined]


def _started_meanwhile() -> None:
    """Tell the starter of each thread that has started, and found ``threading.Event.set``
    (or what it calls) dropped as it said so, that it has: ``Thread.start`` waited for ever
    (in a batch's loop: every attempt with it). A thread is started once it has its ident
    and its state's lock (set just before it says so). ``threading.Thread`` itself only:
    the harness's threads are (a subclass's attributes may be anyone's code)."""
    for thread in list(_active.values()) + list(_limbo):
        if type(thread) is not threading.Thread:
            continue
        own = vars(thread)
        started = own.get("_started")
        ready = own.get("_ident") is not None and own.get("_tstate_lock") is not None
        if ready and type(started) is threading.Event and not _event_is_set(started):
            with suppress(Exception):
                _event_set(started)


def wake(loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *args: Any) -> None:
    """Hand *callback* to *loop* from another thread, its wake path put back first (see
    :func:`put_back_wake_path`): an agent that set ``BaseEventLoop.call_soon_threadsafe`` to
    drop the call, and returned or blocked, held every attempt whose agent, or a wait in a
    thread, ended meanwhile (their ends dropped: recorded at their time limits) and the batch
    (an attempt's end dropped: the batch waits for it without an alarm) for ever. Raises
    ``RuntimeError`` when *loop* has closed."""
    put_back_wake_path(loop)
    loop.call_soon_threadsafe(callback, *args)


def _deliver(finished: asyncio.Future[Any], outcome: Outcome) -> None:
    """Settle *finished* with *outcome* (in its loop), unless it is done (cancelled)."""
    if finished.done():
        return
    error, value = outcome
    if error is None:
        finished.set_result(value)
    else:
        finished.set_exception(error)


async def in_thread(function: Callable[..., T], *args: Any) -> T:
    """``asyncio.to_thread(function, *args)`` for the harness's own waits (the end of a
    session a call still holds), its outcome handed back by :func:`wake`: one handed back
    by ``asyncio``'s own ``call_soon_threadsafe`` while an agent had set it to drop the call
    was lost, and the attempt waited for ever (no alarm runs after its agent's phase)."""
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[T] = loop.create_future()

    def run() -> None:
        outcome: Outcome
        try:
            outcome = (None, function(*args))
        except BaseException as exc:  # delivered: raised in the caller, as to_thread does
            outcome = (exc, None)
        with suppress(RuntimeError):  # the caller's loop has closed: nobody waits
            wake(loop, _deliver, finished, outcome)

    put_back_wake_path(loop)  # the executor's thread starts with threading's methods
    loop.run_in_executor(None, copy_context().run, run)
    return await finished


def _put_back(current: dict[str, Any], first: tuple[tuple[str, Any], ...]) -> None:
    """Bind each name of *first* in *current* as in *first* (names added since left alone).
    Nothing rebound, the usual case, is found in one pass in C (three times per attempt over
    the builtins' 160 names)."""
    if not first:
        return
    names, values = zip(*first, strict=True)
    if all(map(is_, map(current.get, names, repeat(_MISSING)), values)):
        return
    for name, value in first:
        if current.get(name, _MISSING) is not value:
            current[name] = value


def _put_back_registry(current: dict[Any, Any], first: tuple[tuple[Any, Any], ...]) -> bool:
    """*current* as *first* again, entries added since taken out (compared by identity);
    whether it differed."""
    if len(current) != len(first) or any(current.get(k, _MISSING) is not v for k, v in first):
        current.clear()
        current.update(first)
        return True
    return False


def _state(loop: asyncio.AbstractEventLoop) -> tuple[Any, ...]:
    """What one piece of work could leave on *loop* for the next (equal to a new loop's when
    it left nothing). Attributes this Python's loop lacks read as None on both sides."""
    selector = getattr(loop, "_selector", None)
    return (
        loop.is_closed(),
        tasks_left(loop),
        _live(getattr(loop, "_ready", ())),
        _live(getattr(loop, "_scheduled", ())),
        None if selector is None else len(selector.get_map()),
        len(getattr(loop, "_asyncgens", ())),
        getattr(loop, "_asyncgens_shutdown_called", None),
        getattr(loop, "_default_executor", None) is None,
        getattr(loop, "_executor_shutdown_called", None),
        loop.get_exception_handler() is None,
        loop.get_task_factory() is None,
        loop.get_debug(),
        getattr(loop, "slow_callback_duration", None),
        tuple(sorted(vars(loop))),  # a method replaced on the instance, say
    )


_REGISTRIES = {
    (3, 11): ("_all_tasks",),
    (3, 12): ("_scheduled_tasks", "_eager_tasks"),
    (3, 13): ("_scheduled_tasks", "_eager_tasks"),
}
"""Where ``asyncio.all_tasks`` finds the tasks on the Pythons whose registries are known: a
weak set (of every task of the process) and, from 3.12, a set of eager tasks."""


def tasks_left(loop: asyncio.AbstractEventLoop) -> int:
    """``len(asyncio.all_tasks(loop))``: the tasks of *loop* not done, counted without the
    set ``all_tasks`` builds. ``all_tasks`` walks every task of the process through a Python
    call each: with hundreds of attempts at once (a thousand tasks), 0.45 ms per piece of
    work, some 7% of an attempt's CPU; this walk costs about half. The registries are read
    as ``all_tasks`` reads them (a copy first: other threads add and drop tasks meanwhile);
    on a Python whose registries are not known, or for a task without ``get_loop``,
    ``all_tasks`` itself."""
    names = _REGISTRIES.get(sys.version_info[:2])
    if names is None:
        return len(asyncio.all_tasks(loop))
    left = 0
    try:
        for name in names:
            registry = getattr(asyncio.tasks, name)
            weak = isinstance(registry, weakref.WeakSet)
            for entry in (registry.data if weak else registry).copy():
                task = entry() if weak else entry
                if task is not None and task.get_loop() is loop and not task.done():
                    left += 1
    except AttributeError:  # a task of another implementation: ask asyncio
        return len(asyncio.all_tasks(loop))
    return left


def _live(handles: Any) -> int:
    """Callbacks still due (a cancelled timer stays queued until its time, harmlessly)."""
    return sum(not handle.cancelled() for handle in handles)


_IDLE: Parked[_LoopThread] = Parked()

_JOINED_AT_EXIT: MutableMapping[threading.Thread, Any] = getattr(
    _executor_threads, "_threads_queues", {}
)
"""The executors' threads Python joins as it exits (``concurrent.futures``'s registry; an
empty stand-in on a Python without one)."""
_EXIT_LOCK: Any = getattr(_executor_threads, "_global_shutdown_lock", threading.Lock())


def _take() -> _LoopThread:
    idle = _IDLE.take()
    return _LoopThread() if idle is None else idle


def submit(
    work: Work[T],
    name: str,
    done: Done,
    given_up: threading.Event | None = None,
    *,
    watched: bool = True,
) -> tuple[_LoopThread, _SharedHooks | None]:
    """Run *work* on an idle thread (a new one if none is idle); *done* gets its outcome
    there. The work runs in a copy of the caller's context, taken now. *given_up* is set
    when the caller stops waiting for the work (see :func:`abandon`). Returns the thread and
    the process-wide state as the work finds it (taken now, in the caller's thread), put
    back as the work ends; not *watched* (no untrusted code shares the interpreter: see
    :mod:`groundstate.untrusted`), None, and nothing put back."""
    worker, shared = _take(), _shared_hooks() if watched else None
    job = (work, name, copy_context(), done, given_up or threading.Event(), shared, handed())
    worker.give(job)
    return worker, shared


class _GivenUp(threading.Event):
    """Set by :func:`abandon`, or taken as set once the caller's event loop has closed (a
    batch torn down while an attempt's thread still ran: nobody waits for it any more).

    An object the work can reach (``gc.get_objects()``): what it says decides only what the
    work's thread puts back as the work ends. The caller puts back again from its own copy
    (:func:`put_back_after`, :func:`abandon`): an agent that set its event (``set()``,
    ``is_set`` shadowed) left its descriptor limit, umask, environment variables... to its
    own grading and to every later attempt in the process."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._loop = loop
        self.worker: _LoopThread | None = None

    def is_set(self) -> bool:
        return super().is_set() or self._loop.is_closed()


_GIVEN_UP: weakref.WeakKeyDictionary[asyncio.Future[Any], _GivenUp]
_GIVEN_UP = weakref.WeakKeyDictionary()


def abandon(finished: asyncio.Future[Any], shared: _SharedHooks | None) -> list[str]:
    """The caller stops waiting for the work of :func:`in_loop_thread` behind *finished* (an
    agent past its time limit), and ignores its outcome. The process-wide state the work
    changed so far is put back now, here, as it would be at the work's end (the harness has
    changed none of it while it waited): an agent stopped at its limit left its environment
    variables, resource limits, warning filters... to its own grading and to later attempts,
    for as long as its thread ran. When that work ends, its thread leaves
    ``sys.stdout``/``sys.stderr`` and the settings as they are: by then the harness may
    have moved on and put its own in place (a test runner capturing a command's output), which
    those of the piece's start would replace. (An agent that changes them after its limit is
    like one that does it from a thread of its own: the next attempt's routers still keep
    what attempts print apart, see :mod:`groundstate.capture`.) Calls it left running in its
    loop's executor are not waited for at exit. *shared*: the state as the work found it,
    which :func:`in_loop_thread` gave the caller (kept by the caller, not read from the
    work's event, which the work can edit: an agent that set it to None, or to its own
    ``sqlite3`` adapters, kept them past its limit). Returns what was put back, named."""
    finished.add_done_callback(_ignore_outcome)
    found = [] if shared is None else _put_back_shared(shared, streams=True)  # None: unwatched
    event = _GIVEN_UP.get(finished)
    if event is not None:
        # The class's ``set``: the work may have shadowed its own, or broken what it uses
        # (its ``_cond`` set to None made the time limit an error of the harness's).
        with suppress(Exception):
            threading.Event.set(event)
        worker = getattr(event, "worker", None)
        if isinstance(worker, _LoopThread):
            worker.not_joined_at_exit()
    return found


def put_back_after(shared: _SharedHooks | None) -> list[str]:
    """The work of :func:`in_loop_thread` has ended while its caller waited: put back what it
    changed of the process-wide state once more, from the caller's own copy *shared*. Its
    thread did so as the work ended unless the work's event said it was given up, which
    the work can make it say (``set()`` on it, its ``is_set`` shadowed). (Only what differs
    is set: as the work's thread left it, this changes nothing.) None: not watched.
    Returns what was put back, by its thread or here, named (for the attempt's record)."""
    if shared is None:
        return []
    found = _put_back_shared(shared, streams=True)
    noted = _PUT_BACK.pop(id(shared), None)
    if noted is not None and noted[0] is shared:
        found = [*noted[1], *found]
    return list(dict.fromkeys(found))


_PUT_BACK: dict[int, tuple[_SharedHooks, list[str]]] = {}
"""What the threads of :func:`submit` put back as each piece ended, by the state read as it
began (the caller's own copy, held here: its ``id`` is no other's meanwhile), for
:func:`put_back_after` to name. Bounded (:data:`_PUT_BACK_KEPT`): nobody takes what a piece
whose caller does not wait for it put back."""

_PUT_BACK_KEPT = 64


def _note_put_back(shared: _SharedHooks, names: list[str]) -> None:
    _PUT_BACK[id(shared)] = shared, names
    with suppress(KeyError, RuntimeError, StopIteration):  # (another thread took it)
        while len(_PUT_BACK) > _PUT_BACK_KEPT:
            del _PUT_BACK[next(iter(_PUT_BACK))]


def _ignore_outcome(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def in_loop_thread(
    work: Work[T],
    name: str,
    *,
    crashes: bool = True,
    kept: list[_SharedHooks | None] | None = None,
    watched: bool = True,
) -> asyncio.Future[T]:
    """:func:`submit` *work*; its result or exception arrives on the returned future of the
    running loop. The thread is a daemon, so work the caller stopped waiting for (an agent
    past its limit) never holds the process open at exit. With *crashes*, ``SystemExit``,
    ``KeyboardInterrupt`` and the like arrive as crashes (``RuntimeError``), as suits an
    agent; without, they arrive as raised. *kept*, a list of the caller's own, is given the
    process-wide state as the work finds it, for :func:`abandon` and
    :func:`put_back_after` (None when not *watched*: see :func:`submit`)."""
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[T] = loop.create_future()
    given_up = _GIVEN_UP[finished] = _GivenUp(loop)

    def done(outcome: Outcome) -> None:
        if crashes and outcome[0] is not None:  # here: its text may be the agent's code
            outcome = (as_exception(outcome[0]), None)
        with suppress(RuntimeError):  # the caller gave up waiting and its loop has closed
            wake(loop, _deliver, finished, outcome)

    given_up.worker, shared = submit(work, name, done, given_up, watched=watched)
    if kept is not None:
        kept.append(shared)
    return finished


def as_exception(exc: BaseException) -> Exception:
    """Agents may raise ``SystemExit``, ``KeyboardInterrupt`` or ``CancelledError`` (a task
    they left on their loop, say): crashes. Read in the worker's thread, and the crash keeps
    no reference to *exc*: its ``__str__`` is the agent's code, which the caller's thread
    must never run (it may hang, or raise ``SystemExit`` there)."""
    if isinstance(exc, Exception) and issubclass(type(exc), Exception):  # the real type
        return exc
    return RuntimeError(f"the agent raised {type_name(type(exc))}: {text_of(exc)}")


def idle_threads() -> int:
    """How many threads wait for work (for tests and the bench)."""
    return len(_IDLE)
