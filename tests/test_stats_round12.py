"""Statistics audit, twelfth round: every figure the product prints or exports, recomputed
from the records by a reference written here (exact fractions, ``math.comb``), and found the
same in each output."""

from __future__ import annotations

import asyncio
import json
import math
import zipfile
from fractions import Fraction
from math import comb
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from groundstate.analysis import summarize_batch, tries
from groundstate.cli.diagnosis import _number
from groundstate.report.html import render_batch
from groundstate.report.terminal import print_run
from groundstate.runner import BatchRunner
from groundstate.stats import Outcome, compare, summarize
from groundstate.stats import summary as summary_module
from groundstate.store import RunStore
from groundstate.testing import FaultyEnvironments
from groundstate.trace import ModelCallEvent, ModelResponse, ModelUsage
from tests.test_runner_round8 import _bank, stopped_before_its_rerun
from tests.test_stats_independent import cli, import_text, report

# --- the Inspect export's accuracy is the report's success rate ------------------------------


def test_the_inspect_header_accuracy_is_the_mean_of_its_per_task_means(tmp_path: Path) -> None:
    """t1 has one valid attempt (a success) and one invalid, t2 two failures: the report's
    success rate and Inspect's accuracy over epochs (the mean of the per-task reductions) are
    (1 + 0) / 2 = 0.5; the header said 1/3, a pooled mean over valid attempts."""
    rows = "task_id,attempt,success,terminal_reason\n" + "".join(
        f"{t},{a},{s},{r}\n"
        for t, a, s, r in [
            ("t1", 0, 1, ""),
            ("t1", 1, 0, "environment_failure"),
            ("t2", 0, 0, ""),
            ("t2", 1, 0, ""),
        ]
    )
    batch = import_text(tmp_path, rows)
    out = tmp_path / "out.eval"
    code, _, err = cli("export", batch, "--format", "inspect", "--out", str(out),
                       "--store", str(tmp_path / "s.db"))  # fmt: skip
    assert code == 0, err
    with zipfile.ZipFile(out) as archive:
        header = json.loads(archive.read("header.json"))
        reductions = json.loads(archive.read("reductions.json"))[0]["samples"]
    accuracy = header["results"]["scores"][0]["metrics"]["accuracy"]["value"]
    means = {s["sample_id"]: s["value"] for s in reductions}
    assert means == {"t1": 1.0, "t2": 0.0}
    want = (Fraction(1, 1) + Fraction(0, 2)) / 2
    assert accuracy == float(want) == report(tmp_path, batch)["success_rate"]["estimate"]


# --- an unpaired side without spread is not taken as known ----------------------------------


def test_an_unpaired_side_whose_tasks_all_agree_is_not_taken_as_known() -> None:
    """a: six tasks at 4/4; b: six at 3/4 but one at 2/4. a's own interval is the exact bound
    [0.541, 1] (0.025 ** (1/6)), yet the Welch difference took a's spread of 0 as known: an
    interval [-0.399, -0.185] and p = 0.0009. Since the thirteenth round the difference adds
    a's exact bound to b's interval (Newcombe's square-and-add, `test_stats_round13.py`): no
    SE, no t, an interval that holds 0; since the fourteenth round a spread on both sides gets
    the square-and-add too."""
    a = [Outcome(f"a{i}", j, True) for i in range(6) for j in range(4)]
    b = [Outcome(f"b{i}", j, j < (2 if i == 5 else 3)) for i in range(6) for j in range(4)]
    found = compare(a, b, n_boot=0)
    assert found.mode == "unpaired"
    for d in found.differences:
        assert d.a.se is None and d.a.method == "exact_bound" and d.difference.se is None
        assert d.difference.method == "mover" and d.statistic is None
    rate = found.find("success_rate")
    assert rate.a.ci_low == pytest.approx(0.025 ** (1 / 6))
    assert rate.difference.estimate == pytest.approx(float(Fraction(17, 24) - 1), abs=1e-12)
    assert rate.difference.ci_high > 0 and rate.p_value > 0.05  # type: ignore[operator]
    # with spread on both sides: the square-and-add too since the fourteenth round (Welch before)
    a2 = [Outcome(f"a{i}", j, j < 1 + i % 3) for i in range(6) for j in range(4)]
    d2 = compare(a2, b, n_boot=0).find("success_rate").difference
    assert d2.method == "mover" and d2.ci_low is not None


# --- a run's own figures print as the reports' figures do ------------------------------------


def test_a_runs_partial_score_and_a_model_calls_cost_never_print_as_0_or_1(
    tmp_path: Path,
) -> None:
    """A partial score of 0.9996 printed "1.00" beside "success: no" in `show` and the HTML run
    view (0.004: "0.00"), and a model call's cost of 1e-7 "0.000000" in both."""
    batch = import_text(
        tmp_path,
        "task_id,attempt,success,partial_score\nt1,0,0,0.9996\nt2,0,0,0.004\n",
    )
    store = str(tmp_path / "s.db")
    with RunStore(Path(store)) as runs_store:
        info, runs = runs_store.batch(batch), runs_store.runs(batch)
    call = ModelCallEvent(
        step=0, at=0.0, provider="p", model="m", request_digest="d", latency_ms=1.0,
        response=ModelResponse(text="hi"), usage=ModelUsage(input_tokens=3, cost=1e-7),
    )  # fmt: skip
    runs = [r.model_copy(update={"observation_action_log": [call]}) for r in runs]
    page = render_batch(info, runs, summarize_batch(info, runs, seed=0), tries(info, runs))
    shown = {}
    for run in runs:
        out = Console(width=200, record=True)
        print_run(out, run)
        shown[run.task_id] = out.export_text()
    for text in (page, *shown.values()):
        assert "cost 1e-07" in text and "0.000000" not in text
    assert "partial score: >0.999" in shown["t1"] and "partial score: 0.004" in shown["t2"]
    assert "partial score &gt;0.999" in page and "partial score 0.004" in page


# --- an infinite or negative cost or latency is refused, naming its attempt ------------------


@pytest.mark.parametrize("field", ["cost", "latency"])
@pytest.mark.parametrize("value", [math.inf, -math.inf, -0.5])
def test_an_infinite_or_negative_cost_or_latency_is_refused_by_name(
    field: str, value: float
) -> None:
    """An infinite latency gave a mean, median and p90 of NaN (not JSON) and a negative cost
    lowered the total; None (not known) is still left out and counted as unknown."""
    outcomes = [Outcome(f"t{i}", 0, True, **{field: 1.0}) for i in range(5)]
    bad = Outcome("t9", 2, False, **{field: value})
    with pytest.raises(ValueError, match=rf"^{field} .* of task 't9' attempt 2 is not a finite"):
        summarize([*outcomes, bad], n_boot=0)
    unknown = summarize([*outcomes, Outcome("t9", 2, False, **{field: None})], n_boot=0)
    spread = getattr(unknown, field)
    assert (spread.total, spread.mean, spread.unknown) == (5.0, 1.0, 1)


# --- `batches` agrees with `report` on an unfinished batch ----------------------------------


def test_batches_calls_a_batch_with_reruns_due_incomplete_as_report_does(tmp_path: Path) -> None:
    """A batch stopped after an invalid try, before its rerun: `report` says INCOMPLETE (its
    gates fail), `batches` said "1/1 complete"."""
    store = tmp_path / "runs.db"
    batch_id = stopped_before_its_rerun(store)
    code, out, err = cli("report", str(batch_id), "--json", "--store", str(store))
    assert json.loads(out)["missing_attempts"]["reruns_pending"] == 1, err
    code, out, err = cli("batches", "--json", "--store", str(store))
    assert code == 0, err
    (listed,) = json.loads(out)
    assert (listed["attempts_stored"], listed["attempts_expected"]) == (1, 1)
    assert (listed["status"], listed["reruns_pending"]) == ("incomplete", 1)
    code, out, err = cli("batches", "--store", str(store))
    assert "incomplete (1 rerun due)" in " ".join(out.split())
    suite, system = _bank(max_retries=2)
    with RunStore(store) as runs:  # the resume spends the reruns: complete
        again = BatchRunner(suite, system, runs, make_env=FaultyEnvironments(rate=1.0))
        asyncio.run(again.resume(str(batch_id)))
    (listed,) = json.loads(cli("batches", "--json", "--store", str(store))[1])
    assert (listed["status"], listed["reruns_pending"]) == ("complete", 0)


# --- agreement below chance ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [(-0.0004, ">-0.001"), (-0.99996, "<-0.999"), (-0.25, "-0.250"), (-1.0, "-1.000"),
     (0.0004, "<0.001"), (0.99996, ">0.999")],
)  # fmt: skip
def test_a_kappa_near_0_or_minus_1_never_prints_as_either(value: float, shown: str) -> None:
    """A kappa of -0.0004 printed "-0.000" in `agreement` and `labels` (a positive one printed
    "<0.001"), and -0.99996 "-1.000"."""
    assert _number(value) == shown
    assert _number(value, 12) == f"{shown} (12)"


def test_the_note_of_tasks_all_at_one_inner_value_never_names_an_end_of_the_range() -> None:
    """Six tasks each scored 0.9996: the estimate prints ">0.999", and its note said "all 6
    tasks have the value 1.000", the value of the exact bound's case; 0.0004 said 0.000."""
    for score, named in ((0.9996, "0.9996"), (0.0004, "0.0004"), (0.5, "0.500")):
        found = summarize(
            [Outcome(f"t{i}", 0, True, partial_score=score) for i in range(6)], n_boot=0
        ).views["valid"]
        assert found.partial_score is not None
        assert found.partial_score.note == (
            f"all 6 tasks have the value {named}: exact bound (Markov's inequality on each side)"
        )


def test_a_task_outweighing_the_rest_to_0_degrees_of_freedom_gives_no_interval() -> None:
    """Weights 1e17, 1, 1, 1, 1: Kish's effective number of tasks is 1 within float precision,
    0 degrees of freedom, a t quantile of NaN, and the "interval" [0, 1] with df 0.0 came from
    comparisons with NaN. Now n/a, as where the weight leaves no measurable spread; and an
    unpaired difference with such a side says n/a too (Welch divided by its df)."""
    weights = [1e17, 1.0, 1.0, 1.0, 1.0]

    def side(prefix: str, wins: list[int]) -> list[Outcome]:
        return [Outcome(f"{prefix}{i}", j, j < c, weight=w) for i, (c, w) in
                enumerate(zip(wins, weights, strict=True)) for j in range(2)]  # fmt: skip

    a = side("a", [1, 0, 2, 2, 0])
    rate = summarize(a, n_boot=0).views["valid"].success_rate
    assert rate is not None and rate.ci_low is None and rate.df is None
    assert rate.note == "n/a: one task's weight leaves no measurable spread between tasks"
    d = compare(a, side("b", [2, 1, 0, 2, 1]), n_boot=0).find("success_rate")
    assert d.difference.ci_low is None and d.p_value is None


# --- one task of many attempts ---------------------------------------------------------------


def test_one_task_of_many_attempts_does_not_size_every_tasks_curve(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """99 tasks of 2 attempts and one of 4,000: the report stops at k = 2, yet pass@k and
    pass^k were computed for every task up to k = 4,000 (a 100 x 4,000 array, and several
    temporaries; at 100,000 attempts 5 s and 460 MB). Counted in cells of the curves made;
    the figures are unchanged, the one task's own slice still runs to its own k."""
    cells: list[int] = []
    real = summary_module.pass_curves

    def counted(n: Any, c: Any, kmax: int) -> Any:
        cells.append(len(n) * kmax)
        return real(n, c, kmax)

    monkeypatch.setattr(summary_module, "pass_curves", counted)
    outcomes = [Outcome(f"t{i:02d}", j, (i + j) % 2 == 0, slice_labels=("small",))
                for i in range(99) for j in range(2)]  # fmt: skip
    outcomes += [Outcome("big", j, j % 3 == 0, slice_labels=("big",)) for j in range(4_000)]
    found = summarize(outcomes, n_boot=0).views["valid"]
    assert found.kmax == 2 and sorted(found.pass_hat_k) == [1, 2]
    assert found.by_label["big"].kmax == 4_000
    big = found.by_label["big"].pass_hat_k[3].estimate
    assert big == pytest.approx(float(Fraction(comb(1334, 3), comb(4_000, 3))), rel=1e-9)
    # each view: the big task's own slice up to its k, and the rest (views, slices) to k = 2
    assert sum(cells) <= 2 * 4_000 + 10 * 100 * 2
