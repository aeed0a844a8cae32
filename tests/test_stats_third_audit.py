"""Third statistics audit: what tests/test_stats_independent.py does not reach.

Each reference here is computed another way than the code under test (bisection instead of
the closed form, the CSV rows instead of the store).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundstate.stats import interval_rule
from groundstate.stats.intervals import exact_reach
from tests.test_stats_independent import cli, import_text, ref_max_product, ref_reach, report

# --- the exact bound when every task is at the top, with unequal weights ---------------------


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.25, 10.0, 100.0]), min_size=5, max_size=12))
def test_the_exact_bound_holds_for_any_weights(weights: list[float]) -> None:
    """At the lower bound, no task means of that weighted mean put every task at 1 with a
    chance above 0.025 (it would then not be a 97.5% bound), and the bound is tight."""
    reach = exact_reach(np.array(weights))
    assert ref_max_product(weights, reach) == pytest.approx(0.025, rel=1e-6)
    assert reach == pytest.approx(ref_reach(weights), abs=1e-9)
    low = interval_rule(np.ones(len(weights)), np.array(weights)).low
    assert low == pytest.approx(reach, abs=1e-12)
    # Every task at 0: the mirror image.
    high = interval_rule(np.zeros(len(weights)), np.array(weights)).high
    assert high == pytest.approx(1 - reach, abs=1e-12)


def test_kish_tasks_in_place_of_the_weights_were_not_a_bound() -> None:
    """The former rule, 0.025^(1/T_eff), let all tasks reach 1 with chance 0.036 at these
    weights: its 'exact' 97.5% bound held 96.4% of the time at best."""
    weights = [2.0, 10.0, 10.0, 10.0, 2.0, 3.25, 3.25, 2.0, 10.0, 3.25, 3.25]
    kish = math.fsum(weights) ** 2 / math.fsum(w * w for w in weights)
    assert ref_max_product(weights, 0.025 ** (1 / kish)) > 0.035
    low = interval_rule(np.ones(len(weights)), np.array(weights)).low
    assert low is not None and ref_max_product(weights, low) <= 0.025 + 1e-9
    # Equal weights: the textbook 0.025^(1/T).
    assert exact_reach(np.ones(10)) == pytest.approx(0.025**0.1)


# --- costs: reruns are paid for; terminal and HTML print the same amounts ---------------------

RERUN_ROWS = [
    "task_id,attempt,retry,success,terminal_reason,cost,latency",
    "t1,0,0,false,environment_failure/setup,0.5,2",
    "t1,0,1,true,success,0.00004,0.0001",
    "t2,0,0,false,agent_failure,0.00002,0.0003",
    "t3,0,0,false,grader_failure,0.25,1",
    "t3,0,1,false,grader_failure,0.25,1",
]


def test_the_cost_of_all_tries_includes_reruns_and_tiny_costs_do_not_print_as_zero(
    tmp_path: Path,
) -> None:
    """An outside sum of the cost column (every try) is 1.00006; the counted attempts alone
    cost 0.25006. A cost of 0.00004 per success is not 0.0000 in either report."""
    batch = import_text(tmp_path, "\n".join(RERUN_ROWS) + "\n")
    got = report(tmp_path, batch)
    every = [float(row.split(",")[5]) for row in RERUN_ROWS[1:]]
    assert got["tries"]["cost"] == pytest.approx(math.fsum(every))
    assert got["summary"]["cost"]["total"] == pytest.approx(0.00004 + 0.00002 + 0.25)
    assert got["summary"]["cost_per_success"] == pytest.approx(0.25006)  # one success

    code, text, err = cli("report", batch, "--store", str(tmp_path / "s.db"),
                          "--html", str(tmp_path / "r.html"))  # fmt: skip
    assert code == 0, err
    flat = " ".join(text.split())
    assert "cost of all tries, reruns included: 1.0001 (counted attempts: 0.2501)" in flat
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Cost: total 0.2501 over counted attempts, 1.0001 over all tries" in page
    assert "per success 0.2501" in page and "per success 0.2501" in flat
    # A run's own tiny cost and latency keep their value.
    assert "cost 4e-05" in page and "0.0001s" in page


def test_without_reruns_the_report_names_no_second_cost(tmp_path: Path) -> None:
    rows = ["task_id,attempt,success,terminal_reason,cost", "t1,0,true,success,0.5",
            "t1,1,false,environment_failure,0.25"]  # fmt: skip
    batch = import_text(tmp_path, "\n".join(rows) + "\n")
    assert report(tmp_path, batch)["tries"]["cost"] == pytest.approx(0.75)
    code, text, _ = cli("report", batch, "--store", str(tmp_path / "s.db"),
                        "--html", str(tmp_path / "r.html"))  # fmt: skip
    assert code in (0, 3) and "cost of all tries" not in text
    assert "over counted attempts" not in (tmp_path / "r.html").read_text(encoding="utf-8")


# --- degrees of freedom with unequal weights ------------------------------------------------


def test_one_heavy_task_widens_the_interval_to_its_nominal_coverage() -> None:
    """Ten tasks, one of weight 10, p ~ Beta(2, 1.5), four attempts each: T - 1 = 9 df
    covered 87%; Kish's effective number of tasks (3.3) minus 1 covers at least 92%.
    Equal weights keep T - 1 exactly."""
    from groundstate.stats.intervals import degrees_of_freedom

    rng = np.random.default_rng(7)
    weights = np.array([10.0] + [1.0] * 9)
    truth, held, drawn = 2 / 3.5, 0, 0
    for _ in range(600):
        values = rng.binomial(4, rng.beta(2, 1.5, 10)) / 4
        rule = interval_rule(values, weights)
        if rule.low is None or rule.high is None:
            continue
        drawn += 1
        held += rule.low <= truth <= rule.high
    assert held / drawn >= 0.92
    assert degrees_of_freedom(weights) == pytest.approx(19**2 / 109 - 1)
    assert degrees_of_freedom(np.ones(7)) == 6 and isinstance(degrees_of_freedom(np.ones(7)), int)


def test_the_paired_p_value_and_interval_agree_with_unequal_weights() -> None:
    """The interval of a weighted paired difference excludes 0 exactly when p < 0.05: both
    use the same (effective) degrees of freedom."""
    from groundstate.stats import Outcome, compare

    rng = np.random.default_rng(3)
    for trial in range(40):
        weights = rng.choice([0.5, 1.0, 4.0, 12.0], 8)
        a, b = [], []
        for i, w in enumerate(weights):
            for j in range(4):
                a.append(Outcome(f"t{i}", j, bool(rng.random() < 0.5), weight=float(w)))
                b.append(Outcome(f"t{i}", j, bool(rng.random() < 0.5 + 0.05 * trial % 0.4),
                                 weight=float(w)))  # fmt: skip
        d = compare(a, b, n_boot=0).find("success_rate")
        if d.difference.method != "t_cr1" or d.p_value is None:
            continue
        assert d.difference.ci_low is not None and d.difference.ci_high is not None
        excludes = d.difference.ci_low > 0 or d.difference.ci_high < 0
        assert excludes == (d.p_value < 0.05), (trial, d.p_value, d.difference)


@settings(max_examples=30, deadline=None)
@given(
    weights=st.lists(st.sampled_from([0.5, 1.0, 2.0, 10.0, 100.0]), min_size=5, max_size=9),
    sign=st.sampled_from([1, -1]),
)
def test_every_task_moving_the_whole_range_gives_a_p_value_agreeing_with_its_bound(
    weights: list[float], sign: int
) -> None:
    """Every task goes from 0 to 1 (or 1 to 0): the interval is the exact bound, and its
    p-value is below 0.05 exactly when the bound excludes 0. With equal weights it is the
    sign test 2 * 0.5^T; one heavy task makes it large (the sign test said 2 * 0.5^6 =
    0.031 for weights 100, 1, 1, 1, 1, 1 while the bound reached -0.86)."""
    from groundstate.stats import Outcome, compare

    a = [Outcome(f"t{i}", 0, sign < 0, weight=w) for i, w in enumerate(weights)]
    b = [Outcome(f"t{i}", 0, sign > 0, weight=w) for i, w in enumerate(weights)]
    d = compare(a, b, n_boot=0).find("success_rate")
    assert d.difference.method == "exact_bound" and d.p_value is not None
    low, high = d.difference.ci_low, d.difference.ci_high
    assert low is not None and high is not None
    assert (low > 0 or high < 0) == (d.p_value < 0.05)
    # the independent reference: twice the largest product at a weighted mean of 0.5
    assert d.p_value == pytest.approx(min(1.0, 2 * ref_max_product(weights, 0.5)), rel=1e-6)
    if len(set(weights)) == 1:
        assert d.p_value == pytest.approx(2 * 0.5 ** len(weights))


def test_a_huge_finite_weight_reports_without_overflow(tmp_path: Path) -> None:
    """A weight of 1e300 is finite and positive, so an import takes it; squared it was
    infinite and the report crashed (OverflowError) or warned. Now that task carries the
    mean and the rest of the tasks' spread is not measurable: said so, no interval."""
    rows = ["task_id,attempt,success,terminal_reason,weight"]
    for i in range(6):
        weight = "1e300" if i == 0 else "1"
        second = "true,success" if i < 3 else "false,agent_failure"
        rows += [f"t{i},0,true,success,{weight}", f"t{i},1,{second},{weight}"]
    batch = import_text(tmp_path, "\n".join(rows) + "\n")
    code, out, err = cli("report", batch, "--json", "--store", str(tmp_path / "s.db"))
    assert code == 0 and "Warning" not in err, err
    got = json.loads(out)
    assert got["success_rate"]["estimate"] == pytest.approx(1.0)
    assert (
        got["success_rate"]["ci_low"] is None
        and "no measurable spread" in (got["success_rate"]["note"])
    )
    # All weights equally huge: the same numbers as all weights 1.
    same = interval_rule(np.array([0.2, 0.5, 0.7, 1.0, 0.0]), np.full(5, 1e300))
    plain = interval_rule(np.array([0.2, 0.5, 0.7, 1.0, 0.0]), np.ones(5))
    assert (same.low, same.high, same.df) == (plain.low, plain.high, plain.df)


# --- statistics after an interrupted batch is resumed with reruns ---------------------------


def test_report_after_an_interrupted_and_resumed_batch_counts_each_attempt_once(
    tmp_path: Path,
) -> None:
    """Half the environments break; the batch stops after its first stored try and is
    resumed. Recomputed from every stored try (the last try of each attempt counts, every
    try is a try): each denominator of `report --json`."""
    import asyncio
    import signal

    from groundstate.runner import BatchConfig, BatchRunner, Interrupted
    from groundstate.spec.suite import load_suite
    from groundstate.spec.system import InvalidRunPolicy, load_system
    from groundstate.store import RunStore
    from groundstate.testing import FaultyEnvironments

    from .conftest import BANK, BANK_SYSTEM

    suite = load_suite(BANK)
    suite.config = suite.config.model_copy(update={"canary": None})
    system = load_system(BANK_SYSTEM).model_copy(
        update={"invalid_run_policy": InvalidRunPolicy(max_retries=1, max_invalid_rate=1.0)}
    )
    store_path = tmp_path / "s.db"
    with RunStore(store_path) as store:
        runner = BatchRunner(suite, system, store, make_env=FaultyEnvironments(rate=0.5, seed=3))
        seen: list[str] = []

        def stop(run: object) -> None:
            seen.append("x")
            if len(seen) == 1:
                runner.interrupt.signum = signal.SIGINT

        runner.on_run = stop
        with pytest.raises(Interrupted):
            asyncio.run(runner.start(BatchConfig(attempts=2)))
        batch_id = runner.batch_id
        assert batch_id is not None
        again = BatchRunner(suite, system, store, make_env=FaultyEnvironments(rate=0.5, seed=4))
        asyncio.run(again.resume(batch_id))
        stored = store.runs(batch_id)
    last: dict[tuple[str, int], Any] = {}
    for run in sorted(stored, key=lambda r: r.retry):
        last[(run.task_id, run.attempt)] = run
    assert len({(r.task_id, r.attempt, r.retry) for r in stored}) == len(stored)
    assert len(stored) > len(last)  # some attempts were rerun
    got = report(tmp_path, batch_id)
    assert got["tries"]["tries"] == len(stored)
    assert got["tries"]["invalid_tries"] == sum(not r.valid for r in stored)
    assert got["valid_attempts"] + got["invalid_attempts"] == len(last)
    assert got["invalid_attempts"] == sum(not r.valid for r in last.values())
    assert got["missing_attempts"] is None
    for row in got["tasks"]:
        mine = [r for (t, _), r in last.items() if t == row["task_id"]]
        assert row["strict"]["n"] == len(mine) == 2
        assert row["valid"]["n"] == sum(r.valid for r in mine)
        assert row["valid"]["c"] == sum(r.valid and r.success for r in mine)
    assert got["tries"]["cost"] == pytest.approx(math.fsum(r.cost for r in stored))
