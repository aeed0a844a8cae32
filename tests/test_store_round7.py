"""Store audit, seventh round (issue 13): tampering through SQLite that keeps every hash and
chain link right, and faults while storing.

Earlier rounds covered edited records, rehashed records, deleted rows and artifacts, damaged
files and read-only stores (test_store_integrity.py, test_store_adversarial.py). Here: the
unhashed indexed columns, rows moved between batches, duplicated or invented tries appended to
a chain by a forger, artifact files swapped, and what cannot be caught without an outside
anchor (the chain head ``verify`` prints)."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundstate.records import AgentRun
from groundstate.store import BatchInfo

from .test_store_integrity import _batch, _in_order, _invoke, _sql


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, BatchInfo]:
    """One stored batch, copied by each test that edits it (running it costs seconds)."""
    store = tmp_path_factory.mktemp("made") / "runs.db"
    return store, _batch(store, attempts=2)


@pytest.fixture
def stored(made: tuple[Path, BatchInfo], tmp_path: Path) -> tuple[Path, BatchInfo, list[AgentRun]]:
    import shutil

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
    assert out.count("record_altered") == 1  # the others are untouched


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
