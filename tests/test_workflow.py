"""Finding one's way around a store: batches, runs, not-found messages, empty batches."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.store import RunStore

from .conftest import BANK, BANK_SYSTEM


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store holding one complete bank batch of two attempts."""
    store = tmp_path_factory.mktemp("store") / "runs.db"
    code, out, err = _invoke(
        "run", str(BANK), "--system", str(BANK_SYSTEM), "--attempts", "2", "--json",
        "--store", str(store),
    )  # fmt: skip
    assert code == 0, err
    return store, json.loads(out)["batch_id"]


def _copy_batch(store: Path, batch_id: str, new_id: str, runs: int) -> None:
    """Store a copy of *batch_id* under *new_id* holding only its first *runs* runs."""
    with RunStore(store) as run_store:
        batch = run_store.batch(batch_id)
        run_store.add_batch(batch.model_copy(update={"batch_id": new_id}))
        for n, run in enumerate(run_store.runs(batch_id)[:runs]):
            copy = run.model_copy(update={"batch_id": new_id, "run_id": f"{new_id}{n:020d}"})
            run_store.add_run(copy, {})


@pytest.mark.parametrize(
    "command",
    [
        ["report"],
        ["report", "abc"],
        ["show", "abc"],
        ["batches"],
        ["batches", "--json"],
        ["runs", "abc"],
        ["compare", "a", "b"],
        ["verify"],
        ["regress", "abc", "--into", "x"],
    ],
)
def test_reading_commands_never_create_a_store(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = _invoke(*command)
    assert code == 2
    assert err.strip() == (
        "error: no run store at .groundstate/runs.db: nothing has been run here yet "
        "(`groundstate run` makes it), or give the store with --store"
    )
    assert list(tmp_path.iterdir()) == []  # no .groundstate/, no database, no x/


def test_a_named_store_that_is_missing_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "elsewhere" / "runs.db"
    code, _, err = _invoke("batches", "--store", str(missing))
    assert code == 2 and f"no run store at {missing}" in err
    assert not missing.parent.exists()


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["runs", "nope"], "no batch nope in the run store {store}"),
        (["report", "nope"], "no batch nope in the run store {store}"),
        (["show", "nope"], "no run nope in the run store {store}"),
        (["verify", "nope"], "no batch nope in the run store {store}"),
        (["compare", "nope", "nope"], "no batch nope in the run store {store}"),
    ],
)
def test_not_found_messages_name_the_store(
    stored: tuple[Path, str], command: list[str], message: str
) -> None:
    store, _ = stored
    code, out, err = _invoke(*command, "--store", str(store))
    assert code == 2
    assert err.strip() == "error: " + message.format(store=store)
    assert "Traceback" not in out + err


def test_batches_lists_each_batch_with_its_progress(stored: tuple[Path, str]) -> None:
    store, batch_id = stored
    _copy_batch(store, batch_id, "half00000001", runs=1)
    _copy_batch(store, batch_id, "empty0000001", runs=0)
    code, out, _ = _invoke("batches", "--json", "--store", str(store))
    assert code == 0
    found = {b["batch_id"]: b for b in json.loads(out)}
    assert {k: (v["attempts_stored"], v["attempts_expected"], v["status"]) for k, v in
            found.items()} == {
        batch_id: (2, 2, "complete"),
        "half00000001": (1, 2, "incomplete"),
        "empty0000001": (0, 2, "empty"),
    }  # fmt: skip
    assert found[batch_id]["suite"] == "bank"
    assert len(found[batch_id]["system_spec_hash"]) == 64
    code, out, _ = _invoke("batches", "--store", str(store))
    assert code == 0
    assert batch_id in out and "2/2" in out and "incomplete" in out and "empty" in out


def test_a_batch_a_live_process_holds_is_running(stored: tuple[Path, str]) -> None:
    store, batch_id = stored
    _copy_batch(store, batch_id, "leased000001", runs=1)
    with RunStore(store) as run_store:
        run_store.acquire_lease("leased000001")
    try:
        _, out, _ = _invoke("batches", "--json", "--store", str(store))
        status = {b["batch_id"]: b["status"] for b in json.loads(out)}
        assert status["leased000001"] == "running"
        assert status[batch_id] == "complete"
    finally:
        with RunStore(store) as run_store:
            run_store.release_lease("leased000001")


def test_runs_lists_ids_that_show_accepts(stored: tuple[Path, str]) -> None:
    store, batch_id = stored
    code, out, _ = _invoke("runs", batch_id[:6], "--json", "--store", str(store))
    assert code == 0
    data = json.loads(out)
    assert data["batch_id"] == batch_id
    assert [(r["task_id"], r["attempt"], r["counted"]) for r in data["runs"]] == [
        ("transfer", 1, True),
        ("transfer", 2, True),
    ]
    for row in data["runs"]:
        assert row["success"] == (row["terminal_reason"] == "success")
        code, shown, _ = _invoke("show", row["run_id"], "--json", "--store", str(store))
        assert code == 0 and json.loads(shown)["terminal_reason"] == row["terminal_reason"]
    code, text, _ = _invoke("runs", batch_id, "--store", str(store))
    assert data["runs"][0]["run_id"][:8] in text


@pytest.mark.parametrize(
    ("options", "count"),
    [
        (["--task", "transfer"], 2),
        (["--task", "trans*"], 2),
        (["--task", "trans"], 0),  # a near miss: --task is an id or a wildcard, not a substring
        (["--task", "TRANSFER"], 0),
        (["--reason", "agent_failure"], 2),  # the class matches its sub-reasons
        (["--reason", "agent_failure/constraint_violation"], 2),
        (["--reason", "success"], 0),
        (["--task", "transfer", "--reason", "success"], 0),
    ],
)
def test_runs_filters(stored: tuple[Path, str], options: list[str], count: int) -> None:
    store, batch_id = stored
    code, out, _ = _invoke("runs", batch_id, *options, "--json", "--store", str(store))
    assert code == 0
    assert len(json.loads(out)["runs"]) == count


@pytest.mark.parametrize("reason", ["agent", "agent_failures", "sucess/x"])
def test_runs_refuses_a_reason_that_is_no_class(stored: tuple[Path, str], reason: str) -> None:
    """A prefix or misspelling is no class: it used to match nothing, exit 0, "no run"."""
    store, batch_id = stored
    code, out, err = _invoke("runs", batch_id, "--reason", reason, "--json", "--store", str(store))
    assert (code, out) == (2, "")
    assert f"'{reason}' is not a terminal reason" in err


def test_an_empty_batch_reports_how_to_resume_it(stored: tuple[Path, str]) -> None:
    """What Ctrl-C before the first stored attempt leaves: a clear message, no traceback."""
    store, batch_id = stored
    _copy_batch(store, batch_id, "ctrlc0000001", runs=0)
    resume = f"--resume ctrlc0000001 --store {store}"
    for command in (["report", "ctrlc0000001"], ["compare", batch_id, "ctrlc0000001"]):
        code, out, err = _invoke(*command, "--store", str(store))
        assert code == 2
        assert "batch ctrlc0000001 has no stored runs" in err and resume in err
        assert "Traceback" not in out + err
    code, out, _ = _invoke("runs", "ctrlc0000001", "--store", str(store))
    assert code == 0 and "has no stored runs" in out and resume in out


def test_lock_check_json(tmp_path: Path) -> None:
    suite = tmp_path / "bank"
    shutil.copytree(BANK, suite)
    code, out, _ = _invoke("lock", str(suite), "--json")
    assert code == 0
    assert json.loads(out) == {"suite": "bank", "lock": str(suite / "suite.lock"), "tasks": 1}
    code, out, _ = _invoke("lock", str(suite), "--check", "--json")
    assert (code, json.loads(out)) == (0, {"suite": "bank", "matches": True, "differences": []})
    policy = suite / "policy.md"
    policy.write_text(policy.read_text() + "\nOne more rule.\n")
    code, out, _ = _invoke("lock", str(suite), "--check", "--json")
    data = json.loads(out)
    assert code == 1 and data["matches"] is False
    assert len(data["differences"]) == 1 and "policy.md" in data["differences"][0]


def test_regress_json(stored: tuple[Path, str], tmp_path: Path) -> None:
    store, batch_id = stored
    with RunStore(store) as run_store:
        failed = next(r for r in run_store.runs(batch_id) if not r.success)
    into = tmp_path / "regressions"
    code, out, err = _invoke(
        "regress", failed.run_id, "--into", str(into), "--json", "--store", str(store)
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["run_id"] == failed.run_id
    assert data["task_id"] == f"transfer-regress-{failed.run_id[:8]}"
    assert Path(data["task_file"]) == into / "tasks" / f"{data['task_id']}.yaml"
    assert Path(data["task_file"]).is_file()


def test_import_results_json(tmp_path: Path) -> None:
    rows = tmp_path / "results.csv"
    rows.write_text("task_id,attempt,success\na,1,1\na,2,0\nb,1,1\nb,2,1\n")
    store = tmp_path / "runs.db"
    code, out, err = _invoke("import-results", str(rows), "--name", "other", "--json",
                             "--store", str(store))  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert (data["name"], data["runs"], data["tasks"]) == ("other", 4, 2)
    code, out, _ = _invoke("batches", "--json", "--store", str(store))
    (listed,) = json.loads(out)
    assert (listed["status"], listed["source"], listed["attempts_stored"]) == (
        "imported",
        "imported",
        4,
    )
    code, out, _ = _invoke("runs", data["batch_id"], "--json", "--store", str(store))
    assert [r["success"] for r in json.loads(out)["runs"]] == [True, False, True, True]
