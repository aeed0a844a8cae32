"""Our own row format: CSV (with a header) or JSON Lines, one attempt per row.

Columns: ``task_id``, ``attempt`` (the label as given: ``0``, ``1``, ``"trial-a"``) and
``success`` are required; ``terminal_reason``, ``cost``, ``latency``, ``partial_score``,
``retry``, ``slice_labels`` (a JSON list or ``a;b`` text), ``task_revision``, ``weight``,
``horizon``, ``input_tokens``, ``output_tokens`` and ``invalid_task`` are optional. A blank
cell (or JSON ``null``) is "not given". Rows are read one at a time, each line within
:data:`LINE_LIMIT` characters, so a file of any length is imported in bounded memory.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TextIO, cast

from groundstate.errors import SpecError
from groundstate.importers.compressed import DAMAGED, damaged, open_bytes
from groundstate.importers.rows import (
    ImportedRow,
    Tokens,
    as_amount,
    as_integer,
    as_label,
    as_number,
    as_task_id,
    as_text,
    check_reason,
    checked,
    lax,
    not_utf8,
    nul_reason,
    parse_json,
)
from groundstate.spec.strict import did_you_mean

COLUMNS = (
    "task_id",
    "attempt",
    "success",
    "terminal_reason",
    "cost",
    "latency",
    "partial_score",
    "retry",
    "slice_labels",
    "task_revision",
    "weight",
    "horizon",
    "input_tokens",
    "output_tokens",
    "invalid_task",
    "judge_errors",
)
"""Every column the row format reads, in the order ``export`` writes them."""
LINE_LIMIT = 1 << 26
"""The most characters a line of a row file may hold: a row is kilobytes. A line longer is
refused when rows are read (one of gigabytes, a few MiB of gzip, was read whole); when a
file's format is told, a first line longer is a document on one line (read whole, if under
its limit, by its reader)."""
_TRUE = frozenset({"true", "1", "1.0"})
_FALSE = frozenset({"false", "0", "0.0"})
"""How a yes/no column (``success``, ``invalid_task``) may be written as text, in any letter
case (``True`` as Python and pandas write it, ``TRUE`` as spreadsheets do): nothing else, as
no writer of CSV we know writes ``yes``, ``y``, ``t`` or ``pass`` for a boolean, and a file
that does was made by hand (see :func:`_boolean`)."""


@dataclass(frozen=True)
class TableSource:
    """A CSV or JSON Lines results file in the row format."""

    path: Path
    format: str
    """``csv`` or ``jsonl``."""

    def rows(self) -> Iterator[ImportedRow]:
        with _open(self.path, self.format) as handle:
            read = _csv_rows if self.format == "csv" else _json_rows
            try:
                yield from read(self.path, handle)
            except UnicodeDecodeError:
                raise SpecError(self.path, None, not_utf8(self.path)) from None
            except DAMAGED as exc:  # a compressed file cut short
                raise SpecError(self.path, None, damaged(self.path, exc)) from None

    def place(self, line: int) -> str:
        return f"{self.path}:{line}"

    def warnings(self) -> list[str]:
        return []

    def system(self) -> dict[str, Any]:
        return {}


def _open(path: Path, format: str) -> TextIO:
    try:
        # A byte-order mark (spreadsheets write one) is not part of the first column's name
        # or the first object. JSON Lines: a line ends at "\n", "\r\n" or "\r" alone (old
        # Mac tools), none of which can sit unescaped in a JSON string; U+2028 can, and is
        # no break here.
        newline = "" if format == "csv" else None
        raw = cast(BinaryIO, open_bytes(path))  # a file object; typeshed's stub says less
        return io.TextIOWrapper(raw, encoding="utf-8-sig", newline=newline)
    except DAMAGED as exc:
        raise SpecError(path, None, damaged(path, exc)) from None


DELIMITERS = (",", ";", "\t")
"""Cell separators tried on the header: spreadsheets in many locales write ``;``, and a
"text" export separates with tabs."""


def _csv_rows(path: Path, handle: TextIO) -> Iterator[ImportedRow]:
    lines = _lines(path, handle)
    skipped, first = _header_line(lines)
    delimiter = header_delimiter(first) or ","
    # "a, b": a space after the separator is not part of the cell (nor of a column's name).
    # Strict: a quoted cell left open at the end (a truncated file) or text after a closing
    # quote is an error, not a cell read as far as it goes ("agent_failure/incor" is a reason)
    bounded = _Bounded(path, itertools.chain([first], lines), skipped)
    spaced = delimiter != "\t"
    reader = csv.reader(bounded, delimiter=delimiter, skipinitialspace=spaced, strict=True)
    records = bounded.records(reader)
    try:
        header = [name.strip() for name in next(records, [])]
        twice = sorted({name for name in header if name and header.count(name) > 1})
        if twice:  # which of the two cells would count? neither silently
            line = skipped + 1
            raise SpecError(f"{path}:{line}", twice[0], "the column appears twice in the header")
        columns = [(name or f"(unnamed column {i})", _FIELDS.get(name))
                   for i, name in enumerate(header, start=1)]  # fmt: skip
        for cells in records:
            line = skipped + reader.line_num
            if not "".join(cells).strip():
                continue  # a blank line, or a spreadsheet's trailing row of empty cells
            if len(cells) > len(columns):
                raise SpecError(f"{path}:{line}", None, "more cells than the header has columns")
            yield _row(f"{path}:{line}", line, zip(columns, cells, strict=False))
    except csv.Error as exc:
        line = skipped + reader.line_num
        cut = " (a quoted cell is never closed: truncated?)" if "end of data" in str(exc) else ""
        raise SpecError(f"{path}:{line}", None, f"not valid CSV: {exc}{cut}") from None


class _Bounded:
    """A CSV file's lines, for :func:`csv.reader`, that bound what one record (a row, its
    quoted cells running over lines) holds to :data:`LINE_LIMIT` characters, as a JSON Lines
    row is bounded: a quote never closed read the rest of a file of any size into one cell.

    The ``csv`` module caps a cell at 128 Ki characters, a limit global to the process: a
    row holding a long cell (a model's answer, a log) was refused as "field larger than field
    limit (131072)" while the same row in JSON Lines was read. :meth:`records` raises that cap
    to :data:`LINE_LIMIT` while each record is read and puts back what it was, so no other
    reader of CSV in the process sees another limit between two records."""

    def __init__(self, path: Path, lines: Iterator[str], skipped: int) -> None:
        self.path = path
        self.lines = lines
        self.line = skipped  # lines read, blank ones before the header included
        self.start = skipped + 1  # where the record being read began
        self.held = 0  # characters of the record being read

    def __iter__(self) -> Iterator[str]:
        for text in self.lines:
            self.line += 1
            self.held += len(text)
            if self.held > LINE_LIMIT:
                raise SpecError(
                    f"{self.path}:{self.start}", None, f"a row of over {LINE_LIMIT >> 20} Mi "
                    f"characters (to line {self.line}), where a row is kilobytes: a quoted cell "
                    "never closed, or not a file of rows",
                )  # fmt: skip
            yield text

    def records(self, reader: Any) -> Iterator[list[str]]:
        """*reader*'s records (read from this), each read with the cell limit raised."""
        while True:
            self.start, self.held = self.line + 1, 0
            limit = csv.field_size_limit(LINE_LIMIT)
            try:
                cells = next(reader, None)
            finally:
                csv.field_size_limit(limit)
            if cells is None:
                return
            yield cells


def _lines(path: Path, handle: TextIO) -> Iterator[str]:
    """*handle*'s lines, each within :data:`LINE_LIMIT` characters: one of gigabytes (a few
    MiB of gzip hold them) was read whole, its row parsed from it, until the process ran out
    of memory."""
    number = 1
    while text := handle.readline(LINE_LIMIT + 1):
        if len(text) > LINE_LIMIT:
            raise SpecError(
                f"{path}:{number}", None, f"a line of over {LINE_LIMIT >> 20} Mi characters, "
                "where a row is kilobytes: not a file of rows, or one damaged",
            )  # fmt: skip
        if "\x00" in text:
            _nul_bytes(path, number, text)
        yield text
        number += 1


def _nul_bytes(path: Path, number: int, text: str) -> None:
    """Refuse line *number* when its NULs say the file is no UTF-8 text of rows (see
    :func:`~groundstate.importers.rows.nul_reason`): read as rows, UTF-16 gave rows of blank
    cells and a crash's zeros a last row cut short; a NUL or two in a cell (an id kept as
    written) is read."""
    reason = nul_reason(text.rstrip("\r\n"))
    if reason is not None:
        raise SpecError(f"{path}:{number}", None, reason)


def _header_line(handle: Iterator[str]) -> tuple[int, str]:
    """The first line that is not blank, and how many blank lines came before it."""
    skipped = 0
    for text in handle:
        if text.strip():
            return skipped, text
        skipped += 1
    return skipped, ""


def header_delimiter(header: str) -> str | None:
    """The separator whose split of *header* names ``task_id``: ``None`` for a line that is
    no header of the row format."""
    for delimiter in DELIMITERS:
        if "task_id" in (name.strip().strip('"') for name in header.split(delimiter)):
            return delimiter
    return None


def _json_rows(path: Path, handle: TextIO) -> Iterator[ImportedRow]:
    for line, text in enumerate(_lines(path, handle), start=1):
        if not text.strip():
            continue
        data = parse_json(text, f"{path}:{line}", at_line=False)
        if not isinstance(data, dict):
            raise SpecError(f"{path}:{line}", None, "each line must be a JSON object")
        yield parse_row(f"{path}:{line}", line, data)


def parse_row(where: str, line: int, data: dict[str, Any]) -> ImportedRow:
    """One row of the row format; an error names *where* (``file:line``), the field and the
    reason."""
    return _row(where, line, (((key, _FIELDS.get(key)), value) for key, value in data.items()))


_Cell = tuple[tuple[str, Callable[[Any], Any] | None], Any]
"""A column's name, its parser (``None``: no field reads it) and the row's value."""


def _row(where: str, line: int, cells: Iterable[_Cell]) -> ImportedRow:
    fields: dict[str, Any] = {}
    ignored = []
    for (key, parse), value in cells:
        if parse is None:  # named in a warning: it must be printable
            ignored.append(checked(where, "column name", as_text, key))
        elif value is not None and value != "":
            try:
                fields[key] = parse(value)
            except ValueError as exc:
                raise SpecError(where, key, str(exc)) from None
    for name in ("task_id", "attempt", "success"):
        if name not in fields:
            misspelt = [key for key in ignored if did_you_mean(key, [name])]
            hint = f" (the column {misspelt[0]!r} is no field)" if misspelt else ""
            raise SpecError(where, name, f"required, and missing or blank{hint}")
    success = fields["success"]
    reason = fields.get("terminal_reason") or ("success" if success else "agent_failure")
    return ImportedRow(
        line=line,
        task_id=fields["task_id"],
        label=fields["attempt"],
        success=success,
        terminal_reason=check_reason(where, reason, success),
        cost=fields.get("cost"),
        latency=fields.get("latency"),
        tokens=_tokens(fields),
        partial_score=fields.get("partial_score"),
        retry=fields.get("retry", 0),
        task_revision=fields.get("task_revision"),
        weight=fields.get("weight"),
        horizon=fields.get("horizon"),
        slice_labels=fields.get("slice_labels"),
        invalid_task=fields.get("invalid_task"),
        judge_errors=fields.get("judge_errors", 0),
        ignored=tuple(ignored),
    )


def _tokens(fields: dict[str, Any]) -> Tokens | None:
    """(input, output) tokens when the row counts either (the other then not known)."""
    if "input_tokens" not in fields and "output_tokens" not in fields:
        return None
    return fields.get("input_tokens"), fields.get("output_tokens")


def _boolean(value: Any) -> bool:
    """A yes/no cell: a JSON ``true``/``false``, a number 0 or 1, or their text
    (:data:`_TRUE`, :data:`_FALSE`). ``"yes"``, ``"no"``, ``"y"``, ``"pass"`` are refused: before
    the forty-seventh round ``"yes"`` was read as a success, and a column of free words ("yes",
    "yes, partly", "no idea") stores verdicts nobody gave."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):  # 1.0: an integer kept as a float
        return bool(value)
    if isinstance(value, str) and (text := value.strip().lower()) in _TRUE | _FALSE:
        return text in _TRUE
    raise ValueError(
        f"Input should be a valid boolean (true or false in any letter case, 1 or 0), got "
        f"{value!r}: no other spelling is read as a verdict"
    )


def _unit(value: Any) -> float:
    score = lax(as_number)(value)
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"must be in [0, 1], got {score}")
    return score


def _positive(value: Any) -> float:
    weight = lax(as_number)(value)
    if weight <= 0:
        raise ValueError(f"must be positive, got {weight}")
    return weight


def _at_least(least: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        count = lax(as_integer)(value)
        if count < least:
            raise ValueError(f"must be at least {least}, got {count}")
        return count

    return parse


JUDGE_ERRORS_LIMIT = 1000
"""Judge errors one row may count: each is stored as a result of its record, and no task
has more judged assertions than this."""


def _judge_errors(value: Any) -> int:
    count = _at_least(0)(value)
    if count > JUDGE_ERRORS_LIMIT:
        raise ValueError(f"must be at most {JUDGE_ERRORS_LIMIT} (one per judged assertion)")
    return count


def _labels(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        text = as_text(value).strip()
        if not text.startswith("["):
            return tuple(v for v in text.split(";") if v)
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a JSON list: {exc.msg}") from None
        except RecursionError:
            raise ValueError("not a JSON list: nested too deeply") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"must be a list of text labels, got {value!r}")
    return tuple(as_text(label) for label in value)


_FIELDS: dict[str, Callable[[Any], Any]] = {
    "task_id": as_task_id,
    "attempt": as_label,
    "success": _boolean,
    "terminal_reason": as_text,
    "cost": lax(as_amount),
    "latency": lax(as_amount),
    "partial_score": _unit,
    "retry": _at_least(0),
    "slice_labels": _labels,
    "task_revision": _at_least(0),
    "weight": _positive,
    "horizon": _at_least(1),
    "input_tokens": _at_least(0),
    "output_tokens": _at_least(0),
    "judge_errors": _judge_errors,
    "invalid_task": _boolean,
}
"""How each column is read; its ``ValueError`` becomes ``file:line: column: reason``."""
