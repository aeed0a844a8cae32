"""Hand-built traces for constraint tests: steps are numbered as an episode numbers them."""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter

from groundstate.environments.base import RowWrite
from groundstate.grading.constraints import evaluate_constraints
from groundstate.records import CheckResult
from groundstate.spec.constraints import HardConstraint
from groundstate.trace import (
    MessageEvent,
    ModelCallEvent,
    ModelResponse,
    ModelToolCall,
    ToolCallEvent,
    TraceEvent,
)

_CONSTRAINT: TypeAdapter[HardConstraint] = TypeAdapter(HardConstraint)


def constraint(**fields: Any) -> HardConstraint:
    """A constraint from its YAML form, e.g. ``constraint(id="x", never={"tool": "t"})``."""
    return _CONSTRAINT.validate_python(fields)


class Trace:
    """``Trace().user("hi").call("get_order", {"order_id": "O-1"}, {...}).agent("done")``."""

    def __init__(self, request: str | None = None) -> None:
        self.events: list[TraceEvent] = []
        if request is not None:
            self.user(request)

    def _step(self) -> int:
        return len(self.events)

    def user(self, text: str | None) -> Trace:
        self.events.append(MessageEvent(step=self._step(), role="user", text=text, at=0.0))
        return self

    def agent(self, text: str, *, final: bool = False) -> Trace:
        event = MessageEvent(step=self._step(), role="agent", text=text, final=final, at=0.0)
        self.events.append(event)
        return self

    def call(
        self,
        tool: str,
        args: dict[str, Any] | None = None,
        output: Any = None,
        *,
        ok: bool = True,
        writes: list[RowWrite] | None = None,
    ) -> Trace:
        event = ToolCallEvent(
            step=self._step(),
            tool=tool,
            args=args or {},
            ok=ok,
            output=output,
            error=None if ok else "refused",
            error_class=None if ok else "tool_error",
            duration_ms=1.0,
            writes=writes or [],
            changed_tables=sorted({w.table for w in writes or []}),
            at=0.0,
        )
        self.events.append(event)
        return self

    def check(self, rule: HardConstraint) -> CheckResult:
        return evaluate_constraints([rule], self.events)[0]


def result(rule: HardConstraint, trace: Trace) -> CheckResult:
    """The rule's result on *trace*, which must not be an error of the rule itself."""
    found = trace.check(rule)
    assert found.error is None, found.error
    return found


def passes(rule: HardConstraint, trace: Trace) -> bool:
    return result(rule, trace).passed


# An address a tool verified and the rule that it came from the conversation (rounds 50 on).
EMAIL = constraint(id="p", provenance={"match": {"tool": "verify"}, "args": ["email"]})
EVE, MAYA = "eve@example.com", "maya@example.com"


def verified(said: list[str], email: str) -> Trace:
    """The customer says each of *said*, then the agent verifies *email*."""
    trace = Trace()
    for text in said:
        trace.user(text)
    return trace.call("verify", {"email": email}, {"ok": True})


def write(
    table: str, key: Any, before: dict[str, Any] | None, after: dict[str, Any] | None
) -> RowWrite:
    return RowWrite(table=table, key=key, before=before, after=after)


def model_response(*asked: str | MessageEvent | ToolCallEvent) -> ModelCallEvent:
    """A recorded model response asking for *asked*, for traces whose checks read which
    response asked for a step: a call event's tool with its arguments, an agent message as
    a ``talk_to_user`` saying it, a tool's name with no arguments."""
    calls = [
        ModelToolCall(id=f"c{i}", name=name, arguments=arguments)
        for i, (name, arguments) in enumerate(_request(step) for step in asked)
    ]
    return ModelCallEvent(
        step=0,
        at=0.0,
        provider="p",
        model="m",
        request_digest="d",
        latency_ms=1.0,
        response=ModelResponse(tool_calls=calls),
    )


def _request(step: str | MessageEvent | ToolCallEvent) -> tuple[str, str]:
    if isinstance(step, MessageEvent):
        return "talk_to_user", json.dumps({"message": step.text})
    if isinstance(step, ToolCallEvent):
        return step.tool, json.dumps(step.args)
    return step, "{}"
