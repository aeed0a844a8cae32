"""Grading's per-attempt work made cheaper (issue 10) gives the same answers as before: a rule
checked once per process is the rule the caller passed, every time."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from groundstate.grading.constraints import confirming_questions

from .trace_builder import Trace


def _refunds() -> Trace:
    trace = Trace("Refund the socks")
    trace.agent("Shall I refund the socks?").user("Yes")
    trace.call("refund_item", {"item": "socks"})
    trace.agent("And the shoes?").user("No")
    trace.call("refund_item", {"item": "shoes"})
    return trace


def _steps(rule: Any, trace: Trace) -> dict[int, int]:
    return {at: q.step for at, q in confirming_questions(rule, trace.events).items()}


def test_a_rule_given_again_after_it_changed_is_checked_again() -> None:
    trace = _refunds()
    rule: dict[str, Any] = {"change": {"tool": "refund_item", "ok": True}, "names": ["args.item"]}
    assert _steps(rule, trace) == {3: 1}
    rule["names"] = ["args.missing"]  # the same dict, edited: not the rule checked before
    assert _steps(rule, trace) == {}
    rule["names"] = ["args.item"]
    assert _steps(rule, trace) == {3: 1}


def test_rules_whose_json_looks_alike_stay_apart() -> None:
    """``1`` and ``True`` (and a tuple and a list) are not the same rule to the checker."""
    trace = _refunds()
    as_list = {"change": {"tool": "refund_item", "ok": True}, "names": ["args.item"]}
    as_tuple = {"change": {"tool": "refund_item", "ok": True}, "names": ("args.item",)}
    as_int = {"change": {"tool": "refund_item", "ok": 1}, "names": ["args.item"]}
    assert _steps(as_list, trace) == {3: 1}
    outcomes = []
    for rule in (as_tuple, as_int):
        try:
            outcomes.append(_steps(rule, trace))
        except ValidationError as error:
            outcomes.append(str(error).splitlines()[0])
    # Whatever the schema makes of them, each is judged on its own and the same each time.
    again = []
    for rule in (as_tuple, as_int):
        try:
            again.append(_steps(rule, trace))
        except ValidationError as error:
            again.append(str(error).splitlines()[0])
    assert outcomes == again
    assert _steps(as_list, trace) == {3: 1}


def test_a_bad_rule_is_refused_every_time() -> None:
    trace = _refunds()
    bad = {"change": {"tool": "refund_item"}, "names": ["args.item"], "nonsense": 1}
    for _ in range(2):
        with pytest.raises(ValidationError, match="nonsense"):
            confirming_questions(bad, trace.events)


def test_a_rule_that_is_not_json_is_still_checked() -> None:
    trace = _refunds()
    rule = {"change": {"tool": "refund_item", "ok": True}, "names": ["args.item"], 3: "x"}
    with pytest.raises(ValidationError):
        confirming_questions(rule, trace.events)
