"""The alarms that time the attempt's hard limit (``groundstate.alarms``)."""

from __future__ import annotations

import asyncio
import time

import pytest

from groundstate.alarms import ALARMS, CLOCK

from .conftest import HANG, in_a_fresh_process


def test_alarms_settle_their_futures_in_order_of_their_times() -> None:
    async def go() -> list[str]:
        loop = asyncio.get_running_loop()
        rung: list[str] = []
        futures = {name: loop.create_future() for name in ("late", "middle", "cancelled")}
        for name, future in futures.items():
            future.add_done_callback(lambda f, name=name: rung.append(name))
        ALARMS.set(0.15, futures["late"])
        ALARMS.set(0.05, futures["cancelled"])
        ALARMS.set(0.1, futures["middle"])
        futures["cancelled"].cancel()  # done: the alarm leaves it as it is
        await asyncio.wait_for(futures["late"], HANG)
        assert futures["middle"].result() is None and futures["cancelled"].cancelled()
        return rung

    assert asyncio.run(go()) == ["cancelled", "middle", "late"]


def test_an_alarm_of_a_closed_loop_silences_no_other() -> None:
    closed = asyncio.new_event_loop()
    gone = closed.create_future()
    closed.close()

    async def go() -> None:
        ALARMS.set(0.01, gone)
        rang = asyncio.get_running_loop().create_future()
        ALARMS.set(0.02, rang)
        await asyncio.wait_for(rang, HANG)

    asyncio.run(go())


def test_an_alarm_is_a_future_not_a_callable() -> None:
    with pytest.raises(TypeError, match=r"asyncio\.Future"):
        ALARMS.set(0.01, lambda: None)


def test_alarms_keep_time_when_time_monotonic_is_replaced() -> None:
    async def go() -> None:
        rang = asyncio.get_running_loop().create_future()
        real = time.monotonic
        time.monotonic = lambda: 0.0
        try:
            ALARMS.set(0.05, rang)
            while not rang.done():  # the loop's own timeouts read the frozen clock
                await asyncio.sleep(0)
                assert CLOCK() - started < HANG
        finally:
            time.monotonic = real

    started = CLOCK()
    asyncio.run(go())


def _rings_with_a_lying_current_frames() -> bool:
    """In a process of its own: the ringing thread leaves (idle), an agent that kept its
    frame rebinds ``sys._current_frames`` to show it still serving; does the next alarm
    ring?"""
    import sys

    from groundstate import alarms

    alarms.IDLE_SECONDS = 0.2  # read as the ringing thread starts

    async def rings() -> bool:
        rang = asyncio.get_running_loop().create_future()
        ALARMS.set(0.01, rang)
        await asyncio.wait((rang,), timeout=5)  # (not wait_for: it cancels the future)
        return rang.done()

    assert asyncio.run(rings())
    thread = ALARMS._thread
    assert thread is not None and thread.ident is not None
    kept = sys._current_frames()[thread.ident]  # waiting for alarms, in _serve
    thread.join()  # idle: it has left
    ALARMS._thread = thread
    sys._current_frames = lambda: {thread.ident: kept}
    return asyncio.run(rings())


def test_a_ringing_thread_shown_by_a_rebound_current_frames_is_not_believed() -> None:
    assert in_a_fresh_process(_rings_with_a_lying_current_frames)
