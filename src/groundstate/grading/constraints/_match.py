"""Which trace steps a :class:`~groundstate.spec.task.Match` selects.

A match is compiled once (its text normalised, its pattern compiled, its write names
casefolded) and the compiled form is kept for as long as the match itself: a suite's matches
are compiled on their first attempt, not once per step of every attempt.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from groundstate.environments.base import RowWrite
from groundstate.grading.constraints._embedded import (
    Repeated,
    TooLarge,
    UnreadableArgument,
    embedded,
)
from groundstate.grading.constraints._paths import Conditions, agrees, conditions, same, selects
from groundstate.grading.constraints._text import message_text, normalise
from groundstate.spec.constraints import Match, WriteMatch
from groundstate.trace import AgentEvent, MessageEvent, ToolCallEvent


def matches(match: Match, event: AgentEvent) -> bool:
    """Whether *event* is one of the steps *match* selects (its ``where`` literals included)."""
    return compiled(match).selects(event)


@dataclass(frozen=True)
class CompiledMatch:
    """A match with its text normalised, its pattern compiled and its write names casefolded."""

    match: Match
    key: str
    """What the match selects, as text: equal for equal matches (``capture`` left out, it
    selects nothing), so one attempt works out the steps of equal matches once."""
    contains: str | None
    pattern: re.Pattern[str] | None
    table: str
    """``writes.table``, casefolded (SQL names ignore case)."""
    columns: frozenset[str]
    """``writes.columns``, casefolded."""
    where: Conditions
    """``where`` as a tree of its paths."""

    def selects(self, event: AgentEvent) -> bool:
        match = self.match
        if isinstance(event, MessageEvent):
            selected = match.message == event.role and self._text_matches(event)
        else:
            selected = not match.is_message and self.call_matches(event)
        return selected and (not match.where or selects(event, self.where))

    def _text_matches(self, event: MessageEvent) -> bool:
        match = self.match
        if event.text is None or (match.final is not None and match.final != event.final):
            return False
        text = message_text(event)
        return (self.contains is None or self.contains in text) and (
            self.pattern is None or found_in(self.pattern, text)
        )

    def call_matches(self, event: ToolCallEvent) -> bool:
        match = self.match
        return (
            match.tool in (None, "*", event.tool)
            and (match.ok is None or match.ok == event.ok)
            # A call whose arguments are no object (refused by the gateway) is still a call
            # of the tool: ``never: {tool: lookup_card_on_file}`` sees the attempt.
            and (not match.args or _has_args(event, match.args))
            and (match.writes is None or any(self._wrote(match.writes, w) for w in event.writes))
        )

    def _wrote(self, wanted: WriteMatch, write: RowWrite) -> bool:
        return (
            write.table.casefold() == self.table  # SQL names ignore case
            and (wanted.key is None or same(write.key, wanted.key))
            and (not self.columns or not self.columns.isdisjoint(map(str.casefold, write.columns)))
        )


def found_in(pattern: re.Pattern[str], text: str) -> bool:
    """Whether *pattern* finds a match in *text*: ``pattern.search(text) is not None``,
    remembered for texts up to :data:`SEARCHED_CHARS` long. A search is a function of the
    pattern (its source and flags) and the text alone, and the same messages come back: a
    scripted user's replies in every attempt of a task, the short ones ("yes", "go ahead") in
    every task. The default ``no`` of ``confirmed`` alone is several hundred alternatives with
    no literal prefix, some 0.2 ms per message searched. A longer text is searched for each
    of the pattern's alternatives in turn (see :func:`_alternatives`) that may match in it:
    one whose every match holds a word the text does not hold is passed over unsearched
    (see :func:`_needed`)."""
    if len(text) > SEARCHED_CHARS:
        held = _Held(text, pattern.flags)
        parts = _alternatives_needing(pattern.pattern, pattern.flags)
        return any(held.any_of(needs) and part.search(text) is not None for part, needs in parts)
    return _searched(_Search(pattern, text))


_Alternative = tuple[re.Pattern[str], frozenset[str]]
"""An alternative of a pattern, compiled alone, and the words one of which its every match
holds (none known: empty)."""


@lru_cache(maxsize=256)
def _alternatives_needing(source: str, flags: int) -> tuple[_Alternative, ...]:
    """The alternatives of the pattern *source* (:func:`_alternatives`), each with the words
    it needs (:func:`_needed`): those whose words a text lacks are not searched at all ("1."
    repeated to 99,000 characters: the default ``no`` 0.75 s searched, some 0.02 s so)."""
    return tuple([(part, _needed(part.pattern, flags)) for part in _alternatives(source, flags)])


@lru_cache(maxsize=256)
def _alternatives(source: str, flags: int) -> tuple[re.Pattern[str], ...]:
    """The top-level alternatives of the pattern *source*, each compiled alone (the pattern
    itself when it has one, or may not be split: verbose, a group referred back to, flags
    set inline). A match of ``a|b|c`` is a match of one of them; but the engine tries every
    alternative at every position of a text, while one alone is found by its literal prefix:
    the default ``no`` (some 70 alternatives) searched 95,000 characters in 2 s whole, in
    0.3 s so."""
    whole = re.compile(source, flags)
    if flags & re.VERBOSE or _UNSPLITTABLE.search(source):
        return (whole,)
    try:
        parts = [re.compile(part, flags) for part in _split_top(source)]
    except re.error:
        return (whole,)
    if sum(part.groups for part in parts) != whole.groups:
        return (whole,)
    return tuple(parts)


_UNSPLITTABLE = re.compile(r"\\[1-9]|\(\?P=|\(\?\(|\(\?[aiLmsux]+\)")
"""A back reference (numbered, named or conditional), or flags set inline for the whole."""


def _split_top(source: str) -> list[str]:
    """*source* split at each ``|`` outside groups, classes and escapes."""
    parts: list[str] = []
    depth = start = at = 0
    while at < len(source):
        char = source[at]
        if char == "\\":
            at += 1
        elif char == "[":
            at = _class_end(source, at)
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(source[start:at])
            start = at + 1
        at += 1
    parts.append(source[start:])
    return parts


def _class_end(source: str, at: int) -> int:
    """Where the character class opening at *at* closes (a ``]`` first in it is a member)."""
    at += 2 if source.startswith("[^", at) else 1
    if source.startswith("]", at):
        at += 1
    while at < len(source) and source[at] != "]":
        at += 2 if source[at] == "\\" else 1
    return at


class _Held:
    """The words a long text holds, as a search ignoring case or not finds them, each looked
    up once (alternatives share many). Ignoring case, the text is lowered, and the four
    characters beyond ASCII a search ignoring case takes for an ASCII letter (a dotted and a
    dotless i, a long s, the Kelvin sign) are that letter: a word of ASCII it holds, the search
    finds."""

    def __init__(self, text: str, flags: int) -> None:
        caseless = flags & re.IGNORECASE
        self._text = text.translate(_CASELESS_ASCII).lower() if caseless else text
        self._seen: dict[str, bool] = {}

    def any_of(self, words: frozenset[str]) -> bool:
        """Whether the text holds one of *words* (none given: it may hold what is needed)."""
        return not words or any(self._holds(word) for word in words)

    def _holds(self, word: str) -> bool:
        found = self._seen.get(word)
        if found is None:
            found = self._seen[word] = word in self._text
        return found


_CASELESS_ASCII = {0x130: "i", 0x131: "i", 0x17F: "s", 0x212A: "k"}
"""The characters beyond ASCII that a search ignoring case matches with an ASCII character
(every one: see the tests), as that character lowered."""
_SRE_PARSER: Any = importlib.import_module("re._parser")
"""The standard library's regular expression parser (``sre_parse``, which warns on import)."""
_RANGE_SPELT = 64
"""Characters of a class's range spelt out as words needed; a wider range needs nothing."""


def _needed(source: str, flags: int) -> frozenset[str]:
    """Words one of which every match of the pattern *source* holds, as :class:`_Held` looks
    them up (lowered, ignoring case; of ASCII alone then); empty where none is known. A text
    holding none of them holds no match: it need not be searched, the search itself trying
    every position of the text where the words are found by a scan in C."""
    caseless = bool(flags & re.IGNORECASE)
    try:
        return _sequence_needs(list(_SRE_PARSER.parse(source, flags)), caseless) or frozenset()
    except (re.error, OverflowError, RecursionError):
        return frozenset()


_Needs = frozenset[str] | None


def _sequence_needs(items: list[tuple[Any, Any]], caseless: bool) -> _Needs:
    """Words one of which every match of the parsed sequence *items* holds: the most telling
    of those each part of it needs (its shortest word the longest, then the fewest words), or
    None."""
    best: _Needs = None
    for needs in _each_needs(items, caseless):
        if needs and (best is None or _telling(needs) > _telling(best)):
            best = needs
    return best


def _telling(words: frozenset[str]) -> tuple[int, int]:
    return min(map(len, words)), -len(words)


def _each_needs(items: list[tuple[Any, Any]], caseless: bool) -> Iterator[_Needs]:
    """What each part of a parsed sequence needs: a run of literal characters itself (ignoring
    case, of ASCII alone, so that :class:`_Held` finds them as the search does), each other
    part what :func:`_part_needs` says. Parts matching no text (``\\b``, a lookaround) need
    nothing and are passed over."""
    run = ""
    for op, value in items:
        if op is _SRE_PARSER.LITERAL and (not caseless or chr(value).isascii()):
            run += chr(value)
            continue
        yield _word(run, caseless)
        run = ""
        if op is not _SRE_PARSER.LITERAL:
            yield _part_needs(op, value, caseless)
    yield _word(run, caseless)


def _word(run: str, caseless: bool) -> _Needs:
    return (frozenset((run.lower() if caseless else run,))) if run else None


def _part_needs(op: Any, value: Any, caseless: bool) -> _Needs:
    """What a group, a choice, a repeat or a class needs (a repeat that may be left out, a
    group setting flags of its own and anything else: nothing known)."""
    sre = _SRE_PARSER
    if op is sre.SUBPATTERN:
        _group, added, removed, inner = value
        return None if added or removed else _sequence_needs(list(inner), caseless)
    if op is sre.ATOMIC_GROUP:
        return _sequence_needs(list(value), caseless)
    if op is sre.BRANCH:
        words: set[str] = set()
        for choice in value[1]:
            needs = _sequence_needs(list(choice), caseless)
            if needs is None:
                return None
            words |= needs
        return frozenset(words)
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
        least, _most, inner = value
        return _sequence_needs(list(inner), caseless) if least else None
    return _class_needs(value, caseless) if op is sre.IN else None


def _class_needs(members: list[tuple[Any, Any]], caseless: bool) -> _Needs:
    """The characters of a class of literal characters and narrow ranges, or None."""
    chars: set[str] = set()
    for op, value in members:
        if op is _SRE_PARSER.LITERAL:
            chars.add(chr(value))
        elif op is _SRE_PARSER.RANGE and value[1] - value[0] < _RANGE_SPELT:
            chars.update(map(chr, range(value[0], value[1] + 1)))
        else:  # negated, a category, a wide range
            return None
    if caseless and not all(char.isascii() for char in chars):
        return None
    return frozenset(char.lower() if caseless else char for char in chars)


class _Search:
    """A search as the memo's key: equal for the same pattern source, flags and text. Not the
    pattern itself: its hash reads its whole compiled code, a string's is computed once."""

    __slots__ = ("_hash", "_key", "pattern", "text")

    def __init__(self, pattern: re.Pattern[str], text: str) -> None:
        self.pattern, self.text = pattern, text
        self._key = (pattern.pattern, pattern.flags, text)
        self._hash = hash(self._key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Search) and self._key == other._key


@lru_cache(maxsize=4096)
def _searched(search: _Search) -> bool:
    # An lru_cache, not a dict of the module's: its entries are made only by searching, so
    # code running beside the harness (an in-process agent) cannot write an answer into it.
    return search.pattern.search(search.text) is not None


SEARCHED_CHARS = 4096
"""Texts up to this long have their searches remembered (4,096 at most, so at most 16 MB of
texts kept); longer ones are searched every time."""


def _has_args(event: ToolCallEvent, wanted: dict[str, Any]) -> bool:
    """The call's arguments (an object) include *wanted*: see :func:`_includes`."""
    try:
        args = embedded(event.args)  # arguments sent as JSON text (refused): read as sent
        return isinstance(args, dict) and _includes(event, args, wanted)
    except TooLarge as exc:
        raise UnreadableArgument(event, str(exc)) from None


def _includes(event: ToolCallEvent, value: Any, wanted: Any) -> bool:
    """*value* has what *wanted* gives: an object each member given (others may be there, at
    any depth, as beside the arguments named: ``{country: KP}`` is in an address with a city
    too), a list the same elements in the same order, a scalar the same value as ``where``
    compares one in the arguments (``true`` is not ``1``, ``null`` is not a missing member;
    another spelling of it only as the tool took it: see ``_paths.agrees``). Where *wanted*
    is an object or a list, a string is read as the JSON text it holds, and a key that text
    repeats has what is wanted when one of its values has (see ``_embedded``)."""
    if isinstance(wanted, dict | list):
        value = embedded(value)
    if isinstance(wanted, dict):
        return isinstance(value, dict) and all(
            name in value and any(_includes(event, v, item) for v in _each(value[name]))
            for name, item in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(value, list)
            and len(value) == len(wanted)
            and all(_includes(event, v, w) for v, w in zip(value, wanted, strict=True))
        )
    return agrees(event, value, wanted, every=False)


def _each(value: Any) -> list[Any]:
    """The values of a member: each of a key JSON text repeats, or the one."""
    return list(value) if type(value) is Repeated else [value]


_COMPILED: dict[int, CompiledMatch] = {}
"""Compiled matches by the identity of their match (which each entry keeps alive, so the
identity is not reused while the entry exists). Matches are frozen models."""
COMPILED_KEPT = 4096
"""Compiled matches kept at most; past it the cache starts again (a process loading suites
without end must not grow without end)."""


def compiled(match: Match) -> CompiledMatch:
    """The compiled form of *match*, made on first use."""
    found = _COMPILED.get(id(match))
    if found is not None and found.match is match:
        return found
    if len(_COMPILED) >= COMPILED_KEPT:
        _COMPILED.clear()
    made = _compile(match)
    _COMPILED[id(match)] = made
    return made


def _compile(match: Match) -> CompiledMatch:
    # The same flags as a search with re.IGNORECASE: the pattern was checked when loaded.
    pattern = None if match.matches is None else re.compile(match.matches, re.IGNORECASE)
    wanted = match.writes
    return CompiledMatch(
        match=match,
        key=match.model_dump_json(exclude={"capture"}),
        contains=None if match.contains is None else normalise(match.contains),
        pattern=pattern,
        table="" if wanted is None else wanted.table.casefold(),
        columns=frozenset(() if wanted is None else (c.casefold() for c in wanted.columns)),
        where=conditions(match.where),
    )
