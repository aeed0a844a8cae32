"""Nineteenth round, harness overhead: a Python constraint's result is built without the
constructor's validation (its verdict and evidence are checked already), and is the same
model the constructor gives for every evidence a check can return."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from groundstate.deadline import Returned
from groundstate.grading.constraints._python import _result
from groundstate.records import CheckResult
from groundstate.returned import shown

from .trace_builder import constraint

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
