"""The trace: the ordered ``observation_action_log`` of one attempt."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from groundstate.environments.base import RowWrite

ErrorClass = Literal[
    "invalid_arguments", "unknown_tool", "permission_denied", "tool_error", "environment_error"
]
"""Who caused a failed call: the agent (the first four) or the environment (the last)."""


class MessageEvent(BaseModel):
    kind: Literal["message"] = "message"
    step: int
    role: Literal["user", "agent"]
    text: str | None
    """None: the user has left the conversation."""
    final: bool = False
    """The agent's final reply (the message it returned when it finished)."""
    at: float
    """Seconds since the attempt started."""


class ToolCallEvent(BaseModel):
    kind: Literal["tool_call"] = "tool_call"
    step: int
    tool: str
    args: Any
    ok: bool
    output: Any = None
    error: str | None = None
    error_class: ErrorClass | None = None
    duration_ms: float
    changed_tables: list[str] = Field(default_factory=list)
    denied: list[str] = Field(default_factory=list)
    writes: list[RowWrite] = Field(default_factory=list)
    """The rows the call changed, before and after (empty if it changed nothing, was denied or
    was rolled back). Traces stored before format 2 have none."""
    at: float


TraceEvent = Annotated[MessageEvent | ToolCallEvent, Field(discriminator="kind")]
_EVENTS: TypeAdapter[list[TraceEvent]] = TypeAdapter(list[TraceEvent])


def dump_jsonl(events: list[TraceEvent]) -> str:
    return "".join(event.model_dump_json() + "\n" for event in events)


def load_jsonl(text: str) -> list[TraceEvent]:
    # Split on "\n" only: str.splitlines() also splits on U+0085 and U+2028, which JSON
    # leaves unescaped inside strings.
    lines = [line for line in text.split("\n") if line]
    return _EVENTS.validate_json("[" + ",".join(lines) + "]")
