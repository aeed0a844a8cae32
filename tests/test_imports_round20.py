"""Other harnesses' result files, twentieth round.

The class: a record a harness never writes (a field present but without what decides it, or
two fields that contradict each other) was read by the one field the reader looks at, so its
verdict was a guess the file does not support:

- an Inspect ``limit`` without its ``type`` (``{}``, ``{"type": null}``) was read as no limit,
  and the sample decided by the score of the state the limit left; an ``epoch`` of 0 or less
  (Inspect numbers epochs from 1) was read as an attempt shifted by one; a log with no samples
  (``--no-log-samples``) said only "no result rows";
- a τ-bench ``reward`` that disagrees with its own ``info.reward_info.reward``, or a reward of
  1 beside a failed ``r_actions`` / ``r_outputs`` check (``calculate_reward`` gives 1 only
  when every check passed), was decided by ``reward`` alone;
- a SWE-bench run report listing an instance in ``incomplete_ids`` (no prediction) and in an
  outcome list, or in ``completed_ids`` but in no list a completed evaluation ends in, was
  stored with that outcome while the warning said it had none;
- a plain JSON document of any size was read whole (a ``MemoryError`` traceback, or the
  process killed), as was a first line of any length when telling a row from a document.

Each is now refused in one line naming the file, the record and the field, storing nothing.
Controls: the writers' real shapes keep importing, and an audit recomputes the report's
figures from outcomes written down by hand.
"""

from __future__ import annotations

import json
from math import comb
from pathlib import Path
from typing import Any

import pytest

import groundstate.importers as importers
from groundstate.importers import compressed
from tests.test_imports_formats import (
    Store,
    log,
    reward_info,
    sample,
    tau,
    write_eval,
    write_json,
)
from tests.test_imports_round11 import SWE_REPORT
from tests.test_imports_round14 import tb_run, tb_trial
from tests.test_imports_tau2_versions import simulation


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _scored(value: Any) -> dict[str, Any]:
    return {"match": {"value": value}}


# --- Inspect: a limit without its type, an epoch below 1, a log without samples ---------------


@pytest.mark.parametrize("limit", [{}, {"type": None, "limit": 30}, {"type": 5}, {"type": " "}])
@pytest.mark.parametrize("kind", ["json", "eval"])
def test_an_inspect_limit_without_its_type_is_refused(
    store: Store, tmp_path: Path, limit: dict[str, Any], kind: str
) -> None:
    """Read as no limit, the sample a limit stopped passed on the score ``C`` of the state the
    limit left (Inspect still scores it)."""
    samples = [sample("a", 1, _scored("C")), sample("a", 2, _scored("C"), limit=limit)]
    if kind == "json":
        path = write_json(tmp_path / "log.json", log(samples))
        record = "log.json:samples[1]"
    else:
        path = write_eval(tmp_path / "log.eval", samples)
        record = "log.eval!samples/a_epoch_2.json"
    err = store.refused(path)
    assert f"{record}: limit.type: required: the kind of limit" in err


def test_an_inspect_limit_with_its_type_decides_before_the_score(
    store: Store, tmp_path: Path
) -> None:
    """Controls: a known limit type maps to its reason, an unknown one (a newer Inspect's) to
    ``agent_failure/limit`` with a note; neither is decided by the score."""
    samples = [
        sample("a", 1, _scored("C"), limit={"type": "message", "limit": 30}),
        sample("a", 2, _scored("C"), limit={"type": "working", "limit": 60}),
        sample("a", 3, _scored("C"), limit={"type": "future_kind", "limit": 1}),
        sample("a", 4, _scored("C")),
    ]
    batch = store.imported(write_json(tmp_path / "log.json", log(samples)))
    assert store.runs(batch) == {
        ("a", 1, 0): ("agent_failure/step_limit", None),
        ("a", 2, 0): ("agent_failure/time_limit", None),
        ("a", 3, 0): ("agent_failure/limit", None),
        ("a", 4, 0): ("success", None),
    }


@pytest.mark.parametrize("errors", [(), ("--errors", "environment")])
def test_an_inspect_sample_with_a_limit_and_a_later_error_ends_at_its_limit(
    store: Store, tmp_path: Path, errors: tuple[str, ...]
) -> None:
    """Inspect records a limit only when it ends the solvers; an error beside it came from
    scoring, after. Without events it was read as the solver's crash, by ``--errors``: with
    ``environment`` a token-limit failure became an invalid attempt, out of every
    denominator. The first stop decides. Control: a cancellation stays cancelled."""
    error = {"message": "RuntimeError('scorer')", "traceback": "", "traceback_ansi": ""}
    samples = [
        sample("a", 1, None, limit={"type": "token", "limit": 100}, error=error),
        sample("a", 2, None, error=error),
        sample("a", 3, None, limit={"type": "time", "limit": 60},
               error={**error, "message": "CancelledError()"}),
    ]  # fmt: skip
    batch = store.imported(write_json(tmp_path / "log.json", log(samples)), *errors)
    crashed = "environment_failure/harness_error" if errors else "agent_failure/crashed"
    assert store.runs(batch) == {
        ("a", 1, 0): ("agent_failure/budget", None),
        ("a", 2, 0): (crashed, None),
        ("a", 3, 0): ("environment_failure/cancelled", None),
    }


@pytest.mark.parametrize("epoch", [0, -1])
def test_an_inspect_epoch_below_one_is_refused(store: Store, tmp_path: Path, epoch: int) -> None:
    samples = [sample("a", epoch, _scored("C")), sample("a", epoch + 1, _scored("I"))]
    err = store.refused(write_json(tmp_path / "log.json", log(samples)))
    assert "log.json:samples[0]: epoch: must be 1 or more (Inspect numbers epochs from 1)" in err


@pytest.mark.parametrize("kind", ["json", "eval"])
def test_an_inspect_log_without_samples_says_so(store: Store, tmp_path: Path, kind: str) -> None:
    """``--no-log-samples`` writes the results and no sample: "no result rows" said nothing of
    why."""
    if kind == "json":
        path = write_json(tmp_path / "log.json", log([]))
    else:
        path = write_eval(tmp_path / "log.eval", [])
    err = store.refused(path)
    assert "samples: the log holds no samples (status 'success'): run with --no-log-samples" in err


# --- τ-bench: a reward its own checks contradict ----------------------------------------------


TAU_CONTRADICTIONS = [
    # (result, field named, what the message says)
    (tau(0, 1, 1.0, reward_info(0.0)), "reward", "1.0, but info.reward_info.reward is 0.0"),
    (tau(0, 1, 0.0, reward_info(1.0)), "reward", "0.0, but info.reward_info.reward is 1.0"),
    (
        tau(0, 1, 1.0, reward_info(1.0, r_actions=False, gt_data_hash="h")),
        "info.reward_info.info.r_actions", "False (a check that failed), but the reward is 1.0",
    ),
    (
        tau(0, 1, 1.0, reward_info(1.0, r_outputs=0.0, outputs={"42": False})),
        "info.reward_info.info.r_outputs", "0.0 (a check that failed), but the reward is 1.0",
    ),
    (  # the first run.py kept the checks at the top of info
        tau(0, 1, 1.0, {"r_actions": 0, "r_outputs": 1}),
        "info.r_actions", "0 (a check that failed), but the reward is 1.0",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("result", "field", "said"), TAU_CONTRADICTIONS)
def test_a_tau_bench_reward_its_checks_contradict_is_refused(
    store: Store, tmp_path: Path, result: dict[str, Any], field: str, said: str
) -> None:
    path = write_json(tmp_path / "tau.json", [tau(0, 0, 1.0, reward_info(1.0)), result])
    err = store.refused(path)
    assert f"tau.json:2: {field}: {said}" in err


def test_a_tau_bench_reward_its_checks_agree_with_imports(store: Store, tmp_path: Path) -> None:
    """Controls: a failure with a failed check keeps its sub-reason; a success whose checks
    passed (as bools, as 0/1 floats) imports; an attempt that raised is not checked (τ-bench
    scores it 0 whatever it holds)."""
    items = [
        tau(0, 0, 1.0, reward_info(1.0, r_actions=True, gt_data_hash="h")),
        tau(0, 1, 0.0, reward_info(0.0, r_actions=False, gt_data_hash="h")),
        tau(1, 0, 1.0, reward_info(1.0, r_outputs=1.0, outputs={"42": True})),
        tau(1, 1, 0.0, reward_info(0.0, r_outputs=0.0, outputs={"42": False})),
        tau(2, 0, 0.0, {"error": "ValueError('x')", "reward_info": {"reward": 1.0}}),
        tau(2, 1, 1.0, {"r_actions": 1.0}),
    ]
    batch = store.imported(write_json(tmp_path / "tau.json", items))
    assert store.runs(batch) == {
        ("0", 1, 0): ("success", None),
        ("0", 2, 0): ("agent_failure/incorrect_state", None),
        ("1", 1, 0): ("success", None),
        ("1", 2, 0): ("agent_failure/communication", None),
        ("2", 1, 0): ("agent_failure/crashed", None),
        ("2", 2, 0): ("success", None),
    }


# --- SWE-bench: lists that contradict each other ----------------------------------------------


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        ({"incomplete_ids": ["f__f-6", "a__a-1"]},
         "incomplete_ids[1]: incomplete_ids: instance 'a__a-1' is also in resolved_ids"),
        ({"incomplete_ids": ["e__e-5"]},
         "incomplete_ids[0]: incomplete_ids: instance 'e__e-5' is also in error_ids"),
        ({"completed_ids": ["a__a-1", "b__b-2", "d__d-4"]},
         "completed_ids[2]: completed_ids: instance 'd__d-4' is in none of resolved_ids, "
         "unresolved_ids, error_ids"),
        ({"completed_ids": ["a__a-1", "b__b-2", "z__z-9"]},
         "completed_ids[2]: completed_ids: instance 'z__z-9' is in none of"),
    ],
)  # fmt: skip
def test_a_swe_bench_report_whose_lists_contradict_is_refused(
    store: Store, tmp_path: Path, edit: dict[str, Any], said: str
) -> None:
    err = store.refused(write_json(tmp_path / "gpt-4o.run1.json", {**SWE_REPORT, **edit}))
    assert said in err


def test_a_swe_bench_report_as_make_run_report_writes_it_imports(
    store: Store, tmp_path: Path
) -> None:
    """Control: ``make_run_report``'s lists (``completed_ids`` = resolved and unresolved,
    ``incomplete_ids`` apart from every outcome) and a report without ``completed_ids``."""
    for name, report in (("full", SWE_REPORT), ("bare", {**SWE_REPORT, "completed_ids": None})):
        report = {k: v for k, v in report.items() if v is not None}
        batch = store.imported(write_json(tmp_path / f"{name}.json", report))
        assert store.runs(batch) == {
            ("a__a-1", 1, 0): ("success", None),
            ("b__b-2", 1, 0): ("success", None),
            ("c__c-3", 1, 0): ("agent_failure/unresolved", None),
            ("d__d-4", 1, 0): ("agent_failure/empty_patch", None),
            ("e__e-5", 1, 0): ("agent_failure/crashed", None),
        }


# --- Terminal-Bench: is_resolved against the tests it is computed from --------------------------


@pytest.mark.parametrize(
    ("resolved", "tests", "said"),
    [
        (True, {"test_a": "passed", "test_b": "failed"},
         "parser_results.test_b: 'failed', but is_resolved is true"),
        (False, {"test_a": "passed"}, "is_resolved: false, but the one test in parser_results"),
        (True, ["passed"], "parser_results: must be an object, got list"),
    ],
)  # fmt: skip
def test_a_terminal_bench_verdict_its_tests_contradict_is_refused(
    store: Store, tmp_path: Path, resolved: bool, tests: Any, said: str
) -> None:
    """Terminal-Bench's ``_is_resolved``: every test in ``parser_results`` passed. An edited
    ``is_resolved: true`` passed a trial whose tests failed."""
    trials = [tb_trial("h", 1, True), tb_trial("h", 2, resolved, parser_results=tests)]
    err = store.refused(write_json(tmp_path / "results.json", tb_run(trials)))
    assert f"results.json:results[1]: {said}" in err


@pytest.mark.parametrize(
    ("errors", "reason"),
    [((), "agent_failure/ungraded"), (("--errors", "environment"), "grader_failure")],
)
def test_a_terminal_bench_trial_resolved_without_test_results_is_ungraded(
    store: Store, tmp_path: Path, errors: tuple[str, ...], reason: str
) -> None:
    """Terminal-Bench calls a trial whose test output held no status line resolved (``all``
    over ``{}``); the system under test can bring that about (its output is the tests'), so
    it is no pass: the tests gave no verdict, which follows ``--errors``. Controls: tests that
    all passed, one that failed, and no ``parser_results`` at all (older files)."""
    trials = [
        tb_trial("h", 1, True, parser_results={}),
        tb_trial("h", 2, True, parser_results={"t": "passed"}),
        tb_trial("g", 1, False, parser_results={"t": "failed", "u": "passed"}),
        tb_trial("g", 2, True),
    ]
    batch = store.imported(write_json(tmp_path / "results.json", tb_run(trials)), *errors)
    assert store.runs(batch) == {
        ("h", 1, 0): (reason, None),
        ("h", 2, 0): ("success", None),
        ("g", 1, 0): ("agent_failure/incorrect", None),
        ("g", 2, 0): ("success", None),
    }


# --- size: a document is refused by its size, before it is read -------------------------------


def test_a_plain_json_document_too_large_is_refused_before_it_is_read(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compressed document had a limit; a plain one was read whole whatever its size (a
    5 GB report: a ``MemoryError`` traceback or a killed process). Since the twenty-first
    round's second pass an Inspect ``.json`` log is read sample by sample, under no such
    limit (``tests/test_imports2_round21.py``), since the twenty-third a SWE-bench report
    value by value, since the twenty-fourth a Harbor result, and since the twenty-fifth an
    instance's ``report.json`` in a SWE-bench model's folder of logs: a document of no format,
    read whole to tell its format, stands for one."""
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"what": "x" * 2000}, indent=2))
    monkeypatch.setattr(compressed, "INFLATED_LIMIT", 1000)
    err = store.refused(path)
    assert f"result.json: {path.stat().st_size} bytes, over the 0 MiB a JSON document" in err
    monkeypatch.setattr(compressed, "INFLATED_LIMIT", 1 << 30)
    assert "over the" not in store.refused(path)  # control: under the limit, refused otherwise


def test_a_long_first_line_is_read_no_further_than_the_limit(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Telling a row from a document read the whole first line; a document on one line past
    :data:`importers.LINE_LIMIT` is told by its reader (read whole under its own limit)."""
    sims = [simulation(f"s{i}", str(i % 3), i // 3) for i in range(9)]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"info": {}, "tasks": [], "simulations": sims}))  # one line
    monkeypatch.setattr(importers, "LINE_LIMIT", 100)
    batch = store.imported(path)
    assert len(store.runs(batch)) == 9


# --- audit: Inspect, an .eval archive with a missing epoch and dict scores ---------------------


def _pass_hat(outcomes: dict[str, list[bool]], k: int) -> float:
    return sum(comb(sum(o), k) / comb(len(o), k) for o in outcomes.values()) / len(outcomes)


def _pass_at(outcomes: dict[str, list[bool]], k: int) -> float:
    return sum(1 - comb(len(o) - sum(o), k) / comb(len(o), k) for o in outcomes.values()) / len(
        outcomes
    )


def test_an_inspect_archive_with_a_missing_epoch_gives_the_figures_its_samples_say(
    store: Store, tmp_path: Path
) -> None:
    """Three epochs; task ``b``'s epoch 2 missing (a member lost), one sample limited by
    tokens, one cancelled (invalid), one errored (counted), scores as ``{accuracy, f1}``
    dicts beside a second scorer, chosen with ``--scorer match.accuracy``; each valid outcome
    written down here, and the report's figures recomputed from them."""
    error = {"message": "RuntimeError('boom')", "traceback": "", "traceback_ansi": ""}
    cancelled = {**error, "message": "CancelledError()"}

    def scored(accuracy: float) -> dict[str, Any]:
        return {"match": {"value": {"accuracy": accuracy, "f1": 0.5}},
                "judge": {"value": "C"}}  # fmt: skip

    samples = [
        sample("a", 1, scored(1)), sample("a", 2, scored(0)), sample("a", 3, scored(1)),
        sample("b", 1, scored(1)), sample("b", 3, scored(1)),
        sample("ü/c", 1, scored(1), limit={"type": "token", "limit": 100}),
        sample("ü/c", 2, None, error=cancelled), sample("ü/c", 3, scored(1)),
        sample(4, 1, None, error=error), sample(4, 2, scored(1)), sample(4, 3, scored(0)),
    ]  # fmt: skip
    path = write_eval(tmp_path / "log.eval", samples)
    batch = store.imported(path, "--scorer", "match.accuracy")
    outcomes = {"a": [True, False, True], "b": [True, True], "ü/c": [False, True],
                "4": [False, True, False]}  # fmt: skip
    stored: dict[str, list[bool]] = {}
    for (task, _, _), (reason, _) in sorted(store.runs(batch).items()):
        if not reason.startswith(("environment_failure", "grader_failure")):
            stored.setdefault(task, []).append(reason == "success")
    assert stored == outcomes
    report = store.report(batch)
    assert (report["valid_attempts"], report["invalid_attempts"]) == (10, 1)
    assert report["success_rate"]["estimate"] == pytest.approx(
        sum(sum(o) / len(o) for o in outcomes.values()) / len(outcomes)
    )
    for k in (1, 2):
        assert report["pass_hat_k"][str(k)]["estimate"] == pytest.approx(_pass_hat(outcomes, k))
        assert report["pass_at_k"][str(k)]["estimate"] == pytest.approx(_pass_at(outcomes, k))
    assert all(int(k) <= 2 for k in report["pass_hat_k"])  # the fewest valid attempts
