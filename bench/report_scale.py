"""How long ``report --json`` takes on a large imported batch (prints figures; not a test).

Builds a store holding one imported batch of ``--tasks`` x ``--attempts`` attempts (1,000,000
by default) with direct batched inserts: each row is a valid ``AgentRun`` record of an import,
with its record hash and chain link, so ``verify`` finds nothing wrong. Then times, in this
process, the stages of the report (verify, reading the outcome columns, the statistics and
the JSON), and the whole ``groundstate report BATCH --json`` command in a fresh process.

With ``--via-import``, the batch is instead written as a CSV and stored by ``groundstate
import-results`` (which seals it), and the reports that follow are timed: the first one
after the import takes the import's seal.

Run: ``.venv/bin/python bench/report_scale.py [--tasks 10000 --attempts 100] [--keep DIR]
[--stats-only | --via-import]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from groundstate.analysis import OutcomeTable, batch_report
from groundstate.seal import full_check, holding_seal
from groundstate.store import BatchInfo, RunStore, chain_genesis, record_hash

ROWS_PER_INSERT = 20_000


def _batch(tasks: int, attempts: int) -> BatchInfo:
    ids = [f"task-{i:06d}" for i in range(tasks)]
    return BatchInfo(
        batch_id=uuid.uuid4().hex[:12],
        created_at=datetime.now(UTC),
        suite="scale",
        suite_path="scale.csv",
        suite_hash="0" * 64,
        system_spec_hash="imported:" + "0" * 16,
        system_spec={"name": "scale"},
        attempts=attempts,
        seed=0,
        task_revisions=dict.fromkeys(ids, 0),
        task_weights=dict.fromkeys(ids, 1.0),
        task_slices={i: [f"slice-{n % 7}"] for n, i in enumerate(ids)},
        source="imported",
    )


def _template(batch: BatchInfo, started: str) -> str:
    """A canonical record (sorted keys, no spaces) with %-slots for what varies by row."""
    record: dict[str, object] = {
        "artifact_locations": {}, "attempt": "@attempt", "batch_id": batch.batch_id,
        "constraint_results": [], "cost": "@cost", "final_message": None,
        "final_state_hash": None, "format_version": 2, "grader_revision": "imported",
        "infrastructure_status": {"imported": True}, "initial_state_hash": None,
        "latency": "@latency", "observation_action_log": [], "outcome_assertion_results": [],
        "partial_score": None, "retry": 0, "retry_of": None, "run_id": "@run_id", "seed": 0,
        "started_at": started, "success": "@success",
        "system_spec_hash": batch.system_spec_hash, "task_id": "@task_id", "task_revision": 0,
        "terminal_reason": "@reason", "usage": {"input_tokens": 0, "output_tokens": 0},
    }  # fmt: skip
    text = json.dumps(record, sort_keys=True, separators=(",", ":"))
    for slot in ("attempt", "cost", "latency", "success"):
        text = text.replace(f'"@{slot}"', f"%({slot})s")
    for slot in ("run_id", "task_id", "reason"):
        text = text.replace(f'"@{slot}"', f'"%({slot})s"')
    return text


def _rows(batch: BatchInfo, attempts: int, seed: int) -> Iterator[tuple[object, ...]]:
    """Rows of the runs table in chain order. Records are canonical JSON, so a record's
    hash is the sha256 of its text (what ``record_hash`` recomputes when verifying)."""
    rng = np.random.default_rng(seed)
    previous = chain_genesis(batch.batch_id, record_hash(batch.model_dump_json()))
    started = batch.created_at.isoformat().replace("+00:00", "Z")
    template = _template(batch, started)
    seq = 0
    for task_id in sorted(batch.task_revisions):
        draws = rng.random(attempts).tolist()
        p = float(rng.beta(2, 2))
        for attempt, u in enumerate(draws, start=1):
            seq += 1
            reason = (
                "environment_failure" if u > 0.995 else ("success" if u < p else "agent_failure")
            )
            run_id = f"{seq:032x}"
            text = template % {
                "attempt": attempt, "cost": repr(round(0.01 + u / 100, 6)),
                "latency": repr(round(1 + 9 * u, 6)),
                "success": "true" if reason == "success" else "false",
                "run_id": run_id, "task_id": task_id, "reason": reason,
            }  # fmt: skip
            content = hashlib.sha256(text.encode("ascii")).hexdigest()
            link = f'["{previous}", "{run_id}", "{content}", "{{}}"]'  # json.dumps of the list
            previous = hashlib.sha256(link.encode("ascii")).hexdigest()
            yield (
                run_id, batch.batch_id, task_id, attempt, 0, reason, int(reason == "success"),
                started, text, seq, content, "{}", previous,
            )  # fmt: skip


def build(path: Path, tasks: int, attempts: int, seed: int = 0) -> str:
    """The store at *path* with one batch; returns its id."""
    batch = _batch(tasks, attempts)
    with RunStore(path) as store:
        store.add_batch(batch)
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF")
    rows = _rows(batch, attempts, seed)
    last: tuple[object, ...] = ()
    with db:
        while chunk := [row for _, row in zip(range(ROWS_PER_INSERT), rows, strict=False)]:
            db.executemany(
                "INSERT INTO runs (run_id, batch_id, task_id, attempt, retry, terminal_reason, "
                "success, created_at, record, seq, record_hash, artifact_hashes, chain_hash) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                chunk,
            )
            last = chunk[-1]
        db.execute("INSERT INTO chains VALUES (?, ?, ?)", (batch.batch_id, last[9], last[12]))
    db.close()
    return batch.batch_id


class _Clock:
    """Wall and CPU seconds since it started: on a shared, loaded machine the CPU time of
    this process is the better estimate of the wall time it would take alone."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def wall_seconds(self) -> float:
        return time.perf_counter() - self.wall

    def __str__(self) -> str:
        wall, cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu
        return f"{wall:7.2f} s wall, {cpu:6.2f} s CPU"


def stages(path: Path, batch_id: str, verify: bool) -> None:
    with RunStore(path) as store:
        if verify:
            start = _Clock()
            found = len(store.verify(batch_id).problems)
            print(f"  verify (every record and chain link)   {start}  problems: {found}")
        start = _Clock()
        batch = store.batch(batch_id)
        rows = OutcomeTable.from_chunks(store.outcome_chunks(batch_id))
        print(f"  read the outcome fields (streamed)     {start}  tries: {len(rows)}")
        if verify:
            start = _Clock()
            check, _ = full_check(store, batch_id)
            print(
                f"  full check + seal (first report)       {start}  problems: {len(check.problems)}"
            )
        start = _Clock()
        held = holding_seal(store, batch_id)
        print(f"  seal re-checked, sealed columns read   {start}  holds: {held is not None}")
    start = _Clock()
    data = batch_report(batch, held[1] if held else rows)
    print(f"  statistics (both views, all k, slices) {start}")
    start = _Clock()
    text = json.dumps(data)
    print(f"  JSON                                   {start}  {len(text) / 1e6:.1f} MB")


# The child's peak from VmHWM (its own address space since exec): ru_maxrss would start from
# this process's size at fork, which is kept across exec.
_CHILD = """
import runpy, sys
sys.argv = ["groundstate", *sys.argv[1:]]
try:
    runpy.run_module("groundstate.cli", run_name="__main__")
finally:
    status = open("/proc/self/status").read().split("VmHWM:")[1].split()[0]
    print(status, file=sys.stderr)
"""


def command(path: Path, batch_id: str) -> str:
    """Wall time, CPU time and peak memory of the whole command in a fresh process, and the
    integrity check it made (``full`` or ``seal``, and who sealed)."""
    wall, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    args = ["report", batch_id, "--json", "--store", str(path)]
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ},
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    peak = int(done.stderr.split()[-1]) / 1024
    check = json.loads(done.stdout)["integrity"]
    how = check["check"] + (f" by {check['sealed_by']}" if check.get("sealed_by") else "")
    return f"{time.perf_counter() - wall:.2f} s wall, {cpu:.2f} s CPU, peak {peak:.0f} MB ({how})"


def via_import(folder: Path, tasks: int, attempts: int) -> tuple[Path, str]:
    """The same shape of batch, written as a CSV and stored by ``import-results``."""
    source, path = folder / "results.csv", folder / "runs.db"
    rng = np.random.default_rng(0)
    with source.open("w", encoding="ascii") as out:
        out.write("task_id,attempt,success,terminal_reason,cost,latency,slice_labels\n")
        for task in range(tasks):
            p = float(rng.beta(2, 2))
            for attempt, u in enumerate(rng.random(attempts).tolist(), start=1):
                reason = "success" if u < p else "agent_failure"
                reason = "environment_failure" if u > 0.995 else reason
                out.write(
                    f"task-{task:06d},{attempt},{int(reason == 'success')},{reason},"
                    f"{round(0.01 + u / 100, 6)},{round(1 + 9 * u, 6)},slice-{task % 7}\n"
                )
    wall, before = _Clock(), resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "groundstate.cli", "import-results", str(source), "--name",
         "scale", "--store", str(path), "--json"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    print(f"import-results (a fresh process)   {wall.wall_seconds():.2f} s wall, {cpu:.2f} s CPU")
    return path, json.loads(done.stdout)["batch_id"]


def unseal(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM seals")
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--attempts", type=int, default=100)
    parser.add_argument("--keep", type=Path, help="Build the store here (reused if there).")
    parser.add_argument("--stats-only", action="store_true", help="Skip verify and the command.")
    parser.add_argument(
        "--via-import", action="store_true", help="Store the batch with import-results."
    )
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="gs-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    if args.via_import:
        path, batch_id = via_import(folder, args.tasks, args.attempts)
        print(f"`groundstate report {batch_id} --json`, each in a fresh process:")
        print(f"  first after the import                   {command(path, batch_id)}")
        print(f"  again                                    {command(path, batch_id)}")
        return
    path = folder / "runs.db"
    if path.exists():
        with RunStore(path) as store:
            batch_id = store.batch().batch_id
        print(f"reusing {path}")
    else:
        start = _Clock()
        batch_id = build(path, args.tasks, args.attempts)
        total = f"{args.tasks * args.attempts:,} attempts ({args.tasks:,} tasks x {args.attempts})"
        print(f"built {total} in {start}")
    print("report stages, in this process:")
    stages(path, batch_id, verify=not args.stats_only)
    if not args.stats_only:
        print(f"`groundstate report {batch_id} --json`, each in a fresh process:")
        unseal(path)
        print(f"  first, no seal (full check, then seals)  {command(path, batch_id)}")
        print(f"  again, the seal holds                    {command(path, batch_id)}")


if __name__ == "__main__":
    main()
