"""The scripted agent: replays a solution's steps (oracle, alternative or known-bad)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from groundstate.agents.base import Session
from groundstate.spec.solution import Solution, Step


@dataclass(frozen=True)
class RecordedCall:
    """A tool call made again with its arguments as a trace recorded them, an object or not.
    A solution's step holds an object only, but an agent's call with other arguments (a
    model's broken JSON, a list) was refused and took a step: a replay of the trajectory
    that left it out is not the trajectory (``diagnosis.regrade``)."""

    tool: str
    args: Any


@dataclass(frozen=True)
class RecordedUsage:
    """Model usage reported again as a run recorded it, so that a replay under the run's
    budgets stops as the run did (``agent_failure/budget``). ``None``: the run's record does
    not know it, reported as not known (never as 0: a budget that cannot be checked stops the
    replay as it stopped the run)."""

    input_tokens: int | None
    output_tokens: int | None
    cost: float | None


@dataclass(frozen=True)
class RecordedGiveUp:
    """The agent's giving up, with the reason it gave, as a run recorded it."""

    reason: str


Replayed = Step | RecordedCall | RecordedUsage | RecordedGiveUp
"""What a :class:`ScriptedAgent` replays: a solution's steps, or what a trace recorded."""


class ScriptedAgent:
    """Replays fixed steps whatever the answers; ends early if the user leaves, unless
    *to_the_end*: a recorded trajectory goes on as the agent went on (its calls after the
    user left are part of it)."""

    def __init__(self, steps: Sequence[Replayed], *, to_the_end: bool = False) -> None:
        self.steps = steps
        self.to_the_end = to_the_end

    @classmethod
    def from_solution(cls, solution: Solution) -> ScriptedAgent:
        return cls(solution.steps)

    async def run(self, session: Session) -> str | None:
        final: str | None = None
        for step in self.steps:
            if isinstance(step, RecordedCall):
                await session.call(step.tool, step.args)
            elif isinstance(step, RecordedUsage):
                session.record_usage(
                    input_tokens=step.input_tokens,
                    output_tokens=step.output_tokens,
                    cost=step.cost,
                )
            elif isinstance(step, RecordedGiveUp):
                session.give_up(step.reason)
            elif step.call is not None:
                await session.call(step.call, dict(step.args))
            elif step.say is not None:
                if await session.say(step.say) is None and not self.to_the_end:
                    break
            else:
                final = step.finish
        return final
