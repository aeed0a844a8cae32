"""When an argument the agent spelt names the value a condition expects, as the tool took it.

``args`` are the agent's words: a tool that strips spaces, folds case or parses a number
(``lower(email) = lower(?)``, ``int(qty)``) serves ``" o-1020"`` as ``O-1020`` and ``"2"`` as
``2``, and a condition comparing the spelling would let a ``never`` be dodged by respelling
the argument. The trace does not say how a tool reads its arguments, but it says what the
tool did: an argument differing from the expected value only in spelling (case, surrounding
or repeated whitespace, Unicode forms, a number written as text) names it when the call's
output or writes show the expected value itself, so the tool served that record. Where they
show another spelling only (a tool that tells ``a1`` from ``A1`` served record ``a1``), or
nothing, the values stay apart: honest distinct values never collide. A path spelt another
way (``./tests/hidden/x``, ``tests//hidden/x/``) names the same file for every tool that takes
one, whatever the call shows.
"""

from __future__ import annotations

import math
import re
from pathlib import PurePosixPath
from typing import Any

from groundstate.grading.constraints._text import fold
from groundstate.trace import AgentEvent

LONGEST = 4096
"""The longest value, its whitespace runs made one space, read for another spelling: a longer
one is compared as written. Folding an argument of a million characters against every
condition would cost grading time of the agent's choosing; a value this long spelt otherwise
is no id, email or path a tool looks up."""
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?")
"""A number written as text (after :func:`fold`: ASCII digits, lower case)."""


def respelt(value: Any, expected: Any) -> bool:
    """Whether *value* differs from *expected* (not equal to it) only in spelling: strings
    equal once folded and their whitespace runs made one space and stripped, or a number
    and a string that reads as the same number."""
    if type(value) is str and type(expected) is str:
        value, expected = " ".join(value.split()), " ".join(expected.split())
        if max(len(value), len(expected)) > LONGEST:
            return False
        return _spelling(value) == _spelling(expected)
    if isinstance(value, str) and _is_number(expected):
        return bool(_as_number(value) == expected)
    if isinstance(expected, str) and _is_number(value):
        return bool(_as_number(expected) == value)
    return False


def same_path(value: Any, expected: Any) -> bool:
    """Whether *value* and *expected* are one path written two ways (``./a//b/`` and
    ``a/b``): *expected* names a path (holds a ``/``), both are relative or both absolute."""
    if type(value) is not str or type(expected) is not str or "/" not in expected:
        return False
    if not value or max(len(value), len(expected)) > LONGEST or "\0" in value + expected:
        return False
    return PurePosixPath(value) == PurePosixPath(expected)


def shown(event: AgentEvent, expected: Any) -> bool:
    """Whether the call's output or writes hold *expected* itself as one of their values
    (a whole value: ``O-1020``, not a text mentioning it)."""
    writes = getattr(event, "writes", None) or []
    found: list[Any] = [getattr(event, "output", None)]
    found += [part for w in writes for part in (w.key, w.before, w.after)]
    while found:
        value = found.pop()
        if isinstance(value, dict):
            found.extend(value.values())
        elif isinstance(value, list):
            found.extend(value)
        elif value == expected and (
            type(value) is type(expected) or (_is_number(value) and _is_number(expected))
        ):
            return True
    return False


def _spelling(text: str) -> str:
    return " ".join(fold(text).split())


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _as_number(text: str) -> float | None:
    written = text.strip()
    if len(written) > 64:  # no number a tool parses
        return None
    written = fold(written)
    if not _NUMBER.fullmatch(written):
        return None
    number = float(written)
    return number if math.isfinite(number) else None
