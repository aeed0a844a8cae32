"""Forty-third round, imports: what τ-bench and τ²-bench files say of themselves, held to it.

τ-bench (``tau_bench/run.py``, ``EnvRunResult``) writes ``info`` for every result: the task
and its ``reward_info``, or ``{"error", "traceback"}`` when the attempt raised (the first
``run.py``: ``"Error: ..."``); without it an errored attempt read as a plain failure. τ²
(``tau2/evaluator/evaluator.py``, ``evaluator_env.py``, ``data_model/simulation.py``) runs
each task ``info.num_trials`` times and records, beside the reward, each component it
multiplied (``reward_breakdown``, keyed by ``RewardType``: ``DB``, ``ENV_ASSERTION``,
``ACTION``, ``COMMUNICATE``, ``NL_ASSERTION``) and the checks behind each (``db_check``,
``env_assertions``, ``action_checks``, ``communicate_checks``, ``nl_assertions``). Beside the
fixes: pass@k and pass^k recomputed with exact fractions from imported files of several
harnesses, and guards that honest files keep their verdicts and denominators.
"""

from __future__ import annotations

import json
from fractions import Fraction
from math import comb
from pathlib import Path
from typing import Any

import pytest

from groundstate.errors import SpecError
from groundstate.importers import ImportOptions, open_source
from tests.test_imports_formats import Store, cli, reward_info, sample, tau, write_eval, write_json
from tests.test_imports_harbor import job, trial
from tests.test_imports_round4 import simulation, tau2_file
from tests.test_imports_round14 import tb_run, tb_trial


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _imported(store: Store, path: Path, *extra: str) -> tuple[str, str]:
    """The batch *path* imports to, and the import's warnings (stderr)."""
    code, out, err = cli("import-results", str(path), "--name", "x",
                         "--store", str(store.path), *extra)  # fmt: skip
    assert code == 0, err
    return out.strip().splitlines()[-1].removeprefix("batch "), err


def _reasons(store: Store, batch: str) -> dict[tuple[str, int], str]:
    return {(task, attempt): reason for (task, attempt, _), (reason, _) in
            store.runs(batch).items()}  # fmt: skip


# --- τ-bench: info is required ------------------------------------------------------------


@pytest.mark.parametrize("drop", ["absent", "null"])
def test_a_tau_bench_result_without_info_is_refused(
    store: Store, tmp_path: Path, drop: str
) -> None:
    """An errored attempt stripped of ``info`` (its ``error``) read as a plain failure: under
    ``--errors environment`` an invalid attempt became a valid one, in the denominator."""
    bare = {"task_id": 3, "reward": 0.0, "traj": [], "trial": 0}
    if drop == "null":
        bare["info"] = None
    path = write_json(tmp_path / "tau.json", [tau(1, 0, 1.0, reward_info(1.0)), bare])
    err = store.refused(path, "--errors", "environment")
    assert f"{path}:2: info: required" in err


def test_a_tau_bench_error_with_its_info_stays_in_the_denominators(
    store: Store, tmp_path: Path
) -> None:
    """The honest form of the file above: the error decides, by ``--errors``."""
    results = [
        tau(1, 0, 1.0, reward_info(1.0)),
        tau(1, 1, 0.0, {"error": "APIError", "traceback": "..."}),
        {"task_id": 1, "reward": 0, "info": "Error: timeout", "traj": [], "trial": 2},  # 1st run.py
    ]
    path = write_json(tmp_path / "tau.json", results)
    agent, _ = _imported(store, path)
    report = store.report(agent)
    assert (report["valid_attempts"], report["invalid_attempts"]) == (3, 0)
    assert report["success_rate"]["estimate"] == pytest.approx(1 / 3, abs=1e-12)
    environment, _ = _imported(store, path, "--errors", "environment")
    report = store.report(environment)
    assert (report["valid_attempts"], report["invalid_attempts"]) == (1, 2)
    assert report["invalid_as_failure"]["success_rate"]["estimate"] == pytest.approx(1 / 3)


def test_a_tau_bench_result_with_an_empty_info_still_imports(tmp_path: Path) -> None:
    """Only a missing ``info`` is refused: an empty one (a trimmed file) is read by its
    reward, as before."""
    path = write_json(tmp_path / "tau.json", [tau(1, 0, 1.0, {}), tau(1, 1, 0.0, {})])
    rows = list(open_source(path).rows())
    assert [(r.success, r.terminal_reason) for r in rows] == [
        (True, "success"), (False, "agent_failure/incorrect")]  # fmt: skip


# --- τ²: info.num_trials -------------------------------------------------------------------


def _tau2(tmp_path: Path, sims: list[Any], **info: Any) -> Path:
    data = tau2_file(sims)
    data["info"].update(info)
    return write_json(tmp_path / "tau2.json", data)


def test_tau2_simulations_past_num_trials_are_refused_even_without_trial_numbers(
    store: Store, tmp_path: Path
) -> None:
    """Simulations without a ``trial`` are labelled by their ids, so a copied-in one was
    never "trial 2 of 2": three of them for a run of two trials imported as three attempts."""
    sims = [simulation("a", None, 1.0, id=f"x{i}") for i in range(3)]
    sims.append(simulation("b", None, 0.0, id="y0"))
    err = store.refused(_tau2(tmp_path, sims, num_trials=2))
    assert "simulations[0]: task_id: 'a' has 3 simulations" in err
    assert "info.num_trials is 2" in err


def test_tau2_numbered_and_unnumbered_simulations_are_counted_together(
    store: Store, tmp_path: Path
) -> None:
    sims = [simulation("a", 0, 1.0), simulation("a", 1, 0.0), simulation("a", None, 1.0, id="z")]
    err = store.refused(_tau2(tmp_path, sims, num_trials=2))
    assert "'a' has 3 simulations" in err


@pytest.mark.parametrize("given", [True, False, 1.5, 0, -2, "two", [2], {"n": 2}])
def test_a_num_trials_that_is_no_count_is_refused(store: Store, tmp_path: Path, given: Any) -> None:
    """Read as none, a ``num_trials`` of ``true`` or ``1.5`` left every task's count unchecked;
    a ``0`` said every trial was past the run ("trials 0 to -1")."""
    err = store.refused(_tau2(tmp_path, [simulation("a", 0, 1.0)], num_trials=given))
    assert f"{tmp_path / 'tau2.json'}: info.num_trials: must be" in err


@pytest.mark.parametrize("given", [2, 2.0, "2"])
def test_a_run_that_holds_num_trials_imports(store: Store, tmp_path: Path, given: Any) -> None:
    """A count as writers give it, and a task short of it named in a warning (not refused)."""
    sims = [simulation("a", 0, 1.0), simulation("a", 1, 0.0), simulation("b", 0, 1.0)]
    batch, err = _imported(store, _tau2(tmp_path, sims, num_trials=given))
    assert "info.num_trials is 2, but 1 task has fewer simulations ('b')" in err
    assert store.report(batch)["valid_attempts"] == 3


def test_the_dir_form_holds_its_simulations_to_num_trials(store: Store, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    (folder / "simulations").mkdir(parents=True)
    sims = [simulation("a", None, 1.0, id=f"s{i}") for i in range(2)]
    for s in sims:
        write_json(folder / "simulations" / f"{s['id']}.json", s)
    index = [{"id": s["id"], "task_id": "a", "trial": None} for s in sims]
    meta = {"timestamp": "t", "info": {"num_trials": 1}, "tasks": [], "simulation_index": index}
    before = store.batches()
    code, _, err = cli("import-results", str(write_json(folder / "results.json", meta)),
                       "--name", "x", "--store", str(store.path))  # fmt: skip
    assert code == 2 and store.batches() == before
    assert f"{folder}/simulations/s0.json: task_id: 'a' has 2 simulations" in err


# --- τ²: the reward's components and their checks ----------------------------------------

COMMUNICATED = [{"info": "the refund is 12", "met": True, "justification": "said"}]
UNTOLD = [{"info": "the refund is 12", "met": False, "justification": "never said"}]
ACTION = {"action_id": "1", "name": "refund", "arguments": {}, "requestor": "assistant"}


def _scored(reward: float, **fields: Any) -> dict[str, Any]:
    """A ``RewardInfo`` as τ²'s ``all`` evaluation writes it for a task of basis DB and
    COMMUNICATE (τ²'s default), every check passed unless *fields* say otherwise."""
    out: dict[str, Any] = {
        "reward": reward, "db_check": {"db_match": True, "db_reward": 1.0},
        "env_assertions": [], "action_checks": [
            {"action": ACTION, "action_match": True, "action_reward": 1.0, "tool_type": "write"}
        ], "nl_assertions": None, "communicate_checks": COMMUNICATED,
        "reward_basis": ["DB", "COMMUNICATE"],
        "reward_breakdown": {"DB": 1.0, "COMMUNICATE": 1.0},
        "info": {"env": None, "nl": None, "communicate": None, "action": None},
    }  # fmt: skip
    out.update(fields)
    return out


def _one(tmp_path: Path, scored: dict[str, Any]) -> Path:
    return _tau2(tmp_path, [simulation("a", 0, None, reward_info=scored)])


def _reason(tmp_path: Path, scored: dict[str, Any]) -> str:
    (row,) = open_source(_one(tmp_path, scored)).rows()
    return row.terminal_reason


def test_a_full_tau2_reward_record_reads_as_it_says(tmp_path: Path) -> None:
    """Guard: τ²'s own records, a pass and each kind of failure, keep their verdicts."""
    assert _reason(tmp_path, _scored(1.0)) == "success"
    wrong_db = {"db_match": False, "db_reward": 0.0}
    failed = _scored(0.0, db_check=wrong_db, reward_breakdown={"DB": 0.0, "COMMUNICATE": 1.0})
    assert _reason(tmp_path, failed) == "agent_failure/incorrect_state"
    untold = _scored(0.0, communicate_checks=UNTOLD,
                     reward_breakdown={"DB": 1.0, "COMMUNICATE": 0.0})  # fmt: skip
    assert _reason(tmp_path, untold) == "agent_failure/communication"


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"db_check": {"db_match": False, "db_reward": 0.0}}, "reward_breakdown.DB: 1.0"),
        ({"communicate_checks": UNTOLD}, "reward_breakdown.COMMUNICATE: 1.0"),
        (
            {"reward_basis": ["ACTION"], "reward_breakdown": {"ACTION": 1.0}, "action_checks": [
                {"action": ACTION, "action_match": False, "action_reward": 0.0}]},
            "reward_breakdown.ACTION: 1.0",
        ),
        (
            {"reward_basis": ["ENV_ASSERTION"], "reward_breakdown": {"ENV_ASSERTION": 1.0},
             "env_assertions": [{"env_assertion": {}, "met": False, "reward": 0.0}]},
            "reward_breakdown.ENV_ASSERTION: 1.0",
        ),
        (
            {"reward_basis": ["NL_ASSERTION"], "reward_breakdown": {"NL_ASSERTION": 1.0},
             "nl_assertions": [{"nl_assertion": "polite", "met": False, "justification": ""}]},
            "reward_breakdown.NL_ASSERTION: 1.0",
        ),
    ],
)  # fmt: skip
def test_a_component_scored_1_beside_its_failed_checks_is_refused(
    store: Store, tmp_path: Path, fields: dict[str, Any], named: str
) -> None:
    """Edited records: a ``DB`` of 1 beside a database that did not match passed an attempt
    whose database was wrong."""
    err = store.refused(_one(tmp_path, _scored(1.0, **fields)))
    assert f"simulations[0]: reward_info.{named}" in err and "checks" in err


def test_a_component_scored_0_beside_its_passed_checks_is_refused(
    store: Store, tmp_path: Path
) -> None:
    scored = _scored(0.0, reward_breakdown={"DB": 0.0, "COMMUNICATE": 1.0})
    err = store.refused(_one(tmp_path, scored))
    assert "reward_breakdown.DB: 0.0, but its checks (reward_info.db_check" in err


def test_a_db_check_whose_match_and_reward_disagree_is_refused(
    store: Store, tmp_path: Path
) -> None:
    scored = _scored(1.0, db_check={"db_match": False, "db_reward": 1.0},
                     reward_breakdown={"COMMUNICATE": 1.0})  # fmt: skip
    err = store.refused(_one(tmp_path, scored))
    assert "reward_info.db_check.db_reward: 1.0, but db_match is false" in err


def test_a_breakdown_that_leaves_out_a_failed_basis_component_is_refused(
    store: Store, tmp_path: Path
) -> None:
    """The basis counts DB, the database did not match, and the breakdown (so the product
    check) leaves DB out: a reward of 1 imported as a success."""
    scored = _scored(1.0, db_check={"db_match": False, "db_reward": 0.0},
                     reward_breakdown={"COMMUNICATE": 1.0})  # fmt: skip
    err = store.refused(_one(tmp_path, scored))
    assert "reward_info.reward_breakdown: leaves out DB, which reward_basis counts" in err


def test_without_a_breakdown_the_basis_decides_what_the_reward_counts(
    store: Store, tmp_path: Path
) -> None:
    scored = _scored(1.0, db_check={"db_match": False, "db_reward": 0.0}, reward_breakdown=None)
    err = store.refused(_one(tmp_path, scored))
    assert "reward_info.reward: 1.0, but reward_basis counts DB" in err
    scored = _scored(0.0, db_check={"db_match": False, "db_reward": 0.0}, reward_breakdown=None)
    assert _reason(tmp_path, scored) == "agent_failure/incorrect_state"  # named by its check
    scored = _scored(0.0, communicate_checks=UNTOLD, reward_breakdown={})
    assert _reason(tmp_path, scored) == "agent_failure/communication"


def test_checks_of_a_component_outside_the_basis_do_not_count(tmp_path: Path) -> None:
    """Guard: τ² runs every evaluator for diagnostics and multiplies only the basis: a failed
    database check on a COMMUNICATE-only task is no failure."""
    scored = _scored(1.0, db_check={"db_match": False, "db_reward": 0.0},
                     reward_basis=["COMMUNICATE"],
                     reward_breakdown={"COMMUNICATE": 1.0})  # fmt: skip
    assert _reason(tmp_path, scored) == "success"


def test_an_ignore_basis_evaluation_keeps_its_verdict(tmp_path: Path) -> None:
    """Guard: ``all_ignore_basis`` writes a basis of every check, while its breakdown holds DB
    only where the task's own basis did (the environment evaluator is held to it)."""
    scored = _scored(1.0, db_check={"db_match": False, "db_reward": 0.0},
                     reward_basis=["DB", "ENV_ASSERTION", "ACTION", "COMMUNICATE"],
                     reward_breakdown={"ACTION": 1.0, "COMMUNICATE": 1.0})  # fmt: skip
    assert _reason(tmp_path, scored) == "success"


def test_a_task_without_expected_actions_keeps_its_verdict(tmp_path: Path) -> None:
    """Guard: the environment evaluator's early return (no actions, no assertions) writes a
    passed ``db_check`` and no breakdown, so DB is missing from a passed record."""
    scored = _scored(1.0, reward_breakdown={"COMMUNICATE": 1.0}, action_checks=None)
    assert _reason(tmp_path, scored) == "success"


def test_a_single_component_evaluation_keeps_its_verdict(tmp_path: Path) -> None:
    """Guard: ``--evaluation-type communicate`` writes the default basis (``[DB]``) beside a
    COMMUNICATE breakdown and no database check."""
    scored = {"reward": 0.0, "communicate_checks": UNTOLD, "reward_basis": ["DB"],
              "reward_breakdown": {"COMMUNICATE": 0.0}}  # fmt: skip
    assert _reason(tmp_path, scored) == "agent_failure/communication"


MISSPELT = ["db", "Db", "db_check", "DB_CHECK", "env-assertion", "communicate_checks",
            "nl_assertions", "action_checks"]  # fmt: skip


@pytest.mark.parametrize("key", MISSPELT)
def test_a_component_spelled_otherwise_is_refused(store: Store, tmp_path: Path, key: str) -> None:
    """Read as given, a failed ``"db"`` was no database failure (the sub-reason named no
    state) and a basis of ``"db"`` no database check."""
    err = store.refused(_one(tmp_path, _scored(0.0, reward_breakdown={key: 0.0})))
    assert f"reward_info.reward_breakdown.{key}: τ² names this reward component" in err


def test_a_basis_spelled_otherwise_is_refused(store: Store, tmp_path: Path) -> None:
    err = store.refused(_one(tmp_path, _scored(1.0, reward_basis=["db", "COMMUNICATE"])))
    assert "reward_info.reward_basis.db: τ² names this reward component 'DB'" in err


def test_a_component_no_version_names_is_kept_with_a_note(store: Store, tmp_path: Path) -> None:
    """A later version's component: read by the reward, named in the import's report."""
    scored = {"reward": 0.0, "reward_basis": ["SAFETY"], "reward_breakdown": {"SAFETY": 0.0}}
    batch, err = _imported(store, _one(tmp_path, scored))
    assert _reasons(store, batch) == {("a", 1): "agent_failure/incorrect"}
    assert "'SAFETY' is none known here" in err


@pytest.mark.parametrize(("name", "check"), [
    ("communicate_checks", [{"info": "x", "met": "true", "justification": ""}]),
    ("communicate_checks", [{"info": "x", "met": 1, "justification": ""}]),
    ("db_check", {"db_match": None, "db_reward": 1.0}),
    ("action_checks", {"action": ACTION}),
    ("env_assertions", ["met"]),
])  # fmt: skip
def test_a_check_of_the_wrong_kind_is_refused(
    store: Store, tmp_path: Path, name: str, check: Any
) -> None:
    err = store.refused(_one(tmp_path, _scored(1.0, **{name: check})))
    assert f"simulations[0]: reward_info.{name}" in err


# --- pass@k and pass^k, recomputed with exact fractions ------------------------------------


def _exact(outcomes: dict[str, list[bool]]) -> dict[str, Fraction]:
    """pass@k = mean over tasks of 1 - C(n-c, k)/C(n, k), pass^k = mean of C(c, k)/C(n, k),
    each task's n and c over its valid attempts, k up to the fewest a task has."""
    counted = {t: (len(v), sum(v)) for t, v in outcomes.items() if v}
    out = {}
    for k in range(1, min(n for n, _ in counted.values()) + 1):
        at = [1 - Fraction(comb(n - c, k), comb(n, k)) for n, c in counted.values()]
        hat = [Fraction(comb(c, k), comb(n, k)) for n, c in counted.values()]
        out[f"pass@{k}"] = sum(at, Fraction(0)) / len(at)
        out[f"pass^{k}"] = sum(hat, Fraction(0)) / len(hat)
    return out


def _printed(report: dict[str, Any]) -> dict[str, float]:
    out = {f"pass@{k}": v["estimate"] for k, v in report["pass_at_k"].items()}
    out.update({f"pass^{k}": v["estimate"] for k, v in report["pass_hat_k"].items()})
    return out


def _agrees(report: dict[str, Any], outcomes: dict[str, list[bool]]) -> None:
    exact = _exact(outcomes)
    printed = _printed(report)
    assert printed.keys() == exact.keys()
    for name, value in exact.items():
        assert abs(Fraction(printed[name]) - value) < Fraction(1, 10**12), name


def test_tau_bench_pass_k_recomputed(store: Store, tmp_path: Path) -> None:
    results = [tau(t, i, 1.0 if ok else 0.0, reward_info(1.0 if ok else 0.0))
               for t, row in enumerate(["1101", "0000", "1111", "0110"])
               for i, ok in enumerate(c == "1" for c in row)]  # fmt: skip
    results[1] = tau(0, 1, 0.0, {"error": "RateLimitError"})  # a crash: a failure by default
    batch, _ = _imported(store, write_json(tmp_path / "tau.json", results))
    report = store.report(batch)
    assert report["valid_attempts"] == 16
    _agrees(report, {"0": [True, False, False, True], "1": [False] * 4, "2": [True] * 4,
                     "3": [False, True, True, False]})  # fmt: skip
    assert report["pass_hat_k"]["4"]["estimate"] == pytest.approx(1 / 4)


def test_tau2_pass_k_recomputed_with_invalid_attempts_out(store: Store, tmp_path: Path) -> None:
    """An infrastructure error is out of the valid denominators (τ²'s metrics leave it out
    too), in the strict view as a failure."""
    sims = [
        simulation("a", 0, 1.0), simulation("a", 1, 1.0), simulation("a", 2, 0.0),
        simulation("b", 0, 0.0), simulation("b", 1, 1.0),
        simulation("b", 2, 0.0, termination_reason="infrastructure_error", reward_info=None),
        simulation("c", 0, 0.5, reward_info=_scored(0.5, reward_breakdown=None, db_check=None,
                                                    communicate_checks=None)),
        simulation("c", 1, 1.0), simulation("c", 2, 1.0),
    ]  # fmt: skip
    batch, _ = _imported(store, _tau2(tmp_path, sims, num_trials=3))
    report = store.report(batch)
    assert (report["valid_attempts"], report["invalid_attempts"]) == (8, 1)
    _agrees(report, {"a": [True, True, False], "b": [False, True], "c": [False, True, True]})
    strict = {"a": [True, True, False], "b": [False, True, False], "c": [False, True, True]}
    _agrees(report["invalid_as_failure"], strict)


def test_terminal_bench_pass_k_recomputed(store: Store, tmp_path: Path) -> None:
    trials = [tb_trial("x", 1, True), tb_trial("x", 2, False), tb_trial("y", 1, True),
              tb_trial("y", 2, True, "agent_timeout"),  # the first stop decides: a failure
              tb_trial("z", 1, None, "unknown_agent_error"), tb_trial("z", 2, True)]  # fmt: skip
    folder = tmp_path / "run"
    folder.mkdir()
    batch, _ = _imported(store, write_json(folder / "results.json", tb_run(trials)))
    report = store.report(batch)
    assert report["valid_attempts"] == 6
    _agrees(report, {"x": [True, False], "y": [True, False], "z": [False, True]})


def test_inspect_pass_k_recomputed_with_an_errored_sample_counted(
    store: Store, tmp_path: Path
) -> None:
    """An errored sample that has a score still failed (the error decides), and stays in
    the denominator under ``--errors agent``."""
    error = {"message": "boom", "traceback": "", "traceback_ansi": ""}
    samples = [sample("p", 1, {"m": {"value": "C"}}, error=error),
               sample("p", 2, {"m": {"value": "C"}}), sample("p", 3, {"m": {"value": "I"}}),
               sample("q", 1, {"m": {"value": "C"}}), sample("q", 2, {"m": {"value": 1.0}}),
               sample("q", 3, {"m": {"value": True}})]  # fmt: skip
    batch, _ = _imported(store, write_eval(tmp_path / "run.eval", samples))
    report = store.report(batch)
    assert report["valid_attempts"] == 6
    _agrees(report, {"p": [False, True, False], "q": [True, True, True]})


def test_harbor_pass_k_recomputed_a_timed_out_reward_of_1_failing(
    store: Store, tmp_path: Path
) -> None:
    timeout = {"exception_type": "AgentTimeoutError", "exception_message": "timed out",
               "exception_traceback": "", "occurred_at": "2026-08-01T10:00:00+00:00"}  # fmt: skip
    trials = [trial("h", "h__a", {"reward": 1.0}, minute=0),
              trial("h", "h__b", {"reward": 1.0}, exception_info=timeout, minute=1),
              trial("g", "g__c", {"reward": 0.0}, minute=2),
              trial("g", "g__d", {"reward": 1.0}, minute=3)]  # fmt: skip
    batch, _ = _imported(store, job(tmp_path / "job", trials))
    report = store.report(batch)
    assert report["valid_attempts"] == 4
    _agrees(report, {"h": [True, False], "g": [False, True]})


def test_swe_bench_errors_stay_in_the_denominator_by_default(store: Store, tmp_path: Path) -> None:
    run = {"total_instances": 4, "submitted_instances": 4, "completed_instances": 3,
           "resolved_instances": 2, "unresolved_instances": 1, "empty_patch_instances": 0,
           "error_instances": 1, "completed_ids": ["a", "b", "c"], "incomplete_ids": [],
           "empty_patch_ids": [], "submitted_ids": ["a", "b", "c", "d"],
           "resolved_ids": ["a", "c"], "unresolved_ids": ["b"], "error_ids": ["d"],
           "schema_version": 2}  # fmt: skip
    path = write_json(tmp_path / "m.run.json", run)
    batch, _ = _imported(store, path)
    report = store.report(batch)
    assert (report["valid_attempts"], report["invalid_attempts"]) == (4, 0)
    assert Fraction(report["success_rate"]["estimate"]).limit_denominator(100) == Fraction(1, 2)
    batch, _ = _imported(store, path, "--errors", "environment")
    report = store.report(batch)
    assert (report["valid_attempts"], report["invalid_attempts"]) == (3, 1)
    assert Fraction(report["success_rate"]["estimate"]).limit_denominator(100) == Fraction(2, 3)


# --- damaged files lose nothing --------------------------------------------------------------


@pytest.mark.parametrize("cut", [10, 50, -5])
def test_a_truncated_tau2_file_stores_nothing(store: Store, tmp_path: Path, cut: int) -> None:
    sims = [simulation("a", i, 1.0, reward_info=_scored(1.0)) for i in range(3)]
    text = json.dumps(tau2_file(sims))
    path = tmp_path / "tau2.json"
    path.write_text(text[:cut])
    store.refused(path, "--format", "tau2-bench")


def test_a_refused_tau2_breakdown_in_the_middle_of_a_run_stores_none_of_it(
    store: Store, tmp_path: Path
) -> None:
    """The bad simulation is the last: the good ones read before it are not stored either."""
    sims = [simulation("a", i, 1.0, reward_info=_scored(1.0)) for i in range(2)]
    bad = _scored(1.0, db_check={"db_match": False, "db_reward": 0.0})
    sims.append(simulation("b", 0, 1.0, reward_info=bad))
    err = store.refused(_tau2(tmp_path, sims, num_trials=2))
    assert "simulations[2]: reward_info.reward_breakdown.DB" in err


def test_the_library_names_the_file_and_field_too(tmp_path: Path) -> None:
    path = _tau2(tmp_path, [simulation("a", 0, 1.0)], num_trials="many")
    source = open_source(path, ImportOptions(format="tau2-bench"))
    list(source.rows())
    with pytest.raises(SpecError, match=r"tau2\.json: info\.num_trials: must be a number"):
        source.warnings()
