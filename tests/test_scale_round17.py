"""Seventeenth round of the executors: a grader that crashes, on the process pool and in-process.

An outcome check or Python constraint is the suite's code, run in the attempt's process after
the agent is done. In-process, one that raises (any ``BaseException``) is a ``grader_failure``:
invalid, rerun under the invalid-run policy. In the pool, one that killed its worker
(``os._exit``, a signal) was blamed on the agent (``agent_failure/crashed``, counted). Each
attempt misbehaves by what its agent says (the check reads the trace), so that reruns
misbehave the same way.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from groundstate.executors import make_executor
from groundstate.records import AgentRun
from groundstate.runner import BatchRunner
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.system import SystemSpec, load_system
from groundstate.store import RunStore
from groundstate.workdirs import TMPDIR_ENV

from .conftest import BANK, HANG, stored_runs
from .test_executors import _children
from .test_executors_adversarial import _alive, pool, records, rogue_system, run

pytestmark = pytest.mark.timeout(120)

JUDGE = f"""
import os
import signal
import time


class Mine(BaseException):
    pass


def judge(trace, s0):
    words = " ".join(getattr(e, "text", None) or "" for e in trace).split()
    mode = next((w.split(":", 1)[1] for w in words if w.startswith("checkmode:")), None)
    if mode == "raise":
        raise ValueError("judge bug")
    if mode == "mine":
        raise Mine("judge")
    if mode == "kbint":
        raise KeyboardInterrupt
    if mode == "exit":
        os._exit(7)
    if mode == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    lurking = os.path.join(MARKS, "lurking")
    if os.path.exists(lurking):  # tells the agent's code that grading runs, and waits
        os.rename(lurking, os.path.join(MARKS, "grading"))
        time.sleep({HANG})
    return True
"""

SPEAKS = f"""

def _lurk(marks):
    end = time.monotonic() + {HANG}
    while time.monotonic() < end and not os.path.exists(os.path.join(marks, "grading")):
        time.sleep(0.01)
    os.remove(os.path.join(marks, "grading"))  # for the next attempt's
    os._exit(9)


async def speaks(session, bad: dict, marks: str = "", wait: float = 0.0) -> object:
    \"\"\"Transfers as it should, and says what the judge is to do (``bad`` by seed);
    "thread" and "late" kill its process once grading has started.\"\"\"
    mode = bad.get(str(session.seed))
    await session.call("check_pin", {{"account": "A", "pin": "1234"}})
    await session.call("transfer", {{"source": "A", "target": "B", "amount": 30}})
    if mode == "die":  # its agent kills its worker itself, before grading
        os._exit(3)
    if mode in ("thread", "late"):
        open(os.path.join(marks, "lurking"), "w").close()
    if mode == "thread":  # leaves a thread that kills its worker once grading runs
        threading.Thread(target=_lurk, args=(marks,), daemon=True).start()
    if mode == "late":  # blocks its own thread past its time limit, until grading runs
        _lurk(marks)
    await asyncio.sleep(wait)
    return f"Moved 30 from A to B. checkmode:{{mode}}"
"""

POLICY = "invalid_run_policy: {max_retries: 1}\n"


def judged_bank(tmp_path: Path) -> Suite:
    """The bank suite with a Python constraint doing what the agent's last words say (and
    telling an agent's code lurking in *tmp_path*/marks that grading runs). The marks are
    the suite's hidden ``.marks`` folder, which its hash leaves out, and *tmp_path*/marks
    links to it: a check looking up a file outside its suite rests on the machine, and
    validation fails it (round 27)."""
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    (root / ".marks").mkdir()
    if not (tmp_path / "marks").exists():
        (tmp_path / "marks").symlink_to(root / ".marks", target_is_directory=True)
    (root / "judge.py").write_text(f"MARKS = {str(root / '.marks')!r}\n" + JUDGE)
    task = root / "tasks" / "transfer.yaml"
    judged = "hard_process_constraints:\n  - id: judged\n    check: judge.py:judge\n"
    task.write_text(task.read_text().replace("hard_process_constraints:\n", judged))
    return load_suite(root)


def speaking_system(root: Path, bad: dict[int, str], limit: float = 0) -> SystemSpec:
    root.mkdir(exist_ok=True)
    rogue_system(root, bad, limit=limit, extra=POLICY)
    with (root / "rogue.py").open("a") as agent:
        agent.write(SPEAKS)
    file = root / "rogue_system.yaml"
    file.write_text(file.read_text().replace("rogue.py:rogue", "rogue.py:speaks"))
    return load_system(file)  # hashed as it is now


def chain(runs: list[AgentRun]) -> list[tuple[int, int, str, bool]]:
    """Every try, in order: (attempt, retry, terminal reason, valid)."""
    tries = sorted(runs, key=lambda r: (r.attempt, r.retry))
    return [(r.attempt, r.retry, r.terminal_reason, r.valid) for r in tries]


def test_a_check_that_kills_its_worker_is_a_grader_failure_as_one_that_raises_in_process(
    tmp_path: Path,
) -> None:
    """A check that ends its process is, in the pool, what a check that raises is in-process
    (and in the pool): an uncounted grader failure, rerun under the policy; never the
    agent's crash. Checks raising BaseException subclasses give the same records on both."""
    bank = judged_bank(tmp_path)
    here = speaking_system(tmp_path / "here", {2: "raise", 3: "mine", 4: "kbint"})
    there = speaking_system(tmp_path / "there", {2: "exit", 3: "mine", 4: "kbint"})
    local = run(bank, here, tmp_path / "here.db", make_executor("in-process", bank), 5, 1)
    pooled = run(bank, there, tmp_path / "there.db", pool(bank), 5, 1)
    failed = [(n, r, "grader_failure", False) for n in (2, 3, 4) for r in (0, 1)]
    expected = [(1, 0, "success", True), *failed, (5, 0, "success", True)]
    assert chain(local.runs) == chain(pooled.runs) == expected
    killed = [r for r in pooled.runs if r.attempt == 2]
    assert {r.infrastructure_status["worker"]["cause"] for r in killed} == {
        "the worker process exited with code 7"
    }
    assert all(r.infrastructure_status["worker"]["grading"] for r in killed)
    keys = ("terminal_reason", "constraint_results", "infrastructure_status")
    same = [{k: r[k] for k in keys} for r in records(local.runs) if r["attempt"] in (3, 4)]
    assert same == [{k: r[k] for k in keys} for r in records(pooled.runs) if r["attempt"] in (3, 4)]
    with RunStore(tmp_path / "there.db") as store:
        assert store.verify(pooled.batch.batch_id).ok


def test_a_death_while_grading_with_the_agents_code_alive_stays_the_agents_crash(
    tmp_path: Path,
) -> None:
    """The agent leaves a thread, or its own thread blocked past its time limit, that kills
    its worker once grading has started: with code of the agent's alive, the death is its
    crash (counted, not rerun), else an agent could make it an uncounted grader failure."""
    bank = judged_bank(tmp_path)
    system = speaking_system(tmp_path, {2: "thread", 3: "late"}, limit=3)  # 1, 4 finish in it
    result = run(bank, system, tmp_path / "runs.db", pool(bank), 4, 1)
    assert chain(result.runs) == [
        (1, 0, "success", True),
        (2, 0, "agent_failure/crashed", True),
        (3, 0, "agent_failure/crashed", True),
        (4, 0, "success", True),
    ]
    for attempt in (2, 3):
        worker = next(r for r in result.runs if r.attempt == attempt)
        assert worker.infrastructure_status["worker"] == {
            "cause": "the worker process exited with code 9",
            "overdue": False,
        }


def test_sigkill_mid_batch_with_crashing_agents_and_checks_then_resume_stores_each_try_once(
    tmp_path: Path,
) -> None:
    """`groundstate run` on the pool, SIGKILLed once it stored two tries, while attempts
    kill their workers (agent and check alike); the resume on the pool stores exactly
    tasks x attempts final records, no try twice, each with its own reason."""
    bank = judged_bank(tmp_path)
    system = speaking_system(tmp_path, {2: "exit", 3: "sigkill", 4: "die"})
    store = tmp_path / "runs.db"
    command = [sys.executable, "-m", "groundstate.cli", "run", str(bank.root), "--system",
               str(tmp_path / "rogue_system.yaml"), "--attempts", "6", "--concurrency", "1",
               "--executor", "process", "--store", str(store)]  # fmt: skip
    env = {**os.environ, TMPDIR_ENV: str(tmp_path / "tmp")}
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + HANG * 3
        while stored_runs(store) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        workers = _children(proc.pid)
        assert proc.poll() is None, "the batch ended before it was killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        with RunStore(store) as runs:
            batch_id = runs.batch().batch_id
            assert len({r.attempt for r in runs.runs(batch_id)}) < 6
            again = BatchRunner(bank, system, runs, executor=pool(bank))
            asyncio.run(again.resume(batch_id, concurrency=2, preflight=False))
            stored = runs.runs(batch_id)
            assert runs.verify(batch_id).ok
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _end(workers)
    tries = [(r.attempt, r.retry) for r in stored]
    assert len(tries) == len(set(tries)), "a try stored twice"
    final = {r.attempt: r for r in stored if not any(
        o.attempt == r.attempt and o.retry > r.retry for o in stored)}  # fmt: skip
    assert {n: r.terminal_reason for n, r in final.items()} == {
        1: "success",
        2: "grader_failure",
        3: "grader_failure",
        4: "agent_failure/crashed",
        5: "success",
        6: "success",
    }
    assert [r.retry for n, r in sorted(final.items())] == [0, 1, 1, 0, 0, 0]


def _end(pids: list[int]) -> None:
    """The orphaned workers of the killed run leave on their own; any left is ended."""
    deadline = time.monotonic() + HANG
    while [p for p in pids if _alive(p)] and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in (p for p in pids if _alive(p)):
        os.kill(pid, signal.SIGKILL)
