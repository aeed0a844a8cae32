"""Statistics audit, sixteenth round: the success rate, pass@1 and pass^1 are one value and
show one interval, recomputed here from scipy and exact rationals; a view with no counted
attempt says what cannot be computed."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from groundstate.stats import Outcome, compare, summarize
from tests.test_stats_independent import cli, import_text
from tests.test_stats_round13 import ref_level_interval

# --- the reference -----------------------------------------------------------------------------


def ref_curve_ends(n: list[int], c: list[int], alpha: float = 0.05) -> tuple[float, float]:
    """The one interval of the success rate, pass@1 and pass^1 of equal-weight tasks, from the
    docs' rules written out: pass@1's lower end is the lowest lower end of pass@k at any k up
    to the common k, pass^1's upper end the highest upper end of pass^k; the success rate's own
    interval is the rule's on the rates (pass@1 and pass^1 at k = 1). Per-task values are exact
    rationals (C(n-c, k) / C(n, k) and C(c, k) / C(n, k))."""
    kmax = min(n)
    lows, highs = [], []
    for k in range(1, kmax + 1):
        at = [
            float(1 - Fraction(math.comb(x - y, k), math.comb(x, k)))
            for x, y in zip(n, c, strict=True)
        ]
        hat = [float(Fraction(math.comb(y, k), math.comb(x, k))) for x, y in zip(n, c, strict=True)]
        lows.append(ref_level_interval(at, alpha)[0])
        highs.append(ref_level_interval(hat, alpha)[1])
    own = ref_level_interval([y / x for x, y in zip(n, c, strict=True)], alpha)
    return min([own[0], *lows]), max([own[1], *highs])


def batch(prefix: str, n: list[int], c: list[int]) -> list[Outcome]:
    return [Outcome(f"{prefix}{i}", j, j < y) for i, (x, y) in enumerate(zip(n, c, strict=True))
            for j in range(x)]  # fmt: skip


CASES = {
    # nine tasks at 10 of 10 and one at 9 of 10: pass@2 is 1 on every task
    "near 1": ([10] * 10, [10] * 9 + [9]),
    # the mirror image: pass^2 is 0 on every task
    "near 0": ([10] * 10, [0] * 9 + [1]),
    # unequal attempts (k stops at 3), a spread
    "unequal attempts": ([3, 5, 8, 4, 6, 3, 7], [3, 4, 8, 1, 6, 0, 7]),
    # every task at one inner value: the exact bound on every k = 1 value
    "one inner value": ([4] * 8, [2] * 8),
    # one attempt a task: the three are the rule's on the rates
    "one attempt": ([1] * 6, [1, 0, 1, 1, 0, 1]),
}


# --- 1. the success rate, pass@1 and pass^1: one value, one interval -----------------------


@pytest.mark.parametrize("name", CASES)
def test_the_success_rate_pass_at_1_and_pass_hat_1_show_one_interval(name: str) -> None:
    """Nine tasks at 10 of 10 and one at 9 of 10 showed a success rate of 0.990 [0.926, 1]
    beside pass@1 0.990 [0.692, 1]: one number, two intervals, the narrower taking the tiny
    spread of values near 1 for the spread between tasks. The three now show the widest."""
    n, c = CASES[name]
    view = summarize(batch("t", n, c), n_boot=0).views["valid"]
    rate, at_1, hat_1 = view.success_rate, view.pass_at_k[1], view.pass_hat_k[1]
    assert rate is not None
    low, high = ref_curve_ends(n, c)
    mean = sum(y / x for x, y in zip(n, c, strict=True)) / len(n)
    for shown in (rate, at_1, hat_1):
        assert shown.estimate == pytest.approx(mean, abs=1e-12)
        assert shown.ci_low == pytest.approx(low, abs=1e-9), (name, shown)
        assert shown.ci_high == pytest.approx(high, abs=1e-9), (name, shown)
    if name == "near 1":  # the exact bound of pass@2, not the rates' own [0.926, 1]
        assert rate.ci_low == pytest.approx(0.025 ** (1 / 10), abs=1e-12)
        # the rates' own lower end reaches the exact bound of every task at 1, their
        # highest value (seventeenth round), as pass@1's along its curve does
        assert "one value" in rate.note or "at the highest value, 1.000" in rate.note


def test_a_slice_shows_the_success_rates_interval_along_both_curves() -> None:
    """A slice prints its success rate and pass^k (not pass@k): the success rate is pass@1 all
    the same, and its lower end follows the pass@k curve of the slice's tasks."""
    n, c = CASES["near 1"]
    records = [Outcome(o.task_id, o.attempt, o.success, slice_labels=("refund",))
               for o in batch("t", n, c)]  # fmt: skip
    part = summarize(records, n_boot=0).views["valid"].by_label["refund"]
    low, high = ref_curve_ends(n, c)
    assert part.success_rate is not None
    for shown in (part.success_rate, part.pass_hat_k[1]):
        assert (shown.ci_low, shown.ci_high) == pytest.approx((low, high), abs=1e-9)


def test_compare_shows_each_sides_one_interval_and_an_unpaired_difference_adds_them() -> None:
    """Paired: each side's success rate, pass@1 and pass^1 one interval. Unpaired: the same,
    and the square-and-add of the sides as shown, its p-value below 0.05 exactly when the
    interval excludes 0 (the sides' limits at every level are the widest of the three)."""
    n_a, c_a = CASES["near 1"]
    n_b, c_b = [10] * 10, [10, 9, 10, 8, 10, 10, 7, 10, 10, 9]
    ends = {"a": ref_curve_ends(n_a, c_a), "b": ref_curve_ends(n_b, c_b)}
    for b_prefix in ("t", "u"):  # shared task ids: paired; disjoint: unpaired
        found = compare(batch("t", n_a, c_a), batch(b_prefix, n_b, c_b), n_boot=0)
        assert found.mode == ("paired" if b_prefix == "t" else "unpaired")
        for metric, k in (("success_rate", None), ("pass_at_k", 1), ("pass_hat_k", 1)):
            d = found.find(metric, "valid", k)
            for which, shown in (("a", d.a), ("b", d.b)):
                assert (shown.ci_low, shown.ci_high) == pytest.approx(ends[which], abs=1e-9)
            if found.mode == "unpaired":
                (la, ua), (lb, ub) = ends["a"], ends["b"]
                ma, mb = d.a.estimate, d.b.estimate
                low = mb - ma - math.hypot(mb - lb, ua - ma)
                high = mb - ma + math.hypot(ub - mb, ma - la)
                got = (d.difference.ci_low, d.difference.ci_high)
                assert got == pytest.approx((max(-1, low), min(1, high)), abs=1e-9)
                assert d.p_value is not None
                assert (d.p_value < 0.05) == (high < 0 or low > 0)


def test_the_one_interval_covers_where_the_rates_own_missed_from_above() -> None:
    """Ten tasks from a population where most tasks pass nearly always and a few (one in
    eight) pass a third of the time, ten attempts each: the suites that drew none of the few
    show rates all near 1 with a tiny spread, and the rule on the rates alone put its interval
    above the truth. Counted here against the truth, with the rule alone recomputed from
    scipy's t quantile."""
    rng = np.random.default_rng(16)
    truth = 7 / 8 * 0.99 + 1 / 8 * (1 / 3)
    alone = shown = 0
    suites = 300
    for _ in range(suites):
        p = np.where(rng.random(10) < 1 / 8, 1 / 3, 0.99)
        c = [int(x) for x in rng.binomial(10, p)]
        view = summarize(batch("t", [10] * 10, c), n_boot=0).views["valid"]
        rate = view.success_rate
        assert rate is not None and rate.ci_low is not None and rate.ci_high is not None
        rates = [x / 10 for x in c]
        if len(set(rates)) > 1:
            u, se = float(np.mean(rates)), float(np.std(rates, ddof=1)) / math.sqrt(10)
            q = float(scipy_stats.t.isf(0.025, 9))
            n_eff = u * (1 - u) / se**2
            centre = (u * n_eff + q**2 / 2) / (n_eff + q**2)
            own_low = centre - q * math.sqrt(centre * (1 - centre) / (n_eff + q**2))
        else:
            own_low = rates[0] * 0.025 ** (1 / 10)
        alone += own_low <= truth
        shown += rate.ci_low <= truth <= rate.ci_high
    assert alone / suites < 0.9  # the rule alone, at the rates: a 95% interval that misses
    assert shown / suites >= 0.95


# --- 2. a view with no counted attempt ----------------------------------------------------------


def test_a_report_with_no_valid_attempt_says_what_cannot_be_computed(tmp_path: Path) -> None:
    """Every attempt invalid: the text report left the valid view's row out of the suite table
    and printed an empty pass@k table (as if nothing were missing); the HTML said no k is
    supported because "some task" had no counted attempt, where none had."""
    text = (
        "task_id,attempt,success,terminal_reason\n"
        "t1,0,false,environment_failure\nt1,1,false,grader_failure\n"
        "t2,0,false,environment_failure\n"
    )
    batch_id = import_text(tmp_path, text)
    page = tmp_path / "r.html"
    code, out, err = cli("report", batch_id, "--store", str(tmp_path / "s.db"),
                         "--html", str(page))  # fmt: skip
    assert code == 3 and "every attempt is invalid (3 attempts)" in err, err  # no estimate
    said = " ".join(out.split())
    assert "valid attempts │ n/a │ n/a │ n/a │ 0 │ 0 │ cannot be computed" in said
    assert "pass@k and pass^k cannot be computed: no task has a valid attempt" in said
    assert "invalid = failure │ 0.000 │ n/a │ n/a │ 2 │ 3 │" in said  # the strict view counts
    html = page.read_text(encoding="utf-8")
    assert "some task has no counted attempt" not in html
    assert "cannot be computed: no task has a counted attempt in this view" in html


def test_a_one_task_report_says_n_a_and_counts_in_the_singular(tmp_path: Path) -> None:
    """One task, one valid attempt of two: the headline gives the value with the reason there
    is no interval, over "1 task, 2 attempts" (it said "1 tasks")."""
    text = "task_id,attempt,success,terminal_reason\nt1,0,true,success\nt1,1,false,agent_failure\n"
    batch_id = import_text(tmp_path, text)
    code, out, err = cli("report", batch_id, "--store", str(tmp_path / "s.db"))
    assert code == 0, err
    said = " ".join(out.split())
    assert "pass^1 = 0.500 (n/a: 1 task, intervals need at least 5) over 1 task, 2 attempts" in said
