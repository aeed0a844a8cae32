"""What the store writes is unchanged by its faster paths: for the retail oracle replays and the
bank suite, every stored record, hash, chain link and artifact file is byte for byte what the
straightforward reference below (the store's format written out longhand) gives; and an
artifact is never left partial, whatever was at its name before."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import multiprocessing
import os
import pickle
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from groundstate.agents.scripted import ScriptedAgent
from groundstate.episode import AttemptInfo, AttemptOutput, run_attempt
from groundstate.executors._job import prepared
from groundstate.records import AgentRun
from groundstate.spec.suite import load_suite
from groundstate.store import (
    BatchInfo,
    PreparedRun,
    RunStore,
    chain_genesis,
    prepare_run,
    record_hash,
)
from groundstate.testing import scripted_system

from .conftest import BANK, EXAMPLES


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.cache  # the tests read these, never change them
def _oracle_outputs(root: Path, batch_id: str) -> list[AttemptOutput]:
    suite, system = load_suite(root), scripted_system()
    loop = asyncio.new_event_loop()
    try:
        return [
            loop.run_until_complete(
                run_attempt(
                    suite.tasks[task_id],
                    suite,
                    system,
                    ScriptedAgent(solutions["oracle"].steps),
                    AttemptInfo(
                        run_id=f"{batch_id}-{task_id}", batch_id=batch_id, attempt=1, seed=0
                    ),
                )
            )
            for task_id, solutions in sorted(suite.solutions.items())
        ]
    finally:
        loop.close()


def _batch(store: RunStore, batch_id: str) -> str:
    """Store an empty batch; return its genesis (where its chain starts)."""
    batch = BatchInfo(
        batch_id=batch_id, created_at=datetime(2026, 1, 1, tzinfo=UTC), suite="s",
        suite_path="s", suite_hash="h", system_spec_hash="h", system_spec={}, attempts=1,
        seed=0, task_revisions={}, task_weights={}, task_slices={},
    )  # fmt: skip
    store.add_batch(batch)
    return chain_genesis(batch_id, record_hash(batch.model_dump_json()))


def _reference_rows(
    outputs: list[AttemptOutput], genesis: str
) -> list[tuple[str, str, str, str, str]]:
    """(run_id, record text, record hash, artifact hashes, chain hash) per try, longhand."""
    rows, head = [], genesis
    for output in outputs:
        digests = {name: _sha(text.encode("utf-8")) for name, text in output.artifacts.items()}
        locations = {name: f"sha256:{digest}" for name, digest in digests.items()}
        text = output.run.model_copy(update={"artifact_locations": locations}).model_dump_json()
        canonical = json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
        content = _sha(canonical.encode("ascii"))
        hashes = json.dumps(dict(sorted(digests.items())))
        head = _sha(json.dumps([head, output.run.run_id, content, hashes]).encode("ascii"))
        rows.append((output.run.run_id, text, content, hashes, head))
    return rows


@pytest.mark.parametrize("suite", [EXAMPLES / "retail", BANK], ids=["retail", "bank"])
def test_stored_records_and_artifacts_match_the_reference_byte_for_byte(
    suite: Path, tmp_path: Path
) -> None:
    outputs = _oracle_outputs(suite, "b")
    assert outputs and all(o.run.success for o in outputs), [
        (o.run.task_id, o.run.terminal_reason, o.run.infrastructure_status)
        for o in outputs
        if not o.run.success
    ]  # the replays really ran
    path = tmp_path / "runs.db"
    with RunStore(path) as store:
        genesis = _batch(store, "b")
        first = store.add_run(outputs[0].run, outputs[0].artifacts)  # alone, then as a group
        stored = [first, *store.add_runs([(o.run, o.artifacts) for o in outputs[1:]])]
        assert store.verify("b").ok
    want = _reference_rows(outputs, genesis)
    assert _stored_rows(path) == (want, (len(want), want[-1][4]))
    assert [r.model_dump_json() for r in stored] == [row[1] for row in want]
    for output in outputs:
        for text in output.artifacts.values():
            data = text.encode("utf-8")
            file = tmp_path / "artifacts" / _sha(data)[:2] / _sha(data)[2:]
            assert file.read_bytes() == data
    assert not list((tmp_path / "artifacts").rglob(".tmp-*"))  # nothing left behind


def _stored_rows(path: Path) -> tuple[list[tuple[str, ...]], tuple[int, str]]:
    """Batch ``b``'s rows (as :func:`_reference_rows` gives them) and its chain's length and
    head, read straight from the database."""
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT run_id, record, record_hash, artifact_hashes, chain_hash FROM runs ORDER BY seq"
        ).fetchall()
        chain = db.execute("SELECT length, head FROM chains WHERE batch_id = 'b'").fetchone()
    return rows, chain


def _shipped(row: PreparedRun) -> PreparedRun:
    """*row* as a pool worker or a Ray task sends it back: pickled, then loaded."""
    return pickle.loads(pickle.dumps(row))


@pytest.mark.parametrize("suite", [EXAMPLES / "retail", BANK], ids=["retail", "bank"])
def test_tries_prepared_where_they_ran_are_stored_byte_for_byte_as_the_reference(
    suite: Path, tmp_path: Path
) -> None:
    # The executors serialise and hash each try where it ran and send back only its stored
    # form; the writer stores that as it is. Same rows, chain and files as the reference.
    outputs = _oracle_outputs(suite, "b")
    rows = [_shipped(prepare_run(o.run, o.artifacts)) for o in outputs]
    path = tmp_path / "runs.db"
    with RunStore(path) as store:
        genesis = _batch(store, "b")
        store.add_prepared(rows[:1])  # alone, then as a group
        store.add_prepared(rows[1:])
        assert store.verify("b").ok
        assert [row.run for row in rows] == store.runs("b")  # the records as read back
    want = _reference_rows(outputs, genesis)
    assert _stored_rows(path) == (want, (len(want), want[-1][4]))
    for output, row in zip(outputs, rows, strict=True):
        assert prepared(row).artifacts == output.artifacts


def test_a_shipped_try_carries_its_stored_form_only(tmp_path: Path) -> None:
    # Pickled, a prepared try is its text, hashes and files: loading parses the record from
    # the text (what reading the row back gives), not a pickle of the in-memory model.
    output = _oracle_outputs(BANK, "b")[0]
    row = prepare_run(output.run, output.artifacts)
    data = pickle.dumps(row)
    assert b"AgentRun" not in data and b"pydantic" not in data
    again = pickle.loads(data)
    assert (again.text, again.content, again.hashes, again.files) == (
        row.text, row.content, row.hashes, row.files
    )  # fmt: skip
    assert again.run == AgentRun.model_validate_json(row.text)


def test_artifacts_with_the_same_text_keep_every_name(tmp_path: Path) -> None:
    # Two names, one digest: both are recorded, the file is written once, and the worker's
    # shipped form gives both names back.
    output = _oracle_outputs(BANK, "b")[0]
    artifacts = {**output.artifacts, "stdout.txt": "same\n", "stderr.txt": "same\n", "e": ""}
    row = _shipped(prepare_run(output.run, artifacts))
    assert prepared(row).artifacts == artifacts
    with RunStore(tmp_path / "runs.db") as store:
        _batch(store, "b")
        store.add_prepared([row])
        run = store.run(output.run.run_id)
        assert set(run.artifact_locations) == set(artifacts)
        assert run.artifact_locations["stdout.txt"] == run.artifact_locations["stderr.txt"]
        assert {n: store.read_artifact(loc) for n, loc in run.artifact_locations.items()} == (
            artifacts
        )
        assert store.verify("b").ok


def _file(store: RunStore, location: str) -> Path:
    digest = location.removeprefix("sha256:")
    return store.artifacts / digest[:2] / digest[2:]


@pytest.mark.parametrize(
    "leftover",
    [b"", b"partial", "some text \u00e9 that was cut sho".encode()],
    ids=["empty", "short", "one-byte-short"],
)
def test_a_partial_artifact_left_by_a_killed_write_is_replaced_whole(
    tmp_path: Path, leftover: bytes
) -> None:
    text = "some text \u00e9 that was cut short"
    with RunStore(tmp_path / "runs.db") as store:
        target = _file(store, f"sha256:{_sha(text.encode())}")
        target.parent.mkdir(parents=True)
        target.write_bytes(leftover)  # a process killed mid-write left this
        location = store.put_artifact(text)
        assert target.read_bytes() == text.encode()
        assert store.read_artifact(location) == text
        assert not list(target.parent.glob(".tmp-*"))


def test_an_artifact_already_stored_is_not_written_again(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        location = store.put_artifact("trace\n")
        target = _file(store, location)
        before = os.stat(target)
        assert store.put_artifact("trace\n") == location
        after = os.stat(target)
        assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_an_edited_artifact_of_the_same_size_is_still_named_by_verify(tmp_path: Path) -> None:
    outputs = _oracle_outputs(BANK, "b")
    with RunStore(tmp_path / "runs.db") as store:
        _batch(store, "b")
        run = store.add_run(outputs[0].run, outputs[0].artifacts)
        target = _file(store, run.artifact_locations["trace.jsonl"])
        data = target.read_bytes()
        target.write_bytes(data.replace(b"true", b"ture", 1))  # same length, other content
        assert store.put_artifact(outputs[0].artifacts["trace.jsonl"])  # not a repair
        problems = store.verify("b").problems
        assert [p.kind for p in problems] == ["artifact_altered"]


@pytest.mark.parametrize("text", ["a\r\nb", "progress 10%\rprogress 100%\n", "\r"])
def test_artifacts_with_carriage_returns_read_back_unchanged(tmp_path: Path, text: str) -> None:
    # Captured output can hold "\r"; a text-mode read turned it into "\n" and the artifact
    # then failed its own hash check.
    with RunStore(tmp_path / "runs.db") as store:
        assert store.read_artifact(store.put_artifact(text)) == text


def test_a_record_round_trips_to_the_same_text(tmp_path: Path) -> None:
    # The reference above rebuilds records from AttemptOutput; stored text parsed back gives
    # the same text again, so resume and export read what was written.
    outputs = _oracle_outputs(EXAMPLES / "retail", "b")[:3]
    with RunStore(tmp_path / "runs.db") as store:
        stored = store.add_runs([(o.run, o.artifacts) for o in outputs])
        again = [store.run(r.run_id) for r in stored]
    assert [AgentRun.model_dump_json(r) for r in again] == [r.model_dump_json() for r in stored]


def test_artifact_files_are_private_to_their_owner_as_before(tmp_path: Path) -> None:
    # mkstemp made every artifact 0600 before it was renamed into place; direct writes too.
    with RunStore(tmp_path / "runs.db") as store:
        new = _file(store, store.put_artifact("new"))
        replaced = _file(store, "sha256:" + _sha(b"again"))
        replaced.parent.mkdir(parents=True, exist_ok=True)
        replaced.write_bytes(b"ag")
        store.put_artifact("again")
        assert [f.stat().st_mode & 0o777 for f in (new, replaced)] == [0o600, 0o600]


def test_a_batch_whose_captured_output_holds_carriage_returns_verifies(tmp_path: Path) -> None:
    # Before, verify named such an artifact altered: a false report of tampering.
    output = _oracle_outputs(BANK, "b")[0]
    with RunStore(tmp_path / "runs.db") as store:
        _batch(store, "b")
        store.add_run(output.run, {**output.artifacts, "stdout.txt": "10%\r100%\r\n"})
        check = store.verify("b")
    assert check.ok and check.problems == []


def _put_all(root: str, texts: list[str]) -> None:
    with RunStore(Path(root) / "runs.db") as store:
        for text in texts:  # whole once put_artifact returns: what a commit relies on
            assert store.read_artifact(store.put_artifact(text)) == text


def test_two_processes_storing_the_same_artifacts_leave_every_file_whole(tmp_path: Path) -> None:
    # Each text is stored by both processes at about the same moment: whichever finds the
    # other's file half written replaces it whole before it returns; none is left partial.
    texts = [f"{i}:" + "x" * (20_000 + i) for i in range(60)]
    RunStore(tmp_path / "runs.db").close()
    context = multiprocessing.get_context("fork")
    workers = [
        context.Process(target=_put_all, args=(str(tmp_path), order))
        for order in (texts, texts[::-1])
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
        assert worker.exitcode == 0
    for text in texts:
        data = text.encode()
        assert (tmp_path / "artifacts" / _sha(data)[:2] / _sha(data)[2:]).read_bytes() == data
    assert not list((tmp_path / "artifacts").rglob(".tmp-*"))
