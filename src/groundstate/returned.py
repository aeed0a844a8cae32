"""What an in-process agent hands back (its final value, or what it raised), read as plain data
in the agent's own thread.

Everything about such an object can be agent code: an exception's ``__str__``, a final
value's ``__repr__``, a ``__class__`` property that makes ``isinstance`` say ``str``, a
metaclass's ``__name__``, a ``ModelServingFailure``'s evidence. Run on the episode's thread
after the agent returned, such code could hang the attempt past its hard time limit (and
every attempt waiting on it), raise ``SystemExit`` or ``KeyboardInterrupt`` into the harness,
or crash it with a ``TypeError``. Here it runs where the time limit applies; the episode gets
a :class:`Final` or an :class:`AgentRaised` made of plain ``str`` and JSON data, and never
touches the agent's object again. Kinds are read from the real type (``type()`` cannot be
spoofed), never from ``isinstance`` (which trusts ``__class__``).
"""

from __future__ import annotations

import json
import re
import traceback
from dataclasses import dataclass
from typing import Any

from groundstate.errors import (
    ContextWindowExceeded,
    EnvironmentFailure,
    HarnessCompatibilityError,
    ModelServingFailure,
    TimeLimitReached,
)

TIME_LIMIT = "time_limit"
"""The reason of an agent's own :class:`TimeLimitReached` (an agent program's adapter ends at
the limit itself): the episode latches the limit."""

_REASONS: tuple[tuple[type[BaseException], str], ...] = (
    (TimeLimitReached, TIME_LIMIT),
    (ContextWindowExceeded, "harness_compatibility_failure/context_window"),
    (HarnessCompatibilityError, "harness_compatibility_failure"),
    (ModelServingFailure, "environment_failure/model_serving"),
    (EnvironmentFailure, "environment_failure/agent"),
)
"""What an exception the agent raised means, by its real type, first match first. Reasons are
given outright: an exception that is also a ``ResetCheckFailed`` must not be filed under a
failed reset, which is the harness's stage, not the agent's."""

CRASHED = "agent_failure/crashed"


@dataclass(frozen=True)
class Final:
    """What ``run()`` returned."""

    text: str | None
    """The final reply as a plain ``str`` (a ``str`` subclass as its real characters), the
    ``repr`` of anything else, or None when ``run()`` returned None."""
    odd_kind: str | None = None
    """The returned type's name when it was neither a ``str`` nor None (a protocol mismatch)."""

    @classmethod
    def of(cls, value: Any) -> Final:
        if value is None:
            return cls(None)
        kind = type(value)
        if issubclass(kind, str):
            return cls(str.__str__(value))
        return cls(stable_repr(value), type_name(kind))


class AgentRaised(Exception):
    """What the agent raised, as plain data (see the module's docstring)."""

    def __init__(self, exc: BaseException) -> None:
        kind = type(exc)
        self.reason = next((r for base, r in _REASONS if issubclass(kind, base)), CRASHED)
        self.type_name = type_name(kind)
        message = _unaddressed(text_of(exc))
        if not issubclass(kind, Exception):  # SystemExit, KeyboardInterrupt, a cancellation
            message = f"the agent raised {self.type_name}: {message}"
        self.message = message
        self.traceback = _traceback_of(exc)
        self.evidence = _evidence_of(exc) if issubclass(kind, ModelServingFailure) else {}
        super().__init__(message)


def text_of(value: Any, show: Any = str) -> str:
    """``str(value)`` (or ``repr``) as a plain ``str``, or a placeholder when the agent's code
    behind it raises anything, ``SystemExit`` included."""
    try:
        text = show(value)
        return text if type(text) is str else str.__str__(text)
    except BaseException:  # agent code: whatever it raises is only a text that failed
        return f"<{type_name(type(value))}: {show.__name__}() failed>"


def type_name(kind: type) -> str:
    """The class's real name (a metaclass may define ``__name__`` as anything)."""
    name: str = type.__dict__["__name__"].__get__(kind, type)
    return name


def _traceback_of(exc: BaseException) -> list[str]:
    """The last lines of the traceback, as the episode's evidence keeps them."""
    try:
        return [_unaddressed(text_of(line)) for line in traceback.format_exception(exc)[-3:]]
    except BaseException:  # a __str__, __notes__ or cause that breaks the formatting
        return []


def _evidence_of(exc: BaseException) -> dict[str, Any]:
    """A :class:`ModelServingFailure`'s evidence as JSON data of its own (it is stored with
    the record: an object that is not JSON would fail the store)."""
    evidence: Any = None
    try:
        evidence = getattr(exc, "evidence", None)
        data = json.loads(json.dumps(evidence, default=stable_repr, skipkeys=True, allow_nan=False))
    except BaseException:  # circular, NaN, or agent code that raises
        return {"unreadable": stable_repr(evidence)}
    if data is None:
        return {}
    return data if type(data) is dict else {"evidence": data}


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_DEPTH = 20
_ITEMS = 1000


def _unaddressed(text: str) -> str:
    """*text* without object addresses (``<f object at 0x7f...>`` names no address)."""
    return _ADDRESS.sub("", text)


def stable_repr(value: Any, strict: bool = False) -> str:
    """A ``repr`` of *value* that is the same in every process and run, for a record: object
    addresses are dropped, a set's items are sorted by their own text (a set of strings
    iterates in an order ``PYTHONHASHSEED`` picks), containers are walked only to a bounded
    depth and width (so recursion and huge values end), and agent code that raises gives a
    placeholder (see :func:`text_of`), or, *strict*, raises as it does (a grader's evidence:
    what cannot be shown is that check's grader failure)."""
    return _stable(value, _DEPTH, set(), strict)


def _stable(value: Any, depth: int, seen: set[int], strict: bool) -> str:
    kind = type(value)
    if kind in (list, tuple, dict, set, frozenset):
        if id(value) in seen:
            return "<recursion>"
        if depth <= 0:
            return f"<{kind.__name__}>"
        seen.add(id(value))
        try:
            return _walked(value, kind, depth - 1, seen, strict)
        finally:
            seen.discard(id(value))
    return _unaddressed(repr(value) if strict else text_of(value, repr))


def shown(value: Any) -> str:
    """:func:`stable_repr`, *strict*: for a check's evidence (a fallback of the JSON
    conversion), where a ``repr`` that raises fails that check as before."""
    return stable_repr(value, strict=True)


def _walked(value: Any, kind: type, depth: int, seen: set[int], strict: bool) -> str:
    def one(item: Any) -> str:
        return _stable(item, depth, seen, strict)

    if kind is dict:
        items = [f"{one(k)}: {one(v)}" for k, v in list(value.items())[:_ITEMS]]
    else:
        items = [one(item) for item in list(value)[:_ITEMS]]
    if kind in (set, frozenset):
        items.sort()
    if len(value) > _ITEMS:
        items.append(f"... {len(value) - _ITEMS} more")
    body = ", ".join(items)
    if kind is list:
        return f"[{body}]"
    if kind is tuple:
        return f"({body},)" if len(items) == 1 else f"({body})"
    if kind is dict:
        return "{" + body + "}"
    if not items:
        return f"{kind.__name__}()"
    return "{" + body + "}" if kind is set else f"frozenset({{{body}}})"
