"""Bounds on a whole model request: its time (synchronous clients) and its answer's size.

httpx's timeouts (which the ``openai`` SDK's ``timeout`` sets) bound each connect, write and
read, not a request as a whole: a server that trickles its answer a byte at a time (its
headers or its body) keeps every read within its timeout and the request open for ever.
:func:`whole_request_client` gives a client each of whose reads may wait only for what is
left of its request's time limit, so the answer must be read whole within it, else
``ReadTimeout``, which the SDK retries and reports as any timeout. (The asynchronous adapters
bound their requests with ``asyncio.timeout``: :func:`groundstate.agents.model_loop.call_sdk`.)

No model writes an answer of :data:`MAX_ANSWER_BYTES`: a body past it is the server's
malfunction (:class:`AnswerTooLarge`), read no further. Held whole, a 40 MB answer was kept
twice in the run record and made the attempt's grading run out of time (a grader failure).

An SDK imports much of its HTTP stack on its first request (connection pool, HTTP/1.1, async
backends, some 60 modules): :func:`warm_up` makes that request when a client's owner is built,
so an attempt's first model call does not spend the agent's time on it.
"""

from __future__ import annotations

import importlib
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import suppress
from http.server import BaseHTTPRequestHandler
from socketserver import TCPServer
from types import ModuleType
from typing import Any

MAX_ANSWER_BYTES = 8 * 1024 * 1024
"""Bytes of one model answer read at most: the longest answers (128,000 output tokens, with
reasoning and JSON escapes) are some megabytes."""


class AnswerTooLarge(Exception):
    """A model answer's body went past :data:`MAX_ANSWER_BYTES` (the SDK wraps it as a lost
    connection; the adapters and the user model name it as what it is)."""


def sdk_httpx(sdk: ModuleType) -> ModuleType:
    """The httpx package *sdk* is built on (``httpx``, or ``httpx2`` in later SDKs), found
    from the base class of its default client rather than named here."""
    bases = [c.__module__ for c in sdk.DefaultHttpxClient.__mro__[1:]]
    name = next(m for m in bases if not m.startswith(sdk.__name__)).partition(".")[0]
    return importlib.import_module(name)


_CONTEXTS: dict[tuple[str, str | None, str | None], Any] = {}
_CONTEXTS_LOCK = threading.Lock()


def verifying_context(httpx: ModuleType) -> Any:
    """The SSL context *httpx* builds for a client by default (certificates verified against
    the system's store, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``), built once per process and
    setting, not for every client: loading the store costs 20-60 ms of CPU, and every attempt
    of a model agent builds a client or two. ``True`` (httpx builds its own) for an httpx
    without ``create_ssl_context``."""
    make = getattr(httpx, "create_ssl_context", None)
    if make is None:
        return True
    key = (httpx.__name__, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    with _CONTEXTS_LOCK:
        if key not in _CONTEXTS:
            _CONTEXTS[key] = make()
        return _CONTEXTS[key]


class _Deadline(threading.local):
    """When the request this thread is making must be read whole (a monotonic time)."""

    at: float | None = None


def whole_request_client(sdk: ModuleType, seconds: float) -> Any:
    """*sdk*'s default synchronous HTTP client, each answer (headers and body) read within
    *seconds* of its request being sent."""
    httpx = sdk_httpx(sdk)
    deadline = _Deadline()

    class WholeRequest(httpx.HTTPTransport):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__(verify=verifying_context(httpx))
            # httpx builds its connection pool itself; the pool reads through its backend
            # (httpcore's; another version without one keeps only the attempt's time limit).
            pool: Any = getattr(self, "_pool", None)
            backend = getattr(pool, "_network_backend", None)
            if backend is not None:
                pool._network_backend = _bounded_backend(backend, deadline, seconds)

        def handle_request(self, request: Any) -> Any:
            deadline.at = time.monotonic() + seconds
            response = super().handle_request(request)
            response.stream = Bounded(response.stream)
            return response

    class Bounded(httpx.SyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, stream: Any) -> None:
            self._stream = stream

        def __iter__(self) -> Iterator[bytes]:
            return _bounded(iter(self._stream))

        def close(self) -> None:
            self._stream.close()

    return sdk.DefaultHttpxClient(transport=WholeRequest())


def size_bounded_async_client(sdk: ModuleType) -> Any:
    """*sdk*'s default asynchronous HTTP client, reading no answer past
    :data:`MAX_ANSWER_BYTES`."""
    httpx = sdk_httpx(sdk)

    class Bounded(httpx.AsyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, stream: Any) -> None:
            self._stream = stream

        async def __aiter__(self) -> AsyncIterator[bytes]:
            read = 0
            async for chunk in self._stream:
                read += len(chunk)
                _check_size(read)
                yield chunk

        async def aclose(self) -> None:
            await self._stream.aclose()

    class BoundedTransport(httpx.AsyncHTTPTransport):  # type: ignore[misc,name-defined]
        async def handle_async_request(self, request: Any) -> Any:
            response = await super().handle_async_request(request)
            response.stream = Bounded(response.stream)
            return response

    return sdk.DefaultAsyncHttpxClient(transport=BoundedTransport(verify=verifying_context(httpx)))


def _bounded(chunks: Iterator[bytes]) -> Iterator[bytes]:
    read = 0
    for chunk in chunks:
        read += len(chunk)
        _check_size(read)
        yield chunk


def _check_size(read: int) -> None:
    if read > MAX_ANSWER_BYTES:
        raise AnswerTooLarge(f"an answer of more than {MAX_ANSWER_BYTES} bytes: no model's")


def _bounded_backend(backend: Any, deadline: _Deadline, seconds: float) -> Any:
    """*backend* whose streams wait, at each read, only for what is left until *deadline*."""
    httpcore = importlib.import_module(type(backend).__module__.partition(".")[0])

    class Stream(httpcore.NetworkStream):  # type: ignore[misc,name-defined]
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            left = None if deadline.at is None else deadline.at - time.monotonic()
            if left is not None and left <= 0:
                raise httpcore.ReadTimeout(f"no whole answer within {seconds:g}s")
            if left is not None:
                timeout = left if timeout is None else min(timeout, left)
            data: bytes = self._inner.read(max_bytes, timeout)
            return data

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._inner.write(buffer, timeout)

        def close(self) -> None:
            self._inner.close()

        def start_tls(self, *args: Any, **kwargs: Any) -> Any:
            return Stream(self._inner.start_tls(*args, **kwargs))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class Backend(httpcore.NetworkBackend):  # type: ignore[misc,name-defined]
        def connect_tcp(self, *args: Any, **kwargs: Any) -> Any:
            return Stream(backend.connect_tcp(*args, **kwargs))

        def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
            return Stream(backend.connect_unix_socket(*args, **kwargs))

        def sleep(self, seconds: float) -> None:
            backend.sleep(seconds)

    return Backend()


WARM_UP_SECONDS = 10.0
"""How long a warm-up request may take before it is left to finish on its own."""

_WARMED: set[str] = set()
_WARMING = threading.Lock()


def warm_up(name: str, request: Callable[[str], object]) -> None:
    """Call *request* (one request of an SDK client to the base URL it is given) once per
    process and *name*, on a thread of its own, against a loopback server answering HTTP 500
    at once; how it fails is ignored. Called where an adapter or a user model is built, before
    an attempt's clock starts: the SDK's first request imports its HTTP stack."""
    with _WARMING:  # held throughout: an attempt built meanwhile waits for the warm-up
        if name in _WARMED:
            return
        _WARMED.add(name)
        with suppress(OSError):  # no loopback socket: the first attempt pays, as before
            server = TCPServer(("127.0.0.1", 0), _Refusing)  # HTTPServer looks its name up
            serving = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
            serving.start()
            url = f"http://127.0.0.1:{server.server_address[1]}"
            asking = threading.Thread(target=_quietly, args=(request, url), daemon=True)
            asking.start()
            asking.join(WARM_UP_SECONDS)
            server.shutdown()
            server.server_close()


def _quietly(request: Callable[[str], object], url: str) -> None:
    with suppress(Exception):
        request(url)


class _Refusing(BaseHTTPRequestHandler):
    """Answers every request HTTP 500 with an error body, as an overloaded API would."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = b'{"error": {"message": "warm-up", "type": "server_error"}}'
        self.send_response(500)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""
