"""The HTML pages of a batch that does not verify say so: an alert and the altered runs marked."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import markupsafe
import pytest

from groundstate.analysis import summarize_batch, tries
from groundstate.records import AgentRun
from groundstate.report.html import render_batch
from groundstate.store import BatchInfo, Problem, Verification

from .conftest import BANK, BANK_SYSTEM
from .test_store_integrity import _artifact, _batch, _flip_success, _in_order, _invoke

Stored = tuple[Path, BatchInfo, list[AgentRun]]


@pytest.fixture
def stored(tmp_path: Path) -> Stored:
    store = tmp_path / "runs.db"
    batch = _batch(store, attempts=3)
    return store, batch, _in_order(store, batch.batch_id)


def _page(*args: str, store: Path, code: int) -> str:
    out = store.parent / "page.html"
    got, stdout, stderr = _invoke(*args, "--html", str(out), "--store", str(store))
    assert got == code, stdout + stderr
    return out.read_text(encoding="utf-8")


def _alert(page: str) -> str:
    """The text of the integrity alert (its element and everything in it)."""
    found = re.search(r'<div class="alert altered" role="alert" id="integrity-alert">.*?\n</div>',
                      page, re.S)  # fmt: skip
    assert found, "no integrity alert"
    return found.group(0)


def _marked_runs(page: str) -> set[str]:
    """Run sections marked as altered."""
    return set(re.findall(r'<section class="run [a-z]+ altered" id="run-([0-9a-f-]+)"', page))


def test_report_html_names_each_problem_and_marks_the_altered_runs(stored: Stored) -> None:
    store, batch, runs = stored
    flipped, deleted = runs[2], runs[0]
    _flip_success(store, flipped)
    _artifact(store, deleted).unlink()
    page = _page("report", store=store, code=1)
    alert = _alert(page)
    assert page.index('id="integrity-alert"') < page.index('id="curves"')  # at the top
    assert f"run {flipped.run_id}: record altered" in alert
    assert f"run {deleted.run_id}: artifact trace.jsonl" in alert
    assert f"groundstate verify {batch.batch_id}" in alert
    assert _marked_runs(page) == {flipped.run_id, deleted.run_id}
    assert page.count('data-altered="true"') == 2
    assert len(re.findall(r'class="run-link [a-z]+ altered"', page)) == 2  # the task table's links


def test_a_clean_batch_has_no_alert_and_no_marked_run(stored: Stored) -> None:
    store, _, _ = stored
    page = _page("report", store=store, code=0)
    assert "integrity-alert" not in page and "ALTERED" not in page
    assert _marked_runs(page) == set() and "data-altered" not in page


def test_a_batch_wide_problem_raises_the_alert_without_marking_a_run(stored: Stored) -> None:
    store, batch, _ = stored
    with sqlite3.connect(store) as db:  # edit the batch record itself
        (text,) = db.execute("SELECT record FROM batches").fetchone()
        db.execute("UPDATE batches SET record = ?", (text.replace('"seed":0', '"seed":7'),))
    page = _page("report", store=store, code=1)
    assert f"batch {batch.batch_id}: batch record altered" in _alert(page)
    assert _marked_runs(page) == set()


def test_compare_html_names_the_batch_that_did_not_verify(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    a, b = _batch(store, attempts=1), _batch(store, attempts=1)
    page = _page("compare", a.batch_id, b.batch_id, store=store, code=0)
    assert "integrity-alert" not in page and "ALTERED" not in page
    victim = _in_order(store, b.batch_id)[0]
    _flip_success(store, victim)
    page = _page("compare", a.batch_id, b.batch_id, store=store, code=1)
    alert = _alert(page)
    assert f"records of batch b ({b.batch_id})" in alert
    assert f"run {victim.run_id}: record altered" in alert
    assert a.batch_id not in alert  # batch a verifies: not named


def test_run_html_of_a_resumed_batch_marks_its_altered_run(
    stored: Stored, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Validating the suite is not the subject here, and takes seconds: skip it.
    monkeypatch.setattr("groundstate.validation.require_valid", lambda *_, **__: [])
    store, batch, runs = stored
    _flip_success(store, runs[1])
    out = store.parent / "run.html"
    code, stdout, stderr = _invoke(
        "run", str(BANK), "--system", str(BANK_SYSTEM), "--resume", batch.batch_id,
        "--html", str(out), "--store", str(store),
    )  # fmt: skip
    assert code == 0, stdout + stderr
    page = out.read_text(encoding="utf-8")
    assert f"run {runs[1].run_id}: record altered" in _alert(page)
    assert _marked_runs(page) == {runs[1].run_id}


def test_problem_text_is_escaped(stored: Stored) -> None:
    _, batch, runs = stored
    hostile = '<script>alert("x")</script><b onclick=x>'
    check = Verification(
        batch_id=batch.batch_id,
        records=len(runs),
        artifacts=0,
        problems=[
            Problem(batch_id=batch.batch_id, run_id=runs[0].run_id, kind="record_altered",
                    detail=hostile),
            Problem(batch_id=batch.batch_id, kind="unverifiable", detail="1 records unverifiable"),
        ],
    )  # fmt: skip
    page = render_batch(batch, runs, summarize_batch(batch, runs), tries(batch, runs), check)
    assert hostile not in page and "<script>alert" not in page
    assert str(markupsafe.escape(hostile)) in _alert(page)
    assert "1 records unverifiable" in _alert(page)  # notes are listed with the problems
    assert _marked_runs(page) == {runs[0].run_id}


def test_only_unverifiable_rows_raise_no_alert(stored: Stored) -> None:
    _, batch, runs = stored
    check = Verification(
        batch_id=batch.batch_id,
        records=len(runs),
        artifacts=0,
        problems=[Problem(batch_id=batch.batch_id, kind="unverifiable", detail="old rows")],
    )
    page = render_batch(batch, runs, summarize_batch(batch, runs), tries(batch, runs), check)
    assert "integrity-alert" not in page and "data-altered" not in page
