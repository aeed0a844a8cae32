"""Thirty-second round, imports: files that are no results file, trials of another task, tasks
with no trial, and Inspect's unscored samples.

- The check that the results file is a regular file was made in three places (the CLI before
  the store, ``import_file``, ``open_source``); it is made once, in ``open_source``, which
  ``import_file`` calls before it opens a store it is given by its folder (the CLI gives it
  so). The files a results file's folder holds (a Harbor job's trials, τ²'s ``simulations/``)
  were not checked at all: a named pipe among them was waited on for ever.
- A link to a link to nowhere was "a link to B, which does not exist", B being there (a link);
  a file under a folder link to nowhere was "file not found".
- A Terminal-Bench trial named after one task and giving another ``task_id`` was read as given.
- A Harbor job's ``config.json`` listing tasks with no trial named none of them.
- An Inspect score of NaN (``Score.unscored()``) was a grader failure without a word of what
  it is.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from groundstate.errors import SpecError
from groundstate.importers import ImportOptions, import_file, read_rows
from groundstate.store import RunStore
from tests.test_imports_formats import Store, cli, log, sample, write_json
from tests.test_imports_round14 import tb_run, tb_trial
from tests.test_imports_round29 import _harbor, _trials
from tests.test_imports_tau2_versions import SIMULATIONS, dir_format

SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _cli_in_time(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own, stopped after a minute (a named pipe read waits for
    ever: in-process, the test would never end)."""
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-m", "groundstate.cli", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


# --- one check that the results file is a file --------------------------------------------------


@pytest.mark.parametrize("fmt", [None, "jsonl", "harbor", "inspect"])
def test_the_library_refuses_a_named_pipe_before_it_makes_the_store(
    tmp_path: Path, fmt: str | None
) -> None:
    """``import_file`` given the store's folder makes it only once the file is found to be
    one: a named pipe (under any format) leaves nothing behind, and no byte is read."""
    pipe = tmp_path / "r.jsonl"
    os.mkfifo(pipe)
    with pytest.raises(SpecError) as caught:
        import_file(pipe, "x", tmp_path / "s.db", ImportOptions(format=fmt))
    assert str(caught.value) == f"{pipe}: not a regular file (a named pipe)"
    assert not (tmp_path / "s.db").exists()


def test_the_library_opens_a_store_given_by_its_folder(tmp_path: Path) -> None:
    rows = tmp_path / "r.csv"
    rows.write_text("task_id,attempt,success\na,0,true\na,1,false\n")
    report = import_file(rows, "x", tmp_path / "s.db")
    with RunStore(tmp_path / "s.db") as runs:
        assert [b.batch_id for b in runs.batches()] == [report.batch.batch_id]


def test_the_cli_makes_no_check_of_its_own() -> None:
    """The CLI relies on the library's one check (a second one drifted from it before)."""
    source = (Path(SRC) / "groundstate" / "cli" / "interop.py").read_text()
    assert "regular_file" not in source
    importers = (Path(SRC) / "groundstate" / "importers" / "__init__.py").read_text()
    assert importers.count("regular_file(path)") == 2  # open_source's, detect_format's own


def test_a_named_pipe_in_a_harbor_job_is_refused_not_waited_on(tmp_path: Path) -> None:
    folder = _harbor(tmp_path / "job", _trials({"a": 2}), 2)
    trial = next(folder.glob("*/result.json"))
    trial.unlink()
    os.mkfifo(trial)
    done = _cli_in_time("import-results", "job", "--name", "x", "--store", "s.db", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr == f"error: {trial.relative_to(tmp_path)}: not a regular file (a named pipe)\n"
    )
    assert not (tmp_path / "s.db").exists() or "Traceback" not in done.stderr


def test_a_named_pipe_among_tau2_simulations_is_refused(tmp_path: Path) -> None:
    path = dir_format(tmp_path, SIMULATIONS[:2])
    simulation = tmp_path / "run" / "simulations" / f"{SIMULATIONS[1]['id']}.json"
    simulation.unlink()
    os.mkfifo(simulation)
    done = _cli_in_time("import-results", str(path), "--name", "x", "--store", "s.db",
                        cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"{simulation}: not a regular file (a named pipe)" in done.stderr


# --- links to nowhere, named with what they point to --------------------------------------------


def test_a_link_to_a_link_to_nowhere_names_both(store: Store, tmp_path: Path) -> None:
    (tmp_path / "b.json").symlink_to("/gone/c.json")
    (tmp_path / "a.json").symlink_to("b.json")
    err = store.refused(tmp_path / "a.json")
    assert err == (
        f"error: {tmp_path / 'a.json'}: a link to b.json (a link to /gone/c.json), which does "
        "not exist\n"
    )


def test_a_file_under_a_folder_link_to_nowhere_names_the_link(store: Store, tmp_path: Path) -> None:
    (tmp_path / "job").symlink_to("/gone/job")
    err = store.refused(tmp_path / "job" / "result.json")
    assert f"{tmp_path / 'job'} is a link to /gone/job, which does not exist" in err


def test_a_link_to_nowhere_is_named_with_its_target(store: Store, tmp_path: Path) -> None:
    (tmp_path / "r.json").symlink_to("../nowhere/r.json")
    err = store.refused(tmp_path / "r.json")
    assert (
        err == f"error: {tmp_path / 'r.json'}: a link to ../nowhere/r.json, which does not exist\n"
    )


# --- Terminal-Bench: a trial of another task ----------------------------------------------------


def test_a_terminal_bench_trial_named_for_another_task_is_refused(
    store: Store, tmp_path: Path
) -> None:
    """``hello.1-of-2.<run>`` is a trial of ``hello``: giving ``task_id`` ``fix`` it would
    count for a task that may never have run it."""
    odd = {**tb_trial("hello", 2, True), "task_id": "fix"}
    path = write_json(tmp_path / "results.json", tb_run([tb_trial("hello", 1, False), odd]))
    err = store.refused(path)
    assert "results[1]" in err and "task_id: 'fix', but its trial_name" in err
    assert "'hello.2-of-2.2026-08-01__10-00-00' is of task 'hello'" in err


def test_a_terminal_bench_task_with_dots_in_its_name_is_still_its_own(
    store: Store, tmp_path: Path
) -> None:
    trials = [tb_trial("py.lint", 1, True), tb_trial("py.lint", 2, False)]
    path = write_json(tmp_path / "results.json", tb_run(trials))
    store.imported(path)


# --- Harbor: tasks the job listed with no trial -------------------------------------------------


def _listing(folder: Path, **fields: Any) -> None:
    config = json.loads((folder / "config.json").read_text())
    write_json(folder / "config.json", {**config, **fields})


def test_harbor_tasks_listed_with_no_trial_are_named(tmp_path: Path) -> None:
    folder = _harbor(tmp_path / "job", _trials({"a": 2, "b": 2}), 2, n_total_trials=8)
    _listing(folder, tasks=[{"path": f"tasks/{t}"} for t in ("a", "b", "c", "d")])
    code, _, err = cli("import-results", str(folder), "--name", "x", "--store",
                       str(tmp_path / "s.db"))  # fmt: skip
    assert code == 0, err
    assert "config.json: tasks lists 2 tasks with no trial in the job's folder ('c', 'd')" in err
    assert "registry" not in err


def test_harbor_datasets_are_said_to_need_their_registry(tmp_path: Path) -> None:
    folder = _harbor(tmp_path / "job", _trials({"a": 2}), 2, n_total_trials=4)
    _listing(folder, datasets=[{"name": "terminal-bench", "version": "2.0"}])
    code, _, err = cli("import-results", str(folder), "--name", "x", "--store",
                       str(tmp_path / "s.db"))  # fmt: skip
    assert code == 0, err
    assert "the job ran 1 dataset, whose tasks a registry or a dataset folder lists" in err
    assert "cannot be told here" in err


def test_a_harbor_job_with_every_listed_task_run_says_nothing_of_them(tmp_path: Path) -> None:
    folder = _harbor(tmp_path / "job", _trials({"a": 2, "b": 2}), 2)
    _listing(folder, tasks=[{"path": "tasks/a"}, {"path": "tasks/b"}, "odd", {"path": 3}],
             datasets=[{"name": "tb"}])  # fmt: skip
    code, _, err = cli("import-results", str(folder), "--name", "x", "--store",
                       str(tmp_path / "s.db"))  # fmt: skip
    assert code == 0 and err == "", err


# --- Inspect: odd score values ------------------------------------------------------------------


def _inspect(tmp_path: Path, value: Any, **score: Any) -> Path:
    path = tmp_path / "log.json"
    data = log([sample(1, 1, {"m": {"value": "C"}}), sample(2, 1, {"m": {"value": 0, **score}})])
    text = json.dumps(data)
    marker = '"value": 0'
    replaced = "NaN" if isinstance(value, float) and math.isnan(value) else json.dumps(value)
    path.write_text(text.replace(marker, f'"value": {replaced}'))
    return path


def test_a_nan_score_is_named_as_inspect_unscored(tmp_path: Path) -> None:
    path = _inspect(tmp_path, math.nan, explanation="grader reply unreadable")
    code, out, err = cli("import-results", str(path), "--name", "x", "--store",
                         str(tmp_path / "s.db"))  # fmt: skip
    assert code == 0, err
    assert "1 sample scored NaN (Inspect's Score.unscored(): the scorer gave no verdict" in err
    assert "score NaN (unscored: no verdict) -> grader_failure" in out
    rows = read_rows(path)
    assert [r.terminal_reason for r in rows] == [None, "grader_failure"] or [
        r.terminal_reason for r in rows
    ][1] == "grader_failure"
    assert (rows[1].origin or {}).get("explanation") == "grader reply unreadable"


@pytest.mark.parametrize(
    ("value", "reason", "success"),
    [("C", None, True), ("I", "agent_failure/incorrect", False), ("N", "agent_failure/incorrect",
     False), ("P", None, False), (True, None, True), ("yes", None, True), ("0.0", None, False)],
)  # fmt: skip
def test_inspect_grades_read_as_inspect_reads_them(
    tmp_path: Path, value: Any, reason: str | None, success: bool
) -> None:
    rows = read_rows(_inspect(tmp_path, value))
    assert rows[1].success is success
    if reason is not None:
        assert rows[1].terminal_reason == reason


@pytest.mark.parametrize(
    ("value", "said"),
    [("c", "'c' is not a verdict"), ("inf", "'inf' is not a verdict"), (None, "None is not a "
     "verdict"), ({"a": 1, "b": 0}, "a value per key (a, b): choose one with --scorer m.KEY"),
     ([], "a value per position (none)"), (1.5, "1.5 is not a verdict")],
)  # fmt: skip
def test_odd_inspect_score_values_are_refused_naming_the_field(
    store: Store, tmp_path: Path, value: Any, said: str
) -> None:
    err = store.refused(_inspect(tmp_path, value))
    assert "scores.m.value" in err and said in err, err


def test_an_infinite_inspect_score_is_refused(store: Store, tmp_path: Path) -> None:
    path = _inspect(tmp_path, 0)
    path.write_text(path.read_text().replace('"value": 0', '"value": Infinity'))
    err = store.refused(path)
    assert "scores.m.value" in err
