"""CPU of `compare` from per-task counts, paired and unpaired (prints figures; not a test).

Two batches of T tasks x N attempts (task success probabilities Beta(2, 1.5) and Beta(6, 1),
seeded): the paired comparison shares every task, the unpaired one shares none, so each
metric's difference is Newcombe's square-and-add and its p-value a root search
(docs/statistics.md). Counting attempts into tasks is left out (it is the same for both);
the bootstrap is off (``n_boot=0``) so the figures are the intervals and tests alone.

Run: ``.venv/bin/python bench/compare_cost.py [--tasks 200] [--attempts 20] [--reps 10]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from groundstate.stats import Outcome, compare_counts, task_counts
from groundstate.stats.outcomes import VIEWS


def _batch(rng: np.random.Generator, prefix: str, shape: tuple[float, float], tasks: int,
           attempts: int) -> list[Outcome]:  # fmt: skip
    out = []
    for t in range(tasks):
        p = rng.beta(*shape)
        out += [Outcome(f"{prefix}{t}", j + 1, bool(rng.random() < p)) for j in range(attempts)]
    return out


def cpu(a: list[Outcome], b: list[Outcome], reps: int) -> float:
    counts_a = {v: task_counts(a, v) for v in VIEWS}
    counts_b = {v: task_counts(b, v) for v in VIEWS}
    compare_counts(counts_a, counts_b, n_boot=0)  # warm caches
    start = time.process_time()
    for _ in range(reps):
        compare_counts(counts_a, counts_b, n_boot=0)
    return (time.process_time() - start) / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--attempts", type=int, default=20)
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(19)
    a = _batch(rng, "t", (2.0, 1.5), args.tasks, args.attempts)
    b = _batch(rng, "t", (6.0, 1.0), args.tasks, args.attempts)
    other = [Outcome("u" + o.task_id, o.attempt, o.success) for o in b]
    print(f"{args.tasks} tasks x {args.attempts} attempts a side, CPU per comparison:")
    print(f"  paired:   {cpu(a, b, args.reps):.3f} s")
    print(f"  unpaired: {cpu(a, other, args.reps):.3f} s")


if __name__ == "__main__":
    main()
