"""Twenty-fifth round, imports: what a job, a simulation or an instance's report holds that
nothing here reads is never held.

- A Harbor job's trials were all held (without their rollouts) to be sorted by when they
  started: a job of many trials, each with its config and exception text, took memory in
  proportion to the job. Each trial is now read for what the whole job needs (its order, id,
  dataset, version, reward key, system) and read again, one at a time, for its row.
- A τ² simulation was held whole (a monolithic file's, one at a time; a "dir" form's file read
  whole): its ``messages`` (each with its text, tool calls and the model's ``raw_data``) are
  most of it, and only each message's ``role`` and ``usage`` are read. Telling a monolithic
  file's form read its first simulation whole too.
- A SWE-bench instance's ``report.json`` in a model's folder of logs was read whole, and an
  instance's entry of a file of reports was parsed whole before its ``tests_status`` (every
  test's name) was dropped: ``tests_status`` is now read past.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import groundstate.importers.harbor as harbor
from groundstate.importers import ImportOptions, import_file, read_rows
from groundstate.store import RunStore
from tests.test_imports_formats import Store
from tests.test_imports_harbor import job, trial
from tests.test_imports_round15 import instance, logs
from tests.test_imports_tau2_versions import dir_format, monolithic, simulation


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _peak(read: Callable[[], Any]) -> tuple[Any, int]:
    """What *read* returns, and the most memory it held at once."""
    tracemalloc.start()
    try:
        result = read()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _imported(path: Path, tmp_path: Path) -> tuple[list[tuple[str, bool, str]], int]:
    """(task, success, reason) of each run *path* imports as, and the peak memory it took."""
    with RunStore(tmp_path / f"{path.name}.db") as runs:
        report, peak = _peak(lambda: import_file(path, "x", runs))
        rows = runs.runs(report.batch.batch_id)
    return sorted((r.task_id, r.success, r.terminal_reason) for r in rows), peak


# --- Harbor: a job's trials, one at a time --------------------------------------------------


def _bulky_job(root: Path, trials: int) -> Path:
    """A job of *trials* trials of 4 tasks, each holding 300 KB that decides nothing (its
    config's notes), rewards alternating 0 and 1."""
    made = []
    for i in range(trials):
        one = trial(f"t{i % 4}", f"t{i % 4}__{i}", {"reward": i % 2}, minute=i % 60)
        one["config"]["notes"] = ["line " * 20] * 3000
        made.append(one)
    return job(root, made)


def test_a_harbor_jobs_trials_are_not_all_held(tmp_path: Path) -> None:
    """40 trials of 300 KB each: all held to be sorted, the import peaked at 20 MB; read for
    their order and again one at a time, at about 2 MB."""
    rows, peak = _imported(_bulky_job(tmp_path / "job", 40), tmp_path)
    assert len(rows) == 40
    assert sum(success for _, success, _ in rows) == 20
    assert peak < 8_000_000, peak


def test_a_harbor_jobs_order_and_checks_are_as_before(tmp_path: Path) -> None:
    """Control: rows in the order the trials started (a later-named trial that started first
    is first), every check of the whole job still made before any row (two reward keys, an id
    in two files) and the system read from the first trial."""
    trials = [
        trial("a", "a__2", {"reward": 1.0}, minute=1),
        trial("a", "a__1", {"reward": 0.0}, minute=2),
        trial("b", "b__1", {"reward": 1.0}, minute=0),
    ]
    folder = job(tmp_path / "job", trials)
    source = harbor.HarborSource(folder)
    rows = list(source.rows())
    assert [(r.task_id, r.label, r.success) for r in rows] == [
        ("b", "b__1", True), ("a", "a__2", True), ("a", "a__1", False)
    ]  # fmt: skip
    assert source.place(1).endswith("b__1/result.json")
    assert source.system()["agent"] == {"name": "terminus-2", "version": "1.0"}
    assert source.system()["dataset"] == "terminal-bench"

    keys = [trial("a", "a__1", {"reward": 1.0}), trial("a", "a__2", {"accuracy": 1.0}, minute=1)]
    with pytest.raises(harbor.SpecError, match=r"reward 'accuracy', but .* gives 'reward'"):
        list(harbor.HarborSource(job(tmp_path / "keys", keys)).rows())
    twice = trial("a", "a__3", {"reward": 1.0}, minute=1)
    twice["id"] = trials[2]["id"]
    with pytest.raises(harbor.SpecError, match=r"id: trial .* is also at"):
        list(harbor.HarborSource(job(tmp_path / "twice", [trials[2], twice])).rows())


def test_a_trial_is_read_once_so_it_cannot_change_between_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trial was read twice (for the job's order, then for its row), and one whose file
    changed between the two was refused; since the twenty-seventh round each is read once
    (its row made on that read), so what orders it and what counts it are one reading."""
    trials = [trial("a", f"a__{i}", {"reward": 1.0}, minute=i) for i in range(2)]
    folder = job(tmp_path / "job", trials)
    read = harbor.read_result

    def counted(path: Path) -> dict[str, Any]:
        calls[path] = calls.get(path, 0) + 1
        return read(path)

    calls: dict[Path, int] = {}
    monkeypatch.setattr(harbor, "read_result", counted)
    assert len(list(harbor.HarborSource(folder).rows())) == 2
    assert set(calls.values()) == {1} and len(calls) == 3  # the job's file and two trials'


# --- τ²: a simulation without its messages' text ----------------------------------------------

USAGE = {"prompt_tokens": 10, "completion_tokens": 2}


def _long_conversation() -> list[dict[str, Any]]:
    """4,000 messages of 5 KB each (text, and the model's raw response): 20 MB."""
    return [
        {"role": role, "content": "x" * 2000, "raw_data": {"choices": ["y" * 3000]},
         "usage": USAGE if role == "assistant" else {"prompt_tokens": 999}}
        for role in ("assistant", "user") * 2000
    ]  # fmt: skip


@pytest.mark.parametrize("form", ["monolithic", "dir"])
def test_a_tau2_simulations_messages_are_not_held(form: str, tmp_path: Path) -> None:
    """A 20 MB conversation: held whole, the import peaked at 45 MB (monolithic: its first
    simulation parsed whole to tell the form, then again to import it) and 64 MB (a "dir"
    form's file, read whole); now about 7 MB. The agent's tokens are still every assistant
    message's (the user simulator's left out)."""
    sims = [simulation("a", "1", 0, messages=_long_conversation())]
    path = (monolithic if form == "monolithic" else dir_format)(tmp_path, sims)
    rows, peak = _imported(path, tmp_path)
    assert rows == [("1", True, "success")]
    assert peak < 20_000_000, peak
    (row,) = read_rows(path, ImportOptions())
    assert row.tokens == (10 * 2000, 2 * 2000)


@pytest.mark.parametrize("form", ["monolithic", "dir"])
def test_a_tau2_messages_read_past_are_held_to_a_whole_parse(form: str, tmp_path: Path) -> None:
    """Control: what is read past is still checked: a key twice inside a message's raw
    response is named by its path, a simulation file cut short or followed by more data is
    refused naming the file, a message that is no object is kept (and counts nothing)."""
    messages = [{"role": "assistant", "raw_data": {"a": 1}, "usage": USAGE}, "note"]
    path = (monolithic if form == "monolithic" else dir_format)(
        tmp_path, [simulation("a", "1", 0, messages=messages)]
    )
    (row,) = read_rows(path, ImportOptions())
    assert row.tokens == (10, 2)
    file = path if form == "monolithic" else path.parent / "simulations" / "a.json"
    text = file.read_text()
    file.write_text(text.replace('{"a": 1}', '{"a": 1, "a": 2}'))
    with pytest.raises(harbor.SpecError, match=r"messages\[0\]\.raw_data\.a: the key appears"):
        read_rows(path, ImportOptions())
    if form == "dir":
        for broken in (text[: len(text) // 2], text + " {}"):
            file.write_text(broken)
            with pytest.raises(harbor.SpecError, match=r"simulations/a\.json:1: not valid JSON"):
                read_rows(path, ImportOptions())


# --- SWE-bench: an instance's report without its tests' names --------------------------------


def _many_tests(resolved: bool) -> dict[str, Any]:
    """An instance's report listing 150,000 tests (15 MB)."""
    names = [f"tests/test_x.py::test_{i}" + "x" * 100 for i in range(150_000)]
    return instance(resolved, tests_status={"PASS_TO_PASS": {"success": names, "failure": []}})


def test_an_instance_report_in_a_folder_of_logs_is_read_without_its_tests(tmp_path: Path) -> None:
    """A 15 MB ``report.json`` in a model's folder of logs was read whole: 72 MB; now 4 MB."""
    folder = logs(tmp_path, a=_many_tests(True), b=instance(False))
    rows, peak = _imported(folder, tmp_path)
    assert rows == [("a", True, "success"), ("b", False, "agent_failure/unresolved")]
    assert peak < 15_000_000, peak


def test_a_file_of_instance_reports_is_read_without_their_tests(tmp_path: Path) -> None:
    """Each instance's entry was parsed whole before its ``tests_status`` was dropped."""
    path = tmp_path / "reports.json"
    path.write_text(json.dumps({"a": _many_tests(False), "b": instance(True)}, indent=4))
    rows, peak = _imported(path, tmp_path)
    assert rows == [("a", False, "agent_failure/unresolved"), ("b", True, "success")]
    assert peak < 15_000_000, peak


def test_an_instance_reports_tests_read_past_are_held_to_a_whole_parse(tmp_path: Path) -> None:
    """Control: a key twice inside ``tests_status``, or a report cut short, is still refused
    naming the field or the file; an instance's report under another id still is."""
    folder = logs(tmp_path, a=instance(True))
    file = folder / "a" / "report.json"
    text = file.read_text()
    file.write_text(text.replace('"success": []', '"success": [], "success": []'))
    with pytest.raises(harbor.SpecError, match=r"a\.tests_status\.FAIL_TO_PASS\.success: the"):
        read_rows(folder, ImportOptions())
    file.write_text(text[:-20])
    with pytest.raises(harbor.SpecError, match=r"a/report\.json:\d+: not valid JSON"):
        read_rows(folder, ImportOptions())
    file.write_text(json.dumps({"b": instance(True)}))
    with pytest.raises(harbor.SpecError, match=r"the report of 'a' holds \['b'\]"):
        read_rows(folder, ImportOptions())
