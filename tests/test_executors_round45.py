"""A worker start the fork server refuses is tried again (forty-fifth round).

An agent writing junk on every pipe its worker holds ends the fork server (each of its
children holds the server's pipe); until the standard library sees the server ended and
starts another, its socket refuses, and the pool's reader, starting a replacement worker,
failed the whole batch with ``ConnectionRefusedError``."""

from __future__ import annotations

import multiprocessing

import pytest

from groundstate.executors import local


class _Refused:
    """A process whose start the fork server refuses *refusals* times."""

    def __init__(self, refusals: int) -> None:
        self.refusals, self.starts = refusals, 0

    def start(self) -> None:
        self.starts += 1
        if self.starts <= self.refusals:
            raise ConnectionRefusedError(111, "Connection refused")


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(local.time, "sleep", slept.append)
    return slept


def test_a_start_refused_a_few_times_is_tried_again(pauses: list[float]) -> None:
    process = _Refused(refusals=2)
    local._start(process)  # type: ignore[arg-type]
    assert process.starts == 3
    assert pauses == list(local.FORK_SERVER_PAUSES[:2])


def test_a_start_refused_every_time_says_so_after_the_last_pause(pauses: list[float]) -> None:
    process = _Refused(refusals=100)
    with pytest.raises(ConnectionRefusedError):
        local._start(process)  # type: ignore[arg-type]
    assert process.starts == len(local.FORK_SERVER_PAUSES) + 1
    assert pauses == list(local.FORK_SERVER_PAUSES)


def test_a_start_failing_otherwise_is_not_tried_again(pauses: list[float]) -> None:
    class Broken(_Refused):
        def start(self) -> None:
            self.starts += 1
            raise OSError(24, "Too many open files")

    process = Broken(refusals=0)
    with pytest.raises(OSError, match="open files"):
        local._start(process)  # type: ignore[arg-type]
    assert process.starts == 1 and pauses == []


def test_a_real_worker_starts_through_the_retrying_start() -> None:
    process = multiprocessing.get_context("forkserver").Process(target=int)
    local._start(process)
    process.join(60)
    assert process.exitcode == 0
