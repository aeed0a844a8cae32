"""Adversarial in-process agents, fifteenth round: descriptors, the authorizer's state, exit."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from sqlite3 import SQLITE_READ
from typing import Any

from groundstate.agents.base import Session
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.spec.suite import Suite
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, attempt, scripted_system

from .test_inprocess_adversarial import _do_the_task
from .test_lifecycle_round13 import _few_descriptors

# --- descriptors -----------------------------------------------------------------------------


def test_an_agent_that_leaves_a_few_descriptors_free_has_exhausted_them(bank: Suite) -> None:
    """The harness looked for exhaustion by opening one descriptor as the agent ended: a few
    freed meanwhile (here by the agent; in the whole suite's run, an idle loop thread of the
    harness's ending and closing its loop) hid it, and the record said nothing
    (``descriptors_exhausted`` missing: the flaky test of the thirteenth round's). Fewer
    free than the reserve holds is exhaustion now."""
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
            outcome = attempt(bank, "transfer", FunctionAgent(leaves_three))
    finally:
        for fd in kept:
            os.close(fd)
    assert outcome.run.terminal_reason == "success", outcome.run.infrastructure_status
    assert outcome.run.infrastructure_status["descriptors_exhausted"] is True


def test_the_reserve_never_takes_the_descriptors_a_record_being_stored_needs(
    bank: Suite, tmp_path: Path
) -> None:
    """An agent took every descriptor and kept them (the harness let its reserve go for the
    grading). The next attempt's start took the reserve back, as many as were free: all of
    them, while the record before was still to be stored (it is stored as the next attempt
    starts), so the batch stopped (``StoreError``: too many open files). The reserve now
    leaves as many free as it holds."""
    kept: list[int] = []

    async def takes_them_once(session: Session) -> Any:
        reply = await _do_the_task(session)
        if not kept:
            with contextlib.suppress(OSError):
                while True:
                    kept.append(os.open(os.devnull, os.O_RDONLY))
        return reply

    with RunStore(tmp_path / "runs.db") as store:
        agent = FunctionAgent(takes_them_once)
        runner = BatchRunner(bank, scripted_system(), store, make_agent=lambda: agent)
        try:
            with _few_descriptors(100):
                result = asyncio.run(runner.start(BatchConfig(attempts=3)))
        finally:
            for fd in kept:
                os.close(fd)
        assert len(store.runs(result.batch.batch_id)) == 3
    assert kept, "the agent found descriptors to open"
    assert [run.terminal_reason for run in result.runs] == ["success"] * 3


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
