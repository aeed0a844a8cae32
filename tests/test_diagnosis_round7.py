"""Seventh audit of issue 11: decisions and diagnosis, recomputed from outside.

Every figure is recomputed here with scipy/numpy or by hand, on the edges the earlier
audits did not reach: paired pilots sharing few tasks, plans below the smallest suite
``compare`` can test, ``compare`` with tasks of one batch only, unequal attempts per task and
a task whose every attempt was invalid on one side (the whole CLI path, JSON against the
terminal and the HTML page), the per-task tests against ``scipy.stats`` on ties and on
all-pass / all-fail, and agreement with a labeller who never varies or labels outside the
taxonomy.
"""

from __future__ import annotations

import csv
import html
import json
import math
import re
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from groundstate.agreement import agreement, cohen_kappa, krippendorff_alpha
from groundstate.cli import main
from groundstate.planning import paired_difference, plan, power_of, tasks_needed
from groundstate.stats import MIN_TASKS, Outcome, TaskCounts, compare
from tests.test_stats_round13 import ref_mover


def _tc(task: str, n: int, c: int) -> TaskCounts:
    return TaskCounts(task, n, c, 0, 1.0, (), None, "")


# --- planning ----------------------------------------------------------------------------------


def test_paired_pilots_sharing_few_tasks_plan_on_those_and_say_so() -> None:
    """Two pilots of 30 tasks sharing 3: the difference was measured on 3 tasks, but the plan
    said its pilot had 30 (no "rough" warning, marginal values at T = 30) and did not
    mention the 54 tasks left out."""
    a = [_tc(f"t{i:02}", 4, i % 5) for i in range(30)]
    b = [_tc(f"t{i:02}", 4, (i + 2) % 5) for i in range(27, 57)]
    got = plan([a, b])
    assert got.difference.n_tasks == got.pilot_tasks == got.marginal.tasks == 3
    assert [c.n_tasks for c in got.components] == [30, 30]  # each pilot described whole
    left = got.warnings[0]
    assert "share 3 tasks" in left and "27 only in pilot A" in left and "27 only in pilot B" in left
    assert "t00" in left and "t30" in left
    assert any("pilot has 3 tasks" in w for w in got.warnings)
    # the same pilots restricted to what they share give the same difference
    assert paired_difference(a, b) == paired_difference(a[27:], b[:3])


def test_pilots_on_the_same_tasks_have_no_left_out_warning() -> None:
    a = [_tc(f"t{i}", 4, i % 5) for i in range(12)]
    b = [_tc(f"t{i}", 4, (i + 1) % 5) for i in range(12)]
    got = plan([a, b])
    assert got.pilot_tasks == 12
    assert not any("left out" in w for w in got.warnings)
    # a task with no valid attempt in one pilot is left out of the pairing, and named
    b[0] = TaskCounts("t0", 0, 0, 4, 1.0, (), None, "")
    got = plan([a, b])
    assert got.pilot_tasks == 11
    assert "1 only in pilot A (t0)" in got.warnings[0]


def test_a_plan_never_asks_for_fewer_tasks_than_compare_can_test() -> None:
    """A large difference with little noise: the normal formula asked for 2 tasks, and the
    power grid promised power near 1 with 3, but ``compare`` prints no p-value under 5."""
    pilot = [_tc(f"t{i}", 4, c) for i, c in enumerate([0, 1, 3, 4, 2, 2, 1, 3])]
    got = plan([pilot], delta=1.0, power=0.8)
    # the t test's power on 4 df needs 7 tasks at one attempt (thirteenth round), 5 from 2 on
    assert min(got.tasks_needed.values()) == MIN_TASKS and got.tasks_needed[1] == 7
    d = got.difference
    assert tasks_needed(d, 2, 1.0, 0.8, 0.05) == MIN_TASKS
    for tasks in range(1, MIN_TASKS):
        assert power_of(d, tasks, 4, 1.0, 0.05) == 0.0
    # from 5 tasks on the grid is the power of compare's paired t test (noncentral t on
    # T - 1 df, since the thirteenth round), recomputed
    se = np.sqrt(d.variance(MIN_TASKS, 4))
    crit = scipy_stats.t.isf(0.025, MIN_TASKS - 1)
    nct = scipy_stats.nct(MIN_TASKS - 1, 1.0 / se)
    want = nct.sf(crit) + nct.cdf(-crit)
    assert power_of(d, MIN_TASKS, 4, 1.0, 0.05) == pytest.approx(want, abs=1e-12)
    # a pilot of 3 tasks: its row of the grid says the truth, power 0
    small = plan([pilot[:3]], delta=1.0)
    assert set(small.power_grid[3].values()) == {0.0}


Compared = tuple[dict[str, Any], str, str]
"""``compare --json``'s data, the terminal text and the HTML page's text."""

# --- compare through the CLI, recomputed ---------------------------------------------------------

# Task -> each attempt's end: 1 success, 0 failure, "E" an environment failure (invalid).
A_SIDE: dict[str, list[int | str]] = {
    "t0": [1, 0], "t1": [1, 1, 0, 0], "t2": [0], "t3": [1, 1, 1], "t4": [0, 0, 1, 0],
    "t5": [1, 0, 1], "t6": ["E", "E"], "t7": [0, 0], "t8": [1, 1], "only_a": [1, 0],
}  # fmt: skip
B_SIDE: dict[str, list[int | str]] = {
    "t0": [1, 1, 1, 0, 1], "t1": [1, 1], "t2": [1, 1, 1], "t3": [1, 1, 1, 1], "t4": [0, 1],
    "t5": [1, "E", 1], "t6": [1, 0, 1], "t7": [1, 1, 1, 1, 1, 1], "t8": [1, 1],
    "only_b": [0],
}  # fmt: skip


ENDS = {"1": "success", "0": "agent_failure/incorrect_state", "E": "environment_failure"}


def _write(path: Path, side: dict[str, list[int | str]]) -> None:
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["task_id", "attempt", "success", "terminal_reason"])
        for task, ends in side.items():
            for j, end in enumerate(ends, start=1):
                reason = ENDS[str(end)]
                out.writerow([task, j, int(end == 1), reason])


def _cli(*args: str) -> tuple[int, str, str]:
    got = CliRunner().invoke(main, list(args))
    return got.exit_code, got.stdout, got.stderr


def _rates(side: dict[str, list[int | str]], view: str) -> dict[str, tuple[int, int]]:
    """(successes, counted attempts) per task with a counted attempt."""
    out = {}
    for task, ends in side.items():
        counted = ends if view == "strict" else [e for e in ends if e != "E"]
        if counted:
            out[task] = (sum(e == 1 for e in counted), len(counted))
    return out


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Compared:
    tmp = tmp_path_factory.mktemp("cmp")
    store = str(tmp / "s.db")
    ids = []
    for name, side in (("a", A_SIDE), ("b", B_SIDE)):
        _write(tmp / f"{name}.csv", side)
        code, out, err = _cli("import-results", str(tmp / f"{name}.csv"), "--name", name,
                              "--store", store)  # fmt: skip
        assert code == 0, err
        ids.append(out.strip().splitlines()[-1].removeprefix("batch "))
    code, out, err = _cli("compare", *ids, "--store", store, "--json")
    assert code == 0, err
    data = json.loads(out)
    code, text, err = _cli("compare", *ids, "--store", store, "--html", str(tmp / "c.html"))
    assert code == 0, err
    page = re.sub(
        r"<style.*?</style>|<script.*?</script>", "", (tmp / "c.html").read_text(), flags=re.S
    )
    page = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))
    return data, text, page


@pytest.mark.parametrize("view", ["valid", "strict"])
def test_compare_equals_scipys_paired_t_test_over_honest_denominators(
    compared: Compared,
    view: str,
) -> None:
    """Tasks of one batch only are dropped and named; t6 (every attempt of a invalid) is out
    of the valid view's pairing but in the strict view's, as failures; unequal attempts per
    task; every figure equals scipy's paired t test on the per-task rates."""
    data, _, _ = compared
    assert (data["only_in_a"], data["only_in_b"], data["excluded_tasks"]) == (
        ["only_a"], ["only_b"], ["t6"],
    )  # fmt: skip
    assert data["dropped_tasks"] == 3
    a, b = _rates(A_SIDE, view), _rates(B_SIDE, view)
    shared = sorted(a.keys() & b.keys())
    assert len(shared) == (8 if view == "valid" else 9)
    ra = np.array([a[t][0] / a[t][1] for t in shared])
    rb = np.array([b[t][0] / b[t][1] for t in shared])
    ref = scipy_stats.ttest_rel(rb, ra)
    ci = ref.confidence_interval()
    got = data["metrics"][view]["success_rate"]
    assert got["difference"]["n_tasks"] == len(shared)
    assert got["difference"]["attempts"] == sum(a[t][1] + b[t][1] for t in shared)
    assert got["difference"]["estimate"] == pytest.approx(float(np.mean(rb - ra)), abs=1e-12)
    assert got["statistic"] == pytest.approx(ref.statistic, rel=1e-9)
    assert got["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert got["difference"]["ci_low"] == pytest.approx(ci.low, abs=1e-9)
    assert got["difference"]["ci_high"] == pytest.approx(min(1.0, ci.high), abs=1e-9)
    assert got["a"]["estimate"] == pytest.approx(float(ra.mean()), abs=1e-12)
    # the common k is the fewest counted attempts of any paired task on either side
    assert data["common_k"][view] == min(min(a[t][1], b[t][1]) for t in shared)


def test_per_task_tests_equal_scipy_fisher_and_bh(compared: Compared) -> None:
    data, _, _ = compared
    a, b = _rates(A_SIDE, "valid"), _rates(B_SIDE, "valid")
    rows = data["per_task"]
    assert [r["task_id"] for r in rows] == data["paired_tasks"]
    p = []
    for r in rows:
        (ac, an), (bc, bn) = a[r["task_id"]], b[r["task_id"]]
        assert (r["a_c"], r["a_n"], r["b_c"], r["b_n"]) == (ac, an, bc, bn)
        want = scipy_stats.fisher_exact([[ac, an - ac], [bc, bn - bc]]).pvalue
        assert r["p_value"] == pytest.approx(want, rel=1e-12)
        p.append(want)
    q = scipy_stats.false_discovery_control(p, method="bh")
    assert [r["q_value"] for r in rows] == pytest.approx(q.tolist(), rel=1e-12)
    assert data["per_task_test"]["changed"] == sum(x <= 0.05 for x in q)


def test_terminal_and_html_give_the_json_denominators(compared: Compared) -> None:
    data, text, page = compared
    head = " ".join(text.split())
    assert (
        "8 tasks in both with valid attempts, 3 dropped (1 only in a, 1 only in b, 1 without"
        in head
    )
    assert "the strict view also counts the tasks without valid attempts, as failures" in head
    assert "only in a: only_a" in text and "only in b: only_b" in text
    assert "excluded tasks: t6" in text
    assert "over 8 shared tasks; 3 tasks dropped" in page
    assert (
        "Without valid attempts on one side (the strict view counts them, as failures) t6" in page
    )
    for view in ("valid", "strict"):
        d = data["metrics"][view]["success_rate"]["difference"]
        # interval ends are printed outward (twenty-first round): low down, high up
        low, high = math.floor(d["ci_low"] * 1000) / 1000, math.ceil(d["ci_high"] * 1000) / 1000
        ends = f"{low:+.3f}, {high:+.3f}]"
        assert f"{d['estimate']:+.3f} [{ends}" in page
        assert ends in text


# --- paired tests on their edges -------------------------------------------------------------


def _outcomes(cells: dict[str, tuple[int, int]]) -> list[Outcome]:
    return [Outcome(t, j + 1, j < c) for t, (n, c) in cells.items() for j in range(n)]


def test_the_sign_test_of_huge_equal_weights_is_the_sign_test() -> None:
    """Every task moved from 0 to 1 with weights of 1e308 (finite, importable): the chance of
    that at a mean difference of 0 summed the weights to infinity and gave p = 1 (with
    overflow warnings); equal weights of any size give 2 * 0.5^T."""
    for weight in (1e308, 1e-300, 1.0):
        a = [Outcome(f"t{i}", j, False, weight=weight) for i in range(6) for j in range(2)]
        b = [Outcome(f"t{i}", j, True, weight=weight) for i in range(6) for j in range(2)]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            d = compare(a, b, n_boot=50).find("success_rate")
        assert d.p_value == pytest.approx(2 * 0.5**6, rel=1e-12)
        assert d.difference.ci_low == pytest.approx(-1 + 2 * 0.025 ** (1 / 6), rel=1e-9)


def test_public_weighted_mean_and_se_are_scale_free() -> None:
    """``weighted_mean([0, 1], [1e308, 1e308])`` was 0.0 (the weighted sum overflowed) and
    ``clustered_se`` of weights 1e200 was inf; by hand 0.5 and sd / sqrt(T) = 0.2887."""
    from groundstate.stats import clustered_se, weighted_mean

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert weighted_mean([0.0, 1.0], [1e308, 1e308]) == 0.5
        assert weighted_mean([0.0, 1.0], [3e307, 1e308]) == pytest.approx(1 / 1.3)
        for weight in (1e200, 1.0, 1e-300):
            se = clustered_se([0.0, 1.0, 0.0, 1.0], [weight] * 4)
            assert se == pytest.approx(float(np.std([0, 1, 0, 1], ddof=1) / 2), rel=1e-12)


def test_no_task_moved_gives_no_test_rather_than_a_p_value() -> None:
    """Every paired difference 0 (ties everywhere, zero discordant tasks): the difference is
    0 with no t test, and said so; no task is called changed. Since the thirteenth round the
    interval is Markov's exact bound on each side and p = 1."""
    cells = {f"t{i}": (3, i % 4) for i in range(7)}
    got = compare(_outcomes(cells), _outcomes(cells), n_boot=0)
    d = got.find("success_rate")
    assert (d.difference.estimate, d.p_value, d.statistic) == (0.0, 1.0, None)
    half = 1 - 0.025 ** (1 / 7)
    assert (d.difference.ci_low, d.difference.ci_high) == pytest.approx((-half, half))
    assert "all 7 tasks have the value 0.000: exact bound" in d.difference.note
    assert all(t.p_value == 1.0 and t.q_value == 1.0 for t in got.per_task)


def test_all_fail_to_all_pass_is_the_exact_sign_test_and_fisher_per_task() -> None:
    """T tasks all 0/2 in a and 2/2 in b: p = 2 * 0.5^T (by hand), the exact bound
    1 - 2 * (0.025)^(1/T) ... in the difference's own scale, and Fisher's 1/3 per task."""
    for tasks in (5, 6, 9):
        a = {f"t{i}": (2, 0) for i in range(tasks)}
        b = {f"t{i}": (2, 2) for i in range(tasks)}
        got = compare(_outcomes(a), _outcomes(b), n_boot=0)
        d = got.find("success_rate")
        assert d.p_value == pytest.approx(2 * 0.5**tasks, rel=1e-12)
        # on the unit scale the bound is 0.025^(1/T); on [-1, 1] it is -1 + 2 * that
        assert d.difference.ci_low == pytest.approx(-1 + 2 * 0.025 ** (1 / tasks), rel=1e-9)
        assert d.difference.ci_high == 1.0
        assert all(t.p_value == pytest.approx(1 / 3) for t in got.per_task)
        assert not got.changed  # 1/3 each: nothing survives, whatever the FDR control


# --- agreement on its edges, by hand -----------------------------------------------------------


def test_a_labeller_who_never_varies_by_hand() -> None:
    """Rater 1 always says a; rater 2 says a, a, b, b. By hand: p_o = 1/2 and p_e = 1 x 1/2
    (Cohen 0); Fleiss: P = 1/2, shares 6/8 and 2/8, P_e = 5/8, kappa -1/3; Krippendorff: the
    coincidences o_aa = 4, o_ab = o_ba = 2, n_a = 6, n_b = 2, N = 8, alpha = 1 - 7 * 4 / 24."""
    rows = [["a", "a"], ["a", "a"], ["a", "b"], ["a", "b"]]
    got = agreement(rows)
    assert got.cohen_kappa == pytest.approx(0.0, abs=1e-15)
    assert got.fleiss_kappa == pytest.approx(-1 / 3, rel=1e-12)
    assert got.krippendorff_alpha == pytest.approx(1 - 7 * 4 / 24, rel=1e-12)
    assert got.percent_agreement == pytest.approx(0.5, rel=1e-12)


@pytest.mark.parametrize("units", [1, 2, 7])
def test_raters_who_never_vary(units: int) -> None:
    same = agreement([["ok", "ok"]] * units)
    assert (same.cohen_kappa, same.fleiss_kappa, same.krippendorff_alpha) == (None, None, None)
    assert same.percent_agreement == 1.0
    # each in a category of their own: always disagreeing, never varying
    apart = agreement([["ok", "bug"]] * units)
    assert apart.cohen_kappa == 0.0  # p_o = p_e = 0
    assert apart.fleiss_kappa == pytest.approx(-1.0)  # P = 0, P_e = 1/2
    n = 2 * units  # alpha = 1 - (N - 1) * 2u / (N^2 - 2u^2)
    assert apart.krippendorff_alpha == pytest.approx(1 - (n - 1) * n / (n * n - 2 * units**2))
    assert apart.percent_agreement == 0.0


def test_missing_ratings_leave_the_units_each_statistic_says() -> None:
    rows: list[list[str | None]] = [["a", None], [None, "b"], ["a", "a"], ["b", "b"], ["a", "b"]]
    got = agreement(rows)
    assert (got.units, got.cohen_units, got.fleiss_units, got.alpha_units) == (5, 3, 3, 3)
    assert got.cohen_kappa == cohen_kappa(rows[2:])
    assert got.krippendorff_alpha == krippendorff_alpha(rows[2:])


def test_many_units_equal_an_independent_count() -> None:
    """A grader's verdicts on a large batch: 20,000 attempts, three raters, missing ratings;
    every statistic from numpy counts (the per-unit loop took seconds at 100,000)."""
    rng = np.random.default_rng(11)
    labels = np.array(["true", "false", "invalid"])
    codes = rng.choice(3, size=(20_000, 3), p=[0.6, 0.3, 0.1])
    codes[:, 1] = np.where(rng.random(20_000) < 0.7, codes[:, 0], codes[:, 1])
    missing = rng.random((20_000, 3)) < 0.1
    rows = [
        [None if gone else str(labels[c]) for c, gone in zip(row, blank, strict=True)]
        for row, blank in zip(codes, missing, strict=True)
    ]
    counts = np.stack([np.where(missing, 0, codes == k).sum(axis=1) for k in range(3)], axis=1)
    m = counts.sum(axis=1)
    pairable = counts[m >= 2]
    w = pairable / (pairable.sum(axis=1) - 1)[:, None]
    o = pairable.T @ w - np.diag(w.sum(axis=0))
    n_c, total = o.sum(axis=1), o.sum()
    alpha = 1 - (total - 1) * (total - np.trace(o)) / (total**2 - n_c @ n_c)
    full = counts[m == 3]
    p_i = ((full**2).sum(axis=1) - 3) / 6
    shares = full.sum(axis=0) / full.sum()
    fleiss = (p_i.mean() - shares @ shares) / (1 - shares @ shares)
    got = agreement(rows)
    assert got.krippendorff_alpha == pytest.approx(alpha, rel=1e-9)
    assert got.percent_agreement == pytest.approx(np.trace(o) / total, rel=1e-9)
    assert got.fleiss_kappa == pytest.approx(fleiss, rel=1e-9)
    assert (got.alpha_units, got.fleiss_units) == (int((m >= 2).sum()), len(full))


def test_huge_finite_task_weights_plan_without_overflow() -> None:
    """A weight of 1e300 (finite, positive: importable) crashed ``plan`` with an
    OverflowError (its square); equal weights of 1e200 did too. By hand: one task of eight
    carrying all the weight leaves T_eff = 1, an inflation of 8; equal weights, 1; a weight
    of 3 among seven of 1, 8 * (9 + 7) / (3 + 7)^2 = 1.28."""
    for heavy, inflation in ((1e300, 8.0), (3.0, 1.28), (1.0, 1.0)):
        pilot = [TaskCounts(f"t{i}", 4, i % 5, 0, heavy if i == 0 else 1.0, (), None, "")
                 for i in range(8)]  # fmt: skip
        assert plan([pilot]).difference.weight_inflation == pytest.approx(inflation)
    even = [TaskCounts(f"t{i}", 4, i % 5, 0, 1e200, (), None, "") for i in range(8)]
    assert plan([even]).difference.weight_inflation == pytest.approx(1.0)


def test_a_refused_pilot_of_two_is_named() -> None:
    """Two pilots, one with a single attempt per task: the refusal said "the pilot" without
    saying which of the two batches to rerun."""
    from groundstate.planning import PlanningError

    good = [_tc(f"t{i}", 4, i % 5) for i in range(6)]
    single = [_tc(f"t{i}", 1, i % 2) for i in range(6)]
    with pytest.raises(PlanningError, match=r"^pilot B: every task of the pilot has a single"):
        plan([good, single])
    with pytest.raises(PlanningError, match=r"^pilot A: every task"):
        plan([single, good])
    with pytest.raises(PlanningError, match=r"^every task"):  # one pilot: nothing to name
        plan([single])
    # pilot A has repeated attempts, but not on the tasks the pilots share
    a = [_tc(f"t{i}", 4 if i >= 3 else 1, i % 2) for i in range(6)]
    b = [_tc(f"t{i}", 3, i % 2) for i in range(3)]
    with pytest.raises(PlanningError, match=r"^pilot A on the 3 tasks the pilots share: every"):
        plan([a, b])


def test_a_batch_with_every_attempt_invalid_is_compared_unpaired_and_the_note_says_how() -> None:
    """b's infrastructure was down: no valid attempt, so no pairing in the valid view and the
    comparison is unpaired. The note said "6 tasks of a with 0 tasks of b" beside a strict
    view over 6 tasks of b; it says which view the counts are of. The strict view's b is 0
    on every task: since the twelfth round its spread of 0 is not taken as known (Welch gave
    p = 0.041 while b's own exact bound reaches 0.46); since the thirteenth the difference
    adds b's exact bound to a's interval (Newcombe's square-and-add): p = 0.23."""
    a = [Outcome(f"t{i}", j, j < i % 3) for i in range(6) for j in range(3)]
    invalid = {"valid": False, "terminal_reason": "environment_failure"}
    b = [Outcome(f"t{i}", j, False, **invalid) for i in range(6) for j in range(3)]  # type: ignore[arg-type]
    got = compare(a, b, n_boot=0)
    assert got.mode == "unpaired" and got.excluded_tasks == tuple(f"t{i}" for i in range(6))
    assert "6 tasks of a with 0 tasks of b with valid attempts (the strict view" in got.notes[0]
    assert not [d for d in got.differences if d.view == "valid"]
    d = got.find("success_rate", "strict")
    rates = np.array([i % 3 / 3 for i in range(6)])
    assert d.difference.estimate == pytest.approx(-rates.mean(), abs=1e-12)
    assert d.b.method == "exact_bound" and d.b.ci_high == pytest.approx(1 - 0.025 ** (1 / 6))
    assert (
        d.difference.method == "mover"
        and "side b with every task at one value" in d.difference.note
    )
    assert d.p_value is not None and d.p_value > 0.05 and d.difference.ci_high > 0  # type: ignore[operator]


def test_one_paired_task_is_named_in_the_singular() -> None:
    got = compare(_outcomes({"x": (3, 1)}), _outcomes({"x": (3, 3)}), n_boot=0)
    assert got.notes == ("only 1 paired task: intervals are n/a",)
    d = got.find("success_rate")
    assert d.difference.estimate == pytest.approx(2 / 3) and d.p_value is None
    assert d.difference.note == "n/a: 1 task, intervals need at least 5"


def test_agreement_short_of_perfect_never_prints_as_perfect(tmp_path: Path) -> None:
    """Two graders agreeing on 2,499 of 2,500 attempts: an agreement of 0.9996 printed as
    1.000, which reads as perfect; it prints >0.999 (the JSON keeps it)."""
    store = str(tmp_path / "s.db")
    ids = []
    for name, flip in (("a", False), ("b", True)):
        rows = ["task_id,attempt,success"]
        rows += [f"t{j % 2},{j // 2 + 1},{int(j % 4 < 2) ^ (flip and j == 0)}" for j in range(2500)]
        (tmp_path / f"{name}.csv").write_text("\n".join(rows) + "\n")
        code, out, err = _cli("import-results", str(tmp_path / f"{name}.csv"), "--name", name,
                              "--store", store)  # fmt: skip
        assert code == 0, err
        ids.append(out.strip().splitlines()[-1].removeprefix("batch "))
    code, out, err = _cli("agreement", *ids, "--json", "--store", store)
    assert code == 0, err
    got = json.loads(out)["agreement"]
    assert got["percent_agreement"] == pytest.approx(2499 / 2500)
    # A says true on 1250, B on 1249 (the flipped attempt was a success)
    p_e = (1250 / 2500) * (1249 / 2500) + (1250 / 2500) * (1251 / 2500)
    assert got["cohen_kappa"] == pytest.approx((2499 / 2500 - p_e) / (1 - p_e), rel=1e-12)
    code, text, err = _cli("agreement", *ids, "--store", store)
    assert code == 0, err
    row = next(line for line in text.splitlines() if "success" in line and "(2500)" in line)
    assert "1.000" not in row and ">0.999" in row, row


# --- sampling failures -------------------------------------------------------------------------


def test_allocation_by_hand_and_its_documented_over_representation() -> None:
    """Strata of 90 and 10 failed runs: --n 10 gives each its share (9, 1); --n 4 gives the
    small stratum 1 of 4 places, 25% against its 10% of failures (docs/diagnosis.md says so);
    every allocation fills min(n, failures) places, never more than a stratum holds, and one
    per stratum when there is room."""
    from groundstate.diagnosis.sampling import allocate

    sizes = {"big": 90, "small": 10}
    assert allocate(sizes, 10, ["big", "small"]) == {"big": 9, "small": 1}
    assert allocate(sizes, 4, ["small", "big"]) == {"big": 3, "small": 1}
    rng = np.random.default_rng(5)
    for _ in range(300):
        strata = {f"s{i}": int(x) for i, x in enumerate(rng.integers(1, 30, rng.integers(1, 8)))}
        n = int(rng.integers(1, 120))
        order = [str(s) for s in rng.permutation(list(strata))]
        got = allocate(strata, n, order)
        places = min(n, sum(strata.values()))
        assert sum(got.values()) == places
        assert all(0 <= got[s] <= strata[s] for s in strata)
        if places >= len(strata):
            assert min(got.values()) >= 1


# --- k limits in a comparison ------------------------------------------------------------------


def test_a_task_with_one_attempt_on_one_side_is_named_for_stopping_k() -> None:
    """Eight tasks with 4 attempts a side, t3 with 1 in b: pass@k and pass^k of the whole
    comparison stop at k = 1 (the common k), which ``compare`` did not say; ``report`` names
    such tasks. A batch with fewer attempts everywhere is no task's fault: no note."""
    a = {f"t{i}": (4, i % 5) for i in range(8)}
    got = compare(_outcomes(a), _outcomes({**a, "t3": (1, 1)}), n_boot=0)
    assert got.common_k == {"valid": 1, "strict": 1}
    assert [d.k for d in got.differences if d.metric == "pass_hat_k" and d.view == "valid"] == [1]
    for view, note in zip(("valid", "strict"), got.notes, strict=True):
        assert note == (
            f"{view} view: pass@k and pass^k stop at k = 1, though each batch has a task with "
            "4 counted attempts; tasks with fewer: t3 (a 4, b 1)"
        )
    fewer = compare(
        _outcomes(a), _outcomes({t: (2, min(c, 2)) for t, (_, c) in a.items()}), n_boot=0
    )
    assert fewer.common_k["valid"] == 2 and fewer.notes == ()
    # a task whose attempts were all invalid on one side limits the strict view only
    invalid = {"valid": False, "terminal_reason": "environment_failure"}
    b = [*_outcomes(a), Outcome("t9", 1, False, **invalid)]  # type: ignore[arg-type]
    c = compare(_outcomes({**a, "t9": (4, 2)}), b, n_boot=0)
    assert c.common_k == {"valid": 4, "strict": 1}
    assert c.notes == (
        "strict view: pass@k and pass^k stop at k = 1, though each batch has a task with 4 "
        "counted attempts; tasks with fewer: t9 (a 4, b 1)",
    )


def test_unpaired_k_limits_name_the_side(compared: Compared) -> None:
    a = {f"a{i}": (4, i % 5) for i in range(6)}
    b = {f"b{i}": (4, i % 3) for i in range(6)} | {"b0": (2, 1)}
    got = compare(_outcomes(a), _outcomes(b), n_boot=0)
    assert got.mode == "unpaired" and got.common_k["valid"] == 2
    assert got.notes[1].endswith("tasks with fewer: b0 in b (2)")
    # the CLI fixture: t2 has 1 attempt in a, so the comparison stops at k = 1; every view
    # says which tasks
    data, text, page = compared
    assert data["common_k"] == {"valid": 1, "strict": 1}
    note = next(n for n in data["notes"] if n.startswith("valid view"))
    assert "t2 (a 1, b 3)" in note and "t0 (a 2, b 5)" in note
    assert note in " ".join(text.split()) and note in page


# --- Fisher's exact test, many tables at once ----------------------------------------------------


def _exact_fisher(a_c: int, a_n: int, b_c: int, b_n: int) -> Fraction:
    """By enumeration in rationals: the tables with both margins, at most as likely."""
    wins, total = a_c + b_c, a_n + b_n

    def chance(x: int) -> Fraction:
        return Fraction(
            math.comb(wins, x) * math.comb(total - wins, a_n - x), math.comb(total, a_n)
        )

    seen = chance(a_c)
    support = range(max(0, a_n - (total - wins)), min(a_n, wins) + 1)
    return sum((chance(x) for x in support if chance(x) <= seen), Fraction(0))


def test_fisher_p_values_equal_exact_rationals_and_scipy_with_ties() -> None:
    """Every table of up to 7 attempts a side (equal sizes give exactly tied tables on both
    tails) against rationals, and larger unequal tables against scipy; identical tables give
    p = 1 exactly."""
    from groundstate.stats.compare import fisher_ps

    cells = [(ac, an, bc, bn) for an in range(1, 8) for bn in range(1, 8)
             for ac in range(an + 1) for bc in range(bn + 1)]  # fmt: skip
    got = fisher_ps(*zip(*cells, strict=True))
    for (ac, an, bc, bn), p in zip(cells, got, strict=True):
        assert p == pytest.approx(float(_exact_fisher(ac, an, bc, bn)), rel=1e-11)
        if ac * bn == bc * an:  # the same rate on both sides: the most likely table
            assert p == 1.0
    rng = np.random.default_rng(8)
    an, bn = rng.integers(1, 400, 300), rng.integers(1, 400, 300)
    ac, bc = rng.binomial(an, 0.3), rng.binomial(bn, 0.35)
    got = fisher_ps(ac, an, bc, bn)
    for i in range(0, 300, 7):
        table = [[ac[i], an[i] - ac[i]], [bc[i], bn[i] - bc[i]]]
        assert got[i] == pytest.approx(scipy_stats.fisher_exact(table).pvalue, rel=1e-9)


def test_plan_command_names_the_tasks_two_pilots_do_not_share(tmp_path: Path) -> None:
    """Through the CLI: JSON and terminal give the shared tasks as the pilot's and the
    warning naming the rest; the numbers are the library's on the shared tasks alone."""
    store = str(tmp_path / "s.db")
    ids = []
    for name, tasks, shift in (("a", range(0, 12), 0), ("b", range(4, 16), 1)):
        rows = ["task_id,attempt,success"]
        rows += [
            f"t{i:02},{j + 1},{int((i + j + shift) % 3 == 0)}" for i in tasks for j in range(3)
        ]
        (tmp_path / f"{name}.csv").write_text("\n".join(rows) + "\n")
        code, out, err = _cli("import-results", str(tmp_path / f"{name}.csv"), "--name", name,
                              "--store", store)  # fmt: skip
        assert code == 0, err
        ids.append(out.strip().splitlines()[-1].removeprefix("batch "))
    code, out, err = _cli("plan", *ids, "--json", "--store", store)
    assert code == 0, err
    data = json.loads(out)
    assert data["pilot_tasks"] == data["difference"]["n_tasks"] == 8
    assert [c["n_tasks"] for c in data["components"]] == [12, 12]
    assert data["warnings"][0].startswith("the pilots share 8 tasks with valid attempts")
    assert "4 only in pilot A (t00, t01, t02, t03)" in data["warnings"][0]
    a = [_tc(f"t{i:02}", 3, sum((i + j) % 3 == 0 for j in range(3))) for i in range(4, 12)]
    b = [_tc(f"t{i:02}", 3, sum((i + j + 1) % 3 == 0 for j in range(3))) for i in range(4, 12)]
    alone = paired_difference(a, b)
    assert data["difference"]["between"] == pytest.approx(alone.between, abs=1e-12)
    assert data["difference"]["within"] == pytest.approx(alone.within, abs=1e-12)
    code, text, err = _cli("plan", *ids, "--store", store)
    assert code == 0, err
    assert "4 only in pilot B (t12, t13, t14, t15)" in " ".join(text.split())


# --- the bootstrap second opinion -------------------------------------------------------------


def test_no_zero_width_bootstrap_beside_an_na_or_an_exact_bound() -> None:
    """One task: every bootstrap resample is that task, [v, v] in single precision
    (0.33333334 beside an estimate of 0.33333333); every task at 1: [1, 1] beside the exact
    bound. Neither is a second opinion: null. With a spread between tasks it stays."""
    from groundstate.stats import summarize

    one = summarize([Outcome("x", j, j < 1) for j in range(3)], n_boot=200)
    view = one.views["valid"]
    for e in [view.success_rate, *view.pass_at_k.values(), *view.pass_hat_k.values()]:
        assert e is not None and (e.boot_low, e.boot_high) == (None, None)
    top = summarize([Outcome(f"t{i}", j, True) for i in range(6) for j in range(2)], n_boot=200)
    rate = top.views["valid"].success_rate
    assert rate is not None and rate.method == "exact_bound" and rate.boot_low is None
    spread = summarize([Outcome(f"t{i}", j, j < i % 3) for i in range(6) for j in range(2)])
    rate = spread.views["valid"].success_rate
    assert rate is not None and rate.boot_low is not None and rate.boot_high is not None
    assert rate.boot_low < rate.estimate < rate.boot_high
    # a comparison of one task, and of tasks that all moved by the whole range
    got = compare(_outcomes({"x": (3, 1)}), _outcomes({"x": (3, 3)}))
    assert all(d.difference.boot_low is None and d.a.boot_low is None for d in got.differences)
    a, b = {f"t{i}": (2, 0) for i in range(6)}, {f"t{i}": (2, 2) for i in range(6)}
    d = compare(_outcomes(a), _outcomes(b)).find("success_rate").difference
    assert d.method == "exact_bound" and (d.boot_low, d.boot_high) == (None, None)


# --- compare on generated batches: honest denominators in both views ------------------------

REASON = {"ok": "success", "fail": "agent_failure/x", "invalid": "environment_failure"}
END = st.sampled_from(list(REASON))
SIDE = st.dictionaries(
    st.sampled_from([f"t{i}" for i in range(12)]), st.lists(END, min_size=1, max_size=5),
    min_size=1, max_size=12,
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(SIDE, SIDE)
@example(  # t's p 0.374, the bound of five tasks at -1/3 0.475 (found by a CI run)
    a={t: ["ok"] for t in ("t0", "t1", "t2", "t3", "t4")},
    b={"t0": ["ok"], "t1": ["ok"], "t2": ["ok"], "t3": ["ok"], "t4": ["ok", "ok", "fail"]},
)
def test_generated_comparisons_equal_an_outside_reference(
    a: dict[str, list[str]], b: dict[str, list[str]]
) -> None:
    """Task sets that overlap in part, 1 to 5 attempts a task, invalid attempts anywhere: the
    dropped, only-in and excluded tasks, the mode, each view's tasks, common k and success
    rate difference (scipy's paired t test, or when unpaired Newcombe's square-and-add of the
    two sides' own intervals, Welch's t before the fourteenth round) and the per-task
    tests, all recomputed from the attempts."""

    def outcomes(side: dict[str, list[str]]) -> list[Outcome]:
        return [
            Outcome(t, j, end == "ok", valid=end != "invalid", terminal_reason=REASON[end])
            for t, ends in side.items()
            for j, end in enumerate(ends)
        ]

    def counted(side: dict[str, list[str]], view: str) -> dict[str, tuple[int, int]]:
        out = {}
        for t, ends in side.items():
            kept = ends if view == "strict" else [e for e in ends if e != "invalid"]
            if kept:
                out[t] = (kept.count("ok"), len(kept))
        return out

    got = compare(outcomes(a), outcomes(b), n_boot=0)
    shared = sorted(a.keys() & b.keys())
    va, vb = counted(a, "valid"), counted(b, "valid")
    paired = [t for t in shared if t in va and t in vb]
    assert got.paired_tasks == tuple(paired)
    assert got.only_in_a == tuple(sorted(a.keys() - b.keys()))
    assert got.only_in_b == tuple(sorted(b.keys() - a.keys()))
    assert got.excluded_tasks == tuple(t for t in shared if t not in paired)
    many = len(va) >= 5 and len(vb) >= 5
    assert got.mode == ("unpaired" if len(paired) < 5 and (many or not paired) else "paired")
    for view in ("valid", "strict"):
        ca, cb = counted(a, view), counted(b, view)
        if got.mode == "paired":
            rows = [t for t in shared if t in ca and t in cb]
            xs = np.array([ca[t][0] / ca[t][1] for t in rows])
            ys = np.array([cb[t][0] / cb[t][1] for t in rows])
            ns = [min(ca[t][1], cb[t][1]) for t in rows]
        else:
            xs = np.array([c / n for c, n in ca.values()])
            ys = np.array([c / n for c, n in cb.values()])
            ns = [n for _, n in [*ca.values(), *cb.values()]]
        if not (len(xs) and len(ys)):
            assert not [d for d in got.differences if d.view == view]
            continue
        assert got.common_k[view] == min(ns)
        d = got.find("success_rate", view)
        assert d.difference.estimate == pytest.approx(float(ys.mean() - xs.mean()), abs=1e-12)
        if got.mode == "paired":
            spread = np.ptp(ys - xs) > 1e-12
            assert d.difference.n_tasks == len(xs)
            if len(xs) >= 5 and spread:
                ref = scipy_stats.ttest_rel(ys, xs)
                # since the nineteenth round at least the chance bound of every task at
                # the farthest difference v on the estimate's side: 2 / (1 + |v|)^T
                moved = ys - xs
                farthest = moved.max() if moved.mean() > 0 else -moved.min()
                near = min(1.0, 2 / (1 + farthest) ** len(xs))
                expected = max(ref.pvalue, near)
                assert d.p_value == pytest.approx(expected, rel=1e-9, abs=1e-15)
            elif len(xs) < 5:
                assert d.p_value is None and d.difference.ci_low is None
        elif min(len(xs), len(ys)) >= 5:
            low, high = ref_mover(xs.tolist(), ys.tolist())
            assert (d.difference.ci_low, d.difference.ci_high) == pytest.approx((low, high))
            assert d.p_value is not None and (d.p_value < 0.05) == (low > 0 or high < 0)
            if 1e-12 < d.p_value < 1:  # the level at which the interval reaches 0
                assert min(map(abs, ref_mover(xs.tolist(), ys.tolist(), d.p_value))) < 1e-6
    for change in got.per_task:
        (ac, an), (bc, bn) = va[change.task_id], vb[change.task_id]
        table = [[ac, an - ac], [bc, bn - bc]]
        assert change.p_value == pytest.approx(scipy_stats.fisher_exact(table).pvalue, rel=1e-9)
