"""Coverage of the level rule where task values are skewed: pass@k with k well below n.

pass@10 of 20 attempts puts most tasks near 1 and a few far below; a suite of few tasks
often draws none of the few, so its mean sits above the truth with a small spread between
tasks, and the interval misses. Tasks' success probabilities from Beta(2, 1.5), 20 attempts a
task (truth 1 - B(a, b + k) / B(a, b)); the figures in docs/statistics.md ("Skewed task
values"): the rule on pass@k's values alone, and as reported, widened along the curve (the
lower end of pass@k the lowest at k or any larger k up to 20; since the fifteenth round).

With ``--candidates`` it measures, beside the rule, the intervals one might switch to: a
studentized cluster bootstrap (bootstrap-t, 999 resamples, clipped to [0, 1]) and a betting
interval (Waudby-Smith and Ramdas 2023, hedged capital with predictable plug-in bets capped
at 3/4 of the range; valid at any number of tasks for any values in [0, 1]), as coverage
and mean width, the success rate (pass@1) included to show what each costs where the rule
already covers.

Run: ``PYTHONPATH=src .venv/bin/python bench/skewed_coverage.py [--reps 600] [--candidates]``.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import numpy.typing as npt
from scipy import special

from groundstate.stats import TaskCounts, interval_rule, pass_curves, summarize_views

A, B, ATTEMPTS = 2.0, 1.5, 20
ALPHA = 0.05
Values = npt.NDArray[np.float64]


def bootstrap_t(
    values: Values, rng: np.random.Generator, resamples: int = 999
) -> tuple[float, float]:
    """The studentized cluster bootstrap: tasks resampled, each resample's t quantiles."""
    tasks = len(values)
    mean, se = float(values.mean()), float(values.std(ddof=1)) / math.sqrt(tasks)
    if se == 0:
        return mean, mean
    drawn = values[rng.integers(0, tasks, (resamples, tasks))]
    spread = drawn.std(axis=1, ddof=1) / math.sqrt(tasks)
    keep = spread > 0
    t = (drawn.mean(axis=1)[keep] - mean) / spread[keep]
    low, high = np.percentile(t, [100 * (1 - ALPHA / 2), 100 * ALPHA / 2])
    return max(0.0, mean - low * se), min(1.0, mean - high * se)


def betting_lower(values: Values, cap: float = 0.75) -> float:
    """The lower end of the hedged-capital betting interval (one side at alpha / 2): the
    smallest mean m at which betting on values above m, with predictable plug-in bets at
    most *cap* / m, does not multiply the wealth by 2 / alpha."""
    tasks = len(values)
    seen = np.arange(1, tasks + 1)
    mean = (0.5 + np.cumsum(values)) / (seen + 1)
    spread = (0.25 + np.cumsum((values - mean) ** 2)) / (seen + 1)
    before = np.concatenate([[0.25], spread[:-1]])
    bets = np.sqrt(2 * math.log(2 / ALPHA) / (tasks * before))

    def rejected(m: float) -> bool:
        return float(np.sum(np.log1p(np.minimum(bets, cap / m) * (values - m)))) >= math.log(
            2 / ALPHA
        )

    low, high = 1e-12, max(float(values.mean()), 1e-12)
    if rejected(high):
        return high
    for _ in range(50):
        middle = (low + high) / 2
        low, high = (middle, high) if rejected(middle) else (low, middle)
    return low


def betting(values: Values) -> tuple[float, float]:
    return betting_lower(values), 1 - betting_lower(1 - values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=600)
    parser.add_argument("--candidates", action="store_true")
    args = parser.parse_args()
    if args.candidates:
        print("| tasks | metric | truth | rule | bootstrap-t | betting |")
        print("|---:|---|---:|---:|---:|---:|")
    else:
        print("| tasks | metric | truth | rule alone | above the truth | as reported | above |")
        print("|---:|---|---:|---:|---:|---:|---:|")
        # each coverage cell is followed by the interval's mean width in parentheses
    for tasks in (10, 30, 100):
        for k in (1, 3, 10) if args.candidates else (3, 10):
            rng = np.random.default_rng(tasks * 100 + k)
            truth = 1 - float(special.beta(A, B + k) / special.beta(A, B))
            held = above = shown_held = shown_above = 0
            width = shown_width = 0.0
            found = np.zeros((3, 2))  # rule, bootstrap-t, betting: held, width
            for _ in range(args.reps):
                wins = rng.binomial(ATTEMPTS, rng.beta(A, B, tasks))
                at, _ = pass_curves(np.full(tasks, ATTEMPTS), wins, k)
                values = at[:, k - 1]
                rule = interval_rule(values, np.ones(tasks))
                assert rule.low is not None and rule.high is not None
                held += rule.low <= truth <= rule.high
                above += rule.low > truth
                width += rule.high - rule.low
                if not args.candidates:
                    counts = [TaskCounts(f"t{i:03d}", ATTEMPTS, int(c), 0, 1.0, (), None, "")
                              for i, c in enumerate(wins)]  # fmt: skip
                    view = summarize_views({"valid": counts, "strict": []}, n_boot=0)["valid"]
                    shown = view.pass_at_k[k]
                    assert shown.ci_low is not None and shown.ci_high is not None
                    shown_held += shown.ci_low <= truth <= shown.ci_high
                    shown_above += shown.ci_low > truth
                    shown_width += shown.ci_high - shown.ci_low
                if args.candidates:
                    ends = [(rule.low, rule.high), bootstrap_t(values, rng), betting(values)]
                    for row, (low, high) in enumerate(ends):
                        found[row] += (low <= truth <= high, high - low)
            if args.candidates:
                cells = " | ".join(f"{h / args.reps:.3f} ({w / args.reps:.3f})" for h, w in found)
                print(f"| {tasks} | pass@{k} | {truth:.4f} | {cells} |", flush=True)
            else:
                cells = (
                    f"{held / args.reps:.3f} ({width / args.reps:.3f}) | {above} | "
                    f"{shown_held / args.reps:.3f} ({shown_width / args.reps:.3f})"
                )
                print(f"| {tasks} | pass@{k} | {truth:.4f} | {cells} | {shown_above} |")


if __name__ == "__main__":
    main()
