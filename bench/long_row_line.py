"""A row file with one long line: ``import-results`` of a gzip JSON Lines file whose third row
carries ``--mib`` Mi characters in a column no field reads (prints figures; not a test).

Imports it with the command line in a child process and prints the child's exit status, the
first line of its error and its peak resident memory. A line past ``table.LINE_LIMIT`` (64 Mi
characters) is refused before it is read whole; under it, the row is read.

Run: ``.venv/bin/python bench/long_row_line.py [--mib 300]``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path


def write_rows(path: Path, mib: int) -> None:
    """Two short rows, then one whose ``notes`` hold *mib* Mi characters, streamed."""
    with gzip.open(path, "wb", compresslevel=1) as handle:
        for attempt in (0, 1):
            row = {"task_id": "t", "attempt": attempt, "success": attempt == 0}
            handle.write(json.dumps(row).encode() + b"\n")
        handle.write(b'{"task_id": "t", "attempt": 2, "success": true, "notes": "')
        chunk = b"x" * (1 << 20)
        for _ in range(mib):
            handle.write(chunk)
        handle.write(b'"}\n')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=300)
    mib = parser.parse_args().mib
    with tempfile.TemporaryDirectory() as tmp:
        source, store = Path(tmp) / "rows.jsonl.gz", Path(tmp) / "runs.db"
        write_rows(source, mib)
        done = subprocess.run(
            [sys.executable, "-m", "groundstate.cli", "import-results", str(source), "--name",
             "bench", "--store", str(store)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        said = (done.stderr or done.stdout).strip().splitlines()
        print(
            f"file            {source.stat().st_size / 2**20:>8.1f} MiB of gzip, a line of {mib} Mi"
        )
        print(f"exit status     {done.returncode:>8}")
        print(f"said            {said[0] if said else ''}")
        print(f"peak RSS        {peak:>8.0f} MiB  (the importing process)")


if __name__ == "__main__":
    main()
