"""Agents, twenty-seventh round: an in-process agent holding its attempt, or the batch, by
breaking what the harness waits with.

The attempt's wait for its agent was ``asyncio.wait`` on the agent's future and the alarm's:
done callbacks. An agent that found the pending futures through ``gc`` and took their
callbacks out (``remove_done_callback``), then blocked, held its attempt for ever (and the
loop running it: ``run_until_complete`` ends its loop with a done callback too); the alarm
itself went through a queue every attempt of the process shared, which an agent beside it
could drain first. Now the wait (:func:`groundstate.alarms.settled_by`) is woken by a thread
of its own that holds what it wakes in its frame's locals and looks again every second;
the batch waits for its tries the same way. (``run_until_complete``'s own done callback
taken out still leaves the loop running: not covered here.)
``asyncio``'s classes were outside the rebinding watch (an agent that
set ``BaseEventLoop.call_at`` to do nothing went unnamed), and ``threading``'s were never put
back (``threading.Event.wait`` made to block held the harness's next thread start for ever).

Each test runs its attempt in a thread of its own and waits for it a bounded time (a hang
fails the test instead of hanging the suite), then runs an honest attempt, which passes."""

from __future__ import annotations

import asyncio
import asyncio.base_events
import contextlib
import gc
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from groundstate import alarms
from groundstate.agents.base import Session
from groundstate.records import AgentRun
from groundstate.runner import _all_of
from groundstate.spec.suite import Suite
from groundstate.testing import FunctionAgent, attempt

from .test_agents_round26 import LIMIT, WAIT, _within
from .test_inprocess_adversarial import _do_the_task

pytestmark = pytest.mark.timeout(300)

_LOOP = asyncio.base_events.BaseEventLoop
KEPT: dict[tuple[Any, str], Any] = {
    (_LOOP, "call_soon_threadsafe"): _LOOP.call_soon_threadsafe,
    (_LOOP, "call_at"): _LOOP.call_at,
    (threading.Event, "wait"): threading.Event.wait,
}
"""What these agents rebind, put back after each test as the very objects (the watch
compares identity)."""


@pytest.fixture
def released() -> Iterator[threading.Event]:
    """What the blocking agents wait for: set as the test ends, and what they rebound put
    back."""
    event = threading.Event()
    try:
        yield event
    finally:
        for (owner, name), value in KEPT.items():
            setattr(owner, name, value)
        event.set()


def _strips_every_callback(released: threading.Event) -> None:
    """Takes the done callbacks out of every pending future of the process (but the one
    ``run_until_complete`` ends its loop with: still open, see docs/reliability.md)."""
    _strips(asyncio.Future)


def _strips(kind: type) -> None:
    for one in gc.get_objects():
        if isinstance(one, kind) and not one.done():
            for callback, _ in list(one._callbacks or ()):
                if getattr(callback, "__name__", "") != "_run_until_complete_cb":
                    one.remove_done_callback(callback)


def _strips_the_tasks_callbacks() -> None:
    """Takes the done callbacks out of every pending task of the process (``gather``'s)."""
    _strips(asyncio.Task)


def _keeps_draining(released: threading.Event) -> None:
    """A thread of its own empties every thread-safe queue of the process until the test
    ends (as an agent beside another attempt would take that attempt's alarm)."""

    queues = [one for one in gc.get_objects() if type(one) is queue.SimpleQueue]

    def drain() -> None:
        while not released.is_set():
            for one in queues:
                with contextlib.suppress(queue.Empty):
                    while True:
                        one.get_nowait()
            released.wait(0.01)

    threading.Thread(target=drain, daemon=True).start()


def _silences_call_soon_threadsafe(released: threading.Event) -> None:
    _LOOP.call_soon_threadsafe = lambda *a, **k: None  # type: ignore[method-assign]


HOLDERS: dict[str, Callable[[threading.Event], None]] = {
    "strips_every_callback": _strips_every_callback,
    "keeps_draining": _keeps_draining,
    "silences_call_soon_threadsafe": _silences_call_soon_threadsafe,
}


def _then_blocks(hold: Callable[[threading.Event], None], released: threading.Event) -> Any:
    async def agent(session: Session) -> str:
        await _do_the_task(session)
        hold(released)
        released.wait()  # blocks its thread (and its loop) until the test is over
        return "Moved 30 from A to B."

    return agent


def _honest(suite: Suite) -> AgentRun:
    return attempt(suite, "transfer", FunctionAgent(_do_the_task)).run


@pytest.mark.parametrize("how", sorted(HOLDERS))
def test_an_agent_cannot_hold_its_attempt_past_the_limit(
    how: str, edited_bank: Any, released: threading.Event
) -> None:
    """The agent does the task, breaks what the harness waits with (*how*), then blocks.
    Before: the attempt waited for it (here: until the test's own wait ran out)."""
    suite = edited_bank(lambda t: t.update(time_limit=LIMIT))
    run = _within(suite, _then_blocks(HOLDERS[how], released))
    for (owner, name), value in KEPT.items():
        setattr(owner, name, value)
    assert run is not None, f"the attempt outlived its limit of {LIMIT}s by {WAIT}s"
    assert run.terminal_reason == "agent_failure/time_limit", run.infrastructure_status
    honest = _honest(suite)
    assert honest.terminal_reason == "success", honest.infrastructure_status


def test_an_agent_rebinding_asyncio_s_loop_methods_is_named(
    edited_bank: Any, released: threading.Event
) -> None:
    """``BaseEventLoop.call_at`` set to do nothing (every later timer of every loop
    dropped). Before: unnamed, a ``success``."""
    suite = edited_bank(lambda t: t.update(time_limit=LIMIT))

    async def agent(session: Session) -> str:
        answer = await _do_the_task(session)
        _LOOP.call_at = lambda *a, **k: None  # type: ignore[method-assign]
        return answer

    run = _within(suite, agent)
    assert run is not None
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert (
        "asyncio.base_events.BaseEventLoop.call_at" in run.infrastructure_status["harness_rebound"]
    )
    assert _LOOP.call_at is KEPT[(_LOOP, "call_at")]  # put back
    honest = _honest(suite)
    assert honest.terminal_reason == "success", honest.infrastructure_status


def test_threading_s_classes_are_put_back(edited_bank: Any, released: threading.Event) -> None:
    """``threading.Event.wait`` made to block, and the agent returns. Before: the harness's
    next thread start (``Thread.start`` waits with it) blocked, and the attempt never
    ended."""
    suite = edited_bank(lambda t: t.update(time_limit=LIMIT))
    real = KEPT[(threading.Event, "wait")]

    async def agent(session: Session) -> str:
        answer = await _do_the_task(session)
        threading.Event.wait = (  # type: ignore[method-assign]
            lambda self, timeout=None: real(released) if self is not released else real(self)
        )
        return answer

    run = _within(suite, agent)
    assert run is not None, "the attempt never ended"
    assert threading.Event.wait is real
    assert run.terminal_reason == "success", run.infrastructure_status  # the task, done
    honest = _honest(suite)
    assert honest.terminal_reason == "success", honest.infrastructure_status


# --- the waits themselves ----------------------------------------------------------------


def test_a_wait_ends_at_its_time_with_every_callback_taken_out() -> None:
    """A future never settled, its callbacks (and every other pending future's) taken out
    by another thread as the wait begins: the wait still ends at its time."""

    async def main() -> tuple[bool, float]:
        loop = asyncio.get_running_loop()
        never: asyncio.Future[None] = loop.create_future()
        stripper = threading.Thread(target=_strips_every_callback, args=(threading.Event(),))
        loop.call_soon(stripper.start)
        started = alarms.CLOCK()
        done = await alarms.settled_by(never, started + 0.3)
        return done, alarms.CLOCK() - started

    done, took = asyncio.run(main())
    assert not done
    assert 0.29 <= took < 5


def test_a_wait_sees_its_future_settle_without_its_callback() -> None:
    """The future settles with its done callbacks taken out: seen within a poll."""

    async def main() -> tuple[bool, float]:
        loop = asyncio.get_running_loop()
        soon: asyncio.Future[None] = loop.create_future()
        started = alarms.CLOCK()
        loop.call_later(
            0.1, lambda: (_strips_every_callback(threading.Event()), soon.set_result(None))
        )
        done = await alarms.settled_by(soon, started + 60)
        return done, alarms.CLOCK() - started

    done, took = asyncio.run(main())
    assert done
    assert took < alarms.POLL_SECONDS + 3


def test_the_batch_waits_for_its_tries_without_their_callbacks() -> None:
    """The tries' done callbacks (``gather``'s) taken out by one of them: the batch's wait
    for them all still ends, each having run. (Not the callbacks of what the other tries
    await, a sleep here: without them nothing wakes those tries; see docs/reliability.md.)"""
    ran: list[int] = []

    async def one(i: int) -> None:
        await asyncio.sleep(0.05 * i)
        if i == 0:
            _strips_the_tasks_callbacks()
        await asyncio.sleep(0.1)
        ran.append(i)

    async def main() -> None:
        await _all_of(one(i) for i in range(3))

    thread = threading.Thread(target=lambda: asyncio.run(main()), daemon=True)
    thread.start()
    thread.join(20)
    assert sorted(ran) == [0, 1, 2]
    assert not thread.is_alive()


def test_a_wait_in_a_loop_of_someone_s_own_class_ends() -> None:
    """A loop class of the caller's own (a subclass: its methods settable): the wait still
    sees its future settle, and ends at its time."""

    class OwnLoop(asyncio.SelectorEventLoop):
        pass

    async def main() -> tuple[bool, bool]:
        loop = asyncio.get_running_loop()
        soon: asyncio.Future[None] = loop.create_future()
        never: asyncio.Future[None] = loop.create_future()
        loop.call_later(0.05, soon.set_result, None)
        settled = await alarms.settled_by(soon, alarms.CLOCK() + 60)
        timed_out = await alarms.settled_by(never, alarms.CLOCK() + 0.1)
        return settled, timed_out

    result: list[tuple[bool, bool]] = []
    runner = asyncio.Runner(loop_factory=OwnLoop)
    thread = threading.Thread(target=lambda: result.append(runner.run(main())), daemon=True)
    thread.start()
    thread.join(20)
    runner.close()
    assert result == [(True, False)]


def test_a_wait_cancelled_raises_at_once() -> None:
    """The waiting task cancelled (a batch interrupted): it raises ``CancelledError`` at
    once, not at its time, and its ring's thread leaves."""

    async def main() -> float:
        loop = asyncio.get_running_loop()
        never: asyncio.Future[None] = loop.create_future()
        waiting = asyncio.ensure_future(alarms.settled_by(never, alarms.CLOCK() + 60))
        await asyncio.sleep(0.05)
        started = alarms.CLOCK()
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        assert waiting.cancelled()
        return alarms.CLOCK() - started

    assert asyncio.run(main()) < 5
    deadline = alarms.CLOCK() + 5
    while any(t.name == "groundstate-ring" for t in threading.enumerate()):
        assert alarms.CLOCK() < deadline, "a ring's thread outlived its wait"
        threading.Event().wait(0.05)


def test_marking_the_watch_survives_a_thread_listing_every_object() -> None:
    """A thread (an agent's, left running) calling ``gc.get_objects()`` over and over while
    the harness copies the watched namespaces (``HARNESS.mark()``, as each attempt starts).
    Before: ``SystemError: Objects/tupleobject.c:927`` about one mark in four (a tuple being
    built, resized, while the other thread held a reference to it), and the attempt raised
    instead of being recorded."""
    from groundstate.bindings import HARNESS

    HARNESS.refresh()
    stop = threading.Event()

    def lists() -> None:
        while not stop.is_set():
            gc.get_objects()

    thread = threading.Thread(target=lists, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            HARNESS._row().marked = None  # every namespace copied again, as at the first
            HARNESS.mark()
    finally:
        stop.set()
        thread.join(10)
