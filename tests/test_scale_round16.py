"""Sixteenth round, harness overhead at scale: profiling a batch the way docs/scale.md does."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

from groundstate.copies import Copies, Guard
from groundstate.spec.suite import load_suite
from groundstate.testing import run_solution
from groundstate.trace import TraceCopies

from .conftest import BANK

SRC = Path(__file__).resolve().parent.parent / "src"

# One graded oracle replay of the bank suite, in a process of its own, optionally with a
# cProfile profiler on every thread started from then on (the usual recipe for profiling
# threaded code on Python 3.11: ``threading.setprofile`` with a hook that enables a profiler
# on its thread). The attempt runs on a thread joined with a generous limit, so that an
# attempt that never ends is reported, not waited for.
_CHILD = textwrap.dedent(
    """
    import cProfile, json, sys, threading, time
    from pathlib import Path
    from groundstate.spec.suite import load_suite
    from groundstate.testing import run_solution

    suite = load_suite(Path(sys.argv[1]))
    profilers = []
    if sys.argv[2] == "profiled":
        def hook(frame, event, arg):
            sys.setprofile(None)
            profiler = cProfile.Profile(time.thread_time)
            profilers.append(profiler)
            profiler.enable()
        threading.setprofile(hook)
    found = {}
    def replay():
        run = run_solution(suite, "transfer", "oracle")
        results = run.outcome_assertion_results + run.constraint_results
        found["run"] = {
            "success": run.success,
            "terminal_reason": run.terminal_reason,
            "final_state_hash": run.final_state_hash,
            "checks": [[c.id, c.kind, c.passed, c.error] for c in results],
        }
    worker = threading.Thread(target=replay, daemon=True)
    worker.start()
    worker.join(120)
    threading.setprofile(None)
    print(json.dumps({"run": found.get("run"), "profiled_threads": len(profilers)}))
    sys.stdout.flush()
    import os
    os._exit(0)  # daemon threads waiting for ever must not hold the process open
    """
)


def _replay(mode: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(BANK), mode],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_an_attempt_under_a_per_thread_cprofile_profiler_ends_with_the_same_record() -> None:
    # The loop thread that runs the agent put back the profile function it started with by
    # handing sys.setprofile what sys.getprofile gave: under cProfile, the profiler object,
    # which setprofile refuses. The thread died before delivering the agent's outcome and the
    # attempt waited for ever.
    plain, profiled = _replay("plain"), _replay("profiled")
    assert plain["run"] is not None
    assert profiled["profiled_threads"] != 0  # the profiler did run on the harness's threads
    assert profiled["run"] == plain["run"]


_PIECES = textwrap.dedent(
    """
    import asyncio, cProfile, sys, threading, time
    from groundstate.loopthreads import in_loop_thread

    def hook(frame, event, arg):
        sys.setprofile(None)
        cProfile.Profile(time.thread_time).enable()
    threading.setprofile(hook)

    async def turns_it_off():
        sys.setprofile(None)
        return threading.get_ident()

    async def reads():
        return threading.get_ident(), type(sys.getprofile()).__name__

    async def main():
        first = await asyncio.wait_for(in_loop_thread(turns_it_off, "off"), 60)
        second = await asyncio.wait_for(in_loop_thread(reads, "reads"), 60)
        return first, second

    first, (second, profiler) = asyncio.run(main())
    print(first == second, profiler)
    """
)


def test_a_cprofile_profiler_a_piece_turns_off_is_on_again_for_the_next_piece() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PIECES],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "Profile"]  # the same thread, profiled again


BENCH = Path(__file__).resolve().parent.parent / "bench" / "overhead.py"
RETAIL = Path(__file__).resolve().parent.parent / "examples" / "retail"


def _bench() -> ModuleType:
    """``bench/overhead.py`` as a module (the bench folder is no package)."""
    spec = importlib.util.spec_from_file_location("_bench_overhead_16", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it executes
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_the_bench_counts_the_trace_copies_and_the_guards_proofs_and_leaves_them_as_they_were() -> (
    None
):
    """Nineteenth round: the retail checks only read their trace, so one copy is lent from
    check to check (``TraceCopies.lend``); the bench counts the copy and the guard's work."""
    guard_methods = (Guard.__init__, Guard.untouched, Guard.references)
    suite = load_suite(RETAIL)
    task_id = "cancel-pending-order"
    plain = run_solution(suite, task_id, "oracle")
    with _bench()._trace_copies_timed() as spent:
        timed = run_solution(suite, task_id, "oracle")
    python_checks = [c for c in timed.constraint_results if c.kind == "check"]
    copies = [s for s in spent if s.copy]
    assert len(python_checks) > 1 and len(copies) == 1
    assert len(spent) > len(copies)  # the guard's proofs, counted apart from copies
    assert all(cpu >= 0 for cpu in spent)
    assert TraceCopies.fresh is Copies.fresh  # put back: the harness copies as before
    assert (Guard.__init__, Guard.untouched, Guard.references) == guard_methods
    assert [(c.id, c.passed, c.error) for c in timed.constraint_results] == [
        (c.id, c.passed, c.error) for c in plain.constraint_results
    ]
