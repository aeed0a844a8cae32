"""Batches: every task of a suite, attempted N times by one system, each attempt stored."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from groundstate.agents.base import Agent
from groundstate.agents.python import load_agent
from groundstate.episode import AttemptInfo, run_attempt
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite
from groundstate.spec.system import SystemSpec
from groundstate.store import BatchInfo, RunStore

AgentFactory = Callable[[], Agent]
RunCallback = Callable[[AgentRun], None]


@dataclass(frozen=True)
class BatchConfig:
    attempts: int = 1
    seed: int = 0
    concurrency: int = 1


@dataclass
class BatchResult:
    batch: BatchInfo
    runs: list[AgentRun]


def derive_seed(batch_seed: int, task_id: str, attempt: int) -> int:
    """A stable 32-bit seed per (batch seed, task, attempt), independent of run order."""
    digest = hashlib.sha256(f"{batch_seed}:{task_id}:{attempt}".encode()).hexdigest()
    return int(digest[:8], 16)


def plan_batch(suite: Suite, system: SystemSpec, config: BatchConfig) -> BatchInfo:
    return BatchInfo(
        batch_id=uuid.uuid4().hex[:12],
        created_at=datetime.now(UTC),
        suite=suite.name,
        suite_path=str(suite.root),
        suite_hash=suite.suite_hash,
        system_spec_hash=system.system_spec_hash,
        system_spec=system.model_dump(mode="json"),
        attempts=config.attempts,
        seed=config.seed,
        task_revisions={t.task_id: t.task_revision for t in suite.tasks.values()},
        task_weights={task_id: suite.weight(task_id) for task_id in suite.tasks},
        task_slices={t.task_id: list(t.slice_labels) for t in suite.tasks.values()},
        task_horizons={
            task_id: len(solutions["oracle"].steps)
            for task_id, solutions in suite.solutions.items()
            if "oracle" in solutions
        },
    )


async def run_batch_async(
    suite: Suite,
    system: SystemSpec,
    config: BatchConfig,
    store: RunStore,
    *,
    agent_factory: AgentFactory | None = None,
    on_run: RunCallback | None = None,
) -> BatchResult:
    """Run and store every attempt; each attempt gets a fresh agent and a fresh environment."""
    make_agent = agent_factory or (lambda: load_agent(system))
    batch = plan_batch(suite, system, config)
    store.add_batch(batch)
    limit = asyncio.Semaphore(config.concurrency)
    runs: list[AgentRun] = []

    async def attempt(task_id: str, number: int) -> None:
        info = AttemptInfo(
            run_id=uuid.uuid4().hex,
            batch_id=batch.batch_id,
            attempt=number,
            seed=derive_seed(config.seed, task_id, number),
        )
        async with limit:
            output = await run_attempt(suite.tasks[task_id], suite, system, make_agent(), info)
        runs.append(store.add_run(output.run, output.artifacts))
        if on_run is not None:
            on_run(runs[-1])

    # Attempt-major order: an interrupted batch still covers every task evenly.
    await asyncio.gather(
        *(
            attempt(task_id, n)
            for n in range(1, config.attempts + 1)
            for task_id in sorted(suite.tasks)
        )
    )
    runs.sort(key=lambda r: (r.task_id, r.attempt))
    return BatchResult(batch=batch, runs=runs)


def run_batch(
    suite: Suite,
    system: SystemSpec,
    config: BatchConfig,
    store: RunStore,
    *,
    agent_factory: AgentFactory | None = None,
    on_run: RunCallback | None = None,
) -> BatchResult:
    """Synchronous wrapper of :func:`run_batch_async`."""
    return asyncio.run(
        run_batch_async(suite, system, config, store, agent_factory=agent_factory, on_run=on_run)
    )
