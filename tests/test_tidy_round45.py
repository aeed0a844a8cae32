"""Tidy-up, forty-fifth round: what ``compare`` says of each side's denominators, one wording
of the invalid-try flag, and refusals quoting a long value.

- ``compare``'s note of a side's denominators (valid and invalid attempts counted, tries in
  all) counted the whole batch, while the comparison was over the tasks both ran: a batch of
  7 tasks compared on the 5 it shares with the other stated the invalid tries of the 2 it
  was not compared on. It counts the compared tasks now, and says so when they are not all.
- The HTML report's invalid-try alert had its own wording ("Invalid attempts exceed 10.0% of
  tries: 21 of 209 tries (10.05%) ended ..."): it says what the terminal's FLAGGED line and
  ``compare``'s note say (``report.numbers.flagged_text``).
- ``compare`` exits 0 on a flagged side, as ``report`` does without ``--fail-under``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groundstate.report.numbers import flagged_text
from tests.test_stats_independent import cli, import_text
from tests.test_stats_views import html_tables, text_report

HEADER = "task_id,attempt,retry,success,terminal_reason\n"


def _rows(tasks: dict[str, list[str]]) -> str:
    """One attempt per end listed, each end one try (``env`` an environment failure, rerun
    once and then a success: two tries, the counted one valid)."""
    lines = []
    for task, ends in tasks.items():
        for attempt, end in enumerate(ends):
            if end == "env":
                lines.append(f"{task},{attempt},0,false,environment_failure")
                lines.append(f"{task},{attempt},1,true,success")
            elif end == "lost":
                lines.append(f"{task},{attempt},0,false,environment_failure")
            else:
                lines.append(f"{task},{attempt},0,{str(end == 'ok').lower()},"
                             f"{'success' if end == 'ok' else 'agent_failure'}")  # fmt: skip
    return HEADER + "\n".join(lines) + "\n"


def _compare(tmp: Path, a: dict[str, list[str]], b: dict[str, list[str]]) -> dict[str, Any]:
    ids = import_text(tmp, _rows(a), "a"), import_text(tmp, _rows(b), "b")
    code, out, err = cli("compare", *ids, "--json", "--store", str(tmp / "s.db"))
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


SHARED = {f"t{i}": ["ok", "fail", "ok"] for i in range(5)}


def _note(data: dict[str, Any], side: str) -> list[str]:
    batch = data[f"batch_{side}"]
    return [n for n in data["notes"] if n.startswith(f"{side} ({batch}): ") and "tries in" in n]


def test_a_sides_denominators_are_of_the_tasks_compared(tmp_path: Path) -> None:
    """Fails on the old code: a's note counted the 2 tasks b never ran (their 3 lost
    attempts and 4 tries)."""
    a = {**SHARED, "t0": ["ok", "env", "lost"], "t5": ["lost", "lost"], "t6": ["env"]}
    data = _compare(tmp_path, a, SHARED)
    assert data["mode"] == "paired" and len(data["paired_tasks"]) == 5
    (note,) = _note(data, "a")
    # t0-t4: 15 attempts, 1 lost; 16 tries (t0's env rerun), 2 invalid
    assert "on 5 of its 7 tasks (those compared): 14 valid and 1 invalid attempt counted" in note
    assert "16 tries in all, 2 invalid (12.5%)" in note
    assert not _note(data, "b")


def test_a_side_invalid_only_outside_the_compared_tasks_gets_no_denominators_note(
    tmp_path: Path,
) -> None:
    """Fails on the old code: "3 invalid attempts counted" though none was compared."""
    a = {**SHARED, "t5": ["lost", "lost", "lost"]}
    data = _compare(tmp_path, a, SHARED)
    assert not _note(data, "a")
    # the batch's flag is the batch's (its declared threshold is over every try of it)
    assert data["invalid_rate_flagged_a"] is True
    assert data["tries_a"]["invalid_tries"] == 3


def test_a_side_compared_on_all_its_tasks_reads_as_before(tmp_path: Path) -> None:
    """False-positive guard: no "of its N tasks" when every task is compared."""
    a = {**SHARED, "t1": ["lost", "ok", "env"]}
    data = _compare(tmp_path, a, SHARED)
    (note,) = _note(data, "a")
    batch = data["batch_a"]
    assert note.startswith(f"a ({batch}): 14 valid and 1 invalid attempt counted; ")
    assert "16 tries in all, 2 invalid (12.5%)" in note and "those compared" not in note


def test_an_unpaired_comparison_counts_each_sides_own_tasks(tmp_path: Path) -> None:
    """Unpaired (fewer than 5 shared tasks): each side's figures are over all its tasks, so
    its note is of all of them."""
    a = {f"a{i}": ["ok", "lost"] for i in range(5)}
    b = {f"b{i}": ["ok", "fail"] for i in range(5)}
    data = _compare(tmp_path, a, b)
    assert data["mode"] == "unpaired"
    (note,) = _note(data, "a")
    assert "5 valid and 5 invalid attempts counted" in note and "those compared" not in note


def test_the_html_alert_words_the_flag_as_the_terminal_does(tmp_path: Path) -> None:
    """Fails on the old code: the HTML alert had its own sentence."""
    rows = {f"t{i}": ["ok", "lost", "ok", "ok"] for i in range(5)}
    batch = import_text(tmp_path, _rows(rows), "a")
    code, out, err = cli("report", batch, "--json", "--store", str(tmp_path / "s.db"))
    data = json.loads(out)
    assert data["invalid_rate_flagged"] is True
    said = flagged_text(data["tries"])
    assert said == "invalid tries exceed the batch's declared threshold (5 of 20: 25.0% > 10.0%)"
    assert f"FLAGGED: {said}" in " ".join(text_report(tmp_path / "s.db", batch).split())
    page = tmp_path / "r.html"
    code, _, err = cli("report", batch, "--store", str(tmp_path / "s.db"), "--html", str(page))
    assert code == 0, err
    alert = " ".join(html_tables(page).alerts["invalid-alert"].split())
    assert said in alert


@pytest.mark.parametrize("flagged_side", ["a", "b"])
def test_compare_exits_0_on_a_flagged_side_as_report_does_without_a_gate(
    tmp_path: Path, flagged_side: str
) -> None:
    """The convention pinned: a flag is a note, not an exit status, without a gate."""
    flagged = {f"t{i}": ["ok", "lost"] for i in range(5)}
    a, b = (flagged, SHARED) if flagged_side == "a" else (SHARED, flagged)
    data = _compare(tmp_path, a, b)  # asserts exit 0
    assert data[f"invalid_rate_flagged_{flagged_side}"] is True
    batch = data[f"batch_{flagged_side}"]
    assert any(n.startswith(f"{flagged_side} ({batch}) FLAGGED: ") for n in data["notes"])
    code, _, _ = cli("report", batch, "--store", str(tmp_path / "s.db"))
    assert code == 0
