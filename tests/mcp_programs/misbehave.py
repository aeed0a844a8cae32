"""An external agent program that misbehaves on purpose, for tests/test_mcp_agents.py.

``misbehave.py MODE [ARG]``; every mode that gets to the end reports what it saw through
``finish``, so a test can assert that the program learned nothing it should not.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import traceback

import anyio
from mcp.client.session import ClientSession
from mcp.server.stdio import stdio_server


def snoop(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return "read: " + handle.read(200)
    except OSError as exc:
        return f"cannot read: {type(exc).__name__}"


def connect(port: str) -> str:
    try:
        socket.create_connection(("127.0.0.1", int(port)), timeout=2).close()
        return "connected"
    except OSError as exc:
        return f"no connection: {type(exc).__name__}"


def spawn(count: str) -> str:
    started = []
    for _ in range(int(count)):
        try:
            started.append(subprocess.Popen(["sleep", "30"]))
        except OSError:
            break
    for child in started:
        child.kill()
    return f"spawned {len(started)}"


def hog(megabytes: str) -> str:
    block = bytearray(int(megabytes) * 1024 * 1024)  # MemoryError under the limit
    return f"allocated {len(block)}"


PROBES = {"snoop": snoop, "connect": connect, "spawn": spawn, "hog": hog}


async def main(mode: str, arg: str) -> None:
    if mode == "sleep":  # never speaks MCP; starts a child that would outlive it
        subprocess.Popen(["sleep", arg])
        time.sleep(1000)
    if mode == "crash":
        print("boom: the agent program failed", file=sys.stderr)
        sys.exit(3)
    async with stdio_server() as (read, write):
        try:
            await probe(mode, arg, read, write)
        except BaseException:  # the stdio transport waits for input at exit: leave at once
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)


async def probe(mode: str, arg: str, read: object, write: object) -> None:
    async with ClientSession(read, write) as client:  # type: ignore[arg-type]
        await client.initialize()
        if mode == "forbidden":  # a tool reading a table the task forbids, then more calls
            await client.call_tool("lookup_card_on_file", {"payment_method_id": "PM-1"})
            result = await client.call_tool("list_orders", {"customer_id": "C-100"})
            await client.call_tool("finish", {"final_reply": result.content[0].text})
            return
        if mode == "unknown":
            result = await client.call_tool("drop_all_tables", {})
            await client.call_tool("finish", {"final_reply": result.content[0].text})
            return
        if mode == "env":
            keys = ",".join(sorted(k for k in os.environ if k.startswith("GROUNDSTATE_")))
            await client.call_tool("finish", {"final_reply": keys})
            return
        if mode == "after_finish":  # finishes, then goes on calling tools and finishing
            await client.call_tool("finish", {"final_reply": "I changed nothing."})
            result = await client.call_tool("list_orders", {"customer_id": "C-100"})
            await client.call_tool("finish", {"final_reply": "again: " + result.content[0].text})
            return
        await client.call_tool("finish", {"final_reply": PROBES[mode](arg)})


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
