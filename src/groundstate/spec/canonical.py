"""Canonical JSON and hashing: the same content always gives the same hash."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def canonical_json(value: Any) -> str:
    """Serialise *value* with sorted keys and no insignificant whitespace."""
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
    """A fixture's hash: a file's content, or a folder's files (relative path -> content
    hash, ``.git`` and caches left out)."""
    if not path.is_dir():
        return hash_file(path)
    files = {
        str(file.relative_to(path)): hash_file(file)
        for file in sorted(path.rglob("*"))
        if file.is_file()
        and not _NOT_CONTENT & set(file.relative_to(path).parts)
        and file.suffix != ".pyc"
    }
    return hash_value(files)
