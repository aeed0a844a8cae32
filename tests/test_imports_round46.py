"""Forty-sixth round: imports.

Task ids that show alike and are not the same text ("café" written with one character or as
"e" and a combining accent, an id with a zero-width space or a space at one end) were stored
as two tasks without a word: one task's attempts split in two, pass@k and pass^k computed on
each half, while the report shows both under one name. Every format is read through one
place (:mod:`groundstate.importers.batch`), which now names such ids, with where each was
first read, in one warning; the ids are kept as written (the file's harness compares them as
written too, and an export of ours must import back as it was).

A line of a row file (JSON Lines, CSV) was read whole, however long: a few MiB of gzip
holding one line of gigabytes took the process's memory. A line is read no further than
:data:`groundstate.importers.table.LINE_LIMIT` now, and one longer is refused naming it.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from groundstate.importers import table
from tests.test_imports_formats import Store, cli, log, sample, tau, write_eval, write_json
from tests.test_imports_harbor import job, trial
from tests.test_imports_round4 import simulation, tau2_file
from tests.test_imports_round14 import tb_run, tb_trial
from tests.test_imports_round43 import _imported
from tests.test_imports_round45 import _agrees, _reference

NFC, NFD = "caf\u00e9", "cafe\u0301"
"""One name in two Unicode forms (a file merged from a macOS and a Linux machine)."""
ZERO_WIDTH = "fix-git\u200b"
"""``fix-git`` with a zero-width space: shows as ``fix-git``."""


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _lookalike_warning(err: str) -> str:
    lines = [line for line in err.splitlines() if "show alike" in line]
    assert len(lines) == 1, err
    return lines[0]


def _rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def _row(task: str, attempt: int, success: bool) -> dict[str, Any]:
    return {"task_id": task, "attempt": attempt, "success": success}


# --- each format: look-alike ids are named, with where each was read --------------------


def test_two_unicode_forms_of_one_id_in_a_row_file_are_named(store: Store, tmp_path: Path) -> None:
    path = _rows(tmp_path / "r.jsonl", [_row(NFC, 0, True), _row(NFD, 1, False)])
    batch, err = _imported(store, path)
    line = _lookalike_warning(err)
    assert str(path) in line
    # escaped, since the two show as one: the reader sees how they differ
    assert "'caf\\xe9' (on line 1)" in line and "'cafe\\u0301' (on line 2)" in line
    assert set(store.runs(batch)) == {(NFC, 1, 0), (NFD, 2, 0)}  # kept as written


def test_an_invisible_character_or_an_end_space_is_named(store: Store, tmp_path: Path) -> None:
    rows = [_row("fix-git", 0, True), _row(ZERO_WIDTH, 1, False),
            _row("sum", 0, True), _row("sum ", 1, False),
            _row("cut", 0, True), _row("cut\u0000", 1, False)]  # fmt: skip
    _, err = _imported(store, _rows(tmp_path / "r.jsonl", rows))
    line = _lookalike_warning(err)
    assert "'fix-git\\u200b' (on line 2)" in line
    assert "'sum ' (on line 4)" in line and "'cut\\x00' (on line 6)" in line


def test_white_space_inside_an_id_shows_as_a_space(store: Store, tmp_path: Path) -> None:
    """A tab or a no-break space inside an id shows as a space; two spaces do not."""
    rows = [_row("fix git", 0, True), _row("fix\tgit", 0, False), _row("fix\u00a0git", 0, True),
            _row("fix  git", 0, False)]  # fmt: skip
    line = _lookalike_warning(_imported(store, _rows(tmp_path / "r.jsonl", rows))[1])
    assert "'fix\\tgit' (on line 2)" in line and "'fix\\xa0git' (on line 3)" in line
    assert "fix  git" not in line


def test_look_alike_ids_are_named_in_any_order(store: Store, tmp_path: Path) -> None:
    """The id that shows as written may come first or last, and a third form too."""
    rows = [_row(ZERO_WIDTH, 0, True), _row("fix-git", 0, False), _row("fix-git\t", 0, True),
            _row(NFD, 0, True), _row(NFC, 0, False)]  # fmt: skip
    line = _lookalike_warning(_imported(store, _rows(tmp_path / "r.jsonl", rows))[1])
    assert "'fix-git\\u200b' (on line 1) and 'fix-git' (on line 2)" in line
    assert "'fix-git\\u200b' (on line 1) and 'fix-git\\t' (on line 3)" in line
    assert "'cafe\\u0301' (on line 4) and 'caf\\xe9' (on line 5)" in line


def test_an_inspect_log_with_two_forms_of_a_sample_id(store: Store, tmp_path: Path) -> None:
    samples = [sample(NFC, 1, {"m": {"value": "C"}}), sample(NFD, 2, {"m": {"value": "I"}})]
    path = write_eval(tmp_path / "run.eval", samples)
    _, err = _imported(store, path)
    line = _lookalike_warning(err)
    assert f"at {path}!samples/{NFD}_epoch_2.json" in line


@pytest.mark.parametrize("harness", ["tau-bench", "tau2-bench", "harbor", "terminal-bench"])
def test_every_harness_names_look_alike_ids(store: Store, tmp_path: Path, harness: str) -> None:
    if harness == "tau-bench":
        path = write_json(tmp_path / "tau.json", [tau(NFC, 0, 1.0), tau(NFD, 1, 0.0)])
    elif harness == "tau2-bench":
        sims = [simulation(NFC, 0, 1.0), simulation(NFD, 1, 0.0)]
        path = write_json(tmp_path / "tau2.json", tau2_file(sims))
    elif harness == "harbor":
        trials = [trial(NFC, "c__a", {"reward": 1.0}, minute=0),
                  trial(NFD, "c__b", {"reward": 0.0}, minute=1)]  # fmt: skip
        path = job(tmp_path / "job", trials)
    else:
        trials = [tb_trial(NFC, 1, True), tb_trial(NFD, 2, False)]
        path = write_json(tmp_path / "results.json", tb_run(trials))
    _, err = _imported(store, path)
    assert "'caf\\xe9'" in _lookalike_warning(err)


def test_more_than_five_pairs_are_counted_not_listed(store: Store, tmp_path: Path) -> None:
    rows = [r for i in range(7) for r in (_row(f"t{i}", 0, True), _row(f"t{i}\u200b", 0, False))]
    line = _lookalike_warning(_imported(store, _rows(tmp_path / "r.jsonl", rows))[1])
    assert line.count("\\u200b") == 5 and "; 2 more pairs)" in line


# --- false-positive guards: ids that look different say nothing -------------------------


def test_ids_that_look_different_say_nothing(store: Store, tmp_path: Path) -> None:
    """Distinct letters (é and e), other scripts, leading zeros, an integer and text of other
    digits, a space inside: all different names a reader tells apart. (Letter case is no
    longer among them: ``Task`` and ``task`` are named since the forty-seventh round.)"""
    ids = ["café", "cafe", "任务 2", "任务2", "Task", "tusk", "01", "1", "a b", "ab", "e\u0301x"]
    rows = [_row(task, attempt, attempt == 0) for task in ids for attempt in (0, 1)]
    _, err = _imported(store, _rows(tmp_path / "r.jsonl", rows))
    assert "show alike" not in err
    samples = [sample(1, 1, {"m": {"value": "C"}}), sample("01", 1, {"m": {"value": "I"}})]
    _, err = _imported(store, write_json(tmp_path / "log.json", log(samples)))
    assert "show alike" not in err


def test_one_id_written_one_way_says_nothing(store: Store, tmp_path: Path) -> None:
    """The same decomposed id on every row is one task: nothing to say."""
    rows = [_row(NFD, 0, True), _row(NFD, 1, False), _row(ZERO_WIDTH, 0, True)]
    batch, err = _imported(store, _rows(tmp_path / "r.jsonl", rows))
    assert "show alike" not in err
    assert set(store.runs(batch)) == {(NFD, 1, 0), (NFD, 2, 0), (ZERO_WIDTH, 1, 0)}


def test_an_export_with_look_alike_ids_imports_back_as_it_was(store: Store, tmp_path: Path) -> None:
    """Kept as written, not merged: the round trip through our own row format is exact."""
    rows = [_row(NFC, 0, True), _row(NFD, 0, False), _row(NFD, 1, True)]
    batch, _ = _imported(store, _rows(tmp_path / "r.jsonl", rows))
    out = tmp_path / "out.jsonl"
    code, _, err = cli("export", batch, "--format", "jsonl", "--out", str(out),
                       "--store", str(store.path))  # fmt: skip
    assert code == 0, err
    again, err = _imported(store, out)
    assert "show alike" in err
    assert store.runs(again) == store.runs(batch)


# --- the figures: two tasks, as the report says, recomputed ------------------------------


def test_look_alike_ids_are_two_tasks_in_every_figure(store: Store, tmp_path: Path) -> None:
    """The warning's claim checked against ``report --json``: each id has its own attempts
    (pass@2 needs two attempts of one id, which ``fix-git`` alone has)."""
    rows = [_row("fix-git", 0, True), _row("fix-git", 1, False), _row(ZERO_WIDTH, 0, False),
            _row(ZERO_WIDTH, 1, False), _row(NFC, 0, True), _row(NFD, 0, True),
            _row(NFD, 1, False)]  # fmt: skip
    batch, err = _imported(store, _rows(tmp_path / "r.jsonl", rows))
    assert "'fix-git\\u200b'" in _lookalike_warning(err)
    report = store.report(batch)
    assert report["valid_attempts"] == 7
    _agrees(report, _reference({
        "fix-git": [(True, None), (False, None)], ZERO_WIDTH: [(False, None), (False, None)],
        NFC: [(True, None)], NFD: [(True, None), (False, None)],
    }))  # fmt: skip


# --- a row file's line is read within a limit ---------------------------------------------


@pytest.fixture
def short_lines(monkeypatch: pytest.MonkeyPatch) -> int:
    """A line limit of 2,000 characters (64 Mi in use), so that a test writes kilobytes."""
    monkeypatch.setattr(table, "LINE_LIMIT", 2000, raising=False)  # base: none
    return 2000


@pytest.mark.parametrize("kind", ["jsonl", "csv", "jsonl.gz", "csv-header"])
def test_a_line_past_the_limit_is_refused_naming_it(
    store: Store, tmp_path: Path, short_lines: int, kind: str
) -> None:
    """A JSON Lines or CSV line was read whole, however long: a line of gigabytes (a few MiB
    of gzip) took the process's memory. It is read no further than the limit now."""
    long = "x" * (short_lines * 5)
    if kind.startswith("jsonl"):
        rows = [_row("t", 0, True), _row("t", 1, False), {**_row("t", 2, True), "notes": long}]
        text = "".join(json.dumps(r) + "\n" for r in rows)
    elif kind == "csv":
        text = f"task_id,attempt,success,notes\nt,0,true,\nt,1,false,{long}\n"
    else:  # a header no reader ends
        text = "task_id,attempt,success," + long + "\nt,0,true\n"
    path = tmp_path / f"rows.{kind.removesuffix('-header')}"
    path.write_bytes(gzip.compress(text.encode()) if kind.endswith(".gz") else text.encode())
    err = store.refused(path)
    line = 1 if kind == "csv-header" else 3
    assert f"{path}:{line}: a line of over" in err and "not a file of rows" in err


def test_lines_within_the_limit_are_read(store: Store, tmp_path: Path, short_lines: int) -> None:
    """False-positive guard: a line of the limit's length, break included, in either format
    and with any break."""
    row = _row("t", 0, True)
    pad = short_lines - len(json.dumps({**row, "notes": ""})) - 2  # the line and its "\r\n"
    first = json.dumps({**row, "notes": "x" * pad}) + "\r\n"
    assert len(first) == short_lines
    path = tmp_path / "r.jsonl"
    path.write_bytes((first + json.dumps(_row("t", 1, False))).encode())
    assert len(store.runs(store.imported(path))) == 2
    cells = "x" * (short_lines - len("t,0,true,\r"))
    csv_path = tmp_path / "r.csv"
    csv_path.write_bytes(f"task_id,attempt,success,notes\rt,0,true,{cells}\rt,1,false,\r".encode())
    assert len(store.runs(store.imported(csv_path))) == 2
