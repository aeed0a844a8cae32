"""From attempts to per-task counts, and the per-task estimators of pass@k and pass^k."""

from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

View = Literal["valid", "strict"]
INVALID_PREFIXES = ("environment_failure", "grader_failure")
"""The terminal reasons of an invalid attempt (``groundstate.records.INVALID_REASONS``)."""
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
    terminal_reason: str = ""
    """E.g. ``"agent_failure/step_limit"``, ``"environment_failure"``; empty: the reason
    *success* and *valid* imply (``success``, ``agent_failure``, ``environment_failure``)."""
    weight: float = 1.0
    """Declared task weight."""
    slice_labels: tuple[str, ...] = ()
    horizon: int | None = None
    """Steps of the task's oracle solution."""
    cost: float | None = 0.0
    """``None``: not known (an import's file gives none)."""
    latency: float | None = 0.0
    """Seconds; ``None``: not known."""
    task_revision: str = ""
    """Empty when the task is unversioned (e.g. an import without revisions)."""
    partial_score: float | None = None
    """The rubric's partial credit in [0, 1], if the task has a rubric."""

    def __post_init__(self) -> None:
        """Refuse a field of the wrong type or an outcome that contradicts itself, naming it,
        and give an outcome without a terminal reason the one it implies. Until the
        fifty-sixth round ``success="false"`` counted as a success (numpy reads text as
        true), ``success=None`` raised a ``TypeError`` from a sum, and a failure given no
        reason was counted in ``terminal_reasons`` as ``success`` (the old default)."""
        self._check_types()
        if not self.terminal_reason:
            object.__setattr__(self, "terminal_reason", self._implied_reason())
        self._check_reason()

    def _check_types(self) -> None:
        if not isinstance(self.task_id, str):
            raise ValueError(f"an outcome's task_id must be text, got {self.task_id!r}")
        if type(self.attempt) is not int and not _integer(self.attempt):
            raise ValueError(f"task {self.task_id!r}: attempt must be an integer, "
                             f"got {self.attempt!r}")  # fmt: skip
        for name in ("success", "valid"):
            if type(getattr(self, name)) not in _TRUTH_TYPES:
                raise ValueError(f"{self._where()}: {name} must be True or False, "
                                 f"got {getattr(self, name)!r}")  # fmt: skip
        if not isinstance(self.terminal_reason, str):
            raise ValueError(f"{self._where()}: terminal_reason must be text, "
                             f"got {self.terminal_reason!r}")  # fmt: skip
        for name in ("weight", "cost", "latency", "partial_score"):
            value = getattr(self, name)
            if value is None and name != "weight":
                continue
            if not _real(value) or value != value:  # NaN: None says "not known"
                raise ValueError(f"{self._where()}: {name} must be a number, got {value!r}")

    def _where(self) -> str:
        return f"task {self.task_id!r} attempt {self.attempt}"

    def _implied_reason(self) -> str:
        if not self.valid:
            return INVALID_PREFIXES[0]
        return "success" if self.success else "agent_failure"

    def _check_reason(self) -> None:
        """An invalid attempt's reason is an environment or grader failure and a valid
        one's is not: the invalid counts by reason are read from the reason and every
        other figure from *valid*, so an outcome that contradicts itself made them disagree
        (an invalid attempt counted as invalid "by reason" ``success``)."""
        reason = self.terminal_reason
        if (reason.split("/", 1)[0] in INVALID_PREFIXES) == self.valid:
            raise ValueError(
                f"{self._where()}: valid={bool(self.valid)} contradicts terminal_reason "
                f"{reason!r} (invalid: {' or '.join(INVALID_PREFIXES)})"
            )


_TRUTH_TYPES = (bool, np.bool_)


def _integer(value: Any) -> bool:
    """An integer (numpy's too) that is not a truth value."""
    return isinstance(value, numbers.Integral) and not isinstance(value, _TRUTH_TYPES)


def _real(value: Any) -> bool:
    """A real number (numpy's too) that is not a truth value: text such as "1" was read
    as 1.0."""
    return type(value) in (float, int) or (
        isinstance(value, numbers.Real) and not isinstance(value, _TRUTH_TYPES)
    )


@dataclass(frozen=True)
class _Record:
    """Base of the result types: plain frozen dataclasses that become JSON-able dicts."""

    def to_dict(self) -> dict[str, Any]:
        """Nested plain dicts; mapping keys stay Python values (``k`` is an int here,
        a string once passed through JSON). What ``dataclasses.asdict`` gives, without its
        deep copies (a report holds thousands of estimates)."""
        plain: dict[str, Any] = _plain(self)
        return plain


def _plain(value: Any) -> Any:
    if isinstance(value, _Record):
        return {name: _plain(getattr(value, name)) for name in _field_names(type(value))}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_plain(v) for v in value)
    return value


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(kind: type) -> tuple[str, ...]:
    if kind not in _FIELD_NAMES:
        _FIELD_NAMES[kind] = tuple(f.name for f in fields(kind))
    return _FIELD_NAMES[kind]


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
    scores 0 in the strict view, so does a task with invalid attempts and no valid one
    carrying a score when other tasks of the batch carry partial scores); None when none
    does."""
    scored: int = 0
    """The attempts *partial* is the mean over: the valid ones carrying a score, and in the
    strict view the invalid ones too (0 when *partial* is None). The partial score's
    denominator: an import may score only some attempts of a task."""


# --- per-task estimators -------------------------------------------------------------------


def check_whole(name: str, value: Any, least: int) -> None:
    """Refuse *value* unless it is an integer (not a truth value) of at least *least*,
    naming *name*: a k of 2.0 ended in numpy's IndexError, a seed of -1 in numpy's
    "expected non-negative integer", and an n_boot of -1 silently drew nothing."""
    if not _integer(value) or value < least:
        raise ValueError(f"{name} must be an integer of at least {least}, got {value!r}")


def _check_nck(n: int, c: int, k: int) -> None:
    for name, value in (("n", n), ("c", c), ("k", k)):
        if not _integer(value):
            raise ValueError(f"{name} must be an integer, got {value!r}")
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"k={k} must lie in 1..n={n}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of P(at least one of k attempts succeeds): 1 - C(n-c,k)/C(n,k).

    Binomials are exact integers and the ratio a Fraction, so n in the tens of
    thousands neither overflows nor cancels; only the final value is rounded, by
    :func:`inside`: it is 1.0 only when k > n - c (every k-subset holds a success), never
    for 1 - 1e-181 (pass@60 of 600 successes in 1,200 attempts), as in the reports' curves.
    """
    _check_nck(n, c, k)
    return inside(exact_value(n, c, "at", k))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of P(all k attempts succeed), tau-bench's pass^k: C(c,k)/C(n,k).

    Rounded by :func:`inside`: 0.0 only when k > c, never for a value below the smallest
    float (pass^590 of 600 successes in 1,200 attempts), as in the reports' curves."""
    _check_nck(n, c, k)
    return inside(exact_value(n, c, "hat", k))


def inside(value: Fraction) -> float:
    """The float nearest *value*, a rational in [0, 1], but one strictly between 0 and 1
    when *value* is: the nearest float of 1 - 1e-181 is 1.0 and of 1e-400 is 0.0, which
    claim a certainty the rational denies (and printed "1.000" and "0.000"). Then the float
    one ulp inside the end is given (0.9999999999999999, 5e-324), the rule
    :func:`pass_curves` follows for the reports' curves, so the library's scalar functions
    and a report give the same side of 0 and 1 for the same counts."""
    found = float(value)
    if found >= 1.0 and value < 1:
        return math.nextafter(1.0, 0.0)
    if found <= 0.0 and value > 0:
        return math.nextafter(0.0, 1.0)
    return found


def exact_value(n: int, c: int, name: str, k: int) -> Fraction:
    """A task's success rate (*name* ``"rate"``), pass@k (``"at"``) or pass^k (``"hat"``)
    as a rational."""
    if name == "rate":
        return Fraction(c, n)
    if name == "at":
        return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    return Fraction(math.comb(c, k), math.comb(n, k))


def pass_curves(n: npt.ArrayLike, c: npt.ArrayLike, kmax: int) -> tuple[FloatArray, FloatArray]:
    """pass@k and pass^k of many tasks for k = 1..kmax at once, as (tasks, kmax) arrays.

    C(c,k)/C(n,k) is the running product of (c-j)/(n-j) for j < k, so the whole curve
    costs one cumulative product instead of a binomial pair per k; each value carries
    at most about k rounding errors, relatively (checked against the exact rationals in
    the tests). pass@k is 1 minus the product of 1 - c/(n-j), summed as logarithms
    (``log1p``/``expm1``): 1 minus a product near 1 would cancel, leaving a pass@k of
    2e-6 (one success in 500,000 attempts) with only five correct digits.
    A task with fewer than k attempts has no value there: NaN. At k = 1 both are c/n
    rounded once, the float the success rate is. Counts that are no counts (c above n, a
    negative n) are refused: they gave a pass@1 of 1.5.
    """
    check_whole("kmax", kmax, 0)
    ns = np.asarray(n, dtype=np.float64)[:, None]
    cs = np.asarray(c, dtype=np.float64)[:, None]
    if ns.shape != cs.shape or not ((cs >= 0) & (cs <= ns) & (cs % 1 == 0) & (ns % 1 == 0)).all():
        raise ValueError("pass_curves needs one whole count c with 0 <= c <= n per task")
    j = np.arange(max(kmax, 0), dtype=np.float64)[None, :]
    # In place where possible: for 10,000 tasks and k up to 100 each temporary is 8 MB.
    safe = ns - j
    unsupported = safe <= 0
    safe[unsupported] = 1.0
    hat = _falling_ratio(cs - j, safe)
    at = np.divide(cs, safe)  # c/(n-j): the chance the (j+1)-th draw is a success
    np.minimum(at, 1.0, out=at)  # past n-c draws a success is certain: a factor of 0
    np.negative(at, out=at)
    with np.errstate(divide="ignore"):  # log1p(-1) = -inf: the product is 0
        np.log1p(at, out=at)
    np.cumsum(at, axis=1, out=at)
    np.expm1(at, out=at)
    np.negative(at, out=at)
    if at.shape[1]:
        # pass@1 is c/n, as pass^1 and the success rate are: the one division, correctly
        # rounded (1 - exp(log(1 - c/n)) was 0.24999999999999997 for 1 of 4, so a report
        # gave the one value two floats, and compare two p-values)
        at[:, 0] = hat[:, 0]
    at[unsupported] = np.nan
    hat[unsupported] = np.nan
    _keep_inside(at, hat, ns - cs, cs, j)
    return at, hat


def _keep_inside(
    at: FloatArray, hat: FloatArray, misses: FloatArray, cs: FloatArray, j: FloatArray
) -> None:
    """A value strictly between 0 and 1 made a float strictly between them (one ulp in).

    pass@k is exactly 1 only past the misses (k > n - c: every k-subset holds a success)
    and pass^k exactly 0 only past the successes (k > c); short of that they are not, but
    rounded to the nearest float pass@60 of 600 successes in 1,200 attempts (1 - 1e-181) is
    1.0, and pass^590 (C(600,590)/C(1200,590), below the smallest float) is 0.0, which the
    reports printed as "1.000" and "0.000", claiming a certainty the exact rationals deny
    (:func:`groundstate.report.numbers.fraction` prints them ">0.999" and "<0.001")."""
    below_one = (at >= 1.0) & (j < misses)  # j = k - 1: k <= n - c
    at[below_one] = np.nextafter(1.0, 0.0)
    above_zero = (hat <= 0.0) & (j < cs)  # k <= c
    hat[above_zero] = np.nextafter(0.0, 1.0)


def _falling_ratio(top: FloatArray, safe: FloatArray) -> FloatArray:
    """The running product along k of max(top, 0) / safe, computed in *top*'s memory."""
    np.clip(top, 0.0, None, out=top)
    np.divide(top, safe, out=top)
    np.cumprod(top, axis=1, out=top)
    return top


# --- counting -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskInfo:
    """What a task declares that statistics read."""

    weight: float = 1.0
    labels: tuple[str, ...] = ()
    horizon: int | None = None
    revision: str = ""
    """Empty when the task is unversioned."""


@dataclass(frozen=True)
class AttemptColumns:
    """The counted try of every attempt as columns: the form large batches are counted in."""

    task_ids: tuple[str, ...]
    """Distinct task ids, sorted."""
    task: npt.NDArray[np.int64]
    """Each attempt's task, as an index into ``task_ids``."""
    valid: npt.NDArray[np.bool_]
    success: npt.NDArray[np.bool_]
    partial: FloatArray
    """NaN where the attempt has no partial score."""


def task_counts(outcomes: Iterable[Outcome], view: View = "valid") -> list[TaskCounts]:
    """Count attempts and successes per task under one view, sorted by task id.

    Sorting makes every downstream resample independent of record order. One outcome per
    (task, attempt): the attempt's counted try (:func:`groundstate.analysis.final_runs`
    picks the last retry); a pair given twice raises ``ValueError`` naming it, since
    counting both would count the attempt twice in every denominator.
    """
    if view not in VIEWS:
        raise ValueError(f"unknown view {view!r}; expected one of {VIEWS}")
    records = list(outcomes)
    check_one_per_attempt(records)
    task_ids, task = encode([o.task_id for o in records])
    columns = AttemptColumns(
        task_ids=task_ids,
        task=task,
        valid=np.array([o.valid for o in records], dtype=np.bool_),
        success=np.array([o.success for o in records], dtype=np.bool_),
        partial=np.array(
            [np.nan if o.partial_score is None else o.partial_score for o in records],
            dtype=np.float64,
        ),
    )
    return count_columns(columns, _declared(records))[view]


def check_one_per_attempt(records: Sequence[Outcome]) -> None:
    """Refuse outcomes that give one (task, attempt) more than once: an invalid try and
    its rerun, or an imported row repeated, would both count, and every denominator (n,
    the invalid count, cost per attempt) would hold the attempt twice."""
    seen = Counter((o.task_id, o.attempt) for o in records)
    repeated = sorted(pair for pair, times in seen.items() if times > 1)
    if repeated:
        shown = ", ".join(f"{task!r} attempt {attempt} ({seen[task, attempt]}x)"
                          for task, attempt in repeated[:5])  # fmt: skip
        more = f" and {len(repeated) - 5} more" if len(repeated) > 5 else ""
        raise ValueError(
            f"{len(repeated)} (task, attempt) pair{'s' * (len(repeated) != 1)} given more "
            f"than once: {shown}{more}; give one outcome per attempt, its counted try "
            "(groundstate.analysis.final_runs keeps the last retry)"
        )


def _declared(records: list[Outcome]) -> dict[str, TaskInfo]:
    """Each task's declared attributes, which must agree across its attempts: disagreement
    means records of different task definitions were mixed into one batch."""
    declared: dict[str, TaskInfo] = {}
    for o in records:
        info = TaskInfo(o.weight, o.slice_labels, o.horizon, o.task_revision)
        if declared.setdefault(o.task_id, info) != info:
            raise ValueError(
                f"task {o.task_id!r}: attempts disagree on weight, labels, horizon or revision"
            )
    return declared


def encode(values: Sequence[str]) -> tuple[tuple[str, ...], npt.NDArray[np.int64]]:
    """Distinct *values* sorted, and each value's index among them: strings become integer
    codes once (a dict lookup each), so grouping and sorting never compare strings."""
    distinct = tuple(sorted(set(values)))
    index = {value: i for i, value in enumerate(distinct)}
    return distinct, np.fromiter((index[v] for v in values), dtype=np.int64, count=len(values))


def count_columns(
    columns: AttemptColumns, tasks: Mapping[str, TaskInfo]
) -> dict[View, list[TaskCounts]]:
    """Per-task counts of both views, sorted by task id, from one row per counted attempt.

    Each count is one ``np.bincount`` over the task codes: a million attempts cost no sort
    and no Python loop over attempts.
    """
    size = len(columns.task_ids)
    valid, success, partial = columns.valid, columns.success, columns.partial
    _check_partial(columns)

    def per_task(weights: npt.NDArray[Any]) -> FloatArray:
        return np.bincount(columns.task, weights=weights, minlength=size).astype(np.float64)

    total = np.bincount(columns.task, minlength=size).tolist()
    scored = valid & ~np.isnan(partial)
    # Python lists from here: 10,000 tasks read element by element from arrays cost more
    # than the counting itself.
    invalid = per_task(~valid).astype(np.int64).tolist()
    c = per_task(success & valid).astype(np.int64).tolist()
    n_scored = per_task(scored).astype(np.int64).tolist()
    score_sum = per_task(np.where(scored, partial, 0.0)).tolist()
    # A task none of whose valid attempts carries a score (every attempt invalid, or the
    # valid ones unscored) shows no partial score, but in a batch that has rubrics its
    # invalid attempts score 0 in the strict view, as they count as failures there: leaving
    # it out would let invalid attempts flatter the strict partial score. (Until the
    # twenty-fourth round only a task whose every attempt was invalid scored 0: one valid
    # unscored attempt beside three invalid ones dropped the task, raising the score.)
    rubrics = any(n_scored)
    counts: dict[View, list[TaskCounts]] = {"valid": [], "strict": []}
    valid_counts, strict_counts = counts["valid"], counts["strict"]
    default = TaskInfo()
    for row, task_id in enumerate(columns.task_ids):
        if not total[row]:
            continue
        info = tasks.get(task_id, default)
        if not (math.isfinite(info.weight) and info.weight > 0):
            raise ValueError(f"task {task_id!r}: weight must be positive, got {info.weight}")
        bad, scored_here, wins = invalid[row], n_scored[row], c[row]
        labels, horizon, revision = info.labels, info.horizon, info.revision
        mean_valid = score_sum[row] / scored_here if scored_here else None
        mean_strict = (
            score_sum[row] / (scored_here + bad) if scored_here or (bad and rubrics) else None
        )
        valid_counts.append(
            TaskCounts(task_id, total[row] - bad, wins, bad, info.weight, labels, horizon,
                       revision, mean_valid, scored_here)
        )  # fmt: skip
        strict_counts.append(
            TaskCounts(task_id, total[row], wins, bad, info.weight, labels, horizon,
                       revision, mean_strict, 0 if mean_strict is None else scored_here + bad)
        )  # fmt: skip
    return counts


def _check_partial(columns: AttemptColumns) -> None:
    """A partial score is a rubric's credit in [0, 1] (NaN: none): one of 1.5 or inf made a
    mean above 1 and an interval [1.27, 1.0] under the level rule, which assumes the range."""
    partial = columns.partial
    outside = np.flatnonzero(~np.isnan(partial) & ((partial < 0) | (partial > 1)))
    if outside.size:
        row = int(outside[0])
        raise ValueError(
            f"task {columns.task_ids[columns.task[row]]!r}: partial score {partial[row]!r} "
            f"outside [0, 1] ({outside.size} attempt{'s' * (outside.size != 1)})"
        )


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
