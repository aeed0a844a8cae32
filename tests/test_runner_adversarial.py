"""The batch runner's guarantees under an outside team's attacks: a store that fails while a
batch writes (full disk), a retry chain cut by an interruption, a store edited by hand (rows
duplicated), resuming with a changed suite."""

from __future__ import annotations

import asyncio
import errno
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundstate import store as store_module
from groundstate.analysis import final_runs
from groundstate.cli import main
from groundstate.records import AgentRun
from groundstate.runner import BatchAborted, BatchConfig, BatchRunner, Interrupted
from groundstate.spec.suite import load_suite
from groundstate.spec.system import InvalidRunPolicy, load_system
from groundstate.store import RunStore
from groundstate.testing import FaultyEnvironments

from .conftest import BANK, BANK_SYSTEM, resume_bank, stored_runs


def _run_cli(store: Path, *extra: str) -> Any:
    args = ["run", str(BANK), "--system", str(BANK_SYSTEM), "--json", "--store", str(store)]
    return CliRunner().invoke(main, [*args, *extra])


def _slots(runs: list[AgentRun]) -> list[tuple[str, int]]:
    return sorted((r.task_id, r.attempt) for r in final_runs(runs))


@pytest.mark.parametrize("where", ["artifact", "database"])
def test_a_full_disk_while_storing_is_one_clear_error_and_a_resume_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """ENOSPC while an artifact or a record is written: one line naming the store and the
    batch to resume, exit 2, no traceback; nothing half-stored; the resume completes."""
    store = tmp_path / "runs.db"
    writes = {"n": 0}
    real_create = store_module._create
    real_prepared = RunStore.add_prepared

    def full_create(target: str, data: bytes) -> None:
        writes["n"] += 1
        if writes["n"] > 3:
            raise OSError(errno.ENOSPC, "No space left on device", target)
        real_create(target, data)

    def full_database(self: RunStore, rows: Any, **kwargs: Any) -> None:
        writes["n"] += 1
        if writes["n"] > 1:
            with self._transaction():
                raise sqlite3.OperationalError("database or disk is full")
        real_prepared(self, rows, **kwargs)

    if where == "artifact":
        monkeypatch.setattr(store_module, "_create", full_create)
    else:
        monkeypatch.setattr(RunStore, "add_prepared", full_database)
    result = _run_cli(store, "--attempts", "6")
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    with RunStore(store) as runs:
        batch_id = runs.batch().batch_id
        assert runs.verify(batch_id).ok
        assert runs.lease(batch_id) is None  # released: the resume needs no wait
    assert f"--resume {batch_id}" in result.stderr
    assert str(store) in result.stderr
    monkeypatch.undo()
    done = resume_bank(store, batch_id)
    assert done.exit_code == 0, done.output
    with RunStore(store) as runs:
        assert _slots(runs.runs(batch_id)) == [("transfer", n) for n in range(1, 7)]
        assert runs.verify(batch_id).ok


def test_a_retry_chain_cut_by_an_interruption_continues_on_resume(
    tmp_path: Path,
) -> None:
    """An attempt whose invalid try was stored just before the batch stopped is rerun on
    resume as the next retry, linked to that try, and only as often as the policy allows."""
    suite = load_suite(BANK)
    suite.config = suite.config.model_copy(update={"canary": None})
    system = load_system(BANK_SYSTEM).model_copy(
        update={"invalid_run_policy": InvalidRunPolicy(max_retries=2)}
    )
    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(suite, system, store, make_env=FaultyEnvironments(rate=1.0))

        def stop(run: AgentRun) -> None:
            runner.interrupt.signum = signal.SIGINT  # the signal lands as the try is stored

        runner.on_run = stop
        with pytest.raises(Interrupted):
            asyncio.run(runner.start(BatchConfig(attempts=2)))
        batch_id = runner.batch_id
        assert batch_id is not None
        first = store.runs(batch_id)
        assert [(r.attempt, r.retry, r.valid) for r in first] == [(1, 0, False)]
        # Resume on a still-broken environment: the chain goes on from retry 1, up to 2.
        again = BatchRunner(suite, system, store, make_env=FaultyEnvironments(rate=1.0))
        asyncio.run(again.resume(batch_id))
        stored = store.runs(batch_id)
    tries = [(r.attempt, r.retry) for r in stored]
    assert tries == [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)]
    by_id = {r.run_id: r for r in stored}
    for run in stored:
        if run.retry:
            assert run.retry_of is not None
            linked = by_id[run.retry_of]
            assert (linked.attempt, linked.retry) == (run.attempt, run.retry - 1)


def _copy_row(store: Path, *, drop_index: bool, new_retry: int) -> str:
    """Duplicate a run row by hand, as an editor would (a new run id; the record's JSON and
    hashes copied as they are)."""
    with sqlite3.connect(store) as db:
        if drop_index:
            db.execute("DROP INDEX runs_by_batch")
        columns = [row[1] for row in db.execute("PRAGMA table_info(runs)")]
        row = dict(zip(columns, db.execute("SELECT * FROM runs LIMIT 1").fetchone(), strict=True))
        row["run_id"] = "f" * 32
        row["retry"] = new_retry
        marks = ", ".join("?" for _ in columns)
        db.execute(f"INSERT INTO runs VALUES ({marks})", [row[c] for c in columns])
        return str(row["batch_id"])


@pytest.mark.parametrize(("drop_index", "new_retry"), [(False, 7), (True, 0)])
def test_a_row_duplicated_by_hand_is_named_by_verify(
    tmp_path: Path, drop_index: bool, new_retry: int
) -> None:
    store = tmp_path / "runs.db"
    assert _run_cli(store, "--attempts", "3").exit_code == 0
    batch_id = _copy_row(store, drop_index=drop_index, new_retry=new_retry)
    result = CliRunner().invoke(main, ["verify", batch_id, "--store", str(store)])
    assert result.exit_code != 0, result.output
    assert "f" * 12 in result.output  # the copy is named
    report = CliRunner().invoke(main, ["report", batch_id, "--store", str(store)])
    assert "Traceback" not in report.output and "f" * 12 in report.output, report.output
    if drop_index:  # the store cannot keep one row per try: it refuses to store more
        again = resume_bank(store, batch_id)
        assert again.exit_code == 2, again.output
        assert "transfer" in again.stderr and "more than once" in again.stderr
        assert "Traceback" not in again.output


def test_resuming_with_a_changed_suite_is_refused_clearly(tmp_path: Path) -> None:
    suite = tmp_path / "bank"
    shutil.copytree(BANK, suite)
    store = tmp_path / "runs.db"
    args = ["run", str(suite), "--system", str(BANK_SYSTEM), "--store", str(store)]
    assert CliRunner().invoke(main, [*args, "--attempts", "2", "--json"]).exit_code == 0
    with RunStore(store) as runs:
        batch_id = runs.batch().batch_id
        before = len(runs.runs(batch_id))
    policy = suite / "policy.md"
    policy.write_text(policy.read_text() + "\nOne more rule.\n")
    result = CliRunner().invoke(main, [*args, "--resume", batch_id])
    assert result.exit_code == 2, result.output
    assert f"cannot resume batch {batch_id}" in result.stderr
    assert "suite" in result.stderr and "changed" in result.stderr
    assert "Traceback" not in result.output
    with RunStore(store) as runs:
        assert len(runs.runs(batch_id)) == before


def test_an_unfinished_batch_says_so_in_every_report(tmp_path: Path) -> None:
    """A batch stopped after 3 of its 10 attempts is not reported as if it were whole: the
    JSON names the missing attempts and the terminal footer says INCOMPLETE with the resume."""
    suite = load_suite(BANK)
    store = tmp_path / "runs.db"
    with RunStore(store) as runs:
        runner = BatchRunner(suite, load_system(BANK_SYSTEM), runs)
        seen: list[AgentRun] = []

        def stop_after_three(run: AgentRun) -> None:
            seen.append(run)
            if len(seen) == 3:
                runner.interrupt.signum = signal.SIGTERM

        runner.on_run = stop_after_three
        with pytest.raises(Interrupted):
            asyncio.run(runner.start(BatchConfig(attempts=10)))
        batch_id = runner.batch_id
        assert batch_id is not None and len(final_runs(runs.runs(batch_id))) == 3
    data = json.loads(
        CliRunner().invoke(main, ["report", batch_id, "--json", "--store", str(store)]).stdout
    )
    assert data["missing_attempts"] == {
        "count": 7,
        "planned": 10,
        "tasks_without_any": [],
        "reruns_pending": 0,
    }
    shown = CliRunner().invoke(main, ["report", batch_id, "--store", str(store)]).output
    assert "INCOMPLETE: 7 of 10 planned attempts" in shown and f"--resume {batch_id}" in shown
    assert resume_bank(store, batch_id).exit_code == 0
    done = CliRunner().invoke(main, ["report", batch_id, "--json", "--store", str(store)])
    assert json.loads(done.stdout)["missing_attempts"] is None
    assert (
        "INCOMPLETE"
        not in CliRunner().invoke(main, ["report", batch_id, "--store", str(store)]).output
    )


def test_a_planned_task_with_no_attempt_is_named_not_dropped_silently(tmp_path: Path) -> None:
    from groundstate.analysis import batch_report

    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(load_suite(BANK), load_system(BANK_SYSTEM), store)
        result = asyncio.run(runner.start(BatchConfig(attempts=2)))
    planned = {**result.batch.task_revisions, "loan": 1}
    batch = result.batch.model_copy(update={"task_revisions": planned})
    assert batch_report(batch, result.runs)["missing_attempts"] == {
        "count": 2,
        "planned": 4,
        "tasks_without_any": ["loan"],
        "reruns_pending": 0,
    }
    imported = batch.model_copy(update={"source": "imported"})
    assert batch_report(imported, result.runs)["missing_attempts"] is None


def _stop_when_stored(proc: subprocess.Popen[str], store: Path, rows: int, signum: int) -> str:
    """Send *signum* once *store* holds *rows* rows; the process's stderr."""
    deadline = time.monotonic() + 120
    while stored_runs(store) < rows:
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, f"fewer than {rows} rows stored in 120 s"
        time.sleep(0.02)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    return err


def test_interrupting_a_pool_batch_and_then_its_resume_still_stores_each_attempt_once(
    tmp_path: Path,
) -> None:
    """SIGTERM to a process-pool batch, SIGINT to its in-process resume, then a last resume:
    every attempt once, retries linked, the chain whole; each stop named the resume."""
    system = tmp_path / "bank_system.yaml"
    system.write_text(
        BANK_SYSTEM.read_text().replace("{fault_rate: 0.5}", "{fault_rate: 0.5, delay: 0.03}")
    )
    (tmp_path / "bank_agent.py").write_text((BANK.parent / "bank_agent.py").read_text())
    store = tmp_path / "runs.db"
    attempts = 30
    base = [sys.executable, "-m", "groundstate.cli", "run", str(BANK), "--system", str(system)]
    pool = ["--executor", "process", "--concurrency", "4", "--store", str(store)]
    first = subprocess.Popen(
        [*base, "--attempts", str(attempts), *pool],
        stderr=subprocess.PIPE,
        text=True,
        stdout=subprocess.DEVNULL,
    )
    err = _stop_when_stored(first, store, 5, signal.SIGTERM)
    assert "--executor process" in err and "resume with:" in err
    with RunStore(store) as runs:
        batch_id = runs.batch().batch_id
        assert runs.lease(batch_id) is None
    resume = [*base, "--resume", batch_id, "--store", str(store)]
    second = subprocess.Popen(resume, stderr=subprocess.PIPE, text=True, stdout=subprocess.DEVNULL)
    err = _stop_when_stored(second, store, stored_runs(store) + 4, signal.SIGINT)
    assert f"batch {batch_id}" in err and "resume with:" in err
    done = CliRunner().invoke(main, [*resume[3:], "--json"])
    assert done.exit_code == 0, done.output
    with RunStore(store) as runs:
        stored = runs.runs(batch_id)
        assert runs.verify(batch_id).ok
    assert _slots(stored) == [("transfer", n) for n in range(1, attempts + 1)]
    keys = [(r.task_id, r.attempt, r.retry) for r in stored]
    assert len(keys) == len(set(keys))  # no try stored twice
    ids = {r.run_id: r for r in stored}
    for run in stored:
        assert (run.retry == 0) == (run.retry_of is None)
        if run.retry_of is not None:
            assert ids[run.retry_of].attempt == run.attempt
            assert not ids[run.retry_of].valid
    assert all(r.valid for r in final_runs(stored))


def test_two_runners_on_one_new_store_each_store_their_own_batch_whole(tmp_path: Path) -> None:
    """Two `run`s started together on a store neither has made yet: both create it, neither
    fails on the other's lock, each batch holds exactly its attempts and verifies."""
    store = tmp_path / "runs.db"
    command = [sys.executable, "-m", "groundstate.cli", "run", str(BANK)]
    command += ["--system", str(BANK_SYSTEM), "--attempts", "6", "--json", "--store", str(store)]
    procs = [
        subprocess.Popen(
            [*command, "--seed", str(seed)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in (1, 2)
    ]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    batch_ids = {json.loads(out)["batch_id"] for out, _ in outputs}
    assert len(batch_ids) == 2
    with RunStore(store) as runs:
        for batch_id in batch_ids:
            assert _slots(runs.runs(batch_id)) == [("transfer", n) for n in range(1, 7)]
            assert runs.verify(batch_id).ok


def test_resuming_an_imported_batch_says_it_was_imported(tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("task_id,attempt,success\ntransfer,1,1\ntransfer,2,0\n")
    store = tmp_path / "runs.db"
    imported = CliRunner().invoke(
        main, ["import-results", str(rows), "--name", "other", "--store", str(store)]
    )
    batch_id = imported.stdout.strip().splitlines()[-1].removeprefix("batch ")
    result = resume_bank(store, batch_id)
    assert result.exit_code == 2, result.output
    assert f"cannot resume batch {batch_id}: it was imported" in result.stderr
    assert str(rows) in result.stderr and "changed" not in result.stderr


def test_a_resume_on_a_broken_environment_stops_at_the_canary(tmp_path: Path) -> None:
    """The canary guards a resume as it guards a start: an environment broken since the
    batch stopped aborts the resume before any try, instead of spending every retry of
    every missing attempt on stored invalid tries."""
    suite = load_suite(BANK)
    system = load_system(BANK_SYSTEM)
    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(suite, system, store)
        runner.on_run = lambda run: setattr(runner.interrupt, "signum", signal.SIGINT)
        with pytest.raises(Interrupted):
            asyncio.run(runner.start(BatchConfig(attempts=4)))
        batch_id = runner.batch_id
        assert batch_id is not None
        before = store.runs(batch_id)
        broken = BatchRunner(suite, system, store, make_env=FaultyEnvironments(rate=1.0))
        with pytest.raises(BatchAborted, match="canary task 'transfer' failed"):
            asyncio.run(broken.resume(batch_id))
        assert [r.run_id for r in store.runs(batch_id)] == [r.run_id for r in before]
        assert store.lease(batch_id) is None
        asyncio.run(BatchRunner(suite, system, store).resume(batch_id))  # mended: completes
        assert _slots(store.runs(batch_id)) == [("transfer", n) for n in range(1, 5)]


def test_resume_refuses_another_plan_but_accepts_the_same_one(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    assert _run_cli(store, "--attempts", "2", "--seed", "5").exit_code == 0
    with RunStore(store) as runs:
        batch_id = runs.batch().batch_id
    for option, value in (("--attempts", "4"), ("--seed", "6")):
        result = _run_cli(store, "--resume", batch_id, option, value)
        assert result.exit_code == 2, result.output
        assert f"{option} {value} cannot change it" in result.output
    same = _run_cli(store, "--resume", batch_id, "--attempts", "2", "--seed", "5")
    assert same.exit_code == 0, same.output
    with RunStore(store) as runs:
        assert len(runs.runs(batch_id)) == 2
