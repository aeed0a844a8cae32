"""Seventh audit round of the process pool: agents that attack the worker's own plumbing
(its results pipe and job queue), forge messages about other attempts, or change
process-wide settings the leftover check did not look at.

Each must end its own attempt (a crash, with a cause that says what it did), leave every
other attempt's verdict alone, not hang the batch, and leave exactly tasks x attempts
records.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from groundstate.spec.suite import Suite
from groundstate.spec.system import load_system
from groundstate.store import RunStore

from .conftest import HANG
from .test_executors_adversarial import (
    _alive,
    own_threads,
    pool,
    reasons,
    rogue_system,
    run,
)

pytestmark = pytest.mark.timeout(30)

PLUMBING = """
import gc
import os
import pickle
import threading
import time


def _outbox_fd():
    return next(o._fd for o in gc.get_objects() if type(o).__name__ == "Outbox")


def _jobs_fd():
    return next(o._reader.fileno() for o in gc.get_objects() if type(o).__name__ == "Queue")


def _own_keys():
    return {int(t.name[8:]) for t in threading.enumerate() if t.name.startswith("attempt-")}


def _frame(message):
    data = pickle.dumps(message)
    return len(data).to_bytes(8, "big") + data


def _forge(message_of):
    fd, own = _outbox_fd(), _own_keys()
    os.write(fd, b"".join(_frame(message_of(k)) for k in range(64) if k not in own))


def plumbing(mode, marks):
    if mode == "forge_failed":  # another attempt "failed": the batch would stop
        _forge(lambda k: ("failed", k, "forged"))
    elif mode == "forge_refused":  # another attempt sent again while it runs
        _forge(lambda k: ("refused", k, None))
    elif mode == "forge_started":
        _forge(lambda k: ("started", k, None))
    elif mode == "unhashable_key":  # broke the pool's reader: every attempt failed
        os.write(_outbox_fd(), _frame(("done", [1], None)))
    elif mode == "bad_record":  # a "done" for its own job whose record is no record
        fd, key = _outbox_fd(), min(_own_keys())
        os.write(fd, _frame(("done", key, b"not a pickle")))
    elif mode == "not_a_record":
        fd, key = _outbox_fd(), min(_own_keys())
        os.write(fd, _frame(("done", key, pickle.dumps(42))))
    elif mode == "huge_frame":  # the pool would wait for the rest until the hard limit
        os.write(_outbox_fd(), (1 << 62).to_bytes(8, "big") + b"partial")
    elif mode == "unknown_kind":
        fd, key = _outbox_fd(), min(_own_keys())
        os.write(fd, _frame(("hello", key, None)))
    elif mode == "close_results":
        os.close(_outbox_fd())
    elif mode == "dup_results":
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, _outbox_fd())
    elif mode == "close_jobs":
        os.close(_jobs_fd())
    elif mode == "dup_jobs":
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, _jobs_fd())
    elif mode == "nofile":
        import resource

        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (3, hard))
    elif mode == "umask":
        os.umask(0o777)
    elif mode in ("ign_term", "ign_chld"):  # through C: out of signal.getsignal's sight
        import ctypes
        import signal

        number = signal.SIGTERM if mode == "ign_term" else signal.SIGCHLD
        ctypes.CDLL(None).signal(number, ctypes.c_void_p(1))  # SIG_IGN
    elif mode == "fork_writer":  # a child out of the worker's group forges, later on
        fd = _outbox_fd()
        pid = os.fork()
        if pid == 0:
            os.setsid()
            for _ in range(1200):  # two minutes: only a kill ends it within the test's wait
                time.sleep(0.1)
                try:
                    os.write(fd, b"".join(_frame(("failed", k, "forged")) for k in range(64)))
                except OSError:
                    break
            os._exit(0)
        with open(os.path.join(marks, "child"), "w") as out:
            out.write(str(pid))
    elif mode == "patch_harness":  # every later attempt of this worker fails to start
        import groundstate.executors._job as job

        def sabotaged(*args):
            raise RuntimeError("sabotaged by an earlier attempt")

        job._agent = sabotaged
    elif mode == "empty_task":  # in memory: each later attempt of it in this worker too
        import gc

        from groundstate.spec.task import AgentTask

        for task in [o for o in gc.get_objects() if type(o) is AgentTask]:
            task.outcome_assertions.clear()
    elif mode == "setpgid":  # out of its own group, into the batch's: Ctrl-C would reach it
        os.setpgid(0, os.getpgid(os.getppid()))
    elif mode == "stdout_replaced":
        import io
        import sys

        sys.stdout = io.StringIO()
        sys.stderr = io.StringIO()
    elif mode == "stdout_closed":
        import sys

        sys.stdout.close()
        sys.stderr.close()
    else:
        return False
    return True
"""


def plumbing_system(root: Path, bad: dict[int, str]):  # type: ignore[no-untyped-def]
    """The rogue bank system of the adversarial tests, with the modes above added."""
    rogue_system(root, bad, wait=0.05)  # writes rogue.py, edited here before it is loaded
    rogue = root / "rogue.py"
    text = rogue.read_text().replace(
        "def misbehave(mode, marks):\n",
        "def misbehave(mode, marks):\n    if plumbing(mode, marks):\n        return\n",
    )
    text = text.replace(
        "    mode = bad.get(str(session.seed))  # JSON keys are strings\n",
        "    mode = bad.get(str(session.seed))  # JSON keys are strings\n"
        '    print(f"attempt with seed {session.seed} speaking")\n',
    )
    rogue.write_text(PLUMBING + text)
    return load_system(root / "rogue_system.yaml")


def run_one_worker(bank: Suite, tmp_path: Path, bad: dict[int, str], attempts: int):  # type: ignore[no-untyped-def]
    system = plumbing_system(tmp_path, bad)
    started = time.monotonic()
    result = run(bank, system, tmp_path / "runs.db", pool(bank, workers=1), attempts, 1)
    assert time.monotonic() - started < 40
    assert sorted(r.attempt for r in result.final) == list(range(1, attempts + 1))
    with RunStore(tmp_path / "runs.db") as store:
        assert store.verify(result.batch.batch_id).ok
    return result


def causes(result) -> dict[int, str | None]:  # type: ignore[no-untyped-def]
    return {r.attempt: r.infrastructure_status.get("worker", {}).get("cause") for r in result.runs}


@pytest.mark.parametrize(
    "mode", ["forge_failed", "forge_refused", "forge_started", "unhashable_key"]
)
def test_a_message_about_a_job_its_worker_does_not_run_crashes_only_the_forger(
    bank: Suite, tmp_path: Path, mode: str
) -> None:
    """An agent writes well-framed messages on its worker's results pipe about every job
    but its own (a failure, a refusal, a start) or with a key that is not one: the pool
    believes none of it, kills the worker, and the forger's attempt is the crash; the
    attempts before and after succeed (before the fix: a forged failure stopped the batch,
    a forged refusal ran another attempt twice, an unhashable key killed the pool's
    reader)."""
    result = run_one_worker(bank, tmp_path, {2: mode}, attempts=4)
    assert reasons(result.runs) == {
        1: "success",
        2: "agent_failure/crashed",
        3: "success",
        4: "success",
    }
    cause = causes(result)[2]
    assert cause is not None and cause.startswith("the worker process was killed: it wrote")


@pytest.mark.parametrize("mode", ["bad_record", "not_a_record", "unknown_kind", "huge_frame"])
def test_a_malformed_message_about_its_own_job_is_its_crash(
    bank: Suite, tmp_path: Path, mode: str
) -> None:
    """A "done" whose record does not unpickle, or unpickles to something else, and a
    message of no known kind, a length no message has: the attempt is a crash (before the
    fix the first two broke the pool's reader, and the batch stopped; the last held the
    attempt until its hard limit, its time limit plus a minute)."""
    result = run_one_worker(bank, tmp_path, {2: mode}, attempts=3)
    assert reasons(result.runs) == {1: "success", 2: "agent_failure/crashed", 3: "success"}
    cause = str(causes(result)[2])
    assert "something other than a message" in cause or "announced a message of" in cause


@pytest.mark.parametrize("mode", ["close_results", "dup_results"])
def test_an_agent_that_closes_its_workers_results_pipe_crashes_at_once(
    bank: Suite, tmp_path: Path, mode: str
) -> None:
    """The worker can no longer report: the pool sees its pipe end while it lives and kills
    it at once (before: the attempt waited for its hard limit, its time limit plus a
    minute), with a cause that says so, whichever of the two sees it first (the worker,
    failing to write its result, exits with a code of its own)."""
    result = run_one_worker(bank, tmp_path, {2: mode}, attempts=3)
    assert reasons(result.runs) == {1: "success", 2: "agent_failure/crashed", 3: "success"}
    assert "its results pipe was closed while it ran" in str(causes(result)[2])


@pytest.mark.parametrize("mode", ["close_jobs", "dup_jobs"])
def test_an_agent_that_breaks_its_workers_job_queue_harms_no_later_attempt(
    bank: Suite, tmp_path: Path, mode: str
) -> None:
    """The worker can take no more jobs: it ends (its own attempt, still running or just
    done, is its crash or its verdict), and the next attempt runs on a new worker."""
    result = run_one_worker(bank, tmp_path, {2: mode}, attempts=4)
    got = reasons(result.runs)
    assert got[2] in ("success", "agent_failure/crashed")
    assert {n: got[n] for n in (1, 3, 4)} == {1: "success", 3: "success", 4: "success"}


def test_process_wide_limits_masks_and_ignored_signals_retire_the_worker(
    bank: Suite, tmp_path: Path
) -> None:
    """RLIMIT_NOFILE at 3 (no later attempt could open its database), a umask of 777 (no
    later attempt could read the files it makes), SIGTERM and SIGCHLD ignored through C:
    one worker runs the attempts one after another; each change retires it, so every later
    attempt succeeds. The attempt that dropped its own file limit cannot open its own
    database: its tool crashes (an invalid try, rerun by the policy, as in-process)."""
    bad = {2: "nofile", 4: "umask", 6: "ign_term", 8: "ign_chld"}
    result = run_one_worker(bank, tmp_path, bad, attempts=9)
    expected = {n: "success" for n in range(1, 10)}
    expected[2] = "environment_failure/tool_crash"
    assert reasons(result.final) == expected
    assert {r.terminal_reason for r in result.runs if r.attempt != 2} == {"success"}


def test_process_state_sees_limits_masks_and_ignored_signals() -> None:
    """The leftover check names each setting (in this process, restored after)."""
    import os
    import resource
    import signal

    from groundstate.executors._job import leftovers, process_state

    baseline = process_state()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft - 1, hard))
    try:
        assert leftovers(None, baseline, own_threads()) == "changed: resource limits"
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    mask = os.umask(0o077)
    if mask == 0o077:
        os.umask(0o022)
    try:
        assert leftovers(None, baseline, own_threads()) == "changed: umask"
    finally:
        os.umask(mask)
    previous = signal.signal(signal.SIGUSR2, signal.SIG_IGN)
    try:
        if previous != signal.SIG_IGN:
            assert leftovers(None, baseline, own_threads()) == "changed: signals ignored"
    finally:
        signal.signal(signal.SIGUSR2, previous)
    assert leftovers(None, baseline, own_threads()) is None


def test_a_child_that_left_the_workers_group_and_writes_later_frames_no_one(
    bank: Suite, tmp_path: Path
) -> None:
    """An agent forks a child that leaves the worker's process group (``os.setsid()``) and
    keeps writing forged messages on the inherited results pipe after its attempt ended:
    the worker retires with a child left, killing it, so the messages never fall during a
    later attempt (before: the next attempt in that worker was killed as the forger's), and
    the child does not outlive the batch."""
    result = run_one_worker(bank, tmp_path, {2: "fork_writer"}, attempts=5)
    found = reasons(result.runs)
    # The child's first forgery comes 0.1 s after the fork: on a loaded machine the forger's
    # own attempt may still be running then, and is the crash (never another attempt).
    assert found.pop(2) in ("success", "agent_failure/crashed")
    assert found == {n: "success" for n in (1, 3, 4, 5)}
    child = int((tmp_path / "marks" / "child").read_text())
    deadline = time.monotonic() + HANG
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _alive(child)
    if alive:  # the test's own clean-up of what it let live
        os.kill(child, signal.SIGKILL)
    assert not alive, "a child out of the worker's group outlived its worker"


def test_children_are_seen_but_not_the_harnesss_own() -> None:
    """The leftover check sees a child process this one forked (the test process has
    children of its own: the fork server's, the baseline holds them)."""
    import os

    from groundstate.executors._job import children, leftovers, process_state

    baseline, before = process_state(), children()
    pid = os.fork()
    if pid == 0:
        time.sleep(5)
        os._exit(0)
    try:
        assert children() - before == {pid}
        assert leftovers(None, baseline, own_threads()) == "changed: child processes"
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert children() == before
    assert leftovers(None, baseline, own_threads()) is None


def test_an_agent_that_moves_its_worker_out_of_its_process_group_retires_it(
    bank: Suite, tmp_path: Path
) -> None:
    """``os.setpgid`` into the batch's own group (Ctrl-C would then reach the worker, and
    the worker's group kill would miss it): the worker retires (the leftover check sees the
    group change: below, in a child of this process), every attempt succeeds."""
    import os

    from groundstate.executors._job import leftovers, process_state

    result = run_one_worker(bank, tmp_path, {2: "setpgid"}, attempts=4)
    assert reasons(result.runs) == {n: "success" for n in range(1, 5)}
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's verdict is its exit code
        baseline = process_state()
        os.setpgid(0, 0)
        os._exit(0 if leftovers(None, baseline, own_threads()) == "changed: process group" else 1)
    assert os.waitpid(pid, 0)[1] == 0


@pytest.mark.parametrize("mode", ["stdout_replaced", "stdout_closed"])
def test_standard_streams_an_agent_replaces_or_closes_keep_later_attempts_output(
    bank: Suite, tmp_path: Path, mode: str
) -> None:
    """``sys.stdout``/``sys.stderr`` replaced or closed by one attempt: every attempt
    succeeds, and what each later attempt prints is kept with it."""
    result = run_one_worker(bank, tmp_path, {2: mode}, attempts=4)
    assert reasons(result.runs) == {n: "success" for n in range(1, 5)}
    with RunStore(tmp_path / "runs.db") as store:
        for run_ in result.runs:
            if run_.attempt in (1, 3, 4):
                text = store.read_artifact(run_.artifact_locations["stdout.txt"])
                assert f"seed {run_.seed} speaking" in text, (run_.attempt, text)


def test_an_agent_that_monkeypatches_the_harness_in_its_worker_retires_it(
    bank: Suite, tmp_path: Path
) -> None:
    """An attempt rebinds a function of the harness in its worker (here: the one that
    builds each attempt's agent, so every later attempt there would fail and stop the
    batch): its episode puts it back and fails it, the worker retires, and every other
    attempt succeeds."""
    result = run_one_worker(bank, tmp_path, {2: "patch_harness"}, attempts=4)
    expected = {n: "success" for n in range(1, 5)} | {2: "agent_failure/prohibited_action"}
    assert reasons(result.runs) == expected
    (patched,) = [r for r in result.runs if r.attempt == 2]
    assert patched.infrastructure_status["harness_rebound"] == ["groundstate.executors._job._agent"]


def test_an_agent_that_changes_its_task_in_memory_retires_its_worker(
    bank: Suite, tmp_path: Path
) -> None:
    """An attempt empties its task's assertions in its worker: it is stopped, and the worker
    retires (its later attempts of the task would be stopped too)."""
    result = run_one_worker(bank, tmp_path, {2: "empty_task"}, attempts=4)
    expected = {n: "success" for n in range(1, 5)} | {2: "agent_failure/prohibited_action"}
    assert reasons(result.runs) == expected


def test_rebound_names_each_function_or_class_patched() -> None:
    import pickle

    from groundstate.bindings import Bindings

    watched = Bindings()
    dumps = pickle.dumps
    pickle.dumps = lambda *args, **kwargs: b""  # type: ignore[assignment]
    try:
        assert watched.rebound() == ["pickle.dumps"]
    finally:
        pickle.dumps = dumps
    assert watched.rebound() == []


def test_a_forger_sharing_its_worker_is_found_by_running_each_again_alone(
    bank: Suite, tmp_path: Path
) -> None:
    """Three attempts at once in one worker, one of them forging failures for every other
    job: the worker is killed with all three, each is run again alone, the forger is named
    by its second fault, and the others succeed (nothing forged reached them)."""
    system = plumbing_system(tmp_path, {2: "forge_failed"})
    result = run(bank, system, tmp_path / "runs.db", pool(bank, workers=1), 5, concurrency=3)
    assert reasons(result.runs) == {
        1: "success",
        2: "agent_failure/crashed",
        3: "success",
        4: "success",
        5: "success",
    }
    assert len(result.runs) == 5
