"""A pool worker's exit code, read by several threads at once, is the worker's own.

A fork-server child's exit status comes once, on a pipe: when the pool's reader and the
event loop asked at the same moment, the second took the pipe's end for a killed fork
server and recorded 255, so an agent's ``os._exit(3)`` read as "exited with code 255"
(seen in CI, about one run in five of this race on this machine)."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import threading
import time

from groundstate.executors.local import _alive, _death, _ended


def _exit_soon(code: int) -> None:
    time.sleep(0.02)
    os._exit(code)


def test_threads_reading_a_dead_workers_status_at_once_all_get_its_own_code() -> None:
    context = multiprocessing.get_context("forkserver")
    seen: list[object] = []
    for round_ in range(30):
        code = 3 + round_ % 5
        fresh = context.Process(target=_exit_soon, args=(code,))
        fresh.start()
        multiprocessing.connection.wait([fresh.sentinel], 10)
        gate = threading.Barrier(4)

        def look(
            process: multiprocessing.process.BaseProcess = fresh,
            gate: threading.Barrier = gate,
        ) -> None:
            gate.wait()
            seen.append(_alive(process))

        lookers = [threading.Thread(target=look) for _ in range(4)]
        for thread in lookers:
            thread.start()
        for thread in lookers:
            thread.join()
        assert _ended(fresh, 10) == code, f"round {round_}"
        assert _death(fresh) == f"the worker process exited with code {code}"
    assert seen == [False] * 120
