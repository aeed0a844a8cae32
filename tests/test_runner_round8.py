"""The batch runner, eighth audit: what every view says of a batch stopped between an invalid
try and its rerun, of a task none of whose tries was valid, and of a batch stopped by a
failure that is not an interruption."""

from __future__ import annotations

import asyncio
import html
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.cli.interrupts import _stored_attempts
from groundstate.errors import ExecutorError
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, BatchRunner, Interrupted, plan_batch
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.system import InvalidRunPolicy, SystemSpec, load_system
from groundstate.store import BatchLeased, RunStore
from groundstate.testing import FaultyEnvironments

from .conftest import BANK, BANK_SYSTEM


def _bank(max_retries: int) -> tuple[Suite, SystemSpec]:
    suite = load_suite(BANK)
    suite.config = suite.config.model_copy(update={"canary": None})
    policy = InvalidRunPolicy(max_retries=max_retries, max_invalid_rate=1)
    return suite, load_system(BANK_SYSTEM).model_copy(update={"invalid_run_policy": policy})


def stopped_before_its_rerun(store: Path) -> str:
    """The id of a batch of one attempt (reruns allowed) stopped by SIGINT just after its
    invalid first try was stored, before its rerun."""
    suite, system = _bank(max_retries=2)
    with RunStore(store) as runs:
        runner = BatchRunner(suite, system, runs, make_env=FaultyEnvironments(rate=1.0))

        def stop(run: AgentRun) -> None:
            runner.interrupt.signum = signal.SIGINT

        runner.on_run = stop
        with pytest.raises(Interrupted):
            asyncio.run(runner.start(BatchConfig(attempts=1)))
    assert runner.batch_id is not None
    return runner.batch_id


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def test_an_attempt_stopped_before_its_rerun_is_reported_unfinished(tmp_path: Path) -> None:
    """Found here: a batch stopped just after an invalid try was stored, before its rerun,
    was reported complete (no INCOMPLETE line, ``missing_attempts`` null) and counted the
    attempt as invalid for good, although ``--resume`` reruns it: the number depended on
    when the batch was stopped."""
    store = tmp_path / "runs.db"
    batch_id = stopped_before_its_rerun(store)
    with RunStore(store) as runs:
        assert [(r.attempt, r.retry, r.valid) for r in runs.runs(batch_id)] == [(1, 0, False)]
    # What the interrupted run said: "batch ... stopped with 1 of 1 attempt (1 invalid ...)".
    assert _stored_attempts(store, batch_id) == "1 of 1 attempt (1 invalid with reruns due)"
    code, out = _cli("report", batch_id, "--json", "--store", str(store))
    assert code == 0, out
    assert json.loads(out)["missing_attempts"] == {
        "count": 0,
        "planned": 1,
        "tasks_without_any": [],
        "reruns_pending": 1,
    }
    page = tmp_path / "r.html"
    code, out = _cli("report", batch_id, "--store", str(store), "--html", str(page))
    flat = " ".join(out.split())
    assert "INCOMPLETE: 1 invalid attempt still has reruns due" in flat, out
    assert "reruns due under the batch's policy" in html.unescape(page.read_text())
    assert 'id="incomplete-alert"' in page.read_text()
    compared = CliRunner().invoke(
        main, ["compare", batch_id, batch_id, "--json", "--store", str(store)]
    )
    assert any("reruns due" in note for note in json.loads(compared.stdout)["notes"]), (
        compared.output
    )
    assert "is compared with itself" in compared.stderr  # the warning, beside the JSON
    # The resume spends the reruns (the environment is still broken): then it is complete.
    suite, system = _bank(max_retries=2)
    with RunStore(store) as runs:
        again = BatchRunner(suite, system, runs, make_env=FaultyEnvironments(rate=1.0))
        asyncio.run(again.resume(batch_id))
        assert [(r.retry, r.valid) for r in runs.runs(batch_id)] == [(0, 0), (1, 0), (2, 0)]
    code, out = _cli("report", batch_id, "--json", "--store", str(store))
    # finished with no valid attempt: no estimate, exit 3 (round 27), its line after the JSON
    assert code == 3 and "error: every attempt is invalid (1 attempt)" in out, out
    assert json.loads(out[: out.rindex("error: ")])["missing_attempts"] is None


def test_a_ctrl_c_while_run_loads_is_an_interruption_that_stored_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found here: ``run`` took SIGINT/SIGTERM only once the library was imported and stale
    work folders swept (seconds on a busy machine): a Ctrl-C then was click's "Aborted!"
    with exit 1 (a SIGTERM killed it silently), not the documented 130/143 and its line."""
    from groundstate import workdirs

    def interrupted_while_loading() -> None:
        os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(workdirs, "sweep_stale", interrupted_while_loading)
    store = tmp_path / "runs.db"
    result = CliRunner().invoke(
        main, ["run", str(BANK), "--system", str(BANK_SYSTEM), "--store", str(store)]
    )
    assert result.exit_code == 130, result.output
    assert "interrupted by SIGINT before the batch started: nothing was stored" in result.output
    assert not store.exists()


class _BreaksAfter:
    """An executor that runs *ok* jobs (the canary, the smoke run, attempts), then fails as a
    process pool whose workers keep dying does."""

    def __init__(self, real: Any, ok: int) -> None:
        self._real, self._left, self.name = real, ok, real.name

    def open(self, concurrency: int) -> None:
        self._real.open(concurrency)

    def room(self, concurrency: int) -> None:
        self._real.room(concurrency)

    def close(self) -> None:
        self._real.close()

    async def run(self, job: Any) -> Any:
        self._left -= 1
        if self._left < 0:
            raise ExecutorError("workers keep dying; the stored attempts are kept: resume")
        return await self._real.run(job)


def test_a_batch_stopped_by_a_broken_executor_names_itself_and_its_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found here: only an interruption or a store error printed the stopped batch and the
    command completing it; a pool that broke mid-batch (or a resume whose checks failed)
    printed its error alone, though its stored tries wait for a resume."""
    import groundstate.executors as executors

    real = executors.make_executor
    monkeypatch.setattr(
        executors, "make_executor", lambda *a, **k: _BreaksAfter(real(*a, **k), ok=3)
    )
    store = tmp_path / "runs.db"
    args = ["run", str(BANK), "--system", str(BANK_SYSTEM), "--store", str(store)]
    result = CliRunner().invoke(main, [*args, "--attempts", "3"])
    assert result.exit_code == 2, result.output
    with RunStore(store) as runs:
        (batch,) = runs.batch_summaries()
        assert batch.attempts_stored == 1
    assert f"batch {batch.batch_id} stopped" in result.output
    assert f"--resume {batch.batch_id}" in result.output
    monkeypatch.setattr(executors, "make_executor", real)
    done = CliRunner().invoke(main, [*args, "--resume", batch.batch_id])
    assert done.exit_code == 0, done.output


def test_a_task_without_any_valid_attempt_is_named_in_the_terminal_report(
    tmp_path: Path,
) -> None:
    """Found here: the JSON (``summary.views.valid.excluded_tasks``) and the HTML ("excluded
    tasks") named a task none of whose attempts was valid, left out of the valid-attempts
    numbers; the terminal report only showed fewer tasks in that view."""
    from groundstate.analysis import batch_report
    from groundstate.report.terminal import report_footer

    suite, system = _bank(max_retries=0)
    with RunStore(tmp_path / "runs.db") as runs:
        runner = BatchRunner(suite, system, runs)
        result = asyncio.run(runner.start(BatchConfig(attempts=2)))
    broken = [
        r.model_copy(update={"task_id": "broken", "terminal_reason": "grader_failure"})
        for r in result.runs
    ]
    batch = result.batch.model_copy(
        update={"task_revisions": {**result.batch.task_revisions, "broken": 1}}
    )
    footer = report_footer(batch_report(batch, [*result.runs, *broken]))
    assert "tasks with no valid attempt, left out of the valid-attempts numbers: broken" in footer
    assert "no valid attempt" not in report_footer(batch_report(result.batch, result.runs))


def test_resuming_a_complete_batch_runs_no_canary_and_no_smoke_run(tmp_path: Path) -> None:
    """Found here: a resume of a batch with nothing left to run still ran the canary and a
    smoke run of the system (model calls, for a real one), and an environment broken since
    then failed it, although no try was to be made."""
    suite = load_suite(BANK)  # its canary is on
    system = load_system(BANK_SYSTEM)
    with RunStore(tmp_path / "runs.db") as runs:
        done = asyncio.run(BatchRunner(suite, system, runs).start(BatchConfig(attempts=2)))
        broken = FaultyEnvironments(rate=1.0)
        again = asyncio.run(
            BatchRunner(suite, system, runs, make_env=broken).resume(done.batch.batch_id)
        )
        assert broken.broken == 0  # no environment built: nothing ran
        assert [r.run_id for r in again.runs] == [r.run_id for r in done.runs]


def test_a_second_runner_of_this_process_is_refused_before_it_runs_anything(
    tmp_path: Path,
) -> None:
    """Found here: a lease is a process's, so a second runner in the same process (another
    thread resuming the same batch) took it as its own, ran attempts the first was running,
    and failed at storing one ("already holds ... another process is running this batch")."""
    suite, system = _bank(max_retries=0)
    store = tmp_path / "runs.db"
    with RunStore(store) as runs:
        batch = plan_batch(suite, system, BatchConfig(attempts=3))
        runs.add_batch(batch)
    second_saw: list[BaseException] = []

    def resume_twice(run: AgentRun) -> None:
        if second_saw:
            return

        def second() -> None:
            with RunStore(store) as other:
                try:
                    asyncio.run(BatchRunner(suite, system, other).resume(batch.batch_id))
                except BaseException as exc:
                    second_saw.append(exc)

        thread = threading.Thread(target=second)
        thread.start()
        thread.join()

    with RunStore(store) as runs:
        first = BatchRunner(suite, system, runs, on_run=resume_twice)
        result = asyncio.run(first.resume(batch.batch_id, preflight=False))
    (refused,) = second_saw
    assert isinstance(refused, BatchLeased), refused
    assert sorted((r.attempt, r.retry) for r in result.runs) == [(1, 0), (2, 0), (3, 0)]
    with RunStore(store) as runs:
        assert len(runs.runs(batch.batch_id)) == 3 and runs.verify(batch.batch_id).ok
        assert runs.lease(batch.batch_id) is None


def test_a_resume_refuses_a_gate_its_batch_cannot_estimate_before_running(
    tmp_path: Path,
) -> None:
    """Found here: ``run --fail-under pass^3=...`` is refused before a 2-attempt batch starts,
    but a ``--resume`` of one ran every missing attempt first and then failed the gate."""
    store = tmp_path / "runs.db"
    batch = plan_batch(load_suite(BANK), load_system(BANK_SYSTEM), BatchConfig(attempts=2))
    with RunStore(store) as runs:
        runs.add_batch(batch)
    args = ["run", str(BANK), "--system", str(BANK_SYSTEM), "--store", str(store)]
    code, out = _cli(*args, "--resume", batch.batch_id, "--fail-under", "pass^3=0.5")
    assert code == 2, out
    assert "k = 3 needs at least 3 attempts" in out
    with RunStore(store) as runs:
        assert runs.runs(batch.batch_id) == []
