"""A SQLite environment: a fixture database the agent changes and graders read.

One *template* is built from the fixture, once per process; every ``reset`` writes it to the
live file and checks the bytes, so rows, the clock and AUTOINCREMENT counters all come back
byte for byte. The live file has three
connections: the harness's *control* connection (clock writes), the *agent* connection
(restricted by an authorizer that enforces the task's permissions) and the read-only *evaluator*
connection graders use.
"""

from __future__ import annotations

import errno
import os
import pickle
import re
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from groundstate.alarms import CLOCK
from groundstate.copies import Copies, Lender, Loan
from groundstate.environments import sqlite_determinism as determinism
from groundstate.environments.base import (
    CallEffects,
    ClosesOnExit,
    Snapshot,
    StateDiff,
    TableState,
    quote,
    write_refusal,
)
from groundstate.environments.sqlite_live import (
    NO_FILE,
    POOL,
    AgentConnection,
    EvaluatorConnection,
    EvaluatorLease,
    HeldDatabase,
    LiveFile,
    TotalChanges,
    side_files,
)
from groundstate.environments.sqlite_probes import SqliteProbes
from groundstate.environments.sqlite_searches import fts4_totals_refused, fts5_settings_refused
from groundstate.environments.sqlite_state import (
    META_TABLE as META_TABLE,  # the names other modules and tests import from here
)
from groundstate.environments.sqlite_state import (
    Baseline,
    ChangeTracker,
    read_snapshot,
    table_state,
)
from groundstate.environments.sqlite_state import read_table_hashes as read_table_hashes
from groundstate.environments.sqlite_writes import (
    IMAGE,
    LOG,
    NOT_UTF8,
    WriteLog,
    state_writes,
)
from groundstate.errors import (
    EnvironmentFailure,
    PermissionDenied,
    ResetCheckFailed,
    SpecError,
    TimeLimitReached,
    ToolError,
)
from groundstate.spec.canonical import SettledFileCache, hash_file, sha256_bytes
from groundstate.spec.files import (
    MAX_FILE_BYTES,
    decode_utf8,
    load_model,
    parse_json,
    parse_yaml,
    read_limited,
    read_text,
)
from groundstate.spec.strict import Count, JsonScalar
from groundstate.spec.task import Permissions, Strict
from groundstate.workdirs import TMPDIR_ENV, make_workdir, process_dir, temp_root

_PROTECTED = frozenset({META_TABLE, "sqlite_sequence"})
_WRITES = frozenset({sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE})
_IN_CALL: ContextVar[object] = ContextVar("groundstate_sqlite_call", default=None)
"""The environment whose tool call the code running now is in (a tool's, and what it runs in
``asyncio.to_thread``). Its agent connection answers nothing else (see ``_authorize``)."""
_HARMLESS = frozenset(
    {  # savepoints are harmless: they nest inside the call's own transaction
        sqlite3.SQLITE_SELECT,
        sqlite3.SQLITE_RECURSIVE,
        sqlite3.SQLITE_SAVEPOINT,
    }
)
_INTROSPECTION_PRAGMAS = frozenset(
    {
        "table_info",
        "table_xinfo",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
    }
)
_READABLE_PRAGMAS = frozenset({"foreign_keys", "user_version", "encoding"})
"""Pragmas the agent may read (not set); others (``database_list`` reveals the work
directory's path, ``function_list``, ``compile_options``...) are denied."""
_ALLOWED_KEPT = 10_000
"""An environment's kept answers are dropped when they reach this many (the schema bounds
them)."""
_COUNTED_TWICE = "the database file's change counter moved past the harness's own commit"
"""Why a write beside one of the harness's commits is named (see ``_synced``)."""
_HIDDEN_TABLES = frozenset({"dbstat", "sqlite_dbpage", "sqlite_stmt"})
"""Virtual tables that reveal the database's pages, sizes or the harness's statements."""
_FUNCTION_GROUPS = {
    "core": "abs char coalesce concat concat_ws format glob hex ifnull iif instr "
    "last_insert_rowid changes total_changes length octet_length like likelihood likely lower "
    "ltrim max min nullif printf quote random randomblob replace round rtrim sign soundex "
    "substr substring trim typeof unhex unicode unlikely upper zeroblob -> ->>",
    "aggregate and window": "avg count group_concat string_agg sum total row_number rank "
    "dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value",
    "date and time": "date time datetime julianday unixepoch strftime timediff current_date "
    "current_time current_timestamp",
    "math": "acos acosh asin asinh atan atan2 atanh ceil ceiling cos cosh degrees exp floor ln "
    "log log10 log2 mod pi pow power radians sin sinh sqrt tan tanh trunc",
    "json": "json json_array json_array_length json_extract json_insert json_object json_patch "
    "json_remove json_replace json_set json_type json_valid json_quote json_group_array "
    "json_group_object json_each json_tree jsonb jsonb_array jsonb_extract jsonb_insert "
    "jsonb_object jsonb_patch jsonb_remove jsonb_replace jsonb_set jsonb_group_array "
    "jsonb_group_object",
    "full-text search": "match bm25 highlight snippet",
}
AGENT_FUNCTIONS = frozenset(" ".join(_FUNCTION_GROUPS.values()).split())
"""The SQL functions the agent's connection may call. Everything else is denied, notably
``load_extension``, ``fts3_tokenizer`` (reads and writes process memory), the ``sqlite_*``
introspection functions and R-tree internals (``rtreenode``, ``rtreecheck``...). FTS5's
auxiliary functions ``bm25``, ``highlight`` and ``snippet`` are allowed, and ``match`` (the built-in
only raises; a full-text table overloads it)."""
AGENT_MAX_LENGTH = 16 * 1024 * 1024
"""The longest string or blob the agent's SQL may make (``randomblob(3e8)`` fails instead of
allocating 300 MB): SQLite's ``SQLITE_LIMIT_LENGTH`` on the agent connection."""
_OTHER_ACTIONS = frozenset(
    {"ALTER_TABLE", "ATTACH", "DETACH", "ANALYZE", "REINDEX", "PRAGMA", "TRANSACTION"}
)
_ACTION_NAMES = {
    getattr(sqlite3, name): name.removeprefix("SQLITE_").lower().replace("_", " ")
    for name in dir(sqlite3)
    if name.startswith(("SQLITE_CREATE_", "SQLITE_DROP_"))
    or name.removeprefix("SQLITE_") in _OTHER_ACTIONS
}
AGENT_DATABASE_GROWTH = 16
"""How many times its fixture's size an attempt's database may grow to (see
:func:`agent_database_cap`)."""
AGENT_DATABASE_MIN_BYTES = 256 * 1024 * 1024
"""The least an attempt's database may grow to, however small its fixture."""
PROGRESS_STEPS = 1000
"""SQLite virtual-machine steps between two deadline checks on the agent connection."""


class SqliteView:
    """Read-only access to one SQLite state, for graders (valid until the next reset).

    The view of the initial state (*baseline* given) takes its snapshot from the fixture's
    build, read once per process, instead of reading the whole database again. The view of
    the final state reads it once, and again only after a commit on another connection
    (``PRAGMA data_version`` moved): the several checks of one attempt share one read. Each
    call still returns a copy of its own, which the caller may change: a copy of a pickled
    image, with the same row order and storage classes. *connection* may be a function that
    opens it, called on the first query (most attempts never query s0), or an environment's
    lease on it, which stops serving once the environment lets the connection go.
    """

    def __init__(
        self,
        connection: (
            sqlite3.Connection
            | EvaluatorLease
            | Callable[[], sqlite3.Connection]
            | Callable[[], EvaluatorLease]
        ),
        baseline: Baseline | None = None,
    ) -> None:
        self._connection = connection
        self._baseline = baseline
        self._image: tuple[int, bytes] | None = None
        """The data version a snapshot was read at, and its pickled image."""

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        if not isinstance(self._connection, sqlite3.Connection | EvaluatorLease):
            self._connection = self._connection()
        if isinstance(self._connection, EvaluatorLease):
            return self._connection.query(work)
        return work(self._connection)

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return self._run(lambda connection: connection.execute(sql, params).fetchall())

    def snapshot(self) -> Snapshot:
        with _environment_errors("snapshot"):
            if self._baseline is not None:
                return _initial_snapshot(self._baseline)
            return self._run(self._final_snapshot)

    def lend_snapshot(self) -> tuple[Snapshot, Loan[Snapshot] | None]:
        """What :meth:`snapshot` gives, and for the initial state's a loan to settle once
        the caller has returned (:class:`~groundstate.copies.Lender`): the copy goes to the
        next caller when the caller left it untouched and unreferenced."""
        if self._baseline is None:
            return self.snapshot(), None
        with _environment_errors("snapshot"):
            return _initial_copies(self._baseline).lend()

    def _final_snapshot(self, connection: sqlite3.Connection) -> Snapshot:
        # No lock: a check abandoned at its time limit may still be reading here when the
        # next check calls; both read, and either's image is the same state's.
        version = connection.execute("PRAGMA data_version").fetchone()[0]
        image = self._image
        if image is not None and image[0] == version:
            copy: Snapshot = pickle.loads(image[1])
            return copy
        snapshot = read_snapshot(connection)
        # The image is taken before the caller gets the snapshot, which it may then change.
        self._image = (version, pickle.dumps(snapshot, protocol=pickle.HIGHEST_PROTOCOL))
        return snapshot

    def interrupt(self) -> None:
        """Abort a query running on this view (from any thread)."""
        if isinstance(self._connection, (sqlite3.Connection, EvaluatorLease)):  # else none ran
            self._connection.interrupt()


class SqliteOptions(Strict):
    """``environment_options`` of a ``sqlite`` suite."""

    max_database_mb: Count | None = Field(default=None, ge=1, le=1_048_576)
    """The MiB an attempt's database may grow to (the default: :func:`agent_database_cap`);
    a call that would grow it past them is the agent's error, undone."""


class SqliteEnvironment(ClosesOnExit):
    """The :class:`~groundstate.environments.base.Environment` for SQLite fixtures.

    *fixture* is a ``.sql`` script or a ``.yaml``/``.json`` file ``{schema: SQL, rows: {table:
    [row, ...]}}``; *clock* is "now" after every reset. The template and live files go in
    *workdir* (one environment per folder), by default a temporary folder ``close`` removes,
    or hands with the live file and its connections to the next environment of the same
    fixture (see :mod:`~groundstate.environments.sqlite_live`). The agent's writes may grow
    the database to *max_database_bytes* (or *options*' ``max_database_mb``: suite.yaml's
    ``environment_options``; by default :func:`agent_database_cap`); past it a call fails as
    the agent's error.
    """

    reports_writes = True  # each call names the tables it changed (see ClosesOnExit)
    held_bound = ClosesOnExit.held_bound | {
        "_control", "_agent", "_evaluator", "_lease", "_file", "_live", "_workdir",
        "_writes", "_total_changes", "_tracker", "_baseline",
    }  # fmt: skip

    name = "sqlite"
    options_model = SqliteOptions
    probes = SqliteProbes()
    _control: sqlite3.Connection
    _agent: AgentConnection
    _evaluator: sqlite3.Connection
    _lease: EvaluatorLease
    """This environment's hold on ``_evaluator``, which its graders' views query through."""
    _file: LiveFile
    _writes: WriteLog
    _total_changes: TotalChanges
    _fingerprint0: tuple[object, ...]
    """What the agent connection held once the harness had set it up."""
    _tracker: ChangeTracker
    _version: int
    """The live file's change counter after the last commit the harness saw."""
    _changed_at: int
    """The live file's inode change time then (see :meth:`LiveFile.version`)."""
    _unseen: str | None = None
    """A write behind the gateway found before a later commit of the harness's took its
    count (see :meth:`_check_tracking`), until the next reset."""
    _changes: int
    """The agent connection's change count after the last tool call."""

    def __init__(
        self,
        fixture: Path,
        *,
        clock: datetime,
        permissions: Permissions | None = None,
        workdir: Path | None = None,
        max_database_bytes: int | None = None,
        options: Mapping[str, Any] | SqliteOptions | None = None,
    ) -> None:
        # A copy of its own: the task's dict, changed in place by an in-process agent (and put
        # back before its end), let the authorizer allow a read the task forbids.
        self._permissions = MappingProxyType(dict((permissions or Permissions()).tables))
        self._owns_workdir = workdir is None
        self._workdir: Path | None = workdir
        self._denied: list[str] = []
        self._trusted = False
        self._initial: EvaluatorConnection | None = None
        self._initial_lease = EvaluatorLease(_CLOSED)
        """The graders' hold on :attr:`_initial`, let go at close (see :data:`INITIAL`)."""
        self._control = self._evaluator = _CLOSED
        self._lease = EvaluatorLease(_CLOSED)
        self._agent = _CLOSED_AGENT
        self._file = NO_FILE
        self._opened = False
        self._fresh = False
        """Whether the live file is as setup wrote it, so the first reset need only check it."""
        self._deadline: float | None = None
        self._tainted = False
        """Whether anything went wrong that the pool must not inherit (see ``_hand_over``)."""
        self._calls = 0
        """Tool calls running now (one at most, unless a thread outlived its attempt)."""
        self._closed = False
        self._counted = False
        """Whether :data:`POOL` counts this environment as open (see ``LivePool.peak``)."""
        self._lock = threading.Lock()
        try:
            self._baseline = fixture_baseline(Path(fixture), clock)
            self._template = _template_file(Path(fixture), self._baseline)
            self._max_bytes = max_database_bytes or _cap_of(options, self._baseline.image)
            held = POOL.take(self._baseline.image_digest) if self._reuses() else None
            if held is not None:
                self._adopt(held)
            else:
                with _environment_errors("setup (working directory)"):
                    self._workdir = self._workdir or _opening(make_workdir)  # swept if killed
                    self._workdir.mkdir(parents=True, exist_ok=True)
                self._live = self._workdir / "live.db"
                self._restore()  # usable at once; reset() also checks, which callers ask for
            self._counted = True
            POOL.opened()
        except BaseException:
            self._tainted = True
            self.close()
            raise

    def _reuses(self) -> bool:
        """Whether this environment takes and gives pooled live databases: only the kind
        itself in a folder of its own (a subclass may change what its connections hold)."""
        return self._owns_workdir and type(self) is SqliteEnvironment

    # --- lifecycle -------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None) -> str:
        """Restore the template (rows, clock, counters) and return its state hash.

        The restored file is checked byte for byte against the fixture's first build in this
        process, whether or not the task declares an ``initial_state_hash``: equal bytes are
        the same state, so the hash of that build (computed once) is the restored state's. A
        reset that did not restore the template raises :class:`ResetCheckFailed`, the
        environment's fault. The first reset of a new environment checks the file its setup
        wrote (or the pool's, restored when it was pooled) rather than writing it again.
        What a tool's Python set on the agent's connection does not outlive a reset: its
        factories and transaction handling are put back, and a connection given a function or
        collation of a tool's is replaced by a new one. ``seed`` is accepted for the protocol;
        a SQLite fixture has no randomness to seed.
        """
        with self._failing():
            fresh = self._fresh and not (self._agent.in_transaction or self._agent.meddled)
            if not (fresh and self._restored()):
                self._restore()
                if not self._restored():
                    raise ResetCheckFailed(
                        "reset gave state other than the one the fixture built "
                        f"({self._baseline.state_hash[:12]}): the restored file's bytes differ"
                    )
            self._fresh = False
            self._agent.harness_plain(_AGENT_LIMITS)  # what a tool's Python set goes too
            self._tracker = ChangeTracker(self._baseline)
            self._synced()
            return self._baseline.state_hash

    def _restored(self) -> bool:
        """Whether the live file holds the build, and is the one the path names (another
        file renamed over it while pooled would fail the next write: SQLite sees it moved)."""
        with _environment_errors("reset check"):
            return self._file.holds(self._baseline.image) and not self._file.replaced()

    def set_deadline(self, deadline: float | None) -> None:
        """Interrupt the agent connection's SQL once the monotonic clock passes *deadline*
        (:data:`groundstate.alarms.CLOCK`: an agent that replaces ``time.monotonic`` does not
        stop it).

        A tool's query (an unbounded ``WITH RECURSIVE``, say) then stops at the attempt's time
        limit with an "interrupted" error, and the call raises :class:`TimeLimitReached`.
        """
        self._deadline = deadline

    def _restore(self) -> None:
        """Write the build into the live file: under the open connections where that is
        safe (see :meth:`_rewrite`), else into a new file with new connections."""
        with _environment_errors("reset"):
            if self._opened:
                self._lease.revoke()
                self._evaluator.close()  # graders' connection: new after every reset
            if self._rewrite():
                self._set_evaluator(_evaluator_for(self._live))
            else:
                self._close_live()
                for side in side_files(self._live):  # a stale journal would be replayed
                    side.unlink(missing_ok=True)
                _opening(lambda: self._live.write_bytes(self._baseline.image))
                self._open_live()
            self._tracker = ChangeTracker(self._baseline)
            self._synced()
            self._fresh = True

    def _rewrite(self, evaluator: sqlite3.Connection | None = None) -> bool:
        """Write the build's bytes into the live file under the open control and agent
        connections (and *evaluator*, kept for the pool), and leave them as new ones would
        be; False where that is not safe."""
        if not self._opened or self._tainted or self._calls or self._agent.meddled:
            return False
        if self._file.replaced():
            return False
        # An FTS5 table keeps its settings in each connection's memory too, and reading the
        # file again does not put back a setting the file no longer holds (the agent's rank
        # ordered the next attempt's searches, and graders' on a pooled connection): such an
        # attempt's connections are not kept. A write of the table may have been a command.
        if self._searches_written:
            return False
        if self._agent.in_transaction or self._control.in_transaction or not self._unlocked():
            return False
        for name in os.listdir(self._live.parent):  # a stale journal would be replayed
            if name.startswith(f"{self._live.name}-"):
                (self._live.parent / name).unlink(missing_ok=True)
        unseen = self._file.version() != (self._version, self._changed_at)
        unseen = unseen or not self._tracker.complete
        self._file.write(self._baseline.image)
        # Drop every cached page, not only those a changed counter would: a write that
        # bypassed SQLite and left the counter alone must not survive in a cache.
        self._control.execute("PRAGMA shrink_memory")
        self._harness("PRAGMA shrink_memory")
        if evaluator is not None:
            evaluator.execute("PRAGMA shrink_memory")
        if unseen:  # maybe DDL by another connection: each connection reads the schema again
            self._reread_schema(evaluator)
        # last_insert_rowid() 0 as on a new connection (an attempt that inserted nothing left
        # it so), and changes() 0 (see WriteLog.forget_rowid).
        if self._writes.installed and self._harness("SELECT last_insert_rowid()")[0][0] != 0:
            self._writes.forget_rowid(self._harness)
        self._total_changes.restart()
        return True

    def _reread_schema(self, evaluator: sqlite3.Connection | None) -> None:
        """Make the control and agent connections read the restored file's schema now.

        A connection reads the schema again when the file's schema cookie differs from the
        one it read. Another connection's DDL moves the cookie; the restore moves it back. A
        connection that read the changed schema and runs nothing before the next DDL (which
        moves the cookie to the same value again) would keep the first change's schema, and
        ``SELECT *`` would give another table's columns. A statement now settles it.
        """
        self._control.execute("SELECT count(*) FROM main.sqlite_master").fetchall()
        self._harness("SELECT count(*) FROM main.sqlite_master")
        if evaluator is not None:
            evaluator.execute("SELECT count(*) FROM main.sqlite_master").fetchall()

    def _unlocked(self) -> bool:
        """Whether no connection (a statement left running, another process) holds a lock on
        the live file: the control connection can take an exclusive lock at once."""
        self._control.execute("PRAGMA busy_timeout = 0")
        try:
            self._control.execute("BEGIN EXCLUSIVE")
        except sqlite3.OperationalError:
            return False
        else:
            self._control.execute("ROLLBACK")
            return True
        finally:
            self._control.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")

    def close(self) -> None:
        """Close every connection and remove the working directory if this object made it;
        or, after an attempt that went cleanly, hand the live database to the pool."""
        self._close(reuse=True)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._close(reuse=kind is None)  # whatever raised through the block may linger

    def _close(self, *, reuse: bool) -> None:
        with self._lock:
            self._closed = True
            busy = self._calls > 0  # a tool still running in a thread the attempt left behind
            counted, self._counted = self._counted, False
        if counted:
            POOL.closed()
        if not (reuse and not busy and self._hand_over()):
            self._close_live()
            if self._owns_workdir and self._workdir is not None:
                shutil.rmtree(self._workdir, ignore_errors=True)
        if self._initial is not None:
            INITIAL.give(self._template, self._initial, idle=self._initial_lease.revoke())
            self._initial = None

    def _hand_over(self) -> bool:
        """Give the live database to the pool, restored and with the agent's connection as a
        new one would be; False (nothing given) where it may carry anything of this attempt."""
        if not (self._reuses() and self._opened and not self._tainted):
            return False
        try:
            evaluator = self._kept_evaluator()
            self._agent.harness_plain(_AGENT_LIMITS)
            if self._fingerprint() != self._fingerprint0 or not self._rewrite(evaluator):
                return False
            self._agent.harness_settings(_deny_everything, None)  # nothing runs while pooled
        except (OSError, sqlite3.Error):
            return False
        assert self._workdir is not None
        held = HeldDatabase(
            build=self._baseline.image_digest,
            workdir=self._workdir,
            file=self._file,
            control=self._control,
            agent=self._agent,
            writes=self._writes,
            total_changes=self._total_changes,
            fingerprint=self._fingerprint0,
            evaluator=evaluator,
            header=self._file.header(),
        )
        if not POOL.give(held):
            return False
        # This object lets go: a late caller meets closed connections, as it would have.
        self._control, self._agent, self._evaluator = _CLOSED, _CLOSED_AGENT, _CLOSED
        self._file, self._opened, self._workdir = NO_FILE, False, None
        return True

    def _kept_evaluator(self) -> EvaluatorConnection | None:
        """The graders' connection, to go to the pool with the rest where no view is using it
        and nothing of this attempt can stay in it; else closed (None)."""
        idle = self._lease.revoke()
        evaluator = self._evaluator
        if idle and isinstance(evaluator, EvaluatorConnection) and evaluator.reusable:
            return evaluator
        evaluator.close()
        return None

    def _set_evaluator(self, evaluator: sqlite3.Connection) -> None:
        self._evaluator, self._lease = evaluator, EvaluatorLease(evaluator)

    def _adopt(self, held: HeldDatabase) -> None:
        """Take over a pooled live database (its file holds the build again)."""
        self._workdir, self._file, self._live = held.workdir, held.file, held.file.path
        self._control, self._agent, self._writes = held.control, held.agent, held.writes
        self._total_changes, self._fingerprint0 = held.total_changes, held.fingerprint
        self._opened = True
        self._restrict_agent()
        self._set_evaluator(held.evaluator or _evaluator_for(self._live))
        self._tracker = ChangeTracker(self._baseline)
        self._synced()
        self._fresh = True

    def _open_live(self) -> None:
        # Tool calls run in the agent's thread (one at a time, see EpisodeSession), the rest in
        # the episode's: the connections must accept both.
        self._control = _opening(
            lambda: sqlite3.connect(self._live, isolation_level=None, check_same_thread=False)
        )
        self._file = _opening(lambda: LiveFile.open(self._live))
        # The live file is scratch, rebuilt on every reset: durability would only cost fsyncs.
        self._control.execute("PRAGMA synchronous = OFF")
        self._set_evaluator(_evaluator_for(self._live))
        # No statement cache: a cached statement skips the authorizer when reused, so the
        # agent could replay one of the harness's own trusted statements (e.g. COMMIT).
        self._agent = _opening(
            lambda: sqlite3.connect(
                self._live,
                isolation_level=None,
                cached_statements=0,
                check_same_thread=False,
                factory=AgentConnection,
            )
        )
        self._opened = True
        # Declared foreign keys bind the agent as they would the application; set before the
        # authorizer, which refuses the agent any pragma write.
        self._agent.execute("PRAGMA foreign_keys = ON")
        self._agent.execute("PRAGMA synchronous = OFF")
        # Nothing of a call's is written to the file before its commit (no cache spilled
        # mid-transaction): a change of the file seen then is another hand's (see _effects).
        self._agent.execute("PRAGMA cache_spill = OFF")
        control = self._control  # both outlive this environment in the pool: not self
        determinism.controlled(self._agent, lambda: _clock_of(control))
        kinds = self._baseline.kinds
        tables = [name for name, kind in kinds.items() if kind == "table"]
        agent = self._agent  # the log outlives this environment in the pool: not self
        self._writes = WriteLog(
            tables, lambda: agent.total_changes, build=self._baseline.image_digest
        )
        self._total_changes = TotalChanges(self._agent, self._writes)
        self._agent.harness_function("total_changes", 0, self._total_changes)
        self._agent.harness_function(IMAGE, -1, self._writes.image)
        self._fingerprint0 = self._fingerprint()
        self._restrict_agent()

    def _restrict_agent(self) -> None:
        self._autoincrement = self._baseline.autoincrement
        self._fixture_triggers = self._baseline.triggers
        virtual, self._shadow_of = _virtual_tables(
            self._baseline.image_digest, self._baseline.kinds
        )
        # An FTS5 table's settings are state (see ``fts5_settings``): a call's writes show them.
        settings = list(self._baseline.settings.values())
        self._compared = [*virtual, *settings, *sorted(self._baseline.compared)]
        self._searches_written = False
        """Whether the agent wrote an FTS5 table (see :meth:`_rewrite`)."""
        self._virtual = frozenset(virtual)
        self._indexes_written: set[str] = set()
        """The virtual tables a call wrote, itself or through its shadow tables (see
        :meth:`_check_indexes`)."""
        # The environment's own, not kept for the process by policy: such a table, reachable
        # by its module's name, took an in-process agent's "allowed" answers for every later
        # environment (a read its task forbids passed unseen).
        self._allowed: set[tuple[Any, ...]] = set()
        self._agent.harness_settings(
            self._authorize, (self._past_deadline, PROGRESS_STEPS), self._python_denied
        )
        self._agent.harness_plain(_AGENT_LIMITS)
        self._cap_agent()

    def _cap_agent(self) -> None:
        """Bound the database the agent's writes may grow (``PRAGMA max_page_count``, a limit
        of this connection's only: the harness's and the graders' are not bound). Unbounded,
        an agent that filled the disk ended its attempt as an environment failure (invalid,
        rerun) instead of its own failure."""
        page_size = self._harness("PRAGMA page_size")[0][0]
        pages = self._max_bytes // page_size
        self._max_pages = self._harness(f"PRAGMA max_page_count = {pages}")[0][0]
        # The write log (TEMP, and the harness's memory) holds a call's rows before and after:
        # twice a database at its cap.
        self._writes.limit = 2 * self._max_bytes

    def _fingerprint(self) -> tuple[object, ...]:
        """What the agent connection holds besides the fixture: TEMP objects other than the
        write log's, attached databases, and ``LIKE``'s case rule. The agent's SQL can change
        none of them (the authorizer allows reads and row writes only, which tests show): this
        checks it cheaply. What Python code may have done to the connection object, the object
        notes itself (:class:`~groundstate.environments.sqlite_live.AgentConnection`), and
        an attribute a tool's Python set on it (its own cache: ``db.seen = set()``) shows
        here: on a reused connection it carried one attempt's state into the next."""
        temp, like = self._harness(_FINGERPRINT)[0]
        databases = [row[1] for row in self._harness("PRAGMA database_list")]
        agent = self._agent
        python = (agent.meddled, agent._harness_names, *agent.added_attributes())
        return temp - self._writes.objects, like, *databases, *python

    def _close_live(self) -> None:
        """Close what is open (setup may have failed half way)."""
        self._lease.revoke()
        for connection in (self._agent, self._evaluator, self._control):
            connection.close()
        self._file.close()
        self._control, self._agent, self._evaluator = _CLOSED, _CLOSED_AGENT, _CLOSED
        self._file, self._opened = NO_FILE, False

    @contextmanager
    def _failing(self) -> Iterator[None]:
        """Whatever raises here leaves this environment's database out of the pool."""
        try:
            yield
        except BaseException:
            self._tainted = True
            raise

    # --- state -----------------------------------------------------------------------------

    def state_hash(self) -> str:
        """sha256 over every table's schema and rows (clock and counters included), see
        :mod:`~groundstate.environments.sqlite_state`: the initial state's hashes with only
        the rows the write log saw read again."""
        return self._baseline.state_hash_of(self.table_hashes())

    def table_hashes(self) -> dict[str, str]:
        with self._failing(), _environment_errors("state hash"):
            return self._tracker.hashes(self._control, self._check_tracking())

    def snapshot(self) -> Snapshot:
        with self._failing(), _environment_errors("snapshot"):
            return read_snapshot(self._control)

    @property
    def tracking_complete(self) -> bool:
        """Whether the final state comes from the initial one and the rows the write log saw
        (False after a write it did not see: then every table is read whole)."""
        self._check_tracking()
        return self._tracker.complete

    def initial_snapshot(self) -> Snapshot:
        """The state every reset restores, read once per process (do not change it)."""
        with self._failing(), _environment_errors("snapshot"):
            return self._baseline.snapshot

    def diff_from_initial(self) -> StateDiff:
        """The diff from the initial state, from the rows the write log saw (the same diff
        as two whole snapshots would give)."""
        with self._failing(), _environment_errors("diff"):
            return self._tracker.diff(self._control, self._check_tracking())

    def _check_tracking(self) -> int:
        """Give up the tracking (read every table whole) after a write it did not see: one
        on the agent's connection outside a tool call, or one by another connection (the
        file's change counter moved since the last commit the harness saw). Returns the
        file's change counter."""
        version = self._file.version()
        if version[0] < 0 or version != (self._version, self._changed_at) or self._moved():
            self._tracker.complete = False
            # Named now: a tool's commit next would take the moved counter and change time
            # for its own (its counter move in the range allowed), and hide the write.
            self._unseen = self._unseen or self._outside_write()
        return version[0]

    def written_outside_calls(self) -> str | None:
        """What changed the database since the harness last saw a commit of its own (a tool
        call's, a reset's), or None: another connection (the file's change counter moved, or
        a write-ahead log appeared, which the live file never has), another file put in its
        place, or the agent's connection
        used outside a tool call. Asked once the agent has ended: a write behind the gateway
        is one no constraint saw. A database so written never goes to the pool."""
        reason = self._outside_write()
        self._tainted = self._tainted or reason is not None
        return reason

    def locked_outside_calls(self) -> str | None:
        """Why the database cannot be read now, if a connection other than the harness's
        holds a write lock on it (an in-process agent's own connection left in ``BEGIN
        EXCLUSIVE``: the checks would wait and fail, an invalid attempt), or None. Asked with
        no tool call running, when the harness's connections hold no such lock; a tool's
        unfinished query holds only a read lock, which readers share. A database so held
        never goes to the pool."""
        self._control.execute("PRAGMA busy_timeout = 0")
        try:
            self._control.execute("SELECT count(*) FROM main.sqlite_master").fetchall()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):  # not a lock (a removed file...): not this probe's
                return None
            self._tainted = True
            return f"another connection holds a lock on the database ({exc})"
        finally:
            self._control.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        return None

    def closed_outside_calls(self) -> str | None:
        """Which of the harness's connections to the database is closed, if one is: an
        in-process agent found it and called ``close()`` (the harness never closes them while
        an attempt runs). Its tools' next call, or the final state's read, then failed as the
        environment's: an invalid attempt, rerun. A database so left never goes to the pool.
        (Reading a closed connection's change count raises.)"""
        for name, connection in (
            ("control", self._control),
            ("tools'", self._agent),
            ("graders'", self._evaluator),
        ):
            try:
                connection.total_changes  # noqa: B018  (read: raises once closed)
            except sqlite3.ProgrammingError:
                self._tainted = True
                return f"the harness's {name} connection to the database was closed"
        return None

    def _outside_write(self) -> str | None:
        if self._unseen is not None:
            return self._unseen
        if os.path.exists(f"{self._live}-wal"):  # (a Path would cost more than the stat)
            return "a write-ahead log appeared beside the database (another connection)"
        if self._file.replaced():  # a solved copy renamed over it, say
            return "the database file was replaced or removed (another file in its place)"
        with self._failing():
            version, changed_at = self._file.version()
        if version != self._version:
            return "the database file changed outside any tool call (another connection)"
        if changed_at != self._changed_at:  # its bytes written, the header's counter put back
            return "the database file was written outside any tool call, its counter kept"
        if self._agent.total_changes != self._changes:
            return "the agent's connection wrote outside any tool call"
        return None

    def _written_during_call(self) -> None:
        """Name a change of the file since the call began, looked at just before its commit
        (nothing of the call's is in the file yet: its connection spills no cache): another
        connection's commit (the counter moved), or bytes written past SQLite, its counter
        put back or left alone (the change time moved), by a thread of the agent's while the
        call ran. Before, the call's commit took that change for its own: its counter move
        within the one allowed, the change time read again after it. Not seen: a write in the
        instant between this look and the commit."""
        if self._file.version() != (self._version, self._changed_at):
            why = "the database file was written while a tool call ran, not by the call"
            self._unseen = self._unseen or why

    def _moved(self) -> bool:
        """Whether the agent's connection wrote a row since the last sync."""
        return self._agent.total_changes != self._changes

    def _synced(self, allowed: range | None = None) -> None:
        """Note the file's change counter and the agent's change count after a commit of the
        harness's (*allowed*: the counter moves it may have made; None: no check)."""
        version, self._changed_at = self._file.version()
        if allowed is None:  # a reset's (or the pool's): nothing before it is this attempt's
            self._unseen = None
        elif version - self._version not in allowed:
            self._tracker.complete = False
            if version - self._version >= allowed.stop:
                # Another connection's commit too: one that waited for the call's write lock
                # lands the instant the call's commit releases it, before this look. Before,
                # only the tracking was given up, and the write hidden. (A counter that moved
                # less than the commit may move it, as a write of a value already there, is no
                # one else's write.)
                self._unseen = self._unseen or _COUNTED_TWICE
        self._version, self._changes = version, self._agent.total_changes

    def evaluator_view(self) -> SqliteView:
        return SqliteView(self._lease)

    @contextmanager
    def unordered_reversed(self) -> Iterator[None]:
        """While inside, the graders' views return the rows of a query that has no ORDER BY in
        the reverse of their usual order (SQLite's ``reverse_unordered_selects``): validation
        grades a final state so, to find a verdict that rests on an order no query asked for
        (``LIMIT 1`` without ``ORDER BY``, ``group_concat`` over a scan)."""
        connections = [self._evaluator, self._initial_connection()]
        for connection in connections:
            _reverse_unordered(connection, True)
        try:
            yield
        finally:
            for connection in connections:
                _reverse_unordered(connection, False)

    def restore_collection(self, name: str) -> None:
        """Put the rows of table *name* back as the initial state has them and leave every
        other table as it is: the harness's own write, past the agent's permissions and the
        write log (the tracking then reads every table whole). Validation grades such a state
        to find a table whose change no assertion reads. The fixture's triggers on the table
        do not fire (nor are foreign keys enforced), as on PostgreSQL: a trigger undoing its
        rows' effect elsewhere when they are deleted (a ledger's) would change the tables the
        grader reads, and hide that it reads nothing of this one. This database never goes to
        the pool."""
        with self._harness_write(name, "restore a table"):
            info = self._control.execute(f"PRAGMA main.table_xinfo({quote(name)})").fetchall()
            stored = [quote(str(column[1])) for column in info if column[6] == 0]  # not generated
            columns, marks = ", ".join(stored), ", ".join("?" for _ in stored)
            rows = self._initial_connection().execute(f"SELECT {columns} FROM {quote(name)}")
            self._control.execute(f"DELETE FROM main.{quote(name)}")
            self._control.executemany(
                f"INSERT INTO main.{quote(name)} ({columns}) VALUES ({marks})", rows.fetchall()
            )

    def clear_collection(self, name: str) -> None:
        """Delete every row of table *name* and leave every other table as it is: as
        :meth:`restore_collection` (its triggers off), for the state of an agent that deleted
        them all. Validation grades such a state to find a table whose assertions say only
        what it must not hold."""
        with self._harness_write(name, "clear a table"):
            self._control.execute(f"DELETE FROM main.{quote(name)}")

    @contextmanager
    def _harness_write(self, name: str, doing: str) -> Iterator[None]:
        """One transaction of the harness's own writes to table *name*, the fixture's
        triggers on it dropped for the writes and made again after them (SQLite cannot turn
        one off), so only that table changes."""
        with self._failing(), _environment_errors(doing):
            self._tainted, self._fresh = True, False
            self._control.execute("BEGIN")
            try:
                triggers = self._control.execute(
                    "SELECT name, sql FROM main.sqlite_schema WHERE type = 'trigger' "
                    "AND tbl_name = ? COLLATE NOCASE ORDER BY rowid",
                    (name,),
                ).fetchall()
                for trigger, _ in triggers:
                    self._control.execute(f"DROP TRIGGER main.{quote(trigger)}")
                yield
                for _, sql in triggers:
                    self._control.execute(sql)
            except BaseException:
                self._control.execute("ROLLBACK")
                raise
            self._control.execute("COMMIT")

    def restore_rows(self, name: str, keys: list[str]) -> None:
        """Put the rows of table *name* with these snapshot *keys* back as the initial state
        has them (a row it does not have is deleted) and leave every other row as it is: as
        :meth:`restore_collection` (its triggers off), for one row at a time."""
        initial, now = self.initial_snapshot().tables[name], self.snapshot().tables[name]
        match = " AND ".join(f"{_bare(c)} IS ?" for c in now.key)
        with self._harness_write(name, "restore rows"):
            for key in keys:
                if key in now.rows:
                    values = [now.rows[key][c] for c in now.key]
                    if None in values:  # keyed by its content: the key names no one row
                        raise NotImplementedError(f"a row of {name} with a NULL key")
                    self._control.execute(f"DELETE FROM main.{quote(name)} WHERE {match}", values)
                if key in initial.rows:
                    row = initial.rows[key]
                    columns = ", ".join(map(_bare, row))
                    marks = ", ".join("?" for _ in row)
                    self._control.execute(
                        f"INSERT INTO main.{quote(name)} ({columns}) VALUES ({marks})",
                        list(row.values()),
                    )

    def initial_view(self) -> SqliteView:
        assert not self._closed, "environment is closed"
        return SqliteView(self._initial_held, self._baseline)

    def _initial_connection(self) -> sqlite3.Connection:
        """The build's file, read-only, taken on first use (checks may run in threads): one
        the process's earlier environments left as new (:data:`INITIAL`), or a new one."""
        with self._lock:
            if self._initial is None:
                if self._closed:
                    raise EnvironmentFailure("sqlite environment: closed")
                self._initial = INITIAL.take(self._template)
                self._initial_lease = EvaluatorLease(self._initial)
            return self._initial

    def _initial_held(self) -> EvaluatorLease:
        """The graders' hold on the initial connection: a view left behind once this
        environment has closed cannot query it (the next environment's, once pooled)."""
        self._initial_connection()
        return self._initial_lease

    def now(self) -> datetime:
        with self._failing(), _environment_errors("read clock"):
            return datetime.fromisoformat(_clock_of(self._control))

    def advance_clock(self, seconds: float) -> None:
        later = self.now() + timedelta(seconds=seconds)
        self._fresh = False
        with self._failing(), _environment_errors("advance clock"):
            self._check_tracking()
            self._control.execute(
                f"UPDATE {META_TABLE} SET value = ? WHERE key = 'now'", (later.isoformat(),)
            )
            self._tracker.clock_moved = True
            self._synced(range(1, 2))

    def health(self) -> dict[str, Any]:
        """Probe integrity and evaluator access; reports failures, never raises.

        The full check (``PRAGMA quick_check`` reads every page) runs once per process, on the
        fixture's build; a reset is checked byte for byte against that build, and after it only
        commits the harness saw changed the file. So a probe reads the file's header (the
        magic string, and page size times page count against the file's size) and checks that
        no write went unseen; only then is the build's verdict this file's. A header that does
        not add up, or a write the tracking did not see, brings back the full check. A probe
        that is not ok keeps this database out of the pool.
        """
        report: dict[str, Any] = {"ok": False, "database": str(self._live)}
        report["evaluator_readable"] = False
        try:
            report["integrity"] = self._integrity(report)
            self._evaluator.execute("SELECT count(*) FROM sqlite_master").fetchone()
            report["evaluator_readable"] = True
        except Exception as exc:  # a probe reports every failure as evidence
            report["error"] = f"{type(exc).__name__}: {exc}"
            self._tainted = True
            return report
        report["ok"] = report["integrity"] == "ok"
        self._tainted = self._tainted or not report["ok"]
        return report

    def _integrity(self, report: dict[str, Any]) -> str:
        # A header that is not sound gives no change counter and turns the tracking off.
        if self._check_tracking() >= 0 and self._tracker.complete:
            report["integrity_of"] = "fixture build (once per process); this file's header"
            return self._baseline.integrity
        report["integrity_of"] = "this file (PRAGMA quick_check)"
        checks = self._control.execute("PRAGMA quick_check").fetchall()
        return "; ".join(str(check[0]) for check in checks)

    def break_database(self) -> None:
        """Test hook: overwrite the live file's header, as a failing disk would.

        Later queries raise and ``health()`` reports not ok, so tests can exercise the
        environment-failure paths; ``reset()`` repairs the file.
        """
        self._tainted = True
        with self._live.open("r+b") as handle:
            handle.write(b"\0" * 100)

    # --- the agent's access ----------------------------------------------------------------

    @property
    def agent_db(self) -> sqlite3.Connection:
        return self._agent

    @contextmanager
    def tool_transaction(self) -> Iterator[CallEffects]:
        """Run one tool call atomically and report the rows it changed and what was denied.

        A call during which anything was denied is rolled back and raises
        :class:`PermissionDenied`, even when the tool swallowed the database's error: a denied
        call changes nothing. A call that commits reports its row-level writes (see
        :mod:`groundstate.environments.sqlite_writes`) and the tables it wrote. A call that
        ends otherwise than by committing, a :class:`ToolError` or a denial (a crash, the time
        limit) keeps this database out of the pool.
        """
        with self._lock:
            if self._closed:  # a thread its attempt left behind: the connections are gone
                raise EnvironmentFailure("sqlite environment: closed")
            self._calls += 1
        try:
            with self._call() as effects:
                yield effects
        finally:
            with self._lock:
                self._calls -= 1

    @contextmanager
    def _call(self) -> Iterator[CallEffects]:
        outer = _IN_CALL.get()
        _IN_CALL.set(self)
        try:
            with self._effects() as effects:
                yield effects
        finally:
            _IN_CALL.set(outer)

    @contextmanager
    def _effects(self) -> Iterator[CallEffects]:
        effects = CallEffects()
        self._denied = []
        self._indexes_written = set()
        self._fresh = False
        self._check_tracking()
        self._writes.start(self._harness)
        # Read before the call's transaction begins: a read in it would hold a shared lock for
        # the whole call (another connection's write meanwhile would wait and fail, not be
        # seen as a write behind the gateway).
        compared_before = self._compared_states()
        self._harness("BEGIN")
        try:
            with _REFUSALS:
                yield effects
            self._raise_if_past_deadline(None)
            if self._denied:
                raise sqlite3.DatabaseError("the tool swallowed a denial")
            if self._writes.overflowed:
                raise sqlite3.DatabaseError("the tool swallowed a full write log")
            with _REFUSALS:
                writes, written, touched = self._writes.read(self._harness)
                compared = state_writes(compared_before, self._compared_states())
            self._check_indexes()
            writes = [write for write in writes if write.table not in compared_before]
            writes += compared
            written = sorted({*written, *(write.table for write in compared)})
            if touched or written or self._moved():
                self._written_during_call()
            with _DEFERRED:
                self._harness("COMMIT")
            self._tracker.add(touched)
            if touched or written or self._moved():
                self._synced(range(2) if touched or written else range(1))
            # Otherwise the call changed nothing: the file's counter must not have moved, as
            # the next _check_tracking (before any call, hash, diff or probe) checks. Reading
            # it now too would only add two system calls (GIL releases) to most calls.
        except BaseException as exc:
            denial = bool(self._denied) and isinstance(exc, sqlite3.Error)
            self._tainted = self._tainted or not (denial or isinstance(exc, ToolError))
            if self._agent.in_transaction:
                self._harness("ROLLBACK")
            self._synced(range(1))
            effects.denied = list(dict.fromkeys(self._denied))
            if effects.denied and isinstance(exc, sqlite3.Error):
                raise PermissionDenied(f"agent denied: {', '.join(effects.denied)}") from exc
            self._raise_if_past_deadline(exc)
            if self._writes.overflowed and isinstance(exc, Exception):
                raise ToolError(
                    "the call's writes would log more than"
                    f" {2 * self._max_bytes / 2**20:g} MiB of rows before and after them (twice"
                    f" the {self._max_bytes / 2**20:g} MiB an attempt's database may hold): its"
                    " writes were undone"
                ) from exc
            broken = _broken_database(exc, harness_locked=self._control.in_transaction)
            if broken is not None:
                self._tainted = True
                if self._at_the_cap(broken):
                    raise ToolError(
                        f"the call would grow the database past the {self._max_bytes / 2**20:g}"
                        " MiB an attempt's database may hold: its writes were undone"
                    ) from exc
                raise EnvironmentFailure(
                    "sqlite environment: the database failed in a tool call: "
                    f"{broken} ({broken.sqlite_errorname})"
                ) from exc
            raise
        effects.denied = list(dict.fromkeys(self._denied))
        effects.writes, effects.changed_tables = writes, written

    def _check_indexes(self) -> None:
        """Refuse a call that left a virtual table's index out of step with its rows, or what
        the table keeps beside them unreadable or untrue.

        Writing a search or R-tree table's shadow tables is allowed with ``write`` (SQLite's
        own statements for the table write them too, and the authorizer cannot tell the two
        apart), so a row removed from an R-tree's ``branches_rowid``, an FTS5 ``docs_data``
        emptied or an external-content index told to forget a row whose content stays hid
        rows from every search, the graders' included, while the state hash (the rows) did
        not move. SQLite's own checks of each table the call wrote (``integrity-check``,
        ``rtreecheck``) now find that, and the call is the agent's error, undone; so is what
        those checks do not see (see :mod:`~groundstate.environments.sqlite_searches`)."""
        for table in sorted(self._indexes_written):
            [(sql,)] = self._harness("SELECT sql FROM main.sqlite_master WHERE name = ?", (table,))
            found = _VIRTUAL_MODULE.search(sql or "")
            module = found.group(1).lower() if found else ""
            out_of_step = self._index_out_of_step(table, module)
            if out_of_step is not None:
                raise ToolError(
                    f"the call left the index of {table} out of step with its rows (its shadow"
                    f" tables written by hand?): it was undone ({out_of_step})"
                )
            kept = _KEPT_CHECKS.get(module)
            untrue = kept(self._harness, table) if kept else None
            if untrue is not None:
                raise ToolError(
                    f"the call left what the search table {table} keeps beside its index"
                    f" unreadable or untrue (its shadow tables written by hand?): it was undone"
                    f" ({untrue})"
                )

    def _index_out_of_step(self, table: str, module: str) -> str | None:
        """SQLite's own report of *table*'s index out of step with its rows, or None."""
        check = _INDEX_CHECKS.get(module)
        if check is None:
            return None
        try:
            params = (table,) if "?" in check else ()
            found = self._harness(check.format(table=quote(table)), params)
        except sqlite3.DatabaseError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_CORRUPT_VTAB:
                return None  # no verdict: the settings' check below reads them afresh
            found = [(str(exc),)]
        return found[0][0] if found and found[0][0] != "ok" else None

    def _at_the_cap(self, broken: sqlite3.Error) -> bool:
        """Whether *broken*, a call's "database or disk is full", was the agent's database
        reaching its cap (the agent's doing) rather than the disk filling (the environment's):
        the agent's connection holds this environment's cap, and the disks of the live file
        and of SQLite's temporary files have room for the database grown to it."""
        if broken.sqlite_errorcode & 0xFF != sqlite3.SQLITE_FULL:
            return False
        try:
            if self._harness("PRAGMA max_page_count")[0][0] != self._max_pages:
                return False  # a limit set by another hand than this environment's
            room = self._max_bytes - self._live.stat().st_size
            return all(free_bytes(path) >= room for path in _sqlite_disks(self._live))
        except (OSError, sqlite3.Error):
            return False

    def _compared_states(self) -> dict[str, TableState]:
        """The rows of the tables whose writes the triggers cannot log, read past the
        authorizer: virtual tables, and tables with a unique index on an expression (see
        ``Baseline.compared``). A call's writes to them are their rows before and after
        compared: this costs a read of each per call (fine for the small search tables of
        fixtures)."""
        if not self._compared:  # most fixtures: no statement, no settings swapped
            return {}
        with self._as_harness() as agent:
            return {name: table_state(agent, name) for name in self._compared}

    def _harness(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one of the harness's own statements on the agent connection, past the
        authorizer (as :meth:`_as_harness`, without a generator's context manager: a few of
        these run at every call, and it cost about as much as the statement)."""
        agent, saved = self._agent, self._harness_settings()
        try:
            before = agent.total_changes
            rows = agent.execute(sql, params).fetchall()
            self._total_changes.harness += agent.total_changes - before
            return rows
        finally:
            self._agent_settings(saved)

    @contextmanager
    def _as_harness(self) -> Iterator[AgentConnection]:
        """The agent's connection for the harness's own statements: past the authorizer, and
        with Python's plain rows, text and transaction handling whatever a tool set (a tool's
        ``row_factory = sqlite3.Row`` made reading the write log fail, its
        ``isolation_level`` made Python open a transaction before the call's own ``BEGIN``);
        the tool's settings are put back after."""
        saved = self._harness_settings()
        try:
            yield self._agent
        finally:
            self._agent_settings(saved)

    def _harness_settings(self) -> tuple[Any, Any, Any, bool]:
        """Switch the agent connection to the harness's settings; the tool's, to put back."""
        agent = self._agent
        rows, text, transactions = agent.row_factory, agent.text_factory, agent.isolation_level
        self._trusted = True
        agent.row_factory, agent.text_factory = None, str
        implicit = transactions is not None and not agent.in_transaction
        if implicit:  # (setting None commits an open transaction: there is none)
            agent.isolation_level = None
        return rows, text, transactions, implicit

    def _agent_settings(self, saved: tuple[Any, Any, Any, bool]) -> None:
        agent, (rows, text, transactions, implicit) = self._agent, saved
        self._trusted = False
        agent.row_factory, agent.text_factory = rows, text
        if implicit:
            agent.isolation_level = transactions

    def _past_deadline(self) -> int:
        """The progress handler: non-zero interrupts the agent's statement (never the harness's)."""
        deadline = self._deadline
        return int(deadline is not None and not self._trusted and CLOCK() > deadline)

    def _raise_if_past_deadline(self, cause: BaseException | None) -> None:
        """A call that ran past the deadline ends the attempt, whatever the tool made of it."""
        if self._deadline is not None and CLOCK() > self._deadline:
            raise TimeLimitReached("a tool call ran past the attempt's time limit") from cause

    def _authorize(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None
    ) -> int:
        """The agent connection's authorizer: allow, or deny and record why."""
        if self._trusted:
            return sqlite3.SQLITE_OK
        # The connection goes from attempt to attempt (the pool): a handle a tool or an agent
        # kept (the connection, a cursor), used from a thread left running or by a later
        # call, read and wrote the next attempt's database. It answers only within a call of
        # this environment's, as PostgreSQL's does; refused outside, the denial is no call's.
        if _IN_CALL.get() is not self:
            return sqlite3.SQLITE_DENY
        # With no statement cache (see _open_live) every statement of every call asks again,
        # a few hundred times per attempt, mostly the same questions: an allowed answer is
        # kept for this environment (a denial is recorded each time; a write may note the
        # sequence).
        key = (action, arg1, arg2, db, source)
        if key in self._allowed:
            return sqlite3.SQLITE_OK
        verdict = self._decide(action, arg1, arg2, db, source)
        if verdict == sqlite3.SQLITE_OK and action not in _WRITES:
            if len(self._allowed) >= _ALLOWED_KEPT:
                self._allowed.clear()
            self._allowed.add(key)
        return verdict

    def _decide(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None
    ) -> int:
        """The authorizer's answer, worked out: it depends on the arguments, the permissions
        and the fixture's tables only (what :attr:`_allowed` is kept by)."""
        # The write log's triggers act for the harness: they read the rows the agent writes
        # (a table's trigger may write a table the agent cannot read) and write the log.
        if action in _HARMLESS or (source or "").startswith(LOG):
            return sqlite3.SQLITE_OK
        # A shadow table (``docs_data`` of FTS5 table ``docs``) has its virtual table's
        # permissions: SQLite's own statements for the virtual table pass this authorizer too.
        table = self._shadow_of.get(arg1 or "", arg1 or "")
        # The fixture's own trigger acts for the fixture, as a foreign key's cascade does: an
        # audit row it writes into a table the task hides (or lets the agent only read) is
        # the environment's doing. Denied, the agent's honest write that fired it was a
        # prohibited action. The agent can make no trigger (DDL and TEMP are denied).
        fixture = source is not None and source in self._fixture_triggers
        if action == sqlite3.SQLITE_READ:
            readable = self._readable(table, arg2, db, fixture)
            return self._verdict(readable, f"read {arg1}")
        if action == sqlite3.SQLITE_FUNCTION:
            return self._verdict((arg2 or "").lower() in AGENT_FUNCTIONS, f"function {arg2}")
        if action in _WRITES:
            if action == sqlite3.SQLITE_INSERT and (arg1 or "").lower() in self._autoincrement:
                self._tracker.sequence_moved = True  # even an insert of no rows may move it
            if db == "temp":  # the write log is the harness's, not the agent's
                return self._verdict(False, f"write {arg1}")
            self._searches_written = self._searches_written or table in self._baseline.settings
            if table in self._virtual:
                self._indexes_written.add(table)
            writable = fixture or self._permissions.get(table, "write") == "write"
            return self._verdict(writable and arg1 not in _PROTECTED, f"write {arg1}")
        if action == sqlite3.SQLITE_PRAGMA:
            pragma = (arg1 or "").lower()
            readable = arg2 is None and pragma in _READABLE_PRAGMAS
            return self._verdict(readable or pragma in _INTROSPECTION_PRAGMAS, f"pragma {arg1}")
        name = _ACTION_NAMES.get(action, f"action {action}")
        target = arg2 if action == sqlite3.SQLITE_ALTER_TABLE else arg1  # ALTER names db, table
        return self._verdict(False, f"{name} {target or ''}".strip())

    def _readable(self, table: str, column: str | None, db: str | None, fixture: bool) -> bool:
        """Whether the agent may read *column* of *table* (*fixture*: for a trigger of the
        fixture's, which may read the tables the task hides).

        The schema table is hidden (SQLite itself reads its ``ROWID`` when a table-valued
        function such as ``json_each`` is first used, which stays allowed), and so are the
        virtual tables that reveal pages and sizes of tables the agent may not read.
        """
        if db == "temp" or (self._permissions.get(table) == "none" and not fixture):
            return False
        if table.lower() in _HIDDEN_TABLES:
            return False
        return table.lower() != "sqlite_master" or column == "ROWID"

    def _python_denied(self, action: str) -> None:
        """Record a denial of what a tool's Python asked of the agent's connection (see
        :class:`~groundstate.environments.sqlite_live.AgentConnection`)."""
        if not self._trusted:
            self._verdict(False, action)

    def _verdict(self, allowed: bool, action: str) -> int:
        if allowed:
            return sqlite3.SQLITE_OK
        self._denied.append(action)
        return sqlite3.SQLITE_DENY


# --- building, hashing and reading -----------------------------------------------------------


class _DataFixture(BaseModel):
    """A ``.yaml``/``.json`` fixture: a schema script and the rows to insert per table."""

    model_config = ConfigDict(extra="forbid")
    schema_sql: str = Field(alias="schema")
    rows: dict[str, list[dict[str, JsonScalar]]] = Field(default_factory=dict)
    """Each row's cells: text, a number, true/false or null (a list or a mapping, which no
    column holds, is named at its cell, not by SQLite's "Error binding parameter")."""


_TEMPLATES: dict[tuple[str, str, str], Baseline] = {}
"""Database images and their initial state (hashes, row digests) by (fixture format, fixture
content hash, clock): one build per process. That first build is what every reset restores."""

_BUILDS: dict[tuple[str, str], Baseline] = {}
"""One of :data:`_TEMPLATES`'s builds of each fixture content, at whichever clock came first:
the others are made from it (:func:`_reclocked`)."""


_SNAPSHOT_COPIES: dict[str, Lender[Snapshot]] = {}
"""Copies of the initial snapshot of each fixture build, by the build's image digest."""
# A forked child starts with lenders of its own: a lock another thread held at the fork
# would stay held in the child.
os.register_at_fork(after_in_child=_SNAPSHOT_COPIES.clear)


def _initial_copies(baseline: Baseline) -> Lender[Snapshot]:
    """Copies of the build's initial snapshot: unpickling one is an order of magnitude
    cheaper than reading the database (and a check may change its copy), lending one that
    the last check gave back untouched cheaper still."""
    key = baseline.image_digest
    if key not in _SNAPSHOT_COPIES:
        _SNAPSHOT_COPIES[key] = Lender(Copies(baseline.snapshot).fresh)
    return _SNAPSHOT_COPIES[key]


def _initial_snapshot(baseline: Baseline) -> Snapshot:
    """A fresh copy of the build's initial snapshot."""
    return _initial_copies(baseline).fresh()


def _template_file(fixture: Path, baseline: Baseline) -> Path:
    """The build's file, which the evaluator's view of s0 opens read-only: written once per
    process and fixture build, in the process's own folder, and shared by its environments."""
    known = _TEMPLATE_FILES.get(baseline.image_digest)
    own = _own_folder(os.getpid(), os.environ.get(TMPDIR_ENV), tempfile.tempdir)
    if known is not None and known[0] == own and os.path.exists(known[1]):
        return known[1]  # written already, and still there (a forked child writes its own)
    path = process_dir() / "templates" / f"{baseline.image_digest[:32]}.db"
    try:
        if not path.exists():  # written whole under another name, then renamed: never partial
            path.parent.mkdir(exist_ok=True)
            partial = make_workdir("template-") / path.name
            _opening(lambda: partial.write_bytes(baseline.image))
            partial.replace(path)
            partial.parent.rmdir()
    except OSError as exc:  # a full disk, a file size limit: this machine's, not the fixture's
        raise EnvironmentFailure(
            f"fixture {fixture}: built, but its database cannot be written to the harness's"
            f" work folder {path.parent}: {exc.strerror or exc}"
        ) from exc
    _TEMPLATE_FILES[baseline.image_digest] = (path.parent.parent, path)
    return path


_TEMPLATE_FILES: dict[str, tuple[Path, Path]] = {}
"""The build files written by this process, by image digest, with the process's folder they
are in (kept apart: finding it from the path on every environment cost more than the rest)."""


@lru_cache(maxsize=8)
def _own_folder(pid: int, root: str | None, tempdir: str | None) -> Path:
    """This process's folder under :func:`temp_root`, by what that depends on (building the
    path costs more than the rest of finding the template)."""
    return temp_root() / f"pid-{pid}"


def _bare(column: str) -> str:
    """A column named in SQL; ``rowid`` bare (quoted, it names no column: a string)."""
    return column if column == "rowid" else quote(column)


def fixture_image(fixture: Path, clock: datetime) -> tuple[bytes, str]:
    """The fixture built into a SQLite image with the clock, and its state hash: built once
    per process (other kinds start from this build too)."""
    baseline = fixture_baseline(fixture, clock)
    return baseline.image, baseline.state_hash


def fixture_baseline(fixture: Path, clock: datetime, content: bytes | None = None) -> Baseline:
    """The fixture's first build in this process, read once (see :class:`Baseline`); of
    *content*, the fixture's bytes as the caller read them, where given."""
    with fixture_errors(fixture):
        # By format and content, not path: a build depends on nothing else (the same fixture
        # copied per task, as an importer writes them, is built once).
        digest = _CONTENT_HASHES.get(fixture) if content is None else sha256_bytes(content)
        known = _TEMPLATES.get((fixture.suffix.lower(), digest, clock.isoformat()))
        if known is not None:
            return known
        return _built(fixture, fixture_bytes(fixture) if content is None else content, clock)


def _built(fixture: Path, content: bytes, clock: datetime) -> Baseline:
    """The build of *content*, known by the hash of those very bytes: the file read again
    (hashed by one read, built from another) may have been replaced in between, and a build
    of the new bytes under the old hash is what every later environment of the old content
    would restore."""
    kind = (fixture.suffix.lower(), sha256_bytes(content))
    key = (*kind, clock.isoformat())
    if key not in _TEMPLATES:
        built = _BUILDS.get(kind)
        image = (
            _template_image(fixture, content, clock) if built is None else _reclocked(built, clock)
        )
        _TEMPLATES[key] = Baseline.read(image)
        _BUILDS.setdefault(kind, _TEMPLATES[key])
    return _TEMPLATES[key]


def fixture_bytes(fixture: Path) -> bytes:
    """The fixture file's bytes, in one read, at most :data:`MAX_FIXTURE_BYTES` (a YAML one
    :data:`groundstate.spec.files.MAX_FILE_BYTES`, as every YAML file): what a template is
    both hashed and built from."""
    if fixture.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(fixture))
    limit = MAX_FILE_BYTES if fixture.suffix in {".yaml", ".yml"} else MAX_FIXTURE_BYTES
    return read_limited(fixture, max_bytes=limit)


@contextmanager
def fixture_errors(fixture: Path) -> Iterator[None]:
    """What reading or building *fixture* failed on, as the EnvironmentFailure naming it."""
    try:
        yield
    except IsADirectoryError:  # named as every file of a suite that is a folder is
        folder = SpecError(fixture, None, "is a folder, not a file (a .sql, .yaml or .json)")
        raise EnvironmentFailure(f"fixture {folder}") from folder
    except (OSError, ValueError, sqlite3.Error, SpecError) as exc:
        raise EnvironmentFailure(f"fixture {fixture}: {exc}") from exc


_CONTENT_HASHES = SettledFileCache(hash_file)
"""Fixture digests, read again only when a fixture's stat changed."""


FIXTURE_BUILD_LIMIT = 300.0
"""Seconds a fixture may take to build: past them its SQL is interrupted (a recursive query
that never ends would otherwise hang ``check``, ``validate`` and every batch)."""


class FixtureTooSlow(ValueError):
    """The fixture's SQL ran past :data:`FIXTURE_BUILD_LIMIT`."""


MAX_FIXTURE_BYTES = 64 * 1024 * 1024
"""A ``.sql`` or ``.json`` fixture file larger than this is refused (a YAML one past
:data:`groundstate.spec.files.MAX_FILE_BYTES`, as every YAML file)."""
MAX_FIXTURE_DATABASE_BYTES = 1024 * 1024 * 1024
"""The largest database a fixture may build: every process holds its image, and every reset
copies it."""


class FixtureRefused(ValueError):
    """The fixture's SQL did what a build may not (see :func:`guard_build`)."""


class FixtureTooLarge(ValueError):
    """The database the fixture builds is past :data:`MAX_FIXTURE_DATABASE_BYTES`."""


_SIZE_PRAGMAS = frozenset({"page_size", "max_page_count"})


def guard_build(connection: sqlite3.Connection) -> list[str]:
    """Bound what a fixture's SQL may do on *connection*; the returned list fills with why a
    statement was refused (SQLite itself says only "not authorized").

    A fixture builds its database from its own text: ``ATTACH`` and ``VACUUM INTO`` would read
    or write a file outside the suite (data no suite hash or lock covers, or a file left
    wherever it names, by ``check`` too). The database may grow to
    :data:`MAX_FIXTURE_DATABASE_BYTES`, a limit set in pages, so the page size and the page
    limit are the build's to set, not the fixture's.
    """
    refused: list[str] = []

    def authorize(action: int, arg1: str | None, arg2: str | None, *_: object) -> int:
        if action == sqlite3.SQLITE_ATTACH:
            refused.append(
                "ATTACH and VACUUM INTO are not allowed in a fixture: it builds its database"
                " from its own text (no suite hash covers another file)"
            )
            return sqlite3.SQLITE_DENY
        setting = action == sqlite3.SQLITE_PRAGMA and arg2 is not None
        if setting and (arg1 or "").lower() in _SIZE_PRAGMAS:
            refused.append(f"PRAGMA {arg1} is set by groundstate, not by a fixture")
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    page_size = connection.execute("PRAGMA page_size").fetchone()[0]
    connection.execute(f"PRAGMA max_page_count = {MAX_FIXTURE_DATABASE_BYTES // page_size}")
    connection.set_authorizer(authorize)
    return refused


def build_failure(exc: BaseException, refused: list[str]) -> ValueError | None:
    """What a fixture's failure *exc* means when no one value of its SQL is wrong: a statement
    :func:`guard_build` refused, or a database past its size; None otherwise."""
    code = getattr(exc.__cause__ or exc, "sqlite_errorcode", None)
    if code == sqlite3.SQLITE_AUTH and refused:
        return FixtureRefused(refused[-1])
    if code == sqlite3.SQLITE_FULL:
        return FixtureTooLarge(
            f"builds a database larger than {MAX_FIXTURE_DATABASE_BYTES / 2**20:g} MiB, the"
            " most a fixture may (every process holds it, every reset copies it)"
        )
    return None


def _template_image(fixture: Path, content: bytes, clock: datetime) -> bytes:
    connection = sqlite3.connect(":memory:", isolation_level=None)
    deadline = time.monotonic() + FIXTURE_BUILD_LIMIT
    connection.set_progress_handler(lambda: int(time.monotonic() > deadline), PROGRESS_STEPS)
    try:
        seen = determinism.watch(connection)
        refused = guard_build(connection)
        try:
            _load_fixture(fixture, content, connection)
        except (sqlite3.Error, SpecError) as exc:
            if time.monotonic() > deadline:
                raise FixtureTooSlow(f"did not build within {FIXTURE_BUILD_LIMIT:g}s") from exc
            failure = build_failure(exc, refused)
            if failure is not None:
                raise failure from exc
            raise
        determinism.refuse(seen)
        connection.set_authorizer(None)
        connection.set_progress_handler(None, 0)
        connection.execute(f"CREATE TABLE {META_TABLE}(key TEXT PRIMARY KEY, value TEXT)")
        connection.execute(f"INSERT INTO {META_TABLE} VALUES ('now', ?)", (clock.isoformat(),))
        return connection.serialize()
    finally:
        connection.close()


def _reclocked(built: Baseline, clock: datetime) -> bytes:
    """The image of *built*'s fixture with the clock at *clock*: the fixture's SQL is not run
    again for another clock (validation's conformance check, tasks at other times)."""
    connection = sqlite3.connect(":memory:", isolation_level=None)
    try:
        connection.deserialize(built.image)
        connection.execute(
            f"UPDATE {META_TABLE} SET value = ? WHERE key = 'now'", (clock.isoformat(),)
        )
        return connection.serialize()
    finally:
        connection.close()


def _load_fixture(fixture: Path, content: bytes, connection: sqlite3.Connection) -> None:
    if fixture.suffix == ".sql":
        connection.executescript(decode_utf8(fixture, content))
        return
    if fixture.suffix not in {".yaml", ".yml", ".json"}:
        raise ValueError("expected a .sql, .yaml or .json fixture")
    data = read_data_fixture(fixture, content)
    connection.executescript(data.schema_sql)
    connection.execute("BEGIN")
    for table, rows in data.rows.items():
        for i, row in enumerate(rows):
            try:
                _insert(connection, table, row)
            except (sqlite3.Error, OverflowError) as exc:  # named by its place in the file,
                # as other errors are (an integer past 64 bits overflows, not an sqlite3.Error)
                raise SpecError(fixture, f"rows.{table}[{i}]", str(exc)) from exc
    connection.execute("COMMIT")


def read_data_fixture(fixture: Path, content: bytes | None = None) -> _DataFixture:
    """A ``.yaml``/``.yml``/``.json`` fixture's schema and rows, as the build reads them (of
    *content*, the bytes read of it, where given)."""
    if fixture.suffix == ".json":
        text = read_fixture_text(fixture) if content is None else decode_utf8(fixture, content)
        return load_model(fixture, _DataFixture, data=parse_json(fixture, text))
    if content is None:
        return load_model(fixture, _DataFixture)  # the hardened loader every YAML file goes through
    data = parse_yaml(fixture, decode_utf8(fixture, content))  # the same loader, on the bytes read
    return load_model(fixture, _DataFixture, data=data)


def read_fixture_text(fixture: Path) -> str:
    """The text of a ``.sql`` or ``.json`` fixture, at most :data:`MAX_FIXTURE_BYTES`."""
    return read_text(fixture, max_bytes=MAX_FIXTURE_BYTES)


def _insert(connection: sqlite3.Connection, table: str, row: dict[str, JsonScalar]) -> None:
    if not row:  # `- {}`: a row of the columns' defaults (``()`` is no SQL: a syntax error)
        connection.execute(f"INSERT INTO {quote(table)} DEFAULT VALUES")
        return
    columns = ", ".join(quote(column) for column in row)
    marks = ", ".join("?" for _ in row)
    # A bare YAML date or timestamp is the text written (spec.files), as an SQL fixture has it.
    connection.execute(f"INSERT INTO {quote(table)} ({columns}) VALUES ({marks})", [*row.values()])


def _virtual_tables(build: str, kinds: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The build's virtual tables, and each shadow table's virtual table: once per build."""
    known = _VIRTUAL.get(build)
    if known is None:
        virtual = [name for name, kind in kinds.items() if kind == "virtual"]
        known = _VIRTUAL[build] = (virtual, _shadow_parents(kinds))
    return known


_VIRTUAL: dict[str, tuple[list[str], dict[str, str]]] = {}

_VIRTUAL_MODULE = re.compile(r"\bUSING\s+(\w{1,20})", re.IGNORECASE)
"""A virtual table's module in its ``CREATE VIRTUAL TABLE`` statement."""
_INDEX_CHECKS = {
    "fts5": "INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)",
    "fts4": "INSERT INTO {table}({table}) VALUES ('integrity-check')",
    "fts3": "INSERT INTO {table}({table}) VALUES ('integrity-check')",
    "rtree": "SELECT rtreecheck(?)",
    "rtree_i32": "SELECT rtreecheck(?)",
}
"""SQLite's own check that a virtual table's index agrees with its rows, by module: an
``INSERT`` that raises ``SQLITE_CORRUPT_VTAB`` if not (FTS5's rank 1 compares an external
content table's rows too), or ``rtreecheck``'s report (``ok``)."""
_KEPT_CHECKS = {
    "fts5": fts5_settings_refused,
    "fts4": fts4_totals_refused,
}
"""The checks of what a search table keeps beside its index that its ``integrity-check``
does not read, by module (see :mod:`~groundstate.environments.sqlite_searches`)."""


def _shadow_parents(kinds: dict[str, str]) -> dict[str, str]:
    """Each shadow table's virtual table (``docs_data`` -> ``docs``: the longest match)."""
    virtual = sorted((name for name, kind in kinds.items() if kind == "virtual"), key=len)
    return {
        shadow: parent
        for shadow, kind in kinds.items()
        if kind == "shadow"
        for parent in virtual
        if shadow.startswith(f"{parent}_")
    }


_FINGERPRINT = (
    "SELECT (SELECT count(*) FROM temp.sqlite_master),"
    " 'a' LIKE 'A'"  # case_sensitive_like, the one setting that has no pragma to read it
)
"""What a connection holds besides the fixture (see ``_fingerprint``)."""

_BUSY_TIMEOUT_MS = 5000
"""How long the control connection waits for a lock (``sqlite3.connect``'s default)."""


def _closed_connection(factory: type[C]) -> C:
    # closed from any thread
    connection = sqlite3.connect(":memory:", check_same_thread=False, factory=factory)
    connection.close()
    return connection


_CLOSED = _closed_connection(sqlite3.Connection)
_CLOSED_AGENT = _closed_connection(AgentConnection)
"""What an environment that handed its live database to the pool keeps in its place: a late
caller (a thread its attempt left behind) gets "cannot operate on a closed database"."""


def _deny_everything(*_: object) -> int:
    """The authorizer of a pooled agent connection, on which nothing may run."""
    return sqlite3.SQLITE_DENY


_LIMITS = tuple([getattr(sqlite3, n) for n in dir(sqlite3) if n.startswith("SQLITE_LIMIT_")])


def _default_limits() -> Mapping[int, int]:
    connection = sqlite3.connect(":memory:")
    try:
        limits = {category: connection.getlimit(category) for category in _LIMITS}
    finally:
        connection.close()
    return MappingProxyType({**limits, sqlite3.SQLITE_LIMIT_LENGTH: AGENT_MAX_LENGTH})


_AGENT_LIMITS = _default_limits()
"""The agent connection's limits: SQLite's defaults, and AGENT_MAX_LENGTH."""


class InitialConnections:
    """Read-only connections to the process's build files (the initial state graders
    query), kept by the environments that closed for the next ones to take instead of
    opening their own (an open, its date functions and SQLite's reading of the schema cost
    0.05-0.2 ms per attempt). Only a connection as new is kept: an
    :class:`~groundstate.environments.sqlite_live.EvaluatorConnection` that noted nothing (no
    setting, TEMP object, attached database or open transaction; no Python change), let go
    with no query running, of this process (a forked child opens its own), to the file now
    at its path."""

    MOST = 4
    """Connections kept per build file (as many as attempts ran on it at once, at most)."""

    def __init__(self) -> None:
        self._kept: dict[Path, list[tuple[EvaluatorConnection, tuple[int, ...]]]] = {}
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def take(self, path: Path) -> EvaluatorConnection:
        with self._lock:
            kept = self._kept.pop(path, []) if self._pid == os.getpid() else []
            found = kept.pop() if kept else None
            if kept:
                self._kept[path] = kept
        if found is not None:
            if found[1] == _identity(path):
                return found[0]
            found[0].close()  # another file put at the path: what a new connection opens
        return _evaluator_for(path)

    def give(self, path: Path, connection: EvaluatorConnection, *, idle: bool) -> None:
        """Keep *connection* (its environment has let it go; *idle*: no query was running
        on it) when it is as new, else close it."""
        identity = _identity(path) if idle and connection.reusable else None
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's are not its own
                self._kept, self._pid = {}, os.getpid()
            kept = self._kept.setdefault(path, [])
            if identity is not None and len(kept) < self.MOST:
                kept.append((connection, identity))
                return
        connection.close()

    def clear(self) -> None:
        with self._lock:
            kept, self._kept = self._kept, {}
        for connections in kept.values():
            for connection, _ in connections:
                connection.close()


def _identity(path: Path) -> tuple[int, ...] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns


INITIAL = InitialConnections()
"""This process's kept connections to the initial state (see :class:`InitialConnections`)."""


def _evaluator_for(path: Path) -> EvaluatorConnection:
    """The graders' read-only connection to the live file, watching for SQL that would keep
    it from the pool."""
    uri = _read_only_uri(path)
    connection = _opening(
        lambda: sqlite3.connect(uri, uri=True, check_same_thread=False, factory=EvaluatorConnection)
    )
    connection.watch()
    determinism.controlled(connection, lambda: _clock_of(connection))
    return connection


def _reverse_unordered(connection: sqlite3.Connection, on: bool) -> None:
    """Set ``reverse_unordered_selects`` as the harness, not as a grader: the evaluator
    connection keeps whether it noted a grader's own setting (which keeps it from the pool)."""
    noted = getattr(connection, "noted", None)
    sqlite3.Connection.execute(connection, f"PRAGMA reverse_unordered_selects = {int(on)}")
    if noted is not None:
        connection.noted = noted  # type: ignore[attr-defined]


def _clock_of(connection: sqlite3.Connection) -> str:
    """The controlled clock's ISO text in *connection*'s database."""
    row = sqlite3.Connection.execute(
        connection, f"SELECT value FROM {META_TABLE} WHERE key = 'now'"
    ).fetchone()
    return str(row[0])


@lru_cache(maxsize=64)
def _read_only_uri(path: Path) -> str:
    """(Resolving a path costs a system call per folder: a pooled live file's is reused.)"""
    return f"{path.resolve().as_uri()}?mode=ro"


T = TypeVar("T")
C = TypeVar("C", bound=sqlite3.Connection)

OPEN_TRIES = 5
"""Tries of an open that fails for want of file descriptors (EMFILE: the process's, ENFILE:
the system's) before the environment fails: attempts running alongside may close theirs."""
OPEN_BACKOFF = 0.05
"""Seconds before the second try; doubled before each next one, up to OPEN_BACKOFF_MAX."""
OPEN_BACKOFF_MAX = 1.0


def _opening(open_: Callable[[], T]) -> T:
    """``open_()`` (a connection, the work directory), tried again with exponential backoff
    while the process is out of file descriptors (the pooled live databases are closed
    first: their descriptors are idle); then an :class:`EnvironmentFailure` naming the errno.
    Any other failure is raised at once, as before."""
    tries, delay = 1, OPEN_BACKOFF
    while True:
        try:
            return open_()
        except (OSError, sqlite3.Error) as exc:
            code = _out_of_files(exc)
            if code is None:
                raise
            if tries == OPEN_TRIES:
                raise EnvironmentFailure(
                    f"sqlite environment: out of file descriptors ([Errno {code}] "
                    f"{errno.errorcode[code]}: {os.strerror(code)}) after {tries} tries: {exc}"
                ) from exc
        POOL.drain()
        time.sleep(delay)
        tries, delay = tries + 1, min(2 * delay, OPEN_BACKOFF_MAX)


_OUT_OF_FILES = frozenset({errno.EMFILE, errno.ENFILE})


def _out_of_files(exc: OSError | sqlite3.Error) -> int | None:
    """EMFILE or ENFILE when *exc* is for want of file descriptors, else None.

    SQLite says only "unable to open database file" (``SQLITE_CANTOPEN``), whatever the cause:
    opening ``/dev/null`` tells whether it is the descriptors.
    """
    if isinstance(exc, OSError):
        return exc.errno if exc.errno in _OUT_OF_FILES else None
    if getattr(exc, "sqlite_errorcode", None) != sqlite3.SQLITE_CANTOPEN:
        return None
    try:
        os.close(os.open(os.devnull, os.O_RDONLY))
    except OSError as probe:
        return probe.errno if probe.errno in _OUT_OF_FILES else None
    return None


class _Refusals:
    """The agent's errors among a call's SQLite errors, each made the :class:`ToolError` it
    is (its writes undone): a text that is not UTF-8 (:func:`_text_refusal`), a value the
    harness's type checks refuse (``base.refused_writes``), or, at the COMMIT
    (*deferred*), a deferred constraint broken (:func:`_deferred_refusal`). A class, not a
    generator's context manager: it is entered twice at every call."""

    def __init__(self, deferred: bool) -> None:
        self._deferred = deferred

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, trace: object) -> None:
        if not isinstance(exc, sqlite3.Error):
            return
        if self._deferred:
            refusal = _deferred_refusal(exc)
        else:
            refusal = _text_refusal(exc) or write_refusal(exc)
        if refusal is None:
            return
        raise refusal from exc


def _text_refusal(exc: sqlite3.Error) -> ToolError | None:
    """A call that wrote a TEXT value that is not UTF-8 (``CAST(x'ff' AS TEXT)``) is the
    agent's error, undone: its writes, the state hash and every snapshot could not read it,
    and the call crashed as an environment failure (an invalid attempt the agent caused).
    Such a write fails in the write log's trigger (:data:`NOT_UTF8`: the agent's statements
    may call no Python function but the harness's), or a virtual table's rows cannot be read
    after the call."""
    if not isinstance(exc, sqlite3.OperationalError):
        return None
    if str(exc) != NOT_UTF8 and "decode to UTF-8" not in str(exc):
        return None
    return ToolError(
        "the call wrote a text value that is not valid UTF-8 (a blob cast to TEXT, say): "
        "it was undone; store bytes as a BLOB"
    )


def _deferred_refusal(exc: sqlite3.Error) -> ToolError | None:
    """A call whose writes break a deferred constraint (a ``DEFERRABLE INITIALLY DEFERRED``
    foreign key to a row that is not there) fails at the harness's COMMIT, after the tool
    returned: no tool could catch it, and it crashed the call, an environment failure (an
    invalid attempt) the agent's arguments caused. It is the agent's error, undone."""
    if not isinstance(exc, sqlite3.IntegrityError):
        return None
    return ToolError(f"the call's writes break a deferred constraint ({exc}): they were undone")


_REFUSALS, _DEFERRED = _Refusals(deferred=False), _Refusals(deferred=True)

_BROKEN_DATABASE_CODES = frozenset(
    {
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_CORRUPT,
        sqlite3.SQLITE_NOTADB,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_PROTOCOL,
        sqlite3.SQLITE_NOMEM,
    }
)
"""SQLite's primary result codes of a database (or its disk, or the machine's memory) that
failed, not of a statement."""


def _broken_database(exc: BaseException, *, harness_locked: bool) -> sqlite3.Error | None:
    """The SQLite error in *exc* or in what it was raised from or while handling, when it
    says the database or its disk failed (full, an I/O error, corrupt) or the machine is out
    of memory (the agent's values are bounded by ``AGENT_MAX_LENGTH``), or None.

    A tool that makes the database's errors its own (``except sqlite3.Error as e: raise
    ToolError(str(e))``) made a full disk the agent's ``tool_error``, and the attempt failed
    on the environment's fault. Busy counts only while the harness's own connection holds a
    lock (*harness_locked*): otherwise the holder is the agent's (a connection a tool opened
    and left in a transaction, which ``locked_outside_calls`` names after the call). Locked
    (a table of the agent's own connection that a statement of its own is reading) is the
    agent's doing (no shared cache: only its own statements could hold such a lock)."""
    codes = _BROKEN_DATABASE_CODES | ({sqlite3.SQLITE_BUSY} if harness_locked else set())
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        code = getattr(cause, "sqlite_errorcode", None)
        # CORRUPT_VTAB is an index of a virtual table broken by the agent's own writes to
        # its shadow tables (which ``write`` permission allows): the agent's doing.
        if (
            isinstance(cause, sqlite3.Error)
            and isinstance(code, int)
            and code & 0xFF in codes
            and code != sqlite3.SQLITE_CORRUPT_VTAB
        ):
            return cause
        cause = cause.__cause__ or cause.__context__
    return None


def _cap_of(options: Mapping[str, Any] | SqliteOptions | None, image: bytes) -> int:
    """The bytes *options* (suite.yaml's ``environment_options``) let an attempt's database
    grow to, or :func:`agent_database_cap`'s. A cap below the fixture's built database is
    refused: every write of the agent's, however honest, would fail as its own error."""
    megabytes = SqliteOptions.model_validate(options or {}).max_database_mb
    if megabytes is None:
        return agent_database_cap(image)
    if megabytes * 2**20 < len(image):
        raise EnvironmentFailure(
            f"sqlite environment: suite.yaml environment_options.max_database_mb is"
            f" {megabytes}, less than the fixture's built database"
            f" ({len(image) / 2**20:.1f} MiB): no write of the agent's could pass it"
        )
    return megabytes * 2**20


def agent_database_cap(image: bytes) -> int:
    """The bytes an attempt's database may grow to: :data:`AGENT_DATABASE_GROWTH` times its
    fixture's build, and at least :data:`AGENT_DATABASE_MIN_BYTES`."""
    return max(AGENT_DATABASE_GROWTH * len(image), AGENT_DATABASE_MIN_BYTES)


def free_bytes(path: Path) -> int:
    """The bytes free for this process on the disk holding *path*."""
    return shutil.disk_usage(path).free


def _sqlite_disks(live: Path) -> list[Path]:
    """The folders SQLite writes an attempt's database to: the live file's (journal
    included) and its temporary files' (statement journals, sorts), the first of SQLite's
    choices that is a folder it may write."""
    choices = [os.environ.get("SQLITE_TMPDIR"), os.environ.get("TMPDIR")]
    choices += ["/var/tmp", "/usr/tmp", "/tmp"]
    for choice in choices:
        if choice and os.path.isdir(choice) and os.access(choice, os.W_OK | os.X_OK):
            return [live.parent, Path(choice)]
    return [live.parent]


@contextmanager
def _environment_errors(action: str) -> Iterator[None]:
    """Report sqlite and file errors outside the agent's calls as environment failures."""
    try:
        yield
    except (OSError, sqlite3.Error) as exc:
        raise EnvironmentFailure(f"sqlite environment: {action} failed: {exc}") from exc
