"""Failure labels are chained per batch: ``verify`` names a label altered or deleted by hand."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from groundstate.store import RunLabels, RunStore, record_hash

from .test_verify_seal import _invoke, import_batch


def _sql(store: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with sqlite3.connect(store) as db:
        rows = db.execute(sql, params).fetchall()
    db.close()
    return rows


def _labels(batch_id: str, run_id: str, annotator: str, label: str, **extra: Any) -> RunLabels:
    return RunLabels(
        batch_id=batch_id, run_id=run_id, annotator=annotator, taxonomy="default@1",
        labels=[label], created_at="2026-01-01T00:00:00Z", **extra,
    )  # fmt: skip


@pytest.fixture
def labelled(tmp_path: Path) -> tuple[Path, str, list[str]]:
    store, batch_id = import_batch(tmp_path, tasks=2, attempts=2)
    with RunStore(store) as opened:
        runs = [r.run_id for r in opened.runs(batch_id)]
        opened.add_labels([_labels(batch_id, runs[0], "ann", "planning"),
                           _labels(batch_id, runs[1], "ann", "recovery")])  # fmt: skip
        opened.add_labels([_labels(batch_id, runs[0], "bob", "perception")])
        opened.add_labels([_labels(batch_id, runs[0], "carol", "planning", adjudicated=True)])
    return store, batch_id, runs


def _problems(store: Path) -> list[tuple[str, str | None, str]]:
    code, out, _ = _invoke("verify", "--json", "--store", str(store))
    (checked,) = json.loads(out)
    assert (code == 0) == checked["verified"]
    return [(p["kind"], p["run_id"], p["detail"]) for p in checked["problems"]]


def test_labels_verify_when_untouched_and_chain_across_imports(
    labelled: tuple[Path, str, list[str]],
) -> None:
    store, batch_id, _ = labelled
    assert _problems(store) == []
    rows = _sql(store, "SELECT seq FROM labels WHERE batch_id = ? ORDER BY id", (batch_id,))
    assert [r[0] for r in rows] == [1, 2, 3, 4]
    assert _sql(store, "SELECT length FROM label_chains")[0][0] == 4


def test_an_altered_label_is_named_with_its_run_and_annotator(
    labelled: tuple[Path, str, list[str]],
) -> None:
    store, _, runs = labelled
    _sql(
        store,
        "UPDATE labels SET record = replace(record, 'perception', 'planning') "
        "WHERE annotator = 'bob'",
    )
    assert _problems(store) == [
        ("labels_altered", runs[0], "labels by bob altered (its JSON no longer matches its hash)")
    ]


def test_a_label_moved_out_of_the_adjudicated_set_by_its_column_is_named(
    labelled: tuple[Path, str, list[str]],
) -> None:
    """``labels()`` filters on the ``adjudicated`` column: changing it alone is caught too."""
    store, batch_id, runs = labelled
    _sql(store, "UPDATE labels SET adjudicated = 0 WHERE annotator = 'carol'")
    [(kind, run_id, detail)] = _problems(store)
    assert (kind, run_id) == ("labels_altered", runs[0]) and "adjudicated" in detail
    with RunStore(store) as opened:  # what a reader would now take as final
        assert opened.labels(batch_id, adjudicated=True) == []


def test_deleted_labels_are_named_in_the_middle_and_at_the_end(
    labelled: tuple[Path, str, list[str]],
) -> None:
    store, _, runs = labelled
    _sql(store, "DELETE FROM labels WHERE seq = 2")
    assert _problems(store) == [("labels_missing", runs[0], "1 labels row deleted before this one")]
    _sql(store, "DELETE FROM labels WHERE seq = 4")
    assert ("labels_missing", None, "1 labels row deleted at the end") in _problems(store)
    _sql(store, "DELETE FROM label_chains")
    assert ("labels_missing", None, "chain head missing (the label_chains row was deleted)") in (
        _problems(store)
    )


def test_a_relinked_labels_row_breaks_the_chain(labelled: tuple[Path, str, list[str]]) -> None:
    """A row whose record and hash were both rewritten still breaks the chain."""
    store, _, runs = labelled
    (text,) = _sql(store, "SELECT record FROM labels WHERE seq = 2")[0]
    forged = text.replace("recovery", "planning")
    _sql(store, "UPDATE labels SET record = ?, record_hash = ? WHERE seq = 2",
         (forged, record_hash(forged)))  # fmt: skip
    kinds = [(kind, run_id) for kind, run_id, _ in _problems(store)]
    assert kinds == [("labels_altered", runs[1])]


def test_labels_stored_before_the_chain_are_unverifiable_not_altered(
    labelled: tuple[Path, str, list[str]],
) -> None:
    store, batch_id, _ = labelled
    _sql(store, "UPDATE labels SET seq = NULL, record_hash = NULL, chain_hash = NULL")
    _sql(store, "DELETE FROM label_chains")
    problems = _problems(store)
    assert problems == [("unverifiable", None, "4 labels rows unverifiable (written before "
                         "store format 2)")]  # fmt: skip
    with RunStore(store) as opened:  # labels added now start a chain after the old rows
        opened.add_labels([_labels(batch_id, "r", "dan", "planning")])
    assert [kind for kind, *_ in _problems(store)] == ["unverifiable"]


def test_no_agreement_or_regression_case_is_made_from_altered_labels(
    labelled: tuple[Path, str, list[str]],
) -> None:
    """The labels are the evidence of `labels agreement` and `labels regress`: edited by hand,
    they are named and the command stops (exit 1), as a report of altered runs does."""
    store, batch_id, _ = labelled
    _sql(
        store,
        "UPDATE labels SET record = replace(record, '\"planning\"', '\"evaluator_defect\"') "
        "WHERE annotator = 'carol'",
    )
    for command in (["labels", "agreement", batch_id], ["labels", "regress", batch_id, "--into",
                                                        str(store.parent / "r")]):  # fmt: skip
        code, _, err = _invoke(*command, "--store", str(store))
        assert code == 1 and f"records of batch {batch_id} are altered" in err, err
        assert "labels by carol altered" in err
    assert not (store.parent / "r").exists()
