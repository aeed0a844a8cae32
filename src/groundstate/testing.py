"""Public test doubles for the system under test, and helpers to run one attempt offline.

Agents here stand in for models so that suites, graders and pipelines can be tested without
a network: :class:`ScriptedAgent` replays fixed steps; :class:`FunctionAgent` (also usable
from a system file) wraps an ``async def agent(session)``; :func:`run_solution` proves one
solution of one task; :class:`FaultyEnvironments` injects environment failures;
:class:`OpenAICompatibleServer` and :class:`AnthropicCompatibleServer` are loopback model APIs
answering from a script, for the built-in model adapters (see :mod:`groundstate.testing_models`).
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from groundstate.agents.base import Agent
from groundstate.agents.python import FunctionAgent
from groundstate.agents.scripted import ScriptedAgent
from groundstate.environments.base import CallEffects, Environment
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.episode import AttemptInfo, AttemptOutput, default_environment, run_attempt
from groundstate.records import AgentRun
from groundstate.spec.solution import Solution, Step
from groundstate.spec.suite import Suite
from groundstate.spec.system import AgentEntry, HarnessSection, SystemSpec
from groundstate.spec.task import AgentTask
from groundstate.testing_models import (
    AnthropicCompatibleServer,
    Fail,
    OpenAICompatibleServer,
    Raw,
    Reply,
    ScriptedModelServer,
    ToolCall,
    by_turn,
    script_from_steps,
    solving_model,
)
from groundstate.users import User

__all__ = [
    "AnthropicCompatibleServer",
    "Fail",
    "FaultyEnvironments",
    "FunctionAgent",
    "OpenAICompatibleServer",
    "Raw",
    "Reply",
    "ScriptedAgent",
    "ScriptedModelServer",
    "ToolCall",
    "attempt",
    "by_turn",
    "run_solution",
    "script_from_steps",
    "scripted_system",
    "solving_model",
]


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
    user: User | None = None,
) -> AttemptOutput:
    """Run one graded attempt outside any batch (nothing is stored); *user*: a simulated
    user in place of the one *system* declares."""
    info = AttemptInfo(run_id=uuid.uuid4().hex, batch_id="adhoc", attempt=1, seed=seed)
    task = suite.tasks[task_id]
    runs = run_attempt(task, suite, system or scripted_system(), agent, info, user=user)
    return asyncio.run(runs)


def run_solution(suite: Suite, task_id: str, solution: str | Solution | list[Step]) -> AgentRun:
    """Replay a solution (by name, or given) on its task and return the graded record."""
    if isinstance(solution, str):
        solution = suite.solutions[task_id][solution]
    steps = solution.steps if isinstance(solution, Solution) else solution
    return attempt(suite, task_id, ScriptedAgent(steps)).run


class FaultyEnvironments:
    """An environment factory that breaks the database of a seeded share of attempts.

    A broken environment resets normally, then its database file is corrupted at the agent's
    first tool call, as a failing disk would: the attempt ends as
    ``environment_failure/tool_crash`` with a failed health probe as evidence. Pass it as
    ``make_env`` to :class:`groundstate.runner.BatchRunner`.
    """

    def __init__(self, rate: float, seed: int = 0) -> None:
        self.rate = rate
        self.broken = 0
        self._rng = random.Random(seed)

    def __call__(self, task: AgentTask, suite: Suite) -> Environment:
        if self._rng.random() >= self.rate:
            return default_environment(task, suite)
        self.broken += 1
        return _BreaksAtFirstCall(
            suite.fixture_path(task), clock=task.clock, permissions=task.permissions
        )


class _BreaksAtFirstCall(SqliteEnvironment):
    @contextmanager
    def tool_transaction(self) -> Iterator[CallEffects]:
        self.break_database()
        with super().tool_transaction() as effects:
            yield effects
