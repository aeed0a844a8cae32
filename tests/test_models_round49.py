"""Forty-ninth round: a provider's failure inside a 200 answer's choice; ids of earlier turns.

Classes of defect fixed:

- a Chat Completions answer whose choice carries the provider's failure (OpenRouter's
  ``choices[0].error`` after an upstream error mid-answer, a ``finish_reason`` of ``error``,
  vLLM's ``abort``) was read as the model's answer: an empty final reply, the attempt graded
  ``agent_failure/incorrect_state`` (a partial tool call in it would have run). It is now a
  failed try like an error body in a 200 answer: retried, and when retries run out
  ``environment_failure/model_serving`` (invalid, rerun);
- tool call ids were made distinct within one answer only: a server that numbers its calls
  afresh in each answer (``call_0``/``toolu_0`` every turn) sent a history repeating an id,
  which Anthropic's API refuses ("`tool_use` ids must be unique", HTTP 400): a
  ``harness_compatibility_failure`` counted against the system for the route's quirk. An id
  an earlier answer used is now renamed too, in the trace and in the history sent back. The
  loopback ``AnthropicCompatibleServer`` refuses such a history as the API does.

The model-driven user reads a failure in its answer's choice the same way: its partial text
(``"It's 12"``, cut by the upstream error) went to the agent as the user's message; now it is
a malformed answer, retried, and for good the user simulator's failure (invalid).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from typing import Any

import pytest

from groundstate.agents.python import load_agent
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite
from groundstate.spec.system import SystemSpec
from groundstate.testing import (
    AnthropicCompatibleServer,
    FunctionAgent,
    OpenAICompatibleServer,
    Raw,
    Reply,
    ToolCall,
    attempt,
)
from groundstate.trace import ModelCallEvent, ToolCallEvent

from .model_harness import PROVIDERS, Harness, _harness
from .test_model_users import bank_agent_system, model_user, polite_transfer
from .test_models_round17 import LOOKUP, _message, _oracle, _raw, _render

SERVING = "environment_failure/model_serving"
REFUND = Reply(
    tool_calls=[
        ToolCall(
            "refund_item",
            {"order_id": "O-1001", "item_id": "I-1001-2", "payment_method_id": "PM-C01-VISA"},
        )
    ]
)
"""The oracle's refund, with no confirmation before it: made, the attempt fails."""


def _model_calls(run: AgentRun) -> list[ModelCallEvent]:
    return [e for e in run.observation_action_log if isinstance(e, ModelCallEvent)]


def _tool_calls(run: AgentRun) -> list[ToolCallEvent]:
    return [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]


# --- a provider's failure inside a choice ---------------------------------------------------


def _failed_choice(**choice: Any) -> Raw:
    """A Chat Completions answer with a partial refund call, its choice changed by *choice*."""
    body = _render("openai", REFUND)
    body["choices"][0] |= choice
    return _raw(body)


FAILED_CHOICES = {
    # OpenRouter: an upstream failure mid-answer
    "error_object": {"finish_reason": "error", "error": {"code": 502, "message": "upstream died"}},
    "error_object_other_finish": {"error": {"code": 502, "message": "upstream died"}},
    "error_text": {"finish_reason": "error", "error": "upstream died"},
    "finish_error": {"finish_reason": "error"},
    # vLLM: the engine aborted the request
    "finish_abort": {"finish_reason": "abort"},
}


@pytest.mark.parametrize("fault", list(FAILED_CHOICES))
def test_a_failure_in_the_choice_is_a_failed_try_retried(
    fault: str, openai_harness: Harness, retail: Suite
) -> None:
    """Once: a failed try, retried; its partial call is not made and the oracle that follows
    succeeds. (Read as the answer, the tool call ran, or an empty reply ended the attempt.)"""
    script = [_failed_choice(**FAILED_CHOICES[fault]), *_oracle(retail)]
    run = openai_harness.run(script)
    assert run.terminal_reason == "success", run.infrastructure_status
    failed = [c for c in _model_calls(run) if c.error is not None]
    assert len(failed) == 1 and failed[0].error is not None
    assert failed[0].error.kind == "server_error"
    assert "an error in a 200 answer" in (failed[0].error.message or "")
    assert failed[0].usage.input_tokens is None  # nothing of it charged
    assert [c.tool for c in _tool_calls(run)].count("refund_item") == 1  # the oracle's


@pytest.mark.parametrize("fault", ["error_object", "finish_abort"])
def test_a_failure_in_the_choice_for_good_is_the_providers(
    fault: str, openai_harness: Harness
) -> None:
    run = openai_harness.run(lambda request: _failed_choice(**FAILED_CHOICES[fault]))
    assert run.terminal_reason == SERVING, run.infrastructure_status
    assert not run.valid
    assert run.infrastructure_status["model_serving"]["tries"] == 3
    assert _tool_calls(run) == []
    if fault == "error_object":
        assert "upstream died" in run.infrastructure_status["model_serving"]["message"]


@pytest.mark.parametrize(
    "choice",
    [{"error": None}, {"error": {}}, {"error": ""}, {"finish_reason": "tool_calls"}],
    ids=["null", "empty_object", "empty_text", "plain"],
)
def test_an_honest_choice_is_the_models_answer(
    choice: dict[str, Any], openai_harness: Harness, retail: Suite
) -> None:
    """No failure in the choice (an ``error`` that is null or empty): the answer stands."""
    body = _render("openai", LOOKUP)
    body["choices"][0] |= choice
    run = openai_harness.run([_raw(body), *_oracle(retail)])
    assert run.terminal_reason == "success", run.infrastructure_status
    assert [c for c in _model_calls(run) if c.error is not None] == []
    first = _tool_calls(run)[0]
    assert first.tool == "find_customer_by_email" and first.error_class is None


@pytest.mark.parametrize("finish", ["length", "content_filter", "stop"])
def test_the_models_own_stop_with_no_call_is_still_its_reply(
    finish: str, openai_harness: Harness
) -> None:
    """The model's own stops are unchanged: its reply, graded on the state it left."""
    body = _render("openai", Reply(text="I cannot help with that."))
    body["choices"][0]["finish_reason"] = finish
    run = openai_harness.run([_raw(body)])
    assert run.terminal_reason == "agent_failure/incorrect_state", run.infrastructure_status
    assert run.final_message == "I cannot help with that."
    assert [c for c in _model_calls(run) if c.error is not None] == []


# --- ids an earlier answer used -------------------------------------------------------------


def _numbered_afresh(provider: str, reply: Reply) -> Raw:
    """*reply*'s body with its calls numbered from 0, as in every other answer."""
    body = _render(provider, reply)
    if provider == "openai":
        calls = _message(body).get("tool_calls") or []
    else:
        calls = [b for b in body["content"] if b["type"] == "tool_use"]
    for number, call in enumerate(calls):
        call["id"] = f"call_{number}"
    return _raw(body)


def _sent_ids(request: dict[str, Any]) -> list[str]:
    """The ids of the tool calls in a request's history (not of their results)."""
    ids = []
    for message in request.get("messages", []):
        if message.get("role") != "assistant":
            continue
        ids += [c["id"] for c in message.get("tool_calls") or []]
        content = message.get("content")
        ids += (
            [b["id"] for b in content if b.get("type") == "tool_use"]
            if isinstance(content, list)
            else []
        )
    return ids


@pytest.mark.parametrize("provider", [p.name for p in PROVIDERS])
def test_an_id_of_an_earlier_answer_is_renamed(
    provider: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """Every answer's call is ``call_0``: the history sent back and the trace give each its
    own id, and each result names its call; the oracle succeeds on every adapter."""
    (chosen,) = [p for p in PROVIDERS if p.name == provider]
    servers: list[Any] = []
    script = [_numbered_afresh(provider, answer) for answer in _oracle(retail)]
    run = _harness(chosen, monkeypatch, retail).run(script, server_out=servers)
    assert run.terminal_reason == "success", run.infrastructure_status
    assert [c for c in _model_calls(run) if c.error is not None] == []
    last = servers[0].requests[-1]
    sent = _sent_ids(last)
    assert len(sent) >= 3 and len(set(sent)) == len(sent), sent
    assert sent[0] == "call_0"  # the first keeps its id
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", i) for i in sent)
    text = json.dumps(last)
    for given in sent:  # each result names its own call
        assert text.count(f'"{given}"') == 2, given
    traced = [c.id for m in _model_calls(run) if m.response for c in m.response.tool_calls]
    assert traced == sent


@pytest.mark.parametrize("provider", [p.name for p in PROVIDERS])
def test_ids_stay_distinct_when_old_turns_are_dropped(
    provider: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """Under ``last_turns:1`` too: the ids are distinct over the whole attempt (the trace)."""
    (chosen,) = [p for p in PROVIDERS if p.name == provider]
    harness = _harness(chosen, monkeypatch, retail)
    script = [_numbered_afresh(provider, answer) for answer in _oracle(retail)]
    with chosen.server(script) as server:
        system = harness.system(server)
        data = system.model_dump(mode="json")
        data["harness"]["context_policy"] = "last_turns:1"
        trimmed = SystemSpec.model_validate(data)
        trimmed._base_dir = system.base_dir
        run = attempt(retail, "refund-socks", load_agent(trimmed), system=trimmed).run
    assert run.terminal_reason == "success", run.infrastructure_status
    traced = [c.id for m in _model_calls(run) if m.response for c in m.response.tool_calls]
    assert len(traced) >= 3 and len(set(traced)) == len(traced), traced


def _post(server: AnthropicCompatibleServer, messages: list[dict[str, Any]]) -> tuple[int, Any]:
    body = json.dumps({"model": "m", "max_tokens": 10, "messages": messages}).encode()
    request = urllib.request.Request(
        f"{server.base_url}/v1/messages", body, {"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _tool_turn(call_id: str) -> list[dict[str, Any]]:
    use = {"type": "tool_use", "id": call_id, "name": "t", "input": {}}
    result = {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}
    return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]


def test_the_loopback_messages_server_refuses_a_repeated_id_as_the_api_does() -> None:
    """The test double answers a history repeating a ``tool_use`` id with the API's 400 (the
    script's answer is kept for the next request); distinct ids are answered."""
    opening = [{"role": "user", "content": "hi"}]
    with AnthropicCompatibleServer([Reply(text="fine")]) as server:
        status, body = _post(server, [*opening, *_tool_turn("a"), *_tool_turn("a")])
        assert status == 400
        assert body["error"]["message"] == "messages.3.content.0: `tool_use` ids must be unique"
        status, body = _post(server, [*opening, *_tool_turn("a"), *_tool_turn("b")])
        assert status == 200 and body["content"][0]["text"] == "fine"
        assert len(server.requests) == 2 and not server.exhausted


# --- the model-driven user ------------------------------------------------------------------


def _user_cut_by_upstream() -> Raw:
    body = _render("openai", Reply(text="It's 12"))
    body["choices"][0] |= {"finish_reason": "error", "error": {"message": "upstream died"}}
    return _raw(body)


def test_a_user_models_answer_with_a_failure_in_its_choice_is_retried(bank: Suite) -> None:
    """What the upstream error left of the user's answer is not said to the agent."""
    answers = [
        _user_cut_by_upstream(),
        Reply(text="It's 1234."),
        Reply(text="No, that's all, thanks. ###STOP###"),
    ]
    with OpenAICompatibleServer(answers) as server:
        system = bank_agent_system(model_user(server))
        out = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system, seed=7)
    assert out.run.terminal_reason == "success", out.run.infrastructure_status
    said = [e.text for e in out.run.observation_action_log if e.kind == "message"]
    assert "It's 1234." in said and "It's 12" not in said


def test_a_user_model_failing_in_its_choice_for_good_is_the_instruments(bank: Suite) -> None:
    with OpenAICompatibleServer(lambda request: _user_cut_by_upstream()) as server:
        system = bank_agent_system(model_user(server))
        out = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system, seed=7)
    assert out.run.terminal_reason == "environment_failure/user_simulator"
    assert not out.run.valid
    assert "upstream died" in str(out.run.infrastructure_status)
