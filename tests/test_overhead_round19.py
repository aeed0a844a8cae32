"""Nineteenth round, harness overhead: a Python constraint's result is built without the
constructor's validation (its verdict and evidence are checked already), and is the same
model the constructor gives for every evidence a check can return."""

from __future__ import annotations

import json
import math
import pickle
import threading
import weakref
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from groundstate.copies import Guard, Unguardable
from groundstate.deadline import Returned
from groundstate.environments.base import RowWrite
from groundstate.grading.constraints._python import _result
from groundstate.records import CheckResult
from groundstate.returned import shown
from groundstate.trace import MessageEvent, TraceCopies

from .conftest import HANG
from .trace_builder import Trace, constraint

EVIDENCE: list[Any] = [
    {},
    {"calls": 2, "ok": True, "ratio": 0.5, "none": None},
    {"nested": {"a": [1, 2, {"b": "c"}], "d": []}},
    {"lone": "\ud800 a lone surrogate", "key \udfff": ["\udc80"]},  # made recordable
    {1: "an int key", 2.5: "a float key"},  # made strings by the JSON round trip
    {"a set": {3, 1, 2}, "an object": object(), "a tuple": (1, "x")},  # shown
    {"nan": math.nan, "inf": math.inf, "-0": -0.0},
]


def _as_run_made(evidence: dict[Any, Any]) -> dict[str, Any]:
    """The evidence as ``_run`` hands it on (read back from its JSON)."""
    return json.loads(json.dumps(evidence, default=shown)) if evidence else {}


@pytest.mark.parametrize("evidence", EVIDENCE, ids=range(len(EVIDENCE)))
@pytest.mark.parametrize("passed", [True, False])
def test_a_python_constraints_result_is_the_model_the_constructor_gives(
    evidence: dict[Any, Any], passed: bool
) -> None:
    check = constraint(id="py-check", check="checks.py:f")
    returned: Returned[tuple[bool, dict[str, Any]]] = Returned()
    returned.value = (passed, _as_run_made(evidence))
    built = _result(check, returned)
    validated = CheckResult(
        id="py-check", kind="check", passed=passed, evidence=_as_run_made(evidence)
    )
    assert type(built) is CheckResult
    assert built.model_fields_set == validated.model_fields_set
    assert built.model_dump_json() == validated.model_dump_json()
    assert repr(built) == repr(validated)
    # and it is stored and read back as the validated one is
    assert CheckResult.model_validate_json(built.model_dump_json()).model_dump_json() == (
        validated.model_dump_json()
    )


def test_a_python_constraints_error_is_still_its_grader_failure() -> None:
    check = constraint(id="py-check", check="checks.py:f")
    returned: Returned[tuple[bool, dict[str, Any]]] = Returned()
    returned.error = KeyError("no such step")
    result = _result(check, returned)
    assert not result.passed and result.error == "KeyError: 'no such step'"


def test_a_record_with_trusted_results_validates_as_stored() -> None:
    check = constraint(id="py-check", check="checks.py:f")
    returned: Returned[tuple[bool, dict[str, Any]]] = Returned()
    returned.value = (False, _as_run_made({"quote": "\ud800", "n": 1}))
    result = _result(check, returned)
    assert result.evidence == {"quote": "\\ud800", "n": 1}
    assert CheckResult.model_validate(result.model_dump()) == result


# --- the trace lent from one Python check to the next -------------------------------------


def _trace() -> list[Any]:
    write = RowWrite(table="orders", key="O-1", before={"status": "open"}, after=None)
    return (
        Trace("Please cancel O-1")
        .call("get_order", {"order_id": "O-1"}, {"items": [{"sku": "A", "qty": 1}], "n": 1.5})
        .call("cancel", {"order_id": "O-1", "tags": ["a", "b"]}, True, writes=[write])
        .agent("Cancelled.", final=True)
        .events
    )


def _undo_reverse(t: list[Any]) -> bool:
    t.reverse()
    t.reverse()
    return True


def _undo_field(t: list[Any]) -> bool:
    text = t[0].text
    t[0].text = "edited"
    t[0].text = text
    return True


def _undo_nested(t: list[Any]) -> bool:
    t[1].output["items"][0]["qty"] = 2
    t[1].output["items"][0]["qty"] = 1
    return True


def _swap_class(t: list[Any]) -> bool:
    class Other(MessageEvent):
        pass

    t[0].__class__ = Other
    return True


def _same_dict_again(t: list[Any]) -> bool:
    object.__setattr__(t[0], "__dict__", dict(t[0].__dict__))
    return True


EDITS: dict[str, Callable[[list[Any]], object]] = {
    "clear": lambda t: t.clear(),
    "reverse twice": _undo_reverse,
    "item replaced by an equal one": lambda t: t.__setitem__(0, t[0].model_copy()),
    "field set and set back": _undo_field,
    "nested dict entry set and set back": _undo_nested,
    "nested list appended and popped": lambda t: (
        t[2].args["tags"].append(1),
        t[2].args["tags"].pop(),
    ),
    "a bool for an equal int": lambda t: t[1].output["items"][0].__setitem__("qty", True),
    "a float for an equal float": lambda t: t[1].output.__setitem__("n", float("1.5")),
    "row write edited": lambda t: t[2].writes[0].before.__setitem__("status", "closed"),
    "fields set grown": lambda t: t[3].__pydantic_fields_set__.add("kind"),
    "class swapped": _swap_class,
    "__dict__ replaced by an equal dict": _same_dict_again,
    "private values set": lambda t: object.__setattr__(t[0], "__pydantic_private__", {}),
    "event deleted and put back": lambda t: t.insert(0, t.pop(0)),
    "a slot deleted": lambda t: object.__delattr__(t[0], "__pydantic_extra__"),
    "set fields made a number": lambda t: object.__setattr__(t[0], "__pydantic_fields_set__", 5),
}


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_a_check_editing_its_copy_never_reaches_the_next_check(edit: Any) -> None:
    events = _trace()
    recorded = pickle.dumps(events)
    copies = TraceCopies(events)
    fresh = pickle.dumps(copies.fresh())
    copies.lend(edit)
    for _ in range(3):  # and the checks after it
        assert copies.lend(pickle.dumps) == fresh
    assert pickle.dumps(events) == recorded  # the record's trace as it was


def test_checks_that_only_read_share_one_copy_and_see_it_whole() -> None:
    events = _trace()
    copies = TraceCopies(events)
    first = copies.lend(id)
    assert [copies.lend(id) for _ in range(5)] == [first] * 5  # lent again, not copied
    assert copies.lend(lambda t: t == events and t is not events and t[1] is not events[1])


def test_once_a_check_edits_its_copy_every_check_after_it_gets_a_fresh_one() -> None:
    copies = TraceCopies(_trace())
    copies.lend(lambda t: t[0].__setattr__("text", "edited"))
    assert copies._spare is not None  # given back: the next lend finds it edited
    for _ in range(3):
        assert copies.lend(lambda t: t[0].text) == "Please cancel O-1"
        assert copies._spare is None and not copies._lending  # copied, not lent


def _escapes() -> dict[str, Callable[[list[Any], list[Any]], object]]:
    return {
        "the list": lambda t, kept: kept.append(t),
        "an event": lambda t, kept: kept.append(t[1]),
        "a tool output's dict": lambda t, kept: kept.append(t[1].output["items"][0]),
        "a fields set": lambda t, kept: kept.append(t[0].model_fields_set),
        "an iterator": lambda t, kept: kept.append(iter(t)),
        "a bound method": lambda t, kept: kept.append(t[2].args["tags"].append),
        "a weak reference": lambda t, kept: kept.append(weakref.ref(t[0])),
        "the result": lambda t, kept: t[1],
    }


@pytest.mark.parametrize("escape", _escapes().values(), ids=_escapes().keys())
def test_a_copy_a_check_left_a_reference_to_is_not_lent_again(escape: Any) -> None:
    """What a check kept (a global, a thread's variable) may edit its copy later, while the
    next check reads: that check gets a copy of its own."""
    copies = TraceCopies(_trace())
    fresh = pickle.dumps(copies.fresh())
    kept: list[Any] = []
    leaked = copies.lend(lambda t: escape(t, kept))

    def edits_the_kept_one_meanwhile(t: list[Any]) -> bytes:
        for part in [*kept, leaked]:
            part = part() if isinstance(part, weakref.ref) else part
            if isinstance(part, list | dict | set):
                part.clear()
            elif isinstance(part, BaseModel):
                object.__setattr__(part, "step", 99)
            elif part is not None and not callable(part):
                list(part)  # an iterator run out
            elif callable(part):
                part("appended")
        return pickle.dumps(t)

    assert copies.lend(edits_the_kept_one_meanwhile) == fresh


def test_a_copy_held_by_a_thread_still_running_is_not_lent_again() -> None:
    copies = TraceCopies(_trace())
    fresh = pickle.dumps(copies.fresh())
    go, done = threading.Event(), threading.Event()

    def later(t: list[Any]) -> None:
        go.wait(HANG)
        t.clear()
        done.set()

    copies.lend(lambda t: threading.Thread(target=later, args=(t,)).start())

    def reads_while_the_thread_edits(t: list[Any]) -> bytes:
        go.set()
        done.wait(HANG)
        return pickle.dumps(t)

    assert copies.lend(reads_while_the_thread_edits) == fresh


def test_a_check_still_running_on_its_copy_lends_it_to_no_one() -> None:
    """A check abandoned at its time limit goes on running; the next check, on another
    thread meanwhile, gets a copy of its own."""
    copies = TraceCopies(_trace())
    fresh = pickle.dumps(copies.fresh())
    copies.lend(len)  # one copy given back, to be lent
    started, go = threading.Event(), threading.Event()

    def slow(t: list[Any]) -> None:
        started.set()
        go.wait(HANG)
        t.clear()

    abandoned = threading.Thread(target=copies.lend, args=(slow,))
    abandoned.start()
    try:
        assert started.wait(HANG)
        assert copies.lend(lambda t: (go.set(), abandoned.join(HANG), pickle.dumps(t))[2]) == fresh
    finally:
        go.set()
        abandoned.join(HANG)


def test_a_check_that_raised_gives_no_copy_back() -> None:
    copies = TraceCopies(_trace())
    kept: list[Any] = []

    def raises(t: list[Any]) -> None:
        kept.append(id(t))
        raise KeyError("no such step")

    with pytest.raises(KeyError):
        copies.lend(raises)
    assert copies._spare is None


def test_a_trace_the_guard_cannot_watch_is_copied_for_every_check() -> None:
    events = Trace("hi").call("t", {"a": [1]}, output={"rows": bytearray(b"x")}).events
    copies = TraceCopies(events)
    kept: list[Any] = []
    for _ in range(3):
        copies.lend(kept.append)
    assert len({id(k) for k in kept}) == 3 and all(k == events for k in kept)
    with pytest.raises(Unguardable):
        Guard(events)


def test_the_guard_sees_dict_writes_on_this_python() -> None:
    """The dict versions are what the guard relies on for dicts (and models' fields)."""
    value = [{"a": "ab"}, MessageEvent(step=1, role="user", text="x", at=0.0)]
    guard = Guard(value)
    assert guard.untouched()
    value[0]["a"] = value[0]["a"]  # the same object again: nothing changed
    assert guard.untouched()
    value[0]["a"] = "".join(["a", "b"])  # an equal value, another object: a write
    assert not guard.untouched()
    guard = Guard(value)
    value[0]["a"], value[0]["a"] = "c", value[0]["a"]  # written, then put back
    assert not guard.untouched()
    guard = Guard(value)
    value[1].text = "y"
    assert not guard.untouched()


class _Slotted(MessageEvent):
    __slots__ = ("note",)


def test_a_model_with_slots_of_its_own_is_not_guarded() -> None:
    """A slot's value is outside the model's ``__dict__``, where the guard does not look."""
    event = _Slotted(step=1, role="user", text="x", at=0.0)
    with pytest.raises(Unguardable):
        Guard([event])
