"""Bad input, thirty-sixth round: user code that ends or breaks the command where no batch
watches it, and a store path that loops.

- A suite's ``checks.py`` (or a system's agent module) calling ``os._exit(0)`` as it is
  imported ended ``check``, ``validate``, ``lock`` and ``run`` with exit 0 and nothing printed:
  ``validate``'s "every task is valid". Only a batch's attempts were watched.
- A system's agent factory that raises, built by ``run``'s preflight, printed a traceback
  (``check`` said it in a line); one that calls ``sys.exit(3)`` ended ``check`` and ``run``
  with 3 and nothing printed.
- A store path that is a loop of symbolic links: reading commands said "nothing has been run
  here yet", writing ones SQLite's "unable to open database file".
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli_workspace import (
    SYSTEM,
    TASK,
    assert_refused,
    digest,
    groundstate,
)

ENDED_BY_USER_CODE = 70


COMMANDS = {
    "check": ["check", "retail", "--system", SYSTEM],
    "validate": ["validate", "retail", "--store", "s.db"],
    "lock": ["lock", "retail"],
    "run": ["run", "retail", "--system", SYSTEM, "--store", "s.db", "--task", TASK],
}


def _agent(root: Path, code: str) -> None:
    """The system's entry made ``agents/bad.py:make``, a file holding *code*."""
    (root / "agents" / "bad.py").write_text(code)
    system = root / SYSTEM
    text = system.read_text()
    assert "../agents/retail_agents.py:careful" in text
    system.write_text(text.replace("../agents/retail_agents.py:careful", "../agents/bad.py:make"))


# --- os._exit(0) from user code outside a batch -------------------------------------------


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_check_file_ending_the_process_with_0_at_import_is_no_success(
    copy: Path, command: str
) -> None:
    """Fails on the old code: exit 0, nothing on stderr."""
    checks = copy / "retail" / "checks.py"
    checks.write_text(checks.read_text() + "\nimport os\nos._exit(0)\n")
    store = digest(copy / "s.db")
    outcome = groundstate(*COMMANDS[command], cwd=copy)
    assert outcome.code == ENDED_BY_USER_CODE, outcome.text
    assert "called os._exit(0)" in outcome.err and "Traceback" not in outcome.text
    assert digest(copy / "s.db") == store


def test_an_agent_module_ending_the_process_with_0_in_check_is_no_success(copy: Path) -> None:
    """Fails on the old code: ``check`` exited 0 (what the module printed, then nothing)."""
    # ``make`` is defined: an entry naming nothing is refused unread (fiftieth round)
    _agent(copy, "import os\nprint('hello')\nos._exit(0)\n\n\ndef make(**params):\n    pass\n")
    outcome = groundstate(*COMMANDS["check"], cwd=copy)
    assert outcome.code == ENDED_BY_USER_CODE, outcome.text
    assert "called os._exit(0)" in outcome.err


def test_an_agent_ending_the_process_in_a_batch_is_still_said_as_the_agent_s(copy: Path) -> None:
    """The control: a batch's own watch names the agent, as round 21 made it."""
    _agent(copy, "import os\ndef make(**kw):\n    os._exit(0)\n")
    outcome = groundstate(*COMMANDS["run"], cwd=copy)
    assert outcome.code == ENDED_BY_USER_CODE, outcome.text
    assert "the agent called os._exit(0)" in outcome.err


def test_a_status_that_says_failure_is_kept(copy: Path) -> None:
    """The control: ``os._exit(4)`` ends the command with 4, as before."""
    checks = copy / "retail" / "checks.py"
    checks.write_text(checks.read_text() + "\nimport os\nos._exit(4)\n")
    assert groundstate(*COMMANDS["validate"], cwd=copy).code == 4


def test_a_sound_command_still_exits_0(copy: Path) -> None:
    """The control: the harness's own exit goes through unchanged."""
    outcome = groundstate(*COMMANDS["check"], cwd=copy)
    assert outcome.code == 0, outcome.text
    assert "os._exit" not in outcome.text


# --- an agent factory that raises, outside an attempt ------------------------------------

FACTORIES = {
    "raises": ("def make(**kw):\n    raise ValueError('needs a GPU')\n", "ValueError: needs a GPU"),
    "exits": ("import sys\n\n\ndef make(**kw):\n    sys.exit(3)\n", "SystemExit: 3"),
    "exits quietly": ("import sys\n\n\ndef make(**kw):\n    sys.exit()\n", "SystemExit"),
}


@pytest.mark.parametrize("factory", list(FACTORIES))
@pytest.mark.parametrize("command", ["check", "run"])
def test_an_agent_factory_that_raises_is_refused_naming_the_system_and_the_line(
    copy: Path, factory: str, command: str
) -> None:
    """Fails on the old code: ``run`` printed a traceback; ``sys.exit(3)`` ended both with 3
    and nothing said."""
    code, said = FACTORIES[factory]
    _agent(copy, code)
    store = digest(copy / "s.db")
    outcome = groundstate(*COMMANDS[command], cwd=copy)
    line = len(code.splitlines())
    names = (SYSTEM, "harness.orchestration_loop", said, f"line {line} of bad.py")
    if command == "check":  # check lists problems as lines of their own
        assert outcome.code == 2 and "Traceback" not in outcome.text, outcome.text
        assert all(name in outcome.text for name in names), outcome.text
        assert digest(copy / "s.db") == store
    else:
        assert_refused(outcome, *names)


def test_a_factory_that_builds_is_still_built(copy: Path) -> None:
    """The control: a factory returning an agent with ``run`` passes ``check``."""
    _agent(
        copy,
        "class A:\n    async def run(self, session):\n        return 'ok'\n\n\n"
        "def make(**kw):\n    return A()\n",
    )
    outcome = groundstate(*COMMANDS["check"], cwd=copy)
    assert outcome.code == 0, outcome.text


# --- a store path that is a loop of links ------------------------------------------------

STORE_COMMANDS = {
    "report": ["report"],
    "batches": ["batches"],
    "import-results": ["import-results", "results.jsonl", "--name", "y"],
    "run": ["run", "retail", "--system", SYSTEM, "--task", TASK],
}


@pytest.mark.parametrize("command", list(STORE_COMMANDS))
def test_a_store_that_is_a_loop_of_links_is_said_so(copy: Path, command: str) -> None:
    """Fails on the old code: "nothing has been run here yet" / "unable to open database
    file"."""
    os.symlink("loop-b.db", copy / "loop-a.db")
    os.symlink("loop-a.db", copy / "loop-b.db")
    outcome = groundstate(*STORE_COMMANDS[command], "--store", "loop-a.db", cwd=copy)
    assert_refused(outcome, "loop-a.db", "loop of symbolic links")
    assert os.path.islink(copy / "loop-a.db") and os.path.islink(copy / "loop-b.db")


def test_a_missing_store_is_still_nothing_run_yet(copy: Path) -> None:
    """The control: no file at all is no loop."""
    outcome = groundstate("report", "--store", "none.db", cwd=copy)
    assert_refused(outcome, "none.db", "nothing has been run here yet")
