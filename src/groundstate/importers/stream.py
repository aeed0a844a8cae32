"""A JSON document read value by value, so that a results file far larger than any one of its
records is never held whole.

An Inspect ``.json`` log (its samples inline) or a τ² results file (its simulations with their
conversations) runs to hundreds of MB; parsed whole, it took several GB of memory. A
:class:`JsonStream` walks the document's top-level object key by key and its lists element
by element, parsing each value with the standard library's decoder from a window of the file
that grows only as far as that value needs (up to a limit per value): the memory taken is one
record's, whatever the file's size. Read so, the document is held to the rules a whole parse
holds it to (:func:`rows.parse_json`): valid JSON, UTF-8, no key given twice in an object, no
data after the document.
"""

from __future__ import annotations

import codecs
import io
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from groundstate.errors import SpecError, value_problem
from groundstate.importers.compressed import DAMAGED, damaged, open_bytes
from groundstate.importers.rows import (
    MARKING,
    UNIQUE,
    DoubledKey,
    doubled_field,
    located,
    not_utf8,
    nul_reason,
)

RECORD_LIMIT = 1 << 28
"""The most one value (a record: a τ² simulation, a τ-bench result) is read in, in characters:
a record is kilobytes to megabytes; parsed, it takes several times its size (as
``inspect_log.MEMBER_LIMIT`` for a sample)."""
CHUNK = 1 << 20
"""Characters read at a time (a value that needs more doubles the read, so a value of n
characters is parsed about twice over, not n / CHUNK times)."""
_SPACE = re.compile(r"[ \t\n\r]*")
_NEAR_END = 16
"""A syntax error this close to the end of the window may be the window's end cutting a
token (``tru``, ``1e``, ``\\ud83d\\ude0``): more is read before it is called an error."""


class TooLarge(SpecError):
    """One value of the document is longer than the stream's limit."""


class JsonStream:
    """One JSON document, read forward: :meth:`members` of an object, :meth:`elements` of a
    list, :meth:`value` for anything else."""

    def __init__(self, handle: io.BufferedIOBase, path: Path, limit: int) -> None:
        self._handle = handle
        self._path = path
        self._limit = limit
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")()  # a byte-order mark is not JSON
        self._text = ""
        self._pos = 0
        self._dropped = 0
        """Characters read and dropped before :attr:`_text`."""
        self._lines = 0
        """Line breaks in them (for the line of a syntax error)."""
        self._line_start = 0
        """The offset of the character after the last of them (for the column)."""
        self._eof = False

    # --- the document's structure ---------------------------------------------------------

    def peek(self) -> str:
        """The next character past white space (``""`` at the end of the file)."""
        while True:
            self._pos = _SPACE.match(self._text, self._pos).end()  # type: ignore[union-attr]
            if self._pos < len(self._text):
                return self._text[self._pos]
            if not self._read(CHUNK):
                return ""

    @property
    def line(self) -> int:
        """The line the next value starts on (past white space), counted from 1."""
        self.peek()
        return self._lines + self._text.count("\n", 0, self._pos) + 1

    def members(self, field: str = "") -> Iterator[str]:
        """The keys of the object that comes next, in order. The caller reads each key's value
        (:meth:`value`, :meth:`elements`) before asking for the next key; a value it does not
        read is parsed and dropped. A key given twice is refused, as a whole parse refuses it
        (*field*: the object's path, for that error)."""
        self._expect("{", "Expecting value")
        seen: set[str] = set()
        while True:
            if self.peek() == "}" and not seen:
                self._pos += 1
                return
            if seen:
                if self.peek() == "}":
                    self._pos += 1
                    return
                self._expect(",", "Expecting ',' delimiter")
            if self.peek() != '"':
                raise self._syntax("Expecting property name enclosed in double quotes")
            key = self.value()
            if key in seen:
                raise SpecError(self._path, f"{field}.{key}".lstrip("."), "the key appears "
                                "twice in one object")  # fmt: skip
            seen.add(key)
            self._expect(":", "Expecting ':' delimiter")
            start = self._offset
            yield key
            if self._offset == start:  # its value unread: read past it
                self.skip(f"{field}.{key}".lstrip("."))

    def elements(self, field: str = "") -> Iterator[Any]:
        """The elements of the list that comes next, each parsed on its own (*field*: the
        list's path, for the field of a key given twice inside an element)."""
        for place in self.places(field):
            yield self.value(place)

    def places(self, field: str = "") -> Iterator[str]:
        """The path of each element of the list that comes next (``field[0]``, ...), for the
        caller to read it as it reads a member's value (:meth:`members`, say, to walk an
        element that is a large object); an element it does not read is read past."""
        self._expect("[", "Expecting value")
        index = 0
        while True:
            if self.peek() == "]":
                self._pos += 1
                return
            if index:
                self._expect(",", "Expecting ',' delimiter")
            self.peek()  # past white space: a caller that only peeks has not read it
            place, start = f"{field}[{index}]", self._offset
            yield place
            if self._offset == start:  # left unread: read past it
                self.skip(place)
            index += 1

    def skip(self, field: str = "") -> None:
        """Read past the next value, holding no more of it at a time than the window already
        read holds (or one list of numbers): a list or object the window holds whole is
        parsed there; a longer one is walked, member by member or element by element, each
        read past in turn, and a list of numbers and literals alone (a model call's token ids)
        parsed whole. Parsing each element of a list whole held all of a value in one element
        (a Harbor trial's rollouts: every token id of every model call). Checked as a whole
        parse would check it (*field*: its path, for the field of a key given twice inside)."""
        try:
            self._skip(field)
        except RecursionError:
            raise SpecError(self._path, field or None, "not readable JSON: nested too "
                            "deeply") from None  # fmt: skip

    def _skip(self, field: str) -> None:
        opening = self.peek()
        if opening not in ("[", "{"):
            self.value(field)
        elif self._in_window(field):
            return  # read past where it lies
        elif opening == "{":
            for key in self.members(field):
                self._skip(f"{field}.{key}".lstrip("."))
        elif self._flat(field):
            self.value(field)
        else:
            for place in self.places(field):
                self._skip(place)

    def _in_window(self, field: str) -> bool:
        """The list or object that comes next was read past within the window as it is
        (``False``: the window ends inside it). Anything else wrong in it is named by
        :meth:`value`, as it would be read whole."""
        try:
            _, end = UNIQUE.raw_decode(self._text, self._pos)
        except json.JSONDecodeError as exc:
            if self._cut(exc):
                return False
            self.value(field)  # raises, naming the line
        except (DoubledKey, RecursionError, ValueError, MemoryError):
            self.value(field)  # names it, and where it sits
        else:
            self._pos = end
        return True

    def _flat(self, field: str) -> bool:
        """The list that comes next holds no list, object or string (the window grown until
        its end or one of those is seen, within the limit)."""
        want = CHUNK
        while True:
            end = self._text.find("]", self._pos)
            before = end if end >= 0 else len(self._text)
            if any(self._text.find(c, self._pos + 1, before) >= 0 for c in '[{"'):
                return False
            if end >= 0:
                return True
            if not self._grow(want, field):
                return False  # cut short: reading it names where
            want *= 2

    def end(self) -> None:
        """Nothing but white space after the document, as a whole parse requires."""
        if self.peek():
            raise self._syntax("Extra data")

    def value(self, field: str = "") -> Any:
        """The next value, parsed from a window grown until it holds the whole value (a value
        longer than the limit is refused before more of it is read)."""
        decoder, want = UNIQUE, CHUNK
        while True:
            self.peek()
            try:
                value, end = decoder.raw_decode(self._text, self._pos)
            except DoubledKey:  # found; where it sits needs the whole value
                decoder = MARKING
                continue
            except json.JSONDecodeError as exc:
                if self._cut(exc) and self._grow(want, field):
                    want *= 2
                    continue
                raise self._syntax(exc.msg, exc.pos) from None
            except RecursionError:
                raise SpecError(self._path, field or None, "not readable JSON: nested too "
                                "deeply") from None  # fmt: skip
            except MemoryError:
                raise SpecError(self._path, field or None, "too large to read: out of memory "
                                "parsing it") from None  # fmt: skip
            except ValueError as exc:  # an integer of more than 4,300 digits
                reason = f"not valid JSON: {value_problem(exc)}"
                raise SpecError(self._path, field or None, reason) from None
            if _number(value) and end > len(self._text) - _NEAR_END and self._grow(want, field):
                continue  # "1" of "1.5e3" cut by the window's end
            if end - self._pos > self._limit:
                raise self._too_large(field)
            if decoder is MARKING:
                where = doubled_field(value, field)
                raise SpecError(self._path, where, "the key appears twice in one object")
            self._pos = end
            return value

    # --- the window -----------------------------------------------------------------------

    @property
    def _offset(self) -> int:
        return self._dropped + self._pos

    def _expect(self, char: str, message: str) -> None:
        if self.peek() != char:
            raise self._syntax(message)
        self._pos += 1

    def _cut(self, exc: json.JSONDecodeError) -> bool:
        """The error may be the window's end, not the document's."""
        return exc.msg.startswith("Unterminated string") or exc.pos >= len(self._text) - _NEAR_END

    def _grow(self, want: int, field: str) -> bool:
        """Read *want* more characters for the value at hand (at *field*); ``False`` at the end
        of the file. A value already past the limit is refused."""
        if len(self._text) - self._pos > self._limit:
            raise self._too_large(field)
        return self._read(min(want, self._limit + 1))

    def _too_large(self, field: str) -> TooLarge:
        return TooLarge(
            self._path, field or None, f"more than {self._limit} characters (from offset "
            f"{self._offset}), over the {self._limit} one record is read in",
        )  # fmt: skip

    def _read(self, size: int) -> bool:
        """Append about *size* characters to the window, dropping what was read past."""
        if self._eof:
            return False
        if self._pos:
            self._lines += self._text.count("\n", 0, self._pos)
            if (newline := self._text.rfind("\n", 0, self._pos)) >= 0:
                self._line_start = self._dropped + newline + 1
            self._dropped += self._pos
            self._text, self._pos = self._text[self._pos :], 0
        try:
            data = self._handle.read(size)
            text = self._decoder.decode(data, final=not data)
        except UnicodeDecodeError:
            raise SpecError(self._path, None, not_utf8(self._path)) from None
        except DAMAGED as exc:
            raise SpecError(self._path, None, damaged(self._path, exc)) from None
        self._eof = not data
        self._text += text
        return True

    def _syntax(self, message: str, at: int | None = None) -> SpecError:
        """A syntax error at *at* (the window's position by default), naming its line and
        column: a file of one line (a results list written without breaks, cut short) is
        otherwise located nowhere in its megabytes."""
        at = self._pos if at is None else at
        line = self._lines + self._text.count("\n", 0, at) + 1
        newline = self._text.rfind("\n", 0, at)
        start = self._line_start if newline < 0 else self._dropped + newline + 1
        offset = self._dropped + at
        nul = nul_reason(self._text[at : at + 64]) if self._text[at : at + 1] == "\x00" else None
        note = "" if nul is None else f" ({nul})"
        return SpecError(
            f"{self._path}:{line}", None,
            f"not valid JSON: {message}{located(offset - start + 1, offset)}{note}",
        )  # fmt: skip


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@contextmanager
def json_stream(path: Path, limit: int) -> Iterator[JsonStream]:
    """*path*'s document (decompressed, if it is compressed), to read forward."""
    try:
        handle = open_bytes(path)
    except DAMAGED as exc:
        raise SpecError(path, None, damaged(path, exc)) from None
    with handle:
        yield JsonStream(handle, path, limit)
