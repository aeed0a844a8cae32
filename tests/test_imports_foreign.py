"""Importers for other harnesses' results: τ-bench, τ²-bench and Inspect AI logs, each on
small hand-built files written to the published formats (tests/fixtures/interop)."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.errors import SpecError
from groundstate.importers import ImportOptions, detect_format, import_file
from groundstate.records import AgentRun
from groundstate.store import RunStore

FIXTURES = Path(__file__).parent / "fixtures" / "interop"


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _runs(tmp_path: Path, path: Path, **options: Any) -> dict[tuple[str, int], AgentRun]:
    with RunStore(tmp_path / "r.db") as store:
        report = import_file(path, "other", store, ImportOptions(**options))
        assert store.verify(report.batch.batch_id).ok
        return {(r.task_id, r.attempt): r for r in store.runs(report.batch.batch_id)}


def _eval_log(tmp_path: Path, edit: Any = None) -> Path:
    """The fixture's members zipped into a .eval archive (optionally edited first)."""
    root = tmp_path / "log"
    shutil.copytree(FIXTURES / "inspect_log", root)
    if edit is not None:
        edit(root)
    out = tmp_path / "ctf.eval"
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for member in sorted(root.rglob("*.json")):
            archive.write(member, member.relative_to(root).as_posix())
    return out


def _reasons(runs: dict[tuple[str, int], AgentRun]) -> dict[tuple[str, int], str]:
    return {key: run.terminal_reason for key, run in runs.items()}


# --- τ-bench ---------------------------------------------------------------------------------


def test_tau_bench_verdicts_and_errors(tmp_path: Path) -> None:
    runs = _runs(tmp_path, FIXTURES / "tau_results.json")
    assert _reasons(runs) == {
        ("0", 1): "success",
        ("0", 2): "agent_failure/incorrect_state",  # the final database hash differed
        ("1", 1): "agent_failure/communication",  # a required output was not told
        ("1", 2): "agent_failure/crashed",  # info.error: counted against the system
    }
    assert runs["1", 2].infrastructure_status["origin"]["error"].startswith("openai.RateLimit")
    assert runs["0", 2].infrastructure_status["attempt_label"] == 1


def test_tau_bench_errors_as_invalid(tmp_path: Path) -> None:
    runs = _runs(tmp_path, FIXTURES / "tau_results.json", errors="environment")
    assert runs["1", 2].terminal_reason == "environment_failure/harness_error"
    assert not runs["1", 2].valid


def test_tau_bench_command_line_prints_the_mapping(tmp_path: Path) -> None:
    code, out, err = _invoke(
        "import-results", str(FIXTURES / "tau_results.json"), "--name", "gpt",
        "--store", str(tmp_path / "r.db"),
    )  # fmt: skip
    assert code == 0, err
    assert "(tau-bench," in out and "attempt = label + 1" in out
    assert "info.error -> agent_failure/crashed" in out
    assert "reward 1 -> success" in out


def test_tau_bench_malformed_entries_are_named(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps([{"task_id": 0, "reward": 1.0, "trial": 0, "info": {}}, "oops"]))
    with pytest.raises(SpecError, match=r"results.json:2: result: must be an object"):
        _runs(tmp_path, path)
    path.write_text(json.dumps([{"task_id": 0, "reward": "high", "trial": 0, "info": {}}]))
    with pytest.raises(SpecError, match=r"results.json:1: reward: must be a number"):
        _runs(tmp_path, path)
    path.write_text(json.dumps([{"task_id": 0, "reward": 1.0, "trial": "x", "info": {}}]))
    with pytest.raises(SpecError, match=r"results.json:1: trial: must be an integer"):
        _runs(tmp_path, path)


# --- τ²-bench --------------------------------------------------------------------------------


def test_tau2_termination_reasons_map_onto_the_taxonomy(tmp_path: Path) -> None:
    runs = _runs(tmp_path, FIXTURES / "tau2_results.json")
    assert _reasons(runs) == {
        ("0", 1): "success",
        ("0", 2): "agent_failure/communication",  # DB right, COMMUNICATE 0
        ("1", 1): "agent_failure/step_limit",  # max_steps
        ("1", 2): "environment_failure/user_simulator",  # user_error: invalid
        ("2", 1): "agent_failure/expected_actions",  # reward 0.5 from ACTION
        ("2", 2): "success",  # unknown termination reason: decided by its reward
    }
    assert runs["2", 1].partial_score == 0.5 and not runs["2", 1].success
    assert (runs["0", 1].cost, runs["0", 1].latency) == (0.031, 30.5)
    assert runs["1", 2].infrastructure_status["origin"]["termination_reason"] == "user_error"


def test_tau2_report_counts_user_errors_as_invalid_and_warns_on_unmapped(tmp_path: Path) -> None:
    store = str(tmp_path / "r.db")
    code, out, err = _invoke(
        "import-results", str(FIXTURES / "tau2_results.json"), "--name", "claude", "--json",
        "--store", store,
    )  # fmt: skip
    assert code == 0, err
    assert err.strip().splitlines() == [
        f"warning: {FIXTURES / 'tau2_results.json'}: 1 attempt: τ² termination_reason "
        "'solar_flare' has no mapping; decided by its reward"
    ]
    imported = json.loads(out)
    assert imported["format"] == "tau2-bench" and imported["runs"] == 6
    assert imported["mapped"]["max_steps (reward 0) -> agent_failure/step_limit"] == 1
    code, out, _ = _invoke("report", imported["batch_id"], "--json", "--store", store)
    data = json.loads(out)
    assert (data["valid_attempts"], data["invalid_attempts"]) == (5, 1)
    with RunStore(tmp_path / "r.db") as run_store:
        spec = run_store.batch(imported["batch_id"]).system_spec
    assert spec["agent"]["llm"] == "claude-3-7-sonnet-20250219" and spec["domain"] == "retail"


@pytest.mark.parametrize(
    ("end", "reason"),
    [
        ("timeout", "agent_failure/time_limit"),
        ("too_many_errors", "agent_failure/too_many_errors"),
        ("agent_error", "harness_compatibility_failure/agent_error"),
        ("infrastructure_error", "environment_failure/infrastructure"),
        ("context_window_exceeded", "harness_compatibility_failure/context_window"),
        ("unexpected_error", "environment_failure/unexpected_error"),
    ],
)
def test_tau2_abnormal_ends_decide_before_the_reward(tmp_path: Path, end: str, reason: str) -> None:
    simulation = {"id": "s", "task_id": 5, "trial": 0, "termination_reason": end,
                  "reward_info": {"reward": 1.0}}  # fmt: skip
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"info": {}, "tasks": [], "simulations": [simulation]}))
    (run,) = _runs(tmp_path, path).values()
    assert (run.terminal_reason, run.success) == (reason, False)


def test_tau2_normal_end_without_a_reward_is_a_grader_failure(tmp_path: Path) -> None:
    simulation = {"id": "s", "task_id": "t", "trial": 2, "termination_reason": "user_stop",
                  "reward_info": None}  # fmt: skip
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"info": {}, "tasks": [], "simulations": [simulation]}))
    (run,) = _runs(tmp_path, path).values()
    assert run.terminal_reason == "grader_failure" and not run.valid


def test_tau2_malformed_simulation_is_named(tmp_path: Path) -> None:
    simulation = {"id": "s", "task_id": "t", "trial": 0, "termination_reason": "user_stop",
                  "reward_info": {"reward": None}}  # fmt: skip
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"info": {}, "tasks": [], "simulations": [{}, simulation]}))
    with pytest.raises(SpecError, match=r"simulations\[0\]: termination_reason: required"):
        _runs(tmp_path, path)
    path.write_text(json.dumps({"info": {}, "tasks": [], "simulations": [simulation]}))
    with pytest.raises(SpecError, match=r"simulations\[0\]: reward_info.reward: must be a number"):
        _runs(tmp_path, path)


# --- Inspect AI ------------------------------------------------------------------------------


def test_inspect_eval_scores_limits_and_errors(tmp_path: Path) -> None:
    runs = _runs(tmp_path, _eval_log(tmp_path))
    assert _reasons(runs) == {
        ("1", 1): "success",
        ("1", 2): "agent_failure/incorrect",
        ("two", 1): "agent_failure/step_limit",  # message limit, even though scored C
        ("two", 2): "agent_failure/crashed",  # sample error, default policy
        ("3", 1): "agent_failure/incorrect",
        ("3", 2): "grader_failure",  # no score
    }
    assert runs["3", 1].partial_score == 0.25 and runs["1", 1].latency == 11.0  # working time
    assert runs["two", 2].infrastructure_status["origin"]["error"].startswith("RuntimeError")


def test_inspect_errors_as_invalid_and_system_from_the_header(tmp_path: Path) -> None:
    runs = _runs(tmp_path, _eval_log(tmp_path), errors="environment")
    assert runs["two", 2].terminal_reason == "environment_failure/harness_error"
    with RunStore(tmp_path / "r.db") as store:
        spec = store.batch().system_spec
    assert (spec["model"], spec["task"], spec["harness"]) == (
        "openai/gpt-4o-mini",
        "ctf_lite",
        "inspect_ai",
    )
    assert spec["errors"] == "environment"  # the policy is kept with the batch


def test_inspect_json_log_reads_like_the_archive(tmp_path: Path) -> None:
    root = FIXTURES / "inspect_log"
    log = json.loads((root / "header.json").read_text())
    log["samples"] = [json.loads(p.read_text()) for p in sorted((root / "samples").glob("*.json"))]
    path = tmp_path / "ctf.json"
    path.write_text(json.dumps(log))
    assert detect_format(path) == "inspect"
    from_json = _reasons(_runs(tmp_path, path))
    assert from_json == _reasons(_runs(tmp_path, _eval_log(tmp_path)))


def _second_scorer(root: Path) -> None:
    member = root / "samples" / "1_epoch_1.json"
    sample = json.loads(member.read_text())
    sample["scores"]["judge"] = {"value": "I"}
    member.write_text(json.dumps(sample))


def test_inspect_several_scorers_need_a_choice(tmp_path: Path) -> None:
    log = _eval_log(tmp_path, _second_scorer)
    with pytest.raises(
        SpecError, match=r"1_epoch_1.json: scores: several scorers \(judge, match\)"
    ):
        _runs(tmp_path, log)
    assert _runs(tmp_path, log, scorer="match")["1", 1].terminal_reason == "success"
    judged = _runs(tmp_path, log, scorer="judge")
    assert judged["1", 1].terminal_reason == "agent_failure/incorrect"
    assert judged["1", 2].terminal_reason == "grader_failure"  # no "judge" score here


def test_inspect_score_that_is_not_a_verdict_is_refused(tmp_path: Path) -> None:
    def dict_value(root: Path) -> None:
        member = root / "samples" / "3_epoch_1.json"
        sample = json.loads(member.read_text())
        sample["scores"]["match"]["value"] = {"accuracy": 1, "f1": 0.5}
        member.write_text(json.dumps(sample))

    code, _, err = _invoke(
        "import-results", str(_eval_log(tmp_path, dict_value)), "--name", "x",
        "--store", str(tmp_path / "r.db"),
    )  # fmt: skip
    assert code == 2
    assert (
        "ctf.eval!samples/3_epoch_1.json: scores.match.value: a value per key (accuracy, f1): "
        "choose one with --scorer match.KEY" in err
    )
    # the other samples' values are scalars ("C"), which have no f1: refused since the
    # twenty-first round (their "C" decided them as if it were their f1)
    with pytest.raises(SpecError, match=r"scores\.match\.value: 'C', one value, not a value per"):
        _runs(tmp_path, tmp_path / "ctf.eval", scorer="match.f1")


def test_inspect_score_outside_zero_one_is_refused(tmp_path: Path) -> None:
    def out_of_range(root: Path) -> None:
        member = root / "samples" / "3_epoch_1.json"
        sample = json.loads(member.read_text())
        sample["scores"]["match"]["value"] = 7
        member.write_text(json.dumps(sample))

    with pytest.raises(SpecError, match=r"scores.match.value: 7 is not a verdict .* --scorer"):
        _runs(tmp_path, _eval_log(tmp_path, out_of_range))


def test_not_an_inspect_archive(tmp_path: Path) -> None:
    path = tmp_path / "broken.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(SpecError, match="not an Inspect log"):
        _runs(tmp_path, path)


# --- detection -------------------------------------------------------------------------------


def test_formats_are_detected_from_content(tmp_path: Path) -> None:
    assert detect_format(FIXTURES / "tau_results.json") == "tau-bench"
    assert detect_format(FIXTURES / "tau2_results.json") == "tau2-bench"
    assert detect_format(_eval_log(tmp_path)) == "inspect"
    rows = tmp_path / "rows.json"
    rows.write_text('{"task_id": "t", "attempt": 0, "success": true}\n')
    assert detect_format(rows) == "jsonl"
    other = tmp_path / "other.json"
    other.write_text('{\n  "results": []\n}\n')
    with pytest.raises(SpecError, match="cannot tell its format: give --format"):
        detect_format(other)


def test_format_flag_overrides_detection(tmp_path: Path) -> None:
    code, _, err = _invoke(
        "import-results", str(FIXTURES / "tau_results.json"), "--name", "x", "--format",
        "tau2-bench", "--store", str(tmp_path / "r.db"),
    )  # fmt: skip
    assert code == 2 and "a τ²-bench results file is a JSON object, not a list" in err
    assert "looks like τ-bench results (a JSON list): give --format tau-bench" in err


def test_every_mapping_is_documented() -> None:
    from groundstate.importers.inspect_log import LIMITS
    from groundstate.importers.tau import TAU2_ENDS

    doc = (Path(__file__).parent.parent / "docs" / "interop.md").read_text()
    for end, reason in TAU2_ENDS.items():
        assert f"`{end}`" in doc and (reason is None or f"`{reason}`" in doc), end
    for limit, reason in LIMITS.items():
        assert f"`{limit}`" in doc and f"`{reason}`" in doc, limit


def test_inspect_mapping_counts_are_printed(tmp_path: Path) -> None:
    code, out, err = _invoke(
        "import-results", str(_eval_log(tmp_path)), "--name", "x", "--store", str(tmp_path / "r.db")
    )
    # round 45: the sample a message limit stopped was scored C, which Inspect counts: named
    assert code == 0 and "two_epoch_1.json (limit message, score 'C')" in err
    # round 49: the sample with no score, left out of the valid rates, is named too
    assert len(err.splitlines()) == 3 and "1 sample ended without an error or a limit" in err
    # round 50: the fixture's accuracy (0.25) is none its samples give (1: C, I; 3: 0.25; two:
    # C, each sample's epochs by their mean): named, the samples read
    assert "give match accuracy 0.25, but the 3 samples held score 0.583333" in err
    lines = {line.split(maxsplit=1)[1]: int(line.split()[0]) for line in out.splitlines()[2:-1]}
    assert lines == {
        "error -> agent_failure/crashed": 1,
        "limit message -> agent_failure/step_limit": 1,
        "no score -> grader_failure": 1,
        "score C -> success": 1,
        "score I -> agent_failure/incorrect": 1,
        "score partial -> agent_failure/incorrect": 1,
    }
