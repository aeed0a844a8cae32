"""The HTML report: its sections, escaping of agent text, and the real page in headless Chromium."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from groundstate.analysis import batch_report, summarize_batch, tries
from groundstate.records import AgentRun, CheckResult
from groundstate.report.html import render_batch, render_comparison
from groundstate.runner import BatchConfig, run_batch
from groundstate.spec.suite import load_suite
from groundstate.spec.system import load_system
from groundstate.stats import Outcome, compare
from groundstate.store import BatchInfo, RunStore
from groundstate.trace import MessageEvent, ToolCallEvent

from .conftest import BANK, BANK_SYSTEM

SYSTEM = BANK_SYSTEM
SECTIONS = ("header", "curves", "suite-numbers", "slices", "terminal-reasons", "tasks", "runs")
BROWSER_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class Batch:
    info: BatchInfo
    runs: list[AgentRun]

    def render(self, runs: list[AgentRun] | None = None) -> str:
        runs = self.runs if runs is None else runs
        return render_batch(
            self.info, runs, summarize_batch(self.info, runs), tries(self.info, runs)
        )

    def run_with(self, reason: str) -> AgentRun:
        return next(r for r in self.runs if r.terminal_reason == reason)


@pytest.fixture(scope="module")
def bank_batch(tmp_path_factory: pytest.TempPathFactory) -> Batch:
    """Six seeded attempts of the bank suite: some succeed, some skip the PIN check."""
    with RunStore(tmp_path_factory.mktemp("store") / "runs.db") as store:
        config = BatchConfig(attempts=6, seed=7)
        result = run_batch(load_suite(BANK), load_system(SYSTEM), config, store, validate=False)
        batch = Batch(result.batch, store.runs(result.batch.batch_id))
    assert {r.terminal_reason for r in batch.runs} == {
        "success",
        "agent_failure/constraint_violation",
    }
    return batch


class _Page(HTMLParser):
    """The ids, in-page links and script elements of a page."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.links: list[str] = []
        self.scripts = 0
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.append(str(values["id"]))
        if tag == "a" and (values.get("href") or "").startswith("#"):
            self.links.append(str(values["href"])[1:])
        self.scripts += tag == "script"


def _run_section(page: str, run_id: str) -> str:
    start = page.index(f'id="run-{run_id}"')
    end = page.find('<section class="run', start)
    return page[start : end if end != -1 else len(page)]


def _series_points(page: str, view: str, series: str) -> list[tuple[float, float]]:
    chart = page[page.index(f'data-view="{view}"') :]
    group = chart[chart.index(f'data-series="{series}"') :]
    points = re.search(r'<polyline class="line" points="([^"]*)"', group)
    assert points is not None
    pairs = [p.split(",") for p in points.group(1).split()]
    return [(float(x), float(y)) for x, y in pairs]


# --- the page, without a browser -----------------------------------------------------------


def test_every_section_and_every_run_has_an_anchor(bank_batch: Batch) -> None:
    page = bank_batch.render()
    parsed = _Page(page)
    assert set(SECTIONS) <= set(parsed.ids)
    assert len(parsed.ids) == len(set(parsed.ids)), "ids must be unique"
    assert {f"run-{r.run_id}" for r in bank_batch.runs} <= set(parsed.ids)
    assert set(parsed.links) <= set(parsed.ids), "every in-page link has a target"
    task_table = page[page.index('id="tasks"') : page.index('id="runs"')]
    for run in bank_batch.runs:
        assert f'href="#run-{run.run_id}"' in task_table
    info = bank_batch.info
    for fact in (info.batch_id, info.suite, info.system_spec_hash, str(info.seed)):
        assert fact in page[: page.index('id="curves"')]


def test_page_is_self_contained(bank_batch: Batch) -> None:
    page = bank_batch.render()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "@import" not in page and "url(" not in page
    assert _Page(page).scripts == 1


def test_curves_draw_both_views_with_bands(bank_batch: Batch) -> None:
    page = bank_batch.render()
    summary = summarize_batch(bank_batch.info, bank_batch.runs)
    for view in ("valid", "strict"):
        kmax = summary.views[view].kmax
        at_k = _series_points(page, view, "pass@k")
        hat_k = _series_points(page, view, "pass^k")
        assert len(at_k) == len(hat_k) == kmax == 6
        # SVG y grows downwards: pass@k rises with k, pass^k falls.
        assert [y for _, y in at_k] == sorted((y for _, y in at_k), reverse=True)
        assert [y for _, y in hat_k] == sorted(y for _, y in hat_k)
    assert page.count('<polygon class="band"') == 4
    for k, estimate in summary.views["valid"].pass_hat_k.items():
        # Too few tasks for an interval: the point says why instead of drawing a band.
        assert estimate.ci_low is None and "intervals need at least 5" in estimate.note
        assert f"pass^{k} = {estimate.estimate:.3f} ({estimate.note})" in page


def test_suite_numbers_slices_and_reasons(bank_batch: Batch) -> None:
    page = bank_batch.render()
    summary = summarize_batch(bank_batch.info, bank_batch.runs)
    rate = summary.views["valid"].success_rate
    assert rate is not None
    assert f'{rate.estimate:.3f}</span> <span class="ci muted" title="{rate.note}">n/a' in page
    slices = page[page.index('id="slices"') : page.index('id="terminal-reasons"')]
    assert "payments" in slices and "4-7" in slices
    reasons = page[page.index('id="terminal-reasons"') : page.index('id="tasks"')]
    for reason, count in summary.terminal_reasons.items():
        assert reason in reasons
        assert f"{count / summary.attempts:.1%}" in reasons
    assert "no invalid attempts" in reasons
    assert 'id="invalid-alert"' not in page


def test_run_view_shows_trajectory_state_diff_and_evidence(bank_batch: Batch) -> None:
    run = bank_batch.run_with("agent_failure/constraint_violation")
    section = _run_section(bank_batch.render(), run.run_id)
    tools = [e.tool for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert re.findall(r'<code class="tool">([^<]*)</code>', section)[: len(tools)] == tools
    assert "Please move 30 from my account A to account B." in section
    assert "FAIL</span>" in section and "pin-first" in section and "offending step" in section
    assert "balance</td><td>100" in section and "70</td>" in section  # accounts A: 100 -> 70
    assert "transfers" in section and "no state diff recorded" not in section
    assert f"seed {run.seed}" in section and run.terminal_reason in section
    # The final reply is marked, and each call's row-level writes are shown.
    assert '<span class="who">final reply</span>' in section
    assert '<span class="write">balance: 100 → 70</span>' in section


def test_run_without_a_state_diff_assertion_says_so(bank_batch: Batch) -> None:
    run = bank_batch.runs[0]
    kept = [c for c in run.outcome_assertion_results if c.kind != "state_diff"]
    bare = run.model_copy(update={"outcome_assertion_results": kept})
    section = _run_section(bank_batch.render([bare]), run.run_id)
    assert "no state diff recorded" in section


def test_agent_text_is_escaped_everywhere(bank_batch: Batch) -> None:
    run = bank_batch.runs[0]
    hostile = [
        MessageEvent(step=20, role="agent", text="<script>alert(1)</script>", at=0.1),
        ToolCallEvent(
            step=21,
            tool="<img src=x onerror=alert(2)>",
            args={"q": "</pre><script>alert(3)</script>"},
            ok=False,
            error="<b>boom</b>",
            error_class="tool_error",
            duration_ms=1.0,
            at=0.2,
        ),
    ]
    check = CheckResult(id="<i>x</i>", kind="check", passed=False, evidence={"note": "<hr>"})
    record = run.model_copy(
        update={
            "observation_action_log": run.observation_action_log + hostile,
            "final_message": "<iframe src=x></iframe>",
            "constraint_results": [*run.constraint_results, check],
        }
    )
    page = bank_batch.render([record])
    for raw in ("<script>alert(", "<img src=x", "<b>boom", "<iframe", "<i>x</i>", "<hr>"):
        assert raw not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page
    assert _Page(page).scripts == 1  # only the report's own


def test_invalid_tries_above_ten_percent_raise_a_flag(bank_batch: Batch) -> None:
    first = bank_batch.runs[0]
    broken = first.model_copy(
        update={
            "run_id": "f" * 32,
            "terminal_reason": "environment_failure/health_probe",
            "success": False,
            "infrastructure_status": {
                "exception": {"stage": "reset", "type": "OSError", "message": "disk full"}
            },
        }
    )
    rerun = first.model_copy(update={"retry": 1, "retry_of": broken.run_id})
    page = bank_batch.render([broken, rerun, *bank_batch.runs[1:]])
    assert 'id="invalid-alert"' in page  # 1 of 7 tries
    assert "environment_failure" in page[page.index('id="terminal-reasons"') :]
    assert 'class="run-link invalid" href="#run-ffff' in page
    assert "at reset: OSError: disk full" in _run_section(page, broken.run_id)


def _comparison(info: BatchInfo) -> tuple[BatchInfo, BatchInfo, str]:
    def outcomes(task: str, successes: list[bool]) -> list[Outcome]:
        return [Outcome(task, n, ok) for n, ok in enumerate(successes, 1)]

    a = outcomes("transfer", [True, False, True, False]) + outcomes("steady", [True, False])
    b = outcomes("transfer", [True] * 4) + outcomes("steady", [False, True])
    a += outcomes("retired", [True])
    b += outcomes("<new>", [False])
    other = info.model_copy(update={"batch_id": "b0b0b0b0b0b0", "system_spec_hash": "f" * 64})
    return info, other, render_comparison(info, other, compare(a, b))


def test_comparison_page(bank_batch: Batch) -> None:
    a, b, page = _comparison(bank_batch.info)
    assert a.batch_id in page and b.batch_id in page
    assert "+0.250 <span" in page  # mean of +0.5 (transfer) and 0 (steady)
    # 2/4 -> 4/4 is within attempt noise (Fisher p = 0.43): listed, not highlighted.
    assert '<tr data-task="transfer">' in page and 'class="changed-task"' not in page
    assert "<b>0 of 2</b> tasks changed" in page
    assert page.count('data-series="a"') == page.count('data-series="b"') == 2  # both views
    assert '<tr data-task="steady">' in page
    only_a = page[page.index('id="only-in-a"') : page.index('id="only-in-b"')]
    only_b = page[page.index('id="only-in-b"') : page.index('id="excluded"')]
    assert "retired" in only_a and "&lt;new&gt;" in only_b and "<new>" not in page
    assert _Page(page).scripts == 1


# --- the page in a real browser -------------------------------------------------------------


@pytest.fixture(scope="module")
def browser(bank_batch: Batch) -> Iterator[Any]:
    """A headless Chromium context driven over the DevTools protocol by Playwright.

    It asks for the batch so that the batch is made first: Playwright's sync API keeps an
    event loop running in this thread, where ``run_batch`` could not start its own.
    """
    if os.environ.get("GROUNDSTATE_SKIP_BROWSER") == "1":
        pytest.skip("GROUNDSTATE_SKIP_BROWSER=1")
    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("chromium is not installed: run scripts/ensure-browser.sh")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: pip install -e '.[test]'")
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=executable, headless=True, args=BROWSER_FLAGS
        )
        yield context
        context.close()


@dataclass
class Opened:
    page: Any
    problems: list[str]
    requests: list[str]


def _open(browser: Any, path: Path, html: str) -> Opened:
    path.write_text(html, encoding="utf-8")
    page = browser.new_page()
    opened = Opened(page, [], [])

    def on_console(message: Any) -> None:
        if message.type == "error":
            opened.problems.append(message.text)

    page.on("console", on_console)
    page.on("pageerror", lambda e: opened.problems.append(str(e)))
    page.on("request", lambda r: opened.requests.append(r.url))
    page.goto(path.as_uri(), wait_until="load")
    return opened


def test_report_renders_in_chromium_without_errors(
    browser: Any, bank_batch: Batch, tmp_path: Path
) -> None:
    opened = _open(browser, tmp_path / "report.html", bank_batch.render())
    page = opened.page
    assert bank_batch.info.batch_id in page.title()
    charts = page.locator("#curves svg")
    assert charts.count() == 2
    for i in range(2):
        box = charts.nth(i).bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 200
    for section in SECTIONS:
        assert page.locator(f"#{section}").is_visible()
    assert page.locator("details.run-body[open]").count() == 0  # runs start folded
    assert opened.problems == []
    assert opened.requests == [(tmp_path / "report.html").as_uri()]  # nothing from elsewhere
    page.close()


def test_task_table_link_opens_the_runs_trajectory(
    browser: Any, bank_batch: Batch, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    run = bank_batch.run_with("agent_failure/constraint_violation")
    opened = _open(browser, tmp_path / "report.html", bank_batch.render())
    page = opened.page
    page.locator(f'#tasks a[href="#run-{run.run_id}"]').click()
    assert page.url.endswith(f"#run-{run.run_id}")
    assert page.evaluate("document.querySelector(':target').id") == f"run-{run.run_id}"
    section = page.locator(f"#run-{run.run_id}")
    expect(section).to_be_in_viewport()
    assert section.locator("details.run-body").evaluate("d => d.open")
    calls = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    tools = section.locator("ol.trace > .ev.call code.tool")
    assert tools.all_inner_texts()[: len(calls)] == [e.tool for e in calls]
    for i in range(len(calls)):
        expect(tools.nth(i)).to_be_visible()
    expect(section.locator(".check.fail")).to_contain_text("pin-first")
    assert opened.problems == []
    page.close()


def test_judge_errors_alert_shows_in_chromium(
    browser: Any, bank_batch: Batch, tmp_path: Path
) -> None:
    """A judge that could not judge leaves its attempt valid: the page says so (twelfth
    round), in an alert a reader sees, and stays self-contained."""
    failed = CheckResult(id="tone", kind="judge", passed=False, error="JudgeFailure: <b>x</b>")
    runs = [
        r.model_copy(update={"outcome_assertion_results": [*r.outcome_assertion_results, failed]})
        if r.attempt <= 2 else r
        for r in bank_batch.runs
    ]  # fmt: skip
    opened = _open(browser, tmp_path / "judged.html", bank_batch.render(runs))
    alert = opened.page.locator("#judge-errors-alert")
    assert alert.is_visible()
    assert "2 of 6 counted attempts had a judge that could not judge" in alert.inner_text()
    assert opened.problems == []
    assert opened.requests == [(tmp_path / "judged.html").as_uri()]
    opened.page.close()


def test_comparison_renders_in_chromium_without_errors(
    browser: Any, bank_batch: Batch, tmp_path: Path
) -> None:
    _, _, html = _comparison(bank_batch.info)
    opened = _open(browser, tmp_path / "comparison.html", html)
    page = opened.page
    assert page.locator("tr.changed-task").count() == 0  # 2/4 -> 4/4: within attempt noise
    assert page.locator("tr[data-task]").count() == 2
    assert page.locator('svg[data-view] [data-series="a"]').count() == 2  # pass^k, both views
    assert page.locator("svg").count() >= 3  # and the difference plots
    assert opened.problems == []
    opened.page.close()


def test_a_batch_that_ran_invalid_tasks_says_so(bank_batch: Batch) -> None:
    assert "invalid-tasks-alert" not in bank_batch.render()
    flagged = Batch(
        bank_batch.info.model_copy(update={"invalid_tasks": ["transfer"]}), bank_batch.runs
    )
    page = flagged.render()
    assert 'id="invalid-tasks-alert"' in page and "Ran tasks that failed validation" in page
    # its figures are left out of the page's numbers, as of the JSON's (the bank suite's one
    # task: none is left), and given apart
    report = batch_report(flagged.info, flagged.runs)
    assert report["n_tasks"] == 0 and report["success_rate"] is None
    numbers = page[page.index('id="suite-numbers"') : page.index('id="slices"')]
    assert numbers.count("no counted attempt") >= 2  # both views
    nothing = "mean {0}, median {0}, p90 {0}".format("\u2013")  # no "\u2013s" for seconds
    assert f"{nothing}. Latency per attempt: {nothing}." in numbers
    assert "0 tasks · no counted attempt" in page
    alert = " ".join(page[page.index('id="invalid-tasks-alert"') :].split("</div>")[0].split())
    (apart,) = report["invalid_tasks_results"]
    assert f"apart: transfer {apart['valid']['c']}/{apart['valid']['n']} valid attempts" in alert
