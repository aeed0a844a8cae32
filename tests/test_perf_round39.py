"""Round 39: the checks' isolation made cheaper (issue 10), the guarantee kept.

- :class:`~groundstate.copies.Guard` took each dict's ``id`` twice (once walking the value,
  again for its version's address) and probed the interpreter's dict layout at every guard;
  ``id`` runs the process's audit hooks (groundstate's own is Python), so each call cost
  some 0.3 µs. Now each dict's address is the walk's, and the layout is probed once.
- ``Guard.untouched`` read each model's set of set fields through the model again; now the
  sets it was made with, each still compared by identity with the model's slot.
"""

from __future__ import annotations

import builtins
import sys
from typing import Any

import pytest
from pydantic import BaseModel

from groundstate import bindings, copies
from groundstate.copies import Guard

pytestmark = pytest.mark.skipif(
    sys.implementation.name != "cpython" or not (3, 11) <= sys.version_info[:2] <= (3, 13),
    reason="dict versions are read on CPython 3.11-3.13 only",
)


class Inner(BaseModel):
    name: str = "x"
    tags: list[str] = []


class Event(BaseModel):
    kind: str
    args: dict[str, Any]
    inner: Inner | None = None


def _value() -> list[Any]:
    return [
        Event(kind="call", args={"id": "O-1", "items": [1, 2, {"a": "b"}]}, inner=Inner()),
        Event(kind="say", args={}),
        {"plain": [1, "two"]},
        [],
    ]


def _containers(value: Any) -> tuple[int, int]:
    """(lists and dicts and models walked, models): what a guard of *value* looks into."""
    walked = models = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            walked += 1
            stack.extend(item)
        elif isinstance(item, dict):
            walked += 1
            stack.extend(item.values())
        elif isinstance(item, BaseModel):
            walked, models = walked + 1, models + 1
            stack.extend(item.__dict__.values())
    return walked, models


def test_a_guard_takes_each_address_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []

    def counted(obj: object) -> int:
        calls.append(obj)
        return builtins.id(obj)

    # the modules' own name for it (a global shadows the builtin), the builtin itself untouched
    monkeypatch.setattr(copies, "id", counted, raising=False)
    monkeypatch.setattr(bindings, "id", counted, raising=False)
    value = _value()
    Guard(value)  # the layout probed before: once per process
    calls.clear()
    guard = Guard(value)
    walked, models = _containers(value)
    # one per container walked, and one per model's __dict__ (a dict not walked as an item)
    assert len(calls) == walked + models
    assert len({builtins.id(c) for c in calls}) == walked + models
    assert guard.untouched()


def test_versions_from_given_addresses_are_the_same() -> None:
    spaces: list[dict[str, Any]] = [{"a": 1}, {}, {"b": [1]}]
    given = bindings._versions(spaces, [id(space) for space in spaces])
    found = bindings._versions(spaces)
    assert given is not None and found is not None
    assert given() == found()
    spaces[1]["c"] = 3
    assert given() == found()
    assert given()[1] != given()[0] or given()[1] > 0


def test_the_layout_is_probed_once() -> None:
    bindings._version_layout()
    before = bindings._version_layout.cache_info()
    for _ in range(5):
        assert bindings._versions([{}]) is not None
    after = bindings._version_layout.cache_info()
    assert after.misses == before.misses
    assert after.hits == before.hits + 5


def _set_fields(event: Event) -> set[str]:
    return event.__pydantic_fields_set__


EDITS = {
    "a set field added": lambda v: _set_fields(v[1]).add("inner"),
    "a set field dropped": lambda v: _set_fields(v[0]).discard("inner"),
    "a set field swapped (same length)": lambda v: (
        _set_fields(v[1]).discard("args"),
        _set_fields(v[1]).add("inner"),
    ),
    "a set field's name replaced by an equal string": lambda v: (
        _set_fields(v[1]).discard("kind"),
        _set_fields(v[1]).add("".join(["ki", "nd"])),
    ),
    "the set replaced by an equal set": lambda v: object.__setattr__(
        v[1], "__pydantic_fields_set__", set(_set_fields(v[1]))
    ),
    "a field written and put back": lambda v: (
        setattr(v[0], "kind", "other"),
        setattr(v[0], "kind", "call"),
    ),
    "a nested list item replaced by an equal one": lambda v: (
        v[0].args["items"].__setitem__(2, {"a": "b"})
    ),
    "a nested model's list appended to": lambda v: v[0].inner.tags.append("t"),
    "the model's __dict__ replaced by an equal dict": lambda v: object.__setattr__(
        v[1], "__dict__", dict(v[1].__dict__)
    ),
    "the set slot deleted": lambda v: object.__delattr__(v[1], "__pydantic_fields_set__"),
    "the model's class changed": lambda v: object.__setattr__(
        v[1], "__class__", type("Other", (Event,), {})
    ),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_every_edit_shows(edit: str) -> None:
    value = _value()
    guard = Guard(value)
    assert guard.untouched()
    EDITS[edit](value)
    assert not guard.untouched()


def test_an_untouched_value_stays_untouched_after_reads() -> None:
    value = _value()
    guard = Guard(value)
    # reads only: dumping, iterating, comparing
    value[0].model_dump()
    _ = [e.model_fields_set for e in value[:2]]
    _ = value[0] == _value()[0]
    assert guard.untouched() and guard.untouched()


def test_a_lent_copy_edited_in_its_set_fields_is_not_lent_again() -> None:
    """Through the lender the checks use: a check that edits its copy's set fields in place
    (a same-length swap) gets no copy lent on; the next check's copy is as made."""
    from groundstate.trace import TraceCopies

    events = [Event(kind="call", args={"id": "O-1"}), Event(kind="say", args={})]
    lender = TraceCopies(events)
    seen: list[set[str]] = []

    def editing(copy: list[Event]) -> None:
        fields = copy[1].__pydantic_fields_set__
        seen.append(set(fields))
        fields.discard("args")
        fields.add("inner")

    lender.lend(editing)
    lender.lend(editing)
    assert seen[0] == seen[1] == {"kind", "args"}
    assert events[1].__pydantic_fields_set__ == {"kind", "args"}
