"""The environment registry: kinds chosen by suite.yaml, extended from outside the package."""

from __future__ import annotations

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
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import SpecError
from groundstate.spec.suite import load_suite, with_environment
from groundstate.spec.task import Permissions
from groundstate.testing import run_solution
from groundstate.validation import check_environment

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
    assert switched.suite_hash == suite.suite_hash  # the files did not change
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
    assert {"sqlite", "postgres"} <= set(environment_kinds())
    built: Environment = registry.build_environment(
        "sqlite", BANK / "fixtures" / "bank.sql", clock=datetime(2026, 1, 15)
    )
    with built as env:
        assert isinstance(env, SqliteEnvironment)
