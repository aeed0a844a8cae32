"""Text helpers for file names and fixed-width reports."""

from __future__ import annotations

import re
from collections.abc import Sequence

_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def slugify(text: str, separator: str = "-") -> str:
    """A lower-case file-name-safe form of ``text``: ``"ACME Corp. (EU)"`` is ``"acme-corp-eu"``.

    Runs of anything but letters and digits become one separator; none at either end.
    """
    return _NOT_SLUG.sub(separator, text.lower()).strip(separator)


def truncate(text: str, width: int, ellipsis: str = "…") -> str:
    """Shorten ``text`` to at most ``width`` characters, ending with ``ellipsis`` when cut.

    Text that already fits is returned unchanged.
    """
    if width < 0:
        raise ValueError(f"width must not be negative, got {width}")
    if len(text) <= width:
        return text
    return text[:width] + ellipsis


def format_row(cells: Sequence[str], widths: Sequence[int], gap: str = "  ") -> str:
    """One line of a fixed-width table: each cell truncated and left-aligned to its width."""
    if len(cells) != len(widths):
        raise ValueError(f"{len(cells)} cells but {len(widths)} widths")
    padded = (truncate(cell, width).ljust(width) for cell, width in zip(cells, widths))
    return gap.join(padded).rstrip()


def initials(name: str) -> str:
    """Upper-case initials of a name: ``"ada  lovelace"`` is ``"AL"``."""
    return "".join(word[0] for word in name.split()).upper()
