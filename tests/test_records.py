"""Run records keep their format: a golden record loads, and records round-trip exactly."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from groundstate.records import FORMAT_VERSION, AgentRun
from groundstate.trace import MessageEvent, ToolCallEvent, TraceEvent, dump_jsonl, load_jsonl

GOLDEN = Path(__file__).parent / "golden" / "agent_run_v1.json"


def test_golden_record_of_format_1_still_loads() -> None:
    data = json.loads(GOLDEN.read_text())
    run = AgentRun.model_validate(data)
    assert run.format_version == FORMAT_VERSION == 1
    assert run.terminal_reason == "agent_failure/constraint_violation" and not run.success
    assert run.valid
    assert [e.kind for e in run.observation_action_log] == ["message", "tool_call"]
    # Nothing lost; fields added since format 1 carry their defaults.
    assert _subset(data, json.loads(run.model_dump_json()))
    assert run.observation_action_log[0].final is False  # type: ignore[union-attr]


def _subset(old: object, new: object) -> bool:
    """Every value of *old* is in *new* (dicts may have gained keys)."""
    if isinstance(old, dict):
        return isinstance(new, dict) and all(
            k in new and _subset(v, new[k]) for k, v in old.items()
        )
    if isinstance(old, list):
        return isinstance(new, list) and len(old) == len(new) and all(map(_subset, old, new))
    return old == new


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
    at=st.floats(0, 1e6),
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
    at=st.floats(0, 1e6),
)


@given(st.lists(messages | calls, max_size=8))
def test_trace_jsonl_round_trips(events: list[TraceEvent]) -> None:
    text = dump_jsonl(events)
    assert text.count("\n") == len(events)
    assert load_jsonl(text) == events
