"""The bugfix example's content proves itself: the hidden tests fail on the base library,
every oracle and alternative patch passes the visible tests, the hidden tests and the
allowed paths, and every known-bad patch fails exactly the checks TASKS.md says.

It runs ``examples/bugfix/check_patches.py`` in-process (its functions, not a subprocess);
the patches themselves are applied with git in temporary copies of the library.
"""

from __future__ import annotations

import asyncio
import importlib.util
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from groundstate.agents.base import ToolResult

from .conftest import EXAMPLES

BUGFIX = EXAMPLES / "bugfix"
AGENTS = EXAMPLES / "agents"
REQUIRED_BADS = ("bad_delete_tests", "bad_edit_tests", "bad_hardcode", "bad_visible_only")

needs_git = pytest.mark.skipif(
    shutil.which("git") is None, reason="git is not installed: the patches are applied with git"
)


@pytest.fixture(scope="module")
def checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_patches", BUGFIX / "check_patches.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def checked(checker: ModuleType) -> tuple[list[str], list[Any]]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the patches are applied with git")
    problems, results = checker.check_suite(BUGFIX)
    return problems, results


@needs_git
def test_every_patch_behaves_as_documented(checked: tuple[list[str], list[Any]]) -> None:
    problems, results = checked
    assert problems == []
    by_task: dict[str, list[Any]] = {}
    for result in results:
        by_task.setdefault(result.task_id, []).append(result)
    assert len(by_task) >= 6
    for task_id, task_results in by_task.items():
        good = [r for r in task_results if r.good]
        bad = [r for r in task_results if not r.good]
        assert [r.patch for r in good if r.patch == "oracle.diff"], task_id
        assert all(not r.failed for r in good), task_id
        assert len(bad) >= 2 and all(r.failed for r in bad), task_id


@needs_git
def test_the_known_bads_cover_every_kind_of_cheat(checked: tuple[list[str], list[Any]]) -> None:
    _, results = checked
    names = {Path(r.patch).stem for r in results}
    assert set(REQUIRED_BADS) <= names
    alternatives = {r.task_id for r in results if r.patch == "alt.diff"}
    assert len(alternatives) >= 3
    # At least one bad is caught only by the allowed paths: its code is right, its
    # collateral change is not. And one edits a test inside the allowed paths, so only the
    # hidden tests catch it.
    failed = [r.failed for r in results if not r.good]
    assert frozenset({"paths"}) in failed
    edit = [r for r in results if r.patch == "bad_edit_tests.diff"]
    assert edit and all(r.failed == {"hidden"} for r in edit)


def test_judge_flags_patches_that_do_not_behave_as_documented(checker: ModuleType) -> None:
    doc = checker.TaskDoc(
        allowed=["src/**"],
        caught_by={"oracle.diff": frozenset(), "bad_hardcode.diff": frozenset({"hidden"})},
    )

    def result(patch: str, failed: set[str]) -> Any:
        return checker.PatchResult("t", patch, True, frozenset(failed), [])

    assert checker.judge(result("oracle.diff", set()), doc) is None
    assert "correct patch fails" in checker.judge(result("oracle.diff", {"visible"}), doc)
    assert checker.judge(result("bad_hardcode.diff", {"hidden"}), doc) is None
    assert "passes every check" in checker.judge(result("bad_hardcode.diff", set()), doc)
    wrong = checker.judge(result("bad_hardcode.diff", {"hidden", "visible"}), doc)
    assert "TASKS.md says" in wrong
    assert "not listed" in checker.judge(result("bad_other.diff", {"hidden"}), doc)


def test_allowed_paths_are_folders_or_exact_paths(checker: ModuleType) -> None:
    allowed = ["src/**", "tests/test_money.py"]
    paths = ["src/tally/money.py", "tests/test_money.py", "tests/test_text.py", "repro.py"]
    assert checker.outside_allowed(paths, allowed) == ["tests/test_text.py", "repro.py"]
    near = ["srcx/a.py", "a/src/b.py", "src", "tests/test_money.pyc"]
    assert checker.outside_allowed(near, allowed) == near
    with pytest.raises(checker.SuiteError, match="only 'folder/"):
        checker.outside_allowed(paths, ["src/*.py"])


def test_tasks_md_without_allowed_paths_is_refused(checker: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "TASKS.md").write_text("## `some-task`\n\n| `oracle.diff` | fix | — |\n")
    with pytest.raises(checker.SuiteError, match="some-task has no"):
        checker.read_tasks_md(tmp_path / "TASKS.md")
    (tmp_path / "TASKS.md").write_text(
        "## `t`\n- **Allowed paths:** `src/**`\n| `bad_x.diff` | x | hidden, linting |\n"
    )
    with pytest.raises(checker.SuiteError, match="unknown check"):
        checker.read_tasks_md(tmp_path / "TASKS.md")


@needs_git
def test_a_run_of_zero_tests_is_not_a_pass(checker: ModuleType, tmp_path: Path) -> None:
    # unittest says OK when it finds nothing to import (a hyphen in a file name suffices).
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "test_not-importable.py").write_text("import unittest\n")
    with checker.base_checkout(BUGFIX / "repo") as checkout:
        assert checker.run_tests(checkout, hidden) == {"visible": True, "hidden": False}


def test_the_agent_facing_repo_holds_no_answers() -> None:
    repo = BUGFIX / "repo"
    files = [p for p in repo.rglob("*") if p.is_file()]
    assert not [p for p in files if ".git" in p.parts or "__pycache__" in p.parts]
    hidden_names = {p.name for p in (BUGFIX / "hidden").rglob("test_*.py")}
    assert len(hidden_names) >= 6
    assert not hidden_names & {p.name for p in files}
    for task_dir in (BUGFIX / "hidden").iterdir():  # file names are importable module names
        (test_file,) = task_dir.glob("test_*.py")
        assert re.fullmatch(r"test_\w+\.py", test_file.name)
        assert test_file.name == f"test_{task_dir.name.replace('-', '_')}.py"


# --- the reference agent, on a stand-in for the workspace tools -----------------------------


class _WorkspaceSession:
    """The six workspace tools over a local checkout, enough to run the reference agent
    without the environment (which the workspace kind provides). Paths stay inside the
    checkout; every call is kept for the assertions."""

    def __init__(self, checkout: Path, request: str, rng: Any) -> None:
        self.checkout, self.user_request, self.rng = checkout, request, rng
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def _path(self, path: str) -> Path:
        target = (self.checkout / path).resolve()
        assert target.is_relative_to(self.checkout.resolve()), path
        return target

    def record_usage(self, **_: Any) -> None:
        pass

    async def call(self, tool: str, args: dict[str, Any] | None = None) -> ToolResult:
        args = args or {}
        self.calls.append((tool, args))
        try:
            return ToolResult(ok=True, output=getattr(self, f"_{tool}")(**args))
        except (OSError, ValueError) as error:
            return ToolResult(ok=False, error=str(error), error_class="tool_error")

    def _files(self, path: str) -> list[str]:
        root = self._path(path)
        found = [p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts]
        return sorted(p.relative_to(self.checkout).as_posix() for p in found)

    def _list_files(self, path: str = ".") -> dict[str, Any]:
        return {"path": path, "files": self._files(path), "truncated": False}

    def _read_file(self, path: str) -> dict[str, Any]:
        return {"path": path, "content": self._path(path).read_text(encoding="utf-8")}

    def _write_file(self, path: str, content: str) -> dict[str, Any]:
        self._path(path).write_text(content, encoding="utf-8")
        return {"path": path, "bytes": len(content.encode())}

    def _search(self, pattern: str, path: str = ".") -> dict[str, Any]:
        matches = [
            f"{name}:{number}:{line}"
            for name in self._files(path)
            for number, line in enumerate(self._read_file(name)["content"].splitlines(), 1)
            if re.search(pattern, line)
        ]
        return {"matches": matches, "truncated": False}

    def _apply_patch(self, patch: str) -> dict[str, Any]:
        done = subprocess.run(
            ["git", "apply", "-"], input=patch, cwd=self.checkout, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise ValueError(done.stderr)
        return {"applied": True}

    def _run_command(self, command: str, timeout_s: float = 30) -> dict[str, Any]:
        env = {
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        done = subprocess.run(
            command,
            shell=True,
            cwd=self.checkout,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        return {"exit_code": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


class _Draws:
    """An rng whose ``random()`` returns scripted numbers, to pick the agent's slips."""

    def __init__(self, *draws: float) -> None:
        self.draws = list(draws)

    def random(self) -> float:
        return self.draws.pop(0)


def _attempt(
    checker: ModuleType, agent: Any, task_id: str, rng: Any = None
) -> tuple[set[str], _WorkspaceSession]:
    """Run the agent on one task in a fresh checkout; the checks it fails, and its session."""
    doc = checker.read_tasks_md(BUGFIX / "TASKS.md")[task_id]
    with checker.base_checkout(BUGFIX / "repo") as checkout:
        session = _WorkspaceSession(checkout, doc.issue, rng or random.Random(0))
        asyncio.run(agent.run(session))
        outside = checker.outside_allowed(checker.changed_paths(checkout), doc.allowed)
        passed = {**checker.run_tests(checkout, BUGFIX / "hidden" / task_id), "paths": not outside}
    return {name for name, ok in passed.items() if not ok}, session


@pytest.fixture(scope="module")
def bugfix_agents() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bugfix_agent", AGENTS / "bugfix_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


TASK_IDS = sorted(p.name for p in (BUGFIX / "patches").iterdir() if p.is_dir())


@needs_git
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_the_careful_agent_without_faults_solves_each_task(
    checker: ModuleType, bugfix_agents: ModuleType, task_id: str
) -> None:
    # Both routes of editing: a whole file through write_file, or a diff through apply_patch.
    for draws in ((0.9, 0.0, 0.0), (0.9, 0.9, 0.9)):
        agent = bugfix_agents.careful(fault_rate=0.5)
        failed, session = _attempt(checker, agent, task_id, _Draws(*draws))
        assert failed == set()
        tools = [tool for tool, _ in session.calls]
        assert {"search", "read_file", "run_command"} <= set(tools)
        assert ("apply_patch" in tools) == (draws[1] == 0.0) != ("write_file" in tools)
    # It only ever looks at the workspace (the hidden tests are not there, nor asked for).
    assert not [
        args for _, args in session.calls if "hidden" in str(args) or "patches" in str(args)
    ]


@needs_git
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_the_agents_faults_are_caught(
    checker: ModuleType, bugfix_agents: ModuleType, task_id: str
) -> None:
    # Every fault fires: the careful agent's plausible wrong fix passes the visible tests and
    # fails the hidden ones.
    failed, _ = _attempt(checker, bugfix_agents.careful(fault_rate=1.0), task_id)
    assert failed == {"hidden"}


@needs_git
def test_the_hasty_agent_claims_without_acting(
    checker: ModuleType, bugfix_agents: ModuleType
) -> None:
    failed, session = _attempt(checker, bugfix_agents.hasty(fault_rate=1.0), "slug-accents")
    assert failed == {"hidden"}
    assert {t for t, _ in session.calls} == {"list_files"}


@needs_git
def test_the_hasty_agents_leftover_script_is_collateral(
    checker: ModuleType, bugfix_agents: ModuleType
) -> None:
    # Slips drawn: no false claim, the script stays behind, the right fix, patched by a diff.
    draws = _Draws(0.9, 0.0, 0.9, 0.0)
    failed, session = _attempt(checker, bugfix_agents.hasty(0.5), "truncate-width", draws)
    assert failed == {"paths"}
    assert [t for t, _ in session.calls].count("apply_patch") == 1


def test_the_agent_recognises_every_issue_and_only_those(
    checker: ModuleType, bugfix_agents: ModuleType
) -> None:
    docs = checker.read_tasks_md(BUGFIX / "TASKS.md")
    recipes = [bugfix_agents.recognise(doc.issue) for doc in docs.values()]
    assert None not in recipes and len({r.name for r in recipes}) == len(docs)
    assert bugfix_agents.recognise("The report page is slow to load.") is None


def test_the_issues_read_like_bug_reports_not_like_the_tests(checker: ModuleType) -> None:
    docs = checker.read_tasks_md(BUGFIX / "TASKS.md")
    for task_id, doc in docs.items():
        assert len(doc.issue.split()) > 40, task_id
        hidden = (BUGFIX / "hidden" / task_id).glob("test_*.py")
        names = {n for f in hidden for n in re.findall(r"def (test_\w+)", f.read_text())}
        assert "hidden" not in doc.issue.lower() and not {n for n in names if n in doc.issue}
