"""Run store, eighteenth audit: ``batches`` checks every batch it lists as the other reading
commands do (``seal.verified_outcomes``) and names an altered one."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from .test_store_round16 import _copy, _invoke, made  # noqa: F401


def test_batches_names_an_altered_batch_and_exits_1(
    made: tuple[Path, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    """Found here: ``batches`` listed a batch whose record writes a key twice with exit 0 and
    no word, while ``runs``, ``report`` and ``verify`` named it."""
    code, out, err = _invoke("batches", "--json", "--store", str(made[0]))
    assert code == 0 and err == "", err
    store = _copy(made, tmp_path)
    db = sqlite3.connect(store)
    with db:
        db.execute("""UPDATE batches SET record = '{"batch_id": 1, ' || substr(record, 2)""")
    db.close()
    for extra in ((), ("--json",)):
        code, out, err = _invoke("batches", *extra, "--store", str(store))
        assert code == 1 and "Traceback" not in out + err, err
        assert "batch record unreadable" in err and made[1] in err, err
    assert [b["batch_id"] for b in json.loads(out)] == [made[1]]


def test_a_store_locked_by_another_process_is_still_read(
    made: tuple[Path, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    """Found here: with another process holding a write lock, ``report``, ``runs``,
    ``batches`` and ``compare`` of an unsealed batch failed "cannot write to the run store"
    after the full check passed: writing the seal (a cache) ended the reading command."""
    store = _copy(made, tmp_path)
    db = sqlite3.connect(store)
    with db:
        db.execute("DELETE FROM seals")
    db.close()
    import groundstate.store as store_module

    holder = sqlite3.connect(store, isolation_level=None)
    old = store_module.BUSY_TIMEOUT
    try:
        store_module.BUSY_TIMEOUT = 0.05
        holder.execute("BEGIN EXCLUSIVE")
        code, out, err = _invoke("report", made[1], "--store", str(store))
    finally:
        store_module.BUSY_TIMEOUT = old
        holder.rollback()
        holder.close()
    assert code == 0 and "cannot write" not in out + err, out + err
