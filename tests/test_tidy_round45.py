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
- A refusal quoting a value a user gave echoed all of it (a 5,000-digit ``--seed`` or
  ``--fail-under`` threshold, a tool name of 3,000 characters in ``check``): a run of more
  than 200 characters without a space is shown by its ends and its length.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.errors import shortened
from groundstate.report.numbers import flagged_text
from tests.cli_workspace import STORE, SYSTEM, assert_refused, digest, groundstate
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


# --- a refusal names a long value, it does not echo it -----------------------------------------

LONG = "9" * 5000


def _refusal(*args: str | Path) -> list[str]:
    """The refusal's ``error:`` lines (exit 2, no traceback)."""
    result = CliRunner().invoke(main, [str(arg) for arg in args])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert lines, result.output
    return lines


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["report", "--seed", LONG], "'--seed'"),
        (["compare", "a", "b", "--seed", "-" + LONG], "'--seed'"),
        (["report", "--fail-under", f"success_rate={LONG}"], "the threshold must be between"),
        (["report", "--fail-under", f"pass^2={LONG}"], "--fail-under 'pass^2="),
        (["report", "--fail-under", f"x{LONG}=0.5"], "expected METRIC=VALUE"),
        (["run", "retail", "--system", "s.yaml", "--seed", LONG], "'--seed'"),
    ],
    ids=["seed", "seed-negative", "threshold", "pass-hat", "metric", "run-seed"],
)
def test_a_long_value_is_named_by_its_ends_and_length(
    args: list[str], names: str, tmp_path: Path
) -> None:
    """Fails on the old code: the 5,000 digits were echoed whole."""
    (line,) = _refusal(*args, "--store", tmp_path / "s.db")
    assert names in line, line
    assert len(line) < 400, line
    assert "…(5,0" in line and " characters)…" in line, line
    assert "9" * 30 in line  # its first and last characters are shown
    assert not (tmp_path / "s.db").exists()


def test_a_suite_problem_quoting_a_long_value_is_shortened(retail_folder: Path) -> None:
    """Fails on the old code: ``check`` printed a tool name of 3,000 characters whole; the
    line still names the file, its line, the field and the reason."""
    name = "t" * 3000
    task = retail_folder / "tasks" / "refund-socks.yaml"
    task.write_text(task.read_text().replace("  - verify_identity\n", f"  - {name}\n"))
    result = CliRunner().invoke(main, ["check", str(retail_folder)])
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.stdout.splitlines() if "available_tools[0]" in line]
    assert re.fullmatch(
        r".*tasks/refund-socks\.yaml:19: available_tools\[0\]: 't{80}…\(3,000 characters\)…"
        r"t{30}' is not a tool of tools\.py",
        line,
    ), line


def test_a_long_value_in_a_library_refusal_is_shortened(copy: Path) -> None:
    """``run --task`` with a name of 3,000 characters: the library's refusal (through the one
    boundary every refusal passes) names it shortened, and the store is left alone."""
    before = digest(copy / STORE)
    outcome = groundstate(
        "run", "retail", "--system", SYSTEM, "--task", "x" * 3000, "--store", STORE, cwd=copy
    )
    assert_refused(outcome, "no task 'x", "(3,000 characters)")
    assert len(outcome.err) < 1000, outcome.err
    assert digest(copy / STORE) == before


@pytest.mark.parametrize(
    "text",
    [
        "a short value 'abc'",
        "/tmp/" + "d" * 185 + "/file.yaml: cannot read",  # a path of 200 characters: whole
        "x" * 200 + ":",
        "",
    ],
)
def test_what_is_not_long_is_shown_whole(text: str) -> None:
    """False-positive guard: a path or value of up to 200 characters is left as it is."""
    assert shortened(text) == text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("'" + "y" * 300 + "': why", "'" + "y" * 80 + "…(300 characters)…" + "y" * 30 + "': why"),
        ("(" + "z" * 201 + ").", "(" + "z" * 80 + "…(201 characters)…" + "z" * 30 + ")."),
        ("." * 10_000, "." * 80 + "…(9,997 characters)…" + "." * 33),
        ("a " + "b" * 300 + " c " + "d" * 300, None),
    ],
    ids=["quoted", "bracketed", "punctuation-only", "two-runs"],
)
def test_a_long_run_keeps_its_quotes_and_counts_its_characters(
    text: str, shown: str | None
) -> None:
    got = shortened(text)
    if shown is not None:
        assert got == shown
    else:
        assert got.startswith("a " + "b" * 80 + "…(300 characters)…")
        assert got.endswith(" c " + "d" * 80 + "…(300 characters)…" + "d" * 30)


def test_check_names_file_line_field_and_reason_for_each_field_problem(
    retail_folder: Path,
) -> None:
    """``check``'s format, one line per problem: ``file:line: field: reason`` for a problem
    of a field (a whole-file problem, such as YAML that does not parse, has no field)."""
    task = retail_folder / "tasks" / "refund-socks.yaml"
    text = task.read_text().replace("task_revision: 1", "task_revision: one")
    task.write_text(text.replace("time_limit: 60", "time_limit: 60\nbogus: 1"))
    (retail_folder / "tasks" / "broken.yaml").write_text("a: [\n")
    result = CliRunner().invoke(main, ["check", str(retail_folder)])
    assert result.exit_code == 2, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 3, lines
    field = re.compile(r"(?P<file>\S+\.yaml):(?P<line>\d+): (?P<field>[\w.\[\]]+): (?P<why>.+)")
    found = {m["field"]: m for m in map(field.fullmatch, lines) if m}
    assert set(found) == {"task_revision", "bogus"}, lines
    assert found["task_revision"]["file"].endswith("tasks/refund-socks.yaml")
    assert found["task_revision"]["line"] == "3"
    assert found["bogus"]["why"] == "unknown field"
    (whole,) = [line for line in lines if "broken.yaml" in line]
    assert re.fullmatch(r"\S+/tasks/broken\.yaml:2: invalid YAML: .+", whole), whole
