"""The environment registry: kinds chosen by suite.yaml, extended from outside the package."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from groundstate.environments import registry
from groundstate.environments.base import Environment
from groundstate.environments.registry import (
    EnvironmentKind,
    UnknownEnvironmentKind,
    environment_kind,
    environment_kinds,
    register_environment,
    unregister_environment,
)
from groundstate.environments.sqlite import SqliteEnvironment, SqliteView
from groundstate.errors import SpecError
from groundstate.spec.suite import load_suite, with_environment
from groundstate.spec.task import Permissions
from groundstate.testing import run_solution
from groundstate.validation import check_environment
from groundstate.validation.conformance import CHECK_NAMES

from .conftest import BANK

BUILT: list[str] = []


class AuditedSqlite(SqliteEnvironment):
    """A third party's kind: SQLite that notes every build (defined outside the package)."""

    name = "audited_sqlite"

    def __init__(
        self, fixture: Path, *, clock: datetime, permissions: Permissions | None = None
    ) -> None:
        BUILT.append(fixture.name)
        super().__init__(fixture, clock=clock, permissions=permissions)


@pytest.fixture
def audited() -> Iterator[str]:
    BUILT.clear()
    register_environment("audited_sqlite", AuditedSqlite, description="SQLite, audited")
    yield "audited_sqlite"
    unregister_environment("audited_sqlite")


def _suite_with_kind(tmp_path: Path, kind: str) -> Path:
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    config = root / "suite.yaml"
    config.write_text(config.read_text() + f"\nenvironment: {kind}\n")
    return root


def test_a_kind_registered_outside_the_package_runs_a_task(tmp_path: Path, audited: str) -> None:
    suite = load_suite(_suite_with_kind(tmp_path, audited))
    assert suite.config.environment == audited
    oracle, bad = (
        run_solution(suite, "transfer", "oracle"),
        run_solution(suite, "transfer", "bad_no_pin"),
    )
    assert oracle.terminal_reason == "success" and not bad.success
    assert BUILT == ["bank.sql", "bank.sql"]  # both attempts ran on the third party's kind
    assert oracle.infrastructure_status["environment"] == "audited_sqlite"
    # The verdict is the one SQLite itself gives: the kind changed nothing but the build.
    plain = run_solution(load_suite(BANK), "transfer", "oracle")
    assert plain.final_state_hash == oracle.final_state_hash
    assert plain.infrastructure_status["environment"] == "sqlite"


def test_registered_kinds_pass_conformance_by_name(audited: str) -> None:
    assert check_environment(audited) == []
    assert BUILT  # conformance built the registered kind, not SQLite


def test_the_workspace_kind_passes_conformance_on_its_own_fixture() -> None:
    """Files, not SQL: the kind's conformance probes write, delete and read files."""
    assert check_environment("workspace") == []


def test_an_unknown_kind_names_the_file_and_field(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as caught:
        load_suite(_suite_with_kind(tmp_path, "mongodb"))
    message = str(caught.value)
    assert "suite.yaml" in message and "environment" in message and "'mongodb'" in message
    assert "sqlite" in message  # the known kinds are listed


def test_the_override_switches_kind_and_refuses_unknown_ones(audited: str) -> None:
    suite = load_suite(BANK)
    switched = with_environment(suite, audited)
    assert switched.config.environment == audited and suite.config.environment == "sqlite"
    assert switched.suite_hash != suite.suite_hash  # the kind that runs is hashed
    with pytest.raises(SpecError, match="unknown environment kind 'nope'"):
        with_environment(suite, "nope")


def test_a_kind_cannot_be_registered_twice_by_accident(audited: str) -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_environment(audited, SqliteEnvironment)
    with pytest.raises(ValueError, match="already registered"):
        register_environment("sqlite", AuditedSqlite)
    with pytest.raises(ValueError, match="a name like"):
        register_environment("no spaces", SqliteEnvironment)


def test_entry_points_declare_kinds(monkeypatch: pytest.MonkeyPatch) -> None:
    class Point:
        name, value = "plugin_db", "tests.test_environments:AuditedSqlite"

        def load(self) -> Any:
            return AuditedSqlite

    def entry_points(group: str) -> list[Point]:
        assert group == registry.ENTRY_POINT_GROUP
        return [Point()]

    monkeypatch.setattr(registry.metadata, "entry_points", entry_points)
    try:
        assert "plugin_db" in environment_kinds()
        kind = environment_kind("plugin_db")
        assert isinstance(kind, EnvironmentKind) and kind.build is AuditedSqlite
        with pytest.raises(UnknownEnvironmentKind, match="plugin_db"):  # listed among the known
            environment_kind("absent")
    finally:
        unregister_environment("plugin_db")


def test_built_in_kinds_are_listed_without_importing_them() -> None:
    assert {"sqlite", "postgres", "workspace"} <= set(environment_kinds())
    built: Environment = registry.build_environment(
        "sqlite", BANK / "fixtures" / "bank.sql", clock=datetime(2026, 1, 15)
    )
    with built as env:
        assert isinstance(env, SqliteEnvironment)


def _cli(*args: str) -> Any:
    from click.testing import CliRunner

    from groundstate.cli import main

    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_check_env_reports_each_promise_as_json(audited: str) -> None:
    result = _cli("check-env", audited, "--json")
    assert result.exit_code == 0, result.output
    [report] = json.loads(result.stdout)
    assert report["kind"] == audited and report["conforms"] is True and report["problems"] == []
    assert list(report["checks"]) == list(CHECK_NAMES) and all(report["checks"].values())


class LeakyEvaluator(SqliteEnvironment):
    """A kind whose graders' view is the harness's writable connection: it must not conform."""

    name = "leaky"

    def evaluator_view(self) -> SqliteView:
        return SqliteView(self._control)


def test_check_env_exits_1_and_names_the_broken_promise() -> None:
    register_environment("leaky", LeakyEvaluator)
    try:
        result = _cli("check-env", "leaky")
    finally:
        unregister_environment("leaky")
    assert result.exit_code == 1
    assert "leaky: DOES NOT CONFORM" in result.stdout
    assert "FAIL evaluator view" in result.stdout and "ok   determinism" in result.stdout


def test_check_env_refuses_an_unknown_kind_or_fixture(tmp_path: Path) -> None:
    result = _cli("check-env", "nosuchkind")
    assert result.exit_code == 2 and "unknown environment kind" in result.stderr
    assert "known: postgres, sqlite" in result.stderr  # the kinds that exist are listed
    result = _cli("check-env", "sqlite", "--fixture", str(tmp_path / "missing.sql"))
    assert result.exit_code == 2 and "missing.sql" in result.stderr


def test_run_takes_an_environment_override(tmp_path: Path, audited: str) -> None:
    from .conftest import BANK_SYSTEM

    store = tmp_path / "runs.db"
    args = ["run", str(BANK), "--system", str(BANK_SYSTEM), "--store", str(store), "--json"]
    result = _cli(*args, "--environment", audited)
    assert result.exit_code == 0, result.output
    assert BUILT  # the batch's attempts ran on the override's kind
    result = _cli(*args, "--environment", "nope")
    assert result.exit_code == 2 and "unknown environment kind 'nope'" in result.stderr
