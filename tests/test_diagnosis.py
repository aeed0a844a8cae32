"""Diagnosis: taxonomies, sampled failures, labels, their agreement, adjudication, regression."""

from __future__ import annotations

import csv
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.diagnosis import (
    EVALUATOR_DEFECT,
    LabelFileError,
    default_taxonomy,
    label_agreement,
    load_taxonomy,
    read_label_file,
    regrade,
    sample_failures,
    suite_taxonomy,
    verdict_agreement,
    write_sheet,
)
from groundstate.diagnosis.sampling import allocate
from groundstate.errors import GroundstateError, SpecError
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, plan_batch
from groundstate.spec.suite import Suite, load_suite
from groundstate.store import BatchInfo, RunLabels, RunStore
from groundstate.testing import run_solution, scripted_system
from groundstate.validation.regress import OBSERVED_ACCEPTABLE, regress

from .conftest import BANK, EditTask

TAXONOMY = default_taxonomy()


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def graded() -> dict[str, AgentRun]:
    """One graded run of each kind on the bank's transfer task (shared: grading is slow)."""
    suite = load_suite(BANK)
    return {
        name: run_solution(suite, "transfer", name)
        for name in ("oracle", "bad_no_pin", "bad_wrong_target")
    }


def _batch(suite: Suite, attempts: int, slices: dict[str, list[str]] | None = None) -> BatchInfo:
    batch = plan_batch(suite, scripted_system(), BatchConfig(attempts=attempts))
    return batch.model_copy(update={"task_slices": slices or batch.task_slices})


def _copy(run: AgentRun, batch: BatchInfo, attempt: int, **update: Any) -> AgentRun:
    fields = {"run_id": uuid.uuid4().hex, "batch_id": batch.batch_id, "attempt": attempt}
    return run.model_copy(update={**fields, **update})


def _stored_batch(
    store: Path, graded: dict[str, AgentRun], kinds: list[str]
) -> tuple[BatchInfo, list[AgentRun]]:
    """A batch of the bank suite whose attempt i is a copy of the graded run kinds[i]."""
    batch = _batch(load_suite(BANK), len(kinds))
    with RunStore(store) as runs:
        runs.add_batch(batch)
        stored = [runs.add_run(_copy(graded[k], batch, i + 1), {}) for i, k in enumerate(kinds)]
    return batch, stored


# --- taxonomy ---------------------------------------------------------------------------------


def test_default_taxonomy_is_the_chapters_list_plus_evaluator_defect() -> None:
    assert TAXONOMY.ids == [
        "perception", "planning", "tool_selection", "invalid_arguments",
        "policy_violation", "state_verification", "recovery", EVALUATOR_DEFECT,
    ]  # fmt: skip
    assert TAXONOMY.ref == "groundstate-default@1"
    assert all(label.description for label in TAXONOMY.labels)


def test_a_suite_taxonomy_file_replaces_the_default(tmp_path: Path) -> None:
    assert suite_taxonomy(tmp_path).ref == TAXONOMY.ref
    (tmp_path / "taxonomy.yaml").write_text(
        "name: retail\nversion: 3\nlabels:\n"
        "  - {id: wrong_order, description: picked another order}\n"
        "  - {id: evaluator_defect, description: the grader was wrong}\n"
    )
    assert suite_taxonomy(tmp_path).ref == "retail@3"


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ("  - {id: planning, description: x}\n", "must declare 'evaluator_defect'"),
        (
            "  - {id: evaluator_defect, description: x}\n"
            "  - {id: evaluator_defect, description: y}\n",
            "label ids repeat: evaluator_defect",
        ),
        ("  - {id: Bad Label, description: x}\n", r"labels\[0\]\.id: String should match pattern"),
    ],
)
def test_malformed_taxonomies_name_the_file_and_reason(
    tmp_path: Path, labels: str, message: str
) -> None:
    path = tmp_path / "taxonomy.yaml"
    path.write_text("name: t\nversion: 1\nlabels:\n" + labels)
    with pytest.raises(SpecError, match=message) as caught:
        load_taxonomy(path)
    assert str(path) in str(caught.value)


# --- sampling ---------------------------------------------------------------------------------


def test_allocation_gives_every_stratum_one_then_shares_by_size() -> None:
    sizes = {"big": 30, "mid": 8, "rare": 1, "small": 2}
    order = ["rare", "small", "mid", "big"]
    places = allocate(sizes, 10, order)
    # shares of 10: big 7.3, mid 1.95, small 0.5, rare 0.2; the two rare strata take a place
    # each first, then places go where the share is furthest from met
    assert places == {"big": 7, "mid": 1, "rare": 1, "small": 1}
    assert allocate(sizes, 11, order) == {"big": 7, "mid": 2, "rare": 1, "small": 1}
    assert sum(places.values()) == 10
    assert allocate(sizes, 100, order) == sizes  # never more than a stratum holds
    assert allocate(sizes, 2, order) == {"big": 1, "mid": 1, "rare": 0, "small": 0}


def test_sampling_is_stratified_seeded_and_skips_successes_and_invalid_runs(
    graded: dict[str, AgentRun],
) -> None:
    slices = {f"t{i}": ["rare"] if i == 0 else ["common"] for i in range(10)}
    # the tasks and attempts of its plan: only the tries a report counts are drawn
    plan = {"task_revisions": dict.fromkeys(slices, 1), "attempts": 6}
    batch = _batch(load_suite(BANK), 4, slices).model_copy(update=plan)
    runs = [
        _copy(graded["bad_wrong_target" if i else "bad_no_pin"], batch, a, task_id=f"t{i}")
        for i in range(10)
        for a in range(1, 5)
    ]
    runs += [_copy(graded["oracle"], batch, 5, task_id="t1")]
    runs += [_copy(graded["bad_no_pin"], batch, 6, task_id="t2", terminal_reason="grader_failure")]
    sample = sample_failures(batch, runs, 5, seed=3)
    assert len(sample) == 5
    assert all(not r.success and r.valid for r in sample)
    assert sum(r.task_id == "t0" for r in sample) == 1  # the rare stratum is represented
    assert [r.run_id for r in sample] == [r.run_id for r in sample_failures(batch, runs, 5, seed=3)]
    assert {r.run_id for r in sample} != {r.run_id for r in sample_failures(batch, runs, 5, seed=4)}
    assert len(sample_failures(batch, runs, 1000, seed=0)) == 40


def test_sampling_a_batch_without_failures_is_a_clear_error(graded: dict[str, AgentRun]) -> None:
    batch = _batch(load_suite(BANK), 1)
    with pytest.raises(GroundstateError, match="no valid failed runs"):
        sample_failures(batch, [_copy(graded["oracle"], batch, 1)], 3, seed=0)


def test_sheet_files_and_escaped_html(graded: dict[str, AgentRun], tmp_path: Path) -> None:
    batch = _batch(load_suite(BANK), 1)
    hostile = _copy(graded["bad_no_pin"], batch, 1, final_message="<script>alert(1)</script>")
    paths = write_sheet(tmp_path / "sheet", batch, [hostile], TAXONOMY)
    assert [p.name for p in paths] == ["sheet.csv", "sheet.jsonl", "sheet.html", "taxonomy.yaml"]
    html = paths[2].read_text()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "pin-first" in html and "transfer" in html  # the failed check and the trajectory
    assert html.index("pin-first") < html.index("passed checks</summary>")  # failed first
    (row,) = csv.DictReader(paths[0].read_text().splitlines())
    assert (row["run_id"], row["failed_checks"], row["labels"]) == (hostile.run_id, "pin-first", "")
    assert (
        json.loads(paths[1].read_text())["stratum"]
        == "agent_failure/constraint_violation | payments"
    )
    assert load_taxonomy(paths[3]).ref == TAXONOMY.ref
    with pytest.raises(GroundstateError, match="exists: choose another"):
        write_sheet(tmp_path / "sheet", batch, [hostile], TAXONOMY)


# --- label files ------------------------------------------------------------------------------


def _csv(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("run_id,labels,note\n" + "".join(f"{r},{labels},\n" for r, labels in rows))
    return path


def test_label_files_csv_and_jsonl(tmp_path: Path) -> None:
    rows = read_label_file(
        _csv(tmp_path / "a.csv", [("r1", "planning; recovery"), ("r2", "")]), TAXONOMY
    )
    assert [(r.run_id, r.labels, r.line) for r in rows] == [("r1", ("planning", "recovery"), 2)]
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text('{"run_id": "r1", "labels": ["perception"], "note": "misread"}\n\n')
    assert read_label_file(jsonl, TAXONOMY)[0].note == "misread"


@pytest.mark.parametrize(
    ("text", "suffix", "message"),
    [
        (
            "run_id,labels\nr1,planning\nr2,plannning\n",
            ".csv",
            r"a\.csv:3: label 'plannning' is not in taxonomy",
        ),
        (
            "run_id,labels\nr1,planning\nr1,recovery\n",
            ".csv",
            r"a\.csv:3: run r1 is labelled twice \(first on line 2\)",
        ),
        ("run_id,note\nr1,x\n", ".csv", r"a\.csv:1: missing column: labels"),
        ("run_id,labels\nr1,\n", ".csv", "no row has labels"),
        (
            '{"run_id": "r1", "labels": "planning"}\n',
            ".jsonl",
            r"a\.jsonl:1: labels must be a list",
        ),
        ('{"run_id": "r1", "labels": ["planning"]}\nnot json\n', ".jsonl", r"a\.jsonl:2: not JSON"),
        ("run_id,labels\nr1,planning;planning\n", ".csv", "a label is given twice"),
        ("x", ".yaml", r"expected a \.csv \(or \.tsv, \.txt\) or \.jsonl file"),
        ("PK", ".xlsx", "a spreadsheet workbook: save the sheet as CSV UTF-8"),
    ],
)
def test_malformed_label_files_name_file_and_line(
    tmp_path: Path, text: str, suffix: str, message: str
) -> None:
    path = tmp_path / f"a{suffix}"
    path.write_text(text)
    with pytest.raises(LabelFileError, match=message):
        read_label_file(path, TAXONOMY)


# --- the store --------------------------------------------------------------------------------


def _labels(run_id: str, annotator: str, labels: list[str], adjudicated: bool = False) -> RunLabels:
    return RunLabels(
        batch_id="b1", run_id=run_id, annotator=annotator, adjudicated=adjudicated,
        taxonomy=TAXONOMY.ref, labels=labels, created_at="2026-01-01T00:00:00Z",
    )  # fmt: skip


def test_stored_labels_keep_history_and_read_the_latest(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        store.add_labels([_labels("r1", "ann", ["planning"]), _labels("r1", "bob", ["recovery"])])
        store.add_labels([_labels("r1", "ann", ["perception"])])
        store.add_labels([_labels("r1", "carol", ["planning"], adjudicated=True)])
        store.add_labels([_labels("r1", "dave", [EVALUATOR_DEFECT], adjudicated=True)])
        current = store.labels("b1")
        assert [(x.annotator, x.labels) for x in current] == [
            ("ann", ["perception"]),
            ("bob", ["recovery"]),
        ]
        (final,) = store.labels("b1", adjudicated=True)
        assert (final.annotator, final.labels) == ("dave", [EVALUATOR_DEFECT])
        assert store.labels("other") == []
        rows = store._db.execute("SELECT COUNT(*) FROM labels").fetchone()[0]
    assert rows == 5  # append-only: superseded labels stay on record


def test_label_agreement_refuses_mixed_taxonomies_and_a_single_annotator() -> None:
    other = _labels("r2", "bob", ["planning"]).model_copy(update={"taxonomy": "retail@2"})
    with pytest.raises(GroundstateError, match="retail@2"):
        label_agreement([_labels("r1", "ann", ["planning"]), other], TAXONOMY)
    with pytest.raises(GroundstateError, match="at least two annotators"):
        label_agreement([_labels("r1", "ann", ["planning"])], TAXONOMY)


# --- the walk-through, through the CLI --------------------------------------------------------


def _fill(sheet: Path, name: str, labels: list[str]) -> Path:
    rows = list(csv.DictReader((sheet / "sheet.csv").read_text().splitlines()))
    path = sheet / f"{name}.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        for row, given in zip(rows, labels, strict=True):
            writer.writerow({**row, "labels": given})
    return path


def test_sample_label_twice_agree_adjudicate_and_regress(
    graded: dict[str, AgentRun], tmp_path: Path
) -> None:
    store = str(tmp_path / "runs.db")
    kinds = ["bad_no_pin", "bad_no_pin", "bad_wrong_target", "bad_wrong_target", "oracle"]
    batch, _ = _stored_batch(tmp_path / "runs.db", graded, kinds)
    sheet = tmp_path / "sheet"
    code, out, err = _invoke(
        "sample-failures",
        batch.batch_id,
        "--n",
        "4",
        "--seed",
        "1",
        "--out",
        str(sheet),
        "--store",
        store,
    )
    assert code == 0, err
    assert "sampled 4 of 4 valid failed runs" in out
    reasons = [
        r["terminal_reason"] for r in csv.DictReader((sheet / "sheet.csv").read_text().splitlines())
    ]
    assert (
        reasons
        == ["agent_failure/constraint_violation"] * 2 + ["agent_failure/incorrect_state"] * 2
    )

    ann = _fill(
        sheet,
        "ann",
        ["policy_violation", "policy_violation", "invalid_arguments", "invalid_arguments;planning"],
    )
    bob = _fill(
        sheet, "bob", ["policy_violation", "planning", "invalid_arguments", EVALUATOR_DEFECT]
    )
    for path, who in ((ann, "ann"), (bob, "bob")):
        code, out, err = _invoke(
            "labels", "import", str(path), "--annotator", who, "--store", store
        )
        assert (code, out.strip()) == (0, f"stored labels of 4 runs by {who!r}"), err

    code, out, _ = _invoke("labels", "agreement", batch.batch_id, "--json", "--store", store)
    result = json.loads(out)
    per_label = {x["label"]: x for x in result["per_label"]}
    policy = per_label["policy_violation"]["agreement"]
    # ann: yes yes no no, bob: yes no no no -> p_o 3/4, p_e 1/2*1/4 + 1/2*3/4 = 1/2 -> kappa 1/2,
    # over 4 runs: fewer than the 5 units a kappa needs, n/a with why (since round 34)
    assert policy["cohen_kappa"] is None and "Cohen's kappa (4 units)" in policy["note"]
    assert policy["percent_agreement"] == pytest.approx(0.75)
    assert result["annotators"] == ["ann", "bob"] and result["units"] == 4
    assert result["exact_set"]["percent_agreement"] == pytest.approx(2 / 4)
    code, table, _ = _invoke("labels", "agreement", batch.batch_id, "--store", store)
    assert code == 0 and "overall (pooled)" in table and "0.500 (4)" not in table
    assert "policy_violation: n/a: Cohen's kappa (4 units)" in table

    code, out, err = _invoke(
        "labels", "adjudicate", str(bob), "--adjudicator", "carol", "--store", store
    )
    assert code == 0, err
    assert "1 evaluator defect:" in out
    code, out, _ = _invoke("labels", "agreement", batch.batch_id, "--json", "--store", store)
    versus = json.loads(out)["against_adjudication"]
    assert versus["bob"]["percent_agreement"] == 1.0  # bob's sheet was adopted as final
    # ann differs from the final labels on 5 of 8 labels x 4 runs present/absent decisions
    assert versus["ann"]["percent_agreement"] == pytest.approx(27 / 32)
    into = tmp_path / "regressions"
    code, out, err = _invoke(
        "labels", "regress", batch.batch_id, "--into", str(into), "--store", store
    )
    assert code == 0, err
    (task_file,) = [Path(line) for line in out.split()]
    assert task_file.stem.startswith("transfer-defect-")
    regressed = load_suite(into)
    observed = regressed.solutions[task_file.stem][OBSERVED_ACCEPTABLE]
    assert observed.kind == "alternative"
    assert "evaluator-defect" in regressed.tasks[task_file.stem].slice_labels
    # red until the grader is repaired: the acceptable route still fails, the oracle passes
    assert not run_solution(regressed, task_file.stem, OBSERVED_ACCEPTABLE).success
    assert run_solution(regressed, task_file.stem, "oracle").success
    code, _, err = _invoke(
        "labels", "regress", batch.batch_id, "--into", str(into), "--store", store
    )
    assert code == 1 and "regressed already" in err


def test_label_import_errors_exit_2_with_one_line(
    graded: dict[str, AgentRun], tmp_path: Path
) -> None:
    store = str(tmp_path / "runs.db")
    _, stored = _stored_batch(tmp_path / "runs.db", graded, ["bad_no_pin"])
    lone = _csv(tmp_path / "lone.csv", [("r1", "planning")])
    code, _, err = _invoke("labels", "import", str(lone), "--annotator", "ann", "--store", store)
    assert code == 2 and "no taxonomy.yaml beside" in err
    (tmp_path / "taxonomy.yaml").write_text(yaml.safe_dump(TAXONOMY.model_dump()))
    code, _, err = _invoke("labels", "import", str(lone), "--annotator", "ann", "--store", store)
    assert (code, err.strip()) == (2, f"error: {lone}:2: no run r1 in the store")
    prefix = _csv(tmp_path / "prefix.csv", [(stored[0].run_id[:8], "planning")])
    code, _, err = _invoke("labels", "import", str(prefix), "--annotator", "ann", "--store", store)
    assert code == 2 and f"no run {stored[0].run_id[:8]} in the store" in err  # full ids only
    with RunStore(tmp_path / "runs.db") as runs:
        assert runs.labels(stored[0].batch_id) == []  # nothing stored from a failed import
    code, _, err = _invoke(
        "labels", "regress", stored[0].batch_id, "--into", str(tmp_path / "r"), "--store", store
    )
    assert code == 2 and "is adjudicated evaluator_defect" in err
    assert "Traceback" not in err


def test_regressing_a_defect_keeps_the_original_suite_untouched(
    graded: dict[str, AgentRun], tmp_path: Path
) -> None:
    suite = load_suite(BANK)
    run = _copy(graded["bad_no_pin"], _batch(suite, 1), 1)
    path = regress(run, suite, into=tmp_path / "r", evaluator_defect=True)
    text = path.read_text()
    assert (
        "Adjudicated as an evaluator defect" in text
        and "evaluator defect adjudicated on run" in text
    )
    assert not (BANK / "tasks" / path.name).exists()


# --- graders compared -------------------------------------------------------------------------


def test_verdict_agreement_pairs_attempts(graded: dict[str, AgentRun]) -> None:
    suite = load_suite(BANK)
    a_batch, b_batch = _batch(suite, 4), _batch(suite, 4)
    kinds_a = ["oracle", "oracle", "bad_no_pin", "bad_wrong_target"]
    kinds_b = ["oracle", "bad_no_pin", "bad_no_pin", "bad_no_pin"]
    a = [_copy(graded[k], a_batch, i + 1) for i, k in enumerate(kinds_a)]
    b = [_copy(graded[k], b_batch, i + 1) for i, k in enumerate(kinds_b)]
    same = verdict_agreement(a, a, "terminal_reason")
    assert same.agreement.cohen_kappa == pytest.approx(1.0) and same.disagreements == []
    on_success = verdict_agreement(a, b, "success")
    # A: T T F F, B: T F F F -> p_o 3/4, p_e 1/2*1/4 + 1/2*3/4 = 1/2
    assert on_success.agreement.cohen_kappa == pytest.approx(0.5)
    assert on_success.confusion == {"false": {"false": 2}, "true": {"false": 1, "true": 1}}
    reasons = verdict_agreement(a, b, "terminal_reason")
    assert [d["attempt"] for d in reasons.disagreements] == [2, 4]
    assert verdict_agreement(a, b[:2], "success").only_in_a == 2


def test_agreement_and_plan_commands(graded: dict[str, AgentRun], tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    a, _ = _stored_batch(tmp_path / "runs.db", graded, ["oracle", "bad_no_pin", "oracle"])
    b, _ = _stored_batch(tmp_path / "runs.db", graded, ["oracle", "bad_no_pin", "bad_no_pin"])
    code, out, err = _invoke("agreement", a.batch_id, b.batch_id, "--json", "--store", store)
    assert code == 0, err
    assert json.loads(out)["paired"] == 3
    code, out, _ = _invoke(
        "agreement", a.batch_id, b.batch_id, "--on", "reason_class", "--store", store
    )
    assert code == 0 and "disagree: transfer attempt 3" in out
    # one task only: planning needs two
    code, _, err = _invoke("plan", a.batch_id, "--store", store)
    assert code == 2 and "planning needs at least 2" in err
    code, _, err = _invoke("plan", a.batch_id, b.batch_id, a.batch_id, "--store", store)
    assert code == 2 and "one pilot batch or two" in err


def test_plan_command_on_imported_pilots(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    ids = []
    for name, shift in (("a", 0), ("b", 1)):
        rows = ["task_id,attempt,success"]
        rows += [
            f"t{t},{k},{int((t + k + shift) % 3 == 0)}" for t in range(12) for k in range(1, 5)
        ]
        path = tmp_path / f"{name}.csv"
        path.write_text("\n".join(rows) + "\n")
        code, out, err = _invoke("import-results", str(path), "--name", name, "--store", store)
        assert code == 0, err
        ids.append(out.split()[-1])
    code, out, err = _invoke("plan", *ids, "--delta", "0.1", "--json", "--store", store)
    assert code == 0, err
    data = json.loads(out)
    assert data["difference"]["paired_pilot"] is True
    assert len(data["components"]) == 2 and data["components"][0]["n_tasks"] == 12
    assert set(data["tasks_needed"]) >= {"1", "4"}
    code, out, _ = _invoke("plan", ids[0], "--store", store)
    assert code == 0 and "tasks needed to detect 0.05" in out and "add tasks" in out
    code, _, err = _invoke("plan", ids[0], "--delta", "0", "--store", store)
    assert code == 2 and "--delta must lie in (0, 1]" in err


def test_regrading_replays_the_same_behaviour_under_a_revised_grader(
    graded: dict[str, AgentRun], edited_bank: EditTask, tmp_path: Path
) -> None:
    suite = load_suite(BANK)
    batch = _batch(suite, 3)
    kinds = ["oracle", "bad_no_pin", "bad_wrong_target"]
    runs = [_copy(graded[k], batch, i + 1) for i, k in enumerate(kinds)]
    same = verdict_agreement(runs, regrade(runs, suite), "terminal_reason")
    assert same.agreement.percent_agreement == 1.0 and same.paired == 3

    def drop_pin_rule(task: dict[str, Any]) -> None:
        task["hard_process_constraints"] = [
            c for c in task["hard_process_constraints"] if c["id"] != "pin-first"
        ]
        task["partial_credit_rubric"] = [
            n for n in task["partial_credit_rubric"] if n.get("constraint") != "pin-first"
        ]

    revised = edited_bank(drop_pin_rule)
    regraded = regrade(runs, revised)
    assert regraded[0].grader_revision != runs[0].grader_revision
    changed = verdict_agreement(runs, regraded, "success")
    assert [(d["attempt"], d["a"], d["b"]) for d in changed.disagreements] == [
        (2, "false", "true")  # moving money without the PIN no longer fails
    ]


def test_agreement_command_regrades_or_compares_but_not_both(
    graded: dict[str, AgentRun], tmp_path: Path
) -> None:
    store = str(tmp_path / "runs.db")
    a, _ = _stored_batch(tmp_path / "runs.db", graded, ["oracle", "bad_no_pin"])
    code, out, err = _invoke(
        "agreement", a.batch_id, "--regrade", str(BANK), "--json", "--store", store
    )
    assert code == 0, err
    assert json.loads(out)["agreement"]["percent_agreement"] == 1.0
    code, _, err = _invoke("agreement", a.batch_id, "--store", store)
    assert code == 2 and "give BATCH_B or --regrade SUITE" in err
