"""Outcome assertions on repository workspaces: hidden tests and the paths a change may touch.

``tests`` grades the agent's change the way a reviewer would: the state's diff against the
fixture's base commit is applied to a clean checkout (a fresh folder on the evaluator side,
never the agent's work tree), the suite's hidden tests are copied in, and the command runs in
the sandbox with no network and a wall-time limit. With ``runner: unittest`` the hidden tests
stay in a grader folder beside the checkout and groundstate's runner counts every outcome
(:mod:`groundstate.grading.workspace_unittest`); with ``command``, they are copied into the
checkout and exit 0 passes, a verdict the agent's code can forge. The hidden tests live in the
suite folder, which no agent tool can reach and no sandbox binds.

``changed_paths`` is the collateral-damage check: every path the attempt added, changed or
deleted must match one of the task's allowed patterns, so an agent that deletes or edits the
tests (or anything else outside ``src/**``, say) fails, whatever the tests then say.
"""

from __future__ import annotations

import os
import re
import shutil
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from groundstate.environments.base import TableDiff
from groundstate.environments.workspace import FILES
from groundstate.environments.workspace_tools import command_environment, owner_access
from groundstate.grading.workspace_unittest import run_unittest
from groundstate.sandbox import run_sandboxed
from groundstate.spec.files import is_dir
from groundstate.spec.task import ChangedPathsAssertion, TestsAssertion
from groundstate.workdirs import make_workdir

if TYPE_CHECKING:
    from groundstate.grading.outcome import States

GRACE_S = 30.0
"""Seconds a ``tests`` assertion may take beyond its command's ``timeout_s`` (checkout,
copying) before the grader's own limit calls it a grader failure."""


def evaluate_tests(assertion: Any, states: States) -> tuple[bool, dict[str, Any]]:
    """Run the hidden tests on a clean checkout of the final state (see the module)."""
    assert isinstance(assertion, TestsAssertion)
    spec = assertion.tests
    folder = make_workdir("grading-")
    try:
        checkout = folder / "checkout"
        states.sT.checkout(checkout)  # type: ignore[attr-defined]
        policy = states.sT.policy  # type: ignore[attr-defined]
        if spec.runner is not None:
            passed, evidence = run_unittest(spec, states.suite_root, checkout, folder, policy)
            return passed, {**evidence, "changed_files": changed(states)}
        assert spec.command is not None  # the spec's validator: a runner or a command
        if spec.path is not None:
            place_hidden_tests((states.suite_root / spec.path).resolve(), checkout, spec.into)
        result = run_sandboxed(
            ["/bin/sh", "-c", spec.command],
            policy,
            cwd=checkout,
            timeout_s=spec.timeout_s,
            writable=[checkout],
            hidden=[states.suite_root.resolve()],
            env=command_environment(),
        )
    finally:
        owner_access(folder)  # the code under test may have taken it away with chmod
        shutil.rmtree(folder, ignore_errors=True)
    evidence = {"command": spec.command, "changed_files": changed(states), **result.to_json()}
    return result.exit_code == 0, evidence


def place_hidden_tests(source: Path, checkout: Path, into: str) -> None:
    """Copy the hidden tests into the checkout's *into* folder, replacing whatever the agent's
    change put at their names. This runs on the host: a link the change made there (``tests
    -> /etc``, ``tests/test_x.py -> ~/.bashrc``) is removed, never followed, so the hidden
    tests are written only inside the checkout (and never where a later attempt could read
    them)."""
    target = checkout
    for part in PurePosixPath(into).parts:
        target = _plain_folder(target / part)
    for folder, dirs, files in os.walk(source, followlinks=True):
        here = target.joinpath(*Path(folder).relative_to(source).parts)
        for name in dirs:
            _plain_folder(here / name)
        for name in files:
            _remove(here / name)
            shutil.copy2(Path(folder) / name, here / name)


def _plain_folder(path: Path) -> Path:
    """*path* as a real folder of its parent: a link or file there is replaced."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    path.mkdir(exist_ok=True)
    return path


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.is_symlink() or path.exists():
        path.unlink()


def evaluate_changed_paths(assertion: Any, states: States) -> tuple[bool, dict[str, Any]]:
    """Every changed path matches an allowed pattern."""
    assert isinstance(assertion, ChangedPathsAssertion)
    allowed = assertion.changed_paths.allowed
    paths = changed(states)
    outside = [path for path in paths if not any(matches(path, p) for p in allowed)]
    return not outside, {"changed": paths, "outside_allowed": outside, "allowed": allowed}


def changed(states: States) -> list[str]:
    """The paths the attempt added, changed or deleted."""
    diff = states.diff.tables.get(FILES, TableDiff())
    rows = [*diff.added, *diff.removed, *(c.after for c in diff.changed)]
    return sorted({str(row["path"]) for row in rows})


def matches(path: str, pattern: str) -> bool:
    """Whether *path* matches the glob *pattern*: ``**`` spans folders, ``*`` and ``?`` do not."""
    return _compiled(pattern).fullmatch(path) is not None


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    parts = []
    for piece in re.split(r"(\*\*/|/\*\*$|\*\*|\*|\?)", pattern):
        if piece == "**/":
            parts.append(r"(?:.*/)?")
        elif piece == "/**":
            parts.append(r"(?:/.*)?")
        elif piece == "**":
            parts.append(r".*")
        elif piece == "*":
            parts.append(r"[^/]*")
        elif piece == "?":
            parts.append(r"[^/]")
        else:
            parts.append(re.escape(piece))
    return re.compile("".join(parts), re.DOTALL)  # a file name may hold a newline


def hidden_tests_problem(
    suite_root: Path, fixture: Path, spec_path: str | None, into: str
) -> str | None:
    """Why a ``tests`` assertion's folders are unusable, or None: the hidden tests must be a
    folder of the suite outside the fixture (never in the agent's workspace), and ``into``
    must stay inside the checkout."""
    target = PurePosixPath(into)
    if target.is_absolute() or ".." in target.parts:
        return f"into: {into!r} must be a folder inside the checkout (no '..', not absolute)"
    if spec_path is None:
        return None
    root = suite_root.resolve()
    try:
        hidden = (root / spec_path).resolve()
    except (OSError, ValueError) as exc:  # a name the OS refuses
        return f"{spec_path!r}: {exc}"
    if not hidden.is_relative_to(root):
        return f"{spec_path!r} is outside the suite folder"
    if not is_dir(hidden):
        return f"no folder {spec_path!r} in the suite"
    if hidden.is_relative_to(fixture.resolve()) or fixture.resolve().is_relative_to(hidden):
        return f"{spec_path!r} is inside the fixture: the agent would see the hidden tests"
    return None
