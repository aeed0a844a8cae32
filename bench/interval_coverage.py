"""Simulated coverage of the interval rule (prints the table in docs/statistics.md).

Suites of T tasks are drawn from a population of task success probabilities p ~ Beta(a, b);
each task gets four attempts. For each metric the true population value is known in closed
form (Beta moments), so we count how often the 95% interval holds it, under:

* ``t_cr1``: the rule groundstate uses (t on T-1 df with the CR1 SE, n/a below 5 tasks,
  exact bounds where every task agrees);
* ``boot``: the percentile cluster bootstrap, the rule used before (a zero-width interval
  where every task agrees).

Paired differences: system b's task probability is p^0.7, truth E[p^0.7] - E[p].
Run: ``.venv/bin/python bench/interval_coverage.py [--reps 2000]``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import numpy as np
from scipy import special

from groundstate.stats import bootstrap_interval, interval_rule

ATTEMPTS = 4
POPULATIONS = {"Beta(2, 1.5)": (2.0, 1.5), "Beta(0.5, 0.5)": (0.5, 0.5), "Beta(6, 1)": (6.0, 1.0)}
Values = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _moment(a: float, b: float, s: float) -> float:
    return float(special.beta(a + s, b) / special.beta(a, b))


def _metrics(a: float, b: float) -> dict[str, tuple[float, Values, tuple[float, float]]]:
    """name -> (true value, per-task values from (c_a, c_b), bounds)."""
    return {
        "success rate": (_moment(a, b, 1), lambda c, _: c / ATTEMPTS, (0.0, 1.0)),
        "pass^4": (_moment(a, b, 4), lambda c, _: (c == ATTEMPTS).astype(float), (0.0, 1.0)),
        "pass@4": (
            1 - float(special.beta(a, b + 4) / special.beta(a, b)),
            lambda c, _: (c > 0).astype(float),
            (0.0, 1.0),
        ),
        "paired difference": (
            _moment(a, b, 0.7) - _moment(a, b, 1),
            lambda c, cb: (cb - c) / ATTEMPTS,
            (-1.0, 1.0),
        ),
    }


def coverage(
    tasks: int, a: float, b: float, reps: int, seed: int
) -> dict[str, tuple[float, float, int]]:
    """name -> (t_cr1 coverage, bootstrap coverage, zero-width bootstrap intervals)."""
    rng = np.random.default_rng(seed)
    metrics = _metrics(a, b)
    hits = {name: [0, 0, 0] for name in metrics}
    weights = np.ones(tasks)
    for rep in range(reps):
        p = rng.beta(a, b, tasks)
        c, cb = rng.binomial(ATTEMPTS, p), rng.binomial(ATTEMPTS, p**0.7)
        for name, (truth, values_of, bounds) in metrics.items():
            values = values_of(c, cb).astype(np.float64)
            rule = interval_rule(values, weights, bounds)
            low = -math.inf if rule.low is None else rule.low
            high = math.inf if rule.high is None else rule.high
            hits[name][0] += low <= truth <= high
            blow, bhigh = bootstrap_interval(
                values.tolist(), weights.tolist(), seed=rep, n_boot=1000
            )
            hits[name][1] += blow <= truth <= bhigh
            hits[name][2] += blow == bhigh
    return {name: (h[0] / reps, h[1] / reps, h[2]) for name, h in hits.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    args = parser.parse_args()
    print("| population | tasks | metric | t_cr1 | bootstrap | zero-width bootstrap |")
    print("|---|---:|---|---:|---:|---:|")
    for label, (a, b) in POPULATIONS.items():
        for tasks in (10, 30):
            for name, (rule, boot, zero) in coverage(tasks, a, b, args.reps, seed=tasks).items():
                print(f"| {label} | {tasks} | {name} | {rule:.3f} | {boot:.3f} | {zero} |")


if __name__ == "__main__":
    main()
