"""A whole-request time limit for an SDK's synchronous HTTP client.

httpx's timeouts (which the ``openai`` SDK's ``timeout`` sets) bound each connect, write and
read, not a request as a whole: a server that trickles its answer a byte at a time (its
headers or its body) keeps every read within its timeout and the request open for ever.
:func:`whole_request_client` gives a client each of whose reads may wait only for what is
left of its request's time limit, so the answer must be read whole within it, else
``ReadTimeout``, which the SDK retries and reports as any timeout. (The asynchronous adapters
bound their requests with ``asyncio.timeout``: :func:`groundstate.agents.model_loop.call_sdk`.)
"""

from __future__ import annotations

import importlib
import threading
import time
from types import ModuleType
from typing import Any


def sdk_httpx(sdk: ModuleType) -> ModuleType:
    """The httpx package *sdk* is built on (``httpx``, or ``httpx2`` in later SDKs), found
    from the base class of its default client rather than named here."""
    bases = [c.__module__ for c in sdk.DefaultHttpxClient.__mro__[1:]]
    name = next(m for m in bases if not m.startswith(sdk.__name__)).partition(".")[0]
    return importlib.import_module(name)


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
            super().__init__()
            # httpx builds its connection pool itself; the pool reads through its backend.
            pool = self._pool
            pool._network_backend = _bounded_backend(pool._network_backend, deadline, seconds)

        def handle_request(self, request: Any) -> Any:
            deadline.at = time.monotonic() + seconds
            return super().handle_request(request)

    return sdk.DefaultHttpxClient(transport=WholeRequest())


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
