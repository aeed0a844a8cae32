"""Out of file descriptors: the SQLite environment's opens back off and try again, a few times.

EMFILE (the process) or ENFILE (the system) while opening the work directory's files or its
connections is retried with exponential backoff (``OPEN_TRIES``, ``OPEN_BACKOFF`` doubling);
after the last try the attempt is ``environment_failure/setup`` with the errno in its
evidence. Any other failure to open is raised at once, as before.
"""

from __future__ import annotations

import errno
import os
import resource
import sqlite3
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from groundstate.environments import sqlite as sqlite_env
from groundstate.environments import sqlite_live
from groundstate.environments.sqlite import OPEN_BACKOFF, OPEN_TRIES, SqliteEnvironment
from groundstate.errors import EnvironmentFailure
from groundstate.spec.suite import Suite
from groundstate.testing import FunctionAgent, attempt

FIXTURE = Path(__file__).parent / "suites" / "bank" / "fixtures" / "bank.sql"
CLOCK = datetime(2026, 1, 15, 10, 0)
REAL_CONNECT = sqlite3.connect


@pytest.fixture(autouse=True)
def no_pooled_databases() -> None:
    """Every environment here opens its files: none takes a pooled live database."""
    sqlite_live.POOL.drain()


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The backoff's sleeps, recorded instead of slept."""
    slept: list[float] = []
    monkeypatch.setattr(sqlite_env.time, "sleep", slept.append)
    return slept


def _connect_failing(monkeypatch: pytest.MonkeyPatch, times: float) -> list[str]:
    """``sqlite3.connect`` raising EMFILE the first *times* times it opens an environment's
    file (the run store and in-memory builds connect as usual); returns what it refused."""
    refused: list[str] = []

    def connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        ours = str(database).split("?")[0].endswith(".db") and "/env-" in str(database)
        if ours and len(refused) < times:
            refused.append(str(database))
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        return REAL_CONNECT(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    return refused


def test_emfile_twice_then_the_environment_opens(
    monkeypatch: pytest.MonkeyPatch, sleeps: list[float]
) -> None:
    refused = _connect_failing(monkeypatch, times=2)
    with SqliteEnvironment(FIXTURE, clock=CLOCK) as env:
        assert env.reset() and env.snapshot()
    assert len(refused) == 2
    assert sleeps == [OPEN_BACKOFF, 2 * OPEN_BACKOFF]


def test_emfile_every_time_is_an_environment_failure_at_setup(
    monkeypatch: pytest.MonkeyPatch, sleeps: list[float], bank: Suite
) -> None:
    refused = _connect_failing(monkeypatch, times=float("inf"))

    async def agent(session: Any) -> str:
        raise AssertionError("the agent never runs without an environment")

    run = attempt(bank, "transfer", FunctionAgent(agent)).run
    assert run.terminal_reason == "environment_failure/setup" and not run.valid
    message = run.infrastructure_status["exception"]["message"]
    assert "[Errno 24] EMFILE" in message and f"after {OPEN_TRIES} tries" in message
    assert len(refused) == OPEN_TRIES  # the first open that failed, tried OPEN_TRIES times
    assert sleeps == [OPEN_BACKOFF * 2**i for i in range(OPEN_TRIES - 1)]


def test_the_backoff_is_capped(monkeypatch: pytest.MonkeyPatch, sleeps: list[float]) -> None:
    monkeypatch.setattr(sqlite_env, "OPEN_TRIES", 12)

    def out_of_files() -> None:
        raise OSError(errno.ENFILE, os.strerror(errno.ENFILE))

    with pytest.raises(EnvironmentFailure, match=r"\[Errno 23\] ENFILE.*after 12 tries"):
        sqlite_env._opening(out_of_files)
    assert max(sleeps) == sqlite_env.OPEN_BACKOFF_MAX and len(sleeps) == 11
    assert sleeps == sorted(sleeps)


@pytest.mark.parametrize(
    "failure",
    [OSError(errno.ENOSPC, "No space left on device"), OSError(errno.EACCES, "denied")],
)
def test_other_failures_to_open_are_not_retried(sleeps: list[float], failure: OSError) -> None:
    def fail() -> None:
        raise failure

    with pytest.raises(OSError) as raised:
        sqlite_env._opening(fail)
    assert raised.value is failure and sleeps == []


def test_sqlite_cannot_open_for_another_reason_is_not_retried(
    tmp_path: Path, sleeps: list[float]
) -> None:
    # SQLITE_CANTOPEN says nothing of why: here the file is missing, not the descriptors.
    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        sqlite_env._evaluator_for(tmp_path / "missing.db")
    assert sleeps == []


@pytest.fixture
def exhausted() -> Iterator[Callable[[], None]]:
    """This process really out of descriptors (a lowered soft limit, filled); the function
    given releases them."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    held: list[int] = []

    def release() -> None:
        while held:
            os.close(held.pop())

    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 32, hard))
    try:
        while True:
            try:
                held.append(os.open(os.devnull, os.O_RDONLY))
            except OSError as exc:
                assert exc.errno == errno.EMFILE
                break
        yield release
    finally:
        release()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_real_fd_exhaustion_in_sqlite_is_recognised_and_waited_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exhausted: Callable[[], None]
) -> None:
    # SQLite reports it as SQLITE_CANTOPEN with no errno: the probe must tell it is EMFILE.
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 2:
            exhausted()  # another attempt closed its files meanwhile

    monkeypatch.setattr(sqlite_env.time, "sleep", sleep)
    connection = sqlite_env._opening(lambda: sqlite3.connect(tmp_path / "x.db"))
    connection.close()
    assert slept == [OPEN_BACKOFF, 2 * OPEN_BACKOFF]
