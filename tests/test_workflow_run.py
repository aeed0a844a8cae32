"""``run`` for CI: subsets of tasks, --fail-under gates, exit codes and the JSON they read."""

from __future__ import annotations

import json
import shutil
from math import comb
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.gates import BadGate, gate_results, parse_gate
from groundstate.runner import derive_seed
from groundstate.selection import NoTasksSelected, select_tasks
from groundstate.spec.suite import Suite, load_suite
from groundstate.store import RunStore

from .conftest import BANK, BANK_SYSTEM

# Succeeds on odd attempt seeds, does nothing on even ones: a known success rate.
HALF_AGENT = """
async def agent(session):
    if session.seed % 2 == 0:
        return 'I did nothing.'
    await session.say('What is your PIN?')
    await session.call('check_pin', {'account': 'A', 'pin': '1234'})
    await session.call('transfer', {'source': 'A', 'target': 'B', 'amount': 30})
    return 'Moved 30 from A to B.'
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A bank suite of three tasks (copies of transfer), a half-right system, a store."""
    root = tmp_path_factory.mktemp("world")
    suite = root / "bank3"
    shutil.copytree(BANK, suite)
    task = yaml.safe_load((suite / "tasks" / "transfer.yaml").read_text())
    for task_id, labels in (("transfer_copy", ["copies"]), ("wire", ["payments", "copies"])):
        copy = {**task, "task_id": task_id, "slice_labels": labels}
        (suite / "tasks" / f"{task_id}.yaml").write_text(yaml.safe_dump(copy))
        shutil.copytree(suite / "solutions" / "transfer", suite / "solutions" / task_id)
    (root / "agent.py").write_text(HALF_AGENT)
    system = yaml.safe_load(BANK_SYSTEM.read_text())
    system["harness"]["orchestration_loop"] = {"entry": "agent.py:agent", "params": {}}
    (root / "system.yaml").write_text(yaml.safe_dump(system))
    return suite, root / "system.yaml", root / "runs.db"


def _run(world: tuple[Path, Path, Path], *more: str) -> tuple[int, str, str]:
    suite, system, store = world
    args = ["run", str(suite), "--system", str(system), "--store", str(store), *more]
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def _odd_seeds(task_id: str, attempts: int) -> int:
    """Attempts whose seed is odd: HALF_AGENT succeeds on them."""
    return sum(derive_seed(0, task_id, n) % 2 == 1 for n in range(1, attempts + 1))


# --- choosing tasks --------------------------------------------------------------------


@pytest.fixture(scope="module")
def bank3(world: tuple[Path, Path, Path]) -> Suite:
    return load_suite(world[0])


@pytest.mark.parametrize(
    ("criteria", "chosen"),
    [
        ({}, None),
        ({"task_ids": ["wire"]}, ("wire",)),
        ({"task_ids": ["wire", "transfer"]}, ("transfer", "wire")),
        ({"slices": ["copies"]}, ("transfer_copy", "wire")),
        ({"slices": ["payments"]}, ("transfer", "wire")),
        ({"patterns": ["transfer"]}, ("transfer", "transfer_copy")),  # a substring
        ({"patterns": ["transfer"], "slices": ["copies"]}, ("transfer_copy",)),  # both narrow
        ({"patterns": ["transfer*"]}, ("transfer", "transfer_copy")),
        ({"patterns": ["transfer?"]}, None),  # a wildcard must match the whole id: none does
        ({"patterns": ["*re"]}, ("wire",)),
        ({"patterns": ["w", "copy"]}, ("transfer_copy", "wire")),  # any -k is enough
        ({"task_ids": ["transfer"], "slices": ["copies"]}, None),  # nothing is both
    ],
)
def test_select_tasks(bank3: Suite, criteria: dict[str, list[str]], chosen: object) -> None:
    if chosen is None and criteria:
        with pytest.raises(NoTasksSelected, match="no task of suite 'bank' matches"):
            select_tasks(bank3, **criteria)
    else:
        assert select_tasks(bank3, **criteria) == chosen


@pytest.mark.parametrize(
    ("criteria", "message"),
    [
        ({"task_ids": ["Wire"]}, "has no task 'Wire' (its tasks: transfer, transfer_copy, wire)"),
        ({"slices": ["payment"]}, "has no slice 'payment' (its slices: copies, payments)"),
    ],
)
def test_unknown_names_are_refused(
    bank3: Suite, criteria: dict[str, list[str]], message: str
) -> None:
    with pytest.raises(NoTasksSelected, match=message.replace("(", r"\(").replace(")", r"\)")):
        select_tasks(bank3, **criteria)


def test_run_a_subset_records_only_its_tasks(world: tuple[Path, Path, Path]) -> None:
    code, out, err = _run(world, "--slice", "copies", "-k", "wi", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["tasks"] == 1 and {r["task_id"] for r in data["runs"]} == {"wire"}
    with RunStore(world[2]) as store:
        assert list(store.batch(data["batch_id"]).task_revisions) == ["wire"]


def test_run_refuses_an_unknown_task_before_anything_runs(world: tuple[Path, Path, Path]) -> None:
    store = world[2]
    before = len(RunStore(store).batches()) if store.exists() else 0
    code, _, err = _run(world, "--task", "wir")
    assert code == 2 and "has no task 'wir'" in err and "Traceback" not in err
    assert (len(RunStore(store).batches()) if store.exists() else 0) == before


def test_resume_refuses_a_new_selection(world: tuple[Path, Path, Path]) -> None:
    code, _, err = _run(world, "--resume", "abc", "--task", "wire")
    assert code == 2 and "drop --task" in err


# --- gates -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "metric", "threshold"),
    [
        ("success_rate=0.8", "success_rate", 0.8),
        ("pass^2=0.5", "pass^2", 0.5),
        ("pass@3=1", "pass@3", 1.0),
        (" pass^10 = 0 ", "pass^10", 0.0),
    ],
)
def test_parse_gate(text: str, metric: str, threshold: float) -> None:
    gate = parse_gate(text)
    assert (gate.metric, gate.threshold) == (metric, threshold)


@pytest.mark.parametrize(
    "text",
    ["success_rate", "success_rate>0.8", "pass^k=0.5", "pass^0=0.5", "pass2=0.5",
     "success_rate=80%", "success_rate=1.5", "success_rate=-0.1", "Success_rate=0.5", "=0.5"],
)  # fmt: skip
def test_bad_gates_are_refused(text: str) -> None:
    with pytest.raises(BadGate, match="--fail-under"):
        parse_gate(text)


def test_a_gate_on_an_unestimated_metric_fails() -> None:
    report = {"success_rate": None, "pass_at_k": {}, "pass_hat_k": {1: {"estimate": 1.0}}}
    results = gate_results([parse_gate("pass^2=0"), parse_gate("pass^1=1")], report)
    assert [(r["value"], r["passed"]) for r in results] == [(None, False), (1.0, True)]


def test_fail_under_sets_the_exit_code(world: tuple[Path, Path, Path]) -> None:
    attempts = 4
    wins = _odd_seeds("transfer", attempts)
    assert 0 < wins < attempts  # the seeds give a partly successful task
    rate, hat2 = wins / attempts, comb(wins, 2) / comb(attempts, 2)
    args = ["--task", "transfer", "--attempts", str(attempts), "--json"]
    code, out, err = _run(world, *args, "--fail-under", f"success_rate={rate}",
                          "--fail-under", f"pass^2={hat2}")  # fmt: skip
    assert code == 0, err  # equal to the threshold passes
    data = json.loads(out)
    assert data["success_rate"]["estimate"] == pytest.approx(rate)
    assert data["pass_hat_k"]["2"]["estimate"] == pytest.approx(hat2)
    assert set(data["pass_at_k"]) == {"1", "2", "3", "4"}
    assert data["invalid_rate_flagged"] is False and data["max_invalid_rate"] == 0.1
    assert [g["passed"] for g in data["fail_under"]] == [True, True]
    code, out, err = _run(world, *args, "--fail-under", f"pass^2={hat2 + 0.01}")
    assert code == 4
    assert err.strip() == f"error: --fail-under: pass^2 = {hat2:.3f} is below {hat2 + 0.01:g}"
    assert json.loads(out)["fail_under"][0]["passed"] is False  # stdout stays JSON


def test_a_gate_needing_more_attempts_is_refused_before_running(
    world: tuple[Path, Path, Path],
) -> None:
    code, _, err = _run(world, "--task", "wire", "--attempts", "2", "--fail-under", "pass^3=0.5")
    assert code == 2 and "k = 3 needs at least 3 attempts" in err


def test_report_applies_the_same_gates(world: tuple[Path, Path, Path]) -> None:
    code, out, err = _run(world, "--task", "transfer", "--attempts", "4", "--json")
    assert code == 0, err
    batch_id, rate = json.loads(out)["batch_id"], _odd_seeds("transfer", 4) / 4
    store = str(world[2])
    for threshold, expected in ((rate, 0), (rate + 0.01, 4)):
        args = ["report", batch_id, "--fail-under", f"success_rate={threshold}", "--json"]
        result = CliRunner().invoke(main, [*args, "--store", store])
        assert result.exit_code == expected
        assert json.loads(result.stdout)["fail_under"][0]["passed"] is (expected == 0)
    result = CliRunner().invoke(main, ["report", batch_id, "--json", "--store", store])
    assert result.exit_code == 0 and "fail_under" not in json.loads(result.stdout)


def test_too_many_invalid_tries_exit_3_before_any_gate(
    world: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """Invalid tries over max_invalid_rate make the numbers no verdict: exit 3, not 4."""
    (tmp_path / "agent.py").write_text(
        "async def agent(session):\n"
        "    if session.seed % 2:\n"
        "        await session.call('explode', {})\n"  # a broken tool: an invalid try
        "    return 'nothing done'\n"
    )
    system = yaml.safe_load(world[1].read_text())
    system["invalid_run_policy"] = {"max_retries": 0, "max_invalid_rate": 0.1}
    (tmp_path / "system.yaml").write_text(yaml.safe_dump(system))
    suite, store = world[0], world[2]
    args = [
        "run",
        str(suite),
        "--system",
        str(tmp_path / "system.yaml"),
        "--task",
        "transfer",
        "--attempts",
        "4",
        "--fail-under",
        "success_rate=0.9",
        "--json",
        "--store",
        str(store),
    ]
    result = CliRunner().invoke(main, args)  # fmt: skip
    assert _odd_seeds("transfer", 4) > 0  # some tries are invalid
    assert result.exit_code == 3
    data = json.loads(result.stdout)
    assert data["invalid_rate_flagged"] is True and data["fail_under"][0]["passed"] is False
    assert "max_invalid_rate" in result.stderr and "--fail-under" not in result.stderr
