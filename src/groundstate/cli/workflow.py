"""Commands that find one's way around a store and start a suite: batches, runs, init."""

from __future__ import annotations

import fnmatch
import json
import os
import shlex
import sys
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from groundstate.cli import STORE_OPTION, console, main
from groundstate.cli.runs import no_runs_text
from groundstate.errors import GroundstateError, named_value
from groundstate.rounding import counted

if TYPE_CHECKING:  # the library is imported inside each command: a quick --help
    from rich.table import Table

    from groundstate.records import AgentRun
    from groundstate.store import BatchSummary


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the batches as JSON.")
@STORE_OPTION
def batches(as_json: bool, store: Path) -> None:
    """List the stored batches, oldest first: suite, system, attempts stored of expected, status.

    Status is ``complete``, ``incomplete`` (resume it with ``run --resume ID``), ``empty``
    (stopped before its first attempt was stored), ``running`` (a live process holds it) or
    ``imported`` (results from another harness).
    """
    from groundstate.cli.integrity import EXIT_ALTERED, warn
    from groundstate.seal import verified_outcomes
    from groundstate.store import RunStore

    with RunStore(store, create=False) as run_store, run_store.snapshot():
        found = run_store.batch_summaries()
        # checked as every other reading command checks a batch (a holding seal: no second
        # check), so that a listed batch whose records were altered is never shown without a word
        checks = [verified_outcomes(run_store, b.batch_id)[0] for b in found]
    altered = [warn(check) for check in checks]
    if as_json:
        click.echo(json.dumps([b.model_dump(mode="json") for b in found], indent=2))
    elif not found:
        click.echo(f"the run store {store} holds no batch yet")
    else:
        console().print(_batches_table(found))
    if any(altered):
        sys.exit(EXIT_ALTERED)


def _batches_table(found: list[BatchSummary]) -> Table:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from groundstate.report.terminal import shown

    table = Table(
        title="batches (oldest first)", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
    )
    table.add_column("batch", no_wrap=True)
    table.add_column("created (UTC)", no_wrap=True)
    table.add_column("suite", overflow="fold")
    table.add_column("system", no_wrap=True)
    table.add_column("attempts", justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("sessions", no_wrap=True)
    for b in found:
        table.add_row(
            b.batch_id,
            f"{b.created_at:%Y-%m-%d %H:%M}",
            Text(shown(b.suite)),
            b.system_spec_hash[:12],
            f"{b.attempts_stored}/{b.attempts_expected}",
            b.status
            + (f" ({counted(b.reruns_pending, 'rerun')} due)" if b.reruns_pending else "")
            + (
                f" ({counted(b.outside_plan, 'try', 'tries')} outside its plan)"
                if b.outside_plan
                else ""
            ),
            _sessions_cell(b),
        )
    return table


def _sessions_cell(summary: BatchSummary) -> str:
    """How the batch ran, as ``report``'s RESUMED line counts it: ``resumed N times`` and
    the executors when more than one; ``-`` when no session was recorded."""
    if summary.resumes is None:
        return "-"
    n = summary.resumes
    ran = "not resumed" if not n else f"resumed {n} time{'s' if n > 1 else ''}"
    several = len(summary.executors) > 1
    return ran + (f" (on {', '.join(summary.executors)})" if several else "")


@main.command("runs")
@click.argument("batch_id")
@click.option(
    "--task",
    "task_pattern",
    default=None,
    help="Only tasks with this id (shell-style wildcards allowed: 'refund_*').",
)
@click.option(
    "--reason",
    default=None,
    help="Only runs ending so: a terminal reason, or its class ('agent_failure').",
)
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON.")
@STORE_OPTION
def runs_command(
    batch_id: str, task_pattern: str | None, reason: str | None, as_json: bool, store: Path
) -> None:
    """List the runs of BATCH_ID (its id, a prefix of it, or its name), every try, with ids.

    ``counted`` is true for the tries every figure counts (``analysis.counted_runs``): false
    for an invalid try that a rerun replaced, a try outside the batch's plan (``verify`` names
    it) and a try of a task that failed validation; ``session`` (JSON) is the
    start (1) or resume that stored it (null: not recorded). Give a run id to
    ``groundstate show`` for its verdict, evidence and trace.
    """
    from groundstate.analysis import counted_runs
    from groundstate.cli.integrity import EXIT_ALTERED, warn
    from groundstate.report.terminal import Fitted
    from groundstate.seal import verified_outcomes
    from groundstate.store import RunStore

    _check_reason(reason)
    with RunStore(store, create=False) as run_store, run_store.snapshot():
        batch = run_store.batch(batch_id)
        # verified as `report` is (a seal that holds: no second check), so that what it marks
        # counted is never read from altered records without a word
        check, _ = verified_outcomes(run_store, batch.batch_id)
        stored = run_store.runs(batch.batch_id)
        sessions = run_store.run_sessions(batch.batch_id)
    altered = warn(check)
    counted = {r.run_id for r in counted_runs(batch, stored)}
    chosen = [r for r in stored if _matches(r, task_pattern, reason)]
    rows = [_run_row(r, r.run_id in counted, sessions.get(r.run_id)) for r in chosen]
    if as_json:
        click.echo(json.dumps({"batch_id": batch.batch_id, "runs": rows}, indent=2))
    elif not stored:
        click.echo(no_runs_text(batch, store))
    elif not rows:
        click.echo(f"batch {batch.batch_id}: no run matches ({len(stored)} stored)")
    else:
        console().print(Fitted(lambda width: _runs_table(batch.batch_id, rows, width)))
    if altered:
        sys.exit(EXIT_ALTERED)


_NOT_COUNTED = (
    "; * not counted: an invalid try a rerun replaced, a try outside the plan, or a try of a"
    " task that failed validation"
)


def _check_reason(reason: str | None) -> None:
    """A misspelt reason would match nothing and read as "no run failed so"."""
    from groundstate.importers.rows import TERMINAL_PREFIXES
    from groundstate.spec.strict import did_you_mean

    if reason is not None and reason.split("/")[0] not in TERMINAL_PREFIXES:
        hint = did_you_mean(reason.split("/")[0], TERMINAL_PREFIXES)
        raise click.BadParameter(
            f"{reason!r} is not a terminal reason{hint}; the classes are"
            f" {', '.join(TERMINAL_PREFIXES)}",
            param_hint="'--reason'",
        )


def _matches(run: AgentRun, task_pattern: str | None, reason: str | None) -> bool:
    if task_pattern is not None and not fnmatch.fnmatchcase(run.task_id, task_pattern):
        return False
    return reason is None or reason in (run.terminal_reason, run.terminal_reason.split("/")[0])


def _run_row(run: AgentRun, counted: bool, session: int | None) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "task_id": run.task_id,
        "attempt": run.attempt,
        "retry": run.retry,
        "success": run.success,
        "terminal_reason": run.terminal_reason,
        "counted": counted,
        # the start (1) or resume that stored it (report --json's provenance.sessions)
        "session": session,
    }


def _runs_table(batch_id: str, rows: list[dict[str, Any]], width: int) -> Table:
    """Task ids and terminal reasons on one line whenever the width allows; else folded,
    never cut off. (Success is the reason ``success``: no column of its own.)"""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from groundstate.report.terminal import shown

    cells = [
        (
            row["run_id"][:RUN_ID_SHOWN],
            shown(row["task_id"]),
            str(row["attempt"])
            + (f" r{row['retry']}" if row["retry"] else "")
            + ("" if row["counted"] else "*"),
            shown(row["terminal_reason"]),
        )
        for row in rows
    ]
    task = max(len("task"), *(len(c[1]) for c in cells))
    reason = max(len("terminal reason"), *(len(c[3]) for c in cells))
    att_width = max(len("att."), *(len(c[2]) for c in cells))
    fits = RUN_ID_SHOWN + task + att_width + reason + 3 * 2 <= width
    table = Table(
        title=f"runs of batch {batch_id}",
        caption="a unique prefix of a run id is enough for `groundstate show`"
        + (_NOT_COUNTED if any(not r["counted"] for r in rows) else ""),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        show_edge=False,
    )
    table.add_column("run", no_wrap=True)
    table.add_column("task", no_wrap=fits, overflow="fold", min_width=task if fits else None)
    table.add_column("att.", justify="right", no_wrap=True)
    table.add_column(
        "terminal reason", no_wrap=fits, overflow="fold", min_width=reason if fits else None
    )
    for run_id, task_id, attempt, terminal in cells:
        table.add_row(run_id, Text(task_id), attempt, Text(terminal))
    return table


RUN_ID_SHOWN = 8
"""Characters of a run id in the text table (``--json`` has them whole)."""

TEMPLATE = "templates/init"
"""The starter suite, shipped inside the package so that ``init`` works from a wheel."""


@main.command()
@click.argument("name", type=click.Path(path_type=Path))
def init(name: Path) -> None:
    """Make a working starter suite in the new folder NAME.

    It holds a task, its tools, a fixture, an oracle, an alternative and two known-bad
    solutions, a Python check, a policy, a system file and a small agent, so that
    ``groundstate validate NAME`` and ``groundstate run NAME --system NAME/system.yaml``
    work at once. Edit from there.
    """
    if os.path.lexists(name) and (not name.is_dir() or any(name.iterdir())):
        shown = named_value(os.fsdecode(name))
        raise GroundstateError(f"{shown} exists and is not an empty folder: choose a new name")
    suite_name = Path(os.path.realpath(name)).name  # realpath: a link loop raises nothing
    names = {"{{name}}": suite_name, "{{system_name}}": f"{suite_name}-rules"}
    written = _copy_template(files("groundstate").joinpath(TEMPLATE), name, names)
    click.echo(f"made suite {suite_name!r} in {name} ({written} files). Next:")
    folder, system = shlex.quote(str(name)), shlex.quote(str(name / "system.yaml"))
    for command in (f"validate {folder}", f"run {folder} --system {system}"):
        click.echo(f"  groundstate {command}")


def _yaml_scalar(text: str) -> str:
    """*text* as a YAML value: as it is when YAML reads it back so, else quoted (a folder
    named ``a: b`` or ``#x`` must still make a suite.yaml that loads)."""
    import yaml

    try:
        plain = yaml.safe_load(f"key: {text}") == {"key": text}
    except yaml.YAMLError:
        plain = False
    return text if plain else json.dumps(text)


def _copy_template(source: Traversable, target: Path, names: dict[str, str]) -> int:
    """Copy the template tree, naming the suite and system (*names*: placeholder -> name);
    return the number of files written."""
    from groundstate.paths import make_folder

    make_folder(target)
    written = 0
    for item in sorted(source.iterdir(), key=lambda i: i.name):
        if item.name == "__pycache__" or item.name.endswith(".pyc"):
            continue
        if item.is_dir():
            written += _copy_template(item, target / item.name, names)
            continue
        text = item.read_text(encoding="utf-8")
        for placeholder, value in names.items():
            text = text.replace(placeholder, _yaml_scalar(value))
        (target / item.name).write_text(text, encoding="utf-8")
        written += 1
    return written
