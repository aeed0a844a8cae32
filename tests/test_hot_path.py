"""The attempt's hot path made cheaper gives the same records: reused agent threads against
a new thread per attempt, records against their stored (validated) form."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from groundstate import loopthreads
from groundstate.agents.scripted import ScriptedAgent
from groundstate.episode import AttemptInfo, run_attempt
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, run_batch
from groundstate.spec.suite import Suite, load_suite
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, scripted_system

from .conftest import without_keys

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
VOLATILE = {"at", "duration_ms", "latency", "started_at", "database", "traceback"}
"""Times, and the attempt's own work folder."""


def _oracle_records(suite: Suite) -> list[Any]:
    async def replay_all() -> list[Any]:
        records = []
        for task_id, solutions in sorted(suite.solutions.items()):
            info = AttemptInfo(run_id=task_id, batch_id="b", attempt=1, seed=0)
            agent = ScriptedAgent(solutions["oracle"].steps)
            output = await run_attempt(suite.tasks[task_id], suite, scripted_system(), agent, info)
            stored = AgentRun.model_validate_json(output.run.model_dump_json())
            assert stored == output.run  # the record is what the store will read back
            trace = [json.loads(line) for line in output.artifacts.pop("trace.jsonl").splitlines()]
            record = output.run.model_dump(mode="json")
            records.append(without_keys({**record, **output.artifacts, "trace": trace}, VOLATILE))
        return records

    return asyncio.run(replay_all())


def test_retail_oracle_records_are_the_same_on_reused_and_new_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    suite = load_suite(EXAMPLES / "retail")
    reused = _oracle_records(suite)
    monkeypatch.setattr(loopthreads, "_take", loopthreads._LoopThread)  # a new one each time
    fresh = _oracle_records(suite)
    assert reused == fresh
    assert all(r["success"] for r in reused)


def test_a_batch_result_is_short_to_print(bank: Suite, tmp_path: Path) -> None:
    """asyncio.run formats its task's result on Python 3.11: it must not print every record."""

    async def done(session: Any) -> str:
        return "done"

    with RunStore(tmp_path / "runs.db") as store:
        config = BatchConfig(attempts=3)
        agents = lambda: FunctionAgent(done)  # noqa: E731
        result = run_batch(
            bank, scripted_system(), config, store, agent_factory=agents, validate=False
        )
    assert len(result.runs) == 3 * len(bank.tasks)
    batch, tries = result.batch.batch_id, len(result.runs)
    assert repr(result) == f"BatchResult(batch={batch!r}, runs=<{tries} tries>)"
