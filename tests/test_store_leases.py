"""Batch leases: a second runner of a live batch is refused with who holds it; stale leases
are taken over."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from groundstate.agents.base import Session
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, BatchRunner, plan_batch
from groundstate.spec.suite import load_suite
from groundstate.spec.system import load_system
from groundstate.store import LEASE_TIMEOUT, BatchLeased, PreparedRun, RunStore, prepare_run
from groundstate.testing import FunctionAgent, attempt

from .conftest import BANK, BANK_SYSTEM, resume_bank, stored_runs

_CLI = (sys.executable, "-m", "groundstate.cli")


def _empty_batch(store: Path, system: Path, attempts: int) -> str:
    batch = plan_batch(load_suite(BANK), load_system(system), BatchConfig(attempts=attempts))
    with RunStore(store) as runs:
        runs.add_batch(batch)
    return batch.batch_id


def _hold(store: Path, batch_id: str, pid: int, host: str, heartbeat: datetime) -> None:
    with sqlite3.connect(store) as db:
        db.execute(
            "INSERT OR REPLACE INTO leases VALUES (?, ?, ?, ?, ?)",
            (batch_id, pid, host, heartbeat.isoformat(), heartbeat.isoformat()),
        )


def _resume(store: Path, batch_id: str, system: Path = BANK_SYSTEM) -> tuple[int, str, str]:
    result = resume_bank(store, batch_id, system)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_a_live_holder_on_this_host_refuses_a_second_resume(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    batch_id = _empty_batch(store, BANK_SYSTEM, attempts=2)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        old = datetime.now(UTC) - LEASE_TIMEOUT / 2  # an old but not yet stale heartbeat
        _hold(store, batch_id, holder.pid, socket.gethostname(), old)
        code, _, err = _resume(store, batch_id)
    finally:
        holder.kill()
        holder.wait()
    assert code == 2
    assert f"batch {batch_id} is being run by pid {holder.pid} on {socket.gethostname()}" in err
    assert f"since {old:%Y-%m-%d %H:%M:%S}" in err
    assert "UNIQUE" not in err and stored_runs(store) == 0
    # the holder is gone now: its lease is stale and the next resume takes it over
    code, out, err = _resume(store, batch_id)
    assert code == 0, err
    assert len(json.loads(out)["runs"]) == 2
    with RunStore(store) as runs:
        assert runs.lease(batch_id) is None  # released at the end


def test_another_hosts_lease_is_live_until_its_heartbeat_times_out(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    batch_id = _empty_batch(store, BANK_SYSTEM, attempts=1)
    # the pid is ours, but on another host it cannot be checked: only the heartbeat counts
    fresh = datetime.now(UTC) - timedelta(seconds=5)
    _hold(store, batch_id, os.getpid(), "elsewhere.example", fresh)
    code, _, err = _resume(store, batch_id)
    assert code == 2 and f"pid {os.getpid()} on elsewhere.example" in err
    stale = datetime.now(UTC) - LEASE_TIMEOUT - timedelta(seconds=5)
    _hold(store, batch_id, os.getpid(), "elsewhere.example", stale)
    code, _, err = _resume(store, batch_id)
    assert code == 0, err
    assert stored_runs(store) == 1


def test_two_processes_resuming_one_batch(tmp_path: Path) -> None:
    """A real second resume while the first runs: refused with who holds it; the first
    completes the batch with every attempt exactly once."""
    system = tmp_path / "bank_system.yaml"
    system.write_text(BANK_SYSTEM.read_text().replace("{fault_rate: 0.5}", "{delay: 0.05}"))
    (tmp_path / "bank_agent.py").write_text((BANK.parent / "bank_agent.py").read_text())
    store = tmp_path / "runs.db"
    attempts = 30
    batch_id = _empty_batch(store, system, attempts)
    first = subprocess.Popen(
        [
            *_CLI,
            "run",
            str(BANK),
            "--system",
            str(system),
            "--resume",
            batch_id,
            "--store",
            *[str(store)],
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    try:
        while stored_runs(store) < 2:
            assert first.poll() is None, first.stderr.read() if first.stderr else ""
            assert time.monotonic() < deadline, "the first resume stored nothing in 60 s"
            time.sleep(0.02)
        code, _, err = _resume(store, batch_id, system)
        assert code == 2, err
        assert f"being run by pid {first.pid} on {socket.gethostname()}" in err
        _, trouble = first.communicate(timeout=120)
        assert first.returncode == 0, trouble
    finally:
        if first.poll() is None:
            first.send_signal(signal.SIGKILL)
        first.communicate()
    with RunStore(store) as runs:
        stored = runs.runs(batch_id)
        assert runs.verify(batch_id).ok
    assert sorted(r.attempt for r in stored) == list(range(1, attempts + 1))


def test_a_runner_whose_lease_was_taken_over_stores_nothing_more(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    stored: list[AgentRun] = []
    with RunStore(store) as runs:
        runner = BatchRunner(load_suite(BANK), load_system(BANK_SYSTEM), runs)

        def taken_over(run: AgentRun) -> None:  # as if this process stalled past the timeout
            stored.append(run)
            if len(stored) == 2:
                _hold(store, run.batch_id, 1, "elsewhere.example", datetime.now(UTC))

        runner.on_run = taken_over
        with pytest.raises(BatchLeased, match=r"being run by pid 1 on elsewhere\.example"):
            asyncio.run(runner.start(BatchConfig(attempts=5)))
        assert runner.batch_id is not None
        assert len(runs.runs(runner.batch_id)) == 2
        lease = runs.lease(runner.batch_id)
        assert lease is not None and lease.host == "elsewhere.example"  # theirs, left alone


def _leased_group(tmp_path: Path) -> tuple[Path, str, list[PreparedRun]]:
    """A store with an empty bank batch, and two of its tries prepared for storing."""
    store = tmp_path / "runs.db"
    batch_id = _empty_batch(store, BANK_SYSTEM, 2)
    output = attempt(load_suite(BANK), "transfer", FunctionAgent(_transfer))
    rows = [
        prepare_run(
            output.run.model_copy(update={"batch_id": batch_id, "run_id": f"r{n}", "attempt": n}),
            output.artifacts,
        )
        for n in (1, 2)
    ]
    return store, batch_id, rows


async def _transfer(session: Session) -> str:
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    return "done"


@pytest.mark.parametrize(
    "holder",
    [(1, socket.gethostname()), (os.getpid(), "elsewhere.example"), (os.getpid() + 1, None)],
    ids=["other-pid", "other-host", "other-pid-same-host"],
)
def test_a_group_is_stored_only_while_its_lease_is_held(
    tmp_path: Path, holder: tuple[int, str | None]
) -> None:
    # Checked in the group's own transaction: another holder (any pid or host but this
    # process's), live or not, stops the whole group, and its lease is left alone.
    store, batch_id, rows = _leased_group(tmp_path)
    pid, host = holder
    _hold(store, batch_id, pid, host or socket.gethostname(), datetime.now(UTC))
    with RunStore(store) as runs:
        with pytest.raises(BatchLeased):
            runs.add_prepared(rows, leased=batch_id)
        assert runs.runs(batch_id) == []
        lease = runs.lease(batch_id)
        assert lease is not None and (lease.pid, lease.host) == (pid, host or socket.gethostname())
        assert runs.verify(batch_id).ok


def test_a_group_is_stored_under_this_process_lease_or_one_removed_by_hand(
    tmp_path: Path,
) -> None:
    store, batch_id, rows = _leased_group(tmp_path)
    with RunStore(store) as runs:
        runs.acquire_lease(batch_id)
        runs.add_prepared(rows[:1], leased=batch_id)
        with sqlite3.connect(store) as db:
            db.execute("DELETE FROM leases")  # by hand: this process still runs the batch
        runs.add_prepared(rows[1:], leased=batch_id)
        assert [r.run_id for r in runs.runs(batch_id)] == ["r1", "r2"]
        lease = runs.lease(batch_id)
        assert lease is not None and lease.mine()
        assert runs.verify(batch_id).ok
