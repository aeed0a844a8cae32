"""From attempts to per-task counts, and the per-task estimators of pass@k and pass^k."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

View = Literal["valid", "strict"]
VIEWS: tuple[View, ...] = ("valid", "strict")
HORIZON_BUCKETS: tuple[str, ...] = ("1-3", "4-7", "8-12", "13+", "unknown")
_BUCKET_UPPER_BOUNDS: tuple[tuple[int, str], ...] = ((3, "1-3"), (7, "4-7"), (12, "8-12"))

FloatArray = npt.NDArray[np.float64]


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
    """Empty when the task is unversioned (e.g. an import without revisions)."""
    partial_score: float | None = None
    """The rubric's partial credit in [0, 1], if the task has a rubric."""


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
    partial: float | None = None
    """Mean partial score over the counted attempts that carry one (an invalid attempt
    scores 0 in the strict view); None when none does."""


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


def pass_curves(n: npt.ArrayLike, c: npt.ArrayLike, kmax: int) -> tuple[FloatArray, FloatArray]:
    """pass@k and pass^k of many tasks for k = 1..kmax at once, as (tasks, kmax) arrays.

    C(c,k)/C(n,k) is the running product of (c-j)/(n-j) for j < k, so the whole curve
    costs one cumulative product instead of a binomial pair per k; each value carries
    at most about k rounding errors (checked against the exact rationals in the tests).
    A task with fewer than k attempts has no value there: NaN.
    """
    ns = np.asarray(n, dtype=np.float64)[:, None]
    cs = np.asarray(c, dtype=np.float64)[:, None]
    j = np.arange(max(kmax, 0), dtype=np.float64)[None, :]
    denominator = ns - j
    supported = denominator > 0
    safe = np.where(supported, denominator, 1.0)
    hat = np.cumprod(np.clip(cs - j, 0.0, None) / safe, axis=1)
    none = np.cumprod(np.clip(ns - cs - j, 0.0, None) / safe, axis=1)
    return np.where(supported, 1.0 - none, np.nan), np.where(supported, hat, np.nan)


# --- counting -------------------------------------------------------------------------------


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
        first.slice_labels, first.horizon, first.task_revision, _partial(attempts, view),
    )  # fmt: skip


def _partial(attempts: list[Outcome], view: View) -> float | None:
    scores = [
        o.partial_score if o.valid else 0.0
        for o in attempts
        if (o.valid and o.partial_score is not None) or (not o.valid and view == "strict")
    ]
    if not any(o.valid and o.partial_score is not None for o in attempts):
        return None
    return math.fsum(s for s in scores if s is not None) / len(scores)


def supported_k(counts: Iterable[TaskCounts]) -> int:
    """Largest k every counted task supports (min n over tasks with n > 0); 0 if none."""
    return min((t.n for t in counts if t.n > 0), default=0)


def horizon_bucket(horizon: int | None) -> str:
    """Length slice of a task, by its oracle solution's step count."""
    if horizon is None:
        return "unknown"
    if horizon < 1:
        raise ValueError(f"horizon must be at least one step, got {horizon}")
    return next((name for upper, name in _BUCKET_UPPER_BOUNDS if horizon <= upper), "13+")
