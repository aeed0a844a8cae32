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
  the process).
"""

from __future__ import annotations

import contextvars
import decimal
from gc import enable, get_debug, get_threshold, isenabled, set_debug, set_threshold
from sys import get_int_max_str_digits, set_int_max_str_digits
from threading import stack_size
from typing import Any, NamedTuple

# The functions bound as imported (here, where the harness's names are watched): ``gc``,
# ``sys`` and ``threading`` are modules code sets lawfully, whose names are not watched, and
# an agent that set ``gc.isenabled`` to say True would hide its ``gc.disable()``.


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
    )


def put_back_switches(before: Switches) -> list[str]:
    """Put back each switch that differs from *before*; return the ones put back. *before* is
    read through ``tuple`` after it is given its class again (an object code of the agent's
    can find, ``gc.get_objects()``, and give a class of its own whose fields lie)."""
    if type(before) is not Switches:
        object.__setattr__(before, "__class__", Switches)
    fields: tuple[Any, ...] = tuple(tuple.__iter__(before))
    collector, decimals, int_digits, thread_stack = fields
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
    return found
