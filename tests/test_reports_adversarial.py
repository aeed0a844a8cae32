"""Reports and exports against an outside team's batches: markup and template text in task
ids and labels, right-to-left text, all-invalid batches, costs near the float limit. The
HTML must keep every such value as text, ``--json`` must be strict JSON, and rows must
export and import back unchanged."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundstate.cli import main

HOSTILE_IDS = (
    "<script>alert(1)</script>",
    "</textarea><img src=x onerror=alert(2)>",
    "{{ 7*7 }}{% raw %}",
    "javascript:alert(3)",
    "a\"b'c&amp;",
    "\u05e9\u05dc\u05d5\u05dd\u202eabc",
)
"""Task ids that are markup, template syntax, a URL scheme, quotes and entities, and a
right-to-left override: each must reach the page as the same text and nothing else."""


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    if result.exit_code == 1:
        raise result.exception  # type: ignore[misc]
    return result.exit_code, result.stdout, result.stderr


def _import(store: Path, path: Path) -> str:
    code, out, err = _invoke(
        "import-results", str(path), "--name", "outside", "--store", str(store)
    )
    assert code == 0, err
    return out.strip().splitlines()[-1].removeprefix("batch ")


def _rows_file(tmp_path: Path, rows: list[dict[str, Any]], name: str = "rows.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _strict(text: str) -> Any:
    def refuse(token: str) -> Any:
        raise AssertionError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


class _Page(HTMLParser):
    """Elements, attributes and text of a page, as a browser's parser would see them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    page.close()
    return page


def _assert_inert(html: str, hostile: tuple[str, ...]) -> None:
    """Only the page's own script, no element from the data, no handler attribute, no URL
    that leaves the page, and every hostile value present as plain text."""
    page = _parse(html)
    scripts = [attrs for tag, attrs in page.tags if tag == "script"]
    assert len(scripts) <= 1 and all(not a.get("src") for a in scripts)
    assert not [t for t, _ in page.tags if t in {"img", "iframe", "textarea", "object", "embed"}]
    for _, attrs in page.tags:
        assert not [k for k in attrs if k.startswith("on")], attrs
        for key in ("href", "src", "action"):
            value = attrs.get(key) or ""
            assert value == "" or value.startswith("#"), attrs
    text = "".join(page.text)
    for value in hostile:
        assert value in text, value


def test_hostile_task_ids_and_labels_stay_text_in_the_html_report(tmp_path: Path) -> None:
    rows = [
        {"task_id": t, "attempt": a, "success": (i + a) % 2 == 0, "slice_labels": [t],
         "terminal_reason": "success" if (i + a) % 2 == 0 else "agent_failure/x"}
        for i, t in enumerate(HOSTILE_IDS) for a in range(2)
    ]  # fmt: skip
    store = tmp_path / "r.db"
    batch = _import(store, _rows_file(tmp_path, rows))
    out = tmp_path / "r.html"
    code, _, err = _invoke("report", batch, "--html", str(out), "--store", str(store))
    assert code == 0, err
    html = out.read_text()
    _assert_inert(html, HOSTILE_IDS)
    assert "49" not in _parse(html).text  # the template text was not evaluated


def test_hostile_ids_stay_text_in_the_comparison_page(tmp_path: Path) -> None:
    rows = [{"task_id": t, "attempt": 0, "success": True} for t in HOSTILE_IDS]
    flipped = [{**r, "success": i % 2 == 0} for i, r in enumerate(rows)]
    store = tmp_path / "r.db"
    a = _import(store, _rows_file(tmp_path, rows, "a.jsonl"))
    b = _import(store, _rows_file(tmp_path, flipped, "b.jsonl"))
    out = tmp_path / "c.html"
    code, _, err = _invoke("compare", a, b, "--html", str(out), "--store", str(store))
    assert code == 0, err
    _assert_inert(out.read_text(), ())


BATCHES: dict[str, list[dict[str, Any]]] = {
    "all invalid": [
        {"task_id": "a", "attempt": 0, "success": False, "terminal_reason": "environment_failure"},
        {"task_id": "b", "attempt": 0, "success": False, "terminal_reason": "grader_failure/x"},
    ],
    "one task one attempt": [{"task_id": "only", "attempt": 0, "success": True}],
    "unequal attempts": [
        {"task_id": "a", "attempt": i, "success": i % 2 == 0} for i in range(5)
    ] + [{"task_id": "b", "attempt": 0, "success": False}],
    "costs near the float limit": [
        {"task_id": t, "attempt": i, "success": i == 0, "cost": 1e308, "latency": 1.7e308}
        for t in ("a", "b") for i in range(2)
    ],
    "all invalid with huge costs": [
        {"task_id": "a", "attempt": i, "success": False, "cost": 1e308,
         "terminal_reason": "environment_failure"} for i in range(3)
    ],
}  # fmt: skip


@pytest.mark.parametrize("name", BATCHES)
def test_every_output_of_an_odd_batch_is_strict_and_honest(tmp_path: Path, name: str) -> None:
    store = tmp_path / "r.db"
    batch = _import(store, _rows_file(tmp_path, BATCHES[name]))
    # a batch with no valid attempt has no estimate: exit 3, as run (0 until round 27)
    expected = 3 if name.startswith("all invalid") else 0
    code, out, err = _invoke("report", batch, "--json", "--store", str(store))
    assert code == expected, err
    data = _strict(out)
    for key in ("n_tasks", "valid_attempts", "invalid_attempts", "terminal_reasons",
                "pass_at_k", "pass_hat_k", "tasks"):  # fmt: skip
        assert key in data, key
    for estimate in [*data["pass_at_k"].values(), *data["pass_hat_k"].values()]:
        assert {"estimate", "ci_low", "ci_high"} <= set(estimate)
    cost = data["summary"]["cost"]
    for key in ("mean", "median", "p90"):
        if cost["unknown"] == data["summary"]["attempts"]:  # no row gives a cost: not 0
            assert cost[key] is None
        else:
            assert math.isfinite(cost[key]) and cost[key] <= 1.7976931348623157e308
    code, text, err = _invoke("report", batch, "--store", str(store))
    assert code == expected, err
    assert "nan" not in text.lower().split() and "inf" not in text.lower().split()
    assert not re.search(r"\d{30}", text)  # no 309-digit number
    page = tmp_path / "r.html"
    code, _, err = _invoke("report", batch, "--html", str(page), "--store", str(store))
    assert code == expected, err
    words = "".join(_parse(page.read_text()).text).split()
    assert not {"nan", "NaN", "inf", "Infinity", "None"} & set(words)


def test_huge_costs_give_their_exact_mean_and_no_total(tmp_path: Path) -> None:
    store = tmp_path / "r.db"
    batch = _import(store, _rows_file(tmp_path, BATCHES["costs near the float limit"]))
    data = _strict(_invoke("report", batch, "--json", "--store", str(store))[1])
    cost = data["summary"]["cost"]
    assert cost["mean"] == cost["median"] == cost["p90"] == 1e308
    assert cost["total"] is None  # 4e308 is beyond a float: unknown, not infinity
    assert data["summary"]["cost_per_success"] is None  # 4e308 over 2 successes


def test_all_invalid_batch_states_no_number_for_the_valid_view(tmp_path: Path) -> None:
    store = tmp_path / "r.db"
    batch = _import(store, _rows_file(tmp_path, BATCHES["all invalid"]))
    data = _strict(_invoke("report", batch, "--json", "--store", str(store))[1])
    assert data["valid_attempts"] == 0 and data["invalid_attempts"] == 2
    assert data["pass_hat_k"] == {} or all(
        v["estimate"] is None for v in data["pass_hat_k"].values()
    )


ROUND_TRIP_IDS = (*HOSTILE_IDS, 'comma, and "quote"', "line\nbreak", "=SUM(A1)", " padded ")


def _exported(store: Path, batch: str, fmt: str, out: Path) -> list[dict[str, str]]:
    code, _, err = _invoke(
        "export", batch, "--format", fmt, "--out", str(out), "--store", str(store)
    )
    assert code == 0, err
    text = out.read_text()
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(text, newline="")))
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_hostile_rows_export_and_import_back_exactly(tmp_path: Path, fmt: str) -> None:
    rows = [
        {"task_id": t, "attempt": a, "success": a == 0, "cost": 0.1 * (i + 1),
         "latency": 1e-7 * (a + 1), "slice_labels": [t, "z"]}
        for i, t in enumerate(ROUND_TRIP_IDS) for a in range(2)
    ]  # fmt: skip
    store = tmp_path / "r.db"
    first = _import(store, _rows_file(tmp_path, rows))
    exported = _exported(store, first, fmt, tmp_path / f"one.{fmt}")
    assert sorted({r["task_id"] for r in exported}) == sorted(ROUND_TRIP_IDS)
    second = _import(store, tmp_path / f"one.{fmt}")
    assert _exported(store, second, fmt, tmp_path / f"two.{fmt}") == exported


def test_labelling_sheet_keeps_hostile_text_inert_and_still_imports(tmp_path: Path) -> None:
    ids = (*HOSTILE_IDS, '=HYPERLINK("http://x")', "+1+1", "@SUM(A1)", "-2")
    rows = [
        {"task_id": t, "attempt": 0, "success": False, "slice_labels": [t],
         "terminal_reason": "agent_failure/incorrect_state"} for t in ids
    ]  # fmt: skip
    store, out = tmp_path / "r.db", tmp_path / "sheet"
    batch = _import(store, _rows_file(tmp_path, rows))
    code, _, err = _invoke(
        "sample-failures", batch, "--n", str(len(ids)), "--out", str(out), "--store", str(store)
    )
    assert code == 0, err
    _assert_inert((out / "sheet.html").read_text(), ids)
    jsonl = [json.loads(line) for line in (out / "sheet.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in jsonl) == sorted(ids)  # kept exactly
    with (out / "sheet.csv").open(newline="") as handle:
        sheet = list(csv.DictReader(handle))
    for row in sheet:
        for key in ("task_id", "slices"):
            assert not row[key].startswith(("=", "+", "-", "@")), row[key]
        row["labels"] = "planning;recovery"
    assert sorted(r["task_id"].removeprefix("'") for r in sheet) == sorted(ids)
    filled = tmp_path / "filled.csv"
    with filled.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(sheet[0]))
        writer.writeheader()
        writer.writerows(sheet)
    code, _, err = _invoke(
        "labels", "import", str(filled), "--annotator", "ann", "--taxonomy",
        str(out / "taxonomy.yaml"), "--store", str(store),
    )  # fmt: skip
    assert code == 0, err
