"""From stored runs to statistics: which records count, and as what."""

from __future__ import annotations

from collections import Counter
from typing import Any

from groundstate.records import AgentRun
from groundstate.stats import Comparison, Outcome, Summary, compare, summarize
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
    """One statistical outcome per attempt slot of the batch."""
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
        )
        for run in final_runs(runs)
    ]


def summarize_batch(batch: BatchInfo, runs: list[AgentRun], *, seed: int = 0) -> Summary:
    return summarize(outcomes(batch, runs), seed=seed)


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


def batch_report(batch: BatchInfo, runs: list[AgentRun], *, seed: int = 0) -> dict[str, Any]:
    """The machine-readable report of a batch: headline numbers of both views, with denominators."""
    summary = summarize_batch(batch, runs, seed=seed)
    valid, strict = summary.views["valid"], summary.views["strict"]
    counted = final_runs(runs)
    attempt_tries = tries(batch, runs)
    return {
        "batch_id": batch.batch_id,
        "suite": batch.suite,
        "system_spec_hash": batch.system_spec_hash,
        "n_tasks": valid.n_tasks,
        "attempts_per_task": batch.attempts,
        "executor": batch.executor,
        "concurrency": batch.concurrency,
        "valid_attempts": sum(r.valid for r in counted),
        "invalid_attempts": sum(not r.valid for r in counted),
        "terminal_reasons": summary.terminal_reasons,
        "success_rate": _interval(valid.success_rate),
        "pass_at_k": {k: _interval(e) for k, e in valid.pass_at_k.items()},
        "pass_hat_k": {k: _interval(e) for k, e in valid.pass_hat_k.items()},
        "invalid_as_failure": {
            "success_rate": _interval(strict.success_rate),
            "pass_at_k": {k: _interval(e) for k, e in strict.pass_at_k.items()},
            "pass_hat_k": {k: _interval(e) for k, e in strict.pass_hat_k.items()},
        },
        "tries": attempt_tries,
        "invalid_rate_flagged": attempt_tries["flagged"],
        "invalid_tasks_run": batch.invalid_tasks,
        "summary": summary.to_dict(),
    }


def _interval(estimate: Any) -> dict[str, Any] | None:
    if estimate is None:
        return None
    return {
        "estimate": estimate.estimate,
        "ci_low": estimate.ci_low,
        "ci_high": estimate.ci_high,
        "se": estimate.se,
        "n_tasks": estimate.n_tasks,
        "attempts": estimate.attempts,
    }


def compare_batches(
    a: BatchInfo, a_runs: list[AgentRun], b: BatchInfo, b_runs: list[AgentRun], *, seed: int = 0
) -> Comparison:
    """Paired comparison of two batches on their shared tasks (refuses different revisions)."""
    return compare(outcomes(a, a_runs), outcomes(b, b_runs), seed=seed)


def comparison_report(a: BatchInfo, b: BatchInfo, comparison: Comparison) -> dict[str, Any]:
    """The machine-readable paired comparison: per metric, the difference b - a and its interval."""
    changed = [change.task_id for change in comparison.changed]
    metrics = {
        "success_rate": comparison.success_rate_difference,
        "pass_hat_1": comparison.pass_hat_1_difference,
    }
    return {
        "batch_a": a.batch_id,
        "batch_b": b.batch_id,
        "paired_tasks": list(comparison.paired_tasks),
        "only_in_a": list(comparison.only_in_a),
        "only_in_b": list(comparison.only_in_b),
        "metrics": {
            name: {
                "mean_difference": e.estimate,
                "ci_low": e.ci_low,
                "ci_high": e.ci_high,
                "n_tasks": e.n_tasks,
                "changed_tasks": changed,
            }
            for name, e in metrics.items()
        },
        "per_task": [change.to_dict() for change in comparison.per_task],
    }
