"""Time limits on code groundstate does not control, run on reused threads."""

from __future__ import annotations

import contextvars
import os
import sys
import threading
import time

import pytest

from groundstate.deadline import (
    IDLE_NAME,
    CalledCodeExited,
    DeadlineExceeded,
    PendingCalls,
    TimedCall,
    call_each_with_time_limit,
    call_with_time_limit,
)

from .conftest import BLOCK, HANG

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


def _ident() -> int:
    return threading.get_ident()


def test_a_call_returns_its_value_on_another_thread_named_for_it() -> None:
    assert call_with_time_limit(lambda: threading.current_thread().name, 5, "grader-x") == (
        "grader-x"
    )
    assert call_with_time_limit(_ident, 5) != threading.get_ident()


def test_calls_one_after_another_reuse_one_thread() -> None:
    first = call_with_time_limit(_ident, 5)
    assert all(call_with_time_limit(_ident, 5) == first for _ in range(20))


def test_errors_and_exits_come_back_to_the_caller_and_the_thread_serves_on() -> None:
    def fails() -> None:
        raise KeyError("k")

    def exits() -> None:
        sys.exit(3)

    with pytest.raises(KeyError):
        call_with_time_limit(fails, 5)
    with pytest.raises(CalledCodeExited, match="raised SystemExit: 3"):
        call_with_time_limit(exits, 5)
    assert call_with_time_limit(lambda: 7, 5) == 7


def test_a_call_sees_the_callers_context_and_leaves_no_trace_in_the_next() -> None:
    def set_and_read() -> str:
        seen = VAR.get()
        VAR.set("changed in the call")
        return seen

    token = VAR.set("caller's")
    try:
        assert call_with_time_limit(set_and_read, 5) == "caller's"
        assert VAR.get() == "caller's"
    finally:
        VAR.reset(token)
    assert call_with_time_limit(VAR.get, 5) == "unset"


def test_a_hanging_call_is_abandoned_and_the_next_call_runs_at_once() -> None:
    release = threading.Event()
    stuck: list[int] = []

    def hangs() -> None:
        stuck.append(threading.get_ident())
        release.wait(BLOCK)

    started = time.perf_counter()
    with pytest.raises(DeadlineExceeded, match=r"within 0\.2s"):
        call_with_time_limit(hangs, 0.2, "grader-hangs")
    assert call_with_time_limit(_ident, 5) != stuck[0]  # not queued behind the stuck one
    assert time.perf_counter() - started < HANG
    assert any(t.name == "grader-hangs" for t in threading.enumerate())
    release.set()
    end = time.monotonic() + HANG  # once it returns, it is idle again (and renamed)
    while any(t.name == "grader-hangs" for t in threading.enumerate()):
        assert time.monotonic() < end
        time.sleep(0.01)
    assert any(t.name == IDLE_NAME for t in threading.enumerate())


def test_concurrent_callers_each_get_a_thread() -> None:
    barrier = threading.Barrier(3, timeout=HANG)
    results: list[int] = []

    def caller() -> None:
        results.append(call_with_time_limit(lambda: barrier.wait() + 1, 5))

    callers = [threading.Thread(target=caller) for _ in range(3)]
    for thread in callers:
        thread.start()
    for thread in callers:
        thread.join(HANG)
    assert sorted(results) == [1, 2, 3]  # all three waited at the barrier together


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_does_not_wait_on_its_parents_threads() -> None:
    call_with_time_limit(_ident, 5)  # leaves an idle thread in this process
    pid = os.fork()
    if pid == 0:  # the child: the parent's idle thread does not exist here
        try:
            ok = call_with_time_limit(lambda: 1, 2) == 1
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


# --- several calls handed over together --------------------------------------------------


def test_calls_handed_over_together_run_in_turn_on_one_thread_each_named() -> None:
    seen = call_each_with_time_limit(
        [
            TimedCall(lambda: (threading.current_thread().name, _ident()), 5, f"c{n}")
            for n in range(4)
        ]
    )
    names = [r.result()[0] for r in seen]
    assert names == ["c0", "c1", "c2", "c3"]
    assert len({r.result()[1] for r in seen}) == 1 != threading.get_ident()


def test_each_call_has_its_own_limit_from_its_own_start() -> None:
    # Together they take longer than one limit; each alone is well within it.
    calls = [TimedCall(lambda: time.sleep(0.3) or "ok", 1.0) for _ in range(4)]
    assert [r.result() for r in call_each_with_time_limit(calls)] == ["ok"] * 4


def test_a_call_past_its_limit_is_abandoned_and_the_rest_run_elsewhere_in_order() -> None:
    release = threading.Event()
    ran: list[str] = []
    order: list[str] = []

    def hangs() -> str:
        ran.append("hangs")
        release.wait(BLOCK)
        return "late"

    def after(n: int) -> int:
        ran.append(f"after{n}")
        return _ident()

    calls = [
        TimedCall(lambda: _ident(), 5, "first"),
        TimedCall(hangs, 0.2, "grader-hangs-together", lambda: order.append("abandoned")),
        TimedCall(lambda: order.append("next") or after(1), 5),
        TimedCall(lambda: after(2), 5),
    ]
    started = time.perf_counter()
    first, stuck, one, two = call_each_with_time_limit(calls)
    assert time.perf_counter() - started < HANG
    assert isinstance(stuck.error, DeadlineExceeded) and "within 0.2s" in str(stuck.error)
    assert order == ["abandoned", "next"]  # the hook ran before the next call started
    assert one.result() == two.result() != first.result()  # on another thread
    release.set()  # the stuck call returns late: it changes nothing and runs nothing more
    end = time.monotonic() + HANG
    while any(t.name == "grader-hangs-together" for t in threading.enumerate()):
        assert time.monotonic() < end
        time.sleep(0.01)
    assert isinstance(stuck.error, DeadlineExceeded) and stuck.value is None
    assert ran == ["hangs", "after1", "after2"]


def test_calls_together_do_not_share_context_nor_errors() -> None:
    def set_and_read() -> str:
        seen = VAR.get()
        VAR.set("changed in the call")
        return seen

    def exits() -> None:
        raise SystemExit(4)

    results = call_each_with_time_limit(
        [TimedCall(set_and_read, 5), TimedCall(exits, 5), TimedCall(set_and_read, 5)]
    )
    assert results[0].result() == results[2].result() == "unset"
    with pytest.raises(CalledCodeExited, match="raised SystemExit: 4"):
        results[1].result()
    assert call_each_with_time_limit([]) == []


def test_a_failing_abandon_hook_is_that_calls_error_only() -> None:
    release = threading.Event()

    def cleanup_fails() -> None:
        raise OSError("connection already closed")

    calls = [
        TimedCall(lambda: release.wait(BLOCK), 0.1, "grader-hook", cleanup_fails),
        TimedCall(lambda: "after", 5),
    ]
    stuck, after = call_each_with_time_limit(calls)
    release.set()
    with pytest.raises(OSError, match="already closed") as raised:
        stuck.result()
    assert isinstance(raised.value.__context__, DeadlineExceeded)
    assert after.result() == "after"


# --- calls added apart, run together ----------------------------------------------------


def test_pending_calls_added_apart_run_together_when_one_result_is_read() -> None:
    pending = PendingCalls()
    ran: list[str] = []

    def call(name: str) -> TimedCall[tuple[str, int]]:
        return TimedCall(lambda: ran.append(name) or (name, _ident()), 5, f"pending-{name}")

    first = pending.add([call("a1"), call("a2")])
    second = pending.add([call("b1")])
    assert ran == []  # nothing runs until a result is read
    assert second[0].result()[0] == "b1"  # reading the last runs the earlier ones too
    assert ran == ["a1", "a2", "b1"]
    threads = {r.result()[1] for r in [*first, *second]}
    assert len(threads) == 1 and threads != {threading.get_ident()}  # one hand-off
    later = pending.add([call("c1")])
    assert ran == ["a1", "a2", "b1"]  # added after the run: waits for its own read
    assert later[0].result()[0] == "c1" and ran[-1] == "c1"
    assert first[1].result()[0] == "a2"  # read again: no call runs twice
    assert ran == ["a1", "a2", "b1", "c1"]


def test_pending_calls_a_blocking_one_is_abandoned_and_those_added_after_still_run() -> None:
    pending = PendingCalls()
    release = threading.Event()
    stuck = pending.add([TimedCall(lambda: release.wait(BLOCK), 0.2, "grader-pending-hangs")])
    after = pending.add([TimedCall(lambda: "after", 5), TimedCall(lambda: None, 5)])
    started = time.perf_counter()
    assert after[0].result() == "after" and after[1].result() is None
    assert time.perf_counter() - started < HANG
    with pytest.raises(DeadlineExceeded, match=r"within 0\.2s"):
        stuck[0].result()
    release.set()
