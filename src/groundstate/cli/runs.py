"""Commands that run batches and read what they stored."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from groundstate.cli import STORE_OPTION, main
from groundstate.records import AgentRun
from groundstate.report.terminal import batch_table, print_run
from groundstate.runner import BatchConfig, BatchResult, run_batch
from groundstate.spec.suite import load_suite
from groundstate.spec.system import load_system
from groundstate.store import RunStore


@main.command()
@click.argument("suite", type=click.Path(path_type=Path))
@click.option(
    "--system",
    "system_file",
    type=click.Path(path_type=Path),
    required=True,
    help="System file (system.yaml).",
)
@click.option(
    "--attempts",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Attempts per task.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Batch seed; attempt seeds derive from it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the batch as JSON.")
@STORE_OPTION
def run(
    suite: Path, system_file: Path, attempts: int, seed: int, as_json: bool, store: Path
) -> None:
    """Run every task of SUITE --attempts times with the system in --system."""
    loaded_suite, system = load_suite(suite), load_system(system_file)
    with RunStore(store) as run_store:
        result = run_batch(
            loaded_suite, system, BatchConfig(attempts=attempts, seed=seed), run_store
        )
    if as_json:
        click.echo(json.dumps(_batch_json(result), indent=2))
        return
    console = Console()
    console.print(batch_table(result.batch, result.runs))
    console.print(_pass_hat_1_line(result))
    console.print(f"stored in {store} · batch {result.batch.batch_id}")


@main.command()
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print the whole AgentRun record.")
@STORE_OPTION
def show(run_id: str, as_json: bool, store: Path) -> None:
    """Show one run's verdict, evidence and trace."""
    with RunStore(store) as run_store:
        record = run_store.run(run_id)
    if as_json:
        click.echo(record.model_dump_json(indent=2))
    else:
        print_run(Console(), record)


def _batch_json(result: BatchResult) -> dict[str, Any]:
    return {
        "batch_id": result.batch.batch_id,
        "system_spec_hash": result.batch.system_spec_hash,
        "suite": result.batch.suite,
        "tasks": len(result.batch.task_revisions),
        "attempts": result.batch.attempts,
        "runs": [_run_json(r) for r in result.runs],
        "terminal_reasons": dict(Counter(r.terminal_reason for r in result.runs)),
    }


def _run_json(run: AgentRun) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "task_id": run.task_id,
        "attempt": run.attempt,
        "terminal_reason": run.terminal_reason,
        "success": run.success,
    }


def _pass_hat_1_line(result: BatchResult) -> str:
    weights = result.batch.task_weights
    rates = {}
    for task_id in weights:
        valid = [r for r in result.runs if r.task_id == task_id and r.valid]
        if valid:
            rates[task_id] = sum(r.success for r in valid) / len(valid)
    if not rates:
        return "pass^1: no valid attempts"
    value = sum(weights[t] * p for t, p in rates.items()) / sum(weights[t] for t in rates)
    n_valid = sum(r.valid for r in result.runs)
    total = len(result.runs)
    return f"pass^1 = {value:.3f}  ({len(rates)} tasks, {n_valid} valid attempts of {total})"
