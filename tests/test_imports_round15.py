"""Other harnesses' result files, fifteenth round.

SWE-bench's older and finer reports: the 1.x model report (``swebench.metrics.report.
get_model_report``, lists that nest, by repository before April 2024), instances'
``report.json`` (``swebench.harness.grading.get_eval_report``), and the run report's
``infra_failure_ids`` (``swebench.harness.reporting.make_run_report``, 5.x); the fixtures
follow those writers.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import sys
from pathlib import Path
from typing import Any

import pytest

from groundstate.importers import ImportOptions, compressed, detect_format, read_rows
from groundstate.store import RunStore
from tests.test_imports_formats import EXPORTED, Store, cli, log, sample, write_eval, write_json

if sys.version_info >= (3, 14):
    from compression import zstd as zstd_codec
else:
    from backports import zstd as zstd_codec


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def outcomes(path: Path, errors: str = "agent") -> dict[str, str]:
    rows = read_rows(path, ImportOptions(errors=errors))  # type: ignore[arg-type]
    assert all(row.label == 1 for row in rows)
    return {row.task_id: row.terminal_reason for row in rows}


# --- SWE-bench 1.x model reports ---------------------------------------------------------------

LISTS_1X = ["no_generation", "generated", "with_logs", "install_fail", "reset_failed",
            "no_apply", "applied", "test_errored", "test_timeout", "resolved"]  # fmt: skip


def model_report(**held: tuple[str, ...]) -> dict[str, list[str]]:
    """A 1.x model report: each instance with the lists ``get_model_report`` put it in."""
    report: dict[str, list[str]] = {name: [] for name in LISTS_1X}
    for instance, names in held.items():
        for name in names:
            report[name].append(instance)
    return report


EVALUATED = ("generated", "with_logs")
MODEL_1X = model_report(
    a=(*EVALUATED, "applied", "resolved"),
    b=(*EVALUATED, "applied"),
    c=("no_generation",),
    d=(*EVALUATED, "no_apply"),
    e=(*EVALUATED, "install_fail"),
    f=(*EVALUATED, "reset_failed"),
    g=(*EVALUATED, "test_timeout"),
    h=(*EVALUATED, "test_errored", "applied", "resolved"),  # 1.x read its tests' output
    i=EVALUATED,  # a log, no test output read
    j=("generated",),  # never evaluated
)


@pytest.mark.parametrize("indent", [None, 4])
def test_a_swe_bench_1_model_report_is_imported(
    store: Store, tmp_path: Path, indent: int | None
) -> None:
    """It was refused ("does not read: convert it to the row format"): each instance is one
    attempt, decided by the first of its nested lists that says where it stopped."""
    path = tmp_path / "gpt-4.json"
    path.write_text(json.dumps(MODEL_1X, indent=indent))
    assert detect_format(path) == "swe-bench"
    agent = {
        "a": "success", "b": "agent_failure/unresolved", "c": "agent_failure/empty_patch",
        "d": "agent_failure/patch_not_applied", "e": "environment_failure/setup",
        "f": "environment_failure/reset", "g": "agent_failure/ungraded", "h": "success",
        "i": "agent_failure/crashed", "j": "agent_failure/crashed",
    }  # fmt: skip
    assert outcomes(path) == agent
    assert outcomes(path, "environment") == {
        **agent, "g": "grader_failure", "i": "environment_failure/harness_error",
        "j": "environment_failure/harness_error",
    }  # fmt: skip
    batch = store.imported(path)
    report = store.report(batch)
    assert report["success_rate"]["estimate"] == pytest.approx(2 / 8)  # e, f invalid
    with RunStore(store.path) as opened:
        (run,) = [r for r in opened.runs(batch) if r.task_id == "h"]
    assert run.infrastructure_status["origin"]["lists"] == [
        "resolved", "applied", "test_errored", "with_logs", "generated"
    ]  # fmt: skip


def test_a_swe_bench_1_report_by_repository_is_imported(store: Store, tmp_path: Path) -> None:
    """Before April 2024 ``get_model_report`` wrote the lists per repository, ``none`` for no
    patch: it was "cannot tell its format"."""
    report = {
        "django/django": {"none": ["d-1"], "generated": ["d-2", "d-3"],
                          "with_logs": ["d-2", "d-3"], "applied": ["d-2"], "resolved": ["d-2"]},
        "astropy/astropy": {"none": [], "generated": ["a-1"], "with_logs": [], "applied": [],
                            "resolved": [], "install_fail": []},
    }  # fmt: skip
    path = write_json(tmp_path / "old.json", report)
    assert outcomes(path) == {
        "d-1": "agent_failure/empty_patch", "d-2": "success", "d-3": "agent_failure/crashed",
        "a-1": "agent_failure/crashed",
    }  # fmt: skip
    report["astropy/astropy"]["applied"] = ["d-2"]
    err = store.refused(write_json(tmp_path / "twice.json", report))
    assert "twice.json:astropy/astropy.applied[0]: applied: instance 'd-2' is also listed at" in err


@pytest.mark.parametrize(
    ("held", "message"),
    [
        ({"x": ("no_generation", "generated")},
         "no_generation[0]: no_generation: instance 'x' has no patch and is also in generated"),
        ({"x": ("generated", "with_logs", "resolved")},
         "resolved[0]: resolved: instance 'x' is not in applied"),
        ({"x": ("with_logs",)}, "with_logs[0]: with_logs: instance 'x' is not in generated"),
        ({"x": ("generated", "generated")},
         "generated[1]: generated: instance 'x' is listed twice"),
    ],
)  # fmt: skip
def test_a_swe_bench_1_report_whose_lists_do_not_nest_is_refused(
    store: Store, tmp_path: Path, held: dict[str, tuple[str, ...]], message: str
) -> None:
    err = store.refused(write_json(tmp_path / "m.json", model_report(**held)))
    assert f"m.json:{message}" in err


def test_an_unknown_list_of_a_1x_report_is_named(tmp_path: Path) -> None:
    path = write_json(tmp_path / "m.json", {**MODEL_1X, "no_logs": ["j"]})
    code, _, err = cli("import-results", str(path), "--name", "x",
                       "--store", str(tmp_path / "s.db"))  # fmt: skip
    assert code == 0 and "lists no rule reads (no_logs)" in err


# --- SWE-bench instance reports ----------------------------------------------------------------


def instance(resolved: bool, applied: bool = True, **extra: Any) -> dict[str, Any]:
    """One instance's verdict as ``get_eval_report`` writes it."""
    return {"patch_is_None": False, "patch_exists": True, "patch_successfully_applied": applied,
            "resolved": resolved, "tests_status": {"FAIL_TO_PASS": {"success": [],
            "failure": []}}, **extra}  # fmt: skip


def test_swe_bench_instance_reports_are_imported(store: Store, tmp_path: Path) -> None:
    """An instance's ``report.json`` was refused ("does not read"). Tests whose output SWE-bench
    could not read are a grader's error; one it flags as an infrastructure failure is
    invalid with ``--errors environment``."""
    reports = {
        "a": instance(True), "b": instance(False),
        "c": {"patch_is_None": True, "patch_exists": False, "patch_successfully_applied": False,
              "resolved": False},
        "d": instance(False, applied=False),
        "e": instance(False, applied=False, infra_failure=True,
                      infra_failure_reason="out_of_memory"),
    }  # fmt: skip
    path = write_json(tmp_path / "report.json", reports)
    assert detect_format(path) == "swe-bench"
    assert outcomes(path) == {
        "a": "success", "b": "agent_failure/unresolved", "c": "agent_failure/empty_patch",
        "d": "agent_failure/ungraded", "e": "agent_failure/ungraded",
    }  # fmt: skip
    assert outcomes(path, "environment") == {
        "a": "success", "b": "agent_failure/unresolved", "c": "agent_failure/empty_patch",
        "d": "grader_failure", "e": "environment_failure/infrastructure",
    }  # fmt: skip
    (tmp_path / "one").mkdir()
    one = write_json(tmp_path / "one" / "report.json", {"django__django-1": instance(True)})
    assert store.runs(store.imported(one)) == {("django__django-1", 1, 0): ("success", None)}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"patch_exists": True, "tests_status": {}}, "x: resolved: required: true or false"),
        (instance("yes"), "x: resolved: must be true or false, got 'yes'"),  # type: ignore[arg-type]
        (instance(True, applied=False), "x: resolved: true, but patch_successfully_applied is"),
        (instance(True, patch_exists=False), "x: resolved: true for an instance without a patch"),
    ],
)  # fmt: skip
def test_a_malformed_instance_report_is_refused(
    store: Store, tmp_path: Path, entry: dict[str, Any], message: str
) -> None:
    err = store.refused(write_json(tmp_path / "r.json", {"x": entry}))
    assert f"r.json:{message}" in err


def test_an_instance_report_beside_something_else_is_refused(store: Store, tmp_path: Path) -> None:
    err = store.refused(write_json(tmp_path / "r.json", {"x": instance(True), "y": 3}))
    assert "r.json:y: must be an instance's report (an object), got 3" in err


# --- SWE-bench run reports flag infrastructure failures (5.x) -----------------------------------

RUN_5X = {
    "total_instances": 4, "submitted_instances": 4, "completed_instances": 3,
    "resolved_instances": 1, "unresolved_instances": 2, "infra_failure_instances": 2,
    "ambiguous_failure_instances": 1, "empty_patch_instances": 0, "error_instances": 1,
    "resolved_ids": ["a"], "unresolved_ids": ["b", "c"], "error_ids": ["d"],
    "infra_failure_ids": ["b", "d"], "ambiguous_failure_ids": ["c"],
    "failure_reasons": {"b": "out_of_memory", "c": "missing_module", "d": "container_unavailable"},
    "schema_version": 2,
}  # fmt: skip


def test_swe_bench_infrastructure_failures_follow_errors(store: Store, tmp_path: Path) -> None:
    """SWE-bench 5.x flags instances whose logs match a broken environment's signature
    (advisory: they stay in their list); the flag and its reason were dropped without a word.
    The logs hold the output of tests the patch runs, so the flag follows ``--errors``, and a
    warning counts them."""
    path = write_json(tmp_path / "run.json", RUN_5X)
    assert outcomes(path) == {
        "a": "success", "b": "agent_failure/unresolved", "c": "agent_failure/unresolved",
        "d": "agent_failure/crashed",
    }  # fmt: skip
    assert outcomes(path, "environment") == {
        "a": "success", "b": "environment_failure/infrastructure",
        "c": "agent_failure/unresolved", "d": "environment_failure/infrastructure",
    }  # fmt: skip
    code, _, err = cli("import-results", str(path), "--name", "x",
                       "--store", str(tmp_path / "s.db"))  # fmt: skip
    assert code == 0 and "2 instances SWE-bench flagged as likely infrastructure" in err
    (row,) = [r for r in read_rows(path) if r.task_id == "c"]
    assert row.origin == {"list": "unresolved_ids", "failure_reason": "missing_module"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"infra_failure_ids": ["a", "d"]},
         "infra_failure_ids[0]: infra_failure_ids: instance 'a' is in none of unresolved_ids"),
        ({"infra_failure_ids": ["b"]}, "infra_failure_instances: 2, but infra_failure_ids lists 1"),
        ({"ambiguous_failure_ids": "c"}, "ambiguous_failure_ids: must be a list of instance ids"),
    ],
)  # fmt: skip
def test_a_swe_bench_run_report_with_contradicting_flags_is_refused(
    store: Store, tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    assert message in store.refused(write_json(tmp_path / "run.json", {**RUN_5X, **change}))


# --- results kept compressed -------------------------------------------------------------------


def compress(kind: str, data: bytes) -> bytes:
    if kind == "zst":
        return zstd_codec.compress(data)
    module = {"gz": gzip, "bz2": bz2, "xz": lzma}[kind]
    return module.compress(data)  # type: ignore[no-any-return]


TAU = [{"task_id": 1, "reward": 1.0, "info": {}, "trial": 0},
       {"task_id": 1, "reward": 0.0, "info": {"error": "boom"}, "trial": 1}]  # fmt: skip
PLAIN = {
    "rows.csv": b"task_id,attempt,success\nt1,0,true\nt1,1,false\n",
    "rows.jsonl": b'{"task_id": "t1", "attempt": 0, "success": true}\n',
    "tau.json": json.dumps(TAU).encode(),
    "swe.json": json.dumps(RUN_5X).encode(),
    "log.json": json.dumps(log([sample(1, 1, {"m": {"value": "C"}})])).encode(),
}


@pytest.mark.parametrize("kind", ["gz", "bz2", "xz", "zst"])
@pytest.mark.parametrize("name", sorted(PLAIN))
@pytest.mark.parametrize("suffixed", [True, False])
def test_a_compressed_results_file_is_read_as_the_file_it_holds(
    store: Store, tmp_path: Path, kind: str, name: str, suffixed: bool
) -> None:
    """``results.json.gz`` was "cannot tell its format: give --format", and under the
    ``--format`` it holds "not UTF-8 text": no way to read it short of decompressing it."""
    plain = tmp_path / name
    plain.write_bytes(PLAIN[name])
    packed = tmp_path / "packed" / (f"{name}.{kind}" if suffixed else f"results.{kind}")
    packed.parent.mkdir()
    packed.write_bytes(compress(kind, PLAIN[name]))
    assert detect_format(packed) == detect_format(plain)
    assert store.runs(store.imported(packed)) == store.runs(store.imported(plain))


@pytest.mark.parametrize("name", ["rows.csv", "tau.json"])
def test_a_compressed_file_cut_short_is_named(store: Store, tmp_path: Path, name: str) -> None:
    body = PLAIN[name] if name == "tau.json" else b"task_id,attempt,success\n" + b"".join(
        b"t%d,0,true\n" % i for i in range(20000))  # fmt: skip
    packed = gzip.compress(body)
    path = tmp_path / f"{name}.gz"
    path.write_bytes(packed[: len(packed) - 12 if name == "tau.json" else len(packed) // 2])
    given = {"rows.csv": "csv", "tau.json": "tau-bench"}[name]
    for extra in ((), ("--format", given)):
        err = store.refused(path, *extra)
        assert "cannot read its gzip data (damaged or cut short?)" in err


def test_a_compressed_json_document_too_large_is_refused(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A few KiB of gzip can hold gigabytes (a decompression bomb): a document read whole is
    refused past the limit before more of it is read. (A τ-bench list is read result by
    result since the twenty-first round's second pass, each within its own limit, a SWE-bench
    report value by value since the twenty-third and a Harbor result since the
    twenty-fourth: a document of no format, read whole to tell its format, stands for one.)"""
    monkeypatch.setattr(compressed, "INFLATED_LIMIT", 1000)
    path = tmp_path / "result.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"what": "x" * 2000}, indent=2).encode()))
    err = store.refused(path)
    assert "over 0 MiB uncompressed: decompress it and give the file" in err


# --- a SWE-bench model's folder of logs ---------------------------------------------------------


def logs(root: Path, **reports: dict[str, Any] | None) -> Path:
    """``logs/run_evaluation/<run_id>/<model>/``: a folder per instance, its log, and its
    ``report.json`` (``get_eval_report``'s, indented as ``run_instance`` writes it) when given."""
    model = root / "logs" / "run_evaluation" / "run1" / "openai__gpt-4o"
    for instance, report in reports.items():
        folder = model / instance
        folder.mkdir(parents=True)
        (folder / "run_instance.log").write_text("Evaluation log\n")
        if report is not None:
            (folder / "report.json").write_text(json.dumps({instance: report}, indent=4))
    (model.parent / "run.json").write_text('{"dataset": "SWE-bench/SWE-bench_Lite"}')
    return model


def test_a_swe_bench_models_folder_of_logs_is_imported(store: Store, tmp_path: Path) -> None:
    """The folder SWE-bench leaves per model was "a folder, not a results file": each
    instance folder's ``report.json`` decides it, and one with a log and no report is an
    evaluation that raised (SWE-bench's ``error_ids``, by ``--errors``)."""
    model = logs(tmp_path, a=instance(True), b=instance(False), c=None)
    assert detect_format(model) == "swe-bench"
    assert outcomes(model) == {
        "a": "success", "b": "agent_failure/unresolved", "c": "agent_failure/crashed"
    }  # fmt: skip
    assert outcomes(model, "environment")["c"] == "environment_failure/harness_error"
    code, _, err = cli("import-results", str(model), "--name", "logs",
                         "--store", str(store.path))  # fmt: skip
    assert code == 0, err
    assert "an empty patch (which it does not run)" in err
    again = cli("import-results", str(model), "--name", "logs", "--store", str(store.path))
    assert "already imported" in again[1]
    err = store.refused(model.parent)
    assert "a folder per model: give one" in err and str(model) in err


def test_a_report_in_another_instances_folder_is_refused(store: Store, tmp_path: Path) -> None:
    model = logs(tmp_path, a=instance(True))
    (model / "b").mkdir()
    (model / "b" / "report.json").write_text(json.dumps({"a": instance(False)}))
    err = store.refused(model)
    assert "b/report.json: the report of 'b' holds ['a']" in err


# --- the SWE-bench leaderboard's files ----------------------------------------------------------


def test_a_leaderboard_per_instance_details_file_is_imported(store: Store, tmp_path: Path) -> None:
    """SWE-bench/experiments' ``per_instance_details.json`` (mini-SWE-agent's submissions:
    ``{instance_id: {cost, api_calls, resolved}}``) was "cannot tell its format"; its cost is
    each attempt's (not known where null)."""
    details = {"a__a-1": {"cost": 0.72, "api_calls": 32, "resolved": True},
               "b__b-2": {"cost": None, "api_calls": 3, "resolved": False}}  # fmt: skip
    path = write_json(tmp_path / "per_instance_details.json", details)
    assert detect_format(path) == "swe-bench"
    rows = read_rows(path)
    assert [(r.task_id, r.terminal_reason, r.cost) for r in rows] == [
        ("a__a-1", "success", 0.72),
        ("b__b-2", "agent_failure/unresolved", None),
    ]
    assert rows[0].origin == {"resolved": True, "api_calls": 32}
    details["b__b-2"]["cost"] = -1
    assert "b__b-2: cost: must not be negative" in store.refused(write_json(path, details))


@pytest.mark.parametrize("given", [(), ("--format", "swe-bench")])
def test_a_leaderboard_results_json_that_lists_only_the_resolved_is_refused(
    store: Store, tmp_path: Path, given: tuple[str, ...]
) -> None:
    """``results/results.json`` names the resolved instances and those without a patch or
    logs, never the unresolved: read as lists, every listed attempt but the empty ones would
    pass. It was "cannot tell its format" (and under ``--format swe-bench`` "no result rows"
    was one step away)."""
    results = {"no_generation": ["c"], "no_logs": ["d"], "resolved": ["a", "b"]}
    err = store.refused(write_json(tmp_path / "results.json", results), *given)
    assert "SWE-bench/experiments results.json" in err and "resolved instances only" in err


@pytest.mark.parametrize("name", ["run.eval.gz", "run.gz"])
def test_a_compressed_eval_archive_is_named(store: Store, tmp_path: Path, name: str) -> None:
    """It was "not a readable .eval archive (a zip file): truncated or damaged?"."""
    archive = write_eval(tmp_path / "run.eval", [sample(1, 1, {"m": {"value": "C"}})])
    path = tmp_path / name
    path.write_bytes(gzip.compress(archive.read_bytes()))
    assert "an .eval archive compressed with gzip: decompress it" in store.refused(path)


def test_instance_reports_one_per_line_are_read(store: Store, tmp_path: Path) -> None:
    """``jq -c . */report.json > reports.json`` gives a report per line: "not valid JSON: Extra
    data", under every format; the ``.jsonl`` name's error sent to ``--format swe-bench``,
    which gave the same."""
    lines = [{"a": instance(True)}, {"b": instance(False), "c": instance(False, applied=False)}]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    for name, given in (("reports.json", ()), ("reports.jsonl", ("--format", "swe-bench"))):
        path = tmp_path / name
        path.write_text(text)
        assert store.runs(store.imported(path, *given)) == {
            ("a", 1, 0): ("success", None),
            ("b", 1, 0): ("agent_failure/unresolved", None),
            ("c", 1, 0): ("agent_failure/ungraded", None),
        }
    path.write_text(text + json.dumps({"a": instance(False)}) + "\n")
    err = store.refused(path, "--format", "swe-bench")
    assert "reports.jsonl:3: a: the instance's report is also on line 1" in err


# --- a verdict a solver wrote into an Inspect sample's metadata ---------------------------------


@pytest.mark.parametrize("form", ["json", "eval"])
def test_a_solver_cannot_set_its_own_verdict_in_sample_metadata(tmp_path: Path, form: str) -> None:
    """Any Inspect log's sample carrying ``metadata.groundstate`` was read as our export's
    verdict, over its scorer's: a solver (the agent, in Inspect) can write ``state.metadata``,
    which Inspect logs as the sample's metadata, and so passed an ``I`` as a success. Only a
    log our export wrote (its eval's ``metadata.groundstate``) is read so now; elsewhere the
    key is ignored, with a warning."""
    claim = {"attempt": 1, "success": True, "terminal_reason": "success"}
    samples = [sample("a", 1, {"m": {"value": "I"}}, metadata={"groundstate": claim}),
               sample("b", 1, {"m": {"value": "C"}})]  # fmt: skip
    path = (
        write_json(tmp_path / "run.json", log(samples))
        if form == "json"
        else write_eval(tmp_path / "run.eval", samples)
    )
    assert outcomes(path) == {"a": "agent_failure/incorrect", "b": "success"}
    code, _, err = cli("import-results", str(path), "--name", "x",
                       "--store", str(tmp_path / "s.db"))  # fmt: skip
    assert code == 0 and "1 sample carries metadata.groundstate" in err and "ignored" in err
    exported = (
        write_json(tmp_path / "ours.json", log(samples, spec=EXPORTED))
        if form == "json"
        else write_eval(tmp_path / "ours.eval", samples, spec=EXPORTED)
    )
    assert outcomes(exported) == {"a": "success", "b": "success"}  # our export's, as kept


@pytest.mark.parametrize("given", ["csv", "inspect", "harbor"])
def test_a_folder_under_the_wrong_format_says_what_it_looks_like(
    store: Store, tmp_path: Path, given: str
) -> None:
    """A SWE-bench model's logs under another ``--format`` was "cannot read: Is a directory",
    with no word of the format that reads it."""
    err = store.refused(logs(tmp_path, a=instance(True)), "--format", given)
    assert "(the folder looks like a SWE-bench report: give --format swe-bench" in err
