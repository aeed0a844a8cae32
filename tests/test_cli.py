"""The command line: JSON shapes, clear errors, and a batch killed mid-way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.store import RunStore

from .conftest import BANK, BANK_SYSTEM

SYSTEM = BANK_SYSTEM


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_run_json_has_the_documented_shape(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    code, out, _ = _invoke(
        "run",
        str(BANK),
        "--system",
        str(SYSTEM),
        "--attempts",
        "4",
        "--json",
        "--store",
        str(store),
    )
    assert code == 0
    data = json.loads(out)
    assert set(data) == {
        "batch_id",
        "system_spec_hash",
        "suite",
        "decision",
        "population",
        "tasks",
        "attempts",
        "runs",
        "terminal_reasons",
        "valid_attempts",
        "invalid_attempts",
        "k_limits",
        "missing_attempts",
        "models_served",
        "no_estimate",
        "invalid_tasks_run",
        "invalid_tasks_results",
        "success_rate",
        "pass_at_k",
        "pass_hat_k",
        "partial_score",
        "invalid_as_failure",
        "invalid_rate_flagged",
        "max_invalid_rate",
        "judge_errors",
        "tries",
        "provenance",
        "fail_under",
    }
    assert (data["suite"], data["tasks"], data["attempts"]) == ("bank", 1, 4)
    assert (data["decision"], data["population"]) == (None, None)  # the bank declares neither
    assert [r["attempt"] for r in data["runs"]] == [1, 2, 3, 4]
    assert sum(data["terminal_reasons"].values()) == 4
    reasons = {r["terminal_reason"] for r in data["runs"]}
    assert reasons <= {"success", "agent_failure/constraint_violation"}
    assert all(r["success"] == (r["terminal_reason"] == "success") for r in data["runs"])
    with RunStore(store) as runs:
        assert len(runs.runs(data["batch_id"])) == 4


def test_same_seed_gives_the_same_attempts(tmp_path: Path) -> None:
    outcomes = []
    for name in ("a", "b"):
        _, out, _ = _invoke(
            "run",
            str(BANK),
            "--system",
            str(SYSTEM),
            "--attempts",
            "6",
            "--seed",
            "7",
            "--json",
            "--store",
            str(tmp_path / f"{name}.db"),
        )
        outcomes.append([r["terminal_reason"] for r in json.loads(out)["runs"]])
    assert outcomes[0] == outcomes[1]
    assert len(set(outcomes[0])) == 2  # fault_rate 0.5 over six seeded attempts varies


def test_run_table_and_show(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    code, out, _ = _invoke(
        "run", str(BANK), "--system", str(SYSTEM), "--attempts", "2", "--store", store
    )
    assert code == 0
    assert "transfer" in out and "pass^1 = " in out
    with RunStore(Path(store)) as runs:
        record = runs.runs(runs.batch().batch_id)[0]
    code, out, _ = _invoke("report", "--store", store)
    assert code == 0
    for part in ("slices (valid attempts)", "payments", "terminal reasons", "pass^1 = "):
        assert part in out
    code, out, _ = _invoke("show", record.run_id[:10], "--store", store)
    assert code == 0
    assert record.terminal_reason in out and "trace" in out and "transfer(" in out
    assert 'wrote accounts "A": balance 100 → 70' in out  # the call's row-level writes
    assert "final" in out
    code, out, _ = _invoke("show", record.run_id, "--json", "--store", store)
    assert json.loads(out)["run_id"] == record.run_id
    assert json.loads(out)["artifact_locations"]["trace.jsonl"].startswith("sha256:")


def test_system_hash_prints_a_sha256() -> None:
    code, out, _ = _invoke("system", "hash", str(SYSTEM))
    assert code == 0 and len(out.strip()) == 64


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["system", "hash", "missing.yaml"], "missing.yaml: file not found"),
        (["run", "nowhere", "--system", str(SYSTEM)], "nowhere: not a suite folder"),
        (["show", "ffff", "--store", "{store}"], "no run store at"),
    ],
)
def test_user_errors_are_one_line_with_exit_code_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    args = [a.replace("{store}", str(tmp_path / "runs.db")) for a in args]
    code, out, err = _invoke(*args)
    assert code == 2
    assert err.strip() == f"error: {message}" or message in err
    assert "Traceback" not in err + out


def test_malformed_task_file_from_the_command_line(tmp_path: Path) -> None:
    suite = tmp_path / "bank"
    import shutil

    shutil.copytree(BANK, suite)
    (suite / "tasks" / "transfer.yaml").write_text("task_id: transfer\nstep_limit: many\n")
    proc = subprocess.run(
        [sys.executable, "-m", "groundstate.cli", "run", str(suite), "--system", str(SYSTEM)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: {suite / 'tasks' / 'transfer.yaml'}: ")
    assert "Traceback" not in proc.stderr


def test_run_refuses_invalid_tasks_unless_allowed(tmp_path: Path) -> None:
    import shutil

    suite = tmp_path / "bank"
    shutil.copytree(BANK, suite)
    bad = suite / "solutions" / "transfer" / "bad_no_pin.yaml"
    bad.write_text(bad.read_text().replace("constraint:pin-first", "outcome"))
    store = str(tmp_path / "runs.db")
    args = ["run", str(suite), "--system", str(SYSTEM), "--store", store]
    code, out, err = _invoke(*args)
    assert code == 2
    assert "1 task of suite 'bank' is not valid" in err
    assert "transfer: discriminating: " in err and "bad_no_pin" in err
    with RunStore(Path(store)) as runs:
        assert runs.batches() == []
    code, out, err = _invoke(*args, "--allow-invalid")
    # the suite's one task failed validation: no figure counts it, its results are apart
    assert code == 3 and "pass^1: no task to count" in out  # no estimate (0 until round 29)
    assert "warning: running invalid tasks: transfer" in err
    assert "RAN INVALID TASKS (--allow-invalid): transfer; left out of every figure" in out
    report = json.loads(_invoke("report", "--json", "--store", store)[1])
    assert report["invalid_tasks_run"] == ["transfer"]
    # run --json counts as report --json does: the invalid task's attempts are apart
    code, out, err = _invoke(*args, "--allow-invalid", "--resume", report["batch_id"], "--json")
    data = json.loads(out)
    assert data["terminal_reasons"] == report["terminal_reasons"] == {}
    assert data["invalid_tasks_results"] == report["invalid_tasks_results"] != []
    # and it gives what else the report says of the figures' trust (twelfth round)
    assert data["invalid_as_failure"] == report["invalid_as_failure"]
    assert data["judge_errors"] == report["judge_errors"]


def test_locked_run_refuses_a_changed_suite(tmp_path: Path) -> None:
    import shutil

    suite = tmp_path / "bank"
    shutil.copytree(BANK, suite)
    assert _invoke("lock", str(suite))[0] == 0
    store = str(tmp_path / "runs.db")
    args = ["run", str(suite), "--system", str(SYSTEM), "--store", store, "--locked"]
    assert _invoke(*args)[0] == 0
    (suite / "policy.md").write_text("A looser policy.\n")
    code, _, err = _invoke(*args)
    assert code == 2 and "policy.md" in err


def test_an_agent_that_cannot_be_built_stores_no_batch(tmp_path: Path) -> None:
    system = tmp_path / "system.yaml"
    system.write_text(SYSTEM.read_text().replace("{fault_rate: 0.5}", "{colour: red}"))
    (tmp_path / "bank_agent.py").write_text((BANK.parent / "bank_agent.py").read_text())
    store = tmp_path / "runs.db"
    code, _, err = _invoke("run", str(BANK), "--system", str(system), "--store", str(store))
    assert code == 2
    assert "harness.orchestration_loop.params" in err and "colour" in err
    with RunStore(store) as runs:
        assert runs.batches() == []
