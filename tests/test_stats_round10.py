"""Statistics audit, tenth round: what an outside re-computation found (docs/statistics.md)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from rich.console import Console

from groundstate.analysis import (
    OutcomeTable,
    batch_report,
    compare_batches,
    comparison_report,
)
from groundstate.gates import failure_line, gate_results, parse_gate
from groundstate.report.json_text import json_text
from groundstate.report.terminal import report_footer, summary_tables
from groundstate.stats import Outcome, compare
from groundstate.store import BatchInfo

Row = tuple[str, int, int, str, bool, float, float, float | None]


def batch_info(
    tasks: list[str], invalid: Sequence[str] = (), attempts: int = 2, batch_id: str = "b"
) -> BatchInfo:
    return BatchInfo(
        batch_id=batch_id, created_at=datetime.now(UTC), suite="s", suite_path="s",
        suite_hash="h", system_spec_hash="x", system_spec={}, attempts=attempts, seed=0,
        task_revisions=dict.fromkeys(tasks, 1), task_weights={}, task_slices={},
        invalid_tasks=list(invalid),
    )  # fmt: skip


def row(task: str, attempt: int, success: bool, *, retry: int = 0, reason: str = "") -> Row:
    reason = reason or ("success" if success else "agent_failure/incorrect_state")
    return (task, attempt, retry, reason, success, 1.0 + attempt, 2.0, None)


# --- (a) an unpaired comparison counts a shared task once -----------------------------------


def test_an_unpaired_difference_counts_a_task_in_both_batches_once() -> None:
    """Seven tasks a side, one (s) in both: the unpaired difference said n_tasks 14, counting
    s twice; the comparison is over 13 distinct tasks (its attempts are still all 28)."""
    a = [Outcome(f"a{i}", j, (i + j) % 3 == 0) for i in range(6) for j in range(2)]
    b = [Outcome(f"b{i}", j, (i + j) % 2 == 0) for i in range(6) for j in range(2)]
    a += [Outcome("s", j, True) for j in range(2)]
    b += [Outcome("s", j, False) for j in range(2)]
    found = compare(a, b, n_boot=10)
    assert found.mode == "unpaired"
    for d in found.differences:
        assert (d.a.n_tasks, d.b.n_tasks) == (7, 7)
        assert d.difference.n_tasks == 13 and d.difference.attempts == 28
    # disjoint batches: every task of each side
    disjoint = compare(a[:-2], b[:-2], n_boot=10).find("success_rate").difference
    assert disjoint.n_tasks == 12


# --- (b) tasks that failed validation are reported apart ------------------------------------

TASKS = [f"t{i}" for i in range(6)]


def rows_of(tasks: list[str]) -> list[Row]:
    """t0..t4 succeed on alternate attempts; t5 (the task that failed validation: its grader
    passes everything) succeeds every time, after an environment failure it reran."""
    rows = [row(t, a, (i + a) % 2 == 0) for i, t in enumerate(tasks) if t != "t5" for a in range(2)]
    if "t5" in tasks:
        rows += [row("t5", 0, True), row("t5", 1, True, retry=1)]
        rows += [row("t5", 1, False, reason="environment_failure/reset")]
    return rows


HEADLINE = ("n_tasks", "valid_attempts", "invalid_attempts", "terminal_reasons", "success_rate",
            "pass_at_k", "pass_hat_k", "partial_score", "invalid_as_failure", "k_limits",
            "tasks", "tries", "invalid_rate_flagged", "summary")  # fmt: skip


def test_tasks_that_failed_validation_are_left_out_of_every_figure_and_reported_apart() -> None:
    """With ``run --allow-invalid`` the task proved invalid counted in the headline: its 2/2
    lifted the success rate from 0.5 to 0.583 and passed a gate of 0.55. Every figure is now
    that of the batch without it, and its own results are given apart."""
    report = batch_report(batch_info(TASKS, ["t5"]), OutcomeTable.from_rows(rows_of(TASKS)))
    valid_tasks = TASKS[:5]
    reference = batch_report(batch_info(valid_tasks), OutcomeTable.from_rows(rows_of(valid_tasks)))
    for key in HEADLINE:
        assert report[key] == reference[key], key
    # recomputed by hand: five tasks at 1/2 each
    assert report["success_rate"]["estimate"] == 0.5 and report["n_tasks"] == 5
    assert report["tries"]["tries"] == 10 and report["tries"]["invalid_tries"] == 0
    assert report["invalid_tasks_run"] == ["t5"]
    # docs/statistics.md: revision is an int (it was the text "1")
    assert {t["revision"] for t in report["tasks"]} == {1}
    (apart,) = report["invalid_tasks_results"]
    assert apart["task_id"] == "t5" and apart["valid"] == {"n": 2, "c": 2, "partial": None,
                                                             "scored": 0}  # fmt: skip
    assert report["missing_attempts"] is None  # the batch is complete: t5 ran as planned
    (gate,) = gate_results([parse_gate("success_rate=0.55")], report)
    assert gate["passed"] is False and gate["value"] == 0.5
    footer = report_footer(report)
    assert "left out of every figure above" in footer
    assert "t5 2/2 valid attempts succeeded" in footer


def test_a_comparison_leaves_out_a_task_that_failed_validation_in_either_batch() -> None:
    a_tasks = [f"t{i}" for i in range(7)]
    b_rows = [row(t, j, True) for t in a_tasks for j in range(2)]
    a_rows = [row(t, j, j == 0) for t in a_tasks for j in range(2)]
    a, b = batch_info(a_tasks, batch_id="a"), batch_info(a_tasks, ["t6"], batch_id="b")
    found = compare_batches(a, OutcomeTable.from_rows(a_rows), b, OutcomeTable.from_rows(b_rows))
    kept = [t for t in a_tasks if t != "t6"]
    plain = compare_batches(
        batch_info(kept, batch_id="a"), OutcomeTable.from_rows(a_rows[:-2]),
        batch_info(kept, batch_id="b"), OutcomeTable.from_rows(b_rows[:-2]),
    )  # fmt: skip
    assert found.paired_tasks == plain.paired_tasks == tuple(kept)
    assert found.differences == plain.differences and found.per_task == plain.per_task
    assert any("left out of both sides: t6" in note for note in found.notes)
    data = comparison_report(a, b, found)
    assert data["invalid_tasks"] == ["t6"] and data["only_in_a"] == []


def test_a_batch_whose_every_task_failed_validation_reports_no_figure() -> None:
    """Nothing left to count: no estimate, no cost per attempt, strict JSON, every gate
    fails as unestimated, and the terminal prints it (a zero-attempt mean was NaN)."""
    report = batch_report(batch_info(["t5"], ["t5"]), OutcomeTable.from_rows(rows_of(["t5"])))
    json.loads(json_text(report), parse_constant=_refuse)
    assert report["n_tasks"] == 0 and report["success_rate"] is None
    assert report["pass_hat_k"] == {} and report["invalid_as_failure"]["success_rate"] is None
    assert report["summary"]["cost"] == {
        "total": 0.0, "mean": None, "median": None, "p90": None, "unknown": 0
    }  # fmt: skip
    assert report["summary"]["invalid"]["rate"] == 0.0
    assert report["invalid_tasks_results"][0]["strict"] == {"n": 2, "c": 2, "partial": None,
                                                            "scored": 0}  # fmt: skip
    (gate,) = gate_results([parse_gate("pass^1=0.1")], report)
    assert gate["passed"] is False and "could not be estimated" in failure_line(gate)
    console = Console(width=120, record=True)
    for table in summary_tables(report):
        console.print(table)
    console.print(report_footer(report))
    text = console.export_text()
    assert "pass^1: no task to count" in text and "mean n/a" in text and "n/as" not in text


def _refuse(constant: str) -> Any:
    raise ValueError(f"not strict JSON: {constant}")


def test_every_note_of_a_comparison_page_has_its_own_id_and_counts_in_good_grammar() -> None:
    """Every note was a ``<p id="mode-note">``: a comparison with two notes (unpaired, and a
    task that failed validation) had the id twice; "1 tasks of b" read as a typo."""
    from html.parser import HTMLParser

    from groundstate.report.html import render_comparison

    a_tasks = [f"a{i}" for i in range(5)] + ["bad"]
    a = batch_info(a_tasks, ["bad"], attempts=1, batch_id="a")
    b = batch_info(["b0"], attempts=1, batch_id="b")
    a_rows = [row(t, 0, t != "a0") for t in a_tasks]
    found = compare_batches(
        a, OutcomeTable.from_rows(a_rows), b, OutcomeTable.from_rows([row("b0", 0, True)]),
        allow_mismatch=True,
    )  # fmt: skip
    assert found.mode == "unpaired" and len(found.notes) == 2
    assert "5 tasks of a with 1 task of b with valid attempts" in found.notes[0]
    ids: list[str] = []

    class Ids(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            ids.extend(value for name, value in attrs if name == "id" and value)

    Ids().feed(render_comparison(a, b, found))
    assert len(ids) == len(set(ids))


def test_the_plan_of_a_pilot_leaves_out_its_tasks_that_failed_validation() -> None:
    """``groundstate plan`` reads a pilot through ``analysis.outcomes``, which counted the
    attempts of a task proved invalid in the pilot's variance components."""
    from pathlib import Path

    from groundstate.analysis import outcomes
    from groundstate.records import AgentRun

    golden = Path(__file__).parent / "golden" / "agent_run_v2.json"
    template = AgentRun.model_validate_json(golden.read_text())
    runs = [
        template.model_copy(update={"task_id": t, "attempt": a, "retry": 0})
        for t in ("good", "bad") for a in range(2)
    ]  # fmt: skip
    kept = outcomes(batch_info(["good", "bad"], ["bad"]), runs)
    assert [(o.task_id, o.attempt) for o in kept] == [("good", 0), ("good", 1)]
    assert len(outcomes(batch_info(["good", "bad"]), runs)) == 4


def test_a_gate_that_cannot_be_estimated_says_why() -> None:
    """``pass^2 could not be estimated (gate 0.5)`` left the user to find that one task had a
    single valid attempt (its other was an environment failure)."""
    rows = [row(t, a, True) for t in TASKS[:5] for a in range(2)]
    rows[-1] = row("t4", 1, False, reason="environment_failure/reset")
    report = batch_report(batch_info(TASKS[:5], attempts=2), OutcomeTable.from_rows(rows))
    (gate,) = gate_results([parse_gate("pass^2=0.5")], report)
    assert failure_line(gate) == (
        "pass^2 could not be estimated (gate 0.5): k stops at 1 in the valid view; tasks with "
        "fewer valid attempts: t4 (1)"
    )
    nothing = batch_report(batch_info(["t5"], ["t5"]), OutcomeTable.from_rows(rows_of(["t5"])))
    (gate,) = gate_results([parse_gate("success_rate=0.5")], nothing)
    assert failure_line(gate).endswith("(gate 0.5): no task has a valid attempt")


def test_the_html_page_of_a_batch_with_a_task_that_failed_validation_prints_the_json_figures() -> (
    None
):
    """The page's suite numbers, terminal reasons and cost are the JSON's, without the task
    that failed validation (the page computed its own from every run)."""
    import re
    import uuid
    from pathlib import Path

    from groundstate.analysis import summarize_batch, tries
    from groundstate.records import AgentRun
    from groundstate.report.html import render_batch

    golden = Path(__file__).parent / "golden" / "agent_run_v2.json"
    template = AgentRun.model_validate_json(golden.read_text())
    tasks = [f"t{i}" for i in range(6)] + ["bad"]
    runs = [
        template.model_copy(update={
            "run_id": uuid.uuid4().hex, "task_id": t, "attempt": a, "retry": 0,
            "success": ok, "terminal_reason": "success" if ok else "agent_failure/x",
            "partial_score": None, "cost": 1.0 + (t == "bad") * 100, "latency": 1.0,
        })
        for i, t in enumerate(tasks) for a in range(2)
        for ok in [t == "bad" or (i + a) % 3 == 0]
    ]  # fmt: skip
    info = batch_info(tasks, ["bad"])
    report = batch_report(info, runs)
    page = render_batch(info, runs, summarize_batch(info, runs), tries(info, runs))
    text = " ".join(re.sub(r"<[^>]+>", " ", page).split())
    rate = report["success_rate"]
    assert rate["n_tasks"] == 6 and rate["attempts"] == 12
    assert f"valid attempts only {rate['estimate']:.3f} [" in text
    assert re.search(rf"\] {rate['se']:.3f} 6 12 2 2 ", text)
    assert report["summary"]["cost"]["total"] == 12.0
    assert "Cost: total 12.0000" in text
    reasons = page[page.index('id="terminal-reasons"') : page.index('id="tasks"')]
    for reason, count in report["terminal_reasons"].items():
        assert f'<td>{reason}</td><td class="n">{count}</td>' in reasons
    assert sum(report["terminal_reasons"].values()) == 12
