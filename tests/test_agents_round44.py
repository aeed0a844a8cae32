"""Round 44: a disruption of the harness's event loops (a stop, an exit raised in them, a task
cancelled) is laid at the try whose code made the call, told as it is made, never at the
tries in flight when it takes effect. In the forty-third round a cancellation of the batch's
task marked every try then in flight as the agent's crash: under load (CI, two workers) the
agent's own try had ended by then and an honest one begun, and ``--resume`` stored the honest
try as the crash. Every test here orders its events with files and threads it waits for,
never with a clock."""

from __future__ import annotations

import asyncio
import contextvars
import subprocess
import sys
import threading
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from groundstate import steadyloop
from groundstate.agents.base import Session
from groundstate.alarms import ALARMS
from groundstate.exitcause import TRY, disruption_of, forget_interruption, watching
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, scripted_system

from ._agents_builders import bank_world, validated_bank
from .conftest import HANG

STOPPED = "stopped the batch's event loop (loop.stop())"
PROHIBITED = "agent_failure/prohibited_action"

LOOPS = """
import asyncio, os, sys, threading, time

DIR = {folder!r}


def the_batchs_loop():
    frame = sys._current_frames()[threading.main_thread().ident]
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, asyncio.AbstractEventLoop):
                return value
        frame = frame.f_back


def cancel_the_batch():
    loop = the_batchs_loop()
    for task in asyncio.all_tasks(loop):
        loop.call_soon_threadsafe(task.cancel)


def wait_for(name):  # a file another try writes: no clock decides the order
    while not os.path.exists(os.path.join(DIR, name)):
        time.sleep(0.01)


def note(name):
    open(os.path.join(DIR, name), "w").close()


def first_in(name):
    try:
        os.close(os.open(os.path.join(DIR, name), os.O_CREAT | os.O_EXCL))
        return True
    except FileExistsError:
        return False


async def honest(session):
    await session.say("What is your PIN?")
    await session.call("check_pin", {{"account": "A", "pin": "1234"}})
    await session.call("transfer", {{"source": "A", "target": "B", "amount": 30}})
    return "Moved 30 from A to B."
"""

BESIDE = (
    LOOPS
    + """

async def agent(session):
    # Two tries at once: the first in is honest and waits until the other has cancelled the
    # batch's task; the other does so while both are in flight. After that (the resume)
    # every try is honest.
    if session.seed == 0 or os.path.exists(os.path.join(DIR, "cancelled")):
        return await honest(session)
    if first_in("honest"):
        note("honest in flight")
        while not os.path.exists(os.path.join(DIR, "cancelled")):
            await asyncio.sleep(0.01)
        return await honest(session)
    wait_for("honest in flight")
    cancel_the_batch()
    note("cancelled")
    await asyncio.sleep(0.5)
    return "Moved 30 from A to B."
"""
)

AFTER = (
    LOOPS
    + """
TARGET = {target!r}

async def agent(session):
    # One try at a time. The second cancels its own attempt's task (its crash), and its
    # thread, left running, cancels the batch's task once the third, honest, is in flight:
    # what a thread descheduled under load did in CI.
    if session.seed == 0 or os.path.exists(os.path.join(DIR, "cancelled")):
        return await honest(session)
    if first_in("first"):
        return await honest(session)
    if first_in("second"):
        for task in asyncio.all_tasks(session_loop := ATTEMPT_LOOP()):
            session_loop.call_soon_threadsafe(task.cancel)
        wait_for("third in flight")
        if TARGET == "batch":
            cancel_the_batch()
        else:  # the third try's attempt task, in its own loop
            for task in asyncio.all_tasks(third := ATTEMPT_LOOP()):
                third.call_soon_threadsafe(task.cancel)
        note("cancelled")
        return "Moved 30 from A to B."
    note("third in flight")
    while not os.path.exists(os.path.join(DIR, "cancelled")):
        await asyncio.sleep(0.01)
    return await honest(session)


def ATTEMPT_LOOP():  # the loop running the attempt: not the batch's, not this agent's own
    mine = asyncio.get_running_loop()
    main = threading.main_thread().ident
    for ident, frame in sys._current_frames().items():
        while frame is not None and ident != main:
            for value in list(frame.f_locals.values()):
                if isinstance(value, asyncio.AbstractEventLoop) and value is not mine:
                    if any(t.get_coro().__qualname__.startswith("InProcessExecutor")
                           or "attempt" in t.get_coro().__qualname__
                           for t in asyncio.all_tasks(value)):
                        return value
            frame = frame.f_back
    raise AssertionError("no attempt loop found")
"""
)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bank suite and a store holding its validation (each test copies both)."""
    return validated_bank(tmp_path_factory.mktemp("round44"))


def _world(
    template: Path, tmp_path: Path, agent: str, attempts: int, concurrency: int, target: str = ""
) -> list[str]:
    (tmp_path / "marks").mkdir()
    program = agent.format(folder=str(tmp_path / "marks"), target=target)
    world = bank_world(template, tmp_path, program)
    return [*world, "--attempts", str(attempts), "--concurrency", str(concurrency)]


def _groundstate(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "groundstate.cli", "run", *args],
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,
    )


def _run_and_resume(
    args: list[str], store: Path, said: str = "cancelled the batch's task"
) -> dict[int, Any]:
    done = _groundstate(args)
    assert done.returncode == (70 if "batch's task" in said else 2), done.stderr
    assert said in done.stderr
    assert "Traceback" not in done.stderr
    with RunStore(store) as runs:
        batch = runs.batch().batch_id
    again = _groundstate([*args[:5], "--resume", batch])
    assert again.returncode == 0, again.stderr
    with RunStore(store) as runs:
        assert runs.verify(batch).ok
        return {run.attempt: run for run in runs.runs(batch)}


def test_a_try_in_flight_beside_the_one_cancelling_the_batch_is_run_again(
    template: Path, tmp_path: Path
) -> None:
    """Before: both tries in flight were marked with the cancellation, and the resume stored
    the honest one as the agent's crash too."""
    args = _world(template, tmp_path, BESIDE, attempts=2, concurrency=2)
    stored = _run_and_resume(args, tmp_path / "runs.db")
    reasons = sorted(run.terminal_reason for run in stored.values())
    assert reasons == ["agent_failure/crashed", "success"]
    (crashed,) = [r for r in stored.values() if r.terminal_reason != "success"]
    assert "cancelled by code" in crashed.infrastructure_status["exception"]["message"]


def test_a_cancellation_arriving_after_its_try_ended_is_laid_at_no_honest_try(
    template: Path, tmp_path: Path
) -> None:
    """CI's failure, ordered by files: the second try's agent cancels its attempt's task
    (its crash, stored), and its thread cancels the batch's task only once the third try,
    honest, is in flight. Before: the third was marked and stored as the crash."""
    args = _world(template, tmp_path, AFTER, attempts=3, concurrency=1, target="batch")
    stored = _run_and_resume(args, tmp_path / "runs.db")
    assert {n: r.terminal_reason for n, r in stored.items()} == {
        1: "success",
        2: "agent_failure/crashed",
        3: "success",
    }
    assert "cancelled" in stored[2].infrastructure_status["exception"]["message"]


def test_an_attempt_cancelled_by_another_trys_left_thread_is_not_its_crash(
    template: Path, tmp_path: Path
) -> None:
    """The same left thread cancels the third try's own attempt task: no verdict on the
    third's agent. The batch stops saying so, and the resume runs the third again. Before:
    the third was stored as its agent's crash."""
    args = _world(template, tmp_path, AFTER, attempts=3, concurrency=1, target="attempt")
    stored = _run_and_resume(args, tmp_path / "runs.db", said="another try's agent")
    assert {n: r.terminal_reason for n, r in stored.items()} == {
        1: "success",
        2: "agent_failure/crashed",
        3: "success",
    }


# --- the held loop, unit by unit ------------------------------------------------------------


def _in_try(run_id: str | None, call: Any, *args: Any) -> None:
    """Make *call* from a thread of its own, in a context of the try *run_id*."""
    context = contextvars.copy_context()
    context.run(TRY.set, run_id)
    thread = threading.Thread(target=context.run, args=(call, *args))
    thread.start()
    thread.join()


async def _meanwhile(act: Any) -> str:
    act()  # what is handed to the loop lands before the next step of this task
    await asyncio.sleep(0)
    await asyncio.sleep(0)  # the loop stops between these two: the task is not done
    return "done"


@pytest.fixture
def two_tries(tmp_path: Path) -> Any:
    """An in-process batch's watch with the tries "culprit" and "honest" in flight."""
    store = tmp_path / "runs.db"
    RunStore(store).close()
    context = contextvars.copy_context()  # the marks stay in it
    with watching(store) as watch:
        context.run(watch.started, "culprit")
        context.run(watch.started, "honest")
        try:
            yield watch
        finally:
            forget_interruption("culprit")
            forget_interruption("honest")


@pytest.mark.parametrize("who", ["culprit", None])
def test_a_stop_handed_over_is_laid_at_the_try_whose_code_made_it(
    two_tries: Any, who: str | None
) -> None:
    """A stop handed over from a thread in the culprit's context: the loop runs on and the
    culprit is told, the other try in flight is not; from the host's thread, held and laid at
    none. Before: at every try in flight as the stop took effect."""
    loop = steadyloop.HeldLoop()
    try:

        def act() -> None:
            if who is None:  # the host's own thread (here the loop's)
                loop.call_soon_threadsafe(loop.stop)
            else:
                _in_try(who, loop.call_soon_threadsafe, loop.stop)

        context = contextvars.copy_context()
        assert steadyloop.run_on(loop, _meanwhile(act), context) == "done"
    finally:
        loop.close()
    assert disruption_of("culprit") == (STOPPED if who else None)
    assert disruption_of("honest") is None


def test_a_stop_called_from_another_thread_is_that_threads(two_tries: Any) -> None:
    loop = steadyloop.HeldLoop()
    try:
        act = lambda: _in_try("culprit", loop.stop)  # noqa: E731
        assert steadyloop.run_on(loop, _meanwhile(act), contextvars.copy_context()) == "done"
    finally:
        loop.close()
    assert disruption_of("culprit") == STOPPED
    assert disruption_of("honest") is None


def test_an_exit_raised_in_a_callback_is_laid_at_its_sender(two_tries: Any) -> None:
    def leave() -> None:
        raise SystemExit(0)

    loop = steadyloop.HeldLoop()
    try:
        act = lambda: _in_try("culprit", loop.call_soon_threadsafe, leave)  # noqa: E731
        assert steadyloop.run_on(loop, _meanwhile(act), contextvars.copy_context()) == "done"
    finally:
        loop.close()
    assert disruption_of("culprit") == "raised SystemExit(0) in the batch's event loop"
    assert disruption_of("honest") is None


def test_a_task_cancelled_is_told_by_whose_code_cancelled_it(two_tries: Any) -> None:
    """Handed over or called from another thread: the caller's try; by the harness in the
    loop's own thread: no one's (the batch's own cancellations, Ctrl-C's)."""

    async def main() -> set[str]:
        waiting = [asyncio.ensure_future(asyncio.sleep(3600)) for _ in range(3)]
        waiting[0].cancel()  # the harness's own
        loop = asyncio.get_running_loop()
        _in_try("culprit", loop.call_soon_threadsafe, waiting[1].cancel)
        loop.call_soon_threadsafe(waiting[2].cancel)  # the host's thread
        await asyncio.gather(*waiting, return_exceptions=True)
        assert all(task.cancelled() for task in waiting)
        return set(steadyloop.cancellers())

    loop = steadyloop.HeldLoop()
    try:
        assert steadyloop.run_on(loop, main(), contextvars.copy_context()) == {"culprit"}
    finally:
        loop.close()


def test_what_one_piece_of_work_noted_is_not_the_next_ones(two_tries: Any) -> None:
    """A loop a thread keeps for its next piece of work forgets whose code cancelled or
    stopped in the piece before."""

    async def cancelled_by_culprit() -> set[str]:
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(asyncio.sleep(3600))
        _in_try("culprit", loop.call_soon_threadsafe, task.cancel)
        await asyncio.gather(task, return_exceptions=True)
        return set(steadyloop.cancellers())

    async def nothing() -> set[str]:
        return set(steadyloop.cancellers())

    loop = steadyloop.HeldLoop()
    try:
        context = contextvars.copy_context()
        assert steadyloop.run_on(loop, cancelled_by_culprit(), context) == {"culprit"}
        assert steadyloop.run_on(loop, nothing(), context) == set()
    finally:
        loop.close()


# --- the time limit's alarm on the harness's own loops ---------------------------------------


def test_the_time_limits_alarm_rings_on_the_harnesss_loop() -> None:
    """The alarms (:mod:`groundstate.alarms`) ring in loops of ``asyncio``'s classes only,
    not in one of a class of someone's own: the held loop had been taken for such a class,
    its alarms dropped. (In the round-33 and round-41 batches, an agent that blocked its
    thread held its try, and the batch, until it returned.)"""

    async def rung(loop: asyncio.AbstractEventLoop) -> bool:
        alarm = loop.create_future()
        ALARMS.set(0.0, alarm)
        with suppress(TimeoutError):  # only against a hang: the alarm is due at once
            await asyncio.wait_for(asyncio.shield(alarm), HANG)
        return alarm.done()

    loop = steadyloop.HeldLoop()
    try:
        assert loop.run_until_complete(rung(loop))
    finally:
        loop.close()


@pytest.mark.parametrize("name", ["call_soon_threadsafe", "_as"])
def test_an_agent_dropping_the_held_loops_wakeups_and_blocking_ends_at_its_limit(
    edited_bank: Any, tmp_path: Path, release: threading.Event, name: str
) -> None:
    """A batch of two tries, one at a time: the first's agent sets a method by which the
    harness's loop takes a callback from another thread to drop it, then blocks its thread.
    Its alarm puts the method back and ends its try at its limit, as for ``asyncio``'s own
    loop classes (round 33); the next try is honest and passes."""
    suite = edited_bank(lambda t: t.update(time_limit=3))
    first = steadyloop.HeldLoop.__dict__[name]
    culprit: list[int] = []

    async def agent(session: Session) -> str:
        if session.seed == 0 or culprit:  # the start's check of the system, the second try
            return await _do_the_task(session)
        culprit.append(session.seed)
        setattr(steadyloop.HeldLoop, name, lambda *args, **kwargs: None)
        release.wait(HANG)
        return "done"

    def batch() -> dict[int, str]:
        with RunStore(tmp_path / "runs.db") as store:
            runner = BatchRunner(
                suite, scripted_system(), store, make_agent=lambda: FunctionAgent(agent)
            )
            result = asyncio.run(runner.start(BatchConfig(attempts=2, concurrency=1)))
            return {run.seed: run.terminal_reason for run in store.runs(result.batch.batch_id)}

    outcome: list[dict[int, str]] = []
    worker = threading.Thread(target=lambda: outcome.append(batch()), daemon=True)
    try:
        worker.start()
        worker.join(HANG)
        ended, after = bool(outcome), steadyloop.HeldLoop.__dict__.get(name)
    finally:
        release.set()
        setattr(steadyloop.HeldLoop, name, first)
    worker.join(HANG)
    assert ended, "the batch did not end: the try was not ended at its time limit"
    assert after is first
    (stored,) = outcome
    assert stored.pop(culprit[0]) in {"agent_failure/time_limit", PROHIBITED}, stored
    assert list(stored.values()) == ["success"], stored


async def _do_the_task(session: Session) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."
