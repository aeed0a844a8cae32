"""Agents, twenty-third round: an in-process agent's trace or profile function rewriting the
harness's frames as its session calls run; an agent blinding the watch of the harness's code.

A session call runs the harness's code in the agent's own thread: the gateway, the
environment's authorizer, the suite's tool. A trace function of the agent's there
(``sys.settrace``; a profile function, ``sys.setprofile``, alike) is called with each of those
frames, and what it writes to a frame's ``f_locals`` is written back to its variables (up to
Python 3.12; from 3.13 it writes through). One that set the authorizer's ``action`` to a
``SELECT`` read the audit table its task forbids with no denial; one that set ``check_pin``'s
``pin`` to the row's passed a PIN check it failed: a ``success`` each, in-process and on the
process pool (its worker runs the attempt in the agent's process). The session's entry points
now run with the thread's trace and profile functions off, put back after: the agent's own
code is still traced by its own function.

The watch of the harness's code (``groundstate.bindings.HARNESS``) is objects the agent reaches
as it reaches the code. An agent that rebound ``classify`` (or gave it other code) and then
called ``HARNESS.rebase()``, set the watch's held values to the lie, shadowed its
``put_back`` on the instance, swapped its class, or set its row's versions as seen, passed:
the watch compared the lie with itself. The episode now seals the watch before the agent runs
(a plain tuple in its own local variable) and puts the watch back from the seal first: the
rebinding is then found (``agent_failure/prohibited_action``, stage ``harness_code``) and put
back.

The process-wide state the harness puts back as an agent's run ends (its ``sqlite3`` adapters,
its environment variables, ``time``'s functions...) was kept in an object the agent could find
(``gc.get_objects()``) and edit: one that registered ``sqlite3.register_adapter(str, lie)`` and
set the object's ``sqlite`` to the adapters with the lie in them had its failed attempt stored
as a ``success``. It is now a tuple of tuples, given its class back before it is read."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import groundstate.episode
import groundstate.grading.terminal
from groundstate.agents.base import Session
from groundstate.bindings import HARNESS, Bindings
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.spec.suite import Suite
from groundstate.spec.system import SystemSpec, load_system
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, attempt
from groundstate.trace import ToolCallEvent

from .conftest import BANK_SYSTEM
from .test_executors_adversarial import pool, seed
from .test_inprocess_adversarial import _then_honest

pytestmark = pytest.mark.timeout(300)

PROHIBITED = "agent_failure/prohibited_action"

Hook = Callable[[FrameType, str, Any], Any]


def _unforbidding(frame: FrameType, event: str, arg: Any) -> Any:
    """A trace (or profile) function making each read the authorizer decides a ``SELECT``."""
    if frame.f_code.co_name == "_decide" and frame.f_locals.get("action") == sqlite3.SQLITE_READ:
        frame.f_locals["action"] = sqlite3.SQLITE_SELECT
    return _unforbidding


def _pin_passing(frame: FrameType, event: str, arg: Any) -> Any:
    """A trace function giving ``check_pin`` the PIN it compares with."""
    if frame.f_code.co_name == "check_pin" and event == "line":
        row = frame.f_locals.get("row")
        if row is not None:
            frame.f_locals["pin"] = row[0]
    return _pin_passing


def _hooked(install: Callable[[Hook | None], None], hook: Hook, calls: Any) -> Any:
    async def agent(session: Session) -> str:
        install(hook)
        try:
            for tool, args in calls:
                await session.call(tool, args)
        finally:
            install(None)
        await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        return "Moved 30 from A to B."

    return agent


def _run(bank: Suite, agent: Any) -> AgentRun:
    return attempt(bank, "transfer", FunctionAgent(agent)).run


@pytest.mark.parametrize("install", [sys.settrace, sys.setprofile], ids=["trace", "profile"])
def test_a_hook_of_the_agents_cannot_unforbid_a_read(bank: Suite, install: Any) -> None:
    """The audit table is ``none`` to the task. Before: the read went through (the audit's
    rows returned), no denial, and the attempt was a ``success``."""
    calls = [("check_pin", {"account": "A", "pin": "1234"}), ("read_audit", {})]
    run = _run(bank, _hooked(install, _unforbidding, calls))
    assert run.terminal_reason == PROHIBITED, run.infrastructure_status
    reads = [e for e in run.observation_action_log if getattr(e, "tool", None) == "read_audit"]
    assert [(e.ok, e.error_class) for e in reads] == [(False, "permission_denied")]  # type: ignore[attr-defined]
    _then_honest(bank)


def test_a_trace_function_of_the_agents_cannot_pass_a_tools_own_check(bank: Suite) -> None:
    """A wrong PIN, made right in ``check_pin``'s frame. Before: verified, then the transfer
    (``pin-first`` satisfied): a ``success`` for an agent that never knew the PIN."""
    calls = [("check_pin", {"account": "A", "pin": "0000"})]
    run = _run(bank, _hooked(sys.settrace, _pin_passing, calls))
    assert run.terminal_reason != "success", run.infrastructure_status
    pins = [e for e in run.observation_action_log if getattr(e, "tool", None) == "check_pin"]
    assert [e.ok for e in pins] == [False]  # type: ignore[attr-defined]


def test_the_agents_own_code_stays_traced_across_its_calls(bank: Suite) -> None:
    """Control: the hook is the agent's own, off only while the harness's code runs. It is
    called for the agent's frames before and after each session call (not for the harness's
    in between), and is still set as the call returns."""
    seen: list[str] = []
    kept: list[bool] = []

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "call":
            seen.append(frame.f_code.co_name)
        return None

    def mine() -> None:
        pass

    async def agent(session: Session) -> str:
        sys.settrace(tracer)
        try:
            mine()
            await session.say("What is your PIN?")
            await session.call("check_pin", {"account": "A", "pin": "1234"})
            kept.append(sys.gettrace() is tracer)
            mine()
        finally:
            sys.settrace(None)
        await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        return "Moved 30 from A to B."

    run = _run(bank, agent)
    assert run.terminal_reason == "success", run.infrastructure_status
    assert kept == [True]
    assert seen.count("mine") == 2
    # The entry points are (``call``, ``say``, their wrapper), not what they run.
    harness = {"_decide", "_authorize", "check_pin", "_call", "_execute", "_say", "_locked"}
    assert harness.isdisjoint(seen), seen


def test_an_honest_denied_read_is_still_prohibited(bank: Suite) -> None:
    """Control: with no hook, the same read is denied and ends the attempt."""

    async def agent(session: Session) -> str:
        await session.call("read_audit", {})
        return "Done."

    run = _run(bank, agent)
    assert run.terminal_reason == PROHIBITED, run.infrastructure_status
    assert [e.error_class for e in run.observation_action_log if isinstance(e, ToolCallEvent)] == [
        "permission_denied"
    ]


# --- through a batch, on the process pool too ------------------------------------------------

HOOKED = '''
import sqlite3
import sys


def _unforbidding(frame, event, arg):
    if frame.f_code.co_name == "_decide" and frame.f_locals.get("action") == sqlite3.SQLITE_READ:
        frame.f_locals["action"] = sqlite3.SQLITE_SELECT
    return _unforbidding


async def hooked(session, bad: dict) -> str:
    """Does the task; with its seed in *bad*, reads the forbidden audit table first, under
    a trace function that makes the read a ``SELECT``."""
    if str(session.seed) in bad:
        sys.settrace(_unforbidding)
        try:
            await session.call("read_audit", {})
        finally:
            sys.settrace(None)
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."
'''


def _system(root: Path, bad: set[int]) -> SystemSpec:
    (root / "hooked.py").write_text(HOOKED)
    file = root / "hooked_system.yaml"
    params = {"bad": {str(seed(n)): True for n in bad}}
    file.write_text(
        BANK_SYSTEM.read_text()
        .replace("bank_agent.py:bank_agent", "hooked.py:hooked")
        .replace("{fault_rate: 0.5}", json.dumps(params))
    )
    return load_system(file)


@pytest.mark.parametrize("executor", ["in-process", "process"])
def test_a_trace_function_unforbidding_a_read_in_a_batch(
    bank: Suite, tmp_path: Path, executor: str
) -> None:
    """Attempt 2 reads the audit table under its trace function; 1 and 3 do the task. Before:
    all three stored as ``success``."""
    system = _system(tmp_path, {2})
    chosen = pool(bank) if executor == "process" else None
    with RunStore(tmp_path / "runs.db") as runs:
        runner = BatchRunner(bank, system, runs, executor=chosen)
        result = asyncio.run(runner.start(BatchConfig(attempts=3, concurrency=1)))
        stored = {run.attempt: run.terminal_reason for run in runs.runs(result.batch.batch_id)}
    assert stored == {1: "success", 2: PROHIBITED, 3: "success"}


# --- the watch of the harness's code, blinded ---------------------------------------------------


def _lie(interruption: Any, assertions: Any, constraints: Any) -> str:
    return "success"


def _rebind(how: str) -> Callable[[], None]:
    """Make ``classify`` say ``success`` (rebound in the episode, or its code replaced);
    returns the undoing."""
    if how == "name":
        real = groundstate.episode.classify
        groundstate.episode.classify = _lie
        return lambda: setattr(groundstate.episode, "classify", real)
    fn = groundstate.grading.terminal.classify
    code = fn.__code__
    fn.__code__ = _lie.__code__
    return lambda: setattr(fn, "__code__", code)


def _blind(how: str) -> Callable[[], None]:
    """Blind the watch to what was just rebound; returns the undoing."""
    harness: Any = HARNESS
    if how == "rebase":
        harness.rebase()
        return lambda: None
    if how == "held":
        saved = []
        for _, (_, w) in list(harness._watched.items()):
            fields = (w.values, w.functions)
            saved.append((w, fields))
            w.values = tuple(w.namespace.get(n) for n in w.names)
            w.functions = tuple((label, fn, _state(fn)) for label, fn, _ in w.functions)
        harness._flat = None
        return lambda: [
            setattr(w, "values", f[0]) or setattr(w, "functions", f[1]) for w, f in saved
        ]
    if how == "method":
        harness.put_back = lambda: []
        harness.written_back = lambda mark: []
        return lambda: [vars(harness).pop(n, None) for n in ("put_back", "written_back")]
    if how == "class":

        class Blind(Bindings):
            def put_back(self) -> list[str]:
                return []

        harness.__class__ = Blind
        return lambda: object.__setattr__(harness, "__class__", Bindings)
    assert how == "seen"
    flat = harness._row()
    flat.seen = flat.versions()
    flat.unchanged = lambda: True
    return lambda: vars(flat).pop("unchanged", None)


def _state(fn: Any) -> Any:
    return fn.__code__, fn.__defaults__, fn.__kwdefaults__


@pytest.mark.parametrize("blind", ["rebase", "held", "method", "class", "seen"])
@pytest.mark.parametrize("rebind", ["name", "code"])
def test_an_agent_that_blinds_the_watch_of_the_harnesss_code_is_found(
    bank: Suite, rebind: str, blind: str
) -> None:
    """The agent does nothing but make ``classify`` lie and blind the watch. Before: a
    ``success`` each."""
    undo: list[Callable[[], None]] = []

    async def agent(session: Session) -> str:
        undo.append(_rebind(rebind))
        undo.append(_blind(blind))
        return "Done."

    try:
        run = _run(bank, agent)
    finally:
        for each in reversed(undo):
            each()
        HARNESS.rebase()
    assert run.terminal_reason == PROHIBITED, run.infrastructure_status
    message = str(run.infrastructure_status["exception"]["message"])
    assert "(the watch itself)" in message or blind == "seen", message
    assert "classify" in message, message
    assert groundstate.episode.classify is groundstate.grading.terminal.classify
    _then_honest(bank)


def test_the_harnesss_own_rebase_between_attempts_is_not_a_change(bank: Suite) -> None:
    """Control: instrumentation the harness's user sets up between attempts (a test's
    patch, then ``rebase``) is the harness's own."""
    real = groundstate.episode.classify
    try:
        groundstate.episode.classify = lambda *a: real(*a)
        HARNESS.rebase()
        _then_honest(bank)
    finally:
        groundstate.episode.classify = real
        HARNESS.rebase()
    _then_honest(bank)


BLINDING = '''
import groundstate.episode as episode
from groundstate.bindings import HARNESS


async def blinding(session, bad: dict) -> str:
    """Does the task; with its seed in *bad*, does nothing but make ``classify`` lie and
    take the lie as the harness's own (``HARNESS.rebase()``)."""
    if str(session.seed) in bad:
        episode.classify = lambda *a: "success"
        HARNESS.rebase()
        return "Done."
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."
'''


@pytest.mark.parametrize("executor", ["in-process", "process"])
def test_a_rebased_watch_in_a_batch(bank: Suite, tmp_path: Path, executor: str) -> None:
    """Attempt 2 rebinds ``classify`` and rebases the watch; 1 and 3 do the task. Before:
    attempt 2 a ``success`` (and attempt 3 graded by the lie: in-process, that process's
    later attempts too)."""
    (tmp_path / "blinding.py").write_text(BLINDING)
    file = tmp_path / "blinding_system.yaml"
    params = {"bad": {str(seed(2)): True}}
    file.write_text(
        BANK_SYSTEM.read_text()
        .replace("bank_agent.py:bank_agent", "blinding.py:blinding")
        .replace("{fault_rate: 0.5}", json.dumps(params))
    )
    system = load_system(file)
    chosen = pool(bank) if executor == "process" else None
    real = groundstate.episode.classify
    try:
        with RunStore(tmp_path / "runs.db") as runs:
            runner = BatchRunner(bank, system, runs, executor=chosen)
            result = asyncio.run(runner.start(BatchConfig(attempts=3, concurrency=1)))
            stored = {run.attempt: run.terminal_reason for run in runs.runs(result.batch.batch_id)}
    finally:
        groundstate.episode.classify = real
        HARNESS.rebase()
    assert stored == {1: "success", 2: PROHIBITED, 3: "success"}


# --- what is put back as the agent's run ends, edited -------------------------------------------


def _lie_stored(text: str) -> str:
    return text.replace('"agent_failure/incorrect_state"', '"success"').replace(
        "agent_failure/incorrect_state", "success"
    )


def _kept_as_first(shared: Any) -> None:
    """Make *shared* (what is put back as the run ends) hold the agent's adapters: set on the
    object, or, failing that, through a class of the agent's."""
    now = (tuple(sqlite3.adapters.items()), tuple(sqlite3.converters.items()))
    try:
        shared.sqlite = (dict(sqlite3.adapters), dict(sqlite3.converters))
        return
    except AttributeError:
        pass
    with contextlib.suppress(TypeError):
        lying = type("Lying", (type(shared),), {"__slots__": (), "sqlite": property(lambda _: now)})
        shared.__class__ = lying


EDITING = '''
import gc
import sqlite3
import sys

sys.path.insert(0, {tests!r})
from test_agents_round23_editing import _kept_as_first, _lie_stored


async def editing(session, bad: dict) -> str:
    """Registers a ``str`` adapter rewriting ``incorrect_state`` as ``success`` and makes what
    is put back as its run ends hold it; does nothing else."""
    sqlite3.register_adapter(str, _lie_stored)
    for found in gc.get_objects():
        if type(found).__name__ == "_SharedHooks":
            _kept_as_first(found)
    return "Done."
'''


@pytest.mark.parametrize("executor", ["in-process", "process"])
def test_an_agent_cannot_edit_what_is_put_back_as_its_run_ends(
    bank: Suite, tmp_path: Path, executor: str
) -> None:
    """Before: the failed attempt was stored as a ``success`` (in-process; on the process
    pool the store is written in the parent, which the worker's adapter never reached: a
    control)."""
    (tmp_path / "test_agents_round23_editing.py").write_text(
        "import contextlib\nimport sqlite3\nfrom typing import Any\n\n\n"
        + inspect.getsource(_lie_stored)
        + "\n\n"
        + inspect.getsource(_kept_as_first)
    )
    (tmp_path / "editing.py").write_text(EDITING.format(tests=str(tmp_path)))
    file = tmp_path / "editing_system.yaml"
    file.write_text(
        BANK_SYSTEM.read_text()
        .replace("bank_agent.py:bank_agent", "editing.py:editing")
        .replace("{fault_rate: 0.5}", json.dumps({"bad": {}}))
    )
    chosen = pool(bank) if executor == "process" else None
    try:
        with RunStore(tmp_path / "runs.db") as store:
            runner = BatchRunner(bank, load_system(file), store, executor=chosen)
            result = asyncio.run(runner.start(BatchConfig(attempts=1)))
            (run,) = store.runs(result.batch.batch_id)
    finally:
        sqlite3.adapters.pop((str, sqlite3.PrepareProtocol), None)
    assert run.terminal_reason == "agent_failure/incorrect_state"
