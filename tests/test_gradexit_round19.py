"""A check that ends the process, in-process, nineteenth round: on the pool, a worker that dies
once its attempt's grading started (no code of the agent's left running) is the grader's
failure, uncounted and rerun under the invalid-run policy. In-process, a Python constraint
that called ``os._exit`` was stored on resume as the agent's counted crash. Now the call's
mark says a check made it, and the resume stores a ``grader_failure`` and reruns it under the
policy, ending after a bounded number of resumes however often the check kills the process.
An agent's code still running as grading starts (a thread it left, its own thread past its
time limit) that ends the process stays the agent's crash, as on the pool."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from groundstate import exitcause
from groundstate.records import AgentRun
from groundstate.store import RunStore
from groundstate.workdirs import TMPDIR_ENV

from .conftest import in_a_fresh_process
from .test_exitcause_round19 import _mark
from .test_scale_round17 import chain, judged_bank, speaking_system

pytestmark = pytest.mark.timeout(240)

RESUMES = 5
"""More resumes than any batch here needs: a batch that needs more loops."""


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, TMPDIR_ENV: str(tmp_path / "tmp")}
    command = [sys.executable, "-m", "groundstate.cli", "run", *args,
               "--executor", "in-process", "--concurrency", "1",
               "--store", str(tmp_path / "runs.db")]  # fmt: skip
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=200)


def run_and_resume(tmp_path: Path, bad: dict[int, str], limit: float = 0) -> list[AgentRun]:
    """`groundstate run` in-process of the judged bank, attempts misbehaving as *bad*, then
    `run --resume` each time a try ends the process, until the batch ends; the stored runs,
    and how many processes the batch took."""
    bank = judged_bank(tmp_path)
    speaking_system(tmp_path, bad, limit=limit)
    first = [str(bank.root), "--system", str(tmp_path / "rogue_system.yaml"), "--attempts", "3"]
    done = _cli(tmp_path, *first)
    processes = 1
    while done.returncode in (7, 9) and processes <= RESUMES:  # the check's, the agent's
        with RunStore(tmp_path / "runs.db") as store:
            (batch,) = store.batches()
        done = _cli(tmp_path, *first, "--resume", batch.batch_id)
        processes += 1
    # Ended: the verdict, or (exit 3) too many invalid tries for one, the policy's outcome.
    assert done.returncode in (0, 1, 3), (processes, done.stderr[-3000:])
    with RunStore(tmp_path / "runs.db") as store:
        (batch,) = store.batches()
        assert store.started_tries(batch.batch_id) == []
        assert store.verify(batch.batch_id).ok
        runs = store.runs(batch.batch_id)
    runs[0].infrastructure_status["processes"] = processes  # for the caller only
    return runs


def test_a_check_that_exits_in_process_is_a_grader_failure_rerun_under_the_policy(
    tmp_path: Path,
) -> None:
    """Attempt 2's Python constraint calls ``os._exit(7)`` on every try: each resume stores
    the try as ``grader_failure`` (uncounted), naming the call and that grading had started,
    and reruns it while the policy (``max_retries: 1``) allows, then goes on: three
    processes, the pool's chain of records (``tests/test_scale_round17.py``)."""
    runs = run_and_resume(tmp_path, {2: "exit"})
    assert runs[0].infrastructure_status.pop("processes") == 3
    assert chain(runs) == [
        (1, 0, "success", True),
        (2, 0, "grader_failure", False),
        (2, 1, "grader_failure", False),
        (3, 0, "success", True),
    ]
    for run in (r for r in runs if r.attempt == 2):
        worker = run.infrastructure_status["worker"]
        assert worker["grading"] is True and worker["executor"] == "in-process"
        assert "a check called os._exit(7)" in worker["cause"]
        message = run.infrastructure_status["exception"]["message"]
        assert "a check called os._exit(7)" in message and "while grading" in message
        assert "the agent" not in message


@pytest.mark.parametrize("mode", ["thread", "late"])
def test_an_agents_code_alive_as_grading_starts_that_exits_stays_the_agents_crash(
    tmp_path: Path, mode: str
) -> None:
    """The agent leaves a thread (no attempt's context), or blocks its own thread (the
    attempt's context) past its time limit, that calls ``os._exit(9)`` once the check has
    started: the agent's code was still running, so grading was never noted as started,
    and the resume stores the agent's counted crash, not an uncounted grader failure."""
    runs = run_and_resume(tmp_path, {2: mode}, limit=2)
    assert runs[0].infrastructure_status.pop("processes") == 2
    assert chain(runs) == [
        (1, 0, "success", True),
        (2, 0, "agent_failure/crashed", True),
        (3, 0, "success", True),
    ]
    (crashed,) = [r for r in runs if r.attempt == 2]
    assert "the agent called os._exit(9)" in crashed.infrastructure_status["worker"]["cause"]
    assert "grading" not in crashed.infrastructure_status["worker"]


def _in_try(run_id: str | None, fn: Any, *args: Any) -> Any:
    token = exitcause.TRY.set(run_id)
    try:
        return fn(*args)
    finally:
        exitcause.TRY.reset(token)


def test_grading_is_noted_only_in_its_own_try_and_with_no_agent_code_alive(
    tmp_path: Path,
) -> None:
    """The determination itself: a try's grading is not noted while a thread started since
    the batch began is alive (the host's threads from before are not an agent's), and is
    once none is; a call in that try's context is then a check's, a call from another try's
    context or from none the agent's. In a fresh process: an ``agent-`` thread an earlier
    test left blocking in this one rightly keeps any grading from being noted."""
    in_a_fresh_process(_determination, str(tmp_path))


def _determination(tmp: str) -> None:
    tmp_path = Path(tmp)
    release = threading.Event()
    with RunStore(tmp_path / "runs.db") as store:
        _mark(store, "r1")
        _mark(store, "r2")
        with exitcause.watching(store.path) as watch:
            watch.started("r1")
            watch.started("r2")
            lurker = threading.Thread(target=release.wait, name="lurker")
            lurker.start()
            try:
                _in_try("r1", exitcause.grading_starts)
                assert watch.grading == set()
            finally:
                release.set()
                lurker.join()
            _in_try("r1", exitcause.grading_starts)
            assert watch.grading == {"r1"}
            _in_try("r2", exitcause._blame, "os._exit(3)")
            _in_try("r1", exitcause._blame, "os._exit(7)")
            marks = {m.run_id: m for m in store.started_tries("b1")}
            assert (marks["r1"].cause, marks["r1"].grading) == ("a check called os._exit(7)", True)
            assert (marks["r2"].cause, marks["r2"].grading) == (
                "the agent called os._exit(3)",
                False,
            )
            _in_try("r1", exitcause._blame, "os._exit(7)", True)  # the call failed: taken back
            marks = {m.run_id: (m.cause, m.grading) for m in store.started_tries("b1")}
            assert marks["r1"] == (None, False)
            _in_try(None, exitcause._blame, "os._exit(5)")  # no try's context: every try's
            marks = {m.run_id: m for m in store.started_tries("b1")}
            assert (marks["r1"].cause, marks["r1"].grading) == (
                "the agent called os._exit(5)",
                False,
            )
            watch.ended("r1")
            assert watch.grading == set()
