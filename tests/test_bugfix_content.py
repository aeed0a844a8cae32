"""The bugfix example's content proves itself: the hidden tests fail on the base library,
every oracle and alternative patch passes the visible tests, the hidden tests and the
allowed paths, and every known-bad patch fails exactly the checks TASKS.md says.

It runs ``examples/bugfix/check_patches.py`` in-process (its functions, not a subprocess);
the patches themselves are applied with git in temporary copies of the library.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from .conftest import EXAMPLES

BUGFIX = EXAMPLES / "bugfix"
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


def test_allowed_paths_are_globs_over_whole_paths(checker: ModuleType) -> None:
    allowed = ["src/**", "tests/test_money.py"]
    paths = ["src/tally/money.py", "tests/test_money.py", "tests/test_text.py", "repro.py"]
    assert checker.outside_allowed(paths, allowed) == ["tests/test_text.py", "repro.py"]
    assert checker.outside_allowed(["srcx/a.py", "a/src/b.py"], ["src/**"]) == [
        "srcx/a.py",
        "a/src/b.py",
    ]


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
