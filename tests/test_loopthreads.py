"""Reused agent threads and loops: nothing of one piece of work reaches the next, a thread
still running abandoned work is never handed more, and leftovers end as under asyncio.run."""

from __future__ import annotations

import asyncio
import contextvars
import io
import sys
import threading
import time
from collections.abc import Coroutine
from typing import Any

import pytest

from groundstate import loopthreads
from groundstate.agents.base import Session
from groundstate.loopthreads import IDLE_NAME, Work, in_loop_thread
from groundstate.spec.suite import Suite
from groundstate.testing import FunctionAgent, attempt

from .conftest import HANG, EditTask, in_a_fresh_process

MARK: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="unset")


def _run(work: Work[Any], name: str = "work", timeout: float = 5.0) -> Any:
    async def main() -> Any:
        return await asyncio.wait_for(in_loop_thread(work, name), timeout)

    return asyncio.run(main())


def _where() -> Coroutine[Any, Any, tuple[int, int, str]]:
    async def where() -> tuple[int, int, str]:
        thread = threading.current_thread()
        return threading.get_ident(), id(asyncio.get_running_loop()), thread.name

    return where()


def _two_pieces() -> tuple[tuple[int, int, str], tuple[int, int, str], list[str]]:
    """Two pieces of work run one after the other: where each ran, and the names of the
    threads with the first's identity afterwards."""
    first = _run(_where, "first")
    second = _run(_where, "second")
    return first, second, [t.name for t in threading.enumerate() if t.ident == first[0]]


def test_a_clean_piece_of_work_leaves_its_thread_and_loop_for_the_next() -> None:
    """(In a fresh process: in the suite's, a thread an earlier test left working can finish
    and park between the two pieces, and the second piece, taking the thread parked last,
    runs on it.)"""
    first, second, names = in_a_fresh_process(_two_pieces)
    assert first[:2] == second[:2]  # the same thread, the same loop
    assert (first[2], second[2]) == ("first", "second")
    assert names == [IDLE_NAME]


def test_context_is_the_submitters_and_changes_stay_with_their_work() -> None:
    async def sets() -> str:
        seen = MARK.get()
        MARK.set("left by the first")
        return seen

    async def reads() -> str:
        return MARK.get()

    token = MARK.set("submitter")
    try:
        assert _run(sets) == "submitter"
        assert _run(reads) == "submitter"  # not what the first set
    finally:
        MARK.reset(token)
    assert _run(reads) == "unset"


def test_a_pending_task_is_cancelled_before_the_outcome_and_the_loop_replaced() -> None:
    cancelled = threading.Event()

    async def leaves_a_task() -> int:
        async def forever() -> None:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise

        asyncio.get_running_loop().create_task(forever())
        await asyncio.sleep(0)
        return id(asyncio.get_running_loop())

    loop_id = _run(leaves_a_task)
    assert cancelled.is_set()  # as asyncio.run does, before the result was delivered
    assert _run(_where)[1] != loop_id


def test_a_timer_left_behind_never_fires_in_later_work() -> None:
    fired = threading.Event()

    async def leaves_a_timer() -> None:
        asyncio.get_running_loop().call_later(0.05, fired.set)

    _run(leaves_a_timer)

    async def waits() -> None:
        await asyncio.sleep(0.2)

    _run(waits)
    assert not fired.is_set()


@pytest.mark.parametrize("change", ["exception_handler", "debug", "executor", "current_loop"])
def test_a_loop_changed_by_its_work_is_not_reused(change: str) -> None:
    async def changes() -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if change == "exception_handler":
            loop.set_exception_handler(lambda loop, context: None)
        elif change == "debug":
            loop.set_debug(True)
        elif change == "executor":
            await loop.run_in_executor(None, time.sleep, 0)
        else:
            other = asyncio.new_event_loop()
            other.close()
            asyncio.set_event_loop(other)
        return loop  # kept alive: a new loop cannot take its id

    loop_id = id(_run(changes))

    def current() -> Coroutine[Any, Any, object]:
        async def no_loop_outside() -> object:
            return asyncio.get_running_loop().get_exception_handler()

        return no_loop_outside()

    assert _run(_where)[1] != loop_id or change == "current_loop"
    assert _run(current) is None
    if change == "current_loop":  # the thread's current loop was put back (none)

        def outside() -> Coroutine[Any, Any, None]:
            with pytest.raises(RuntimeError):
                asyncio.get_event_loop_policy().get_event_loop()
            return asyncio.sleep(0)

        _run(outside)


@pytest.mark.parametrize("error", [SystemExit(3), KeyboardInterrupt(), asyncio.CancelledError()])
def test_base_exceptions_arrive_as_crashes_and_the_loop_is_replaced(
    error: BaseException,
) -> None:
    seen: list[int] = []

    async def raises() -> None:
        seen.append(id(asyncio.get_running_loop()))
        raise error

    with pytest.raises(RuntimeError, match=type(error).__name__):
        _run(raises)
    assert _run(_where)[1] != seen[0]


def test_a_thread_still_running_abandoned_work_is_not_reused() -> None:
    release = threading.Event()

    async def stuck() -> int:
        release.wait()  # blocks its thread, as a synchronous agent would
        return threading.get_ident()

    async def main() -> tuple[int, int]:
        abandoned = in_loop_thread(lambda: stuck(), "stuck")
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.shield(abandoned), 0.1)
        other = (await in_loop_thread(_where, "next"))[0]
        release.set()
        return await abandoned, other

    stuck_thread, other = asyncio.run(main())
    assert stuck_thread != other


def test_trace_functions_set_by_work_are_put_back() -> None:
    before = sys.gettrace()

    async def traces() -> int:
        sys.settrace(lambda *args: None)
        return threading.get_ident()

    ident = _run(traces)

    async def reads() -> tuple[int, Any]:
        return threading.get_ident(), sys.gettrace()

    assert _run(reads) == (ident, before)


def test_each_attempt_on_a_reused_thread_keeps_only_its_own_prints(bank: Suite) -> None:
    async def prints(session: Session) -> str:
        print(f"from {MARK.get()}")
        MARK.set("a previous agent")
        return "done"

    runs = [attempt(bank, "transfer", FunctionAgent(prints)) for _ in range(2)]
    assert [r.artifacts.get("stdout.txt") for r in runs] == ["from unset\n"] * 2


def test_an_agent_leaving_a_task_that_refuses_to_stop_ends_at_the_time_limit(
    edited_bank: EditTask,
) -> None:
    async def stubborn(session: Session) -> str:
        async def refuses() -> None:
            # then it gives in (not to spin through the tests); well past the 0.3 s limit,
            # which a loaded machine may strike late: given in first, the attempt was graded
            until = time.monotonic() + 5.0
            while time.monotonic() < until:
                try:
                    await asyncio.sleep(0.01)
                except asyncio.CancelledError:
                    continue  # as under asyncio.run, the episode waits for it: the limit ends it

        asyncio.get_running_loop().create_task(refuses())
        return "done"

    suite = edited_bank(lambda t: t.update(time_limit=0.3))
    run = attempt(suite, "transfer", FunctionAgent(stubborn)).run
    assert run.terminal_reason == "agent_failure/time_limit"


def test_a_thread_whose_delivery_fails_leaves_instead_of_taking_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(threading, "excepthook", lambda args: None)  # the expected error
    failed = threading.Event()
    threads: list[threading.Thread] = []

    async def work() -> None:
        threads.append(threading.current_thread())

    def broken(outcome: Any) -> None:
        failed.set()
        raise RuntimeError("the results queue is closed")

    loopthreads.submit(work, "broken", broken)
    assert failed.wait(HANG)
    threads[0].join(HANG)
    assert not threads[0].is_alive()  # gone, not left idle for the next piece of work
    assert threads[0] not in [t.thread for t in loopthreads._IDLE]


def test_tasks_left_counts_what_all_tasks_lists() -> None:
    """Pending, done, cancelled and other loops' tasks, one loop running in another thread."""
    other = asyncio.new_event_loop()
    sleeping = [other.create_task(asyncio.sleep(60)) for _ in range(3)]
    beside = threading.Thread(target=other.run_forever)
    beside.start()

    def both(loop: asyncio.AbstractEventLoop) -> tuple[int, int]:
        return loopthreads.tasks_left(loop), len(asyncio.all_tasks(loop))

    async def main() -> list[tuple[int, int]]:
        loop = asyncio.get_running_loop()
        seen = [both(loop), both(other)]
        waiting = asyncio.Event()
        pending = [loop.create_task(waiting.wait()) for _ in range(4)]
        await loop.create_task(asyncio.sleep(0))  # done
        pending[0].cancel()
        seen.append(both(loop))
        await asyncio.sleep(0)  # the cancellation lands
        seen.append(both(loop))
        waiting.set()
        await asyncio.gather(*pending, return_exceptions=True)
        seen.append(both(loop))
        return seen

    try:
        seen = asyncio.run(main())
    finally:
        other.call_soon_threadsafe(other.stop)
        beside.join(5)
        for task in sleeping:
            task.cancel()
        other.run_until_complete(asyncio.sleep(0))
        other.close()
    assert [mine for mine, _ in seen] == [theirs for _, theirs in seen]
    assert [mine for mine, _ in seen] == [1, 3, 5, 4, 1]


def test_work_outliving_its_callers_loop_leaves_the_streams_put_in_place_since() -> None:
    """A batch torn down while an attempt's thread still ran (its caller's loop closed, no
    ``abandon``): when that thread ended, it put back the streams of its start over those a
    later command had put in place (a test runner's capture), which lost all its output."""
    release, threads = threading.Event(), list[threading.Thread]()

    def overstays() -> Coroutine[Any, Any, None]:
        async def body() -> None:
            threads.append(threading.current_thread())
            release.wait(HANG)

        return body()

    async def leave_it_running() -> None:
        in_loop_thread(overstays, "overstays")
        while not threads:
            await asyncio.sleep(0.01)

    before = sys.stderr
    capturing = io.StringIO()
    try:
        asyncio.run(leave_it_running())
        sys.stderr = capturing  # another command's output is captured now
        release.set()
        (thread,) = threads
        for _ in range(int(HANG * 100)):  # it puts back what the work changed, then idles
            if thread.name == IDLE_NAME or not thread.is_alive():
                break
            time.sleep(0.01)
        after = sys.stderr
    finally:
        sys.stderr = before
    assert after is capturing
