"""The environment contract, state snapshots and state diffs.

An environment has state. The agent changes it through tools (the *agent view*); graders
read it through a separate read-only *evaluator view*. ``reset`` restores a checked initial
state, clock and counters included.
"""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel, Field

Row = dict[str, Any]


class TableState(BaseModel):
    """All rows of one table, keyed by the canonical JSON of their primary key."""

    columns: list[str]
    key: list[str]
    """Primary-key columns (``["rowid"]`` for a table without one)."""
    rows: dict[str, Row]


class Snapshot(BaseModel):
    tables: dict[str, TableState]


class RowChange(BaseModel):
    key: Any
    before: Row
    after: Row

    @property
    def columns(self) -> list[str]:
        """The columns whose value changed."""
        return [c for c in self.after if self.before.get(c) != self.after.get(c)]


class RowWrite(BaseModel):
    """One row as a single tool call changed it: its value before and after the call."""

    table: str
    key: Any
    """Primary-key value (a list for a composite key; ``rowid`` for a table without one)."""
    before: Row | None
    """None: the call inserted the row."""
    after: Row | None
    """None: the call deleted the row."""

    @property
    def columns(self) -> list[str]:
        """The columns the call changed; an inserted or deleted row changes all of them."""
        if self.before is None or self.after is None:
            return list(self.after or self.before or {})
        return [c for c in self.after if self.before.get(c) != self.after.get(c)]


class TableDiff(BaseModel):
    added: list[Row] = Field(default_factory=list)
    removed: list[Row] = Field(default_factory=list)
    changed: list[RowChange] = Field(default_factory=list)

    def is_empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


class StateDiff(BaseModel):
    """Per-table differences between two states; tables without change are absent."""

    tables: dict[str, TableDiff] = Field(default_factory=dict)

    def is_empty(self) -> bool:
        return not self.tables


class StateView(Protocol):
    """Read-only access to one state, for graders."""

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]: ...

    def snapshot(self) -> Snapshot: ...


@dataclass
class CallEffects:
    """What one tool call did to the environment, filled in when its transaction ends."""

    changed_tables: list[str] = field(default_factory=list)
    """Tables the call wrote, even where it left the rows as they were."""
    denied: list[str] = field(default_factory=list)
    """Actions the environment refused (e.g. ``read payment_cards``)."""
    writes: list[RowWrite] = field(default_factory=list)
    """Row-level changes of a committed call, in the order the rows were first written;
    empty for a call that was denied or rolled back."""


class Environment(Protocol):
    """What the episode needs from an environment."""

    name: str

    def reset(self, *, seed: int | None = None) -> str:
        """Restore the initial state and return its state hash."""
        ...

    def state_hash(self) -> str: ...

    def snapshot(self) -> Snapshot: ...

    def evaluator_view(self) -> StateView:
        """Read-only view of the current state."""
        ...

    def initial_view(self) -> StateView:
        """Read-only view of the initial state s0."""
        ...

    @property
    def agent_db(self) -> sqlite3.Connection:
        """The agent's own connection, restricted by its permissions."""
        ...

    def tool_transaction(self) -> AbstractContextManager[CallEffects]:
        """Run one tool call atomically: commit on success, roll back on any exception."""
        ...

    def now(self) -> datetime: ...

    def advance_clock(self, seconds: float) -> None: ...

    def health(self) -> dict[str, Any]:
        """A health probe: ``{"ok": bool, ...evidence}``."""
        ...

    def close(self) -> None: ...


def diff_snapshots(before: Snapshot, after: Snapshot) -> StateDiff:
    """Rows added, removed and changed per table, matched by primary key."""
    diff = StateDiff()
    for name in sorted(set(before.tables) | set(after.tables)):
        table = _diff_table(before.tables.get(name), after.tables.get(name))
        if not table.is_empty():
            diff.tables[name] = table
    return diff


def _diff_table(before: TableState | None, after: TableState | None) -> TableDiff:
    old = before.rows if before else {}
    new = after.rows if after else {}
    either = after or before
    key_columns = either.key if either is not None else []
    return TableDiff(
        added=[new[k] for k in sorted(new.keys() - old.keys())],
        removed=[old[k] for k in sorted(old.keys() - new.keys())],
        changed=[
            RowChange(key=_key_value(new[k], key_columns), before=old[k], after=new[k])
            for k in sorted(old.keys() & new.keys())
            if old[k] != new[k]
        ],
    )


def _key_value(row: Row, key_columns: list[str]) -> Any:
    values = [row.get(c) for c in key_columns]
    return values[0] if len(values) == 1 else values
