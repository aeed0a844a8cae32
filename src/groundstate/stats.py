"""Suite statistics over attempt outcomes: pass@k, pass^k, intervals, slices, comparisons.

Design principle 7: repetitions stay nested in tasks. Each value is estimated per
task (tau-bench's unbiased estimators), then averaged with declared task weights;
uncertainty comes from resampling whole tasks with a seeded generator. Nothing
raises a pooled accuracy to the k-th power, which would confuse "every task is 80%
reliable" with "some tasks always fail". Two views sit side by side: ``"valid"``
counts valid attempts only, ``"strict"`` counts invalid ones as failures, so a
reader sees that exclusions did not flatter the score. Pure functions, no I/O.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from groundstate.errors import GroundstateError

View = Literal["valid", "strict"]
VIEWS: tuple[View, ...] = ("valid", "strict")
HORIZON_BUCKETS: tuple[str, ...] = ("1-3", "4-7", "8-12", "13+", "unknown")
_BUCKET_UPPER_BOUNDS: tuple[tuple[int, str], ...] = ((3, "1-3"), (7, "4-7"), (12, "8-12"))


class RevisionMismatch(GroundstateError, ValueError):
    """Two batches scored different revisions of a task, so their difference is not paired."""

    def __init__(self, task_ids: Sequence[str]) -> None:
        self.task_ids = tuple(task_ids)
        super().__init__("task_revision differs between the batches for: " + ", ".join(task_ids))


@dataclass(frozen=True)
class Outcome:
    """What statistics need from one attempt's record."""

    task_id: str
    attempt: int
    success: bool
    valid: bool = True
    """False for environment_failure / grader_failure attempts."""
    terminal_reason: str = "success"
    """E.g. ``"agent_failure/step_limit"``, ``"environment_failure"``."""
    weight: float = 1.0
    """Declared task weight."""
    slice_labels: tuple[str, ...] = ()
    horizon: int | None = None
    """Steps of the task's oracle solution."""
    cost: float = 0.0
    latency: float = 0.0
    """Seconds."""
    task_revision: str = ""
    """Used by :func:`compare` to refuse pairing different task versions."""


@dataclass(frozen=True)
class _Record:
    """Base of the result types: plain frozen dataclasses that become JSON-able dicts."""

    def to_dict(self) -> dict[str, Any]:
        """Nested plain dicts; mapping keys stay Python values (``k`` is an int here,
        a string once passed through JSON)."""
        return asdict(self)


@dataclass(frozen=True)
class TaskCounts(_Record):
    """One task's denominators under one view."""

    task_id: str
    n: int
    """Attempts counted under the view."""
    c: int
    """Successes among them (an invalid attempt never counts as a success)."""
    invalid: int
    weight: float
    labels: tuple[str, ...]
    horizon: int | None
    revision: str


@dataclass(frozen=True)
class Estimate(_Record):
    """A weighted suite value, its 95% cluster-bootstrap interval and its denominators."""

    estimate: float
    ci_low: float
    ci_high: float
    n_tasks: int
    attempts: int
    """Attempts counted over all ``n_tasks`` tasks."""
    min_n: int
    max_n: int
    se: float | None = None
    """Task-clustered standard error (:func:`clustered_se`); None with fewer than two tasks."""


@dataclass(frozen=True)
class SliceSummary(_Record):
    n_tasks: int
    """Tasks in the slice, including those with no counted attempt."""
    excluded_tasks: tuple[str, ...]
    success_rate: Estimate | None
    pass_hat_1: Estimate | None


@dataclass(frozen=True)
class ViewSummary(_Record):
    view: str
    n_tasks: int
    """Tasks with at least one counted attempt."""
    excluded_tasks: tuple[str, ...]
    """Tasks with no counted attempt: they carry no estimate and are left out."""
    kmax: int
    success_rate: Estimate | None
    pass_at_k: dict[int, Estimate]
    pass_hat_k: dict[int, Estimate]
    by_label: dict[str, SliceSummary]
    by_horizon: dict[str, SliceSummary]


@dataclass(frozen=True)
class Distribution(_Record):
    total: float
    mean: float
    median: float
    p90: float


@dataclass(frozen=True)
class InvalidStats(_Record):
    count: int
    rate: float
    """Invalid attempts over all attempts."""
    by_reason: dict[str, int]
    """Keyed by the part of the terminal reason before ``/``."""
    rate_by_reason: dict[str, float]


@dataclass(frozen=True)
class Summary(_Record):
    n_tasks: int
    attempts: int
    views: dict[str, ViewSummary]
    terminal_reasons: dict[str, int]
    invalid: InvalidStats
    cost: Distribution
    latency: Distribution
    cost_per_success: float | None
    seed: int
    n_boot: int


@dataclass(frozen=True)
class TaskChange(_Record):
    task_id: str
    a_rate: float
    b_rate: float
    difference: float
    """``b_rate - a_rate``."""
    a_n: int
    b_n: int
    changed: bool


@dataclass(frozen=True)
class Comparison(_Record):
    paired_tasks: tuple[str, ...]
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]
    excluded_tasks: tuple[str, ...]
    """In both batches but without a valid attempt on one side."""
    a_success_rate: Estimate
    b_success_rate: Estimate
    success_rate_difference: Estimate
    pass_hat_1_difference: Estimate
    per_task: tuple[TaskChange, ...]
    changed: tuple[TaskChange, ...]


# --- per-task estimators -------------------------------------------------------------------


def _check_nck(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"k={k} must lie in 1..n={n}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of P(at least one of k attempts succeeds): 1 - C(n-c,k)/C(n,k).

    Binomials are exact integers and the ratio a Fraction, so n in the tens of
    thousands neither overflows nor cancels; only the final value is rounded.
    """
    _check_nck(n, c, k)
    return float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of P(all k attempts succeed), tau-bench's pass^k: C(c,k)/C(n,k)."""
    _check_nck(n, c, k)
    return float(Fraction(math.comb(c, k), math.comb(n, k)))


def task_counts(outcomes: Iterable[Outcome], view: View = "valid") -> list[TaskCounts]:
    """Count attempts and successes per task under one view, sorted by task id.

    Sorting makes every downstream resample independent of record order. In the
    strict view n is every record of the task, so an invalid attempt and its retry
    (if stored as a separate outcome) both count.
    """
    if view not in VIEWS:
        raise ValueError(f"unknown view {view!r}; expected one of {VIEWS}")
    grouped: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        grouped.setdefault(outcome.task_id, []).append(outcome)
    return [_count_task(grouped[task_id], view) for task_id in sorted(grouped)]


def _count_task(attempts: list[Outcome], view: View) -> TaskCounts:
    # Attributes declared by the task must agree across its attempts; disagreement
    # means records of different task definitions were mixed into one batch.
    first = attempts[0]
    if not (math.isfinite(first.weight) and first.weight > 0):
        raise ValueError(f"task {first.task_id!r}: weight must be positive, got {first.weight}")
    declared = {(o.weight, o.slice_labels, o.horizon, o.task_revision) for o in attempts}
    if len(declared) > 1:
        raise ValueError(
            f"task {first.task_id!r}: attempts disagree on weight, labels, horizon or revision"
        )
    invalid = sum(not o.valid for o in attempts)
    successes = sum(o.success and o.valid for o in attempts)
    n = len(attempts) - invalid if view == "valid" else len(attempts)
    return TaskCounts(
        first.task_id, n, successes, invalid, first.weight,
        first.slice_labels, first.horizon, first.task_revision,
    )  # fmt: skip


# --- suite values ---------------------------------------------------------------------------


def supported_k(counts: Iterable[TaskCounts]) -> int:
    """Largest k every counted task supports (min n over tasks with n > 0); 0 if none."""
    return min((t.n for t in counts if t.n > 0), default=0)


def clustered_se(values: Sequence[float], weights: Sequence[float]) -> float | None:
    """Task-clustered standard error of the weighted mean of per-task values.

        SE = sqrt( sum_i w_i^2 (p_i - pbar)^2 ) / sum_i w_i * sqrt(T / (T - 1))

    with p_i task i's value, w_i its weight, pbar the weighted mean and T the
    number of tasks: the cluster-robust (sandwich) variance with tasks as clusters,
    plus the usual small-sample correction. With equal weights it is the standard
    deviation of task values over sqrt(T). Attempts inside a task share its
    difficulty, so treating them as independent would understate the error.
    None when T < 2: one task says nothing about spread between tasks.
    """
    p, w = np.asarray(values, dtype=np.float64), np.asarray(weights, dtype=np.float64)
    tasks = len(p)
    if tasks < 2:
        return None
    pbar = _weighted_mean(p, w)
    spread = math.sqrt(float(np.sum(w**2 * (p - pbar) ** 2)))
    return spread / float(np.sum(w)) * math.sqrt(tasks / (tasks - 1))


def _weighted_mean(values: npt.NDArray[np.float64], weights: npt.NDArray[np.float64]) -> float:
    return float(np.sum(weights * values) / np.sum(weights))


def bootstrap_interval(
    values: Sequence[float], weights: Sequence[float], *, seed: int = 0, n_boot: int = 2000
) -> tuple[float, float]:
    """Percentile 95% interval of the weighted mean when whole tasks are resampled.

    Tasks, not attempts, are drawn: attempts stay nested in their task. The
    generator is seeded, so the same per-task values give the same interval.
    """
    if n_boot < 1 or not values:
        raise ValueError(f"need at least one task value and n_boot >= 1, got n_boot={n_boot}")
    p, w = np.asarray(values, dtype=np.float64), np.asarray(weights, dtype=np.float64)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(p), size=(n_boot, len(p)))
    means = np.sum(w[draws] * p[draws], axis=1) / np.sum(w[draws], axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def _estimate(
    values: list[float], weights: list[float], ns: list[int], seed: int, n_boot: int
) -> Estimate:
    low, high = bootstrap_interval(values, weights, seed=seed, n_boot=n_boot)
    mean = _weighted_mean(np.asarray(values), np.asarray(weights))
    se = clustered_se(values, weights)
    return Estimate(mean, low, high, len(values), sum(ns), min(ns), max(ns), se)


def _suite(
    counts: Iterable[TaskCounts], per_task: Callable[[TaskCounts], float], seed: int, n_boot: int
) -> Estimate:
    """Weighted mean of per-task values; tasks without a counted attempt carry no value."""
    used = [t for t in counts if t.n > 0]
    if not used:
        raise ValueError("no task has a counted attempt")
    values = [per_task(t) for t in used]
    return _estimate(values, [t.weight for t in used], [t.n for t in used], seed, n_boot)


def _checked(counts: Iterable[TaskCounts], k: int) -> list[TaskCounts]:
    used = list(counts)
    kmax = supported_k(used)
    if not 1 <= k <= kmax:
        raise ValueError(f"k={k} outside 1..{kmax}: every task needs at least k counted attempts")
    return used


def suite_success_rate(
    counts: Iterable[TaskCounts], *, seed: int = 0, n_boot: int = 2000
) -> Estimate:
    """Weighted mean of per-task success rates c/n (not pooled attempts: a task with
    more attempts must not weigh more)."""
    return _suite(counts, lambda t: t.c / t.n, seed, n_boot)


def suite_pass_at_k(
    counts: Iterable[TaskCounts], k: int, *, seed: int = 0, n_boot: int = 2000
) -> Estimate:
    """Weighted mean of per-task pass@k; k may not exceed any counted task's n."""
    return _suite(_checked(counts, k), lambda t: pass_at_k(t.n, t.c, k), seed, n_boot)


def suite_pass_hat_k(
    counts: Iterable[TaskCounts], k: int, *, seed: int = 0, n_boot: int = 2000
) -> Estimate:
    """Weighted mean of per-task pass^k; k may not exceed any counted task's n."""
    return _suite(_checked(counts, k), lambda t: pass_hat_k(t.n, t.c, k), seed, n_boot)


# --- summary --------------------------------------------------------------------------------


def horizon_bucket(horizon: int | None) -> str:
    """Length slice of a task, by its oracle solution's step count."""
    if horizon is None:
        return "unknown"
    if horizon < 1:
        raise ValueError(f"horizon must be at least one step, got {horizon}")
    return next((name for upper, name in _BUCKET_UPPER_BOUNDS if horizon <= upper), "13+")


def summarize(
    outcomes: Iterable[Outcome], *, seed: int = 0, n_boot: int = 2000, max_k: int | None = None
) -> Summary:
    """Everything a report shows about one batch, in both views.

    pass@k and pass^k run for k = 1 .. min(max_k, smallest counted n) in each view.
    """
    records = list(outcomes)
    if not records:
        raise ValueError("summarize needs at least one outcome")
    if max_k is not None and max_k < 1:
        raise ValueError(f"max_k must be at least 1, got {max_k}")
    views: dict[str, ViewSummary] = {
        v: _summarize_view(v, task_counts(records, v), seed, n_boot, max_k) for v in VIEWS
    }
    return Summary(
        n_tasks=len({o.task_id for o in records}),
        attempts=len(records),
        views=views,
        terminal_reasons=dict(sorted(Counter(o.terminal_reason for o in records).items())),
        invalid=_invalid_stats(records),
        cost=_distribution([o.cost for o in records]),
        latency=_distribution([o.latency for o in records]),
        cost_per_success=_cost_per_success(records),
        seed=seed,
        n_boot=n_boot,
    )


def _summarize_view(
    view: View, counts: list[TaskCounts], seed: int, n_boot: int, max_k: int | None
) -> ViewSummary:
    kmax = supported_k(counts) if max_k is None else min(max_k, supported_k(counts))
    ks = range(1, kmax + 1)
    return ViewSummary(
        view=view,
        n_tasks=sum(t.n > 0 for t in counts),
        excluded_tasks=tuple(t.task_id for t in counts if t.n == 0),
        kmax=kmax,
        success_rate=suite_success_rate(counts, seed=seed, n_boot=n_boot) if kmax else None,
        pass_at_k={k: suite_pass_at_k(counts, k, seed=seed, n_boot=n_boot) for k in ks},
        pass_hat_k={k: suite_pass_hat_k(counts, k, seed=seed, n_boot=n_boot) for k in ks},
        by_label=_slices(counts, lambda t: t.labels, str, seed, n_boot),
        by_horizon=_slices(
            counts, lambda t: (horizon_bucket(t.horizon),), HORIZON_BUCKETS.index, seed, n_boot
        ),
    )


def _slices(
    counts: list[TaskCounts],
    keys_of: Callable[[TaskCounts], Iterable[str]],
    order: Callable[[str], Any],
    seed: int,
    n_boot: int,
) -> dict[str, SliceSummary]:
    """Per-slice values, so many short easy tasks cannot hide collapse on long ones."""
    members: dict[str, list[TaskCounts]] = {}
    for task in counts:
        for key in keys_of(task):
            members.setdefault(key, []).append(task)
    return {key: _slice(members[key], seed, n_boot) for key in sorted(members, key=order)}


def _slice(members: list[TaskCounts], seed: int, n_boot: int) -> SliceSummary:
    counted = supported_k(members) > 0
    return SliceSummary(
        n_tasks=len(members),
        excluded_tasks=tuple(t.task_id for t in members if t.n == 0),
        success_rate=suite_success_rate(members, seed=seed, n_boot=n_boot) if counted else None,
        pass_hat_1=suite_pass_hat_k(members, 1, seed=seed, n_boot=n_boot) if counted else None,
    )


def _invalid_stats(records: list[Outcome]) -> InvalidStats:
    reasons = Counter(o.terminal_reason.split("/", 1)[0] for o in records if not o.valid)
    by_reason = dict(sorted(reasons.items()))
    count, total = sum(by_reason.values()), len(records)
    rates = {reason: c / total for reason, c in by_reason.items()}
    return InvalidStats(count, count / total, by_reason, rates)


def _distribution(values: list[float]) -> Distribution:
    """Per-attempt spread; p90 uses numpy's linear interpolation between order statistics."""
    a = np.asarray(values, dtype=np.float64)
    total, mean, median, p90 = np.sum(a), np.mean(a), np.median(a), np.percentile(a, 90)
    return Distribution(float(total), float(mean), float(median), float(p90))


def _cost_per_success(records: list[Outcome]) -> float | None:
    """Total cost, invalid attempts included (they were paid for), per valid success."""
    successes = sum(o.success and o.valid for o in records)
    return math.fsum(o.cost for o in records) / successes if successes else None


# --- paired comparison ----------------------------------------------------------------------


def compare(
    a_outcomes: Iterable[Outcome],
    b_outcomes: Iterable[Outcome],
    *,
    seed: int = 0,
    n_boot: int = 2000,
) -> Comparison:
    """Paired difference b - a over the tasks both batches ran (valid view).

    Pairing removes between-task difficulty from the difference; the interval
    resamples tasks once and applies the same draw to both sides.
    """
    a = {t.task_id: t for t in task_counts(a_outcomes, "valid")}
    b = {t.task_id: t for t in task_counts(b_outcomes, "valid")}
    shared = sorted(a.keys() & b.keys())
    _check_pairable(a, b, shared)
    paired = [i for i in shared if a[i].n > 0 and b[i].n > 0]
    if not paired:
        raise ValueError("no task has valid attempts in both batches")
    a_side, b_side = [a[i] for i in paired], [b[i] for i in paired]
    per_task = tuple(map(_change, a_side, b_side))
    rate_difference, hat_1_difference = _differences(a_side, b_side, seed, n_boot)
    return Comparison(
        paired_tasks=tuple(paired),
        only_in_a=tuple(sorted(a.keys() - b.keys())),
        only_in_b=tuple(sorted(b.keys() - a.keys())),
        excluded_tasks=tuple(i for i in shared if a[i].n == 0 or b[i].n == 0),
        a_success_rate=suite_success_rate(a_side, seed=seed, n_boot=n_boot),
        b_success_rate=suite_success_rate(b_side, seed=seed, n_boot=n_boot),
        success_rate_difference=rate_difference,
        pass_hat_1_difference=hat_1_difference,
        per_task=per_task,
        changed=tuple(c for c in per_task if c.changed),
    )


def _check_pairable(a: dict[str, TaskCounts], b: dict[str, TaskCounts], shared: list[str]) -> None:
    """A paired difference is only meaningful on the same task version and weight."""
    revised = [
        i for i in shared if a[i].revision and b[i].revision and a[i].revision != b[i].revision
    ]
    if revised:
        raise RevisionMismatch(revised)
    reweighted = [i for i in shared if a[i].weight != b[i].weight]
    if reweighted:
        raise ValueError("task weight differs between the batches for: " + ", ".join(reweighted))


def _change(a: TaskCounts, b: TaskCounts) -> TaskChange:
    a_rate, b_rate = a.c / a.n, b.c / b.n
    changed = a.c * b.n != b.c * a.n  # exact: 1/2 and 2/4 are the same rate
    return TaskChange(a.task_id, a_rate, b_rate, b_rate - a_rate, a.n, b.n, changed)


def _differences(
    a_side: list[TaskCounts], b_side: list[TaskCounts], seed: int, n_boot: int
) -> tuple[Estimate, Estimate]:
    """Weighted mean b - a of success rate and of pass^1 (equal by construction, both kept
    so a report can show either). Resampling the task differences draws the same tasks
    for both sides, which is what makes the interval paired."""
    weights, ns = [t.weight for t in a_side], [t.n for t in a_side + b_side]
    rates = [y.c / y.n - x.c / x.n for x, y in zip(a_side, b_side, strict=True)]
    hat_1 = [
        pass_hat_k(y.n, y.c, 1) - pass_hat_k(x.n, x.c, 1)
        for x, y in zip(a_side, b_side, strict=True)
    ]
    return _estimate(rates, weights, ns, seed, n_boot), _estimate(hat_1, weights, ns, seed, n_boot)
