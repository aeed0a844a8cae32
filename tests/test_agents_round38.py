"""Round 38: adversarial agents that reach the harness through what it handed them (a tool's
result, the process's environment variables) rather than through its code."""

from __future__ import annotations

import os
from typing import Any

from groundstate.agents.base import Session
from groundstate.spec.suite import Suite
from groundstate.testing import FunctionAgent, attempt
from groundstate.trace import ToolCallEvent

from .conftest import time_limit


def _run(suite: Suite, fn: Any) -> Any:
    with time_limit(suite, "transfer", 30):
        return attempt(suite, "transfer", FunctionAgent(fn)).run


async def _do_the_task(session: Session) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."


def test_an_agent_rewriting_a_tool_result_it_was_handed_does_not_rewrite_the_trace(
    bank: Suite,
) -> None:
    """The result object the agent gets is its own: mutating it (its output list or dict)
    leaves the recorded call as the tool answered."""

    async def rewrites(session: Session) -> str:
        await session.say("What is your PIN?")
        for name, arguments in [
            ("check_pin", {"account": "A", "pin": "1234"}),
            ("transfer", {"source": "A", "target": "B", "amount": 30}),
        ]:
            result = await session.call(name, arguments)
            assert isinstance(result.output, dict)
            result.output.clear()
            result.output["forged"] = True
            arguments["amount"] = 1_000_000  # the arguments it passed, too
        return "Moved 30 from A to B."

    run = _run(bank, rewrites)
    assert run.terminal_reason == "success", run.infrastructure_status
    calls = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert [c.tool for c in calls] == ["check_pin", "transfer"]
    assert all(c.ok and "forged" not in str(c.model_dump()) for c in calls)
    assert "1000000" not in str(calls[0].model_dump())


def test_an_agent_setting_an_environment_variable_leaves_it_to_no_later_attempt(
    bank: Suite,
) -> None:
    seen: list[str | None] = []

    async def sets(session: Session) -> str:
        os.environ["GROUNDSTATE_R38_PROBE"] = "agent"
        return await _do_the_task(session)

    async def looks(session: Session) -> str:
        seen.append(os.environ.get("GROUNDSTATE_R38_PROBE"))
        return await _do_the_task(session)

    first = _run(bank, sets)
    second = _run(bank, looks)
    os.environ.pop("GROUNDSTATE_R38_PROBE", None)
    assert first.terminal_reason == "success"
    assert second.terminal_reason == "success"
    assert seen == [None]


def test_an_agent_that_lengthens_the_switch_interval_leaves_it_to_no_later_attempt(
    bank: Suite,
) -> None:
    """The interval is the process's: set to an hour by one agent, a later attempt's threads
    (the harness's alarm among them) would wait that long for the interpreter."""
    import sys

    before = sys.getswitchinterval()
    seen: list[float] = []

    async def lengthens(session: Session) -> str:
        sys.setswitchinterval(3600.0)
        return await _do_the_task(session)

    async def looks(session: Session) -> str:
        seen.append(sys.getswitchinterval())
        return await _do_the_task(session)

    try:
        first = _run(bank, lengthens)
        second = _run(bank, looks)
    finally:
        sys.setswitchinterval(before)
    assert first.terminal_reason == "success"
    assert second.terminal_reason == "success"
    assert seen == [before]
