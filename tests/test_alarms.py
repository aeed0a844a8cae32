"""The alarms that time the attempt's hard limit (``groundstate.alarms``)."""

from __future__ import annotations

import threading
import time

from groundstate.alarms import ALARMS, CLOCK

from .conftest import HANG


def test_alarms_ring_in_order_of_their_times_and_a_cancelled_one_never_does() -> None:
    rung: list[str] = []
    last = threading.Event()
    ALARMS.set(0.15, lambda: (rung.append("late"), last.set()))
    ALARMS.set(0.05, lambda: rung.append("early")).cancel()
    ALARMS.set(0.1, lambda: rung.append("middle"))
    assert last.wait(HANG)
    assert rung == ["middle", "late"]


def test_an_alarm_that_raises_silences_no_other() -> None:
    rang = threading.Event()

    def broken() -> None:
        raise RuntimeError("a bad alarm")

    ALARMS.set(0.01, broken)
    ALARMS.set(0.02, rang.set)
    assert rang.wait(HANG)


def test_alarms_keep_time_when_time_monotonic_is_replaced() -> None:
    rang = threading.Event()
    real = time.monotonic
    started = CLOCK()
    time.monotonic = lambda: 0.0
    try:
        ALARMS.set(0.05, rang.set)
        assert rang.wait(HANG)
    finally:
        time.monotonic = real
    assert CLOCK() - started < HANG
