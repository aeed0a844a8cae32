"""Run store, records and imports, seventeenth audit: one rule for "counted" in every command;
identity keys of their own types (stored columns and foreign files alike); every unreadable
stored file named as such, with the byte or key that makes it so."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from groundstate.importers import import_results
from groundstate.store import RunStore

from .test_store_round16 import _copy, _forge, _invalid_task, _invoke, made  # noqa: F401


def _json(out: str) -> Any:
    return json.loads(out)


# --- one rule for "counted" ---------------------------------------------------------------------


def test_runs_marks_no_run_of_an_invalid_task_counted(
    made: tuple[Path, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    """Found here: ``runs`` marked every last try of a task that failed validation and ran
    anyway ``counted: true``, while every figure leaves the task out. It now reads the one rule
    (``analysis.counted_runs``) the reports and ``sample-failures`` read."""
    code, out, _ = _invoke("runs", made[1], "--json", "--store", str(made[0]))
    assert code == 0 and all(r["counted"] for r in _json(out)["runs"])
    store = _invalid_task(made, tmp_path)
    code, out, err = _invoke("runs", made[1], "--json", "--store", str(store))
    assert code == 0, err
    assert [r["counted"] for r in _json(out)["runs"]] == [False, False, False]
    code, out, _ = _invoke("runs", made[1], "--store", str(store))
    assert "task that failed validation" in " ".join(out.split())


def _sheet(made: tuple[Path, str], tmp_path: Path) -> Path:  # noqa: F811
    """A filled-in labelling sheet of the made batch's failed runs (its taxonomy beside)."""
    folder = tmp_path / "sheet"
    code, out, err = _invoke(
        "sample-failures", made[1], "--n", "2", "--out", str(folder), "--store", str(made[0])
    )
    assert code == 0, out + err
    rows = [json.loads(x) for x in (folder / "sheet.jsonl").read_text().splitlines() if x]
    path = folder / "filled.jsonl"
    path.write_text("".join(json.dumps({**r, "labels": ["planning"]}) + "\n" for r in rows))
    return path


def test_labels_of_a_run_no_figure_counts_are_refused(
    made: tuple[Path, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    """Found here: ``labels import`` stored labels for runs of a task that failed validation
    (in no figure, never drawn by ``sample-failures``); ``labels agreement`` then left them out
    without a word of where they came from. A label for a run the one rule does not count is
    refused, naming the line, the run and why, and nothing of the file is stored."""
    sheet = _sheet(made, tmp_path)
    store = _invalid_task(made, tmp_path)
    code, _, err = _invoke(
        "labels", "import", str(sheet), "--annotator", "a", "--store", str(store)
    )
    assert code != 0 and "Traceback" not in err
    assert "filled.jsonl:1: run " in err and "is not counted (its task failed validation" in err
    with RunStore(store) as runs:
        assert runs.labels(made[1]) == []
    code, _, err = _invoke(
        "labels", "import", str(sheet), "--annotator", "a",
        "--store", str(_copy(made, tmp_path / "whole")),
    )  # fmt: skip
    assert code == 0, err


def test_labels_of_a_try_outside_the_plan_are_refused(
    made: tuple[Path, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    """A failure stored by hand as a fourth attempt of a three-attempt batch is in no figure:
    a label for it is refused too, saying the try is outside the plan."""
    store = _copy(made, tmp_path)
    with RunStore(store) as runs:
        first = next(r for r in runs.runs(made[1]) if not r.success)
    _forge(store, made[1], "fourth", attempt=4)
    sheet = _sheet(made, tmp_path)
    row = json.loads(sheet.read_text().splitlines()[0]) | {"run_id": "fourth", "attempt": 4}
    sheet.write_text(json.dumps(row) + "\n")
    code, _, err = _invoke(
        "labels", "import", str(sheet), "--annotator", "a", "--store", str(store)
    )
    assert code != 0 and "run fourth is not counted (outside the batch's plan" in err, err
    assert first.run_id != "fourth"


# --- strict identity types --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "value", "said"),
    [
        ("success", "false", "corrupt column success: 'false' is not 0 or 1"),
        ("success", 2, "corrupt column success: 2 is not 0 or 1"),
        ("attempt", "one", "corrupt column attempt: 'one' is not an integer"),
        ("attempt", 1.5, "corrupt column attempt: 1.5 is not an integer"),
        ("task_id", b"t", "corrupt column task_id: b't' is not text"),
    ],
)
def test_a_run_column_of_another_type_is_not_coerced_by_label_import(
    made: tuple[Path, str],  # noqa: F811
    tmp_path: Path,
    column: str,
    value: Any,
    said: str,
) -> None:
    """Found here: the runs a label file names were read from their indexed columns with
    ``bool()``/``int()``/``str()``: a success column edited to ``'false'`` was True (the
    label refused as "succeeded"), ``2`` True, an attempt ``'1'`` 1. A column of another type
    is now an error naming the run and the column."""
    sheet = _sheet(made, tmp_path)
    run_id = json.loads(sheet.read_text().splitlines()[0])["run_id"]
    store = _copy(made, tmp_path)
    db = sqlite3.connect(store)
    with db:
        db.execute(f"UPDATE runs SET {column} = ? WHERE run_id = ?", (value, run_id))
    db.close()
    code, _, err = _invoke(
        "labels", "import", str(sheet), "--annotator", "a", "--store", str(store)
    )
    assert code != 0 and "Traceback" not in err
    assert f"run {run_id} is unreadable ({said})" in err, err


def _import(path: Path, store: Path, fmt: str | None = None) -> tuple[int, str, str]:
    args = ["import-results", str(path), "--name", "x", "--store", str(store)]
    return _invoke(*args, *(["--format", fmt] if fmt else []))


def _inspect_log(ids: list[Any]) -> dict[str, Any]:
    samples = [
        {"id": i, "epoch": 1, "scores": {"s": {"value": "C"}}, "input": "q", "target": "t"}
        for i in ids
    ]
    return {
        "version": 2,
        "status": "success",
        "eval": {"task": "t", "model": "m", "created": "2026-01-01T00:00:00+00:00"},
        "samples": samples,
    }


def test_inspect_sample_ids_1_and_text_1_are_not_one_task(tmp_path: Path) -> None:
    """Found here: an Inspect log whose samples have ids ``1`` and ``"1"`` (two samples to
    Inspect: its ids are ``int | str``) was imported as one task of two attempts. The import
    is now refused naming both places, and nothing is stored."""
    path = tmp_path / "log.json"
    path.write_text(json.dumps(_inspect_log([1, "1"])))
    store = tmp_path / "runs.db"
    code, out, err = _import(path, store, "inspect")
    assert code != 0 and "Traceback" not in err, out + err
    assert "task_id: task id '1' is given as text here and as an integer" in err, err
    path.write_text(json.dumps(_inspect_log([1, 2])))
    code, out, err = _import(path, store, "inspect")
    assert code == 0, out + err


@pytest.mark.parametrize("ids", [[1, "1"], ["1", 1]])
def test_a_row_file_giving_one_id_as_integer_and_text_is_refused(
    tmp_path: Path, ids: list[Any]
) -> None:
    """The same in the row format (JSON Lines), either order; a CSV, whose cells are all
    text, is not concerned."""
    path = tmp_path / "rows.jsonl"
    path.write_text(
        "".join(
            json.dumps({"task_id": i, "attempt": n, "success": True}) + "\n"
            for n, i in enumerate(ids, start=1)
        )
    )
    store = tmp_path / "runs.db"
    code, _, err = _import(path, store)
    assert code != 0 and "rows.jsonl:2: task_id: task id '1' is given as" in err, err
    assert "on line 1" in err


def test_integer_ids_alone_import_as_their_text(tmp_path: Path) -> None:
    """τ-bench's integer task ids, given as integers throughout, import as before."""
    path = tmp_path / "rows.jsonl"
    path.write_text(
        "".join(json.dumps({"task_id": 1, "attempt": n, "success": n == 1}) + "\n" for n in (1, 2))
    )
    with RunStore(tmp_path / "runs.db") as store:
        batch = import_results(path, "x", store)
        assert [(type(r.task_id), r.task_id) for r in store.runs(batch.batch_id)] == [
            (str, "1")
        ] * 2
    assert all(type(k) is str and k == "1" for k in batch.task_revisions)


# --- unreadable stored files --------------------------------------------------------------------


def _artifact(store: Path, batch_id: str) -> tuple[str, Path]:
    with RunStore(store) as runs:
        run = runs.runs(batch_id)[0]
        name, location = sorted(run.artifact_locations.items())[0]
        digest = location.removeprefix("sha256:")
        return name, runs.artifacts / digest[:2] / digest[2:]


def test_an_artifact_that_is_not_utf8_is_named_unreadable_with_its_byte(
    made: tuple[Path, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    """Found here: an artifact file whose bytes were altered into something not UTF-8 was
    reported "missing", as if deleted. ``verify`` now says it is unreadable, naming the file
    and the byte's value and offset; a deleted one is still missing."""
    store = _copy(made, tmp_path)
    name, path = _artifact(store, made[1])
    path.write_bytes(b"ok\n\xff\xfe")
    code, out, err = _invoke("verify", made[1], "--store", str(store))
    assert code != 0
    said = " ".join((out + err).split())
    assert "artifact_altered: run " in said and f"artifact {name}" in said
    assert f"unreadable: {path} is not UTF-8 text (byte 0xff at offset 3)" in said, said
    assert "missing" not in said
    path.unlink()
    code, out, err = _invoke("verify", made[1], "--store", str(store))
    assert "artifact_missing" in out + err


def test_an_artifact_that_is_a_directory_is_unreadable_not_missing(
    made: tuple[Path, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    store = _copy(made, tmp_path)
    _, path = _artifact(store, made[1])
    path.unlink()
    path.mkdir()
    code, out, err = _invoke("verify", made[1], "--store", str(store))
    said = " ".join((out + err).split())
    assert code != 0 and "Traceback" not in said
    assert f"unreadable: {path}:" in said and "artifact_missing" not in said, said


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda t: t.encode()[:-1] + b"\xc3(", "not UTF-8: byte 0xc3 at offset"),
        (lambda t: t[: len(t) // 2].encode(), "its JSON does not parse: "),
        (lambda t: ('{"success": true, ' + t[1:]).encode(), "writes the key 'success' twice"),
        (lambda t: ("[" * 100_000 + "]" * 100_000).encode(), "its JSON does not parse"),
    ],
)
def test_an_unreadable_record_says_why(
    made: tuple[Path, str],  # noqa: F811
    tmp_path: Path,
    edit: Any,
    said: str,
) -> None:
    """Found here: ``verify`` said only "its JSON does not parse, or writes a key twice" of a
    damaged record, and a record nested a hundred thousand deep ended it on a RecursionError.
    It now names the byte, the JSON error's offset or the key, and never raises."""
    store = _copy(made, tmp_path)
    db = sqlite3.connect(store)
    with db:
        run_id, text = db.execute("SELECT run_id, record FROM runs LIMIT 1").fetchone()
        db.execute("UPDATE runs SET record = ? WHERE run_id = ?", (edit(text), run_id))
    db.close()
    code, out, err = _invoke("verify", made[1], "--store", str(store))
    assert code != 0 and "Traceback" not in out + err
    joined = " ".join((out + err).split())
    assert "record_unreadable" in joined and said in joined, joined


# --- adversarial result files -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"task_id": "a", "attempt": 1, "success": true', "not valid JSON"),
        ('{"task_id": "a", "attempt": 1, "success": true, "success": false}', "twice"),
        ('{"task_id": "a", "attempt": 1, "success": true, "cost": NaN}', "cost"),
        ('{"task_id": "a", "attempt": 1, "success": true, "latency": Infinity}', "latency"),
        ('{"task_id": "a", "attempt": 1e400, "success": true}', "attempt"),
        ('{"task_id": "a", "attempt": 99999999999999999999, "success": true}', "attempt"),
        ('{"task_id": true, "attempt": 1, "success": true}', "task_id"),
        ('{"task_id": 1.5, "attempt": 1, "success": true}', "task_id"),
        ('{"task_id": "a", "attempt": true, "success": true}', "attempt"),
        ('{"task_id": "a", "attempt": 1, "success": "yes please"}', "success"),
        ('{"task_id": "a", "attempt": 1, "success": true, "input_tokens": -1}', "input_tokens"),
        ('{"task_id": "a", "attempt": [1], "success": true}', "attempt"),
    ],
)
def test_a_malformed_row_is_refused_naming_field_and_stores_nothing(
    tmp_path: Path, text: str, said: str
) -> None:
    """Malformed rows (cut short, a key twice, NaN or Infinity, numbers too large, values of
    another type) stop the import with one line naming the file, line and field; a batch
    stored before is left whole."""
    store = tmp_path / "runs.db"
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"task_id": "a", "attempt": 1, "success": True}) + "\n")
    assert _import(good, store)[0] == 0
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"task_id": "b", "attempt": 1, "success": False}) + "\n" + text)
    code, out, err = _import(path, store)
    assert code != 0 and "Traceback" not in out + err, out + err
    assert "bad.jsonl:2" in err and said in err, err
    with RunStore(store) as runs:
        assert [len(runs.runs(b.batch_id)) for b in runs.batches()] == [1]
        assert all(
            p.kind == "unverifiable"
            for b in runs.batches()
            for p in runs.verify(b.batch_id).problems
        )


def test_a_compressed_file_cut_short_stores_nothing(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl.gz"
    rows = "".join(
        json.dumps({"task_id": f"t{i}", "attempt": 1, "success": True}) + "\n" for i in range(500)
    )
    path.write_bytes(gzip.compress(rows.encode())[:-40])
    store = tmp_path / "runs.db"
    code, out, err = _import(path, store, "jsonl")
    assert code != 0 and "Traceback" not in out + err and "rows.jsonl.gz" in err, err
    assert not store.exists() or RunStore(store).batches() == []


@pytest.mark.parametrize("command", ["runs", "report"])
def test_a_record_edited_to_an_attempt_beyond_64_bits_is_named_not_a_traceback(
    made: tuple[Path, str],  # noqa: F811
    tmp_path: Path,
    command: str,
) -> None:
    """Found here: a record whose attempt was edited into a 2,500-digit integer (JSON and the
    record model take it) ended ``runs`` on numpy's OverflowError. Every reader now stops
    with one line naming the run (or the batch) and the field."""
    store = _copy(made, tmp_path)
    db = sqlite3.connect(store)
    with db:
        run_id, text = db.execute("SELECT run_id, record FROM runs LIMIT 1").fetchone()
        edited = text.replace('"attempt":1', '"attempt":1' + "9" * 2500, 1)
        db.execute("UPDATE runs SET record = ? WHERE run_id = ?", (edited, run_id))
    db.close()
    code, out, err = _invoke(command, made[1], "--store", str(store))
    assert code == 2 and "Traceback" not in out + err, out + err
    assert "attempt holds an integer beyond 64 bits" in err, err
    assert run_id in err and made[1] in err


def test_an_unreadable_batch_record_says_why(
    made: tuple[Path, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    """A batch record that no longer parses was "altered (its JSON no longer matches its
    hash)", as an edit that kept it readable: it now says unreadable, and why."""
    store = _copy(made, tmp_path)
    db = sqlite3.connect(store)
    with db:
        db.execute("UPDATE batches SET record = CAST(X'7BFF7D' AS BLOB)")
    db.close()
    code, out, err = _invoke("verify", made[1], "--store", str(store))
    joined = " ".join((out + err).split())
    assert code == 1 and "Traceback" not in joined
    assert "batch record unreadable (not UTF-8: byte 0xff at offset 1)" in joined, joined


def test_an_unreadable_labels_row_says_why(
    made: tuple[Path, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    store = _copy(made, tmp_path)
    sheet = _sheet(made, tmp_path)
    code, _, err = _invoke(
        "labels", "import", str(sheet), "--annotator", "a", "--store", str(store)
    )
    assert code == 0, err
    db = sqlite3.connect(store)
    with db:
        db.execute("UPDATE labels SET record = substr(record, 1, 20)")
    db.close()
    code, out, err = _invoke("verify", made[1], "--store", str(store))
    joined = " ".join((out + err).split())
    assert code == 1 and "labels by a unreadable (its JSON does not parse: " in joined, joined


def test_runs_of_an_altered_batch_are_listed_with_the_warning_and_exit_1(
    made: tuple[Path, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    """Found here: ``runs`` listed a batch whose record writes a key twice, or a run whose
    record was edited, with exit 0 and no word, marking tries counted from altered records.
    It now verifies as ``report`` does (a holding seal: no second check), names each problem
    and exits 1; an intact batch is unchanged."""
    store = _copy(made, tmp_path)
    db = sqlite3.connect(store)
    with db:
        db.execute("""UPDATE batches SET record = '{"batch_id": 1, ' || substr(record, 2)""")
    db.close()
    code, out, err = _invoke("runs", made[1], "--json", "--store", str(store))
    assert code == 1 and "batch record unreadable" in err and "'batch_id' twice" in err, err
    assert len(_json(out)["runs"]) == 3
    code, _, err = _invoke("runs", made[1], "--store", str(made[0]))
    assert code == 0 and err == "", err
