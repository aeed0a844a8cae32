"""A new store is never seen half made: made in one transaction, and checked in one snapshot
(CI of the fiftieth round: four processes opening one new store, one refused it as "has no table
'batches', which it had (dropped?)")."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

import groundstate.store as store_module
from groundstate.store import RunStore


def _tables(path: Path) -> set[str]:
    db = sqlite3.connect(path)
    try:
        return {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    finally:
        db.close()


def test_a_new_store_is_made_in_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the store is being stamped, another connection still sees no table: its tables,
    indexes, triggers and stamp commit together."""
    path = tmp_path / "runs.db"
    seen: list[set[str]] = []
    stamp = store_module._stamp

    def watched(db: sqlite3.Connection) -> None:
        if not seen:
            seen.append(_tables(path))
        stamp(db)

    monkeypatch.setattr(store_module, "_stamp", watched)
    RunStore(path).close()
    assert seen == [set()]
    made = _tables(path)
    assert {"batches", "runs", "seals", "started_tries", "runs_by_batch"} <= made
    with RunStore(path) as again:  # and it opens as a whole store, stamped
        assert store_module._stamped(again._db) == len(store_module._GENERATIONS)


def test_a_store_made_while_another_process_checks_it_is_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The opener reads the store's tables, and another opener makes the store before the first
    reads its stamp: read in one snapshot, the first sees a new store (and then opens the made
    one), never a stamped store without tables."""
    path = tmp_path / "runs.db"
    columns = store_module._columns
    other: list[BaseException | None] = []

    def make_it() -> None:
        try:
            RunStore(path).close()
            other.append(None)
        except BaseException as exc:  # reported by the test
            other.append(exc)

    def slow_columns(db: sqlite3.Connection) -> set[str]:
        found = columns(db)
        if threading.current_thread() is threading.main_thread() and not hasattr(
            slow_columns, "started"
        ):
            slow_columns.started = threading.Thread(target=make_it)  # type: ignore[attr-defined]
            slow_columns.started.start()  # type: ignore[attr-defined]
            time.sleep(1.0)  # the other opener makes and stamps the store now, if it can
        return found

    monkeypatch.setattr(store_module, "_columns", slow_columns)
    # As another opener leaves the file just before making its tables: in write-ahead-log
    # mode, with no table (an empty file would have that opener wait for the first).
    sqlite3.connect(path).execute("PRAGMA journal_mode=WAL").connection.close()
    with RunStore(path) as runs:
        assert store_module._stamped(runs._db) == len(store_module._GENERATIONS)
    slow_columns.started.join(60)  # type: ignore[attr-defined]
    assert other == [None]
    assert "batches" in _tables(path)
