"""Forty-fifth round: imports.

A stop that its file still credits (a Harbor trial an agent timeout ended, graded after it; a
Terminal-Bench trial whose tests passed after the agent timed out; an Inspect sample a limit
stopped and its scorer then scored) is read as every format here reads a stop: a failure by
its end, with no credit, and named in one warning that says the harness's own figures count
it. Hostile files of every harness are refused in one line naming the file and the field,
storing nothing; pass@k, pass^k and the partial score of imported batches agree with an
exact recomputation.
"""

from __future__ import annotations

import gzip
import json
from fractions import Fraction
from math import comb
from pathlib import Path
from typing import Any

import pytest

from groundstate.importers import ImportOptions, open_source, read_rows
from tests.test_imports_formats import Store, reward_info, sample, tau, write_eval, write_json
from tests.test_imports_harbor import job, trial
from tests.test_imports_round4 import simulation, tau2_file
from tests.test_imports_round14 import tb_run, tb_trial
from tests.test_imports_round43 import _imported


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _exception(kind: str) -> dict[str, Any]:
    return {"exception_type": kind, "exception_message": "m", "exception_traceback": "",
            "occurred_at": "2026-08-01T10:00:00+00:00"}  # fmt: skip


def _timed_out(task: str, name: str, reward: float, minute: int) -> dict[str, Any]:
    return trial(task, name, {"reward": reward}, exception_info=_exception("AgentTimeoutError"),
                 minute=minute)  # fmt: skip


def _warnings(path: Path, **options: Any) -> list[str]:
    source = open_source(path, ImportOptions(**options))
    for _ in source.rows():
        pass
    return source.warnings()


# --- Harbor: a timed-out trial earns no credit -------------------------------------------


def test_a_harbor_timeout_earns_no_credit_beside_partial_rewards(
    store: Store, tmp_path: Path
) -> None:
    """Harbor grades the state a timed-out agent left and its mean counts that reward; here
    the timeout decides, and a stop is never partly a success (Inspect's limited sample and
    τ²'s ``max_steps`` end earn 0): the 0.5 it was credited with raised the partial score."""
    trials = [_timed_out("h", "h__a", 0.5, 0), trial("h", "h__b", {"reward": 0.5}, minute=1)]
    batch, _ = _imported(store, job(tmp_path / "job", trials))
    assert store.runs(batch) == {
        ("h", 1, 0): ("agent_failure/time_limit", 0.0),
        ("h", 2, 0): ("agent_failure/incorrect", 0.5),
    }


def test_a_harbor_timeout_keeps_its_reward_in_its_origin_only(tmp_path: Path) -> None:
    path = write_json(tmp_path / "result.json", _timed_out("h", "h__a", 1.0, 0))
    (row,) = read_rows(path)
    assert (row.success, row.terminal_reason, row.reward) == (False, "agent_failure/time_limit",
                                                              0.0)  # fmt: skip
    assert row.origin is not None and row.origin["rewards"] == {"reward": 1.0}
    assert row.mapped == "AgentTimeoutError (reward 1) -> agent_failure/time_limit"


def test_one_warning_names_the_job_and_each_credited_stop(tmp_path: Path) -> None:
    trials = [_timed_out("h", "h__a", 1.0, 0), trial("h", "h__b", {"reward": 1.0}, minute=1),
              trial("g", "g__c", {"reward": 0.25}, "NonZeroAgentExitCodeError", minute=2),
              _timed_out("g", "g__d", 0.0, 3)]  # fmt: skip
    folder = job(tmp_path / "job", trials)
    stops = [w for w in _warnings(folder) if "a limit or an error ended" in w]
    assert len(stops) == 1, stops
    (warning,) = stops
    assert warning.startswith(f"{folder / 'result.json'}: 2 attempts")
    first = folder / "h__a" / "result.json"
    assert f"{first}: trial h__a (AgentTimeoutError, reward 1.0)" in warning
    assert "trial g__c (NonZeroAgentExitCodeError, reward 0.25)" in warning
    assert "g__d" not in warning  # a reward of 0 is no credit: nothing to say
    assert "Harbor's own mean and pass@k count" in warning
    alone = write_json(tmp_path / "one.json", _timed_out("h", "h__a", 1.0, 0))
    (single,) = _warnings(alone)
    assert single.startswith(f"{alone}: 1 attempt that a limit or an error ended carries")


def test_a_multi_step_trial_whose_step_timed_out_earns_no_credit(
    store: Store, tmp_path: Path
) -> None:
    steps = [
        {"step_name": "one", "verifier_result": {"rewards": {"reward": 1.0}},
         "agent_result": None, "exception_info": None},
        {"step_name": "two", "verifier_result": {"rewards": {"reward": 0.5}},
         "agent_result": None, "exception_info": _exception("AgentTimeoutError")},
    ]  # fmt: skip
    multi = trial("t", "t__a", {"reward": 0.75}, agent_result=None, step_results=steps, minute=0)
    batch, err = _imported(store, job(tmp_path / "job", [multi, trial("t", "t__b", {"reward": 0.5},
                                                                      minute=1)]))  # fmt: skip
    assert store.runs(batch)["t", 1, 0] == ("agent_failure/time_limit", 0.0)
    assert "trial t__a (AgentTimeoutError, reward 0.75)" in err


def test_honest_harbor_trials_keep_their_rewards_without_a_warning(
    store: Store, tmp_path: Path
) -> None:
    """Guard: graded trials keep their partial reward; a stop graded 0, a verifier that timed
    out (no reward) and a cancelled trial say nothing about credit."""
    trials = [trial("a", "a__a", {"reward": 0.5}, minute=0),
              trial("a", "a__b", {"reward": 1.0}, minute=1),
              _timed_out("b", "b__c", 0.0, 2),
              trial("b", "b__d", None, "VerifierTimeoutError", minute=3),
              trial("c", "c__e", {"reward": 1.0}, "CancelledError", minute=4),
              trial("c", "c__f", {"reward": 0.0}, minute=5)]  # fmt: skip
    folder = job(tmp_path / "job", trials)
    assert not [w for w in _warnings(folder) if "a limit or an error ended" in w]
    runs = store.runs(store.imported(folder))
    assert runs["a", 1, 0] == ("agent_failure/incorrect", 0.5)
    assert runs["a", 2, 0] == ("success", 1.0)
    assert runs["c", 1, 0] == ("environment_failure/cancelled", None)  # invalid: no credit


# --- the same class in Terminal-Bench and Inspect: named ---------------------------------


def test_a_terminal_bench_timeout_whose_tests_passed_is_named(tmp_path: Path) -> None:
    trials = [tb_trial("x", 1, True, "agent_timeout"), tb_trial("x", 2, True),
              tb_trial("y", 1, False, "agent_timeout"), tb_trial("y", 2, True)]  # fmt: skip
    path = write_json(tmp_path / "results.json", tb_run(trials))
    stops = [w for w in _warnings(path) if "a limit or an error ended" in w]
    assert len(stops) == 1
    assert "trial 'x.1-of-2.2026-08-01__10-00-00' (agent_timeout, is_resolved true)" in stops[0]
    assert "y.1" not in stops[0] and "Terminal-Bench's own accuracy counts" in stops[0]
    assert [r.terminal_reason for r in read_rows(path)][:2] == ["agent_failure/time_limit",
                                                                "success"]  # fmt: skip


def test_an_inspect_limit_with_a_crediting_score_is_named(tmp_path: Path) -> None:
    samples = [sample("p", 1, {"m": {"value": "C"}}, limit={"type": "time", "limit": 60}),
               sample("p", 2, {"m": {"value": "I"}}, limit={"type": "message", "limit": 9}),
               sample("q", 1, {"m": {"value": "X"}}, limit={"type": "token", "limit": 9}),
               sample("q", 2, {"m": {"value": 0.5}})]  # fmt: skip
    path = write_eval(tmp_path / "run.eval", samples)
    stops = [w for w in _warnings(path) if "a limit or an error ended" in w]
    assert len(stops) == 1
    assert "(limit time, score 'C')" in stops[0] and "limit message" not in stops[0]
    assert "limit token" not in stops[0]  # "X" is no verdict: no credit to name
    rows = {(r.task_id, r.label): r for r in read_rows(path)}
    assert rows["p", 1].terminal_reason == "agent_failure/time_limit" and not rows["p", 1].success


# --- hostile files: one line, the file and the field, nothing stored ----------------------


def _harbor_reward(tmp: Path, value: str) -> Path:
    text = json.dumps(trial("t", "t__a", {"reward": 777.25})).replace("777.25", value)
    path = tmp / "result.json"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("value", "said"),
    [("NaN", "must be a finite number"), ("Infinity", "must be a finite number"),
     ("-Infinity", "must be a finite number"), ("1e400", "must be a finite number"),
     ("-0.5", "must be a reward in [0, 1]"), ("1.5", "must be a reward in [0, 1]"),
     ('"1"', "written as a JSON number"), ("[1]", "must be a number"),
     ("true", "must be a number"), ("null", "must be a number"),
     ("1" + "0" * 5000, "past the limit of 4300 digits")],
)  # fmt: skip
def test_a_harbor_reward_of_the_wrong_kind_is_refused(
    store: Store, tmp_path: Path, value: str, said: str
) -> None:
    err = store.refused(_harbor_reward(tmp_path, value))
    assert "verifier_result" in err and said in err


def test_a_harbor_job_whose_own_result_is_cut_is_named(store: Store, tmp_path: Path) -> None:
    """The job's ``result.json`` cut short read as "a folder of Harbor jobs" naming a trial's
    folder: the file at fault is named now."""
    folder = job(tmp_path / "job", [trial("t", "t__a", {"reward": 1.0}, minute=0)])
    (folder / "result.json").write_text('{"id": "j", "n_total_')
    err = store.refused(folder)
    assert f"{folder / 'result.json'}:1: not valid JSON" in err
    (folder / "result.json").write_text("")
    assert f"{folder / 'result.json'}" in store.refused(folder)


@pytest.mark.parametrize("damage", ["cut", "empty", "a list", "bad utf-8"])
def test_a_harbor_job_with_one_damaged_trial_stores_nothing(
    store: Store, tmp_path: Path, damage: str
) -> None:
    folder = job(tmp_path / "job", [trial("t", "t__a", {"reward": 1.0}, minute=0),
                                    trial("t", "t__b", {"reward": 0.0}, minute=1)])  # fmt: skip
    broken = folder / "t__b" / "result.json"
    text = broken.read_text()
    if damage == "cut":
        broken.write_text(text[: len(text) // 2])
    elif damage == "empty":
        broken.write_text("")
    elif damage == "a list":
        broken.write_text(json.dumps([tau(0, 0, 1.0, reward_info(1.0))]))  # τ-bench's, mixed in
    else:
        broken.write_bytes(text.replace('"t__b"', '"t\xe9"').encode("latin-1"))
    assert str(broken) in store.refused(folder)


HOSTILE = {  # format -> (a good file's text, [(a damaged text, what the error says)])
    "tau": (json.dumps([tau(0, 0, 1.0, reward_info(1.0)), tau(0, 1, 0.0, reward_info(0.0))]),
            [('"reward": 1.0', '"reward": NaN', "reward: must be a finite number"),
             ('"reward": 1.0', '"reward": 2', "reward: must be a reward in [0, 1]"),
             ('"trial": 1', '"trial": "1"', "trial")]),
    "tau2": (json.dumps(tau2_file([simulation("a", 0, 1.0), simulation("a", 1, 0.0)])),
             [('"reward": 1.0', '"reward": Infinity', "reward_info.reward: must be a finite"),
              ('"reward": 1.0', '"reward": -1', "reward_info.reward: must be a reward in"),
              ('"trial": 0', '"trial": 0.5', "trial")]),
    "tb": (json.dumps(tb_run([tb_trial("x", 1, True), tb_trial("x", 2, False)])),
           [('"is_resolved": true', '"is_resolved": "true"', "is_resolved: must be true"),
            ('"total_input_tokens": 1000', '"total_input_tokens": -1', "total_input_tokens"),
            ('"failure_mode": "none"', '"failure_mode": 5', "failure_mode: must be text"),
            # not a list: read as a SWE-bench report, it was refused for its resolved_ids
            ('"results": [', '"results": {"a": 1}, "x": [', "results: must be a list of trials")]),
    "csv": ("task_id,attempt,success,partial_score\nt,0,false,0.5\nt,1,true,\n",
            [("0.5", "NaN", "partial_score: must be a finite number"),
             ("0.5", "1.5", "partial_score: must be in [0, 1]"),
             ("t,1,true,", "t,0,true,", "attempt: task 't' attempt 0 appears twice")]),
}  # fmt: skip
CASES = [(name, i) for name, (_, damaged) in HOSTILE.items() for i in range(len(damaged))]


def _hostile_file(tmp: Path, name: str, text: str) -> Path:
    path = tmp / f"{name}.{'csv' if name == 'csv' else 'json'}"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("name", "index"), CASES)
def test_a_damaged_field_of_each_harness_is_refused_naming_it(
    store: Store, tmp_path: Path, name: str, index: int
) -> None:
    good, damaged = HOSTILE[name]
    old, new, said = damaged[index]
    assert old in good
    err = store.refused(_hostile_file(tmp_path, name, good.replace(old, new, 1)))
    assert said in err


@pytest.mark.parametrize("name", sorted(HOSTILE))
@pytest.mark.parametrize("damage", ["cut", "empty", "gzip cut", "NUL", "null"])
def test_a_damaged_file_of_each_harness_is_refused_in_one_line(
    store: Store, tmp_path: Path, name: str, damage: str
) -> None:
    good, _ = HOSTILE[name]
    path = _hostile_file(tmp_path, name, good)
    if damage == "cut":
        path.write_text(good[: len(good) // 2 - 1] + ("\n" if name == "csv" else ""))
        if name == "csv":  # a CSV cut at a line end is a shorter file: cut inside a cell
            path.write_text(good[:-3].replace("false", '"fal'))
    elif damage == "empty":
        path.write_text("")
    elif damage == "gzip cut":
        zipped = path.with_name(path.name + ".gz")
        zipped.write_bytes(gzip.compress(good.encode())[:30])
        path = zipped
    elif damage == "NUL":
        path.write_bytes(good.encode()[:12] + b"\x00" + good.encode()[12:])
    else:
        path.write_text("null")
    store.refused(path)  # one line, the file named, nothing stored


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_bom_or_gzip_copy_of_each_harness_reads_as_the_plain_file(
    store: Store, tmp_path: Path, name: str
) -> None:
    """Guard: a byte-order mark, or gzip, changes nothing read (both are common wrappers)."""
    good, _ = HOSTILE[name]
    plain = store.runs(store.imported(_hostile_file(tmp_path, name, good)))
    bom = tmp_path / "bom" / f"{name}.{'csv' if name == 'csv' else 'json'}"
    bom.parent.mkdir()
    bom.write_bytes(b"\xef\xbb\xbf" + good.encode())
    zipped = tmp_path / f"z-{name}.{'csv' if name == 'csv' else 'json'}.gz"
    zipped.write_bytes(gzip.compress(good.encode()))
    assert store.runs(store.imported(bom)) == plain == store.runs(store.imported(zipped))


def test_two_harnesses_in_one_folder_are_refused(store: Store, tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    _hostile_file(folder, "tau", HOSTILE["tau"][0])
    _hostile_file(folder, "tb", HOSTILE["tb"][0])
    assert "a folder, not a results file" in store.refused(folder)


# --- pass@k, pass^k and the partial score, recomputed with exact fractions ---------------


def _reference(credits: dict[str, list[tuple[bool, Fraction | None]]]) -> dict[str, Fraction]:
    """An independent reference: per task, its valid attempts' successes (n, c) and the mean
    of their credits; pass@k = 1 - C(n-c, k)/C(n, k), pass^k = C(c, k)/C(n, k), each and the
    partial score averaged over tasks with equal weights, k up to the fewest attempts."""
    tasks = {t: a for t, a in credits.items() if a}
    out: dict[str, Fraction] = {}
    fewest = min(len(a) for a in tasks.values())
    for k in range(1, fewest + 1):
        at, hat = Fraction(0), Fraction(0)
        for attempts in tasks.values():
            n, c = len(attempts), sum(ok for ok, _ in attempts)
            at += 1 - Fraction(comb(n - c, k), comb(n, k))
            hat += Fraction(comb(c, k), comb(n, k))
        out[f"pass@{k}"], out[f"pass^{k}"] = at / len(tasks), hat / len(tasks)
    scored = [[p for _, p in a if p is not None] for a in tasks.values()]
    means = [sum(s, Fraction(0)) / len(s) for s in scored if s]
    if means:
        out["partial"] = sum(means, Fraction(0)) / len(means)
    return out


def _agrees(report: dict[str, Any], reference: dict[str, Fraction]) -> None:
    printed = {f"pass@{k}": v["estimate"] for k, v in report["pass_at_k"].items()}
    printed.update({f"pass^{k}": v["estimate"] for k, v in report["pass_hat_k"].items()})
    if report.get("partial_score") is not None:
        printed["partial"] = report["partial_score"]["estimate"]
    assert printed.keys() == reference.keys()
    for name, value in reference.items():
        assert abs(Fraction(printed[name]) - value) < Fraction(1, 10**12), (name, printed)


def test_a_harbor_job_with_stops_recomputed(store: Store, tmp_path: Path) -> None:
    F = Fraction
    trials = [trial("a", "a__1", {"reward": 1.0}, minute=0),
              _timed_out("a", "a__2", 0.5, 1),
              trial("a", "a__3", {"reward": 0.25}, minute=2),
              trial("b", "b__1", None, "CancelledError", minute=3),  # invalid: out
              trial("b", "b__2", {"reward": 1.0}, minute=4),
              trial("b", "b__3", {"reward": 1.0}, "NonZeroAgentExitCodeError", minute=5),
              trial("b", "b__4", {"reward": 0.0}, minute=6),
              _timed_out("c", "c__1", 1.0, 7),
              trial("c", "c__2", {"reward": 1.0}, minute=8)]  # fmt: skip
    batch, _ = _imported(store, job(tmp_path / "job", trials))
    report = store.report(batch)
    assert (report["valid_attempts"], report["invalid_attempts"]) == (8, 1)
    _agrees(report, _reference({
        "a": [(True, F(1)), (False, F(0)), (False, F(1, 4))],
        "b": [(True, F(1)), (False, F(0)), (False, F(0))],
        "c": [(False, F(0)), (True, F(1))],
    }))  # fmt: skip


def test_an_inspect_log_with_limits_and_a_missing_epoch_recomputed(
    store: Store, tmp_path: Path
) -> None:
    F = Fraction
    samples = [sample("p", 1, {"m": {"value": "C"}}),
               sample("p", 2, {"m": {"value": "C"}}, limit={"type": "time", "limit": 60}),
               sample("p", 3, {"m": {"value": 0.5}}),
               sample("q", 1, {"m": {"value": "I"}}),
               sample("q", 2, {"m": {"value": "C"}}),
               sample("q", 3, {"m": {"value": "P"}})]  # fmt: skip
    samples += [sample("r", 1, {"m": {"value": "C"}}), sample("r", 2, {"m": {"value": 1.0}})]
    batch, err = _imported(store, write_eval(tmp_path / "run.eval", samples))
    assert "tasks have 2 to 3 attempts" in err
    _agrees(store.report(batch), _reference({
        "p": [(True, F(1)), (False, F(0)), (False, F(1, 2))],
        "q": [(False, F(0)), (True, F(1)), (False, F(1, 2))],
        "r": [(True, F(1)), (True, F(1))],
    }))  # fmt: skip


def test_terminal_bench_and_tau2_stops_recomputed(store: Store, tmp_path: Path) -> None:
    """A stop whose grade says otherwise fails in both (τ² scores its ``max_steps`` end 0
    itself; Terminal-Bench counts the passed tests, named in the warning)."""
    trials = [tb_trial("x", 1, True, "agent_timeout"), tb_trial("x", 2, True),
              tb_trial("y", 1, False), tb_trial("y", 2, True),
              tb_trial("z", 1, None, "test_timeout"), tb_trial("z", 2, True)]  # fmt: skip
    batch, err = _imported(store, write_json(tmp_path / "results.json", tb_run(trials)))
    assert "agent_timeout, is_resolved true" in err
    _agrees(store.report(batch), _reference({
        "x": [(False, None), (True, None)], "y": [(False, None), (True, None)],
        "z": [(False, None), (True, None)],  # the test timeout: a failure by default
    }))  # fmt: skip
    sims = [simulation("a", 0, 1.0, termination_reason="max_steps"), simulation("a", 1, 1.0),
            simulation("a", 2, 0.0), simulation("b", 0, 1.0), simulation("b", 1, 1.0),
            simulation("b", 2, 1.0, termination_reason="too_many_errors")]  # fmt: skip
    batch, err = _imported(store, write_json(tmp_path / "tau2.json", tau2_file(sims)))
    assert "2 attempts that a limit or an error ended carry a non-zero reward" in err
    _agrees(store.report(batch), _reference({
        "a": [(False, None), (True, None), (False, None)],
        "b": [(True, None), (True, None), (False, None)],
    }))  # fmt: skip
