"""Statistics audit, thirteenth round: an unpaired side whose tasks all sit at an end of the
range (Newcombe's square-and-add), ``plan`` sized for the test ``compare`` runs, and every
printed figure recomputed here on edge cases (k = n, k > n, ties, one task, unequal
attempts, invalid attempts, weights, slices)."""

from __future__ import annotations

import html
import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from groundstate.planning import DifferenceVariance, paired_difference, power_of, tasks_needed
from groundstate.report.numbers import interval
from groundstate.stats import (
    Estimate,
    Outcome,
    TaskCounts,
    compare,
    compare_counts,
    make_estimate,
    summarize,
    welch,
)
from groundstate.stats.compare import _test
from tests.test_stats_independent import cli, import_text

# --- the reference -----------------------------------------------------------------------------


def ref_level_interval(values: list[float], alpha: float = 0.05) -> tuple[float, float]:
    """docs/statistics.md's level rule, equal weights, written out: the exact bound where
    every task has one value v (Markov on each side: [v r, 1 - (1 - v) r], r = (alpha/2)^(1/T);
    at 1, [r, 1]), else Agresti-Coull on n_eff = u(1-u)/SE^2 with t on T - 1 df."""
    tasks = len(values)
    if len(set(values)) == 1:
        r = (alpha / 2) ** (1 / tasks)
        return values[0] * r, 1 - (1 - values[0]) * r
    u = sum(values) / tasks
    se = float(np.std(values, ddof=1)) / math.sqrt(tasks)
    q = float(scipy_stats.t.isf(alpha / 2, tasks - 1))
    n_eff = u * (1 - u) / se**2
    centre = (u * n_eff + q**2 / 2) / (n_eff + q**2)
    half = q * math.sqrt(centre * (1 - centre) / (n_eff + q**2))
    # each end at least as far as the exact bound of every task at the highest (lowest)
    # value (the seventeenth round)
    r = (alpha / 2) ** (1 / tasks)
    low = min(max(0.0, centre - half), max(values) * r)
    return low, max(min(1.0, centre + half), 1 - (1 - min(values)) * r)


def ref_mover(a: list[float], b: list[float], alpha: float = 0.05) -> tuple[float, float]:
    """Newcombe (1998) method 10 / Zou and Donner (2008): b - a from each side's interval."""
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    (la, ua), (lb, ub) = ref_level_interval(a, alpha), ref_level_interval(b, alpha)
    d = mb - ma
    low = d - math.sqrt((mb - lb) ** 2 + (ua - ma) ** 2)
    high = d + math.sqrt((ub - mb) ** 2 + (ma - la) ** 2)
    return max(-1.0, low), min(1.0, high)


def side(prefix: str, wins: list[int], attempts: int, **extra: object) -> list[Outcome]:
    return [Outcome(f"{prefix}{i}", j, j < c, **extra) for i, c in enumerate(wins)  # type: ignore[arg-type]
            for j in range(attempts)]  # fmt: skip


def shown_mover(d: Estimate, a: Estimate, b: Estimate) -> tuple[float, float]:
    """The square-and-add of the two sides' intervals as printed."""
    assert a.ci_low is not None and a.ci_high is not None
    assert b.ci_low is not None and b.ci_high is not None
    low = d.estimate - math.hypot(b.estimate - b.ci_low, a.ci_high - a.estimate)
    high = d.estimate + math.hypot(b.ci_high - b.estimate, a.estimate - a.ci_low)
    return max(-1.0, low), min(1.0, high)


# --- 1. an unpaired side with every attempt passed ------------------------------------------


def test_an_unpaired_side_whose_every_attempt_passed_gets_newcombes_interval() -> None:
    """a: 50 tasks x 4 attempts, every one passed; b: 50 other tasks at 0.3. The difference
    -0.7 is obvious, yet since the twelfth round it was n/a (a's spread of 0 may not be
    taken as known). Newcombe's square-and-add on each side's own interval (a's exact bound,
    b's Agresti-Coull) gives an interval far from 0 and the p-value it inverts to."""
    wins_b = [1, 2, 1, 0, 2] * 10  # rates 0.25, 0.5, 0.25, 0, 0.5: mean 0.3
    found = compare(side("a", [4] * 50, 4), side("b", wins_b, 4), n_boot=0)
    assert found.mode == "unpaired"
    d = found.find("success_rate")
    rates_a, rates_b = [1.0] * 50, [c / 4 for c in wins_b]
    assert d.difference.estimate == pytest.approx(-0.7)
    assert d.difference.method == "mover" and "square-and-add" in d.difference.note
    assert (d.difference.ci_low, d.difference.ci_high) == pytest.approx(ref_mover(rates_a, rates_b))
    assert d.difference.ci_high is not None and d.difference.ci_high < -0.5
    assert d.p_value is not None and d.p_value < 1e-10 and d.statistic is None
    # the p-value inverts the interval: at level 1 - p its upper end is 0
    assert ref_mover(rates_a, rates_b, d.p_value)[1] == pytest.approx(0, abs=1e-6)
    # every k: the sides' printed intervals, added in squares
    for diff in found.differences:
        if diff.difference.method == "mover":
            shown = shown_mover(diff.difference, diff.a, diff.b)
            assert (diff.difference.ci_low, diff.difference.ci_high) == pytest.approx(shown)
            excludes = diff.difference.ci_low > 0 or diff.difference.ci_high < 0  # type: ignore[operator]
            assert excludes == (diff.p_value is not None and diff.p_value < 0.05)


def test_the_square_and_add_keeps_a_few_agreeing_tasks_uncertain() -> None:
    """The twelfth round's case: six tasks at 4/4 against six at 3/4 (one 2/4). a's own
    bound reaches 0.541, so b - a = -0.29 is no finding (Welch said p = 0.0009); pass^4 (a
    all 1, b all 0) is, and pass@3 (both all 1) is 0 with p = 1."""
    a = side("a", [4] * 6, 4)
    b = side("b", [3, 3, 3, 3, 3, 2], 4)
    found = compare(a, b, n_boot=0)
    rate = found.find("success_rate")
    assert rate.difference.method == "mover"
    assert rate.difference.ci_low < 0 < rate.difference.ci_high  # type: ignore[operator]
    assert rate.p_value is not None and rate.p_value > 0.05
    # b's success rate shows the one interval of the success rate, pass@1 and pass^1 (the
    # sixteenth round): pass@4 is 1 on every task of b, so its exact bound reaches 0.541;
    # b's own interval reaches further, to the exact bound of every task at 0.75, its
    # highest rate (the seventeenth round)
    rates_b = [0.75] * 5 + [0.5]
    own = ref_mover([1.0] * 6, rates_b)
    expected = shown_mover(rate.difference, rate.a, rate.b)
    assert rate.b.ci_low == found.find("pass_at_k", k=1).b.ci_low
    assert rate.b.ci_low == pytest.approx(0.75 * 0.025 ** (1 / 6))
    assert (rate.difference.ci_low, rate.difference.ci_high) == pytest.approx(expected)
    assert (rate.difference.ci_low, rate.difference.ci_high) == pytest.approx(own)
    ends = found.find("pass_hat_k", k=4)  # a: 1 on every task, b: 0 on every task
    reach = 0.025 ** (1 / 6)
    assert ends.difference.ci_high == pytest.approx(-1 + math.sqrt(2) * (1 - reach))
    assert ends.p_value is not None and ends.p_value < 0.05
    assert "both sides" in ends.difference.note
    same = found.find("pass_at_k", k=3)
    assert same.difference.estimate == 0 and same.p_value == 1.0


def test_an_unpaired_side_at_one_inner_value_gets_markovs_bound_and_the_square_and_add() -> None:
    """Every task of a at 2/4 had no interval ("no rule gives one"), so b - a had none either,
    even with b at 1 on every task. A task value X in [0, 1] with mean mu is at least v with
    chance at most mu / v (Markov), so ten tasks all at 0.5 put mu above 0.5 r (r =
    0.025^(1/10)) and, on 1 - X, below 1 - 0.5 r: a's own exact bound, and the square-and-add
    of it with b's."""
    found = compare(side("a", [2] * 10, 4), side("b", [4] * 10, 4), n_boot=0)
    d = found.find("success_rate")
    r = 0.025 ** (1 / 10)
    assert d.a.method == "exact_bound" and "Markov" in d.a.note
    assert (d.a.ci_low, d.a.ci_high) == pytest.approx((0.5 * r, 1 - 0.5 * r))
    assert (d.difference.ci_low, d.difference.ci_high) == pytest.approx(
        ref_mover([0.5] * 10, [1.0] * 10)
    )
    assert d.difference.method == "mover" and "both sides" in d.difference.note
    assert d.p_value is not None and d.p_value < 0.05 and d.difference.ci_low > 0  # type: ignore[operator]


def test_every_task_moving_by_the_same_inner_amount_gets_an_exact_bound_and_p() -> None:
    """Paired: 20 tasks each from 0/4 to 2/4 (+0.5 on every task) was "n/a" with no p-value,
    as if nothing could be said. At a mean difference of 0 a task difference in [-1, 1] is
    at least 0.5 with chance at most 1 / 1.5 (Markov on X + 1): p = 2 / 1.5^20, and the
    bound [-1 + 1.5 r, 1 - 0.5 r] with r = 0.025^(1/20); a level of every task at 0.5 the
    same way. No interval is ever zero-width."""
    a = side("t", [0] * 20, 4)
    b = side("t", [2] * 20, 4)
    found = compare(a, b, n_boot=0)
    assert found.mode == "paired"
    d = found.find("success_rate")
    r = 0.025 ** (1 / 20)
    assert d.difference.method == "exact_bound"
    assert (d.difference.ci_low, d.difference.ci_high) == pytest.approx((-1 + 1.5 * r, 1 - 0.5 * r))
    assert d.p_value == pytest.approx(2 / 1.5**20, rel=1e-9) and d.p_value < 0.05
    assert d.difference.ci_low > 0  # type: ignore[operator]
    # a few tasks moving a little: the same bound says no finding, consistently
    few = compare(side("t", [2] * 6, 4), side("t", [3] * 6, 4), n_boot=0).find("success_rate")
    assert few.p_value == pytest.approx(2 / 1.25**6) and few.p_value > 0.05
    assert few.difference.ci_low < 0 < few.difference.ci_high  # type: ignore[operator]
    level = summarize(b, n_boot=0).views["valid"].success_rate
    assert level is not None
    assert (level.ci_low, level.ci_high) == pytest.approx((0.5 * r, 1 - 0.5 * r))


def test_a_weighted_flat_side_uses_its_own_weighted_exact_bound() -> None:
    """Unequal weights on the side at 1: the exact bound is the weighted one (exact_reach),
    the difference the square-and-add of the printed side intervals."""
    weights = [1.0, 1.0, 4.0, 1.0, 2.0, 1.0]
    a = [Outcome(f"a{i}", j, True, weight=w) for i, w in enumerate(weights) for j in range(3)]
    b = side("b", [0, 1, 2, 3, 1, 2, 0], 3)
    d = compare(a, b, n_boot=0).find("success_rate")
    assert d.a.method == "exact_bound" and d.a.ci_low != pytest.approx(0.025 ** (1 / 6))
    assert d.difference.method == "mover"
    assert (d.difference.ci_low, d.difference.ci_high) == pytest.approx(
        shown_mover(d.difference, d.a, d.b)
    )


def test_newcombes_interval_does_not_reject_more_than_alpha_under_no_difference() -> None:
    """Both systems pass each attempt with chance 0.97 (seeded): 400 disjoint pairs of
    batches of 6 tasks x 2 attempts, most with a side at 1 on every task. The square-and-add
    interval excludes 0 no more often than 5% of the time (Welch took the flat side as
    known)."""
    rng = np.random.default_rng(13)
    rejected = flat = 0
    ones, twos = np.ones(6), np.full(6, 2)
    for _ in range(400):
        a, b = (make_estimate(rng.binomial(2, 0.97, size=6) / 2, ones, twos) for _ in "ab")
        d = welch(a, b, n_tasks=12)
        flat += d.method == "mover"
        rejected += d.ci_low is not None and (d.ci_low > 0 or d.ci_high < 0)  # type: ignore[operator]
    assert flat > 250
    assert rejected <= 20


# --- 2. plan sizes for the test compare runs --------------------------------------------------


def _pilot(successes: np.ndarray, attempts: int) -> list[TaskCounts]:
    return [TaskCounts(f"t{i:04d}", attempts, int(c), 0, 1.0, (), None, "")
            for i, c in enumerate(successes)]  # fmt: skip


def _world(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """A's per-task success chances, and B's: A's moved up by about 0.35."""
    p_a = rng.beta(2, 4, size=shape)
    return p_a, np.clip(p_a + rng.normal(0.35, 0.1, size=shape), 0, 1)


def test_plan_promises_the_power_compares_test_delivers() -> None:
    """A large pilot pair, a large difference: few tasks are needed. The normal formula said
    7 tasks at 4 attempts give power 0.80; compare's paired t test on 6 degrees of freedom
    rejects 0.68 of such batches. The plan now sizes with the noncentral t of that test (10
    tasks, 0.85), and 2,000 seeded simulated batches, tested as compare tests them, reject as
    often as it promises."""
    rng = np.random.default_rng(13)
    pilot_a, pilot_b = _world(rng, (4000,))
    delta = float(np.mean(pilot_b - pilot_a))
    difference = paired_difference(
        _pilot(rng.binomial(4, pilot_a), 4), _pilot(rng.binomial(4, pilot_b), 4)
    )
    tasks = tasks_needed(difference, 4, delta, 0.8, 0.05)
    promised = power_of(difference, tasks, 4, delta, 0.05)
    assert 8 <= tasks <= 12 and promised >= 0.8
    assert power_of(difference, tasks - 1, 4, delta, 0.05) < 0.8
    p_a, p_b = _world(rng, (2000, tasks))
    wins_a, wins_b = rng.binomial(4, p_a), rng.binomial(4, p_b)
    ones, ns = np.ones(tasks), np.full(tasks, 8)
    p_values = [
        _test(make_estimate(row, ones, ns, difference=True), ones, row)[1]
        for row in (wins_b - wins_a) / 4
    ]
    delivered = np.mean([p is not None and p < 0.05 for p in p_values])
    assert delivered == pytest.approx(promised, abs=0.035)
    # that test is compare's own: the first few batches through compare itself
    for row in range(3):
        a, b = _pilot(wins_a[row], 4), _pilot(wins_b[row], 4)
        found = compare_counts({"valid": a, "strict": a}, {"valid": b, "strict": b}, n_boot=0)
        assert found.find("success_rate").p_value == pytest.approx(p_values[row], rel=1e-9)


def test_plan_power_is_the_noncentral_t_on_compares_degrees_of_freedom() -> None:
    """Recomputed with scipy's noncentral t: T - 1 degrees of freedom with equal weights,
    Kish's effective number of tasks - 1 with the pilot's unequal ones (as compare's df);
    none below 5 tasks or without a degree of freedom."""
    for inflation, tasks in ((1.0, 5), (1.0, 40), (1.6, 12), (3.0, 5)):
        difference = DifferenceVariance(0.02, 0.3, True, weight_inflation=inflation)
        se = math.sqrt(difference.variance(tasks, 3))
        df = tasks / inflation - 1
        crit = scipy_stats.t.isf(0.025, df)
        want = scipy_stats.nct.sf(crit, df, 0.2 / se) + scipy_stats.nct.cdf(-crit, df, 0.2 / se)
        assert power_of(difference, tasks, 3, 0.2, 0.05) == pytest.approx(want, rel=1e-7)
    lone = DifferenceVariance(0.02, 0.3, True, weight_inflation=6.0)
    assert power_of(lone, 6, 3, 0.2, 0.05) == 0.0  # one effective task: no df
    assert power_of(DifferenceVariance(0.02, 0.3, True), 4, 3, 0.9, 0.05) == 0.0
    # noncentrality 30 on 99 df: scipy's nctdtr is NaN in the underflowed tail; power is 1
    assert power_of(DifferenceVariance(0.0, 0.01, True), 100, 1, 0.3, 0.05) == 1.0


# --- 3. every printed figure of one batch, recomputed on edge cases -----------------------------

# task -> (weight, labels, horizon, each attempt's end: 1, 0, or "E" invalid, partial scores)
EDGE: dict[str, tuple[float, tuple[str, ...], int | None, str, list[float | None]]] = {
    "k_eq_n": (1.0, ("x",), 2, "11", [1.0, 0.5]),  # k = n = 2 at the common k
    "ties": (2.0, ("x", "y"), 5, "1010", [None, 0.25, None, None]),
    "long": (1.0, ("y",), 13, "1101100", [0.5] * 7),  # supports k above the common one
    "invalid": (3.0, (), None, "1E0E1", [1.0, None, 0.0, None, 0.5]),
    "all_bad": (1.0, ("x",), 2, "EE", [None, None]),  # no valid attempt: strict view only
    "zero": (1.0, (), 9, "000", [0.0, 0.0, 0.0]),
}


def _edge_outcomes() -> list[Outcome]:
    found = []
    for task, (weight, labels, horizon, ends, partial) in EDGE.items():
        for j, end in enumerate(ends):
            bad = end == "E"
            found.append(
                Outcome(task, j, end == "1", valid=not bad,
                        terminal_reason="environment_failure" if bad else
                        ("success" if end == "1" else "agent_failure/incorrect_state"),
                        weight=weight, slice_labels=labels, horizon=horizon,
                        cost=0.1 * (j + 1), latency=float(len(task) + j),
                        partial_score=partial[j])
            )  # fmt: skip
    return found


def _ref_counts(view: str) -> dict[str, tuple[int, int]]:
    counted = {}
    for task, (_, _, _, ends, _) in EDGE.items():
        kept = ends if view == "strict" else ends.replace("E", "")
        if kept:
            counted[task] = (len(kept), kept.count("1"))
    return counted


def _mean(values: dict[str, Fraction]) -> Fraction:
    weights = {t: Fraction(EDGE[t][0]) for t in values}
    return sum((weights[t] * v for t, v in values.items()), Fraction(0)) / sum(weights.values())


def _type7(values: list[float], q: float) -> float:
    ordered = sorted(values)
    h = (len(ordered) - 1) * q
    low = math.floor(h)
    return ordered[low] + (h - low) * (ordered[min(low + 1, len(ordered) - 1)] - ordered[low])


def test_every_figure_of_an_edge_case_batch_matches_a_reference_written_here() -> None:
    """k = n, k above some tasks' n (beyond_k), ties, unequal attempts and weights, a task
    with no valid attempt, invalid attempts in and out of the denominators, partial scores
    on some attempts, slices by label and horizon, cost and latency (type-7 p90): each
    estimate from exact fractions (math.comb), each denominator counted by hand."""
    got = summarize(_edge_outcomes(), n_boot=0, k_over_supporting=True)
    for view in ("valid", "strict"):
        counted, found = _ref_counts(view), got.views[view]
        kmax = min(n for n, _ in counted.values())
        assert found.kmax == kmax and found.n_tasks == len(counted)
        assert found.excluded_tasks == tuple(sorted(set(EDGE) - set(counted)))
        rate = found.success_rate
        assert rate is not None
        assert rate.estimate == pytest.approx(
            float(_mean({t: Fraction(c, n) for t, (n, c) in counted.items()})), abs=1e-12
        )
        assert rate.attempts == sum(n for n, _ in counted.values())
        assert (rate.min_n, rate.max_n) == (kmax, max(n for n, _ in counted.values()))
        for k in range(1, max(n for n, _ in counted.values()) + 1):
            over = {t: nc for t, nc in counted.items() if nc[0] >= k}
            at = _mean({t: 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
                        for t, (n, c) in over.items()})  # fmt: skip
            hat = _mean(
                {t: Fraction(math.comb(c, k), math.comb(n, k)) for t, (n, c) in over.items()}
            )
            if k <= kmax:
                shown_at, shown_hat = found.pass_at_k[k], found.pass_hat_k[k]
            else:
                beyond = found.beyond_k[k]
                shown_at, shown_hat = beyond.pass_at_k, beyond.pass_hat_k
                assert beyond.excluded_tasks == tuple(sorted(set(counted) - set(over)))
            assert shown_at.estimate == pytest.approx(float(at), abs=1e-12)
            assert shown_hat.estimate == pytest.approx(float(hat), abs=1e-12)
            assert shown_hat.n_tasks == len(over)
        # partial: the mean over scored attempts (strict: invalid ones scored 0, and a task
        # whose every attempt was invalid scores 0), weighted over tasks that carry one
        scores = {}
        for task, (_, _, _, ends, partial) in EDGE.items():
            kept = [
                Fraction(p)
                for e, p in zip(ends, partial, strict=True)
                if e != "E" and p is not None
            ]
            if view == "strict":
                kept += [Fraction(0)] * ends.count("E")
            if kept:
                scores[task] = sum(kept, Fraction(0)) / len(kept)
        assert found.partial_score is not None
        assert found.partial_score.estimate == pytest.approx(float(_mean(scores)), abs=1e-12)
        # slices: the label's tasks with a counted attempt, pass^k to the slice's own k
        for label in ("x", "y"):
            members = {t: nc for t, nc in counted.items() if label in EDGE[t][1]}
            piece = found.by_label[label]
            assert piece.n_tasks == sum(label in EDGE[t][1] for t in EDGE)
            assert piece.kmax == min(n for n, _ in members.values())
            for k, estimate in piece.pass_hat_k.items():
                want = _mean({t: Fraction(math.comb(c, k), math.comb(n, k))
                              for t, (n, c) in members.items()})  # fmt: skip
                assert estimate.estimate == pytest.approx(float(want), abs=1e-12)
        bucket = found.by_horizon["13+"]
        assert bucket.success_rate is not None and bucket.success_rate.estimate == pytest.approx(
            4 / 7
        )
    # cost and latency over every counted attempt, valid or not
    costs = [0.1 * (j + 1) for _, _, _, ends, _ in EDGE.values() for j in range(len(ends))]
    latencies = [float(len(t) + j) for t, v in EDGE.items() for j in range(len(v[3]))]
    for shown, values in ((got.cost, costs), (got.latency, latencies)):
        assert shown.total == pytest.approx(math.fsum(values))
        assert shown.mean == pytest.approx(math.fsum(values) / len(values))
        assert shown.median == pytest.approx(_type7(values, 0.5))
        assert shown.p90 == pytest.approx(_type7(values, 0.9))
    wins = sum(e == "1" for *_, ends, _ in EDGE.values() for e in ends)
    assert got.cost_per_success == pytest.approx(math.fsum(costs) / wins)
    bad = sum(ends.count("E") for *_, ends, _ in EDGE.values())
    assert (got.invalid.count, got.invalid.rate) == (bad, pytest.approx(bad / len(costs)))


def test_compare_prints_newcombes_interval_in_the_terminal_json_and_html(tmp_path: Path) -> None:
    """Two imported batches with no task in common, a's every attempt passed: the terminal
    table names the method and prints the interval and p (no SE or t), the JSON carries
    method "mover", the HTML page says how it was made."""
    rows = "task_id,attempt,success\n"
    a = import_text(
        tmp_path, rows + "".join(f"a{i},{j},1\n" for i in range(8) for j in range(2)), "a"
    )
    wins = [0, 1, 1, 0, 2, 1, 0, 1]
    b = import_text(
        tmp_path,
        rows + "".join(f"b{i},{j},{int(j < c)}\n" for i, c in enumerate(wins) for j in range(2)),
        "b",
    )
    store, page = str(tmp_path / "s.db"), tmp_path / "c.html"
    code, out, err = cli("compare", a, b, "--json", "--store", store)
    assert code == 0, err
    d = json.loads(out)["metrics"]["valid"]["success_rate"]
    assert d["difference"]["method"] == "mover" and d["difference"]["se"] is None
    assert d["difference"]["ci_high"] < 0 and d["p_value"] < 0.05
    code, out, err = cli("compare", a, b, "--store", store, "--html", str(page))
    assert code == 0, err
    text = " ".join(out.split())
    assert "UNPAIRED: Newcombe's square-and-add of each side's own interval" in text
    assert interval(d["difference"]["ci_low"], d["difference"]["ci_high"], difference=True) in text
    assert "Newcombe's square-and-add of the two sides' own intervals" in html.unescape(
        page.read_text()
    )
