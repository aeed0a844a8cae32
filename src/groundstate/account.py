"""An attempt's account: its steps, stops and trace, kept where an agent's code cannot undo them.

An in-process agent shares the harness's objects. Through ``session._session``, the garbage
collector (``gc.get_objects()``) or a frame, it reached the episode's session and, after a
stop, set its ``stop`` to ``None`` (or its step count to 0) and did the task: a success for
a prohibited action or a step limit. Edited the trace, it could drop the call a constraint
fails on. Python has no private memory; but the local variables of a suspended generator
cannot be rebound by Python code (a frame's ``f_locals`` is a copy, up to Python 3.12), and
immutable values in them cannot be edited. :class:`Account` keeps there the step count,
every stop latched (with what it was when latched), the usage reported and every trace
event's JSON line as it was appended. The session reads its step count, its stop, its cost
and its tokens from the account, so none can be set back; the episode compares the trace
with the account's as it builds the record (``episode._untrue``) and keeps the account's.

Python code can rebind them in one way: a trace or profile function (``sys.settrace``,
``sys.setprofile``) on the thread that resumes the generator is called with its frame, and
up to Python 3.12 what it writes to that frame's ``f_locals`` is written back to its
variables. An agent that set one and made a session call cleared the stop latched before
(and its steps), then did the task: a success. The generators are therefore resumed with
the thread's trace and profile functions off (:func:`resumed`), put back after. Code of the
agent's that resumes the generator itself (``account._kept.send(...)``) under a tracer of its
own can still rewrite it, but not the counts kept apart in C (:class:`Counts`), which the
episode compares with it as the attempt ends.

What this does not stop: an agent that closes the account (its stop then is a prohibited
action, see :data:`CLOSED`), rebinds the session's account to one of its own and back while
it acts, or, on Python 3.13 and later (``f_locals`` writes through), rebinds the
generator's own variables. The first is found as the attempt ends when what it did reached
the environment: the environment's :class:`Tally` of the calls it entered exceeds the calls
in the account, or the account holds a denied call or steps past the limit with no stop
(``episode._outside_session``, ``episode._unlatched``).
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Generator
from itertools import count
from typing import Any, NamedTuple, ParamSpec, TypeVar

_Y = TypeVar("_Y")
_P = ParamSpec("_P")

CLOSED = "the attempt's account was closed or broken by code of the agent's"
"""Why an attempt whose account no longer answers is stopped."""
WAIT = 10.0
"""Seconds to wait for the account's lock (held for a moment by each send) before it counts
as broken: code of the agent's that took the lock must not hold up the episode's thread,
which runs every attempt."""


def resumed(generator: Generator[_Y, Any, None], value: Any) -> _Y:
    """``generator.send(value)`` with this thread's trace and profile functions off: one of
    the agent's would be called with the generator's frame and could rewrite its variables
    (see the module). Put back after (a coverage tracer, a profiler running the harness)."""
    return untraced(generator.send, value)


def untraced(action: Callable[..., _Y], *args: Any, **kwargs: Any) -> _Y:
    """``action(*args, **kwargs)`` with this thread's trace and profile functions off, put
    back after. The session's calls run the harness's code (the gateway, the environment's
    authorizer, the suite's tools) in the agent's own thread: a trace function of the
    agent's there (``sys.settrace``, ``sys.setprofile``) was called with each of their
    frames, and what it wrote to a frame's ``f_locals`` was written back (up to Python 3.12;
    from 3.13 it writes through), or it jumped over lines (``frame.f_lineno``). One that set
    the authorizer's ``action`` to a ``SELECT`` read a table its task forbids, with no
    denial: a ``success``."""
    trace, profile = sys.gettrace(), sys.getprofile()
    if trace is None and profile is None:  # the usual case: nothing to turn off, or import
        return action(*args, **kwargs)
    from groundstate.loopthreads import put_back_hooks  # (it imports more than this needs)

    sys.settrace(None)
    sys.setprofile(None)
    try:
        return action(*args, **kwargs)
    finally:
        put_back_hooks(trace, profile)


def untraced_entry(method: Callable[_P, _Y]) -> Callable[_P, _Y]:
    """*method*, run :func:`untraced`: for the session's entry points the agent calls."""

    @functools.wraps(method)
    def entry(*args: _P.args, **kwargs: _P.kwargs) -> _Y:
        if sys.gettrace() is None and sys.getprofile() is None:  # one frame less, usually
            return method(*args, **kwargs)
        return untraced(method, *args, **kwargs)

    return entry


class Kept(NamedTuple):
    """What the account holds, read at once."""

    steps: int
    lines: tuple[Any, ...] | None
    """The trace's JSON lines, newest first, as nested pairs ``(line, older)``."""
    stops: tuple[tuple[Any, ...], ...]
    """Every stop latched, in order: ``(stop, its type, error, the error's type, stage, step,
    at)``, as it was latched."""

    def trace_lines(self) -> list[str]:
        """The trace's JSON lines, oldest first."""
        lines, node = [], self.lines
        while node is not None:
            lines.append(node[0])
            node = node[1]
        lines.reverse()
        return lines

    usage: tuple[int, int, float, int]
    """Input tokens, output tokens and cost reported, and how many reports said their usage
    is not known (an API that answered without counting its tokens)."""


def _kept() -> Generator[Kept, tuple[str, Any], None]:
    steps, usage = 0, (0, 0, 0.0, 0)
    lines: tuple[Any, ...] | None = None
    stops: tuple[tuple[Any, ...], ...] = ()
    while True:
        what, value = yield Kept(steps, lines, stops, usage)
        if what == "usage":
            usage = (
                usage[0] + value[0],
                usage[1] + value[1],
                usage[2] + value[2],
                usage[3] + value[3],
            )
        elif what == "step":
            steps += 1
        elif what == "line":
            lines = (str(value), lines)
        elif what == "stop":
            error = value.error
            kept = (value, type(value), error, type(error), value.stage, value.step, value.at)
            stops = (*stops, kept)


class Counts(NamedTuple):
    """How many steps, trace lines and stops an :class:`Account` took in, counted apart from
    its generator in C (``itertools.count``: it only counts up; no Python code sets it back).
    A tracer of the agent's that resumes the generator itself (``account._kept.send``) can
    rewrite its variables, erase a stop, empty the trace; it cannot take these counts back,
    and the episode, which holds them from the account's start, compares the two as the
    attempt ends (``episode._untrue``)."""

    steps: count[int]
    lines: count[int]
    stops: count[int]

    def read(self) -> tuple[int, int, int]:
        return _value(self.steps), _value(self.lines), _value(self.stops)


def _value(counter: count[int]) -> int:
    """What ``next(counter)`` would give, read without taking it (``count(5)``)."""
    return int(repr(counter).partition("(")[2].rstrip(")") or 0)


_COUNTED = {"step": 0, "line": 1, "stop": 2}


class AccountClosed(Exception):
    """The account no longer answers: code of the agent's closed or broke its generator."""


class Account:
    """One attempt's account (see the module). Made by the episode, which keeps it too."""

    __slots__ = ("_kept", "_lock", "counts")

    def __init__(self) -> None:
        self._kept = _kept()
        next(self._kept)
        self._lock = threading.Lock()
        self.counts = Counts(count(), count(), count())
        """What it took in, counted apart (see :class:`Counts`): the episode keeps them as
        the account is made."""

    def _send(self, what: str, value: Any = None) -> Kept:
        if not self._lock.acquire(timeout=WAIT):  # a generator refuses a second thread
            raise AccountClosed(CLOSED)
        try:
            kept = resumed(self._kept, (what, value))
            counted = _COUNTED.get(what)
            if counted is not None:
                next(self.counts[counted])
            return kept
        except Exception as exc:  # closed (StopIteration), thrown into, sent to meanwhile
            raise AccountClosed(CLOSED) from exc
        finally:
            self._lock.release()

    def read(self) -> Kept:
        return self._send("read")

    def agrees_with(self, counts: Counts) -> bool:
        """Whether the generator holds as many steps, trace lines and stops as *counts* (the
        account's own, kept by the episode since it was made) took in: read together, under
        the lock each send holds."""
        if not self._lock.acquire(timeout=WAIT):
            raise AccountClosed(CLOSED)
        try:
            kept = resumed(self._kept, ("read", None))
            taken = counts.read()
        except Exception as exc:
            raise AccountClosed(CLOSED) from exc
        finally:
            self._lock.release()
        lines, node = 0, kept.lines
        while node is not None:
            lines, node = lines + 1, node[1]
        return (kept.steps, lines, len(kept.stops)) == taken

    def take_step(self) -> int:
        """Count a step; return its number."""
        return self._send("step").steps

    def add_usage(
        self, input_tokens: int, output_tokens: int, cost: float, *, unknown: bool = False
    ) -> None:
        """Add one usage report (plain numbers, checked by the session); *unknown*: a report
        whose usage is not known (counted apart, adding nothing)."""
        self._send("usage", (int(input_tokens), int(output_tokens), float(cost), int(unknown)))

    def keep_line(self, line: str) -> None:
        """Keep a trace event's JSON line as it is now."""
        self._send("line", line)

    def keep_stop(self, stop: Any) -> None:
        """Keep a latched stop (a :class:`groundstate.episode.Stop`) as it is now."""
        self._send("stop", stop)

    def trace_lines(self) -> list[str]:
        """The trace's JSON lines, oldest first."""
        return self.read().trace_lines()


def _tally() -> Generator[int, object, None]:
    count = 0
    while True:
        count += (yield count) is True  # only ever up: a value sent by hand cannot set it back


class Tally:
    """A count that code of the agent's cannot set back (kept as :class:`Account` keeps its
    steps): the tool transactions an environment entered, which the episode compares with
    the calls in the attempt's account (``episode._outside_session``). Made for each
    environment as it is made (:class:`groundstate.environments.base.ClosesOnExit`). Its
    generator only counts up: ``send(-3)`` (or any value but ``True``) reads it."""

    __slots__ = ("_count", "_lock")

    def __init__(self) -> None:
        self._count = _tally()
        next(self._count)
        self._lock = threading.Lock()

    def _send(self, value: object) -> int:
        if not self._lock.acquire(timeout=WAIT):  # held by code of the agent's
            return -1
        try:
            return resumed(self._count, value)
        except Exception:  # closed (StopIteration), thrown into, sent to meanwhile
            return -1
        finally:
            self._lock.release()

    def add(self) -> None:
        """Count one call (a call not counted, its lock held or the count broken by code of
        the agent's, is found as the count disagrees with the trace)."""
        self._send(True)

    def read(self) -> int:
        """The count, or -1 once code of the agent's closed or broke it."""
        return self._send(None)


def altered(entry: tuple[Any, ...]) -> bool:
    """Whether a kept stop was changed since it was latched (its error, the error's class,
    its stage swapped: ``object.__setattr__`` passes a frozen dataclass)."""
    stop, kind, error, error_kind, stage, _, _ = entry
    return (
        type(stop) is not kind
        or type(error) is not error_kind
        or stop.error is not error
        or stop.stage is not stage
    )
