"""Simulated coverage of a partial score's interval near the ends of its range (the table in
docs/statistics.md, seventeenth round).

A suite of T tasks is drawn from a population of task scores; each task's partial score is
the mean of ATTEMPTS attempt scores drawn around the task's score (Beta with the task score
as its mean and concentration 50, so an attempt at a task of 1 scores 1). The truth is the
population mean. For each population and T, the share of suites whose 95% interval holds
the truth, and the mean width, under:

* ``rule alone``: the Agresti-Coull rule on the task values (the exact bound where every
  task agrees), as through the sixteenth round;
* ``as reported``: the rule with each end reaching at least the exact bound of every task at
  the highest (lower end) or lowest (upper end) task value (:func:`near_agreement`).

Run: ``.venv/bin/python bench/partial_coverage.py [--reps 1000]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

from groundstate.stats import interval_rule
from groundstate.stats.intervals import agresti_coull, exact_reach, t_quantile

ATTEMPTS = 4
Draw = Callable[[np.random.Generator, int], np.ndarray]


def _mixture(rng: np.random.Generator, size: int) -> np.ndarray:
    """90% of tasks near 1 (Beta(50, 1)), 10% anywhere below 0.5."""
    low = rng.random(size) < 0.1
    return np.where(low, rng.uniform(0.0, 0.5, size), rng.beta(50.0, 1.0, size))


def _at_one(rng: np.random.Generator, size: int) -> np.ndarray:
    """85% of tasks at 1 exactly, 15% at 0.6."""
    return np.where(rng.random(size) < 0.85, 1.0, 0.6)


POPULATIONS: dict[str, tuple[Draw, float]] = {
    "Beta(20, 1)": (lambda rng, size: rng.beta(20.0, 1.0, size), 20 / 21),
    "0.9 Beta(50, 1) + 0.1 U(0, 0.5)": (_mixture, 0.9 * 50 / 51 + 0.1 * 0.25),
    "0.85 at 1 + 0.15 at 0.6": (_at_one, 0.85 + 0.15 * 0.6),
    "Beta(2, 2)": (lambda rng, size: rng.beta(2.0, 2.0, size), 0.5),
}


def task_values(rng: np.random.Generator, draw: Draw, tasks: int) -> np.ndarray:
    score = draw(rng, tasks)
    inner = (score > 0) & (score < 1)
    attempts = np.repeat(score[:, None], ATTEMPTS, axis=1)
    s = np.clip(score[inner], 1e-9, 1 - 1e-9)[:, None]
    attempts[inner] = rng.beta(50 * s, 50 * (1 - s), (int(inner.sum()), ATTEMPTS))
    return np.asarray(attempts.mean(axis=1), dtype=np.float64)


def rule_alone(values: np.ndarray) -> tuple[float, float]:
    """The sixteenth round's rule: Agresti-Coull, or the exact bound where every task agrees."""
    weights = np.ones(len(values))
    if np.ptp(values) <= 1e-12:
        found = interval_rule(values, weights)
        assert found.low is not None and found.high is not None
        return found.low, found.high
    se = float(np.std(values, ddof=1) / np.sqrt(len(values)))
    return agresti_coull(float(np.mean(values)), se, t_quantile(len(values) - 1))


def as_reported(values: np.ndarray) -> tuple[float, float]:
    found = interval_rule(values, np.ones(len(values)))
    assert found.low is not None and found.high is not None
    return found.low, found.high


def coverage(
    draw: Draw, truth: float, tasks: int, reps: int, seed: int
) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(seed)
    hits = {"rule alone": 0, "as reported": 0}
    widths = {name: 0.0 for name in hits}
    _ = exact_reach(np.ones(tasks))
    for _ in range(reps):
        values = task_values(rng, draw, tasks)
        for name, rule in (("rule alone", rule_alone), ("as reported", as_reported)):
            low, high = rule(values)
            hits[name] += low <= truth <= high
            widths[name] += high - low
    return {name: (hits[name] / reps, widths[name] / reps) for name in hits}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args()
    print("| population | tasks | truth | rule alone | as reported |")
    print("|---|---:|---:|---:|---:|")
    for name, (draw, truth) in POPULATIONS.items():
        for tasks in (10, 30, 100):
            found = coverage(draw, truth, tasks, args.reps, args.seed)
            cells = " | ".join(f"{c:.3f} ({w:.3f})" for c, w in found.values())
            print(f"| {name} | {tasks} | {truth:.4f} | {cells} |")


if __name__ == "__main__":
    main()
