"""Bad input, twenty-second round: every command under a ``KeyboardInterrupt``.

A fuzzing pass over every ``groundstate`` command (malformed task, suite and system files at
every field, options out of range, ids empty or unprintable, stores damaged, foreign, newer,
locked) found each refused with one ``error:`` line and exit 2, but for one class: a
``KeyboardInterrupt`` left through click as "Aborted!" with exit 1. Exit 1 means "a task is
not valid" to ``validate``, "the suite differs from its lock" to ``lock --check`` and "records
are altered" to ``verify``: a script read the user's Ctrl-C as a verdict. And a tools, checks
or agent module that raised ``KeyboardInterrupt`` as it was imported (no Ctrl-C pressed) did
the same, naming no file, where any other exception it raises is refused naming the file and
its line.

Now the user's Ctrl-C exits 130 with a line saying so (as ``run`` did already), and a module
raising it itself is refused as any broken module is (exit 2, the file and line named).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli_workspace import (
    COMMAND_SECONDS,
    STORE,
    SYSTEM,
    TASK,
    assert_refused,
    digest,
    groundstate,
)


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def _batches(root: Path) -> str:
    listed = groundstate("batches", "--json", "--store", STORE, cwd=root)
    assert listed.code == 0, listed.text
    return listed.out


# --- a module that raises KeyboardInterrupt as it is imported: a broken module -------------

RAISES = "\nraise KeyboardInterrupt\n"

MODULES = {
    "tools.py": "retail/tools.py",
    "checks.py": "retail/checks.py",
    "the agent's module": "agents/retail_agents.py",
}
COMMANDS = {
    "check": ["check", "retail", "--system", SYSTEM],
    "validate": ["validate", "retail", "--store", STORE],
    "run": ["run", "retail", "--system", SYSTEM, "--task", TASK, "--store", STORE],
    "lock": ["lock", "retail"],
}
READS = {  # which commands import which module
    "tools.py": ("check", "validate", "run"),
    "checks.py": ("check", "validate", "run", "lock"),
    "the agent's module": ("check", "run"),
}


@pytest.mark.parametrize("module", list(MODULES))
def test_a_module_raising_keyboard_interrupt_at_import_is_refused_naming_it(
    copy: Path, module: str
) -> None:
    """It was click's "Aborted!" with exit 1 (``validate``'s "a task is not valid")."""
    path = MODULES[module]
    _append(copy / path, RAISES)
    before, batches = digest(copy / STORE), _batches(copy)
    for command in READS[module]:
        outcome = groundstate(*COMMANDS[command], cwd=copy)
        assert outcome.code == 2, (command, outcome.text)
        assert "Aborted!" not in outcome.text and "Traceback" not in outcome.text, outcome.text
        assert path in outcome.text and "importing failed: KeyboardInterrupt" in outcome.text, (
            command,
            outcome.text,
        )
        if command != "check":  # check lists problems as lines of their own
            assert_refused(outcome, path, "KeyboardInterrupt")
        if (module, command) == ("the agent's module", "run"):  # the system is built after
            assert _batches(copy) == batches  # the tasks are validated (and cached)
        else:
            assert digest(copy / STORE) == before, command


def test_an_import_failure_with_an_empty_message_says_no_dangling_colon(copy: Path) -> None:
    """``importing failed: KeyboardInterrupt: `` ended in a colon and nothing."""
    _append(copy / "retail" / "checks.py", "\nraise ValueError()\n")
    outcome = groundstate("lock", "retail", cwd=copy)
    assert_refused(outcome, "retail/checks.py", "importing failed: ValueError")
    assert not outcome.err.rstrip().endswith(":"), outcome.err


def test_a_module_raising_another_exception_is_refused_as_before(copy: Path) -> None:
    """Control: any other exception at import was refused so already."""
    _append(copy / "retail" / "tools.py", "\nraise RuntimeError('broken tools')\n")
    outcome = groundstate(*COMMANDS["validate"], cwd=copy)
    assert_refused(outcome, "retail/tools.py", "RuntimeError: broken tools")
    assert outcome.code == 2


# --- the user's Ctrl-C: exit 130, said so, under every command -----------------------------

BLOCKS = """
import pathlib, time
pathlib.Path({marker!r}).write_text("importing")
time.sleep(600)
"""


def _interrupted(root: Path, args: list[str], module: str) -> subprocess.CompletedProcess[str]:
    """``groundstate ARGS`` sent SIGINT (a Ctrl-C) while it imports *module*, which blocks."""
    marker = root / "importing.txt"
    _append(root / module, BLOCKS.format(marker=str(marker)))
    process = subprocess.Popen(
        [sys.executable, "-m", "groundstate", *args],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
    )
    try:
        deadline = time.monotonic() + COMMAND_SECONDS
        while not marker.exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the module was never imported"
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=COMMAND_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return subprocess.CompletedProcess(args, process.returncode, out, err)


CTRL_C = {
    "validate": (["validate", "retail", "--store", STORE], "retail/checks.py"),
    "lock --check": (["lock", "retail", "--check"], "retail/checks.py"),
    "check": (["check", "retail", "--system", SYSTEM], "agents/retail_agents.py"),
}


@pytest.mark.parametrize("command", list(CTRL_C))
def test_a_ctrl_c_exits_130_and_says_so_never_a_verdict_s_exit_1(copy: Path, command: str) -> None:
    """It exited 1 with "Aborted!": ``validate``'s and ``lock --check``'s failed verdict."""
    args, module = CTRL_C[command]
    if command == "lock --check":
        assert groundstate("lock", "retail", cwd=copy).code == 0
    before = digest(copy / STORE)
    done = _interrupted(copy, args, module)
    assert done.returncode == 130, (done.stdout, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    assert "error: interrupted (Ctrl-C)" in done.stderr, done.stderr
    assert digest(copy / STORE) == before


def test_a_ctrl_c_during_run_while_a_module_is_imported_exits_130(copy: Path) -> None:
    """``run``'s own handler raises its ``Interrupted`` where the main thread is: inside the
    import of a suite's module it was taken for the module's failure (``importing failed:
    Interrupted``) and the command did not end. Now it is ``run``'s interruption."""
    done = _interrupted(copy, COMMANDS["run"], "retail/checks.py")
    assert done.returncode == 130, (done.stdout, done.stderr)
    assert "interrupted by SIGINT before the batch started" in done.stderr, done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_the_library_without_the_command_takes_a_keyboard_interrupt_for_a_ctrl_c(
    tmp_path: Path,
) -> None:
    """Control: a library caller's process sets no watch; a ``KeyboardInterrupt`` at import
    is left to propagate as Python's own would (it may be the caller's Ctrl-C)."""
    from groundstate.tools import load_module

    module = tmp_path / "raises.py"
    module.write_text(RAISES)
    with pytest.raises(KeyboardInterrupt):
        load_module(module, "raises")


# --- a KeyboardInterrupt out of a command, by where it came from ---------------------------


def _raises_keyboard_interrupt(*_: object, **__: object) -> None:
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    ("watched", "seen", "code", "said"),
    [
        (True, True, 130, "error: interrupted (Ctrl-C)"),
        (True, False, 70, "raised KeyboardInterrupt with no Ctrl-C pressed"),
        (False, False, 130, "error: interrupted (Ctrl-C)"),  # nobody watched: taken for one
    ],
    ids=["a Ctrl-C", "raised by code", "unwatched"],
)
def test_a_keyboard_interrupt_out_of_a_command_exits_by_its_origin(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, watched: bool, seen: bool, code: int, said: str
) -> None:
    """It was "Aborted!" with exit 1 whatever its origin."""
    from click.testing import CliRunner

    import groundstate.spec.system
    from groundstate import interrupts
    from groundstate.cli import main

    monkeypatch.setitem(interrupts._ctrl_c, "watched", watched)
    monkeypatch.setitem(interrupts._ctrl_c, "seen", seen)
    monkeypatch.setattr(groundstate.spec.system, "load_system", _raises_keyboard_interrupt)
    result = CliRunner().invoke(main, ["system", "hash", str(tmp_path / "s.yaml")])
    assert result.exit_code == code, result.output
    assert said in result.output and "Aborted!" not in result.output, result.output


# --- an integer a record carries to other tools: within what JSON holds exactly ------------


HUGE = "9" * 400

BEYOND_JSON = {
    "task_revision": (f"retail/tasks/{TASK}.yaml", "task_revision: 1", f"task_revision: {HUGE}"),
    "budgets.max_tokens": (
        SYSTEM,
        "name: retail-careful",
        f"name: x\nbudgets: {{max_tokens: {HUGE}}}",
    ),
}


@pytest.mark.parametrize("field", list(BEYOND_JSON))
def test_an_integer_past_2_53_is_refused_where_import_results_refuses_it(
    copy: Path, field: str
) -> None:
    """A task revision of 400 digits was run and stored; ``export`` wrote it and
    ``import-results`` refused the file it wrote (revisions are within 2^53 there)."""
    path, old, new = BEYOND_JSON[field]
    text = (copy / path).read_text()
    assert old in text
    (copy / path).write_text(text.replace(old, new, 1))
    before = digest(copy / STORE)
    outcome = groundstate(*COMMANDS["run"], cwd=copy)
    assert_refused(outcome, path, field)
    assert outcome.code == 2
    assert digest(copy / STORE) == before


def test_a_revision_of_2_53_is_still_a_revision(copy: Path) -> None:
    """Control: the bound itself is allowed."""
    path = copy / "retail" / "tasks" / f"{TASK}.yaml"
    path.write_text(path.read_text().replace("task_revision: 1", f"task_revision: {2**53}", 1))
    outcome = groundstate("check", "retail", "--system", SYSTEM, cwd=copy)
    assert outcome.code == 0, outcome.text
