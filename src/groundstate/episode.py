"""One attempt: reset → agent loop → final state → grade → classify → ``AgentRun``."""

from __future__ import annotations

import asyncio
import random
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NoReturn

from groundstate.agents.base import Agent, ToolResult, ToolSpec
from groundstate.environments.base import Environment, Snapshot, StateDiff, diff_snapshots
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import (
    AgentGaveUp,
    AgentStop,
    BudgetExceeded,
    ConversationOver,
    EnvironmentFailure,
    ProhibitedAction,
    ResetCheckFailed,
    StepLimitReached,
)
from groundstate.gateway import ToolGateway
from groundstate.grading.constraints import evaluate_constraints
from groundstate.grading.outcome import States, evaluate_assertions
from groundstate.grading.rubric import partial_score
from groundstate.grading.terminal import classify, interruption_reason
from groundstate.records import AgentRun, CheckResult, Usage
from groundstate.spec.suite import Suite
from groundstate.spec.system import SystemSpec
from groundstate.spec.task import AgentTask
from groundstate.trace import MessageEvent, TraceEvent, dump_jsonl
from groundstate.users import ScriptedUser


@dataclass(frozen=True)
class AttemptInfo:
    """Identity of one attempt within a batch."""

    run_id: str
    batch_id: str
    attempt: int
    seed: int
    retry: int = 0
    retry_of: str | None = None


EnvironmentFactory = Callable[[AgentTask, Suite], SqliteEnvironment]
"""Builds a fresh environment for one attempt of a task (a seam for fault injection)."""


def default_environment(task: AgentTask, suite: Suite) -> SqliteEnvironment:
    return SqliteEnvironment(
        suite.fixture_path(task), clock=task.clock, permissions=task.permissions
    )


@dataclass
class AttemptOutput:
    """A finished attempt: its record and the artifacts to store beside it."""

    run: AgentRun
    artifacts: dict[str, str]


class EpisodeSession:
    """The agent's side of one attempt (implements :class:`groundstate.agents.base.Session`)."""

    def __init__(
        self, task: AgentTask, suite: Suite, system: SystemSpec, env: Environment, seed: int
    ) -> None:
        self._task, self._system, self._seed = task, system, seed
        self._started = time.perf_counter()
        self.events: list[TraceEvent] = []
        self.usage = Usage()
        self.cost = 0.0
        self._steps = 0
        self._rng = random.Random(seed)
        self._user = ScriptedUser(system.user_simulator, task.user)
        tools = {name: suite.tools[name] for name in task.available_tools}
        self._tools = tools
        self._gateway = ToolGateway(tools, env, self.events.append, self._elapsed)
        self._instructions = "\n\n".join(
            p for p in (system.harness.system_prompt, suite.policy) if p
        )
        self._record_message("user", task.user_request)

    @property
    def instructions(self) -> str:
        return self._instructions

    @property
    def user_request(self) -> str:
        return self._task.user_request

    @property
    def tools(self) -> list[ToolSpec]:
        overrides = self._system.harness.tool_descriptions
        return [
            ToolSpec(t.name, overrides.get(t.name, t.description), t.parameters)
            for t in self._tools.values()
        ]

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def rng(self) -> random.Random:
        return self._rng

    async def call(self, tool: str, args: dict[str, Any] | None = None) -> ToolResult:
        step = self._next_step()
        result = self._gateway.call(step, tool, {} if args is None else args)
        if result.error_class == "permission_denied" and self._ends_on("on_prohibited_action"):
            raise ProhibitedAction(result.error or "")
        return result

    async def say(self, text: str) -> str | None:
        step = self._next_step()
        self._record_message("agent", text, step)
        reply = self._user.reply(text)
        self._record_message("user", reply, step)
        return reply

    def record_usage(
        self, *, input_tokens: int = 0, output_tokens: int = 0, cost: float = 0.0
    ) -> None:
        self.usage.input_tokens += input_tokens
        self.usage.output_tokens += output_tokens
        self.cost += cost
        budgets = self._system.budgets
        if budgets.max_cost is not None and self.cost > budgets.max_cost:
            raise BudgetExceeded(f"cost {self.cost:.4f} exceeds the budget {budgets.max_cost}")
        tokens = self.usage.input_tokens + self.usage.output_tokens
        if budgets.max_tokens is not None and tokens > budgets.max_tokens:
            raise BudgetExceeded(f"{tokens} tokens exceed the budget {budgets.max_tokens}")

    def give_up(self, reason: str) -> NoReturn:
        raise AgentGaveUp(reason)

    @property
    def step_limit(self) -> int:
        budget = self._system.budgets.step_limit
        return min(self._task.step_limit, budget) if budget else self._task.step_limit

    @property
    def time_limit(self) -> float:
        budget = self._system.budgets.time_limit
        return min(self._task.time_limit, budget) if budget else self._task.time_limit

    def _next_step(self) -> int:
        if self._user.left and self._ends_on("on_user_stop"):
            raise ConversationOver("the user has left")
        if self._steps >= self.step_limit:
            raise StepLimitReached(f"step limit {self.step_limit} reached")
        self._steps += 1
        return self._steps

    def _ends_on(self, condition: str) -> bool:
        return bool(getattr(self._task.terminal_conditions, condition) == "end")

    def _record_message(self, role: Any, text: str | None, step: int = 0) -> None:
        self.events.append(MessageEvent(step=step, role=role, text=text, at=self._elapsed()))

    def _elapsed(self) -> float:
        return time.perf_counter() - self._started


@dataclass
class _Progress:
    """What an attempt has established so far; whatever stage fails, the record is built from it."""

    interruption: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    initial_hash: str | None = None
    final_hash: str | None = None
    diff: StateDiff | None = None
    final_message: str | None = None
    assertions: list[CheckResult] = field(default_factory=list)
    constraints: list[CheckResult] = field(default_factory=list)

    def interrupt(self, exc: BaseException, stage: str) -> None:
        self.interruption = interruption_reason(exc, stage)
        self.evidence["exception"] = {
            "stage": stage,
            "type": type(exc).__name__,
            "message": str(exc),
            "traceback": traceback.format_exception(exc)[-3:],
        }


async def run_attempt(
    task: AgentTask,
    suite: Suite,
    system: SystemSpec,
    agent: Agent,
    info: AttemptInfo,
    make_env: EnvironmentFactory = default_environment,
) -> AttemptOutput:
    """Run one attempt of *agent* on *task* in a fresh environment and grade it."""
    started_at, t0 = datetime.now(UTC), time.perf_counter()
    progress = _Progress()
    session: EpisodeSession | None = None
    try:
        env = make_env(task, suite)
    except EnvironmentFailure as exc:
        progress.interrupt(exc, "setup")
    else:
        with env:
            session = await _episode(task, suite, system, agent, env, info.seed, progress)
    return _record(task, system, info, progress, session, started_at, time.perf_counter() - t0)


async def _episode(
    task: AgentTask,
    suite: Suite,
    system: SystemSpec,
    agent: Agent,
    env: SqliteEnvironment,
    seed: int,
    progress: _Progress,
) -> EpisodeSession | None:
    progress.evidence["health_before"] = env.health()
    try:
        progress.initial_hash = reset_checked(env, task, seed)
        s0 = env.snapshot()
    except EnvironmentFailure as exc:
        progress.interrupt(exc, "reset")
        return None
    session = EpisodeSession(task, suite, system, env, seed)
    await _drive(agent, session, progress)
    if not (progress.interruption or "").startswith("environment_failure"):
        _grade(task, suite, env, s0, session, progress)
    progress.evidence["health_after"] = env.health()
    return session


def reset_checked(env: Environment, task: AgentTask, seed: int | None = None) -> str:
    """Reset *env* and check the task's declared initial state hash; return the hash."""
    initial_hash = env.reset(seed=seed)
    declared = task.reset_check.initial_state_hash
    if declared is not None and declared != initial_hash:
        raise ResetCheckFailed(
            f"reset gave state {initial_hash[:12]}, the task declares {declared[:12]}"
        )
    return initial_hash


async def _drive(agent: Agent, session: EpisodeSession, progress: _Progress) -> None:
    try:
        final = await asyncio.wait_for(agent.run(session), session.time_limit)
        progress.final_message = final if final is None or isinstance(final, str) else repr(final)
    except ConversationOver:
        pass  # the user left: a normal end, graded like any other
    except (TimeoutError, AgentStop, EnvironmentFailure) as exc:
        progress.interrupt(exc, "tool_crash")
    except Exception as exc:  # the system under test crashed; that counts against it
        progress.interrupt(exc, "agent")


def _grade(
    task: AgentTask,
    suite: Suite,
    env: SqliteEnvironment,
    s0: Snapshot,
    session: EpisodeSession,
    progress: _Progress,
) -> None:
    try:
        verdict = grade(task, suite, env, s0, session.events)
    except EnvironmentFailure as exc:
        progress.interrupt(exc, "final_state")
        return
    progress.final_hash, progress.diff = verdict.final_state_hash, verdict.diff
    progress.assertions, progress.constraints = verdict.assertions, verdict.constraints


@dataclass(frozen=True)
class Verdict:
    final_state_hash: str
    diff: StateDiff
    assertions: list[CheckResult]
    constraints: list[CheckResult]


def grade(
    task: AgentTask, suite: Suite, env: Environment, s0: Snapshot, events: list[TraceEvent]
) -> Verdict:
    """Grade the environment's current state against *s0* and the trace *events*.

    Raises :class:`EnvironmentFailure` when the final state cannot be read.
    """
    final_hash = env.state_hash()
    diff = diff_snapshots(s0, env.snapshot())
    states = States(env.initial_view(), env.evaluator_view(), s0, diff, suite.root)
    return Verdict(
        final_state_hash=final_hash,
        diff=diff,
        assertions=evaluate_assertions(task.outcome_assertions, states),
        constraints=evaluate_constraints(task.hard_process_constraints, events, states),
    )


def _record(
    task: AgentTask,
    system: SystemSpec,
    info: AttemptInfo,
    progress: _Progress,
    session: EpisodeSession | None,
    started_at: datetime,
    latency: float,
) -> AttemptOutput:
    terminal = classify(progress.interruption, progress.assertions, progress.constraints)
    events = session.events if session else []
    run = AgentRun(
        run_id=info.run_id,
        batch_id=info.batch_id,
        task_id=task.task_id,
        task_revision=task.task_revision,
        grader_revision=task.grader_revision,
        system_spec_hash=system.system_spec_hash,
        attempt=info.attempt,
        seed=info.seed,
        retry=info.retry,
        retry_of=info.retry_of,
        started_at=started_at,
        initial_state_hash=progress.initial_hash,
        observation_action_log=events,
        final_state_hash=progress.final_hash,
        terminal_reason=terminal,
        success=terminal == "success",
        outcome_assertion_results=progress.assertions,
        constraint_results=progress.constraints,
        partial_score=partial_score(
            task.partial_credit_rubric, progress.assertions, progress.constraints
        ),
        cost=session.cost if session else 0.0,
        usage=session.usage if session else Usage(),
        latency=latency,
        final_message=progress.final_message,
        infrastructure_status=progress.evidence,
        artifact_locations={},
    )
    artifacts = {"trace.jsonl": dump_jsonl(events)}
    if progress.diff is not None:
        artifacts["state_diff.json"] = progress.diff.model_dump_json(indent=1)
    return AttemptOutput(run=run, artifacts=artifacts)
