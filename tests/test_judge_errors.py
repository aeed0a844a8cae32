"""A judge that could not judge never decides the attempt: the binary result rests on state
and process alone, so a judge error leaves the terminal reason to them (else an agent that
failed could make its attempt invalid, and rerun, by sending what the judge's service
refuses), and the partial score it would have counted in is unknown, not 0."""

from __future__ import annotations

import pytest

from groundstate.grading.rubric import partial_score
from groundstate.grading.terminal import classify
from groundstate.records import JUDGED, CheckResult
from groundstate.spec.task import RubricNode

JUDGE_ERROR = CheckResult(id="reply", kind=JUDGED, passed=False, error="JudgeFailure: HTTP 400")


@pytest.mark.parametrize(
    ("state", "constraint", "expected"),
    [
        (True, True, "success"),
        (False, True, "agent_failure/incorrect_state"),
        (True, False, "agent_failure/constraint_violation"),
    ],
)
def test_a_judge_error_leaves_the_terminal_reason_to_state_and_process(
    state: bool, constraint: bool, expected: str
) -> None:
    assertions = [CheckResult(id="balance", kind="sql", passed=state), JUDGE_ERROR]
    constraints = [CheckResult(id="pin", kind="python", passed=constraint)]
    assert classify(None, assertions, constraints) == expected


@pytest.mark.parametrize("kind", ["sql", "check", "state_diff"])
def test_any_other_check_that_could_not_be_evaluated_is_still_a_grader_failure(kind: str) -> None:
    broken = CheckResult(id="balance", kind=kind, passed=False, error="OperationalError")
    assert classify(None, [broken, JUDGE_ERROR], []) == "grader_failure"
    broken_constraint = CheckResult(id="pin", kind="python", passed=False, error="boom")
    assert classify(None, [JUDGE_ERROR], [broken_constraint]) == "grader_failure"


def test_the_partial_score_is_unknown_when_a_leaf_could_not_be_judged() -> None:
    rubric = [
        RubricNode(id="state", weight=3, assertion="balance"),
        RubricNode(id="talk", children=[RubricNode(id="reply", assertion="reply")]),
    ]
    ok = CheckResult(id="balance", kind="sql", passed=True)
    judged = CheckResult(id="reply", kind=JUDGED, passed=True)
    assert partial_score(rubric, [ok, judged], []) == 1.0
    assert partial_score(rubric, [ok, judged.model_copy(update={"passed": False})], []) == 0.75
    assert partial_score(rubric, [ok, JUDGE_ERROR], []) is None
    # A judge outside the rubric does not make its score unknown.
    assert partial_score(rubric[:1], [ok, JUDGE_ERROR], []) == 1.0
