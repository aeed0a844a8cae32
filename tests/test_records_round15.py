"""Run store and reports accounting, fifteenth audit: tries stored outside their batch's plan
(a task it does not plan, an attempt past its attempts, a rerun past its policy or of a valid
try) are named by ``verify`` and counted by no report."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, BatchRunner, Interrupted
from groundstate.store import RunStore
from groundstate.testing import FaultyEnvironments

from .test_records_round13 import _bank


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A finished batch of the bank suite: one task, 2 attempts, each a valid failure; its
    policy allows one rerun of an invalid try."""
    store = tmp_path_factory.mktemp("made") / "runs.db"
    suite, system = _bank()
    with RunStore(store) as runs:
        result = asyncio.run(BatchRunner(suite, system, runs).start(BatchConfig(attempts=2)))
    return store, result.batch.batch_id


def _copy(made: tuple[Path, str], tmp_path: Path) -> Path:
    shutil.copytree(made[0].parent, tmp_path / "copy")
    return tmp_path / "copy" / "runs.db"


def _report(store: Path, batch_id: str, *args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = _invoke("report", batch_id, "--json", "--store", str(store), *args)
    data: dict[str, Any] = json.loads(out)
    return code, data, err


_FIGURES = ("n_tasks", "valid_attempts", "invalid_attempts", "success_rate", "pass_hat_k",
            "tasks", "tries", "missing_attempts", "terminal_reasons")  # fmt: skip


# Each added by another program through the library, every hash and chain link right.
_FOREIGN = {
    "ghost": {"task_id": "ghost", "attempt": 1, "retry": 0},  # a task it never planned
    "third": {"attempt": 3, "retry": 0},  # past its 2 attempts
    "zeroth": {"attempt": 0, "retry": 0},  # attempts are numbered from 1
    "flip": {"attempt": 1, "retry": 1},  # a rerun of a valid failure: it would count instead
}


def _add_foreign(store: Path, batch_id: str) -> None:
    with RunStore(store) as runs:
        failure = runs.runs(batch_id)[0]
        for run_id, fields in _FOREIGN.items():
            success = {"run_id": run_id, "success": True, "terminal_reason": "success"}
            runs.add_run(failure.model_copy(update=success | fields), {})


def test_tries_outside_the_plan_are_named_and_counted_by_no_report(
    made: tuple[Path, str], tmp_path: Path
) -> None:
    """Found here: successes stored into a finished batch outside its plan (another task,
    a third attempt of two, an attempt 0, a rerun of a valid failure) verified, and every
    report counted them: a success rate of 0 became 0.67 over 2 tasks, ``batches`` said
    ``5/2 complete``, ``runs`` marked the rerun counted. They are now named by ``verify``
    (exit 1) and in every report, which counts none of them."""
    store = _copy(made, tmp_path)
    batch_id = made[1]
    _, before, _ = _report(store, batch_id)
    _add_foreign(store, batch_id)

    code, out, _ = _invoke("verify", batch_id, "--store", str(store))
    assert code == 1, out
    for run_id in _FOREIGN:
        assert f"outside_plan: run {run_id}:" in out, out
    assert "(a task the batch does not plan)" in out
    assert "(the batch plans attempts 1 to 2)" in out
    assert "only invalid tries are rerun" in out

    for _ in range(2):  # no seal is made of it: the second report checks in full again
        code, data, err = _report(store, batch_id)
        assert code == 1 and data["outside_plan"] == len(_FOREIGN), err
        assert {name: data[name] for name in _FIGURES} == {name: before[name] for name in _FIGURES}
        assert data["success_rate"]["estimate"] == 0.0
        assert not data["integrity"]["verified"] and data["integrity"]["check"] == "full"
        assert sum("outside the batch's plan" in line for line in err.splitlines()) == 4

    code, out, _ = _invoke("report", batch_id, "--store", str(store))
    flat = " ".join(out.split())
    assert "OUTSIDE THE PLAN: 4 stored tries are outside the batch's plan" in flat
    assert "transfer payments 0 / 2" in flat
    html = tmp_path / "page.html"
    _invoke("report", batch_id, "--html", str(html), "--store", str(store))
    assert 'id="outside-plan-alert"' in html.read_text(encoding="utf-8")

    code, out, _ = _invoke("batches", "--json", "--store", str(store))
    (summary,) = json.loads(out)
    assert (summary["attempts_stored"], summary["attempts_expected"]) == (2, 2)
    assert summary["outside_plan"] == 4 and summary["status"] == "complete"

    code, out, _ = _invoke("runs", batch_id, "--json", "--store", str(store))
    counted = {row["run_id"]: row["counted"] for row in json.loads(out)["runs"]}
    assert not any(counted[run_id] for run_id in _FOREIGN)
    assert sum(counted.values()) == 2


def test_a_rerun_past_the_policy_leaves_the_attempt_unfinished_not_flipped(
    made: tuple[Path, str], tmp_path: Path
) -> None:
    """An invalid try rerun by its policy's one rerun (retry 1, in the plan), then a second
    rerun (retry 2, past the policy) that succeeded: the attempt counts its retry 1."""
    store = _copy(made, tmp_path)
    batch_id = made[1]
    with RunStore(store) as runs:
        # a third batch of the same plan, run by hand: attempt 1 tried three times
        batch = runs.batch(batch_id).model_copy(update={"batch_id": "byhand000000"})
        runs.add_batch(batch)
        template = runs.runs(batch_id)[0].model_copy(update={"batch_id": "byhand000000"})
        tries = [
            (0, "environment_failure/reset", False),
            (1, "agent_failure/incorrect_state", False),
            (2, "success", True),
        ]
        for retry, reason, success in tries:
            fields = {"retry": retry, "terminal_reason": reason, "success": success}
            runs.add_run(template.model_copy(update={"run_id": f"r{retry}"} | fields), {})
    code, data, err = _report(store, "byhand000000")
    assert code == 1 and data["outside_plan"] == 1
    assert "its policy allows 1 rerun of an invalid try" in err
    assert data["terminal_reasons"] == {"agent_failure/incorrect_state": 1}
    assert data["missing_attempts"]["count"] == 1  # attempt 2 was never stored


def test_the_store_and_the_reports_draw_the_plan_alike(
    made: tuple[Path, str], tmp_path: Path
) -> None:
    """``verify`` reads the plan from the store's columns, the reports from the records:
    on tries at random (tasks, attempts, reruns valid or not, gaps), both leave out the same."""
    from groundstate.analysis import planned

    store = _copy(made, tmp_path)
    batch_id = made[1]
    rng = random.Random(15)
    with RunStore(store) as runs:
        batch = runs.batch(batch_id).model_copy(update={"batch_id": "random000000"})
        runs.add_batch(batch)
        template = runs.runs(batch_id)[0].model_copy(update={"batch_id": "random000000"})
        keys = {
            (rng.choice(["transfer", "ghost"]), rng.randint(-1, 4), rng.randint(-1, 3))
            for _ in range(120)
        }
        reasons = ["success", "agent_failure/x", "environment_failure/reset", "grader_failure"]
        stored: list[AgentRun] = []
        for n, (task_id, attempt, retry) in enumerate(sorted(keys)):
            reason = rng.choice(reasons)
            fields = {"run_id": f"x{n}", "task_id": task_id, "attempt": attempt, "retry": retry}
            fields |= {"terminal_reason": reason, "success": reason == "success"}
            stored.append(runs.add_run(template.model_copy(update=fields), {}))
        named = {row.run_id for row in runs.outside_plan(runs.batch("random000000"))}
    inside, outside = planned(batch, stored)
    assert 0 < len(outside) < len(stored)
    assert len(named) == len(outside)
    kept = [r for r in stored if r.run_id not in named]
    assert sorted((r.task_id, r.attempt, r.retry) for r in kept) == sorted(
        zip(
            (inside.task_ids[i] for i in inside.task),
            inside.attempt.tolist(),
            inside.retry.tolist(),
            strict=True,
        )
    )


def test_a_resume_reruns_an_invalid_try_whose_foreign_rerun_is_outside_the_plan(
    tmp_path: Path,
) -> None:
    """Found here: a batch stopped after an invalid try (one rerun due) and a success stored
    as its retry 3 (past the policy's one rerun): every report counts the invalid try, with a
    rerun due, but ``--resume`` took the foreign success as the attempt's last try and reran
    nothing, so the batch stayed ``incomplete`` for good. A resume now reads the plan's tries
    as the reports do, and reruns it."""
    store = tmp_path / "runs.db"
    suite, system = _bank()
    with RunStore(store) as runs:
        first = BatchRunner(suite, system, runs, make_env=FaultyEnvironments(rate=1.0))
        first.on_run = lambda run: setattr(first.interrupt, "signum", signal.SIGINT)
        with pytest.raises(Interrupted):
            asyncio.run(first.start(BatchConfig(attempts=2)))
        batch_id = first.batch_id
        assert batch_id is not None
        (invalid,) = runs.runs(batch_id)
        assert not invalid.valid and invalid.retry == 0
        forged = {"run_id": "forged", "retry": 3, "success": True, "terminal_reason": "success"}
        runs.add_run(invalid.model_copy(update=forged), {})
        asyncio.run(BatchRunner(suite, system, runs).resume(batch_id, preflight=False))
        tries = {(r.attempt, r.retry) for r in runs.runs(batch_id)}
    assert (1, 1) in tries and (2, 0) in tries
    _, out, _ = _invoke("batches", "--json", "--store", str(store))
    (summary,) = json.loads(out)
    assert summary["status"] == "complete" and summary["outside_plan"] == 1


def test_batches_reads_each_batch_at_one_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found here: ``batches`` read a batch's stored attempts, then (queries later) its
    attempts with reruns due: a try another process stored in between was in the second and
    not the first (``1/2 incomplete (2 reruns due)``: more reruns due than attempts stored).
    It now reads the store in one snapshot."""
    store = tmp_path / "runs.db"
    suite, system = _bank()
    with RunStore(store) as runs:
        first = BatchRunner(suite, system, runs, make_env=FaultyEnvironments(rate=1.0))
        first.on_run = lambda run: setattr(first.interrupt, "signum", signal.SIGINT)
        with pytest.raises(Interrupted):
            asyncio.run(first.start(BatchConfig(attempts=2)))
        (invalid,) = runs.runs(first.batch_id or "")
    real = RunStore._invalid_last_tries

    def another_stores_first(self: RunStore) -> Any:
        with RunStore(store) as other:  # the batch's runner, storing its next try meanwhile
            other.add_run(invalid.model_copy(update={"run_id": "next", "attempt": 2}), {})
        return real(self)

    monkeypatch.setattr(RunStore, "_invalid_last_tries", another_stores_first)
    with RunStore(store) as runs:
        (summary,) = runs.batch_summaries()
    assert (summary.attempts_stored, summary.reruns_pending) == (1, 1)


@pytest.mark.parametrize(
    "fields",
    [
        {"attempt": "one"},
        {"task_id": 5},
        {"cost": "free"},
        {"attempt": 1e30},
        {"task_id": None, "attempt": None},
    ],
)
def test_a_record_whose_outcome_fields_are_mistyped_stops_with_one_line(
    made: tuple[Path, str], tmp_path: Path, fields: dict[str, Any]
) -> None:
    """Found here: a run record edited by hand into JSON whose outcome fields are not of their
    types (an attempt ``"one"``, a task id 5, a cost ``"free"``) made ``report`` and
    ``compare`` end on a traceback (``ValueError``, ``TypeError``, ``OverflowError``) where a
    record that does not parse stops them with one line. It now does, naming the run."""
    store = _copy(made, tmp_path)
    batch_id = made[1]
    with sqlite3.connect(store) as db:
        run_id, text = db.execute(
            "SELECT run_id, record FROM runs WHERE batch_id = ? ORDER BY seq LIMIT 1", (batch_id,)
        ).fetchone()
        db.execute(
            "UPDATE runs SET record = ? WHERE run_id = ?",
            (json.dumps(json.loads(text) | fields), run_id),
        )
        db.execute("DELETE FROM seals")
    for args in (["report", batch_id, "--json"], ["compare", batch_id, batch_id]):
        code, out, err = _invoke(*args, "--store", str(store))
        assert code == 2 and "Traceback" not in out + err, err
        assert f"run {run_id} of batch {batch_id} is unreadable" in err, err
        assert "its outcome fields are not of their types" in err
