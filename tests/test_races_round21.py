"""Races between the threads of the harness (twenty-first round).

Each race is made to happen every time: a barrier or an event holds one thread at the
racy step while the other does what it did only now and then under load."""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from groundstate.executors import local
from groundstate.executors.local import _alive, _WorkerPool

WAIT = 30.0
"""Seconds a step that must happen is waited for (an upper bound: it takes milliseconds)."""


def _lose(*_: Any) -> Any:
    raise AssertionError("no job runs in these tests")


def _pool(tmp_path: Path) -> _WorkerPool:
    return _WorkerPool(multiprocessing.get_context("forkserver"), 1, 1, (str(tmp_path), None), _lose)


def _reader() -> threading.Thread:
    return next(t for t in threading.enumerate() if t.name == "groundstate-pool-reader")


def test_a_pool_closed_while_it_replaces_a_dead_worker_leaves_no_worker_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch closes the pool just as its reader replaces a worker that died (one that
    retired after the batch's last attempt: the usual end of a batch). The reader had seen
    the pool open; the worker it then started, after the close had killed the workers, was
    left running (waiting for work until the harness's process ended) with its pipe open."""
    replacing, death = threading.Event(), local._death

    def slow_death(process: Any) -> str:
        replacing.set()
        deadline = time.monotonic() + WAIT
        while not pool._closed.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # the close goes on meanwhile
        return death(process)

    monkeypatch.setattr(local, "_death", slow_death)
    pool = _pool(tmp_path)
    reader = _reader()
    first = pool._workers[0].process
    local._kill(first)
    assert replacing.wait(WAIT)
    pool.close()
    reader.join(WAIT)
    assert not reader.is_alive()
    left = [w.process for w in pool._workers if w.process is not first]
    running = [p.pid for p in left if _alive(p)]
    for process in left:  # not left to the end of the test session
        local._kill(process)
    assert running == []
    assert all(not w.inbox.open for w in pool._workers)
