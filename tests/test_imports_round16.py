"""Other harnesses' result files, sixteenth round.

Harbor's provider errors (``harbor/agents/installed/base.py``: ``ERROR_PATTERNS`` over the
agent command's output), counts a file leaves out, and malformed files of each format; the
fixtures follow the writers.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from groundstate.importers import ImportOptions, read_rows
from groundstate.store import RunStore
from tests.test_imports_formats import Store, cli, log, sample, write_json
from tests.test_imports_harbor import trial
from tests.test_imports_round11 import SWE_REPORT
from tests.test_imports_round14 import tb_run, tb_trial


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


# --- Harbor: what the agent's own output says is not the harness's evidence -----------------


@pytest.mark.parametrize(
    "kind", ["AgentAuthenticationError", "ApiKeyRejectedError", "ModelNotFoundError",
             "ApiUsageLimitError"],
)  # fmt: skip
def test_a_harbor_provider_error_read_from_the_agents_output_follows_errors(
    store: Store, tmp_path: Path, kind: str
) -> None:
    """Harbor names these from the text of the agent's failed command ("Not logged in",
    "Cannot use this model", "Quota exceeded."): an agent that prints that text and exits
    non-zero made a failed attempt invalid, out of every denominator, whatever `--errors`
    said. Under the default `--errors agent` it is now the agent's crash, counted."""
    job = tmp_path / "job"
    job.mkdir()
    write_json(job / "result.json", {"id": "j", "n_total_trials": 2, "stats": {}})
    for name, exception in (("t__a", kind), ("t__b", None)):
        (job / name).mkdir()
        write_json(job / name / "result.json", trial("t", name, {"reward": 1.0}, exception))
    rows = read_rows(job, ImportOptions(format="harbor"))
    assert [(r.label, r.terminal_reason) for r in rows] == [
        ("t__a", "agent_failure/crashed"),
        ("t__b", "success"),
    ]
    report = store.report(store.imported(job))
    assert (report["valid_attempts"], report["invalid_attempts"]) == (2, 0)
    assert report["success_rate"]["estimate"] == 0.5  # the crash is in the denominator
    (row,) = read_rows(job / "t__a" / "result.json", ImportOptions(errors="environment"))
    assert row.terminal_reason.startswith("environment_failure/")


# --- a count the file leaves out stays unknown -------------------------------------------------


def stored_usage(store: Store, batch: str) -> list[tuple[int | None, int | None]]:
    with RunStore(store.path) as runs:
        assert runs.verify(batch).ok
        return [(r.usage.input_tokens, r.usage.output_tokens) for r in runs.runs(batch)]


def test_tokens_a_harbor_trial_leaves_out_are_stored_unknown_not_zero(
    store: Store, tmp_path: Path
) -> None:
    """An agent that counts no tokens leaves Harbor's ``n_input_tokens`` and
    ``n_output_tokens`` null: each was stored as 0, an attempt that used no tokens, and a
    mean over the exported rows counted it so. A step that leaves its count out makes the
    trial's sum unknown too (the other steps' sum would understate it)."""
    unknown = {"n_input_tokens": None, "n_output_tokens": None, "cost_usd": None}
    steps = [
        {"step_name": "one", "agent_result": {"n_input_tokens": 10, "n_output_tokens": 2},
         "verifier_result": {"rewards": {"reward": 1.0}}, "exception_info": None},
        {"step_name": "two", "agent_result": {"n_input_tokens": None, "n_output_tokens": 1},
         "verifier_result": {"rewards": {"reward": 1.0}}, "exception_info": None},
    ]  # fmt: skip
    trials = {
        "t__a": trial("t", "t__a", {"reward": 1.0}, agent_result=unknown),
        "t__b": trial("t", "t__b", {"reward": 0.0}, minute=1),
        "t__c": trial("t", "t__c", {"reward": 1.0}, minute=2, agent_result=None,
                      step_results=steps),
    }  # fmt: skip
    job = tmp_path / "job"
    job.mkdir()
    write_json(job / "result.json", {"id": "j", "n_total_trials": 3, "stats": {}})
    for name, data in trials.items():
        (job / name).mkdir()
        write_json(job / name / "result.json", data)
    assert [r.tokens for r in read_rows(job)] == [(None, None), (1200, 300), (None, 3)]
    batch = store.imported(job)
    assert stored_usage(store, batch) == [(None, None), (1200, 300), (None, 3)]
    for kind in ("csv", "jsonl"):  # exported blank / null, and read back as not known
        out = tmp_path / f"rows.{kind}"
        code, _, err = cli("export", batch, "--format", kind, "--out", str(out),
                           "--store", str(store.path))  # fmt: skip
        assert code == 0, err
        assert [r.tokens for r in read_rows(out)] == [None, (1200, 300), (None, 3)]
        assert stored_usage(store, store.imported(out)) == [(None, None), (1200, 300), (None, 3)]


def test_tokens_an_inspect_log_or_a_row_file_leaves_out_are_unknown(
    store: Store, tmp_path: Path
) -> None:
    """Inspect's usage without ``input_tokens``, a row that gives only ``input_tokens``: each
    missing count was 0, and the HTML report showed "0"."""
    inspect = log([
        sample(1, 1, {"match": {"value": "C"}}, model_usage={"m": {"output_tokens": 7}}),
        sample(2, 1, {"match": {"value": "C"}},
               model_usage={"m": {"input_tokens": 5, "output_tokens": 7, "total_tokens": 12}}),
    ])  # fmt: skip
    path = write_json(tmp_path / "log.json", inspect)
    assert [r.tokens for r in read_rows(path)] == [(None, 7), (5, 7)]
    rows = tmp_path / "rows.csv"
    rows.write_text("task_id,attempt,success,input_tokens\nt,0,true,40\nt,1,false,\n")
    assert [r.tokens for r in read_rows(rows)] == [(40, None), None]
    html = tmp_path / "report.html"
    code, _, err = cli("report", store.imported(rows), "--html", str(html),
                       "--store", str(store.path))  # fmt: skip
    assert code == 0, err
    shown = re.findall(r"tokens in / out</dt>\s*<dd>([^<]*)<", html.read_text())
    assert sorted(shown) == ["40 / not known", "not known / not known"]


# --- a grade in a form the reader does not know is not "never graded" ----------------------


@pytest.mark.parametrize(
    "verified", [{"reward": 1.0}, {"reward": 0.0, "rewards": None}, {"rewards": {}, "score": 1}]
)
def test_a_harbor_trial_graded_in_another_form_is_refused_not_invalid(
    store: Store, tmp_path: Path, verified: dict[str, object]
) -> None:
    """Tools around Harbor write ``verifier_result: {"reward": 1.0}``: with no ``rewards``
    the trial was read as never graded (`grader_failure`, invalid): its reward dropped and the
    attempt out of every denominator, exit 0. It is now refused, naming the field."""
    graded = trial("t", "t__a", None, verifier_result=verified)
    err = store.refused(write_json(tmp_path / "result.json", graded))
    key = next(k for k in verified if k != "rewards")
    assert f"verifier_result.{key}: given" in err and "never graded" in err
    ungraded = trial("t", "t__a", None, verifier_result={"rewards": None})
    (row,) = read_rows(write_json(tmp_path / "none.json", ungraded))
    assert row.terminal_reason == "grader_failure"


def test_a_terminal_bench_trial_without_is_resolved_is_refused_not_invalid(
    store: Store, tmp_path: Path
) -> None:
    """``tb run`` writes ``is_resolved`` on every trial (null when never graded): a trial
    without the key was read as never graded (`grader_failure`, invalid), out of every
    denominator, exit 0."""
    trials = [tb_trial("hello", 1, True), tb_trial("hello", 2, False)]
    del trials[1]["is_resolved"]
    err = store.refused(write_json(tmp_path / "results.json", {**tb_run(trials[:1]),
                                                               "results": trials}))  # fmt: skip
    assert "results[1]: is_resolved: required" in err
    trials[1]["is_resolved"] = None
    rows = read_rows(write_json(tmp_path / "ok.json", {**tb_run(trials[:1]), "results": trials}))
    assert [r.terminal_reason for r in rows] == ["success", "grader_failure"]


# --- bytes that are not UTF-8 are placed ----------------------------------------------------


@pytest.mark.parametrize("suffix", ["csv", "jsonl", "json.gz"])
def test_a_byte_that_is_not_utf8_is_named_with_its_line(
    store: Store, tmp_path: Path, suffix: str
) -> None:
    """A Latin-1 byte deep in a large file was "not UTF-8 text": the row that holds it was
    the user's to find, in a file of a million rows."""
    rows = [f"t{i},0,true" for i in range(5000)]
    rows[4321] = "tâche,0,true"
    text = "task_id,attempt,success\n" + "\n".join(rows) + "\n"
    if suffix == "jsonl":
        objects = [f'{{"task_id": "t{i}", "attempt": 0, "success": true}}' for i in range(5000)]
        objects[4321] = objects[4321].replace(f"t{4321}", "tâche")
        text = "\n".join(objects) + "\n"
    data = text.encode("latin-1")
    path = tmp_path / f"rows.{suffix}"
    if suffix == "json.gz":
        path.write_bytes(
            gzip.compress(json.dumps([1, "tâche"], ensure_ascii=False).encode("latin-1"))
        )
        assert "not UTF-8 text (byte 0xe2 on line 1, at offset 6)" in store.refused(path)
        return
    path.write_bytes(data)
    line = 4323 if suffix == "csv" else 4322
    offset = data.index(b"\xe2")
    assert f"not UTF-8 text (byte 0xe2 on line {line}, at offset {offset})" in store.refused(path)


# --- a SWE-bench run report whose lists miss instances of its total --------------------------


def test_a_swe_bench_run_report_whose_lists_miss_part_of_its_total_says_so(
    store: Store, tmp_path: Path
) -> None:
    """SWE-bench puts each instance of the dataset in one list (``incomplete_ids``: no
    prediction); a report whose lists hold fewer than ``total_instances`` (cut, or edited)
    was imported without a word: its resolved rate is over a total the batch never sees."""
    path = write_json(tmp_path / "run.json", {**SWE_REPORT, "total_instances": 9})
    code, _, err = cli("import-results", str(path), "--name", "swe", "--store", str(store.path))
    assert code == 0, err
    assert "total_instances is 9, but its lists" in err and "hold 6: 3 instances are in no" in err
    code, _, err = cli("import-results", str(write_json(tmp_path / "whole.json", SWE_REPORT)),
                       "--name", "swe", "--store", str(store.path))  # fmt: skip
    assert code == 0 and "total_instances is" not in err


def test_a_harbor_trial_whose_steps_are_graded_where_it_is_not_is_refused(
    store: Store, tmp_path: Path
) -> None:
    """Harbor aggregates a multi-step trial's step rewards into the trial's: a trial with
    graded steps and no reward of its own was read as never graded (invalid)."""
    steps = [
        {"step_name": "one", "verifier_result": {"rewards": {"reward": 1.0}},
         "agent_result": None, "exception_info": None},
    ]  # fmt: skip
    graded = trial("t", "t__a", None, agent_result=None, step_results=steps)
    err = store.refused(write_json(tmp_path / "result.json", graded))
    assert "step_results[0].verifier_result.rewards: a step is graded where the trial" in err


def test_a_cancelled_multi_step_trial_with_graded_steps_is_still_cancelled(tmp_path: Path) -> None:
    """The exception decides before any reward: a job stopped between steps keeps its
    cancelled trial (invalid), graded steps or not."""
    steps = [
        {"step_name": "one", "verifier_result": {"rewards": {"reward": 1.0}},
         "agent_result": None, "exception_info": None},
    ]  # fmt: skip
    stopped = trial("t", "t__a", None, "CancelledError", agent_result=None, step_results=steps)
    (row,) = read_rows(write_json(tmp_path / "result.json", stopped))
    assert row.terminal_reason == "environment_failure/cancelled"
