"""Fiftieth round: what the provider served, a conversation too long, answers that contradict
themselves.

Classes of defect fixed:

- the model the provider says it served (an answer's ``model``: a router's fallback, the
  dated snapshot an alias stood for) was recorded nowhere, only the one requested. Each
  ``model_call`` event keeps it (``served_model``) and the record's ``infrastructure_status``
  says which models served the attempt (``models_served``), flagging one that ``differs``;
- a request refused for the conversation's length (OpenAI's ``context_length_exceeded``,
  Anthropic's "prompt is too long") was a bare ``harness_compatibility_failure`` where every
  importer says ``harness_compatibility_failure/context_window``. Native runs say the same
  now (error kind ``context_window``), and every comparison of the reason (the episode's
  precedence over a latched stop, the smoke run's abort, an MCP program's ``give_up``)
  takes the kind as the bare reason;
- a Messages thinking block without a ``signature`` (a compatible server that signs
  nothing) was sent back with ``"signature": null``, which such a server refuses: the next
  request failed as the system's ``harness_compatibility_failure``. It goes back unsigned;
- an answer whose ``finish_reason`` is ``tool_calls`` (a ``stop_reason`` of ``tool_use``)
  but holds no tool call (a server whose tool parser lost the call) ended the attempt with
  the text around the call as the final reply, graded as the agent's. It is a malformed
  answer: retried, and for good ``environment_failure/model_serving``;
- an answer with no choices said only ``IndexError: list index out of range``; arguments
  that are a JSON string of an object's JSON text told the model only ``got str``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from groundstate.agents.mcp_command import _reported_failure
from groundstate.agents.model_loop import parse_arguments
from groundstate.errors import HarnessCompatibilityError
from groundstate.grading.terminal import interruption_reason
from groundstate.mcp_client import _give_up_arguments
from groundstate.records import AgentRun
from groundstate.returned import AgentRaised
from groundstate.spec.suite import Suite
from groundstate.testing import Fail, Raw, Reply, ToolCall
from groundstate.trace import ModelCallEvent, ToolCallEvent

from .model_harness import PROVIDERS, _harness
from .test_models_round17 import LOOKUP, _oracle, _raw, _render

SERVING = "environment_failure/model_serving"
CONTEXT_WINDOW = "harness_compatibility_failure/context_window"
NAMES = [p.name for p in PROVIDERS]


def _model_calls(run: AgentRun) -> list[ModelCallEvent]:
    return [e for e in run.observation_action_log if isinstance(e, ModelCallEvent)]


def _tool_calls(run: AgentRun) -> list[ToolCallEvent]:
    return [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]


def _run(provider: str, monkeypatch: pytest.MonkeyPatch, retail: Suite, script: Any) -> AgentRun:
    (chosen,) = [p for p in PROVIDERS if p.name == provider]
    return _harness(chosen, monkeypatch, retail).run(script)


def _requested(run: AgentRun) -> str:
    return _model_calls(run)[0].model


# --- the model the provider served ----------------------------------------------------------


@pytest.mark.parametrize("provider", NAMES)
def test_a_fallback_model_is_recorded_and_flagged(
    provider: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """A router answers the first turn with another model: the call's event names it, and
    the record counts the answers of each model served, the fallback flagged."""
    oracle = _oracle(retail)
    fallback = Reply(text=oracle[0].text, tool_calls=oracle[0].tool_calls, model="cheap-mini")
    run = _run(provider, monkeypatch, retail, [fallback, *oracle[1:]])
    assert run.terminal_reason == "success", run.infrastructure_status
    calls = _model_calls(run)
    assert calls[0].served_model == "cheap-mini"
    asked = _requested(run)
    assert all(c.served_model == asked for c in calls[1:])
    served = run.infrastructure_status["models_served"]
    assert {"requested": asked, "served": "cheap-mini", "answers": 1, "differs": True} in served
    same = [s for s in served if s["served"] == asked]
    assert same == [
        {"requested": asked, "served": asked, "answers": len(calls) - 1, "differs": False}
    ]


@pytest.mark.parametrize("provider", NAMES)
def test_the_model_requested_served_is_not_flagged(
    provider: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    run = _run(provider, monkeypatch, retail, _oracle(retail))
    assert run.terminal_reason == "success", run.infrastructure_status
    (served,) = run.infrastructure_status["models_served"]
    assert served["differs"] is False and served["served"] == _requested(run)


@pytest.mark.parametrize("named", ["", None, 7])
def test_an_answer_naming_no_model_records_none(
    named: Any, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """A local server that leaves ``model`` empty, null or not a name: nothing is claimed."""

    def unnamed(reply: Any) -> Any:
        body = _render("openai", reply)
        body["model"] = named
        return _raw(body)

    run = _run("openai", monkeypatch, retail, [unnamed(r) for r in _oracle(retail)])
    assert run.terminal_reason == "success", run.infrastructure_status
    assert all(c.served_model is None for c in _model_calls(run))
    assert "models_served" not in run.infrastructure_status


def test_a_long_model_id_is_bounded(monkeypatch: pytest.MonkeyPatch, retail: Suite) -> None:
    oracle = _oracle(retail)
    long = Reply(text=oracle[0].text, tool_calls=oracle[0].tool_calls, model="m" * 100_000)
    run = _run("openai", monkeypatch, retail, [long, *oracle[1:]])
    assert run.terminal_reason == "success", run.infrastructure_status
    assert _model_calls(run)[0].served_model == "m" * 200


# --- a conversation too long for the model's window -----------------------------------------

TOO_LONG = {
    "openai": [
        Fail(
            400,
            "This model's maximum context length is 128000 tokens. However, your messages"
            " resulted in 130512 tokens. Please reduce the length of the messages.",
            code="context_length_exceeded",
        ),
        Fail(400, "Request too large", code="context_length_exceeded"),  # the code alone
        # vLLM and OpenRouter, no code
        Fail(400, "This endpoint's maximum context length is 8192 tokens. However, you"),
        Fail(400, "The input token count (1200000) exceeds the maximum number of tokens"),
    ],
    "anthropic": [
        Fail(400, "prompt is too long: 208310 tokens > 200000 maximum"),
        Fail(400, "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000"),
    ],
}


@pytest.mark.parametrize(
    ("provider", "fault"),
    [(p, n) for p, faults in TOO_LONG.items() for n in range(len(faults))],
)
def test_a_conversation_too_long_says_context_window(
    provider: str, fault: int, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """Not retried; the attempt's reason names the window, as the importers' do, and counts
    against the system (a valid attempt)."""
    oracle = _oracle(retail)
    run = _run(provider, monkeypatch, retail, [oracle[0], TOO_LONG[provider][fault]])
    assert run.terminal_reason == CONTEXT_WINDOW, run.infrastructure_status
    assert run.valid
    failed = [c for c in _model_calls(run) if c.error is not None]
    assert len(failed) == 1 and failed[0].error is not None
    assert failed[0].error.kind == "context_window" and failed[0].error.status_code == 400
    assert "outgrew the model's window" in run.infrastructure_status["exception"]["message"]


@pytest.mark.parametrize(
    "fault",
    [
        Fail(400, "Unsupported parameter: 'seed' is not supported with this model."),
        Fail(400, "max_tokens is too large: 100000. This model supports at most 16384"),
        Fail(404, "The model `gpt-9` does not exist"),
        Fail(400, "Invalid 'messages[2].content': string too long", code="invalid_value"),
    ],
    ids=["parameter", "max_tokens", "unknown_model", "other_code"],
)
def test_another_rejection_stays_bare(
    fault: Fail, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    run = _run("openai", monkeypatch, retail, [fault])
    assert run.terminal_reason == "harness_compatibility_failure", run.infrastructure_status
    (failed,) = [c for c in _model_calls(run) if c.error is not None]
    assert failed.error is not None and failed.error.kind == "rejected"


def test_a_server_error_naming_the_context_is_still_retried(
    monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """A 5xx is the provider's, whatever its words: retried, then model serving."""
    run = _run("openai", monkeypatch, retail, lambda r: Fail(503, "context length exceeded"))
    assert run.terminal_reason == SERVING, run.infrastructure_status
    assert run.infrastructure_status["model_serving"]["tries"] == 3


def test_every_comparison_takes_the_kind_as_the_bare_reason() -> None:
    # imported here: the module is also run against the old code, which has neither
    from groundstate.errors import ContextWindowExceeded
    from groundstate.grading.terminal import is_compatibility_failure

    assert is_compatibility_failure("harness_compatibility_failure")
    assert is_compatibility_failure(CONTEXT_WINDOW)
    assert not is_compatibility_failure("harness_compatibility_failures")
    assert not is_compatibility_failure("agent_failure/crashed")
    exc = ContextWindowExceeded("too long")
    assert isinstance(exc, HarnessCompatibilityError)
    assert AgentRaised(exc).reason == CONTEXT_WINDOW
    assert AgentRaised(HarnessCompatibilityError("x")).reason == "harness_compatibility_failure"
    assert interruption_reason(exc, "agent") == CONTEXT_WINDOW
    # an MCP program's adapter: given up with the kind, read back as the same exception
    arguments = _give_up_arguments(exc)
    assert arguments is not None and arguments["failure"] == "context_window"
    assert isinstance(_reported_failure(arguments), ContextWindowExceeded)
    bare = _give_up_arguments(HarnessCompatibilityError("x"))
    assert bare is not None and bare["failure"] == "harness_compatibility"
    assert type(_reported_failure(bare)) is HarnessCompatibilityError


# --- thinking without a signature -----------------------------------------------------------


def _thinking(reply: Reply, **block: Any) -> Raw:
    body = _render("anthropic", reply)
    body["content"].insert(0, {"type": "thinking", "thinking": "Look them up."} | block)
    return _raw(body)


@pytest.mark.parametrize("signature", [{}, {"signature": None}], ids=["left_out", "null"])
def test_unsigned_thinking_goes_back_unsigned(
    signature: dict[str, Any], monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """A server that signs no thinking: its block goes back as it came, with no signature
    (sent as null, the next request was refused: a compatibility failure)."""
    oracle = _oracle(retail)
    servers: list[Any] = []
    (chosen,) = [p for p in PROVIDERS if p.name == "anthropic"]
    script = [_thinking(oracle[0], **signature), *oracle[1:]]
    run = _harness(chosen, monkeypatch, retail).run(script, server_out=servers)
    assert run.terminal_reason == "success", run.infrastructure_status
    sent = servers[0].requests[1]["messages"][1]["content"][0]
    assert sent == {"type": "thinking", "thinking": "Look them up."}


def test_signed_thinking_goes_back_with_its_signature(
    monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    oracle = _oracle(retail)
    servers: list[Any] = []
    (chosen,) = [p for p in PROVIDERS if p.name == "anthropic"]
    script = [_thinking(oracle[0], signature="sig-1"), *oracle[1:]]
    run = _harness(chosen, monkeypatch, retail).run(script, server_out=servers)
    assert run.terminal_reason == "success", run.infrastructure_status
    sent = servers[0].requests[1]["messages"][1]["content"][0]
    assert sent == {"type": "thinking", "thinking": "Look them up.", "signature": "sig-1"}


# --- an answer that says it calls a tool and holds none -------------------------------------

TEXT_OF_A_LOST_CALL = '<tool_call>{"name": "find_customer_by_email"}</tool_call>'


def _lost_call(provider: str, text: str | None) -> Raw:
    body = _render(provider, Reply(text=text))
    if provider == "openai":
        body["choices"][0]["finish_reason"] = "tool_calls"
    else:
        body["stop_reason"] = "tool_use"
    return _raw(body)


@pytest.mark.parametrize("provider", NAMES)
@pytest.mark.parametrize("text", [TEXT_OF_A_LOST_CALL, None], ids=["text", "empty"])
def test_a_lost_call_is_a_failed_try(
    provider: str, text: str | None, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """Once: a malformed answer, retried, the oracle that follows succeeds (read as the
    answer, it ended the attempt as the agent's final reply)."""
    run = _run(provider, monkeypatch, retail, [_lost_call(provider, text), *_oracle(retail)])
    assert run.terminal_reason == "success", run.infrastructure_status
    (failed,) = [c for c in _model_calls(run) if c.error is not None]
    assert failed.error is not None and failed.error.kind == "server_error"
    assert "holds no tool call" in failed.error.message
    assert run.final_message != TEXT_OF_A_LOST_CALL


@pytest.mark.parametrize("provider", NAMES)
def test_a_lost_call_for_good_is_the_providers(
    provider: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    run = _run(provider, monkeypatch, retail, lambda r: _lost_call(provider, "Done."))
    assert run.terminal_reason == SERVING, run.infrastructure_status
    assert not run.valid and run.final_message is None


@pytest.mark.parametrize(
    ("provider", "stop"),
    [("openai", "stop"), ("openai", "length"), ("anthropic", "end_turn")],
)
def test_a_text_answer_with_its_own_stop_is_the_reply(
    provider: str, stop: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    body = _render(provider, Reply(text="I cannot help with that."))
    if provider == "openai":
        body["choices"][0]["finish_reason"] = stop
    else:
        body["stop_reason"] = stop
    run = _run(provider, monkeypatch, retail, [_raw(body)])
    assert run.terminal_reason == "agent_failure/incorrect_state", run.infrastructure_status
    assert run.final_message == "I cannot help with that."


# --- other misbehaviour, each a named outcome -----------------------------------------------


@pytest.mark.parametrize("choices", [[], None], ids=["empty", "null"])
def test_no_choices_is_named(choices: Any, monkeypatch: pytest.MonkeyPatch, retail: Suite) -> None:
    body = _render("openai", LOOKUP)
    body["choices"] = choices
    run = _run("openai", monkeypatch, retail, [_raw(body), *_oracle(retail)])
    assert run.terminal_reason == "success", run.infrastructure_status
    (failed,) = [c for c in _model_calls(run) if c.error is not None]
    assert failed.error is not None and "the answer has no choices" in failed.error.message


def test_arguments_encoded_twice_are_named_and_not_run(
    monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """A JSON string of an object's JSON text: refused as not an object (the call is what
    the model sent), the model told it was encoded twice."""
    twice = json.dumps(json.dumps({"email": "emma.stone@example.com"}))
    script = [Reply(tool_calls=[ToolCall("find_customer_by_email", raw=twice)])]
    servers: list[Any] = []
    (chosen,) = [p for p in PROVIDERS if p.name == "openai"]
    harness = _harness(chosen, monkeypatch, retail)
    harness.run([*script, Reply(text="Sorry.")], server_out=servers)
    (call,) = _tool_calls_of(servers[0].requests[1])
    assert "encoded twice" in call and "send the object itself" in call


def _tool_calls_of(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m.get("role") == "tool"]


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ('"hello"', "got str"),
        ('"{not json"', "got str"),
        ('"[1, 2]"', "got str"),
        ("[1, 2]", "got list"),
        (json.dumps(json.dumps({"a": 1})), "encoded twice"),
        (json.dumps(" " + json.dumps({"a": 1})), "encoded twice"),
    ],
)
def test_what_arguments_that_are_no_object_are(raw: str, said: str) -> None:
    value, problem = parse_arguments(raw)
    assert problem is not None and said in problem
    assert not isinstance(value, dict)  # never run as the object a string holds


def test_arguments_encoded_twice_read_in_linear_time() -> None:
    import time

    raw = json.dumps("{" + "a" * 1_000_000)
    started = time.perf_counter()
    _, problem = parse_arguments(raw)
    assert problem is not None and "got str" in problem
    assert time.perf_counter() - started < 1.0


def test_a_rate_limit_with_retry_after_is_waited_and_retried(
    monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    limited = Fail(429, "slow down", headers={"retry-after": "0.05"})
    run = _run("openai", monkeypatch, retail, [limited, *_oracle(retail)])
    assert run.terminal_reason == "success", run.infrastructure_status
    (failed,) = [c for c in _model_calls(run) if c.error is not None]
    assert failed.error is not None and failed.error.kind == "rate_limited"


@pytest.mark.parametrize("provider", NAMES)
def test_a_body_cut_short_is_retried(
    provider: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    text = json.dumps(_render(provider, LOOKUP))
    cut = Raw(text, cut_at=len(text) // 2)
    run = _run(provider, monkeypatch, retail, [cut, *_oracle(retail)])
    assert run.terminal_reason == "success", run.infrastructure_status
    (failed,) = [c for c in _model_calls(run) if c.error is not None]
    assert failed.error is not None and failed.error.kind in ("connection", "server_error")
    assert [c.tool for c in _tool_calls(run)].count("refund_item") == 1


@pytest.mark.parametrize("provider", NAMES)
def test_a_truncated_json_body_is_retried(
    provider: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    text = json.dumps(_render(provider, LOOKUP))
    run = _run(provider, monkeypatch, retail, [Raw(text[: len(text) // 2]), *_oracle(retail)])
    assert run.terminal_reason == "success", run.infrastructure_status
    (failed,) = [c for c in _model_calls(run) if c.error is not None]
    assert failed.error is not None and "malformed response" in failed.error.message


def test_a_missing_usage_is_not_known(monkeypatch: pytest.MonkeyPatch, retail: Suite) -> None:
    def without_usage(reply: Any) -> Raw:
        body = _render("openai", reply)
        del body["usage"]
        return _raw(body)

    run = _run("openai", monkeypatch, retail, [without_usage(r) for r in _oracle(retail)])
    # the example system declares max_cost: a budget no call can be checked against
    assert run.terminal_reason == "harness_compatibility_failure", run.infrastructure_status
    assert run.infrastructure_status["stop"]["stage"] == "usage"
    (call,) = _model_calls(run)
    assert call.usage.input_tokens is None and call.usage.cost is None
