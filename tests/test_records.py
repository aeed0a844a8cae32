"""Run records keep their format: a golden record loads, and records round-trip exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from groundstate.environments.base import RowWrite
from groundstate.records import FORMAT_VERSION, AgentRun, CheckResult
from groundstate.trace import (
    MessageEvent,
    ModelCallError,
    ModelResponse,
    ModelToolCall,
    ToolCallEvent,
    TraceEvent,
    dump_jsonl,
    load_jsonl,
)

GOLDEN_V1 = Path(__file__).parent / "golden" / "agent_run_v1.json"
GOLDEN_V2 = Path(__file__).parent / "golden" / "agent_run_v2.json"


def test_golden_record_of_format_1_still_loads() -> None:
    data = json.loads(GOLDEN_V1.read_text())
    run = AgentRun.model_validate(data)
    assert run.format_version == 1 < FORMAT_VERSION
    assert run.terminal_reason == "agent_failure/constraint_violation" and not run.success
    assert run.valid
    assert [e.kind for e in run.observation_action_log] == ["message", "tool_call"]
    dumped = json.loads(run.model_dump_json())
    # Format 2 added one defaulted field per trace event; nothing else is lost or added.
    for event in dumped["observation_action_log"]:
        added = "final" if event["kind"] == "message" else "writes"
        assert event.pop(added) in (False, [])
    assert dumped == data


def test_golden_record_of_format_2_round_trips_with_writes_and_the_final_reply() -> None:
    """The format-1 record's attempt as format 2 stores it (writes from a real run)."""
    data = json.loads(GOLDEN_V2.read_text())
    run = AgentRun.model_validate(data)
    assert run.format_version == FORMAT_VERSION == 2
    user, call, reply = run.observation_action_log
    assert isinstance(user, MessageEvent) and not user.final
    assert isinstance(reply, MessageEvent) and reply.final and reply.text == run.final_message
    assert isinstance(call, ToolCallEvent)
    assert [(w.table, w.key, w.columns) for w in call.writes] == [
        ("accounts", "A", ["balance"]),
        ("accounts", "B", ["balance"]),
        ("transfers", 1, ["id", "source", "target", "amount", "at"]),
    ]
    assert call.writes[2].before is None
    assert json.loads(run.model_dump_json()) == data  # nothing lost, nothing added


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
messages = st.builds(
    MessageEvent,
    step=st.integers(0, 100),
    role=st.sampled_from(["user", "agent"]),
    text=st.none() | st.text(),
    final=st.booleans(),
    at=st.floats(0, 1e6),
)
rows = st.none() | st.dictionaries(st.text(max_size=8), json_values, max_size=3)
writes = st.builds(
    RowWrite,
    table=st.text(max_size=10),
    key=json_values,
    before=rows,
    after=rows,
)
calls = st.builds(
    ToolCallEvent,
    step=st.integers(0, 100),
    tool=st.text(min_size=1, max_size=20),
    args=st.dictionaries(st.text(max_size=8), json_values, max_size=3),
    ok=st.booleans(),
    output=json_values,
    error=st.none() | st.text(),
    error_class=st.none() | st.sampled_from(["invalid_arguments", "tool_error"]),
    duration_ms=st.floats(0, 1e6),
    changed_tables=st.lists(st.text(max_size=10), max_size=3),
    writes=st.lists(writes, max_size=3),
    at=st.floats(0, 1e6),
)


@given(st.lists(messages | calls, max_size=8))
def test_trace_jsonl_round_trips(events: list[TraceEvent]) -> None:
    text = dump_jsonl(events)
    assert text.count("\n") == len(events)
    assert load_jsonl(text) == events


# --- recordable strings: Python input escaped, JSON input refused ------------------------------
# Fields marked RECORDABLE skip the recordable walk for JSON input (reading a record back),
# relying on pydantic's JSON parser refusing every lone surrogate: these pin that reliance.

_CHECK = '{"id":"c","kind":"sql","passed":true,"evidence":%s}'
_MESSAGE = '{"kind":"message","step":0,"role":"agent","text":%s,"at":0}'


@pytest.mark.parametrize(
    "token",
    [r'"\ud800"', r'"a\udfffb"', r'"\udc00\ud800"', '"\ud800"'],
    ids=["escaped", "escaped-inside", "reversed-pair", "raw"],
)
@pytest.mark.parametrize("as_bytes", [False, True], ids=["text", "bytes"])
def test_json_with_a_lone_surrogate_is_refused_not_parsed_unescaped(
    token: str, as_bytes: bool
) -> None:
    def source(text: str) -> str | bytes:
        return text.encode("utf-8", "surrogatepass") if as_bytes else text

    for where in ('{"quote":%s}', "{%s:1}"):  # a value, a key
        with pytest.raises(ValidationError):
            CheckResult.model_validate_json(source(_CHECK % (where % token)))
    with pytest.raises(ValidationError):
        MessageEvent.model_validate_json(source(_MESSAGE % token))
    with pytest.raises(ValidationError):  # a trace read back from its artifact
        load_jsonl(_MESSAGE % token + "\n")


def test_python_input_is_still_escaped_and_json_keeps_a_valid_pair() -> None:
    check = CheckResult(
        id="c", kind="sql", passed=False, evidence={"\ud800": ["\udfff", ("x",)]}, error="\ud83d"
    )
    assert check.evidence == {"\\ud800": ["\\udfff", ["x"]]} and check.error == "\\ud83d"
    again = CheckResult.model_validate_json(check.model_dump_json())
    assert again == check
    pair = CheckResult.model_validate_json(_CHECK % r'{"emoji":"\ud83d\ude00"}')
    assert pair.evidence == {"emoji": "\U0001f600"}  # a valid pair is one code point
    event = MessageEvent(step=0, role="agent", text="\udc00 ok", at=0.0)
    assert event.text == "\\udc00 ok"
    assert load_jsonl(dump_jsonl([event])) == [event]


def test_every_recordable_field_escapes_python_input() -> None:
    lone = "\ud800"
    call = ToolCallEvent(
        step=1, tool=f"t{lone}", args={f"k{lone}": [lone]}, ok=False, output=(lone, 1),
        error=lone, duration_ms=0.0, at=0.0,
    )  # fmt: skip
    assert (call.tool, call.args, call.output, call.error) == (
        "t\\ud800", {"k\\ud800": ["\\ud800"]}, ["\\ud800", 1], "\\ud800",
    )  # fmt: skip
    written = ModelToolCall(id=lone, name=lone, arguments=lone)
    assert (written.id, written.name, written.arguments) == ("\\ud800",) * 3
    assert ModelResponse(text=lone, tool_calls=[written]).text == "\\ud800"
    assert ModelCallError(kind="timeout", message=lone).message == "\\ud800"
    golden = json.loads(GOLDEN_V2.read_text())
    run = AgentRun.model_validate(
        golden | {"final_message": lone, "infrastructure_status": {lone: {"why": lone}}}
    )
    assert run.final_message == "\\ud800"
    assert run.infrastructure_status == {"\\ud800": {"why": "\\ud800"}}
    for model in (call, written, run):
        assert type(model).model_validate_json(model.model_dump_json()) == model
