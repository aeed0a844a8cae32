"""What one attempt costs as the database grows (prints figures; not a test).

A generated suite with one table of N accounts and one task whose oracle credits one account:
the agent changes one row whatever N is. An attempt's cost should follow what the agent did,
not the size of the state; the issue's target is at most 2x from 100 to 100,000 rows. Then
the environment's per-attempt stages, timed alone at each size (build, reset, state hash,
snapshot, diff, health probe), to show which of them grow with the rows.

Run: ``make bench`` (or ``.venv/bin/python bench/size_curve.py [--quick]``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from groundstate.agents.scripted import ScriptedAgent
from groundstate.environments.base import diff_snapshots
from groundstate.episode import AttemptInfo, default_environment, run_attempt
from groundstate.spec.suite import load_suite
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


def attempt_cost(rows: int, repeats: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        suite = load_suite(make_suite(Path(tmp), rows))
        task, oracle = suite.tasks["credit"], suite.solutions["credit"]["oracle"]
        samples = []
        for n in range(1, repeats + 1):
            info = AttemptInfo(run_id=f"size-{n}", batch_id="bench", attempt=n, seed=0)
            agent = ScriptedAgent(oracle.steps)
            t0 = time.perf_counter()
            output = asyncio.run(run_attempt(task, suite, scripted_system(), agent, info))
            samples.append(time.perf_counter() - t0)
            if not output.run.success:
                raise SystemExit(f"the size bench's oracle failed at {rows} rows")
    return samples


def stage_costs(rows: int) -> dict[str, float]:
    """Seconds of each environment stage of one attempt at *rows* rows (one sample each)."""
    costs = {}
    with tempfile.TemporaryDirectory() as tmp:
        suite = load_suite(make_suite(Path(tmp), rows))
        task = suite.tasks["credit"]
        t0 = time.perf_counter()
        with default_environment(task, suite) as env:
            costs["build"] = time.perf_counter() - t0
            for stage, work in (
                ("reset", env.reset),
                ("state hash", env.state_hash),
                ("snapshot", env.snapshot),
                ("health probe", env.health),
            ):
                t0 = time.perf_counter()
                work()
                costs[stage] = time.perf_counter() - t0
            before, after = env.snapshot(), env.snapshot()
            t0 = time.perf_counter()
            diff_snapshots(before, after)
            costs["diff"] = time.perf_counter() - t0
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, for a smoke run")
    args = parser.parse_args()
    print("\nsize curve: one attempt changing one row of an N-row table")
    print(f"  {'rows':>8} {'per attempt':>12} {'x 100 rows':>10}")
    base = None
    for rows in (100, 10_000, 100_000):
        repeats = 1 if args.quick or rows >= 100_000 else 3
        cost = statistics.median(attempt_cost(rows, repeats))
        base = base or cost
        print(f"  {rows:>8} {cost * 1000:>9.1f} ms {cost / base:>9.1f}x")
    print("  environment stages, ms (one sample each):")
    sizes = (100, 10_000, 100_000)
    table = {rows: stage_costs(rows) for rows in sizes}
    print("  " + f"{'stage':<14}" + "".join(f"{rows:>10}" for rows in sizes))
    for stage in table[100]:
        cells = "".join(f"{table[rows][stage] * 1000:>10.1f}" for rows in sizes)
        print(f"  {stage:<14}{cells}")


if __name__ == "__main__":
    main()
