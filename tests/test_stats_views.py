"""Every figure as a user sees it, recomputed from the stored records and found the same in
every view: `report --json`, the terminal report, the HTML report (parsed), and `compare`.

tests/test_stats_independent.py checks the JSON numbers against a reference; this file
checks that the terminal and HTML reports print those numbers, with the denominators they
were computed over, for batches whose shape makes denominators differ between figures:
tasks with different attempt counts, a task whose every attempt was invalid, reruns, and an
unfinished batch.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import signal
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from html.parser import HTMLParser
from math import comb
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.store import RunStore
from tests.test_stats_independent import cli, import_text, report

# t1: three valid attempts; t2: one attempt rerun after an environment failure; t3: every
# attempt invalid; t4: one attempt. Slice "b" holds t2, t3; slice "c" t3 only.
ROWS = """task_id,attempt,retry,success,terminal_reason,cost,latency,slice_labels
t1,0,0,1,,0.01,1.0,a
t1,1,0,0,,0.02,2.0,a
t1,2,0,1,,0.03,3.0,a
t2,0,0,0,,0.5,10,b
t2,1,0,0,environment_failure,0.1,1,b
t2,1,1,1,,0.2,2,b
t3,0,0,0,environment_failure,0.1,1,b;c
t3,1,0,0,grader_failure,0.1,1,b;c
t4,0,0,1,,0.0004,0.5,a
"""


# --- the reference, from the stored records only ---------------------------------------------


def counted_tries(store: Path, batch: str) -> tuple[list[Any], list[Any]]:
    """Every stored try, and the try that counts for each attempt (its last)."""
    with RunStore(store) as runs:
        stored = runs.runs(batch)
    last: dict[tuple[str, int], Any] = {}
    for run in sorted(stored, key=lambda r: r.retry):
        last[(run.task_id, run.attempt)] = run
    return stored, list(last.values())


def per_task(counted: list[Any], view: str) -> dict[str, tuple[int, int]]:
    """(n, c) per task: valid attempts only, or every attempt with invalid ones failed."""
    cells: dict[str, tuple[int, int]] = {}
    for run in counted:
        if view == "valid" and not run.valid:
            cells.setdefault(run.task_id, (0, 0))
            continue
        n, c = cells.get(run.task_id, (0, 0))
        cells[run.task_id] = (n + 1, c + int(run.valid and run.success))
    return {t: nc for t, nc in cells.items() if nc[0]}


def suite_value(cells: dict[str, tuple[int, int]], k: int, kind: str) -> Fraction:
    """The equal-weight mean of the per-task unbiased estimators, as exact rationals."""
    values = [
        1 - Fraction(comb(n - c, k), comb(n, k))
        if kind == "at"
        else Fraction(comb(c, k), comb(n, k))
        for n, c in cells.values()
    ]
    return sum(values, Fraction(0)) / len(values)


# --- reading the views -----------------------------------------------------------------------


class Tables(HTMLParser):
    """Each table's rows as cell texts, under the id of the section holding it."""

    def __init__(self) -> None:
        super().__init__()
        self.section = ""
        self.tables: dict[str, list[list[list[str]]]] = {}
        self.titles: list[str] = []
        self.alerts: dict[str, str] = {}
        self.sub = ""
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._alert: str | None = None
        self._in_sub = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "section":
            self.section = a.get("id") or ""
        elif tag == "table":
            self.tables.setdefault(self.section, []).append([])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
            if a.get("title"):
                self.titles.append(a["title"] or "")
        elif tag == "div" and a.get("class") == "alert":
            self._alert = a.get("id") or ""
            self.alerts[self._alert] = ""
        elif tag == "p" and a.get("class") == "sub":
            self._in_sub = True

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[self.section][-1].append(self._row)
            self._row = None
        elif tag == "div":
            self._alert = None
        elif tag == "p":
            self._in_sub = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._alert is not None:
            self.alerts[self._alert] += data
        if self._in_sub:
            self.sub += data


def html_tables(path: Path) -> Tables:
    parser = Tables()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def text_report(store: Path, batch: str) -> str:
    code, out, err = cli("report", batch, "--store", str(store))
    assert code == 0, err
    return out


def rows_of(text: str) -> list[list[str]]:
    """The cells of every boxed table row of the terminal report."""
    return [
        [cell.strip() for cell in line.strip("│").split("│")]
        for line in text.splitlines()
        if line.startswith("│")
    ]


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("views")
    batch_id = import_text(tmp, ROWS)
    return tmp, batch_id, report(tmp, batch_id)


# --- the tests -------------------------------------------------------------------------------


def test_the_json_figures_are_the_stored_records_recomputed(
    batch: tuple[Path, str, dict[str, Any]],
) -> None:
    tmp, batch_id, got = batch
    stored, counted = counted_tries(tmp / "s.db", batch_id)
    valid, strict = per_task(counted, "valid"), per_task(counted, "strict")
    assert (got["n_tasks"], got["invalid_as_failure"]["success_rate"]["n_tasks"]) == (3, 4)
    for cells, view in ((valid, got), (strict, got["invalid_as_failure"])):
        kmax = min(n for n, _ in cells.values())
        assert sorted(view["pass_at_k"]) == [str(k) for k in range(1, kmax + 1)]
        for k in range(1, kmax + 1):
            assert view["pass_at_k"][str(k)]["estimate"] == float(suite_value(cells, k, "at"))
            assert view["pass_hat_k"][str(k)]["estimate"] == float(suite_value(cells, k, "hat"))
        assert view["success_rate"]["attempts"] == sum(n for n, _ in cells.values())
    costs = np.array([r.cost for r in counted])
    summary = got["summary"]
    assert summary["cost"]["total"] == pytest.approx(math.fsum(costs))
    assert summary["cost"]["median"] == pytest.approx(float(np.median(costs)))
    assert summary["cost"]["p90"] == pytest.approx(float(np.percentile(costs, 90)))
    assert summary["cost_per_success"] == pytest.approx(
        math.fsum(costs) / sum(r.success for r in counted)
    )
    assert got["tries"]["cost"] == pytest.approx(math.fsum(r.cost for r in stored))
    assert got["tries"]["tries"] == len(stored) == 9


def test_the_terminal_report_prints_the_json_figures_with_their_denominators(
    batch: tuple[Path, str, dict[str, Any]],
) -> None:
    tmp, batch_id, got = batch
    text = text_report(tmp / "s.db", batch_id)
    rows = rows_of(text)
    suite = {r[0]: r for r in rows if r[0] in ("valid attempts", "invalid = failure")}
    for name, view in (("valid attempts", got), ("invalid = failure", got["invalid_as_failure"])):
        rate = view["success_rate"]
        assert suite[name][1] == f"{rate['estimate']:.3f}"
        assert suite[name][4:6] == [str(rate["n_tasks"]), str(rate["attempts"])]
    curve = {r[0]: r for r in rows if r[0].isdigit() and len(r) == 6}
    for k, at_k in got["pass_at_k"].items():
        hat_k = got["pass_hat_k"][k]
        assert (
            curve[k][1] == f"{at_k['estimate']:.3f}" and curve[k][3] == f"{hat_k['estimate']:.3f}"
        )
        assert curve[k][5] == str(at_k["n_tasks"])
    # A slice's tasks are those its figures count: slice c's only task has no valid attempt.
    slices = {(r[0], r[1]): r for r in rows if r[0] in ("label", "horizon")}
    labels = got["summary"]["views"]["valid"]["by_label"]
    for name, part in labels.items():
        rate = part["success_rate"]
        shown = slices["label", name]
        counted = (rate or {"n_tasks": 0})["n_tasks"]
        assert counted == part["n_tasks"] - len(part["excluded_tasks"])
        expected = str(counted) if counted == part["n_tasks"] else f"{counted} of {part['n_tasks']}"
        assert shown[2] == expected
    assert slices["label", "b"][2] == "1 of 2" and slices["horizon", "unknown"][2] == "3 of 4"
    assert slices["label", "c"][3] == "no valid attempts"
    # The headline states each view's own denominators.
    flat = " ".join(text.split())
    valid, strict = got["pass_hat_k"]["1"], got["invalid_as_failure"]["success_rate"]
    assert (
        f"over {valid['n_tasks']} tasks, {valid['attempts']} attempts (valid attempts only)" in flat
    )
    assert (
        f"{strict['estimate']:.3f} ({strict['note']}) over {strict['n_tasks']} tasks, "
        f"{strict['attempts']} attempts, counting {got['invalid_attempts']} invalid attempts"
    ) in flat
    # The per-task table's invalid column counts tries, and says so.
    assert "invalid" in text and "tries" in text.split("terminal reasons")[0]


def test_the_html_report_prints_the_json_figures_with_their_denominators(
    batch: tuple[Path, str, dict[str, Any]],
) -> None:
    tmp, batch_id, got = batch
    page = tmp / "r.html"
    code, _, err = cli("report", batch_id, "--store", str(tmp / "s.db"), "--html", str(page))
    assert code == 0, err
    parsed = html_tables(page)
    suite = parsed.tables["suite-numbers"]
    headline = {row[0]: row for row in suite[0][1:]}
    for title, view in (
        ("valid attempts only", got),
        ("invalid attempts count as failures", got["invalid_as_failure"]),
    ):
        rate = view["success_rate"]
        row = headline[title]
        assert row[1].split()[0] == f"{rate['estimate']:.3f}"
        assert row[3:7] == [str(rate[f]) for f in ("n_tasks", "attempts", "min_n", "max_n")]
    for table, view in zip(suite[1:], (got, got["invalid_as_failure"]), strict=True):
        body = {row[0]: row for row in table[1:]}
        for k, at_k in view["pass_at_k"].items():
            assert body[k][1].split()[0] == f"{at_k['estimate']:.3f}"
            assert body[k][2].split()[0] == f"{view['pass_hat_k'][k]['estimate']:.3f}"
            assert body[k][3] == str(at_k["n_tasks"])
    slices = {(row[0], row[1]): row for row in parsed.tables["slices"][0][1:]}
    assert slices["label", "b"][2] == "1 of 2"  # valid view: t3 has no valid attempt
    assert slices["label", "b"][6] == "2"  # strict view counts both tasks
    assert slices["horizon", "unknown"][2] == "3 of 4"
    assert "without counted attempts: t3" in parsed.titles
    tasks = {row[0]: row for row in parsed.tables["tasks"][0][1:]}
    for row in got["tasks"]:
        assert tasks[row["task_id"]][5] == f"{row['valid']['c']} / {row['valid']['n']}"
    # 4 tasks with 1 to 3 attempts each are not "4 tasks x 3 attempts" (12 attempts).
    assert "4 tasks · 8 attempts counted (1 to 3 per task)" in parsed.sub
    assert "<dt>attempts per task</dt><dd>1 to 3</dd>" in page.read_text(encoding="utf-8")
    assert "\u00d7" not in parsed.sub


def half_up(value: float, digits: int) -> str:
    """*value* with *digits* decimals, a tie rounded away from zero (the latency mean here is
    2.5625: every report prints 2.563, where Python's formatting gives 2.562)."""
    return str(Decimal(repr(value)).quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP))


def test_every_view_reports_the_same_cost_and_never_a_nonzero_one_as_zero(
    batch: tuple[Path, str, dict[str, Any]],
) -> None:
    tmp, batch_id, got = batch
    text = " ".join(text_report(tmp / "s.db", batch_id).split())
    cost, tries = got["summary"]["cost"], got["tries"]
    h4 = {name: half_up(value, 4) for name, value in cost.items() if isinstance(value, float)}
    per = half_up(got["summary"]["cost_per_success"], 4)
    assert f"cost of all tries, reruns included: {half_up(tries['cost'], 4)}" in text
    assert f"(counted attempts: {h4['total']})" in text
    assert f"per success {per}" in text
    page = tmp / "cost.html"
    cli("report", batch_id, "--store", str(tmp / "s.db"), "--html", str(page))
    html = " ".join(page.read_text(encoding="utf-8").split())
    assert f"Cost: total {h4['total']} over counted attempts, {half_up(tries['cost'], 4)}" in html
    assert f"per success {per}" in html
    # Per attempt, as the terminal gives it (the HTML page had no mean, median or p90 cost).
    latency = got["summary"]["latency"]
    h3 = {name: half_up(value, 3) for name, value in latency.items() if isinstance(value, float)}
    assert (
        f"per attempt: mean {h4['mean']}, median {h4['median']}, p90 {h4['p90']}. Latency per "
        f"attempt: mean {h3['mean']}s, median {h3['median']}s, p90 {h3['p90']}s"
    ) in html
    assert (
        f"cost per attempt: mean {h4['mean']}, median {h4['median']}, p90 {h4['p90']}; per "
        f"success {per} · latency per attempt: mean {h3['mean']}s, median {h3['median']}s, p90 "
        f"{h3['p90']}s"
    ) in text
    # t4's run costs 0.0004: four decimals would print a paid run as free.
    assert "cost 0.0004" in html and "cost 0.0000" not in html


def test_compare_of_a_batch_with_itself_pairs_every_figure_of_its_report(
    batch: tuple[Path, str, dict[str, Any]],
) -> None:
    """b and a of the comparison are the report's figures over the paired tasks; the
    strict view pairs every task, so there they are the report's own numbers."""
    tmp, batch_id, got = batch
    code, out, err = cli("compare", batch_id, batch_id, "--json", "--store", str(tmp / "s.db"))
    assert code == 0, err
    data = json.loads(out)
    strict = data["metrics"]["strict"]
    assert (
        strict["success_rate"]["a"]["estimate"]
        == got["invalid_as_failure"]["success_rate"]["estimate"]
    )
    for k, hat in got["invalid_as_failure"]["pass_hat_k"].items():
        assert strict[f"pass_hat_{k}"]["b"]["estimate"] == hat["estimate"]
        assert strict[f"pass_hat_{k}"]["difference"]["estimate"] == 0
    assert data["excluded_tasks"] == ["t3"]
    assert data["metrics"]["valid"]["success_rate"]["a"]["n_tasks"] == got["n_tasks"]


def test_an_unfinished_batch_is_flagged_in_the_html_report_too(tmp_path: Path) -> None:
    """The terminal and JSON reports said INCOMPLETE; the HTML page said nothing and headed
    itself "1 tasks x 10 attempts" over 3 stored attempts."""
    from groundstate.runner import BatchConfig, BatchRunner, Interrupted
    from groundstate.spec.suite import load_suite
    from groundstate.spec.system import load_system

    from .conftest import BANK, BANK_SYSTEM

    suite = load_suite(BANK)
    suite.config = suite.config.model_copy(update={"canary": None})
    store = tmp_path / "runs.db"
    with RunStore(store) as runs:
        runner = BatchRunner(suite, load_system(BANK_SYSTEM), runs)
        seen: list[object] = []

        def stop_after_two(run: object) -> None:
            seen.append(run)
            if len(seen) == 2:
                runner.interrupt.signum = signal.SIGTERM

        runner.on_run = stop_after_two
        with pytest.raises(Interrupted):
            asyncio.run(runner.start(BatchConfig(attempts=10)))
        batch_id = runner.batch_id
        assert batch_id is not None
    result = CliRunner().invoke(main, ["report", batch_id, "--json", "--store", str(store)])
    data = json.loads(result.stdout)
    missing = data["missing_attempts"]
    assert missing is not None
    page = tmp_path / "r.html"
    shown = CliRunner().invoke(
        main, ["report", batch_id, "--store", str(store), "--html", str(page)]
    )
    assert shown.exit_code == 0, shown.output
    parsed = html_tables(page)
    alert = " ".join(parsed.alerts["incomplete-alert"].split())
    planned_attempts = f"{missing['planned']} planned attempt{'s' * (missing['planned'] != 1)}"
    verb = "is" if missing["count"] == 1 else "are"
    assert f"{missing['count']} of {planned_attempts} {verb} not stored" in alert
    assert f"--resume {batch_id}" in alert
    counted = data["valid_attempts"] + data["invalid_attempts"]
    assert re.search(rf"\b{counted} attempts counted\b", parsed.sub), parsed.sub
    assert "\u00d7 10 attempts" not in parsed.sub
    # compare names the incomplete side in every output, as the report does.
    note = (
        f"({batch_id}) is incomplete: {missing['count']} of {missing['planned']} planned "
        "attempts are not stored"
    )
    code, out, err = cli("compare", batch_id, batch_id, "--json", "--store", str(store))
    assert code == 0, err
    assert [n for n in json.loads(out)["notes"] if "incomplete" in n] == [
        f"a {note}",
        f"b {note}",
    ]
    code, out, err = cli(
        "compare", batch_id, batch_id, "--store", str(store), "--html", str(tmp_path / "c.html")
    )
    assert code == 0, err
    assert f"a {note}" in " ".join(out.split())
    assert f"b {note}" in " ".join((tmp_path / "c.html").read_text(encoding="utf-8").split())


def test_batches_claims_no_missing_attempt_of_an_imported_batch(
    batch: tuple[Path, str, dict[str, Any]],
) -> None:
    """An import's plan is its rows (tasks with 1 to 3 attempts here): `batches` said 8/12,
    as if 4 attempts were missing, while `report` names none missing."""
    tmp, batch_id, got = batch
    code, out, err = cli("batches", "--json", "--store", str(tmp / "s.db"))
    assert code == 0, err
    (listed,) = [b for b in json.loads(out) if b["batch_id"] == batch_id]
    counted = got["valid_attempts"] + got["invalid_attempts"]
    assert (listed["attempts_stored"], listed["attempts_expected"]) == (counted, counted) == (8, 8)
    assert got["missing_attempts"] is None
    code, out, _ = cli("batches", "--store", str(tmp / "s.db"))
    assert "8/8" in out and "8/12" not in out


# --- rounding at display ---------------------------------------------------------------------


def _rows(task_id: str, n: int, c: int, *, rerun: bool) -> list[str]:
    """n attempts, the last c successes; with *rerun*, attempt 0 first ends in an environment
    failure and is rerun (one invalid try among thousands)."""
    first = [f"{task_id},0,0,0,environment_failure,0.01,1"] if rerun else []
    return first + [
        f"{task_id},{i},{int(rerun and i == 0)},{int(i >= n - c)},,0.01,1" for i in range(n)
    ]


@pytest.mark.parametrize(
    ("big", "other", "shown", "hidden"),
    [
        ((400, 399), 1, ">0.999", "1.000"),  # (9 + 399/400) / 10 = 0.99975
        ((250, 1), 0, "<0.001", "0.000"),  # (1/250) / 10 = 0.0004
    ],
)
def test_a_rate_strictly_between_0_and_1_never_prints_as_0_or_1(
    tmp_path: Path, big: tuple[int, int], other: int, shown: str, hidden: str
) -> None:
    """Nine one-attempt tasks hold k at 1; the tenth's rate moves the suite's by less than
    half a unit of the third decimal. Printed with three decimals it read as certain
    (1.000) or as never (0.000) in the terminal and HTML reports and in compare."""
    lines = ["task_id,attempt,retry,success,terminal_reason,cost,latency"]
    lines += [f"s{i},0,0,{other},,0.01,1" for i in range(9)]
    lines += _rows("big", *big, rerun=False)
    batch_id = import_text(tmp_path, "\n".join(lines) + "\n")
    got = report(tmp_path, batch_id)
    estimate = got["success_rate"]["estimate"]
    assert 0 < estimate < 1 and f"{estimate:.3f}" == hidden
    assert got["pass_hat_k"]["1"]["estimate"] == estimate and list(got["pass_at_k"]) == ["1"]
    terminal = text_report(tmp_path / "s.db", batch_id)
    suite = {r[0]: r for r in rows_of(terminal)}
    assert suite["valid attempts"][1] == shown
    assert f"pass^1 = {shown}" in terminal
    page = tmp_path / "r.html"
    cli("report", batch_id, "--store", str(tmp_path / "s.db"), "--html", str(page))
    parsed = html_tables(page)
    headline = parsed.tables["suite-numbers"][0][1]
    assert headline[1].split()[0] == shown
    code, out, err = cli("compare", batch_id, batch_id, "--store", str(tmp_path / "s.db"))
    assert code == 0, err
    success = [r for r in rows_of(out) if r[0] == "success_rate"]
    assert success and all(r[1] == r[2] == shown for r in success)


def test_one_invalid_try_in_thousands_is_not_printed_as_none(tmp_path: Path) -> None:
    """One environment failure, rerun, among 2,001 tries: its share (0.05%) printed as
    "0.0%" in the terminal footer and the HTML header and tables."""
    from groundstate.report.terminal import report_footer

    lines = ["task_id,attempt,retry,success,terminal_reason,cost,latency"]
    lines += _rows("big", 2000, 1000, rerun=True)
    batch_id = import_text(tmp_path, "\n".join(lines) + "\n")
    got = report(tmp_path, batch_id)
    assert (got["tries"]["invalid_tries"], got["tries"]["tries"]) == (1, 2001)
    footer = " ".join(report_footer(got).split())
    assert "environment_failure <0.1%" in footer and "0.0%" not in footer
    from groundstate.report.html import _environment

    assert _environment().filters["pct"](1 / 2001) == "<0.1%"
    assert _environment().filters["pct"](2000 / 2001) == ">99.9%"
    assert _environment().filters["pct"](0.0) == "0.0%"
    assert _environment().filters["pct"](1.0) == "100.0%"


def test_the_suite_partial_score_is_shown_where_the_json_gives_it(tmp_path: Path) -> None:
    """`report --json` and `compare` gave the suite's partial score with its interval; the
    terminal and HTML reports showed only each run's. t3's only attempt is invalid: it
    scores 0 in the strict view and is left out of the valid one."""
    rows = """task_id,attempt,success,terminal_reason,partial_score
t1,0,1,,1.0
t1,1,0,,0.5
t2,0,0,,0.25
t2,1,0,,0.0
t3,0,0,environment_failure,
"""
    batch_id = import_text(tmp_path, rows)
    got = report(tmp_path, batch_id)
    valid, strict = (1.5 / 2 + 0.25 / 2) / 2, (1.5 / 2 + 0.25 / 2 + 0) / 3
    assert got["partial_score"]["estimate"] == pytest.approx(valid)
    assert got["invalid_as_failure"]["partial_score"]["estimate"] == pytest.approx(strict)
    terminal = text_report(tmp_path / "s.db", batch_id)
    shown = terminal.split("partial score (")[1]
    table = {r[0]: r for r in rows_of(shown)[:2]}
    for name, view in (("valid attempts", got), ("invalid = failure", got["invalid_as_failure"])):
        score = view["partial_score"]
        assert table[name][1] == f"{score['estimate']:.3f}"
        assert table[name][4:6] == [str(score["n_tasks"]), str(score["attempts"])]
    page = tmp_path / "r.html"
    cli("report", batch_id, "--store", str(tmp_path / "s.db"), "--html", str(page))
    (partial,) = [
        t for t in html_tables(page).tables["suite-numbers"] if t[0][1].startswith("partial")
    ]
    assert [row[1].split()[0] for row in partial[1:]] == [f"{valid:.3f}", f"{strict:.3f}"]
    assert [row[3] for row in partial[1:]] == ["2", "3"]


def test_a_small_task_weight_is_not_printed_as_0(tmp_path: Path) -> None:
    """A task weighted 0.001 (it counts, a little) read "0.00" in the HTML task table."""
    rows = "task_id,attempt,success,weight\nt1,0,1,0.001\nt2,0,0,2\n"
    batch_id = import_text(tmp_path, rows)
    got = report(tmp_path, batch_id)
    assert got["success_rate"]["estimate"] == pytest.approx(0.001 / 2.001)
    page = tmp_path / "r.html"
    cli("report", batch_id, "--store", str(tmp_path / "s.db"), "--html", str(page))
    tasks = {row[0]: row for row in html_tables(page).tables["tasks"][0][1:]}
    assert (tasks["t1"][4], tasks["t2"][4]) == ("0.001", "2.00")
    assert html_tables(page).tables["suite-numbers"][0][1][1].split()[0] == "<0.001"


@pytest.mark.parametrize(
    ("n", "c", "gate", "shown"),
    [
        (199, 189, "0.95", "0.9497"),  # 189/199 = 0.94975: "0.950 is below 0.95"
        (3, 2, "0.7", "0.667"),
        (400, 399, "0.998", "0.9975"),
    ],
)
def test_a_failed_gate_prints_its_value_below_its_threshold(
    tmp_path: Path, n: int, c: int, gate: str, shown: str
) -> None:
    rows = [f"t,{i},{int(i >= n - c)}" for i in range(n)]
    batch_id = import_text(tmp_path, "task_id,attempt,success\n" + "\n".join(rows) + "\n")
    code, _, err = cli(
        "report",
        batch_id,
        "--store",
        str(tmp_path / "s.db"),
        "--fail-under",
        f"success_rate={gate}",
    )
    assert code == 4
    assert f"success_rate = {shown} is below {gate}" in err
    assert float(shown) < float(gate)


def test_a_flagged_invalid_share_is_printed_above_its_threshold(tmp_path: Path) -> None:
    """21 invalid tries of 209 (10.05%) exceed the default 10%: the HTML alert said "(10.0%)
    ended in an environment or grader failure" under "Invalid attempts exceed 10.0%"."""
    rows = [f"t{i % 7},{i // 7},{int(i >= 21)},{'environment_failure' if i < 21 else ''}"
            for i in range(209)]  # fmt: skip
    batch_id = import_text(
        tmp_path, "task_id,attempt,success,terminal_reason\n" + "\n".join(rows) + "\n"
    )
    got = report(tmp_path, batch_id)
    assert (got["tries"]["invalid_tries"], got["tries"]["tries"]) == (21, 209)
    assert got["invalid_rate_flagged"] is True and got["tries"]["max_invalid_rate"] == 0.1
    assert f"{21 / 209:.1%}" == "10.0%"  # what one decimal printed
    terminal = " ".join(text_report(tmp_path / "s.db", batch_id).split())
    assert "(21 of 209: 10.05% > 10.0%)" in terminal
    page = tmp_path / "r.html"
    cli("report", batch_id, "--store", str(tmp_path / "s.db"), "--html", str(page))
    alert = " ".join(html_tables(page).alerts["invalid-alert"].split())
    # worded as the terminal's FLAGGED line (one source: report.numbers.flagged_text)
    assert "(21 of 209: 10.05% > 10.0%)" in alert and "ended in an environment" in alert


def test_show_prints_a_runs_cost_as_the_reports_do(tmp_path: Path) -> None:
    """`show` printed a cost of 0.00004 as "cost 0.0000" (the HTML run view: 4e-05)."""
    batch_id = import_text(tmp_path, "task_id,attempt,success,cost,latency\nt1,0,1,0.00004,1e308\n")
    store = str(tmp_path / "s.db")
    code, out, err = cli("runs", batch_id, "--json", "--store", store)
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    code, out, err = cli("show", run["run_id"], "--store", store)
    assert code == 0, err
    assert "cost 4e-05 · latency 1e+308s" in out
    page = tmp_path / "r.html"
    cli("report", batch_id, "--store", store, "--html", str(page))
    assert "cost 4e-05" in page.read_text(encoding="utf-8")


def test_a_p_value_just_below_alpha_is_not_printed_as_alpha(tmp_path: Path) -> None:
    """Seven tasks, four attempts a side, paired differences -2, 1, 1, 3, 3, 4, 4 successes:
    the paired t test gives p = 0.04983 and the interval excludes 0, yet both reports printed
    p as 0.050 (and the HTML printed a p below 0.001 as 0.000, the terminal as 0.0004)."""
    from scipy import stats

    a_c, b_c = [2, 0, 0, 0, 0, 0, 0], [0, 1, 1, 3, 3, 4, 4]

    def rows(cs: list[int]) -> str:
        lines = [f"t{t},{i},{int(i < c)}" for t, c in enumerate(cs) for i in range(4)]
        return "task_id,attempt,success\n" + "\n".join(lines) + "\n"

    a, b = import_text(tmp_path, rows(a_c), "a"), import_text(tmp_path, rows(b_c), "b")
    store = str(tmp_path / "s.db")
    args = ["compare", a, b, "--store", store, "--allow-mismatch"]
    code, out, err = cli(*args, "--json")
    assert code == 0, err
    rate = json.loads(out)["metrics"]["valid"]["success_rate"]
    expected = stats.ttest_1samp([(y - x) / 4 for x, y in zip(a_c, b_c, strict=True)], 0).pvalue
    assert rate["p_value"] == pytest.approx(expected) and f"{expected:.3f}" == "0.050"
    assert rate["difference"]["ci_low"] > 0
    code, out, err = cli(*args, "--html", str(tmp_path / "c.html"))
    assert code == 0, err
    (row,) = [r for r in rows_of(out) if r[0] == "success_rate"][:1]
    assert row[7] == "0.0498"
    page = html_tables(tmp_path / "c.html")
    cells = [r for t in page.tables["metrics"] for r in t]
    assert any(r[0] == "success_rate" and "0.0498" in r for r in cells)
    from groundstate.report.html import _environment

    assert _environment().filters["p"](0.0004, 0.05) == "0.0004"


def test_a_changed_tasks_difference_prints_alike_in_every_view(tmp_path: Path) -> None:
    """0/30 against 10/30 on t0: the terminal printed b - a as +0.33, the HTML as +0.333."""

    def rows(c: int) -> str:
        lines = [f"t0,{i},{int(i < c)}" for i in range(30)] + [f"t1,{i},1" for i in range(30)]
        return "task_id,attempt,success\n" + "\n".join(lines) + "\n"

    a, b = import_text(tmp_path, rows(0), "a"), import_text(tmp_path, rows(10), "b")
    args = ["compare", a, b, "--store", str(tmp_path / "s.db"), "--allow-mismatch"]
    code, out, err = cli(*args, "--json")
    assert code == 0, err
    (changed,) = [t for t in json.loads(out)["per_task"] if t["changed"]]
    assert changed["task_id"] == "t0" and changed["difference"] == pytest.approx(1 / 3)
    code, out, err = cli(*args, "--html", str(tmp_path / "c.html"))
    assert code == 0, err
    (row,) = [r for r in rows_of(out) if r[0] == "t0"]
    assert row[1:4] == ["0/30", "10/30", "+0.333"]
    page = html_tables(tmp_path / "c.html")
    tasks = [r for t in page.tables["per-task"] for r in t if r[0] == "t0"]
    assert tasks and all("+0.333" in r for r in tasks)
    from groundstate.report.numbers import signed

    assert (signed(0.0004), signed(-0.0004), signed(-0.0), signed(1e-17)) == (
        "+0.0004",
        "-0.0004",
        "+0.000",
        "+0.000",
    )


def test_a_small_standard_error_prints_alike_in_the_terminal_and_html(tmp_path: Path) -> None:
    """Five tasks at 0.5 and one, weighted 0.001, at 1: the SE (about 0.0001) printed as
    "0.0001" in the terminal and "0.000" in the HTML report."""
    lines = [f"t{t},{i},{int(i == 0 or t == 5)},{0.001 if t == 5 else 1}"
             for t in range(6) for i in range(2)]  # fmt: skip
    text = "task_id,attempt,success,weight\n" + "\n".join(lines) + "\n"
    batch_id = import_text(tmp_path, text)
    got = report(tmp_path, batch_id)
    se = got["success_rate"]["se"]
    assert 0 < se < 0.0005
    shown = {r[0]: r for r in rows_of(text_report(tmp_path / "s.db", batch_id))}
    page = tmp_path / "r.html"
    cli("report", batch_id, "--store", str(tmp_path / "s.db"), "--html", str(page))
    headline = html_tables(page).tables["suite-numbers"][0][1]
    assert shown["valid attempts"][3] == headline[2] == f"{se:.3g}" != "0.000"
