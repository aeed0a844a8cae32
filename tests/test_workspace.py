"""The workspace environment kind: state, reset, the confined tools, grading, suite loading."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from groundstate.environments.workspace import FILES, WorkspaceEnvironment
from groundstate.environments.workspace_tools import TOOLS
from groundstate.errors import EnvironmentFailure, PermissionDenied, SpecError
from groundstate.gateway import ToolGateway
from groundstate.grading.workspace import matches
from groundstate.sandbox import find_bwrap
from groundstate.spec.solution import Step
from groundstate.spec.suite import load_suite
from groundstate.spec.task import Permissions
from groundstate.testing import run_solution
from groundstate.trace import ToolCallEvent
from groundstate.validation.checks import fails_as_declared
from groundstate.validation.regress import regress
from groundstate.validation.robustness import find_crash

MINI = Path(__file__).parent / "suites" / "workspace_mini"
CLOCK = datetime(2026, 1, 15, 9, 30)
FIX = """--- a/src/calc.py
+++ b/src/calc.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""

needs_bwrap = pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap is not installed")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A copy of the mini suite's repository, with a link to a secret outside it."""
    copy = tmp_path / "suite" / "repo"
    shutil.copytree(MINI / "repo", copy)
    (tmp_path / "suite" / "secret.txt").write_text("the hidden answer\n")
    (copy / "escape").symlink_to(tmp_path / "suite")
    (copy / "inside").symlink_to("src")
    return copy


@pytest.fixture
def env(repo: Path) -> Iterator[WorkspaceEnvironment]:
    with WorkspaceEnvironment(repo, clock=CLOCK, options={"sandbox": _sandbox()}) as made:
        made.reset()
        yield made


def _sandbox() -> str:
    return "bwrap" if find_bwrap() is not None else "none"


def _call(env: WorkspaceEnvironment, tool: str, **args: object) -> ToolCallEvent:
    events: list[ToolCallEvent] = []
    ToolGateway(TOOLS, env, events.append, lambda: 0.0).call(1, tool, args)
    return events[0]


# --- state and reset ---------------------------------------------------------------------------


def test_state_is_files_by_path_and_two_builds_hash_alike(repo: Path) -> None:
    with (
        WorkspaceEnvironment(repo, clock=CLOCK) as one,
        WorkspaceEnvironment(repo, clock=CLOCK) as two,
    ):
        assert one.reset() == two.reset()
        rows = one.snapshot().tables[FILES].rows
        paths = sorted(row["path"] for row in rows.values())
        assert paths == ["escape", "inside", "src/calc.py", "tests/check_calc.py"]
        link = next(row for row in rows.values() if row["path"] == "escape")
        assert link["mode"] == "120000"
        assert one.root != two.root


def test_reset_restores_files_and_clock_and_ignores_caches(env: WorkspaceEnvironment) -> None:
    initial = env.state_hash()
    with env.tool_transaction():
        env.handle.write("src/calc.py", "broken\n")
        env.handle.write("new/file.txt", "x")
        env.handle.remove("tests/check_calc.py")
    env.advance_clock(60)
    assert env.state_hash() != initial
    (env.root / "__pycache__").mkdir()
    (env.root / "__pycache__" / "calc.cpython-311.pyc").write_bytes(b"\0")
    assert env.reset() == initial and env.now() == CLOCK
    assert not (env.root / "new").exists()
    (env.root / "__pycache__").mkdir()
    (env.root / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert env.state_hash() == initial  # caches are not state


def test_a_git_fixture_is_taken_at_its_head_commit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(MINI / "repo", repo)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    (repo / "src" / "calc.py").write_text("uncommitted\n")
    with WorkspaceEnvironment(repo, clock=CLOCK) as env:
        env.reset()
        assert "return a - b" in env.handle.read("src/calc.py")
        assert ".git" not in {p.split("/")[0] for p in env.handle.listing()}


def test_a_missing_fixture_folder_is_an_environment_failure(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentFailure, match="not a folder"):
        WorkspaceEnvironment(tmp_path / "nothing", clock=CLOCK)


def test_without_bwrap_commands_are_refused_unless_allowed(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("groundstate.environments.workspace.find_bwrap", lambda: None)
    with pytest.raises(EnvironmentFailure, match=r"no bubblewrap.*sandbox: none"):
        WorkspaceEnvironment(repo, clock=CLOCK)
    with WorkspaceEnvironment(repo, clock=CLOCK, options={"sandbox": "none"}) as env:
        assert env.reset()


# --- tools -------------------------------------------------------------------------------------


def test_tools_list_read_write_search(env: WorkspaceEnvironment) -> None:
    listed = _call(env, "list_files", path="src")
    assert listed.ok and listed.output["files"] == ["src/calc.py"]
    assert _call(env, "read_file", path="src/calc.py").output["content"].startswith("def add")
    found = _call(env, "search", pattern=r"return a \W b")
    assert found.output["matches"] == ["src/calc.py:2:    return a - b"]
    wrote = _call(env, "write_file", path="docs/notes.md", content="hello\n")
    assert wrote.ok and wrote.changed_tables == [FILES]
    assert [(w.key, w.before) for w in wrote.writes] == [("docs/notes.md", None)]
    bad = _call(env, "search", pattern="(")
    assert bad.error_class == "tool_error" and "regular expression" in (bad.error or "")


def test_apply_patch_applies_or_changes_nothing(env: WorkspaceEnvironment) -> None:
    applied = _call(env, "apply_patch", patch=FIX)
    assert applied.ok and applied.output["files"] == ["src/calc.py"]
    assert "a + b" in env.handle.read("src/calc.py")
    before = env.state_hash()
    two_files = FIX.replace("a + b", "a * b") + (
        "--- a/tests/check_calc.py\n+++ b/tests/check_calc.py\n@@ -1 +1 @@\n-nothing\n+x\n"
    )
    rejected = _call(env, "apply_patch", patch=two_files)  # the first hunk alone would apply
    assert rejected.error_class == "tool_error" and "does not apply" in (rejected.error or "")
    assert env.state_hash() == before and not rejected.writes
    assert _call(env, "apply_patch", patch="not a patch").error_class == "tool_error"


@pytest.mark.parametrize(
    "path",
    ["/etc/passwd", "../secret.txt", "src/../../secret.txt", "escape/secret.txt", "escape"],
)
def test_paths_outside_the_workspace_are_refused(env: WorkspaceEnvironment, path: str) -> None:
    for tool, args in (
        ("read_file", {"path": path}),
        ("write_file", {"path": path, "content": "x"}),
        ("list_files", {"path": path}),
        ("search", {"pattern": "hidden", "path": path}),
    ):
        event = _call(env, tool, **args)
        assert event.error_class == "tool_error", (tool, path, event.output)
    assert "hidden answer" not in str(_call(env, "search", pattern="hidden answer").output)


def test_links_inside_the_workspace_work(env: WorkspaceEnvironment) -> None:
    assert _call(env, "read_file", path="inside/calc.py").ok


@pytest.mark.parametrize(
    "target",
    ["/tmp/groundstate-escape.txt", "../escape-by-patch.txt", "escape/by-link.txt"],
)
def test_patches_cannot_write_outside(env: WorkspaceEnvironment, target: str) -> None:
    patch = f"--- /dev/null\n+++ b/{target}\n@@ -0,0 +1 @@\n+escaped\n"
    event = _call(env, "apply_patch", patch=patch)
    assert not event.ok
    assert not Path("/tmp/groundstate-escape.txt").exists()
    assert not (env.root.parent / "escape-by-patch.txt").exists()
    assert not any(p.name == "by-link.txt" for p in env.root.parent.parent.rglob("*"))


def test_a_failing_tool_call_is_undone(env: WorkspaceEnvironment) -> None:
    initial = env.state_hash()
    with pytest.raises(RuntimeError), env.tool_transaction():
        env.handle.write("src/calc.py", "half-written")
        env.handle.remove("tests/check_calc.py")
        env.handle.write("added.txt", "x")
        raise RuntimeError("the tool failed")
    assert env.state_hash() == initial


def test_read_only_permissions_deny_writes_and_record_them(repo: Path) -> None:
    permissions = Permissions(tables={FILES: "read"})
    with WorkspaceEnvironment(
        repo, clock=CLOCK, permissions=permissions, options={"sandbox": _sandbox()}
    ) as env:
        env.reset()
        event = _call(env, "write_file", path="src/calc.py", content="x")
        assert event.error_class == "permission_denied" and event.denied == ["write files (write)"]
        assert _call(env, "read_file", path="src/calc.py").ok
        if find_bwrap() is not None:
            ran = _call(env, "run_command", command="echo x > src/calc.py")
            assert ran.ok and ran.output["exit_code"] != 0  # the work tree is bound read-only
        assert "a - b" in env.handle.read("src/calc.py")
    hidden = Permissions(tables={FILES: "none"})
    with (
        WorkspaceEnvironment(repo, clock=CLOCK, permissions=hidden) as env,
        pytest.raises(PermissionDenied),
    ):
        env.handle.read("src/calc.py")


def test_a_view_reads_files_but_has_no_sql(env: WorkspaceEnvironment) -> None:
    env.handle.write("src/calc.py", "changed\n")
    final, initial = env.evaluator_view(), env.initial_view()
    assert final.read("src/calc.py") == "changed\n"
    assert "a - b" in initial.read("src/calc.py")
    assert initial.files() == final.files()
    with pytest.raises(FileNotFoundError):
        initial.read("nope.py")
    with pytest.raises(TypeError, match="no SQL"):
        final.query("SELECT 1")
    assert "+changed" in final.diff() and initial.diff() == ""


# --- grading and suites ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("src/calc.py", "src/**", True),
        ("src/a/b/c.py", "src/**", True),
        ("src", "src/**", True),
        ("tests/check_calc.py", "src/**", False),
        ("src/a/b.py", "src/*.py", False),
        ("src/b.py", "src/*.py", True),
        ("x/src/b.py", "**/src/*.py", True),
        ("src/b.py", "**/src/*.py", True),
        ("srcx/b.py", "src/**", False),
    ],
)
def test_allowed_path_globs(path: str, pattern: str, expected: bool) -> None:
    assert matches(path, pattern) is expected


@needs_bwrap
def test_solutions_get_their_verdicts() -> None:
    suite = load_suite(MINI)
    oracle = run_solution(suite, "fix-add", "oracle")
    assert oracle.success, oracle.outcome_assertion_results
    tests = oracle.outcome_assertion_results[0]
    assert tests.kind == "tests" and tests.evidence["exit_code"] == 0
    assert "Ran 2 tests" in tests.evidence["stderr"]  # the hidden test ran beside the visible
    deleted = run_solution(suite, "fix-add", "bad_delete_tests")
    verdicts = {r.id: r.passed for r in deleted.outcome_assertion_results}
    assert verdicts == {"hidden-tests": True, "only-src": False}
    hardcoded = run_solution(suite, "fix-add", "bad_hardcode")
    assert {r.id: r.passed for r in hardcoded.outcome_assertion_results} == {
        "hidden-tests": False,
        "only-src": True,
    }


def _suite_copy(tmp_path: Path) -> Path:
    root = tmp_path / "suite"
    shutil.copytree(MINI, root)
    return root


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_an_sql_assertion_on_a_workspace_is_a_load_error(tmp_path: Path) -> None:
    root = _suite_copy(tmp_path)
    _edit(
        root / "tasks" / "fix-add.yaml",
        "  - id: only-src\n",
        "  - id: rows\n    sql: SELECT 1\n    expect_rows: [[1]]\n  - id: only-src\n",
    )
    with pytest.raises(SpecError) as caught:
        load_suite(root)
    assert "outcome_assertions[1]" in str(caught.value) and "sql" in str(caught.value)


def test_hidden_tests_inside_the_fixture_are_refused(tmp_path: Path) -> None:
    root = _suite_copy(tmp_path)
    shutil.copytree(root / "hidden", root / "repo" / "hidden")
    _edit(root / "tasks" / "fix-add.yaml", "path: hidden/fix-add", "path: repo/hidden/fix-add")
    with pytest.raises(SpecError, match="inside the fixture"):
        load_suite(root)
    _edit(root / "tasks" / "fix-add.yaml", "path: repo/hidden/fix-add", "path: ../../etc")
    with pytest.raises(SpecError, match="outside the suite"):
        load_suite(root)


def test_bad_environment_options_name_the_field(tmp_path: Path) -> None:
    root = _suite_copy(tmp_path)
    _edit(root / "suite.yaml", "memory_mb: 1024", "memory_mb: lots")
    with pytest.raises(SpecError) as caught:
        load_suite(root)
    assert "environment_options" in str(caught.value) and "memory_mb" in str(caught.value)


def test_unknown_builtin_tools_are_named(tmp_path: Path) -> None:
    root = _suite_copy(tmp_path)
    _edit(root / "suite.yaml", "builtin:workspace", "builtin:browser")
    with pytest.raises(SpecError, match="no built-in tools 'builtin:browser'"):
        load_suite(root)


def test_hidden_tests_are_part_of_the_grader_revision(tmp_path: Path) -> None:
    root = _suite_copy(tmp_path)
    before = load_suite(root).tasks["fix-add"].grader_revision
    (root / "hidden" / "fix-add" / "check_hidden.py").write_text("# edited\n", encoding="utf-8")
    assert load_suite(root).tasks["fix-add"].grader_revision != before
    assert os.path.exists(root / "hidden")


@pytest.mark.parametrize("name", ["list_files", "read_file", "write_file", "search", "apply_patch"])
def test_the_file_tools_hold_under_any_schema_valid_call(repo: Path, name: str) -> None:
    """Property-based calls (validate's tool_robustness, which workspace suites may turn off
    to save a sandboxed command per call): only ToolErrors, never a crash."""
    assert find_crash(TOOLS[name], lambda: WorkspaceEnvironment(repo, clock=CLOCK)) is None


def test_run_command_refuses_what_it_cannot_run(env: WorkspaceEnvironment) -> None:
    event = _call(env, "run_command", command="echo \0")
    assert event.error_class == "tool_error" and "NUL" in (event.error or "")


@needs_bwrap
def test_code_that_hangs_fails_the_tests_at_their_time_limit(tmp_path: Path) -> None:
    root = _suite_copy(tmp_path)
    _edit(root / "tasks" / "fix-add.yaml", "timeout_s: 30", "timeout_s: 1")
    suite = load_suite(root)
    hang = Step(call="write_file", args={"path": "src/calc.py", "content": HANG})
    run = run_solution(suite, "fix-add", [hang, Step(finish="Fixed.")])
    assert run.valid and run.terminal_reason == "agent_failure/incorrect_state"
    tests = run.outcome_assertion_results[0]
    assert tests.error is None and tests.evidence["timed_out"] is True


HANG = "def add(a, b):\n    while True:\n        pass\n"


@needs_bwrap
def test_a_failing_run_regresses_into_a_new_workspace_suite(tmp_path: Path) -> None:
    suite = load_suite(MINI)
    run = run_solution(suite, "fix-add", "bad_hardcode")
    task_file = regress(run, suite, into=tmp_path / "regressions")
    copy = load_suite(tmp_path / "regressions")  # fixture folder and hidden tests came along
    assert copy.config.tools == "builtin:workspace" and copy.config.fixtures == "."
    assert (tmp_path / "regressions" / "hidden" / "fix-add" / "check_hidden.py").is_file()
    observed = copy.solutions[task_file.stem]["bad_observed"]
    assert (
        fails_as_declared(
            copy.tasks[task_file.stem],
            run_solution(copy, task_file.stem, observed),
            observed.fails_by or "outcome",
        )
        is None
    )
