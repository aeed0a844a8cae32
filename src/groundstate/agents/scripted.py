"""The scripted agent: replays a solution's steps (oracle, alternative or known-bad)."""

from __future__ import annotations

from groundstate.agents.base import Session
from groundstate.spec.solution import Solution, Step


class ScriptedAgent:
    """Replays fixed steps whatever the answers; ends early if the user leaves."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps

    @classmethod
    def from_solution(cls, solution: Solution) -> ScriptedAgent:
        return cls(solution.steps)

    async def run(self, session: Session) -> str | None:
        final: str | None = None
        for step in self.steps:
            if step.call is not None:
                await session.call(step.call, dict(step.args))
            elif step.say is not None:
                if await session.say(step.say) is None:
                    break
            else:
                final = step.finish
        return final
