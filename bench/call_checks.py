"""What the checks for writes outside the tool calls cost per call (prints figures; not a test).

Two checks added in the nineteenth round run at every tool call (docs/scale.md, twentieth round):

1. The workspace environment hashes the work tree as each call begins (is it as the last call
   left it?) and as it ends (what the next call compares with): two tree hashes per call,
   over every file's record, so the cost grows with the tree. Printed for trees of several
   sizes, beside the whole tool transaction (its snapshots before and after, the write
   report) and one empty call's CPU without the two hashes.
2. The PostgreSQL environment deletes the write log's rows no call took as each call begins
   (one more statement per call). Printed beside a one-row update's whole transaction;
   skipped with a message when no server can be had (``GROUNDSTATE_POSTGRES_URL``, or
   initdb/pg_ctl on the machine) or psycopg is not installed (``groundstate[postgres]``).

CPU of this process (``time.process_time``), median of several interleaved rounds: the
machine may be shared, and CPU moves less than wall time under load.

Run: ``.venv/bin/python bench/call_checks.py [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from typing import Any

from groundstate.environments.workspace import WorkspaceEnvironment, _records
from groundstate.spec.canonical import hash_value

CLOCK = datetime(2024, 1, 1, 12, 0)
RETAIL_SQL = Path(__file__).resolve().parent.parent / "examples/retail/fixtures/retail.sql"


def _cpu(fn: Callable[[], object], times: int) -> float:
    """CPU seconds per call of *fn*, over *times* calls."""
    c0 = time.process_time()
    for _ in range(times):
        fn()
    return (time.process_time() - c0) / times


def _repository(folder: Path, files: int) -> Path:
    """A git repository of *files* small source files in folders of 50."""
    repo = folder / f"repo-{files}"
    for i in range(files):
        path = repo / f"pkg{i // 50}" / f"mod{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def f{i}():\n    return {i}\n")
    for command in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "fixture"],
    ):
        subprocess.run(["git", "-C", str(repo), *command], check=True, capture_output=True)
    return repo


def workspace(sizes: list[int], rounds: int, calls: int) -> None:
    print("workspace: CPU per tool call (one file written), by the work tree's size")
    print(
        f"  {'files':>6} {'whole call':>11} {'two tree hashes':>16} {'share':>6}"
        f" {'one hash':>9} {'per file':>9}"
    )
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        envs = {}
        for size in sizes:
            env = WorkspaceEnvironment(
                _repository(Path(tmp), size), clock=CLOCK, options={"sandbox": "none"}
            )
            stack.enter_context(env)
            env.reset()
            envs[size] = env
        whole: dict[int, list[float]] = {size: [] for size in sizes}
        hashes: dict[int, list[float]] = {size: [] for size in sizes}
        for _ in range(rounds):  # interleaved: each round measures every size
            for size, env in envs.items():

                def call(env: WorkspaceEnvironment = env) -> None:
                    with env.tool_transaction():
                        (env.root / "pkg0" / "mod0.py").write_text(f"x = {time.monotonic_ns()}\n")

                whole[size].append(_cpu(call, calls))
                snapshot = env.snapshot()

                def hashed(snapshot: Any = snapshot) -> None:
                    hash_value(_records(snapshot))

                hashes[size].append(2 * _cpu(hashed, calls))
        for size in sizes:
            call_cpu, hash_cpu = statistics.median(whole[size]), statistics.median(hashes[size])
            print(
                f"  {size:>6} {call_cpu * 1000:>8.2f} ms {hash_cpu * 1000:>13.2f} ms"
                f" {hash_cpu / call_cpu:>6.0%} {hash_cpu / 2 * 1000:>6.2f} ms"
                f" {hash_cpu / 2 / size * 1e6:>6.2f} µs"
            )
    print(
        f"  (median of {rounds} rounds of {calls} calls; 'two tree hashes': what the nineteenth "
        "round's check adds to each call, timed apart on the same tree)"
    )


UPDATE = (
    "UPDATE customers SET zip_code = zip_code"
    " WHERE customer_id = (SELECT min(customer_id) FROM customers)"
)


def postgres(rounds: int, calls: int) -> None:
    print("\npostgres: CPU per tool call (one row updated), and the write log's check in it")
    try:
        from groundstate.environments.postgres import PostgresEnvironment
        from groundstate.environments.postgres_server import shared_server

        shared_server()
    except ImportError as exc:
        print(f"  skipped: psycopg is not installed (groundstate[postgres]): {exc}")
        return
    except Exception as exc:  # no server can be had here
        print(f"  skipped: no PostgreSQL server ({type(exc).__name__}: {exc})")
        return
    with PostgresEnvironment(RETAIL_SQL, clock=CLOCK) as env:
        env.reset()

        def call() -> None:
            with env.tool_transaction():
                env.agent_db.execute(UPDATE)

        def check() -> None:
            env._logged_outside("as a call began")

        whole, logged = [], []
        for _ in range(rounds):
            whole.append(_cpu(call, calls))
            logged.append(_cpu(check, calls))
        c, w = statistics.median(whole), statistics.median(logged)
        wall = _wall(check, calls)
        print(
            f"  whole call {c * 1000:.3f} ms CPU; the write log's check alone {w * 1000:.3f} ms "
            f"CPU ({w / c:.0%} of the call; {wall * 1000:.3f} ms wall, a round trip to the "
            f"server); median of {rounds} rounds of {calls} calls"
        )


def _wall(fn: Callable[[], object], times: int) -> float:
    t0 = time.perf_counter()
    for _ in range(times):
        fn()
    return (time.perf_counter() - t0) / times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and sizes")
    parser.add_argument("--sizes", help="comma-separated work tree sizes in files")
    args = parser.parse_args()
    sizes = [10, 100, 1000] if args.quick else [10, 100, 1000, 5000]
    if args.sizes:
        sizes = [int(size) for size in args.sizes.split(",")]
    rounds = 3 if args.quick else 7
    workspace(sizes, rounds, 5 if args.quick else 10)
    postgres(rounds, 20 if args.quick else 50)


if __name__ == "__main__":
    main()
