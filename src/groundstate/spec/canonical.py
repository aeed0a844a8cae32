"""Canonical JSON and hashing: the same content always gives the same hash."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


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
