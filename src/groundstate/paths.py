"""Default locations, in a module of their own so that ``groundstate --help`` can name them
without importing the store (or anything heavy)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

DEFAULT_STORE = Path(".groundstate/runs.db")
"""The run store a command uses when given no ``--store`` (artifacts go beside it)."""


def make_folder(path: Path) -> None:
    """``path.mkdir(parents=True, exist_ok=True)``, naming what is in the way: where *path* or
    a folder above it is a file, Python says "File exists" (``--html notes.txt/r.html``: the
    report cannot be written, yet no file of that name exists) or "Not a directory", naming
    neither the file nor that it should be a folder."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        for above in reversed((path, *path.parents)):
            if os.path.lexists(above) and not above.is_dir():
                what = "a file" if above.is_file() else "a link to no folder"
                raise NotADirectoryError(
                    errno.ENOTDIR, f"{above} is {what}, not a folder", str(path)
                ) from exc
        raise
