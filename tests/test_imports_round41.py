"""Forty-first round, imports: files that would move a pass rate without a word.

Terminal-Bench (``terminal_bench/harness/harness.py``): a trial whose tests timed out or whose
test output could not be parsed is returned before its tests are parsed, with ``is_resolved``
and ``parser_results`` null, and ``parse_error`` is written over the agent's own failure
mode. Inspect (``inspect_ai/scorer/_metric.py``, ``value_to_float``): a text score value is
``C``/``I``/``P``/``N``, a lowered ``yes``/``true``/``no``/``false``, or digits with dots;
any other text its metrics read as 0. SWE-bench writes its counts as JSON integers. Beside
the fixes, guards that honest files of every harness keep their denominators: an errored
attempt is a failure by default, a reward of 0.9999 is no success, a duplicated attempt is
refused naming both places.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.test_imports_formats import (
    Store,
    cli,
    log,
    reward_info,
    sample,
    tau,
    write_eval,
    write_json,
)
from tests.test_imports_harbor import job, trial
from tests.test_imports_round4 import simulation, tau2_file
from tests.test_imports_round14 import tb_run, tb_trial


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _run(tmp_path: Path, trials: list[dict[str, Any]], name: str = "run") -> Path:
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    return write_json(folder / "results.json", tb_run(trials))


def _imported(store: Store, path: Path, *extra: str) -> tuple[dict[str, Any], str]:
    """The import's ``--json`` report and its batch's ``report --json``."""
    code, out, err = cli("import-results", str(path), "--name", "x", "--json",
                         "--store", str(store.path), *extra)  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    return data, data["batch_id"]


def _valid(store: Store, batch: str) -> tuple[int, int]:
    """(successes, valid attempts) of *batch*, as stored."""
    runs = store.runs(batch)
    valid = [r for r, _ in runs.values() if r.split("/")[0] not in ("environment_failure",
                                                                     "grader_failure")]  # fmt: skip
    return sum(r == "success" for r in valid), len(valid)


# --- Terminal-Bench: an ungraded end beside a verdict ------------------------------------------


@pytest.mark.parametrize("mode", ["parse_error", "test_timeout"])
@pytest.mark.parametrize("resolved", [True, False])
def test_an_ungraded_end_beside_a_verdict_is_refused(
    store: Store, tmp_path: Path, mode: str, resolved: bool
) -> None:
    """``tb run`` returns such a trial before it sets ``is_resolved``: ``parse_error`` beside
    ``is_resolved: true`` was in the file's ``resolved_ids`` (Terminal-Bench's figures) and a
    failure or an invalid attempt here, imported without a word."""
    trials = [tb_trial("hello", 1, resolved, mode), tb_trial("hello", 2, False)]
    err = store.refused(_run(tmp_path, trials))
    assert f"results[0]: is_resolved: {json.dumps(resolved)}, but failure_mode is {mode!r}" in err


def test_test_results_beside_a_parse_error_are_refused(store: Store, tmp_path: Path) -> None:
    trials = [tb_trial("hello", 1, None, "parse_error", parser_results={}),
              tb_trial("hello", 2, False)]  # fmt: skip
    err = store.refused(_run(tmp_path, trials))
    assert "results[0]: parser_results: 0 test results, but failure_mode is 'parse_error'" in err


def test_a_parse_error_is_a_failure_in_the_denominator_by_default(
    store: Store, tmp_path: Path
) -> None:
    """Never a success, never left out: Terminal-Bench's accuracy counts it unresolved."""
    trials = [tb_trial("hello", 1, None, "parse_error"), tb_trial("hello", 2, True)]
    data, batch = _imported(store, _run(tmp_path, trials))
    assert store.runs(batch)[("hello", 1, 0)][0] == "agent_failure/ungraded"
    assert _valid(store, batch) == (1, 2)
    assert not any("invalid here" in w for w in data["warnings"])


def test_a_parse_error_made_invalid_is_named_with_what_it_may_hide(
    store: Store, tmp_path: Path
) -> None:
    """Under ``--errors environment`` it leaves the valid denominator: said, with the reason
    to doubt it (``tb run`` writes ``parse_error`` over an agent's timeout)."""
    trials = [tb_trial("hello", 1, None, "parse_error"), tb_trial("hello", 2, True),
              tb_trial("fix", 1, None, "test_timeout"), tb_trial("fix", 2, True)]  # fmt: skip
    data, batch = _imported(store, _run(tmp_path, trials), "--errors", "environment")
    assert _valid(store, batch) == (2, 2)
    warning = next(w for w in data["warnings"] if "invalid here" in w)
    assert "2 trials are invalid here (parse_error x1, test_timeout x1)" in warning
    assert "Terminal-Bench's accuracy counts them unresolved" in warning
    assert "parse_error over the agent's own failure mode" in warning


def test_a_trial_never_graded_is_named(store: Store, tmp_path: Path) -> None:
    trials = [tb_trial("hello", 1, None, "unset"), tb_trial("hello", 2, True)]
    data, _ = _imported(store, _run(tmp_path, trials))
    warning = next(w for w in data["warnings"] if "invalid here" in w)
    assert "1 trial is invalid here (not graded x1)" in warning
    assert "may hide" not in warning


def test_a_single_trial_file_made_invalid_is_named(store: Store, tmp_path: Path) -> None:
    path = write_json(tmp_path / "results.json", tb_trial("hello", 1, None, "parse_error"))
    data, _ = _imported(store, path, "--errors", "environment")
    assert any("1 trial is invalid here (parse_error x1)" in w for w in data["warnings"])


@pytest.mark.parametrize("mode", ["PARSE_ERROR", "Agent_Timeout", "none ", "test-timeout"])
def test_a_failure_mode_spelled_otherwise_is_refused(
    store: Store, tmp_path: Path, mode: str
) -> None:
    """Read as a mode not known here, ``"PARSE_ERROR"`` was a crash by ``--errors`` (invalid
    under ``environment``), ``"none "`` a crash where the tests passed."""
    trials = [tb_trial("hello", 1, True if mode.strip() == "none" else None, mode),
              tb_trial("hello", 2, False)]  # fmt: skip
    err = store.refused(_run(tmp_path, trials))
    assert f"results[0]: failure_mode: {mode!r} is not how Terminal-Bench writes" in err


def test_a_failure_mode_of_a_later_version_is_still_read(store: Store, tmp_path: Path) -> None:
    """False-positive guard: a mode no spelling of a known one imports, named."""
    trials = [tb_trial("hello", 1, None, "docker_compose_failed"), tb_trial("hello", 2, True)]
    data, batch = _imported(store, _run(tmp_path, trials))
    assert store.runs(batch)[("hello", 1, 0)][0] == "agent_failure/crashed"
    assert any("'docker_compose_failed' is not one known here" in w for w in data["warnings"])


def test_a_trial_without_its_failure_mode_is_refused(store: Store, tmp_path: Path) -> None:
    """Read as ``unset``, an errored trial stripped of its mode was decided by its
    ``is_resolved`` alone."""
    stripped = {k: v for k, v in tb_trial("hello", 1, True).items() if k != "failure_mode"}
    err = store.refused(_run(tmp_path, [stripped, tb_trial("hello", 2, False)]))
    assert "results[0]: failure_mode: required" in err


def test_an_honest_terminal_bench_run_keeps_its_denominator(store: Store, tmp_path: Path) -> None:
    """Every way ``tb run`` ends a trial, as it writes it: 8 attempts, none dropped."""
    trials = [
        tb_trial("a", 1, True, "unset", parser_results={"t": "passed"}),
        tb_trial("a", 2, False, "agent_timeout", parser_results={"t": "failed"}),
        tb_trial("b", 1, None, "parse_error"),
        tb_trial("b", 2, None, "test_timeout"),
        tb_trial("c", 1, None, "unknown_agent_error", total_input_tokens=None,
                 total_output_tokens=None),
        tb_trial("c", 2, None, "context_length_exceeded"),
        tb_trial("d", 1, True, "agent_timeout", parser_results={"t": "passed"}),
        tb_trial("d", 2, False, "none", parser_results={"t": "failed", "u": "passed"}),
    ]  # fmt: skip
    path = write_json(tmp_path / "results.json", {**tb_run(trials), "accuracy": 0.25})
    data, batch = _imported(store, path)
    # round 45: the one warning names the timed-out trial whose tests passed (Terminal-Bench's
    # accuracy counts it resolved; here its timeout decides)
    (warning,) = data["warnings"]
    assert data["attempts"] == 8 and "trial 'd.1-of-2" in warning and "agent_timeout" in warning
    assert _valid(store, batch) == (1, 8)  # the timed-out agent's pass is its timeout


# --- Inspect: text Inspect's own metrics read as 0 ---------------------------------------------


@pytest.mark.parametrize("value", [" yes", "true ", "1e0", "+1", " 1", "1 ", "\u0661", "1_0"])
def test_a_score_text_inspect_reads_as_zero_is_refused(
    store: Store, tmp_path: Path, value: str
) -> None:
    """Python's ``float`` and a strip read each as 1 (a pass); Inspect's ``value_to_float``
    reads none of them (0, with a warning)."""
    samples = [sample(1, 1, {"match": {"value": value}}), sample(2, 1, {"match": {"value": "C"}})]
    err = store.refused(write_json(tmp_path / "log.json", log(samples)))
    assert f"samples[0]: scores.match.value: {value!r} is not a verdict" in err
    assert "Inspect's own metrics read it as 0" in err


@pytest.mark.parametrize(
    ("value", "reason", "partial"),
    [("1", "success", None), ("1.0", "success", None), ("1.", "success", None),
     ("0", "agent_failure/incorrect", None), ("0.5", "agent_failure/incorrect", 0.5),
     (".5", "agent_failure/incorrect", 0.5), ("TRUE", "success", None),
     ("Yes", "success", None), ("no", "agent_failure/incorrect", None),
     ("P", "agent_failure/incorrect", 0.5), ("C", "success", None)],
)  # fmt: skip
def test_score_texts_inspect_reads_are_read_as_it_reads_them(
    store: Store, tmp_path: Path, value: str, reason: str, partial: float | None
) -> None:
    """False-positive guard: what ``value_to_float`` reads (digits with dots, a lowered
    word, a letter) is read the same here."""
    samples = [sample(1, 1, {"match": {"value": value}}), sample(2, 1, {"match": {"value": 0}})]
    batch = store.imported(write_eval(tmp_path / "log.eval", samples))
    got = store.runs(batch)[("1", 1, 0)]
    assert got[0] == reason
    if partial is not None:
        assert got[1] == partial


# --- SWE-bench: counts as text -----------------------------------------------------------------


def _swe_report(**edit: Any) -> dict[str, Any]:
    report = {
        "total_instances": 4, "submitted_instances": 4, "completed_instances": 2,
        "resolved_instances": 1, "unresolved_instances": 1, "empty_patch_instances": 1,
        "error_instances": 1, "completed_ids": ["a", "b"], "incomplete_ids": [],
        "empty_patch_ids": ["c"], "submitted_ids": ["a", "b", "c", "d"], "resolved_ids": ["a"],
        "unresolved_ids": ["b"], "error_ids": ["d"], "schema_version": 2,
    }  # fmt: skip
    report.update(edit)
    return report


@pytest.mark.parametrize("field", ["resolved_instances", "error_instances", "total_instances"])
def test_a_swe_bench_count_as_text_is_refused(store: Store, tmp_path: Path, field: str) -> None:
    """SWE-bench writes its counts as JSON integers; ``"1"`` was read as 1 and compared."""
    report = _swe_report()
    report[field] = str(report[field])
    err = store.refused(write_json(tmp_path / "model.run.json", report))
    assert f"{field}: must be an integer written as a JSON integer, got text" in err


def test_an_honest_swe_bench_report_keeps_its_errors_in_the_denominator(
    store: Store, tmp_path: Path
) -> None:
    data, batch = _imported(store, write_json(tmp_path / "model.run.json", _swe_report()))
    assert data["attempts"] == 4 and data["warnings"] == []
    assert _valid(store, batch) == (1, 4)
    data, batch = _imported(store, write_json(tmp_path / "model.run2.json", _swe_report()),
                            "--errors", "environment")  # fmt: skip
    assert _valid(store, batch) == (1, 3)  # the error out of it, as asked, and stored invalid
    assert store.runs(batch)[("d", 1, 0)][0] == "environment_failure/harness_error"


# --- every harness: an errored attempt counts, 0.9999 is no success -----------------------------


def _errored_files(tmp_path: Path) -> dict[str, Path]:
    """An honest file of each harness with one success and one attempt that raised."""
    error = {"message": "boom", "traceback": "", "traceback_ansi": ""}
    return {
        "tau-bench": write_json(tmp_path / "tau.json", [
            tau(1, 0, 1.0, reward_info(1.0)), tau(1, 1, 0.0, {"error": "boom"})]),
        "inspect": write_json(tmp_path / "log.json", log([
            sample(1, 1, {"match": {"value": "C"}}), sample(1, 2, None, error=error)])),
        "harbor": job(tmp_path / "job", [
            trial("a", "a__1", {"reward": 1.0}, minute=0),
            trial("a", "a__2", None, "RuntimeError", minute=1)]),
        "terminal-bench": _run(tmp_path, [
            tb_trial("a", 1, True), tb_trial("a", 2, None, "unknown_agent_error")]),
    }  # fmt: skip


@pytest.mark.parametrize("harness", ["tau-bench", "inspect", "harbor", "terminal-bench"])
def test_an_errored_attempt_stays_in_the_denominator_by_default(
    store: Store, tmp_path: Path, harness: str
) -> None:
    path = _errored_files(tmp_path)[harness]
    data, batch = _imported(store, path)
    assert data["format"] == harness
    assert _valid(store, batch) == (1, 2)
    assert sorted(r for r, _ in store.runs(batch).values()) == ["agent_failure/crashed",
                                                                "success"]  # fmt: skip


def _near_one(tmp_path: Path, reward: float) -> dict[str, Path]:
    return {
        "tau-bench": write_json(tmp_path / "tau.json", [tau(1, 0, reward, reward_info(reward))]),
        "tau2-bench": write_json(tmp_path / "tau2.json", tau2_file([simulation(1, 0, reward)])),
        "inspect": write_json(tmp_path / "log.json",
                              log([sample(1, 1, {"match": {"value": reward}})])),
        "harbor": job(tmp_path / "job", [trial("a", "a__1", {"reward": reward})]),
    }  # fmt: skip


@pytest.mark.parametrize("harness", ["tau-bench", "tau2-bench", "inspect", "harbor"])
def test_a_reward_of_0_9999_is_a_failure_kept_as_partial_credit(
    store: Store, tmp_path: Path, harness: str
) -> None:
    """τ-bench and τ² pass a reward within 1e-6 of 1, no further: 0.9999 is a failure whose
    reward is kept beside it, never rounded up to a pass."""
    batch = store.imported(_near_one(tmp_path, 0.9999)[harness])
    [(reason, partial)] = store.runs(batch).values()
    assert (reason, partial) == ("agent_failure/incorrect", 0.9999) or (
        reason.startswith("agent_failure/") and partial == 0.9999
    )


@pytest.mark.parametrize("harness", ["tau-bench", "tau2-bench", "inspect", "harbor"])
def test_a_reward_within_float_noise_of_1_is_a_success(
    store: Store, tmp_path: Path, harness: str
) -> None:
    batch = store.imported(_near_one(tmp_path, 1 - 1e-9)[harness])
    [(reason, _)] = store.runs(batch).values()
    assert reason == "success"


# --- a field that decides an attempt, stripped: read as never graded, out of the denominator ---


@pytest.mark.parametrize("key", ["exception_info", "verifier_result"])
def test_a_harbor_trial_without_what_decides_it_is_refused(
    store: Store, tmp_path: Path, key: str
) -> None:
    """Harbor writes both for every trial (``null`` when none): a trial that raised, its
    ``exception_info`` taken out, read as never graded (invalid) instead of a crash counted
    against the system."""
    errored = trial("a", "a__1", None, "RuntimeError", minute=0)
    del errored[key]
    folder = job(tmp_path / "job", [errored, trial("a", "a__2", {"reward": 1.0}, minute=1)])
    err = store.refused(folder)
    assert f"a__1/result.json: {key}: required (null when there is none)" in err


def test_a_harbor_trial_with_both_null_is_still_never_graded(store: Store, tmp_path: Path) -> None:
    """False-positive guard: both given as ``null`` is what Harbor writes for a trial its
    verifier never graded."""
    folder = job(tmp_path / "job", [trial("a", "a__1", None, minute=0),
                                    trial("a", "a__2", {"reward": 1.0}, minute=1)])  # fmt: skip
    batch = store.imported(folder)
    assert store.runs(batch)[("a", 1, 0)][0] == "grader_failure"


def test_a_tau2_simulation_without_its_reward_info_is_refused(store: Store, tmp_path: Path) -> None:
    """A failed simulation stripped of ``reward_info`` read as never graded: out of every
    denominator, the task's pass rate up."""
    failed = simulation(1, 0, 0.0)
    del failed["reward_info"]
    path = write_json(tmp_path / "tau2.json", tau2_file([failed, simulation(1, 1, 1.0)]))
    err = store.refused(path)
    assert "simulations[0]: reward_info: required (null when never evaluated)" in err


def test_a_tau2_reward_info_without_its_reward_is_refused(store: Store, tmp_path: Path) -> None:
    graded = simulation(1, 0, 0.0, reward_info={"reward_breakdown": {"DB": 0.0}})
    path = write_json(tmp_path / "tau2.json", tau2_file([graded, simulation(1, 1, 1.0)]))
    err = store.refused(path)
    assert "simulations[0]: reward_info.reward: required" in err


def test_a_tau2_simulation_never_evaluated_is_still_read(store: Store, tmp_path: Path) -> None:
    """False-positive guard: ``reward_info: null`` is what τ² writes for a simulation it never
    evaluated: an invalid attempt, kept."""
    path = write_json(tmp_path / "tau2.json", tau2_file([simulation(1, 0, None, reward_info=None),
                                                        simulation(1, 1, 1.0)]))  # fmt: skip
    batch = store.imported(path)
    assert store.runs(batch)[("1", 1, 0)][0] == "grader_failure"
