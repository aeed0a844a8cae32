"""Replaying solutions through the real episode code, and describing the verdicts they get.

Validation never grades solutions with a shortcut: every replay is a full attempt
(:func:`groundstate.episode.run_attempt`) under a fixed scripted system, so a task is proven by
the same gateway, user, grader and terminal-reason rules that will judge the agent.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Coroutine, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, closing, nullcontext, suppress
from dataclasses import dataclass, field
from typing import Any, TypeVar

from groundstate.agents.base import Agent
from groundstate.agents.scripted import ScriptedAgent
from groundstate.environments.base import Environment, initial_snapshot
from groundstate.episode import (
    AttemptInfo,
    EnvironmentFactory,
    EpisodeSession,
    Verdict,
    default_environment,
    grade,
    run_attempt,
)
from groundstate.errors import AgentStop
from groundstate.records import AgentRun, CheckResult
from groundstate.spec.canonical import canonical_json
from groundstate.spec.solution import Solution, Step
from groundstate.spec.suite import Suite
from groundstate.spec.system import SystemSpec
from groundstate.spec.task import AgentTask
from groundstate.testing import scripted_system
from groundstate.trace import ToolCallEvent, TraceEvent, agent_events
from groundstate.validation.results import MutationFigures

T = TypeVar("T")
Around = Callable[[int, Environment], AbstractContextManager[object]]
"""What the n-th grading of :meth:`Proof.regrade` runs inside, given the environment graded."""
Retrace = Callable[[int, list[TraceEvent]], list[TraceEvent]]
"""The trace the n-th grading of :meth:`Proof.regrade` is given, from the replay's."""
SEED = 0
"""Every replay uses one seed: a solution is a fixed trajectory, not a sample."""


@dataclass
class Proof:
    """One task under validation: its suite, how to build its environment, and replays so far.

    Runs of named solutions are kept, so the oracle replayed for ``solvable`` is the same
    record ``discriminating`` and ``grader_sensitivity`` reason about.
    """

    suite: Suite
    task: AgentTask
    make_env: EnvironmentFactory = default_environment
    system: SystemSpec = field(default_factory=lambda: scripted_system("validation"))
    _runs: dict[str, AgentRun] = field(default_factory=dict)
    mutation: MutationFigures | None = None
    """Set by the ``mutation`` check, for the task's validity record."""
    unsettled: bool = False
    """Set when a replay got no verdict (an environment or grader failure) or a check
    raised: a failure that rests on it may be the machine's, not the task's."""
    seen_failing: set[str] = field(default_factory=set)
    """The outcome assertions (``outcome:<id>``) and hard constraints (``constraint:<id>``)
    some replay or grading of this proof saw fail by their verdict, not an error: the
    ``exercised`` check reports the others, which nothing showed can fail."""
    unexercised: list[str] | None = None
    """Set by the ``exercised`` check: the task's own checks not in :attr:`seen_failing`."""
    shared_failed: dict[str, bool] | None = None
    """Set by the ``exercised`` check: each constraint of the suite's sets the task includes,
    and whether it is in :attr:`seen_failing`."""

    @property
    def solutions(self) -> dict[str, Solution]:
        return self.suite.solutions.get(self.task.task_id, {})

    def of_kind(self, kind: str) -> dict[str, Solution]:
        return {name: s for name, s in self.solutions.items() if s.kind == kind}

    def run(self, name: str) -> AgentRun:
        """The graded replay of the solution called *name* (replayed once)."""
        if name not in self._runs:
            self._runs[name] = self.run_steps(self.solutions[name].steps)
        return self._runs[name]

    def run_steps(self, steps: list[Step]) -> AgentRun:
        return self.run_agent(ScriptedAgent(steps))

    def run_agent(self, agent: Agent) -> AgentRun:
        info = AttemptInfo(
            run_id=f"validation-{uuid.uuid4().hex}", batch_id="validation", attempt=1, seed=SEED
        )
        run = run_sync(
            lambda: run_attempt(self.task, self.suite, self.system, agent, info, self.make_env)
        ).run
        self.unsettled |= not run.valid
        self.saw(run.outcome_assertion_results, run.constraint_results)
        return run

    def saw(self, assertions: Iterable[CheckResult], constraints: Iterable[CheckResult]) -> None:
        """Note the checks that failed by their verdict (:attr:`seen_failing`). One that raised
        or timed out (``error`` set) failed for no reason of the state it was given: no
        evidence it can tell a bad state from a good one."""
        for prefix, results in (("outcome", assertions), ("constraint", constraints)):
            self.seen_failing.update(
                f"{prefix}:{r.id}" for r in results if not r.passed and r.error is None
            )

    def regrade(
        self,
        steps: list[Step],
        times: int,
        pause: float,
        around: Around = lambda _, __: nullcontext(),
        retrace: Retrace = lambda _, events: events,
        suite: Suite | None = None,
        *,
        evidence: bool = True,
    ) -> list[Verdict]:
        """Replay *steps* in one environment kept open (with *suite*'s tools, the proof's
        suite's by default), then grade its final state *times*, the n-th grading inside
        ``around(n)`` and given the trace ``retrace(n, events)``. Unless *evidence*, the
        checks that fail are not noted in :attr:`seen_failing`: a state no tool of the task
        may reach (every row of a table deleted) is no proof a check can fail."""
        replayed = suite or self.suite
        return run_sync(
            lambda: self._regrade(steps, times, pause, around, retrace, replayed, evidence)
        )

    async def _regrade(
        self,
        steps: list[Step],
        times: int,
        pause: float,
        around: Around,
        retrace: Retrace,
        suite: Suite,
        evidence: bool,
    ) -> list[Verdict]:
        with closing(self.make_env(self.task, suite)) as env:
            env.reset(seed=SEED)
            s0 = initial_snapshot(env)
            session = EpisodeSession(self.task, suite, self.system, env, SEED)
            with suppress(AgentStop):  # a limit or the user ended it; the state is graded
                final = await ScriptedAgent(steps).run(session)
                if final is not None:  # graded with its final reply, as in an attempt
                    session.record_final(final)
            verdicts = []
            for n in range(times):
                if n:
                    await asyncio.sleep(pause)
                with around(n, env):
                    events = retrace(n, session.events)
                    verdicts.append(grade(self.task, self.suite, env, s0, events))
                if evidence:
                    self.saw(verdicts[-1].assertions, verdicts[-1].constraints)
            return verdicts


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion, also when called from inside a running event loop.

    ``asyncio.run`` refuses to nest, and a batch may validate its suite from async code; there
    the coroutine runs in a worker thread, which also owns every connection it opens.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def verdict_line(verdict: Verdict) -> str:
    """A verdict as one comparable line: final state and each check's result."""
    results = verdict.assertions + verdict.constraints
    return f"state {verdict.final_state_hash[:12]}: " + ", ".join(map(result_line, results))


def describe_run(run: AgentRun) -> str:
    """A run's terminal reason and the checks that failed, with their key evidence."""
    failed = [r for r in run.outcome_assertion_results + run.constraint_results if not r.passed]
    if not failed:
        exception = run.infrastructure_status.get("exception")
        suffix = f" ({exception['type']}: {exception['message']})" if exception else ""
        return run.terminal_reason + suffix
    return f"{run.terminal_reason}: " + "; ".join(map(_failed_check, failed))


def trace_line(run: AgentRun) -> str:
    """The run's steps on one line, each refused or failed call with its error class and error.

    A solution that should pass and does not is most often explained by a call the gateway
    refused (an argument its schema rejects, a tool the task does not offer) or a tool refusal.
    """
    steps = []
    for event in agent_events(run.observation_action_log):
        if isinstance(event, ToolCallEvent):
            call = f"{event.tool} {shorten(canonical_json(event.args), 60)}"
            if not event.ok:
                call += f" FAILED {event.error_class}: {shorten(event.error or '', 120)}"
            steps.append(f"{event.step} {call}")
        elif event.role == "agent":
            steps.append(f"{event.step} {'finish' if event.final else 'say'}")
    return "; ".join(steps)


def failed_ids(run: AgentRun) -> list[str]:
    return [r.id for r in run.outcome_assertion_results + run.constraint_results if not r.passed]


def result_line(result: CheckResult) -> str:
    """One check's result as ``id=pass|fail|error``."""
    word = "error" if result.error is not None else "pass" if result.passed else "fail"
    return f"{result.id}={word}"


def _failed_check(result: CheckResult) -> str:
    return f"{result.id} failed ({shorten(_evidence_text(result), 160)})"


def _evidence_text(result: CheckResult) -> str:
    evidence = result.evidence
    if result.error is not None:
        return f"error: {result.error}"
    if evidence.get("problems"):
        return "; ".join(map(str, evidence["problems"]))
    if "rows" in evidence:
        return f"rows {canonical_json(evidence['rows'])}, expected {evidence.get('expected')}"
    if "offending_step" in evidence:
        step = evidence["offending_step"]
        return f"offending step {step.get('step')}: {step.get('tool') or step.get('text')}"
    return canonical_json(evidence) if evidence else "no evidence"


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
