"""Thirty-eighth round, the result store and row imports: loose values, and a store changed by
hand.

- Row imports (CSV / JSON Lines) took a blank task id (``" "``), or one with a space at either
  end (``" t1"``, ``"t1\\xa0"``), as a task of its own: ``" t1"`` beside ``"t1"`` was a second
  task every report printed alike. Now refused, naming file, line and field. Ids holding a NUL,
  a line break or an escape are still kept as written and shown escaped (round 7, integrity).
- An attempt of ``-1`` was read as a label (the label rule shifted it into an attempt unseen),
  and a CSV ``"1.5"`` became a text label, though a JSON ``1.5`` is
  refused. Python's number readers took ``"1_0"`` as 10 and Arabic-Indic digits as numbers
  in every number cell. Now: refused, or (``"1_0"`` as an attempt) a text label.
- A store whose table of records was dropped by hand had the table made again, empty, on the
  next open: the batch's runs vanished and reading commands read the rest as whole. A column
  added or dropped by hand failed later with SQLite's words. Now the store is refused, as it
  is, naming the table or column, for a writer and a read-only reader alike; a read-only store
  that is whole is still read after such a refusal (the check closes nothing it shares).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from groundstate.store import RunStore, StoreError, _columns, _current_schema
from tests.test_imports_formats import Store, cli
from tests.test_store_adversarial import _read_only


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _csv(tmp_path: Path, body: str, name: str = "rows.csv") -> Path:
    path = tmp_path / name
    path.write_text("task_id,attempt,success\n" + body)
    return path


def _jsonl(tmp_path: Path, *rows: dict[str, object]) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


# --- task ids -----------------------------------------------------------------------------------


@pytest.mark.parametrize("task_id", [" ", "\u3000", "\u00a0\u2003"])
def test_a_blank_task_id_is_refused(store: Store, tmp_path: Path, task_id: str) -> None:
    path = _jsonl(tmp_path, {"task_id": "t1", "attempt": 0, "success": True},
                  {"task_id": task_id, "attempt": 0, "success": True})  # fmt: skip
    err = store.refused(path)
    assert f"{path}:2: task_id:" in err and "blank" in err


def test_a_space_padded_task_id_is_kept_as_written(store: Store, tmp_path: Path) -> None:
    """Our own exports carry ids as stored, padded ones too (``test_exports_roundtrip``,
    ``test_reports_adversarial``): an import gives them back exactly."""
    ids = [" t1", "t1 ", "t1\u00a0"]
    path = _jsonl(tmp_path, *({"task_id": t, "attempt": 0, "success": True} for t in ids))
    batch = store.imported(path)
    assert {key[0] for key in store.runs(batch)} == set(ids)


def test_ids_holding_characters_that_do_not_show_are_still_kept_as_written(
    store: Store, tmp_path: Path
) -> None:
    ids = ["t\x1b[31m", "nul\x00", "a\n\u2028", "\ttab"]
    path = _jsonl(tmp_path, *({"task_id": t, "attempt": 0, "success": True} for t in ids))
    batch = store.imported(path)
    assert {key[0] for key in store.runs(batch)} == set(ids)


def test_a_blank_task_id_from_a_foreign_harness_is_refused() -> None:
    from groundstate.errors import SpecError
    from groundstate.importers.rows import task_key

    with pytest.raises(SpecError, match="blank"):
        task_key("f.json", "task_id", "  ")
    assert task_key("f.json", "task_id", 7) == "7"


# --- attempt numbers ----------------------------------------------------------------------------


@pytest.mark.parametrize("cell", ["-1", "-3.0", " -2 "])
def test_a_negative_attempt_is_refused(store: Store, tmp_path: Path, cell: str) -> None:
    err = store.refused(_csv(tmp_path, f"t1,0,true\nt1,{cell},false\n"))
    assert "rows.csv:3: attempt:" in err and "negative" in err


def test_a_negative_attempt_in_json_is_refused(store: Store, tmp_path: Path) -> None:
    err = store.refused(_jsonl(tmp_path, {"task_id": "t1", "attempt": -1, "success": True}))
    assert "rows.jsonl:1: attempt:" in err and "negative" in err


@pytest.mark.parametrize("cell", ["1.5", "-2.5", "1e-3"])
def test_an_attempt_that_is_a_number_but_not_whole_is_refused(
    store: Store, tmp_path: Path, cell: str
) -> None:
    err = store.refused(_csv(tmp_path, f"t1,0,true\nt1,{cell},false\n"))
    assert "rows.csv:3: attempt:" in err and "whole attempt number" in err


def test_an_attempt_written_as_a_float_is_the_same_attempt(store: Store, tmp_path: Path) -> None:
    """``1.0`` is attempt 1 (a writer keeping integers as floats): twice is a duplicate."""
    err = store.refused(_csv(tmp_path, "t1,1,true\nt1,1.0,false\n"))
    assert "rows.csv:3: attempt:" in err and "appears twice" in err


def test_an_attempt_with_an_underscore_is_a_text_label_not_a_number(
    store: Store, tmp_path: Path
) -> None:
    """Python's ``int("1_0")`` is 10; no spreadsheet reads it so: ``1_0`` is no attempt 10."""
    batch = store.imported(_csv(tmp_path, "t1,1_0,true\nt1,10,false\n"))
    assert len(store.runs(batch)) == 2


@pytest.mark.parametrize("cell", ["1_0", "\u0661", "\uff11"])
def test_a_number_cell_python_alone_reads_is_refused(
    store: Store, tmp_path: Path, cell: str
) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(f"task_id,attempt,success,latency\nt1,0,true,{cell}\n")
    err = store.refused(path)
    assert "rows.csv:2: latency:" in err and "must be a number" in err


# --- a store changed by hand ----------------------------------------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _altered(store: Store, *sql: str) -> str:
    with sqlite3.connect(store.path) as db:
        for statement in sql:
            db.execute(statement)
    db.close()
    return _digest(store.path)


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        (["DROP TABLE runs"], "has no table 'runs'"),
        (["DROP TABLE validations"], "has no table 'validations'"),
        (["DROP TABLE labels"], "has no table 'labels'"),
        (["DROP TABLE chains"], "has no table 'chains'"),
        (["ALTER TABLE runs ADD COLUMN note TEXT"], "has a column runs.note"),
        (["ALTER TABLE runs DROP COLUMN chain_hash"], "has no column runs.chain_hash"),
    ],
)
def test_a_store_changed_by_hand_is_refused_and_left_as_it_is(
    store: Store, sql: list[str], named: str
) -> None:
    before = _altered(store, *sql)
    for create in (True, False):
        with pytest.raises(StoreError, match="changed outside groundstate") as caught:
            RunStore(store.path, create=create)
        assert named in str(caught.value) and str(store.path) in str(caught.value)
    for args in (["report"], ["verify"], ["batches"]):
        code, _, err = cli(*args, "--store", str(store.path))
        assert code == 2 and err.startswith("error: ") and named in err and "Traceback" not in err
    code, _, err = cli("import-results", str(_csv(store.path.parent, "t9,0,true\n")),
                       "--name", "x", "--store", str(store.path))  # fmt: skip
    assert code == 2 and named in err
    assert _digest(store.path) == before  # no table made again, nothing written
    with sqlite3.connect(store.path) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    db.close()
    assert "DROP TABLE" not in sql[0] or sql[0].split()[-1] not in tables


def test_a_store_whose_seals_were_dropped_is_refused(store: Store) -> None:
    """A seal is a shortcut of ``verify``, but a store missing a table it had was changed
    outside groundstate: refused since the fiftieth round, not made again (it was)."""
    before = _altered(store, "DROP TABLE seals")
    with pytest.raises(StoreError, match="has no table 'seals', which it had"):
        RunStore(store.path)
    assert _digest(store.path) == before


def test_a_refusal_closes_nothing_a_later_open_shares(store: Store, tmp_path: Path) -> None:
    """Round 37's check closed the in-memory schema every read-only open compares with."""
    _altered(store, "DROP TABLE runs")
    with pytest.raises(StoreError):
        RunStore(store.path)
    assert "runs.run_id" in _columns(_current_schema())
    (tmp_path / "other").mkdir()
    whole = Store(tmp_path / "other")
    with RunStore(whole.path, create=False) as runs:
        assert runs.verify(whole.earlier).ok


def test_a_read_only_store_changed_by_hand_is_refused_and_a_whole_one_read(
    tmp_path: Path,
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    broken, whole = Store(tmp_path / "a"), Store(tmp_path / "b")
    _altered(broken, "DROP TABLE runs")
    for target in (broken, whole):
        with sqlite3.connect(target.path) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
    prefix = _read_only(tmp_path)
    if prefix is None:
        pytest.skip("no way to make a read-only folder on this machine")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    try:
        for target, code in ((broken, 2), (whole, 0)):
            command = [*prefix, sys.executable, "-m", "groundstate", "verify", "--store",
                       str(target.path)]  # fmt: skip
            done = subprocess.run(command, capture_output=True, text=True, env=env)
            assert done.returncode == code, done.stderr
            assert "Traceback" not in done.stderr and "closed database" not in done.stderr
            if code == 2:
                assert "has no table 'runs'" in done.stderr
    finally:
        for folder in (tmp_path, tmp_path / "a", tmp_path / "b"):
            folder.chmod(0o755)
