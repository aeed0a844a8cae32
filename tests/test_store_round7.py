"""Store audit, seventh round (issue 13): tampering through SQLite that keeps every hash and
chain link right, and faults while storing.

Earlier rounds covered edited records, rehashed records, deleted rows and artifacts, damaged
files and read-only stores (test_store_integrity.py, test_store_adversarial.py). Here: the
unhashed indexed columns, rows moved between batches, duplicated or invented tries appended to
a chain by a forger, artifact files swapped, and what cannot be caught without an outside
anchor (the chain head ``verify`` prints)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import closing, suppress
from pathlib import Path
from typing import Any

import pytest

from groundstate import store as store_module
from groundstate.errors import StoreError
from groundstate.records import AgentRun
from groundstate.store import BatchInfo, RunStore, chain_link, record_hash

from .conftest import BANK, BANK_SYSTEM
from .test_store_integrity import _artifact, _batch, _in_order, _invoke


def _sql(store: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """One statement, committed, the connection closed (none left holding the log)."""
    with closing(sqlite3.connect(store)) as db, db:
        return db.execute(sql, params).fetchall()


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, BatchInfo]:
    """One stored batch, copied by each test that edits it (running it costs seconds)."""
    store = tmp_path_factory.mktemp("made") / "runs.db"
    return store, _batch(store, attempts=2)


@pytest.fixture
def stored(made: tuple[Path, BatchInfo], tmp_path: Path) -> tuple[Path, BatchInfo, list[AgentRun]]:
    source, batch = made
    shutil.copytree(source.parent, tmp_path / "copy")
    store = tmp_path / "copy" / "runs.db"
    return store, batch, _in_order(store, batch.batch_id)


_COLUMN_EDITS = {
    "success": "success = 1 - success",
    "terminal_reason": "terminal_reason = 'done'",
    "task_id": "task_id = task_id || 'x'",
    "attempt": "attempt = attempt + 7",
    "retry": "retry = retry + 1",
}


@pytest.mark.parametrize("column", sorted(_COLUMN_EDITS))
def test_an_edited_index_column_is_named_though_record_and_chain_hold(
    stored: tuple[Path, BatchInfo, list[AgentRun]], column: str
) -> None:
    """The indexed columns are not hashed, yet label imports and ``batches`` read them: a row
    whose column says another verdict, task or attempt than its record is altered."""
    store, _, runs = stored
    victim = runs[-1]
    _sql(store, f"UPDATE runs SET {_COLUMN_EDITS[column]} WHERE run_id = ?", (victim.run_id,))
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 1, out
    assert f"record_altered: run {victim.run_id}: its run id, batch" in out
    assert not any(run.run_id in out for run in runs[:-1])  # the others are untouched


def test_a_row_moved_to_another_batch_is_named_in_both(
    stored: tuple[Path, BatchInfo, list[AgentRun]],
) -> None:
    """A run re-pointed at another batch (its batch column changed): missing from its own
    chain, and out of place in the other."""
    store, batch, runs = stored
    other = _batch(store, attempts=1)
    moved = max(runs, key=lambda r: r.attempt)  # a try the one-attempt batch does not hold
    _sql(store, "UPDATE runs SET batch_id = ? WHERE run_id = ?", (other.batch_id, moved.run_id))
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 1
    assert f"batch {batch.batch_id}:" in out and "ALTERED" in out
    assert out.count("ALTERED") == 2, out


def _append_forged(store: Path, record: dict[str, Any]) -> None:
    """What a forger with the code does: append *record* to its batch's chain, every hash
    recomputed, the chain head moved on."""
    text = json.dumps(record)
    content = record_hash(text)
    batch_id = record["batch_id"]
    length, head = _sql(store, "SELECT length, head FROM chains WHERE batch_id = ?", (batch_id,))[0]
    hashes = json.dumps(
        {k: v.removeprefix("sha256:") for k, v in sorted(record["artifact_locations"].items())}
    )
    chain = chain_link(head, record["run_id"], content, hashes)
    _sql(
        store,
        "INSERT INTO runs (run_id, batch_id, task_id, attempt, retry, terminal_reason, success, "
        "created_at, record, seq, record_hash, artifact_hashes, chain_hash) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, 'x', ?, ?, ?, ?, ?)",
        (record["run_id"], batch_id, record["task_id"], record["attempt"], record["retry"],
         record["terminal_reason"], int(record["success"]), text, length + 1, content, hashes,
         chain),
    )  # fmt: skip
    _sql(store, "UPDATE chains SET length = ?, head = ?", (length + 1, chain))


def _copy_of(run: AgentRun, **changes: Any) -> dict[str, Any]:
    return {**run.model_dump(mode="json"), "run_id": "f" * 32, "success": True, **changes}


def test_a_forged_copy_of_a_try_is_named_though_every_hash_is_right(
    stored: tuple[Path, BatchInfo, list[AgentRun]],
) -> None:
    """The unique index dropped and a copy of a try appended with a new id and a new verdict:
    statistics would count the try twice. A copy as another try (retry 1) is a forgery the
    hashes cannot show (documented), and is not named a copy."""
    store, _, runs = stored
    _sql(store, "DROP INDEX runs_by_batch")
    _append_forged(store, _copy_of(runs[0]))
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 1, out
    assert f"task {runs[0].task_id!r} attempt {runs[0].attempt} try 0 is stored 2 times" in out


def test_a_forged_rerun_of_a_valid_try_is_named_outside_the_plan(
    stored: tuple[Path, BatchInfo, list[AgentRun]],
) -> None:
    """Once a documented limit (every hash is right); a rerun of a try that was valid is no
    try of the batch's plan (only invalid tries are rerun): named, not a copy (fifteenth
    round)."""
    store, _, runs = stored
    _append_forged(store, _copy_of(runs[0], retry=1))
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 1 and "stored 2 times" not in out
    assert f"task {runs[0].task_id!r} attempt {runs[0].attempt} try 1 is outside" in out


def _head(out: str) -> str:
    return next(line.split(": ")[1] for line in out.splitlines() if "chain head:" in line)


def test_a_rolled_back_store_verifies_but_its_printed_head_differs(
    made: tuple[Path, BatchInfo], tmp_path: Path
) -> None:
    """The whole file replaced by an older copy (or the last records deleted and the head
    rewound): nothing in the store can tell; the head ``verify`` printed before can."""
    source, batch = made
    store = tmp_path / "s" / "runs.db"
    shutil.copytree(source.parent, store.parent)
    older = store.parent / "older.db"  # beside the artifacts it names
    with RunStore(store) as runs:  # a consistent copy of the store as it was
        runs._db.execute(f"VACUUM INTO '{older}'")
    code, out, _ = _invoke("verify", "--json", "--store", str(older))
    (checked,) = json.loads(out)
    kept = checked["chain_head"]
    assert code == 0 and len(kept) == 64
    # one more run: the live store moves on
    (last,) = _sql(store, "SELECT record FROM runs ORDER BY seq DESC LIMIT 1")[0]
    _append_forged(store, _copy_of(AgentRun.model_validate_json(last), retry=1))
    code, out, _ = _invoke("verify", "--store", str(store))
    assert _head(out) != kept  # (the forged try is past the plan: named, exit 1)
    for journal in ("-wal", "-shm"):  # restored as a backup is: the file alone
        store.with_name(store.name + journal).unlink(missing_ok=True)
    shutil.copy(older, store)  # rolled back
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 0 and _head(out) == kept and f"batch {batch.batch_id}" in out, _


def test_deleting_the_last_try_and_rewinding_the_head_shows_in_batches(
    stored: tuple[Path, BatchInfo, list[AgentRun]],
) -> None:
    store, _, runs = stored
    before = _head(_invoke("verify", "--store", str(store))[1])
    _sql(store, "DELETE FROM runs WHERE run_id = ?", (runs[-1].run_id,))
    (prev,) = _sql(store, "SELECT chain_hash FROM runs WHERE run_id = ?", (runs[-2].run_id,))[0]
    _sql(store, "UPDATE chains SET length = ?, head = ?", (len(runs) - 1, prev))
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 0 and _head(out) != before  # the documented limit, and its anchor
    code, out, _ = _invoke("batches", "--store", str(store))
    assert "incomplete" in out


def test_swapped_artifact_files_are_both_named(
    stored: tuple[Path, BatchInfo, list[AgentRun]],
) -> None:
    """Two artifacts' files swapped (each a valid artifact of this store): content-addressed,
    so each no longer matches its name."""
    store, _, runs = stored
    a, b = (_artifact(store, run) for run in runs[:2])
    assert a.read_bytes() != b.read_bytes()
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b)
    b.write_bytes(data_a)
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 1
    assert all(f"artifact_altered: run {run.run_id}" in out for run in runs[:2])


def test_rows_physically_reordered_or_vacuumed_still_verify(
    stored: tuple[Path, BatchInfo, list[AgentRun]],
) -> None:
    """Near miss: the same rows under other rowids (reinserted in reverse, then VACUUM) are
    the same records; verify walks the chain by ``seq``, not by where rows sit."""
    store, _, _ = stored
    with closing(sqlite3.connect(store)) as db, db:
        db.execute("CREATE TEMP TABLE keep AS SELECT * FROM runs")
        db.execute("DROP TRIGGER runs_deleted")  # a real edit leaves no log; not the point
        db.execute("DELETE FROM runs")
        db.execute("INSERT INTO runs SELECT * FROM keep ORDER BY seq DESC")
    _sql(store, "VACUUM")
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 0, out


@pytest.mark.parametrize(
    "field, value",
    [("suite_hash", "0" * 64), ("system_spec_hash", "0" * 64), ("attempts", 9), ("seed", 1)],
)
def test_a_rehashed_batch_record_breaks_its_runs_chain(
    stored: tuple[Path, BatchInfo, list[AgentRun]], field: str, value: object
) -> None:
    """A batch's config, suite or system hash edited and its record hash recomputed: the
    chain starts from the batch's hash, so its first run is named."""
    store, batch, runs = stored
    (text,) = _sql(store, "SELECT record FROM batches WHERE batch_id = ?", (batch.batch_id,))[0]
    edited = json.dumps({**json.loads(text), field: value})
    _sql(
        store,
        "UPDATE batches SET record = ?, record_hash = ? WHERE batch_id = ?",
        (edited, record_hash(edited), batch.batch_id),
    )
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 1
    assert f"chain_broken: run {runs[0].run_id}" in out


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB file system of its own (root only: skipped where it cannot be mounted)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip("cannot mount a small file system here (needs root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(folder: Path) -> Path:
    filler = folder / "filler"
    with filler.open("wb") as out, suppress(OSError):
        while True:
            out.write(b"\0" * 65536)
            out.flush()
    return filler


def test_a_full_disk_is_one_line_and_loses_nothing(small_disk: Path) -> None:
    """The disk filled up after a batch was stored: reading commands still read it (read-only),
    a run names the store and the full file system (exit 2, no traceback), and once space is
    freed everything stored is there, unaltered."""
    store = small_disk / "s" / "runs.db"
    batch = _batch(store, attempts=1)
    head = _head(_invoke("verify", "--store", str(store))[1])
    filler = _fill(small_disk)
    code, out, err = _invoke("verify", "--store", str(store))
    assert code == 0 and _head(out) == head, err
    assert _invoke("report", batch.batch_id, "--store", str(store))[0] == 0
    code, _, err = _invoke("batches", "--store", str(store))
    assert code == 0, err
    with pytest.raises(StoreError, match=r"run store .*runs\.db.*file system is full"):
        _batch(store, attempts=1)
    code, _, err = _invoke("run", str(BANK), "--system", str(BANK_SYSTEM), "--store", str(store))
    assert code == 2 and "Traceback" not in out + err
    assert str(store) in err and "full" in err, err
    filler.unlink()
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 0 and _head(out.split("batch ")[1]) == head


def test_a_store_locked_by_another_writer_is_one_line_and_loses_nothing(
    stored: tuple[Path, BatchInfo, list[AgentRun]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process keeps a write transaction open past the wait: `run` stops with one
    line naming the store and why (exit 2); readers still read; nothing stored changes."""
    store, batch, runs = stored
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT", 0.2)
    head = _head(_invoke("verify", "--store", str(store))[1])
    with closing(sqlite3.connect(store, isolation_level=None)) as holder:
        holder.execute("BEGIN IMMEDIATE")
        code, out, err = _invoke(
            "run", str(BANK), "--system", str(BANK_SYSTEM), "--store", str(store)
        )
        assert code == 2 and "Traceback" not in out + err
        assert f"cannot write to the run store {store}: database is locked" in err
        assert "another process kept a write open on it" in err
        code, out, _ = _invoke("verify", "--store", str(store))  # WAL: readers go on
        assert code == 0 and _head(out) == head
        holder.execute("ROLLBACK")
    assert _in_order(store, batch.batch_id) == runs


@pytest.mark.parametrize("command", ["run", "verify", "batches"])
def test_a_folder_given_as_the_store_is_named_as_one(tmp_path: Path, command: str) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    args = ["run", str(BANK), "--system", str(BANK_SYSTEM)] if command == "run" else [command]
    code, out, err = _invoke(*args, "--store", str(folder))
    assert code == 2 and "Traceback" not in out + err
    assert f"the run store {folder} is a folder" in err and str(folder / "runs.db") in err
    assert list(folder.iterdir()) == []  # nothing made in it


def test_an_artifact_folder_that_cannot_be_written_stops_run_and_keeps_every_record(
    stored: tuple[Path, BatchInfo, list[AgentRun]],
) -> None:
    """``artifacts`` replaced by a file (as root, permissions stop nothing; a file does): the
    run stops on its first artifact with one line naming the folder, exit 2, and stores no
    record naming an artifact it could not write; the earlier records stay as they were."""
    store, batch, runs = stored
    shutil.rmtree(store.parent / "artifacts")
    (store.parent / "artifacts").write_text("not a folder")
    code, out, err = _invoke("run", str(BANK), "--system", str(BANK_SYSTEM), "--store", str(store))
    assert code == 2 and "Traceback" not in out + err
    assert f"cannot write an artifact to {store.parent / 'artifacts'}" in err
    assert "resume with:" in err
    assert _in_order(store, batch.batch_id) == runs
    (stored_runs,) = _sql(store, "SELECT COUNT(*) FROM runs")[0]
    assert stored_runs == len(runs)


def test_every_run_of_a_batch_deleted_with_its_chain_row_shows_only_in_the_edits_note(
    stored: tuple[Path, BatchInfo, list[AgentRun]],
) -> None:
    """No hash can show a batch emptied together with its ``chains`` row (it reads as one
    stopped before its first try): ``verify`` passes, and its note on the edits log is the
    tell. A clean store prints no such note."""
    store, batch, _ = stored
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 0 and "edits log" not in out
    _sql(store, "DELETE FROM runs WHERE batch_id = ?", (batch.batch_id,))
    _sql(store, "DELETE FROM chains WHERE batch_id = ?", (batch.batch_id,))
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 0 and f"batch {batch.batch_id}: 0 records" in out
    assert "note: the store's edits log holds 2 UPDATE or DELETE" in out
    assert "empty" in _invoke("batches", "--store", str(store))[1]


def test_a_lease_that_cannot_be_released_does_not_turn_a_finished_batch_into_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store filled up or locked just as the batch ended: every try is stored, so `run`
    reports the batch (exit 0), and the lease left behind is stale once the process exits."""

    def full(self: RunStore, batch_id: str) -> None:
        raise StoreError(f"cannot write to the run store {self.path}: database or disk is full")

    monkeypatch.setattr(RunStore, "release_lease", full)
    store = tmp_path / "runs.db"
    code, _, err = _invoke("run", str(BANK), "--system", str(BANK_SYSTEM), "--store", str(store))
    assert code == 0, err
    monkeypatch.undo()
    assert _invoke("verify", "--store", str(store))[0] == 0


def test_task_ids_holding_a_nul_verify_and_an_edit_after_the_nul_is_named(tmp_path: Path) -> None:
    """SQLite's ``json_extract`` cuts text at a NUL, so an honest imported id ``nul\\x00``
    read as altered, and an edit after the NUL would have gone unseen."""
    rows = tmp_path / "rows.jsonl"
    ids = ["nul\x00", "a\x00b\x00\n\u2028", "plain"]
    rows.write_text(
        "".join(json.dumps({"task_id": t, "attempt": 0, "success": True}) + "\n" for t in ids)
    )
    store = tmp_path / "runs.db"
    code, out, _ = _invoke("import-results", str(rows), "--name", "n", "--store", str(store))
    assert code == 0, out
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 0, out
    _sql(
        store,
        "UPDATE runs SET task_id = CAST(? AS TEXT) WHERE task_id = ?",
        ("a\x00c\x00\n\u2028", ids[1]),
    )
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 1 and out.count("record_altered") == 1, out
