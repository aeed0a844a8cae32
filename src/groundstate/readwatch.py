"""Files a suite's own code reads, seen from the process's one audit hook (see
:func:`groundstate.validation.skew.outside_reads`, for ``grader_determinism``).

Its own small module, imported by :mod:`groundstate.bindings`, whose hook (added first, and
the only one groundstate lets stand once an agent has run) calls :func:`audit` while a watch
is in force: validation imported after an in-process agent ran (its hook then refused) still
sees the reads. No list of callables an agent could add its own hook to: the watches are data.
"""

from __future__ import annotations

import os
import sys
from contextlib import suppress
from pathlib import Path
from types import FrameType
from typing import Any

OPENERS = frozenset(
    {"io", "_io", "pathlib", "codecs", "json", "csv", "tomllib", "configparser", "fileinput"}
    | {"gzip", "bz2", "lzma", "zipfile", "tarfile", "shutil", "sqlite3", "linecache"}
)
"""Standard library modules that open a file for the code calling them (``Path.read_text``,
``json.load``...): the reader is the frame before theirs."""

WATCHES: list[tuple[set[int], list[Path], dict[str, None]]] = []
"""The watches in force: the ids of suite namespaces, the folders they may read, and the
files found read outside them."""


def audit(event: str, args: tuple[Any, ...]) -> None:
    """A file the watched code opens for reading, or a SQLite database it connects to,
    outside the folders its watch allows (called by the hook while :data:`WATCHES` holds
    one)."""
    if event not in ("open", "sqlite3.connect") or not args:
        return
    target, mode = args[0], (args[1] if event == "open" and len(args) > 1 else "r")
    if not isinstance(target, str | bytes | os.PathLike) or any(c in str(mode) for c in "wax+"):
        return
    name = os.fsdecode(target)
    if name.startswith((":", "file:")) or not name:
        return
    frame: FrameType | None = sys._getframe(2)  # past the hook calling this function
    while frame is not None and str(frame.f_globals.get("__name__")).split(".")[0] in OPENERS:
        frame = frame.f_back
    if frame is None:
        return
    with suppress(OSError, ValueError):
        for suite_code, allowed, found in list(WATCHES):
            if id(frame.f_globals) in suite_code:
                path = Path(name).resolve()
                outside = not any(path.is_relative_to(folder) for folder in allowed)
                if outside and path.exists():  # a missing one fails the check anyway
                    found[str(path)] = None
