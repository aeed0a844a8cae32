"""Spacing a ``matches`` or ``asks`` pattern asks for that normalised text never has.

Normalised text has no whitespace but single spaces, none at its start or end: a pattern
that needs two whitespace characters in a row (``"refund  issued"``, ``"\\s\\s"``, ``" {2}"``,
``" \\s+"``), a line break or tab written as an escape (``"\\n"``, ``"\\t"``, ``"\\x09"``), or
a space right after ``^`` or before ``$`` is never found: a ``never`` on it holds on every
attempt, an ``at_least`` fails on every one. The reading is of the pattern's text, part by
part: a part inside a group is judged within the group, and a verbose pattern (``(?x)``,
where spaces are not literal) is not judged.
"""

from __future__ import annotations

import itertools
import operator
import re
from dataclasses import dataclass

_SPACE, _DEAD, _OTHER, _START, _END, _BREAK = "space", "dead", "other", "start", "end", "break"
_DEAD_ESCAPES = {"n": "\\n", "t": "\\t", "r": "\\r", "f": "\\f", "v": "\\v"}
"""Escapes of whitespace other than a space, which normalised text never holds."""
_QUANTIFIER = re.compile(r"[?*+]|\{(\d*)(,\d*)?\}")
_CODE = re.compile(r"x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})")


@dataclass
class _Atom:
    kind: str
    shown: str
    least: int = 1
    """How many times the atom must match at least (its quantifier's minimum)."""


def verbose(pattern: str) -> bool:
    """Whether *pattern* is verbose (``(?x)``): its whitespace is layout, not text."""
    try:
        return bool(re.compile(pattern, re.IGNORECASE).flags & re.VERBOSE)
    except (re.error, OverflowError, RecursionError):
        return False  # refused as it is, elsewhere


def spacing_problem(pattern: str) -> str | None:
    """Why *pattern* asks for spacing normalised text never has, or None."""
    if verbose(pattern):
        return None
    atoms = _atoms(pattern)
    dead = next((a for a in atoms if a.kind == _DEAD and a.least), None)
    if dead is not None:
        return f"{dead.shown!r} (normalised text has no line break, tab or such: only spaces)"
    for before, after in itertools.pairwise(atoms):
        if before.kind == _START and after.kind == _SPACE and after.least:
            shown = before.shown + after.shown
            return f"{shown!r} needs a space at the start: normalised text has none"
        if before.kind == _SPACE and before.least and after.kind == _END:
            shown = before.shown + after.shown
            return f"{shown!r} needs a space at the end: normalised text has none"
    run: list[_Atom] = []
    for atom in [*atoms, _Atom(_BREAK, "")]:
        if atom.kind == _SPACE:
            run.append(atom)
            continue
        if sum(a.least for a in run) >= 2:
            shown = "".join(a.shown for a in run)
            return f"{shown!r} needs two spaces in a row: normalised text has one at most"
        run = []
    return None


def _atoms(pattern: str) -> list[_Atom]:
    """The pattern's parts in order, each with its quantifier's minimum."""
    atoms: list[_Atom] = []
    at = 0
    while at < len(pattern):
        atom, at = _atom(pattern, at)
        quantifier = _QUANTIFIER.match(pattern, at)
        if quantifier is not None and quantifier.group(0) != "{}" and atom.kind != _BREAK:
            least, most = quantifier.group(1), quantifier.group(2)
            atom.least = 0 if quantifier.group(0) in "?*" else int(least or (0 if most else 1))
            atom.shown += quantifier.group(0)
            at = quantifier.end()
            while at < len(pattern) and pattern[at] in "?+":  # lazy or possessive
                at += 1
        atoms.append(atom)
    return atoms


def _atom(pattern: str, at: int) -> tuple[_Atom, int]:
    char = pattern[at]
    if char == "\\":
        return _escape(pattern, at)
    if char == "[":
        return _class(pattern, at)
    if char in "()|":
        return _Atom(_BREAK, char), at + 1
    if char in "^$":
        return _Atom(_START if char == "^" else _END, char), at + 1
    if char == " ":
        return _Atom(_SPACE, " "), at + 1
    if char.isspace():
        return _Atom(_DEAD, char), at + 1
    return _Atom(_OTHER, char), at + 1


def _escape(pattern: str, at: int) -> tuple[_Atom, int]:
    code = _CODE.match(pattern, at + 1)
    if code is not None:
        char = chr(int(next(g for g in code.groups() if g), 16))
        kind = _SPACE if char == " " else _DEAD if char.isspace() else _OTHER
        return _Atom(kind, pattern[at : code.end()]), code.end()
    escaped = pattern[at + 1 : at + 2]
    shown = pattern[at : at + 2]
    if escaped in ("s", " "):
        return _Atom(_SPACE, shown), at + 2
    if escaped in _DEAD_ESCAPES:
        return _Atom(_DEAD, shown), at + 2
    if escaped in ("A", "Z"):
        return _Atom(_START if escaped == "A" else _END, shown), at + 2
    return _Atom(_OTHER, shown), at + 2


def _class(pattern: str, at: int) -> tuple[_Atom, int]:
    """A character class: a space if it holds only spaces (``[ ]``, ``[\\s ]``), dead if
    only whitespace normalised text never has, else any other part."""
    end = at + 1
    if pattern[end : end + 1] == "^":
        end += 1
    if pattern[end : end + 1] == "]":
        end += 1
    members: list[str] = []
    while end < len(pattern) and pattern[end] != "]":
        if pattern[end] == "\\":
            members.append(pattern[end : end + 2])
            end += 2
        else:
            members.append(pattern[end])
            end += 1
    shown = pattern[at : end + 1]
    if pattern[at + 1 : at + 2] == "^" or not members or "-" in members:
        return _Atom(_OTHER, shown), end + 1
    spaces = [m in (" ", "\\s", "\\ ") for m in members]
    blank = [m.isspace() or m[1:] in _DEAD_ESCAPES for m in members]
    if not all(map(operator.or_, spaces, blank)):
        return _Atom(_OTHER, shown), end + 1
    return _Atom(_SPACE if any(spaces) else _DEAD, shown), end + 1
