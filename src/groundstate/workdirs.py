"""Temporary working directories, owned by the process that made them.

Every environment's work directory lives under ``<tmp>/groundstate/pid-<pid>/`` (``<tmp>`` is
``$GROUNDSTATE_TMPDIR`` or the system's temporary folder). The process removes its own folder
when it exits (normally, or on SIGINT/SIGTERM through the CLI's handlers); a process killed
outright leaves its folder behind, and :func:`sweep_stale` removes the folders whose process is
gone the next time ``groundstate run`` starts.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from groundstate.leftovers import at_exit

TMPDIR_ENV = "GROUNDSTATE_TMPDIR"
_OWNED = re.compile(r"pid-(\d+)")
_registered: set[int] = set()


def temp_root() -> Path:
    """The folder holding every process's work directories."""
    return Path(os.environ.get(TMPDIR_ENV) or tempfile.gettempdir()) / "groundstate"


def process_dir() -> Path:
    """This process's folder (made on first use; removed at exit)."""
    path = temp_root() / f"pid-{os.getpid()}"
    if os.getpid() not in _registered:  # a forked child registers its own
        # A folder of this name before this process's first use is a dead process's that had
        # the same id (ids are reused; a killed run leaves its folder): its work directories'
        # names could collide with ours, and nobody else owns them.
        shutil.rmtree(path, ignore_errors=True)
        _registered.add(os.getpid())
        at_exit(remove_own)
    path.mkdir(parents=True, exist_ok=True)
    return path


_made = itertools.count()
"""Numbers this process's work directories (their names rest on no random stream)."""


def make_workdir(prefix: str = "env-") -> Path:
    """A fresh, empty work directory owned by this process. Named by a counter, not by
    ``tempfile``'s random names: code an attempt or a check ran may have made every stream
    draw the same number (``random.Random.random`` rebound), and the next directory's name
    would then be taken ("No usable temporary directory name found")."""
    parent = process_dir()
    while True:
        path = parent / f"{prefix}{next(_made)}"
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:  # a name taken by hand: take the next
            continue
        return path


@contextmanager
def scratch_dir(prefix: str) -> Iterator[str]:
    """A fresh folder of this process's (:func:`make_workdir`), removed on leaving: for
    ``tempfile.TemporaryDirectory``'s uses where checks or an attempt's code run inside, whose
    random names a rebound stream makes the same every time (a killed run's leftover of that
    name then stops every later one)."""
    path = make_workdir(prefix)
    try:
        yield str(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def remove_own() -> None:
    """Remove this process's folder and everything in it."""
    shutil.rmtree(temp_root() / f"pid-{os.getpid()}", ignore_errors=True)


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists on this host (a zombie counts as existing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by someone else
        return True
    except OSError:
        return False
    return True


def sweep_stale() -> list[Path]:
    """Remove the folders of processes that are gone (killed runs); return what was removed.

    Only folders named for a process id that no longer exists on this host are touched.
    """
    root = temp_root()
    if not root.is_dir():
        return []
    removed = []
    for folder in root.iterdir():
        owner = _OWNED.fullmatch(folder.name)
        if owner is None or int(owner[1]) == os.getpid() or pid_alive(int(owner[1])):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed
