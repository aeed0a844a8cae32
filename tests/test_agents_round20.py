"""In-process agents, twentieth round: an agent that rewrites the attempt's account from a
trace or profile function (``sys.settrace``/``sys.setprofile`` are called with the account's
generator frame, and up to Python 3.12 what they write to its ``f_locals`` is written back)
erased a latched stop and passed; one that rebound a method of the harness's classes for a
moment (the environment's counted ``tool_transaction``, the gateway's, the count's own) and
put it back before its run ended changed the state with no trace and passed."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from groundstate.account import Account, Tally, _kept, _tally
from groundstate.agents.base import Session
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite
from groundstate.testing import FunctionAgent, attempt
from groundstate.tools import ToolContext

from .test_inprocess_adversarial import _do_the_task, _then_honest

AgentFn = Callable[[Session], Awaitable[str]]


def _run(suite: Suite, fn: AgentFn) -> AgentRun:
    return attempt(suite, "transfer", FunctionAgent(fn)).run


def _harness(session: Session) -> Any:
    return session._session  # type: ignore[attr-defined]


# --- a trace or profile function that rewrites the account --------------------------------


def _rewriter(hook: str) -> Callable[..., Any]:
    """A trace (or profile) function that empties the account's stops and steps, and the
    count's count, whenever their generators run."""

    def rewrite(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code is _kept.__code__:
            frame.f_locals.update(stops=(), steps=0)
        elif frame.f_code is _tally.__code__:
            frame.f_locals.update(count=0)
        return rewrite if hook == "trace" else None

    return rewrite


def _set(hook: str, fn: Any) -> None:
    (sys.settrace if hook == "trace" else sys.setprofile)(fn)


@pytest.mark.parametrize("hook", ["trace", "profile"])
def test_a_hook_cannot_rewrite_the_account_directly(hook: str) -> None:
    account, tally = Account(), Tally()
    account.take_step()
    tally.add()
    before = sys.gettrace(), sys.getprofile()
    _set(hook, _rewriter(hook))
    try:
        steps, count = account.read().steps, tally.read()
    finally:
        _set(hook, None)
    assert (steps, count) == (1, 1)
    assert (sys.gettrace(), sys.getprofile()) == before  # put back as found (None here)


@pytest.mark.parametrize("hook", ["trace", "profile"])
def test_a_stop_erased_by_a_hook_still_decides(bank: Suite, hook: str) -> None:
    async def agent(session: Session) -> str:
        try:
            session.give_up("no")
        except BaseException:
            pass
        _set(hook, _rewriter(hook))
        try:
            session.steps  # noqa: B018  (read: the account's generator runs)
        finally:
            _set(hook, None)
        return await _do_the_task(session)

    run = _run(bank, agent)
    assert run.terminal_reason == "agent_failure/gave_up", run.infrastructure_status
    assert not run.success
    _then_honest(bank)


def test_an_honest_agent_under_a_tracer_of_its_own_passes(bank: Suite) -> None:
    """Control: a tracer the agent sets for itself (a debugger, coverage) is left alone."""
    seen: list[str] = []

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        seen.append(event)
        return None

    async def agent(session: Session) -> str:
        sys.settrace(tracer)
        try:
            return await _do_the_task(session)
        finally:
            sys.settrace(None)

    run = _run(bank, agent)
    assert run.terminal_reason == "success", run.infrastructure_status
    assert seen
