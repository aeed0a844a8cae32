"""Turns at the harness's work: one holder at a time, forfeited past the lease, never held by
an agent or by checks that wait."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from groundstate import turns
from groundstate.agents.base import Session
from groundstate.spec.suite import Suite
from groundstate.testing import FunctionAgent, attempt
from groundstate.turns import Turns

from .conftest import BLOCK, HANG, EditTask


def _taken_within(turns_: Turns, seconds: float) -> bool:
    """Whether another thread gets a turn within *seconds* (it gives it back at once)."""
    got = threading.Event()

    def take() -> None:
        turns_.give_back(turns_.take())
        got.set()

    threading.Thread(target=take, daemon=True).start()
    return got.wait(seconds)


def test_one_turn_at_a_time_and_given_back_to_the_next() -> None:
    t = Turns(slots=1, lease=10.0)
    token = t.take()
    assert not _taken_within(t, 0.2)  # waits: the turn is held, well within its lease
    t.give_back(token)
    assert _taken_within(t, HANG)
    assert t.forfeited == 0


def test_two_slots_let_two_in_and_not_three() -> None:
    t = Turns(slots=2, lease=10.0)
    first, second = t.take(), t.take()
    assert not _taken_within(t, 0.2)
    t.give_back(first)
    assert _taken_within(t, HANG)
    t.give_back(second)


def test_a_turn_held_past_its_lease_is_forfeited_and_the_slot_not_doubled() -> None:
    """A holder stuck waiting (a check on a service) holds the others up for one lease at
    most; giving its turn back later must not free a second slot."""
    t = Turns(slots=1, lease=0.15)
    started = time.monotonic()  # before the lease starts: a pause between is not counted
    stuck = t.take()
    after = t.take()  # this thread: waits out the stuck holder's lease
    assert 0.1 <= time.monotonic() - started < HANG  # not forever: the lease ran out
    assert t.forfeited == 1
    t.give_back(stuck)  # late: changes nothing
    assert not _taken_within(t, 0.05)  # *after* still holds the only slot
    t.give_back(after)
    assert _taken_within(t, HANG)


def test_a_paused_turn_is_given_back_and_the_wait_for_it_counted() -> None:
    t = Turns(slots=1, lease=10.0)
    with t.held() as turn:
        with turn.paused():
            other = t.take()  # free while paused
            threading.Timer(0.15, t.give_back, args=(other,)).start()
        assert turn.waited >= 0.1  # retaking it waited for *other*
        assert not _taken_within(t, 0.05)
    assert _taken_within(t, HANG)  # the block's end gave it back


def test_an_exception_in_the_block_gives_the_turn_back() -> None:
    t = Turns(slots=1, lease=10.0)
    with pytest.raises(ValueError), t.held() as turn, turn.paused():
        raise ValueError("boom")
    assert _taken_within(t, HANG)


def test_a_blocking_agent_holds_no_turn(
    edited_bank: EditTask, monkeypatch: Any, release: threading.Event
) -> None:
    """An agent that blocks its thread until the other attempt is over: another attempt in
    the same process runs to its end meanwhile, without waiting for a lease (BLOCK s)."""
    monkeypatch.setattr(turns, "HARNESS", Turns(slots=1, lease=BLOCK))
    suite = edited_bank(lambda t: t.update(time_limit=BLOCK))
    running = threading.Event()

    async def blocks(session: Session) -> str:
        running.set()
        release.wait(BLOCK)
        return "done"

    async def quick(session: Session) -> str:
        await session.call("balance", {"account": "A"})
        return "done"

    with ThreadPoolExecutor(2) as pool:
        blocked = pool.submit(attempt, suite, "transfer", FunctionAgent(blocks))
        assert running.wait(HANG)
        started = time.monotonic()
        other = pool.submit(attempt, suite, "transfer", FunctionAgent(quick)).result()
        took = time.monotonic() - started
        assert not blocked.done() and took < HANG, took
        assert other.run.terminal_reason == "agent_failure/incorrect_state"
        release.set()
    assert turns.HARNESS.forfeited == 0


def test_judged_tasks_grade_without_a_turn(bank: Suite, monkeypatch: Any) -> None:
    """A model judge waits on its model: its attempt gives the turn back while it grades,
    where other checks keep it."""
    from groundstate import episode
    from groundstate.spec.task import JudgeAssertion

    task = bank.tasks["transfer"]
    assert not episode._checks_wait(task)
    judge = JudgeAssertion.model_construct(id="j")  # the kind is what counts here
    judged = task.model_copy(update={"outcome_assertions": [*task.outcome_assertions, judge]})
    assert episode._checks_wait(judged)


@pytest.fixture
def bank_session(bank: Suite, monkeypatch: Any) -> Iterator[Any]:
    """A session of the bank's transfer task, with one harness turn, a 0.05 s lease and no
    tool known yet to wait."""
    from groundstate import episode
    from groundstate.episode import EpisodeSession, default_environment
    from groundstate.testing import scripted_system

    monkeypatch.setattr(turns, "HARNESS", Turns(slots=1, lease=0.05))
    monkeypatch.setattr(episode, "_WAITING_TOOLS", set())
    monkeypatch.setattr(episode, "_OUTLASTED", {})
    task = bank.tasks["transfer"]
    with default_environment(task, bank) as env:
        session = EpisodeSession(task, bank, scripted_system(), env, 0)
        yield session
        session.end()


def _slow_call(session: Any, tool: str) -> None:
    """One call of *tool* that outlasts the lease while another thread waits for a turn."""
    with session._turn(tool):
        forfeited = turns.HARNESS.forfeited
        waiter = threading.Thread(target=lambda: turns.HARNESS.give_back(turns.HARNESS.take()))
        waiter.start()
        deadline = time.monotonic() + HANG
        while turns.HARNESS.forfeited == forfeited and time.monotonic() < deadline:
            time.sleep(0.01)  # the call waits on something past the lease, until forfeited
    waiter.join(HANG)


def test_a_tool_that_outlasts_the_lease_call_after_call_takes_no_turn_afterwards(
    bank_session: Any,
) -> None:
    """A tool whose calls wait (a server, a command) past the lease, WAITING_AFTER calls in a
    row, is forfeited each time; later calls of that tool in this process run without a
    turn, other tools' calls still take one."""
    from groundstate.episode import WAITING_AFTER

    session = bank_session
    for _ in range(WAITING_AFTER):
        _slow_call(session, "slow")
    assert turns.HARNESS.forfeited == WAITING_AFTER
    held = turns.HARNESS.take()  # another attempt's turn, held throughout
    with session._turn("slow"):
        pass  # no turn needed: it would otherwise wait out the lease
    assert turns.HARNESS.forfeited == WAITING_AFTER
    with session._turn("balance"):
        pass  # takes a turn: waits the holder's lease out
    assert turns.HARNESS.forfeited == WAITING_AFTER + 1
    turns.HARNESS.give_back(held)


def test_a_tool_kept_past_the_lease_now_and_then_still_takes_turns(
    bank_session: Any,
) -> None:
    """Near miss: a tool that outlasts the lease once in a while (kept from the CPU on a
    loaded machine), but not WAITING_AFTER calls in a row, keeps taking turns: a quick call
    in between starts the count again."""
    from groundstate import episode
    from groundstate.episode import WAITING_AFTER

    session = bank_session
    for _ in range(2):
        for _ in range(WAITING_AFTER - 1):
            _slow_call(session, "balance")
        with session._turn("balance"):
            pass  # quick
    assert not episode._WAITING_TOOLS
    started = time.monotonic()  # before the lease starts: a pause between is not counted
    held = turns.HARNESS.take()
    with session._turn("balance"):
        pass  # still takes a turn: waits the holder's lease out
    assert time.monotonic() - started >= 0.04
    turns.HARNESS.give_back(held)


def _queue(t: Turns, count: int, then: Any) -> list[threading.Thread]:
    """*count* threads asking *t* for a turn one after another (each queued before the next
    asks); each calls ``then(n, token)`` once it has its turn."""
    threads = []
    for n in range(count):
        thread = threading.Thread(target=lambda n=n: then(n, t.take()), daemon=True)
        threads.append(thread)
        thread.start()
        while len(t._waiting) < n + 1:
            time.sleep(0.001)
    return threads


def test_turns_go_to_the_waiters_in_the_order_they_asked() -> None:
    t = Turns(slots=1, lease=10.0)
    held = t.take()
    taken: list[int] = []

    def then(n: int, token: object) -> None:
        taken.append(n)
        time.sleep(0.01)
        t.give_back(token)

    threads = _queue(t, 5, then)
    t.give_back(held)
    for thread in threads:
        thread.join(HANG)
    assert taken == [0, 1, 2, 3, 4]


def test_a_waiter_woken_after_a_newcomer_took_the_turn_waits_again_first_in_line() -> None:
    """A thread asking while a slot is free takes it at once, even with a waiter woken for
    it; that waiter waits again, ahead of those behind it, and none is lost."""
    t = Turns(slots=1, lease=10.0)
    held = t.take()
    taken: list[int] = []

    def then(n: int, token: object) -> None:
        taken.append(n)
        t.give_back(token)

    threads = _queue(t, 3, then)
    with t._lock:  # waiter 0 cannot look before the newcomer has the slot
        t._held.clear()
        t._wake_first()  # the turn given back: waiter 0 is woken...
        newcomer = t._grant()  # ...and a running thread takes the slot first
    deadline = time.monotonic() + HANG  # until waiter 0 has looked (a sleep: too short if busy)
    while len(t._waiting) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert taken == [] and len(t._waiting) == 3  # waiter 0 is back, first
    t.give_back(newcomer)
    for thread in threads:
        thread.join(HANG)
    assert taken == [0, 1, 2]
    assert t.give_back(held) is False  # cleared above: as if forfeited


def test_a_waiter_sleeps_until_its_turn_comes() -> None:
    """Waiters queued behind turns that change hands within the lease run nothing until
    their turn comes: they are not woken every time some holder's lease might have run out
    (hundreds of attempts waiting that way cost a context switch or three per wake-up)."""
    t = Turns(slots=1, lease=0.05)
    calls: dict[int, int] = {}
    queued = threading.Semaphore(0)

    def waiter(n: int) -> None:
        count = 0

        def trace(frame: Any, event: str, arg: Any) -> None:
            nonlocal count
            count += event == "call"

        queued.release()
        sys.settrace(trace)  # counts the Python calls this thread makes while it waits
        token = t.take()
        sys.settrace(None)
        calls[n] = count
        time.sleep(0.02)  # within the lease; the last waiter waits for 16 of these
        t.give_back(token)

    held = t.take()
    threads = [threading.Thread(target=waiter, args=(n,), daemon=True) for n in range(16)]
    for thread in threads:
        thread.start()
        queued.acquire()
    t.give_back(held)
    for thread in threads:
        thread.join(HANG)
    assert len(calls) == 16
    # Four calls each; one of them also starts the lease watcher. Woken on the lease, the
    # later waiters made 4 more calls at each wake-up: 20-40 here.
    assert sum(count > 8 for count in calls.values()) <= 1, calls


@pytest.mark.parametrize("granted_first", [False, True])
def test_a_waiter_interrupted_keeps_no_turn_and_leaves_the_queue(
    granted_first: bool, monkeypatch: Any
) -> None:
    """Ctrl-C while a thread waits for a turn (an attempt in the main thread): it leaves the
    queue; a wake-up for a free turn it got just before is passed on, not lost."""
    t = Turns(slots=1, lease=10.0)
    held = t.take()

    def interrupted(self: Any) -> None:
        if granted_first:
            t.give_back(held)  # the turn's wake-up goes to this waiter...
            assert not t._waiting
        raise KeyboardInterrupt  # ...which is interrupted before it takes the turn

    with monkeypatch.context() as patch:
        patch.setattr(turns.Waiter, "wait", interrupted)
        with pytest.raises(KeyboardInterrupt):
            t.take()
    assert not t._waiting
    if not granted_first:
        t.give_back(held)
    assert _taken_within(t, HANG)  # the only slot is free again
    assert t.forfeited == 0


def test_stuck_holders_hold_each_waiter_up_one_lease_at_most() -> None:
    """Two waiters behind a holder that never gives back: the first gets in when its lease
    runs out, the second when the first's does (it gives back late, too)."""
    t = Turns(slots=1, lease=0.1)
    t.take()  # stuck
    started = time.monotonic()
    t.take()  # stuck too, once it has its turn
    first = time.monotonic() - started
    t.take()
    second = time.monotonic() - started
    assert 0.08 <= first < HANG and 0.16 <= second < HANG, (first, second)
    assert t.forfeited == 2


def test_the_lease_watcher_leaves_when_idle_and_returns_on_demand(monkeypatch: Any) -> None:
    monkeypatch.setattr(turns, "WATCHER_IDLE", 0.05)
    t = Turns(slots=1, lease=0.05)
    for _ in range(2):
        t.take()
        t.take()  # waits out the first holder's lease: the watcher forfeits it
        deadline = time.monotonic() + HANG
        while t._watcher is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert t._watcher is None  # gone after idling
        t._held.clear()
    assert t.forfeited == 2
