"""What one attempt costs as the database grows (prints figures; not a test).

A generated suite with one table of N accounts and one task whose oracle credits one account:
the agent changes one row whatever N is. An attempt's cost should follow what the agent did,
not the size of the state; the issue's target is at most 2x from 100 to 100,000 rows. The
first attempt of a fixture in a process builds it and reads its initial state (hashes, row
digests), which every later attempt reuses: it is shown apart. Then the environment's stages,
timed alone at each size (first build, build, reset, one call, state hash, diff, health probe,
a full snapshot for reference, and close), to show which of them grow with the rows. "build"
takes the live database the first build's environment left in the process's pool, and
"close" writes the build back into it for the next.

Run: ``make bench`` (or ``.venv/bin/python bench/size_curve.py [--quick]``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from groundstate.agents.scripted import ScriptedAgent
from groundstate.environments.base import diff_from_initial, in_tool_call, initial_snapshot
from groundstate.episode import AttemptInfo, default_environment, run_attempt
from groundstate.spec.suite import Suite, load_suite
from groundstate.testing import scripted_system

SUITE = "name: size\ntools: tools.py\nmutation_testing: off\ntool_robustness: off\n"
TOOLS = '''
from groundstate.tools import ToolContext, tool


@tool
def credit(ctx: ToolContext, account: str, amount: int) -> int:
    """Add amount to an account's balance; return the new balance."""
    ctx.db.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", (amount, account))
    row = ctx.db.execute("SELECT balance FROM accounts WHERE id = ?", (account,)).fetchone()
    return int(row[0])
'''
FIXTURE = """
CREATE TABLE accounts (id TEXT PRIMARY KEY, balance INTEGER NOT NULL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})
INSERT INTO accounts SELECT printf('acct-%07d', i), 100 FROM n;
"""
TASK = """
task_id: credit
task_revision: 1
source: groundstate bench
initial_state_fixture: accounts.sql
clock: "2026-01-15T10:00:00+00:00"
user_request: Please credit 42 to acct-0000007.
available_tools: [credit]
step_limit: 3
time_limit: 600
outcome_assertions:
  - id: credited
    sql: SELECT balance FROM accounts WHERE id = 'acct-0000007'
    expect_rows: [[142]]
"""
ORACLE = """
kind: oracle
steps:
  - call: credit
    args: {account: acct-0000007, amount: 42}
  - finish: Done.
"""


def make_suite(root: Path, rows: int) -> Path:
    for name, text in {
        "suite.yaml": SUITE,
        "tools.py": TOOLS,
        "fixtures/accounts.sql": FIXTURE.format(rows=rows),
        "tasks/credit.yaml": TASK,
        "solutions/credit/oracle.yaml": ORACLE,
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def attempt_costs(sizes: tuple[int, ...], repeats: int) -> dict[int, tuple[float, list[float]]]:
    """Per size: seconds of the first attempt (which builds the fixture and reads its initial
    state, once per process) and of *repeats* attempts after it. The sizes take turns, so a
    busy machine slows them alike and their ratio holds."""
    with tempfile.TemporaryDirectory() as tmp:
        suites = {rows: load_suite(make_suite(Path(tmp) / str(rows), rows)) for rows in sizes}
        times: dict[int, list[float]] = {rows: [] for rows in sizes}
        for n in range(repeats + 1):
            for rows, suite in suites.items():
                times[rows].append(_attempt(suite, n, rows))
    return {rows: (samples[0], samples[1:]) for rows, samples in times.items()}


def _attempt(suite: Suite, n: int, rows: int) -> float:
    task, oracle = suite.tasks["credit"], suite.solutions["credit"]["oracle"]
    info = AttemptInfo(run_id=f"size-{rows}-{n}", batch_id="bench", attempt=n + 1, seed=0)
    agent = ScriptedAgent(oracle.steps)
    t0 = time.perf_counter()
    output = asyncio.run(run_attempt(task, suite, scripted_system(), agent, info))
    elapsed = time.perf_counter() - t0
    if not output.run.success:
        raise SystemExit(f"the size bench's oracle failed at {rows} rows")
    return elapsed


def stage_costs(rows: int) -> dict[str, float]:
    """Seconds of each environment stage at *rows* rows (one sample each; the fixture's first
    build in the process, then an attempt's stages with one row changed)."""
    costs = {}
    with tempfile.TemporaryDirectory() as tmp:
        suite = load_suite(make_suite(Path(tmp), rows))
        task = suite.tasks["credit"]
        t0 = time.perf_counter()
        with default_environment(task, suite) as env:
            costs["first build"] = time.perf_counter() - t0
            env.health()  # the build's full integrity check, once per process
            initial_snapshot(env)  # the initial snapshot, once per process
        t0 = time.perf_counter()
        env = default_environment(task, suite)  # takes the first's live database from the pool
        costs["build"] = time.perf_counter() - t0
        try:
            stages = (
                ("reset", env.reset),
                ("one call", lambda: in_tool_call(env, _credit)),
                ("state hash", env.state_hash),
                ("diff", lambda: diff_from_initial(env, initial_snapshot(env))),
                ("health probe", env.health),
                ("full snapshot", env.snapshot),  # for reference: no attempt reads one now
            )
            for stage, work in stages:
                t0 = time.perf_counter()
                work()
                costs[stage] = time.perf_counter() - t0
        finally:
            t0 = time.perf_counter()
            env.close()  # restores the file in place and hands it to the pool
            costs["close"] = time.perf_counter() - t0
    return costs


def _credit(db: Any) -> None:
    db.execute("UPDATE accounts SET balance = balance + 42 WHERE id = 'acct-0000007'")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, for a smoke run")
    args = parser.parse_args()
    print("\nsize curve: one attempt changing one row of an N-row table")
    print(f"  {'rows':>8} {'per attempt':>12} {'x 100 rows':>10} {'first attempt':>14}")
    base = None
    sizes = (100, 10_000, 100_000)
    for rows, (first, samples) in attempt_costs(sizes, 5 if args.quick else 40).items():
        cost = statistics.median(samples)
        base = base or cost
        print(f"  {rows:>8} {cost * 1000:>9.1f} ms {cost / base:>9.1f}x {first * 1000:>11.1f} ms")
    print("  (the first attempt builds the fixture and reads its initial state: once per process)")
    print("  environment stages, ms (one sample each):")
    table = {rows: stage_costs(rows) for rows in sizes}
    print("  " + f"{'stage':<14}" + "".join(f"{rows:>10}" for rows in sizes))
    for stage in table[100]:
        cells = "".join(f"{table[rows][stage] * 1000:>10.1f}" for rows in sizes)
        print(f"  {stage:<14}{cells}")


if __name__ == "__main__":
    main()
