"""The columnar path large batches take gives exactly what the per-record path gives."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from groundstate.analysis import OutcomeTable, batch_report, outcomes
from groundstate.cli import main
from groundstate.stats import Outcome, bootstrap_ks, summarize, task_counts
from groundstate.store import RunStore

REASONS = ["success", "agent_failure/step_limit", "environment_failure/reset", "grader_failure"]

outcome_lists = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c", "d"]),
        st.sampled_from(REASONS),
        st.one_of(st.none(), st.floats(0, 1)),
    ),
    min_size=1,
    max_size=40,
)


def _outcomes(rows: list[tuple[str, str, float | None]]) -> list[Outcome]:
    return [
        Outcome(task, i, reason == "success", not reason.startswith(("env", "grader")), reason,
                partial_score=score)
        for i, (task, reason, score) in enumerate(rows)
    ]  # fmt: skip


@given(outcome_lists)
def test_columnar_counts_match_counting_attempt_by_attempt(
    rows: list[tuple[str, str, float | None]],
) -> None:
    outcomes = _outcomes(rows)
    for view in ("valid", "strict"):
        for counted in task_counts(outcomes, view):
            mine = [o for o in outcomes if o.task_id == counted.task_id]
            valid = [o for o in mine if o.valid]
            assert counted.n == (len(valid) if view == "valid" else len(mine))
            assert counted.c == sum(o.success for o in valid)
            assert counted.invalid == len(mine) - len(valid)
            scores = [o.partial_score for o in valid if o.partial_score is not None]
            rubrics = any(o.valid and o.partial_score is not None for o in outcomes)
            if not scores:  # strict: a task's invalid attempts score 0 under rubrics
                zeros = view == "strict" and len(mine) > len(valid) and rubrics
                assert counted.partial == (0.0 if zeros else None)
            else:
                zeros = len(mine) - len(valid) if view == "strict" else 0
                assert counted.partial == pytest.approx(math.fsum(scores) / (len(scores) + zeros))


def test_final_keeps_the_last_try_of_each_attempt_in_any_row_order() -> None:
    rows = [
        ("b", 1, 0, "success", True, 1.0, 1.0, None),
        ("a", 2, 1, "agent_failure", False, 1.0, 1.0, 0.5),
        ("a", 1, 0, "environment_failure", False, 1.0, 1.0, None),
        ("a", 2, 0, "grader_failure", False, 1.0, 1.0, None),
        ("a", 1, 1, "success", True, 2.0, 1.0, None),
    ]
    final = OutcomeTable.from_rows(rows).final()
    names = [final.task_ids[i] for i in final.task.tolist()]
    kept = zip(names, final.attempt.tolist(), final.retry.tolist(), strict=True)
    assert list(kept) == [("a", 1, 1), ("a", 2, 1), ("b", 1, 0)]
    assert final.valid().tolist() == [True, True, True]
    assert final.cost.tolist() == [2.0, 1.0, 1.0]


def test_report_from_record_fields_equals_report_from_whole_records(tmp_path: Path) -> None:
    lines = ["task_id,attempt,success,terminal_reason,cost,latency,slice_labels"]
    for t in range(7):
        for attempt in range(1, 5):
            reason = ["success", "agent_failure", "environment_failure"][(t * attempt) % 3]
            lines.append(
                f"t{t},{attempt},{int(reason == 'success')},{reason},{t / 10},{attempt},s{t % 2}"
            )
    (tmp_path / "r.csv").write_text("\n".join(lines) + "\n")
    store = tmp_path / "runs.db"
    result = CliRunner().invoke(
        main, ["import-results", str(tmp_path / "r.csv"), "--name", "x", "--store", str(store)]
    )
    assert result.exit_code == 0, result.stderr
    with RunStore(store) as run_store:
        batch = run_store.batch()
        runs = run_store.runs(batch.batch_id)
        from_records = batch_report(batch, runs, seed=4)
        from_fields = batch_report(
            batch, OutcomeTable.from_rows(run_store.outcome_rows(batch.batch_id)), seed=4
        )
    assert from_fields == from_records
    # The record-by-record path of the library (Outcome objects) agrees with the columns.
    by_outcome = summarize(outcomes(batch, runs), seed=4)
    assert by_outcome.to_dict() == from_records["summary"]
    assert from_fields["invalid_attempts"] > 0 and from_fields["summary"]["cost"]["total"] > 0


def test_the_bootstrap_check_covers_a_handful_of_k_and_the_t_interval_every_k() -> None:
    assert bootstrap_ks(12) == [1, 2, 3, 5, 10, 12]
    assert bootstrap_ks(1000) == [1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000]
    outcomes = [Outcome(f"t{t}", a, (a * t) % 3 == 0) for t in range(6) for a in range(12)]
    view = summarize(outcomes, n_boot=100).views["valid"]
    boot = {k for k, e in view.pass_hat_k.items() if e.boot_low is not None}
    assert boot == {1, 2, 3, 5, 10, 12}
    assert all(e.method != "none" or e.note for e in view.pass_hat_k.values())
