"""The store's write path, A/B: this checkout's ``store.py`` against another revision's, in one
process, alternating try by try on the same inputs (prints figures; not a test).

1. ``put_artifact`` of new 4 kB texts, in stores whose 256 artifact folders exist (a store
   in use) and in fresh ones (folders made on first use).
2. ``add_run`` of the retail example's oracle replays (two artifacts, the record, its hash,
   the chain link, one commit).
3. ``verify`` of the batch stored in 2 (every record parsed and hashed, its artifacts read
   back), each side checking the same database.
4. This checkout alone: a stored try's CPU by step (the record's JSON, its canonical hash,
   the artifacts' digests, their files, the statements, the commit), to see what dominates.

Alternating in one process keeps the two sides under the same load, which on a shared
machine moves whole-run figures more than the differences measured here.

Run: ``.venv/bin/python bench/store_write.py [--against REV] [--repeats N]`` (REV defaults to
``HEAD``: this checkout's uncommitted changes).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from groundstate.agents.scripted import ScriptedAgent
from groundstate.episode import AttemptInfo, AttemptOutput, run_attempt
from groundstate.spec.suite import load_suite
from groundstate.store import BatchInfo, PreparedRun, RunStore, prepare_run, record_hash
from groundstate.testing import scripted_system

ROOT = Path(__file__).resolve().parent.parent


def _other_store(rev: str, into: Path) -> ModuleType:
    """``groundstate/store.py`` as of *rev*, loaded as its own module."""
    text = subprocess.run(
        ["git", "show", f"{rev}:src/groundstate/store.py"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    path = into / "store_before.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("store_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up while it is made
    spec.loader.exec_module(module)
    return module


def _ab(items: list[Any], act: dict[str, Callable[[Any], object]]) -> dict[str, list[float]]:
    """Wall and CPU seconds of each side's *act* per item, the sides taking turns first."""
    times: dict[str, list[float]] = {
        f"{side} {kind}": [] for side in act for kind in ("wall", "cpu")
    }
    sides = list(act)
    for i, item in enumerate(items):
        for side in sides if i % 2 else sides[::-1]:
            t0, c0 = time.perf_counter(), time.process_time()
            act[side](item)
            times[f"{side} wall"].append(time.perf_counter() - t0)
            times[f"{side} cpu"].append(time.process_time() - c0)
    return times


def _print(what: str, times: dict[str, list[float]]) -> None:
    print(f"{what}, n={len(next(iter(times.values())))}:")
    for name, samples in times.items():
        print(
            f"  {name:12} median {statistics.median(samples) * 1000:.3f} ms, "
            f"mean {statistics.mean(samples) * 1000:.3f} ms"
        )


def _replays(repeats: int) -> list[AttemptOutput]:
    suite, system = load_suite(ROOT / "examples" / "retail"), scripted_system()
    loop = asyncio.new_event_loop()
    outputs = []
    for attempt in range(1, repeats + 1):
        for task_id, solutions in sorted(suite.solutions.items()):
            info = AttemptInfo(run_id=f"{task_id}-{attempt}", batch_id="b", attempt=attempt, seed=0)
            agent = ScriptedAgent(solutions["oracle"].steps)
            outputs.append(
                loop.run_until_complete(
                    run_attempt(suite.tasks[task_id], suite, system, agent, info)
                )
            )
    loop.close()
    return outputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="HEAD", help="the revision to compare with")
    parser.add_argument("--repeats", type=int, default=10, help="retail replays per task")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=os.getcwd()) as tmp:
        before = _other_store(args.against, Path(tmp))
        for label, warm, count in (("folders existing", True, 1000), ("fresh store", False, 200)):
            stores = {
                "before": before.RunStore(Path(tmp) / label / "a" / "runs.db"),
                "after": RunStore(Path(tmp) / label / "b" / "runs.db"),
            }
            for store in stores.values() if warm else ():
                for i in range(256):
                    (store.artifacts / f"{i:02x}").mkdir(parents=True, exist_ok=True)
            texts = [f"{i} " + os.urandom(2000).hex() for i in range(count)]
            act = {side: store.put_artifact for side, store in stores.items()}
            _print(f"put_artifact of a new 4 kB text, {label}", _ab(texts, act))
        outputs = _replays(args.repeats)
        stores = {
            "before": before.RunStore(Path(tmp) / "runs" / "a" / "runs.db"),
            "after": RunStore(Path(tmp) / "runs" / "b" / "runs.db"),
        }
        for store in stores.values():
            store.add_batch(_empty_batch("b"))
        act = {side: (lambda o, s=s: s.add_run(o.run, o.artifacts)) for side, s in stores.items()}
        _print("add_run of a retail oracle replay", _ab(outputs, act))
        stored = Path(tmp) / "runs" / "b" / "runs.db"
        checked = {"before": before.RunStore(stored), "after": RunStore(stored)}
        act = {side: (lambda _, s=s: s.verify("b")) for side, s in checked.items()}
        per_record = _scaled(_ab([None] * 20, act), 1 / len(outputs))
        _print(f"verify, per record (a batch of {len(outputs)})", per_record)
        _print("a stored try by step (this checkout)", _steps(outputs, Path(tmp) / "steps"))
    print(f"before: {args.against}; after: this checkout; {sys.version.split()[0]}")


def _scaled(times: dict[str, list[float]], factor: float) -> dict[str, list[float]]:
    return {name: [t * factor for t in samples] for name, samples in times.items()}


def _steps(outputs: list[AttemptOutput], folder: Path) -> dict[str, list[float]]:
    """CPU seconds of each step of storing a try (prepare_run's, then add_prepared's), each
    done longhand as the store does it, in a store whose artifact folders exist."""
    steps: dict[str, list[float]] = {}

    def lap(name: str, since: float) -> float:
        now = time.thread_time()
        steps.setdefault(f"{name} cpu", []).append(now - since)
        return now

    with RunStore(folder / "runs.db") as store:
        for i in range(256):
            (store.artifacts / f"{i:02x}").mkdir(parents=True, exist_ok=True)
        store.add_batch(_empty_batch("b"))
        store.acquire_lease("b")
        db = store._db  # the steps of add_prepared, one by one
        for output in outputs:
            row = prepare_run(output.run, output.artifacts)
            c = time.thread_time()
            row.run.model_copy(update={"artifact_locations": {}}).model_dump_json()
            c = lap("record JSON (pydantic)", c)
            record_hash(row.text)
            c = lap("canonical hash", c)
            prepare_run(output.run, output.artifacts)
            c = lap("prepare_run whole", c)
            for _, digest, data in row.files:
                store._put(digest, data)
            c = lap("artifact files", c)
            _statements(store, row)
            c = lap("statements", c)
            db.execute("COMMIT")
            lap("commit", c)
    return steps


def _statements(store: RunStore, row: PreparedRun) -> None:
    """What :meth:`RunStore.add_prepared` runs in its transaction for one try, but the commit."""
    db = store._db
    db.execute("BEGIN IMMEDIATE")
    store._hold(db, "b", "now", renew=False)
    length, head = store._chain_head(db, "b")
    head = store._insert_run(db, row, length + 1, head)
    db.execute("INSERT OR REPLACE INTO chains VALUES (?, ?, ?)", ("b", length + 1, head))


def _empty_batch(batch_id: str) -> BatchInfo:
    return BatchInfo(
        batch_id=batch_id, created_at=datetime(2026, 1, 1, tzinfo=UTC), suite="s",
        suite_path="s", suite_hash="h", system_spec_hash="h", system_spec={}, attempts=1,
        seed=0, task_revisions={}, task_weights={}, task_slices={},
    )  # fmt: skip


if __name__ == "__main__":
    main()
