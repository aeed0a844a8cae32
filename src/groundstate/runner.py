"""Batches: every task of a suite, attempted N times by one system, each attempt stored.

Before any agent attempt, the system is built, the environment of every task the batch runs
is built and reset-checked, the suite's canary task runs its oracle solution, and the system
under test is smoke-run once on the canary (or the first task); if any of these fails, the
batch aborts before anything is stored. The smoke run is not stored; it only proves that the
system can be built and can start: it aborts the batch when it ends as
``harness_compatibility_failure`` (of any kind: ``.../context_window``) or when the agent
crashes before its first action. Invalid attempts (environment or grader failures) are rerun
up to the system's ``invalid_run_policy.max_retries``; every try is stored, each rerun linked
to the try it replaces.

A batch is leased to the process running it (see :meth:`RunStore.acquire_lease`): a second
process resuming it while the first is alive is refused, and so is a second runner in this
process (:func:`_running_here`). A resume verifies the records it
reads first and reports what is altered, then runs the same checks as a start (resets,
canary, smoke run): an environment broken since the batch stopped aborts it before any try.
When the process is interrupted (SIGINT, SIGTERM), :class:`Interrupted` unwinds the batch:
no try started after the signal is stored.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import hashlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Collection, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from groundstate import steadyloop
from groundstate.agents.base import Agent
from groundstate.agents.python import load_agent
from groundstate.analysis import final_runs, planned_runs
from groundstate.episode import (
    AttemptInfo,
    AttemptJob,
    AttemptOutput,
    EnvironmentFactory,
    default_environment,
    lost_attempt,
    reset_checked,
)
from groundstate.errors import (
    EnvironmentFailure,
    ExecutorError,
    GroundstateError,
    SpecError,
    StoreError,
)
from groundstate.executors import Executor, InProcessExecutor
from groundstate.executors._job import WorkerDied, entry_put_back, taken_in
from groundstate.exitcause import WATCHED, ExitWatch, watching
from groundstate.grading.model_judge import unset_judge_keys
from groundstate.grading.terminal import is_compatibility_failure
from groundstate.interrupts import Interrupted, InterruptFlag
from groundstate.records import AgentRun
from groundstate.selection import select_tasks
from groundstate.spec.files import with_line
from groundstate.spec.suite import Suite, files_hash
from groundstate.spec.system import SystemSpec
from groundstate.store import (
    LEASE_HEARTBEAT,
    BatchInfo,
    BatchLeased,
    Lease,
    PreparedRun,
    Problem,
    RunStore,
    StartedTry,
    note_exit_cause,
    parse_stored,
    prepare_run,
)
from groundstate.users import user_model_problem

AgentFactory = Callable[[], Agent]
RunCallback = Callable[[AgentRun], None]
ProblemCallback = Callable[[Problem], None]


class BatchAborted(GroundstateError):
    """The batch stopped before any agent attempt: a reset check or the canary failed."""


class ResumeMismatch(GroundstateError):
    """A batch cannot be resumed because its suite or system changed."""


@dataclass(frozen=True)
class BatchConfig:
    attempts: int = 1
    seed: int = 0
    concurrency: int = 1
    invalid_tasks: tuple[str, ...] = ()
    """Tasks known to be invalid that run anyway (``--allow-invalid``); reports name them."""
    tasks: tuple[str, ...] | None = None
    """The tasks the batch runs (``run --task/--slice/-k``); ``None`` runs every task."""
    validator_revision: int | None = None
    """The validator revision its tasks were proven under (:func:`proven` sets it); ``None``:
    not proven. Recorded with the batch's session, and reported (:class:`RunSession`)."""

    def __post_init__(self) -> None:
        """Refuse a plan no batch can run: no attempt (a batch stored with none, or -1), no
        slot (a concurrency of 0 waited for ever), or no task."""
        _at_least_one("BatchConfig.attempts", self.attempts)
        _a_concurrency("BatchConfig.concurrency", self.concurrency)
        if self.tasks is not None and not self.tasks:
            raise ValueError("BatchConfig.tasks names no task (None runs every task)")


def _at_least_one(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} is a whole number, at least 1, not {value!r}")


MAX_CONCURRENCY = 10_000
"""Most attempts a batch runs at once, on every executor. Past it this process, the store's
single writer, is the bottleneck whatever the cluster's size (run several batches instead),
and a number past SQLite's integers (``--concurrency 99999999999999999999`` on Ray, which
queues what its CPUs cannot hold) failed as the batch was stored, after validation."""


def _a_concurrency(name: str, value: object) -> None:
    _at_least_one(name, value)
    if isinstance(value, int) and value > MAX_CONCURRENCY:
        raise ValueError(f"{name} is at most {MAX_CONCURRENCY:,}, not {value:,}")


def _known_tasks(suite: Suite, config: BatchConfig) -> None:
    """Refuse (:class:`~groundstate.selection.NoTasksSelected`, naming the suite's tasks) a
    plan naming a task *suite* does not have."""
    if config.tasks is not None:
        select_tasks(suite, task_ids=config.tasks)


@dataclass
class BatchResult:
    batch: BatchInfo
    runs: list[AgentRun]
    """Every try stored for the batch, reruns included, ordered by task, attempt and retry."""

    @property
    def final(self) -> list[AgentRun]:
        """The try that counts for each attempt."""
        return final_runs(self.runs)

    def __repr__(self) -> str:
        # Short: Python 3.11's asyncio.run formats the main task's result when it restores the
        # Ctrl-C handler; a repr of every record took 0.6 s per 512 tries (run_batch).
        return f"BatchResult(batch={self.batch.batch_id!r}, runs=<{len(self.runs)} tries>)"


def derive_seed(batch_seed: int, task_id: str, attempt: int) -> int:
    """A stable 32-bit seed per (batch seed, task, attempt), independent of run order."""
    digest = hashlib.sha256(f"{batch_seed}:{task_id}:{attempt}".encode()).hexdigest()
    return int(digest[:8], 16)


def plan_batch(
    suite: Suite, system: SystemSpec, config: BatchConfig, executor: str = "in-process"
) -> BatchInfo:
    chosen = config.tasks if config.tasks is not None else tuple(suite.tasks)
    tasks = {task_id: suite.tasks[task_id] for task_id in chosen}
    return BatchInfo(
        batch_id=uuid.uuid4().hex[:12],
        created_at=datetime.now(UTC),
        suite=suite.name,
        suite_path=str(suite.root),
        suite_hash=suite.suite_hash,
        decision=suite.config.decision,
        population=suite.config.population and suite.config.population.model_dump(),
        system_spec_hash=system.system_spec_hash,
        system_spec=system.model_dump(mode="json"),
        attempts=config.attempts,
        seed=config.seed,
        task_revisions={t.task_id: t.task_revision for t in tasks.values()},
        task_weights={task_id: suite.weight(task_id) for task_id in tasks},
        task_slices={t.task_id: list(t.slice_labels) for t in tasks.values()},
        task_horizons={
            task_id: len(suite.solutions[task_id]["oracle"].steps)
            for task_id in tasks
            if "oracle" in suite.solutions.get(task_id, {})
        },
        invalid_run_policy=system.invalid_run_policy.model_dump(),
        invalid_tasks=list(config.invalid_tasks),
        executor=executor,
        concurrency=config.concurrency,
    )


@dataclass
class BatchRunner:
    """Runs the missing attempts of one batch."""

    suite: Suite
    system: SystemSpec
    store: RunStore
    make_agent: AgentFactory | None = None
    make_env: EnvironmentFactory = default_environment
    on_run: RunCallback | None = None
    on_problem: ProblemCallback | None = None
    """Told of each altered or missing record a resume finds in the batch it reads."""
    interrupt: InterruptFlag = field(default_factory=InterruptFlag)
    batch_id: str | None = None
    """The batch being run, once it is stored (for the resume hint after an interruption)."""
    executor: Executor | None = None
    """Where attempts run; default: in this process, with :attr:`make_agent` and
    :attr:`make_env` (see :mod:`groundstate.executors`)."""
    _proof: int | None = field(default=None, init=False, repr=False)
    """The validator revision the batch being run was proven under, for its session."""
    _exits: ExitWatch | None = field(default=None, init=False, repr=False)
    """The tries in flight in this process, while an in-process batch runs."""

    def __post_init__(self) -> None:
        live = self.make_agent is not None or self.make_env is not default_environment
        if self.executor is None:
            self.executor = InProcessExecutor(self.suite, self.make_agent, self.make_env)
        elif live and not isinstance(self.executor, InProcessExecutor):
            raise ExecutorError(  # it would build agents and environments from the spec
                f"the {self.executor.name} executor cannot use an agent or environment "
                "factory; run it in-process"
            )

    @cached_property
    def _suite_hash(self) -> str:
        """The suite's hash for every job of the batch, computed once (hashing every file's
        digest again for each attempt cost more than the job's other fields together)."""
        return self.suite.suite_hash

    @property
    def _executor(self) -> Executor:
        assert self.executor is not None  # set in __post_init__
        return self.executor

    async def start(self, config: BatchConfig) -> BatchResult:
        """Check the suite, store a new batch, and run it."""
        self._proof = config.validator_revision
        return await self._interruptible(lambda: self._start(config), config.concurrency)

    async def resume(
        self,
        batch_id: str,
        concurrency: int = 1,
        *,
        preflight: bool = True,
        invalid_tasks: Collection[str] = (),
        validator_revision: int | None = None,
    ) -> BatchResult:
        """Run only the attempts an interrupted batch is missing (on this runner's executor,
        whichever the batch started on: records do not depend on it), after the checks a
        start makes (:meth:`preflight`; ``preflight=False`` skips them: for tests whose
        faults must reach the batch). *invalid_tasks*: tasks that fail validation now and
        run anyway (``run --resume --allow-invalid``); the batch names them invalid from now
        on (:meth:`RunStore.add_invalid_tasks`), as those named when it started.
        *validator_revision*: as :attr:`BatchConfig.validator_revision`, for this resume."""
        _a_concurrency("concurrency", concurrency)
        self._proof = validator_revision
        return await self._interruptible(
            lambda: self._resume(batch_id, concurrency, preflight, invalid_tasks), concurrency
        )

    async def _interruptible(
        self, work: Callable[[], Awaitable[BatchResult]], concurrency: int
    ) -> BatchResult:
        """Open the executor, then run *work* as the task a signal cancels; a cancellation
        that a signal caused leaves as :class:`Interrupted`."""
        self.interrupt.task = asyncio.current_task()
        try:
            self._executor.open(concurrency)
            return await work()
        except asyncio.CancelledError:
            if self.interrupt.signum is None:
                raise
            raise Interrupted(self.interrupt.signum) from None
        finally:
            self.interrupt.task = None
            self._executor.close()

    async def _start(self, config: BatchConfig) -> BatchResult:
        _known_tasks(self.suite, config)
        await self.preflight(config.tasks)
        batch = plan_batch(self.suite, self.system, config, self._executor.name)
        self.store.add_batch(batch)
        self.batch_id = batch.batch_id
        return await self._complete(batch, config.concurrency)

    async def _resume(
        self, batch_id: str, concurrency: int, preflight: bool, invalid_tasks: Collection[str]
    ) -> BatchResult:
        batch = self.store.batch(batch_id)
        self.batch_id = batch.batch_id
        check_resumable(batch, self.suite, self.system)
        return await self._complete(
            batch, concurrency, verify=True, preflight=preflight, invalid_tasks=invalid_tasks
        )

    async def preflight(self, tasks: Collection[str] | None = None) -> None:
        """Fail before any batch is stored: the agent must load, the reset of every task
        the batch runs (*tasks*; default every task of the suite) must check out, the
        canary's oracle must pass, and the system must start on the canary (or the first
        task run). A task the batch does not run cannot stop it (a ``--task`` run beside a
        task whose reset check fails, or the resume of such a batch).

        The canary and the smoke run go through the executor, so a system that cannot be
        built or run where the attempts will run (a worker, a cluster node) stops here too."""
        with self._watching_exits():  # an agent ending the process here says so too
            await self._preflight(tasks)

    async def _preflight(self, tasks: Collection[str] | None) -> None:
        self._build_agent()  # first: a system that cannot be built wastes no resets
        unusable = user_model_problem(self.system.user_simulator)
        if unusable is not None:
            raise BatchAborted(
                f"the system {self.system.name!r}'s simulated user cannot be called: {unusable}"
            )
        chosen = sorted(self.suite.tasks if tasks is None else tasks)
        unset = unset_judge_keys(self.suite.tasks[task_id] for task_id in chosen)
        if unset:  # every attempt of those tasks would be a grader failure
            raise BatchAborted(f"a model judge cannot be called: {'; '.join(unset)}")
        for task in (self.suite.tasks[task_id] for task_id in chosen):
            self.interrupt.check()
            try:
                with self.make_env(task, self.suite) as env:
                    reset_checked(env, task)
            except EnvironmentFailure as exc:
                raise BatchAborted(f"reset check failed for task {task.task_id!r}: {exc}") from exc
        canary = self.suite.config.canary
        self.interrupt.check()
        if canary is not None:
            await self._run_canary(canary)
            self.interrupt.check()
        await self._smoke_run(canary or min(chosen, default=min(self.suite.tasks)))
        self.interrupt.check()

    def _build_agent(self) -> Agent:
        try:
            return self._agent()
        except (GroundstateError, ImportError, TypeError) as exc:
            said = with_line(exc) if isinstance(exc, SpecError) else exc  # located as `check` does
            raise BatchAborted(
                f"harness_compatibility_failure: the system {self.system.name!r} cannot be "
                f"built: {said}"
            ) from exc

    async def _smoke_run(self, task_id: str) -> None:
        """Run the system once on *task_id*; abort if it cannot use the harness at all."""
        info = AttemptInfo(run_id="smoke", batch_id="smoke", attempt=1, seed=0)
        run = (await self._preflight_attempt(self._job(task_id, info))).run
        if is_compatibility_failure(run.terminal_reason) or _crashed_at_start(run):
            exception = run.infrastructure_status.get("exception", {})
            raise BatchAborted(
                f"harness_compatibility_failure: the system {self.system.name!r} failed its "
                f"smoke run on task {task_id!r} ({run.terminal_reason}: "
                f"{exception.get('type')}: {exception.get('message')}); no try was stored"
            )
        if _account_refused(run):  # every try would be invalid the same way
            message = run.infrastructure_status.get("exception", {}).get("message")
            raise BatchAborted(
                f"the model API refused the system {self.system.name!r} in its smoke run on"
                f" task {task_id!r} ({message}); no try was stored"
            )

    async def _run_canary(self, task_id: str) -> None:
        oracle = self.suite.solutions[task_id].get("oracle")
        if oracle is None:
            raise BatchAborted(f"canary task {task_id!r} has no oracle solution")
        info = AttemptInfo(run_id="canary", batch_id="canary", attempt=1, seed=0)
        output = await self._preflight_attempt(self._job(task_id, info, solution="oracle"))
        if not output.run.success:
            raise BatchAborted(
                f"canary task {task_id!r} failed with its oracle solution "
                f"({output.run.terminal_reason}); no agent attempt was made"
            )

    async def _preflight_attempt(self, job: AttemptJob) -> AttemptOutput:
        try:
            return await self._executor.run(job)
        except (ExecutorError, SpecError) as exc:  # SpecError: in-process (a worker's is plain)
            raise BatchAborted(
                f"the {self._executor.name} executor cannot run task {job.task_id!r} "
                f"({job.info.run_id}): {exc}; no try was stored"
            ) from exc

    def _job(self, task_id: str, info: AttemptInfo, solution: str | None = None) -> AttemptJob:
        return AttemptJob(
            suite_path=str(self.suite.root),
            suite_hash=self._suite_hash,
            system=self.system,
            task_id=task_id,
            info=info,
            solution=solution,
            environment=self.suite.config.environment,
        )

    async def _complete(
        self,
        batch: BatchInfo,
        concurrency: int,
        *,
        verify: bool = False,
        preflight: bool = False,
        invalid_tasks: Collection[str] = (),
    ) -> BatchResult:
        """Lease the batch, then run its missing attempts (the lease is released at the end,
        interrupted or not). A resume verifies what is stored and, with *preflight*, checks
        the environment again: it may have broken since the batch stopped. *invalid_tasks*
        are named in the batch once it is leased (a resume refused changes nothing)."""
        with _running_here(self.store, batch.batch_id):
            return await self._leased(batch, concurrency, verify, preflight, invalid_tasks)

    async def _leased(
        self,
        batch: BatchInfo,
        concurrency: int,
        verify: bool,
        preflight: bool,
        invalid_tasks: Collection[str],
    ) -> BatchResult:
        self.store.acquire_lease(batch.batch_id)
        beat = asyncio.ensure_future(self._heartbeat(batch.batch_id))
        try:
            if self.store.add_invalid_tasks(batch.batch_id, invalid_tasks):
                batch = self.store.batch(batch.batch_id)
            if verify:
                self._verify(batch.batch_id)
            self._record_cut_short(batch)
            before = self.store.runs(batch.batch_id)
            last, slots = _unfinished_slots(batch, before)
            if preflight and slots:  # nothing to run: no canary, no smoke run (model calls)
                await self.preflight(tuple(batch.task_revisions))
            if slots:  # a resume with nothing left to run is no session of the batch
                self.store.add_session(
                    batch.batch_id, self._executor.name, concurrency, self._proof
                )
            return await self._run_missing(batch, before, last, slots, concurrency)
        finally:
            beat.cancel()
            # A store full or locked now must not replace what ended the batch (its result, an
            # interrupt, the store error itself): a lease left behind is stale once this
            # process exits, and is taken over.
            with suppress(StoreError):
                self.store.release_lease(batch.batch_id)

    def _verify(self, batch_id: str) -> None:
        for problem in self.store.verify(batch_id).altered:
            if self.on_problem is not None:
                self.on_problem(problem)

    async def _heartbeat(self, batch_id: str) -> None:
        """Keep the lease live while the batch runs."""
        while True:
            await asyncio.sleep(LEASE_HEARTBEAT)
            try:
                self.store.heartbeat(batch_id)
            except BatchLeased:
                return  # taken over: the next attempt to store says so
            except StoreError:
                continue  # a busy store: the next beat, or the next attempt's

    async def _run_missing(
        self,
        batch: BatchInfo,
        before: list[AgentRun],
        last: dict[tuple[str, int], AgentRun],
        slots: list[tuple[str, int]],
        concurrency: int,
    ) -> BatchResult:
        """Run *slots* (see :func:`_unfinished_slots`) after the tries stored *before*.

        When a slot fails (an executor error: a worker lost, a Ray task failed; the store
        refusing a write), no further try starts, the tries already running finish and are
        stored, and then the first failure is raised: a resume reruns only what never ran."""
        max_retries = batch.max_retries
        limit = asyncio.Semaphore(concurrency)
        writer = _GroupWriter(self.store, batch.batch_id)
        failed: list[Exception] = []

        async def slot(s: tuple[str, int]) -> None:
            try:
                await self._slot(batch, s, last.get(s), max_retries, limit, writer, failed)
            except Exception as exc:
                failed.append(exc)

        try:
            with _settled_heap(), self._watching_exits():
                await asyncio.gather(*[slot(s) for s in slots])  # a list: see bindings._items
        finally:
            writer.close()  # tries that finished before an interruption are kept
        if failed:
            raise failed[0]
        # Every try of the batch, as reading them all back would give, without reading back
        # the rows this process just wrote (the lease kept other writers out meanwhile).
        runs = sorted(before + writer.stored(), key=lambda r: (r.task_id, r.attempt, r.retry))
        return BatchResult(batch=self.store.batch(batch.batch_id), runs=runs)  # its sessions

    async def _slot(
        self,
        batch: BatchInfo,
        slot: tuple[str, int],
        previous: AgentRun | None,
        max_retries: int,
        limit: asyncio.Semaphore,
        writer: _GroupWriter,
        failed: list[Exception],
    ) -> None:
        """One attempt: tried, and rerun while invalid and retries remain; none started once
        a slot has *failed*."""
        task_id, attempt = slot
        while _unfinished(previous, max_retries):
            info = AttemptInfo(
                run_id=uuid.uuid4().hex,
                batch_id=batch.batch_id,
                attempt=attempt,
                seed=derive_seed(batch.seed, task_id, attempt),
                retry=0 if previous is None else previous.retry + 1,
                retry_of=None if previous is None else previous.run_id,
            )
            marked, stored = False, None
            try:
                async with limit:
                    self.interrupt.check()
                    if failed:
                        return
                    marked = self._mark_started(batch, task_id, info)
                    job, before, begun = (
                        self._job(task_id, info),
                        entry_put_back(),
                        time.monotonic(),
                    )
                    try:
                        output = await self._executor.run(job)
                    finally:
                        if self._exits is not None:
                            self._exits.ended(info.run_id)
                    output = taken_in(job, self.suite, output, before, begun)  # (see there)
                    if marked:  # stored (its mark removed) before another try takes its place
                        self.interrupt.check()
                        stored = await writer.store(output)
                if stored is None:
                    self.interrupt.check()  # a try the signal cut short is not stored
                    stored = await writer.store(output)
            except asyncio.CancelledError:
                if marked and stored is None and self._cancelled_by(info.run_id):
                    marked = False  # kept, with its cause: the resume records the crash
                    with suppress(StoreError):
                        note_exit_cause(self.store.path, [info.run_id], CANCELLED_BY_CODE)
                raise
            finally:
                if marked and stored is None:  # unstored with the process alive: not cut short
                    with suppress(StoreError):
                        self.store.forget_started([info.run_id])
            previous = stored
            if self.on_run is not None:
                self.on_run(previous)

    def _cancelled_by(self, run_id: str) -> bool:
        """Whether the batch is being cancelled by the code of the try *run_id*'s agent: on a
        loop the harness made and holds (see :data:`steadyloop.OWNED`), with no interruption
        noted, and told as the call was made (:func:`steadyloop.cancellers`). Another try in
        flight then is no one's crash: its mark is taken off and the resume runs it again
        (the forty-third round marked every try in flight as the cancellation took effect: an
        honest try that had started meanwhile was stored as the crash)."""
        if not steadyloop.OWNED.get() or self.interrupt.signum is not None:
            return False
        return run_id in steadyloop.cancellers()

    @contextmanager
    def _watching_exits(self) -> Iterator[None]:
        """While tries run in this process, note which agent ends it (see
        :mod:`groundstate.exitcause`)."""
        if not isinstance(self._executor, InProcessExecutor):
            yield
            return
        with watching(self.store.path) as self._exits:
            # The batch's own context is no try's, whatever its host's says (a context left
            # marked would make the canary's oracle and the smoke run a batch's agent).
            unmarked = WATCHED.set(False)
            try:
                yield
            finally:
                WATCHED.reset(unmarked)
                self._exits = None

    def _mark_started(self, batch: BatchInfo, task_id: str, info: AttemptInfo) -> bool:
        """Mark the try in the store as it starts, when its agent runs in this process: an
        agent that ends the process (``os._exit``, ``os.kill(os.getpid(), SIGKILL)``) writes
        what it called onto the mark as it calls it (:mod:`groundstate.exitcause`), and the
        resume records the try as its crash (:meth:`_record_cut_short`) instead of running
        it again (another draw for the agent). Other executors record a worker's death
        themselves."""
        if self._exits is None:
            return False
        started = StartedTry(
            run_id=info.run_id,
            task_id=task_id,
            attempt=info.attempt,
            retry=info.retry,
            retry_of=info.retry_of,
            seed=info.seed,
            started_at=datetime.now(UTC),
            pid=os.getpid(),
            host=socket.gethostname(),
        )
        self.store.mark_started(batch.batch_id, started)
        self._exits.started(info.run_id)
        return True

    def _record_cut_short(self, batch: BatchInfo) -> None:
        """Store, as ``agent_failure/crashed``, each try of *batch* that a process running it
        in-process started and never stored (see :meth:`_mark_started`) and whose mark names
        what the agent called to end that process (the lease, now this process's, says it
        is gone), as a process-pool worker's death records the try it ran; as a
        ``grader_failure`` (invalid: the plan reruns it under the invalid-run policy) when
        the mark says a check made the call once grading had started, as the pool records a
        worker dead while grading. A mark naming no
        cause was left by a process ended from outside (SIGKILL, the out-of-memory killer,
        a power loss): no verdict on the agent, so the try is only unmarked and runs again,
        as a process-pool batch killed so reruns its tries in flight. A try already stored
        (its mark left by hand) is only unmarked."""
        cut = self.store.started_tries(batch.batch_id)
        if not cut:
            return
        stored = {(r.task_id, r.attempt, r.retry) for r in self.store.runs(batch.batch_id)}
        rows = []
        for started in cut:
            task = self.suite.tasks.get(started.task_id)
            if started.cause is None or task is None:
                continue
            if (started.task_id, started.attempt, started.retry) in stored:
                continue
            info = AttemptInfo(
                run_id=started.run_id,
                batch_id=batch.batch_id,
                attempt=started.attempt,
                seed=started.seed,
                retry=started.retry,
                retry_of=started.retry_of,
            )
            cause = (
                f"the process running the batch in-process (pid {started.pid} on "
                f"{started.host}) ended during this try, not stored: {started.cause}"
            )
            evidence: dict[str, Any] = {
                "cause": cause, "executor": "in-process", "in_flight": len(cut)
            }  # fmt: skip
            error, stage, reason = WorkerDied(cause), "agent", None
            if started.grading:  # its check's call, as a pool worker dead while grading
                error = WorkerDied(f"{cause}, while grading")
                stage, reason, evidence["grading"] = "grading", "grader_failure", True
            output = lost_attempt(
                task, self.system, info, error, stage, evidence, started.started_at, 0.0, reason
            )
            rows.append(prepare_run(output.run, output.artifacts))
        if rows:
            self.store.add_prepared(rows, leased=batch.batch_id)
        self.store.forget_started([started.run_id for started in cut])

    def _agent(self) -> Agent:
        return self.make_agent() if self.make_agent else load_agent(self.system)


CANCELLED_BY_CODE = (
    "the batch's task was cancelled by code in the process (no interruption asked for it)"
)
"""The cause written on the mark of the try whose agent's code cancelled the batch's task
(see :meth:`BatchRunner._cancelled_by`): before, it was unmarked and ``--resume`` drew the
agent's attempt anew."""


class _GroupWriter:
    """Stores the tries of a batch as they finish, those that finish together in one
    transaction (group commit): one commit for every try that arrives while the previous
    group is being written, instead of one each. Nothing waits to fill a group, so a try
    alone (concurrency 1) is stored as soon as it arrives, as before; the gain comes when
    many finish at once. Each try is still wholly stored or not at all, in the order it
    arrived, chained (see :meth:`RunStore.add_prepared`), and only while this process holds
    the batch's lease (checked in each group's transaction); a try is reported stored (its
    ``store`` returns) only once its group has committed.

    Tries come prepared by the executor (serialised and hashed where they ran); this writer
    only writes them."""

    def __init__(self, store: RunStore, batch_id: str) -> None:
        self._store = store
        self._batch_id = batch_id
        self._pending: list[tuple[PreparedRun, asyncio.Future[AgentRun]]] = []
        self._scheduled: asyncio.Handle | None = None
        self._closed = False
        self._texts: list[str] = []
        """The stored JSON of every try committed, in the order stored (text, which the
        collector never scans: a batch's records kept as models made every collection of
        the batch longer)."""

    async def store(self, output: AttemptOutput) -> AgentRun:
        """Queue *output* for the next group and wait until it is stored."""
        if self._closed:  # the batch is unwinding: a try finished late is not stored
            raise asyncio.CancelledError
        row = output.prepared or prepare_run(output.run, output.artifacts, output.trace_lines)
        loop = asyncio.get_running_loop()
        stored: asyncio.Future[AgentRun] = loop.create_future()
        self._pending.append((row, stored))
        if self._scheduled is None:  # tries finishing in this turn of the loop join the group
            self._scheduled = loop.call_soon(self.flush)
        return await stored

    def flush(self) -> None:
        """Write every queued try, one group per transaction, and settle their futures."""
        self._scheduled = None
        while self._pending:
            group, self._pending = self._pending, []
            try:
                self._store.add_prepared([row for row, _ in group], leased=self._batch_id)
            except Exception as exc:
                for _, waiting in group:
                    if not waiting.done():
                        waiting.set_exception(exc)
                continue
            for row, waiting in group:
                self._texts.append(row.text)
                if not waiting.done():
                    waiting.set_result(row.run)

    def stored(self) -> list[AgentRun]:
        """Every try this writer committed, parsed from the JSON stored (the same records
        :meth:`RunStore.runs` would read back, not the in-memory ones: a value JSON cannot
        hold exactly, a tuple or a non-finite float, say, reads back as JSON has it)."""
        return parse_stored(self._texts)

    def close(self) -> None:
        """Store what is queued (tries that finished and passed their checks before the
        batch stopped), then accept no more. A group that fails here fails only its own
        tries (whatever stopped the batch is what the batch raises); a resume reruns them."""
        self._closed = True
        if self._scheduled is not None:
            self._scheduled.cancel()
        self.flush()


_RUNNING: set[tuple[Path, str]] = set()
"""(store file, batch id) of each batch a runner of this process is running. A lease is held
by a process, so it cannot tell two runners of one process apart (two threads resuming one
batch): this does."""
_RUNNING_LOCK = threading.Lock()


@contextmanager
def _running_here(store: RunStore, batch_id: str) -> Iterator[None]:
    """Refuse (:class:`BatchLeased`) a batch another runner of this process is running."""
    key = (store.path.resolve(), batch_id)
    with _RUNNING_LOCK:
        if key in _RUNNING:
            now = datetime.now(UTC)
            here = socket.gethostname()
            raise BatchLeased(store.lease(batch_id) or Lease(
                batch_id=batch_id, pid=os.getpid(), host=here, started_at=now, heartbeat=now
            ))  # fmt: skip
        _RUNNING.add(key)
    try:
        yield
    finally:
        with _RUNNING_LOCK:
            _RUNNING.discard(key)


@contextmanager
def _settled_heap() -> Iterator[None]:
    """The objects alive before the attempts start (the loaded suite, the system, modules:
    most of the heap) kept out of the cyclic collector's passes until they end
    (``gc.freeze``): every collection that reached them scanned them again (at concurrency
    64 in-process, the collector's CPU fell from about 1.4 to 0.9 ms per attempt). What the
    attempts make is collected as before; a cycle among the frozen objects is collected
    after the batch. When something is frozen already (the embedding program manages the
    collector, or another batch runs in this process), it is left as it is.

    The young generations are also collected less often while the batch runs
    (:data:`BATCH_GC_THRESHOLDS`, then put back): at Python's default (a collection every 700
    allocations) an object living as long as an attempt (0.4 s at concurrency 256) outlived
    two collections and was promoted to the oldest generation, whose full collections then
    scanned every running attempt's objects about once every 40 attempts, 0.25 s each with
    the GIL held: some 7 ms of CPU per attempt at 256 (a fifth of the process's CPU), 4 ms at
    64. With the thresholds raised, the attempts' objects die young, no full collection ran
    in such a batch, and the collector's CPU fell from about 8.6 s to 2.4 s for 1,024
    attempts (``bench/overhead.py``, forty-seventh round)."""
    if gc.get_freeze_count():
        yield
        return
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*BATCH_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


BATCH_GC_THRESHOLDS = (20_000, 20, 10)
"""The cyclic collector's thresholds while a batch runs (see :func:`_settled_heap`): a
youngest-generation collection every 20,000 allocations (Python's default: 700; 3.13's:
2,000), the next every 20 of those; the oldest as Python's default. Cyclic garbage lives a
little longer (a few megabytes at most)."""


def _crashed_at_start(run: AgentRun) -> bool:
    """The agent crashed before it called a tool or said anything: it cannot start."""
    acted = any(
        getattr(event, "kind", "") == "tool_call" or getattr(event, "role", "") == "agent"
        for event in run.observation_action_log
    )
    return run.terminal_reason == "agent_failure/crashed" and not acted


def _account_refused(run: AgentRun) -> bool:
    """The model's API refused the credentials or the account (401, 402, 403, 407): not the
    system's failure, but no attempt of the batch can get an answer either."""
    serving = run.infrastructure_status.get("model_serving")
    return (
        run.terminal_reason == "environment_failure/model_serving"
        and isinstance(serving, dict)
        and serving.get("kind") == "auth"
    )


def _unfinished_slots(
    batch: BatchInfo, stored: list[AgentRun]
) -> tuple[dict[tuple[str, int], AgentRun], list[tuple[str, int]]]:
    """The last stored try of each (task, attempt), and the attempts still to run: not
    stored, or invalid with reruns left. Attempt-major order: an interrupted batch still
    covers every task evenly. Tries outside the batch's plan (stored by hand or by another
    program) are not its tries, as in every report (:func:`~groundstate.analysis.planned`)."""
    last = {(r.task_id, r.attempt): r for r in final_runs(planned_runs(batch, stored))}
    slots = [
        (task_id, n)
        for n in range(1, batch.attempts + 1)
        for task_id in sorted(batch.task_revisions)
        if _unfinished(last.get((task_id, n)), batch.max_retries)
    ]
    return last, slots


def _unfinished(last: AgentRun | None, max_retries: int) -> bool:
    return last is None or (not last.valid and last.retry < max_retries)


def check_resumable(batch: BatchInfo, suite: Suite, system: SystemSpec) -> None:
    """Refuse (:class:`ResumeMismatch`) to resume *batch* with another suite or system than
    it started with, or a batch that was imported rather than run."""
    if batch.source != "groundstate":  # its rows came from a file: there is nothing to rerun
        raise ResumeMismatch(
            f"cannot resume batch {batch.batch_id}: it was imported ({batch.source}, from "
            f"{batch.suite_path}), not run; import the missing rows again instead"
        )
    changed = []
    if batch.suite_hash != suite.suite_hash:
        changed.append(_suite_change(batch, suite))
    if batch.system_spec_hash != system.system_spec_hash:
        changed.append(_system_change(batch, system))
    if changed:
        raise ResumeMismatch(f"cannot resume batch {batch.batch_id}: " + "; ".join(changed))


def _suite_change(batch: BatchInfo, suite: Suite) -> str:
    """What differs between *suite* and the one *batch* ran: the environment it ran in (the
    same files hash as the batch's with another kind), or its files."""
    from groundstate.environments.registry import environment_kinds

    for kind in environment_kinds():
        if files_hash(suite.files, kind) == batch.suite_hash:
            return (
                f"the batch ran the suite in environment {kind!r}, not "
                f"{suite.config.environment!r}: resume it with --environment {kind}"
            )
    return (
        f"the suite {suite.shown()} changed since the batch started (a file added, removed or "
        "edited: the batch keeps only the suite's hash)"
    )


def _system_change(batch: BatchInfo, system: SystemSpec) -> str:
    """What differs between *system* and the one *batch* ran, field by field (the batch
    stores the whole spec)."""
    fields = _differing(batch.system_spec, system.model_dump(mode="json"))
    named = ", ".join(fields[:6]) + (f" and {len(fields) - 6} more" if len(fields) > 6 else "")
    glosses = [g for prefix, g in _GLOSSES.items() if any(f.startswith(prefix) for f in fields)]
    gloss = f" ({'; '.join(glosses)})" if glosses else ""
    where = f" in {named}{gloss}" if fields else ""
    return f"the system {system.source} differs from the batch's{where}"


_GLOSSES = {
    "resolved.code": "its agent's code changed",
    "resolved.versions": "a package in use has another version",
    "resolved.serving": "the model's base URL changed",
}
"""What a changed field of the ``resolved`` section means."""


def _differing(old: object, new: object, where: str = "") -> list[str]:
    """The dotted paths at which *old* and *new* (JSON values) differ."""
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return [] if old == new else [where or "the whole spec"]
    found: list[str] = []
    for key in sorted(old.keys() | new.keys(), key=str):
        path = f"{where}.{key}" if where else str(key)
        found += _differing(old.get(key, _ABSENT), new.get(key, _ABSENT), path)
    return found


_ABSENT = object()
"""A key one of two specs does not have."""


def run_batch(
    suite: Suite,
    system: SystemSpec,
    config: BatchConfig,
    store: RunStore,
    *,
    agent_factory: AgentFactory | None = None,
    on_run: RunCallback | None = None,
    validate: bool = True,
    allow_invalid: bool = False,
) -> BatchResult:
    """Run a new batch to completion (synchronous convenience over :class:`BatchRunner`).

    As ``groundstate run`` does, the suite is checked and every task the batch runs proven
    first (:func:`proven`), before anything is stored. ``validate=False`` skips that, for a
    suite proven already in this process (a :class:`BatchRunner` never validates: its caller
    does)."""
    if validate:
        config = proven(suite, store, config, allow_invalid=allow_invalid)
    runner = BatchRunner(suite, system, store, make_agent=agent_factory, on_run=on_run)
    return steadyloop.run(runner.start(config))


def proven(
    suite: Suite, store: RunStore, config: BatchConfig, *, allow_invalid: bool = False
) -> BatchConfig:
    """*config* once *suite* passes the static checks of ``groundstate check`` (else
    :class:`~groundstate.validation.static.SuiteCheckFailed`) and every task it runs is valid
    (proofs cached in *store*; else :class:`~groundstate.validation.InvalidTasks` naming each
    task and the checks it failed). With *allow_invalid* the invalid tasks run, and the batch
    names them (``invalid_tasks``), as ``run --allow-invalid`` does."""
    from groundstate.validation import require_valid
    from groundstate.validation.static import require_sound
    from groundstate.validation.suite import VALIDATOR_REVISION

    _known_tasks(suite, config)
    require_sound(suite)
    invalid = require_valid(suite, store, allow_invalid=allow_invalid, tasks=config.tasks)
    return dataclasses.replace(
        config, invalid_tasks=tuple(invalid), validator_revision=VALIDATOR_REVISION
    )
