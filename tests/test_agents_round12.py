"""Adversarial in-process agents, twelfth round: process-wide things an agent changes that the
harness's own work then runs on (the ``time`` module's clocks, the garbage collector's
callbacks, the hooks for uncaught errors), and objects it hands the session and changes
afterwards.

Each must leave the attempt the verdict its state and process earn (never an invalid attempt,
never a harness that raises or hangs), the record readable back, and the next attempt as if
nothing had happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import thread as executor_threads
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.episode import EpisodeSession, default_environment, reset_checked
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.spec.suite import Suite
from groundstate.store import RunStore, prepare_run
from groundstate.testing import FunctionAgent, attempt, scripted_system
from groundstate.trace import (
    ModelCall,
    ModelCallEvent,
    ModelResponse,
    ModelToolCall,
    ToolCallEvent,
    load_jsonl,
)

from .conftest import BLOCK, HANG, EditTask, time_limit
from .test_adversarial_agents import _write_the_transfer
from .test_inprocess_adversarial import AgentFn, _do_the_task


async def _do_nothing(session: Session) -> str:
    return "Done."


def _run(suite: Suite, fn: AgentFn) -> AgentRun:
    output = attempt(suite, "transfer", FunctionAgent(fn))
    prepared = prepare_run(output.run, output.artifacts)  # the record stores ...
    assert AgentRun.model_validate_json(prepared.text) == prepared.run  # ... and reads back
    assert load_jsonl(output.artifacts["trace.jsonl"]) == output.run.observation_action_log
    return output.run


def _then_honest(suite: Suite) -> None:
    with time_limit(suite, "transfer", HANG):  # the adversary's tight limit is not its
        assert _run(suite, _do_the_task).terminal_reason == "success"


# --- the clocks -----------------------------------------------------------------------------


@pytest.fixture
def clocks() -> Iterator[None]:
    """The ``time`` module's clocks put back after the test, whatever the agent left."""
    first = time.monotonic, time.perf_counter
    yield
    time.monotonic, time.perf_counter = first


def _leaping(real: Callable[[], float]) -> Callable[[], float]:
    """A clock 1000 s further on at every reading."""
    leaps = itertools.count()
    return lambda: real() + 1000.0 * next(leaps)


@pytest.mark.usefixtures("clocks")
@pytest.mark.parametrize(
    ("name", "clock"),
    [
        ("monotonic", _leaping(time.monotonic)),
        ("perf_counter", lambda: math.nan),
    ],
)
def test_a_clock_the_agent_replaces_reaches_neither_its_record_nor_the_next_attempt(
    bank: Suite, name: str, clock: Callable[[], float]
) -> None:
    """``time.perf_counter`` giving NaN made every tool call's duration NaN, stored as null:
    the batch's records could not be read back (every later command failed on them). A
    ``time.monotonic`` leaping ahead timed out every Python check at once: the agent that
    did nothing had an invalid attempt (``grader_failure``), rerun. Both stayed replaced for
    the rest of the process."""
    real = getattr(time, name)

    async def replaces(session: Session) -> str:
        setattr(time, name, clock)
        return await _do_the_task(session)

    run = _run(bank, replaces)
    assert run.terminal_reason == "success", run.infrastructure_status
    assert getattr(time, name) is real
    calls = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert calls and all(math.isfinite(e.duration_ms) for e in calls)

    async def fails(session: Session) -> str:
        setattr(time, name, clock)
        return "Done."

    run = _run(bank, fails)
    assert run.terminal_reason == "agent_failure/incorrect_state", run.outcome_assertion_results
    _then_honest(bank)


@pytest.mark.usefixtures("clocks")
def test_a_clock_replaced_by_a_thread_left_running_does_not_time_out_the_grading(
    bank: Suite,
) -> None:
    """The clock is put back when the agent's run ends, but a thread of its own can replace
    it again while the attempt is graded: the checks' time limits are timed on the clock as
    imported (:data:`groundstate.alarms.CLOCK`), so they still ran and failed the agent's
    state, where every Python check had timed out (an invalid attempt)."""
    real, done = time.monotonic, threading.Event()

    def keeps_replacing() -> None:
        leaping = _leaping(real)
        while not done.wait(0.0005):
            time.monotonic = leaping

    async def leaves_a_thread(session: Session) -> str:
        threading.Thread(target=keeps_replacing, daemon=True).start()
        return "Done."

    try:
        run = _run(bank, leaves_a_thread)
    finally:
        done.set()
    assert run.terminal_reason == "agent_failure/incorrect_state"
    assert all(r.error is None for r in run.outcome_assertion_results), run
    time.monotonic = real
    _then_honest(bank)


# --- hooks any thread runs ------------------------------------------------------------------


def test_a_garbage_collector_callback_the_agent_adds_is_taken_out_when_its_run_ends(
    bank: Suite,
) -> None:
    """A callback in ``gc.callbacks`` runs on whichever thread collects next: after the agent
    returned, the episode's, which runs every attempt of the batch (one that slept held them
    all past their limits, for as long as it liked), and it stayed for every later attempt."""
    ran_outside: list[str] = []
    agent_threads: set[int] = set()

    def callback(phase: str, info: dict[str, Any]) -> None:
        if threading.get_ident() not in agent_threads:
            ran_outside.append(threading.current_thread().name)

    async def adds(session: Session) -> str:
        agent_threads.add(threading.get_ident())
        gc.callbacks.append(callback)
        return "Done."

    try:
        run = _run(bank, adds)
        gc.collect()
        assert callback not in gc.callbacks
    finally:
        if callback in gc.callbacks:
            gc.callbacks.remove(callback)
    assert run.terminal_reason == "agent_failure/incorrect_state"
    assert ran_outside == []
    _then_honest(bank)


def test_the_hooks_for_uncaught_errors_the_agent_sets_are_put_back(bank: Suite) -> None:
    """``sys.unraisablehook`` runs wherever a finalizer raises (a grader's thread, the
    episode's), ``threading.excepthook`` for any thread's uncaught error: an agent's own
    stayed for the rest of the process."""
    first = sys.unraisablehook, sys.excepthook, threading.excepthook

    def hook(*args: Any) -> None:
        time.sleep(HANG)

    async def sets(session: Session) -> str:
        sys.unraisablehook = sys.excepthook = threading.excepthook = hook
        return await _do_the_task(session)

    try:
        run = _run(bank, sets)
        assert (sys.unraisablehook, sys.excepthook, threading.excepthook) == first
    finally:
        sys.unraisablehook, sys.excepthook, threading.excepthook = first
    assert run.terminal_reason == "success"


# --- objects handed to the session ----------------------------------------------------------


def _model_call(response: ModelResponse) -> ModelCall:
    return ModelCall(
        provider="openai-chat", model="m", request_digest="d", latency_ms=1.0, response=response
    )


def test_a_model_call_changed_after_it_was_recorded_leaves_the_trace_alone(bank: Suite) -> None:
    """The trace kept the agent's ``ModelResponse`` itself (a pydantic model is not copied
    when it validates): its tool calls made a number after the call made the constraints
    raise in the harness (the attempt had no record), and text changed after the call was
    recorded as changed, even while the checks read it."""
    # (check_pin: a response asking for the transfer itself, before the PIN was checked,
    # would fail the task's check-before-transfer rule)
    call = ModelToolCall(id="1", name="check_pin", arguments="{}")
    response = ModelResponse(text="asked", tool_calls=[call])

    async def changes_it(session: Session) -> str:
        session.record_model_call(_model_call(response))  # type: ignore[attr-defined]
        response.text = "never asked"
        response.tool_calls = 5  # type: ignore[assignment]
        return await _do_the_task(session)

    run = _run(bank, changes_it)
    assert run.terminal_reason == "success", run.infrastructure_status
    (event,) = [e for e in run.observation_action_log if isinstance(e, ModelCallEvent)]
    assert event.response is not None and event.response.text == "asked"
    assert event.response.tool_calls == [call]


def test_a_model_call_that_no_longer_serializes_is_the_agents_error(bank: Suite) -> None:
    """Changed before it was handed over (a field set to another type), the call is refused
    in the agent's thread: the agent's error, which it may catch; the harness never sees it."""
    refused: list[str] = []

    async def hands_a_broken_one(session: Session) -> str:
        response = ModelResponse(text="asked")
        response.tool_calls = [object()]  # type: ignore[list-item]
        try:
            session.record_model_call(_model_call(response))  # type: ignore[attr-defined]
        except Exception as exc:
            refused.append(type(exc).__name__)
        return await _do_the_task(session)

    run = _run(bank, hands_a_broken_one)
    assert refused and run.terminal_reason == "success"
    assert not [e for e in run.observation_action_log if isinstance(e, ModelCallEvent)]


def test_an_audit_hook_the_agent_adds_is_refused(bank: Suite) -> None:
    """An audit hook cannot be taken out, and runs on every thread for every audited event:
    one that refused ``os.listdir`` and ``sqlite3.connect`` outside the agent's threads made
    the harness raise while it finished the attempt (no record), and every later attempt's
    environment fail to build (invalid attempts), for the rest of the process. Now refused."""
    armed, added = threading.Event(), []
    refused = {"os.listdir", "os.truncate", "sqlite3.connect", "pickle.find_class"}

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if armed.is_set() and event in refused:
            raise RuntimeError(f"no {event}")

    async def adds(session: Session) -> str:
        sys.addaudithook(hook)
        added.append(True)
        armed.set()
        return "Done."

    try:
        assert _run(bank, adds).terminal_reason == "agent_failure/incorrect_state"
        assert added  # the agent was not told: a refused hook is dropped silently
        _then_honest(bank)
    finally:
        armed.clear()  # before the fix, the hook stayed for every later test


# --- after the user has left ----------------------------------------------------------------


async def _user_leaves(session: Session) -> None:
    """The scripted user leaves at "anything else?"; the next call is refused for that."""
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.say("Is there anything else I can help with?")
    with contextlib.suppress(Exception):
        await session.call("balance", {"account": "A"})


def _empty_the_assertions(suite: Suite) -> None:
    suite.tasks["transfer"].outcome_assertions.clear()


@pytest.mark.parametrize(
    ("tamper", "stage"),
    [
        (lambda suite: _write_the_transfer(), "outside_gateway"),
        (_empty_the_assertions, "harness_code"),
    ],
)
def test_what_an_agent_does_after_its_user_left_is_still_found(
    bank: Suite, tamper: Callable[[Suite], None], stage: str
) -> None:
    """The user's leaving is latched as a stop that decides nothing (the state does), and the
    episode's later findings were latched only when no stop was: an agent whose user had left
    then wrote the transfer into its database behind the gateway, or emptied its task's
    assertions, and was graded ``success``."""

    async def leaves_then_tampers(session: Session) -> str:
        await _user_leaves(session)
        tamper(bank)
        return "Moved 30 from A to B."

    run = _run(bank, leaves_then_tampers)
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert run.infrastructure_status["stop"]["stage"] == stage


def test_an_agent_whose_user_left_is_graded_on_its_state(bank: Suite) -> None:
    """Nothing else found, the user's leaving still decides nothing: the state does."""

    async def leaves(session: Session) -> str:
        await _user_leaves(session)
        return "Goodbye."

    run = _run(bank, leaves)
    assert run.terminal_reason == "agent_failure/incorrect_state"
    _then_honest(bank)


# --- what Python waits for as it exits ------------------------------------------------------


def test_a_call_the_agent_left_in_its_loops_executor_is_not_waited_for_at_exit(
    edited_bank: EditTask,
) -> None:
    """``asyncio.to_thread`` (or ``run_in_executor``) runs a call in the default executor of
    the agent's loop, whose threads ``concurrent.futures`` joins as Python exits: a call
    blocked past the time limit held ``groundstate run`` open after its batch was stored, for
    as long as the call lasted (an hour's sleep: an hour)."""
    suite = edited_bank(lambda task: task.update(time_limit=0.3))
    release, blocked = threading.Event(), list[threading.Thread]()

    def blocks() -> None:
        blocked.append(threading.current_thread())
        release.wait(BLOCK)

    async def waits_in_a_thread(session: Session) -> str:
        await asyncio.to_thread(blocks)
        return "Done."

    try:
        run = _run(suite, waits_in_a_thread)
        assert run.terminal_reason == "agent_failure/time_limit"
        assert blocked and blocked[0].is_alive() and blocked[0].daemon
        assert blocked[0] not in executor_threads._threads_queues  # type: ignore[attr-defined]
    finally:
        release.set()


# --- agent code the garbage collector runs on the episode's thread --------------------------


def test_a_session_call_made_while_the_episode_holds_the_session_is_refused(bank: Suite) -> None:
    """A finalizer or a garbage collector callback of the agent's runs on whichever thread
    collects, the episode's included, also while the episode holds the session's lock (to
    latch a stop, to end the session: a collection can land there). One that called the
    session then waited for the lock its own thread held: the episode, and every attempt of
    the batch, hung for good. (A collection landing there is a matter of chance; here the
    episode's hold and the call are made directly.)"""
    env = default_environment(bank.tasks["transfer"], bank)
    refused: list[str] = []

    def latches_then_called() -> None:
        with env:
            reset_checked(env, bank.tasks["transfer"])
            session = EpisodeSession(bank.tasks["transfer"], bank, scripted_system(), env, 0)
            with session._briefly_locked():  # as latch() and end() hold it
                try:
                    session.record_usage(input_tokens=1)  # from a finalizer, say
                except RuntimeError as exc:
                    refused.append(str(exc))

    thread = threading.Thread(target=latches_then_called, daemon=True)
    thread.start()
    thread.join(HANG)
    assert not thread.is_alive(), "the episode's thread waited for its own lock"
    assert refused and "inside another session call" in refused[0]


def test_an_artifact_named_with_a_lone_surrogate_leaves_the_batch_verifiable(
    bank: Suite, tmp_path: Path
) -> None:
    """``add_artifact`` kept the text escaped but the name as given: a lone surrogate in it was
    stored as another name than the record's hashes named, and ``verify`` then found the
    agent's record altered (a batch that reads as tampered with)."""

    async def names_oddly(session: Session) -> str:
        session.add_artifact("notes\ud800.txt", "kept")  # type: ignore[attr-defined]
        return await _do_the_task(session)

    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(
            bank, scripted_system(), store, make_agent=lambda: FunctionAgent(names_oddly)
        )
        result = asyncio.run(runner.start(BatchConfig(attempts=1)))
        (run,) = store.runs(result.batch.batch_id)
        assert store.verify(result.batch.batch_id).problems == []
    assert run.terminal_reason == "success"
    assert "notes\\ud800.txt" in run.artifact_locations


# --- a denial the tool turns into an error of its own ---------------------------------------

WRAPPING_TOOLS = '''

import sqlite3


@tool
def lookup(ctx: ToolContext, table: str) -> list[Any]:
    """Rows of a table; database errors reported as the tool's own."""
    try:
        return [list(r) for r in ctx.db.execute(f"SELECT * FROM {table}")]
    except sqlite3.Error as exc:
        raise ToolError(f"lookup failed: {exc}") from exc


@tool
def first_of(ctx: ToolContext, table: str) -> Any:
    """The first row's first value (crashes when the query fails: a careless tool)."""
    try:
        rows = ctx.db.execute(f"SELECT * FROM {table}").fetchall()
    except sqlite3.Error:
        rows = None
    return rows[0][0]
'''


@pytest.fixture
def wrapping_bank(edited_bank: EditTask) -> Suite:
    root = edited_bank(lambda task: None).root
    with (root / "tools.py").open("a") as tools:
        tools.write(WRAPPING_TOOLS)

    def offer(task: dict[str, Any]) -> None:
        task["available_tools"] += ["lookup", "first_of"]
        task["step_limit"] = 10

    return edited_bank(offer)


@pytest.mark.parametrize("tool", ["lookup", "first_of"])
def test_a_denial_the_tool_makes_its_own_error_is_still_the_agents_denied_call(
    wrapping_bank: Suite, tool: str
) -> None:
    """The environment raises the denial when the tool lets the database's error through or
    swallows it; a tool that turned it into its own ``ToolError`` made the forbidden read a
    mere ``tool_error`` (``on_prohibited_action: end`` did not stop the agent, which then did
    the task: ``success``), and one that crashed on the rows it did not get made the attempt
    an ``environment_failure/tool_crash`` (invalid: rerun) of the agent's choosing."""

    async def reads_the_audit_then_works(session: Session) -> str:
        with contextlib.suppress(Exception):
            await session.call(tool, {"table": "audit"})
        return await _do_the_task(session)

    run = _run(wrapping_bank, reads_the_audit_then_works)
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    (call,) = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert (call.error_class, call.denied) == ("permission_denied", ["read audit"])
    _then_honest(wrapping_bank)
