"""Simulated users: the scripted user's matching, and a model-driven user against the loopback
OpenAI-compatible server (the real ``openai`` SDK, no network)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from groundstate.agents.base import Session
from groundstate.spec.suite import Suite
from groundstate.spec.system import (
    AgentEntry,
    HarnessSection,
    SystemSpec,
    UserModel,
    UserSimulatorSection,
)
from groundstate.spec.task import AgentTask, UserScenario
from groundstate.testing import Fail, FunctionAgent, OpenAICompatibleServer, Reply, attempt
from groundstate.users import UNSURE, ScriptedUser

FACTS = {"zip_code": "94107", "email_address": "ana@example.com", "pin": "1234"}


def scripted(**facts: str) -> ScriptedUser:
    return ScriptedUser(UserSimulatorSection(), UserScenario(knowledge=facts or FACTS))


@pytest.mark.parametrize(
    ("message", "reply"),
    [
        ("What's your PIN?", "My pin is 1234."),
        ("Which zip should I use?", "My zip code is 94107."),
        ("Could you share the email on the account", "My email address is ana@example.com."),
        ("Please tell me your zip code.", "My zip code is 94107."),  # the phrase itself
    ],
)
def test_a_question_naming_a_fact_by_a_distinctive_word_is_answered(
    message: str, reply: str
) -> None:
    assert scripted().reply(message) == reply


@pytest.mark.parametrize(
    "message",
    [
        "What's your opinion of our service?",  # "pin" inside a word
        "I have sent the code to your address.",  # generic words, and not a question
        "Your zip is on file.",  # names a fact but asks nothing
        "What is the name on the card?",  # only a generic word of a fact
    ],
)
def test_near_misses_reveal_nothing(message: str) -> None:
    user = scripted(zip_code="94107", pin="1234", account_name="Ana")
    assert user.reply(message) == UNSURE


def bank_agent_system(user: UserSimulatorSection) -> SystemSpec:
    loop = AgentEntry(entry="groundstate.agents.scripted:ScriptedAgent")
    return SystemSpec(harness=HarnessSection(orchestration_loop=loop), user_simulator=user)


async def polite_transfer(session: Session) -> str:
    reply = await session.say("Sure. What is your PIN?")
    pin = "".join(ch for ch in reply or "" if ch.isdigit())
    await session.call("check_pin", {"account": "A", "pin": pin})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    await session.say("Done: I moved 30 from A to B. Anything else?")
    return "Moved 30 from A to B."


def model_user(server: OpenAICompatibleServer, **extra: Any) -> UserSimulatorSection:
    model = UserModel(revision="user-sim-1", base_url=server.base_url, decoding={"temperature": 0})
    return UserSimulatorSection(kind="model", persona="a terse bank customer", model=model, **extra)


def test_a_model_user_completes_a_conversation(bank: Suite) -> None:
    answers = [Reply(text="It's 1234."), Reply(text="No, that's all, thanks. ###STOP###")]
    with OpenAICompatibleServer(answers) as server:
        system = bank_agent_system(model_user(server))
        out = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system, seed=7)
    assert out.run.terminal_reason == "success", out.run.infrastructure_status
    first, second = server.requests
    assert first["model"] == "user-sim-1" and first["seed"] == 7 and first["temperature"] == 0
    prompt = first["messages"][0]["content"]
    assert "a terse bank customer" in prompt and "pin: 1234" in prompt
    # The model plays the user: its opening is the request, the agent's messages are "user".
    opening = bank.tasks["transfer"].user_request
    assert first["messages"][1] == {"role": "assistant", "content": opening}
    assert first["messages"][2] == {"role": "user", "content": "Sure. What is your PIN?"}
    assert second["messages"][3] == {"role": "assistant", "content": "It's 1234."}
    said = [e.text for e in out.run.observation_action_log if e.kind == "message"]
    assert "No, that's all, thanks." in said and not any("###STOP###" in t for t in said)


def test_a_failing_user_model_makes_the_attempt_invalid(bank: Suite) -> None:
    with OpenAICompatibleServer([Fail(500, "overloaded")] * 3) as server:
        system = bank_agent_system(model_user(server))
        system = system.model_copy(
            update={
                "user_simulator": model_user(server).model_copy(
                    update={
                        "model": UserModel(revision="u", base_url=server.base_url, max_retries=0)
                    }
                )
            }
        )
        out = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system)
    assert out.run.terminal_reason == "environment_failure/user_simulator"
    assert "HTTP 500" in str(out.run.infrastructure_status)


def test_the_user_model_settings_are_part_of_the_system_hash() -> None:
    base = bank_agent_system(UserSimulatorSection())
    scripted_hash = base.system_spec_hash
    assert "model" not in base.model_dump(mode="json")["user_simulator"]  # old hashes hold
    one = UserSimulatorSection(kind="model", model=UserModel(revision="a"))
    two = UserSimulatorSection(kind="model", model=UserModel(revision="b"))
    hashes = {
        scripted_hash,
        bank_agent_system(one).system_spec_hash,
        bank_agent_system(two).system_spec_hash,
        bank_agent_system(one.model_copy(update={"seed": 3})).system_spec_hash,
    }
    assert len(hashes) == 4


def test_a_model_user_without_a_model_is_a_spec_error() -> None:
    with pytest.raises(ValidationError, match="kind: model needs `model`"):
        UserSimulatorSection(kind="model")


def test_the_scenario_instructions_go_to_the_user_model(bank: Suite) -> None:
    task: AgentTask = bank.tasks["transfer"]
    scenario = task.user.model_copy(update={"instructions": "You owe B money for lunch."})
    bank.tasks["transfer"] = task.model_copy(update={"user": scenario})
    answers = [Reply(text="1234"), Reply(text="bye ###STOP###")]
    try:
        with OpenAICompatibleServer(answers) as server:
            system = bank_agent_system(model_user(server))
            attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system)
    finally:
        bank.tasks["transfer"] = task
    assert "You owe B money for lunch." in server.requests[0]["messages"][0]["content"]
