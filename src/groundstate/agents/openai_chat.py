"""``openai-chat``: the tool-calling loop on the official ``openai`` SDK (Chat Completions).

Any server that speaks ``/v1/chat/completions`` works (OpenAI, vLLM, Ollama, LiteLLM...):
set ``model.base_url`` (or ``model.base_url_env``). Install with ``pip install
'groundstate[openai]'``. The loop itself is :mod:`groundstate.agents.model_loop`.
"""

from __future__ import annotations

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
    import openai
except ImportError as exc:  # an optional extra
    raise ImportError(
        "the openai-chat adapter needs the official SDK: pip install 'groundstate[openai]'"
    ) from exc

CUT_OFF_REASONS = frozenset({"length", "content_filter"})
"""Finish reasons of an answer cut off while being written: the tool call it ends with is
unfinished."""

SDK_ARGUMENTS = sdk_keywords(openai.resources.chat.completions.AsyncCompletions.create)
"""Decoding keys the SDK takes as arguments; any other key goes in the request body as it is."""


class OpenAIChatAgent(ModelAgent):
    """A model behind an OpenAI-compatible Chat Completions endpoint."""

    api = "openai-chat"

    @classmethod
    def check_settings(cls, settings: Settings, system: SystemSpec) -> None:
        budget = settings.reasoning_budget
        if budget is not None and not isinstance(budget, str):
            raise SpecError(
                system.source,
                "model.reasoning_budget",
                "openai-chat sends it as reasoning_effort: give a string such as 'low'",
            )
        if budget is not None and "reasoning_effort" in settings.decoding:
            # Both are hashed; only the budget would be sent.
            raise SpecError(
                system.source,
                "model.decoding",
                "reasoning_effort: set by model.reasoning_budget, give only one of them",
            )

    def open_client(self) -> openai.AsyncOpenAI:
        return sdk_client(openai.AsyncOpenAI, self.settings)

    def request(
        self, instructions: str, messages: list[dict[str, Any]], tools: list[ToolSpec]
    ) -> dict[str, Any]:
        system = [{"role": "system", "content": instructions}] if instructions else []
        request: dict[str, Any] = {"model": self.settings.model, "messages": system + messages}
        if tools:  # the API refuses an empty list
            request["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in tools
            ]
        known, extra = split_decoding(self.settings.decoding, SDK_ARGUMENTS)
        request.update(known)
        if self.settings.reasoning_budget is not None:
            request["reasoning_effort"] = self.settings.reasoning_budget
        if extra:
            request["extra_body"] = extra
        return request

    async def send(self, client: Any, request: dict[str, Any]) -> Turn:
        return await call_sdk(
            openai, client.chat.completions.create, request, self.settings.timeout, _turn
        )

    def results(
        self, turn: Turn, outputs: list[tuple[ModelToolCall, str, bool]]
    ) -> list[dict[str, Any]]:
        return [
            {"role": "tool", "tool_call_id": call.id, "content": content}
            for call, content, _ in outputs
        ]


def _turn(completion: Any) -> Turn:
    if not completion.choices:  # [] or null: no answer at all (IndexError said only that)
        raise ValueError("the answer has no choices")
    message = completion.choices[0].message
    legacy = getattr(message, "function_call", None)
    if legacy is not None and not message.tool_calls:
        # The deprecated ``functions`` protocol, which the adapter never sends: the server
        # (or the model's template) cannot use the tools as offered. Read as an empty answer
        # it was the agent's incorrect state, with the call gone from the trace.
        raise HarnessCompatibilityError(
            "the server answered with a legacy function_call"
            f" ({getattr(legacy, 'name', None)!r}), not tool_calls: it does not speak the"
            " tools protocol the adapter sends"
        )
    for call in message.tool_calls or []:
        kind = getattr(call, "type", None)
        if getattr(call, "function", None) is None and kind not in (None, "function"):
            # A custom tool call: read as a malformed answer it was retried, then an invalid
            # attempt, rerun for ever; the model uses a protocol the adapter never offered.
            raise HarnessCompatibilityError(
                f"the server answered with a tool call of type {kind!r}, not a function call:"
                " the adapter offers its tools as functions only"
            )
    calls = [
        # no id (null, left out) is read as an empty one: given one (see ``_distinct_ids``)
        ModelToolCall(
            id=getattr(call, "id", None) or "",
            name=call.function.name,
            arguments=call.function.arguments or "",
        )
        for call in message.tool_calls or []
    ]
    finish = completion.choices[0].finish_reason
    if finish in ("tool_calls", "function_call") and not calls:
        raise ValueError(LOST_CALLS.format(reason=f"finish_reason {finish!r}"))
    assistant: dict[str, Any] = {"role": "assistant", "content": message.content}
    if calls:
        assistant["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    response = ModelResponse(
        text=message.content,
        tool_calls=calls,
        stop_reason=finish,
        refusal=getattr(message, "refusal", None),
    )
    return Turn(
        response,
        _usage(completion.usage),
        getattr(completion, "_request_id", None),
        assistant,
        last_call_cut=bool(calls) and response.stop_reason in CUT_OFF_REASONS,  # calls last
        served_model=served_model(completion),
    )


def _usage(usage: Any) -> ModelUsage:
    """The answer's ``usage``; missing or empty, not known (see ``reported_usage``)."""
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    output_details = getattr(usage, "completion_tokens_details", None)
    return reported_usage(
        input_tokens=getattr(usage, "prompt_tokens", None),
        cached_input_tokens=getattr(prompt_details, "cached_tokens", None),
        output_tokens=getattr(usage, "completion_tokens", None),
        reasoning_tokens=getattr(output_details, "reasoning_tokens", None),
    )
