"""Forty-fourth round, imports: an end by a limit or an error is a failure with its terminal
reason, never a success and never partly one; τ²'s reward held to τ²'s own recombination of
its components; malformed files of every harness refused naming the file, the record and the
field, storing nothing; pass@k and pass^k recomputed with exact fractions.

τ² (``tau2/evaluator/evaluator.py``) scores every end but ``agent_stop`` and ``user_stop`` 0
without evaluating it, and its ``scripts/recombine_rewards.py`` recombines a reward from the
checks' own rewards (``db_check.db_reward``, ``env_assertions[i].reward``,
``action_checks[i].action_reward``, ``met``) over the ``reward_basis``, setting a non-zero
reward beside a premature end back to 0 ("corrupted").
"""

from __future__ import annotations

import json
import math
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from groundstate.errors import SpecError
from groundstate.importers import open_source
from tests.test_imports_formats import Store, reward_info, sample, tau, write_eval, write_json
from tests.test_imports_harbor import job, trial
from tests.test_imports_round4 import simulation, tau2_file
from tests.test_imports_round14 import tb_run, tb_trial
from tests.test_imports_round43 import _agrees, _imported, _scored, _tau2


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _partials(store: Store, batch: str) -> dict[tuple[str, int], tuple[str, float | None]]:
    return {(task, attempt): value for (task, attempt, _), value in store.runs(batch).items()}


# --- an end by a limit or an error carries no reward ---------------------------------------


@pytest.mark.parametrize("end", ["max_steps", "too_many_errors", "timeout", "agent_error"])
@pytest.mark.parametrize("given", [0.8, 1.0])
def test_a_tau2_premature_end_with_a_reward_is_a_failure_without_partial_credit(
    store: Store, tmp_path: Path, end: str, given: float
) -> None:
    """τ² never evaluates such an end (its reward is 0): a ``max_steps`` of 0.8 was a failure
    kept with a partial score of 0.8, in the batch's mean reward."""
    sims = [simulation("a", 0, given, termination_reason=end), simulation("a", 1, 0.5),
            simulation("b", 0, 1.0), simulation("b", 1, 1.0)]  # fmt: skip
    batch, err = _imported(store, _tau2(tmp_path, sims, num_trials=2))
    reason, partial = _partials(store, batch)["a", 1]
    assert reason.startswith(("agent_failure/", "harness_compatibility_failure/"))
    assert partial == 0.0  # the file has partial rewards: a valid failure earned none
    assert f"simulations[0] ({end}, reward {given!r})" in err
    assert "τ² scores 0" in err and "warning:" in err
    report = store.report(batch)
    assert report["success_rate"]["estimate"] == pytest.approx(2 / 4)


def test_a_tau2_premature_end_keeps_the_given_reward_in_its_origin(tmp_path: Path) -> None:
    path = _tau2(tmp_path, [simulation("a", 0, 0.8, termination_reason="max_steps")])
    source = open_source(path)
    (row,) = source.rows()
    assert (row.success, row.terminal_reason, row.partial_score, row.reward) == (
        False, "agent_failure/step_limit", None, 0.0)  # fmt: skip
    assert row.origin is not None and row.origin["reward"] == 0.8
    (warning,) = source.warnings()
    assert str(path) in warning and "1 attempt that" in warning


def test_an_honest_tau2_premature_end_gives_no_warning(store: Store, tmp_path: Path) -> None:
    """Guard: τ²'s own form (reward 0, no basis) imports as before, silently."""
    premature = {"reward": 0.0, "reward_basis": None, "info": {"note": "terminated prematurely"}}
    sims = [simulation("a", 0, None, termination_reason="max_steps", reward_info=premature),
            simulation("a", 1, 1.0)]  # fmt: skip
    batch, err = _imported(store, _tau2(tmp_path, sims, num_trials=2))
    assert err == ""
    assert _partials(store, batch)["a", 1] == ("agent_failure/step_limit", None)


@pytest.mark.parametrize(
    ("info", "reason"),
    [({"error": "RateLimitError"}, "agent_failure/crashed"),
     ({"reward_info": None}, "agent_failure/step_limit")],
)  # fmt: skip
def test_a_tau_bench_stop_with_a_reward_counts_none_of_it(
    store: Store, tmp_path: Path, info: dict[str, Any], reason: str
) -> None:
    """τ-bench scores an attempt that raised, or ran out of steps, 0: a reward of 1 beside one
    was a failure with a partial score of 1 in a file with partial rewards."""
    results = [tau(1, 0, 1.0, info), tau(1, 1, 0.5, reward_info(0.5)), tau(2, 0, 1.0,
               reward_info(1.0)), tau(2, 1, 1.0, reward_info(1.0))]  # fmt: skip
    batch, err = _imported(store, write_json(tmp_path / "tau.json", results))
    assert _partials(store, batch)["1", 1] == (reason, 0.0)
    assert "tau.json:1 (" in err and "τ-bench scores 0" in err


def test_terminal_bench_timeout_whose_tests_passed_fails(store: Store, tmp_path: Path) -> None:
    """Guard (the same class): Terminal-Bench runs the tests after an agent timeout; the first
    stop decides."""
    folder = tmp_path / "run"
    folder.mkdir()
    trials = [tb_trial("x", 1, True, "agent_timeout"), tb_trial("x", 2, True)]
    batch, _ = _imported(store, write_json(folder / "results.json", tb_run(trials)))
    assert [r for r, _ in _partials(store, batch).values()] == [
        "agent_failure/time_limit", "success"]  # fmt: skip


def test_an_inspect_limit_with_a_correct_score_fails_without_credit(
    store: Store, tmp_path: Path
) -> None:
    """Guard (the same class): Inspect scores a sample a limit stopped; the limit decides."""
    samples = [sample("p", 1, {"m": {"value": "C"}}, limit={"type": "message", "limit": 10}),
               sample("p", 2, {"m": {"value": 0.5}})]  # fmt: skip
    batch, _ = _imported(store, write_eval(tmp_path / "run.eval", samples))
    assert _partials(store, batch)["p", 1] == ("agent_failure/step_limit", 0.0)


def test_a_harbor_timeout_with_a_reward_of_1_fails(store: Store, tmp_path: Path) -> None:
    """Guard (the same class): Harbor runs its verifier after an agent timeout."""
    timeout = {"exception_type": "AgentTimeoutError", "exception_message": "t",
               "exception_traceback": "", "occurred_at": "2026-08-01T10:00:00+00:00"}  # fmt: skip
    trials = [trial("h", "h__a", {"reward": 1.0}, exception_info=timeout, minute=0),
              trial("h", "h__b", {"reward": 1.0}, minute=1)]  # fmt: skip
    batch, _ = _imported(store, job(tmp_path / "job", trials))
    assert sorted(r for r, _ in _partials(store, batch).values()) == [
        "agent_failure/time_limit", "success"]  # fmt: skip


# --- τ²'s reward, as its own recombination gives it ----------------------------------------


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"action_checks": [{"action_match": True, "action_reward": 0.0}]},
         "reward_info.action_checks[0].action_reward: 0.0, but action_match is true"),
        ({"env_assertions": [{"met": False, "reward": 1.0}]},
         "reward_info.env_assertions[0].reward: 1.0, but met is false"),
        ({"db_check": {"db_match": True, "db_reward": 0.0}},
         "reward_info.db_check.db_reward: 0.0, but db_match is true"),
    ],
)  # fmt: skip
def test_a_check_whose_reward_and_flag_disagree_is_refused(
    store: Store, tmp_path: Path, fields: dict[str, Any], field: str
) -> None:
    """τ²'s ``recombine_rewards`` multiplies the checks' rewards, this reads their flags: a
    file where they disagree would have two verdicts."""
    err = store.refused(_tau2(tmp_path, [simulation("a", 0, None, reward_info=_scored(
        1.0, **fields))]))  # fmt: skip
    assert f"simulations[0]: {field}" in err


def test_a_breakdown_component_outside_the_basis_beside_one_inside_is_refused(
    store: Store, tmp_path: Path
) -> None:
    """τ² multiplies only the basis's components: ``{DB: 1, ACTION: 0}`` for a basis of DB
    recombines to 1, and read as given it was a failed attempt (expected actions)."""
    scored = _scored(0.0, reward_basis=["DB"], reward_breakdown={"DB": 1.0, "ACTION": 0.0},
                     action_checks=[{"action_match": False, "action_reward": 0.0}])  # fmt: skip
    err = store.refused(_tau2(tmp_path, [simulation("a", 0, None, reward_info=scored)]))
    assert "simulations[0]: reward_info.reward_breakdown.ACTION: not in reward_basis (DB)" in err


def test_a_reward_below_1_whose_basis_checks_all_passed_is_refused(
    store: Store, tmp_path: Path
) -> None:
    """Without a breakdown, every basis component's checks recorded and passed: τ²'s
    recombination gives 1, and the 0 given was read as a failure."""
    scored = _scored(0.0, reward_breakdown=None)
    err = store.refused(_tau2(tmp_path, [simulation("a", 0, None, reward_info=scored)]))
    assert "simulations[0]: reward_info.reward: 0.0, but every component reward_basis" in err
    assert "(DB, COMMUNICATE)" in err


@pytest.mark.parametrize(
    "scored",
    [
        _scored(1.0),  # the full record
        _scored(0.0, reward_breakdown=None, communicate_checks=None),  # a basis check unrecorded
        _scored(1.0, reward_breakdown={"COMMUNICATE": 1.0}, reward_basis=["DB"],
                db_check=None),  # a one-component evaluation
        _scored(0.0, reward_breakdown={"ACTION": 0.0}, reward_basis=["DB"], db_check=None,
                action_checks=[{"action_match": False, "action_reward": 0.0}]),
        _scored(1.0, reward_basis=["DB", "ENV_ASSERTION", "ACTION", "COMMUNICATE"],
                reward_breakdown={"ACTION": 1.0, "COMMUNICATE": 1.0}),  # all_ignore_basis
    ],
)  # fmt: skip
def test_honest_reward_records_keep_importing(tmp_path: Path, scored: dict[str, Any]) -> None:
    (row,) = open_source(_tau2(tmp_path, [simulation("a", 0, None, reward_info=scored)])).rows()
    assert row.success == (scored["reward"] == 1.0)


# --- num_trials: one rule for a trial past the count and a task past it --------------------


@pytest.mark.parametrize(
    ("sims", "said"),
    [
        ([simulation("a", 0, 1.0), simulation("a", 2, 1.0)],
         "simulations[1]: trial: 2, but info.num_trials is 2"),
        ([simulation("a", None, 1.0, id=f"s{i}") for i in range(3)],
         "simulations[0]: task_id: 'a' has 3 simulations (the first here), but info.num_trials "
         "is 2"),
    ],
)  # fmt: skip
def test_a_simulation_past_num_trials_is_refused(
    store: Store, tmp_path: Path, sims: list[Any], said: str
) -> None:
    err = store.refused(_tau2(tmp_path, sims, num_trials=2))
    assert said in err and "past the run's count" in err


# --- malformed files: named, refused, nothing stored ---------------------------------------


def _tb(folder: Path, trials: list[Any]) -> Path:
    folder.mkdir()
    return write_json(folder / "results.json", tb_run(trials))


MALFORMED: list[tuple[str, Any, str]] = [
    (
        "tau-nan",
        lambda p: _text(p / "t.json", '[{"task_id":1,"reward":NaN,"info":{},"traj":[],"trial":0}]'),
        "t.json:1: reward: must be a finite",
    ),
    (
        "tau-range",
        lambda p: write_json(p / "t.json", [tau(1, 0, 1.5, {})]),
        "t.json:1: reward: must be a reward in [0, 1]",
    ),
    (
        "tau-dup",
        lambda p: write_json(p / "t.json", [tau(1, 0, 1.0, {}), tau(1, 0, 0.0, {})]),
        "t.json:2: attempt: task '1' attempt 0 appears twice",
    ),
    (
        "tau-trial-text",
        lambda p: write_json(p / "t.json", [tau(1, "0", 1.0, {})]),
        "t.json:1: trial: must be an integer",
    ),
    (
        "tau-check-text",
        lambda p: write_json(p / "t.json", [tau(1, 0, 1.0, reward_info(1.0, r_actions="true"))]),
        "t.json:1: info.reward_info.info.r_actions: must be a number",
    ),
    (
        "tau2-inf",
        lambda p: _text(
            p / "t2.json",
            json.dumps(tau2_file([simulation("a", 0, 1.0)])).replace(
                '"reward": 1.0', '"reward": Infinity'
            ),
        ),
        "simulations[0]: reward_info.reward: must be a finite number",
    ),
    (
        "tau2-negative",
        lambda p: write_json(p / "t2.json", tau2_file([simulation("a", 0, -0.5)])),
        "simulations[0]: reward_info.reward: must be a reward in [0, 1]",
    ),
    (
        "tau2-dup-id",
        lambda p: write_json(
            p / "t2.json",
            tau2_file([simulation("a", 0, 1.0, id="s"), simulation("a", 1, 1.0, id="s")]),
        ),
        "simulations[1]: id: simulation s is also at",
    ),
    (
        "tau2-bool-text",
        lambda p: write_json(
            p / "t2.json",
            tau2_file(
                [simulation("a", 0, None, reward_info=_scored(1.0, db_check={"db_match": "true"}))]
            ),
        ),
        "simulations[0]: reward_info.db_check.db_match: must be true or false",
    ),
    (
        "tau2-reward-text",
        lambda p: write_json(p / "t2.json", tau2_file([simulation("a", 0, "1.0")])),
        "simulations[0]: reward_info.reward: must be a number",
    ),
    (
        "tau2-check-reward-nan",
        lambda p: write_json(
            p / "t2.json",
            tau2_file(
                [
                    simulation(
                        "a",
                        0,
                        None,
                        reward_info=_scored(
                            1.0, env_assertions=[{"met": True, "reward": float("nan")}]
                        ),
                    )
                ]
            ),
        ),
        "simulations[0]: reward_info.env_assertions[0].reward: must be a finite number",
    ),
    (
        "tb-bool-text",
        lambda p: _tb(p / "run", [tb_trial("x", 1, "true")]),
        "results[0]: is_resolved: must be true, false or null",
    ),
    (
        "harbor-nan",
        lambda p: job(p / "job", [trial("h", "h__a", {"reward": float("nan")})]),
        "verifier_result.rewards.reward: must be a finite number",
    ),
    (
        "harbor-range",
        lambda p: job(p / "job", [trial("h", "h__a", {"reward": 2.0})]),
        "verifier_result.rewards.reward: must be a reward in [0, 1]",
    ),
    (
        "inspect-range",
        lambda p: write_eval(p / "r.eval", [sample("p", 1, {"m": {"value": 1.5}})]),
        "samples/p_epoch_1.json: scores.m.value: 1.5 is not a verdict",
    ),
    (
        "inspect-epoch-text",
        lambda p: write_eval(p / "r.eval", [sample("p", "1", {"m": {"value": "C"}})]),
        "samples/p_epoch_1.json: epoch: must be an integer",
    ),
]


def _text(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("make", "said"), [(m, s) for _, m, s in MALFORMED],
                         ids=[name for name, _, _ in MALFORMED])  # fmt: skip
def test_a_malformed_file_is_refused_naming_its_record_and_field(
    store: Store, tmp_path: Path, make: Any, said: str
) -> None:
    err = store.refused(make(tmp_path))
    assert said in err, err


@pytest.mark.parametrize("fmt", ["tau-bench", "tau2-bench", "terminal-bench"])
@pytest.mark.parametrize("cut", [1, 40, -3])
def test_a_truncated_file_of_any_harness_stores_nothing(
    store: Store, tmp_path: Path, fmt: str, cut: int
) -> None:
    data: Any = {
        "tau-bench": [tau(1, 0, 1.0, reward_info(1.0)), tau(1, 1, 0.0, reward_info(0.0))],
        "tau2-bench": tau2_file([simulation("a", 0, 1.0), simulation("a", 1, 0.0)]),
        "terminal-bench": tb_run([tb_trial("x", 1, True), tb_trial("x", 2, False)]),
    }[fmt]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data)[:cut])
    err = store.refused(path, "--format", fmt)
    assert "not valid JSON" in err or "results file" in err


# --- pass@k and pass^k, recomputed, with stops carrying rewards -----------------------------


def test_tau2_pass_k_recomputed_with_rewarded_stops_and_uneven_tasks(
    store: Store, tmp_path: Path
) -> None:
    """Tasks with 3, 2 and 3 valid attempts (one simulation missing), two limit hits with a
    passing reward among them: recomputed, each a failure."""
    sims = [
        simulation("a", 0, 1.0), simulation("a", 1, 1.0, termination_reason="max_steps"),
        simulation("a", 2, 1.0),
        simulation("b", 0, 0.0), simulation("b", 1, 1.0),
        simulation("c", 0, 1.0, termination_reason="too_many_errors"), simulation("c", 1, 1.0),
        simulation("c", 2, 0.0),
    ]  # fmt: skip
    batch, err = _imported(store, _tau2(tmp_path, sims, num_trials=3))
    assert "2 attempts that" in err and "fewer" in err
    report = store.report(batch)
    outcomes = {"a": [True, False, True], "b": [False, True], "c": [False, True, False]}
    _agrees(report, outcomes)
    # task-weighted: (2/3 + 1/2 + 1/3) / 3
    assert Fraction(report["success_rate"]["estimate"]).limit_denominator(100) == Fraction(1, 2)


def test_tau_bench_pass_k_recomputed_with_rewarded_errors(store: Store, tmp_path: Path) -> None:
    results = [tau(t, i, 1.0 if ok else 0.0, reward_info(1.0 if ok else 0.0))
               for t, row in enumerate(["110", "011", "111"])
               for i, ok in enumerate(c == "1" for c in row)]  # fmt: skip
    results[0] = tau(0, 0, 1.0, {"error": "boom"})  # a crash with a reward: a failure
    results[8] = tau(2, 2, 1.0, {"reward_info": None})  # out of steps
    batch, _ = _imported(store, write_json(tmp_path / "tau.json", results))
    report = store.report(batch)
    _agrees(report, {"0": [False, True, False], "1": [False, True, True],
                     "2": [True, True, False]})  # fmt: skip


def test_the_library_names_the_file_for_a_recombination_it_refuses(tmp_path: Path) -> None:
    path = _tau2(tmp_path, [simulation("a", 0, None, reward_info=_scored(
        0.0, reward_breakdown=None))])  # fmt: skip
    with pytest.raises(SpecError, match=r"tau2\.json:simulations\[0\]: reward_info\.reward"):
        list(open_source(path).rows())


# --- the public τ² retail tasks: honest records of their own bases keep importing ----------

TAU_RETAIL = Path(
    os.environ.get("GROUNDSTATE_TAU2_DATA")
    or Path(__file__).parent.parent.parent / "shared" / "tau_data" / "tau2-bench" / "retail"
)  # as tests/test_tau2_suite.py finds it


def _honest(task: dict[str, Any], trial: int, db: bool, nl: bool) -> dict[str, Any]:
    """A simulation of *task* as τ²'s ``all`` evaluation records it under the task's own
    ``reward_basis``: every evaluator's checks, the breakdown of the basis's components."""
    basis = task["evaluation_criteria"]["reward_basis"]
    assertions = task["evaluation_criteria"].get("nl_assertions") or []
    nl_checks = [{"nl_assertion": a, "met": nl, "justification": "."} for a in assertions]
    parts = {"DB": float(db), "NL_ASSERTION": float(nl or not assertions)}
    breakdown = {name: parts[name] for name in basis}
    scored = {
        "reward": math.prod(breakdown.values()), "db_check": {"db_match": db,
                                                              "db_reward": float(db)},
        "env_assertions": [], "action_checks": [{"action": {"action_id": "0", "name": "x",
        "arguments": {}, "requestor": "assistant"}, "action_match": db,
        "action_reward": float(db), "tool_type": "write"}], "communicate_checks": [],
        "nl_assertions": nl_checks or None, "reward_basis": basis,
        "reward_breakdown": breakdown, "info": {"env": None, "nl": None},
    }  # fmt: skip
    return simulation(task["id"], trial, None, id=f"{task['id']}-{trial}", reward_info=scored)


@pytest.mark.skipif(not (TAU_RETAIL / "tasks.json").is_file(), reason="no τ² retail data")
def test_honest_records_of_the_public_retail_tasks_import_and_recompute(
    store: Store, tmp_path: Path
) -> None:
    tasks = json.loads((TAU_RETAIL / "tasks.json").read_text(encoding="utf-8"))
    chosen = [t for t in tasks if t["evaluation_criteria"]["reward_basis"] == ["DB"]][:2]
    chosen += [t for t in tasks if "NL_ASSERTION" in t["evaluation_criteria"]["reward_basis"]
               and t["evaluation_criteria"].get("nl_assertions")][:4]  # fmt: skip
    plan = ["11", "10", "01", "00", "11", "10"]  # (db, nl) per task, both trials the same
    sims, outcomes = [], {}
    for task, (db, nl) in zip(chosen, plan, strict=True):
        basis = task["evaluation_criteria"]["reward_basis"]
        passed = db == "1" and (nl == "1" or "NL_ASSERTION" not in basis)
        sims += [_honest(task, trial, db == "1", nl == "1") for trial in (0, 1)]
        outcomes[str(task["id"])] = [passed, passed]
    premature = {"reward": 0.0, "reward_basis": None, "info": {"note": "prematurely"}}
    first = str(chosen[0]["id"])
    sims[1] = simulation(first, 1, None, id="stop", termination_reason="max_steps",
                         reward_info=premature)  # fmt: skip
    outcomes[first][1] = False
    data = {"timestamp": "t", "info": {"num_trials": 2}, "tasks": chosen, "simulations": sims}
    batch, err = _imported(store, write_json(tmp_path / "results.json", data))
    assert err == ""
    _agrees(store.report(batch), outcomes)
