"""Adversarial answers to the model adapters: what real providers and misbehaving servers send
(malformed tool calls, odd bodies, filtered or truncated replies, missing usage, lone
surrogates...). Each must give the taxonomy's terminal reason (a serving malformation is an
invalid attempt, an agent's malformed call is the agent's) with honest usage."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.python import load_agent
from groundstate.sandbox import find_bwrap
from groundstate.spec.suite import Suite
from groundstate.spec.system import load_system
from groundstate.testing import (
    Fail,
    OpenAICompatibleServer,
    Raw,
    Reply,
    ScriptedModelServer,
    attempt,
)
from groundstate.trace import ToolCallEvent

from .conftest import BLOCK, HANG
from .model_harness import PROVIDERS, TASK, Harness, _harness
from .test_models import model_calls, oracle_script


@pytest.fixture(params=PROVIDERS, ids=lambda p: p.name)
def harness(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> Harness:
    return _harness(request.param, monkeypatch, retail)


def completion(message: dict[str, Any], **top: Any) -> str:
    """An OpenAI chat completion body with *message* (and top-level fields overridden)."""
    body: dict[str, Any] = {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant"} | message, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }
    return json.dumps(body | top)


def call(arguments: Any, *, name: Any = "get_order", id: Any = "call_1") -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


# --- tool calls the model writes badly: the agent's problem, never a crash ----------------------


@pytest.mark.parametrize("arguments", ["[1, 2]", "null", '"O-1001"', "42", "{", "\ud800"])
def test_non_object_arguments_go_back_as_tool_errors(
    openai_harness: Harness, arguments: str
) -> None:
    servers: list[ScriptedModelServer] = []
    script = [
        Raw(completion({"content": None, "tool_calls": [call(arguments)]})),
        Reply(text="Sorry."),
    ]
    run = openai_harness.run(script, server_out=servers)
    assert run.terminal_reason.startswith("agent_failure/")
    (event,) = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert not event.ok
    assert len(servers[0].requests) == 2  # the model heard of its mistake


@pytest.mark.parametrize(
    "bad_call",
    [
        call("{}", name=None),
        call("{}", id=None),
        {"id": "call_1", "type": "function"},  # no function at all
        call(None),
    ],
    ids=["no-name", "no-id", "no-function", "null-arguments"],
)
def test_tool_calls_missing_their_parts_never_crash_the_adapter(
    openai_harness: Harness, bad_call: dict[str, Any]
) -> None:
    script = [Raw(completion({"content": None, "tool_calls": [bad_call]}))] * 3
    run = openai_harness.run(script)
    # Either read as the model's malformed call or as a malformed answer from the server:
    # never an agent crash (agent_failure/exception) nor a harness bug.
    assert run.terminal_reason in (
        "environment_failure/model_serving",
        "agent_failure/incorrect_state",
        "agent_failure/gave_up",
    ), run.infrastructure_status


def test_duplicate_tool_call_ids_run_each_call_once(openai_harness: Harness) -> None:
    args = json.dumps({"order_id": "O-1001"})
    script = [
        Raw(completion({"content": None, "tool_calls": [call(args), call(args)]})),
        Reply(text="Done."),
    ]
    run = openai_harness.run(script)
    events = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert len(events) == 2  # both calls are the model's actions, recorded as such
    assert run.terminal_reason.startswith("agent_failure/")


def test_text_beside_tool_calls_runs_the_calls(harness: Harness) -> None:
    script = oracle_script(harness.suite)
    first = script[0]
    assert isinstance(first, Reply)
    run = harness.run([Reply(text="Let me check.", tool_calls=first.tool_calls), *script[1:]])
    assert run.terminal_reason == "success"


# --- answers the server gets wrong: invalid attempts, retried -----------------------------------


@pytest.mark.parametrize(
    "body",
    [
        json.dumps({"error": {"message": "upstream overloaded", "code": 503}}),
        completion({"content": "hi"}, choices=[]),
        completion({"content": "hi"}, choices=None),
        "[]",
        "null",
        '{"choices": [{"message": null}]}',
        "",
    ],
    ids=["error-body", "no-choices", "null-choices", "array", "null", "null-message", "empty"],
)
def test_a_200_that_is_not_an_answer_is_a_serving_failure(
    openai_harness: Harness, body: str
) -> None:
    servers: list[ScriptedModelServer] = []
    run = openai_harness.run([Raw(body)] * 3, server_out=servers)
    assert run.terminal_reason == "environment_failure/model_serving", run.infrastructure_status
    assert not run.valid
    assert len(servers[0].requests) == 3  # retried


# --- replies that end oddly: the system's answer, recorded with the provider's reason -----------


@pytest.mark.parametrize("finish", ["length", "content_filter"])
def test_a_truncated_or_filtered_reply_is_the_systems_answer_with_its_reason_kept(
    openai_harness: Harness, finish: str
) -> None:
    body = completion({"content": None})
    data = json.loads(body)
    data["choices"][0]["finish_reason"] = finish
    run = openai_harness.run([Raw(json.dumps(data))])
    assert run.terminal_reason.startswith("agent_failure/")  # the model did not do the task
    assert run.valid
    (call,) = model_calls(run)
    assert call.response is not None and call.response.stop_reason == finish


def test_a_refusal_field_is_no_final_reply_and_no_crash(openai_harness: Harness) -> None:
    run = openai_harness.run([Raw(completion({"content": None, "refusal": "I can't help."}))])
    assert run.terminal_reason.startswith("agent_failure/")
    assert run.valid


def test_missing_usage_records_usage_not_known_without_crashing(openai_harness: Harness) -> None:
    data = json.loads(completion({"content": "Done."}))
    del data["usage"]
    run = openai_harness.run([Raw(json.dumps(data))])
    (call,) = model_calls(run)
    assert call.usage.input_tokens is None and call.usage.cost is None  # not 0 (round 18)
    # the example system's cost budget cannot be checked: see test_models_round18
    assert run.terminal_reason == "harness_compatibility_failure"


@pytest.mark.parametrize("text", ["\ud800 lone", "emoji \U0001f600 and \u202e bidi", "\x00nul"])
def test_odd_unicode_in_replies_is_stored_and_read_back(openai_harness: Harness, text: str) -> None:
    from groundstate.records import AgentRun

    body = completion({"content": None, "tool_calls": [call(json.dumps({"order_id": text}))]})
    run = openai_harness.run([Raw(body), Raw(completion({"content": text}))])
    stored = run.model_dump_json().encode("utf-8")  # what the store writes
    back = AgentRun.model_validate_json(stored)
    assert back.terminal_reason == run.terminal_reason
    texts = [c.response.text for c in model_calls(back) if c.response and c.response.text]
    assert texts == [text.replace("\ud800", "\\ud800")]  # escaped, evidence kept


def test_a_huge_reply_is_handled(openai_harness: Harness) -> None:
    huge = "x" * 3_000_000
    run = openai_harness.run([Raw(completion({"content": huge}))])
    assert run.valid and run.terminal_reason.startswith(("agent_failure/", "success"))


# --- retries: Retry-After in every form, and a server that stalls mid-body ----------------------


@pytest.mark.parametrize(
    "retry_after", ["Wed, 21 Oct 2015 07:28:00 GMT", "-5", "nan", "inf", "1e308", "", "soon"]
)
def test_any_retry_after_value_keeps_the_backoff_bounded(
    harness: Harness, retry_after: str
) -> None:
    from groundstate.testing import Fail

    servers: list[ScriptedModelServer] = []
    script = oracle_script(harness.suite)
    flaky = [script[0], Fail(429, "slow down", {"retry-after": retry_after}), *script[1:]]
    run = harness.run(flaky, server_out=servers)
    assert run.terminal_reason == "success"


class _Stalling(OpenAICompatibleServer):
    """Sends the headers and half a body, then stalls until closed."""

    def after_half(self, handler: BaseHTTPRequestHandler) -> None:
        """What the server does once half the body is out: here, stall."""
        self._closing.wait(BLOCK)

    def _handler(self) -> Any:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                server.requests.append({})
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", "1000")
                self.end_headers()
                with contextlib.suppress(OSError):
                    self.wfile.write(b'{"id": "chatcmpl-x", "choi')
                    self.wfile.flush()
                server.after_half(self)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        return Handler


def test_a_server_that_stalls_mid_body_is_a_timeout(openai_harness: Harness) -> None:
    harness = openai_harness  # one wire format is enough for the transport
    with _Stalling([]) as server:
        system = harness.system(
            server, request_timeout=0.3, retries={"max_retries": 1, "backoff": 0}
        )
        started = time.monotonic()
        output = attempt(harness.suite, TASK, load_agent(system), system=system)
    run = output.run
    assert time.monotonic() - started < HANG  # the 0.3 s timeout, not the server's stall
    assert run.terminal_reason == "environment_failure/model_serving"
    assert not run.valid
    assert len(server.requests) == 2


# --- the Messages API's own shapes ----------------------------------------------------------


def message(content: Any, **top: Any) -> str:
    body: dict[str, Any] = {
        "id": "msg_x",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }
    return json.dumps(body | top)


def tool_use(input: Any, *, name: Any = "get_order", id: Any = "toolu_1") -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


@pytest.mark.parametrize("input", [None, [1], "O-1001", 7])
def test_non_object_tool_input_goes_back_as_a_tool_error(
    anthropic_harness: Harness, input: Any
) -> None:
    servers: list[ScriptedModelServer] = []
    script = [Raw(message([tool_use(input)], stop_reason="tool_use")), Reply(text="Sorry.")]
    run = anthropic_harness.run(script, server_out=servers)
    assert run.terminal_reason.startswith("agent_failure/"), run.infrastructure_status
    assert len(servers[0].requests) == 2


@pytest.mark.parametrize(
    "content",
    [
        [tool_use({}, name=None)],
        [tool_use({}, id=None)],
        None,
        [{"type": "text"}],
    ],
    ids=["no-name", "no-id", "null-content", "text-without-text"],
)
def test_malformed_messages_are_serving_failures_not_crashes(
    anthropic_harness: Harness, content: Any
) -> None:
    run = anthropic_harness.run([Raw(message(content, stop_reason="tool_use"))] * 3)
    assert run.terminal_reason == "environment_failure/model_serving", run.infrastructure_status


@pytest.mark.parametrize("stop", ["refusal", "max_tokens", "pause_turn"])
def test_a_refusal_or_truncation_is_the_systems_answer(
    anthropic_harness: Harness, stop: str
) -> None:
    run = anthropic_harness.run([Raw(message([], stop_reason=stop))])
    assert run.terminal_reason.startswith("agent_failure/"), run.infrastructure_status
    (call,) = model_calls(run)
    assert call.response is not None and call.response.stop_reason == stop


def test_unknown_block_types_are_skipped(anthropic_harness: Harness) -> None:
    blocks = [{"type": "server_tool_use_v9", "id": "x"}, {"type": "text", "text": "Done."}]
    run = anthropic_harness.run([Raw(message(blocks))])
    (call,) = model_calls(run)
    assert run.valid and call.response is not None and call.response.text == "Done."


# --- external programs over MCP that misbehave at the protocol level --------------------------

RAW_RPC = Path(__file__).parent / "mcp_programs" / "raw_rpc.py"
needs_bwrap = pytest.mark.skipif(find_bwrap() is None, reason="no bubblewrap (bwrap) found")


def run_raw(retail: Suite, tmp_path: Path, mode: str, arg: str = "", limit: float = 20) -> Any:
    from .test_mcp_agents import system_file

    system = load_system(system_file(tmp_path, ["{python}", str(RAW_RPC), mode, arg]))
    budgets = system.budgets.model_copy(update={"time_limit": limit})
    system = system.model_copy(update={"budgets": budgets})
    return attempt(retail, TASK, load_agent(system), system=system)


@needs_bwrap
@pytest.mark.parametrize(("mode", "reply"), [("garbage", "survived"), ("notify", "notified")])
def test_garbage_and_notifications_from_a_program_do_not_end_its_attempt(
    retail: Suite, tmp_path: Path, mode: str, reply: str
) -> None:
    out = run_raw(retail, tmp_path, mode)
    assert out.run.final_message == reply, out.run.infrastructure_status
    assert out.run.valid
    assert out.run.terminal_reason == "agent_failure/incorrect_state"  # it did nothing


@needs_bwrap
def test_a_tool_call_before_initialize_runs_no_tool(retail: Suite, tmp_path: Path) -> None:
    out = run_raw(retail, tmp_path, "call_before_initialize")
    calls = [e for e in out.run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert out.run.valid, out.run.infrastructure_status
    assert not calls or out.run.final_message, out.run.final_message


@needs_bwrap
@pytest.mark.parametrize(
    ("mode", "reason", "limit"),
    [  # a program's start must fit in its limit when it is to leave before it
        ("exit_after_initialize", "agent_failure/incorrect_state", 20),
        ("exit_at_once", "agent_failure/incorrect_state", 20),
        ("close_stdout", "agent_failure/time_limit", 4),
    ],
)
def test_a_program_that_leaves_early_is_the_agents_failure(
    retail: Suite, tmp_path: Path, mode: str, reason: str, limit: float
) -> None:
    out = run_raw(retail, tmp_path, mode, limit=limit)
    assert out.run.terminal_reason == reason, out.run.infrastructure_status
    assert out.run.final_message is None


@needs_bwrap
@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": "5000000"},
        {"output_tokens": 2.5},
        {"cost": "abc"},
        {"cost": [1]},
        {"cost": float("nan")},
        {"input_tokens": True},
        {"input_tokens": -5},
        {"input_tokens": 10, "cost": -1},
    ],
    ids=["string", "fraction", "text-cost", "list-cost", "nan", "bool", "negative", "mixed"],
)
def test_a_malformed_usage_report_is_refused_not_dropped_nor_a_crash(
    retail: Suite, tmp_path: Path, usage: dict[str, Any]
) -> None:
    run = run_raw(retail, tmp_path, "usage", json.dumps(usage)).run
    assert run.terminal_reason == "agent_failure/incorrect_state", run.infrastructure_status
    assert (run.final_message or "").startswith("error: invalid_arguments: report_usage")
    assert run.usage.input_tokens == 0  # nothing of a refused report counts


@needs_bwrap
def test_a_whole_number_written_as_a_float_counts_against_the_budget(
    retail: Suite, tmp_path: Path
) -> None:
    run = run_raw(retail, tmp_path, "usage", json.dumps({"input_tokens": 5e6, "cost": 0.5})).run
    assert run.usage.input_tokens == 5_000_000, run.final_message  # not read as 0


# --- a model-driven user whose server misbehaves: always an invalid attempt ---------------------


@pytest.mark.parametrize(
    "answer",
    [
        Raw("this is not json"),
        Raw(""),
        Raw(json.dumps({"error": {"message": "overloaded"}})),
        Raw(completion({"content": "x"}, choices=[])),
        Raw(completion({"content": None})),
        Raw(completion({"content": None, "tool_calls": [call("{}")]})),
        Raw(completion({"content": 42})),
        Fail(429, "slow down", {"retry-after": "0"}),
    ],
    ids=["not-json", "empty", "error-body", "no-choices", "no-text", "tool-call", "number", "429"],
)
def test_a_user_model_answering_badly_makes_the_attempt_invalid(bank: Suite, answer: Any) -> None:
    from groundstate.testing import FunctionAgent

    from .test_model_users import bank_agent_system, model_user, polite_transfer

    with OpenAICompatibleServer([answer] * 3) as server:
        user = model_user(server)
        assert user.model is not None
        user = user.model_copy(update={"model": user.model.model_copy(update={"max_retries": 0})})
        system = bank_agent_system(user)
        out = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system)
    assert out.run.terminal_reason == "environment_failure/user_simulator", (
        out.run.infrastructure_status
    )
    assert not out.run.valid


# --- the time limit and serving failures ---------------------------------------------------


USER_LIMIT = 3.0
"""The time limit of the tests on a model-driven user's time: the user must be asked within its
first half (the harness's start of the attempt comes first) for a user outlasting it to be
blamed, and answer within it for the agent to be; at 1 s a loaded machine left 0.5 s for the
one and 1 s for the other."""


def limited(system: Any, seconds: float) -> Any:
    from groundstate.spec.system import SystemSpec

    data = system.model_dump(mode="json")
    data["budgets"]["time_limit"] = seconds
    changed = SystemSpec.model_validate(data)
    changed._base_dir = system.base_dir
    return changed


@pytest.mark.parametrize(
    "failure", [Fail(429, "slow down", {"retry-after": "30"}), Fail(503, "overloaded")]
)
def test_a_backoff_past_the_time_limit_is_a_serving_failure_not_the_agents(
    harness: Harness, failure: Fail
) -> None:
    """Waiting out a rate limit is the provider's doing: a retry that cannot happen before the
    attempt's time limit ends the attempt as invalid, not as the agent's time limit."""
    with harness.provider.server([failure] * 5) as server:
        retries = {"max_retries": 4, "backoff": 5, "max_backoff": 30}
        # its first request must fit in the limit; its first backoff (5 s) must not
        system = limited(harness.system(server, retries=retries), 4.0)
        run = attempt(harness.suite, TASK, load_agent(system), system=system).run
    assert run.terminal_reason == "environment_failure/model_serving", run.infrastructure_status
    assert not run.valid
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -5, "completion_tokens": 20},
        {"prompt_tokens": 1.5, "completion_tokens": 20},
        {"prompt_tokens": "many", "completion_tokens": 20},
        {"prompt_tokens": 100, "completion_tokens": -1},
        {
            "prompt_tokens": 100,
            "completion_tokens": 20,
            "prompt_tokens_details": {"cached_tokens": -3},
        },
    ],
    ids=["negative", "fraction", "text", "negative-output", "negative-cached"],
)
def test_impossible_usage_from_the_server_is_a_serving_failure(
    openai_harness: Harness, usage: dict[str, Any]
) -> None:
    run = openai_harness.run([Raw(completion({"content": "Done."}, usage=usage))] * 3)
    assert run.terminal_reason == "environment_failure/model_serving", run.infrastructure_status


def test_content_given_as_parts_is_a_serving_failure_not_a_crash(openai_harness: Harness) -> None:
    parts = [{"type": "text", "text": "Done."}]
    run = openai_harness.run([Raw(completion({"content": parts}))] * 3)
    assert run.terminal_reason == "environment_failure/model_serving", run.infrastructure_status


@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": 10, "output_tokens": -1},
        {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": -5},
        {"input_tokens": -50, "output_tokens": 5, "cache_creation_input_tokens": 60},
    ],
    ids=["negative-output", "negative-cache-read", "negative-input"],
)
def test_impossible_messages_usage_is_a_serving_failure(
    anthropic_harness: Harness, usage: dict[str, Any]
) -> None:
    body = message([{"type": "text", "text": "Done."}], usage=usage)
    run = anthropic_harness.run([Raw(body)] * 3)
    assert run.terminal_reason == "environment_failure/model_serving", run.infrastructure_status


@pytest.mark.parametrize(
    "prompt",
    [
        'Answer as JSON like {"a": 1}. You are {persona}.',
        "{persona} {unknown}",
        "{0}",
        "{}",
        "a { b",
    ],
)
def test_a_user_prompt_template_that_cannot_be_filled_is_refused_at_load(prompt: str) -> None:
    from pydantic import ValidationError

    from groundstate.spec.system import UserModel, UserSimulatorSection

    with pytest.raises(ValidationError, match=r"prompt: .*literal braces"):
        UserSimulatorSection(kind="model", model=UserModel(revision="u"), prompt=prompt)


def test_the_default_and_escaped_user_prompts_are_accepted() -> None:
    from groundstate.spec.system import UserModel, UserSimulatorSection
    from groundstate.users import DEFAULT_USER_PROMPT

    for prompt in (DEFAULT_USER_PROMPT, 'Reply like {{"a": 1}} as {persona}.'):
        UserSimulatorSection(kind="model", model=UserModel(revision="u"), prompt=prompt)


@needs_bwrap
@pytest.mark.parametrize("arguments", [{"final_reply": None}, {}, {"final_reply": {"a": 1}}])
def test_finish_without_a_text_reply_is_refused_and_the_program_may_try_again(
    retail: Suite, tmp_path: Path, arguments: dict[str, Any]
) -> None:
    run = run_raw(retail, tmp_path, "finish_with", json.dumps(arguments)).run
    assert (run.final_message or "").startswith("second: error: invalid_arguments: finish")
    assert run.terminal_reason == "agent_failure/incorrect_state"


@pytest.mark.parametrize(
    "answer", [Fail(429, "slow down", {"retry-after": "30"}), Reply(text="late", delay=10)]
)
def test_a_user_model_that_outlasts_the_time_limit_is_the_instruments_failure(
    bank: Suite, answer: Any
) -> None:
    """The agent waits on the simulated user: a user model that is rate-limited or slow past
    the attempt's time limit makes the attempt invalid, not the agent's time limit."""
    from groundstate.testing import FunctionAgent

    from .test_model_users import bank_agent_system, model_user, polite_transfer

    with OpenAICompatibleServer([answer] * 3) as server:
        system = limited(bank_agent_system(model_user(server)), USER_LIMIT)
        out = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system)
    assert out.run.terminal_reason == "environment_failure/user_simulator", (
        out.run.infrastructure_status
    )
    assert not out.run.valid


def test_an_agent_slow_between_user_turns_still_hits_its_own_time_limit(bank: Suite) -> None:
    """The near miss: the user answered; the agent then used the time up."""
    from groundstate.testing import FunctionAgent

    from .test_model_users import bank_agent_system, model_user

    async def dawdles(session: Any) -> str:
        await session.say("What is your PIN?")
        await asyncio.sleep(10)
        return "done"

    with OpenAICompatibleServer([Reply(text="1234")]) as server:
        system = limited(bank_agent_system(model_user(server)), USER_LIMIT)
        out = attempt(bank, "transfer", FunctionAgent(dawdles), system=system)
    assert out.run.terminal_reason == "agent_failure/time_limit"
