"""Agents, thirty-third round: an in-process agent that sets ``asyncio``'s loop wake-up
methods (``BaseEventLoop.call_soon_threadsafe``...) to drop the call. Round 32 had the alarm
of its own time limit put them back; until then every callback handed to a loop from another
thread was dropped: the end of an agent's run, in its attempt or in any other, and the end of
an attempt, which the batch waits for without an alarm. An agent that did so and returned at
once was held to its limit and recorded as ``time_limit``; an honest agent beside it that
returned meanwhile was recorded as ``time_limit`` too; an attempt that ended meanwhile held
the batch for ever. The harness now puts the wake path back before each callback it hands
to a loop from another thread (an agent's end, an attempt's end, a wait in a thread)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.episode import AttemptInfo, run_attempt
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.spec.suite import Suite
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, attempt, scripted_system

from .conftest import BLOCK, HANG
from .test_adversarial_agents import _in_thread, _wait_for
from .test_adversarial_agents import slow_bank as slow_bank  # a fixture

pytestmark = pytest.mark.timeout(120)

PROHIBITED = "agent_failure/prohibited_action"

_base = asyncio.base_events.BaseEventLoop
_selector = asyncio.selector_events.BaseSelectorEventLoop

DROPPED = [(_base, "call_soon_threadsafe"), (_selector, "_write_to_self")]
"""(``_call_soon`` dropped stops the agent's own loop from ending its run: it blocks itself,
and ends at its limit as round 32 has it.)"""


class _Restore:
    """The class attribute as it was, set back at the test's end whatever happened."""

    def __init__(self, owner: type, name: str) -> None:
        self.owner, self.name, self.first = owner, name, owner.__dict__.get(name)

    def now(self) -> Any:
        return self.owner.__dict__.get(self.name)

    def undo(self) -> None:
        if self.first is None:
            if self.name in self.owner.__dict__:
                delattr(self.owner, self.name)
        else:
            setattr(self.owner, self.name, self.first)


@pytest.mark.parametrize(("owner", "name"), DROPPED, ids=lambda v: getattr(v, "__name__", v))
def test_an_agent_dropping_the_wakeups_and_returning_at_once_is_recorded_for_it(
    edited_bank: Any, owner: type, name: str
) -> None:
    """Before: held to its limit (20 s) and recorded as ``time_limit``."""
    suite = edited_bank(lambda t: t.update(time_limit=20))
    restore = _Restore(owner, name)

    async def drops_then_returns(session: Session) -> str:
        setattr(owner, name, lambda *args, **kwargs: None)
        return "done"

    started = time.monotonic()
    try:
        run = attempt(suite, "transfer", FunctionAgent(drops_then_returns)).run
        after = restore.now()
    finally:
        restore.undo()
    assert time.monotonic() - started < 10
    assert run.terminal_reason == PROHIBITED, run.infrastructure_status
    assert f"{owner.__qualname__}.{name}" in str(run.infrastructure_status.get("harness_rebound"))
    assert after is restore.first


def _batch(suite: Any, tmp_path: Path, agent: Any, attempts: int) -> dict[int, str]:
    """The batch's records: each terminal reason by its attempt's seed."""
    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(
            suite, scripted_system(), store, make_agent=lambda: FunctionAgent(agent)
        )
        config = BatchConfig(attempts=attempts, concurrency=attempts)
        result = asyncio.run(runner.start(config))
        return {run.seed: run.terminal_reason for run in store.runs(result.batch.batch_id)}


async def _do_the_task(session: Session) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."


@pytest.mark.parametrize("ends", ["blocks", "returns"])
def test_a_batch_with_an_agent_dropping_the_wakeups_ends_and_records_the_others(
    edited_bank: Any, tmp_path: Path, release: threading.Event, ends: str
) -> None:
    """Three attempts at once; the first to start drops the loops' wakeups and blocks
    (to its 8 s limit) or returns, the other two wait until it has, then do the task.
    Before: the two honest attempts were recorded as ``time_limit`` (their agents' ends
    were dropped: only their alarms ended them), and so was the one that returned."""
    suite = edited_bank(lambda t: t.update(time_limit=8))
    restore = _Restore(_base, "call_soon_threadsafe")
    first: list[int] = []  # the seed of the agent that drops the wakeups
    dropped = threading.Event()
    lock = threading.Lock()

    async def agent(session: Session) -> str:
        if session.seed == 0:  # the start's check of the system (not an attempt)
            return await _do_the_task(session)
        with lock:
            bad = not first
            first.append(session.seed)
        if bad:
            _base.call_soon_threadsafe = lambda *a, **k: None  # type: ignore[method-assign]
            dropped.set()
            if ends == "blocks":
                release.wait(HANG)
            return "done"
        dropped.wait(HANG)
        return await _do_the_task(session)

    outcome: list[Any] = []
    runner = threading.Thread(
        target=lambda: outcome.append(_batch(suite, tmp_path, agent, 3)), daemon=True
    )
    started = time.monotonic()
    try:
        runner.start()
        runner.join(HANG)
    finally:
        release.set()
        restore.undo()
    runner.join(HANG)  # before: only once the wakeups were put back here
    assert time.monotonic() - started < HANG, "the batch did not end"
    (stored,) = outcome
    assert len(stored) == 3, stored
    bad = {"blocks": {"agent_failure/time_limit", PROHIBITED}, "returns": {PROHIBITED}}[ends]
    assert stored.pop(first[0]) in bad, stored
    assert set(stored.values()) <= {"success", PROHIBITED}, stored


def test_a_wait_for_a_call_in_flight_ends_while_another_agent_drops_the_wakeups(
    slow_bank: Suite, tmp_path: Path, release: threading.Event
) -> None:
    """Two attempts in one loop, as a batch runs them: the first's agent returns with its
    payment still in the tool (the episode waits for it in a thread); then the second's
    drops the loops' wakeups, ends the payment and blocks to its limit. Before: the end of
    the wait was dropped, and the first attempt (and the batch) waited for ever."""
    returned, paid = tmp_path / "returned", tmp_path / "paid"
    entered = tmp_path / "entered"
    restore = _Restore(_base, "call_soon_threadsafe")
    arguments = {"seconds": BLOCK, "until": str(paid), "entered": str(entered)}

    async def pays_in_a_helper(session: Session) -> str:
        await session.say("What is your PIN?")
        await session.call("check_pin", {"account": "A", "pin": "1234"})

        async def pay() -> None:
            await session.call("pay_slowly", arguments)

        _in_thread(pay())
        _wait_for(entered)  # the payment is in the tool now
        returned.touch()
        return "Moved 30 from A to B."

    async def drops_then_blocks(session: Session) -> str:
        _wait_for(returned)
        time.sleep(0.3)  # the first episode waits for its payment by now
        _base.call_soon_threadsafe = lambda *a, **k: None  # type: ignore[method-assign]
        paid.touch()
        release.wait(HANG)
        return "done"

    records: dict[str, str] = {}

    async def one(name: str, fn: Any) -> None:
        info = AttemptInfo(run_id=name, batch_id="adhoc", attempt=1, seed=0)
        task = slow_bank.tasks["transfer"]
        out = await run_attempt(task, slow_bank, scripted_system(), FunctionAgent(fn), info)
        records[name] = out.run.terminal_reason

    async def both() -> None:
        await asyncio.gather(one("pays", pays_in_a_helper), one("drops", drops_then_blocks))

    runner = threading.Thread(target=lambda: asyncio.run(both()), daemon=True)
    try:
        runner.start()
        runner.join(HANG)
    finally:
        release.set()
        restore.undo()
    runner.join(HANG)
    assert records.get("pays") in {"success", PROHIBITED}, records
    assert records.get("drops") in {"agent_failure/time_limit", PROHIBITED}, records


@pytest.mark.parametrize(
    ("owner", "name"),
    [(threading.Event, "set"), (threading.Condition, "notify_all")],
    ids=lambda v: getattr(v, "__name__", v),
)
def test_the_turns_of_live_factories_pass_with_threading_s_wakeups_dropped(
    monkeypatch: pytest.MonkeyPatch, owner: type, name: str
) -> None:
    """The in-process executor's turnstile (the order of live factories' calls) woke the
    next attempt with a ``threading.Event``: an agent that set ``Event.set`` to drop the
    call while another attempt ended its turn held every later attempt, and the batch,
    for ever. (The waiting thread is started without ``threading``: its start waits on an
    ``Event`` too.)"""
    import _thread

    from groundstate.executors.local import _Turnstile

    turns = _Turnstile()
    first, second = turns.ticket(), turns.ticket()
    passed: list[int] = []
    monkeypatch.setattr(owner, name, lambda *args, **kwargs: None)
    _thread.start_new_thread(lambda: (turns.wait(second), passed.append(second)), ())
    turns.wait(first)
    time.sleep(0.2)  # the second ticket waits by now (else it finds its turn passed already)
    turns.done(first)
    for _ in range(int(5 / 0.01)):
        if passed:
            break
        time.sleep(0.01)
    monkeypatch.undo()
    assert passed == [second]
