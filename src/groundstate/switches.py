"""The interpreter's process-wide switches that code can flip with one call and that no watch
of the harness's code sees, read before an in-process agent's run and put back after it
(:mod:`groundstate.loopthreads`, with the rest of the process-wide state).

- the cyclic garbage collector: ``gc.disable()``, ``gc.set_threshold(0)`` (the same) or
  ``gc.set_threshold(1)`` (a collection at nearly every allocation), ``gc.set_debug``
  (``DEBUG_SAVEALL`` keeps every unreachable object, ``DEBUG_STATS`` writes on the process's
  stderr at each collection). Left by an agent, every later attempt in the process ran
  without a collector (its memory growing attempt after attempt) or with one slowing each
  of them. Turned back on only when the agent turned it off: the harness pauses it itself
  for a while (:func:`groundstate.store._collector_paused`), and one paused as the run
  began stays as it is;
- :mod:`decimal`'s template for new contexts (``decimal.DefaultContext``, which every thread
  and task that has not set a context of its own computes with) and the context the
  submitting code computes with (shared with the run: a copied ``contextvars`` context
  holds the same object), edited in place (``decimal.DefaultContext.prec = 1``,
  ``decimal.getcontext().rounding = ROUND_UP``): the amounts a message constraint reads
  (``grading.constraints._text``) were computed with the agent's precision in every later
  grading, so that 12.40 and 12.45 read alike;
- the longest integer written in decimal (``sys.set_int_max_str_digits``), past which the
  harness's own ``str`` and ``json`` of a number raise, and the stack size of the threads
  started later (``threading.stack_size``: a small one, left, gives every thread the
  harness starts later, its graders' too, a stack that a deep call can overflow, which ends
  the process);
- the import system (``sys.meta_path``, ``sys.path_hooks``, ``sys.path`` and the finders of
  ``sys.path_importer_cache``), edited in place or rebound: a finder of the agent's first on
  ``sys.meta_path`` answered every later import in the process (a module the harness or a
  later attempt's agent imports first after it, served as the agent's code). Entries the
  harness puts there itself for a while (:data:`HARNESS_ENTRIES`) are kept; a new cache entry
  is kept when it is the standard library's finder (an import since), else taken out;
- the default timeout of new sockets (``socket.setdefaulttimeout``): 0.001 s, left, made
  every later model judge's and agent's HTTP call time out (an invalid attempt or a grader
  failure each).

Each put back is named (:func:`put_back_switches`), for the attempt's record.
"""

from __future__ import annotations

import contextvars
import decimal
import sys
from collections.abc import Sequence
from gc import enable, get_debug, get_threshold, isenabled, set_debug, set_threshold
from importlib.machinery import FileFinder
from itertools import repeat
from operator import is_, is_not
from socket import getdefaulttimeout, setdefaulttimeout
from sys import get_int_max_str_digits, set_int_max_str_digits
from threading import stack_size
from typing import Any, NamedTuple
from zipimport import zipimporter

# The functions bound as imported (here, where the harness's names are watched): ``gc``,
# ``sys`` and ``threading`` are modules code sets lawfully, whose names are not watched, and
# an agent that set ``gc.isenabled`` to say True would hide its ``gc.disable()``. (The import
# system's lists are attributes of ``sys`` by nature: read there.)

HARNESS_ENTRIES: list[Any] = []
"""What the harness puts on ``sys.meta_path`` and ``sys.path`` for a while (a finder and a
folder of :func:`groundstate.spec.code.siblings_importable`, while a file loads), kept by a
put back that runs meanwhile in another thread."""

_IMPORT_LISTS = ("meta_path", "path_hooks", "path")
_STANDARD_FINDERS = (FileFinder, zipimporter, type(None))


def _decimal_var() -> contextvars.ContextVar[Any] | None:
    """The :class:`~contextvars.ContextVar` :mod:`decimal` keeps each context's current
    decimal context in (not exposed by the module: found in a context where it was set)."""
    probe = contextvars.Context()
    probe.run(decimal.getcontext)
    return next((var for var in probe if var.name == "decimal_context"), None)


_DECIMAL_VAR = _decimal_var()
_TEMPLATE = decimal.DefaultContext
"""The template itself as imported (rebinding the module's name does not change the
template ``decimal`` copies from; editing this object does)."""
_SIGNALS = tuple(_TEMPLATE.traps)
_CONTEXT = decimal.Context

_Settings = tuple[int, str, int, int, int, int, tuple[bool, ...]]


class Switches(NamedTuple):
    """The switches as :func:`read_switches` read them (tuples: nothing in them can be
    edited)."""

    collector: tuple[bool, tuple[int, ...], int]
    """Whether the collector runs, its thresholds and its debug flags."""
    decimals: tuple[tuple[decimal.Context, _Settings], ...]
    """Each decimal context read (the template, the caller's own if it has one) with its
    settings."""
    int_digits: int
    thread_stack: int
    imports: tuple[tuple[list[Any], tuple[Any, ...]], ...]
    """Each list of :data:`_IMPORT_LISTS` itself and what it held."""
    finders: tuple[dict[str, Any], tuple[tuple[str, Any], ...]]
    """``sys.path_importer_cache`` itself and what it held."""
    socket_timeout: float | None


def _settings(context: decimal.Context) -> _Settings:
    traps = context.traps
    return (
        context.prec,
        context.rounding,
        context.Emin,
        context.Emax,
        context.capitals,
        context.clamp,
        tuple([bool(traps[signal]) for signal in _SIGNALS]),
    )


def _set(context: decimal.Context, settings: _Settings) -> None:
    prec, rounding, emin, emax, capitals, clamp, traps = settings
    context.prec, context.rounding, context.Emin, context.Emax = prec, rounding, emin, emax
    context.capitals, context.clamp = capitals, clamp
    for signal, trapped in zip(_SIGNALS, traps, strict=True):
        context.traps[signal] = trapped


def _stack_size() -> int:
    """The stack size of threads started from now on: ``threading.stack_size()`` sets it to
    the default as it reads it, so it is set back."""
    size = stack_size()
    if size:
        stack_size(size)
    return size


def read_switches() -> Switches:
    """The switches as they are now, in the calling thread's context."""
    own = None if _DECIMAL_VAR is None else _DECIMAL_VAR.get(None)
    contexts = [_TEMPLATE] if own is None or own is _TEMPLATE else [_TEMPLATE, own]
    return Switches(
        (isenabled(), get_threshold(), get_debug()),
        tuple([(context, _settings(context)) for context in contexts]),
        get_int_max_str_digits(),
        _stack_size(),
        tuple([(found, tuple(found)) for found in map(_sys_list, _IMPORT_LISTS)]),
        (sys.path_importer_cache, tuple(sys.path_importer_cache.items())),
        getdefaulttimeout(),
    )


def _sys_list(name: str) -> list[Any]:
    return getattr(sys, name)  # type: ignore[no-any-return]


def put_back_switches(before: Switches) -> list[str]:
    """Put back each switch that differs from *before*; return the ones put back. *before* is
    read through ``tuple`` after it is given its class again (an object code of the agent's
    can find, ``gc.get_objects()``, and give a class of its own whose fields lie)."""
    if type(before) is not Switches:
        object.__setattr__(before, "__class__", Switches)
    fields: tuple[Any, ...] = tuple(tuple.__iter__(before))
    collector, decimals, int_digits, thread_stack, imports, finders, timeout = fields
    found = []
    enabled, thresholds, debug = collector
    if enabled and not isenabled():
        enable()
        found.append("gc.enable()")
    if get_threshold() != thresholds:
        set_threshold(*thresholds)
        found.append("gc.set_threshold()")
    if get_debug() != debug:
        set_debug(debug)
        found.append("gc.set_debug()")
    for context, settings in decimals:
        if type(context) is _CONTEXT and _settings(context) != settings:
            _set(context, settings)
            found.append("a decimal context")
    if get_int_max_str_digits() != int_digits:
        set_int_max_str_digits(int_digits)
        found.append("sys.set_int_max_str_digits()")
    if _stack_size() != thread_stack:
        stack_size(thread_stack)
        found.append("threading.stack_size()")
    found += _put_back_imports(imports, finders)
    if getdefaulttimeout() != timeout:
        setdefaulttimeout(timeout)
        found.append("socket.setdefaulttimeout()")
    return found


def _put_back_imports(
    imports: tuple[tuple[list[Any], tuple[Any, ...]], ...],
    finders: tuple[dict[str, Any], tuple[tuple[str, Any], ...]],
) -> list[str]:
    """Put back the import system's lists and cached finders as they were (compared by
    identity: ``==`` would call the agent's code), but for what the harness put there
    meanwhile (:data:`HARNESS_ENTRIES`, first, as it puts them); return what was put back."""
    found = []
    for name, (kept, items) in zip(_IMPORT_LISTS, imports, strict=True):
        now = getattr(sys, name)
        if now is not kept or len(kept) != len(items) or any(map(is_not, kept, items)):
            ours = [one for one in list(now) if _among(one, HARNESS_ENTRIES)]
            kept[:] = [*[one for one in ours if not _among(one, items)], *items]
            setattr(sys, name, kept)
            found.append(f"sys.{name}")
    cache, entries = finders
    rebound = sys.path_importer_cache is not cache
    sys.path_importer_cache = cache
    if _put_back_finders(cache, dict(entries)) or rebound:
        found.append("sys.path_importer_cache")
    return found


def _put_back_finders(cache: dict[Any, Any], before: dict[str, Any]) -> bool:
    """Put back each finder cached *before* that was replaced, and take out the new ones that
    are not the standard library's (a key of another class than ``str``: its ``__hash__``
    is the agent's code); whether any was. Rebuilt without hashing the keys it drops."""
    items = list(cache.items())
    kept = [
        (key, before.get(key, finder))
        for key, finder in items
        if type(key) is str and (key in before or _standard(finder))
    ]
    if len(kept) == len(items) and all(map(is_, [f for _, f in kept], [f for _, f in items])):
        return False
    cache.clear()
    cache.update(kept)
    return True


def _among(entry: Any, entries: Sequence[Any]) -> bool:
    return any(map(is_, repeat(entry), entries))


def _standard(finder: Any) -> bool:
    """Whether *finder* is one the standard library's path hooks make (of exactly its class:
    ``in`` would ask the class's own ``==``)."""
    return any(map(is_, repeat(type(finder)), _STANDARD_FINDERS))
