"""Simulated users under odd behaviour of their own or of the agent (second-round audit).

A model user that answers nothing, answers only whitespace, or ends with its stop token in
another case or spacing; a blank stop token; an agent that sends empty or huge messages, or
keeps talking to a user who never ends. What the simulator does wrong is an instrument
failure (invalid), never the agent's failure; what the agent does is its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from groundstate.agents.base import Session
from groundstate.cli import main
from groundstate.errors import SpecError
from groundstate.spec.suite import Suite
from groundstate.spec.system import UserModel, UserSimulatorSection
from groundstate.testing import FunctionAgent, OpenAICompatibleServer, Reply, attempt
from groundstate.users import UNSURE
from tests.conftest import EditTask
from tests.test_model_users import bank_agent_system, polite_transfer, scripted


def model_user(server: OpenAICompatibleServer, **extra: Any) -> UserSimulatorSection:
    model = UserModel(revision="u", base_url=server.base_url, max_retries=0)
    return UserSimulatorSection(kind="model", model=model, **extra)


def run_with(bank: Suite, answers: list[Reply], agent: Any = polite_transfer, **extra: Any) -> Any:
    with OpenAICompatibleServer(answers) as server:
        system = bank_agent_system(model_user(server, **extra))
        return attempt(bank, "transfer", FunctionAgent(agent), system=system, seed=3).run


def said(run: Any, role: str) -> list[str | None]:
    return [e.text for e in run.observation_action_log if e.kind == "message" and e.role == role]


@pytest.mark.parametrize("empty", ["", "   ", "\n\t "])
def test_an_empty_answer_from_the_user_model_is_an_instrument_failure(
    bank: Suite, empty: str
) -> None:
    """It used to reach the agent as ``None`` (or as blanks) with the user still there, and
    the attempt was graded as the agent's failure."""
    run = run_with(bank, [Reply(text=empty), Reply(text="bye ###STOP###")])
    assert run.terminal_reason == "environment_failure/user_simulator"
    assert "answer is empty" in str(run.infrastructure_status)


@pytest.mark.parametrize(
    "goodbye",
    ["bye ###stop###", "bye ### STOP ###", "bye ###Stop###\n", "###STOP### bye", "bye###STOP###"],
)
def test_the_stop_token_in_another_case_or_spacing_ends_the_conversation(
    bank: Suite, goodbye: str
) -> None:
    run = run_with(bank, [Reply(text="It's 1234."), Reply(text=goodbye)])
    assert run.terminal_reason == "success", run.infrastructure_status
    users = said(run, "user")
    assert users[-1] == "bye"  # the token never reaches the agent, in any spelling
    assert not any("stop" in (text or "").lower() for text in users)


def test_a_stop_token_alone_ends_the_conversation_and_says_nothing(bank: Suite) -> None:
    run = run_with(bank, [Reply(text=" ### stop ### ")])
    assert run.terminal_reason == "agent_failure/incorrect_state"  # the user left: graded
    assert said(run, "user")[-1] is None


@pytest.mark.parametrize(
    "near_miss", ["I'll stop by later. It's 1234.", "STOP! It's 1234.", "## STOP ## It's 1234."]
)
def test_words_like_the_stop_token_do_not_end_the_conversation(bank: Suite, near_miss: str) -> None:
    run = run_with(bank, [Reply(text=near_miss), Reply(text="bye ###STOP###")])
    assert run.terminal_reason == "success", run.infrastructure_status
    assert said(run, "user")[1] == near_miss


def test_a_custom_stop_token_is_matched_in_any_case(bank: Suite) -> None:
    answers = [Reply(text="It's 1234."), Reply(text="thanks [done]")]
    run = run_with(bank, answers, stop_token="[DONE]")
    assert run.terminal_reason == "success", run.infrastructure_status
    assert said(run, "user")[-1] == "thanks"


@pytest.mark.parametrize("blank", ["", " ", "\n"])
def test_a_blank_stop_token_is_refused_when_the_system_loads(blank: str) -> None:
    """A blank token is found in every answer: the user would leave at once."""
    with pytest.raises(ValidationError, match="stop_token"):
        UserSimulatorSection(kind="model", model=UserModel(revision="u"), stop_token=blank)


def test_a_user_who_never_ends_is_bounded_by_max_turns(bank: Suite) -> None:
    async def chatty(session: Session) -> str:
        for _ in range(50):
            if await session.say("Could you say that again?") is None:
                break
        return "done"

    run = run_with(bank, [Reply(text="Hmm.")] * 50, agent=chatty, max_turns=4)
    assert run.terminal_reason == "agent_failure/incorrect_state"  # graded once it left
    assert said(run, "agent").count("Could you say that again?") == 5
    assert said(run, "user")[-1] is None


def test_the_agent_sending_empty_or_huge_messages_is_its_own_business() -> None:
    """The scripted user answers both as it answers anything it cannot place, quickly."""
    user = scripted(zip_code="94107")
    assert user.reply("") == UNSURE
    assert user.reply("x" * 2_000_000) == UNSURE
    assert user.reply("zip " * 200_000 + "?") == "My zip code is 94107."


@pytest.mark.parametrize("name", ["", "_", " ", "-"])
def test_a_fact_without_a_name_to_ask_by_is_refused_at_load(
    edited_bank: EditTask, tmp_path: Path, name: str
) -> None:
    """It was found in every message: "Hello" got "My  is 1234." (told unasked)."""
    with pytest.raises(SpecError, match="has no letter or digit to be asked by"):
        edited_bank(lambda task: task["user"]["knowledge"].update({name: "1234"}))
    result = CliRunner().invoke(main, ["check", str(tmp_path / "bank")])
    assert result.exit_code == 2 and "knowledge" in result.output, result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("key", ["model", "messages", "stream", "tools", "extra_body"])
def test_decoding_keys_the_request_sets_itself_are_refused_at_load(key: str) -> None:
    """``model`` made every request a TypeError, ``stream`` an answer without choices: every
    attempt an invalid run, found only by running."""
    with pytest.raises(ValidationError, match=f"decoding: {key}: set by the user simulator"):
        UserModel(revision="u", decoding={key: True, "temperature": 0})
    assert UserModel(revision="u", decoding={"temperature": 0, "top_p": 1}).decoding
