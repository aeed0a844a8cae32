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
import contextlib
import json
import os
import resource
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from groundstate.agents.scripted import ScriptedAgent
from groundstate.bindings import HARNESS
from groundstate.copies import Copies, Guard
from groundstate.environments import sqlite_live
from groundstate.environments.base import Environment, Snapshot
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
from groundstate.grading import outcome
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.runner import _settled_heap as settled_heap
from groundstate.spec.solution import Step
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.system import SystemSpec, load_system
from groundstate.store import RunStore, prepare_run
from groundstate.testing import scripted_system
from groundstate.trace import TraceCopies

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
    suite_checks: list[float] = []
    copies: list[float] = []
    copies_made: list[int] = []
    initial: list[float] = []
    calls: list[int] = []
    # One event loop for every attempt, as a batch has: asyncio.run per attempt would add its
    # own setup, and on Python 3.11 a repr of the finished task (the whole record) when it
    # restores the SIGINT handler, to every figure. And the heap as a batch has it: what was
    # alive before the attempts kept out of the collector's passes (``gc.freeze``), without
    # which a full collection of the whole heap (some 90,000 objects, about 50 ms) fell on
    # one attempt in two hundred.
    loop = asyncio.new_event_loop()
    with (
        settled_heap(),
        tempfile.TemporaryDirectory() as tmp,
        RunStore(Path(tmp) / "runs.db") as store,
        closing(loop),
        _suite_checks_timed() as checks_cpu,
        _trace_copies_timed() as copies_cpu,
        _initial_snapshots_timed() as initial_cpu,
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
                checks_cpu.clear()
                copies_cpu.clear()
                initial_cpu.clear()
                t0, c0 = time.perf_counter(), time.process_time()
                output = loop.run_until_complete(
                    run_attempt(task, suite, system, ScriptedAgent(oracle.steps), info)
                )
                attempt.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
                suite_checks.append(sum(checks_cpu))
                copies.append(sum(copies_cpu))
                copies_made.append(sum(getattr(c, "copy", True) for c in copies_cpu))
                initial.append(sum(initial_cpu))
                calls.append(sum(e.kind == "tool_call" for e in output.run.observation_action_log))
                t0 = time.perf_counter()
                # as the executors store it: with the trace lines the episode checked
                store.add_prepared([prepare_run(output.run, output.artifacts, output.trace_lines)])
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
    floor, floor_cpu = plain_sqlite_floor(suite, repeats)
    print(f"  plain-sqlite floor           {_ms(floor)}")
    print(
        f"  => overhead {(total - statistics.median(floor)) * 1000:.2f} ms per attempt over the "
        f"floor; ratio {total / statistics.median(floor):.1f}x"
    )
    # The floor runs the suite's tools but grades nothing; the harness also runs the suite's
    # own Python checks, which are the suite's code, not the harness's. CPU both sides.
    own = statistics.median(c - k for c, k in zip(cpu, suite_checks, strict=True))
    print(f"  CPU inside the suite's Python checks  {_ms(suite_checks)}")
    print(f"  CPU of the plain-sqlite floor         {_ms(floor_cpu)}")
    print(
        f"  => harness CPU over the floor's, the suite's checks aside: "
        f"{(own - statistics.median(floor_cpu)) * 1000:.2f} ms per attempt "
        f"(ratio {own / statistics.median(floor_cpu):.1f}x; storing not included)"
    )
    print(
        f"    of which the trace copies handed to Python checks and judges, and the guard "
        f"lending one to the next check {_ms(copies)}, {statistics.mean(copies_made):.1f} "
        f"copies per attempt (docs/scale.md, sixteenth and nineteenth rounds)"
    )
    print(
        f"    and the initial snapshot's copies checks ask for (s0.snapshot()), and the guard "
        f"lending one to the next check {_ms(initial)} (docs/scale.md, nineteenth round)"
    )
    fresh, fresh_cpu = _fresh_attempts(suite, system)
    print(
        f"  whole attempt with nothing pooled (a new live database: copy, connections, the "
        f"write log's triggers): {_ms(fresh)}, CPU {_ms(fresh_cpu)}"
    )
    for level in (1, 8):
        per = _through_runner(suite, repeats, level)
        print(
            f"  whole batch through the runner, concurrency {level}: {per * 1000:.2f} ms per "
            f"attempt (ratio {per / statistics.median(floor):.1f}x the floor)"
        )


def _fresh_attempts(suite: Suite, system: SystemSpec) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each task's oracle replay with the pool of live databases off,
    as the first wave of a batch runs (each attempt builds its own)."""
    wall, cpu = [], []
    loop = asyncio.new_event_loop()
    with _pool_off(), closing(loop):
        for task_id, solutions in sorted(suite.solutions.items()):
            info = AttemptInfo(run_id=f"fresh-{task_id}", batch_id="bench", attempt=1, seed=0)
            agent = ScriptedAgent(solutions["oracle"].steps)
            t0, c0 = time.perf_counter(), time.process_time()
            loop.run_until_complete(run_attempt(suite.tasks[task_id], suite, system, agent, info))
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    return wall, cpu


@contextmanager
def _pool_off() -> Iterator[None]:
    size, sqlite_live.POOL_SIZE = sqlite_live.POOL_SIZE, 0
    HARNESS.rebase()  # a constant of the harness's, changed on purpose
    try:
        yield
    finally:
        sqlite_live.POOL_SIZE = size
        HARNESS.rebase()


@dataclass
class _Oracles:
    """The in-process executor, replaying each task's oracle instead of the system's agent
    (as the canary does): the oracle replays above, run as a batch."""

    inner: Executor
    name: str = "in-process"

    def open(self, concurrency: int) -> None:
        self.inner.open(concurrency)

    def room(self, concurrency: int) -> None:
        self.inner.room(concurrency)

    def close(self) -> None:
        self.inner.close()

    async def run(self, job: AttemptJob) -> AttemptOutput:
        return await self.inner.run(replace(job, solution=job.solution or "oracle"))


def _through_runner(suite: Suite, repeats: int, level: int) -> float:
    """Seconds per attempt of a batch of every task's oracle x *repeats*, from the end of
    preflight to the last record stored: executor threads, lease checks, grouped commits
    and all."""
    with tempfile.TemporaryDirectory() as tmp, RunStore(Path(tmp) / "runs.db") as store:
        system = _replay_system(Path(tmp))  # buildable; never run (oracles are)
        executor = _Oracles(make_executor("in-process", suite))
        runner = BatchRunner(suite, system, store, executor=executor)
        config = BatchConfig(attempts=repeats, concurrency=level)
        result = asyncio.run(runner.start(config))
        elapsed = (datetime.now(UTC) - result.batch.created_at).total_seconds()
        assert all(run.success for run in result.runs), "an oracle replay failed"
    return elapsed / len(result.runs)


def _replay_system(folder: Path) -> SystemSpec:
    """A system file naming the harness's own scripted agent: loading and building it runs
    no code of a system's, so the process holds no untrusted code and the oracle replays'
    watches are skipped as ``groundstate run``'s canary (or an ``mcp-command`` system's
    attempts) skip them (see :mod:`groundstate.untrusted`). Before the forty-seventh round
    the batch ran under a Python file's system, whose import marked the process: every
    replay paid the watches."""
    loop = {"entry": "groundstate.agents.scripted:ScriptedAgent", "params": {"steps": []}}
    path = folder / "replay.yaml"
    path.write_text(json.dumps({"name": "replay", "harness": {"orchestration_loop": loop}}))
    return load_system(path)


@dataclass
class _FloorContext:
    """What a tool function needs, and nothing else: a connection and the task's clock."""

    db: sqlite3.Connection
    clock: datetime

    def now(self) -> datetime:
        return self.clock


def plain_sqlite_floor(suite: Suite, repeats: int) -> tuple[list[float], list[float]]:
    """Per attempt: copy a built fixture, connect, run the oracle's tool calls, close, delete.
    Wall and CPU seconds of each."""
    samples, cpu = [], []
    with tempfile.TemporaryDirectory() as tmp:
        built = _built_fixtures(suite, Path(tmp))
        for repeat in range(repeats):
            for task_id, solutions in sorted(suite.solutions.items()):
                task = suite.tasks[task_id]
                live = Path(tmp) / f"live-{repeat}-{task_id}.db"
                t0, c0 = time.perf_counter(), time.process_time()
                shutil.copyfile(built[task.initial_state_fixture], live)
                db = sqlite3.connect(live, isolation_level=None)
                ctx = _FloorContext(db, task.clock)
                for step in solutions["oracle"].steps:
                    if step.call is not None:
                        _floor_call(ctx, suite.tools[step.call].fn, dict(step.args))
                db.close()
                live.unlink()
                samples.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
    return samples, cpu


@contextmanager
def _suite_checks_timed() -> Iterator[list[float]]:
    """Meanwhile, every suite check function the grader looks up adds the CPU seconds its
    calls take (in the thread that runs them) to the yielded list."""
    spent: list[float] = []
    look_up = outcome.suite_function

    def timed(ref: str, suite_root: Path, checks: Any = None) -> Any:
        check = look_up(ref, suite_root, checks)

        def run(*args: Any) -> Any:
            c0 = time.thread_time()
            try:
                return check(*args)
            finally:
                spent.append(time.thread_time() - c0)

        return run

    outcome.suite_function = timed
    HARNESS.rebase()  # instrumentation, not an agent's tampering
    try:
        yield spent
    finally:
        outcome.suite_function = look_up
        HARNESS.rebase()


@contextmanager
def _trace_copies_timed() -> Iterator[list[float]]:
    """Meanwhile, each copy of a trace made for a Python check or judge, and each proof of the
    guard that lets the next check have the last one's copy (``TraceCopies.lend``), adds the
    CPU seconds it takes (in the thread that makes it) to the yielded list; a copy is an
    entry with the copy's length, a proof one of length 0 (so copies can be counted)."""
    spent: list[float] = []
    originals = {
        (TraceCopies, "fresh"): Copies.fresh,
        (Guard, "__init__"): Guard.__init__,
        (Guard, "untouched"): Guard.untouched,
        (Guard, "references"): Guard.references,
    }

    def timing(fn: Any, copy: bool) -> Any:
        def timed(*args: Any) -> Any:
            if isinstance(getattr(args[0], "value", args[-1]), Snapshot):
                return fn(*args)  # a guard of s0's copy: _initial_snapshots_timed's
            c0 = time.thread_time()
            try:
                return fn(*args)
            finally:
                spent.append(_Spent(time.thread_time() - c0, copy))

        return timed

    for (cls, name), fn in originals.items():
        setattr(cls, name, timing(fn, name == "fresh"))
    HARNESS.rebase()  # instrumentation, not an agent's tampering
    try:
        yield spent
    finally:
        del TraceCopies.fresh  # the inherited Copies.fresh again
        for (cls, name), fn in originals.items():
            if cls is Guard:
                setattr(cls, name, fn)
        HARNESS.rebase()


@contextmanager
def _initial_snapshots_timed() -> Iterator[list[float]]:
    """Meanwhile, the CPU seconds of each snapshot a check asks of its view of s0, and of
    giving a lent one back once the check has returned (where the code lends), in the thread
    that asks."""
    spent: list[float] = []
    view = outcome._BoundedView
    originals = {
        name: view.__dict__[name] for name in ("snapshot", "settle") if name in view.__dict__
    }

    def timing(fn: Any) -> Any:
        def timed(self: Any) -> Any:
            if getattr(self._view, "_baseline", None) is None:
                return fn(self)  # sT's, or a view of another kind
            c0 = time.thread_time()
            try:
                return fn(self)
            finally:
                spent.append(time.thread_time() - c0)

        return timed

    for name, fn in originals.items():
        setattr(view, name, timing(fn))
    HARNESS.rebase()
    try:
        yield spent
    finally:
        for name, fn in originals.items():
            setattr(view, name, fn)
        HARNESS.rebase()


class _Spent(float):
    """CPU seconds, and whether they made a copy (else a guard's proof)."""

    copy: bool

    def __new__(cls, seconds: float, copy: bool) -> _Spent:
        spent = super().__new__(cls, seconds)
        spent.copy = copy
        return spent


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


def one_task_suite(suite: Suite, task_id: str) -> Suite:
    """*suite* with only *task_id*, and no canary, as loaded otherwise: with the check
    modules pinned at load and the task's grader shape, so that its attempts grade as
    ``groundstate run``'s do (a suite built field by field lost them: every check call then
    looked at the check file on disk, and the watch for a regraded task was skipped)."""
    one = replace(
        suite,
        config=suite.config.model_copy(update={"canary": None}),
        tasks={task_id: suite.tasks[task_id]},
        solutions={task_id: suite.solutions[task_id]},
        graders={task_id: suite.graders[task_id]},
    )
    return one


def concurrency(
    suite: Suite, latency: float, levels: list[int], attempts_per_level: int, executor: str
) -> None:
    task_id = sorted(suite.tasks)[0]
    steps = suite.solutions[task_id]["oracle"].steps
    one = one_task_suite(suite, task_id)
    duration = latency * len(steps)
    print(
        f"\nconcurrency ({executor}): {len(steps)} steps x {latency * 1000:.0f} ms simulated "
        f"model latency = {duration:.2f} s per attempt; timed from the end of preflight"
    )
    print(
        f"  {'concurrency':>11} {'attempts':>8} {'attempts/s':>10} {'ideal':>8} {'efficiency':>10}"
        f" {'median latency':>15} {'CPU/attempt':>12} {'sys':>4} {'switches':>8}"
        f" {'CPU ceiling':>12}  bound by"
    )
    with tempfile.TemporaryDirectory() as folder:
        system = _slow_oracle_system(Path(folder), steps, latency)
        (Path(folder) / "unwaited").mkdir()
        unwaited = _slow_oracle_system(Path(folder) / "unwaited", steps, 0.0)
        for level in levels:
            n = max(attempts_per_level, level * 2)
            batch = _batch_rate(one, system, level, n, executor)
            ideal = level / duration
            ceiling = batch.cores / batch.cpu
            bound = _bound(level, batch, ideal, ceiling)
            print(
                f"  {level:>11} {n:>8} {batch.rate:>10.1f} {ideal:>8.1f} {batch.rate / ideal:>9.0%}"
                f" {batch.latency:>13.3f} s {batch.cpu * 1000:>9.1f} ms {batch.sys_share:>4.0%}"
                f" {batch.switches:>8.0f} {ceiling:>10.1f}/s  {bound}"
            )
        # The same batch with no wait before each step: the CPU the waits add (docs/scale.md,
        # "Thirty-sixth round"): the same work, run with cold caches after each wait.
        level = min(levels)
        alone = _batch_rate(one, unwaited, level, max(attempts_per_level, level * 2), executor)
    print(
        f"  the same batch at concurrency {level} with no simulated latency:"
        f" {alone.cpu * 1000:.1f} ms CPU per attempt, {alone.switches:.0f} switches"
        f" (beside the row at {level}: what the waits add, the same work slower after each)"
    )
    print(
        "  CPU/attempt: this process's CPU (and its pool workers') from the batch's first attempt"
        " (after preflight) to its end, per attempt;"
        " sys: the kernel's share of it; switches: voluntary context switches per attempt"
        " (this process: waits for the GIL, locks, I/O)."
        f"\n  CPU ceiling: {_CEILINGS[executor]}"
        " divided by CPU/attempt: no schedule runs faster. At the ideal rate of the top level an"
        f" attempt could use at most {duration / max(levels) * 1000:.2f} ms of CPU"
        " (per core of the ceiling). Load average at the end:"
        f" {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores."
    )


_CEILINGS = {
    "in-process": "one interpreter (one GIL)",
    "process": "the workers (at most one core each, as many as the machine has)",
}


def _bound(level: int, batch: _Batch, ideal: float, ceiling: float) -> str:
    """What holds the rate back: the agent's own latency (near ideal), each attempt's own
    time with the harness's work in it (near ``level / recorded latency``), the CPU (near the
    ceiling), or none of them (waiting: turns, locks, the store, scheduling)."""
    if batch.rate >= 0.85 * ideal:
        return "the agent's own latency"
    if batch.rate >= 0.85 * level / batch.latency:
        return "each attempt's latency (the agent's + the harness's work in it)"
    if batch.rate >= 0.75 * ceiling:
        return "CPU per attempt"
    return "waiting (other load on the machine, turns, locks, store, scheduling)"


@dataclass
class _Batch:
    rate: float
    """Attempts per second, from the end of preflight to the last record stored."""
    cpu: float
    """CPU seconds per attempt, from the batch's first job: this process and its pool
    workers."""
    sys_share: float
    switches: float
    """Voluntary context switches of this process per attempt (a thread waiting for the GIL,
    a lock or I/O); preemptions by other processes are left out."""
    latency: float
    """The median recorded latency."""
    cores: int
    """Cores the CPU can use at once: one interpreter in-process, the workers otherwise."""


@dataclass
class _Metered:
    """An executor whose CPU is read from the batch's first job (the end of preflight, where
    the rate's clock starts too): this process's usage then, and its pool workers' from
    then until it closes (workers are the fork server's children: not in this process's own
    usage). Preflight's fixed cost (building the system, the store's checks) stays out of
    the CPU per attempt, as it stays out of the rate.

    Each worker's CPU is read again whenever a job ends, and kept by process: a worker that
    retires (an attempt left something in it) or dies is replaced by a new one, and its CPU
    until its last job stays counted (summing the live workers' at the end lost it, and
    counted the new one's from zero against the old one's start: a negative CPU per
    attempt)."""

    inner: Executor
    name: str = ""
    own: resource.struct_rusage | None = None
    """This process's usage at the batch's first job."""
    started: dict[int, float] | None = None
    """Each worker's CPU seconds at the batch's first job, by process id."""
    seen: dict[int, float] = field(default_factory=dict)
    """Each worker's CPU seconds when last read, by process id (workers since gone too)."""

    def __post_init__(self) -> None:
        self.name = self.inner.name

    @property
    def workers(self) -> float:
        """The workers' CPU seconds from the batch's first job (those started later: all)."""
        if self.started is None:
            return 0.0
        return sum(cpu - self.started.get(pid, 0.0) for pid, cpu in self.seen.items())

    def open(self, concurrency: int) -> None:
        self.inner.open(concurrency)

    def room(self, concurrency: int) -> None:
        self.inner.room(concurrency)

    def close(self) -> None:
        self._read()
        self.inner.close()

    async def run(self, job: AttemptJob) -> AttemptOutput:
        if self.started is None and job.info.batch_id not in ("canary", "smoke"):
            self.own = resource.getrusage(resource.RUSAGE_SELF)
            self._read()
            self.started = dict(self.seen)
        try:
            return await self.inner.run(job)
        finally:
            self._read()

    def _read(self) -> None:
        self.seen.update(_workers_cpu(self.inner))


def _workers_cpu(executor: Executor) -> dict[int, float]:
    """User + system CPU seconds of each of *executor*'s worker processes so far, by process
    id (Linux /proc; a worker gone meanwhile is left out)."""
    found = {}
    for pid in getattr(executor, "worker_pids", []):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            found[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return found


def _batch_rate(suite: Suite, system: SystemSpec, level: int, n: int, executor: str) -> _Batch:
    """One batch of *n* attempts at concurrency *level*, measured (see :class:`_Batch`)."""
    with tempfile.TemporaryDirectory() as tmp, RunStore(Path(tmp) / "runs.db") as store:
        metered = _Metered(make_executor(executor, suite))
        runner = BatchRunner(suite, system, store, executor=metered)
        before = resource.getrusage(resource.RUSAGE_SELF)
        result = asyncio.run(runner.start(BatchConfig(attempts=n, concurrency=level)))
        elapsed = (datetime.now(UTC) - result.batch.created_at).total_seconds()
        after = resource.getrusage(resource.RUSAGE_SELF)
    before = metered.own or before
    user, sys = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    switches = after.ru_nvcsw - before.ru_nvcsw  # waits (the GIL, I/O); not preemptions
    pool = getattr(metered.inner, "worker_pids", None) is not None
    cores = min(level, os.cpu_count() or 1) if pool else 1
    return _Batch(
        rate=n / elapsed,
        cpu=(user + sys + metered.workers) / n,
        sys_share=sys / max(user + sys, 1e-9),
        switches=switches / n,
        latency=statistics.median(r.latency for r in result.runs if r.latency is not None),
        cores=cores,
    )


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
