"""Forty-seventh round: imports.

Task ids that differ only in letter case (``Task-1``, ``task-1``), in a letter of another
script drawn like a Latin one (a Cyrillic a, U+0430, in ``task``; a Greek omicron), in a
fullwidth letter or digit, or in a hyphen (a non-breaking one) were stored as two tasks
without a word: the round-46 warning compared ids in NFC form only. They are compared by a
skeleton now (:func:`groundstate.lookalike.skeleton`), and named in the same warning.

The row format read ``"yes"`` (and ``"no"``) in ``success`` as a verdict: only ``true`` and
``false`` (any letter case), ``1`` and ``0`` (``1.0``, ``0.0``) are read now.

A CSV cell was capped at the ``csv`` module's 128 Ki characters (``field larger than field
limit (131072)``) while a JSON Lines row holds up to 64 Mi: a CSV cell may hold a line's
limit now, a row is bounded by it as a JSON Lines row is, and the module's limit, global to
the process, is put back after each row.

A file whose NULs say it is no UTF-8 text (UTF-16 without a byte-order mark, the zeros a
crash leaves at a file's end) was refused for something else ("task_id: required, and
missing or blank", "Expecting value", "cannot tell its format"): it is named as what it is.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from groundstate.importers import table
from tests.test_imports_formats import Store, sample, tau, write_eval, write_json
from tests.test_imports_round4 import simulation, tau2_file
from tests.test_imports_round14 import tb_run, tb_trial
from tests.test_imports_round43 import _imported


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def _row(task: Any, attempt: int, success: Any) -> dict[str, Any]:
    return {"task_id": task, "attempt": attempt, "success": success}


def _lookalike_warning(err: str) -> str:
    lines = [line for line in err.splitlines() if "show alike" in line]
    assert len(lines) == 1, err
    return lines[0]


# --- look-alike ids: case, other scripts, fullwidth forms, hyphens ------------------------

CYRILLIC_A = "t\u0430sk"
"""``task`` with a Cyrillic a."""


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("task", CYRILLIC_A),
        ("ok-1", "\u03bfk-1"),  # a Greek omicron
        ("Task-1", "task-1"),  # letter case
        ("TASK-1", "task-1"),
        ("\u0422ASK", "task"),  # a Cyrillic capital T, and case
        ("\u04ba1", "h1"),  # a Cyrillic capital shha: folded to its small letter, then to h
        ("task1", "\uff54\uff41\uff53\uff4b\uff11"),  # fullwidth letters and digit
        ("task-1", "task\u20111"),  # a non-breaking hyphen
        ("t1", "t\u0661"),  # an Arabic-Indic digit one
        ("\u039f\u039a", "ok"),  # Greek capitals omicron and kappa
    ],
)
def test_ids_that_read_alike_are_named(
    store: Store, tmp_path: Path, first: str, second: str
) -> None:
    path = _rows(tmp_path / "r.jsonl", [_row(first, 0, True), _row(second, 1, False)])
    batch, err = _imported(store, path)
    line = _lookalike_warning(err)
    assert str(path) in line
    assert f"{first!a} (on line 1) and {second!a} (on line 2)" in line
    assert "letter case" in line and "another script" in line
    assert set(store.runs(batch)) == {(first, 1, 0), (second, 2, 0)}  # kept as written


def test_case_differences_in_a_csv_are_named(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("task_id,attempt,success\nFix-Git,0,true\nfix-git,1,false\nsolo,0,true\n")
    batch, err = _imported(store, path)
    line = _lookalike_warning(err)
    assert line.startswith(f"warning: {path}: ")
    assert "'Fix-Git' (on line 2) and 'fix-git' (on line 3)" in line
    assert "solo" not in line
    assert len(store.runs(batch)) == 3


def test_a_third_look_alike_is_paired_with_the_first(store: Store, tmp_path: Path) -> None:
    rows = [_row("Task", 0, True), _row("task", 0, False), _row("t\u0430sk", 0, True)]
    line = _lookalike_warning(_imported(store, _rows(tmp_path / "r.jsonl", rows))[1])
    assert "'Task' (on line 1) and 'task' (on line 2)" in line
    assert "'Task' (on line 1) and 't\\u0430sk' (on line 3)" in line


@pytest.mark.parametrize("harness", ["tau-bench", "tau2-bench", "terminal-bench", "inspect"])
def test_every_harness_names_case_and_script_look_alikes(
    store: Store, tmp_path: Path, harness: str
) -> None:
    a, b = "Task", CYRILLIC_A
    if harness == "tau-bench":
        path = write_json(tmp_path / "tau.json", [tau(a, 0, 1.0), tau(b, 1, 0.0)])
    elif harness == "tau2-bench":
        sims = [simulation(a, 0, 1.0), simulation(b, 1, 0.0)]
        path = write_json(tmp_path / "tau2.json", tau2_file(sims))
    elif harness == "terminal-bench":
        path = write_json(tmp_path / "results.json", tb_run([tb_trial(a, 1, True),
                                                             tb_trial(b, 2, False)]))  # fmt: skip
    else:
        samples = [sample(a, 1, {"m": {"value": "C"}}), sample(b, 2, {"m": {"value": "I"}})]
        path = write_eval(tmp_path / "run.eval", samples)
    _, err = _imported(store, path)
    line = _lookalike_warning(err)
    assert "'Task'" in line and "'t\\u0430sk'" in line


def test_honest_distinct_ids_say_nothing(store: Store, tmp_path: Path) -> None:
    """Ids a reader tells apart: accents, Latin letters and digits drawn alike (l and 1, O and
    0), leading zeros, spaces inside, ids wholly in another script, one id written one way on
    every row, an integer and text of other digits."""
    ids = ["café", "cafe", "l1", "11", "O1", "01", "task-1", "task-01", "task_1", "task 1",
           "任务 2", "任务2", "ответ-1", "ответ-2", "αβγ", "abg", "straße-1", "strasse-2",
           "Fix-Git-1", "fix-git-2", 7, "07"]  # fmt: skip
    rows = [_row(task, attempt, attempt == 0) for task in ids for attempt in (0, 1)]
    batch, err = _imported(store, _rows(tmp_path / "r.jsonl", rows))
    assert "show alike" not in err, err
    assert len({task for task, _, _ in store.runs(batch)}) == len(ids)


def test_skeleton_of_an_ascii_id_is_the_same_by_either_path() -> None:
    """An id with a character that does not show goes the long way: the quick path for
    printable ASCII must give what the long one gives."""
    from groundstate.lookalike import skeleton

    for name in ["Task-1", " t1 ", "A_b.C", "x-Y~z", "UPPER", "Mixed Case 1"]:
        assert skeleton(name) == skeleton(name + "\u200b") == name.strip().lower()


def test_message_checks_fold_the_same_look_alikes_as_before() -> None:
    """The look-alike table has one home now; message checks read it as they did."""
    from groundstate.grading.constraints import fold

    assert fold("N\u043e \u0410CME\u2011123 it\u2019s") == "no acme-123 it's"


# --- success: booleans, 1 and 0, and nothing else ----------------------------------------


@pytest.mark.parametrize(
    "cell", ["yes", "no", "Yes", "NO", "y", "n", "t", "f", "pass", "ok", "2", "0.5", "-1", "on"]
)
def test_a_csv_success_in_another_spelling_is_refused(
    store: Store, tmp_path: Path, cell: str
) -> None:
    path = tmp_path / "r.csv"
    path.write_text(f"task_id,attempt,success\nt1,0,true\nt1,1,false\nt2,0,{cell}\n")
    err = store.refused(path)  # stores nothing, the earlier batch intact
    assert f"{path}:4: success:" in err and repr(cell) in err, err


@pytest.mark.parametrize("value", ["yes", "no", "Y", 2, -1, 0.5, None, [], {}, "1 "])
def test_a_json_lines_success_in_another_spelling_is_refused(
    store: Store, tmp_path: Path, value: Any
) -> None:
    rows = [_row("t1", 0, True), _row("t1", 1, value)]
    path = _rows(tmp_path / "r.jsonl", rows)
    if value == "1 ":  # a space around it, as a CSV cell may have: read
        assert store.runs(store.imported(path))[("t1", 2, 0)][0] == "success"
        return
    err = store.refused(path)
    assert f"{path}:2: success:" in err, err


def test_invalid_task_yes_is_refused_too(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("task_id,attempt,success,invalid_task\nt1,0,true,yes\n")
    assert f"{path}:2: invalid_task:" in store.refused(path)


@pytest.mark.parametrize(
    ("true", "false"),
    [("true", "false"), ("True", "False"), ("TRUE", "FALSE"), ("1", "0"), ("1.0", "0.0"),
     (" true", " false")],
)  # fmt: skip
def test_csv_booleans_as_writers_write_them_are_read(
    store: Store, tmp_path: Path, true: str, false: str
) -> None:
    """Ours and Python's (true, True), spreadsheets' (TRUE), numbers, a space after a comma."""
    path = tmp_path / "r.csv"
    path.write_text(f"task_id,attempt,success\nt1,0,{true}\nt1,1,{false}\n")
    runs = store.runs(store.imported(path))
    assert runs[("t1", 1, 0)][0] == "success" and runs[("t1", 2, 0)][0] == "agent_failure"


@pytest.mark.parametrize(("true", "false"), [(True, False), (1, 0), (1.0, 0.0), ("true", "0")])
def test_json_lines_booleans_are_read(store: Store, tmp_path: Path, true: Any, false: Any) -> None:
    path = _rows(tmp_path / "r.jsonl", [_row("t", 0, true), _row("t", 1, false)])
    runs = store.runs(store.imported(path))
    assert runs[("t", 1, 0)][0] == "success" and runs[("t", 2, 0)][0] == "agent_failure"


# --- CSV cells as long as a JSON Lines row holds ------------------------------------------


def test_a_csv_cell_over_128_ki_characters_is_read(store: Store, tmp_path: Path) -> None:
    """A long answer or log in a column: read (its column ignored), as in JSON Lines."""
    long = "x" * 300_000
    path = tmp_path / "r.csv"
    path.write_text(f'task_id,attempt,success,note\nt1,0,true,"{long}\nmore"\nt1,1,false,{long}\n')
    batch, err = _imported(store, path)
    assert "ignored columns" in err and "note" in err
    assert set(store.runs(batch)) == {("t1", 1, 0), ("t1", 2, 0)}
    jsonl = _rows(tmp_path / "r.jsonl", [{**_row("t1", 0, True), "note": long}])
    assert len(store.runs(store.imported(jsonl))) == 1


def test_the_csv_module_limit_is_put_back_between_rows(tmp_path: Path) -> None:
    """The ``csv`` module's limit is global to the process: raised only while a row is read."""
    before = csv.field_size_limit()
    path = tmp_path / "r.csv"
    path.write_text("task_id,attempt,success,note\n" + f"t1,0,true,{'x' * 200_000}\nt1,1,true,\n")
    rows = table.TableSource(path, "csv").rows()
    assert next(rows).task_id == "t1"
    assert csv.field_size_limit() == before  # between two rows
    assert len(list(rows)) == 1
    assert csv.field_size_limit() == before


@pytest.fixture
def short_lines(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(table, "LINE_LIMIT", 2000)
    return 2000


def test_a_csv_row_over_the_line_limit_is_refused(
    store: Store, tmp_path: Path, short_lines: int
) -> None:
    """A quoted cell running over many lines (each short) is bounded as one row, as a JSON
    Lines row is: a quote never closed read the rest of the file into one cell."""
    body = "\n".join("y" * 100 for _ in range(40))  # 40 lines, 4,000 characters
    path = tmp_path / "r.csv"
    path.write_text(f'task_id,attempt,success,note\nt1,0,true,\nt1,1,true,"{body}"\n')
    err = store.refused(path)
    assert f"{path}:3: a row of over" in err and "a quoted cell never closed" in err, err
    path.write_text(f'task_id,attempt,success,note\nt1,0,true,"{body[:1500]}"\nt1,1,true,\n')
    assert len(store.runs(store.imported(path))) == 2  # within it: read


def test_an_unclosed_quote_is_named_where_the_row_began(
    store: Store, tmp_path: Path, short_lines: int
) -> None:
    rows = "".join(f"t{i},0,true,x\n" for i in range(200))
    path = tmp_path / "r.csv"
    path.write_text(f'task_id,attempt,success,note\nt0,0,true,"oops\n{rows}')
    err = store.refused(path)
    assert f"{path}:2: a row of over" in err, err


# --- NULs: UTF-16 without a byte-order mark, a crash's zeros --------------------------------

ROWS_CSV = "task_id,attempt,success\nt1,0,true\nt1,1,false\n"
ROWS_JSONL = '{"task_id": "t1", "attempt": 0, "success": true}\n'


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("r.csv", ROWS_CSV.encode("utf-16-le")),
        ("r.csv", ROWS_CSV.encode("utf-16-be")),
        ("r.jsonl", ROWS_JSONL.encode("utf-16-le")),
        ("tau.json", json.dumps([tau(1, 0, 1.0)]).encode("utf-16-le")),
    ],
    ids=["csv-le", "csv-be", "jsonl-le", "tau-bench-le"],
)
def test_utf16_without_a_byte_order_mark_is_named(
    store: Store, tmp_path: Path, name: str, data: bytes
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    err = store.refused(path)
    assert "UTF-16 text without a byte-order mark" in err, err


@pytest.mark.parametrize(
    ("name", "data", "where"),
    [
        ("r.csv", ROWS_CSV.encode() + b"\x00" * 4096, ":4:"),
        ("r.csv", ROWS_CSV.encode() + b"t2,0,tr" + b"\x00" * 100, ":4:"),
        ("r.jsonl", ROWS_JSONL.encode() * 3 + b'{"task_id": "t' + b"\x00" * 512, ":4:"),
        ("tau.json", json.dumps([tau(1, 0, 1.0)] * 3).encode()[:-1] + b"\x00" * 512, ":1:"),
        ("zeros.json", b"\x00" * 512, ""),
    ],
    ids=["csv-tail", "csv-row-cut", "jsonl-row-cut", "tau-bench-cut", "only-zeros"],
)
def test_a_crash_s_zeros_are_named(
    store: Store, tmp_path: Path, name: str, data: bytes, where: str
) -> None:
    """The zeros a crash leaves where the end of a file was being written (or a file of
    zeros): refused as damaged, naming the line, nothing stored."""
    path = tmp_path / name
    path.write_bytes(data)
    err = store.refused(path)
    assert "a run of NUL bytes" in err and f"{path}{where}" in err, err


def test_a_nul_or_two_in_an_id_is_still_read(store: Store, tmp_path: Path) -> None:
    """An id kept as written (round 46: an export imports back as it was) may hold a NUL."""
    path = tmp_path / "r.csv"
    path.write_bytes(b"task_id,attempt,success\ncut\x00,0,true\na\x00\x00b,0,false\n")
    assert set(store.runs(store.imported(path))) == {("cut\x00", 1, 0), ("a\x00\x00b", 1, 0)}
    path = _rows(tmp_path / "r.jsonl", [_row("cut\x00", 0, True)])  # escaped in JSON
    assert set(store.runs(store.imported(path))) == {("cut\x00", 1, 0)}
