"""Side by side with Inspect AI: the same attempt in both harnesses (prints figures; not a test).

Each attempt: a mock model (groundstate: a scripted agent; Inspect: ``mockllm`` answering from
the conversation so far) calls ``check_pin`` then ``transfer`` against a per-attempt copy of a
small SQLite bank, then says it is done; the same state check then reads the balances. Both
run the attempts one at a time and write their usual records (groundstate's run store,
Inspect's eval log), and the per-attempt cost and the ratio are printed.

Inspect is optional: without ``inspect_ai`` installed (``pip install inspect-ai``) this says
it is skipped. The Inspect half follows Inspect's documented API (``mockllm`` with a callable
``custom_outputs``, ``use_tools``, ``generate``, a custom scorer, ``store()``); it was written
where Inspect was not installed, so its first run on a new Inspect version may need care.

Run: ``make bench`` (or ``.venv/bin/python bench/inspect_compare.py [--attempts N]``).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import os
import platform
import shutil
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

from groundstate.agents.scripted import ScriptedAgent
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.spec.suite import load_suite
from groundstate.store import RunStore
from groundstate.testing import scripted_system

FIXTURE = """
CREATE TABLE accounts (id TEXT PRIMARY KEY, balance INTEGER NOT NULL, pin TEXT NOT NULL);
INSERT INTO accounts VALUES ('A', 100, '1234'), ('B', 50, '9999'), ('C', 0, '0000');
"""
EXPECTED = [("A", 70), ("B", 80), ("C", 0)]
CALLS = [
    ("check_pin", {"account": "A", "pin": "1234"}),
    ("transfer", {"source": "A", "target": "B", "amount": 30}),
]
FINAL = "Moved 30 from A to B."
CHECK = "SELECT id, balance FROM accounts ORDER BY id"

SUITE_FILES = {
    "suite.yaml": "name: mini-bank\ntools: tools.py\nmutation_testing: off\ntool_robustness: off\n",
    "fixtures/bank.sql": FIXTURE,
    "tools.py": '''
from groundstate.errors import ToolError
from groundstate.tools import ToolContext, tool


@tool
def check_pin(ctx: ToolContext, account: str, pin: str) -> bool:
    """Check an account's PIN."""
    row = ctx.db.execute("SELECT pin FROM accounts WHERE id = ?", (account,)).fetchone()
    if row is None or row[0] != pin:
        raise ToolError("wrong account or PIN")
    return True


@tool
def transfer(ctx: ToolContext, source: str, target: str, amount: int) -> str:
    """Move amount from source to target."""
    ctx.db.execute("UPDATE accounts SET balance = balance - ? WHERE id = ?", (amount, source))
    ctx.db.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", (amount, target))
    return "ok"
''',
    "tasks/transfer.yaml": """
task_id: transfer
task_revision: 1
source: groundstate bench
initial_state_fixture: bank.sql
clock: "2026-01-15T10:00:00+00:00"
user_request: Please move 30 from my account A to account B. My PIN is 1234.
available_tools: [check_pin, transfer]
step_limit: 5
time_limit: 60
outcome_assertions:
  - id: balances
    sql: SELECT id, balance FROM accounts ORDER BY id
    expect_rows: [[A, 70], [B, 80], [C, 0]]
""",
    "solutions/transfer/oracle.yaml": """
kind: oracle
steps:
  - call: check_pin
    args: {account: A, pin: "1234"}
  - call: transfer
    args: {source: A, target: B, amount: 30}
  - finish: Moved 30 from A to B.
""",
}


def write_suite(root: Path) -> Path:
    for name, text in SUITE_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


class Cost(NamedTuple):
    """Seconds per attempt: wall, and this process's CPU (every thread), the better estimate
    on a loaded machine of what the attempt costs alone."""

    wall: float
    cpu: float


class Timer:
    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def per(self, attempts: int) -> Cost:
        wall, cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu
        return Cost(wall / attempts, cpu / attempts)


def groundstate_cost(root: Path, attempts: int) -> Cost:
    """Seconds per attempt of a stored batch (its preflight, one more attempt, included)."""
    suite = load_suite(root)
    steps = suite.solutions["transfer"]["oracle"].steps
    with RunStore(root / "runs.db") as store:
        runner = BatchRunner(
            suite, scripted_system(), store, make_agent=lambda: ScriptedAgent(steps)
        )
        timer = Timer()
        result = asyncio.run(runner.start(BatchConfig(attempts=attempts)))
        cost = timer.per(attempts)
    if not all(r.success for r in result.runs):
        raise SystemExit("groundstate's oracle failed the comparison task")
    return cost


def inspect_cost(root: Path, attempts: int) -> Cost:
    """Seconds per sample of an Inspect eval doing the same work."""
    inspect_ai: Any = importlib.import_module("inspect_ai")
    dataset: Any = importlib.import_module("inspect_ai.dataset")
    model_mod: Any = importlib.import_module("inspect_ai.model")
    scorer_mod: Any = importlib.import_module("inspect_ai.scorer")
    solver_mod: Any = importlib.import_module("inspect_ai.solver")
    tool_mod: Any = importlib.import_module("inspect_ai.tool")
    util: Any = importlib.import_module("inspect_ai.util")
    built = root / "inspect-fixture.db"
    with sqlite3.connect(built) as db:
        db.executescript(FIXTURE)
    db.close()
    copies = root / "inspect-copies"
    copies.mkdir(exist_ok=True)

    def connect() -> sqlite3.Connection:
        return sqlite3.connect(util.store().get("db"), isolation_level=None)

    def check_pin() -> Any:
        async def execute(account: str, pin: str) -> str:
            """Check an account's PIN.

            Args:
                account: The account id.
                pin: The PIN the customer gave.
            """
            db = connect()
            try:
                row = db.execute("SELECT pin FROM accounts WHERE id = ?", (account,)).fetchone()
            finally:
                db.close()
            if row is None or row[0] != pin:
                raise tool_mod.ToolError("wrong account or PIN")
            return "verified"

        return execute

    def transfer() -> Any:
        async def execute(source: str, target: str, amount: int) -> str:
            """Move amount from source to target.

            Args:
                source: The account to debit.
                target: The account to credit.
                amount: The amount to move.
            """
            db = connect()
            try:
                db.execute("BEGIN")
                db.execute(
                    "UPDATE accounts SET balance = balance - ? WHERE id = ?", (amount, source)
                )
                db.execute(
                    "UPDATE accounts SET balance = balance + ? WHERE id = ?", (amount, target)
                )
                db.execute("COMMIT")
            finally:
                db.close()
            return "ok"

        return execute

    def fresh_database() -> Any:
        async def solve(state: Any, generate: Any) -> Any:
            path = copies / f"{state.sample_id}.db"
            shutil.copyfile(built, path)
            util.store().set("db", str(path))
            return state

        return solve

    def balances() -> Any:
        async def score(state: Any, target: Any) -> Any:
            db = connect()
            try:
                rows = db.execute(CHECK).fetchall()
            finally:
                db.close()
            ok = rows == EXPECTED
            return scorer_mod.Score(value=scorer_mod.CORRECT if ok else scorer_mod.INCORRECT)

        return score

    # Inspect's decorators applied as calls: they are untyped, and mypy is strict here.
    make_check_pin, make_transfer = tool_mod.tool(check_pin), tool_mod.tool(transfer)
    make_fresh = solver_mod.solver(fresh_database)
    make_scorer = scorer_mod.scorer(metrics=[scorer_mod.accuracy()])(balances)

    def next_output(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> Any:
        done = sum(getattr(m, "role", "") == "tool" for m in messages)
        if done < len(CALLS):
            name, args = CALLS[done]
            output = model_mod.ModelOutput.for_tool_call(
                model="mockllm/model", tool_name=name, tool_arguments=args
            )
        else:
            output = model_mod.ModelOutput.from_content(model="mockllm/model", content=FINAL)
        # Usage given, as groundstate's scripted agent gives none to count: without it
        # mockllm counts tokens with tiktoken, which downloads its encoding (no network here,
        # and work groundstate's side does not do).
        output.usage = model_mod.ModelUsage(input_tokens=0, output_tokens=0, total_tokens=0)
        return output

    task = inspect_ai.Task(
        dataset=[
            dataset.Sample(id=n, input="Please move 30 from my account A to account B.")
            for n in range(1, attempts + 1)
        ],
        solver=[
            make_fresh(),
            solver_mod.use_tools([make_check_pin(), make_transfer()]),
            solver_mod.generate(),
        ],
        scorer=make_scorer(),
    )
    model = model_mod.get_model("mockllm/model", custom_outputs=next_output, memoize=False)
    timer = Timer()
    logs = inspect_ai.eval(
        task, model=model, max_samples=1, log_dir=str(root / "inspect-logs"), display="none"
    )
    cost = timer.per(attempts)
    if logs[0].status != "success":
        error = logs[0].error
        raise SystemExit(f"Inspect's eval ended {logs[0].status}: {error and error.message}")
    accuracy = logs[0].results.scores[0].metrics["accuracy"].value
    if accuracy != 1.0:
        raise SystemExit(f"Inspect's side of the comparison scored {accuracy}, not 1.0")
    return cost


def machine() -> str:
    """CPU model, cores, Python and the load average: what the figures were measured on."""
    cpu = (
        next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            platform.processor() or "unknown CPU",
        )
        if Path("/proc/cpuinfo").exists()
        else platform.processor()
    )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}, load average {load}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=200, help="attempts per harness a round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per harness")
    args = parser.parse_args()
    have_inspect = importlib.util.find_spec("inspect_ai") is not None
    print(f"\nside by side with Inspect AI ({args.attempts} attempts a round, one at a time):")
    print(f"  machine: {machine()}")
    ours: list[Cost] = []
    theirs: list[Cost] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(args.rounds + 1):
            # Round 0 warms both up (imports done on first use, caches) and is not counted.
            attempts = 5 if n == 0 else args.attempts
            root = write_suite(Path(tmp) / f"round-{n}")
            cost = groundstate_cost(root, attempts)
            if n:
                ours.append(cost)
            if have_inspect:
                cost = inspect_cost(root, attempts)
                if n:
                    theirs.append(cost)
    mine = _line("groundstate", ours)
    if not have_inspect:
        print("  Inspect AI   skipped: inspect_ai is not installed (pip install inspect-ai)")
        return
    version = importlib.import_module("inspect_ai").__version__
    other = _line(f"Inspect AI {version}", theirs)
    print(
        f"  => groundstate costs {mine.wall / other.wall:.2f}x what Inspect costs per attempt "
        f"in wall time, {mine.cpu / other.cpu:.2f}x in CPU time"
    )


def _line(name: str, costs: list[Cost]) -> Cost:
    """Print the median wall and CPU ms per attempt over the rounds (and each round's wall)."""
    wall = statistics.median(c.wall for c in costs) * 1000
    cpu = statistics.median(c.cpu for c in costs) * 1000
    rounds = ", ".join(f"{c.wall * 1000:.1f}" for c in costs)
    print(
        f"  {name:<20} {wall:7.2f} ms wall, {cpu:7.2f} ms CPU per attempt (wall by round: {rounds})"
    )
    return Cost(wall, cpu)


if __name__ == "__main__":
    main()
