"""Seventh audit of the reports (issues 3, 11, 12): hostile text from imported result files and
agents in every terminal view (``report``, ``runs``, ``show``, ``batches``, ``compare``,
``agreement``), on a
real terminal (styles on). Terminal escape sequences (clear screen, OSC 8 links, OSC 52
clipboard writes), carriage returns and line breaks that would forge a verdict or a pass-rate
line, bidirectional marks, zero-width and separator characters, NUL and rich markup must all
show as text, escaped, on the line of the value they belong to; ``--json`` keeps them exactly.
(HTML markup and template text in ids: ``tests/test_reports_adversarial.py``.)"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console

from groundstate.cli import main
from groundstate.records import AgentRun
from groundstate.report.terminal import print_run
from groundstate.store import RunStore
from groundstate.trace import MessageEvent

FORGERS = (
    "a\nFORGED",  # a line break: a line of its own
    "b\rFORGED",  # a carriage return: overwrites the start of its line
    "c\u2028FORGED",  # a line separator
    "d\u2029FORGED",  # a paragraph separator
    "e\x1b[2K\x1b[1GFORGED",  # erase the line, back to column 1
    "f\x85FORGED",  # NEL, the C1 next line
    "g\x0bFORGED",  # vertical tab
)
"""Ids whose ``FORGED`` would start a line (or overwrite one) if printed raw."""
HIDERS = (
    "\x1b[2J\x1b[Hclear",  # clear the screen
    "\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\x1b]52;c;ZWNobyBoaQ==\x07clip",  # OSC 52: write the clipboard
    "x\u202eabc",  # right-to-left override
    "x\u2067rli\u200f\u200e\u061c",  # isolate and marks
    "ref\u200bund",  # zero width: looks like "refund"
    "nul\x00",
    "tab\there",
    "[bold red]markup[/]",
    "[link=http://evil.example/]linked[/link]",
    ":white_check_mark: ok",  # an emoji code: would print as a check mark
    "L" * 3000,  # no break: a table as wide as it would push the numbers off the page
)
"""Ids that would act on the terminal, reorder or hide text, or be read as rich markup."""
HOSTILE = FORGERS + HIDERS
_SGR = re.compile(r"\x1b\[[0-9;]*m")
"""The only escape sequences a report may send: colours and weights of its own."""


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    if result.exit_code == 1:
        raise result.exception  # type: ignore[misc]
    return result.exit_code, result.stdout + result.stderr


def _rows(success_of: Any) -> str:
    return "".join(
        json.dumps({
            "task_id": t, "attempt": 0, "success": success_of(i), "slice_labels": [t],
            "terminal_reason": "success" if success_of(i) else f"agent_failure/{t}",
        }) + "\n"
        for i, t in enumerate(HOSTILE)
    )  # fmt: skip


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """Two imported batches of the hostile ids (verdicts flipped), one named by a forger."""
    tmp = tmp_path_factory.mktemp("round7")
    store, ids = tmp / "r.db", []
    for name, success_of in (("x\nFORGED", lambda i: i % 2 == 0), ("b", lambda i: i % 2 == 1)):
        path = tmp / f"{len(ids)}.jsonl"
        path.write_text(_rows(success_of))
        code, out = _invoke("import-results", str(path), "--name", name, "--store", str(store))
        assert code == 0, out
        ids.append(out.strip().splitlines()[-1].removeprefix("batch "))
    return store, ids[0], ids[1]


@pytest.fixture(autouse=True)
def real_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's own consoles drawn as on a colour terminal, not the plain text of a pipe."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLORTERM", "truecolor")
    monkeypatch.delenv("NO_COLOR", raising=False)


def _assert_shown_as_text(output: str) -> None:
    """Nothing but the report's own colours acts on the terminal; no value starts a line."""
    text = _SGR.sub("", output)
    raw = sorted({hex(ord(ch)) for ch in text if ch != "\n" and not ch.isprintable()})
    assert raw == [], raw
    for line in text.splitlines():
        if "FORGED" in line:
            assert re.search(r"\\(n|r|u2028|u2029|x1b\[1G|x85|x0b)FORGED", line), line


def _views(store: Path, a: str, b: str) -> list[list[str]]:
    with RunStore(store, create=False) as run_store:
        run_ids = [r.run_id for r in run_store.runs(a)]
    shows = [["show", run_id] for run_id in run_ids]
    agreements = [["agreement", a, b], ["agreement", a, b, "--on", "terminal_reason"]]
    return [["report", a], ["runs", a], ["batches"], ["compare", a, b], *agreements, *shows]


def test_every_terminal_view_shows_hostile_values_as_text(stored: tuple[Path, str, str]) -> None:
    store, a, b = stored
    for view in _views(store, a, b):
        code, output = _invoke(*view, "--store", str(store))
        assert code == 0, (view, output)
        _assert_shown_as_text(output)
        assert "\u2705" not in output, view  # no emoji made of a value
        for markup in ("[bold red]markup[/]", "[link=http://evil.example/]linked[/link]"):
            if view[0] in ("report", "runs"):  # shown as written, not as a style or a link
                assert markup in _SGR.sub("", output), view
    code, output = _invoke("report", a, "--store", str(store))
    assert _SGR.search(output)  # drawn for a colour terminal


def test_json_views_keep_hostile_values_exactly(stored: tuple[Path, str, str]) -> None:
    """Every ``--json`` is ASCII: strict JSON with the values exactly, and nothing of them
    (a C1 control, an override) acts on the terminal it is printed to."""
    store, a, b = stored
    for view in _views(store, a, b):
        code, out = _invoke(*view, "--json", "--store", str(store))
        assert code == 0 and out.isascii(), view
    _, out = _invoke("report", a, "--json", "--store", str(store))
    assert {t["task_id"] for t in json.loads(out)["tasks"]} == set(HOSTILE)
    _, out = _invoke("runs", a, "--json", "--store", str(store))
    runs = json.loads(out)["runs"]
    assert {r["task_id"] for r in runs} == set(HOSTILE)
    _, out = _invoke("show", runs[0]["run_id"], "--json", "--store", str(store))
    assert json.loads(out)["task_id"] in HOSTILE
    _, out = _invoke("compare", a, b, "--json", "--store", str(store))
    assert {t["task_id"] for t in json.loads(out)["per_task"]} == set(HOSTILE)
    _, out = _invoke("batches", "--json", "--store", str(store))
    assert "x\nFORGED" in {b["suite"] for b in json.loads(out)}


def _shown(run: AgentRun) -> str:
    out = io.StringIO()
    print_run(Console(file=out, force_terminal=True, emoji=False, width=160), run)
    return out.getvalue()


def test_an_agents_message_cannot_forge_a_line_of_show(stored: tuple[Path, str, str]) -> None:
    """A message keeps its lines (it is read as text), each indented under its event, with
    every control escaped: none can pass for ``verdict: success`` or a heading."""
    store, a, _ = stored
    with RunStore(store, create=False) as run_store:
        run = run_store.runs(a)[0]
    said = "done.\nverdict: success\n\x1b[1A\x1b[2Kverdict: success\r\u202etrace"
    log = [MessageEvent(step=1, role="agent", text=said, final=True, at=0.0)]
    text = _SGR.sub("", _shown(run.model_copy(update={"observation_action_log": log})))
    lines = text.splitlines()
    assert [line for line in lines if line.startswith("verdict:")] == [lines[1]]
    assert lines[1] != "verdict: success" or run.success
    trace = lines[lines.index("trace") + 1 :]
    assert trace[0].endswith("final done.")
    assert all(line.startswith(" " * 9) for line in trace[1:]), trace
    assert not [ch for ch in text if ch != "\n" and not ch.isprintable()]
    assert "\\x1b[1A\\x1b[2Kverdict: success\\r\\u202etrace" in text


SCRIPTS = (
    "</script><script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned = 2">',
    '"><svg onload="window.__pwned = 3">',
    "javascript:window.__pwned = 4",
    "{{ 7*7 }}{% print(8*8) %}",
    "</details></section><section id=forged>",
)
"""Agent and tool text that would run script or make elements if it were markup."""


def _traced(run: AgentRun, text: str) -> AgentRun:
    """*run* with an agent message, a tool call and a failed call all carrying *text*."""
    from groundstate.trace import ToolCallEvent

    log = [
        MessageEvent(step=1, role="agent", text=text, at=0.0),
        ToolCallEvent(step=2, tool=text, args={text: text}, ok=True, output=text, duration_ms=1.0,
                      at=0.1),
        ToolCallEvent(step=3, tool="t", args={}, ok=False, error=text, error_class="tool_error",
                      duration_ms=1.0, at=0.2),
    ]  # fmt: skip
    return run.model_copy(update={"observation_action_log": log})


def _pages(stored: tuple[Path, str, str], tmp: Path) -> list[Path]:
    """The report (its runs carrying :data:`SCRIPTS`), the comparison and the labelling sheet."""
    from groundstate.analysis import summarize_batch, tries
    from groundstate.report.html import render_batch

    store, a, b = stored
    with RunStore(store, create=False) as run_store:
        batch, runs = run_store.batch(a), run_store.runs(a)
    runs = [_traced(r, SCRIPTS[i % len(SCRIPTS)] + HOSTILE[i]) for i, r in enumerate(runs)]
    report = tmp / "report.html"
    report.write_text(render_batch(batch, runs, summarize_batch(batch, runs), tries(batch, runs)))
    code, out = _invoke("compare", a, b, "--html", str(tmp / "compare.html"), "--store", str(store))
    assert code == 0, out
    code, out = _invoke(
        "sample-failures", a, "--n", "4", "--out", str(tmp / "sheet"), "--store", str(store)
    )
    assert code == 0, out
    return [report, tmp / "compare.html", tmp / "sheet" / "sheet.html"]


def test_pages_stay_inert_in_a_real_browser(stored: tuple[Path, str, str], tmp_path: Path) -> None:
    """Chromium opens each page: no script of the data runs, no element of it exists, no
    request leaves the file, no dialog opens, and the page's own script runs without error."""
    import os
    import shutil

    if os.environ.get("GROUNDSTATE_SKIP_BROWSER") == "1":
        pytest.skip("GROUNDSTATE_SKIP_BROWSER=1")
    executable = shutil.which("chromium")
    playwright_api = pytest.importorskip("playwright.sync_api")
    if executable is None:
        pytest.skip("chromium is not installed")
    from tests.test_html_report import BROWSER_FLAGS

    pages = _pages(stored, tmp_path)
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=BROWSER_FLAGS)
        try:
            for path in pages:
                _check_inert(browser, path)
        finally:
            browser.close()


def _check_inert(browser: Any, path: Path) -> None:
    page = browser.new_page()
    seen: list[str] = []
    page.on("dialog", lambda d: (seen.append(f"dialog {d.message}"), d.dismiss()))
    page.on("pageerror", lambda e: seen.append(f"error {e}"))
    page.on("request", lambda r: seen.append(r.url))
    page.goto(path.as_uri() + "#forged", wait_until="load")
    made = page.evaluate(
        "() => [window.__pwned, document.querySelectorAll("
        "'img, svg[onload], iframe, #forged, [onerror], [onload]').length,"
        " document.scripts.length, document.body.textContent]"
    )
    assert made[:3] == [None, 0, len(page.query_selector_all("script"))], path
    assert made[2] <= 1, path
    assert seen == [path.as_uri() + "#forged"] or seen == [path.as_uri()], seen
    width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], (path, width)  # every number on the page, none off to the side
    if path.name == "report.html":
        for text in SCRIPTS:
            assert text in made[3]  # shown, as text
        assert page.evaluate(_READS_LEFT_TO_RIGHT) == [True, True], "reversed"
    page.close()


_READS_LEFT_TO_RIGHT = """() => [...document.querySelectorAll("section.run h4")]
  .filter(h => /[\u202a-\u202e\u2066-\u2069]/.test(h.textContent))
  .map(h => {
    const node = h.lastChild, at = node.data.lastIndexOf("attempt");
    const box = i => { const r = document.createRange(); r.setStart(node, i);
                       r.setEnd(node, i + 1); return r.getBoundingClientRect().left; };
    return box(at) < box(at + 1) && box(at + 1) < box(at + 2);
  })"""
"""Whether the `` · attempt N`` after each task id with a bidirectional control is still laid
out left to right (an open override would reverse it)."""


@pytest.mark.parametrize(
    "text",
    ["x\u202eabc", "\u2067a\u202eb", "\u2069\u202ex", "\u202b\u2066x\u202c", "\u202a" * 70, "ok"],
    ids=[
        "override",
        "override-in-isolate",
        "stray-close",
        "close-inside-isolate",
        "70-deep",
        "plain",
    ],
)
def test_each_html_value_closes_what_it_opens(text: str, tmp_path: Path) -> None:
    """After each value (and each item of a joined list) nothing it opened is still open: an
    independent count by the algorithm's pairing rules, on what the template printed."""
    from groundstate.report.html_text import environment

    page = environment().from_string("<p>{{ v }} after</p><p>{{ items|join(', ') }} after</p>")
    html = page.render(v=text, items=[text, "next"])
    for paragraph in re.findall(r"<p>(.*?) after</p>", html):
        for value in paragraph.split(", "):
            assert _still_open(value) == 0, (paragraph, value)
        assert text in paragraph  # the value itself is kept exactly


def _still_open(text: str) -> int:
    """How many embeddings and isolates *text* leaves open (a stack, as UAX #9 pairs them)."""
    stack: list[str] = []
    for char in text:
        if char in "\u202a\u202b\u202d\u202e":
            stack.append("embedding")
        elif char in "\u2066\u2067\u2068":
            stack.append("isolate")
        elif char == "\u202c" and stack and stack[-1] == "embedding":
            stack.pop()
        elif char == "\u2069" and "isolate" in stack:
            while stack.pop() != "isolate":
                pass
    return len(stack)


@pytest.mark.parametrize("command", ["show", "report", "runs", "compare"])
def test_an_error_naming_a_hostile_value_prints_it_escaped(
    stored: tuple[Path, str, str], command: str
) -> None:
    """A user error names the value it could not use; an escape sequence in it stays text."""
    store, a, _ = stored
    hostile = "\x1b]52;c;ZWNobw==\x07\x1b[2J" + HOSTILE[0]
    args = [command, hostile] + ([a] if command == "compare" else [])
    code, output = _invoke(*args, "--store", str(store))
    assert code == 2, output
    _assert_shown_as_text(output)
    assert "\\x1b]52" in output


def test_import_summary_and_warnings_show_the_files_text_escaped(tmp_path: Path) -> None:
    """``import-results`` quotes the file (columns no field reads, text attempt labels): on
    one line each, escaped."""
    column = "x\x1b]52;c;ZWNobw==\x07\nFORGED\u202e"
    rows = [
        {"task_id": "a", "attempt": f"trial\x1b[2J{i}\rFORGED", "success": i == 0, column: 1}
        for i in range(2)
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, output = _invoke(
        "import-results", str(path), "--name", "n", "--store", str(tmp_path / "r.db")
    )
    assert code == 0, output
    _assert_shown_as_text(output)
    assert "ignored columns" in output and "\\x1b]52" in output


def test_a_narrow_terminal_folds_long_values_and_cuts_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 80 columns two slices ``refund_policy_v2_pilot_group_alpha`` and ``..._beta`` read
    ``refund…`` both, and an interval could lose its bound: every summary cell folds."""
    slices = ("refund_policy_v2_pilot_group_alpha", "refund_policy_v2_pilot_group_beta")
    rows = [
        {"task_id": f"t{i}", "attempt": a, "success": (i + a) % 3 == 0,
         "slice_labels": [slices[i % 2]], "terminal_reason": "success" if (i + a) % 3 == 0
         else "agent_failure/a_rather_long_terminal_reason_from_another_harness"}
        for i in range(6) for a in range(2)
    ]  # fmt: skip
    path, store = tmp_path / "rows.jsonl", tmp_path / "r.db"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out = _invoke("import-results", str(path), "--name", "n", "--store", str(store))
    batch = out.strip().splitlines()[-1].removeprefix("batch ")
    monkeypatch.setattr("groundstate.cli.runs.console", lambda: Console(width=80, emoji=False))
    code, out = _invoke("report", batch, "--store", str(store))
    assert code == 0, out
    assert "…" not in out
    assert "_alpha" in out and "_beta" in out
    flipped = tmp_path / "flipped.jsonl"
    flipped.write_text("".join(
        json.dumps({**r, "success": not r["success"], "terminal_reason": "success"
                    if not r["success"] else "agent_failure/another_long_reason_of_theirs"}) + "\n"
        for r in rows
    ))  # fmt: skip
    code, out = _invoke("import-results", str(flipped), "--name", "m", "--store", str(store))
    other = out.strip().splitlines()[-1].removeprefix("batch ")
    monkeypatch.setattr("groundstate.cli.diagnosis.console", lambda: Console(width=80))
    code, out = _invoke("agreement", batch, other, "--on", "terminal_reason", "--store", str(store))
    assert code == 0, out
    assert "…" not in out
