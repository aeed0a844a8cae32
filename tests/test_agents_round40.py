"""Round 40: an in-process agent that sends its own process SIGINT or SIGTERM (the signals
that interrupt a batch) under ``run``: its own attempt is its prohibited action, and the
batch goes on; a signal from outside the process still interrupts the batch. And the SQLite
environment's file written by another hand while a tool call runs."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.store import RunStore

from ._agents_builders import bank_world, stored_runs, validated_bank

PROHIBITED = "agent_failure/prohibited_action"

AGENT = """
import asyncio, os, signal, threading

HOW, WHERE, SIG, COUNT = {how!r}, {where!r}, signal.{sig}, {count!r}


def send():
    if HOW == "kill":
        os.kill(os.getpid(), SIG)
    elif HOW == "killpg":
        os.killpg(os.getpgrp(), SIG)
    elif HOW == "kill0":
        os.kill(0, SIG)
    elif HOW == "raise_signal":
        signal.raise_signal(SIG)
    elif HOW == "pthread_kill":
        signal.pthread_kill(threading.main_thread().ident, SIG)


def quietly():
    try:
        send()
    except PermissionError:  # swallowed: the agent goes on as if nothing happened
        pass


async def agent(session):
    if session.seed != 0:  # not the smoke run: the second stored attempt misbehaves
        with open(COUNT, "a") as f:
            f.write("x")
        if os.path.getsize(COUNT) == 2:
            if WHERE == "thread":  # a thread of the agent's own, with no try's context
                thread = threading.Thread(target=quietly)
                thread.start()
                thread.join()
            elif WHERE == "to_thread":
                await asyncio.to_thread(quietly)
            else:
                quietly()
            await asyncio.sleep(0.3)  # where an interruption, sent, would land
    await session.say("What is your PIN?")
    await session.call("check_pin", {{"account": "A", "pin": "1234"}})
    await session.call("transfer", {{"source": "A", "target": "B", "amount": 30}})
    return "Moved 30 from A to B."
"""


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bank suite and a store holding its validation (each test copies both)."""
    return validated_bank(tmp_path_factory.mktemp("round40"))


def _world(template: Path, tmp_path: Path, how: str, where: str, sig: str) -> list[str]:
    """``run``'s arguments for a batch of 3 attempts whose second sends the signal."""
    count = str(tmp_path / "count")
    agent = AGENT.format(how=how, where=where, sig=sig, count=count)
    world = bank_world(template, tmp_path, agent)
    return ["run", *world, "--attempts", "3", "--concurrency", "1"]


def _check(tmp_path: Path, code: int, output: str, how: str) -> None:
    assert code == 0, output
    stored = stored_runs(tmp_path / "runs.db")
    assert {n: r.terminal_reason for n, r in stored.items()} == {
        1: "success",
        2: PROHIBITED,
        3: "success",
    }
    stop = stored[2].infrastructure_status["stop"]
    assert stop["stage"] == "signal"
    assert how in stop["message"]


@pytest.mark.parametrize(
    ("how", "where", "sig"),
    [
        ("kill", "agent", "SIGINT"),
        ("kill", "agent", "SIGTERM"),
        ("raise_signal", "agent", "SIGINT"),
        ("pthread_kill", "agent", "SIGINT"),
        ("kill", "to_thread", "SIGINT"),
        ("raise_signal", "thread", "SIGTERM"),
    ],
)
def test_an_agent_interrupting_its_own_batch_is_its_prohibited_action(
    template: Path, tmp_path: Path, how: str, where: str, sig: str
) -> None:
    """Before: ``run`` stopped as for the user's Ctrl-C (exit 130/143), the agent's own
    attempt unstored (the resume ran it again: another draw). Now the call is refused
    (``PermissionError``, which the agent here swallows), its attempt is its prohibited
    action, and the batch completes."""
    args = _world(template, tmp_path, how, where, sig)
    result = CliRunner().invoke(main, args)
    _check(tmp_path, result.exit_code, result.output, how)


@pytest.mark.parametrize("how", ["killpg", "kill0"])
def test_an_agent_signalling_its_process_group_is_its_prohibited_action(
    template: Path, tmp_path: Path, how: str
) -> None:
    """The same sent to the process group (``os.killpg``, ``os.kill(0, ...)``), in a
    ``groundstate run`` of its own session, so that on the old code the signal reaches no
    process but it."""
    args = _world(template, tmp_path, how, "agent", "SIGINT")
    done = subprocess.run(
        [sys.executable, "-m", "groundstate.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,
    )
    _check(tmp_path, done.returncode, done.stderr, how.replace("kill0", "os.kill(0"))


HOLD = """
import asyncio, os

async def agent(session):
    if session.seed != 0 and not os.path.exists({mark!r}):
        open({mark!r}, "w").close()
        await asyncio.sleep(60)  # interrupted from outside meanwhile
    await session.say("What is your PIN?")
    await session.call("check_pin", {{"account": "A", "pin": "1234"}})
    await session.call("transfer", {{"source": "A", "target": "B", "amount": 30}})
    return "Moved 30 from A to B."
"""


def test_a_signal_from_another_process_still_interrupts_the_batch(
    template: Path, tmp_path: Path
) -> None:
    """SIGINT sent by another process (as a terminal's Ctrl-C is) while an agent waits:
    the batch stops (exit 130), the waiting attempt unstored, not laid at its agent."""
    args = _world(template, tmp_path, "none", "agent", "SIGINT")
    mark = tmp_path / "waiting"
    (tmp_path / "agent.py").write_text(HOLD.format(mark=str(mark)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "groundstate.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        while not mark.exists():
            assert proc.poll() is None, proc.communicate()[1]
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "interrupted by SIGINT" in err
    with RunStore(tmp_path / "runs.db") as runs:
        assert runs.runs(runs.batch().batch_id) == []


# --- the database file written by another hand while a tool call runs ------------------------

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


def _raw(path: Path, old: bytes, new: bytes) -> None:
    """Replace *old* by *new* in the file's bytes, past SQLite (no counter moved)."""
    data = path.read_bytes()
    assert data.count(old) == 1
    fd = os.open(path, os.O_RDWR)
    try:
        os.pwrite(fd, new, data.index(old))
    finally:
        os.close(fd)


def _sql(path: Path, statement: str, *, keep_counter: bool) -> None:
    """Commit *statement* on a connection of its own; with *keep_counter*, then put the
    header's change counter (and its version-valid-for number) back with a raw write."""
    header = path.read_bytes()[:100]
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute(statement)
    finally:
        db.close()
    if keep_counter:
        fd = os.open(path, os.O_RDWR)
        try:
            os.pwrite(fd, header[24:28], 24)
            os.pwrite(fd, header[92:96], 92)
        finally:
            os.close(fd)


@pytest.mark.parametrize("how", ["raw", "sql", "sql-counter-kept"])
def test_a_write_by_another_hand_during_a_tools_call_is_not_taken_for_its_commit(
    shop: SqliteEnvironment, how: str
) -> None:
    """A thread of the agent's writes the file while one of its tool calls runs (before the
    tool's own first write, which takes the write lock), then the tool writes and commits.
    Before: the call's commit took the file's change (its counter move, or its change time)
    for its own, and the write was seen by nothing (``written_outside_calls`` None). The
    file is looked at just before the call's commit too (nothing of the call's is in it
    then: the harness's connection does not spill its cache), and the write is named."""
    live = Path(shop._live)
    time.sleep(0.05)  # past the file system clock's tick of the harness's last look
    with shop.tool_transaction():
        if how == "raw":
            _raw(live, b"4111-xxxx", b"9999-xxxx")
        else:
            statement = "UPDATE cards SET number = '9999-xxxx'"
            _sql(live, statement, keep_counter=how == "sql-counter-kept")
        shop.agent_db.execute("UPDATE items SET name = 'ink' WHERE id = 1")
    reason = shop.written_outside_calls()
    assert reason is not None and "while a tool call ran" in reason


def test_a_tools_own_commit_is_not_taken_for_a_write_by_another_hand(
    shop: SqliteEnvironment,
) -> None:
    """Many rows written by one call (4 MB, past the 2 MB the connection caches): its own
    commit, not another hand's (a cache spilled mid-call would write the file early)."""
    with shop.tool_transaction():
        for n in range(2, 8000):
            shop.agent_db.execute("INSERT INTO items VALUES (?, ?)", (n, "x" * 500))
    with shop.tool_transaction():
        shop.agent_db.execute("UPDATE items SET name = 'ink' WHERE id = 1")
    assert shop.written_outside_calls() is None
