"""The tool-calling loop shared by the model adapters (``openai-chat``, ``anthropic-messages``).

One attempt is a conversation with the model. Each turn sends the instructions, the user's
request, the tools and the history so far; the model answers with tool calls or with text:

- a call of a task tool goes through ``session.call``; its output (or its error, as text) goes
  back to the model as the tool's result. Arguments that are not valid JSON, or a tool the
  task does not have, reach the gateway too (the trace shows them, and they take a step), and
  the model gets the error;
- a call of the built-in :data:`TALK_TO_USER` tool sends its ``message`` to the user through
  ``session.say``; the user's reply is the tool's result;
- text with no tool call is the final reply: the attempt ends with it.

Every request is kept in the trace (``session.record_model_call``) and its usage reported
(``session.record_usage``; ``None`` when the API did not count it), so token and cost budgets
stop the loop. Failures of the API are
classified (docs/models.md): a request the API rejects (400, 404, 422...) raises
:class:`HarnessCompatibilityError`; rate limits, 5xx answers, timeouts and lost connections are
retried with backoff and, when retries run out, raise :class:`ModelServingFailure` (an invalid
attempt), as do rejected credentials.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import email.utils
import importlib
import inspect
import json
import math
import os
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Self, TypeVar

from groundstate.agents.base import Session, ToolResult, ToolSpec, output_text
from groundstate.errors import (
    ContextWindowExceeded,
    HarnessCompatibilityError,
    ModelServingFailure,
    SpecError,
)
from groundstate.spec.canonical import hash_value
from groundstate.spec.system import Prices, RetryPolicy, SystemSpec
from groundstate.trace import (
    RETRIED_KINDS,
    ModelCall,
    ModelCallError,
    ModelResponse,
    ModelToolCall,
    ModelUsage,
)
from groundstate.whole_request import (
    WARM_UP_SECONDS,
    AnswerTooLarge,
    size_bounded_async_client,
    warm_up,
)

_Client = TypeVar("_Client")

TALK_TO_USER = "talk_to_user"
"""The built-in tool the model calls to send a message to the user and read the reply."""

TALK_TO_USER_DESCRIPTION = (
    "Send a message to the user and wait for the reply (to ask a question or for a"
    " confirmation). When the task is done, answer with plain text and no tool call: that"
    " text is your final reply to the user and ends the conversation."
)

MAX_IDLE_TURNS = 3
"""Turns in a row in which the model took no action (only malformed ``talk_to_user`` calls)
before the adapter gives up; every other turn takes a step, which the step limit bounds."""

DEFAULT_TIMEOUT = 60.0
"""Seconds a model request may take when ``model.request_timeout`` is unset."""

ErrorKind = Literal[
    "rate_limited", "server_error", "timeout", "connection", "rejected", "auth", "context_window"
]
_RETRIED: frozenset[str] = RETRIED_KINDS


class ServingError(Exception):
    """A failed model request, as an adapter reports it (status code, request id, message)."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        status_code: int | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message
        self.status_code = status_code
        self.request_id = request_id
        self.retry_after = retry_after

    def without(self, secret: str) -> ServingError:
        """This failure with *secret* (the API key) taken out of its message: a server or
        proxy may echo the key it refused ("Incorrect API key provided: sk-..."), and the
        message is kept in the trace, the record and the reports."""
        if secret not in self.message:
            return self
        return ServingError(
            self.kind,
            hide_secret(self.message, secret),
            status_code=self.status_code,
            request_id=self.request_id,
            retry_after=self.retry_after,
        )

    def evidence(self) -> ModelCallError:
        return ModelCallError(
            kind=self.kind,
            status_code=self.status_code,
            request_id=self.request_id,
            message=bounded_message(self.message),
        )


class Exhausted(Exception):
    """A model request that failed for good: the last :class:`ServingError` and the tries."""

    def __init__(self, error: ServingError, tries: int) -> None:
        super().__init__(error.message)
        self.error = error
        self.tries = tries


MAX_MESSAGE_CHARS = 2000
"""Characters of an API's error message kept: a server may put a whole page in it, and the
message is kept in every try's trace event, the attempt's evidence and its traceback."""


def bounded_message(text: str) -> str:
    """*text*, or its first :data:`MAX_MESSAGE_CHARS` characters and how many were left out."""
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    return f"{text[:MAX_MESSAGE_CHARS]}... [{len(text) - MAX_MESSAGE_CHARS} more characters]"


NO_KEY = "unused"
"""The key sent when the system names no ``api_key_env``."""


def hide_secret(text: str, secret: str) -> str:
    """*text* with every occurrence of *secret* replaced by a mark. The placeholder sent
    without a key, and a "key" of under 4 characters (a local server's, found inside ordinary
    words), are left alone: they hide nothing and would garble the message."""
    if secret == NO_KEY or len(secret) < 4:
        return text
    return text.replace(secret, "[the API key]")


def outgrown(exc: ServingError) -> str:
    """What a request refused for its length (``context_window``) outgrew: the bytes the
    route takes (a 413, see :func:`too_long`), else the model's window."""
    if exc.status_code == 413:
        return "the request size the API (or a proxy before it) takes"
    return "the model's window"


def describe_failure(api: str, exc: ServingError) -> str:
    """``api: HTTP 500 (request id req_1): message``: what failed, as a report names it."""
    where = f"HTTP {exc.status_code}" if exc.status_code is not None else exc.kind
    request_id = f" (request id {exc.request_id})" if exc.request_id else ""
    return f"{api}: {where}{request_id}: {bounded_message(exc.message)}"


def kind_of_status(status: int) -> ErrorKind:
    """How an HTTP error status is treated: retried, an environment failure, or a rejection."""
    if status == 429:
        return "rate_limited"
    if status in (408, 409) or status >= 500:
        return "server_error"
    if status in (401, 402, 403, 407):
        # The account, not the request: refused credentials, no credit left (402, as
        # OpenRouter answers), a proxy's own login. Calling it a rejection of the request
        # would count the evaluator's account against the system as a compatibility failure.
        return "auth"
    return "rejected"


def api_message(exc: Any) -> str:
    """The API's own error message from an SDK status error (its body: an error's
    ``message``, an ``error`` or ``detail`` that is text, a body that is no JSON), else the
    SDK's text. A proxy's page (nginx's "413 Request Entity Too Large", a gateway's 502) is
    read as its title or its text: the ``openai`` SDK said only "Error code: 413", the
    ``anthropic`` one the whole page."""
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(error, dict):
        error = error.get("message", error.get("detail"))
    if isinstance(error, str) and error.strip():
        return error
    if isinstance(body, str) and body.strip():
        return page_text(body)
    return str(getattr(exc, "message", exc))


PAGE_TITLE = re.compile(r"<title[^>]{0,200}>([^<]{0,500})</title", re.IGNORECASE)
MARKUP = re.compile(r"<[^<>]{0,1000}>|&[a-z]{1,10};")


def page_text(body: str) -> str:
    """A body that is no JSON as a line of text: an HTML page's title (else its text without
    markup), whitespace run together, at most :data:`MAX_MESSAGE_CHARS` characters read."""
    head = body[: MAX_MESSAGE_CHARS * 4]
    title = PAGE_TITLE.search(head) if head.lstrip().startswith("<") else None
    text = title.group(1) if title and title.group(1).strip() else MARKUP.sub(" ", head)
    return " ".join(text.split())[:MAX_MESSAGE_CHARS] or repr(body[:200])


def _status_kind(exc: Any) -> ErrorKind:
    """What an SDK status error is: :func:`kind_of_status`, but a 429 out of quota and a
    request over the tier's limit are the account's (``auth``), and a rejection for the
    conversation's length or size ``context_window``."""
    if _out_of_quota(exc) or over_the_tier(exc):
        return "auth"
    kind = kind_of_status(exc.status_code)
    return "context_window" if kind == "rejected" and too_long(exc) else kind


CONTEXT_WINDOW = re.compile(
    r"context[ _-]?(?:length|window|limit|size)|max(?:imum)?[ _-]?(?:model|prompt)[ _-]?len"
    r"|(?:prompt|input|messages?) (?:is|are) too (?:long|large)"
    r"|(?:input|prompt) token count .{0,40}exceeds|length of the messages"
    r"|`?inputs`? tokens \+ `?max_new_tokens",
    re.IGNORECASE,
)
"""How APIs word a request refused for its length: OpenAI's ``context_length_exceeded``
("maximum context length is 128000 tokens", "Your input exceeds the context window",
"Please reduce the length of the messages"), vLLM's, OpenRouter's, DeepSeek's and Mistral's
"maximum context length", vLLM's "longer than the maximum model length" and ``max_model_len``,
xAI's "maximum prompt length", llama.cpp's "exceeds the available context size", Anthropic's
"prompt is too long: 208310 tokens > 200000 maximum" and "input length and `max_tokens`
exceed context limit", Bedrock's "Input is too long for requested model", LiteLLM's
``ContextWindowExceededError``, Gemini's "The input token count (X) exceeds the maximum",
TGI's "`inputs` tokens + `max_new_tokens` must be <= 4096"."""

TOO_MANY_TOKENS = re.compile(r"too many (?:input |prompt |total )?tokens|\d tokens? > \d", re.I)
"""Words that say a request holds too many tokens (Cohere's "too many tokens: total number of
tokens in the prompt cannot exceed", Bedrock's "too many input tokens")."""

OUTPUT_SIDE = re.compile(r"max_(?:completion_|new_|output_)?tokens|output|completion", re.I)
INPUT_SIDE = re.compile(r"input|prompt|messages|conversation", re.IGNORECASE)
"""A message that names the answer's tokens (:data:`OUTPUT_SIDE`) and not the conversation's
(:data:`INPUT_SIDE`) is about ``max_tokens`` ("max_tokens (200000) exceeds the model's
context length"): a bad request, the system's setting, whatever the request holds. Named
beside the conversation ("input length and `max_tokens` exceed context limit"), the window is
what the conversation outgrew."""

NOT_THE_WINDOW = re.compile(
    r"per min|\btpm\b|rate limit|unrecognized|unknown (?:parameter|field|argument)"
    r"|unsupported|not permitted",
    re.IGNORECASE,
)
"""A tier's tokens per minute (Groq's 413 "Request too large ... tokens per minute (TPM)"),
the account's limit, or a setting the API does not know ("Unrecognized request argument
supplied: context_length", a system's decoding key), the system's: not the model's window."""

CONTEXT_CODES = frozenset(
    {"context_length_exceeded", "context_window_exceeded", "exceed_context_size_error"}
)
"""Error codes (or types) of a request refused for its length: OpenAI's, Azure's, Groq's and
DeepSeek's ``context_length_exceeded``, llama.cpp's ``exceed_context_size_error``."""

LONG_STRING = "string_above_max_length"
"""OpenAI's code for a string over its limit (some ten million characters): the
conversation's when its ``param`` is a message's (``messages[3].content``, the Responses
API's ``input[3]``); a tool's description so long is the system's setting, a bare rejection."""

A_MESSAGE = re.compile(r"\b(?:messages|input)\[\d")


def too_long(exc: Any) -> bool:
    """Whether a rejected request was refused for the conversation's length: a failure the
    system meets by outgrowing its model's window, ``harness_compatibility_failure/
    context_window`` as the importers name it. Read from the error's ``code`` or ``type``
    (:data:`CONTEXT_CODES`; :data:`LONG_STRING` of a message), else from its message.

    A 413 (Anthropic's ``request_too_large``, a proxy's "Request Entity Too Large" page) is
    the request's bytes over what the serving route takes: the same failure, the conversation
    the system built outgrowing its route (its model's messages, the tool outputs it asked
    for, its context policy), not an environment failure, which is one "independently of the
    agent's decisions". A 413 for the tier's tokens per minute (:func:`over_the_tier`) is
    the account's."""
    if over_the_tier(exc):
        return False
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    fields = error if isinstance(error, dict) else {}
    named = {value for key in ("code", "type") if isinstance(value := fields.get(key), str)}
    if getattr(exc, "status_code", None) == 413 or TOO_LARGE_CODE in named:
        return True
    said = api_message(exc)[:MAX_MESSAGE_CHARS]
    if LONG_STRING in named:
        param = fields.get("param")
        return A_MESSAGE.search(param if isinstance(param, str) else said) is not None
    return not CONTEXT_CODES.isdisjoint(named) or says_too_long(said)


def says_too_long(said: str) -> bool:
    """Whether an error message says the request is too long for the model's window
    (:data:`CONTEXT_WINDOW`, :data:`TOO_MANY_TOKENS`), not that ``max_tokens`` is too large
    (:data:`OUTPUT_SIDE`), nor a tier's rate or an unknown setting (:data:`NOT_THE_WINDOW`).
    Linear in *said*."""
    if NOT_THE_WINDOW.search(said):
        return False
    if not (CONTEXT_WINDOW.search(said) or TOO_MANY_TOKENS.search(said)):
        return False
    return OUTPUT_SIDE.search(said) is None or INPUT_SIDE.search(said) is not None


TOO_LARGE_CODE = "request_too_large"
"""Anthropic's error type of a request over the bytes its API takes (a 413)."""

PER_TIME = re.compile(r"\bper (?:min|minute|hour|day)\b|\b[tr]p[mhd]\b", re.IGNORECASE)
"""A limit of the account's tier over time: tokens or requests per minute or day (``TPM``,
``RPD``)."""

REQUEST_TOO_LARGE = re.compile(r"request too large|too large for", re.IGNORECASE)


def over_the_tier(exc: Any) -> bool:
    """Whether a 413 or 429 refused one request for being larger than the account's tier
    takes in a minute or a day: Groq's 413 "Request too large for model `llama3-70b` in
    organization `org_1` on tokens per minute (TPM): Limit 6000, Requested 7000" (code
    ``rate_limit_exceeded``), OpenAI's 429 "Request too large for gpt-4o ... on tokens per
    min (TPM)". The account's limit (``auth``), not the model's window nor a rate to wait out:
    the same request is refused however long the harness waits, and a larger tier takes it."""
    status = getattr(exc, "status_code", None)
    if status not in (413, 429):
        return False
    said = api_message(exc)[:MAX_MESSAGE_CHARS]
    if status == 429:
        return REQUEST_TOO_LARGE.search(said) is not None and PER_TIME.search(said) is not None
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code == "rate_limit_exceeded" or PER_TIME.search(said) is not None


def _out_of_quota(exc: Any) -> bool:
    """OpenAI's 429 ``insufficient_quota``: the account has no quota left. It looks like a
    rate limit, but waiting does not end it: a refusal of the account, as a 402 is."""
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    return isinstance(error, dict) and error.get("code") == "insufficient_quota"


def retry_after_seconds(headers: Any) -> float | None:
    """How long the server asks to wait, in seconds: ``retry-after-ms`` (OpenAI's), else
    ``Retry-After`` as seconds or as an HTTP date (RFC 9110); ``None`` when neither reads."""
    if headers is None:
        return None
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = headers.get("retry-after")
    seconds = _number(value)
    if seconds is not None or not isinstance(value, str):
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT; a zone-less one is read so
        when = when.replace(tzinfo=datetime.UTC)
    return max((when - datetime.datetime.now(datetime.UTC)).total_seconds(), 0.0)


def _number(value: Any) -> float | None:
    """A header's value as a finite number of seconds, or ``None``."""
    try:
        number = float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
    return number if number is not None and math.isfinite(number) else None


async def call_sdk(
    sdk: Any,
    create: Callable[..., Awaitable[Any]],
    request: dict[str, Any],
    timeout: float,
    to_turn: Callable[[Any], Turn],
) -> Turn:
    """Send *request* through an official SDK and read its answer as a :class:`Turn`.

    The ``openai`` and ``anthropic`` SDKs share one error hierarchy (``APIStatusError``,
    ``APITimeoutError``, ``APIConnectionError``, ``APIError``); each failure, and an answer
    *to_turn* cannot read, becomes a :class:`ServingError` with its evidence.

    *timeout* bounds the whole request: the SDK's own timeout bounds each read, so a server
    that trickles its body a byte at a time would hold the attempt to its time limit (the
    agent's failure) rather than time out (the provider's).
    """
    try:
        async with asyncio.timeout(timeout):
            answer = await create(**request)
    except TimeoutError:
        raise ServingError("timeout", f"no whole answer within {timeout:g}s") from None
    except sdk.APIStatusError as exc:
        raise ServingError(
            _status_kind(exc),
            api_message(exc),
            status_code=exc.status_code,
            request_id=exc.request_id,
            retry_after=retry_after_seconds(exc.response.headers),
        ) from None
    except sdk.APITimeoutError:
        raise ServingError("timeout", f"no answer within {timeout:g}s") from None
    except sdk.APIConnectionError as exc:
        if isinstance(exc.__cause__, AnswerTooLarge):  # some SDKs read the body in the send
            raise ServingError("server_error", f"malformed response: {exc.__cause__}") from None
        raise ServingError("connection", str(exc)) from None
    except (sdk.APIError, ValueError, RecursionError, AnswerTooLarge) as exc:
        # a body that is not an answer, not JSON, or JSON nested past what Python parses
        raise ServingError("server_error", f"malformed response: {unreadable(exc)}") from None
    if isinstance(answer, str):  # the SDKs hand back a body not labelled JSON as its text
        raise ServingError("server_error", f"malformed response: {not_json(answer)}")
    failed = error_in_answer(answer)
    if failed is not None:  # OpenRouter and some proxies answer a failure with a 200
        raise ServingError(
            "server_error",
            f"malformed response: an error in a 200 answer: {failed}",
            request_id=getattr(answer, "_request_id", None),
        )
    try:
        return _distinct_ids(to_turn(answer))
    except HarnessCompatibilityError as exc:
        # An answer in a protocol the adapter never offered: a failed try like any other (the
        # trace keeps it, with its request id), not retried. Raised past the retries, it
        # left the attempt's trace without the answer that decided its verdict.
        raise ServingError(
            "rejected", str(exc), request_id=getattr(answer, "_request_id", None)
        ) from None
    except (AttributeError, IndexError, TypeError, ValueError, RecursionError) as exc:
        # ValueError: pydantic's ValidationError, e.g. a tool call whose id or name is null;
        # RecursionError: a tool input nested too deeply to write back as JSON
        raise ServingError(
            "server_error",
            f"malformed response: {type(exc).__name__}: {exc}",
            request_id=getattr(answer, "_request_id", None),
        ) from None


def unreadable(exc: BaseException) -> str:
    """Why an answer could not be read: a body labelled JSON that is none is named as what
    it is (:func:`not_json`), not by the parser's "Expecting value: line 1 column 1"."""
    for problem in (exc, exc.__cause__):
        if isinstance(problem, json.JSONDecodeError):
            return not_json(problem.doc, problem)
    return str(exc)


SERVER_SENT_EVENTS = re.compile(r"\s*(?:(?:data|event|id|retry)\s*:|:)")
"""The start of a ``text/event-stream`` body: a field (``data: {...}``) or a comment line."""


def not_json(text: str, problem: json.JSONDecodeError | None = None) -> str:
    """What a body that is not one JSON answer is, for the failure's message: empty, a stream
    of server-sent events (a route that only streams, whatever ``stream`` the request says),
    a page (a proxy's or gateway's), JSON cut short (a body the server stopped sending), or
    other text, its start shown."""
    if not text.strip():
        return "an empty body"
    if SERVER_SENT_EVENTS.match(text):
        return (
            "a stream of server-sent events, not one JSON answer (the adapter asks for none:"
            f" does the route only stream?): {text[:200]!r}"
        )
    if text.lstrip().startswith("<"):
        return f"an HTML page, not JSON: {page_text(text)!r}"
    where = f" ({problem.msg.removesuffix(' at')} at character {problem.pos})" if problem else ""
    if problem is not None and _cut_short(text, problem):
        return f"JSON cut short after {len(text)} characters{where}: ...{text[-100:]!r}"
    return f"a body that is not JSON{where}: {text[:200]!r}"


def _cut_short(text: str, problem: json.JSONDecodeError) -> bool:
    """Whether JSON text failed to parse for its end: the parser ran out of text, or a
    string was never closed."""
    began = text.lstrip()[:1] in ("{", "[")
    return began and (problem.pos >= len(text.rstrip()) or problem.msg.startswith("Unterminated"))


LOST_CALLS = (
    "the answer's {reason} says it calls a tool, but it holds no tool call: the server lost"
    " the call (its tool parser failed?)"
)
"""A malformed answer (retried): read as the final reply, the text around a call the server
could not parse ended the attempt as the agent's, or an empty reply did."""

MAX_MODEL_ID_CHARS = 200
"""Characters of an answer's model id kept: the server's text, in every model call's event."""


def served_model(answer: Any) -> str | None:
    """The model id an answer names (its ``model`` field), at most :data:`MAX_MODEL_ID_CHARS`
    characters; None when it names none (a local server may leave it out or empty)."""
    named = getattr(answer, "model", None)
    if not isinstance(named, str) or not named.strip():
        return None
    return named[:MAX_MODEL_ID_CHARS]


FAILED_FINISH_REASONS = frozenset({"error", "abort"})
"""Finish reasons of a choice the server failed to finish (OpenRouter's ``error``, vLLM's
``abort``): no model stops so; what the choice holds is not the model's answer."""


def error_in_answer(answer: Any) -> str | None:
    """The error a 200 answer carries instead of an answer, if any: ``{"error": {...}}``, or
    in its choice (OpenRouter's ``choices[0].error``, an upstream failure mid-answer, with a
    ``finish_reason`` of ``error``). Read as the answer, a choice's error was an empty final
    reply: the provider's failure scored as the agent's incorrect state."""
    choices = getattr(answer, "choices", None)
    choice = choices[0] if isinstance(choices, list) and choices else None
    for error in (getattr(answer, "error", None), getattr(choice, "error", None)):
        if isinstance(error, dict) and error:  # some servers send ``"error": {}`` with answers
            return str(error.get("message") or error)
        if isinstance(error, str) and error:
            return error
    reason = getattr(choice, "finish_reason", None)
    if reason in FAILED_FINISH_REASONS:
        return f"the answer's finish_reason is {reason!r}"
    return None


def _distinct_ids(turn: Turn, taken: frozenset[str] = frozenset()) -> Turn:
    """*turn* with distinct tool call ids: a later call sharing an earlier one's id, in this
    answer or among *taken* (the ids of the conversation's earlier answers), is renamed
    (``call_1_2``) in the answer and in the history sent back. Sent back as given, their
    results could not be told apart, and an API requiring unique ids rejected the next request
    (``harness_compatibility_failure``, the system's, for a quirk of the serving route); the
    calls themselves are the model's actions and run as any others. An empty id is given one
    the same way (``call_1``): passed on as given, no result could name its call, and an API
    rejected the history with it. An id an earlier answer used is renamed too: a server that
    numbers its calls afresh in each answer (``call_0`` every time) is unique within one, and
    Anthropic's API refuses a request whose history repeats an id ("tool_use ids must be
    unique"). The new ids keep to ``[A-Za-z0-9_-]``, all Anthropic's API takes in an id."""
    ids = [call.id for call in turn.response.tool_calls]
    if len(set(ids)) == len(ids) and all(ids) and taken.isdisjoint(ids):
        return turn
    renamed: list[str] = []
    for number, given in enumerate(ids, start=1):
        new = given
        while not new or new in renamed or new in taken or (new != given and new in ids):
            new = f"{given or 'call'}_{number}"
            number += 1
        renamed.append(new)
    pairs = zip(turn.response.tool_calls, renamed, strict=True)
    calls = [call.model_copy(update={"id": new}) for call, new in pairs]
    assistant = json.loads(json.dumps(turn.assistant))
    sent = assistant.get("tool_calls") or [
        b for b in assistant.get("content") or [] if b.get("type") == "tool_use"
    ]
    for block, new in zip(sent, renamed, strict=True):
        block["id"] = new
    response = turn.response.model_copy(update={"tool_calls": calls})
    return dataclasses.replace(turn, response=response, assistant=assistant)


MAX_CALL_TOKENS = 10**9
"""More tokens than one request can use or produce: the largest context windows are some
millions of tokens. A count above it is the server's mistake, not the agent's spending."""


UNKNOWN_USAGE = ModelUsage(input_tokens=None, output_tokens=None, cost=None)
"""A call whose usage the API did not report: recorded as not known, never as 0 tokens."""


def reported_usage(
    *,
    input_tokens: Any,
    output_tokens: Any,
    cached_input_tokens: Any = 0,
    reasoning_tokens: Any = 0,
) -> ModelUsage:
    """The usage an API reported; :data:`UNKNOWN_USAGE` when it did not count the call's tokens
    (no input or output count, or 0 input tokens, which no request has: read as 0, such a
    server's calls were charged nothing and no budget could stop them). Cached and reasoning
    counts left out are 0. A count no API can mean (negative, not a
    whole number, more cached than input tokens, above :data:`MAX_CALL_TOKENS`) raises
    ``ValueError``: :func:`call_sdk` makes it a malformed answer, rather than usage that
    lowers the attempt's totals, or charges the agent's budget with the server's nonsense (a
    count too large for a float crashed the cost's sum). A count that is not a JSON number
    (``true``, ``"100"``) is malformed too: read leniently, ``true`` was charged as 1 token."""
    reported = {
        "input_tokens": input_tokens,
        "cached_input_tokens": cached_input_tokens,
        "output_tokens": output_tokens,
        "reasoning_tokens": reasoning_tokens,
    }
    odd = {k: v for k, v in reported.items() if v is not None and type(v) not in (int, float)}
    if odd:
        raise ValueError(f"usage counts that are not numbers {odd}")
    if input_tokens is None or output_tokens is None or input_tokens == 0:
        return UNKNOWN_USAGE
    usage = ModelUsage(**{k: v or 0 for k, v in reported.items()})
    counts = usage.model_dump(exclude={"cost"})
    if (
        min(counts.values()) < 0
        or max(counts.values()) > MAX_CALL_TOKENS
        or usage.cached_input_tokens > (usage.input_tokens or 0)
    ):
        raise ValueError(f"impossible usage {counts}")
    return usage


def sdk_client(client_class: Callable[..., _Client], settings: Settings) -> _Client:
    """An SDK client for *settings*, with the SDK's own retries off (the loop retries, and
    records every try), reading no answer past ``whole_request.MAX_ANSWER_BYTES``."""
    sdk = importlib.import_module(client_class.__module__.partition(".")[0])
    return client_class(
        api_key=settings.api_key,
        base_url=settings.base_url,
        timeout=settings.timeout,
        max_retries=0,
        http_client=size_bounded_async_client(sdk),
    )


@dataclass(frozen=True)
class Turn:
    """One answer of the model, normalised across APIs."""

    response: ModelResponse
    usage: ModelUsage
    request_id: str | None
    assistant: dict[str, Any]
    """The answer as a message of the API's own format, to send back in the history."""
    last_call_cut: bool = False
    """Whether the answer was cut off (its output limit, a content filter) while its last
    tool call was being written: that call's arguments are not the model's whole call."""
    served_model: str | None = None
    """The model the answer says served it (see :func:`served_model`)."""


@dataclass(frozen=True)
class Settings:
    """What the adapter sends, all from the system spec (the API key's value aside)."""

    model: str
    base_url: str | None
    api_key: str = field(repr=False)
    timeout: float
    retries: RetryPolicy
    prices: Prices | None
    decoding: dict[str, Any]
    reasoning_budget: int | str | None
    context_turns: int | None
    """Tool-using turns kept in the history (None: all of them)."""
    talk_description: str = TALK_TO_USER_DESCRIPTION
    """The description of :data:`TALK_TO_USER` (``harness.tool_descriptions`` may override it)."""

    @classmethod
    def from_system(cls, system: SystemSpec) -> Settings:
        model = system.model
        if model.revision in ("", "none"):
            raise SpecError(system.source, "model.revision", "name the model to call")
        served = system.resolved.get("serving", {}).get("base_url")
        return cls(
            model=model.revision,
            base_url=served or model.effective_base_url(),
            api_key=_api_key(system),
            timeout=model.request_timeout or DEFAULT_TIMEOUT,
            retries=model.retries or RetryPolicy(),
            prices=model.prices,
            decoding=dict(model.decoding),
            reasoning_budget=model.reasoning_budget,
            context_turns=_context_turns(system),
            talk_description=system.harness.tool_descriptions.get(
                TALK_TO_USER, TALK_TO_USER_DESCRIPTION
            ),
        )


def _api_key(system: SystemSpec) -> str:
    return api_key_from_env(system.model.api_key_env, system.source, "model.api_key_env")


def api_key_from_env(name: str | None, source: object, field_name: str) -> str:
    """The key's value, read from the environment variable *name* (never stored); an unset
    variable is a :class:`SpecError` naming *source* and *field_name*."""
    if name is None:
        return NO_KEY  # local servers need none; a real API then answers 401
    value = os.environ.get(name)
    if not value:
        raise SpecError(source, field_name, f"environment variable {name} is unset")
    return value


def _context_turns(system: SystemSpec) -> int | None:
    """``full`` keeps every turn; ``last_turns:N`` keeps the request and the last N turns."""
    policy = system.harness.context_policy.strip()
    if policy == "full":
        return None
    prefix, _, count = policy.partition(":")
    if prefix == "last_turns" and count.isdigit() and int(count) >= 1:
        return int(count)
    raise SpecError(
        system.source,
        "harness.context_policy",
        f"expected 'full' or 'last_turns:N', got {policy!r}",
    )


def cost_of(usage: ModelUsage, prices: Prices | None) -> float:
    """The cost of one call from the spec's price table (0 without one); its tokens known."""
    if prices is None:
        return 0.0
    assert usage.input_tokens is not None and usage.output_tokens is not None
    cached_price = (
        prices.input_per_mtok
        if prices.cached_input_per_mtok is None
        else prices.cached_input_per_mtok
    )
    fresh = max(usage.input_tokens - usage.cached_input_tokens, 0)
    total = (
        fresh * prices.input_per_mtok
        + usage.cached_input_tokens * cached_price
        + usage.output_tokens * prices.output_per_mtok
    )
    return total / 1_000_000


class History:
    """The messages of the conversation, trimmed by the context policy."""

    def __init__(self, opening: list[dict[str, Any]], keep_turns: int | None) -> None:
        self._opening = opening
        self._turns: list[list[dict[str, Any]]] = []
        self._keep = keep_turns
        self.call_ids: frozenset[str] = frozenset()
        """The tool call ids of every answer so far (see :func:`_distinct_ids`)."""

    def add_turn(self, turn: Turn, results: list[dict[str, Any]]) -> None:
        """One turn: the model's answer and the messages giving its tool calls' results."""
        self._turns.append([turn.assistant, *results])
        self.call_ids |= {call.id for call in turn.response.tool_calls}

    def messages(self) -> list[dict[str, Any]]:
        turns = self._turns if self._keep is None else self._turns[-self._keep :]
        return self._opening + [m for turn in turns for m in turn]


class ModelAgent(ABC):
    """A model adapter: the loop above, on one API. Subclasses speak the API."""

    api: ClassVar[str]
    """The adapter's short name, recorded with every model call."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @classmethod
    def from_system(cls, system: SystemSpec) -> Self:
        """Build the adapter from the whole system spec (what is hashed is what is called)."""
        settings = Settings.from_system(system)
        reserved = sorted(RESERVED_KEYS & set(settings.decoding))
        if reserved:
            raise SpecError(
                system.source, "model.decoding", f"{', '.join(reserved)}: set by the adapter"
            )
        if system.budgets.max_cost is not None and settings.prices is None:
            # Every call would cost 0: a budget in force on paper that no attempt can reach.
            raise SpecError(
                system.source,
                "budgets.max_cost",
                "the adapter prices each call from model.prices, which is unset: give the prices",
            )
        cls.check_settings(settings, system)
        agent = cls(settings)
        agent.warm_up()
        return agent

    def warm_up(self) -> None:
        """Make one request to a loopback server, once per process, before any attempt's clock
        starts: the SDK imports its HTTP stack on its first request, which spent the first
        attempt's time (see :func:`groundstate.whole_request.warm_up`)."""

        async def once(agent: ModelAgent) -> None:
            async with agent.open_client() as client:
                await agent.send(client, agent.request("", [{"role": "user", "content": "."}], []))

        def request(url: str) -> None:
            quick = dataclasses.replace(
                self.settings, base_url=url, api_key=NO_KEY, timeout=WARM_UP_SECONDS
            )
            asyncio.run(once(type(self)(quick)))

        warm_up(self.api, request)

    @classmethod
    def check_settings(cls, settings: Settings, system: SystemSpec) -> None:
        """Refuse settings the API cannot take, before any attempt runs (none by default)."""
        return None

    # --- what a subclass provides ----------------------------------------------------------

    @abstractmethod
    def open_client(self) -> Any:
        """A new SDK client (an async context manager) for one attempt's event loop."""

    def opening(self, session: Session) -> list[dict[str, Any]]:
        """The first messages: the user's request (both APIs take it as one user message)."""
        return [{"role": "user", "content": session.user_request}]

    @abstractmethod
    def request(
        self, instructions: str, messages: list[dict[str, Any]], tools: list[ToolSpec]
    ) -> dict[str, Any]:
        """The keyword arguments of one API call (no tools: a plain completion, as a model
        judge asks for)."""

    @abstractmethod
    async def send(self, client: Any, request: dict[str, Any]) -> Turn:
        """Make the call; raise :class:`ServingError` when it fails."""

    @abstractmethod
    def results(
        self, turn: Turn, outputs: list[tuple[ModelToolCall, str, bool]]
    ) -> list[dict[str, Any]]:
        """Messages giving the tool results back: (call, content, is_error) each."""

    # --- the loop -------------------------------------------------------------------------

    async def run(self, session: Session) -> str | None:
        tools = self._tools(session)
        history = History(self.opening(session), self.settings.context_turns)
        idle = 0
        async with self.open_client() as client:
            while True:
                turn = await self._ask(client, session, history, tools)
                if not turn.response.tool_calls:
                    # a refusal in its own field (Chat Completions') is the model's reply, as
                    # the Messages API's refusal text is
                    text = (turn.response.text or turn.response.refusal or "").strip()
                    return text or None
                outputs, acted = [], False
                calls = turn.response.tool_calls
                for number, call in enumerate(calls, start=1):
                    last = turn.last_call_cut and number == len(calls)
                    cut = str(turn.response.stop_reason) if last else None
                    content, is_error, took_step = await self._execute(session, call, cut)
                    outputs.append((call, content, is_error))
                    acted = acted or took_step
                history.add_turn(turn, self.results(turn, outputs))
                idle = 0 if acted else idle + 1
                if idle >= MAX_IDLE_TURNS:
                    session.give_up(f"the model took no valid action in {idle} turns in a row")

    def _tools(self, session: Session) -> list[ToolSpec]:
        tools = list(session.tools)
        if any(tool.name == TALK_TO_USER for tool in tools):
            raise HarnessCompatibilityError(
                f"the task has a tool named {TALK_TO_USER!r}, the adapter's built-in tool"
            )
        talk = ToolSpec(
            TALK_TO_USER,
            self.settings.talk_description,
            {
                "type": "object",
                "properties": {"message": {"type": "string", "description": "What to say."}},
                "required": ["message"],
                "additionalProperties": False,
            },
        )
        return [*tools, talk]

    async def _ask(
        self, client: Any, session: Session, history: History, tools: list[ToolSpec]
    ) -> Turn:
        """One model turn, retried on serving failures; every try goes in the trace."""
        request = self.request(session.instructions, history.messages(), tools)
        digest = hash_value(request)

        def record(try_number: int, started: float, error: ServingError) -> None:
            self._record(session, try_number, digest, started, error=error)

        remaining = getattr(session, "remaining", None)
        deadline = time.monotonic() + remaining if isinstance(remaining, int | float) else None
        try:
            turn, try_number, started = await self.ask_with_retries(
                client, request, record, deadline=deadline
            )
        except Exhausted as exc:
            raise self._failure(exc.error, exc.tries) from None
        turn = _distinct_ids(turn, history.call_ids)
        cost = cost_of(turn.usage, self.settings.prices) if turn.usage.known else None
        usage = turn.usage.model_copy(update={"cost": cost})
        self._record(session, try_number, digest, started, turn=turn, usage=usage)
        session.record_usage(
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, cost=usage.cost
        )
        return dataclasses.replace(turn, usage=usage)

    async def ask_with_retries(
        self,
        client: Any,
        request: dict[str, Any],
        on_error: Callable[[int, float, ServingError], None] = lambda *_: None,
        *,
        deadline: float | None = None,
        first_try: int = 1,
    ) -> tuple[Turn, int, float]:
        """Send *request*, retrying serving failures under the spec's policy: the answer, the
        try that got it and when that try started; :class:`Exhausted` when a failure is not
        retried or retries run out. *on_error* sees every failed try. *first_try*: the number
        of this call's first try, when earlier tries (answers the caller could not use) count
        against the same retries.

        A retry that could not start before *deadline* (the attempt's time limit, a monotonic
        time) is not waited for: the failure stands, so waiting out a rate limit never turns
        into the agent's time limit."""
        retries = self.settings.retries
        for try_number in range(first_try, retries.max_retries + 2):
            started = time.perf_counter()
            try:
                return await self.send(client, request), try_number, started
            except ServingError as raised:
                exc = raised.without(self.settings.api_key)
                on_error(try_number, started, exc)
                wait = self._backoff(try_number, exc.retry_after)
                too_late = deadline is not None and time.monotonic() + wait >= deadline
                if exc.kind not in _RETRIED or try_number > retries.max_retries or too_late:
                    raise Exhausted(exc, try_number) from None
                await asyncio.sleep(wait)
        raise AssertionError("unreachable: the last try raises")

    def _backoff(self, try_number: int, retry_after: float | None) -> float:
        retries = self.settings.retries
        wait: float = retries.backoff * 2.0 ** (try_number - 1)
        if retry_after is not None:
            wait = max(wait, retry_after)
        return min(wait, retries.max_backoff)

    def _failure(self, exc: ServingError, tries: int) -> Exception:
        message = describe_failure(self.api, exc)
        if exc.kind == "context_window":
            return ContextWindowExceeded(f"the conversation outgrew {outgrown(exc)}: {message}")
        if exc.kind == "rejected":
            # with no status: a 200 whose answer the adapter cannot use (see call_sdk)
            if exc.status_code is None:
                return HarnessCompatibilityError(f"the adapter cannot use the answer: {message}")
            return HarnessCompatibilityError(f"the API rejected the request: {message}")
        evidence = exc.evidence().model_dump() | {"tries": tries}
        if exc.kind == "auth":
            return ModelServingFailure(
                f"the API refused the credentials or the account: {message}", evidence
            )
        return ModelServingFailure(f"model serving failed after {tries} tries: {message}", evidence)

    def _record(
        self,
        session: Session,
        try_number: int,
        digest: str,
        started: float,
        *,
        turn: Turn | None = None,
        usage: ModelUsage | None = None,
        error: ServingError | None = None,
    ) -> None:
        recorder = getattr(session, "record_model_call", None)
        if not callable(recorder):
            return
        request_id = turn.request_id if turn else (error.request_id if error else None)
        recorder(
            ModelCall(
                provider=self.api,
                model=self.settings.model,
                try_number=try_number,
                request_digest=digest,
                request_id=request_id,
                served_model=turn.served_model if turn else None,
                response=turn.response if turn else None,
                # a failed try's usage was not reported: not known, never 0 (a provider may
                # bill a request that timed out)
                usage=usage or (UNKNOWN_USAGE if error else ModelUsage()),
                latency_ms=(time.perf_counter() - started) * 1000,
                error=error.evidence() if error else None,
            )
        )

    async def _execute(
        self, session: Session, call: ModelToolCall, cut: str | None = None
    ) -> tuple[str, bool, bool]:
        """Carry out one tool call: (content for the model, is it an error, took a step). A
        call the answer's end *cut* off (its stop reason) is refused as malformed arguments
        are, its text given as it is: what the model had not finished writing must not run
        (a partial input may still read as a whole call: ``{"amount": 10}``, cut short of
        1000)."""
        parsed: tuple[Any, str | None] = (
            (call.arguments, cut_off(cut)) if cut else parse_arguments(call.arguments)
        )
        args, problem = parsed
        if call.name == TALK_TO_USER:
            message = args.get("message") if isinstance(args, dict) else None
            if not isinstance(message, str) or not message.strip():
                why = problem or 'it takes {"message": "..."}'
                return f"error: {TALK_TO_USER} was not called correctly: {why}", True, False
            reply = await session.say(message)
            return (
                (reply if reply is not None else "(the user has left the conversation)"),
                False,
                True,
            )
        result = await session.call(call.name, args)
        if problem is not None and result.error_class != "unknown_tool":
            return f"error (invalid_arguments): {problem}", True, True
        return render_result(result), not result.ok, True


def cut_off(reason: str) -> str:
    """Why a tool call the answer's end cut off is refused (see :meth:`ModelAgent._execute`)."""
    return f"the answer was cut off in this call (stop reason {reason!r}): it was not made"


RESERVED_KEYS = frozenset(
    {"model", "messages", "tools", "system", "stream", "timeout", "extra_body", "extra_headers"}
)
"""Request keys the adapter sets itself; ``decoding`` may not name them."""


def sdk_keywords(method: Any) -> frozenset[str]:
    """The keyword arguments an SDK method takes (it changes between SDK versions)."""
    return frozenset(inspect.signature(method).parameters) - {"self"} - RESERVED_KEYS


def split_decoding(
    decoding: dict[str, Any], keywords: frozenset[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Decoding settings as SDK keyword arguments and, for keys the SDK does not name, extra
    request-body fields (the API itself then accepts or rejects them)."""
    known = {k: v for k, v in decoding.items() if k in keywords}
    extra = {k: v for k, v in decoding.items() if k not in keywords}
    return known, extra


def parse_arguments(raw: str) -> tuple[Any, str | None]:
    """The call's arguments, or the raw text and why it is not a JSON object."""
    if not raw.strip():
        return {}, None  # some servers send "" for a tool without parameters
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return raw, f"the arguments are not valid JSON ({exc.msg} at character {exc.pos})"
    except RecursionError:  # the model's own text: its mistake, not the adapter's crash
        return raw, "the arguments are JSON nested too deeply to read"
    if not isinstance(value, dict):
        # ``null`` goes on as the text: a session reads no arguments (None) as ``{}``, and ran
        # the tool while the model was told its call was refused
        shown = raw if value is None else value
        return shown, f"the arguments must be a JSON object, got {_kind_of(value)}"
    return value, None


def _kind_of(value: Any) -> str:
    """What JSON arguments that are no object are, for the model: a string holding an
    object's JSON text (encoded twice, by the model or a proxy) is named so, not run as the
    object it holds: what the call was is what the model sent."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            inner = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return "str"
        if isinstance(inner, dict):
            return "a string of JSON text (the object encoded twice): send the object itself"
    return type(value).__name__


def render_result(result: ToolResult) -> str:
    """A tool result as the text the model reads."""
    if result.ok:
        return output_text(result.output)
    return f"error ({result.error_class or 'tool_error'}): {result.error}"
