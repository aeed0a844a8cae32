"""Store opening under races: several processes making the same new store at once."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from groundstate.store import RunStore


def _open_and_close(path: str) -> str | None:
    try:
        RunStore(Path(path)).close()
    except Exception as exc:  # reported back to the test, which names it
        return repr(exc)
    return None


def test_processes_making_one_new_store_together_all_open_it(tmp_path: Path) -> None:
    """Switching a new file to write-ahead logging needs it alone, and SQLite answers
    "database is locked" at once (not after its busy timeout) to the loser of that race:
    every opener must wait its turn instead (two `run`s started on a fresh --store)."""
    # Spawned, not forked: a child forked from this process, where other tests left threads,
    # can inherit a lock one of them held and wait on it for ever (the whole suite's run).
    context = multiprocessing.get_context("spawn")
    failures = []
    with context.Pool(4) as pool:
        for n in range(40):
            store = tmp_path / f"store{n}" / "runs.db"
            opened = pool.map_async(_open_and_close, [str(store)] * 4).get(timeout=120)
            failures += [f for f in opened if f]
    assert failures == []
    with RunStore(tmp_path / "store0" / "runs.db") as runs:
        assert runs._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
