"""Simulated coverage of the unpaired difference (the figures in docs/statistics.md).

Two batches on disjoint tasks: a's task success probabilities from Beta(a1, b1), b's from
Beta(a2, b2), a fixed number of attempts a task. For the success rate, pass@K and pass^K the
true difference is known in closed form (Beta moments), so we count how often the 95%
interval of ``compare`` holds it: as shown (``method: "mover"``, Newcombe's square-and-add of
the two sides' own intervals), and Welch's symmetric t on the two CR1 SEs (what unpaired
differences used before the fourteenth round), over the suites where every side has a spread.

Run: ``PYTHONPATH=src .venv/bin/python bench/unpaired_coverage.py [--reps 600]``.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from groundstate.stats import Estimate, TaskCounts, View, compare_counts, t_quantile

# tasks, attempts, a's Beta, b's Beta (equal task counts on both sides)
SETTINGS = (
    (10, 4, (6.0, 1.0), (2.0, 1.5)),
    (30, 4, (6.0, 1.0), (2.0, 1.5)),
    (10, 4, (2.0, 1.5), (0.5, 0.5)),
    (10, 1, (6.0, 1.0), (2.0, 2.0)),
    (8, 4, (30.0, 1.0), (6.0, 1.0)),
)


def _moment(a: float, b: float, j: int) -> float:
    """E[p^j] for p ~ Beta(a, b)."""
    return math.prod((a + i) / (a + b + i) for i in range(j))


def _truths(
    k: int, a: tuple[float, float], b: tuple[float, float]
) -> dict[tuple[str, int | None], float]:
    truth: dict[tuple[str, int | None], float] = {
        ("success_rate", None): _moment(*b, 1) - _moment(*a, 1)
    }
    if k > 1:  # E[1 - (1 - p)^k] = 1 - E[q^k] with q ~ Beta(b, a)
        truth["pass_at_k", k] = _moment(a[1], a[0], k) - _moment(b[1], b[0], k)
        truth["pass_hat_k", k] = _moment(*b, k) - _moment(*a, k)
    return truth


def _side(
    rng: np.random.Generator, prefix: str, tasks: int, k: int, beta: tuple[float, float]
) -> dict[View, list[TaskCounts]]:
    wins = rng.binomial(k, rng.beta(*beta, size=tasks))
    counts = [
        TaskCounts(f"{prefix}{i}", k, int(c), 0, 1.0, (), None, "") for i, c in enumerate(wins)
    ]
    return {"valid": counts, "strict": counts}


def _welch(a: Estimate, b: Estimate) -> tuple[float, float] | None:
    if not (a.se and b.se) or a.df is None or b.df is None:
        return None
    se = math.hypot(a.se, b.se)
    df = (a.se**2 + b.se**2) ** 2 / (a.se**4 / a.df + b.se**4 / b.df)
    d, q = b.estimate - a.estimate, t_quantile(df)
    return max(-1.0, d - q * se), min(1.0, d + q * se)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=600)
    args = parser.parse_args()
    print("| tasks x attempts | a | b | metric | square-and-add | Welch (suites with a spread) |")
    print("|---|---|---|---|---:|---:|")
    for setting, (tasks, k, a, b) in enumerate(SETTINGS):
        rng = np.random.default_rng(setting)
        held = {key: [0, 0, 0] for key in _truths(k, a, b)}  # shown, Welch, Welch's suites
        for _ in range(args.reps):
            found = compare_counts(
                _side(rng, "a", tasks, k, a), _side(rng, "b", tasks, k, b), n_boot=0
            )
            for (metric, kk), truth in _truths(k, a, b).items():
                d = found.find(metric, "valid", kk)
                low, high = d.difference.ci_low, d.difference.ci_high
                held[metric, kk][0] += low is not None and high is not None and low <= truth <= high
                welch = _welch(d.a, d.b)
                if welch is not None:
                    held[metric, kk][1] += welch[0] <= truth <= welch[1]
                    held[metric, kk][2] += 1
        for (metric, kk), (shown, welch_held, welch_suites) in held.items():
            name = metric if kk is None else f"{metric.removesuffix('_k')}_{kk}"
            welch_text = (
                f"{welch_held / welch_suites:.3f} ({welch_suites})" if welch_suites else "-"
            )
            cells = f"{name} | {shown / args.reps:.3f} | {welch_text}"
            print(f"| {tasks} x {k} | Beta{a} | Beta{b} | {cells} |")


if __name__ == "__main__":
    main()
