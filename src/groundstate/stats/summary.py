"""One batch's numbers: suite values of both views, k limits, slices, reasons, cost."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from groundstate.stats.intervals import (
    AC_T_CR1,
    BOOTSTRAP_METHOD,
    CONFIDENCE,
    MIN_TASKS,
    Estimate,
    bootstrap_blocks,
    bootstrap_ks,
    check_draws,
    coherent_curve,
    exact_mean,
    make_estimate,
    make_estimates,
    one_value,
    printed_exactly,
)
from groundstate.stats.outcomes import (
    HORIZON_BUCKETS,
    VIEWS,
    FloatArray,
    Outcome,
    TaskCounts,
    View,
    _Record,
    check_whole,
    horizon_bucket,
    pass_curves,
    supported_k,
    task_counts,
)


@dataclass(frozen=True)
class SliceSummary(_Record):
    n_tasks: int
    """Tasks in the slice, including those with no counted attempt."""
    excluded_tasks: tuple[str, ...]
    kmax: int
    """Largest k every counted task of the slice supports."""
    success_rate: Estimate | None
    pass_hat_k: dict[int, Estimate]
    """pass^k for k = 1..kmax over the slice's tasks."""


@dataclass(frozen=True)
class BeyondK(_Record):
    """pass@k and pass^k at a k some tasks cannot support, over the tasks that can."""

    pass_at_k: Estimate
    pass_hat_k: Estimate
    excluded_tasks: tuple[str, ...]
    """Counted tasks with fewer than k attempts in this view, left out at this k."""


@dataclass(frozen=True)
class ViewSummary(_Record):
    view: str
    n_tasks: int
    """Tasks with at least one counted attempt."""
    excluded_tasks: tuple[str, ...]
    """Tasks with no counted attempt: they carry no estimate and are left out."""
    kmax: int
    """Largest k every counted task supports (capped by ``max_k``)."""
    k_limited_by: tuple[tuple[str, int], ...]
    """(task, counted attempts) of the tasks with fewer attempts than the most any task
    has: the ones that stop the common curve early, fewest first."""
    success_rate: Estimate | None
    pass_at_k: dict[int, Estimate]
    pass_hat_k: dict[int, Estimate]
    beyond_k: dict[int, BeyondK]
    """With ``k_over_supporting``: k above ``kmax`` over the tasks that support it."""
    partial_score: Estimate | None
    """Mean partial score over tasks that have one; None when no task has a rubric."""
    by_label: dict[str, SliceSummary]
    by_horizon: dict[str, SliceSummary]


@dataclass(frozen=True)
class Distribution(_Record):
    total: float | None
    """Over the attempts whose value is known; None when the sum is beyond the largest float
    (each value finite, their sum not) or no value is known."""
    mean: float | None
    """None (as the median and p90) when there is no attempt with a known value."""
    median: float | None
    p90: float | None
    unknown: int = 0
    """Attempts whose value is not known (an imported file that gives none): left out of
    every figure above, never counted as 0."""


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
    methods: dict[str, Any]
    """The interval rule, its confidence and minimum tasks, and the bootstrap's name."""


def methods(seed: int, n_boot: int) -> dict[str, Any]:
    """How the intervals of a summary or comparison were made, for its JSON."""
    return {
        "interval": AC_T_CR1,
        "confidence": CONFIDENCE,
        "min_tasks": MIN_TASKS,
        "bootstrap": BOOTSTRAP_METHOD,
        "seed": seed,
        "n_boot": n_boot,
    }


# --- suite values from task counts ---------------------------------------------------------

_BootKey = tuple[str, int]
_Boot = dict[_BootKey, tuple[float, float]]
"""Bootstrap intervals of a view's suite values: ("rate", 0), ("at", k) and ("hat", k)."""


@dataclass(frozen=True)
class _Columns:
    """The tasks of one view as arrays, their curves, and the task-index of each array row."""

    counts: list[TaskCounts]
    used: npt.NDArray[np.bool_]
    n: npt.NDArray[np.int64]
    c: npt.NDArray[np.int64]
    w: FloatArray
    at: FloatArray
    hat: FloatArray

    @classmethod
    def of(cls, counts: list[TaskCounts], k_top: int) -> _Columns:
        n = np.array([t.n for t in counts], dtype=np.int64)
        c = np.array([t.c for t in counts], dtype=np.int64)
        w = np.array([t.weight for t in counts], dtype=np.float64)
        at, hat = pass_curves(n, c, k_top)
        return cls(counts, n > 0, n, c, w, at, hat)

    def rate(self) -> FloatArray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.used, self.c / np.maximum(self.n, 1), np.nan)

    def estimate(
        self,
        values: FloatArray,
        rows: npt.NDArray[np.bool_],
        boot: tuple[float, float] | None = None,
        exact: _BootKey | None = None,
    ) -> Estimate:
        """The estimate of *values* over *rows*; *exact* (("rate", 0), ("at", k) or ("hat",
        k)) names the rational it computes, so that it prints as that rational does."""
        found = make_estimate(values[rows], self.w[rows], self.n[rows], boot=boot)
        return found if exact is None else self.printed_exactly(found, rows, *exact)

    def curve(
        self, values: FloatArray, kmax: int, rows: npt.NDArray[np.bool_], boot: _Boot, name: str
    ) -> dict[int, Estimate]:
        """The estimates of k = 1..kmax of a (tasks, k) curve over *rows*, computed together."""
        boots = [boot.get((name, k)) for k in range(1, kmax + 1)]
        found = make_estimates(values[rows, :kmax], self.w[rows], self.n[rows], boots)
        found = [self.printed_exactly(e, rows, name, k) for k, e in enumerate(found, 1)]
        return dict(zip(range(1, kmax + 1), coherent_curve(found, name == "at"), strict=True))

    def printed_exactly(
        self, found: Estimate, rows: npt.NDArray[np.bool_], name: str, k: int
    ) -> Estimate:
        """:func:`~groundstate.stats.intervals.printed_exactly` over the tasks of *rows*."""
        return printed_exactly(
            found, lambda: exact_mean(self.n[rows], self.c[rows], self.w[rows], name, k)
        )

    def names(self, rows: npt.NDArray[np.bool_] | Sequence[bool]) -> tuple[str, ...]:
        return tuple(t.task_id for t, keep in zip(self.counts, rows, strict=True) if keep)


def _check_k(counts: Sequence[TaskCounts], k: int) -> None:
    check_whole("k", k, 1)
    kmax = supported_k(counts)
    if not 1 <= k <= kmax:
        raise ValueError(f"k={k} outside 1..{kmax}: every task needs at least k counted attempts")


def _single(
    counts: Iterable[TaskCounts],
    column: Callable[[_Columns], FloatArray],
    k_top: int,
    exact: _BootKey,
) -> Estimate:
    used = [t for t in counts if t.n > 0]
    if not used:
        raise ValueError("no task has a counted attempt")
    cols = _Columns.of(used, k_top)
    return cols.estimate(column(cols), cols.used, exact=exact)


def suite_success_rate(counts: Iterable[TaskCounts], *, seed: int = 0, n_boot: int = 0) -> Estimate:
    """Weighted mean of per-task success rates c/n (not pooled attempts: a task with
    more attempts must not weigh more). *seed* and *n_boot* are kept for callers of the
    former API; single values carry no bootstrap."""
    return _single(counts, _Columns.rate, 0, ("rate", 0))


def suite_pass_at_k(
    counts: Iterable[TaskCounts], k: int, *, seed: int = 0, n_boot: int = 0
) -> Estimate:
    """Weighted mean of per-task pass@k; k may not exceed any counted task's n. Its interval
    is the rule's at k alone: a summary's curve may widen it from below (:func:`coherent_curve`
    over the larger k)."""
    used = list(counts)
    _check_k(used, k)
    return _single(used, lambda cols: cols.at[:, k - 1], k, ("at", k))


def suite_pass_hat_k(
    counts: Iterable[TaskCounts], k: int, *, seed: int = 0, n_boot: int = 0
) -> Estimate:
    """Weighted mean of per-task pass^k; k may not exceed any counted task's n. Its interval
    is the rule's at k alone: a summary's curve may widen it from above (:func:`coherent_curve`
    over the larger k)."""
    used = list(counts)
    _check_k(used, k)
    return _single(used, lambda cols: cols.hat[:, k - 1], k, ("hat", k))


# --- summary --------------------------------------------------------------------------------


def summarize(
    outcomes: Iterable[Outcome],
    *,
    seed: int = 0,
    n_boot: int = 2000,
    max_k: int | None = None,
    k_over_supporting: bool = False,
) -> Summary:
    """Everything a report shows about one batch, in both views.

    pass@k and pass^k run for k = 1 .. min(max_k, smallest counted n) in each view; with
    *k_over_supporting*, on up to the largest n over the tasks that support each k.
    """
    records = list(outcomes)
    if not records:
        raise ValueError("summarize needs at least one outcome")
    amounts = {name: np.array([getattr(o, name) for o in records], dtype=np.float64)
               for name in ("cost", "latency")}  # fmt: skip
    for name, values in amounts.items():
        _check_amounts(name, values, lambda i: f"task {records[i].task_id!r} attempt "
                                               f"{records[i].attempt}")  # fmt: skip
    return summary_of(
        {v: task_counts(records, v) for v in VIEWS},
        reasons=Counter(o.terminal_reason for o in records),
        invalid_reasons=Counter(o.terminal_reason for o in records if not o.valid),
        cost=amounts["cost"],
        latency=amounts["latency"],
        successes=sum(o.success and o.valid for o in records),
        seed=seed, n_boot=n_boot, max_k=max_k, k_over_supporting=k_over_supporting,
    )  # fmt: skip


def summary_of(
    counts: Mapping[View, list[TaskCounts]],
    *,
    reasons: Mapping[str, int],
    invalid_reasons: Mapping[str, int],
    cost: FloatArray,
    latency: FloatArray,
    successes: int,
    seed: int = 0,
    n_boot: int = 2000,
    max_k: int | None = None,
    k_over_supporting: bool = False,
) -> Summary:
    """A :class:`Summary` from per-task counts and per-attempt columns (one entry per
    counted attempt): the shared end of :func:`summarize` and of columnar callers."""
    attempts = len(cost)
    return Summary(
        n_tasks=len(counts["strict"]),
        attempts=attempts,
        views=summarize_views(
            counts, seed=seed, n_boot=n_boot, max_k=max_k, k_over_supporting=k_over_supporting
        ),
        terminal_reasons=dict(sorted(reasons.items())),
        invalid=invalid_stats(invalid_reasons, attempts),
        cost=distribution(cost),
        latency=distribution(latency),
        cost_per_success=_per_success(cost, successes),
        seed=seed,
        n_boot=n_boot,
        methods=methods(seed, n_boot),
    )


def summarize_views(
    counts: Mapping[View, list[TaskCounts]],
    *,
    seed: int = 0,
    n_boot: int = 2000,
    max_k: int | None = None,
    k_over_supporting: bool = False,
) -> dict[str, ViewSummary]:
    """Both views from per-task counts; suite values of both share one bootstrap draw."""
    if max_k is not None:
        check_whole("max_k", max_k, 1)
    check_draws(seed, n_boot)
    columns, kmaxes = {}, {}
    for view, view_counts in counts.items():
        # The curves run to the common k (a task of 100,000 attempts beside 100 of 2 made a
        # 100 x 100,000 array for a report stopping at k = 2); above it only when asked.
        kmaxes[view] = _kmax(view_counts, max_k)
        top = _kmax(view_counts, max_k, key=max) if k_over_supporting else kmaxes[view]
        columns[view] = _Columns.of(view_counts, top)
    boots = _shared_bootstrap(columns, kmaxes, seed, n_boot)
    return {
        view: _view_summary(view, cols, kmaxes[view], boots[view], k_over_supporting, max_k)
        for view, cols in columns.items()
    }


def _kmax(
    counts: Iterable[TaskCounts], max_k: int | None, key: Callable[[list[int]], int] = min
) -> int:
    """The fewest counted attempts of a counted task (with *key* max, the most), capped at
    *max_k*; 0 when no task has one."""
    ns = [t.n for t in counts if t.n > 0]
    kmax = key(ns) if ns else 0
    return kmax if max_k is None else min(kmax, max_k)


def _suite_columns(cols: _Columns, kmax: int) -> tuple[FloatArray, list[_BootKey]]:
    """Success rate, and pass@k and pass^k at the bootstrapped k, of every task, as columns."""
    ks = bootstrap_ks(kmax)
    index = [k - 1 for k in ks]
    keys = [("rate", 0)] + [("at", k) for k in ks] + [("hat", k) for k in ks]
    return np.column_stack([cols.rate(), cols.at[:, index], cols.hat[:, index]]), keys


def _shared_bootstrap(
    columns: Mapping[View, _Columns], kmaxes: Mapping[View, int], seed: int, n_boot: int
) -> dict[View, _Boot]:
    """Percentile intervals of the suite values of every view from one set of task draws
    (views count the same tasks in the same order, so one draw fits all)."""
    live = [v for v in columns if kmaxes[v] > 0]
    blocks, keys = [], []
    for view in live:
        values, view_keys = _suite_columns(columns[view], kmaxes[view])
        used = np.where(columns[view].used, columns[view].w, 0.0)
        blocks.append((values, np.repeat(used[:, None], values.shape[1], axis=1)))
        keys.append(view_keys)
    found = bootstrap_blocks(blocks, seed=seed, n_boot=n_boot) if live else None
    out: dict[View, _Boot] = {view: {} for view in columns}
    for view, view_keys, intervals in zip(live, keys, found or [], strict=False):
        out[view] = dict(zip(view_keys, intervals, strict=True))
    return out


def _view_summary(
    view: View,
    cols: _Columns,
    kmax: int,
    boot: _Boot,
    k_over_supporting: bool,
    max_k: int | None,
) -> ViewSummary:
    used = cols.used
    rate = cols.estimate(cols.rate(), used, boot.get(("rate", 0)), ("rate", 0)) if kmax else None
    at = cols.curve(cols.at, kmax, used, boot, "at")
    hat = cols.curve(cols.hat, kmax, used, boot, "hat")
    if rate is not None:
        rate, at[1], hat[1] = one_value([rate, at[1], hat[1]])
    return ViewSummary(
        view=view,
        n_tasks=int(used.sum()),
        excluded_tasks=cols.names(~used),
        kmax=kmax,
        k_limited_by=_limited_by(cols),
        success_rate=rate,
        pass_at_k=at,
        pass_hat_k=hat,
        beyond_k=_beyond(cols, kmax) if k_over_supporting else {},
        partial_score=_partial(cols),
        by_label=_slices(cols, lambda t: t.labels, str, max_k),
        by_horizon=_slices(
            cols, lambda t: (horizon_bucket(t.horizon),), HORIZON_BUCKETS.index, max_k
        ),
    )


def _limited_by(cols: _Columns) -> tuple[tuple[str, int], ...]:
    if not cols.used.any():
        return ()
    top = int(cols.n.max())
    short = [(t.task_id, t.n) for t in cols.counts if 0 < t.n < top]
    return tuple(sorted(short, key=lambda item: (item[1], item[0])))


def _beyond(cols: _Columns, kmax: int) -> dict[int, BeyondK]:
    """Higher k over the tasks with at least k counted attempts, naming the rest."""
    out = {}
    for k in range(kmax + 1, cols.at.shape[1] + 1):
        rows = cols.n >= k
        out[k] = BeyondK(
            pass_at_k=cols.estimate(cols.at[:, k - 1], rows, exact=("at", k)),
            pass_hat_k=cols.estimate(cols.hat[:, k - 1], rows, exact=("hat", k)),
            excluded_tasks=cols.names(cols.used & ~rows),
        )
    return out


def _partial(cols: _Columns) -> Estimate | None:
    scored = np.array([t.partial is not None and t.n > 0 for t in cols.counts], dtype=np.bool_)
    if not scored.any():
        return None
    values = np.array([np.nan if t.partial is None else t.partial for t in cols.counts])
    # over the attempts the scores are a mean of, not every counted attempt
    ns = np.array([t.scored for t in cols.counts], dtype=np.int64)
    return make_estimate(values[scored], cols.w[scored], ns[scored])


def _slices(
    cols: _Columns,
    keys_of: Callable[[TaskCounts], Iterable[str]],
    order: Callable[[str], Any],
    max_k: int | None,
) -> dict[str, SliceSummary]:
    """Per-slice values, so many short easy tasks cannot hide collapse on long ones."""
    members: dict[str, list[int]] = {}
    for index, task in enumerate(cols.counts):
        for key in keys_of(task):
            members.setdefault(key, []).append(index)
    return {key: _slice(cols, members[key], max_k) for key in sorted(members, key=order)}


def _slice(cols: _Columns, indices: list[int], max_k: int | None) -> SliceSummary:
    """A slice's values up to its own common k, from curves of its counted tasks alone."""
    rows = np.zeros(len(cols.counts), dtype=np.bool_)
    rows[indices] = True
    counted = [cols.counts[i] for i in indices if cols.used[i]]
    kmax = _kmax(counted, max_k)
    own = _Columns.of(counted, kmax)
    rate = own.estimate(own.rate(), own.used, exact=("rate", 0)) if kmax else None
    hat = own.curve(own.hat, kmax, own.used, {}, "hat")
    if rate is not None:  # pass@1 is not shown, but its curve bounds the same value
        at_1 = own.curve(own.at, kmax, own.used, {}, "at")[1]
        rate, _, hat[1] = one_value([rate, at_1, hat[1]])
    return SliceSummary(
        n_tasks=len(indices),
        excluded_tasks=cols.names(rows & ~cols.used),
        kmax=kmax,
        success_rate=rate,
        pass_hat_k=hat,
    )


# --- reasons, cost and latency -------------------------------------------------------------


def invalid_stats(invalid_reasons: Mapping[str, int], total: int) -> InvalidStats:
    """Invalid attempts by the part of their terminal reason before ``/``."""
    reasons: Counter[str] = Counter()
    for reason, count in invalid_reasons.items():
        reasons[reason.split("/", 1)[0]] += count
    by_reason = dict(sorted(reasons.items()))
    count = sum(by_reason.values())
    if count > total:
        raise ValueError(f"{count} invalid attempts of {total}: more than were counted")
    rates = {reason: c / total for reason, c in by_reason.items()}
    return InvalidStats(count, count / total if total else 0.0, by_reason, rates)


def distribution(values: FloatArray) -> Distribution:
    """Per-attempt spread; p90 uses numpy's linear interpolation between order statistics.

    Finite values near the float limit (a harness that writes 1e308 for "unknown") overflow
    the plain mean and median to inf, which strict JSON cannot carry: then they are taken
    over values divided by the largest one, which cannot overflow. No values (every task of
    a batch failed validation): a total of 0 and no mean, median or p90. NaN is a value not
    known (an import's unknown cost or latency): counted in ``unknown``, left out of the rest
    (averaging it in as 0 would make an unpriced attempt free)."""
    known = values[~np.isnan(values)]
    unknown = len(values) - len(known)
    if not len(known):
        return Distribution(None if unknown else 0.0, None, None, None, unknown)
    values = known
    with np.errstate(over="ignore"):
        total = float(np.sum(values))
        spread: tuple[Any, ...] = (np.mean(values), np.median(values), np.percentile(values, 90))
        if not all(math.isfinite(v) for v in spread):
            scale = _scale(values)
            scaled = values / scale
            spread = tuple(v * scale for v in (np.mean(scaled), np.median(scaled),
                                              np.percentile(scaled, 90)))  # fmt: skip
    mean, median, p90 = (float(v) for v in spread)
    return Distribution(total if math.isfinite(total) else None, mean, median, p90, unknown)


def _check_amounts(name: str, values: FloatArray, where: Callable[[int], str]) -> None:
    """A cost or latency is a non-negative finite number, or NaN (not known): an infinite
    latency made the mean, median and p90 NaN (not JSON), a negative cost lowered the total.
    Imports and runs never store one (a record altered by hand is named by the integrity
    check instead); this guards the library API, as partial scores are."""
    bad = np.flatnonzero(np.isinf(values) | (values < 0))
    if bad.size:
        raise ValueError(
            f"{name} {float(values[bad[0]])!r} of {where(int(bad[0]))} is not a "
            f"finite non-negative number ({bad.size} attempt{'s' * (bad.size != 1)}); give "
            "None for a value not known"
        )


def _per_success(cost: FloatArray, successes: int) -> float | None:
    """What the counted attempts cost per valid success; None with no success, or when some
    attempt's cost is not known (a sum over the others would understate it)."""
    if not successes or bool(np.isnan(cost).any()):
        return None
    return _finite_sum(cost, successes)


def _scale(values: FloatArray) -> float:
    largest = float(np.max(np.abs(values))) if len(values) else 0.0
    return largest if largest > 0.0 else 1.0


def _finite_sum(values: FloatArray, divisor: int) -> float | None:
    """``sum(values) / divisor``, or None when that is beyond the largest float."""
    try:
        total = math.fsum(values.tolist()) / divisor
    except OverflowError:
        scale = _scale(values)
        total = math.fsum((values / scale).tolist()) / divisor * scale
    return total if math.isfinite(total) else None
