"""In-process and external agents, sixteenth round: what the harness computes with, exit
handlers, an agent's ``None``."""

from __future__ import annotations

import importlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import groundstate.stats  # noqa: F401  (``run`` has imported the statistics before any agent)
from groundstate.agents.base import Session
from groundstate.agents.python import load_agent
from groundstate.spec.suite import Suite
from groundstate.spec.system import load_system
from groundstate.testing import FunctionAgent, attempt

from .conftest import BANK, EditTask
from .test_inprocess_adversarial import _do_the_task
from .test_lifecycle_round13 import _source_path
from .test_mcp_agents import system_file

# --- modules the harness computes with --------------------------------------------------------


def _sql_only(task: dict[str, Any]) -> None:
    """The task graded by its SQL and Python checks alone (no state diff)."""
    task["outcome_assertions"] = [a for a in task["outcome_assertions"] if "state_diff" not in a]


def test_an_agent_cannot_blind_the_write_probe_by_rebinding_os(edited_bank: EditTask) -> None:
    """The agent did the transfer with a connection of its own, skipping the PIN check, and
    set ``os.pread`` to give the database header as it was: the probe that reads the change
    counter saw nothing, and the attempt passed (``success``). ``os`` was not watched: only
    groundstate, ``json``, ``hashlib``, ``pickle``, ``copyreg``, ``sqlite3`` and the
    statistics' modules were. Every module the harness names is now."""
    suite = edited_bank(_sql_only)
    real = os.pread

    async def blinds_the_probe(session: Session) -> Any:
        env = session._session._gateway._env  # type: ignore[attr-defined]
        fd = env._file._fd
        header = real(fd, 100, 0)
        with sqlite3.connect(env._live) as db:
            db.execute("UPDATE accounts SET balance = balance - 30 WHERE id = 'A'")
            db.execute("UPDATE accounts SET balance = balance + 30 WHERE id = 'B'")
        db.close()

        def as_before(f: int, n: int, offset: int) -> bytes:
            if f == fd and offset == 0 and n <= len(header):
                return header[:n]
            return real(f, n, offset)

        os.pread = as_before
        return "Moved 30 from A to B."

    try:
        run = attempt(suite, "transfer", FunctionAgent(blinds_the_probe)).run
    finally:
        rebound, os.pread = os.pread, real
    assert rebound is real, "the harness put os.pread back"
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert "os.pread" in run.infrastructure_status["stop"]["message"]


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("uuid", "uuid4"),  # the run ids of the attempts after it
        ("unicodedata", "normalize"),  # the text a message constraint looks for
        ("scipy.special", "stdtrit"),  # the statistics' intervals
        ("pathlib", "Path.read_bytes"),  # a workspace's files read for its final state
    ],
)
def test_what_the_harness_computes_with_is_put_back_and_stops_the_agent(
    bank: Suite, module: str, name: str
) -> None:
    owner: Any = importlib.import_module(module)
    *path, attribute = name.split(".")
    for part in path:
        owner = getattr(owner, part)
    real = owner.__dict__[attribute] if isinstance(owner, type) else getattr(owner, attribute)

    async def rebinds(session: Session) -> Any:
        reply = await _do_the_task(session)
        setattr(owner, attribute, lambda *args, **kwargs: None)
        return reply

    try:
        run = attempt(bank, "transfer", FunctionAgent(rebinds)).run
        now = owner.__dict__[attribute] if isinstance(owner, type) else getattr(owner, attribute)
    finally:
        setattr(owner, attribute, real)
    assert now is real, f"{module}.{name} put back"
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert run.infrastructure_status["stop"]["stage"] == "harness_code"
    assert attribute in run.infrastructure_status["stop"]["message"]


# --- what runs as Python exits ---------------------------------------------------------------

SHARES_A_HANDLER = """
import atexit
from groundstate.spec.suite import load_suite
from groundstate.testing import FunctionAgent, attempt


def flush() -> None:
    print("flushed")


atexit.register(flush)  # the program's own, before any agent ran


async def agent(session):
    atexit.register(flush)  # the same function, while the agent runs
    return "Done."


run = attempt(load_suite({bank!r}), "transfer", FunctionAgent(agent)).run
print(run.terminal_reason)
"""


def test_an_agents_atexit_handler_taken_out_leaves_the_programs_own_of_the_same_function() -> None:
    """The handlers an agent registered were taken out with ``atexit.unregister(func)``,
    which takes out every registration equal to *func*: the program's own registration of
    the same function (a library's ``flush`` both use) went too, and never ran at the
    program's end. Only the agent's registration is taken out now."""
    done = subprocess.run(
        [sys.executable, "-c", SHARES_A_HANDLER.format(bank=str(BANK))],
        capture_output=True,
        text=True,
        timeout=300,  # a hang only: the program takes seconds
        env={**os.environ, "PYTHONPATH": _source_path()},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["agent_failure/incorrect_state", "flushed"]


# --- an agent's final value, wherever it runs ----------------------------------------------

FINAL_VALUES = """
async def none(session):
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    return None


async def empty(session):
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    return ""


async def zero(session):
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    return 0
"""


@pytest.mark.parametrize(
    ("factory", "reason"),
    [
        ("none", "agent_failure/incorrect_state"),
        ("empty", "agent_failure/incorrect_state"),
        ("zero", "harness_compatibility_failure"),
    ],
)
def test_an_agents_final_value_gives_one_record_in_process_and_as_a_program(
    edited_bank: EditTask, tmp_path: Path, factory: str, reason: str
) -> None:
    """``groundstate.mcp_client`` sent ``finish(final or "")``: the agent that returned
    ``None`` had a final reply ``""`` as a program (an empty final message in its trace) and
    none in-process; one that returned ``0`` (not a str) finished with ``""`` as a program,
    where in-process it is a protocol mismatch. An empty final reply is no final reply
    everywhere now (as a model's empty answer already was), and a value of another type is a
    protocol mismatch as a program too."""
    bank = edited_bank(lambda task: task.update(time_limit=120))  # a program starting, loaded
    (tmp_path / "agents.py").write_text(FINAL_VALUES)
    command = ["{python}", "-m", "groundstate.mcp_client", f"agents.py:{factory}"]
    external = load_system(system_file(tmp_path, command))
    inside = tmp_path / "inside.yaml"
    inside.write_text(
        yaml.safe_dump(
            {"name": "inside", "harness": {"orchestration_loop": {"entry": f"agents.py:{factory}"}}}
        )
    )
    records = []
    for path in (inside, external.source):
        system = load_system(path)
        records.append(attempt(bank, "transfer", load_agent(system), system=system).run)
    for run in records:
        assert run.terminal_reason == reason, run.infrastructure_status
        finals = [e for e in run.observation_action_log if getattr(e, "final", False)]
        if factory == "zero":
            assert "returned int" in run.infrastructure_status["exception"]["message"]
        else:
            assert run.final_message is None
            assert finals == []
