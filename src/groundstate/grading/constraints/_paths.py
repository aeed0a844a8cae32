"""Paths into trace steps (``args.order_id``, ``output.items.*.item_id``) and conditions on them.

A path starts at a field of the step (``args``, ``output``, ``error``, ``tool``, ``ok`` of a tool
call; ``text``, ``role`` of a message) and walks dictionary keys; a number indexes a list and
``*`` maps over one. Resolving gives the values reached, or None when the path is missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from groundstate.spec.canonical import canonical_json
from groundstate.spec.constraints import literal, variable
from groundstate.spec.strict import JsonScalar
from groundstate.trace import AgentEvent


@dataclass(frozen=True)
class Bound:
    """A captured value; through a ``*`` path, the set of values reached (``many``)."""

    values: list[Any]
    many: bool

    def admits(self, value: Any) -> bool:
        return any(same(value, bound) for bound in self.values)


Bindings = dict[str, Bound]


def resolve(event: AgentEvent, path: str) -> list[Any] | None:
    """The values at *path* in *event*: one without ``*``; None when any step is missing."""
    root, *rest = _segments(path)
    if root not in _fields(type(event)):
        return None
    values = [getattr(event, root)]
    for segment in rest:
        reached: list[Any] = []
        for value in values:
            found = _step(value, segment)
            if found is None:
                return None
            reached.extend(found)
        values = reached
    return values


@lru_cache(maxsize=4096)
def _segments(path: str) -> tuple[str, ...]:
    return tuple(path.split("."))


@cache
def _fields(kind: type[AgentEvent]) -> frozenset[str]:
    """A step class's field names (read through pydantic's ``model_fields`` descriptor, a
    lookup costs several times more than in a set)."""
    return frozenset(kind.model_fields)


def _step(value: Any, segment: str) -> list[Any] | None:
    if segment == "*":
        return list(value) if isinstance(value, list) else None
    if isinstance(value, dict):
        return [value[segment]] if segment in value else None
    if isinstance(value, list) and _is_index(segment) and -len(value) <= int(segment) < len(value):
        return [value[int(segment)]]
    return None


def _is_index(segment: str) -> bool:
    # isdecimal, not isdigit: "²" is a digit that int() refuses (it is a key, not an index).
    return segment.removeprefix("-").isdecimal()


def capture(event: AgentEvent, paths: dict[str, str]) -> Bindings | None:
    """Bind each name to the value at its path; None when a path is missing or holds null.

    A null binds nothing: a verification that returned ``customer_id: null`` must not license
    reading every record whose owner is null too (``*`` leaves its null elements out)."""
    bindings: Bindings = {}
    for name, path in paths.items():
        values = resolve(event, path)
        if values is None:
            return None
        many = "*" in _segments(path)
        if not many and values[0] is None:
            return None
        bindings[name] = (
            Bound([v for v in values if v is not None], True) if many else Bound(values[:1], False)
        )
    return bindings


def holds(event: AgentEvent, where: dict[str, JsonScalar], bindings: Bindings) -> bool:
    """Every condition of ``before.where`` holds: at each path, every value reached equals
    the expected value (every order a call reads must be licensed).

    ``"$name"`` expects the captured value (with ``*`` in the capture: one of the values).
    A missing path fails; an empty list under ``*`` has no value that could fail.
    """
    return all(_condition(event, path, expected, bindings) for path, expected in where.items())


def selects(event: AgentEvent, where: dict[str, JsonScalar]) -> bool:
    """Every condition of a match's ``where`` holds: at each path, some value reached equals
    the expected literal. A match picks out the steps a rule is about: a refund of items
    ``["I-1", "I-2"]`` is a refund of ``I-1`` (``args.items.*: I-1``), whatever else it holds
    beside it, and a refund of no item is none. Under ``*``, an element the rest of the path
    is missing from is passed over, not the whole step."""
    return all(_some(event, path, literal(expected)) for path, expected in where.items())


def _some(event: AgentEvent, path: str, expected: JsonScalar) -> bool:
    root, *rest = _segments(path)
    if root not in _fields(type(event)):
        return False
    values = [getattr(event, root)]
    for segment in rest:
        values = [found for value in values for found in _step(value, segment) or ()]
    return any(same(value, expected) for value in values)


def _condition(event: AgentEvent, path: str, expected: JsonScalar, bindings: Bindings) -> bool:
    values = resolve(event, path)
    if values is None:
        return False
    name = variable(expected)
    if name is not None:
        bound = bindings.get(name)
        return bound is not None and all(bound.admits(value) for value in values)
    wanted = literal(expected)
    return all(same(value, wanted) for value in values)


def same(a: Any, b: Any) -> bool:
    """Exact equality: 1 and "1" differ, True and 1 differ; 1 and 1.0 are the same number; at
    any depth of objects and lists (key order aside)."""
    if type(a) is str:  # the common case
        return type(b) is str and a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and canonical_json(a) == canonical_json(b)


def values_at(event: AgentEvent, paths: list[str]) -> dict[str, list[Any] | None]:
    """Evidence: what each path reached in *event*."""
    return {path: resolve(event, path) for path in paths}
