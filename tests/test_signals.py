"""Ctrl-C and SIGTERM during ``run``: a clean stop naming the resume command, exit 130/143,
no work folders left, stale ones swept; the resume completes the batch exactly."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.exitcause import WATCHED
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, BatchRunner, Interrupted
from groundstate.spec.suite import Suite
from groundstate.spec.system import load_system
from groundstate.store import RunStore
from groundstate.workdirs import TMPDIR_ENV

from .conftest import BANK, BANK_SYSTEM, BLOCK, HANG, stored_runs


def _dead_pid() -> int:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    return gone.pid


def _owned_folders(root: Path) -> set[str]:
    return (
        {p.name for p in (root / "groundstate").iterdir()}
        if (root / "groundstate").exists()
        else set()
    )


@pytest.mark.parametrize(
    ("signum", "code"),
    [
        pytest.param(signal.SIGINT, 130, id="SIGINT"),
        pytest.param(signal.SIGTERM, 143, id="SIGTERM"),
    ],
)
def test_a_signal_mid_batch_stops_cleanly_and_the_resume_completes_it(
    tmp_path: Path, signum: int, code: int
) -> None:
    system = tmp_path / "bank_system.yaml"
    system.write_text(
        BANK_SYSTEM.read_text().replace("{fault_rate: 0.5}", "{fault_rate: 0.5, delay: 0.05}")
    )
    (tmp_path / "bank_agent.py").write_text((BANK.parent / "bank_agent.py").read_text())
    temp = tmp_path / "tmp"
    stale = temp / "groundstate" / f"pid-{_dead_pid()}" / "env-killed"
    stale.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    live = temp / "groundstate" / f"pid-{holder.pid}"
    live.mkdir()
    env = {**os.environ, TMPDIR_ENV: str(temp)}
    store = tmp_path / "runs.db"
    attempts = 40
    command = [sys.executable, "-m", "groundstate.cli", "run", str(BANK), "--system", str(system)]
    options = ["--attempts", str(attempts), "--concurrency", "2", "--store", str(store)]
    try:
        proc = subprocess.Popen(
            command + options, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 120
        while stored_runs(store) < 6:
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "the batch stored fewer than 6 runs in 120 s"
            time.sleep(0.02)
        assert not stale.parent.exists()  # swept at start: its process is gone
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == code, err
        assert len(err.splitlines()) == 2, err  # what stopped and how to resume; no noise
        with RunStore(store) as runs:
            batch_id = runs.batch().batch_id
            stopped = runs.runs(batch_id)
            assert runs.lease(batch_id) is None  # released on the way out
        assert 6 <= len(stopped) < attempts
        name = signal.Signals(signum).name
        assert f"interrupted by {name}: batch {batch_id} stopped with {len(stopped)} of " in err
        line = next(x for x in err.splitlines() if x.startswith("resume with: "))
        resume = shlex.split(line.removeprefix("resume with: "))
        assert resume[:2] == ["groundstate", "run"]
        assert resume[resume.index("--resume") + 1] == batch_id
        assert live.exists()  # another live process's folder is left alone
        assert _owned_folders(temp) == {live.name}  # the stopped run removed its own
        done = subprocess.run(
            [sys.executable, "-m", "groundstate.cli", *resume[1:]],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr
        assert f"batch {batch_id}" in done.stdout
    finally:
        holder.kill()
        holder.wait()
    with RunStore(store) as runs:
        stored = runs.runs(batch_id)
        assert runs.verify(batch_id).ok
    assert sorted((r.task_id, r.attempt) for r in stored) == [
        ("transfer", n) for n in range(1, attempts + 1)
    ]
    assert len({r.run_id for r in stored}) == attempts
    assert _owned_folders(temp) == {live.name}


def _invoke_run(store: Path) -> Any:
    return CliRunner().invoke(
        main, ["run", str(BANK), "--system", str(BANK_SYSTEM), "--store", str(store)]
    )


def test_ctrl_c_during_validation_stops_before_any_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted_validation(*args: Any, **kwargs: Any) -> list[str]:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(BLOCK)  # the handler interrupts this
        raise AssertionError("SIGINT was ignored during validation")

    monkeypatch.setattr("groundstate.validation.require_valid", interrupted_validation)
    started = time.monotonic()
    result = _invoke_run(tmp_path / "runs.db")
    assert result.exit_code == 130, result.output
    assert time.monotonic() - started < HANG
    assert "interrupted by SIGINT before the batch started: nothing was stored" in result.stderr
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    with RunStore(tmp_path / "runs.db") as runs:
        assert runs.batches() == []


@pytest.mark.parametrize("host_marked", [False, True])
def test_ctrl_c_during_the_canary_is_not_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host_marked: bool
) -> None:
    """Also when the host's own context was left marked as a try's (a library user, or a
    test, that called ``ExitWatch.started`` outside a task): the canary's oracle is no
    batch's agent, so its Ctrl-C is the user's (it was refused as an agent's, exit 2)."""

    slept: list[str] = []
    release = threading.Event()

    class Interrupting:
        async def run(self, session: Any) -> str:
            os.kill(os.getpid(), signal.SIGINT)  # from the agent's thread, as a user would
            for _ in range(int(BLOCK / 0.05)):  # BLOCK seconds, or until the test ends
                if release.is_set():
                    return "released"
                await asyncio.sleep(0.05)
            slept.append("slept")  # the canary would have finished on its own
            return "done"

    monkeypatch.setattr(
        "groundstate.agents.scripted.ScriptedAgent.from_solution", lambda solution: Interrupting()
    )
    marked = WATCHED.set(host_marked)
    try:
        result = _invoke_run(tmp_path / "runs.db")
        # The interrupt ended the batch before the canary's oracle ended on its own: its sleep
        # of BLOCK seconds had not completed (no wall-clock bound: a crowded machine must not
        # fail this).
        assert slept == [], "the interrupt waited for the canary to finish"
    finally:
        release.set()
        WATCHED.reset(marked)
    assert result.exit_code == 130, result.output
    assert "interrupted by SIGINT before the batch started: nothing was stored" in result.stderr
    with RunStore(tmp_path / "runs.db") as runs:
        assert runs.batches() == []


def test_a_swallowed_interrupt_still_stops_before_the_next_try_is_stored(
    bank: Suite, tmp_path: Path
) -> None:
    """Code that catches the interrupt cannot make the batch run on: the flag is checked
    before every try is stored."""
    stored: list[AgentRun] = []
    with RunStore(tmp_path / "runs.db") as runs:
        runner = BatchRunner(bank, load_system(BANK_SYSTEM), runs, on_run=stored.append)

        def swallow(run: AgentRun) -> None:
            stored.append(run)
            if len(stored) == 2:
                runner.interrupt.signum = signal.SIGINT  # set, but nothing raised

        runner.on_run = swallow
        with pytest.raises(Interrupted) as caught:
            asyncio.run(runner.start(BatchConfig(attempts=6)))
        assert caught.value.exit_code == 130
        assert runner.batch_id is not None
        assert len(runs.runs(runner.batch_id)) == 2
        assert runs.lease(runner.batch_id) is None
