"""Harbor and AppWorld results: each mapping, and the files these harnesses really write.

The fixtures follow the writers: Harbor's ``TrialResult`` / ``JobResult``
(``harbor/models/trial/result.py``, ``harbor/models/job/result.py``; a job directory holds
``result.json`` written without its trials and ``<trial_name>/result.json`` per trial) and
AppWorld's ``evaluate_dataset`` (``{aggregate, individual: {task_id: TestTracker.to_dict()}}``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.test_imports_formats import Store, cli, write_json


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


# --- Harbor --------------------------------------------------------------------------------


def trial(
    task: str,
    name: str,
    rewards: dict[str, Any] | None = None,
    exception: str | None = None,
    *,
    minute: int = 0,
    agent: str = "terminus-2",
    model: str = "claude-sonnet-4",
    **fields: Any,
) -> dict[str, Any]:
    """A ``TrialResult`` as Harbor writes it (``model_dump_json``)."""
    at = f"2026-08-01T10:{minute:02d}:00+00:00"
    out: dict[str, Any] = {
        "id": f"00000000-0000-4000-8000-{name.encode().hex()[-12:]:0>12}",
        "task_name": task,
        "trial_name": name,
        "trial_uri": f"file:///jobs/j/{name}",
        "task_id": {"path": f"tasks/{task}"},
        "source": "terminal-bench",
        "task_checksum": f"sha-{task}",
        "config": {"task": {"path": f"tasks/{task}"}, "trial_name": name},
        "agent_info": {
            "name": agent,
            "version": "1.0",
            "model_info": {"name": model, "provider": "anthropic"},
        },
        "agent_result": {
            "n_input_tokens": 1200,
            "n_cache_tokens": 100,
            "n_output_tokens": 300,
            "cost_usd": 0.25,
            "rollout_details": None,
            "metadata": {"n_episodes": 3},
        },
        "verifier_result": None if rewards is None else {"rewards": rewards},
        "exception_info": None
        if exception is None
        else {
            "exception_type": exception,
            "exception_message": f"{exception} happened",
            "exception_traceback": "Traceback ...",
            "occurred_at": at,
        },
        "started_at": at,
        "finished_at": f"2026-08-01T10:{minute:02d}:50+00:00",
        "environment_setup": {"started_at": at, "finished_at": at},
        "agent_setup": None,
        "agent_execution": {
            "started_at": f"2026-08-01T10:{minute:02d}:05+00:00",
            "finished_at": f"2026-08-01T10:{minute:02d}:35+00:00",
        },
        "verifier": None,
        "step_results": None,
    }
    out.update(fields)
    return out


def job(folder: Path, trials: list[dict[str, Any]], **fields: Any) -> Path:
    """A job directory: ``result.json`` (no trial_results, as Harbor writes it when the job
    ends) and each trial's folder with its config.json and result.json."""
    folder.mkdir(parents=True, exist_ok=True)
    result = {
        "id": "9b1c1f4e-0000-4000-8000-000000000001",
        "started_at": "2026-08-01T10:00:00",
        "updated_at": "2026-08-01T11:00:00",
        "finished_at": "2026-08-01T11:00:00",
        "n_total_trials": len(trials),
        "stats": {
            "n_completed_trials": len(trials),
            "n_errored_trials": 0,
            "n_retries": 0,
            "evals": {},
        },
        **fields,
    }
    write_json(folder / "result.json", result)
    for t in trials:
        inside = folder / t["config"]["trial_name"]  # the folder Harbor made for the trial
        inside.mkdir()
        write_json(inside / "config.json", t["config"])
        (inside / "result.json").write_text(json.dumps(t, indent=4))
    return folder


MIXED = [
    trial("hello-world", "hello-world__aaaaaaa", {"reward": 1.0}, minute=0),
    trial("hello-world", "hello-world__bbbbbbb", {"reward": 0.0}, minute=1),
    trial("fix-git", "fix-git__ccccccc", {"reward": 0.5}, minute=2),
    trial("fix-git", "fix-git__ddddddd", {"reward": 1}, "AgentTimeoutError", minute=3),
    trial("build-tcc", "build-tcc__eeeeeee", None, "EnvironmentStartTimeoutError", minute=4),
    trial("build-tcc", "build-tcc__fffffff", None, None, minute=5),
    trial("sqlite", "sqlite__ggggggg", None, "VerifierTimeoutError", minute=6),
    trial("sqlite", "sqlite__hhhhhhh", {"reward": 0}, "NonZeroAgentExitCodeError", minute=7),
    trial("cancel", "cancel__iiiiiii", None, "CancelledError", minute=8),
    trial("cancel", "cancel__jjjjjjj", {"reward": 1.0}, "ContextLengthExceededError", minute=9),
]


def test_a_job_directory_maps_every_end(store: Store, tmp_path: Path) -> None:
    folder = job(tmp_path / "job", MIXED)
    runs = store.runs(store.imported(folder))
    assert runs == {
        ("hello-world", 1, 0): ("success", 1.0),
        ("hello-world", 2, 0): ("agent_failure/incorrect", 0.0),
        ("fix-git", 1, 0): ("agent_failure/incorrect", 0.5),
        # the agent's timeout decides, whatever the verifier gave after it: no credit (round
        # 45: pinned 1.0 before, a failure counted whole in the mean reward; Inspect's limited
        # sample and τ²'s max_steps end earn 0)
        ("fix-git", 2, 0): ("agent_failure/time_limit", 0.0),
        ("build-tcc", 1, 0): ("environment_failure/setup_timeout", None),
        ("build-tcc", 2, 0): ("grader_failure", None),  # no reward: not graded, not 0
        ("sqlite", 1, 0): ("agent_failure/ungraded", 0.0),
        ("sqlite", 2, 0): ("agent_failure/crashed", 0.0),
        ("cancel", 1, 0): ("environment_failure/cancelled", None),
        ("cancel", 2, 0): ("harness_compatibility_failure/context_window", 0.0),  # likewise
    }


def test_the_import_report_counts_each_mapping(store: Store, tmp_path: Path) -> None:
    folder = job(tmp_path / "job", MIXED)
    code, out, err = cli("import-results", str(folder), "--name", "h", "--json",
                         "--store", str(store.path))  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["format"] == "harbor" and report["tasks"] == 5 and report["attempts"] == 10
    assert report["mapped"]["reward 1 -> success"] == 1
    assert report["mapped"]["AgentTimeoutError (reward 1) -> agent_failure/time_limit"] == 1
    assert report["mapped"]["no verifier reward -> grader_failure"] == 1
    assert report["attempt_labels"].startswith("text labels")
    (warning,) = report["warnings"]  # the two stops with a reward, named with their trials
    assert "2 attempts that a limit or an error ended carry a non-zero reward" in warning
    assert "trial fix-git__ddddddd (AgentTimeoutError, reward 1.0)" in warning
    assert "trial cancel__jjjjjjj (ContextLengthExceededError, reward 1.0)" in warning
    batch = store.report(report["batch_id"])
    assert json.dumps(batch)  # the report runs on it


def test_errors_environment_makes_unattributed_and_ungraded_ends_invalid(
    store: Store, tmp_path: Path
) -> None:
    folder = job(tmp_path / "job", MIXED)
    runs = store.runs(store.imported(folder, "--errors", "environment"))
    assert runs["sqlite", 1, 0] == ("grader_failure", None)
    assert runs["sqlite", 2, 0] == ("environment_failure/harness_error", None)
    assert runs["fix-git", 2, 0] == ("agent_failure/time_limit", 0.0)  # not the policy's


def test_a_trial_result_alone_and_a_job_result_with_its_trials(
    store: Store, tmp_path: Path
) -> None:
    folder = job(tmp_path / "job", MIXED[:2])
    one = store.runs(store.imported(folder / "hello-world__bbbbbbb" / "result.json"))
    assert one == {("hello-world", 1, 0): ("agent_failure/incorrect", None)}
    both = store.runs(store.imported(folder / "result.json"))
    assert set(both) == {("hello-world", 1, 0), ("hello-world", 2, 0)}


def test_attempts_are_numbered_in_the_order_trials_started(store: Store, tmp_path: Path) -> None:
    late = trial("t", "t__aaaaaaa", {"reward": 0.0}, minute=9)  # first by name, last started
    early = trial("t", "t__zzzzzzz", {"reward": 1.0}, minute=1)
    runs = store.runs(store.imported(job(tmp_path / "job", [late, early])))
    assert runs == {("t", 1, 0): ("success", None), ("t", 2, 0): ("agent_failure/incorrect", None)}


def test_a_job_result_without_trials_is_refused_naming_what_is_needed(
    store: Store, tmp_path: Path
) -> None:
    folder = job(tmp_path / "job", [])
    data = json.loads((folder / "result.json").read_text())
    write_json(folder / "result.json", {**data, "n_total_trials": 4})
    err = store.refused(folder / "result.json")
    assert "trial_results" in err and "<trial>/result.json" in err


def test_a_job_result_with_its_trials_inline_is_read(store: Store, tmp_path: Path) -> None:
    path = write_json(
        tmp_path / "result.json",
        {
            "id": "j",
            "started_at": "2026-08-01T10:00:00",
            "n_total_trials": 1,
            "stats": {},
            "trial_results": [trial("t", "t__a", {"reward": 1.0})],
        },
    )
    assert store.runs(store.imported(path)) == {("t", 1, 0): ("success", None)}


def test_a_trial_copied_into_another_folder_is_refused(store: Store, tmp_path: Path) -> None:
    folder = job(tmp_path / "job", MIXED[:2])
    shutil.copytree(folder / "hello-world__aaaaaaa", folder / "hello-world__aaaaaaa copy")
    err = store.refused(folder)
    assert "id: trial 00000000-" in err and "is also at" in err and "copy" in err


def test_one_trial_name_twice_is_refused(store: Store, tmp_path: Path) -> None:
    first = trial("t", "t__same", {"reward": 1.0})
    second = trial("t", "t__same", {"reward": 0.0}, id="another-id")
    folder = job(tmp_path / "job", [first])
    (folder / "elsewhere").mkdir()
    write_json(folder / "elsewhere" / "result.json", second)
    assert "appears twice" in store.refused(folder)


def test_a_truncated_trial_file_is_refused_naming_it(store: Store, tmp_path: Path) -> None:
    folder = job(tmp_path / "job", MIXED[:2])
    member = folder / "hello-world__bbbbbbb" / "result.json"
    member.write_text(member.read_text()[:200])
    err = store.refused(folder)
    assert f"{member}:" in err and "not valid JSON" in err


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"verifier_result": {"rewards": {"reward": 5}}}, "verifier_result.rewards.reward"),
        ({"verifier_result": {"rewards": {"reward": "high"}}}, "verifier_result.rewards.reward"),
        ({"verifier_result": {"rewards": {"a": 1, "b": 0}}}, "verifier_result.rewards"),
        ({"task_name": None}, "task_name"),
        ({"trial_name": ""}, "trial_name"),
        ({"exception_info": {"exception_message": "x"}}, "exception_info.exception_type"),
        ({"agent_result": {"cost_usd": -1}}, "agent_result.cost_usd"),
        ({"agent_execution": {"started_at": "then", "finished_at": "now"}}, "agent_execution"),
    ],
)
def test_a_malformed_trial_is_refused_naming_the_field(
    store: Store, tmp_path: Path, change: dict[str, Any], field: str
) -> None:
    bad = trial("t", "t__b", {"reward": 1.0}, minute=1, **change)
    folder = job(tmp_path / "job", [trial("t", "t__a", {"reward": 1.0}), bad])
    err = store.refused(folder)
    assert f"t__b/result.json: {field}:" in err


def test_several_rewards_need_a_scorer(store: Store, tmp_path: Path) -> None:
    trials = [trial("t", "t__a", {"accuracy": 1.0, "style": 0.2})]
    folder = job(tmp_path / "job", trials)
    assert "--scorer KEY" in store.refused(folder)
    assert store.runs(store.imported(folder, "--scorer", "accuracy")) == {
        ("t", 1, 0): ("success", None)
    }
    assert "no reward 'speed'" in store.refused(folder, "--scorer", "speed")


def test_two_agents_in_one_job_are_refused(store: Store, tmp_path: Path) -> None:
    trials = [trial("t", "t__a", {"reward": 1.0}), trial("t", "t__b", {"reward": 1.0},
                                                            minute=1, model="gpt-5")]  # fmt: skip
    err = store.refused(job(tmp_path / "job", trials))
    assert "a batch is one system" in err and "gpt-5" in err


def test_what_the_job_lacks_is_said(store: Store, tmp_path: Path) -> None:
    folder = job(tmp_path / "job", MIXED[:2], n_total_trials=4)
    stats = {"n_completed_trials": 2, "n_retries": 1}
    data = json.loads((folder / "result.json").read_text())
    write_json(folder / "result.json", {**data, "stats": stats})
    (folder / "t__running").mkdir()
    write_json(folder / "t__running" / "config.json", {})
    changed = trial("hello-world", "hello-world__ccccccc", {"reward": 1.0}, minute=3,
                    task_checksum="sha-other")  # fmt: skip
    (folder / changed["trial_name"]).mkdir()
    write_json(folder / changed["trial_name"] / "result.json", changed)
    code, out, err = cli("import-results", str(folder), "--name", "h", "--json",
                         "--store", str(store.path))  # fmt: skip
    assert code == 0, err
    warnings = json.loads(out)["warnings"]
    assert any("n_total_trials is 4, but 3 trials have" in w for w in warnings)
    assert any("without result.json (t__running)" in w for w in warnings)
    assert any("retried 1 trial and" in w for w in warnings)
    assert any("more than one version" in w and "'hello-world'" in w for w in warnings)


def test_the_same_job_again_stores_nothing_and_a_changed_trial_does(
    store: Store, tmp_path: Path
) -> None:
    folder = job(tmp_path / "job", MIXED[:2])
    first = store.imported(folder)
    code, out, _ = cli("import-results", str(folder), "--name", "x", "--store", str(store.path))
    assert code == 0 and "already imported" in out and out.strip().endswith(first)
    member = folder / "hello-world__bbbbbbb" / "result.json"
    write_json(
        member, {**json.loads(member.read_text()), "verifier_result": {"rewards": {"reward": 1}}}
    )
    assert store.imported(folder) != first


def test_harbor_files_are_told_apart_by_content(tmp_path: Path) -> None:
    from groundstate.importers import detect_format

    folder = job(tmp_path / "job", MIXED[:1])
    one_line = write_json(tmp_path / "trial.jsonl", MIXED[0])  # a suffix does not decide JSON
    assert detect_format(folder) == "harbor"
    assert detect_format(folder / "result.json") == "harbor"
    assert detect_format(folder / "hello-world__aaaaaaa") == "harbor"
    assert detect_format(folder / "hello-world__aaaaaaa" / "result.json") == "harbor"
    assert detect_format(one_line) == "jsonl"  # named so; --format harbor reads it
    compact = write_json(tmp_path / "trial.json", MIXED[0])
    assert detect_format(compact) == "harbor"


# --- AppWorld ------------------------------------------------------------------------------


def tracker(success: bool, passes: int, fails: int, difficulty: int = 1, **labels: int) -> dict:
    """``TestTracker.to_dict()``: the first *labels['no_op_pass']* passes are no-op passes."""
    no_op = labels.get("no_op_pass", 0)
    return {
        "success": success,
        "difficulty": difficulty,
        "num_tests": passes + fails,
        "passes": [
            {"requirement": f"p{i}", "label": "no_op_pass" if i < no_op else "no_op_fail"}
            for i in range(passes)
        ],
        "failures": [
            {"requirement": f"f{i}", "trace": "```python\n...\n```", "label": "no_op_fail"}
            for i in range(fails)
        ],
    }


def evaluation(individual: dict[str, Any], **aggregate: float) -> dict[str, Any]:
    return {"aggregate": aggregate, "individual": individual}


APPWORLD = {
    "82e2fac_1": tracker(True, 4, 0, 1),
    "82e2fac_2": tracker(False, 3, 1, 1, no_op_pass=1),  # 2 of the 3 needed tests passed
    "82e2fac_3": tracker(True, 5, 0, 2),
    "29caf6f_1": tracker(True, 2, 0, 3),
    "29caf6f_2": tracker(False, 0, 3, 3),
}


def test_an_appworld_evaluation(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "experiments/outputs/react_gpt4o/evaluations/test_normal.json"
    path.parent.mkdir(parents=True)
    write_json(path, evaluation(APPWORLD, task_goal_completion=60.0, scenario_goal_completion=0.0))
    code, out, err = cli("import-results", str(path), "--name", "a", "--json",
                         "--store", str(store.path))  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["format"] == "appworld" and report["warnings"] == []
    assert report["mapped"] == {
        "success false -> agent_failure/incorrect_state": 2,
        "success true -> success": 3,
    }
    runs = store.runs(report["batch_id"])
    assert runs["82e2fac_2", 1, 0] == ("agent_failure/incorrect_state", pytest.approx(2 / 3))
    assert runs["29caf6f_2", 1, 0] == ("agent_failure/incorrect_state", 0.0)
    assert runs["82e2fac_1", 1, 0] == ("success", 1.0)
    summary = store.report(report["batch_id"])
    assert "difficulty_3" in json.dumps(summary)


def test_appworld_figures_that_disagree_with_its_tasks_are_said(
    store: Store, tmp_path: Path
) -> None:
    path = write_json(tmp_path / "dev.json", evaluation(APPWORLD, task_goal_completion=80.0,
                                                        scenario_goal_completion=50.0))  # fmt: skip
    code, out, err = cli("import-results", str(path), "--name", "a", "--json",
                         "--store", str(store.path))  # fmt: skip
    assert code == 0, err
    warnings = json.loads(out)["warnings"]
    assert any("aggregate.task_goal_completion is 80.0, but its tasks give 60.0" in w
               for w in warnings)  # fmt: skip
    assert any("scenario_goal_completion is 50.0, but its tasks give 0.0" in w for w in warnings)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"aggregate": {"task_goal_completion": 50.0}}, "individual: an aggregate only"),
        (evaluation({"a_1": {**tracker(True, 1, 1)}}), "success: True, but 1 of 2 tests failed"),
        (evaluation({"a_1": {**tracker(True, 2, 0), "num_tests": 3}}), "num_tests: 3, but"),
        (evaluation({"a_1": {"difficulty": 1}}), "success: required"),
        (evaluation({"a_1": {**tracker(False, 0, 1), "failures": "x"}}), "failures: must be"),
        (evaluation([]), "individual: must be an object"),
    ],
)
def test_a_malformed_appworld_file_is_refused(
    store: Store, tmp_path: Path, data: Any, expected: str
) -> None:
    path = write_json(tmp_path / "test_normal.json", data)
    assert expected in store.refused(path, "--format", "appworld")
    if isinstance(data, dict) and "task_goal_completion" in data.get("aggregate", {}):
        assert expected in store.refused(path)  # detected, so its reader names what lacks


def test_a_truncated_or_doubled_appworld_file_is_refused(store: Store, tmp_path: Path) -> None:
    text = json.dumps(evaluation(APPWORLD), indent=2)
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) // 2])
    assert "not valid JSON" in store.refused(path, "--format", "appworld")
    doubled = tmp_path / "twice.json"
    doubled.write_text('{"aggregate": {}, "individual": {"a_1": {"success": true}, '
                       '"a_1": {"success": false}}}')  # fmt: skip
    assert "individual.a_1: the key appears twice" in store.refused(doubled)


EXCEPTIONS = {  # type: (reward, --errors agent, --errors environment)
    "CancelledError": (None, "environment_failure/cancelled", "environment_failure/cancelled"),
    "AgentTimeoutError": (1.0, "agent_failure/time_limit", "agent_failure/time_limit"),
    "EnvironmentStartTimeoutError": (
        None,
        "environment_failure/setup_timeout",
        "environment_failure/setup_timeout",
    ),
    # the system's own install script, which sees the task's container: it could stall
    "AgentSetupTimeoutError": (None, "agent_failure/crashed", "environment_failure/harness_error"),
    "NonZeroAgentExitCodeError": (
        0.0,
        "agent_failure/crashed",
        "environment_failure/harness_error",
    ),
    "ApiRateLimitError": (0.0, "agent_failure/crashed", "environment_failure/harness_error"),
    "RewardFileNotFoundError": (None, "agent_failure/ungraded", "grader_failure"),
    "DownloadVerifierDirError": (None, "agent_failure/ungraded", "grader_failure"),
    "SandboxBuildFailedError": (None, "environment_failure/setup", "environment_failure/setup"),
    # a multi-step task runs it again after the agent's earlier steps: not attributed
    "HealthcheckError": (None, "agent_failure/crashed", "environment_failure/harness_error"),
    "VerifierOutputParseError": (None, "agent_failure/ungraded", "grader_failure"),
    "ContextWindowExceededError": (
        None,
        "harness_compatibility_failure/context_window",
        "harness_compatibility_failure/context_window",
    ),
}


@pytest.mark.parametrize("kind", sorted(EXCEPTIONS))
def test_each_exception_type_maps_under_either_policy(tmp_path: Path, kind: str) -> None:
    from groundstate.importers import ImportOptions, read_rows

    reward, agent, environment = EXCEPTIONS[kind]
    rewards = None if reward is None else {"reward": reward}
    path = write_json(tmp_path / "result.json", trial("t", "t__a", rewards, kind))
    for errors, reason in (("agent", agent), ("environment", environment)):
        (row,) = read_rows(path, ImportOptions(format="harbor", errors=errors))  # type: ignore[arg-type]
        assert (row.success, row.terminal_reason) == (False, reason)
        invalid = reason.split("/")[0] in ("environment_failure", "grader_failure")
        # an invalid try earns no credit, nor does a stop (its reward counted as 0)
        assert row.reward == (None if invalid else reward and 0.0)


def test_a_step_that_raised_decides_a_multi_step_trial(store: Store, tmp_path: Path) -> None:
    """Harbor keeps a step's exception on the step and still averages the steps' rewards into
    the trial's: the timed-out step was decided by that reward (a success)."""
    steps = [
        {"step_name": "one", "verifier_result": {"rewards": {"reward": 1.0}},
         "agent_result": {"n_input_tokens": 10, "n_output_tokens": 2, "cost_usd": 0.5},
         "exception_info": None},
        {"step_name": "two", "verifier_result": {"rewards": {"reward": 1.0}},
         "agent_result": {"n_input_tokens": 5, "n_output_tokens": 1, "cost_usd": 0.25},
         "exception_info": {"exception_type": "AgentTimeoutError", "exception_message": "",
                            "exception_traceback": "", "occurred_at": "2026-08-01T10:00:00"}},
    ]  # fmt: skip
    multi = trial("t", "t__a", {"reward": 1.0}, agent_result=None, step_results=steps)
    path = write_json(tmp_path / "result.json", multi)
    from groundstate.importers import read_rows

    (row,) = read_rows(path)
    assert (row.terminal_reason, row.cost, row.tokens) == (
        "agent_failure/time_limit",
        0.75,
        (15, 3),
    )
    assert row.origin is not None and row.origin["exception_at"] == "step_results[1].exception_info"


def test_a_folder_of_jobs_names_one_to_give(store: Store, tmp_path: Path) -> None:
    job(tmp_path / "jobs" / "2026-08-01__10-00-00", MIXED[:1])
    err = store.refused(tmp_path / "jobs")
    assert "a folder of Harbor jobs: give one job's folder" in err


def test_the_wrong_reader_says_what_the_file_is(store: Store, tmp_path: Path) -> None:
    folder = job(tmp_path / "job", MIXED[:1])
    trial_file = folder / "hello-world__aaaaaaa" / "result.json"
    err = store.refused(trial_file, "--format", "appworld")
    assert "individual: required" in err and "looks like a Harbor result" in err
    evaluation_file = write_json(tmp_path / "dev.json", evaluation(APPWORLD))
    err = store.refused(evaluation_file, "--format", "harbor")
    assert "looks like an AppWorld evaluation: give --format appworld" in err


def test_more_trials_than_the_job_counts_are_refused(store: Store, tmp_path: Path) -> None:
    """A warning until the twenty-seventh round (tests/test_imports_round27.py)."""
    folder = job(tmp_path / "job", MIXED[:2], n_total_trials=1)
    err = store.refused(folder)
    assert "n_total_trials" in err and "hello-world__bbbbbbb" in err
