"""Speed work on the grader changes no verdict: every constraint of examples/retail (the
declarative ones and the Python checks) gives, on hundreds of stored traces (solution
replays, near-miss mutants, careful and hasty agents), exactly the results stored before the
trace index and the batched checks; and the index selects exactly the steps ``matches`` does.
"""

from __future__ import annotations

from collections import Counter

import pytest

from groundstate.grading.constraints import _match as match_module
from groundstate.grading.constraints import matches
from groundstate.grading.constraints._index import TraceIndex
from groundstate.spec.constraints import (
    AtLeastConstraint,
    AtMostConstraint,
    BeforeConstraint,
    ConfirmedConstraint,
    HardConstraint,
    Match,
    NeverConstraint,
    ProvenanceConstraint,
)
from groundstate.spec.suite import Suite, load_suite
from groundstate.trace import agent_events

from .grading_corpus import EXAMPLES, Case, constraint_results, load_cases
from .trace_builder import Trace


@pytest.fixture(scope="module")
def retail() -> Suite:
    return load_suite(EXAMPLES / "retail")


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return load_cases()


def test_the_corpus_has_failures_of_every_kind_not_only_passes(cases: list[Case]) -> None:
    failed = Counter(r["kind"] for c in cases for r in c.expected if not r["passed"])
    assert len(cases) > 300
    assert {"before", "confirmed", "never", "provenance", "check", "at_least"} <= set(failed)
    assert sum(failed.values()) > 300


def test_every_constraint_gives_the_stored_verdict_and_evidence(
    retail: Suite, cases: list[Case]
) -> None:
    for case, results in zip(cases, constraint_results(retail, cases), strict=True):
        got = [r.model_dump(mode="json") for r in results]
        for want, have in zip(case.expected, got, strict=True):
            assert have == want, f"{case.task_id} {case.label}: {want['id']}"


def _all_matches(constraint: HardConstraint) -> list[Match]:
    match constraint:
        case NeverConstraint():
            return [constraint.never]
        case AtMostConstraint():
            return [constraint.at_most.match]
        case AtLeastConstraint():
            return [constraint.at_least.match]
        case BeforeConstraint():
            return [constraint.before.first, constraint.before.then]
        case ConfirmedConstraint():
            rule = constraint.confirmed
            return [rule.change, rule.yes, *([rule.no] if rule.no else [])]
        case ProvenanceConstraint():
            return [constraint.provenance.match]
    return []


def test_the_index_selects_exactly_the_steps_matches_selects(
    retail: Suite, cases: list[Case]
) -> None:
    checked = 0
    for case in cases:
        index = TraceIndex(case.events)
        for constraint in retail.tasks[case.task_id].hard_process_constraints:
            for match in _all_matches(constraint):
                expected = [i for i, e in enumerate(case.events) if matches(match, e)]
                assert index.hits(match) == expected, f"{case.label}: {constraint.id}"
                checked += 1
    assert checked > 10_000


def test_equal_matches_share_one_answer_and_near_equal_ones_get_their_own() -> None:
    trace = Trace("refund O-1 please").call("refund", {"order_id": "O-1", "n": 1})
    trace.call("refund", {"order_id": "O-1", "n": True}).call("refund", {"n": 1.0})
    index = TraceIndex(agent_events(trace.events))
    one = Match(tool="refund", args={"n": 1})
    # arguments compare exactly, as ``where`` does: 1 == 1.0, but not True (nor "1")
    assert index.hits(one) == [1, 3]
    assert index.hits(Match(tool="refund", args={"n": 1})) == [1, 3]
    assert index.hits(Match(tool="refund", args={"n": True})) == [2]  # not the answer for 1
    assert index.hits(Match(tool="refund", args={"n": "1"})) == []
    assert index.hits(Match(tool="refund", args={"n": 1}, where={"args.n": 1.0})) == [1, 3]
    captured = Match(tool="refund", args={"n": 1}, capture={"o": "args.order_id"})
    assert index.hits(captured) == [1, 3]  # capture selects nothing
    assert index.hits(Match(message="user", contains="o-1")) == [0]
    assert index.hits(Match(message="agent", contains="o-1")) == []


def test_the_compiled_matches_start_again_when_full_and_stay_correct(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(match_module, "COMPILED_KEPT", 2)
    event = agent_events(Trace().call("t", {"a": 1}).events)[0]
    kept = [Match(tool="t", args={"a": n}) for n in range(5)]
    for _ in range(2):
        assert [matches(m, event) for m in kept] == [False, True, False, False, False]
    assert len(match_module._COMPILED) <= 2
