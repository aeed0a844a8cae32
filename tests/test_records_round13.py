"""Run store and reports accounting, thirteenth audit: what a report says of how its batch was
produced (its start and each resume, on which executor, by which process; whether its tasks
were proven first, and under which validator), recomputed from the raw rows; stores made
before sessions were recorded; judge errors through every export."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sqlite3
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundstate.analysis import batch_report, provenance
from groundstate.cli import main
from groundstate.executors import make_executor
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, BatchRunner, Interrupted
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.system import InvalidRunPolicy, SystemSpec, load_system
from groundstate.store import RunStore
from groundstate.testing import FaultyEnvironments
from groundstate.validation.suite import VALIDATOR_REVISION

from .conftest import BANK, BANK_SYSTEM


def _bank() -> tuple[Suite, SystemSpec]:
    suite = load_suite(BANK)
    suite.config = suite.config.model_copy(update={"canary": None})
    policy = InvalidRunPolicy(max_retries=1, max_invalid_rate=1)
    return suite, load_system(BANK_SYSTEM).model_copy(update={"invalid_run_policy": policy})


Made = tuple[Path, str, list[list[AgentRun]]]


@pytest.fixture(scope="module")
def resumed(tmp_path_factory: pytest.TempPathFactory) -> Made:
    """A batch of 3 attempts started in-process through the library without proving its
    tasks, stopped by SIGINT after its first try (invalid: the environment failed), then
    resumed on the process executor with its tasks proven: the tries each session stored, as
    the runner reported them."""
    store = tmp_path_factory.mktemp("resumed") / "runs.db"
    suite, system = _bank()
    seen: list[list[AgentRun]] = [[], []]
    with RunStore(store) as runs:
        first = BatchRunner(suite, system, runs, make_env=FaultyEnvironments(rate=1.0))

        def stop(run: AgentRun) -> None:
            seen[0].append(run)
            first.interrupt.signum = signal.SIGINT

        first.on_run = stop
        with pytest.raises(Interrupted):
            asyncio.run(first.start(BatchConfig(attempts=3)))
        assert first.batch_id is not None
        second = BatchRunner(
            suite, system, runs, executor=make_executor("process", suite), on_run=seen[1].append
        )
        asyncio.run(
            second.resume(first.batch_id, 2, preflight=False, validator_revision=VALIDATOR_REVISION)
        )
    return store, first.batch_id, seen


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def _compared_with_itself(batch_id: str, store: Path) -> dict[str, Any]:
    """``compare X X --json``: the JSON on stdout; the same-batch warning on stderr."""
    result = CliRunner().invoke(
        main, ["compare", batch_id, batch_id, "--json", "--store", str(store)]
    )
    assert result.exit_code == 0, result.output
    assert "is compared with itself" in result.stderr
    return json.loads(result.stdout)


def test_each_session_is_recorded_with_its_executor_process_and_tries(resumed: Made) -> None:
    """Found here: a batch started on one executor and resumed on another recorded the first
    only (``BatchInfo.executor``), and nothing said it was resumed, how often, or which tries
    came from which process: the store kept no such fact, so no report could show it."""
    store, batch_id, seen = resumed
    with RunStore(store) as runs:
        batch = runs.batch(batch_id)
        every = runs.runs(batch_id)
    first, second = batch.sessions
    assert (first.number, first.executor, first.concurrency) == (1, "in-process", 1)
    assert (second.number, second.executor, second.concurrency) == (2, "process", 2)
    assert first.pid == second.pid  # one test process ran both
    # recomputed from the runner's own account of what each session stored
    assert [first.tries, second.tries] == [len(seen[0]), len(seen[1])] == [1, 3]
    assert second.reruns == sum(r.retry > 0 for r in seen[1]) == 1
    assert first.tries + second.tries == len(every)
    # and from the raw rows: the chain links of each session are its tries' rows
    with sqlite3.connect(store) as db:
        ids = [
            {row[0] for row in db.execute(sql, (batch_id, *bounds))}
            for sql, bounds in (
                ("SELECT run_id FROM runs WHERE batch_id = ? AND seq < ?", (second.first_seq,)),
                ("SELECT run_id FROM runs WHERE batch_id = ? AND seq >= ?", (second.first_seq,)),
            )
        ]
    assert ids == [{r.run_id for r in seen[0]}, {r.run_id for r in seen[1]}]
    # and runs --json names the session of each try
    _, out = _invoke("runs", batch_id, "--json", "--store", str(store))
    listed = {row["run_id"]: row["session"] for row in json.loads(out)["runs"]}
    assert listed == {r.run_id: n for n, tries in enumerate(seen, 1) for r in tries}


def test_every_report_says_where_a_resumed_batch_ran_and_whether_it_was_proven(
    resumed: Made, tmp_path: Path
) -> None:
    """The JSON report carries the sessions, the terminal report and the HTML page say
    "started on X, resumed on Y", and that the start ran tasks never proven valid; compare
    names both for each side."""
    store, batch_id, _ = resumed
    code, out = _invoke("report", batch_id, "--json", "--store", str(store))
    assert code == 0, out
    block = json.loads(out)["provenance"]
    assert block["resumes"] == 1 and block["executors"] == ["in-process", "process"]
    assert [s["tries"] for s in block["sessions"]] == [1, 3]
    assert block["validation"] == "partly_proven"
    assert block["validator_revisions"] == [VALIDATOR_REVISION]
    assert block["stale_validation"] is False
    code, out = _invoke("report", batch_id, "--store", str(store))
    flat = " ".join(out.split())
    assert "RESUMED: started on in-process (concurrency 1" in flat
    assert "resumed 1 time on another executor: on process (concurrency 2" in flat
    assert "3 tries, 1 rerun)" in flat
    assert "VALIDATION: session 1 ran tasks never proven valid" in flat
    page = tmp_path / "r.html"
    _invoke("report", batch_id, "--html", str(page), "--store", str(store))
    text = page.read_text()
    assert 'id="sessions-note"' in text and 'id="validation-alert"' in text
    notes = _compared_with_itself(batch_id, store)["notes"]
    assert any(f"a ({batch_id}) ran: started on in-process" in n for n in notes), notes
    assert any(f"b ({batch_id}) validation: session 1" in n for n in notes), notes


def test_a_batch_proven_under_an_older_validator_is_reported_stale(
    resumed: Made, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch's tasks proven under validator revision N, reported once the validator proves
    more (N + 1): the verdicts it ran on may not hold; every report says so."""
    store, batch_id, _ = resumed
    monkeypatch.setattr("groundstate.validation.suite.VALIDATOR_REVISION", VALIDATOR_REVISION + 1)
    code, out = _invoke("report", batch_id, "--json", "--store", str(store))
    block = json.loads(out)["provenance"]
    assert code == 0 and block["stale_validation"] is True
    assert block["current_validator_revision"] == VALIDATOR_REVISION + 1
    _, out = _invoke("report", batch_id, "--store", str(store))
    assert f"proven under validator revision {VALIDATOR_REVISION}, older than" in " ".join(
        out.split()
    )


def test_run_records_its_proof_and_a_library_batch_without_one_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``groundstate run`` proves the tasks (its validator revision is recorded); a batch run
    through the library without :func:`proven` is ``not_proven`` in every report."""
    monkeypatch.setattr("groundstate.validation.require_valid", lambda *a, **k: [])  # cached
    store = tmp_path / "runs.db"
    args = ["run", str(BANK), "--system", str(BANK_SYSTEM), "--json", "--store", str(store)]
    code, out = _invoke(*args)
    assert code == 0, out
    printed = json.loads(out)
    batch_id = printed["batch_id"]
    # run --json says how the batch ran, and the tries its invalid-rate flag rests on
    assert printed["provenance"]["validation"] == "proven"
    assert printed["provenance"]["sessions"][0]["tries"] == printed["tries"]["tries"] == 1
    with RunStore(store) as runs:
        batch = runs.batch(batch_id)
    (session,) = batch.sessions
    assert session.validator_revision == VALIDATOR_REVISION and session.executor == "in-process"
    assert provenance(batch)["validation"] == "proven"
    _, out = _invoke("report", batch_id, "--store", str(store))
    assert "VALIDATION" not in out and "RESUMED" not in out  # one session, proven
    suite, system = _bank()
    with RunStore(store) as runs:
        result = asyncio.run(BatchRunner(suite, system, runs).start(BatchConfig()))
    block = batch_report(result.batch, result.runs)["provenance"]
    assert block["validation"] == "not_proven" and block["resumes"] == 0


def _stopped(store: Path) -> str:
    """A batch of 2 attempts stopped by SIGINT after its first try (an invalid one)."""
    suite, system = _bank()
    with RunStore(store) as runs:
        runner = BatchRunner(suite, system, runs, make_env=FaultyEnvironments(rate=1.0))
        runner.on_run = lambda run: setattr(runner.interrupt, "signum", signal.SIGINT)
        with pytest.raises(Interrupted):
            asyncio.run(runner.start(BatchConfig(attempts=2)))
    assert runner.batch_id is not None
    return runner.batch_id


def _without_sessions(store: Path) -> None:
    """*store* as a groundstate from before sessions left it: no ``sessions`` table, nor any
    table added after it (the store refuses a table missing beside a later one as dropped),
    and none of their triggers."""
    later = ("sessions", "session_chains", "invalid_task_chains", "started_tries")
    with sqlite3.connect(store) as db:
        marks = ", ".join("?" * len(later))
        triggers = db.execute(
            f"SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name IN ({marks})",
            later,
        ).fetchall()
        db.executescript(
            "".join(f"DROP TRIGGER {name};" for (name,) in triggers)
            + "".join(f"DROP TABLE IF EXISTS {table};" for table in later)
            + "PRAGMA application_id = 0;"  # nor the stamp of its tables (fiftieth round)
        )


def test_a_store_made_before_sessions_opens_reports_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older store (no ``sessions`` table) is read as it is where it cannot be written,
    its batches reported with their sessions ``not_recorded``; opened where it can be, it
    gains the table, and a batch it started before is resumed as session 2, the tries of
    its unrecorded start counted apart."""
    store = tmp_path / "runs.db"
    batch_id = _stopped(store)
    suite, system = _bank()
    _without_sessions(store)
    with monkeypatch.context() as patched:  # as for a store on read-only media
        patched.setattr("groundstate.store.os.access", lambda *a: False)
        with RunStore(store, create=False) as runs:
            assert runs.read_only
            batch = runs.batch(batch_id)
            report = batch_report(batch, runs.runs(batch_id))
    assert batch.sessions == [] and report["provenance"]["validation"] == "not_recorded"
    assert report["provenance"]["resumes"] is None
    with RunStore(store) as runs:  # writable: migrated
        asyncio.run(BatchRunner(suite, system, runs).resume(batch_id, preflight=False))
        batch = runs.batch(batch_id)
        stored = len(runs.runs(batch_id))
    (session,) = batch.sessions
    assert session.number == 2 and session.first_seq == 2 and session.tries == stored - 1
    block = provenance(batch)
    assert block["resumes"] == 1 and block["unrecorded"] == {"tries": 1, "executor": "in-process"}
    _, out = _invoke("report", batch_id, "--store", str(store))
    assert "started on in-process (1 try; its session was not recorded); resumed 1 time" in (
        " ".join(out.split())
    )


def test_a_hand_edited_session_is_logged_as_an_edit(resumed: Made, tmp_path: Path) -> None:
    """Sessions are append-only, as runs are: an UPDATE or DELETE shows in the edits log (and
    so breaks the batch's seal: the next report checks it in full)."""
    copy = tmp_path / "runs.db"
    copy.write_bytes(resumed[0].read_bytes())
    with sqlite3.connect(copy) as db:
        db.execute("UPDATE sessions SET record = record")
        db.execute("DELETE FROM sessions WHERE number = 2")
        logged = db.execute("SELECT table_name, change FROM edits").fetchall()
    assert ("sessions", "update") in logged and ("sessions", "delete") in logged


def _judged_rows() -> list[dict[str, Any]]:
    return [
        {"task_id": t, "attempt": a, "success": a != 1, "judge_errors": (a + i) % 3}
        for i, t in enumerate(("refund", "swap", "cancel"))
        for a in range(3)
    ]


@pytest.mark.parametrize(
    ("fmt", "suffix"), [("jsonl", "jsonl"), ("csv", "csv"), ("inspect", "eval")]
)
def test_judge_errors_survive_every_export_and_its_import(
    tmp_path: Path, fmt: str, suffix: str
) -> None:
    """Found here: every export dropped the judge errors (``AgentRun.judge_errors``) that the
    batch's report counts: the exported file said nothing of them, and the batch imported
    back reported none. Each format now carries the count (a ``judge_errors`` column; the
    Inspect sample's own metadata and score), and an import stores it."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in _judged_rows()))
    store = tmp_path / "runs.db"
    first = _imported(store, rows)
    before = _judge_block(store, first)
    # recomputed from the rows: every attempt is counted (no reruns), each with its errors
    assert before == {
        "attempts": sum(r["judge_errors"] > 0 for r in _judged_rows()),
        "counted_attempts": 9,
        "errors": sum(r["judge_errors"] for r in _judged_rows()),
        "by_task": {"cancel": 2, "refund": 2, "swap": 2},
    }
    out = tmp_path / f"out.{suffix}"
    code, text = _invoke("export", first, "--format", fmt, "--out", str(out), "--store", str(store))
    assert code == 0, text
    assert _judge_block(store, _imported(store, out)) == before
    with RunStore(store) as runs:  # the records hold them, not only the outcome columns
        assert sorted(r.judge_errors for r in runs.runs(first)) == sorted(
            r["judge_errors"] for r in _judged_rows()
        )


def test_a_row_counting_more_judge_errors_than_any_task_has_is_refused(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"task_id": "t", "attempt": 0, "success": True,
                                "judge_errors": 10**9}) + "\n")  # fmt: skip
    args = ["import-results", str(rows), "--name", "j", "--store", str(tmp_path / "s")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "judge_errors" in result.stderr and "at most" in result.stderr


def _imported(store: Path, path: Path) -> str:
    code, out = _invoke("import-results", str(path), "--name", "j", "--store", str(store))
    assert code == 0, out
    return out.strip().splitlines()[-1].removeprefix("batch ")


def _judge_block(store: Path, batch_id: str) -> dict[str, Any]:
    code, out = _invoke("report", batch_id, "--json", "--store", str(store))
    assert code == 0, out
    block: dict[str, Any] = json.loads(out)["judge_errors"]
    return block


@pytest.mark.parametrize("fmt", ["jsonl", "inspect"])
def test_an_unfinished_batch_is_not_exported_as_a_finished_one(tmp_path: Path, fmt: str) -> None:
    """Found here: the Inspect log of a batch stopped before its end said ``status:
    success`` (Inspect's readers, ours too, took it as a finished eval), and no export said
    the batch lacked attempts: imported back it reported complete. The log now says
    ``cancelled`` (its import warns), and ``export`` warns for every format."""
    store = tmp_path / "runs.db"
    batch_id = _stopped(store)
    out = tmp_path / f"out.{fmt}"
    args = ["export", batch_id, "--format", fmt, "--out", str(out), "--store", str(store)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert f"warning: batch {batch_id} is incomplete (1 of 2 planned attempts" in result.stderr
    if fmt == "inspect":
        with zipfile.ZipFile(out) as archive:
            header = json.loads(archive.read("header.json"))
        assert header["status"] == "cancelled"
        own = header["eval"]["metadata"]["groundstate"]["provenance"]
        assert own["validation"] == "not_proven" and own["sessions"][0]["tries"] == 1
        args = ["import-results", str(out), "--name", "j", "--store", str(store)]
        imported = CliRunner().invoke(main, args)
        assert "status is 'cancelled', not 'success'" in imported.output


def test_a_batch_another_live_process_is_running_is_reported_as_running(tmp_path: Path) -> None:
    """Found here: ``report`` of a batch another process was still running called it
    INCOMPLETE and gave the ``--resume`` command that completes it, which that process's
    lease refuses: the figures were of a batch under way, not of one stopped. Every report
    now says who runs it, and that its figures are of the tries stored so far."""
    store = tmp_path / "runs.db"
    batch_id = _stopped(store)
    now = datetime.now(UTC).isoformat()
    other = os.getppid()  # a live process that is not this one
    with sqlite3.connect(store) as db:
        db.execute(
            "INSERT INTO leases VALUES (?, ?, ?, ?, ?)",
            (batch_id, other, socket.gethostname(), now, now),
        )
    code, out = _invoke("report", batch_id, "--store", str(store))
    flat = " ".join(out.split())
    assert code == 0 and f"RUNNING: the batch is being run by pid {other}" in flat
    assert "INCOMPLETE" in flat and "--resume" not in flat
    _, out = _invoke("report", batch_id, "--json", "--store", str(store))
    assert f"pid {other}" in json.loads(out)["provenance"]["running"]
    notes = _compared_with_itself(batch_id, store)["notes"]
    assert any("being run by" in note for note in notes)
    page = tmp_path / "r.html"
    _invoke("report", batch_id, "--html", str(page), "--store", str(store))
    assert 'id="running-alert"' in page.read_text() and "--resume" not in page.read_text()
    with sqlite3.connect(store) as db:  # gone: stopped, resumable, reported as such
        db.execute("DELETE FROM leases")
    _, out = _invoke("report", batch_id, "--store", str(store))
    assert "RUNNING" not in out and "--resume" in out


def test_the_reports_accounting_is_that_of_the_raw_rows(resumed: Made) -> None:
    """Every count ``report --json`` gives of a resumed batch with a rerun, recomputed from
    the store's rows with SQL alone: tries, invalid tries by class, counted attempts (the
    last try of each), valid and invalid ones, successes per task, and the sessions' tries."""
    store, batch_id, _ = resumed
    with sqlite3.connect(store) as db:
        rows = db.execute(
            "SELECT task_id, attempt, retry, terminal_reason, success, seq FROM runs "
            "WHERE batch_id = ?",
            (batch_id,),
        ).fetchall()
    invalid = {"environment_failure", "grader_failure"}
    last: dict[tuple[str, int], tuple[Any, ...]] = {}
    for row in sorted(rows, key=lambda r: r[2]):
        last[(row[0], row[1])] = row
    counted_valid = [r for r in last.values() if r[3].split("/")[0] not in invalid]
    _, out = _invoke("report", batch_id, "--json", "--store", str(store))
    data = json.loads(out)
    assert data["tries"]["tries"] == len(rows)
    assert data["tries"]["invalid_tries"] == sum(r[3].split("/")[0] in invalid for r in rows)
    assert data["valid_attempts"] == len(counted_valid)
    assert data["invalid_attempts"] == len(last) - len(counted_valid)
    (task,) = data["tasks"]
    assert (task["attempts"], task["valid"]["n"]) == (len(last), len(counted_valid))
    assert task["valid"]["c"] == sum(r[4] for r in counted_valid)
    sessions = data["provenance"]["sessions"]
    assert [s["tries"] for s in sessions] == [
        sum(1 for r in rows if r[5] < sessions[1]["first_seq"]),
        sum(1 for r in rows if r[5] >= sessions[1]["first_seq"]),
    ]
    assert data["missing_attempts"] is None and len(last) == data["attempts_per_task"] == 3
