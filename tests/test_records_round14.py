"""Run store and reports accounting, fourteenth audit: rows forged into a store without hashes,
sessions under the hashes and the seal, and what ``batches`` says of a batch's sessions."""

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

from groundstate.cli import main
from groundstate.runner import BatchConfig, BatchRunner, Interrupted
from groundstate.store import RunLabels, RunStore
from groundstate.testing import FaultyEnvironments

from .test_records_round13 import _bank


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def resumed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A batch of 3 attempts stopped after its first try (invalid), then resumed: two
    sessions, four tries (one a rerun)."""
    store = tmp_path_factory.mktemp("resumed") / "runs.db"
    suite, system = _bank()
    with RunStore(store) as runs:
        first = BatchRunner(suite, system, runs, make_env=FaultyEnvironments(rate=1.0))
        first.on_run = lambda run: setattr(first.interrupt, "signum", signal.SIGINT)
        with pytest.raises(Interrupted):
            asyncio.run(first.start(BatchConfig(attempts=3)))
        assert first.batch_id is not None
        asyncio.run(BatchRunner(suite, system, runs).resume(first.batch_id, 2, preflight=False))
    return store, first.batch_id


def _copy(store: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "runs.db"
    copy.write_bytes(store.read_bytes())
    (tmp_path / "artifacts").symlink_to(store.parent / "artifacts")
    with sqlite3.connect(copy) as db:  # as never reported: each test seals it if it needs to
        db.execute("DELETE FROM seals")
    return copy


def _forge_unhashed_successes(store: Path, count: int) -> list[str]:
    """*count* successful attempts added past the plan by INSERT, copied from a stored success,
    leaving the hash columns NULL (as a row written before store format 2 has them)."""
    with sqlite3.connect(store) as db:
        batch_id, text = db.execute(
            "SELECT batch_id, record FROM runs WHERE terminal_reason = 'success' LIMIT 1"
        ).fetchone()
        record: dict[str, Any] = json.loads(text)
        forged = []
        for attempt in range(4, 4 + count):
            row = dict(record, run_id=f"forged{attempt}", attempt=attempt, retry=0)
            db.execute(
                "INSERT INTO runs (run_id, batch_id, task_id, attempt, retry, terminal_reason, "
                "success, created_at, record) VALUES (?, ?, ?, ?, 0, 'success', 1, '', ?)",
                (row["run_id"], batch_id, row["task_id"], attempt, json.dumps(row)),
            )
            forged.append(row["run_id"])
    return forged


def test_a_run_row_forged_without_hashes_is_altered_not_unverifiable(
    resumed: tuple[Path, str], tmp_path: Path
) -> None:
    """Found here: a row INSERTed by hand with its hash columns NULL was taken for a record
    written before store format 2 ("unverifiable", a note): six forged successes moved the
    batch's success rate from 0.33 to 0.78, and ``report`` exited 0 with ``verified: true``.
    A batch stored under format 2 (its record hashed) holds no row without hashes: such a
    row is named altered, and every reading command marks it."""
    store = _copy(resumed[0], tmp_path)
    batch_id = resumed[1]
    forged = _forge_unhashed_successes(store, 6)
    code, out, _ = _invoke("verify", batch_id, "--store", str(store))
    assert code == 1 and "ALTERED" in out
    for run_id in forged:
        assert f"record_altered: run {run_id}: record without hashes" in out
    code, out, err = _invoke("report", batch_id, "--json", "--store", str(store))
    assert code == 1 and json.loads(out)["integrity"]["verified"] is False
    assert "forged4" in err
    code, _, _ = _invoke("export", batch_id, "--format", "jsonl", "--out",
                         str(tmp_path / "x.jsonl"), "--store", str(store))  # fmt: skip
    assert code == 1 and not (tmp_path / "x.jsonl").exists()


def test_a_labels_row_forged_without_hashes_is_altered(
    resumed: tuple[Path, str], tmp_path: Path
) -> None:
    """Past the store's first hashed labels row (labels were hashed after runs: older labels
    rows stay unverifiable), a labels row without hashes was added by hand."""
    store = _copy(resumed[0], tmp_path)
    batch_id = resumed[1]
    with RunStore(store) as runs:
        (run_id,) = [r.run_id for r in runs.runs(batch_id)][:1]
        labelled = RunLabels(
            batch_id=batch_id,
            run_id=run_id,
            annotator="ann",
            taxonomy="t@1",
            labels=["x"],
            created_at=datetime.now(UTC),
        )
        runs.add_labels([labelled])
    with sqlite3.connect(store) as db:
        record = {"batch_id": batch_id, "run_id": run_id, "annotator": "eve",
                  "adjudicated": True, "taxonomy": "t@1", "labels": ["x"],
                  "created_at": "2026-01-01T00:00:00Z"}  # fmt: skip
        db.execute(
            "INSERT INTO labels (batch_id, run_id, annotator, adjudicated, created_at, record) "
            "VALUES (?, ?, 'eve', 1, '', ?)",
            (batch_id, run_id, json.dumps(record)),
        )
    code, out, _ = _invoke("verify", batch_id, "--store", str(store))
    assert code == 1 and f"labels_altered: run {run_id}: labels row without hashes" in out


def test_rows_of_a_batch_from_before_the_hashes_stay_unverifiable_until_its_first_hashed_row(
    tmp_path: Path,
) -> None:
    """A batch stored before format 2 (its record unhashed) keeps its old rows unverifiable;
    a row without hashes after its first hashed one (every row since the migration is
    hashed) was added by hand."""
    store = tmp_path / "runs.db"
    suite, system = _bank()
    with RunStore(store) as runs:
        runner = BatchRunner(suite, system, runs)
        runner.on_run = lambda run: setattr(runner.interrupt, "signum", signal.SIGINT)
        with pytest.raises(Interrupted):
            asyncio.run(runner.start(BatchConfig(attempts=3)))
    batch_id = runner.batch_id
    assert batch_id is not None
    with sqlite3.connect(store) as db:  # its start as a groundstate before format 2 left it
        db.execute("DROP TRIGGER batches_updated")
        db.execute("DROP TRIGGER runs_updated")
        db.execute("UPDATE batches SET record_hash = NULL")
        db.execute(
            "UPDATE runs SET seq = NULL, record_hash = NULL, artifact_hashes = NULL, "
            "chain_hash = NULL"
        )
        db.execute("DELETE FROM chains")
        db.execute("DELETE FROM sessions")
        db.execute("DELETE FROM session_chains")
    with RunStore(store) as runs:  # resumed since: its rows are hashed
        asyncio.run(BatchRunner(suite, system, runs).resume(batch_id, preflight=False))
    with RunStore(store) as runs:
        check = runs.verify(batch_id)
    assert [p.kind for p in check.problems] == ["unverifiable"] and check.ok
    _forge_unhashed_successes(store, 1)
    with RunStore(store) as runs:
        check = runs.verify(batch_id)
    assert not check.ok  # unhashed, and past the batch's 3 attempts (both named)
    assert {p.run_id for p in check.altered} == {"forged4"}


def _report(store: Path, batch_id: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = _invoke("report", batch_id, "--json", "--store", str(store))
    data: dict[str, Any] = json.loads(out)
    return code, data


@pytest.mark.parametrize("hashes", ["dropped", "recomputed"])
def test_a_session_rewritten_by_hand_is_named_and_breaks_the_seal(
    resumed: tuple[Path, str], tmp_path: Path, hashes: str
) -> None:
    """Found here (the thirteenth round's open lead): sessions were under no hash, so a
    session replaced by hand (``INSERT OR REPLACE``: no trigger sees it) to say its tasks
    were proven under the current validator turned ``VALIDATION: ... never proven valid``
    into ``proven``, with ``verified: true``, and a sealed batch went on reporting from its
    seal. Sessions are now hashed and chained as labels are (``session_chains``), checked by
    every full check, and pinned by the seal (their count and highest rowid)."""
    store = _copy(resumed[0], tmp_path)
    batch_id = resumed[1]
    code, before = _report(store, batch_id)
    assert code == 0 and before["provenance"]["validation"] == "not_proven"
    assert _report(store, batch_id)[1]["integrity"]["check"] == "seal"
    with sqlite3.connect(store) as db:
        (text,) = db.execute("SELECT record FROM sessions WHERE number = 1").fetchone()
        forged = text.replace('"validator_revision":null', '"validator_revision":14')
        rehashed = hashes == "recomputed"
        db.execute(
            "INSERT OR REPLACE INTO sessions (batch_id, number, created_at, record, seq, "
            "record_hash, chain_hash) SELECT batch_id, number, created_at, ?, seq, ?, "
            "chain_hash FROM sessions WHERE number = 1",
            (forged, _record_hash(forged) if rehashed else None),
        )
        assert db.execute("SELECT COUNT(*) FROM edits").fetchone() == (0,)  # no trigger saw it
    code, after = _report(store, batch_id)
    assert code == 1 and after["integrity"]["check"] == "full"
    assert after["integrity"]["verified"] is False
    assert any("session 1" in line for line in after["integrity"]["problems"])
    code, out, _ = _invoke("verify", batch_id, "--store", str(store))
    assert code == 1 and "sessions_altered" in out


def _record_hash(text: str) -> str:
    from groundstate.store import record_hash

    return record_hash(text)


def test_a_session_added_by_hand_is_named(resumed: tuple[Path, str], tmp_path: Path) -> None:
    """A third session INSERTed with its own hashes right, its chain head left as it was."""
    store = _copy(resumed[0], tmp_path)
    batch_id = resumed[1]
    with sqlite3.connect(store) as db:
        (text,) = db.execute("SELECT record FROM sessions WHERE number = 2").fetchone()
        forged = text.replace('"number":2', '"number":3')
        db.execute(
            "INSERT INTO sessions (batch_id, number, created_at, record, seq, record_hash, "
            "chain_hash) VALUES (?, 3, '', ?, 3, ?, 'x')",
            (batch_id, forged, _record_hash(forged)),
        )
    code, out, _ = _invoke("verify", batch_id, "--store", str(store))
    assert code == 1 and "sessions_altered: batch" in out and "session 3" in out


def test_side_rows_recorded_before_they_were_hashed_are_hashed_as_the_store_opens(
    resumed: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store of the thirteenth round (sessions and tasks named invalid by resumes without
    hash columns) read where it cannot be written: its sessions are read, and unverifiable;
    opened where it can be, they are hashed and chained as they stand, with no entry in the
    edits log, and verify."""
    store = _copy(resumed[0], tmp_path)
    batch_id = resumed[1]
    with sqlite3.connect(store) as db:
        db.executescript(
            "DROP TABLE session_chains; DROP TRIGGER sessions_updated; "
            "ALTER TABLE sessions DROP COLUMN seq; ALTER TABLE sessions DROP COLUMN record_hash; "
            "ALTER TABLE sessions DROP COLUMN chain_hash; DELETE FROM seals;"
            "DROP TABLE invalid_task_chains; DROP TRIGGER invalid_tasks_updated; "
            "ALTER TABLE invalid_tasks_added DROP COLUMN seq; "
            "ALTER TABLE invalid_tasks_added DROP COLUMN record_hash; "
            "ALTER TABLE invalid_tasks_added DROP COLUMN chain_hash; "
            f"INSERT INTO invalid_tasks_added VALUES ('{batch_id}', 'reset-x', '');"
            "DROP TABLE started_tries;"  # added after the thirteenth round too
            "PRAGMA application_id = 0;"  # a store stamped with its tables since round 50
        )
    with monkeypatch.context() as patched:  # as for a store on read-only media
        patched.setattr("groundstate.store.os.access", lambda *a: False)
        with RunStore(store, create=False) as runs:
            assert runs.read_only and len(runs.batch(batch_id).sessions) == 2
            check = runs.verify(batch_id)
    why = "(recorded before they were hashed; the store hashes them where it can be written)"
    assert check.ok and [p.detail for p in check.problems] == [
        f"2 sessions rows unverifiable {why}",
        f"1 invalid_tasks_added rows unverifiable {why}",
    ]
    with RunStore(store) as runs:
        check = runs.verify(batch_id)
        batch = runs.batch(batch_id)
        assert [s.number for s in batch.sessions] == [1, 2] and batch.invalid_tasks == ["reset-x"]
        assert runs.hand_edits() == 0
    assert check.ok and not check.problems


def test_batches_says_a_batch_was_resumed_as_report_counts_it(
    resumed: tuple[Path, str], tmp_path: Path
) -> None:
    """Found here (the thirteenth round's open lead): ``batches`` listed a resumed batch
    exactly like one run in one go; ``report`` said RESUMED. It now gives the resumes and the
    executors (``--json``: ``resumes``, ``executors``), counted as ``report`` counts them."""
    store, batch_id = resumed
    code, out, _ = _invoke("batches", "--json", "--store", str(store))
    (listed,) = json.loads(out)
    _, report = _report(store, batch_id)
    assert listed["resumes"] == report["provenance"]["resumes"] == 1
    assert listed["executors"] == report["provenance"]["executors"]
    code, out, _ = _invoke("batches", "--store", str(store))
    assert code == 0 and "resumed 1 time" in out
    rows = tmp_path / "rows.jsonl"  # an import records no session: nothing to say
    rows.write_text(json.dumps({"task_id": "t", "attempt": 1, "success": True}) + "\n")
    _invoke("import-results", str(rows), "--name", "i", "--store", str(tmp_path / "s.db"))
    _, out, _ = _invoke("batches", "--json", "--store", str(tmp_path / "s.db"))
    assert [(b["resumes"], b["executors"]) for b in json.loads(out)] == [(None, [])]


def test_a_task_named_invalid_by_hand_is_named_and_breaks_the_seal(
    resumed: tuple[Path, str], tmp_path: Path
) -> None:
    """Found here: a row INSERTed into ``invalid_tasks_added`` (where a resume run with
    ``--allow-invalid`` names tasks that failed validation) took its task out of every
    figure, with ``verified: true``, and a sealed batch kept reporting from its seal: the
    table was under no hash. Its rows are now hashed and chained per batch (as sessions),
    checked by every full check and pinned by the seal."""
    store = _copy(resumed[0], tmp_path)
    batch_id = resumed[1]
    code, before = _report(store, batch_id)
    assert code == 0 and before["n_tasks"] == 1
    assert _report(store, batch_id)[1]["integrity"]["check"] == "seal"
    (task_id,) = (task["task_id"] for task in before["tasks"])
    with sqlite3.connect(store) as db:
        db.execute(
            "INSERT INTO invalid_tasks_added (batch_id, task_id, created_at) VALUES (?, ?, '')",
            (batch_id, task_id),
        )
    code, after = _report(store, batch_id)
    assert code == 1 and after["integrity"] == {
        "verified": False,
        "problems": [
            f"batch {batch_id}: task named invalid by a resume {task_id!r}: without hashes "
            "(added by hand)"
        ],
        "check": "full",
        "sealed_at": None,
        "sealed_by": None,
    }


def test_a_task_a_resume_names_invalid_verifies(tmp_path: Path) -> None:
    """The tasks a resume names invalid (``RunStore.add_invalid_tasks``) are hashed as they are
    stored: the batch verifies, and reports them apart."""
    store = tmp_path / "runs.db"
    suite, system = _bank()
    with RunStore(store) as runs:
        runner = BatchRunner(suite, system, runs)
        runner.on_run = lambda run: setattr(runner.interrupt, "signum", signal.SIGINT)
        with pytest.raises(Interrupted):
            asyncio.run(runner.start(BatchConfig(attempts=3)))
        assert runner.batch_id is not None
        (task_id,) = runs.batch(runner.batch_id).task_revisions
        asyncio.run(
            BatchRunner(suite, system, runs).resume(
                runner.batch_id, preflight=False, invalid_tasks=[task_id]
            )
        )
        check = runs.verify(runner.batch_id)
        assert runs.batch(runner.batch_id).invalid_tasks == [task_id]
    assert check.ok and not check.problems


def test_a_report_of_a_batch_being_run_shows_it_at_one_commit(
    resumed: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found here: ``report`` read the batch, then checked it and read its outcome columns in
    one snapshot, then read its runs for the task table in another: a try another process
    stored meanwhile (a batch still running) was in the task table and not in the figures
    under it (``2 / 4`` valid above ``3 valid ... attempts``). Everything ``report`` and
    ``compare`` show is now read in one snapshot; the seal it writes pins that snapshot, so
    the next report checks in full and counts the new try."""
    store = _copy(resumed[0], tmp_path)
    batch_id = resumed[1]
    real = RunStore.verify

    def verify_while_another_stores(self: RunStore, *args: Any, **kwargs: Any) -> Any:
        check = real(self, *args, **kwargs)
        with RunStore(store) as other:  # another process's runner, storing a try meanwhile
            success = next(r for r in other.runs(batch_id) if r.success)
            other.add_run(success.model_copy(update={"run_id": "meanwhile", "attempt": 4}), {})
        return check

    with monkeypatch.context() as patched:
        patched.setattr(RunStore, "verify", verify_while_another_stores)
        code, out, _ = _invoke("report", batch_id, "--store", str(store))
    flat = " ".join(out.split())
    assert code == 0 and "transfer payments 1 / 3 1" in flat, out
    assert "3 valid and 0 invalid attempts; 4 tries in all" in flat
    code, data = _report(store, batch_id)
    assert data["integrity"]["check"] == "full"
    # the try is attempt 4 of a batch of 3: named past the plan (exit 1), counted nowhere
    assert code == 1 and data["outside_plan"] == 1
    assert data["valid_attempts"] == 3 and data["tries"]["tries"] == 4
    # no session stored it: the sessions' tries are the report's (sixteenth round)
    assert sum(s["tries"] for s in data["provenance"]["sessions"]) == 4


def test_an_export_writes_the_tries_it_verified(
    resumed: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Likewise ``export`` verified the batch, then read its runs again: a try stored
    meanwhile (or forged meanwhile) was written out unverified. It reads both in one
    snapshot."""
    store = _copy(resumed[0], tmp_path)
    batch_id = resumed[1]
    real = RunStore.verify

    def verify_while_another_stores(self: RunStore, *args: Any, **kwargs: Any) -> Any:
        check = real(self, *args, **kwargs)
        with RunStore(store) as other:
            success = next(r for r in other.runs(batch_id) if r.success)
            other.add_run(success.model_copy(update={"run_id": "meanwhile", "attempt": 4}), {})
        return check

    out = tmp_path / "out.jsonl"
    monkeypatch.setattr(RunStore, "verify", verify_while_another_stores)
    code, text, _ = _invoke(
        "export", batch_id, "--format", "jsonl", "--out", str(out), "--store", str(store)
    )
    assert code == 0 and "wrote 4 records" in text
    assert [json.loads(line)["attempt"] for line in out.read_text().splitlines()].count(4) == 0


def test_a_batch_being_run_before_its_first_try_is_not_called_stopped(
    resumed: tuple[Path, str], tmp_path: Path
) -> None:
    """Found here: ``report``, ``compare`` and ``runs`` of a batch another live process had
    started but not yet stored a try of said it "stopped before its first attempt was
    stored" and gave the ``--resume`` command, which that process's lease refuses (the
    thirteenth round fixed this for a batch with tries only). They now name the process."""
    store = _copy(resumed[0], tmp_path)
    with RunStore(store) as runs:
        batch = runs.batch(resumed[1]).model_copy(update={"batch_id": "fresh0batch"})
        runs.add_batch(batch)
    now = datetime.now(UTC).isoformat()
    with sqlite3.connect(store) as db:  # a live process that is not this one holds its lease
        db.execute(
            "INSERT INTO leases VALUES ('fresh0batch', ?, ?, ?, ?)",
            (os.getppid(), socket.gethostname(), now, now),
        )
    for args in (("report", "fresh0batch"), ("compare", "fresh0batch", resumed[1])):
        code, _, err = _invoke(*args, "--store", str(store))
        assert code == 2 and f"being run by pid {os.getppid()}" in err, err
        assert "--resume" not in err
    code, out, _ = _invoke("runs", "fresh0batch", "--store", str(store))
    assert "no stored runs yet: it is being run by" in out and "--resume" not in out
    code, out, _ = _invoke("batches", "--json", "--store", str(store))
    assert {b["batch_id"]: b["status"] for b in json.loads(out)}["fresh0batch"] == "running"


def test_an_export_of_a_batch_being_run_says_so(tmp_path: Path) -> None:
    """Found here: the Inspect log of a batch another live process was still running said
    ``cancelled`` (stopped), and ``export``'s warning called it incomplete only, where
    ``report`` says RUNNING. The log now says ``started`` (Inspect's status of an eval under
    way), and the warning names the process."""
    store = tmp_path / "runs.db"
    suite, system = _bank()
    with RunStore(store) as runs:
        runner = BatchRunner(suite, system, runs, make_env=FaultyEnvironments(rate=1.0))
        runner.on_run = lambda run: setattr(runner.interrupt, "signum", signal.SIGINT)
        with pytest.raises(Interrupted):
            asyncio.run(runner.start(BatchConfig(attempts=2)))
    batch_id = runner.batch_id
    assert batch_id is not None
    now = datetime.now(UTC).isoformat()
    with sqlite3.connect(store) as db:
        db.execute(
            "INSERT INTO leases VALUES (?, ?, ?, ?, ?)",
            (batch_id, os.getppid(), socket.gethostname(), now, now),
        )
    out = tmp_path / "out.eval"
    args = ["export", batch_id, "--format", "inspect", "--out", str(out), "--store", str(store)]
    code, _, err = _invoke(*args)
    assert code == 0 and f"is incomplete (being run by pid {os.getppid()}" in err, err
    with zipfile.ZipFile(out) as archive:
        assert json.loads(archive.read("header.json"))["status"] == "started"
    with sqlite3.connect(store) as db:  # stopped: cancelled, as before
        db.execute("DELETE FROM leases")
    _invoke(*args)
    with zipfile.ZipFile(out) as archive:
        assert json.loads(archive.read("header.json"))["status"] == "cancelled"
