"""Adversarial in-process agents, thirteenth round: what an agent leaves behind in the process
(work Python waits for at exit, descriptors, handles on its database, process-wide settings)
must not hang the command, flip its own verdict or reach a later attempt."""

from __future__ import annotations

import contextlib
import contextvars
import gc
import os
import resource
import sqlite3
import subprocess
import sys
import threading
import types
import warnings
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.descriptors import RESERVE
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.environments.sqlite_live import POOL
from groundstate.spec.suite import Suite, load_suite
from groundstate.testing import FunctionAgent, attempt

from .conftest import BANK, BANK_SYSTEM, in_a_fresh_process, stored_runs
from .test_inprocess_adversarial import _do_the_task

AgentFn = Callable[[Session], Awaitable[Any]]


# --- work Python waits for as it exits -----------------------------------------------------

LEAVES_WORK = """
import atexit, concurrent.futures, threading

FOREVER = threading.Event()  # never set: whatever waits on it blocks for good


class Agent:
    async def run(self, session):
        await session.say("What is your PIN?")
        await session.call("check_pin", {"account": "A", "pin": "1234"})
        await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        # the agent's thread is a daemon: a thread it starts is one unless told otherwise
        threading.Thread(target=FOREVER.wait, name="left-running", daemon=False).start()
        concurrent.futures.ThreadPoolExecutor(1, "own-pool").submit(FOREVER.wait)
        atexit.register(FOREVER.wait)
        return "Moved 30 from A to B."
"""

RUN_COMMAND = """
import sys
from groundstate import validation
from groundstate.bindings import HARNESS
from groundstate.cli import main

validation.require_valid = lambda *args, **kwargs: []  # proven elsewhere: seconds saved
HARNESS.rebase()
sys.argv = ["groundstate", "run", *sys.argv[1:]]
main()
"""


def test_run_ends_with_its_results_whatever_work_the_agent_left_for_exit(tmp_path: Path) -> None:
    """A thread started with ``daemon=False``, an executor of the agent's own at work and an
    ``atexit`` handler that blocks: Python waits for each as it exits, so ``groundstate run``
    hung after its batch was stored and printed, for as long as that work lasted (here for
    ever). It now names what was left, and whose, and ends with its exit status, its work
    folder removed."""
    (tmp_path / "leaves.py").write_text(LEAVES_WORK)
    system = tmp_path / "system.yaml"
    system.write_text(
        BANK_SYSTEM.read_text()
        .replace("entry: bank_agent.py:bank_agent", "entry: leaves.py:Agent")
        .replace("{fault_rate: 0.5}", "{}")
    )
    store, scratch = tmp_path / "runs.db", tmp_path / "scratch"
    args = [str(BANK), "--system", str(system), "--attempts", "1", "--store", str(store)]
    env = {**os.environ, "GROUNDSTATE_TMPDIR": str(scratch), "PYTHONPATH": _source_path()}
    done = subprocess.run(
        [sys.executable, "-c", RUN_COMMAND, *args],
        capture_output=True,
        text=True,
        timeout=300,  # a hang only: the command takes seconds
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "stored in" in done.stdout and stored_runs(store) == 1
    warning = done.stderr
    assert "not waiting for what in-process code left running" in warning
    assert "thread 'left-running' (started while the agent of 'bank-reference'" in warning
    # left out of Python's join as the agent's run ended (leftovers.not_joined_at_exit)
    assert "own-pool" not in warning
    assert "1 atexit handler (registered while the agent of 'bank-reference'" in warning
    assert "on task 'transfer'" in warning
    assert not list((scratch / "groundstate").glob("pid-*"))  # the harness's own exit duty


def _source_path() -> str:
    source = str(Path(__file__).parent.parent / "src")
    return os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])


# --- descriptors -----------------------------------------------------------------------------


@contextlib.contextmanager
def _few_descriptors(spare: int) -> Iterator[None]:
    """The process's descriptor limit lowered to *spare* more than it has open, with the
    collector off: files and sockets earlier tests left as garbage, closed by a collection
    mid-attempt, would free descriptors the agent had exhausted."""
    gc.collect()
    gc.disable()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + spare, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        gc.enable()


def _exhausting(then: AgentFn, kept: list[int]) -> AgentFn:
    async def agent(session: Session) -> Any:
        reply = await then(session)
        with contextlib.suppress(OSError):
            while True:
                kept.append(os.open(os.devnull, os.O_RDONLY))
        return reply

    return agent


async def _does_nothing(session: Session) -> str:
    return "Done."


def _graded_after_exhausting(then: AgentFn) -> tuple[bool, str, Any]:
    """One attempt by an agent that does *then* and opens every descriptor left: whether it
    found any, its terminal reason and whether the record says they were exhausted."""
    kept: list[int] = []
    try:
        with _few_descriptors(100):
            run = attempt(load_suite(BANK), "transfer", FunctionAgent(_exhausting(then, kept))).run
    finally:
        for fd in kept:
            os.close(fd)
    return bool(kept), run.terminal_reason, run.infrastructure_status.get("descriptors_exhausted")


@pytest.mark.parametrize(
    ("then", "reason"),
    [(_does_nothing, "agent_failure/incorrect_state"), (_do_the_task, "success")],
)
def test_an_agent_that_opens_every_descriptor_is_still_graded(then: AgentFn, reason: str) -> None:
    """An agent that opened files until the process had no descriptor left made its own
    attempt's checks fail to open the initial state's database: a ``grader_failure``, so an
    invalid attempt (rerun) where it had failed. The harness now holds descriptors back while
    an agent runs and lets them go for the grading when the agent has left none. (In a fresh
    process: see :func:`in_a_fresh_process`.)"""
    assert in_a_fresh_process(_graded_after_exhausting, then) == (True, reason, True)


# --- a handle on the database kept past its attempt ------------------------------------------

READS_AND_WRITES = ["SELECT balance FROM accounts", "UPDATE accounts SET balance = 0"]


def test_a_database_handle_kept_past_its_attempt_cannot_reach_the_next() -> None:
    """The pool hands a finished attempt's agent connection to the next attempt: a tool (or an
    agent) that kept the connection or a cursor read and wrote the next attempt's database,
    from a thread left running or from the context of its own call. The connection now
    answers only within a call of the environment that holds it."""
    fixture, clock = BANK / "fixtures" / "bank.sql", datetime(2026, 1, 15, 10, 0)
    first = SqliteEnvironment(fixture, clock=clock)
    first.reset()
    with first.tool_transaction():
        handle = first.agent_db
        cursor = handle.execute("SELECT 1")
        its_call = contextvars.copy_context()  # as a thread it started with the call's context
    first.close()
    refused: list[str] = []

    def tries() -> None:
        for run in (handle.execute, cursor.execute):
            for sql in READS_AND_WRITES:
                try:
                    run(sql).fetchall()
                except sqlite3.DatabaseError as exc:
                    refused.append(str(exc))

    with SqliteEnvironment(fixture, clock=clock) as second:
        assert second.agent_db is handle  # the same connection, pooled
        initial = second.reset()
        tries()  # between the next attempt's calls
        with second.tool_transaction():
            thread = threading.Thread(target=tries)  # a thread left running, during a call
            thread.start()
            thread.join()
            its_call.run(tries)  # the first attempt's call's context, during the next's
            assert second.agent_db.execute("SELECT count(*) FROM accounts").fetchall() == [(3,)]
        assert refused == ["not authorized"] * 12
        assert second.state_hash() == initial


# --- process-wide state the harness reads after the agent -----------------------------------


@pytest.mark.parametrize("how", ["replaced", "removed"])
def test_an_agent_that_swaps_a_harness_module_in_sys_modules_is_stopped(
    bank: Suite, how: str
) -> None:
    """The harness imports some of its modules inside functions (``run``'s exit status reads
    ``groundstate.gates`` after the batch): an agent that replaced the entry in
    ``sys.modules`` (or removed it, so the next import makes new code) had those imports
    take its own module, for the rest of the process. The entry is put back, and the attempt
    stopped as for any rebinding of the harness's code."""
    import groundstate.gates as gates

    async def swaps(session: Session) -> str:
        reply = await _do_the_task(session)
        if how == "replaced":
            sys.modules["groundstate.gates"] = types.ModuleType("groundstate.gates")
        else:
            del sys.modules["groundstate.gates"]
        return reply

    run = attempt(bank, "transfer", FunctionAgent(swaps)).run
    assert sys.modules["groundstate.gates"] is gates
    assert run.terminal_reason == "agent_failure/prohibited_action"
    assert "sys.modules['groundstate.gates']" in run.infrastructure_status["harness_rebound"]
    assert attempt(bank, "transfer", FunctionAgent(_do_the_task)).run.terminal_reason == "success"


def test_warning_filters_an_agent_set_are_put_back(bank: Suite) -> None:
    """``warnings.simplefilter("error")`` in an agent made every later warning in the process
    an exception: one a check's library gives (a deprecation) failed the check, a
    ``grader_failure``, so an invalid attempt, in this attempt and every later one."""
    kept, filters, show = warnings.filters, list(warnings.filters), warnings.showwarning

    async def strict(session: Session) -> str:
        warnings.simplefilter("error")
        warnings.filters = [("error", None, Warning, None, 0)]
        warnings.showwarning = lambda *args, **kwargs: None
        return await _do_the_task(session)

    run = attempt(bank, "transfer", FunctionAgent(strict)).run
    assert run.terminal_reason == "success"
    assert warnings.filters is kept and kept == filters and warnings.showwarning is show


def test_resource_limits_an_agent_lowered_are_put_back(bank: Suite) -> None:
    """``resource.setrlimit`` is the process's: a descriptor limit an agent lowered to what
    was open left its own grading unable to open the initial state's database (a
    ``grader_failure``: an invalid attempt where it had failed), and every later attempt's
    environment unable to be built; a CPU limit would end the process (SIGXCPU)."""
    limits = {
        kind: resource.getrlimit(kind) for kind in (resource.RLIMIT_NOFILE, resource.RLIMIT_CPU)
    }

    async def lowers(session: Session) -> str:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")), hard))
        resource.setrlimit(resource.RLIMIT_CPU, (10**6, resource.RLIM_INFINITY))
        return "Done."

    try:
        run = attempt(bank, "transfer", FunctionAgent(lowers)).run
        assert {kind: resource.getrlimit(kind) for kind in limits} == limits
    finally:
        for kind, limit in limits.items():
            resource.setrlimit(kind, limit)
    assert run.terminal_reason == "agent_failure/incorrect_state", run.infrastructure_status


def test_environment_variables_an_agent_set_are_put_back(bank: Suite, tmp_path: Path) -> None:
    """``os.environ`` is the process's: ``GROUNDSTATE_TMPDIR`` pointed at a file failed every
    later environment's build (an invalid attempt each), a proxy variable sent later
    attempts' model calls through the agent's own server."""
    before = dict(os.environ)
    (tmp_path / "a-file").write_text("")

    async def sets(session: Session) -> str:
        os.environ["GROUNDSTATE_TMPDIR"] = str(tmp_path / "a-file")
        os.environ["HTTPS_PROXY"] = "http://127.0.0.1:9"
        os.environ.pop("PATH", None)
        return await _do_the_task(session)

    assert attempt(bank, "transfer", FunctionAgent(sets)).run.terminal_reason == "success"
    assert dict(os.environ) == before


def _graded_with_nothing_held() -> tuple[str, str]:
    """One attempt by an agent that does the task and opens every descriptor left, with no
    descriptor held back and no pooled database: its terminal reason and stop message."""
    POOL.drain()
    RESERVE.keep = lambda: None  # type: ignore[method-assign]  # this process is thrown away
    held = RESERVE._held
    while held:
        os.close(held.pop())
    kept: list[int] = []
    try:
        with _few_descriptors(100):
            agent = FunctionAgent(_exhausting(_do_the_task, kept))
            run = attempt(load_suite(BANK), "transfer", agent).run
    finally:
        for fd in kept:
            os.close(fd)
    stop = run.infrastructure_status.get("stop") or {}
    return run.terminal_reason, str(stop.get("message", ""))


def test_descriptors_taken_again_while_the_attempt_is_graded_are_the_agents_doing() -> None:
    """A thread of the agent's that goes on opening descriptors after its end can take the
    ones let go for the grading: the checks then fail, and the grader failure made the
    attempt invalid. It is the agent's prohibited action. (Here nothing is held back at
    all, as if such a thread had taken every descriptor let go; no pooled database either,
    whose descriptors an open that fails for want of them would free. In a fresh process:
    in the suite's own, an idle loop thread an earlier test left, ending and closing its
    loop mid-attempt, once freed the few descriptors the checks needed, and they passed.)"""
    reason, message = in_a_fresh_process(_graded_with_nothing_held)
    assert reason == "agent_failure/prohibited_action", message
    assert "took every file descriptor" in message
