"""Commands that prove and lock suites (validate, lock, regress)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from groundstate.cli import STORE_OPTION, main
from groundstate.cli.check import checked_suite
from groundstate.cli.envs import ENVIRONMENT_OPTION, in_environment
from groundstate.cli.integrity import warn
from groundstate.rounding import counted

if TYPE_CHECKING:  # the library is imported inside each command: a quick --help
    from rich.console import Console

    from groundstate.validation import CheckOutcome, SuiteValidity, TaskValidity


@main.command()
@click.argument("suite", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the validity report as JSON.")
@click.option(
    "--no-cache", is_flag=True, help="Prove every task again, ignoring (and not storing) results."
)
@click.option(
    "--strict",
    is_flag=True,
    help="Fail a task whose outcome assertions or constraints no replay saw fail, instead of "
    "warning (as exercised_checks: required in suite.yaml).",
)
@ENVIRONMENT_OPTION
@STORE_OPTION
def validate(
    suite: Path,
    as_json: bool,
    no_cache: bool,
    strict: bool,
    environment: str | None,
    store: Path,
) -> None:
    """Prove every task of SUITE; exit 1 unless every task is valid.

    Each task is checked for a checked reset, a passing oracle, passing alternatives,
    failing known-bad solutions and straw agents, a grader that notices every state-changing
    oracle step, a deterministic verdict, and near misses of the oracle that all fail (grader
    mutation testing: the score per task, survivors listed). An outcome assertion or
    constraint that none of those replays made fail may be always true: it is listed as a
    warning (a failure with --strict). Results are cached in the run store, keyed by
    everything they depend on.
    """
    from rich.console import Console

    from groundstate.spec.suite import with_config
    from groundstate.store import RunStore
    from groundstate.validation import validate_suite
    from groundstate.workdirs import sweep_stale

    sweep_stale()  # work folders of runs and validations killed outright
    loaded = in_environment(checked_suite(suite), environment)
    if strict:
        loaded = with_config(
            loaded, loaded.config.model_copy(update={"exercised_checks": "required"})
        )
    if no_cache:
        result = validate_suite(loaded)
    else:
        with RunStore(store) as run_store:
            result = validate_suite(loaded, store=run_store)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        _print_validity(Console(), result)
    # --strict (as required): a set constraint no task failed fails each task including it
    if not result.valid:
        sys.exit(1)


@main.command()
@click.argument("suite", type=click.Path(path_type=Path))
@click.option(
    "--check", is_flag=True, help="Compare SUITE with its lock instead; exit 1 if it differs."
)
@click.option("--json", "as_json", is_flag=True, help="Print what was locked or checked as JSON.")
def lock(suite: Path, check: bool, as_json: bool) -> None:
    """Write SUITE/suite.lock: the hashes of its files, tasks, solutions and graders.

    The suite must pass `check` first, as for `validate` and `run`: a lock of a suite whose
    fixture does not build pins a suite no batch can run."""
    from groundstate.validation import check_lock, lock_suite

    loaded = checked_suite(suite, warn=False)
    if not check:
        path = loaded.shown(lock_suite(loaded))
        count = len(loaded.tasks)
        if as_json:
            _echo_json({"suite": loaded.name, "lock": str(path), "tasks": count})
        else:
            click.echo(f"locked {count} task{'s' if count != 1 else ''} in {path}")
        return
    lines = check_lock(loaded)
    if as_json:
        _echo_json({"suite": loaded.name, "matches": not lines, "differences": lines})
    else:
        for line in lines:
            click.echo(line)
        if not lines:
            click.echo(f"{suite} matches its lock")
    if lines:
        sys.exit(1)


def _echo_json(data: dict[str, object]) -> None:
    click.echo(json.dumps(data, indent=2))


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
@click.option("--json", "as_json", is_flag=True, help="Print the new task as JSON.")
@STORE_OPTION
def regress_command(
    run_id: str, into: Path, suite_path: Path | None, as_json: bool, store: Path
) -> None:
    """Turn the failing run RUN_ID into a regression task; print the new task file."""
    from groundstate.spec.suite import load_suite
    from groundstate.store import RunStore
    from groundstate.validation import regress

    with RunStore(store, create=False) as run_store:
        owner = run_store.run_batch_id(run_id)
        run = run_store.run(run_id)
        if owner is not None:  # a regression made from an altered run says so
            warn(run_store.verify(owner, artifacts_of=run.run_id), run.run_id)
        origin = suite_path or Path(run_store.batch(run.batch_id).suite_path)
    task_file = regress(run, load_suite(origin), into=into)
    if as_json:
        _echo_json({"run_id": run.run_id, "task_id": task_file.stem, "task_file": str(task_file)})
    else:
        click.echo(task_file)


_HEADERS = {
    "solvable": "solv-\nable",
    "other_routes": "other\nroutes",
    "discriminating": "discri-\nminating",
    "grader_sensitivity": "grader\nsensi-\ntivity",
    "grader_determinism": "grader\ndeter-\nminism",
    "mutation": "muta-\ntion",
    "tool_robustness": "tool\nrobust-\nness",
    "judge_agreement": "judge\nagree-\nment",
    "exercised": "exer-\ncised",
}
"""Column headers narrow enough for a task id to fit beside them in 80 columns."""


def _print_validity(console: Console, result: SuiteValidity) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from groundstate.validation import CHECKS

    table = Table(
        title=f"suite {result.suite} · {result.suite_hash[:12]}",
        box=box.SIMPLE_HEAD,
        padding=0,  # the box's space between columns is enough: 80 leave 17 for a task id
        pad_edge=False,
        show_edge=False,
    )
    columns = [name for name in CHECKS if name != "exercised" or _any_failed(result, name)]
    rows = [
        (task.task_id, [_cell(task, check) for check in task.checks if check.name in columns])
        for task in result.tasks
    ]
    # The verdicts are the point of the table: at 80 columns a long task id folds onto a
    # second line rather than every cell being cut to "p…".
    table.add_column("task", overflow="fold")
    for i, name in enumerate(columns):
        header = _HEADERS.get(name, name)
        widths = [Text.from_markup(cells[i]).cell_len for _, cells in rows if i < len(cells)]
        width = max([len(line) for line in header.splitlines()] + widths)
        table.add_column(header, no_wrap=True, min_width=width)
    for task_id, cells in rows:
        table.add_row(Text(task_id), *cells)
    console.print(table)
    for task in result.tasks:
        for check in task.failures:
            if check.name == "mutation" and task.mutation is not None:
                continue  # listed below, one survivor a line
            line = Text.assemble((task.task_id, "bold"), f" · {check.name}: {check.detail}")
            console.print(line, highlight=False)
        for warning in task.warnings:
            line = Text.assemble((task.task_id, "bold"), f" · exercised: {warning}")
            console.print(line, highlight=False)
    _print_unexercised(console, result)
    _print_mutation(console, result)
    _print_pins(console, result)
    valid = sum(task.valid for task in result.tasks)
    warned = sum(bool(task.warnings) for task in result.tasks)
    also = f" ({warned} with warnings)" if warned else ""
    console.print(f"{valid} of {counted(len(result.tasks), 'task')} valid{also}")


def _any_failed(result: SuiteValidity, name: str) -> bool:
    """Whether check *name* failed a task (the ``exercised`` column is shown only then: its
    warnings are listed below the table, which keeps its room for the task ids)."""
    return any(not task.check(name).passed for task in result.tasks if name in _names(task))


def _names(task: TaskValidity) -> set[str]:
    return {check.name for check in task.checks}


def _print_unexercised(console: Console, result: SuiteValidity) -> None:
    """The constraints of the suite's sets no task's replays made fail, and once, why a check
    never seen failing is worth a look (the warning of each task names only its checks)."""
    from rich.text import Text

    from groundstate.validation.checks import UNEXERCISED

    shared = result.unexercised_shared
    if shared:
        console.print(
            Text(
                f"warning: {counted(len(shared), 'constraint')} of the suite's constraint sets "
                f"never failed in a replay of any task: {', '.join(shared)}"
            ),
            highlight=False,
        )
    if shared or any(task.warnings for task in result.tasks):  # a failure's detail says it
        console.print(Text(f"checks that never failed: {UNEXERCISED}"), highlight=False)


_UNDECLARED = re.compile(r"initial state ([0-9a-f]{64}) is undeclared")


def _print_pins(console: Console, result: SuiteValidity) -> None:
    """The initial state hash of each task that does not declare one, ready to paste: then
    every reset of the task is checked against it."""
    for task in result.tasks:
        found = _UNDECLARED.search(task.check("reset").detail)
        if found is not None:
            pin = f"reset_check: {{initial_state_hash: {found.group(1)}}}"
            from rich.text import Text

            console.print(Text(f"{task.task_id} · pin its initial state: {pin}"), soft_wrap=True)


def _cell(task: TaskValidity, check: CheckOutcome) -> str:
    """A check's cell; a passed mutation check shows the task's mutation score instead, as a
    whole percentage that is never 100% below a score of 1 (0.996 is ">99%")."""
    from groundstate.report.numbers import share

    figures = task.mutation
    if not check.passed:
        return "[bold red]FAIL[/]"
    if check.name == "mutation" and figures is not None and figures.score is not None:
        return share(figures.score, 0)
    return "pass"


def _print_mutation(console: Console, result: SuiteValidity) -> None:
    """Each task's survivors with their difference from the oracle, then the suite's score."""
    from rich.text import Text

    from groundstate.validation.mutation import summary

    for task in result.tasks:
        figures = task.mutation
        if figures is None or not (figures.survivors or figures.errored):
            continue
        verdict = (
            "FAIL"
            if not task.check("mutation").passed
            else "reported"
            if figures.undeclared
            else "all survivors declared equivalent"
        )
        console.print(
            Text.assemble((task.task_id, "bold"), f" · mutation ({verdict}): {summary(figures)}"),
            highlight=False,
        )
        lines = [
            f"  survives {r.id}: {r.description}"
            + (f" (declared equivalent: {r.equivalent})" if r.equivalent else "")
            for r in figures.survivors
        ]
        lines += [f"  no verdict {r.id}: {r.reason}" for r in figures.errored]
        for line in lines:  # one a line, unwrapped, so that they can be searched
            console.print(Text(line), highlight=False, soft_wrap=True)
    for task in result.tasks:
        if task.mutation is not None and task.mutation.stale_equivalents:
            stale = ", ".join(task.mutation.stale_equivalents)
            console.print(
                Text(f"{task.task_id} · warning: declared equivalent but killed: {stale}"),
                highlight=False,
            )
    total = result.mutation
    if total is not None:
        console.print(Text(f"suite mutation {summary(total)}"), highlight=False)
