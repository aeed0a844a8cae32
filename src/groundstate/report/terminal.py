"""Terminal rendering of batches and runs (rich)."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from groundstate.environments.base import RowWrite
from groundstate.records import AgentRun, CheckResult
from groundstate.store import BatchInfo
from groundstate.trace import MessageEvent, ModelCallEvent

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""Control characters (C0 but tab and newline, DEL, C1) and bidirectional overrides: in agent
text they could move the cursor, recolour or rewrite the screen, or reorder what is shown."""


def printable(text: str) -> str:
    """*text* with every control character shown as an escape (``\\x1b``), never sent raw."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def batch_table(batch: BatchInfo, runs: list[AgentRun]) -> Table:
    table = Table(
        title=escape(
            printable(
                f"batch {batch.batch_id} · suite {batch.suite} · "
                f"system {batch.system_spec_hash[:12]}{_where(batch)}"
            )
        )
    )
    for column in ("task", "slices", "successes / valid", "invalid", "terminal reasons"):
        table.add_column(column)
    for task_id in sorted(batch.task_revisions):
        task_runs = [r for r in runs if r.task_id == task_id]
        valid = [r for r in task_runs if r.valid]
        reasons = Counter(r.terminal_reason for r in task_runs)
        table.add_row(
            _plain(task_id),
            _plain(", ".join(batch.task_slices.get(task_id, []))),
            f"{sum(r.success for r in valid)} / {len(valid)}",
            str(len(task_runs) - len(valid)),
            _plain(", ".join(f"{reason} x{n}" for reason, n in sorted(reasons.items()))),
        )
    return table


def _where(batch: BatchInfo) -> str:
    """Where the attempts ran, when the batch recorded it."""
    if batch.executor is None:
        return ""
    return f" · executor {batch.executor} · concurrency {batch.concurrency}"


def _plain(text: str) -> Text:
    """A cell shown as written: imported batches carry task ids and reasons from any file."""
    return Text(printable(text))


def print_run(console: Console, run: AgentRun) -> None:
    reason = escape(printable(run.terminal_reason))
    verdict = "[green]success[/]" if run.success else f"[red]{reason}[/]"
    console.print(
        printable(
            f"run {run.run_id} · task {run.task_id} r{run.task_revision} · attempt {run.attempt}"
        ),
        markup=False,
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
        detail = f"{exception.get('stage')}: {exception.get('type')}: {exception.get('message')}"
        console.print(f"[bold]exception[/] at {escape(printable(detail))}")
    console.print("[bold]trace[/]")
    for event in run.observation_action_log:
        console.print(printable(_event_line(event)), markup=False, highlight=False)


def _print_checks(console: Console, title: str, results: list[CheckResult]) -> None:
    console.print(f"[bold]{title}[/]" + ("" if results else ": none"))
    for result in results:
        mark = "error" if result.error else ("pass" if result.passed else "FAIL")
        console.print(printable(f"  {mark:5} {result.id} ({result.kind})"), markup=False)
        detail = result.error or _evidence(result.evidence)
        if detail and not result.passed:
            console.print(printable(f"        {detail}"), markup=False, highlight=False)


def _evidence(evidence: dict[str, Any]) -> str:
    shown = {k: v for k, v in evidence.items() if k != "diff"}
    return json.dumps(shown, default=str)[:600] if shown else ""


def _event_line(event: Any) -> str:
    if isinstance(event, ModelCallEvent):
        return _model_call_line(event)
    if isinstance(event, MessageEvent):
        text = "(left the conversation)" if event.text is None else event.text
        role = "final" if event.final else event.role
        return f"  [{event.step:>2}] {role:5} {text}"
    outcome = (
        json.dumps(event.output, default=str) if event.ok else f"{event.error_class}: {event.error}"
    )
    changed = f"  changed {','.join(event.changed_tables)}" if event.changed_tables else ""
    changed += "".join(f"\n         {_write_line(w)}" for w in event.writes)
    call = f"{event.tool}({json.dumps(event.args)})"
    return f"  [{event.step:>2}] call  {call} → {outcome[:300]}{changed}"


def _model_call_line(event: ModelCallEvent) -> str:
    """One model request: what came back (or the error), tokens, cost and latency."""
    head = f"  [{event.step:>2}] model {event.model} (try {event.try_number})"
    timing = f"{event.latency_ms:.0f} ms"
    if event.error is not None:
        error = event.error
        status = f" HTTP {error.status_code}" if error.status_code is not None else ""
        request = f" [{error.request_id}]" if error.request_id else ""
        return f"{head} → {error.kind}{status}{request}: {error.message[:200]} ({timing})"
    answer = event.response
    parts = [f"{c.name}({c.arguments[:120]})" for c in (answer.tool_calls if answer else [])]
    if answer is not None and answer.text:
        parts.append(json.dumps(answer.text[:200]))
    usage = event.usage
    tokens = f"{usage.input_tokens} in / {usage.output_tokens} out"
    if usage.cost:
        tokens += f", cost {usage.cost:.6f}"
    return f"{head} → {'; '.join(parts) or '(empty)'} ({tokens}, {timing})"


def _write_line(write: RowWrite) -> str:
    where = f"{write.table} {json.dumps(write.key, default=str)}"
    if write.before is None:
        return f"wrote {where}: inserted"
    if write.after is None:
        return f"wrote {where}: deleted"
    before, after = write.before, write.after
    values = ", ".join(f"{c} {_json(before.get(c))} → {_json(after.get(c))}" for c in write.columns)
    return f"wrote {where}: {values}"


def _json(value: Any) -> str:
    return json.dumps(value, default=str)


def _score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _short(value: str | None) -> str:
    return value[:12] if value else "none"


def summary_tables(report: dict[str, Any]) -> list[Table]:
    """Headline numbers (both views) and the pass@k / pass^k table with intervals."""
    headline = Table(title="suite (95% cluster-bootstrap intervals over tasks)")
    for column in ("view", "success rate", "interval", "SE", "tasks", "attempts counted"):
        headline.add_column(column)
    views = (("valid attempts", report), ("invalid = failure", report["invalid_as_failure"]))
    for name, view in views:
        rate = view["success_rate"]
        if rate is not None:
            headline.add_row(
                name,
                f"{rate['estimate']:.3f}",
                _ci(rate),
                _maybe(rate["se"]),
                str(rate["n_tasks"]),
                str(rate["attempts"]),
            )
    curves = Table(title="capability (pass@k) and reliability (pass^k), valid attempts")
    for column in ("k", "pass@k", "interval", "pass^k", "interval"):
        curves.add_column(column)
    for k, at_k in report["pass_at_k"].items():
        hat_k = report["pass_hat_k"][k]
        curves.add_row(
            str(k), f"{at_k['estimate']:.3f}", _ci(at_k), f"{hat_k['estimate']:.3f}", _ci(hat_k)
        )
    return [headline, curves, _slice_table(report), _reason_table(report)]


def _slice_table(report: dict[str, Any]) -> Table:
    table = Table(title="slices (valid attempts)")
    for column in ("by", "slice", "tasks", "success rate", "interval", "attempts"):
        table.add_column(column)
    view = report["summary"]["views"]["valid"]
    for by, key in (("label", "by_label"), ("horizon", "by_horizon")):
        for name, part in view[key].items():
            rate = part["success_rate"]
            if rate is None:
                table.add_row(by, _plain(name), str(part["n_tasks"]), "no valid attempts", "", "0")
            else:
                table.add_row(
                    by,
                    _plain(name),
                    str(part["n_tasks"]),
                    f"{rate['estimate']:.3f}",
                    _ci(rate),
                    str(rate["attempts"]),
                )
    return table


def _reason_table(report: dict[str, Any]) -> Table:
    table = Table(title="terminal reasons (the counted try of each attempt)")
    for column in ("terminal reason", "attempts", "share"):
        table.add_column(column)
    reasons = report["terminal_reasons"]
    total = sum(reasons.values()) or 1
    for reason, count in sorted(reasons.items(), key=lambda item: -item[1]):
        table.add_row(_plain(reason), str(count), f"{count / total:.1%}")
    return table


def report_footer(report: dict[str, Any]) -> str:
    tries = report["tries"]
    rates = ", ".join(f"{k} {v:.1%}" for k, v in tries["invalid_rate_by_reason"].items()) or "none"
    line = _headline(report) + "\n"
    line += (
        f"{report['valid_attempts']} valid and {report['invalid_attempts']} invalid attempts; "
        f"{tries['tries']} tries in all, invalid by reason: {rates}"
    )
    summary = report["summary"]
    cost, latency, per_success = summary["cost"], summary["latency"], summary["cost_per_success"]
    line += (
        f"\ncost per attempt: mean {cost['mean']:.4f}, median {cost['median']:.4f}, "
        f"p90 {cost['p90']:.4f}; per success {_maybe(per_success)} · latency per attempt: "
        f"mean {latency['mean']:.3f}s, median {latency['median']:.3f}s, p90 {latency['p90']:.3f}s"
    )
    if report["invalid_tasks_run"]:
        names = escape(printable(", ".join(report["invalid_tasks_run"])))
        line += f"\n[bold red]RAN INVALID TASKS (--allow-invalid): {names}[/]"
    if report["invalid_rate_flagged"]:
        line += "\n[bold red]FLAGGED: invalid tries exceed the batch's declared threshold[/]"
    return line


def _headline(report: dict[str, Any]) -> str:
    """pass^1 on valid attempts, and, when any attempt is invalid, counting invalid as failed."""
    valid = report["pass_hat_k"].get(1)
    line = "pass^1: no valid attempts"
    if valid is not None:
        line = f"pass^1 = {valid['estimate']:.3f} {_ci(valid)} over {valid['n_tasks']} tasks"
    strict = report["invalid_as_failure"]["success_rate"]
    if report["invalid_attempts"] and strict is not None:
        line += (
            f" (valid attempts only) · {strict['estimate']:.3f} {_ci(strict)} counting "
            f"{report['invalid_attempts']} invalid attempts as failures"
        )
    return line


def _ci(estimate: dict[str, Any]) -> str:
    return f"[{estimate['ci_low']:.3f}, {estimate['ci_high']:.3f}]"


def _maybe(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def comparison_tables(console: Console, data: dict[str, Any]) -> None:
    console.print(
        f"batch {data['batch_b']} against batch {data['batch_a']} (b - a), paired by task"
    )
    metrics = Table(title="mean difference with paired cluster-bootstrap interval")
    for column in ("metric", "difference", "interval", "tasks"):
        metrics.add_column(column)
    for name, m in data["metrics"].items():
        metrics.add_row(name, f"{m['mean_difference']:+.3f}", _ci(m), str(m["n_tasks"]))
    console.print(metrics)
    changed = Table(title="tasks that changed")
    for column in ("task", "a", "b", "difference"):
        changed.add_column(column)
    for task in data["per_task"]:
        if task["changed"]:
            changed.add_row(
                _plain(task["task_id"]),
                f"{task['a_rate']:.2f}",
                f"{task['b_rate']:.2f}",
                f"{task['difference']:+.2f}",
            )
    console.print(changed)
    for side in ("only_in_a", "only_in_b"):
        if data[side]:
            names = printable(", ".join(data[side]))
            console.print(f"{side.replace('_', ' ')}: {names}", markup=False, highlight=False)
