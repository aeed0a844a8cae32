"""Twenty-seventh round, imports: every planned attempt counted, none doubled.

- A Harbor job's folder holding more trials than the job's ``n_total_trials`` (its tasks times
  ``n_attempts``, fixed when it starts; a retry replaces its trial's folder) was imported with
  a warning: each extra trial an attempt the job never ran, in its task's denominator. Refused,
  naming the trials of another job (``config.job_id``) or else those that started last.
- A Terminal-Bench run's ``run_metadata.json`` (``task_ids``, ``n_attempts``, ``run_id``) was
  not read: a task planned and never run (no trial at all) left the denominator unseen.
- ``groundstate export --format inspect`` listed in ``eval.dataset.sample_ids`` only the tasks
  with a stored attempt, and the import skipped its epoch check for our own logs: an export of
  a batch stopped early imported as a complete plan, and an epoch added past
  ``eval.config.epochs`` was an attempt too many.
- A Harbor job's trial files were parsed twice (once for the job, once for the rows).
"""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path
from typing import Any

import pytest

from groundstate.exports import _write_inspect
from groundstate.importers import import_file
from groundstate.importers.harbor import HarborSource
from groundstate.store import RunStore
from tests.test_imports_formats import Store, cli, write_json
from tests.test_imports_harbor import MIXED, job, trial
from tests.test_imports_round14 import tb_run, tb_trial

HERE = Path(__file__).parent
BANK, BANK_SYSTEM = HERE / "suites" / "bank", HERE / "suites" / "bank_system.yaml"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _imported(path: Path, tmp_path: Path) -> tuple[int, list[str]]:
    """The attempts *path* imports as, and its warnings."""
    with RunStore(tmp_path / f"{path.name}.db") as runs:
        report = import_file(path, "x", runs)
        return report.attempts, report.warnings


# --- Harbor: a job holds at most the trials it planned --------------------------------------


def test_a_harbor_job_with_more_trials_than_planned_is_refused(
    store: Store, tmp_path: Path
) -> None:
    folder = job(tmp_path / "job", MIXED[:4], n_total_trials=3)
    err = store.refused(folder)
    assert "n_total_trials: 3, but the job's folder holds 4 trials" in err
    assert "started last" in err and "fix-git__ddddddd" in err  # minute 3: the last


def test_a_harbor_trial_of_another_job_is_named(store: Store, tmp_path: Path) -> None:
    own = {"task": {"path": "tasks/t"}, "job_id": "9b1c1f4e-0000-4000-8000-000000000001"}
    trials = [
        trial("a", name, {"reward": 1.0}, minute=minute,
              config={**own, "trial_name": name, **extra})
        for name, minute, extra in (("a__1", 0, {}), ("a__2", 5, {}),
                                    ("a__x", 1, {"job_id": "other-job"}))
    ]  # fmt: skip
    err = store.refused(job(tmp_path / "job", trials, n_total_trials=2))
    assert "of another job" in err and "a__x" in err and "a__2" not in err


def test_a_harbor_job_holding_its_plan_or_less_imports(tmp_path: Path) -> None:
    """Control: fewer trials than planned is a warning (pending, running or lost)."""
    attempts, warnings = _imported(job(tmp_path / "job", MIXED[:2], n_total_trials=2), tmp_path)
    assert (attempts, warnings) == (2, [])
    attempts, warnings = _imported(job(tmp_path / "j2", MIXED[:2], n_total_trials=3), tmp_path)
    assert any("n_total_trials is 3, but 2 trials have" in w for w in warnings)


@pytest.mark.parametrize("total", [-1, "3", 2.5, True])
def test_an_odd_n_total_trials_is_refused(store: Store, tmp_path: Path, total: Any) -> None:
    err = store.refused(job(tmp_path / "job", MIXED[:2], n_total_trials=total))
    assert "n_total_trials" in err


def test_a_harbor_job_reads_each_trial_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from groundstate.importers import harbor

    folder = job(tmp_path / "job", MIXED)
    read: list[Path] = []
    real = harbor.read_result

    def counting(path: Path) -> dict[str, Any]:
        read.append(path)
        return real(path)

    monkeypatch.setattr(harbor, "read_result", counting)
    source = HarborSource(folder)
    rows = list(source.rows())
    source.warnings()
    trial_files = [p for p in read if p.parent != folder]
    assert len(rows) == len(MIXED) and len(trial_files) == len(set(trial_files)) == len(MIXED)


def test_a_harbor_fault_is_still_named_in_the_trials_order(store: Store, tmp_path: Path) -> None:
    """Each trial's row is made when it is read; a fault is raised in its turn, so the first
    trial (by start) at fault is the one named, not the first file read."""
    trials = [
        trial("b", "b__1", {"reward": "1"}, minute=0),  # started first, its folder sorts last
        trial("a", "a__1", {"reward": {"x": 1}}, minute=1),
    ]
    err = store.refused(job(tmp_path / "job", trials))
    assert "b__1" in err and "verifier_result.rewards.reward" in err


@pytest.mark.parametrize("reward", [math.nan, math.inf, -math.inf, "1", "1.0", None, [1]])
def test_a_harbor_reward_that_is_no_number_is_refused(
    store: Store, tmp_path: Path, reward: Any
) -> None:
    rewards = {"reward": reward}
    folder = tmp_path / "job"
    job(folder, [trial("a", "a__1", {"reward": 1.0}), trial("a", "a__2", {"reward": 0.0})])
    data = trial("a", "a__2", minute=1)  # written by hand: NaN and Infinity as Python writes
    data["verifier_result"] = {"rewards": rewards}
    (folder / "a__2" / "result.json").write_text(json.dumps(data))
    err = store.refused(folder)
    assert "a__2" in err and "verifier_result.rewards.reward" in err


def test_a_harbor_trial_id_in_two_spellings_is_one_trial(store: Store, tmp_path: Path) -> None:
    """A folder copied under another name with its trial's id upper-cased: Harbor writes a
    UUID, whose spellings name one trial."""
    first = trial("a", "a__1", {"reward": 1.0})
    folder = job(tmp_path / "job", [first], n_total_trials=2)
    for spelling in (first["id"].upper(), " " + first["id"].replace("-", "") + " "):
        copy = {**first, "trial_name": "a__copy", "id": spelling, "started_at": "2026-08-02",
                "config": {**first["config"], "trial_name": "a__copy"}}  # fmt: skip
        (folder / "a__copy").mkdir(exist_ok=True)
        write_json(folder / "a__copy" / "result.json", copy)
        err = store.refused(folder)
        assert "a__copy" in err and "is also at" in err and "a__1" in err


def test_a_terminal_bench_trial_id_in_two_spellings_is_one_trial(
    store: Store, tmp_path: Path
) -> None:
    """The same trial pasted in again with its attempt number edited, its id upper-cased."""
    given = "6f1e4a57-0c55-4b7e-9a3b-0d1e2f3a4b5c"
    trials = [{**_tb("a", "1-of-2"), "id": given}, {**_tb("a", "2-of-2"), "id": given.upper()}]
    err = store.refused(_tb_run(tmp_path / "r", trials))
    assert "results[1]" in err and "is also at" in err


def test_short_ids_of_other_case_are_other_records(tmp_path: Path) -> None:
    """Control: an id that is no UUID (an Inspect short UUID is case-sensitive) is kept as
    given."""
    trials = [{**_tb("a", "1-of-2"), "id": "abcDEF"}, {**_tb("a", "2-of-2"), "id": "ABCdef"}]
    assert _imported(_tb_run(tmp_path / "r", trials), tmp_path) == (2, [])


# --- Terminal-Bench: the run's run_metadata.json ----------------------------------------------


def _tb(task: str, name: str) -> dict[str, Any]:
    return tb_trial(task, 1, True, trial_name=f"{task}.{name}.run-1", id=f"{task}-{name}")


def _tb_run(folder: Path, trials: list[dict[str, Any]], **metadata: Any) -> Path:
    """A run folder: ``results.json`` and, when *metadata* is given, ``run_metadata.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    if metadata:
        write_json(folder / "run_metadata.json", {
            "run_id": "run-1", "uuid": "u", "dataset_path": None, "output_path": "runs",
            "agent_name": "oracle", "no_rebuild": False, "cleanup": False, "log_level": 20,
            "n_concurrent_trials": 4, **metadata,
        })  # fmt: skip
    return write_json(folder / "results.json", {**tb_run(trials), "accuracy": 1.0})


def test_a_planned_task_without_any_trial_is_named(tmp_path: Path) -> None:
    trials = [_tb(t, f"{n}-of-2") for t in ("a", "b") for n in (1, 2)]
    path = _tb_run(tmp_path / "r", trials, task_ids=["a", "b", "c"], n_attempts=2)
    attempts, warnings = _imported(path, tmp_path)
    [said] = warnings
    assert attempts == 4
    assert "2 of the 6 trials" in said and "'c' attempt 1" in said and "'c' attempt 2" in said
    assert "run_metadata.json" in said


def test_without_run_metadata_a_task_without_trials_is_unseen(tmp_path: Path) -> None:
    """Control: the results file alone cannot name a task it holds no trial of."""
    trials = [_tb(t, f"{n}-of-2") for t in ("a", "b") for n in (1, 2)]
    assert _imported(_tb_run(tmp_path / "r", trials), tmp_path) == (4, [])


def test_run_metadata_holding_the_trials_gives_no_warning(tmp_path: Path) -> None:
    trials = [_tb(t, f"{n}-of-2") for t in ("a", "b") for n in (1, 2)]
    path = _tb_run(tmp_path / "r", trials, task_ids=["b", "a"], n_attempts=2)
    assert _imported(path, tmp_path) == (4, [])


def test_trials_of_another_n_attempts_than_the_metadata_are_refused(
    store: Store, tmp_path: Path
) -> None:
    trials = [_tb("a", "1-of-2"), _tb("a", "2-of-2")]
    err = store.refused(_tb_run(tmp_path / "r", trials, task_ids=["a"], n_attempts=3))
    assert "results[0]" in err and "n_attempts 3" in err and "run_metadata.json" in err


def test_a_trial_of_another_run_than_the_metadata_is_refused(store: Store, tmp_path: Path) -> None:
    trials = [_tb("a", "1-of-1"), {**_tb("b", "1-of-1"), "trial_name": "b.1-of-1.run-2"}]
    err = store.refused(_tb_run(tmp_path / "r", trials, task_ids=["a", "b"], n_attempts=1))
    assert "results[1]" in err and "'run-2'" in err and "run_id" in err


def test_a_task_the_metadata_does_not_list_is_named(tmp_path: Path) -> None:
    trials = [_tb("a", "1-of-1"), _tb("z", "1-of-1")]
    attempts, warnings = _imported(_tb_run(tmp_path / "r", trials, task_ids=["a"]), tmp_path)
    assert attempts == 2 and any("not among" in w and "'z'" in w for w in warnings)


@pytest.mark.parametrize(
    ("field", "value"),
    [("n_attempts", 0), ("n_attempts", "2"), ("n_attempts", True), ("task_ids", "a"),
     ("task_ids", ["a", "a"]), ("task_ids", ["a", None])],
)  # fmt: skip
def test_odd_run_metadata_is_refused_naming_it(
    store: Store, tmp_path: Path, field: str, value: Any
) -> None:
    trials = [_tb("a", "1-of-1")]
    err = _refused_by_metadata(store, _tb_run(tmp_path / "r", trials, **{field: value}))
    assert f"run_metadata.json: {field}" in err


def test_run_metadata_that_is_no_object_is_refused(store: Store, tmp_path: Path) -> None:
    path = _tb_run(tmp_path / "r", [_tb("a", "1-of-1")])
    (tmp_path / "r" / "run_metadata.json").write_text("[1]")
    assert "is a JSON object, not a list" in _refused_by_metadata(store, path)


def _refused_by_metadata(store: Store, path: Path) -> str:
    """The one-line refusal of *path*, which names its run_metadata.json, storing nothing."""
    before = store.batches()
    code, out, err = cli("import-results", str(path), "--name", "x", "--store", str(store.path))
    assert code == 2 and err.startswith("error: ") and len(err.splitlines()) == 1, (out, err)
    assert str(path.parent / "run_metadata.json") in err and store.batches() == before
    return err


# --- Our Inspect export: the batch's plan, and the epoch check on import -----------------------


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("bank") / "runs.db"
    code, _, err = cli("run", str(BANK), "--system", str(BANK_SYSTEM), "--attempts", "2",
                       "--json", "--store", str(store))  # fmt: skip
    assert code == 0, err
    return store


def _export(store: Path, out: Path, *, unrun: str | None = None) -> Path:
    """The bank batch as an Inspect log; *unrun*: a task its plan holds and no run of (a
    batch stopped before it)."""
    with RunStore(store) as runs:
        batch = runs.batch(None)
        kept = runs.runs(batch.batch_id)
    if unrun is not None:
        plan = {**batch.task_revisions, unrun: 1}
        batch = batch.model_copy(update={"task_revisions": plan})
    _write_inspect(batch, kept, out, status="cancelled" if unrun else "success")
    return out


def test_an_export_lists_a_planned_task_it_holds_no_attempt_of(bank: Path, tmp_path: Path) -> None:
    out = _export(bank, tmp_path / "out.eval", unrun="never-run")
    with zipfile.ZipFile(out) as archive:
        header = json.loads(archive.read("header.json"))
    assert header["eval"]["dataset"]["sample_ids"] == ["never-run", "transfer"]
    attempts, warnings = _imported(out, tmp_path)
    assert attempts == 2
    assert any("'never-run' epoch 1" in w and "'never-run' epoch 2" in w for w in warnings)


def test_an_exported_log_with_an_epoch_past_its_plan_is_refused(
    bank: Path, store: Store, tmp_path: Path
) -> None:
    out = _export(bank, tmp_path / "out.eval")
    edited = tmp_path / "edited.eval"
    with zipfile.ZipFile(out) as source, zipfile.ZipFile(edited, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename.startswith("samples/") and item.filename.endswith("_epoch_2.json"):
                sample = json.loads(data)
                sample["epoch"], sample["uuid"] = 3, sample["uuid"] + "x"
                target.writestr(item.filename.replace("_epoch_2", "_epoch_3"), json.dumps(sample))
            target.writestr(item, data)
    err = store.refused(edited)
    assert "epoch" in err and "eval.config.epochs" in err


def test_an_export_round_trip_keeps_the_plan(bank: Path, tmp_path: Path) -> None:
    """Control: the whole batch exported imports with no word of a missing attempt."""
    out = _export(bank, tmp_path / "out.eval")
    with RunStore(bank) as runs:
        planned = 2 * len(runs.batch(None).task_revisions)
    attempts, warnings = _imported(out, tmp_path)
    assert attempts == planned and not any("not in the log" in w for w in warnings)
