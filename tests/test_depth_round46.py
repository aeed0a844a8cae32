"""Round 46: arguments an agent nests deeper than a record can hold are its own bad call.

JSON and Python read an agent's tool arguments hundreds of levels deep, but pydantic
serialises a record only to about 250 levels: a call whose arguments were lists nested 300
deep was recorded as it came, its trace could not be serialised ("Maximum serialization depth
exceeded"), and the attempt ended in a harness error with no record stored (a constraint the
call violated was never judged: an invalid attempt the agent chose). Now the gateway refuses
arguments nested deeper than ``gateway.MAX_ARGUMENT_DEPTH`` as ``invalid_arguments`` before
any check reads them, says so to the agent, and keeps them ``cut`` in the trace.
"""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from groundstate.agents.base import Session
from groundstate.gateway import CUT_DEPTH, MAX_ARGUMENT_DEPTH, ToolGateway
from groundstate.runner import BatchConfig, run_batch
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.system import load_system
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, attempt
from groundstate.trace import ToolCallEvent, event_json

from .conftest import BANK, BANK_SYSTEM, time_limit
from .test_agents_round43 import _do_the_task

NOTE_TOOL = '''

@tool
def note(ctx: ToolContext, payload: Any) -> Any:
    """Keep a note (any JSON) and hand it back."""
    return payload
'''


def _lists(depth: int) -> Any:
    """``"x"`` inside *depth* lists."""
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def _objects(depth: int) -> Any:
    """``"x"`` inside *depth* objects."""
    value: Any = "x"
    for _ in range(depth):
        value = {"k": value}
    return value


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


@pytest.fixture
def noting_bank(tmp_path: Path) -> Suite:
    """The bank suite with a ``note`` tool that takes any JSON and returns it."""
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    with (root / "tools.py").open("a") as tools:
        tools.write(NOTE_TOOL)
    task_file = root / "tasks" / "transfer.yaml"
    data = yaml.safe_load(task_file.read_text())
    data["available_tools"].append("note")
    task_file.write_text(yaml.safe_dump(data))
    return load_suite(root)


def _deep_first(payload: Any, seen: list[Any]) -> Any:
    """An agent whose first call is a transfer before the PIN check (``pin-first`` is
    violated by the call itself, refused or not) with *payload* beside its arguments; then
    it does the task."""

    async def agent(session: Session) -> str:
        args = {"source": "A", "target": "B", "amount": 30, "memo": payload}
        seen.append(await session.call("transfer", args))
        await session.say("What is your PIN?")
        await session.call("check_pin", {"account": "A", "pin": "1234"})
        await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        return "Moved 30 from A to B."

    return agent


@pytest.mark.parametrize(
    "payload",
    [_lists(MAX_ARGUMENT_DEPTH + 1), _lists(300), _lists(1000), _objects(400)],
    ids=["just-past", "lists-300", "lists-1000", "objects-400"],
)
def test_a_call_nested_too_deeply_fails_as_the_agents_and_its_violation_is_stored(
    tmp_path: Path, payload: Any
) -> None:
    seen: list[Any] = []
    suite = load_suite(BANK)
    agent = _deep_first(payload, seen)
    with time_limit(suite, "transfer", 60), RunStore(tmp_path / "runs.db") as store:
        result = run_batch(
            suite,
            load_system(BANK_SYSTEM),
            BatchConfig(attempts=1),
            store,
            agent_factory=lambda: FunctionAgent(agent),
        )
        [run] = result.runs
        assert run.terminal_reason == "agent_failure/constraint_violation"
        [stored] = store.runs(store.batch().batch_id)
    assert stored.terminal_reason == "agent_failure/constraint_violation"
    told = seen[-1]  # the batch's preflight runs the agent too
    assert not told.ok and told.error_class == "invalid_arguments"
    assert "nested too deeply" in told.error  # past the stack: "not JSON" (as before)
    calls = [e for e in stored.observation_action_log if isinstance(e, ToolCallEvent)]
    first = calls[0]
    assert (first.tool, first.error_class) == ("transfer", "invalid_arguments")
    assert first.error == told.error
    assert _depth(first.args) <= CUT_DEPTH + 1  # kept cut: a record that stores
    assert "'source': 'A'" in str(first.args)  # the declared parameters kept (or their repr)
    assert [c.ok for c in calls[1:]] == [True, True]  # the attempt went on


def test_an_honest_nested_argument_still_reaches_the_tool(noting_bank: Suite) -> None:
    payloads = [_lists(20), _objects(20), _objects(MAX_ARGUMENT_DEPTH - 1)]
    results: list[Any] = []

    async def agent(session: Session) -> str:
        await session.say("What is your PIN?")
        await session.call("check_pin", {"account": "A", "pin": "1234"})
        for payload in payloads:
            results.append(await session.call("note", {"payload": payload}))
        await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        return "Moved 30 from A to B."

    task = noting_bank.tasks["transfer"]
    noting_bank.tasks["transfer"] = task.model_copy(update={"step_limit": 10})
    with time_limit(noting_bank, "transfer", 60):
        run = attempt(noting_bank, "transfer", FunctionAgent(agent)).run
    assert run.terminal_reason == "success"
    assert [(r.ok, r.output) for r in results] == [(True, p) for p in payloads]
    notes = [e for e in run.observation_action_log if getattr(e, "tool", None) == "note"]
    assert [e.args["payload"] for e in notes] == payloads  # recorded whole


def test_the_depth_bound_is_exact_and_covers_every_refusal(noting_bank: Suite) -> None:
    """At the bound a call runs; one level past it is refused, by any tool name, and the
    event recorded serialises (an unknown tool's too)."""
    from groundstate.environments.sqlite import SqliteEnvironment

    events: list[Any] = []
    fixture = noting_bank.root / "fixtures" / "bank.sql"
    with SqliteEnvironment(fixture, clock=datetime(2026, 1, 15)) as env:
        env.reset()
        gateway = ToolGateway(noting_bank.tools, env, events.append, lambda: 0.0)
        at = gateway.call(1, "note", {"payload": _lists(MAX_ARGUMENT_DEPTH - 1)})
        past = gateway.call(2, "note", {"payload": _lists(MAX_ARGUMENT_DEPTH)})
        unknown = gateway.call(3, "nothing", {"payload": _lists(500)})
        wide = gateway.call(4, "note", {"payload": [[i] for i in range(20_000)]})
    assert at.ok and at.output == _lists(MAX_ARGUMENT_DEPTH - 1)
    assert (
        past.error_class == "invalid_arguments"
        and f"more than {MAX_ARGUMENT_DEPTH} levels" in past.error
    )
    assert unknown.error_class == "unknown_tool"
    assert wide.ok  # wide but shallow: as before
    for event in events[1:3]:
        assert _depth(event.args) <= CUT_DEPTH + 1
        assert event_json(event)  # storable


def test_a_deep_final_reply_or_reason_is_the_agents_and_stored(tmp_path: Path) -> None:
    """What the agent hands back other than arguments: a final reply that is not text is a
    compatibility failure, a ``give_up`` reason its failure; neither is lost."""
    suite = load_suite(BANK)

    async def returns_deep(session: Session) -> Any:
        if session.seed == 0:  # the batch's smoke run: a compatible system
            return await _do_the_task(session)
        return _lists(1000)

    async def gives_up_deep(session: Session) -> Any:
        session.give_up(_lists(1000))  # type: ignore[arg-type]

    reasons = []
    for i, fn in enumerate([returns_deep, gives_up_deep]):
        with time_limit(suite, "transfer", 60), RunStore(tmp_path / f"runs{i}.db") as store:
            run_batch(
                suite,
                load_system(BANK_SYSTEM),
                BatchConfig(attempts=1),
                store,
                agent_factory=lambda fn=fn: FunctionAgent(fn),
            )
            [stored] = store.runs(store.batch().batch_id)
            reasons.append(stored.terminal_reason)
    assert reasons == ["harness_compatibility_failure", "agent_failure/gave_up"]
