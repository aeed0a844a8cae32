"""Batches: invalid-run policy with retries, the canary, concurrency and resume."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.analysis import batch_report, final_runs
from groundstate.runner import BatchAborted, BatchConfig, BatchRunner, derive_seed
from groundstate.spec.suite import Suite
from groundstate.spec.system import InvalidRunPolicy, load_system
from groundstate.store import RunStore
from groundstate.testing import FaultyEnvironments, FunctionAgent

from .conftest import BANK, BANK_SYSTEM, EditTask, resume_bank, stored_runs

SYSTEM = BANK_SYSTEM


def _runner(suite: Suite, store: RunStore, **kwargs: Any) -> BatchRunner:
    return BatchRunner(suite, load_system(SYSTEM), store, **kwargs)


def test_environment_failures_are_retried_and_kept_with_evidence(
    bank: Suite, tmp_path: Path
) -> None:
    faults = FaultyEnvironments(rate=0.4, seed=3)
    with RunStore(tmp_path / "runs.db") as store:
        result = asyncio.run(_runner(bank, store, make_env=faults).start(BatchConfig(attempts=12)))
        stored = store.runs(result.batch.batch_id)
    invalid = [r for r in stored if not r.valid]
    assert faults.broken >= 3 and len(invalid) >= 3  # the seeded faults really happened
    assert len(stored) == 12 + len(invalid)  # every invalid try was kept and rerun
    for run in invalid:
        assert run.terminal_reason == "environment_failure/tool_crash"
        assert run.infrastructure_status["health_before"]["ok"] is True
        assert run.infrastructure_status["health_after"]["ok"] is False
        assert "exception" in run.infrastructure_status
        rerun = next(r for r in stored if r.retry_of == run.run_id)
        assert (rerun.task_id, rerun.attempt, rerun.seed) == (run.task_id, run.attempt, run.seed)
        assert rerun.retry == run.retry + 1
    counted = final_runs(stored)
    assert len(counted) == 12 and all(r.valid for r in counted)
    report = batch_report(result.batch, stored)
    assert report["valid_attempts"] == 12 and report["invalid_attempts"] == 0
    assert report["tries"]["tries"] == len(stored)
    expected_rate = len(invalid) / len(stored)
    assert report["tries"]["invalid_rate_by_reason"] == {"environment_failure": expected_rate}
    assert report["invalid_rate_flagged"] == (expected_rate > 0.1)


def test_retries_stop_at_the_declared_limit(bank: Suite, tmp_path: Path) -> None:
    system = load_system(SYSTEM)
    system = system.model_copy(update={"invalid_run_policy": InvalidRunPolicy(max_retries=1)})
    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(bank, system, store, make_env=FaultyEnvironments(rate=1.0))
        with pytest.raises(BatchAborted, match="canary task 'transfer' failed"):
            asyncio.run(runner.start(BatchConfig(attempts=2)))
        bank.config = bank.config.model_copy(update={"canary": None})
        result = asyncio.run(runner.start(BatchConfig(attempts=2)))
        stored = store.runs(result.batch.batch_id)
    assert [(r.attempt, r.retry) for r in stored] == [(1, 0), (1, 1), (2, 0), (2, 1)]
    report = batch_report(result.batch, stored)
    assert report["valid_attempts"] == 0 and report["invalid_attempts"] == 2
    assert report["success_rate"] is None  # no valid attempt: no estimate, not a zero
    assert report["invalid_as_failure"]["success_rate"]["estimate"] == 0.0
    assert report["invalid_rate_flagged"] is True


def test_failing_canary_aborts_before_any_agent_attempt(
    edited_bank: EditTask, tmp_path: Path
) -> None:
    def break_oracle(task: dict[str, Any]) -> None:
        task["outcome_assertions"][0]["expect_rows"][0][1] = 71

    suite = edited_bank(break_oracle)
    calls: list[str] = []

    async def agent(session: Session) -> None:
        calls.append("called")

    with RunStore(tmp_path / "runs.db") as store:
        runner = _runner(suite, store, make_agent=lambda: FunctionAgent(agent))
        with pytest.raises(BatchAborted, match="canary task 'transfer' failed with its oracle"):
            asyncio.run(runner.start(BatchConfig(attempts=3)))
        assert store.batches() == []
    assert calls == []


def test_failing_reset_check_aborts_the_batch(edited_bank: EditTask, tmp_path: Path) -> None:
    suite = edited_bank(lambda t: t.update(reset_check={"initial_state_hash": "f" * 64}))
    with RunStore(tmp_path / "runs.db") as store:
        with pytest.raises(BatchAborted, match="reset check failed for task 'transfer'"):
            asyncio.run(_runner(suite, store).start(BatchConfig(attempts=1)))
        assert store.batches() == []


def test_concurrent_attempts_never_share_state(bank: Suite, tmp_path: Path) -> None:
    in_flight: list[int] = []
    peak = [0]

    async def slow_transfer(session: Session) -> str:
        in_flight.append(1)
        peak[0] = max(peak[0], len(in_flight))
        try:  # a try stopped inside (an invalid try, retried) must leave the count too
            await session.say("What is your PIN?")
            await session.call("check_pin", {"account": "A", "pin": "1234"})
            waited = 0
            while peak[0] < 8 and waited < 400:  # agents run in threads: wait for the others
                await asyncio.sleep(0.005)
                waited += 1
            await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        finally:
            in_flight.pop()
        return "done"

    with RunStore(tmp_path / "runs.db") as store:
        runner = _runner(bank, store, make_agent=lambda: FunctionAgent(slow_transfer))
        result = asyncio.run(runner.start(BatchConfig(attempts=16, concurrency=8)))
    assert peak[0] == 8
    assert [r.terminal_reason for r in result.runs] == ["success"] * 16
    assert len({r.final_state_hash for r in result.runs}) == 1


def test_seeds_derive_from_batch_seed_task_and_attempt() -> None:
    assert derive_seed(0, "a", 1) == derive_seed(0, "a", 1)
    assert (
        len(
            {
                derive_seed(0, "a", 1),
                derive_seed(1, "a", 1),
                derive_seed(0, "b", 1),
                derive_seed(0, "a", 2),
            }
        )
        == 4
    )


def test_sigkill_then_resume_gives_every_attempt_exactly_once(tmp_path: Path) -> None:
    system = tmp_path / "bank_system.yaml"
    system.write_text(
        SYSTEM.read_text().replace("{fault_rate: 0.5}", "{fault_rate: 0.5, delay: 0.05}")
    )
    (tmp_path / "bank_agent.py").write_text((BANK.parent / "bank_agent.py").read_text())
    store = tmp_path / "runs.db"
    attempts = 40
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "groundstate.cli",
            "run",
            str(BANK),
            "--system",
            str(system),
            "--attempts",
            str(attempts),
            "--concurrency",
            "12",  # tries finish together: stored in groups, one transaction each
            "--store",
            str(store),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while stored_runs(store) < 8:
        assert proc.poll() is None, "the batch ended before it could be killed"
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the batch stored fewer than 8 runs in 120 s")
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with RunStore(store) as runs:
        batch_id = runs.batch().batch_id
        killed = runs.runs(batch_id)
        for record in killed:  # only whole records, whose artifacts verify
            trace = runs.read_artifact(record.artifact_locations["trace.jsonl"])
            assert trace.count("\n") == len(record.observation_action_log)
        assert runs.verify(batch_id).ok  # no group was stored in part: the chain is whole
    assert 8 <= len(killed) < attempts
    result = resume_bank(store, batch_id, system)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["batch_id"] == batch_id
    with RunStore(store) as runs:
        stored = runs.runs(batch_id)
    assert sorted((r.task_id, r.attempt) for r in stored) == [
        ("transfer", n) for n in range(1, attempts + 1)
    ]
    assert all(r.valid for r in stored)
    with RunStore(store) as runs:
        assert runs.verify(batch_id).ok


def test_resume_refuses_a_changed_system(bank: Suite, tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        result = asyncio.run(_runner(bank, store).start(BatchConfig(attempts=1)))
        other = load_system(SYSTEM).model_copy(update={"name": "other"})
        runner = BatchRunner(bank, other, store)
        with pytest.raises(Exception, match=r"differs from the batch's in name$"):
            asyncio.run(runner.resume(result.batch.batch_id))


def test_a_coroutine_function_can_be_the_system_entry(bank: Suite, tmp_path: Path) -> None:
    system_file = tmp_path / "fn_system.yaml"
    system_file.write_text(
        "harness:\n  orchestration_loop:\n"
        f"    entry: {BANK.parent / 'bank_function_agent.py'}:transfer_agent\n"
        "    params: {amount: 30}\n"
    )
    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(bank, load_system(system_file), store)
        result = asyncio.run(runner.start(BatchConfig(attempts=2)))
    assert [r.terminal_reason for r in result.runs] == ["success", "success"]
