"""Forty-seventh round, the command line: one batch given as both sides, and values named in
warnings and refusals that were still printed whole.

- ``compare X X`` (or a batch's name and a prefix of its id) was accepted silently: every
  difference 0, p = 1, read as "no change". So were ``agreement X X`` (every attempt agreeing
  with itself: share 1.000) and ``plan X X``. Each now warns on stderr, naming the batch and
  how it was given, and goes on (as a file imported again is accepted, with a note).
- ``run --allow-invalid``'s "running invalid tasks" warning, ``verify``'s and the readers'
  problem lines, ``labels regress``'s skipped runs and ``init``'s refusal of a folder in use
  printed their values without the shortening refusals get: a 250-character task id or
  folder name was echoed whole.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.cli.integrity import _print_check, warn
from groundstate.store import Problem, Verification

from .conftest import BANK, BANK_SYSTEM

WORDS = "word " * 50
"""A name of 250 characters, spaces in it (a file name's limit is 255)."""


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _import(tmp: Path, name: str) -> str:
    rows = [
        {"task_id": f"t{i}", "attempt": a, "success": (i + a) % 2 == 0}
        for i in range(6)
        for a in (1, 2)
    ]
    path = tmp / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    store = str(tmp / "s.db")
    code, _, err = _cli("import-results", str(path), "--name", name, "--store", store)
    assert code == 0, err
    return store


def _batch_id(store: str, name: str) -> str:
    code, out, err = _cli("report", name, "--json", "--store", store)
    assert code == 0, err
    return str(json.loads(out)["batch_id"])


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning:")]


# --- one batch as both sides -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "what"),
    [
        (("compare",), "is compared with itself: every difference is 0"),
        (("compare", "--json"), "is compared with itself: every difference is 0"),
        (("agreement",), "is paired with itself: each attempt agrees with itself"),
        (("plan",), "is paired with itself: every paired difference is 0"),
    ],
)
def test_one_batch_as_both_sides_is_warned_naming_it(
    tmp_path: Path, command: tuple[str, ...], what: str
) -> None:
    """Fails on the old code: accepted with no word."""
    store = _import(tmp_path, "A")
    batch = _batch_id(store, "A")
    name, *options = command
    code, out, err = _cli(name, "A", "A", *options, "--store", store)
    assert code == 0, err
    assert _warnings(err) == [f"warning: batch {batch} (given as A and A) {what}"]
    assert out  # the figures are still printed
    if "--json" in options:
        assert json.loads(out)["batch_a"] == json.loads(out)["batch_b"] == batch


def test_a_name_and_a_prefix_of_the_same_batch_are_one_batch(tmp_path: Path) -> None:
    """The sides are compared as the batches they name, not as the words given."""
    store = _import(tmp_path, "A")
    batch = _batch_id(store, "A")
    code, _, err = _cli("compare", batch[:6], "A", "--store", store)
    assert code == 0, err
    assert _warnings(err) == [
        f"warning: batch {batch} (given as {batch[:6]} and A) is compared with itself: "
        "every difference is 0"
    ]


def test_two_batches_of_the_same_rows_are_not_warned(tmp_path: Path) -> None:
    """False-positive guard: two imports of the same file are two batches (a rerun)."""
    _import(tmp_path, "A")
    store = _import(tmp_path, "B")
    assert _batch_id(store, "A") != _batch_id(store, "B")
    for command in (("compare", "A", "B"), ("agreement", "A", "B"), ("plan", "A", "B")):
        code, _, err = _cli(*command, "--store", store)
        assert code == 0, (command, err)
        assert "itself" not in err, (command, err)
    code, _, err = _cli("plan", "A", "--store", store)  # one pilot: no pair at all
    assert code == 0 and "itself" not in err, err


def test_a_long_name_given_twice_is_shortened_in_the_warning(tmp_path: Path) -> None:
    store = _import(tmp_path, WORDS.strip())
    code, _, err = _cli("compare", WORDS.strip(), WORDS.strip(), "--store", store)
    assert code == 0, err
    (line,) = _warnings(err)
    assert "compared with itself" in line
    assert line.count("…(249 characters)…") == 2, line
    assert len(line) < 400, line


# --- values named in warnings and refusals ----------------------------------------------------


def _bank_with_an_invalid_task(tmp_path: Path, task_id: str) -> Path:
    suite = tmp_path / "bank"
    shutil.copytree(BANK, suite)
    task = suite / "tasks" / "transfer.yaml"
    text = task.read_text().replace("task_id: transfer", f"task_id: {task_id}")
    task.unlink()
    (suite / "tasks" / f"{task_id}.yaml").write_text(text)  # the file is named by the id
    config = suite / "suite.yaml"
    config.write_text(config.read_text().replace("canary: transfer", f"canary: {task_id}"))
    (suite / "solutions" / "transfer").rename(suite / "solutions" / task_id)
    bad = suite / "solutions" / task_id / "bad_no_pin.yaml"
    bad.write_text(bad.read_text().replace("constraint:pin-first", "outcome"))
    return suite


def test_a_long_invalid_task_id_is_shortened_in_the_run_warning(tmp_path: Path) -> None:
    """Fails on the old code: the 240-character id was printed whole in the warning."""
    task_id = "t" * 240
    suite = _bank_with_an_invalid_task(tmp_path, task_id)
    store = str(tmp_path / "runs.db")
    args = ["run", str(suite), "--system", str(BANK_SYSTEM), "--store", store]
    code, _, err = _cli(*args, "--attempts", "1", "--allow-invalid")
    assert code == 3, err  # the one task is invalid: no estimate
    (line,) = [x for x in err.splitlines() if "running invalid tasks" in x]
    assert line == f"warning: running invalid tasks: {'t' * 80}…(240 characters)…{'t' * 30}"


def test_a_short_invalid_task_id_is_named_as_it_is(tmp_path: Path) -> None:
    """False-positive guard: an id of one short word is printed bare, as before."""
    suite = _bank_with_an_invalid_task(tmp_path, "transfer-2")
    store = str(tmp_path / "runs.db")
    args = ["run", str(suite), "--system", str(BANK_SYSTEM), "--store", store]
    code, _, err = _cli(*args, "--attempts", "1", "--allow-invalid")
    assert code == 3, err
    assert "warning: running invalid tasks: transfer-2\n" in err


def _check(detail: str) -> Verification:
    problem = Problem(batch_id="b1", run_id="r1", kind="record_altered", detail=detail)
    return Verification(batch_id="b1", records=1, artifacts=0, problems=[problem])


def test_a_problem_naming_a_long_value_is_shortened(capsys: pytest.CaptureFixture[str]) -> None:
    """Fails on the old code: ``warn`` and ``verify``'s listing printed the line whole
    (one line, but 3,000 characters of it)."""
    value = repr("x " * 1500)
    assert warn(_check(f"field task_id holds {value}"))
    _print_check(_check(f"field task_id holds {value}"))
    out, err = capsys.readouterr()
    for line in (err.strip(), out.splitlines()[-1]):
        assert "run r1: field task_id holds 'x x x" in line, line
        assert "…(3,000 characters)…" in line and len(line) < 300, line


def test_a_problem_line_with_short_values_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    warn(_check("artifact trace.json: hash abc123 does not match"))
    assert capsys.readouterr().err == (
        "warning: run r1: artifact trace.json: hash abc123 does not match\n"
    )


def test_init_into_a_folder_in_use_names_it_shortened(tmp_path: Path) -> None:
    """Fails on the old code: the folder's path, spaces in it, was printed bare and whole."""
    folder = tmp_path / WORDS.strip()
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    code, _, err = _cli("init", str(folder))
    assert code == 2
    (line,) = err.splitlines()
    assert line.startswith("error: '") and "…(" in line and len(line) < 300, line
    assert line.endswith("word' exists and is not an empty folder: choose a new name"), line
    assert (folder / "keep.txt").read_text() == "mine"


def test_init_into_a_plain_folder_in_use_names_it_as_before(tmp_path: Path) -> None:
    folder = tmp_path / "taken"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    code, _, err = _cli("init", str(folder))
    assert code == 2
    assert err == f"error: {folder} exists and is not an empty folder: choose a new name\n"
