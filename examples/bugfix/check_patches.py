"""Prove the bugfix example's patches: every oracle and alternative fixes its task, every
known-bad patch fails, and fails for the reason TASKS.md gives.

For each task (a folder under ``patches/``) the library in ``repo/`` is copied to a
temporary folder and made into a git repository. The hidden tests must fail there and the
visible tests pass. Then each patch is applied with ``git apply`` and three checks run:

* ``visible``: ``python -m unittest discover -s tests -t .`` in the patched checkout;
* ``hidden``: the task's file in ``hidden/<task_id>/``, discovered from that folder (never
  copied into the checkout) with the checkout as the working directory;
* ``paths``: every changed, added or deleted path matches one of the task's allowed paths
  (``folder/**`` for anything under a folder, or an exact path).

A patch passes when it applies and all three checks pass. A test run passes only when it
ran at least one test (unittest reports "OK" for a folder it could not import anything
from), skipped none, and reported through a pipe (the patched code may end the process with
status 0 before any test fails).
TASKS.md is the source of the allowed paths and of the checks each bad patch is expected to
fail (its "caught by" column); a disagreement is reported as a problem.

Usage: ``python examples/bugfix/check_patches.py [--task TASK_ID]``; exit status 1 when
there is a problem, 2 when git is missing or TASKS.md cannot be read. POSIX only (the
two suites of a checkout run in forked processes).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKS = ("visible", "hidden", "paths")
TEST_TIMEOUT_S = 60.0
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "check",
    "GIT_AUTHOR_EMAIL": "check@example.invalid",
    "GIT_COMMITTER_NAME": "check",
    "GIT_COMMITTER_EMAIL": "check@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}
_HEADING = re.compile(r"^## `([a-z0-9-]+)`")
_ALLOWED = re.compile(r"^- \*\*Allowed paths:\*\* (.+)$")
_ROW = re.compile(r"^\| `([\w.-]+\.diff)` \|.*\| ([a-z, —-]+) \|$")


class SuiteError(Exception):
    """TASKS.md or the folder layout is not what this checker needs."""


@dataclass
class TaskDoc:
    """What TASKS.md declares for one task."""

    allowed: list[str]
    caught_by: dict[str, frozenset[str]] = field(default_factory=dict)
    """Patch file name -> the checks it must fail (empty for an oracle or alternative)."""
    issue: str = ""
    """The issue text the agent gets (the ``>`` quoted block, unquoted)."""


@dataclass
class PatchResult:
    task_id: str
    patch: str
    applied: bool
    failed: frozenset[str]
    """The checks this patch fails (``apply`` when ``git apply`` refused it)."""
    outside: list[str]
    """Changed paths outside the task's allowed paths."""

    @property
    def good(self) -> bool:
        return self.patch in ("oracle.diff", "alt.diff") or self.patch.startswith("alt_")


def read_tasks_md(path: Path) -> dict[str, TaskDoc]:
    """Allowed paths, expected catches and issue text per task, from TASKS.md's layout."""
    docs: dict[str, TaskDoc] = {}
    current: TaskDoc | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if heading := _HEADING.match(line):
            current = docs[heading.group(1)] = TaskDoc(allowed=[])
        elif current is not None and (allowed := _ALLOWED.match(line)):
            current.allowed = re.findall(r"`([^`]+)`", allowed.group(1))
        elif current is not None and line.startswith(">"):
            current.issue += line[2:] + "\n" if line.startswith("> ") else "\n"
        elif current is not None and (row := _ROW.match(line)):
            words = {w.strip() for w in row.group(2).split(",")} - {"—", "-", "none", ""}
            unknown = words - set(CHECKS)
            if unknown:
                raise SuiteError(f"{path}: {row.group(1)}: unknown check(s) {sorted(unknown)}")
            current.caught_by[row.group(1)] = frozenset(words)
    for task_id, doc in docs.items():
        if not doc.allowed:
            raise SuiteError(f"{path}: task {task_id} has no '- **Allowed paths:**' line")
    return docs


def _env() -> dict[str, str]:
    env = {**os.environ, **_GIT_ENV, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)  # the checkout's own src/ must be what the tests import
    return env


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=TEST_TIMEOUT_S
    )


# Runs the visible and the hidden tests of one checkout, each in its own forked process
# (isolated, but the interpreter starts only once: this check runs in the test suite).
# Prints one code per suite: 0 when it ran at least one test and all passed, none skipped.
# A suite's verdict comes through a pipe written after its last test, never from its exit
# status: the patched code runs in that process and can end it with any status it likes
# (bad_exit_zero.diff), so a process that ends without writing has failed.
_RUNNER = """
import os, sys, unittest
children = []
for start, top in ((sys.argv[1], sys.argv[2]), (sys.argv[3], sys.argv[4])):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            with open(os.devnull, "w") as sink:
                suite = unittest.TestLoader().discover(start, top_level_dir=top)
                result = unittest.TextTestRunner(stream=sink).run(suite)
            ok = result.wasSuccessful() and result.testsRun > 0 and not result.skipped
            os.write(write, b"pass" if ok else b"fail")
        finally:
            os._exit(0)
    os.close(write)
    children.append((pid, read))
codes = []
for pid, read in children:
    codes.append(0 if os.read(read, 16) == b"pass" else 1)
    os.waitpid(pid, 0)
print(*codes)
"""


def run_tests(checkout: Path, hidden_dir: Path) -> dict[str, bool]:
    """Run the visible and the hidden tests in a checkout; which of them passed.

    The hidden tests run from their own folder with the checkout as the working directory.
    ``-I -S`` keep the interpreter from seeing anything but the standard library and the
    checkout. A suite that runs no test fails (unittest says OK when it imports nothing), and
    so does one that skips a test or whose process ends before reporting.
    """
    hidden = str(hidden_dir)
    args = [sys.executable, "-I", "-S", "-B", "-c", _RUNNER, "tests", ".", hidden, hidden]
    with subprocess.Popen(
        args,
        cwd=checkout,
        env=_env(),
        text=True,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as process:
        try:
            stdout, _ = process.communicate(timeout=TEST_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # the forked suites too
            process.communicate()
            return {"visible": False, "hidden": False}
    codes = stdout.split()
    if process.returncode != 0 or len(codes) != 2:
        return {"visible": False, "hidden": False}
    return {"visible": codes[0] == "0", "hidden": codes[1] == "0"}


def changed_paths(checkout: Path) -> list[str]:
    """Paths added, changed or deleted since the base commit (untracked files included)."""
    _run(["git", "add", "-A"], checkout)
    done = _run(["git", "diff", "--cached", "--name-only", "--no-renames", "HEAD"], checkout)
    return done.stdout.split()


def outside_allowed(paths: list[str], allowed: list[str]) -> list[str]:
    """Paths matching none of the allowed patterns: ``folder/**`` (anything under it) or
    an exact path. Other glob forms are refused, so that every glob dialect agrees."""
    for pattern in allowed:
        if any(c in pattern.removesuffix("/**") for c in "*?[]"):
            raise SuiteError(f"allowed path {pattern!r}: only 'folder/**' or exact paths")

    def allows(pattern: str, path: str) -> bool:
        folder = pattern.removesuffix("/**")
        return path.startswith(folder + "/") if folder != pattern else path == pattern

    return [p for p in paths if not any(allows(pattern, p) for pattern in allowed)]


@contextmanager
def base_checkout(repo: Path) -> Iterator[Path]:
    """A temporary git repository holding a copy of ``repo`` as its one commit."""
    with tempfile.TemporaryDirectory(prefix="bugfix-check-") as tmp:
        checkout = Path(tmp) / "repo"
        shutil.copytree(repo, checkout, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
            if _run(["git", *args], checkout).returncode != 0:
                raise SuiteError(f"git {args[0]} failed in a copy of {repo}")
        yield checkout


def _reset(checkout: Path) -> None:
    _run(["git", "reset", "-q", "--hard", "HEAD"], checkout)
    _run(["git", "clean", "-q", "-fdx"], checkout)


def check_patch(checkout: Path, hidden_dir: Path, patch: Path, doc: TaskDoc) -> PatchResult:
    """Apply one patch to the (clean) checkout, run the checks, and clean up again."""
    task_id = patch.parent.name
    try:
        if _run(["git", "apply", str(patch)], checkout).returncode != 0:
            return PatchResult(task_id, patch.name, False, frozenset({"apply"}), [])
        outside = outside_allowed(changed_paths(checkout), doc.allowed)
        passed = {**run_tests(checkout, hidden_dir), "paths": not outside}
        failed = frozenset(name for name, ok in passed.items() if not ok)
        return PatchResult(task_id, patch.name, True, failed, outside)
    finally:
        _reset(checkout)


def check_task(root: Path, task_id: str, doc: TaskDoc) -> tuple[list[str], list[PatchResult]]:
    """Problems with the base, and one result per patch, for one task."""
    problems: list[str] = []
    hidden_dir = root / "hidden" / task_id
    if not any(hidden_dir.glob("test_*.py")):
        return [f"{task_id}: no hidden/{task_id}/test_*.py"], []
    patches = sorted((root / "patches" / task_id).glob("*.diff"))
    results = []
    with base_checkout(root / "repo") as checkout:
        base = run_tests(checkout, hidden_dir)
        if not base["visible"]:
            problems.append(f"{task_id}: the visible tests fail on the base")
        if base["hidden"]:
            problems.append(f"{task_id}: the hidden tests pass on the base")
        _reset(checkout)
        for patch in patches:
            results.append(check_patch(checkout, hidden_dir, patch, doc))
    return problems, results


def judge(result: PatchResult, doc: TaskDoc) -> str | None:
    """What is wrong with a patch's outcome, or None."""
    name = f"{result.task_id}/{result.patch}"
    if result.patch not in doc.caught_by:
        return f"{name}: not listed in TASKS.md"
    if result.good:
        return f"{name}: a correct patch fails {sorted(result.failed)}" if result.failed else None
    expected = doc.caught_by[result.patch]
    if not result.failed:
        return f"{name}: a known-bad patch passes every check"
    if result.failed != expected:
        return f"{name}: fails {sorted(result.failed)}, TASKS.md says {sorted(expected)}"
    return None


def check_suite(root: Path = HERE, only: str | None = None) -> tuple[list[str], list[PatchResult]]:
    """Check every task (or one); returns the problems found and all patch results."""
    if shutil.which("git") is None:
        raise SuiteError("git is not on PATH")
    docs = read_tasks_md(root / "TASKS.md")
    task_ids = sorted(p.name for p in (root / "patches").iterdir() if p.is_dir())
    problems = [f"{t}: has patches but no section in TASKS.md" for t in task_ids if t not in docs]
    problems += [f"{t}: in TASKS.md but has no patches" for t in docs if t not in task_ids]
    chosen = [t for t in task_ids if t in docs and only in (None, t)]
    # Tasks are independent (each has its own temporary checkout): check a few at once.
    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        outcomes = list(pool.map(lambda t: check_task(root, t, docs[t]), chosen))
    results: list[PatchResult] = []
    for task_id, (task_problems, task_results) in zip(chosen, outcomes, strict=True):
        doc = docs[task_id]
        problems += task_problems + [problem for r in task_results if (problem := judge(r, doc))]
        missing = sorted(set(doc.caught_by) - {r.patch for r in task_results})
        problems += [f"{task_id}/{name}: listed in TASKS.md but missing" for name in missing]
        results += task_results
    return problems, results


def table(results: list[PatchResult]) -> str:
    """One line per patch: which checks it passes, and the verdict."""
    lines = [f"{'task':<22} {'patch':<24} {'visible':<8} {'hidden':<8} {'paths':<6} verdict"]
    for r in results:
        marks = ["-" if not r.applied else "FAIL" if c in r.failed else "ok" for c in CHECKS]
        verdict = "pass" if not r.failed else "no apply" if not r.applied else "fail"
        lines.append(
            f"{r.task_id:<22} {r.patch:<24} {marks[0]:<8} {marks[1]:<8} {marks[2]:<6} {verdict}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--task", help="check only this task id")
    args = parser.parse_args(argv)
    try:
        problems, results = check_suite(HERE, args.task)
    except (SuiteError, OSError) as error:
        print(f"check_patches: {error}", file=sys.stderr)
        return 2
    print(table(results))
    good = sum(r.good for r in results)
    print(f"\n{len(results)} patches: {good} correct, {len(results) - good} known-bad")
    for problem in problems:
        print(f"PROBLEM: {problem}")
    print("all patches behave as documented" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
