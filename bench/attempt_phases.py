"""Where an attempt's CPU goes, phase by phase (prints figures; not a test).

The 18 retail oracle replays go through ``run_attempt`` (as ``bench/overhead.py`` runs them),
each phase of the attempt wrapped with its own thread's CPU clock (``time.thread_time``: the
agent's thread runs the tool calls, the checks' thread the Python checks, so a process-wide
profiler of one thread misses them). Printed per attempt: each phase's CPU and how often it
ran, the whole attempt's process CPU, the suite's own Python checks, and the plain-sqlite
floor's CPU (``bench/overhead.py``), with the harness's CPU over the floor, the suite's checks
and storing aside (the figure issue 10's 1 ms target is about).

Phases nest (a row indented under another is part of it); a phase missing from the code under
test is left out. With ``--against OTHER/src`` the same measure runs in fresh processes on this
tree's sources and on *OTHER*'s, alternating, and both are printed side by side (medians over
the pairs): before and after figures taken in one run on the same machine load.

Run: ``.venv/bin/python bench/attempt_phases.py [--repeats 5] [--against ../main/src --pairs 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the bench folder is no package (tests load this file by path)
    sys.path.insert(0, str(HERE))

import side_by_side  # noqa: E402

SUITE = HERE.parent / "examples" / "retail"

# (module, owner inside it or "", attribute, label): the label's indentation shows nesting.
PHASES = [
    ("groundstate.episode", "", "build_environment", "build the environment"),
    ("groundstate.environments.sqlite", "SqliteEnvironment", "reset", "reset"),
    ("groundstate.environments.sqlite", "SqliteEnvironment", "health", "health probes"),
    ("groundstate.episode", "EpisodeSession", "__init__", "session set-up"),
    ("groundstate.loopthreads", "_LoopThread", "_run", "the agent's job, its loop thread [agent]"),
    ("groundstate.episode", "EpisodeSession", "_said", "  messages to the user [agent]"),
    ("groundstate.loopthreads", "", "_shared_hooks", "process-wide state read (loop threads)"),
    ("groundstate.loopthreads", "", "_put_back_shared", "process-wide state put back"),
    ("groundstate.loopthreads", "", "put_back_wake_path", "wake path looked at, put back"),
    ("groundstate.gateway", "ToolGateway", "call", "  tool calls through the gateway [agent]"),
    ("groundstate.gateway", "ToolGateway", "_execute", "    the tool's transaction"),
    ("groundstate.episode", "", "final_state", "final state: hash and diff"),
    ("groundstate.episode", "", "run_checks", "grading [attempt thread]"),
    ("groundstate.grading.constraints", "", "_evaluate", "  declarative constraints"),
    ("groundstate.grading.constraints", "", "python_checks", "  hand-off to the checks' thread"),
    ("groundstate.deadline", "", "_call", "checks' thread: each check [checks]"),
    ("groundstate.copies", "Copies", "fresh", "  isolation: the trace's first copy"),
    ("groundstate.copies", "Guard", "__init__", "  isolation: its guard"),
    ("groundstate.copies", "Guard", "untouched", "  isolation: untouched before a lend"),
    ("groundstate.copies", "Guard", "references", "  isolation: references after a check"),
    ("groundstate.episode", "", "_rebound", "rebinding watch (_rebound)"),
    ("groundstate.bindings", "Bindings", "mark", "rebinding watch: mark"),
    ("groundstate.episode", "", "_resystemed", "system changed in memory (_resystemed)"),
    ("groundstate.episode", "", "_regraded", "task changed in memory (_regraded)"),
    ("groundstate.episode", "", "_behind_gateway", "writes/locks outside calls"),
    ("groundstate.episode", "", "_outside_session", "calls outside the session"),
    ("groundstate.episode", "", "_untrue", "record against the account (_untrue)"),
    ("groundstate.episode", "", "_record", "building the record"),
    ("groundstate.environments.sqlite", "SqliteEnvironment", "__exit__", "closing / pooling"),
]
CHECKS = "  the suite's own Python checks"
ATTEMPT = "the attempt's own thread, all of it [attempt]"
OTHERS = "other threads: the agent's loop thread, ... [agent]"


class _Meter:
    """CPU seconds and calls per label, across threads."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()

    def add(self, label: str, seconds: float) -> None:
        with self.lock:
            self.spent[label] += seconds
            self.calls[label] += 1

    def clear(self) -> None:
        self.spent.clear()
        self.calls.clear()


def _wrap(meter: _Meter, owner: Any, name: str, label: str) -> None:
    fn = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        c0 = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            meter.add(label, time.thread_time() - c0)

    setattr(owner, name, timed)


def _instrument(meter: _Meter) -> list[str]:
    """Wrap each phase found; the labels wrapped, in order."""
    import importlib

    from groundstate.bindings import HARNESS
    from groundstate.grading import outcome

    found = []
    for module_name, owner_name, name, label in PHASES:
        module = importlib.import_module(module_name)
        owner = getattr(module, owner_name, None) if owner_name else module
        if owner is None or not hasattr(owner, name):
            continue
        if isinstance(owner, type) and name not in owner.__dict__:
            continue
        _wrap(meter, owner, name, label)
        found.append(label)
        if label.startswith("checks' thread"):
            found.append(CHECKS)
    look_up = outcome.suite_function

    def timed_lookup(ref: str, suite_root: Path, checks: Any = None) -> Any:
        check = look_up(ref, suite_root, checks)

        def run(*args: Any) -> Any:
            c0 = time.thread_time()
            try:
                return check(*args)
            finally:
                meter.add(CHECKS, time.thread_time() - c0)

        return run

    outcome.suite_function = timed_lookup
    HARNESS.rebase()  # instrumentation, not an agent's tampering
    return found


def measure(repeats: int) -> dict[str, Any]:
    """Per attempt: each phase's CPU milliseconds and calls, the attempt's process CPU, the
    record's storing, and the floor's CPU (medians where per attempt)."""
    from overhead import plain_sqlite_floor

    from groundstate.agents.scripted import ScriptedAgent
    from groundstate.episode import AttemptInfo, run_attempt
    from groundstate.runner import _settled_heap as settled_heap
    from groundstate.spec.suite import load_suite
    from groundstate.store import RunStore, prepare_run
    from groundstate.testing import scripted_system

    suite, system = load_suite(SUITE), scripted_system()
    meter = _Meter()
    labels = _instrument(meter)
    loop = asyncio.new_event_loop()
    cpu: list[float] = []
    own: list[float] = []
    storing: list[float] = []
    with settled_heap(), tempfile.TemporaryDirectory() as tmp, RunStore(Path(tmp) / "r.db") as st:
        for repeat in range(repeats + 1):  # the first round warms up
            for task_id, solutions in sorted(suite.solutions.items()):
                info = AttemptInfo(
                    run_id=f"{task_id}-{repeat}", batch_id="bench", attempt=repeat + 1, seed=0
                )
                agent = ScriptedAgent(solutions["oracle"].steps)
                checks = meter.spent[CHECKS]
                c0, t0 = time.process_time(), time.thread_time()
                output = loop.run_until_complete(
                    run_attempt(suite.tasks[task_id], suite, system, agent, info)
                )
                c1 = time.process_time()
                meter.add(ATTEMPT, time.thread_time() - t0)
                st.add_prepared([prepare_run(output.run, output.artifacts, output.trace_lines)])
                if repeat:
                    cpu.append(c1 - c0)
                    own.append(c1 - c0 - (meter.spent[CHECKS] - checks))
                    storing.append(time.process_time() - c1)
            if not repeat:
                meter.clear()
    loop.close()
    floor = statistics.median(plain_sqlite_floor(suite, repeats)[1])
    n = repeats * len(suite.solutions)
    checks_thread = next(label for label in labels if label.startswith("checks' thread"))
    rest = sum(cpu) - meter.spent[ATTEMPT] - meter.spent[checks_thread]
    meter.spent[OTHERS], meter.calls[OTHERS] = rest, n
    return {
        "phases": {
            label: (meter.spent[label] / n * 1000, meter.calls[label] / n)
            for label in [ATTEMPT, OTHERS, *labels]
        },
        "attempt": statistics.median(cpu) * 1000,
        "storing": statistics.median(storing) * 1000,
        "floor": floor * 1000,
        "over_floor": (statistics.median(own) - floor) * 1000,
    }


def _print_one(result: dict[str, Any]) -> None:
    print(f"{'phase (per attempt)':48} {'CPU ms':>8} {'calls':>6}")
    for label, (ms, calls) in result["phases"].items():
        print(f"{label:48} {ms:8.3f} {calls:6.1f}")
    _print_totals([result])


def _print_totals(results: list[dict[str, Any]]) -> None:
    for key, label in (
        ("attempt", "whole attempt, process CPU (median)"),
        ("storing", "preparing and storing the record"),
        ("floor", "plain-sqlite floor, CPU"),
        ("over_floor", "harness CPU over the floor (checks, storing aside)"),
    ):
        print(f"{label:48} " + " ".join(f"{r[key]:8.3f}" for r in results))


def _child(src: str, repeats: int) -> dict[str, Any]:
    return side_by_side.child(__file__, src, "--repeats", str(repeats))


def compare(this: str, other: str, repeats: int, pairs: int) -> None:
    runs = side_by_side.alternate(this, other, pairs, lambda src: _child(src, repeats))

    def median(src: str, label: str, at: int) -> float | None:
        values = [r["phases"][label][at] for r in runs[src] if label in r["phases"]]
        return statistics.median(values) if values else None

    labels = list(dict.fromkeys([*runs[other][0]["phases"], *runs[this][0]["phases"]]))
    print(f"medians of {pairs} alternating pairs; CPU ms per attempt (calls per attempt)")
    print(f"{'phase':48} {'other':>16} {'this tree':>16}")
    for label in labels:
        cells = []
        for src in (other, this):
            ms, calls = median(src, label, 0), median(src, label, 1)
            cells.append("-" if ms is None else f"{ms:7.3f} ({calls:5.1f})")
        print(f"{label:48} {cells[0]:>16} {cells[1]:>16}")
    for key, label in (
        ("attempt", "whole attempt, process CPU"),
        ("storing", "preparing and storing the record"),
        ("floor", "plain-sqlite floor, CPU"),
        ("over_floor", "harness CPU over the floor (checks, storing aside)"),
    ):
        cells = [statistics.median(r[key] for r in runs[src]) for src in (other, this)]
        print(f"{label:48} {cells[0]:16.3f} {cells[1]:16.3f}")
    for src in (other, this):
        each = ", ".join(f"{r['over_floor']:.2f}" for r in runs[src])
        print(f"  over the floor, each run of {src}: {each}")
    print(side_by_side.load_line())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="rounds of the 18 replays")
    side_by_side.add_options(parser)
    args = parser.parse_args()
    if args.against:
        this = str(HERE.parent / "src")
        compare(this, str(Path(args.against).resolve()), args.repeats, args.pairs)
    elif args.json:
        print(json.dumps(measure(args.repeats)))
    else:
        _print_one(measure(args.repeats))


if __name__ == "__main__":
    main()
