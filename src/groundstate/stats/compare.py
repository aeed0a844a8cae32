"""Two batches compared: paired differences b - a of every metric in both views.

Pairing on tasks removes between-task difficulty from the difference: each task
contributes b's value minus a's, and the uncertainty is that of the mean of those
differences (task-clustered SE, t quantile on T-1 degrees of freedom). When the batches share too
few tasks, both sides are summarised separately and their difference, labelled ``unpaired``,
gets Newcombe's square-and-add of the two sides' own intervals. Per-task changes are
tested one by one (Fisher's exact test on successes / valid attempts) and listed only when
they survive Benjamini-Hochberg at the stated false discovery rate; everything else about a
single task is noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import special

from groundstate.errors import GroundstateError
from groundstate.rounding import SMALLEST_P, counted
from groundstate.stats.intervals import (
    _TIE,
    AC_T_CR1,
    CHUNK_ELEMENTS,
    CONFIDENCE,
    EXACT_BOUND,
    MIN_TASKS,
    MOVER,
    NO_INTERVAL,
    T_CR1,
    Estimate,
    agresti_coull,
    bootstrap_blocks,
    bootstrap_ks,
    check_draws,
    coherent_curve,
    exact_mean,
    floored_p,
    make_estimate,
    near_agreement,
    one_value,
    printed_exactly,
    reach_of,
    t_quantile,
    top_chance,
    two_sided_p,
)
from groundstate.stats.outcomes import (
    VIEWS,
    FloatArray,
    Outcome,
    TaskCounts,
    View,
    _Record,
    check_whole,
    pass_curves,
    task_counts,
)
from groundstate.stats.summary import methods

DEFAULT_FDR = 0.05
PER_TASK_TEST = "fisher_exact_two_sided"
MULTIPLE_COMPARISONS = "benjamini_hochberg"
Mode = Literal["paired", "unpaired"]
IntArray = npt.NDArray[np.int64]


class RevisionMismatch(GroundstateError, ValueError):
    """The batches scored different versions of their tasks or suite: not comparable as is."""

    def __init__(self, problems: Sequence[str], task_ids: Sequence[str] = ()) -> None:
        self.problems = tuple(problems)
        self.task_ids = tuple(task_ids)
        """The tasks whose revision, versioning or weight differs."""
        super().__init__(
            "the batches are not comparable: " + "; ".join(self.problems)
            + ". Compare anyway with --allow-mismatch (allow_mismatch=True)"
        )  # fmt: skip


@dataclass(frozen=True)
class Difference(_Record):
    """One metric in one view: each side's value and the difference b - a."""

    metric: str
    """``success_rate``, ``pass_at_k``, ``pass_hat_k`` or ``partial_score``."""
    k: int | None
    view: str
    a: Estimate
    b: Estimate
    difference: Estimate
    """b - a; its interval is paired (t on the CR1 scale) or, in unpaired mode, Newcombe's
    square-and-add of the two sides' own intervals."""
    statistic: float | None
    """difference / SE (a t statistic); None when there is no test."""
    p_value: float | None
    """Two-sided; from t, or (every task moved by the same amount) twice the largest chance
    of that under no difference, or (unpaired) the level at which Newcombe's interval
    reaches 0."""

    @property
    def name(self) -> str:
        return self.metric if self.k is None else f"{self.metric.removesuffix('_k')}_{self.k}"


@dataclass(frozen=True)
class TaskChange(_Record):
    task_id: str
    a_c: int
    a_n: int
    b_c: int
    b_n: int
    a_rate: float
    b_rate: float
    difference: float
    """``b_rate - a_rate`` (valid attempts)."""
    p_value: float
    """Fisher's exact test, two-sided, on successes / valid attempts of the two batches."""
    q_value: float
    """Benjamini-Hochberg adjusted p-value over every paired task."""
    changed: bool
    """``q_value <= fdr``: a change that survives the multiple-comparison control."""


@dataclass(frozen=True)
class Comparison(_Record):
    mode: Mode
    paired_tasks: tuple[str, ...]
    """In both batches with valid attempts on both sides."""
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]
    excluded_tasks: tuple[str, ...]
    """In both batches but without a valid attempt on one side."""
    common_k: dict[str, int]
    """Per view: the largest k every compared task supports on both sides."""
    differences: tuple[Difference, ...]
    per_task: tuple[TaskChange, ...]
    changed: tuple[TaskChange, ...]
    fdr: float
    mismatches: tuple[str, ...]
    """Revision or suite differences that were allowed (``allow_mismatch``)."""
    notes: tuple[str, ...]
    seed: int
    n_boot: int
    methods: dict[str, Any]

    @property
    def dropped_tasks(self) -> int:
        """Tasks of either batch left out of the pairing; 0 when unpaired, where each batch
        is compared over all its tasks (those in one batch only included)."""
        if self.mode == "unpaired":
            return 0
        return len(self.only_in_a) + len(self.only_in_b) + len(self.excluded_tasks)

    def find(self, metric: str, view: str = "valid", k: int | None = None) -> Difference:
        for d in self.differences:
            if (d.metric, d.view, d.k) == (metric, view, k):
                return d
        raise KeyError(f"no {metric} (k={k}) in the {view} view")

    @property
    def success_rate_difference(self) -> Estimate:
        return self.find("success_rate").difference

    @property
    def a_success_rate(self) -> Estimate:
        return self.find("success_rate").a

    @property
    def b_success_rate(self) -> Estimate:
        return self.find("success_rate").b


# --- per-task tests ---------------------------------------------------------------------------


def fisher_p(a_c: int, a_n: int, b_c: int, b_n: int) -> float:
    """Two-sided Fisher exact p-value of successes a_c / a_n against b_c / b_n.

    Counts that are no counts are refused: 3 successes of 2 gave p = 1e-300, as if the
    tables differed beyond doubt."""
    for side, c, n in (("a", a_c, a_n), ("b", b_c, b_n)):
        check_whole(f"{side}_c", c, 0)
        check_whole(f"{side}_n", n, 0)
        if c > n:
            raise ValueError(f"{side}: {c} successes of {n} attempts")
    return float(fisher_ps([a_c], [a_n], [b_c], [b_n])[0])


FISHER_TIE = 1e-7
"""Relative tolerance under which a table is "as likely" as the observed one (R's
``fisher.test``): tables equally likely in exact arithmetic differ by rounding here."""


def fisher_ps(
    a_c: Sequence[int], a_n: Sequence[int], b_c: Sequence[int], b_n: Sequence[int]
) -> FloatArray:
    """Two-sided Fisher exact p-values of many 2x2 tables at once: given both margins, the
    successes of a are hypergeometric, and p sums the probabilities of every table at most
    as likely as the observed one (scipy's ``fisher_exact`` and R's ``fisher.test`` agree).

    Every table's whole support is evaluated as log-probabilities (``gammaln``), in chunks of
    at most :data:`CHUNK_ELEMENTS` values: scipy took 3 to 5 ms a table, a minute for a
    comparison of 10,000 tasks with different numbers of attempts. A p-value is at least
    :data:`~groundstate.rounding.SMALLEST_P`: 0/600 against 600/600 underflowed to 0.
    """
    ac, an, bc, bn = (np.asarray(v, dtype=np.int64) for v in (a_c, a_n, b_c, b_n))
    total, wins = an + bn, ac + bc
    low, high = np.maximum(0, an - (total - wins)), np.minimum(an, wins)
    sizes = high - low + 1
    out = np.empty(len(ac))
    start = 0
    while start < len(ac):
        # tables whose supports fit one chunk (at least one table, however large)
        fits = np.searchsorted(np.cumsum(sizes[start:]), CHUNK_ELEMENTS, side="right")
        stop = start + max(1, int(fits))
        part = slice(start, stop)
        out[part] = _fisher_chunk(
            ac[part], an[part], wins[part], total[part], low[part], sizes[part]
        )
        start = stop
    return np.maximum(out, SMALLEST_P)


def _fisher_chunk(
    ac: IntArray, an: IntArray, wins: IntArray, total: IntArray, low: IntArray, sizes: IntArray
) -> FloatArray:
    table = np.repeat(np.arange(len(ac)), sizes)
    offsets = np.arange(len(table)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    k, n, draws = (v.astype(np.float64) for v in (wins, total, an))
    # log P(x) = log C(k, x) + log C(n - k, draws - x) - log C(n, draws): the terms without x
    # once per table, four gammaln per value of the support
    fixed = sum(special.gammaln(v + 1) for v in (k, n - k, draws, n - draws)) - special.gammaln(
        n + 1
    )

    def log_pmf(x: FloatArray, rows: IntArray | slice) -> FloatArray:
        kk, room, dd = k[rows], n[rows] - k[rows], draws[rows]
        terms = (x, kk - x, dd - x, room - dd + x)
        return fixed[rows] - sum(special.gammaln(v + 1) for v in terms)  # type: ignore[no-any-return]

    observed = log_pmf(ac.astype(np.float64), slice(None))
    every = log_pmf((low[table] + offsets).astype(np.float64), table)
    keep = every <= observed[table] + math.log1p(FISHER_TIE)
    p = np.bincount(table, weights=np.where(keep, np.exp(every), 0.0), minlength=len(ac))
    # every table at most as likely: the whole support, p = 1 exactly (not 1 - 2e-16)
    whole = np.bincount(table, weights=keep, minlength=len(ac)) == sizes
    return np.where(whole, 1.0, np.minimum(p, 1.0))


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """BH adjusted p-values (q-values): q_(i) = min over j >= i of m p_(j) / j, at most 1.

    Rejecting every hypothesis with q <= alpha controls the false discovery rate at alpha
    for independent (or positively dependent) tests.
    """
    m = len(p_values)
    if m == 0:
        return []
    checked = np.asarray(p_values, dtype=np.float64)
    if not ((checked >= 0) & (checked <= 1)).all():  # NaN too: a NaN made every q NaN
        raise ValueError(f"p-values must lie in [0, 1], got {list(p_values)[:5]!r}")
    order = np.argsort(p_values, kind="stable")
    ranked = np.asarray(p_values, dtype=np.float64)[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum(1.0, np.minimum.accumulate(ranked[::-1])[::-1])
    out = np.empty(m)
    out[order] = adjusted
    return out.tolist()


def _task_changes(pairs: list[tuple[TaskCounts, TaskCounts]], fdr: float) -> tuple[TaskChange, ...]:
    columns = [[t.c for t, _ in pairs], [t.n for t, _ in pairs],
               [t.c for _, t in pairs], [t.n for _, t in pairs]]  # fmt: skip
    p_values = fisher_ps(*columns).tolist()
    q_values = benjamini_hochberg(p_values)
    return tuple(
        TaskChange(
            a.task_id,
            a.c,
            a.n,
            b.c,
            b.n,
            a.c / a.n,
            b.c / b.n,
            b.c / b.n - a.c / a.n,
            p,
            q,
            q <= fdr,
        )
        for (a, b), p, q in zip(pairs, p_values, q_values, strict=True)
    )


# --- pairing checks -------------------------------------------------------------------------


def task_mismatches(
    a: dict[str, TaskCounts], b: dict[str, TaskCounts], shared: list[str]
) -> list[str]:
    """Per-task reasons the two batches are not the same evaluation, one line each."""
    problems = []
    revised = [
        i for i in shared if a[i].revision and b[i].revision and a[i].revision != b[i].revision
    ]
    if revised:
        shown = ", ".join(f"{i} ({a[i].revision} vs {b[i].revision})" for i in revised)
        problems.append(f"task_revision differs for {shown}")
    for side, mine, other in (("a", a, b), ("b", b, a)):
        bare = [i for i in shared if not mine[i].revision and other[i].revision]
        if bare:
            problems.append(
                f"batch {side} does not version {counted(len(bare), 'task')} the other batch "
                f"versions (an unversioned import?): {', '.join(bare)}"
            )
    reweighted = [i for i in shared if a[i].weight != b[i].weight]
    if reweighted:
        problems.append(
            "task weight differs for " + ", ".join(reweighted) + " (a's weights are used)"
        )
    return problems


def _mismatched_tasks(
    a: dict[str, TaskCounts], b: dict[str, TaskCounts], shared: list[str]
) -> list[str]:
    return [i for i in shared if (a[i].revision, a[i].weight) != (b[i].revision, b[i].weight)]


# --- the comparison ---------------------------------------------------------------------------


def compare(
    a_outcomes: Iterable[Outcome],
    b_outcomes: Iterable[Outcome],
    *,
    seed: int = 0,
    n_boot: int = 2000,
    fdr: float = DEFAULT_FDR,
    allow_mismatch: bool = False,
    batch_mismatches: Sequence[str] = (),
) -> Comparison:
    """Differences b - a of every metric in both views (see the module docstring).

    Raises :class:`RevisionMismatch` when task revisions, versioning or weights differ, or
    *batch_mismatches* (e.g. different suite hashes) is not empty, unless *allow_mismatch*.
    """
    a_list, b_list = list(a_outcomes), list(b_outcomes)
    return compare_counts(
        {v: task_counts(a_list, v) for v in VIEWS},
        {v: task_counts(b_list, v) for v in VIEWS},
        seed=seed, n_boot=n_boot, fdr=fdr, allow_mismatch=allow_mismatch,
        batch_mismatches=batch_mismatches,
    )  # fmt: skip


def compare_counts(
    a_counts: Mapping[View, list[TaskCounts]],
    b_counts: Mapping[View, list[TaskCounts]],
    *,
    seed: int = 0,
    n_boot: int = 2000,
    fdr: float = DEFAULT_FDR,
    allow_mismatch: bool = False,
    batch_mismatches: Sequence[str] = (),
) -> Comparison:
    """:func:`compare` from per-task counts of both views (what large batches are counted
    into without an object per attempt)."""
    if not 0 < fdr < 1:
        raise ValueError(f"fdr must lie strictly between 0 and 1, got {fdr}")
    check_draws(seed, n_boot)
    counts = {v: (_by_id(a_counts[v]), _by_id(b_counts[v])) for v in VIEWS}
    a, b = counts["valid"]
    shared = sorted(a.keys() & b.keys())
    mismatches = [*batch_mismatches, *task_mismatches(a, b, shared)]
    if mismatches and not allow_mismatch:
        raise RevisionMismatch(mismatches, _mismatched_tasks(a, b, shared))
    paired = [i for i in shared if a[i].n > 0 and b[i].n > 0]
    mode, notes = _mode(paired, a, b)
    differences: list[Difference] = []
    common_k: dict[str, int] = {}
    sides = [(view, *counts[view]) for view in VIEWS]
    if mode == "paired":
        rows = sorted(i for i in shared if counts["strict"][0][i].n and counts["strict"][1][i].n)
        blocks = [_paired_block(view, va, vb, rows) for view, va, vb in sides]
        drawn = bootstrap_blocks([bl.boot_input() for bl in blocks], seed=seed, n_boot=n_boot)
        boots: list[list[tuple[float, float]] | None] = list(drawn) if drawn else [None, None]
        for bl, boot in zip(blocks, boots, strict=True):
            common_k[bl.view] = bl.k
            differences += bl.differences(boot)
    else:
        for view, va, vb in sides:
            k, found = _unpaired(view, va, vb)
            common_k[view] = k
            differences += found
    notes += _k_limits(counts, common_k, shared if mode == "paired" else None)
    per_task = _task_changes([(a[i], b[i]) for i in paired], fdr)
    return Comparison(
        mode=mode,
        paired_tasks=tuple(paired),
        only_in_a=tuple(sorted(a.keys() - b.keys())),
        only_in_b=tuple(sorted(b.keys() - a.keys())),
        excluded_tasks=tuple(i for i in shared if a[i].n == 0 or b[i].n == 0),
        common_k=common_k,
        differences=tuple(differences),
        per_task=per_task,
        changed=tuple(c for c in per_task if c.changed),
        fdr=fdr,
        mismatches=tuple(mismatches),
        notes=tuple(notes),
        seed=seed,
        n_boot=n_boot,
        methods={
            **methods(seed, n_boot),
            "test": T_CR1 if mode == "paired" else MOVER,
            "per_task_test": PER_TASK_TEST,
            "multiple_comparisons": MULTIPLE_COMPARISONS,
            "fdr": fdr,
        },
    )


def _by_id(counts: list[TaskCounts]) -> dict[str, TaskCounts]:
    return {t.task_id: t for t in counts}


def _mode(
    paired: list[str], a: dict[str, TaskCounts], b: dict[str, TaskCounts]
) -> tuple[Mode, list[str]]:
    """Paired on the shared tasks unless they are too few and each side alone has enough."""
    if len(paired) >= MIN_TASKS:
        return "paired", []
    a_tasks, b_tasks = sum(t.n > 0 for t in a.values()), sum(t.n > 0 for t in b.values())
    if paired and min(a_tasks, b_tasks) < MIN_TASKS:
        return "paired", [f"only {_tasks(len(paired), 'paired task')}: intervals are n/a"]
    return "unpaired", [
        f"{_tasks(len(paired))} with valid attempts in both batches (fewer than {MIN_TASKS}): "
        f"UNPAIRED comparison of {_tasks(a_tasks)} of a with {_tasks(b_tasks)} of b with valid "
        "attempts (the strict view: of every task of each); between-task differences are not "
        "removed"
    ]


def _tasks(count: int, noun: str = "task") -> str:
    """``"1 task"``, ``"2 tasks"``."""
    return counted(count, noun)


def _k_limits(
    counts: Mapping[View, tuple[dict[str, TaskCounts], dict[str, TaskCounts]]],
    common_k: Mapping[str, int],
    paired: list[str] | None,
) -> list[str]:
    """Per view, the tasks that stop pass@k and pass^k below the k both batches' attempts
    reach (the smaller of each batch's most counted attempts on a task): one task with a
    single counted attempt on one side stops the whole curve at k = 1, which ``report`` names
    in its k limits and a comparison names in a note. *paired*: the tasks in both batches
    (each view pairs those with counted attempts on both sides), or None when each batch
    counts its own tasks (unpaired)."""
    notes = []
    for view, (a, b) in counts.items():
        if paired is not None:
            rows = [(i, a[i].n, b[i].n) for i in paired if a[i].n and b[i].n]
            found = [(min(x, y), f"{i} (a {x}, b {y})") for i, x, y in rows]
            reach = min(
                max((x for _, x, _ in rows), default=0), max((y for *_, y in rows), default=0)
            )
        else:
            found = [(t.n, f"{i} in {side} ({t.n})") for side, c in (("a", a), ("b", b))
                     for i, t in c.items() if t.n]  # fmt: skip
            reach = min(
                max((t.n for t in a.values()), default=0), max((t.n for t in b.values()), default=0)
            )
        k = common_k.get(view, 0)
        short = sorted(x for x in found if x[0] < reach)
        if not (k and short):
            continue
        named = ", ".join(text for _, text in short[:5])
        more = f", ... {len(short) - 5} more" if len(short) > 5 else ""
        notes.append(
            f"{view} view: pass@k and pass^k stop at k = {k}, though each batch has a task "
            f"with {reach} counted attempts; tasks with fewer: {named}{more}"
        )
    return notes


@dataclass(frozen=True)
class _PairedBlock:
    """The paired tasks of one view as per-task value columns of both sides."""

    view: View
    k: int
    names: list[str]
    a_values: FloatArray
    b_values: FloatArray
    w: FloatArray
    a_n: np.ndarray[Any, np.dtype[np.int64]]
    b_n: np.ndarray[Any, np.dtype[np.int64]]
    a_scored: np.ndarray[Any, np.dtype[np.int64]]
    """The partial score's denominators (:attr:`TaskCounts.scored`)."""
    b_scored: np.ndarray[Any, np.dtype[np.int64]]
    columns: list[tuple[str, int | None]]
    rows: list[np.ndarray[Any, np.dtype[np.bool_]]]
    """Which tasks count for each column (partial score: those scored on both sides)."""
    a_c: np.ndarray[Any, np.dtype[np.int64]]
    """Each task's counted successes, for the exact side values (:func:`_exact`)."""
    b_c: np.ndarray[Any, np.dtype[np.int64]]

    def boot_columns(self) -> list[int]:
        """Columns that get a bootstrap second opinion (every k of :func:`bootstrap_ks`)."""
        ks = set(bootstrap_ks(self.k))
        return [j for j, (_, k) in enumerate(self.columns) if k is None or k in ks]

    def boot_input(self) -> tuple[FloatArray, FloatArray]:
        picked = self.boot_columns()
        weights = np.zeros((len(self.w), len(picked)))
        for out, j in enumerate(picked):
            weights[:, out] = np.where(self.rows[j], self.w, 0.0)
        return np.nan_to_num(self.b_values[:, picked] - self.a_values[:, picked]), weights

    def differences(self, boot: list[tuple[float, float]] | None) -> list[Difference]:
        drawn = dict(zip(self.boot_columns(), boot or [], strict=False))
        found = []
        for j, ((metric, k), rows) in enumerate(zip(self.columns, self.rows, strict=True)):
            if not rows.any():
                continue
            partial = metric == "partial_score"
            a_n = (self.a_scored if partial else self.a_n)[rows]
            b_n = (self.b_scored if partial else self.b_n)[rows]
            a = make_estimate(self.a_values[rows, j], self.w[rows], a_n)
            b = make_estimate(self.b_values[rows, j], self.w[rows], b_n)
            diff = make_estimate(
                self.b_values[rows, j] - self.a_values[rows, j], self.w[rows], a_n + b_n,
                drawn.get(j), difference=True,
            )  # fmt: skip
            if not partial:
                exact_a = _exact(self.a_n[rows], self.a_c[rows], self.w[rows], metric, k)
                exact_b = _exact(self.b_n[rows], self.b_c[rows], self.w[rows], metric, k)
                a, b = printed_exactly(a, exact_a), printed_exactly(b, exact_b)
                diff = printed_exactly(diff, _exact_difference(exact_a, exact_b))
            moved = self.b_values[rows, j] - self.a_values[rows, j]
            found.append(
                Difference(metric, k, self.view, a, b, diff, *_test(diff, self.w[rows], moved))
            )
        return _coherent_sides(found)


def _coherent_sides(found: list[Difference]) -> list[Difference]:
    """Each side's pass@k and pass^k made to follow their curves (:func:`coherent_curve`), as
    ``report`` shows them; the paired differences have no direction in k and keep theirs."""
    out = list(found)
    for metric, rising in (("pass_at_k", True), ("pass_hat_k", False)):
        index = [i for i, d in enumerate(out) if d.metric == metric]
        a = coherent_curve([out[i].a for i in index], rising)
        b = coherent_curve([out[i].b for i in index], rising)
        for i, side_a, side_b in zip(index, a, b, strict=True):
            out[i] = replace(out[i], a=side_a, b=side_b)
    same = _one_value_columns([(d.metric, d.k) for d in out])
    if same:
        a, b = one_value([out[i].a for i in same]), one_value([out[i].b for i in same])
        for i, side_a, side_b in zip(same, a, b, strict=True):
            out[i] = replace(out[i], a=side_a, b=side_b)
    return out


def _one_value_columns(columns: Sequence[tuple[str, int | None]]) -> list[int]:
    """Where the success rate, pass@1 and pass^1 (one value, c/n of each task: one interval,
    :func:`one_value`) are among *columns*; empty unless all three are."""
    found = [columns.index(c) for c in _ONE_VALUE if c in columns]
    return found if len(found) == len(_ONE_VALUE) else []


_ONE_VALUE: tuple[tuple[str, int | None], ...] = (
    ("success_rate", None), ("pass_at_k", 1), ("pass_hat_k", 1)
)  # fmt: skip


def _paired_block(
    view: View, a: dict[str, TaskCounts], b: dict[str, TaskCounts], names: list[str]
) -> _PairedBlock:
    """Rows are *names* in every view, so all views share one bootstrap draw; a task
    without a counted attempt on a side in this view counts for none of its columns."""
    a_side, b_side = [a[i] for i in names], [b[i] for i in names]
    ok = np.array(
        [x.n > 0 and y.n > 0 for x, y in zip(a_side, b_side, strict=True)], dtype=np.bool_
    )
    k = min((min(x.n, y.n) for x, y in zip(a_side, b_side, strict=True) if x.n and y.n), default=0)
    a_values, columns = _value_columns(a_side, k)
    b_values, _ = _value_columns(b_side, k)
    scored = ok & np.array(
        [
            x.partial is not None and y.partial is not None
            for x, y in zip(a_side, b_side, strict=True)
        ],
        dtype=np.bool_,
    )
    rows = [scored if metric == "partial_score" else ok for metric, _ in columns]
    return _PairedBlock(
        view, k, names, a_values, b_values,
        np.array([t.weight for t in a_side], dtype=np.float64),
        _ns(a_side), _ns(b_side), _ns(a_side, scored=True), _ns(b_side, scored=True),
        columns, rows, _cs(a_side), _cs(b_side),
    )  # fmt: skip


def _value_columns(
    side: list[TaskCounts], k: int
) -> tuple[FloatArray, list[tuple[str, int | None]]]:
    """Per-task success rate, pass@1..k, pass^1..k and partial score, as columns."""
    n = np.array([t.n for t in side], dtype=np.float64)
    c = np.array([t.c for t in side], dtype=np.float64)
    at, hat = pass_curves(n, c, k)
    partial = np.array([np.nan if t.partial is None else t.partial for t in side], dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = c / n
    values = np.column_stack([rate, at, hat, partial]) if len(side) else np.zeros((0, 2 + 2 * k))
    columns: list[tuple[str, int | None]] = [("success_rate", None)]
    columns += [("pass_at_k", j) for j in range(1, k + 1)] + [
        ("pass_hat_k", j) for j in range(1, k + 1)
    ]
    return values, [*columns, ("partial_score", None)]


def _test(
    diff: Estimate, weights: FloatArray, moved: FloatArray
) -> tuple[float | None, float | None]:
    """The paired t statistic and its two-sided p-value, at least the chance bound of
    :func:`_near_p`, so the p-value is below 0.05 exactly when the interval (the t interval,
    each end at least as far as the exact bound of every task at one end, :func:`near_agreement`)
    excludes 0; when every task moved by the same v != 0 (t would divide by a zero spread),
    that bound alone: with equal weights 2 / (1 + |v|)^T, the exact sign test 2 * 0.5^T where
    every task moved by the whole range. *moved*: each task's difference."""
    if diff.method == T_CR1 and diff.se:
        statistic = diff.estimate / diff.se
        assert diff.df is not None  # a t_cr1 interval carries its df
        return statistic, max(two_sided_p(statistic, diff.df), _near_p(diff, weights, moved))
    if diff.method == EXACT_BOUND:  # no task moved (v = 0): p = 1
        return None, _near_p(diff, weights, moved)
    return None, None


def _near_p(diff: Estimate, weights: FloatArray, moved: FloatArray) -> float:
    """The smallest alpha at which the end of the difference's interval toward 0, where it
    is the exact bound of every task at the farthest difference v from 0 on the estimate's
    side (the largest for an estimate above 0), excludes 0: at a mean difference of 0 a
    difference in [-1, 1] is at least |v| with chance at most 1 / (1 + |v|) (Markov's
    inequality on the difference + 1), every task so with chance at most
    :func:`top_chance` of that, doubled. 1 for an estimate of 0."""
    if diff.estimate == 0:
        return 1.0
    farthest = float(np.max(moved) if diff.estimate > 0 else -np.min(moved))
    return min(1.0, floored_p(2 * top_chance(weights, 1 / (1 + farthest))))


# --- unpaired fallback -----------------------------------------------------------------------


def _unpaired(
    view: View, a: dict[str, TaskCounts], b: dict[str, TaskCounts]
) -> tuple[int, list[Difference]]:
    a_side = [t for t in a.values() if t.n > 0]
    b_side = [t for t in b.values() if t.n > 0]
    if not a_side or not b_side:
        return 0, []
    k = min(min(t.n for t in a_side), min(t.n for t in b_side))
    a_values, columns = _value_columns(a_side, k)
    b_values, _ = _value_columns(b_side, k)
    sides: dict[int, _Sides] = {}
    all_weights = (_weights(a_side), _weights(b_side, a))
    counted = {s: (_ns(a_side, scored=s), _ns(b_side, scored=s)) for s in (False, True)}
    distinct: dict[bytes, int] = {}  # the distinct tasks of each pair of row sets, once
    a_c, b_c = _cs(a_side), _cs(b_side)
    exact: dict[int, tuple[Callable[[], Fraction], Callable[[], Fraction]]] = {}
    for j, (metric, at_k) in enumerate(columns):
        a_rows, b_rows = ~np.isnan(a_values[:, j]), ~np.isnan(b_values[:, j])
        if not (a_rows.any() and b_rows.any()):
            continue
        ns = counted[metric == "partial_score"]
        weights = (all_weights[0][a_rows], all_weights[1][b_rows])
        ea = make_estimate(a_values[a_rows, j], weights[0], ns[0][a_rows])
        eb = make_estimate(b_values[b_rows, j], weights[1], ns[1][b_rows])
        if metric != "partial_score":
            exact_a = _exact(ns[0][a_rows], a_c[a_rows], weights[0], metric, at_k)
            exact_b = _exact(ns[1][b_rows], b_c[b_rows], weights[1], metric, at_k)
            ea, eb = printed_exactly(ea, exact_a), printed_exactly(eb, exact_b)
            exact[j] = (exact_a, exact_b)
        # a task in both batches is one task of the comparison, not two
        key = a_rows.tobytes() + b_rows.tobytes()
        if key not in distinct:
            distinct[key] = len(_names(a_side, a_rows) | _names(b_side, b_rows))
        tasks = distinct[key]
        ends = (_extremes(a_values[a_rows, j]), _extremes(b_values[b_rows, j]))
        sides[j] = (ea, eb, weights, tasks, ends)
    limits = _curves(columns, sides)
    shown = {}
    for j, (_, _, weights, tasks, _) in sides.items():
        (ea, a_limits), (eb, b_limits) = limits[j]
        both = (a_limits, b_limits)
        diff = unpaired_difference(ea, eb, n_tasks=tasks, weights=weights, limits=both)
        if j in exact:
            exact_a, exact_b = exact[j]
            diff = printed_exactly(diff, _exact_difference(exact_a, exact_b))
        shown[j] = (ea, eb, diff)
    p_values = _unpaired_ps(columns, sides, [diff for _, _, diff in shown.values()])
    found = []
    for (j, (ea, eb, diff)), p in zip(shown.items(), p_values, strict=True):
        metric, kk = columns[j]
        found.append(Difference(metric, kk, view, ea, eb, diff, None, p))
    return k, found


def _unpaired_ps(
    columns: list[tuple[str, int | None]], sides: Mapping[int, _Sides], diffs: list[Estimate]
) -> list[float | None]:
    """The p-value of each square-and-add difference of a view (in *sides*' order; None
    without an interval), all searched together (:func:`_mover_ps`)."""
    mover = np.array([diff.method == MOVER for diff in diffs], dtype=np.bool_)
    if not mover.any():
        return [None] * len(diffs)
    order = list(sides)
    curves = []
    for metric, rising in (("pass_at_k", True), ("pass_hat_k", False)):
        rows = [i for i, j in enumerate(order) if columns[j][0] == metric]
        if rows:
            curves.append((rows, rising))
    same = [order.index(j) for j in _one_value_columns(columns) if j in sides]
    same = same if len(same) == len(_ONE_VALUE) else []
    ends = [
        _SideEnds(
            [sides[j][side] for j in order],  # type: ignore[misc]
            [sides[j][2][side] for j in order],
            [sides[j][4][side] for j in order],
            curves,
            same,
        )
        for side in (0, 1)
    ]
    d = np.array([diff.estimate for diff in diffs])
    excludes = np.array(
        [m and (diff.ci_low > 0 or diff.ci_high < 0) for m, diff in zip(mover, diffs, strict=True)],  # type: ignore[operator]
        dtype=np.bool_,
    )
    found = _mover_ps((ends[0], ends[1]), np.where(mover, d, 0.0), excludes)
    return [float(p) if m else None for m, p in zip(mover.tolist(), found.tolist(), strict=True)]


_Extremes = tuple[float, float]
"""The highest and the lowest task value of one side of a metric."""
_Sides = tuple[Estimate, Estimate, tuple[FloatArray, FloatArray], int, tuple[_Extremes, _Extremes]]
"""Both sides of a metric: their estimates, weights, the distinct tasks, their extremes."""


def _extremes(values: FloatArray) -> _Extremes:
    return float(np.max(values)), float(np.min(values))


def _curves(
    columns: list[tuple[str, int | None]], sides: Mapping[int, _Sides]
) -> dict[int, tuple[tuple[Estimate, Limits], tuple[Estimate, Limits]]]:
    """Each column's two sides as shown, with their limits at any level: pass@k and pass^k
    follow their curve (:func:`coherent_curve`) at every level, the rest are their own."""
    out = {}  # a side without an interval of its own leaves the difference n/a: limits unused
    for j, (ea, eb, weights, _, ends) in sides.items():
        out[j] = (
            (ea, _own_limits(ea, weights[0], ends[0])),
            (eb, _own_limits(eb, weights[1], ends[1])),
        )
    for metric, rising in (("pass_at_k", True), ("pass_hat_k", False)):
        curve = [j for j, (name, _) in enumerate(columns) if name == metric and j in sides]
        for side in (0, 1):
            points = [out[j][side] for j in curve]
            shown = coherent_curve([e for e, _ in points], rising)
            side_weights = sides[curve[0]][2][side] if curve else np.ones(0)
            extremes = np.array([sides[j][4][side][0 if rising else 1] for j in curve])
            along = _curve_limits(points, side_weights, rising, extremes)
            for j, estimate, limits in zip(curve, shown, along, strict=True):
                pair = list(out[j])
                pair[side] = (estimate, limits)
                out[j] = (pair[0], pair[1])
    same = [j for j in _one_value_columns(columns) if j in sides]
    if len(same) == len(_ONE_VALUE):
        for side in (0, 1):
            points = [out[j][side] for j in same]
            widest = _widest([limits for _, limits in points])
            for j, estimate in zip(same, one_value([e for e, _ in points]), strict=True):
                pair = list(out[j])
                pair[side] = (estimate, widest)
                out[j] = (pair[0], pair[1])
    return out


def _widest(found: Sequence[Limits]) -> Limits:
    """The limits at any level of one value shown with one interval (:func:`one_value`): the
    farthest of *found* on each side."""

    def limits(alpha: float) -> tuple[float, float]:
        ends = [each(alpha) for each in found]
        return max(below for below, _ in ends), max(above for _, above in ends)

    return limits


def _curve_limits(
    points: list[tuple[Estimate, Limits]],
    weights: FloatArray,
    rising: bool,
    extremes: FloatArray,
) -> list[Limits]:
    """The limits of each point of a curve (one side's pass@k or pass^k over the same tasks,
    k = 1, 2, ...) at any level, made to follow it as :func:`coherent_curve` does at the shown
    level: pass@k's lower end the lowest of k and every larger k, pass^k's upper end the
    highest. Every point's end at a level is one vectorised step (the points share their
    tasks, so their degrees of freedom and exact reach); a point without an interval of its
    own (n/a) bounds nothing. *extremes*: each point's highest task value (*rising*) or
    lowest, which its end reaches at least as far as (:func:`near_agreement`)."""
    shown = [e for e, _ in points]
    values = np.array([e.estimate for e in shown])
    exact = np.array([e.method == EXACT_BOUND for e in shown])
    spread = np.array([e.method == AC_T_CR1 for e in shown])
    dfs = [e.df for e in shown if e.method == AC_T_CR1 and e.df is not None]
    # Agresti-Coull's terms that do not depend on the level (:func:`agresti_coull`)
    ses = np.array([e.se if e.se and e.method == AC_T_CR1 else 1.0 for e in shown])
    n_eff = values * (1 - values) / ses**2
    successes = values * n_eff
    reach = reach_of(weights / np.max(weights)) if exact.any() or spread.any() else None
    ends_shown = np.array(
        [(e.ci_low if rising else e.ci_high) if e.ci_low is not None else np.nan for e in shown]
    )
    memo: dict[float, FloatArray] = {}

    def ends(alpha: float) -> FloatArray:
        """Every point's lower end (*rising*) or upper end at level 1 - alpha, NaN for none
        (at the shown level, the intervals shown)."""
        if alpha == 1 - CONFIDENCE:
            return ends_shown
        if alpha not in memo:
            memo.clear()
            out = np.full(len(shown), np.nan)
            if dfs:
                q = -float(special.stdtrit(dfs[0], alpha / 2))
                with np.errstate(invalid="ignore", over="ignore"):  # q = inf: the whole range
                    total = n_eff + q**2
                    centre = (successes + q**2 / 2) / total
                    half = q * np.sqrt(centre * (1 - centre) / total)
                    end = np.fmax(0.0, centre - half) if rising else np.fmin(1.0, centre + half)
                out[spread] = end[spread]
            if reach is not None:
                r = reach(alpha)
                out[exact] = (values * r if rising else 1 - (1 - values) * r)[exact]
                # as far as every task at its highest (lowest) value: near_agreement
                top, bottom = extremes * r, 1 - (1 - extremes) * r
                farther = (top < out - _TIE) if rising else (bottom > out + _TIE)
                out = np.where(spread & farther, top if rising else bottom, out)
            memo[alpha] = out
        return memo[alpha]

    def point(index: int) -> Limits:
        value, own = points[index][0].estimate, points[index][1]
        if not (exact[index] or spread[index]):
            return own

        def limits(alpha: float) -> tuple[float, float]:
            below, above = own(alpha)
            extreme = np.nanmin if rising else np.nanmax
            end = float(extreme(ends(alpha)[index:]))
            return (value - end, above) if rising else (below, end - value)

        return limits

    return [point(index) for index in range(len(points))]


def _names(side: list[TaskCounts], rows: npt.NDArray[np.bool_]) -> set[str]:
    return {t.task_id for t, keep in zip(side, rows.tolist(), strict=True) if keep}


def _weights(side: list[TaskCounts], a: Mapping[str, TaskCounts] | None = None) -> FloatArray:
    """The tasks' weights; with *a*, a's weight for a task both batches have (the documented
    rule when weights differ and the comparison is allowed)."""
    declared = a or {}
    return np.array(
        [declared[t.task_id].weight if t.task_id in declared else t.weight for t in side],
        dtype=np.float64,
    )


def _cs(side: list[TaskCounts]) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Each task's counted successes."""
    return np.array([t.c for t in side], dtype=np.int64)


_EXACT_NAMES = {"success_rate": "rate", "pass_at_k": "at", "pass_hat_k": "hat"}


def _exact(
    ns: npt.ArrayLike, cs: npt.ArrayLike, weights: FloatArray, metric: str, k: int | None
) -> Callable[[], Fraction]:
    """A side's value of *metric* as an exact rational, when asked
    (:func:`~groundstate.stats.intervals.printed_exactly`): each side and each difference
    prints as its rational does, as ``report`` prints them."""
    return lambda: exact_mean(ns, cs, weights, _EXACT_NAMES[metric], k or 0)


def _exact_difference(
    exact_a: Callable[[], Fraction], exact_b: Callable[[], Fraction]
) -> Callable[[], Fraction]:
    """b - a of two exact side values, when asked."""
    return lambda: exact_b() - exact_a()


def _ns(side: list[TaskCounts], *, scored: bool = False) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Each task's counted attempts, or with *scored* the partial score's denominator."""
    return np.array([t.scored if scored else t.n for t in side], dtype=np.int64)


def unpaired_difference(
    a: Estimate,
    b: Estimate,
    *,
    n_tasks: int | None = None,
    weights: tuple[FloatArray, FloatArray] | None = None,
    limits: tuple[Limits, Limits] | None = None,
) -> Estimate:
    """b - a of two independent task samples: Newcombe's square-and-add (MOVER) on the two
    sides' own intervals (:func:`_mover`), the Agresti-Coull interval of a side with a spread
    between tasks and the exact bound of a side whose tasks all have one value. Each side keeps
    the asymmetry its own interval has near an end of the range: Welch's symmetric t on the two
    CR1 SEs took a nearly flat side's tiny SE as known (six tasks at 1 but one at 0.999 gave
    p = 0.0009 where six at 1 gave 0.26) and covered 0.90 where a side sat near 1. A side with
    no interval of its own (fewer than 5 tasks, or a weight that leaves no measurable
    spread): none. *n_tasks*: the distinct tasks of both sides (a task in both batches is one
    task); by default the sides are taken as disjoint. *weights*: each side's task weights,
    which an exact bound depends on (equal by default). *limits*: each side's interval at any
    level, where it is not its own alone (a point of a pass@k or pass^k curve: widened along
    the curve as the side shows it)."""
    estimate = b.estimate - a.estimate
    tasks = a.n_tasks + b.n_tasks if n_tasks is None else n_tasks
    base = dict(
        estimate=estimate, n_tasks=tasks, attempts=a.attempts + b.attempts,
        min_n=min(a.min_n, b.min_n), max_n=max(a.max_n, b.max_n),
    )  # fmt: skip
    if min(a.n_tasks, b.n_tasks) < MIN_TASKS:
        note = f"n/a: unpaired intervals need at least {MIN_TASKS} tasks on each side"
        return Estimate(ci_low=None, ci_high=None, method=NO_INTERVAL, note=note, **base)  # type: ignore[arg-type]
    # A side without an interval of its own (a task whose weight leaves no measurable
    # spread) says nothing the difference could build on.
    bare = [
        (side, e) for side, e in (("a", a), ("b", b)) if e.method not in (AC_T_CR1, EXACT_BOUND)
    ]
    if bare:
        said = "; ".join(f"side {side}: {e.note.removeprefix('n/a: ')}" for side, e in bare)
        note = f"n/a: no interval of its own on {said}"
        return Estimate(ci_low=None, ci_high=None, method=NO_INTERVAL, note=note, **base)  # type: ignore[arg-type]
    low, high = _mover(*(limits or _sides(a, b, weights)), estimate, 1 - CONFIDENCE)
    note = "unpaired: Newcombe's square-and-add (MOVER) on each side's own interval"
    flat = [side for side, e in (("a", a), ("b", b)) if e.method == EXACT_BOUND]
    if flat:
        which = "both sides" if len(flat) == 2 else f"side {flat[0]}"
        note += f"; {which} with every task at one value: its exact bound"
    return Estimate(ci_low=low, ci_high=high, method=MOVER, note=note, **base)  # type: ignore[arg-type]


welch = unpaired_difference
"""The former name (the difference was Welch's where both sides had a spread)."""


def _sides(
    a: Estimate, b: Estimate, weights: tuple[FloatArray, FloatArray] | None
) -> tuple[Limits, Limits]:
    wa, wb = weights or (np.ones(a.n_tasks), np.ones(b.n_tasks))
    return _own_limits(a, wa), _own_limits(b, wb)


Limits = Callable[[float], tuple[float, float]]
"""A side's own interval at level 1 - alpha, as a function of alpha."""


def _mover(a: Limits, b: Limits, d: float, alpha: float) -> tuple[float, float]:
    """The level 1 - *alpha* interval of b - a = *d* by Newcombe's square-and-add (MOVER:
    Newcombe 1998, method 10; Zou and Donner 2008): from each side's own limits l, u at that
    level, ``d - sqrt((b - l_b)^2 + (u_a - a)^2)`` to ``d + sqrt((u_b - b)^2 + (a - l_a)^2)``
    (*a* and *b* give each side's distances from its value to its limits). Each side keeps
    the uncertainty its own interval gives it: the exact bound where its tasks all agree,
    the Agresti-Coull interval elsewhere."""
    (la, ua), (lb, ub) = a(alpha), b(alpha)
    return max(-1.0, d - math.hypot(lb, ua)), min(1.0, d + math.hypot(ub, la))


def _own_limits(side: Estimate, weights: FloatArray, extremes: _Extremes | None = None) -> Limits:
    """A level's interval under the interval rule at level 1 - alpha (at the default alpha,
    the interval it shows), as distances below and above its value; NaN for a side the rule
    gives no interval. *extremes*: the side's highest and lowest task value, which its ends
    reach at least as far as (:func:`groundstate.stats.intervals.agreement_ends`); without
    them, read from the interval shown where it was widened so."""
    value = side.estimate
    if side.method not in (AC_T_CR1, EXACT_BOUND):
        return lambda alpha: (math.nan, math.nan)
    if side.method == EXACT_BOUND:  # every task at value: [value * reach, 1 - (1 - value) reach]
        reach = reach_of(weights / np.max(weights))
        return lambda alpha: (value * (1 - reach(alpha)), (1 - value) * (1 - reach(alpha)))
    se, df = side.se, side.df
    assert se and df is not None  # an agresti_coull_t_cr1 level
    reach = reach_of(weights / np.max(weights))
    top, bottom = extremes or _shown_extremes(side, reach(1 - CONFIDENCE))

    def limits(alpha: float) -> tuple[float, float]:
        shown = alpha == 1 - CONFIDENCE
        q = t_quantile(df) if shown else -float(special.stdtrit(df, alpha / 2))
        low, high = agresti_coull(value, se, q)
        low, high, _ = near_agreement(low, high, top, bottom, reach(alpha))
        return value - low, high - value

    return limits


def _shown_extremes(side: Estimate, reach: float) -> _Extremes:
    """The highest and lowest task value as far as the interval shown tells them (a caller
    of :func:`unpaired_difference` gives estimates alone): where an end was widened to the
    exact bound of every task at one of them, that value; else the end of the range, which
    widens nothing."""
    top, bottom = 1.0, 0.0
    if side.ci_low is not None and "at the highest value" in side.note:
        top = side.ci_low / reach
    if side.ci_high is not None and "at the lowest value" in side.note:
        bottom = 1 - (1 - side.ci_high) / reach
    return top, bottom


def _mover_p(a: Limits, b: Limits, d: float) -> float:
    """Two-sided p-value of the MOVER interval: the smallest alpha whose level 1 - alpha
    interval excludes 0 (the intervals narrow as alpha grows), to a relative 1e-9 (1e-9 on
    log alpha); so p < 0.05 exactly when the 95% interval excludes 0. One metric at a time:
    a comparison searches every metric of a view at once (:func:`_mover_ps`, the same steps
    on arrays); this form is kept as its reference (the tests compare the two).

    How far the interval's nearer end lies beyond 0 grows continuously with alpha, so its
    root is bracketed (split first at 0.05) and found by regula falsi with the Illinois
    step: about ten evaluations of both sides' limits where bisection took 42."""

    def gap(log_alpha: float) -> float:
        """Positive exactly where the level exp(*log_alpha*) interval excludes 0 (the
        unclipped end of :func:`_mover`)."""
        (la, ua), (lb, ub) = a(math.exp(log_alpha)), b(math.exp(log_alpha))
        return d - math.hypot(lb, ua) if d > 0 else -(d + math.hypot(ub, la))

    if d == 0:
        return 1.0
    ends = [math.log(SMALLEST_P), math.log(1 - CONFIDENCE), math.log1p(-1e-12)]
    gaps = [gap(x) for x in ends]
    if gaps[2] <= 0:
        return 1.0
    if gaps[0] > 0:
        return SMALLEST_P
    lo, hi = (0, 1) if gaps[1] > 0 else (1, 2)
    p = math.exp(_first_positive(gap, (ends[lo], gaps[lo]), (ends[hi], gaps[hi])))
    # the shown interval excludes 0: p stays below 0.05 whatever the last rounding
    return min(p, math.nextafter(1 - CONFIDENCE, 0)) if gaps[1] > 0 else p


def _first_positive(
    gap: Callable[[float], float], low: tuple[float, float], high: tuple[float, float]
) -> float:
    """Where a non-decreasing *gap* turns positive, given (x, gap(x)) at both ends of a
    bracket (<= 0 at *low*, > 0 at *high*): the bracket's positive end once it is 1e-9
    wide. Regula falsi; an end kept twice has its gap halved (Illinois), and three steps
    that do not halve the bracket are followed by a bisection."""
    (lo, at_lo), (hi, at_hi) = low, high
    kept, slow = 0, 0
    while hi - lo > 1e-9:
        width = hi - lo
        x = (lo * at_hi - hi * at_lo) / (at_hi - at_lo)
        if slow >= 3 or not lo < x < hi:
            x, slow = (lo + hi) / 2, 0
        found = gap(x)
        if found > 0:
            hi, at_hi = x, found
            at_lo, kept = (at_lo / 2 if kept < 0 else at_lo), min(kept, 0) - 1
        else:
            lo, at_lo = x, found
            at_hi, kept = (at_hi / 2 if kept > 0 else at_hi), max(kept, 0) + 1
        slow = slow + 1 if hi - lo > width / 2 else 0
    return hi


# --- every unpaired p-value of a view at once --------------------------------------------------


_ONE_BLOCK = 20_000
"""Up to this many (metric, level) pairs a side's limits are evaluated as one block."""


class _SideEnds:
    """One side's limits for every metric of a view at once, each metric at its own level:
    :func:`_own_limits`, :func:`_curve_limits` and :func:`_widest` (what :func:`_curves`
    builds one metric and one level at a time) as array operations, so the p-values of all
    metrics are searched together (:func:`_mover_ps`)."""

    def __init__(
        self,
        shown: Sequence[Estimate],
        weights: Sequence[FloatArray],
        extremes: Sequence[_Extremes],
        curves: Sequence[tuple[list[int], bool]],
        same: Sequence[int],
    ) -> None:
        self.value = np.array([e.estimate for e in shown])
        self.exact = np.array([e.method == EXACT_BOUND for e in shown])
        self.spread = np.array([e.method == AC_T_CR1 and bool(e.se) for e in shown])
        se = np.array([e.se if self.spread[i] else 1.0 for i, e in enumerate(shown)])
        df = np.array([e.df if self.spread[i] else 1.0 for i, e in enumerate(shown)])
        self.dfs, self.df_of = np.unique(df, return_inverse=True)  # the t quantile once a df
        self.n_eff = self.value * (1 - self.value) / se**2
        self.top = np.array([top for top, _ in extremes])
        self.bottom = np.array([bottom for _, bottom in extremes])
        # the exact reach of each distinct set of weights, once for all its metrics
        groups: dict[bytes, int] = {}
        self.group = np.array([groups.setdefault(w.tobytes(), len(groups)) for w in weights])
        firsts = {g: weights[i] for i, g in reversed(list(enumerate(self.group.tolist())))}
        self.reaches = [_reach_of_many(firsts[g]) for g in range(len(groups))]
        self.curves, self.same = curves, list(same)

    def limits(self, alphas: FloatArray, cols: IntArray) -> tuple[FloatArray, FloatArray]:
        """Distances below and above metric cols[i]'s value at its own level 1 - alphas[i]
        (NaN where the side has no interval). A point of a curve needs that curve's other
        points at its level, one of the one-value metrics every curve: with many metrics
        (long curves) each block is evaluated over the rows it needs, with few all at once
        (fewer array operations)."""
        rows_all = np.arange(len(self.value))
        if len(rows_all) * len(cols) <= _ONE_BLOCK:
            return self._over(rows_all, alphas, cols)
        below, above = np.full(len(cols), np.nan), np.full(len(cols), np.nan)
        in_same = np.isin(cols, self.same)
        blocks = [(np.asarray(rows), np.isin(cols, rows) & ~in_same) for rows, _ in self.curves]
        alone = ~in_same
        for _, pick in blocks:
            alone &= ~pick
        blocks += [(rows_all, in_same), (np.unique(cols[alone]), alone)]
        for rows, pick in blocks:
            if pick.any():
                below[pick], above[pick] = self._over(rows, alphas[pick], cols[pick])
        return below, above

    def _over(
        self, rows: IntArray, alphas: FloatArray, cols: IntArray
    ) -> tuple[FloatArray, FloatArray]:
        """:meth:`limits` of metrics *cols* (among *rows*) from the limits of *rows* at
        their levels: rows metrics, columns levels."""
        r = np.stack([reach(alphas) for reach in self.reaches])[self.group[rows]]
        value, n_eff = self.value[rows, None], self.n_eff[rows, None]
        top, bottom = self.top[rows, None], self.bottom[rows, None]
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            q = -special.stdtrit(self.dfs[:, None], alphas[None, :] / 2)[self.df_of[rows]]
            total = n_eff + q**2
            centre = (value * n_eff + q**2 / 2) / total
            half = q * np.sqrt(centre * (1 - centre) / total)
            low, high = np.fmax(0.0, centre - half), np.fmin(1.0, centre + half)
        floor, ceiling = top * r, 1 - (1 - bottom) * r  # near_agreement
        low = np.where(floor < low - _TIE, floor, low)
        high = np.where(ceiling > high + _TIE, ceiling, high)
        exact, spread = self.exact[rows, None], self.spread[rows, None]
        low = np.where(exact, value * r, np.where(spread, low, np.nan))
        high = np.where(exact, 1 - (1 - value) * r, np.where(spread, high, np.nan))
        at = np.full(len(self.value), -1)
        at[rows] = np.arange(len(rows))
        # along each curve: pass@k's lower end the lowest of k and every larger k, pass^k's
        # upper end the highest (:func:`_curve_limits`)
        for curve, rising in self.curves:
            if (at[curve] < 0).any():
                continue  # no metric asked for needs it
            local = at[curve]
            ends = low[local] if rising else high[local]
            held = (np.fmin if rising else np.fmax).accumulate(ends[::-1], axis=0)[::-1]
            target = low if rising else high
            target[local] = np.where(np.isnan(ends), ends, held)
        below, above = value - low, high - value
        if self.same and (at[self.same] >= 0).all():  # one value, one interval: the widest
            same = at[self.same]
            below[same] = np.max(below[same], axis=0)
            above[same] = np.max(above[same], axis=0)
        index = np.arange(len(alphas))
        return below[at[cols], index], above[at[cols], index]


def _reach_of_many(weights: FloatArray) -> Callable[[FloatArray], FloatArray]:
    """:func:`reach_of` at many levels at once."""
    w = np.sort(np.asarray(weights, dtype=np.float64))[::-1]
    if w[0] == w[-1]:
        return lambda alphas: (alphas / 2) ** (1 / len(w))
    one = reach_of(w)
    return lambda alphas: np.array([one(float(alpha)) for alpha in alphas])


def _mover_ps(
    sides: tuple[_SideEnds, _SideEnds], d: FloatArray, shown_excludes: npt.NDArray[np.bool_]
) -> FloatArray:
    """:func:`_mover_p` of every metric at once: the smallest alpha whose level 1 - alpha
    square-and-add interval excludes 0, by the same bracketed regula falsi with the Illinois
    step on log alpha, each metric its own root, every step one array evaluation of both
    sides' limits (:class:`_SideEnds`). *shown_excludes*: whether the 95% interval shown
    excludes 0, which decides the bracket's split at 0.05 (p stays below 0.05 exactly
    then). 1 where d = 0."""
    a, b = sides
    positive = d > 0

    def gap(log_alpha: FloatArray, cols: IntArray) -> FloatArray:
        """The gap of metrics *cols*, each at its own level (only the metrics still searched
        are evaluated: each evaluation costs the curve's length)."""
        alphas = np.exp(log_alpha)
        (la, ua), (lb, ub) = a.limits(alphas, cols), b.limits(alphas, cols)
        at = d[cols]
        return np.where(positive[cols], at - np.hypot(lb, ua), -(at + np.hypot(ub, la)))

    m = len(d)
    every = np.arange(m)
    tiny, shown, top = math.log(SMALLEST_P), math.log(1 - CONFIDENCE), math.log1p(-1e-12)
    at_tiny, at_top = gap(np.full(m, tiny), every), gap(np.full(m, top), every)
    p = np.ones(m)
    never = (d == 0) | ~(at_top > 0)
    p[~never & (at_tiny > 0)] = SMALLEST_P
    search = ~never & ~(at_tiny > 0)
    # the bracket: (SMALLEST_P, 0.05] where the shown interval excludes 0, else (0.05, 1)
    lo = np.where(shown_excludes, tiny, shown)
    hi = np.where(shown_excludes, shown, top)
    mid = gap(np.full(m, shown), every)
    at_lo = np.where(shown_excludes, at_tiny, np.fmin(mid, 0.0))
    at_hi = np.where(shown_excludes, np.fmax(mid, np.finfo(float).tiny), at_top)
    kept, slow = np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64)
    active = search & (hi - lo > 1e-9)
    while active.any():
        width = hi - lo
        with np.errstate(invalid="ignore", divide="ignore"):
            x = (lo * at_hi - hi * at_lo) / (at_hi - at_lo)
        bisect = (slow >= 3) | ~((lo < x) & (x < hi))
        x = np.where(bisect, (lo + hi) / 2, x)
        slow = np.where(bisect, 0, slow)
        found = np.zeros(m)
        found[active] = gap(x[active], every[active])
        up = active & (found > 0)
        down = active & ~(found > 0)
        at_lo = np.where(up & (kept < 0), at_lo / 2, at_lo)
        at_hi = np.where(down & (kept > 0), at_hi / 2, at_hi)
        kept = np.where(up, np.minimum(kept, 0) - 1, np.where(down, np.maximum(kept, 0) + 1, kept))
        hi, at_hi = np.where(up, x, hi), np.where(up, found, at_hi)
        lo, at_lo = np.where(down, x, lo), np.where(down, found, at_lo)
        slow = np.where(active, np.where(hi - lo > width / 2, slow + 1, 0), slow)
        active = active & (hi - lo > 1e-9)
    p = np.where(search, np.exp(hi), p)
    # the shown interval excludes 0: p stays below 0.05 whatever the last rounding
    return np.where(search & shown_excludes, np.minimum(p, math.nextafter(1 - CONFIDENCE, 0)), p)
