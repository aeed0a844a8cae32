"""Agents, twenty-sixth round: an in-process agent silencing the hard time limit.

The attempt's time limit rings from :mod:`groundstate.alarms`: one daemon thread waiting on
the C library's clock for the earliest alarm due. What it rang and when was Python data an
agent could reach (``gc.get_objects()``, or ``groundstate.alarms.ALARMS`` itself) and
write: an agent that set its ``Alarm``'s ``cancelled``, emptied the alarms' heap
(``ALARMS._due``), put its deadline an hour later, or took the lock the ringing thread waits
with, and then blocked, held its attempt, and the batch, for as long as it blocked. Now the
alarms are held where no Python code reaches them (the ringing thread's own local
variables, as tuples) and are given to it through a C queue; nothing cancels one (a ring
for an attempt already over does nothing), and there is no lock to hold.

Each test runs its attempt in a thread of its own and waits for it a bounded time: a hang
fails the test instead of hanging the suite; the agent blocks on an event the test sets
afterwards, so no thread stays blocked."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import groundstate.alarms
import groundstate.episode
from groundstate.agents.base import Session
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite
from groundstate.testing import FunctionAgent, attempt

from .test_inprocess_adversarial import _do_the_task

pytestmark = pytest.mark.timeout(300)

LIMIT = 2
"""The task's time limit in these tests (seconds)."""

WAIT = 40.0
"""How long a test waits for an attempt that should end at its limit (a loaded machine)."""


@pytest.fixture
def released() -> Iterator[threading.Event]:
    """What the blocking agents wait for: set as the test ends, so no thread stays blocked."""
    event = threading.Event()
    try:
        yield event
    finally:
        event.set()


def _within(suite: Suite, agent: Any, seconds: float = WAIT) -> AgentRun | None:
    """The attempt's record, or None when it had not ended after *seconds*."""
    runs: list[AgentRun] = []

    def go() -> None:
        runs.append(attempt(suite, "transfer", FunctionAgent(agent)).run)

    thread = threading.Thread(target=go, name="round26-attempt", daemon=True)
    thread.start()
    thread.join(seconds)
    return runs[0] if runs else None


def _alarms_of_the_harness() -> list[Any]:
    return [
        one
        for one in gc.get_objects()
        if type(one).__name__ == "Alarm" and type(one).__module__ == "groundstate.alarms"
    ]


def _cancels(released: threading.Event) -> None:
    for alarm in _alarms_of_the_harness():
        alarm.cancelled = True


def _empties(released: threading.Event) -> None:
    due = getattr(groundstate.alarms.ALARMS, "_due", None)
    if isinstance(due, list):
        due.clear()


def _postpones(released: threading.Event) -> None:
    due = getattr(groundstate.alarms.ALARMS, "_due", None)
    if isinstance(due, list):
        due[:] = [(when + 3600.0, *rest) for when, *rest in due]


def _holds_the_lock(released: threading.Event) -> None:
    """Takes the lock the ringing thread waits with, in a thread of its own that lets it go
    once the test is over."""
    wake = getattr(groundstate.alarms.ALARMS, "_wake", None)
    if wake is None:
        return
    taken = threading.Event()

    def hold() -> None:
        with wake:
            taken.set()
            released.wait()

    threading.Thread(target=hold, daemon=True).start()
    taken.wait(5)


def _rebinds_the_heap(released: threading.Event) -> None:
    alarms = groundstate.alarms.ALARMS
    if hasattr(alarms, "_due"):
        alarms._due = []


def _drains_the_queues(released: threading.Event) -> None:
    """What an agent finds without the names: every thread-safe queue emptied, every list
    of tuples of the alarms module's emptied."""
    for one in gc.get_objects():
        if type(one) is queue.SimpleQueue:
            with contextlib.suppress(queue.Empty):
                while True:
                    one.get_nowait()
        elif type(one) is list and any(
            type(entry) is tuple and any(type(p).__module__ == "groundstate.alarms" for p in entry)
            for entry in one
        ):
            one.clear()


class _Stuck(asyncio.SelectorEventLoop):
    """A loop of the agent's whose ``call_soon_threadsafe`` blocks (the ringing thread)."""

    released: threading.Event

    def call_soon_threadsafe(self, *args: Any, **kwargs: Any) -> Any:
        self.released.wait()
        return super().call_soon_threadsafe(*args, **kwargs)


def _blocks_the_ringing_thread(released: threading.Event) -> None:
    """Hands the alarms something that blocks when rung: a function of its own, as the
    alarms took before, and a future of a loop of its own, put in the alarms' queue (as
    the thread takes them)."""
    alarms = groundstate.alarms.ALARMS
    with contextlib.suppress(Exception):  # the API takes no callable now
        alarms.set(0.0, released.wait)  # type: ignore[arg-type]
    loop = _Stuck()
    loop.released = released
    future = loop.create_future()
    inbox = getattr(alarms, "_inbox", None)
    if inbox is not None:
        inbox.put((0.0, -1, future))
        inbox.put((float("inf"), -2, future))
    time.sleep(0.5)  # the ringing thread is stuck now, if it rings what it was given


SILENCERS: dict[str, Callable[[threading.Event], None]] = {
    "cancels": _cancels,
    "empties": _empties,
    "postpones": _postpones,
    "holds_the_lock": _holds_the_lock,
    "rebinds_the_heap": _rebinds_the_heap,
    "drains_the_queues": _drains_the_queues,
    "blocks_the_ringing_thread": _blocks_the_ringing_thread,
}


def _silences_then_blocks(
    silence: Callable[[threading.Event], None], released: threading.Event
) -> Any:
    async def agent(session: Session) -> str:
        await _do_the_task(session)
        silence(released)
        released.wait()  # blocks its thread (and its loop) until the test is over
        return "done"

    return agent


@pytest.mark.parametrize("how", sorted(SILENCERS))
def test_an_agent_cannot_silence_its_time_limit(
    how: str, edited_bank: Any, released: threading.Event
) -> None:
    """The agent does the task, silences its alarm (*how*), then blocks. Before: the attempt
    waited for it (here: until the test's own wait ran out; in a batch, for ever)."""
    suite = edited_bank(lambda t: t.update(time_limit=LIMIT))
    run = _within(suite, _silences_then_blocks(SILENCERS[how], released))
    assert run is not None, f"the attempt outlived its limit of {LIMIT}s by {WAIT}s"
    assert run.terminal_reason == "agent_failure/time_limit", run.infrastructure_status


# --- the session's lock and the wait at its end --------------------------------------------


def _the_session(session: Session) -> Any:
    """The episode's own session behind the one the agent is handed (found through gc)."""
    for one in gc.get_referents(session):
        if type(one).__name__ == "EpisodeSession":
            return one
    raise AssertionError("no session found")


class _NeverLock:
    """A lock that is always taken and whose ``acquire`` waits for the test's end."""

    def __init__(self, released: threading.Event) -> None:
        self.released = released

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        self.released.wait()
        return False

    def locked(self) -> bool:
        return True

    def release(self) -> None:
        pass


def _swaps_the_lock(released: threading.Event) -> Any:
    async def agent(session: Session) -> str:
        await _do_the_task(session)
        _the_session(session)._lock = _NeverLock(released)
        return "Moved 30 from A to B."

    return agent


def _holds_the_lock_longer(released: threading.Event) -> Any:
    """Holds the session's lock in a thread of its own and makes the episode's wait for a
    call in flight an hour long (``END_WAIT``, the session's time limit), then returns."""

    async def agent(session: Session) -> str:
        await _do_the_task(session)
        inner = _the_session(session)
        taken = threading.Event()

        def hold() -> None:
            with inner._lock:
                taken.set()
                released.wait()

        threading.Thread(target=hold, daemon=True).start()
        taken.wait(5)
        groundstate.episode.END_WAIT = 3600.0
        inner._task = inner._task.model_copy(update={"time_limit": 3600})
        return "Moved 30 from A to B."

    return agent


@pytest.mark.parametrize("make", [_swaps_the_lock, _holds_the_lock_longer])
def test_an_agent_cannot_make_the_end_of_its_session_wait_for_ever(
    make: Any, edited_bank: Any, released: threading.Event
) -> None:
    suite = edited_bank(lambda t: t.update(time_limit=LIMIT))
    kept = groundstate.episode.END_WAIT  # the very object the watch holds: an equal float
    try:  # put in its place would be a rebinding the next attempt is failed for
        run = _within(suite, make(released))
    finally:
        groundstate.episode.END_WAIT = kept
    assert run is not None, f"the attempt outlived its limit of {LIMIT}s by {WAIT}s"
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    message = str(run.infrastructure_status["exception"]["message"])
    assert "session._lock" in message or "END_WAIT" in message, message
