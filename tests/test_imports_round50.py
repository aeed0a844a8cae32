"""Fiftieth round: imports.

Classes of defect fixed:

- **A first attempt every task lacks was numbered away.** Attempts were numbered from the
  lowest label the file gives, so τ-bench trials 1 and 2 of every task (trial 0 lost), or
  Inspect epochs 2 and 3 (epoch 1 lost), were attempts 1 and 2 of a run of 2 without a word,
  where trials 0 and 2 (a lost trial 1) were attempts 1 and 3 of a run of 3, with a warning.
  A format that numbers its attempts from a known label (τ-bench and τ² trials from 0, Inspect
  epochs and Terminal-Bench attempts from 1) is numbered from it now: the lost first attempt
  is counted in the run's attempts and named, as a lost middle one was. A row file's labels
  are its writer's (from 0, 1 or a run number): still numbered from the lowest.
- **A syntax error in a file of one line was located nowhere.** "file:1: not valid JSON:
  Unterminated string" said nothing of where in megabytes of one line (a results list dumped
  without breaks, cut short); the column and the character offset are given now, read whole
  or streamed past the first window.
- **An Inspect summary's score that disagrees with its sample's was not told.** A finished
  archive's ``summaries.json`` (a copy of each sample's scores) giving ``C`` where the sample
  gives ``I``, or a header's ``accuracy`` / ``mean`` other than the samples held give, was
  silently passed over: the samples are read (the summaries are derived from them), and the
  disagreement is named in a warning with the file, the Inspect task and the sample.
"""

from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from groundstate.store import RunStore
from tests.test_imports_formats import Store, log, sample, write_json
from tests.test_imports_round4 import simulation, tau2_file
from tests.test_imports_round14 import tb_run, tb_trial
from tests.test_imports_round43 import _imported, _reasons
from tests.test_imports_round49 import _archive


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _scores(value: Any) -> dict[str, Any]:
    return {"match": {"value": value}}


def _planned(store: Store, batch: str) -> int:
    """The attempts per task the stored batch says its run had."""
    with RunStore(store.path) as runs:
        (info,) = [b for b in runs.batches() if b.batch_id == batch]
    return info.attempts


# --- a first attempt every task lacks ----------------------------------------------------


def _first_lost(err: str) -> list[str]:
    return [line for line in err.splitlines() if "but no task has more than" in line]


def _tau(trials: list[int]) -> list[dict[str, Any]]:
    return [{"task_id": task, "reward": 1.0, "info": {}, "traj": [], "trial": trial}
            for task in (0, 1) for trial in trials]  # fmt: skip


def test_tau_trials_from_1_count_the_lost_trial_0(store: Store, tmp_path: Path) -> None:
    batch, err = _imported(store, write_json(tmp_path / "t.json", _tau([1, 2])))
    (line,) = _first_lost(err)
    assert "labels run from 1 to 2, from 0 as tau-bench numbers" in line
    assert "(3 attempts)" in line and "none is labelled 0" in line and str(tmp_path) in line
    assert set(_reasons(store, batch)) == {(t, a) for t in ("0", "1") for a in (2, 3)}
    assert _planned(store, batch) == 3


def test_tau_trials_from_2_name_both_lost(store: Store, tmp_path: Path) -> None:
    _, err = _imported(store, write_json(tmp_path / "t.json", _tau([2, 3])))
    (line,) = _first_lost(err)
    assert "none is labelled 0 to 1" in line and "(4 attempts)" in line


def test_inspect_epochs_from_2_count_the_lost_epoch_1(store: Store, tmp_path: Path) -> None:
    samples = [sample(i, e, _scores("C")) for i in (1, 2) for e in (2, 3)]
    batch, err = _imported(store, write_json(tmp_path / "l.json", log(samples)))
    (line,) = _first_lost(err)
    assert "from 1 as inspect numbers" in line and "none is labelled 1" in line
    assert ("1", 2) in _reasons(store, batch) and _planned(store, batch) == 3


def test_a_single_inspect_epoch_2_is_named(store: Store, tmp_path: Path) -> None:
    _, err = _imported(store, write_json(tmp_path / "l.json", log([sample(1, 2, _scores("C"))])))
    assert len(_first_lost(err)) == 1


def test_tau2_trials_from_1_are_named(store: Store, tmp_path: Path) -> None:
    sims = [simulation(t, trial, 1.0) for t in ("a", "b") for trial in (1, 2)]
    _, err = _imported(store, write_json(tmp_path / "results.json", tau2_file(sims)))
    (line,) = _first_lost(err)
    assert "from 0 as tau2-bench numbers" in line


def test_terminal_bench_attempt_2_alone_is_named(store: Store, tmp_path: Path) -> None:
    trials = [tb_trial("hello", 2, True), tb_trial("fix", 2, False)]
    _, err = _imported(store, write_json(tmp_path / "results.json", tb_run(trials)))
    assert any("none is labelled 1" in line for line in _first_lost(err))


@pytest.mark.parametrize("trials", [[0, 1], [0], [0, 1, 2]])
def test_tau_trials_from_0_say_nothing(store: Store, tmp_path: Path, trials: list[int]) -> None:
    batch, err = _imported(store, write_json(tmp_path / "t.json", _tau(trials)))
    assert _first_lost(err) == []
    assert _planned(store, batch) == len(trials)
    assert {a for _, a in _reasons(store, batch)} == set(range(1, len(trials) + 1))


def test_inspect_epochs_from_1_say_nothing(store: Store, tmp_path: Path) -> None:
    samples = [sample(i, e, _scores("C")) for i in (1, 2) for e in (1, 2)]
    batch, err = _imported(store, write_json(tmp_path / "l.json", log(samples)))
    assert _first_lost(err) == [] and _planned(store, batch) == 2


def test_a_task_with_trial_0_keeps_the_others_numbered_alike(store: Store, tmp_path: Path) -> None:
    """One task has trial 0: the lowest label is the first, as before; the other task's
    missing trial is told by the warning on tasks with fewer attempts."""
    rows = [*_tau([1, 2]), {"task_id": 0, "reward": 0.0, "info": {}, "traj": [], "trial": 0}]
    batch, err = _imported(store, write_json(tmp_path / "t.json", rows))
    assert _first_lost(err) == [] and "tasks have 2 to 3 attempts" in err
    assert _reasons(store, batch)[("0", 1)] == "agent_failure/incorrect"


@pytest.mark.parametrize("labels", [(1, 2), (2, 3), (1001, 1002)])
def test_row_labels_are_numbered_from_their_lowest(
    store: Store, tmp_path: Path, labels: tuple[int, int]
) -> None:
    """A row file's labels are its writer's: a run numbered 1001, 1002 lost nothing."""
    path = tmp_path / "r.csv"
    a, b = labels
    path.write_text(f"task_id,attempt,success\nt1,{a},true\nt1,{b},false\nt2,{a},true\n"
                    f"t2,{b},true\n")  # fmt: skip
    batch, err = _imported(store, path)
    assert _first_lost(err) == [] and _planned(store, batch) == 2


# --- syntax errors located by column ------------------------------------------------------


def _one_line(count: int) -> str:
    row = {"reward": 1.0, "info": {"note": "x" * 300}, "traj": [], "trial": 0}
    return json.dumps([{"task_id": t, **row} for t in range(count)])


def write_json_text(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _expected(text: str) -> json.JSONDecodeError:
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(text)
    return caught.value


@pytest.mark.parametrize("count", [20, 8000])  # read whole / streamed past the first window
def test_a_truncated_one_line_file_names_its_column(
    store: Store, tmp_path: Path, count: int
) -> None:
    text = _one_line(count)
    cut = text[: len(text) * 3 // 5]
    err = store.refused(write_json_text(tmp_path / "t.json", cut))
    exc = _expected(cut)
    assert f"t.json:1: not valid JSON: {exc.msg} (column {exc.colno}, character {exc.pos})" in err


@pytest.mark.parametrize("count", [20, 8000])
def test_a_stray_character_is_located_on_its_line(store: Store, tmp_path: Path, count: int) -> None:
    text = json.dumps(json.loads(_one_line(count)), indent=1)
    at = text.index('"reward"', len(text) * 2 // 3)
    bad = text[:at] + "?" + text[at:]
    err = store.refused(write_json_text(tmp_path / "t.json", bad))
    exc = _expected(bad)
    assert f"t.json:{exc.lineno}: not valid JSON: " in err
    assert f"(column {exc.colno}, character {exc.pos})" in err


def test_a_truncated_inspect_log_and_row_line_name_their_column(
    store: Store, tmp_path: Path
) -> None:
    text = json.dumps(log([sample(i, 1, _scores("C")) for i in range(30)]))
    assert "(column " in store.refused(write_json_text(tmp_path / "l.json", text[:-400]))
    rows = tmp_path / "r.jsonl"
    rows.write_text('{"task_id": "t", "attempt": 1, "success": true}\n{"task_id": "t", "atte')
    assert "r.jsonl:2: not valid JSON: Unterminated string" in store.refused(rows)
    assert "(column 18, character 17)" in store.refused(rows)


# --- Inspect summaries that disagree with their samples ----------------------------------


def _rescored(err: str) -> list[str]:
    return [line for line in err.splitlines() if "differ" in line and "summaries.json" in line]


def test_a_summary_scoring_otherwise_than_its_sample_is_named(store: Store, tmp_path: Path) -> None:
    held = [sample(1, 1, _scores("I")), sample(2, 1, _scores("C"))]
    listed = [sample(1, 1, _scores("C")), sample(2, 1, _scores("C"))]
    path = _archive(tmp_path / "a.eval", held, listed)
    batch, err = _imported(store, path)
    (line,) = _rescored(err)
    assert str(path) in line and "of task 'ctf'" in line
    assert "'1' epoch 1: match 'C' in the summary, 'I' in the sample" in line
    assert _reasons(store, batch)[("1", 1)] == "agent_failure/incorrect"  # the sample decides


def test_a_summary_failing_a_passed_sample_is_named_too(store: Store, tmp_path: Path) -> None:
    held = [sample(1, 1, _scores(1.0)), sample(2, 1, _scores(0))]
    listed = [sample(1, 1, _scores(0.0)), sample(2, 1, _scores(0))]
    batch, err = _imported(store, _archive(tmp_path / "a.eval", held, listed))
    assert len(_rescored(err)) == 1
    assert _reasons(store, batch)[("1", 1)] == "success"


def test_many_rescored_summaries_are_counted(store: Store, tmp_path: Path) -> None:
    held = [sample(i, 1, _scores("I")) for i in range(8)]
    listed = [sample(i, 1, _scores("C")) for i in range(8)]
    (line,) = _rescored(_imported(store, _archive(tmp_path / "a.eval", held, listed))[1])
    assert "8 scores of task" in line and "and 3 more" in line


@pytest.mark.parametrize(
    "summary",
    [
        _scores("C"),  # as the sample
        _scores(1),  # 1 and 1.0: one number
        {},  # a thinned summary: nothing to compare
        {"other": {"value": "I"}},  # a scorer the sample does not give
    ],
)
def test_summaries_agreeing_or_silent_say_nothing(
    store: Store, tmp_path: Path, summary: dict[str, Any]
) -> None:
    value: Any = 1.0 if summary == _scores(1) else "C"
    held = [sample(1, 1, _scores(value))]
    listed = [sample(1, 1, summary)]
    _, err = _imported(store, _archive(tmp_path / "a.eval", held, listed))
    assert _rescored(err) == []


def test_a_nan_in_both_is_one_value(store: Store, tmp_path: Path) -> None:
    held = [sample(1, 1, _scores(float("nan"))), sample(2, 1, _scores("C"))]
    _, err = _imported(store, _archive(tmp_path / "a.eval", held, held))
    assert _rescored(err) == []


def _results(accuracy: float, reducer: str | None = None, name: str = "match") -> dict[str, Any]:
    metrics = {"accuracy": {"name": "accuracy", "value": accuracy, "params": {}},
               "stderr": {"name": "stderr", "value": 0.5, "params": {}}}  # fmt: skip
    return {"scores": [{"name": name, "scorer": name, "reducer": reducer, "params": {},
                        "metrics": metrics}]}  # fmt: skip


def _metric_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "results.scores of task" in line]


@pytest.mark.parametrize("accuracy", [1.0, 0.0, 0.75])
def test_a_header_accuracy_the_samples_do_not_give_is_named(
    store: Store, tmp_path: Path, accuracy: float
) -> None:
    data = log([sample(1, 1, _scores("C")), sample(2, 1, _scores("I"))])
    data["results"] = _results(accuracy)
    path = write_json(tmp_path / "l.json", data)
    batch, err = _imported(store, path)
    (line,) = _metric_lines(err)
    assert str(path) in line and "of task 'ctf' give match accuracy" in line
    assert "the 2 samples held score 0.5" in line
    assert _reasons(store, batch)[("2", 1)] == "agent_failure/incorrect"


def test_an_archive_header_accuracy_is_checked_too(store: Store, tmp_path: Path) -> None:
    held = [sample(1, 1, _scores("I")), sample(2, 1, _scores("I"))]
    made = _archive(tmp_path / "made.eval", held, held)
    path = tmp_path / "a.eval"
    with zipfile.ZipFile(made) as source, zipfile.ZipFile(path, "w") as archive:
        for name in source.namelist():  # the header given its results
            data = json.loads(source.read(name))
            if name == "header.json":
                data["results"] = _results(1.0)
            archive.writestr(name, json.dumps(data))
    _, err = _imported(store, path)
    assert len(_metric_lines(err)) == 1


@pytest.mark.parametrize(
    ("scores", "accuracy", "reducer"),
    [
        (["C", "I"], 0.5, None),
        (["C", "P"], 0.75, None),  # P is 0.5 to Inspect
        (["yes", "N"], 0.5, "mean"),
        ([1, 0.25], 0.625, None),
        (["C", "I"], 0.5000000000000001, None),  # a float's last digit
    ],
)
def test_a_header_accuracy_the_samples_give_says_nothing(
    store: Store, tmp_path: Path, scores: list[Any], accuracy: float, reducer: str | None
) -> None:
    data = log([sample(i, 1, _scores(v)) for i, v in enumerate(scores)])
    data["results"] = _results(accuracy, reducer)
    _, err = _imported(store, write_json(tmp_path / "l.json", data))
    assert _metric_lines(err) == []


def test_epochs_are_reduced_by_their_mean_first(store: Store, tmp_path: Path) -> None:
    """Sample 1: C, I, I (1/3); sample 2: C (1): Inspect's accuracy is 2/3, the pooled mean
    of the four attempts 1/2."""
    samples = [sample(1, 1, _scores("C")), sample(1, 2, _scores("I")),
               sample(1, 3, _scores("I")), sample(2, 1, _scores("C"))]  # fmt: skip
    data = log(samples)
    data["results"] = _results(2 / 3, "mean")
    _, err = _imported(store, write_json(tmp_path / "l.json", data))
    assert _metric_lines(err) == []
    data["results"] = _results(0.5, "mean")
    _, err = _imported(store, write_json(tmp_path / "m.json", data))
    assert len(_metric_lines(err)) == 1


@pytest.mark.parametrize(
    "edit", ["custom_reducer", "other_scorer", "unscored_nan", "errored_unscored", "not_success"]
)
def test_figures_not_recomputed_here_say_nothing(store: Store, tmp_path: Path, edit: str) -> None:
    samples = [sample(1, 1, _scores("C")), sample(2, 1, _scores("I"))]
    status = "success"
    results = _results(0.5)
    if edit == "custom_reducer":  # round 51 recomputes Inspect's own reducers (mode too)
        results = _results(1.0, "best_of")
    elif edit == "other_scorer":
        results = _results(1.0, name="other")
    elif edit == "unscored_nan":  # Inspect's metrics leave a NaN out: 1 of 1
        samples.append(sample(3, 1, _scores(float("nan"))))
        results = _results(0.5)
    elif edit == "errored_unscored":
        samples.append(sample(3, 1, None, error={"message": "boom", "traceback": ""}))
    else:
        status = "error"
    data = log(samples, status)
    data["results"] = results
    _, err = _imported(store, write_json(tmp_path / "l.json", data))
    if edit == "custom_reducer":  # round 52: said to be unchecked, not passed over in silence
        (line,) = _metric_lines(err)
        assert "reduced by 'best_of'" in line and "not checked against the samples" in line
        return
    assert _metric_lines(err) == []


def test_a_large_log_is_checked_in_linear_time(store: Store, tmp_path: Path) -> None:
    samples = [sample(i, e, _scores("C" if i % 2 else "I")) for i in range(1500) for e in (1, 2)]
    data = log(samples)
    data["results"] = _results(0.5, "mean")
    path = write_json(tmp_path / "l.json", data)
    started = time.perf_counter()
    _, err = _imported(store, path)
    assert time.perf_counter() - started < 60
    assert _metric_lines(err) == []


# --- a one-line object of no known format --------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        {"foo": 1},
        {"model": "gpt-4o", "score": 0.8, "n": 10},  # another harness's summary
        {"agent": {"name": "a"}, "tasks": ["t1"]},  # a config file
    ],
)
def test_a_one_line_object_of_no_known_format_says_so(
    store: Store, tmp_path: Path, data: dict[str, Any]
) -> None:
    """It was refused as a row of ours ("task_id: required, and missing or blank"), with no
    word that no format here matched it."""
    err = store.refused(write_json(tmp_path / "results.json", data))
    assert "task_id: required" in err and "read as JSON Lines rows of ours" in err
    assert f"({next(iter(data))!r}" in err and "no results format known here" in err


@pytest.mark.parametrize(
    ("name", "extra"),
    [("rows.json", ()), ("rows.jsonl", ()), ("rows.json", ("--format", "jsonl"))],
)
def test_rows_of_ours_refused_for_a_row_say_nothing_of_formats(
    store: Store, tmp_path: Path, name: str, extra: tuple[str, ...]
) -> None:
    path = tmp_path / name
    path.write_text('{"task_id": "t", "attempt": 1, "success": true}\n{"attempt": 2}\n')
    err = store.refused(path, *extra)
    assert ":2: task_id: required" in err and "no results format known here" not in err


def test_an_object_named_jsonl_is_read_as_rows(store: Store, tmp_path: Path) -> None:
    """A file named ``.jsonl`` is rows by its name: its error is the row's alone."""
    err = store.refused(write_json(tmp_path / "r.jsonl", {"foo": 1}))
    assert "task_id: required" in err and "no results format known here" not in err
