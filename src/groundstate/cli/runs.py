"""Commands that run batches and read what they stored."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import click

from groundstate.cli import DEFAULT_STORE, STORE_OPTION, console, main, said, seed_option
from groundstate.cli.check import checked_suite
from groundstate.cli.envs import ENVIRONMENT_OPTION, in_environment
from groundstate.cli.integrity import EXIT_ALTERED, integrity_json, warn
from groundstate.cli.interrupts import echo_resume, interruptible, report_interrupted
from groundstate.errors import SpecError, named_value

if TYPE_CHECKING:  # the library is imported inside each command: a quick --help
    from rich.console import Console
    from rich.progress import Progress

    from groundstate.analysis import OutcomeTable
    from groundstate.records import AgentRun
    from groundstate.runner import BatchConfig, BatchResult, BatchRunner
    from groundstate.store import BatchInfo, Problem, RunStore, Verification

    _Stored = TypeVar("_Stored", list[AgentRun], OutcomeTable)
    """Runs of a batch, as records or as outcome columns."""

EXIT_TOO_MANY_INVALID = 3
"""``run`` exits 3 when invalid tries exceed the system's ``invalid_run_policy.max_invalid_rate``
(2 is a user error, 1 is reserved for other refusals)."""

DEFAULT_FDR = 0.05
"""``groundstate.stats.DEFAULT_FDR``, spelled here so that ``compare --help`` need not import the
statistics (tests/test_startup.py holds the two equal)."""

FAIL_UNDER_OPTION = click.option(
    "--fail-under",
    multiple=True,
    metavar="METRIC=VALUE",
    help="Exit 4 if METRIC (success_rate, pass@K, pass^K) is below VALUE, or the batch cannot "
    "estimate it (repeatable).",
)

MAX_CONCURRENCY = 10_000
"""``groundstate.runner.MAX_CONCURRENCY``, spelled here so that ``run --help`` need not import
the runner (tests/test_cli_round43.py holds the two equal)."""

MAX_ATTEMPTS = 100_000
"""Most attempts per task ``run`` plans: a batch's attempts are planned whole before the first
runs, and 10^25 of them was the kernel's out-of-memory kill, not an error."""


def _not_nan(value: float) -> float:
    if value != value:
        raise click.BadParameter("nan is not a number in the range")
    return value


HTML_OPTION = click.option(
    "--html",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Also write a self-contained HTML report to this file.",
)


def warn_same_batch(given: tuple[str, ...], found: list[BatchInfo], what: str) -> None:
    """A warning when the batches *given* are one batch (``compare X X``, or its name and a
    prefix of its id), naming it: it is read as both sides, so *what* (the figures say
    nothing of a difference). Accepted, as a file imported again is."""
    if len(found) > 1 and len({batch.batch_id for batch in found}) == 1:
        names = " and ".join(map(named_value, given))
        batch = found[0].batch_id
        click.echo(said(f"warning: batch {batch} (given as {names}) is {what}"), err=True)


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
    type=click.IntRange(min=1, max=MAX_ATTEMPTS),  # past it the plan alone fills memory
    default=1,
    show_default=True,
    help="Attempts per task.",
)
@seed_option("Batch seed; attempt seeds derive from it.")
@click.option(
    "--concurrency",
    type=click.IntRange(min=1, max=MAX_CONCURRENCY),  # on every executor
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
@click.option("--task", "task_ids", multiple=True, help="Run only this task (repeat for more).")
@click.option(
    "--slice", "slices", multiple=True, help="Run only tasks with this slice label (repeatable)."
)
@click.option(
    "-k",
    "patterns",
    multiple=True,
    help="Run only tasks whose id contains this text, or matches it as a wildcard ('ref*').",
)
@FAIL_UNDER_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the batch as JSON.")
@ENVIRONMENT_OPTION
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
    task_ids: tuple[str, ...],
    slices: tuple[str, ...],
    patterns: tuple[str, ...],
    fail_under: tuple[str, ...],
    as_json: bool,
    environment: str | None,
    html: Path | None,
    store: Path,
) -> None:
    """Run every task of SUITE --attempts times with the system in --system.

    Tasks are validated first (results are cached in the store) and invalid tasks refused.
    Ctrl-C (or SIGTERM) stops the batch, prints the command that resumes it, and exits 130
    (143). A batch is leased to the process running it: a second --resume of a batch another
    live process is running is refused (exit 2).

    --task, --slice and -k run a subset (each kind narrows; within a kind any match is
    enough); the batch records the tasks it ran. Exit status: 0; 2 for a user error; 3 when
    invalid tries exceed the system's max_invalid_rate or no attempt is valid; 4 when a
    --fail-under metric is below its threshold (3 takes precedence); 130/143 when
    interrupted.
    """
    from groundstate.errors import GroundstateError
    from groundstate.interrupts import Interrupted, InterruptFlag

    if resume_id is not None and (task_ids or slices or patterns):
        raise click.UsageError("--resume runs the tasks its batch chose; drop --task/--slice/-k")
    flag = InterruptFlag()
    runner: BatchRunner | None = None
    try:
        with interruptible(flag):
            # The library is imported under the handlers: a Ctrl-C while it loads (seconds on
            # a busy machine) is an interruption that stored nothing, exit 130, not "Aborted!".
            from groundstate.analysis import batch_report
            from groundstate.executors import make_executor
            from groundstate.gates import check_attempts, gate_results, parse_gate
            from groundstate.report.terminal import batch_table
            from groundstate.runner import BatchConfig, BatchRunner, check_resumable
            from groundstate.selection import select_tasks
            from groundstate.served import served_in_batch
            from groundstate.spec.system import load_system
            from groundstate.store import BatchLeased, RunStore
            from groundstate.validation import require_lock, require_valid
            from groundstate.validation.static import refuse_system_tool_errors
            from groundstate.validation.suite import VALIDATOR_REVISION
            from groundstate.workdirs import sweep_stale

            if html is not None:  # before any agent runs: it could patch a module first seen
                import groundstate.report.html  # noqa: F401  after it (groundstate.bindings)
            _refuse_output(html, store)  # before the batch, not once it is stored
            sweep_stale()  # work folders of runs killed outright
            gates = [parse_gate(text) for text in fail_under]
            if resume_id is None:
                check_attempts(gates, attempts)
            loaded_suite = in_environment(checked_suite(suite, warn=False), environment)
            system = load_system(system_file)
            refuse_system_tool_errors(system, loaded_suite)
            where = make_executor(executor, loaded_suite, ray_address=ray_address)
            where.room(concurrency)  # a --concurrency it cannot hold: before any validation
            if locked:
                require_lock(loaded_suite)
            chosen = select_tasks(loaded_suite, task_ids=task_ids, slices=slices, patterns=patterns)
            total = len(chosen or loaded_suite.tasks) * attempts
            # a resume reads its batch: a store that is not there is an error, not made empty
            with RunStore(store, create=resume_id is None) as run_store:
                if resume_id is not None:
                    planned = run_store.batch(resume_id)
                    resume_id = planned.batch_id  # given by a prefix or name: its id from here
                    _refuse_new_plan(planned, attempts=attempts, seed=seed)
                    check_attempts(gates, planned.attempts)  # as a start does, before running
                    # Before validating: a changed suite is refused as such, and only the
                    # tasks the batch chose are validated (another task of the suite that
                    # is invalid refused the resume of a batch that never ran it).
                    check_resumable(planned, loaded_suite, system)
                    chosen = tuple(sorted(planned.task_revisions))
                    total = len(chosen) * planned.attempts
                invalid = require_valid(
                    loaded_suite, run_store, allow_invalid=allow_invalid, tasks=chosen
                )
                if invalid:
                    names = ", ".join(map(named_value, invalid))
                    click.echo(f"warning: running invalid tasks: {said(names)}", err=True)
                config = BatchConfig(
                    attempts,
                    seed,
                    concurrency,
                    invalid_tasks=tuple(invalid),
                    tasks=chosen,
                    validator_revision=VALIDATOR_REVISION,
                )
                runner = BatchRunner(
                    loaded_suite,
                    system,
                    run_store,
                    interrupt=flag,
                    on_problem=_warn_problem,
                    executor=where,
                )
                aside = _standard_output_aside() if as_json else None
                result = _run_batch(runner, config, resume_id, _progress(total, quiet=as_json))
                # A resumed batch may hold altered records: the page marks them, as report does.
                check = run_store.verify(result.batch.batch_id) if html is not None else None
    except (Interrupted, GroundstateError) as exc:
        batch_id = runner.batch_id if runner is not None else resume_id
        again = _resume_args(suite, system_file, concurrency, allow_invalid, locked)
        again += ["--environment", environment] if environment else []
        again += _executor_args(executor, ray_address)
        if isinstance(exc, GroundstateError):
            # A batch stopped by a failure (a full disk, a pool that broke, a resume whose
            # checks failed): the stored tries are kept, and the batch is named with the
            # command that completes it. Nothing started, or another process running the
            # batch (BatchLeased): the error alone.
            started = runner.batch_id if runner is not None else None
            if started is None or isinstance(exc, BatchLeased):
                raise
            click.echo(f"error: {said(str(exc))}; batch {started} stopped", err=True)
            echo_resume(started, store, again)
            sys.exit(2)
        report_interrupted(exc, batch_id, store, again)
        sys.exit(exc.exit_code)
    served = served_in_batch(r.infrastructure_status.get("models_served") for r in result.runs)
    if html is not None:
        _write_batch_html(html, result.batch, result.runs, check, served)
    data = batch_report(result.batch, result.runs)
    data["models_served"] = served
    verdicts = gate_results(gates, data)
    if as_json:
        click.echo(json.dumps(_batch_json(result, data, verdicts), indent=2), file=aside)
    else:
        out = console()
        out.print(batch_table(result.batch, result.runs))
        _print_report(out, data)
        batch_id = result.batch.batch_id
        out.print(f"stored in {store} · batch {batch_id} · run ids: groundstate runs {batch_id}")
        if html is not None:
            out.print(f"HTML report: {html}")
    _exit_on_verdict(data, verdicts)


def _refuse_new_plan(batch: BatchInfo, **given: int) -> None:
    """A resume completes its batch's plan: --attempts or --seed given with another value
    than the batch's would be silently ignored (a user extending a batch got nothing new)."""
    context = click.get_current_context()
    for name, value in given.items():
        stored = getattr(batch, name)
        explicit = context.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
        if explicit and value != stored:
            raise click.UsageError(
                f"--resume completes batch {batch.batch_id} as planned ({name} {stored}); "
                f"--{name} {value} cannot change it: start a new batch instead"
            )


def _exit_on_verdict(data: dict[str, Any], verdicts: list[dict[str, Any]]) -> None:
    """Exit 3 when the invalid-run flag trips or the batch has no estimate (its report's
    ``no_estimate``: :func:`~groundstate.analysis.no_estimate`), else 4 when a gate fails (one
    line each)."""
    from groundstate.gates import EXIT_BELOW_GATE, failure_line

    if data["invalid_rate_flagged"]:
        click.echo(
            "error: invalid tries exceed the batch's max_invalid_rate; the numbers above "
            f"are not a verdict (exit {EXIT_TOO_MANY_INVALID})",
            err=True,
        )
        sys.exit(EXIT_TOO_MANY_INVALID)
    exit_without_estimate([("the batch", data["no_estimate"])])
    failed = [v for v in verdicts if not v["passed"]]
    for verdict in failed:
        click.echo(f"error: --fail-under: {failure_line(verdict)}", err=True)
    if failed:
        sys.exit(EXIT_BELOW_GATE)


def exit_without_estimate(batches: list[tuple[str, str | None]]) -> None:
    """Exit 3 when a finished batch has no valid attempt it counts (each named with why:
    :func:`~groundstate.analysis.no_estimate`): no figure of it is an estimate (``run``
    under ``max_invalid_rate: 1``, which flags nothing, ``report`` without a gate,
    ``compare`` and ``agreement`` exited 0, as for a batch whose numbers stand)."""
    missing = [(name, why) for name, why in batches if why is not None]
    for name, why in missing:
        click.echo(f"error: {why}: {name} has no estimate (exit {EXIT_TOO_MANY_INVALID})", err=True)
    if missing:
        sys.exit(EXIT_TOO_MANY_INVALID)


@main.command()
@click.argument("batch_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@seed_option("Bootstrap seed.")
@FAIL_UNDER_OPTION
@click.option(
    "--k-over-supporting",
    is_flag=True,
    help="Also report pass@k and pass^k above the common k, each over the tasks with at "
    "least k counted attempts (the others are listed).",
)
@HTML_OPTION
@STORE_OPTION
def report(
    batch_id: str | None,
    as_json: bool,
    seed: int,
    fail_under: tuple[str, ...],
    k_over_supporting: bool,
    html: Path | None,
    store: Path,
) -> None:
    """Report a stored batch (default: the latest): suite numbers, pass@k, pass^k, reasons.

    BATCH_ID is a batch's id, a prefix of it, or its name (suite, system or import --name);
    one that matches several batches is refused, each named.
    Intervals are Agresti-Coull on the task-clustered SE with t quantiles (an exact bound
    where every task has one value), "n/a" (with the reason) below 5 tasks; the JSON carries
    the per-task table and the methods (docs/statistics.md).
    The batch is verified first (records, artifacts, chain): each altered or missing record
    is named on stderr, the report is marked, and the exit status is 1. A finished batch
    with no valid attempt (every attempt invalid, or every task failed validation) has no
    estimate: exit 3, as ``run``. With --fail-under, the exit status is then that of
    ``run``: 3 when invalid tries exceed the batch's max_invalid_rate, 4 when a metric is
    below its threshold.
    """
    _one_blas_thread()
    from groundstate.analysis import batch_report
    from groundstate.gates import gate_results, parse_gate
    from groundstate.seal import verified_outcomes
    from groundstate.served import served_in_batch
    from groundstate.store import RunStore

    _refuse_output(html, store)
    gates = [parse_gate(text) for text in fail_under]
    with RunStore(store, create=False) as run_store, run_store.snapshot():
        batch = run_store.batch(batch_id)
        # The numbers come from the records' outcome fields alone (sealed after a full check
        # that found nothing: groundstate/seal.py); whole records are parsed only for what
        # shows runs (the task table, the HTML). One snapshot: a batch still being run is
        # shown as it stood at one commit in every view.
        check, outcomes = verified_outcomes(run_store, batch.batch_id)
        altered = warn(check)
        table = _nonempty(batch, outcomes, store)
        served = served_in_batch(run_store.models_served(batch.batch_id))
        runs = run_store.runs(batch.batch_id) if html is not None or not as_json else []
    data = batch_report(batch, table, seed=seed, k_over_supporting=k_over_supporting)
    data["integrity"] = integrity_json(check)
    data["models_served"] = served
    verdicts = gate_results(gates, data)
    if gates:
        data["fail_under"] = verdicts
    if html is not None:
        _write_batch_html(
            html, batch, runs, check, served, seed=seed, k_over_supporting=k_over_supporting
        )
        click.echo(f"HTML report: {html}", err=as_json)
    if as_json:
        from groundstate.report.json_text import json_text

        click.echo(json_text(data))
    else:
        from groundstate.report.terminal import batch_table

        out = console()
        out.print(batch_table(batch, runs))
        _print_report(out, data)
        if altered:
            out.print(_altered_mark(batch.batch_id))
    if altered:
        sys.exit(EXIT_ALTERED)
    if gates:
        _exit_on_verdict(data, verdicts)
    else:
        exit_without_estimate([("the batch", data["no_estimate"])])


def _one_blas_thread() -> None:
    """Run OpenBLAS on one thread in this process, unless numpy is loaded already or the user
    chose (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``). The bootstrap's matrix products
    are small (2,000 x tasks by a few dozen metrics): OpenBLAS's threads spin while they
    wait, which cost a report of a million attempts about half a second of CPU on a busy
    machine, and the float32 sums then depend on the thread count (by about 1e-7); on one
    thread they are the same on any number of cores."""
    chosen = {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"} & os.environ.keys()
    if "numpy" not in sys.modules and not chosen:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"


@main.command()
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print the whole AgentRun record.")
@STORE_OPTION
def show(run_id: str, as_json: bool, store: Path) -> None:
    """Show one run's verdict, evidence and trace.

    The run's record, its artifacts and its place in its batch's chain are verified first;
    anything altered is named on stderr, marked above the run, and the exit status is 1.
    """
    from groundstate.report.terminal import indented, print_run
    from groundstate.store import RunStore

    with RunStore(store, create=False) as run_store:
        owner = run_store.run_batch_id(run_id)
        record = run_store.run(run_id)
        check = run_store.verify(owner, artifacts_of=record.run_id) if owner else None
        printed = _printed(run_store, record)
    altered = check is not None and warn(check, record.run_id)
    if as_json:
        from groundstate.report.json_text import json_text

        # ASCII, as every --json: no raw U+202E or C1 control of the record reaches a terminal
        click.echo(json_text(record.model_dump(mode="json")))
    else:
        out = console()
        if altered:
            out.print(_altered_mark(owner or record.batch_id))
        print_run(out, record)
        for name, text in printed.items():
            out.print(f"[bold]{name}[/] (printed by the agent and checks)")
            out.print(indented(text.rstrip("\n")), markup=False, highlight=False)
    if altered:
        sys.exit(EXIT_ALTERED)


def _printed(run_store: RunStore, record: AgentRun) -> dict[str, str]:
    """The output the run's code printed (a missing artifact is named, and warned of above)."""
    from groundstate.capture import ARTIFACTS
    from groundstate.errors import StoreError

    found = {}
    for name in ARTIFACTS.values():
        location = record.artifact_locations.get(name)
        if location is not None:
            try:
                found[name] = run_store.read_artifact(location)
            except StoreError as exc:
                found[name] = f"({exc})"
    return found


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
    click.echo(f"warning: {said(problem.line())}", err=True)


def _altered_mark(batch_id: str) -> str:
    return (
        "[bold red]ALTERED: records of this batch do not match their hashes or its plan (see "
        f"the warnings above and `groundstate verify {batch_id}`)[/]"
    )


def _nonempty(batch: BatchInfo, runs: _Stored, store: Path) -> _Stored:
    from groundstate.errors import GroundstateError

    if not runs:
        raise GroundstateError(no_runs_text(batch, store))
    return runs


def no_runs_text(batch: BatchInfo, store: Path) -> str:
    """Why *batch* has no stored run, and what to do: resume it, or (a live process is
    running it: a resume would be refused) wait for its first try."""
    if batch.running:
        return (
            f"batch {batch.batch_id} has no stored runs yet: it is being run by "
            f"{batch.running}; read it again once its first attempt is stored"
        )
    return (
        f"batch {batch.batch_id} has no stored runs: it stopped before its first attempt "
        f"was stored; complete it with `{resume_command(batch, store)}`"
    )


def resume_command(batch: BatchInfo, store: Path) -> str:
    """The command completing *batch* (the system file is not recorded: FILE stands for it)."""
    args = ["groundstate", "run", batch.suite_path, "--system", "FILE", "--resume", batch.batch_id]
    if Path(store) != DEFAULT_STORE:
        args += ["--store", str(store)]
    return shlex.join(args)


def _standard_output_aside() -> TextIO | None:
    """For ``run --json``: file descriptor 1 goes to 2 from now on, as in the pool's workers,
    and the JSON to the returned copy of the real descriptor 1. What in-process code under
    evaluation writes there (``os.write(1, ...)``, ``sys.stdout.buffer``, ``sys.__stdout__``,
    a subprocess, a thread it started: none passes the capture) no longer lands in the JSON,
    also from a thread still writing after the batch. None when standard output is not
    descriptor 1 (a test's runner): nothing to set aside."""
    try:
        if sys.stdout.fileno() != 1:
            return None
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation: no descriptor
        return None
    from groundstate.capture import descriptors_moved

    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    descriptors_moved()
    return os.fdopen(saved, "w", encoding="utf-8")


def _run_batch(
    runner: BatchRunner, config: BatchConfig, resume_id: str | None, progress: _progress
) -> BatchResult:
    import asyncio

    from groundstate import steadyloop  # asyncio.run, held against in-process code
    from groundstate.leftovers import ENDED_BY_USER_CODE

    with progress as on_run:
        runner.on_run = on_run
        try:
            if resume_id is None:
                return steadyloop.run(runner.start(config))
            # tasks found invalid since the batch started leave its figures, as at a start
            return steadyloop.run(
                runner.resume(
                    resume_id,
                    config.concurrency,
                    invalid_tasks=config.invalid_tasks,
                    validator_revision=config.validator_revision,
                )
            )
        except asyncio.CancelledError:  # no signal asked for it (that is Interrupted)
            click.echo(
                "error: code the command ran (an agent's, a suite's) cancelled the batch's "
                "task: the batch stopped; --resume records the try whose agent did it as its "
                f"crash and runs the others again (batch {runner.batch_id})",
                err=True,
            )
            sys.exit(ENDED_BY_USER_CODE)


def _write_batch_html(
    path: Path,
    batch: BatchInfo,
    runs: list[AgentRun],
    check: Verification | None,
    served: list[dict[str, Any]],
    seed: int = 0,
    k_over_supporting: bool = False,
) -> None:
    from groundstate.analysis import summarize_batch, tries
    from groundstate.report.html import render_batch

    summary = summarize_batch(batch, runs, seed=seed, k_over_supporting=k_over_supporting)
    _write(path, render_batch(batch, runs, summary, tries(batch, runs), check, served))


def _refuse_output(html: Path | None, store: Path) -> None:
    """``--html`` naming the run store (or its SQLite files, its artifacts) is refused before
    any work: it wrote the report over the store it read."""
    from groundstate.store import refuse_output

    if html is not None:
        refuse_output(store, html, "--html")


def _write(path: Path, text: str) -> None:
    from groundstate.paths import make_folder

    try:
        make_folder(path.parent)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise SpecError(path, None, f"cannot write: {exc.strerror}") from None


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


def _batch_json(
    result: BatchResult, data: dict[str, Any], verdicts: list[dict[str, Any]]
) -> dict[str, Any]:
    from groundstate.analysis import counted_runs, final_runs, suite_decision

    counted = {r.run_id for r in counted_runs(result.batch, result.runs)}
    return {
        "batch_id": result.batch.batch_id,
        "system_spec_hash": result.batch.system_spec_hash,
        "suite": result.batch.suite,
        **suite_decision(result.batch),
        "tasks": len(result.batch.task_revisions),
        "attempts": result.batch.attempts,
        "runs": [_run_json(r, r.run_id in counted) for r in final_runs(result.runs)],
        # as report --json counts them: tasks that failed validation are reported apart
        "terminal_reasons": data["terminal_reasons"],
        # the denominators and limits of the figures below, as report --json gives them
        "valid_attempts": data["valid_attempts"],
        "invalid_attempts": data["invalid_attempts"],
        "k_limits": data["k_limits"],
        "missing_attempts": data["missing_attempts"],
        "models_served": data["models_served"],
        "no_estimate": data["no_estimate"],
        "invalid_tasks_run": data["invalid_tasks_run"],
        "invalid_tasks_results": data["invalid_tasks_results"],
        "success_rate": data["success_rate"],
        "pass_at_k": data["pass_at_k"],
        "pass_hat_k": data["pass_hat_k"],
        "partial_score": data["partial_score"],
        # the figures over valid attempts alone say nothing of the invalid ones: as in report
        "invalid_as_failure": data["invalid_as_failure"],
        "invalid_rate_flagged": data["invalid_rate_flagged"],
        "max_invalid_rate": data["tries"]["max_invalid_rate"],
        "judge_errors": data["judge_errors"],
        # every try, reruns included: what invalid_rate_flagged rests on
        "tries": data["tries"],
        "provenance": data["provenance"],
        "fail_under": verdicts,
    }


def _run_json(run: AgentRun, counted: bool) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "task_id": run.task_id,
        "attempt": run.attempt,
        "terminal_reason": run.terminal_reason,
        "success": run.success,
        # as `runs` marks it: false for a task that failed validation or a try outside the plan
        "counted": counted,
    }


@main.command("compare")
@click.argument("batch_a")
@click.argument("batch_b")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@seed_option("Bootstrap seed.")
@click.option(
    "--fdr",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    callback=lambda _ctx, _param, value: _not_nan(value),  # NaN passes FloatRange's bounds
    default=DEFAULT_FDR,
    show_default=True,
    help="False discovery rate of the per-task tests (Benjamini-Hochberg).",
)
@click.option(
    "--allow-mismatch",
    is_flag=True,
    help="Compare batches whose task revisions, suite hash or versioning differ (warned).",
)
@HTML_OPTION
@STORE_OPTION
def compare_command(
    batch_a: str,
    batch_b: str,
    as_json: bool,
    seed: int,
    fdr: float,
    allow_mismatch: bool,
    html: Path | None,
    store: Path,
) -> None:
    """Compare BATCH_B against BATCH_A: b - a of every metric, in both views.

    Each is a batch's id, a prefix of it, or its name (suite, system or import --name); one
    that matches several batches (``a``: a name, and the start of a hex id) is refused, each
    named.
    Paired over the tasks both ran (task-clustered SE, interval, t-test p-value); unpaired and
    labelled so when they share fewer than 5 tasks. Per-task changes are listed only when
    Fisher's exact test survives Benjamini-Hochberg at --fdr. Batches of different task
    revisions or suites, or an unversioned import against a versioned batch, are refused
    (exit 2) unless --allow-mismatch. A finished side with no valid attempt (every attempt
    invalid, or every task failed validation) has no estimate: exit 3, as ``report``. A side
    whose invalid tries exceed its max_invalid_rate is FLAGGED in a note (and
    invalid_rate_flagged_a/_b in the JSON) and exits 0, as ``report`` does without
    --fail-under: compare has no gate.
    """
    _one_blas_thread()
    from groundstate.analysis import compare_batches, comparison_report, no_estimate, tries
    from groundstate.seal import verified_outcomes
    from groundstate.store import RunStore

    _refuse_output(html, store)
    with RunStore(store, create=False) as run_store, run_store.snapshot():
        a, b = run_store.batch(batch_a), run_store.batch(batch_b)
        warn_same_batch((batch_a, batch_b), [a, b], "compared with itself: every difference is 0")
        (check_a, a_table), (check_b, b_table) = (
            verified_outcomes(run_store, x.batch_id) for x in (a, b)
        )
        checks = [check_a, check_b]
        altered = [warn(check) for check in checks]
        a_runs, b_runs = _nonempty(a, a_table, store), _nonempty(b, b_table, store)
    comparison = compare_batches(
        a, a_runs, b, b_runs, seed=seed, fdr=fdr, allow_mismatch=allow_mismatch
    )
    for mismatch in comparison.mismatches:
        click.secho(
            f"WARNING: not the same evaluation: {said(mismatch)}", err=True, fg="red", bold=True
        )
    data = comparison_report(a, b, comparison)
    # each side's reason it has no estimate, or null (as report --json's no_estimate)
    sides = (("a", a), ("b", b))
    for (side, x), table in zip(sides, (a_runs, b_runs), strict=True):
        data[f"no_estimate_{side}"] = no_estimate(x, table)
        # every try of the side, reruns included, and its invalid-try flag (as report --json's)
        data[f"tries_{side}"] = tries(x, table)
        data[f"invalid_rate_flagged_{side}"] = data[f"tries_{side}"]["flagged"]
    if html is not None:
        from groundstate.report.html import render_comparison  # jinja2: only for HTML

        _write(html, render_comparison(a, b, comparison, checks))
        click.echo(f"HTML report: {html}", err=as_json)
    if as_json:
        from groundstate.report.json_text import json_text

        click.echo(json_text(data))
    else:
        from groundstate.report.terminal import comparison_tables  # rich: only for tables

        comparison_tables(console(), data)
    if any(altered):
        click.echo("error: records of a compared batch are altered (see the warnings)", err=True)
        sys.exit(EXIT_ALTERED)
    exit_without_estimate(
        [(f"side {side} (batch {x.batch_id})", data[f"no_estimate_{side}"]) for side, x in sides]
    )
