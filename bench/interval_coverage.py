"""Simulated coverage of the interval rule (prints the table in docs/statistics.md).

Suites of T tasks are drawn from a population of task success probabilities p ~ Beta(a, b);
each task gets four attempts. For each metric the true population value is known in closed
form (Beta moments), so we count how often the 95% interval holds it, under:

* ``rule``: the rule groundstate uses (levels: Agresti-Coull on the CR1 effective number of
  trials with a t quantile on T-1 df; differences: the t interval on the CR1 SE, each end
  reaching at least the exact bound of every task at the highest or lowest difference since
  the nineteenth round; n/a below 5 tasks, exact bounds where every task agrees);
* ``t``: the symmetric t interval on the CR1 SE for levels too (what the rule avoids);
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

from groundstate.stats import Interval, bootstrap_interval, interval_rule
from groundstate.stats.intervals import t_quantile

ATTEMPTS = 4
POPULATIONS = {"Beta(2, 1.5)": (2.0, 1.5), "Beta(0.5, 0.5)": (0.5, 0.5), "Beta(6, 1)": (6.0, 1.0)}
Values = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _moment(a: float, b: float, s: float) -> float:
    return float(special.beta(a + s, b) / special.beta(a, b))


def _metrics(a: float, b: float) -> dict[str, tuple[float, Values, bool]]:
    """name -> (true value, per-task values from (c_a, c_b), whether it is a difference)."""
    return {
        "success rate": (_moment(a, b, 1), lambda c, _: c / ATTEMPTS, False),
        "pass^4": (_moment(a, b, 4), lambda c, _: (c == ATTEMPTS).astype(float), False),
        "pass@4": (
            1 - float(special.beta(a, b + 4) / special.beta(a, b)),
            lambda c, _: (c > 0).astype(float),
            False,
        ),
        "paired difference": (
            _moment(a, b, 0.7) - _moment(a, b, 1),
            lambda c, cb: (cb - c) / ATTEMPTS,
            True,
        ),
    }


def _holds(rule: Interval, truth: float) -> bool:
    low = -math.inf if rule.low is None else rule.low
    high = math.inf if rule.high is None else rule.high
    return low <= truth <= high


def _symmetric_t(values: np.ndarray, weights: np.ndarray) -> Interval:
    """The symmetric t interval on the CR1 SE, clipped to [0, 1] (the rule's exact bound
    where every task agrees; n/a below 5 tasks). The difference rule no longer serves: since
    the nineteenth round its ends reach the exact bound of every task at one end."""
    rule = interval_rule(values, weights)
    if rule.method != "agresti_coull_t_cr1" or rule.se is None or rule.df is None:
        return rule
    mean = float(np.average(values, weights=weights))
    q = t_quantile(rule.df)
    low, high = max(0.0, mean - q * rule.se), min(1.0, mean + q * rule.se)
    return Interval(low, high, rule.se, rule.df, "t_cr1", "")


def coverage(tasks: int, a: float, b: float, reps: int, seed: int) -> dict[str, list[float]]:
    """name -> [rule, symmetric t, bootstrap coverage, zero-width bootstrap intervals]."""
    rng = np.random.default_rng(seed)
    metrics = _metrics(a, b)
    hits = {name: [0, 0, 0, 0] for name in metrics}
    weights = np.ones(tasks)
    for rep in range(reps):
        p = rng.beta(a, b, tasks)
        c, cb = rng.binomial(ATTEMPTS, p), rng.binomial(ATTEMPTS, p**0.7)
        for name, (truth, values_of, difference) in metrics.items():
            values = values_of(c, cb).astype(np.float64)
            hits[name][0] += _holds(interval_rule(values, weights, difference=difference), truth)
            hits[name][1] += difference or _holds(_symmetric_t(values, weights), truth)
            boot = bootstrap_interval(values.tolist(), weights.tolist(), seed=rep, n_boot=1000)
            hits[name][2] += boot[0] <= truth <= boot[1]
            hits[name][3] += boot[0] == boot[1]
    return {name: [h[0] / reps, h[1] / reps, h[2] / reps, h[3]] for name, h in hits.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    args = parser.parse_args()
    print("| population | tasks | metric | rule | symmetric t | bootstrap | zero-width bootstrap |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for label, (a, b) in POPULATIONS.items():
        for tasks in (10, 30):
            for name, (rule, t, boot, zero) in coverage(tasks, a, b, args.reps, tasks).items():
                shown = "(same)" if name == "paired difference" else f"{t:.3f}"
                cells = f"{rule:.3f} | {shown} | {boot:.3f} | {zero:.0f}"
                print(f"| {label} | {tasks} | {name} | {cells} |")


if __name__ == "__main__":
    main()
