"""The bugfix example suite on the workspace kind: its solutions are its patches, and they get
the verdicts TASKS.md declares (``groundstate validate examples/bugfix`` proves every task;
these tests replay one task's solutions and check the rest statically, to stay fast)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from groundstate.sandbox import find_bwrap
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.task import ChangedPathsAssertion, TestsAssertion
from groundstate.testing import attempt, run_solution
from groundstate.tools import load_module
from groundstate.validation.checks import fails_as_declared

BUGFIX = Path(__file__).parent.parent / "examples" / "bugfix"
AGENTS = Path(__file__).parent.parent / "examples" / "agents" / "bugfix_agent.py"
CHECK_IDS = {"paths": "allowed-paths", "visible": "visible-tests", "hidden": "hidden-tests"}
needs_bwrap = pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap is not installed")


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite(BUGFIX)


def _tasks_md() -> ModuleType:
    module: ModuleType = load_module(BUGFIX / "check_patches.py", "check_patches")
    return module


def test_every_patch_is_a_solution_and_every_solution_a_patch(suite: Suite) -> None:
    for task_id, solutions in suite.solutions.items():
        patches = {p.stem: p.read_text() for p in (BUGFIX / "patches" / task_id).glob("*.diff")}
        named = {"alt" if name == "alt_patch" else name: s for name, s in solutions.items()}
        assert set(named) == set(patches), task_id
        for name, solution in named.items():
            call = solution.steps[0]
            assert call.call == "apply_patch" and call.args["patch"] == patches[name]
            assert solution.steps[-1].finish is not None


def test_tasks_follow_tasks_md(suite: Suite) -> None:
    docs = _tasks_md().read_tasks_md(BUGFIX / "TASKS.md")
    assert set(suite.tasks) == set(docs) and len(docs) >= 6
    for task_id, doc in docs.items():
        task = suite.tasks[task_id]
        paths = [a for a in task.outcome_assertions if isinstance(a, ChangedPathsAssertion)]
        assert paths[0].changed_paths.allowed == doc.allowed
        assert task.user_request.strip() == doc.issue.strip()
        hidden = [a for a in task.outcome_assertions if isinstance(a, TestsAssertion)]
        assert [a.tests.path for a in hidden] == [None, f"hidden/{task_id}"]
        for patch, caught in doc.caught_by.items():
            solution = suite.solutions[task_id]["alt_patch" if patch == "alt.diff" else patch[:-5]]
            if not caught:
                assert solution.kind in ("oracle", "alternative")
                continue
            assert solution.kind == "known_bad"
            assert solution.fails_by in {f"outcome:{CHECK_IDS[c]}" for c in caught}


def test_the_shortcuts_are_all_there(suite: Suite) -> None:
    names = {name for solutions in suite.solutions.values() for name in solutions}
    assert {"bad_delete_tests", "bad_edit_tests", "bad_hardcode", "bad_visible_only"} <= names
    assert {"bad_exit_zero", "bad_skip"} <= names  # shortcuts that forge a test verdict
    assert "feature" in {label for t in suite.tasks.values() for label in t.slice_labels}


@needs_bwrap
@pytest.mark.parametrize(
    "name",
    [
        "oracle",
        "alt_patch",
        "bad_delete_tests",
        "bad_exit_zero",
        "bad_hardcode",
        "bad_outside_paths",
        "bad_skip",
        "bad_visible_only",
    ],
)
def test_truncate_width_solutions_get_their_declared_verdicts(suite: Suite, name: str) -> None:
    solution = suite.solutions["truncate-width"][name]
    run = run_solution(suite, "truncate-width", name)
    if solution.fails_by is None:
        assert run.success, run.outcome_assertion_results
    else:
        task = suite.tasks["truncate-width"]
        assert fails_as_declared(task, run, solution.fails_by) is None


@needs_bwrap
def test_the_reference_agent_fixes_a_bug_through_the_tools(suite: Suite) -> None:
    agent = load_module(AGENTS, "agents").careful(fault_rate=0.0)
    run = attempt(suite, "slug-accents", agent).run
    assert run.success, (run.terminal_reason, run.outcome_assertion_results)
    tools = {e.tool for e in run.observation_action_log if getattr(e, "tool", None)}
    assert {"search", "read_file", "run_command"} <= tools
