"""Thirty-eighth round, imports: a Harbor job's ``lock.json``.

Harbor writes ``<job>/lock.json`` (a ``JobLock``, ``harbor/models/job/lock.py``) before any
trial runs: ``harbor: {version, git_commit_hash}`` and ``trials``, one ``TrialLock`` per trial
the job planned (``n_total_trials`` of them), each with ``task: {name, digest, ...}``. It was
not read: for a registry dataset (tasks not listed in ``config.json``) which planned trials
had no result was "cannot be told here"; a trial of a task the job never planned, or more
trials of a task than it planned (another job's, or copied in) was imported into the
denominator when no ``config.json`` gave ``n_attempts``; and the harness version and each
task's locked content were lost.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groundstate.errors import SpecError
from groundstate.importers.harbor import HarborSource
from tests.test_imports_formats import Store, cli, write_json
from tests.test_imports_harbor import trial
from tests.test_imports_round29 import _harbor, _trials


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _digest(task: str) -> str:
    return "sha256:" + (task.encode().hex() * 64)[:64]


def _locked(task: str) -> dict[str, Any]:
    """One ``TrialLock`` as ``model_dump_json`` writes it (the fields this reader needs and
    their neighbours)."""
    return {
        "schema_version": 2,
        "task": {"name": task, "version": None, "type": "local", "digest": _digest(task),
                 "source": None, "path": f"tasks/{task}", "git_url": None,
                 "git_commit_id": None},
        "install_only": False,
        "timeout_multiplier": 1.0,
        "agent": {"name": "terminus-2", "model_name": "anthropic/claude-sonnet-4",
                  "kwargs": {}, "env": {}},
        "skills": [],
        "environment": {"type": "docker", "force_build": False, "delete": True},
        "verifier": {"override_timeout_sec": None, "disable": False, "environment_mode": None},
        "source_trial": None,
    }  # fmt: skip


def _lock(folder: Path, plan: dict[str, int], **fields: Any) -> Path:
    lock = {
        "schema_version": 3,
        "created_at": "2026-08-01T09:59:00Z",
        "harbor": {"version": "0.22.0", "git_commit_hash": "ab" * 20, "is_editable": False},
        "n_concurrent_trials": 4,
        "retry": {"max_retries": 0, "include_exceptions": None, "exclude_exceptions": None},
        "trials": [_locked(task) for task, n in plan.items() for _ in range(n)],
        **fields,
    }
    write_json(folder / "lock.json", lock)
    return folder


def _job(tmp_path: Path, held: dict[str, int], locked: dict[str, int], **fields: Any) -> Path:
    """A job of a registry dataset (no ``config.json``: its tasks are the registry's) holding
    trials *held*, its lock planning *locked*."""
    total = sum(locked.values())
    folder = _harbor(tmp_path / "job", _trials(held), None, n_total_trials=total, **fields)
    return _lock(folder, locked)


def _warnings(folder: Path, tmp_path: Path) -> list[str]:
    code, out, err = cli("import-results", str(folder), "--name", "x", "--json",
                         "--store", str(tmp_path / "w.db"))  # fmt: skip
    assert code == 0, err
    return list(json.loads(out)["warnings"])


def test_planned_trials_without_a_result_are_named_by_the_lock(
    store: Store, tmp_path: Path
) -> None:
    folder = _job(tmp_path, {"a": 2, "b": 1}, {"a": 2, "b": 2, "c": 2})
    warnings = _warnings(folder, tmp_path)
    named = [w for w in warnings if "lock.json" in w]
    assert len(named) == 1, warnings
    assert "locked 6 trials; 3 trials of 2 tasks have no result" in named[0]
    assert "'b' 1 of 2" in named[0] and "'c' 0 of 2" in named[0]
    assert not any("cannot be told here" in w for w in warnings)


def test_a_lock_whose_plan_is_met_adds_no_warning(tmp_path: Path) -> None:
    folder = _job(tmp_path, {"a": 2, "b": 2}, {"a": 2, "b": 2})
    assert not any("lock.json" in w for w in _warnings(folder, tmp_path))


def test_a_trial_of_a_task_the_lock_does_not_plan_is_refused(store: Store, tmp_path: Path) -> None:
    folder = _job(tmp_path, {"a": 2, "z": 1}, {"a": 2, "b": 2})
    err = store.refused(folder)
    assert "lock.json: trials: plans no trial of task 'z'" in err and "z__0" in err


def test_more_trials_of_a_task_than_the_lock_plans_are_refused(
    store: Store, tmp_path: Path
) -> None:
    """Within ``n_total_trials`` (4), and with no ``config.json`` to give ``n_attempts``."""
    folder = _job(tmp_path, {"a": 2, "b": 2}, {"a": 1, "b": 3})
    err = store.refused(folder)
    assert "lock.json: trials: plans 1 trial of task 'a', but the job's folder holds more" in err
    assert "a__1" in err


def test_a_lock_of_another_job_is_refused(store: Store, tmp_path: Path) -> None:
    folder = _job(tmp_path, {"a": 2}, {"a": 2})
    _lock(folder, {"a": 2, "b": 2})  # n_total_trials stays 2
    err = store.refused(folder)
    assert "lock.json: trials: 4 trials, but" in err and "n_total_trials 2" in err


def test_a_package_task_is_matched_by_the_name_harbor_locks_it_under(tmp_path: Path) -> None:
    """A package task's lock name is ``<org>/<name>`` (its ``task_id``), not ``task_name``."""
    folder = tmp_path / "job"
    trials = [
        trial("solve", f"solve__{k}xxxxxx", {"reward": 1.0}, minute=k,
              task_id={"org": "acme", "name": "solve"}, id=f"00000000-0000-4000-8000-{k:012d}")
        for k in range(2)
    ]  # fmt: skip
    _lock(_harbor(folder, trials, None, n_total_trials=3), {"acme/solve": 3})
    warnings = _warnings(folder, tmp_path)
    assert any("'acme/solve' 2 of 3" in w for w in warnings), warnings


def test_the_lock_s_task_digest_and_harbor_version_are_kept(tmp_path: Path) -> None:
    folder = _job(tmp_path, {"a": 1, "b": 1}, {"a": 1, "b": 1})
    source = HarborSource(folder)
    rows = list(source.rows())
    assert [row.origin["task_digest"] for row in rows if row.origin] == [
        _digest("a"),
        _digest("b"),
    ]
    assert source.system()["harbor"] == {"version": "0.22.0", "git_commit_hash": "ab" * 20}
    (folder / "lock.json").unlink()
    plain = HarborSource(folder)
    assert "harbor" not in plain.system()
    assert all("task_digest" not in (row.origin or {}) for row in plain.rows())


def test_a_task_locked_in_two_versions_is_said(tmp_path: Path) -> None:
    folder = _job(tmp_path, {"a": 2}, {"a": 2})
    lock = json.loads((folder / "lock.json").read_text())
    lock["trials"][1]["task"]["digest"] = _digest("other")
    write_json(folder / "lock.json", lock)
    assert any("locked in more than one version" in w and "'a'" in w
               for w in _warnings(folder, tmp_path))  # fmt: skip
    assert all("task_digest" in (row.origin or {}) and row.origin["task_digest"] is None
               for row in HarborSource(folder).rows())  # fmt: skip


@pytest.mark.parametrize(
    ("lock", "field"),
    [
        ([], "a Harbor job lock.json is a JSON object, not a list"),
        ({"trials": {"a": 1}}, "trials: required: a list"),
        ({"trials": ["a"]}, "trials[0]: must be an object"),
        ({"trials": [{"task": "a"}]}, "trials[0].task: must be an object"),
        ({"trials": [{"task": {"digest": _digest("a")}}]}, "trials[0].task.name: required"),
        ({"trials": [{"task": {"name": " "}}]}, "trials[0].task.name: required"),
        ({"trials": [{"task": {"name": "a", "digest": 7}}]}, "trials[0].task.digest: must be"),
        ({"trials": [], "harbor": "0.22"}, "harbor: must be an object"),
    ],
)
def test_a_malformed_lock_is_refused_naming_file_and_field(
    store: Store, tmp_path: Path, lock: Any, field: str
) -> None:
    folder = _job(tmp_path, {"a": 1}, {"a": 1})
    write_json(folder / "lock.json", lock)
    err = store.refused(folder)
    assert f"lock.json: {field}" in err, err


def test_a_truncated_lock_is_refused(store: Store, tmp_path: Path) -> None:
    folder = _job(tmp_path, {"a": 1}, {"a": 1})
    (folder / "lock.json").write_text('{"trials": [{"task": {"name": "a"')
    err = store.refused(folder)
    assert "lock.json" in err


def test_a_single_trial_file_reads_no_lock(tmp_path: Path) -> None:
    """One trial's ``result.json`` given alone is one attempt: the job's lock beside its
    folder is not its plan."""
    folder = _job(tmp_path, {"a": 1}, {"b": 1})
    source = HarborSource(folder / "a__0xxxxxx" / "result.json")
    assert len(list(source.rows())) == 1 and "harbor" not in source.system()


def test_a_lock_that_is_a_folder_is_refused_not_skipped(tmp_path: Path) -> None:
    folder = _job(tmp_path, {"a": 1}, {"a": 1})
    (folder / "lock.json").unlink()
    (folder / "lock.json").mkdir()
    with pytest.raises(SpecError, match=r"lock\.json"):
        list(HarborSource(folder).rows())


# --- τ²-bench: a simulation of a task the file does not list ----------------------------------


def _simulation(task: Any, trial: int, reward: float) -> dict[str, Any]:
    return {
        "id": f"s-{task}-{trial}", "task_id": task, "trial": trial,
        "termination_reason": "agent_stop", "reward_info": {"reward": reward},
        "agent_cost": 0.1, "duration": 3.0, "messages": [], "seed": 1,
        "start_time": "2025-01-01T00:00:00", "end_time": "2025-01-01T00:00:03",
    }  # fmt: skip


def _tau2(path: Path, tasks: list[Any], simulations: list[dict[str, Any]]) -> Path:
    info = {"num_trials": 1, "agent_info": {"llm": "gpt"}, "user_info": {"llm": "gpt"},
            "environment_info": {"domain_name": "airline"}}  # fmt: skip
    return write_json(path, {"timestamp": "2025-01-01", "info": info,
                             "tasks": [{"id": t} for t in tasks],
                             "simulations": simulations})  # fmt: skip


def test_a_simulation_of_a_task_the_file_does_not_list_is_refused(
    store: Store, tmp_path: Path
) -> None:
    """τ² runs only the tasks its ``tasks`` lists: a simulation of another (another run's, or
    copied in) was imported, an attempt in the denominator of a task the run never ran."""
    sims = [_simulation("1", 0, 1.0), _simulation("2", 0, 0.0), _simulation("9", 0, 1.0)]
    path = _tau2(tmp_path / "results.json", ["1", "2"], sims)
    err = store.refused(path)
    assert "results.json:simulations[2]: task_id: '9', a task the file's tasks list" in err


def test_listed_tasks_match_whatever_json_type_the_id_has(tmp_path: Path) -> None:
    """τ² task ids are text; a writer giving ``1`` for ``"1"`` is the same task, and a file
    listing no tasks is not checked."""
    sims = [_simulation(1, 0, 1.0), _simulation("2", 0, 0.0)]
    path = _tau2(tmp_path / "a.json", ["1", 2], sims)
    assert _warnings(path, tmp_path) == []
    path = _tau2(tmp_path / "b.json", [], sims)
    assert _warnings(path, tmp_path) == []


def test_a_lock_of_another_shape_is_not_read_but_said(store: Store, tmp_path: Path) -> None:
    """A ``lock.json`` with no ``trials`` (another Harbor version's shape) blocks no import:
    the trials are read as without a lock, and a warning says the lock was not read."""
    folder = _job(tmp_path, {"a": 1}, {"a": 1})
    write_json(folder / "lock.json", {"harbor": {"version": "0.1"}, "jobs": []})
    source = HarborSource(folder)
    assert len(list(source.rows())) == 1 and "harbor" not in source.system()
    assert any("lock.json: no trials list" in w for w in _warnings(folder, tmp_path))
