"""The ``tests`` assertion's ``runner: unittest`` mode: the grader's side of
:mod:`groundstate.grading.unittest_runner`.

An exit code is no verdict when the process that sets it runs the agent's code: ``os._exit(0)``
at import, a skip raised from a library function, a planted ``load_tests`` that returns
nothing, or a ``unittest.py`` shadowing the standard library all end in exit 0. Here the hidden
tests stay in a grader folder beside the checkout (never in it), groundstate's runner counts
every outcome itself and writes them to a results file in a folder of their own, and the
verdict is read from that file: no file (the process died or was cut short) is a failure.
"""

from __future__ import annotations

import json
import shutil
import stat
import sys
from pathlib import Path
from typing import Any

from groundstate.environments.workspace_tools import command_environment
from groundstate.grading import unittest_runner
from groundstate.rounding import counted
from groundstate.sandbox import CommandResult, SandboxPolicy, run_sandboxed
from groundstate.spec.task import HiddenTests

RUNNER = Path(unittest_runner.__file__).resolve()
"""Run by path, with ``python -I``: the sandbox's Python need not have groundstate installed,
and nothing of the checkout is on ``sys.path`` when the runner starts."""
MAX_RESULTS_BYTES = 4_000_000
"""A results file larger than this is not read (the runner's own are far smaller)."""


def run_unittest(
    spec: HiddenTests, suite_root: Path, checkout: Path, folder: Path, policy: SandboxPolicy
) -> tuple[bool, dict[str, Any]]:
    """Run *spec*'s test files on *checkout* (a clean checkout with the agent's change, in the
    grader's work *folder*); the verdict and its evidence."""
    base = checkout
    if spec.path is not None:
        base = folder / "hidden"
        shutil.copytree((suite_root / spec.path).resolve(), base)
    files = find_test_files(base, spec.files)
    outbox = folder / "results"
    outbox.mkdir()
    results_file = outbox / "results.json"
    command = [sys.executable, "-I", "-B", str(RUNNER), "--results", str(results_file)]
    for entry in spec.pythonpath:
        command += ["--path", str(checkout / entry)]
    command += [str(f) for f in files]
    outcome = run_sandboxed(
        command,
        policy,
        cwd=checkout,
        timeout_s=spec.timeout_s,
        writable=[checkout, outbox],
        visible=[base, RUNNER.parent],
        hidden=[suite_root.resolve()],
        env=command_environment(),
    )
    results, problems = read_results(results_file)
    if results is not None:
        problems += judge(results, spec.expect_tests)
    problems = _process_problems(outcome) + problems
    if not files:
        problems.insert(0, f"no file matches {spec.files}")
    evidence = {
        "runner": spec.runner,
        "files": [f.relative_to(base).as_posix() for f in files],
        "problems": problems,
        "results": results,
        **outcome.to_json(),
    }
    return not problems, evidence


def find_test_files(base: Path, patterns: list[str]) -> list[Path]:
    """The regular files under *base* matching any of the glob *patterns*, sorted."""
    found = {p for pattern in patterns for p in base.glob(pattern) if p.is_file()}
    return sorted(p for p in found if p.resolve().is_relative_to(base.resolve()))


def runner_files_problem(suite_root: Path, spec: HiddenTests) -> str | None:
    """Why a runner's hidden ``files`` are unusable (they match no file of ``path``), or None.
    Checked when the suite loads; files of the checkout can only be checked at grading."""
    if spec.runner is None or spec.path is None:
        return None
    if not find_test_files((suite_root / spec.path).resolve(), spec.files):
        return f"files: {spec.files} match no file in {spec.path!r}"
    return None


def read_results(path: Path) -> tuple[dict[str, Any] | None, list[str]]:
    """The runner's results, or None and why there are none."""
    try:
        info = path.lstat()  # the code under test may have put a link or a FIFO there
        if not stat.S_ISREG(info.st_mode):
            return None, ["unreadable results: the results file is not a regular file"]
        if info.st_size > MAX_RESULTS_BYTES:
            return None, [f"the results file is over {MAX_RESULTS_BYTES} bytes"]
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, ["no results: the test process ended before the runner wrote them"]
    except (OSError, ValueError) as exc:
        return None, [f"unreadable results: {exc}"]
    if not isinstance(data, dict) or data.get("version") != unittest_runner.RESULTS_VERSION:
        return None, ["unreadable results: not the runner's format"]
    return data, []


COUNTED = ("failures", "errors", "skipped", "unexpected_successes")
"""Outcomes any one of which fails the tests (an expected failure does not)."""


def judge(results: dict[str, Any], expect_tests: int | None) -> list[str]:
    """Why the runner's *results* are not a pass (empty when they are)."""
    problems = []
    collected, ran = results.get("collected"), results.get("run")
    if not isinstance(collected, int) or not isinstance(ran, int):
        return ["unreadable results: no test counts"]
    if ran == 0:
        problems.append("no test ran")
    if ran != collected:
        problems.append(f"{counted(ran, 'test')} ran of {collected} collected")
    if expect_tests is not None and collected != expect_tests:
        problems.append(f"{counted(collected, 'test')} collected, the task expects {expect_tests}")
    for name in COUNTED:
        count = results.get(name)
        if count != 0:
            problems.append(f"{name.replace('_', ' ')}: {count}")
    if results.get("load_errors"):
        problems.append(f"test files that did not load: {sorted(results['load_errors'])}")
    if results.get("tampered"):
        problems.append(f"the code under test replaced parts of unittest: {results['tampered']}")
    return problems


def _process_problems(outcome: CommandResult) -> list[str]:
    if outcome.timed_out:
        return ["the tests did not finish in time"]
    if outcome.exit_code != 0:
        return [f"the test process exited with {outcome.exit_code}"]
    return []
