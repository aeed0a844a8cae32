"""Statistics audit, ninth round: what an outside re-computation found (docs/statistics.md)."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.gates import failure_line, gate_results, parse_gate
from groundstate.report.numbers import NO_VALID_FIGURE, incomplete_text, p_value
from groundstate.stats import Outcome, compare, summarize, task_counts
from groundstate.store import RunStore
from tests.test_stats_independent import cli, import_text


def five_tasks(*extra: Outcome) -> list[Outcome]:
    return [Outcome(f"t{i}", a, (i + a) % 2 == 0) for i in range(5) for a in range(2)] + list(extra)


@pytest.mark.parametrize(
    "repeat",
    [
        # an imported row given twice
        Outcome("t1", 0, False),
        # an invalid try and its rerun given as two outcomes of one attempt
        Outcome("t3", 1, False, valid=False, terminal_reason="environment_failure"),
    ],
)
def test_an_attempt_given_twice_is_refused_by_name_not_counted_twice(repeat: Outcome) -> None:
    records = five_tasks(repeat)
    name = f"'{repeat.task_id}' attempt {repeat.attempt} (2x)"
    for count in (
        lambda: summarize(records, n_boot=10),
        lambda: task_counts(records, "strict"),
        lambda: compare(records, five_tasks(), n_boot=10),
        lambda: compare(five_tasks(), records, n_boot=10),
    ):
        with pytest.raises(ValueError, match="given more than once") as raised:
            count()
        assert name in str(raised.value)
    # one outcome per attempt: counted as given
    assert summarize(five_tasks(), n_boot=10).views["strict"].success_rate.attempts == 10


# --- gates ----------------------------------------------------------------------------------


def test_no_gate_passes_on_an_unfinished_batch() -> None:
    """A gate read the numbers of the attempts stored: a batch stopped before its hard tasks
    passed ``--fail-under success_rate=0.9`` on the easy ones."""
    headline = {"success_rate": {"estimate": 1.0}, "pass_at_k": {}, "pass_hat_k": {}}
    gates = [parse_gate("success_rate=0.9")]
    assert gate_results(gates, {**headline, "missing_attempts": None})[0]["passed"] is True
    missing = {"count": 6, "planned": 10, "tasks_without_any": ["hard"], "reruns_pending": 0}
    for pending in ({"missing_attempts": missing},
                    {"missing_attempts": {**missing, "count": 0, "tasks_without_any": [],
                                          "reruns_pending": 2}}):  # fmt: skip
        (result,) = gate_results(gates, {**headline, **pending})
        assert result["passed"] is False and result["value"] == 1.0
        line = failure_line(result)
        assert line.startswith("success_rate = 1.000 is not a verdict (gate 0.9)")
        assert incomplete_text(pending["missing_attempts"]) in line


def test_report_fail_under_exits_4_on_an_interrupted_batch(tmp_path: Path) -> None:
    from groundstate.runner import BatchConfig, BatchRunner, Interrupted
    from groundstate.spec.suite import load_suite
    from groundstate.spec.system import load_system

    from .conftest import BANK, BANK_SYSTEM

    suite = load_suite(BANK)
    suite.config = suite.config.model_copy(update={"canary": None})
    store = tmp_path / "runs.db"
    with RunStore(store) as runs:
        runner = BatchRunner(suite, load_system(BANK_SYSTEM), runs)
        runner.on_run = lambda run: setattr(runner.interrupt, "signum", signal.SIGTERM)
        with pytest.raises(Interrupted):
            asyncio.run(runner.start(BatchConfig(attempts=3)))
        batch_id = runner.batch_id
    assert batch_id is not None
    args = ["report", batch_id, "--store", str(store), "--fail-under", "success_rate=0"]
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 4, result.output
    (gate,) = json.loads(result.stdout)["fail_under"]
    assert gate["passed"] is False and "incomplete" in gate["incomplete"]
    assert "is not a verdict (gate 0): the batch is incomplete" in result.stderr


# --- printed numbers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "alpha", "printed"),
    [
        (0.000496, 0.0005, "0.000496"),  # was "0.0005": a changed task's q printed as the FDR
        (0.000504, 0.0005, "0.000504"),
        (0.00049, 0.00049001, "0.00049"),  # g drops trailing zeros: no spurious digits
        (0.0004, 0.05, "0.0004"),
        (0.0498, 0.05, "0.0498"),
    ],
)
def test_a_small_p_or_q_value_prints_apart_from_its_alpha(
    value: float, alpha: float, printed: str
) -> None:
    assert p_value(value, alpha) == printed


@pytest.mark.parametrize("score", [1.5, -0.25, float("inf"), float("-inf")])
def test_a_partial_score_outside_0_to_1_is_refused_naming_its_task(score: float) -> None:
    """1.5 on four tasks of six gave a partial score of 1.4 with the interval [1.27, 1.0]."""
    records = [Outcome(f"t{i}", 0, i % 2 == 0, partial_score=0.5) for i in range(6)]
    records[3] = Outcome("t3", 0, False, partial_score=score)
    with pytest.raises(ValueError, match=r"task 't3': partial score .* outside \[0, 1\]"):
        summarize(records, n_boot=10)
    assert summarize(records[:3], n_boot=10).views["valid"].partial_score is not None


def test_an_unpaired_comparison_weighs_a_shared_task_with_as_weight_as_paired_does() -> None:
    """With --allow-mismatch "a's weights are used"; unpaired, b's side kept its own weight
    for the shared task, so b's value was another weighting of b than the one compared."""

    def side(prefix: str, weight: float) -> list[Outcome]:
        return [
            Outcome(task, 0, task.endswith("0") or task == "shared", weight=w)
            for task, w in [*((f"{prefix}{i}", 1.0) for i in range(5)), ("shared", weight)]
        ]

    got = compare(side("a", 1.0), side("b", 9.0), n_boot=0, allow_mismatch=True)
    assert got.mode == "unpaired" and any("weight differs" in m for m in got.mismatches)
    b = got.find("success_rate").b
    assert b.estimate == pytest.approx(2 / 6)  # b0 and shared succeed, each at weight 1


def test_a_comparison_says_its_valid_view_is_empty_instead_of_leaving_it_out(
    tmp_path: Path,
) -> None:
    """a's attempts were all invalid: the terminal and HTML showed the strict view alone,
    without a word on the valid view (the JSON has it empty)."""
    head = "task_id,attempt,success,terminal_reason\n"
    invalid = "".join(f"t{i},{j},false,environment_failure\n" for i in range(5) for j in range(2))
    valid = "".join(f"t{i},{j},{'true' if j else 'false'},\n" for i in range(5) for j in range(2))
    a, b = import_text(tmp_path, head + invalid, "a"), import_text(tmp_path, head + valid, "b")
    page = tmp_path / "c.html"
    code, out, err = cli("compare", a, b, "--store", str(tmp_path / "s.db"), "--html", str(page))
    assert code == 0, err
    assert f"valid attempts: {NO_VALID_FIGURE}" in " ".join(out.split())
    html = page.read_text(encoding="utf-8")
    assert f'<p class="alert" data-view="valid">{NO_VALID_FIGURE}' in html
    assert 'data-view="strict"' in html
