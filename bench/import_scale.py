"""Import at scale: ``import-results`` of a large row file (prints figures; not a test).

Writes a CSV of ``--rows`` attempts (1,000 tasks, 0-based trials, a weight and a horizon per
task, one invalid try in 50), imports it with the command line in a child process, and prints
rows per second and the child's peak resident memory; then checks the stored batch by
counting its rows.

Run: ``.venv/bin/python bench/import_scale.py [--rows 1000000]``.
"""

from __future__ import annotations

import argparse
import csv
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TASKS = 1000


def write_rows(path: Path, rows: int) -> None:
    """*rows* attempts spread over :data:`TASKS` tasks, streamed to disk."""
    trials = max(1, rows // TASKS)
    with path.open("w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["task_id", "attempt", "success", "terminal_reason", "cost", "latency",
                      "weight", "horizon"])  # fmt: skip
        written = 0
        for trial in range(trials):
            for task in range(TASKS):
                if written == rows:
                    return
                ok = (task * 7 + trial) % 3 != 0
                reason = "success" if ok else "agent_failure/incorrect_state"
                if not ok and (task + trial) % 50 == 0:
                    reason = "environment_failure/setup"
                out.writerow([f"task-{task:04d}", trial, int(ok), reason, 0.01, 1.5,
                              1 + task % 3, 1 + task % 15])  # fmt: skip
                written += 1


def import_file(path: Path, store: Path) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of the importing child, and its output."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "groundstate.cli", "import-results", str(path), "--name", "bench",
         "--store", str(store)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"import failed ({done.returncode}): {done.stderr}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    rows = parser.parse_args().rows
    with tempfile.TemporaryDirectory() as tmp:
        source, store = Path(tmp) / "results.csv", Path(tmp) / "runs.db"
        write_rows(source, rows)
        size = source.stat().st_size / 2**20
        seconds, cpu, peak, output = import_file(source, store)
        with sqlite3.connect(store) as db:
            stored = db.execute("SELECT count(*) FROM runs").fetchone()[0]
        print(output.strip())
        print(f"rows            {rows:>12,}  ({size:.0f} MiB CSV, {TASKS} tasks)")
        print(f"stored          {stored:>12,}")
        print(f"wall time       {seconds:>12.1f} s  (child process, start-up included)")
        print(f"CPU time        {cpu:>12.1f} s  (the machine's load shows as wall - CPU)")
        print(f"throughput      {rows / seconds:>12,.0f} rows/s  ({rows / cpu:,.0f} per CPU s)")
        print(f"peak RSS        {peak:>12.0f} MiB  (the importing process)")
        print(f"store size      {store.stat().st_size / 2**20:>12.0f} MiB")


if __name__ == "__main__":
    main()
