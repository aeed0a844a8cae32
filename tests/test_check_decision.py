"""The decision a suite serves: declared in suite.yaml, warned about when missing, shown with
every report and comparison (terminal, JSON and HTML)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from groundstate.analysis import batch_report, comparison_report, summarize_batch, tries
from groundstate.cli import main
from groundstate.errors import SpecError
from groundstate.records import AgentRun
from groundstate.report.html import render_batch, render_comparison
from groundstate.report.terminal import batch_table, comparison_tables
from groundstate.runner import BatchConfig, run_batch
from groundstate.spec.suite import load_suite
from groundstate.spec.system import load_system
from groundstate.stats import Outcome, compare
from groundstate.store import BatchInfo, RunStore

from .conftest import BANK, BANK_SYSTEM

Declared = tuple[BatchInfo, BatchInfo, list[AgentRun]]
DECISION = "Ship the <bank> bot to all customers?"
DECLARED = f"""name: bank
decision: {DECISION}
population:
  description: transfers between a customer's own accounts
  sampling: hand-written, one task per rule
"""


@pytest.fixture(scope="module")
def declared(tmp_path_factory: pytest.TempPathFactory) -> Declared:
    """A one-attempt batch of the bank suite with its decision declared, and the same batch
    as a store before the field existed would hold it."""
    root = tmp_path_factory.mktemp("suite") / "bank"
    shutil.copytree(BANK, root)
    suite_file = root / "suite.yaml"
    suite_file.write_text(suite_file.read_text().replace("name: bank\n", DECLARED))
    with RunStore(tmp_path_factory.mktemp("store") / "runs.db") as store:
        result = run_batch(
            load_suite(root), load_system(BANK_SYSTEM), BatchConfig(1), store, validate=False
        )
        runs = store.runs(result.batch.batch_id)
    undeclared = result.batch.model_copy(
        update={"batch_id": "old0old0old0", "decision": None, "population": None}
    )
    return result.batch, undeclared, runs


def test_the_batch_records_the_decision(declared: Declared) -> None:
    batch, _, runs = declared
    assert batch.decision == DECISION
    assert batch.population == {
        "description": "transfers between a customer's own accounts",
        "sampling": "hand-written, one task per rule",
    }
    data = batch_report(batch, runs)
    assert (data["decision"], data["population"]) == (batch.decision, batch.population)


def _text(renderable: object) -> str:
    console = Console(record=True, width=200)
    console.print(renderable)
    return console.export_text()


def test_the_terminal_report_shows_it_beside_the_numbers(
    declared: Declared,
) -> None:
    batch, undeclared, _ = declared
    text = _text(batch_table(batch, []))
    assert f"decision: {DECISION}" in text
    assert "population: transfers between a customer's own accounts" in text
    assert "sampled: hand-written, one task per rule" in text
    assert "decision: not declared (add decision: and population: to suite.yaml)" in _text(
        batch_table(undeclared, [])
    )


def test_the_comparison_shows_both_sides(declared: Declared) -> None:
    batch, undeclared, _ = declared
    outcomes = [Outcome("transfer", 1, True, valid=True)]
    data = comparison_report(undeclared, batch, compare(outcomes, outcomes))
    assert data["decision_b"] == {"decision": DECISION, "population": batch.population}
    console = Console(record=True, width=300)
    comparison_tables(console, data)
    text = console.export_text()
    assert "a: decision: not declared" in text
    assert f"b: decision: {DECISION} · population: transfers" in text
    page = render_comparison(undeclared, batch, compare(outcomes, outcomes))
    assert "b: Decision:</b> Ship the &lt;bank&gt; bot" in page
    assert "a: Decision: not declared" in page


def test_the_html_report_shows_it_escaped(declared: Declared) -> None:
    batch, undeclared, runs = declared
    page = render_batch(batch, runs, summarize_batch(batch, runs), tries(batch, runs))
    assert "<b>Decision:</b> Ship the &lt;bank&gt; bot to all customers?" in page
    assert "<b>sampled:</b> hand-written, one task per rule" in page
    old = render_batch(undeclared, runs, summarize_batch(undeclared, runs), tries(undeclared, runs))
    assert "Decision: not declared" in old


def test_validate_warns_when_the_decision_is_missing(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["validate", str(BANK), "--store", str(tmp_path / "s.db")])
    assert f"warning: {BANK / 'suite.yaml'}: decision: not declared" in result.stderr
    assert f"warning: {BANK / 'suite.yaml'}: population: not declared" in result.stderr


@pytest.mark.parametrize(
    ("population", "field"),
    [
        ("population: everyone\n", "population"),
        ("population: {description: everyone}\n", "population.sampling"),
        ("population: {description: '', sampling: random}\n", "population.description"),
    ],
)
def test_a_malformed_population_is_refused(tmp_path: Path, population: str, field: str) -> None:
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    (root / "suite.yaml").write_text((root / "suite.yaml").read_text() + population)
    with pytest.raises(SpecError) as raised:
        load_suite(root)
    assert raised.value.field == field
