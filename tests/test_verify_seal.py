"""The verification seal: a second report skips the full check only while nothing changed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from groundstate.analysis import OutcomeTable
from groundstate.cli import main
from groundstate.store import RunStore


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def _sql(store: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with sqlite3.connect(store) as db:
        rows = db.execute(sql, params).fetchall()
    db.close()
    return rows


def import_batch(tmp_path: Path, tasks: int = 6, attempts: int = 4) -> tuple[Path, str]:
    """A small imported batch (no artifacts): the shape of the 1M-attempt bench."""
    lines = ["task_id,attempt,success,terminal_reason,cost,latency,partial_score"]
    for t in range(tasks):
        for a in range(1, attempts + 1):
            reason = ["success", "agent_failure", "environment_failure"][(t + a) % 3]
            lines.append(f"t{t},{a},{int(reason == 'success')},{reason},{t / 10},{a}.5,0.{a}")
    (tmp_path / "r.csv").write_text("\n".join(lines) + "\n")
    store = tmp_path / "runs.db"
    code, _, err = _invoke("import-results", str(tmp_path / "r.csv"), "--name", "x",
                           "--store", str(store))  # fmt: skip
    assert code == 0, err
    with RunStore(store) as opened:
        return store, opened.batch().batch_id


def _report(store: Path) -> tuple[int, dict[str, Any], str]:
    code, out, err = _invoke("report", "--json", "--store", str(store))
    return code, json.loads(out), err


@pytest.fixture(params=["import", "full_check"])
def sealed(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str, dict[str, Any]]:
    """A sealed batch: by its import (the first report already takes the seal), or, with the
    import's seal deleted, by the first report's full check."""
    store, batch_id = import_batch(tmp_path)
    if request.param == "full_check":
        _sql(store, "DELETE FROM seals")
    code, first, _ = _report(store)
    expected = ("seal", "import") if request.param == "import" else ("full", None)
    assert code == 0 and (first["integrity"]["check"], first["integrity"]["sealed_by"]) == expected
    return store, batch_id, first


def _without_integrity(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "integrity"}


def test_the_second_report_reads_the_seal_and_gives_the_same_numbers(
    sealed: tuple[Path, str, dict[str, Any]],
) -> None:
    store, _, first = sealed
    code, second, err = _report(store)
    assert code == 0 and err == ""
    assert second["integrity"]["check"] == "seal" and second["integrity"]["verified"] is True
    assert second["integrity"]["sealed_at"] is not None
    assert second["integrity"]["sealed_by"] in ("import", "full_check")
    assert _without_integrity(second) == _without_integrity(first)
    # verify never takes the seal's word for it
    code, out, _ = _invoke("verify", "--json", "--store", str(store))
    assert code == 0 and json.loads(out)[0]["check"] == "full"


def _flip(store: Path, batch_id: str) -> tuple[str, str]:
    run_id, text = _sql(
        store, "SELECT run_id, record FROM runs WHERE batch_id = ? AND success = 1 LIMIT 1",
        (batch_id,),
    )[0]  # fmt: skip
    flipped = text.replace('"success":true', '"success":false')
    assert flipped != text
    return run_id, flipped


def _update(store: Path, batch_id: str) -> tuple[str, str]:
    run_id, flipped = _flip(store, batch_id)
    _sql(store, "UPDATE runs SET record = ? WHERE run_id = ?", (flipped, run_id))
    return run_id, "record_altered"


def _replace(store: Path, batch_id: str) -> tuple[str, str]:
    """INSERT OR REPLACE deletes the old row without firing a delete trigger."""
    run_id, flipped = _flip(store, batch_id)
    columns = "batch_id, task_id, attempt, retry, terminal_reason, success, created_at, " \
        "seq, record_hash, artifact_hashes, chain_hash"  # fmt: skip
    _sql(
        store,
        f"INSERT OR REPLACE INTO runs (run_id, record, {columns}) SELECT run_id, ?, {columns} "
        "FROM runs WHERE run_id = ?",
        (flipped, run_id),
    )
    return run_id, "record_altered"


def _delete(store: Path, batch_id: str) -> tuple[str, str]:
    at = "SELECT run_id FROM runs WHERE seq = ? AND batch_id = ?"
    (run_id,) = _sql(store, at, (3, batch_id))[0]
    _sql(store, "DELETE FROM runs WHERE run_id = ?", (run_id,))
    (after,) = _sql(store, at, (4, batch_id))[0]
    return after, "record_missing"  # named at the next row: "deleted before this one"


def _trigger_dropped(store: Path, batch_id: str) -> tuple[str, str]:
    """The trigger dropped, the row edited, the trigger made again: the schema cookie moved."""
    (sql,) = _sql(store, "SELECT sql FROM sqlite_master WHERE name = 'runs_updated'")[0]
    _sql(store, "DROP TRIGGER runs_updated")
    run_id, kind = _update(store, batch_id)
    _sql(store, sql)
    assert _sql(store, "SELECT COUNT(*) FROM edits")[0][0] == 0  # the log saw nothing
    return run_id, kind


def _batch_edited(store: Path, batch_id: str) -> tuple[str, str]:
    _sql(store, "UPDATE batches SET record = replace(record, '\"attempts\":4', '\"attempts\":3')")
    return batch_id, "batch_altered"


@pytest.mark.parametrize("edit", [_update, _replace, _delete, _trigger_dropped, _batch_edited])
def test_a_hand_edit_after_sealing_is_found_by_the_next_report(
    sealed: tuple[Path, str, dict[str, Any]], edit: Any
) -> None:
    store, batch_id, _ = sealed
    subject, kind = edit(store, batch_id)
    code, data, err = _report(store)
    assert code == 1 and data["integrity"]["check"] == "full"
    assert data["integrity"]["verified"] is False
    assert subject in err and "warning:" in err
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 1 and f"{kind}: " in out
    code, data, _ = _report(store)  # a batch with problems is never sealed
    assert code == 1 and data["integrity"]["check"] == "full"


def test_a_harmless_edit_costs_one_full_check_then_the_batch_is_sealed_again(
    sealed: tuple[Path, str, dict[str, Any]],
) -> None:
    store, _, first = sealed
    _sql(store, "UPDATE runs SET record = record")  # logged, though nothing changed
    code, data, _ = _report(store)
    assert code == 0 and data["integrity"]["check"] == "full"
    assert _without_integrity(data) == _without_integrity(first)
    code, data, _ = _report(store)
    assert code == 0 and data["integrity"]["check"] == "seal"


def test_a_damaged_or_missing_seal_means_a_full_check_not_an_alarm(
    sealed: tuple[Path, str, dict[str, Any]],
) -> None:
    """Not an alarm (exit 0, verified), but a damaged seal is named (nineteenth round: it was
    rebuilt without a word); a missing one is not (a store that never sealed, say)."""
    store, batch_id, first = sealed
    _sql(store, "UPDATE seals SET outcomes = substr(outcomes, 1, 40)")
    code, data, err = _report(store)
    assert (code, data["integrity"]["check"], data["integrity"]["verified"]) == (0, "full", True)
    assert err.startswith(f"warning: batch {batch_id}: its verification seal is damaged"), err
    _sql(store, "UPDATE seals SET record = '{}'")
    code, data, err = _report(store)
    assert (code, data["integrity"]["check"]) == (0, "full") and "seal is damaged" in err
    _sql(store, "DELETE FROM seals")
    code, data, err = _report(store)
    assert (code, data["integrity"]["check"], err) == (0, "full", "")
    assert _without_integrity(data) == _without_integrity(first)


def test_new_runs_in_a_sealed_batch_break_the_seal(
    sealed: tuple[Path, str, dict[str, Any]],
) -> None:
    """A row added without touching the chain head (the count moves) and one added with it."""
    store, batch_id, _ = sealed
    _sql(
        store,
        "INSERT INTO runs SELECT 'extra', batch_id, task_id, attempt, 9, terminal_reason, "
        "success, created_at, record, 99, record_hash, artifact_hashes, chain_hash FROM runs "
        "WHERE batch_id = ? LIMIT 1",
        (batch_id,),
    )
    code, data, err = _report(store)
    assert code == 1 and data["integrity"]["check"] == "full" and "run extra" in err


def test_the_seal_does_not_see_bytes_changed_outside_sqlite(
    sealed: tuple[Path, str, dict[str, Any]],
) -> None:
    """The documented limit: a change to the file's bytes fires no trigger. ``report`` keeps
    the sealed numbers (those verified) and says it relied on the seal; ``verify`` finds it."""
    store, _, first = sealed
    raw = store.read_bytes()
    assert raw.count(b'"latency":2.5') >= 1 and not store.with_name("runs.db-wal").exists()
    store.write_bytes(raw.replace(b'"latency":2.5', b'"latency":7.5', 1))
    code, data, _ = _report(store)
    assert code == 0 and data["integrity"]["check"] == "seal"
    assert _without_integrity(data) == _without_integrity(first)
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 1 and "record_altered" in out


def test_outcome_columns_survive_bytes_and_chunks_in_any_order() -> None:
    rows = [
        ["b", 2, 0, "success", True, 0.5, 1.0, None],
        ["a", 1, 1, "agent_failure", False, 0.25, 2.0, 0.5],
        ["c", 1, 0, "environment_failure/reset", False, 0.0, 3.0, None],
        ["a", 2, 0, "success", True, 1.5, 4.0, 1.0],
    ]
    whole = OutcomeTable.from_rows(rows)
    chunked = OutcomeTable.from_chunks([rows[:1], [], rows[1:3], rows[3:]])
    again = OutcomeTable.from_bytes(whole.to_bytes())
    for table in (chunked, again):
        assert table.task_ids == whole.task_ids == ("a", "b", "c")
        assert table.reasons == whole.reasons
        for name in ("task", "attempt", "retry", "reason", "success", "cost", "latency"):
            assert np.array_equal(getattr(table, name), getattr(whole, name)), name
            assert getattr(table, name).dtype == getattr(whole, name).dtype, name
        assert np.array_equal(table.partial, whole.partial, equal_nan=True)
    assert [whole.task_ids[i] for i in whole.task] == ["b", "a", "c", "a"]
    empty = OutcomeTable.from_bytes(OutcomeTable.from_rows([]).to_bytes())
    assert len(empty) == 0 and empty.task_ids == ()
    for damaged in (whole.to_bytes()[:-3], whole.to_bytes() + b"\0"):
        with pytest.raises(ValueError):
            OutcomeTable.from_bytes(damaged)


def _sealed_bytes(store: Path, batch_id: str) -> bytes:
    return bytes(_sql(store, "SELECT outcomes FROM seals WHERE batch_id = ?", (batch_id,))[0][0])


def test_an_import_seals_the_columns_a_full_check_would_seal(tmp_path: Path) -> None:
    """Rows out of order, retries, text labels, odd task ids, missing partial scores: the
    columns the import gathered are those the records give when read back."""
    rows = [
        {"task_id": "zeta", "attempt": "b", "success": True, "cost": 0.1, "latency": 1e-9},
        {"task_id": "naïve ✓ \u2028", "attempt": "a", "success": False, "cost": 1 / 3,
         "latency": 2.5, "partial_score": 0.25, "terminal_reason": "agent_failure/step_limit"},
        {"task_id": "zeta", "attempt": "a", "success": False, "retry": 1, "latency": 3,
         "terminal_reason": "agent_failure"},
        {"task_id": "zeta", "attempt": "a", "success": False, "latency": 3,
         "terminal_reason": "environment_failure/setup"},
        {"task_id": "Zeta", "attempt": "a", "success": True, "latency": 0.1},
    ]  # fmt: skip
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    store = tmp_path / "runs.db"
    code, _, err = _invoke("import-results", str(path), "--name", "x", "--store", str(store))
    assert code == 0, err
    with RunStore(store) as opened:
        batch_id = opened.batch().batch_id
    at_import = _sealed_bytes(store, batch_id)
    table = OutcomeTable.from_bytes(at_import)
    assert [table.task_ids[i] for i in table.task] == ["Zeta", "naïve ✓ \u2028", "zeta", "zeta",
                                                       "zeta"]  # fmt: skip
    assert table.attempt.tolist() == [1, 1, 1, 2, 2]  # zeta: "b" came first in the file
    assert table.retry.tolist() == [0, 0, 0, 0, 1]
    code, first, _ = _report(store)
    assert code == 0 and first["integrity"]["sealed_by"] == "import"
    _sql(store, "DELETE FROM seals")
    code, again, _ = _report(store)
    assert code == 0 and again["integrity"]["check"] == "full"
    assert _sealed_bytes(store, batch_id) == at_import
    assert _without_integrity(again) == _without_integrity(first)


def test_each_import_into_one_store_seals_its_own_batch(tmp_path: Path) -> None:
    """The second import's rows follow the first's: its seal pins its own count and rowid,
    and the first batch's seal still holds."""
    store, first = import_batch(tmp_path)
    code, _, err = _invoke("import-results", str(tmp_path / "r.csv"), "--name", "y",
                           "--store", str(store))  # fmt: skip
    assert code == 0, err
    with RunStore(store) as opened:
        ids = opened.batch_ids()
    assert len(ids) == 2 and first in ids
    for batch_id in ids:
        code, out, _ = _invoke("report", batch_id, "--json", "--store", str(store))
        assert code == 0 and json.loads(out)["integrity"]["sealed_by"] == "import"


def test_an_import_seal_is_checked_like_any_other(tmp_path: Path) -> None:
    """The first report after an import takes its seal; a row edited after the import is
    still found by the next report (a full check), named, and marks the report altered."""
    store, batch_id = import_batch(tmp_path)
    code, data, err = _report(store)
    assert (code, err) == (0, "")
    assert data["integrity"] == {
        "verified": True, "problems": [], "check": "seal",
        "sealed_at": data["integrity"]["sealed_at"], "sealed_by": "import",
    }  # fmt: skip
    run_id, _ = _update(store, batch_id)
    code, data, err = _report(store)
    assert code == 1 and data["integrity"]["check"] == "full"
    assert f"run {run_id}" in err and data["integrity"]["verified"] is False
