"""An external agent program: the retail reference agent, reaching its tools over MCP.

groundstate starts this program once per attempt (see ``examples/systems/mcp-careful.yaml``)
and serves MCP on its stdin and stdout; the program is an MCP client built with the official
``mcp`` SDK. It does not import groundstate (inside the sandbox there is none): it reads the
user's request and seed from the environment, lists the tools, and runs the rule-based retail
agent of ``retail_agents.py`` (a sibling file) through a small session object whose calls are
MCP ``tools/call`` requests. Any MCP client in any language can take its place.

Usage (by groundstate): ``python mcp_agent.py [careful|hasty] [FAULT_RATE]``
"""

from __future__ import annotations

import json
import os
import random
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.server.stdio import stdio_server  # the transport is symmetric: our own stdio

sys.path.insert(0, str(Path(__file__).parent))
import retail_agents


@dataclass(frozen=True)
class Result:
    """What the retail agent expects from ``session.call`` (groundstate's ``ToolResult``)."""

    ok: bool
    output: Any = None
    error: str | None = None


class McpSession:
    """The part of groundstate's Session protocol the retail agent uses, over MCP."""

    def __init__(self, client: ClientSession, instructions: str) -> None:
        self.client = client
        self.instructions = instructions
        self.user_request = os.environ["GROUNDSTATE_USER_REQUEST"]
        self.seed = int(os.environ.get("GROUNDSTATE_SEED", "0"))
        self.rng = random.Random(self.seed)

    async def _call(self, name: str, args: dict[str, Any]) -> tuple[bool, str]:
        result = await self.client.call_tool(name, args)
        text = "".join(getattr(part, "text", "") for part in result.content)
        return not result.is_error, text

    async def call(self, tool: str, args: dict[str, Any] | None = None) -> Result:
        ok, text = await self._call(tool, args or {})
        if not ok:
            return Result(ok=False, error=text)
        try:
            return Result(ok=True, output=json.loads(text))
        except json.JSONDecodeError:
            return Result(ok=True, output=text)

    async def say(self, text: str) -> str | None:
        ok, reply = await self._call("send_message_to_user", {"text": text})
        if not ok:  # a refused message (not a string) is an error, not the user leaving
            raise RuntimeError(f"send_message_to_user was refused: {reply}")
        return None if reply == "(the user has left the conversation)" else reply

    def record_usage(self, **usage: float) -> None:
        """No model is called: nothing to report."""


async def main(kind: str, fault_rate: float) -> None:
    async with stdio_server() as (read, write):
        try:
            await solve(kind, fault_rate, read, write)
        except BaseException:
            # The SDK's stdio transport waits for the end of its input before it lets the
            # program exit, and groundstate closes that input only after ``finish``: on an
            # error, report it and leave at once (or the attempt runs into its time limit).
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)


async def solve(kind: str, fault_rate: float, read: Any, write: Any) -> None:
    async with ClientSession(read, write) as client:
        hello = await client.initialize()
        session = McpSession(client, hello.instructions or "")
        agent = getattr(retail_agents, kind)(fault_rate=fault_rate)
        final = await agent.run(session)
        if final is None:  # no final reply: leave without ``finish`` (it would record "")
            os._exit(0)
        await client.call_tool("finish", {"final_reply": final})


if __name__ == "__main__":
    kind = sys.argv[1] if len(sys.argv) > 1 else "careful"
    rate = float(sys.argv[2]) if len(sys.argv) > 2 else 0.1
    anyio.run(main, kind, rate)
