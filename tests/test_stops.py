"""Stops are latched and time limits are hard: an agent cannot swallow, outwait or outspin them.

Every agent here is adversarial: it catches whatever the session raises and goes on to do the
task correctly, so only the latch can keep the verdict honest.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.runner import BatchConfig, run_batch
from groundstate.spec.suite import Suite
from groundstate.spec.system import BudgetsSection
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, attempt, scripted_system
from groundstate.trace import MessageEvent, ToolCallEvent

from .conftest import BLOCK, HANG, EditTask

AgentFn = Callable[[Session], Awaitable[Any]]


async def _swallow(action: Awaitable[Any]) -> Any:
    try:
        return await action
    except Exception:  # the adversary: every stop is caught and ignored
        return None


async def _transfer_anyway(session: Session) -> str:
    """Do the task correctly, ignoring any exception the session raises."""
    await _swallow(session.say("What is your PIN?"))
    await _swallow(session.call("check_pin", {"account": "A", "pin": "1234"}))
    await _swallow(session.call("transfer", {"source": "A", "target": "B", "amount": 30}))
    return "Moved 30 from A to B."


def _run(suite: Suite, fn: AgentFn, **kwargs: Any) -> Any:
    return attempt(suite, "transfer", FunctionAgent(fn), **kwargs).run


def _state_unchanged(run: Any) -> bool:
    return bool(run.initial_state_hash == run.final_state_hash)


def test_swallowed_step_limit_stays_a_step_limit(bank: Suite) -> None:
    async def chatty_then_work(session: Session) -> str:
        for _ in range(6):  # uses up the task's six steps
            await _swallow(session.call("balance", {"account": "A"}))
        return await _transfer_anyway(session)

    run = _run(bank, chatty_then_work)
    assert run.terminal_reason == "agent_failure/step_limit"
    assert _state_unchanged(run)  # every call after the stop was refused
    stop = run.infrastructure_status["stop"]
    assert (stop["kind"], stop["stage"], stop["step"]) == ("step_limit", "message", 6)
    assert run.infrastructure_status["exception"]["stage"] == "message"


def test_swallowed_tool_crash_stays_an_environment_failure(bank: Suite) -> None:
    async def crash_then_work(session: Session) -> str:
        await _swallow(session.call("explode", {}))
        return await _transfer_anyway(session)

    run = _run(bank, crash_then_work)
    assert run.terminal_reason == "environment_failure/tool_crash"
    assert not run.valid
    calls = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert [c.tool for c in calls] == ["explode"]  # nothing ran after the crash
    assert run.infrastructure_status["stop"]["kind"] == "tool_crash"


def test_swallowed_prohibited_action_stays_prohibited(bank: Suite) -> None:
    async def snoop_then_work(session: Session) -> str:
        await _swallow(session.call("read_audit", {}))
        return await _transfer_anyway(session)

    run = _run(bank, snoop_then_work)
    assert run.terminal_reason == "agent_failure/prohibited_action"
    assert _state_unchanged(run)


def test_swallowed_budget_stays_a_budget_stop(bank: Suite) -> None:
    system = scripted_system().model_copy(update={"budgets": BudgetsSection(max_cost=0.01)})

    async def spend_then_work(session: Session) -> str:
        with contextlib.suppress(Exception):
            session.record_usage(input_tokens=10, cost=0.02)
        with pytest.raises(Exception, match="budget"):  # later usage is refused too
            session.record_usage(input_tokens=5)
        return await _transfer_anyway(session)

    run = _run(bank, spend_then_work, system=system)
    assert run.terminal_reason == "agent_failure/budget"
    assert _state_unchanged(run)
    assert run.usage.input_tokens == 10  # nothing counted after the stop


def test_swallowed_give_up_stays_given_up(bank: Suite) -> None:
    async def give_up_then_work(session: Session) -> str:
        with contextlib.suppress(Exception):
            session.give_up("too hard")
        return await _transfer_anyway(session)

    assert _run(bank, give_up_then_work).terminal_reason == "agent_failure/gave_up"


def test_user_leaving_ends_the_conversation_for_good(edited_bank: EditTask) -> None:
    suite = edited_bank(lambda t: t.update(step_limit=20))

    async def goodbye_then_work(session: Session) -> str:
        await session.say("Is there anything else I can help with?")  # the user leaves
        return await _transfer_anyway(session)

    run = _run(suite, goodbye_then_work)
    assert _state_unchanged(run)  # graded like any attempt, on the unchanged state
    assert run.terminal_reason == "agent_failure/incorrect_state"


def test_the_first_stop_wins(bank: Suite) -> None:
    async def two_stops(session: Session) -> str:
        await _swallow(session.call("read_audit", {}))  # prohibited: latched
        await _swallow(session.call("explode", {}))  # refused, so the tool never crashes
        return "done"

    run = _run(bank, two_stops)
    assert run.terminal_reason == "agent_failure/prohibited_action"
    assert [e.tool for e in run.observation_action_log if isinstance(e, ToolCallEvent)] == [
        "read_audit"
    ]


def test_a_crash_after_a_stop_does_not_hide_the_stop(bank: Suite) -> None:
    async def stop_then_crash(session: Session) -> None:
        await _swallow(session.call("explode", {}))
        raise KeyError("the agent's own bug")

    run = _run(bank, stop_then_crash)
    assert run.terminal_reason == "environment_failure/tool_crash"


def test_the_final_reply_is_in_the_trace(bank: Suite) -> None:
    run = _run(bank, _transfer_anyway)
    assert run.terminal_reason == "success"
    last = run.observation_action_log[-1]
    assert isinstance(last, MessageEvent)
    assert (last.role, last.text, last.final) == ("agent", "Moved 30 from A to B.", True)
    assert not any(e.final for e in run.observation_action_log[:-1] if isinstance(e, MessageEvent))


# --- time limits ------------------------------------------------------------------------


def _short(edited_bank: EditTask, seconds: float = 0.5) -> Suite:
    return edited_bank(lambda t: t.update(time_limit=seconds))


def test_a_sleeping_agent_ends_at_the_time_limit(
    edited_bank: EditTask, release: threading.Event
) -> None:
    async def sleeper(session: Session) -> str:
        release.wait(BLOCK)  # blocks its event loop: an asyncio timeout alone would never fire
        return await _transfer_anyway(session)

    started = time.perf_counter()
    run = _run(_short(edited_bank), sleeper)
    assert run.terminal_reason == "agent_failure/time_limit"
    assert time.perf_counter() - started < HANG
    assert run.latency < HANG
    assert run.infrastructure_status["stop"]["stage"] == "time_limit"


def test_a_spinning_agent_ends_at_the_time_limit(edited_bank: EditTask) -> None:
    spinning = True

    async def spinner(session: Session) -> None:
        while spinning:  # a CPU loop that never yields
            pass

    started = time.perf_counter()
    try:
        run = _run(_short(edited_bank), spinner)
    finally:
        spinning = False
    assert run.terminal_reason == "agent_failure/time_limit"
    assert time.perf_counter() - started < HANG


def test_an_agent_that_wakes_after_the_limit_changes_nothing(
    edited_bank: EditTask, release: threading.Event
) -> None:
    woke = asyncio.Event()
    refused: list[str] = []

    async def late(session: Session) -> str:
        release.wait(BLOCK)  # woken once the attempt has ended, however slow the machine
        try:
            await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        except Exception as exc:
            refused.append(type(exc).__name__)
        woke.set()
        return "done"

    run = _run(_short(edited_bank, 0.3), late)
    assert run.terminal_reason == "agent_failure/time_limit"
    release.set()
    deadline = time.monotonic() + HANG
    while not refused and time.monotonic() < deadline:
        time.sleep(0.05)
    assert refused == ["TimeLimitReached"]
    assert _state_unchanged(run)


def test_a_batch_with_blocking_agents_finishes(
    edited_bank: EditTask, tmp_path: Any, release: threading.Event
) -> None:
    # The canary (the oracle, before any agent) runs under the same limit: 2 s, not 0.4, so
    # honest work on a loaded machine is not cut short (a CI run beside helpers was).
    suite = _short(edited_bank, 2.0)

    async def sleeper(session: Session) -> None:
        release.wait(BLOCK)

    started = time.perf_counter()
    with RunStore(tmp_path / "runs.db") as store:
        result = run_batch(
            suite,
            scripted_system(),
            BatchConfig(attempts=4, seed=0, concurrency=4),
            store,
            agent_factory=lambda: FunctionAgent(sleeper),
            validate=False,
        )
    assert [r.terminal_reason for r in result.final] == ["agent_failure/time_limit"] * 4
    assert time.perf_counter() - started < HANG  # no attempt waited for its blocked agent


@pytest.mark.parametrize("error", [SystemExit(3), KeyboardInterrupt(), asyncio.CancelledError()])
def test_base_exceptions_from_the_agent_are_crashes(bank: Suite, error: BaseException) -> None:
    async def exits(session: Session) -> None:
        raise error

    run = _run(bank, exits)
    assert run.terminal_reason == "agent_failure/crashed"
    assert type(error).__name__ in run.infrastructure_status["exception"]["message"]


def test_a_synchronous_run_is_a_harness_compatibility_failure(bank: Suite) -> None:
    class SyncAgent:
        def run(self, session: Session) -> str:
            return "done"

    run = attempt(bank, "transfer", SyncAgent()).run  # type: ignore[arg-type]
    assert run.terminal_reason == "harness_compatibility_failure"
    assert "async def" in run.infrastructure_status["exception"]["message"]


# --- graders under a time limit ----------------------------------------------------------


def _with_check(edited_bank: EditTask, body: str) -> Suite:
    def add(task: dict[str, Any]) -> None:
        task["outcome_assertions"].append({"id": "slow", "check": "checks.py:slow"})

    root = edited_bank(lambda task: None).root  # the copy, before a check names the function
    with (root / "checks.py").open("a") as handle:
        handle.write(f"\n\ndef slow(s0, sT):\n{body}\n")
    return edited_bank(add)


def test_a_hanging_check_is_a_grader_failure(
    edited_bank: EditTask, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setattr("groundstate.grading.outcome.GRADER_TIME_LIMIT", 0.3)
    released = tmp_path / "released"  # the check hangs until the test has its verdict
    hang = f"    import os, time\n    while not os.path.exists({str(released)!r}):\n"
    suite = _with_check(edited_bank, hang + "        time.sleep(0.02)\n    return True")
    started = time.perf_counter()
    try:
        run = _run(suite, _transfer_anyway)
    finally:
        released.touch()
    assert time.perf_counter() - started < HANG
    assert run.terminal_reason == "grader_failure" and not run.valid
    slow = next(r for r in run.outcome_assertion_results if r.id == "slow")
    assert slow.error is not None and "timed out" in slow.error


def test_a_runaway_query_in_a_check_is_a_grader_failure(
    edited_bank: EditTask, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("groundstate.grading.outcome.GRADER_TIME_LIMIT", 0.3)
    forever = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n"
    suite = _with_check(edited_bank, f"    return bool(sT.query({forever!r}))")
    run = _run(suite, _transfer_anyway)
    assert run.terminal_reason == "grader_failure"


def test_a_check_raising_system_exit_is_a_grader_failure(edited_bank: EditTask) -> None:
    suite = _with_check(edited_bank, "    raise SystemExit('bye')")
    run = _run(suite, _transfer_anyway)
    assert run.terminal_reason == "grader_failure"
