"""Paths into trace steps (``args.order_id``, ``output.items.*.item_id``) and conditions on them.

A path starts at a field of the step (``args``, ``output``, ``error``, ``tool``, ``ok`` of a tool
call; ``text``, ``role`` of a message) and walks dictionary keys; a number indexes a list and
``*`` maps over one. Resolving gives the values reached, or None when the path is missing.
Below a string in the arguments, output or error, a path reads the JSON text it holds
(``_embedded``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from groundstate.grading.constraints._embedded import (
    ErrorRecords,
    Repeated,
    TooLarge,
    UnreadableArgument,
    embedded,
    error_value,
)
from groundstate.grading.constraints._spelling import respelt, same_path, shown
from groundstate.spec.canonical import canonical_json
from groundstate.spec.constraints import literal, variable
from groundstate.spec.strict import JsonScalar
from groundstate.trace import AgentEvent

READS_TEXT = frozenset({"args", "output", "error"})
"""The fields below whose strings a path reads the JSON text they hold: the arguments (the
agent's words, shaped as it chose), the output (a tool answering with an order as JSON
text shows the order as surely as one answering with the object) and the error (a tool
refusing with ``{"code": "not_found", "order_id": "#W1"}`` as text, or with a message ending
in it: see ``_embedded.error_value``)."""

Compare = Callable[[Any, Any], bool]
"""How a value reached is compared with the expected one: :func:`same`, or for a value in a
call's arguments :func:`agrees`."""


@dataclass(frozen=True)
class Bound:
    """A captured value; through a ``*`` path, the set of values reached (``many``)."""

    values: list[Any]
    many: bool
    path: tuple[str, ...] = ()
    """The path captured: values captured through one ``*`` of it come from one element."""
    at: tuple[tuple[int, ...], ...] = ()
    """Through ``*``: for each value, the index it was reached at under each ``*``."""

    def admits(self, value: Any, compare: Compare) -> bool:
        return any(compare(value, bound) for bound in self.values)


Bindings = dict[str, Bound]


def resolve(event: AgentEvent, path: str) -> list[Any] | None:
    """The values at *path* in *event*: one without ``*`` (or each of a key JSON text in the
    arguments or output repeats); None when any step is missing. Below a string in the
    arguments or output, the JSON text it holds (see ``_embedded``)."""
    root, *rest = _segments(path)
    if root not in _fields(type(event)):
        return None
    read = _reader(root)
    try:
        values = [_root(event, root, bool(rest))]
        for segment in rest:
            reached: list[Any] = []
            for value in values:
                found = _step(value, segment, read)
                if found is None:
                    return None
                reached.extend(found)
            values = reached
    except TooLarge as exc:
        raise UnreadableArgument(event, str(exc), root) from None
    return values


def _root(event: AgentEvent, root: str, below: bool) -> Any:
    """The field *root* of *event*; an error read as the JSON it holds where a path goes
    *below* it (``_embedded.error_value``). Raises ``TooLarge``."""
    value = getattr(event, root)
    return error_value(value) if below and root == "error" else value


@lru_cache(maxsize=4096)
def _segments(path: str) -> tuple[str, ...]:
    return tuple(path.split("."))


@cache
def _fields(kind: type[AgentEvent]) -> frozenset[str]:
    """A step class's field names (read through pydantic's ``model_fields`` descriptor, a
    lookup costs several times more than in a set)."""
    return frozenset(kind.model_fields)


Reader = Callable[[Any], Any]
"""How a string below a field is read where a path goes below it (:func:`_reader`)."""


def _reader(root: str) -> Reader | None:
    """How a string below the field *root* is read where a path goes below it: as the JSON
    text it holds (``_embedded.embedded``), in an error also among words (a message a tool
    quotes in its record, ``{"message": "Refused: {\\"code\\": \\"E42\\"}"}``, holds the
    record as its whole text would: ``_embedded.error_value``); elsewhere not at all."""
    if root not in READS_TEXT:
        return None
    return error_value if root == "error" else embedded


def _step(value: Any, segment: str, read: Reader | None = None) -> list[Any] | None:
    """The values *segment* reaches below *value*; *read*: how a string is read first (see
    :func:`_reader`). Below the records an error holds (:class:`ErrorRecords`), those it
    reaches in any of them. Raises ``TooLarge``."""
    if read is not None:
        value = read(value)
    if type(value) is ErrorRecords:
        reached = [v for record in value for v in _step(record, segment) or ()]
        return reached or None
    if segment == "*":
        return list(value) if isinstance(value, list) else None
    if isinstance(value, dict):
        found = value.get(segment, _MISSING)
        reached = [] if found is _MISSING else list(found) if type(found) is Repeated else [found]
        dotted = _dotted(value, segment)
        return reached + dotted if reached or dotted else None
    if isinstance(value, list) and _is_index(segment) and -len(value) <= int(segment) < len(value):
        return [value[int(segment)]]
    return None


_MISSING = object()


def _dotted(value: dict[str, Any], segment: str) -> list[Any]:
    """Below *segment* of the object *value*, its keys written with a dot after it, as one
    object: ``{"user.email": x}`` holds ``user`` ``{"email": x}``. A path ``args.user.email``
    names the argument ``user.email`` a tool declares (as the suite's checks read it), and
    an object holding both ``user`` and ``user.email`` is read both ways, as a key JSON text
    repeats is: a ``never`` is not dodged by writing a nested key dotted."""
    prefix = segment + "."
    below = {
        key[len(prefix) :]: inner
        for key, inner in value.items()
        if type(key) is str and key.startswith(prefix)
    }
    return [below] if below else []


def _is_index(segment: str) -> bool:
    # isdecimal, not isdigit: "²" is a digit that int() refuses (it is a key, not an index).
    return segment.removeprefix("-").isdecimal()


def capture(event: AgentEvent, paths: dict[str, str]) -> Bindings | None:
    """Bind each name to the value at its path; None when a path is missing or holds null.

    A null binds nothing: a verification that returned ``customer_id: null`` must not license
    reading every record whose owner is null too (``*`` leaves its null elements out)."""
    bindings: Bindings = {}
    for name, path in paths.items():
        segments = _segments(path)
        if "*" not in segments:
            values = resolve(event, path)
            if values is None or values[0] is None or ambiguous(values):
                return None
            bindings[name] = Bound(values[:1], False)
            continue
        reached = _reach(event, path)
        if reached is None:
            return None
        found = [(at, v) for at, v in reached if v is not None]
        places = tuple([at for at, _ in found])  # from a list: round 29's rule
        bindings[name] = Bound([v for _, v in found], True, segments, places)
    return bindings


def ambiguous(values: list[Any]) -> bool:
    """Whether a path without ``*`` reached differing values: a key JSON text repeats with
    two values, which parsers read as either. Such a capture binds nothing (the ``before``
    needing it fails): binding the first would license what another parser's tool did."""
    return any(not same(value, values[0]) for value in values[1:])


def ambiguities(event: AgentEvent, paths: dict[str, str]) -> dict[str, list[Any]]:
    """Evidence: the names of *paths* (without ``*``) whose values :func:`ambiguous` finds."""
    found: dict[str, list[Any]] = {}
    for name, path in paths.items():
        if "*" not in _segments(path):
            values = resolve(event, path)
            if values is not None and ambiguous(values):
                found[name] = values
    return found


def _reach(event: AgentEvent, path: str) -> list[tuple[tuple[int, ...], Any]] | None:
    """:func:`resolve`, each value with the index it was reached at under each ``*``."""
    root, *rest = _segments(path)
    if root not in _fields(type(event)):
        return None
    read = _reader(root)
    try:
        reached: list[tuple[tuple[int, ...], Any]] = [((), _root(event, root, bool(rest)))]
        for segment in rest:
            after: list[tuple[tuple[int, ...], Any]] = []
            for at, value in reached:
                if segment == "*":
                    items = _items(read(value) if read is not None else value)
                    if items is None:
                        return None
                    after.extend(((*at, len(after)), item) for item in items)
                    continue
                found = _step(value, segment, read)
                if found is None:
                    return None
                after.extend((at, item) for item in found)
            reached = after
    except TooLarge as exc:
        raise UnreadableArgument(event, str(exc), root) from None
    return reached


def _items(value: Any) -> list[Any] | None:
    """The elements ``*`` reaches below *value*: a list's, or those of each list among the
    records an error holds; None where there is no list."""
    if type(value) is not ErrorRecords:
        return value if isinstance(value, list) else None
    lists = [record for record in value if isinstance(record, list)]
    return [item for found in lists for item in found] if lists else None


def _shared(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """How many ``*`` two paths go through together (those of their common start)."""
    shared = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        shared += x == "*"
    return shared


def holds(event: AgentEvent, where: dict[str, JsonScalar], bindings: Bindings) -> bool:
    """Every condition of ``before.where`` holds: at each path, every value reached equals
    the expected value (every order a call reads must be licensed).

    ``"$name"`` expects the captured value (with ``*`` in the capture: one of the values).
    A missing path fails; an empty list under ``*`` has no value that could fail. A value
    in the call's arguments equals as the tool took it (:func:`agrees`).

    Names captured through one ``*`` (``item: output.items.*.id``, ``qty:
    output.items.*.qty``) are met by one element together: ``{args.item_id: $item, args.qty:
    $qty}`` needs an item listed with that quantity, not an id listed beside another item's
    quantity. Where the conditions' own paths go through ``*`` (``args.items.*.id``), each
    element of the call is met so, by an element of its own.
    """
    return all(
        _condition(event, path, expected, bindings) for path, expected in where.items()
    ) and _together(event, where, bindings)


def _together(event: AgentEvent, where: dict[str, JsonScalar], bindings: Bindings) -> bool:
    """Conditions on names captured through one ``*`` are met by one captured element (see
    :func:`holds`); *bindings* holds every name *where* uses."""
    uses = [
        (path, name)
        for path, expected in where.items()
        if (name := variable(expected)) is not None and bindings[name].many
    ]
    for names in _tied({name for _, name in uses}, bindings):
        for part in _apart([(p, n) for p, n in uses if n in names]):
            reached = [(_segments(p), _reach(event, p) or []) for p, _ in part]
            for row in _rows(reached):
                if not _met_together(event, part, row, bindings):
                    return False
    return True


def _tied(names: set[str], bindings: Bindings) -> list[list[str]]:
    """The names captured through one ``*`` together, in groups of two or more."""
    groups: list[list[str]] = []
    for name in sorted(names):
        path = bindings[name].path
        joined = [g for g in groups if any(_shared(path, bindings[n].path) for n in g)]
        groups = [g for g in groups if g not in joined] + [[n for g in joined for n in g] + [name]]
    return [g for g in groups if len(g) > 1]


def _apart(uses: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """*uses* split where their paths go through no ``*`` together (``args.a.*`` and
    ``args.b.*``: two lists, each element met by itself); a path without ``*`` joins each."""
    single = [u for u in uses if "*" not in _segments(u[0])]
    parts: list[list[tuple[str, str]]] = []
    for use in [u for u in uses if u not in single]:
        joined = [p for p in parts if any(_shared(_segments(use[0]), _segments(q)) for q, _ in p)]
        parts = [p for p in parts if p not in joined] + [[u for p in joined for u in p] + [use]]
    return [p + single for p in parts] or [single]


def _rows(
    reached: list[tuple[tuple[str, ...], list[tuple[tuple[int, ...], Any]]]],
) -> list[list[tuple[tuple[int, ...], Any]]]:
    """The values of the paths *reached*, one of each, taken under each ``*`` two paths go
    through together from one element (each value looked up by its element: see
    :func:`_pivots`)."""
    rows: list[list[tuple[tuple[int, ...], Any]]] = [[]]
    for (depth, j), (_, found) in zip(_pivots([p for p, _ in reached]), reached, strict=True):
        if not depth:
            rows = [[*row, hit] for row in rows for hit in found]
            continue
        by_element = _by_element([at for at, _ in found], depth)
        rows = [[*row, found[i]] for row in rows for i in by_element.get(row[j][0][:depth], ())]
    return rows


def _pivots(paths: list[tuple[str, ...]]) -> list[tuple[int, int]]:
    """For each path, how many ``*`` it goes through together with an earlier one at most,
    and that earlier one (``(0, 0)``: none). A value one element with that one's is one
    element with every earlier one too: two paths go through at least as many ``*``
    together as each does with a third through fewer."""
    pivots: list[tuple[int, int]] = []
    for k, path in enumerate(paths):
        shared = [(_shared(path, paths[j]), -j) for j in range(k)]
        depth, j = max(shared, default=(0, 0))
        pivots.append((depth, -j))
    return pivots


def _by_element(places: list[tuple[int, ...]], depth: int) -> dict[tuple[int, ...], list[int]]:
    """The positions in *places* by their element under the first *depth* ``*``."""
    found: dict[tuple[int, ...], list[int]] = {}
    for i, at in enumerate(places):
        found.setdefault(at[:depth], []).append(i)
    return found


def _met_together(
    event: AgentEvent,
    uses: list[tuple[str, str]],
    row: list[tuple[tuple[int, ...], Any]],
    bindings: Bindings,
) -> bool:
    """Whether one captured element per ``*`` meets the conditions *uses* on the values in
    *row*: a choice of one captured value per name, each admitting its values, all chosen
    from one element under each ``*`` their capture paths go through together."""
    names = sorted({name for _, name in uses})
    candidates: list[list[int]] = []
    for name in names:
        bound = bindings[name]
        wanted = [
            (_comparer(event, _segments(path)[0]), value)
            for (path, n), (_, value) in zip(uses, row, strict=True)
            if n == name
        ]
        candidates.append(
            [i for i, v in enumerate(bound.values) if all(c(value, v) for c, value in wanted)]
        )

    # Each name's candidates by their element, looked up under its pivot's choice.
    pivots = _pivots([bindings[name].path for name in names])
    pools = [
        _by_element([bindings[name].at[i] for i in found], depth)
        for name, found, (depth, _) in zip(names, candidates, pivots, strict=True)
    ]

    def choose(k: int, chosen: list[int]) -> bool:
        if k == len(names):
            return True
        depth, j = pivots[k]
        pool: Sequence[int] = range(len(candidates[k]))
        if depth:
            pool = pools[k].get(bindings[names[j]].at[chosen[j]][:depth], [])
        return any(choose(k + 1, [*chosen, candidates[k][p]]) for p in pool)

    return choose(0, [])


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
        compare = _comparer(event, field_name, every=False)
        try:
            if not inner.hold(getattr(event, field_name), compare, _reader(field_name)):
                return False
        except TooLarge as exc:
            raise UnreadableArgument(event, str(exc), field_name) from None
    return True


@dataclass(frozen=True)
class Conditions:
    """A match's ``where`` as a tree of its paths: the values expected where the paths end,
    the conditions below each key or index, and those below ``*``, which one element must
    meet together."""

    here: tuple[JsonScalar, ...] = ()
    keys: tuple[tuple[str, Conditions], ...] = ()
    each: Conditions | None = None

    def hold(self, value: Any, compare: Compare, read: Reader | None = None) -> bool:
        """Whether *value* meets the conditions; *read*: how a string is read below which
        they go (:func:`_reader`), and a key it repeats met by one of its values."""
        if not all(compare(value, expected) for expected in self.here):
            return False
        if read is not None and (self.keys or self.each is not None):
            value = read(value)
        if type(value) is ErrorRecords:  # one record meets them together, as one element
            return any(self._below(record, compare, read) for record in value)
        return self._below(value, compare, read)

    def _below(self, value: Any, compare: Compare, read: Reader | None) -> bool:
        """Whether the conditions below *value* (read) hold."""
        for segment, inner in self.keys:
            found = _step(value, segment)
            if found is None or not any(inner.hold(v, compare, read) for v in found):
                return False
        each = self.each
        return each is None or (
            isinstance(value, list) and any(each.hold(item, compare, read) for item in value)
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


def agrees(event: AgentEvent, value: Any, expected: Any, every: bool = True) -> bool:
    """Whether *value*, in the arguments of the call *event*, is *expected* as the tool took
    it: the same value, the same path written another way, or another spelling of it
    (case, spacing, Unicode forms, a number as text) where the call's output or writes show
    *expected* itself (see ``_spelling``). *every*: see :func:`same_encoded`."""
    return (
        same(value, expected)
        or same_path(value, expected)
        or (respelt(value, expected) and shown(event, expected, value))
        or same_encoded(value, expected, every)
    )


def _comparer(event: AgentEvent, root: str, every: bool = True) -> Compare:
    """How a value below the field *root* of *event* is compared with the one expected: in
    the arguments as the tool took it (:func:`agrees`), in the output or error as the value
    a JSON text encodes (:func:`same_read`), elsewhere exactly (:func:`same`). *every*: JSON
    text repeating a key is the value expected when every reading of it is (a condition a
    call must meet), else when one is (a match picking out the calls a rule is about)."""
    if root == "args":
        return lambda value, expected: agrees(event, value, expected, every)
    if root in READS_TEXT:
        return lambda a, b: same_read(a, b, every)
    return same


def same_read(a: Any, b: Any, every: bool = True) -> bool:
    """:func:`same`, or :func:`same_encoded`: ``where: {error: '{"code": "E42"}'}`` is met
    by an error ``{"code":"E42"}``, as a path below it reads it."""
    return same(a, b) or same_encoded(a, b, every)


def same_encoded(a: Any, b: Any, every: bool = True) -> bool:
    """Whether JSON text is of the same object or list as the other value, or other JSON text
    (``{"code": "E42"}``, and ``{ "code":"E42" }``, its keys in another order, or the object
    itself): the same value as a path below each reads it. Text too large to read (over what
    the gateway lets arguments be) is compared as written only.

    JSON text repeating a key (``{"order_id": "#W2", "order_id": "#W1"}``) is read as
    parsers read it, one of its values or the other: the same value when *every* reading
    is, or (not *every*) when one is: a ``never`` on ``{"order_id": "#W1"}`` is not dodged
    by writing another order id first, nor is a ``before`` licensing #W1 met by it."""
    if type(a) is not str and type(b) is not str:
        return False
    try:
        read_a, read_b = embedded(a), embedded(b)
    except TooLarge:
        return False
    texts = (read_a is not a) or (read_b is not b)
    return texts and isinstance(read_a, dict | list) and _same_readings(read_a, read_b, every)


def _same_readings(a: Any, b: Any, every: bool) -> bool:
    """:func:`same`, a key JSON text repeats (:class:`Repeated`) read as each of its values:
    the same where every reading is (*every*) or one is. The keys of an object are read
    independently, so each key's readings decide for it."""
    for one, other in ((a, b), (b, a)):
        if type(one) is Repeated:
            found = (_same_readings(value, other, every) for value in one)
            return all(found) if every else any(found)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_readings(a[k], b[k], every) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(
            _same_readings(x, y, every) for x, y in zip(a, b, strict=True)
        )
    return same(a, b)


def _condition(event: AgentEvent, path: str, expected: JsonScalar, bindings: Bindings) -> bool:
    values = resolve(event, path)
    if values is None:
        return False
    compare = _comparer(event, _segments(path)[0])
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
