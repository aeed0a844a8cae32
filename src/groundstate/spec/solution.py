"""Solutions: scripted trajectories that prove a task (oracle, alternative, known-bad)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from groundstate.spec.task import Strict


class Step(Strict):
    """One scripted step: a tool call, a message to the user, or the final message."""

    call: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    say: str | None = None
    finish: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Step:
        if sum(x is not None for x in (self.call, self.say, self.finish)) != 1:
            raise ValueError("a step needs exactly one of: call, say, finish")
        if self.args and self.call is None:
            raise ValueError("'args' belongs to a 'call' step")
        return self


class Solution(Strict):
    """A scripted trajectory for one task."""

    kind: Literal["oracle", "alternative", "known_bad"]
    description: str = ""
    fails_by: str | None = None
    """Known-bad only: ``outcome`` (some outcome assertion fails), ``outcome:<id>`` (that
    one fails), ``constraint:<id>`` or a terminal reason such as
    ``agent_failure/prohibited_action``."""
    steps: list[Step]

    @model_validator(mode="after")
    def _fails_by_matches_kind(self) -> Solution:
        if self.kind == "known_bad" and not self.fails_by:
            raise ValueError("a known_bad solution must declare 'fails_by'")
        if self.kind != "known_bad" and self.fails_by:
            raise ValueError("only a known_bad solution declares 'fails_by'")
        return self
