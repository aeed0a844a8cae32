"""Judged outcome assertions ``judge: file.py:fn`` with a human-labelled set: verdicts, grader
failures, the grader revision, and the ``judge_agreement`` validation check."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundstate.errors import SpecError
from groundstate.spec.suite import Suite
from groundstate.spec.task import JudgeAssertion
from groundstate.validation import checks
from groundstate.validation.checks import validate_task
from groundstate.validation.judges import check_judge_agreement, load_labels, measure
from groundstate.validation.replay import Proof
from groundstate.validation.suite import validation_key

from .conftest import HANG, HANG_SOURCE, EditTask
from .judged_bank import judged_run

JUDGES = """
import time


def names_amount(s0, sT, final_message, trace):
    said = final_message or ""
    return "30" in said, f"the reply {'names' if '30' in said else 'does not name'} 30"


def reads_state(s0, sT, final_message, trace):
    balance = sT.query("SELECT balance FROM accounts WHERE id = 'A'")[0][0]
    return str(balance) in (final_message or ""), f"balance {balance}, {len(trace)} events"


def raises(s0, sT, final_message, trace):
    raise KeyError("no verdict")


def sleeps(s0, sT, final_message, trace):
    hang()
    return True, "late"


def no_reason(s0, sT, final_message, trace):
    return True


def edits_the_trace(s0, sT, final_message, trace):
    trace.clear()
    return True, "edited"
"""

# (final message, human label); names_amount says "30" in the message. Judge vs human:
# 1 TT, 2 TT, 3 FT, 4 FF, 5 TF, 6 FF, 7 TT, 8 FF -> p_o = 6/8; both say True 4 times of 8, so
# p_e = 0.5 * 0.5 + 0.5 * 0.5 = 0.5 and kappa = (0.75 - 0.5) / (1 - 0.5) = 0.5.
LABELLED = [
    ("Moved 30 to B.", True),
    ("Done, 30 sent to B.", True),
    ("Transferred thirty to B.", True),
    ("I could not move it.", False),
    ("I tried to send 30 but it failed.", False),
    ("Nothing was done.", False),
    ("Sent 30.", True),
    ("No.", False),
]
KAPPA, RAW = 0.5, 0.75


def _lines(items: list[tuple[str | None, bool]]) -> str:
    return "".join(
        json.dumps({"id": f"item-{i}", "final_message": message, "label": label}) + "\n"
        for i, (message, label) in enumerate(items, start=1)
    )


@pytest.fixture
def with_judge(edited_bank: EditTask, tmp_path: Path) -> Iterator[Any]:
    """The bank suite whose transfer task has one more assertion, judged by *function*."""
    root = tmp_path / "bank"

    def load(function: str = "names_amount", min_agreement: float = 0.4, **extra: Any) -> Suite:
        def add(task: dict[str, Any]) -> None:
            if not (root / "judges").exists():
                (root / "judges").mkdir()
                (root / "judges" / "reply.jsonl").write_text(_lines(LABELLED))
                (root / "judges.py").write_text(JUDGES + HANG_SOURCE)
            judged = {
                "id": "reply",
                "judge": f"judges.py:{function}",
                "labels": "judges/reply.jsonl",
                "min_agreement": min_agreement,
                **extra,
            }
            others = [a for a in task["outcome_assertions"] if a["id"] != "reply"]
            task["outcome_assertions"] = [*others, judged]

        return edited_bank(add)

    yield load
    (root / "released").touch()  # a judge blocked in hang() returns


# --- in an attempt ---------------------------------------------------------------------------


def test_a_judge_reads_the_final_reply_and_its_verdict_stays_beside_success(
    with_judge: Any,
) -> None:
    run, result = judged_run(with_judge())
    assert run.terminal_reason == "success" and run.success
    assert result.kind == "judge" and result.passed
    assert result.evidence == {"reason": "the reply names 30"}
    run, result = judged_run(with_judge(), reply="Done.")  # the state is right, the reply is not
    assert run.terminal_reason == "success" and run.success  # success rests on state alone
    assert result.kind == "judge" and not result.passed and result.error is None
    assert result.evidence == {"reason": "the reply does not name 30"}
    states = [r for r in run.outcome_assertion_results if r.kind != "judge"]
    assert states and all(r.passed for r in states)  # reported apart: the state was right


def test_a_judge_sees_the_final_state_and_the_trace(with_judge: Any) -> None:
    _, result = judged_run(with_judge("reads_state"), reply="A now holds 70.")
    assert result.passed and result.evidence["reason"].startswith("balance 70, ")
    assert int(result.evidence["reason"].split(", ")[1].split()[0]) >= 4


def test_a_judge_cannot_edit_the_recorded_trace(with_judge: Any) -> None:
    run, result = judged_run(with_judge("edits_the_trace"))
    assert result.passed and len(run.observation_action_log) >= 4


@pytest.mark.parametrize(
    ("function", "error"),
    [
        ("raises", "KeyError: 'no verdict'"),
        ("no_reason", "TypeError: judges.py:no_reason returned True, expected (bool, reason)"),
    ],
)
def test_a_judge_that_fails_to_judge_leaves_the_result_to_the_state(
    with_judge: Any, function: str, error: str
) -> None:
    run, result = judged_run(with_judge(function))
    # A judged verdict never decides the result: one that could not judge is recorded, and
    # the attempt stays as its state decides (an agent must not make it invalid that way).
    assert run.terminal_reason == "success" and run.valid
    assert result.error is not None and result.error.startswith(error)


def test_a_judge_past_the_time_limit_leaves_the_result_to_the_state(
    with_judge: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("groundstate.grading.outcome.GRADER_TIME_LIMIT", 0.3)
    started = time.perf_counter()
    run, result = judged_run(with_judge("sleeps"))
    assert time.perf_counter() - started < HANG
    assert run.terminal_reason == "success" and run.valid
    assert result.error == "timed out: did not finish within 0.3s"


# --- at load: references and the grader revision ----------------------------------------------


def test_the_judge_code_is_part_of_the_grader_revision(with_judge: Any, tmp_path: Path) -> None:
    before = with_judge().tasks["transfer"].grader_revision
    assert with_judge().tasks["transfer"].grader_revision == before  # stable when unchanged
    (tmp_path / "bank" / "judges.py").write_text(JUDGES + "\n# edited\n")
    assert with_judge().tasks["transfer"].grader_revision != before
    assert with_judge(min_agreement=0.5).tasks["transfer"].grader_revision != before


@pytest.mark.parametrize(
    ("extra", "field", "message"),
    [
        ({"judge": "judges.py:nobody"}, "judge", "judges.py has no function 'nobody'"),
        ({"labels": "judges/none.jsonl"}, "labels", "no labelled set 'judges/none.jsonl'"),
    ],
)
def test_a_judge_naming_nothing_is_refused_at_load(
    with_judge: Any, extra: dict[str, str], field: str, message: str
) -> None:
    with pytest.raises(SpecError) as caught:
        with_judge(**extra)
    assert caught.value.field == f"outcome_assertions[3].{field}"  # after the bank's three
    assert message in str(caught.value)


def test_a_judge_needs_a_declared_threshold(with_judge: Any) -> None:
    with pytest.raises(SpecError) as caught:
        with_judge(min_agreement=1.5)
    assert caught.value.field == "outcome_assertions[3].min_agreement"


# --- validation: agreement with the human labels ------------------------------------------------


def _proof(suite: Suite) -> Proof:
    return Proof(suite, suite.tasks["transfer"])


def test_agreement_is_cohens_kappa_and_raw_agreement_computed_by_hand(with_judge: Any) -> None:
    suite = with_judge()
    judged = next(a for a in suite.tasks["transfer"].outcome_assertions if a.id == "reply")
    assert isinstance(judged, JudgeAssertion)
    found = measure(_proof(suite), judged)
    assert found.items == 8 and found.errors == []
    assert found.kappa == pytest.approx(KAPPA) and found.raw == pytest.approx(RAW)


@pytest.mark.parametrize(("threshold", "valid"), [(0.4, True), (0.5, True), (0.51, False)])
def test_a_judge_below_its_threshold_makes_the_task_invalid(
    with_judge: Any, monkeypatch: pytest.MonkeyPatch, threshold: float, valid: bool
) -> None:
    # Only the judge's check: the other proofs of the bank task are tested elsewhere.
    monkeypatch.setattr(checks, "CHECKS", {"judge_agreement": check_judge_agreement})
    validity = validate_task(with_judge(min_agreement=threshold), "transfer")
    assert validity.valid is valid
    outcome = validity.check("judge_agreement")
    assert outcome.passed is valid
    assert "reply: kappa 0.500 (min " in outcome.detail and "raw agreement 0.750" in outcome.detail
    assert ("below the declared agreement" in outcome.detail) is not valid
    if not valid:
        assert [c.name for c in validity.failures] == ["judge_agreement"]


def test_a_judge_that_agrees_by_chance_only_fails(with_judge: Any, tmp_path: Path) -> None:
    """Raw agreement 7/8 but every human says False: kappa 0, not a judge."""
    suite = with_judge()
    skewed = [(f"Reply {n}.", False) for n in range(7)] + [("Moved 30.", False)]
    (tmp_path / "bank" / "judges" / "reply.jsonl").write_text(_lines(skewed))
    passed, detail = check_judge_agreement(_proof(suite))
    assert not passed and "below the declared agreement" in detail


def test_a_judge_that_raises_on_a_labelled_item_fails_the_check(with_judge: Any) -> None:
    passed, detail = check_judge_agreement(_proof(with_judge("raises")))
    assert not passed and "the judge failed on 8: item-1: KeyError" in detail


def test_a_task_without_judges_passes_the_check(bank: Suite) -> None:
    assert check_judge_agreement(Proof(bank, bank.tasks["transfer"])) == (
        True,
        "no judged assertions",
    )


def test_a_bad_labelled_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text(_lines([("ok", True)]) + '{"id": "x", "final_message": "y"}\n')
    with pytest.raises(SpecError) as caught:
        load_labels(path)
    assert (caught.value.line, caught.value.field) == (2, "label")
    path.write_text("\n")
    with pytest.raises(SpecError, match="empty"):
        load_labels(path)


def test_new_labels_prove_the_task_again(with_judge: Any, tmp_path: Path) -> None:
    """The labels are evidence about the judge, not part of it: the grader revision stays."""
    old = with_judge()
    (tmp_path / "bank" / "judges" / "reply.jsonl").write_text(_lines(LABELLED[:6]))
    new = with_judge()
    assert new.tasks["transfer"].grader_revision == old.tasks["transfer"].grader_revision
    assert validation_key(new, new.tasks["transfer"]) != validation_key(old, old.tasks["transfer"])
