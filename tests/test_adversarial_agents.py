"""Adversarial agents against the verdict: an agent must not flip its terminal reason by
catching, raising, blocking, racing, handing in odd objects or wording something differently.

Each agent here tries to turn a stop or a failure into a success, or its own failure into an
invalid attempt (which would drop it from the valid view). The recorded terminal reason must
be the honest one (the reference chapter's taxonomy), and the attempt after it unaffected.
Complements ``test_stops.py`` (one swallowing agent per stop kind, blocking agents).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from groundstate import episode
from groundstate.agents.base import Session
from groundstate.episode import AttemptInfo, run_attempt
from groundstate.errors import (
    AgentGaveUp,
    ProhibitedAction,
    ResetCheckFailed,
    StepLimitReached,
)
from groundstate.records import AgentRun
from groundstate.sandbox import find_bwrap
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.system import BudgetsSection
from groundstate.testing import FunctionAgent, attempt, scripted_system
from groundstate.testing_models import OpenAICompatibleServer, Reply
from groundstate.trace import MessageEvent, ToolCallEvent
from groundstate.workdirs import temp_root

from .conftest import BANK, BLOCK, EXAMPLES, HANG, EditTask, time_limit

AgentFn = Callable[[Session], Awaitable[Any]]

SLOW_TOOLS = '''

@tool
def slow_audit(ctx: ToolContext, entered: str = "") -> list[Any]:
    """Reads the forbidden audit table after a pause in Python (a slow backend); writes the
    file *entered* first."""
    import pathlib
    import time

    if entered:
        pathlib.Path(entered).touch()
    time.sleep(0.4)
    return [list(r) for r in ctx.db.execute("SELECT * FROM audit").fetchall()]


@tool
def pay_slowly(ctx: ToolContext, seconds: float, until: str = "", entered: str = "") -> str:
    """Moves 30 from A to B after a pause in Python (a slow payment backend): *seconds*, or
    until the file *until* exists; writes the file *entered* first."""
    import os
    import pathlib
    import time

    if entered:
        pathlib.Path(entered).touch()

    end = time.monotonic() + seconds
    while time.monotonic() < end and not (until and os.path.exists(until)):
        time.sleep(0.01)
    ctx.db.execute("UPDATE accounts SET balance = balance - 30 WHERE id = 'A'")
    ctx.db.execute("UPDATE accounts SET balance = balance + 30 WHERE id = 'B'")
    ctx.db.execute(
        "INSERT INTO transfers (source, target, amount, at) VALUES ('A', 'B', 30, ?)",
        (ctx.now().isoformat(),),
    )
    return "paid"
'''


@pytest.fixture
def slow_bank(tmp_path: Path) -> Suite:
    """The bank with a tool that reads the forbidden table after a pause."""
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    with (root / "tools.py").open("a") as tools:
        tools.write(SLOW_TOOLS)
    task = root / "tasks" / "transfer.yaml"
    text = task.read_text().replace("explode, opaque]", "explode, opaque, slow_audit, pay_slowly]")
    task.write_text(text)
    return load_suite(root)


async def _do_the_task(session: Session) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."


def _run(suite: Suite, fn: AgentFn, **kwargs: Any) -> AgentRun:
    return attempt(suite, "transfer", FunctionAgent(fn), **kwargs).run


def _then_honest(suite: Suite) -> None:
    """The next attempt, by an honest agent, is unaffected by what the adversary left. It
    gets time enough on a loaded machine: a tight limit a test set for its adversary timed
    the honest attempt out at 0.35 s in CI."""
    with time_limit(suite, "transfer", 30):
        run = _run(suite, _do_the_task)
    assert run.terminal_reason == "success", run.infrastructure_status


def _calls(run: AgentRun) -> list[ToolCallEvent]:
    return [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]


def _in_thread(coroutine: Awaitable[Any]) -> threading.Thread:
    """Run *coroutine* on an event loop of a new thread (an agent's helper thread)."""

    async def wrapped() -> Any:
        return await coroutine

    thread = threading.Thread(target=lambda: _quietly(wrapped), daemon=True)
    thread.start()
    return thread


def _quietly(fn: Callable[[], Awaitable[Any]]) -> None:
    with contextlib.suppress(BaseException):  # the adversary's thread ignores what it gets
        asyncio.run(fn())  # type: ignore[arg-type]


# --- a stop racing the final reply ----------------------------------------------------------


def test_a_prohibited_call_in_flight_as_the_agent_returns_still_ends_the_attempt(
    slow_bank: Suite,
) -> None:
    """The agent does the task, starts a forbidden read in a helper thread, and returns its
    final reply while the read is still running: the stop that read latches must decide."""

    entered = slow_bank.root / "entered"

    async def snoop_and_leave(session: Session) -> str:
        reply = await _do_the_task(session)

        async def snoop() -> None:
            await session.call("slow_audit", {"entered": str(entered)})

        _in_thread(snoop())
        _wait_for(entered)  # the read is in the tool now
        return reply

    run = _run(slow_bank, snoop_and_leave)
    assert run.terminal_reason == "agent_failure/prohibited_action"
    assert run.infrastructure_status["stop"]["kind"] == "prohibited_action"
    _then_honest(slow_bank)


def _wait_for(path: Path) -> None:
    """Until *path* exists (a tool entered writes it), HANG s at most."""
    for _ in range(int(HANG / 0.005)):
        if path.exists():
            return
        time.sleep(0.005)
    raise AssertionError(f"{path} was never written")


def _pays_in_a_helper(
    suite: Suite, seconds: float, until: Path | None = None, *, pin: bool = True
) -> AgentFn:
    """Verifies the PIN (when *pin*), starts the payment in a helper thread and returns once
    the payment is in the tool."""
    entered = suite.root / "entered"
    arguments = {"seconds": seconds, "until": str(until or ""), "entered": str(entered)}

    async def agent(session: Session) -> str:
        if pin:
            await session.say("What is your PIN?")
            await session.call("check_pin", {"account": "A", "pin": "1234"})

        async def pay() -> None:
            await session.call("pay_slowly", arguments)

        _in_thread(pay())
        _wait_for(entered)  # the payment is in the tool now
        return "Moved 30 from A to B."

    return agent


def test_a_call_in_flight_as_the_agent_returns_is_waited_for_not_graded_half_way(
    slow_bank: Suite,
) -> None:
    """The payment commits after the episode's usual wait for a call in flight (``END_WAIT``)
    but within the time limit: it belongs to the attempt and is graded, before the reply."""
    run = _run(slow_bank, _pays_in_a_helper(slow_bank, 1.3))
    assert run.terminal_reason == "success", str(run.infrastructure_status.get("stop"))
    assert "blocked_in_tool" not in run.infrastructure_status
    *_, pay, final = run.observation_action_log
    assert isinstance(pay, ToolCallEvent) and pay.tool == "pay_slowly" and pay.ok
    assert isinstance(final, MessageEvent) and final.final


def test_waiting_for_a_call_in_flight_holds_up_no_other_attempt(
    slow_bank: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The episode's loop runs every attempt of a batch: the wait is in a thread of its own.
    The slow payment lasts until the quick attempt has finished (BLOCK s at most): were the
    loop held by the wait for it, the quick attempt would finish only after it. The slow
    attempt waits for its call up to its limit and END_WAIT, lengthened so a loaded machine
    finishes the quick attempt within it."""
    monkeypatch.setattr(episode, "END_WAIT", HANG / 3)
    finished: list[str] = []
    quick_done = tmp_path / "quick-done"

    async def timed(name: str, fn: AgentFn) -> None:
        info = AttemptInfo(run_id=name, batch_id="adhoc", attempt=1, seed=0)
        task = slow_bank.tasks["transfer"]
        out = await run_attempt(task, slow_bank, scripted_system(), FunctionAgent(fn), info)
        assert out.run.terminal_reason == "success", out.run.infrastructure_status
        finished.append(name)
        if name == "quick":
            quick_done.touch()

    async def both() -> None:
        slow = _pays_in_a_helper(slow_bank, BLOCK, until=quick_done)
        await asyncio.gather(timed("slow", slow), timed("quick", _quick))

    async def _quick(session: Session) -> str:
        await asyncio.sleep(0.2)  # the slow one's agent has returned by now
        return await _do_the_task(session)

    started = time.perf_counter()
    asyncio.run(both())
    assert finished == ["quick", "slow"]
    assert time.perf_counter() - started < HANG


AFTER_RETURN = 3.0
"""The time limit of a test whose limit must strike after the agent returned: its agent's work
(a message, a call, a helper started) must fit before it. At 0.3 s it did not, once, with
two test workers loading the machine; the limit struck while the agent still ran."""


def test_a_call_still_running_at_the_limit_after_the_agent_returned_ends_it_there(
    slow_bank: Suite, tmp_path: Path
) -> None:
    task = slow_bank.root / "tasks" / "transfer.yaml"
    task.write_text(task.read_text().replace("time_limit: 5", f"time_limit: {AFTER_RETURN}"))
    suite = load_suite(slow_bank.root)
    released = tmp_path / "released"  # the payment lasts until the attempt has its record
    started = time.perf_counter()
    # The agent only starts the payment: any work before it raced the limit on a loaded
    # machine (the limit striking before the payment entered its tool refuses it, and then
    # nothing is blocked). Once the payment is in its tool, the limit striking before or
    # after the agent returns ends the attempt the same way.
    try:
        run = _run(suite, _pays_in_a_helper(suite, BLOCK, until=released, pin=False))
    finally:
        released.touch()
    assert run.terminal_reason == "agent_failure/time_limit", run.infrastructure_status
    assert run.infrastructure_status["blocked_in_tool"] == "pay_slowly"
    assert run.initial_state_hash == run.final_state_hash
    assert time.perf_counter() - started < HANG


def test_calls_from_a_helper_thread_after_the_final_reply_are_refused(bank: Suite) -> None:
    refused: list[str] = []
    ended, done = threading.Event(), threading.Event()

    async def leaves_a_writer(session: Session) -> str:
        async def write_later() -> None:
            ended.wait(BLOCK)  # after the attempt ended
            try:
                await session.call("transfer", {"source": "A", "target": "C", "amount": 70})
            except Exception as exc:
                refused.append(type(exc).__name__)
            done.set()

        reply = await _do_the_task(session)
        _in_thread(write_later())
        return reply

    run = _run(bank, leaves_a_writer)
    ended.set()
    assert run.terminal_reason == "success"
    assert done.wait(HANG)
    assert refused == ["AgentStop"]
    assert [c.tool for c in _calls(run)] == ["check_pin", "transfer"]
    _then_honest(bank)


# --- raising the harness's own errors -----------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [StepLimitReached("step limit 6 reached"), ProhibitedAction("audit"), AgentGaveUp("hm")],
    ids=lambda e: type(e).__name__,
)
def test_an_agent_raising_a_stop_itself_is_a_crash(bank: Suite, error: Exception) -> None:
    """No stop was latched: an agent that raises a stop of its own crashed; it cannot name
    its stop."""

    async def fails_and_names_a_stop(session: Session) -> str:
        await session.call("transfer", {"source": "A", "target": "B", "amount": 5})
        raise error

    run = _run(bank, fails_and_names_a_stop)
    assert run.terminal_reason == "agent_failure/crashed"
    assert run.infrastructure_status["exception"]["type"] == type(error).__name__
    assert "stop" not in run.infrastructure_status


def test_a_reset_check_failure_raised_by_the_agent_is_no_failed_reset(bank: Suite) -> None:
    """An environment failure raised by agent code is its report of a dependency of its own
    (``environment_failure/agent``, docs/models.md), whatever subclass: not a failed reset."""

    async def blames_the_reset(session: Session) -> None:
        raise ResetCheckFailed("the reset did not work")

    assert _run(bank, blames_the_reset).terminal_reason == "environment_failure/agent"


def test_a_real_stop_reraised_by_the_agent_keeps_its_reason(bank: Suite) -> None:
    async def reraises(session: Session) -> None:
        await session.call("explode", {})

    run = _run(bank, reraises)
    assert run.terminal_reason == "environment_failure/tool_crash"


# --- exceptions and final values that break the harness's own formatting -------------------


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no string for you")

    def __repr__(self) -> str:
        raise RuntimeError("no repr either")


class _Unrepresentable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_an_exception_that_cannot_be_printed_is_still_a_crash(bank: Suite) -> None:
    async def raises_unprintable(session: Session) -> None:
        raise _Unprintable()

    run = _run(bank, raises_unprintable)
    assert run.terminal_reason == "agent_failure/crashed"
    assert run.infrastructure_status["exception"]["type"] == "_Unprintable"
    _then_honest(bank)


def test_a_final_value_that_cannot_be_printed_is_a_protocol_mismatch(bank: Suite) -> None:
    async def returns_unrepresentable(session: Session) -> Any:
        await _do_the_task(session)
        return _Unrepresentable()

    run = _run(bank, returns_unrepresentable)
    assert run.terminal_reason == "harness_compatibility_failure"


def test_a_stop_that_cannot_be_printed_as_a_give_up_reason(bank: Suite) -> None:
    async def gives_up_oddly(session: Session) -> None:
        session.give_up(_Unrepresentable())  # type: ignore[arg-type]

    run = _run(bank, gives_up_oddly)
    assert run.terminal_reason in ("agent_failure/gave_up", "harness_compatibility_failure")


class _Lying(str):
    """A string whose methods lie about its text (what constraints and checks would read)."""

    def lower(self) -> str:
        return "all done"

    def casefold(self) -> str:
        return "all done"

    def __str__(self) -> str:
        return "all done"

    def __contains__(self, item: object) -> bool:
        return False


def test_a_final_reply_that_lies_about_its_text_is_recorded_as_its_text(bank: Suite) -> None:
    async def lying_reply(session: Session) -> str:
        await _do_the_task(session)
        return _Lying("Your card 4111 1111 1111 1111 was charged.")

    run = _run(bank, lying_reply)
    assert type(run.final_message) is str
    assert run.final_message == "Your card 4111 1111 1111 1111 was charged."
    final = run.observation_action_log[-1]
    assert isinstance(final, MessageEvent) and type(final.text) is str


class _Alias(str):
    """A tool name that looks up one tool and reads as another."""

    def __hash__(self) -> int:
        return hash("transfer")

    def __eq__(self, other: object) -> bool:
        return other == "transfer" or str.__eq__(self, other)


def test_a_tool_name_is_the_tool_that_ran(bank: Suite) -> None:
    """The trace must name the tool that ran: the constraints on ``transfer`` read it."""

    async def disguised_transfer(session: Session) -> str:
        await session.call(_Alias("balance"), {"source": "A", "target": "B", "amount": 30})
        return "Moved 30 from A to B."

    run = _run(bank, disguised_transfer)
    assert run.terminal_reason != "success"
    (call,) = _calls(run)
    assert type(call.tool) is str
    assert call.ok is False or call.tool == "transfer"


class _TwoFaced(dict):  # type: ignore[type-arg]
    """Arguments that show the validator one thing and give the tool another."""

    def _shown(self) -> dict[str, Any]:
        return {**dict(dict.items(self)), "amount": 30}

    def items(self) -> Any:
        return self._shown().items()  # what a validator walking ``items()`` sees


def test_arguments_that_show_two_faces_cannot_crash_the_tool(bank: Suite) -> None:
    """Validated as ``amount: 30``, the tool would get a string and crash: an environment
    failure, an invalid attempt, of the agent's making. The tool gets what was validated."""

    async def two_faced(session: Session) -> str:
        await session.say("What is your PIN?")
        await session.call("check_pin", {"account": "A", "pin": "1234"})
        args = _TwoFaced(source="A", target="B", amount="lots")
        await session.call("transfer", args)
        return "Moved 30 from A to B."

    run = _run(bank, two_faced)
    assert run.valid, run.infrastructure_status
    transfer = _calls(run)[-1]
    assert transfer.args == {"source": "A", "target": "B", "amount": 30} or not transfer.ok


def test_arguments_and_results_changed_after_the_call_leave_the_trace_alone(bank: Suite) -> None:
    async def rewrites_history(session: Session) -> str:
        await session.say("What is your PIN?")
        args = {"account": "A", "pin": "1234"}
        result = await session.call("check_pin", args)
        args["pin"] = "0000"
        result.output["verified"] = "maybe"
        await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        return "Moved 30 from A to B."

    run = _run(bank, rewrites_history)
    check = _calls(run)[0]
    assert check.args == {"account": "A", "pin": "1234"}
    assert check.output == {"verified": True}


# --- usage reports that would dodge a budget -----------------------------------------------


@pytest.mark.parametrize(
    "report",
    [
        {"cost": -1.0},
        {"cost": math.nan},
        {"input_tokens": -10_000},
        {"input_tokens": 0.5},
        {"cost": "0.5"},
        {"input_tokens": True},
    ],
    ids=str,
)
def test_a_usage_report_that_would_dodge_the_budget_is_a_protocol_mismatch(
    bank: Suite, report: dict[str, Any]
) -> None:
    budgets = BudgetsSection(max_cost=0.01, max_tokens=100)
    system = scripted_system().model_copy(update={"budgets": budgets})

    async def credits_itself(session: Session) -> str:
        with contextlib.suppress(Exception):
            session.record_usage(**report)
        for _ in range(3):  # spends more than the budget in all
            with contextlib.suppress(Exception):
                session.record_usage(input_tokens=40, cost=0.004)
        return await _do_the_task(session)

    run = _run(bank, credits_itself, system=system)
    assert run.terminal_reason in ("harness_compatibility_failure", "agent_failure/budget")
    assert run.usage.input_tokens >= 0 and run.cost >= 0 and not math.isnan(run.cost)


# --- tampering with the session object ----------------------------------------------------


def test_clearing_the_latch_on_the_session_does_not_clear_the_stop(bank: Suite) -> None:
    async def unlatches(session: Session) -> str:
        for _ in range(7):
            try:
                await session.call("balance", {"account": "A"})
            except Exception:
                for name in ("stop", "_steps", "cost"):
                    with contextlib.suppress(Exception):
                        setattr(session, name, None if name == "stop" else 0)
        return await _do_the_task(session)

    run = _run(bank, unlatches)
    assert run.terminal_reason == "agent_failure/step_limit"
    assert run.initial_state_hash == run.final_state_hash


def test_rewriting_the_trace_through_the_session_does_not_rewrite_the_record(bank: Suite) -> None:
    async def forges(session: Session) -> str:
        await session.call("read_audit", {})  # denied: prohibited, but the task says record
        events = getattr(session, "events", None)
        if events is not None:
            events.clear()
        return "nothing to see"

    run = _run(bank, forges)
    assert run.terminal_reason == "agent_failure/prohibited_action"
    assert [c.tool for c in _calls(run)] == ["read_audit"]


# --- process state the agent changes ------------------------------------------------------


def test_an_agent_that_changes_directory_gets_an_honest_verdict_and_so_does_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(BANK.parent)
    suite = load_suite(Path(BANK.name))  # a relative suite path, as `groundstate run bank`
    elsewhere = tmp_path / "scratch"
    elsewhere.mkdir()

    async def wanders(session: Session) -> str:
        os.chdir(elsewhere)
        return await _do_the_task(session)

    run = _run(suite, wanders)
    assert run.terminal_reason == "success", str(run.infrastructure_status.get("stop"))
    _then_honest(suite)


# --- base exceptions ------------------------------------------------------------------------


@pytest.mark.parametrize("error", [GeneratorExit(), StopAsyncIteration(), SystemExit(None)])
def test_other_base_exceptions_from_the_agent_are_crashes(
    bank: Suite, error: BaseException
) -> None:
    async def exits(session: Session) -> None:
        await session.call("balance", {"account": "A"})
        raise error

    run = _run(bank, exits)
    assert run.terminal_reason == "agent_failure/crashed"
    _then_honest(bank)


def test_an_agent_that_swallows_base_exceptions_from_the_session_still_stops(
    bank: Suite,
) -> None:
    async def swallows_everything(session: Session) -> str:
        for _ in range(8):
            with contextlib.suppress(BaseException):
                await session.call("balance", {"account": "A"})
        try:
            return await _do_the_task(session)
        except BaseException:
            return "done"

    run = _run(bank, swallows_everything)
    assert run.terminal_reason == "agent_failure/step_limit"


def test_a_huge_final_reply_is_recorded_and_graded(bank: Suite) -> None:
    async def verbose(session: Session) -> str:
        await _do_the_task(session)
        return "Moved 30 from A to B. " + "x" * 5_000_000

    run = _run(bank, verbose)
    assert run.terminal_reason == "success"
    assert run.final_message is not None and len(run.final_message) > 5_000_000


# --- an external program over MCP --------------------------------------------------------


@pytest.mark.skipif(find_bwrap() is None, reason="no bubblewrap (bwrap) found")
def test_an_mcp_program_cannot_act_or_finish_again_after_finishing(tmp_path: Path) -> None:
    from .test_mcp_agents import TASK, run_program

    retail = load_suite(EXAMPLES / "retail")
    run = run_program(retail, tmp_path, "after_finish").run
    assert run.final_message == "I changed nothing."
    assert not _calls(run)  # the call after ``finish`` never reached the tools
    assert run.task_id == TASK


# --- objects the agent is handed ----------------------------------------------------------


def test_an_agent_that_edits_the_tool_schemas_it_is_shown_changes_no_tool(bank: Suite) -> None:
    """An adapter that tidies schemas in place (drops ``required``, loosens a type) must not
    change what the gateway checks, in this attempt or the next: with ``required`` gone, a
    call without arguments would crash the tool (an invalid attempt of the agent's making)."""

    async def tidies_schemas(session: Session) -> str:
        for spec in session.tools:
            spec.parameters.pop("required", None)
            spec.parameters["additionalProperties"] = True
            for prop in spec.parameters.get("properties", {}).values():
                prop["type"] = "string"
        result = await session.call("transfer", {})
        assert result.error_class == "invalid_arguments", result
        return "nothing done"

    run = _run(bank, tidies_schemas)
    assert run.terminal_reason == "agent_failure/incorrect_state"
    assert run.valid
    _then_honest(bank)
    (schema,) = [t.parameters for t in bank.tools.values() if t.name == "transfer"]
    assert schema["required"] == ["source", "target", "amount"]


# --- around the gateway -------------------------------------------------------------------


def _live_databases() -> list[Path]:
    return sorted((temp_root() / f"pid-{os.getpid()}").glob("*/live.db"))


def _write_the_transfer(journal: str = "delete") -> None:
    """The task's transfer, written with a connection of its own into every live database of
    this process (the agent's among them)."""
    for path in _live_databases():
        with contextlib.suppress(sqlite3.Error):
            db = sqlite3.connect(path, timeout=0.1)
            if journal == "wal":
                db.execute("PRAGMA journal_mode=WAL")
            with db:
                db.execute("UPDATE accounts SET balance = balance - 30 WHERE id = 'A'")
                db.execute("UPDATE accounts SET balance = balance + 30 WHERE id = 'B'")
                db.execute(
                    "INSERT INTO transfers (source, target, amount, at) "
                    "VALUES ('A', 'B', 30, '2026-01-15T10:00:00+00:00')"
                )
            db.close()


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_writing_the_database_behind_the_gateway_is_a_prohibited_action(
    bank: Suite, journal: str
) -> None:
    """The agent finds its database file and does the transfer with its own connection: no
    tool ran, no constraint saw it, the state is right. It must not pass."""

    async def writes_directly(session: Session) -> str:
        await session.say("What is your PIN?")
        await session.call("check_pin", {"account": "A", "pin": "1234"})
        _write_the_transfer(journal)
        return "Moved 30 from A to B."

    run = _run(bank, writes_directly)
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert run.infrastructure_status["stop"]["stage"] == "outside_gateway"
    _then_honest(bank)


def _put_a_solved_copy_in_place() -> None:
    """The transfer written into a copy of every live database of this process (the pool's
    too), each copy then renamed over its original (the harness's open connections keep
    the old file)."""
    for path in _live_databases():
        copy = path.with_name(f"{path.name}.solved")
        with contextlib.suppress(sqlite3.Error, OSError):  # one another attempt holds, gone
            source, target = sqlite3.connect(path, timeout=0.1), sqlite3.connect(copy)
            with contextlib.closing(source), contextlib.closing(target):
                source.backup(target)
            _write_the_transfer_into(copy)
            os.replace(copy, path)


def _write_the_transfer_into(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE accounts SET balance = balance - 30 WHERE id = 'A'")
        db.execute("UPDATE accounts SET balance = balance + 30 WHERE id = 'B'")
        db.execute(
            "INSERT INTO transfers (source, target, amount, at) "
            "VALUES ('A', 'B', 30, '2026-01-15T10:00:00+00:00')"
        )


def test_a_database_file_replaced_behind_the_gateway_is_a_prohibited_action(bank: Suite) -> None:
    """The agent renames a solved copy over its database file. Before the fix its attempt
    was graded on the old file (no sign of the act) and the file went to the pool: the next
    attempt's first write failed (``attempt to write a readonly database``), an
    environment failure (an invalid attempt) the adversary caused."""

    async def replaces_the_file(session: Session) -> str:
        await session.say("What is your PIN?")
        await session.call("check_pin", {"account": "A", "pin": "1234"})
        _put_a_solved_copy_in_place()
        return "Moved 30 from A to B."

    run = _run(bank, replaces_the_file)
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert "replaced" in run.infrastructure_status["stop"]["message"]
    _then_honest(bank)


def test_a_pooled_database_replaced_between_attempts_is_built_afresh(bank: Suite) -> None:
    """A solved copy renamed over a database while it waits in the pool (by a thread an
    earlier agent left running, say): the next attempt that takes it used to fail its first
    write (``attempt to write a readonly database``), an invalid attempt; the reset now sees
    the path names another file and builds the database afresh."""
    _then_honest(bank)  # its database goes to the pool
    _put_a_solved_copy_in_place()
    _then_honest(bank)


def test_a_helper_thread_writing_the_database_while_it_is_graded_cannot_pass(bank: Suite) -> None:
    """The agent returns at once; its thread waits until the session refuses calls (the
    attempt is being graded) and then writes the answer into the file. Either the write
    comes too late to be graded, or it is seen: never a success."""
    written = threading.Event()

    async def writes_while_graded(session: Session) -> str:
        def write() -> None:
            with contextlib.suppress(Exception):  # until the session refuses: the end
                while True:
                    session.record_usage()
                    time.sleep(0.0005)
            _write_the_transfer()
            written.set()

        threading.Thread(target=write, daemon=True).start()
        return "Moved 30 from A to B."

    run = _run(bank, writes_while_graded)
    assert written.wait(HANG)
    assert run.terminal_reason in (
        "agent_failure/prohibited_action",
        "agent_failure/incorrect_state",
    )


# --- blocking without sleeping ----------------------------------------------------------------


def _block_on_an_event(release: threading.Event) -> None:
    release.wait(BLOCK)


def _block_reading_a_pipe(release: threading.Event) -> None:
    read, write = os.pipe()
    # written when the test ends, long after the limit
    threading.Thread(target=lambda: release.wait(BLOCK) and os.write(write, b"x")).start()
    try:
        os.read(read, 1)
    finally:
        os.close(read)
        os.close(write)


@pytest.mark.parametrize("block", [_block_on_an_event, _block_reading_a_pipe])
def test_an_agent_blocked_in_a_wait_ends_at_the_time_limit_and_its_late_calls_are_refused(
    tmp_path: Path, block: Callable[[threading.Event], None], release: threading.Event
) -> None:
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    task = root / "tasks" / "transfer.yaml"
    task.write_text(task.read_text().replace("time_limit: 5", "time_limit: 0.3"))
    suite = load_suite(root)

    async def blocks_then_works(session: Session) -> str:
        block(release)
        return await _do_the_task(session)

    started = time.perf_counter()
    run = _run(suite, blocks_then_works)
    assert run.terminal_reason == "agent_failure/time_limit"
    assert time.perf_counter() - started < HANG
    assert run.initial_state_hash == run.final_state_hash


def test_the_final_reply_is_the_last_event_whatever_a_helper_thread_calls(
    edited_bank: EditTask,
) -> None:
    """A helper thread calls tools in a tight loop while the agent returns: no call may land
    after the final reply (the reply would then claim what had not happened yet)."""
    stop = threading.Event()

    async def keeps_calling(session: Session) -> str:
        async def loop() -> None:
            while not stop.is_set():
                await session.call("balance", {"account": "A"})

        _in_thread(loop())
        time.sleep(0.01)
        return "All done."

    system = scripted_system().model_copy(update={"budgets": BudgetsSection(step_limit=5000)})
    suite = edited_bank(lambda task: task.update(step_limit=5000))
    try:
        for _ in range(5):
            run = _run(suite, keeps_calling, system=system)
            last = run.observation_action_log[-1]
            assert isinstance(last, MessageEvent) and last.final, last
    finally:
        stop.set()


# --- the time limit striking while the simulated user answers -------------------------------


def test_a_scripted_user_reading_at_the_limit_leaves_the_agents_time_limit(
    edited_bank: EditTask, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scripted user is local code: its time is that of the agent's message (a huge one
    is slow to read). The limit striking while it reads was an invalid attempt
    (``environment_failure/user_simulator``), one an agent out of time could make at will."""
    from groundstate.users import ScriptedUser

    reply = ScriptedUser.reply

    def slow_to_read(self: ScriptedUser, message: str) -> str | None:
        if message.startswith("huge"):
            time.sleep(0.6)  # past the 0.3 s limit: the agent's message takes that long
        return reply(self, message)

    monkeypatch.setattr(ScriptedUser, "reply", slow_to_read)
    suite = edited_bank(lambda task: task.update(time_limit=0.3))

    async def sends_a_huge_message(session: Session) -> str:
        await session.say("huge " + "x" * 1000)
        return "Moved 30 from A to B."  # no tool call: the limit's latch takes the session

    run = _run(suite, sends_a_huge_message)
    assert run.terminal_reason == "agent_failure/time_limit", run.infrastructure_status
    assert run.valid
    monkeypatch.undo()
    _then_honest(suite)


def test_a_user_model_asked_in_the_limits_last_moments_leaves_the_agents_time_limit(
    bank: Suite,
) -> None:
    """The agent dawdles through most of its time, then asks a (slow) user model: the limit
    strikes while the user answers, but the agent used the time up. Before, any reply under
    way at the limit made the attempt invalid: an agent about to time out could ask anything
    to drop its failure from the valid view."""
    from .test_model_users import bank_agent_system, model_user
    from .test_models_adversarial import limited

    async def asks_at_the_end(session: Session) -> str:
        time.sleep(0.4)  # four fifths of the 0.5 s limit
        await session.say("What is your PIN?")
        return "done"

    with OpenAICompatibleServer([Reply(text="1234", delay=0.6)]) as server:
        system = limited(bank_agent_system(model_user(server)), 0.5)
        run = _run(bank, asks_at_the_end, system=system)
    assert run.terminal_reason == "agent_failure/time_limit", run.infrastructure_status
    assert run.valid


def test_a_question_still_unanswered_at_the_limit_after_the_agent_returned_ends_it_there(
    edited_bank: EditTask, monkeypatch: pytest.MonkeyPatch, release: threading.Event
) -> None:
    """A helper thread's question to the user still waiting for its answer past the limit
    after the agent returned: as for a tool call still running, the attempt ends at its limit
    (the scripted user's time is the agent's). Before, the wait gave up silently and the
    attempt was graded a success, the answer landing in the trace after the final reply."""
    from groundstate.users import ScriptedUser

    reply = ScriptedUser.reply

    reading = threading.Event()

    def slow_to_read(self: ScriptedUser, message: str) -> str | None:
        if message.startswith("huge"):
            reading.set()
            release.wait(BLOCK)  # the agent's message takes that long to read
        return reply(self, message)

    monkeypatch.setattr(ScriptedUser, "reply", slow_to_read)
    suite = edited_bank(lambda task: task.update(time_limit=AFTER_RETURN))

    async def asks_in_a_helper(session: Session) -> str:
        async def ask() -> None:
            await session.say("huge " + "x" * 1000)

        await session.call("check_pin", {"account": "A", "pin": "1234"})
        await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        _in_thread(ask())
        reading.wait(BLOCK)  # the helper is in the user's reply
        return "Moved 30 from A to B."

    run = _run(suite, asks_in_a_helper)
    assert run.terminal_reason == "agent_failure/time_limit", run.infrastructure_status
    assert run.infrastructure_status["blocked_in_user_reply"] is True
    last = run.observation_action_log[-1]
    assert isinstance(last, MessageEvent) and last.final, last
    release.set()
    monkeypatch.undo()
    _then_honest(suite)


def test_locking_the_database_behind_the_gateway_is_a_prohibited_action(bank: Suite) -> None:
    """The agent opens its database file itself and holds an exclusive lock past its end:
    nothing written, but no check can read the state. Held past the checks' busy timeout,
    they failed (``grader_failure``: the agent's failed attempt made invalid, dropped from
    the valid view). A lock taken behind the gateway is a prohibited action, like a write
    there; here it is let go a second later, so the test does not wait for the timeout."""
    holders: list[sqlite3.Connection] = []

    def let_go() -> None:
        for db in holders:
            db.rollback()
            db.close()

    async def locks_the_file(session: Session) -> str:
        await session.call("check_pin", {"account": "A", "pin": "1234"})
        for path in _live_databases():
            db = sqlite3.connect(path, timeout=0.1, check_same_thread=False)
            with contextlib.suppress(sqlite3.Error):  # one another attempt holds, say
                db.execute("BEGIN EXCLUSIVE")
                holders.append(db)
        threading.Timer(1.0, let_go).start()
        return "Moved 30 from A to B."

    run = _run(bank, locks_the_file)
    assert holders, "the agent held no lock"
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert run.infrastructure_status["stop"]["stage"] == "outside_gateway"
    assert "lock" in run.infrastructure_status["stop"]["message"]
    _then_honest(bank)


def test_a_lone_surrogate_sent_to_a_user_model_is_the_agents_text_not_a_broken_user(
    bank: Suite,
) -> None:
    """The agent's message holds ``"\\ud800"``: the user model's request could not be encoded,
    an ``environment_failure/user_simulator`` (invalid) of the agent's making. The user now
    reads the message as the trace records it (escaped), and the attempt is graded."""
    from .test_model_users import bank_agent_system, model_user

    async def asks_oddly(session: Session) -> str:
        await session.say("What is your PIN? \ud800")
        return "I could not do it."

    with OpenAICompatibleServer([Reply(text="1234")]) as server:
        run = _run(bank, asks_oddly, system=bank_agent_system(model_user(server)))
        (request,) = server.requests
    assert run.terminal_reason == "agent_failure/incorrect_state", run.infrastructure_status
    assert request["messages"][-1]["content"] == "What is your PIN? \\ud800"


def test_a_call_blocked_past_the_end_that_returns_while_graded_lands_in_no_trace(
    slow_bank: Suite,
) -> None:
    """A helper's call blocked in Python past the end returns while the attempt is graded
    (a check lets it go): its event was appended to the trace then, after the final reply
    (and maybe between the record and its ``trace.jsonl``). What ends after the attempt is
    named in ``blocked_in_tool``, not recorded."""
    root = slow_bank.root
    released = root / "released"
    task = root / "tasks" / "transfer.yaml"
    task.write_text(task.read_text().replace("time_limit: 5", f"time_limit: {AFTER_RETURN}"))
    with (root / "checks.py").open("a") as checks:
        checks.write(
            "\n\ndef lets_the_payment_go(s0: Any, sT: Any) -> bool:\n"
            "    import pathlib, time\n"
            f"    pathlib.Path({str(released)!r}).touch()\n"
            "    time.sleep(0.5)  # the payment returns meanwhile\n"
            "    return True\n"
        )
    text = task.read_text().replace(
        "check: checks.py:money_conserved", "check: checks.py:lets_the_payment_go"
    )
    task.write_text(text)
    suite = load_suite(root)
    run = _run(suite, _pays_in_a_helper(suite, BLOCK, until=released))
    assert run.terminal_reason == "agent_failure/time_limit", run.infrastructure_status
    assert run.infrastructure_status["blocked_in_tool"] == "pay_slowly"
    last = run.observation_action_log[-1]
    assert isinstance(last, MessageEvent) and last.final, last


def test_a_call_blocked_at_the_time_limit_holds_up_no_other_attempt(
    slow_bank: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At its time limit the episode latches the stop and ends the session, each waiting up
    to END_WAIT for the call in flight: on the loop that runs every attempt, that held them
    all. The payment lasts until the quick attempt has finished: were the loop held, the
    slow attempt would give up on it and finish first. The wait is a third of HANG, not its
    1 s: the quick attempt (a reset, a conversation, a grading) must finish within it, which
    a loaded machine may not do in 1 s; held, the loop still lets it finish only after."""
    monkeypatch.setattr(episode, "END_WAIT", HANG / 3)
    task = slow_bank.root / "tasks" / "transfer.yaml"
    task.write_text(task.read_text().replace("time_limit: 5", "time_limit: 0.3"))
    limited = load_suite(slow_bank.root)
    quick_done = tmp_path / "quick-done"
    finished: list[str] = []

    async def timed(name: str, suite: Suite, fn: AgentFn) -> None:
        info = AttemptInfo(run_id=name, batch_id="adhoc", attempt=1, seed=0)
        task = suite.tasks["transfer"]
        await run_attempt(task, suite, scripted_system(), FunctionAgent(fn), info)
        finished.append(name)
        if name == "quick":
            quick_done.touch()

    async def pays_in_the_agent(session: Session) -> str:
        arguments = {"seconds": BLOCK, "until": str(quick_done)}
        await session.call("pay_slowly", arguments)
        return "Moved 30 from A to B."

    async def _quick(session: Session) -> str:
        await asyncio.sleep(0.5)  # past the slow one's limit
        return await _do_the_task(session)

    async def both() -> None:
        await asyncio.gather(
            timed("slow", limited, pays_in_the_agent), timed("quick", slow_bank, _quick)
        )

    started = time.perf_counter()
    asyncio.run(both())
    assert finished == ["quick", "slow"]
    assert time.perf_counter() - started < HANG
