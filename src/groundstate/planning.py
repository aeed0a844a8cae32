"""Planning the next batch: how many tasks and attempts detect a given difference.

A suite mean over T tasks with K attempts each has variance (Miller 2024, "Adding Error Bars
to Evals", eq. for clustered means with resampled answers)::

    Var(mean) = sigma_b^2 / T + sigma_w^2 / (T K)

with sigma_b^2 the variance of the tasks' true success probabilities (between tasks) and
sigma_w^2 = E[p (1 - p)] the attempt noise inside a task (within tasks). More attempts only
shrink the second term; more tasks shrink both. A pilot batch estimates the two components
by the method of moments (ANOVA): the unbiased within-task variance of each task's attempts,
and the spread of task means less the part of it that attempt noise explains.

A comparison of two systems on the same tasks has the same form on the paired differences
d_i = p_B,i - p_A,i: from a pair of pilot batches, sigma_b^2 is the between-task variance of
the differences (what pairing leaves) and sigma_w^2 the sum of the two systems' attempt noise.
From one pilot batch, the second system is assumed to have the same components and no
between-task correlation with the first (sigma_b^2 and sigma_w^2 doubled): conservative, since
pairing on the same tasks removes the shared difficulty that a pair of pilots would measure.

The power is that of the test ``compare`` runs: the two-sided paired t test of the task
differences at level alpha on T - 1 degrees of freedom, from the noncentral t with
noncentrality delta / sqrt(Var) (the normal formula delta >= (z_{1-alpha/2} + z_{power}) *
sqrt(Var) promised a power of 0.8 where that test gives 0.70 at ten tasks). Unequal task
weights inflate the variance by T / T_eff (Kish's effective number of tasks, (sum w)^2 /
sum w^2) and leave T_eff - 1 degrees of freedom, as in ``compare``. Pure functions, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
from scipy import special

from groundstate.errors import GroundstateError
from groundstate.rounding import counted, decimals
from groundstate.stats import MIN_TASKS, TaskCounts

_NORMAL = NormalDist()

ATTEMPTS_GRID = (1, 2, 3, 4, 5, 8, 10, 16)
TASKS_GRID = (25, 50, 100, 200, 400)


class PlanningError(GroundstateError):
    """The pilot cannot support a plan (too few tasks or attempts to separate the variances)."""


@dataclass(frozen=True)
class VarianceComponents:
    """Between- and within-task variance of per-attempt success, from one pilot batch."""

    n_tasks: int
    attempts: float
    """Mean valid attempts per task in the pilot."""
    mean: float
    """Unweighted mean of the tasks' success rates."""
    between: float
    """sigma_b^2: variance of true per-task success probabilities (clipped at 0)."""
    within: float
    """sigma_w^2: mean unbiased variance of attempts within a task, E[p (1 - p)]."""
    icc: float | None
    """Intra-class correlation sigma_b^2 / (sigma_b^2 + sigma_w^2); None with no variance."""
    design_effect: float
    """1 + (K - 1) ICC at the pilot's K: how much K attempts per task fall short of K
    independent tasks."""


@dataclass(frozen=True)
class DifferenceVariance:
    """The variance of a difference between two systems' suite means, as components."""

    between: float
    within: float
    """Per attempt on each side: Var(task difference | task) = within / K."""
    paired_pilot: bool
    """True when measured on paired differences from two batches; False when assumed from one."""
    weight_inflation: float = 1.0
    """T / T_eff for the pilot's task weights (1 with equal weights)."""
    n_tasks: int = 0
    """Tasks the components were measured on: the pilot's tasks with a valid attempt, or
    with two pilots the tasks both share with valid attempts (0 when given by hand)."""

    def variance(self, tasks: int, attempts: int) -> float:
        """Var(mean difference) with *tasks* tasks and *attempts* attempts per task per side."""
        return self.weight_inflation * (self.between / tasks + self.within / (tasks * attempts))


@dataclass(frozen=True)
class Marginal:
    """What one more attempt per task, or one more task, buys at the pilot's design."""

    tasks: int
    attempts: int
    variance: float
    one_more_attempt: float
    """Reduction of Var(mean difference) from K + 1 attempts on every task (costs T runs)."""
    one_more_task: float
    """Reduction from T + 1 tasks (costs K runs per system)."""
    per_run_attempt: float
    per_run_task: float
    better: str
    """``"task"`` or ``"attempt"``: which buys more variance reduction per run."""


@dataclass(frozen=True)
class Plan:
    """Tasks needed per attempts-per-task, a power grid, and the marginal values."""

    delta: float
    power: float
    alpha: float
    components: tuple[VarianceComponents, ...]
    """One per pilot batch."""
    difference: DifferenceVariance
    pilot_tasks: int
    tasks_needed: dict[int, int]
    """K -> smallest T that detects delta with the power."""
    power_grid: dict[int, dict[int, float]]
    """T -> K -> power."""
    marginal: Marginal
    warnings: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- estimation -------------------------------------------------------------------------------


def variance_components(counts: Sequence[TaskCounts]) -> VarianceComponents:
    """Method-of-moments components from one pilot batch's per-task (n, c)."""
    used = [t for t in counts if t.n > 0]
    if len(used) < 2:
        raise PlanningError(
            f"the pilot has {counted(len(used), 'task')} with a valid attempt; "
            "planning needs at least 2"
        )
    if not any(t.n >= 2 for t in used):
        raise PlanningError(
            "every task of the pilot has a single valid attempt: run the pilot with "
            "--attempts 2 or more to separate attempt noise from task difficulty"
        )
    rates = np.array([t.c / t.n for t in used])
    noise = np.array([_within(t) for t in used if t.n >= 2])
    within = float(noise.mean())
    sampling = float(np.mean([within / t.n for t in used]))
    between = max(0.0, float(rates.var(ddof=1)) - sampling)
    attempts = float(np.mean([t.n for t in used]))
    total = between + within
    icc = between / total if total > 0 else None
    return VarianceComponents(
        n_tasks=len(used),
        attempts=attempts,
        mean=float(rates.mean()),
        between=between,
        within=within,
        icc=icc,
        design_effect=1 + (attempts - 1) * (icc or 0.0),
    )


def _within(task: TaskCounts) -> float:
    """Unbiased variance of a task's 0/1 attempts: p (1 - p) n / (n - 1)."""
    rate = task.c / task.n
    return rate * (1 - rate) * task.n / (task.n - 1)


def assumed_difference(counts: Sequence[TaskCounts]) -> DifferenceVariance:
    """One pilot: a second system like the first, uncorrelated across tasks (conservative)."""
    parts = variance_components(counts)
    return DifferenceVariance(
        between=2 * parts.between,
        within=2 * parts.within,
        paired_pilot=False,
        weight_inflation=_weight_inflation(counts),
        n_tasks=parts.n_tasks,
    )


def paired_difference(a: Sequence[TaskCounts], b: Sequence[TaskCounts]) -> DifferenceVariance:
    """Two pilots on the same tasks: components of the per-task differences."""
    by_id = {t.task_id: t for t in b if t.n > 0}
    pairs = [(t, by_id[t.task_id]) for t in a if t.n > 0 and t.task_id in by_id]
    revised = [x.task_id for x, y in pairs if x.revision != y.revision]
    if revised:
        raise PlanningError("task_revision differs between the pilots for: " + ", ".join(revised))
    if len(pairs) < 2:
        raise PlanningError(
            f"the two pilots share {counted(len(pairs), 'task')} with valid attempts; "
            "pairing needs 2"
        )
    shared = f"on the {len(pairs)} tasks the pilots share"
    within_a = _components([x for x, _ in pairs], f"A {shared}", 2).within
    within_b = _components([y for _, y in pairs], f"B {shared}", 2).within
    differences = np.array([y.c / y.n - x.c / x.n for x, y in pairs])
    sampling = float(np.mean([within_a / x.n + within_b / y.n for x, y in pairs]))
    return DifferenceVariance(
        between=max(0.0, float(differences.var(ddof=1)) - sampling),
        within=within_a + within_b,
        paired_pilot=True,
        weight_inflation=_weight_inflation([x for x, _ in pairs]),
        n_tasks=len(pairs),
    )


def _weight_inflation(counts: Sequence[TaskCounts]) -> float:
    weights = np.array([t.weight for t in counts if t.n > 0])
    weights = weights / weights.max()  # scale-free; a weight of 1e200 squared overflows
    effective = float(weights.sum()) ** 2 / float((weights**2).sum())
    return len(weights) / effective


# --- the plan ---------------------------------------------------------------------------------


def testable(difference: DifferenceVariance, tasks: int) -> bool:
    """Whether ``compare`` gives a p-value over *tasks* paired tasks: at least
    :data:`~groundstate.stats.MIN_TASKS` of them and a degree of freedom (Kish's effective
    number of tasks above 1 with the pilot's unequal weights). Below, the power is 0."""
    return tasks >= MIN_TASKS and tasks / difference.weight_inflation - 1 > 0


def power_of(
    difference: DifferenceVariance, tasks: int, attempts: int, delta: float, alpha: float
) -> float:
    """Power of the test ``compare`` runs on *tasks* paired tasks, when the true difference
    is delta: the two-sided paired t test on the task differences, with the degrees of
    freedom ``compare`` gives it (T - 1, or Kish's effective number of tasks - 1 with the
    pilot's unequal weights), from the noncentral t. 0 below
    :data:`~groundstate.stats.MIN_TASKS` tasks (or no degree of freedom), where ``compare``
    gives no p-value."""
    if not testable(difference, tasks):
        return 0.0
    df = tasks / difference.weight_inflation - 1
    se = math.sqrt(difference.variance(tasks, attempts))
    if se == 0:
        return 1.0
    critical = -float(special.stdtrit(df, alpha / 2))  # t(1 - alpha/2, df), kept for tiny alpha
    shift = abs(delta) / se
    # P(T' > c) + P(T' < -c) for T' noncentral t with noncentrality delta / SE
    below = _nct_cdf(df, shift, critical) - _nct_cdf(df, shift, -critical)
    return min(1.0, max(0.0, 1.0 - below))


def _nct_cdf(df: float, shift: float, x: float) -> float:
    """P(T' <= x) for the noncentral t. scipy's ``nctdtr`` gives NaN far in a tail (x = 2
    at a noncentrality of 30 on 99 df, where the value is below 1e-160): there it is 0 left
    of the noncentrality and 1 right of it (a NaN made a power of 0 where it is 1)."""
    value = float(special.nctdtr(df, shift, x))
    if math.isnan(value):
        return 0.0 if x < shift else 1.0
    return value


def tasks_needed(
    difference: DifferenceVariance, attempts: int, delta: float, power: float, alpha: float
) -> int:
    """Smallest T with the power at *attempts* per task under the test ``compare`` runs
    (:func:`power_of`), and at least :data:`~groundstate.stats.MIN_TASKS`: ``compare`` gives
    no p-value over fewer tasks, so fewer detect nothing however large the difference.

    The normal formula ``(z_{1-alpha/2} + z_power)^2 (between + within / K) / delta^2``
    (Miller's) is where the search starts: the t test needs at least as many tasks, since its
    quantile is wider and its SE estimated."""
    z = float(_NORMAL.inv_cdf(1 - alpha / 2) + _NORMAL.inv_cdf(power))
    per_task = difference.weight_inflation * (difference.between + difference.within / attempts)
    start = math.ceil(z**2 * per_task / delta**2) if z > 0 else MIN_TASKS
    low = high = max(MIN_TASKS, start)

    def enough(tasks: int) -> bool:
        return power_of(difference, tasks, attempts, delta, alpha) >= power

    step = 1
    while not enough(high):  # gallop up, then bisect: power grows with T
        low, high, step = high + 1, high + step, step * 2
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle + 1, high)
    return high


def marginal(difference: DifferenceVariance, tasks: int, attempts: int) -> Marginal:
    """Variance bought by one more attempt per task versus one more task, also per run."""
    now = difference.variance(tasks, attempts)
    by_attempt = now - difference.variance(tasks, attempts + 1)
    by_task = now - difference.variance(tasks + 1, attempts)
    per_attempt, per_task = by_attempt / tasks, by_task / attempts
    return Marginal(
        tasks=tasks,
        attempts=attempts,
        variance=now,
        one_more_attempt=by_attempt,
        one_more_task=by_task,
        per_run_attempt=per_attempt,
        per_run_task=per_task,
        better="task" if per_task >= per_attempt else "attempt",
    )


def plan(
    pilots: Sequence[Sequence[TaskCounts]],
    *,
    delta: float = 0.05,
    power: float = 0.8,
    alpha: float = 0.05,
) -> Plan:
    """The plan from one pilot batch (assumed second system) or two (paired differences)."""
    _check_targets(delta, power, alpha)
    if len(pilots) not in (1, 2):
        raise ValueError("plan takes one or two pilot batches")
    components = tuple(_components(p, "AB"[i], len(pilots)) for i, p in enumerate(pilots))
    difference = assumed_difference(pilots[0]) if len(pilots) == 1 else paired_difference(*pilots)
    _check_variation(difference)
    pilot_tasks = difference.n_tasks  # with two pilots, the tasks they share
    pilot_attempts = _design_attempts(components[0])
    attempts = sorted({*ATTEMPTS_GRID, pilot_attempts})
    needed = {k: tasks_needed(difference, k, delta, power, alpha) for k in attempts}
    grid = {
        t: {k: power_of(difference, t, k, delta, alpha) for k in attempts}
        for t in sorted({pilot_tasks, *TASKS_GRID})
    }
    return Plan(
        delta=delta,
        power=power,
        alpha=alpha,
        components=components,
        difference=difference,
        pilot_tasks=pilot_tasks,
        tasks_needed=needed,
        power_grid=grid,
        marginal=marginal(difference, pilot_tasks, pilot_attempts),
        warnings=_unshared(pilots) + _warnings(difference, needed, pilot_tasks),
    )


def _design_attempts(parts: VarianceComponents) -> int:
    """The pilot's attempts per task K as a whole number: its mean rounded half up, as every
    figure is (Python's ``round`` rounds half to even: a mean of 2.5 gave K = 2 and one of
    3.5 K = 4), and at least 1."""
    return max(1, math.floor(parts.attempts + 0.5))


def _components(counts: Sequence[TaskCounts], name: str, pilots: int) -> VarianceComponents:
    """:func:`variance_components`; with two pilots a refusal names the pilot it is about."""
    try:
        return variance_components(counts)
    except PlanningError as exc:
        if pilots == 1:
            raise
        raise PlanningError(f"pilot {name}: {exc}") from None


def _check_targets(delta: float, power: float, alpha: float) -> None:
    # Inside the ranges, the sums must still be computable in floats: 1 - alpha/2 rounds to 1
    # for alpha below about 1e-16 (no normal quantile), and delta^2 underflows to 0.
    if not 0 < delta <= 1 or delta**2 == 0:
        raise PlanningError(f"--delta must lie in (0, 1] (and not underflow), got {delta}")
    if not 0 < power < 1:
        raise PlanningError(f"--power must lie in (0, 1), got {power}")
    if not 0 < alpha < 1 or 1 - alpha / 2 == 1:
        raise PlanningError(f"--alpha must lie in (0, 1) (at least 1e-15), got {alpha}")


def _check_variation(difference: DifferenceVariance) -> None:
    """A variance of 0 sizes nothing: it would promise power 1 with two tasks."""
    if difference.between + difference.within > 0:
        return
    if difference.paired_pilot:
        seen = (
            "in each pilot every attempt of a task ended the same way, and every task differs "
            "between the pilots by the same amount"
        )
    else:
        seen = "every attempt of every task ended the same way"
    raise PlanningError(
        f"the pilot shows no variation ({seen}): a variance of 0 cannot size a batch; pilot "
        "on tasks the system sometimes fails (or passes)"
    )


def _unshared(pilots: Sequence[Sequence[TaskCounts]]) -> tuple[str, ...]:
    """Two pilots: the tasks left out of their paired difference, counted and named (the
    components table still describes each pilot whole)."""
    if len(pilots) != 2:
        return ()
    a, b = ({t.task_id for t in pilot if t.n > 0} for pilot in pilots)
    if a == b:
        return ()
    only_a, only_b = sorted(a - b), sorted(b - a)
    return (
        f"the pilots share {counted(len(a & b), 'task')} with valid attempts and the difference is "
        f"measured on those alone: left out {len(only_a)} only in pilot A "
        f"({_names(only_a)}) and {len(only_b)} only in pilot B ({_names(only_b)})",
    )


def _names(ids: list[str], shown: int = 5) -> str:
    more = f", ... {len(ids) - shown} more" if len(ids) > shown else ""
    return ", ".join(ids[:shown]) + more if ids else "none"


def _warnings(
    difference: DifferenceVariance, needed: dict[int, int], pilot_tasks: int
) -> tuple[str, ...]:
    found = []
    if pilot_tasks < 10:
        found.append(
            f"the pilot has {counted(pilot_tasks, 'task')}: the variance estimates are rough; "
            "treat the numbers as an order of magnitude"
        )
    if min(needed.values()) > pilot_tasks:
        found.append(
            f"even with many attempts the plan needs more tasks than the pilot has "
            f"({min(needed.values())} > {pilot_tasks}): write more tasks"
        )
    if not difference.paired_pilot:
        found.append(
            "one pilot batch: the second system is assumed alike and uncorrelated across tasks "
            "(conservative); two pilot batches measure the paired variance"
        )
    if difference.weight_inflation > 1.0 + 1e-9:
        found.append(
            "unequal task weights inflate the variance by "
            + decimals(difference.weight_inflation, 2)
        )
    return tuple(found)
