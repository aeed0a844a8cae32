"""Simulated coverage of a paired difference's interval near an end (prints the table in
docs/statistics.md).

Suites of T tasks are drawn from a population of task pairs (a's and b's success
probabilities); each side gets four attempts a task, and each task's difference is b's
success rate minus a's. The true difference is the population's mean (a large draw). For
each row: how often the 95% interval holds it, and its mean width, for

* ``t alone``: the symmetric t interval on the CR1 SE (the rule through the eighteenth round);
* ``as reported``: the rule (since the nineteenth round each end reaches at least as far as
  the exact bound of every task at the highest or lowest difference).

Run: ``.venv/bin/python bench/paired_coverage.py [--reps 2000]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

from groundstate.stats import make_estimate
from groundstate.stats.intervals import t_quantile

ATTEMPTS = 4
Pairs = Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]


def _some_worse(rng: np.random.Generator, tasks: int) -> tuple[np.ndarray, np.ndarray]:
    """b fixes 85% of tasks (a near 0, b near 1) and breaks the rest."""
    bad = rng.random(tasks) < 0.15
    pa = np.where(bad, rng.beta(50, 1, tasks), rng.beta(1, 50, tasks))
    pb = np.where(bad, rng.beta(1, 50, tasks), rng.beta(50, 1, tasks))
    return pa, pb


def _most_untouched(rng: np.random.Generator, tasks: int) -> tuple[np.ndarray, np.ndarray]:
    """85% of tasks pass every time on both sides; on the rest b is better by 0.4."""
    easy = rng.random(tasks) < 0.85
    pa = np.where(easy, 1.0, rng.beta(2, 2, tasks))
    return pa, np.where(easy, 1.0, np.minimum(1.0, pa + 0.4))


def _power(rng: np.random.Generator, tasks: int) -> tuple[np.ndarray, np.ndarray]:
    """Beta(2, 1.5) tasks, b's probability p^0.7 (bench/interval_coverage.py)."""
    p = rng.beta(2, 1.5, tasks)
    return p, p**0.7


POPULATIONS: dict[str, Pairs] = {
    "15% got worse": _some_worse,
    "most untouched": _most_untouched,
    "Beta(2, 1.5), b = p^0.7": _power,
}


def row(pairs: Pairs, tasks: int, reps: int, seed: int) -> tuple[float, list[float], list[float]]:
    rng = np.random.default_rng(seed)
    big_a, big_b = pairs(rng, 1_000_000)
    truth = float(np.mean(big_b - big_a))
    hits, widths = [0.0, 0.0], [0.0, 0.0]
    q = t_quantile(tasks - 1)
    for _ in range(reps):
        pa, pb = pairs(rng, tasks)
        d = (rng.binomial(ATTEMPTS, pb) - rng.binomial(ATTEMPTS, pa)) / ATTEMPTS
        shown = make_estimate(d, np.ones(tasks), np.full(tasks, 2 * ATTEMPTS), difference=True)
        assert shown.ci_low is not None and shown.ci_high is not None
        alone = (shown.ci_low, shown.ci_high)
        if shown.method == "t_cr1" and shown.se is not None:
            mean = float(np.mean(d))
            alone = (max(-1.0, mean - q * shown.se), min(1.0, mean + q * shown.se))
        for j, (low, high) in enumerate((alone, (shown.ci_low, shown.ci_high))):
            hits[j] += low <= truth <= high
            widths[j] += high - low
    return truth, [h / reps for h in hits], [w / reps for w in widths]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=19)
    args = parser.parse_args()
    print("| population | tasks | truth | t alone | as reported |")
    print("|---|---:|---:|---:|---:|")
    for name, pairs in POPULATIONS.items():
        for tasks in (10, 30, 100):
            truth, cover, width = row(pairs, tasks, args.reps, args.seed)
            print(
                f"| {name} | {tasks} | {truth:.4f} | {cover[0]:.3f} ({width[0]:.3f}) | "
                f"{cover[1]:.3f} ({width[1]:.3f}) |"
            )


if __name__ == "__main__":
    main()
