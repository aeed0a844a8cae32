"""Round 27: a message that names a list of things says the number of the list ("unknown
field 'x'", "unknown fields 'x', 'y'"; it said "unknown field(s) 'x'", "the question(s) at
step 5", "at step(s) [1]"); ``plan`` prints no bracket inside a bracket ("difference variance
(assumed (one pilot))"); an HTML page writes a minus one way ("b \u2212 a", with U+2212,
above "-0.250")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import groundstate
from groundstate.diagnosis.labels import LabelFileError, _check_header
from groundstate.rounding import counted
from groundstate.spec.system import _check_prompt_fields
from tests.test_stats_round24 import Row, cli, imported

SRC = Path(groundstate.__file__).parent

LEFT_TO_THE_READER = re.compile(r"\b[a-z]+\((?:s|es)\)")
"""A plural left to the reader: "field(s)", "step(s)", "batch(es)"."""


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings (prose, not messages)."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.add(id(value))
    return found


def test_no_string_of_the_package_leaves_a_plural_to_the_reader() -> None:
    """Every string literal (f-strings' text included) but docstrings: round 26 looked only
    at "{n} task(s)", a count before the noun; a list after it ("unknown field(s) 'a'",
    "missing column(s): labels", "stored label(s) x are", "the question(s) at step 5", "in
    tool output at step(s) [1]", "outcome assertion(s) a hold") went on. Fails on the old
    code (six messages)."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        prose = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                sql = re.match(r"\s*(SELECT|WITH|CREATE|INSERT)\b", node.value)  # cardinality(s)
                if id(node) not in prose and not sql and LEFT_TO_THE_READER.search(node.value):
                    found.append(f"{path.relative_to(SRC)}:{node.lineno}: {node.value!r}")
    assert found == []


@pytest.mark.parametrize(
    ("count", "noun", "plural", "word"),
    [(1, "field", None, "field"), (2, "field", None, "fields"), (0, "step", None, "steps"),
     (1, "is", "are", "is"), (3, "is", "are", "are"), (1, "try", "tries", "try"),
     (2, "try", "tries", "tries")],
)  # fmt: skip
def test_inflected_is_the_noun_counted_gives(
    count: int, noun: str, plural: str | None, word: str
) -> None:
    from groundstate.rounding import inflected  # new in round 27

    assert inflected(count, noun, plural) == word
    assert counted(count, noun, plural) == f"{count} {word}"


def test_a_prompt_names_its_unknown_fields_in_their_number() -> None:
    with pytest.raises(ValueError, match=r"^prompt: unknown field 'tsak' \(known: "):
        _check_prompt_fields("Do {tsak}")
    with pytest.raises(ValueError, match=r"^prompt: unknown fields 'a', 'b' \(known: "):
        _check_prompt_fields("{b} and {a}")


def test_a_label_sheet_names_its_missing_columns_in_their_number(tmp_path: Path) -> None:
    sheet = tmp_path / "a.csv"
    with pytest.raises(LabelFileError, match=r"a\.csv:1: missing column: labels$"):
        _check_header(sheet, ["run_id", "note"])
    with pytest.raises(LabelFileError, match=r"a\.csv:1: missing columns: labels, run_id$"):
        _check_header(sheet, ["note"])


# --- plan ----------------------------------------------------------------------------------

PILOT = [Row(t, j, "success" if (ord(t) + j) % 3 else "agent_failure/x")
         for t in "abcde" for j in range(2)]  # fmt: skip


def test_plan_of_one_pilot_puts_no_bracket_in_a_bracket(tmp_path: Path) -> None:
    """Fails on the old code: "difference variance (assumed (one pilot)): between ..."."""
    pilot = imported(tmp_path, PILOT, "pilot")
    code, out, err = cli("plan", pilot, "--store", str(tmp_path / "s.db"))
    assert code == 0, err
    flat = " ".join(out.split())
    assert "difference variance (assumed from one pilot): between" in flat
    assert not re.search(r"\([^()]*\(", flat.split("difference variance")[1].split(";")[0])


# --- one minus sign on a page --------------------------------------------------------------


def test_a_comparison_page_writes_every_minus_as_its_numbers_do(tmp_path: Path) -> None:
    """b is worse: its differences print as "-0.400" (the same text as the terminal and
    JSON); the headings said "b \u2212 a" and the axis "\u22121" (U+2212). Fails on the old code."""
    a = imported(tmp_path, [Row(t, 0, "success") for t in "abcde"], "a")
    b = imported(
        tmp_path, [Row(t, 0, "success" if t in "abc" else "agent_failure/x") for t in "abcde"], "b"
    )
    page = tmp_path / "c.html"
    code, _, err = cli("compare", a, b, "--html", str(page), "--store", str(tmp_path / "s.db"))
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    assert "\u2212" not in html
    assert "-0.400" in html and "b - a" in html


def test_a_report_page_writes_no_other_minus(tmp_path: Path) -> None:
    rows = [Row(t, j, "success" if j else "agent_failure/x") for t in "abcde" for j in range(2)]
    page = tmp_path / "r.html"
    code, _, err = cli(
        "report", imported(tmp_path, rows, "r"), "--html", str(page),
        "--store", str(tmp_path / "s.db"),
    )  # fmt: skip
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    assert "\u2212" not in html and "T - 1 degrees of freedom" in html


# --- the example suite stands apart from the τ² package ---------------------------------------


def test_the_example_retail_checks_import_nothing_of_the_tau2_package() -> None:
    """examples/retail/checks.py read a cancellation's reason words from
    ``groundstate.tau2.retail_checks``: an example suite tied to the τ² importer. Both now
    read them from ``groundstate.grading.cancel_reasons``. Fails on the old code."""
    checks = SRC.parent.parent / "examples" / "retail" / "checks.py"
    imported_names = [
        node.module or ""
        for node in ast.walk(ast.parse(checks.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom)
    ] + [
        alias.name
        for node in ast.walk(ast.parse(checks.read_text(encoding="utf-8")))
        if isinstance(node, ast.Import)
        for alias in node.names
    ]
    assert "groundstate.grading.cancel_reasons" in imported_names
    assert not [name for name in imported_names if name.startswith("groundstate.tau2")]
    from groundstate.grading import cancel_reasons
    from groundstate.tau2 import retail_checks

    assert retail_checks.REASON_WORDS is cancel_reasons.REASON_WORDS
