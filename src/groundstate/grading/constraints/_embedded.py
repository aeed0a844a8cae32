"""JSON text an argument holds, read where a condition's path goes below it.

A tool may take an argument as JSON text and parse it itself (a ``payload`` or ``body``
declared a string): ``{"payload": "{\\"order_id\\": \\"#W1\\", \\"amount\\": 500}"}`` asks
for order ``#W1`` as surely as ``{"payload": {"order_id": "#W1", "amount": 500}}``. A path
into the arguments that goes below a string (``args.payload.order_id``, ``args.items.*``)
therefore reads the string as the JSON it holds, when it holds an object or a list (JSON's
own whitespace and escapes, and JSON text encoded as a JSON string again, read as a parser
reads them). A string that is no such JSON text (``"{W1}"``, ``"[note] refund"``, ``"5"``)
has nothing below it, as before; a path ending at the string compares the string itself
(or, where it and the value compared hold one object or list, that value).

A key the JSON text repeats (``{"order_id": "#W2", "order_id": "#W1"}``) holds each of its
values: parsers differ on which one wins, so a condition sees them all, as it sees every
element through ``*``. JSON text longer than the gateway lets a call's arguments be
(:data:`~groundstate.gateway.MAX_ARGUMENT_CHARS`), or nested deeper than it lets them be
(:data:`~groundstate.gateway.MAX_ARGUMENT_DEPTH`), cannot be read within the grader's bounds:
a check reading below it fails, the agent having made its call too large to judge
(:class:`UnreadableArgument`).

The arguments are read so, being the agent's words shaped as it chose, and so is a tool's
output: JSON text a tool answers with (``{"data": "{\\"order_id\\": \\"#W1\\"}"}``) shows what
it holds, to every condition on the output, as the object would. So is an error: a path below
``error`` reads the JSON text it is, or holds among words (``Refused: {"order_id": "#W1"}``,
``{"code": "E42"} while updating``, see :func:`error_value`); and a column a call wrote
holding JSON text is the value it encodes where a write is compared (its record shown, a
value set back). JSON text compared whole with JSON text is the value it encodes too
(``_paths.same_encoded``).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from groundstate.gateway import MAX_ARGUMENT_CHARS, MAX_ARGUMENT_DEPTH
from groundstate.grading.constraints._text import Unreadable

_OPENS = re.compile(r'\s*[{\["]')
"""How JSON text that may hold an object or a list starts (after whitespace, Python's, which
a tool stripping the text removes): the object, the list, or JSON text encoded as a string
again."""
_DIGITS = 4300
"""The most digits Python reads as an int by default (``sys.get_int_max_str_digits``): a
longer integer in the text is read as a float, so that it cannot make the whole text
unreadable and hide the values beside it."""


class Repeated(list[Any]):
    """The values of a key that JSON text repeats, in the order written."""


class ErrorRecords(tuple[Any, ...]):
    """The objects and lists an error holds among its words, two or more, in the order
    written: a path below the error reads each (``_paths``), as it reads each value of a key
    JSON text repeats. No list, so that ``*`` and an index do not take it for one."""


class TooLarge(Exception):
    """JSON text over the bounds a check reads: :class:`UnreadableArgument` once the call is
    known."""


def embedded(value: Any) -> Any:
    """*value*, or where it is a string holding JSON text of an object or a list, what the
    text holds (an object's repeated keys as :class:`Repeated`). Raises :class:`TooLarge`."""
    if type(value) is not str or _OPENS.match(value) is None:
        return value
    found = _parsed(value)
    if isinstance(found, str):
        raise TooLarge(found)
    return value if found is None else found


def error_value(error: Any) -> Any:
    """A tool's error as paths below it read it: the object or list its text holds as JSON
    text (:func:`embedded`), or the one written in it among words (``Refused:
    {"order_id": "#W1"}``, ``{"code": "E42"} while updating``, ``[404] {"code":
    "not_found"}``: see :func:`_written_in`), or the several written in it
    (:class:`ErrorRecords`); else the error itself. A tool that puts the record it refused in
    its message shows it as surely as one answering with it; and one echoing the agent's
    arguments beside its own record (``Refused {"order_id": "..."}: {"code": "E42"}``) shows
    both: the agent's echo, however long, does not hide the tool's record. Raises
    :class:`TooLarge`."""
    read = embedded(error)
    if read is not error or type(error) is not str or _OPENING.search(error) is None:
        return read
    found = _written_in_short(error) if len(error) <= SHORT else _written_in_long(error)
    if isinstance(found, str):
        raise TooLarge(found)
    return error if found is None else found


_OPENING = re.compile(r'\{\s*["}]|\[\s*[-\[{"\d\]tfn]|"(?:\\{1,15}"){0,4}\s*[{\[]')
"""Where JSON text of an object or a list may start: ``{"``, ``{}``, ``[1``, ``["``..., or
that text encoded as a JSON string again, or more (``"{\\"code\\": ...}"``, as a tool
quoting the record it refused writes it; up to five times, so that an opening is seen in
bounded time); not ``{name}``, ``[E42]``, ``[ERROR]``, which are passed over unread."""
_TRIED = 8
"""Openings an error is read at past :data:`_GLANCE` characters to be no JSON, at most, and
:data:`_GLANCED` seen sooner to be none (``[404 and``): an error of any length is read in
time linear in it (a JSON text read is passed, and costs its length)."""
_GLANCE = 256
_GLANCED = 1024


def _written_in(text: str) -> dict[str, Any] | list[Any] | ErrorRecords | str | None:
    """Every object or list written in *text* among other words (read from each ``{`` or
    ``[`` outside one read, or each JSON string holding one; words after it are no part of
    it: "[404]" before a record is a list, but not the record): the one, or several as
    :class:`ErrorRecords`; why it cannot be read (a string); or None."""
    found: list[Any] = []
    at, tried, glanced = 0, 0, 0
    while tried < _TRIED and glanced < _GLANCED and (opening := _OPENING.search(text, at)):
        at = opening.start()
        read = _read_at(text, at)
        if isinstance(read, str):  # a record already read is not hidden by text after it
            return _records(found) if found else read
        value, end = read
        if type(value) is str:  # JSON text encoded again: the object or list it holds
            value = _parsed(value) if _OPENS.match(value) is not None else None
            if isinstance(value, str):
                return _records(found) if found else value
            end = end if value is not None else 0 if end - at <= _GLANCE else -1
        tried += end < 0
        glanced += end == 0
        if value is None:
            at += 1
            continue
        found.append(value)
        at = end
    return _records(found) if found else None


def _records(found: list[Any]) -> Any:
    """The record *found*, or its several as :class:`ErrorRecords`."""
    return found[0] if len(found) == 1 else ErrorRecords(found)


_WINDOWS = (_GLANCE, 16 * _GLANCE, 256 * _GLANCE, MAX_ARGUMENT_CHARS + 1)
"""The windows JSON text is read from, each while the text runs past the one before: a
record read costs some 16 times its length at most, however many an error holds."""


def _read_at(text: str, at: int) -> tuple[Any, int] | str:
    """The object or list JSON text starting at *at* of *text* holds and where it ends; or
    None and -1 where it is no such text read past :data:`_GLANCE` characters (0: seen
    sooner); or why it cannot be read (a string). Read from a window of the text: the
    parser's error names its line, which costs as much as the text before it."""
    for size in _WINDOWS:
        window = text[at : at + size]
        try:
            value, end = _DECODER.raw_decode(window)
        except RecursionError:
            return _TOO_DEEP
        except json.JSONDecodeError as exc:
            if len(window) < size or not _ran_out(exc, window):
                return None, 0 if size == _GLANCE else -1
            continue
        if _depth(value) > MAX_ARGUMENT_DEPTH:
            return _TOO_DEEP
        return value, at + end
    return f"{len(text) - at:,} characters from a {text[at]!r}, over {MAX_ARGUMENT_CHARS:,}"


def _ran_out(error: json.JSONDecodeError, window: str) -> bool:
    """Whether JSON text may go on past the end of *window* (its string or its value ended
    the window), not fail within it."""
    return error.pos >= len(window) - 1 or error.msg.startswith("Unterminated string")


def unfolded(value: Any) -> Any:
    """*value* with each string holding JSON text of an object or a list, at any depth,
    replaced by what it holds (:func:`embedded`): what a scan of a whole tool output reads.
    *value* itself where it holds no such text. Raises :class:`TooLarge`."""
    return _unfold(value) if _holds_text(value) else value


def _holds_text(value: Any) -> bool:
    """Whether a string below *value* may hold JSON text (read level by level)."""
    level = [value]
    while level:
        if any(type(v) is str and _OPENS.match(v) is not None for v in level):
            return True
        level = [
            c
            for v in level
            if isinstance(v, dict | list)
            for c in (v.values() if isinstance(v, dict) else v)
        ]
    return False


def _unfold(value: Any) -> Any:
    value = embedded(value)
    if isinstance(value, dict):
        return {key: _unfold(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return type(value)([_unfold(inner) for inner in value])  # a Repeated kept so
    return value


SHORT = 4096
"""JSON texts up to this long are remembered 256 at a time, longer ones 4 at a time: a
parsed text takes some 25 times its length in memory, and an agent may send many."""


def _parsed(text: str) -> dict[str, Any] | list[Any] | str | None:
    """:func:`_read`, remembered (a refusal too): every condition below the same argument
    asks again."""
    return _read_short(text) if len(text) <= SHORT else _read_long(text)


def _read(text: str) -> dict[str, Any] | list[Any] | str | None:
    """The object or list *text* holds as JSON (through JSON strings holding JSON text), why
    it cannot be read (a string), or None (no such text). Each string read is shorter than
    the one holding it, so the unwrapping ends."""
    if len(text) > MAX_ARGUMENT_CHARS:
        return f"{len(text):,} characters of JSON text, over {MAX_ARGUMENT_CHARS:,}"
    try:
        value = json.loads(text.strip(), object_pairs_hook=_object, parse_int=_integer)
    except RecursionError:  # deeper than Python reads: deeper than the bound, surely
        return _TOO_DEEP
    except ValueError:  # no JSON: an honest string that merely looks like it
        return None
    if isinstance(value, str):
        return _parsed(value) if _OPENS.match(value) is not None else None
    if not isinstance(value, dict | list):
        return None
    return _TOO_DEEP if _depth(value) > MAX_ARGUMENT_DEPTH else value


_TOO_DEEP = f"JSON text nested deeper than {MAX_ARGUMENT_DEPTH} levels"
_read_short = lru_cache(maxsize=256)(_read)
_read_long = lru_cache(maxsize=4)(_read)
_written_in_short = lru_cache(maxsize=256)(_written_in)
_written_in_long = lru_cache(maxsize=4)(_written_in)


def _integer(digits: str) -> int | float:
    return int(digits) if len(digits) <= _DIGITS else float(digits)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    made: dict[str, Any] = {}
    for key, value in pairs:
        if key not in made:
            made[key] = value
        elif isinstance(made[key], Repeated):
            made[key].append(value)
        else:
            made[key] = Repeated([made[key], value])
    return made


_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_int=_integer)


def _depth(value: Any) -> int:
    """Levels of objects and lists within each other, read level by level (no recursion)."""
    level, depth = [value], 0
    while containers := [v for v in level if isinstance(v, dict | list)]:
        depth += 1
        if depth > MAX_ARGUMENT_DEPTH:
            break
        level = [c for v in containers for c in (v.values() if isinstance(v, dict) else v)]
    return depth


class UnreadableArgument(Unreadable):
    """A call whose arguments (or output) hold JSON text a check must read below, too large
    or deep to read: the check fails, as on an agent message too long to judge."""

    def __init__(self, call: Any, reason: str, field: str = "args") -> None:
        held = "the arguments" if field == "args" else f"the {field}"
        verb, judged = ("hold", "they") if field == "args" else ("holds", "it")
        Exception.__init__(
            self,
            f"{held} of the call at step {call.step} ({call.tool}) {verb} {reason}: "
            f"{judged} cannot be judged",
        )
        self.message = call
        self.step = call.step
        self.reason = reason
        self.field = "arguments" if field == "args" else field

    def evidence(self) -> dict[str, Any]:
        return {"step": self.step, self.field: self.reason}
