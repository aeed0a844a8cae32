"""Who ended the process: while an in-process batch runs, the calls that end a process at
once (``os._exit``, ``os.abort``, ``os.execv``/``os.execve``, ``os.kill``/``os.killpg`` of
this process or its group, ``signal.raise_signal``/``signal.pthread_kill``, with a signal
this process does not handle) are wrapped: before calling through, the wrapper writes what
was called onto the store's marks of the tries in flight (:meth:`RunStore.mark_started`), in
a transaction of its own. A resume then records a try whose mark names a cause as the
agent's crash, and runs a try whose mark names none again: its process was ended from
outside (SIGKILL, the out-of-memory killer, a power loss), which is no verdict on the agent.

The call is laid at the door of the try whose code made it when it is known (the attempt's
context, which its tasks and ``asyncio.to_thread`` inherit); a call from a thread without
one (a thread the agent started) marks every try in flight: the harness itself never ends
the process so while tries run (its forced exits, a second Ctrl-C's among them, call
:data:`groundstate.leftovers.harness_exit`).

A call made in a try's context once its grading has started (:func:`grading_starts`, as a
pool worker tells its parent: no code of an agent's could still run then) is a check's (a
Python constraint or outcome check that ends the process): its mark says so (``grading``),
and the resume records a grader failure, rerun under the invalid-run policy, as the pool does.

The same wrappers refuse SIGINT and SIGTERM an agent's code sends this process while a
handler of Python's takes them (``run``'s: they would stop the batch as the user's Ctrl-C
does, the agent's try unstored and run again on resume): ``PermissionError``, the signal
never sent, and the try noted (:func:`interruption_sent`), which the episode makes its
prohibited action. Whose code it is: see :func:`_agents_sending`.

Module globals bound to the originals before the batch (``from os import _exit`` at an
agent's import) are bound to the wrappers while it runs. Not seen: a call into libc through
``ctypes``, a reference kept elsewhere (a default argument, a class attribute), a crash in C
code (a segmentation fault of a native extension), a child process that kills its parent:
such a try is run again on resume. Nothing runs in a process ended by ``_exit`` or SIGKILL
(no ``atexit`` handler), so only a call seen before it is made can be named; the pool, which
reads its workers' exit status, records those as the agent's crash.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import Context, ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from groundstate.bindings import HARNESS
from groundstate.leftovers import ENDED_BY_USER_CODE
from groundstate.ourthreads import Threads, foreign, present
from groundstate.store import note_exit_cause

TRY: ContextVar[str | None] = ContextVar("groundstate_try", default=None)
"""The run id of the try whose code runs here (set by the in-process executor)."""

WATCHED: ContextVar[bool] = ContextVar("groundstate_watched", default=False)
"""Whether the try whose code runs here was marked in flight by a batch (set by
:meth:`ExitWatch.started`, in the context the try is run from): an agent's work past its
try's end is still a batch's agent's (its interruption refused, laid at no try), where the
canary's oracle and the smoke run, never marked, pass. Held by the context, not in a set of
ended tries, which grew by one per try over a long batch."""


_NOT_ENDING = ("SIGCHLD", "SIGURG", "SIGWINCH", "SIGCONT", "SIGSTOP", "SIGTSTP", "SIGTTIN",
               "SIGTTOU")  # fmt: skip
_HARMLESS = {getattr(signal, name) for name in _NOT_ENDING if hasattr(signal, name)}
"""Signals whose default action does not end the process."""


def _fatal(sig: int) -> bool:
    """Whether *sig* ends this process: ``SIGKILL``, or one left to its default action (or
    to a handler set outside Python); one handled or ignored (the harness's interrupts) not."""
    try:
        sig = int(sig)
    except (TypeError, ValueError):
        return False
    if sig == getattr(signal, "SIGKILL", -1):
        return True
    if sig <= 0 or sig in _HARMLESS:
        return False
    try:
        handler = signal.getsignal(sig)
    except (ValueError, OSError):
        return False
    return handler is signal.SIG_DFL or handler is None


def _ours(pid: int) -> bool:
    """Whether ``kill(pid, ...)`` reaches this process: itself or its group (``kill(-1)``
    spares its caller)."""
    return pid in (0, os.getpid(), -os.getpgrp())


@dataclass
class ExitWatch:
    """The tries of one batch in flight in this process, and their store."""

    store: Path
    in_flight: set[str] = field(default_factory=set)
    grading: set[str] = field(default_factory=set)
    """The tries in flight whose grading has started (:func:`grading_starts`)."""
    known: Threads = field(default_factory=present)
    """The threads of this process before the batch (its host's, an earlier batch's): not an
    agent's of this batch (told by identity: a name is anyone's to give)."""
    unlisted: frozenset[int] = field(default_factory=lambda: _native())
    """The native threads before the batch (its host's C code's): see ``_agents_alive``."""
    since: int = field(default_factory=lambda: _handed())
    """The work handed to loop threads from here on is the batch's (an agent's left running
    by an earlier batch is not: :func:`~groundstate.loopthreads.handed`)."""

    def started(self, run_id: str) -> None:
        """Note *run_id* in flight; called in the context its try is run from (see
        :data:`WATCHED`)."""
        WATCHED.set(True)
        with _lock:
            self.in_flight.add(run_id)

    def ended(self, run_id: str) -> None:
        with _lock:
            self.in_flight.discard(run_id)
            self.grading.discard(run_id)


def _handed() -> int:
    from groundstate.loopthreads import handed  # it imports this module's importers

    return handed()


def _native() -> frozenset[int]:
    from groundstate.executors._job import native_threads  # it imports this module

    return native_threads()


def grading_starts() -> None:
    """Note that the grading of the try whose context this is starts (the in-process
    executor's :data:`~groundstate.episode.GRADING`): a process-ending call made in its
    context from then on is its checks'. Not noted while code that could make such a call
    in its context may still run (the determination a pool worker makes before it says its
    grading starts): its own agent's work (past its time limit), or a thread not the
    harness's nor the host's (whatever try's agent left it, it may run code in any
    context it took along). Another try's agent, still at work, is no bar: it runs in its
    own try's context, where a call it makes is laid at its own door; nor is a child
    process, whose calls end only itself."""
    from groundstate.executors._job import _agents_alive  # it imports this module

    run_id = TRY.get()
    with _lock:
        watches = [w for w in _watches if run_id in w.in_flight]

    def its_own(context: Context) -> bool:
        return context.get(TRY) == run_id

    for watch in watches:
        if not _agents_alive(watch.known, its_own, watch.unlisted, since=watch.since):
            with _lock:
                watch.grading.add(run_id)  # type: ignore[arg-type]


_lock = threading.RLock()
_watches: list[ExitWatch] = []
_owner = 0  # the process that installed the wrappers (a forked child ends only itself)


def _blame(call: str, undo: bool = False) -> None:
    """Write who made *call* onto the marks of the tries in flight it is laid at (or, with
    *undo*, take it back: the call failed). Never raises: the call goes on."""
    if os.getpid() != _owner:
        return
    run_id = TRY.get()
    with _lock:
        flights = [(w.store, set(w.in_flight), run_id in w.grading) for w in _watches]
    if any(run_id in ids for _, ids, _ in flights):
        flights = [(store, {run_id}, grading) for store, ids, grading in flights if run_id in ids]
    for store, ids, grading in flights:
        if ids:
            who = "a check called" if grading else "the agent called"
            with suppress(Exception):
                note_exit_cause(store, sorted(ids), f"{who} {call}", undo=undo, grading=grading)


def _wrap(name: str, original: Callable[..., Any], ends: Callable[..., bool]) -> Any:
    def wrapper(*args: Any) -> Any:
        if not _watches:
            return original(*args)
        if _interrupts(name, args):
            senders = _agents_sending()
            if senders is not None:
                _refuse(senders, f"{name}({', '.join(map(_shown, args))})")
        if not ends(*args):
            return original(*args)
        call = f"{name}({', '.join(map(_shown, args))})"
        _blame(call)
        if original is _os_exit and args and os.getpid() == _owner:
            args = (_said(call, args[0]), *args[1:])
        try:
            return original(*args)
        except BaseException:  # refused (a bad argument, no such group): nothing ended
            _blame(call, undo=True)
            raise
        # Returned: kept. A fatal signal may end the process a moment after its sender's
        # call returns (one that dumps core, sent to another thread): taken back, it would
        # leave the try to run again. A try that goes on is stored, its mark removed.

    wrapper.__name__ = wrapper.__qualname__ = original.__name__
    wrapper.__doc__ = original.__doc__
    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    return wrapper


_os_exit = os._exit

INTERRUPTS = (signal.SIGINT, signal.SIGTERM)
"""The signals that interrupt a batch (``run``'s handlers; Python's own for SIGINT)."""

_AIMED: dict[str, Callable[..., bool]] = {
    "os.kill": lambda pid, sig: isinstance(pid, int) and _ours(pid),
    "os.killpg": lambda pgid, sig: isinstance(pgid, int) and pgid in (0, os.getpgrp()),
    "signal.raise_signal": lambda sig: True,
    "signal.pthread_kill": lambda thread, sig: True,  # a thread of this process
}
"""For each call that sends a signal, whether it sends it to this process."""

_sent: dict[str, str] = {}
"""The tries whose agent sent this process an interruption (refused): their run id → the
call (read by the episode, :func:`interruption_sent`)."""
_disrupted: dict[str, str] = {}
"""The tries in flight when code in the process disrupted the batch's event loop: their run
id → what it did (:func:`loop_disrupted`)."""


def _interrupts(name: str, args: tuple[Any, ...]) -> bool:
    """Whether the call *name* with *args* would interrupt the batch: SIGINT or SIGTERM sent
    to this process while a handler of Python's (``run``'s, or ``KeyboardInterrupt``'s)
    takes it. (Left to its default action, SIGTERM ends the process: a crash, as above.)"""
    aimed = _AIMED.get(name)
    try:
        if aimed is None or not aimed(*args) or int(args[-1]) not in INTERRUPTS:
            return False
        return callable(signal.getsignal(int(args[-1])))
    except Exception:  # refused by the call itself (a bad argument)
        return False


def _agents_sending() -> list[str] | None:
    """The tries in flight an agent's call being made now is laid at, or None when it is not
    an agent's. An agent's: made in a thread at an agent's work (told by the work the
    harness gave it, which the agent's code cannot rename: laid at its try, at none once
    that try has ended, as for an agent left running past its time limit), or in a try's
    context (its tasks, ``asyncio.to_thread``) while it is in flight and not graded (then a
    check's), or in a thread neither the harness's nor its host's without a try's context
    (a thread an agent started: laid at every try in flight, as a process-ending call is).
    The user's Ctrl-C does not pass here, nor is a host's thread's or the main thread's."""
    from groundstate.loopthreads import working  # it imports this module's importers

    with _lock:
        flights = set().union(*[w.in_flight for w in _watches])
        grading = set().union(*[w.grading for w in _watches])
        known = [w.known for w in _watches]
    me = threading.current_thread()
    name, context = working().get(id(me), ("", None))
    if context is not None and name.startswith("agent-"):
        run_id = context.get(TRY)
        if run_id in flights:
            return [run_id]
        return [] if context.get(WATCHED) else None  # the canary's oracle, the smoke run: not
    run_id = TRY.get()
    if run_id is not None:
        return [run_id] if run_id in flights and run_id not in grading else None
    if me is threading.main_thread() or any(k.get(id(me)) is me for k in known):
        return None
    return sorted(flights) if flights and any(t is me for t in foreign()) else None


def agents_acting() -> list[str] | None:
    """The tries in flight whose agent's code makes the call being made now in this thread
    (see :func:`_agents_sending`), or None when it is none of theirs (the harness's, its
    host's, a check's)."""
    if not _watches:
        return None
    return _agents_sending()


def _refuse(run_ids: list[str], call: str) -> None:
    """Note *call* against each try of *run_ids* and refuse it: the signal is not sent."""
    with _lock:
        for run_id in run_ids:
            _sent.setdefault(run_id, call)
    raise PermissionError(
        errno.EPERM,
        f"{call}: an agent may not interrupt the batch it runs in (its attempt is stopped)",
    )


def interruption_sent(run_id: str | None) -> str | None:
    """The call by which the agent of the try *run_id* sent this process SIGINT or SIGTERM
    while a batch ran it in-process (refused: see :func:`_refuse`), if any."""
    with _lock:
        return _sent.get(run_id) if run_id is not None else None


def loop_disrupted(what: str, culprits: set[str]) -> bool:
    """Note that code in the process *what* (stopped the batch's event loop, raised
    ``SystemExit`` in it: :mod:`groundstate.steadyloop`, which runs it again) against each
    try of *culprits* still in flight: the tries whose code made the call, told as it was
    made (:func:`agents_acting`), never the tries in flight when it takes effect (by then
    the culprit may have ended and an honest try begun). Read by the episode
    (:func:`disruption_of`) as the try's prohibited action. False when no in-process batch
    has a try in flight here (a pool worker, ``testing.attempt``; the canary; only checks
    running): the disruption is then not held."""
    with _lock:
        flights = set().union(*[w.in_flight for w in _watches])
        for run_id in culprits & flights:
            _disrupted.setdefault(run_id, what)
    return bool(flights)


def disruption_of(run_id: str | None) -> str | None:
    """What code in the process did to the batch's event loop while the try *run_id* was in
    flight (see :func:`loop_disrupted`), if anything."""
    with _lock:
        return _disrupted.get(run_id) if run_id is not None else None


def forget_interruption(run_id: str | None) -> None:
    with _lock:
        _sent.pop(run_id or "", None)
        _disrupted.pop(run_id or "", None)


def _said(call: str, status: Any) -> Any:
    """Say on stderr that code the harness ran ends its process (its output, buffered, is
    lost), and the status to end it with: the one given, unless that says success (0). A
    status ``os._exit`` refuses is left for it to refuse: nothing ends."""
    if not isinstance(status, int):
        return status
    who = "a check" if _grading_here() else "the agent"
    with suppress(Exception):
        os.write(
            2,
            f"error: {who} called {call} while groundstate ran it in this process: the"
            " command stopped there, its try unstored (a batch it had started can be"
            " resumed with --resume)\n".encode(),
        )
    return status or ENDED_BY_USER_CODE


def _grading_here() -> bool:
    """Whether the try whose context this is is being graded (see :func:`grading_starts`)."""
    run_id = TRY.get()
    if run_id is None:
        return False
    with _lock:
        return any(run_id in w.grading for w in _watches)


def _shown(arg: Any) -> str:
    return arg.name if isinstance(arg, signal.Signals) else repr(arg)[:80]


def _always(*_: Any) -> bool:
    return True


def _kill(pid: Any, sig: Any) -> bool:
    return isinstance(pid, int) and _ours(pid) and _fatal(sig)


def _killpg(pgid: Any, sig: Any) -> bool:
    return isinstance(pgid, int) and pgid in (0, os.getpgrp()) and _fatal(sig)


def _raise(sig: Any) -> bool:
    return _fatal(sig)


def _pthread(_: Any, sig: Any) -> bool:
    return _fatal(sig)


_TARGETS: list[tuple[ModuleType, str, Callable[..., bool]]] = [
    (os, "_exit", _always),
    (os, "abort", _always),
    (os, "execv", _always),
    (os, "execve", _always),
    (os, "kill", _kill),
    (os, "killpg", _killpg),
    (signal, "raise_signal", _raise),
    (signal, "pthread_kill", _pthread),
]
"""What is wrapped: the same objects in ``posix`` and ``_signal`` are rebound too
(:func:`_rebind` goes by identity), and ``os.execl``/``execvp``... call ``execv``/``execve``."""
_Swap = dict[int, tuple[Any, Any]]
ORIGINALS: _Swap = {}
"""id of each original function → (it, its wrapper)."""
WRAPPERS: _Swap = {}
"""id of each wrapper → (it, the original it wraps)."""
for _module, _name, _ends in _TARGETS:
    _original = getattr(_module, _name, None)
    if _original is not None:
        _wrapper = _wrap(f"{_module.__name__}.{_name}", _original, _ends)
        ORIGINALS[id(_original)] = (_original, _wrapper)
        WRAPPERS[id(_wrapper)] = (_wrapper, _original)


_HOMES = ("os", "posix", "nt", "signal", "_signal")
"""The modules the wrapped functions come from."""
_INSTALLED = tuple({os.path.join(p, "") for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
"""Where the standard library and installed packages live: their modules are not looked
into (some 700 modules' globals took 60 ms a batch); an agent's files and a test's are."""


def _rebind(swap: _Swap) -> None:
    """Bind each module attribute that is a key of *swap* (by identity) to its value: in the
    functions' own modules, and in the globals of every module not installed (an agent's
    ``from os import _exit``) but the harness's own (they pass through unmarked)."""
    for name, module in list(sys.modules.items()):
        if name in _HOMES:  # their other names are none of these
            namespace = {key: getattr(module, key, None) for _, key, _ in _TARGETS}
        elif not isinstance(module, ModuleType) or name.startswith(_OWN):
            continue
        else:
            where = getattr(module, "__file__", None)
            if not isinstance(where, str) or where.startswith(_INSTALLED):
                continue
            namespace = vars(module)
        for key, value in list(namespace.items()):
            old, new = swap.get(id(value), (None, None))
            if old is value:
                with suppress(Exception):
                    setattr(module, key, new)


_OWN = "groundstate"


@contextmanager
def watching(store: Path) -> Iterator[ExitWatch]:
    """Wrap the process-ending calls while the block runs a batch in-process (the first
    batch in installs them, the last out restores the originals)."""
    global _owner
    watch = ExitWatch(store)
    with _lock:
        if not _watches:
            _owner = os.getpid()
            _rebind(ORIGINALS)
            HARNESS.replace(ORIGINALS)  # the wrappers are the harness's: unwrapping is put back
        _watches.append(watch)
    try:
        yield watch
    finally:
        with _lock:
            _watches.remove(watch)
            if not _watches:
                _rebind(WRAPPERS)
                HARNESS.replace(WRAPPERS)
