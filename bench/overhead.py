"""Harness overhead and concurrency efficiency (prints figures; not a test).

1. Overhead per attempt: a zero-latency scripted agent replays each example task's oracle
   (several tool calls each); we time building and resetting the environment, the whole
   attempt (reset, episode, grading), grading alone, and storing the record. Beside it, the
   plain-sqlite floor measured in the same run: copy a built fixture file, connect, run the
   oracle's tool functions in one transaction each, close, delete. The ratio of the two is
   what the harness costs over doing the agent's work on a fresh database by hand.
2. Concurrency: an agent that waits a fixed simulated model latency before each step;
   attempts per second at several concurrency levels, against the ideal
   ``concurrency / attempt duration``, and the median recorded latency beside the agent's
   own (queueing is not counted in it).

Run: ``make bench`` (or ``.venv/bin/python bench/overhead.py [--quick]``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shutil
import sqlite3
import statistics
import tempfile
import time
from contextlib import closing
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from groundstate.agents.scripted import ScriptedAgent
from groundstate.environments.base import Environment
from groundstate.episode import (
    AttemptInfo,
    AttemptJob,
    AttemptOutput,
    EpisodeSession,
    default_environment,
    grade,
    run_attempt,
)
from groundstate.errors import ToolError
from groundstate.executors import Executor, make_executor
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.spec.solution import Step
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.system import SystemSpec, load_system
from groundstate.store import RunStore
from groundstate.testing import scripted_system

SUITE = Path(__file__).resolve().parent.parent / "examples" / "retail"


def _ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:7.2f} ms (median of {len(samples)})"


def overhead(suite: Suite, repeats: int) -> None:
    system = scripted_system()
    reset: list[float] = []
    attempt: list[float] = []
    grading: list[float] = []
    storing: list[float] = []
    cpu: list[float] = []
    calls: list[int] = []
    # One event loop for every attempt, as a batch has: asyncio.run per attempt would add its
    # own setup, and on Python 3.11 a repr of the finished task (the whole record) when it
    # restores the SIGINT handler, to every figure.
    loop = asyncio.new_event_loop()
    with (
        tempfile.TemporaryDirectory() as tmp,
        RunStore(Path(tmp) / "runs.db") as store,
        closing(loop),
    ):
        for repeat in range(1, repeats + 1):
            for task_id, solutions in sorted(suite.solutions.items()):
                task, oracle = suite.tasks[task_id], solutions["oracle"]
                t0 = time.perf_counter()
                with default_environment(task, suite) as env:
                    env.reset()
                    reset.append(time.perf_counter() - t0)
                    grading.append(_time_grading(suite, task_id, env, oracle.steps, loop))
                info = AttemptInfo(
                    run_id=f"{task_id}-{repeat}", batch_id="bench", attempt=repeat, seed=0
                )
                t0, c0 = time.perf_counter(), time.process_time()
                output = loop.run_until_complete(
                    run_attempt(task, suite, system, ScriptedAgent(oracle.steps), info)
                )
                attempt.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
                calls.append(sum(e.kind == "tool_call" for e in output.run.observation_action_log))
                t0 = time.perf_counter()
                store.add_run(output.run, output.artifacts)
                storing.append(time.perf_counter() - t0)
    print(
        f"overhead per attempt, {len(suite.tasks)} example tasks x {repeats}, "
        f"{statistics.mean(calls):.1f} tool calls per attempt on average:"
    )
    print(f"  build + reset environment   {_ms(reset)}")
    print(f"  whole attempt (reset, episode, grading)  {_ms(attempt)}")
    print(f"  CPU of the whole attempt    {_ms(cpu)} (this process, all threads)")
    print(f"  grading alone               {_ms(grading)}")
    print(f"  storing the record          {_ms(storing)}")
    total = statistics.median(attempt) + statistics.median(storing)
    print(
        f"  => about {total * 1000:.1f} ms of harness time per attempt, {1 / total:.0f} attempts/s"
    )
    floor = plain_sqlite_floor(suite, repeats)
    print(f"  plain-sqlite floor           {_ms(floor)}")
    print(
        f"  => overhead {(total - statistics.median(floor)) * 1000:.2f} ms per attempt over the "
        f"floor; ratio {total / statistics.median(floor):.1f}x"
    )
    for level in (1, 8):
        per = _through_runner(suite, repeats, level)
        print(
            f"  whole batch through the runner, concurrency {level}: {per * 1000:.2f} ms per "
            f"attempt (ratio {per / statistics.median(floor):.1f}x the floor)"
        )


@dataclass
class _Oracles:
    """The in-process executor, replaying each task's oracle instead of the system's agent
    (as the canary does): the oracle replays above, run as a batch."""

    inner: Executor
    name: str = "in-process"

    def open(self, concurrency: int) -> None:
        self.inner.open(concurrency)

    def close(self) -> None:
        self.inner.close()

    async def run(self, job: AttemptJob) -> AttemptOutput:
        return await self.inner.run(replace(job, solution=job.solution or "oracle"))


def _through_runner(suite: Suite, repeats: int, level: int) -> float:
    """Seconds per attempt of a batch of every task's oracle x *repeats*, from the end of
    preflight to the last record stored: executor threads, lease checks, grouped commits
    and all."""
    with tempfile.TemporaryDirectory() as tmp, RunStore(Path(tmp) / "runs.db") as store:
        system = _slow_oracle_system(Path(tmp), [], 0.0)  # buildable; never run (oracles are)
        executor = _Oracles(make_executor("in-process", suite))
        runner = BatchRunner(suite, system, store, executor=executor)
        config = BatchConfig(attempts=repeats, concurrency=level)
        result = asyncio.run(runner.start(config))
        elapsed = (datetime.now(UTC) - result.batch.created_at).total_seconds()
        assert all(run.success for run in result.runs), "an oracle replay failed"
    return elapsed / len(result.runs)


@dataclass
class _FloorContext:
    """What a tool function needs, and nothing else: a connection and the task's clock."""

    db: sqlite3.Connection
    clock: datetime

    def now(self) -> datetime:
        return self.clock


def plain_sqlite_floor(suite: Suite, repeats: int) -> list[float]:
    """Per attempt: copy a built fixture, connect, run the oracle's tool calls, close, delete."""
    samples = []
    with tempfile.TemporaryDirectory() as tmp:
        built = _built_fixtures(suite, Path(tmp))
        for repeat in range(repeats):
            for task_id, solutions in sorted(suite.solutions.items()):
                task = suite.tasks[task_id]
                live = Path(tmp) / f"live-{repeat}-{task_id}.db"
                t0 = time.perf_counter()
                shutil.copyfile(built[task.initial_state_fixture], live)
                db = sqlite3.connect(live, isolation_level=None)
                ctx = _FloorContext(db, task.clock)
                for step in solutions["oracle"].steps:
                    if step.call is not None:
                        _floor_call(ctx, suite.tools[step.call].fn, dict(step.args))
                db.close()
                live.unlink()
                samples.append(time.perf_counter() - t0)
    return samples


def _floor_call(ctx: _FloorContext, fn: Any, args: dict[str, Any]) -> None:
    ctx.db.execute("BEGIN")
    try:
        fn(ctx, **args)
    except ToolError:
        ctx.db.execute("ROLLBACK")
    else:
        ctx.db.execute("COMMIT")


def _built_fixtures(suite: Suite, folder: Path) -> dict[str, Path]:
    """Each ``.sql`` fixture executed once into a database file (built outside the timing)."""
    built = {}
    for task in suite.tasks.values():
        name = task.initial_state_fixture
        if name not in built:
            built[name] = folder / f"{Path(name).stem}.db"
            with sqlite3.connect(built[name]) as db:
                db.executescript(suite.fixture_path(task).read_text())
            db.close()
    return built


def _time_grading(
    suite: Suite, task_id: str, env: Environment, steps: list[Step], loop: asyncio.AbstractEventLoop
) -> float:
    """Replay the oracle on *env*, then time grading its final state."""
    task = suite.tasks[task_id]
    session = EpisodeSession(task, suite, scripted_system(), env, seed=0)
    s0 = env.snapshot()
    loop.run_until_complete(ScriptedAgent(steps).run(session))
    t0 = time.perf_counter()
    grade(task, suite, env, s0, session.events)
    return time.perf_counter() - t0


SLOW_ORACLE = """
import asyncio


async def slow_oracle(session, latency: float, steps: list) -> str | None:
    \"\"\"Replays an oracle, waiting *latency* seconds (a model's turn) before each step.\"\"\"
    for step in steps:
        await asyncio.sleep(latency)
        if step["call"] is not None:
            await session.call(step["call"], step["args"])
        elif step["say"] is not None:
            await session.say(step["say"])
        else:
            return step["finish"]
    return None
"""


def _slow_oracle_system(folder: Path, steps: list[Step], latency: float) -> SystemSpec:
    """A system file whose agent replays *steps* slowly: loadable by pool workers too, and
    run without live factories, as ``groundstate run`` runs a system."""
    (folder / "slow_oracle.py").write_text(SLOW_ORACLE)
    params = {
        "latency": latency,
        "steps": [s.model_dump() for s in steps],
    }
    system = folder / "system.yaml"
    system.write_text(
        json.dumps(
            {
                "name": "slow-oracle",
                "harness": {
                    "orchestration_loop": {"entry": "slow_oracle.py:slow_oracle", "params": params}
                },
            }
        )
    )
    return load_system(system)


def concurrency(
    suite: Suite, latency: float, levels: list[int], attempts_per_level: int, executor: str
) -> None:
    task_id = sorted(suite.tasks)[0]
    steps = suite.solutions[task_id]["oracle"].steps
    one = suite.__class__(
        suite.root,
        suite.config,
        {task_id: suite.tasks[task_id]},
        {task_id: suite.solutions[task_id]},
        suite.files,
    )
    one.config = one.config.model_copy(update={"canary": None})
    duration = latency * len(steps)
    print(
        f"\nconcurrency ({executor}): {len(steps)} steps x {latency * 1000:.0f} ms simulated "
        f"model latency = {duration:.2f} s per attempt; timed from the end of preflight"
    )
    print(
        f"  {'concurrency':>11} {'attempts':>8} {'attempts/s':>10} {'ideal':>8} {'efficiency':>10}"
        f" {'median latency':>15} {'CPU/attempt':>12} {'CPU ceiling':>12}"
    )
    with tempfile.TemporaryDirectory() as folder:
        system = _slow_oracle_system(Path(folder), steps, latency)
        for level in levels:
            n = max(attempts_per_level, level * 2)
            rate, cpu, recorded = _batch_rate(one, system, level, n, executor)
            ideal = level / duration
            used = (
                f" {cpu * 1000:>9.1f} ms {1 / cpu:>10.1f}/s"
                if executor == "in-process"
                else f" {'-':>12} {'-':>12}"  # workers are the fork server's children, not ours
            )
            print(
                f"  {level:>11} {n:>8} {rate:>10.1f} {ideal:>8.1f} {rate / ideal:>9.0%}"
                f" {recorded:>13.3f} s{used}"
            )


def _batch_rate(
    suite: Suite, system: SystemSpec, level: int, n: int, executor: str
) -> tuple[float, float, float]:
    """Attempts per second of one batch (from the end of preflight, which is a fixed cost per
    batch, to the last record stored), CPU seconds per attempt over the whole batch (worker
    processes included), and the median recorded latency."""
    with tempfile.TemporaryDirectory() as tmp, RunStore(Path(tmp) / "runs.db") as store:
        runner = BatchRunner(suite, system, store, executor=make_executor(executor, suite))
        cpu0 = _cpu_seconds()
        result = asyncio.run(runner.start(BatchConfig(attempts=n, concurrency=level)))
        elapsed = (datetime.now(UTC) - result.batch.created_at).total_seconds()
        cpu = (_cpu_seconds() - cpu0) / n
    return n / elapsed, cpu, statistics.median(r.latency for r in result.runs)


def _cpu_seconds() -> float:
    """User + system CPU of this process. In-process, every attempt runs in one interpreter
    (one GIL), so ``1 / CPU per attempt`` is the most attempts per second it can run, however
    they are scheduled: efficiency cannot pass ``ceiling / ideal``."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, for a smoke run")
    parser.add_argument(
        "--levels", help="comma-separated concurrency levels (default 1,8,64,256; quick 1,8)"
    )
    parser.add_argument("--executor", default="in-process", choices=["in-process", "process"])
    parser.add_argument("--no-overhead", action="store_true", help="only the concurrency part")
    args = parser.parse_args()
    suite = load_suite(SUITE)
    if not args.no_overhead:
        overhead(suite, repeats=1 if args.quick else 5)
    levels = [1, 8] if args.quick else [1, 8, 64, 256]
    if args.levels:
        levels = [int(level) for level in args.levels.split(",")]
    attempts = 8 if args.quick else 32
    concurrency(suite, 0.05, levels, attempts, args.executor)


if __name__ == "__main__":
    main()
