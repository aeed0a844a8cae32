"""Deep copies of one value for code groundstate does not control (Python checks, judges).

User code gets a copy of its own of what it may read (the trace, the attempt's diff): what it
edits in its copy reaches neither the record nor the next check.
"""

from __future__ import annotations

import copy
import pickle
import threading
from collections.abc import Callable
from functools import cache
from itertools import chain
from operator import attrgetter, is_
from sys import getrefcount
from typing import Any, Generic, TypeVar
from weakref import getweakrefcount

T = TypeVar("T")


class Copies(Generic[T]):
    """Fresh deep copies of *value*, one per call of :meth:`fresh`.

    The value is pickled once, on the first copy, and each copy is unpickled from that image:
    several times cheaper than ``copy.deepcopy`` (or pydantic's ``model_copy(deep=True)``),
    and no copy is ever the value itself. A value that cannot be pickled (an exotic tool
    output) is deep-copied instead. The value must not change after the first copy.

    Safe to call from several threads: two first calls at once each pickle the same value.
    """

    def __init__(self, value: T) -> None:
        self._value = value
        self._image: bytes | None = None
        self._picklable = True

    def fresh(self) -> T:
        """A new deep copy of the value."""
        if self._image is None and self._picklable:
            try:
                self._image = pickle.dumps(self._value, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # a part pickle refuses: copy it the slow way from now on
                self._picklable = False
        if self._image is None:
            return copy.deepcopy(self._value)
        copied: T = pickle.loads(self._image)
        return copied


_ATOMS = frozenset({str, int, float, bool, bytes, type(None)})
"""Values no code can change: a guard need not look into them."""
_SLOTS = attrgetter(
    "__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"
)


class Unguardable(TypeError):
    """A value :class:`Guard` cannot watch: anything but lists, dicts, plain pydantic models
    and immutable scalars, or a Python without dict versions."""


class Guard(Generic[T]):
    """Whether a value made of lists, dicts, pydantic models and scalars is exactly as it was
    when the guard was made, read without copying or pickling it again.

    Every dict (a model's ``__dict__`` too) is watched by its version (CPython bumps it on
    every write, from a process-wide counter, so an undone edit still shows: see
    :func:`groundstate.bindings._versions`); every list, set of set fields and model by the
    identity of what it holds, its length and its class. The scalars are immutable. A value
    with anything else in it (a tuple, a set, an object of a tool's) raises
    :class:`Unguardable`.
    """

    def __init__(self, value: T) -> None:
        from groundstate.bindings import _versions

        self.value = value
        dicts: list[dict[Any, Any]] = []
        addresses: list[int] = []  # each dict's ``id``, taken once (it runs the audit hooks)
        lists: list[list[Any]] = []
        models: list[Any] = []
        seen: set[int] = set()
        plain: dict[type, bool] = {}  # _plain_model's answer per class, within this walk
        stack: list[Any] = [value]
        while stack:
            item = stack.pop()
            kind = type(item)
            if kind in _ATOMS:
                continue
            key = id(item)  # once: ``id`` raises an audit event, a call of this process's hook
            if key in seen:
                continue
            seen.add(key)
            if kind is list:
                lists.append(item)
                stack.extend(item)
            elif kind is dict:
                if not _ATOMS.issuperset(map(type, item)):
                    raise Unguardable("a dict with a key that is not a string or number")
                dicts.append(item)
                addresses.append(key)
                stack.extend(item.values())
            elif plain[kind] if kind in plain else plain.setdefault(kind, _plain_model(item)):
                fields, extra, private = _SLOTS(item)[1:]
                if type(fields) is not set or extra is not None or private is not None:
                    raise Unguardable(f"a {kind.__name__} with extra or private values")
                models.append(item)
                space = item.__dict__
                dicts.append(space)
                addresses.append(id(space))
                stack.extend(space.values())
            else:
                raise Unguardable(f"a value of type {kind.__name__}")
        versions = _versions(dicts, addresses)
        if versions is None:
            raise Unguardable("dict versions cannot be read on this Python")
        self._dicts = dicts  # held: a version is read at its dict's address
        self._lists = lists
        self._models = models
        self._versions = versions
        fields = [model.__pydantic_fields_set__ for model in models]
        self._fields = fields
        self._was = self._now()
        self._parts: list[object] = [*lists, *dicts, *models, *fields]
        self._weakly: list[object] = [*models, *fields]

    def references(self) -> list[int]:
        """How many references each part of the value has, and weak ones where it takes
        them: a part kept by anything new (a global, a thread, an iterator) counts more."""
        return [*map(getrefcount, self._parts), *map(getweakrefcount, self._weakly)]

    def _now(self) -> tuple[list[int], list[object]]:
        """The dicts' versions and the lengths of the lists and sets (numbers, compared by
        value), and every object the lists, models and sets hold (compared by identity).

        The sets are those the guard was made with: each model's set is compared by identity
        with its slot (one of the objects the model holds), so a set replaced shows there,
        and one edited in place shows in its length or its items."""
        models = self._models
        fields = self._fields
        numbers = [*self._versions(), *map(len, self._lists), *map(len, fields)]
        held = [
            *chain.from_iterable(self._lists),
            *map(type, models),
            *chain.from_iterable(map(_SLOTS, models)),
            *chain.from_iterable(fields),
        ]
        return numbers, held

    def untouched(self) -> bool:
        try:
            numbers, held = self._now()
        except Exception:  # a slot deleted, set fields made a number: changed, surely
            return False
        was_numbers, was_held = self._was
        return (
            numbers == was_numbers and len(held) == len(was_held) and all(map(is_, held, was_held))
        )


def _plain_model(value: object) -> bool:
    """A pydantic model pickled and copied as pydantic does (no pickling of its own), whose
    values are all in its ``__dict__`` (no slots of its own, which the guard would not see)."""
    from pydantic import BaseModel

    kind = type(value)
    return (
        isinstance(value, BaseModel)
        and kind.__basicsize__ == _plain_size()
        and kind.__getstate__ is BaseModel.__getstate__
        and getattr(kind, "__setstate__", None) is BaseModel.__setstate__
        and kind.__reduce_ex__ is object.__reduce_ex__
        and kind.__reduce__ is object.__reduce__
    )


@cache
def _plain_size() -> int:
    """The size of a model of a class that declares no slots."""
    from pydantic import BaseModel

    class Plain(BaseModel):
        pass

    return Plain.__basicsize__


_MISSES = 32
"""A :class:`Lender` stops guarding once its callers' edits outweigh what lending saves: a
copy found edited counts 4 (a guard is made for its replacement, a walk costing several
copies), one lent untouched takes 1 off; at this count it stops for good."""


class Loan(Generic[T]):
    """One guarded copy lent to one caller, given back by :meth:`settle`."""

    def __init__(self, lender: Lender[T], guard: Guard[T]) -> None:
        self._lender = lender
        self._guard = guard
        self._references = guard.references()  # the copy held by its guard alone

    @property
    def value(self) -> T:
        return self._guard.value

    def settle(self) -> None:
        """Give the copy back to the lender, for the next caller, if nothing holds any part of
        it since it was lent (a global, a thread still running, an iterator, a weak
        reference, the caller's return value): call it once the caller has returned."""
        if self._guard.references() == self._references:
            self._lender.put_back(self._guard)


class Lender(Generic[T]):
    """Copies of one value from *fresh*, the copy the last caller had lent to the next.

    :meth:`lend` hands out the spare copy when its :class:`Guard` shows it exactly as it was
    made (no list item, dict entry, model field or set field written, replaced or put back
    since), which is what a fresh copy would be; the spare is there only once a caller's
    :class:`Loan` was settled with no reference to any part of it left. Safe to call from
    several threads: each spare goes to one caller.
    """

    def __init__(self, fresh: Callable[[], T]) -> None:
        self.fresh = fresh
        self._spare: Guard[T] | None = None
        self._lock = threading.Lock()
        self._misses = 0
        self._guarding = True

    def lend(self) -> tuple[T, Loan[T] | None]:
        """A copy of the caller's own while it runs, and its loan (None: not lent, a value
        the guard cannot watch, or callers that edit their copies)."""
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None and not spare.untouched():
            spare = None
            self._misses += 4
            self._guarding = self._guarding and self._misses < _MISSES
        elif spare is not None:
            self._misses = max(0, self._misses - 1)
        if spare is None:
            copied = self.fresh()
            if not self._guarding:
                return copied, None
            try:
                spare = Guard(copied)
            except Exception:  # Unguardable: a fresh copy for every caller
                self._guarding = False
                return copied, None
            del copied  # the loan counts the references the guard alone holds
        loan = Loan(self, spare)
        return loan.value, loan

    def put_back(self, guard: Guard[T]) -> None:
        with self._lock:
            if self._spare is None:
                self._spare = guard
