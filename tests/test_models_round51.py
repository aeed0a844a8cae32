"""Fifty-first round: an alias's dated snapshot, a window outgrown in any wording, and whose
failure a user model's or a judge's outgrown window is.

Classes of defect fixed:

- an alias answered by its dated snapshot (``gpt-4o`` served as ``gpt-4o-2024-08-06``,
  ``claude-sonnet-4-5`` as ``claude-sonnet-4-5-20250929``, ``-latest`` as its date) was
  flagged as a model that ``differs``, as a router's fallback is: the flag cried wolf on
  every honest run. It is the model requested now, its date kept as ``snapshot``; another
  family (``gpt-4o-mini-2024-07-18`` for ``gpt-4o``) still differs;
- a request refused for the conversation's length in other words than round 50's (xAI's
  "maximum prompt length", vLLM's "maximum model length", llama.cpp's "context size",
  Cohere's "too many tokens", Bedrock's "too many input tokens", TGI's "`inputs` tokens +
  `max_new_tokens`", OpenAI's "reduce the length of the messages", a code in ``type``,
  ``string_above_max_length`` of a message) was a bare ``harness_compatibility_failure``.
  It is ``.../context_window`` now, while ``max_tokens`` too large (even beside the words
  "context length"), a tier's tokens per minute, a setting the API does not know and a tool
  description too long stay bare;
- a simulated user's model refusing the conversation for its length made the attempt
  invalid (``environment_failure/user_simulator``), at the agent's choosing: long messages
  fill any window. The model is asked again with the agent's messages left out: answered,
  the user leaves and the state decides; refused again, the instrument's own side outgrew
  it (invalid, as before);
- a judge's model refusing its prompt for its length said only "the judge's model failed":
  it says the prompt outgrew the judge's window, the instrument's failure (the attempt is
  shown within a bound), kept a grader failure.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite
from groundstate.testing import FunctionAgent, OpenAICompatibleServer, Reply, attempt
from groundstate.testing_models import Fail, Raw
from groundstate.trace import MessageEvent, ModelCallEvent

from .judged_bank import judged_run
from .model_harness import PROVIDERS, _harness
from .test_model_judges import Judged, always, judged  # noqa: F401 (the fixture)
from .test_model_users import bank_agent_system, model_user, polite_transfer
from .test_models_round17 import _oracle, _raw, _render

CONTEXT_WINDOW = "harness_compatibility_failure/context_window"
COMPATIBILITY = "harness_compatibility_failure"
USER_SIMULATOR = "environment_failure/user_simulator"


def _model_calls(run: AgentRun) -> list[ModelCallEvent]:
    return [e for e in run.observation_action_log if isinstance(e, ModelCallEvent)]


def _run(provider: str, monkeypatch: pytest.MonkeyPatch, retail: Suite, script: Any) -> AgentRun:
    (chosen,) = [p for p in PROVIDERS if p.name == provider]
    return _harness(chosen, monkeypatch, retail).run(script)


# --- an alias served by its dated snapshot --------------------------------------------------


def _served_as(provider: str, named: str, retail: Suite) -> list[Any]:
    """The oracle's answers, each naming *named* as the model that served it."""

    def renamed(reply: Any) -> Raw:
        body = _render(provider, reply)
        body["model"] = named
        return _raw(body)

    return [renamed(r) for r in _oracle(retail)]


def _asked(provider: str, monkeypatch: pytest.MonkeyPatch, retail: Suite) -> str:
    return _model_calls(_run(provider, monkeypatch, retail, _oracle(retail)))[0].model


@pytest.mark.parametrize("provider", [p.name for p in PROVIDERS])
@pytest.mark.parametrize(
    ("suffix", "date"),
    [("-2024-08-06", "2024-08-06"), ("-20250929", "2025-09-29"), ("@20250929", "2025-09-29")],
)
def test_a_dated_snapshot_of_the_alias_is_the_model_requested(
    provider: str, suffix: str, date: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """``differs`` flagged the alias's own snapshot as it flags a fallback: it is the model
    asked for now, and the record says which snapshot served it."""
    asked = _asked(provider, monkeypatch, retail)
    run = _run(provider, monkeypatch, retail, _served_as(provider, asked + suffix, retail))
    assert run.terminal_reason == "success", run.infrastructure_status
    (served,) = run.infrastructure_status["models_served"]
    assert served == {
        "requested": asked,
        "served": asked + suffix,
        "answers": len(_model_calls(run)),
        "differs": False,
        "snapshot": date,
    }


@pytest.mark.parametrize(
    "suffix", ["-mini-2024-07-18", "o-2024-08-06", "-5-20250929", "-2024-13-45", "-2024-0806"]
)
def test_another_family_or_no_date_still_differs(
    suffix: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    asked = _asked("openai", monkeypatch, retail)
    run = _run("openai", monkeypatch, retail, _served_as("openai", asked + suffix, retail))
    assert run.terminal_reason == "success", run.infrastructure_status
    (served,) = run.infrastructure_status["models_served"]
    assert served["differs"] is True and "snapshot" not in served


@pytest.mark.parametrize(
    ("alias", "named", "date"),
    [
        ("gpt-4o", "gpt-4o-2024-08-06", "2024-08-06"),
        ("claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "2025-09-29"),
        ("claude-sonnet-4-5", "claude-sonnet-4-5@20250929", "2025-09-29"),
        ("claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022", "2024-10-22"),
        ("gpt-4", "gpt-4-0613", "06-13"),
        ("o1", "o1-2024-12-17", "2024-12-17"),
        ("gpt-4o", "gpt-4o-2024-02-29", "2024-02-29"),  # a leap day
        ("gpt-4o", "gpt-4o", None),  # the same name: not a snapshot, not differing either
        ("gpt-4o", "gpt-4o-mini-2024-07-18", None),
        ("gpt-4", "gpt-4o-2024-08-06", None),
        ("claude-sonnet-4", "claude-sonnet-4-5-20250929", None),
        ("gpt-4o", "gpt-4o-2023-02-29", None),  # no such day
        ("gpt-4o", "gpt-4o-2024-08-06-preview", None),
        ("gpt-4o", "gpt-4o-202408-06", None),
        ("gpt-4", "gpt-4-1399", None),
        ("gpt-4o", "openai/gpt-4o-2024-08-06", None),
        ("", "-2024-08-06", None),
    ],
)
def test_what_is_a_snapshot_of_an_alias(alias: str, named: str, date: str | None) -> None:
    from groundstate.served import snapshot_date  # here: the old code, also run, has none

    assert snapshot_date(alias, named) == date


def test_a_snapshot_is_read_in_linear_time() -> None:
    from groundstate.served import snapshot_date

    started = time.perf_counter()
    assert snapshot_date("m", "m" + "-2024" * 40) is None
    assert snapshot_date("gpt-4o", "gpt-4o-" + "1" * 200) is None
    assert time.perf_counter() - started < 0.1


# --- a window outgrown, in any wording ------------------------------------------------------

OUTGROWN = [
    "This model's maximum prompt length is 131072 but the request contains 150000 tokens.",
    "The decoder prompt (length 5000) is longer than the maximum model length of 4096.",
    "Input prompt (5000 tokens) is too long and exceeds max_model_len 4096",
    "the request exceeds the available context size, try increasing it",
    "too many tokens: total number of tokens in the prompt cannot exceed 4081 - received 5000",
    "Too many input tokens. Max input tokens: 8192, request input token count: 9000",
    "Input is too long for requested model.",
    "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000"
    " `inputs` tokens and 500 `max_new_tokens`",
    "'max_tokens' or 'max_completion_tokens' is too large: 1000. This model's maximum context"
    " length is 4096 tokens and your request has 3500 input tokens (1000 > 4096 - 3500).",
    "This model's maximum context length is 4097 tokens, however you requested 5000 tokens"
    " (1000 in your prompt; 4000 for the completion). Please reduce your prompt.",
    "Your input exceeds the context window of this model. Please adjust your input.",
    "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768"
    " maximum context length",
    "PROMPT IS TOO LONG: 208310 TOKENS > 200000 MAXIMUM",
]

NOT_THE_WINDOW = [
    "max_tokens is too large: 100000. This model supports at most 16384 completion tokens,"
    " whereas you provided 100000.",
    "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for"
    " claude-sonnet-4-5-20250929",
    "max_tokens (200000) exceeds the model's context length (128000)",
    "too many tokens requested for the output: max_tokens must be at most 4096",
    "Request too large for model `llama3-70b` in organization `org_1` on tokens per minute"
    " (TPM): Limit 6000, Requested 7000, please reduce your message size and try again.",
    "Unsupported parameter: 'seed' is not supported with this model.",
    "Unrecognized request argument supplied: context_length",
    "Unsupported parameter: 'context_window' is not supported with this model.",
    "Extra inputs are not permitted: context_size",
    "Invalid 'messages[2].content': expected a string, got null.",
    "The model `gpt-9` does not exist or you do not have access to it.",
    "Invalid value for 'temperature': the input must be at most 2.",
]


@pytest.mark.parametrize("said", OUTGROWN)
def test_each_wording_of_a_window_outgrown_is_read_so(said: str) -> None:
    from groundstate.agents.model_loop import says_too_long

    assert says_too_long(said)


@pytest.mark.parametrize("said", NOT_THE_WINDOW)
def test_another_rejection_is_not_read_as_the_window(said: str) -> None:
    from groundstate.agents.model_loop import says_too_long

    assert not says_too_long(said)


def test_an_error_message_is_read_in_linear_time() -> None:
    from groundstate.agents.model_loop import says_too_long

    started = time.perf_counter()
    for said in ("input token count " * 10_000, "1 tokens > " * 10_000, "context " * 20_000):
        says_too_long(said)
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize("provider", [p.name for p in PROVIDERS])
@pytest.mark.parametrize("said", OUTGROWN[:7])
def test_a_window_outgrown_in_other_words_is_context_window(
    provider: str, said: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """Through the real SDKs: not retried, the attempt's reason names the window."""
    oracle = _oracle(retail)
    run = _run(provider, monkeypatch, retail, [oracle[0], Fail(400, said)])
    assert run.terminal_reason == CONTEXT_WINDOW, run.infrastructure_status
    (failed,) = [c for c in _model_calls(run) if c.error is not None]
    assert failed.error is not None and failed.error.kind == "context_window"


@pytest.mark.parametrize("said", NOT_THE_WINDOW[:5])
def test_a_rejection_that_is_not_the_window_stays_bare(
    said: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    run = _run("openai", monkeypatch, retail, [Fail(400, said)])
    assert run.terminal_reason == COMPATIBILITY, run.infrastructure_status
    (failed,) = [c for c in _model_calls(run) if c.error is not None]
    assert failed.error is not None and failed.error.kind == "rejected"


def _error(status: int, **error: Any) -> Raw:
    return Raw(json.dumps({"error": error}), status=status)


@pytest.mark.parametrize(
    "error",
    [
        {"message": "Request failed", "type": "exceed_context_size_error", "code": 400},
        {"message": "Request failed", "code": "context_window_exceeded"},
        {
            "message": "Invalid 'messages[41].content': string too long. Expected a string with"
            " maximum length 10485760, but got a string with length 12000000 instead.",
            "code": "string_above_max_length",
            "param": "messages[41].content",
        },
        {
            "message": "Invalid 'input[3].output': string too long.",
            "code": "string_above_max_length",
        },
    ],
    ids=["type", "code", "long_message", "long_input"],
)
def test_a_code_of_a_window_outgrown_is_context_window(
    error: dict[str, Any], monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    oracle = _oracle(retail)
    run = _run("openai", monkeypatch, retail, [oracle[0], _error(400, **error)])
    assert run.terminal_reason == CONTEXT_WINDOW, run.infrastructure_status


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (
            400,
            {
                "message": "Invalid 'tools[0].function.description': string too long.",
                "code": "string_above_max_length",
                "param": "tools[0].function.description",
            },
        ),
        (400, {"message": "Bad request", "code": ["context_length_exceeded"]}),
        (400, {"message": "Bad request", "code": {"context_length_exceeded": 1}}),
    ],
    ids=["tool_description", "code_a_list", "code_a_mapping"],
)
def test_a_code_that_is_not_the_window_stays_bare(
    status: int, error: dict[str, Any], monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """A tool's description too long is the system's setting; a code that is not a string
    names nothing (and crashes nothing). (A tier's tokens per minute, a 413 here before, is
    the account's since the fifty-second round: ``test_models_round52.py``.)"""
    run = _run("openai", monkeypatch, retail, [_error(status, **error)])
    assert run.terminal_reason == COMPATIBILITY, run.infrastructure_status


# --- a simulated user's model outgrowing its window -----------------------------------------

OUTGROWN_USER = Fail(
    400,
    "This model's maximum context length is 8192 tokens. However, your messages resulted in"
    " 9000 tokens.",
    code="context_length_exceeded",
)


def _user_lines(run: AgentRun) -> list[str | None]:
    log = run.observation_action_log
    return [e.text for e in log if isinstance(e, MessageEvent) and e.role == "user"]


def test_a_user_model_outgrown_by_the_agents_messages_is_no_invalid_attempt(
    bank: Suite,
) -> None:
    """The agent's long messages filled the user model's window: the attempt was invalid,
    rerun at the agent's choosing. Asked again with the agent's messages left out, the model
    answers: the user leaves, the state decides, the reason kept in the evidence."""
    with OpenAICompatibleServer([OUTGROWN_USER, Reply(text="Hi, I need help.")]) as server:
        system = bank_agent_system(model_user(server))
        run = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system).run
    assert run.valid and run.terminal_reason == "agent_failure/incorrect_state", (
        run.infrastructure_status
    )
    left = run.infrastructure_status["user_left"]
    assert "outgrew the user model's window" in left and "8192 tokens" in left
    probe = server.requests[1]["messages"]
    assert [m["role"] for m in probe] == ["system", "assistant", "user"]
    assert probe[-1]["content"] == "Hello."  # the agent's message left out
    assert _user_lines(run)[1] is None


async def _transfer_then_talk_long(session: Session) -> str:
    """An agent that acts, then talks at length: graded on its state when the user leaves."""
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    await session.say("Done. Let me explain our policies. " + "Policy text. " * 5000)
    await session.say("And more of them. " + "More policy. " * 5000)
    return "Moved 30 from A to B."


def test_the_probe_keeps_the_users_own_replies(bank: Suite) -> None:
    """Later in a conversation the probe keeps what the user said and replaces each agent
    message: the instrument's own side is what is asked again."""
    answers = [Reply(text="Please go on."), OUTGROWN_USER, Reply(text="Fine.")]
    with OpenAICompatibleServer(answers) as server:
        system = bank_agent_system(model_user(server))
        run = attempt(bank, "transfer", FunctionAgent(_transfer_then_talk_long), system=system).run
    assert run.valid and run.terminal_reason == "success", run.infrastructure_status
    probe = server.requests[2]["messages"]
    assert [m["content"] for m in probe[2:]] == ["Hello.", "Please go on.", "Hello."]
    assert _user_lines(run)[1:] == ["Please go on.", None]


def test_a_user_model_whose_own_side_outgrows_it_is_the_instruments_failure(
    bank: Suite,
) -> None:
    with OpenAICompatibleServer([OUTGROWN_USER, OUTGROWN_USER]) as server:
        system = bank_agent_system(model_user(server))
        run = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system).run
    assert run.terminal_reason == USER_SIMULATOR, run.infrastructure_status
    assert not run.valid
    message = str(run.infrastructure_status["exception"]["message"])
    assert "with the agent's messages left out too" in message


@pytest.mark.parametrize(
    "fault",
    [
        Fail(400, "max_tokens is too large: 100000. This model supports at most 16384"),
        Fail(400, "Request too large", code="context_length_exceeded"),
    ],
    ids=["max_tokens", "code"],
)
def test_only_the_window_is_asked_again(fault: Fail, bank: Suite) -> None:
    """Another 400 of the user model stays the instrument's failure, not asked again; the
    window's code alone is asked again as its words are."""
    with OpenAICompatibleServer([fault, Reply(text="Hi.")]) as server:
        system = bank_agent_system(model_user(server))
        run = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system).run
    outgrown = fault.code == "context_length_exceeded"
    assert len(server.requests) == (2 if outgrown else 1)
    assert run.valid is outgrown, run.infrastructure_status


# --- a judge's model outgrowing its window --------------------------------------------------


def test_a_judge_outgrown_says_the_window_and_whose(judged: Judged) -> None:  # noqa: F811
    judged.serve(always(Fail(400, "prompt is too long: 250000 tokens > 200000 maximum")))
    run, result = judged_run(judged.load(judged.judge()))
    assert result.error is not None and not result.passed
    assert "the judge's prompt outgrew its model's window (the instrument's" in result.error
    assert result.evidence["kind"] == "context_window" and result.evidence["tries"] == 1
    assert run.terminal_reason == "success"  # the agent's state decides its success


def test_a_judges_other_failure_is_worded_as_before(judged: Judged) -> None:  # noqa: F811
    judged.serve(always(Fail(400, "unknown parameter")))
    _, result = judged_run(judged.load(judged.judge()))
    assert result.error is not None
    assert "the judge's model failed after 1 tries" in result.error
