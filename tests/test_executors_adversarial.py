"""Adversarial agents on the process pool and Ray: an agent that kills, blocks or pollutes
the process it runs in.

Each misbehaviour must end its own attempt with the right terminal reason (a crash or the
time limit, never a success), leave every other attempt's verdict alone, not hang the
batch, and leave exactly tasks x attempts records, also after a resume. Which attempt
misbehaves is chosen by its seed, so reruns (a worker that died with several attempts runs
each again alone) misbehave the same way.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from groundstate.errors import ExecutorError
from groundstate.executors import ProcessExecutor, make_executor
from groundstate.records import AgentRun
from groundstate.runner import BatchAborted, BatchConfig, BatchResult, BatchRunner, derive_seed
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.system import SystemSpec, load_system
from groundstate.store import RunStore

from .conftest import BANK, BANK_SYSTEM, without_keys

ROGUE = '''
import asyncio
import ctypes
import os
import signal
import sys
import threading
import time

from groundstate.errors import ModelServingFailure


class Unpicklable(Exception):
    def __init__(self, a, b):  # pickling it back calls Unpicklable(message): TypeError
        super().__init__(f"{a}/{b}")
        self.lock = threading.Lock()


def misbehave(mode, marks):
    if mode == "exit":
        os._exit(3)
    if mode == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "sigterm":
        os.kill(os.getpid(), signal.SIGTERM)
    if mode == "segv":
        ctypes.string_at(0)
    if mode == "sysexit":
        sys.exit(4)
    if mode == "kbint":
        raise KeyboardInterrupt
    if mode == "unpicklable":
        raise Unpicklable(1, 2)
    if mode == "bigmem":
        bytearray(10**14)
    if mode == "gil":  # a C call that keeps the GIL: nothing else in the process runs
        ctypes.PyDLL(None).sleep(600)
    if mode == "spin":  # far past the time limit, but not forever: in-process the thread is
        # left behind, and would slow every later test; it stops when its test has ended
        # ("released" in *marks*), looking for that twice a second only, so it spins
        end = time.monotonic() + 10
        released = os.path.join(marks, "released")
        while time.monotonic() < end and not os.path.exists(released):
            look = time.monotonic() + 0.5
            while time.monotonic() < look:
                pass
    if mode == "model_down":
        raise ModelServingFailure("503 from the model API", {"status": 503})
    if mode == "thread_exit":  # a thread that kills the process while later attempts run
        threading.Thread(target=lambda: (time.sleep(0.3), os._exit(5)), daemon=True).start()
    if mode == "alarm":  # SIGALRM ends a process by default: during a later attempt
        signal.alarm(1)
    if mode == "usr1":
        os.kill(os.getpid(), signal.SIGUSR1)
    if mode == "environ":
        os.environ["ROGUE_TARGET"] = "C"  # a later attempt reading it moves money to C
    if mode == "chdir":
        os.chdir("/")
    if mode == "fork":  # a child left running, holding the database open
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        with open(os.path.join(marks, "child"), "w") as out:
            out.write(str(pid))
    if mode == "rawout":
        os.write(1, b"not json\\n" * 100)
    if mode == "flood":
        print("x" * 3_000_000)
    if mode == "scribble":  # junk, framed like a message, on every pipe of the worker
        for fd in map(int, os.listdir("/proc/self/fd")):
            try:
                if fd > 2 and os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                    os.write(fd, (5).to_bytes(8, "big") + b"junk!")
            except OSError:
                pass


async def rogue(session, bad: dict, marks: str = "", wait: float = 0.0) -> object:
    """Transfers like the reference agent; the attempt whose seed is in *bad* misbehaves
    first (after one tool call, so that it has acted)."""
    mode = bad.get(str(session.seed))  # JSON keys are strings
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    if mode is not None:
        misbehave(mode, marks)
    if mode == "unreturnable":
        return threading.Lock()
    await asyncio.sleep(wait)
    target = os.environ.get("ROGUE_TARGET", "B")
    await session.call("transfer", {"source": "A", "target": target, "amount": 30})
    return f"Moved 30 from A to {target}."
'''

VOLATILE = {"run_id", "batch_id", "retry_of", "started_at", "latency", "at", "duration_ms",
            "artifact_locations", "database", "traceback"}  # fmt: skip


def seed(attempt: int) -> int:
    return derive_seed(0, "transfer", attempt)


def rogue_system(
    root: Path, bad: dict[int, str], *, wait: float = 0.0, limit: float = 0, extra: str = ""
) -> SystemSpec:
    """The bank system with the rogue agent; attempt n misbehaves as ``bad[n]``."""
    (root / "rogue.py").write_text(ROGUE)
    (root / "marks").mkdir(exist_ok=True)
    params = {"bad": {seed(n): mode for n, mode in bad.items()}, "marks": str(root / "marks")}
    params["wait"] = wait
    file = root / "rogue_system.yaml"
    file.write_text(
        BANK_SYSTEM.read_text()
        .replace("bank_agent.py:bank_agent", "rogue.py:rogue")
        .replace("{fault_rate: 0.5}", json.dumps(params))
        .replace(
            "  step_limit: 10\n",
            f"  step_limit: 10\n  time_limit: {limit}\n" if limit else "  step_limit: 10\n",
        )
        + extra
    )
    return load_system(file)


def run(
    suite: Suite,
    system: SystemSpec,
    store: Path,
    executor: Any,
    attempts: int,
    concurrency: int = 2,
) -> BatchResult:
    with RunStore(store) as runs:
        runner = BatchRunner(suite, system, runs, executor=executor)
        return asyncio.run(runner.start(BatchConfig(attempts=attempts, concurrency=concurrency)))


def reasons(runs: list[AgentRun]) -> dict[int, str]:
    return {r.attempt: r.terminal_reason for r in runs}


def records(runs: list[AgentRun]) -> list[Any]:
    ordered = sorted(runs, key=lambda r: (r.task_id, r.attempt, r.retry))
    return [without_keys(r.model_dump(mode="json"), VOLATILE) for r in ordered]


def pool(suite: Suite, **options: Any) -> ProcessExecutor:
    key = (str(suite.root), suite.suite_hash, None)
    return ProcessExecutor(preload=key, suite=suite, **options)


def test_an_agent_that_kills_or_breaks_its_worker_crashes_only_its_own_attempt(
    bank: Suite, tmp_path: Path
) -> None:
    """Every way an agent can end or break its process, one attempt each, in one batch of
    a two-worker pool: each is a crash of its own attempt (never a success, never an
    invalid try to rerun), the attempts between them succeed, and the batch completes."""
    bad = {2: "exit", 3: "sigkill", 4: "segv", 5: "sigterm", 6: "sysexit", 7: "kbint",
           8: "unpicklable", 9: "bigmem", 10: "unreturnable"}  # fmt: skip
    system = rogue_system(tmp_path, bad)
    started = time.monotonic()
    result = run(bank, system, tmp_path / "runs.db", pool(bank), attempts=11)
    assert time.monotonic() - started < 60
    assert len(result.runs) == 11  # no rerun: a crash is the system's, not an invalid try
    got = reasons(result.runs)
    assert {n: got.pop(n) for n in (1, 11)} == {1: "success", 11: "success"}
    assert got == {n: "agent_failure/crashed" for n in range(2, 10)} | {
        10: "harness_compatibility_failure"
    }
    causes = {
        r.attempt: r.infrastructure_status.get("worker", {}).get("cause") for r in result.runs
    }
    assert causes[2] == "the worker process exited with code 3"
    assert causes[3] == "the worker process was killed by SIGKILL"
    assert causes[4] == "the worker process was killed by SIGSEGV"
    assert causes[5] == "the worker process was killed by SIGTERM"
    assert {causes[n] for n in range(6, 11)} == {None}  # raised in the attempt: a record
    by = {r.attempt: r for r in result.runs}
    assert by[8].infrastructure_status["exception"]["type"] == "Unpicklable"
    assert by[10].final_message is not None and "lock" in by[10].final_message
    with RunStore(tmp_path / "runs.db") as store:
        assert store.verify(result.batch.batch_id).ok


def test_an_attempt_that_killed_a_shared_worker_is_found_by_running_each_again_alone(
    bank: Suite, tmp_path: Path
) -> None:
    """One worker runs three attempts at once; one of them kills it. Which one is unknown
    from outside, so each is run again alone: the killer is named by its second death, the
    others succeed (nothing of theirs was stored the first time)."""
    system = rogue_system(tmp_path, {2: "exit"}, wait=0.3)
    result = run(bank, system, tmp_path / "runs.db", pool(bank, workers=1), 4, concurrency=3)
    assert reasons(result.runs) == {
        1: "success",
        2: "agent_failure/crashed",
        3: "success",
        4: "success",
    }
    assert len(result.runs) == 4


def test_an_agent_holding_its_worker_past_the_time_limit_is_killed_with_it(
    bank: Suite, tmp_path: Path
) -> None:
    """A C call that keeps the GIL stops every thread of the worker, the harness's timeout
    included: the pool kills the worker at the hard limit (the time limit, the wait for a
    call, and the grace) and the attempt ends at its time limit. A spinning agent ends at
    its limit as in-process, and its worker, still spinning, retires."""
    system = rogue_system(tmp_path, {2: "gil", 3: "spin"}, limit=3)  # 1 and 4 finish in it
    started = time.monotonic()
    try:
        result = run(bank, system, tmp_path / "runs.db", pool(bank, grace=0.5), attempts=4)
    finally:
        (tmp_path / "marks" / "released").touch()  # a worker still spinning stops
    assert time.monotonic() - started < 30  # not the 600 s the C call would hold it
    assert reasons(result.runs) == {
        1: "success",
        2: "agent_failure/time_limit",
        3: "agent_failure/time_limit",
        4: "success",
    }
    by = {r.attempt: r for r in result.runs}
    assert by[2].infrastructure_status["worker"]["overdue"] is True
    assert by[2].latency >= 3.0


def test_what_an_attempt_leaves_in_its_worker_never_reaches_later_attempts(
    bank: Suite, tmp_path: Path
) -> None:
    """A leftover thread that kills the process later, a pending alarm, a signal sent to
    itself, a changed os.environ, another working directory, a forked child: one worker
    runs the attempts one after another, and none of it touches the next attempt's verdict
    (the worker retires after a leftover; the signals are ignored in workers; the child is
    killed with the worker's process group)."""
    bad = {2: "thread_exit", 4: "alarm", 6: "usr1", 8: "environ", 10: "chdir", 12: "fork"}
    system = rogue_system(tmp_path, bad, wait=0.1)
    result = run(bank, system, tmp_path / "runs.db", pool(bank, workers=1), 13, concurrency=1)
    expected = {n: "success" for n in range(1, 14)}
    expected[8] = "agent_failure/incorrect_state"  # it moved the money to C itself
    assert reasons(result.runs) == expected
    child = int((tmp_path / "marks" / "child").read_text())
    deadline = time.monotonic() + 20  # an upper bound (was 5 s)
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "a child an agent forked outlived the batch"


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def test_a_batch_cut_short_then_resumed_on_the_pool_stores_each_attempt_once(
    bank: Suite, tmp_path: Path
) -> None:
    """The batch stops after three stored tries; the resume on the pool, where attempts
    still kill their workers, stores exactly the missing ones, and a second resume none."""
    system = rogue_system(tmp_path, {2: "exit", 5: "segv"})
    stored: list[AgentRun] = []

    def stop_after_three(run: AgentRun) -> None:
        stored.append(run)
        if len(stored) == 3:
            raise RuntimeError("cut")

    with RunStore(tmp_path / "runs.db") as store:
        cut = BatchRunner(bank, system, store, executor=pool(bank), on_run=stop_after_three)
        with pytest.raises(RuntimeError, match="cut"):
            asyncio.run(cut.start(BatchConfig(attempts=6, concurrency=1)))
        batch_id = cut.batch_id
        assert batch_id is not None
        cut_short = sorted(r.attempt for r in store.runs(batch_id))
        assert cut_short in ([1, 2, 3], [1, 2, 3, 4])  # one running at the cut is stored too
        for _ in range(2):
            again = BatchRunner(bank, system, store, executor=pool(bank))
            result = asyncio.run(again.resume(batch_id, concurrency=2, preflight=False))
            runs = store.runs(batch_id)
            assert sorted(r.attempt for r in runs) == [1, 2, 3, 4, 5, 6]
        assert store.verify(batch_id).ok
    assert reasons(result.runs) == {
        1: "success",
        2: "agent_failure/crashed",
        3: "success",
        4: "success",
        5: "agent_failure/crashed",
        6: "success",
    }


def test_misbehaving_agents_get_the_same_records_in_process_and_in_the_pool(
    bank: Suite, tmp_path: Path
) -> None:
    """Every misbehaviour a process survives, under the invalid-run policy: a model API
    that is always down (invalid, rerun up to max_retries, then kept invalid), SystemExit,
    KeyboardInterrupt, a spin past the time limit. The records, retries and links included,
    are the same on both executors."""
    # The spin comes last, one attempt at a time: in-process, its thread is left spinning,
    # and an honest attempt sharing the interpreter with it could run past its own limit.
    bad = {2: "model_down", 3: "sysexit", 4: "kbint", 6: "spin"}
    policy = "invalid_run_policy: {max_retries: 1}\n"
    system = rogue_system(tmp_path, bad, limit=3, extra=policy)  # the others finish in it
    try:
        results = {
            name: run(bank, system, tmp_path / f"{name}.db", make_executor(name, bank), 6, 1)
            for name in ("in-process", "process")
        }
    finally:
        (tmp_path / "marks" / "released").touch()  # the spin left running in-process stops
    here, there = results["in-process"], results["process"]
    assert records(here.runs) == records(there.runs)
    assert [(r.attempt, r.retry) for r in here.runs if r.attempt == 2] == [(2, 0), (2, 1)]
    assert reasons(here.final)[2] == "environment_failure/model_serving"
    assert reasons(here.final)[6] == "agent_failure/time_limit"
    assert reasons(here.final)[5] == "success"


def test_a_failing_canary_aborts_the_same_way_on_every_local_executor(tmp_path: Path) -> None:
    """The canary's oracle broken: the batch aborts before any agent attempt, with the same
    message, in-process and in the pool, and nothing is stored."""
    root = tmp_path / "bank"
    import shutil

    shutil.copytree(BANK, root)
    oracle = root / "solutions" / "transfer" / "oracle.yaml"
    oracle.write_text(oracle.read_text().replace("amount: 30", "amount: 31"))
    suite = load_suite(root)
    system = rogue_system(tmp_path, {})
    messages = []
    for name in ("in-process", "process"):
        with RunStore(tmp_path / f"{name}.db") as store:
            runner = BatchRunner(suite, system, store, executor=make_executor(name, suite))
            with pytest.raises(BatchAborted) as aborted:
                asyncio.run(runner.start(BatchConfig(attempts=2)))
            assert store.batches() == []
        messages.append(str(aborted.value))
    assert messages[0] == messages[1]
    assert "canary task 'transfer' failed with its oracle solution" in messages[0]


def test_workers_dying_with_no_attempt_stop_the_batch_clearly(bank: Suite, tmp_path: Path) -> None:
    """Workers that die while idle, again and again (here: they cannot even start), are
    the machine's doing, not an agent's: the job fails with one clear error instead of the
    pool respawning for ever."""
    import multiprocessing

    from groundstate.episode import AttemptInfo, AttemptJob
    from groundstate.executors.local import _WorkerPool

    def lose(*_: Any) -> Any:
        raise AssertionError("no attempt ran, none can be lost")

    context = multiprocessing.get_context("forkserver")
    broken = _WorkerPool(context, 1, 1, (None, None), lose)  # type: ignore[arg-type]
    system = rogue_system(tmp_path, {})
    job = AttemptJob(str(bank.root), bank.suite_hash, system, "transfer",
                     AttemptInfo("r", "b", 1, 0))  # fmt: skip
    started = time.monotonic()
    try:
        with pytest.raises(ExecutorError, match="keep dying with no attempt running"):
            asyncio.run(broken.run(job, 60.0))
    finally:
        broken.close()
    assert time.monotonic() - started < 20


def test_raw_writes_to_standard_output_do_not_break_run_json(tmp_path: Path) -> None:
    """An agent in a worker writing to file descriptor 1 (os.write, a C library) and
    flooding print(): ``run --executor process --json`` still prints one JSON document; the
    printed text is kept, capped, with its attempt."""
    rogue_system(tmp_path, {1: "rawout", 2: "flood"})
    system = tmp_path / "rogue_system.yaml"
    command = [sys.executable, "-m", "groundstate.cli", "run", str(BANK), "--system",
               str(system), "--attempts", "2", "--executor", "process", "--json",
               "--store", str(tmp_path / "runs.db")]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["terminal_reasons"] == {"success": 2}
    assert "not json" in done.stderr
    with RunStore(tmp_path / "runs.db") as store:
        flooded = next(r for r in store.runs(store.batch().batch_id) if r.attempt == 2)
        stdout = store.read_artifact(flooded.artifact_locations["stdout.txt"])
    assert 1_000_000 <= len(stdout) < 1_100_000 and "more characters not kept" in stdout


def own_threads() -> frozenset[str]:
    """The names of the test process's own threads, which a worker would not have (one of
    pytest-rerunfailures' whenever pytest-xdist is installed): the process-wide checks of
    :func:`groundstate.executors._job.leftovers`, run here, take them as known."""
    return frozenset(thread.name for thread in threading.enumerate())


def test_process_wide_settings_an_attempt_changed_retire_its_worker() -> None:
    """Besides threads and os.environ, the settings every later attempt of a worker would
    inherit: the GIL's switch interval and the recursion limit. The variables the harness
    sets itself (the PostgreSQL server's address a worker publishes) are no leftover."""
    from groundstate.environments.postgres_server import URL_VARIABLE
    from groundstate.executors._job import leftovers, process_state

    baseline = process_state()
    assert leftovers(None, baseline, own_threads()) is None
    limit = sys.getrecursionlimit()
    previous = os.environ.get(URL_VARIABLE)
    try:
        os.environ[URL_VARIABLE] = "postgresql://elsewhere"
        assert leftovers(None, baseline, own_threads()) is None
        sys.setrecursionlimit(limit + 7)
        assert leftovers(None, baseline, own_threads()) == "changed: sys.getrecursionlimit()"
    finally:
        sys.setrecursionlimit(limit)
        if previous is None:
            os.environ.pop(URL_VARIABLE, None)
        else:
            os.environ[URL_VARIABLE] = previous


def test_a_worker_killed_from_outside_while_idle_blames_no_attempt(
    bank: Suite, tmp_path: Path
) -> None:
    """The only worker is killed (by the machine, an operator) between two attempts, and
    the next attempt may be sent to it before its death is seen: that attempt never
    started there, so it runs on the new worker and is not recorded as a crash.

    The kill can land while the worker writes a message: when the workers shared one
    results queue, its cross-process lock stayed held by the dead worker, and the new
    worker could never say it was ready (the batch hung about one run in twenty)."""
    system = rogue_system(tmp_path, {})
    executor = pool(bank, workers=1)

    def kill_the_worker(run: AgentRun) -> None:
        if run.attempt == 1:
            for pid in executor.worker_pids:
                os.kill(pid, 9)

    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(bank, system, store, executor=executor, on_run=kill_the_worker)
        result = asyncio.run(runner.start(BatchConfig(attempts=3, concurrency=1)))
    found = reasons(sorted(result.runs, key=lambda r: (r.attempt, r.retry)))  # last tries
    # The hook runs when attempt 1 is stored, and attempt 2 may already have started on the
    # worker by then (a race the hook cannot rule out; it lost once in CI): killed while
    # running, it is that attempt's crash; killed once its grading had started, a grader
    # failure (uncounted) and run again. Never a stopped batch, never another's blame.
    assert found[1] == found[3] == "success"
    assert found[2] in ("success", "agent_failure/crashed")
    tries = sorted((r.attempt, r.retry, r.terminal_reason) for r in result.runs)
    assert tries in (
        [(1, 0, "success"), (2, 0, found[2]), (3, 0, "success")],
        [(1, 0, "success"), (2, 0, "grader_failure"), (2, 1, "success"), (3, 0, "success")],
    )


def test_an_agent_scribbling_on_its_workers_pipes_crashes_only_its_own_attempt(
    bank: Suite, tmp_path: Path
) -> None:
    """Junk framed like a message on the worker's results pipe (and its job queue) ends
    that worker: the attempt is a crash, the pool's reader goes on, the batch completes."""
    system = rogue_system(tmp_path, {2: "scribble"})
    result = run(bank, system, tmp_path / "runs.db", pool(bank, workers=1), 4, concurrency=1)
    assert reasons(result.runs) == {
        1: "success",
        2: "agent_failure/crashed",
        3: "success",
        4: "success",
    }
