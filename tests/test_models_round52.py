"""Fifty-second round: a served name under a maker's prefix or a numbered revision, a request
too large for its route or the account's tier, a user model outgrown by the replies the agent
drew, and bodies that are no answer named as what they are.

Classes of defect fixed:

- a served name that is the model requested under another spelling was flagged as a model
  that ``differs``, as a router's fallback is: the maker's prefix the request lacked
  (``openai/gpt-4o-2024-08-06`` for ``gpt-4o``, OpenRouter's ``anthropic/claude-3.5-sonnet``
  for ``claude-3-5-sonnet``, or the request's prefix the answer left out), a numbered revision
  of the alias (``gemini-1.5-pro-002``), another case. The record says which spelling it was
  (``prefix``, ``revision``); another maker's or a host's prefix, another family, a number
  that is no revision still differ;
- a 413 for the request's bytes (Anthropic's ``request_too_large``, a proxy's "413 Request
  Entity Too Large" page, a plain "Payload Too Large") was a bare rejection: it is the
  conversation outgrowing the route, ``harness_compatibility_failure/context_window``, saying
  the request's size (the system's: its conversation, its route, its context policy), for the
  agent, a simulated user's model and a judge alike;
- a request larger than the account's tier takes in a minute (Groq's 413 "Request too large
  ... tokens per minute (TPM)", OpenAI's 429 "Request too large ... TPM") was a bare
  compatibility failure (the 413) or waited out as a rate limit (the 429): it is the
  account's (``environment_failure/model_serving``, not retried), while an ordinary rate
  limit in the same words ("Rate limit reached ... TPM ... try again in 2s") is retried;
- an error body that is no JSON was read as the SDK's "Error code: 413" (the ``openai`` SDK:
  a plain-text "maximum context length" refusal was then a bare rejection) or as a whole HTML
  page (the ``anthropic`` SDK); a 200 body that is no answer said the parser's "Expecting
  value: line 1 column 1". Each is named as what it is now: a page's title, an empty body, a
  stream of server-sent events (a route that only streams), JSON cut short, other text (a
  whole JSON answer under another content type is still the answer);
- an agent that coaxed a simulated user's model into long replies made the user's side
  outgrow its window: invalid (``environment_failure/user_simulator``), at the agent's
  choosing. The model is asked once more with the user's own replies left out too: answered,
  the user leaves and the state decides.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite
from groundstate.spec.system import UserModel, UserSimulatorSection
from groundstate.testing import FunctionAgent, OpenAICompatibleServer, Reply, attempt
from groundstate.testing_models import Fail, Raw
from groundstate.trace import MessageEvent, ModelCallEvent

from .judged_bank import judged_run
from .model_harness import PROVIDERS, Harness, _harness
from .test_model_judges import Judged, always, judged  # noqa: F401 (the fixture)
from .test_model_users import bank_agent_system, model_user, polite_transfer
from .test_models_round17 import _oracle, _render

CONTEXT_WINDOW = "harness_compatibility_failure/context_window"
MODEL_SERVING = "environment_failure/model_serving"
USER_SIMULATOR = "environment_failure/user_simulator"
API = {"openai": "openai-chat", "anthropic": "anthropic-messages"}


def _harness_of(provider: str, monkeypatch: pytest.MonkeyPatch, retail: Suite) -> Harness:
    (chosen,) = [p for p in PROVIDERS if p.name == provider]
    return _harness(chosen, monkeypatch, retail)


def _model_calls(run: AgentRun) -> list[ModelCallEvent]:
    return [e for e in run.observation_action_log if isinstance(e, ModelCallEvent)]


def _failed_calls(run: AgentRun) -> list[ModelCallEvent]:
    return [c for c in _model_calls(run) if c.error is not None]


def _message(run: AgentRun) -> str:
    return str(run.infrastructure_status["exception"]["message"])


# --- a served name under another spelling ---------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "asked", "named", "spelling"),
    [
        (
            "openai",
            "gpt-4o",
            "openai/gpt-4o-2024-08-06",
            {"snapshot": "2024-08-06", "prefix": "openai/"},
        ),
        ("openai", "gpt-4o", "openai/gpt-4o", {"prefix": "openai/"}),
        (
            "openai",
            "openai/gpt-4o",
            "gpt-4o-2024-08-06",
            {"snapshot": "2024-08-06", "prefix": "openai/"},
        ),
        ("openai", "gemini-1.5-pro", "gemini-1.5-pro-002", {"revision": "002"}),
        (
            "openai",
            "gemini-1.5-pro",
            "google/gemini-1.5-pro-002",
            {"revision": "002", "prefix": "google/"},
        ),
        ("anthropic", "claude-3-5-sonnet", "anthropic/claude-3.5-sonnet", {"prefix": "anthropic/"}),
        (
            "anthropic",
            "claude-3-5-sonnet-latest",
            "anthropic/claude-3.5-sonnet-20241022",
            {"snapshot": "2024-10-22", "prefix": "anthropic/"},
        ),
    ],
)
def test_the_model_requested_under_another_spelling_does_not_differ(
    provider: str,
    asked: str,
    named: str,
    spelling: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    retail: Suite,
) -> None:
    """Through the real SDKs: each answer names *named*; the record says it is the model
    asked for, and how it was spelled."""
    script = [dataclasses.replace(r, model=named) for r in _oracle(retail)]
    run = _harness_of(provider, monkeypatch, retail).run(script, revision=asked)
    assert run.terminal_reason == "success", run.infrastructure_status
    (served,) = run.infrastructure_status["models_served"]
    assert (
        served
        == {
            "requested": asked,
            "served": named,
            "answers": len(_model_calls(run)),
            "differs": False,
        }
        | spelling
    )


@pytest.mark.parametrize(
    "named",
    [
        "anthropic/gpt-4o",  # another maker's prefix
        "azure/gpt-4o-mini",  # another model behind a host's prefix (round 53: a host's
        # prefix over the model asked for is the route, not another model)
        "openai/gpt-4o-mini",  # another family under the right maker
        "openai/gpt-4o-mini-2024-07-18",
        "gpt-4o-405",  # a number that is no revision
        "gpt-4o-2",
        "gpt-4o-v2",
        "google/gpt-4o-002",
    ],
)
def test_another_model_under_a_prefix_or_a_number_still_differs(
    named: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    script = [dataclasses.replace(r, model=named) for r in _oracle(retail)]
    run = _harness_of("openai", monkeypatch, retail).run(script, revision="gpt-4o")
    assert run.terminal_reason == "success", run.infrastructure_status
    (served,) = run.infrastructure_status["models_served"]
    assert served["differs"] is True
    assert not {"prefix", "revision", "snapshot"} & set(served)


@pytest.mark.parametrize(
    ("asked", "named", "spelling"),
    [
        ("gpt-4o", "openai/gpt-4o-2024-08-06", {"snapshot": "2024-08-06", "prefix": "openai/"}),
        ("gpt-4o", "OpenAI/GPT-4o", {"prefix": "OpenAI/"}),
        ("gpt-4o", "GPT-4o", {}),
        ("o1", "openai/o1-2024-12-17", {"snapshot": "2024-12-17", "prefix": "openai/"}),
        ("claude-sonnet-4-5", "anthropic/claude-sonnet-4.5", {"prefix": "anthropic/"}),
        ("claude-3-5-sonnet", "claude-3.5-sonnet", {}),
        ("gemini-1.5-pro", "gemini-1.5-pro-001", {"revision": "001"}),
        ("gemini-1.5-pro", "gemini-1.5-pro@002", {"revision": "002"}),
        ("gemini-1.5-pro-latest", "gemini-1.5-pro-002", {"revision": "002"}),
        (
            "gemini-2.0-flash",
            "google/gemini-2.0-flash-001",
            {"revision": "001", "prefix": "google/"},
        ),
        ("llama-3.3-70b-instruct", "meta-llama/Llama-3.3-70B-Instruct", {"prefix": "meta-llama/"}),
        ("Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-72B-Instruct", {"prefix": "Qwen/"}),
        ("mistral-large", "mistralai/mistral-large", {"prefix": "mistralai/"}),
        ("grok-4", "x-ai/grok-4", {"prefix": "x-ai/"}),
        ("deepseek-chat", "deepseek/deepseek-chat", {"prefix": "deepseek/"}),
        ("openai/gpt-4o", "openai/gpt-4o-2024-08-06", {"snapshot": "2024-08-06"}),
        ("acme/model-x", "acme/model-x-2024-08-06", {"snapshot": "2024-08-06"}),
        ("meta/llama-3-70b", "meta-llama/llama-3-70b", {"prefix": "meta/"}),
        # another model
        ("gpt-4o", "anthropic/gpt-4o", None),
        ("gpt-4o", "azure/gpt-4o-mini", None),  # round 53: azure/gpt-4o is gpt-4o on Azure
        ("gpt-4o", "openrouter/anthropic/gpt-4o", None),
        ("claude-sonnet-4", "anthropic/claude-sonnet-4-5", None),
        ("claude-3-5-sonnet", "anthropic/claude-3-5-haiku", None),
        ("openai/gpt-4o", "anthropic/gpt-4o", None),
        ("gpt-4", "gpt-4.1", None),
        ("gpt-4", "openai/gpt-4.5", None),
        ("gemini-1.5-pro", "gemini-1.5-pro-2", None),
        ("gemini-1.5-pro", "gemini-1.5-pro-102", None),
        ("gemini-1.5-pro", "gemini-1.5-pro-0021", None),
        ("gemini-1.5-pro", "gemini-1.5-flash-002", None),
        ("gemini-1.5", "gemini-1.5-pro-002", None),
        ("llama-3.1-405b", "llama-3.1-405b-405", None),
        ("gpt-4o", "openai/", None),
        ("gpt-4o", "/gpt-4o", None),
        ("gpt-4o", "openai/openai/gpt-4o", None),
        ("o1", "openai/o1-mini", None),
        ("mistral-large", "mistralai/mistral-large-instruct-2411", None),
    ],
)
def test_what_is_the_model_requested(
    asked: str, named: str, spelling: dict[str, str] | None
) -> None:
    from groundstate.served import same_model  # here: the old code, also run, has none

    assert same_model(asked, named) == spelling


def test_a_served_name_is_read_in_linear_time() -> None:
    from groundstate.served import same_model

    started = time.perf_counter()
    assert same_model("m", "openai/" + "m" * 190) is None
    assert same_model("gpt-4o", "openai/gpt-4o" + "-0" * 90) is None
    assert same_model("gpt" + "-1" * 90, "openai/gpt" + "-1" * 90 + "-002") == {
        "revision": "002",
        "prefix": "openai/",
    }
    assert time.perf_counter() - started < 0.1


# --- a request too large for its route or the account's tier --------------------------------

NGINX_413 = (
    "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n<center>"
    "<h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n"
    "</body>\r\n</html>\r\n"
)
TOO_LARGE = {
    "anthropic": Raw(
        json.dumps(
            {
                "type": "error",
                "error": {
                    "type": "request_too_large",
                    "message": "Request exceeds the maximum allowed number of bytes.",
                },
            }
        ),
        status=413,
    ),
    "proxy_page": Raw(NGINX_413, status=413, headers={"content-type": "text/html"}),
    "plain_text": Raw("Payload Too Large", status=413, headers={"content-type": "text/plain"}),
    "no_body": Raw("", status=413, headers={"content-type": "text/plain"}),
}


@pytest.mark.parametrize("provider", [p.name for p in PROVIDERS])
@pytest.mark.parametrize("fault", list(TOO_LARGE))
def test_a_request_too_large_in_bytes_is_the_conversation_outgrowing_its_route(
    provider: str, fault: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """A 413 was a bare rejection: it is the conversation outgrowing what the route takes,
    not retried, the message saying so (a proxy's page by its title, not its markup)."""
    oracle = _oracle(retail)
    run = _harness_of(provider, monkeypatch, retail).run([oracle[0], TOO_LARGE[fault]])
    assert run.terminal_reason == CONTEXT_WINDOW, run.infrastructure_status
    (failed,) = _failed_calls(run)
    assert failed.error is not None and failed.error.kind == "context_window"
    message = _message(run)
    assert "the conversation outgrew the request size the API" in message
    assert f"{API[provider]}: HTTP 413" in message and "<" not in message
    if fault == "proxy_page":
        assert message.endswith("413 Request Entity Too Large")


GROQ_TPM = {
    "message": "Request too large for model `llama3-70b-8192` in organization `org_1` service"
    " tier `on_demand` on tokens per minute (TPM): Limit 6000, Requested 7000, please reduce"
    " your message size and try again.",
    "type": "tokens",
    "code": "rate_limit_exceeded",
}
OPENAI_TPM = {
    "message": "Request too large for gpt-4o in organization org-1 on tokens per min (TPM):"
    " Limit 30000, Requested 50000. The input or output tokens must be reduced in order to run"
    " successfully.",
    "type": "tokens",
    "param": None,
    "code": "rate_limit_exceeded",
}


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (413, GROQ_TPM),
        (413, {"message": "Request too large: 7000 tokens per minute, limit 6000"}),
        (429, OPENAI_TPM),
    ],
    ids=["groq_413", "tpm_words_413", "openai_429"],
)
def test_a_request_over_the_tiers_limit_is_the_accounts(
    status: int, error: dict[str, Any], monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """Larger than the tier takes in a minute: the account's limit, not the window (a bare
    compatibility failure) nor a rate to wait out (the same request is refused again)."""
    fault = Raw(json.dumps({"error": error}), status=status)
    oracle = _oracle(retail)
    run = _harness_of("openai", monkeypatch, retail).run([oracle[0], fault, *oracle[1:]])
    assert run.terminal_reason == MODEL_SERVING, run.infrastructure_status
    (failed,) = _failed_calls(run)  # not retried
    assert failed.error is not None and failed.error.kind == "auth"
    assert "refused the credentials or the account" in _message(run)


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (
            429,
            {
                "message": "Rate limit reached for gpt-4o in organization org-1 on tokens per"
                " min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.",
                "type": "tokens",
                "code": "rate_limit_exceeded",
            },
        ),
        (429, {"message": "Request too large, slow down", "code": "rate_limit_exceeded"}),
        (503, {"message": "Request too large for the queue: tokens per minute exceeded"}),
    ],
    ids=["openai_rate_limit", "no_tier", "server_error"],
)
def test_a_rate_limit_to_wait_out_is_still_retried(
    status: int, error: dict[str, Any], monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """Honest neighbours: an ordinary rate limit names the tokens per minute too, but the
    request fits the tier: waited out, the attempt goes on."""
    fault = Raw(json.dumps({"error": error}), status=status)
    oracle = _oracle(retail)
    run = _harness_of("openai", monkeypatch, retail).run([oracle[0], fault, *oracle[1:]])
    assert run.terminal_reason == "success", run.infrastructure_status
    (failed,) = _failed_calls(run)
    assert failed.error is not None and failed.error.kind in ("rate_limited", "server_error")


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (400, "This model's maximum context length is 4096 tokens.", CONTEXT_WINDOW),
        (400, "Unsupported parameter: 'seed'", "harness_compatibility_failure"),
        (400, "<html><title>400 Bad Request</title><p>maximum context length</p></html>", None),
    ],
    ids=["context_text", "other_text", "page"],
)
def test_an_error_body_in_plain_text_is_read(
    status: int, body: str, reason: str | None, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """The ``openai`` SDK said only "Error code: 400" of a body that is no JSON: a refusal
    for the window in plain text was a bare rejection, and no message said why."""
    fault = Raw(body, status=status, headers={"content-type": "text/plain"})
    run = _harness_of("openai", monkeypatch, retail).run([fault])
    assert run.terminal_reason == (reason or "harness_compatibility_failure")
    message = _message(run)
    assert "Error code" not in message and "<" not in message
    assert message.endswith("400 Bad Request" if reason is None else body)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"error": "Request too large for the gateway"}, "Request too large for the gateway"),
        ({"detail": "Not Found: no model gpt-9"}, "Not Found: no model gpt-9"),
        ({"error": {"message": "Bad model", "detail": "other"}}, "Bad model"),
        ({"error": {"detail": "Bad model"}}, "Bad model"),
    ],
)
def test_an_error_given_as_text_or_detail_is_the_message(
    body: dict[str, Any], said: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    run = _harness_of("openai", monkeypatch, retail).run([Raw(json.dumps(body), status=400)])
    assert _message(run).endswith(f"HTTP 400 (request id req_1): {said}")


# --- bodies that are no answer --------------------------------------------------------------

EVENTS = 'data: {"id":"x","choices":[{"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n'
NOT_AN_ANSWER = {
    "stream": (Raw(EVENTS, headers={"content-type": "text/event-stream"}), "server-sent events"),
    "stream_labelled_json": (Raw(EVENTS), "server-sent events"),
    "stream_comment": (Raw(": ping\n\n" + EVENTS), "server-sent events"),
    "cut_short": (Raw('{"id": "x", "choices": [{"message": {"content": "hi'), "JSON cut short"),
    "cut_after_a_key": (Raw('{"id": "x", "choices": '), "JSON cut short"),
    "empty": (Raw(""), "an empty body"),
    "blank": (Raw("  \n"), "an empty body"),
    "page": (
        Raw("<html><title>Bad gateway</title></html>", headers={"content-type": "text/html"}),
        "an HTML page, not JSON: 'Bad gateway'",
    ),
    "page_labelled_json": (Raw("<!DOCTYPE html><html><body><h1>Oops</h1></body></html>"), "Oops"),
    "text_labelled_json": (Raw("upstream connect error"), "a body that is not JSON (Expecting"),
    "error_in_200": (Raw(json.dumps({"error": {"message": "overloaded"}})), "overloaded"),
}


@pytest.mark.parametrize("provider", [p.name for p in PROVIDERS])
@pytest.mark.parametrize("fault", list(NOT_AN_ANSWER))
def test_a_body_that_is_no_answer_is_named_as_what_it_is(
    provider: str, fault: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """Retried as a malformed answer; for good, the provider's failure, its message naming
    the adapter and what the body was (not the parser's "Expecting value: line 1 column 1")."""
    raw, said = NOT_AN_ANSWER[fault]
    run = _harness_of(provider, monkeypatch, retail).run([raw] * 3)
    assert run.terminal_reason == MODEL_SERVING, run.infrastructure_status
    message = _message(run)
    assert f"after 3 tries: {API[provider]}: " in message
    assert said in message and "line 1 column" not in message


@pytest.mark.parametrize("provider", [p.name for p in PROVIDERS])
@pytest.mark.parametrize("fault", ["stream", "cut_short", "page"])
def test_a_body_that_is_no_answer_once_is_retried(
    provider: str, fault: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    raw, _ = NOT_AN_ANSWER[fault]
    run = _harness_of(provider, monkeypatch, retail).run([raw, *_oracle(retail)])
    assert run.terminal_reason == "success", run.infrastructure_status


@pytest.mark.parametrize("provider", [p.name for p in PROVIDERS])
@pytest.mark.parametrize("content_type", ["text/html", "text/event-stream", "text/plain"])
def test_a_whole_answer_under_another_content_type_is_the_answer(
    provider: str, content_type: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """The honest neighbour: a JSON answer labelled otherwise is read as the answer."""
    script = [
        Raw(json.dumps(_render(provider, reply)), headers={"content-type": content_type})
        for reply in _oracle(retail)
    ]
    run = _harness_of(provider, monkeypatch, retail).run(script)
    assert run.terminal_reason == "success", run.infrastructure_status


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "an empty body"),
        ("data: {}\n\n", "a stream of server-sent events"),
        ("event: message_start\ndata: {}\n\n", "a stream of server-sent events"),
        ('{"a": [1, 2', "JSON cut short after 11 characters"),
        ('{"a": "b', "JSON cut short after 8 characters (Unterminated string starting at"),
        ('{"a": 1} trailing', "a body that is not JSON (Extra data at character 9)"),
        ("<p>hi</p>", "an HTML page, not JSON: 'hi'"),
        ("<html><title></title><body>Down for maintenance</body>", "Down for maintenance"),
        ("<html>" + "<title" * 5000, "an HTML page"),
    ],
)
def test_what_a_body_that_is_no_json_is(text: str, said: str) -> None:
    from groundstate.agents.model_loop import not_json

    problem = None
    try:
        json.loads(text)
    except json.JSONDecodeError as raised:
        problem = raised
    assert said in not_json(text, problem)


def test_a_huge_page_is_read_in_linear_time() -> None:
    from groundstate.agents.model_loop import not_json, page_text

    started = time.perf_counter()
    for body in ("<title" * 400_000, "<" * 2_000_000, "<html>" + "a " * 1_000_000):
        assert len(page_text(body)) <= 2000
        assert len(not_json(body)) < 2400
    assert time.perf_counter() - started < 1.0


# --- a user model's and a judge's request too large -----------------------------------------

USER_413 = Raw(NGINX_413, status=413, headers={"content-type": "text/html"})


def test_a_user_models_413_is_asked_again_as_its_window_is(bank: Suite) -> None:
    """The agent's long messages made the user model's request too large for its route: as
    its window outgrown, the model is asked without them; answered, the user leaves."""
    with OpenAICompatibleServer([USER_413, Reply(text="Hi.")]) as server:
        system = bank_agent_system(model_user(server))
        run = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system).run
    assert run.valid and run.terminal_reason == "agent_failure/incorrect_state", (
        run.infrastructure_status
    )
    left = run.infrastructure_status["user_left"]
    assert "outgrew the user model's window" in left and "413 Request Entity Too Large" in left


def test_a_user_models_tier_limit_is_the_instruments(bank: Suite) -> None:
    """A 413 for the tier's tokens per minute is the user model's account: not asked again."""
    fault = Raw(json.dumps({"error": GROQ_TPM}), status=413)
    with OpenAICompatibleServer([fault, Reply(text="Hi.")]) as server:
        system = bank_agent_system(model_user(server))
        run = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system).run
    assert run.terminal_reason == USER_SIMULATOR and len(server.requests) == 1
    assert "tokens per minute" in _message(run)


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (Raw(EVENTS, headers={"content-type": "text/event-stream"}), "server-sent events"),
        (Raw(""), "an empty body"),
        (Raw('{"choices": [{"message": {"content": "hi'), "JSON cut short"),
    ],
    ids=["stream", "empty", "cut_short"],
)
def test_a_user_models_body_that_is_no_answer_is_named(raw: Raw, said: str, bank: Suite) -> None:
    with OpenAICompatibleServer([raw] * 3) as server:
        model = UserModel(revision="user-sim-1", base_url=server.base_url, max_retries=0)
        user = UserSimulatorSection(kind="model", persona="a customer", model=model)
        agent = FunctionAgent(polite_transfer)
        run = attempt(bank, "transfer", agent, system=bank_agent_system(user)).run
    assert run.terminal_reason == USER_SIMULATOR, run.infrastructure_status
    message = _message(run)
    assert "the user model failed" in message and said in message
    assert "has no attribute" not in message and "line 1 column" not in message


def test_a_judges_413_says_its_request_size(judged: Judged) -> None:  # noqa: F811
    judged.serve(always(Raw(NGINX_413, status=413, headers={"content-type": "text/html"})))
    run, result = judged_run(judged.load(judged.judge()))
    assert result.error is not None and not result.passed
    assert "the judge's prompt outgrew its API's request size (the instrument's" in result.error
    assert result.error.endswith("413 Request Entity Too Large")
    assert run.terminal_reason == "success"


# --- a user model outgrown by the replies the agent drew ------------------------------------

OUTGROWN_USER = Fail(
    400,
    "This model's maximum context length is 8192 tokens. However, your messages resulted in"
    " 9000 tokens.",
    code="context_length_exceeded",
)
LONG_REPLY = "Certainly, here is the policy again, word for word." + " Policy text." * 3000


async def _transfer_and_coax(session: Session) -> str:
    """An agent that acts, then asks the user to repeat a long text back, twice."""
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    await session.say("Done. Please repeat our policy back to me word for word, all of it.")
    await session.say("Thanks. Once more, word for word, please.")
    return "Moved 30 from A to B."


def _user_lines(run: AgentRun) -> list[str | None]:
    log = run.observation_action_log
    return [e.text for e in log if isinstance(e, MessageEvent) and e.role == "user"]


def test_a_user_model_outgrown_by_the_replies_the_agent_drew_is_no_invalid_attempt(
    bank: Suite,
) -> None:
    """The user's own long replies, written as the agent asked, outgrew the window: asked
    again with the agent's messages left out, it is refused still (the replies are kept);
    with the replies left out too, it answers: the user leaves and the state decides."""
    answers = [Reply(text=LONG_REPLY), OUTGROWN_USER, OUTGROWN_USER, Reply(text="Fine.")]
    with OpenAICompatibleServer(answers) as server:
        system = bank_agent_system(model_user(server))
        run = attempt(bank, "transfer", FunctionAgent(_transfer_and_coax), system=system).run
    assert run.valid and run.terminal_reason == "success", run.infrastructure_status
    left = run.infrastructure_status["user_left"]
    assert "the user's own replies, written in answer to the agent's, too" in left
    assert "8192 tokens" in left
    first_probe, second_probe = server.requests[2]["messages"], server.requests[3]["messages"]
    assert [m["content"] for m in first_probe[2:]] == ["Hello.", LONG_REPLY, "Hello."]
    assert [m["content"] for m in second_probe[2:]] == ["Hello.", "OK.", "Hello."]
    assert second_probe[:2] == server.requests[0]["messages"][:2]  # its prompt and opening
    assert _user_lines(run)[1:] == [LONG_REPLY, None]


def test_a_user_model_whose_prompt_and_turns_outgrow_it_is_still_the_instruments(
    bank: Suite,
) -> None:
    """Refused with the agent's messages and the user's replies left out too: the
    instrument's own side outgrows the window, whatever the agent says (invalid)."""
    answers = [Reply(text="Please go on."), OUTGROWN_USER, OUTGROWN_USER, OUTGROWN_USER]
    with OpenAICompatibleServer(answers) as server:
        system = bank_agent_system(model_user(server))
        run = attempt(bank, "transfer", FunctionAgent(_transfer_and_coax), system=system).run
    assert run.terminal_reason == USER_SIMULATOR and not run.valid, run.infrastructure_status
    assert len(server.requests) == 4
    message = _message(run)
    assert "with the agent's messages left out too, and the user's own replies" in message


def test_the_first_reply_outgrown_is_asked_once_more_only(bank: Suite) -> None:
    """With no reply of the user's yet, the two probes are one: asked once more, not twice."""
    with OpenAICompatibleServer([OUTGROWN_USER, OUTGROWN_USER, Reply(text="Hi.")]) as server:
        system = bank_agent_system(model_user(server))
        run = attempt(bank, "transfer", FunctionAgent(polite_transfer), system=system).run
    assert run.terminal_reason == USER_SIMULATOR and len(server.requests) == 2
    message = _message(run)
    assert "left out too:" in message and "user's own replies" not in message
