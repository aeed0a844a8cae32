"""A whole-request time limit for an SDK's synchronous HTTP client.

httpx's timeouts (which the ``openai`` SDK's ``timeout`` sets) bound each connect, write and
read, not a request as a whole: a server that trickles its body a byte at a time keeps every
read within its timeout and the request open for ever. :func:`whole_request_client` gives a
client whose answers must be read whole within the time limit, else ``ReadTimeout``, which the
SDK retries and reports as any timeout. (The asynchronous adapters bound their requests with
``asyncio.timeout``: :func:`groundstate.agents.model_loop.call_sdk`.)
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any


def sdk_httpx(sdk: ModuleType) -> ModuleType:
    """The httpx package *sdk* is built on (``httpx``, or ``httpx2`` in later SDKs), found
    from the base class of its default client rather than named here."""
    bases = [c.__module__ for c in sdk.DefaultHttpxClient.__mro__[1:]]
    name = next(m for m in bases if not m.startswith(sdk.__name__)).partition(".")[0]
    return importlib.import_module(name)


def whole_request_client(sdk: ModuleType, seconds: float) -> Any:
    """*sdk*'s default synchronous HTTP client, each answer read within *seconds* of its
    request being sent."""
    httpx = sdk_httpx(sdk)

    class ReadUntil(httpx.SyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, stream: Any, deadline: float, request: Any) -> None:
            self._stream, self._deadline, self._request = stream, deadline, request

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self._stream:
                if time.monotonic() > self._deadline:
                    raise httpx.ReadTimeout(
                        f"no whole answer within {seconds:g}s", request=self._request
                    )
                yield chunk

        def close(self) -> None:
            self._stream.close()

    class WholeRequest(httpx.HTTPTransport):  # type: ignore[misc,name-defined]
        def handle_request(self, request: Any) -> Any:
            deadline = time.monotonic() + seconds
            response = super().handle_request(request)
            response.stream = ReadUntil(response.stream, deadline, request)
            return response

    return sdk.DefaultHttpxClient(transport=WholeRequest())
