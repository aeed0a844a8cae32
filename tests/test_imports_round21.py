"""Other harnesses' result files, twenty-first round.

The class: a field that says how a record's verdict was reached (τ-bench's checks, τ²'s
``reward_breakdown``, SWE-bench's ``submitted_ids``, the entry ``--scorer NAME.KEY`` names)
was read loosely or not at all, so a file its writer could not have written imported to a
verdict or a denominator the file does not support:

- a τ-bench check (``r_actions``, ``r_outputs``) written as text was read as its number, while
  the reward beside it in text is refused; a reward of 0 beside a passed ``r_actions`` (its
  one check) and an ``r_outputs`` its own ``outputs`` contradict were not checked;
- a τ² reward whose ``reward_breakdown`` multiplies to another number was decided by the
  reward alone (τ²'s reward is the product of its components);
- a SWE-bench instance with an outcome but not in ``submitted_ids``, one both submitted and in
  ``incomplete_ids``, and one submitted but in no outcome list of a report whose lists fall
  short of ``total_instances`` imported as if the lists were whole;
- ``--scorer NAME.KEY`` on a sample whose value is a scalar read the scalar as the entry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.test_imports_formats import Store, log, reward_info, sample, tau, write_json
from tests.test_imports_round11 import SWE_REPORT
from tests.test_imports_tau2_versions import simulation


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


# --- τ-bench: checks as τ-bench writes them ---------------------------------------------------


@pytest.mark.parametrize(
    ("detail", "field", "said"),
    [
        ({"r_actions": "1.0", "gt_data_hash": "h"}, "info.reward_info.info.r_actions", "'1.0'"),
        ({"r_outputs": "0", "outputs": {"42": False}}, "info.reward_info.info.r_outputs", "'0'"),
        ({"r_actions": None, "gt_data_hash": "h"}, "info.reward_info.info.r_actions", "None"),
    ],
)
def test_a_tau_bench_check_not_written_as_a_number_is_refused(
    store: Store, tmp_path: Path, detail: dict[str, Any], field: str, said: str
) -> None:
    """``RewardActionInfo.r_actions`` / ``RewardOutputInfo.r_outputs`` are floats pydantic
    dumps as numbers; a check in text was read as its number (``"1.0"`` passed)."""
    items = [tau(0, 0, 1.0, reward_info(1.0, r_actions=1.0, gt_data_hash="h")),
             tau(0, 1, 0.0, reward_info(0.0, **detail))]  # fmt: skip
    err = store.refused(write_json(tmp_path / "tau.json", items))
    assert f"tau.json:2: {field}:" in err and said in err, err


@pytest.mark.parametrize(
    ("detail", "field", "said"),
    [
        ({"r_actions": 1.0, "gt_data_hash": "h"}, "reward",
         "0.0, but info.reward_info.info.r_actions is 1.0 (the one check, passed)"),
        ({"r_outputs": 1.0, "outputs": {"42": False}}, "info.reward_info.info.r_outputs",
         "1.0, but of its outputs '42' is False"),
        ({"r_outputs": 0.0, "outputs": {"42": True}}, "info.reward_info.info.r_outputs",
         "0.0, but of its outputs every one was found"),
    ],
)  # fmt: skip
def test_a_tau_bench_failure_its_checks_contradict_is_refused(
    store: Store, tmp_path: Path, detail: dict[str, Any], field: str, said: str
) -> None:
    """``calculate_reward`` gives 0 only when a check failed, and ``r_outputs`` 1 only when
    every output was found: a 0 beside a passed ``r_actions`` failed an attempt its checks
    passed (an edit turning a success into a failure)."""
    items = [tau(0, 0, 1.0, reward_info(1.0, r_actions=1.0, gt_data_hash="h")),
             tau(0, 1, 0.0, reward_info(0.0, **detail))]  # fmt: skip
    err = store.refused(write_json(tmp_path / "tau.json", items))
    assert f"tau.json:2: {field}: {said}" in err, err


def test_tau_bench_checks_as_tau_bench_writes_them_import(store: Store, tmp_path: Path) -> None:
    """Controls, as the published ``historical_trajectories`` hold them: a 0 beside a failed
    ``r_actions``; a 0 beside ``r_outputs`` 1 (every output told, the database wrong); a 1
    beside every check passed; the first ``run.py``'s booleans at the top of ``info``."""
    items = [
        tau(0, 0, 0.0, reward_info(0.0, r_actions=0.0, gt_data_hash="h")),
        tau(0, 1, 1.0, reward_info(1.0, r_actions=1.0, gt_data_hash="h")),
        tau(1, 0, 0.0, reward_info(0.0, r_outputs=1.0, outputs={"42": True})),
        tau(1, 1, 1.0, reward_info(1.0, r_outputs=1.0, outputs={"42": True})),
        tau(2, 0, 0.0, reward_info(0.0, r_outputs=0.0, outputs={"42": False, "7": True})),
        tau(2, 1, 1.0, {"r_actions": True, "r_outputs": True}),
    ]
    batch = store.imported(write_json(tmp_path / "tau.json", items))
    assert store.runs(batch) == {
        ("0", 1, 0): ("agent_failure/incorrect_state", None),
        ("0", 2, 0): ("success", None),
        ("1", 1, 0): ("agent_failure/incorrect_state", None),
        ("1", 2, 0): ("success", None),
        ("2", 1, 0): ("agent_failure/communication", None),
        ("2", 2, 0): ("success", None),
    }


# --- τ²: the reward is the product of its breakdown ------------------------------------------


def _tau2(tmp: Path, reward: Any, breakdown: Any) -> Path:
    sims = [
        simulation("a1", "1", 0),
        simulation("a2", "1", 1, reward, reward_info={"reward": reward,
                                                      "reward_breakdown": breakdown}),
    ]  # fmt: skip
    return write_json(tmp / "results.json", {"info": {}, "tasks": [], "simulations": sims})


@pytest.mark.parametrize(
    ("reward", "breakdown", "said"),
    [
        (1.0, {"DB": 0.0, "COMMUNICATE": 1.0}, "1.0, but its reward_breakdown (DB 0.0, "
         "COMMUNICATE 1.0) multiplies to 0.0"),
        (0.0, {"DB": 1.0, "ACTION": 1.0}, "0.0, but its reward_breakdown"),
        (0.5, {"NL_ASSERTION": 1.0}, "0.5, but its reward_breakdown"),
    ],
)  # fmt: skip
def test_a_tau2_reward_its_breakdown_contradicts_is_refused(
    store: Store, tmp_path: Path, reward: float, breakdown: dict[str, Any], said: str
) -> None:
    err = store.refused(_tau2(tmp_path, reward, breakdown))
    assert f"results.json:simulations[1]: reward_info.reward: {said}" in err, err


@pytest.mark.parametrize(
    ("breakdown", "field"),
    [({"DB": "1.0"}, "reward_info.reward_breakdown.DB"), (["DB"], "reward_info.reward_breakdown")],
)
def test_a_tau2_breakdown_not_as_tau2_writes_it_is_refused(
    store: Store, tmp_path: Path, breakdown: Any, field: str
) -> None:
    err = store.refused(_tau2(tmp_path, 1.0, breakdown))
    assert f"simulations[1]: {field}: must be" in err, err


def test_a_tau2_breakdown_that_agrees_imports(store: Store, tmp_path: Path) -> None:
    """Controls: a failure whose breakdown names its component, a success whose components
    all passed, and no breakdown (``null``, ``{}``: a task without criteria, an early end)."""
    sims = [
        simulation("a", "1", 0, 0.0, reward_info={"reward": 0.0, "reward_breakdown":
                                                  {"DB": 1.0, "COMMUNICATE": 0.0}}),
        simulation("b", "1", 1, 1.0, reward_info={"reward": 1.0, "reward_breakdown":
                                                  {"DB": 1.0, "ACTION": 1.0}}),
        simulation("c", "2", 0, 1.0, reward_info={"reward": 1.0, "reward_breakdown": None}),
        simulation("d", "2", 1, 1.0, reward_info={"reward": 1.0, "reward_breakdown": {}}),
        simulation("e", "3", 0, 0.0, termination_reason="max_steps",
                   reward_info={"reward": 0.0, "reward_breakdown": None}),
    ]  # fmt: skip
    path = write_json(tmp_path / "results.json", {"info": {}, "tasks": [], "simulations": sims})
    batch = store.imported(path)
    assert store.runs(batch) == {
        ("1", 1, 0): ("agent_failure/communication", None),
        ("1", 2, 0): ("success", None),
        ("2", 1, 0): ("success", None),
        ("2", 2, 0): ("success", None),
        ("3", 1, 0): ("agent_failure/step_limit", None),
    }


# --- SWE-bench: submitted_ids against the outcome lists --------------------------------------


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        ({"submitted_ids": ["b__b-2", "c__c-3", "d__d-4", "e__e-5", "z__z-9"]},
         "resolved_ids[0]: resolved_ids: instance 'a__a-1' is not in submitted_ids"),
        ({"submitted_ids": ["a__a-1", "b__b-2", "c__c-3", "d__d-4", "e__e-5", "f__f-6"],
          "submitted_instances": 6},
         "incomplete_ids[0]: incomplete_ids: instance 'f__f-6' is also in submitted_ids"),
        ({"submitted_ids": ["a__a-1", "b__b-2", "c__c-3", "d__d-4", "e__e-5", "g__g-7"],
          "submitted_instances": 6, "total_instances": 7},
         "submitted_ids[5]: submitted_ids: instance 'g__g-7' was submitted but is in no "
         "outcome list, and total_instances is 7 while the lists hold 6"),
        ({"submitted_instances": 4}, "submitted_instances: 4, but submitted_ids lists 5"),
    ],
)  # fmt: skip
def test_a_swe_bench_report_whose_submitted_ids_contradict_its_lists_is_refused(
    store: Store, tmp_path: Path, edit: dict[str, Any], said: str
) -> None:
    """An id with an outcome not submitted, or an instance submitted whose outcome is cut
    (the lists short of ``total_instances``): the batch's denominator would not be the
    run's."""
    err = store.refused(write_json(tmp_path / "gpt-4o.run1.json", {**SWE_REPORT, **edit}))
    assert said in err, err


def test_a_submitted_instance_outside_the_run_is_named_not_refused(
    store: Store, tmp_path: Path
) -> None:
    """Control: run with ``--instance_ids``, ``make_run_report`` keeps every prediction in
    ``submitted_ids`` while ``total_instances`` counts the chosen instances only; the lists
    add up to that total, so the extra one was never asked for: a warning, no attempt."""
    report = {**SWE_REPORT, "submitted_instances": 6,
              "submitted_ids": [*SWE_REPORT["submitted_ids"], "g__g-7"]}  # fmt: skip
    path = write_json(tmp_path / "gpt-4o.run1.json", report)
    from tests.test_imports_formats import cli

    code, out, err = cli("import-results", str(path), "--name", "x", "--store", str(store.path))
    assert code == 0, err
    assert "1 submitted instance is outside the run's 6 instances ('g__g-7'" in err
    batch = out.strip().splitlines()[-1].removeprefix("batch ")
    assert {task for task, _, _ in store.runs(batch)} == {
        "a__a-1", "b__b-2", "c__c-3", "d__d-4", "e__e-5"
    }  # fmt: skip


# --- Inspect: --scorer NAME.KEY on a scalar ----------------------------------------------------


def test_an_inspect_scorer_key_on_a_scalar_value_is_refused(store: Store, tmp_path: Path) -> None:
    """``--scorer match.accuracy`` on a sample whose ``match`` value is ``"C"``: the ``C``
    decided it as if it were its accuracy."""
    samples = [sample("a", 1, {"match": {"value": {"accuracy": 0, "f1": 1}}}),
               sample("a", 2, {"match": {"value": "C"}})]  # fmt: skip
    path = write_json(tmp_path / "log.json", log(samples))
    err = store.refused(path, "--scorer", "match.accuracy")
    assert "log.json:samples[1]: scores.match.value: 'C', one value, not a value per key" in err
    assert "--scorer match reads it whole" in err


def test_an_inspect_scorer_key_on_dict_values_imports(store: Store, tmp_path: Path) -> None:
    """Controls: the key of a dict value, and a scorer whose own name holds a dot."""
    samples = [sample("a", 1, {"match": {"value": {"accuracy": 0, "f1": 1}}}),
               sample("a", 2, {"match": {"value": {"accuracy": 1, "f1": 1}}})]  # fmt: skip
    batch = store.imported(write_json(tmp_path / "log.json", log(samples)),
                           "--scorer", "match.accuracy")  # fmt: skip
    assert store.runs(batch) == {
        ("a", 1, 0): ("agent_failure/incorrect", None),
        ("a", 2, 0): ("success", None),
    }
    dotted = [sample("b", 1, {"v1.match": {"value": "C"}})]
    batch = store.imported(write_json(tmp_path / "dotted.json", log(dotted)),
                           "--scorer", "v1.match")  # fmt: skip
    assert store.runs(batch) == {("b", 1, 0): ("success", None)}
