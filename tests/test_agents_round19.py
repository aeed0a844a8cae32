"""In-process agents, nineteenth round: an agent that ends the whole process (``os._exit``,
``os.kill(os.getpid(), SIGKILL)``) mid-batch must not get its attempt run again on resume;
one that acts off its attempt's account (an account of its own in the session's place, a
gateway or a transaction of its own) must not pass."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from groundstate.account import Account
from groundstate.agents.base import Session
from groundstate.episode import GRADING, EpisodeSession
from groundstate.gateway import ToolGateway
from groundstate.runner import BatchConfig, BatchRunner, derive_seed
from groundstate.spec.suite import load_suite
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, attempt, scripted_system
from groundstate.tools import ToolContext

from .conftest import BANK
from .test_inprocess_adversarial import _do_the_task, _then_honest

ROOT = Path(__file__).resolve().parent.parent

# --- an agent that ends the process -------------------------------------------------------


def _ends_the_process(how: str) -> FunctionAgent:
    """Honest in the smoke run and every attempt but the second, where it ends the process."""

    async def agent(session: Session) -> str:
        if session.seed == derive_seed(0, "transfer", 2):
            await session.call("check_pin", {"account": "A", "pin": "1234"})
            if how == "exit":
                os._exit(7)
            os.kill(os.getpid(), signal.SIGKILL)
        return await _do_the_task(session)

    return FunctionAgent(agent)


def run_until_the_agent_ends_it(store_path: str, how: str) -> None:
    """Run in a process of its own (below): a batch of three attempts, cut by the agent."""
    with RunStore(Path(store_path)) as store:
        runner = BatchRunner(
            load_suite(BANK), scripted_system(), store, make_agent=lambda: _ends_the_process(how)
        )
        asyncio.run(runner.start(BatchConfig(attempts=3)))


@pytest.mark.parametrize("how", ["exit", "sigkill"])
def test_an_agent_that_ends_the_process_is_recorded_as_crashed_on_resume(
    tmp_path: Path, how: str
) -> None:
    store_path = tmp_path / "runs.db"
    code = (
        "import sys; from tests.test_agents_round19 import run_until_the_agent_ends_it as f; "
        "f(sys.argv[1], sys.argv[2])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(store_path), how],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (7, -signal.SIGKILL), done.stderr[-2000:]
    with RunStore(store_path) as store:
        (batch,) = store.batches()
        stored = store.runs(batch.batch_id)
        shown = [(r.attempt, r.terminal_reason) for r in stored]
        assert [attempt for attempt, _ in shown] == [1], (shown, done.stderr[-2000:])
        assert len(store.started_tries(batch.batch_id)) == 1  # the try the agent cut short
        runner = BatchRunner(
            load_suite(BANK),
            scripted_system(),
            store,
            make_agent=lambda: FunctionAgent(_do_the_task),
        )
        result = asyncio.run(runner.resume(batch.batch_id))
        runs = {r.attempt: r for r in result.runs}
        assert store.started_tries(batch.batch_id) == []
        assert store.verify(batch.batch_id).problems == []
    # Stored data kept; the cut try is the agent's crash, not another draw; the rest ran.
    assert runs[1].run_id == stored[0].run_id
    assert runs[2].terminal_reason == "agent_failure/crashed"
    assert runs[2].retry == 0 and runs[2].valid
    message = runs[2].infrastructure_status["exception"]["message"]
    assert "ended during this try" in message
    assert ("os._exit(7)" if how == "exit" else "the agent called os.kill(") in message
    assert runs[3].terminal_reason != "agent_failure/crashed"
    assert len(result.runs) == 3


def test_a_try_cut_short_by_an_interrupt_is_not_marked(tmp_path: Path) -> None:
    """A try that ends without being stored but with the process alive (an agent raising
    an error the executor passes on, a store refusing the write) leaves no mark: the
    resume runs it again, as before."""
    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(
            load_suite(BANK),
            scripted_system(),
            store,
            make_agent=lambda: FunctionAgent(_do_the_task),
        )
        result = asyncio.run(runner.start(BatchConfig(attempts=2)))
        assert store.started_tries(result.batch.batch_id) == []
        assert [r.terminal_reason for r in result.runs] == ["success", "success"]


# --- an account of the agent's own, put back before the end ---------------------------------


def _harness(session: Session) -> Any:
    return session._session  # type: ignore[attr-defined]


async def _swaps_its_account_around_the_read(session: Session) -> str:
    """The read its task forbids (``end``) made with an account of its own in the session's
    place, the real one put back and the read's event taken out of the trace: the real
    account never saw the stop, and the trace agrees with it."""
    harness = _harness(session)
    real = harness._account
    harness._account = Account()
    with contextlib.suppress(Exception):
        await session.call("read_audit", {})
    harness._account = real
    harness.events = [e for e in harness.events if getattr(e, "tool", None) != "read_audit"]
    return await _do_the_task(session)


async def _swaps_through_the_collector(session: Session) -> str:
    """As above, the session found through the garbage collector, and the real account put
    back with ``object.__setattr__``."""
    gc.collect()  # sessions of earlier tests' attempts left in cycles, not yet collected
    (harness,) = [o for o in gc.get_objects() if type(o) is EpisodeSession and not o._ended]
    real = harness._account
    object.__setattr__(harness, "_account", Account())
    with contextlib.suppress(Exception):
        await session.call("read_audit", {})
    object.__setattr__(harness, "_account", real)
    harness.events = [e for e in harness.events if getattr(e, "tool", None) != "read_audit"]
    return await _do_the_task(session)


@pytest.mark.parametrize(
    "agent", [_swaps_its_account_around_the_read, _swaps_through_the_collector]
)
def test_a_stop_latched_while_an_account_of_the_agents_was_in_place_still_decides(
    agent: Callable[[Session], Awaitable[str]],
) -> None:
    bank = load_suite(BANK)
    run = attempt(bank, "transfer", FunctionAgent(agent)).run
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert not run.success
    message = run.infrastructure_status["exception"]["message"]
    # Since the twenty-first round the trace list put in the session's place is found first.
    assert "the attempt's session.events" in message or (
        "called the environment outside the session" in message
    )
    _then_honest(bank)


# --- acting on the environment with no trace ------------------------------------------------


async def _transfers_through_a_gateway_of_its_own(session: Session) -> str:
    """The transfer, without the PIN the task requires first, made through a tool gateway
    of its own over the attempt's environment (its events go nowhere)."""
    harness = _harness(session)
    gateway = harness._gateway
    own = ToolGateway(gateway._tools, gateway._env, lambda event: None, lambda: 0.0)
    own.call(1, "transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."


async def _transfers_in_a_transaction_of_its_own(session: Session) -> str:
    """The same through the environment's own tool transaction, no gateway at all."""
    harness = _harness(session)
    env, tool = harness._gateway._env, harness._tools["transfer"]
    with env.tool_transaction():
        tool.fn(ToolContext(env), source="A", target="B", amount=30)
    return "Moved 30 from A to B."


@pytest.mark.parametrize(
    "agent", [_transfers_through_a_gateway_of_its_own, _transfers_in_a_transaction_of_its_own]
)
def test_a_change_made_outside_the_sessions_calls_is_a_prohibited_action(
    agent: Callable[[Session], Awaitable[str]],
) -> None:
    bank = load_suite(BANK)
    run = attempt(bank, "transfer", FunctionAgent(agent)).run
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert not run.success
    message = run.infrastructure_status["exception"]["message"]
    # Since the twenty-first round the trace list put in the session's place is found first.
    assert "the attempt's session.events" in message or (
        "called the environment outside the session" in message
    )
    _then_honest(bank)


async def _replays_the_call_into_the_real_account(session: Session) -> str:
    """The read its task forbids made with an account of its own in place, then the real
    one put back with the read's event and step added to it by hand: the trace, the steps
    and the count of calls entered all agree, and no stop was latched."""
    harness = _harness(session)
    real, own = harness._account, Account()
    harness._account = own
    with contextlib.suppress(Exception):
        await session.call("read_audit", {})
    harness._account = real
    for line in own.trace_lines():
        real.keep_line(line)
    real.take_step()
    return await _do_the_task(session)


async def _steps_past_the_limit_with_its_own_account(session: Session) -> str:
    """Its calls past the step limit (10) made each with an account of its own in place,
    and added to the real one by hand: no stop latched."""
    harness = _harness(session)
    real = harness._account
    calls = [("check_pin", {"account": "A", "pin": "1234"})] * 11
    for tool, args in [*calls, ("transfer", {"source": "A", "target": "B", "amount": 30})]:
        harness._account = Account()
        with contextlib.suppress(Exception):
            await session.call(tool, args)
        event = harness.events[-1].model_copy(update={"step": real.take_step()})
        harness.events[-1] = event
        real.keep_line(event.model_dump_json())
    harness._account = real
    return "Moved 30 from A to B."


@pytest.mark.parametrize(
    "agent",
    [_replays_the_call_into_the_real_account, _steps_past_the_limit_with_its_own_account],
)
def test_an_account_holding_what_should_have_stopped_the_attempt_stops_it(
    agent: Callable[[Session], Awaitable[str]],
) -> None:
    bank = load_suite(BANK)
    run = attempt(bank, "transfer", FunctionAgent(agent)).run
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert "with no stop latched" in run.infrastructure_status["exception"]["message"]
    _then_honest(bank)


def test_a_change_made_outside_the_session_as_grading_starts_is_a_prohibited_action() -> None:
    """A thread the agent left running makes the transfer through a transaction of its own
    just as the attempt's grading starts (the moment is made exact here through the
    episode's ``GRADING`` hook): the graded state has it, the trace has not. Without the
    count of calls entered it was a ``success`` for an agent that did nothing."""
    bank = load_suite(BANK)
    found: list[Any] = []

    async def leaves_a_hand_in(session: Session) -> str:
        found.append(_harness(session))
        return "Moved 30 from A to B."

    def at_grading() -> None:
        harness = found[0]
        env, tool = harness._gateway._env, harness._tools["transfer"]
        with env.tool_transaction():
            tool.fn(ToolContext(env), source="A", target="B", amount=30)

    token = GRADING.set(at_grading)
    try:
        run = attempt(bank, "transfer", FunctionAgent(leaves_a_hand_in)).run
    finally:
        GRADING.reset(token)
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert "outside the session" in run.infrastructure_status["exception"]["message"]
    _then_honest(bank)
