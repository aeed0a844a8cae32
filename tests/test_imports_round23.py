"""Twenty-third round, imports: what a log lists of its own samples is held to what it holds,
and τ² full-duplex runs' tokens.

- An Inspect ``.eval`` archive lists every sample it wrote in its summaries (``summaries.json``
  once finished, written by ``EvalRecorder.log_finish`` whatever the status, with or without
  ``results``; else the journal's ``_journal/summaries/<n>.json``): a listed sample without
  its member is a record lost or taken out, whose attempt would leave every denominator.
  ``results`` is absent when no sample was scored (every sample errored), so the check by
  ``total_samples`` said nothing there.
- A sample both logged and listed among the early stops (which Inspect returns before it
  logs anything: ``task/run.py``, ``early_stopping.schedule_sample``) is a contradiction.
- τ² full-duplex (audio-native) simulations have no ``messages`` (their turns come from
  ticks); their agent's usage is ``agent_usage`` (``SessionUsage``: ``records`` of
  ``UsageRecord`` with ``input_tokens`` / ``output_tokens``), which was not read.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from groundstate.errors import SpecError
from groundstate.importers import import_file, open_source
from groundstate.store import RunStore
from tests.test_imports_formats import EVAL, PLAN, Store, log, sample, write_json
from tests.test_imports_tau2_versions import monolithic, simulation


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _summary(s: dict[str, Any]) -> dict[str, Any]:
    """An ``EvalSampleSummary`` of *s*, as Inspect lists it."""
    error = s.get("error")
    return {"id": s["id"], "epoch": s["epoch"], "input": "q", "target": "a",
            "scores": s.get("scores"), "error": error["message"] if error else None,
            "limit": None, "completed": True, "uuid": s.get("uuid")}  # fmt: skip


def _archive(
    path: Path,
    held: list[dict[str, Any]],
    listed: list[dict[str, Any]],
    *,
    finished: bool = True,
    results: dict[str, Any] | None = None,
    status: str = "success",
    raw: str | None = None,
) -> Path:
    """An ``.eval`` archive holding the samples *held*, its summaries listing *listed*
    (``summaries.json`` when *finished*, else one journal summary per sample; *raw*: the
    text of ``summaries.json`` instead)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("_journal/start.json", json.dumps({"version": 2, "eval": EVAL,
                                                            "plan": PLAN}))  # fmt: skip
        for s in held:
            archive.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        summaries = [_summary(s) for s in listed]
        if finished:
            header = {**log(None, status=status), "results": results}
            del header["samples"]
            archive.writestr("header.json", json.dumps(header))
            archive.writestr("summaries.json", json.dumps(summaries) if raw is None else raw)
        else:
            for number, summary in enumerate(summaries, start=1):
                archive.writestr(f"_journal/summaries/{number}.json", json.dumps([summary]))
    return path


def _errored(sample_id: Any, epoch: int) -> dict[str, Any]:
    return sample(sample_id, epoch, {}, error={"message": "RuntimeError('boom')",
                                               "traceback": "", "traceback_ansi": ""})  # fmt: skip


def _passed(sample_id: Any, epoch: int) -> dict[str, Any]:
    return sample(sample_id, epoch, {"match": {"value": "C"}})


def _outcomes(path: Path, tmp_path: Path) -> dict[tuple[str, int | str], str]:
    with RunStore(tmp_path / "o.db") as runs:
        batch = import_file(path, "x", runs).batch.batch_id
        return {(r.task_id, r.attempt): r.terminal_reason for r in runs.runs(batch)}


# --- Inspect: summaries listing a sample the archive does not hold ---------------------------


@pytest.mark.parametrize(
    ("status", "results"),
    [("error", None), ("success", None), ("success", {"scores": [], "completed_samples": 2})],
    ids=["errored-no-results", "finished-no-results", "results-without-total"],
)
def test_a_sample_its_summaries_list_and_the_archive_lost_is_refused(
    store: Store, tmp_path: Path, status: str, results: dict[str, Any] | None
) -> None:
    every = [_errored(1, 1), _errored(2, 1), _errored(3, 1)]
    path = _archive(tmp_path / "lost.eval", every[:2], every, results=results, status=status)
    err = store.refused(path)
    assert "summaries.json[2]" in err and "3" in err and "epoch 1" in err


def test_a_sample_the_journal_lists_and_an_unfinished_archive_lost_is_refused(
    store: Store, tmp_path: Path
) -> None:
    every = [_passed("a", 1), _errored("b", 1), _passed("a", 2)]
    path = _archive(tmp_path / "running.eval", [every[0], every[2]], every, finished=False)
    err = store.refused(path)
    assert "_journal/summaries/2.json[0]" in err and "'b'" in err


def test_an_archive_holding_what_its_summaries_list_imports(tmp_path: Path) -> None:
    """Control: ids as integers and text, two epochs, errored samples counted as failures."""
    every = [_passed(1, 1), _errored(1, 2), _passed("x", 1), _errored("x", 2)]
    for name, finished in (("done.eval", True), ("running.eval", False)):
        path = _archive(tmp_path / name, every, every, finished=finished)
        assert _outcomes(path, tmp_path) == {
            ("1", 1): "success", ("1", 2): "agent_failure/crashed",
            ("x", 1): "success", ("x", 2): "agent_failure/crashed",
        }  # fmt: skip


def test_an_archive_whose_summaries_omit_a_held_sample_imports_it(tmp_path: Path) -> None:
    """Control: a member written before its summary was journalled (a log stopped between
    the two) is an attempt held: imported, not refused."""
    every = [_passed(1, 1), _errored(2, 1)]
    path = _archive(tmp_path / "x.eval", every, every[:1], finished=False)
    assert _outcomes(path, tmp_path) == {("1", 1): "success", ("2", 1): "agent_failure/crashed"}


@pytest.mark.parametrize("given", ["{}", '"none"', "[1]", '[{"id": 1}]'])
def test_summaries_not_as_inspect_writes_them_are_refused(
    store: Store, tmp_path: Path, given: str
) -> None:
    path = _archive(tmp_path / "x.eval", [_passed(1, 1)], [_passed(1, 1)], raw=given)
    assert "summaries.json" in store.refused(path)


# --- Inspect: a sample both logged and stopped early -----------------------------------------


def _stops(*stopped: tuple[Any, int]) -> dict[str, Any]:
    return {
        "scores": [], "completed_samples": 1, "total_samples": 1 + len(stopped),
        "early_stopping": {"manager": "plateau", "metadata": {},
                           "early_stops": [{"id": i, "epoch": e, "reason": "plateau"}
                                           for i, e in stopped]},
    }  # fmt: skip


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_a_sample_logged_and_listed_as_stopped_early_is_refused(
    store: Store, tmp_path: Path, suffix: str
) -> None:
    held = [_passed(1, 1), _errored(1, 2)]
    results = _stops((1, 2))
    if suffix == ".json":
        path = write_json(tmp_path / "x.json", {**log(held), "results": results})
    else:
        path = _archive(tmp_path / "x.eval", held, held, results=results)
    err = store.refused(path)
    assert "early_stops[0]" in err and "epoch 2" in err


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_samples_stopped_early_and_not_logged_still_import(tmp_path: Path, suffix: str) -> None:
    """Control: the early stops name samples the log does not hold (as Inspect writes it);
    an id of another type (``"1"`` against ``1``) is read as the same task, as everywhere."""
    held = [_passed(1, 1)]
    results = _stops((1, 2), (2, 1))
    if suffix == ".json":
        path = write_json(tmp_path / "x.json", {**log(held), "results": results})
    else:
        path = _archive(tmp_path / "x.eval", held, held, results=results)
    assert _outcomes(path, tmp_path) == {("1", 1): "success"}


# --- τ² full-duplex: agent_usage -------------------------------------------------------------


def _usage(*records: dict[str, Any], cost: float | None = 0.12) -> dict[str, Any]:
    """A ``SessionUsage`` as ``build_session_usage`` writes it."""
    return {"records": list(records), "cost": cost, "cost_breakdown": None,
            "pricing_version": "2026-06-01", "num_raw_records": 7}  # fmt: skip


def _record(component: str = "realtime", **meters: Any) -> dict[str, Any]:
    return {"provider": "openai", "model": "gpt-realtime", "component": component,
            "semantics": "delta", "scope_id": None, "tick_number": None, "billable": True,
            **meters}  # fmt: skip


def _tokens(path: Path) -> list[Any]:
    return [row.tokens for row in open_source(path).rows()]


def test_a_full_duplex_runs_agent_usage_gives_its_tokens(tmp_path: Path) -> None:
    usage = _usage(
        _record(input_tokens=1200, output_tokens=300, input_audio_tokens=900),
        _record("llm", input_tokens=50, output_tokens=7),
        _record("stt", audio_input_seconds=12.5),
        _record("tts", characters=400),
    )
    sims = [simulation("a", "1", 0, messages=None, agent_cost=0.12, agent_usage=usage)]
    assert _tokens(monolithic(tmp_path, sims)) == [(1250, 307)]


def test_agent_usage_without_token_meters_leaves_tokens_unknown(tmp_path: Path) -> None:
    """Control: a cascaded pipeline's speech legs count seconds and characters, not tokens;
    a run without agent_usage still reads its messages' usage."""
    spoken = _usage(_record("stt", audio_input_seconds=3.0), _record("tts", characters=9))
    messages = [{"role": "assistant", "content": "hi",
                 "usage": {"prompt_tokens": 10, "completion_tokens": 2}}]  # fmt: skip
    sims = [
        simulation("a", "1", 0, messages=None, agent_usage=spoken),
        simulation("b", "1", 1, messages=messages, agent_usage=None),
        simulation("c", "1", 2, messages=None, agent_usage=_usage()),
    ]
    assert _tokens(monolithic(tmp_path, sims)) == [None, (10, 2), None]


def test_a_record_with_one_meter_unknown_leaves_that_side_unknown(tmp_path: Path) -> None:
    usage = _usage(
        _record(input_tokens=5, output_tokens=None), _record(input_tokens=1, output_tokens=2)
    )
    sims = [simulation("a", "1", 0, messages=None, agent_usage=usage)]
    assert _tokens(monolithic(tmp_path, sims)) == [(6, None)]


@pytest.mark.parametrize(
    ("usage", "field"),
    [
        ("all", "agent_usage"),
        ({"records": {"a": 1}}, "agent_usage.records"),
        ({"records": [7]}, "agent_usage.records[0]"),
        ({"records": [{"input_tokens": -3, "output_tokens": 1}]}, "input_tokens"),
        ({"records": [{"input_tokens": 1, "output_tokens": "many"}]}, "output_tokens"),
    ],
)
def test_agent_usage_not_as_tau2_writes_it_is_refused(
    store: Store, tmp_path: Path, usage: Any, field: str
) -> None:
    sims = [simulation("a", "1", 0, messages=None, agent_usage=usage)]
    path = monolithic(tmp_path, sims)
    assert field in store.refused(path)
    with pytest.raises(SpecError):
        list(open_source(path).rows())


# --- SWE-bench: instances' reports read value by value ---------------------------------------


def _instance(resolved: bool, applied: bool = True, tests: int = 2) -> dict[str, Any]:
    """One instance's entry as ``get_eval_report`` writes it, *tests* names in its status."""
    names = [f"tests/test_a.py::test_{n}" for n in range(tests)]
    return {"patch_is_None": False, "patch_exists": True, "patch_successfully_applied": applied,
            "resolved": resolved, "tests_status": {
                "FAIL_TO_PASS": {"success": names if resolved else [], "failure": []},
                "PASS_TO_PASS": {"success": [], "failure": [] if resolved else names}}}  # fmt: skip


REPORTS = {"a__a-1": _instance(True), "b__b-2": _instance(False),
           "c__c-3": _instance(False, applied=False)}  # fmt: skip
EXPECTED = {
    ("a__a-1", 1): "success",
    ("b__b-2", 1): "agent_failure/unresolved",
    ("c__c-3", 1): "agent_failure/ungraded",
}


def test_a_large_swe_bench_reports_file_is_imported_in_bounded_memory(tmp_path: Path) -> None:
    """Instances' reports in one object (``{instance_id: report.json's entry}``) were read
    whole, twice (to tell the format, then to import): a 120 MB file took several hundred MB
    over a 1 MB one's; read instance by instance, each kept without its tests' names, a few
    MB. The bound, 40 MB, is a third of the file."""
    from tests.test_imports2_round21 import _peak

    small = _peak(tmp_path, 1, "swe-bench", False)
    large = _peak(tmp_path, 120, "swe-bench", False)
    assert large - small < 40_000, (small, large)


@pytest.mark.parametrize(
    "form",
    ["object", "indented", "lines", "concatenated"],
)
def test_swe_bench_reports_read_value_by_value_give_the_same_verdicts(
    tmp_path: Path, form: str
) -> None:
    """One object (on one line or indented), one report per line (``jq -c``), or reports one
    after another (``cat */report.json``: several indented objects, which a whole parse
    refused as extra data)."""
    path = tmp_path / "reports.json"
    items = list(REPORTS.items())
    if form == "object":
        path.write_text(json.dumps(REPORTS))
    elif form == "indented":
        path.write_text(json.dumps(REPORTS, indent=4))
    elif form == "lines":
        path.write_text("".join(json.dumps(dict([item])) + "\n" for item in items))
    else:
        path.write_text("".join(json.dumps(dict([item]), indent=4) + "\n" for item in items))
    assert _outcomes(path, tmp_path) == EXPECTED
    assert open_source(path).system()["report"] == "instance"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"a__a-1": {"resolved": true, "patch_exists": true}', "reports.json:1: not valid JSON"),
        (
            '{"a__a-1": {"resolved": true, "patch_exists": true}}\n{"b__b-2": {"resol',
            "reports.json:2: not valid JSON",
        ),
        (
            '{"a__a-1": {"resolved": true, "patch_exists": true}}\n[1]\n',
            "reports.json:2: must be an object of instances' reports",
        ),
        (
            '{"a__a-1": {"resolved": true, "patch_exists": true}}\n\n'
            '{"a__a-1": {"resolved": false, "patch_exists": true}}\n',
            "reports.json:3: a__a-1: the instance's report is also on line 1",
        ),
        (
            '{"a__a-1": {"resolved": true, "patch_exists": true, "resolved": false}}',
            "the key appears twice",
        ),
        (json.dumps({"resolved_ids": ["a"], "unresolved_ids": []}) + "\n{}", "Extra data"),
    ],
    ids=["cut", "cut-second", "not-an-object", "twice", "key-twice", "after-a-run-report"],
)
def test_damaged_swe_bench_reports_are_refused_naming_where(
    store: Store, tmp_path: Path, text: str, said: str
) -> None:
    path = tmp_path / "reports.json"
    path.write_text(text)
    assert said in store.refused(path, "--format", "swe-bench")
    assert said in store.refused(path)


# --- SWE-bench: a model's folder of logs with an empty report.json ---------------------------


def _logs(root: Path, **reports: str | None) -> Path:
    """``logs/run_evaluation/<run_id>/<model>/``: a folder per instance, with its log and (when
    given) its ``report.json`` text."""
    model = root / "logs" / "run_evaluation" / "run1" / "openai__gpt-4o"
    for name, text in reports.items():
        folder = model / name
        folder.mkdir(parents=True)
        (folder / "run_instance.log").write_text("Evaluation log\n")
        if text is not None:
            (folder / "report.json").write_text(text)
    return model


def _report_of(name: str, resolved: bool) -> str:
    return json.dumps({name: _instance(resolved)}, indent=4)


@pytest.mark.parametrize(
    ("errors", "reason"),
    [("agent", "agent_failure/crashed"), ("environment", "environment_failure/harness_error")],
)
def test_an_empty_instance_report_is_an_error_as_swe_bench_counts_it(
    store: Store, tmp_path: Path, errors: str, reason: str
) -> None:
    """``run_instance`` opens ``report.json`` before writing it; an evaluation stopped between
    the two leaves it empty, which ``make_run_report`` counts in ``error_ids``. The whole
    folder was refused ("not valid JSON"), so the run could not be imported at all."""
    folder = _logs(tmp_path, a=_report_of("a", True), b="", c="  \n", d=None)
    batch = store.imported(folder, "--errors", errors)
    assert store.runs(batch) == {
        ("a", 1, 0): ("success", None), ("b", 1, 0): (reason, None),
        ("c", 1, 0): (reason, None), ("d", 1, 0): (reason, None),
    }  # fmt: skip


def test_a_cut_instance_report_is_still_refused(store: Store, tmp_path: Path) -> None:
    """Control: a report cut mid-record is no report SWE-bench wrote whole: refused, naming
    the file."""
    folder = _logs(tmp_path, a=_report_of("a", True), b=_report_of("b", False)[:40])
    err = store.refused(folder)
    assert "b/report.json" in err and "not valid JSON" in err


# --- Harbor: a job's trials held without their rollouts --------------------------------------


def _rolled_out(index: int, tokens: int) -> dict[str, Any]:
    """A Harbor trial whose ``agent_result`` keeps its rollout (token ids and log-probabilities
    of each model call, as an RL run keeps them) and a multi-step one's step likewise."""
    from tests.test_imports_harbor import trial

    rollout = [{"prompt_token_ids": [list(range(1000, 1000 + tokens))],
                "completion_token_ids": [list(range(tokens))],
                "logprobs": [[-0.5] * tokens]}]  # fmt: skip
    made = trial(f"t{index % 4}", f"t{index % 4}__{index}", {"reward": index % 2}, minute=index)
    made["agent_result"] = {**made["agent_result"], "rollout_details": rollout}
    return made


def test_a_harbor_jobs_trials_are_held_without_their_rollouts(tmp_path: Path) -> None:
    """A job's trials are all held (sorted by when they started) before any is stored: each
    with its rollout, memory grew with every token id of the job (20 trials of 3 x 40,000
    numbers: more than 40 MB held); without them (nothing here reads them), a trial's
    verdict, cost and tokens."""
    import tracemalloc

    from tests.test_imports_harbor import job

    folder = job(tmp_path / "job", [_rolled_out(i, 40_000) for i in range(20)])
    with RunStore(tmp_path / "h.db") as runs:
        tracemalloc.start()
        try:
            report = import_file(folder, "x", runs)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        rows = runs.runs(report.batch.batch_id)
    assert len(rows) == 20 and sum(r.success for r in rows) == 10
    assert peak < 25_000_000, peak


def test_harbor_trials_without_their_rollouts_keep_their_verdicts_and_usage(
    store: Store, tmp_path: Path
) -> None:
    """Control: the slimmed trials give what the whole ones gave (verdict, cost, tokens), a
    multi-step trial's steps included."""
    from tests.test_imports_harbor import job, trial

    stepped = trial("t9", "t9__s", {"reward": 1}, minute=30, agent_result=None,
                    step_results=[{"step_name": "a", "agent_result": {
                        "n_input_tokens": 5, "n_output_tokens": 1, "cost_usd": 0.5,
                        "rollout_details": [{"logprobs": [[-1.0]]}], "metadata": {"x": 1}},
                        "verifier_result": {"rewards": {"reward": 1}},
                        "exception_info": None}])  # fmt: skip
    folder = job(tmp_path / "job", [_rolled_out(0, 10), _rolled_out(1, 10), stepped])
    sources = open_source(folder)
    rows = {r.label: (r.success, r.cost, r.tokens) for r in sources.rows()}
    assert rows == {
        "t0__0": (False, 0.25, (1200, 300)),
        "t1__1": (True, 0.25, (1200, 300)),
        "t9__s": (True, 0.5, (5, 1)),
    }
