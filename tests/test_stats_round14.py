"""Statistics audit, fourteenth round: every figure recomputed independently on edge cases.

Each test names the defect it pins; the reference values are computed here, in plain Python
or scipy, never through the code under test."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from groundstate.stats import (
    Estimate,
    Outcome,
    compare,
    make_estimate,
    summarize,
    unpaired_difference,
)
from tests.test_compare_cli import _import, _invoke, _json, _store

# --- 1. a spread of 0 between tasks is no known SE of 0 ----------------------------------------


def test_an_exact_bound_carries_no_se_and_prints_none(tmp_path: Path) -> None:
    """Identical batches (every task difference 0) printed "SE 0.000" beside the exact bound
    [-0.264, +0.264], and a level with every task at 1 "SE 0.000" beside [0.541, 1]: a
    certainty the bound denies. A spread of 0 between tasks is the sample's, so no SE is
    given (JSON null, "n/a" in the text), below five tasks too; a spread keeps its SE."""
    flat = [Outcome(f"t{i}", j, True) for i in range(6) for j in range(4)]
    rate = summarize(flat, n_boot=0).views["valid"].success_rate
    assert rate is not None and rate.method == "exact_bound" and rate.se is None
    few = summarize(flat[:12], n_boot=0).views["valid"].success_rate  # 3 tasks, all at 1
    assert few is not None and few.ci_low is None and few.se is None
    spread = [Outcome(f"t{i}", j, j <= i % 4) for i in range(6) for j in range(4)]
    rates = [min(i % 4 + 1, 4) / 4 for i in range(6)]
    got = summarize(spread, n_boot=0).views["valid"].success_rate
    assert got is not None and got.se == pytest.approx(np.std(rates, ddof=1) / math.sqrt(6))
    same = compare(spread, spread, n_boot=0).find("success_rate").difference
    assert same.method == "exact_bound" and same.se is None

    marks = {f"t{i}": "SSFF" if i % 2 else "SFFF" for i in range(6)}
    a, b = _import(tmp_path, "a", marks), _import(tmp_path, "b", marks)
    data = _json(tmp_path, "compare", a, b)
    difference = data["metrics"]["valid"]["success_rate"]["difference"]  # type: ignore[index]
    assert difference["method"] == "exact_bound" and difference["se"] is None
    code, out, err = _invoke("compare", a, b, "--store", _store(tmp_path))
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.lstrip("│ ").startswith("success_rate"))
    assert "0.000 " not in row.replace("+0.000", "") and "n/a" in row


# --- 2. an unpaired difference rests on each side's own interval, nearly flat or not -----------


def _rates(prefix: str, wins: list[int], attempts: int) -> list[Outcome]:
    return [Outcome(f"{prefix}{i}", j, j < c) for i, c in enumerate(wins) for j in range(attempts)]


def _mover(a: Estimate, b: Estimate) -> tuple[float, float]:
    """Newcombe (1998) method 10: b - a from the two sides' printed intervals."""
    assert a.ci_low is not None and a.ci_high is not None
    assert b.ci_low is not None and b.ci_high is not None
    d = b.estimate - a.estimate
    low = d - math.hypot(b.estimate - b.ci_low, a.ci_high - a.estimate)
    high = d + math.hypot(b.ci_high - b.estimate, a.estimate - a.ci_low)
    return max(-1.0, low), min(1.0, high)


def test_an_unpaired_difference_is_never_surer_than_a_sides_own_interval() -> None:
    """a: ten tasks, nine at 4/4 and one at 2/4 (a = 0.95, its own interval [0.692, 1]); b:
    ten other tasks at 4/4 x6, 3/4 x2, 2/4 x2. Welch's t on the two CR1 SEs gave b - a
    [-0.276, +0.076]: an upper reach of 0.176 above the difference, though a alone may lie
    0.258 below its value. The square-and-add of the two sides' own intervals (Newcombe 1998,
    method 10) keeps each side's asymmetry near the end: [-0.315, +0.178], no SE and no t,
    and its p-value (0.34) below 0.05 exactly when the interval excludes 0."""
    a_wins, b_wins = [4] * 9 + [2], [4] * 6 + [3, 3, 2, 2]
    found = compare(_rates("a", a_wins, 4), _rates("b", b_wins, 4), n_boot=0)
    for d in found.differences:
        if d.difference.ci_low is None or d.a.ci_low is None or d.b.ci_low is None:
            continue
        assert d.difference.method == "mover", d.name
        assert (d.statistic, d.difference.se, d.difference.df) == (None, None, None)
        assert (d.difference.ci_low, d.difference.ci_high) == pytest.approx(
            _mover(d.a, d.b), abs=1e-12
        )
        low, high = d.difference.ci_low, d.difference.ci_high
        assert d.difference.ci_high is not None and d.a.ci_high is not None
        assert high - d.difference.estimate >= d.a.estimate - d.a.ci_low - 1e-12, d.name
        assert d.difference.estimate - low >= d.a.ci_high - d.a.estimate - 1e-12, d.name
        assert d.p_value is not None and (d.p_value < 0.05) == (low > 0 or high < 0)
    rate = found.find("success_rate")
    # a's success rate has pass@1's interval (sixteenth round): pass@3 is 1 on every task
    assert rate.a.ci_low == pytest.approx(0.025 ** (1 / 10), abs=1e-12)
    assert (rate.difference.ci_low, rate.difference.ci_high) == pytest.approx(
        (-0.3154, 0.1785), abs=1e-4
    )
    assert found.methods["test"] == "mover"


def test_the_unpaired_difference_covers_where_a_side_sits_near_an_end() -> None:
    """Tasks of a at Beta(30, 1), of b at Beta(6, 1), 8 disjoint tasks a side x 4 attempts
    (seeded, 400 pairs): Welch's t, used wherever a had a spread, covered the true difference
    6/7 - 30/31 in 0.92-0.93 of those suites (bench/unpaired_coverage.py); the square-and-add
    covers at least 0.95 of them."""
    rng = np.random.default_rng(14)
    truth = 6 / 7 - 30 / 31
    held = used = 0
    for _ in range(400):
        sides = []
        for a, b in ((30, 1), (6, 1)):
            wins = rng.binomial(4, rng.beta(a, b, size=8))
            sides.append(make_estimate(wins / 4, np.ones(8), np.full(8, 4)))
        if sides[0].method == "exact_bound":
            continue  # every a task at 1: the square-and-add since the thirteenth round
        d = unpaired_difference(*sides)
        used += 1
        assert d.method == "mover" and d.ci_low is not None and d.ci_high is not None
        held += d.ci_low <= truth <= d.ci_high
    assert used > 150
    assert held / used >= 0.95
