"""``anthropic-messages``: the tool-use loop on the official ``anthropic`` SDK (Messages API).

Install with ``pip install 'groundstate[anthropic]'``. ``model.base_url`` is the API root
without ``/v1`` (the SDK adds ``/v1/messages``). The loop itself is
:mod:`groundstate.agents.model_loop`.
"""

from __future__ import annotations

import json
from typing import Any

from groundstate.agents.base import ToolSpec
from groundstate.agents.model_loop import (
    LOST_CALLS,
    ModelAgent,
    Settings,
    Turn,
    call_sdk,
    reported_usage,
    sdk_client,
    sdk_keywords,
    served_model,
    split_decoding,
)
from groundstate.errors import HarnessCompatibilityError, SpecError
from groundstate.spec.system import SystemSpec
from groundstate.trace import ModelResponse, ModelToolCall, ModelUsage

try:
    import anthropic
except ImportError as exc:  # an optional extra
    raise ImportError(
        "the anthropic-messages adapter needs the official SDK: "
        "pip install 'groundstate[anthropic]'"
    ) from exc

DEFAULT_MAX_TOKENS = 4096
"""The Messages API requires ``max_tokens``; this (plus the thinking budget) is sent when
``decoding`` has none."""

SDK_ARGUMENTS = sdk_keywords(anthropic.resources.messages.AsyncMessages.create)
"""Decoding keys the SDK takes as arguments (``stop`` is sent as ``stop_sequences``); any other
key (``temperature``, ``top_p``... in SDKs that no longer name them) goes in the request body
as it is, where the API accepts or rejects it (``seed``, for one, it rejects)."""


class AnthropicMessagesAgent(ModelAgent):
    """A model behind the Anthropic Messages API."""

    api = "anthropic-messages"

    @classmethod
    def check_settings(cls, settings: Settings, system: SystemSpec) -> None:
        budget = settings.reasoning_budget
        if budget is not None and (isinstance(budget, str) or budget < 1024):
            raise SpecError(
                system.source,
                "model.reasoning_budget",
                "anthropic-messages sends it as the thinking budget: give tokens (>= 1024)",
            )
        if budget is not None and "thinking" in settings.decoding:
            # Both are hashed; only the budget would be sent.
            raise SpecError(
                system.source,
                "model.decoding",
                "thinking: set by model.reasoning_budget, give only one of them",
            )
        max_tokens = settings.decoding.get("max_tokens")
        if isinstance(budget, int) and isinstance(max_tokens, int) and max_tokens <= budget:
            # The API refuses it in every request: the batch would abort at its smoke run.
            raise SpecError(
                system.source,
                "model.decoding",
                f"max_tokens ({max_tokens}) must exceed the thinking budget"
                f" (model.reasoning_budget: {budget})",
            )

    def open_client(self) -> anthropic.AsyncAnthropic:
        return sdk_client(anthropic.AsyncAnthropic, self.settings)

    def request(
        self, instructions: str, messages: list[dict[str, Any]], tools: list[ToolSpec]
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.settings.model,
            "max_tokens": DEFAULT_MAX_TOKENS + _thinking_budget(self.settings),
            "messages": messages,
        }
        if tools:
            request["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in tools
            ]
        if instructions:
            request["system"] = instructions
        decoding = dict(self.settings.decoding)
        if "stop" in decoding:
            stop = decoding.pop("stop")
            decoding["stop_sequences"] = [stop] if isinstance(stop, str) else stop
        known, extra = split_decoding(decoding, SDK_ARGUMENTS)
        request.update(known)
        budget = self.settings.reasoning_budget
        if budget is not None:
            request["thinking"] = {"type": "enabled", "budget_tokens": budget}
        if extra:
            request["extra_body"] = extra
        return request

    async def send(self, client: Any, request: dict[str, Any]) -> Turn:
        return await call_sdk(
            anthropic, client.messages.create, request, self.settings.timeout, _turn
        )

    def results(
        self, turn: Turn, outputs: list[tuple[ModelToolCall, str, bool]]
    ) -> list[dict[str, Any]]:
        blocks = [
            {"type": "tool_result", "tool_use_id": call.id, "content": content, "is_error": error}
            for call, content, error in outputs
        ]
        return [{"role": "user", "content": blocks}]


CUT_OFF_REASONS = frozenset({"max_tokens", "model_context_window_exceeded", "refusal"})
"""Stop reasons of an answer cut off while being written: a ``tool_use`` block it ends with
is unfinished."""


def _thinking_budget(settings: Settings) -> int:
    budget = settings.reasoning_budget
    return budget if isinstance(budget, int) else 0


def _turn(message: Any) -> Turn:
    texts: list[str] = []
    calls: list[ModelToolCall] = []
    sent_back: list[dict[str, Any]] = []
    for block in message.content:
        kind = block.type
        if kind == "text":
            texts.append(block.text)
            if block.text.strip():  # the API refuses a blank text block in the history
                sent_back.append({"type": "text", "text": block.text})
        elif kind == "tool_use":
            # The API parses the arguments; a non-object input is still the model's mistake.
            arguments = json.dumps(block.input, ensure_ascii=False)
            # no id (null, left out) is read as an empty one: given one (``_distinct_ids``)
            given = getattr(block, "id", None) or ""
            calls.append(ModelToolCall(id=given, name=block.name, arguments=arguments))
            # The history must hold an object, or the API rejects the next request (a
            # harness failure for the model's mistake); the trace keeps what it wrote.
            echoed = block.input if isinstance(block.input, dict) else {}
            sent_back.append({"type": "tool_use", "id": given, "name": block.name, "input": echoed})
        elif kind == "thinking":  # sent back unchanged, as extended thinking requires
            sent_back.append(_thinking(block))
        elif kind == "redacted_thinking":
            sent_back.append({"type": "redacted_thinking", "data": block.data})
        elif isinstance(kind, str) and kind.endswith("tool_use"):
            # A server tool (``server_tool_use``, ``mcp_tool_use``...) the adapter never
            # offered: dropped, the answer read as an empty final reply, the agent's failure.
            raise HarnessCompatibilityError(
                f"the server answered with a {kind} block ({getattr(block, 'name', None)!r}):"
                " a tool the adapter does not offer; it offers the task's tools as tool_use only"
            )
    if message.stop_reason == "tool_use" and not calls:
        raise ValueError(LOST_CALLS.format(reason="stop_reason 'tool_use'"))
    response = ModelResponse(
        text="".join(texts) or None, tool_calls=calls, stop_reason=message.stop_reason
    )
    assistant = {"role": "assistant", "content": sent_back}
    last = message.content[-1].type if message.content else None
    cut = message.stop_reason in CUT_OFF_REASONS and last == "tool_use"
    return Turn(
        response,
        _usage(message.usage),
        getattr(message, "_request_id", None),
        assistant,
        last_call_cut=cut,
        served_model=served_model(message),
    )


def _thinking(block: Any) -> dict[str, Any]:
    """A thinking block as it is sent back: with its ``signature`` when it has one. A server
    that signs no thinking (an Anthropic-compatible proxy or local server) has none to check;
    sent back as ``"signature": null``, its next request was refused as malformed, a
    ``harness_compatibility_failure`` of the system's for the route's quirk."""
    sent = {"type": "thinking", "thinking": getattr(block, "thinking", None) or ""}
    signature = getattr(block, "signature", None)
    if isinstance(signature, str):
        sent["signature"] = signature
    return sent


def _usage(usage: Any) -> ModelUsage:
    """The answer's ``usage``; missing or empty, not known (see ``reported_usage``)."""
    cache_read = getattr(usage, "cache_read_input_tokens", None) or 0
    cache_write = getattr(usage, "cache_creation_input_tokens", None) or 0
    fresh = getattr(usage, "input_tokens", None)
    output = getattr(usage, "output_tokens", None)
    counts = (fresh or 0, cache_read, cache_write)
    # The sum below would hide a negative count, or read `true` as 1 token.
    if any(type(c) not in (int, float) for c in counts) or min(counts) < 0:
        raise ValueError(f"impossible usage: input {fresh}, cache {cache_read}/{cache_write}")
    if fresh is None or output is None:
        return reported_usage(input_tokens=None, output_tokens=None)
    return reported_usage(
        input_tokens=sum(counts),
        cached_input_tokens=cache_read,
        output_tokens=output,
    )
