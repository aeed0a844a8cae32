"""The live file of a SQLite environment, and a per-process pool that reuses it.

Opening the live file's connections and installing the write log's TEMP triggers on the agent's
connection cost more than the rest of an environment's work in an attempt together. So when an
environment closes after an attempt that ended cleanly, it writes the fixture's build back into
its live file under the connections still open and hands the file, its work directory and the
harness's two connections to it (the control connection, and the agent's with its triggers) to
:data:`POOL`, keyed by the build; the next environment of that build takes them instead of
opening new ones, and its first reset checks the file byte for byte as always. The graders'
read-only connection goes with them where nothing of the attempt can stay in it
(:class:`EvaluatorConnection`): its first query would otherwise read the schema again.

Writing the file under open connections is how SQLite sees another process's commit: a
connection that starts a read compares the file's change counter with the one it last saw and
drops its page cache when they differ. The write is made only while no connection holds a lock
on the file (a probe takes an exclusive lock first), and every page cache is dropped after it
as well, so that not even a write that left the counter alone can leave a stale page behind.
The schema is the build's before and after, so the TEMP triggers stay as they are. (SQLite's
backup API into the live connection would not do: it bumps the destination's change counter
and schema cookie, so the file's bytes are no longer the build's, and the schema change makes
every connection parse its TEMP triggers again.)

What the pool never reuses: an environment whose attempt raised through its ``with`` block, hit
an environment failure, a tool crash or the time limit, failed a reset check or a health
probe, was closed while a tool call was still running, or whose agent connection holds objects
the harness did not make (functions, collations, attached or TEMP objects). Those close as
before. The graders' connection is closed instead of reused when a check's SQL did more than
read (set a pragma, made a TEMP object, attached a database, opened a transaction) or a view
was still querying it; a view left behind by an attempt can no longer reach it
(:class:`EvaluatorLease`). Subclasses never pool: they may change what the connections hold
in ways no check here sees. A forked child forgets the parent's pool without touching it.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
from collections.abc import Callable, Mapping
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from groundstate.environments.sqlite_writes import WriteLog
from groundstate.leftovers import at_exit
from groundstate.readwatch import attached

T = TypeVar("T")

POOL_SIZE = 16
"""Live databases a process keeps for reuse at least, over every fixture build (the least
recently pooled is closed first; more while more environments were open at once, see
:attr:`LivePool.peak`; 0 switches the pool off): each holds four file descriptors (three
connections and the file's own) and about 0.6 MB (the retail example's), its connections'
page caches emptied when it is pooled. An open that fails for want of descriptors closes them
all before it tries again."""

_MAGIC = b"SQLite format 3\0"


def _sound(header: bytes, size: int) -> bool:
    """Whether *header* (the file's first 32 bytes at least) is SQLite's and its page size
    times its page count is the file's *size*."""
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    return header.startswith(_MAGIC) and page_size * pages == size


_SIDE_ENDINGS = ("-journal", "-wal", "-shm")


def side_files(path: Path) -> list[Path]:
    """The files SQLite keeps beside the database *path*: its rollback journal, write-ahead
    log and shared-memory index (none of them while no connection is writing)."""
    return [path.with_name(f"{path.name}{end}") for end in _SIDE_ENDINGS]


class LiveFile:
    """The live database file, with a descriptor kept open for reading its header and
    restoring its bytes without opening it again (nothing else in the process writes it)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd
        self._name = str(path)
        self._sides = tuple([f"{path}{end}" for end in _SIDE_ENDINGS])
        """The side files' paths as text, made once: every attempt looks for them, and
        building their ``Path`` objects cost more than the system calls."""

    def present(self) -> bool:
        """Whether the file is still there (its folder may have been removed)."""
        return os.path.exists(self._name)

    def replaced(self) -> bool:
        """Whether the path no longer names the file open here (another file renamed over
        it, or it was removed): the harness's connections would go on with the old one."""
        try:
            here, there = os.fstat(self._fd), os.stat(self._name)
        except OSError:
            return True
        return (here.st_ino, here.st_dev) != (there.st_ino, there.st_dev)

    def beside(self) -> bool:
        """Whether any of the file's :func:`side_files` exists."""
        return any(os.path.exists(side) for side in self._sides)

    @classmethod
    def open(cls, path: Path) -> LiveFile:
        return cls(path, os.open(path, os.O_RDWR | os.O_CLOEXEC))

    def change_counter(self) -> int:
        """The file change counter of the header: every commit by any connection moves it (in
        the rollback-journal mode the live file always has); -1 for an unreadable file or one
        whose header is not sound (not SQLite's magic string, or a page count that does not
        fit the file's size): a write that bypassed SQLite and left the counter alone is
        still seen when it broke the header."""
        return self.version()[0]

    def version(self) -> tuple[int, int]:
        """The :meth:`change_counter` and the file's inode change time in nanoseconds (-1
        when unreadable), read with the same two system calls. Any write to the file moves
        the change time, and no process can set it back: a write that put the header's
        counter back as it was (a raw ``os.pwrite`` of its four bytes after an ``UPDATE``),
        or that bypassed SQLite and left it alone, still moves it (unless made within the
        same tick of the file system's clock as the harness's last look, on a file system
        whose times are coarse). ``os.utime`` sets the modification time, not this one."""
        try:
            header = os.pread(self._fd, 32, 0)
            stat = os.fstat(self._fd)
        except OSError:
            return -1, -1
        counter = int.from_bytes(header[24:28], "big") if _sound(header, stat.st_size) else -1
        return counter, stat.st_ctime_ns

    def header(self) -> bytes:
        """The file's 100-byte header (b"" when unreadable): its change counter, journal mode
        (bytes 18-19) and page count move with any commit, mode switch or growth."""
        try:
            return os.pread(self._fd, 100, 0)
        except OSError:
            return b""

    def holds(self, image: bytes) -> bool:
        """Whether the file's bytes are exactly *image* (one byte more is read: a longer
        file differs)."""
        return os.pread(self._fd, len(image) + 1, 0) == image

    def write(self, image: bytes) -> None:
        """Make the file's bytes *image* (call only while no connection holds a lock)."""
        done = 0
        while done < len(image):
            done += os.pwrite(self._fd, memoryview(image)[done:], done)
        os.ftruncate(self._fd, len(image))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class WatchedConnection(sqlite3.Connection):
    """A connection that notes when Python code changes it in a way the pool could not undo:
    a function, collation or callback of its own, a limit, an extension, another database
    deserialized into it. Such a connection is not reused."""

    meddled = False
    _OWN: frozenset[str] = frozenset({"meddled"})
    """The instance attributes the harness sets (see :meth:`added_attributes`)."""

    def added_attributes(self) -> list[str]:
        """The attributes Python code set on this object besides the harness's own (a tool's
        cache, ``db.seen = set()``): they would outlive the attempt on a reused connection
        and carry what one attempt learnt into the next."""
        return sorted(set(vars(self)) - self._OWN)

    def _meddle(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self.meddled = True
        return method(self, *args, **kwargs)

    def create_function(self, *args: Any, **kwargs: Any) -> None:
        self._meddle(sqlite3.Connection.create_function, *args, **kwargs)

    def create_aggregate(self, *args: Any, **kwargs: Any) -> None:
        self._meddle(sqlite3.Connection.create_aggregate, *args, **kwargs)

    def create_window_function(self, *args: Any, **kwargs: Any) -> None:
        self._meddle(sqlite3.Connection.create_window_function, *args, **kwargs)

    def create_collation(self, *args: Any, **kwargs: Any) -> None:
        self._meddle(sqlite3.Connection.create_collation, *args, **kwargs)

    def set_authorizer(self, *args: Any, **kwargs: Any) -> None:
        self._meddle(sqlite3.Connection.set_authorizer, *args, **kwargs)

    def set_progress_handler(self, *args: Any, **kwargs: Any) -> None:
        self._meddle(sqlite3.Connection.set_progress_handler, *args, **kwargs)

    def set_trace_callback(self, *args: Any, **kwargs: Any) -> None:
        self._meddle(sqlite3.Connection.set_trace_callback, *args, **kwargs)

    def setlimit(self, *args: Any, **kwargs: Any) -> int:
        return int(self._meddle(sqlite3.Connection.setlimit, *args, **kwargs))

    def enable_load_extension(self, *args: Any, **kwargs: Any) -> None:
        self._meddle(sqlite3.Connection.enable_load_extension, *args, **kwargs)

    def load_extension(self, *args: Any, **kwargs: Any) -> None:
        self._meddle(sqlite3.Connection.load_extension, *args, **kwargs)

    def deserialize(self, *args: Any, **kwargs: Any) -> None:
        self._meddle(sqlite3.Connection.deserialize, *args, **kwargs)


class AgentConnection(WatchedConnection):
    """The agent's connection: what a tool's Python changes on it is noted (see
    :class:`WatchedConnection`); the harness sets its own through the ``harness_`` methods.

    What Python code could do on it past the authorizer is refused, as a denial the
    environment records (so the call is rolled back and raises ``PermissionDenied``): setting
    another authorizer or progress handler (the permissions and the deadline would stop for
    the rest of the attempt), a function that takes the name of a built-in one or of the
    harness's own (the write log's triggers call the harness's image writer; a tool's own
    ``quote`` had made a call's writes vanish), loading an
    extension, replacing the database (``deserialize``), copying it out (``backup`` reads every
    table, those the agent may not read included), a blob opened for writing (no trigger sees
    a blob write: the call showed no write, and a read-only table was written), a blob read of
    a table the agent may not read, and ``executescript`` (Python commits the call's
    transaction before the script)."""

    _OWN = frozenset({"meddled", "_authorizer", "_deny", "_harness_names"})
    _authorizer: Callable[..., int] = staticmethod(lambda *_: sqlite3.SQLITE_DENY)
    _deny: Callable[[str], object] = staticmethod(lambda action: None)
    _harness_names: frozenset[str] = frozenset()

    def _refuse(self, action: str) -> NoReturn:
        self._deny(action)
        raise sqlite3.DatabaseError(f"not authorized: {action}")

    def set_authorizer(self, *args: Any, **kwargs: Any) -> None:
        self._refuse("set_authorizer")

    def set_progress_handler(self, *args: Any, **kwargs: Any) -> None:
        self._refuse("set_progress_handler")

    def enable_load_extension(self, *args: Any, **kwargs: Any) -> None:
        self._refuse("enable_load_extension")

    def load_extension(self, *args: Any, **kwargs: Any) -> None:
        self._refuse("load_extension")

    def deserialize(self, *args: Any, **kwargs: Any) -> None:
        self._refuse("deserialize")

    def backup(self, *args: Any, **kwargs: Any) -> None:
        self._refuse("backup")

    def executescript(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        # Python commits an open transaction before a script: the call's own, which the
        # authorizer then refused as "transaction COMMIT", a denial no tool author could read.
        self._refuse("executescript (it would commit the call's transaction: use execute)")

    def create_function(self, *args: Any, **kwargs: Any) -> None:
        self._own_name(args[0] if args else kwargs.get("name"))
        super().create_function(*args, **kwargs)

    def create_aggregate(self, *args: Any, **kwargs: Any) -> None:
        self._own_name(args[0] if args else kwargs.get("name"))
        super().create_aggregate(*args, **kwargs)

    def create_window_function(self, *args: Any, **kwargs: Any) -> None:
        self._own_name(args[0] if args else kwargs.get("name"))
        super().create_window_function(*args, **kwargs)

    def _own_name(self, name: object) -> None:
        if str(name).lower() in BUILT_IN_FUNCTIONS | self._harness_names:
            self._refuse(f"function {name} (a built-in's or the harness's name)")

    def blobopen(
        self, table: str, column: str, row: int, /, *, readonly: bool = False, name: str = "main"
    ) -> sqlite3.Blob:
        if not readonly:
            self._refuse(f"write blob {table}.{column}")
        if self._authorizer(sqlite3.SQLITE_READ, table, column, name, None):  # it recorded why
            raise sqlite3.DatabaseError(f"not authorized: read blob {table}.{column}")
        return sqlite3.Connection.blobopen(self, table, column, row, readonly=True, name=name)

    # --- the harness's own -----------------------------------------------------------------

    def harness_function(self, name: str, arguments: int, function: Callable[..., Any]) -> None:
        """Define a function of the harness's (the write log's triggers call them): a tool's
        Python may not redefine it."""
        self._harness_names = self._harness_names | {name.lower()}
        sqlite3.Connection.create_function(self, name, arguments, function)

    def harness_settings(
        self,
        authorizer: Callable[..., int],
        progress: tuple[Callable[[], int], int] | None,
        deny: Callable[[str], object] = lambda action: None,
    ) -> None:
        """The authorizer, the progress handler (None: none) and what records a denial of
        Python's own (see the class)."""
        self._authorizer, self._deny = authorizer, deny
        sqlite3.Connection.set_authorizer(self, authorizer)
        handler, steps = progress or (None, 0)
        sqlite3.Connection.set_progress_handler(self, handler, steps)

    def harness_plain(self, limits: Mapping[int, int]) -> None:
        """Undo what Python code may have set on this object: factories, transaction
        handling, the trace callback, *limits*."""
        self.row_factory = None
        self.text_factory = str
        self.isolation_level = None
        sqlite3.Connection.set_trace_callback(self, None)
        for category, value in limits.items():
            sqlite3.Connection.setlimit(self, category, value)


_PLAIN_READS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)
INTROSPECTION_PRAGMAS = frozenset(
    {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list"}
)
"""Pragmas that read a table's description (their argument names the table)."""


def plain_read(action: int, arg1: str | None, arg2: str | None) -> bool:
    """Whether an authorizer's *action* only reads: no write (TEMP objects included), no
    attached database, no transaction, no pragma given a value."""
    return action in _PLAIN_READS or (
        action == sqlite3.SQLITE_PRAGMA
        and (arg2 is None or (arg1 or "").lower() in INTROSPECTION_PRAGMAS)
    )


class EvaluatorConnection(WatchedConnection):
    """The graders' read-only connection, which notes any SQL that could change what a later
    attempt's checks would see through it: a setting (a pragma given a value, such as
    ``reverse_unordered_selects``), a TEMP object, an attached database, a transaction left
    open. It allows everything, as a new connection would; a connection that noted anything,
    or that Python code changed (a function, a collation, a callback, an attribute of its
    own), is not reused."""

    noted = False
    _OWN = frozenset({"meddled", "noted"})

    def watch(self) -> None:
        sqlite3.Connection.set_authorizer(self, self._note)

    def _note(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None
    ) -> int:
        if not plain_read(action, arg1, arg2):
            self.noted = True
            if action == sqlite3.SQLITE_ATTACH and arg1:  # validation's watch of reads
                attached(arg1)
        return sqlite3.SQLITE_OK

    @property
    def reusable(self) -> bool:
        """Whether nothing was noted and the connection is as the harness set it up."""
        return not (
            self.noted
            or self.meddled
            or self.added_attributes()
            or self.in_transaction
            or self.row_factory is not None
            or self.text_factory is not str
        )


class EvaluatorLease:
    """One environment's hold on the evaluator connection, which its graders' views query
    through: once the environment lets the connection go (to the pool, or at a reset), a view
    left behind can neither query it nor interrupt a query of the next holder's."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection: sqlite3.Connection | None = connection
        self._querying = threading.Lock()
        """Held while a view's query runs: the connection is let go only when none does."""
        self._state = threading.Lock()

    def query(self, run: Callable[[sqlite3.Connection], T]) -> T:
        with self._querying:
            connection = self._connection
            if connection is None:
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            return run(connection)

    def interrupt(self) -> None:
        with self._state:
            if self._connection is not None:
                self._connection.interrupt()

    def revoke(self) -> bool:
        """Let the connection go; True when no query was running (it may be reused)."""
        idle = self._querying.acquire(blocking=False)
        try:
            with self._state:
                self._connection = None
        finally:
            if idle:
                self._querying.release()
        return idle


@dataclass
class TotalChanges:
    """``total_changes()`` for the agent's SQL, counted from the last reset rather than from
    when the connection opened, so a reused connection answers what a new one would; and
    without the rows the harness wrote on it (the write log's, which its triggers and its own
    statements write): an insert of one row answered 3, an update of two, 13."""

    connection: sqlite3.Connection
    log: WriteLog
    base: int = 0
    harness: int = 0
    """Rows the harness's own statements changed on the connection since the restart."""

    def __call__(self) -> int:
        return self.connection.total_changes - self.base - self.harness - self.log.logged

    def restart(self) -> None:
        self.base, self.harness, self.log.logged = self.connection.total_changes, 0, 0


@dataclass
class HeldDatabase:
    """A closed environment's live database as the pool keeps it, its file holding the
    build's bytes again."""

    build: str
    """The fixture build's image digest."""
    workdir: Path
    file: LiveFile
    control: sqlite3.Connection
    agent: AgentConnection
    writes: WriteLog
    total_changes: TotalChanges
    fingerprint: tuple[object, ...]
    """What the agent connection held after the harness set it up (see
    ``SqliteEnvironment._fingerprint``)."""
    evaluator: EvaluatorConnection | None = None
    """The graders' connection, where nothing of the attempt could stay in it."""
    header: bytes = b""
    """The file's header when it was pooled (see :meth:`untouched`)."""

    def untouched(self) -> bool:
        """Whether nothing wrote the file while it was pooled: a connection left open by an
        attempt's agent (a thread, a handle it kept) could commit to it, switch it to WAL or
        leave a journal, and the next attempt would inherit that state or its locks."""
        return self.file.header() == self.header != b"" and not self.file.beside()

    def close(self) -> None:
        for connection in (self.agent, self.control, self.evaluator):
            if connection is not None:
                connection.close()
        self.file.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def _descriptors() -> int:
    """The process's limit on open files (its soft limit), or a common default where it cannot
    be read: a pool past the peak's wave keeps at most a quarter of it (four per database)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return 1024
    return soft if soft > 0 else 1024


@dataclass
class LivePool:
    """Closed environments' live databases, for the next environment of the same build."""

    reused: int = 0
    """How many environments took a database from the pool (a count for tests and benches)."""
    live: int = 0
    """Environments of this process open now (each holds a live database)."""
    peak: int = 0
    """The most environments open at once so far: the pool keeps up to that many databases
    (at least :data:`POOL_SIZE`), so a batch's every attempt after its first wave reuses one
    instead of building (copying, connecting, installing the write log). Keeping no more than
    were open at once keeps the memory and disk at the batch's own peak; the descriptors the
    pool holds stay under a quarter of the process's limit (four per database), so that the
    peak of one batch does not leave later work in the process short of files."""
    _held: list[HeldDatabase] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _forsaken: list[HeldDatabase] = field(default_factory=list)

    def take(self, build: str) -> HeldDatabase | None:
        """The most recently pooled database of *build* whose file is still there (the
        process's folder may have been removed meanwhile) and untouched, or None."""
        while (held := self._pop(build)) is not None:
            if held.file.present() and held.untouched():
                with self._lock:
                    self.reused += 1
                return held
            held.close()
        return None

    def _pop(self, build: str) -> HeldDatabase | None:
        with self._lock:
            for index in range(len(self._held) - 1, -1, -1):
                if self._held[index].build == build:
                    return self._held.pop(index)
        return None

    def opened(self) -> None:
        """An environment holds a live database now (until :meth:`closed`)."""
        with self._lock:
            self.live += 1
            self.peak = max(self.peak, self.live)

    def closed(self) -> None:
        with self._lock:
            self.live -= 1

    def give(self, held: HeldDatabase) -> bool:
        """Keep *held* for reuse; False (nothing kept) when the pool is switched off."""
        if POOL_SIZE <= 0:
            return False
        with self._lock:
            self._held.append(held)
            size = max(POOL_SIZE, min(self.peak, _descriptors() // 16))
            evicted, self._held = self._held[:-size], self._held[-size:]
        for old in evicted:
            old.close()
        return True

    def __len__(self) -> int:
        return len(self._held)

    def drain(self) -> None:
        """Close every pooled database (at exit; tests that count opens)."""
        with self._lock:
            held, self._held = self._held, []
        for old in held:
            old.close()

    def forget(self) -> None:
        """In a forked child: the parent's connections must not be used, nor even closed
        (SQLite forbids carrying a connection across ``fork``), nor its folders removed. They
        stay referenced, untouched, so that garbage collection does not close them either."""
        self._lock = threading.Lock()
        self.live = 0  # the parent's environments are not this process's
        self._forsaken.extend(self._held)
        self._held = []


def _built_in_functions() -> frozenset[str]:
    with closing(sqlite3.connect(":memory:")) as connection:
        return frozenset(row[0].lower() for row in connection.execute("PRAGMA function_list"))


BUILT_IN_FUNCTIONS = _built_in_functions()
"""SQLite's own functions (lower case): a tool may not define one of these names."""

NO_FILE = LiveFile(Path(os.devnull), -1)
"""An environment's file before it opens one and after it closes it (closing it does nothing)."""
POOL = LivePool()
os.register_at_fork(after_in_child=POOL.forget)
at_exit(POOL.drain)
