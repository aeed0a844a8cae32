"""Attempts as Ray tasks, on a local Ray instance or an existing cluster (``groundstate[ray]``)."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groundstate.episode import AttemptJob, AttemptOutput
from groundstate.errors import ExecutorError
from groundstate.executors._job import (
    GRADING_STARTS,
    execute_announced,
    hard_limit,
    lost,
    prepared,
    sendable,
)
from groundstate.executors.local import HARD_GRACE
from groundstate.spec.suite import Suite
from groundstate.store import PreparedRun
from groundstate.workdirs import TMPDIR_ENV, process_dir

MISSING = "--executor ray needs Ray: pip install 'groundstate[ray]'"

LOCAL_CPUS = 2
"""CPUs a local Ray instance started for a batch may use."""


@dataclass
class RayExecutor:
    """Each attempt a Ray task that returns its finished record; this process stores it.

    Without an address, a local Ray instance is started for the batch and stopped after it;
    with one (``ray://host:10001`` or ``auto``), the batch joins that cluster, whose nodes must
    see the suite at the same path and be able to import the system's agent.
    """

    address: str | None = None
    cpus_per_attempt: float = 1.0
    """Ray CPUs each attempt reserves; lower it for attempts that mostly wait on a model."""
    suite: Suite | None = None
    """The batch's suite as loaded here: the attempts' time limits, and the records of
    attempts lost with their Ray worker (without it, a lost attempt stops the batch)."""
    grace: float = HARD_GRACE
    """Seconds past an attempt's time limit before its Ray task is killed (see
    :data:`~groundstate.executors.local.HARD_GRACE`)."""
    name: str = "ray"
    _remote: Any = field(default=None, init=False, repr=False)
    _started: bool = field(default=False, init=False, repr=False)

    def open(self, concurrency: int) -> None:
        if self._remote is not None:
            return
        ray = _import_ray()
        if not ray.is_initialized():
            try:
                ray.init(**self._init_options())
            except Exception as exc:  # a wrong --ray-address, a cluster down, a missing extra
                where = f"the Ray cluster at {self.address}" if self.address else "a local Ray"
                raise ExecutorError(
                    f"cannot start or join {where}: {type(exc).__name__}: {exc}"
                ) from None
            self._started = True
        self._remote = ray.remote(  # each item taken by the caller before the task goes on
            num_cpus=self.cpus_per_attempt,
            max_retries=0,
            num_returns="streaming",
            _generator_backpressure_num_objects=1,
        )(execute_announced)

    def room(self, concurrency: int) -> None:
        """Nothing to check here: the cluster queues attempts past its CPUs."""

    def _init_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "configure_logging": False,
        }
        if self.address is not None:
            return {**options, "address": self.address}
        # A local instance: workers see this interpreter's import path and keep their work
        # folders under this process's, which is removed at exit (or swept after a kill).
        here = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])])
        env = {"PYTHONPATH": path, TMPDIR_ENV: str(process_dir() / "workers")}
        return {**options, "num_cpus": LOCAL_CPUS, "runtime_env": {"env_vars": env}}

    def close(self) -> None:
        self._remote = None
        if self._started:
            _import_ray().shutdown()
            self._started = False

    async def run(self, job: AttemptJob) -> AttemptOutput:
        """Run *job* as a Ray task. As in the process pool, an attempt whose worker dies (a
        crash of the agent's making: ``os._exit``, a fatal signal, Ray's out-of-memory
        killer) or that runs past its hard limit (killed, with its worker) ends as
        ``agent_failure/crashed`` or ``agent_failure/time_limit``; a Ray task runs alone in
        its worker, so the attempt is the one to blame. Once the task has said its grading
        started (:data:`~groundstate.executors._job.GRADING_STARTS`), either ends it as
        ``grader_failure``, as in the pool. Any other failure of Ray stops the batch."""
        if self._remote is None:
            raise ExecutorError("the Ray executor is not open")
        ray = _import_ray()
        errors = ray.exceptions
        returns = self._remote.remote(sendable(job))
        limit = None if self.suite is None else hard_limit(job, self.suite, self.grace)
        try:
            await _next_value(returns)  # it runs: the clock starts (not while Ray queues it)
        except errors.RayError as exc:  # the attempt had not started: no agent's doing
            raise ExecutorError(f"Ray could not start task {job.task_id!r}: {exc}") from None
        started = time.monotonic()
        grading = False
        try:
            while True:
                left = None if limit is None else max(limit - (time.monotonic() - started), 0)
                row = await asyncio.wait_for(_next_value(returns), left)
                if row != GRADING_STARTS:
                    break
                grading = True
        except asyncio.CancelledError:  # the batch stops: so does the attempt, on a cluster too
            ray.cancel(returns, force=True)
            raise
        except TimeoutError:
            ray.cancel(returns, force=True)
            return lost(job, self.suite, "its Ray worker was killed", started, True, grading)
        except (errors.WorkerCrashedError, errors.OutOfMemoryError) as exc:
            cause = f"its Ray worker died ({type(exc).__name__})"
            return lost(job, self.suite, cause, started, False, grading)
        except errors.RayTaskError as exc:  # its message: Ray's traceback, then the error
            message = _line(exc, -1)
            if isinstance(exc.as_instanceof_cause(), ExecutorError):
                raise ExecutorError(message) from None
            raise ExecutorError(f"a Ray task of task {job.task_id!r} failed: {message}") from None
        except errors.RayError as exc:
            raise ExecutorError(f"Ray could not run task {job.task_id!r}: {_line(exc)}") from None
        if not isinstance(row, PreparedRun):
            raise ExecutorError(f"a Ray task of task {job.task_id!r} sent {type(row).__name__}")
        await _the_end(ray, returns)
        return prepared(row)


async def _the_end(ray: Any, returns: Any) -> None:
    """Wait for the task's end, or for :data:`~groundstate.executors._job.RETIRING` (its
    attempt left something in its worker: a thread, a changed ``os.environ``...), after
    which its worker exits, as a retiring pool worker does: Ray reuses a worker from task to
    task, and what was left reached later attempts (a thread that killed the worker during
    another's attempt, a thread of the agent's that kept another's dying check from being
    the grader's failure). The record is in hand: what becomes of the worker now is not
    the attempt's."""
    with suppress(StopAsyncIteration, ray.exceptions.RayError):
        while True:  # to the end: the error of a worker that exited, unread, Ray would log
            await _next_value(returns)


def _line(exc: BaseException, which: int = 0) -> str:
    """One line of *exc*'s message (Ray's run to paragraphs, with tracebacks and advice): the
    first, or *which*; the error stops the batch in one line (``error: ...; batch stopped``)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[which] if lines else type(exc).__name__


async def _next_value(returns: Any) -> Any:
    """The value of the next object a streaming Ray task yields (raising what it raised)."""
    return await (await returns.__anext__())


def require_ray() -> None:
    """Refuse early, without importing Ray (slow), when it is not installed."""
    try:
        found = importlib.util.find_spec("ray") is not None
    except ValueError:  # sys.modules["ray"] is None: imports of it are blocked
        found = False
    if not found:
        raise ExecutorError(MISSING)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ExecutorError("--executor ray needs Ray: pip install 'groundstate[ray]'") from None
    return ray
