"""Round 41: adversarial agents. What the batch keeps per try to tell an agent's late
interruption (bounded: held by the try's context, not a set of ended tries), a commit by
another connection landing the instant a tool call's commit releases its write lock, and
agents that try to flip their own verdict through exotic exceptions, weird final replies,
frozen clocks or a closed output stream: each attempt's terminal reason honest, the next
attempt unaffected."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextvars import copy_context
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundstate.agents.base import Session
from groundstate.cli import main
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.exitcause import ExitWatch, watching
from groundstate.spec.suite import Suite
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, attempt

from ._agents_builders import bank_world, validated_bank
from .conftest import time_limit


async def _do_the_task(session: Session) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."


def _run(suite: Suite, fn: Callable[[Session], Any]) -> Any:
    with time_limit(suite, "transfer", 30):
        return attempt(suite, "transfer", FunctionAgent(fn)).run


def _then_honest(suite: Suite) -> None:
    run = _run(suite, _do_the_task)
    assert run.terminal_reason == "success", run.infrastructure_status


# --- (1) what the batch keeps per try --------------------------------------------------------


def _per_try(watch: ExitWatch) -> int:
    """How many run ids the watch holds in its sets."""
    return sum(len(value) for value in vars(watch).values() if isinstance(value, set))


def test_the_exit_watch_keeps_nothing_per_try_once_its_tries_end(tmp_path: Path) -> None:
    """Before: every ended try's run id stayed in ``ExitWatch.finished`` for the batch's life
    (a set growing by one per try over a long batch)."""
    store = tmp_path / "runs.db"
    RunStore(store).close()
    with watching(store) as watch:

        def tries() -> None:  # in a context of its own, as each of a batch's slots is
            for n in range(2000):
                watch.started(f"try-{n}")
                watch.ended(f"try-{n}")
            assert _per_try(watch) == 0
            watch.started("last")
            assert _per_try(watch) == 1

        copy_context().run(tries)


LATE = """
import asyncio, os, signal, time

COUNT, THIRD, SENT = {count!r}, {third!r}, {sent!r}


async def agent(session):
    if session.seed != 0:  # not the smoke run
        with open(COUNT, "a") as f:
            f.write("x")
        seen = os.path.getsize(COUNT)
        if seen == 2:  # blocks its own thread past its time limit, then interrupts
            for _ in range(6000):
                if os.path.exists(THIRD):
                    break
                time.sleep(0.05)
            try:
                os.kill(os.getpid(), signal.SIGINT)
            except PermissionError:
                pass
            open(SENT, "w").close()
            return "too late"
        if seen == 3:  # the next try waits for the interruption before its work
            open(THIRD, "w").close()
            for _ in range(6000):
                if os.path.exists(SENT):
                    break
                await asyncio.sleep(0.05)
    await session.say("What is your PIN?")
    await session.call("check_pin", {{"account": "A", "pin": "1234"}})
    await session.call("transfer", {{"source": "A", "target": "B", "amount": 30}})
    return "Moved 30 from A to B."
"""


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return validated_bank(tmp_path_factory.mktemp("round41"))


def _world(template: Path, tmp_path: Path, agent: str) -> list[str]:
    return ["run", *bank_world(template, tmp_path, agent), "--attempts", "3", "--concurrency", "1"]


def test_an_agent_interrupting_after_its_try_ended_is_still_refused(
    template: Path, tmp_path: Path
) -> None:
    """What the dropped set was for: the second try's agent blocks its thread past its time
    limit and, once the third try runs, sends SIGINT. Its try has ended: the call is still
    refused (laid at no try), the batch completes, the third try is not blamed."""
    agent = LATE.format(
        count=str(tmp_path / "count"), third=str(tmp_path / "third"), sent=str(tmp_path / "sent")
    )
    args = _world(template, tmp_path, agent)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "sent").exists()
    with RunStore(tmp_path / "runs.db") as runs:
        batch = runs.batch().batch_id
        assert runs.verify(batch).ok
        stored = {run.attempt: run.terminal_reason for run in runs.runs(batch)}
    assert stored == {1: "success", 2: "agent_failure/time_limit", 3: "success"}


# --- (3) another connection's commit the instant a tool call's commit releases its lock ------

FIXTURE = """
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE cards (id INTEGER PRIMARY KEY, number TEXT);
INSERT INTO items VALUES (1, 'pen');
INSERT INTO cards VALUES (1, '4111-xxxx');
"""


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    fixture = tmp_path / "shop.sql"
    fixture.write_text(FIXTURE, encoding="utf-8")
    with SqliteEnvironment(fixture, clock=datetime(2024, 1, 1)) as environment:
        environment.reset()
        yield environment


def _commit_after_the_calls(shop: SqliteEnvironment, statement: str) -> list[bool]:
    """Make another connection commit *statement* the instant the harness's next commit
    returns once the returned switch is on (as one waiting for the call's write lock does
    when the commit releases it), before the harness looks at the file again."""
    harness, armed = shop._harness, [False]

    def then_another(sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        rows = harness(sql, params)
        if sql == "COMMIT" and armed[0]:
            armed[0] = False
            db = sqlite3.connect(shop._live, isolation_level=None)
            try:
                db.execute(statement)
            finally:
                db.close()
        return rows

    shop._harness = then_another  # type: ignore[method-assign]
    return armed


def test_a_commit_landing_as_a_tools_commit_releases_its_lock_is_named(
    shop: SqliteEnvironment,
) -> None:
    """Before: the look after the call's commit found the counter moved by two, gave up the
    tracking only, and took the moved counter for the harness's: the card number changed
    by another hand was seen by nothing (``written_outside_calls`` None)."""
    armed = _commit_after_the_calls(shop, "UPDATE cards SET number = '9999-xxxx'")
    with shop.tool_transaction():
        shop.agent_db.execute("UPDATE items SET name = 'ink' WHERE id = 1")
        armed[0] = True
    assert not armed[0]  # it went off
    reason = shop.written_outside_calls()
    assert reason is not None and "change counter" in reason


def test_a_tools_commit_and_the_clock_are_not_taken_for_another_hands(
    shop: SqliteEnvironment,
) -> None:
    """The false-positive guard: calls that write, calls that fail, and the harness's clock
    moved, one after another, name nothing."""
    for n in range(2, 40):
        with shop.tool_transaction():
            shop.agent_db.execute("INSERT INTO items VALUES (?, 'x')", (n,))
        with pytest.raises(sqlite3.IntegrityError), shop.tool_transaction():
            shop.agent_db.execute("INSERT INTO items VALUES (1, 'again')")
        shop.advance_clock(60)
    assert shop.written_outside_calls() is None
    assert shop.tracking_complete


# --- the output streams closed by the agent --------------------------------------------------

CLOSES = """
import os, sys

COUNT = {count!r}


async def agent(session):
    if session.seed != 0:
        with open(COUNT, "a") as f:
            f.write("x")
        if os.path.getsize(COUNT) == 2:
            {how}
    await session.say("What is your PIN?")
    await session.call("check_pin", {{"account": "A", "pin": "1234"}})
    await session.call("transfer", {{"source": "A", "target": "B", "amount": 30}})
    return "Moved 30 from A to B."
"""


@pytest.mark.parametrize(
    "how",
    [
        "sys.stdout.close()",
        "sys.__stdout__.close(); sys.__stderr__.close()",
        "os.close(1); os.close(2); open(COUNT)",  # the next file opened takes descriptor 1
    ],
    ids=["router", "real-streams", "descriptors"],
)
def test_an_agent_closing_the_output_streams_leaves_the_report_whole(
    template: Path, tmp_path: Path, how: str
) -> None:
    """The second attempt's agent closes standard output (and error) before doing the task.
    Before: the batch's records were stored, but ``run`` then failed with a traceback
    instead of its report (exit 1): the stream closed, or descriptor 1 closed and taken by
    a file opened later. The router closes nothing of the harness's; a stream or descriptor
    closed is mended from a copy made as the router was put in."""
    agent = CLOSES.format(count=str(tmp_path / "count"), how=how)
    args = _world(template, tmp_path, agent)
    done = subprocess.run(
        [sys.executable, "-m", "groundstate.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "stored in" in done.stdout
    assert "Traceback" not in done.stderr
    with RunStore(tmp_path / "runs.db") as runs:
        batch = runs.batch().batch_id
        assert runs.verify(batch).ok
        assert [run.terminal_reason for run in runs.runs(batch)] == ["success"] * 3


def test_an_agent_closing_descriptor_1_leaves_run_json_whole(
    template: Path, tmp_path: Path
) -> None:
    """The same under ``run --json``, which sets descriptor 1 aside for its JSON: the stream
    mended writes where descriptor 1 was set to, never into the JSON."""
    how = "os.close(1); open(COUNT); print('not in the JSON', file=sys.__stdout__)"
    agent = CLOSES.format(count=str(tmp_path / "count"), how=how)
    args = [*_world(template, tmp_path, agent), "--json"]
    (tmp_path / "runs.db").unlink()  # validated in the same process first: streams routed
    done = subprocess.run(
        [sys.executable, "-m", "groundstate.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["batch_id"]
    assert "Traceback" not in done.stderr


# --- exotic exceptions, clocks and replies: honest reasons, the next attempt unaffected ------


def _raising(error: BaseException) -> Callable[[Session], Any]:
    async def agent(session: Session) -> str:
        await _do_the_task(session)
        raise error

    return agent


@pytest.mark.parametrize(
    "error",
    [
        BaseExceptionGroup("both", [KeyboardInterrupt(), SystemExit(0)]),
        ExceptionGroup("stops", [TimeoutError("mine")]),
        GeneratorExit(),
        StopAsyncIteration(),
        SystemExit(0),
    ],
    ids=["base-group", "group", "generator-exit", "stop-async-iteration", "system-exit-0"],
)
def test_an_agent_raising_an_exotic_exception_after_the_work_is_a_crash(
    bank: Suite, error: BaseException
) -> None:
    """The state is right (the transfer made), but the agent did not give its final reply:
    a crash, never a success read from the state, nor the harness's failure."""
    run = _run(bank, _raising(error))
    assert run.terminal_reason == "agent_failure/crashed"
    _then_honest(bank)


async def _frozen_clock_then_waits(session: Session) -> None:
    import time

    time.monotonic = lambda: 0.0  # type: ignore[assignment]
    time.perf_counter = lambda: 0.0  # type: ignore[assignment]
    time.sleep(0.5)  # its own thread blocked a while too
    await session.call("balance", {"account": "A"})
    while True:
        await asyncio.sleep(0.05)


def test_an_agent_freezing_the_clocks_still_meets_its_time_limit(bank: Suite) -> None:
    """The harness's deadlines do not read the ``time`` functions an agent can rebind."""
    run = attempt(bank, "transfer", FunctionAgent(_frozen_clock_then_waits)).run
    assert run.terminal_reason == "agent_failure/time_limit"
    _then_honest(bank)
