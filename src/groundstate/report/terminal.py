"""Terminal rendering of batches and runs (rich)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from rich.console import Console
from rich.table import Table

from groundstate.records import AgentRun, CheckResult
from groundstate.store import BatchInfo
from groundstate.trace import MessageEvent


def batch_table(batch: BatchInfo, runs: list[AgentRun]) -> Table:
    table = Table(
        title=f"batch {batch.batch_id} · suite {batch.suite} · system {batch.system_spec_hash[:12]}"
    )
    for column in ("task", "slices", "successes / valid", "invalid", "terminal reasons"):
        table.add_column(column)
    for task_id in sorted(batch.task_revisions):
        task_runs = [r for r in runs if r.task_id == task_id]
        valid = [r for r in task_runs if r.valid]
        reasons = Counter(r.terminal_reason for r in task_runs)
        table.add_row(
            task_id,
            ", ".join(batch.task_slices.get(task_id, [])),
            f"{sum(r.success for r in valid)} / {len(valid)}",
            str(len(task_runs) - len(valid)),
            ", ".join(f"{reason} x{n}" for reason, n in sorted(reasons.items())),
        )
    return table


def print_run(console: Console, run: AgentRun) -> None:
    verdict = "[green]success[/]" if run.success else f"[red]{run.terminal_reason}[/]"
    console.print(
        f"run {run.run_id} · task {run.task_id} r{run.task_revision} · attempt {run.attempt}"
    )
    console.print(f"verdict: {verdict}   partial score: {_score(run.partial_score)}")
    console.print(
        f"system {run.system_spec_hash[:12]} · grader {run.grader_revision} · seed {run.seed}"
    )
    console.print(f"state {_short(run.initial_state_hash)} → {_short(run.final_state_hash)}")
    console.print(f"cost {run.cost:.4f} · latency {run.latency:.3f}s")
    _print_checks(console, "outcome assertions", run.outcome_assertion_results)
    _print_checks(console, "hard constraints", run.constraint_results)
    exception = run.infrastructure_status.get("exception")
    if exception:
        console.print(
            f"[bold]exception[/] at {exception['stage']}: "
            f"{exception['type']}: {exception['message']}"
        )
    console.print("[bold]trace[/]")
    for event in run.observation_action_log:
        console.print(_event_line(event), markup=False, highlight=False)


def _print_checks(console: Console, title: str, results: list[CheckResult]) -> None:
    console.print(f"[bold]{title}[/]" + ("" if results else ": none"))
    for result in results:
        mark = "error" if result.error else ("pass" if result.passed else "FAIL")
        console.print(f"  {mark:5} {result.id} ({result.kind})", markup=False)
        detail = result.error or _evidence(result.evidence)
        if detail and not result.passed:
            console.print(f"        {detail}", markup=False, highlight=False)


def _evidence(evidence: dict[str, Any]) -> str:
    shown = {k: v for k, v in evidence.items() if k != "diff"}
    return json.dumps(shown, default=str)[:600] if shown else ""


def _event_line(event: Any) -> str:
    if isinstance(event, MessageEvent):
        text = "(left the conversation)" if event.text is None else event.text
        return f"  [{event.step:>2}] {event.role:5} {text}"
    outcome = (
        json.dumps(event.output, default=str) if event.ok else f"{event.error_class}: {event.error}"
    )
    changed = f"  changed {','.join(event.changed_tables)}" if event.changed_tables else ""
    call = f"{event.tool}({json.dumps(event.args)})"
    return f"  [{event.step:>2}] call  {call} → {outcome[:300]}{changed}"


def _score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _short(value: str | None) -> str:
    return value[:12] if value else "none"
