"""Tenth environments audit: the state a check reads is the state hashed, diffed and reset."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from groundstate.environments.workspace import WorkspaceEnvironment

CLOCK = datetime(2024, 1, 1, tzinfo=UTC)


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[WorkspaceEnvironment]:
    repo = tmp_path / "suite" / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / ".gitignore").write_text("build/\n*.log\n")
    (repo / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    with WorkspaceEnvironment(repo, clock=CLOCK, options={"sandbox": "none"}) as env:
        env.reset()
        yield env


def test_a_view_lists_plain_paths(workspace: WorkspaceEnvironment) -> None:
    # files() gave the snapshot's keys, JSON text ('"src/calc.py"'): `path in files()` was
    # always false.
    view = workspace.evaluator_view()
    assert view.files() == [".gitignore", "src/calc.py"]
    assert workspace.initial_view().files() == [".gitignore", "src/calc.py"]


def test_a_view_reads_no_file_the_state_leaves_out(workspace: WorkspaceEnvironment) -> None:
    """An ignored file is not state: the hash, the diff and the hidden tests' checkout do not
    hold it, so a check must not pass on it either (it read the live tree)."""
    before = workspace.state_hash()
    with workspace.tool_transaction():
        workspace.handle.write("build/answer.txt", "42\n")
        workspace.handle.write("run.log", "all tests passed\n")
        os.symlink("calc.py", workspace.root / "src" / "alias.py")  # a state link, to state
        os.symlink("../build/answer.txt", workspace.root / "src" / "answer.txt")
    assert workspace.state_hash() != before  # the links are state
    view = workspace.evaluator_view()
    for path in ("build/answer.txt", "run.log", "src/answer.txt"):
        with pytest.raises(FileNotFoundError):
            view.read(path)
    assert view.read("src/alias.py") == view.read("src/calc.py")
    assert "build/answer.txt" not in view.files() and "src/answer.txt" in view.files()
