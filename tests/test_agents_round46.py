"""Round 46: a thread is laid at the door of the work that started it.

Whether code of an agent's may still run (the in-process executor's ``_agents_left``, a try's
grading start) counted every thread started since the batch opened as this batch's agent's:
code an earlier episode's or batch's agent left blocked past its time limit that started a
thread during the batch made the harness's own error on a try that try's agent's crash. Now
``threading``'s start notes the work a thread descends from (``loopthreads.started_before``);
this batch's agents' threads, however started, still count.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.spec.suite import load_suite
from groundstate.testing import FunctionAgent, attempt

from .conftest import BANK, BANK_SYSTEM
from .test_agents_round43 import _do_the_task
from .test_agents_round45 import _batch, _laid_at_the_agent, _short_limit


def _thread(target: Callable[..., Any], *args: Any) -> None:
    threading.Thread(target=target, args=args, daemon=True).start()


def _leave_blocked(release: threading.Event, go: threading.Event, chained: bool) -> threading.Event:
    """An episode outside any batch whose agent blocks past its time limit until *go*, then
    starts a thread (from its own work, or from a thread it started before: *chained*)."""
    started = threading.Event()

    def start_one() -> None:
        _thread(release.wait, 60)
        started.set()

    def wait_then_start() -> None:
        go.wait(60)
        start_one()
        release.wait(60)

    async def agent(session: Session) -> str:
        if chained:
            _thread(wait_then_start)
        else:
            go.wait(60)
            start_one()
        release.wait(60)
        return "done"

    with _short_limit(load_suite(BANK), 0.5) as suite:
        run = attempt(suite, "transfer", FunctionAgent(agent)).run
    assert run.terminal_reason == "agent_failure/time_limit"  # and its code still runs
    return started


@pytest.mark.parametrize("chained", [False, True], ids=["from-its-work", "from-its-thread"])
def test_a_thread_an_earlier_agents_leftover_starts_during_the_batch_is_not_this_batchs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, release: threading.Event, chained: bool
) -> None:
    """Before: the leftover's new thread was taken for attempt 2's agent's; the harness's
    error on that try was stored as its crash and the batch went on."""
    go = threading.Event()
    started = _leave_blocked(release, go, chained)

    def wake_the_leftover(session: Session) -> None:
        go.set()
        assert started.wait(30)

    with pytest.raises(ValueError, match="zip"):
        _batch(monkeypatch, tmp_path, act=wake_the_leftover)


# --- false-positive guards: this batch's own agents' threads still count ------------------------


@pytest.mark.parametrize("how", ["its-thread's-thread", "to_thread", "timer"])
def test_this_batchs_agents_threads_still_count_beside_a_leftover(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, release: threading.Event, how: str
) -> None:
    """With an earlier agent's leftover in the process that has started threads of its own,
    a thread attempt 2's agent leaves (one a thread of its started, then ended; one from a
    pool thread; a timer) is code an agent left: the harness's error is its crash."""
    go = threading.Event()
    started = _leave_blocked(release, go, chained=True)
    go.set()
    assert started.wait(30)

    timers: list[threading.Timer] = []

    def leave(session: Session) -> Any:
        if how == "timer":
            timers.append(threading.Timer(60, lambda: None))
            timers[0].start()  # waits; cancelled by no one until the test ends
            return None
        if how == "to_thread":

            async def from_a_pool() -> str:
                await asyncio.to_thread(_thread, release.wait, 60)
                return await _do_the_task(session)

            return from_a_pool()
        done = threading.Event()

        def start_and_end() -> None:
            _thread(release.wait, 60)
            done.set()

        _thread(start_and_end)
        assert done.wait(30)
        return None

    try:
        _laid_at_the_agent(*_batch(monkeypatch, tmp_path, act=leave))
    finally:
        for timer in timers:
            timer.cancel()


# --- the harness's output streams stay the harness's ---------------------------------------------


class _Sink:
    """An agent's stand-in for a stream: keeps what it is given (it could block or rewrite)."""

    def __init__(self) -> None:
        self.written: list[str] = []

    def write(self, text: str) -> int:
        self.written.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def _reaches(sink: _Sink) -> bool:
    """Whether the harness's own writes (in no attempt's context) reach *sink* now."""
    before = len(sink.written)
    sys.stdout.write("the harness's report line\n")
    sys.stderr.write("the harness's progress line\n")
    return len(sink.written) > before


def test_streams_an_agent_swaps_in_as_another_attempt_starts_are_not_kept(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """Before: attempt 2, starting while attempt 1's agent had set ``sys.stdout`` and
    ``sys.stderr`` to objects of its own, put its routers in front of them, and routers were
    kept: every later line of the harness's report went through the agent's objects (one
    that blocked hung ``groundstate run`` for ever after the records were stored)."""
    from groundstate.runner import BatchConfig, run_batch
    from groundstate.spec.system import load_system
    from groundstate.store import RunStore

    sink, swapped, second = _Sink(), threading.Event(), threading.Event()
    order: list[int] = []
    lock = threading.Lock()

    async def agent(session: Session) -> str:
        reply = await _do_the_task(session)
        if session.seed == 0:  # the smoke run
            return reply
        with lock:
            order.append(1)
            first = len(order) == 1
        if first:
            sys.stdout = sys.stderr = sink  # type: ignore[assignment]
            swapped.set()
            assert second.wait(30), "the attempts did not run side by side"
        else:
            assert swapped.wait(30)
            second.set()  # this attempt's output was routed as it started
        return reply

    config = BatchConfig(attempts=2, concurrency=2)
    with RunStore(tmp_path / "runs.db") as store:
        result = run_batch(
            load_suite(BANK),
            load_system(BANK_SYSTEM),
            config,
            store,
            agent_factory=lambda: FunctionAgent(agent),
        )
        assert len(store.runs(store.batch().batch_id)) == 2
    assert sorted(r.terminal_reason for r in result.runs) == ["success", "success"]
    assert not _reaches(sink)


def _forge_router(sink: _Sink) -> None:
    sys.stdout = type(sys.stdout)(sink, "stdout")  # type: ignore[call-arg]


def _swap_behind(sink: _Sink) -> None:
    sys.stdout._stream = sink  # type: ignore[union-attr]


def _change_class(sink: _Sink) -> None:
    class Leaking(type(sys.stdout)):  # type: ignore[misc]
        def write(self, text: str) -> int:
            return sink.write(text)

    sys.stdout.__class__ = Leaking


@pytest.mark.parametrize(
    "tamper", [_forge_router, _swap_behind, _change_class], ids=["forged", "behind", "class"]
)
def test_the_harnesss_router_cannot_be_forged_or_edited_by_an_agent(
    tamper: Callable[[_Sink], None],
) -> None:
    """A router of the agent's own making was kept as the harness's (any object of the
    router's class was); one whose stream behind was set, or whose class was changed, sent
    the harness's later output through the agent's object."""
    from groundstate.capture import captured

    with captured():  # the routers in place, as after any attempt
        pass
    sink = _Sink()

    async def agent(session: Session) -> str:
        reply = await _do_the_task(session)
        with contextlib.suppress(AttributeError):
            tamper(sink)
        return reply

    run = attempt(load_suite(BANK), "transfer", FunctionAgent(agent)).run
    assert run.terminal_reason == "success"
    assert not _reaches(sink)
