"""Commands that bring results in from other harnesses and take batches out to other tools."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from groundstate.cli import STORE_OPTION, main, said
from groundstate.cli.integrity import EXIT_ALTERED, warn
from groundstate.errors import one_line
from groundstate.rounding import counted

if TYPE_CHECKING:  # the library is imported inside each command: a quick --help
    from groundstate.exports import ExportFormat
    from groundstate.importers import ImportReport

IMPORT_FORMATS = (
    "csv", "jsonl", "tau-bench", "tau2-bench", "inspect", "swe-bench", "harbor",
    "terminal-bench", "appworld",
)  # fmt: skip
"""``groundstate.importers.FORMATS``, spelled here so that ``--help`` need not import the
importers (tests/test_startup.py holds the two equal)."""

EXPORT_FORMATS = ("jsonl", "csv", "inspect")
"""The values of ``groundstate.exports.ExportFormat``, spelled here for the same reason."""


@main.command("import-results")
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--name",
    required=True,
    callback=lambda _ctx, _param, value: _named(value),
    help="A name for the imported batch (e.g. the system).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(IMPORT_FORMATS),
    default=None,
    help="The file's format (default: detected from the file).",
)
@click.option(
    "--errors",
    type=click.Choice(["agent", "environment"]),
    default="agent",
    show_default=True,
    help="Attempts that ended in an exception the file does not attribute (τ-bench "
    "info.error, Inspect sample errors, SWE-bench error_ids, Harbor exceptions, Terminal-Bench "
    "failure modes): count "
    "against the system "
    "(agent_failure/crashed) or as invalid (environment_failure/harness_error).",
)
@click.option(
    "--scorer",
    default=None,
    help="Inspect logs: the score that decides a verdict (NAME, or NAME.KEY / NAME.INDEX for "
    "one entry of a score whose value is a dict / a list); Harbor: the reward key.",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was imported as JSON.")
@STORE_OPTION
def import_results_command(
    file: Path,
    name: str,
    fmt: str | None,
    errors: str,
    scorer: str | None,
    as_json: bool,
    store: Path,
) -> None:
    """Store results made by another harness as a batch: our CSV/JSONL rows, τ-bench or
    τ²-bench results, an Inspect AI log (.eval or .json), a SWE-bench run report, a Harbor
    job directory or trial result.json, a Terminal-Bench run's results.json, or an AppWorld
    evaluation.

    Every row is checked before anything is stored (a problem is named as file:line: field:
    reason, exit 2); warnings (ignored columns, values that could not be mapped) go to
    stderr, one line each.
    """
    from groundstate.importers import ImportOptions, import_file

    options = ImportOptions.model_validate({"format": fmt, "errors": errors, "scorer": scorer})
    report = import_file(file, name, store, options)  # the store made once the file is read
    for line in report.warnings:
        click.echo(f"warning: {said(line)}", err=True)  # it quotes the file
    if as_json:
        click.echo(json.dumps(_import_json(report), indent=2))
        return
    if report.already_stored:
        click.echo("already imported (same file, name and options): nothing stored again")
    else:
        reruns = report.runs - report.attempts
        tries = (
            f" in {counted(report.runs, 'try', 'tries')} ({counted(reruns, 'rerun')})"
            if reruns > 0
            else ""
        )
        click.echo(
            f"imported {counted(report.attempts, 'attempt')}{tries} of "
            f"{counted(report.tasks, 'task')} as {name!r} "
            f"({report.format}, {report.seconds:.1f} s)"
        )
    click.echo(f"attempt labels: {one_line(report.attempt_labels)}")
    for mapping, count in report.mapped.items():
        click.echo(f"  {count:>8}  {one_line(mapping)}")
    click.echo(f"batch {report.batch.batch_id}")


def _named(value: str) -> str:
    """A batch name someone can read and type: not blank (``batches`` would show nothing)."""
    if not value.strip():
        raise click.BadParameter("must not be blank")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # bytes the terminal's encoding could not decode
        raise click.BadParameter("must be UTF-8 text") from None
    return value


def _import_json(report: ImportReport) -> dict[str, object]:
    data = report.model_dump(mode="json", exclude={"batch"})
    return {"batch_id": report.batch.batch_id, "name": report.batch.suite, **data}


@main.command("export")
@click.argument("batch_id", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPORT_FORMATS),
    required=True,
    help="jsonl/csv: every try in the row format import-results reads; inspect: an "
    "Inspect AI .eval log for `inspect view`.",
)
@click.option(
    "--out", type=click.Path(path_type=Path, dir_okay=False), required=True, help="File to write."
)
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
@STORE_OPTION
def export_command(
    batch_id: str | None, fmt: ExportFormat, out: Path, as_json: bool, store: Path
) -> None:
    """Write a stored batch (default: the latest) for other tools. A batch whose records do
    not verify is not exported (exit 1): other tools would take its numbers as they are."""
    from groundstate.exports import export_batch
    from groundstate.store import RunStore

    # one snapshot: what is verified is what is written, while another process runs the batch
    with RunStore(store, create=False) as run_store, run_store.snapshot():
        batch = run_store.batch(batch_id)
        if warn(run_store.verify(batch.batch_id)):
            click.echo(
                f"error: records of batch {batch.batch_id} are altered: not exported", err=True
            )
            sys.exit(EXIT_ALTERED)
        report = export_batch(run_store, batch.batch_id, fmt, out)
    for line in report.warnings:
        click.echo(f"warning: {said(line)}", err=True)
    if report.incomplete:
        click.echo(
            f"warning: batch {report.batch_id} is incomplete ({report.incomplete}): the file "
            "holds the tries stored, and an import of it cannot tell what is missing",
            err=True,
        )
    if as_json:
        click.echo(report.model_dump_json(indent=2))
    else:
        click.echo(f"wrote {counted(report.records, 'record')} of batch {report.batch_id} to {out}")
