"""Model adapters, the user simulator, ``regrade`` and MCP agents (sixteenth audit).

The rule each test checks: a failure is classified by whose it is (the agent's or the
instrument's), a regrade judges the conversation that was recorded, and an agent run over MCP
is recorded as the same agent in-process is.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.agents.python import load_agent
from groundstate.diagnosis import regrade
from groundstate.spec.suite import Suite
from groundstate.spec.system import load_system
from groundstate.testing import (
    Fail,
    FunctionAgent,
    OpenAICompatibleServer,
    Reply,
    ToolCall,
    attempt,
    scripted_system,
)
from groundstate.trace import MessageEvent, ModelCallEvent, ToolCallEvent

from .test_mcp_agents import system_file
from .test_model_users import bank_agent_system, model_user, polite_transfer
from .test_models_round15 import MODEL_AGENT, _model_system


def _user_lines(run: Any) -> list[str | None]:
    log = run.observation_action_log
    return [e.text for e in log if isinstance(e, MessageEvent) and e.role == "user"]


# --- a regrade judges the recorded conversation -------------------------------------------------


async def _asks_before_acting(session: Session) -> str:
    reply = await session.say("Anything else I should know first?")
    pin = "".join(ch for ch in reply or "" if ch.isdigit())
    await session.call("check_pin", {"account": "A", "pin": pin})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."


def test_a_regrade_replays_the_model_users_recorded_replies(bank: Suite) -> None:
    """``regrade`` replayed a model user's conversation with the scripted user's answers: to
    "Anything else I should know first?" the scripted user says goodbye and leaves, so the
    replayed transfer was never made and the regrade "disagreed" with a run its grader would
    pass. The user now answers with the replies the run recorded."""
    with OpenAICompatibleServer([Reply(text="My PIN is 1234.")]) as server:
        system = bank_agent_system(model_user(server))
        run = attempt(bank, "transfer", FunctionAgent(_asks_before_acting), system=system).run
    assert run.terminal_reason == "success", run.infrastructure_status
    (again,) = regrade([run], bank, system)
    assert again.terminal_reason == "success", again.infrastructure_status
    assert _user_lines(again) == _user_lines(run)


async def _goes_on_after_the_user_left(session: Session) -> str:
    await session.say("Hello! One moment please.")
    await session.say("Are you still there?")  # the user has left: None
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."


def test_a_regrade_replays_what_the_agent_did_after_the_user_left(edited_bank: Any) -> None:
    """A task that goes on when the user leaves (``on_user_stop: continue``): the replay of a
    recorded trajectory stopped at the user's leaving, as a solution's does, and left out
    what the agent did afterwards. It now replays the whole trajectory."""
    bank = edited_bank(lambda task: task.update(terminal_conditions={"on_user_stop": "continue"}))
    with OpenAICompatibleServer([Reply(text="Fine, bye. ###STOP###")]) as server:
        system = bank_agent_system(model_user(server))
        agent = FunctionAgent(_goes_on_after_the_user_left)
        run = attempt(bank, "transfer", agent, system=system).run
    assert run.terminal_reason == "success", run.infrastructure_status
    assert None in _user_lines(run)
    (again,) = regrade([run], bank, system)
    assert again.terminal_reason == "success", again.infrastructure_status
    assert _user_lines(again) == _user_lines(run)


# --- a user model's content filter: whose failure ----------------------------------------------

FILTERED = Fail(400, "The prompt triggered the content management policy.", code="content_filter")


def test_a_user_model_refusing_the_agents_message_is_no_invalid_attempt(bank: Suite) -> None:
    """A content filter's 400 on the user model's request made every such attempt invalid
    (``environment_failure/user_simulator``): an agent failing its task could have it rerun
    by writing what the filter refuses. The user model is now asked with the instrument's own
    text alone; answered, the agent's message tripped the filter: the user leaves, the state
    decides, and the refusal is kept in the evidence."""
    with OpenAICompatibleServer([FILTERED, Reply(text="Hi, I need help.")]) as server:
        system = bank_agent_system(model_user(server))
        run = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system).run
    assert run.valid and run.terminal_reason == "agent_failure/incorrect_state", (
        run.infrastructure_status
    )
    assert "content management policy" in run.infrastructure_status["user_left"]
    probe = server.requests[1]["messages"]
    assert [m["role"] for m in probe] == ["system", "assistant", "user"]
    assert "PIN" not in probe[-1]["content"]  # the agent's message is not in the probe
    assert _user_lines(run)[1] is None  # the user left


def test_a_user_model_refusing_its_own_prompt_is_the_instruments_failure(bank: Suite) -> None:
    """Refused again with the agent's messages left out, the filter trips on the instrument's
    own text: ``environment_failure/user_simulator``, invalid, whatever the agent said."""
    with OpenAICompatibleServer([FILTERED, FILTERED]) as server:
        system = bank_agent_system(model_user(server))
        run = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system).run
    assert run.terminal_reason == "environment_failure/user_simulator", run.infrastructure_status
    assert not run.valid
    message = str(run.infrastructure_status["exception"]["message"])
    assert "refuses the user's own prompt too" in message


def test_another_400_of_the_user_model_stays_the_instruments_failure(bank: Suite) -> None:
    with OpenAICompatibleServer([Fail(400, "unknown parameter")]) as server:
        system = bank_agent_system(model_user(server))
        run = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system).run
    assert run.terminal_reason == "environment_failure/user_simulator"
    assert len(server.requests) == 1


# --- an agent over MCP is recorded as in-process -----------------------------------------------

AGENTS = """
async def says_a_number(session):
    reply = await session.say(5)
    return f"the user said {reply!r}"

async def no_final_reply(session):
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    return None
"""


def _both_ways(bank: Suite, tmp_path: Path, name: str, fn: Any) -> list[Any]:
    """*fn* run in-process and, as ``agents.py:name``, over MCP by ``groundstate.mcp_client``."""
    (tmp_path / "agents.py").write_text(AGENTS)
    command = ["{python}", "-m", "groundstate.mcp_client", f"agents.py:{name}"]
    outside = load_system(system_file(tmp_path, command, sandbox="none"))
    inside = attempt(bank, "transfer", FunctionAgent(fn), system=scripted_system())
    over = attempt(bank, "transfer", load_agent(outside), system=outside)
    return [inside.run, over.run]


async def _says_a_number(session: Session) -> str:
    reply = await session.say(5)  # type: ignore[arg-type]
    return f"the user said {reply!r}"


async def _no_final_reply(session: Session) -> None:
    await session.call("check_pin", {"account": "A", "pin": "1234"})


def test_a_message_that_is_not_text_over_mcp_is_a_protocol_mismatch(
    edited_bank: Any, tmp_path: Path
) -> None:
    """``groundstate.mcp_client`` read the bridge's refusal of a message that is not a string
    as the user's leaving: the agent went on, told the user had left. In-process it is a
    protocol mismatch; over MCP it now is too."""
    bank = edited_bank(lambda task: task.update(time_limit=30))
    runs = _both_ways(bank, tmp_path, "says_a_number", _says_a_number)
    assert [r.terminal_reason for r in runs] == ["harness_compatibility_failure"] * 2, [
        r.infrastructure_status for r in runs
    ]
    assert runs[1].final_message is None


def test_no_final_reply_over_mcp_is_no_final_reply(edited_bank: Any, tmp_path: Path) -> None:
    """An agent returning ``None`` (no final reply) over ``groundstate.mcp_client`` finished
    with the reply ``""``: the record had a final reply, blank, the agent never gave. The
    program now exits without ``finish``, as the bridge documents for no final reply."""
    bank = edited_bank(lambda task: task.update(time_limit=30))
    runs = _both_ways(bank, tmp_path, "no_final_reply", _no_final_reply)
    assert [r.final_message for r in runs] == [None, None]
    assert [r.terminal_reason for r in runs] == ["agent_failure/incorrect_state"] * 2
    log = runs[1].observation_action_log
    assert not [e for e in log if isinstance(e, MessageEvent) and e.final]


def test_a_model_adapters_calls_over_mcp_are_in_the_trace(edited_bank: Any, tmp_path: Path) -> None:
    """A model adapter run over MCP reported its usage but not its model calls: the trace had
    none of them (no failed try, no request id), where in-process every try is a
    ``model_call`` event. They now go with ``report_usage``, before the calls they led to."""
    bank: Suite = edited_bank(lambda task: task.update(time_limit=60))
    (tmp_path / "agents.py").write_text(MODEL_AGENT)
    call = ToolCall("balance", {"account": "A"})
    script = [Fail(503, "overloaded"), Reply(tool_calls=[call]), Reply(text="Done.")]
    runs = []
    for over_mcp in (False, True):
        with OpenAICompatibleServer(script) as server:
            model = _model_system(tmp_path, server.base_url)
            if over_mcp:
                command = ["{python}", "-m", "groundstate.mcp_client", "agents.py:model_agent"]
                env = {"MODEL_SYSTEM": str(model)}
                params = {"sandbox": "none", "network": "host", "env": env}
                system = load_system(system_file(tmp_path, command, **params))
            else:
                system = load_system(model)
            runs.append(attempt(bank, "transfer", load_agent(system), system=system).run)
    shapes = []
    for run in runs:
        assert run.terminal_reason == "agent_failure/incorrect_state", run.infrastructure_status
        shapes.append(
            [
                (e.kind, e.try_number, e.error.status_code if e.error else None)
                if isinstance(e, ModelCallEvent)
                else (e.kind, getattr(e, "tool", None), None)
                for e in run.observation_action_log
                if isinstance(e, ModelCallEvent | ToolCallEvent)
            ]
        )
    assert (
        shapes[0]
        == shapes[1]
        == [
            ("model_call", 1, 503),
            ("model_call", 2, None),
            ("tool_call", "balance", None),
            ("model_call", 1, None),
        ]
    )
    assert runs[0].usage == runs[1].usage
    assert runs[1].usage.input_tokens == 200


@pytest.mark.parametrize(
    "calls", [[{"provider": "x"}], "not a list", [{"latency_ms": "slow"}]], ids=repr
)
def test_a_report_of_model_calls_that_are_not_is_refused_whole(calls: Any) -> None:
    """``report_usage``'s ``model_calls`` must be model calls: else nothing of the report is
    recorded (its usage included), as for a figure that is not one."""
    import anyio

    from groundstate.agents.mcp_command import _Bridge

    class _Session:
        recorded: list[Any] = []

        def record_usage(self, **usage: Any) -> None:
            self.recorded.append(usage)

        def record_model_call(self, call: Any) -> None:
            self.recorded.append(call)

    session = _Session()
    bridge = _Bridge(session)  # type: ignore[arg-type]

    async def report() -> Any:
        from types import SimpleNamespace

        args = {"input_tokens": 5, "model_calls": calls}
        return await bridge.call_tool(None, SimpleNamespace(name="report_usage", arguments=args))

    result = anyio.run(report)
    assert result.is_error and "model_calls" in result.content[0].text
    assert session.recorded == []


BAD_USAGE = """
async def reports_negative_usage(session):
    try:
        session.record_usage(input_tokens=-1000, output_tokens=0, cost=0.0)
    except Exception:
        pass  # caught: the stop stands all the same
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."
"""


async def _reports_negative_usage(session: Session) -> str:
    with contextlib.suppress(Exception):  # caught: the stop stands all the same
        session.record_usage(input_tokens=-1000, output_tokens=0, cost=0.0)
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."


def test_a_usage_report_breaking_the_protocol_over_mcp_ends_as_in_process(
    edited_bank: Any, tmp_path: Path
) -> None:
    """A negative usage report is a protocol mismatch in-process, latched however the agent
    handles it. Over MCP the bridge refused the report, ``groundstate.mcp_client`` dropped
    the refusal, and the agent went on to succeed with usage that never counted."""
    bank = edited_bank(lambda task: task.update(time_limit=30))
    (tmp_path / "agents.py").write_text(BAD_USAGE)
    command = ["{python}", "-m", "groundstate.mcp_client", "agents.py:reports_negative_usage"]
    outside = load_system(system_file(tmp_path, command, sandbox="none"))
    inside = attempt(bank, "transfer", FunctionAgent(_reports_negative_usage))
    over = attempt(bank, "transfer", load_agent(outside), system=outside)
    runs = [inside.run, over.run]
    assert [r.terminal_reason for r in runs] == ["harness_compatibility_failure"] * 2, [
        r.infrastructure_status for r in runs
    ]
    assert "input_tokens must be a non-negative int" in str(
        runs[1].infrastructure_status["exception"]["message"]
    )
