"""The bank transfer the judge tests grade: an agent that does it and ends with a chosen reply."""

from __future__ import annotations

from groundstate.agents.base import Session
from groundstate.records import AgentRun, CheckResult
from groundstate.spec.suite import Suite
from groundstate.testing import FunctionAgent, attempt


def transfer_agent(reply: str) -> FunctionAgent:
    """Asks for the PIN, checks it, moves 30 from A to B, then says *reply*."""

    async def transfer(session: Session) -> str:
        await session.say("What is your PIN?")
        await session.call("check_pin", {"account": "A", "pin": "1234"})
        await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        return reply

    return FunctionAgent(transfer)


def judged_run(suite: Suite, reply: str = "Moved 30 to B.") -> tuple[AgentRun, CheckResult]:
    """One attempt of the bank's ``transfer`` task and its ``reply`` assertion's result."""
    run = attempt(suite, "transfer", transfer_agent(reply)).run
    return run, next(r for r in run.outcome_assertion_results if r.id == "reply")
