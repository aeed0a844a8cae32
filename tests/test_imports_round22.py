"""Other harnesses' result files, twenty-second round.

The class: what a finished Inspect log says of its own run beside its samples was not read,
so an import could hold fewer attempts, or verdicts a person set, without a word:

- samples an early-stopping manager stopped before they ran (``results.early_stopping``:
  Inspect logs no sample for them) left their tasks with fewer epochs, or out of every
  denominator, silently;
- a finished log holding fewer samples than its ``results.total_samples`` (its samples times
  its epochs) warned only when ``completed_samples`` (which leaves errored samples out) said
  so, and one holding more said nothing;
- a deciding score edited after the run (Inspect's ``edit_score``: the value changed in place,
  the scorer's own kept in ``history``) was read as the scorer's verdict; a ``history`` not
  as Inspect writes it was not looked at.

Now each is said in a warning (the edit's author, reason and the scorer's own value kept in
``origin.edited``), and a malformed ``history`` is refused naming the file, sample and field.
Controls: logs without these keys, or whose figures agree, import as before.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from groundstate.importers import ImportOptions, import_file, open_source
from groundstate.store import RunStore
from tests.test_imports2_round21 import _peak
from tests.test_imports_formats import EVAL, PLAN, Store, log, sample, write_json
from tests.test_imports_harbor import evaluation, tracker
from tests.test_imports_round14 import tb_run, tb_trial


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _results(total: int | None, stops: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """``EvalResults`` as Inspect writes it (with an early-stopping summary when *stops*)."""
    results: dict[str, Any] = {"completed_samples": 0, "scores": []}
    if total is not None:
        results["total_samples"] = total
    if stops is not None:
        results["early_stopping"] = {"manager": "plateau", "early_stops": stops, "metadata": {}}
    return results


def _write(path: Path, samples: list[dict[str, Any]], results: dict[str, Any] | None) -> Path:
    """A finished log (``.eval`` archive or ``.json``) with *results* in its header."""
    header = {**log(None), "results": results}
    if path.suffix == ".json":
        return write_json(path, {**header, "samples": samples})
    del header["samples"]
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("_journal/start.json", json.dumps({"version": 2, "eval": EVAL,
                                                            "plan": PLAN}))  # fmt: skip
        for s in samples:
            archive.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        archive.writestr("header.json", json.dumps(header))
        archive.writestr("summaries.json", "[]")
    return path


def _warnings(path: Path, tmp_path: Path) -> list[str]:
    with RunStore(tmp_path / "w.db") as runs:
        return import_file(path, "x", runs).warnings


def _scored(value: Any, **score: Any) -> dict[str, Any]:
    return {"match": {"value": value, **score}}


# --- Inspect: samples stopped early, samples missing against total_samples -------------------


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_samples_stopped_early_are_named_in_a_warning(tmp_path: Path, suffix: str) -> None:
    """Two tasks, three epochs; ``b`` stopped after its first, ``c`` never run: five samples
    logged of nine, four stopped early. The import holds the five and says why the others
    are missing, task ``c`` included (else out of every denominator without a word)."""
    samples = [sample("a", e, _scored("C")) for e in (1, 2, 3)]
    samples += [sample("b", 1, _scored("I")), sample("b", 2, _scored("C"))]
    stops = [{"id": "b", "epoch": 3, "reason": "plateau"}]
    stops += [{"id": "c", "epoch": e, "reason": "plateau"} for e in (1, 2, 3)]
    path = _write(tmp_path / f"log{suffix}", samples, _results(9, stops))
    warnings = _warnings(path, tmp_path)
    stopped = [w for w in warnings if "stopped early" in w]
    assert len(stopped) == 1, warnings
    assert "4 samples were" in stopped[0] and "'plateau'" in stopped[0]
    assert "'c' epoch 1" in stopped[0] and "'b' epoch 3" in stopped[0]
    assert not [w for w in warnings if "total_samples" in w]  # 9 less 4 stopped: all here


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_a_finished_log_missing_samples_against_total_samples_warns(
    tmp_path: Path, suffix: str
) -> None:
    """``completed_samples`` leaves errored samples out, so it cannot tell a lost record;
    ``total_samples`` (samples times epochs) can, less those stopped early."""
    samples = [sample("a", 1, _scored("C")), sample("b", 1, _scored("I"))]
    path = _write(tmp_path / f"log{suffix}", samples, _results(4, [{"id": "c", "epoch": 1}]))
    warnings = _warnings(path, tmp_path)
    missing = [w for w in warnings if "total_samples" in w]
    assert len(missing) == 1, warnings
    assert "is 4 (1 stopped early)" in missing[0] and "the 1 missing" in missing[0]


def test_a_finished_log_holding_more_samples_than_it_ran_warns(tmp_path: Path) -> None:
    samples = [sample("a", 1, _scored("C")), sample("b", 1, _scored("I"))]
    path = _write(tmp_path / "log.eval", samples, _results(1))
    assert any("more than the 1" in w for w in _warnings(path, tmp_path))


@pytest.mark.parametrize("results", [None, _results(None), _results(2), {"total_samples": "2"}])
def test_a_log_whose_figures_agree_or_are_absent_imports_without_a_warning(
    tmp_path: Path, results: dict[str, Any] | None
) -> None:
    """Controls: no results (an older log), no ``total_samples``, one that agrees, and one
    not written as a number (what a file says of its run is no reason to refuse it)."""
    samples = [sample("a", 1, _scored("C")), sample("b", 1, _scored("I"))]
    path = _write(tmp_path / "log.eval", samples, results)
    assert _warnings(path, tmp_path) == []


# --- Inspect: a deciding score edited after the run -------------------------------------------


def _edit(value: Any, author: str = "ana", reason: str = "grader bug") -> dict[str, Any]:
    provenance = {"timestamp": "2026-01-01T00:00:00Z", "author": author, "reason": reason}
    return {"value": value, "answer": "UNCHANGED", "explanation": "UNCHANGED",
            "metadata": "UNCHANGED", "provenance": provenance}  # fmt: skip


def _original(value: Any) -> dict[str, Any]:
    return {"value": value, "answer": None, "explanation": None, "metadata": None,
            "provenance": None}  # fmt: skip


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_an_edited_score_is_read_as_edited_and_said(
    store: Store, tmp_path: Path, suffix: str
) -> None:
    """``edit_score`` turned ``I`` into ``C``: Inspect's metrics read ``C``, and so does the
    import; a warning counts the sample and its origin keeps the scorer's own value."""
    history = [_original("I"), _edit("C")]
    samples = [sample("a", 1, _scored("C", history=history)), sample("b", 1, _scored("I"))]
    path = _write(tmp_path / f"log{suffix}", samples, None)
    source = open_source(path, ImportOptions())
    rows = {row.task_id: row for row in source.rows()}
    assert rows["a"].success and not rows["b"].success
    assert rows["a"].origin is not None
    assert rows["a"].origin["edited"] == {
        "original": "I", "author": "ana", "reason": "grader bug", "edits": 1
    }  # fmt: skip
    assert rows["b"].origin is not None and "edited" not in rows["b"].origin
    edited = [w for w in source.warnings() if "edited" in w]
    assert len(edited) == 1 and "1 sample has" in edited[0]
    batch = store.imported(path)
    assert {t: reason for (t, _, _), (reason, _) in store.runs(batch).items()} == {
        "a": "success", "b": "agent_failure/incorrect"
    }  # fmt: skip


def test_a_score_history_of_only_the_scorers_value_is_no_edit(tmp_path: Path) -> None:
    """Control: a history holding only the original (no provenance) is no edit."""
    samples = [sample("a", 1, _scored("C", history=[_original("C")])),
               sample("b", 1, _scored("I", history=[]))]  # fmt: skip
    path = _write(tmp_path / "log.eval", samples, None)
    source = open_source(path, ImportOptions())
    assert all("edited" not in (row.origin or {}) for row in source.rows())
    assert source.warnings() == []


@pytest.mark.parametrize(
    ("history", "field"),
    [
        ({"value": "C"}, "scores.match.history"),
        (["C"], "scores.match.history[0]"),
        ([_original("I"), {**_edit("C"), "provenance": "ana"}], "scores.match.history[1]"),
    ],
)
def test_a_score_history_not_as_inspect_writes_it_is_refused(
    store: Store, tmp_path: Path, history: Any, field: str
) -> None:
    samples = [sample("a", 1, _scored("C", history=history))]
    path = _write(tmp_path / "log.eval", samples, None)
    err = store.refused(path)
    assert "a_epoch_1.json" in err and field in err


# --- SWE-bench predictions written as a JSON list ------------------------------------------------


PREDICTIONS = [
    {"instance_id": "astropy__astropy-12907", "model_name_or_path": "m", "model_patch": "diff"},
    {"instance_id": "django__django-11099", "model_name_or_path": "m", "model_patch": ""},
]


@pytest.mark.parametrize("given", [(), ("--format", "tau-bench")])
def test_swe_bench_predictions_as_a_list_are_named_for_what_they_are(
    store: Store, tmp_path: Path, given: tuple[str, ...]
) -> None:
    """A list of predictions (patches, no verdict) was read as τ-bench results and refused
    for a missing ``reward``, which sent its user looking for rewards; as an object or JSON
    Lines it was named SWE-bench predictions already."""
    path = write_json(tmp_path / "preds.json", PREDICTIONS)
    err = store.refused(path, *given)
    assert "SWE-bench predictions" in err


def test_a_tau_bench_list_still_imports(store: Store, tmp_path: Path) -> None:
    """Control: τ-bench's own list (its records have ``task_id``) is read as before."""
    results = [{"task_id": 0, "reward": 1.0, "info": {}, "traj": [], "trial": 0},
               {"task_id": 0, "reward": 0.0, "info": {}, "traj": [], "trial": 1}]  # fmt: skip
    batch = store.imported(write_json(tmp_path / "tau.json", results))
    assert sorted(reason for reason, _ in store.runs(batch).values()) == [
        "agent_failure/incorrect", "success"
    ]  # fmt: skip


# --- Terminal-Bench results read trial by trial ---------------------------------------------------


def test_large_terminal_bench_results_are_imported_in_bounded_memory(tmp_path: Path) -> None:
    """A 120 MB ``results.json`` (trials of 500 KB, the figures ``tb run`` computes after
    them) was read whole: several times its size in memory. Read trial by trial, a few MB
    more than a 1 MB one; the bound, 40 MB, is a third of the file."""
    small = _peak(tmp_path, 1, "terminal-bench", False)
    large = _peak(tmp_path, 120, "terminal-bench", False)
    assert large - small < 40_000, (small, large)


FALSE, TRUE = '"is_resolved": false', '"is_resolved": true'


def _tb_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "results.json"
    path.write_text(text, encoding="utf-8")
    return path


def _tb_text() -> str:
    trials = [tb_trial("hello", 1, True), tb_trial("hello", 2, False), tb_trial("fix", 1, False)]
    return json.dumps(tb_run(trials), indent=2)


def test_terminal_bench_results_read_trial_by_trial_give_the_same_verdicts(
    store: Store, tmp_path: Path
) -> None:
    """Control: detected from its top-level keys, each trial read, the figures after the
    trials checked against them."""
    batch = store.imported(_tb_file(tmp_path, _tb_text()))
    assert {(t, a): reason for (t, a, _), (reason, _) in store.runs(batch).items()} == {
        ("hello", 1): "success", ("hello", 2): "agent_failure/incorrect",
        ("fix", 1): "agent_failure/incorrect",
    }  # fmt: skip
    run = json.loads(_tb_text())
    run["resolved_ids"] = ["fix"]  # the figures after the trials, edited
    err = store.refused(_tb_file(tmp_path, json.dumps(run)))
    assert "resolved_ids" in err


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda t: t[: len(t) // 2], "not valid JSON"),  # cut inside a trial
        (lambda t: t + "\n{}", "Extra data"),
        (lambda t: t.replace(FALSE, f"{FALSE}, {TRUE}", 1), "results[1].is_resolved"),
        (lambda t: t.replace('"resolved_ids"', '"id": "again", "resolved_ids"'), "id"),
    ],
)  # fmt: skip
def test_damaged_terminal_bench_results_read_trial_by_trial_are_refused(
    store: Store, tmp_path: Path, edit: Any, said: str
) -> None:
    """As a whole parse refuses them: a file cut short, data after it, a key twice (in a
    trial, named where it sits; at the top, after the trials)."""
    err = store.refused(_tb_file(tmp_path, edit(_tb_text())), "--format", "terminal-bench")
    assert said in err


# --- AppWorld evaluations read task by task ------------------------------------------------------


def test_a_large_appworld_evaluation_is_imported_in_bounded_memory(tmp_path: Path) -> None:
    """A 120 MB evaluation (tasks of 500 KB, members of one ``individual`` object) was read
    whole, as was its ``individual`` object to tell its format; now task by task."""
    small = _peak(tmp_path, 1, "appworld", False)
    large = _peak(tmp_path, 120, "appworld", False)
    assert large - small < 40_000, (small, large)


def _appworld_text(**aggregate: float) -> str:
    individual = {"82e2fac_1": tracker(True, 2, 0), "82e2fac_2": tracker(False, 1, 1, 2),
                  "29caf6f_1": tracker(True, 1, 0)}  # fmt: skip
    return json.dumps(evaluation(individual, **aggregate), indent=2)


def test_an_appworld_evaluation_read_task_by_task_gives_the_same_figures(
    store: Store, tmp_path: Path
) -> None:
    """Control: its verdicts, its difficulty slices, its figures recomputed and compared with
    its aggregate (a wrong one named in a warning), and its format told from its keys."""
    path = tmp_path / "evaluation.json"
    path.write_text(_appworld_text(task_goal_completion=66.7, scenario_goal_completion=50.0))
    assert _warnings(path, tmp_path) == []
    path.write_text(_appworld_text(task_goal_completion=100.0, scenario_goal_completion=50.0))
    assert [w for w in _warnings(path, tmp_path) if "task_goal_completion" in w]
    batch = store.imported(path)
    assert {t: reason for (t, _, _), (reason, _) in store.runs(batch).items()} == {
        "82e2fac_1": "success", "82e2fac_2": "agent_failure/incorrect_state",
        "29caf6f_1": "success",
    }  # fmt: skip
    source = open_source(path, ImportOptions())
    assert source.system()["scenario_goal_completion"] == 50.0  # its tasks read for it


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda t: t[: len(t) // 2], "not valid JSON"),
        (lambda t: t + "[]", "Extra data"),
        (lambda t: t.replace('"success": false', '"success": false, "success": true'),
         "individual.82e2fac_2.success"),
        (lambda t: t.replace('"29caf6f_1"', '"82e2fac_1"'), "individual.82e2fac_1"),
        (lambda t: t.replace('"success": false', '"success": "false"'), "success"),
    ],
)  # fmt: skip
def test_damaged_appworld_evaluations_read_task_by_task_are_refused(
    store: Store, tmp_path: Path, edit: Any, said: str
) -> None:
    """As a whole parse refuses them: cut short, data after it, a key twice (in a task, or a
    task twice), named where it sits; a task's verdict not written as AppWorld writes it."""
    path = tmp_path / "evaluation.json"
    path.write_text(edit(_appworld_text()))
    assert said in store.refused(path, "--format", "appworld")
