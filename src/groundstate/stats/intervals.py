"""Uncertainty over tasks: the clustered SE, the interval rule, and the shared bootstrap.

The interval rule (documented with its simulated coverage in docs/statistics.md):

* Fewer than :data:`MIN_TASKS` tasks: no interval ("n/a"), with the reason. Below that a
  spread between tasks cannot be estimated well enough to be worth printing.
* Otherwise the Agresti-Coull interval on the effective number of trials implied by the
  task-clustered (CR1) standard error, with Student's t quantile on T-1 degrees of freedom
  (:func:`agresti_coull`): the t interval ``estimate +- t(0.975, T-1) * SE_CR1`` away from
  the ends of the range, asymmetric and never collapsing near them. The t quantile widens
  it when tasks are few (z quantiles on the bootstrap's CR0 scale covered 87-91% at 10
  tasks); the score form fixes the plain t interval's under-coverage near 0 and 1. With
  unequal weights the degrees of freedom are Kish's effective number of tasks minus 1
  (:func:`degrees_of_freedom`).
  A difference b - a keeps the symmetric ``estimate +- t(0.975, T-1) * SE_CR1`` (clipped to
  [-1, 1]), so it excludes 0 exactly when the paired t test's p-value is below 0.05.
* Every task at one value v, so the spread is zero: an exact bound instead of a zero-width
  interval. A value in [lo, hi] with mean mu is at least v with probability at most
  (mu - lo) / (v - lo) (Markov), so T tasks all at v have probability at most that to the
  power T; the bound is where this equals alpha / 2 (with unequal weights, where the
  largest such chance at that weighted mean does: :func:`exact_reach`), on each side:
  one-sided at an end of the range (v = hi), two-sided inside it.

* A pass@k or pass^k curve follows its direction (:func:`coherent_curve`): pass@k's lower
  end is the lowest at k or any larger k of the curve, pass^k's upper end the highest.

The cluster bootstrap (percentile, tasks resampled with a fixed seed) is kept as a second
opinion on skew. One matrix of task draws serves every metric and every k of a summary; it
is drawn in chunks of rows so memory stays bounded whatever the number of tasks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

import numpy as np
import numpy.typing as npt
from scipy import special

from groundstate.rounding import SMALLEST_P, decimals, faithful, significant
from groundstate.stats.outcomes import FloatArray, _Record, check_whole, exact_value

CONFIDENCE = 0.95
LEVEL = (0.0, 1.0)
"""Range of a suite value (a rate, pass@k, pass^k, a partial score)."""
DIFFERENCE = (-1.0, 1.0)
"""Range of a difference b - a of two such values."""
MIN_TASKS = 5
"""Fewer tasks than this: intervals and p-values are "n/a" (the estimate is still shown)."""
T_CR1 = "t_cr1"
"""Intervals of paired differences, and the paired t test's p-values."""
AC_T_CR1 = "agresti_coull_t_cr1"
"""Intervals of levels (module docstring)."""
EXACT_BOUND = "exact_bound"
MOVER = "mover"
"""An unpaired difference: Newcombe's square-and-add (MOVER) on the two sides' own intervals
(:func:`groundstate.stats.compare.unpaired_difference`)."""
NO_INTERVAL = "none"
BOOTSTRAP_METHOD = "cluster_bootstrap_percentile"
CHUNK_ELEMENTS = 2_000_000
"""Draws (rows x tasks) held in memory at once by the bootstrap."""
_TIE = 1e-12


@dataclass(frozen=True)
class Estimate(_Record):
    """A weighted suite value, its 95% interval under the interval rule, and its denominators."""

    estimate: float
    ci_low: float | None
    """None when the rule gives no interval (see ``note``)."""
    ci_high: float | None
    n_tasks: int
    attempts: int
    """Attempts counted over all ``n_tasks`` tasks."""
    min_n: int
    max_n: int
    se: float | None = None
    """Task-clustered (CR1) standard error; None with fewer than two tasks, where every task
    has one value (a sample spread of 0 is no known SE of 0: the interval is the exact bound
    or n/a), and for a square-and-add difference (``mover``), which rests on no SE."""
    df: float | None = None
    """Degrees of freedom of the t quantile (T - 1, or Kish's effective number of tasks - 1
    with unequal weights: :func:`degrees_of_freedom`); None for an exact bound and ``mover``."""
    method: str = NO_INTERVAL
    """``agresti_coull_t_cr1`` (a level), ``t_cr1`` (a paired difference), ``mover`` (an
    unpaired difference), ``exact_bound`` or ``none``."""
    note: str = ""
    """Why there is no interval, or which special rule made it."""
    boot_low: float | None = None
    """Percentile cluster-bootstrap interval, a second opinion: None where not computed, and
    where the rule's interval is not built on a spread between tasks (fewer than
    :data:`MIN_TASKS` tasks, every task at one value: a bootstrap there is zero-width)."""
    boot_high: float | None = None


@dataclass(frozen=True)
class Interval:
    """What the interval rule says about one set of task values."""

    low: float | None
    high: float | None
    se: float | None
    df: float | None
    method: str
    note: str


def weighted_mean(values: npt.ArrayLike, weights: npt.ArrayLike) -> float:
    v, w = np.asarray(values, dtype=np.float64), _scaled(weights)
    return float(_weighted_means(v[None, :], w)[0])


def _scaled(weights: npt.ArrayLike) -> FloatArray:
    """*weights* divided by the largest: every value here is unchanged by scaling the
    weights, and at most 1 they neither overflow when summed or squared (an import's weight
    of 1e308 is finite and positive) nor lose the mean (0.5 of 0 and 1 at 1e308 each was 0)."""
    w = np.asarray(weights, dtype=np.float64)
    scaled: FloatArray = w / np.max(w) if w.size else w
    return scaled


def clustered_se(
    values: Sequence[float] | FloatArray, weights: Sequence[float] | FloatArray
) -> float | None:
    """Task-clustered standard error of the weighted mean of per-task values.

        SE = sqrt( sum_i w_i^2 (p_i - pbar)^2 ) / sum_i w_i * sqrt(T / (T - 1))

    with p_i task i's value, w_i its weight, pbar the weighted mean and T the
    number of tasks: the cluster-robust (sandwich) variance with tasks as clusters,
    plus the usual small-sample correction (CR1). With equal weights it is the standard
    deviation of task values over sqrt(T). Attempts inside a task share its
    difficulty, so treating them as independent would understate the error.
    None when T < 2: one task says nothing about spread between tasks.
    """
    p = np.asarray(values, dtype=np.float64)[None, :]
    w = _scaled(weights)
    return _clustered_ses(p, w, _weighted_means(p, w))[0]


# Many metrics over the same tasks (pass@k for every k, say) are computed together: one row
# of a (metrics, tasks) array each. A row of a C-ordered array is summed exactly as the same
# values in a 1-D array are (numpy's pairwise sum over a contiguous run), so every value is
# bit for bit what one metric alone gives.


def _weighted_means(columns: FloatArray, w: FloatArray) -> FloatArray:
    """The weighted mean of each row of *columns* (metrics, tasks; C-ordered)."""
    means: FloatArray = np.sum(w * columns, axis=1) / np.sum(w)
    return means


def _off_the_ends(
    means: FloatArray, columns: FloatArray, bounds: tuple[float, float]
) -> FloatArray:
    """*means* kept in the range *bounds*, and off its ends where not every task is there:
    a weighted mean of values not all at 1 is below 1. Rounded to the nearest float, four
    tasks at 1 and one at 1 - 1e-17 (a pass@k that is not certain) averaged to 1.0, printed
    "1.000" where the exact mean prints ">0.999", and 1e-300 beside four zeros to 0.0
    ("0.000" for "<0.001"). Such a mean is given as the float one ulp inside the end."""
    lo, hi = bounds
    kept = np.clip(means, lo, hi)
    below = (kept >= hi) & np.any(columns < hi, axis=1)
    above = (kept <= lo) & np.any(columns > lo, axis=1)
    inside: FloatArray = np.where(below, np.nextafter(hi, lo), kept)
    return np.where(above, np.nextafter(lo, hi), inside)


def _clustered_ses(columns: FloatArray, w: FloatArray, means: FloatArray) -> list[float | None]:
    """:func:`clustered_se` of each row of *columns*, given their weighted *means*."""
    metrics, tasks = columns.shape
    if tasks < 2:
        return [None] * metrics
    sums = np.sum(w**2 * (columns - means[:, None]) ** 2, axis=1)
    total, small = float(np.sum(w)), math.sqrt(tasks / (tasks - 1))
    return [math.sqrt(spread) / total * small for spread in sums.tolist()]


# Student's t through scipy.special, the functions scipy.stats.t calls (same values, NaN for
# df <= 0 included): importing scipy.stats costs about 0.75 s of CPU, a third of a report.
@cache
def t_quantile(df: float, confidence: float = CONFIDENCE) -> float:
    return float(special.stdtrit(df, 1 - (1 - confidence) / 2))


def two_sided_p(statistic: float, df: float) -> float:
    """P(|T| >= |statistic|) for Student's t with *df* degrees of freedom, at least
    :data:`~groundstate.rounding.SMALLEST_P` (it underflowed to 0 from t near 40 at 1,000
    df)."""
    return floored_p(float(2 * special.stdtr(df, -abs(statistic))))


def floored_p(p: float) -> float:
    """*p*, but at least :data:`~groundstate.rounding.SMALLEST_P`: a p-value that underflowed
    to 0 is not a certainty."""
    return max(p, SMALLEST_P)


def interval_rule(values: FloatArray, weights: FloatArray, *, difference: bool = False) -> Interval:
    """The interval of the weighted mean of *values* (module docstring): of a level in
    [0, 1], or with *difference* of a difference in [-1, 1]."""
    columns = np.asarray(values, dtype=np.float64)[None, :]
    return _rules(columns, np.asarray(weights, dtype=np.float64), difference)[1][0]


def _rules(
    columns: FloatArray, weights: FloatArray, difference: bool
) -> tuple[list[float], list[Interval]]:
    """The weighted mean and :func:`interval_rule` of each row of *columns* (metrics, tasks)."""
    bounds = DIFFERENCE if difference else LEVEL
    tasks = columns.shape[1]
    weights = _scaled(weights)  # every value below is unchanged by it
    means = _weighted_means(columns, weights)
    estimates = _off_the_ends(means, columns, bounds).tolist()
    agreeing = (np.ptp(columns, axis=1) <= _TIE).tolist() if tasks else [False] * len(estimates)
    # Every task at one value: a spread of 0 is the sample's, not a known SE of 0 (printed as
    # SE 0.000 beside an exact bound or "n/a", it claimed the certainty they deny).
    ses = [
        None if agree else se
        for se, agree in zip(_clustered_ses(columns, weights, means), agreeing, strict=True)
    ]
    if tasks < MIN_TASKS:
        note = f"n/a: {tasks} task{'s' * (tasks != 1)}, intervals need at least {MIN_TASKS}"
        return estimates, [Interval(None, None, se, None, NO_INTERVAL, note) for se in ses]
    # the exact reach bounds every level and difference (:func:`near_agreement`), not only
    # agreeing rows
    reach = exact_reach(weights)
    tops, bottoms = np.max(columns, axis=1).tolist(), np.min(columns, axis=1).tolist()
    df = degrees_of_freedom(weights)
    q = t_quantile(df)
    rules = []
    for row, (estimate, se, agree) in enumerate(zip(estimates, ses, agreeing, strict=True)):
        if agree:
            apart = bool(np.any(columns[row] != columns[row, 0]))
            rules.append(_agreeing(float(columns[row, 0]), tasks, reach, bounds, apart))
            continue
        assert se is not None  # tasks >= MIN_TASKS >= 2
        if se == 0 or df <= 0:  # the heaviest task outweighs the rest beyond float precision
            note = "n/a: one task's weight leaves no measurable spread between tasks"
            rules.append(Interval(None, None, se, None, NO_INTERVAL, note))
        elif difference:  # t, each end as far as the exact bound of every task at one end
            low, high = max(-1.0, estimate - q * se), min(1.0, estimate + q * se)
            low, high, note = near_agreement(low, high, tops[row], bottoms[row], reach, bounds)
            rules.append(Interval(low, high, se, df, T_CR1, note))
        else:
            low, high = agresti_coull(estimate, se, q, bounds)
            low, high, note = near_agreement(low, high, tops[row], bottoms[row], reach)
            rules.append(Interval(low, high, se, df, AC_T_CR1, note))
    return estimates, rules


def agreement_ends(
    top: float, bottom: float, reach: float, bounds: tuple[float, float] = LEVEL
) -> tuple[float, float]:
    """The exact bound's lower end had every task been at *top* (the highest task value)
    and its upper end had every task been at *bottom* (the lowest), with *reach* the exact
    reach (:func:`exact_reach`) at the level: ``top * reach`` and ``1 - (1 - bottom) *
    reach`` for a level (``lo + (top - lo) * reach`` and ``hi - (hi - bottom) * reach`` on
    the range *bounds*: [-1, 1] for a difference). An interval reaches at least that far
    (:func:`near_agreement`)."""
    lo, hi = bounds
    return lo + (top - lo) * reach, hi - (hi - bottom) * reach


def near_agreement(
    low: float,
    high: float,
    top: float,
    bottom: float,
    reach: float,
    bounds: tuple[float, float] = LEVEL,
) -> tuple[float, float, str]:
    """An interval widened to reach at least as far as the exact bound of the tasks had
    they all been at their highest value (lower end) or all at their lowest (upper end).
    Every task at 1 gets the exact bound [reach, 1] (0.6915 at 10 tasks), but nine at 1 and
    one at 0.999 got [0.9992, 1]: the rule took the tiny spread near an end for the spread
    between tasks, so a worse batch claimed a far higher lower end than a better one, and a
    partial score near 1 missed wherever a suite drew none of a population's few low tasks.
    Now the interval goes to the exact bound continuously as the tasks come to agree; where
    they spread widely (a task at 0 and one at 1) the rule's interval is the wider and stays
    as it was. A level's Agresti-Coull interval (since the seventeenth round) and a paired
    difference's t interval (*bounds* [-1, 1], since the nineteenth: nine tasks moved by +1
    and one by +0.75 gave [+0.918, +1] beside the exact bound [+0.383, +1] of all ten at +1,
    and 10 tasks of a population where 15% of tasks got worse covered 0.84)."""
    floor, ceiling = agreement_ends(top, bottom, reach, bounds)
    what, sign = ("value", "") if bounds == LEVEL else ("difference", "+")
    said = []
    if floor < low - _TIE:
        low = floor
        said.append(f"lower end widened to the exact bound of every task at the highest "
                    f"{what}, {_shown(top, sign)}")  # fmt: skip
    if ceiling > high + _TIE:
        high = ceiling
        said.append(f"upper end widened to the exact bound of every task at the lowest "
                    f"{what}, {_shown(bottom, sign)}")  # fmt: skip
    return low, high, "; ".join(said)


def _shown(value: float, sign: str = "") -> str:
    """*value* with three decimals, or more where three would round it onto -1, 0 or 1;
    *sign* ``"+"`` for a difference."""
    shown = decimals(value, 3, sign=sign)
    if float(shown) in (-1.0, 0.0, 1.0) and abs(value - float(shown)) > _TIE:
        shown = f"{'+' if sign and value > 0 else ''}{significant(value, 6)}"
    return shown


def degrees_of_freedom(weights: FloatArray) -> float:
    """Degrees of freedom of the t quantile: T - 1 with equal weights, else Kish's effective
    number of tasks (sum w)^2 / sum w^2 minus 1. A few heavy tasks carry the weighted mean
    and its CR1 SE is estimated from little more than them: with one task of ten at weight
    10, T - 1 = 9 df covered 87% in simulation, the effective 2.3 df 98%."""
    tasks = len(weights)
    effective = float(np.sum(weights)) ** 2 / float(np.sum(weights**2))
    return tasks - 1 if effective >= tasks - 1e-9 else effective - 1


def agresti_coull(
    estimate: float, se: float, q: float, bounds: tuple[float, float] = LEVEL
) -> tuple[float, float]:
    """The Agresti-Coull interval on the effective number of trials the CR1 SE implies.

    On the unit scale u (the range mapped to [0, 1]) the SE of a mean of independent 0/1
    trials would be sqrt(u(1-u)/n); the clustered SE s gives n_eff = u(1-u)/s^2 (at least
    T - 1 for values in the range). The interval adds q^2/2 successes and q^2/2 failures to
    n_eff and takes q standard errors around the shifted centre, with *q* the t quantile on
    the degrees of freedom (T - 1 with equal weights). Far from the ends it is the t
    interval; near them it is asymmetric and never collapses, where estimate +- q s (a Wald
    interval) covered as little as 86%.
    """
    lo, hi = bounds
    width = hi - lo
    u, s = (estimate - lo) / width, se / width
    n_eff = u * (1 - u) / s**2
    total = n_eff + q**2
    centre = (u * n_eff + q**2 / 2) / total
    half = q * math.sqrt(centre * (1 - centre) / total)
    return lo + width * max(0.0, centre - half), lo + width * min(1.0, centre + half)


def exact_reach(weights: FloatArray, alpha: float = 1 - CONFIDENCE) -> float:
    """The exact one-sided bound, on the unit scale, when every task is at the top: the
    smallest weighted mean of task means m_i in [0, 1] at which all tasks can be at the top
    with probability *alpha* / 2 (that probability is at most the product of the m_i).

    The largest product at a given weighted mean puts m_i = min(1, t / w_i) (Lagrange), so
    the bound solves sum over {w_i > t} of log(w_i / t) = log(2 / alpha) for t and is
    sum_i min(w_i, t) / sum_i w_i. With equal weights it is (alpha / 2)^(1/T). Kish's
    effective number of tasks in place of T is not a bound: at weights such as 2, 10, 10,
    10, 2, 3.25, ... all tasks reach the top with chance 0.036, not 0.025, at its value.
    """
    return reach_of(weights)(alpha)


def reach_of(weights: FloatArray) -> Callable[[float], float]:
    """:func:`exact_reach` of *weights* as a function of alpha, the weights sorted once (an
    inverted interval asks for it at many alphas)."""
    w = np.sort(np.asarray(weights, dtype=np.float64))[::-1]
    if w[0] == w[-1]:  # equal weights: (alpha / 2)^(1/T)
        return lambda alpha: (alpha / 2) ** (1 / len(w))
    logs = np.cumsum(np.log(w))
    sizes = np.arange(1, len(w) + 1)
    following = np.append(w[1:], 0.0)
    total = float(np.sum(w))

    def reach(alpha: float) -> float:
        # the j heaviest tasks below 1: log t_j = (sum of their log w - log(2 / alpha)) / j,
        # for every j at once; the first j whose t_j reaches the next weight (the last does)
        t = np.exp((logs - math.log(2 / alpha)) / sizes)
        first = int(np.argmax(t >= following))
        return float(np.sum(np.minimum(w, t[first])) / total)

    return reach


def top_chance(weights: FloatArray, mean: float) -> float:
    """The largest chance that every task is at the top of its range when the weighted
    mean of the task means (on the unit scale) is *mean*: the product of m_i = min(1, t/w_i)
    with t set by the mean (:func:`exact_reach` inverts it). With equal weights mean^T."""
    w = np.sort(_scaled(weights))
    target = mean * float(np.sum(w))
    below = np.concatenate([[0.0], np.cumsum(w)])  # sum of the j lightest weights
    for j in range(len(w)):
        # the j lightest tasks at 1 (w_i <= t), the rest at t / w_i
        t = (target - float(below[j])) / (len(w) - j)
        if t <= w[j]:
            return float(np.prod(np.minimum(1.0, t / w)))
    return 1.0


def _agreeing(
    value: float, tasks: int, reach: float, bounds: tuple[float, float], apart: bool = False
) -> Interval:
    """Every task has the same value v: the exact bound (*reach*: :func:`exact_reach` of the
    tasks' weights). A task value X in [lo, hi] is at least v with probability at most
    (mu - lo) / (v - lo) (Markov's inequality on X - lo), so all tasks are at v with chance
    at most alpha / 2 below ``lo + (v - lo) * reach``, and likewise above ``hi - (hi - v) *
    reach``: one-sided at an end of the range (v = hi gives [lo + (hi - lo) reach, hi]),
    two-sided inside it, never zero-width (and with no SE: :func:`_rules`)."""
    lo, hi = bounds
    shown = decimals(value, 3)
    if float(shown) in (lo, 0.0, hi) and abs(value - float(shown)) > _TIE:
        shown = significant(value, 6)  # 0.9996 on every task is not "the value 1.000"
    said = f"all {tasks} tasks have the value {shown}"
    for end in bounds:
        if abs(value - end) <= _TIE:
            if apart or value != end:  # pass@k of 1 - 1e-181 is not 1 (the estimate: ">0.999")
                said = f"all {tasks} tasks within {_TIE:g} of {decimals(end, 3)}"
            value = end
            said += ": exact one-sided bound"
            break
    else:
        said += ": exact bound (Markov's inequality on each side)"
    low, high = lo + (value - lo) * reach, hi - (hi - value) * reach
    return Interval(low, high, None, None, EXACT_BOUND, said)


def make_estimate(
    values: FloatArray,
    weights: FloatArray,
    ns: Sequence[int] | npt.NDArray[np.int64],
    boot: tuple[float, float] | None = None,
    *,
    difference: bool = False,
) -> Estimate:
    """The weighted mean of per-task *values* with the rule's interval and its denominators."""
    column = np.asarray(values, dtype=np.float64)[:, None]
    return make_estimates(column, weights, ns, [boot], difference=difference)[0]


def make_estimates(
    values: FloatArray,
    weights: FloatArray,
    ns: Sequence[int] | npt.NDArray[np.int64],
    boots: Sequence[tuple[float, float] | None],
    *,
    difference: bool = False,
) -> list[Estimate]:
    """:func:`make_estimate` of each column of *values* (tasks, metrics) over the same tasks,
    weights and denominators, with its bootstrap interval from *boots*: computed together,
    each equal to what the column alone gives."""
    columns = np.ascontiguousarray(np.asarray(values, dtype=np.float64).T)
    if columns.shape[0] == 0:
        return []
    estimates, rules = _rules(columns, np.asarray(weights, dtype=np.float64), difference)
    counts = np.asarray(ns)
    attempts, low_n, high_n = int(np.sum(counts)), int(np.min(counts)), int(np.max(counts))
    return [
        Estimate(
            estimate=estimate,
            ci_low=rule.low,
            ci_high=rule.high,
            n_tasks=columns.shape[1],
            attempts=attempts,
            min_n=low_n,
            max_n=high_n,
            se=rule.se,
            df=rule.df,
            method=rule.method,
            note=rule.note,
            boot_low=_finite(boot[0]) if boot and _spread(rule) else None,
            boot_high=_finite(boot[1]) if boot and _spread(rule) else None,
        )
        for estimate, rule, boot in zip(estimates, rules, boots, strict=True)
    ]


def exact_mean(
    ns: npt.ArrayLike, cs: npt.ArrayLike, weights: npt.ArrayLike, name: str, k: int
) -> Fraction:
    """The weighted mean of the tasks' success rates (*name* ``"rate"``), pass@k (``"at"``)
    or pass^k (``"hat"``) from their counted attempts *ns* and successes *cs*, in exact
    rationals, each weight the decimal it was declared as (:func:`declared`)."""
    w = [declared(x) for x in np.asarray(weights, dtype=np.float64).tolist()]
    pairs = zip(np.asarray(ns).tolist(), np.asarray(cs).tolist(), strict=True)
    values = [exact_value(int(n), int(c), name, k) for n, c in pairs]
    total = sum((v * x for v, x in zip(values, w, strict=True)), Fraction(0))
    return total / sum(w)


def declared(weight: float) -> Fraction:
    """A task weight as the decimal it was written as (in suite.yaml or an imported file),
    the shortest that reads back as its float: weights 0.1 and 0.3 on rates 1/4 and 1/2 mean
    exactly 0.4375, which prints "0.438" and passes ``--fail-under success_rate=0.4375``.
    Taken as the binary rationals the floats are (0.1000000000000000055..., 0.2999999999999
    99988...) the mean was a hair below the tie: the report printed "0.437" and the gate
    failed, where anyone re-computing from the declared weights finds the threshold met."""
    return Fraction(repr(weight))


def printed_exactly(found: Estimate, exact: Callable[[], Fraction]) -> Estimate:
    """*found* with its estimate :func:`~groundstate.rounding.faithful` to the rational
    *exact* gives (:func:`exact_mean`, or a difference of two): called only for an estimate
    next to a rounding tie."""
    value = faithful(found.estimate, exact)
    return found if value == found.estimate else replace(found, estimate=value)


def coherent_curve(curve: Sequence[Estimate], rising: bool) -> list[Estimate]:
    """The intervals of a curve over k = 1, 2, ... made to agree with its direction: pass@k
    (*rising*) cannot decrease in k, so its lower end at k is lowered to the lowest at any
    larger k; pass^k cannot increase, so its upper end is raised to the highest at any larger
    k. Each interval only widens (coverage cannot drop), and a value skewed toward the end
    (pass@10 of 20 attempts: most tasks near 1, a few far below that a suite of 10 tasks
    often misses) borrows the caution of the larger k, where task values are 0 or 1 and the
    rule covers: nine tasks at 1 and one at 0.933 (pass@4 of 6 attempts) were [0.950, 1]
    while pass@5, every task at 1, was the exact bound [0.6915, 1]. Intervals the rule does not
    give (n/a) are left as they are and bound nothing."""
    out = list(curve)
    name, end = ("pass@", "ci_low") if rising else ("pass^", "ci_high")
    held: tuple[float, int] | None = None  # the most cautious end so far, from the top
    for index in range(len(out) - 1, -1, -1):
        found = out[index]
        value = getattr(found, end)
        if value is None:
            continue
        if held is not None and (held[0] < value if rising else held[0] > value):
            said = (f"{'lower' if rising else 'upper'} end widened to {name}{held[1]}'s "
                    f"({name}k {'cannot exceed' if rising else 'is at least'} {name}{held[1]} "
                    f"for k < {held[1]})")  # fmt: skip
            note = f"{found.note}; {said}" if found.note else said
            out[index] = replace(found, **{end: held[0]}, note=note)  # type: ignore[arg-type]
        else:
            held = (value, index + 1)
    return out


def one_value(estimates: Sequence[Estimate]) -> list[Estimate]:
    """Estimates of one value over the same tasks (the success rate, pass@1 and pass^1: c/n
    of each task) given one interval, the widest ends among them: pass@1's lower end follows
    the pass@k curve and pass^1's upper end the pass^k curve (:func:`coherent_curve`), so the
    success rate beside them was the rule's alone. Nine tasks at 10 of 10 and one at 9 of 10
    showed a success rate of 0.990 [0.926, 1] beside pass@1 0.990 [0.6915, 1]; the narrower
    one took the tiny spread of values near 1 for the spread between tasks, which a suite of
    ten that drew none of a population's few low tasks also shows. Intervals only widen; an
    estimate without an interval (n/a) stays as it is, as do all when none has one."""
    lows = [e.ci_low for e in estimates if e.ci_low is not None]
    highs = [e.ci_high for e in estimates if e.ci_high is not None]
    if not (lows and highs):
        return list(estimates)
    low, high = min(lows), max(highs)
    notes = list(dict.fromkeys(e.note for e in estimates if e.note))
    said = "; ".join([*notes, "the interval of the success rate, pass@1 and pass^1 (one value)"])
    out = []
    for e in estimates:
        # the three are computed apart (c/n, and curves of running products): ends a few
        # ulps apart are the same end
        if (
            e.ci_low is None
            or e.ci_high is None
            or (e.ci_low - low <= _TIE and high - e.ci_high <= _TIE)
        ):
            out.append(e)
            continue
        wider = dict(ci_low=min(e.ci_low, low), ci_high=max(e.ci_high, high), note=said)
        out.append(replace(e, **wider))  # type: ignore[arg-type]
    return out


def _spread(rule: Interval) -> bool:
    """Whether the rule built its interval on a spread between tasks: only then is the
    bootstrap a second opinion. Below :data:`MIN_TASKS` tasks the rule says n/a (a
    bootstrap of one task is the zero-width ``[v, v]``), and where every task has one value
    every resample has it too."""
    return rule.method in (AC_T_CR1, T_CR1)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


# --- the shared bootstrap -----------------------------------------------------------------


def bootstrap_percentiles(
    values: FloatArray, weights: FloatArray, *, seed: int = 0, n_boot: int = 2000
) -> tuple[FloatArray, FloatArray]:
    """Percentile 95% intervals of many weighted means from one matrix of task draws.

    *values* and *weights* are (tasks, metrics); a task that does not count for a metric
    has weight 0 there (its value is ignored). Each bootstrap row draws the T tasks a metric
    counts with replacement, as multiplicities; every metric's resampled mean is then two
    matrix products, so all metrics over the same tasks (all k) share the same draws.
    Metrics over different tasks (the valid view without a task whose attempts were all
    invalid, a partial score over the tasks with rubrics) are drawn over their own tasks from
    the same seed: resampling every row and ignoring the ones a metric does not count drew a
    random number of its tasks (5 of 25 rows counted: some resamples held one task, and the
    interval of [0, 0.25, 0.5, 1, 1] reached 1). Rows are drawn in chunks of at most
    :data:`CHUNK_ELEMENTS` draws, and metrics in blocks, so memory stays bounded; a second
    block redraws the same rows from the same seed.
    """
    if n_boot < 1 or values.shape[0] == 0:
        raise ValueError(f"need at least one task value and n_boot >= 1, got n_boot={n_boot}")
    # Scaled to at most 1, so a sum of T weights of 1e300 stays finite.
    weights = weights / max(float(np.max(weights)), np.finfo(np.float64).tiny)
    weighted = np.where(weights > 0, weights * np.nan_to_num(values), 0.0)
    block = max(1, CHUNK_ELEMENTS // n_boot)
    low, high = np.full(values.shape[1], np.nan), np.full(values.shape[1], np.nan)
    for tasks, metrics in _supports(weights > 0):
        for start in range(0, len(metrics), block):
            columns = metrics[start : start + block]
            part = np.ix_(tasks, columns)
            means = _resampled_means(weighted[part], weights[part], seed, n_boot)
            low[columns], high[columns] = _percentiles(means)
    return low, high


def _supports(
    counted: npt.NDArray[np.bool_],
) -> list[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]]:
    """The columns of *counted* (tasks, metrics) grouped by the tasks they count: (those
    tasks, the columns) of every group that counts a task (a column counting none stays
    NaN)."""
    groups: dict[bytes, list[int]] = {}
    for column, key in enumerate(np.packbits(counted, axis=0).T):
        groups.setdefault(key.tobytes(), []).append(column)
    found = [(np.flatnonzero(counted[:, columns[0]]), np.array(columns, dtype=np.intp))
             for columns in groups.values()]  # fmt: skip
    return [(tasks, columns) for tasks, columns in found if tasks.size]


def _resampled_means(
    weighted: FloatArray, weights: FloatArray, seed: int, n_boot: int
) -> FloatArray:
    tasks = weighted.shape[0]
    rng = np.random.default_rng(seed)
    rows = max(1, min(n_boot, CHUNK_ELEMENTS // tasks))
    means = np.empty((n_boot, weighted.shape[1]))
    for start in range(0, n_boot, rows):
        size = min(rows, n_boot - start)
        draws = rng.integers(0, tasks, size=(size, tasks))
        draws += tasks * np.arange(size)[:, None]  # row r's draws count in cells r*T .. r*T+T-1
        counts = np.bincount(draws.ravel(), minlength=size * tasks).reshape(size, tasks)
        # Double precision: the ends are the JSON's figures, and a re-computation from the
        # documented draws must find them (single precision put them 1e-8 to 1e-7 off: 23/35
        # was 0.6571428775787354). The draws, not the products, dominate the cost.
        multiplicities = counts.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            means[start : start + size] = (multiplicities @ weighted) / (multiplicities @ weights)
    return means


def _percentiles(means: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Per column; NaN draws (no task of that metric drawn) are skipped, and a column
    with no drawable task at all stays NaN."""
    tail = (1 - CONFIDENCE) / 2 * 100
    low = np.full(means.shape[1], np.nan)
    high = np.full(means.shape[1], np.nan)
    missing = np.isnan(means)
    full = ~missing.any(axis=0)
    if full.any():
        low[full], high[full] = np.percentile(means[:, full], [tail, 100 - tail], axis=0)
    partly = ~full & ~missing.all(axis=0)
    if partly.any():
        low[partly], high[partly] = np.nanpercentile(means[:, partly], [tail, 100 - tail], axis=0)
    return low, high


def bootstrap_ks(kmax: int) -> list[int]:
    """The k whose pass@k and pass^k get a bootstrap second opinion: 1, 2, 3, 5, 10, 20,
    50, 100, ... and kmax. A handful per curve keeps the shared draw's cost growing with
    log(kmax), not kmax; the t interval covers every k."""
    marks, scale = {3, kmax}, 1
    while scale <= kmax:
        marks |= {scale, 2 * scale, 5 * scale}
        scale *= 10
    return sorted(k for k in marks if 1 <= k <= kmax)


def bootstrap_blocks(
    blocks: Sequence[tuple[FloatArray, FloatArray]], *, seed: int, n_boot: int
) -> list[list[tuple[float, float]]] | None:
    """:func:`bootstrap_percentiles` of several (values, weights) blocks over the same task
    rows in one call, so they share one set of draws; split back per block."""
    blocks = [b for b in blocks]
    if n_boot < 1 or not blocks or blocks[0][0].shape[0] == 0:
        return None
    low, high = bootstrap_percentiles(
        np.hstack([v for v, _ in blocks]),
        np.hstack([w for _, w in blocks]),
        seed=seed,
        n_boot=n_boot,
    )
    out, start = [], 0
    for values, _ in blocks:
        stop = start + values.shape[1]
        out.append(list(zip(low[start:stop].tolist(), high[start:stop].tolist(), strict=True)))
        start = stop
    return out


def check_draws(seed: int, n_boot: int) -> None:
    """Refuse a seed or a number of resamples that is no count (0 resamples: none drawn)."""
    check_whole("seed", seed, 0)
    check_whole("n_boot", n_boot, 0)


def bootstrap_interval(
    values: Sequence[float], weights: Sequence[float], *, seed: int = 0, n_boot: int = 2000
) -> tuple[float, float]:
    """Percentile 95% interval of one weighted mean when whole tasks are resampled."""
    check_draws(seed, n_boot)
    if not values or n_boot < 1:
        raise ValueError(f"need at least one task value and n_boot >= 1, got n_boot={n_boot}")
    column = np.asarray(values, dtype=np.float64)[:, None]
    w = np.asarray(weights, dtype=np.float64)[:, None]
    low, high = bootstrap_percentiles(column, w, seed=seed, n_boot=n_boot)
    return float(low[0]), float(high[0])
