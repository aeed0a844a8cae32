"""Model adapters, MCP agents, users and judges against misbehaving peers (fourteenth audit).

The rule each test checks: what the model writes wrongly is its own mistake, told to it and
recorded as it happened; nothing it writes runs a tool it was told did not run, or turns its
failure into an invalid attempt (or the other way round).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.python import load_agent
from groundstate.errors import SpecError
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite
from groundstate.spec.system import BudgetsSection, load_system
from groundstate.testing import FunctionAgent, OpenAICompatibleServer, Raw, Reply, attempt
from groundstate.trace import ModelCallEvent, ToolCallEvent

from .judged_bank import judged_run
from .model_harness import PROVIDERS, Harness, Provider, _harness
from .test_mcp_agents import system_file
from .test_model_judges import Judged, always, judged  # noqa: F401 (the fixture)
from .test_model_users import bank_agent_system, polite_transfer
from .test_models_adversarial import call, completion, message, tool_use
from .test_models_round11 import _retries


@pytest.fixture(params=PROVIDERS, ids=lambda p: p.name)
def bank_harness(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, bank: Suite
) -> Harness:
    """One provider's example system, run on the bank suite's ``transfer`` task."""
    provider: Provider = request.param
    return _harness(provider, monkeypatch, bank)


def bank_run(harness: Harness, script: list[Any], servers: list[Any] | None = None) -> AgentRun:
    with harness.provider.server(script) as server:
        system = harness.system(server)
        out = attempt(harness.suite, "transfer", load_agent(system), system=system)
    if servers is not None:
        servers.append(server)
    return out.run


def null_arguments(provider: str, tool: str) -> Raw:
    """An answer calling *tool* with ``null`` for its arguments, in *provider*'s API."""
    if provider == "openai":
        return Raw(completion({"content": None, "tool_calls": [call("null", name=tool)]}))
    return Raw(message([tool_use(None, name=tool)], stop_reason="tool_use"))


# --- arguments that are not an object never run the tool -----------------------------------------


@pytest.mark.parametrize("tool", ["explode", "read_audit"])
def test_null_arguments_run_no_tool_and_the_model_is_told(bank_harness: Harness, tool: str) -> None:
    """A call whose arguments are ``null`` was passed on as no arguments (None), which a
    session reads as ``{}``: the tool ran (a broken one made the attempt an invalid
    ``environment_failure/tool_crash``, a forbidden one a ``prohibited_action``) while the
    model was told ``error (invalid_arguments)``. Now the call is refused as any other
    arguments that are not an object: in the trace as ``invalid_arguments``, the tool not run."""
    servers: list[Any] = []
    script = [null_arguments(bank_harness.provider.name, tool), Reply(text="Sorry.")]
    run = bank_run(bank_harness, script, servers)
    (event,) = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert (event.tool, event.ok, event.error_class) == (tool, False, "invalid_arguments")
    assert run.terminal_reason == "agent_failure/incorrect_state", run.infrastructure_status
    told = json.dumps(servers[0].requests[1]["messages"])
    assert "the arguments must be a JSON object, got NoneType" in told


# --- a cost budget the adapter could never reach ------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS, ids=lambda p: p.name)
def test_a_cost_budget_without_prices_is_refused_when_the_system_is_built(
    provider: Provider, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """Without ``model.prices`` the adapters charge every call 0, so ``budgets.max_cost``
    never stopped an attempt, however many tokens it spent: a budget in force on paper.
    Now such a system is refused when its agent is built, naming the budget."""
    harness = _harness(provider, monkeypatch, retail)
    with provider.server([Reply(text="Done.")]) as server:
        system = harness.system(server, prices=None)
        assert system.budgets.max_cost is not None  # the example systems set one
        with pytest.raises(SpecError, match="prices") as raised:
            load_agent(system)
        assert raised.value.field == "budgets.max_cost"
        unbudgeted = system.model_copy(update={"budgets": BudgetsSection()})
        assert load_agent(unbudgeted) is not None  # no budget: no prices needed


# --- an answer the adapter cannot use is in the trace -------------------------------------------

LEGACY = {"content": None, "function_call": {"name": "get_order", "arguments": "{}"}}
SERVER_TOOL = {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}}


@pytest.mark.parametrize(
    ("provider", "answer", "said"),
    [
        ("openai", Raw(completion(LEGACY)), "legacy function_call ('get_order')"),
        ("anthropic", Raw(message([SERVER_TOOL], stop_reason="tool_use")), "server_tool_use"),
    ],
    ids=["legacy-function-call", "server-tool-use"],
)
def test_an_answer_in_a_protocol_never_offered_is_kept_in_the_trace(
    monkeypatch: pytest.MonkeyPatch, retail: Suite, provider: str, answer: Raw, said: str
) -> None:
    """Such an answer ends the attempt as ``harness_compatibility_failure``, but its request
    was raised past the adapter's recording: the trace had no model call at all, so the
    answer that decided the verdict (and its request id) was missing from it. Now it is a
    failed try like any other, recorded once and not retried."""
    (chosen,) = [p for p in PROVIDERS if p.name == provider]
    servers: list[Any] = []
    run = _harness(chosen, monkeypatch, retail).run([answer] * 3, server_out=servers)
    assert run.terminal_reason == "harness_compatibility_failure", run.infrastructure_status
    assert len(servers[0].requests) == 1
    (event,) = [e for e in run.observation_action_log if isinstance(e, ModelCallEvent)]
    assert event.error is not None and event.error.kind == "rejected"
    assert event.error.request_id == "req_1" and said in event.error.message
    exception = run.infrastructure_status["exception"]["message"]
    assert said in exception and "the adapter cannot use the answer" in exception


# --- a tool call the output limit cut off does not run ------------------------------------------

TRANSFER = {"source": "A", "target": "B", "amount": 3}


CUT_OFF = {"openai": ["length", "content_filter"], "anthropic": ["max_tokens", "refusal"]}
"""Each API's stop reasons of an answer cut off while being written."""


def cut_answer(provider: str, *, last: str = "tool_use", cut: int = 0) -> Raw:
    """An answer cut off (by its *cut*-th stop reason of :data:`CUT_OFF`) while writing a
    transfer (whose input, as the API parsed it so far, is a whole object); with *last*
    ``text``, after the call."""
    reason = CUT_OFF[provider][cut]
    if provider == "openai":
        calls = [call(json.dumps(TRANSFER), name="transfer")]
        body = json.loads(completion({"content": None, "tool_calls": calls}))
        body["choices"][0]["finish_reason"] = reason
        return Raw(json.dumps(body))
    blocks = [tool_use(TRANSFER, name="transfer")]
    if last == "text":
        blocks.append({"type": "text", "text": "Now I will"})
    return Raw(message(blocks, stop_reason=reason))


@pytest.mark.parametrize("cut", [0, 1], ids=["output-limit", "filtered"])
def test_a_tool_call_cut_off_by_the_output_limit_is_not_made(
    bank_harness: Harness, cut: int
) -> None:
    """An answer that reached ``max_tokens`` (or a content filter stopped) while writing a
    tool call was carried out as if the model had finished it: a partial input the API
    parsed is still an object, so the transfer ran with an amount the model had not finished
    writing. Now the cut call goes to
    the gateway as its text (recorded as ``invalid_arguments``, a step) and the model is told
    it was cut off."""
    servers: list[Any] = []
    script = [cut_answer(bank_harness.provider.name, cut=cut), Reply(text="Sorry.")]
    run = bank_run(bank_harness, script, servers)
    (event,) = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert (event.tool, event.ok, event.error_class) == ("transfer", False, "invalid_arguments")
    told = json.dumps(servers[0].requests[1]["messages"])
    assert "the answer was cut off in this call (stop reason" in told
    assert run.terminal_reason == "agent_failure/incorrect_state", run.infrastructure_status


def test_a_tool_call_before_the_cut_off_text_still_runs(
    monkeypatch: pytest.MonkeyPatch, bank: Suite
) -> None:
    """The near miss: the output limit struck in text written after a whole tool call."""
    (chosen,) = [p for p in PROVIDERS if p.name == "anthropic"]
    script = [cut_answer("anthropic", last="text"), Reply(text="Sorry.")]
    run = bank_run(_harness(chosen, monkeypatch, bank), script)
    (event,) = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert event.tool == "transfer" and event.error_class != "invalid_arguments"


# --- a judge's answer without a verdict says why ------------------------------------------------


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"content": None, "refusal": "No."}, "(it refused: 'No.')"),
        ({"content": "The reply moves", "finish_reason": "length"}, "(stop reason 'length')"),
    ],
    ids=["refusal", "cut-off"],
)
def test_a_judges_answer_without_a_verdict_names_a_refusal_or_a_cut_off(
    judged: Judged,  # noqa: F811
    body: dict[str, Any],
    said: str,
) -> None:
    """A judge's model that refused was recorded as "the answer is empty", the refusal's text
    nowhere, and one whose answer its ``max_tokens`` cut off as "its last line is not
    'VERDICT: PASS'...": the author could not tell a judge too short of tokens from one
    that ignores the format. The failure now says which, and keeps the stop reason."""
    finish = body.pop("finish_reason", "stop")
    answer = json.loads(completion(body))
    answer["choices"][0]["finish_reason"] = finish
    judged.serve(always(Raw(json.dumps(answer))))
    run, result = judged_run(judged.load())
    assert run.terminal_reason == "success" and run.valid and not result.passed
    assert result.error is not None and said in result.error, result.error
    assert result.evidence["stop_reason"] == finish


# --- an MCP program's session has only the task's tools -----------------------------------------

CONFUSED = """
async def confused(session):
    made_up = [
        await session.call("finish", {"final_reply": "All done."}),
        await session.call("give_up", {"reason": "stuck"}),
        await session.call("report_usage", {"input_tokens": 10**6}),
    ]
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return " ".join(result.error_class or "ran" for result in made_up)
"""


def test_a_call_of_the_bridges_own_tools_is_an_unknown_tool_over_mcp(
    edited_bank: Any, tmp_path: Path
) -> None:
    """``groundstate.mcp_client`` leaves the bridge's tools out of the session's tools, but
    sent a call of one by name (a model's made-up ``finish``, say) to the server, whose
    bridge took it: the attempt ended with that reply (or gave up, or was charged a million
    tokens), where the same agent in-process gets ``unknown_tool`` and goes on."""
    bank = edited_bank(lambda task: task.update(time_limit=30))
    (tmp_path / "agents.py").write_text(CONFUSED)
    command = ["{python}", "-m", "groundstate.mcp_client", "agents.py:confused"]
    system = load_system(system_file(tmp_path, command, sandbox="none"))
    run = attempt(bank, "transfer", load_agent(system), system=system).run
    assert run.terminal_reason == "success", run.infrastructure_status
    assert run.final_message == "unknown_tool unknown_tool unknown_tool"
    assert run.usage.input_tokens == 0


# --- a user model's answer a content filter stopped ---------------------------------------------


def test_a_user_models_answer_stopped_by_a_content_filter_is_the_instruments_failure(
    bank: Suite,
) -> None:
    """What a content filter left of the user model's answer ("My PIN is") reached the agent
    as what the user said, so the instrument's failure was held against the agent (it could
    not check the PIN, and failed the task). It is now a malformed answer: asked again, then
    ``environment_failure/user_simulator``, never the agent's."""
    body = json.loads(completion({"content": "My PIN is"}))
    body["choices"][0]["finish_reason"] = "content_filter"
    with OpenAICompatibleServer([Raw(json.dumps(body))] * 2) as server:
        system = bank_agent_system(_retries(server, tries=2))
        run = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system).run
    assert len(server.requests) == 2  # asked again, as any malformed answer
    assert run.terminal_reason == "environment_failure/user_simulator", run.infrastructure_status
    message = str(run.infrastructure_status["exception"]["message"])
    assert "a content filter stopped its answer ('My PIN is') (2 tries)" in message


def test_a_judges_usage_counts_every_answer_it_was_asked_for(
    judged: Judged,  # noqa: F811
) -> None:
    """A judge asked again after a malformed answer reported only the last answer's usage:
    the tokens of the answers asked again were spent all the same, and left out."""
    answers = [Reply(text="No verdict here."), Reply(text="Fine.\nVERDICT: PASS")]
    judged.serve(answers)
    _, result = judged_run(judged.load(judged.judge({"model.retries": {"max_retries": 1}})))
    assert result.passed and result.evidence["tries"] == 2, result
    usage = result.evidence["usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (200, 40)
