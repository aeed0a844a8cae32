"""Sixteenth environments and task validation audit: the reset check probes every file of a
workspace and every AUTOINCREMENT counter on PostgreSQL, and a fixture PostgreSQL cannot
build is refused naming the task file, the table or column and the reason."""

from __future__ import annotations

import os
import shutil
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from groundstate.environments.workspace import (
    WorkspaceConformance,
    WorkspaceEnvironment,
    remove_except,
)
from groundstate.errors import FixtureNotCarried
from groundstate.sandbox import find_bwrap
from groundstate.spec.suite import Suite, load_suite, with_environment
from groundstate.spec.task import AgentTask
from groundstate.validation import check_environment
from groundstate.validation.checks import check_reset
from groundstate.validation.replay import Proof
from groundstate.validation.static import check_suite

from .conftest import BANK, EditTask
from .test_validation_round15 import _postgres
from .test_workspace import MINI

CLOCK = datetime(2026, 1, 15, 9, 30)


# --- the postgres reset check bumps every AUTOINCREMENT counter -------------------------------


def test_postgres_reset_check_catches_a_reset_that_keeps_a_counter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The probe bumped a counter only by copying a row, so the counter of a table the fixture
    leaves empty (the bank's transfers) went unprobed, and a reset that left the counters as
    the attempt had them passed. It now inserts a row of harmless values first, as the SQLite
    kind's probe does."""
    _postgres()
    from groundstate.environments import postgres

    suite = with_environment(load_suite(BANK), "postgres")
    passed, detail = check_reset(Proof(suite, suite.tasks["transfer"]))
    assert passed, detail
    assert "bumped the AUTOINCREMENT counter of transfers" in detail

    def keeps_counters(db: Any, fixture: Any) -> None:
        with db.pipeline(), db.cursor() as cursor:
            cursor.execute(f"TRUNCATE {postgres.INTERNAL}.writes")
            cursor.executemany(
                f"INSERT INTO {postgres.INTERNAL}.meta VALUES (%s, %s)", fixture.meta
            )

    monkeypatch.setattr(postgres, "_fill_internal", keeps_counters)
    passed, detail = check_reset(Proof(suite, suite.tasks["transfer"]))
    assert not passed
    assert "AUTOINCREMENT counter of transfers is 1, not None" in detail


# --- the reset check probes every file of a workspace, and reads what reset left -------------


@pytest.fixture
def mini(tmp_path: Path) -> Suite:
    """The workspace_mini suite with an executable file, a link inside the tree, one out of
    it and one leading nowhere; commands unsandboxed where bwrap is missing."""
    root = tmp_path / "mini"
    shutil.copytree(MINI, root, symlinks=True)
    repo = root / "repo"
    (repo / "run.sh").write_text("#!/bin/sh\necho run\n")
    (repo / "run.sh").chmod(0o755)
    os.symlink("src/calc.py", repo / "calc_link.py")
    os.symlink("/etc", repo / "etc_link")
    os.symlink("missing.txt", repo / "dangling")
    task_file = root / "tasks" / "fix-add.yaml"
    task = yaml.safe_load(task_file.read_text())
    del task["reset_check"]  # the fixture is another now
    task_file.write_text(yaml.safe_dump(task))
    if find_bwrap() is None:
        suite_file = root / "suite.yaml"
        config = yaml.safe_load(suite_file.read_text())
        config["environment_options"]["sandbox"] = "none"
        suite_file.write_text(yaml.safe_dump(config))
    return load_suite(root)


def _reset_check(suite: Suite, kind: type[WorkspaceEnvironment]) -> tuple[bool, str]:
    def make_env(task: AgentTask, suite: Suite) -> WorkspaceEnvironment:
        return kind(
            suite.fixture_path(task),
            clock=task.clock,
            permissions=task.permissions,
            options=suite.config.environment_options,
        )

    return check_reset(Proof(suite, suite.tasks["fix-add"], make_env))


class ContentsOnly(WorkspaceEnvironment):
    """Puts back the contents of the files that are still files and removes what was added:
    modes, links and removed files stay as the attempt left them."""

    def _restore(self) -> None:
        if not self.root.exists():  # the first build
            super()._restore()
            return
        pristine = {p.relative_to(self._pristine).as_posix() for p in self._pristine.rglob("*")}
        for name in pristine:
            here, there = self.root / name, self._pristine / name
            if here.is_file() and not here.is_symlink() and there.is_file():
                shutil.copyfile(there, here)
        remove_except(self.root, pristine)
        self._now = self._clock0

    def reset(self, *, seed: int | None = None) -> str:
        self._restore()
        return self.state_hash()


class KeepsTheClock(WorkspaceEnvironment):
    def reset(self, *, seed: int | None = None) -> str:
        now = self.now()
        restored = super().reset(seed=seed)
        self._now = now
        return restored


class SaysRestored(WorkspaceEnvironment):
    """Returns the hash it expects without restoring anything."""

    def reset(self, *, seed: int | None = None) -> str:
        if not hasattr(self, "_reset_once"):
            self._reset_once = True
            return super().reset(seed=seed)
        return self._built_hash


def test_the_workspace_reset_probe_changes_every_file_and_reset_restores_them(
    mini: Suite,
) -> None:
    passed, detail = _reset_check(mini, WorkspaceEnvironment)
    assert passed, detail
    assert "added groundstate-probe/added.txt and a link out of the work tree" in detail
    assert "removed tests/check_calc.py" in detail
    assert "overwrote every other file (5) and flipped its mode" in detail


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        (ContentsOnly, "rows of files differ (0 added, 1 removed, 5 changed)"),
        (KeepsTheClock, "clock is 2026-01-15T10:30:00+00:00, not 2026-01-15T09:30:00+00:00"),
        (SaysRestored, "reset returned"),
    ],
)
def test_the_workspace_reset_check_catches_a_reset_that_restores_only_some(
    mini: Suite, kind: type[WorkspaceEnvironment], said: str
) -> None:
    """The probe overwrote one file and added one: a reset putting back contents but not
    modes, links or removed files passed; and the check trusted the hash reset returned, so
    a reset leaving the clock (which a workspace's hash leaves out) or restoring nothing
    while returning the expected hash passed too."""
    passed, detail = _reset_check(mini, kind)
    assert not passed
    assert said in detail, detail


def test_conformance_catches_a_reset_that_keeps_the_clock(tmp_path: Path) -> None:
    """Conformance's reset check trusted the hash reset returned too."""
    repo = WorkspaceConformance().fixture(tmp_path)
    sandbox = "bwrap" if find_bwrap() is not None else "none"
    problems = check_environment(
        partial(KeepsTheClock, repo, clock=CLOCK, options={"sandbox": sandbox})
    )
    assert any("reset returned" in p and "clock is" in p for p in problems), problems


# --- SQLite-only SQL on postgres: refused naming the task file, the table or column, the reason


SQLITE_ONLY = {
    # (a default of datetime('now') is carried since the twentieth round: the harness's
    # datetime, on the task's clock)
    "a default of a SQLite-only function": (
        "CREATE TABLE a (id INTEGER PRIMARY KEY, at TEXT NOT NULL DEFAULT (printf('%d', 1)));\n"
        "INSERT INTO a VALUES (1, '2026-01-01');",
        "column a.at DEFAULT printf('%d', 1) (function printf(unknown, integer) does not exist)",
    ),
    "a boolean default on an integer": (
        "CREATE TABLE a (id INTEGER PRIMARY KEY, on_sale INTEGER NOT NULL DEFAULT TRUE);\n"
        "INSERT INTO a (id) VALUES (1);",
        'column a.on_sale DEFAULT TRUE (column "on_sale" is of type bigint',
    ),
    "a double-quoted string default": (
        'CREATE TABLE a (id INTEGER PRIMARY KEY, state TEXT DEFAULT "open");\n'
        "INSERT INTO a (id) VALUES (1);",
        'column a.state DEFAULT "open" (cannot use column reference in DEFAULT expression)',
    ),
    # (a GLOB check is carried since the twenty-third round: the harness's GLOB operator)
    "a JSON check": (
        "CREATE TABLE a (id INTEGER PRIMARY KEY, sku TEXT CHECK (json_valid(sku)));\n"
        "INSERT INTO a VALUES (1, '{}');",
        "CHECK (json_valid(sku)) of table a (function json_valid(text) does not exist",
    ),
    "a foreign key to a column that is not unique": (
        "CREATE TABLE p (id INTEGER PRIMARY KEY, code TEXT);\n"
        "CREATE TABLE a (id INTEGER PRIMARY KEY, code TEXT REFERENCES p (code));\n"
        "INSERT INTO p VALUES (1, 'x');",
        'the foreign key ("code") of table a to p (there is no unique constraint',
    ),
    "a NUL character in text": (
        "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT);\n"
        "INSERT INTO a VALUES (1, 'x' || char(0) || 'y');",
        "the rows of table a (PostgreSQL text fields cannot contain NUL (0x00) bytes)",
    ),
}


@pytest.mark.parametrize("what", sorted(SQLITE_ONLY))
def test_postgres_names_the_sqlite_only_sql_it_cannot_build(tmp_path: Path, what: str) -> None:
    """A fixture the SQLite kind builds whose schema PostgreSQL refuses failed every proof and
    attempt with the server's raw error ("function datetime(unknown) does not exist", a caret
    under the SQL it made), naming no table or column, and left the half-built database on
    the server. It is now FixtureNotCarried naming the fixture, what was refused and why."""
    postgres = _postgres()
    from groundstate.environments.postgres_server import shared_server

    sql, named = SQLITE_ONLY[what]
    fixture = tmp_path / "shop.sql"
    fixture.write_text(f"{sql}\n")
    databases = _databases(shared_server())
    with pytest.raises(FixtureNotCarried) as caught:
        postgres(fixture, clock=CLOCK).close()
    message = str(caught.value)
    assert f"fixture {fixture}: PostgreSQL refuses {named}" in message
    assert "run the suite on the sqlite kind" in message
    assert _databases(shared_server()) == databases


def _databases(server: Any) -> set[str]:
    with server.connect("postgres") as db:
        return {row[0] for row in db.execute("SELECT datname FROM pg_database")}


def test_check_names_the_task_file_whose_fixture_postgres_cannot_build(
    edited_bank: EditTask,
) -> None:
    """``check`` built fixtures with SQLite only, so such a suite passed it and every proof
    and attempt failed; it is now an error at each task file using the fixture."""
    _postgres()
    root = edited_bank(lambda task: None).root
    fixture = root / "fixtures" / "bank.sql"
    fixture.write_text(
        fixture.read_text().replace("at TEXT)", "at TEXT DEFAULT (printf('%d', 1)))")
    )
    (root / "suite.yaml").write_text((root / "suite.yaml").read_text() + "environment: postgres\n")
    problems = [p for p in check_suite(root).problems if p.severity == "error"]
    assert [(p.file, p.field) for p in problems] == [
        (str(root / "tasks" / "transfer.yaml"), "initial_state_fixture")
    ]
    assert "PostgreSQL refuses column transfers.at DEFAULT printf('%d', 1)" in problems[0].reason
    assert problems[0].line is not None
    assert check_suite(BANK).ok  # the same suite on SQLite
