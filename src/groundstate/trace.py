"""The trace: the ordered ``observation_action_log`` of one attempt."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter, field_validator

from groundstate.environments.base import RowWrite

ErrorClass = Literal[
    "invalid_arguments", "unknown_tool", "permission_denied", "tool_error", "environment_error"
]
"""Who caused a failed call: the agent (the first four) or the environment (the last)."""


def recordable(value: Any) -> Any:
    """*value* with every string made encodable as UTF-8, so that any record can be stored.

    An agent can produce text no encoder accepts (a lone surrogate such as ``"\\ud800"`` is
    legal in JSON and in a Python ``str``). Such a string is kept with each unencodable code
    point written as its escape (``\\ud800``: Python's ``backslashreplace``), so the evidence
    survives in records, artifacts and reports; encodable strings are left as they are.
    Dictionary keys, lists and tuples are walked; other values are returned unchanged.
    """
    if isinstance(value, str):
        return value if _encodable(value) else _escaped(value)
    if isinstance(value, dict):
        return {recordable(key): recordable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [recordable(item) for item in value]
    return value


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _escaped(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


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

    @field_validator("text")
    @classmethod
    def _recordable_text(cls, value: str | None) -> str | None:
        return recordable(value)  # type: ignore[no-any-return]


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

    @field_validator("tool", "args", "output", "error")
    @classmethod
    def _recordable(cls, value: Any) -> Any:
        return recordable(value)


TraceEvent = Annotated[MessageEvent | ToolCallEvent, Field(discriminator="kind")]
_EVENTS: TypeAdapter[list[TraceEvent]] = TypeAdapter(list[TraceEvent])


def dump_jsonl(events: list[TraceEvent]) -> str:
    return "".join(event.model_dump_json() + "\n" for event in events)


def load_jsonl(text: str) -> list[TraceEvent]:
    # Split on "\n" only: str.splitlines() also splits on U+0085 and U+2028, which JSON
    # leaves unescaped inside strings.
    lines = [line for line in text.split("\n") if line]
    return _EVENTS.validate_json("[" + ",".join(lines) + "]")
