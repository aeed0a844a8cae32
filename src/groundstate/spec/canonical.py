"""Canonical JSON and hashing: the same content always gives the same hash."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import time
from collections.abc import Callable
from json.encoder import encode_basestring as _encode_text
from pathlib import Path
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def canonical_json(value: Any) -> str:
    """Serialise *value* with sorted keys and no insignificant whitespace."""
    # A plain scalar (a row's cell or key, mostly) as json.dumps writes it, without making an
    # encoder (about 2.5 µs a call); exact types only: a subclass is json.dumps's to read.
    kind = type(value)
    if kind is str:
        return _encode_text(value)  # json.dumps's own for ensure_ascii=False
    if kind is int:
        return int.__repr__(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hash_value(value: Any) -> str:
    """sha256 of the canonical JSON form of *value*."""
    return sha256_text(canonical_json(value))


def hash_file(path: Path) -> str:
    return sha256_bytes(path.read_bytes())


SETTLED_NS = 2_000_000_000
"""A file last modified longer ago than this (ns) keeps what was computed from it while its
stat stays the same."""

_wall_ns = time.time_ns
"""Bound at import: code under test (a check reading the clock, a test patching it) must not
see the harness read it, nor make the harness read its clock."""


class SettledFileCache(Generic[T]):
    """What *compute* makes of a file, made again only when the file's stat (inode, size,
    modification time) changed: a large fixture is not hashed, nor a check file imported, for
    every attempt. A file modified in the last :data:`SETTLED_NS` is always computed afresh,
    since two writes inside the clock's granularity could leave the same size and time (git's
    "racily clean" entries). Errors of ``stat`` and of *compute* reach the caller."""

    def __init__(self, compute: Callable[[Path], T]) -> None:
        self._compute = compute
        self._known: dict[Path, tuple[tuple[int, int, int], T]] = {}

    def get(self, path: Path) -> T:
        stat = path.stat()
        identity = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        known = self._known.get(path)
        if known is not None and known[0] == identity:
            return known[1]
        value = self._compute(path)
        if _wall_ns() - stat.st_mtime_ns > SETTLED_NS:
            self._known[path] = (identity, value)
        return value


_NOT_CONTENT = {".git", "__pycache__"}


def hash_path(path: Path) -> str:
    """A fixture's hash: a file's content, or a folder's files as a workspace holds them
    (relative path -> content hash, ``.git`` and caches left out; an executable file with its
    mode, a link by the name it leads to, not what it reads), and for a folder with its own
    ``.git``, the commit its ``HEAD`` names, which is what a workspace takes of it.

    A folder's files were hashed by content alone: a file made executable, a link led to
    another file of the same bytes (or one leading nowhere) and a commit of what the work tree
    held already each changed the state a workspace builds, not the hash, so a task proven
    before them was read back from the cache as proven after."""
    if not path.is_dir():
        return hash_file(path)
    files: dict[str, Any] = {}
    for file in sorted(path.rglob("*")):
        if _NOT_CONTENT & set(file.relative_to(path).parts) or file.suffix == ".pyc":
            continue
        name = str(file.relative_to(path))
        if file.is_symlink():
            files[name] = {"link": os.fsencode(os.readlink(file)).hex()}
        elif file.is_file():
            digest = hash_file(file)
            files[name] = [digest, "100755"] if file.stat().st_mode & stat.S_IXUSR else digest
    if (path / ".git").exists():
        return hash_value({"files": files, "head": _git_head(path)})
    return hash_value(files)


def _git_head(repository: Path) -> str:
    """The commit *repository*'s ``HEAD`` names, or why git could not say (itself a value
    that changes when what it says changes)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(repository), "rev-parse", "HEAD"], capture_output=True, check=False
        )
    except OSError as exc:
        return f"no git: {exc}"
    return (done.stdout or done.stderr).decode("utf-8", "replace").strip()
