"""Eighth audit of ``import-results``: denominators and hostile files.

Classes: rewards no harness gives (outside [0, 1]), exceptions without a message, samples that
are invalid by their own harness's word (Inspect's cancellations and invalidations) counted
against the agent, damaged archive members that were tracebacks, a file given to the wrong
reader, and pass@k / pass^k recomputed from the raw Inspect and τ² files by rules written
here, apart from the importer's.
"""

from __future__ import annotations

import json
import zipfile
from math import comb
from pathlib import Path
from typing import Any

import pytest

from groundstate.store import RunStore
from tests.test_imports_formats import EXPORTED, Store, cli, log, sample, write_eval, write_json
from tests.test_imports_round4 import simulation, tau2_file, tau_result
from tests.test_imports_tau2_versions import SIMULATIONS, dir_format


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _only_runs(store: Store, path: Path, *extra: str) -> dict[tuple[str, int, int], str]:
    batch = store.imported(path, *extra)
    return {key: reason for key, (reason, _) in store.runs(batch).items()}


# --- rewards outside [0, 1] -------------------------------------------------------------------


@pytest.mark.parametrize("reward", [1.5, -1, -0.25, 2])  # "1.5": test_imports_round19
def test_a_reward_outside_the_unit_interval_is_refused(
    store: Store, tmp_path: Path, reward: Any
) -> None:
    """A τ-bench reward of 1.5 was a failure kept with a partial score of 1 (a -1 lowered the
    batch's mean reward): no harness gives such a reward; the file is malformed."""
    tau = write_json(tmp_path / "tau.json", [tau_result(1, 0, 0.5), tau_result(1, 1, reward)])
    assert "tau.json:2: reward: must be a reward in [0, 1]" in store.refused(tau)
    tau2 = write_json(tmp_path / "tau2.json", tau2_file([simulation("a", 0, reward)]))
    err = store.refused(tau2)
    assert "simulations[0]: reward_info.reward: must be a reward in [0, 1]" in err


def test_a_reward_a_rounding_away_from_one_is_still_a_success(store: Store, tmp_path: Path) -> None:
    """Within τ²'s tolerance of the ends, as float products and Inspect's means leave them."""
    tau = write_json(tmp_path / "tau.json", [tau_result(1, 0, 1 + 1e-9), tau_result(1, 1, -1e-9)])
    assert _only_runs(store, tau) == {
        ("1", 1, 0): "success",
        ("1", 2, 0): "agent_failure/incorrect",
    }
    inspect = write_json(tmp_path / "i.json", log([sample(1, 1, {"m": {"value": 1 + 1e-9}})]))
    assert _only_runs(store, inspect) == {("1", 1, 0): "success"}


# --- exceptions without a message ---------------------------------------------------------------


def test_an_exception_without_a_message_is_still_an_error(store: Store, tmp_path: Path) -> None:
    """τ-bench writes ``str(e)``: ``""`` for ``TimeoutError()``. Read as no error, the attempt
    was decided by its reward 0 (an agent failure) even under ``--errors environment``."""
    results = [tau_result(1, 0, 0.0, error="", traceback="TimeoutError\n"), tau_result(1, 1, 1.0)]
    tau = write_json(tmp_path / "tau.json", results)
    runs = _only_runs(store, tau, "--errors", "environment")
    assert runs[("1", 1, 0)] == "environment_failure/harness_error"
    empty = {"message": "", "traceback": "", "traceback_ansi": ""}
    inspect = write_json(
        tmp_path / "i.json",
        log([sample(1, 1, {"m": {"value": "C"}}, error=empty), sample(1, 2, None, error={})]),
    )
    runs = _only_runs(store, inspect, "--errors", "environment")
    assert set(runs.values()) == {"environment_failure/harness_error"}


# --- samples Inspect itself says are not results ------------------------------------------------


def _error(message: str) -> dict[str, str]:
    return {"message": message, "traceback": "", "traceback_ansi": ""}


def test_a_cancelled_sample_is_invalid_not_the_agents_failure(store: Store, tmp_path: Path) -> None:
    """Inspect records a sample cancelled because a sibling failed (or the eval was torn down)
    as the error ``CancelledError(...)``; its viewer shows it as cancelled, never as an error.
    It counted as ``agent_failure/crashed`` under the default ``--errors agent``."""
    samples = [
        sample(1, 1, {"m": {"value": "C"}}),
        sample(1, 2, None, error=_error("CancelledError('Cancelled via cancel scope 7f')")),
        sample(1, 3, None, error=_error("Cancelled()")),  # trio's
        sample(1, 4, None, error=_error("CancelledError is not what this says")),
    ]
    path = write_eval(tmp_path / "c.eval", samples)
    runs = _only_runs(store, path)
    assert runs == {
        ("1", 1, 0): "success",
        ("1", 2, 0): "environment_failure/cancelled",
        ("1", 3, 0): "environment_failure/cancelled",
        ("1", 4, 0): "agent_failure/crashed",
    }


def test_an_invalidated_sample_is_invalid_and_said_so(store: Store, tmp_path: Path) -> None:
    """``inspect_ai.log.invalidate_samples`` marks a sample invalid after the run (eval sets
    rerun it, as an error). It was imported as the success its score says; it is an invalid
    attempt, with who and why kept, named in a warning, a failure in the strict view."""
    mark = {"timestamp": "2025-01-01T00:00:00Z", "author": "bob", "reason": "sandbox broke"}
    samples = [
        sample(1, 1, {"m": {"value": "C"}}, invalidation=mark),
        sample(1, 2, {"m": {"value": "C"}}),
        sample(2, 1, {"m": {"value": "I"}}),
        sample(2, 2, {"m": {"value": "C"}}),
    ]
    path = write_json(tmp_path / "i.json", log(samples))
    code, out, err = cli("import-results", str(path), "--name", "x", "--json",
                         "--store", str(store.path))  # fmt: skip
    assert code == 0, err
    assert "1 sample was invalidated after the run" in err
    batch = json.loads(out)["batch_id"]
    runs = store.runs(batch)
    assert runs[("1", 1, 0)][0] == "environment_failure/invalidated"
    with RunStore(store.path) as opened:
        status = next(r for r in opened.runs(batch) if r.attempt == 1 and r.task_id == "1")
        origin = status.infrastructure_status["origin"]
        assert origin["invalidation"] == {"author": "bob", "reason": "sandbox broke"}
    report = store.report(batch)
    assert report["invalid_attempts"] == 1
    assert report["success_rate"]["estimate"] == pytest.approx((1 + 0.5) / 2)
    strict = report["invalid_as_failure"]["success_rate"]["estimate"]
    assert strict == pytest.approx((0.5 + 0.5) / 2)


# --- damaged archive members ------------------------------------------------------------------


def _patched_member(path: Path, *, flag: int = 0, method: int | None = None) -> Path:
    """An archive whose sample member claims encryption (*flag* 1) or an unknown compression
    *method*, in both its local and central headers."""
    write_eval(path, [sample(1, 1, {"m": {"value": "C"}})])
    data = bytearray(path.read_bytes())
    name = b"samples/1_epoch_1.json"
    for signature, flags, methods, named in ((b"PK\x03\x04", 6, 8, 30), (b"PK\x01\x02", 8, 10, 46)):
        at = data.find(signature)
        while at != -1:
            if data[at + named : at + named + len(name)] == name:
                data[at + flags] |= flag
                if method is not None:
                    data[at + methods : at + methods + 2] = method.to_bytes(2, "little")
            at = data.find(signature, at + 4)
    path.write_bytes(bytes(data))
    return path


def _corrupt_deflate(path: Path) -> Path:
    body = {"messages": [{"role": "user", "content": "x" * 4000}]}
    write_eval(path, [sample(1, 1, {"m": {"value": "C"}}, **body)])
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("samples/1_epoch_1.json")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    data = bytearray(path.read_bytes())
    for at in range(start + 20, start + 60):
        data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (_corrupt_deflate, "Error -3 while decompressing"),  # was a zlib.error traceback
        (lambda p: _patched_member(p, flag=1), "encrypted"),  # was a RuntimeError traceback
        (lambda p: _patched_member(p, method=99), "compression method is not supported"),
    ],
)
def test_a_damaged_archive_member_is_one_line(
    store: Store, tmp_path: Path, damage: Any, reason: str
) -> None:
    err = store.refused(damage(tmp_path / "d.eval"))
    assert "d.eval!samples/1_epoch_1.json: cannot read from the archive" in err and reason in err


# --- a file given to the wrong reader -----------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "content", "says"),
    [
        ("csv", "tau", "--format tau-bench"),  # was "no result rows"
        ("csv", "inspect", "--format inspect"),  # was "not UTF-8 text"
        ("jsonl", "tau2", "--format tau2-bench"),  # was "task_id: required"
        ("inspect", "tau2", "--format tau2-bench"),
        ("tau2-bench", "tau", "--format tau-bench"),  # was "has a list here"
        ("tau-bench", "rows", "--format jsonl"),
    ],
)
def test_a_file_given_to_the_wrong_reader_is_named_for_what_it_is(
    store: Store, tmp_path: Path, given: str, content: str, says: str
) -> None:
    files = {
        "tau": lambda p: write_json(p, [tau_result(1, 0, 1.0)]),
        "tau2": lambda p: write_json(p, tau2_file([simulation("a", 0, 1.0)])),
        "inspect": lambda p: write_eval(p, [sample(1, 1, {"m": {"value": "C"}})]),
        "rows": lambda p: p.write_text('{"task_id": "a", "attempt": 0, "success": true}\n'),
    }
    path = tmp_path / "results.dat"
    files[content](path)
    err = store.refused(path, "--format", given)
    assert "the file looks like" in err and f"{says}, not --format {given}" in err


def test_a_bad_row_of_the_right_format_gets_no_format_hint(store: Store, tmp_path: Path) -> None:
    path = write_json(tmp_path / "tau.json", [tau_result(1, 0, "x")])
    assert "looks like" not in store.refused(path, "--format", "tau-bench")


# --- pass@k and pass^k recomputed from the raw files ------------------------------------------


def _estimates(outcomes: dict[str, list[bool | None]]) -> dict[str, dict[str, float]]:
    """pass@k and pass^k from each task's attempts (``None``: invalid), as the reference
    chapter defines them: per task over its valid attempts, then a plain mean over tasks with
    any, for k up to the fewest valid attempts a task has; the strict view counts invalid
    attempts as failures."""
    views = {
        "valid": {t: [a for a in v if a is not None] for t, v in outcomes.items()},
        "strict": {t: [bool(a) for a in v] for t, v in outcomes.items()},
    }
    out: dict[str, dict[str, float]] = {}
    for view, tasks in views.items():
        counted = {t: (len(v), sum(v)) for t, v in tasks.items() if v}
        for k in range(1, min(n for n, _ in counted.values()) + 1):
            at = [1 - comb(n - c, k) / comb(n, k) for n, c in counted.values()]
            hat = [comb(c, k) / comb(n, k) for n, c in counted.values()]
            out[f"{view} pass@{k}"] = sum(at) / len(at)
            out[f"{view} pass^{k}"] = sum(hat) / len(hat)
    return out


def _reported(report: dict[str, Any]) -> dict[str, float]:
    out = {}
    for view, block in (("valid", report), ("strict", report["invalid_as_failure"])):
        for k, value in block["pass_at_k"].items():
            out[f"{view} pass@{k}"] = value["estimate"]
        for k, value in block["pass_hat_k"].items():
            out[f"{view} pass^{k}"] = value["estimate"]
    return out


def _inspect_outcome(sample: dict[str, Any]) -> bool | None:
    """A sample's verdict by Inspect's own fields, written apart from the importer."""
    error = sample.get("error")
    if sample.get("invalidation") is not None:
        return None
    if error is not None:
        return None if error["message"].startswith(("CancelledError(", "Cancelled(")) else False
    if sample.get("limit") is not None:
        return None if sample["limit"]["type"] == "operator" else False
    return sample["scores"]["m"]["value"] in ("C", 1, 1.0, True)


def test_inspect_pass_k_recomputed_from_the_raw_log(store: Store, tmp_path: Path) -> None:
    """Unequal epochs per sample (a cancelled eval), errors, cancellations, invalidations,
    limits (one an operator's), partial and numeric scores: the report's pass@k and pass^k in
    both views equal the ones computed here from the samples."""
    values = ["C", "I", "P", 1, 0.5, True, "C", "C", 0, "C"]
    special: dict[tuple[int, int], dict[str, Any]] = {
        (1, 2): {"error": _error("RuntimeError('tool broke')")},
        (2, 1): {"error": _error("CancelledError('torn down')")},
        (2, 3): {"limit": {"type": "message", "limit": 10}},
        (3, 2): {"limit": {"type": "operator", "limit": 1}},
        (4, 1): {"invalidation": {"author": "a", "timestamp": "2025-01-01T00:00:00Z"}},
        (5, 1): {"limit": {"type": "token", "limit": 10}},
        (7, 1): {"error": _error("Cancelled()")},
        (7, 2): {"limit": {"type": "operator", "limit": 1}},  # no valid attempt at all
    }
    epochs = {1: 4, 2: 3, 3: 4, 4: 2, 5: 3, 6: 4, 7: 2}
    samples = [
        sample(task, epoch, {"m": {"value": values[(3 * task + epoch) % len(values)]}},
               **special.get((task, epoch), {}))
        for task, count in epochs.items() for epoch in range(1, count + 1)
    ]  # fmt: skip
    batch = store.imported(write_eval(tmp_path / "run.eval", samples))
    outcomes: dict[str, list[bool | None]] = {}
    for s in samples:
        outcomes.setdefault(str(s["id"]), []).append(_inspect_outcome(s))
    expected = _estimates(outcomes)
    got = _reported(store.report(batch))
    assert got.keys() == expected.keys()
    assert got == pytest.approx(expected, abs=1e-12)


def test_tau2_pass_k_recomputed_from_the_raw_file(store: Store, tmp_path: Path) -> None:
    """τ²'s ends: a normal end by its reward (1 within 1e-6), the agent's budgets and protocol
    breaks against it, the user simulator's and the infrastructure's failures invalid."""
    ends = {
        ("a", 1): "max_steps", ("b", 0): "user_error", ("b", 2): "too_many_errors",
        ("c", 1): "infrastructure_error", ("c", 2): "agent_error", ("d", 0): "timeout",
        ("d", 3): "context_window_exceeded", ("e", 1): "unexpected_error",
    }  # fmt: skip
    rewards = [1.0, 0.0, 1.0, 0.5, 1.0 - 1e-7, 1.0]
    trials = {"a": 4, "b": 3, "c": 4, "d": 4, "e": 2, "f": 3}
    simulations = [
        simulation(task, trial, rewards[(ord(task) + trial) % len(rewards)],
                   termination_reason=ends.get((task, trial), "agent_stop"))
        for task, count in trials.items() for trial in range(count)
    ]  # fmt: skip
    batch = store.imported(write_json(tmp_path / "tau2.json", tau2_file(simulations)))
    invalid = {"user_error", "infrastructure_error", "unexpected_error"}
    outcomes: dict[str, list[bool | None]] = {}
    for s in simulations:
        end, reward = s["termination_reason"], s["reward_info"]["reward"]
        verdict = None if end in invalid else end == "agent_stop" and abs(reward - 1) <= 1e-6
        outcomes.setdefault(s["task_id"], []).append(verdict)
    expected = _estimates(outcomes)
    got = _reported(store.report(batch))
    assert got.keys() == expected.keys()
    assert got == pytest.approx(expected, abs=1e-12)


# --- τ²'s "dir" format: files that disagree with their index ----------------------------------


@pytest.mark.parametrize(
    ("key", "said", "field"),
    [
        ("reward", 0.0, "reward_info.reward: 1.0, but simulation_index says 0.0"),
        ("termination_reason", "max_steps", "termination_reason: 'user_stop', but"),
        ("task_id", "9", "task_id: '2', but simulation_index says '9'"),
        ("trial", 4, "trial: 0, but simulation_index says 4"),
    ],
)
def test_a_simulation_file_that_disagrees_with_its_index_is_refused(
    store: Store, tmp_path: Path, key: str, said: Any, field: str
) -> None:
    """τ² builds each index entry from its simulation, and its leaderboard reads the index: a
    file rewritten apart from it (here reward 1 where the index says 0) was imported as the
    file said, giving other numbers than τ²'s own summary of the same run."""
    path = dir_format(tmp_path, SIMULATIONS)
    meta = json.loads(path.read_text())
    for entry, item in zip(meta["simulation_index"], SIMULATIONS, strict=True):
        entry.update(reward=item["reward_info"]["reward"], termination_reason="user_stop")
    assert _only_runs(store, path)  # the index as τ² writes it agrees: imported
    meta["simulation_index"][2][key] = said
    path.write_text(json.dumps(meta))
    code, _, err = cli("import-results", str(path), "--name", "x", "--store", str(store.path))
    assert code == 2 and f"simulations/b1.json: {field}" in err and "Traceback" not in err


@pytest.mark.parametrize(("version", "warned"), [(3, True), ("2", True), (2, False), (None, False)])
def test_an_inspect_log_of_an_unknown_version_is_read_with_a_warning(
    store: Store, tmp_path: Path, version: Any, warned: bool
) -> None:
    """Its fields may mean something else there: the import says by which rules it read it."""
    data = log([sample(1, 1, {"m": {"value": "C"}})])
    data["version"] = version
    if version is None:
        del data["version"]  # Inspect's model defaults it to the current one
    path = write_json(tmp_path / "v.json", data)
    code, _, err = cli("import-results", str(path), "--name", "x", "--store", str(store.path))
    assert code == 0, err
    assert ("is not one this reader knows (1 to 2)" in err) is warned


# --- a repeat or a conflict named where the user can find it ----------------------------------


def test_a_repeat_in_an_archive_names_both_members(store: Store, tmp_path: Path) -> None:
    """It said ``run.eval:2: ... (also on line 1)``: an archive has no lines."""
    path = tmp_path / "run.eval"
    write_eval(path, [sample(1, 1, {"m": {"value": "C"}})])
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("samples/01_epoch_1.json", json.dumps(sample(1, 1, {"m": {"value": "I"}})))
    err = store.refused(path)
    assert "run.eval!samples/01_epoch_1.json: attempt: task '1' attempt 1 appears twice" in err
    assert "(also at " in err and "run.eval!samples/1_epoch_1.json)" in err


def test_a_conflict_in_a_json_log_names_both_samples(store: Store, tmp_path: Path) -> None:
    own = {"success": True, "terminal_reason": "success", "weight": 1.0}
    samples = [
        sample("a", 1, {"m": {"value": "C"}}, metadata={"groundstate": {**own, "attempt": 1}}),
        sample("a", 2, {"m": {"value": "C"}},
               metadata={"groundstate": {**own, "attempt": 2, "weight": 3.0}}),
    ]  # fmt: skip
    err = store.refused(write_json(tmp_path / "own.json", log(samples, spec=EXPORTED)))
    assert "own.json:samples[1]: weight: 3.0 contradicts 1.0 given for the same task" in err
    assert "at " in err and "own.json:samples[0] (a task has one weight)" in err


def test_a_repeat_in_the_tau2_dir_format_names_both_files(store: Store, tmp_path: Path) -> None:
    twice = [*SIMULATIONS[:3], {**SIMULATIONS[3], "trial": 0}]  # b2 repeats b1's trial
    path = dir_format(tmp_path, twice)
    code, _, err = cli("import-results", str(path), "--name", "x", "--store", str(store.path))
    assert code == 2 and "Traceback" not in err
    assert "simulations/b2.json: attempt: task '2' attempt 0 appears twice (also at " in err
    assert "simulations/b1.json)" in err


def test_a_nan_score_is_an_indeterminate_verdict(store: Store, tmp_path: Path) -> None:
    """A scorer's NaN (JSON ``NaN``, which Inspect's logs allow) refused the whole log; it is
    the grader's indeterminate verdict: ``grader_failure``, invalid, the other samples kept."""
    path = tmp_path / "n.json"
    data = json.dumps(log([sample(1, 1, {"m": {"value": "C"}}), sample(1, 2, {"m": {"value": 0}})]))
    path.write_text(data.replace('"value": 0}', '"value": NaN}'))
    assert _only_runs(store, path) == {("1", 1, 0): "success", ("1", 2, 0): "grader_failure"}


def test_tau2_tasks_and_trials_the_file_lacks_are_named(store: Store, tmp_path: Path) -> None:
    """A task τ² ran (in the file's ``tasks``) with no simulation left in it, and a task with
    fewer simulations than ``info.num_trials``, were dropped from every denominator without
    a word."""
    data = tau2_file([simulation("a", 0, 1.0), simulation("a", 1, 0.0), simulation("b", 0, 1.0)])
    data["tasks"] = [{"id": "a"}, {"id": "b"}, {"id": "c"}]
    data["info"]["num_trials"] = 2
    path = write_json(tmp_path / "tau2.json", data)
    code, _, err = cli("import-results", str(path), "--name", "x", "--store", str(store.path))
    assert code == 0, err
    assert "1 of the 3 tasks it lists has no simulation ('c')" in err
    assert "info.num_trials is 2, but 1 task has fewer simulations ('b')" in err
    data["simulations"].append(simulation("b", 1, 1.0))
    data["tasks"].pop()
    code, _, err = cli("import-results", str(write_json(path, data)), "--name", "x",
                       "--store", str(store.path))  # fmt: skip
    assert code == 0 and err == ""


def test_json_lines_with_a_long_first_line_are_detected(store: Store, tmp_path: Path) -> None:
    """Detection read the first 64 KiB: a first row longer than that (a column of notes or a
    transcript another tool keeps) was taken for one JSON document, "not valid JSON: Extra
    data" at line 2."""
    rows = [{"task_id": "a", "attempt": i, "success": True, "notes": "x" * 70_000} for i in (0, 1)]
    path = tmp_path / "rows.json"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert _only_runs(store, path) == {("a", 1, 0): "success", ("a", 2, 0): "success"}


def test_a_valid_failure_without_a_reward_scores_no_partial_credit(
    store: Store, tmp_path: Path
) -> None:
    """In a log with partial scores, a crash or a limit (no reward of its own) carried no
    partial score and was left out of the partial mean: a task that only crashed dropped out
    of it, and the batch's partial score was 0.75 where every attempt counted gives 0.375."""
    samples = [
        sample("a", 1, {"m": {"value": "P"}}),
        sample("a", 2, {"m": {"value": "C"}}),
        sample("b", 1, None, error=_error("RuntimeError('boom')")),
        sample("b", 2, {"m": {"value": "C"}}, limit={"type": "message", "limit": 5}),
    ]
    path = write_json(tmp_path / "p.json", log(samples))
    report = store.report(store.imported(path))
    assert report["partial_score"]["estimate"] == pytest.approx((0.75 + 0.0) / 2)
    invalid = store.report(store.imported(path, "--errors", "environment"))  # the crash: invalid
    b = next(task for task in invalid["tasks"] if task["task_id"] == "b")
    assert (b["valid"]["n"], b["valid"]["partial"], b["strict"]["partial"]) == (1, 0.0, 0.0)


def test_unequal_attempts_per_task_are_said_at_import(store: Store, tmp_path: Path) -> None:
    """An interrupted τ-bench run leaves its checkpoint with fewer trials for some tasks (its
    own pass^k then divides by the global trial count); the import said nothing."""
    results = [tau_result(t, i, 1.0) for t in (1, 2, 3) for i in range(3) if (t, i) != (3, 2)]
    path = write_json(tmp_path / "tau.json", results)
    code, _, err = cli("import-results", str(path), "--name", "x", "--store", str(store.path))
    assert code == 0 and "tasks have 2 to 3 attempts (1 of 3 fewer than 3)" in err
