"""Group commits: tries that finish together are stored in one transaction, each whole or not
at all, chained in order; a failing group leaves the store as it was."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from groundstate.episode import AttemptJob, AttemptOutput
from groundstate.errors import ExecutorError, StoreError
from groundstate.executors import InProcessExecutor
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.spec.suite import load_suite
from groundstate.spec.system import load_system
from groundstate.store import RunStore

from .conftest import BANK, BANK_SYSTEM


def _first_batch(store: RunStore, attempts: int = 2) -> tuple[str, list[AgentRun]]:
    runner = BatchRunner(load_suite(BANK), load_system(BANK_SYSTEM), store)
    result = asyncio.run(runner.start(BatchConfig(attempts=attempts)))
    return result.batch.batch_id, result.runs


def _another_try(run: AgentRun, attempt: int) -> tuple[AgentRun, dict[str, str]]:
    copy = run.model_copy(update={"run_id": f"extra-{attempt}", "attempt": attempt, "retry": 0})
    return copy, {"trace.jsonl": f"trace of attempt {attempt}\n"}


def _chained(store: RunStore, batch_id: str, extra: int) -> bool:
    """Whether the batch verifies but for its *extra* tries past its plan (named so)."""
    return [p.kind for p in store.verify(batch_id).problems] == ["outside_plan"] * extra


def _seqs(path: Path, batch_id: str) -> list[tuple[str, int]]:
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT run_id, seq FROM runs WHERE batch_id = ? ORDER BY seq", (batch_id,)
        ).fetchall()
    return [(str(run_id), int(seq)) for run_id, seq in rows]


def test_a_group_is_chained_in_order_and_verifies(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        batch_id, runs = _first_batch(store)
        before = len(_seqs(store.path, batch_id))
        stored = store.add_runs([_another_try(runs[0], n) for n in (10, 11, 12)])
        assert [r.run_id for r in stored] == ["extra-10", "extra-11", "extra-12"]
        assert all(store.read_artifact(r.artifact_locations["trace.jsonl"]) for r in stored)
        seqs = _seqs(store.path, batch_id)
        assert seqs[before:] == [(f"extra-{n}", before + i + 1) for i, n in enumerate((10, 11, 12))]
        assert _chained(store, batch_id, 3)


def test_a_duplicate_in_a_group_stores_none_of_it(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        batch_id, runs = _first_batch(store)
        kept = _seqs(store.path, batch_id)
        duplicate = (runs[-1].model_copy(update={"run_id": "again"}), {})
        group = [_another_try(runs[0], 10), duplicate, _another_try(runs[0], 11)]
        with pytest.raises(StoreError, match=f"attempt {runs[-1].attempt} try"):
            store.add_runs(group)
        assert _seqs(store.path, batch_id) == kept  # the first try of the group is gone too
        assert store.verify(batch_id).ok
        # The chain's head did not move: the next group links to the last stored record.
        store.add_runs([group[0], group[2]])
        assert _chained(store, batch_id, 2)
        assert len(_seqs(store.path, batch_id)) == len(kept) + 2


class _Together:
    """Runs each attempt in-process, then hands back the first *n* agent attempts at once,
    as when many attempts of a batch finish in the same moment."""

    name = "in-process"

    def __init__(self, n: int) -> None:
        self._inner = InProcessExecutor(load_suite(BANK))
        self._n = n
        self._held: list[asyncio.Future[None]] = []

    def open(self, concurrency: int) -> None:
        self._inner.open(concurrency)

    def close(self) -> None:
        self._inner.close()

    async def run(self, job: AttemptJob) -> AttemptOutput:
        output = await self._inner.run(job)
        if job.info.batch_id in ("canary", "smoke") or len(self._held) >= self._n:
            return output
        held = asyncio.get_running_loop().create_future()
        self._held.append(held)
        if len(self._held) == self._n:
            for waiting in self._held:
                waiting.set_result(None)
        await held
        return output


def test_tries_finishing_together_are_stored_in_one_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    groups: list[int] = []
    add_prepared = RunStore.add_prepared  # what the runner stores each group with

    def counted(self: RunStore, rows: Any, **kwargs: Any) -> None:
        groups.append(len(rows))
        add_prepared(self, rows, **kwargs)

    monkeypatch.setattr(RunStore, "add_prepared", counted)
    stored: list[AgentRun] = []
    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(
            load_suite(BANK),
            load_system(BANK_SYSTEM),
            store,
            executor=_Together(6),
            on_run=stored.append,
        )
        result = asyncio.run(runner.start(BatchConfig(attempts=6, concurrency=6)))
        assert groups[0] == 6  # one transaction for the six that finished together
        assert sum(groups) == len(result.runs) == len(stored)
        assert sorted(r.run_id for r in stored) == sorted(r.run_id for r in result.runs)
        assert sorted(r.attempt for r in result.final) == list(range(1, 7))
        assert store.verify(result.batch.batch_id).ok


class _Watching:
    """Runs attempts in-process, noting whether the collector had the heap frozen while each
    ran; the third agent attempt fails (as an executor whose worker died does)."""

    name = "in-process"

    def __init__(self) -> None:
        self._inner = InProcessExecutor(load_suite(BANK))
        self.frozen: list[int] = []

    def open(self, concurrency: int) -> None:
        self._inner.open(concurrency)

    def close(self) -> None:
        self._inner.close()

    async def run(self, job: AttemptJob) -> AttemptOutput:
        if job.info.batch_id not in ("canary", "smoke"):
            self.frozen.append(gc.get_freeze_count())
            if len(self.frozen) == 3:
                raise ExecutorError("the worker died")
        return await self._inner.run(job)


@pytest.mark.parametrize("failing", [False, True], ids=["completed", "failed"])
def test_a_batch_leaves_the_collector_as_it_found_it(tmp_path: Path, failing: bool) -> None:
    # The heap alive before the attempts is frozen while they run (out of the collector's
    # passes), and unfrozen after, however the batch ends; the collector stays enabled.
    executor = _run_watched(tmp_path, failing)
    assert executor.frozen and all(count > 0 for count in executor.frozen)
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_a_batch_leaves_what_its_embedder_froze_frozen(tmp_path: Path) -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        executor = _run_watched(tmp_path, failing=False)
        # Not frozen again (that would add the objects made since), nor unfrozen after (the
        # count would be 0). A frozen object freed meanwhile leaves the count: in a full test
        # run thousands can be (caches of earlier tests let go), so only most must stay.
        assert executor.frozen and all(count <= frozen for count in executor.frozen)
        assert frozen // 2 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


def _run_watched(tmp_path: Path, failing: bool) -> _Watching:
    executor = _Watching()
    with RunStore(tmp_path / "runs.db") as store:
        runner = BatchRunner(load_suite(BANK), load_system(BANK_SYSTEM), store, executor=executor)
        config = BatchConfig(attempts=3 if failing else 2)
        if failing:
            with pytest.raises(ExecutorError):
                asyncio.run(runner.start(config))
        else:
            asyncio.run(runner.start(config))
    return executor
