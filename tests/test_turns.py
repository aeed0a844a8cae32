"""Turns at the harness's work: one holder at a time, forfeited past the lease, never held by
an agent or by checks that wait."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from groundstate import turns
from groundstate.agents.base import Session
from groundstate.spec.suite import Suite
from groundstate.testing import FunctionAgent, attempt
from groundstate.turns import Turns

from .conftest import EditTask


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
    assert _taken_within(t, 2.0)
    assert t.forfeited == 0


def test_two_slots_let_two_in_and_not_three() -> None:
    t = Turns(slots=2, lease=10.0)
    first, second = t.take(), t.take()
    assert not _taken_within(t, 0.2)
    t.give_back(first)
    assert _taken_within(t, 2.0)
    t.give_back(second)


def test_a_turn_held_past_its_lease_is_forfeited_and_the_slot_not_doubled() -> None:
    """A holder stuck waiting (a check on a service) holds the others up for one lease at
    most; giving its turn back later must not free a second slot."""
    t = Turns(slots=1, lease=0.15)
    stuck = t.take()
    started = time.monotonic()
    after = t.take()  # this thread: waits out the stuck holder's lease
    assert 0.1 <= time.monotonic() - started < 2.0
    assert t.forfeited == 1
    t.give_back(stuck)  # late: changes nothing
    assert not _taken_within(t, 0.05)  # *after* still holds the only slot
    t.give_back(after)
    assert _taken_within(t, 2.0)


def test_a_paused_turn_is_given_back_and_the_wait_for_it_counted() -> None:
    t = Turns(slots=1, lease=10.0)
    with t.held() as turn:
        with turn.paused():
            other = t.take()  # free while paused
            threading.Timer(0.15, t.give_back, args=(other,)).start()
        assert turn.waited >= 0.1  # retaking it waited for *other*
        assert not _taken_within(t, 0.05)
    assert _taken_within(t, 2.0)  # the block's end gave it back


def test_an_exception_in_the_block_gives_the_turn_back() -> None:
    t = Turns(slots=1, lease=10.0)
    with pytest.raises(ValueError), t.held() as turn, turn.paused():
        raise ValueError("boom")
    assert _taken_within(t, 2.0)


def test_a_blocking_agent_holds_no_turn(edited_bank: EditTask, monkeypatch: Any) -> None:
    """An agent that blocks its thread (``time.sleep``) until its time limit: another
    attempt in the same process runs to its end meanwhile, without waiting for a lease."""
    monkeypatch.setattr(turns, "HARNESS", Turns(slots=1, lease=30.0))
    suite = edited_bank(lambda t: t.update(time_limit=1.5))

    async def blocks(session: Session) -> str:
        time.sleep(1.2)
        return "done"

    async def quick(session: Session) -> str:
        await session.call("balance", {"account": "A"})
        return "done"

    with ThreadPoolExecutor(2) as pool:
        blocked = pool.submit(attempt, suite, "transfer", FunctionAgent(blocks))
        time.sleep(0.2)  # the blocking agent is running
        started = time.monotonic()
        other = pool.submit(attempt, suite, "transfer", FunctionAgent(quick)).result()
        took = time.monotonic() - started
        assert not blocked.done() and took < 0.9, took
        assert other.run.terminal_reason == "agent_failure/incorrect_state"
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


def test_a_tool_that_outlasts_the_lease_takes_no_turn_afterwards(
    bank: Suite, monkeypatch: Any
) -> None:
    """A tool call that waits (a server, a command) past the lease is forfeited once; later
    calls of that tool in this process run without a turn, other tools' calls still take one."""
    from groundstate import episode
    from groundstate.episode import EpisodeSession, default_environment
    from groundstate.testing import scripted_system

    monkeypatch.setattr(turns, "HARNESS", Turns(slots=1, lease=0.05))
    monkeypatch.setattr(episode, "_WAITING_TOOLS", set())
    task = bank.tasks["transfer"]
    with default_environment(task, bank) as env:
        session = EpisodeSession(task, bank, scripted_system(), env, 0)
        with session._turn("slow"):
            waiter = threading.Thread(target=lambda: turns.HARNESS.give_back(turns.HARNESS.take()))
            waiter.start()
            time.sleep(0.2)  # the call waits on something past the lease
        waiter.join(2.0)
        assert turns.HARNESS.forfeited == 1
        held = turns.HARNESS.take()  # another attempt's turn, held throughout
        with session._turn("slow"):
            pass  # no turn needed: it would otherwise wait out the lease
        assert turns.HARNESS.forfeited == 1
        with session._turn("balance"):
            pass  # takes a turn: waits the holder's lease out
        assert turns.HARNESS.forfeited == 2
        turns.HARNESS.give_back(held)
        session.end()
