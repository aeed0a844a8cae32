"""A PostgreSQL environment: one database per attempt, cloned from a per-fixture template.

The fixture is built once per process into a *template* database (see
:mod:`~groundstate.environments.postgres_schema`) and a shared, never-written *s0* copy graders
read the initial state from. Each environment clones the template into a database of its own
(``CREATE DATABASE ... TEMPLATE``), so concurrent attempts never share state; a reset after
anything changed drops it and clones again, which restores rows, counters and the clock at once.

The server enforces permissions: the agent connects as an *agent role* granted ``SELECT`` on
the tables it may read and ``INSERT, UPDATE, DELETE`` on those it may write, nothing else (no
DDL, no temporary tables, no harness tables); graders connect as an *evaluator role* that can
only ``SELECT``, in read-only transactions. The clock is a table of the harness; ``now()`` in
the agent's and graders' SQL is ``groundstate.now()``, first on their ``search_path``
(``CURRENT_TIMESTAMP`` and friends are SQL keywords and still read the server's clock).
"""

from __future__ import annotations

import itertools
import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
from psycopg import errors

from groundstate.alarms import CLOCK
from groundstate.environments.base import (
    CallEffects,
    ClosesOnExit,
    Environment,
    Row,
    RowWrite,
    Snapshot,
    TableState,
    in_tool_call,
    quote,
    refused_writes,
)
from groundstate.environments.postgres_dialect import (
    AgentConnection,
    run,
    sqlite_row,
    sqlite_value,
)
from groundstate.environments.postgres_schema import (
    API,
    INTERNAL,
    Clause,
    PortableFixture,
    PortableTable,
    cast_sql,
    clock_sql,
    harness_sql,
    read_fixture,
    with_children,
)
from groundstate.environments.postgres_server import PostgresServer, shared_server
from groundstate.environments.sqlite import fixture_baseline, fixture_bytes, fixture_errors
from groundstate.environments.sqlite_state import META_TABLE, table_hash
from groundstate.environments.sqlite_writes import LoggedTable, Netting
from groundstate.errors import (
    EnvironmentFailure,
    FixtureNotCarried,
    PermissionDenied,
    ResetCheckFailed,
    TimeLimitReached,
)
from groundstate.spec.canonical import canonical_json, hash_value, sha256_bytes
from groundstate.spec.task import Permissions

SEARCH_PATH = f"{API},public,pg_catalog"
_NAMES = itertools.count(1)


@dataclass
class Template:
    """A fixture built in one server: the template, its s0 copy, what the hash needs, and a
    pool of clean attempt databases (reloaded when an environment closes)."""

    database: str
    initial: str
    fixture: PortableFixture
    built_hash: str
    secret: str
    sqlite_casts: bool = True
    """Whether the harness's casts are in (``postgres_schema.cast_sql``: a superuser's)."""
    pool: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, server: PostgresServer) -> str:
        """A clean database of this template no other environment holds."""
        with self.lock:
            if self.pool:
                return self.pool.pop()
        name = f"gs_{server.token}_l{next(_NAMES)}"
        server.clone(self.database, name)
        return name

    def give_back(self, server: PostgresServer, database: str, *, clean: bool) -> None:
        if clean:
            with self.lock:
                self.pool.append(database)
            return
        with suppress(psycopg.Error, EnvironmentFailure):
            server.drop(database)


class PostgresView:
    """Read-only access to one PostgreSQL state, for graders (the evaluator role)."""

    def __init__(self, connection: psycopg.Connection[Any], fixture: PortableFixture) -> None:
        self._connection = connection
        self._fixture = fixture
        self._tables = fixture.tables

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return [sqlite_row(row) for row in run(self._connection, sql, params).fetchall()]

    def snapshot(self) -> Snapshot:
        with _environment_errors("snapshot"):
            state = read_state(self._connection, self._fixture, harness=False)
            return state_snapshot(state, self._tables)

    def interrupt(self) -> None:
        """Cancel a query running on this view (from any thread)."""
        self._connection.cancel()


class PostgresProbes:
    """Reset probes of the PostgreSQL kind: rows, AUTOINCREMENT counters (the clock is common)."""

    def counters(self, env: Environment) -> dict[str, int]:
        assert isinstance(env, PostgresEnvironment)
        rows = env.harness_rows(f"SELECT name, seq FROM {INTERNAL}.sqlite_sequence")
        return {f"AUTOINCREMENT counter of {name}": int(seq) for name, seq in rows}

    def mutate(self, env: Environment) -> list[str]:
        assert isinstance(env, PostgresEnvironment)
        done = [
            f"bumped the AUTOINCREMENT counter of {t.name}"
            if _bump(env, t)
            else f"could not bump the AUTOINCREMENT counter of {t.name} (no row could be inserted)"
            for t in env.tables
            if t.autoincrement
        ]
        for table in env.tables:
            if in_tool_call(env, partial(_delete_one, table=table)):
                done.append(f"deleted a row of {table.name}")
            elif table.rows:  # said, as the SQLite kind says it: this table's reset goes
                done.append(  # unprobed by a deletion
                    f"could not delete a row of {table.name} (the task's permissions or the "
                    "schema refuse it)"
                )
        return done


class PostgresEnvironment(ClosesOnExit):
    """The :class:`~groundstate.environments.base.Environment` on PostgreSQL.

    *fixture* is any fixture the SQLite kind accepts; *server* defaults to the process's
    (:func:`~groundstate.environments.postgres_server.shared_server`).
    """

    reports_writes = True  # each call names the tables it changed (see ClosesOnExit)
    held_bound = ClosesOnExit.held_bound | {
        "_server", "_template", "_tables", "_live", "_control", "_evaluator", "_agent_raw",
        "_agent", "_initial", "_connections",
    }  # fmt: skip

    name = "postgres"
    probes = PostgresProbes()

    @staticmethod
    def engine_version() -> str:
        """The server's version, which a cached proof rests on as a SQLite one rests on
        SQLite's: another server may answer the same SQL otherwise (see
        :func:`~groundstate.validation.suite.validation_key`)."""
        return f"PostgreSQL {shared_server().version}"

    @staticmethod
    def check_fixture(fixture: Path, clock: datetime) -> None:
        """Build *fixture*'s template on the shared server (kept for the attempts):
        :class:`FixtureNotCarried` naming what PostgreSQL refuses, for ``groundstate check``."""
        _template(shared_server(), fixture, clock)

    def __init__(
        self,
        fixture: Path,
        *,
        clock: datetime,
        permissions: Permissions | None = None,
        server: PostgresServer | None = None,
    ) -> None:
        self._server = server or shared_server()
        self._permissions: dict[str, str] = dict((permissions or Permissions()).tables)
        self._control: psycopg.Connection[Any] | None = None
        self._template = _template(self._server, Path(fixture), clock)
        self._tables = self._template.fixture.tables
        self._live = ""
        self._denied: list[str] = []
        self._deadline: float | None = None
        self._dirty = True
        self._written: set[str] = set()
        """Tables written since the database was last clean: a reset reloads only these
        (and the tables referring to them)."""
        self._state: _State | None = None
        """The committed state as last read, until anything can have changed it."""
        self._behind: str | None = None
        """Writes found made outside the tool calls since reset (see
        :meth:`written_outside_calls`)."""
        self._connections: list[psycopg.Connection[Any]] = []
        self._initial = self._server.connect(
            self._template.initial,
            self._server.evaluator_role,
            options=f"-c search_path={SEARCH_PATH}",
        )
        self._initial.execute("SET default_transaction_read_only = on")
        try:
            self._restore()
        except BaseException:
            self.close()
            raise

    # --- lifecycle -------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None) -> str:
        """Restore the template (rows, counters, clock) and return its state hash, checked
        against the fixture's first build (:class:`ResetCheckFailed` if it differs)."""
        if self._dirty:
            self._restore()
        restored = self.state_hash()
        if restored != self._template.built_hash:  # written past the log? reload everything
            self._reload(everything=True)
            restored = self.state_hash()
        if restored != self._template.built_hash:
            raise ResetCheckFailed(
                f"reset gave state {restored[:12]}, the fixture built "
                f"{self._template.built_hash[:12]}"
            )
        self._behind = None
        return restored

    def written_outside_calls(self) -> str | None:
        """What wrote the tables outside the tool calls since reset, or None: the write log's
        triggers fire for every connection, and each call takes its own writes as it commits,
        so rows left in the log were written by code of an in-process agent's (or a thread it
        left) through a connection of its own or the agent's outside a call. The SQL checks
        saw them, the diff (built from the calls' writes) did not. Found as a call begins and
        once the agent has ended and after grading."""
        self._behind = self._behind or self._logged_outside("as the attempt ended")
        return self._behind

    def closed_outside_calls(self) -> str | None:
        """Which of the harness's connections to the database is closed, if one is while the
        server still takes a new one: an in-process agent found it and closed it (``close()``,
        or its ``pgconn.finish()``: the harness never closes them while an attempt runs). Its
        tools' next call, or the final state's read, then failed as the environment's: an
        invalid attempt, rerun. A server that takes no connection is the environment's
        failure, found by the read that fails."""
        if not self._live:
            return None
        named = (("control", self._control), ("tools'", self._agent_raw),
                 ("graders'", self._evaluator), ("initial state's", self._initial))  # fmt: skip
        closed = next((name for name, c in named if c is not None and c.closed), None)
        if closed is None:
            return None
        try:
            with self._server.connect(self._live, None) as probe:
                probe.execute("SELECT 1").fetchone()
        except Exception:  # psycopg's, or the server's wrapped: not the agent's doing
            return None
        return f"the harness's {closed} connection to the database was closed"

    def _logged_outside(self, when: str) -> str | None:
        """Rows of the write log no call took (then dropped, every table marked written so
        that reset reloads them all); None when there are none or the log cannot be read."""
        try:
            with self._db.transaction():
                rows = self._db.execute(f"DELETE FROM {INTERNAL}.writes RETURNING 1").fetchall()
        except (psycopg.Error, AssertionError):  # closed, or broken: the state read says so
            return None
        if not rows:
            return None
        self._written.update(t.name for t in self._tables)
        self._dirty, self._state = True, None
        return f"{len(rows)} row writes outside the tool calls (found {when})"

    def set_deadline(self, deadline: float | None) -> None:
        """Cancel the agent's SQL once the harness's clock (:data:`~groundstate.alarms.CLOCK`, the
        monotonic clock as imported) passes *deadline*."""
        self._deadline = deadline

    def _restore(self) -> None:
        """Connect to a clean database of the template: reloaded in place once this object has
        one, else taken from the template's pool of clean ones, else cloned."""
        if self._live:
            self._reload()
            return
        with _environment_errors("setup"):
            self._live = self._template.take(self._server)
            self._control = self._open()
            self._db.execute(_grants(self._live, self._server, self._tables, self._permissions))
            self._evaluator = self._open(self._server.evaluator_role)
            self._evaluator.execute("SET default_transaction_read_only = on")
            self._agent_raw = self._open(self._server.agent_role)
            self._agent = AgentConnection(self._agent_raw, self._permissions, self._denied.append)
        self._dirty = False

    def _reload(self, *, everything: bool = False) -> None:
        written = {t.name for t in self._tables} if everything else self._written
        with _environment_errors("reset"):
            _reload(self._db, self._template, with_children(self._template.fixture, written))
            # The agent's session outlives a reset in place: what it kept (advisory locks,
            # LISTEN, prepared plans) must not reach the next attempt.
            self._agent_raw.execute("DISCARD ALL")
        self._written, self._state, self._dirty = set(), None, False

    @property
    def _db(self) -> psycopg.Connection[Any]:
        """The harness's own connection to the attempt's database (the admin role)."""
        assert self._control is not None, "environment is closed"
        return self._control

    def _open(self, role: str | None = None) -> psycopg.Connection[Any]:
        connection = self._server.connect(self._live, role, options=f"-c search_path={SEARCH_PATH}")
        self._connections.append(connection)
        return connection

    def close(self) -> None:
        """Close every connection; the database goes back to the template's pool, reloaded
        (or is dropped if that fails)."""
        for connection in self._connections:
            with suppress(psycopg.Error):
                connection.cancel()  # an abandoned agent thread's query, say
        clean = False
        control = self._control
        if self._live and control is not None and not control.closed:
            try:
                if self._dirty:  # the next reset() checks the hash (and repairs)
                    self._reload()
                clean = True
            except (psycopg.Error, EnvironmentFailure):
                clean = False
        for connection in [*self._connections, self._initial]:
            with suppress(psycopg.Error):
                connection.close()
        self._connections = []
        if self._live:
            self._template.give_back(self._server, self._live, clean=clean)
            self._live = ""

    # --- state -----------------------------------------------------------------------------

    def state_hash(self) -> str:
        """The SQLite kind's hash of the same state (see postgres_schema)."""
        return hash_value(table_hashes(self._read(), self._template.fixture))

    def snapshot(self) -> Snapshot:
        return state_snapshot(self._read(), self._tables)

    def _read(self) -> _State:
        """The committed state, read once (one round trip) until something may change it."""
        if self._state is None:
            with _environment_errors("read state"):
                self._state = read_state(self._db, self._template.fixture)
        return self._state

    def restore_collection(self, name: str) -> None:
        """Put the rows of table *name* back as the fixture has them and leave every other
        table as it is, as the SQLite kind's does: the harness's own write, past the agent's
        permissions, the write log and the foreign keys (neither checked nor cascading:
        triggers are off for it, ``session_replication_role = replica``). Validation grades
        such a state to find a table whose change no assertion reads. A server whose user may
        not turn triggers off (one given by URL, not a superuser) cannot: NotImplementedError,
        and the table is not probed so."""
        table = self._table(name)
        with self._harness_write(name):
            self._db.execute(f"DELETE FROM {_names([name])}".encode())
            _copy_rows(self._db, table)

    def clear_collection(self, name: str) -> None:
        """Delete every row of table *name* and leave every other table as it is, as the
        SQLite kind's does: as :meth:`restore_collection` (past the foreign keys, which
        neither refuse nor cascade it), for the state of an agent that deleted them all.
        Validation grades such a state to find a table whose assertions say only what it
        must not hold."""
        self._table(name)
        with self._harness_write(name):
            self._db.execute(f"DELETE FROM {_names([name])}".encode())

    def restore_rows(self, name: str, keys: list[str]) -> None:
        """Put the rows of table *name* with these snapshot *keys* back as the fixture has
        them (a row it does not have is deleted) and leave every other row as it is: as
        :meth:`restore_collection`, for one row at a time."""
        table = self._table(name)
        initial = {
            _row_key(dict(zip(table.columns, r, strict=True)), table.key): r for r in table.rows
        }
        match = " AND ".join(f"{quote(c)} = %s" for c in table.key)
        now = state_snapshot(self._read(), [table]).tables[name].rows
        with self._harness_write(name):
            for key in keys:
                if key in now:
                    self._db.execute(
                        f"DELETE FROM {_names([name])} WHERE {match}".encode(),
                        [now[key][c] for c in table.key],
                    )
                if key in initial:
                    _copy_rows(self._db, table, [initial[key]])

    def _table(self, name: str) -> PortableTable:
        table = next((t for t in self._tables if t.name == name), None)
        if table is None:
            raise EnvironmentFailure(f"postgres environment: no table {name!r} to restore")
        return table

    @contextmanager
    def _harness_write(self, name: str) -> Iterator[None]:
        """One transaction of the harness's own writes to table *name*, with triggers (the
        write log, foreign keys) off; NotImplementedError where the server's user may not."""
        self._dirty, self._state = True, None
        self._written.add(name)  # the next reset reloads it (and the tables referring to it)
        with _environment_errors("restore a table"), self._db.transaction():
            try:
                self._db.execute("SET LOCAL session_replication_role = replica")
            except errors.InsufficientPrivilege as exc:
                raise NotImplementedError(f"postgres: {exc}") from exc
            yield

    def evaluator_view(self) -> PostgresView:
        return PostgresView(self._evaluator, self._template.fixture)

    def initial_view(self) -> PostgresView:
        return PostgresView(self._initial, self._template.fixture)

    def now(self) -> datetime:
        with _environment_errors("read clock"):
            row = self._db.execute(f"SELECT value FROM {INTERNAL}.meta WHERE key = 'now'")
            return datetime.fromisoformat(row.fetchone()[0])  # type: ignore[index]

    def advance_clock(self, seconds: float) -> None:
        later = self.now() + timedelta(seconds=seconds)
        self._dirty, self._state = True, None
        with _environment_errors("advance clock"):
            self._db.execute(
                f"UPDATE {INTERNAL}.meta SET value = %s WHERE key = 'now'", (later.isoformat(),)
            )

    def health(self) -> dict[str, Any]:
        """Probe the server and evaluator access; reports failures, never raises."""
        report: dict[str, Any] = {"ok": False, "database": self._live}
        report["evaluator_readable"] = False
        try:
            self._db.execute("SELECT 1").fetchone()
            self._evaluator.execute("SELECT 1").fetchone()
            report["evaluator_readable"] = True
        except Exception as exc:  # a probe reports every failure as evidence
            report["error"] = f"{type(exc).__name__}: {exc}"
            return report
        report["ok"] = True
        report["server_version"] = self._server.version
        # False: PostgreSQL's own casts (it rounds 2.5 into an INTEGER column, writes 1.0 as
        # '1'), where SQLite's differ; the server's user is not a superuser
        report["sqlite_casts"] = self._template.sqlite_casts
        return report

    @property
    def tables(self) -> list[PortableTable]:
        return self._tables

    def unrepresentable(self, value: Any, where: str = "arguments") -> str | None:
        """Why this kind cannot store *value* (a tool call's arguments), or None: PostgreSQL's
        text holds no NUL character, which SQLite's does (the gateway then refuses the call as
        ``invalid_arguments`` instead of letting the tool crash)."""
        if isinstance(value, str):
            return f"{where}: text with a NUL character" if "\x00" in value else None
        if isinstance(value, dict):
            items = [(f"{where} (a key)", key) for key in value]
            items += [(f"{where}/{key}", item) for key, item in value.items()]
        elif isinstance(value, list):
            items = [(f"{where}/{i}", item) for i, item in enumerate(value)]
        else:
            return None
        return next((p for w, v in items if (p := self.unrepresentable(v, w))), None)

    def harness_rows(self, sql: str) -> list[tuple[Any, ...]]:
        """Rows of one of the harness's own queries (its tables are hidden from the views)."""
        return self._db.execute(sql).fetchall()

    # --- the agent's access ----------------------------------------------------------------

    @property
    def agent_db(self) -> AgentConnection:
        return self._agent

    @contextmanager
    def tool_transaction(self) -> Iterator[CallEffects]:
        """Run one tool call atomically and report the rows it changed and what was denied;
        as the SQLite kind does (a call during which anything was denied is rolled back and
        raises :class:`PermissionDenied`)."""
        effects = CallEffects()
        self._denied.clear()
        self._behind = self._behind or self._logged_outside("as a call began")
        self._dirty, self._state = True, None
        self._agent_raw.execute("BEGIN")
        try:
            with refused_writes(psycopg.Error):
                self._limit_statements()
                yield effects
                self._raise_if_past_deadline(None)
                if self._denied:
                    raise errors.InsufficientPrivilege("the tool swallowed a denial")
                writes, written = self._take_writes()
                self._written.update(written)
                self._agent_raw.execute("COMMIT")
        except BaseException as exc:
            with suppress(psycopg.Error):
                self._agent_raw.execute("ROLLBACK")
            effects.denied = list(dict.fromkeys(self._denied))
            if effects.denied and isinstance(exc, psycopg.Error):
                raise PermissionDenied(f"agent denied: {', '.join(effects.denied)}") from exc
            self._raise_if_past_deadline(exc)
            raise
        effects.denied = list(dict.fromkeys(self._denied))
        effects.writes, effects.changed_tables = writes, written

    def _limit_statements(self) -> None:
        if self._deadline is None:
            return
        remaining = self._deadline - CLOCK()
        if remaining <= 0:
            raise TimeLimitReached("a tool call started past the attempt's time limit")
        self._agent_raw.execute(f"SET LOCAL statement_timeout = {int(remaining * 1000) + 5}")

    def _raise_if_past_deadline(self, cause: BaseException | None) -> None:
        if self._deadline is not None and CLOCK() > self._deadline:
            raise TimeLimitReached("a tool call ran past the attempt's time limit") from cause

    def _take_writes(self) -> tuple[list[RowWrite], list[str]]:
        entries = self._agent_raw.execute(
            f"SELECT tbl, op, before_row::text, after_row::text FROM {API}.take_writes(%s) "
            "ORDER BY seq",
            (self._template.secret,),
        ).fetchall()
        tables = [LoggedTable(t.name, t.columns, t.key, [t.key]) for t in self._tables]
        net = Netting(tables)
        for tbl, op, old, new in entries:
            table = self._tables[tbl]
            net.add(tbl, op, _logged(table, old), _logged(table, new))
        written = sorted({self._tables[tbl].name for tbl, _, _, _ in entries})
        return net.writes(lambda table, row: True), written


_PLACEHOLDERS = {"bigint": 0, "text": "", "double precision": 0.0, "bytea": b""}
"""A harmless value of each column type, for a probe's row."""


def _bump(env: Environment, table: PortableTable) -> bool:
    """Insert a row and delete it again, as the SQLite kind's probe does: a row of harmless
    values first, then a copy of a row. Only copying left the counter of a table the fixture
    leaves empty (the usual refunds or transfers table) unprobed: a reset that kept the
    counters passed the reset check."""
    source = quote(table.name)
    placeholder = (
        f"INSERT INTO {source} ({', '.join(map(quote, table.required))}) "
        f"VALUES ({', '.join('?' for _ in table.required)})"
        if table.required
        else f"INSERT INTO {source} DEFAULT VALUES",
        [_PLACEHOLDERS[table.types[table.columns.index(c)]] for c in table.required],
    )
    others = ", ".join(quote(c) for c in table.columns if c != table.rowid)
    copied: tuple[str, list[Any]] = (
        f"INSERT INTO {source} ({others}) SELECT {others} FROM {source} LIMIT 1",
        [],
    )
    return any(
        in_tool_call(env, partial(_insert_and_delete, table=table, insert=insert))
        for insert in (placeholder, copied)
    )


def _insert_and_delete(
    db: AgentConnection, table: PortableTable, insert: tuple[str, list[Any]]
) -> None:
    """Insert a row, then delete it: only the counter moves."""
    cursor = db.execute(*insert)
    if cursor.lastrowid is None:
        raise LookupError("nothing inserted")
    source = quote(table.name)
    db.execute(f"DELETE FROM {source} WHERE {quote(table.rowid or '')} = ?", (cursor.lastrowid,))


def _delete_one(db: AgentConnection, table: PortableTable) -> None:
    name = quote(table.name)
    cursor = db.execute(f"DELETE FROM {name} WHERE ctid IN (SELECT ctid FROM {name} LIMIT 1)")
    if cursor.rowcount == 0:
        raise LookupError("no row")


# --- templates -------------------------------------------------------------------------------

_TEMPLATES: dict[tuple[int, str, str, str], Template] = {}
_TEMPLATE_LOCK = threading.Lock()


def _template(server: PostgresServer, fixture: Path, clock: datetime) -> Template:
    """The fixture's template in *server*, built on first use (one build per process), from
    the very bytes its key hashes: hashed by one read and built from another, a fixture
    replaced in between was built under the hash of what it no longer holds."""
    with fixture_errors(fixture):
        content = fixture_bytes(fixture)
        key = (id(server), str(fixture.resolve()), sha256_bytes(content), clock.isoformat())
    with _TEMPLATE_LOCK:
        if key not in _TEMPLATES:
            _TEMPLATES[key] = _build(server, fixture, content, clock)
        return _TEMPLATES[key]


def _build(server: PostgresServer, fixture: Path, content: bytes, clock: datetime) -> Template:
    baseline = fixture_baseline(fixture, clock, content)
    image, built_hash = baseline.image, baseline.state_hash
    try:
        portable = read_fixture(image, META_TABLE)
    except FixtureNotCarried as exc:  # what of the fixture cannot be carried: say which
        raise FixtureNotCarried(f"fixture {fixture}: {exc}") from exc
    number = next(_NAMES)
    database, initial = f"gs_{server.token}_t{number}", f"gs_{server.token}_s{number}"
    secret = secrets.token_hex(16)
    server.admin(
        f"CREATE DATABASE \"{database}\" TEMPLATE template0 ENCODING 'UTF8' "
        "LC_COLLATE 'C' LC_CTYPE 'C'"
    )
    try:
        with (
            _environment_errors(f"building fixture {fixture.name}"),
            server.connect(database) as db,
        ):
            casts = _load(db, portable, server, secret)
            copied = hash_value(table_hashes(read_state(db, portable), portable))
        if copied != built_hash:
            raise FixtureNotCarried(
                f"postgres: it did not carry over exactly (state {copied[:12]}, SQLite built "
                f"{built_hash[:12]})"
            )
    except EnvironmentFailure as exc:
        with suppress(psycopg.Error, EnvironmentFailure):  # a failed build leaves no database
            server.drop(database)
        if isinstance(exc, FixtureNotCarried):
            raise FixtureNotCarried(f"fixture {fixture}: {exc}") from exc
        raise
    server.clone(database, initial)
    return Template(database, initial, portable, built_hash, secret, casts)


def _load(
    db: psycopg.Connection[Any], fixture: PortableFixture, server: PostgresServer, secret: str
) -> bool:
    with db.transaction():
        # one round trip (a few hundred statements: the harness's functions and operators)
        db.execute(";\n".join(clock_sql()).encode())
        for table in fixture.tables:
            for clause in [Clause(f"table {table.name}", table.ddl), *table.clauses]:
                with _refused(clause.what):
                    db.execute(clause.sql.encode())
                    _same_default(db, clause)
            with _refused(f"the rows of table {table.name}"):
                _copy_rows(db, table)
        for table in fixture.tables:
            for clause in table.foreign_keys:
                with _refused(clause.what):
                    db.execute(clause.sql.encode())
        casts = _sqlite_casts(db)
        for statement in harness_sql(fixture, server.agent_role, server.evaluator_role):
            db.execute(statement.encode())
        db.execute(f"INSERT INTO {INTERNAL}.secret VALUES (%s)", (secret,))
        _fill_internal(db, fixture)
    return casts


def _sqlite_casts(db: psycopg.Connection[Any]) -> bool:
    """SQLite's casts (``cast_sql``), after the fixture's rows and defaults are in; whether
    they are. Changing the catalog takes a superuser (a private server's admin is one); on a
    server given by URL whose user is not, PostgreSQL's own casts stay (``health`` says so)."""
    try:
        with db.transaction():
            for statement in cast_sql():
                db.execute(statement.encode())
    except errors.InsufficientPrivilege:
        return False
    return True


@contextmanager
def _refused(what: str) -> Iterator[None]:
    """PostgreSQL refusing part of a fixture (its SQL is SQLite's) as the fixture's fault,
    naming the part: a raw server error named neither the table nor the column."""
    try:
        yield
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise FixtureNotCarried(
            f"PostgreSQL refuses {what} ({reason}): the postgres kind carries a SQLite "
            "fixture's schema and values over as written; make them what both accept, or run "
            "the suite on the sqlite kind"
        ) from exc


def _same_default(db: psycopg.Connection[Any], clause: Clause) -> None:
    """A default PostgreSQL accepts but gives another value from than SQLite stores: every
    row an agent inserts without the column would differ, silently, between the kinds."""
    if clause.value is None:
        return
    row = db.execute(clause.value.encode()).fetchone()
    given = sqlite_value(row[0]) if row else None
    if type(given) is not type(clause.expected) or given != clause.expected:
        raise FixtureNotCarried(
            f"postgres: {clause.what} gives {given!r} on PostgreSQL, where SQLite stores "
            f"{clause.expected!r}: a row inserted without it would differ between the kinds; "
            "write a default the column stores as written on both (1.5 in a REAL column, 2 in "
            "an INTEGER one)"
        )


def _reload(db: psycopg.Connection[Any], template: Template, tables: list[PortableTable]) -> None:
    """Put the rows of *tables* back as the fixture has them, and the clock and counters, in
    one transaction, as the admin.

    The schema needs no restoring: only the harness can change it. Foreign keys are checked
    at commit (rows go back table by table); the triggers' traces (write log, counters, the
    last row id) are cleared or overwritten before the commit.
    """
    with db.transaction():
        db.execute("SET CONSTRAINTS ALL DEFERRED")
        db.execute(f"TRUNCATE {INTERNAL}.meta")
        if tables:
            db.execute(f"TRUNCATE {_names([t.name for t in tables])}")
        for table in tables:
            _copy_rows(db, table)
        _fill_internal(db, template.fixture)


def _fill_internal(db: psycopg.Connection[Any], fixture: PortableFixture) -> None:
    """The clock and the counters as the fixture has them, an empty write log (pipelined)."""
    with db.pipeline(), db.cursor() as cursor:
        cursor.execute(f"TRUNCATE {INTERNAL}.writes, {INTERNAL}.sqlite_sequence")
        cursor.executemany(f"INSERT INTO {INTERNAL}.meta VALUES (%s, %s)", fixture.meta)
        cursor.executemany(
            f"INSERT INTO {INTERNAL}.sqlite_sequence VALUES (%s, %s)", fixture.sequence
        )


def _copy_rows(
    db: psycopg.Connection[Any], table: PortableTable, rows: list[tuple[Any, ...]] | None = None
) -> None:
    """Copy *rows* (the fixture's, by default) into *table*."""
    columns = ", ".join(quote(c) for c in table.columns)
    with db.cursor().copy(
        f"COPY public.{quote(table.name)} ({columns}) FROM STDIN".encode()
    ) as copy:
        for row in table.rows if rows is None else rows:
            copy.write_row(row)


def _grants(
    database: str, server: PostgresServer, tables: list[PortableTable], permissions: dict[str, str]
) -> bytes:
    """The attempt's grants: the database itself, then the task's permissions per table."""
    agent, evaluator = quote(server.agent_role), quote(server.evaluator_role)
    statements = [
        f'REVOKE ALL ON DATABASE "{database}" FROM PUBLIC',
        f'GRANT CONNECT ON DATABASE "{database}" TO {agent}, {evaluator}',
        f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {agent}",  # a pooled database's
    ]
    readable = [t.name for t in tables if permissions.get(t.name, "write") != "none"]
    writable = [t.name for t in tables if permissions.get(t.name, "write") == "write"]
    if readable:
        statements.append(f"GRANT SELECT ON {_names(readable)} TO {agent}")
    if writable:
        statements.append(f"GRANT INSERT, UPDATE, DELETE ON {_names(writable)} TO {agent}")
    return "; ".join(statements).encode()


def _names(tables: list[str]) -> str:
    return ", ".join(f"public.{quote(name)}" for name in tables)


# --- reading ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _State:
    """Everything the hash and snapshots read: each table's rows, the clock, the counters."""

    rows: dict[str, list[tuple[Any, ...]]]
    meta: list[tuple[Any, ...]]
    counters: list[tuple[Any, ...]]


def read_state(
    db: psycopg.Connection[Any], fixture: PortableFixture, *, harness: bool = True
) -> _State:
    """Every table's rows, and unless *harness* is false (a grader's view, which cannot
    see them) the clock and the counters, in one round trip (a pipeline)."""
    with db.pipeline():
        cursors = {
            table.name: db.execute(
                f"SELECT {', '.join(quote(c) for c in table.columns)} "
                f"FROM public.{quote(table.name)}".encode()
            )
            for table in fixture.tables
        }
        internal = (
            [
                db.execute(f"SELECT key, value FROM {INTERNAL}.meta"),
                db.execute(f"SELECT name, seq FROM {INTERNAL}.sqlite_sequence"),
            ]
            if harness
            else []
        )
    meta, counters = [c.fetchall() for c in internal] or [[], []]
    return _State(
        rows={name: [sqlite_row(r) for r in c.fetchall()] for name, c in cursors.items()},
        meta=meta,
        counters=counters,
    )


def table_hashes(state: _State, fixture: PortableFixture) -> dict[str, str]:
    """Per-table hashes as the SQLite kind computes them for the same state."""
    hashes = {t.name: table_hash(t.sqlite_sql, state.rows[t.name]) for t in fixture.tables}
    hashes[META_TABLE] = table_hash(fixture.meta_sql, state.meta)
    if fixture.sequence_sql is not None:
        hashes["sqlite_sequence"] = table_hash(fixture.sequence_sql, state.counters)
    return hashes


def state_snapshot(state: _State, tables: list[PortableTable]) -> Snapshot:
    states = {}
    for table in tables:
        rows = [dict(zip(table.columns, row, strict=True)) for row in state.rows[table.name]]
        states[table.name] = TableState(
            columns=table.columns,
            key=table.key,
            rows={_row_key(row, table.key): row for row in rows},
        )
    return Snapshot(tables=states)


def _row_key(row: Row, key: list[str]) -> str:
    values = [row[column] for column in key]
    return canonical_json(values[0] if len(values) == 1 else values)


def _logged(table: PortableTable, text: str | None) -> list[Any] | None:
    """A row image from the write log (JSON text) with the column's own Python types."""
    if text is None:
        return None
    image = json.loads(text, parse_int=_json_int)
    return [_typed(image.get(c), t) for c, t in zip(table.columns, table.types, strict=True)]


def _json_int(text: str) -> int | float:
    """A JSON integer; ``-0`` is how ``to_jsonb`` writes a ``double precision`` -0 (an integer
    column never holds one), which ``json.loads`` read as 0: the call's writes showed 0.0
    where the state held -0.0."""
    return -0.0 if text == "-0" else int(text)


def _typed(value: Any, pg_type: str) -> Any:
    if value is None:
        return None
    if pg_type == "double precision":
        return float(value)
    if pg_type == "bytea":  # bytes, as the SQLite kind's writes and both kinds' diffs give it
        return bytes.fromhex(str(value).removeprefix("\\x"))
    return value


@contextmanager
def _environment_errors(action: str) -> Iterator[None]:
    """Report server errors outside the agent's calls as environment failures."""
    try:
        yield
    except psycopg.Error as exc:
        raise EnvironmentFailure(f"postgres environment: {action} failed: {exc}") from exc
