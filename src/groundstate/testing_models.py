"""Loopback model servers for tests: an OpenAI-compatible and an Anthropic-compatible API.

They answer on ``127.0.0.1`` from a script, so the official SDK clients (and the built-in
adapters ``openai-chat`` and ``anthropic-messages``) run end to end without a network::

    with OpenAICompatibleServer([Reply(tool_calls=[ToolCall("get_order", {"order_id": "O-1"})]),
                                 Fail(429), Reply(text="Done.")]) as server:
        system = ...  # model.base_url: server.base_url
        ...
    server.requests   # the JSON bodies received, in order

A script is a list of answers, taken in order, or a function given each request's JSON body
that returns one (:func:`by_turn` makes one that replays a list in every attempt). An answer
is a :class:`Reply` (text and tool calls, with usage), a :class:`Fail` (an HTTP error with the
API's error body) or a :class:`Raw` body (for malformed output); each may wait ``delay``
seconds first (to make the client time out). A request past
the end of a list gets HTTP 500 and sets :attr:`ScriptedModelServer.exhausted`.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar

from groundstate.spec.solution import Solution, Step
from groundstate.spec.suite import Suite

__all__ = [
    "AnthropicCompatibleServer",
    "Fail",
    "OpenAICompatibleServer",
    "Raw",
    "Reply",
    "ScriptedModelServer",
    "ToolCall",
    "by_turn",
    "script_from_steps",
    "solving_model",
]

TALK_TO_USER = "talk_to_user"  # the adapters' built-in tool (groundstate.agents.model_loop)


@dataclass(frozen=True)
class ToolCall:
    """A tool call the scripted model makes."""

    name: str
    args: dict[str, Any] | None = None
    raw: str | None = None
    """The arguments as raw text instead of ``args`` (e.g. malformed JSON)."""

    def arguments_text(self) -> str:
        return self.raw if self.raw is not None else json.dumps(self.args or {})

    def arguments_value(self) -> Any:
        """For APIs that send parsed input: ``args``, or the raw text as a string."""
        return self.raw if self.raw is not None else (self.args or {})


@dataclass(frozen=True)
class Reply:
    """A successful answer: text and/or tool calls, with the usage the API reports."""

    text: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    input_tokens: int = 100
    """All prompt tokens, cached ones included."""
    output_tokens: int = 20
    """All generated tokens, reasoning ones included."""
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    delay: float = 0.0
    model: str | None = None
    """The model the answer says served it (None: the one requested, as an API echoes it)."""


@dataclass(frozen=True)
class Fail:
    """An HTTP error with the API's error body (429, 500, 400...)."""

    status: int
    message: str = "scripted failure"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    code: str | None = None
    """The error's ``code`` in the body (e.g. ``content_filter``), where the API has one."""


@dataclass(frozen=True)
class Raw:
    """A body sent as it is (for malformed output): text is sent as UTF-8, bytes unchanged
    (a body that is not UTF-8)."""

    body: str | bytes
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    """Headers sent besides the defaults; a ``content-type`` here replaces
    ``application/json`` (``text/event-stream`` for a streaming-shaped body)."""
    cut_at: int | None = None
    """Send only this many bytes of the body, under the whole body's ``content-length``, then
    close the connection: a connection lost mid-body."""


Answer = Reply | Fail | Raw
Script = Sequence[Answer] | Callable[[dict[str, Any]], Answer]


def script_from_steps(steps: Solution | Sequence[Step]) -> list[Answer]:
    """A script that makes the model follow a solution's steps, one tool call per turn:
    ``call`` steps become tool calls, ``say`` steps ``talk_to_user`` calls, and ``finish``
    the final text."""
    answers: list[Answer] = []
    for step in steps.steps if isinstance(steps, Solution) else steps:
        if step.call is not None:
            answers.append(Reply(tool_calls=[ToolCall(step.call, dict(step.args))]))
        elif step.say is not None:
            answers.append(Reply(tool_calls=[ToolCall(TALK_TO_USER, {"message": step.say})]))
        else:
            answers.append(Reply(text=step.finish))
    return answers


def by_turn(answers: Sequence[Answer]) -> Callable[[dict[str, Any]], Answer]:
    """A script that answers each request by its turn in the conversation (the number of
    assistant messages the request carries), so that every attempt, the batch runner's smoke
    run included, gets the same answers. Past the end it answers with a 500."""

    def answer(request: dict[str, Any]) -> Answer:
        turn = sum(m.get("role") == "assistant" for m in request.get("messages", []))
        return answers[turn] if turn < len(answers) else Fail(500, "script exhausted")

    return answer


def solving_model(suite: Suite, solution: str = "oracle") -> Callable[[dict[str, Any]], Answer]:
    """A script that plays each task's *solution* (by default its oracle): the task is found
    by the user's request in the conversation, the step by the turn (see :func:`by_turn`).
    A request for no known task gets a 400."""
    scripts = {
        task.user_request: by_turn(script_from_steps(suite.solutions[task_id][solution]))
        for task_id, task in suite.tasks.items()
        if solution in suite.solutions.get(task_id, {})
    }

    def answer(request: dict[str, Any]) -> Answer:
        users = [m for m in request.get("messages", []) if m.get("role") == "user"]
        opening = users[0].get("content") if users else None
        script = scripts.get(opening) if isinstance(opening, str) else None
        return Fail(400, "no task has this request") if script is None else script(request)

    return answer


class ScriptedModelServer:
    """A model API on ``127.0.0.1`` answering from a script; use it as a context manager."""

    path: ClassVar[str]
    request_id_header: ClassVar[str]

    def __init__(self, script: Script) -> None:
        self._script = script
        self._next = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self.requests: list[dict[str, Any]] = []
        """The JSON bodies received, in order."""
        self.headers: list[dict[str, str]] = []
        """The headers of each request (the API key among them: test use only)."""
        self.exhausted = False
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The ``model.base_url`` to give the adapter."""
        raise NotImplementedError

    def __enter__(self) -> ScriptedModelServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _serve(self) -> None:
        # A short poll: shutdown() waits for the next one (0.5 s by default).
        self._server.serve_forever(poll_interval=0.02)

    def close(self) -> None:
        self._closing.set()  # wakes delayed answers
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    # --- answering ----------------------------------------------------------------------

    def _answer_for(self, body: dict[str, Any]) -> Answer | None:
        with self._lock:
            self.requests.append(body)
            if callable(self._script):
                return self._script(body)
            if self._next >= len(self._script):
                self.exhausted = True
                return None
            answer = self._script[self._next]
            self._next += 1
            return answer

    def render(self, reply: Reply, request: dict[str, Any], number: int) -> dict[str, Any]:
        """The API's success body for *reply*."""
        raise NotImplementedError

    def invalid(self, request: dict[str, Any]) -> str | None:
        """Why the API refuses *request* (HTTP 400) whatever the script says, if it does."""
        return None

    def error_body(self, fail: Fail) -> dict[str, Any]:
        raise NotImplementedError

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    body = {}
                if self.path.split("?")[0] != server.path:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                refused = server.invalid(body)
                if refused is not None:
                    with server._lock:
                        server.requests.append(body)
                    self._send(400, server.error_body(Fail(400, refused)), len(server.requests))
                    return
                answer = server._answer_for(body)
                number = len(server.requests)
                if answer is not None and answer.delay and server._closing.wait(answer.delay):
                    return
                if answer is None:
                    self._send(500, server.error_body(Fail(500, "script exhausted")), number)
                elif isinstance(answer, Fail):
                    self._send(answer.status, server.error_body(answer), number, answer.headers)
                elif isinstance(answer, Raw):
                    self._send_text(
                        answer.status, answer.body, number, answer.headers, answer.cut_at
                    )
                else:
                    self._send(200, server.render(answer, body, number), number)

            def _send(
                self,
                status: int,
                body: dict[str, Any],
                number: int = 0,
                headers: dict[str, str] | None = None,
            ) -> None:
                self._send_text(status, json.dumps(body), number, headers)

            def _send_text(
                self,
                status: int,
                text: str | bytes,
                number: int,
                headers: dict[str, str] | None = None,
                cut_at: int | None = None,
            ) -> None:
                data = text if isinstance(text, bytes) else text.encode()
                named = {name.lower() for name in headers or {}}
                with suppress(OSError):  # the client gave up (a timeout under test)
                    self.send_response(status)
                    if "content-type" not in named:
                        self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.send_header(server.request_id_header, f"req_{number}")
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data if cut_at is None else data[:cut_at])
                if cut_at is not None:  # the connection is lost before the body's end
                    self.close_connection = True
                    with suppress(OSError):
                        self.wfile.flush()
                        self.connection.shutdown(socket.SHUT_RDWR)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: tests read :attr:`requests` instead."""

        return Handler


class OpenAICompatibleServer(ScriptedModelServer):
    """``POST /v1/chat/completions`` as OpenAI (and vLLM, Ollama...) answer it."""

    path = "/v1/chat/completions"
    request_id_header = "x-request-id"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def render(self, reply: Reply, request: dict[str, Any], number: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{number}_{i}",
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_text()},
                }
                for i, call in enumerate(reply.tool_calls)
            ]
        return {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": reply.model or request.get("model", "scripted"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": reply.input_tokens,
                "completion_tokens": reply.output_tokens,
                "total_tokens": reply.input_tokens + reply.output_tokens,
                "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
                "completion_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
            },
        }

    def error_body(self, fail: Fail) -> dict[str, Any]:
        return {"error": {"message": fail.message, "type": "scripted_error", "code": fail.code}}


class AnthropicCompatibleServer(ScriptedModelServer):
    """``POST /v1/messages`` as the Anthropic API answers it."""

    path = "/v1/messages"
    request_id_header = "request-id"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def render(self, reply: Reply, request: dict[str, Any], number: int) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        content.extend(
            {
                "type": "tool_use",
                "id": f"toolu_{number}_{i}",
                "name": call.name,
                "input": call.arguments_value(),
            }
            for i, call in enumerate(reply.tool_calls)
        )
        return {
            "id": f"msg_{number}",
            "type": "message",
            "role": "assistant",
            "model": reply.model or request.get("model", "scripted"),
            "content": content,
            "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": reply.input_tokens - reply.cached_tokens,
                "output_tokens": reply.output_tokens,
                "cache_read_input_tokens": reply.cached_tokens,
                "cache_creation_input_tokens": 0,
            },
        }

    def invalid(self, request: dict[str, Any]) -> str | None:
        """As the API: a ``tool_use`` id repeated anywhere in the history is refused, and so
        is a thinking block's ``signature`` that is given but not a string."""
        seen: set[Any] = set()
        for m, message in enumerate(request.get("messages") or []):
            content = message.get("content") if isinstance(message, dict) else None
            for c, block in enumerate(content if isinstance(content, list) else []):
                if not isinstance(block, dict):
                    continue
                signature = block.get("signature", "")
                if block.get("type") == "thinking" and not isinstance(signature, str):
                    return f"messages.{m}.content.{c}.thinking.signature: Input should be a string"
                if block.get("type") != "tool_use":
                    continue
                if block.get("id") in seen:
                    return f"messages.{m}.content.{c}: `tool_use` ids must be unique"
                seen.add(block.get("id"))
        return None

    def error_body(self, fail: Fail) -> dict[str, Any]:
        kind = "rate_limit_error" if fail.status == 429 else "invalid_request_error"
        return {"type": "error", "error": {"type": kind, "message": fail.message}}
