"""Seventeenth round: the same provider fault gives the same terminal reason on every adapter.

``test_every_adapter_gives_a_fault_the_same_verdict`` runs each fault of :data:`FAULTS` through
each built-in adapter (a real loopback server playing the provider, the official SDK as
client) on the retail canary. Whose fault it is decides the verdict:

- the model's own mistake (arguments that are not a JSON object, a tool that does not exist) is
  refused at the gateway as a step, the model is told, and the attempt goes on: the oracle that
  follows still succeeds;
- the provider's (an error status, a body that is no answer, a connection reset, impossible
  usage) is retried: once, the attempt goes on to success; for good, it is
  an invalid ``environment_failure/model_serving``;
- the model's choice to stop (a refusal, a content filter, its output limit) is its answer:
  the attempt is graded on the state it left.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.python import load_agent
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite
from groundstate.spec.system import SystemSpec, load_system
from groundstate.testing import (
    AnthropicCompatibleServer,
    Fail,
    OpenAICompatibleServer,
    Raw,
    Reply,
    ToolCall,
    attempt,
    script_from_steps,
)
from groundstate.trace import RETRIED_KINDS, ModelCallEvent, ToolCallEvent

from .conftest import BLOCK, HANG
from .model_harness import PROVIDERS, TASK, Harness, _harness
from .test_mcp_agents import system_file
from .test_models_round15 import MODEL_AGENT, _model_system

Answer = Reply | Fail | Raw
Body = dict[str, Any]


def _oracle(suite: Suite) -> list[Any]:
    return script_from_steps(suite.solutions[TASK]["oracle"])


def _render(provider: str, reply: Reply) -> Body:
    server = OpenAICompatibleServer if provider == "openai" else AnthropicCompatibleServer
    return server.render(None, reply, {"model": "m"}, 1)  # type: ignore[arg-type]


def _raw(body: Body, status: int = 200) -> Raw:
    return Raw(json.dumps(body), status=status)


def _edited(
    provider: str, reply: Reply, openai: Callable[[Body], Any], anthropic: Callable[[Body], Any]
) -> Raw:
    """*reply*'s body, changed by the provider's editor."""
    body = _render(provider, reply)
    (openai if provider == "openai" else anthropic)(body)
    return _raw(body)


def _message(body: Body) -> Body:
    return body["choices"][0]["message"]  # type: ignore[no-any-return]


def _set_args(value: Any) -> tuple[Callable[[Body], Any], Callable[[Body], Any]]:
    """Editors giving the first tool call's arguments *value* (as JSON text for Chat
    Completions, which sends text; as the parsed input for Messages)."""

    def openai(body: Body) -> None:
        _message(body)["tool_calls"][0]["function"]["arguments"] = (
            value if isinstance(value, str) and value.startswith("{") else json.dumps(value)
        )

    def anthropic(body: Body) -> None:
        body["content"][0]["input"] = value

    return openai, anthropic


LOOKUP = Reply(tool_calls=[ToolCall("find_customer_by_email", {"email": "maya.chen@example.com"})])
TWO_CALLS = Reply(
    tool_calls=[
        ToolCall("find_customer_by_email", {"email": "maya.chen@example.com"}),
        ToolCall("find_customer_by_email", {"email": "maya.chen@example.com"}),
    ]
)


def _same_ids(body: Body) -> None:
    if "choices" in body:
        calls = _message(body)["tool_calls"]
    else:
        calls = [b for b in body["content"] if b["type"] == "tool_use"]
    for call in calls:
        call["id"] = "call_same"


# --- the faults ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    answers: Callable[[str], list[Answer]]
    """The faulty answers the provider gives (then the oracle, unless *repeat*)."""
    reason: str
    repeat: bool = False
    """The provider gives the fault for good (every try), not once."""
    refused_as: str | None = None
    """The error class of the refused tool call the fault makes, if any."""
    provider_fault: bool = True
    """Whether the provider is at fault (a failed try, retried), not the model."""
    evidence: str = ""
    """Text a failed try's message must hold."""
    max_backoff: float = 0.05
    """The longest wait between tries (``Retry-After`` is honoured up to it)."""
    tries: int = 3
    """Tries before the attempt ends, when it ends as ``model_serving``."""


def _once(make: Callable[[str], Answer]) -> Callable[[str], list[Answer]]:
    return lambda provider: [make(provider)]


def _arguments(value: Any) -> Callable[[str], list[Answer]]:
    return _once(lambda p: _edited(p, LOOKUP, *_set_args(value)))


def _error_body(provider: str) -> Raw:
    if provider == "openai":
        return _raw({"error": {"message": "upstream overloaded", "code": 502}})
    return _raw({"type": "error", "error": {"type": "overloaded_error", "message": "overloaded"}})


def _no_answer(provider: str) -> Raw:
    body = _render(provider, Reply(text="Done."))
    if provider == "openai":
        body["choices"] = []
    else:
        body["content"] = None
    return _raw(body)


def _usage(counts: Any) -> Callable[[str], Answer]:
    def make(provider: str) -> Raw:
        body = _render(provider, LOOKUP)
        body["usage"] = counts(provider)
        return _raw(body)

    return make


def _negative(provider: str) -> Body:
    if provider == "openai":
        return {"prompt_tokens": -5, "completion_tokens": 3, "total_tokens": -2}
    return {"input_tokens": -5, "output_tokens": 3}


def _reset_mid_body(provider: str) -> Raw:
    return Raw(json.dumps(_render(provider, LOOKUP)), cut_at=40)


SUCCESS = "success"
MISTAKE: dict[str, Any] = {"provider_fault": False}
SERVING = "environment_failure/model_serving"
UNCHECKED = "harness_compatibility_failure"

FAULTS: dict[str, Fault] = {
    # the model's mistakes: refused as a step, the attempt goes on
    "arguments_not_json": Fault(
        _arguments("{not json"), SUCCESS, **MISTAKE, refused_as="invalid_arguments"
    ),
    "arguments_a_list": Fault(
        _arguments(["maya"]), SUCCESS, **MISTAKE, refused_as="invalid_arguments"
    ),
    "arguments_a_string": Fault(
        _arguments("maya"), SUCCESS, **MISTAKE, refused_as="invalid_arguments"
    ),
    "arguments_null": Fault(_arguments(None), SUCCESS, **MISTAKE, refused_as="invalid_arguments"),
    "unknown_tool": Fault(
        _once(lambda p: Reply(tool_calls=[ToolCall("no_such_tool", {})])),
        SUCCESS,
        **MISTAKE,
        refused_as="unknown_tool",
    ),
    # a quirk of the serving route: both calls run, told apart (see the test below)
    "duplicate_call_ids": Fault(
        _once(lambda p: _edited(p, TWO_CALLS, _same_ids, _same_ids)), SUCCESS, **MISTAKE
    ),
    # the provider's faults, once: retried, the attempt goes on
    "no_choices": Fault(_once(_no_answer), SUCCESS),
    "error_body_with_200": Fault(_once(_error_body), SUCCESS, evidence="an error in a 200"),
    "rate_limited": Fault(_once(lambda p: Fail(429)), SUCCESS),
    "rate_limited_retry_after": Fault(
        _once(lambda p: Fail(429, headers={"retry-after": "0.01"})), SUCCESS
    ),
    "server_error": Fault(_once(lambda p: Fail(500)), SUCCESS),
    "overloaded_retry_after": Fault(
        _once(lambda p: Fail(503, headers={"retry-after": "0"})), SUCCESS
    ),
    "reset_mid_body": Fault(_once(_reset_mid_body), SUCCESS),
    "negative_usage": Fault(_once(_usage(_negative)), SUCCESS),
    # no usage reported: not a failed answer (local servers leave it out), but the example
    # systems' cost budget can no longer be checked (see test_models_round18)
    "usage_missing": Fault(_once(_usage(lambda p: None)), UNCHECKED, provider_fault=False),
    "usage_empty": Fault(_once(_usage(lambda p: {})), UNCHECKED, provider_fault=False),
    # the provider's faults for good: an invalid attempt
    "no_choices_always": Fault(_once(_no_answer), SERVING, repeat=True),
    "error_body_with_200_always": Fault(
        _once(_error_body), SERVING, repeat=True, evidence="overloaded"
    ),
    "rate_limited_always": Fault(_once(lambda p: Fail(429)), SERVING, repeat=True),
    "server_error_always": Fault(_once(lambda p: Fail(502)), SERVING, repeat=True),
    # a wait past the attempt's time limit is not waited: the failure stands at once
    "retry_after_past_the_time_limit": Fault(
        _once(lambda p: Fail(429, headers={"retry-after": "3600"})),
        SERVING,
        repeat=True,
        max_backoff=7200,
        tries=1,
    ),
    "retry_after_date_past_the_time_limit": Fault(
        _once(lambda p: Fail(503, headers={"retry-after": "Fri, 01 Jan 2100 00:00:00 GMT"})),
        SERVING,
        repeat=True,
        max_backoff=7200,
        tries=1,
    ),
    "reset_mid_body_always": Fault(_once(_reset_mid_body), SERVING, repeat=True),
    "negative_usage_always": Fault(_once(_usage(_negative)), SERVING, repeat=True),
}


def _run(harness: Harness, fault: Fault) -> AgentRun:
    faulty = fault.answers(harness.provider.name)
    retries = {"max_retries": 2, "backoff": 0.01, "max_backoff": fault.max_backoff}
    if fault.repeat:  # every request, however many
        return harness.run(lambda request: faulty[0], retries=retries)
    return harness.run([*faulty, *_oracle(harness.suite)], retries=retries)


def _failed_tries(run: AgentRun) -> list[ModelCallEvent]:
    tries = [e for e in run.observation_action_log if isinstance(e, ModelCallEvent)]
    return [t for t in tries if t.error is not None]


@pytest.mark.parametrize("name", list(FAULTS))
@pytest.mark.parametrize("provider", [p.name for p in PROVIDERS])
def test_every_adapter_gives_a_fault_the_same_verdict(
    provider: str, name: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    (chosen,) = [p for p in PROVIDERS if p.name == provider]
    fault = FAULTS[name]
    run = _run(_harness(chosen, monkeypatch, retail), fault)
    assert run.terminal_reason == fault.reason, run.infrastructure_status
    calls = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    refused = [e.error_class for e in calls if e.error_class is not None]
    assert refused == ([fault.refused_as] if fault.refused_as else []), calls
    failed = _failed_tries(run)
    if fault.provider_fault:  # retried, every failed try kept with its evidence
        assert failed and {t.error.kind for t in failed if t.error} <= RETRIED_KINDS, failed
        assert all(fault.evidence in str(t.error) for t in failed), failed
    else:
        assert failed == []
    if fault.reason == SERVING:
        assert not run.valid
        assert run.infrastructure_status["model_serving"]["tries"] == fault.tries


# --- a time limit striking while the adapter waits out the provider --------------------------


def _timed(harness: Harness, script: list[Any], time_limit: float = 3.0) -> AgentRun:
    """One attempt under a short time limit, each request allowed far longer (so the limit,
    not the request's timeout, ends a request that hangs). What comes before the request
    that hangs (a failed try, a tool call) must fit in the limit: on a loaded machine it took
    up to 0.65 s (and 3.5 s for a process's first request, the file's earlier tests warm
    it), where at 2 s the limit struck during it and made the agent's time limit the
    provider's. Where the limit must fall after a failed try, 6 s: at 3 s, a two-worker run
    beside eight helpers took 3.8 s to its first request."""
    with harness.provider.server(script) as server:
        system = harness.system(server, request_timeout=HANG)
        data = system.model_dump(mode="json")
        data["budgets"]["time_limit"] = time_limit
        timed = SystemSpec.model_validate(data)
        timed._base_dir = system.base_dir
        return attempt(harness.suite, TASK, load_agent(timed), system=timed).run


HANGS = Reply(text="Done.", delay=BLOCK)


@pytest.mark.parametrize("failure", [Fail(503), Fail(429, headers={"retry-after": "0"})])
@pytest.mark.parametrize("provider", [p.name for p in PROVIDERS])
def test_a_time_limit_while_the_adapter_retries_the_provider_is_the_providers(
    provider: str, failure: Fail, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """The model failed and its retry was still under way at the limit: the attempt was spent
    waiting out the provider, an invalid ``model_serving`` attempt as a retry the adapter
    could not start before the limit is; it counted against the agent."""
    (chosen,) = [p for p in PROVIDERS if p.name == provider]
    harness = _harness(chosen, monkeypatch, retail)
    run = _timed(harness, [LOOKUP, failure, HANGS], time_limit=6.0)
    assert run.terminal_reason == SERVING, run.infrastructure_status
    assert not run.valid
    serving = run.infrastructure_status["model_serving"]
    assert serving["status_code"] == failure.status and serving["tries"] == 1


@pytest.mark.parametrize("provider", [p.name for p in PROVIDERS])
def test_a_slow_model_that_never_failed_is_the_agents_time_limit(
    provider: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """A model slow to answer is the system's latency, and a failure the adapter got past is
    behind it: the time limit stays the agent's."""
    (chosen,) = [p for p in PROVIDERS if p.name == provider]
    harness = _harness(chosen, monkeypatch, retail)
    for script in ([HANGS], [Fail(503), LOOKUP, HANGS]):
        run = _timed(harness, script)
        assert run.terminal_reason == "agent_failure/time_limit", run.infrastructure_status


# --- the model's own end: graded on the state, the same final reply on every adapter ---------


def _ending(openai: Body, anthropic: Body) -> Callable[[str], Raw]:
    """An answer with no tool call, as each API gives it: Chat Completions' message fields and
    finish reason, Messages' content and stop reason."""

    def make(provider: str) -> Raw:
        body = _render(provider, Reply(text="placeholder"))
        if provider == "openai":
            choice = body["choices"][0]
            choice["finish_reason"] = openai.pop("finish_reason")
            choice["message"] |= openai
        else:
            body |= anthropic
        return _raw(body)

    return make


REFUSAL = "I can't help with that."
CUT = "I will refund th"
ENDINGS: dict[str, tuple[Callable[[str], Raw], str | None]] = {
    "refusal": (
        _ending(
            {"content": None, "refusal": REFUSAL, "finish_reason": "stop"},
            {"content": [{"type": "text", "text": REFUSAL}], "stop_reason": "refusal"},
        ),
        REFUSAL,
    ),
    "cut_off_by_the_output_limit": (
        _ending(
            {"content": CUT, "finish_reason": "length"},
            {"content": [{"type": "text", "text": CUT}], "stop_reason": "max_tokens"},
        ),
        CUT,
    ),
    "filtered_to_nothing": (
        _ending(
            {"content": None, "finish_reason": "content_filter"},
            {"content": [], "stop_reason": "refusal"},
        ),
        None,
    ),
    "empty": (
        _ending(
            {"content": "", "finish_reason": "stop"}, {"content": [], "stop_reason": "end_turn"}
        ),
        None,
    ),
}


@pytest.mark.parametrize("name", list(ENDINGS))
@pytest.mark.parametrize("provider", [p.name for p in PROVIDERS])
def test_every_adapter_ends_on_the_models_own_stop_alike(
    provider: str, name: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """A refusal, a content filter, an answer its output limit cut off: the model's answer (the
    system's), not a failure of the provider. The attempt ends with it as the final reply and is
    graded on the state: nothing refunded. A Chat Completions refusal, in a field of its own,
    was no final reply, where the same refusal from the Messages API was."""
    (chosen,) = [p for p in PROVIDERS if p.name == provider]
    make, final = ENDINGS[name]
    run = _harness(chosen, monkeypatch, retail).run([make(provider)])
    assert run.terminal_reason == "agent_failure/incorrect_state", run.infrastructure_status
    assert run.final_message == final
    assert _failed_tries(run) == []


def test_a_time_limit_while_retrying_is_the_providers_over_mcp_too(
    edited_bank: Any, tmp_path: Path
) -> None:
    """Run as a program by ``groundstate.mcp_client``, the adapter's failed try went to the
    trace only with its next call: killed at the limit while retrying, the program left no
    sign of the failure and the attempt was the agent's time limit (in-process, the provider's:
    see above). A failed try is now reported at once. (The limit leaves a loaded machine the
    time to start the program.)"""
    bank: Suite = edited_bank(lambda task: task.update(time_limit=20))
    (tmp_path / "agents.py").write_text(MODEL_AGENT)
    with OpenAICompatibleServer([Fail(503), HANGS]) as server:
        model = _model_system(tmp_path, server.base_url)
        command = ["{python}", "-m", "groundstate.mcp_client", "agents.py:model_agent"]
        params = {"sandbox": "none", "network": "host", "env": {"MODEL_SYSTEM": str(model)}}
        system = load_system(system_file(tmp_path, command, **params))
        run = attempt(bank, "transfer", load_agent(system), system=system).run
    assert run.terminal_reason == SERVING, run.infrastructure_status
    assert run.infrastructure_status["model_serving"]["status_code"] == 503


@pytest.mark.parametrize("provider", [p.name for p in PROVIDERS])
def test_tool_calls_sharing_an_id_run_and_go_back_told_apart(
    provider: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """Two calls of one answer with one id are the model's two actions (both run, each a
    step), and the history sent back gives them distinct ids, on every adapter: sent back as
    given, their results could not be told apart, and an API requiring unique ids rejected
    the next request (``harness_compatibility_failure``, the system's)."""
    (chosen,) = [p for p in PROVIDERS if p.name == provider]
    servers: list[Any] = []
    script = [_edited(provider, TWO_CALLS, _same_ids, _same_ids), *_oracle(retail)]
    run = _harness(chosen, monkeypatch, retail).run(script, server_out=servers)
    assert run.terminal_reason == SUCCESS, run.infrastructure_status
    calls = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert [c.tool for c in calls[:2]] == ["find_customer_by_email"] * 2
    assert _failed_tries(run) == []
    second = json.dumps(servers[0].requests[1]["messages"])
    sent = {i for i in ("call_same", "call_same_2") if f'"{i}"' in second}
    assert sent == {"call_same", "call_same_2"}
    assert second.count('"call_same_2"') == 2  # the call and its result
    ids = re.findall(r'"(?:id|tool_call_id|tool_use_id)": "([^"]*)"', second)
    assert "call_same_2" in ids and all(re.fullmatch(r"[A-Za-z0-9_-]+", i) for i in ids)
