"""τ²-bench results files as other τ² versions write them (second-round audit): the "dir"
format (results.json with a ``simulation_index``, one file per simulation), simulations
without a ``trial`` (optional in τ²'s model), a grade τ²'s evaluator gave up on (its own
exception, scored 0), rewards written as text. Denominators must stay honest: every
simulation counted once, the grader's failures invalid, nothing dropped without a word."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.errors import SpecError
from groundstate.importers import detect_format, import_file
from groundstate.store import RunStore


def simulation(sid: str, task: Any, trial: Any, reward: Any = 1.0, **extra: Any) -> Any:
    return {"id": sid, "task_id": task, "trial": trial, "termination_reason": "user_stop",
            "duration": 3.0, "reward_info": {"reward": reward}, **extra}  # fmt: skip


SIMULATIONS = [
    simulation("a1", "1", 0),
    simulation("a2", "1", 1, 0.0),
    simulation("b1", "2", 0),
    simulation("b2", "2", 1),
]


def monolithic(tmp_path: Path, simulations: list[Any]) -> Path:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"info": {}, "tasks": [], "simulations": simulations}))
    return path


def dir_format(tmp_path: Path, simulations: list[Any], indent: int | None = None) -> Path:
    root = tmp_path / "run"
    (root / "simulations").mkdir(parents=True)
    index = [{"id": s["id"], "task_id": s["task_id"], "trial": s["trial"]} for s in simulations]
    meta = {"info": {}, "tasks": [], "simulation_index": index}
    (root / "results.json").write_text(json.dumps(meta, indent=indent))
    for item in simulations:
        (root / "simulations" / f"{item['id']}.json").write_text(json.dumps(item))
    return root / "results.json"


def outcome(tmp_path: Path, path: Path) -> dict[tuple[str, int], str]:
    with RunStore(tmp_path / "r.db") as store:
        report = import_file(path, "other", store)
        return {
            (r.task_id, r.attempt): r.terminal_reason for r in store.runs(report.batch.batch_id)
        }


def report(tmp_path: Path, path: Path) -> tuple[dict[str, Any], str]:
    store = str(tmp_path / "r.db")
    args = ["import-results", str(path), "--name", "x", "--json", "--store", store]
    imported = CliRunner().invoke(main, args)
    assert imported.exit_code == 0, imported.output
    batch = json.loads(imported.stdout)["batch_id"]
    shown = CliRunner().invoke(main, ["report", batch, "--json", "--store", store])
    return json.loads(shown.stdout), imported.stderr


@pytest.mark.parametrize("indent", [None, 2], ids=["one-line", "indented"])
def test_the_dir_format_imports_as_the_monolithic_file_does(
    tmp_path: Path, indent: int | None
) -> None:
    """Its results.json has no ``simulations``: it was "cannot tell its format" (or, with
    --format, an error) though τ² writes it by default for voice runs."""
    path = dir_format(tmp_path / "d", SIMULATIONS, indent)
    assert detect_format(path) == "tau2-bench"
    assert outcome(tmp_path / "d", path) == outcome(
        tmp_path / "m", monolithic(tmp_path, SIMULATIONS)
    )


def test_a_dir_format_with_an_empty_simulations_placeholder_reads_the_files(
    tmp_path: Path,
) -> None:
    path = dir_format(tmp_path, SIMULATIONS)
    meta = json.loads(path.read_text())
    path.write_text(json.dumps({**meta, "simulations": []}))
    assert len(outcome(tmp_path, path)) == len(SIMULATIONS)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda root: (root / "simulations" / "a2.json").unlink(), "no file for a2"),
        (lambda root: (root / "simulations" / "zz.json").write_text("{}"), "not in the index: zz"),
        (lambda root: (root / "simulations" / "b1.json").rename(root / "simulations" / "b9.json"),
         "no file for b1; not in the index: b9"),
    ],
    ids=["missing", "extra", "renamed"],
)  # fmt: skip
def test_a_dir_format_whose_files_do_not_match_its_index_is_refused(
    tmp_path: Path, damage: Any, message: str
) -> None:
    """A lost simulation file would otherwise shrink every denominator silently."""
    path = dir_format(tmp_path, SIMULATIONS)
    damage(path.parent)
    with pytest.raises(SpecError, match=message):
        outcome(tmp_path, path)


def test_a_malformed_simulation_file_is_named_by_its_path(tmp_path: Path) -> None:
    path = dir_format(tmp_path, SIMULATIONS)
    (path.parent / "simulations" / "b2.json").write_text(json.dumps({"id": "b2"}))
    with pytest.raises(SpecError, match=r"simulations/b2\.json: termination_reason: required"):
        outcome(tmp_path, path)


def test_simulations_without_a_trial_are_counted_once_each(tmp_path: Path) -> None:
    """``trial`` is optional in τ²'s model; a missing one was refused ("must be an integer")."""
    untried = [{**s, "trial": None} for s in SIMULATIONS[:2]] + [
        {k: v for k, v in s.items() if k != "trial"} for s in SIMULATIONS[2:]
    ]
    data, warnings = report(tmp_path, monolithic(tmp_path, untried))
    assert (data["valid_attempts"], data["invalid_attempts"]) == (4, 0)
    assert [row["valid"]["n"] for row in data["tasks"]] == [2, 2]
    assert "4 attempts: τ² trial missing: the attempt is labelled by its simulation id" in warnings


def test_a_file_mixing_given_and_missing_trials_counts_each_simulation(tmp_path: Path) -> None:
    mixed = [*SIMULATIONS, {**simulation("a3", "1", None, 0.0)}]
    data, _ = report(tmp_path, monolithic(tmp_path, mixed))
    assert [row["valid"]["n"] for row in data["tasks"]] == [3, 2]


def test_an_evaluation_tau2_gave_up_on_is_a_grader_failure(tmp_path: Path) -> None:
    """τ² grades a simulation 0 when its evaluator raises (a replay diverging): counted as the
    agent's failure, it lowered the system's score for the instrument's fault."""
    note = "Evaluation raised an unexpected exception"
    crashed = {"reward": 0.0, "reward_basis": ["DB"], "info": {"error": "KeyError", "note": note}}
    failed = {"reward": 0.0, "info": {"env": {}, "nl": None}, "reward_breakdown": {"DB": 0.0}}
    sims = [
        {**simulation("a1", "1", 0), "reward_info": crashed},
        {**simulation("a2", "1", 1), "reward_info": failed},
    ]
    assert outcome(tmp_path, monolithic(tmp_path, sims)) == {
        ("1", 1): "grader_failure",
        ("1", 2): "agent_failure/incorrect_state",
    }


@pytest.mark.parametrize("reward", ["1.0", "1", "0.0"])
def test_rewards_written_as_text_are_refused(tmp_path: Path, reward: str) -> None:
    """τ² writes ``RewardInfo.reward: float`` with ``model_dump_json``: a quoted reward is
    from a file it did not write (nineteenth round; it was read as the number)."""
    path = monolithic(tmp_path, [simulation("a1", "1", 0, reward)])
    with pytest.raises(SpecError, match=r"reward_info.reward: .* got text"):
        outcome(tmp_path, path)


@pytest.mark.parametrize("reward", ["NaN", "high", float("inf")])
def test_rewards_that_are_no_finite_number_are_refused(tmp_path: Path, reward: Any) -> None:
    path = tmp_path / "results.json"
    text = json.dumps({"info": {}, "tasks": [], "simulations": [simulation("a1", "1", 0, reward)]})
    path.write_text(text)
    with pytest.raises(SpecError, match=r"simulations\[0\]: reward_info.reward: must be a"):
        outcome(tmp_path, path)


@pytest.mark.parametrize(
    ("told", "reason"),
    [
        (1.0, "agent_failure/incorrect_state"),  # every output told: the database was wrong
        (1, "agent_failure/incorrect_state"),
        (True, "agent_failure/incorrect_state"),
        (0.0, "agent_failure/communication"),
    ],
)
def test_tau_bench_checks_read_as_their_numbers(tmp_path: Path, told: Any, reason: str) -> None:
    """``r_outputs`` of 1 read as not passed: the failure was blamed on what the agent said
    instead of the database it left. (Written as text, ``"1.0"``, a check is refused since
    the twenty-first round, as a reward in text is: tests/test_imports_round21.py.)"""
    detail = {"r_outputs": told, "outputs": {"42": told == 1}}
    info = {"reward_info": {"reward": 0.0, "info": detail, "actions": []}}
    path = tmp_path / "tau.json"
    path.write_text(json.dumps([{"task_id": 3, "reward": 0.0, "info": info, "trial": 0}]))
    assert outcome(tmp_path, path) == {("3", 1): reason}
