"""The agent side of ``mcp-command``: run a groundstate Python agent as an external program.

``python -m groundstate.mcp_client FILE.py:factory ['{"param": 1}']`` loads an agent exactly
as a system file's ``entry`` would and runs it against the MCP server groundstate serves on the
program's stdio, through :class:`McpSession`, an implementation of the
:class:`~groundstate.agents.base.Session` protocol over the official MCP client. The same agent
then runs in-process or sandboxed, with the same seed and so the same choices:

```yaml
orchestration_loop:
  entry: mcp-command
  params: {command: ["{python}", -m, groundstate.mcp_client, agent.py:my_agent]}
```
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
import traceback
from contextlib import suppress
from pathlib import Path
from typing import Any, NoReturn

from groundstate.agents.base import ToolResult, ToolSpec
from groundstate.errors import HarnessCompatibilityError
from groundstate.returned import AgentRaised, type_name
from groundstate.trace import ModelCall

LEFT = "(the user has left the conversation)"
BRIDGE_NAMES = frozenset({"send_message_to_user", "finish", "give_up", "report_usage"})
ERROR_CLASSES = ("invalid_arguments", "unknown_tool", "permission_denied", "tool_error")
RAW_ARGUMENTS = "groundstate_raw_arguments"
"""The one key of the object that carries a call's arguments that are not an object (a model's
broken JSON as its text, a list): MCP's arguments are an object, so they are sent wrapped, and
the server unwraps them to be refused and recorded as they are, as in-process."""


class McpSession:
    """The Session protocol over an MCP client session (``mcp.client.session.ClientSession``)."""

    def __init__(self, client: Any, instructions: str, tools: list[ToolSpec]) -> None:
        self._client = client
        self._instructions = instructions
        self._tools = tools
        self._seed = int(os.environ.get("GROUNDSTATE_SEED", "0"))
        self._usage: dict[str, float] = {}
        self._model_calls: list[dict[str, Any]] = []
        self._sending: asyncio.Task[None] | None = None
        """A report of a failed model call under way (see :meth:`record_model_call`)."""
        self._mismatch: HarnessCompatibilityError | None = None
        """A usage report that broke the protocol, latched as in-process: raised by every
        later call and reported when the agent is done (see :func:`_run`)."""
        self._rng = random.Random(self._seed)

    @classmethod
    async def open(cls, client: Any) -> McpSession:
        """Initialise *client* and read the tools (the bridge's own tools left out)."""
        hello = await client.initialize()
        listed = await client.list_tools()
        tools = [
            ToolSpec(t.name, t.description or "", dict(t.input_schema))
            for t in listed.tools
            if t.name not in BRIDGE_NAMES
        ]
        return cls(client, hello.instructions or "", tools)

    @property
    def instructions(self) -> str:
        return self._instructions

    @property
    def user_request(self) -> str:
        return os.environ.get("GROUNDSTATE_USER_REQUEST", "")

    @property
    def tools(self) -> list[ToolSpec]:
        return self._tools

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def rng(self) -> random.Random:
        return self._rng

    @property
    def remaining(self) -> float | None:
        """Seconds before the program is killed at the attempt's time limit
        (``$GROUNDSTATE_DEADLINE``), or None when it is not given: a model adapter waits out
        no retry past it, as in-process (see ``ModelAgent.ask_with_retries``)."""
        try:
            deadline = float(os.environ["GROUNDSTATE_DEADLINE"])
        except (KeyError, ValueError):
            return None
        return deadline - time.time()

    async def call(self, tool: str, args: dict[str, Any] | None = None) -> ToolResult:
        if tool in BRIDGE_NAMES:
            # Not a tool of the task (``open`` leaves them out): sent, the server's bridge
            # would take it, and a model's made-up ``finish`` or ``give_up`` call ended the
            # attempt where the same agent in-process gets an unknown tool and goes on.
            return ToolResult(ok=False, error=f"unknown tool {tool!r}", error_class="unknown_tool")
        # Sent as it is, MCP's client refused anything but an object before it left: the
        # program crashed (agent_failure/crashed) on a model's broken JSON, which in-process
        # is a refused call, recorded, taking its step, and the attempt goes on.
        sent = {} if args is None else args if isinstance(args, dict) else {RAW_ARGUMENTS: args}
        ok, text = await self._call(tool, sent)
        if not ok:
            error_class, _, message = text.partition(": ")
            if error_class not in ERROR_CLASSES:
                error_class, message = "tool_error", text
            return ToolResult(ok=False, error=message, error_class=error_class)
        try:
            return ToolResult(ok=True, output=json.loads(text))
        except json.JSONDecodeError:
            return ToolResult(ok=True, output=text)

    async def say(self, text: str) -> str | None:
        """The user's reply, or None once the user has left. A message that is not a ``str``
        is refused as in-process (a protocol mismatch, ``harness_compatibility_failure``), and
        a refused call is an error: both were read as the user's leaving, and changed the
        conversation instead of telling the agent its call was wrong."""
        if not issubclass(type(text), str):
            raise HarnessCompatibilityError(
                f"protocol mismatch: a message must be a str, got {type_name(type(text))}"
            )
        ok, reply = await self._call("send_message_to_user", {"text": text})
        if not ok:
            raise RuntimeError(f"send_message_to_user was refused: {reply}")
        return None if reply == LEFT else reply

    def record_usage(
        self,
        *,
        input_tokens: int | None = 0,
        output_tokens: int | None = 0,
        cost: float | None = 0.0,
    ) -> None:
        """Kept until the next call, which reports it first (``report_usage``). A report that
        breaks the protocol (a negative, NaN or non-number figure) is a protocol mismatch,
        latched, as in-process: refused by the bridge when sent, it was dropped, and the
        program went on with usage that never counted."""
        from groundstate.episode import odd_usage

        self._raise_if_mismatched()
        odd = odd_usage(input_tokens, output_tokens, cost)
        if odd is not None:
            self._mismatch = HarnessCompatibilityError(f"protocol mismatch: {odd}")
            self._raise_if_mismatched()
        if input_tokens is None or output_tokens is None or cost is None:
            # not known: reported as such (``unknown_calls``), not as 0
            self._usage["unknown_calls"] = self._usage.get("unknown_calls", 0) + 1
            return
        for key, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
            self._usage[key] = self._usage.get(key, 0) + value
        self._usage["cost"] = self._usage.get("cost", 0.0) + cost

    def record_model_call(self, call: ModelCall) -> None:
        """Kept until the next call, which reports it first (``report_usage``'s
        ``model_calls``): the run's trace keeps the program's model calls, every try, as it
        keeps an in-process adapter's."""
        kept = ModelCall.model_validate(dict(call))
        self._model_calls.append(kept.model_dump(mode="json"))
        if kept.error is not None:
            # A failed try goes at once: the adapter may still be retrying it when the program
            # is killed at the time limit, which is then the provider's, as in-process
            # (``environment_failure/model_serving``), only if the trace shows the failure.
            with suppress(RuntimeError):  # no running loop: it goes with the next call
                self._sending = asyncio.get_running_loop().create_task(
                    self._report_quietly(self._sending)
                )

    async def _report_quietly(self, before: asyncio.Task[None] | None) -> None:
        if before is not None:
            await before
        with suppress(Exception):  # the attempt stopped: the next call raises it
            await self._report()

    async def flush_usage(self) -> None:
        """Report the usage and model calls recorded since the last call."""
        sending, self._sending = self._sending, None
        if sending is not None:
            await sending
        await self._report()

    async def _report(self) -> None:
        if any(self._usage.values()) or self._model_calls:
            usage, self._usage = self._usage, {}
            calls, self._model_calls = self._model_calls, []
            await self._send("report_usage", usage | ({"model_calls": calls} if calls else {}))

    def give_up(self, reason: str) -> NoReturn:
        raise _GiveUp(reason)

    def _raise_if_mismatched(self) -> None:
        if self._mismatch is not None:
            raise HarnessCompatibilityError(str(self._mismatch))

    async def _call(self, name: str, args: dict[str, Any]) -> tuple[bool, str]:
        self._raise_if_mismatched()
        await self.flush_usage()
        return await self._send(name, args)

    async def _send(self, name: str, args: dict[str, Any]) -> tuple[bool, str]:
        result = await self._client.call_tool(name, args)
        if result.is_error and str(result_text(result)).startswith("the attempt has stopped"):
            raise _Stopped(result_text(result))
        return not result.is_error, result_text(result)


class _GiveUp(Exception):
    pass


class _Stopped(Exception):
    """The attempt stopped (a limit, a prohibited action): the server will kill us anyway."""


def result_text(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


async def serve_agent(agent: Any) -> None:
    """Run *agent* (``async run(session)``) against groundstate's server: over streamable HTTP
    at ``$GROUNDSTATE_MCP_URL`` when it is set (``transport: http``), else on our stdio."""
    url = os.environ.get("GROUNDSTATE_MCP_URL")
    try:
        async with _transport(url) as (read, write):
            await _run(agent, read, write)
    except BaseException:
        _leave()


def _leave(code: int = 1) -> NoReturn:
    """Exit at once with *code* (1: with the traceback on stderr): the stdio transport waits
    for the end of its input before the process can exit, and the server closes it only after
    ``finish`` (an error left to unwind through the transport held the program to its time
    limit)."""
    if code:
        traceback.print_exc()
    sys.stderr.flush()
    os._exit(code)


def _transport(url: str | None) -> Any:
    if url:
        from mcp.client.streamable_http import streamable_http_client

        return streamable_http_client(url)
    from mcp.server.stdio import stdio_server  # symmetric: message streams on our own stdio

    return stdio_server()


async def _run(agent: Any, read: Any, write: Any) -> None:
    from mcp.client.session import ClientSession

    async with ClientSession(read, write) as client:
        session = await McpSession.open(client)
        try:
            final = await agent.run(session)
            session._raise_if_mismatched()  # caught by the agent, it stands all the same
            await session.flush_usage()
        except _Stopped:
            return
        except Exception as exc:
            # Usage recorded before giving up or crashing is the system's all the same (it
            # was lost: reported only before the next call); a budget it passes outranks.
            with suppress(_Stopped):
                await session.flush_usage()
                ending = _give_up_arguments(session._mismatch or exc)  # the latched one first
                if ending is None:
                    _leave()  # the agent's crash, inside the transport (see _leave)
                await client.call_tool("give_up", ending)
            return
        if final is None or final == "":  # no final reply: the program exits without one,
            _leave(0)  # as documented (``finish`` takes a str: it recorded "" as the reply)
        if not isinstance(final, str):  # as in-process: a protocol mismatch, not its repr
            kind = type(final).__name__
            reason = f"protocol mismatch: run() returned {kind}, not a str or None"
            ending = {"reason": reason, "failure": "harness_compatibility", "evidence": {}}
            await client.call_tool("give_up", ending)
            return
        await client.call_tool("finish", {"final_reply": final})


FAILURES = {
    "environment_failure/model_serving": "model_serving",
    "environment_failure/agent": "environment",
    "harness_compatibility_failure": "harness_compatibility",
    "harness_compatibility_failure/context_window": "context_window",
}
"""``give_up``'s ``failure`` for what an agent raised, by the terminal reason it has in-process."""


def _give_up_arguments(exc: Exception) -> dict[str, Any] | None:
    """``give_up``'s arguments for what the agent raised: its own giving up, or a failure not
    of its decisions named as the agent would have it in-process (a model adapter's
    ``ModelServingFailure`` is ``failure: model_serving``, with its evidence; it crashed the
    program, ``agent_failure/crashed``); ``None`` for a crash."""
    if isinstance(exc, _GiveUp):
        return {"reason": str(exc)}
    raised = AgentRaised(exc)
    failure = FAILURES.get(raised.reason)
    if failure is None:
        return None
    traceback.print_exc()  # for the record's agent_stderr.txt, as a crash's is
    return {"reason": raised.message, "failure": failure, "evidence": raised.evidence}


def load(entry: str, params: dict[str, Any]) -> Any:
    """The agent named by *entry* (``file.py:name`` or ``module:name``), built as a system
    file's ``orchestration_loop`` would build it."""
    from groundstate.agents.python import load_agent
    from groundstate.spec.system import AgentEntry, HarnessSection, SystemSpec

    loop = AgentEntry(entry=entry, params=params)
    system = SystemSpec(harness=HarnessSection(orchestration_loop=loop))
    system._base_dir = Path.cwd()
    return load_agent(system)


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    params = json.loads(argv[1]) if len(argv) > 1 else {}
    import anyio

    anyio.run(serve_agent, load(argv[0], params))


if __name__ == "__main__":
    main(sys.argv[1:])
