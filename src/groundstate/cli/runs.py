"""Commands that run batches and read what they stored."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from groundstate.cli import STORE_OPTION, console, main
from groundstate.cli.integrity import EXIT_ALTERED, integrity_json, warn
from groundstate.cli.interrupts import interruptible, report_interrupted
from groundstate.errors import GroundstateError

if TYPE_CHECKING:  # the library is imported inside each command: a quick --help
    from rich.console import Console
    from rich.progress import Progress

    from groundstate.records import AgentRun
    from groundstate.runner import BatchConfig, BatchResult, BatchRunner
    from groundstate.store import BatchInfo, Problem

EXIT_TOO_MANY_INVALID = 3
"""``run`` exits 3 when invalid tries exceed the system's ``invalid_run_policy.max_invalid_rate``
(2 is a user error, 1 is reserved for other refusals)."""

HTML_OPTION = click.option(
    "--html",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Also write a self-contained HTML report to this file.",
)


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
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Attempts in flight at once (each in its own environment).",
)
@click.option(
    "--executor",
    type=click.Choice(["in-process", "process", "ray"]),
    default="in-process",
    show_default=True,
    help="Where attempts run: threads of this process (attempts that wait on a model), a "
    "process pool (CPU-bound attempts), or Ray (pip install 'groundstate[ray]').",
)
@click.option(
    "--ray-address",
    default=None,
    help="Join this Ray cluster (e.g. ray://head:10001 or auto) instead of starting a local one.",
)
@click.option(
    "--resume",
    "resume_id",
    default=None,
    help="Complete the missing attempts of this interrupted batch.",
)
@click.option(
    "--allow-invalid", is_flag=True, help="Run tasks that fail validation (they are named)."
)
@click.option(
    "--locked", is_flag=True, help="Refuse to run if the suite differs from its suite.lock."
)
@click.option("--json", "as_json", is_flag=True, help="Print the batch as JSON.")
@HTML_OPTION
@STORE_OPTION
def run(
    suite: Path,
    system_file: Path,
    attempts: int,
    seed: int,
    concurrency: int,
    executor: str,
    ray_address: str | None,
    resume_id: str | None,
    allow_invalid: bool,
    locked: bool,
    as_json: bool,
    html: Path | None,
    store: Path,
) -> None:
    """Run every task of SUITE --attempts times with the system in --system.

    Tasks are validated first (results are cached in the store) and invalid tasks refused.
    Ctrl-C (or SIGTERM) stops the batch, prints the command that resumes it, and exits 130
    (143). A batch is leased to the process running it: a second --resume of a batch another
    live process is running is refused (exit 2).
    """
    from groundstate.analysis import batch_report
    from groundstate.executors import make_executor
    from groundstate.report.terminal import batch_table
    from groundstate.runner import BatchConfig, BatchRunner, Interrupted, InterruptFlag
    from groundstate.spec.suite import load_suite
    from groundstate.spec.system import load_system
    from groundstate.store import RunStore
    from groundstate.validation import require_lock, require_valid
    from groundstate.workdirs import sweep_stale

    sweep_stale()  # work folders of runs killed outright
    flag = InterruptFlag()
    runner: BatchRunner | None = None
    try:
        with interruptible(flag):
            loaded_suite, system = load_suite(suite), load_system(system_file)
            where = make_executor(executor, loaded_suite, ray_address=ray_address)
            if locked:
                require_lock(loaded_suite)
            total = len(loaded_suite.tasks) * attempts
            with RunStore(store) as run_store:
                invalid = require_valid(loaded_suite, run_store, allow_invalid=allow_invalid)
                if invalid:
                    click.echo(f"warning: running invalid tasks: {', '.join(invalid)}", err=True)
                config = BatchConfig(attempts, seed, concurrency, tuple(invalid))
                runner = BatchRunner(
                    loaded_suite,
                    system,
                    run_store,
                    interrupt=flag,
                    on_problem=_warn_problem,
                    executor=where,
                )
                result = _run_batch(runner, config, resume_id, _progress(total, quiet=as_json))
    except Interrupted as exc:
        batch_id = runner.batch_id if runner is not None else resume_id
        again = _resume_args(suite, system_file, concurrency, allow_invalid, locked)
        again += _executor_args(executor, ray_address)
        report_interrupted(exc, batch_id, store, again)
        sys.exit(exc.exit_code)
    if html is not None:
        _write_batch_html(html, result.batch, result.runs)
    data = batch_report(result.batch, result.runs)
    if as_json:
        click.echo(json.dumps(_batch_json(result), indent=2))
    else:
        out = console()
        out.print(batch_table(result.batch, result.runs))
        _print_report(out, data)
        out.print(f"stored in {store} · batch {result.batch.batch_id}")
        if html is not None:
            out.print(f"HTML report: {html}")
    if data["invalid_rate_flagged"]:
        click.echo(
            "error: invalid tries exceed the batch's max_invalid_rate; the numbers above "
            f"are not a verdict (exit {EXIT_TOO_MANY_INVALID})",
            err=True,
        )
        sys.exit(EXIT_TOO_MANY_INVALID)


@main.command()
@click.argument("batch_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@HTML_OPTION
@STORE_OPTION
def report(batch_id: str | None, as_json: bool, seed: int, html: Path | None, store: Path) -> None:
    """Report a stored batch (default: the latest): suite numbers, pass@k, pass^k, reasons.

    The batch is verified first (records, artifacts, chain): each altered or missing record
    is named on stderr, the report is marked, and the exit status is 1.
    """
    from groundstate.analysis import batch_report
    from groundstate.report.terminal import batch_table
    from groundstate.store import RunStore

    with RunStore(store) as run_store:
        batch = run_store.batch(batch_id)
        check = run_store.verify(batch.batch_id)
        altered = warn(check)
        runs = _nonempty(batch, run_store.runs(batch.batch_id))
    data = batch_report(batch, runs, seed=seed)
    data["integrity"] = integrity_json(check)
    if html is not None:
        _write_batch_html(html, batch, runs, seed=seed)
        click.echo(f"HTML report: {html}", err=as_json)
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        out = console()
        out.print(batch_table(batch, runs))
        _print_report(out, data)
        if altered:
            out.print(_altered_mark(batch.batch_id))
    if altered:
        sys.exit(EXIT_ALTERED)


@main.command()
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print the whole AgentRun record.")
@STORE_OPTION
def show(run_id: str, as_json: bool, store: Path) -> None:
    """Show one run's verdict, evidence and trace.

    The run's record, its artifacts and its place in its batch's chain are verified first;
    anything altered is named on stderr, marked above the run, and the exit status is 1.
    """
    from groundstate.report.terminal import print_run
    from groundstate.store import RunStore

    with RunStore(store) as run_store:
        owner = run_store.run_batch_id(run_id)
        record = run_store.run(run_id)
        check = run_store.verify(owner, artifacts_of=record.run_id) if owner else None
    altered = check is not None and warn(check, record.run_id)
    if as_json:
        click.echo(record.model_dump_json(indent=2))
    else:
        out = console()
        if altered:
            out.print(_altered_mark(owner or record.batch_id))
        print_run(out, record)
    if altered:
        sys.exit(EXIT_ALTERED)


def _resume_args(
    suite: Path, system_file: Path, concurrency: int, allow_invalid: bool, locked: bool
) -> list[str]:
    """The options of this ``run`` that a ``--resume`` of its batch needs again."""
    args = [str(suite), "--system", str(system_file)]
    if concurrency > 1:
        args += ["--concurrency", str(concurrency)]
    return args + ["--allow-invalid"] * allow_invalid + ["--locked"] * locked


def _executor_args(executor: str, ray_address: str | None) -> list[str]:
    args = [] if executor == "in-process" else ["--executor", executor]
    return args + ([] if ray_address is None else ["--ray-address", ray_address])


def _warn_problem(problem: Problem) -> None:
    click.echo(f"warning: {problem.line()}", err=True)


def _altered_mark(batch_id: str) -> str:
    return (
        "[bold red]ALTERED: records of this batch do not match their hashes (see the warnings "
        f"above and `groundstate verify {batch_id}`)[/]"
    )


def _nonempty(batch: BatchInfo, runs: list[AgentRun]) -> list[AgentRun]:
    if not runs:
        raise GroundstateError(
            f"batch {batch.batch_id} has no stored runs: it stopped before its first attempt "
            f"was stored; complete it with `groundstate run {batch.suite_path} --system FILE "
            f"--resume {batch.batch_id}`"
        )
    return runs


def _run_batch(
    runner: BatchRunner, config: BatchConfig, resume_id: str | None, progress: _progress
) -> BatchResult:
    import asyncio

    with progress as on_run:
        runner.on_run = on_run
        if resume_id is None:
            return asyncio.run(runner.start(config))
        return asyncio.run(runner.resume(resume_id, config.concurrency))


def _write_batch_html(path: Path, batch: BatchInfo, runs: list[AgentRun], seed: int = 0) -> None:
    from groundstate.analysis import summarize_batch, tries
    from groundstate.report.html import render_batch

    _write(
        path, render_batch(batch, runs, summarize_batch(batch, runs, seed=seed), tries(batch, runs))
    )


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"cannot write {path}: {exc.strerror}") from None


def _print_report(console: Console, data: dict[str, Any]) -> None:
    from groundstate.report.terminal import report_footer, summary_tables

    for table in summary_tables(data):
        console.print(table)
    console.print(report_footer(data))


class _progress:
    """A live progress bar with counts by terminal reason; silent off a terminal or with --json."""

    def __init__(self, total: int, *, quiet: bool) -> None:
        self._reasons: Counter[str] = Counter()
        self._bar: Progress | None = None
        if not quiet and sys.stdout.isatty():
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                transient=True,
            )
            self._task = self._bar.add_task("running", total=total)

    def __enter__(self) -> Any:
        if self._bar is not None:
            self._bar.start()
        return self.update

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def update(self, run: AgentRun) -> None:
        self._reasons[run.terminal_reason] += 1
        if self._bar is not None:
            counts = " ".join(f"{k}:{v}" for k, v in sorted(self._reasons.items()))
            self._bar.update(self._task, advance=1 if run.valid else 0, description=counts)


def _batch_json(result: BatchResult) -> dict[str, Any]:
    from groundstate.analysis import final_runs

    counted = final_runs(result.runs)
    return {
        "batch_id": result.batch.batch_id,
        "system_spec_hash": result.batch.system_spec_hash,
        "suite": result.batch.suite,
        "tasks": len(result.batch.task_revisions),
        "attempts": result.batch.attempts,
        "runs": [_run_json(r) for r in counted],
        "terminal_reasons": dict(Counter(r.terminal_reason for r in counted)),
        "invalid_attempts": sum(not r.valid for r in counted),
    }


def _run_json(run: AgentRun) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "task_id": run.task_id,
        "attempt": run.attempt,
        "terminal_reason": run.terminal_reason,
        "success": run.success,
    }


@main.command("compare")
@click.argument("batch_a")
@click.argument("batch_b")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@HTML_OPTION
@STORE_OPTION
def compare_command(
    batch_a: str, batch_b: str, as_json: bool, seed: int, html: Path | None, store: Path
) -> None:
    """Paired comparison of BATCH_B against BATCH_A on the tasks both ran."""
    from groundstate.analysis import compare_batches, comparison_report
    from groundstate.report.html import render_comparison
    from groundstate.report.terminal import comparison_tables
    from groundstate.store import RunStore

    with RunStore(store) as run_store:
        a, b = run_store.batch(batch_a), run_store.batch(batch_b)
        altered = [warn(run_store.verify(x.batch_id)) for x in (a, b)]
        a_runs = _nonempty(a, run_store.runs(a.batch_id))
        b_runs = _nonempty(b, run_store.runs(b.batch_id))
    comparison = compare_batches(a, a_runs, b, b_runs, seed=seed)
    data = comparison_report(a, b, comparison)
    if html is not None:
        _write(html, render_comparison(a, b, comparison))
        click.echo(f"HTML report: {html}", err=as_json)
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        comparison_tables(console(), data)
    if any(altered):
        click.echo("error: records of a compared batch are altered (see the warnings)", err=True)
        sys.exit(EXIT_ALTERED)


@main.command("import-results")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--name", required=True, help="A name for the imported batch (e.g. the system).")
@STORE_OPTION
def import_results_command(file: Path, name: str, store: Path) -> None:
    """Store results made by another harness (CSV or JSONL rows) as a batch."""
    from groundstate.imports import import_results
    from groundstate.store import RunStore

    with RunStore(store) as run_store:
        batch = import_results(file, name, run_store)
        count = len(run_store.runs(batch.batch_id))
    click.echo(f"imported {count} attempts of {len(batch.task_revisions)} tasks as {name!r}")
    click.echo(f"batch {batch.batch_id}")
