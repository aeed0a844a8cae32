"""Tests for groundstate.stats: estimators against exact rationals, views, intervals, slices."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groundstate.stats import (
    Outcome,
    RevisionMismatch,
    bootstrap_interval,
    clustered_se,
    compare,
    horizon_bucket,
    pass_at_k,
    pass_hat_k,
    suite_pass_at_k,
    suite_pass_hat_k,
    suite_success_rate,
    summarize,
    supported_k,
    task_counts,
)


def attempts(task_id: str, results: str, **fields: object) -> list[Outcome]:
    """Outcomes spelled as a string: S success, F agent failure, E/G environment/grader failure."""
    reasons = {
        "S": (True, True, "success"),
        "F": (False, True, "agent_failure/step_limit"),
        "E": (False, False, "environment_failure/reset"),
        "G": (False, False, "grader_failure"),
    }
    made = []
    for number, mark in enumerate(results):
        success, valid, reason = reasons[mark]
        made.append(Outcome(task_id, number, success, valid, reason, **fields))  # type: ignore[arg-type]
    return made


def batch(**tasks: str) -> list[Outcome]:
    return [o for task_id, results in tasks.items() for o in attempts(task_id, results)]


# --- per-task estimators ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "c", "k", "at_k", "hat_k"),
    [
        # pass@k = 1 - C(n-c,k)/C(n,k); pass^k = C(c,k)/C(n,k), worked by hand.
        (5, 2, 2, Fraction(7, 10), Fraction(1, 10)),  # 1 - 3/10, 1/10
        (5, 3, 3, Fraction(1), Fraction(1, 10)),  # C(2,3) = 0; 1/10
        (4, 1, 1, Fraction(1, 4), Fraction(1, 4)),
        (10, 7, 3, Fraction(119, 120), Fraction(7, 24)),  # 1 - 1/120, 35/120
        (8, 0, 4, Fraction(0), Fraction(0)),
        (8, 8, 8, Fraction(1), Fraction(1)),
        (6, 4, 2, Fraction(14, 15), Fraction(2, 5)),  # 1 - 1/15, 6/15
    ],
)
def test_estimators_match_hand_computed_rationals(
    n: int, c: int, k: int, at_k: Fraction, hat_k: Fraction
) -> None:
    assert pass_at_k(n, c, k) == float(at_k)
    assert pass_hat_k(n, c, k) == float(hat_k)


def test_estimators_are_exact_for_large_n() -> None:
    n, c, k = 5000, 2500, 100
    # Independent route: C(c,k)/C(n,k) = prod (c-i)/(n-i), all as exact fractions.
    hat = math.prod((Fraction(c - i, n - i) for i in range(k)), start=Fraction(1))
    miss = math.prod((Fraction(n - c - i, n - i) for i in range(k)), start=Fraction(1))
    assert pass_hat_k(n, c, k) == float(hat)
    # 1 - miss (miss about 1e-31) rounds to 1.0, which it is not: one ulp inside instead
    assert float(1 - miss) == 1.0 and pass_at_k(n, c, k) == math.nextafter(1.0, 0.0)
    assert 0 < pass_hat_k(n, c, k) < 1e-30  # tiny but not flushed to zero or nan
    assert math.isfinite(pass_at_k(10_000, 9_999, 5_000))
    assert pass_hat_k(10_000, 9_999, 5_000) == 0.5  # C(9999,k)/C(10000,k) = (n-k)/n


@pytest.mark.parametrize(
    ("n", "c", "k"), [(3, 1, 0), (3, 1, 4), (3, 4, 1), (-1, 0, 1), (3, -1, 1), (0, 0, 1)]
)
def test_estimators_reject_impossible_counts(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)


@st.composite
def counts(draw: st.DrawFn) -> tuple[int, int, int]:
    n = draw(st.integers(1, 60))
    return n, draw(st.integers(0, n)), draw(st.integers(1, n))


@given(counts())
def test_reliability_never_exceeds_capability(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    assert 0 <= pass_hat_k(n, c, k) <= c / n <= pass_at_k(n, c, k) <= 1


@given(counts())
def test_more_attempts_lower_reliability_and_raise_capability(nck: tuple[int, int, int]) -> None:
    n, c, _ = nck
    hats = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    ats = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert hats == sorted(hats, reverse=True)
    assert ats == sorted(ats)


# --- counts, views and suite values ----------------------------------------------------------


def test_views_count_invalid_attempts_differently() -> None:
    records = batch(a="SSFE", b="SGGF", c="EE")
    valid = {t.task_id: (t.n, t.c, t.invalid) for t in task_counts(records, "valid")}
    strict = {t.task_id: (t.n, t.c, t.invalid) for t in task_counts(records, "strict")}
    assert valid == {"a": (3, 2, 1), "b": (2, 1, 2), "c": (0, 0, 2)}
    assert strict == {"a": (4, 2, 1), "b": (4, 1, 2), "c": (2, 0, 2)}

    summary = summarize(records, n_boot=200)
    v, s = summary.views["valid"], summary.views["strict"]
    # valid: task c has no valid attempt and is excluded; (2/3 + 1/2) / 2 = 7/12.
    assert v.excluded_tasks == ("c",)
    assert v.n_tasks == 2
    assert v.success_rate is not None
    assert v.success_rate.estimate == pytest.approx(7 / 12, rel=1e-12)
    assert (v.success_rate.attempts, v.success_rate.min_n, v.success_rate.max_n) == (5, 2, 3)
    assert v.kmax == 2
    # pass^2: a = C(2,2)/C(3,2) = 1/3, b = 0 -> 1/6.
    assert v.pass_hat_k[2].estimate == pytest.approx(1 / 6, rel=1e-12)
    # strict: (2/4 + 1/4 + 0/2) / 3 = 1/4 over all 10 attempts, k up to 2 (task c).
    assert s.excluded_tasks == ()
    assert s.success_rate is not None
    assert s.success_rate.estimate == pytest.approx(1 / 4, rel=1e-12)
    assert (s.success_rate.n_tasks, s.success_rate.attempts) == (3, 10)
    assert s.kmax == 2


def test_suite_value_averages_tasks_with_different_n() -> None:
    # a: n=5, c=2; b: n=3, c=3; c: n=4, c=1. pass@2 per task: 7/10, 1, 1 - C(3,2)/C(4,2) = 1/2.
    records = batch(a="SSFFF", b="SSS", c="SFFF")
    at_2 = suite_pass_at_k(task_counts(records), 2, n_boot=50)
    assert at_2.estimate == pytest.approx(float((Fraction(7, 10) + 1 + Fraction(1, 2)) / 3))
    # pass^2: 1/10, 1, 0 -> 11/30. Never (pooled 6/12)^2 = 1/4.
    hat_2 = suite_pass_hat_k(task_counts(records), 2, n_boot=50)
    assert hat_2.estimate == pytest.approx(float(Fraction(11, 30)))
    assert (hat_2.n_tasks, hat_2.attempts, hat_2.min_n, hat_2.max_n) == (3, 12, 3, 5)


def test_declared_weights_set_the_suite_value() -> None:
    records = attempts("a", "SSFF", weight=3.0) + attempts("b", "SFFF", weight=1.0)
    # success: (3 * 1/2 + 1 * 1/4) / 4 = 7/16; pass^2: (3 * 1/6 + 0) / 4 = 1/8.
    counted = task_counts(records)
    assert suite_success_rate(counted, n_boot=50).estimate == pytest.approx(7 / 16, rel=1e-12)
    assert suite_pass_hat_k(counted, 2, n_boot=50).estimate == pytest.approx(1 / 8, rel=1e-12)


def test_k_runs_only_up_to_the_smallest_valid_n() -> None:
    records = batch(a="SSSSS", b="SSFE", c="EEEE")
    counted = task_counts(records)
    assert supported_k(counted) == 3
    assert suite_pass_hat_k(counted, 3, n_boot=10).n_tasks == 2
    with pytest.raises(ValueError, match="k=4"):
        suite_pass_hat_k(counted, 4)
    with pytest.raises(ValueError):
        suite_pass_at_k(counted, 0)
    summary = summarize(records, n_boot=10)
    assert sorted(summary.views["valid"].pass_at_k) == [1, 2, 3]
    assert sorted(summary.views["strict"].pass_hat_k) == [1, 2, 3, 4]
    assert summarize(records, n_boot=10, max_k=2).views["strict"].kmax == 2


def test_task_attributes_must_agree_across_attempts() -> None:
    # attempt 2: attempts() numbered the others 0 and 1
    records = [*attempts("a", "SF", weight=1.0), Outcome("a", 2, True, weight=2.0)]
    with pytest.raises(ValueError, match="disagree"):
        task_counts(records)
    with pytest.raises(ValueError, match="weight"):
        task_counts(attempts("a", "S", weight=0.0))
    with pytest.raises(ValueError, match="view"):
        task_counts(records, "lenient")  # type: ignore[arg-type]


# --- uncertainty -----------------------------------------------------------------------------


def spread_batch() -> list[Outcome]:
    rng = random.Random(7)
    return [
        o
        for i in range(12)
        for o in attempts(f"t{i:02d}", "".join(rng.choice("SSF") for _ in range(5)))
    ]


def test_interval_is_reproducible_and_contains_the_estimate() -> None:
    records = spread_batch()
    first = summarize(records, seed=3, n_boot=200).views["valid"].success_rate
    shuffled = random.Random(1).sample(records, len(records))
    assert summarize(shuffled, seed=3, n_boot=200).views["valid"].success_rate == first
    others = [
        summarize(records, seed=s, n_boot=200).views["valid"].success_rate for s in range(4, 9)
    ]
    # The t interval does not depend on the seed; the bootstrap second opinion does.
    assert {(o.estimate, o.ci_low, o.ci_high) for o in others} == {
        (first.estimate, first.ci_low, first.ci_high)
    }  # fmt: skip
    assert len({(o.boot_low, o.boot_high) for o in [first, *others]}) > 1
    for estimate in (first, *others):
        assert estimate.ci_low < estimate.estimate < estimate.ci_high


def test_bootstrap_resamples_whole_tasks() -> None:
    # One task: every resample is that task, so the interval collapses onto its value.
    assert bootstrap_interval([0.25], [1.0], n_boot=100) == (0.25, 0.25)
    # Identical task values leave nothing to vary.
    assert bootstrap_interval([0.5] * 4, [1.0, 2.0, 3.0, 4.0], n_boot=100) == (0.5, 0.5)
    with pytest.raises(ValueError):
        bootstrap_interval([0.5], [1.0], n_boot=0)


def test_clustered_se_matches_hand_computation() -> None:
    # p = (1, 1/2, 0), w = (2, 1, 1): pbar = 2.5/4 = 5/8.
    # sum w^2 (p - pbar)^2 = 4 * 9/64 + 1/64 + 25/64 = 62/64.
    # SE = sqrt(62/64) / 4 * sqrt(3/2).
    expected = math.sqrt(62 / 64) / 4 * math.sqrt(3 / 2)
    assert clustered_se([1.0, 0.5, 0.0], [2.0, 1.0, 1.0]) == pytest.approx(expected, rel=1e-12)
    # Equal weights: sample standard deviation of task values over sqrt(T).
    values = [0.2, 0.4, 0.9, 1.0]
    mean = sum(values) / 4
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 3)
    assert clustered_se(values, [1.0] * 4) == pytest.approx(sd / 2, rel=1e-12)
    assert clustered_se([0.3], [1.0]) is None


def test_success_rate_carries_the_clustered_se() -> None:
    records = batch(a="SS", b="SF", c="FF")
    estimate = suite_success_rate(task_counts(records), n_boot=20)
    assert estimate.se == pytest.approx(clustered_se([1.0, 0.5, 0.0], [1.0] * 3))


# --- summary parts ---------------------------------------------------------------------------


HORIZONS = [(None, "unknown"), (1, "1-3"), (3, "1-3"), (4, "4-7"), (7, "4-7"), (8, "8-12")]
HORIZONS += [(12, "8-12"), (13, "13+"), (400, "13+")]


@pytest.mark.parametrize(("horizon", "bucket"), HORIZONS)
def test_horizon_buckets(horizon: int | None, bucket: str) -> None:
    assert horizon_bucket(horizon) == bucket


def test_slices_by_label_and_horizon() -> None:
    records = (
        attempts("short", "SSSS", horizon=2, slice_labels=("refund",))
        + attempts("medium", "SSFF", horizon=5, slice_labels=("refund", "auth"))
        + attempts("long", "FFFF", horizon=20, slice_labels=("auth",))
        + attempts("vague", "EE", slice_labels=("auth",))
    )
    view = summarize(records, n_boot=50).views["valid"]
    assert list(view.by_horizon) == ["1-3", "4-7", "13+", "unknown"]
    long = view.by_horizon["13+"]
    assert long.success_rate is not None
    # One task: an estimate, but no interval (and never a zero-width one), with the reason.
    assert (long.success_rate.estimate, long.success_rate.ci_low) == (0.0, None)
    assert long.success_rate.note == "n/a: 1 task, intervals need at least 5"
    assert view.by_horizon["unknown"].success_rate is None
    assert view.by_horizon["unknown"].excluded_tasks == ("vague",)
    auth = view.by_label["auth"]
    assert (auth.n_tasks, auth.excluded_tasks) == (3, ("vague",))
    assert auth.success_rate is not None
    assert auth.kmax == 4 and sorted(auth.pass_hat_k) == [1, 2, 3, 4]
    assert auth.success_rate.estimate == pytest.approx(0.25)  # (1/2 + 0) / 2
    assert auth.pass_hat_k[1].estimate == pytest.approx(0.25)
    assert auth.pass_hat_k[2].estimate == pytest.approx((1 / 6 + 0) / 2)  # C(2,2)/C(4,2) = 1/6
    assert (auth.success_rate.n_tasks, auth.success_rate.attempts) == (2, 8)
    assert view.by_label["refund"].success_rate is not None
    assert view.by_label["refund"].success_rate.estimate == pytest.approx(0.75)


def test_terminal_reasons_and_invalid_rates() -> None:
    summary = summarize(batch(a="SFEE", b="GSFF"), n_boot=10)
    assert summary.terminal_reasons == {
        "agent_failure/step_limit": 3,
        "environment_failure/reset": 2,
        "grader_failure": 1,
        "success": 2,
    }
    assert summary.invalid.count == 3
    assert summary.invalid.rate == 3 / 8
    assert summary.invalid.by_reason == {"environment_failure": 2, "grader_failure": 1}
    assert summary.invalid.rate_by_reason == {"environment_failure": 2 / 8, "grader_failure": 1 / 8}


def test_cost_and_latency() -> None:
    costs = [1.0, 2.0, 3.0, 4.0, 10.0]
    records = [
        Outcome("a", i, success=i < 2, cost=cost, latency=cost * 10) for i, cost in enumerate(costs)
    ]
    summary = summarize(records, n_boot=10)
    assert (summary.cost.total, summary.cost.mean, summary.cost.median) == (20.0, 4.0, 3.0)
    assert summary.cost.p90 == pytest.approx(7.6)  # 4 + 0.6 * (10 - 4), linear interpolation
    assert summary.latency.median == 30.0
    assert summary.cost_per_success == 10.0
    no_success = summarize([Outcome("a", 0, success=False, cost=1.0)], n_boot=10)
    assert no_success.cost_per_success is None


def test_summary_becomes_json() -> None:
    summary = summarize(spread_batch(), n_boot=50, max_k=3)
    as_dict = summary.to_dict()
    assert sorted(as_dict["views"]["valid"]["pass_hat_k"]) == [1, 2, 3]
    decoded = json.loads(json.dumps(as_dict))
    assert decoded["views"]["strict"]["pass_at_k"]["2"]["n_tasks"] == 12
    assert decoded["n_boot"] == 50
    with pytest.raises(ValueError):
        summarize([])


# --- paired comparison -----------------------------------------------------------------------


def test_comparison_finds_exactly_the_tasks_that_improved() -> None:
    # Eight attempts: 0/8 -> 8/8 gives Fisher p = 2 / C(16, 8) = 1.55e-4, which survives BH
    # over six tasks; 4/8 -> 6/8 (p = 0.61) and no change do not.
    a = batch(t1="F" * 8, t2="F" * 8, t3="S" * 8, t4="SSSSFFFF", t5="S" * 8, t6="SF" * 4, gone="SS")
    b = batch(t1="S" * 8, t2="S" * 8, t3="S" * 8, t4="SSSSSSFF", t5="S" * 8, t6="FS" * 4, new="SS")
    result = compare(a, b, n_boot=500)
    assert result.mode == "paired"
    assert result.paired_tasks == ("t1", "t2", "t3", "t4", "t5", "t6")
    assert (result.only_in_a, result.only_in_b) == (("gone",), ("new",))
    assert result.success_rate_difference.estimate == pytest.approx(2.25 / 6)
    assert result.find("pass_hat_k", k=1).difference.estimate == pytest.approx(2.25 / 6)
    assert [(c.task_id, c.a_rate, c.b_rate) for c in result.changed] == [
        ("t1", 0.0, 1.0),
        ("t2", 0.0, 1.0),
    ]
    assert result.changed[0].p_value == pytest.approx(2 / math.comb(16, 8))
    diff = result.success_rate_difference
    assert diff.ci_low is not None and diff.ci_high is not None
    assert diff.ci_low <= 2.25 / 6 <= diff.ci_high <= 1
    assert result.b_success_rate.estimate - result.a_success_rate.estimate == pytest.approx(
        2.25 / 6
    )


def test_identical_batches_differ_by_exactly_zero_within_an_exact_bound() -> None:
    """Every task difference 0: since the thirteenth round Markov's exact bound on each side,
    +- (1 - 0.025^(1/12)), and p = 1 (it was "n/a"); no SE (the fourteenth round: a spread
    of 0 printed as SE 0.000 beside the bound)."""
    records = spread_batch()
    result = compare(records, records)
    diff = result.success_rate_difference
    half = 1 - 0.025 ** (1 / 12)
    assert (diff.estimate, diff.se) == (0.0, None)
    assert (diff.ci_low, diff.ci_high) == pytest.approx((-half, half))
    assert diff.note == (
        "all 12 tasks have the value 0.000: exact bound (Markov's inequality on each side)"
    )
    assert result.find("success_rate").p_value == 1.0
    assert result.changed == ()


def test_comparison_uses_exact_rates_and_reports_unpaired_tasks() -> None:
    # 1/2 vs 2/4 is no change; task "x" has no valid attempt in b.
    result = compare(batch(t="SF", x="SS"), batch(t="SSFF", x="EE"), n_boot=10)
    assert result.changed == ()
    assert result.per_task[0].p_value == 1.0
    assert result.excluded_tasks == ("x",)
    assert result.success_rate_difference.attempts == 6


def test_comparison_refuses_different_task_revisions_and_unversioned_tasks() -> None:
    a = attempts("t1", "S", task_revision="r1") + attempts("t2", "S", task_revision="r1")
    b = attempts("t1", "S", task_revision="r2") + attempts("t2", "S", task_revision="")
    with pytest.raises(RevisionMismatch) as raised:
        compare(a, b)
    assert raised.value.task_ids == ("t1", "t2")
    assert isinstance(raised.value, ValueError)
    assert "task_revision differs for t1 (r1 vs r2)" in str(raised.value)
    assert "batch b does not version 1 task " in str(raised.value)
    allowed = compare(a, b, allow_mismatch=True)
    assert len(allowed.mismatches) == 2
