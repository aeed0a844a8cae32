"""Every statistic of the interval rule and the comparison against an independent value:
hand-worked numbers, scipy's own routines, exact rationals, and a seeded coverage simulation."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import special
from scipy import stats as scipy_stats

from groundstate.stats import (
    AC_T_CR1,
    EXACT_BOUND,
    MIN_TASKS,
    MOVER,
    NO_INTERVAL,
    T_CR1,
    Outcome,
    benjamini_hochberg,
    bootstrap_percentiles,
    compare,
    fisher_p,
    interval_rule,
    pass_curves,
    summarize,
)


def agresti_coull(
    mean: float, se: float, df: int, lo: float = 0.0, hi: float = 1.0
) -> tuple[float, float]:
    """The textbook Agresti-Coull interval for x successes in n trials, with n the number of
    trials whose binomial SE equals *se* on the unit scale and a t quantile instead of z."""
    u, s = (mean - lo) / (hi - lo), se / (hi - lo)
    n = u * (1 - u) / s**2
    x = u * n
    q = scipy_stats.t.ppf(0.975, df)
    n_tilde = n + q**2
    p_tilde = (x + q**2 / 2) / n_tilde
    half = q * math.sqrt(p_tilde * (1 - p_tilde) / n_tilde)
    return lo + (hi - lo) * max(0, p_tilde - half), lo + (hi - lo) * min(1, p_tilde + half)


def task(task_id: str, successes: int, n: int, **fields: object) -> list[Outcome]:
    return [Outcome(task_id, i, i < successes, **fields) for i in range(n)]  # type: ignore[arg-type]


def suite(rates: dict[str, tuple[int, int]]) -> list[Outcome]:
    return [o for name, (c, n) in rates.items() for o in task(name, c, n)]


# Five tasks, four attempts a side; per-task differences b - a = (0.5, 0, 0.25, -0.25, 1).
A = suite({"t1": (0, 4), "t2": (2, 4), "t3": (1, 4), "t4": (3, 4), "t5": (0, 4)})
B = suite({"t1": (2, 4), "t2": (2, 4), "t3": (2, 4), "t4": (2, 4), "t5": (4, 4)})
DIFFS = [0.5, 0.0, 0.25, -0.25, 1.0]


# --- the paired difference --------------------------------------------------------------------


def test_paired_se_interval_and_p_value_match_hand_and_scipy() -> None:
    d = compare(A, B).find("success_rate")
    # By hand: mean 0.3; squared deviations sum to 0.925; CR1 SE = sqrt(0.925 / 4 / 5).
    assert d.difference.estimate == pytest.approx(0.3)
    assert d.difference.se == pytest.approx(math.sqrt(0.925 / 4 / 5), rel=1e-12)
    # A difference keeps the symmetric t interval, consistent with the t test's p-value.
    assert (d.difference.method, d.difference.df) == (T_CR1, 4)
    low, high = scipy_stats.t.interval(0.95, 4, loc=0.3, scale=math.sqrt(0.925 / 20))
    assert (d.difference.ci_low, d.difference.ci_high) == (pytest.approx(low), pytest.approx(high))
    test = scipy_stats.ttest_1samp(DIFFS, 0.0)
    assert d.statistic == pytest.approx(test.statistic, rel=1e-12)
    assert d.p_value == pytest.approx(test.pvalue, rel=1e-10)
    assert (d.a.estimate, d.b.estimate) == (pytest.approx(0.3), pytest.approx(0.6))


def test_every_metric_and_both_views_up_to_the_common_k() -> None:
    # a fifth attempt of t1 (attempts 0-3 are A's), invalid
    a = [*A, Outcome("t1", 4, False, valid=False, terminal_reason="environment_failure")]
    result = compare(a, B)
    assert result.common_k == {"valid": 4, "strict": 4}
    names = {(d.view, d.name) for d in result.differences}
    for view in ("valid", "strict"):
        assert {(view, f"pass_{kind}_{k}") for kind in ("at", "hat") for k in range(1, 5)} <= names
        assert (view, "success_rate") in names
    # The strict view counts the invalid attempt as a failure of t1 in a: 0/5.
    strict = result.find("pass_hat_k", "strict", 4)
    hat4 = [0, 0, 0, 0, 1]  # pass^4 of b per task; a's are all 0 (t4 3/4 gives C(3,4) = 0)
    assert strict.difference.estimate == pytest.approx(sum(hat4) / 5)
    assert result.find("pass_at_k", "valid", 2).difference.estimate == pytest.approx(
        np.mean([5 / 6 - 0, 5 / 6 - 5 / 6, 5 / 6 - 1 / 2, 5 / 6 - 1, 1 - 0])
    )


def test_partial_score_is_compared_where_both_sides_have_one() -> None:
    def scored(outcomes: list[Outcome], score: float) -> list[Outcome]:
        return [
            Outcome(
                o.task_id, o.attempt, o.success, partial_score=score if o.task_id != "t5" else None
            )
            for o in outcomes
        ]

    result = compare(scored(A, 0.25), scored(B, 0.75))
    partial = result.find("partial_score")
    assert partial.difference.estimate == pytest.approx(0.5)
    assert partial.difference.n_tasks == 4  # t5 has no score
    assert partial.difference.method == NO_INTERVAL  # 4 tasks: below the minimum
    assert "partial_score" not in {d.metric for d in compare(A, B).differences}


def test_fewer_than_min_tasks_gives_an_estimate_without_interval_or_p_value() -> None:
    three = {"t1", "t2", "t3"}
    d = compare([o for o in A if o.task_id in three], [o for o in B if o.task_id in three])
    diff = d.find("success_rate")
    assert diff.difference.estimate == pytest.approx(0.25)
    assert (diff.difference.ci_low, diff.p_value) == (None, None)
    assert diff.difference.note == f"n/a: 3 tasks, intervals need at least {MIN_TASKS}"


def test_every_task_flipping_gets_an_exact_bound_and_the_sign_test() -> None:
    a = suite({f"t{i}": (0, 4) for i in range(6)})
    b = suite({f"t{i}": (4, 4) for i in range(6)})
    d = compare(a, b).find("success_rate")
    # All six differences are +1, the top of [-1, 1]: lower bound -1 + 2 * 0.025^(1/6).
    assert d.difference.method == EXACT_BOUND
    assert d.difference.ci_low == pytest.approx(-1 + 2 * 0.025 ** (1 / 6))
    assert d.difference.ci_high == 1.0
    assert d.p_value == pytest.approx(2 * 0.5**6)


# --- unpaired -------------------------------------------------------------------------------


def test_disjoint_task_sets_fall_back_to_unpaired_and_say_so() -> None:
    """Since the fourteenth round the difference is Newcombe's square-and-add of the two
    sides' own intervals, not Welch's t (`test_stats_round14.py`)."""
    a = suite({f"a{i}": (i % 5, 4) for i in range(7)})
    b = suite({f"b{i}": ((i * 3) % 5, 4) for i in range(6)})
    result = compare(a, b)
    assert result.mode == "unpaired" and result.paired_tasks == ()
    assert "UNPAIRED" in result.notes[0]
    d = result.find("success_rate")
    a_values = [(i % 5) / 4 for i in range(7)]
    b_values = [((i * 3) % 5) / 4 for i in range(6)]
    assert d.difference.method == MOVER and d.statistic is None and d.difference.se is None
    for side, values in ((d.a, a_values), (d.b, b_values)):
        se = np.std(values, ddof=1) / math.sqrt(len(values))
        assert side.se == pytest.approx(se, rel=1e-10)
    assert d.a.ci_low is not None and d.a.ci_high is not None
    assert d.b.ci_low is not None and d.b.ci_high is not None
    low = d.difference.estimate - math.hypot(d.b.estimate - d.b.ci_low, d.a.ci_high - d.a.estimate)
    high = d.difference.estimate + math.hypot(d.b.ci_high - d.b.estimate, d.a.estimate - d.a.ci_low)
    assert (d.difference.ci_low, d.difference.ci_high) == pytest.approx((low, high), abs=1e-12)
    assert low < 0 < high and d.p_value is not None and d.p_value > 0.05
    assert result.per_task == ()


def test_tiny_disjoint_sets_still_compare_without_intervals() -> None:
    result = compare(task("x", 1, 2), task("y", 2, 2))
    d = result.find("success_rate")
    assert result.mode == "unpaired"
    assert (d.difference.estimate, d.difference.ci_low, d.p_value) == (0.5, None, None)
    assert "at least 5 tasks on each side" in d.difference.note


# --- per-task tests -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a_c", "a_n", "b_c", "b_n", "expected"),
    [
        (0, 4, 4, 4, Fraction(2, 70)),  # the two extreme tables of C(8,4) = 70
        (1, 4, 3, 4, Fraction(1 + 16 + 16 + 1, 70)),  # tables at most as likely as 16/70
        (2, 4, 2, 4, Fraction(1)),
        (0, 8, 8, 8, Fraction(2, math.comb(16, 8))),
    ],
)
def test_fisher_exact_on_known_tables(
    a_c: int, a_n: int, b_c: int, b_n: int, expected: Fraction
) -> None:
    assert fisher_p(a_c, a_n, b_c, b_n) == pytest.approx(float(expected), rel=1e-9)


def test_benjamini_hochberg_on_a_known_example() -> None:
    p = [0.01, 0.04, 0.03, 0.005, 0.2]
    # Sorted 0.005, 0.01, 0.03, 0.04, 0.2 times 5/rank: 0.025, 0.025, 0.05, 0.05, 0.2.
    assert benjamini_hochberg(p) == pytest.approx([0.025, 0.05, 0.05, 0.025, 0.2])
    assert benjamini_hochberg(p) == pytest.approx(
        scipy_stats.false_discovery_control(p, method="bh").tolist()
    )
    # A large p-value early in rank order is pulled down by a later, smaller ratio.
    assert benjamini_hochberg([0.04, 0.041]) == pytest.approx([0.041, 0.041])
    assert benjamini_hochberg([]) == []


def test_an_a_a_comparison_with_four_attempts_lists_no_changed_task() -> None:
    rng = np.random.default_rng(11)
    p = rng.beta(1.2, 1.2, size=60)

    def draw() -> list[Outcome]:
        hits = rng.random((60, 4)) < p[:, None]
        return [Outcome(f"t{i:02d}", j, bool(hits[i, j])) for i in range(60) for j in range(4)]

    result = compare(draw(), draw())
    naive = sum(c.a_c != c.b_c for c in result.per_task)
    assert naive > 20  # what "the rate moved" would have listed
    assert result.changed == ()
    assert result.find("success_rate").p_value is not None


# --- estimators and the bootstrap -----------------------------------------------------------


def test_pass_curves_match_the_exact_rationals() -> None:
    cases = [(n, c) for n in range(1, 26) for c in range(n + 1)] + [(200, 37), (1000, 999)]
    n = np.array([x for x, _ in cases])
    c = np.array([y for _, y in cases])
    at, hat = pass_curves(n, c, 30)
    for row, (nn, cc) in enumerate(cases):
        for k in range(1, 31):
            if k > nn:
                assert math.isnan(at[row, k - 1]) and math.isnan(hat[row, k - 1])
                continue
            exact_hat = Fraction(math.comb(cc, k), math.comb(nn, k))
            assert hat[row, k - 1] == pytest.approx(float(exact_hat), rel=1e-12, abs=1e-15)
            assert at[row, k - 1] == pytest.approx(
                float(1 - Fraction(math.comb(nn - cc, k), math.comb(nn, k))), abs=1e-13
            )


def test_one_bootstrap_draw_serves_every_metric() -> None:
    rng = np.random.default_rng(0)
    values = rng.random((40, 3))
    weights = np.ones((40, 3))
    weights[:5, 2] = 0.0  # the third metric leaves five tasks out
    low, high = bootstrap_percentiles(values, weights, seed=7, n_boot=300)
    # Column by column on its own gives the same numbers: the draws are shared, not redrawn.
    for j in range(3):
        one_low, one_high = bootstrap_percentiles(
            values[:, [j]], weights[:, [j]], seed=7, n_boot=300
        )
        assert (low[j], high[j]) == (pytest.approx(one_low[0]), pytest.approx(one_high[0]))
    # By hand for the first metric: multiplicities of one seeded draw of 300 x 40.
    draws = np.random.default_rng(7).integers(0, 40, size=(300, 40))
    means = values[draws, 0].mean(axis=1)
    assert (low[0], high[0]) == (
        pytest.approx(np.percentile(means, 2.5)),
        pytest.approx(np.percentile(means, 97.5)),
    )


# --- the interval rule ----------------------------------------------------------------------


def test_the_rule_is_agresti_coull_on_the_clustered_effective_n_with_t_quantiles() -> None:
    values = np.array([0.0, 0.25, 0.5, 1.0, 1.0, 0.75, 0.0, 0.5])
    rule = interval_rule(values, np.ones(8))
    expected = agresti_coull(values.mean(), scipy_stats.sem(values), 7)
    assert (rule.low, rule.high, rule.df, rule.method) == (
        pytest.approx(expected[0]), pytest.approx(expected[1]), 7, AC_T_CR1,
    )  # fmt: skip
    assert rule.se == pytest.approx(scipy_stats.sem(values))
    # Tasks close together mid-range: many effective trials, and Agresti-Coull is the t
    # interval; the rule's ends reach further, to the exact bound of every task at 0.52
    # below and at 0.48 above (seventeenth round: near agreement, as eight tasks at 0.5
    # exactly get [0.315, 0.685]).
    tight = np.array([0.49, 0.5, 0.51, 0.5, 0.52, 0.48, 0.5, 0.5])
    low, high = scipy_stats.t.interval(0.95, 7, loc=tight.mean(), scale=scipy_stats.sem(tight))
    ac = agresti_coull(tight.mean(), scipy_stats.sem(tight), 7)
    assert ac == (pytest.approx(low, abs=2e-4), pytest.approx(high, abs=2e-4))
    close = interval_rule(tight, np.ones(8))
    reach = 0.025 ** (1 / 8)
    assert (close.low, close.high) == (pytest.approx(0.52 * reach), pytest.approx(1 - 0.52 * reach))
    # Near the top the interval reaches further down than the plain t interval, which
    # missed true values just below it (29 of 30 tasks at 1; see docs/statistics.md).
    near_top = interval_rule(np.array([1.0] * 29 + [0.0]), np.ones(30))
    assert near_top.low is not None and near_top.high == 1.0
    t_low = 29 / 30 - scipy_stats.t.ppf(0.975, 29) * scipy_stats.sem([1.0] * 29 + [0.0])
    assert near_top.low < t_low


MARKOV = "exact bound (Markov's inequality on each side)"


def test_agreeing_tasks_get_an_exact_bound_or_a_stated_na_never_zero_width() -> None:
    top = interval_rule(np.ones(10), np.ones(10))
    assert (top.method, top.low, top.high) == (EXACT_BOUND, pytest.approx(0.025**0.1), 1.0)
    bottom = interval_rule(np.zeros(10), np.ones(10))
    assert (bottom.low, bottom.high) == (0.0, pytest.approx(1 - 0.025**0.1))
    # inside the range (thirteenth round): Markov's bound on each side, 0.5 +- 0.5 (1 - r)
    middle = interval_rule(np.full(10, 0.5), np.ones(10))
    assert middle.method == EXACT_BOUND
    assert (middle.low, middle.high) == pytest.approx((0.5 * 0.025**0.1, 1 - 0.5 * 0.025**0.1))
    assert middle.note == f"all 10 tasks have the value 0.500: {MARKOV}"
    # Unequal weights: the bound is the weighted mean at which the most probable task means,
    # m_i = min(1, t / w_i), put every task at 1 with chance 0.025: here all five below 1,
    # t^5 / 4 = 0.025, and the bound is 5 t / 8 (Kish's effective 3.2 tasks gave 0.316).
    weights = np.array([4.0, 1.0, 1.0, 1.0, 1.0])
    weighted = interval_rule(np.ones(5), weights)
    assert weighted.low == pytest.approx(5 * (4 * 0.025) ** (1 / 5) / 8)


def test_a_report_never_prints_a_zero_width_interval() -> None:
    # Six perfect tasks and two that are not: pass@4 is 1 on every task (2/4 and 3/4 both
    # give 1 - C(2,4)/C(4,4) = 1 and 1), pass^4 is 1 on six tasks and 0 on two.
    records = suite({f"t{i}": (4, 4) for i in range(6)}) + suite({"x1": (2, 4), "x2": (3, 4)})
    view = summarize(records, n_boot=50).views["valid"]
    for estimate in [view.success_rate, *view.pass_at_k.values(), *view.pass_hat_k.values()]:
        assert estimate is not None and estimate.ci_low is not None and estimate.ci_high is not None
        assert estimate.ci_low < estimate.ci_high
    at_4, hat_4 = view.pass_at_k[4], view.pass_hat_k[4]
    assert (at_4.estimate, at_4.method, at_4.ci_high) == (1.0, EXACT_BOUND, 1.0)
    assert at_4.ci_low == pytest.approx(0.025 ** (1 / 8))
    assert (hat_4.estimate, hat_4.method) == (0.75, AC_T_CR1)


# --- coverage ----------------------------------------------------------------------------------


def _coverage(tasks: int, reps: int, seed: int) -> dict[str, float]:
    """Share of simulated suites whose 95% interval holds the true value.

    Task success probabilities ~ Beta(2, 1.5), four attempts per task. True values (Beta
    moments): E[p] for the success rate, E[p^2] for pass^2, 1 - E[(1-p)^4] for pass@4 (near
    1: the symmetric t interval covered 86% at 30 tasks); for the paired difference, b's
    task probability is p^0.7, so the true difference is E[p^0.7] - E[p].
    """
    a_, b_ = 2.0, 1.5
    moment = lambda s: special.beta(a_ + s, b_) / special.beta(a_, b_)  # noqa: E731
    at_4 = 1 - special.beta(a_, b_ + 4) / special.beta(a_, b_)
    truth = {"rate": moment(1), "hat2": moment(2), "at4": at_4, "diff": moment(0.7) - moment(1)}
    rng = np.random.default_rng(seed)
    hits = dict.fromkeys(truth, 0)
    ones = np.ones(tasks)
    for _ in range(reps):
        p = rng.beta(a_, b_, tasks)
        c = rng.binomial(4, p)
        cb = rng.binomial(4, p**0.7)
        checks = {
            "rate": c / 4,
            "hat2": c * (c - 1) / 12,
            "at4": (c > 0) * 1.0,
            "diff": (cb - c) / 4,
        }
        for name, values in checks.items():
            rule = interval_rule(values.astype(np.float64), ones, difference=name == "diff")
            low = -math.inf if rule.low is None else rule.low
            high = math.inf if rule.high is None else rule.high
            hits[name] += low <= truth[name] <= high
    return {name: hit / reps for name, hit in hits.items()}


@pytest.mark.parametrize("tasks", [10, 30])
def test_the_interval_rule_covers_at_10_and_30_tasks(tasks: int) -> None:
    coverage = _coverage(tasks, reps=600, seed=tasks)
    for name, share in coverage.items():
        assert share >= 0.92, (name, share)
        assert share <= 0.985, (name, share)  # and is not wildly conservative either
