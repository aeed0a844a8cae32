"""``groundstate check``: the whole suite's static checks, and the same checks before a batch."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from groundstate.cli import main
from groundstate.errors import shortened

if TYPE_CHECKING:  # the library is imported inside each command: a quick --help
    from groundstate.spec.suite import Suite
    from groundstate.validation.static import SuiteCheck

EXIT_PROBLEMS = 2
"""A suite (or system file) with an error: the user's mistake, as for every other one."""


@main.command()
@click.argument("suite", type=click.Path(path_type=Path))
@click.option(
    "--system",
    "system_file",
    type=click.Path(path_type=Path),
    default=None,
    help="Also check this system file and build the agent it names.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the problems as JSON.")
def check(suite: Path, system_file: Path | None, as_json: bool) -> None:
    """Check SUITE without running an agent; exit 2 if anything is wrong.

    Every file is read and every problem reported once, as file:line: field: reason: tool
    names in tasks, constraints and solutions; solution arguments against the tools' JSON
    Schemas; tool declarations (a ctx first parameter, type hints, a docstring); fixtures
    that build; state_diff tables, columns and key types and SQL assertions against the
    fixture; Python checks that resolve. A missing decision: or population: is a warning.
    `validate` and `run` make the same checks first.
    """
    from groundstate.validation.static import check_suite, check_system

    result = check_suite(suite)
    if system_file is not None:
        result.problems += check_system(system_file, result.suite)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        _print(result)
    if not result.ok:
        sys.exit(EXIT_PROBLEMS)


def _print(result: SuiteCheck) -> None:
    for problem in [*result.errors, *result.warnings]:
        click.echo(shortened(str(problem)))  # a value of 3,000 characters is named, not echoed
    errors, warnings = len(result.errors), len(result.warnings)
    if not errors:
        tasks = len(result.suite.tasks) if result.suite is not None else 0
        click.echo(f"{result.path}: {tasks} task{'s' if tasks != 1 else ''}, no errors", err=True)
    else:
        click.echo(f"{errors} error{'s' if errors != 1 else ''}", err=True)
    if warnings:
        click.echo(f"{warnings} warning{'s' if warnings != 1 else ''}", err=True)


def checked_suite(path: Path, *, warn: bool = True) -> Suite:
    """The suite at *path* once its static checks pass (else exit 2); with *warn*, its
    warnings on stderr (``run`` leaves them to ``check`` and ``validate``, so that a batch's
    stderr stays its progress and its problems)."""
    from groundstate.validation.static import require_checked

    result = require_checked(path)
    for problem in result.warnings if warn else []:
        click.echo(shortened(str(problem)), err=True)
    assert result.suite is not None  # no errors: the suite loaded
    return result.suite


__all__ = ["EXIT_PROBLEMS", "check", "checked_suite"]
