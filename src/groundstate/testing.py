"""Public test doubles for the system under test, and helpers to run one attempt offline.

Agents here stand in for models so that suites, graders and pipelines can be tested without
a network: :class:`ScriptedAgent` replays fixed steps; :class:`FunctionAgent` wraps an
``async def agent(session)``; :func:`run_solution` proves one solution of one task.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

from groundstate.agents.base import Agent, Session
from groundstate.agents.scripted import ScriptedAgent
from groundstate.episode import AttemptInfo, AttemptOutput, run_attempt
from groundstate.records import AgentRun
from groundstate.spec.solution import Solution, Step
from groundstate.spec.suite import Suite
from groundstate.spec.system import AgentEntry, HarnessSection, SystemSpec

__all__ = ["FunctionAgent", "ScriptedAgent", "attempt", "run_solution", "scripted_system"]


class FunctionAgent:
    """An agent from a coroutine function ``async def agent(session) -> str | None``."""

    def __init__(self, fn: Callable[[Session], Awaitable[str | None]]) -> None:
        self.fn = fn

    async def run(self, session: Session) -> str | None:
        return await self.fn(session)


def scripted_system(name: str = "scripted") -> SystemSpec:
    """The fixed system under which solutions are replayed (no model, default user and budgets)."""
    loop = AgentEntry(entry="groundstate.agents.scripted:ScriptedAgent")
    return SystemSpec(name=name, harness=HarnessSection(orchestration_loop=loop))


def attempt(
    suite: Suite,
    task_id: str,
    agent: Agent,
    *,
    system: SystemSpec | None = None,
    seed: int = 0,
) -> AttemptOutput:
    """Run one graded attempt outside any batch (nothing is stored)."""
    info = AttemptInfo(run_id=uuid.uuid4().hex, batch_id="adhoc", attempt=1, seed=seed)
    task = suite.tasks[task_id]
    return asyncio.run(run_attempt(task, suite, system or scripted_system(), agent, info))


def run_solution(suite: Suite, task_id: str, solution: str | Solution | list[Step]) -> AgentRun:
    """Replay a solution (by name, or given) on its task and return the graded record."""
    if isinstance(solution, str):
        solution = suite.solutions[task_id][solution]
    steps = solution.steps if isinstance(solution, Solution) else solution
    return attempt(suite, task_id, ScriptedAgent(steps)).run
