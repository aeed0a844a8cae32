"""``groundstate import-tau2``: τ²-bench's retail domain as a groundstate suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from groundstate.cli import main, seed_option

if TYPE_CHECKING:  # the library is imported inside each command: a quick --help
    from groundstate.tau2 import ImportReport

SWITCH = click.Choice(["required", "report", "off"])


@main.command("import-tau2")
@click.argument("data_dir", type=click.Path(path_type=Path))
@click.option(
    "--into", type=click.Path(path_type=Path), required=True, help="Suite folder to write."
)
@click.option(
    "--world",
    type=click.Choice(["task", "full"]),
    default="task",
    show_default=True,
    help="Fixtures hold each task's users, look-alikes and products (task), or all of db.json.",
)
@click.option("--task", "tasks", multiple=True, help="Convert only this τ² task id (repeatable).")
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    help="Convert a seeded random sample of this many tasks (all, if fewer).",
)
@seed_option("Seed of --sample.")
@click.option(
    "--mutation-testing",
    type=SWITCH,
    default="report",
    show_default=True,
    help="The suite's mutation_testing switch.",
)
@click.option(
    "--tool-robustness",
    type=SWITCH,
    default="required",
    show_default=True,
    help="The suite's tool_robustness switch.",
)
@click.option("--audit", is_flag=True, help="Validate the suite and print the audit.")
@click.option("--json", "as_json", is_flag=True, help="Print the import report (and audit).")
def import_tau2_command(
    data_dir: Path,
    into: Path,
    world: str,
    tasks: tuple[str, ...],
    sample: int | None,
    seed: int,
    mutation_testing: str,
    tool_robustness: str,
    audit: bool,
    as_json: bool,
) -> None:
    """Convert τ²-bench's retail DATA_DIR (db.json, tasks.json, policy.md...) into a suite.

    Each task's gold actions become its oracle, the state they leave its outcome assertion,
    its communicate_info required agent messages; the policy becomes constraints. With
    --audit, the suite is validated and the audit printed (docs/tau2-audit.md).
    """
    from groundstate.spec.suite import load_suite
    from groundstate.tau2 import ImportOptions, import_tau2
    from groundstate.tau2.audit import audit_suite, summary_lines, to_dict
    from groundstate.tau2.importer import Switch
    from groundstate.tau2.world import World
    from groundstate.validation import validate_suite

    options = ImportOptions(
        world=cast(World, world),
        tasks=list(tasks),
        sample=sample,
        seed=seed,
        mutation_testing=cast(Switch, mutation_testing),
        tool_robustness=cast(Switch, tool_robustness),
    )
    report = import_tau2(data_dir, into, options)
    output: dict[str, object] = {"import": report.model_dump()}
    lines = _report_lines(report)
    if audit:
        suite = load_suite(into)
        result = audit_suite(suite, validate_suite(suite), report)
        output["audit"] = to_dict(result)
        lines += summary_lines(result)
    if as_json:
        click.echo(json.dumps(output, indent=2, ensure_ascii=False))
    else:
        for line in lines:
            click.echo(line)


def _report_lines(report: ImportReport) -> list[str]:
    lines = [f"wrote {len(report.converted)} of {report.source_tasks} τ² tasks to {report.suite}"]
    lines += [f"  not converted: τ² task {tid}: {why}" for tid, why in report.unconverted.items()]
    completed = sum(any(n.startswith("added ") for n in note.notes) for note in report.notes)
    if completed:
        lines.append(f"  {completed} gold action lists completed with the reads the policy needs")
    lines.append(f"next: groundstate validate {report.suite}")
    return lines
