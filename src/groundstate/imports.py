"""Results from elsewhere: rows of (task, attempt, success) from another harness, as a batch.

Accepted files are CSV (with a header row) or JSON Lines, one attempt per row, with columns
``task_id``, ``attempt``, ``success`` (true/false or 1/0) and optionally ``terminal_reason``,
``cost``, ``latency``, ``slice_labels`` (a JSON list or ``a;b`` text) and ``task_revision``.
An imported batch has no traces or states: only statistics and comparisons apply to it.
"""

from __future__ import annotations

import csv
import io
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from groundstate.errors import SpecError
from groundstate.records import AgentRun
from groundstate.spec.canonical import hash_file
from groundstate.store import BatchInfo, RunStore

TERMINAL_PREFIXES = (
    "success",
    "agent_failure",
    "harness_compatibility_failure",
    "environment_failure",
    "grader_failure",
)


class ImportedRow(BaseModel):
    model_config = ConfigDict(extra="ignore")

    task_id: str = Field(min_length=1)
    attempt: int = Field(ge=1)
    success: bool
    terminal_reason: str | None = None
    cost: float = 0.0
    latency: float = 0.0
    slice_labels: list[str] = Field(default_factory=list)
    task_revision: int = Field(default=0, ge=0)
    """0 when the other harness does not version its tasks."""

    @field_validator("slice_labels", mode="before")
    @classmethod
    def _split_labels(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            return json.loads(text) if text.startswith("[") else [v for v in text.split(";") if v]
        return value

    @field_validator("cost", "latency", "task_revision", "terminal_reason", mode="before")
    @classmethod
    def _blank_is_default(cls, value: Any) -> Any:
        return None if value == "" else value

    def reason(self) -> str:
        reason = self.terminal_reason or ("success" if self.success else "agent_failure")
        if reason.split("/")[0] not in TERMINAL_PREFIXES:
            raise ValueError(f"unknown terminal reason {reason!r}")
        if (reason == "success") != self.success:
            raise ValueError(f"success={self.success} contradicts terminal_reason {reason!r}")
        return reason


def read_rows(path: Path) -> list[ImportedRow]:
    """Parse and check every row; an error names the file, the line and the field."""
    raw = _raw_rows(path)
    rows = []
    for line, data in raw:
        try:
            row = ImportedRow.model_validate({k: v for k, v in data.items() if v is not None})
            row.reason()
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise SpecError(f"{path}:{line}", field, first["msg"]) from None
        except ValueError as exc:
            raise SpecError(f"{path}:{line}", "terminal_reason", str(exc)) from None
        rows.append(row)
    if not rows:
        raise SpecError(path, None, "no result rows")
    _check_unique(path, rows)
    return rows


def _raw_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(path, None, f"cannot read: {exc.strerror}") from None
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        return [(reader.line_num, row) for row in reader]
    rows = []
    # "\n" only: str.splitlines() would also split inside strings at U+0085 or U+2028.
    for i, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            try:
                rows.append((i, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise SpecError(f"{path}:{i}", None, f"not valid JSON: {exc.msg}") from None
    return rows


def _check_unique(path: Path, rows: list[ImportedRow]) -> None:
    seen: set[tuple[str, int]] = set()
    for row in rows:
        if (row.task_id, row.attempt) in seen:
            raise SpecError(
                path, "attempt", f"task {row.task_id!r} attempt {row.attempt} appears twice"
            )
        seen.add((row.task_id, row.attempt))


def import_results(path: Path, name: str, store: RunStore) -> BatchInfo:
    """Store the rows of *path* as a batch named *name*; returns the batch."""
    rows = read_rows(path)
    digest = hash_file(path)
    batch = BatchInfo(
        batch_id=uuid.uuid4().hex[:12],
        created_at=datetime.now(UTC),
        suite=name,
        suite_path=str(path),
        suite_hash=digest,
        system_spec_hash=f"imported:{digest[:16]}",
        system_spec={"name": name, "imported_from": str(path)},
        attempts=max(row.attempt for row in rows),
        seed=0,
        task_revisions={row.task_id: row.task_revision for row in rows},
        task_weights={row.task_id: 1.0 for row in rows},
        task_slices={row.task_id: row.slice_labels for row in rows},
        source="imported",
    )
    store.add_batch(batch)
    for row in rows:
        store.add_run(_as_run(row, batch), {})
    return batch


def _as_run(row: ImportedRow, batch: BatchInfo) -> AgentRun:
    reason = row.reason()
    return AgentRun(
        run_id=uuid.uuid4().hex,
        batch_id=batch.batch_id,
        task_id=row.task_id,
        task_revision=row.task_revision,
        grader_revision="imported",
        system_spec_hash=batch.system_spec_hash,
        attempt=row.attempt,
        seed=0,
        started_at=batch.created_at,
        initial_state_hash=None,
        observation_action_log=[],
        final_state_hash=None,
        terminal_reason=reason,
        success=row.success,
        outcome_assertion_results=[],
        constraint_results=[],
        partial_score=None,
        cost=row.cost,
        latency=row.latency,
        infrastructure_status={"imported": True},
        artifact_locations={},
    )
