"""Twenty-sixth round, imports: the attempts a run planned, against the attempts its file holds.

- An Inspect log's header says what the eval would run: ``eval.dataset.sample_ids`` (after
  ``--limit`` and ``--sample-id``; else ``eval.dataset.samples`` when neither was given) times
  ``eval.config.epochs``. Only ``results.total_samples`` was compared with the samples held,
  and ``results`` is absent when no sample was scored (every sample errored) or the eval was
  cancelled: a log of 2 epochs holding epoch 1 alone imported without a word. A sample of an
  epoch past ``eval.config.epochs`` (which Inspect never runs) was an attempt too many.
- A Terminal-Bench trial is named ``<task>.<attempt>-of-<n_attempts>.<run_id>`` for attempts 1
  to ``n_attempts`` (``Harness._get_trial_name``); ``a.3-of-2`` was imported as attempt 3, and
  a run whose every task lost its attempt 2 imported without a word.
- τ² numbers a run's trials ``range(num_trials)``: a simulation of trial ``num_trials`` (or
  below 0) was an attempt past the run's count.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from groundstate.errors import SpecError
from groundstate.importers import import_file
from groundstate.store import RunStore
from tests.test_imports_formats import EVAL, PLAN, Store, log, sample, write_json
from tests.test_imports_round14 import tb_run, tb_trial
from tests.test_imports_tau2_versions import dir_format, simulation


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _spec(epochs: int = 2, ids: list[Any] | None = None, **dataset: Any) -> dict[str, Any]:
    """An eval spec planning *ids* (``sample_ids``; none: not given) over *epochs*."""
    given = {"name": "d", **dataset} | ({} if ids is None else {"sample_ids": ids})
    return {**EVAL, "dataset": given, "config": {"epochs": epochs}}


def _errored(sample_id: Any, epoch: int) -> dict[str, Any]:
    return sample(sample_id, epoch, {}, error={"message": "RuntimeError('boom')",
                                               "traceback": "", "traceback_ansi": ""})  # fmt: skip


def _write(
    path: Path,
    samples: list[dict[str, Any]],
    spec: dict[str, Any],
    *,
    status: str = "success",
    results: dict[str, Any] | None = None,
) -> Path:
    """A finished log (``.eval`` or ``.json``) holding *samples*; an archive's summaries
    list what it holds (no record lost between the two)."""
    header = {**log(None, status=status, spec=spec), "results": results}
    if path.suffix == ".json":
        return write_json(path, {**header, "samples": samples})
    del header["samples"]
    summaries = [{"id": s["id"], "epoch": s["epoch"], "input": "q", "target": "a",
                  "scores": s["scores"], "error": None, "limit": None, "completed": True,
                  "uuid": s["uuid"]} for s in samples]  # fmt: skip
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("_journal/start.json", json.dumps({"version": 2, "eval": spec,
                                                            "plan": PLAN}))  # fmt: skip
        for s in samples:
            archive.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        archive.writestr("header.json", json.dumps(header))
        archive.writestr("summaries.json", json.dumps(summaries))
    return path


def _imported(path: Path, tmp_path: Path) -> tuple[int, list[str]]:
    """The attempts *path* imports as, and its warnings."""
    with RunStore(tmp_path / f"{path.name}.db") as runs:
        report = import_file(path, "x", runs)
        return report.attempts, report.warnings


SUFFIXES = pytest.mark.parametrize("suffix", [".eval", ".json"])


# --- Inspect: the header's plan ---------------------------------------------------------------


@SUFFIXES
def test_an_inspect_log_without_results_missing_an_epoch_says_so(
    tmp_path: Path, suffix: str
) -> None:
    """Every sample errored (so no ``results``), 2 epochs planned, epoch 1 alone held: the
    two missing attempts are counted and named."""
    held = [_errored("a", 1), _errored("b", 1)]
    path = _write(tmp_path / f"log{suffix}", held, _spec(2, ["a", "b"]))
    attempts, warnings = _imported(path, tmp_path)
    assert attempts == 2
    [said] = [w for w in warnings if "plans" in w]
    assert "2 of the 4 attempts" in said and "'a' epoch 2" in said and "'b' epoch 2" in said
    assert "eval.config.epochs 2" in said and "eval.dataset.sample_ids" in said


def test_an_inspect_log_planning_by_count_missing_attempts_says_so(tmp_path: Path) -> None:
    """No ``sample_ids`` (older logs): ``dataset.samples`` is the plan when neither
    ``--limit`` nor ``--sample-id`` sliced it."""
    path = _write(tmp_path / "log.json", [_errored(1, 1), _errored(2, 1)], _spec(3, samples=2))
    [said] = [w for w in _imported(path, tmp_path)[1] if "plans" in w]
    assert "4 of the 6 attempts" in said and "eval.dataset.samples 2" in said


def test_an_inspect_count_sliced_by_a_limit_is_no_plan(tmp_path: Path) -> None:
    """Control: with ``--limit``, ``dataset.samples`` counts the dataset before the slice."""
    spec = _spec(1, samples=100)
    spec["config"]["limit"] = 2
    path = _write(tmp_path / "log.json", [_errored(1, 1), _errored(2, 1)], spec)
    assert _imported(path, tmp_path) == (2, [])


@SUFFIXES
def test_an_inspect_log_holding_its_plan_imports_without_a_warning(
    tmp_path: Path, suffix: str
) -> None:
    """Control: integer and text ids, every (sample, epoch) planned held."""
    held = [_errored(1, 1), _errored("x", 1), _errored(1, 2), _errored("x", 2)]
    path = _write(tmp_path / f"log{suffix}", held, _spec(2, [1, "x"]))
    assert _imported(path, tmp_path) == (4, [])


def test_samples_stopped_early_are_not_missing_from_the_plan(tmp_path: Path) -> None:
    """Control: an early stop is named as such, not again as a missing attempt."""
    stops = [{"id": "a", "epoch": 2, "reason": "plateau"}]
    stopping = {"manager": "m", "early_stops": stops, "metadata": {}}
    results = {"total_samples": 4, "completed_samples": 3, "scores": [], "early_stopping": stopping}
    held = [_errored("a", 1), _errored("b", 1), _errored("b", 2)]
    path = _write(tmp_path / "log.json", held, _spec(2, ["a", "b"]), results=results)
    warnings = _imported(path, tmp_path)[1]
    assert any("stopped early" in w for w in warnings)
    assert not [w for w in warnings if "plans" in w]


def test_a_cancelled_inspect_log_counts_what_it_did_not_run(tmp_path: Path) -> None:
    path = _write(tmp_path / "log.json", [_errored("a", 1)], _spec(2, ["a", "b"]),
                  status="cancelled")  # fmt: skip
    [said] = [w for w in _imported(path, tmp_path)[1] if "status" in w]
    assert "'cancelled'" in said and "3 of the 4 attempts" in said


@SUFFIXES
def test_an_inspect_sample_of_an_epoch_past_the_plan_is_refused(
    store: Store, tmp_path: Path, suffix: str
) -> None:
    held = [_errored("a", 1), _errored("a", 2), _errored("a", 3)]
    err = store.refused(_write(tmp_path / f"log{suffix}", held, _spec(2, ["a"])))
    assert "epoch: 3" in err and "eval.config.epochs" in err
    assert ("a_epoch_3.json" if suffix == ".eval" else "samples[2]") in err


@SUFFIXES
def test_an_inspect_sample_the_plan_does_not_list_is_named(tmp_path: Path, suffix: str) -> None:
    """A sample id not among ``sample_ids``: a ``SampleSource`` adds such samples while the
    eval runs, so it is imported, but named."""
    held = [_errored("a", 1), _errored("z", 1)]
    attempts, warnings = _imported(_write(tmp_path / f"log{suffix}", held, _spec(1, ["a"])),
                                   tmp_path)  # fmt: skip
    [said] = warnings
    assert attempts == 2 and "'z'" in said and "eval.dataset.sample_ids" in said


def test_an_odd_epochs_in_the_header_is_refused(store: Store, tmp_path: Path) -> None:
    err = store.refused(_write(tmp_path / "log.json", [_errored("a", 1)], _spec(0, ["a"])))
    assert "config.epochs" in err


# --- Terminal-Bench: <task>.<attempt>-of-<n_attempts> -----------------------------------------


def _tb(task: str, name: str) -> dict[str, Any]:
    return tb_trial(task, 1, True, trial_name=f"{task}.{name}.2026-08-01__10-00-00",
                    id=f"{task}-{name}")  # fmt: skip


def _run(trials: list[dict[str, Any]]) -> dict[str, Any]:
    return {**tb_run(trials), "accuracy": 1.0}  # every trial of _tb is resolved


@pytest.mark.parametrize("name", ["3-of-2", "0-of-2"])
def test_a_terminal_bench_attempt_outside_its_runs_count_is_refused(
    store: Store, tmp_path: Path, name: str
) -> None:
    trials = [_tb("a", "1-of-2"), _tb("a", "2-of-2"), _tb("a", name)]
    err = store.refused(write_json(tmp_path / "results.json", _run(trials)))
    assert "results[2]" in err and "trial_name" in err and f"a.{name}" in err


def test_a_terminal_bench_trial_alone_outside_its_count_is_refused(
    store: Store, tmp_path: Path
) -> None:
    err = store.refused(write_json(tmp_path / "results.json", _tb("a", "3-of-2")))
    assert "trial_name" in err and "attempt 3 of 2" in err


def test_terminal_bench_trials_of_two_counts_in_one_run_are_refused(
    store: Store, tmp_path: Path
) -> None:
    trials = [_tb("a", "1-of-2"), _tb("a", "2-of-2"), _tb("b", "1-of-3")]
    err = store.refused(write_json(tmp_path / "results.json", _run(trials)))
    assert "results[2]" in err and "of 3 attempts" in err and "results[0] is of 2" in err


def test_a_terminal_bench_run_missing_an_attempt_of_every_task_says_so(tmp_path: Path) -> None:
    """Every task has attempt 1 of 2: the batch's check of uneven tasks says nothing."""
    path = write_json(tmp_path / "results.json", _run([_tb("a", "1-of-2"), _tb("b", "1-of-2")]))
    attempts, warnings = _imported(path, tmp_path)
    [said] = warnings
    assert attempts == 2 and "2 of the 4 trials" in said and "'a' attempt 2" in said


def test_a_terminal_bench_run_holding_its_count_imports_without_a_warning(
    tmp_path: Path,
) -> None:
    """Control."""
    trials = [_tb(t, f"{n}-of-2") for t in ("a", "b") for n in (1, 2)]
    assert _imported(write_json(tmp_path / "results.json", _run(trials)), tmp_path) == (4, [])


# --- τ-bench and τ²: trials numbered range(num_trials) ----------------------------------------


def _tau2(path: Path, simulations: list[Any], trials: int) -> Path:
    return write_json(path, {"info": {"num_trials": trials}, "tasks": [],
                             "simulations": simulations})  # fmt: skip


def test_a_tau2_trial_past_num_trials_is_refused(store: Store, tmp_path: Path) -> None:
    sims = [simulation("a", "1", 0), simulation("b", "1", 1), simulation("c", "1", 2)]
    err = store.refused(_tau2(tmp_path / "results.json", sims, 2))
    assert "simulations[2]" in err and "trial: 2" in err and "num_trials is 2" in err


def test_a_tau2_dir_forms_trial_past_num_trials_is_refused(store: Store, tmp_path: Path) -> None:
    path = dir_format(tmp_path, [simulation("a", "1", 0), simulation("b", "1", 1)])
    meta = json.loads(path.read_text())
    meta["info"] = {"num_trials": 1}
    path.write_text(json.dumps(meta))
    with pytest.raises(
        SpecError, match=r"simulations/b\.json: trial: 1, but info\.num_trials is 1"
    ):
        _imported(path, tmp_path)


def test_a_tau2_run_within_num_trials_imports(tmp_path: Path) -> None:
    """Control: trials 0 and 1 of 2."""
    path = _tau2(tmp_path / "results.json", [simulation("a", "1", 0), simulation("b", "1", 1)], 2)
    assert _imported(path, tmp_path) == (2, [])


def test_a_negative_trial_is_refused(store: Store, tmp_path: Path) -> None:
    sims = [simulation("a", "1", 0), simulation("b", "1", -1)]
    err = store.refused(_tau2(tmp_path / "results.json", sims, 2))
    assert "simulations[1]" in err and "trial" in err and "-1" in err
    tau = [{"task_id": 0, "reward": 1.0, "info": {}, "traj": [], "trial": 0},
           {"task_id": 0, "reward": 0.0, "info": {}, "traj": [], "trial": -1}]  # fmt: skip
    err = store.refused(write_json(tmp_path / "tau.json", tau))
    assert "trial" in err and "-1" in err
