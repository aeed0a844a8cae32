"""Commands that prove and lock suites (validate, lock, regress)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from groundstate.cli import STORE_OPTION, main
from groundstate.spec.suite import load_suite
from groundstate.store import RunStore
from groundstate.validation import (
    CHECKS,
    SuiteValidity,
    check_lock,
    lock_suite,
    regress,
    validate_suite,
)


@main.command()
@click.argument("suite", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the validity report as JSON.")
@click.option(
    "--no-cache", is_flag=True, help="Prove every task again, ignoring (and not storing) results."
)
@STORE_OPTION
def validate(suite: Path, as_json: bool, no_cache: bool, store: Path) -> None:
    """Prove every task of SUITE; exit 1 unless every task is valid.

    Each task is checked for a checked reset, a passing oracle, passing alternatives,
    failing known-bad solutions and straw agents, a grader that notices every state-changing
    oracle step, and a deterministic verdict. Results are cached in the run store, keyed by
    everything they depend on.
    """
    loaded = load_suite(suite)
    if no_cache:
        result = validate_suite(loaded)
    else:
        with RunStore(store) as run_store:
            result = validate_suite(loaded, store=run_store)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        _print_validity(Console(), result)
    if not result.valid:
        sys.exit(1)


@main.command()
@click.argument("suite", type=click.Path(path_type=Path))
@click.option(
    "--check", is_flag=True, help="Compare SUITE with its lock instead; exit 1 if it differs."
)
def lock(suite: Path, check: bool) -> None:
    """Write SUITE/suite.lock: the hashes of its files, tasks, solutions and graders."""
    loaded = load_suite(suite)
    if not check:
        path = lock_suite(loaded)
        count = len(loaded.tasks)
        click.echo(f"locked {count} task{'s' if count != 1 else ''} in {path}")
        return
    lines = check_lock(loaded)
    for line in lines:
        click.echo(line)
    if lines:
        sys.exit(1)
    click.echo(f"{suite} matches its lock")


@main.command("regress")
@click.argument("run_id")
@click.option(
    "--into",
    type=click.Path(path_type=Path),
    required=True,
    help="Suite folder to add the regression task to (made if missing).",
)
@click.option(
    "--suite",
    "suite_path",
    type=click.Path(path_type=Path),
    default=None,
    help="The run's suite (default: the folder its batch recorded).",
)
@STORE_OPTION
def regress_command(run_id: str, into: Path, suite_path: Path | None, store: Path) -> None:
    """Turn the failing run RUN_ID into a regression task; print the new task file."""
    with RunStore(store) as run_store:
        run = run_store.run(run_id)
        origin = suite_path or Path(run_store.batch(run.batch_id).suite_path)
    click.echo(regress(run, load_suite(origin), into=into))


_HEADERS = {
    "other_routes": "other\nroutes",
    "discriminating": "discri-\nminating",
    "grader_sensitivity": "grader\nsensi-\ntivity",
    "grader_determinism": "grader\ndeter-\nminism",
}
"""Column headers narrow enough for a task id to fit beside them in 80 columns."""


def _print_validity(console: Console, result: SuiteValidity) -> None:
    table = Table(
        title=f"suite {result.suite} · {result.suite_hash[:12]}",
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        show_edge=False,
    )
    table.add_column("task", no_wrap=True)
    for name in CHECKS:
        table.add_column(_HEADERS.get(name, name))
    for task in result.tasks:
        cells = ["pass" if c.passed else "[bold red]FAIL[/]" for c in task.checks]
        table.add_row(task.task_id, *cells)
    console.print(table)
    for task in result.tasks:
        for check in task.failures:
            line = Text.assemble((task.task_id, "bold"), f" · {check.name}: {check.detail}")
            console.print(line, highlight=False)
    valid = sum(task.valid for task in result.tasks)
    console.print(f"{valid} of {len(result.tasks)} tasks valid")
