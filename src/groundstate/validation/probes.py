"""Probes that change an environment the way an agent could, and explain what a reset missed.

A reset is only proven against the kinds of change an attempt can leave behind: rows written
through the agent's own connection, the clock, and AUTOINCREMENT counters (which survive a
"delete every row" reset, so the next attempt would see different ids).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from groundstate.environments.base import Environment, Snapshot, diff_snapshots
from groundstate.errors import GroundstateError

CLOCK_STEP = 3600.0
"""Seconds the clock probe moves the clock forward."""

_PLACEHOLDERS: tuple[tuple[str, Any], ...] = (
    ("INT", 0),
    ("CHAR", ""),
    ("CLOB", ""),
    ("TEXT", ""),
    ("BLOB", b""),
    ("REAL", 0.0),
    ("FLOA", 0.0),
    ("DOUB", 0.0),
)


@dataclass(frozen=True)
class Observed:
    """What a reset must bring back: rows, the clock and the AUTOINCREMENT counters."""

    state_hash: str
    snapshot: Snapshot
    now: datetime
    counters: dict[str, int]


def observe(env: Environment) -> Observed:
    return Observed(env.state_hash(), env.snapshot(), env.now(), counters(env))


def counters(env: Environment) -> dict[str, int]:
    """AUTOINCREMENT counters by table, read through the evaluator view."""
    try:
        rows = env.evaluator_view().query("SELECT name, seq FROM sqlite_sequence")
    except sqlite3.Error:  # no AUTOINCREMENT table: SQLite has not made the counter table
        return {}
    return {str(name): int(seq) for name, seq in rows}


def explain(before: Observed, after: Observed) -> str:
    """Say which of rows, clock and counters differ between two observations."""
    parts = [
        f"rows of {name} differ" for name in diff_snapshots(before.snapshot, after.snapshot).tables
    ]
    if before.now != after.now:
        parts.append(f"clock is {after.now.isoformat()}, not {before.now.isoformat()}")
    parts += [
        f"AUTOINCREMENT counter of {name} is {after.counters.get(name)}, "
        f"not {before.counters.get(name)}"
        for name in sorted(set(before.counters) | set(after.counters))
        if before.counters.get(name) != after.counters.get(name)
    ]
    return "; ".join(parts) or "other state differs (schema?)"


def mutate_like_an_agent(env: Environment) -> list[str]:
    """Change rows, the counters and the clock as an attempt could; say what changed.

    Writes go through the agent connection inside tool calls, so the task's permissions
    apply: a table the agent may not write is left alone, as it would be in an attempt.
    """
    # Counters first: bumping one may copy an existing row, which a deletion could remove.
    done = [
        f"bumped the AUTOINCREMENT counter of {table}"
        if _bump(env, table)
        else f"could not bump the AUTOINCREMENT counter of {table} (no row could be inserted)"
        for table in _autoincrement(env)
    ]
    for table, state in env.snapshot().tables.items():
        if _delete_one(env, table):
            done.append(f"deleted a row of {table}")
        elif state.rows:  # said, not skipped: this table's reset goes unprobed by a deletion
            done.append(
                f"could not delete a row of {table} (the task's permissions or the schema "
                "refuse it)"
            )
    env.advance_clock(CLOCK_STEP)
    done.append(f"advanced the clock {CLOCK_STEP:g}s")
    return done


def in_tool_call(env: Environment, action: Callable[[sqlite3.Connection], None]) -> list[str]:
    """Run *action* on the agent connection as one tool call; the tables it changed.

    A refused or failing action rolls back and changes nothing, so it reports no table.
    """
    try:
        with env.tool_transaction() as effects:
            action(env.agent_db)
    except (sqlite3.Error, GroundstateError):
        return []
    return effects.changed_tables


def quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _delete_one(env: Environment, table: str) -> bool:
    sql = f"DELETE FROM {quote(table)} WHERE rowid IN (SELECT rowid FROM {quote(table)} LIMIT 1)"
    return bool(in_tool_call(env, lambda db: _run(db, sql)))


def _autoincrement(env: Environment) -> list[str]:
    rows = env.evaluator_view().query(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"
    )
    return [str(name) for name, sql in rows if "AUTOINCREMENT" in str(sql).upper()]


def _bump(env: Environment, table: str) -> bool:
    """Insert a row and delete it again: only the table's counter is left changed."""
    for insert in (_placeholder_row(env, table), _copied_row(env, table)):
        if in_tool_call(env, partial(_insert_and_delete, table=table, insert=insert)):
            return True
    return False


def _insert_and_delete(db: sqlite3.Connection, table: str, insert: tuple[str, list[Any]]) -> None:
    rowid = db.execute(*insert).lastrowid
    if rowid is None or db.execute("SELECT changes()").fetchone()[0] == 0:
        raise sqlite3.DataError("nothing inserted")
    db.execute(f"DELETE FROM {quote(table)} WHERE rowid = ?", (rowid,))


def _placeholder_row(env: Environment, table: str) -> tuple[str, list[Any]]:
    """An INSERT giving each required column a harmless value of its declared type."""
    info = env.evaluator_view().query(f"PRAGMA table_info({quote(table)})")
    required = [(str(c[1]), str(c[2]).upper()) for c in info if c[3] and c[4] is None and not c[5]]
    if not required:
        return f"INSERT INTO {quote(table)} DEFAULT VALUES", []
    columns = ", ".join(quote(name) for name, _ in required)
    marks = ", ".join("?" for _ in required)
    values = [_placeholder(declared) for _, declared in required]
    return f"INSERT INTO {quote(table)} ({columns}) VALUES ({marks})", values


def _copied_row(env: Environment, table: str) -> tuple[str, list[Any]]:
    """An INSERT copying an existing row without its key (for columns with CHECKs)."""
    info = env.evaluator_view().query(f"PRAGMA table_info({quote(table)})")
    columns = ", ".join(quote(str(c[1])) for c in info if not c[5])
    source = quote(table)
    return f"INSERT INTO {source} ({columns}) SELECT {columns} FROM {source} LIMIT 1", []


def _placeholder(declared: str) -> Any:
    return next((value for marker, value in _PLACEHOLDERS if marker in declared), 0)


def _run(db: sqlite3.Connection, sql: str) -> None:
    db.execute(sql)
