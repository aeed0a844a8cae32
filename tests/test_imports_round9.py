"""Ninth audit of ``import-results``: how a file is told apart and split into rows, and what
the file says of itself read before anything is stored.

Classes: row files named other than ``.csv`` (``.tsv``, ``.tab``, ``.txt``) or with a space
after each separator; JSON Lines broken by ``\\r`` alone; a file whose name says one format
and whose content is another's; parts of a τ² file read only for warnings or the system
(``tasks``, ``info.agent_info``) that failed after the batch was stored; boolean rewards; an
archive member whose declared size is over the cap.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tests.test_imports_formats import Store, cli, log, sample, write_eval, write_json
from tests.test_imports_round4 import simulation, tau2_file, tau_result


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _outcomes(store: Store, path: Path, *extra: str) -> dict[tuple[str, int, int], str]:
    return {key: reason for key, (reason, _) in store.runs(store.imported(path, *extra)).items()}


EXPECTED = {("t1", 1, 0): "success", ("t1", 2, 0): "agent_failure", ("t 2", 1, 0): "success"}


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("rows.tsv", "task_id\tattempt\tsuccess\nt1\t0\ttrue\nt1\t1\tfalse\nt 2\t0\ttrue\n"),
        ("rows.tab", "task_id\tattempt\tsuccess\nt1\t0\ttrue\nt1\t1\tfalse\nt 2\t0\ttrue\n"),
        ("rows.txt", "task_id;attempt;success\nt1;0;true\nt1;1;false\nt 2;0;true\n"),
        ("rows", "task_id,attempt,success\r\nt1,0,true\r\nt1,1,false\r\nt 2,0,true\r\n"),
        ("spaced.csv", "task_id, attempt, success\nt1, 0, true\nt1, 1, false\nt 2, 0, true\n"),
        ("old-mac.csv", "task_id,attempt,success\rt1,0,true\rt1,1,false\rt 2,0,true\r"),
    ],
)
def test_row_files_are_read_whatever_their_name_and_spacing(
    store: Store, tmp_path: Path, name: str, text: str
) -> None:
    """A .tsv (or a row file without a known suffix) was "cannot tell its format"; a header
    written "task_id, attempt, success" had no attempt column (" attempt" is no field)."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert _outcomes(store, path) == EXPECTED


ROWS = [
    {"task_id": "t1", "attempt": 0, "success": True},
    {"task_id": "t1", "attempt": 1, "success": False},
    {"task_id": "t 2", "attempt": 0, "success": True, "note": "a\u2028b\rc"},
]


@pytest.mark.parametrize("name", ["rows.jsonl", "rows.json", "rows.ndjson"])
@pytest.mark.parametrize("newline", ["\r", "\r\n", "\n"])
def test_json_lines_broken_by_any_line_ending(
    store: Store, tmp_path: Path, name: str, newline: str
) -> None:
    """JSON Lines broken by ``\\r`` alone were one line: "not valid JSON: Extra data". A
    ``\\r`` inside a string is escaped in JSON, and U+2028 inside one is no line break."""
    path = tmp_path / name
    text = newline.join(json.dumps(row, ensure_ascii=False) for row in ROWS) + newline
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert _outcomes(store, path) == EXPECTED


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("rows.csv", "jsonl", "give --format jsonl, not csv as its name says"),
        ("rows.jsonl", "csv", "give --format csv, not jsonl as its name says"),
        ("tau2.jsonl", "tau2", "give --format tau2-bench, not jsonl as its name says"),
    ],
)
def test_a_file_whose_name_says_another_format_is_named_for_what_it_is(
    store: Store, tmp_path: Path, name: str, content: str, says: str
) -> None:
    """The hint for the wrong reader came only with --format: a JSON Lines file named .csv was
    "no result rows", a CSV named .jsonl "not valid JSON"."""
    texts = {
        "jsonl": json.dumps(ROWS[0]) + "\n",
        "csv": "task_id,attempt,success\nt1,0,true\n",
        "tau2": json.dumps(tau2_file([simulation("a", 0, 1.0)]), indent=2),
    }
    path = tmp_path / name
    path.write_text(texts[content], encoding="utf-8")
    assert says in store.refused(path)


def test_what_a_tau2_file_says_of_itself_is_checked_before_anything_is_stored(
    store: Store, tmp_path: Path
) -> None:
    """``tasks`` of the wrong shape was a TypeError traceback raised after the batch was
    stored (the warnings were read last); an ``agent_info`` of the wrong shape was an
    AttributeError before it."""
    data = tau2_file([simulation("a", 0, 1.0), simulation("a", 1, 0.0)])
    for tasks in (True, 3, "a", {"id": "a"}):
        data["tasks"] = tasks
        path = tmp_path / "tau2.json"
        path.write_text(json.dumps(data))
        assert "tau2.json: tasks: must be a list of tasks" in store.refused(path)
    data["tasks"] = [{"id": "a"}]
    data["info"] = {"agent_info": ["llm"], "user_info": "x", "environment_info": 7}
    path.write_text(json.dumps(data))
    assert _outcomes(store, path) == {
        ("a", 1, 0): "success",
        ("a", 2, 0): "agent_failure/incorrect",
    }


def test_a_boolean_reward_is_refused(store: Store, tmp_path: Path) -> None:
    """``reward: true`` was read as 1.0 (τ-bench's and τ²'s models would read it so), but
    neither writes one: their ``float`` rewards are dumped as numbers. Since the nineteenth
    round a reward the writer would not write (a boolean, text) is refused, naming it."""
    path = tmp_path / "tau.json"
    path.write_text(json.dumps([tau_result("1", 0, True), tau_result("1", 1, False)]))
    assert "tau.json:1: reward: must be a number, got True" in store.refused(path)
    data = tau2_file([simulation("a", 0, True), simulation("a", 1, False)])
    path = tmp_path / "tau2.json"
    path.write_text(json.dumps(data))
    assert "simulations[0]: reward_info.reward: must be a number, got True" in store.refused(path)


def test_an_archive_member_declaring_hundreds_of_megabytes_is_not_read(
    store: Store, tmp_path: Path
) -> None:
    """The cap was 1 GiB: a member declaring 900 MiB (5 to 10 GB once parsed) was read whole.
    The declared size is patched in the central directory (the one zipfile reads), so no
    large file is written; the member is refused before a byte of it is read."""
    path = write_eval(tmp_path / "big.eval", [sample("a", 1, {"m": {"value": "C"}})])
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("samples/a_epoch_1.json")
    data = bytearray(path.read_bytes())
    at = data.find(b"PK\x01\x02")
    while data[at + 46 : at + 46 + len(info.filename)] != info.filename.encode():
        at = data.find(b"PK\x01\x02", at + 4)
    data[at + 24 : at + 28] = (300 << 20).to_bytes(4, "little")  # uncompressed size
    path.write_bytes(bytes(data))
    assert f"big.eval!samples/a_epoch_1.json: {300 << 20} bytes uncompressed" in store.refused(path)


FOREIGN = {  # SWE-bench run reports since the eleventh round, Harbor and AppWorld the twelfth,
    # instance reports the fifteenth (tests/test_imports_round15.py)
    "preds.jsonl": (
        {"instance_id": "x", "model_patch": "diff", "model_name_or_path": "m"},
        "SWE-bench predictions",
    ),
}


@pytest.mark.parametrize("name", sorted(FOREIGN))
@pytest.mark.parametrize("indent", [None, 2])
def test_a_harness_file_no_reader_knows_is_named_for_what_it_is(
    store: Store, tmp_path: Path, name: str, indent: int | None
) -> None:
    """A SWE-bench, Harbor or AppWorld file was "cannot tell its format: give --format (...)",
    sending its user to formats none of which fits (or, as .jsonl, "task_id: required")."""
    data, what = FOREIGN[name]
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=indent) + "\n")
    err = store.refused(path)
    assert f"looks like {what}" in err and "import-results does not read" in err


def test_a_json_log_named_eval_is_read_as_what_it_is(store: Store, tmp_path: Path) -> None:
    """It was "not a readable .eval archive: truncated or damaged?"."""
    samples = [sample(1, 1, {"m": {"value": "C"}}), sample(1, 2, {"m": {"value": "I"}})]
    path = write_json(tmp_path / "log.eval", log(samples))
    assert _outcomes(store, path) == {
        ("1", 1, 0): "success",
        ("1", 2, 0): "agent_failure/incorrect",
    }


@pytest.mark.parametrize("name", ["rows.csv", "rows.jsonl", "tau.json"])
def test_utf16_text_is_named_as_such(store: Store, tmp_path: Path, name: str) -> None:
    """Windows PowerShell's ``>`` writes UTF-16: it was "not UTF-8 text", with no word of
    what it is."""
    text = {"rows.csv": "task_id,attempt,success\nt,0,true\n", "rows.jsonl": json.dumps(ROWS[0])}
    path = tmp_path / name
    path.write_bytes(text.get(name, json.dumps([tau_result("1", 0, 1.0)])).encode("utf-16"))
    assert "UTF-16 text, not UTF-8: save it as UTF-8" in store.refused(path)


@pytest.mark.parametrize("trials", [3.0, "3"])
def test_tau2_num_trials_written_as_a_float_or_text_still_warns(
    tmp_path: Path, trials: object
) -> None:
    """``num_trials`` of 3.0 or "3" was no integer to compare with: a task short of trials
    dropped attempts from the denominators without the warning an integer 3 gives."""
    data = tau2_file([simulation("a", 0, 1.0), simulation("a", 1, 0.0), simulation("a", 2, 1.0),
                      simulation("b", 0, 1.0)])  # fmt: skip
    data["info"]["num_trials"] = trials
    path = tmp_path / "tau2.json"
    path.write_text(json.dumps(data))
    code, _, err = cli(
        "import-results", str(path), "--name", "x", "--store", str(tmp_path / "s.db")
    )
    assert code == 0 and "info.num_trials is 3, but 1 task has fewer simulations ('b')" in err


def test_a_tau_bench_repeat_names_positions_not_lines(store: Store, tmp_path: Path) -> None:
    """It said "(also on line 1)" of the first result of an indented list (on line 2)."""
    path = tmp_path / "tau.json"
    path.write_text(json.dumps([tau_result("1", 0, 1.0), tau_result("1", 0, 0.0)], indent=2))
    err = store.refused(path)
    assert "appears twice (also at " in err and "on line" not in err
