"""Adversarial in-process agents, seventh round: a caught stop followed by calls from every
place asyncio and threads let agent code run later (callbacks, timers, done-callbacks, shielded
tasks, executors, a second event loop, finalizers), calls after ``run()`` returned, exotic
exceptions, and process-wide hooks the agent changes.

Each must end with the latched stop's reason, no call after the stop reaching the
environment, the next attempt unaffected, and no thread left running after the test.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import io
import sys
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.loopthreads import IDLE_NAME
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite
from groundstate.testing import FunctionAgent, attempt
from groundstate.trace import ToolCallEvent

from .conftest import BLOCK, HANG, time_limit
from .test_inprocess_adversarial import _call_now, _do_the_task

AgentFn = Callable[[Session], Awaitable[Any]]

TRANSFER = {"source": "A", "target": "B", "amount": 30}


def _run(suite: Suite, fn: AgentFn) -> AgentRun:
    return attempt(suite, "transfer", FunctionAgent(fn)).run


def _transfers(run: AgentRun) -> list[ToolCallEvent]:
    events = run.observation_action_log
    return [e for e in events if isinstance(e, ToolCallEvent) and e.tool == "transfer"]


def _then_honest(suite: Suite) -> None:
    """The next attempt, by an honest agent, is unaffected by what the adversary left: at
    the task's limit or longer, not at a tight one a test set for its adversary, which a
    loaded machine's honest attempt may not meet."""
    with time_limit(suite, "transfer", HANG):
        run = _run(suite, _do_the_task)
    assert run.terminal_reason == "success", run.infrastructure_status


async def _use_up_the_steps(session: Session) -> None:
    """Call until the step limit is reached, and catch it."""
    for _ in range(session.step_limit + 1):
        with contextlib.suppress(Exception):
            await session.call("balance", {"account": "A"})


# --- a caught stop, then calls from later agent code ------------------------------------


def _from_call_soon(session: Session, loop: asyncio.AbstractEventLoop, out: list[Any]) -> None:
    loop.call_soon(lambda: out.append(_call_now(session, "transfer", TRANSFER)))


def _from_call_later(session: Session, loop: asyncio.AbstractEventLoop, out: list[Any]) -> None:
    loop.call_later(0, lambda: out.append(_call_now(session, "transfer", TRANSFER)))


def _from_done_callback(session: Session, loop: asyncio.AbstractEventLoop, out: list[Any]) -> None:
    task = loop.create_task(asyncio.sleep(0))
    task.add_done_callback(lambda _: out.append(_call_now(session, "transfer", TRANSFER)))


def _from_a_new_loop(session: Session, loop: asyncio.AbstractEventLoop, out: list[Any]) -> None:
    async def again() -> Any:
        try:
            return await session.call("transfer", TRANSFER)
        except BaseException as exc:
            return exc

    thread = threading.Thread(target=lambda: out.append(asyncio.run(again())))
    thread.start()
    thread.join()


LATER = [_from_call_soon, _from_call_later, _from_done_callback, _from_a_new_loop]


@pytest.mark.parametrize("later", LATER, ids=lambda f: f.__name__)
def test_a_caught_stop_refuses_calls_from_callbacks_and_other_loops(
    bank: Suite, later: Callable[[Session, asyncio.AbstractEventLoop, list[Any]], None]
) -> None:
    out: list[Any] = []

    async def sneaks(session: Session) -> str:
        await _use_up_the_steps(session)
        later(session, asyncio.get_running_loop(), out)
        await asyncio.sleep(0.01)  # the callbacks run
        return "Moved 30 from A to B."

    run = _run(bank, sneaks)
    assert run.terminal_reason == "agent_failure/step_limit"
    assert [type(r).__name__ for r in out] == ["StepLimitReached"]
    assert not _transfers(run) and run.initial_state_hash == run.final_state_hash
    _then_honest(bank)


def test_a_shielded_call_and_a_pool_started_before_the_stop_are_refused(bank: Suite) -> None:
    """Work set going before the stop (a shielded task, a thread pool waiting on an event)
    that calls after it is refused; the attempt ends at the step limit."""
    go = threading.Event()
    out: list[Any] = []

    async def prepares(session: Session) -> str:
        async def shielded() -> None:
            await asyncio.sleep(0.02)
            try:
                await session.call("transfer", TRANSFER)
            except BaseException as exc:
                out.append(exc)

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            waiting = pool.submit(lambda: go.wait(5) and _call_now(session, "transfer", TRANSFER))
            guarded = asyncio.shield(asyncio.ensure_future(shielded()))
            await _use_up_the_steps(session)
            with contextlib.suppress(asyncio.CancelledError):
                await guarded
            go.set()
            out.append(waiting.result())
        return "Moved 30 from A to B."

    run = _run(bank, prepares)
    assert run.terminal_reason == "agent_failure/step_limit"
    assert [type(r).__name__ for r in out] == ["StepLimitReached"] * 2
    assert not _transfers(run)


def test_a_finalizer_calling_after_the_stop_is_refused(bank: Suite) -> None:
    out: list[Any] = []

    class Holder:
        pass

    async def finalizes(session: Session) -> str:
        holder = Holder()
        weakref.finalize(holder, lambda: out.append(_call_now(session, "transfer", TRANSFER)))
        await _use_up_the_steps(session)
        del holder
        return "Moved 30 from A to B."

    run = _run(bank, finalizes)
    assert run.terminal_reason == "agent_failure/step_limit"
    assert [type(r).__name__ for r in out] == ["StepLimitReached"]
    assert not _transfers(run)


# --- calls after run() returned -----------------------------------------------------------


def test_calls_scheduled_to_run_after_the_return_never_follow_the_final_reply(
    bank: Suite,
) -> None:
    """A background task, a callback and a timer left on the loop, set to call after
    ``run()`` returned: the loop is shut down before the outcome is delivered (the task is
    cancelled); whatever runs then lands before the final reply, or is refused."""
    out: list[Any] = []

    async def leaves_work(session: Session) -> str:
        async def background() -> None:
            await asyncio.sleep(0)
            out.append(await session.call("transfer", TRANSFER))

        loop = asyncio.get_running_loop()
        out.append(loop.create_task(background()))
        loop.call_soon(
            lambda: out.append(_call_now(session, "check_pin", {"account": "A", "pin": "1234"}))
        )
        return "nothing done"

    run = _run(bank, leaves_work)
    last = run.observation_action_log[-1]
    assert getattr(last, "final", False) and last.text == "nothing done"
    assert not _transfers(run)
    assert out[0].cancelled()  # cancelled as the loop shut down, before it could call
    _then_honest(bank)


# --- exotic exceptions --------------------------------------------------------------------


class _MyCancel(asyncio.CancelledError):
    pass


def _long_chain() -> BaseException:
    exc: BaseException = ValueError("root")
    for i in range(10_000):
        nxt = RuntimeError(f"link {i}")
        nxt.__cause__ = exc
        exc = nxt
    return exc


def _group_with_the_stop(stop: BaseException) -> BaseException:
    return BaseExceptionGroup("all of them", [stop, KeyboardInterrupt()])


RAISES: list[Callable[[BaseException], BaseException]] = [
    lambda stop: GeneratorExit(),
    lambda stop: _MyCancel(),
    lambda stop: _long_chain(),
    _group_with_the_stop,
    lambda stop: ExceptionGroup("the stop", [stop]),  # type: ignore[list-item]
]


@pytest.mark.parametrize(
    "make", RAISES, ids=["generator_exit", "cancel_subclass", "chain_10000", "base_group", "group"]
)
def test_whatever_the_agent_raises_after_a_stop_the_stop_decides(
    bank: Suite, make: Callable[[BaseException], BaseException]
) -> None:
    async def raises(session: Session) -> str:
        for _ in range(session.step_limit + 1):
            try:
                await session.call("balance", {"account": "A"})
            except Exception as exc:
                stop = exc
        raise make(stop)

    run = _run(bank, raises)
    assert run.terminal_reason == "agent_failure/step_limit"
    _then_honest(bank)


@pytest.mark.parametrize(
    "make", RAISES[:4], ids=["generator_exit", "cancel_subclass", "chain_10000", "base_group"]
)
def test_whatever_the_agent_raises_without_a_stop_is_a_crash(
    bank: Suite, make: Callable[[BaseException], BaseException]
) -> None:
    async def raises(session: Session) -> str:
        raise make(RuntimeError("no stop"))

    run = _run(bank, raises)
    assert run.terminal_reason == "agent_failure/crashed"
    _then_honest(bank)


def test_sys_exit_from_a_callback_after_a_stop_keeps_the_stop(bank: Suite) -> None:
    async def exits(session: Session) -> str:
        await _use_up_the_steps(session)
        asyncio.get_running_loop().call_soon(sys.exit, 0)
        await asyncio.sleep(1)
        return "Moved 30 from A to B."

    run = _run(bank, exits)
    assert run.terminal_reason == "agent_failure/step_limit"
    _then_honest(bank)


def test_stopping_the_loop_it_was_given_is_a_crash_and_the_next_attempt_is_honest(
    bank: Suite,
) -> None:
    async def stops_its_loop(session: Session) -> str:
        asyncio.get_running_loop().stop()
        await asyncio.sleep(0.05)
        return "done"

    run = _run(bank, stops_its_loop)
    assert run.terminal_reason == "agent_failure/crashed"
    _then_honest(bank)


# --- what run() returns -----------------------------------------------------------------


class _Liar(list[Any]):
    def __eq__(self, other: object) -> bool:
        raise SystemExit(1)

    def __hash__(self) -> int:
        raise KeyboardInterrupt

    def __bool__(self) -> bool:
        raise SystemExit(2)

    def __len__(self) -> int:
        raise SystemExit(3)

    def __iter__(self) -> Iterator[Any]:
        raise SystemExit(4)


def test_a_final_value_whose_dunders_lie_is_a_protocol_mismatch(bank: Suite) -> None:
    async def lies(session: Session) -> Any:
        return _Liar()

    run = _run(bank, lies)
    assert run.terminal_reason == "harness_compatibility_failure"
    _then_honest(bank)


# --- blocking after the return ------------------------------------------------------------


def test_a_callback_that_blocks_the_loops_shutdown_ends_at_the_time_limit(
    edited_bank: Any, release: threading.Event
) -> None:
    """``run()`` returns at once, leaving a callback that blocks when the loop shuts down
    (as ``asyncio.run`` does, before the outcome): the attempt ends at its limit."""
    suite = edited_bank(lambda t: t.update(time_limit=0.3))

    async def returns_then_blocks(session: Session) -> str:
        asyncio.get_running_loop().call_soon(release.wait, BLOCK)
        return "done"

    run = _run(suite, returns_then_blocks)
    assert run.terminal_reason == "agent_failure/time_limit"
    assert run.latency < HANG


# --- process-wide hooks -------------------------------------------------------------------


def test_hooks_for_every_new_thread_set_by_the_agent_are_put_back(bank: Suite) -> None:
    """``threading.settrace``/``setprofile`` reach every thread started later (the graders'
    threads, later attempts' threads): put back when the agent ends."""
    seen: list[str] = []
    before = threading.gettrace(), threading.getprofile()

    def tracer(frame: Any, event: str, arg: Any) -> None:
        seen.append(threading.current_thread().name)

    async def hooks(session: Session) -> str:
        threading.settrace(tracer)
        threading.setprofile(tracer)
        return await _do_the_task(session)

    try:
        run = _run(bank, hooks)
        after = threading.gettrace(), threading.getprofile()
    finally:
        threading.settrace(before[0])  # type: ignore[arg-type]
        threading.setprofile(before[1])  # type: ignore[arg-type]
    assert run.terminal_reason == "success"
    assert after == before


def test_an_event_loop_policy_set_by_the_agent_is_put_back(bank: Suite) -> None:
    before = asyncio.get_event_loop_policy()

    class Policy(asyncio.DefaultEventLoopPolicy):
        pass

    async def sets_policy(session: Session) -> str:
        asyncio.set_event_loop_policy(Policy())
        return await _do_the_task(session)

    try:
        run = _run(bank, sets_policy)
        after = asyncio.get_event_loop_policy()
    finally:
        asyncio.set_event_loop_policy(before)
    assert run.terminal_reason == "success"
    assert after is before


# --- builtins replaced --------------------------------------------------------------------


def _always(value: Any) -> Callable[..., Any]:
    return lambda *args, **kwargs: value


LIES: list[tuple[str, Callable[..., Any]]] = [
    ("isinstance", _always(True)),  # asyncio's call_soon_threadsafe then refuses callbacks
    ("isinstance", _always(False)),
    ("len", _always(0)),
    ("str", int),
    ("type", _always(int)),
    ("print", _always(None)),
]


@pytest.fixture
def pristine_builtins() -> Iterator[None]:
    import builtins

    saved = dict(vars(builtins))
    yield
    vars(builtins).update(saved)


@pytest.mark.parametrize(("name", "lie"), LIES, ids=[f"{n}{i}" for i, (n, _) in enumerate(LIES)])
@pytest.mark.usefixtures("pristine_builtins")
def test_builtins_replaced_after_the_task_leave_the_verdict_and_are_put_back(
    bank: Suite, name: str, lie: Callable[..., Any]
) -> None:
    """The harness's own code (and asyncio's) calls the builtins: replaced by the agent as it
    returns, they hung the attempt past its limit (a lying ``isinstance`` made the alarm's
    ``call_soon_threadsafe`` refuse its callback) or crashed the agent's thread."""
    import builtins

    real = getattr(builtins, name)

    async def replaces(session: Session) -> str:
        reply = await _do_the_task(session)
        setattr(builtins, name, lie)
        return reply

    run = _run(bank, replaces)
    assert getattr(builtins, name) is real
    assert run.terminal_reason == "success"


@pytest.mark.parametrize(("name", "lie"), LIES[:4], ids=[n for n, _ in LIES[:4]])
@pytest.mark.usefixtures("pristine_builtins")
def test_builtins_replaced_by_a_blocking_agent_do_not_stop_the_time_limit(
    edited_bank: Any, release: threading.Event, name: str, lie: Callable[..., Any]
) -> None:
    import builtins

    suite = edited_bank(lambda t: t.update(time_limit=0.3))
    real = getattr(builtins, name)

    async def replaces_then_blocks(session: Session) -> str:
        setattr(builtins, name, lie)
        release.wait(BLOCK)
        return "done"

    run = _run(suite, replaces_then_blocks)
    assert getattr(builtins, name) is real
    assert run.terminal_reason == "agent_failure/time_limit"
    assert run.latency < HANG


# --- holding the interpreter ----------------------------------------------------------------


def test_an_agent_holding_the_interpreter_past_its_limit_cannot_return_in_time(
    edited_bank: Any,
) -> None:
    """``sys.setswitchinterval`` and a spin keep the alarm's thread from running until the
    agent returns, well past its limit: the end is timed where it happens, so the late
    return is the time limit, not a graded answer."""
    suite = edited_bank(lambda t: t.update(time_limit=0.1))
    interval = sys.getswitchinterval()
    clock = time.perf_counter

    async def hogs(session: Session) -> str:
        sys.setswitchinterval(0.5)
        started = clock()
        while clock() - started < 0.6:
            pass
        return "Moved 30 from A to B."

    try:
        run = _run(suite, hogs)
    finally:
        sys.setswitchinterval(interval)
    assert run.terminal_reason == "agent_failure/time_limit"
    assert run.infrastructure_status["stop"]["kind"] == "time_limit"


def test_output_streams_replaced_by_the_agent_are_put_back(bank: Suite) -> None:
    """An agent's own ``sys.stdout`` would receive the harness's later output (``run
    --json``), free to rewrite it."""
    before = sys.stdout, sys.stderr

    class Forger:
        def write(self, text: str) -> int:
            return len(text)

        def flush(self) -> None:
            pass

    async def forges(session: Session) -> str:
        sys.stdout = sys.stderr = Forger()  # type: ignore[assignment]
        return await _do_the_task(session)

    try:
        run = _run(bank, forges)
        after = sys.stdout, sys.stderr
    finally:
        sys.stdout, sys.stderr = before
    assert run.terminal_reason == "success"
    assert not any(isinstance(stream, Forger) for stream in after)


def test_an_agent_ending_after_its_limit_leaves_the_streams_the_harness_put_since(
    edited_bank: Any,
) -> None:
    """Its thread put back the streams of its start when it ended: a command whose output a
    test runner (click's ``CliRunner``) was capturing meanwhile lost all of it."""
    suite = edited_bank(lambda t: t.update(time_limit=1))  # its thread must start before it
    release, threads = threading.Event(), []

    async def overstays(session: Session) -> str:
        threads.append(threading.current_thread())
        release.wait(10)
        return "late"

    before = sys.stdout
    capturing = io.StringIO()
    try:
        run = _run(suite, overstays)
        sys.stdout = capturing  # the harness moved on: another command's output is captured
        release.set()
        (thread,) = threads
        for _ in range(1000):  # its thread puts back what the agent changed, then idles
            if thread.name == IDLE_NAME or not thread.is_alive():
                break
            time.sleep(0.01)
        after = sys.stdout
    finally:
        sys.stdout = before
    assert run.terminal_reason == "agent_failure/time_limit"
    assert after is capturing
