"""Eighteenth round: usage the harness does not know, and tool calls without an id.

A provider answer with no usage, an empty one or one counting 0 prompt tokens (no request has
none) was charged as 0 tokens on both adapters: a token or cost budget could never stop a
system talking to such a server, and the record claimed 0 tokens and a cost of 0 as if known.
Now such a call's usage is not known (``None`` in the trace); the attempt's record says its
tokens and cost are not known (``None``, left out of the report's cost figures), and a
declared token or cost budget, which can no longer be checked, stops the attempt as a
``harness_compatibility_failure`` (a batch's smoke run then aborts it before any attempt).
The same holds for a program's ``report_usage`` over MCP (``unknown_calls``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from groundstate.agents.python import load_agent
from groundstate.episode import odd_usage
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite
from groundstate.spec.system import SystemSpec, load_system
from groundstate.testing import OpenAICompatibleServer, Raw, Reply, attempt
from groundstate.trace import ModelCallEvent, ToolCallEvent

from .model_harness import PROVIDERS, Harness, _harness
from .test_models_round15 import MODEL_AGENT, _model_system
from .test_models_round17 import LOOKUP, TWO_CALLS, _message, _oracle, _raw, _render

UNCHECKED = "harness_compatibility_failure"


def _usage_body(provider: str, usage: Any, reply: Reply = LOOKUP) -> Raw:
    body = _render(provider, reply)
    if usage == "drop":
        body.pop("usage", None)
    else:
        body["usage"] = usage(provider) if callable(usage) else usage
    return _raw(body)


def _zeros(provider: str) -> dict[str, int]:
    if provider == "openai":
        return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    return {"input_tokens": 0, "output_tokens": 0}


UNKNOWN = {"missing": None, "left_out": "drop", "empty": {}, "zero_prompt": _zeros}


def _run(harness: Harness, script: list[Any], **budgets: Any) -> AgentRun:
    """One attempt of the provider's example system with its budgets replaced by *budgets*
    (its example cost budget dropped when *budgets* is empty)."""
    with harness.provider.server(script) as server:
        system = harness.system(server)
        data = system.model_dump(mode="json")
        data["budgets"] |= {"max_cost": None, "max_tokens": None} | budgets
        changed = SystemSpec.model_validate(data)
        changed._base_dir = system.base_dir
        return attempt(harness.suite, "refund-socks", load_agent(changed), system=changed).run


def _calls(run: AgentRun) -> list[ModelCallEvent]:
    return [e for e in run.observation_action_log if isinstance(e, ModelCallEvent)]


@pytest.mark.parametrize("usage", list(UNKNOWN))
@pytest.mark.parametrize("provider", [p.name for p in PROVIDERS])
def test_usage_not_reported_is_recorded_as_not_known(
    provider: str, usage: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """No budget declared: the attempt goes on, graded as any other, and its record says its
    tokens and cost are not known, rather than 0 (and never the sum of the calls that did
    report usage, as if that were the attempt's)."""
    (chosen,) = [p for p in PROVIDERS if p.name == provider]
    harness = _harness(chosen, monkeypatch, retail)
    run = _run(harness, [_usage_body(provider, UNKNOWN[usage]), *_oracle(retail)])
    assert run.terminal_reason == "success", run.infrastructure_status
    assert (run.usage.input_tokens, run.usage.output_tokens, run.cost) == (None, None, None)
    first, *rest = [c for c in _calls(run) if c.error is None]
    assert (first.usage.input_tokens, first.usage.output_tokens, first.usage.cost) == (
        None,
        None,
        None,
    )
    assert rest and all(c.usage.input_tokens == 100 and c.usage.cost for c in rest)
    # the record reads back as written
    assert AgentRun.model_validate_json(run.model_dump_json()).usage == run.usage


@pytest.mark.parametrize(
    "budget", [{"max_cost": 5.0}, {"max_tokens": 10**6}], ids=["cost", "tokens"]
)
@pytest.mark.parametrize("provider", [p.name for p in PROVIDERS])
def test_a_budget_that_cannot_be_checked_stops_the_attempt(
    provider: str, budget: dict[str, Any], monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """A declared budget silently did not apply to a server that counts no tokens: the agent
    could spend without limit. Now the attempt stops at the first such answer, saying which
    budget cannot be checked (a batch's smoke run aborts on it)."""
    (chosen,) = [p for p in PROVIDERS if p.name == provider]
    harness = _harness(chosen, monkeypatch, retail)
    run = _run(harness, [_usage_body(provider, None), *_oracle(retail)], **budget)
    assert run.terminal_reason == UNCHECKED, run.infrastructure_status
    message = run.infrastructure_status["exception"]["message"]
    (name,) = budget
    assert f"budgets.{name}" in message and "not known" in message
    assert run.infrastructure_status["stop"]["stage"] == "usage"
    assert not [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    assert run.cost is None and run.usage.input_tokens is None


@pytest.mark.parametrize("provider", [p.name for p in PROVIDERS])
def test_a_well_behaved_provider_is_counted_as_before(
    provider: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    (chosen,) = [p for p in PROVIDERS if p.name == provider]
    harness = _harness(chosen, monkeypatch, retail)
    run = _run(harness, _oracle(retail), max_tokens=10**6)
    assert run.terminal_reason == "success"
    answers = len(_calls(run))
    assert (run.usage.input_tokens, run.usage.output_tokens) == (100 * answers, 20 * answers)
    assert isinstance(run.cost, float) and run.cost > 0


def test_a_usage_report_of_none_is_no_protocol_break_but_odd_ones_still_are() -> None:
    assert odd_usage(None, None, None) is None
    assert odd_usage(-1, None, None) is not None
    assert odd_usage(None, None, float("nan")) is not None
    assert odd_usage(True, 0, 0.0) is not None


# --- the same over MCP ---------------------------------------------------------------------


def _outside(tmp_path: Path, model: Path, **budgets: Any) -> SystemSpec:
    command = ["{python}", "-m", "groundstate.mcp_client", "agents.py:model_agent"]
    params = {"sandbox": "none", "network": "host", "env": {"MODEL_SYSTEM": str(model)}}
    loop = {"entry": "mcp-command", "params": {"command": command, **params}}
    data = {"name": "external", "harness": {"orchestration_loop": loop}}
    if budgets:
        data["budgets"] = budgets
    path = tmp_path / "system.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_system(path)


@pytest.mark.parametrize("budget", [{}, {"max_tokens": 10**6}], ids=["none", "tokens"])
def test_a_program_reports_usage_not_known_over_mcp(
    edited_bank: Any, tmp_path: Path, budget: dict[str, Any]
) -> None:
    """The adapter run as a program reports its calls without usage (``unknown_calls``):
    recorded as not known, and a declared budget stops the attempt, as in-process. Read as 0
    before, such a program's usage never counted."""
    bank: Suite = edited_bank(lambda task: task.update(time_limit=60))
    (tmp_path / "agents.py").write_text(MODEL_AGENT)
    body = _render("openai", Reply(text="Done."))
    body.pop("usage")
    with OpenAICompatibleServer([_raw(body)]) as server:
        model = _model_system(tmp_path, server.base_url)
        system = _outside(tmp_path, model, **budget)
        run = attempt(bank, "transfer", load_agent(system), system=system).run
    assert run.cost is None and run.usage.input_tokens is None, run.infrastructure_status
    if budget:
        assert run.terminal_reason == UNCHECKED, run.infrastructure_status
        assert "budgets.max_tokens" in run.infrastructure_status["exception"]["message"]
    else:
        assert run.terminal_reason.startswith("agent_failure/"), run.infrastructure_status


@pytest.mark.parametrize("value", [-1, 1.5, "2", True])
def test_report_usage_refuses_an_odd_count_of_unknown_calls(value: Any) -> None:
    from groundstate.agents.mcp_command import _amount, _BadArguments

    with pytest.raises(_BadArguments, match="unknown_calls"):
        _amount({"unknown_calls": value}, "unknown_calls", whole=True)


# --- tool calls without an id ----------------------------------------------------------------


def _no_ids(value: Any) -> Any:
    def edit(body: dict[str, Any]) -> None:
        if "choices" in body:
            calls = _message(body)["tool_calls"]
        else:
            calls = [b for b in body["content"] if b["type"] == "tool_use"]
        for call in calls:
            if value == "drop":
                call.pop("id")
            else:
                call["id"] = value

    return edit


@pytest.mark.parametrize("value", ["", None, "drop"], ids=["empty", "null", "left_out"])
@pytest.mark.parametrize("provider", [p.name for p in PROVIDERS])
def test_tool_calls_without_an_id_are_given_distinct_ones(
    provider: str, value: Any, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """Two calls with no id: passed on as given (an empty id) the results named no call and
    could not be told apart, where a null id was a malformed answer, retried. Now every
    adapter gives each call an id of its own, in the trace and the history sent back, and
    runs both."""
    (chosen,) = [p for p in PROVIDERS if p.name == provider]
    harness = _harness(chosen, monkeypatch, retail)
    body = _render(provider, TWO_CALLS)
    _no_ids(value)(body)
    servers: list[Any] = []
    run = harness.run([_raw(body), *_oracle(retail)], server_out=servers)
    assert run.terminal_reason == "success", run.infrastructure_status
    assert not [c for c in _calls(run) if c.error is not None]
    first = _calls(run)[0].response
    assert first is not None
    assert [c.id for c in first.tool_calls] == ["call_1", "call_2"]
    second = json.dumps(servers[0].requests[1]["messages"])
    assert second.count('"call_1"') == 2 and second.count('"call_2"') == 2


# --- a batch against such a server ---------------------------------------------------------


@pytest.mark.parametrize("budgeted", [True, False], ids=["budget", "no_budget"])
def test_a_batch_against_a_server_without_usage(
    openai_harness: Harness, tmp_path: Path, budgeted: bool
) -> None:
    """With the example's cost budget the smoke run aborts the batch before anything is
    stored; without one the attempts are stored with tokens and cost not known, and read
    back so."""
    from groundstate.runner import BatchAborted, BatchConfig, run_batch
    from groundstate.store import RunStore

    body = _render("openai", Reply(text="Done."))
    body.pop("usage")
    with OpenAICompatibleServer(lambda request: _raw(body)) as server:
        system = openai_harness.system(server)
        if not budgeted:
            data = system.model_dump(mode="json")
            data["budgets"]["max_cost"] = None
            unbudgeted = SystemSpec.model_validate(data)
            unbudgeted._base_dir = system.base_dir
            system = unbudgeted
        config = BatchConfig(attempts=1, tasks=("refund-socks",))
        with RunStore(tmp_path / "runs.db") as store:
            if budgeted:
                with pytest.raises(BatchAborted, match=r"cannot be checked: budgets\.max_cost"):
                    run_batch(openai_harness.suite, system, config, store, validate=False)
                assert not store.batches()
                return
            result = run_batch(openai_harness.suite, system, config, store, validate=False)
            (run,) = result.final
            stored = store.run(run.run_id)
    assert run.terminal_reason == "agent_failure/incorrect_state"
    assert (stored.usage.input_tokens, stored.usage.output_tokens, stored.cost) == (
        None,
        None,
        None,
    )
