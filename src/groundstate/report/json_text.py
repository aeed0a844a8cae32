"""The text of ``report --json`` and ``compare --json``: indented where a reader looks, one
line per list item below that.

``json.dumps(data, indent=2)`` runs the pure-Python encoder (the C one does not indent) and
spreads a report of 10,000 tasks over 400,000 lines: about a quarter of a second for a
million attempts. Here dictionaries are indented down to :data:`INDENTED_LEVELS` levels, and
every list item and anything deeper is one line from the C encoder, so the per-task table
reads one task per line. The document is the same JSON: ``json.loads`` gives what it gives
for ``json.dumps(data)`` (tested).
"""

from __future__ import annotations

import json
from typing import Any

INDENTED_LEVELS = 4
"""Levels of nested dictionaries spread one key per line (the report's ``summary``
``views`` ``valid`` ``pass_at_k`` is the fourth); deeper values take one line each."""

_STEP = "  "
_LINE = json.JSONEncoder()
"""Default separators (``", "`` and ``": "``), as ``json.dumps`` with ``indent`` uses."""


def json_text(data: Any) -> str:
    """*data* as indented JSON text (module docstring)."""
    parts: list[str] = []
    _write(data, 0, parts)
    return "".join(parts)


def _write(value: Any, level: int, parts: list[str]) -> None:
    if isinstance(value, dict) and value and level < INDENTED_LEVELS:
        inner = "\n" + _STEP * (level + 1)
        parts.append("{")
        for i, (key, item) in enumerate(value.items()):
            parts.append(("," if i else "") + inner + _LINE.encode(_key(key)) + ": ")
            _write(item, level + 1, parts)
        parts.append("\n" + _STEP * level + "}")
    elif isinstance(value, list | tuple) and value and level < INDENTED_LEVELS:
        inner = "\n" + _STEP * (level + 1)
        parts.append("[" + inner + ("," + inner).join(_LINE.encode(v) for v in value))
        parts.append("\n" + _STEP * level + "]")
    else:
        parts.append(_LINE.encode(value))


def _key(key: Any) -> str:
    """A key as ``json.dumps`` writes it: str as is; int, float, bool and None spelled."""
    if isinstance(key, str):
        return key
    return str(_LINE.encode(key))
