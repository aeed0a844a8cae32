"""Executors, twentieth round: whose code ends the process while a try's grading runs.

Nineteenth round: a check (a Python constraint) that ends its process after its agent is done
is an uncounted grader failure, rerun under the policy, unless code of an agent's may still
run, which could be what ended it (then it stays the agent's crash). Two faults of that
determination:

- in-process with several tries at once, another try's agent still at work kept any try's
  grading from being noted: a check's ``os._exit`` was the agent's counted crash. That other
  agent runs in its own try's context, where a call it makes is laid at its own try's door;
  it is no bar now (a thread an agent left still is: it may carry any context).
- an agent's thread was told by its name (``agent-``): an agent past its time limit that
  renamed its thread (``groundstate-...``) and then ended the process once grading started
  made its crash an uncounted grader failure, rerun, in-process and on the pool. The
  harness's threads now say which work they run (:func:`groundstate.loopthreads.working`),
  whatever name their thread bears.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from groundstate import exitcause
from groundstate.executors._job import _agents_alive
from groundstate.loopthreads import submit
from groundstate.spec.system import load_system
from groundstate.store import RunStore
from groundstate.workdirs import TMPDIR_ENV

from .conftest import in_a_fresh_process
from .test_executors_adversarial import pool, run
from .test_exitcause_round19 import _mark
from .test_gradexit_round19 import _cli, _in_try
from .test_scale_round17 import chain, judged_bank, speaking_system

pytestmark = pytest.mark.timeout(300)

SLOW = 6.0
"""Seconds the slow agent waits: long enough for the other try to be graded meanwhile."""

WRAPPER = f"""

async def slow(session, bad: dict, marks: str = "", wait: float = 0.0) -> object:
    \"\"\"``speaks``; "slow" waits {SLOW} s first; "renamed" renames its thread (the
    harness's idle name) and then blocks it past its time limit as "late" does;
    "unlisted" leaves a thread started through ``_thread`` that ends the process once
    grading runs.\"\"\"
    mode = bad.get(str(session.seed))
    if mode == "slow":
        await asyncio.sleep({SLOW})
    if mode == "unlisted":  # a thread threading does not list, that kills once grading runs
        import _thread
        import contextvars

        open(os.path.join(marks, "lurking"), "w").close()
        here = contextvars.copy_context()  # its attempt's, in-process: taken along
        _thread.start_new_thread(here.run, (_lurk, marks))
    if mode == "renamed":
        threading.current_thread().name = "groundstate-loop-idle"
        bad = {{**bad, str(session.seed): "late"}}
    return await speaks(session, bad, marks, wait)
"""


def slow_system(root: Path, bad: dict[int, str], limit: float = 0) -> Path:
    """The judged bank's speaking system whose agent also knows "slow" and "renamed"."""
    speaking_system(root, bad, limit=limit)
    with (root / "rogue.py").open("a") as agent:
        agent.write(WRAPPER)
    file = root / "rogue_system.yaml"
    file.write_text(file.read_text().replace("rogue.py:speaks", "rogue.py:slow"))
    return file


def _two_at_once(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, TMPDIR_ENV: str(tmp_path / "tmp")}
    command = [sys.executable, "-m", "groundstate.cli", "run", *args,
               "--executor", "in-process", "--concurrency", "2",
               "--store", str(tmp_path / "runs.db")]  # fmt: skip
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=200)


def test_a_check_that_exits_while_another_tries_agent_runs_is_the_checks(tmp_path: Path) -> None:
    """In-process, two at once: attempt 1's agent is still at work (its own try's context)
    when attempt 2's check calls ``os._exit(7)``. Attempt 2 is a grader failure, rerun under
    the policy (``max_retries: 1``), as with one at a time; attempt 1, ended from outside
    its code, runs again. Failed before: attempt 2 was the agent's counted crash."""
    bank = judged_bank(tmp_path)
    task = bank.root / "tasks" / "transfer.yaml"
    task.write_text(task.read_text().replace("time_limit: 5\n", "time_limit: 30\n"))
    system = slow_system(tmp_path, {1: "slow", 2: "exit"}, limit=30)
    first = [str(bank.root), "--system", str(system), "--attempts", "3"]
    done = _two_at_once(tmp_path, *first)
    processes = 1
    while done.returncode in (7, 9) and processes <= 5:
        with RunStore(tmp_path / "runs.db") as store:
            (batch,) = store.batches()
        done = _two_at_once(tmp_path, *first, "--resume", batch.batch_id)
        processes += 1
    assert done.returncode in (0, 1, 3), done.stderr[-3000:]  # 3: the policy's outcome
    with RunStore(tmp_path / "runs.db") as store:
        (batch,) = store.batches()
        assert store.started_tries(batch.batch_id) == []
        assert store.verify(batch.batch_id).ok
        runs = store.runs(batch.batch_id)
    assert processes == 3
    assert chain(runs) == [
        (1, 0, "success", True),
        (2, 0, "grader_failure", False),
        (2, 1, "grader_failure", False),
        (3, 0, "success", True),
    ]
    for failed in (r for r in runs if r.attempt == 2):
        worker = failed.infrastructure_status["worker"]
        assert worker["grading"] is True
        assert "a check called os._exit(7)" in worker["cause"]
        assert worker["in_flight"] == 2  # two at once: the other try's agent at work


def test_an_agent_that_renames_its_thread_and_exits_while_grading_is_its_crash_in_process(
    tmp_path: Path,
) -> None:
    """In-process: the agent renames its thread, blocks it past its time limit until grading
    runs, then calls ``os._exit(9)``: its code was alive as grading started, so the resume
    stores its counted crash (before: an uncounted grader failure, rerun)."""
    bank = judged_bank(tmp_path)
    system = slow_system(tmp_path, {2: "renamed"}, limit=2)
    first = [str(bank.root), "--system", str(system), "--attempts", "3"]
    done = _cli(tmp_path, *first)
    assert done.returncode == 9, done.stderr[-3000:]
    with RunStore(tmp_path / "runs.db") as store:
        (batch,) = store.batches()
    done = _cli(tmp_path, *first, "--resume", batch.batch_id)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    with RunStore(tmp_path / "runs.db") as store:
        runs = store.runs(batch.batch_id)
    assert chain(runs) == [
        (1, 0, "success", True),
        (2, 0, "agent_failure/crashed", True),
        (3, 0, "success", True),
    ]
    (crashed,) = [r for r in runs if r.attempt == 2]
    assert "the agent called os._exit(9)" in crashed.infrastructure_status["worker"]["cause"]


def test_an_agent_that_renames_its_thread_and_kills_its_worker_while_grading_is_its_crash(
    tmp_path: Path,
) -> None:
    """The same agent on the process pool: its worker's death is its crash, as in-process
    (before: the worker said its grading started, and the death was the grader's)."""
    bank = judged_bank(tmp_path)
    slow_system(tmp_path, {2: "renamed"}, limit=2)
    system = load_system(tmp_path / "rogue_system.yaml")
    result = run(bank, system, tmp_path / "runs.db", pool(bank), 3, 1)
    assert chain(result.runs) == [
        (1, 0, "success", True),
        (2, 0, "agent_failure/crashed", True),
        (3, 0, "success", True),
    ]


def test_the_determination_goes_by_the_work_and_its_try_not_by_thread_names(
    tmp_path: Path,
) -> None:
    """The determination itself, in a fresh process (it starts threads)."""
    in_a_fresh_process(_by_work, str(tmp_path))


def _by_work(tmp: str) -> None:
    release = threading.Event()
    outcomes: list[object] = []
    renamed = threading.Semaphore(0)

    async def agent() -> None:
        threading.current_thread().name = "groundstate-loop-idle"  # looks idle
        renamed.release()
        release.wait(60)

    def start_agent(run_id: str) -> None:
        _in_try(run_id, submit, agent, f"agent-{run_id}", outcomes.append)

    with RunStore(Path(tmp) / "runs.db") as store:
        for run_id in ("r1", "r2", "r3"):
            _mark(store, run_id)
        with exitcause.watching(store.path) as watch:
            for run_id in ("r1", "r2", "r3"):
                watch.started(run_id)
            try:
                start_agent("r2")
                assert renamed.acquire(timeout=30)
                assert _agents_alive()  # a pool worker: any agent's work, however named
                _in_try("r1", exitcause.grading_starts)  # another try's agent: no bar
                assert watch.grading == {"r1"}
                start_agent("r3")
                assert renamed.acquire(timeout=30)
                _in_try("r3", exitcause.grading_starts)  # its own agent's work, renamed
                assert watch.grading == {"r1"}
                lurker = threading.Thread(target=release.wait, args=(60,), name="lurker")
                lurker.start()  # a thread an agent left (no try's work): a bar for all
                watch.grading.clear()
                _in_try("r1", exitcause.grading_starts)
                assert watch.grading == set()
            finally:
                release.set()
            while len(outcomes) < 2 or lurker.is_alive():
                threading.Event().wait(0.01)
            assert not _agents_alive()
            _in_try("r3", exitcause.grading_starts)
            assert watch.grading == {"r3"}


def test_control_one_at_a_time_a_check_exit_in_process_and_pool_agree(tmp_path: Path) -> None:
    """Control: with no agent's code alive, a check that kills its process is a grader
    failure on the pool, as the nineteenth round has it in-process."""
    bank = judged_bank(tmp_path)
    system = speaking_system(tmp_path, {2: "exit"})
    result = run(bank, system, tmp_path / "runs.db", pool(bank), 3, 1)
    assert chain(result.runs) == [
        (1, 0, "success", True),
        (2, 0, "grader_failure", False),
        (2, 1, "grader_failure", False),
        (3, 0, "success", True),
    ]


@pytest.mark.parametrize("where", ["pool", "in-process"])
def test_an_agents_thread_threading_does_not_list_that_ends_the_process_is_its_crash(
    tmp_path: Path, where: str
) -> None:
    """The agent leaves a thread started through ``_thread`` (``threading.enumerate`` does
    not list it), running in its attempt's context, that ends its process once grading
    runs: its crash, counted, on the pool and in-process (before: grading was noted, and
    the death was the grader's)."""
    bank = judged_bank(tmp_path)
    file = slow_system(tmp_path, {2: "unlisted"})
    if where == "pool":
        runs = run(bank, load_system(file), tmp_path / "runs.db", pool(bank), 3, 1).runs
    else:
        first = [str(bank.root), "--system", str(file), "--attempts", "3"]
        done = _cli(tmp_path, *first)
        assert done.returncode == 9, done.stderr[-3000:]
        with RunStore(tmp_path / "runs.db") as store:
            (batch,) = store.batches()
        done = _cli(tmp_path, *first, "--resume", batch.batch_id)
        assert done.returncode in (0, 1), done.stderr[-3000:]
        with RunStore(tmp_path / "runs.db") as store:
            runs = store.runs(batch.batch_id)
    assert chain(runs) == [
        (1, 0, "success", True),
        (2, 0, "agent_failure/crashed", True),
        (3, 0, "success", True),
    ]
