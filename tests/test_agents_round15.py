"""Adversarial in-process agents, fifteenth round: descriptors, the authorizer's state, exit."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from sqlite3 import SQLITE_READ
from typing import Any

from groundstate.agents.base import Session
from groundstate.gates import EXIT_BELOW_GATE
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.spec.suite import Suite, load_suite
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, attempt, scripted_system

from .conftest import BANK, BANK_SYSTEM, in_a_fresh_process
from .test_inprocess_adversarial import _do_the_task
from .test_lifecycle_round13 import RUN_COMMAND, _few_descriptors, _source_path

# --- descriptors -----------------------------------------------------------------------------


def _leaves_a_few_free() -> tuple[str, Any]:
    """One attempt by an agent that takes every descriptor and lets three go: its terminal
    reason and whether the record says the descriptors were exhausted."""
    kept: list[int] = []

    async def leaves_three(session: Session) -> Any:
        reply = await _do_the_task(session)
        with contextlib.suppress(OSError):
            while True:
                kept.append(os.open(os.devnull, os.O_RDONLY))
        for _ in range(3):
            os.close(kept.pop())
        return reply

    try:
        with _few_descriptors(100):
            run = attempt(load_suite(BANK), "transfer", FunctionAgent(leaves_three)).run
    finally:
        for fd in kept:
            os.close(fd)
    return run.terminal_reason, run.infrastructure_status.get("descriptors_exhausted")


def test_an_agent_that_leaves_a_few_descriptors_free_has_exhausted_them() -> None:
    """The harness looked for exhaustion by opening one descriptor as the agent ended: a few
    freed meanwhile (here by the agent; in the whole suite's run, an idle loop thread of the
    harness's ending and closing its loop) hid it, and the record said nothing
    (``descriptors_exhausted`` missing: the flaky test of the thirteenth round's). Fewer
    free than the reserve holds is exhaustion now. (In a fresh process: see
    :func:`in_a_fresh_process`.)"""
    assert in_a_fresh_process(_leaves_a_few_free) == ("success", True)


def _takes_them_once(store_path: Path) -> tuple[list[str], int, bool]:
    """Three attempts in one batch, the first agent taking every descriptor and keeping them:
    the terminal reasons, the runs stored, and whether the agent found any to take."""
    kept: list[int] = []

    async def takes_them_once(session: Session) -> Any:
        reply = await _do_the_task(session)
        if not kept:
            with contextlib.suppress(OSError):
                while True:
                    kept.append(os.open(os.devnull, os.O_RDONLY))
        return reply

    with RunStore(store_path) as store:
        agent = FunctionAgent(takes_them_once)
        runner = BatchRunner(load_suite(BANK), scripted_system(), store, make_agent=lambda: agent)
        took = False
        try:
            with _few_descriptors(100):
                result = asyncio.run(runner.start(BatchConfig(attempts=3)))
        finally:
            took = bool(kept)
            for fd in kept:
                os.close(fd)
        stored = len(store.runs(result.batch.batch_id))
    return [run.terminal_reason for run in result.runs], stored, took


def test_the_reserve_never_takes_the_descriptors_a_record_being_stored_needs(
    tmp_path: Path,
) -> None:
    """An agent took every descriptor and kept them (the harness let its reserve go for the
    grading). The next attempt's start took the reserve back, as many as were free: all of
    them, while the record before was still to be stored (it is stored as the next attempt
    starts), so the batch stopped (``StoreError``: too many open files). The reserve now
    leaves as many free as it holds. (In a fresh process: the whole suite's CI failed on this
    test once, threads earlier tests left working sharing the few descriptors left.)"""
    reasons, stored, took = in_a_fresh_process(_takes_them_once, tmp_path / "runs.db")
    assert took, "the agent found descriptors to open"
    assert stored == 3
    assert reasons == ["success"] * 3


# --- what the SQLite authorizer decides by -------------------------------------------------


async def _reads_the_audit(session: Session) -> Any:
    await session.call("read_audit")  # the task's permissions: {audit: none}
    return await _do_the_task(session)


def test_an_agent_cannot_loosen_its_permissions_in_place(bank: Suite) -> None:
    """The environment decided by the task's own permission dict: an agent that set
    ``audit`` to ``read`` in it, read the table, and set it back before its end passed
    (``success``); left loosened, every later attempt of the task could read it. The
    environment decides by a copy of its own now, and a change in place is a change of the
    task (stopped, as its other fields are)."""
    tables = bank.tasks["transfer"].permissions.tables

    async def loosens_for_a_while(session: Session) -> Any:
        tables["audit"] = "read"
        try:
            return await _reads_the_audit(session)
        finally:
            tables["audit"] = "none"

    async def loosens(session: Session) -> Any:
        tables["audit"] = "read"
        return "Done."

    run = attempt(bank, "transfer", FunctionAgent(loosens_for_a_while)).run
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert "read audit" in run.infrastructure_status["stop"]["message"]
    try:
        run = attempt(bank, "transfer", FunctionAgent(loosens)).run
        assert run.terminal_reason == "agent_failure/prohibited_action"
        assert run.infrastructure_status["stop"]["stage"] == "harness_code"
        later = attempt(bank, "transfer", FunctionAgent(_reads_the_audit)).run
        assert later.terminal_reason == "agent_failure/prohibited_action"
    finally:
        tables["audit"] = "none"


def test_an_agent_cannot_allow_itself_a_read_for_every_later_environment(bank: Suite) -> None:
    """The authorizer kept its allowed answers in a table of its module's for the whole
    process (``sqlite._ALLOWED``, by fixture and permissions): an agent that added "read
    ``audit``" to it read the table its task forbids unseen (``success``), and so could every
    later agent. Each environment keeps its own answers now; none is reachable by a module's
    name."""
    from groundstate.environments import sqlite

    async def allows_itself(session: Session) -> Any:
        for allowed in getattr(sqlite, "_ALLOWED", {}).values():
            allowed.update((SQLITE_READ, "audit", column, "main", None) for column in AUDIT)
        return await _reads_the_audit(session)

    attempt(bank, "transfer", FunctionAgent(_do_the_task))  # the answers kept, if they are
    for agent in (allows_itself, _reads_the_audit):
        run = attempt(bank, "transfer", FunctionAgent(agent)).run
        assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
        assert "read audit" in run.infrastructure_status["stop"]["message"]


AUDIT = ("id", "note", "ROWID")


# --- what the statistics compute with ---------------------------------------------------------

LIES_TO_THE_GATE = """
import numpy


def _all_pass(values, out=None):
    out[...] = -1.0  # negated next: pass@k = 1
    return out


class Agent:
    async def run(self, session):
        numpy.expm1 = _all_pass
        return "Done."
"""


def test_an_agent_cannot_pass_the_gate_by_rebinding_what_the_statistics_compute_with(
    tmp_path: Path,
) -> None:
    """``run`` computes its summary and its ``--fail-under`` gates in the process its agents
    ran in, with numpy: an agent that did nothing and set ``numpy.expm1`` to a lie of its
    own passed ``--fail-under pass@1=0.9`` (exit 0; the table said 0 / 2). numpy, math and
    fractions are watched now: the attempt is the agent's prohibited action and the rebinding
    put back before anything is counted."""
    (tmp_path / "lies.py").write_text(LIES_TO_THE_GATE)
    system = tmp_path / "system.yaml"
    system.write_text(
        BANK_SYSTEM.read_text()
        .replace("entry: bank_agent.py:bank_agent", "entry: lies.py:Agent")
        .replace("{fault_rate: 0.5}", "{}")
    )
    store = tmp_path / "runs.db"
    args = [str(BANK), "--system", str(system), "--attempts", "2", "--store", str(store)]
    done = subprocess.run(
        [sys.executable, "-c", RUN_COMMAND, *args, "--fail-under", "pass@1=0.9"],
        capture_output=True,
        text=True,
        timeout=300,  # a hang only: the command takes seconds
        env={**os.environ, "PYTHONPATH": _source_path()},
    )
    assert done.returncode == EXIT_BELOW_GATE, done.stdout + done.stderr
    assert "pass@1 = 0.000 is below 0.9" in done.stderr
    with RunStore(store) as stored:
        (batch_id,) = stored.batch_ids()
        runs = stored.runs(batch_id)
    assert {run.terminal_reason for run in runs} == {"agent_failure/prohibited_action"}
    assert "numpy.expm1" in runs[0].infrastructure_status["harness_rebound"]


# --- process-wide registries -----------------------------------------------------------------


def _lie(text: str) -> str:
    return text.replace('"agent_failure/incorrect_state"', '"success"')


def test_an_agent_cannot_rewrite_what_the_harness_stores_through_sqlite3s_adapters(
    bank: Suite, tmp_path: Path
) -> None:
    """``sqlite3.register_adapter(str, lie)`` is process-wide: every text the harness bound
    to a statement afterwards went through the agent's function, the store's records too. A
    failed attempt was stored as a ``success`` (``report`` said so; only ``verify`` found
    the record altered). The adapters and converters are put back as the agent's run ends."""

    async def registers(session: Session) -> str:
        sqlite3.register_adapter(str, _lie)
        return "Done."

    try:
        with RunStore(tmp_path / "runs.db") as store:
            agent = FunctionAgent(registers)
            runner = BatchRunner(bank, scripted_system(), store, make_agent=lambda: agent)
            result = asyncio.run(runner.start(BatchConfig(attempts=1)))
            (run,) = store.runs(result.batch.batch_id)
            assert store.verify(result.batch.batch_id).problems == []
    finally:
        sqlite3.adapters.pop((str, sqlite3.PrepareProtocol), None)
    assert run.terminal_reason == "agent_failure/incorrect_state"
    assert (str, sqlite3.PrepareProtocol) not in sqlite3.adapters


# --- what runs as Python exits ---------------------------------------------------------------

LEAVES_A_HANDLER = """
import asyncio, atexit
from groundstate.spec.suite import load_suite
from groundstate.testing import FunctionAgent, attempt


async def agent(session):
    atexit.register(print, "the agent's handler ran")
    return "Done."


@atexit.register
def own() -> None:
    print("the program's own handler ran")


run = attempt(load_suite({bank!r}), "transfer", FunctionAgent(agent)).run
print(run.terminal_reason)
"""


def test_an_agents_atexit_handler_does_not_run_at_a_python_api_programs_end() -> None:
    """A program running attempts through the Python API ran, as it ended, the ``atexit``
    handlers its agents had registered (one that blocked held it for ever; ``groundstate run``
    already ended without them). They are taken out as the agent's run ends; the program's
    own still run."""
    done = subprocess.run(
        [sys.executable, "-c", LEAVES_A_HANDLER.format(bank=str(BANK))],
        capture_output=True,
        text=True,
        timeout=300,  # a hang only: the program takes seconds
        env={**os.environ, "PYTHONPATH": _source_path()},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "agent_failure/incorrect_state",
        "the program's own handler ran",
    ]
