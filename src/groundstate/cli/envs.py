"""``check-env``, and the ``--environment`` override ``run`` and ``validate`` share."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from groundstate.cli import main
from groundstate.errors import EnvironmentFailure, SpecError

if TYPE_CHECKING:  # the library is imported inside each command: a quick --help
    from groundstate.spec.suite import Suite

ENVIRONMENT_OPTION = click.option(
    "--environment",
    "environment",
    default=None,
    metavar="KIND",
    help="Run the suite's tasks in this environment kind instead of suite.yaml's (e.g. postgres).",
)


def in_environment(suite: Suite, environment: str | None) -> Suite:
    """*suite*, in *environment* when one is given on the command line."""
    from groundstate.spec.suite import with_environment

    return suite if environment is None else with_environment(suite, environment)


@main.command("check-env")
@click.argument("kind", required=False)
@click.option(
    "--fixture",
    type=click.Path(path_type=Path),
    default=None,
    help="Build the environments from this fixture, a file or (workspace) a folder "
    "(default: a small built-in one).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
def check_env(kind: str | None, fixture: Path | None, as_json: bool) -> None:
    """Run the environment contract tests on KIND (default: every registered kind).

    For each kind: two builds hash alike, reset restores rows, counters and the clock after
    attempt-like changes, evaluator views cannot write, the agent's permissions deny and the
    denials are recorded, a failing tool call changes nothing, concurrent environments are
    isolated, and health() is ok. Exit 0 when every kind conforms, 1 otherwise.
    """
    from groundstate.environments.registry import environment_kinds
    from groundstate.paths import in_the_way

    if fixture is not None and not fixture.exists():
        raise SpecError(fixture, None, in_the_way(fixture.parent) or "fixture file not found")
    known = environment_kinds()
    if kind is not None and kind not in known:
        known_kinds = ", ".join(known)  # the kind shown quoted: '' is not the folder "."
        raise SpecError("KIND", None, f"unknown environment kind {kind!r} (known: {known_kinds})")
    kinds = [kind] if kind else known
    if fixture is not None:
        _require_fitting(fixture, kinds)
    results = [_check(name, fixture) for name in kinds]
    if as_json:
        click.echo(json.dumps(results, indent=2))
    else:
        for result in results:
            _print(result)
    if not all(result["conforms"] for result in results):
        sys.exit(1)


def _require_fitting(fixture: Path, kinds: list[str]) -> None:
    """A fixture that *kinds* cannot build from (a folder for a relational kind, a file for a
    workspace kind, a file that does not build) is one error naming its file and line (exit
    2), not every contract test "crashed" with the same cause."""
    from groundstate.environments.registry import environment_capabilities
    from groundstate.validation.conformance import CONFORMANCE_CLOCK
    from groundstate.validation.static import fixture_build_problem

    relational = [kind for kind in kinds if "sql" in environment_capabilities(kind)]
    others = [kind for kind in kinds if kind not in relational]
    if fixture.is_dir() and relational:
        raise SpecError(
            fixture,
            None,
            f"a folder: {', '.join(relational)} build from a .sql, .yaml or .json fixture file "
            "(name a workspace kind to check a folder)",
        )
    if not fixture.is_dir() and others:
        raise SpecError(
            fixture,
            None,
            f"not a folder: {', '.join(others)} build from a folder "
            "(name a relational kind, such as sqlite, to check a fixture file)",
        )
    if not relational:  # a workspace folder is checked by the kind itself
        return
    problem = fixture_build_problem(fixture, CONFORMANCE_CLOCK)
    if problem is not None:
        raise SpecError(problem.file, problem.field, problem.reason, line=problem.line)


def _check(kind: str, fixture: Path | None) -> dict[str, Any]:
    """One kind's findings; a kind that cannot be built at all says why."""
    from groundstate.environments.registry import environment_kind
    from groundstate.validation.conformance import CHECK_NAMES, check_environment

    try:
        environment_kind(kind)
        problems = check_environment(kind, fixture=fixture)
    except EnvironmentFailure as exc:
        problems = [f"unavailable: {exc}"]
    failed = {line.partition(":")[0] for line in problems}
    built = "unavailable" not in failed
    return {
        "kind": kind,
        "conforms": not problems,
        "checks": {name: built and name not in failed for name in CHECK_NAMES},
        "problems": problems,
    }


def _print(result: dict[str, Any]) -> None:
    verdict = "conforms" if result["conforms"] else "DOES NOT CONFORM"
    click.echo(f"{result['kind']}: {verdict}")
    for name, passed in result["checks"].items():
        click.echo(f"  {'ok  ' if passed else 'FAIL'} {name}")
    for problem in result["problems"]:
        click.echo(f"  - {problem}")
