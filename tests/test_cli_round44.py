"""Command-line input and user files, forty-fourth round.

- Click's own refusals (an unknown option, a number out of range, a missing argument) printed
  the usage and ``Error: ...``; the library's print ``error: ...``. Every refusal is now one
  ``error: ...`` line (exit 2 for a usage error), then where help is.
- ``--seed`` had no bound on ``run``, ``play`` and ``import-tau2`` (``-5`` and 10^23 were
  stored with the batch) and no upper one elsewhere: every seed is 0 to 2^32 - 1.
- ``--fail-under pass^K``: a K of 5,000 digits was a traceback, ``pass^00`` a k of 0.
- ``run``'s refusal of invalid tasks printed its list as one line with ``\\n`` in it.
- A ``tasks`` that is a file, or a folder this user may not read, was "no task files".
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from groundstate.cli import main
from groundstate.spec.suite import load_suite
from groundstate.store import RunStore
from groundstate.validation.static import check_suite
from tests.cli_workspace import (
    STORE,
    SYSTEM,
    assert_refused,
    digest,
    groundstate,
)
from tests.conftest import BANK, BANK_SYSTEM

TASK_FILE = "retail/tasks/refund-socks.yaml"
MAX_SEED = 2**32 - 1
"""`groundstate.cli.MAX_SEED`: the largest seed."""

RUN = ["run", "retail", "--system", SYSTEM, "--task", "refund-socks", "--store", STORE]


def _invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(arg) for arg in args])


def _one_style(result: Result) -> list[str]:
    """The stderr lines of a refusal said in the one style: exit 2, the first line ``error:``,
    no click ``Error:`` or usage block, no traceback."""
    lines = result.stderr.splitlines()
    assert result.exit_code == 2, result.output
    assert lines and lines[0].startswith("error: "), result.output
    assert not any(line.startswith(("Error:", "Usage:")) for line in lines), result.output
    assert "Traceback" not in result.output
    return lines


# --- one style for every refusal ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["run", BANK, "--system", BANK_SYSTEM, "--attempts", "0"], "'--attempts': 0 is not in"),
        (["run"], "Missing argument 'SUITE'"),
        (["run", BANK], "Missing option '--system'"),
        (["run", BANK, "--system", BANK_SYSTEM, "--sed", "1"], "No such option '--sed'"),
        (["--nope"], "No such option '--nope'"),
        (["no-such-command"], "No such command 'no-such-command'"),
        (["labels", "import"], "Missing argument 'FILE'"),
        (["compare", "a", "b", "--fdr", "2"], "'--fdr': 2.0 is not in the range"),
        (["run", BANK, "--system", BANK_SYSTEM, "--executor", "gpu"], "'--executor': 'gpu'"),
    ],
    ids=[
        "range",
        "argument",
        "option",
        "unknown-option",
        "group-option",
        "command",
        "subgroup",
        "float-range",
        "choice",
    ],
)
def test_clicks_own_refusals_are_one_error_line_then_where_help_is(
    args: list[str], said: str, tmp_path: Path
) -> None:
    result = _invoke(*args, *(["--store", tmp_path / "s.db"] if args[0] == "run" else []))
    lines = _one_style(result)
    assert said in lines[0], result.output
    assert lines[1:] and lines[-1].startswith("Try '") and lines[-1].endswith(" --help' for help.")
    assert not (tmp_path / "s.db").exists()


def test_a_usage_error_a_command_raises_is_said_the_same_way(tmp_path: Path) -> None:
    args = ["run", BANK, "--system", BANK_SYSTEM, "--resume", "abc", "--task", "transfer"]
    lines = _one_style(_invoke(*args, "--store", tmp_path / "s.db"))
    assert lines[0] == "error: --resume runs the tasks its batch chose; drop --task/--slice/-k"


def test_a_library_error_keeps_its_one_line_and_no_help_line(tmp_path: Path) -> None:
    result = _invoke("check-env", "")
    assert _one_style(result) == [result.stderr.strip()]


def test_a_group_given_no_command_still_prints_its_help() -> None:
    result = _invoke("labels")
    assert "Usage:" in result.output and "import" in result.output
    assert not any(line.startswith("error:") for line in result.output.splitlines())


def test_a_process_run_says_a_usage_error_in_the_one_style(copy: Path) -> None:
    before = digest(copy / STORE)
    outcome = groundstate(*RUN, "--concurrency", "0", cwd=copy)
    assert_refused(outcome, "--concurrency")
    assert outcome.code == 2 and not outcome.err.startswith("Usage:"), outcome.text
    assert "Try 'python -m groundstate run --help' for help." in outcome.err.splitlines()
    assert digest(copy / STORE) == before


# --- every seed: 0 to 2^32 - 1 ----------------------------------------------------------------

SEEDED = {
    "run": ["run", BANK, "--system", BANK_SYSTEM],
    "play": ["play", BANK, "transfer"],
    "report": ["report", "abc"],
    "compare": ["compare", "abc", "def"],
    "sample-failures": ["sample-failures", "abc", "--n", "1", "--out", "out"],
    "import-tau2": ["import-tau2", "nowhere", "--into", "suite", "--sample", "1"],
}


def _seeded(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Parameter]]:
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from _seeded(command, f"{prefix}{name} ")
        for param in command.params:
            if param.name == "seed":
                yield prefix + name, param


def test_every_seed_option_has_the_one_range() -> None:
    import groundstate.cli

    assert groundstate.cli.MAX_SEED == MAX_SEED
    found = dict(_seeded(main))
    assert set(found) == set(SEEDED)
    for command, param in found.items():
        assert isinstance(param.type, click.IntRange), command
        assert (param.type.min, param.type.max) == (0, MAX_SEED), command


@pytest.mark.parametrize("seed", ["-1", str(2**32), "9" * 30, "1" + "0" * 5000])
@pytest.mark.parametrize("command", sorted(SEEDED))
def test_a_seed_out_of_range_is_refused_before_any_store_is_made(
    command: str, seed: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # `--out out`, `--into suite`
    store = tmp_path / "s.db"
    result = _invoke(*SEEDED[command], "--seed", seed, "--store", store)
    lines = _one_style(result)
    assert "'--seed'" in lines[0], result.output
    assert not store.exists() and not (tmp_path / "suite").exists()
    assert not (tmp_path / "out").exists()


def test_the_largest_seed_runs_and_is_stored(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    args = ["run", BANK, "--system", BANK_SYSTEM, "--task", "transfer", "--json"]
    result = _invoke(*args, "--seed", str(MAX_SEED), "--store", store)
    assert result.exit_code == 0, result.output
    with RunStore(store) as runs:
        assert runs.batch(json.loads(result.stdout)["batch_id"]).seed == MAX_SEED


def test_a_seed_is_documented_with_its_range() -> None:
    help_text = _invoke("run", "--help").stdout
    assert "0<=x<=4294967295" in " ".join(help_text.split())


# --- --fail-under's k ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "gate",
    ["pass^1" + "0" * 5000 + "=0.5", "pass^00=0.5", "pass@000=1", "pass^100001=0.5"],
    ids=["5000-digits", "zero-zero", "zeros", "past-attempts"],
)
def test_a_gate_k_out_of_range_is_refused_before_the_batch(gate: str, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    args = ["run", BANK, "--system", BANK_SYSTEM, "--fail-under", gate, "--store", store]
    result = _invoke(*args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "k must be 1 to 100,000" in result.stderr.splitlines()[0], result.output
    assert not store.exists()


def test_a_gate_k_within_range_still_reads() -> None:
    from groundstate.gates import parse_gate

    assert parse_gate("pass^100000=0.5").k == 100_000
    assert parse_gate("pass@01=0.5").k == 1
    assert parse_gate("success_rate=0.5").k is None


# --- a refusal that lists ----------------------------------------------------------------------


def test_run_lists_its_invalid_tasks_a_line_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The message's line breaks printed as ``\\n`` in one line."""
    import groundstate.validation as validation
    from groundstate.validation.suite import InvalidTasks

    def refuse(*_args: object, **_kwargs: object) -> list[str]:
        raise InvalidTasks("2 tasks are not valid:\n  a: reset: x\n  b: solvable: y\x1b[2J")

    monkeypatch.setattr(validation, "require_valid", refuse)
    args = ["run", BANK, "--system", BANK_SYSTEM, "--store", tmp_path / "s.db"]
    lines = _one_style(_invoke(*args))
    assert lines == ["error: 2 tasks are not valid:", "  a: reset: x", "  b: solvable: y\\x1b[2J"]


def test_a_one_line_error_with_a_line_break_in_a_name_stays_one_line(tmp_path: Path) -> None:
    """Only a listing error is split: a path with a line break is still shown escaped."""
    result = _invoke("check-env", "a\nerror: fake")
    assert len(_one_style(result)) == 1 and "a\\nerror: fake" in result.stderr


# --- the tasks folder --------------------------------------------------------------------------


def test_tasks_a_file_is_said_so(retail_folder: Path) -> None:
    shutil.rmtree(retail_folder / "tasks")
    (retail_folder / "tasks").write_text("refund-socks\n")
    problems = [str(p) for p in check_suite(retail_folder).errors]
    assert any(
        p.endswith("tasks: is a file, not the folder of task files (tasks/*.yaml)")
        for p in problems
    ), problems


def test_a_tasks_folder_that_cannot_be_read_is_said_so(
    retail_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a user other than root finds it (``chmod 000 tasks``): glob lists nothing there."""
    real_scandir, real_listdir = os.scandir, os.listdir

    def denied(path: object) -> OSError:
        return PermissionError(errno.EACCES, "Permission denied", os.fspath(str(path)))

    def scandir(path: object = ".") -> object:
        if isinstance(path, str | Path) and Path(path).name == "tasks":
            raise denied(path)
        return real_scandir(path)  # type: ignore[arg-type]

    def listdir(path: object = ".") -> list[str]:
        if isinstance(path, str | Path) and Path(path).name == "tasks":
            raise denied(path)
        return real_listdir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "listdir", listdir)
    problems = [str(p) for p in check_suite(retail_folder).errors]
    assert any(p.endswith("tasks: cannot read: Permission denied") for p in problems), problems


def test_no_tasks_folder_is_still_no_task_files(retail_folder: Path) -> None:
    shutil.rmtree(retail_folder / "tasks")
    problems = [str(p) for p in check_suite(retail_folder).errors]
    assert any(p.endswith("tasks: the suite has no task files (tasks/*.yaml)") for p in problems)


# --- malformed files through `run`: named, located, nothing stored ---------------------------


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


MALFORMED = {
    "task-wrong-type": (TASK_FILE, "task_revision: 1", "task_revision: [1]", ":3: task_revision:"),
    "task-duplicate": (TASK_FILE, "task_revision: 1", "task_revision: 1\ntask_revision: 2", ":4:"),
    "task-unknown": (TASK_FILE, "step_limit: 20", "step_limit: 20\ncolour: red", "colour: unknown"),
    "task-huge-int": (TASK_FILE, "step_limit: 20", "step_limit: 1" + "0" * 5000, "step_limit:"),
    "task-huge-float": (TASK_FILE, "time_limit: 60", "time_limit: 1.0e+308", "time_limit:"),
    "task-nan": (TASK_FILE, "time_limit: 60", "time_limit: .nan", "time_limit:"),
    "suite-wrong-type": ("retail/suite.yaml", "canary: refund-socks", "canary: [1]", "canary"),
    "system-unknown": (SYSTEM, "name: retail-careful", "name: retail-careful\nx: 1", "x: unknown"),
    "system-huge": (SYSTEM, "max_turns: 20", "max_turns: 99999999999999999999", "max_turns"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_field_is_named_with_its_file_and_line_and_stores_nothing(
    copy: Path, case: str
) -> None:
    file, old, new, said = MALFORMED[case]
    _replace(copy / file, old, new)
    before = digest(copy / STORE)
    outcome = groundstate(*RUN, cwd=copy)
    assert_refused(outcome, file, said)
    assert outcome.code == 2 and digest(copy / STORE) == before


@pytest.mark.parametrize(
    "damage",
    ["empty", "binary", "folder", "fifo"],
)
@pytest.mark.parametrize("file", [TASK_FILE, "retail/suite.yaml", SYSTEM])
def test_a_file_that_is_no_yaml_text_is_named_and_stores_nothing(
    copy: Path, file: str, damage: str
) -> None:
    path = copy / file
    path.unlink()
    if damage == "empty":
        path.write_bytes(b"")
    elif damage == "binary":
        path.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
    elif damage == "folder":
        path.mkdir()
    else:
        os.mkfifo(path)
    before = digest(copy / STORE)
    outcome = groundstate(*RUN, cwd=copy)
    assert_refused(outcome, file)
    assert outcome.code == 2 and digest(copy / STORE) == before


# --- paths as given; the clock's messages ------------------------------------------------------


def test_lock_check_names_the_suite_as_given(
    retail_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(retail_folder.parent)
    assert _invoke("lock", "retail").exit_code == 0
    for given in ["retail", str(retail_folder)]:
        result = _invoke("lock", given, "--check")
        assert result.exit_code == 0 and result.stdout == f"{given} matches its lock\n"


@pytest.mark.parametrize(
    ("clock", "said"),
    [
        (
            "2025-06-16T15:00:00",
            "clock: 2025-06-16T15:00:00 has no time zone: write one, such as "
            '"2025-06-16T15:00:00Z" (UTC) or "2025-06-16T15:00:00+02:00"',
        ),
        (
            "2025-06-16",
            "clock: 2025-06-16 is a day, not a moment: write its time and time zone, such as "
            '"2025-06-16T00:00:00Z" (UTC)',
        ),
    ],
)
def test_the_clock_messages_are_as_they_were(retail_folder: Path, clock: str, said: str) -> None:
    _replace(
        retail_folder / "tasks" / "refund-socks.yaml",
        "clock: 2025-06-16T15:00:00Z",
        f"clock: {clock}",
    )
    problems = [str(p) for p in check_suite(retail_folder).errors]
    assert any(p.endswith(said) for p in problems), problems
    with pytest.raises(Exception, match="clock"):
        load_suite(retail_folder)
