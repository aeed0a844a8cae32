"""The agent contract.

An agent is anything with ``async run(session) -> final message``. The session is the only
way it touches the world: :meth:`Session.call` goes through the tool gateway,
:meth:`Session.say` talks to the simulated user. A model adapter is a loop that asks a model
and calls ``session.call``; an external agent process is an adapter that serves
``session.call`` to it (e.g. over MCP). Neither changes the episode code.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the agent sees it."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolResult:
    """The answer to one tool call."""

    ok: bool
    output: Any = None
    error: str | None = None
    error_class: str | None = None
    """``invalid_arguments``, ``unknown_tool``, ``permission_denied`` or ``tool_error``."""


def output_text(output: Any) -> str:
    """A tool's output as the JSON text every protocol sends (a model's tool result, an MCP
    text content): a string is sent quoted, so a reader that parses the text gets the string
    back, not the object or number a string holding JSON text (``'{"a": 1}'``, ``"42"``)
    would read as. What JSON cannot hold is sent as its text (``default=str``)."""
    return json.dumps(output, ensure_ascii=False, default=str)


class Session(Protocol):
    """The agent's side of one attempt."""

    @property
    def instructions(self) -> str:
        """System prompt and the suite's policy."""
        ...

    @property
    def user_request(self) -> str: ...

    @property
    def tools(self) -> list[ToolSpec]: ...

    @property
    def seed(self) -> int: ...

    @property
    def rng(self) -> random.Random:
        """Seeded from the attempt's seed; use it for every random choice."""
        ...

    async def call(self, tool: str, args: dict[str, Any] | None = None) -> ToolResult: ...

    async def say(self, text: str) -> str | None:
        """Send a message to the user; returns the reply, or None once the user has left."""
        ...

    def record_usage(
        self,
        *,
        input_tokens: int | None = 0,
        output_tokens: int | None = 0,
        cost: float | None = 0.0,
    ) -> None:
        """Count usage against the budgets; ``None``: not known (the API reported none)."""
        ...

    def give_up(self, reason: str) -> NoReturn:
        """End the attempt as ``agent_failure/gave_up``."""
        ...

    # Optional: ``record_model_call(call: groundstate.trace.ModelCall) -> None`` keeps one
    # model request in the trace (the episode's session has it; model adapters use it when
    # present). It is not part of the protocol so that simpler sessions stay valid.


class Agent(Protocol):
    async def run(self, session: Session) -> str | None:
        """Work on the task; return the final message to the user (or None)."""
        ...
