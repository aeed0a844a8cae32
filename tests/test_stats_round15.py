"""Statistics audit, fifteenth round: the unpaired p-value found in a handful of evaluations
of the sides' limits (exactly as before), and every figure recomputed here on edge cases."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import optimize, special

from groundstate.report.numbers import interval
from groundstate.stats import (
    Outcome,
    TaskCounts,
    compare,
    interval_rule,
    pass_curves,
    summarize_views,
)
from tests.test_stats_round13 import ref_level_interval, ref_mover, side

# --- 1. the unpaired p-value -------------------------------------------------------------------


def ref_mover_p(a: list[float], b: list[float]) -> float:
    """The smallest alpha whose square-and-add interval excludes 0, from the reference
    interval written out in the thirteenth round's tests (Brent on log alpha)."""
    d = sum(b) / len(b) - sum(a) / len(a)

    def gap(log_alpha: float) -> float:
        low, high = ref_mover(a, b, math.exp(log_alpha))
        return low if d > 0 else -high

    if gap(math.log1p(-1e-12)) <= 0:
        return 1.0
    return math.exp(optimize.brentq(gap, math.log(1e-300), math.log1p(-1e-12), xtol=1e-12))


def scored(prefix: str, values: list[float]) -> list[Outcome]:
    """One attempt a task, its partial score the task's value."""
    return [Outcome(f"{prefix}{i}", 0, v == 1, partial_score=v) for i, v in enumerate(values)]


CASES = {
    "spread against spread": ([0.25, 0.5, 0.75, 1.0, 0.5, 0.25], [1.0, 0.75, 1.0, 0.75, 1.0]),
    "every task at 1 against a spread": ([1.0] * 8, [0.5, 0.75, 0.25, 1.0, 0.5, 0.75, 0.5]),
    "near the threshold": ([0.25, 0.5, 0.5, 0.75, 0.5], [0.75, 0.5, 1.0, 0.75, 0.75]),
    "one inner value against a spread": ([0.5] * 6, [0.75, 1.0, 0.5, 1.0, 0.75, 1.0]),
    "a tiny difference": ([0.5, 0.75, 0.25, 0.5, 0.5], [0.5, 0.75, 0.25, 0.5, 0.75]),
}


@pytest.mark.parametrize("name", CASES)
def test_the_unpaired_p_value_is_the_level_where_the_interval_reaches_0_in_few_steps(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bisection on log alpha evaluated both sides' limits 42 times per metric (a comparison
    of 100 attempts a task has some 400 metrics); regula falsi finds the same p, to a
    relative 1e-9, in a handful of evaluations, and it stays below 0.05 exactly when the
    95% interval excludes 0."""
    compare_module = __import__("groundstate.stats.compare", fromlist=["_SideEnds"])
    calls = [0]
    limits = compare_module._SideEnds.limits

    def counted(self: Any, alphas: Any, cols: Any) -> Any:
        calls[0] += 1
        return limits(self, alphas, cols)

    # since the nineteenth round every metric of a view is searched at once: one evaluation
    # of each side's limits per step, for all metrics
    monkeypatch.setattr(compare_module._SideEnds, "limits", counted)
    a, b = CASES[name]
    # each value a task's partial score: the success rate has pass@1's interval along its
    # curve since the sixteenth round, the partial score its own, as the reference
    found = compare(scored("a", a), scored("b", b), n_boot=0)
    metrics = sum(x.difference.method == "mover" for x in found.differences)
    d = found.find("partial_score")
    assert found.mode == "unpaired" and d.difference.method == "mover"
    assert d.p_value == pytest.approx(ref_mover_p(a, b), rel=2e-9)
    assert d.difference.ci_low is not None and d.difference.ci_high is not None
    excludes = d.difference.ci_low > 0 or d.difference.ci_high < 0
    assert excludes == (d.p_value < 0.05)
    assert 0 < calls[0] <= 2 * 2 * 40, (calls[0], metrics)  # both sides, both views


# --- 2. the documented examples are what the code prints ------------------------------------

DOCS = Path(__file__).resolve().parents[1] / "docs" / "statistics.md"


def _said(text: str) -> str:
    """*text* with the docs' line breaks and indentation folded to single spaces."""
    return " ".join(text.split())


def test_the_documented_unpaired_examples_are_what_compare_prints() -> None:
    """docs/statistics.md said every attempt of a passed on 50 tasks against b at 0.3 gives
    [-0.756, -0.587]; the code (then and now) prints [-0.751, -0.609] for the case, and the
    other examples of the section are recomputed alike."""
    docs = _said(DOCS.read_text(encoding="utf-8"))
    cases = [
        ([4] * 50, [1, 2, 1, 0, 2] * 10,
         "against b at 0.3 (50 tasks at 1, 2, 1, 0 and 2 of 4) gives {interval};"),
        ([4] * 6, [2, 3, 3, 3, 3, 3],
         "six tasks at 1 against six at 0.71 give {interval}, p = {p}."),
        ([4] * 9 + [2], [4] * 6 + [3, 3, 2, 2], "(now {interval});"),
    ]  # fmt: skip
    for a, b, sentence in cases:
        d = compare(side("a", a, 4), side("b", b, 4), n_boot=0).find("success_rate")
        assert d.difference.ci_low is not None and d.difference.ci_high is not None
        shown = interval(d.difference.ci_low, d.difference.ci_high, difference=True)
        assert d.p_value is not None
        # the docs write a positive bound with its sign or without
        texts = [
            sentence.format(interval=i, p=f"{d.p_value:.2f}")
            for i in (shown, shown.replace("+", ""))
        ]
        assert any(text in docs for text in texts), texts


def test_the_documented_near_agreement_intervals_are_what_the_rule_gives() -> None:
    """The design-limit paragraph's example: ten tasks at 1 get [0.691, 1]; nine at 1 and one
    at 0.999 got [0.9992, 1] until the seventeenth round, and now [0.691, 1] too."""
    docs = _said(DOCS.read_text(encoding="utf-8"))
    flat = interval_rule(np.ones(10), np.ones(10))
    near = interval_rule(np.array([1.0] * 9 + [0.999]), np.ones(10))
    assert (flat.method, near.method) == ("exact_bound", "agresti_coull_t_cr1")
    low = math.floor(flat.low * 1000) / 1000  # printed rounded down (twenty-first round)
    assert f"ten tasks at 1 get the exact bound [{low:.3f}, 1]" in docs
    assert near.low == pytest.approx(flat.low, abs=1e-12)
    assert f"nine at 1 and one at 0.999 now get [{low:.3f}, 1]" in docs


# --- 3. pass@k and pass^k intervals follow their curves -------------------------------------


def _counts(wins: list[int], attempts: int) -> list[TaskCounts]:
    return [TaskCounts(f"t{i:03d}", attempts, c, 0, 1.0, (), None, "") for i, c in enumerate(wins)]


def test_a_pass_at_k_interval_is_never_surer_from_below_than_a_larger_ks() -> None:
    """Nine tasks at 4 of 6 and one at 2 of 6: pass@4 was [0.950, 1] (the one task at 0.933
    gave a tiny spread) while pass@5, every task at 1, had the exact bound [0.692, 1]; yet
    pass@4 cannot exceed pass@5. Now pass@k's lower end is the lowest of k and every larger
    k, and pass^k's upper end the highest, with a note naming the k it comes from."""
    view = summarize_views({"valid": _counts([2] + [4] * 9, 6), "strict": []}, n_boot=0)["valid"]
    plain = interval_rule(np.array([1 - 1 / 15] + [1.0] * 9), np.ones(10))
    # the rule on pass@4's values alone: 0.950 until the seventeenth round, now as far as
    # the exact bound of every task at 1, its highest value
    assert plain.low == pytest.approx(0.025 ** (1 / 10))
    at4, at5 = view.pass_at_k[4], view.pass_at_k[5]
    assert at5.method == "exact_bound" and at5.ci_low == pytest.approx(0.025 ** (1 / 10))
    assert at4.ci_low == pytest.approx(at5.ci_low, abs=1e-12) and at4.ci_high == 1.0
    assert at4.method == "agresti_coull_t_cr1" and at4.se is not None
    assert "exact bound of every task at the highest value" in at4.note
    lows = [view.pass_at_k[k].ci_low for k in range(1, 7)]
    highs = [view.pass_hat_k[k].ci_high for k in range(1, 7)]
    assert lows == sorted(lows) and highs == sorted(highs, reverse=True)  # type: ignore[type-var]
    assert view.pass_hat_k[3].ci_high == pytest.approx(view.pass_hat_k[5].ci_high, abs=1e-12)
    # pass^3's own upper end reaches the exact bound of every task at 0, its lowest value
    # (seventeenth round), where pass^5's along the curve is too
    assert "at the lowest value, 0.000" in view.pass_hat_k[3].note


def test_curves_only_widen_the_rule_and_follow_their_direction() -> None:
    """Random batches (unequal attempts, weights): every pass@k and pass^k interval holds
    the rule's own interval of its values, pass@k's lower ends rise with k and pass^k's upper
    ends fall, and each end is the rule's at k or at some larger k."""
    rng = np.random.default_rng(15)
    for _ in range(60):
        tasks = int(rng.integers(5, 12))
        ns = rng.integers(3, 9, tasks)
        counts = [
            TaskCounts(f"t{i}", int(n), int(rng.binomial(n, rng.beta(2, 1))), 0,
                       float(rng.choice([1.0, 2.0])), (), None, "")
            for i, n in enumerate(ns)
        ]  # fmt: skip
        view = summarize_views({"valid": counts, "strict": []}, n_boot=0)["valid"]
        at, hat = pass_curves(ns, [t.c for t in counts], view.kmax)
        w = np.array([t.weight for t in counts])
        rules = {
            (name, k): interval_rule(values[:, k - 1], w)
            for name, values in (("at", at), ("hat", hat))
            for k in range(1, view.kmax + 1)
        }
        for k in range(1, view.kmax + 1):
            for name, curve in (("at", view.pass_at_k), ("hat", view.pass_hat_k)):
                rule, shown = rules[name, k], curve[k]
                assert rule.low is not None and rule.high is not None
                assert shown.ci_low is not None and shown.ci_high is not None
                assert shown.ci_low <= rule.low and shown.ci_high >= rule.high
                later = [rules[name, j] for j in range(k, view.kmax + 1)]
                if k == 1:  # one value with the success rate: one interval (sixteenth round)
                    ats = [rules["at", j] for j in range(1, view.kmax + 1)]
                    hats = [rules["hat", j] for j in range(1, view.kmax + 1)]
                    lows = [r.low for r in [*ats, hats[0]] if r.low is not None]
                    highs = [r.high for r in [*hats, ats[0]] if r.high is not None]
                    assert shown.ci_low == pytest.approx(min(lows), abs=1e-12)
                    assert shown.ci_high == pytest.approx(max(highs), abs=1e-12)
                elif name == "at":
                    assert shown.ci_low == min(r.low for r in later)  # type: ignore[type-var]
                    assert shown.ci_high == rule.high
                else:
                    assert shown.ci_high == max(r.high for r in later)  # type: ignore[type-var]
                    assert shown.ci_low == rule.low


def test_pass_at_k_of_skewed_tasks_now_covers_at_10_tasks() -> None:
    """bench/skewed_coverage.py's worst row: pass@10 of 20 attempts over 10 tasks from
    Beta(2, 1.5) covered 0.703 (the suites that drew none of the few low tasks missed from
    above). Along the curve its lower end is pass@20's at most, where task values are 0 or
    1 and the rule covers."""
    a, b, attempts, tasks, k = 2.0, 1.5, 20, 10, 10
    truth = 1 - float(special.beta(a, b + k) / special.beta(a, b))
    rng = np.random.default_rng(2026)
    held = plain = 0
    suites = 300
    for _ in range(suites):
        wins = rng.binomial(attempts, rng.beta(a, b, tasks)).tolist()
        view = summarize_views({"valid": _counts(wins, attempts), "strict": []}, n_boot=0)
        shown = view["valid"].pass_at_k[k]
        assert shown.ci_low is not None and shown.ci_high is not None
        held += shown.ci_low <= truth <= shown.ci_high
        at, _ = pass_curves(np.full(tasks, attempts), wins, k)
        rule = interval_rule(at[:, k - 1], np.ones(tasks))
        plain += rule.low <= truth <= rule.high  # type: ignore[operator]
    # the rule alone covered 0.703 (documented) until the seventeenth round; its lower end
    # now reaches the exact bound of every task at the highest value, so it covers too
    assert plain / suites >= 0.95
    assert held / suites >= 0.95


def ref_curve_mover(
    a: list[int], b: list[int], attempts: int, k: int, alpha: float = 0.05
) -> tuple[float, float]:
    """The square-and-add of pass@k of two disjoint batches at level 1 - alpha, each side's
    interval widened along its curve (lower end the lowest at k or any larger k up to the
    common k), written from the thirteenth round's reference level rule."""
    top = attempts

    def side(wins: list[int]) -> tuple[float, float, float]:
        def values(j: int) -> list[float]:
            return [1 - math.comb(attempts - c, j) / math.comb(attempts, j) for c in wins]

        own = ref_level_interval(values(k), alpha)
        low = min(ref_level_interval(values(j), alpha)[0] for j in range(k, top + 1))
        return sum(values(k)) / len(wins), low, own[1]

    (ma, la, ua), (mb, lb, ub) = side(a), side(b)
    d = mb - ma
    low = d - math.hypot(mb - lb, ua - ma)
    high = d + math.hypot(ub - mb, ma - la)
    return max(-1.0, low), min(1.0, high)


def test_an_unpaired_pass_at_k_is_the_square_and_add_of_the_sides_along_their_curves() -> None:
    """compare shows each side's pass@k as report does (widened along the curve) and the
    unpaired difference adds those intervals in squares, at every level: its p-value is the
    level where that interval reaches 0 (below 0.05 exactly when the shown one excludes 0)."""
    a, b, attempts = [2] + [4] * 6, [1, 3, 2, 0, 3, 2], 6
    found = compare(side("a", a, attempts), side("b", b, attempts), n_boot=0)
    assert found.mode == "unpaired"
    d = found.find("pass_at_k", "valid", 4)
    # a's tasks are at 1 but one at 0.933: the rule's own lower end reaches the exact bound
    # of every task at 1 (the seventeenth round), which pass@5's along the curve is too
    assert "exact bound of every task at the highest value, 1.000" in d.a.note
    assert d.a.ci_low == pytest.approx(0.025 ** (1 / 7))
    assert (d.difference.ci_low, d.difference.ci_high) == pytest.approx(
        ref_curve_mover(a, b, attempts, 4), abs=1e-9
    )
    assert d.p_value is not None and d.difference.ci_low is not None
    assert (d.p_value < 0.05) == (d.difference.ci_low > 0 or d.difference.ci_high < 0)  # type: ignore[operator]
    at_p = ref_curve_mover(a, b, attempts, 4, d.p_value)
    assert min(abs(at_p[0]), abs(at_p[1])) == pytest.approx(0, abs=1e-6)
