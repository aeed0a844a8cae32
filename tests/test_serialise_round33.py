"""Round 33: each trace event is serialised twice per attempt, not three times.

Once when it happens (its line in the attempt's account) and once when its record is built
(``trace.jsonl``, which the episode compares with the account: an event changed since it was
logged is a prohibited action and the record keeps the account's lines). The record's text
(:func:`groundstate.store.prepare_run`) used to serialise every event a third time; it now
writes the lines ``trace.jsonl`` was built from. Pinned here: the stored bytes are those of
the full serialisation (every record of a retail batch, every solution of every retail task,
records made to trip the splice), and an event changed after it was logged is caught as
before, whatever it is changed into.

Found on the way: the comparison serialised each event with its own ``model_dump_json``, so
an agent that put an object of a subclass in the trace whose ``model_dump_json`` returned the
line logged while its fields named another call (a ``transfer`` turned into a ``check_pin``)
passed the comparison, was graded on the forged fields (``success``) and had them stored in
the record's text beside a ``trace.jsonl`` that named the transfer. Lines are now written by
the trace classes' own serializers, and an event of any other class than the trace's own is
a change to the trace.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from groundstate import store as store_module
from groundstate.agents.base import Session
from groundstate.agents.scripted import ScriptedAgent
from groundstate.episode import AttemptInfo, AttemptJob, AttemptOutput, run_attempt
from groundstate.executors import Executor, make_executor
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.system import AgentEntry, HarnessSection, SystemSpec
from groundstate.store import RunStore, prepare_run
from groundstate.testing import FunctionAgent, attempt, scripted_system
from groundstate.trace import (
    MessageEvent,
    ToolCallEvent,
    TraceEvent,
    dump_jsonl,
    event_json,
    genuine,
    load_jsonl,
)

RETAIL = Path(__file__).resolve().parent.parent / "examples" / "retail"


@pytest.fixture(scope="module")
def retail() -> Suite:
    return load_suite(RETAIL)


def _same_as_full(output: AttemptOutput) -> None:
    """The record prepared from the episode's lines is the one prepared by serialising the
    whole record (the route without the reuse), byte for byte: text, hashes and files."""
    assert output.trace_lines is not None
    reused = prepare_run(output.run, output.artifacts, output.trace_lines)
    full = prepare_run(output.run, output.artifacts)
    assert reused.text == full.text == full.run.model_dump_json()
    assert (reused.content, reused.hashes, reused.files) == (full.content, full.hashes, full.files)


def test_every_retail_solution_stores_the_same_bytes(retail: Suite) -> None:
    """Every solution of every retail task (oracles, alternatives and near misses that fail
    a constraint or an assertion), each attempt's record as stored."""
    loop = asyncio.new_event_loop()
    try:
        for task_id, solutions in sorted(retail.solutions.items()):
            for name, solution in sorted(solutions.items()):
                info = AttemptInfo(run_id=f"{task_id}-{name}", batch_id="b", attempt=1, seed=0)
                agent = ScriptedAgent(solution.steps)
                output = loop.run_until_complete(
                    run_attempt(retail.tasks[task_id], retail, scripted_system(), agent, info)
                )
                assert output.trace_lines == output.artifacts["trace.jsonl"].splitlines()
                _same_as_full(output)
    finally:
        loop.close()


@dataclass
class _Oracles:
    """The in-process executor, replaying each task's oracle (as the canary does)."""

    inner: Executor
    name: str = "in-process"

    def open(self, concurrency: int) -> None:
        self.inner.open(concurrency)

    def close(self) -> None:
        self.inner.close()

    async def run(self, job: AttemptJob) -> AttemptOutput:
        return await self.inner.run(replace(job, solution=job.solution or "oracle"))


def _buildable() -> SystemSpec:
    """A system the runner can build (its agent is never run: the oracles are)."""
    loop = AgentEntry(entry="groundstate.agents.scripted:ScriptedAgent", params={"steps": []})
    return SystemSpec(name="oracles", harness=HarnessSection(orchestration_loop=loop))


def test_a_retail_batch_stores_each_record_as_the_full_serialisation(
    retail: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every record a batch stores went through the reuse (the executor passes the lines),
    and each is, byte for byte, what serialising the whole record writes."""
    spliced: list[bool] = []
    texts: list[tuple[str, str]] = []
    record_text = store_module._record_text

    def compared(run: AgentRun, lines: list[str] | None) -> str:
        text = record_text(run, lines)
        spliced.append(lines is not None)
        texts.append((text, run.model_dump_json()))
        return text

    monkeypatch.setattr(store_module, "_record_text", compared)
    with RunStore(tmp_path / "runs.db") as store:
        executor = _Oracles(make_executor("in-process", retail))
        runner = BatchRunner(retail, _buildable(), store, executor=executor)
        result = asyncio.run(runner.start(BatchConfig(attempts=2, concurrency=4)))
        assert all(run.success for run in result.runs)
        stored = store.runs(result.batch.batch_id)
    assert len(stored) == 2 * len(retail.tasks)
    assert spliced and all(spliced)
    assert all(reused == full for reused, full in texts)
    by_id = {json.loads(text)["run_id"]: text for text, _ in texts}
    for run in stored:  # what was stored is what was checked
        assert run.model_dump_json() == by_id[run.run_id]


# --- the splice itself ------------------------------------------------------------------


def _output(suite: Suite, **changes: Any) -> AttemptOutput:
    output = attempt(suite, "transfer", FunctionAgent(_honest))
    output.run = output.run.model_copy(update=changes)
    return output


async def _honest(session: Session) -> str:
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."


@pytest.mark.parametrize(
    "changes",
    [
        {"task_id": 'x","observation_action_log":[],"y'},
        {"grader_revision": '"observation_action_log":[]'},
        {"final_message": '"observation_action_log":[]'},
        {
            "infrastructure_status": {
                "observation_action_log": [],
                "o": '"observation_action_log":[]',
            }
        },
        {"retry_of": '\u2028\\"observation_action_log\\":[]'},
    ],
    ids=["a string before the trace", "a quote-led one", "a final message", "evidence", "odd text"],
)
def test_text_that_looks_like_the_trace_field_does_not_move_the_splice(
    bank: Suite, changes: dict[str, Any]
) -> None:
    _same_as_full(_output(bank, **changes))


def test_lines_that_do_not_fit_the_trace_are_not_spliced(bank: Suite) -> None:
    """Lines for another trace (one too few) are not written into the record: it is
    serialised whole, as before."""
    output = _output(bank)
    assert output.trace_lines is not None
    fewer = prepare_run(output.run, output.artifacts, output.trace_lines[:-1])
    assert (
        fewer.text
        == output.run.model_copy(
            update={"artifact_locations": fewer.run.artifact_locations}
        ).model_dump_json()
    )
    assert [e["tool"] for e in json.loads(fewer.text)["observation_action_log"][1:3]] == [
        "check_pin",
        "transfer",
    ]


def test_each_event_is_serialised_twice_per_attempt(
    bank: Suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once as it happens (the account), once for the record (``trace.jsonl``, compared with
    the account and written into the record's text): the record's text serialises none."""
    from groundstate import trace

    calls: list[type] = []
    own = dict(trace._OWN_JSON)

    def counting(kind: type) -> Any:
        def serialise(event: Any) -> bytes:
            calls.append(kind)
            return own[kind](event)

        return serialise

    monkeypatch.setattr(trace, "_OWN_JSON", {kind: counting(kind) for kind in own})
    output = attempt(bank, "transfer", FunctionAgent(_honest))
    events = output.run.observation_action_log
    assert output.run.success and len(events) >= 4
    assert len(calls) == 2 * len(events)
    row = prepare_run(output.run, output.artifacts, output.trace_lines)
    assert len(calls) == 2 * len(events)
    assert row.text == prepare_run(output.run, output.artifacts).text


# --- events changed after they were logged --------------------------------------------------


def _harness(session: Session) -> Any:
    return session._session  # type: ignore[attr-defined]


class _Forged(ToolCallEvent):
    """An event whose own ``model_dump_json`` writes the line logged for the real call."""

    line: str = ""

    def model_dump_json(self, **kwargs: Any) -> str:
        return LOGGED[0]


class _Shadowed(ToolCallEvent):
    """A subclass adding nothing: its JSON is the real event's, but it is not the trace's."""


LOGGED = [""]


def _forge(session: Session, how: str) -> None:
    events = _harness(session).events
    real = events[-1]
    LOGGED[0] = real.model_dump_json()
    pin = {"tool": "check_pin", "args": {"account": "A", "pin": "1234"}, "output": True}
    if how == "subclass with the logged line":
        events[-1] = _Forged.model_validate({**real.model_dump(), **pin})
    elif how == "its class swapped":
        real.__class__ = _Forged
        real.__dict__.update(pin)
    elif how == "a subclass with the same fields":
        events[-1] = _Shadowed.model_validate(real.model_dump())
    elif how == "a field written":
        real.tool = "check_pin"
    elif how == "its arguments edited in place":
        real.args["amount"] = 1
    elif how == "its writes emptied":
        real.writes.clear()
    elif how == "an earlier event written":
        events[0].text = "hello"
    elif how == "replaced by a copy":
        events[-1] = real.model_copy(update=pin)
    else:
        raise AssertionError(how)


@pytest.mark.parametrize(
    "how",
    [
        "subclass with the logged line",
        "its class swapped",
        "a subclass with the same fields",
        "a field written",
        "its arguments edited in place",
        "its writes emptied",
        "an earlier event written",
        "replaced by a copy",
    ],
)
def test_an_event_changed_after_it_was_logged_is_caught_and_stored_as_logged(
    bank: Suite, how: str
) -> None:
    """Whatever the agent makes of a logged event, the attempt is a prohibited action and
    the record (its text and ``trace.jsonl``) holds the trace as it happened, the record's
    text byte for byte the full serialisation."""
    logged: list[str] = []

    async def forges(session: Session) -> str:
        await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        logged.extend(dump_jsonl(_harness(session).events).splitlines())
        _forge(session, how)
        return "Moved 30 from A to B."

    output = attempt(bank, "transfer", FunctionAgent(forges))
    run = output.run
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert run.infrastructure_status["harness_state_changed"] == [
        "changed the trace after it was recorded"
    ]
    assert genuine(run.observation_action_log)
    row = prepare_run(run, output.artifacts, output.trace_lines)
    stored = [
        json.dumps(e, separators=(",", ":")) for e in json.loads(row.text)["observation_action_log"]
    ]
    lines = output.artifacts["trace.jsonl"].splitlines()
    assert lines[: len(logged)] == logged and len(lines) == len(logged) + 1  # + final reply
    assert [json.loads(line) for line in lines] == [json.loads(line) for line in stored]
    tools = [e.tool for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert tools == ["transfer"]
    _same_as_full(output)


def test_event_json_is_what_the_record_writes_of_each_event(bank: Suite) -> None:
    """The trace classes' own lines are ``model_dump_json``'s; any other object's line is
    what the record's serializer writes of it (its fields, as the trace's union reads
    them), never the object's own method."""
    output = attempt(bank, "transfer", FunctionAgent(_honest))
    events = output.run.observation_action_log
    assert genuine(events)
    assert [event_json(e) for e in events] == [e.model_dump_json() for e in events]
    real = next(e for e in events if isinstance(e, ToolCallEvent))
    LOGGED[0] = real.model_dump_json()
    forged = _Forged.model_validate({**real.model_dump(), "tool": "check_pin"})
    as_recorded = json.loads(
        AgentRun.model_validate(
            {**output.run.model_dump(), "observation_action_log": [forged]}
        ).model_dump_json()
    )["observation_action_log"][0]
    assert forged.model_dump_json() == LOGGED[0]
    assert json.loads(event_json(forged)) == as_recorded
    assert as_recorded["tool"] == "check_pin"
    assert not genuine([*events, forged])
    assert not genuine([MessageEvent.model_construct(), object()][1:])


def test_the_lines_parse_back_to_the_record_trace(bank: Suite) -> None:
    output = attempt(bank, "transfer", FunctionAgent(_honest))
    parsed: list[TraceEvent] = load_jsonl(output.artifacts["trace.jsonl"])
    assert parsed == output.run.observation_action_log
