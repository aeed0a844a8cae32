"""Round 38: harness overhead (issue 10) without changing what is read or decided.

- ``validate_suite`` read each task's cached validity twice (once to list the tasks to
  prove, once to return it): now once, with the same validities.
- ``bindings._gather`` made a ctypes array class per gather (a :class:`Guard` per Python
  check's trace copy, the rebinding watch's rows): now the span's class is one of a few kept
  ones (powers of two), and the words read are the same; a kept class given attributes by an
  agent reads the same words.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from groundstate import bindings
from groundstate.copies import Guard
from groundstate.store import RunStore
from groundstate.validation import suite as validation_suite
from groundstate.validation.suite import validate_suite

from .test_validation_round36 import _two_tasks

# --- the validity cache read once per task -------------------------------------------------


def _counted_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    read: list[str] = []
    original = RunStore.validation

    def counted(self: RunStore, key: str) -> Any:
        read.append(key)
        return original(self, key)

    monkeypatch.setattr(RunStore, "validation", counted)
    return read


def test_a_warm_validation_reads_each_cached_validity_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _two_tasks(tmp_path, "ok = True")
    with RunStore(tmp_path / "runs.db") as store:
        first = validate_suite(suite, store=store)
        read = _counted_reads(monkeypatch)
        again = validate_suite(suite, store=store)
    assert sorted(read) == sorted(set(read)) and len(read) == 2, read
    assert again == first  # the cached validities, as proven
    assert [t.task_id for t in again.tasks] == ["transfer", "transfer2"]


def test_a_cold_validation_reads_once_and_caches_what_it_proves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _two_tasks(tmp_path, "ok = True")
    proven: list[str] = []
    original = validation_suite.validate_task

    def counted(suite: Any, task_id: str, **kwargs: Any) -> Any:
        proven.append(task_id)
        return original(suite, task_id, **kwargs)

    monkeypatch.setattr(validation_suite, "validate_task", counted)
    with RunStore(tmp_path / "runs.db") as store:
        read = _counted_reads(monkeypatch)
        cold = validate_suite(suite, store=store)
        assert len(read) == 2 and sorted(proven) == ["transfer", "transfer2"]
        warm = validate_suite(suite, store=store)
    assert sorted(proven) == ["transfer", "transfer2"]  # not proven again: read back
    assert warm == cold and all(t.valid for t in warm.tasks)


def test_a_damaged_cached_validity_is_proven_again_and_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _two_tasks(tmp_path, "ok = True")
    with RunStore(tmp_path / "runs.db") as store:
        first = validate_suite(suite, store=store)
        key = validation_suite._key(suite, "transfer")
        store.add_validation(key, {"task_id": "transfer", "checks": "not a list"})
        proven: list[str] = []
        original = validation_suite.validate_task

        def counted(suite: Any, task_id: str, **kwargs: Any) -> Any:
            proven.append(task_id)
            return original(suite, task_id, **kwargs)

        monkeypatch.setattr(validation_suite, "validate_task", counted)
        again = validate_suite(suite, store=store)
        assert proven == ["transfer"]
        assert store.validation(key) == first.tasks[0].to_dict()
    assert again == first


# --- the gather's span classes kept ---------------------------------------------------------


def test_gathers_of_many_spans_read_the_right_words_with_few_classes() -> None:
    rng = random.Random(38)
    objects = [{"n": i} for i in range(3000)]
    bindings._span_type.cache_clear()
    for _ in range(300):
        chosen = rng.sample(objects, rng.randint(1, 40))
        # the version word of each dict (what Guard and the watch read)
        gather = bindings._gather([id(d) + 24 for d in chosen])
        words = bindings._read(gather).tolist()
        expected = [bindings._versions([d])() for d in chosen]  # type: ignore[misc]
        assert words == [w for (w,) in expected]
    # spans of hundreds of different lengths, classes of a few
    assert bindings._span_type.cache_info().currsize <= 24


def test_a_kept_span_class_given_attributes_reads_the_same_words() -> None:
    """An agent that reaches a kept class (it is returned by a function of the harness's)
    and shadows ``from_address`` or the class's other names does not change what a gather
    reads."""
    victims = [{"a": 1}, {"b": 2}, {"c": 3}]
    addresses = [id(d) + 24 for d in victims]
    span = max(addresses) - min(addresses)
    kind = bindings._span_type(span // 8 + 1)
    before = bindings._read(bindings._gather(addresses)).tolist()
    try:
        kind.from_address = classmethod(lambda cls, at: (bindings._span_type(1))())
        kind._length_ = 1
        after = bindings._read(bindings._gather(addresses)).tolist()
    finally:
        bindings._span_type.cache_clear()  # not the tampered class for the tests after
    assert after == before


def test_a_guard_still_sees_each_kind_of_edit_with_kept_classes() -> None:
    def value() -> list[Any]:
        return [{"k": [1, 2, {"x": "y"}]}, {"k": [3]}, [4, 5]]

    edits = [
        lambda v: v[0].__setitem__("k", [1, 2, {"x": "y"}]),  # an equal value, new objects
        lambda v: v[1].__setitem__("j", None),
        lambda v: v[0]["k"][2].__setitem__("x", "z"),
        lambda v: v[1]["k"].append(6),
        lambda v: v[2].pop(),
        lambda v: v.append({}),
    ]
    for _ in range(3):  # the second and third round on classes already kept
        for edit in edits:
            guarded = value()
            guard = Guard(guarded)
            assert guard.untouched()
            edit(guarded)
            assert not guard.untouched()
