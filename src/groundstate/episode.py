"""One attempt: reset → agent loop → final state → grade → classify → ``AgentRun``."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import math
import os
import random
import sys
import threading
import traceback
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import FrameType
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, TypeVar, cast

from groundstate import turns
from groundstate.account import (
    CLOSED,
    Account,
    AccountClosed,
    Counts,
    Kept,
    altered,
    untraced_entry,
)
from groundstate.agents.base import Agent, Session, ToolResult, ToolSpec
from groundstate.alarms import ALARMS, CLOCK
from groundstate.bindings import HARNESS, Held, Mark, Seal, audit_hooks_refused
from groundstate.capture import captured
from groundstate.descriptors import RESERVE
from groundstate.environments.base import (
    Environment,
    Snapshot,
    StateDiff,
    diff_from_initial,
    initial_snapshot,
)
from groundstate.environments.registry import build_environment
from groundstate.errors import (
    AgentGaveUp,
    AgentStop,
    BudgetExceeded,
    ConversationOver,
    EnvironmentFailure,
    HarnessCompatibilityError,
    ModelServingFailure,
    ProhibitedAction,
    ResetCheckFailed,
    StepLimitReached,
    TimeLimitReached,
    exception_text,
)
from groundstate.exitcause import TRY, disruption_of, forget_interruption, interruption_sent
from groundstate.gateway import NotJson, ToolGateway
from groundstate.grading.constraints import evaluate_constraints
from groundstate.grading.outcome import States, assertions_later
from groundstate.grading.rubric import partial_score
from groundstate.grading.terminal import classify, interruption_reason, is_compatibility_failure
from groundstate.leftovers import Watch
from groundstate.loopthreads import (
    abandon,
    in_loop_thread,
    in_thread,
    put_back_after,
    put_back_builtins,
    put_back_wake_path,
    take_wake_restored,
    wake_restores_now,
)
from groundstate.records import AgentRun, CheckResult, CountedUsage, Usage
from groundstate.returned import (
    CRASHED,
    TIME_LIMIT,
    AgentRaised,
    Final,
    stable_repr,
    type_name,
)
from groundstate.served import models_served
from groundstate.spec.suite import Suite, grader_shape, same_grader_shape
from groundstate.spec.system import SystemSpec
from groundstate.spec.task import AgentTask, JudgeAssertion, TestsAssertion
from groundstate.trace import (
    RETRIED_KINDS,
    MessageEvent,
    ModelCall,
    ModelCallEvent,
    ToolCallEvent,
    TraceEvent,
    event_json,
    genuine,
    load_jsonl,
    recordable,
    trace_lines,
)
from groundstate.turns import Turn
from groundstate.untrusted import shares_interpreter
from groundstate.users import User, make_user
from groundstate.workdirs import temp_root

if TYPE_CHECKING:
    from groundstate.store import PreparedRun

_T = TypeVar("_T")

_WAITING_CHECKS = (JudgeAssertion, TestsAssertion)

_WAITING_TOOLS: set[tuple[str, Any]] = set()
"""Tools (suite folder, name) whose calls outlasted a turn's lease :data:`WAITING_AFTER` times
in a row in this process: they wait on something (a server, a command), so their calls take
no turn."""

WAITING_AFTER = 3
"""Calls in a row past the lease that mark a tool as waiting. Not one: on a loaded machine a
call that only queries SQLite can be kept from the CPU (and the GIL) past the lease now and
then; marked, every later call of that tool would run outside the turns, where each adds to
the very contention the turns exist to avoid. A tool that waits outlasts it call after call."""

_OUTLASTED: dict[tuple[str, Any], int] = {}
"""For each tool, how many of its latest calls in a row outlasted the lease."""

USER_SIMULATOR = "user_simulator"
"""The stage (and terminal sub-reason) of a failing user simulator: the instrument's fault."""
MODEL_SERVING = "model_serving"
"""The stage (and terminal sub-reason) of the agent's model API failing: the provider's."""
OUTSIDE = "outside_gateway"
"""The stage of a write the environment saw that no tool call made."""
REBOUND = "harness_code"
"""The stage of a stop for the harness's code found rebound (see :mod:`groundstate.bindings`)."""
SIGNALLED = "signal"
"""The stage of a stop for an interruption (SIGINT, SIGTERM) the agent sent its own process
in-process: the batch's interruptions are its user's (see :mod:`groundstate.exitcause`)."""
END_WAIT = 1.0
"""Seconds the episode waits for a session call in progress before it ends the attempt
without it (a tool blocked in Python cannot be interrupted). Read when a wait begins, not
bound as a default argument: a test on a loaded machine may lengthen it."""
_LOCK = type(threading.Lock())
"""The class of the session's lock: one of another class is the agent's (see ``busy``)."""
USER_SHARE = 0.5
"""The share of the time limit one reply of the simulated user must have taken, when the limit
strikes during it, for the time limit to be the instrument's (``environment_failure/
user_simulator``, invalid) rather than the agent's. Only a user that waits on a model or a
person counts: the scripted user's time is that of the agent's message (a huge one is slow to
read), and an agent that asks at the last moment must not turn its own time limit into an
invalid attempt."""
OWN_LIMIT_SLACK = 0.5
"""Seconds before the time limit from which an agent's own ``TimeLimitReached`` (an agent
program's adapter killing the program at the limit, timed by a clock of its own) is the time
limit; raised earlier, it is a crash."""
HEADROOM = 200
"""Frames below the recursion limit a tool call or message needs. An agent that calls with
less stack left is refused before anything happens: otherwise the tool, the user simulator or
the harness's recording would hit the limit inside the call, and the agent's own recursion
would become a crashed tool (an invalid attempt) or a committed write missing from the trace."""


@dataclass(frozen=True)
class AttemptInfo:
    """Identity of one attempt within a batch."""

    run_id: str
    batch_id: str
    attempt: int
    seed: int
    retry: int = 0
    retry_of: str | None = None


@dataclass(frozen=True)
class AttemptJob:
    """One attempt as data: all an executor needs to run it in another process or machine.

    Picklable (no live objects): the executor loads the suite from :attr:`suite_path`, checks
    it still hashes to :attr:`suite_hash`, builds the agent from :attr:`system`, runs the
    attempt and hands back its :class:`AttemptOutput`; only the parent writes to the store.
    """

    suite_path: str
    suite_hash: str
    system: SystemSpec
    """The resolved system under test (its hash and base folder travel with it)."""
    task_id: str
    info: AttemptInfo
    solution: str | None = None
    """Play this scripted solution of the task (``oracle`` for the canary) instead of the
    system's agent."""
    environment: str | None = None
    """The environment kind to run in when it is not the suite's own (``--environment``)."""


EnvironmentFactory = Callable[[AgentTask, Suite], Environment]
"""Builds a fresh environment for one attempt of a task (a seam for fault injection)."""


def default_environment(task: AgentTask, suite: Suite) -> Environment:
    """An environment of the suite's kind (``environment:`` in suite.yaml) for *task*."""
    return build_environment(
        suite.config.environment,
        suite.fixture_path(task),
        clock=task.clock,
        permissions=task.permissions,
        options=suite.config.environment_options,
    )


@dataclass
class AttemptOutput:
    """A finished attempt: its record and the artifacts to store beside it."""

    run: AgentRun
    artifacts: dict[str, str]
    prepared: PreparedRun | None = None
    """The record as the store writes it, when the executor prepared it where the attempt
    ran (see :func:`groundstate.store.prepare_run`); then :attr:`run` is the record as stored."""
    trace_lines: list[str] | None = None
    """Each event of :attr:`run`'s trace as its JSON line, the lines of the ``trace.jsonl``
    artifact, which :func:`_untrue` compares with the attempt's account (each line as it was
    logged when its event happened): the store writes them into the record's text rather
    than serialising the events a third time (:func:`groundstate.store.prepare_run`)."""


@dataclass(frozen=True)
class Stop:
    """The first stop of an attempt, latched by the session: it decides the terminal reason."""

    error: BaseException
    """The stop (an :class:`AgentStop` or an :class:`EnvironmentFailure`)."""
    stage: str
    """Where it happened: ``tool_call``, ``message``, ``usage``, ``give_up``, ``time_limit``,
    ``user_simulator``, ``final`` (the final reply broke the protocol), ``outside_gateway``
    (the environment was written behind the gateway), ``harness_code`` or ``signal`` (the
    agent sent its own process an interruption)."""
    step: int
    at: float

    @property
    def kind(self) -> str:
        """The stop as a short name (``step_limit``, ``tool_crash``, ``user_simulator``...)."""
        if isinstance(self.error, ModelServingFailure):
            return MODEL_SERVING
        if isinstance(self.error, EnvironmentFailure):
            return "user_simulator" if self.stage == USER_SIMULATOR else "tool_crash"
        return interruption_reason(self.error, self.stage).rpartition("/")[2]

    def evidence(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "stage": self.stage,
            "step": self.step,
            "at": round(self.at, 3),
            "type": type(self.error).__name__,
            "message": exception_text(self.error),
        }


def attempt_time_limit(task: AgentTask, system: SystemSpec) -> float:
    """Seconds the agent of an attempt of *task* by *system* gets: the task's limit, or the
    system's budget when that is shorter."""
    budget = system.budgets.time_limit
    return min(task.time_limit, budget) if budget else task.time_limit


class EpisodeSession:
    """The agent's side of one attempt (implements :class:`groundstate.agents.base.Session`).

    Stops are data. The first stop (a limit, a budget, a prohibited action or a departed user
    under ``end``, a crashed tool, the time limit) is latched in :attr:`stop`; every later call
    raises it again and changes nothing, so an agent that catches the exception cannot turn a
    stop into a success. The agent may run in a thread of its own (see :func:`run_agent`);
    its calls then run in that thread, one at a time under the session's lock.
    """

    def __init__(
        self,
        task: AgentTask,
        suite: Suite,
        system: SystemSpec,
        env: Environment,
        seed: int,
        user: User | None = None,
        account: Account | None = None,
    ) -> None:
        self._task, self._system, self._seed = task, system, seed
        self._account = account or Account()
        """The steps, stops and trace as they happened (see :mod:`groundstate.account`)."""
        # First, before the clock: a model-driven user imports its SDK and builds its client.
        # *user*: one given instead of the system's (a regrade's recorded replies).
        self._user = user or make_user(system.user_simulator, task, seed)
        self._started = CLOCK()
        self.events: list[TraceEvent] = []
        self._ended = False
        self._in_call: str | None = None
        self.asking_since: float | None = None
        """When the simulated user began the reply it is composing now, if it waits on a model
        or a person (see :meth:`user_used_the_time`)."""
        self.blocked_call: str | None = None
        """A tool still running when the attempt ended (left behind: threads cannot be
        killed); kept in the evidence."""
        self._in_reply = False
        self.blocked_in_reply = False
        """Whether the simulated user was still composing a reply when the attempt ended."""
        self._lock = threading.Lock()
        self._holder: int | None = None
        """The thread holding the lock for a call of the agent's."""
        self._rng = random.Random(seed)
        tools = {name: suite.tools[name] for name in task.available_tools}
        self._tools = tools
        self._suite_root = str(suite.root)
        self.queued = 0.0
        """Seconds the agent's tool calls waited for a turn (queueing: not in the latency)."""
        self.artifacts: dict[str, str] = {}
        self.hidden_paths = (suite.root, temp_root())
        """What a sandboxed agent program must not see: the suite (solutions, checks,
        fixtures) and every attempt's work directory."""
        self._gateway = ToolGateway(tools, env, self._trace_call, self._elapsed)
        set_deadline = getattr(env, "set_deadline", None)
        if set_deadline is not None:  # SQL in tools stops at the time limit (see the gateway)
            set_deadline(CLOCK() + self.time_limit)
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
        # Each schema a copy: an adapter that tidies one in place (drops ``required``) must
        # not change what the gateway checks, in this attempt or any later one.
        return [
            ToolSpec(t.name, overrides.get(t.name, t.description), _plain_data(t.parameters))
            for t in self._tools.values()
        ]

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def rng(self) -> random.Random:
        return self._rng

    @property
    def steps(self) -> int:
        return self._steps

    async def call(self, tool: str, args: dict[str, Any] | None = None) -> ToolResult:
        return self._called(tool, args)

    async def say(self, text: str) -> str | None:
        return self._said(text)

    # Each entry point the agent calls runs with its thread's trace and profile functions off
    # (:func:`~groundstate.account.untraced`): one of the agent's rewrote the variables of the
    # harness's frames (the authorizer's, a tool's) as the call ran in the agent's thread.

    @untraced_entry
    def _called(self, tool: Any, args: Any) -> ToolResult:
        _check_headroom()
        self._not_reentered()
        # Copied here, before the turn and the lock: a dict subclass's ``items`` is the
        # agent's code, which may block or call the session again.
        args = _plain_data({} if args is None else args)
        with self._turn(_plain_text(tool) if _is_text(tool) else None):
            return self._locked(self._call, tool, args)

    @untraced_entry
    def _said(self, text: Any) -> str | None:
        _check_headroom()
        return self._locked(self._say, text)

    @contextmanager
    def _held(self) -> Iterator[None]:
        """The session's lock for one call of the agent's. A call made while this thread
        holds it (a finalizer the garbage collector runs inside a call, a callback of the
        agent's) is refused: waiting for the lock would deadlock the thread for good."""
        self._not_reentered()
        with self._lock:
            self._holder = threading.get_ident()
            try:
                yield
            finally:
                self._holder = None

    def _not_reentered(self) -> None:
        if self._holder == threading.get_ident():
            raise RuntimeError("a session call made from inside another session call")

    @untraced_entry
    def record_usage(
        self,
        *,
        input_tokens: int | None = 0,
        output_tokens: int | None = 0,
        cost: float | None = 0.0,
    ) -> None:
        """Count one usage report against the budgets. ``None`` for any figure: the usage is
        not known (an API that answered without counting its tokens). Then nothing is
        counted, the record says tokens and cost are not known (not 0), and a declared
        token or cost budget, which can no longer be checked, stops the attempt
        (``HarnessCompatibilityError``) rather than silently not applying."""
        odd = odd_usage(input_tokens, output_tokens, cost)  # outside the lock: it reads repr()
        if odd is None and None in (input_tokens, output_tokens, cost):
            with self._held():
                self._raise_if_stopped()
                with contextlib.suppress(AccountClosed):
                    self._account.add_usage(0, 0, 0.0, unknown=True)
                budgets = self._system.budgets
                declared = [
                    f"{name} {value}"
                    for name, value in (
                        ("budgets.max_tokens", budgets.max_tokens),
                        ("budgets.max_cost", budgets.max_cost),
                    )
                    if value is not None
                ]
                if declared:
                    self._latch(
                        HarnessCompatibilityError(_UNCHECKABLE + " and ".join(declared)), "usage"
                    )
            return
        assert input_tokens is not None and output_tokens is not None and cost is not None
        with self._held():
            self._raise_if_stopped()
            if odd is None and not math.isfinite(self.cost + cost):
                # finite reports whose sum is not: an infinite cost is stored as null, and
                # the run record could not be read back
                odd = f"cost {cost!r} takes the attempt's total past a float's range"
            if odd is not None:  # a negative or NaN report would dodge the budget
                self._latch(_mismatch(odd), "usage")
            with contextlib.suppress(AccountClosed):  # then the closed account is the stop
                self._account.add_usage(input_tokens, output_tokens, cost)
            over = self._over_budget()
            if over is not None:
                self._latch(BudgetExceeded(over), "usage")

    @untraced_entry
    def record_model_call(self, call: ModelCall) -> None:
        """Keep one model request in the trace (it takes no step and changes nothing)."""
        fields = _call_data(call)  # outside the lock: the agent's object
        with self._held():
            self._raise_if_stopped()
            event = ModelCallEvent(step=self._steps, at=self._elapsed(), **fields)
            self._keep(event)

    @untraced_entry
    def add_artifact(self, name: str, text: str) -> None:
        """Keep *text* as the artifact *name* of this run (e.g. an agent program's stderr).
        Under the lock and not once the attempt is over: its record is being built from the
        artifacts (a late one from a thread left running would change them meanwhile). The
        name is recorded escaped like the text: a lone surrogate in it was stored as another
        name than the record's hashes named, and every record of the batch so read back as
        altered (``verify``'s ``record_altered``)."""
        if not (_is_text(name) and _is_text(text)):
            raise TypeError("an artifact's name and text must be str")
        with self._held():
            if not self._ended:
                self.artifacts[recordable(_plain_text(name))] = recordable(_plain_text(text))

    @untraced_entry
    def give_up(self, reason: str) -> NoReturn:
        why = _plain_text(reason) if _is_text(reason) else stable_repr(reason)
        with self._held():
            self._raise_if_stopped()
            self._latch(AgentGaveUp(why), "give_up")

    @property
    def step_limit(self) -> int:
        budget = self._system.budgets.step_limit
        return min(self._task.step_limit, budget) if budget else self._task.step_limit

    @property
    def time_limit(self) -> float:
        return attempt_time_limit(self._task, self._system)

    @property
    def user_left_because(self) -> str | None:
        """Why the simulated user left, when it said (see ``users.ModelUser._refused``)."""
        why = getattr(self._user, "left_because", None)
        return why if isinstance(why, str) else None

    @property
    def busy(self) -> bool:
        """Whether a call (or the episode) holds the session now. A lock that is not the
        interpreter's own is one an agent set (found through ``gc``): held, as far as the
        harness knows, and never waited for (its ``acquire`` is the agent's code, which may
        never return: the episode, and the batch, waited on it for ever)."""
        lock = self._lock
        return type(lock) is not _LOCK or lock.locked()

    @property
    def remaining(self) -> float:
        """Seconds left before the time limit (negative past it)."""
        return self.time_limit - self._elapsed()

    def user_used_the_time(self) -> bool:
        """Whether the time limit, striking now, is the simulated user's doing: it is
        composing a reply (waiting on a model or a person) that took :data:`USER_SHARE` of
        the limit or more by the limit. Counted up to the limit, so a late alarm on a busy
        machine does not shift the blame; a reply begun in the limit's last moments is the
        agent's time running out, however slowly the user then answers."""
        since = self.asking_since
        if since is None or since > (1 - USER_SHARE) * self.time_limit:
            return False
        return _replying(self)  # the time read is the agent's to set: is a reply running?

    def model_serving_failing(self) -> ModelCallEvent | None:
        """The failed try of the agent's model that the trace ends with, if it is one its
        adapter retries (a rate limit, a 5xx, a timeout, a lost connection): the time limit,
        striking now, strikes while the adapter waits out the model's serving infrastructure
        (see :func:`_latch_time_limit`). Anything after it (a tool call, a message, an
        answer) is the agent going on."""
        last = self.events[-1] if self.events else None
        if isinstance(last, ModelCallEvent) and last.error and last.error.kind in RETRIED_KINDS:
            return last
        return None

    def latch(self, error: BaseException, stage: str, wait: float | None = None) -> Stop:
        """Record *error* as the attempt's stop unless one is latched already; return the stop.
        A call in progress is waited for up to *wait* seconds (:data:`END_WAIT` when None;
        it may latch a stop first).

        The user's leaving (:class:`ConversationOver`) ends the conversation but decides
        nothing (the state does): a stop the episode finds afterwards (a write behind the
        gateway, the task or the harness's code changed, the time limit) takes its place.
        Kept, it hid them: an agent whose user had left wrote its database behind the
        gateway, or emptied its task's assertions, and was graded a success.

        Nor does a failure of the environment or the user latched before the harness found
        its code, constants or task changed (stage ``harness_code``): the failure may be
        the tampering's doing (a harness constant swapped made every tool call crash), and
        kept, it made the attempt invalid, rerun, rather than the agent's prohibited action.
        (The probes for the state written or locked behind the gateway do not run after an
        environment's failure.)

        Nor does the time limit: an agent that rebound the harness's code and blocked was
        recorded at its limit (its rebinding only in the evidence), while one that returned
        at once was recorded for the rebinding (``prohibited_action``)."""
        with self._briefly_locked(wait):
            stop = self.stop
            if stop is None or _gives_way(stop, stage):
                self._keep_stop(Stop(error, stage, self._steps, self._elapsed()))
            return self.stop or Stop(error, stage, self._steps, self._elapsed())

    def end(self, wait: float | None = None) -> None:
        """Refuse every later call: the attempt is over (or cancelled) and its environment
        is about to close. Waits up to *wait* seconds (:data:`END_WAIT` when None) for a
        call in progress: the deadline bounds SQL, but not a tool blocked in Python (a sleep,
        a loop, a socket), which is left behind and named in :attr:`blocked_call`. Once
        ended, ending again waits for nothing."""
        if self._ended:
            return
        with self._briefly_locked(wait) as locked:
            self._ended = True
            if not locked:
                self.blocked_call, self.blocked_in_reply = self._in_call, self._in_reply

    @contextmanager
    def _briefly_locked(self, wait: float | None = None) -> Iterator[bool]:
        """The session's lock if it can be had within *wait* seconds. The episode must not
        wait on a call that never returns: it would hold up every attempt. Held, it names
        this thread its holder: agent code the garbage collector runs here meanwhile (a
        finalizer, a callback) that calls the session is refused, where it waited for the
        lock this very thread held, and the episode, with every attempt, hung for good."""
        lock = self._lock
        wait = END_WAIT if wait is None else wait
        locked = type(lock) is _LOCK and lock.acquire(timeout=wait)  # see busy
        if locked:
            self._holder = threading.get_ident()
        try:
            yield locked
        finally:
            if locked:
                self._holder = None
                lock.release()

    def record_final(self, text: str) -> None:
        """Put the agent's final reply in the trace, where constraints on messages see it."""
        self._keep(
            MessageEvent(
                step=self._steps + 1, role="agent", text=text, at=self._elapsed(), final=True
            )
        )

    # --- the pipeline behind call and say -------------------------------------------------

    @contextmanager
    def _turn(self, tool: Any) -> Iterator[None]:
        """A turn at the harness's work for one call of *tool* (see :mod:`groundstate.turns`),
        unless its calls outlasted the lease before (see :data:`WAITING_AFTER`): that tool
        waits on something. Taken
        before the session's lock, which the episode takes while it holds a turn."""
        key = (self._suite_root, tool)
        if key in _WAITING_TOOLS:
            yield
            return
        with turns.HARNESS.held() as turn:
            try:
                yield
            finally:
                self.queued += turn.waited
        outlasted = _OUTLASTED.get(key, 0) + 1 if turn.forfeited else 0
        _OUTLASTED[key] = outlasted
        if outlasted >= WAITING_AFTER:
            _WAITING_TOOLS.add(key)

    def _locked(self, action: Callable[..., _T], *args: Any) -> _T:
        """Run *action* in the caller's thread (the agent's own), under the session's lock.

        Not on the episode's thread: that thread runs every attempt of the batch, so a slow
        tool call there (a query running to the time limit) would hold up all the others.
        The lock serialises calls with the episode's own use of the session (latching a stop,
        reading the trace), and the environment's connections accept any thread.
        """
        with self._held():
            self._raise_if_stopped()
            return action(*args)

    def _call(self, tool: str, args: Any) -> ToolResult:
        if not _is_text(tool):
            self._latch(_mismatch(f"a tool name must be a str, got {_kind(tool)}"), "tool_call")
        tool = _plain_text(tool)
        step = self._next_step("tool_call")
        self._in_call = tool
        try:
            result = self._gateway.call(step, tool, args)
        except EnvironmentFailure as exc:
            self._latch(exc, "tool_call")
        except TimeLimitReached as exc:  # the call's SQL was interrupted at the deadline
            self._latch(exc, "time_limit")
        finally:
            self._in_call = None
        if result.error_class == "permission_denied" and self._ends_on("on_prohibited_action"):
            self._latch(ProhibitedAction(result.error or ""), "tool_call")
        return result

    def _say(self, text: str) -> str | None:
        if not _is_text(text):
            self._latch(_mismatch(f"a message must be a str, got {_kind(text)}"), "message")
        # As recorded (a lone surrogate escaped): what the user reads is what the trace shows,
        # and a user model's request can encode it (it could not: an invalid attempt).
        text = recordable(_plain_text(text))
        step = self._next_step("message")
        self._record_message("agent", text, step)
        if self._user.waits:
            self.asking_since = self._elapsed()
        self._in_reply = True
        try:
            reply = self._user.reply(text)
        except Exception as exc:  # the simulated user is part of the instrument
            failure = EnvironmentFailure(f"the user simulator failed: {type(exc).__name__}: {exc}")
            failure.__cause__ = exc
            self._latch(failure, USER_SIMULATOR)
        finally:
            self.asking_since, self._in_reply = None, False
        if self._ended:  # given up on while the user answered: nothing lands after the end
            raise AgentStop("the attempt is over")
        self._record_message("user", reply, step)
        return reply

    def _next_step(self, stage: str) -> int:
        if self._user.left and self._ends_on("on_user_stop"):
            self._latch(ConversationOver("the user has left"), stage)
        if self._steps >= self.step_limit:
            self._latch(StepLimitReached(f"step limit {self.step_limit} reached"), stage)
        try:
            return self._account.take_step()
        except AccountClosed:
            self._raise_if_stopped()  # the closed account's stop
            raise

    def _over_budget(self) -> str | None:
        budgets = self._system.budgets
        if budgets.max_cost is not None and self.cost > budgets.max_cost:
            return f"cost {self.cost:.4f} exceeds the budget {budgets.max_cost}"
        tokens = self.usage.input_tokens + self.usage.output_tokens
        if budgets.max_tokens is not None and tokens > budgets.max_tokens:
            return f"{tokens} tokens exceed the budget {budgets.max_tokens}"
        return None

    def _latch(self, error: BaseException, stage: str) -> NoReturn:
        """Latch *error* (the caller holds the lock) and raise it."""
        if self.stop is None:
            self._keep_stop(Stop(error, stage, self._steps, self._elapsed()))
        raise error

    def _raise_if_stopped(self) -> None:
        stop = self.stop
        if stop is not None:
            raise _again(stop.error)
        if self._ended:
            raise AgentStop("the attempt is over")

    def _trace_call(self, event: TraceEvent) -> None:
        """Keep a call's event, unless the attempt ended while it ran (a tool blocked past
        the end, named in :attr:`blocked_call`): the trace is being graded and recorded, its
        final reply last."""
        if not self._ended:
            self._keep(event)

    def _ends_on(self, condition: str) -> bool:
        return bool(getattr(self._task.terminal_conditions, condition) == "end")

    def _record_message(self, role: Any, text: str | None, step: int = 0) -> None:
        self._keep(MessageEvent(step=step, role=role, text=text, at=self._elapsed()))

    # --- the account ----------------------------------------------------------------------

    @property
    def stop(self) -> Stop | None:
        """The attempt's stop, latched in the account: the first, or a later one it gave way
        to (see :meth:`latch`). A stop changed since it was latched, or an account closed, is
        a prohibited action (stage ``harness_code``): code of the agent's reached them."""
        try:
            kept = self._account.read()
        except AccountClosed:
            return Stop(ProhibitedAction(CLOSED), REBOUND, 0, 0.0)
        current: Stop | None = None
        for entry in kept.stops:
            stop = _as_latched(entry)
            if current is None or _gives_way(current, stop.stage):
                current = stop
        return current

    @property
    def usage(self) -> CountedUsage:
        """The tokens reported, as counted in the account."""
        kept = self._kept()
        return CountedUsage(input_tokens=kept.usage[0], output_tokens=kept.usage[1])

    @property
    def cost(self) -> float:
        """The cost reported, as counted in the account."""
        return self._kept().usage[2]

    @property
    def usage_unknown(self) -> int:
        """How many usage reports said their usage is not known."""
        return self._kept().usage[3]

    def _kept(self) -> Kept:
        try:
            return self._account.read()
        except AccountClosed:
            return Kept(0, None, (), (0, 0, 0.0, 0))

    @property
    def _steps(self) -> int:
        """Steps taken, as counted in the account (an agent cannot set the count back)."""
        try:
            return self._account.read().steps
        except AccountClosed:
            return self.step_limit

    def _keep_stop(self, stop: Stop) -> None:
        with contextlib.suppress(AccountClosed):  # then the closed account is the stop
            self._account.keep_stop(stop)

    def _keep(self, event: TraceEvent) -> None:
        """Append *event* to the trace, and its JSON line as it is now to the account."""
        self.events.append(event)
        with contextlib.suppress(AccountClosed):
            self._account.keep_line(event_json(event))

    def _elapsed(self) -> float:
        return CLOCK() - self._started  # the clock as imported: the agent may replace time's


class AgentSession:
    """What the agent is handed: the :class:`~groundstate.agents.base.Session` protocol (and
    the optional extras the built-in adapters use) of an :class:`EpisodeSession`, and nothing
    else. The episode's session keeps the latch, the trace and the usage in attributes of its
    own; handed that object, an agent could clear a stop (``session.stop = None``), zero its
    cost or rewrite its trace with one assignment. Here each attribute is read-only."""

    __slots__ = ("_session",)

    def __init__(self, session: EpisodeSession) -> None:
        self._session = session

    @property
    def instructions(self) -> str:
        return self._session.instructions

    @property
    def user_request(self) -> str:
        return self._session.user_request

    @property
    def tools(self) -> list[ToolSpec]:
        return self._session.tools

    @property
    def seed(self) -> int:
        return self._session.seed

    @property
    def rng(self) -> random.Random:
        return self._session.rng

    @property
    def steps(self) -> int:
        return self._session.steps

    @property
    def step_limit(self) -> int:
        return self._session.step_limit

    @property
    def time_limit(self) -> float:
        return self._session.time_limit

    @property
    def remaining(self) -> float:
        """Seconds left before the time limit (an adapter will not wait out a retry past it)."""
        return self._session.remaining

    @property
    def hidden_paths(self) -> tuple[Any, ...]:
        return self._session.hidden_paths

    async def call(self, tool: str, args: dict[str, Any] | None = None) -> ToolResult:
        return await self._session.call(tool, args)

    async def say(self, text: str) -> str | None:
        return await self._session.say(text)

    def record_usage(
        self,
        *,
        input_tokens: int | None = 0,
        output_tokens: int | None = 0,
        cost: float | None = 0.0,
    ) -> None:
        self._session.record_usage(
            input_tokens=input_tokens, output_tokens=output_tokens, cost=cost
        )

    def record_model_call(self, call: ModelCall) -> None:
        self._session.record_model_call(call)

    def add_artifact(self, name: str, text: str) -> None:
        self._session.add_artifact(name, text)

    def give_up(self, reason: str) -> NoReturn:
        self._session.give_up(reason)


def _replying(session: EpisodeSession) -> bool:
    """Whether a thread is in *session*'s :meth:`EpisodeSession._say` now, waiting for the
    user's reply: read from the threads' stacks, which Python code cannot forge, not from
    the session's ``asking_since``, which an in-process agent can set. Before, an agent that
    set it to 0 and then blocked past its time limit made that limit the user simulator's
    failure (an invalid attempt, rerun)."""
    say = EpisodeSession._say.__code__  # (the class's method is watched: see bindings)
    for top in list(sys._current_frames().values()):
        frame: FrameType | None = top
        while frame is not None:
            if frame.f_code is say and frame.f_locals.get("self") is session:
                return True
            frame = frame.f_back
    return False


def _as_latched(entry: tuple[Any, ...]) -> Stop:
    """A stop kept in the account, or, changed since (its error swapped), the prohibited
    action that change is."""
    if not altered(entry):
        return cast(Stop, entry[0])
    _, _, _, error_kind, stage, step, at = entry
    why = f"changed the attempt's latched stop ({error_kind.__name__} at {stage})"
    return Stop(ProhibitedAction(why), REBOUND, step, at)


def _gives_way(stop: Stop, stage: str) -> bool:
    """Whether the latched *stop* gives way to a stop found at *stage* (see
    :meth:`EpisodeSession.latch`)."""
    if isinstance(stop.error, ConversationOver):
        return True
    return isinstance(stop.error, EnvironmentFailure | TimeLimitReached) and stage in (
        REBOUND,
        SIGNALLED,
    )


def _check_headroom() -> None:
    """Refuse a call made within :data:`HEADROOM` frames of the recursion limit (the agent's
    crash: no step is taken, nothing is latched). One C-level walk of the stack, done only
    as deep as the stack is."""
    limit = sys.getrecursionlimit()
    try:
        sys._getframe(max(limit - HEADROOM, 0))
    except ValueError:  # the stack is shallower: room enough
        return
    raise RecursionError(
        f"a session call needs {HEADROOM} frames below the recursion limit ({limit}); "
        "the agent's stack is deeper"
    )


def _mismatch(message: str) -> HarnessCompatibilityError:
    return HarnessCompatibilityError(f"protocol mismatch: {message}")


def _kind(value: Any) -> str:
    return type_name(type(value))


def _is_text(value: Any) -> bool:
    """Whether *value* is a ``str`` by its real type (``isinstance`` believes a ``__class__``
    property, and ``str.__str__`` then fails on the impostor)."""
    return issubclass(type(value), str)


def _plain_text(text: str) -> str:
    """*text* as a plain ``str``: a subclass could hash, compare or lower-case as another
    text than the one recorded (look up one tool and be traced as another, or hide a card
    number from a message check)."""
    return text if type(text) is str else str.__str__(text)


def _plain_data(args: Any) -> Any:
    """The agent's arguments as JSON data of their own (what the gateway validates, records
    and hands the tool is then one object): a ``dict`` subclass could show the validator
    other values than the tool gets (and crash it: an invalid attempt of the agent's making),
    and the agent's helper thread could change a nested list while the tool runs. What is
    not JSON becomes :class:`NotJson` (a bounded ``repr`` and what is not JSON), which the
    gateway refuses as invalid arguments naming it (and the
    agent's object is not touched again: the harness's later reads run under the session's
    lock)."""
    try:
        return _copied(args)
    except Exception:  # not JSON (nested past the stack too), or a subclass's methods raise
        return NotJson.of(args)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _copied(value: Any) -> Any:
    """A copy of *value*: plain dicts, lists and scalars directly (most arguments; a JSON
    round trip costs several times more), anything else (a subclass, a tuple) through JSON."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is list:
        return [_copied(item) for item in value]
    if kind is dict and all(type(key) is str for key in value):
        return {key: _copied(item) for key, item in value.items()}
    return json.loads(json.dumps(value, allow_nan=False))


def _call_data(call: ModelCall) -> dict[str, Any]:
    """A model call's fields as JSON data of their own. The agent's ``ModelResponse`` (a model
    is not copied when it validates) stayed in the trace as the agent's object: changed after
    the call (its tool calls made a number, say, also from a thread while the checks read),
    the constraints raised in the harness, and the attempt had no record. Anything the model
    cannot serialize (a field set to another type after it was made) is the agent's error."""
    checked = ModelCall.model_validate(dict(call))
    data: dict[str, Any] = json.loads(checked.model_dump_json(warnings="error"))
    return data


_UNCHECKABLE = (
    "the usage of a model call is not known (the API did not report its tokens), so the "
    "declared budget cannot be checked: "
)


def odd_usage(input_tokens: Any, output_tokens: Any, cost: Any) -> str | None:
    """Why a usage report breaks the protocol (tokens are counts, cost a finite amount, none
    negative; ``None``, not known, is no count), or None."""
    for name, count in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
        if count is not None and (type(count) is not int or count < 0):
            return f"{name} must be a non-negative int, got {stable_repr(count)}"
    if cost is None:
        return None
    if type(cost) not in (int, float) or not _finite(cost) or cost < 0:
        return f"cost must be a non-negative finite number, got {stable_repr(cost)}"
    return None


def _finite(number: float) -> bool:
    """Whether *number* is finite as the cost is kept (a float): an int past the float range
    (``10**400``) would make adding it raise, the report refused and its budget dodged."""
    try:
        return math.isfinite(number)
    except OverflowError:
        return False


def _recorded_usage(session: EpisodeSession | None) -> Usage:
    """The attempt's tokens for its record: not known (``None``, not 0) once any report said
    so. A plain Usage, as the record reads back (CountedUsage only types the counting)."""
    if session is None:
        return Usage()
    if session.usage_unknown:
        return Usage(input_tokens=None, output_tokens=None)
    return Usage(**session.usage.model_dump())


def _recorded_cost(session: EpisodeSession | None) -> float | None:
    """The attempt's cost for its record: not known once any report's usage was not."""
    if session is None:
        return 0.0
    return None if session.usage_unknown else session.cost


def _again(error: BaseException) -> BaseException:
    """A fresh exception of the latched kind (re-raising one object grows its traceback)."""
    try:
        return type(error)(*error.args)
    except Exception:  # an exception class with an unusual constructor
        return error


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

    def interrupt(self, exc: BaseException, stage: str, reason: str | None = None) -> None:
        """Interrupted by the harness's own *exc* (read here: never an agent's object)."""
        self.interrupted(
            reason or interruption_reason(exc, stage),
            stage,
            type(exc).__name__,
            exception_text(exc),
            traceback.format_exception(exc)[-3:],
        )

    def interrupted(
        self, reason: str, stage: str, kind: str, message: str, lines: list[str]
    ) -> None:
        self.interruption = reason
        self.evidence["exception"] = {
            "stage": stage,
            "type": kind,
            "message": message,
            "traceback": lines,
        }


GRADING: ContextVar[Callable[[], None] | None] = ContextVar("groundstate_grading", default=None)
"""Called, when set, as an attempt's grading starts (its agent is done): a process-pool worker
(a Ray task) tells its parent, so that a death of the worker from then on is the grader's, not
the agent's (see :mod:`groundstate.executors.local`)."""


async def run_attempt(
    task: AgentTask,
    suite: Suite,
    system: SystemSpec,
    agent: Agent,
    info: AttemptInfo,
    make_env: EnvironmentFactory = default_environment,
    *,
    user: User | None = None,
) -> AttemptOutput:
    """Run one attempt of *agent* on *task* in a fresh environment and grade it (with *user*
    as the simulated user when given, else the one *system* declares).

    The harness's own work runs in turns (:mod:`groundstate.turns`), given back while the
    agent runs and while checks that wait (judges, tests) run; the time spent waiting for
    turns is queueing, left out of the recorded latency."""
    started_at, t0 = datetime.now(UTC), CLOCK()
    progress = _Progress()
    # The one place that decides whether the watches against in-process code run (see
    # groundstate.untrusted): not for the suite's own replay, nor an agent in another process.
    watch = _Watch.now() if shares_interpreter(agent, user) else None
    account = Account()  # held here too: the session's may be rebound (see _untrue)
    counts = account.counts  # and what it takes in, counted apart (see _untrue)
    session: EpisodeSession | None = None
    with turns.HARNESS.held() as turn, captured() as printed:  # printed: kept as artifacts
        try:
            env = make_env(task, suite)
        except Exception as exc:  # whatever breaks while building it is the environment's fault
            progress.interrupt(_as_environment_failure(exc, "setup"), "setup")
        else:
            with env:
                session = await _episode(
                    task,
                    suite,
                    system,
                    agent,
                    env,
                    info.seed,
                    progress,
                    turn,
                    user,
                    account,
                    watch=watch,
                )
        latency = CLOCK() - t0 - turn.waited
        latency -= _queued(session, latency)
        output = _record(task, system, info, progress, session, started_at, latency)
        if watch is None and audit_hooks_refused():  # untrusted code came in meanwhile
            watch = _Watch.now()  # the last look only
        if session is not None and (
            # By a thread of the agent's (reads all code).
            (watch is not None and _rebound(session, progress, watch))
            | _untrue(session, account, progress, output, counts)
        ):
            output = _rerecorded(task, system, info, progress, session, started_at, latency)
    output.artifacts.update(printed.artifacts())
    forget_interruption(TRY.get())
    return output


def _queued(session: EpisodeSession | None, latency: float) -> float:
    """The seconds the agent's tool calls waited for a turn, as the session counted them,
    within what the attempt took (*latency*, queueing for its own turns left out): the count
    is an attribute of the session an in-process agent can set, and one set to 1e9 or NaN
    was recorded as a negative or NaN latency."""
    queued = session.queued if session is not None else 0.0
    if not isinstance(queued, float | int) or not math.isfinite(queued):
        return 0.0
    return min(max(float(queued), 0.0), max(latency, 0.0))


async def _episode(
    task: AgentTask,
    suite: Suite,
    system: SystemSpec,
    agent: Agent,
    env: Environment,
    seed: int,
    progress: _Progress,
    turn: Turn,
    user: User | None = None,
    account: Account | None = None,
    *,
    watch: _Watch | None,
) -> EpisodeSession | None:
    """The attempt from its reset to its grading. *watch*: taken when untrusted Python code
    shares the interpreter (:func:`~groundstate.untrusted.shares_interpreter`); None: the
    watches against in-process code (the harness's code rebound, the system's and the task's
    fields changed in memory) are not run: only such code could set them off."""
    progress.evidence["environment"] = env.name
    progress.evidence["health_before"] = env.health()
    try:
        progress.initial_hash = reset_checked(env, task, seed)
        s0 = initial_snapshot(env)
    except Exception as exc:  # an environment that cannot reset is at fault, not the agent
        progress.interrupt(_as_environment_failure(exc, "reset"), "reset")
        return None
    session = EpisodeSession(task, suite, system, env, seed, user, account)
    kept, entered = session._account, _calls_entered(env)  # before the agent runs
    reports_writes = getattr(env, "reports_writes", False) is True  # (its class: rebindable)
    cwd = os.getcwd()
    held: tuple[Held, ...] = ()
    shape: str | None = None
    mark: Mark | None = None
    if watch is not None:  # (audit hooks were refused as that was decided: see untrusted)
        HARNESS.refresh()  # modules loaded since the last attempt: their import is no change
        held = _held(session, env)
        shape = _shape(system)
        mark = HARNESS.mark()  # last: what the agent's run writes back is looked for from here

    def rebound(mark: Mark | None) -> bool:  # code set through C: by the last look
        if watch is None:
            return False
        return _rebound(session, progress, watch, mark, held, read_code=False)

    left = Watch(f"the agent of {system.name!r} on task {task.task_id!r} (seed {seed})")
    RESERVE.keep()
    try:
        with turn.paused():  # the agent holds no turn: it may block, spin or wait
            await _drive(agent, session, progress, watched=watch is not None)
    finally:  # cancelled too: an agent thread still running must not touch a closed environment
        # First: the session's own may be the ones. Code set through C: by the last look.
        rebound(mark)
        _closed(env, session)
        if watch is not None:
            _resystemed(system, shape, session)
        _signalled(session)
        left.done()  # what Python would wait for at exit: named when `run` ends without it
        try:
            await _unheld(session, session.end)
        finally:
            _back_to(cwd, progress)
    _take_stop(session, progress)  # after the end: a call still in flight may have latched one
    if RESERVE.spend_if_exhausted():  # the grading and the record need some
        progress.evidence["descriptors_exhausted"] = True
    if session.blocked_call is not None:
        progress.evidence["blocked_in_tool"] = session.blocked_call
    if session.blocked_in_reply:
        progress.evidence["blocked_in_user_reply"] = True
    if session.user_left_because is not None:
        progress.evidence["user_left"] = session.user_left_because
    if not (progress.interruption or "").startswith("environment_failure"):
        if _behind_gateway(env, session, "locked_outside_calls", "locked"):
            _take_stop(session, progress)  # the checks cannot read it: not graded
        else:
            grading = GRADING.get()
            if grading is not None:
                grading()
            _grade(task, suite, env, s0, session, progress, turn)
        # After grading too: an agent's own thread may write or lock the file while the
        # checks read it (code rebound meanwhile is looked for once the record is built).
        read = _AccountRead(kept)
        if (
            # By a thread of the agent's, meanwhile (code set through C: by the last look).
            rebound(None)
            or _closed(env, session)
            or (watch is not None and _resystemed(system, shape, session))
            or _signalled(session)
            or _behind_gateway(env, session, "written_outside_calls", "written")
            or _outside_session(env, session, read, entered)
            or (reports_writes and _untraced_change(session, read, progress))
            or _unlatched(session, read)
            or _behind_gateway(env, session, "locked_outside_calls", "locked")
            or (watch is not None and _regraded(task, suite, session))
            or _starved(session, progress)
        ):
            _take_stop(session, progress)
    progress.evidence["health_after"] = env.health()
    return session


def _as_environment_failure(exc: Exception, stage: str) -> EnvironmentFailure:
    """*exc* as an :class:`EnvironmentFailure` (an ``OSError`` in setup, a buggy factory...)."""
    if isinstance(exc, EnvironmentFailure):
        return exc
    failure = EnvironmentFailure(f"environment {stage} failed: {type(exc).__name__}: {exc}")
    failure.__cause__ = exc
    return failure


def reset_checked(env: Environment, task: AgentTask, seed: int | None = None) -> str:
    """Reset *env* and check the task's declared initial state hash; return the hash."""
    initial_hash = env.reset(seed=seed)
    declared = task.reset_check.initial_state_hash
    if declared is not None and declared != initial_hash:
        raise ResetCheckFailed(
            f"reset gave state {initial_hash[:12]}, the task declares {declared[:12]}"
        )
    return initial_hash


def _behind_gateway(env: Environment, session: EpisodeSession, probe: str, what: str) -> bool:
    """Latch a prohibited action when the environment's *probe* finds it written
    (``written_outside_calls``) or locked (``locked_outside_calls``) behind the gateway (an
    in-process agent, or a thread of its, that opened the database file itself): a state
    written so is graded on no tool call, so no constraint saw how it came about; a state
    locked so cannot be graded, and its grader failure would make the attempt invalid.
    Environments that cannot tell (no such method) are not checked."""
    found = getattr(env, probe, None)
    if _call_left_running(session) or found is None:
        return False  # a tool still running may be mid-write: no sound reading
    try:
        reason = found()
    except Exception:  # unreadable: the final state's read has said so
        return False
    if reason is None:
        return False
    session.latch(ProhibitedAction(f"{what} behind the tool gateway: {reason}"), OUTSIDE)
    return True


def _shape(system: SystemSpec) -> str | None:
    """*system*'s fields as text, to find them changed in place (see :func:`_resystemed`)."""
    try:
        return system.model_dump_json()
    except Exception:  # a field the agent set to what JSON cannot hold
        return None


def _resystemed(system: SystemSpec, shape: str | None, session: EpisodeSession) -> bool:
    """Latch a prohibited action when the system's fields changed in memory since the agent
    began (its models are frozen, their fields' own are not: ``object.__setattr__`` passes):
    an in-process agent that set ``system.budgets.max_cost`` to None spent past its budget
    and passed. Its task's fields are looked at by :func:`_regraded`."""
    if _shape(system) == shape:
        return False
    why = "the system's fields (budgets, limits, stop conditions) were changed in memory"
    session.latch(ProhibitedAction(why), REBOUND)
    return True


def _signalled(session: EpisodeSession) -> bool:
    """Latch a prohibited action when the attempt's agent sent its own process SIGINT or
    SIGTERM (``os.kill(os.getpid(), SIGINT)``, ``signal.raise_signal``, ``os.killpg``,
    ``signal.pthread_kill``) while a batch ran it in-process: refused as it was made (see
    :mod:`groundstate.exitcause`); before, it stopped the whole batch as the user's Ctrl-C
    does, its own attempt unstored. Also when code in the process stopped the batch's event
    loop (or raised ``SystemExit`` in it) while the attempt was in flight: at stage
    ``harness_code``."""
    call = interruption_sent(TRY.get())
    if call is not None:
        why = f"the agent sent its own process an interruption: {call} (the batch's are its user's)"
        session.latch(ProhibitedAction(why), SIGNALLED)
        return True
    what = disruption_of(TRY.get())  # held by groundstate.steadyloop, the batch went on
    if what is None:
        return False
    session.latch(ProhibitedAction(f"code in the process {what} while the agent ran"), REBOUND)
    return True


def _closed(env: Environment, session: EpisodeSession) -> bool:
    """Latch a prohibited action when the environment's optional ``closed_outside_calls``
    finds one of the harness's own handles on it closed: an in-process agent (or a thread
    of its) that found the connection and closed it made its next tool call, or the final
    state's read, fail as the environment's, an invalid attempt that is rerun. At stage
    ``harness_code``, so that an environment failure latched meanwhile gives way to it."""
    probe = getattr(env, "closed_outside_calls", None)
    if probe is None:
        return False
    try:
        reason = probe()
    except Exception:  # unreadable: not this probe's to say
        return False
    if reason is None:
        return False
    session.latch(ProhibitedAction(f"closed behind the tool gateway: {reason}"), REBOUND)
    return True


def _call_left_running(session: EpisodeSession) -> bool:
    """Whether a tool call was still running as the session ended (named in its
    ``blocked_call``), so that the probes after the run have no sound reading. The harness
    names one only with the stop it ran into latched (the time limit, or the failure that
    took its place); named with none latched (or only the user's leaving), the name is the
    agent's own, set on the session to skip the probes: before, an agent that wrote the
    answer to the database file itself and then set ``blocked_call`` passed."""
    if session.blocked_call is None:
        return False
    stop = session.stop
    return stop is not None and not isinstance(stop.error, ConversationOver)


UNENTERED = frozenset({"unknown_tool", "invalid_arguments"})
"""Error classes of the calls the gateway refuses before the environment is entered."""


def _calls_entered(env: Environment) -> int | None:
    """The tool calls *env* has entered (its optional ``calls_entered``), or None."""
    probe = getattr(env, "calls_entered", None)
    if probe is None:
        return None
    try:
        return int(probe())
    except Exception:  # unreadable: not checked
        return None


class _AccountRead:
    """The attempt's account as the checks after grading read it (:func:`_outside_session`,
    :func:`_unlatched`): read once, when the first of them asks, and each trace line parsed
    at most once, when a check first looks at it (each check walked the account and parsed
    every line it looked at of its own: about a tenth of a millisecond per attempt). Raises
    :class:`AccountClosed` as the account does, and what parsing a line raises where the
    checks parsed it before."""

    __slots__ = ("_account", "_parsed", "_read")

    def __init__(self, account: Account) -> None:
        self._account = account
        self._read: tuple[int, list[str]] | None = None
        self._parsed: list[Any] = []

    def steps(self) -> int:
        return self._kept()[0]

    def events(self) -> Iterator[Any]:
        """Each trace line, oldest first, as parsed (whatever JSON it holds)."""
        lines = self._kept()[1]
        for i, line in enumerate(lines):
            if i == len(self._parsed):
                self._parsed.append(json.loads(line))
            yield self._parsed[i]

    def _kept(self) -> tuple[int, list[str]]:
        if self._read is None:
            kept = self._account.read()
            self._read = (kept.steps, kept.trace_lines())
        return self._read


def _outside_session(
    env: Environment, session: EpisodeSession, account: _AccountRead, before: int | None
) -> bool:
    """Latch a prohibited action when *env* entered more tool calls while the agent ran than
    the attempt's *account* holds: an in-process agent that made a call through a gateway
    or a transaction of its own (``ToolGateway(...).call``, ``env.tool_transaction()``), or
    with an account of its own in the session's place (put back after, the call taken out
    of the trace), changed the state with no trace and no latch (a read its task forbids,
    a transfer before the PIN): graded on its final state, it passed. Environments that
    cannot count (no ``calls_entered``) are not checked."""
    if before is None or _call_left_running(session):
        return False  # a tool still running may not have recorded its call yet
    after = _calls_entered(env)
    if after is None:
        return False
    try:
        events = account.events()
        traced = sum(1 for event in events if _entered_call(event))
    except AccountClosed:  # the closed account is the stop (see _untrue)
        return False
    if min(before, after) >= 0 and after - before == traced:
        return False
    why = (
        f"called the environment outside the session: {after - before} tool calls entered, "
        f"{traced} in the attempt's trace"
        if min(before, after) >= 0
        else "broke the environment's count of the tool calls it entered"
    )
    session.latch(ProhibitedAction(why), REBOUND)
    return True


def _untraced_change(session: EpisodeSession, account: _AccountRead, progress: _Progress) -> bool:
    """Latch a prohibited action when the final state changed a table (a workspace's files)
    that no tool call in the attempt's *account* reports writing. The count of the calls
    entered (:func:`_outside_session`) is kept by code the agent can reach around: a
    transaction of the environment's entered past the counting wrapper (its function taken
    from the wrapper's closure, a kind's inner ``_call``), or a count of its own in the
    environment's place for a moment, wrote with no count and no trace. The final diff is
    the environment's own reading of its state, and the account's calls the trace as it
    happened: a change neither explains was made behind the session."""
    if progress.diff is None or _call_left_running(session):
        return False  # not read; or a tool still running may not have recorded its call yet
    try:
        written = {table for event in account.events() for table in _tables_written(event)}
    except AccountClosed:  # the closed account is the stop (see _untrue)
        return False
    untraced = sorted(set(progress.diff.tables) - written)
    if not untraced:
        return False
    why = f"changed {', '.join(untraced[:5])} with no tool call in the attempt's trace writing it"
    session.latch(ProhibitedAction(why), OUTSIDE)
    return True


def _tables_written(event: Any) -> list[str]:
    """The tables a trace line, parsed, reports a tool call changing."""
    if event.get("kind") != "tool_call":
        return []
    tables = event.get("changed_tables")
    return [str(table) for table in tables] if isinstance(tables, list) else []


def _unlatched(session: EpisodeSession, account: _AccountRead) -> bool:
    """Latch a prohibited action when the attempt's *account* holds what should have
    stopped it, with no stop latched: a call denied under ``on_prohibited_action: end``, or
    more steps than the limit. The agent put an account of its own in the session's place
    for the call (the stop went there), then the real one back with the call's event and
    step added to it by hand (``Account.keep_line``, ``take_step``): the trace agreed with
    the account, and the attempt passed. Or more cost or tokens than the system's budget:
    the agent loosened the budget in place for its spending and put it back before its run
    ended (:func:`_resystemed` compares the fields only as the run ends)."""
    stop = session.stop
    if stop is not None and not isinstance(stop.error, ConversationOver):
        return False
    try:
        steps, events = account.steps(), account.events()
    except AccountClosed:  # the closed account is the stop (see _untrue)
        return False
    if steps > session.step_limit:
        why = f"{steps} steps in the attempt's account, past the limit {session.step_limit}"
    elif session._ends_on("on_prohibited_action") and any(map(_denied_call, events)):
        why = "a denied call in the attempt's account"
    elif (over := session._over_budget()) is not None:
        why = f"{over} in the attempt's account"
    else:
        return False
    session.latch(ProhibitedAction(f"{why}, with no stop latched"), REBOUND)
    return True


def _denied_call(event: Any) -> bool:
    """Whether a trace line, parsed, is a tool call the permissions denied."""
    return bool(
        event.get("kind") == "tool_call" and event.get("error_class") == "permission_denied"
    )


def _entered_call(event: Any) -> bool:
    """Whether a trace line, parsed, is a tool call that entered the environment."""
    return event.get("kind") == "tool_call" and event.get("error_class") not in UNENTERED


def _starved(session: EpisodeSession, progress: _Progress) -> bool:
    """Latch a prohibited action when a check could not be evaluated while the process has
    fewer than ``ROOM`` file descriptors free, the reserve let go
    (:mod:`groundstate.descriptors`): a thread of the agent's that went on opening them took
    those too. Its grader failure would have made the attempt invalid, rerun: the agent's
    own doing."""
    checks = progress.assertions + progress.constraints
    if not any(result.error is not None for result in checks):
        return False
    if not RESERVE.spend_if_exhausted():
        return False
    why = "took every file descriptor of the process: the checks could not run"
    session.latch(ProhibitedAction(why), OUTSIDE)
    return True


def _regraded(task: AgentTask, suite: Suite, session: EpisodeSession) -> bool:
    """Latch a prohibited action when the task's grading objects are no longer those loaded
    (an in-process agent that found the task and emptied its assertions): then nothing
    graded is the task's. Not put back: each later attempt of the task is stopped alike."""
    loaded = suite.graders.get(task.task_id)
    if loaded is None or suite.tasks.get(task.task_id) is not task:
        return False  # a task made apart from its suite (a mutant, a test's)
    if same_grader_shape(grader_shape(task), loaded):
        return False
    why = "the task's fields (limits, conditions or grading) were changed in memory since loading"
    session.latch(ProhibitedAction(why), REBOUND)
    return True


SESSION_RUN_STATE = frozenset(
    {"_ended", "_in_call", "asking_since", "blocked_call", "_in_reply", "blocked_in_reply"}
    | {"_holder", "queued", "artifacts"}
)
"""The attributes of an :class:`EpisodeSession` that move while its agent runs (the others
are bound once, before it runs: see :func:`_held`)."""


def _held(session: EpisodeSession, env: Environment) -> tuple[Held, ...]:
    """The attempt's own objects, as the harness set them up, to find what an in-process
    agent rebinds on them: the session's task, system, account, lock, trace list, user and
    gateway, the gateway's tools and environment, and code added on the environment or the
    user (a ``reply`` that blocks, to pass the agent's time limit off as the user's)."""
    return (
        Held(session, "the attempt's session", SESSION_RUN_STATE),
        Held(session._gateway, "the attempt's gateway", frozenset()),
        Held(env, "the attempt's environment", None),
        Held(session._user, "the attempt's user", None),
    )


class _Watch(NamedTuple):
    """The watch against in-process code rebinding the harness's, taken as an attempt
    starts when untrusted code shares the interpreter (see :func:`_rebound`)."""

    seal: Seal
    """The watch itself (see :meth:`~groundstate.bindings.Bindings.seal`)."""
    restores: list[int]
    """Where the standard library's wake path put back is read from."""

    @classmethod
    def now(cls) -> _Watch:
        return cls(HARNESS.seal(), wake_restores_now())


def _rebound(
    session: EpisodeSession,
    progress: _Progress,
    watch: _Watch,
    mark: Mark | None = None,
    held: tuple[Held, ...] = (),
    *,
    read_code: bool = True,
) -> bool:
    """Latch a prohibited action when the harness's code was rebound while the agent ran or
    the attempt was graded (``groundstate.episode.classify = lambda *a: "success"``, a
    check's or an environment's method replaced), and bind it as it was: the grading and
    the record are the harness's, this attempt's and the next's. In-process, an attempt
    running beside the one that rebound it is stopped too (the system under test is the
    same; nothing says which of them did it). *mark*: taken as the agent's run began, to
    find code rebound for a while and put back before the run ended (the environment's
    counted ``tool_transaction`` swapped for its uncounted one around a write of the
    agent's: no count, no trace, and nothing left to put back). *watch*: the watch itself as
    the attempt began, put back first when the agent changed it (see
    :meth:`~groundstate.bindings.Bindings.seal`), and where the names of the standard
    library's wake path put back (by any attempt's thread: see
    :func:`~groundstate.loopthreads.take_wake_restored`) are read from. *held*: the attempt's
    own objects, whose attributes rebound (the session's task, a method set on the
    environment object) are named and put back alike (see
    :class:`~groundstate.bindings.Held`). *read_code* False: the harness's functions'
    code and defaults are read only if the audit hook noted a set (see
    :meth:`~groundstate.bindings.Bindings.put_back`); the attempt's last look reads them."""
    seal, restores = watch
    names = HARNESS.unsealed(seal)
    names += take_wake_restored(restores)  # the wake path, set back before this look
    names += [f"{where} (written and put back)" for where in HARNESS.written_back(mark)]
    names += HARNESS.put_back(read_code=read_code)
    if names:  # the harness's own names put back: the wake path's may be among them
        # An agent that rebound what the wake path compares with (``loopthreads.
        # _FIRST_WORDS``, ``_unchanged``) and dropped ``threading.Event.set`` had it left
        # dropped past this look, for the next attempt's thread to put back and be named for.
        put_back_wake_path(None)
        names += take_wake_restored(restores)
    for one in held:  # called on the class: the agent may have set code on its instance's
        changed = Held.changed(one)
        if changed:
            Held.put_back(one)
            names += changed
    if not names:
        return False
    progress.evidence.setdefault("harness_rebound", []).extend(names[:20])
    why = f"rebound the harness's code: {', '.join(names[:5])}"
    session.latch(ProhibitedAction(why), REBOUND)
    return True


def _untrue(
    session: EpisodeSession,
    account: Account,
    progress: _Progress,
    output: AttemptOutput,
    counts: Counts | None = None,
) -> bool:
    """Whether the record built must be built again: it differs from the attempt's account
    (:mod:`groundstate.account`). Code of the agent's (a thread left running, say) that
    reached the episode's objects through the session, the garbage collector or a frame and
    replaced the session's account, closed it or changed the trace (or put an event of
    another class than the trace's own in it: see :func:`~groundstate.trace.genuine`)
    latches a prohibited
    action (stage ``harness_code``; the record's trace is then the account's, as it
    happened); one that cleared what the episode established (``progress.interruption``)
    gets the latched stop's reason back. *counts*: what the account took in, counted apart
    as it was made; a generator holding other numbers was rewritten (a tracer of the
    agent's that resumed it itself and erased a stop, the steps or trace lines)."""
    found = []
    if session._account is not account:
        session._account = account
        found.append("replaced the session's account")
    with contextlib.suppress(AccountClosed):  # (found below)
        if counts is not None and not account.agrees_with(counts):
            found.append("rewrote the attempt's account (its steps, trace or stops)")
    try:
        text = "".join(line + "\n" for line in account.trace_lines())
    except AccountClosed:
        found.append("closed the attempt's account")
    else:
        if found:  # the events kept meanwhile went to the agent's account: keep the session's
            pass
        elif output.artifacts.get("trace.jsonl") != text or not genuine(
            output.run.observation_action_log
        ):
            session.events = load_jsonl(text)
            found.append("changed the trace after it was recorded")
        found.extend(_unissued_steps(session.events, account.read().steps))
    if found:
        progress.evidence.setdefault("harness_state_changed", []).extend(found)
        session.latch(ProhibitedAction(f"{found[0]} (the harness's state)"), REBOUND)
        return True
    stop = session.stop
    if stop is None or isinstance(stop.error, ConversationOver):
        return False
    stage = "tool_crash" if stop.kind == "tool_crash" else stop.stage
    return output.run.terminal_reason != interruption_reason(stop.error, stage)


def _unissued_steps(events: list[TraceEvent], steps: int) -> list[str]:
    """A tool call or message in the trace at a step the session never gave, or at one given
    to another: the agent called the gateway itself (``session._session._gateway.call``),
    past the step limit and the latch, where a denied call stops nothing."""
    taken: set[int] = set()
    for event in events:
        if isinstance(event, MessageEvent) and (event.role != "agent" or event.final):
            continue
        if not isinstance(event, (MessageEvent, ToolCallEvent)):
            continue
        if event.step in taken or not 0 < event.step <= steps:
            return [f"called the gateway outside the session (step {event.step})"]
        taken.add(event.step)
    return []


def _rerecorded(
    task: AgentTask,
    system: SystemSpec,
    info: AttemptInfo,
    progress: _Progress,
    session: EpisodeSession,
    started_at: datetime,
    latency: float,
) -> AttemptOutput:
    """The record again, with the stop :func:`_rebound` has just latched: the code that
    graded the attempt or built its record was rebound meanwhile (by a thread the agent
    left running). If the classifier lies again (that thread is at it still), the stop's
    reason is written over its answer."""
    _take_stop(session, progress)
    output = _record(task, system, info, progress, session, started_at, latency)
    reason = progress.interruption
    if reason is not None and output.run.terminal_reason != reason:
        update = {"terminal_reason": reason, "success": False}
        output.run = output.run.model_copy(update=update)
    return output


def _back_to(cwd: str, progress: _Progress) -> None:
    """Put the process's working directory back if the agent changed it: the harness's
    relative paths (the suite's checks, the system's files, the store) must not follow it."""
    try:
        if os.getcwd() == cwd:
            return
    except OSError:  # the agent removed the directory it moved to
        pass
    with contextlib.suppress(OSError):  # the harness's own directory removed: nothing to do
        os.chdir(cwd)
    progress.evidence["cwd_restored"] = cwd


async def _drive(
    agent: Agent, session: EpisodeSession, progress: _Progress, *, watched: bool = True
) -> None:
    """Run the agent to its end or its time limit (an agent program's adapter may end at the
    limit itself: a ``TimeLimitReached`` from the agent is the limit too). What the agent
    returned or raised arrives as plain data (see :mod:`groundstate.returned`)."""
    # The latest the episode waits for a call in flight once the agent has returned, read
    # before it runs: an agent that set the session's time limit (its task), or END_WAIT, to
    # an hour, and held the session in a thread of its own, held the episode that long.
    until = CLOCK() + session.time_limit + END_WAIT
    put_back: list[str] = []
    try:
        final = await run_agent(agent, session, watched=watched, put_back=put_back)
    except TimeLimitReached as exc:  # the episode's own, at the limit
        await _unheld(session, _latch_time_limit, session, exc)
    except AgentRaised as raised:
        _take_raised(raised, session, progress)
    except Exception as exc:  # a crash the agent's thread reported (loopthreads.as_exception)
        if session.stop is None:
            progress.interrupt(exc, "agent", CRASHED)
    else:
        await _end_after_return(session, until)
        _take_final(final, session, progress)
    finally:
        if put_back:  # the process-wide state the agent left changed (see loopthreads)
            progress.evidence[PUT_BACK] = put_back[:20]


PUT_BACK = "process_state_put_back"
"""The evidence naming the process-wide state an in-process agent left changed, put back as
its run ended (``sys.meta_path``, ``socket.setdefaulttimeout()``, ``gc.enable()``: see
:mod:`groundstate.loopthreads`). No stop: code may set them lawfully for its own use."""


async def _unheld(session: EpisodeSession, action: Callable[..., None], *args: Any) -> None:
    """Run *action*, which waits for the session's lock (up to :data:`END_WAIT`), in a thread
    when a call holds it (a tool blocked in Python, a slow user): this loop runs every
    attempt of the batch, and would be held as long."""
    if session.busy:
        await in_thread(action, *args)
    else:
        action(*args)


def _latch_time_limit(
    session: EpisodeSession, exc: TimeLimitReached, wait: float | None = None
) -> None:
    failing = session.model_serving_failing()
    if session.user_used_the_time():  # a slow or rate-limited user model: an invalid attempt
        why = f"the user simulator had not answered when the {exc}"
        session.latch(EnvironmentFailure(why), USER_SIMULATOR, wait)
    elif failing is not None and failing.error is not None:
        # The agent's model was failing and its adapter retrying: time spent waiting out the
        # provider is not the agent's (docs/models.md), as a retry past the limit is not.
        error = failing.error
        why = f"the model's API was failing ({error.kind}) when the {exc}: {error.message}"
        evidence = error.model_dump() | {"tries": failing.try_number, "at": failing.at}
        session.latch(ModelServingFailure(why, evidence), MODEL_SERVING, wait)
    else:
        session.latch(exc, "time_limit", wait)


def _take_raised(raised: AgentRaised, session: EpisodeSession, progress: _Progress) -> None:
    """What the agent raised decides unless a stop is latched. An agent's own stop (a
    ``StepLimitReached`` the session never latched) is a crash: it cannot name its stop. An
    :class:`EnvironmentFailure` is the agent's report that a dependency of its own broke
    (``environment_failure/agent``, docs/models.md), whatever subclass it raises (its own
    ``ResetCheckFailed`` is no failed reset); a :class:`ModelServingFailure` is the model's
    API failing past its retries: both are invalid attempts."""
    reason = raised.reason
    if reason == TIME_LIMIT:
        if session.remaining <= OWN_LIMIT_SLACK:
            _latch_time_limit(session, TimeLimitReached(raised.message))
            return
        reason = CRASHED  # long before the limit: it cannot name its stop
    compatibility = is_compatibility_failure(reason)
    if session.stop is not None and not compatibility:
        return
    serving = reason == "environment_failure/model_serving"
    stage = "model_serving" if serving else "agent"
    progress.interrupted(reason, stage, raised.type_name, raised.message, raised.traceback)
    if serving:
        progress.evidence["model_serving"] = raised.evidence


async def _end_after_return(session: EpisodeSession, until: float) -> None:
    """End the session once the agent has returned, before its final reply is recorded (no
    call of a thread of the agent's lands after the reply). A call still in flight belongs
    to the attempt: it is waited for up to the time limit (and :data:`END_WAIT`), in a
    thread (this loop runs the other attempts), not left to write while the checks read;
    one still running then ends the attempt at its limit (*until*: that wait's end)."""
    if session.busy:
        await in_thread(_end_waiting, session, until)
    session.end()


def _end_waiting(session: EpisodeSession, until: float) -> None:
    session.end(wait=max(until - CLOCK(), 0.0))
    if session.blocked_call is not None or session.blocked_in_reply:
        limit = TimeLimitReached(f"time limit {session.time_limit:g}s reached with a call running")
        _latch_time_limit(session, limit, wait=0.0)  # waited for already


def _take_stop(session: EpisodeSession, progress: _Progress) -> None:
    """The latched stop, if any, decides: it outranks whatever the agent did afterwards, a
    crash or a final reply included."""
    stop = session.stop
    if stop is not None and not isinstance(stop.error, ConversationOver):
        progress.interrupt(stop.error, "tool_crash" if stop.kind == "tool_crash" else stop.stage)
        progress.evidence["stop"] = stop.evidence()
        if isinstance(stop.error, ModelServingFailure):  # as when the adapter raises it
            progress.evidence[MODEL_SERVING] = stop.error.evidence


def _take_final(final: Final, session: EpisodeSession, progress: _Progress) -> None:
    """Record the agent's final reply: a ``str``, or ``None`` (or ``""``) for none, as an
    external program's ``finish("")`` and a model's empty answer are: the same agent gives
    the same record however it is run (``groundstate.mcp_client`` sends ``None`` as ``""``).

    Anything else is a protocol mismatch (``harness_compatibility_failure``); its ``repr`` is
    kept as the final message, so the evidence shows what the agent returned.
    """
    if not final.text:
        return
    progress.final_message = final.text
    session.record_final(final.text)
    if final.odd_kind is not None:
        session.latch(_mismatch(f"run() returned {final.odd_kind}, not a str or None"), "final")


async def run_agent(
    agent: Agent,
    session: EpisodeSession,
    *,
    watched: bool = True,
    put_back: list[str] | None = None,
) -> Final:
    """Run ``agent.run(session)`` in a thread of its own, under the session's time limit.

    The episode waits on the thread, not on the agent's coroutine, so an agent that blocks
    (``time.sleep``, a synchronous client) or spins cannot hold the attempt, or any other
    attempt, past the limit. At the limit the session is stopped, so whatever the abandoned
    thread does next is refused. The thread and its event loop are reused from attempt to
    attempt (see :mod:`groundstate.loopthreads`: nothing of one agent reaches the next, and a
    thread still running an abandoned agent is never reused). Returns the agent's
    :class:`~groundstate.returned.Final`; raises :class:`TimeLimitReached` at the limit and
    :class:`~groundstate.returned.AgentRaised` with what the agent raised (a
    ``HarnessCompatibilityError`` when ``run`` is not a coroutine function). The agent is
    handed an :class:`AgentSession`. Not *watched* (no untrusted code shares the
    interpreter: see :mod:`groundstate.untrusted`), the process-wide state is not read and
    put back around its run; what was put back is named in *put_back*.
    """
    named = [] if put_back is None else put_back
    facade = AgentSession(session)
    limit, started = session.time_limit, CLOCK()
    rang: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    ALARMS.set(limit, rang)  # before the agent runs; never cancelled (see groundstate.alarms)
    work = lambda: _run_to_end(agent, facade)  # noqa: E731
    kept: list[Any] = []  # the process-wide state as the agent finds it: this frame's own
    finished = in_loop_thread(work, f"agent-{id(session):x}", kept=kept, watched=watched)
    (shared,) = kept
    try:
        in_time = await _settled_in_time(finished, rang)
    except BaseException:  # the attempt is cancelled (a batch interrupted): nobody waits now
        named += abandon(finished, shared)
        raise
    if not in_time:
        # What the abandoned agent ends with, nobody reads: abandon reads it, so asyncio does
        # not log it ("exception was never retrieved") whenever the garbage collector gets to it.
        named += abandon(finished, shared)
        raise TimeLimitReached(f"time limit {limit:g}s reached")
    named += put_back_after(shared)  # whatever the agent made its thread take its end for
    ended, outcome = finished.result()  # raises what crashed the agent's loop
    if ended - started > limit:
        raise TimeLimitReached(f"time limit {limit:g}s reached")
    if isinstance(outcome, AgentRaised):
        raise outcome
    return outcome


async def _settled_in_time(finished: asyncio.Future[Any], rang: asyncio.Future[None]) -> bool:
    """Whether *finished* settles before *rang*, the alarm of the time limit (see
    :mod:`groundstate.alarms`: not this loop's clock, which the agent can stop by replacing
    ``time.monotonic``, nor anything else it can reach and write)."""
    try:
        await asyncio.wait((finished, rang), return_when=asyncio.FIRST_COMPLETED)
    finally:
        rang.cancel()
    return finished.done()


async def _run_to_end(agent: Agent, session: AgentSession) -> tuple[float, Final | AgentRaised]:
    """The agent's run on its thread's loop, read there as plain data: every piece of agent
    code (``run`` itself, what it returns or raises) runs under the time limit. Returned with
    when it ended, read on this thread's clock: an agent that holds the interpreter (a long C
    call, ``sys.setswitchinterval(1000)`` and a spin) can keep the alarm from ringing until it
    returns, but not make a late end count as in time. The time goes out with the outcome,
    not into a list the caller reads: an agent that found that list (the frame awaiting it,
    ``sys._getframe().f_back``) put an early time in it first, held the interpreter 13 s on
    a limit of 1 s, and passed."""
    try:
        value = await run_of(agent, session)
        put_back_builtins()  # reading the value is the harness's code (``type`` replaced...)
        final = Final.of(value)
    except BaseException as exc:  # SystemExit and cancellations too: the agent's crash
        put_back_builtins()
        raised = AgentRaised(exc)
    else:
        return CLOCK(), final
    return CLOCK(), raised  # outside the handler: no reference to the agent's exception is kept


def run_of(agent: Agent, session: Session) -> Awaitable[Any]:
    """What ``agent.run(session)`` returns, when it is awaitable."""
    run = getattr(agent, "run", None)
    if not callable(run):
        raise HarnessCompatibilityError(f"{type_name(type(agent))} has no run(session) method")
    pending = run(session)
    if not inspect.isawaitable(pending):
        raise HarnessCompatibilityError(
            f"{type_name(type(agent))}.run(session) must be a coroutine function (async def)"
        )
    return pending


def _grade(
    task: AgentTask,
    suite: Suite,
    env: Environment,
    s0: Snapshot,
    session: EpisodeSession,
    progress: _Progress,
    turn: Turn,
) -> None:
    try:
        final_hash, diff = final_state(env, s0)
        with turn.paused(_checks_wait(task)):
            verdict = run_checks(task, suite, env, s0, session.events, final_hash, diff)
    except EnvironmentFailure as exc:
        progress.interrupt(exc, "final_state")
        return
    progress.final_hash, progress.diff = verdict.final_state_hash, verdict.diff
    progress.assertions, progress.constraints = verdict.assertions, verdict.constraints


def _checks_wait(task: AgentTask) -> bool:
    """Whether the task's checks wait on something by nature (a model judge, a test run):
    they run without a turn. Other checks (SQL, diffs, Python, declarative constraints) use
    the CPU and run in the attempt's turn."""
    return any(isinstance(a, _WAITING_CHECKS) for a in task.outcome_assertions)


@dataclass(frozen=True)
class Verdict:
    final_state_hash: str
    diff: StateDiff
    assertions: list[CheckResult]
    constraints: list[CheckResult]


def grade(
    task: AgentTask, suite: Suite, env: Environment, s0: Snapshot, events: list[TraceEvent]
) -> Verdict:
    """Grade the environment's current state against *s0* (the state it was reset to, which a
    kind that tracks changes knows already) and the trace *events*.

    Raises :class:`EnvironmentFailure` when the final state cannot be read.
    """
    return run_checks(task, suite, env, s0, events, *final_state(env, s0))


def final_state(env: Environment, s0: Snapshot) -> tuple[str, StateDiff]:
    """The environment's state hash and its diff from *s0*: the environment's share of
    grading."""
    return env.state_hash(), diff_from_initial(env, s0)


def run_checks(
    task: AgentTask,
    suite: Suite,
    env: Environment,
    s0: Snapshot,
    events: list[TraceEvent],
    final_hash: str,
    diff: StateDiff,
) -> Verdict:
    """Run the task's assertions and constraints on the final state *diff* describes.

    The assertions' checks wait until the Python constraints' are added: both go to one
    thread together (see :func:`~groundstate.grading.outcome.within_limits`)."""
    states = States(
        env.initial_view(), env.evaluator_view(), s0, diff, suite.root, events, suite.checks
    )
    assertions = assertions_later(task.outcome_assertions, states)
    constraints = evaluate_constraints(task.hard_process_constraints, events, states)
    return Verdict(
        final_state_hash=final_hash, diff=diff, assertions=assertions(), constraints=constraints
    )


def lost_attempt(
    task: AgentTask,
    system: SystemSpec,
    info: AttemptInfo,
    error: BaseException,
    stage: str,
    evidence: dict[str, Any],
    started_at: datetime,
    latency: float,
    reason: str | None = None,
) -> AttemptOutput:
    """The record of an attempt whose process was lost with it (the agent killed its worker,
    or held it past the hard limit and was killed with it), built where it was waited for:
    what the worker knew (the trace) went with it; *error* at *stage* decides the terminal
    reason (a crash, or the time limit) unless *reason* is given (``grader_failure``: lost
    while grading), and *evidence* says what became of the worker."""
    progress = _Progress()
    progress.interrupt(error, stage, reason)
    progress.evidence["worker"] = evidence
    # what the agent spent went with its worker: not known, never 0
    return _spend_unknown(task, system, info, progress, started_at, latency)


def rebound_attempt(
    task: AgentTask,
    system: SystemSpec,
    info: AttemptInfo,
    names: list[str],
    started_at: datetime,
    latency: float,
) -> AttemptOutput:
    """The record of an attempt handed out or taken in while the harness's code was found
    rebound (*names*, put back): code left running in the process (an agent's thread) that
    rebound the runner's entry (``executors._job.run_attempt``) made the attempt run its
    fake, whose record is not the harness's. A prohibited action (stage ``harness_code``),
    as when an attempt's own look finds it; what the agent spent is not known."""
    progress = _Progress()
    progress.interrupt(
        ProhibitedAction(f"rebound the harness's code: {', '.join(names[:5])}"), REBOUND
    )
    progress.evidence["harness_rebound"] = names[:20]
    return _spend_unknown(task, system, info, progress, started_at, latency)


def _spend_unknown(
    task: AgentTask,
    system: SystemSpec,
    info: AttemptInfo,
    progress: _Progress,
    started_at: datetime,
    latency: float,
) -> AttemptOutput:
    """The record of an attempt built from *progress* alone, its usage and cost not known
    (``None``, never 0): what the agent spent was not seen by the harness."""
    output = _record(task, system, info, progress, None, started_at, latency)
    unknown = {"usage": Usage(input_tokens=None, output_tokens=None), "cost": None}
    return AttemptOutput(run=output.run.model_copy(update=unknown), artifacts=output.artifacts)


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
        cost=_recorded_cost(session),
        usage=_recorded_usage(session),
        latency=latency,
        final_message=progress.final_message,
        infrastructure_status=progress.evidence | models_served(events),
        artifact_locations={},
    )
    lines = trace_lines(run.observation_action_log)
    trace = "".join(line + "\n" for line in lines)
    artifacts = {**(session.artifacts if session else {}), "trace.jsonl": trace}
    if progress.diff is not None:
        artifacts["state_diff.json"] = progress.diff.model_dump_json(indent=1)
    return AttemptOutput(run=run, artifacts=artifacts, trace_lines=lines)
