"""Coverage of the level rule where task values are skewed: pass@k with k well below n.

pass@10 of 20 attempts puts most tasks near 1 and a few far below; a suite of few tasks
often draws none of the few, so its mean sits above the truth with a small spread between
tasks, and the interval misses. Tasks' success probabilities from Beta(2, 1.5), 20 attempts a
task (truth 1 - B(a, b + k) / B(a, b)); the figures in docs/statistics.md ("Design limit").

Run: ``PYTHONPATH=src .venv/bin/python bench/skewed_coverage.py [--reps 600]``.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import special

from groundstate.stats import interval_rule, pass_curves

A, B, ATTEMPTS = 2.0, 1.5, 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=600)
    args = parser.parse_args()
    print("| tasks | metric | truth | coverage | interval above the truth |")
    print("|---:|---|---:|---:|---:|")
    for tasks in (10, 30, 100):
        for k in (3, 10):
            rng = np.random.default_rng(tasks * 100 + k)
            truth = 1 - float(special.beta(A, B + k) / special.beta(A, B))
            held = above = 0
            for _ in range(args.reps):
                wins = rng.binomial(ATTEMPTS, rng.beta(A, B, tasks))
                at, _ = pass_curves(np.full(tasks, ATTEMPTS), wins, k)
                rule = interval_rule(at[:, k - 1], np.ones(tasks))
                assert rule.low is not None and rule.high is not None
                held += rule.low <= truth <= rule.high
                above += rule.low > truth
            print(f"| {tasks} | pass@{k} | {truth:.4f} | {held / args.reps:.3f} | {above} |")


if __name__ == "__main__":
    main()
