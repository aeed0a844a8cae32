"""Fourteenth task validation and environments audit: the validation cache follows every input
a proof depends on, and environments keep what their state says."""

from __future__ import annotations

import shutil
import subprocess
from datetime import datetime
from pathlib import Path

from groundstate.environments.workspace import WorkspaceEnvironment
from groundstate.spec.suite import Suite, load_suite
from groundstate.validation import validation_key

TESTS = Path(__file__).parent
WORKSPACE_MINI = TESTS / "suites" / "workspace_mini"
CLOCK = datetime(2026, 1, 15, 9, 30)


# --- the cache key of a folder fixture --------------------------------------------------------


def _workspace_suite(tmp_path: Path) -> Path:
    root = tmp_path / "suite"
    shutil.copytree(WORKSPACE_MINI, root)
    return root


def _key(root: Path) -> str:
    suite = load_suite(root)
    return validation_key(suite, suite.tasks["fix-add"])


def _initial_hash(suite: Suite) -> str:
    task = suite.tasks["fix-add"]
    with WorkspaceEnvironment(
        suite.fixture_path(task), clock=CLOCK, options={"sandbox": "none"}
    ) as env:
        return env.reset()


def test_a_fixture_file_made_executable_proves_the_task_again(tmp_path: Path) -> None:
    """The workspace's state holds each file's mode; the key held its bytes only, so a
    validity proven for the old initial state was read back for the new one."""
    root = _workspace_suite(tmp_path)
    before, state = _key(root), _initial_hash(load_suite(root))
    (root / "repo" / "tests" / "check_calc.py").chmod(0o755)
    assert _initial_hash(load_suite(root)) != state
    assert _key(root) != before


def test_a_fixture_link_led_elsewhere_proves_the_task_again(tmp_path: Path) -> None:
    """A link is state by its target's name; the key read what it leads to (the same bytes
    for two files alike) and left out a link that leads nowhere."""
    root = _workspace_suite(tmp_path)
    src = root / "repo" / "src"
    (src / "copy.py").write_bytes((src / "calc.py").read_bytes())
    (src / "link.py").symlink_to("calc.py")
    before = _key(root)
    (src / "link.py").unlink()
    (src / "link.py").symlink_to("copy.py")
    assert _key(root) != before
    again = _key(root)
    (src / "dangling.py").symlink_to("nowhere.py")
    assert _key(root) != again
    again = _key(root)
    (src / "dangling.py").unlink()
    (src / "dangling.py").symlink_to("elsewhere.py")
    assert _key(root) != again


def test_a_fixture_repository_committed_anew_proves_the_task_again(tmp_path: Path) -> None:
    """A fixture with its own .git is taken at its HEAD commit; the key read its work tree.
    Committing an edit the work tree held already moved the state, not the key."""
    root = _workspace_suite(tmp_path)
    repo = root / "repo"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    (repo / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    before, state = _key(root), _initial_hash(load_suite(root))
    subprocess.run([*git, "commit", "-qam", "fixed"], check=True)
    assert _initial_hash(load_suite(root)) != state
    assert _key(root) != before
