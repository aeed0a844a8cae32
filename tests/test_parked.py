"""The idle-thread registry shared by the time-limited calls' and the agents' threads."""

from __future__ import annotations

import os

from groundstate.parked import Parked


def test_workers_are_taken_most_recent_first_and_only_once() -> None:
    parked: Parked[str] = Parked()
    assert parked.take() is None
    assert parked.park("a") and parked.park("b")
    assert parked.take() == "b"
    assert parked.take() == "a"
    assert parked.take() is None


def test_the_limit_turns_further_workers_away() -> None:
    parked: Parked[str] = Parked(limit=2)
    assert parked.park("a") and parked.park("b")
    assert not parked.park("c")
    assert len(parked) == 2 and list(parked) == ["a", "b"]


def test_unpark_loses_to_a_submitter_that_took_the_worker_first() -> None:
    parked: Parked[str] = Parked()
    parked.park("a")
    assert parked.take() == "a"
    assert not parked.unpark("a")
    parked.park("b")
    assert parked.unpark("b") and len(parked) == 0


def test_a_forked_child_has_no_idle_workers() -> None:
    parked: Parked[str] = Parked()
    parked.park("a")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's threads do not exist here
        os.write(write, str(len(parked)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 8) == b"0"
    os.close(read)
    assert len(parked) == 1
