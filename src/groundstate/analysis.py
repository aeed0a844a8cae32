"""From stored runs to statistics: which records count, and as what.

The JSON of ``report --json`` and ``compare --json`` is built here; its schema is
documented in docs/statistics.md.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from groundstate.records import AgentRun
from groundstate.stats import (
    DEFAULT_FDR,
    VIEWS,
    Comparison,
    Difference,
    Estimate,
    Outcome,
    Summary,
    compare,
    summarize,
    task_counts,
)
from groundstate.store import BatchInfo

DEFAULT_MAX_INVALID_RATE = 0.1
"""Used for batches stored without a declared policy (e.g. imported results)."""


def final_runs(runs: list[AgentRun]) -> list[AgentRun]:
    """The last try of each (task, attempt): invalid tries that were rerun do not count twice."""
    latest: dict[tuple[str, int], AgentRun] = {}
    for run in sorted(runs, key=lambda r: r.retry):
        latest[(run.task_id, run.attempt)] = run
    return sorted(latest.values(), key=lambda r: (r.task_id, r.attempt))


def outcomes(batch: BatchInfo, runs: list[AgentRun]) -> list[Outcome]:
    """One statistical outcome per attempt slot of the batch.

    A task revision of 0 (how an import without revisions stores its tasks) becomes ""
    (unversioned), so pairing it with a versioned batch is caught by the comparison.
    """
    return [
        Outcome(
            task_id=run.task_id,
            attempt=run.attempt,
            success=run.success,
            valid=run.valid,
            terminal_reason=run.terminal_reason,
            weight=batch.task_weights.get(run.task_id, 1.0),
            slice_labels=tuple(batch.task_slices.get(run.task_id, ())),
            horizon=batch.task_horizons.get(run.task_id),
            cost=run.cost,
            latency=run.latency,
            task_revision=str(batch.task_revisions.get(run.task_id) or ""),
            partial_score=run.partial_score,
        )
        for run in final_runs(runs)
    ]


def summarize_batch(
    batch: BatchInfo, runs: list[AgentRun], *, seed: int = 0, k_over_supporting: bool = False
) -> Summary:
    return summarize(outcomes(batch, runs), seed=seed, k_over_supporting=k_over_supporting)


def tries(batch: BatchInfo, runs: list[AgentRun]) -> dict[str, Any]:
    """Every try, reruns included: how often attempts came out invalid, by reason, and
    whether that exceeds the batch's declared ``max_invalid_rate`` (flagged in every report)."""
    invalid = Counter(r.terminal_reason.split("/")[0] for r in runs if not r.valid)
    total = len(runs)
    threshold = float(batch.invalid_run_policy.get("max_invalid_rate", DEFAULT_MAX_INVALID_RATE))
    return {
        "tries": total,
        "invalid_tries": sum(invalid.values()),
        "invalid_rate_by_reason": {k: v / total for k, v in sorted(invalid.items())},
        "max_invalid_rate": threshold,
        "flagged": total > 0 and sum(invalid.values()) / total > threshold,
    }


def batch_report(
    batch: BatchInfo,
    runs: list[AgentRun],
    *,
    seed: int = 0,
    k_over_supporting: bool = False,
) -> dict[str, Any]:
    """The machine-readable report of a batch: headline numbers of both views with their
    denominators and intervals, the k limits, and the per-task table it was computed from."""
    counted_outcomes = outcomes(batch, runs)
    summary = summarize(counted_outcomes, seed=seed, k_over_supporting=k_over_supporting)
    valid, strict = summary.views["valid"], summary.views["strict"]
    attempt_tries = tries(batch, runs)
    invalid = sum(not o.valid for o in counted_outcomes)
    return {
        "batch_id": batch.batch_id,
        "suite": batch.suite,
        "system_spec_hash": batch.system_spec_hash,
        "n_tasks": valid.n_tasks,
        "attempts_per_task": batch.attempts,
        "valid_attempts": len(counted_outcomes) - invalid,
        "invalid_attempts": invalid,
        "terminal_reasons": summary.terminal_reasons,
        "success_rate": _interval(valid.success_rate),
        "pass_at_k": {k: _interval(e) for k, e in valid.pass_at_k.items()},
        "pass_hat_k": {k: _interval(e) for k, e in valid.pass_hat_k.items()},
        "partial_score": _interval(valid.partial_score),
        "invalid_as_failure": {
            "success_rate": _interval(strict.success_rate),
            "pass_at_k": {k: _interval(e) for k, e in strict.pass_at_k.items()},
            "pass_hat_k": {k: _interval(e) for k, e in strict.pass_hat_k.items()},
            "partial_score": _interval(strict.partial_score),
        },
        "k_limits": {name: _k_limits(view) for name, view in summary.views.items()},
        "methods": summary.methods,
        "tasks": task_table(counted_outcomes),
        "tries": attempt_tries,
        "invalid_rate_flagged": attempt_tries["flagged"],
        "invalid_tasks_run": batch.invalid_tasks,
        "summary": summary.to_dict(),
    }


def _interval(estimate: Estimate | None) -> dict[str, Any] | None:
    return None if estimate is None else estimate.to_dict()


def _k_limits(view: Any) -> dict[str, Any]:
    return {
        "kmax": view.kmax,
        "limited_by": [{"task_id": task, "n": n} for task, n in view.k_limited_by],
        "beyond": {k: beyond.to_dict() for k, beyond in view.beyond_k.items()},
    }


def task_table(counted: list[Outcome]) -> list[dict[str, Any]]:
    """One row per task with the denominators of both views: enough to recompute every
    suite value of the report without the store."""
    views = {view: task_counts(counted, view) for view in VIEWS}
    rows = []
    for valid, strict in zip(views["valid"], views["strict"], strict=True):
        rows.append(
            {
                "task_id": valid.task_id,
                "revision": valid.revision or None,
                "weight": valid.weight,
                "labels": list(valid.labels),
                "horizon": valid.horizon,
                "attempts": strict.n,
                "invalid": valid.invalid,
                "valid": {"n": valid.n, "c": valid.c, "partial": valid.partial},
                "strict": {"n": strict.n, "c": strict.c, "partial": strict.partial},
            }
        )
    return rows


# --- comparison ------------------------------------------------------------------------------


def batch_mismatches(a: BatchInfo, b: BatchInfo) -> list[str]:
    """Batch-level reasons two batches are not the same evaluation (task-level ones are
    found by :func:`groundstate.stats.compare`). An imported batch's suite hash is the hash
    of its results file, so only batches run here are held to the same suite hash."""
    if a.source == b.source == "groundstate" and a.suite_hash != b.suite_hash:
        return [f"suite_hash differs ({a.suite_hash[:12]} vs {b.suite_hash[:12]})"]
    return []


def compare_batches(
    a: BatchInfo,
    a_runs: list[AgentRun],
    b: BatchInfo,
    b_runs: list[AgentRun],
    *,
    seed: int = 0,
    fdr: float = DEFAULT_FDR,
    allow_mismatch: bool = False,
) -> Comparison:
    """Comparison of two batches on their shared tasks; refuses different revisions, suites
    or versioning unless *allow_mismatch* (then the comparison lists them)."""
    return compare(
        outcomes(a, a_runs),
        outcomes(b, b_runs),
        seed=seed,
        fdr=fdr,
        allow_mismatch=allow_mismatch,
        batch_mismatches=batch_mismatches(a, b),
    )


def comparison_report(a: BatchInfo, b: BatchInfo, comparison: Comparison) -> dict[str, Any]:
    """The machine-readable comparison: per view and metric, both sides, b - a with its
    interval and test, and the per-task exact tests."""
    metrics: dict[str, dict[str, Any]] = {view: {} for view in VIEWS}
    for d in comparison.differences:
        metrics[d.view][d.name] = _difference(d)
    return {
        "batch_a": a.batch_id,
        "batch_b": b.batch_id,
        "mode": comparison.mode,
        "paired_tasks": list(comparison.paired_tasks),
        "only_in_a": list(comparison.only_in_a),
        "only_in_b": list(comparison.only_in_b),
        "excluded_tasks": list(comparison.excluded_tasks),
        "dropped_tasks": comparison.dropped_tasks,
        "common_k": comparison.common_k,
        "metrics": metrics,
        "per_task_test": {
            "method": comparison.methods["per_task_test"],
            "multiple_comparisons": comparison.methods["multiple_comparisons"],
            "fdr": comparison.fdr,
            "tested": len(comparison.per_task),
            "changed": len(comparison.changed),
        },
        "changed_tasks": [change.task_id for change in comparison.changed],
        "per_task": [change.to_dict() for change in comparison.per_task],
        "mismatches": list(comparison.mismatches),
        "notes": list(comparison.notes),
        "methods": comparison.methods,
    }


def _difference(d: Difference) -> dict[str, Any]:
    return {
        "metric": d.metric,
        "k": d.k,
        "a": d.a.to_dict(),
        "b": d.b.to_dict(),
        "difference": d.difference.to_dict(),
        "statistic": d.statistic,
        "p_value": d.p_value,
    }
