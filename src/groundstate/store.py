"""The run store: a SQLite database of batches and runs, plus content-addressed artifacts.

Records are append-only. Each attempt is committed in one transaction after its artifacts are
written (each to a temporary file, then renamed into place), so a batch killed at any moment
leaves only complete records. Artifacts are named by their sha256 and verified when read.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from groundstate.errors import StoreError
from groundstate.records import AgentRun
from groundstate.spec.canonical import sha256_text

M = TypeVar("M", bound=BaseModel)

DEFAULT_STORE = Path(".groundstate/runs.db")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    batch_id TEXT NOT NULL REFERENCES batches(batch_id),
    task_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    retry INTEGER NOT NULL,
    terminal_reason TEXT NOT NULL,
    success INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    record TEXT NOT NULL
);
-- one record per try: a resumed batch can never store an attempt twice
CREATE UNIQUE INDEX IF NOT EXISTS runs_by_batch ON runs(batch_id, task_id, attempt, retry);
CREATE TABLE IF NOT EXISTS validations (
    key TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    record TEXT NOT NULL
);
"""


class BatchInfo(BaseModel):
    """One invocation of ``run``: a system x a suite x attempts, fixed before it starts."""

    batch_id: str
    created_at: datetime
    suite: str
    suite_path: str
    suite_hash: str
    system_spec_hash: str
    system_spec: dict[str, Any]
    attempts: int
    seed: int
    task_revisions: dict[str, int]
    task_weights: dict[str, float]
    task_slices: dict[str, list[str]]
    task_horizons: dict[str, int] = {}
    """Steps of each task's oracle solution, for horizon slices."""
    invalid_run_policy: dict[str, Any] = {}
    """The retry policy and invalid-rate threshold, fixed before the batch starts."""
    invalid_tasks: list[str] = []
    """Tasks that failed validation and ran anyway (``run --allow-invalid``)."""
    source: str = "groundstate"
    """``groundstate`` for batches run here; ``imported`` for results from another harness."""


class RunStore:
    def __init__(self, path: Path = DEFAULT_STORE) -> None:
        self.path = Path(path)
        self.artifacts = self.path.parent / "artifacts"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the run store {self.path}: {exc}") from exc

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing --------------------------------------------------------------------------

    def add_batch(self, batch: BatchInfo) -> None:
        self._write(
            "INSERT INTO batches VALUES (?, ?, ?)",
            (batch.batch_id, batch.created_at.isoformat(), batch.model_dump_json()),
        )

    def add_run(self, run: AgentRun, artifacts: dict[str, str]) -> AgentRun:
        """Store the artifacts, then commit the record naming them, in one transaction."""
        locations = {name: self.put_artifact(text) for name, text in artifacts.items()}
        run = run.model_copy(update={"artifact_locations": locations})
        self._write(
            "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run.run_id,
                run.batch_id,
                run.task_id,
                run.attempt,
                run.retry,
                run.terminal_reason,
                int(run.success),
                datetime.now(UTC).isoformat(),
                run.model_dump_json(),
            ),
        )
        return run

    def add_validation(self, key: str, record: dict[str, Any]) -> None:
        """Cache a task's validity, keyed by everything that could change it."""
        self._write(
            "INSERT OR REPLACE INTO validations VALUES (?, ?, ?)",
            (key, datetime.now(UTC).isoformat(), json.dumps(record)),
        )

    def validation(self, key: str) -> dict[str, Any] | None:
        rows = self._query("SELECT record FROM validations WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def put_artifact(self, text: str) -> str:
        digest = sha256_text(text)
        target = self._artifact_path(digest)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, target)
        return f"sha256:{digest}"

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        try:
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute(sql, params)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to the run store {self.path}: {exc}") from exc

    # --- reading --------------------------------------------------------------------------

    def read_artifact(self, location: str) -> str:
        digest = location.removeprefix("sha256:")
        try:
            text = self._artifact_path(digest).read_text(encoding="utf-8")
        except OSError as exc:
            raise StoreError(f"artifact {location} is missing: {exc}") from exc
        if sha256_text(text) != digest:
            raise StoreError(
                f"artifact {location} is corrupt (its content no longer matches its hash)"
            )
        return text

    def batch(self, batch_id: str | None = None) -> BatchInfo:
        """The batch with this id (a unique prefix is enough), or the latest one."""
        if batch_id is None:
            rows = self._query("SELECT record FROM batches ORDER BY created_at DESC LIMIT 1", ())
        else:
            rows = self._query(
                "SELECT record FROM batches WHERE batch_id LIKE ?", (batch_id + "%",)
            )
        return _one(rows, BatchInfo, f"batch {batch_id or '(latest)'}")

    def batches(self) -> list[BatchInfo]:
        rows = self._query("SELECT record FROM batches ORDER BY created_at", ())
        return [BatchInfo.model_validate_json(r[0]) for r in rows]

    def run(self, run_id: str) -> AgentRun:
        """The run with this id (a unique prefix is enough)."""
        rows = self._query("SELECT record FROM runs WHERE run_id LIKE ?", (run_id + "%",))
        return _one(rows, AgentRun, f"run {run_id}")

    def runs(self, batch_id: str) -> list[AgentRun]:
        rows = self._query(
            "SELECT record FROM runs WHERE batch_id = ? ORDER BY task_id, attempt, retry",
            (batch_id,),
        )
        return [AgentRun.model_validate_json(r[0]) for r in rows]

    def _query(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the run store {self.path}: {exc}") from exc

    def _artifact_path(self, digest: str) -> Path:
        return self.artifacts / digest[:2] / digest[2:]


def _one(rows: list[tuple[Any, ...]], model: type[M], what: str) -> M:
    if not rows:
        raise StoreError(f"no {what} in the store")
    if len(rows) > 1:
        raise StoreError(f"{what} is ambiguous: {len(rows)} records match; give more characters")
    try:
        return model.model_validate_json(rows[0][0])
    except ValidationError as exc:
        raise StoreError(f"{what} is unreadable: {exc.errors()[0]['msg']}") from exc
