"""The environment contract, state snapshots and state diffs.

An environment has state. The agent changes it through tools (the *agent view*); graders
read it through a separate read-only *evaluator view*. ``reset`` restores a checked initial
state, clock and counters included.

The contract is a small core every kind implements (:class:`Environment`: reset to a checked
hash, snapshot, evaluator views of s0 and sT, the agent's handle, tool transactions, clock,
health, close) and optional capabilities tools and assertions rely on: a *relational* kind's
agent handle takes SQL (``execute(sql, params)`` with ``?`` placeholders) and its views answer
``query``. State is named collections of keyed records (a table's rows by primary key), so
hashing, diffs, collateral checks and write history stay generic across kinds. Kinds are
found through :mod:`groundstate.environments.registry`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Annotated, Any, ClassVar, Protocol, Self, runtime_checkable

from pydantic import BaseModel, Field, PlainSerializer

from groundstate.account import Tally
from groundstate.errors import ToolError


def json_cells(value: Any) -> Any:
    """*value* (a cell, a row, rows) with each BLOB written as ``{"blob": "<hex>"}``, the form
    snapshot keys give it, and each infinite REAL as ``{"real": "inf"}`` or ``"-inf"``. JSON
    has no bytes: pydantic wrote a BLOB as UTF-8 text, which failed on one that is not UTF-8
    (an agent that wrote ``x'ff'`` broke its attempt's record, or made each ``state_diff`` a
    grader failure) and showed one that is as text. Nor has it infinities: pydantic wrote
    ``9e999`` (SQLite's ``Inf``) as ``null``, so the stored diff and the trace's writes said
    NULL of a cell that is not NULL. A NaN, which no cell holds (SQLite stores it as NULL),
    is left to pydantic (``null``), as a check's evidence has always had it."""
    if isinstance(value, bytes):
        return {"blob": value.hex()}
    if type(value) is float and math.isinf(value):
        return {"real": repr(value)}
    if isinstance(value, dict):
        cells = value.values()
        if _PLAIN_CELLS.issuperset(map(type, cells)) and not any(map(_infinite, cells)):
            return value  # a row of plain cells, as nearly every row is
        return {k: json_cells(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_cells(v) for v in value]
    return value


_PLAIN_CELLS = frozenset({str, int, float, bool, type(None)})
"""The types of cell :func:`json_cells` leaves as they are, told apart in one pass (a cell of
any other type, a subclass of these included, is looked at one by one)."""


def _infinite(cell: Any) -> bool:
    """Whether *cell* is an infinite float, which :func:`json_cells` tags."""
    return type(cell) is float and math.isinf(cell)


_JSON_CELLS = PlainSerializer(json_cells, when_used="json")
Row = Annotated[dict[str, Any], _JSON_CELLS]
"""A row's values by column; in JSON, a BLOB is ``{"blob": "<hex>"}``."""
Key = Annotated[Any, _JSON_CELLS]
"""A row's key value (a list for a composite key), serialised as :data:`Row`'s values."""


def same_cell(a: Any, b: Any) -> bool:
    """Whether two cells hold the same state, as the state hash tells them apart: the same
    storage class and value (``1``, ``1.0``, ``True`` and ``'1'`` differ, and so do ``0.0``
    and ``-0.0``; a NaN is itself). Python's ``==`` took ``1`` for ``1.0``: a diff, a call's
    writes and a collateral check missed a change the state hash saw."""
    if type(a) is not type(b):
        return False
    return repr(a) == repr(b) if isinstance(a, float) else bool(a == b)


def cell_key(value: Any) -> tuple[type, Any]:
    """A hashable value two cells share exactly when :func:`same_cell` calls them the same."""
    return type(value), repr(value) if isinstance(value, float) else value


Content = tuple[tuple[str, tuple[type, Any]], ...]
"""A row's content, as :func:`row_content` gives it."""


def row_content(row: Row) -> Content:
    """A row's cells but its ``rowid``, as a hashable value: what a row of a table without a
    primary key is (its ``rowid`` is no part of the state the hash sees). The diff and the
    ``state_diff`` assertions' twin matching both use it."""
    return tuple([(column, cell_key(value)) for column, value in row.items() if column != "rowid"])


def same_row(a: Row | None, b: Row | None) -> bool:
    """Whether two rows (None: no row) hold the same cells, by :func:`same_cell`."""
    if a is None or b is None:
        return a is b
    return a.keys() == b.keys() and all(same_cell(value, b[c]) for c, value in a.items())


class TableState(BaseModel):
    """One named collection of keyed records: all rows of one table, keyed by the canonical
    JSON of their primary key."""

    columns: list[str]
    key: list[str]
    """Primary-key columns (``["rowid"]`` for a table without one)."""
    rows: dict[str, Row]


class Snapshot(BaseModel):
    """A whole state: its collections by name."""

    tables: dict[str, TableState]


class RowChange(BaseModel):
    key: Key
    before: Row
    after: Row

    @property
    def columns(self) -> list[str]:
        """The columns whose value changed."""
        return [c for c in self.after if not same_cell(self.before.get(c), self.after.get(c))]


class RowWrite(BaseModel):
    """One row as a single tool call changed it: its value before and after the call."""

    table: str
    key: Key
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
        return [c for c in self.after if not same_cell(self.before.get(c), self.after.get(c))]


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


class FinalStateView(StateView, Protocol):
    """What a grader's Python check gets as sT: the view of the final state, and the
    attempt's diff from s0, which the harness computed for the record already."""

    def changes(self) -> StateDiff:
        """The diff from s0 to sT (a copy of the caller's own): what
        ``diff_snapshots(s0.snapshot(), sT.snapshot())`` gives, without reading either."""
        ...


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
    def agent_db(self) -> Any:
        """The agent's own handle, restricted by its permissions (a relational kind's
        connection: ``execute(sql, params)``)."""
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

    def __enter__(self) -> Self: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the environment."""
        ...


@runtime_checkable
class TracksChanges(Protocol):
    """A kind that knows its initial state and which rows changed since reset, so an attempt
    pays for what the agent did rather than for the size of the state."""

    def initial_snapshot(self) -> Snapshot:
        """The state reset restores (shared between attempts: do not change it)."""
        ...

    def diff_from_initial(self) -> StateDiff:
        """The diff from the initial state to the current one."""
        ...


def initial_snapshot(env: Environment) -> Snapshot:
    """The state *env* was just reset to: known already where the kind tracks changes."""
    return env.initial_snapshot() if isinstance(env, TracksChanges) else env.snapshot()


def diff_from_initial(env: Environment, s0: Snapshot) -> StateDiff:
    """The diff from *s0* (the state after reset) to *env*'s current state."""
    if isinstance(env, TracksChanges):
        return env.diff_from_initial()
    return diff_snapshots(s0, env.snapshot())


class ClosesOnExit:
    """The base of every environment kind: ``with`` support (leaving the block closes it),
    and the count of the tool transactions it enters (:meth:`calls_entered`).

    An in-process agent that entered ``env.tool_transaction()`` itself (directly, through
    a tool gateway of its own, or from a thread it left running as grading starts) changed
    the state with no trace and no constraint seeing it; the episode compares this count
    with the calls in the attempt's account (``episode._outside_session``). The count is
    kept here, for every kind: a kind's own ``tool_transaction`` (and a subclass's) is
    wrapped as its class is made, so a new kind is counted without a line of its own."""

    _entered: Tally
    reports_writes: ClassVar[bool] = False
    """Whether each committed call's :attr:`CallEffects.changed_tables` names every table
    the call changed, so that a change of the final state no traced call reports is one made
    behind the session (``episode._untraced_change``). The built-in kinds do; a kind that
    does not say so is not checked that way."""
    held_bound: ClassVar[frozenset[str]] = frozenset({"_entered"})
    """Attributes bound to one object from a reset to the close: the count, and in a kind the
    connections, files and folders its tool calls and graders go through. The episode holds
    them through the agent's run and grading (:class:`groundstate.bindings.Held`): an agent
    that put a connection of its own in the graders' place was graded on its own database."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        made = super().__new__(cls)
        made._entered = Tally()  # before the kind's own __init__, which may enter calls
        return made

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("tool_transaction")
        if own is not None:
            cls.tool_transaction = _counted(own)  # type: ignore[attr-defined]

    def calls_entered(self) -> int:
        """How many tool transactions this environment has entered since it was made,
        counted where code of the agent's cannot set the count back; -1 if it broke the
        count."""
        return self._entered.read()

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _counted(transaction: Callable[..., Any]) -> Callable[..., Any]:
    """*transaction* (a kind's ``tool_transaction``), counting each call of it in the
    environment's :class:`Tally` first; once per call: a subclass's own that enters its
    base's with ``super()`` is counted by the outermost only."""

    def tool_transaction(self: ClosesOnExit, *args: Any, **kwargs: Any) -> Any:
        if getattr(type(self), "tool_transaction", None) is tool_transaction:
            self._entered.add()
        return transaction(self, *args, **kwargs)

    functools.update_wrapper(tool_transaction, transaction)
    del tool_transaction.__wrapped__  # type: ignore[attr-defined]  # no handle to the uncounted
    return tool_transaction


class ResetProbes(Protocol):
    """How to change a kind's state the way an attempt could, to prove that reset undoes it.

    A kind offers them as its ``probes`` attribute; validation and conformance use them.
    """

    def counters(self, env: Environment) -> dict[str, int]:
        """Counters that survive deleting rows, by a name saying what they are
        (``AUTOINCREMENT counter of refunds``, ``sequence refunds_refund_id_seq``)."""
        ...

    def mutate(self, env: Environment) -> list[str]:
        """Change rows and counters through the agent's own handle, in tool calls (so the
        task's permissions apply); say what was changed."""
        ...


class ConformanceProbes(Protocol):
    """How conformance checks act on a kind through its agent handle and views.

    A kind offers them as its builder's ``conformance`` attribute; without one the checks speak
    portable SQL (a relational kind). Each action raises when the kind refuses it.
    """

    def fixture(self, folder: Path) -> Path:
        """Write a small fixture of the kind into *folder*; its path."""
        ...

    def read(self, handle: Any, collection: str) -> object:
        """Read every record of *collection*."""
        ...

    def delete_all(self, handle: Any, collection: str) -> object:
        """Delete every record of *collection*."""
        ...

    def create(self, handle: Any) -> object:
        """Make something new (a table, a file)."""
        ...

    def view_writes(self, collection: str) -> list[tuple[str, Callable[[StateView], object]]]:
        """Attempts to write through a read-only view, each with a label."""
        ...


def in_tool_call(env: Environment, action: Callable[[Any], object]) -> list[str]:
    """Run *action* on the agent's handle as one tool call; the tables it changed.

    A refused or failing action rolls back and changes nothing, so it reports no table.
    """
    try:
        with env.tool_transaction() as effects:
            action(env.agent_db)
    except Exception:  # a probe's failure is a finding (nothing changed), whatever its class
        return []
    return effects.changed_tables


WHOLE_ONLY = "is not a whole number: an INTEGER column holds whole numbers on both kinds"
"""Why a write leaving a non-whole number in an INTEGER column is refused, on SQLite and on
PostgreSQL alike (SQLite keeps the REAL 2.5 there, PostgreSQL's ``bigint`` rounds it)."""


ONE_TYPE = "a column holds one type of value on both kinds (PostgreSQL's cannot hold it)"
"""Why a write leaving a value of another storage class in a typed column (text in a REAL
column, a number in a BLOB one) is refused on SQLite: PostgreSQL's typed column fails it."""


@contextmanager
def refused_writes(kind: type[Exception]) -> Iterator[None]:
    """Turn an error of the database's *kind* raised by the harness's type checks (a value
    :data:`WHOLE_ONLY` or :data:`ONE_TYPE` names) into the agent's :class:`ToolError`. The
    check is the harness's, not the tool's: a tool that stores an agent's 2.5 in an INTEGER
    column raised it, which crashed the call, an environment failure (an invalid attempt,
    run again) that the agent's arguments caused. Like a write of text that is not UTF-8,
    it is the agent's error, undone (the call's transaction is rolled back), and the agent
    is told why."""
    try:
        yield
    except kind as exc:
        refusal = write_refusal(exc)
        if refusal is None:
            raise
        raise refusal from exc


def write_refusal(exc: Exception) -> ToolError | None:
    """The :class:`ToolError` :func:`refused_writes` makes of *exc*, if it is one of the
    harness's type checks'."""
    text = str(exc)
    if WHOLE_ONLY not in text and ONE_TYPE not in text:
        return None
    return ToolError(f"the call's write was refused and undone: {text.strip()}")


def sqlite_affinity(declared: str) -> str:
    """SQLite's type affinity of a declared column type, upper-cased (its rules, in their
    order: https://sqlite.org/datatype3.html, section 3.1)."""
    if "INT" in declared:
        return "INTEGER"
    if any(word in declared for word in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if "BLOB" in declared or not declared:
        return "BLOB"
    if any(word in declared for word in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def quote(identifier: str) -> str:
    """An SQL identifier in double quotes (SQLite and PostgreSQL alike)."""
    return '"' + identifier.replace('"', '""') + '"'


def diff_snapshots(before: Snapshot, after: Snapshot) -> StateDiff:
    """Rows added, removed and changed per table, matched by primary key."""
    names = set(before.tables) | set(after.tables)
    return diff_rows(
        (
            name,
            _rows(before.tables.get(name)),
            _rows(after.tables.get(name)),
            _key(before, after, name),
        )
        for name in names
    )


def diff_rows(tables: Iterable[tuple[str, dict[str, Row], dict[str, Row], list[str]]]) -> StateDiff:
    """:func:`diff_snapshots` of tables given as (name, rows before, rows after, key
    columns), for a kind that knows the few rows it must compare."""
    diff = StateDiff()
    for name, old, new, key in sorted(tables, key=lambda table: table[0]):
        table = _diff_table(old, new, key)
        if not table.is_empty():
            diff.tables[name] = table
    return diff


def _rows(table: TableState | None) -> dict[str, Row]:
    return table.rows if table else {}


def _key(before: Snapshot, after: Snapshot, name: str) -> list[str]:
    either = after.tables.get(name) or before.tables.get(name)
    return either.key if either is not None else []


def _diff_table(old: dict[str, Row], new: dict[str, Row], key_columns: list[str]) -> TableDiff:
    if key_columns == ["rowid"]:
        old, new = _moved_rows_left_out(old, new)
    return TableDiff(
        added=[new[k] for k in sorted(new.keys() - old.keys())],
        removed=[old[k] for k in sorted(old.keys() - new.keys())],
        changed=[
            RowChange(key=_key_value(new[k], key_columns), before=old[k], after=new[k])
            for k in sorted(old.keys() & new.keys())
            if not same_row(old[k], new[k])
        ],
    )


def _moved_rows_left_out(
    old: dict[str, Row], new: dict[str, Row]
) -> tuple[dict[str, Row], dict[str, Row]]:
    """*old* and *new* without the rows that only moved to another ``rowid``.

    A row of a table without a primary key has no identity but its content, and the state
    hash leaves ``rowid`` out: a row deleted and inserted again as it was, or two rows that
    swapped contents, are no change (they were a removed and an added row, "collateral
    damage" to a ``nothing_else_changed`` whose state hash had not moved).

    Where twins make the pairing ambiguous, it is the same whatever order the rows come in
    (a whole snapshot's, by rowid, or the change tracking's, by first write): a removed row
    pairs before a changed one (a row that moved and a twin that changed, not a twin removed
    and the changed row added), and lower rowids first."""
    gone = sorted(
        (key for key, row in old.items() if not same_row(new.get(key), row)),
        key=lambda key: (key in new, _rowid(old[key])),
    )
    came: dict[Content, list[str]] = {}
    for key in sorted(new, key=lambda key: _rowid(new[key])):
        if not same_row(old.get(key), new[key]):
            came.setdefault(row_content(new[key]), []).append(key)
    if not gone or not came:
        return old, new
    old, new = dict(old), dict(new)
    for key in gone:
        same = came.get(row_content(old[key]))
        if same:
            del old[key], new[same.pop(0)]
    return old, new


def _rowid(row: Row) -> Any:
    rowid = row.get("rowid")
    return rowid if isinstance(rowid, int) else 0


def _key_value(row: Row, key_columns: list[str]) -> Any:
    values = [row.get(c) for c in key_columns]
    return values[0] if len(values) == 1 else values
