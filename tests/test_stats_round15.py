"""Statistics audit, fifteenth round: the unpaired p-value found in a handful of evaluations
of the sides' limits (exactly as before), and every figure recomputed here on edge cases."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize

from groundstate.report.numbers import interval
from groundstate.stats import compare, interval_rule
from tests.test_stats_round13 import ref_mover, side

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
    compare_module = __import__("groundstate.stats.compare", fromlist=["_own_limits"])
    calls = [0]
    own = compare_module._own_limits

    def counted(*args: object) -> Callable[[float], tuple[float, float]]:
        limits = own(*args)

        def count(alpha: float) -> tuple[float, float]:
            calls[0] += 1
            return limits(alpha)  # type: ignore[no-any-return]

        return count

    monkeypatch.setattr(compare_module, "_own_limits", counted)
    a, b = CASES[name]
    found = compare(side("a", [round(4 * v) for v in a], 4),
                    side("b", [round(4 * v) for v in b], 4), n_boot=0)  # fmt: skip
    metrics = sum(x.difference.method == "mover" for x in found.differences)
    d = found.find("success_rate")
    assert found.mode == "unpaired" and d.difference.method == "mover"
    assert d.p_value == pytest.approx(ref_mover_p(a, b), rel=2e-9)
    assert d.difference.ci_low is not None and d.difference.ci_high is not None
    excludes = d.difference.ci_low > 0 or d.difference.ci_high < 0
    assert excludes == (d.p_value < 0.05)
    assert calls[0] <= 25 * metrics, (calls[0], metrics)


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
    """The design-limit paragraph's example: ten tasks at 1 get [0.692, 1], nine at 1 and one
    at 0.999 get [0.9992, 1]."""
    docs = _said(DOCS.read_text(encoding="utf-8"))
    flat = interval_rule(np.ones(10), np.ones(10))
    near = interval_rule(np.array([1.0] * 9 + [0.999]), np.ones(10))
    assert (flat.method, near.method) == ("exact_bound", "agresti_coull_t_cr1")
    assert f"ten tasks at 1 get the exact bound [{flat.low:.3f}, 1]" in docs
    assert f"nine at 1 and one at 0.999 get [{near.low:.4f}, 1]" in docs
