"""Eighth statistics audit: every printed statistic against an outside re-computation.

The references here are written from docs/statistics.md and the chapter alone: the
bootstrap as "tasks resampled with replacement" (numpy's seeded draw of the counted tasks),
the comparison's intervals, tests and counts as the doc states them, and the printed text
parsed back and held to the JSON it came from.
"""

from __future__ import annotations

import numpy as np
import pytest

from groundstate.stats import Outcome, compare, summarize


def attempts(task: str, ends: str, partial: float | None = None) -> list[Outcome]:
    """One outcome per letter: s success, f failure, i invalid (an environment failure)."""
    return [
        Outcome(
            task,
            j,
            end == "s",
            valid=end != "i",
            terminal_reason={"s": "success", "f": "agent_failure", "i": "environment_failure"}[end],
            partial_score=None if end == "i" else partial,
        )
        for j, end in enumerate(ends)
    ]


# --- the bootstrap resamples the tasks a figure counts -------------------------------------


def ref_bootstrap(values: list[float], seed: int, n_boot: int) -> tuple[float, float]:
    """Percentile interval of the mean when the T tasks are drawn with replacement."""
    v = np.asarray(values)
    draws = np.random.default_rng(seed).integers(0, len(v), size=(n_boot, len(v)))
    means = v[draws].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def test_the_valid_views_bootstrap_resamples_only_its_own_tasks() -> None:
    """Five counted tasks and twenty whose every attempt was invalid: the valid view's second
    opinion is the bootstrap of its five tasks. Drawing 25 rows and ignoring the invalid ones
    resampled a random number of tasks (some draws held one), and the interval of rates
    0, 0.25, 0.5, 1, 1 reached 1."""
    counted = [
        attempts(f"t{i}", ends) for i, ends in enumerate(["ffff", "sfff", "ssff", "ssss", "ssss"])
    ]
    broken = [attempts(f"x{i:02}", "iiii") for i in range(20)]
    records = [o for task in counted + broken for o in task]
    got = summarize(records, n_boot=400).views["valid"].success_rate
    assert got is not None and got.n_tasks == 5
    want = ref_bootstrap([0.0, 0.25, 0.5, 1.0, 1.0], seed=0, n_boot=400)
    assert (got.boot_low, got.boot_high) == (pytest.approx(want[0], abs=1e-6),
                                             pytest.approx(want[1], abs=1e-6))  # fmt: skip
    # The same as a batch without those tasks at all.
    alone = summarize([o for task in counted for o in task], n_boot=400).views["valid"]
    assert alone.success_rate is not None
    assert (got.boot_low, got.boot_high) == (alone.success_rate.boot_low,
                                             alone.success_rate.boot_high)  # fmt: skip


def test_a_compared_partial_score_is_bootstrapped_over_the_tasks_scored_on_both_sides() -> None:
    """Eight tasks compared, five with rubrics on both sides: the partial score's difference
    resamples those five, not a random number of them among eight rows."""
    a, b = [], []
    scores = [(0.2, 0.9), (0.5, 0.5), (0.1, 0.6), (0.9, 0.3), (0.4, 1.0)]
    for i, (pa, pb) in enumerate(scores):
        a += attempts(f"t{i}", "sfsf", pa)
        b += attempts(f"t{i}", "ssff", pb)
    for i in range(3):  # no rubric
        a += attempts(f"u{i}", "ffff")
        b += attempts(f"u{i}", "sfss")
    got = compare(a, b, n_boot=400).find("partial_score").difference
    want = ref_bootstrap([pb - pa for pa, pb in scores], seed=0, n_boot=400)
    assert (got.boot_low, got.boot_high) == (pytest.approx(want[0], abs=1e-6),
                                             pytest.approx(want[1], abs=1e-6))  # fmt: skip
