"""Suite statistics over attempt outcomes: pass@k, pass^k, intervals, slices, comparisons.

Design principle 7: repetitions stay nested in tasks. Each value is estimated per
task (tau-bench's unbiased estimators), then averaged with declared task weights;
uncertainty is over tasks: the task-clustered (CR1) standard error with Student's t on
T - 1 degrees of freedom, a documented minimum number of tasks, and a seeded cluster
bootstrap as a second opinion (see :mod:`groundstate.stats.intervals` and
docs/statistics.md). Nothing raises a pooled accuracy to the k-th power, which would
confuse "every task is 80% reliable" with "some tasks always fail". Two views sit side by
side: ``"valid"`` counts valid attempts only, ``"strict"`` counts invalid ones as
failures, so a reader sees that exclusions did not flatter the score. Pure functions, no I/O.

Modules: ``outcomes`` (counts and per-task estimators), ``intervals`` (SE, interval
rule, bootstrap), ``summary`` (one batch), ``compare`` (two batches).
"""

from groundstate.stats.compare import (
    DEFAULT_FDR,
    MULTIPLE_COMPARISONS,
    PER_TASK_TEST,
    Comparison,
    Difference,
    RevisionMismatch,
    TaskChange,
    benjamini_hochberg,
    compare,
    fisher_p,
    task_mismatches,
    welch,
)
from groundstate.stats.intervals import (
    BOOTSTRAP_METHOD,
    CONFIDENCE,
    EXACT_BOUND,
    MIN_TASKS,
    NO_INTERVAL,
    T_CR1,
    WELCH_CR1,
    Estimate,
    Interval,
    bootstrap_blocks,
    bootstrap_interval,
    bootstrap_percentiles,
    clustered_se,
    interval_rule,
    make_estimate,
    t_quantile,
    two_sided_p,
    weighted_mean,
)
from groundstate.stats.outcomes import (
    HORIZON_BUCKETS,
    VIEWS,
    Outcome,
    TaskCounts,
    View,
    horizon_bucket,
    pass_at_k,
    pass_curves,
    pass_hat_k,
    supported_k,
    task_counts,
)
from groundstate.stats.summary import (
    BeyondK,
    Distribution,
    InvalidStats,
    SliceSummary,
    Summary,
    ViewSummary,
    distribution,
    invalid_stats,
    methods,
    suite_pass_at_k,
    suite_pass_hat_k,
    suite_success_rate,
    summarize,
    summarize_views,
)

__all__ = [
    "BOOTSTRAP_METHOD",
    "CONFIDENCE",
    "DEFAULT_FDR",
    "EXACT_BOUND",
    "HORIZON_BUCKETS",
    "MIN_TASKS",
    "MULTIPLE_COMPARISONS",
    "NO_INTERVAL",
    "PER_TASK_TEST",
    "T_CR1",
    "VIEWS",
    "WELCH_CR1",
    "BeyondK",
    "Comparison",
    "Difference",
    "Distribution",
    "Estimate",
    "Interval",
    "InvalidStats",
    "Outcome",
    "RevisionMismatch",
    "SliceSummary",
    "Summary",
    "TaskChange",
    "TaskCounts",
    "View",
    "ViewSummary",
    "benjamini_hochberg",
    "bootstrap_blocks",
    "bootstrap_interval",
    "bootstrap_percentiles",
    "clustered_se",
    "compare",
    "distribution",
    "fisher_p",
    "horizon_bucket",
    "interval_rule",
    "invalid_stats",
    "make_estimate",
    "methods",
    "pass_at_k",
    "pass_curves",
    "pass_hat_k",
    "suite_pass_at_k",
    "suite_pass_hat_k",
    "suite_success_rate",
    "summarize",
    "summarize_views",
    "supported_k",
    "t_quantile",
    "task_counts",
    "task_mismatches",
    "two_sided_p",
    "weighted_mean",
    "welch",
]
