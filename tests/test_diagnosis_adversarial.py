"""Diagnosis against an outside team: label sheets as spreadsheets and people return them
(byte-order marks, UTF-16, CRLF, ``;`` or tab delimiters, trailing empty rows, notes over
several lines, reordered or scrambled rows, runs of another batch or that succeeded), edited
or malformed taxonomies, sampling that must not depend on storage order or merge strata,
grader agreement over invalid attempts, and agreement and planning on degenerate input,
each recomputed independently."""

from __future__ import annotations

import codecs
import csv
import io
import json
import math
import random
import shutil
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from groundstate.agreement import agreement, multilabel_agreement
from groundstate.cli import main
from groundstate.diagnosis import (
    default_taxonomy,
    load_taxonomy,
    read_label_file,
    sample_failures,
    verdict_agreement,
)
from groundstate.diagnosis.sampling import stratum
from groundstate.errors import GroundstateError, SpecError
from groundstate.planning import PlanningError, plan
from groundstate.records import AgentRun
from groundstate.stats import TaskCounts
from groundstate.store import BatchInfo, RunStore

from .test_stats_independent import ref_alpha, ref_cohen, ref_fleiss

TAXONOMY = default_taxonomy()


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    if result.exit_code == 1:
        raise result.exception  # type: ignore[misc]
    return result.exit_code, result.stdout, result.stderr


def _import(store: Path, rows: list[dict[str, Any]], name: str = "rows.jsonl") -> str:
    path = store.parent / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = _invoke("import-results", str(path), "--name", "x", "--store", str(store))
    assert code == 0, err
    return out.strip().splitlines()[-1].removeprefix("batch ")


def _failures(tasks: list[str], attempts: int = 2) -> list[dict[str, Any]]:
    return [
        {"task_id": t, "attempt": a, "success": False} for t in tasks for a in range(attempts)
    ] + [{"task_id": tasks[0], "attempt": attempts, "success": True}]


@pytest.fixture(scope="module")
def sheet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[dict[str, str]]]:
    """A store with one imported batch (task ids a spreadsheet rewrites: ``007``, a
    formula) and the sheet sampled from it; returns the store, batch id and sheet rows."""
    root = tmp_path_factory.mktemp("sheet")
    store = root / "runs.db"
    batch = _import(store, _failures(["007", "=cmd", "plain"]))
    _import(store, _failures(["other"]), "other.jsonl")
    code, _, err = _invoke(
        "sample-failures", batch, "--n", "6", "--out", str(root / "s"), "--store", str(store)
    )
    assert code == 0, err
    with (root / "s" / "sheet.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return store, batch, rows


def _labelled(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    given = ["planning;recovery", "perception", "", "tool_selection", "evaluator_defect", ""]
    return [
        {**r, "labels": x, "note": f"n{i}"}
        for i, (r, x) in enumerate(zip(rows, given, strict=True))
    ]


def _csv_text(rows: list[dict[str, str]], delimiter: str = ",", newline: str = "\r\n") -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, list(rows[0]), delimiter=delimiter, lineterminator=newline)
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _stored(store: Path, batch: str) -> dict[str, tuple[tuple[str, ...], str]]:
    with RunStore(store) as runs:
        return {x.run_id: (tuple(x.labels), x.note) for x in runs.labels(batch)}


def _import_labels(
    tmp_path: Path, store: Path, name: str, data: bytes | str, annotator: str = "ann"
) -> tuple[int, str]:
    copy = tmp_path / "copy.db"
    shutil.copy(store, copy)
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    code, _, err = _invoke(
        "labels", "import", str(path), "--annotator", annotator, "--taxonomy",
        str(store.parent / "s" / "taxonomy.yaml"), "--store", str(copy),
    )  # fmt: skip
    return code, err


# --- label files from spreadsheets ------------------------------------------------------------

SPREADSHEET_FORMS: dict[str, Callable[[list[dict[str, str]]], bytes | str]] = {
    "excel utf-8 (bom, crlf)": lambda rows: codecs.BOM_UTF8 + _csv_text(rows).encode(),
    "semicolon locale": lambda rows: codecs.BOM_UTF8 + _csv_text(rows, ";").encode(),
    "unicode text (utf-16, tabs)": lambda rows: _csv_text(rows, "\t").encode("utf-16"),
    "unix newlines": lambda rows: _csv_text(rows, newline="\n"),
    "old mac newlines, semicolons": lambda rows: _csv_text(rows, ";", newline="\r"),
    "trailing empty rows": lambda rows: _csv_text(rows) + ",,,,,,,,\r\n" * 3 + " ,\r\n",
    "header in title case": lambda rows: _csv_text(
        [{k.title(): v for k, v in r.items()} for r in rows]
    ),
    "rows reordered": lambda rows: _csv_text(rows[::-1]),
    "extra and missing columns": lambda rows: _csv_text(
        [
            {"note": r["note"], "labels": r["labels"], "run_id": r["run_id"], "mine": "x"}
            for r in rows
        ]
    ),
    "labels separated by commas and spaces": lambda rows: _csv_text(
        [{**r, "labels": r["labels"].replace(";", ", ")} for r in rows]
    ),
    "labels capitalised": lambda rows: _csv_text(
        [{**r, "labels": r["labels"].title()} for r in rows]
    ),
    "task ids as a spreadsheet saves them": lambda rows: _csv_text(
        [{**r, "task_id": r["task_id"].lstrip("0'")} for r in rows]
    ),
}


@pytest.mark.parametrize("form", SPREADSHEET_FORMS)
def test_a_sheet_saved_by_a_spreadsheet_stores_the_same_labels(
    sheet: tuple[Path, str, list[dict[str, str]]], tmp_path: Path, form: str
) -> None:
    store, batch, rows = sheet
    code, err = _import_labels(tmp_path, store, "plain.csv", _csv_text(_labelled(rows)))
    assert code == 0, err
    want = _stored(tmp_path / "copy.db", batch)
    assert len(want) == 4 and ("planning", "recovery") in {v[0] for v in want.values()}
    saved = SPREADSHEET_FORMS[form](_labelled(rows))
    code, err = _import_labels(tmp_path, store, "saved.csv", saved)
    assert code == 0, err
    assert _stored(tmp_path / "copy.db", batch) == want


@pytest.mark.parametrize("name", ["unicode.txt", "tabs.tsv"])
def test_a_spreadsheets_text_export_imports_under_its_own_suffix(
    sheet: tuple[Path, str, list[dict[str, str]]], tmp_path: Path, name: str
) -> None:
    store, batch, rows = sheet
    text = _csv_text(_labelled(rows), "\t")
    code, err = _import_labels(tmp_path, store, name, text.encode("utf-16"))
    assert code == 0, err
    assert len(_stored(tmp_path / "copy.db", batch)) == 4


def test_notes_keep_their_line_breaks_and_line_numbers_count_the_files_lines(
    sheet: tuple[Path, str, list[dict[str, str]]], tmp_path: Path
) -> None:
    _, _, rows = sheet
    notes = ["first\nsecond", "a\u2028b\x85c", "tab\there"]
    labelled = [{**r, "labels": "planning", "note": n} for r, n in zip(rows, notes, strict=False)]
    path = tmp_path / "notes.csv"
    path.write_text(_csv_text(labelled), newline="")
    read = read_label_file(path, TAXONOMY)
    assert [r.note for r in read] == notes
    assert [r.line for r in read] == [3, 4, 5]  # the first row spans lines 2 and 3
    jsonl = tmp_path / "notes.jsonl"
    jsonl.write_text(
        "".join(json.dumps({**r, "labels": ["planning"]}, ensure_ascii=False) + "\n"
                for r in labelled)
    )  # fmt: skip
    assert [r.note for r in read_label_file(jsonl, TAXONOMY)] == notes


def test_jsonl_null_labels_are_unlabelled_rows(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(
        '{"run_id": "r1", "labels": null}\r\n'
        '{"run_id": "r2", "labels": ["planning"], "note": null}\r\n'
    )
    assert [(r.run_id, r.labels, r.note) for r in read_label_file(path, TAXONOMY)] == [
        ("r2", ("planning",), "")
    ]


def test_a_json_array_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text('[\n  {"run_id": "r1", "labels": ["planning"]}\n]\n')
    with pytest.raises(GroundstateError, match=r"a\.json: a JSON array: labels are read as JSON"):
        read_label_file(path, TAXONOMY)


def test_a_jsonl_key_given_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"run_id": "r1", "labels": ["planning"], "labels": []}\n')
    with pytest.raises(GroundstateError, match=r"a\.jsonl:1: not JSON: key 'labels' appears twice"):
        read_label_file(path, TAXONOMY)


def _scramble(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    # one column moved on its own (a sort or paste of the run ids alone): each row now names
    # the next row's run, the rest of the row stays
    ids = [r["run_id"] for r in rows]
    return [{**r, "run_id": i} for r, i in zip(rows, ids[1:] + ids[:1], strict=True)]


REFUSED: dict[str, tuple[Callable[[list[dict[str, str]]], bytes | str], str]] = {
    "an unquoted list of labels": (
        lambda rows: "run_id,labels\n" + rows[0]["run_id"] + ",planning,recovery\n",
        r"bad\.csv:2: 3 cells, but the header has 2 columns",
    ),
    "a column named twice": (
        lambda rows: "run_id,labels,Labels\n" + rows[0]["run_id"] + ",planning,recovery\n",
        r"bad\.csv:1: column 'labels' appears twice",
    ),
    "an unterminated quote": (
        lambda rows: f'run_id,labels\n{rows[0]["run_id"]},"planning\n',
        r"bad\.csv:2: not valid CSV: unexpected end of data",
    ),
    "a cell past the csv field limit": (
        lambda rows: _csv_text([{**_labelled(rows)[0], "note": "x" * 200_000}]),
        r"bad\.csv:2: not valid CSV: field larger than field limit",
    ),
    "a windows-1252 file": (
        lambda rows: _csv_text([{**_labelled(rows)[0], "note": "café"}]).encode("cp1252"),
        r"bad\.csv: not UTF-8 text \(byte 0xe9 at offset \d+\)",
    ),
    "a label outside the taxonomy": (
        lambda rows: _csv_text([{**_labelled(rows)[0], "labels": "planning;plannning"}]),
        r"bad\.csv:2: label 'plannning' is not in taxonomy groundstate-default@1",
    ),
    "a run id in another case": (
        lambda rows: _csv_text([{**_labelled(rows)[0], "run_id": rows[0]["run_id"].upper()}]),
        r"bad\.csv:2: no run [0-9A-F]+ in the store",
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_malformed_label_file_is_one_line_and_stores_nothing(
    sheet: tuple[Path, str, list[dict[str, str]]], tmp_path: Path, case: str
) -> None:
    store, batch, rows = sheet
    make, message = REFUSED[case]
    code, err = _import_labels(tmp_path, store, "bad.csv", make(rows))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert __import__("re").search(message, err), err
    assert _stored(tmp_path / "copy.db", batch) == {}


def test_rows_scrambled_apart_from_their_run_ids_are_refused(
    sheet: tuple[Path, str, list[dict[str, str]]], tmp_path: Path
) -> None:
    store, batch, rows = sheet
    labelled = [{**r, "labels": "planning"} for r in rows]
    code, err = _import_labels(tmp_path, store, "sorted.csv", _csv_text(_scramble(labelled)))
    assert code == 2 and "were the rows reordered apart from their run ids" in err, err
    assert _stored(tmp_path / "copy.db", batch) == {}
    jsonl = "".join(
        json.dumps({**r, "labels": ["planning"], "attempt": int(r["attempt"]) + 1}) + "\n"
        for r in rows[:1]
    )
    code, err = _import_labels(tmp_path, store, "shifted.jsonl", jsonl)
    assert code == 2 and "attempt " in err and "is not run" in err, err


def test_runs_of_another_batch_or_that_succeeded_are_refused(
    sheet: tuple[Path, str, list[dict[str, str]]], tmp_path: Path
) -> None:
    store, batch, rows = sheet
    with RunStore(store) as runs:
        other_batch = next(b.batch_id for b in runs.batches() if b.batch_id != batch)
        other = next(r for r in runs.runs(other_batch) if not r.success)
        passed = next(r for r in runs.runs(batch) if r.success)
    mixed = [{"run_id": rows[0]["run_id"], "labels": "planning"},
             {"run_id": other.run_id, "labels": "planning"}]  # fmt: skip
    code, err = _import_labels(tmp_path, store, "mixed.csv", _csv_text(mixed))
    assert code == 2 and f"mixed.csv:3: run {other.run_id} is of batch {other_batch}" in err, err
    assert "a sheet labels the runs of one batch" in err
    ok = [{"run_id": passed.run_id, "labels": "evaluator_defect"}]
    code, err = _import_labels(tmp_path, store, "ok.csv", _csv_text(ok))
    assert code == 2 and f"run {passed.run_id} succeeded: failure labels are for failed" in err
    assert _stored(tmp_path / "copy.db", batch) == {}


# --- agreement of stored labels -------------------------------------------------------------


def test_annotator_ids_that_look_like_markup_are_printed_as_text(
    sheet: tuple[Path, str, list[dict[str, str]]], tmp_path: Path
) -> None:
    store, batch, rows = sheet
    copy = tmp_path / "copy.db"
    shutil.copy(store, copy)
    taxonomy = str(store.parent / "s" / "taxonomy.yaml")
    for name, labels in (("[/bold]", "planning"), ("[red]bob", "recovery")):
        path = tmp_path / "l.csv"
        path.write_text(_csv_text([{**r, "labels": labels} for r in rows]))
        code, _, err = _invoke("labels", "import", str(path), "--annotator", name,
                               "--taxonomy", taxonomy, "--store", str(copy))  # fmt: skip
        assert code == 0, err
    code, out, err = _invoke("labels", "agreement", batch, "--taxonomy", taxonomy,
                             "--store", str(copy))  # fmt: skip
    assert code == 0, err
    assert "[/bold], [red]bob" in out


def test_a_taxonomy_edited_without_a_new_version_is_named(
    sheet: tuple[Path, str, list[dict[str, str]]], tmp_path: Path
) -> None:
    store, batch, rows = sheet
    copy = tmp_path / "copy.db"
    shutil.copy(store, copy)
    edited = TAXONOMY.model_dump()
    edited["labels"].append({"id": "hallucination", "description": "made it up"})
    folder = tmp_path / "annotator"
    folder.mkdir()
    (folder / "taxonomy.yaml").write_text(yaml.safe_dump(edited))  # same name@version
    for name, labels in (("ann", "hallucination"), ("bob", "planning")):
        path = folder / f"{name}.csv"
        path.write_text(_csv_text([{**r, "labels": labels} for r in rows]))
        code, _, err = _invoke("labels", "import", str(path), "--annotator", name,
                               "--store", str(copy))  # fmt: skip
        assert code == 0, err
    sheet_taxonomy = str(store.parent / "s" / "taxonomy.yaml")
    code, _, err = _invoke(
        "labels", "agreement", batch, "--taxonomy", sheet_taxonomy, "--store", str(copy)
    )
    assert code == 2 and "label hallucination is not in taxonomy groundstate-default@1" in err, err
    assert str(folder / "taxonomy.yaml") in err  # where the labels' own taxonomy is
    code, _, err = _invoke("labels", "agreement", batch, "--taxonomy",
                           str(folder / "taxonomy.yaml"), "--store", str(copy))  # fmt: skip
    assert code == 0, err


DEFECT = "labels:\n  - id: evaluator_defect\n    description: the grader was wrong\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: 'a@2'\nversion: 1\n" + DEFECT, r"name: a name without '@'"),
        ("name: ' a'\nversion: 1\n" + DEFECT, r"name: a name without '@'"),
        ("name: a\nversion: true\n" + DEFECT, r"version: Input should be a valid integer"),
        ("name: a\nversion: '2'\n" + DEFECT, r"version: Input should be a valid integer"),
        ("name: a\nversion: 0\n" + DEFECT, r"version: Input should be greater than or equal"),
        (
            "name: a\nversion: 1\nlabels:\n  - id: evaluator_defect\n    description: ' '\n",
            r"labels\[0\]\.description: say what counts as this failure",
        ),
        ("name: a\nversion: 1\nlabels: &l [*l]\n", r"an alias refers to a node that contains it"),
        (
            "name: a\nversion: 1\nlabels:\n  - &x {id: planning, description: p}\n  - *x\n",
            r"label ids repeat: planning",
        ),
    ],
    ids=["at", "spaces", "bool", "text", "zero", "blank", "cyclic", "repeated alias"],
)
def test_malformed_taxonomy_files_name_the_field(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "taxonomy.yaml"
    path.write_text(text)
    with pytest.raises(SpecError, match=message):
        load_taxonomy(path)


# --- sampling ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def slice_batch(tmp_path_factory: pytest.TempPathFactory) -> tuple[BatchInfo, list[AgentRun]]:
    """Failures of tasks whose slice labels would collide as text: ``a,b`` against ``a``
    and ``b``, ``-`` against none; one run in each rare stratum, many in a common one."""
    store = tmp_path_factory.mktemp("strata") / "runs.db"
    slices = {"comma": ["a,b"], "pair": ["a", "b"], "dash": ["-"], "none": []}
    rows = [
        {"task_id": t, "attempt": 0, "success": False, "slice_labels": s} for t, s in slices.items()
    ]
    rows += [
        {"task_id": f"common{i}", "attempt": a, "success": False, "slice_labels": ["c"]}
        for i in range(10) for a in range(3)
    ]  # fmt: skip
    batch = _import(store, rows)
    with RunStore(store) as runs:
        return runs.batch(batch), runs.runs(batch)


def test_slice_labels_that_read_alike_are_separate_strata(
    slice_batch: tuple[BatchInfo, list[AgentRun]],
) -> None:
    batch, runs = slice_batch
    sample = sample_failures(batch, runs, 5, seed=0)
    # five strata, five places: each rare one is drawn, none merged with its look-alike
    assert {"comma", "pair", "dash", "none"} <= {r.task_id for r in sample}
    assert stratum(batch, runs[0]).startswith("agent_failure | ")


def test_the_sample_depends_on_the_seed_not_on_the_order_runs_are_read(
    slice_batch: tuple[BatchInfo, list[AgentRun]],
) -> None:
    batch, runs = slice_batch
    for n in (1, 3, 7, 34, 500):
        first = [r.run_id for r in sample_failures(batch, runs, n, seed=11)]
        for order in range(5):
            shuffled = list(runs)
            random.Random(order).shuffle(shuffled)
            assert [r.run_id for r in sample_failures(batch, shuffled, n, seed=11)] == first
        assert len(first) == min(n, 34) and len(set(first)) == len(first)
    seeds = {tuple(r.run_id for r in sample_failures(batch, runs, 7, seed=s)) for s in range(8)}
    assert len(seeds) > 1


def test_fewer_places_than_strata_go_to_the_largest(
    slice_batch: tuple[BatchInfo, list[AgentRun]],
) -> None:
    batch, runs = slice_batch
    for seed in range(6):
        (only,) = sample_failures(batch, runs, 1, seed=seed)
        assert only.task_id.startswith("common")


# --- grader agreement ---------------------------------------------------------------------------


def test_an_invalid_attempt_has_no_verdict_to_agree_with(
    slice_batch: tuple[BatchInfo, list[AgentRun]],
) -> None:
    _, runs = slice_batch
    a = [r for r in runs if r.task_id.startswith("common")][:4]
    b = [a[0].model_copy(update={"terminal_reason": "environment_failure/setup"}), *a[1:]]
    result = verdict_agreement(a, b, "success")
    # nor a verdict to disagree with (round 33: judged pairs only, invalid ones counted apart)
    assert result.confusion == {"false": {"false": 3}} and result.disagreements == []
    assert (result.judged, result.invalid_a_only, result.invalid_b_only) == (3, 0, 1)
    assert result.one_sided[0]["b"] == "invalid"
    same = verdict_agreement(b, b, "success")
    assert same.agreement.percent_agreement == 1.0 and same.agreement.units == 3
    assert same.confusion == {"false": {"false": 3}} and same.invalid_both == 1


# --- agreement on degenerate input, recomputed ----------------------------------------------


def _kappa(pairs: list[tuple[str, str]]) -> float | None:
    n = len(pairs)
    cats = {v for p in pairs for v in p}
    po = Fraction(sum(x == y for x, y in pairs), n)
    pe = sum(Fraction(sum(x == c for x, _ in pairs) * sum(y == c for _, y in pairs), n * n)
             for c in cats)  # fmt: skip
    return None if pe == 1 else float((po - pe) / (1 - pe))


@pytest.mark.parametrize(
    "rows",
    [
        [["a", "b"]],  # one unit, disagreeing: p_o 0, p_e 0 -> 0
        [["a", "a"]],  # one unit, agreeing: one category, undefined
        [["a", "a"]] * 9,  # everyone gives the same label: undefined, not perfect
        [["a", "b"], ["b", "a"]],  # opposed: -1
        [["a", "a"], ["b", "b"]],  # two units, perfect: 1
        [["a", None], [None, "b"]],  # never both rated: nothing to measure
    ],
)
def test_two_raters_on_degenerate_input(rows: list[list[str | None]]) -> None:
    got = agreement(rows)
    pairs = [(x, y) for x, y in rows if x is not None and y is not None]
    want = _kappa(pairs) if pairs else None
    assert (got.cohen_kappa is None) == (want is None)
    if want is not None:
        assert got.cohen_kappa == pytest.approx(want)
        assert got.fleiss_kappa is not None  # Scott's pi: same p_o, pooled p_e
    assert got.cohen_units == got.fleiss_units == len(pairs)
    if not pairs:
        assert (got.percent_agreement, got.krippendorff_alpha, got.alpha_units) == (None, None, 0)


def test_one_rater_uses_no_unit_for_any_statistic() -> None:
    got = agreement([["a"], ["b"], ["a"]])
    assert (got.raters, got.units) == (1, 3)
    assert (got.cohen_kappa, got.fleiss_kappa, got.krippendorff_alpha) == (None, None, None)
    assert (got.cohen_units, got.fleiss_units, got.alpha_units) == (0, 0, 0)


def test_annotators_who_labelled_disjoint_runs_have_no_agreement() -> None:
    result = multilabel_agreement(
        {"r1": {"ann": frozenset({"planning"})}, "r2": {"bob": frozenset({"planning"})}},
        TAXONOMY.ids,
    )
    for part in (result.overall, result.exact_set, *(x.agreement for x in result.per_label)):
        assert part.cohen_kappa is None and part.krippendorff_alpha is None
        assert part.percent_agreement is None and part.cohen_units == 0


# --- planning on degenerate pilots, recomputed ------------------------------------------------


def _counts(cells: list[tuple[int, int]]) -> list[TaskCounts]:
    return [TaskCounts(f"t{i}", n, c, 0, 1.0, (), None, "") for i, (n, c) in enumerate(cells)]


@pytest.mark.parametrize(
    "pilots",
    [
        [[(3, 3), (3, 3)]],  # every attempt passes
        [[(2, 0), (5, 0), (1, 0)]],  # every attempt fails, unequal attempts
        [[(3, 3), (3, 0)], [(3, 3), (3, 0)]],  # deterministic and alike in both pilots
        [[(3, 0), (3, 0)], [(3, 3), (3, 3)]],  # B always passes what A always fails
    ],
)
def test_a_pilot_without_variation_is_refused_not_promised_power_one(
    pilots: list[list[tuple[int, int]]],
) -> None:
    with pytest.raises(PlanningError, match="shows no variation"):
        plan([_counts(p) for p in pilots])


def test_plan_command_refuses_a_pilot_without_variation(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    rows = [{"task_id": t, "attempt": a, "success": True} for t in "ab" for a in range(3)]
    batch = _import(store, rows)
    code, _, err = _invoke("plan", batch, "--json", "--store", str(store))
    assert code == 2 and "shows no variation" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "cells",
    [
        [(2, 1), (2, 1)],  # all within-task noise, no between-task spread
        [(2, 2), (2, 0)],  # all between-task spread, no noise
        [(2, 1), (1, 1), (1, 0)],  # one task alone gives the within variance
    ],
)
def test_smallest_pilots_match_the_method_of_moments_exactly(
    cells: list[tuple[int, int]],
) -> None:
    rates = [Fraction(c, n) for n, c in cells]
    within = [r * (1 - r) * n / (n - 1) for r, (n, _) in zip(rates, cells, strict=True) if n >= 2]
    sw = sum(within) / len(within)
    mean = sum(rates) / len(rates)
    spread = sum((r - mean) ** 2 for r in rates) / (len(rates) - 1)
    sb = max(Fraction(0), spread - sum(sw / n for n, _ in cells) / len(cells))
    got = plan([_counts(cells)], delta=0.2)
    assert got.components[0].within == pytest.approx(float(sw), abs=1e-12)
    assert got.components[0].between == pytest.approx(float(sb), abs=1e-12)

    def t_power(t: int, k: int) -> float:
        """compare's paired t test on t - 1 df, by the noncentral t (thirteenth round)."""
        if t < 5:  # compare gives no p-value over fewer (round 7)
            return 0.0
        se = math.sqrt(float(2 * sb / t + 2 * sw / (t * k)))
        crit = scipy_stats.t.isf(0.025, t - 1)
        nct = scipy_stats.nct(t - 1, 0.2 / se)
        # scipy's noncentral t is NaN where a tail underflows (below 1e-160): that tail is 0
        upper, lower = float(nct.sf(crit)), float(nct.cdf(-crit))
        return (1.0 if math.isnan(upper) else upper) + (0.0 if math.isnan(lower) else lower)

    for k, tasks in got.tasks_needed.items():
        assert t_power(tasks, k) >= 0.8 - 1e-9
        assert tasks == 5 or t_power(tasks - 1, k) < 0.8 + 1e-9
    for t, row in got.power_grid.items():
        for k, power in row.items():
            assert power == pytest.approx(t_power(t, k), abs=1e-9)


def test_a_pilot_of_one_task_or_one_attempt_each_is_refused() -> None:
    with pytest.raises(PlanningError, match="planning needs at least 2"):
        plan([_counts([(4, 2)])])
    with pytest.raises(PlanningError, match="--attempts 2"):
        plan([_counts([(1, 1), (1, 0), (1, 1)])])
    elsewhere = [TaskCounts(t, 4, 3, 0, 1.0, (), None, "") for t in ("t0", "x1")]
    with pytest.raises(GroundstateError, match="share 1 task"):
        plan([_counts([(4, 2), (4, 1)]), elsewhere])


def test_a_negative_seed_is_refused_by_name(
    slice_batch: tuple[BatchInfo, list[AgentRun]], tmp_path: Path
) -> None:
    batch, runs = slice_batch
    with pytest.raises(GroundstateError, match="--seed must be 0 or more, got -1"):
        sample_failures(batch, runs, 3, seed=-1)
    code, _, err = _invoke(
        "sample-failures", "x", "--n", "1", "--seed", "-1", "--out", str(tmp_path / "s")
    )
    assert code == 2 and "'--seed': -1 is not in the range" in err


def test_an_imported_batch_says_why_it_has_no_suite(
    sheet: tuple[Path, str, list[dict[str, str]]], tmp_path: Path
) -> None:
    store, batch, rows = sheet
    copy = tmp_path / "copy.db"
    shutil.copy(store, copy)
    code, _, err = _invoke("sample-failures", batch, "--n", "1", "--out", str(tmp_path / "s"),
                           "--store", str(copy))  # fmt: skip
    assert code == 0 and f"batch {batch} was imported (it has no suite folder)" in err
    assert "have no trajectory or grader evidence, so the sheet shows their verdicts only" in err
    final = tmp_path / "final.csv"
    final.write_text(_csv_text([{**r, "labels": "evaluator_defect"} for r in rows]))
    taxonomy = str(store.parent / "s" / "taxonomy.yaml")
    code, _, err = _invoke(
        "labels", "adjudicate", str(final), "--taxonomy", taxonomy, "--store", str(copy)
    )
    assert code == 0, err
    code, _, err = _invoke("labels", "regress", batch, "--into", str(tmp_path / "r"),
                           "--store", str(copy))  # fmt: skip
    assert code == 2 and "was imported from another harness: its runs have no recorded" in err


# --- choosing tasks ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "chosen"),
    [
        ("refund[v2]", ("refund[v2]",)),  # found as it is, though it reads as a wildcard
        ("refund[v2", ("refund[v2]",)),
        ("refund?v", ("refund?v",)),
        ("refund[v]2", ("refundv2",)),  # a wildcard still matches the whole id
        ("*]", ("refund[v2]",)),
    ],
)
def test_a_pattern_found_as_it_is_in_a_task_id_selects_it(
    pattern: str, chosen: tuple[str, ...]
) -> None:
    from types import SimpleNamespace
    from typing import cast

    from groundstate.selection import select_tasks
    from groundstate.spec.suite import Suite

    tasks = {t: SimpleNamespace(task_id=t, slice_labels=[]) for t in
             ("refund[v2]", "refundv2", "refund?v", "refund")}  # fmt: skip
    suite = cast(Suite, SimpleNamespace(name="s", tasks=tasks))
    assert select_tasks(suite, patterns=[pattern]) == chosen


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ({"alpha": 1e-20}, "--alpha must lie in"),  # 1 - alpha/2 rounds to 1: no quantile
        ({"delta": 1e-300}, "--delta must lie in"),  # delta^2 underflows to 0
        ({"delta": float("nan")}, "--delta must lie in"),
        ({"power": 1 - 1e-17}, "--power must lie in"),  # rounds to 1
    ],
)
def test_targets_that_floats_cannot_carry_are_refused(
    target: dict[str, float], message: str
) -> None:
    with pytest.raises(PlanningError, match=message):
        plan([_counts([(3, 1), (3, 2), (3, 0)])], **target)


def test_a_power_below_half_alpha_needs_the_fewest_tasks_not_more() -> None:
    """(z_{1-alpha/2} + z_power) is negative there: squaring it asked for thousands of
    tasks for a power any suite has."""
    pilot = _counts([(3, 1), (3, 2), (3, 0)])
    low = plan([pilot], power=0.01)
    assert set(low.tasks_needed.values()) == {5}  # the fewest compare tests (round 7)
    assert all(
        p >= 0.05 - 1e-12 for t, row in low.power_grid.items() if t >= 5 for p in row.values()
    )
    assert plan([pilot], power=0.1).tasks_needed[1] < plan([pilot], power=0.5).tasks_needed[1]


# --- two labellers disagreeing, through the CLI, recomputed ---------------------------------


def test_labels_agreement_json_equals_an_independent_count(
    sheet: tuple[Path, str, list[dict[str, str]]], tmp_path: Path
) -> None:
    store, batch, rows = sheet
    copy = tmp_path / "copy.db"
    shutil.copy(store, copy)
    given = {
        "ann": ["planning;recovery", "planning", "perception", "", "tool_selection", "planning"],
        "bob": ["planning", "recovery", "perception", "planning", "", "planning;recovery"],
    }
    taxonomy = str(store.parent / "s" / "taxonomy.yaml")
    for name, labels in given.items():
        path = tmp_path / f"{name}.csv"
        path.write_text(
            _csv_text([{**r, "labels": x} for r, x in zip(rows, labels, strict=True)], ";")
        )
        code, _, err = _invoke("labels", "import", str(path), "--annotator", name,
                               "--taxonomy", taxonomy, "--store", str(copy))  # fmt: skip
        assert code == 0, err
    code, out, err = _invoke("labels", "agreement", batch, "--json", "--taxonomy", taxonomy,
                             "--store", str(copy))  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    sets = {
        name: [frozenset(x.split(";")) if x else None for x in labels]
        for name, labels in given.items()
    }
    units = list(zip(sets["ann"], sets["bob"], strict=True))
    both = [(a, b) for a, b in units if a is not None and b is not None]
    assert data["units"] == 6 and data["annotators"] == ["ann", "bob"]
    pooled: list[list[str | None]] = []
    for entry in data["per_label"]:
        label = entry["label"]
        binary = [[None if s is None else "yes" if label in s else "no" for s in u]
                  for u in units]  # fmt: skip
        pooled += binary
        pairs = [(str(label in a), str(label in b)) for a, b in both]
        assert entry["positives"] == sum(label in s for u in units for s in u if s is not None)
        got = entry["agreement"]
        assert got["cohen_units"] == len(both) == 4
        # 4 runs: fewer than the 5 units a kappa or alpha needs (since round 34), n/a, with why
        _withheld(got, ref_cohen(pairs), ref_alpha(binary))
    _same(data["overall"]["krippendorff_alpha"], ref_alpha(pooled))
    exact = [[",".join(sorted(s)) if s is not None else None for s in u] for u in units]
    want_cohen = ref_cohen([(x, y) for x, y in exact if x and y])
    _withheld(data["exact_set"], want_cohen, ref_alpha(exact))


def _withheld(got: dict[str, Any], *defined: float | None) -> None:
    """A kappa and alpha over fewer than 5 units: None, and named in the note if defined."""
    assert got["cohen_kappa"] is None and got["krippendorff_alpha"] is None
    if any(x is not None for x in defined):
        assert "at least 5 units" in got["note"]


def _same(got: float | None, want: float | None) -> None:
    assert (got is None) == (want is None), (got, want)
    if want is not None:
        assert got == pytest.approx(want, abs=1e-12)


def test_a_sheet_is_never_written_over_a_taxonomy_file(
    sheet: tuple[Path, str, list[dict[str, str]]], tmp_path: Path
) -> None:
    store, batch, _ = sheet
    suite_like = tmp_path / "suite"
    suite_like.mkdir()
    mine = "# our own, with comments\nname: mine\nversion: 3\n" + DEFECT
    (suite_like / "taxonomy.yaml").write_text(mine)
    code, _, err = _invoke("sample-failures", batch, "--n", "1", "--out", str(suite_like),
                           "--store", str(store))  # fmt: skip
    assert code == 2 and "taxonomy.yaml exists: choose another --out folder" in err
    assert (suite_like / "taxonomy.yaml").read_text() == mine
    assert not (suite_like / "sheet.csv").exists()


def test_a_sheet_against_a_store_whose_verdict_differs_is_refused(
    sheet: tuple[Path, str, list[dict[str, str]]], tmp_path: Path
) -> None:
    """The sheet showed one verdict, the store now holds another (a copy of the store with
    the same run ids, restored from elsewhere): the annotator labelled another failure."""
    store, _, rows = sheet
    shown = [{**rows[0], "labels": "planning", "terminal_reason": "agent_failure/step_limit"}]
    code, err = _import_labels(tmp_path, store, "stale.csv", _csv_text(shown))
    assert code == 2 and "terminal_reason 'agent_failure/step_limit' is not run" in err, err
    assert "another store than the sheet's" in err


LABEL_IDS = ("planning", "recovery", "perception")
label_sets = st.one_of(st.none(), st.frozensets(st.sampled_from(LABEL_IDS), min_size=1))


@settings(max_examples=120, deadline=None)
@given(st.lists(st.lists(label_sets, min_size=3, max_size=3), min_size=1, max_size=12))
def test_multilabel_agreement_matches_an_independent_reference(
    table: list[list[frozenset[str] | None]],
) -> None:
    """Three annotators, missing ratings, one unit or many, one label everywhere or none:
    per label (present/absent), pooled over labels, and whole sets, against the reference."""
    labelled = {
        f"r{i}": {a: s for a, s in zip("abc", row, strict=True) if s is not None}
        for i, row in enumerate(table)
    }
    labelled = {u: rated for u, rated in labelled.items() if rated}
    if len({a for rated in labelled.values() for a in rated}) < 2:
        return
    got = multilabel_agreement(labelled, LABEL_IDS)
    names = sorted({a for rated in labelled.values() for a in rated})
    rows = [[labelled[u].get(a) for a in names] for u in sorted(labelled)]
    pooled: list[list[str | None]] = []
    for part in got.per_label:
        binary = [[None if s is None else str(part.label in s) for s in row] for row in rows]
        pooled += binary
        _same(part.agreement.krippendorff_alpha, ref_alpha(binary))
        complete = [r for r in binary if None not in r]
        _same(part.agreement.fleiss_kappa, ref_fleiss(complete) if complete else None)  # type: ignore[arg-type]
        assert part.positives == sum(part.label in s for r in rows for s in r if s is not None)
    _same(got.overall.krippendorff_alpha, ref_alpha(pooled))
    sets = [[None if s is None else ",".join(sorted(s)) for s in row] for row in rows]
    _same(got.exact_set.krippendorff_alpha, ref_alpha(sets))
    assert got.units == len(labelled)


def test_an_imported_batch_is_not_regraded_from_trajectories_it_does_not_have(
    tmp_path: Path,
) -> None:
    """Verdicts of the bank's own task, imported (say from an export): replaying their empty
    trajectories would make every success a grader "disagreement"."""
    store = tmp_path / "runs.db"
    batch = _import(store, [{"task_id": "transfer", "attempt": a, "success": True} for a in (1, 2)])
    bank = Path(__file__).parent / "suites" / "bank"
    code, _, err = _invoke("agreement", batch, "--regrade", str(bank), "--store", str(store))
    assert code == 2 and "was imported from another harness: it has no recorded trajectory" in err
