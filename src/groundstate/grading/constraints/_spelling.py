"""When an argument the agent spelt names the value a condition expects, as the tool took it.

``args`` are the agent's words: a tool that strips spaces, folds case or parses a number
(``lower(email) = lower(?)``, ``int(qty)``) serves ``" o-1020"`` as ``O-1020`` and ``"2"`` as
``2``, and a condition comparing the spelling would let a ``never`` be dodged by respelling
the argument. The trace does not say how a tool reads its arguments, but it says what the
tool did: an argument differing from the expected value only in spelling (case, surrounding
or repeated whitespace, Unicode forms, a leading ``#``, an id's label: ``ORD-W1`` or
``order w1`` for ``#W1``, a number written as text, its digits
grouped or not) names it when the call's
output or writes show the expected value itself, so the tool served that record. Where they
show another spelling only (a tool that tells ``a1`` from ``A1`` served record ``a1``), or
nothing, the values stay apart: honest distinct values never collide. What the call echoes
is not shown so (a value of its arguments repeated under their names, at any depth, as
written or tidied: trimmed, re-cased; a changed column's old value), judged so that an
argument an agent adds beside the one judged cannot make the tool's record an echo (see
:func:`shown`). Rows of one table the call wrote keyed by both spellings show the
environment tells them apart, whatever the output. A tool
repeating some arguments but not the one judged is read as echoing none: one call cannot
tell it from a record served under an argument's name, and so an added argument flips
nothing.
A path spelt another way (``./tests/hidden/x``, ``tests//hidden/x/``, ``tests/a/../hidden/x``)
names the same file for every tool that takes one, whatever the call shows (a tool echoing
the path it was given shows nothing else).
"""

from __future__ import annotations

import math
import posixpath
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from groundstate.environments.base import Row, RowWrite
from groundstate.grading.constraints._embedded import TooLarge, UnreadableArgument, embedded
from groundstate.grading.constraints._text import PREFIXED_ID, fold
from groundstate.spec.strict import is_number_value, read_number
from groundstate.trace import AgentEvent

LONGEST = 4096
"""The longest value, its whitespace runs made one space, read for another spelling: a longer
one is compared as written. Folding an argument of a million characters against every
condition would cost grading time of the agent's choosing; a value this long spelt otherwise
is no id, email or path a tool looks up."""


def respelt(value: Any, expected: Any) -> bool:
    """Whether *value* differs from *expected* (not equal to it) only in spelling: strings
    equal once folded, their whitespace runs made one space and stripped, and a leading
    ``#`` dropped (``W1`` for ``#W1``), or a number and a string that reads as the same
    number."""
    if type(value) is str and type(expected) is str:
        value, expected = " ".join(value.split()), " ".join(expected.split())
        if max(len(value), len(expected)) > LONGEST:
            return False
        return _spelling(value) == _spelling(expected)
    if isinstance(value, str) and is_number_value(expected):
        return expected in _numbers(value)
    if isinstance(expected, str) and is_number_value(value):
        return value in _numbers(expected)
    return False


def same_path(value: Any, expected: Any) -> bool:
    """Whether *value* and *expected* are one path written two ways (``./a//b/``,
    ``a/c/../b`` and ``a/b``): *expected* names a path (holds a ``/``), both are relative or
    both absolute."""
    if type(value) is not str or type(expected) is not str or "/" not in expected:
        return False
    if not value or max(len(value), len(expected)) > LONGEST or "\0" in value + expected:
        return False
    return PurePosixPath(posixpath.normpath(value)) == PurePosixPath(posixpath.normpath(expected))


def shown(event: AgentEvent, expected: Any, value: Any) -> bool:
    """Whether the call's output or writes hold *expected* itself as one of their values
    (a whole value: ``O-1020``, not a text mentioning it) as the tool's reading of an
    argument the agent spelt *value*, not an echo of the agent's own words.

    The key of a row the call wrote and the columns a changed or deleted row kept are the
    environment's, always shown so (not a changed column's old value: what the row held, not
    what the tool took); where the call wrote rows of one table keyed *expected* and *value*,
    the environment tells the two spellings apart (``transfer(from: ACC-1, to: acc-1)``
    writing rows ``ACC-1`` and ``acc-1``) and *value* names no *expected*. An output value,
    or a column the call wrote, may be an echo: where the call repeats the agent's spelling
    *value* somewhere (the tool echoes what it is given), one at a path whose end is the end
    of a path in the arguments holding *expected* (``from`` of ``{from: ACC-1}``,
    ``request.from``, an element of a list echoed) is that argument's echo, as many times as
    the echoes go (as often as the call repeats *value* for each time the arguments hold
    it): a value more is the tool's own (the record served beside ``{request: ...}``).
    Where the call shows *value* nowhere, the tool echoes none of it and every value is its
    own: an argument holding *expected* that the tool ignored (``get_account(id: acc-1,
    account_id: ACC-1)`` answering ``{account_id: ACC-1}``) cannot make the record an echo.
    Paths are numbered as they are read (:class:`_Paths`), so the check costs time linear in
    what the call holds, at any depth."""
    if not isinstance(args := getattr(event, "args", None), dict):
        args = {}
    paths = _Paths()
    own: list[Any] = []  # the environment's: never an echo
    echoable: list[tuple[Any, str]] = [(getattr(event, "output", None), "output")]
    for w in getattr(event, "writes", None) or []:
        own += [w.key, _kept(w)]
        echoable.append((w.after, "writes"))
    if _apart(getattr(event, "writes", None) or [], expected, value):
        return False
    # A column holding JSON text shows the values it encodes (a row's ``payload`` column).
    if any(_is(leaf, expected) for root in own for _, leaf in paths.read(event, root, "writes")):
        return True
    shown_here = [found for root, field in echoable for found in paths.read(event, root, field)]
    found = Counter(path for path, leaf in shown_here if _is(leaf, expected))
    if not found:
        return False
    given = list(paths.read(event, args, "args"))
    held = Counter(path for path, leaf in given if _is(leaf, expected))
    repeated = sum(_echoes(leaf, value, expected) for _, leaf in shown_here)
    if not held or not repeated:
        return True
    alike = sum(found[path] for path in paths.ending_alike(set(found), set(held)))
    # Each echo of the arguments repeats *value* as often as they hold it: more values
    # alike than the echoes hold are the tool's own.
    copies = -(-repeated // max(1, sum(_is(leaf, value) for _, leaf in given)))
    return found.total() > alike or alike > held.total() * copies


class _Paths:
    """Paths into the call's values, each numbered once by its parent's number and its last
    step (a key; a list index as None: an echoed list may be reordered), so that a path is
    read in constant time at any depth: a value of 20,000 leaves nested 300 deep costs what
    it holds, not what it holds times its depth."""

    def __init__(self) -> None:
        self.numbers: dict[tuple[int, Any], int] = {}
        self.parent: list[int] = [-1]  # the empty path is 0
        self.step: list[Any] = [None]

    def child(self, path: int, step: Any) -> int:
        number = self.numbers.setdefault((path, step), len(self.parent))
        if number == len(self.parent):
            self.parent.append(path)
            self.step.append(step)
        return number

    def read(self, event: AgentEvent, root: Any, field: str) -> list[tuple[int, Any]]:
        """:meth:`leaves`, in the arguments, output or writes (*field*) reading the JSON
        text a string holds as what it holds (see ``_embedded``): a tool echoing a
        ``payload`` sent as JSON text may echo the object. Raises
        :class:`UnreadableArgument`."""
        try:
            return list(self.leaves(root, texts=bool(field), anew=field == "args"))
        except TooLarge as exc:
            raise UnreadableArgument(event, str(exc), field) from None

    def leaves(
        self, root: Any, texts: bool = False, anew: bool = False
    ) -> Iterator[tuple[int, Any]]:
        """Every value below *root* that is no object or list, with its path's number;
        *texts*: below a string holding JSON text, its paths starting *anew* from what the
        text holds (an argument ``payload`` sent as text is echoed as the object it holds,
        not under ``payload``). Raises ``TooLarge``."""
        stack = [(0, root)]
        while stack:
            path, value = stack.pop()
            if texts and type(value) is str and (read := embedded(value)) is not value:
                path, value = (0 if anew else path), read
            if isinstance(value, dict):
                stack.extend((self.child(path, k), v) for k, v in value.items())
            elif isinstance(value, list):
                below = self.child(path, None)
                stack.extend((below, v) for v in value)
            else:
                yield path, value

    def ending_alike(self, paths: set[int], others: set[int]) -> set[int]:
        """Those of *paths* (none empty) that end with one of *others*, or that one of
        *others* ends with."""
        ends = _Ends(self, others)
        alike = {path for path in paths if ends.ends(path)}
        return alike | _Ends(self, paths).ending(others)


class _Ends:
    """Which paths end with one of *patterns* (none empty): the Aho-Corasick automaton of
    their steps, run down the numbered paths, each state and step worked out once."""

    def __init__(self, paths: _Paths, patterns: set[int]) -> None:
        self.paths, self.patterns = paths, patterns
        prefixes: dict[int, list[int]] = {0: []}  # each prefix of a pattern -> its children
        for path in patterns:
            while path not in prefixes:
                prefixes[path] = []
                path = paths.parent[path]
        for path in prefixes:
            if path:
                prefixes[paths.parent[path]].append(path)
        self.prefixes = prefixes
        self.fail: dict[int, int] = {0: 0}
        self.accepts: dict[int, bool] = {0: False}
        self.moves: dict[tuple[int, Any], int] = {}
        self.states: dict[int, int] = {0: 0}
        level = list(prefixes[0])
        while level:  # breadth first: a state's failure is shallower than it
            for state in level:
                parent = paths.parent[state]
                fail = 0 if parent == 0 else self._move(self.fail[parent], paths.step[state])
                self.fail[state] = fail
                self.accepts[state] = state in patterns or self.accepts[fail]
            level = [child for state in level for child in prefixes[state]]

    def _move(self, state: int, step: Any) -> int:
        tried = []
        while True:
            known = self.moves.get((state, step))
            if known is not None:
                break
            tried.append((state, step))
            child = self.paths.numbers.get((state, step))
            if child is not None and child in self.prefixes:
                known = child
                break
            if state == 0:
                known = 0
                break
            state = self.fail[state]
        for key in tried:
            self.moves[key] = known
        return known

    def _state(self, path: int) -> int:
        """The state after reading *path*: its longest end that begins a pattern."""
        unread = []
        while path not in self.states:
            unread.append(path)
            path = self.paths.parent[path]
        state = self.states[path]
        for path in reversed(unread):
            state = self.states[path] = self._move(state, self.paths.step[path])
        return state

    def ends(self, path: int) -> bool:
        """Whether *path* ends with one of the patterns."""
        return self.accepts[self._state(path)]

    def ending(self, paths: set[int]) -> set[int]:
        """The patterns one of *paths* ends with."""
        found: set[int] = set()
        seen: set[int] = set()
        for path in paths:
            state = self._state(path)
            while state and state not in seen:
                seen.add(state)
                if state in self.patterns:
                    found.add(state)
                state = self.fail[state]
        return found


def _echoes(leaf: Any, value: Any, expected: Any) -> bool:
    """Whether *leaf*, shown by the call, repeats the agent's *value* (not *expected*): as
    written, or trimmed, re-cased or otherwise respelt by a tool tidying what it echoes."""
    return _is(leaf, value) or (not _is(leaf, expected) and respelt(leaf, value))


def _is(value: Any, expected: Any) -> bool:
    return value == expected and (
        type(value) is type(expected) or (is_number_value(value) and is_number_value(expected))
    )


def _apart(writes: list[RowWrite], expected: Any, value: Any) -> bool:
    """Whether the call wrote rows of one table keyed *expected* and *value*: the environment
    holds them as two records (a row keyed *value* beside one keyed *expected* in another
    table may be an audit of the agent's words)."""
    keyed: dict[str, set[int]] = {}
    for w in writes:
        for leaf in w.key if isinstance(w.key, list) else [w.key]:
            keyed.setdefault(w.table, set()).update(
                i for i, v in enumerate((expected, value)) if _is(leaf, v)
            )
    return any(len(found) == 2 for found in keyed.values())


def _kept(write: RowWrite) -> Row | None:
    """The columns of the row before *write* that it kept (all of a deleted row)."""
    before, after = write.before, write.after
    if before is None or after is None:
        return before
    return {c: v for c, v in before.items() if c not in after or _is(after[c], v)}


def _spelling(text: str) -> str:
    """*text* folded, its whitespace runs one space, stripped, and without a leading ``#``:
    a tool taking order ``W1`` for ``#W1`` (adding the sign its ids are written with); an id
    of a short prefix and a number without a label of its own (``ORD-W1``, ``order W1`` and
    ``#W1`` are one spelling, a tool may take each for the others; ``W-1`` is another id)."""
    spelt = " ".join(fold(text).split())
    found = PREFIXED_ID.fullmatch(spelt)
    if found is None:
        return spelt.removeprefix("#")
    return "".join(found.group("prefix", "sep", "number"))


def _numbers(text: str) -> set[float]:
    """The finite numbers *text* may be written as, folded (``"\uff12"`` is 2): as ``float``
    reads it (``"1e3"``, ``"1_000"``, ``" 1000.00"``; not ``"0x3e8"``), or with its digits
    grouped by commas, dots, spaces or apostrophes and either a dot or a
    comma before its decimals (``"1,000"`` and ``"1 000"`` are 1000, ``"1.000,50"`` is
    1000.5, ``"1.000"`` 1 or 1000, ``"1,5"`` 1.5). Which one the tool read, its output or
    writes say (:func:`shown`)."""
    written = fold(text).strip()
    if len(written) > 64:  # no number a tool parses
        return set()
    read = {read_number(written)}
    grouped = _GROUPED.fullmatch(written)
    if grouped is not None and grouped["point"] != grouped["by"]:
        sign, digits = grouped["sign"], re.sub(r"\D", "", grouped["whole"])
        read.add(read_number(f"{sign}{digits}.{grouped['part'] or 0}"))
    elif (comma := _DECIMAL_COMMA.fullmatch(written)) is not None:  # "1,5"
        read.add(read_number(comma[0].replace(",", ".")))
    return {n for n in read if n is not None and math.isfinite(n)}


_GROUPED = re.compile(
    r"(?P<sign>[+-]?)(?P<whole>\d{1,3}(?P<by>[,.' ])\d{3}(?:(?P=by)\d{3})*)"
    r"(?:(?P<point>[.,])(?P<part>\d+))?"
)
"""A number with its digits grouped (``1,000``, ``1.000,50``, ``1 000``, ``1'000``)."""
_DECIMAL_COMMA = re.compile(r"[+-]?\d+,\d+")
