"""What a search table keeps besides its index, checked after a call that wrote it.

SQLite's ``integrity-check`` compares a search table's index with its rows, but not all that
the table keeps beside them, which a tool with ``write`` may write by hand through its shadow
tables (the authorizer cannot tell that from SQLite's own statements for the table):

- an FTS5 table's settings (``docs_config``): a format ``version`` FTS5 does not read made every
  later read of the table fail (the check, on the connection that had the old settings
  cached, said "ok", and the state hash, which leaves the version out, did not move); a
  ``rank`` naming no function made every ranked search fail; a key or value FTS5 refuses
  (``('foo', 1)``, ``('pgsz', 'abc')``) moved the state hash while no read changed;
- an FTS4 table's totals (``notes_stat``: the documents and tokens; ``notes_docsize``: each
  document's length): ``matchinfo`` read them, and the state hash did not.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any
from uuid import uuid4

from groundstate.environments.base import quote

Run = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]
"""A statement of the harness's on the agent connection (its rows), within the call."""


def fts5_settings_refused(run: Run, table: str) -> str | None:
    """Why FTS5 would not read *table*'s settings as the call left them, or None.

    The settings are replayed on a scratch table of as many columns: each setting but the
    format's through FTS5's own command (which refuses an unknown key or a bad value), the
    ``version`` as stored, then read by a second connection, which loads them afresh (the
    agent connection keeps the settings it loaded before the call), with a ranked search."""
    rows = run(f"SELECT k, v FROM main.{quote(f'{table}_config')}", ())
    columns = run("SELECT count(*) FROM pragma_table_info(?)", (table,))[0][0]
    name = f"file:groundstate-fts5-{uuid4().hex}?mode=memory&cache=shared"
    scratch = sqlite3.connect(name, uri=True, isolation_level=None)
    try:
        _scratch_table(scratch, columns)
        for key, value in rows:
            if key == "version":
                continue
            try:
                scratch.execute("INSERT INTO s(s, rank) VALUES (?, ?)", (key, value))
            except sqlite3.Error:
                return f"FTS5 refuses the setting {key!r} = {value!r}"
        scratch.execute("DELETE FROM s_config WHERE k = 'version'")
        scratch.executemany(
            "INSERT INTO s_config VALUES (?, ?)", [row for row in rows if row[0] == "version"]
        )
        return _ranked_search_fails(name)
    finally:
        scratch.close()


def _scratch_table(scratch: sqlite3.Connection, columns: int) -> None:
    """An FTS5 table ``s`` of *columns* columns, with one row matching ``x`` in each."""
    names = ", ".join(f"c{index}" for index in range(columns))
    scratch.execute(f"CREATE VIRTUAL TABLE s USING fts5({names})")
    marks = ", ".join("?" * columns)
    scratch.execute(f"INSERT INTO s VALUES ({marks})", ["x"] * columns)


def _ranked_search_fails(name: str) -> str | None:
    """FTS5's error reading the scratch table *name* afresh, ranked, or None."""
    reader = sqlite3.connect(name, uri=True)
    try:
        reader.execute("SELECT rank FROM s WHERE s MATCH 'x' ORDER BY rank").fetchall()
    except sqlite3.Error as exc:
        return str(exc)
    finally:
        reader.close()
    return None


def fts4_totals_refused(run: Run, table: str) -> str | None:
    """Why *table*'s totals (FTS4's ``_stat`` documents and tokens, ``_docsize`` lengths) are
    not those of its rows, or None: they are compared with a ``rebuild``'s, in a savepoint
    rolled back. A table whose content is not its own gives no verdict: a rebuild reads
    another table (whose rows the fixture may keep out of step with the index on purpose),
    or none (contentless)."""
    own = run("SELECT 1 FROM main.sqlite_master WHERE name = ?", (f"{table}_content",))
    totals = [
        f"SELECT * FROM main.{quote(name)} WHERE {where} ORDER BY 1"
        for name, where in ((f"{table}_stat", "id = 0"), (f"{table}_docsize", "1"))
        if run("SELECT 1 FROM main.sqlite_master WHERE name = ?", (name,))
    ]
    if not own or not totals:  # or FTS4 with matchinfo=fts3: no totals kept
        return None
    kept = [run(sql, ()) for sql in totals]
    run("SAVEPOINT groundstate_totals", ())
    try:
        run(f"INSERT INTO main.{quote(table)}({quote(table)}) VALUES ('rebuild')", ())
        rebuilt = [run(sql, ()) for sql in totals]
    except sqlite3.Error:
        return None
    finally:
        run("ROLLBACK TO groundstate_totals", ())
        run("RELEASE groundstate_totals", ())
    if kept != rebuilt:
        return "its document totals or lengths are not those of its rows"
    return None
