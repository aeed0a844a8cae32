"""Other harnesses' result files and malformed input, fourteenth round.

Each case read a file otherwise than its harness wrote or meant it; the fixtures follow the
writers (Harbor's ``TrialResult``, Inspect's ``EvalSample`` and its events, Inspect's
multi-frame Zstandard members).
"""

from __future__ import annotations

import json
import sys
import uuid
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from groundstate.importers import ImportOptions, detect_format, read_rows
from tests import test_imports_round13 as round13
from tests.test_imports_formats import Store, log, sample, write_eval, write_json
from tests.test_imports_harbor import trial

if sys.version_info >= (3, 14):
    from compression import zstd as zstd_codec
else:
    from backports import zstd as zstd_codec


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


# --- Harbor --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("AgentAuthenticationError", "environment_failure/authentication"),
        ("ApiKeyRejectedError", "environment_failure/authentication"),
        ("ModelNotFoundError", "environment_failure/model_not_found"),
        ("ApiUsageLimitError", "environment_failure/usage_limit"),
    ],
)
def test_harbor_setup_errors_keep_their_name_under_errors_environment(
    tmp_path: Path, kind: str, reason: str
) -> None:
    """A rejected API key, a model the provider does not have, or an account out of quota are
    named as such when the evaluator vouches for its setup (`--errors environment`); Harbor
    reads them from the agent's own output, so under `--errors agent` they are the agent's
    (sixteenth round: `tests/test_imports_round16.py`)."""
    path = write_json(tmp_path / "result.json", trial("t", "t__a", {"reward": 0.0}, kind))
    (row,) = read_rows(path, ImportOptions(format="harbor", errors="environment"))
    assert (row.success, row.terminal_reason, row.reward) == (False, reason, None)
    assert row.origin is not None and row.origin["exception_type"] == kind


# --- Inspect archives compressed with Zstandard --------------------------------------------


def frames(data: bytes) -> bytes:
    """*data* compressed as three Zstandard frames, as Inspect's writer splits a member (a
    frame per 200 MiB of input)."""
    third = len(data) // 3 + 1
    return b"".join(zstd_codec.compress(data[i : i + third]) for i in range(0, len(data), third))


def test_an_inspect_member_of_several_zstandard_frames_is_read(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``zipfile`` stops at the end of a member's first frame: every sample Inspect wrote
    over 200 MiB (several frames) was refused as a bad CRC-32."""
    monkeypatch.setattr(round13, "zstd_codec", SimpleNamespace(compress=frames))
    path = round13.zstd_log(tmp_path / "run.eval")
    assert [(r.task_id, r.terminal_reason) for r in read_rows(path)] == [
        ("1", "success"),
        ("2", "agent_failure/incorrect"),
    ]
    err = store.refused(round13.zstd_log(tmp_path / "bomb.eval", understate=10))
    assert "bomb.eval!" in err and "cannot read from the archive" in err and "CRC" in err
    damaged = round13.zstd_log(tmp_path / "damaged.eval", damage=True)
    assert "damaged.eval!" in store.refused(damaged)


@pytest.mark.parametrize(
    ("compress", "message"),
    [
        (lambda data: zstd_codec.compress(data)[:-6], "frame is cut short"),
        (lambda data: zstd_codec.compress(data[:-5]), "declared"),
        (lambda data: frames(data) + b"\x00garbage", "Unknown frame descriptor"),
    ],
)
def test_a_zstandard_member_cut_short_or_padded_is_named(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    compress: Any,
    message: str,
) -> None:
    """A member whose last frame ends early, that holds fewer bytes than it declares, or
    whose frames are followed by bytes that are no frame, is named with the member."""
    monkeypatch.setattr(round13, "zstd_codec", SimpleNamespace(compress=compress))
    err = store.refused(round13.zstd_log(tmp_path / "cut.eval"))
    assert "cut.eval!header.json: cannot read from the archive" in err
    assert message in err


# --- Inspect: the scorer's errors and time -------------------------------------------------


def event(kind: str, at: float, **fields: Any) -> dict[str, Any]:
    """An Inspect event (``BaseEvent``): *at* is its ``working_start``, the sample's working
    time when it occurred."""
    return {"event": kind, "uuid": f"e{at}", "span_id": None,
            "timestamp": "2026-08-01T10:00:00+00:00", "working_start": at, **fields}  # fmt: skip


ERROR = {"message": "RuntimeError('boom')", "traceback": "...", "traceback_ansi": "..."}


def events(*, agent_error: bool = False, scored: bool = True) -> list[dict[str, Any]]:
    """A sample's events as Inspect's ``task_run_sample`` records them: the solvers' span,
    the solvers' error (``--score-on-error`` scores after recording it), then the scorers'
    span with each scorer's span inside."""
    out = [
        event("span_begin", 0.0, id="s", name="solvers", type="solvers", parent_id=None),
        event("model", 1.0, model="gpt-4o"),
        event("span_end", 8.0, id="s"),
    ]
    if agent_error:
        out.append(event("error", 8.0, error=ERROR))
    if scored:
        out += [
            event("span_begin", 8.5, id="c", name="scorers", type="scorers", parent_id=None),
            event("span_begin", 8.5, id="m", name="match", type="scorer", parent_id="c"),
        ]
    return out


def test_an_inspect_scorers_error_is_an_ungraded_state_not_a_crash(tmp_path: Path) -> None:
    """An error a scorer raised (or scoring's time limit) was the agent's crash, or under
    `--errors environment` a harness error: the state could not be graded, as a Harbor
    verifier's error is read. An error the solvers raised stays a crash, scored or not; a
    sample that hit a limit before its scorer raised ends at the limit, its first stop."""
    samples = [
        sample("scorer", 1, {}, error=ERROR, events=events()),
        sample("agent", 1, {}, error=ERROR, events=events(scored=False)),
        sample("both", 1, {"match": {"value": "I"}}, error=ERROR,
               events=events(agent_error=True)),
        sample("unlogged", 1, {}, error=ERROR, events=[]),
        sample("limited", 1, {}, error=ERROR, events=events(), limit={"type": "time",
                                                                        "limit": 60}),
    ]  # fmt: skip
    path = write_json(tmp_path / "log.json", log(samples))
    expected = {
        "agent": ["agent_failure/ungraded", "agent_failure/crashed", "agent_failure/crashed",
                  "agent_failure/crashed", "agent_failure/time_limit"],
        "environment": ["grader_failure", "environment_failure/harness_error",
                        "environment_failure/harness_error", "environment_failure/harness_error",
                        "agent_failure/time_limit"],
    }  # fmt: skip
    for errors, reasons in expected.items():
        rows = read_rows(path, ImportOptions(errors=errors))  # type: ignore[arg-type]
        assert [r.terminal_reason for r in rows] == reasons
        assert rows[0].origin == {"error": ERROR["message"], "raised_by": "scorer"}
        assert rows[0].mapped == f"scorer error -> {reasons[0]}"


def test_an_inspect_samples_latency_is_the_agents_working_time(tmp_path: Path) -> None:
    """Inspect takes ``total_time`` after scoring: a model-graded scorer or a test suite run
    in the sandbox was counted as the system's time, as was the time the sample waited for a
    rate limit (which ``working_time`` leaves out)."""
    samples = [
        sample("scored", 1, {"match": {"value": "C"}}, events=events(), total_time=30.0,
               working_time=20.0),
        sample("errored", 1, {}, error=ERROR, events=events(scored=False), total_time=9.0,
               working_time=8.0),
        sample("older", 1, {"match": {"value": "C"}}, events=[], total_time=7.0,
               working_time=None),
    ]  # fmt: skip
    rows = read_rows(write_json(tmp_path / "log.json", log(samples)))
    assert [r.latency for r in rows] == [8.5, 8.0, 7.0]
    steps = [event("step", 4.0, action="begin", type="scorer", name="match")]
    (older,) = read_rows(write_json(tmp_path / "old.json", log([
        sample("s", 1, {"match": {"value": "C"}}, events=steps, total_time=9.0),
    ])))  # fmt: skip
    assert older.latency == 4.0


def test_an_inspect_scorings_malformed_working_start_is_named(store: Store, tmp_path: Path) -> None:
    scored = events()
    scored[3]["working_start"] = -1
    path = write_json(tmp_path / "log.json", log([sample("s", 1, {}, events=scored)]))
    assert "log.json:samples[0]: events[3].working_start: must not be negative" in (
        store.refused(path)
    )


# --- Terminal-Bench ------------------------------------------------------------------------


def tb_trial(task: str, attempt: int, resolved: bool | None, mode: str = "none",
             **fields: Any) -> dict[str, Any]:  # fmt: skip
    """A ``TrialResults`` as ``tb run`` writes it (``model_dump``)."""
    return {
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{task}.{attempt}")), "trial_name":
        f"{task}.{attempt}-of-2.2026-08-01__10-00-00", "task_id": task, "instruction": "do it",
        "is_resolved": resolved, "failure_mode": mode, "parser_results": None,
        "recording_path": None, "total_input_tokens": 1000, "total_output_tokens": 50,
        "trial_started_at": "2026-08-01T10:00:00+00:00",
        "trial_ended_at": "2026-08-01T10:05:00+00:00",
        "agent_started_at": "2026-08-01T10:00:30+00:00",
        "agent_ended_at": "2026-08-01T10:02:00+00:00",
        "test_started_at": "2026-08-01T10:02:10+00:00",
        "test_ended_at": "2026-08-01T10:05:00+00:00", **fields,
    }  # fmt: skip


def tb_run(trials: list[dict[str, Any]]) -> dict[str, Any]:
    """A ``BenchmarkResults`` with its computed fields, as ``tb run`` writes it."""
    return {
        "id": "r1", "results": trials, "pass_at_k": {}, "accuracy": 0.0,
        "n_resolved": sum(bool(t["is_resolved"]) for t in trials),
        "n_unresolved": sum(not t["is_resolved"] for t in trials),
        "resolved_ids": [t["task_id"] for t in trials if t["is_resolved"]],
        "unresolved_ids": [t["task_id"] for t in trials if not t["is_resolved"]],
    }  # fmt: skip


def test_terminal_bench_results_are_read_with_each_failure_mode(
    store: Store, tmp_path: Path
) -> None:
    """Terminal-Bench results were refused ("convert it to the row format"), though they say
    per trial how it ended; a timed-out agent whose tests then passed counted resolved."""
    trials = [
        tb_trial("hello", 1, True),
        tb_trial("hello", 2, True, "agent_timeout"),  # the tests still ran, and passed
        tb_trial("fix", 1, False),
        tb_trial("fix", 2, None, "test_timeout"),
        tb_trial("sum", 1, None, "unknown_agent_error", total_input_tokens=None,
                 total_output_tokens=None, agent_ended_at=None),
        tb_trial("sum", 2, None, "context_length_exceeded"),
        tb_trial("cut", 1, None, "fatal_llm_parse_error"),
        tb_trial("cut", 2, None, "unset"),  # never graded
    ]  # fmt: skip
    path = write_json(tmp_path / "results.json", tb_run(trials))
    rows = read_rows(path)
    assert [(r.task_id, r.label, r.success, r.terminal_reason) for r in rows] == [
        ("hello", 1, True, "success"),
        ("hello", 2, False, "agent_failure/time_limit"),
        ("fix", 1, False, "agent_failure/incorrect"),
        ("fix", 2, False, "agent_failure/ungraded"),
        ("sum", 1, False, "agent_failure/crashed"),
        ("sum", 2, False, "harness_compatibility_failure/context_window"),
        ("cut", 1, False, "harness_compatibility_failure/parse_error"),
        ("cut", 2, False, "grader_failure"),
    ]
    assert (rows[0].latency, rows[0].tokens) == (90.0, (1000, 50))
    assert (rows[4].latency, rows[4].tokens) == (None, None)
    invalid = read_rows(path, ImportOptions(errors="environment"))
    assert [r.terminal_reason for r in invalid][3:5] == [
        "grader_failure",
        "environment_failure/harness_error",
    ]
    runs = store.runs(store.imported(path))
    assert runs["hello", 2, 0] == ("agent_failure/time_limit", None)
    assert len(runs) == 8


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"is_resolved": "yes"}, "results[0]: is_resolved: must be true, false or null"),
        ({"failure_mode": 3}, "results[0]: failure_mode: must be text"),
        ({"trial_name": None}, "results[0]: trial_name: must be text"),
        ({"task_id": None}, "results[0]: task_id: required"),
        ({"agent_ended_at": "later"}, "results[0]: agent_started_at: times must be ISO 8601"),
        ({"total_input_tokens": -1}, "results[0]: total_input_tokens: must not be negative"),
    ],
)
def test_malformed_terminal_bench_trials_are_named(
    store: Store, tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    trial = {**tb_trial("t", 1, True), **change}
    path = write_json(tmp_path / "results.json", tb_run([trial]))
    assert message in store.refused(path, "--format", "terminal-bench")


def test_a_terminal_bench_trial_given_twice_or_of_an_unknown_mode(
    store: Store, tmp_path: Path
) -> None:
    """A trial copied in twice is refused naming both places; a failure mode not known here
    is an unattributed error, named in a warning."""
    twice = write_json(tmp_path / "twice.json", tb_run([tb_trial("t", 1, True)] * 2))
    err = store.refused(twice)
    assert "results[1]: attempt: task 't' attempt 1 appears twice" in err
    assert "results[0]" in err
    odd = write_json(tmp_path / "odd.json", tb_run([tb_trial("t", 1, True, "gremlins")]))
    (row,) = read_rows(odd)
    assert row.terminal_reason == "agent_failure/crashed" and row.unmapped is not None
    assert "failure_mode 'gremlins' is not one known here" in row.unmapped


@pytest.mark.parametrize("indent", [None, 4])
def test_one_terminal_bench_trials_results_are_read(tmp_path: Path, indent: int | None) -> None:
    """A trial's own ``results.json`` was "cannot tell its format" or, on one line, a row of
    ours without an attempt; it is one attempt, as a Harbor trial's ``result.json`` is."""
    path = tmp_path / "results.json"
    path.write_text(json.dumps(tb_trial("hello", 2, False, "agent_timeout"), indent=indent))
    assert detect_format(path) == "terminal-bench"
    (row,) = read_rows(path)
    assert (row.task_id, row.label, row.terminal_reason) == (
        "hello",
        2,
        "agent_failure/time_limit",
    )
    ours = tmp_path / "rows.jsonl"  # a row of ours with the same columns stays ours
    ours.write_text(json.dumps({**tb_trial("t", 1, True), "attempt": 1, "success": True}))
    assert detect_format(ours) == "jsonl"


def test_a_sample_scored_before_another_scorer_raised_keeps_its_verdict(
    tmp_path: Path,
) -> None:
    """Inspect keeps the scores of scorers that finished before another raised, and its
    metrics count them: the deciding score, there, decides (it was a crash, then an
    ungraded state); without it, the state was not graded."""
    samples = [
        sample("t", 1, {"match": {"value": "C"}}, error=ERROR, events=events()),
        sample("u", 1, {"other": {"value": "C"}}, error=ERROR, events=events()),
    ]
    path = write_json(tmp_path / "log.json", log(samples))
    rows = read_rows(path, ImportOptions(scorer="match"))
    assert [(r.success, r.terminal_reason) for r in rows] == [
        (True, "success"),
        (False, "agent_failure/ungraded"),
    ]
    assert rows[0].origin is not None and rows[0].origin["error"] == ERROR["message"]


def test_a_chunked_samples_events_are_read_from_its_chunks(tmp_path: Path) -> None:
    """A chunked sample (``samples/<id>_epoch_<n>/sample.json``) keeps its events in
    ``events/<start>.json`` chunks, not in its shell: its scorer's error and the time its
    scoring began were not seen (a crash, and the latency taken after scoring)."""
    path = write_eval(tmp_path / "run.eval", [sample("small", 1, {"m": {"value": "C"}})])
    shell = sample("big", 1, {}, error=ERROR, events=[], total_time=30.0, working_time=20.0)
    with zipfile.ZipFile(path, "a") as archive:
        prefix = "samples/big_epoch_1"
        archive.writestr(f"{prefix}/sample.json", json.dumps(shell))
        chunks = events()
        archive.writestr(f"{prefix}/events/3.json", json.dumps(chunks[3:]))  # named by start
        archive.writestr(f"{prefix}/events/0.json", json.dumps(chunks[:3]))
        archive.writestr(f"{prefix}/events/stats.json", "{}")
    small, big = read_rows(path)
    assert (big.task_id, big.terminal_reason, big.latency) == ("big", "agent_failure/ungraded", 8.5)
    assert small.latency == 1.0
