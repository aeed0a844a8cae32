"""Results files kept compressed (``results.json.gz``, ``rows.jsonl.xz``): read as the file
they hold, whatever the reader.

A run's results are often kept so (a τ²-bench file with its messages shrinks tenfold); they
were "cannot tell its format", and under ``--format`` "not UTF-8 text". The compression is
told from the first bytes, not the name.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from groundstate.paths import os_reason

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

Opener = Callable[[Path], io.BufferedIOBase]


def _gzip(path: Path) -> io.BufferedIOBase:
    return gzip.open(path, "rb")


def _bzip2(path: Path) -> io.BufferedIOBase:
    return bz2.open(path, "rb")


def _xz(path: Path) -> io.BufferedIOBase:
    return lzma.open(path, "rb")


def _zstd(path: Path) -> io.BufferedIOBase:
    return zstd.open(path, "rb")


COMPRESSIONS: dict[bytes, tuple[str, Opener]] = {
    b"\x1f\x8b": ("gzip", _gzip),
    b"BZh": ("bzip2", _bzip2),
    b"\xfd7zXZ\x00": ("xz", _xz),
    b"\x28\xb5\x2f\xfd": ("zstd", _zstd),
}
"""Each compression's first bytes, its name, and how to read through it."""
SUFFIXES = frozenset({".gz", ".bz2", ".xz", ".zst"})
"""The suffixes those files are named with: the format is named by the suffix before."""
INFLATED_LIMIT = 1 << 30
"""The most a file read whole (a JSON document) may hold, compressed or not: a few KiB of gzip
can hold many GB (a decompression bomb), and the JSON parsed from 1 GiB takes several GB of
memory (a larger plain file was read whole and ended in a ``MemoryError`` traceback or the
process killed). Rows (CSV, JSON Lines) and ``.eval`` archives are streamed, so no limit
applies to them."""
DAMAGED: tuple[type[BaseException], ...] = (OSError, EOFError, lzma.LZMAError, zstd.ZstdError)
"""What reading a damaged or truncated compressed stream raises."""


def compression(path: Path) -> str | None:
    """The compression *path* is in (``gzip`` ...), or ``None``."""
    with path.open("rb") as handle:
        head = handle.read(6)
    return next((name for magic, (name, _) in COMPRESSIONS.items() if head.startswith(magic)), None)


def open_bytes(path: Path) -> io.BufferedIOBase:
    """*path*'s content, decompressed when it is compressed."""
    with path.open("rb") as handle:
        head = handle.read(6)
    for magic, (_, opener) in COMPRESSIONS.items():
        if head.startswith(magic):
            return opener(path)
    return path.open("rb")


def read_bytes(path: Path) -> bytes:
    """*path*'s whole content, decompressed; ``ValueError`` when it holds more than
    :data:`INFLATED_LIMIT`."""
    if compression(path) is None:
        size = path.stat().st_size
        if size > INFLATED_LIMIT:
            raise ValueError(
                f"{size} bytes, over the {INFLATED_LIMIT >> 20} MiB a JSON document is read "
                "whole in: split it (an Inspect .json log: convert it to .eval, with inspect log "
                "convert --to eval, which is read sample by sample)"
            )
        return path.read_bytes()
    with open_bytes(path) as handle:
        data = handle.read(INFLATED_LIMIT + 1)
    if len(data) > INFLATED_LIMIT:
        raise ValueError(
            f"over {INFLATED_LIMIT >> 20} MiB uncompressed: decompress it and give the file"
        )
    return data


def damaged(path: Path, exc: BaseException) -> str:
    """Why *path* could not be read, for an error raised reading it."""
    try:
        kind = compression(path)
    except OSError:  # unreadable: the error says why
        kind = None
    if kind is None:
        return f"cannot read: {os_reason(path, exc) if isinstance(exc, OSError) else exc}"
    return f"cannot read its {kind} data (damaged or cut short?): {_reason(exc)}"


def _reason(exc: Any) -> str:
    return str(exc) or type(exc).__name__


def name_suffix(path: Path) -> str:
    """The suffix that names *path*'s format: ``.csv`` for ``rows.csv.gz``."""
    suffixes = [s.lower() for s in path.suffixes]
    if len(suffixes) >= 2 and suffixes[-1] in SUFFIXES:
        return suffixes[-2]
    return path.suffix.lower()
