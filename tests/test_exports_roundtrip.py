"""Exports read back by other tools: every format imports back to the numbers ``report
--json`` gave (the Inspect log too, its tries block included), task ids that are
paths, line breaks, formulas and zip-member look-alikes included; the files parse with strict
readers line by line; the Inspect header's numbers are recomputed from the rows."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundstate.cli import main

IDS = ("a/b", "../up", "t_epoch_1", "line\nbreak", "=SUM(A1)", "e\u2028f\x85g", " pad ", 'q"c,')
"""Task ids a zip member name, a line-based reader or a spreadsheet could mangle."""
IDENTITY = {"batch_id", "suite", "system_spec_hash", "integrity"}
"""``report --json`` keys that name the batch, not its statistics."""


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    if result.exit_code == 1:
        raise result.exception  # type: ignore[misc]
    assert result.exit_code == 0, result.stderr
    return result.stdout


def _rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [
        {"task_id": t, "attempt": a, "success": (a + i) % 2 == 0, "cost": 0.1 * i + 1e-9,
         "latency": 1.5 + a, "slice_labels": [t, "s;x", "a,b"], "weight": 1 + i, "horizon": 3,
         "task_revision": 2, "partial_score": 0.25 if (a + i) % 2 else None}
        for i, t in enumerate(IDS) for a in range(3)
    ]  # fmt: skip
    rows += [
        {"task_id": IDS[0], "attempt": 3, "success": False, "retry": 0,
         "terminal_reason": "environment_failure/setup"},
        {"task_id": IDS[0], "attempt": 3, "success": True, "retry": 1},
        {"task_id": IDS[1], "attempt": 3, "success": False, "terminal_reason": "grader_failure"},
    ]  # fmt: skip
    return rows


def _import(store: Path, path: Path) -> str:
    out = _invoke("import-results", str(path), "--name", "x", "--store", str(store))
    return out.strip().splitlines()[-1].removeprefix("batch ")


def _report(store: Path, batch: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["report", batch, "--json", "--store", str(store)])
    data: dict[str, Any] = json.loads(result.stdout)
    # 3: a finished batch whose every attempt is invalid has no estimate
    no_estimate = data["invalid_attempts"] and not data["valid_attempts"]
    assert result.exit_code == (3 if no_estimate else 0), result.stderr
    return {k: v for k, v in data.items() if k not in IDENTITY}


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("exports")
    rows = root / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    store = root / "runs.db"
    return store, _import(store, rows)


@pytest.mark.parametrize(
    ("fmt", "suffix"), [("jsonl", "jsonl"), ("csv", "csv"), ("inspect", "eval")]
)
def test_every_export_imports_back_to_the_reports_numbers(
    batch: tuple[Path, str], fmt: str, suffix: str
) -> None:
    store, batch_id = batch
    out = store.parent / f"out.{suffix}"
    _invoke("export", batch_id, "--format", fmt, "--out", str(out), "--store", str(store))
    before, after = _report(store, batch_id), _report(store, _import(store, out))
    # the tries block too: an Inspect sample keeps the invalid tries it reran (eleventh round)
    assert after == before and after["tries"]["tries"] == len(_rows())
    assert sorted(t["task_id"] for t in after["tasks"]) == sorted(IDS)


def test_jsonl_and_csv_exports_parse_with_strict_readers(batch: tuple[Path, str]) -> None:
    store, batch_id = batch
    jsonl, table = store.parent / "strict.jsonl", store.parent / "strict.csv"
    _invoke("export", batch_id, "--format", "jsonl", "--out", str(jsonl), "--store", str(store))
    _invoke("export", batch_id, "--format", "csv", "--out", str(table), "--store", str(store))
    lines = jsonl.read_text("utf-8").splitlines()  # every break, U+2028 and NEL included
    assert len(lines) == len(_rows())  # so no id broke a line
    objects = [json.loads(line) for line in lines]
    with table.open(newline="", encoding="utf-8") as handle:
        cells = list(csv.DictReader(handle, strict=True))
    assert [c["task_id"] for c in cells] == [o["task_id"] for o in objects]
    assert [json.loads(c["slice_labels"]) for c in cells] == [o["slice_labels"] for o in objects]
    # a cost the rows never gave is unknown: a blank cell, null in JSON (not 0)
    assert [float(c["cost"]) if c["cost"] else None for c in cells] == [o["cost"] for o in objects]


def _eval_members(path: Path) -> dict[str, Any]:
    with zipfile.ZipFile(path) as archive:
        return {name: json.loads(archive.read(name)) for name in archive.namelist()}


def test_the_inspect_header_numbers_are_the_counted_attempts(batch: tuple[Path, str]) -> None:
    store, batch_id = batch
    out = store.parent / "numbers.eval"
    _invoke("export", batch_id, "--format", "inspect", "--out", str(out), "--store", str(store))
    members = _eval_members(out)
    counted: dict[tuple[str, int], dict[str, Any]] = {}
    for row in _rows():  # the last try of each attempt counts
        counted[(row["task_id"], row["attempt"])] = row
    valid = [r for r in counted.values() if "failure/" not in r.get("terminal_reason", "")
             and r.get("terminal_reason") != "grader_failure"]  # fmt: skip
    results = members["header.json"]["results"]
    assert results["total_samples"] == len(counted) == len(members["summaries.json"])
    assert results["completed_samples"] == len(valid)
    per_task: dict[str, list[bool]] = {}
    for r in valid:
        per_task.setdefault(r["task_id"], []).append(r["success"])
    reductions = {s["sample_id"]: s["value"] for s in members["reductions.json"][0]["samples"]}
    assert reductions == pytest.approx({t: sum(v) / len(v) for t, v in per_task.items()})
    # Inspect's accuracy over epochs: the mean of the per-task means, not a pooled mean
    accuracy = results["scores"][0]["metrics"]["accuracy"]["value"]
    assert accuracy == pytest.approx(sum(reductions.values()) / len(reductions))
    samples = [v for k, v in members.items() if k.startswith("samples/")]
    epochs = sorted((s["id"], s["epoch"]) for s in samples)
    assert epochs == sorted((t, a + 1) for t, a in counted)  # 0-based labels, 1-based epochs


def test_an_export_with_no_valid_attempt_claims_no_accuracy(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "".join(
            json.dumps(
                {
                    "task_id": t,
                    "attempt": 0,
                    "success": False,
                    "terminal_reason": "environment_failure/setup",
                }
            )
            + "\n"
            for t in ("a", "b")
        )
    )
    store = tmp_path / "runs.db"
    batch_id = _import(store, rows)
    result = CliRunner().invoke(main, ["report", batch_id, "--json", "--store", str(store)])
    assert result.exit_code == 3, result.stderr  # every attempt invalid: no estimate
    report = json.loads(result.stdout)
    assert report["success_rate"] is None  # report: not available
    out = tmp_path / "none.eval"
    _invoke("export", batch_id, "--format", "inspect", "--out", str(out), "--store", str(store))
    results = _eval_members(out)["header.json"]["results"]
    assert results == {"total_samples": 2, "completed_samples": 0, "scores": []}
    again = _report(store, _import(store, out))
    assert again["success_rate"] is None and again["invalid_attempts"] == 2


def test_csv_export_reads_the_same_in_a_text_reader_that_splits_every_break(
    batch: tuple[Path, str],
) -> None:
    """A CSV cell with a line break is quoted: a reader that splits on every break (as
    str.splitlines does) would cut the row, the csv module with newline='' does not."""
    store, batch_id = batch
    out = store.parent / "breaks.csv"
    _invoke("export", batch_id, "--format", "csv", "--out", str(out), "--store", str(store))
    text = out.read_text("utf-8")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert len(rows) == len(_rows()) + 1
    assert any("line\nbreak" in row for row in rows)


def test_an_altered_batch_is_not_exported(tmp_path: Path) -> None:
    import sqlite3

    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    store = tmp_path / "runs.db"
    batch_id = _import(store, rows)
    with sqlite3.connect(store) as db:  # a failure edited into a success by hand
        db.execute(
            "UPDATE runs SET record = replace(record, '\"success\":false', '\"success\":true') "
            "WHERE rowid = (SELECT MIN(rowid) FROM runs WHERE success = 0)"
        )
    out = tmp_path / "altered.csv"
    result = CliRunner().invoke(
        main, ["export", batch_id, "--format", "csv", "--out", str(out), "--store", str(store)]
    )
    assert result.exit_code == 1 and "are altered: not exported" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    "command",
    [
        ["export", "--format", "csv", "--out", "x.csv"],
        ["plan", "b"],
        ["agreement", "a", "b"],
        ["sample-failures", "b", "--n", "1", "--out", "s"],
        ["labels", "agreement", "b"],
        ["labels", "regress", "b", "--into", "r"],
        ["labels", "import", "sheet.csv", "--annotator", "a", "--taxonomy", "t.yaml"],
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_reading_commands_create_no_store(tmp_path: Path, command: list[str]) -> None:
    store = tmp_path / "nowhere" / "runs.db"
    (tmp_path / "t.yaml").write_text(
        "name: t\nversion: 1\nlabels: [{id: evaluator_defect, description: d}]\n"
    )
    (tmp_path / "sheet.csv").write_text("run_id,labels\nr1,evaluator_defect\n")
    args = [a if a not in ("t.yaml", "sheet.csv") else str(tmp_path / a) for a in command]
    result = CliRunner().invoke(main, [*args, "--store", str(store)])
    assert result.exit_code == 2 and f"no run store at {store}" in result.stderr
    assert not store.parent.exists()


def test_an_export_never_writes_over_the_store_it_reads(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    store = tmp_path / "runs.db"
    batch_id = _import(store, rows)
    before = store.read_bytes()
    (tmp_path / "link.db").symlink_to(store)
    for out in ("runs.db", "link.db", "runs.db-wal", "artifacts/ab/cd", "./runs.db"):
        result = CliRunner().invoke(main, ["export", batch_id, "--format", "csv", "--out",
                                           str(tmp_path / out), "--store", str(store)])  # fmt: skip
        assert result.exit_code == 2, out
        assert "is the run store's own file: choose another path" in result.stderr
    assert store.read_bytes() == before
    assert _report(store, batch_id)["valid_attempts"] > 0


@pytest.mark.parametrize("name", ["", "   ", "\t"])
def test_an_import_needs_a_name_that_is_not_blank(tmp_path: Path, name: str) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"task_id": "a", "attempt": 0, "success": True}) + "\n")
    store = tmp_path / "runs.db"
    result = CliRunner().invoke(
        main, ["import-results", str(rows), "--name", name, "--store", str(store)]
    )
    assert result.exit_code == 2 and "'--name': must not be blank" in result.stderr
    assert not store.exists()
