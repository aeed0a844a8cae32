"""Reset probes of the SQLite kind: change rows and AUTOINCREMENT counters as an agent could.

AUTOINCREMENT counters survive a "delete every row" reset, so the next attempt would see
different ids; a reset is only proven if it restores them too.
"""

from __future__ import annotations

import sqlite3
from functools import partial
from typing import Any

from groundstate.environments.base import Environment, in_tool_call, quote

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


class SqliteProbes:
    """The :class:`~groundstate.environments.base.ResetProbes` of SQLite environments."""

    def counters(self, env: Environment) -> dict[str, int]:
        """AUTOINCREMENT counters by table, read through the evaluator view."""
        try:
            rows = env.evaluator_view().query("SELECT name, seq FROM sqlite_sequence")
        except sqlite3.Error:  # no AUTOINCREMENT table: SQLite has not made the counter table
            return {}
        return {f"AUTOINCREMENT counter of {name}": int(seq) for name, seq in rows}

    def mutate(self, env: Environment) -> list[str]:
        # Counters first: bumping one may copy an existing row, which a deletion could remove.
        done = [
            f"bumped the AUTOINCREMENT counter of {table}"
            if _bump(env, table)
            else f"could not bump the AUTOINCREMENT counter of {table} (no row could be inserted)"
            for table in _autoincrement(env)
        ]
        for table, state in env.snapshot().tables.items():
            if _delete_one(env, table, _row_key(env, table, state.key)):
                done.append(f"deleted a row of {table}")
            elif state.rows:  # said, not skipped: this table's reset goes unprobed by a deletion
                done.append(
                    f"could not delete a row of {table} (the task's permissions or the schema "
                    "refuse it)"
                )
        return done


def _row_key(env: Environment, table: str, key: list[str]) -> list[str]:
    """What names one row of *table*: its rowid, or the primary key of a ``WITHOUT ROWID``
    table (which has no rowid: its reset went unprobed by a deletion)."""
    rows = env.evaluator_view().query(
        "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?", (table,)
    )
    return key if rows and rows[0][0] else ["rowid"]


def _delete_one(env: Environment, table: str, key: list[str]) -> bool:
    return bool(in_tool_call(env, partial(_delete_first, table=table, key=key)))


def _delete_first(db: sqlite3.Connection, table: str, key: list[str]) -> None:
    """Delete one row, read first and then deleted by *key* in a statement of its own (an
    R-tree cannot delete rows while a subquery of the same statement reads it)."""
    columns = [column if column == "rowid" else quote(column) for column in key]
    row = db.execute(f"SELECT {', '.join(columns)} FROM {quote(table)} LIMIT 1").fetchone()
    match = " AND ".join(f"{column} IS ?" for column in columns)
    if row is None or not db.execute(f"DELETE FROM {quote(table)} WHERE {match}", row).rowcount:
        raise sqlite3.DataError("nothing deleted")


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
