"""Executors: where the attempts of a batch run.

The runner turns each attempt into an :class:`~groundstate.episode.AttemptJob` (data, no live
objects) and awaits ``executor.run(job)``, which gives back the finished record and its
artifacts; the runner alone writes them to the store. So resume, retries, the canary and the
invalid-run policy are the runner's, the same on every executor.

- ``in-process`` (default): each attempt in a thread of this process with its own event loop.
  Best when attempts mostly wait (on a model, a user, a sleep); accepts live test doubles.
- ``process``: a pool of worker processes, several attempts per worker at once (a thread
  each), for CPU-bound attempts (big fixtures, heavy graders, agents that compute).

In every process, the harness's own work of its attempts runs in turns
(:mod:`groundstate.turns`).
- ``ray``: each attempt a Ray task, on a local Ray instance or a cluster (``--ray-address``).
"""

from __future__ import annotations

from typing import Literal, Protocol

from groundstate.episode import AttemptJob, AttemptOutput, EnvironmentFactory, default_environment
from groundstate.errors import ExecutorError
from groundstate.executors._job import AgentFactory
from groundstate.executors.local import InProcessExecutor, ProcessExecutor
from groundstate.spec.suite import Suite

ExecutorName = Literal["in-process", "process", "ray"]
EXECUTORS: tuple[ExecutorName, ...] = ("in-process", "process", "ray")


class Executor(Protocol):
    """Runs attempt jobs somewhere and hands back finished records."""

    name: str
    """Stored with the batch: ``in-process``, ``process`` or ``ray``."""

    def open(self, concurrency: int) -> None:
        """Start what the executor needs (workers, a cluster connection) before a batch."""

    def room(self, concurrency: int) -> None:
        """Refuse (:class:`~groundstate.errors.ExecutorError`) a *concurrency* this executor
        cannot hold here, before any work (validation, the store): :meth:`open` would."""

    def close(self) -> None:
        """Stop it; attempts still running (an interrupted batch) are abandoned."""

    async def run(self, job: AttemptJob) -> AttemptOutput:
        """Run one attempt to its end and return its record and artifacts."""
        ...


def make_executor(
    name: str,
    suite: Suite,
    *,
    make_agent: AgentFactory | None = None,
    make_env: EnvironmentFactory = default_environment,
    ray_address: str | None = None,
) -> Executor:
    """The executor called *name*. Live factories (test doubles, fault injection) only run
    in-process: the other executors rebuild everything from the job in another process."""
    if name not in EXECUTORS:
        raise ExecutorError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")
    if ray_address is not None and name != "ray":
        raise ExecutorError("--ray-address is for --executor ray")
    if name == "in-process":
        return InProcessExecutor(suite, make_agent, make_env)
    if make_agent is not None or make_env is not default_environment:
        raise ExecutorError(
            f"the {name} executor builds agents and environments from the system spec in "
            "other processes; an agent or environment factory needs --executor in-process"
        )
    if name == "process":
        return ProcessExecutor(
            preload=(str(suite.root), suite.suite_hash, suite.config.environment), suite=suite
        )
    from groundstate.executors.ray import RayExecutor, require_ray

    require_ray()  # before validation and preflight, not after
    return RayExecutor(address=ray_address, suite=suite)


__all__ = [
    "EXECUTORS",
    "Executor",
    "ExecutorName",
    "InProcessExecutor",
    "ProcessExecutor",
    "make_executor",
]
