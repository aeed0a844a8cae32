"""Model adapters, MCP agents, users, judges and ``regrade`` against misbehaving peers (fifteenth
audit).

The rule each test checks: a failure is classified by whose it is (the agent's, or the
instrument's), the same way however the agent is run and whichever way it is graded.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
import yaml
from click.testing import CliRunner

from groundstate.agents.mcp_command import _Bridge
from groundstate.agents.python import load_agent
from groundstate.cli import main
from groundstate.diagnosis import regrade
from groundstate.grading.constraints._text import MAX_READ_CHARS
from groundstate.runner import BatchConfig, plan_batch
from groundstate.spec.suite import Suite
from groundstate.spec.system import BudgetsSection, load_system
from groundstate.store import RunStore
from groundstate.testing import (
    Fail,
    FunctionAgent,
    OpenAICompatibleServer,
    Reply,
    ToolCall,
    attempt,
    by_turn,
    scripted_system,
)
from groundstate.testing_models import Answer
from groundstate.trace import MessageEvent, ToolCallEvent

from .test_mcp_agents import system_file
from .test_model_users import bank_agent_system, model_user, polite_transfer

# --- a model adapter run over MCP fails as it does in-process ----------------------------------

MODEL_AGENT = """
import os
from groundstate.agents.openai_chat import OpenAIChatAgent
from groundstate.spec.system import BudgetsSection, load_system

def model_agent():
    return OpenAIChatAgent.from_system(load_system(os.environ["MODEL_SYSTEM"]))
"""


def _model_system(folder: Path, base_url: str, max_backoff: float = 0.05) -> Path:
    """An ``openai-chat`` system on the loopback server at *base_url*, retrying once."""
    model = {
        "revision": "m-1",
        "provider": "openai",
        "base_url": base_url,
        "retries": {"max_retries": 1, "backoff": 0.01, "max_backoff": max_backoff},
    }
    data = {
        "name": "model",
        "model": model,
        "harness": {"orchestration_loop": {"entry": "openai-chat"}},
    }
    path = folder / "model.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        (Fail(503, "overloaded"), "environment_failure/model_serving"),
        (Fail(401, "bad key"), "environment_failure/model_serving"),
        (Fail(400, "unknown parameter"), "harness_compatibility_failure"),
    ],
    ids=["5xx", "credentials", "rejected"],
)
def test_a_model_api_failure_over_mcp_ends_as_it_does_in_process(
    edited_bank: Any, tmp_path: Path, failure: Fail, reason: str
) -> None:
    """A model adapter run as an external program by ``groundstate.mcp_client`` whose API
    failed past its retries made the program exit 1: ``agent_failure/crashed``, counted
    against the system, where the same agent in-process is an invalid
    ``environment_failure/model_serving`` attempt (or, for a rejected request, a
    ``harness_compatibility_failure``). Now the program reports the failure through
    ``give_up``'s ``failure``, and the terminal reason and its evidence are the same."""
    bank: Suite = edited_bank(lambda task: task.update(time_limit=60))
    (tmp_path / "agents.py").write_text(MODEL_AGENT)
    with OpenAICompatibleServer([failure] * 4) as server:
        model = _model_system(tmp_path, server.base_url)
        inside = load_system(model)
        command = ["{python}", "-m", "groundstate.mcp_client", "agents.py:model_agent"]
        params = {"sandbox": "none", "network": "host", "env": {"MODEL_SYSTEM": str(model)}}
        outside = load_system(system_file(tmp_path, command, **params))
        runs = [
            attempt(bank, "transfer", load_agent(system), system=system).run
            for system in (inside, outside)
        ]
    assert [run.terminal_reason for run in runs] == [reason, reason], runs[1].infrastructure_status
    evidence = [dict(run.infrastructure_status.get("model_serving", {})) for run in runs]
    for found in evidence:
        found.pop("request_id", None)  # the server numbers its requests
    assert evidence[0] == evidence[1]
    assert "openai-chat" in runs[1].infrastructure_status["exception"]["message"]


@pytest.mark.parametrize(
    "args",
    [
        {"reason": "x", "failure": "grader"},
        {"reason": "x", "failure": "model_serving", "evidence": [1]},
        {"reason": None, "failure": "environment"},
    ],
    ids=["unknown-failure", "evidence-not-an-object", "reason-not-a-string"],
)
def test_a_give_up_naming_no_known_failure_is_refused_and_nothing_ends(
    args: dict[str, Any],
) -> None:
    """A ``failure`` the bridge does not know is the program's malformed call: an MCP error
    ``invalid_arguments`` it can read, the attempt neither stopped nor given up."""
    gave_up: list[str] = []
    bridge = _Bridge(SimpleNamespace(give_up=gave_up.append))

    async def call() -> Any:
        return await bridge.call_tool(None, SimpleNamespace(name="give_up", arguments=args))

    result = anyio.run(call)
    assert result.is_error and result.content[0].text.startswith("invalid_arguments: give_up")
    assert (bridge.stop, bridge.finished, gave_up) == (None, False, [])


# --- regrade replays a malformed call as it was made ---------------------------------------------


async def _fumbles(session: Any) -> str:
    """Checks the PIN, then writes its transfer's arguments wrongly until the step limit."""
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    for args in ['{"source": "A", "target": "B", "amount": 30', ["A", "B", 30]] * 3:
        await session.call("transfer", args)
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Done."


def test_regrade_replays_calls_whose_arguments_are_not_an_object(bank: Suite) -> None:
    """``regrade`` replayed only the calls whose recorded arguments were an object: the
    malformed ones (a model's broken JSON, a list), each refused and counted as a step in the
    run, were dropped, so an attempt stopped at its step limit replayed as a success: the
    suite's own grader "disagreed" with itself. Now each is made again as recorded, refused
    again, and the verdict is the run's."""
    run = attempt(bank, "transfer", FunctionAgent(_fumbles)).run
    assert run.terminal_reason == "agent_failure/step_limit"
    (again,) = regrade([run], bank)
    assert again.terminal_reason == run.terminal_reason
    calls = [
        (e.tool, e.args, e.error_class)
        for e in again.observation_action_log
        if isinstance(e, ToolCallEvent)
    ]
    recorded = [
        (e.tool, e.args, e.error_class)
        for e in run.observation_action_log
        if isinstance(e, ToolCallEvent)
    ]
    assert calls == recorded


# --- a user model is shown as much of a message as every other reader ----------------------------


def _small_context(request: dict[str, Any]) -> Answer:
    """A user model whose context holds 150,000 characters: more is refused with a 400."""
    if len(json.dumps(request["messages"])) > 150_000:
        return Fail(400, "This model's maximum context length is 40000 tokens")
    said = request["messages"][-1]["content"]
    return Reply(text="It's 1234." if "PIN" in said else "Thanks. ###STOP###")


async def _floods_then_transfers(session: Any) -> str:
    await session.say("Hello! " + "blah " * 200_000 + "What is your PIN?")
    return await polite_transfer(session)


def test_an_oversized_message_to_a_user_model_is_not_an_invalid_attempt(edited_bank: Any) -> None:
    """The model user sent the agent's whole message to its model: a megabyte the model
    refused (HTTP 400, its context length) made the attempt an invalid
    ``environment_failure/user_simulator``, rerun, at the agent's choosing. Now it is shown
    the start and end of a message over ``MAX_READ_CHARS`` with a note of what was left out,
    as the scripted user and the model judge read it; the attempt is graded (the trace keeps
    the whole message)."""
    bank: Suite = edited_bank(lambda task: task.update(time_limit=60))  # a loaded machine
    with OpenAICompatibleServer(_small_context) as server:
        system = bank_agent_system(model_user(server))
        out = attempt(bank, "transfer", FunctionAgent(_floods_then_transfers), system=system)
    run = out.run
    assert run.terminal_reason == "success", run.infrastructure_status
    shown = server.requests[0]["messages"][-1]["content"]
    assert len(shown) < MAX_READ_CHARS + 100
    assert shown.startswith("Hello! ") and shown.endswith("What is your PIN?")
    assert "characters left out" in shown
    (sent, *_) = [e for e in run.observation_action_log if isinstance(e, MessageEvent)][1:]
    assert len(sent.text or "") > 1_000_000


def test_a_rate_limit_waited_out_over_mcp_is_not_the_agents_time_limit(
    edited_bank: Any, tmp_path: Path
) -> None:
    """The adapter does not wait for a retry that would start past the attempt's time limit
    (``session.remaining``): the failure stands, ``environment_failure/model_serving``. Over
    MCP the session had no ``remaining``: the program waited out a long ``retry-after``, was
    killed at the limit, and the attempt was the agent's ``time_limit``. Now
    ``groundstate.mcp_client`` reads the attempt's deadline from ``$GROUNDSTATE_DEADLINE``."""
    bank: Suite = edited_bank(lambda task: task.update(time_limit=60))
    (tmp_path / "agents.py").write_text(MODEL_AGENT)
    limited = Fail(429, "slow down", headers={"retry-after": "120"})
    with OpenAICompatibleServer([limited] * 4) as server:
        model = _model_system(tmp_path, server.base_url, max_backoff=120)
        command = ["{python}", "-m", "groundstate.mcp_client", "agents.py:model_agent"]
        params = {"sandbox": "none", "network": "host", "env": {"MODEL_SYSTEM": str(model)}}
        outside = load_system(system_file(tmp_path, command, **params))
        run = attempt(bank, "transfer", load_agent(outside), system=outside).run
    assert run.terminal_reason == "environment_failure/model_serving", run.infrastructure_status
    assert run.infrastructure_status["model_serving"]["status_code"] == 429
    assert len(server.requests) == 1  # not tried again: the wait would pass the limit


async def _reads_then_transfers(session: Any) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("balance", {"account": "A"})
    await session.call("balance", {"account": "B"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Done."


def test_regrade_replays_under_the_batchs_step_limit(bank: Suite) -> None:
    """A system's ``budgets.step_limit`` tighter than the task's stopped the attempt; the
    replay ran under the default scripted system, with the task's limit only, and the
    suite's own grader gave the replay another verdict. Now ``regrade`` takes the system the
    batch ran (the CLI reads it from the store) and replays under its step limit."""
    budgets = BudgetsSection(step_limit=4)
    system = scripted_system().model_copy(update={"budgets": budgets})
    run = attempt(bank, "transfer", FunctionAgent(_reads_then_transfers), system=system).run
    assert run.terminal_reason == "agent_failure/step_limit"
    (again,) = regrade([run], bank, system)
    assert again.terminal_reason == run.terminal_reason
    (default,) = regrade([run], bank)  # without the system: the task's limit alone
    assert default.terminal_reason != run.terminal_reason


def test_the_agreement_command_regrades_under_the_stored_batchs_step_limit(
    bank: Suite, tmp_path: Path
) -> None:
    """``groundstate agreement BATCH --regrade SUITE`` reads the batch's system from the
    store: a batch stopped by its system's step limit agrees with its own suite's grader."""
    system = scripted_system().model_copy(update={"budgets": BudgetsSection(step_limit=4)})
    batch = plan_batch(bank, system, BatchConfig(attempts=1, tasks=("transfer",)))
    run = attempt(bank, "transfer", FunctionAgent(_reads_then_transfers), system=system).run
    store = tmp_path / "runs.db"
    with RunStore(store) as runs:
        runs.add_batch(batch)
        runs.add_run(run.model_copy(update={"batch_id": batch.batch_id, "attempt": 1}), {})
    argv = ["agreement", batch.batch_id, "--regrade", str(bank.root), "--on", "terminal_reason"]
    result = CliRunner().invoke(main, [*argv, "--json", "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["disagreements"] == []


async def _transfers_then_gives_up(session: Any) -> str:
    session.record_usage(input_tokens=400, output_tokens=100, cost=0.2)
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    session.record_usage(input_tokens=400, output_tokens=100, cost=0.2)
    session.give_up("not sure it went through")
    return "unreachable"


async def _transfers_over_budget(session: Any) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    session.record_usage(input_tokens=400, output_tokens=100, cost=0.7)
    return "Done."


@pytest.mark.parametrize(
    ("agent", "reason"),
    [
        (_transfers_then_gives_up, "agent_failure/gave_up"),
        (_transfers_over_budget, "agent_failure/budget"),
    ],
    ids=["gave-up", "budget"],
)
def test_regrade_reproduces_a_stop_a_script_can_make(bank: Suite, agent: Any, reason: str) -> None:
    """An agent that did the work, then gave up (or went over its cost budget), fails as
    ``gave_up`` (``budget``); its replay did the work and ended with no reply: a success.
    The unchanged grader "disagreed" on the verdict itself. Now the replay reports the run's
    usage under the batch's budgets and gives up with the run's reason, as the run did."""
    system = scripted_system().model_copy(update={"budgets": BudgetsSection(max_cost=0.5)})
    run = attempt(bank, "transfer", FunctionAgent(agent), system=system).run
    assert run.terminal_reason == reason
    (again,) = regrade([run], bank, system)
    assert (again.terminal_reason, again.success) == (reason, False)
    assert (again.usage, again.cost) == (run.usage, run.cost)


def test_the_listed_give_up_offers_a_model_no_way_to_call_its_failure_invalid() -> None:
    """``failure`` is for the program's code: a program that shows its model the tools it is
    served (any generic MCP client does) must not offer the model a way to make its own
    failure an invalid attempt, so the listed schema names ``reason`` only."""
    bridge = _Bridge(SimpleNamespace(tools=[]))
    listed = anyio.run(bridge.list_tools, None, None)
    (give_up,) = [tool for tool in listed.tools if tool.name == "give_up"]
    assert set(give_up.input_schema["properties"]) == {"reason"}
    assert "failure" not in give_up.description


@pytest.mark.parametrize("raw", ['{"account": "A", "pin": ', '["A", "1234"]'], ids=["cut", "list"])
def test_a_models_malformed_arguments_over_mcp_are_refused_as_in_process(
    edited_bank: Any, tmp_path: Path, raw: str
) -> None:
    """A model adapter run by ``groundstate.mcp_client`` whose model wrote arguments that are
    not an object (broken JSON, a list) handed them to MCP's client, which refuses anything
    but an object before sending: the program crashed, ``agent_failure/crashed``, where
    in-process the call is refused (``invalid_arguments``, recorded, a step) and the model
    goes on. Now such arguments travel wrapped and the server unwraps them: the same trace
    and the same verdict either way."""
    bank: Suite = edited_bank(lambda task: task.update(time_limit=60))
    (tmp_path / "agents.py").write_text(MODEL_AGENT)
    answers = [Reply(tool_calls=[ToolCall("check_pin", raw=raw)]), Reply(text="Sorry.")]
    with OpenAICompatibleServer(by_turn(answers)) as server:
        model = _model_system(tmp_path, server.base_url)
        command = ["{python}", "-m", "groundstate.mcp_client", "agents.py:model_agent"]
        params = {"sandbox": "none", "network": "host", "env": {"MODEL_SYSTEM": str(model)}}
        systems = [load_system(model), load_system(system_file(tmp_path, command, **params))]
        runs = [attempt(bank, "transfer", load_agent(s), system=s).run for s in systems]
    made = []
    for run in runs:
        assert run.terminal_reason == "agent_failure/incorrect_state", run.infrastructure_status
        calls = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
        made.append([(e.tool, e.args, e.error_class) for e in calls])
    assert made[0] == made[1] == [("check_pin", made[0][0][1], "invalid_arguments")]
    assert json.dumps(made[0][0][1]) in (json.dumps(raw), raw)  # the text, or the list
