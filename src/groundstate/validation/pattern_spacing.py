"""Spacing a ``matches`` or ``asks`` pattern asks for that normalised text never has.

Normalised text has no whitespace but single spaces, none at its start or end: a pattern
that needs two whitespace characters in a row (``"refund  issued"``, ``"\\s\\s"``, ``" {2}"``,
``" \\s+"``, ``"(refund )( now)"``, ``"x(?: ){2}y"``), a line break or tab (``"\\n"``,
``"\\t"``, ``"\\x09"``, ``"[\\n\\r]"``), or a space right after ``^`` or before ``$`` is
never found: a ``never`` on it holds on every attempt, an ``at_least`` fails on every one.
Nor is a space, ``-`` or ``/`` between two digits, which normalised text removes
(``"4111 1111"``, ``"\\d{3}-\\d{4}"``: it reads ``41111111``), nor a run of three or more
digit groups joined by one dot or comma (``"4,111,1111"``, ``"\\d{4}\\.\\d{4}\\.\\d{4}"``),
whose separators it removes too (``"35.00"``, ``"1,000.50"`` and ``"4111.1111"`` keep theirs).

The pattern is read as the regular expression engine parses it (groups, alternatives,
quantifiers, a verbose pattern's layout), and each part is summed up by the shapes of the
texts it can match: empty or not, the kinds of their first and last characters and of
their first and last that separate no digits, whether they hold a ``^`` or ``$`` with
nothing before or after it. Joining two shapes fails where two spaces would meet, a space
would follow ``^`` or precede ``$``, text would precede ``^`` or follow ``$``, or separators
would stand between two digits. A pattern is refused only when no shape is left: one
alternative normalised text can hold (``"a  b|c"``) is enough. Lookarounds, word boundaries
and backreferences are read as matching anything, so they never cause a refusal.
"""

from __future__ import annotations

import importlib
import itertools
import operator
import re
from dataclasses import dataclass
from typing import Any

from groundstate.grading.constraints._text import DIGIT_GROUPS, DIGIT_SEPARATORS, normalise

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
    """Why *pattern* asks for spacing normalised text never has, or None.

    Judged on the pattern as the regular expression engine reads it (groups, alternatives,
    quantifiers, a verbose pattern's layout): refused only when no text it matches is
    normalised text. The part named is the first the pattern's text shows, where one does."""
    if _matchable(pattern):
        return _groups_unread(pattern)
    if _matchable(pattern, digits=False):
        return (
            "every match has a space, '-' or '/' between two digits, or digit groups joined "
            "by dots or commas ('4,111,1111'), which normalised text removes ('card 4111 "
            "1111' and 'card 4.111.1111' read 'card 41111111')"
        )
    return _named_part(pattern) or (
        "every match needs spacing it never has across the pattern's groups (two spaces in "
        "a row, a space at the start or end, a line break or tab)"
    )


def _groups_unread(pattern: str) -> str | None:
    """Why *pattern* cannot be judged on some of its matches of three or more digit groups
    joined by dots or commas, or None: one that matches such a text (``1,111,111`` for
    ``\\d{1,4}(,\\d{3})+``) but not its normalised text (``1111111``) lets a ``never`` on
    it hold whatever the agent writes so, however many groups the pattern allows. Judged on
    the texts the pattern spells (each part its first few ways, a digit as ``1``)."""
    try:
        found = re.compile(pattern, re.IGNORECASE)
        texts = _spelt(list(_sre.parse(pattern, re.IGNORECASE)))
    except (re.error, OverflowError, RecursionError):
        return None  # refused as it is, elsewhere
    for text in texts:
        if DIGIT_GROUPS.search(text) and found.search(text) and not found.search(normalise(text)):
            shown, read = (t if len(t) <= 40 else t[:40] + "..." for t in (text, normalise(text)))
            return (
                f"a match such as {shown!r} holds three or more digit groups joined by dots or "
                f"commas, which normalised text writes without them ({read!r}) and the "
                "pattern does not match so: write such numbers' digits without separators"
            )
    return None


_SPELT = 256
"""The most texts :func:`_spelt` spells for one part of a pattern."""


def _spelt(items: list[tuple[Any, Any]]) -> list[str]:
    """A few texts the parts *items* match in a row (at most :data:`_SPELT`)."""
    texts = [""]
    for op, av in items:
        after = _spellings(op, av)
        texts = list(itertools.islice((a + b for a in texts for b in after), _SPELT))
    return texts


def _spellings(op: Any, av: Any) -> list[str]:
    """A few texts one part matches: a class as a digit, a dot or a comma it holds (else
    one character it holds), a repeat 0 to 4 times past its least."""
    if op is _sre.LITERAL:
        return [chr(av)]
    if op is _sre.IN:
        held = [c for c in "1.,a" if _holds(av, c)]
        return held[:1] if held[:1] == ["a"] else [c for c in held if c != "a"] or [""]
    if op is _sre.BRANCH:
        spelt = (t for branch in av[1] for t in _spelt(list(branch)))
        return list(itertools.islice(spelt, _SPELT))
    if op is _sre.SUBPATTERN:
        return _spelt(list(av[-1]))
    if op is _sre.ATOMIC_GROUP:
        return _spelt(list(av))
    if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT):
        once = _spelt(list(av[2]))
        least, most = min(av[0], _LOOPS), min(av[1], av[0] + 4, _LOOPS)
        return list(itertools.islice((t * n for n in range(least, most + 1) for t in once), _SPELT))
    if op is _sre.ANY:
        return ["a"]
    return [""]  # an anchor, a lookaround, a backreference: no characters spelt


def _holds(items: list[tuple[Any, Any]], char: str) -> bool:
    """Whether the class *items* (``[...]``, ``\\d``) matches *char* (one of ``1.,a``)."""
    categories = {
        _sre.CATEGORY_DIGIT: char.isdigit(),
        _sre.CATEGORY_NOT_DIGIT: not char.isdigit(),
        _sre.CATEGORY_WORD: char.isalnum(),
        _sre.CATEGORY_NOT_WORD: not char.isalnum(),
        _sre.CATEGORY_NOT_SPACE: True,
    }
    negated = any(op is _sre.NEGATE for op, _ in items)
    held = any(
        (op is _sre.LITERAL and chr(av) == char)
        or (op is _sre.RANGE and av[0] <= ord(char) <= av[1])
        or (op is _sre.CATEGORY and categories.get(av, False))
        for op, av in items
    )
    return held != negated


def _named_part(pattern: str) -> str | None:
    """The part of *pattern*'s text that asks for spacing normalised text never has, read
    part by part (a part inside a group within the group), or None."""
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


# --- the pattern as the engine parses it -------------------------------------------------------

_sre: Any = importlib.import_module("re._parser")
"""The standard library's regular expression parser (``sre_parse``, which warns on import)."""

_SEPARATORS = frozenset(DIGIT_SEPARATORS)
"""What normalised text removes between two digits."""
_KINDS = frozenset("spdo")
"""Kinds of character: ``s`` a space, ``p`` another separator of digits (``-``, ``/``),
``d`` a digit, ``o`` any other (whitespace but a space is no kind: never held)."""

_Shape = tuple[str, str, str, str, bool, bool]
"""What a text a part matches looks like: the kinds of its first and last character (``""``:
the text is empty), of its first and last character that is no separator (``""``: none is),
and whether it holds a ``^`` with nothing before it, or a ``$`` with nothing after it. Its
inside is normalised text's (a shape that would not be is dropped)."""
_EMPTY: _Shape = ("", "", "", "", False, False)
_RANGE_READ = 2048
"""Characters of a class's range read for their kinds; a longer range is taken to hold
every kind."""
_LOOPS = 64
"""Repetitions worked out before a quantified part is read as matching anything (its shapes
repeat well before)."""


def _matchable(pattern: str, *, digits: bool = True) -> bool:
    """Whether some normalised text holds a match of *pattern* (searched ignoring case);
    not *digits*: were separators between digits kept."""
    try:
        parsed = _sre.parse(pattern, re.IGNORECASE)
    except (re.error, OverflowError, RecursionError):
        return True  # refused as it is, elsewhere
    try:
        return bool(_sequence(list(parsed), digits))
    except RecursionError:
        return True


def _join(a: _Shape, b: _Shape) -> _Shape | None:
    """The shape of a text of shape *a* followed by one of shape *b*, or None if none is
    normalised text's."""
    a_first, a_last, a_lead, a_trail, a_start, a_end = a
    b_first, b_last, b_lead, b_trail, b_start, b_end = b
    if (
        (a_first and b_start)  # text before ^
        or (a_end and b_first)  # text after $
        or (a_last == "s" and b_first == "s")  # two spaces
        or (a_start and not a_first and b_first == "s")  # ^ then a space
        or (b_end and not b_first and a_last == "s")  # a space then $
        # a digit, separators, a digit: normalised text joins the digits
        or (a_trail == b_lead == "d" and (a_last in ("s", "p") or b_first in ("s", "p")))
    ):
        return None
    return (
        a_first or b_first,
        b_last or a_last,
        a_lead or b_lead,
        b_trail or a_trail,
        a_start or b_start,
        a_end or b_end,
    )


def _joined(a: frozenset[_Shape], b: frozenset[_Shape]) -> frozenset[_Shape]:
    return frozenset(j for x in a for y in b if (j := _join(x, y)) is not None)


def _sequence(items: list[tuple[Any, Any]], digits: bool) -> frozenset[_Shape]:
    if digits and _grouped(items):
        return frozenset()
    shapes = frozenset({_EMPTY})
    for op, av in items:
        shapes = _joined(shapes, _item(op, av, digits))
        if not shapes:
            break
    return shapes


def _grouped(items: list[tuple[Any, Any]]) -> bool:
    """Whether *items* spell, in a row, digit groups joined by dots or commas that normalised
    text writes without them (``4,111,1111``, ``\\d{4}\\.\\d{4}\\.\\d{4}``: it reads
    ``41111111``). Only parts of one text each are read (a digit class as ``0``)."""
    run = ""
    for op, av in [*items, (None, None)]:
        text = _fixed(op, av)
        if text is None:
            if DIGIT_GROUPS.search(run):
                return True
            run = ""
        else:
            run += text
    return False


def _fixed(op: Any, av: Any) -> str | None:
    """The one text a part matches, a digit as ``0``, or None if it matches several (or is
    too long to spell: a repeat of more than :data:`_LOOPS`)."""
    if op is _sre.LITERAL:
        return chr(av)
    if op is _sre.IN and av and all(_digit_member(o, a) for o, a in av):
        return "0"
    if op is _sre.SUBPATTERN:
        parts = [_fixed(o, a) for o, a in av[-1]]
        return None if None in parts else "".join(p or "" for p in parts)
    if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT) and av[0] == av[1]:
        parts = [_fixed(o, a) for o, a in av[2]]
        if None in parts or av[0] > _LOOPS:
            return None
        return "".join(p or "" for p in parts) * int(av[0])
    return None


def _digit_member(op: Any, av: Any) -> bool:
    """Whether a class member (``\\d``, ``0-9``, ``7``) matches only digits."""
    if op is _sre.CATEGORY:
        return bool(av is _sre.CATEGORY_DIGIT)
    if op is _sre.RANGE:
        return chr(av[0]) >= "0" and chr(av[1]) <= "9"
    return op is _sre.LITERAL and "0" <= chr(av) <= "9"


def _item(op: Any, av: Any, digits: bool) -> frozenset[_Shape]:
    if op is _sre.LITERAL:
        return _chars({_kind(chr(av))}, digits)
    if op is _sre.NOT_LITERAL:
        return _chars(_KINDS - ({"s"} if chr(av) == " " else set()), digits)
    if op is _sre.ANY:
        return _chars(set(_KINDS), digits)
    if op is _sre.IN:
        return _chars(_members(av), digits)
    if op is _sre.BRANCH:
        return frozenset().union(*(_sequence(list(branch), digits) for branch in av[1]))
    if op is _sre.SUBPATTERN:
        return _sequence(list(av[-1]), digits)
    if op is _sre.ATOMIC_GROUP:
        return _sequence(list(av), digits)
    if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT):
        return _repeat(_sequence(list(av[2]), digits), av[0], av[1])
    if op is _sre.AT and av in (_sre.AT_BEGINNING, _sre.AT_BEGINNING_STRING):
        return frozenset({("", "", "", "", True, False)})
    if op is _sre.AT and av in (_sre.AT_END, _sre.AT_END_STRING):
        return frozenset({("", "", "", "", False, True)})
    if op is _sre.GROUPREF_EXISTS:
        _, yes, no = av
        return _sequence(list(yes), digits) | (
            _sequence(list(no), digits) if no is not None else {_EMPTY}
        )
    if op in (_sre.GROUPREF, _sre.GROUPREF_IGNORE):
        return _ANY
    return frozenset({_EMPTY})  # a lookaround or word boundary: no characters


def _chars(kinds: set[str] | frozenset[str], digits: bool = True) -> frozenset[_Shape]:
    """The shapes of one character of one of *kinds* (not *digits*: a digit read as any
    other character)."""
    if not digits and "d" in kinds:
        kinds = (kinds - {"d"}) | {"o"}
    return frozenset(
        (k, k, "" if k in "sp" else k, "" if k in "sp" else k, False, False) for k in kinds if k
    )


def _kind(char: str) -> str:
    """The kind of *char* (see :data:`_KINDS`), ``""`` for whitespace but a space."""
    if char in _SEPARATORS:
        return "s" if char == " " else "p"
    return "" if char.isspace() else "d" if "0" <= char <= "9" else "o"


def _members(items: list[tuple[Any, Any]]) -> set[str]:
    """The kinds of character a class (``[...]``, ``\\s``, ``\\d``) matches."""
    kinds: set[str] = set()
    negated = False
    for op, av in items:
        if op is _sre.NEGATE:
            negated = True
        elif op is _sre.LITERAL:
            kinds.add(_kind(chr(av)))
        elif op is _sre.RANGE and av[1] - av[0] < _RANGE_READ:
            kinds |= {_kind(chr(c)) for c in range(av[0], av[1] + 1)}
        elif op is _sre.CATEGORY and av is _sre.CATEGORY_SPACE:
            kinds.add("s")
        elif op is _sre.CATEGORY and av is _sre.CATEGORY_DIGIT:
            kinds.add("d")
        elif op is _sre.CATEGORY and av is _sre.CATEGORY_NOT_SPACE:
            kinds |= {"p", "d", "o"}
        else:  # a word character, not a digit, a long range: take every kind
            kinds |= _KINDS
    kinds.discard("")
    if negated:  # all but a space, if the class holds one; all but the rest, if \\S
        covered = any(op is _sre.CATEGORY and av is _sre.CATEGORY_NOT_SPACE for op, av in items)
        return (set() if "s" in kinds else {"s"}) | (set() if covered else {"p", "d", "o"})
    return kinds


def _repeat(shapes: frozenset[_Shape], least: int, most: int) -> frozenset[_Shape]:
    """The shapes of *least* to *most* texts of *shapes* in a row."""
    seen = [frozenset({_EMPTY})]
    while len(seen) <= most:
        after = _joined(seen[-1], shapes)
        if after in seen:  # from here on the shapes repeat with a period
            start = seen.index(after)
            period = len(seen) - start
            break
        if len(seen) > _LOOPS:
            return _ANY
        seen.append(after)
    else:
        return frozenset().union(*seen[least : most + 1])

    def nth(n: int) -> frozenset[_Shape]:
        return seen[n] if n < len(seen) else seen[start + (n - start) % period]

    return frozenset().union(*(nth(n) for n in range(least, min(most, least + len(seen)) + 1)))


_ANY = _repeat(_chars(set(_KINDS)), 0, _sre.MAXREPEAT)
"""Every shape without an anchor: what a part read as matching anything matches."""
