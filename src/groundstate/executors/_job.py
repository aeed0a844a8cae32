"""Running one :class:`AttemptJob` wherever an executor puts it (this process or a worker)."""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import os
import pickle
import signal
import threading
from collections.abc import Callable
from contextlib import suppress
from functools import partial
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue, SimpleQueue
from pathlib import Path
from typing import Any

from groundstate.agents.base import Agent
from groundstate.agents.python import load_agent
from groundstate.agents.scripted import ScriptedAgent
from groundstate.episode import (
    AttemptJob,
    AttemptOutput,
    EnvironmentFactory,
    default_environment,
    run_attempt,
)
from groundstate.errors import ExecutorError
from groundstate.loopthreads import Done, Outcome, submit
from groundstate.spec.suite import Suite, load_suite, with_environment
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
    output = await run_attempt(task, suite, job.system, agent, job.info, make_env)
    row = prepare_run(output.run, output.artifacts)
    return AttemptOutput(run=row.run, artifacts=output.artifacts, prepared=row)


def prepared(row: PreparedRun) -> AttemptOutput:
    """The output of an attempt prepared for the store: what a worker's :class:`PreparedRun`
    (all it sends back) stands for."""
    artifacts = {name: data.decode("utf-8") for name, _, data in row.files}
    return AttemptOutput(run=row.run, artifacts=artifacts, prepared=row)


def _agent(job: AttemptJob, suite: Suite, make_agent: AgentFactory | None) -> Agent:
    if job.solution is not None:
        return ScriptedAgent.from_solution(suite.solutions[job.task_id][job.solution])
    return make_agent() if make_agent is not None else load_agent(job.system)


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


def execute(job: AttemptJob) -> PreparedRun:
    """Run *job* in a worker (a Ray task) and return its record, prepared for the store (it
    travels back as its stored text: see :class:`PreparedRun`).

    Failures outside the attempt (the suite cannot be loaded, the agent cannot be built)
    come back as :class:`ExecutorError` with a plain message: an exception class with its own
    constructor arguments may not survive pickling back to the parent.
    """
    try:
        return _prepared(asyncio.run(_job_attempt(job)))
    except Exception as exc:
        raise _plain(exc) from None


async def _job_attempt(job: AttemptJob) -> AttemptOutput:
    return await run_job(job, job_suite(job))


def _prepared(output: AttemptOutput | None) -> PreparedRun:
    assert output is not None and output.prepared is not None  # run_job prepares it
    return output.prepared


def _plain(exc: BaseException) -> ExecutorError:
    """*exc* as an :class:`ExecutorError` whose message says it all (see :func:`execute`)."""
    if isinstance(exc, ExecutorError):
        return exc
    return ExecutorError(f"{type(exc).__name__}: {exc}")


def init_worker(workdir_root: str) -> None:
    """Set up a pool worker: the parent handles Ctrl-C (the terminal sends it to the whole
    process group), work folders live under the parent's (removed with it at exit or, after
    a SIGKILL, by the next ``run``'s sweep), and the worker leaves when the parent dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ[TMPDIR_ENV] = workdir_root
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()


def _exit_with(parent: BaseProcess) -> None:
    """Exit once *parent* is gone: a pool worker waits for work on a queue whose writing end
    it holds itself, so a parent killed outright would otherwise leave it waiting forever."""
    parent.join()
    os._exit(0)


Message = tuple[str, int, Any]
"""From a worker to the parent: ``("done", key, pickled AttemptOutput)`` or ``("failed",
key, message)``."""


def serve(
    jobs: Queue[Any],
    results: Queue[Message],
    started: SimpleQueue[tuple[int, int]],
    workdir_root: str,
    slots: int,
    preload: SuiteKey | None = None,
) -> None:
    """A worker process's main: take ``(key, job)`` from *jobs* while fewer than *slots* of
    its attempts run, each in a thread of its own, and put what becomes of each on *results*.
    ``(key, pid)`` goes on *started* before the job runs, written at once (not by a queue's
    feeder thread, which a worker killed mid-job may not have let write it): the parent
    names the job a dead worker was running.
    Several attempts per worker, so attempts that wait (on a model) overlap in a worker as
    they do in-process, while the CPU work of the pool spreads over every core. ``None`` on
    *jobs* stops it. The suite *preload* names is loaded first, while the parent's
    preflight runs (if it fails to load, the first job says why)."""
    init_worker(workdir_root)
    if preload is not None:
        with suppress(Exception):
            suite_at(preload)
    gc.freeze()  # the worker's suite and modules live as long as it: out of every collection
    free = threading.Semaphore(slots)
    while True:
        free.acquire()
        item = jobs.get()
        if item is None:
            return
        key, job = item
        started.put((key, os.getpid()))
        submit(partial(_job_attempt, job), f"attempt-{key}", _reporter(key, results, free))


def _reporter(key: int, results: Queue[Message], free: threading.Semaphore) -> Done:
    """What becomes of job *key*, put on *results* from the thread that ran it."""

    def done(outcome: Outcome) -> None:
        error, output = outcome
        message: Message
        try:
            if error is not None:
                raise error
            # Pickled here, not in the queue's feeder thread, where a failure would be lost;
            # only the stored form travels (see PreparedRun).
            message = ("done", key, pickle.dumps(_prepared(output)))
        except BaseException as exc:  # with a plain message (see execute)
            plain = _plain(exc) if isinstance(exc, Exception) else exc
            message = ("failed", key, str(plain) or type(plain).__name__)
        finally:
            free.release()
        results.put(message)

    return done
