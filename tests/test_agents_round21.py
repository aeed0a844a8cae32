"""In-process agents, twenty-first round: an agent that rebinds what the harness keeps on the
attempt's own objects rather than on its modules and classes (which :class:`Bindings`
watches): a copy of its task with a higher step limit put in the session's place, a method
set on the environment object, or the session's class swapped; and one that closes the
harness's own connection to the database, so that its next tool call or the final state's
read fails as the environment's (an invalid attempt, rerun, instead of the agent's fault)."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import pickle
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.bindings import Held
from groundstate.errors import ExecutorError
from groundstate.executors._job import FRAME
from groundstate.executors.local import _Inbox
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite
from groundstate.spec.system import BudgetsSection
from groundstate.store import prepare_run
from groundstate.testing import FunctionAgent, attempt, scripted_system

from .test_inprocess_adversarial import _do_the_task, _then_honest

AgentFn = Callable[[Session], Awaitable[str]]


def _run(suite: Suite, fn: AgentFn) -> AgentRun:
    return attempt(suite, "transfer", FunctionAgent(fn)).run


def _harness(session: Session) -> Any:
    return session._session  # type: ignore[attr-defined]


def _environment(session: Session) -> Any:
    """The attempt's environment, found as an agent finds it: through the session."""
    return _harness(session)._gateway._env


def _message(run: AgentRun) -> str:
    return str(run.infrastructure_status["exception"]["message"])


async def _eleven_steps(session: Session) -> str:
    """The task done in 11 steps (the limit is 6)."""
    await session.say("What is your PIN?")
    for _ in range(8):
        await session.call("balance", {"account": "A"})
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."


# --- the session's own attributes ---------------------------------------------------------


def _task_copied(harness: Any) -> None:
    harness._task = harness._task.model_copy(update={"step_limit": 100})


def _dict_replaced(harness: Any) -> None:
    task = harness._task.model_copy(update={"step_limit": 100})
    harness.__dict__ = dict(harness.__dict__, _task=task)


def _class_swapped(harness: Any) -> None:
    class Roomier(type(harness)):  # type: ignore[misc]
        @property
        def step_limit(self) -> int:
            return 100

    harness.__class__ = Roomier


@pytest.mark.parametrize(
    "rebind",
    [_task_copied, _dict_replaced, _class_swapped],
    ids=["task", "dict", "class"],
)
def test_a_session_given_a_higher_step_limit_is_found(
    bank: Suite, rebind: Callable[[Any], None]
) -> None:
    """Before: the agent's copy of the task decided the limit, at the call and in the check
    after the run (``_unlatched``): 11 steps of 6, ``success``."""

    async def agent(session: Session) -> str:
        rebind(_harness(session))
        return await _eleven_steps(session)

    run = _run(bank, agent)
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert "the attempt's session." in _message(run)
    assert not run.success
    _then_honest(bank)


def test_the_session_is_put_back_for_grading_and_the_record(bank: Suite) -> None:
    seen: list[Any] = []

    async def agent(session: Session) -> str:
        harness = _harness(session)
        seen.append((harness, harness._task))
        _task_copied(harness)
        return await _do_the_task(session)

    run = _run(bank, agent)
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    ((harness, task),) = seen
    assert harness._task is task and task.step_limit == 6


def test_a_tool_set_on_the_gateway_is_found(bank: Suite) -> None:
    async def agent(session: Session) -> str:
        gateway = _harness(session)._gateway
        gateway._tools = dict(gateway._tools)
        return await _do_the_task(session)

    run = _run(bank, agent)
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert "the attempt's gateway._tools" in _message(run)


# --- code set on the environment object ---------------------------------------------------


@pytest.mark.parametrize("name", ["state_hash", "health"])
def test_a_method_set_on_the_environment_object_is_found(bank: Suite, name: str) -> None:
    """Before: the harness called the agent's function (grading, the health reading) and
    raised out of the attempt."""

    async def agent(session: Session) -> str:
        def failing(*args: Any, **kwargs: Any) -> Any:
            raise sqlite3.OperationalError("disk I/O error")

        setattr(_environment(session), name, failing)
        return "I could not."

    run = _run(bank, agent)
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert f"the attempt's environment.{name}" in _message(run)
    _then_honest(bank)


# --- the harness's connections closed -----------------------------------------------------


@pytest.mark.parametrize("which", ["_control", "_evaluator", "_agent"])
@pytest.mark.parametrize("then_call", [False, True], ids=["then-answer", "then-call"])
def test_a_harness_connection_closed_is_the_agents_doing(
    bank: Suite, which: str, then_call: bool
) -> None:
    """Before: the final state's read (or the next tool call) failed, and the attempt was
    the environment's failure: invalid, rerun, the agent's failure out of its denominator."""

    async def agent(session: Session) -> str:
        await session.say("What is your PIN?")
        getattr(_environment(session), which).close()
        if then_call:
            with contextlib.suppress(Exception):
                await session.call("check_pin", {"account": "A", "pin": "1234"})
        return "I could not."

    run = _run(bank, agent)
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert "closed behind the tool gateway" in _message(run)
    assert run.infrastructure_status["exception"]["stage"] == "harness_code"
    _then_honest(bank)


def test_a_connection_of_the_agents_own_closed_is_no_matter(bank: Suite) -> None:
    """Control: the agent's own connection to the file (found by path) is not the harness's."""

    async def agent(session: Session) -> str:
        connection = sqlite3.connect(_environment(session)._live)
        connection.close()
        return await _do_the_task(session)

    assert _run(bank, agent).terminal_reason == "success"


# --- controls ---------------------------------------------------------------------------


def test_an_honest_attempt_changes_none_of_its_held_objects(bank: Suite) -> None:
    """Control: the run's own state moves (the end flag, the lock's holder, artifacts) and the
    environment's kind keeps state of its own; neither is a rebinding."""

    async def agent(session: Session) -> str:
        session.add_artifact("notes", "a note")
        return await _do_the_task(session)

    run = _run(bank, agent)
    assert run.terminal_reason == "success", run.infrastructure_status
    assert "harness_rebound" not in run.infrastructure_status


class _Box:
    def method(self) -> int:
        return 1


def test_held_names_and_puts_back_what_was_rebound() -> None:
    box = _Box()
    box.data, box.table, box.flag = [1], {"a": 1}, False  # type: ignore[attr-defined]
    held = Held(box, "box", frozenset({"flag"}))
    box.flag = True  # type: ignore[attr-defined]
    box.data.append(2)  # type: ignore[attr-defined]  (a list's contents may move)
    assert held.changed() == []
    box.table["b"] = 2  # type: ignore[attr-defined]
    box.method = lambda: 2  # type: ignore[method-assign]
    del box.data  # type: ignore[attr-defined]
    assert sorted(held.changed()) == ["box.data", "box.method", "box.table"]
    held.put_back()
    assert held.changed() == []
    assert box.method() == 1 and box.table == {"a": 1} and box.data == [1, 2]  # type: ignore[attr-defined]


def test_held_with_moving_state_counts_only_code_added() -> None:
    box = _Box()
    box.state = 1  # type: ignore[attr-defined]
    held = Held(box, "box", None)
    box.state, box.later = 2, "x"  # type: ignore[attr-defined]
    box.helper = print  # type: ignore[attr-defined]  (code of the kind's own, over nothing)
    assert held.changed() == []
    box.method = lambda: 2  # type: ignore[method-assign]
    assert held.changed() == ["box.method"]
    held.put_back()
    assert box.method() == 1 and box.state == 2  # type: ignore[attr-defined]


# --- the session's run state set by the agent ---------------------------------------------


def test_a_call_named_left_running_by_the_agent_does_not_skip_the_probes(bank: Suite) -> None:
    """Before: ``blocked_call`` set by the agent (no call running, no stop latched) made the
    probes after the run take the file as unreadable: the answer written to the database
    file itself passed (``success``)."""

    async def agent(session: Session) -> str:
        await session.say("What is your PIN?")
        await session.call("check_pin", {"account": "A", "pin": "1234"})
        connection = sqlite3.connect(_environment(session)._live)
        with connection:
            connection.execute("UPDATE accounts SET balance = 70 WHERE id = 'A'")
            connection.execute("UPDATE accounts SET balance = 80 WHERE id = 'B'")
            connection.execute(
                "INSERT INTO transfers(source, target, amount) VALUES ('A', 'B', 30)"
            )
        connection.close()
        _harness(session).blocked_call = "transfer"
        return "Moved 30 from A to B."

    run = _run(bank, agent)
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert "behind the tool gateway" in _message(run)
    _then_honest(bank)


def test_a_reply_named_running_by_the_agent_is_not_the_users_time(
    edited_bank: Callable[..., Suite],
) -> None:
    """Before: ``asking_since = 0`` set by the agent, then blocking past its limit, made the
    limit the user simulator's failure (``environment_failure/user_simulator``: invalid,
    rerun)."""
    suite = edited_bank(lambda t: t.update(time_limit=2))

    async def agent(session: Session) -> str:
        await session.say("What is your PIN?")
        _harness(session).asking_since = 0.0
        await asyncio.sleep(60)
        return "too late"

    run = _run(suite, agent)
    assert run.terminal_reason == "agent_failure/time_limit", run.infrastructure_status


@pytest.mark.parametrize("queued", [1e9, float("nan"), -1e9])
def test_a_queueing_time_set_by_the_agent_leaves_the_latency_in_range(
    bank: Suite, queued: float
) -> None:
    """Before: the session's count of the seconds its calls queued, set by the agent, was
    taken off the latency as it was: a latency of -1e9 or NaN recorded (1e9 of queueing
    and a latency above the attempt's own length for -1e9 do not fit either)."""

    async def agent(session: Session) -> str:
        _harness(session).queued = queued
        return await _do_the_task(session)

    run = _run(bank, agent)
    assert run.terminal_reason == "success", run.infrastructure_status
    assert 0.0 <= run.latency < 60.0


# --- a pool worker's results pipe -----------------------------------------------------------


class _Planted:
    """What an agent in a pool worker writes on its results pipe: unpickled, it makes a
    directory (any function, any arguments: ``os.system`` as well)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.makedirs, (self.path,))


def _framed(message: object) -> bytes:
    data = pickle.dumps(message)
    return FRAME.pack(len(data)) + data


@pytest.mark.parametrize("inner", [False, True], ids=["message", "record"])
def test_a_pickle_planted_on_a_workers_pipe_runs_nothing_in_the_parent(
    tmp_path: Path, inner: bool
) -> None:
    """Before: the parent read its workers' pipes with ``pickle.loads``, and the agent, which
    runs in the worker and can write there, ran a function of its choice in the parent
    (out of the worker's isolation: the store, every other attempt)."""
    planted = tmp_path / "planted"
    payload: object = _Planted(str(planted))
    message = ("done", 1, pickle.dumps(payload)) if inner else payload
    reader, writer = multiprocessing.Pipe(duplex=False)
    try:
        os.write(writer.fileno(), _framed(message))
        with pytest.raises(ExecutorError, match="something other than a message"):
            _Inbox(reader).read()
    finally:
        reader.close()
        writer.close()
    assert not planted.exists()


def test_a_workers_record_still_reads(bank: Suite) -> None:
    """Control: a done job's record, as a worker sends it, is read back whole."""
    output = attempt(bank, "transfer", FunctionAgent(_do_the_task))
    row = prepare_run(output.run, output.artifacts)
    reader, writer = multiprocessing.Pipe(duplex=False)
    try:
        os.write(writer.fileno(), _framed(("done", 7, pickle.dumps(row))))
        ((kind, key, value),) = _Inbox(reader).read()
    finally:
        reader.close()
        writer.close()
    assert (kind, key) == ("done", 7)
    assert value.text == row.text and value.run.terminal_reason == "success"


def test_a_budget_loosened_in_place_is_found(bank: Suite) -> None:
    """Before: the system's budget set to None in place (``object.__setattr__`` on its frozen
    section) let the agent spend 5.0 of 0.01 and pass (``success``)."""
    system = scripted_system().model_copy(update={"budgets": BudgetsSection(max_cost=0.01)})

    async def agent(session: Session) -> str:
        object.__setattr__(_harness(session)._system.budgets, "max_cost", None)
        session.record_usage(cost=5.0)
        return await _do_the_task(session)

    run = attempt(bank, "transfer", FunctionAgent(agent), system=system).run
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert "the system's fields" in _message(run)


def test_a_budget_kept_is_still_a_budget_stop(bank: Suite) -> None:
    """Control: the system as loaded, the budget decides."""
    system = scripted_system().model_copy(update={"budgets": BudgetsSection(max_cost=0.01)})

    async def agent(session: Session) -> str:
        with contextlib.suppress(Exception):
            session.record_usage(cost=5.0)
        return await _do_the_task(session)

    run = attempt(bank, "transfer", FunctionAgent(agent), system=system).run
    assert run.terminal_reason == "agent_failure/budget", run.infrastructure_status
