"""A stored batch written out for other tools: JSON Lines, CSV, or an Inspect AI ``.eval`` log.

``jsonl`` and ``csv`` write every try in the row format ``import-results`` reads
(:data:`groundstate.importers.COLUMNS`), so an export imported again gives the same
statistics. ``inspect`` writes a ``.eval`` archive for ``inspect view``: one sample per counted
attempt (task id as sample id, attempt as epoch), the trace as chat messages, a ``groundstate``
score (``C``/``I``) and the run's own verdict in the sample metadata, which ``import-results``
reads back exactly. What each format leaves out is listed in docs/interop.md.
"""

from __future__ import annotations

import csv
import json
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from groundstate.analysis import final_runs, missing_attempts, planned, planned_runs, provenance
from groundstate.errors import GroundstateError
from groundstate.importers.inspect_log import EARLIER_TRIES, OWN_METADATA
from groundstate.importers.table import COLUMNS
from groundstate.paths import make_folder
from groundstate.records import AgentRun
from groundstate.report.numbers import incomplete_text
from groundstate.rounding import counted
from groundstate.store import BatchInfo, RunStore, known_usage, refuse_output
from groundstate.trace import MessageEvent, ToolCallEvent

ExportFormat = Literal["jsonl", "csv", "inspect"]
INSPECT_LOG_VERSION = 2
"""The Inspect ``EvalLog`` format version written (Inspect's ``LOG_SCHEMA_VERSION``)."""
SCORER = "groundstate"


class ExportReport(BaseModel):
    """What an export wrote."""

    batch_id: str
    format: ExportFormat
    path: str
    records: int
    """Rows (``jsonl``, ``csv``: every try) or samples (``inspect``: counted attempts)."""
    incomplete: str | None = None
    """What the batch lacks of its plan (:func:`~groundstate.analysis.missing_attempts`, as
    ``report`` words it, after who is running it, if anyone), or None: a row file cannot say
    it (an import takes the rows as the whole plan); an Inspect log says it by its status,
    ``cancelled`` (or ``started`` while the batch is being run)."""
    warnings: list[str] = []
    """What the file cannot say by itself (one line each)."""


def export_batch(
    store: RunStore, batch_id: str | None, format: ExportFormat, out: Path
) -> ExportReport:
    """Write the batch *batch_id* (default: the latest) to *out* in *format*."""
    refuse_output(store.path, out, "--out")
    batch = store.batch(batch_id)
    runs = store.runs(batch.batch_id)
    if not runs:
        raise GroundstateError(f"batch {batch.batch_id} in {store.path} has no stored runs")
    missing = missing_attempts(batch, planned(batch, runs)[0].final())
    # the plan's tries, as every figure reads them (``verify`` names a try outside it)
    runs = planned_runs(batch, runs)
    writers: dict[str, Callable[[BatchInfo, list[AgentRun], Path], int]] = {
        "jsonl": _write_jsonl,
        "csv": _write_csv,
        "inspect": partial(_write_inspect, status=_inspect_status(batch, missing is None)),
    }
    try:
        make_folder(out.parent)
        count = writers[format](batch, runs, out)
    except OSError as exc:
        raise GroundstateError(f"cannot write {out}: {exc.strerror or exc}") from None
    return ExportReport(
        batch_id=batch.batch_id,
        format=format,
        path=str(out),
        records=count,
        incomplete=missing and _running(batch) + incomplete_text(missing),
        warnings=_legacy_note(batch, runs),
    )


def _legacy_note(batch: BatchInfo, runs: list[AgentRun]) -> list[str]:
    """A batch imported before token counts a file left out were stored as not known: its
    0 counts are written as not known, which the user is told."""
    zeros = sum(0 in (run.usage.input_tokens, run.usage.output_tokens) for run in runs)
    if not (batch.legacy_usage and zeros):
        return []
    return [
        f"batch {batch.batch_id} was imported before token counts a file leaves out were "
        f"stored as not known: the 0 token counts of {counted(zeros, 'try', 'tries')} are "
        "written as not known (import the file again to store it under the current rules)"
    ]


def _running(batch: BatchInfo) -> str:
    return f"being run by {batch.running}: " if batch.running else ""


def _inspect_status(batch: BatchInfo, finished: bool) -> str:
    """The Inspect log status of *batch*: ``success`` when it holds every attempt of its
    plan; else ``started`` while a live process runs it (Inspect's status of an eval under
    way), ``cancelled`` once stopped (Inspect's readers, ours too, say it is unfinished)."""
    return "success" if finished else "started" if batch.running else "cancelled"


def export_row(batch: BatchInfo, run: AgentRun) -> dict[str, Any]:
    """One try in the row format, keyed by :data:`COLUMNS` in order (``None``: not known)."""
    row = {
        "task_id": run.task_id,
        "attempt": run.attempt,
        "success": run.success,
        "terminal_reason": run.terminal_reason,
        "cost": run.cost,
        "latency": run.latency,
        "partial_score": run.partial_score,
        "retry": run.retry,
        "slice_labels": batch.task_slices.get(run.task_id, []),
        "task_revision": batch.task_revisions.get(run.task_id, run.task_revision),
        "weight": batch.task_weights.get(run.task_id, 1.0),
        "horizon": batch.task_horizons.get(run.task_id),
        "input_tokens": known_usage(batch, run).input_tokens,
        "output_tokens": known_usage(batch, run).output_tokens,
        "invalid_task": run.task_id in batch.invalid_tasks,
        "judge_errors": run.judge_errors,
    }
    return row


def _write_jsonl(batch: BatchInfo, runs: list[AgentRun], out: Path) -> int:
    with out.open("w", encoding="utf-8") as handle:
        for run in runs:
            handle.write(json.dumps(export_row(batch, run)) + "\n")
    return len(runs)


def _write_csv(batch: BatchInfo, runs: list[AgentRun], out: Path) -> int:
    with out.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerow(COLUMNS)
        # Text quoted: the reader drops a space after a separator, so " pad" unquoted is "pad"
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, quoting=csv.QUOTE_NONNUMERIC)
        for run in runs:
            writer.writerow({k: _cell(v) for k, v in export_row(batch, run).items()})
    return len(runs)


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return json.dumps(value)  # slice labels may hold ";", the short form's separator
    return value


# --- Inspect AI ------------------------------------------------------------------------------


def _write_inspect(batch: BatchInfo, runs: list[AgentRun], out: Path, *, status: str) -> int:
    """*status*: the log's (:func:`_inspect_status`)."""
    counted = final_runs(runs)
    earlier: dict[tuple[str, int], list[AgentRun]] = {}
    for run in sorted(runs, key=lambda r: r.retry):
        earlier.setdefault((run.task_id, run.attempt), []).append(run)
    samples = [_sample(batch, run, earlier[run.task_id, run.attempt][:-1]) for run in counted]
    spec, plan = _eval_spec(batch, counted), _plan()
    summaries = [_summary(sample) for sample in samples]
    scored = [run for run in counted if run.task_id not in batch.invalid_tasks]
    reductions = _reductions(scored)
    header = {
        "version": INSPECT_LOG_VERSION,
        # an unfinished batch is no finished eval: Inspect's readers (ours too) say so
        "status": status,
        "eval": spec,
        "plan": plan,
        "results": _results(counted, scored, reductions),
        "stats": _stats(batch, counted),
    }
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        _put(
            archive,
            "_journal/start.json",
            {"version": INSPECT_LOG_VERSION, "eval": spec, "plan": plan},
        )
        for sample in samples:
            _put(archive, f"samples/{sample['id']}_epoch_{sample['epoch']}.json", sample)
        _put(archive, "_journal/summaries/1.json", summaries)
        _put(archive, "summaries.json", summaries)
        _put(archive, "reductions.json", reductions)
        _put(archive, "header.json", header)
    return len(samples)


def _put(archive: zipfile.ZipFile, name: str, data: Any) -> None:
    archive.writestr(name, json.dumps(data, indent=2))


def _eval_spec(batch: BatchInfo, runs: list[AgentRun]) -> dict[str, Any]:
    """The eval as planned: every task of the batch's plan (a task with no attempt stored,
    of a batch stopped early, is listed still, as Inspect lists a sample it never ran) times
    its attempts, so an import of the log counts the attempts it lacks."""
    tasks = sorted(set(batch.task_revisions) | {run.task_id for run in runs})
    return {
        "eval_id": batch.batch_id,
        "run_id": batch.batch_id,
        "created": _iso(batch.created_at),
        "task": batch.suite,
        "task_id": batch.suite_hash[:22],
        "task_version": 0,
        "task_args": {},
        "dataset": {"name": batch.suite, "location": batch.suite_path, "samples": len(tasks),
                    "sample_ids": tasks, "shuffled": False},
        "model": _model(batch),
        "model_args": {},
        "config": {"epochs": batch.attempts},
        "packages": {"groundstate": _version()},
        "metadata": {OWN_METADATA: {
            "batch_id": batch.batch_id,
            "suite_hash": batch.suite_hash,
            "system_spec_hash": batch.system_spec_hash,
            "source": batch.source,
            # how it ran (sessions, executors, validation), for a reader: no import reads it
            "provenance": provenance(batch),
        }},
        "scorers": [
            {"name": SCORER, "options": {}, "metrics": [{"name": "accuracy", "options": {}}]}
        ],
    }  # fmt: skip


def _model_usage(batch: BatchInfo, run: AgentRun) -> dict[str, Any]:
    """The run's tokens and cost as Inspect's ``ModelUsage`` of the system's model (what
    ``inspect view`` shows); none when the record knows none of them (an import reads ``{}``
    as not known: a known 0 is written as 0)."""
    used, cost = known_usage(batch, run), run.cost
    if used.input_tokens is None and used.output_tokens is None and cost is None:
        return {}
    usage: dict[str, Any] = {  # a count not known is left out, not written as 0
        key: value
        for key, value in (
            ("input_tokens", used.input_tokens),
            ("output_tokens", used.output_tokens),
        )
        if value is not None
    }
    if used.input_tokens is not None and used.output_tokens is not None:
        usage["total_tokens"] = used.input_tokens + used.output_tokens
    if cost is not None:
        usage["total_cost"] = cost
    return {_model(batch): usage}


def _model(batch: BatchInfo) -> str:
    model = batch.system_spec.get("model")
    revision = model.get("revision") if isinstance(model, dict) else None
    if isinstance(revision, str) and revision != "none":
        return revision if "/" in revision else f"groundstate/{revision}"
    return f"groundstate/{batch.system_spec.get('name', 'system')}"


def _plan() -> dict[str, Any]:
    return {"name": "plan", "steps": [{"solver": "groundstate", "params": {}}], "config": {}}


def _sample(batch: BatchInfo, run: AgentRun, earlier: list[AgentRun]) -> dict[str, Any]:
    """*run* as an Inspect sample; the invalid tries it reran (*earlier*) as its
    ``error_retries``, as Inspect keeps the errors it retried, and in full in its metadata."""
    messages = _messages(run)
    sample: dict[str, Any] = {
        "id": run.task_id,
        "epoch": run.attempt,
        "input": next((m["content"] for m in messages if m["role"] == "user"), run.task_id),
        "target": "",
        "messages": messages,
        "scores": {SCORER: _score(run)},
        "metadata": {OWN_METADATA: _own(batch, run, earlier)},
        "store": {},
        "events": [],
        "model_usage": _model_usage(batch, run),
        "started_at": _iso(run.started_at),
        "total_time": run.latency,
        "working_time": run.latency,
        "uuid": run.run_id,
        "attachments": {},
        "error_retries": [_error(r) for r in earlier],
    }
    if run.task_id in batch.invalid_tasks:  # Inspect leaves an errored sample out of scores
        message = f"task {run.task_id!r} failed validation: in no figure (invalid_tasks)"
        sample["error"] = {"message": message, "traceback": "", "traceback_ansi": ""}
    elif not run.valid:
        sample["error"] = _error(run)
    return sample


def _error(run: AgentRun) -> dict[str, str]:
    """An invalid try as Inspect's ``EvalError``."""
    message = f"{run.terminal_reason}: {json.dumps(run.infrastructure_status, default=str)}"
    return {"message": message, "traceback": "", "traceback_ansi": ""}


def _own(batch: BatchInfo, run: AgentRun, earlier: list[AgentRun]) -> dict[str, Any]:
    """The run's verdict as groundstate keeps it (read back as is by ``import-results``), with
    the invalid tries it reran (``earlier_tries``, in the row format), so that the tries
    block and the invalid-try rate survive the round trip."""
    return {
        **_own_row(batch, run),
        "run_id": run.run_id,
        "system_spec_hash": run.system_spec_hash,
        EARLIER_TRIES: [_own_row(batch, r) for r in earlier],
    }


def _own_row(batch: BatchInfo, run: AgentRun) -> dict[str, Any]:
    row = export_row(batch, run)
    row.pop("task_id")
    return row


def _score(run: AgentRun) -> dict[str, Any]:
    failed = [c.id for c in run.outcome_assertion_results + run.constraint_results if not c.passed]
    return {
        "value": "C" if run.success else "I",
        "answer": run.final_message,
        "explanation": run.terminal_reason + (f" (failed: {', '.join(failed)})" if failed else ""),
        "metadata": {
            "terminal_reason": run.terminal_reason,
            "partial_score": run.partial_score,
            "judge_errors": run.judge_errors,
        },
    }


def _messages(run: AgentRun) -> list[dict[str, Any]]:
    """The trace as Inspect chat messages: user and agent messages, and each tool call as an
    assistant tool call followed by its tool result."""
    messages: list[dict[str, Any]] = []
    for event in run.observation_action_log:
        if isinstance(event, MessageEvent):
            role = "user" if event.role == "user" else "assistant"
            messages.append({"role": role, "content": event.text or "", "source": "generate"})
        elif isinstance(event, ToolCallEvent):
            messages.extend(_tool_messages(event, f"call_{len(messages)}"))
    return messages


def _tool_messages(event: ToolCallEvent, call_id: str) -> list[dict[str, Any]]:
    arguments = event.args if isinstance(event.args, dict) else {"args": event.args}
    call = {"id": call_id, "function": event.tool, "arguments": arguments, "type": "function"}
    result: dict[str, Any] = {
        "role": "tool",
        "content": event.error if not event.ok else json.dumps(event.output, default=str),
        "tool_call_id": call_id,
        "function": event.tool,
    }
    if not event.ok:
        result["error"] = {"type": "unknown", "message": event.error or "failed"}
    return [{"role": "assistant", "content": "", "tool_calls": [call]}, result]


def _summary(sample: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "epoch", "input", "target", "scores", "metadata", "model_usage", "started_at",
            "total_time", "working_time", "uuid")  # fmt: skip
    summary = {key: sample[key] for key in keys}
    summary.update(completed=True, message_count=len(sample["messages"]))
    if "error" in sample:
        summary["error"] = sample["error"]["message"]
    return summary


def _results(
    runs: list[AgentRun], scored: list[AgentRun], reductions: list[dict[str, Any]]
) -> dict[str, Any]:
    """Inspect's results block: the accuracy of *scored* (the tasks that did not fail
    validation: a task the batch names invalid is in no figure, here as in ``report``; its
    samples carry an ``error``) as Inspect computes it over epochs, the mean of the per-task
    *reductions* (a pooled mean over attempts weighed a task by its valid attempts: 0.33 where
    ``report`` and the reductions say 0.5). With no valid attempt nothing was scored: no score
    is given (``report`` says n/a), never an accuracy of 0."""
    valid = [run for run in scored if run.valid]
    block: dict[str, Any] = {"total_samples": len(runs), "completed_samples": len(valid)}
    samples = reductions[0]["samples"]
    if not samples:
        return {**block, "scores": []}
    accuracy = sum(sample["value"] for sample in samples) / len(samples)
    return {
        **block,
        "scores": [{
            "name": SCORER,
            "scorer": SCORER,
            "scored_samples": len(valid),
            "unscored_samples": len(runs) - len(valid),
            "params": {},
            "metrics": {"accuracy": {"name": "accuracy", "value": accuracy, "params": {}}},
        }],
    }  # fmt: skip


def _reductions(runs: list[AgentRun]) -> list[dict[str, Any]]:
    """Per sample (task), the mean over its valid epochs: Inspect's default reducer."""
    by_task: dict[str, list[float]] = {}
    for run in runs:
        if run.valid:
            by_task.setdefault(run.task_id, []).append(float(run.success))
    samples = [{"value": sum(v) / len(v), "sample_id": task} for task, v in sorted(by_task.items())]
    return [{"scorer": SCORER, "reducer": "mean", "samples": samples}]


def _stats(batch: BatchInfo, runs: list[AgentRun]) -> dict[str, Any]:
    last = max(run.started_at for run in runs)
    return {"started_at": _iso(batch.created_at), "completed_at": _iso(last), "model_usage": {}}


def _iso(moment: datetime) -> str:
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


def _version() -> str:
    try:
        return metadata.version("groundstate")
    except metadata.PackageNotFoundError:
        return "unknown"
