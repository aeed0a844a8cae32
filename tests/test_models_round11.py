"""Model adapters, users, judges and MCP programs against misbehaving peers (eleventh audit).

The rule each test checks: what a tool gives back reaches every agent protocol as it is, the
instrument's fault (a user model answering badly) is retried and then the instrument's, and
the harness's own start-up work is never the agent's time.
"""

from __future__ import annotations

import builtins
import json
import sys
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from groundstate import whole_request
from groundstate.agents.base import ToolResult
from groundstate.agents.mcp_command import _Bridge
from groundstate.agents.model_loop import render_result
from groundstate.agents.python import load_agent
from groundstate.errors import JudgeFailure, SpecError
from groundstate.grading import model_judge
from groundstate.mcp_client import McpSession
from groundstate.spec.suite import Suite
from groundstate.spec.system import UserModel, UserSimulatorSection, load_system
from groundstate.spec.task import JudgeModel
from groundstate.testing import FunctionAgent, OpenAICompatibleServer, Raw, Reply, attempt
from groundstate.users import make_user

from .model_harness import PROVIDERS, Provider, _harness
from .test_mcp_agents import system_file
from .test_model_users import bank_agent_system, polite_transfer
from .test_models_adversarial import completion
from .test_users_adversarial import model_user

# --- a tool's output keeps its type over every protocol ---------------------------------------

OUTPUTS = [
    '{"refunded": true}',
    "42",
    "null",
    "[1, 2]",
    '"quoted"',
    "plain",
    "",
    42,
    None,
    {"a": [1]},
]


class _Tools:
    """A session whose one tool gives back *output*."""

    def __init__(self, output: Any) -> None:
        self.output = output

    async def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        return ToolResult(ok=True, output=self.output)


class _Client:
    """An MCP client session that hands each call to groundstate's bridge in-process."""

    def __init__(self, bridge: _Bridge) -> None:
        self.bridge = bridge

    async def call_tool(self, name: str, args: dict[str, Any]) -> Any:
        return await self.bridge.call_tool(None, SimpleNamespace(name=name, arguments=args))


@pytest.mark.parametrize("output", OUTPUTS, ids=repr)
def test_a_tool_output_reaches_every_protocol_with_its_type(output: Any) -> None:
    """A string output holding JSON text (``'{"refunded": true}'``, ``"42"``) was sent to MCP
    programs as that text unquoted, so an MCP client (``groundstate.mcp_client``, the example
    agent) read it as an object or a number, while a model adapter got the string. Every
    protocol now sends the output's JSON: the program reads back what the tool gave."""
    assert json.loads(render_result(ToolResult(ok=True, output=output))) == output
    session = McpSession(_Client(_Bridge(_Tools(output))), "", [])  # type: ignore[arg-type]
    result = anyio.run(session.call, "lookup", {})
    assert result.ok and result.output == output and type(result.output) is type(output)


# --- a user model answering badly: retried, then the instrument's ------------------------------


def _retries(server: OpenAICompatibleServer, tries: int) -> Any:
    user = model_user(server)
    assert user.model is not None
    model = user.model.model_copy(update={"max_retries": tries - 1})
    return user.model_copy(update={"model": model})


MALFORMED = {
    "not-json": Raw("this is not json"),
    "no-choices": Raw(completion({"content": "x"}, choices=[])),
    "no-text": Raw(completion({"content": None})),
    "refusal": Raw(completion({"content": None, "refusal": "I can't play a customer."})),
    "blank": Reply(text="   "),
    "oversized": Reply(text="x" * (64 * 1024 + 1)),
}


@pytest.fixture
def small_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    from groundstate import whole_request

    monkeypatch.setattr(whole_request, "MAX_ANSWER_BYTES", 64 * 1024)


@pytest.mark.usefixtures("small_answers")
@pytest.mark.parametrize("kind", list(MALFORMED))
def test_every_malformed_user_model_answer_is_retried(bank: Suite, kind: str) -> None:
    """A malformed answer of the user model ended the attempt at once (an invalid attempt),
    while its server's 5xx answers were retried: an answer over ``MAX_ANSWER_BYTES`` (read
    outside the SDK's retries), a body that is no answer, an answer without text or a blank
    one. Each is now retried ``max_retries`` times, and a good answer then carries on."""
    script = [MALFORMED[kind], Reply(text="It's 1234."), Reply(text="bye ###STOP###")]
    with OpenAICompatibleServer(script) as server:
        system = bank_agent_system(_retries(server, tries=2))
        run = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system).run
    assert run.terminal_reason == "success", run.infrastructure_status
    assert len(server.requests) == 3


@pytest.mark.usefixtures("small_answers")
def test_a_user_model_malformed_past_its_retries_is_the_instruments_failure(bank: Suite) -> None:
    """When the tries run out the attempt is the user simulator's failure, naming the last
    answer's fault and the tries; the agent's verdict is not read from it."""
    script = [MALFORMED["not-json"], MALFORMED["oversized"], MALFORMED["blank"]]
    with OpenAICompatibleServer(script) as server:
        system = bank_agent_system(_retries(server, tries=3))
        run = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system).run
    assert run.terminal_reason == "environment_failure/user_simulator", run.infrastructure_status
    assert not run.valid
    message = str(run.infrastructure_status["exception"]["message"])
    assert "its answer is empty ('   '), without the stop token (3 tries)" in message
    assert len(server.requests) == 3


# --- the harness's start-up is not the agent's time --------------------------------------------


def test_the_user_models_sdk_is_not_imported_in_the_agents_time(
    bank: Suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model-driven user imported ``openai`` at its first reply, inside the attempt's time
    limit: a first import takes seconds on a loaded machine (three here), the agent's time.
    The SDK is imported, and the client built, when the user is built."""
    imported: list[str] = []
    running = threading.Event()
    real_import = builtins.__import__

    def watching(name: str, *args: Any, **kwargs: Any) -> Any:
        if running.is_set() and name.partition(".")[0] == "openai":
            imported.append(name)
        return real_import(name, *args, **kwargs)

    async def agent(session: Any) -> str:
        running.set()
        try:
            return await polite_transfer(session)
        finally:
            running.clear()

    monkeypatch.setattr(builtins, "__import__", watching)
    with OpenAICompatibleServer([Reply(text="It's 1234."), Reply(text="bye ###STOP###")]) as server:
        system = bank_agent_system(_retries(server, tries=1))
        run = attempt(bank, "transfer", FunctionAgent(agent), system=system).run
    assert run.terminal_reason == "success", run.infrastructure_status
    assert imported == []


@pytest.fixture
def warm_ups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the warm-up requests made from now on (as in a fresh process)."""
    monkeypatch.setattr(whole_request, "_WARMED", set())
    paths: list[str] = []
    answer = whole_request._Refusing.do_POST

    def counted(handler: Any) -> None:
        paths.append(handler.path)
        answer(handler)

    monkeypatch.setattr(whole_request._Refusing, "do_POST", counted)
    return paths


@pytest.mark.parametrize("provider", PROVIDERS, ids=lambda p: p.name)
def test_each_adapters_sdk_makes_its_first_request_before_the_clock(
    monkeypatch: pytest.MonkeyPatch, bank: Suite, warm_ups: list[str], provider: Provider
) -> None:
    """Each SDK imports its HTTP stack at its first request (about 60 modules: the connection
    pool, HTTP/1.1, the async backends), which an attempt's first model call made in the
    agent's time. Building the adapter makes that request once per process, to a loopback
    server; the attempt then makes none."""
    harness = _harness(provider, monkeypatch, bank)
    with provider.server([Reply(text="Done.")]) as server:
        system = harness.system(server)
        agent = load_agent(system)
        assert len(warm_ups) == 1 and warm_ups[0].endswith(("/chat/completions", "/messages"))
        load_agent(system)  # once per process
        run = attempt(bank, "transfer", agent, system=system).run
    assert run.final_message == "Done." and len(warm_ups) == 1
    assert len(server.requests) == 1  # the warm-up never reached the system's server


def test_a_model_user_makes_its_first_request_when_built(bank: Suite, warm_ups: list[str]) -> None:
    user = UserSimulatorSection(kind="model", model=UserModel(revision="u", base_url="http://x"))
    make_user(user, bank.tasks["transfer"], seed=1)
    make_user(user, bank.tasks["transfer"], seed=2)
    assert warm_ups == ["/chat/completions"]


@pytest.mark.parametrize(
    ("transport", "missing"),
    [("stdio", "mcp.server.lowlevel.server"), ("http", "uvicorn")],
)
def test_an_mcp_server_that_cannot_be_imported_is_refused_when_the_system_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transport: str, missing: str
) -> None:
    """``mcp-command`` imported the MCP SDK (and uvicorn) only inside each attempt: without
    them every attempt ended ``agent_failure/crashed``, a valid failure of the evaluator's
    making, and with them the first attempt spent its time importing. The server is imported
    when the system is built, and a missing one is a spec error naming the entry."""
    command = ["{python}", "-c", "pass"]
    path = system_file(tmp_path, command, sandbox="none", network="host", transport=transport)
    system = load_system(path)
    monkeypatch.setitem(sys.modules, missing, None)  # as if not installed
    with pytest.raises(SpecError, match=r"orchestration_loop\.entry.*groundstate\[mcp\]"):
        load_agent(system)


def test_a_judges_sdk_makes_its_first_request_outside_its_time_limit(
    warm_ups: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The judge's first request imported the SDK's HTTP stack inside the judge's time limit
    (a grader failure when a loaded machine took long enough). It is warmed up before."""
    limits: list[int] = []
    monkeypatch.setattr(model_judge, "time_limit", lambda model: limits.append(len(warm_ups)) or 60)
    with OpenAICompatibleServer([Reply(text="It names 30.\nVERDICT: PASS")]) as server:
        judge = JudgeModel(adapter="openai-chat", revision="judge-1", base_url=server.base_url)
        passed, _ = model_judge.ask(judge, "Is 30 named?")
    assert passed and limits == [1] and len(server.requests) == 1


@pytest.mark.parametrize(
    "malformed",
    [Reply(text="It names 30."), Reply(text=""), Reply(text="My verdict: FAIL\nVERDICT: PASS")],
    ids=["no-verdict", "no-text", "two-verdicts"],
)
def test_a_judges_malformed_answer_is_asked_again_under_its_retries(malformed: Reply) -> None:
    """A judge's answer without exactly one verdict was a grader failure at once (an invalid
    attempt) while its server's 5xx answers were retried. It is asked again within the same
    retries; past them it is still a grader failure, never a verdict."""
    judge = {"adapter": "openai-chat", "revision": "judge-1", "retries": {"max_retries": 1}}
    good = Reply(text="It names 30.\nVERDICT: PASS")
    with OpenAICompatibleServer([malformed, good]) as server:
        passed, evidence = model_judge.ask(JudgeModel(**judge, base_url=server.base_url), "30?")
    assert passed and evidence["tries"] == 2
    with OpenAICompatibleServer([malformed] * 3) as server:
        model = JudgeModel(**judge, base_url=server.base_url)
        with pytest.raises(JudgeFailure, match="the judge's answer is malformed"):
            model_judge.ask(model, "30?")
    assert len(server.requests) == 2


@pytest.mark.parametrize("content", [None, "", "  "])
def test_a_user_models_refusal_beside_blank_content_is_said(bank: Suite, content: Any) -> None:
    """A refusal sent with ``content: ""`` (not null) failed as "its answer is empty ('')",
    the refusal itself dropped from the evidence."""
    refused = completion({"content": content, "refusal": "I can't play a customer."})
    with OpenAICompatibleServer([Raw(refused)]) as server:
        system = bank_agent_system(_retries(server, tries=1))
        run = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system).run
    assert run.terminal_reason == "environment_failure/user_simulator"
    message = str(run.infrastructure_status["exception"]["message"])
    assert 'its answer has no text (it refused: "I can\'t play a customer.") (1 try)' in message
