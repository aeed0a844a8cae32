"""Other harnesses' result files and malformed input, thirteenth round.

Each case read a file otherwise than its harness wrote or meant it; the fixtures follow the
writers (Harbor's ``TrialResult``/``JobResult`` and multi-step trials, AppWorld's
``evaluate_dataset``, Inspect's ``EvalSample``).
"""

from __future__ import annotations

import json
import struct
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

from groundstate.importers import ImportOptions, detect_format, read_rows

if sys.version_info >= (3, 14):
    from compression import zstd as zstd_codec
else:
    from backports import zstd as zstd_codec
from tests.test_imports_formats import EVAL, PLAN, Store, log, sample, write_json
from tests.test_imports_harbor import job, trial


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def step(name: str, reward: float, start: int, end: int, **fields: Any) -> dict[str, Any]:
    """A multi-step trial's ``StepResult``: its agent phase from second *start* to *end*."""
    return {
        "step_name": name,
        "agent_result": {"n_input_tokens": 10, "n_output_tokens": 2, "cost_usd": 0.5},
        "verifier_result": {"rewards": {"reward": reward}},
        "exception_info": None,
        "agent_execution": {
            "started_at": f"2026-08-01T10:00:{start:02d}+00:00",
            "finished_at": f"2026-08-01T10:00:{end:02d}+00:00",
        },
        **fields,
    }


# --- Harbor --------------------------------------------------------------------------------


def test_harbor_trials_graded_by_different_reward_keys_need_a_scorer(
    store: Store, tmp_path: Path
) -> None:
    """Each trial's only key decided it: ``{reward: 1}`` and ``{accuracy: 1}`` were two
    successes, where Harbor's mean counts the key a trial lacks as 0 (0.5 for each key)."""
    trials = [
        trial("t", "t__a", {"reward": 1.0}),
        trial("u", "u__a", {"accuracy": 1.0}, minute=1),
    ]
    err = store.refused(job(tmp_path / "job", trials))
    assert "u__a/result.json: verifier_result.rewards: reward 'accuracy'" in err
    assert "t__a/result.json gives 'reward'" in err and "--scorer KEY" in err


def test_a_multi_step_trials_latency_is_its_steps_agent_time(tmp_path: Path) -> None:
    """Harbor times a multi-step trial's agent phase on each step and none on the trial: the
    latency was "not known"."""
    steps = [step("one", 1.0, 5, 15), step("two", 1.0, 20, 25)]
    multi = trial("t", "t__a", {"reward": 1.0}, agent_result=None, agent_execution=None,
                  step_results=steps)  # fmt: skip
    (row,) = read_rows(write_json(tmp_path / "result.json", multi))
    assert (row.latency, row.cost, row.tokens) == (15.0, 1.0, (20, 4))


@pytest.mark.parametrize(
    ("steps", "field"),
    [
        ({"one": {}}, "step_results"),
        (["one"], "step_results[0]"),
        ([{"step_name": "one", "agent_result": "lots"}], "step_results[0].agent_result"),
    ],
)
def test_malformed_step_results_are_refused(
    store: Store, tmp_path: Path, steps: Any, field: str
) -> None:
    """Skipped, a step's exception (a timeout) was lost and the trial passed on its reward."""
    bad = trial("t", "t__a", {"reward": 1.0}, agent_result=None, step_results=steps)
    assert f"t__a/result.json: {field}: must be" in store.refused(job(tmp_path / "job", [bad]))


def test_times_with_and_without_a_zone_are_named_as_such(store: Store, tmp_path: Path) -> None:
    timing = {"started_at": "2026-08-01T10:00:05", "finished_at": "2026-08-01T10:00:35Z"}
    bad = trial("t", "t__a", {"reward": 1.0}, agent_execution=timing)
    err = store.refused(job(tmp_path / "job", [bad]))
    assert "agent_execution: times must be ISO 8601, both with or both without a time zone" in err


# --- AppWorld ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "figures",
    [
        {"task_goal_completion": 40.0, "scenario_goal_completion": 20.0},
        {"strict": 40.0, "grouped_strict": 20.0},
    ],
)
def test_an_appworld_aggregate_only_file_is_recognised(
    store: Store, tmp_path: Path, figures: dict[str, float]
) -> None:
    """``evaluate_dataset(aggregate_only=True)`` writes ``evaluation_dict["aggregate"]``: the
    figures at the top, not under ``aggregate``. It was "cannot tell its format"."""
    path = write_json(tmp_path / "test_normal.json", figures)
    assert detect_format(path) == "appworld"
    assert "individual: an aggregate only" in store.refused(path)


# --- Inspect -------------------------------------------------------------------------------


def test_inspect_samples_scored_by_different_scorers_need_a_scorer(
    store: Store, tmp_path: Path
) -> None:
    """Each sample's only scorer decided it, whichever it was: no one scorer's figure."""
    samples = [sample(1, 1, {"match": {"value": "C"}}), sample(2, 1, {"includes": {"value": "I"}})]
    path = write_json(tmp_path / "log.json", log(samples))
    assert "scores: samples are scored by different scorers (includes, match)" in store.refused(
        path
    )
    rows = read_rows(path, ImportOptions(scorer="match"))
    assert [r.terminal_reason for r in rows] == ["success", "grader_failure"]
    assert json.loads(json.dumps(rows[1].origin))["score"] == {"match": None}


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("AgentSafetyRefusalError", "agent_failure/refused"),
        ("OutputTokenExceededError", "harness_compatibility_failure/output_limit"),
        ("OutputLengthExceededError", "harness_compatibility_failure/output_limit"),
    ],
)
def test_harbor_errors_it_attributes_do_not_follow_errors(
    tmp_path: Path, kind: str, reason: str
) -> None:
    """A provider's safety refusal is "a real reward 0 outcome" (Harbor's docstring), and a
    response over the model's output limit is the pairing's: `--errors environment` made both
    invalid tries, rerun and out of every denominator."""
    path = write_json(tmp_path / "result.json", trial("t", "t__a", {"reward": 0.0}, kind))
    for errors in ("agent", "environment"):
        (row,) = read_rows(path, ImportOptions(format="harbor", errors=errors))  # type: ignore[arg-type]
        assert (row.success, row.terminal_reason, row.reward) == (False, reason, 0.0)


# --- Options a format does not read --------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "option"),
    [
        ("rows.csv", "task_id,attempt,success\nt1,0,true\n", ("--scorer", "reward")),
        ("rows.csv", "task_id,attempt,success\nt1,0,true\n", ("--errors", "environment")),
        ("eval.json", json.dumps({"aggregate": {}, "individual": {}}), ("--scorer", "x")),
    ],
)
def test_an_option_the_format_never_reads_is_refused(
    store: Store, tmp_path: Path, name: str, content: str, option: tuple[str, str]
) -> None:
    """Ignored, the batch said it followed `--errors environment` (its system spec) or a
    `--scorer` that chose nothing: a policy declared and not applied."""
    path = tmp_path / name
    path.write_text(content)
    assert f"{option[0]}: read for" in store.refused(path, *option)


def test_an_inspect_samples_grader_usage_is_not_the_systems(tmp_path: Path) -> None:
    """Inspect takes a sample's ``model_usage`` after scoring: a model-graded scorer's calls
    (role ``grader``) were counted as the system's cost and tokens."""
    usage = {
        "openai/gpt-4o": {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120,
                          "total_cost": 0.5},
        "anthropic/claude-opus": {"input_tokens": 50, "output_tokens": 10, "total_tokens": 60,
                                  "total_cost": 0.25},
    }  # fmt: skip
    grader = {"grader": usage["anthropic/claude-opus"]}
    samples = [
        sample(1, 1, {"model_graded_qa": {"value": "C"}}, model_usage=usage, role_usage=grader),
        sample(1, 2, {"model_graded_qa": {"value": "I"}}, model_usage=usage),
    ]
    graded, ungraded = read_rows(write_json(tmp_path / "log.json", log(samples)))
    assert (graded.cost, graded.tokens) == (0.5, (100, 20))
    assert (ungraded.cost, ungraded.tokens) == (0.75, (150, 30))


# --- Inspect archives compressed with Zstandard --------------------------------------------


def zstd_zip(
    path: Path, members: dict[str, Any], *, damage: bool = False, understate: int = 0
) -> Path:
    """A zip whose members are compressed with Zstandard (method 93), as Inspect writes
    ``.eval`` logs (Python before 3.14 cannot write one)."""
    body, central = b"", b""
    for name, value in members.items():
        data = json.dumps(value).encode()
        packed = zstd_codec.compress(data)  # one frame, as zipfile writes a member
        if damage:
            packed = packed[:8] + bytes(b ^ 0xFF for b in packed[8:16]) + packed[16:]
        crc, encoded = zlib.crc32(data), name.encode()
        fields = (
            63,
            0,
            93,  # Zstandard (APPNOTE 4.4.5)
            0,
            0x21,
            crc,
            len(packed),
            max(1, len(data) - understate),
        )
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 63, *fields, len(encoded), 0,
                               0, 0, 0, 0, len(body)) + encoded  # fmt: skip
        body += struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields, len(encoded), 0)
        body += encoded + packed
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central),
                      len(body), 0)  # fmt: skip
    path.write_bytes(body + central + end)
    return path


def zstd_log(path: Path, *, damage: bool = False, understate: int = 0) -> Path:
    header = log(None)
    del header["samples"]
    samples = {f"samples/{i}_epoch_1.json": sample(i, 1, {"match": {"value": v}})
               for i, v in ((1, "C"), (2, "I"))}  # fmt: skip
    members = {"_journal/start.json": {"version": 2, "eval": EVAL, "plan": PLAN}, **samples,
               "header.json": header, "summaries.json": [], "reductions.json": []}  # fmt: skip
    return zstd_zip(path, members, damage=damage, understate=understate)


def test_an_inspect_log_compressed_with_zstandard_is_read(store: Store, tmp_path: Path) -> None:
    """Inspect writes its archives with Zstandard by default since April 2026; Python reads
    such members from 3.14 on only: every current log was refused ("unknown compression")."""
    path = zstd_log(tmp_path / "run.eval")
    assert [(r.task_id, r.terminal_reason) for r in read_rows(path)] == [
        ("1", "success"),
        ("2", "agent_failure/incorrect"),
    ]
    err = store.refused(zstd_log(tmp_path / "damaged.eval", damage=True))
    assert "run.eval" not in err and "damaged.eval!" in err and "cannot read" in err


def test_a_swe_bench_1_model_report_is_recognised(store: Store, tmp_path: Path) -> None:
    """SWE-bench 1.x's ``get_model_report`` (cumulative lists: ``generated`` holds what was
    ``applied``, which holds what was ``resolved``) was "cannot tell its format". Read since
    the fifteenth round; lists that do not nest are refused naming where."""
    lists = ["no_generation", "generated", "with_logs", "install_fail", "reset_failed",
             "no_apply", "applied", "test_errored", "test_timeout", "resolved"]  # fmt: skip
    report = {name: ["a__b-1"] if name in ("generated", "applied", "resolved") else []
              for name in lists}  # fmt: skip
    err = store.refused(write_json(tmp_path / "gpt4.json", report))
    assert "gpt4.json:applied[0]: applied: instance 'a__b-1' is not in with_logs" in err


def terminal_bench_results() -> dict[str, Any]:
    """Terminal-Bench's ``tb run`` results.json (``BenchmarkResults``, its computed fields
    dumped): one entry per trial, two attempts of one task here."""
    trials = [
        {"trial_name": "hello.1-of-2", "task_id": "hello", "is_resolved": True,
         "failure_mode": "unset"},
        {"trial_name": "hello.2-of-2", "task_id": "hello", "is_resolved": False,
         "failure_mode": "agent_timeout"},
        {"trial_name": "fix.1-of-2", "task_id": "fix", "is_resolved": None,
         "failure_mode": "unknown_agent_error"},
    ]  # fmt: skip
    return {"id": "r1", "results": trials, "pass_at_k": {}, "n_resolved": 1, "n_unresolved": 2,
            "resolved_ids": ["hello"], "unresolved_ids": ["hello", "fix"],
            "accuracy": 1 / 3}  # fmt: skip


def test_terminal_bench_results_are_not_read_as_a_swe_bench_report(
    store: Store, tmp_path: Path
) -> None:
    """Its ``resolved_ids`` and ``unresolved_ids`` made it a SWE-bench run report: with one
    attempt a task, every error (``failure_mode``) an ``agent_failure/unresolved`` whatever
    `--errors` said; with more, "one instance has one outcome"."""
    path = write_json(tmp_path / "results.json", terminal_bench_results())
    assert detect_format(path) == "terminal-bench"  # read since the fourteenth round
    err = store.refused(path, "--format", "swe-bench")
    assert "results: a Terminal-Bench results file, not a SWE-bench run report" in err
    assert "looks like Terminal-Bench results: give --format terminal-bench" in err
    one = terminal_bench_results()
    one["results"], one["unresolved_ids"] = one["results"][:1], []
    assert detect_format(write_json(path, one)) == "terminal-bench"


def test_rows_of_ours_in_a_json_list_are_not_read_as_tau_bench(
    store: Store, tmp_path: Path
) -> None:
    """A JSON list is τ-bench's: rows of ours written as one were read with their ``success``
    and ``attempt`` ignored, the reward deciding (a failure given reward 1 was a success)."""
    rows = [{"task_id": "t1", "attempt": 0, "success": False, "reward": 1.0}]
    err = store.refused(write_json(tmp_path / "rows.json", rows))
    assert "rows.json:1: attempt: not a τ-bench field" in err and "--format jsonl" in err


def test_a_harbor_job_over_two_datasets_keeps_their_tasks_apart(tmp_path: Path) -> None:
    """Harbor keys its evals by dataset (``source``): a task name both datasets have
    (terminal-bench 1 and 2 each have ``hello-world``) was one task, the attempts of two
    different tasks pooled."""
    trials = [
        trial("hello-world", "hello-world__a", {"reward": 1.0}, source="terminal-bench@1.0"),
        trial("hello-world", "hello-world__b", {"reward": 0.0}, minute=1,
              source="terminal-bench@2.0"),
    ]  # fmt: skip
    folder = job(tmp_path / "job", trials)
    assert [r.task_id for r in read_rows(folder)] == [
        "terminal-bench@1.0/hello-world",
        "terminal-bench@2.0/hello-world",
    ]
    assert [r.task_id for r in read_rows(job(tmp_path / "one", trials[:1]))] == ["hello-world"]


def test_a_zstandard_member_past_its_declared_size_is_refused(store: Store, tmp_path: Path) -> None:
    """A member that decompresses to more than its header declares (a zip bomb's way) is read
    no further than the declared size, and then fails its checksum."""
    err = store.refused(zstd_log(tmp_path / "bomb.eval", understate=10))
    assert "bomb.eval!" in err and "cannot read from the archive" in err and "CRC" in err
