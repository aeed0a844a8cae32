"""Second-round adversarial answers to the model adapters: parallel tool calls, partial usage,
Retry-After as a date, bodies of another API or not JSON, connections reset mid-body, and what
the conversation sent back to the model holds (results paired with their calls, nothing of the
grader)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.python import load_agent
from groundstate.spec.suite import Suite
from groundstate.spec.system import load_system
from groundstate.testing import (
    Fail,
    Raw,
    Reply,
    ScriptedModelServer,
    ToolCall,
    attempt,
)
from groundstate.trace import ToolCallEvent

from .model_harness import _harness
from .test_models import PROVIDERS, TASK, Harness, model_calls, oracle_script
from .test_models_adversarial import (
    RAW_RPC,
    _Stalling,
    call,
    completion,
    message,
    needs_bwrap,
    run_raw,
    tool_use,
)


@pytest.fixture(params=PROVIDERS, ids=lambda p: p.name)
def harness(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> Harness:
    return _harness(request.param, monkeypatch, retail)


# --- partial usage --------------------------------------------------------------------------
# A count the API left out is not known, and neither is the call's cost, which needs both:
# the call's usage is recorded as unknown (None), never as 0 for what is missing (eighteenth
# round, docs/models.md); optional details left out (None) change nothing.


@pytest.mark.parametrize(
    ("usage", "tokens"),
    [
        ({"prompt_tokens": 100}, (None, None)),
        ({"completion_tokens": 7}, (None, None)),
        ({"prompt_tokens": None, "completion_tokens": 7}, (None, None)),
        ({"prompt_tokens": 100, "completion_tokens": 5, "prompt_tokens_details": None}, (100, 5)),
        ({}, (None, None)),
    ],
)
def test_partial_chat_usage_records_what_is_there(
    openai_harness: Harness, usage: dict[str, Any], tokens: tuple[int, int]
) -> None:
    run = openai_harness.run([Raw(completion({"content": "Done."}, usage=usage))])
    assert run.valid, run.infrastructure_status
    (c,) = model_calls(run)
    assert (c.usage.input_tokens, c.usage.output_tokens) == tokens


@pytest.mark.parametrize(
    ("usage", "tokens"),
    [
        ({"input_tokens": 100}, (None, None)),
        ({"output_tokens": 7}, (None, None)),
        ({}, (None, None)),
    ],
)
def test_partial_messages_usage_records_what_is_there(
    anthropic_harness: Harness, usage: dict[str, Any], tokens: tuple[int, int]
) -> None:
    run = anthropic_harness.run([Raw(message([{"type": "text", "text": "Done."}], usage=usage))])
    assert run.valid, run.infrastructure_status
    (c,) = model_calls(run)
    assert (c.usage.input_tokens, c.usage.output_tokens) == tokens


def test_cached_tokens_are_priced_apart_end_to_end(harness: Harness) -> None:
    prices = {"input_per_mtok": 2.0, "cached_input_per_mtok": 0.5, "output_per_mtok": 10.0}
    script = [Reply(text="Done.", input_tokens=1000, cached_tokens=600, output_tokens=100)]
    run = harness.run(script, prices=prices)
    (c,) = model_calls(run)
    assert c.usage.cached_input_tokens == 600
    assert c.usage.cost == pytest.approx((400 * 2.0 + 600 * 0.5 + 100 * 10.0) / 1e6)
    assert run.cost == pytest.approx(c.usage.cost)


# --- parallel tool calls --------------------------------------------------------------------


def test_parallel_calls_with_one_malformed_run_in_order_and_results_pair_by_id(
    harness: Harness,
) -> None:
    servers: list[ScriptedModelServer] = []
    calls = [
        ToolCall("get_order", {"order_id": "O-1001"}),
        ToolCall("get_order", raw='{"order_id": '),
        ToolCall("no_such_tool", {}),
        ToolCall("get_product", {"product_id": "P-1"}),
    ]
    run = harness.run([Reply(tool_calls=calls), Reply(text="Sorry.")], server_out=servers)
    events = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert [e.tool for e in events] == ["get_order", "get_order", "no_such_tool", "get_product"]
    second = servers[0].requests[1]
    if harness.provider.name == "openai":
        assistant = second["messages"][-5]
        ids = [c["id"] for c in assistant["tool_calls"]]
        results = second["messages"][-4:]
        assert [m["role"] for m in results] == ["tool"] * 4
        assert [m["tool_call_id"] for m in results] == ids
        contents = [m["content"] for m in results]
    else:
        assistant = second["messages"][-2]
        ids = [b["id"] for b in assistant["content"] if b["type"] == "tool_use"]
        blocks = second["messages"][-1]["content"]
        assert [b["tool_use_id"] for b in blocks] == ids
        assert [b["is_error"] for b in blocks] == [False, True, True, blocks[3]["is_error"]]
        contents = [b["content"] for b in blocks]
    assert len(set(ids)) == 4
    assert "O-1001" in contents[0] and "invalid_arguments" in contents[1]
    assert "unknown_tool" in contents[2]


def test_huge_tool_arguments_go_to_the_gateway_and_back_as_an_error(
    openai_harness: Harness,
) -> None:
    huge = json.dumps({"order_id": "O-1001", "pad": "x" * 2_000_000})
    body = completion({"content": None, "tool_calls": [call(huge)]})
    run = openai_harness.run([Raw(body), Reply(text="Sorry.")])
    assert run.valid and run.terminal_reason.startswith("agent_failure/")


def test_a_call_cut_by_the_length_limit_is_the_agents(openai_harness: Harness) -> None:
    data = json.loads(completion({"content": None, "tool_calls": [call('{"order_id": "O-10')]}))
    data["choices"][0]["finish_reason"] = "length"
    servers: list[ScriptedModelServer] = []
    run = openai_harness.run([Raw(json.dumps(data)), Reply(text="Sorry.")], server_out=servers)
    assert run.valid and run.terminal_reason.startswith("agent_failure/")
    assert "invalid_arguments" in servers[0].requests[1]["messages"][-1]["content"]
    assert model_calls(run)[0].response.stop_reason == "length"


# --- bodies that are not an answer of this API ---------------------------------------------


def test_a_messages_body_to_chat_and_a_chat_body_to_messages_are_serving_failures(
    openai_harness: Harness, anthropic_harness: Harness
) -> None:
    run = openai_harness.run([Raw(message([{"type": "text", "text": "Done."}]))] * 3)
    assert run.terminal_reason == "environment_failure/model_serving"
    run = anthropic_harness.run([Raw(completion({"content": "Done."}))] * 3)
    assert run.terminal_reason == "environment_failure/model_serving"


@pytest.mark.parametrize("body", ["<html>502 Bad Gateway</html>", "data: {}\n\n", "{'a': 1}"])
def test_a_200_that_is_not_json_is_a_serving_failure(harness: Harness, body: str) -> None:
    run = harness.run([Raw(body)] * 3)
    assert run.terminal_reason == "environment_failure/model_serving", run.infrastructure_status
    assert not run.valid
    (*_, last) = model_calls(run)
    assert last.error is not None and "malformed" in last.error.message


@pytest.mark.parametrize("status", [400, 404, 413, 422])
def test_a_4xx_whose_body_is_not_json_is_still_a_rejection(harness: Harness, status: int) -> None:
    run = harness.run([Raw("<html>nope</html>", status=status)] * 3)
    # a 413 is the request's size, the conversation outgrowing its route (fifty-second round)
    kind = "/context_window" if status == 413 else ""
    assert run.terminal_reason == f"harness_compatibility_failure{kind}", run.infrastructure_status


@pytest.mark.parametrize("status", [500, 502, 503, 529])
def test_a_5xx_whose_body_is_not_json_is_retried(harness: Harness, status: int) -> None:
    servers: list[ScriptedModelServer] = []
    run = harness.run([Raw("<html>down</html>", status=status)] * 3, server_out=servers)
    assert run.terminal_reason == "environment_failure/model_serving"
    assert len(servers[0].requests) == 3
    assert [c.error.status_code for c in model_calls(run) if c.error] == [status] * 3


# --- Retry-After as an HTTP date -----------------------------------------------------------


def test_a_retry_after_date_in_the_future_is_waited_for(harness: Harness) -> None:
    script = oracle_script(harness.suite)
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=2), usegmt=True)
    flaky = [Fail(429, "slow down", {"retry-after": when}), *script]
    started = time.monotonic()
    run = harness.run(flaky, retries={"max_retries": 1, "backoff": 0.01, "max_backoff": 5})
    assert run.terminal_reason == "success"
    assert time.monotonic() - started >= 0.9


def test_retry_after_ms_is_honoured(harness: Harness) -> None:
    script = oracle_script(harness.suite)
    flaky = [Fail(429, "slow down", {"retry-after-ms": "800"}), *script]
    started = time.monotonic()
    run = harness.run(flaky, retries={"max_retries": 1, "backoff": 0.01, "max_backoff": 5})
    assert run.terminal_reason == "success"
    assert time.monotonic() - started >= 0.7


# --- a connection reset mid-body -----------------------------------------------------------


class _Resetting(_Stalling):
    """Sends headers and half a body, then closes the connection."""

    def after_half(self, handler: BaseHTTPRequestHandler) -> None:
        handler.close_connection = True


def test_a_connection_reset_mid_body_is_retried_then_a_serving_failure(
    openai_harness: Harness,
) -> None:
    with _Resetting([]) as server:
        system = openai_harness.system(server, retries={"max_retries": 2, "backoff": 0})
        run = attempt(openai_harness.suite, TASK, load_agent(system), system=system).run
    assert run.terminal_reason == "environment_failure/model_serving", run.infrastructure_status
    assert not run.valid
    assert len(server.requests) == 3
    assert all(c.error is not None for c in model_calls(run))


# --- nothing of the grader in what the model is sent ---------------------------------------


def test_no_grader_or_oracle_text_reaches_the_model(harness: Harness) -> None:
    servers: list[ScriptedModelServer] = []
    run = harness.run(oracle_script(harness.suite), server_out=servers)
    assert run.terminal_reason == "success"
    sent = json.dumps(servers[0].requests)
    task = harness.suite.tasks[TASK]
    for secret in (
        "socks-refunded",
        "one-refund-for-maya",
        "expect_rows",
        "97214",
        "maya.chen@example.com",
        "initial_state_hash",
        "outcome_assertions",
    ):
        # the user's facts reach the model only through the user's replies
        if secret in ("97214", "maya.chen@example.com"):
            continue
        assert secret not in sent, secret
    assert task.user_request in sent


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # past: no wait asked
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00"}, 0.0),  # no zone: read as GMT
        ({"retry-after": "soon"}, None),
        ({"retry-after": "inf"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "2.5"}, 2.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "junk", "retry-after": "9"}, 9.0),
        ({}, None),
    ],
)
def test_retry_after_reads_seconds_dates_and_milliseconds(
    headers: dict[str, str], seconds: float | None
) -> None:
    from groundstate.agents.model_loop import retry_after_seconds

    assert retry_after_seconds(headers) == seconds


def test_parallel_calls_after_a_prohibited_one_never_run(harness: Harness) -> None:
    calls = [
        ToolCall("lookup_card_on_file", {"payment_method_id": "PM-C01-VISA"}),
        ToolCall("refund_item", {"order_id": "O-1001", "item_id": "I-1001-2"}),
    ]
    run = harness.run([Reply(tool_calls=calls), Reply(text="Done.")])
    events = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert run.terminal_reason == "agent_failure/prohibited_action", run.infrastructure_status
    assert [e.tool for e in events] == ["lookup_card_on_file"]


@pytest.mark.parametrize(
    "tool_call",
    [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_order", "arguments": {"order_id": "O-1001"}},
        },
        {"id": "c1", "type": "custom", "custom": {"name": "get_order", "input": "x"}},
    ],
    ids=["object-arguments", "custom-tool"],
)
def test_odd_tool_call_shapes_never_crash(
    openai_harness: Harness, tool_call: dict[str, Any]
) -> None:
    run = openai_harness.run(
        [Raw(completion({"content": None, "tool_calls": [tool_call]}))] * 3 + [Reply(text="Done.")]
    )
    assert run.terminal_reason in (
        "environment_failure/model_serving",
        "agent_failure/incorrect_state",
        # a custom tool call: a protocol the adapter never offered (tenth round)
        *(["harness_compatibility_failure"] if tool_call["type"] == "custom" else []),
    )


def test_a_refusal_is_kept_in_the_trace(openai_harness: Harness) -> None:
    from groundstate.records import AgentRun

    body = completion({"content": None, "refusal": "I can't help with that."})
    run = openai_harness.run([Raw(body)])
    assert run.valid and run.terminal_reason.startswith("agent_failure/")
    back = AgentRun.model_validate_json(run.model_dump_json())
    (c,) = model_calls(back)
    assert c.response is not None and c.response.refusal == "I can't help with that."


def test_a_refusal_that_is_not_text_is_a_malformed_answer(openai_harness: Harness) -> None:
    run = openai_harness.run([Raw(completion({"content": None, "refusal": 42}))] * 3)
    assert run.terminal_reason == "environment_failure/model_serving", run.infrastructure_status


@pytest.mark.parametrize("input", [None, [1], "O-1001", 7])
def test_a_non_object_tool_input_is_sent_back_as_an_object(
    anthropic_harness: Harness, input: Any
) -> None:
    """The Messages API refuses a history whose ``tool_use.input`` is not an object: echoing
    the model's mistake would turn it into a rejected request (a harness failure)."""
    servers: list[ScriptedModelServer] = []
    script = [Raw(message([tool_use(input)], stop_reason="tool_use")), Reply(text="Sorry.")]
    run = anthropic_harness.run(script, server_out=servers)
    (echoed,) = [
        block
        for m in servers[0].requests[1]["messages"]
        if m["role"] == "assistant"
        for block in m["content"]
    ]
    assert echoed["input"] == {}
    (c,) = [c for c in model_calls(run) if c.response and c.response.tool_calls]
    assert c.response is not None
    assert c.response.tool_calls[0].arguments == json.dumps(input)  # the trace keeps it


@pytest.mark.parametrize("blank", ["", "\n\n", " "], ids=["empty", "newlines", "space"])
def test_blank_text_beside_a_tool_use_is_not_sent_back(
    anthropic_harness: Harness, blank: str
) -> None:
    servers: list[ScriptedModelServer] = []
    blocks = [{"type": "text", "text": blank}, tool_use({"order_id": "O-1001"})]
    script = [Raw(message(blocks, stop_reason="tool_use")), Reply(text="Sorry.")]
    anthropic_harness.run(script, server_out=servers)
    (assistant,) = [m for m in servers[0].requests[1]["messages"] if m["role"] == "assistant"]
    assert [b["type"] for b in assistant["content"]] == ["tool_use"]


@needs_bwrap
@pytest.mark.parametrize(("length", "heard"), [(500, True), (5000, False)])
def test_a_line_longer_than_the_evaluator_reads_is_dropped_and_the_program_goes_on(
    retail: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, length: int, heard: bool
) -> None:
    """An untrusted program could write an endless line; the evaluator reads at most
    ``MAX_LINE`` characters of one (made small here) and drops the rest unparsed."""
    from groundstate.agents import mcp_command
    from groundstate.trace import MessageEvent

    monkeypatch.setattr(mcp_command, "MAX_LINE", 2000)
    run = run_raw(retail, tmp_path, "long_line", str(length)).run
    assert run.final_message == "survived", run.infrastructure_status
    said = [e for e in run.observation_action_log if isinstance(e, MessageEvent)]
    assert any("xxxx" in (e.text or "") for e in said) is heard


@needs_bwrap
@pytest.mark.parametrize(("length", "refused"), [(500, False), (5000, True)])
def test_an_http_body_over_the_bound_is_refused_unread(
    retail: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, length: int, refused: bool
) -> None:
    from groundstate.agents import mcp_command

    from .test_mcp_agents import system_file

    monkeypatch.setattr(mcp_command, "MAX_LINE", 2000)
    command = ["{python}", str(RAW_RPC), "http_post", str(length)]
    path = system_file(tmp_path, command, transport="http", network="host")
    system = load_system(path)
    system = system.model_copy(
        update={"budgets": system.budgets.model_copy(update={"time_limit": 20})}
    )
    out = attempt(retail, TASK, load_agent(system), system=system)
    stderr = out.artifacts["agent_stderr.txt"]
    assert ("status 413" in stderr) is refused, stderr
    assert "status " in stderr


@needs_bwrap
def test_calls_in_flight_at_once_each_get_their_own_answer(retail: Suite, tmp_path: Path) -> None:
    orders = ["O-1001", "O-NOPE", "O-1001", "O-1002"]
    run = run_raw(retail, tmp_path, "parallel", json.dumps(orders)).run
    answers = json.loads(run.final_message or "null")
    assert [a.startswith("error: ") for a in answers] == [False, True, False, False], answers
    assert "O-1001" in answers[0] and "O-1001" in answers[2] and "O-1002" in answers[3]
    events = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert sorted(e.args["order_id"] for e in events) == sorted(orders)


def test_the_first_request_holds_no_private_fact_of_the_user(harness: Harness) -> None:
    """The user's facts (``user.knowledge``) reach the model only as the user's replies."""
    servers: list[ScriptedModelServer] = []
    harness.run(oracle_script(harness.suite), server_out=servers)
    first = json.dumps(servers[0].requests[0])
    knowledge = harness.suite.tasks[TASK].user.knowledge
    assert knowledge
    for value in knowledge.values():
        assert str(value) not in first, value


def test_a_user_reply_is_attached_to_the_talk_call_beside_a_tool_call(harness: Harness) -> None:
    servers: list[ScriptedModelServer] = []
    calls = [
        ToolCall("get_order", {"order_id": "O-1001"}),
        ToolCall("talk_to_user", {"message": "What is your zip code?"}),
        ToolCall("get_order", {"order_id": "O-1002"}),
    ]
    harness.run([Reply(tool_calls=calls), Reply(text="Sorry.")], server_out=servers)
    second = servers[0].requests[1]
    if harness.provider.name == "openai":
        ids = [c["id"] for c in second["messages"][-4]["tool_calls"]]
        results = [(m["tool_call_id"], m["content"]) for m in second["messages"][-3:]]
    else:
        ids = [b["id"] for b in second["messages"][-2]["content"] if b["type"] == "tool_use"]
        results = [(b["tool_use_id"], b["content"]) for b in second["messages"][-1]["content"]]
    assert [r[0] for r in results] == ids
    assert "O-1001" in results[0][1] and "97214" in results[1][1] and "O-1002" in results[2][1]
