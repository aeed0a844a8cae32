"""Run store and analysis, sixteenth audit: one rule for the tries of a batch's plan, read by
the store and the reports alike; every reader of stored runs counting what the headline counts;
outcome fields of their JSON types or a clear error."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from groundstate.analysis import planned
from groundstate.batchplan import Placed, placed
from groundstate.cli import main
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.store import RunStore

from .test_records_round13 import _bank


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A finished batch of the bank suite: one task, 3 attempts; its policy allows one rerun
    of an invalid try."""
    store = tmp_path_factory.mktemp("made") / "runs.db"
    suite, system = _bank()
    with RunStore(store) as runs:
        result = asyncio.run(BatchRunner(suite, system, runs).start(BatchConfig(attempts=3)))
    return store, result.batch.batch_id


def _copy(made: tuple[Path, str], tmp_path: Path) -> Path:
    shutil.copytree(made[0].parent, tmp_path / "copy")
    return tmp_path / "copy" / "runs.db"


def _forge(store: Path, batch_id: str, run_id: str, **fields: Any) -> None:
    """Store a copy of the batch's first run with *fields* changed, as a forger would: the
    unique index dropped, the row inserted by hand (record and columns alike)."""
    db = sqlite3.connect(store)
    with db:
        db.execute("DROP INDEX IF EXISTS runs_by_batch")
        (text,) = db.execute(
            "SELECT record FROM runs WHERE batch_id = ? ORDER BY rowid LIMIT 1", (batch_id,)
        ).fetchone()
        record = json.loads(text) | {"run_id": run_id} | fields
        db.execute(
            "INSERT INTO runs (run_id, batch_id, task_id, attempt, retry, terminal_reason, "
            "success, created_at, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, batch_id, record["task_id"], record["attempt"], record["retry"],
             record["terminal_reason"], record["success"], "2026-01-01T00:00:00+00:00",
             json.dumps(record)),
        )  # fmt: skip
    db.close()


# --- one rule for the plan ----------------------------------------------------------------------


def test_the_store_and_the_reports_place_copies_of_a_first_try_alike(
    made: tuple[Path, str], tmp_path: Path
) -> None:
    """Found here: the plan's rule was written twice, SQL in the store and numpy in the
    reports, and the two disagreed on a first try stored twice (an invalid one and a success,
    the unique index dropped): the reports left the success out as "a rerun of a valid try"
    while ``verify`` and ``batches`` kept it. One rule now decides for both."""
    store, batch_id = _copy(made, tmp_path), made[1]
    with RunStore(store) as runs:
        first = runs.runs(batch_id)[0]
    _forge(store, batch_id, "invalid-copy", terminal_reason="environment_failure/reset")
    _forge(store, batch_id, "success-copy", terminal_reason="success", success=True)
    with RunStore(store, create=False) as runs:
        batch = runs.batch(batch_id)
        named = {row.run_id for row in runs.outside_plan(batch)}
        stored = runs.runs(batch_id)
    inside, outside = planned(batch, stored)
    assert first.retry == 0 and len(stored) == 5
    assert named == set() and len(outside) == 0 and len(inside) == 5


def test_a_first_try_is_in_the_plan_whatever_was_stored_beside_it() -> None:
    """The property the store leans on to read only the attempts holding another try
    (:mod:`groundstate.batchplan`): on tries at random, every try 0 of a planned
    attempt of a planned task is inside."""
    rng = random.Random(16)
    for _ in range(200):
        n = rng.randint(1, 30)
        task = np.array([rng.randint(0, 2) for _ in range(n)], np.int64)
        attempt = np.array([rng.randint(-1, 4) for _ in range(n)], np.int64)
        retry = np.array([rng.randint(-1, 3) for _ in range(n)], np.int64)
        invalid = np.array([rng.random() < 0.5 for _ in range(n)], np.bool_)
        where = placed(["a", "b", "c"], task, attempt, retry, invalid, {"a", "b"}, (3, 2))
        first = (task < 2) & (retry == 0) & (attempt >= 1) & (attempt <= 3)
        assert (where[first] == Placed.INSIDE).all()
        assert (where[task == 2] == Placed.TASK).all()


# --- outcome fields of their types ----------------------------------------------------------


def _edit_record(store: Path, batch_id: str, fields: dict[str, Any]) -> str:
    """Edit the batch's first run record by hand (its hashes left as they were); its run id."""
    with sqlite3.connect(store) as db:
        run_id, text = db.execute(
            "SELECT run_id, record FROM runs WHERE batch_id = ? ORDER BY seq LIMIT 1", (batch_id,)
        ).fetchone()
        db.execute(
            "UPDATE runs SET record = ? WHERE run_id = ?",
            (json.dumps(json.loads(text) | fields), run_id),
        )
        db.execute("DELETE FROM seals")
    db.close()
    return str(run_id)


_TEXT_FOR_VALUES = [
    ({"success": "true"}, "success"),
    ({"success": "false"}, "success"),
    ({"success": 1}, "success"),
    ({"attempt": "1"}, "attempt"),
    ({"retry": "0"}, "retry"),
    ({"cost": "0.5"}, "cost"),
]


@pytest.mark.parametrize(("fields", "field"), _TEXT_FOR_VALUES)
def test_an_outcome_field_edited_into_text_stops_the_report_naming_run_and_field(
    made: tuple[Path, str], tmp_path: Path, fields: dict[str, Any], field: str
) -> None:
    """Found here: the outcome columns were made with numpy's conversions, which read a
    hand-edited ``"false"`` as True (a failure counted as a success), ``"1"`` as 1 and
    ``1`` as True: the report's figures were silently wrong. A field of another JSON type
    now stops the command with one line naming the run and the field."""
    store = _copy(made, tmp_path)
    run_id = _edit_record(store, made[1], fields)
    code, out, err = _invoke("report", made[1], "--json", "--store", str(store))
    assert code == 2 and "Traceback" not in out + err, err
    assert f"run {run_id} of batch {made[1]} is unreadable" in err, err
    assert field in err.split("is unreadable", 1)[1], err


@pytest.mark.parametrize(("fields", "field"), _TEXT_FOR_VALUES)
def test_a_stored_record_of_another_type_is_not_coerced_when_read_whole(
    made: tuple[Path, str], tmp_path: Path, fields: dict[str, Any], field: str
) -> None:
    """Found here: whole records were read back in pydantic's lax mode, so the readers of
    runs (sample-failures, agreement, the HTML report, ``show``) took ``"false"`` for True
    and ``"1"`` for 1. A stored record is now read strictly: an error naming the field."""
    from groundstate.errors import StoreError

    store = _copy(made, tmp_path)
    run_id = _edit_record(store, made[1], fields)
    with RunStore(store, create=False) as runs, pytest.raises(StoreError) as caught:
        runs.run(run_id)
    assert f"run {run_id}" in str(caught.value) and field in str(caught.value)


# --- every reader counts what the headline counts ----------------------------------------------


def _invalid_task(made: tuple[Path, str], tmp_path: Path) -> Path:
    """A copy of the made batch whose one task a resume found invalid (it ran anyway): no
    figure counts its runs."""
    store = _copy(made, tmp_path)
    with RunStore(store) as runs:
        (task_id,) = runs.batch(made[1]).task_revisions
        runs.add_invalid_tasks(made[1], [task_id])
    return store


def test_sample_failures_draws_no_run_of_a_task_the_headline_leaves_out(
    made: tuple[Path, str], tmp_path: Path
) -> None:
    """Found here: ``sample-failures`` drew the failures of a task that failed validation and
    ran anyway (the report leaves it out of every figure: a broken task says nothing of the
    system) and counted them in "sampled N of M valid failed runs". It now draws from the
    tries the headline counts."""
    store = _invalid_task(made, tmp_path)
    code, out, err = _invoke(
        "sample-failures", made[1], "--n", "5", "--out", str(tmp_path / "sheet"),
        "--store", str(store),
    )  # fmt: skip
    # since round 33 the batch's want of an estimate is named first, exit 3 as ``report``
    assert code == 3 and out == "", out + err
    assert "every task failed validation and ran anyway" in err and "nothing to sample" in err
    code, out, err = _invoke(
        "sample-failures", made[1], "--n", "5", "--out", str(tmp_path / "sheet"),
        "--store", str(made[0]),
    )  # fmt: skip
    assert code == 0 and "valid failed runs" in out and "of 0 valid" not in out, out + err


def test_agreement_pairs_only_the_attempts_the_headline_counts(
    made: tuple[Path, str], tmp_path: Path
) -> None:
    """Found here: ``agreement`` paired every stored attempt, those of a task the report
    leaves out included: its kappa and confusion table were over another denominator than
    the batch's figures. It now pairs the tries the headline counts."""
    code, out, _ = _invoke("agreement", made[1], made[1], "--json", "--store", str(made[0]))
    assert code == 0 and json.loads(out)["paired"] == 3
    store = _invalid_task(made, tmp_path)
    code, out, err = _invoke("agreement", made[1], made[1], "--json", "--store", str(store))
    assert "Traceback" not in out + err
    assert code != 0 or json.loads(out)["paired"] == 0, out + err


def test_a_session_counts_no_try_outside_the_plan(made: tuple[Path, str], tmp_path: Path) -> None:
    """Found here: a session's tries were the batch chain's links from its first one, so a
    try another program stored outside the plan (an attempt 4 of a 3-attempt batch, left out
    of every figure) was counted as the session's: ``report`` showed 4 tries for 3 attempts.
    Sessions now count only tries of the plan."""
    store = _copy(made, tmp_path)
    with RunStore(store) as runs:
        before = [s.tries for s in runs.batch(made[1]).sessions]
        first = runs.runs(made[1])[0]
        runs.add_run(first.model_copy(update={"run_id": "fourth", "attempt": 4}), {})
        after = [s.tries for s in runs.batch(made[1]).sessions]
        assert [row.run_id for row in runs.outside_plan(runs.batch(made[1]))] == ["fourth"]
    assert before == after == [3]


# --- a key written twice ------------------------------------------------------------------------


def test_a_verdict_written_twice_in_a_record_is_named_altered(
    made: tuple[Path, str], tmp_path: Path
) -> None:
    """Found here: a record edited to write ``"success": true`` before its real ``false``
    kept its hash (Python's JSON, which the hash is of, keeps a key's last value) while the
    statistics read the first (SQLite's ``json_extract``): ``verify`` found nothing, the
    batch was sealed, and the report counted a failure as a success. A key written twice in
    an object is now named altered."""
    store = _copy(made, tmp_path)
    with sqlite3.connect(store) as db:
        run_id, text = db.execute(
            "SELECT run_id, record FROM runs WHERE batch_id = ? AND success = 0 LIMIT 1",
            (made[1],),
        ).fetchone()
        forged = '{"success":true,' + text[1:]
        assert json.loads(forged) == json.loads(text)  # what the hash is of: unchanged
        db.execute("UPDATE runs SET record = ?, success = 1 WHERE run_id = ?", (forged, run_id))
        db.execute("DELETE FROM seals")
        db.execute("DELETE FROM edits")  # a forger empties the log
    db.close()
    with RunStore(store, create=False) as runs:
        check = runs.verify(made[1])
    assert [(p.run_id, p.kind) for p in check.problems] == [(run_id, "record_unreadable")]
    code, out, err = _invoke("report", made[1], "--json", "--store", str(store))
    assert code == 1 and json.loads(out)["integrity"]["verified"] is False, err
