"""Thirty-second round, tidiness: exit status and output paths.

- ``agreement`` of two batches whose every attempt is invalid printed "share agreeing 1.000"
  (each side's "invalid" against the other's) and exited 0; of two batches whose every task
  failed validation, "nothing to pair", exit 2. A side with no estimate
  (``analysis.no_estimate``, the rule of ``run``, ``report`` and ``compare``) gives nothing to
  agree on: exit 3, naming the side and why, before any pairing.
- ``report --json`` (and ``run --json``) said a batch had no estimate only by exit 3 and a
  line on stderr; it now carries ``no_estimate``: why, or null. ``compare --json`` carries
  ``no_estimate_a`` and ``no_estimate_b``.
- An output path that is a named pipe (``report --html``, ``compare --html``, ``run --html``,
  ``export --out``, ``sample-failures --out``) was waited on for ever; a device, a socket or
  a link to nowhere failed after all the work, or wrote where the link pointed. Each is
  refused before any work, naming the option, the path and what it is.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from groundstate.paths import make_folder

from .conftest import BANK, BANK_SYSTEM
from .test_stats_round24 import Row, cli, imported
from .test_tidy_round29 import BROKEN, GOOD, _all_tasks_invalid

SRC = str(Path(__file__).resolve().parents[1] / "src")
MIXED = [*BROKEN[:-1], Row("e", 1, "success")]
"""Nine invalid attempts and one valid: an estimate."""


def _store(tmp_path: Path) -> list[str]:
    return ["--store", str(tmp_path / "s.db")]


# --- agreement: no estimate, nothing to agree on ------------------------------------------------


@pytest.mark.parametrize("extra", [[], ["--json"], ["--on", "terminal_reason"]])
def test_agreement_of_batches_without_a_valid_attempt_exits_3(
    tmp_path: Path, extra: list[str]
) -> None:
    """Fails on the old code: "share agreeing 1.000", exit 0."""
    a, b = imported(tmp_path, BROKEN, "a"), imported(tmp_path, BROKEN, "b")
    code, out, err = cli("agreement", a, b, *extra, *_store(tmp_path))
    assert code == 3, err
    # no figure to misread; --json prints the counts and why (round 34: test_tidy_round34.py)
    assert out == "" if "--json" not in extra else json.loads(out)["share"] is None
    for side, batch in (("A", a), ("B", b)):
        assert (
            f"error: every attempt is invalid (10 attempts): side {side} (batch {batch}) has no "
            "estimate (exit 3)" in err
        ), err


@pytest.mark.parametrize("broken_side", ["A", "B"])
def test_agreement_with_one_side_without_an_estimate_names_that_side(
    tmp_path: Path, broken_side: str
) -> None:
    """Fails on the old code (exit 0, a table of "invalid" against verdicts)."""
    good, broken = imported(tmp_path, GOOD, "good"), imported(tmp_path, BROKEN, "broken")
    pair = (broken, good) if broken_side == "A" else (good, broken)
    code, out, err = cli("agreement", *pair, *_store(tmp_path))
    assert code == 3 and out == "", err
    assert err == (
        f"error: every attempt is invalid (10 attempts): side {broken_side} (batch {broken}) "
        "has no estimate (exit 3)\n"
    )


def test_agreement_of_batches_whose_every_task_failed_validation_exits_3(tmp_path: Path) -> None:
    """Fails on the old code: "the two batches share no (task, attempt)", exit 2; --regrade
    of one the same."""
    args = _all_tasks_invalid(tmp_path)
    for _ in range(2):
        assert cli(*args, "--allow-invalid")[0] == 3
    code, out, _ = cli("batches", "--json", *_store(tmp_path))
    first, second = (b["batch_id"] for b in json.loads(out))
    why = "no attempt counts: every task failed validation and ran anyway (transfer)"
    code, out, err = cli("agreement", first, second, *_store(tmp_path))
    assert code == 3 and out == "", err
    assert f"error: {why}: side A (batch {first}) has no estimate (exit 3)" in err
    assert f"error: {why}: side B (batch {second}) has no estimate (exit 3)" in err
    code, _, err = cli("agreement", first, "--regrade", args[1], *_store(tmp_path))
    assert code == 3 and err == f"error: {why}: side A (batch {first}) has no estimate (exit 3)\n"


def test_agreement_of_batches_with_an_estimate_still_exits_0(tmp_path: Path) -> None:
    """The control: one valid attempt is an estimate, however many are invalid."""
    a, b = imported(tmp_path, GOOD, "a"), imported(tmp_path, MIXED, "b")
    code, out, err = cli("agreement", a, b, "--json", *_store(tmp_path))
    assert code == 0 and "no estimate" not in err, err
    assert json.loads(out)["paired"] == 10


# --- no_estimate in the JSON --------------------------------------------------------------------


def test_report_json_says_why_a_batch_has_no_estimate(tmp_path: Path) -> None:
    """Fails on the old code: no ``no_estimate`` field (only exit 3 and stderr said it)."""
    good, mixed = imported(tmp_path, GOOD, "good"), imported(tmp_path, MIXED, "mixed")
    broken = imported(tmp_path, BROKEN, "broken")
    for batch, why, status in (
        (good, None, 0),
        (mixed, None, 0),
        (broken, "every attempt is invalid (10 attempts)", 3),
    ):
        code, out, err = cli("report", batch, "--json", *_store(tmp_path))
        assert code == status, err
        assert json.loads(out)["no_estimate"] == why
        if why is not None:  # the field and the exit status say the same
            assert f"error: {why}: the batch has no estimate (exit 3)" in err


def test_run_and_report_json_say_why_when_every_task_failed_validation(tmp_path: Path) -> None:
    """Fails on the old code: neither JSON had the field."""
    args = _all_tasks_invalid(tmp_path)
    why = "no attempt counts: every task failed validation and ran anyway (transfer)"
    code, out, err = cli(*args, "--allow-invalid", "--json")
    assert code == 3, err
    assert json.loads(out)["no_estimate"] == why
    code, out, _ = cli("report", "--json", *_store(tmp_path))
    assert code == 3 and json.loads(out)["no_estimate"] == why


def test_compare_json_says_which_side_has_no_estimate(tmp_path: Path) -> None:
    """Fails on the old code: no ``no_estimate_a``/``no_estimate_b``."""
    good, broken = imported(tmp_path, GOOD, "good"), imported(tmp_path, BROKEN, "broken")
    code, out, _ = cli("compare", good, broken, "--json", *_store(tmp_path))
    data = json.loads(out)
    assert code == 3
    assert data["no_estimate_a"] is None
    assert data["no_estimate_b"] == "every attempt is invalid (10 attempts)"
    code, out, _ = cli("compare", good, good, "--json", *_store(tmp_path))
    assert code == 0 and json.loads(out)["no_estimate_a"] is None


# --- output paths that are no file to write -----------------------------------------------------


def _commands(batch: str, path: Path) -> dict[str, list[str]]:
    """Every command that writes an output file, with *path* as that file."""
    return {
        "--html": ["report", batch, "--html", str(path)],
        "--html ": ["compare", batch, batch, "--html", str(path)],
        "--out": ["export", batch, "--format", "csv", "--out", str(path)],
        "--out ": ["sample-failures", batch, "--n", "1", "--out", str(path)],
    }


def test_an_output_path_that_is_a_named_pipe_is_refused_at_once(tmp_path: Path) -> None:
    """Fails on the old code: each command waited for a reader for ever (killed after 60 s
    here); ``run --html`` too, once the batch had run."""
    batch = imported(tmp_path, GOOD, "good")
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    link = tmp_path / "link.html"
    link.symlink_to(pipe)
    env = {**os.environ, "PYTHONPATH": SRC}
    for path in (pipe, link):
        for option, command in _commands(batch, path).items():
            done = subprocess.run(
                [sys.executable, "-m", "groundstate.cli", *command, *_store(tmp_path)],
                capture_output=True, text=True, timeout=60, env=env,
            )  # fmt: skip
            assert done.returncode == 2, done.stderr
            assert done.stderr == (
                f"error: {option.strip()} {path} is not a regular file (a named pipe): give "
                "another path\n"
            ), done.stderr
    assert pipe.is_fifo()


def test_run_refuses_a_named_pipe_for_html_before_the_batch(tmp_path: Path) -> None:
    """Fails on the old code: the batch ran, then the report waited for ever on the pipe."""
    args = ["run", str(BANK), "--system", str(BANK_SYSTEM), *_store(tmp_path)]
    os.mkfifo(tmp_path / "pipe")
    done = subprocess.run(
        [sys.executable, "-m", "groundstate.cli", *args, "--html", str(tmp_path / "pipe")],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": SRC},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"error: --html {tmp_path / 'pipe'} is not a regular file (a named pipe): give another "
        "path\n"
    )
    assert not (tmp_path / "s.db").exists()  # refused before any batch was stored


def test_an_output_path_that_is_a_link_to_nowhere_names_its_target(tmp_path: Path) -> None:
    """Fails on the old code: the file was made where the link pointed, or "No such file or
    directory"."""
    batch = imported(tmp_path, GOOD, "good")
    for target in (tmp_path / "elsewhere.html", tmp_path / "gone" / "r.html"):
        link = tmp_path / "link"
        link.unlink(missing_ok=True)
        link.symlink_to(target)
        for option, command in _commands(batch, link).items():
            code, _, err = cli(*command, *_store(tmp_path))
            assert code == 2, (command, err)
            assert err == (
                f"error: {option.strip()} {link} is a link to {target}, which does not exist: "
                "give another path\n"
            )
            assert not target.exists() and not target.parent.joinpath("gone").exists()


def test_an_output_path_that_is_a_socket_is_refused(tmp_path: Path) -> None:
    batch = imported(tmp_path, GOOD, "good")
    sock = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(sock))
        code, _, err = cli("report", batch, "--html", str(sock), *_store(tmp_path))
        assert code == 2 and "is not a regular file (a socket): give another path" in err


def test_a_character_device_takes_the_output(tmp_path: Path) -> None:
    """``--html /dev/null`` throws the report away, as a user writing it means (a character
    device neither waits for a reader nor is overwritten); sample-failures' folder is still
    refused there."""
    batch = imported(tmp_path, GOOD, "good")
    code, _, err = cli("report", batch, "--html", "/dev/null", *_store(tmp_path))
    assert code == 0, err
    args = ["sample-failures", batch, "--n", "1", "--out", "/dev/null"]
    code, _, err = cli(*args, *_store(tmp_path))
    assert code == 2 and "/dev/null" in err


def test_the_sheet_folder_must_be_a_folder_or_nothing(tmp_path: Path) -> None:
    """``sample-failures --out`` is a folder: an existing one is written into, a new one made."""
    batch = imported(tmp_path, GOOD, "good")
    for folder in (tmp_path / "new", tmp_path):
        args = ["sample-failures", batch, "--n", "1", "--out", str(folder)]
        code, _, err = cli(*args, *_store(tmp_path))
        assert code == 0, err
        assert (folder / "sheet.csv").is_file()


def test_an_existing_regular_file_or_a_link_to_one_is_written(tmp_path: Path) -> None:
    """The control: an old report is replaced, through a link to it too."""
    batch = imported(tmp_path, GOOD, "good")
    old = tmp_path / "old.html"
    old.write_text("old")
    link = tmp_path / "link.html"
    link.symlink_to(old)
    for path in (old, link):
        code, _, err = cli("report", batch, "--html", str(path), *_store(tmp_path))
        assert code == 0, err
        assert "<html" in old.read_text().lower()
        old.write_text("old")


def test_output_refusal_says_what_is_there(tmp_path: Path) -> None:
    from groundstate.paths import output_refusal  # new in this round

    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "file").write_text("x")
    assert output_refusal(tmp_path / "missing") is None
    assert output_refusal(tmp_path / "file") is None
    assert output_refusal(tmp_path / "file", folder=True) == "a file, not a folder"
    assert output_refusal(tmp_path, folder=True) is None
    assert output_refusal(tmp_path) == "a folder, not a file"
    pipe = "not a regular file (a named pipe)"
    for folder in (False, True):
        assert output_refusal(tmp_path / "pipe", folder=folder) == pipe


def test_a_named_pipe_in_the_way_of_a_folder_is_called_one(tmp_path: Path) -> None:
    """Fails on the old code: "pipe is a link to no folder, not a folder"."""
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(NotADirectoryError, match="pipe is a named pipe, not a folder"):
        make_folder(tmp_path / "pipe" / "sub")
    with pytest.raises(NotADirectoryError, match="pipe is a named pipe, not a folder"):
        make_folder(tmp_path / "pipe")
