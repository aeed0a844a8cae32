"""A user's working folder for the bad-input tests (``tests/test_malformed*``): the shipped
retail example suite, its agents and the careful system, and a run store with batches in it
(imported: fast), so a refusal can be shown to leave the store alone; the real command run
on it in a subprocess; and what the store holds, to compare before and after.

Each test damages its own copy (:func:`spoilable_copy`) of a workspace made once per module
(:func:`make_workspace`): the fixtures :func:`pristine` and :func:`copy` (``tests/conftest.py``
shares them; a module that wants other batches defines its own ``pristine``), and
:func:`retail_folder` for a test that damages the suite alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.model_harness import EXAMPLES

TASK = "refund-socks"
"""The retail task each task mutant edits (the suite's canary, a small task)."""

SYSTEM = "systems/careful.yaml"
"""The system file, relative to the workspace."""

STORE = "s.db"
"""The run store, relative to the workspace."""

COMMAND_SECONDS = 120


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def groundstate(*args: str | Path, cwd: Path) -> Outcome:
    """``groundstate ARGS`` as a user runs it: a new process, its own working directory."""
    done = subprocess.run(
        [sys.executable, "-m", "groundstate", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=COMMAND_SECONDS,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
    )
    return Outcome(done.returncode, done.stdout, done.stderr)


def digest(path: Path) -> str | None:
    """What the store holds: its rows (a reader may checkpoint the WAL into the database file,
    which moves bytes, not data), or its bytes when it is no SQLite database. Read from a
    copy: opening the store itself could change it."""
    if not path.is_file():
        return None
    with tempfile.TemporaryDirectory() as scratch:
        for part in [path, *path.parent.glob(path.name + "-wal")]:
            shutil.copy(part, Path(scratch) / part.name.replace(path.name, "copy.db"))
        try:
            db = sqlite3.connect(Path(scratch) / "copy.db")
            try:
                rows = "\n".join(db.iterdump())
            finally:
                db.close()
        except sqlite3.DatabaseError:
            rows = path.read_bytes().hex()
    return hashlib.sha256(rows.encode()).hexdigest()


def assert_refused(outcome: Outcome, *names: str) -> None:
    """Non-zero, no traceback, one ``error:`` line naming each of *names*."""
    assert outcome.code != 0, outcome.text
    assert "Traceback" not in outcome.text, outcome.text
    errors = [line for line in outcome.err.splitlines() if line.startswith("error:")]
    assert errors, outcome.text
    for name in names:
        assert any(name in line for line in errors), (name, outcome.text)


def make_workspace(root: Path, batches: Sequence[str] = ("x",)) -> Path:
    """*root* made a workspace: ``retail/``, ``agents/``, :data:`SYSTEM`, ``results.jsonl``
    (two results, one passed) and, with *batches*, the store :data:`STORE` holding that file
    imported once under each name."""
    shutil.copytree(EXAMPLES / "retail", root / "retail")
    shutil.copytree(EXAMPLES / "agents", root / "agents")
    (root / "systems").mkdir()
    shutil.copy(EXAMPLES / "systems" / "careful.yaml", root / SYSTEM)
    rows = [
        {"task_id": "a", "attempt": 1, "success": True, "terminal_reason": "success"},
        {"task_id": "b", "attempt": 1, "success": False, "terminal_reason": "agent_failure"},
    ]
    (root / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    for name in batches:
        made = groundstate(
            "import-results", "results.jsonl", "--name", name, "--store", STORE, cwd=root
        )
        assert made.code == 0, made.text
    return root


def spoilable_copy(workspace: Path, tmp_path: Path) -> Path:
    """A copy of *workspace* (its links kept as links) that one test may damage."""
    shutil.copytree(workspace, tmp_path / "w", symlinks=True)
    return tmp_path / "w"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with one batch, ``x``, made once per test module."""
    return make_workspace(tmp_path_factory.mktemp("pristine"))


@pytest.fixture
def copy(pristine: Path, tmp_path: Path) -> Path:
    """This test's own copy of its module's :func:`pristine` workspace."""
    return spoilable_copy(pristine, tmp_path)


@pytest.fixture
def retail_folder(tmp_path: Path) -> Path:
    """The retail example suite alone, to damage and check in this process."""
    shutil.copytree(EXAMPLES / "retail", tmp_path / "retail")
    return tmp_path / "retail"
