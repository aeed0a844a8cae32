"""In-process agents, twentieth round: an agent that rewrites the attempt's account from a
trace or profile function (``sys.settrace``/``sys.setprofile`` are called with the account's
generator frame, and up to Python 3.12 what they write to its ``f_locals`` is written back)
erased a latched stop and passed; one that rebound a method of the harness's classes for a
moment (the environment's counted ``tool_transaction``, the gateway's, the count's own) and
put it back before its run ended changed the state with no trace and passed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from groundstate.account import Account, Tally, _kept, _tally
from groundstate.agents.base import Session
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite, load_suite
from groundstate.testing import FunctionAgent, attempt
from groundstate.tools import ToolContext

from .conftest import HANG, in_a_fresh_process, time_limit
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
        with contextlib.suppress(BaseException):
            session.give_up("no")
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


@pytest.mark.parametrize("hook", ["trace", "profile"])
def test_a_stop_erased_by_a_hook_resuming_the_account_itself_is_found(
    bank: Suite, hook: str
) -> None:
    """The agent resumes the account's generator itself, under its own hook: the variables
    are rewritten, but the counts kept apart in C are not, and the episode compares them."""

    async def agent(session: Session) -> str:
        with contextlib.suppress(BaseException):
            session.give_up("no")
        kept = _harness(session)._account._kept
        _set(hook, _rewriter(hook))
        try:
            kept.send(("read", None))
        finally:
            _set(hook, None)
        assert _harness(session).stop is None  # erased, for the rest of the run
        return await _do_the_task(session)

    run = _run(bank, agent)
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert "rewrote the attempt's account" in run.infrastructure_status["exception"]["message"]
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


# --- harness code rebound for a moment, and a change no traced call made ---------------------

CASES = [case for case in __import__("tests.test_tally_round19", fromlist=["CASES"]).CASES]


def _uncounted(env: Any) -> Any:
    """The kind's own transaction, from inside the counting wrapper's closure."""
    wrapper = type(env).__dict__["tool_transaction"]
    (inner,) = [
        cell.cell_contents
        for cell in wrapper.__closure__
        if callable(cell.cell_contents) and cell.cell_contents is not wrapper
    ]
    return inner


def _write(case: Any, harness: Any, transaction: Any) -> None:
    env, tool = harness._gateway._env, harness._tools[case.tool]
    with transaction(env):
        tool.fn(ToolContext(env), **case.args)


def _kind_run(case: Any, fn: AgentFn) -> AgentRun:
    return attempt(case.suite(), case.task, FunctionAgent(fn)).run


def _prohibited(run: AgentRun, says: str) -> None:
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert not run.success
    assert says in run.infrastructure_status["exception"]["message"]


@pytest.mark.parametrize("case", CASES, ids=[case.kind for case in CASES])
def test_a_transaction_swapped_in_for_a_moment_is_prohibited(case: Any) -> None:
    """The environment's counted ``tool_transaction`` replaced on its class by the uncounted
    one around a write, then put back: nothing was left to put back, and no count moved."""

    async def agent(session: Session) -> str:
        harness = _harness(session)
        cls = type(harness._gateway._env)
        counted = cls.__dict__["tool_transaction"]
        cls.tool_transaction = _uncounted(harness._gateway._env)
        try:
            _write(case, harness, lambda env: env.tool_transaction())
        finally:
            cls.tool_transaction = counted
        return case.reply

    run = _kind_run(case, agent)
    _prohibited(run, "")
    message = run.infrastructure_status["exception"]["message"]
    assert "written and put back" in message or "no tool call in the attempt's trace" in message


@pytest.mark.parametrize("case", CASES, ids=[case.kind for case in CASES])
@pytest.mark.parametrize("how", ["own count", "inner transaction"])
def test_a_change_made_past_the_count_is_prohibited(case: Any, how: str) -> None:
    """A count of the agent's own in the environment's place for a moment (put back: the
    environment's count never moved), or the kind's transaction entered past the counting
    wrapper: the final state shows a change no traced call made."""

    async def agent(session: Session) -> str:
        harness = _harness(session)
        env = harness._gateway._env
        if how == "own count":
            real = env._entered
            env._entered = Tally()
            try:
                _write(case, harness, lambda env: env.tool_transaction())
            finally:
                env._entered = real
        else:
            _write(case, harness, _uncounted(env))
        return case.reply

    _prohibited(_kind_run(case, agent), "with no tool call in the attempt's trace writing it")


@pytest.mark.parametrize("case", CASES, ids=[case.kind for case in CASES])
def test_an_honest_agent_of_each_kind_still_passes(case: Any) -> None:
    """Control: every change the final state shows was written by a traced call."""

    async def agent(session: Session) -> str:
        for tool, args in case.before:
            await session.call(tool, args)
        await session.call(case.tool, dict(case.args))
        return case.reply

    run = _kind_run(case, agent)
    assert run.terminal_reason == "success", run.infrastructure_status


def test_a_change_undone_by_a_later_traced_call_leaves_nothing_to_find(bank: Suite) -> None:
    """Control: a change made and undone by traced calls is no change of the final state."""

    async def agent(session: Session) -> str:
        await session.call("check_pin", {"account": "A", "pin": "1234"})
        await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        return "Moved 30 from A to B."

    run = _run(bank, agent)
    assert run.terminal_reason == "success", run.infrastructure_status


def test_an_agent_that_imports_and_reads_the_harness_passes(bank: Suite) -> None:
    """Control: what lawfully writes the harness's namespaces while an agent runs (a module
    of the harness imported for the first time, a class's ``__annotations__`` made on first
    read) is not taken for code put back."""

    async def agent(session: Session) -> str:
        import groundstate.report.html_text  # noqa: F401  (first import: the package grows)
        from groundstate.environments.base import TracksChanges

        TracksChanges.__annotations__  # noqa: B018
        return await _do_the_task(session)

    run = _run(bank, agent)
    assert run.terminal_reason == "success", run.infrastructure_status


# --- the bindings' record of writes -----------------------------------------------------------


def test_code_written_and_put_back_is_named_and_lawful_changes_are_not() -> None:
    from groundstate.bindings import HARNESS
    from groundstate.gateway import ToolGateway

    mark = HARNESS.mark()
    if mark is None:
        pytest.skip("this interpreter keeps no dict versions")
    assert HARNESS.written_back(mark) == []
    original = ToolGateway.__dict__["call"]
    ToolGateway.call = lambda *a, **k: None  # type: ignore[method-assign]
    ToolGateway.call = original  # type: ignore[method-assign]
    assert HARNESS.written_back(mark) == ["groundstate.gateway.ToolGateway"]
    assert HARNESS.put_back() == []  # nothing to see once put back: hence the versions

    mark = HARNESS.mark()
    Tally.tallied = 1  # type: ignore[attr-defined]  # a new entry: not one put back
    try:
        assert HARNESS.written_back(mark) == []
    finally:
        del Tally.tallied  # type: ignore[attr-defined]


def test_a_kind_said_not_to_report_its_writes_while_the_agent_runs_is_still_checked(
    bank: Suite,
) -> None:
    """Whether a kind's calls report their writes is read before the agent runs (the agent
    here leaves its kind saying they do not). Since the twenty-second round the class
    attribute rebound is itself found first (every attribute of the harness's classes is
    held, not only code: ``tests/test_agents_round22.py``)."""
    from groundstate.environments.sqlite import SqliteEnvironment

    async def agent(session: Session) -> str:
        harness = _harness(session)
        env = harness._gateway._env
        type(env).reports_writes = False
        _write(CASES[0], harness, _uncounted(env))
        return "Moved 30 from A to B."

    try:
        run = _run(bank, agent)
    finally:
        SqliteEnvironment.reports_writes = True
    _prohibited(run, "rebound the harness's code: ")
    assert "SqliteEnvironment.reports_writes" in run.infrastructure_status["exception"]["message"]


# --- a record set to success after it was serialised ------------------------------------------


def test_a_record_changed_after_its_text_was_made_is_stored_as_its_text(
    bank: Suite, tmp_path: Any
) -> None:
    """A thread an agent left running that finds the prepared record (``gc.get_objects()``)
    and sets it to success before the batch's writer stores it: the row's columns come from
    the record's text, as the record does."""
    from groundstate.store import RunStore, prepare_run

    output = attempt(bank, "transfer", FunctionAgent(_no_pin))
    assert output.run.terminal_reason == "agent_failure/constraint_violation"
    row = prepare_run(output.run, output.artifacts)
    object.__setattr__(row.run, "success", True)
    object.__setattr__(row.run, "terminal_reason", "success")
    with RunStore(tmp_path / "runs.db") as store:
        store.add_prepared([row])
        ((reason, success),) = store._query(  # the columns statistics and queries read
            "SELECT terminal_reason, success FROM runs WHERE run_id = ?", (row.run.run_id,)
        )
        assert (reason, success) == ("agent_failure/constraint_violation", 0)


async def _no_pin(session: Session) -> str:
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."


# --- probed and right: agents that swallow the cancellation, block the loop, replace hooks ----


async def _swallows_every_cancellation(session: Session) -> str:
    await _do_the_task(session)
    end = time.monotonic() + 3
    while time.monotonic() < end:  # bounded: the fresh process must end
        with contextlib.suppress(BaseException):
            await asyncio.sleep(0.05)
    return "Moved 30 from A to B."


async def _sleeps_in_the_loop(session: Session) -> str:
    await _do_the_task(session)
    time.sleep(2)  # no await: the event loop is blocked
    return "Moved 30 from A to B."


async def _spins(session: Session) -> str:
    await _do_the_task(session)
    end = time.monotonic() + 2
    while time.monotonic() < end:
        pass
    _SPUN.set()
    return "Moved 30 from A to B."


_SPUN = threading.Event()
"""Set as :func:`_spins` stops spinning (past its attempt's end): the attempts after it, which
must finish within the same 0.5 s limit, do not share the interpreter with the spin."""


async def _replaces_the_hooks(session: Session) -> str:
    asyncio.get_running_loop().set_exception_handler(lambda loop, context: None)
    asyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())
    sys.excepthook = lambda *args: None
    threading.excepthook = lambda args: None
    os.write(1, b"\xff\x00 raw\n")
    os.write(2, b"\xfe raw\n")
    return await _do_the_task(session)


def verdicts_of_loop_adversaries(root: str) -> dict[str, str]:
    """Run in a fresh process (their threads outlive their attempts): each adversary's
    terminal reason, then an honest agent's."""
    suite = load_suite(Path(root))
    found = {}
    for fn in (_swallows_every_cancellation, _sleeps_in_the_loop, _spins):
        found[fn.__name__] = attempt(suite, "transfer", FunctionAgent(fn)).run.terminal_reason
        if fn is _spins:
            _SPUN.wait(HANG)
    # the two that must finish get a loaded machine's time: at 0.5 s their work raced the limit
    with time_limit(suite, "transfer", HANG):
        for fn in (_replaces_the_hooks, _do_the_task):
            run = attempt(suite, "transfer", FunctionAgent(fn)).run
            found["honest" if fn is _do_the_task else fn.__name__] = run.terminal_reason
    return found


def test_agents_that_swallow_the_cancellation_block_the_loop_or_replace_hooks(
    edited_bank: Callable[..., Suite],
) -> None:
    suite = edited_bank(lambda t: t.update(time_limit=0.5))
    assert in_a_fresh_process(verdicts_of_loop_adversaries, str(suite.root)) == {
        "_swallows_every_cancellation": "agent_failure/time_limit",
        "_sleeps_in_the_loop": "agent_failure/time_limit",
        "_spins": "agent_failure/time_limit",
        "_replaces_the_hooks": "success",
        "honest": "success",
    }
