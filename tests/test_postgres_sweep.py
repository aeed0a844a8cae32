"""A private PostgreSQL server's folder left behind by a run whose owner and watchdog both
died (a container stopped mid-run: several GB each, they filled the disk) is removed when
the next private server starts; a folder a server still runs in, or one just made, is not."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from groundstate.environments.postgres_server import PREFIX, STALE_AFTER, sweep_stale


def _folder(parent: Path, name: str, *, pid: int | None, age: float) -> Path:
    folder = parent / f"{PREFIX}{name}"
    (folder / "data" / "base").mkdir(parents=True)
    (folder / "data" / "base" / "1").write_bytes(b"x" * 1024)
    if pid is not None:
        (folder / "data" / "postmaster.pid").write_text(f"{pid}\n{folder / 'data'}\n")
    then = time.time() - age
    os.utime(folder, (then, then))
    return folder


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_stale_folder_with_no_live_server_is_removed(tmp_path: Path) -> None:
    dead = _folder(tmp_path, "dead", pid=_dead_pid(), age=STALE_AFTER + 60)
    never = _folder(tmp_path, "never", pid=None, age=STALE_AFTER + 60)  # initdb never finished
    assert sorted(sweep_stale(tmp_path)) == sorted([dead, never])
    assert not dead.exists() and not never.exists()


def test_a_live_server_a_new_folder_and_other_names_are_kept(tmp_path: Path) -> None:
    live = _folder(tmp_path, "live", pid=os.getpid(), age=STALE_AFTER + 60)
    new = _folder(tmp_path, "new", pid=None, age=5)  # being made: no server yet
    other = tmp_path / "other-pg-folder"
    other.mkdir()
    os.utime(other, (0, 0))
    assert sweep_stale(tmp_path) == []
    assert live.exists() and new.exists() and other.exists()
