"""A fixture carried from SQLite to PostgreSQL, with the SQLite behaviour tasks may rely on.

Fixtures are written once, for SQLite: the ``postgres`` kind builds the fixture in SQLite (the
same loader, so ``.sql``, ``.yaml`` and ``.json`` fixtures all work), then recreates each table
in PostgreSQL: columns typed by their SQLite affinity (INTEGER -> ``bigint``, REAL -> ``double
precision``, TEXT -> ``text``, BLOB -> ``bytea``; a NUMERIC-affinity column by the values it
holds), NOT NULL, defaults, the primary key, UNIQUE constraints, CHECK constraints (copied
verbatim) and foreign keys. Triggers reproduce what SQLite does on its own: an INTEGER PRIMARY
KEY left out of an INSERT gets ``max + 1`` (with AUTOINCREMENT, never a key used before, kept in
a ``sqlite_sequence`` table), and every written row is logged for the write history.

The state hash is computed as the SQLite kind computes it, with each table's schema as the
fixture's SQLite definition (the agent role has no DDL privilege, so it cannot change it): the
same state hashes alike on both kinds, and a task's declared ``initial_state_hash`` holds on both.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from groundstate.environments.base import ONE_TYPE, WHOLE_ONLY, quote
from groundstate.environments.postgres_functions import POSITIONS, function_sql
from groundstate.environments.postgres_sql import sqlite_meaning
from groundstate.errors import FixtureNotCarried

INTERNAL = "_gs"
"""The schema of the harness's own tables (clock, counters, write log): hidden from the agent."""
API = "groundstate"
"""The schema of the functions the agent's SQL may call: ``now()`` (the controlled clock) and
the harness's write-log reader (guarded by a secret)."""
_CLASS_TYPE = {int: "bigint", float: "double precision", str: "text", bytes: "bytea"}


@dataclass(frozen=True)
class Clause:
    """One statement of a table's schema and what of the fixture it carries over."""

    what: str
    """What it is, for a message (``column refunds.at DEFAULT datetime('now')``)."""
    sql: str
    value: str | None = None
    """For a default: the SELECT giving the value PostgreSQL's column takes from it, to be
    compared with :attr:`expected`, SQLite's (``DEFAULT 1.5`` in an INTEGER column is the REAL
    1.5 in SQLite, 2 in a ``bigint``)."""
    expected: Any = None


@dataclass
class PortableTable:
    """One fixture table as PostgreSQL gets it."""

    name: str
    sqlite_sql: str
    columns: list[str]
    types: list[str]
    key: list[str]
    ddl: str
    """The CREATE TABLE: columns, NOT NULL, the primary key and UNIQUE constraints."""
    clauses: list[Clause]
    """The columns' defaults and the CHECKs, each added on its own (so a refusal names it)."""
    foreign_keys: list[Clause]
    rows: list[tuple[Any, ...]]
    rowid: str | None = None
    """The INTEGER PRIMARY KEY column (SQLite's rowid alias), if any."""
    autoincrement: bool = False
    required: list[str] = field(default_factory=list)
    """The columns an INSERT must give (NOT NULL, no default; the rowid column is filled)."""
    parents: list[str] = field(default_factory=list)
    """The tables this one's foreign keys refer to."""


@dataclass
class PortableFixture:
    """A built fixture: its tables, and the SQLite bookkeeping the state hash covers."""

    tables: list[PortableTable]
    sequence_sql: str | None
    """SQLite's ``sqlite_sequence`` definition, when the fixture has AUTOINCREMENT tables."""
    sequence: list[tuple[str, int]]
    meta_sql: str
    meta: list[tuple[str, str]] = field(default_factory=list)


def with_children(fixture: PortableFixture, names: set[str]) -> list[PortableTable]:
    """*names* and every table whose foreign keys lead to one of them, in fixture order: the
    tables that must be emptied together (a referenced table cannot be emptied alone)."""
    closure = set(names)
    grown = True
    while grown:
        more = {t.name for t in fixture.tables if set(t.parents) & closure} - closure
        closure |= more
        grown = bool(more)
    return [table for table in fixture.tables if table.name in closure]


def read_fixture(image: bytes, meta_table: str) -> PortableFixture:
    """The tables of a built SQLite fixture (its serialized image), ready for PostgreSQL."""
    connection = sqlite3.connect(":memory:")
    try:
        connection.deserialize(image)
        master = dict(
            connection.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
        )
        left_behind = not_carried(connection, meta_table)
        if left_behind:
            raise FixtureNotCarried(
                "postgres: the fixture has what this kind does not carry over from SQLite "
                f"(the agent and the graders would meet another database): "
                f"{'; '.join(left_behind)}; leave it out of the fixture, or run the suite on "
                "the sqlite kind"
            )
        tables = [
            _table(connection, name, sql)
            for name, sql in master.items()
            if not name.startswith("sqlite_") and name != meta_table
        ]
        sequence = connection.execute(
            "SELECT name, seq FROM sqlite_sequence"
            if "sqlite_sequence" in master
            else "SELECT 1 WHERE 0"
        ).fetchall()
        meta = connection.execute(f"SELECT key, value FROM {meta_table}").fetchall()
        return PortableFixture(
            tables, master.get("sqlite_sequence"), sequence, master[meta_table], meta
        )
    finally:
        connection.close()


def not_carried(connection: sqlite3.Connection, meta_table: str) -> list[str]:
    """What of a built fixture (a private copy: a probe index is made in it) would behave
    otherwise on PostgreSQL, or not be there at all, each named: triggers and views (the
    fixture's SQL is SQLite's), virtual tables, generated columns, a column or UNIQUE index
    comparing text by a collation other than BINARY (PostgreSQL's is byte order, as the
    template is made), and a UNIQUE index that is partial or on an expression."""
    found = [
        f"{kind} {name}" + (f" (on table {table})" if kind == "trigger" else "")
        for kind, name, table in connection.execute(
            "SELECT type, name, tbl_name FROM sqlite_master "
            "WHERE type IN ('trigger', 'view') ORDER BY type, name"
        )
    ]
    listed = connection.execute(
        "SELECT name, type FROM pragma_table_list WHERE schema = 'main' "
        "AND type IN ('table', 'virtual') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
        "AND name <> ? ORDER BY name",
        (meta_table,),
    ).fetchall()
    for table, kind in listed:
        if kind == "virtual":
            found.append(f"virtual table {table}")
            continue
        info = connection.execute(f"PRAGMA table_xinfo({quote(table)})").fetchall()
        found += [f"generated column {table}.{c[1]}" for c in info if c[6] in (2, 3)]
        own = dict(_collations(connection, table, [str(c[1]) for c in info]))
        found += [
            f"column {table}.{column} (COLLATE {collation})"
            for column, collation in own.items()
            if collation != "BINARY"
        ]
        found += _odd_uniques(connection, table, own)
    return found


def _collations(
    connection: sqlite3.Connection, table: str, columns: list[str]
) -> list[tuple[str, str]]:
    """Each column's own collation, as an index on it takes it by default."""
    probe = quote(f"_gs_probe_{table}")
    connection.execute(f"CREATE INDEX {probe} ON {quote(table)} ({', '.join(map(quote, columns))})")
    try:
        info = connection.execute(f"PRAGMA index_xinfo({probe})").fetchall()
        return [(str(row[2]), str(row[4]).upper()) for row in info if row[5]]
    finally:
        connection.execute(f"DROP INDEX {probe}")


def _odd_uniques(connection: sqlite3.Connection, table: str, own: dict[str, str]) -> list[str]:
    """The table's UNIQUE indexes PostgreSQL's UNIQUE constraint would not be: partial, on an
    expression, or with a collation other than BINARY (not said again of a column whose
    own collation it is: *own*)."""
    found = []
    for index in connection.execute(f"PRAGMA index_list({quote(table)})").fetchall():
        if not index[2] or index[3] == "pk":
            continue
        keys = [c for c in connection.execute(f"PRAGMA index_xinfo({quote(index[1])})") if c[5]]
        name = f"UNIQUE index {index[1]} of {table}"
        if index[4]:
            found.append(f"{name} (partial: WHERE)")
        if any(c[2] is None for c in keys):
            found.append(f"{name} (on an expression)")
        found += [
            f"{name} (COLLATE {c[4]} on {c[2]})"
            for c in keys
            if c[2] is not None and str(c[4]).upper() not in ("BINARY", own.get(c[2]))
        ]
    return found


def _table(connection: sqlite3.Connection, name: str, sql: str) -> PortableTable:
    info = connection.execute(f"PRAGMA table_info({quote(name)})").fetchall()
    rows = connection.execute(f"SELECT * FROM {quote(name)}").fetchall()
    columns = [str(column[1]) for column in info]
    key = [str(c[1]) for c in sorted(info, key=lambda c: c[5]) if c[5] > 0]
    if not key:
        raise FixtureNotCarried(
            f"postgres: table {name} has no primary key (the postgres kind keys rows by it)"
        )
    types = [_pg_type(name, column, rows, i) for i, column in enumerate(info)]
    rowid = key[0] if len(key) == 1 and _declared(info, key[0]) == "INTEGER" else None
    definitions = [
        f"{quote(str(c[1]))} {types[i]}{' NOT NULL' if c[3] else ''}" for i, c in enumerate(info)
    ]
    definitions.append(f"PRIMARY KEY ({', '.join(quote(c) for c in key)})")
    definitions += [f"UNIQUE ({', '.join(map(quote, u))})" for u in _uniques(connection, name)]
    table = f"public.{quote(name)}"
    clauses = [
        _default(connection, name, c, types[i]) for i, c in enumerate(info) if c[4] is not None
    ]
    clauses += [  # a CHECK's LIKE as SQLite means it (see postgres_sql)
        Clause(
            f"CHECK {check} of table {name}",
            f"ALTER TABLE {table} ADD CHECK {sqlite_meaning(check)}",
        )
        for check in check_clauses(sql)
    ]
    return PortableTable(
        name=name,
        sqlite_sql=sql,
        columns=columns,
        types=types,
        key=key,
        ddl=f"CREATE TABLE {table} ({', '.join(definitions)})",
        clauses=clauses,
        foreign_keys=_foreign_keys(connection, name),
        parents=sorted(
            {str(fk[2]) for fk in connection.execute(f"PRAGMA foreign_key_list({quote(name)})")}
        ),
        rows=rows,
        rowid=rowid,
        autoincrement="AUTOINCREMENT" in sql.upper(),
        required=[str(c[1]) for c in info if c[3] and c[4] is None and c[1] != rowid],
    )


_CLOCK_DEFAULTS = {
    "CURRENT_TIMESTAMP": "YYYY-MM-DD HH24:MI:SS",
    "CURRENT_DATE": "YYYY-MM-DD",
    "CURRENT_TIME": "HH24:MI:SS",
}
"""SQLite's clock keywords as the text it gives (the SQLite kind answers them on the task's
clock), written on the harness's clock: PostgreSQL's own keywords read the server's clock and
give another text (``2026-12-04 11:10:00.123+00``)."""


def _default(connection: sqlite3.Connection, table: str, column: Any, pg_type: str) -> Clause:
    """The clause setting a column's default, with the value SQLite stores from it (the
    column's affinity applied, in a scratch table of this private copy)."""
    what = f"column {table}.{column[1]} DEFAULT {column[4]}"
    target = f"ALTER TABLE public.{quote(table)} ALTER COLUMN {quote(str(column[1]))}"
    clock = _CLOCK_DEFAULTS.get(str(column[4]).strip("() \t\n").upper())
    if clock is not None:
        return Clause(
            what, f"{target} SET DEFAULT to_char({API}.now() AT TIME ZONE 'UTC', '{clock}')"
        )
    probe = quote(f"_gs_default_{table}")
    try:
        connection.execute(
            f"CREATE TEMP TABLE {probe} (v {column[2]} DEFAULT ({column[4]}), w INTEGER)"
        )
        connection.execute(f"INSERT INTO {probe} (w) VALUES (1)")
        expected = connection.execute(f"SELECT v FROM {probe}").fetchone()[0]
    except sqlite3.Error:  # not a value SQLite computes alone: PostgreSQL's word decides
        return Clause(what, f"{target} SET DEFAULT {column[4]}")
    finally:
        connection.execute(f"DROP TABLE IF EXISTS {probe}")
    return Clause(
        what,
        f"{target} SET DEFAULT {column[4]}",
        value=f"SELECT CAST(({column[4]}) AS {pg_type})",
        expected=expected,
    )


def _declared(info: list[Any], column: str) -> str:
    return next(str(c[2]).upper() for c in info if c[1] == column)


def _pg_type(table: str, column: Any, rows: list[Any], index: int) -> str:
    """The PostgreSQL type of a column, by SQLite's affinity rules; every value must fit it.

    A column of no affinity (no declared type, or BLOB) holding other than bytes, and one of
    NUMERIC affinity (``DECIMAL``, ``BOOLEAN``...) other than dates, have no PostgreSQL type
    that behaves alike: SQLite keeps ``2.5`` and ``3`` as given in a NUMERIC column where a
    ``bigint`` rounds ``2.5`` to 3 and a ``double precision`` turns ``3`` into ``3.0``, and it
    compares a column of no affinity with ``'5'`` as text where a typed column converts it."""
    declared = str(column[2]).upper()
    classes = {type(row[index]) for row in rows} - {type(None)}
    if "INT" in declared:
        wanted = "bigint"
    elif any(word in declared for word in ("CHAR", "CLOB", "TEXT")):
        wanted = "text"
    elif any(word in declared for word in ("REAL", "FLOA", "DOUB")):
        wanted = "double precision"
    elif "BLOB" in declared or not declared:
        if classes - {bytes}:
            raise _unlike(
                table,
                column,
                "has no type affinity (SQLite stores and compares "
                "its values as given, a typed PostgreSQL column converts them)",
            )
        wanted = "bytea"
    elif ("DATE" in declared or "TIME" in declared) and classes <= {str}:
        wanted = "text"  # NUMERIC affinity holding dates as text (or nothing yet)
    else:
        raise _unlike(
            table,
            column,
            "has NUMERIC affinity (SQLite keeps 2.5 and 3 as given, "
            "PostgreSQL's bigint rounds 2.5 and its double precision makes 3 3.0)",
        )
    odd = next(
        (row[index] for row in rows if _CLASS_TYPE.get(type(row[index]), wanted) != wanted), None
    )
    if odd is not None:
        raise _mixed(table, column, classes, odd, wanted)
    return wanted


def _unlike(table: str, column: Any, reason: str) -> FixtureNotCarried:
    declared = str(column[2]) or "no type"
    return FixtureNotCarried(
        f"postgres: column {table}.{column[1]} ({declared}) {reason}; declare it INTEGER, "
        "REAL, TEXT or BLOB (of bytes) so both kinds store and compare it alike"
    )


def _mixed(
    table: str, column: Any, classes: set[type], value: Any, wanted: str
) -> FixtureNotCarried:
    """A column holding a value its PostgreSQL type would not keep as SQLite does (2.5 in an
    INTEGER column, 'x' in a REAL one, or 1 and 'one' together), naming one such value."""
    names = ", ".join(sorted(_SQLITE_CLASS[c] for c in classes))
    declared = str(column[2]) or "no type"
    return FixtureNotCarried(
        f"postgres: column {table}.{column[1]} ({declared}) holds {names} values, such as "
        f"{value!r}, which PostgreSQL's {wanted} column would convert or refuse; the postgres "
        "kind needs every value of a column to be of the column's type"
    )


_SQLITE_CLASS = {int: "INTEGER", float: "REAL", str: "TEXT", bytes: "BLOB"}


def _uniques(connection: sqlite3.Connection, table: str) -> list[list[str]]:
    found = []
    for index in connection.execute(f"PRAGMA index_list({quote(table)})").fetchall():
        if index[2] and index[3] != "pk":
            info = connection.execute(f"PRAGMA index_info({quote(index[1])})").fetchall()
            if all(column[2] is not None for column in info):
                found.append([str(column[2]) for column in info])
    return found


def _foreign_keys(connection: sqlite3.Connection, table: str) -> list[Clause]:
    groups: dict[int, list[Any]] = {}
    for row in connection.execute(f"PRAGMA foreign_key_list({quote(table)})").fetchall():
        groups.setdefault(row[0], []).append(row)
    statements = []
    for rows in groups.values():
        parent, update, delete = rows[0][2], rows[0][5], rows[0][6]
        source = ", ".join(quote(r[3]) for r in rows)
        target = "" if rows[0][4] is None else f" ({', '.join(quote(r[4]) for r in rows)})"
        sql = (
            f"ALTER TABLE public.{quote(table)} ADD FOREIGN KEY ({source}) REFERENCES "
            f"public.{quote(parent)}{target} ON UPDATE {update} ON DELETE {delete} "
            "DEFERRABLE INITIALLY IMMEDIATE"  # immediate, as in SQLite; deferred by reloads
        )
        statements.append(Clause(f"the foreign key ({source}) of table {table} to {parent}", sql))
    return statements


def check_clauses(sql: str) -> list[str]:
    """The ``(...)`` of every CHECK in a CREATE TABLE statement, outside strings and names."""
    clauses, i, quote_char = [], 0, None
    upper = sql.upper()
    while i < len(sql):
        char = sql[i]
        if quote_char is not None:
            quote_char = None if char == quote_char else quote_char
        elif char in "'\"`[":
            quote_char = "]" if char == "[" else char
        elif upper.startswith("CHECK", i) and _boundary(sql, i - 1) and _boundary(sql, i + 5):
            start = sql.index("(", i)
            end = _closing(sql, start)
            clauses.append(sql[start : end + 1])
            i = end
        i += 1
    return clauses


def _boundary(sql: str, i: int) -> bool:
    return i < 0 or i >= len(sql) or not (sql[i].isalnum() or sql[i] == "_")


def _closing(sql: str, start: int) -> int:
    depth, quote_char = 0, None
    for i in range(start, len(sql)):
        char = sql[i]
        if quote_char is not None:
            quote_char = None if char == quote_char else quote_char
        elif char in "'\"":
            quote_char = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i
    raise FixtureNotCarried(f"postgres: unbalanced CHECK in {sql[:80]!r}")


# --- the SQL that sets a template database up --------------------------------------------------


def _position(name: str, kind: str) -> str:
    """A position as SQLite takes it: a REAL truncated to its integer."""
    if kind != "double precision":
        return f"{name}::bigint"
    return f"int8(trunc(greatest(least({name}, 9.2e18), -9.2e18)))"


_SQLITE_FUNCTIONS = {
    "substr(x text, p1 bigint, p2 bigint) RETURNS text LANGUAGE plpgsql": (
        "DECLARE len bigint := char_length(x); neg boolean := p2 < 0; BEGIN "
        "IF neg THEN p2 := -p2; END IF; "
        "IF p1 < 0 THEN p1 := p1 + len; "
        "IF p1 < 0 THEN p2 := greatest(p2 + p1, 0); p1 := 0; END IF; "
        "ELSIF p1 > 0 THEN p1 := p1 - 1; ELSIF p2 > 0 THEN p2 := p2 - 1; END IF; "
        "IF neg THEN p1 := p1 - p2; IF p1 < 0 THEN p2 := p2 + p1; p1 := 0; END IF; END IF; "
        "RETURN substr(x, least(p1 + 1, 2000000000)::int, "
        "least(greatest(p2, 0), 2000000000)::int); END"
    ),
    # every pair of integer types (a parameter's small integer is a smallint): with only
    # some, substr(s, ?) matched several after casts and PostgreSQL refused it as ambiguous
    **{
        f"{name}(x text, p1 {one}, p2 {two}) RETURNS text LANGUAGE sql": (
            f"SELECT {API}.substr(x, {_position('p1', one)}, {_position('p2', two)})"
        )
        for name in ("substr", "substring")
        for one in POSITIONS
        for two in POSITIONS
        if (name, one, two) != ("substr", "bigint", "bigint")
    },
    **{
        f"{name}(x text, p1 {one}) RETURNS text LANGUAGE sql": (
            f"SELECT {API}.substr(x, {_position('p1', one)}, 1000000000::bigint)"
        )
        for name in ("substr", "substring")
        for one in POSITIONS
    },
    "round(r double precision) RETURNS double precision LANGUAGE sql": (
        "SELECT CASE WHEN abs(r) >= 9.2e18 OR r <> r THEN r WHEN r >= 0 THEN trunc(r + 0.5) "
        "ELSE -trunc(-r + 0.5) END"
    ),
    "round(r double precision, n bigint) RETURNS double precision LANGUAGE sql": (
        f"SELECT CASE WHEN least(greatest(n, 0), 30) = 0 THEN {API}.round(r) "
        "ELSE round(r::numeric, least(greatest(n, 0), 30)::int)::double precision END"
    ),
    **{
        f"round(r double precision, n {kind}) RETURNS double precision LANGUAGE sql": (
            f"SELECT {API}.round(r, {_position('n', kind)})"
        )
        for kind in POSITIONS
        if kind != "bigint"
    },
}
"""SQLite's ``substr`` (a negative start counts from the end, a negative length takes the
characters before) and ``round`` of a REAL (half away from zero; PostgreSQL's rounds half to
even, and has no ``round(double precision, integer)``), first on the agent's and graders'
``search_path``, so the same call gives the same value; each also for ``bigint`` arguments (an
INTEGER column's type), which PostgreSQL's own do not take."""

_INT64 = "9223372036854775807"
_INTEGER_CASTS = {
    "cast_integer(v bigint) RETURNS bigint LANGUAGE sql": "SELECT v",
    "cast_integer(v integer) RETURNS bigint LANGUAGE sql": "SELECT int8(v)",
    "cast_integer(v boolean) RETURNS bigint LANGUAGE sql": "SELECT int8(int4(v))",
    "cast_integer(v double precision) RETURNS bigint LANGUAGE sql": (
        f"SELECT CASE WHEN v <> v THEN 0 WHEN v >= float8 '{_INT64}' THEN {_INT64} "
        f"WHEN v <= -float8 '{_INT64}' THEN -{_INT64} - 1 ELSE int8(trunc(v)) END"
    ),
    "cast_integer(v numeric) RETURNS bigint LANGUAGE sql": (
        f"SELECT CASE WHEN v <> v THEN 0 WHEN v >= {_INT64} THEN {_INT64} "
        f"WHEN v <= -{_INT64} - 1 THEN -{_INT64} - 1 ELSE int8(trunc(v)) END"
    ),
    "cast_integer(v text) RETURNS bigint LANGUAGE sql": (
        "SELECT coalesce(groundstate.cast_integer("
        r"CAST(substring(v from '^[ \t\n\f\r\v]*([+-]?[0-9]+)') AS numeric)), 0)"
    ),
    "cast_real(v double precision) RETURNS double precision LANGUAGE sql": "SELECT v",
    "cast_real(v bigint) RETURNS double precision LANGUAGE sql": "SELECT float8(v)",
    "cast_real(v integer) RETURNS double precision LANGUAGE sql": "SELECT float8(v)",
    "cast_real(v numeric) RETURNS double precision LANGUAGE sql": "SELECT float8(v)",
    "cast_real(v boolean) RETURNS double precision LANGUAGE sql": "SELECT float8(int4(v))",
    "cast_real(v text) RETURNS double precision LANGUAGE sql": (
        "SELECT coalesce(CAST(substring(v from "
        r"'^[ \t\n\f\r\v]*([+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)') "
        "AS double precision), 0.0)"
    ),
}
"""SQLite's ``CAST(x AS INTEGER)`` (any type name holding ``INT``), which ``sqlite_meaning``
writes as ``groundstate.cast_integer(x)``: 64 bits, clamped, text read by its leading
digits (0 if none); and ``CAST(x AS REAL)``, ``groundstate.cast_real(x)``: a double, text
read by its leading number (0.0 if none)."""
_INTEGERS = ("smallint", "integer", "bigint")
_ZERO_DIVISORS = [
    *[(left, right) for left in _INTEGERS for right in _INTEGERS],
    ("numeric", "numeric"),
    ("double precision", "double precision"),
]
"""The operand types of PostgreSQL's own ``/`` and ``%`` an expression of the agent's or a
grader's SQL can reach by an exact match (other pairs are converted to one of these)."""


def _wider(left: str, right: str) -> str:
    """The type of ``left / right`` (of the pairs in ``_ZERO_DIVISORS``): a 64-bit integer
    of integers, as SQLite's (a parameter's small integer is a ``smallint``)."""
    return "bigint" if left in _INTEGERS else left


def arithmetic_sql() -> list[str]:
    """SQLite's ``/`` and ``%``: NULL for a zero divisor (PostgreSQL's "division by zero"
    failed a tool's or grader's ``a / b`` that SQLite answered), and ``%`` of a REAL the
    remainder of the integers, as a REAL (``5.5 % 2`` is ``1.0``; PostgreSQL has no ``%`` of
    a ``double precision``). First on the ``search_path``: an operator of the same operand
    types earlier on the path is the one taken."""
    statements = []
    for left, right in _ZERO_DIVISORS:
        for op, name in (("/", "div"), ("%", "mod")):
            function = f"{API}.{name}_{left.split()[0]}_{right.split()[0]}"
            if op == "%" and left == "double precision":
                body = (
                    "SELECT CASE WHEN trunc(r) = 0 THEN NULL "
                    f"ELSE float8({API}.cast_integer(l) % {API}.cast_integer(r)) END"
                )
            else:
                body = f"SELECT CASE WHEN r = 0 THEN NULL ELSE l {op} r END"
            statements += [
                f"CREATE FUNCTION {function}(l {left}, r {right}) RETURNS {_wider(left, right)} "
                "IMMUTABLE STRICT LANGUAGE sql SET search_path = pg_catalog AS "
                f"$gs${body}$gs$",
                f"CREATE OPERATOR {API}.{op} (LEFTARG = {left}, RIGHTARG = {right}, "
                f"FUNCTION = {function})",
            ]
    return statements


def _real_sum(s: str, v: str) -> str:
    """SQL for *s* + *v* (REALs, either NULL) as SQLite's: ``Inf`` past the double range
    (PostgreSQL's addition fails with "value out of range: overflow", so a ``sum(r)`` or
    ``avg(r)`` SQLite answered failed)."""
    return (
        f"CASE WHEN {v} IS NULL THEN {s} WHEN {s} IS NULL THEN {v} "
        f"WHEN sign({s}) = sign({v}) AND abs({v}) > float8 '1.7976931348623157e308' - abs({s}) "
        f"THEN sign({s}) * float8 'Infinity' ELSE {s} + {v} END"
    )


def _avg_sql() -> list[str]:
    """SQLite's ``avg``: a REAL, also of integers (PostgreSQL's ``avg(bigint)`` is a
    ``numeric``, read back as ``4`` where SQLite gives ``4.0``, and a grader's or tool's
    answer read otherwise), and of REALs the sum over the count (PostgreSQL's also sums the
    squares, and failed on a value past 1e154). First on the ``search_path``, for INTEGER
    columns' ``bigint`` and REAL columns' ``double precision``."""
    step, final = f"{INTERNAL}.avg_step", f"{INTERNAL}.avg_final"
    statements = [
        f"CREATE FUNCTION {final}(s double precision[]) RETURNS double precision IMMUTABLE "
        "LANGUAGE sql SET search_path = pg_catalog AS "
        "$gs$SELECT CASE WHEN s[2] = 0 THEN NULL ELSE s[1] / s[2] END$gs$",
    ]
    for kind in ("bigint", "integer", "double precision"):
        statements += [
            f"CREATE FUNCTION {step}(s double precision[], v {kind}) "
            "RETURNS double precision[] IMMUTABLE LANGUAGE sql SET search_path = pg_catalog AS "
            "$gs$SELECT CASE WHEN v IS NULL THEN s ELSE ARRAY["
            f"{_real_sum('s[1]', 'float8(v)')}, s[2] + 1] END$gs$",
            f"CREATE AGGREGATE {API}.avg({kind}) (SFUNC = {step}, STYPE = double precision[], "
            f"FINALFUNC = {final}, INITCOND = '{{0,0}}')",
        ]
    return statements


def _sum_sql() -> list[str]:
    """SQLite's ``sum`` of integers: an integer, and an error past 2^63 (SQLite's "integer
    overflow"; PostgreSQL's ``sum(bigint)`` is a ``numeric`` that carries on, so a grader's
    or tool's ``sum(qty)`` was a number on one kind and an error on the other); of REALs
    ``Inf`` past the double range (:func:`_real_sum`). ``total`` is SQLite's too: a REAL, 0.0 of
    no rows (PostgreSQL has none), ``Inf`` past the range."""
    add = f"{INTERNAL}.real_add"
    return [
        f"CREATE FUNCTION {add}(s double precision, v double precision) "
        "RETURNS double precision IMMUTABLE LANGUAGE sql SET search_path = pg_catalog AS "
        f"$gs$SELECT {_real_sum('s', 'v')}$gs$",
        f"CREATE AGGREGATE {API}.sum(bigint) (SFUNC = pg_catalog.int8pl, STYPE = bigint)",
        f"CREATE AGGREGATE {API}.sum(double precision) (SFUNC = {add}, STYPE = double precision)",
        f"CREATE AGGREGATE {API}.total(double precision) "
        f"(SFUNC = {add}, STYPE = double precision, INITCOND = '0')",
    ]


_REAL_TEXT = (
    "DECLARE x double precision := v; t text; i text; f text; d text; e int; r text; BEGIN "
    "IF x = 'Infinity' THEN RETURN 'Inf'; ELSIF x = '-Infinity' THEN RETURN '-Inf'; "
    "ELSIF x <> x THEN RETURN 'NaN'; ELSIF x = 0 THEN RETURN '0.0'; END IF; "
    # a double as numeric has its 15 significant digits (DBL_DIG), written out in full
    "t := format('%s', abs(x)::numeric); i := split_part(t, '.', 1); f := split_part(t, '.', 2); "
    "IF i <> '0' THEN e := length(i) - 1; d := i || f; "
    "ELSE e := length(ltrim(f, '0')) - length(f) - 1; d := ltrim(f, '0'); END IF; "
    "d := rtrim(d, '0'); "
    "IF e < -4 OR e >= 15 THEN r := left(d, 1) || '.' || coalesce(nullif(substr(d, 2), ''), "
    "'0') || 'e' || CASE WHEN e < 0 THEN '-' ELSE '+' END || "
    "CASE WHEN abs(e) < 10 THEN '0' ELSE '' END || abs(e); "
    "ELSIF e < 0 THEN r := '0.' || repeat('0', -e - 1) || d; "
    "ELSIF length(d) <= e + 1 THEN r := d || repeat('0', e + 1 - length(d)) || '.0'; "
    "ELSE r := left(d, e + 1) || '.' || substr(d, e + 2); END IF; "
    "RETURN CASE WHEN x < 0 THEN '-' || r ELSE r END; END"
)
"""SQLite's text of a REAL (``%!.15g``: 15 digits, ``1.0`` not ``1``, ``1.0e+20``)."""


def cast_sql() -> list[str]:
    """Casts as SQLite's, where PostgreSQL's would silently give another value (the server's
    catalog of this database is changed: only a superuser may, see ``_load``).

    - A non-whole REAL or decimal written to an INTEGER column (``bigint``) is refused, naming
      the value: SQLite keeps the REAL 2.5 in it, PostgreSQL rounded it to 2 (or 3), and the
      stored state differed without a word. The SQLite kind refuses the same write.
    - ``CAST(x AS INTEGER)`` of a REAL or decimal truncates toward zero, as SQLite's does
      (PostgreSQL's rounds: ``CAST(2.7 AS INTEGER)`` was 3 against SQLite's 2).
    - Bytes written to a TEXT column are refused (PostgreSQL stored their ``\\x`` hex text;
      the SQLite kind refuses a blob in a TEXT column: ``sqlite_writes._held``).
    - A REAL as text (``CAST(r AS TEXT)``, a REAL written to a TEXT column) is SQLite's text:
      ``1.0``, not PostgreSQL's ``1``; a decimal too (``1.5`` and ``1e20`` in SQL are
      PostgreSQL's ``numeric``, SQLite's REAL)."""
    statements = []
    for source in ("double precision", "real", "numeric"):
        whole, truncated = f"{INTERNAL}.whole", f"{INTERNAL}.truncated"
        statements += [
            f"CREATE FUNCTION {whole}(v {source}) RETURNS bigint IMMUTABLE STRICT "
            "LANGUAGE plpgsql SET search_path = pg_catalog AS $gs$BEGIN IF v <> trunc(v) THEN "
            f"RAISE EXCEPTION '% {WHOLE_ONLY}', v USING ERRCODE = '22003'; END IF; "
            "RETURN int8(v); END$gs$",
            f"CREATE FUNCTION {truncated}(v {source}) RETURNS integer IMMUTABLE STRICT "
            "LANGUAGE sql SET search_path = pg_catalog AS $gs$SELECT int4(trunc(v))$gs$",
            _recast(source, "bigint", f"{whole}({source})"),
            _recast(source, "integer", f"{truncated}({source})"),
        ]
    refused = f"{INTERNAL}.bytes_text(v bytea)"
    statements.append(
        f"CREATE FUNCTION {refused} RETURNS text IMMUTABLE STRICT LANGUAGE plpgsql "
        "SET search_path = pg_catalog AS $gs$BEGIN RAISE EXCEPTION 'bytes are not text: "
        f"{_escaped(ONE_TYPE)}' USING ERRCODE = '42804'; END$gs$"
    )
    statements += [
        f"CREATE CAST (bytea AS {target}) WITH FUNCTION {refused} AS ASSIGNMENT"
        for target in ("text", "varchar")
    ]
    statements += _truth_casts()
    texts = [(source, f"{INTERNAL}.real_text(v {source})") for source in ("float8", "numeric")]
    for source, function in texts:  # a literal 1.5 or 1e20 is a numeric: SQLite's REAL
        statements.append(
            f"CREATE FUNCTION {function} RETURNS text IMMUTABLE STRICT LANGUAGE plpgsql "
            f"SET search_path = pg_catalog AS $gs${_REAL_TEXT}$gs$"
        )
        statements += [
            f"CREATE CAST ({source} AS {target}) WITH FUNCTION {function} AS ASSIGNMENT"
            for target in ("text", "varchar")
        ]
    return statements


def _truth_casts() -> list[str]:
    """A comparison's value written to a column as SQLite's integer 1 or 0 (SQLite has no
    boolean): ``SET note = (qty = code)`` stored ``'true'`` in a TEXT column on PostgreSQL
    (``'1'`` on SQLite), and failed on an INTEGER or REAL one."""
    text, number = f"{INTERNAL}.truth_text", f"{INTERNAL}.truth_number"
    statements = [
        f"CREATE FUNCTION {text}(v boolean) RETURNS text IMMUTABLE STRICT LANGUAGE sql "
        "SET search_path = pg_catalog AS $gs$SELECT CASE WHEN v THEN '1' ELSE '0' END$gs$",
        f"CREATE FUNCTION {number}(v boolean) RETURNS bigint IMMUTABLE STRICT LANGUAGE sql "
        "SET search_path = pg_catalog AS $gs$SELECT int8(int4(v))$gs$",
        f"CREATE FUNCTION {number}_real(v boolean) RETURNS double precision IMMUTABLE STRICT "
        "LANGUAGE sql SET search_path = pg_catalog AS $gs$SELECT float8(int4(v))$gs$",
        f"CREATE CAST (boolean AS bigint) WITH FUNCTION {number}(boolean) AS ASSIGNMENT",
        f"CREATE CAST (boolean AS double precision) WITH FUNCTION {number}_real(boolean) "
        "AS ASSIGNMENT",
    ]
    return statements + [
        _recast("boolean", target, f"{text}(boolean)") for target in ("text", "varchar")
    ]


_OPERATORS = {"=": "eq", "<>": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
_NUMBER_TYPES = ("smallint", "integer", "bigint", "numeric", "double precision")
_NUMERIC_TEXT = r"^\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*$"
"""A text SQLite's NUMERIC affinity turns into a number."""


def comparison_sql() -> list[str]:
    """Text compared with a number as SQLite compares them, where PostgreSQL has no such
    operator (an error: a tool's ``WHERE code = 5`` or ``sku = ?`` with a number failed on
    PostgreSQL and ran on SQLite). First on the ``search_path``, for each number type:

    - text and a number (``code = 5``): the number as text (SQLite gives a TEXT column's
      affinity to a literal or parameter), compared as text;
    - a number and text (``qty < '5'``): the text as a number when it reads as one (SQLite's
      NUMERIC affinity), else the number is less than any text (SQLite's type order).

    Both sides columns (SQLite: by number) and text made by an expression (no affinity: by type
    order) are not told apart: the first rule is taken."""
    statements = []
    for kind in _NUMBER_TYPES:
        tag = kind.split()[0]
        for op, name in _OPERATORS.items():
            text_number, number_text = f"{API}.tn_{name}_{tag}", f"{API}.nt_{name}_{tag}"
            below = "true" if op in ("<", "<=", "<>") else "false"
            statements += [
                f"CREATE FUNCTION {text_number}(l text, r {kind}) RETURNS boolean IMMUTABLE "
                "STRICT LANGUAGE sql SET search_path = pg_catalog AS "
                f"$gs$SELECT l {op} CAST(r AS text)$gs$",
                f"CREATE FUNCTION {number_text}(l {kind}, r text) RETURNS boolean IMMUTABLE "
                "STRICT LANGUAGE sql SET search_path = pg_catalog AS "
                f"$gs$SELECT CASE WHEN r ~ '{_NUMERIC_TEXT}' THEN l {op} CAST(r AS numeric) "
                f"ELSE {below} END$gs$",
                f"CREATE OPERATOR {API}.{op} (LEFTARG = text, RIGHTARG = {kind}, "
                f"FUNCTION = {text_number})",
                f"CREATE OPERATOR {API}.{op} (LEFTARG = {kind}, RIGHTARG = text, "
                f"FUNCTION = {number_text})",
            ]
    return statements


def _recast(source: str, target: str, function: str) -> str:
    return (
        f"UPDATE pg_catalog.pg_cast SET castfunc = '{function}'::regprocedure "
        f"WHERE castsource = '{source}'::regtype AND casttarget = '{target}'::regtype"
    )


def clock_sql() -> list[str]:
    """The harness's schemas, its clock and ``now()``, and SQLite's functions: made before the
    fixture's tables, whose ``DEFAULT CURRENT_TIMESTAMP`` and kin read the clock."""
    functions = [
        f"CREATE FUNCTION {API}.{signature} IMMUTABLE STRICT "
        f"SET search_path = pg_catalog AS $gs${body}$gs$"
        for signature, body in {**_SQLITE_FUNCTIONS, **_INTEGER_CASTS}.items()
    ]
    return [
        f"CREATE SCHEMA {INTERNAL}",
        f"CREATE SCHEMA {API}",
        *functions,
        *function_sql(),
        *_avg_sql(),
        *_sum_sql(),
        *comparison_sql(),
        *arithmetic_sql(),
        f"CREATE TABLE {INTERNAL}.meta (key text PRIMARY KEY, value text)",
        _function(
            f"{API}.now()",
            "timestamptz",
            # The clock's own offset, as SQLite reads it (a cast to timestamp dropped it:
            # 01:00+02:00 was 01:00 UTC here, 23:00 the day before there); none is UTC.
            f"SELECT CASE WHEN value ~ '[+-][0-9][0-9]:[0-9][0-9](:[0-9.]+)?$' "
            "THEN value::timestamptz ELSE value::timestamp AT TIME ZONE 'UTC' END "
            f"FROM {INTERNAL}.meta WHERE key = 'now'",
            language="sql",
            volatility="STABLE",
        ),
    ]


def harness_sql(fixture: PortableFixture, agent: str, evaluator: str) -> list[str]:
    """The harness's other tables, functions and triggers, and the role-wide grants."""
    statements = [
        "REVOKE CREATE ON SCHEMA public FROM PUBLIC",
        f"CREATE TABLE {INTERNAL}.secret (value text)",
        f"CREATE TABLE {INTERNAL}.sqlite_sequence (name text PRIMARY KEY, seq bigint)",
        f"CREATE TABLE {INTERNAL}.writes "
        "(seq bigint PRIMARY KEY, tbl int, op text, before_row json, after_row json)",
        _function(
            f"{API}.take_writes(secret text)",
            "TABLE(seq bigint, tbl int, op text, before_row json, after_row json)",
            f"BEGIN IF secret IS DISTINCT FROM (SELECT value FROM {INTERNAL}.secret) THEN "
            "RAISE insufficient_privilege USING MESSAGE = 'permission denied for write log'; "
            f"END IF; RETURN QUERY DELETE FROM {INTERNAL}.writes w "
            "RETURNING w.seq, w.tbl, w.op, w.before_row, w.after_row; END",
        ),
        _function(
            f"{INTERNAL}.log_write()",
            "trigger",
            f"BEGIN INSERT INTO {INTERNAL}.writes SELECT coalesce(max(seq), 0) + 1, "
            "TG_ARGV[0]::int, lower(TG_OP), "
            # json, not jsonb: jsonb's numbers have no -0, which a double precision can hold
            "CASE WHEN TG_OP <> 'INSERT' THEN to_json(OLD) END, "
            f"CASE WHEN TG_OP <> 'DELETE' THEN to_json(NEW) END FROM {INTERNAL}.writes; "
            "RETURN NULL; END",
        ),
        _function(
            f"{API}.take_lastrowid()",
            "bigint",
            "DECLARE v text := current_setting('groundstate.lastrowid', true); BEGIN "
            "PERFORM set_config('groundstate.lastrowid', '', true); "
            "RETURN nullif(v, '')::bigint; END",
        ),
        f"GRANT USAGE ON SCHEMA {API} TO {quote(agent)}, {quote(evaluator)}",
        # What a plain SELECT could otherwise leave behind, unseen by the state hash: session
        # settings past the call (set_config(..., false): another search_path reads the
        # server's clock) and large objects, which outlive a reset and a pooled database.
        _REVOKE_SIDE_DOORS,
        "REVOKE SELECT ON pg_catalog.pg_stat_activity FROM PUBLIC",
    ]
    for index, table in enumerate(fixture.tables):
        statements += _table_triggers(index, table)
        statements.append(f"GRANT SELECT ON public.{quote(table.name)} TO {quote(evaluator)}")
    return statements


_SIDE_DOORS = [
    "set_config",
    "lo_create",
    "lo_creat",
    "lo_from_bytea",
    "lo_import",
    # The agent role is shared by every attempt on the server: its sessions may signal and
    # watch each other, so one attempt could end another's connection or read its SQL.
    "pg_terminate_backend",
    "pg_cancel_backend",
    "pg_stat_get_activity",
]
"""Functions every role may call by default that change state outside the tables or reach
other attempts (every overload, whatever the server version names them with), and every
advisory-lock function: a session's advisory locks outlive its calls (a rollback too) and
fill the server's one shared lock table, so one attempt's ``pg_advisory_lock(g) FROM
generate_series(1, 200000) g`` made every other attempt's SQL fail ("out of shared memory")."""
_REVOKE_SIDE_DOORS = (
    "DO $gs$DECLARE f regprocedure; BEGIN FOR f IN SELECT p.oid::regprocedure FROM pg_proc p "
    "WHERE p.pronamespace = 'pg_catalog'::regnamespace AND (p.proname = ANY(ARRAY["
    + ", ".join(f"'{name}'" for name in _SIDE_DOORS)
    + "]) OR p.proname LIKE 'pg\\_stat\\_get\\_backend\\_%' OR p.proname LIKE 'pg\\_%advisory%') "
    "LOOP "
    "EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f); END LOOP; END$gs$"
)


def _table_triggers(index: int, table: PortableTable) -> list[str]:
    on = f"ON public.{quote(table.name)} FOR EACH ROW EXECUTE FUNCTION"
    statements = [
        f"CREATE TRIGGER _gs_log AFTER INSERT OR UPDATE OR DELETE {on} "
        f"{INTERNAL}.log_write('{index}')",
        *_zero_signed(index, table, on),
    ]
    if table.rowid is None:
        return statements
    column, name = quote(table.rowid), _literal(table.name)
    counter = (
        f"coalesce((SELECT seq FROM {INTERNAL}.sqlite_sequence WHERE name = {name}), 0)"
        if table.autoincrement
        else "0"
    )
    statements.append(
        _function(
            f"{INTERNAL}.rowid_{index}()",
            "trigger",
            f"BEGIN IF NEW.{column} IS NULL THEN NEW.{column} := greatest(coalesce("
            f"(SELECT max({column}) FROM public.{quote(table.name)}), 0), {counter}) + 1; "
            "END IF; RETURN NEW; END",
        )
    )
    remember = (
        f"INSERT INTO {INTERNAL}.sqlite_sequence VALUES ({name}, NEW.{column}) "
        "ON CONFLICT (name) DO UPDATE SET seq = "
        f"greatest({INTERNAL}.sqlite_sequence.seq, EXCLUDED.seq); "
        if table.autoincrement
        else ""
    )
    statements.append(
        _function(
            f"{INTERNAL}.inserted_{index}()",
            "trigger",
            f"BEGIN PERFORM set_config('groundstate.lastrowid', NEW.{column}::text, true); "
            f"{remember}RETURN NULL; END",
        )
    )
    statements.append(f"CREATE TRIGGER _gs_rowid BEFORE INSERT {on} {INTERNAL}.rowid_{index}()")
    statements.append(
        f"CREATE TRIGGER _gs_inserted AFTER INSERT {on} {INTERNAL}.inserted_{index}()"
    )
    return statements


def _zero_signed(index: int, table: PortableTable, on: str) -> list[str]:
    """A trigger writing a REAL column's ``-0.0`` as ``0.0`` (adding ``0.0`` does) and a NaN
    as NULL, as SQLite stores them: a REAL column keeps a whole value as an integer, so
    ``-0.0`` comes back ``0.0`` there, and SQLite has no NaN (a ``float('nan')`` parameter is
    NULL); ``r * -1`` of a zero, or a NaN a tool passed, left states that hashed otherwise."""
    reals = [
        c for c, kind in zip(table.columns, table.types, strict=True) if kind == "double precision"
    ]
    if not reals:
        return []
    body = " ".join(
        f"NEW.{quote(c)} := CASE WHEN NEW.{quote(c)} = float8 'NaN' THEN NULL "
        f"ELSE NEW.{quote(c)} + 0.0 END;"
        for c in reals
    )
    return [
        _function(f"{INTERNAL}.unsigned_{index}()", "trigger", f"BEGIN {body} RETURN NEW; END"),
        f"CREATE TRIGGER _gs_unsigned BEFORE INSERT OR UPDATE {on} {INTERNAL}.unsigned_{index}()",
    ]


def _function(
    signature: str, returns: str, body: str, *, language: str = "plpgsql", volatility: str = ""
) -> str:
    """A SECURITY DEFINER function: it acts for the harness whoever's statement fires it."""
    return (
        f"CREATE FUNCTION {signature} RETURNS {returns} LANGUAGE {language} {volatility} "
        f"SECURITY DEFINER SET search_path = pg_catalog AS $gs${body}$gs$"
    )


def _escaped(text: str) -> str:
    """*text* inside an SQL string literal."""
    return text.replace("'", "''")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
