"""Constraints on the write history, not only on the net diff: ``no_undo``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from groundstate.environments.base import RowWrite, json_cells
from groundstate.grading.constraints._embedded import TooLarge, embedded
from groundstate.grading.constraints._result import failed, label, passed, step_of
from groundstate.records import CheckResult
from groundstate.spec.canonical import canonical_json
from groundstate.spec.constraints import NoUndoConstraint
from groundstate.trace import AgentEvent, ToolCallEvent

ROW = None
"""The column name of a row's presence: an insert changes it from absent to present."""
_ABSENT, _PRESENT = "absent", "present"
Cell = tuple[str, str, str | None]
"""(table, canonical key, column or ROW)"""


def no_undo(constraint: NoUndoConstraint, events: list[AgentEvent]) -> CheckResult:
    """No call sets a cell back to a value an earlier call changed it away from.

    A cell is a column of a row, or the row's presence: a row inserted then deleted, or deleted
    then inserted again, is undone too. Changes inside one call are already netted out.
    """
    tables = {table.casefold() for table in constraint.no_undo.tables}  # SQL names ignore case
    left: dict[Cell, dict[str, ToolCallEvent]] = {}
    """Per cell: each value it held -> the call that changed it away from that value."""
    for event in events:
        if not isinstance(event, ToolCallEvent):
            continue
        for write in event.writes:
            if tables and write.table.casefold() not in tables:
                continue
            for cell, old, new in _cells(write):
                earlier = left.setdefault(cell, {})
                undone = earlier.get(_held(new))
                if undone is not None:
                    return _undo(constraint, event, undone, write, cell, new)
                earlier.setdefault(_held(old), event)
    return passed(constraint.id, "no_undo")


def _held(value: Any) -> str:
    """A cell's value as a key: 1 and 1.0 are the same number (a REAL column may give back
    1.0 for the 1 it held), 1 and "1" are not, nor a blob and any text. JSON text of an
    object or a list is the value it encodes: ``'{"a": 1}'`` set back as ``'{"a":1}'`` (key
    order, spacing, escapes aside) restores what the column held; text too large to read is
    compared as written."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    try:
        encoded = embedded(value)
    except TooLarge:
        encoded = value
    if encoded is not value:
        return "json:" + canonical_json(encoded)
    return canonical_json(json_cells(value))


def _cells(write: RowWrite) -> Iterator[tuple[Cell, Any, Any]]:
    key = canonical_json(json_cells(write.key))
    if write.before is None or write.after is None:
        old, new = (_ABSENT, _PRESENT) if write.before is None else (_PRESENT, _ABSENT)
        yield (write.table, key, ROW), old, new
        return
    for column in write.columns:
        yield (write.table, key, column), write.before.get(column), write.after.get(column)


def _undo(
    constraint: NoUndoConstraint,
    event: ToolCallEvent,
    undone: ToolCallEvent,
    write: RowWrite,
    cell: Cell,
    value: Any,
) -> CheckResult:
    column = cell[2]
    if column is ROW:
        what = (
            f"{'re-inserts' if value == _PRESENT else 'deletes'} row {write.key!r} of {write.table}"
        )
    else:
        what = f"sets {write.table}[{write.key!r}].{column} back to {value!r}"
    problem = f"{label(event)} {what}, undoing {label(undone)}"
    return failed(
        constraint.id,
        "no_undo",
        event,
        problem,
        undone_step=step_of(undone),
        table=write.table,
        key=write.key,
        column=column,
        value=value,
    )
