"""Agents, thirty-sixth round: an in-process agent that rebinds the standard library's
classes the harness waits, starts threads and selects with. ``threading.Thread.start`` waits
on an ``Event`` its new thread sets: an agent that set ``threading.Event.set`` to drop the
call held every thread started after it, the harness's own (the loop threads agents run on,
the alarms', a loop's executor), so its attempt, every other and the batch, for ever. One
that set ``selectors.EpollSelector.select`` to block held every event loop entering it.
The harness now puts those classes (``threading``'s, ``queue``'s, ``selectors``',
``concurrent.futures``') and the names of their modules back as it puts back ``asyncio``'s
wake path, and before it starts a thread; the rebinding is named, and the attempt recorded
as a prohibited action, whether the agent returned or blocked to its time limit (before, a
blocking rebinder was recorded as ``time_limit``, its rebinding in the evidence)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import selectors
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.testing import FunctionAgent, attempt

from .conftest import HANG
from .test_agents_round33 import PROHIBITED, _batch, _do_the_task, _Restore

pytestmark = pytest.mark.timeout(120)

_base = asyncio.base_events.BaseEventLoop
_SELECTOR = type(selectors.DefaultSelector())  # this platform's (epoll here)


def _dropped(*args: Any, **kwargs: Any) -> None:
    return None


REBOUND = [
    (threading.Event, "set"),
    (threading.Event, "wait"),
    (threading.Condition, "notify_all"),
    (threading.Condition, "wait"),
    (threading.Thread, "start"),
    (threading.Thread, "_bootstrap_inner"),
    (queue.Queue, "put"),
    (queue.Queue, "get"),
    (concurrent.futures.Future, "set_result"),
    (concurrent.futures.ThreadPoolExecutor, "submit"),
    (threading, "_start_new_thread"),
    (threading, "Lock"),
    (selectors, "DefaultSelector"),
]


def _name(value: Any) -> str:
    return getattr(value, "__name__", str(value))


@pytest.mark.parametrize("ends", ["blocks", "returns"])
@pytest.mark.parametrize(("owner", "name"), REBOUND, ids=_name)
def test_an_agent_rebinding_what_the_harness_waits_with_is_recorded_for_it(
    edited_bank: Any, release: threading.Event, owner: Any, name: str, ends: str
) -> None:
    """Before: ``Event.set`` (either way), ``Condition.notify_all``, ``Thread.start``,
    ``_bootstrap_inner`` or ``_start_new_thread`` dropped held the attempt for ever (the
    harness's next thread never started); the others were put back unnamed, or left for
    the next attempts (``queue.Queue.put`` dropped, ``selectors.DefaultSelector``)."""
    suite = edited_bank(lambda t: t.update(time_limit=1))
    restore = _Restore(owner, name) if isinstance(owner, type) else None
    first = vars(owner)[name]

    async def rebinds(session: Session) -> str:
        setattr(owner, name, _dropped)
        if ends == "blocks":
            release.wait(HANG)  # (Event.wait dropped: returns at once; Lock: taken already)
            while not release.is_set():  # so, blocking all the same
                time.sleep(0.01)
        return "done"

    outcome: list[Any] = []

    def run() -> None:
        outcome.append(attempt(suite, "transfer", FunctionAgent(rebinds)).run)

    runner = threading.Thread(target=run, daemon=True)  # started before the rebinding
    try:
        runner.start()
        runner.join(HANG)
        after = vars(owner).get(name)
    finally:
        if restore is not None:
            restore.undo()
        else:
            setattr(owner, name, first)
        release.set()
    runner.join(HANG)
    assert outcome, "the attempt did not end"
    (run_,) = outcome
    assert run_.terminal_reason == PROHIBITED, run_.infrastructure_status
    where = f"{owner.__qualname__ if isinstance(owner, type) else owner.__name__}.{name}"
    assert where in str(run_.infrastructure_status.get("harness_rebound")), where
    assert after is first


def test_an_agent_setting_the_loops_select_to_block_is_recorded_for_it(
    edited_bank: Any, release: threading.Event
) -> None:
    """Every loop entering ``select`` blocked while the agent's own did. Before: the episode
    ended only as the agent was released (at the test's end, or never)."""
    suite = edited_bank(lambda t: t.update(time_limit=1))
    restore = _Restore(_SELECTOR, "select")

    def blocks(self: Any, timeout: Any = None) -> list[Any]:
        release.wait(HANG)
        return []

    async def rebinds(session: Session) -> str:
        _SELECTOR.select = blocks  # type: ignore[method-assign]
        release.wait(HANG)
        return "done"

    started = time.monotonic()
    try:
        run = attempt(suite, "transfer", FunctionAgent(rebinds)).run
        after = restore.now()
    finally:
        restore.undo()
        release.set()
    assert time.monotonic() - started < HANG / 2
    assert run.terminal_reason == PROHIBITED, run.infrastructure_status
    assert "select" in str(run.infrastructure_status.get("harness_rebound"))
    assert after is restore.first


def test_a_blocking_rebinder_of_the_wake_path_is_a_prohibited_action(
    edited_bank: Any, release: threading.Event
) -> None:
    """As one that returns at once (round 33). Before: ``time_limit`` (the limit was
    latched first; the rebinding, found after it, only in the evidence)."""
    suite = edited_bank(lambda t: t.update(time_limit=0.5))
    restore = _Restore(_base, "call_soon_threadsafe")

    async def drops_then_blocks(session: Session) -> str:
        _base.call_soon_threadsafe = _dropped  # type: ignore[method-assign]
        release.wait(HANG)
        return "done"

    try:
        run = attempt(suite, "transfer", FunctionAgent(drops_then_blocks)).run
    finally:
        restore.undo()
        release.set()
    assert run.terminal_reason == PROHIBITED, run.infrastructure_status


@pytest.mark.parametrize(
    ("owner", "name"),
    [(threading.Event, "set"), (_SELECTOR, "select"), (queue.Queue, "put")],
    ids=_name,
)
def test_a_batch_with_an_agent_blocking_what_the_harness_waits_with_ends(
    edited_bank: Any, tmp_path: Path, release: threading.Event, owner: type, name: str
) -> None:
    """Three attempts at once; the first to start rebinds (to drop the call, or ``select`` to
    block) and blocks to its 3 s limit, the other two then do the task. Before
    (``Event.set``): the batch never ended."""
    suite = edited_bank(lambda t: t.update(time_limit=3))
    restore = _Restore(owner, name)
    first: list[int] = []
    rebound: list[bool] = []  # (not an Event: its set may be dropped)
    lock = threading.Lock()

    def blocks(*args: Any, **kwargs: Any) -> list[Any]:
        release.wait(HANG)
        return []

    async def agent(session: Session) -> str:
        if session.seed == 0:  # the start's check of the system (not an attempt)
            return await _do_the_task(session)
        with lock:
            bad = not first
            first.append(session.seed)
        if bad:
            setattr(owner, name, blocks if name == "select" else _dropped)
            rebound.append(True)
            release.wait(HANG)
            return "done"
        while not rebound and not release.is_set():
            time.sleep(0.01)
        return await _do_the_task(session)

    outcome: list[Any] = []
    runner = threading.Thread(
        target=lambda: outcome.append(_batch(suite, tmp_path, agent, 3)), daemon=True
    )
    try:
        runner.start()
        runner.join(HANG)
    finally:
        restore.undo()
        release.set()
    runner.join(HANG)
    assert outcome, "the batch did not end"
    (stored,) = outcome
    assert len(stored) == 3, stored
    assert stored.pop(first[0]) == PROHIBITED, stored
    assert set(stored.values()) <= {"success", PROHIBITED}, stored


def test_a_select_set_on_the_episode_s_loop_s_selector_is_taken_off(
    edited_bank: Any, release: threading.Event
) -> None:
    """The agent sets ``select`` on the selector object of the episode's loop (found
    through the garbage collector) to block, then blocks."""
    import gc

    # 4 s, not 1: on a crowded machine the attempt could reach its limit before the agent ran
    # its first line (CI 51a: nothing found)
    suite = edited_bank(lambda t: t.update(time_limit=4))
    found: list[Any] = []

    def blocks(timeout: Any = None) -> list[Any]:
        release.wait(HANG)
        return []

    async def sets_then_blocks(session: Session) -> str:
        own = asyncio.get_running_loop()
        for obj in gc.get_objects():
            if isinstance(obj, asyncio.BaseEventLoop) and obj is not own and not obj.is_closed():
                selector = obj._selector  # type: ignore[attr-defined]
                selector.select = blocks
                found.append(selector)
        release.wait(HANG)
        return "done"

    started = time.monotonic()
    try:
        run = attempt(suite, "transfer", FunctionAgent(sets_then_blocks)).run
    finally:
        for selector in found:
            vars(selector).pop("select", None)
        release.set()
    assert found
    assert time.monotonic() - started < HANG / 2
    assert run.terminal_reason == PROHIBITED, run.infrastructure_status
    assert "selector's own select" in str(run.infrastructure_status.get("harness_rebound"))
