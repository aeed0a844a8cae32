"""Commands that plan batches and diagnose failures (plan, agreement, sample-failures, labels)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from groundstate.analysis import outcomes
from groundstate.cli import STORE_OPTION, console, main
from groundstate.cli.integrity import EXIT_ALTERED, warn
from groundstate.planning import Plan, plan
from groundstate.records import AgentRun
from groundstate.stats import TaskCounts, task_counts
from groundstate.store import BatchInfo, RunStore


def _read_batches(
    store: Path, batch_ids: tuple[str, ...]
) -> list[tuple[BatchInfo, list[AgentRun]]]:
    """Each batch and its runs, verified first (altered records are named on stderr)."""
    read = []
    with RunStore(store) as run_store:
        for batch_id in batch_ids:
            batch = run_store.batch(batch_id)
            if warn(run_store.verify(batch.batch_id)):
                click.echo(f"error: records of batch {batch.batch_id} are altered", err=True)
                sys.exit(EXIT_ALTERED)
            read.append((batch, run_store.runs(batch.batch_id)))
    return read


# --- plan -------------------------------------------------------------------------------------


@main.command("plan")
@click.argument("batch_ids", nargs=-1, required=True, metavar="BATCH [BATCH_B]")
@click.option("--delta", type=float, default=0.05, show_default=True, help="Difference to detect.")
@click.option("--power", type=float, default=0.8, show_default=True, help="Power wanted.")
@click.option("--alpha", type=float, default=0.05, show_default=True, help="Two-sided level.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@STORE_OPTION
def plan_command(
    batch_ids: tuple[str, ...], delta: float, power: float, alpha: float, as_json: bool, store: Path
) -> None:
    """Plan the next batch from a pilot BATCH (or a pair: paired differences).

    Prints the between- and within-task variance, the intra-class correlation and design
    effect, the tasks needed per number of attempts to detect --delta with --power, a power
    grid, and what one more attempt per task buys against one more task.
    """
    if len(batch_ids) > 2:
        raise click.UsageError("plan takes one pilot batch or two")
    pilots: list[list[TaskCounts]] = [
        task_counts(outcomes(batch, runs), "valid")
        for batch, runs in _read_batches(store, batch_ids)
    ]
    result = plan(pilots, delta=delta, power=power, alpha=alpha)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        _print_plan(console(), result)


def _print_plan(out: Console, result: Plan) -> None:
    parts = Table(title="variance components (per attempt, valid attempts)")
    for column in ("pilot", "tasks", "attempts/task", "mean", "between", "within", "ICC", "deff"):
        parts.add_column(column)
    for i, c in enumerate(result.components):
        icc = "n/a" if c.icc is None else f"{c.icc:.3f}"
        parts.add_row(
            "AB"[i], str(c.n_tasks), f"{c.attempts:.1f}", f"{c.mean:.3f}",
            f"{c.between:.4f}", f"{c.within:.4f}", icc, f"{c.design_effect:.2f}",
        )  # fmt: skip
    out.print(parts)
    d = result.difference
    kind = "paired differences of the two pilots" if d.paired_pilot else "assumed (one pilot)"
    out.print(
        f"difference variance ({kind}): between {d.between:.4f}, within {d.within:.4f}; "
        f"Var(mean diff) = {d.weight_inflation:.2f} x (between/T + within/(T K))"
    )
    needed = Table(
        title=f"tasks needed to detect {result.delta:g} with power {result.power:g} "
        f"(two-sided alpha {result.alpha:g})"
    )
    needed.add_column("attempts per task (K)")
    needed.add_column("tasks (T)")
    needed.add_column("runs per system (T x K)")
    for k, t in result.tasks_needed.items():
        needed.add_row(str(k), str(t), str(t * k))
    out.print(needed)
    grid = Table(title="power by tasks (rows) and attempts per task (columns)")
    ks = sorted(next(iter(result.power_grid.values())))
    grid.add_column("T")
    for k in ks:
        grid.add_column(f"K={k}")
    for t, row in result.power_grid.items():
        grid.add_row(str(t), *(f"{row[k]:.2f}" for k in ks))
    out.print(grid)
    m = result.marginal
    out.print(
        f"at the pilot's design (T={m.tasks}, K={m.attempts}): one more attempt per task cuts "
        f"the variance by {m.one_more_attempt:.2e} ({m.per_run_attempt:.2e} per run), one more "
        f"task by {m.one_more_task:.2e} ({m.per_run_task:.2e} per run): add {m.better}s"
    )
    for line in result.warnings:
        out.print(f"[yellow]warning:[/] {line}")
