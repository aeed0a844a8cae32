"""The alarms that time the attempt's hard limit (``groundstate.alarms``)."""

from __future__ import annotations

import asyncio
import time

import pytest

from groundstate.alarms import ALARMS, CLOCK

from .conftest import HANG


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
