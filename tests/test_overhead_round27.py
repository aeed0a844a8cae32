"""Twenty-seventh round, harness overhead: a record's canonical hash is encoded by one encoder
made once, without the cycle check parsed JSON cannot need (the same bytes, so the same hash as
every store holds), and the trace guard asks whether a model's class can be guarded once per
class in its walk (not once per model) and checks a dict's keys in one pass."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from groundstate.copies import Guard, Unguardable
from groundstate.store import _canonical_hash, record_hash, record_json
from groundstate.trace import MessageEvent, TraceCopies

from .trace_builder import Trace

RECORD: dict[str, Any] = {
    "run_id": "t-1",
    "z": [1, 2.5, -0.0, 1e16, 1e-7, 123456789012345678901234567890, True, None],
    "a": {"é": "ünïcode \u2028", "b": {"y": [], "x": {}}, "1": "key"},
    "lone": "\\ud800",
    "nested": [[{"k": [{"q": 0.1}]}]],
}
# computed by the store before this round (record_hash of RECORD as written in the test)
PINNED = "6e44b8ab1ef2358b53bc39f6db7ee4c65c5e86574ee4b6cf5ac10f23c4cdb113"


def _old_hash(data: Any) -> str:
    """The hash as every earlier round computed it."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def test_a_known_record_hashes_as_it_always_did() -> None:
    text = json.dumps(RECORD, ensure_ascii=False)  # as a store may hold it: keys unsorted
    assert record_hash(text) == _old_hash(json.loads(text)) == _canonical_hash(json.loads(text))
    assert record_hash(text) == PINNED


@pytest.mark.parametrize(
    "data",
    [
        RECORD,
        [],
        {"deep": [[[[[[{"b": 1, "a": 2}]]]]]]},
        {"floats": [0.1 + 0.2, 5e-324, 1.7976931348623157e308, 2.0**53 + 1]},
        {"keys": {"B": 1, "a": 2, "_": 3, "é": 4, "": 5}},
    ],
)
def test_the_canonical_text_is_record_json(data: Any) -> None:
    parsed = json.loads(json.dumps(data))
    assert _canonical_hash(parsed) == _old_hash(parsed)
    assert _canonical_hash(parsed) == hashlib.sha256(record_json(parsed).encode()).hexdigest()


def test_a_record_nested_too_deeply_is_still_refused_as_before() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(RecursionError):
        _canonical_hash(deep)


def test_a_dict_key_the_guard_cannot_watch_is_refused_among_plain_keys() -> None:
    with pytest.raises(Unguardable):
        Guard([{"a": 1, (1, 2): "a tuple key", "b": 2}])
    with pytest.raises(Unguardable):
        Guard([{"a": 1}, {frozenset(): 1}])
    assert Guard([{"a": 1, 2: "x", 2.5: None, b"k": True, None: 0}]).untouched()


class _Slotted(MessageEvent):
    __slots__ = ("note",)


def test_each_class_in_a_trace_is_asked_about_on_its_own() -> None:
    """A model of a class the guard cannot watch after many it can (the answer is kept per
    class, never carried over from another class) is refused."""
    plain = [MessageEvent(step=i, role="user", text="x", at=0.0) for i in range(3)]
    assert Guard(plain).untouched()
    with pytest.raises(Unguardable):
        Guard([*plain, _Slotted(step=9, role="user", text="x", at=0.0)])


def test_an_edit_to_a_later_event_of_a_class_already_seen_reaches_no_other_check() -> None:
    events = (
        Trace("hi").call("t", {"a": [1]}, output={"rows": [{"id": 1}]}).call("t", {"a": [2]})
    ).events
    copies = TraceCopies(events)
    seen: list[Any] = []

    def edits(trace: list[Any]) -> None:
        trace[-1].args["a"].append(3)  # the last of several events of one class
        trace[-1].output = {"forged": True}

    def reads(trace: list[Any]) -> None:
        seen.append([e.model_dump() for e in trace])

    copies.lend(reads)
    copies.lend(edits)
    copies.lend(reads)
    copies.lend(reads)
    original = [e.model_dump() for e in events]
    assert seen == [original] * 3


class _Text(str):
    pass


class _Blob(bytes):
    pass


@pytest.mark.parametrize(
    ("row", "written"),
    [
        ({"a": 1, "b": "x", "c": 1.5, "d": None, "e": True}, None),  # plain: the row itself
        ({"a": 1, "b": b"\xff"}, {"a": 1, "b": {"blob": "ff"}}),
        ({"a": _Blob(b"\x00")}, {"a": {"blob": "00"}}),  # a subclass of bytes is a BLOB too
        ({"a": _Text("x"), "b": b""}, {"a": "x", "b": {"blob": ""}}),
        ({"k": [b"\x01", 2]}, {"k": [{"blob": "01"}, 2]}),
        ({"k": {"inner": b"\x02"}}, {"k": {"inner": {"blob": "02"}}}),
        ({"k": (b"\x03",)}, {"k": [{"blob": "03"}]}),
    ],
)
def test_a_row_is_written_with_its_blobs_as_before(row: dict[str, Any], written: Any) -> None:
    from groundstate.environments.base import json_cells

    out = json_cells(row)
    if written is None:
        assert out is row
    else:
        assert out == written and json.dumps(out) == json.dumps(written)
