"""The record's cheaper paths give what the longhand ones gave: a kept system spec hash is never
stale, whatever is changed in the spec and however."""

from __future__ import annotations

import json
from typing import Any

import pytest

from groundstate.spec.canonical import hash_value
from groundstate.spec.system import SystemSpec, UserSimulatorSection
from groundstate.testing import scripted_system


def _longhand(spec: SystemSpec) -> str:
    """The hash as it was always computed, nothing kept."""
    return hash_value(spec.model_dump(mode="json"))


def test_the_kept_hash_is_the_longhand_hash_and_is_kept() -> None:
    spec = scripted_system()
    first = spec.system_spec_hash
    assert first == _longhand(spec)
    assert spec._hashed == (spec.model_dump_json(), first)
    assert spec.system_spec_hash is first  # the kept one, not recomputed


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s.model.decoding.update(temperature=0.5),
        lambda s: s.harness.orchestration_loop.params.update(steps=[1, 2]),
        lambda s: s.harness.tool_descriptions.update(refund="Refunds an order."),
        lambda s: s.resolved.update(code={"orchestration_loop": "abc"}),
    ],
    ids=["decoding", "params", "tool_descriptions", "resolved"],
)
def test_a_dict_changed_in_place_changes_the_hash(change: Any) -> None:
    spec = scripted_system()
    before = spec.system_spec_hash
    change(spec)  # frozen forbids assigning fields, not changing a dict inside one
    assert spec.system_spec_hash == _longhand(spec) != before


def test_a_copy_with_other_values_does_not_inherit_the_kept_hash() -> None:
    spec = scripted_system()
    kept = spec.system_spec_hash
    renamed = spec.model_copy(update={"name": "other"})
    assert renamed._hashed == spec._hashed  # model_copy carries the private pair along...
    assert renamed.system_spec_hash == _longhand(renamed) != kept  # ...and it is not used
    users = spec.model_copy(update={"user_simulator": UserSimulatorSection(max_turns=3)})
    assert users.system_spec_hash == _longhand(users) != kept


@pytest.mark.parametrize(
    ("first", "second"),
    [(True, 1), (1, 1.0), (0, False), ("1", 1), ([1], (1,))],
    ids=["true-1", "int-float", "zero-false", "str-int", "list-tuple"],
)
def test_values_python_calls_equal_but_json_tells_apart_are_not_confused(
    first: Any, second: Any
) -> None:
    """A near miss for a cache keyed on equality: ``True == 1`` and ``1 == 1.0`` in Python,
    yet their hashes differ (a tuple and a list are the same JSON: the same hash)."""
    spec = scripted_system()
    spec.model.decoding["x"] = first
    one = spec.system_spec_hash
    spec.model.decoding["x"] = second
    assert spec.system_spec_hash == _longhand(spec)
    assert (one == spec.system_spec_hash) == (json.dumps(first) == json.dumps(second))


def test_non_finite_floats_hash_as_pydantic_writes_them() -> None:
    spec = scripted_system()
    for value in (float("nan"), float("inf"), None, 0.0, -0.0):
        spec.model.decoding["t"] = value
        assert spec.system_spec_hash == _longhand(spec)
