"""What the code under evaluation prints is kept with its attempt, never mixed into ours.

An agent or a Python check that calls ``print()`` (or writes to ``sys.stderr``) during an
attempt would otherwise write into groundstate's own output and corrupt ``run --json``. While
an attempt runs, ``sys.stdout`` and ``sys.stderr`` are routers: a write made in the attempt's
context (its task, the agent's thread, a check's thread: :func:`in_context` carries it over)
goes to that attempt's :class:`Output`, which is stored as the run's ``stdout.txt`` and
``stderr.txt`` artifacts; any other write goes to the real stream, as before. Concurrent
attempts each keep their own output.

Not captured: writes to file descriptors 1 and 2 directly (``os.write``, subprocesses, C
extensions), ``sys.__stdout__``, and threads the agent starts itself without copying its
context (``contextvars.copy_context``); ``run --json`` sets the real descriptor 1 aside for
its JSON, so these cannot break it.
"""

from __future__ import annotations

import io
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar, copy_context
from typing import Any, TextIO

from groundstate.returned import type_name
from groundstate.trace import recordable

MAX_CHARS = 1_000_000
"""Characters kept per stream and attempt; the rest is counted, not stored."""

ARTIFACTS = {"stdout": "stdout.txt", "stderr": "stderr.txt"}


class Output:
    """What one attempt's code printed, per stream."""

    def __init__(self) -> None:
        self._parts: dict[str, list[str]] = {name: [] for name in ARTIFACTS}
        self._kept = dict.fromkeys(ARTIFACTS, 0)
        self._dropped = dict.fromkeys(ARTIFACTS, 0)
        self._lock = threading.Lock()  # the agent's thread and a check's may both write

    def write(self, stream: str, text: str) -> None:
        with self._lock:
            room = max(MAX_CHARS - self._kept[stream], 0)
            if room:  # past the cap nothing is kept, not even an empty part per write
                self._parts[stream].append(text[:room])
                self._kept[stream] += min(len(text), room)
            self._dropped[stream] += max(len(text) - room, 0)

    def text(self, stream: str) -> str:
        with self._lock:
            text = "".join(self._parts[stream])
            dropped = self._dropped[stream]
        return text + (f"\n[{dropped} more characters not kept]\n" if dropped else "")

    def artifacts(self) -> dict[str, str]:
        """``stdout.txt`` and ``stderr.txt``, each only if something was written to it, as
        recordable text (a lone surrogate printed is kept escaped: stored as it was, UTF-8
        would refuse it, and with it the attempt's record and the batch)."""
        texts = {name: recordable(self.text(stream)) for stream, name in ARTIFACTS.items()}
        return {name: text for name, text in texts.items() if text}


_CURRENT: ContextVar[Output | None] = ContextVar("groundstate_output", default=None)


class _Router:
    """Stands in for ``sys.stdout``/``sys.stderr``: routes each write by the writer's context."""

    def __init__(self, stream: TextIO, name: str) -> None:
        self._given = stream
        self._name = name

    @property
    def _stream(self) -> TextIO:
        """The stream behind: for a router the harness put in (:func:`_install`), held outside
        it, set only by the harness (an agent's ``sys.stdout._stream = its_own`` is
        refused)."""
        made = _MADE.get(id(self))
        return made[1] if made is not None and made[0] is self else self._given

    def write(self, text: str) -> int:
        output = _CURRENT.get()
        if output is None:
            return self._stream.write(text)
        # As a text stream: a str only, kept as its plain characters. Anything else kept
        # here (bytes, an object with __len__) would break the attempt's record when its
        # output is joined, in the harness, after the agent has ended.
        if not issubclass(type(text), str):
            raise TypeError(f"write() argument must be str, not {type_name(type(text))}")
        text = str.__str__(text)
        output.write(self._name, text)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if _CURRENT.get() is None:
            self._stream.flush()

    def close(self) -> None:
        """Nothing: the stream behind is the harness's (an agent's ``sys.stdout.close()``
        closed it, and the batch's report then failed with a traceback)."""

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, fileno...: the real stream's
        return getattr(self._stream, name)

    def mend(self) -> None:
        """Put back the real stream when code under evaluation closed it
        (``sys.__stdout__.close()``) or its descriptor (``os.close(1)``, after which the next
        file the process opens takes that number): the harness's later output (the batch's
        report) failed with a traceback, or went into that file. It goes on through the copy
        of the descriptor made as the router was put in (a closed descriptor is set to it
        again, for ``os.write`` and subprocesses)."""
        spare = _SPARES.get(id(self._stream))
        if spare is None:
            return
        _, fd, copy, file = spare
        now = _file(fd)
        if now == file and not self._stream.closed:
            return
        if now is None:
            with suppress(OSError):
                os.dup2(copy, fd)
        stream = self._stream
        with suppress(OSError, ValueError):
            mended = open(  # noqa: SIM115  (the stream lives as long as the process)
                copy, "w", buffering=1 if stream.line_buffering else -1,
                encoding=stream.encoding, errors=stream.errors, closefd=False,
            )  # fmt: skip
            _MADE[id(self)] = self, mended
            _SPARES[id(mended)] = mended, copy, copy, file


_MADE: dict[int, tuple[_Router, TextIO]] = {}
"""The routers the harness made (by ``id``, each checked to be that very object), each with
the stream behind it. A router an agent makes (``type(sys.stdout)(its_own, "stdout")``) is
not one: it is taken out like any stream of its own."""


def _ours(stream: Any) -> bool:
    """Whether *stream* is a router the harness made, still of its class (an agent's
    ``sys.stdout.__class__ = ...`` is undone)."""
    made = _MADE.get(id(stream))
    if made is None or made[0] is not stream:
        return False
    if type(stream) is not _Router:
        with suppress(TypeError):
            object.__setattr__(stream, "__class__", _Router)
    return type(stream) is _Router


_IN_FLIGHT = [0]
"""How many :func:`captured` blocks are open (attempts whose code may run now)."""
_flight_lock = threading.Lock()


_SPARES: dict[int, tuple[Any, int, int, tuple[int, int]]] = {}
"""``id`` of each real stream the routers were put in front of, on a descriptor: it (kept:
its ``id`` is never another's), that descriptor, a copy of it made then, and the file both
were (see :meth:`_Router.mend`)."""


def _file(fd: int) -> tuple[int, int] | None:
    try:
        found = os.fstat(fd)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def descriptors_moved() -> None:
    """The harness set descriptor 1 or 2 to another file on purpose (``run --json`` sets the
    real standard output aside, a pool worker sends 1 to 2): the copies streams are mended
    from follow (else a stream mended after an agent's ``os.close(1)`` wrote to the file set
    aside: the JSON)."""
    for key, (stream, fd, copy, _) in list(_SPARES.items()):
        file = _file(fd)
        if file is not None and fd != copy:
            with suppress(OSError):
                os.dup2(fd, copy)
                _SPARES[key] = stream, fd, copy, file


def _install() -> None:
    """Put routers in front of the current streams (again, if something swapped them since).
    One put in while attempts run is in front of what may be an attempt's code's object: it
    is not the harness's to keep (:func:`put_back_streams` takes it out with that object as
    the code's run ends). Before, every router was kept: the next attempt to start put one
    in front of an agent's object, and every later line of the harness's report went
    through the agent's code (which could block it or rewrite it)."""
    for name in ARTIFACTS:
        stream = getattr(sys, name)
        if _ours(stream):
            continue
        router = _Router(stream, name)
        if not _IN_FLIGHT[0]:
            _MADE[id(router)] = router, stream
        setattr(sys, name, router)
        _keep_spare(stream)


def _keep_spare(stream: Any) -> None:
    if type(stream) is io.TextIOWrapper and id(stream) not in _SPARES:
        with suppress(OSError, ValueError):
            fd = stream.fileno()
            file = _file(fd)
            if file is not None:
                _SPARES[id(stream)] = stream, fd, os.dup(fd), file


def streams() -> tuple[Any, ...]:
    """``sys.stdout`` and ``sys.stderr`` now (for :func:`put_back_streams`)."""
    return tuple([getattr(sys, name) for name in ARTIFACTS])  # a list: see bindings._items


def put_back_streams(saved: tuple[Any, ...]) -> None:
    """Put back the streams of :func:`streams` that code under evaluation replaced with an
    object of its own: the harness's later output (``run --json``) would go through it.
    Routers installed meanwhile (an attempt starting) stay."""
    for name, stream in zip(ARTIFACTS, saved, strict=True):
        current = getattr(sys, name)
        if current is not stream and not _ours(current):
            setattr(sys, name, stream)
        if _ours(getattr(sys, name)):
            getattr(sys, name).mend()


@contextmanager
def captured() -> Iterator[Output]:
    """Route what the code of this context prints to a new :class:`Output`."""
    with _flight_lock:
        _install()
        _IN_FLIGHT[0] += 1
    output = Output()
    token = _CURRENT.set(output)
    try:
        yield output
    finally:
        _CURRENT.reset(token)
        with _flight_lock:
            _IN_FLIGHT[0] -= 1


@contextmanager
def held() -> Iterator[Output]:
    """Within an attempt, its :class:`Output`; elsewhere (a check graded while validating a
    suite, say) a new one that nobody reads: either way, nothing reaches our streams."""
    current = _CURRENT.get()
    if current is not None:
        yield current
        return
    with captured() as output:
        yield output


def in_context(target: Callable[[], None]) -> Callable[[], None]:
    """*target* bound to the caller's context, for a new thread (threads start without it)."""
    context = copy_context()
    return lambda: context.run(target)
