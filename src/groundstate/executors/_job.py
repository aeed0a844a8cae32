"""Running one :class:`AttemptJob` wherever an executor puts it (this process or a worker)."""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import queue
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from contextvars import Context
from datetime import UTC, datetime, timedelta
from functools import partial
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any, NoReturn

from groundstate.agents.base import Agent, Session
from groundstate.agents.mcp_command import refuse_changed_program
from groundstate.agents.python import agent_builder, harness_entry
from groundstate.agents.scripted import ScriptedAgent
from groundstate.bindings import HARNESS, audit_hooks_refused
from groundstate.capture import descriptors_moved
from groundstate.environments import postgres_server
from groundstate.environments.postgres_server import URL_VARIABLE as POSTGRES_URL
from groundstate.episode import (
    END_WAIT,
    GRADING,
    REBOUND,
    AttemptJob,
    AttemptOutput,
    EnvironmentFactory,
    attempt_time_limit,
    default_environment,
    lost_attempt,
    rebound_attempt,
    run_attempt,
    run_of,
)
from groundstate.errors import ExecutorError, TimeLimitReached
from groundstate.interrupts import SHUT_OUT
from groundstate.loopthreads import (
    Done,
    Outcome,
    proc_status,
    started_before,
    submit,
    umask,
    working,
)
from groundstate.ourthreads import Threads, foreign, names, present, start
from groundstate.spec.suite import Suite, load_suite, with_environment
from groundstate.spec.system import SystemSpec
from groundstate.store import PreparedRun, prepare_run
from groundstate.workdirs import TMPDIR_ENV

AgentFactory = Callable[[], Agent]

_suites: dict[tuple[str, str, str | None], Suite] = {}
"""Suites a worker has loaded, by (path, hash): loaded and hashed once per process."""


async def run_job(
    job: AttemptJob,
    suite: Suite,
    make_agent: AgentFactory | None = None,
    make_env: EnvironmentFactory = default_environment,
) -> AttemptOutput:
    """Build the job's agent (its solution, the factory, or the system spec) and run it; the
    output comes back prepared for the store (serialised and hashed here, where the attempt
    ran, so the batch's single writer only writes it)."""
    task = suite.tasks[job.task_id]
    agent = _agent(job, suite, make_agent)
    program = job.solution is None and make_agent is None and _runs_program(job.system)
    if program:  # started from its files by each attempt: they must be the files hashed
        refuse_changed_program(job.system)
    output = await run_attempt(task, suite, job.system, agent, job.info, make_env)
    if program:  # and must not have changed while it ran, or the record names other code
        refuse_changed_program(job.system)
    return _for_store(output)


def _runs_program(system: SystemSpec) -> bool:
    """Whether *system*'s agent is an external program (``mcp-command``)."""
    return system.harness.orchestration_loop.entry == "mcp-command"


def prepared(row: PreparedRun) -> AttemptOutput:
    """The output of an attempt prepared for the store: what a worker's :class:`PreparedRun`
    (all it sends back) stands for."""
    artifacts = {name: data.decode("utf-8") for name, _, data in row.files}
    return AttemptOutput(run=row.run, artifacts=artifacts, prepared=row)


def _agent(job: AttemptJob, suite: Suite, make_agent: AgentFactory | None) -> Agent:
    if job.solution is not None:
        return ScriptedAgent.from_solution(suite.solutions[job.task_id][job.solution])
    if make_agent is not None:
        return make_agent()
    build = agent_builder(job.system)
    if harness_entry(job.system):  # the harness's own class: built here, it runs none of the
        with suppress(Exception):  # system's code, and the attempt is told as the harness's
            return build()  # (see shares_interpreter); one that fails, as the attempt's crash
    return BuiltInItsRun(build)


def shares_interpreter(job: AttemptJob, make_agent: AgentFactory | None = None) -> bool:
    """Whether untrusted Python code may run in this interpreter during *job*'s attempt,
    decided before its agent is built (the attempt's hand-off to its thread reads and puts
    back the process-wide state only then) as :func:`~groundstate.episode.run_attempt`
    decides it once the agent is built (:func:`groundstate.untrusted.shares_interpreter`):
    not for a solution's replay or a system whose entry is one of the harness's own agents
    (with the user the system declares, a harness kind), while no untrusted code has run in
    the process. A live factory's agent is not known before it is built: watched."""
    if job.solution is None and (make_agent is not None or not harness_entry(job.system)):
        return True
    return audit_hooks_refused()


class BuiltInItsRun:
    """The agent of a system file, built as its attempt's run starts: its factory is the
    system's code too, so it runs where ``run`` does, in the agent's thread under the time
    limit. Built before the attempt, a factory that blocked (a client waiting on a network
    at construction) held its attempt in-process for ever, where the pool killed it at the
    hard limit; one that raised stopped the batch instead of crashing its own attempt.
    Its module is imported before (once per process: a worker's first attempt does not pay
    for it), and the batch's preflight builds one agent first: a system that cannot be
    built is refused before any try."""

    def __init__(self, build: Callable[[], Agent]) -> None:
        self._build = build

    async def run(self, session: Session) -> Any:
        return await run_of(self._build(), session)


SuiteKey = tuple[str, str, str | None]
"""A suite as a job names it: its path, the hash the batch ran, the environment override."""

_loading = threading.Lock()


def job_suite(job: AttemptJob) -> Suite:
    """The job's suite, loaded from its path and checked against the hash the batch holds."""
    return suite_at((job.suite_path, job.suite_hash, job.environment))


def suite_at(key: SuiteKey) -> Suite:
    """The suite *key* names, loaded once per process. Under a lock: the first attempts of a
    worker start together, and each loading it would multiply the worker's warm-up."""
    path, suite_hash, environment = key
    with _loading:
        if key not in _suites:
            suite = load_suite(Path(path))
            if environment is not None:  # the batch's --environment override
                suite = with_environment(suite, environment)
            if suite.suite_hash != suite_hash:
                raise ExecutorError(
                    f"the suite {path} on this worker hashes to {suite.suite_hash[:12]}, "
                    f"the batch ran {suite_hash[:12]}: it changed, or the worker sees another "
                    "copy"
                )
            _suites[key] = suite
        return _suites[key]


def sendable(job: AttemptJob) -> bytes:
    """*job* pickled for a worker, in the process sending it: one that cannot be (a value in
    its system spec that only this process has, such as an instance of a class defined in a
    function) is refused by name, as :class:`ExecutorError`, before it is sent. (Handed to a
    queue as it was, it was pickled in the queue's feeder thread, which printed the error
    and dropped the job: the batch waited for it for ever.)"""
    try:
        return pickle.dumps(job)
    except Exception as exc:
        raise ExecutorError(
            f"the job of task {job.task_id!r} attempt {job.info.attempt} cannot be sent to "
            f"another process ({type(exc).__name__}: {exc}): its system spec holds a value "
            "only this process has; load the system from its file, or run it in-process"
        ) from None


def received(payload: bytes) -> AttemptJob:
    """The job :func:`sendable` sent (:class:`ExecutorError` when this process cannot read
    it: a class of the sender's that it cannot import)."""
    try:
        job = pickle.loads(payload)
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
        raise ExecutorError(f"a worker cannot read the job it was sent ({reason})") from None
    assert isinstance(job, AttemptJob)
    return job


GRADING_STARTS = "grading"
"""What a Ray task streams as its attempt's grading starts (see :func:`execute_announced`)."""


def execute_announced(payload: bytes) -> Iterator[PreparedRun | str | None]:
    """Run the job *payload* holds (:func:`sendable`) as a streaming Ray task: ``None``
    first, as the attempt starts (its hard limit runs from then, not from when the task was
    queued), :data:`GRADING_STARTS` as its grading starts (a death from then on is the
    grader's: see :func:`_grading`), then the record (it travels back as its stored text:
    see :class:`PreparedRun`). The attempt runs in a thread of its own, as in a pool
    worker, while this generator streams what it says.

    Failures outside the attempt (the suite cannot be loaded, the agent cannot be built)
    come back as :class:`ExecutorError` with a plain message: an exception class with its own
    constructor arguments may not survive pickling back to the parent."""
    yield None
    shut_out_signals()  # a Ray worker runs task after task
    try:
        job = received(payload)
    except Exception as exc:
        raise _plain(exc) from None
    said: queue.SimpleQueue[str | Outcome] = queue.SimpleQueue()
    heard = threading.Event()
    if not _RAY_WORKER:  # its first attempt: what the worker is without any
        _RAY_WORKER.append((_thread_names(), process_state()))
    ray_threads, baseline = _RAY_WORKER[0]
    tell = partial(_tell_grading, said.put, heard, ray_threads)
    name = f"attempt-{job.info.run_id[:8]}"
    before, started = entry_put_back(), time.monotonic()
    submit(partial(_job_attempt, job, tell), name, said.put, watched=shares_interpreter(job))
    while isinstance(item := said.get(), str):
        yield GRADING_STARTS  # back here once the caller has it (the task's backpressure)
        heard.set()
    error, output = item
    if error is not None:  # the batch stops
        raise _plain(error) if isinstance(error, Exception) else ExecutorError(repr(error))
    output = taken_in(job, job_suite(job), output, before, started)
    left = leftovers(output, baseline, ray_threads)
    yield _prepared(output)
    if left is not None:  # this worker takes no more attempts: it ends, once the caller
        yield RETIRING  # has the record and this (the task's backpressure)
        _kill_children()
        os._exit(0)


RETIRING = "retiring"
"""What a Ray task streams after its record when its attempt left something in its worker
(see :func:`leftovers`); then the worker ends, as a retiring pool worker does, so that what
was left reaches no later attempt."""

_RAY_WORKER: list[tuple[frozenset[str], ProcessState]] = []
"""The names of the threads a Ray worker ran before its first attempt (Ray's own), and its
:func:`process_state` then."""


def _thread_names() -> frozenset[str]:
    return frozenset(t.name for t in threading.enumerate())


def _tell_grading(
    put: Callable[[str], None], heard: threading.Event, ray_threads: frozenset[str]
) -> None:
    """Say that grading starts, unless code of an agent's may still run in this Ray worker
    (as :func:`_grading` in a pool worker; Ray's own threads are not an agent's), and wait
    until the caller has heard it (a pool worker's message is in its pipe once written; a
    Ray task's yield is sent later, and a check that kills the worker at once lost it)."""
    if not _agents_alive(known_names=ray_threads):
        put(GRADING_STARTS)
        heard.wait(HEARD_WAIT)


HEARD_WAIT = 60.0
"""Seconds grading waits for the caller of its Ray task to take the news that it starts
(past it, it goes on: a death then stays the agent's)."""


async def _job_attempt(job: AttemptJob, grading: Callable[[], None] | None = None) -> AttemptOutput:
    GRADING.set(grading)  # in this attempt's own context
    return await run_job(job, job_suite(job))


def _grading(results: Outbox, key: int, unlisted: frozenset[int]) -> Callable[[], None]:
    """What tells the parent that job *key*'s grading starts: a death from then on is the
    grader's (a check that exits or kills its process, runs out of memory, holds the worker
    past the hard limit). Not told while code of an agent's may still run in the worker
    (:func:`_agents_alive`), which could be what kills it: the death stays the agent's (its
    crash, its time limit), so that an agent cannot make it an uncounted grader failure."""

    def grading() -> None:
        if not _agents_alive(unlisted=unlisted):
            results.put(("grading", key, None))

    return grading


def _agents_alive(
    known: Threads | None = None,
    whose: Callable[[Context], bool] | None = None,
    unlisted: frozenset[int] | None = None,
    known_names: frozenset[str] = frozenset(),
    since: int = 0,
) -> bool:
    """Whether code of an agent's may still run in this worker: a loop thread still running
    an agent's work handed from *since* on (:func:`~groundstate.loopthreads.handed` as the
    batch opened: work left running by an earlier batch in the process is none of this
    one's; one past its time limit, known by the work it was given, not by the
    name its thread bears now, which the agent's code can change), a thread not the
    harness's (told by who started it and what it runs: :mod:`groundstate.ourthreads`; not
    by its name, which is anyone's to give) nor one of the *known* threads (those alive
    before the batch: a host's, or left by an earlier batch) nor one such left code started
    since (:func:`~groundstate.loopthreads.started_before`) or, in a Ray worker, named in
    *known_names* (Ray's own, which come and go), a thread ``threading`` does not list that
    is not one of *unlisted* (the native threads before the batch, :func:`native_threads`;
    None: not looked at, in a Ray worker whose own native threads come and go), a child
    process.

    With *whose* (in-process, several tries at once): only the agents' work whose context it
    accepts counts (another try's agent runs in that try's context, where a call it makes
    is laid at its own try's door), and children do not (a child's calls end only itself;
    one that kills this process leaves no cause: see :mod:`groundstate.exitcause`)."""
    for name, context in working(since).values():
        if name.startswith("agent-") and (whose is None or whose(context)):
            return True
    left = started_before(since) if since else None  # by an earlier batch's agent
    if any(t.name not in known_names for t in foreign(known, left)):
        return True
    if unlisted is not None and _unlisted_beyond(unlisted):
        return True
    return whose is None and bool(children())


def native_threads() -> frozenset[int]:
    """The native ids of this process's threads, as the kernel lists them (Linux; none where
    it cannot be read): among them those ``threading`` does not list, started through
    ``_thread.start_new_thread`` (an agent's, out of :func:`threading.enumerate`'s sight)
    or by C code."""
    try:
        return frozenset(int(tid) for tid in os.listdir("/proc/self/task"))
    except (OSError, ValueError):
        return frozenset()


def _unlisted_beyond(baseline: frozenset[int]) -> bool:
    """Whether a thread runs that ``threading`` does not list and that was not among
    *baseline* (:func:`native_threads`), read again when it seems so: a thread starting is
    in the kernel's list a moment before ``threading`` has its id. By identity, not by
    count: a thread of *baseline* that ended (one an earlier batch left) no longer hid a
    new one."""
    for _ in range(3):
        listed = {t.native_id for t in present().values()}
        if not native_threads() - baseline - listed:
            return False
        time.sleep(0.005)
    return True


def _prepared(output: AttemptOutput | None) -> PreparedRun:
    assert output is not None and output.prepared is not None  # run_job prepares it
    return output.prepared


def _plain(exc: BaseException) -> ExecutorError:
    """*exc* as an :class:`ExecutorError` whose message says it all (see
    :func:`execute_announced`)."""
    if isinstance(exc, ExecutorError):
        return exc
    return ExecutorError(f"{type(exc).__name__}: {exc}")


def shut_out_signals() -> None:
    """Ignore :data:`SHUT_OUT` in this process (from its main thread only: elsewhere Python
    cannot set a handler, and code there is not a worker's own)."""
    if threading.current_thread() is threading.main_thread():
        for signum in SHUT_OUT:
            signal.signal(signum, signal.SIG_IGN)


def init_worker(workdir_root: str) -> None:
    """Set up a pool worker: the parent handles Ctrl-C (the terminal sends it to the whole
    process group), work folders live under the parent's (removed with it at exit or, after
    a SIGKILL, by the next ``run``'s sweep), and the worker leaves when the parent dies.

    The worker leads a process group of its own: what an agent starts (a fork, a command)
    is in it and is killed with the worker (:func:`end_worker`). What attempts write to file
    descriptor 1 goes to 2: ``run --json`` writes its JSON on the parent's standard output,
    which the workers inherit."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    shut_out_signals()
    with suppress(OSError):  # already a group leader
        os.setpgid(0, 0)
    with suppress(OSError):
        os.dup2(2, 1)
    descriptors_moved()
    os.environ[TMPDIR_ENV] = workdir_root
    parent = multiprocessing.parent_process()
    if parent is not None:
        start(
            threading.Thread(
                target=_exit_with, args=(parent,), name="groundstate-parent-watch", daemon=True
            )
        )


def end_worker() -> NoReturn:
    """End this worker at once, with every process of its group (what its attempts started)
    and its children that left the group (``os.setsid()``)."""
    _kill_children()
    with suppress(OSError):  # the group it leads, also if an agent moved it out (setpgid)
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(0)


def children() -> set[int]:
    """This process's child processes (Linux; elsewhere none), but the harness's own (the
    watchdog of a PostgreSQL server this process started)."""
    pids: set[int] = set()
    with suppress(OSError):
        for task in os.listdir("/proc/self/task"):
            with suppress(OSError, ValueError), open(f"/proc/self/task/{task}/children") as f:
                pids.update(int(pid) for pid in f.read().split())
    server = postgres_server._SHARED
    if server is not None and server.watchdog is not None:
        pids.discard(server.watchdog.pid)
    return pids


def _kill_children() -> None:
    for pid in children():
        with suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _exit_with(parent: BaseProcess) -> None:
    """Exit once *parent* is gone: a pool worker waits for work on a queue whose writing end
    it holds itself, so a parent killed outright would otherwise leave it waiting forever."""
    parent.join()
    end_worker()


def hard_limit(job: AttemptJob, suite: Suite, grace: float) -> float:
    """Seconds after which an attempt of *job* still running is killed with its process: the
    agent's time limit, the wait for a call in flight, and *grace* for the harness's own
    work (reset, grading) on a busy machine."""
    return attempt_time_limit(suite.tasks[job.task_id], job.system) + END_WAIT + grace


def lost(
    job: AttemptJob,
    suite: Suite | None,
    cause: str,
    started: float,
    overdue: bool,
    grading: bool = False,
) -> AttemptOutput:
    """The record, prepared for the store, of *job*'s attempt whose process was lost with it
    (:func:`~groundstate.episode.lost_attempt`): killed at the hard limit (*overdue*: the
    agent's time limit), or dead by the agent's doing (a crash); lost while *grading* (the
    agent done, nothing of its own left running), ``grader_failure`` either way, as a check
    that raises is (invalid: rerun under the invalid-run policy). *cause* says what became
    of the process; *started* is when the attempt was handed to it (``time.monotonic()``).
    Without the *suite* (an executor made without it) there is no record to build: raises
    :class:`ExecutorError`, which stops the batch."""
    if suite is None:
        raise ExecutorError(
            f"{cause} while running task {job.task_id!r} attempt {job.info.attempt}; "
            "the stored attempts are kept: resume the batch"
        )
    task = suite.tasks[job.task_id]
    started_at, latency = _elapsed(started)
    error: BaseException
    reason = None
    evidence: dict[str, Any] = {"cause": cause, "overdue": overdue}
    if grading:
        error = WorkerDied(f"{cause} while grading")
        stage, reason, evidence["grading"] = "grading", "grader_failure", True
    elif overdue:
        limit = attempt_time_limit(task, job.system)
        error = TimeLimitReached(f"time limit {limit:g}s reached; {cause}")
        stage = "time_limit"
    else:
        error, stage = WorkerDied(cause), "agent"
    return _for_store(
        lost_attempt(
            task, job.system, job.info, error, stage, evidence, started_at, latency, reason
        )
    )


def entry_put_back() -> list[str]:
    """The harness's code found rebound, put back, where an attempt is handed out and where
    its output is taken in (the runner's, a pool worker's), outside every look of the
    attempt's own: a thread an earlier agent left running that rebound the entry
    (``_job.run_attempt``, ``run_job``) after its attempt's last look had every later
    attempt run its fake, each stored as whatever the fake said. Only where untrusted code
    has run in the process (:func:`~groundstate.bindings.audit_hooks_refused`)."""
    if not audit_hooks_refused():
        return []
    return HARNESS.put_back(read_code=False)


def taken_in(
    job: AttemptJob, suite: Suite, output: AttemptOutput, before: list[str], started: float
) -> AttemptOutput:
    """*job*'s *output* as the runner or a pool worker takes it in, unless the harness's code
    was found rebound as it was handed out (*before*, from :func:`entry_put_back`) or is
    now: then the attempt's record is a prohibited action naming it
    (:func:`~groundstate.episode.rebound_attempt`), prepared for the store. Nothing says
    which code did it: the attempt is stopped, as one running beside an agent that rebinds
    the harness's code is. *started*: when it was handed out (``time.monotonic()``)."""
    names = [*before, *entry_put_back()]
    if not names:
        return output
    started_at, latency = _elapsed(started)
    task = suite.tasks[job.task_id]
    return _for_store(rebound_attempt(task, job.system, job.info, names, started_at, latency))


def _elapsed(started: float) -> tuple[datetime, float]:
    """When an attempt handed out at *started* (``time.monotonic()``) began, and the seconds
    since: the start and latency of a record the harness builds for it."""
    latency = max(time.monotonic() - started, 0.0)
    return datetime.now(UTC) - timedelta(seconds=latency), latency


def _for_store(output: AttemptOutput) -> AttemptOutput:
    """*output* with its row prepared for the store (:func:`prepare_run`)."""
    row = prepare_run(output.run, output.artifacts, output.trace_lines)
    return AttemptOutput(run=row.run, artifacts=output.artifacts, prepared=row)


class WorkerDied(RuntimeError):
    """The process running an attempt died before the attempt ended (``os._exit``, a fatal
    signal, the kernel's out-of-memory killer): the attempt's crash."""


ProcessState = tuple[
    dict[str, str], float, int, tuple[tuple[int, int], ...], str, int, frozenset[int], int
]


def process_state() -> ProcessState:
    """What code can change for the whole process and a worker's next attempt would inherit:
    the environment variables (but those the harness sets itself, such as the address of
    the PostgreSQL server a worker starts for its attempts), the GIL's switch interval, the
    recursion limit, the resource limits (``RLIMIT_NOFILE`` at 3 leaves later attempts no
    file to open), the signals ignored (a ``SIGTERM`` or ``SIGCHLD`` ignored through C, out
    of ``signal.getsignal``'s sight), the file-mode mask, and the child processes (one
    left by an attempt could write on the results pipe it inherited during later attempts,
    or, out of the worker's process group, outlive it), and the process group (a worker
    moved out of its own would take Ctrl-C and leave what it forked behind)."""
    environ = {k: v for k, v in os.environ.items() if k not in HARNESS_VARIABLES}
    limits = _limits()
    return (
        environ,
        sys.getswitchinterval(),
        sys.getrecursionlimit(),
        limits,
        _ignored_signals(),
        umask(),
        frozenset(children()),
        os.getpgid(0),
    )


_RLIMITS = ("RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_STACK",
            "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_CORE")  # fmt: skip


def _limits() -> tuple[tuple[int, int], ...]:
    """The process's resource limits (none where there is no ``resource`` module)."""
    try:
        import resource
    except ImportError:  # Windows
        return ()
    return tuple(
        [resource.getrlimit(getattr(resource, n)) for n in _RLIMITS if hasattr(resource, n)]
    )


def _ignored_signals() -> str:
    """The process's mask of ignored signals, as the kernel reports it (Linux), or ``""``."""
    return proc_status("SigIgn") or ""


HARNESS_VARIABLES = frozenset({TMPDIR_ENV, POSTGRES_URL})


def leftovers(
    output: AttemptOutput | None,
    baseline: ProcessState,
    known: frozenset[str] = frozenset(),
    unlisted: frozenset[int] | None = None,
) -> str | None:
    """What an attempt that just ended left in this worker that could reach later attempts,
    or None: an agent or a tool still running past the attempt's end (Python cannot stop a
    thread), an attempt stopped for changing the harness's code or its task in memory (what
    the watch does not cover may have changed too), a thread of the agent's own, a change
    to :func:`process_state` since the worker started (*baseline*), a function or class of
    the harness's modules rebound since its episode put them back (a thread of the agent's
    still at it: see :mod:`groundstate.bindings`). A worker with leftovers takes no more
    attempts and ends (killing them) once its running attempts are done. Threads named in
    *known* are the process's own (a Ray worker's); a thread ``threading`` does not list
    that is not one of *unlisted* (a pool worker's native threads before its first attempt)
    is left too."""
    run = None if output is None else output.run
    if run is not None and (
        run.terminal_reason == "agent_failure/time_limit"
        or "blocked_in_tool" in run.infrastructure_status
    ):
        return "an agent or tool still running past its attempt's end"
    if run is not None and run.infrastructure_status.get("stop", {}).get("stage") == REBOUND:
        return f"the attempt changed the harness: {run.infrastructure_status['stop']['message']}"
    left = names(t for t in foreign() if t.name not in known)
    if left:
        return f"threads left running: {', '.join(left[:5])}"
    if unlisted is not None and _unlisted_beyond(unlisted):
        return "threads left running that threading does not list (started through _thread)"
    now = process_state()
    changed = [what for what, a, b in zip(_STATE, now, baseline, strict=True) if a != b]
    changed += HARNESS.rebound()
    return f"changed: {', '.join(changed[:5])}" if changed else None


_STATE = ("os.environ", "sys.getswitchinterval()", "sys.getrecursionlimit()", "resource limits",
          "signals ignored", "umask", "child processes", "process group")  # fmt: skip


Message = tuple[str, int, Any]
"""From a worker to the parent: ``("ready", pid, None)`` once it has started (it is handed
jobs only then: one that dies before is no attempt's doing); then, about job *key*:
``("started", key, None)`` as it starts, ``("grading", key, None)`` as its grading starts
(see :func:`_grading`), ``("done", key, pickled PreparedRun)``,
``("failed", key, message)``, ``("retiring", key, why)`` (the job left something behind:
the worker takes no more jobs and ends once its running ones are done) or ``("refused", key,
None)`` (the job reached a retiring worker: hand it to another)."""

FRAME = struct.Struct("!Q")
"""The length before each pickled :data:`Message` on a worker's results pipe."""


PIPE_LOST = 75
"""A worker's exit code when it can no longer write on its results pipe."""


class Outbox:
    """A worker's end of its own results pipe: each message written at once, whole, by the
    thread that has it (under a lock of this process only).

    Not a :class:`multiprocessing.Queue` shared by the workers: its writers share a lock
    across processes, and a worker killed while holding it (mid-message) left every other
    worker unable to write, the pool waiting for ever. Nor a queue's feeder thread, which a
    worker killed mid-job may not have let write what it was given."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection  # kept open: the descriptor is its
        self._fd = connection.fileno()
        self._lock = threading.Lock()

    def put(self, message: Message) -> None:
        data = pickle.dumps(message)
        view = memoryview(FRAME.pack(len(data)) + data)
        with self._lock:
            try:
                while view:
                    view = view[os.write(self._fd, view) :]
            except OSError:  # an agent closed or replaced it: the worker cannot report
                _kill_children()
                os._exit(PIPE_LOST)  # the parent kills the rest of its process group


FILES_PER_ATTEMPT = 12
"""Open files an attempt may hold at once in its process: about 10 measured in-process with a
SQLite environment (three connections, each with its journal files, and the attempt's event
loop), and room for an agent's own."""

FILES_RESERVED = 64
"""Open files of the process besides its attempts (the store, the standard streams, a pool's
pipes)."""


def room_for(attempts: int) -> None:
    """Let this process open the files *attempts* attempts running at once need: its soft
    limit raised (never past its hard limit) when it is lower, or :class:`ExecutorError`
    naming the concurrency that fits. Past the limit, attempts failed to open their
    databases (invalid tries, rerun into the same wall) and the store its artifacts (the
    batch stopped): at ``--concurrency 100`` under Linux's usual 1024, 25 under macOS's 256."""
    try:
        import resource
    except ImportError:  # Windows: no such limit to read
        return
    need = FILES_RESERVED + attempts * FILES_PER_ATTEMPT
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return
    roomy = need * 4 // 3  # live databases pooled between attempts keep some too
    target = roomy if hard == resource.RLIM_INFINITY else min(hard, roomy)
    for limit in (target, min(target, OPEN_MAX)):  # macOS refuses past OPEN_MAX, whatever
        with suppress(OSError, ValueError):  # its hard limit says
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
            break
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft < need:
        fits = max(1, (soft - FILES_RESERVED) // FILES_PER_ATTEMPT)
        most = "" if hard == resource.RLIM_INFINITY else f", which cannot go past {hard} here"
        raise ExecutorError(
            f"{attempts} attempts at once in one process need about {need} open files; this "
            f"process may open {soft} (ulimit -n{most}): lower --concurrency to {fits} or "
            "less, or raise the limit"
        )


OPEN_MAX = 10_240
"""macOS's most open files per process (``kern.maxfilesperproc``'s usual value)."""


def serve(
    jobs: Queue[Any],
    pipe: Connection,
    workdir_root: str,
    preload: SuiteKey | None = None,
    slots: int = 1,
) -> None:
    """A worker process's main: take ``(key, job)`` from *jobs* (the parent hands a worker
    only as many as it may run at once) and run each in a thread of its own; what becomes of
    each goes on its results *pipe* (see :class:`Outbox`). Several attempts per worker, so
    attempts that wait (on a model) overlap in a worker as they do in-process, while the CPU
    work of the pool spreads over every core. ``None`` on *jobs* stops it. The suite
    *preload* names is loaded first, while the parent's preflight runs (if it fails to load,
    the first job says why). Room is made for the files of its *slots* attempts at once
    (:func:`room_for`: the parent checked it can be; a fork server started before the
    parent raised its own limit has the old one)."""
    init_worker(workdir_root)
    with suppress(ExecutorError):
        room_for(slots)
    if preload is not None:
        with suppress(Exception):
            suite_at(preload)
    gc.freeze()  # the worker's suite and modules live as long as it: out of every collection
    results = Outbox(pipe)
    serving = _Serving(results, process_state(), native_threads())
    results.put(("ready", os.getpid(), None))
    while True:
        item = jobs.get()
        if item is None:
            return
        key, payload = item
        if not serving.take():
            results.put(("refused", key, None))
            continue
        try:
            job = received(payload)
        except ExecutorError as exc:  # no attempt started: the batch stops, naming why
            serving.reporter(key)((exc, None))
            continue
        results.put(("started", key, None))
        attempt = partial(_job_attempt, job, _grading(results, key, serving.unlisted))
        reporter = serving.reporter(key, job, entry_put_back())
        submit(attempt, f"attempt-{key}", reporter, watched=shares_interpreter(job))


class _Serving:
    """A worker's attempts: how many run, and whether the worker is retiring."""

    def __init__(self, results: Outbox, baseline: ProcessState, unlisted: frozenset[int]) -> None:
        self._results = results
        self._baseline = baseline
        self.unlisted = unlisted
        """The native threads before any attempt (:func:`native_threads`)."""
        self._lock = threading.Lock()
        self._running = 0
        self._retiring = False

    def take(self) -> bool:
        """Count one more running attempt; False when the worker retires."""
        with self._lock:
            if self._retiring:
                return False
            self._running += 1
            return True

    def reporter(
        self, key: int, job: AttemptJob | None = None, before: list[str] | None = None
    ) -> Done:
        """What becomes of job *key*, put on the results from the thread that ran it, *job*'s
        output taken in (:func:`taken_in`, *before*: what was found rebound as it was
        handed out)."""
        started = time.monotonic()

        def done(outcome: Outcome) -> None:
            error, output = outcome
            message: Message
            try:
                if error is not None:
                    raise error
                if job is not None:
                    output = taken_in(job, job_suite(job), output, before or [], started)
                # Pickled apart from the message, so that a failure is this job's; only
                # the stored form travels (see PreparedRun).
                message = ("done", key, pickle.dumps(_prepared(output)))
            except BaseException as exc:  # with a plain message (see execute_announced)
                plain = _plain(exc) if isinstance(exc, Exception) else exc
                message = ("failed", key, str(plain) or type(plain).__name__)
            self._finish(key, message, leftovers(output, self._baseline, unlisted=self.unlisted))

        return done

    def _finish(self, key: int, message: Message, left: str | None) -> None:
        with self._lock:
            retire = left is not None and not self._retiring
            self._retiring = self._retiring or retire
            self._running -= 1
            last = self._retiring and self._running == 0
        if retire:  # before the result, which frees a slot the parent would fill
            self._results.put(("retiring", key, left))
        self._results.put(message)
        if last:  # what the attempts left dies with the worker; the parent starts another
            end_worker()
