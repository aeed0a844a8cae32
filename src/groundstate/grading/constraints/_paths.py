"""Paths into trace steps (``args.order_id``, ``output.items.*.item_id``) and conditions on them.

A path starts at a field of the step (``args``, ``output``, ``error``, ``tool``, ``ok`` of a tool
call; ``text``, ``role`` of a message) and walks dictionary keys; a number indexes a list and
``*`` maps over one. Resolving gives the values reached, or None when the path is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from groundstate.grading.constraints._spelling import respelt, same_path, shown
from groundstate.spec.canonical import canonical_json
from groundstate.spec.constraints import literal, variable
from groundstate.spec.strict import JsonScalar
from groundstate.trace import AgentEvent

Compare = Callable[[Any, Any], bool]
"""How a value reached is compared with the expected one: :func:`same`, or for a value in a
call's arguments :func:`agrees`."""


@dataclass(frozen=True)
class Bound:
    """A captured value; through a ``*`` path, the set of values reached (``many``)."""

    values: list[Any]
    many: bool

    def admits(self, value: Any, compare: Compare) -> bool:
        return any(compare(value, bound) for bound in self.values)


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
    A missing path fails; an empty list under ``*`` has no value that could fail. A value
    in the call's arguments equals as the tool took it (:func:`agrees`).
    """
    return all(_condition(event, path, expected, bindings) for path, expected in where.items())


def selects(event: AgentEvent, where: Conditions) -> bool:
    """Every condition of a match's ``where`` (compiled by :func:`conditions`) holds: at each
    path, some value reached equals the expected literal. A match picks out the steps a rule
    is about: a refund of items ``["I-1", "I-2"]`` is a refund of ``I-1`` (``args.items.*:
    I-1``), whatever else it holds beside it, and a refund of no item is none. Under ``*``,
    an element the rest of the path is missing from is passed over, not the whole step; and
    conditions through the same ``*`` are met by one element together (``args.items.*.id:
    I-1`` and ``args.items.*.qty: 2``: an item I-1 of quantity 2, not an I-1 beside another
    item of quantity 2)."""
    for field_name, inner in where.keys:
        if field_name not in _fields(type(event)):
            return False
        compare = _agreeing(event) if field_name == "args" else same
        if not inner.hold(getattr(event, field_name), compare):
            return False
    return True


@dataclass(frozen=True)
class Conditions:
    """A match's ``where`` as a tree of its paths: the values expected where the paths end,
    the conditions below each key or index, and those below ``*``, which one element must
    meet together."""

    here: tuple[JsonScalar, ...] = ()
    keys: tuple[tuple[str, Conditions], ...] = ()
    each: Conditions | None = None

    def hold(self, value: Any, compare: Compare) -> bool:
        if not all(compare(value, expected) for expected in self.here):
            return False
        for segment, inner in self.keys:
            found = _step(value, segment)
            if found is None or not inner.hold(found[0], compare):
                return False
        each = self.each
        return each is None or (
            isinstance(value, list) and any(each.hold(item, compare) for item in value)
        )


def conditions(where: dict[str, JsonScalar]) -> Conditions:
    """*where*'s conditions (literals: a match's ``where`` has no variables) as a tree."""
    return _tree([(_segments(path), literal(value)) for path, value in where.items()])


def _tree(paths: list[tuple[tuple[str, ...], JsonScalar]]) -> Conditions:
    below: dict[str, list[tuple[tuple[str, ...], JsonScalar]]] = {}
    for segments, value in paths:
        if segments:
            below.setdefault(segments[0], []).append((segments[1:], value))
    here = tuple([value for segments, value in paths if not segments])
    keys = tuple([(k, _tree(v)) for k, v in below.items() if k != "*"])
    return Conditions(here, keys, _tree(below["*"]) if "*" in below else None)


def agrees(event: AgentEvent, value: Any, expected: Any) -> bool:
    """Whether *value*, in the arguments of the call *event*, is *expected* as the tool took
    it: the same value, the same path written another way, or another spelling of it
    (case, spacing, Unicode forms, a number as text) where the call's output or writes show
    *expected* itself (see ``_spelling``)."""
    return (
        same(value, expected)
        or same_path(value, expected)
        or (respelt(value, expected) and shown(event, expected))
    )


def _agreeing(event: AgentEvent) -> Compare:
    return lambda value, expected: agrees(event, value, expected)


def _condition(event: AgentEvent, path: str, expected: JsonScalar, bindings: Bindings) -> bool:
    values = resolve(event, path)
    if values is None:
        return False
    compare = _agreeing(event) if _segments(path)[0] == "args" else same
    name = variable(expected)
    if name is not None:
        bound = bindings.get(name)
        return bound is not None and all(bound.admits(value, compare) for value in values)
    wanted = literal(expected)
    return all(compare(value, wanted) for value in values)


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
