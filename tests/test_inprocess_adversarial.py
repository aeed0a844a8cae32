"""Adversarial in-process agents, fourth round: what the agent hands back, what its tools and
its stack do, and calls that re-enter the session.

The earlier rounds (``test_adversarial_agents.py``, ``test_stops.py``) cover swallowed stops,
blocking and spinning agents, helper threads and odd strings. Here:

- agent code hidden in what the agent returns or raises (``__str__``, ``__repr__``, a
  ``__class__`` property, a metaclass) must run under the attempt's time limit, never on the
  episode's thread, and can neither crash the harness nor name a harness stage;
- an agent's own timeout is its crash, not the time limit;
- a tool that raises ``SystemExit`` or ``KeyboardInterrupt`` crashed (the agent cannot swallow
  it into a success);
- an agent at the recursion limit cannot turn a tool call into a crashed tool (an invalid
  attempt) or a write missing from the trace;
- a session call from inside a session call is refused, not deadlocked;
- concurrent calls across the step limit take exactly the limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.episode import HEADROOM, AttemptOutput
from groundstate.errors import (
    EnvironmentFailure,
    HarnessCompatibilityError,
    ModelServingFailure,
    ResetCheckFailed,
    TimeLimitReached,
)
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.system import BudgetsSection
from groundstate.store import prepare_run
from groundstate.testing import FunctionAgent, attempt, scripted_system
from groundstate.trace import MessageEvent, ToolCallEvent

from .conftest import BANK, BLOCK, HANG, EditTask, time_limit

AgentFn = Callable[[Session], Awaitable[Any]]


async def _do_the_task(session: Session) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."


def _output(suite: Suite, fn: AgentFn, **kwargs: Any) -> AttemptOutput:
    return attempt(suite, "transfer", FunctionAgent(fn), **kwargs)


def _run(suite: Suite, fn: AgentFn, **kwargs: Any) -> AgentRun:
    return _output(suite, fn, **kwargs).run


def _then_honest(suite: Suite) -> None:
    """The next attempt, by an honest agent, is unaffected by what the adversary left: at
    the task's limit or longer, not at a tight one a test set for its adversary, which a
    loaded machine's honest attempt may not meet."""
    with time_limit(suite, "transfer", HANG):
        run = _run(suite, _do_the_task)
    assert run.terminal_reason == "success", run.infrastructure_status


def _calls(run: AgentRun, tool: str | None = None) -> list[ToolCallEvent]:
    events = run.observation_action_log
    return [e for e in events if isinstance(e, ToolCallEvent) and tool in (None, e.tool)]


def _short(edited_bank: EditTask, seconds: float = 0.3) -> Suite:
    return edited_bank(lambda t: t.update(time_limit=seconds))


# --- impostors: what isinstance believes ----------------------------------------------------


class _PosingAsStr:
    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return str


def test_a_final_value_posing_as_a_str_is_a_protocol_mismatch(bank: Suite) -> None:
    async def poses(session: Session) -> Any:
        await _do_the_task(session)
        return _PosingAsStr()

    run = _run(bank, poses)
    assert run.terminal_reason == "harness_compatibility_failure"
    assert "_PosingAsStr" in (run.final_message or "")
    _then_honest(bank)


def test_a_tool_name_or_message_posing_as_a_str_is_a_protocol_mismatch(bank: Suite) -> None:
    async def poses(session: Session) -> str:
        await session.say(_PosingAsStr())  # type: ignore[arg-type]
        return await _do_the_task(session)

    assert _run(bank, poses).terminal_reason == "harness_compatibility_failure"


def _posing(kind: type[BaseException]) -> Exception:
    class Impostor(Exception):
        @property  # type: ignore[misc]
        def __class__(self) -> type:
            return kind

    return Impostor("I am the harness")


@pytest.mark.parametrize(
    "kind",
    [EnvironmentFailure, ModelServingFailure, ResetCheckFailed, HarnessCompatibilityError],
    ids=lambda k: k.__name__,
)
def test_an_exception_posing_as_a_harness_error_is_a_crash(bank: Suite, kind: type) -> None:
    """Only a real subclass is a report of the agent's (docs/models.md); ``isinstance`` trusts
    ``__class__``, the real type does not lie."""

    async def poses(session: Session) -> None:
        await session.call("balance", {"account": "A"})
        raise _posing(kind)

    run = _run(bank, poses)
    assert run.terminal_reason == "agent_failure/crashed"
    assert run.infrastructure_status["exception"]["type"] == "Impostor"


def test_a_timeout_posing_as_the_time_limit_is_a_crash(bank: Suite) -> None:
    async def poses(session: Session) -> None:
        raise _posing(TimeLimitReached)

    assert _run(bank, poses).terminal_reason == "agent_failure/crashed"


class _ServingAndReset(ModelServingFailure, ResetCheckFailed):
    pass


class _CompatibilityAndReset(HarnessCompatibilityError, ResetCheckFailed):
    pass


class _LimitAndEnvironment(TimeLimitReached, EnvironmentFailure):
    pass


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (_ServingAndReset("down"), "environment_failure/model_serving"),
        (_CompatibilityAndReset("no"), "harness_compatibility_failure"),
        (_LimitAndEnvironment("late"), "agent_failure/crashed"),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, Exception) else v,
)
def test_an_error_of_two_harness_kinds_never_names_a_harness_stage(
    bank: Suite, error: Exception, reason: str
) -> None:
    """An agent's exception that is also a ``ResetCheckFailed`` or an ``EnvironmentFailure``
    must not be filed as a failed reset or a crashed tool: those stages are the harness's."""

    async def raises(session: Session) -> None:
        raise error

    run = _run(bank, raises)
    assert run.terminal_reason == reason
    stop = run.infrastructure_status.get("stop")
    assert stop is None or stop["kind"] == "time_limit"


@pytest.mark.parametrize(
    "own_timeout",
    [
        lambda: asyncio.wait_for(asyncio.sleep(5), 0.01),
        lambda: _raise(TimeoutError("read timed out")),
    ],
    ids=["wait_for", "TimeoutError"],
)
def test_the_agents_own_timeout_is_a_crash_not_the_time_limit(
    bank: Suite, own_timeout: Callable[[], Awaitable[Any]]
) -> None:
    async def times_out(session: Session) -> None:
        await session.call("balance", {"account": "A"})
        await own_timeout()

    run = _run(bank, times_out)
    assert run.terminal_reason == "agent_failure/crashed"
    assert run.infrastructure_status["exception"]["type"] == "TimeoutError"
    assert "stop" not in run.infrastructure_status


async def _raise(error: Exception) -> None:
    raise error


# --- agent code in what the agent hands back --------------------------------------------------


class _ExitsWhenPrinted(Exception):
    def __str__(self) -> str:
        raise SystemExit(4)


class _InterruptsWhenPrinted(BaseException):
    def __str__(self) -> str:
        raise KeyboardInterrupt


class _ExitsWhenShown:
    def __repr__(self) -> str:
        raise SystemExit(5)


@pytest.mark.parametrize("error", [_ExitsWhenPrinted(), _InterruptsWhenPrinted()])
def test_an_exception_whose_text_exits_is_a_crash_not_the_harness_exiting(
    bank: Suite, error: BaseException
) -> None:
    async def raises(session: Session) -> None:
        raise error

    run = _run(bank, raises)
    assert run.terminal_reason == "agent_failure/crashed"
    assert "str() failed" in run.infrastructure_status["exception"]["message"]
    _then_honest(bank)


def test_a_final_value_whose_repr_exits_is_a_protocol_mismatch(bank: Suite) -> None:
    async def returns(session: Session) -> Any:
        await _do_the_task(session)
        return _ExitsWhenShown()

    run = _run(bank, returns)
    assert run.terminal_reason == "harness_compatibility_failure"
    assert run.final_message == "<_ExitsWhenShown: repr() failed>"


class _Named(type):
    @property
    def __name__(cls) -> str:  # type: ignore[override]
        raise SystemExit(6)


class _BadlyNamed(Exception, metaclass=_Named):
    pass


def test_an_exception_class_whose_name_exits_is_a_crash(bank: Suite) -> None:
    async def raises(session: Session) -> None:
        raise _BadlyNamed("boom")

    run = _run(bank, raises)
    assert run.terminal_reason == "agent_failure/crashed"
    assert run.infrastructure_status["exception"]["type"] == "_BadlyNamed"


def test_agent_code_in_the_final_value_runs_under_the_time_limit(
    edited_bank: EditTask, release: threading.Event
) -> None:
    class BlocksWhenShown:
        def __repr__(self) -> str:
            release.wait(BLOCK)
            return "late"

    async def returns(session: Session) -> Any:
        await _do_the_task(session)
        return BlocksWhenShown()

    started = time.perf_counter()
    run = _run(_short(edited_bank), returns)
    assert run.terminal_reason == "agent_failure/time_limit"
    assert time.perf_counter() - started < HANG


def test_agent_code_in_the_exception_runs_under_the_time_limit(
    edited_bank: EditTask, release: threading.Event
) -> None:
    class BlocksWhenPrinted(Exception):
        def __str__(self) -> str:
            release.wait(BLOCK)
            return "late"

    async def raises(session: Session) -> None:
        await _do_the_task(session)
        raise BlocksWhenPrinted()

    started = time.perf_counter()
    run = _run(_short(edited_bank), raises)
    assert run.terminal_reason == "agent_failure/time_limit"
    assert time.perf_counter() - started < HANG


def test_model_serving_evidence_that_is_not_json_is_stored_as_text(bank: Suite) -> None:
    class Odd:
        def __repr__(self) -> str:
            raise KeyboardInterrupt

    async def raises(session: Session) -> None:
        raise ModelServingFailure("down", evidence={"status": 503, "body": object(), "x": Odd()})

    output = _output(bank, raises)
    assert output.run.terminal_reason == "environment_failure/model_serving"
    prepare_run(output.run, output.artifacts)  # storable
    evidence = json.loads(output.run.model_dump_json())["infrastructure_status"]["model_serving"]
    assert evidence["status"] == 503 and isinstance(evidence["body"], str)


# --- tools that exit ----------------------------------------------------------------------

_EXITING_TOOL = '''

@tool
def bail(ctx: ToolContext, how: str) -> str:
    """Writes, then its backend exits (a library calling sys.exit, say)."""
    ctx.db.execute("UPDATE accounts SET balance = 0 WHERE id = 'B'")
    if how == "exit":
        raise SystemExit(3)
    if how == "interrupt":
        raise KeyboardInterrupt
    raise GeneratorExit
'''


@pytest.fixture
def exiting_bank(tmp_path: Path) -> Suite:
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    with (root / "tools.py").open("a") as tools:
        tools.write(_EXITING_TOOL)
    task = root / "tasks" / "transfer.yaml"
    task.write_text(task.read_text().replace("explode, opaque]", "explode, opaque, bail]"))
    return load_suite(root)


@pytest.mark.parametrize("how", ["exit", "interrupt", "generator_exit"])
def test_a_tool_that_exits_crashed_and_the_agent_cannot_swallow_it(
    exiting_bank: Suite, how: str
) -> None:
    async def swallows(session: Session) -> str:
        with contextlib.suppress(BaseException):  # the adversary: whatever the tool raised
            await session.call("bail", {"how": how})
        return await _do_the_task(session)

    run = _run(exiting_bank, swallows)
    assert run.terminal_reason == "environment_failure/tool_crash"
    (bail,) = _calls(run, "bail")
    assert bail.error_class == "environment_error" and not bail.writes  # rolled back
    assert [c.tool for c in _calls(run)] == ["bail"]  # nothing after it ran


# --- the recursion limit ----------------------------------------------------------------------


def _depth() -> int:
    frame: FrameType | None = sys._getframe(1)
    depth = 0
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


def _at_depth(target: int, action: Callable[[], None]) -> None:
    """Run *action* with the stack *target* frames deep (or as deep as the limit lets)."""
    _deeper(target - _depth(), action)


def _deeper(frames: int, action: Callable[[], None]) -> None:
    if frames > 1:
        _deeper(frames - 1, action)
    else:
        action()


def _call_now(session: Session, tool: str, args: dict[str, Any]) -> Any:
    """Run a session call to its end without an event loop (it never awaits)."""
    pending = session.call(tool, args)
    try:
        pending.send(None)  # type: ignore[attr-defined]
    except StopIteration as done:
        return done.value
    except BaseException as exc:  # refused or stopped: the adversary carries on
        return exc
    return None


def test_an_agent_at_the_recursion_limit_cannot_crash_a_tool_or_hide_a_write(
    edited_bank: EditTask,
) -> None:
    """Transfers of 1 at every depth near the recursion limit: each is refused before it
    runs, or runs and is in the trace. None crashes the tool (an invalid attempt), and no
    committed write is missing from the trace (which the constraints read)."""
    suite = edited_bank(lambda t: t.update(step_limit=400))
    system = scripted_system().model_copy(update={"budgets": BudgetsSection(step_limit=400)})
    outcomes: list[str] = []

    async def recurses(session: Session) -> str:
        await session.call("check_pin", {"account": "A", "pin": "1234"})
        limit = sys.getrecursionlimit()
        for room in range(0, HEADROOM + 60, 3):

            def transfer() -> None:
                args = {"source": "A", "target": "C", "amount": 1}
                result = _call_now(session, "transfer", args)
                outcomes.append(type(result).__name__)

            try:
                _at_depth(limit - room, transfer)
            except RecursionError:
                outcomes.append("recursion")
        return "done"

    output = _output(suite, recurses, system=system)
    run = output.run
    assert run.terminal_reason == "agent_failure/incorrect_state", run.infrastructure_status
    assert "RecursionError" in outcomes and "ToolResult" in outcomes  # refused near the limit
    transfers = [c for c in _calls(run, "transfer") if c.ok]
    diff = json.loads(output.artifacts["state_diff.json"])
    assert len(diff["tables"]["transfers"]["added"]) == len(transfers) > 0
    _then_honest(suite)


# --- re-entering the session ------------------------------------------------------------------


def test_a_session_call_from_inside_a_session_call_is_refused_not_deadlocked(
    bank: Suite,
) -> None:
    """A callback the garbage collector runs mid-call (a finalizer alike; a profile hook did
    before the twenty-third round, which runs the session's calls with the thread's hooks
    off) calls the session while this thread holds its lock: waiting for it would deadlock
    the agent's thread for good. The inner call is refused; the outer one and the attempt
    go on."""
    import gc

    inner: list[str] = []
    agent_thread: list[int] = []

    def collecting(phase: str, info: Any) -> None:
        facade = box[0]
        session = facade._session  # type: ignore[attr-defined]
        here = threading.get_ident()
        if inner or not agent_thread or here != agent_thread[0] or session._holder != here:
            return
        inner.append("entered")
        gc.set_threshold(*thresholds[0])  # once is enough
        result = _call_now(facade, "balance", {"account": "A"})
        inner.append(type(result).__name__)

    box: list[Session] = []
    thresholds: list[tuple[int, int, int]] = []

    async def reenters(session: Session) -> str:
        box.append(session)
        agent_thread.append(threading.get_ident())
        threshold = gc.get_threshold()
        thresholds.append(threshold)
        gc.callbacks.append(collecting)
        # A young collection at (nearly) every allocation, inside the call too; no older one
        # (a full collection of a large test process's heap at every hundredth would be slow).
        gc.set_threshold(1, 1_000_000, 1_000_000)
        try:
            await session.call("balance", {"account": "A"})
        finally:
            gc.set_threshold(*threshold)
            gc.callbacks.remove(collecting)
        return await _do_the_task(session)

    started = time.perf_counter()
    run = _run(bank, reenters)
    assert inner == ["entered", "RuntimeError"]
    assert run.terminal_reason == "success", run.infrastructure_status
    assert time.perf_counter() - started < HANG
    assert [c.tool for c in _calls(run)] == ["balance", "check_pin", "transfer"]


def test_arguments_whose_methods_call_the_session_run_outside_its_lock(bank: Suite) -> None:
    """A dict subclass's ``items`` is the agent's code: it runs before the call takes the
    session (where it may call the session again), not under its lock."""
    seen: list[str] = []

    class Sneaky(dict):  # type: ignore[type-arg]
        def items(self) -> Any:
            seen.append(type(_call_now(session_box[0], "balance", {"account": "B"})).__name__)
            return super().items()

    session_box: list[Session] = []

    async def sneaks(session: Session) -> str:
        session_box.append(session)
        await session.call("balance", Sneaky(account="A"))
        return await _do_the_task(session)

    started = time.perf_counter()
    run = _run(bank, sneaks)
    assert run.terminal_reason == "success"
    assert time.perf_counter() - started < HANG
    assert seen and set(seen) == {"ToolResult"}


# --- artifacts from the agent ---------------------------------------------------------------


def test_artifacts_that_are_not_text_are_refused_and_late_ones_are_dropped(bank: Suite) -> None:
    refused: list[str] = []
    leftover: list[Any] = []

    async def adds(session: Session) -> str:
        for name, text in ((["a"], "x"), ("notes.txt", 123)):
            try:
                session.add_artifact(name, text)  # type: ignore[attr-defined]
            except TypeError as exc:
                refused.append(str(exc))
        session.add_artifact("notes.txt", "kept")  # type: ignore[attr-defined]
        leftover.append(session)
        return await _do_the_task(session)

    output = _output(bank, adds)
    leftover[0].add_artifact("late.txt", "after the record")  # a thread left running
    assert output.run.terminal_reason == "success"
    assert len(refused) == 2
    assert output.artifacts["notes.txt"] == "kept" and "late.txt" not in output.artifacts
    prepare_run(output.run, output.artifacts)


# --- the step limit under concurrent calls --------------------------------------------------


def test_concurrent_calls_across_the_step_limit_take_exactly_the_limit(
    edited_bank: EditTask,
) -> None:
    """Tasks gathered on the agent's loop and helper threads call at once past the limit:
    the steps taken are exactly the limit, and the stop is the step limit."""
    limit = 40
    suite = edited_bank(lambda t: t.update(step_limit=limit))
    system = scripted_system().model_copy(update={"budgets": BudgetsSection(step_limit=limit)})

    async def floods(session: Session) -> str:
        def hammer() -> None:
            for _ in range(limit):
                _call_now(session, "balance", {"account": "A"})

        threads = [threading.Thread(target=hammer) for _ in range(3)]
        for thread in threads:
            thread.start()
        calls = [session.call("balance", {"account": "B"}) for _ in range(limit)]
        await asyncio.gather(*calls, session.say("PIN?"), return_exceptions=True)
        for thread in threads:
            thread.join()
        return "done"

    run = _run(suite, floods, system=system)
    assert run.terminal_reason == "agent_failure/step_limit"
    actions = [
        e
        for e in run.observation_action_log
        if isinstance(e, ToolCallEvent)
        or (isinstance(e, MessageEvent) and e.role == "agent" and not e.final)
    ]
    assert len(actions) == limit
    assert sorted(e.step for e in actions) == list(range(1, limit + 1))


def test_the_time_limit_named_by_the_agent_long_before_it_is_a_crash(bank: Suite) -> None:
    """An agent cannot name its stop: its own ``TimeLimitReached`` counts as the limit only
    at the limit (an agent program's adapter ends there by its own clock)."""

    async def names_the_limit(session: Session) -> None:
        await session.call("balance", {"account": "A"})
        raise TimeLimitReached("time limit 5s reached")

    run = _run(bank, names_the_limit)
    assert run.terminal_reason == "agent_failure/crashed"
    assert "stop" not in run.infrastructure_status


def test_the_time_limit_named_by_the_agent_at_the_limit_is_the_limit(
    edited_bank: EditTask,
) -> None:
    async def ends_at_the_limit(session: Session) -> None:
        await asyncio.sleep(max(session.remaining - 0.1, 0))  # type: ignore[attr-defined]
        raise TimeLimitReached("the agent program was killed at the time limit")

    run = _run(_short(edited_bank, 0.4), ends_at_the_limit)
    assert run.terminal_reason == "agent_failure/time_limit"
    assert run.infrastructure_status["stop"]["kind"] == "time_limit"


# --- the clock ----------------------------------------------------------------------------


def test_an_agent_that_freezes_the_clock_still_ends_at_the_time_limit(
    edited_bank: EditTask, release: threading.Event
) -> None:
    """A ``freezegun``-style agent replaces ``time.monotonic`` (which every event loop of the
    process reads) and ``time.perf_counter``, then blocks: the limit is timed by a clock it
    cannot replace (``groundstate.alarms``)."""
    clocks = time.monotonic, time.perf_counter

    async def freezes(session: Session) -> str:
        time.monotonic = time.perf_counter = lambda: 1000.0
        release.wait(BLOCK)
        return "done"

    started = clocks[0]()
    try:
        run = _run(_short(edited_bank), freezes)
    finally:
        time.monotonic, time.perf_counter = clocks
    assert run.terminal_reason == "agent_failure/time_limit"
    assert clocks[0]() - started < HANG
    assert 0.2 < run.latency < HANG
