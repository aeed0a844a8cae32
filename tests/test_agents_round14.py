"""Adversarial in-process agents, fourteenth round: stops, time limits and isolation.

Process-wide state an agent changes is put back at its time limit as at its end (the umask,
the locale and the root logger's handlers too).
"""

from __future__ import annotations

import contextlib
import contextvars
import locale
import logging
import os
import resource
import sqlite3
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from groundstate import episode
from groundstate.agents.base import Session
from groundstate.environments import sqlite
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.spec.suite import Suite
from groundstate.testing import FunctionAgent, attempt

from .conftest import BANK, BLOCK, HANG, EditTask, time_limit
from .test_inprocess_adversarial import _do_the_task
from .test_lifecycle_round13 import _source_path


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def _settings() -> tuple[Any, ...]:
    """The process-wide settings an agent could change for the harness and later attempts."""
    environ = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}  # pytest's
    return (
        environ,
        {kind: resource.getrlimit(kind) for kind in (resource.RLIMIT_NOFILE, resource.RLIMIT_CPU)},
        list(warnings.filters),
        _umask(),
        locale.setlocale(locale.LC_ALL),
        list(logging.root.handlers),
        logging.root.level,
        logging.root.manager.disable,
    )


@pytest.fixture
def settings() -> Iterator[tuple[Any, ...]]:
    """The settings as the test found them; put back after it, whatever the agent left."""
    before = _settings()
    yield before
    environ, limits, filters, mask, where, handlers, level, disabled = before
    os.environ.update(environ)
    for name in set(os.environ) - {*environ, "PYTEST_CURRENT_TEST"}:
        del os.environ[name]
    for kind, limit in limits.items():
        resource.setrlimit(kind, limit)
    warnings.filters[:] = filters
    os.umask(mask)
    locale.setlocale(locale.LC_ALL, where)
    logging.root.handlers[:] = handlers
    logging.root.setLevel(level)
    logging.disable(disabled)


class _Blocking(logging.Handler):
    """A handler that holds every thread that logs until *release* is set."""

    def __init__(self, release: threading.Event) -> None:
        super().__init__()
        self.release = release

    def emit(self, record: logging.LogRecord) -> None:
        self.release.wait(BLOCK)


def _change_settings(release: threading.Event) -> None:
    os.umask(0o777)
    locale.setlocale(locale.LC_ALL, "C")
    logging.root.addHandler(_Blocking(release))
    logging.root.setLevel(logging.DEBUG)
    logging.disable(logging.NOTSET)


def _change_everything(release: threading.Event) -> None:
    os.environ["GROUNDSTATE_TMPDIR"] = os.devnull
    os.environ["HTTPS_PROXY"] = "http://127.0.0.1:9"
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")), hard))
    warnings.simplefilter("error")
    _change_settings(release)


def test_process_settings_an_agent_changed_are_put_back_at_its_time_limit(
    edited_bank: EditTask, settings: tuple[Any, ...]
) -> None:
    """Settings were put back as the agent's run ended, by its own thread: one stopped at its
    time limit (still blocked) kept its environment variables, lowered descriptor limit and
    warning filters for its own grading (the initial state could not be opened: a
    ``grader_failure``, an invalid attempt) and every later attempt (whose environment could
    not be built), for as long as its thread ran. They are put back as it is given up."""
    # the agent's work and its changes must fit before the limit: at 0.5 s, on a loaded
    # machine, the limit could strike before the changes, and nothing was put back
    suite = edited_bank(lambda task: task.update(time_limit=2))
    release, changed = threading.Event(), threading.Event()

    async def changes_then_blocks(session: Session) -> str:
        await _do_the_task(session)
        _change_everything(release)
        changed.set()
        release.wait(BLOCK)
        return "Done."

    try:
        run = attempt(suite, "transfer", FunctionAgent(changes_then_blocks)).run
        assert changed.is_set()
        assert _settings() == settings
        assert run.terminal_reason == "agent_failure/time_limit", run.infrastructure_status
        with time_limit(suite, "transfer", HANG):
            assert attempt(suite, "transfer", FunctionAgent(_do_the_task)).run.success
    finally:
        release.set()


def test_umask_locale_and_logging_an_agent_set_are_put_back(
    bank: Suite, settings: tuple[Any, ...]
) -> None:
    """A umask of 0o777 made every file the harness created later unreadable to it (the next
    environment's database: an invalid attempt); the C locale made text opened without an
    encoding ASCII; a blocking handler on the root logger held every thread that logged
    later (a check's HTTP client, a model adapter), the harness's included."""
    release = threading.Event()

    async def changes(session: Session) -> str:
        _change_settings(release)
        return await _do_the_task(session)

    try:
        assert attempt(bank, "transfer", FunctionAgent(changes)).run.success
        assert _settings() == settings
        assert attempt(bank, "transfer", FunctionAgent(_do_the_task)).run.success
    finally:
        release.set()


# --- what a program using the Python API waits for as it exits -------------------------------

LEAVES_THREADS = f"""
import concurrent.futures, threading, time
from groundstate.spec.suite import load_suite
from groundstate.testing import FunctionAgent, attempt


async def leaves_threads(session):
    threading.Thread(target=time.sleep, args=({BLOCK},), name="left", daemon=False).start()
    concurrent.futures.ThreadPoolExecutor(1, "own-pool").submit(time.sleep, {BLOCK})
    return "Done."


run = attempt(load_suite({str(BANK)!r}), "transfer", FunctionAgent(leaves_threads)).run
print(run.terminal_reason)
"""


def test_a_program_using_the_api_ends_without_the_threads_an_agent_left() -> None:
    """Only ``groundstate run`` ended without waiting for what an agent left (it ends with
    ``os._exit``): a program running attempts through the Python API waited at its end for a
    thread the agent started with ``daemon=False``, and for an executor of its own at work,
    for as long as they ran. Such threads are now left out of the joins Python makes at exit."""
    done = subprocess.run(
        [sys.executable, "-c", LEAVES_THREADS],
        capture_output=True,
        text=True,
        timeout=BLOCK - 30,  # the left threads sleep BLOCK seconds: waited for, this fails
        env={**os.environ, "PYTHONPATH": _source_path()},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "agent_failure/incorrect_state"


# --- the harness's constants ----------------------------------------------------------------


async def _reads_the_forbidden_table(session: Session) -> str:
    """Reads the audit table, which the transfer task forbids (its permissions: ``none``)."""
    await session.call("read_audit", {})
    return await _do_the_task(session)


def test_the_authorizers_tables_cannot_be_changed_in_place(bank: Suite) -> None:
    """The SQLite authorizer's actions taken as harmless were a module-level ``set``: an agent
    that added reads to it read the audit table its task forbids, and passed (``success``
    where the read was a prohibited action), as did every later agent in the process."""

    async def loosens(session: Session) -> str:
        with contextlib.suppress(AttributeError):
            sqlite._HARMLESS.add(sqlite3.SQLITE_READ)  # type: ignore[attr-defined]
        return await _reads_the_forbidden_table(session)

    run = attempt(bank, "transfer", FunctionAgent(loosens)).run
    assert run.terminal_reason == "agent_failure/prohibited_action"
    run = attempt(bank, "transfer", FunctionAgent(_reads_the_forbidden_table)).run
    assert run.terminal_reason == "agent_failure/prohibited_action"


@pytest.mark.parametrize(
    "rebind",
    [
        lambda: setattr(sqlite, "_HARMLESS", sqlite._HARMLESS | {sqlite3.SQLITE_READ}),
        lambda: setattr(sqlite, "_IN_CALL", contextvars.ContextVar("forged")),
        lambda: setattr(episode, "USER_SHARE", 0.0),
    ],
    ids=["authorizer-table", "call-marker", "episode-limit"],
)
def test_a_harness_constant_an_agent_rebinds_is_put_back_and_stops_it(
    bank: Suite, rebind: Callable[[], None]
) -> None:
    """Only the harness's code (functions, classes, methods) was watched: a constant rebound
    (a looser authorizer table, another ``_IN_CALL`` marker, a share of the time limit) went
    unseen and stayed for every later attempt. Constants (frozen values named in capitals)
    are watched as code is: put back, and the attempt stopped at stage ``harness_code``."""
    before = sqlite._HARMLESS, sqlite._IN_CALL, episode.USER_SHARE

    async def rebinds(session: Session) -> str:
        rebind()
        return await _do_the_task(session)

    run = attempt(bank, "transfer", FunctionAgent(rebinds)).run
    assert run.terminal_reason == "agent_failure/prohibited_action"
    assert run.infrastructure_status["stop"]["stage"] == "harness_code"
    assert before == (sqlite._HARMLESS, sqlite._IN_CALL, episode.USER_SHARE)
    run = attempt(bank, "transfer", FunctionAgent(_reads_the_forbidden_table)).run
    assert run.terminal_reason == "agent_failure/prohibited_action"
    assert attempt(bank, "transfer", FunctionAgent(_do_the_task)).run.success


def test_an_environment_failure_the_agents_tampering_caused_is_not_an_invalid_attempt(
    bank: Suite,
) -> None:
    """An agent that rebinds the harness's code so that its tool calls crash latched a
    ``tool_crash`` first: the rebinding, found as the agent ended, could not take its place,
    and the attempt was an invalid one (``environment_failure``), rerun: a failing agent's
    way to another try. The finding of tampering outranks a failure of the environment."""

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk I/O error")

    async def breaks_its_tools(session: Session) -> str:
        SqliteEnvironment.tool_transaction = broken  # type: ignore[method-assign]
        await session.call("balance", {"account": "A"})
        return "Done."

    run = attempt(bank, "transfer", FunctionAgent(breaks_its_tools)).run
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert run.infrastructure_status["stop"]["stage"] == "harness_code"
    assert attempt(bank, "transfer", FunctionAgent(_do_the_task)).run.success
