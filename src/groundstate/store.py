"""The run store: a SQLite database of batches and runs, plus content-addressed artifacts.

Records are append-only. Each attempt is committed in a transaction after its artifacts are
written (each once, under its content's name: :meth:`RunStore.put_artifact`), alone or with the
other tries that finished at the same time (:meth:`RunStore.add_runs`), so a batch killed at any
moment leaves only complete records. Artifacts are named by their sha256 and verified when read.

Records are tamper-evident (store format 2): each row keeps the sha256 of its canonical JSON,
the hashes of its artifacts, its place in its batch (``seq``) and a chain hash covering the
previous row's chain hash; each batch keeps the length and head of its chain. :meth:`RunStore.
verify` recomputes all of it. There is no secret key: this catches corruption, hand edits and
deletions, not a forger who recomputes every hash (see docs/reliability.md).
"""

from __future__ import annotations

import bisect
import errno
import functools
import gc
import hashlib
import json
import logging
import os
import random
import socket
import sqlite3
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, Field, ValidationError

from groundstate.errors import GroundstateError, StoreError, named_value
from groundstate.paths import (
    DEFAULT_STORE,
    LINK_LOOP,
    dangling_link,
    in_the_way,
    make_folder,
    not_regular,
    os_reason,
    output_refusal,
)
from groundstate.records import INVALID_REASONS, JUDGED, AgentRun, Usage
from groundstate.rounding import counted
from groundstate.sandbox import hide_from_sandboxes
from groundstate.spec.canonical import sha256_bytes, sha256_text
from groundstate.workdirs import pid_alive

M = TypeVar("M", bound=BaseModel)

STORE_FORMAT = 2
"""1: rows without hashes. 2: every batch and run row carries its content hash, and runs their
artifacts' hashes and a per-batch chain hash. Rows written before format 2 are *unverifiable*,
never reported as tampered."""

LEASE_TIMEOUT = timedelta(minutes=5)
"""A lease whose heartbeat is older than this is stale and may be taken over, whatever its
host. The holder beats every :data:`LEASE_HEARTBEAT` seconds and checks it still holds the lease
before it stores each attempt."""
LEASE_HEARTBEAT = 30.0

BUSY_TIMEOUT = 30.0
"""Seconds a write waits for another process's write transaction on the store to end before
it fails ("database is locked", named as such)."""
QUIET_WAIT = 2.0
"""Seconds a write waits for another process's write without a word: another batch's commit
ends well within it; past it, the wait is logged (:data:`LOG`), which the command prints on
stderr, so a command held by a lock someone left open is not taken for a hang."""

LOG = logging.getLogger("groundstate.store")
"""Where the store says what a caller may want to know and need not act on (a write waiting
for another process's): a warning. The library prints nothing itself; the ``groundstate``
command prints these lines on stderr, and a library caller sees them only through a handler
of its own (its logging set up, or one on this logger)."""
LOG.addHandler(logging.NullHandler())  # not logging's last resort, which prints on stderr

_OUTCOME_FIELDS = (
    "task_id", "attempt", "retry", "terminal_reason", "success", "cost", "latency",
    "partial_score",
)  # fmt: skip
"""The fields :meth:`RunStore.outcome_rows` reads from each record, in order."""
_NUMBER = ("integer", "real", "null")
_OUTCOME_TYPES = (
    ("text",), ("integer",), ("integer",), ("text",), ("true", "false"), _NUMBER, _NUMBER, _NUMBER,
)  # fmt: skip
_MISTYPED = " OR ".join(
    f"json_type(record, '$.{name}') IS NULL OR json_type(record, '$.{name}') NOT IN "
    f"({', '.join(repr(t) for t in types)})"
    for name, types in zip(_OUTCOME_FIELDS, _OUTCOME_TYPES, strict=True)
)
"""SQL: whether a record's outcome fields are not of their JSON types (the first ones to
look at when the outcome columns cannot be made)."""
JUDGE_ERRORS_SQL = (
    f"(CASE WHEN record NOT LIKE '%\"{JUDGED}\"%' THEN 0 ELSE "
    "(SELECT COUNT(*) FROM json_each(record, '$.outcome_assertion_results') "
    f"WHERE json_extract(value, '$.kind') = '{JUDGED}' "
    "AND json_extract(value, '$.error') IS NOT NULL) END)"
)
"""A record's judged assertions whose judge could not judge (:attr:`AgentRun.judge_errors`):
read after the outcome fields, as their last column. Parsing the record again for them cost
ten times the outcome fields' read (SQLite 3.40 keeps no parsed JSON between calls), so a
record whose text has no ``"judge"`` (no judged assertion: most) is not parsed for them
(``LIKE`` scans about twice as fast as ``instr``; a full check's hashing costs far more)."""

_SESSIONS_UPDATED = """CREATE TRIGGER IF NOT EXISTS sessions_updated AFTER UPDATE ON sessions BEGIN
    INSERT INTO edits (table_name, change, at) VALUES ('sessions', 'update', datetime('now'));
END"""
_INVALID_TASKS_UPDATED = """CREATE TRIGGER IF NOT EXISTS invalid_tasks_updated AFTER UPDATE ON
invalid_tasks_added BEGIN
    INSERT INTO edits (table_name, change, at) VALUES ('invalid_tasks_added', 'update',
                                                       datetime('now'));
END"""

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    batch_id TEXT NOT NULL REFERENCES batches(batch_id),
    task_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    retry INTEGER NOT NULL,
    terminal_reason TEXT NOT NULL,
    success INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS validations (
    key TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    record TEXT NOT NULL
);
-- the length and last chain hash of each batch's chain: deleting its last runs shows here
CREATE TABLE IF NOT EXISTS chains (
    batch_id TEXT PRIMARY KEY,
    length INTEGER NOT NULL,
    head TEXT NOT NULL
);
-- the process running a batch; a second runner is refused while it is live
CREATE TABLE IF NOT EXISTS leases (
    batch_id TEXT PRIMARY KEY,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    started_at TEXT NOT NULL,
    heartbeat TEXT NOT NULL
);
-- failure labels given to runs (append-only: the latest row per run and annotator counts)
CREATE TABLE IF NOT EXISTS labels (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    batch_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    annotator TEXT NOT NULL,
    adjudicated INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS labels_by_batch ON labels(batch_id, adjudicated, run_id);
-- the length and last chain hash of each batch's labels chain (as ``chains`` for runs)
CREATE TABLE IF NOT EXISTS label_chains (
    batch_id TEXT PRIMARY KEY,
    length INTEGER NOT NULL,
    head TEXT NOT NULL
);
-- every UPDATE or DELETE of a run or batch row, logged by the triggers below: nothing in
-- groundstate updates or deletes those rows, so a new entry means a hand edit since a seal.
-- (An INSERT OR REPLACE deletes without firing them; the new row's rowid shows it instead.)
CREATE TABLE IF NOT EXISTS edits (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    table_name TEXT NOT NULL,
    change TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS runs_updated AFTER UPDATE ON runs BEGIN
    INSERT INTO edits (table_name, change, at) VALUES ('runs', 'update', datetime('now'));
END;
CREATE TRIGGER IF NOT EXISTS runs_deleted AFTER DELETE ON runs BEGIN
    INSERT INTO edits (table_name, change, at) VALUES ('runs', 'delete', datetime('now'));
END;
CREATE TRIGGER IF NOT EXISTS batches_updated AFTER UPDATE ON batches BEGIN
    INSERT INTO edits (table_name, change, at) VALUES ('batches', 'update', datetime('now'));
END;
CREATE TRIGGER IF NOT EXISTS batches_deleted AFTER DELETE ON batches BEGIN
    INSERT INTO edits (table_name, change, at) VALUES ('batches', 'delete', datetime('now'));
END;
-- tasks found invalid when a batch was resumed with --allow-invalid (append-only): added to
-- the batch's invalid_tasks as it is read, so they leave the headline as those of its start
CREATE TABLE IF NOT EXISTS invalid_tasks_added (
    batch_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (batch_id, task_id)
);
{_INVALID_TASKS_UPDATED};
CREATE TRIGGER IF NOT EXISTS invalid_tasks_deleted AFTER DELETE ON invalid_tasks_added BEGIN
    INSERT INTO edits (table_name, change, at) VALUES ('invalid_tasks_added', 'delete',
                                                       datetime('now'));
END;
-- each process's turn at a batch (its start, then each resume), append-only: where and how
-- its attempts ran, and whether its tasks were proven first (RunSession)
CREATE TABLE IF NOT EXISTS sessions (
    batch_id TEXT NOT NULL,
    number INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (batch_id, number)
);
{_SESSIONS_UPDATED};
CREATE TRIGGER IF NOT EXISTS sessions_deleted AFTER DELETE ON sessions BEGIN
    INSERT INTO edits (table_name, change, at) VALUES ('sessions', 'delete', datetime('now'));
END;
-- the length and last chain hash of each batch's sessions chain, and of its chain of tasks
-- named invalid by resumes (as ``chains`` for runs)
CREATE TABLE IF NOT EXISTS session_chains (
    batch_id TEXT PRIMARY KEY,
    length INTEGER NOT NULL,
    head TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS invalid_task_chains (
    batch_id TEXT PRIMARY KEY,
    length INTEGER NOT NULL,
    head TEXT NOT NULL
);
-- a try an in-process batch started and has not stored yet: left behind, its process ended
-- during it (an agent's os._exit); a resume records it (``RunStore.started_tries``)
CREATE TABLE IF NOT EXISTS started_tries (
    run_id TEXT PRIMARY KEY,
    batch_id TEXT NOT NULL,
    record TEXT NOT NULL
);
-- a batch verified in full: what ``report`` re-checks cheaply instead (groundstate/integrity.py)
CREATE TABLE IF NOT EXISTS seals (
    batch_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    record TEXT NOT NULL,
    outcomes BLOB NOT NULL
);
"""

# One record per try: a resumed batch can never store an attempt twice. Made apart from the
# schema: a store whose index was dropped and a row duplicated by hand cannot rebuild it, and
# must still open, for ``verify`` to name the copy (it is then refused writes).
_ONE_ROW_PER_TRY = (
    "CREATE UNIQUE INDEX IF NOT EXISTS runs_by_batch ON runs(batch_id, task_id, attempt, retry)"
)

_NAMES_MODELS = "instr(record, '\"models_served\"') > 0"
"""The condition of the ``runs_naming_models`` partial index: a record whose text names the
models served (:meth:`RunStore.models_served` reads only these, through the index, so a
report does not scan every record of a batch when few or none name a model). A query uses
the index only when its WHERE holds this same expression."""

# Run after the migrations: they index or read columns an old store gains only then.
_SCHEMA_AFTER_MIGRATION = f"""
-- verify walks each batch's chain in order
CREATE INDEX IF NOT EXISTS runs_by_seq ON runs(batch_id, seq);
-- report reads the models served (RunStore.models_served) only from the tries that name one
CREATE INDEX IF NOT EXISTS runs_naming_models ON runs(batch_id) WHERE {_NAMES_MODELS};
"""

# Format 2 columns, added to stores made before it (old rows keep NULL: unverifiable).
_MIGRATIONS = {
    "batches": ("record_hash TEXT",),
    "runs": ("seq INTEGER", "record_hash TEXT", "artifact_hashes TEXT", "chain_hash TEXT"),
    "labels": ("seq INTEGER", "record_hash TEXT", "chain_hash TEXT"),
    "sessions": ("seq INTEGER", "record_hash TEXT", "chain_hash TEXT"),
    "invalid_tasks_added": ("seq INTEGER", "record_hash TEXT", "chain_hash TEXT"),
}


_INSERT_RUN = (
    "INSERT INTO runs (run_id, batch_id, task_id, attempt, retry, terminal_reason, success, "
    "created_at, record, seq, record_hash, artifact_hashes, chain_hash) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


_INSERT_SEAL = "INSERT OR REPLACE INTO seals VALUES (?, ?, ?, ?)"


def _valid_reason(reason: str) -> bool:
    """``AgentRun.valid`` of a try ending with terminal reason *reason*."""
    return reason.split("/")[0] not in INVALID_REASONS


def _invalid(column: str) -> str:
    """SQL: whether the terminal reason in *column* makes a try invalid (``AgentRun.valid``)."""
    return (
        "("
        + " OR ".join(
            f"{column} = '{r}' OR substr({column}, 1, {len(r) + 1}) = '{r}/'"
            for r in INVALID_REASONS
        )
        + ")"
    )


_KEYS = "CAST(attempt AS INTEGER), CAST(retry AS INTEGER)"
"""A run row's attempt and retry columns as integers, whatever a hand edit put there."""
_MAYBE_OUTSIDE = (
    f"SELECT run_id, task_id, {_KEYS}, terminal_reason FROM runs WHERE batch_id = ?1 AND ("
    "task_id IN (SELECT value FROM json_each(?3)) OR (NOT ?4 AND (task_id, attempt) IN ("
    "SELECT task_id, attempt FROM runs WHERE batch_id = ?1 AND (retry != 0 OR attempt NOT "
    "BETWEEN 1 AND ?2))))"
)
"""The tries of a batch (?1, planning ?2 attempts; ?4: it plans only tasks) that
:func:`groundstate.batchplan.placed` may place outside its plan: those of the tasks ?3 (a
JSON list) it does not plan, and every try of an attempt holding a try other than a first try
of an attempt it plans (the others are inside: :mod:`groundstate.batchplan`): one scan of
the batch's index."""


# Whether a run row's indexed columns differ from its (hashed) record: they are not hashed,
# yet which batch a run is in, and its task, attempt and verdict as label imports and
# ``batches`` read them, come from them. Unparseable JSON is left to the record check.
_INDEXED = ("run_id", "batch_id", "task_id", "attempt", "retry", "terminal_reason", "success")
"""The run row's columns that repeat fields of its record, unhashed: ``batches`` and label
imports read them."""
_TEXT_INDEXED = ("run_id", "batch_id", "task_id", "terminal_reason")

_HOLDS_NUL = " OR ".join(f"instr(CAST({name} AS BLOB), x'00')" for name in _TEXT_INDEXED)
_COLUMNS_DIFFER = (
    # json_extract cuts text at a NUL (an imported task id may hold one): such a row's
    # columns come back as a JSON array, compared with its record in Python
    f"CASE WHEN NOT json_valid(record) THEN 0 WHEN {_HOLDS_NUL} "
    f"THEN json_array({', '.join(_INDEXED)}) ELSE ("
    + " OR ".join(f"json_extract(record, '$.{name}') IS NOT {name}" for name in _INDEXED)
    + ") END"
)


def _columns_differ(moved: int | str, record: bytes) -> bool:
    """Whether a run row's indexed columns no longer hold its record's values: *moved* is
    SQLite's answer (1 or 0), or the columns as a JSON array where SQLite cannot compare."""
    if not isinstance(moved, str):
        return bool(moved)
    fields = json.loads(record)
    columns: list[object] = json.loads(moved)
    return not isinstance(fields, dict) or columns != [fields.get(name) for name in _INDEXED]


_BULK_CACHE_KIB = 65536
"""SQLite page cache while a bulk insert runs: random run ids touch index pages all over."""


@contextmanager
def _page_cache(db: sqlite3.Connection, kib: int) -> Iterator[None]:
    before = db.execute("PRAGMA cache_size").fetchone()[0]
    db.execute(f"PRAGMA cache_size = -{int(kib)}")
    try:
        yield
    finally:
        db.execute(f"PRAGMA cache_size = {int(before)}")


def refuse_output(store: Path, out: Path, option: str, *, folder: bool = False) -> None:
    """Refuse *out*, the path an output *option* (``--out``, ``--html``) names, when it is the
    run store *store* itself, one of its SQLite files or under its artifacts: writing there
    truncates the evidence (``report --html s.db`` wrote its HTML over the store); and when
    it is no file to write (a folder with *folder*): a named pipe (``report --html`` waited
    for a reader for ever), a device, a link to nowhere (:func:`~groundstate.paths.
    output_refusal`). Every command that writes a file beside a store checks here, before
    any work."""
    from groundstate.environments.sqlite_live import side_files

    if (why := output_refusal(out, folder=folder)) is not None:
        raise GroundstateError(f"{option} {out} is {why}: give another path")

    target = Path(os.path.realpath(out))  # a link loop is refused by the open, not here
    database = Path(os.path.realpath(store))
    artifacts = Path(os.path.realpath(Path(store).parent / "artifacts"))  # as RunStore's
    if target in (database, *side_files(database)) or target.is_relative_to(artifacts):
        raise GroundstateError(f"{option} {out} is the run store's own file: choose another path")


class _Chained:
    """Run rows of one batch as the ``runs`` table holds them: hashed and chained in order."""

    def __init__(self, batch_id: str, genesis: str) -> None:
        self.batch_id, self.head, self.length = batch_id, genesis, 0
        self.now = datetime.now(UTC).isoformat()

    def chunks(self, runs: Iterable[StoredRun], size: int) -> Iterator[list[tuple[Any, ...]]]:
        rows: list[tuple[Any, ...]] = []
        for run in runs:
            content = hashlib.sha256(run.text.encode("ascii")).hexdigest()
            self.head = chain_link(self.head, run.run_id, content, "{}")
            self.length += 1
            rows.append(
                (
                    run.run_id, self.batch_id, run.task_id, run.attempt, run.retry,
                    run.terminal_reason, int(run.success), self.now, run.text, self.length,
                    content, "{}", self.head,
                )
            )  # fmt: skip
            if len(rows) >= size:
                yield rows
                rows = []
        yield rows


class StoredRun(NamedTuple):
    """A run for :meth:`RunStore.add_batch_with_runs`: its indexed columns and canonical
    record text (an ``AgentRun`` as :func:`record_json`, no artifacts)."""

    run_id: str
    task_id: str
    attempt: int
    retry: int
    terminal_reason: str
    success: bool
    text: str


class OutsidePlan(NamedTuple):
    """A stored try outside its batch's plan (:meth:`RunStore.outside_plan`), and why."""

    run_id: str
    task_id: str
    attempt: int
    retry: int
    why: str


class RunKey(NamedTuple):
    """Where a stored run sits, read from its indexed columns (:meth:`RunStore.run_keys`)."""

    batch_id: str
    task_id: str
    attempt: int
    terminal_reason: str
    success: bool


class _Columns(NamedTuple):
    """A record's identity and verdict columns, read from its JSON text (see :meth:`of`)."""

    run_id: str
    batch_id: str
    task_id: str
    attempt: int
    retry: int
    terminal_reason: str
    success: bool

    @classmethod
    def read(cls, data: Mapping[str, Any]) -> _Columns:
        """The columns of a record's fields *data*, as parsed from its text: not of the record
        object it was dumped from (code of an in-process agent's left running, a thread that
        finds records with ``gc.get_objects()``, set ``success`` on that object after the
        text was made, and the row's columns said success where its record said the
        constraint it broke)."""
        return cls(
            str(data["run_id"]),
            str(data["batch_id"]),
            str(data["task_id"]),
            int(data["attempt"]),
            int(data["retry"]),
            str(data["terminal_reason"]),
            data["success"] is True,
        )


@dataclass(frozen=True, slots=True)
class PreparedRun:
    """A try in the form the store writes it: the record naming its stored artifacts, its
    JSON text, the hashes of both, and the artifacts' bytes under their digests.

    Made by :func:`prepare_run` wherever the attempt ran (its thread, a pool worker, a Ray
    task), so that the batch's single writer only writes (:meth:`RunStore.add_prepared`):
    serialising and hashing a record cost more than its commit. Pickled, it is its text,
    hashes and files only; unpickled, its record is parsed from the text, which is what
    reading the row back gives (and cheaper than unpickling the record itself)."""

    run: AgentRun
    text: str
    """The record as stored: ``run.model_dump_json()``."""
    content: str
    """:func:`record_hash` of :attr:`text`."""
    hashes: str
    """The ``artifact_hashes`` column: artifact name -> digest, sorted, as JSON."""
    files: tuple[tuple[str, str, bytes], ...]
    """Each artifact's name, sha256 digest and UTF-8 bytes."""
    columns: _Columns
    """The record's identity and verdict columns, read from :attr:`text` where it was made
    (not on the store's single writer thread)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_read_prepared, (self.text, self.content, self.hashes, self.files))


def _read_prepared(
    text: str, content: str, hashes: str, files: tuple[tuple[str, str, bytes], ...]
) -> PreparedRun:
    run = _as_stored(text)  # parsed just now from the text: its columns are the text's
    return PreparedRun(run, text, content, hashes, files, _Columns.read(vars(run)))


def _as_stored(text: str) -> AgentRun:
    """The record stored as *text* (parsed with the collector held off: see
    :func:`parse_stored`)."""
    return parse_stored([text])[0]


def prepare_run(
    run: AgentRun, artifacts: dict[str, str], trace_lines: list[str] | None = None
) -> PreparedRun:
    """*run* and its *artifacts* (name -> text) ready for :meth:`RunStore.add_prepared`.
    *trace_lines*: each event of *run*'s trace as its JSON line, when the caller has them
    (the episode's, :attr:`~groundstate.episode.AttemptOutput.trace_lines`), written into
    the record's text rather than serialised again."""
    encoded = {name: text.encode("utf-8") for name, text in artifacts.items()}
    files = tuple([(name, sha256_bytes(data), data) for name, data in encoded.items()])
    run = run.model_copy(
        update={"artifact_locations": {name: f"sha256:{digest}" for name, digest, _ in files}}
    )
    text = _record_text(run, trace_lines)
    hashes = json.dumps({name: digest for name, digest, _ in sorted(files)})
    data = json.loads(text)  # once, for the hash and the columns (each parsed it: 0.2 ms)
    return PreparedRun(run, text, _canonical_hash(data), hashes, files, _Columns.read(data))


_NO_TRACE = '"observation_action_log":[]'


def _record_text(run: AgentRun, lines: list[str] | None) -> str:
    """``run.model_dump_json()``, with the trace written from *lines* when given (one per
    event: they are what the record's serializer writes of each). The fields before the
    trace are scalars, so the first ``"observation_action_log":[]`` in the text of the
    record without its events is the field itself (a string holds no unescaped quote)."""
    if lines is None or len(lines) != len(run.observation_action_log):
        return run.model_dump_json()
    text = run.model_copy(update={"observation_action_log": []}).model_dump_json()
    at = text.find(_NO_TRACE)
    if at < 0:
        return run.model_dump_json()
    trace = '"observation_action_log":[' + ",".join(lines) + "]"
    return text[:at] + trace + text[at + len(_NO_TRACE) :]


class RunSession(BaseModel):
    """One process's turn at a batch: its start (session 1) or a resume (2, 3, ...), as
    recorded when it began running attempts (:meth:`RunStore.add_session`)."""

    number: int
    started_at: datetime
    pid: int
    host: str
    executor: str
    """``in-process``, ``process`` or ``ray``: a resume may use another than the start."""
    concurrency: int
    validator_revision: int | None
    """The validator revision every task the session ran was proven under (``run``,
    :func:`~groundstate.runner.proven`); ``None``: run through the library without proving
    its tasks (a ``BatchRunner`` alone, ``run_batch(validate=False)``). A verdict read from
    the validity cache is keyed by this revision and all else it rests on, so none stale is
    read back; a revision older than the current one is reported as such."""
    first_seq: int
    """The batch chain's link of the session's first try: its tries are the links from here
    to the next session's ``first_seq``."""
    tries: int = 0
    """Tries the session stored, reruns included (counted when read, not stored; tries
    outside the batch's plan are no session's: :meth:`RunStore.sessions`)."""
    reruns: int = 0
    """Of those, reruns of invalid tries (counted when read)."""

    def stored(self) -> str:
        """The record as stored: without the counts read from the runs table."""
        return self.model_dump_json(exclude={"tries", "reruns"})


UNKNOWN_USAGE_KEY = "unknown_usage"
UNKNOWN_USAGE_MARK = "null"
"""Written in an imported batch's ``system_spec`` (nineteenth round on): its token counts a
file left out are ``null``. An imported batch without it may hold 0 for them."""


class BatchInfo(BaseModel):
    """One invocation of ``run``: a system x a suite x attempts, fixed before it starts."""

    batch_id: str
    created_at: datetime
    suite: str
    suite_path: str
    suite_hash: str
    system_spec_hash: str
    system_spec: dict[str, Any]
    attempts: int
    seed: int
    task_revisions: dict[str, int]
    task_weights: dict[str, float]
    task_slices: dict[str, list[str]]
    task_horizons: dict[str, int] = Field(default_factory=dict)
    """Steps of each task's oracle solution, for horizon slices."""
    invalid_run_policy: dict[str, Any] = Field(default_factory=dict)
    """The retry policy and invalid-rate threshold, fixed before the batch starts."""
    invalid_tasks: list[str] = Field(default_factory=list)
    """Tasks that failed validation and ran anyway (``run --allow-invalid``)."""
    source: str = "groundstate"
    """``groundstate`` for batches run here; ``imported`` for results from another harness."""
    decision: str | None = None
    """The deployment decision the suite serves (its ``suite.yaml`` ``decision``)."""
    population: dict[str, str] | None = None
    """The target task population and how the tasks were sampled (``description``,
    ``sampling``), as the suite declared them."""
    executor: str | None = None
    """Where the attempts ran: ``in-process``, ``process`` or ``ray`` (``None``: stored before
    executors were recorded, or imported). A resume may use another; records do not differ."""
    concurrency: int | None = None
    """Attempts in flight at once when the batch started (``None``: not recorded)."""
    sessions: list[RunSession] = Field(default_factory=list, exclude=True)
    """Its start and each resume that ran attempts (:meth:`RunStore.sessions`), filled when
    the batch is read with :meth:`RunStore.batch`; never part of the stored record. Empty for
    a batch run before sessions were recorded, and for imports."""
    running: str | None = Field(default=None, exclude=True)
    """Who is running the batch now (:meth:`Lease.holder`), when another live process holds
    its lease as it is read with :meth:`RunStore.batch`: its figures are of the tries stored
    so far, and a resume would be refused. Never part of the stored record."""

    @property
    def max_retries(self) -> int:
        """Reruns its policy allows an invalid attempt (0 when it declares none: imports)."""
        return int(self.invalid_run_policy.get("max_retries", 0))

    @property
    def legacy_usage(self) -> bool:
        """Whether this batch was imported without :data:`UNKNOWN_USAGE_KEY` (before the
        nineteenth round): imports before the sixteenth stored a token count a file left out
        as 0, and nothing tells such a 0 from a true one, so its 0 counts are read as not
        known (:func:`known_usage`; a true 0 of an import of the sixteenth to eighteenth
        rounds is read so too: not known is never wrong, a 0 claimed may be)."""
        return self.source == "imported" and (
            self.system_spec.get(UNKNOWN_USAGE_KEY) != UNKNOWN_USAGE_MARK
        )

    def planned_tasks(self) -> set[str] | None:
        """The tasks of its plan; None when it names none (a batch made by hand through the
        library: every task is taken as planned)."""
        return set(self.task_revisions) or None

    def plan_bounds(self) -> tuple[int, int] | None:
        """Its attempts per task and the reruns its policy allows an invalid try: a try of
        its plan has attempt 1 to the first, retry 0 to the second, and each rerun follows
        the invalid tries before it (:meth:`RunStore.verify` and
        :func:`groundstate.analysis.planned` hold tries to this). None for an import (its
        plan is the rows it brought: only its tasks are known) and for a batch that declares
        no rerun policy (made by hand through the library: ``run`` always declares one)."""
        declared = "max_retries" in self.invalid_run_policy
        return (
            (self.attempts, self.max_retries) if self.source == "groundstate" and declared else None
        )


def known_usage(batch: BatchInfo, run: AgentRun) -> Usage:
    """*run*'s tokens as far as they are known: a 0 of a :attr:`BatchInfo.legacy_usage`
    import is not known (``None``)."""
    if not batch.legacy_usage:
        return run.usage
    return Usage(
        input_tokens=run.usage.input_tokens or None, output_tokens=run.usage.output_tokens or None
    )


BatchStatus = Literal["complete", "incomplete", "empty", "running", "imported"]


class BatchSummary(BaseModel):
    """One stored batch and how far it got (a line of ``groundstate batches``)."""

    batch_id: str
    created_at: datetime
    suite: str
    suite_path: str
    system_spec_hash: str
    source: str
    attempts_stored: int
    """Attempts with at least one stored try (an attempt and its reruns count once)."""
    attempts_expected: int
    """Tasks x attempts, as planned when the batch started; for an imported batch, whose plan
    is only the rows it brought (tasks have as many attempts as the file gave them), the
    attempts stored: it lacks none (``report`` names no missing attempts either)."""
    reruns_pending: int = 0
    """Attempts whose counted try is invalid with reruns left under the batch's policy: the
    batch stopped before rerunning them (``report``'s ``missing_attempts.reruns_pending``)."""
    resumes: int | None = None
    """Resumes that ran attempts (the number of its last session, less its start), as
    ``report`` counts them (``provenance.resumes``); None when no session was recorded (a
    batch run before they were, an import)."""
    executors: list[str] = Field(default_factory=list)
    """The executors its recorded sessions ran on, in order of first use."""
    outside_plan: int = 0
    """Tries stored outside its plan (:meth:`RunStore.outside_plan`: by hand or by another
    program), left out of its attempts and status as from every figure; ``verify`` names
    each."""
    status: BatchStatus
    """``running`` while a live process holds its lease; otherwise ``empty`` (stopped before
    its first attempt was stored), ``incomplete`` (resumable: attempts not stored, or reruns
    pending) or ``complete``; ``imported``
    for results from another harness (never resumed, whatever their attempts)."""


ProblemKind = Literal[
    "batch_altered",
    "record_altered",
    "record_unreadable",
    "record_missing",
    "chain_broken",
    "artifact_missing",
    "artifact_altered",
    "unverifiable",
    "labels_altered",
    "labels_missing",
    "sessions_altered",
    "sessions_missing",
    "outside_plan",
    "seal_damaged",
]
NOT_ALTERED = frozenset({"unverifiable", "seal_damaged"})
"""Problems that say nothing of the records: old rows without hashes, and a damaged seal (a
cache: the figures were checked in full instead)."""


class Problem(BaseModel):
    """One thing :meth:`RunStore.verify` found wrong (or could not check) in a batch."""

    batch_id: str
    run_id: str | None = None
    """The run concerned; ``None`` for the batch record or its chain as a whole."""
    kind: ProblemKind
    detail: str
    """One line for a person: what is wrong and where."""

    @property
    def altered(self) -> bool:
        """Tampered with or missing; ``unverifiable`` (old rows without hashes) and
        ``seal_damaged`` are not (:data:`NOT_ALTERED`)."""
        return self.kind not in NOT_ALTERED

    def line(self) -> str:
        subject = f"run {self.run_id}" if self.run_id else f"batch {self.batch_id}"
        return f"{subject}: {self.detail}"


class Verification(BaseModel):
    """What :meth:`RunStore.verify` checked in one batch and what it found."""

    batch_id: str
    records: int
    """Run rows read (tampered ones included)."""
    artifacts: int
    """Artifact files read back and hashed."""
    problems: list[Problem] = Field(default_factory=list)
    chain_head: str | None = None
    """The batch's chain head as stored (None before its first run). Nothing inside the store
    can show the whole file rolled back to an older copy, or its last runs deleted with the
    head rewound by a forger: a head kept elsewhere (printed by ``verify``) can."""
    check: Literal["full", "seal"] = "full"
    """``full``: every hash recomputed just now (:meth:`RunStore.verify`). ``seal``: the batch
    was verified in full at ``sealed_at`` and its seal still holds (what that does and does not
    show: :mod:`groundstate.seal`)."""
    sealed_at: datetime | None = None
    sealed_by: Literal["full_check", "import"] | None = None
    """What wrote the seal relied on: a full check that found nothing, or the import that
    stored the batch (its records, hashes and chain written with the seal)."""

    @property
    def altered(self) -> list[Problem]:
        return [p for p in self.problems if p.altered]

    @property
    def ok(self) -> bool:
        return not self.altered

    def for_run(self, run_id: str) -> list[Problem]:
        """Problems of this run and of the batch as a whole (a missing record, say)."""
        return [p for p in self.problems if p.run_id in (run_id, None)]


class SealState(BaseModel):
    """The cheap facts about a batch that its seal pins (see :mod:`groundstate.seal`)."""

    length: int
    """Length of the batch's chain (its ``chains`` row; 0 without one)."""
    head: str | None
    """Head of the chain (``None`` without a ``chains`` row)."""
    runs: int
    """Run rows of the batch."""
    last_rowid: int
    """The highest rowid among them: an INSERT OR REPLACE gives the new row a higher one (it
    deletes the old row without firing a delete trigger, so the edits log does not see it)."""
    batch_hash: str | None
    """The batch record's hash, recomputed."""
    edits: int
    """High-water mark of the ``edits`` log: UPDATEs and DELETEs of run and batch rows."""
    schema_version: int
    """SQLite's schema cookie: changes when a trigger is dropped or the schema edited."""
    sides: list[tuple[int, int]]
    """Of each side table (sessions, tasks named invalid by resumes), the batch's rows and
    their highest rowid: a row added since (a resume, or by hand) or replaced (INSERT OR
    REPLACE) shows here."""


SealMaker = Callable[[SealState, int], tuple[str, bytes] | None]
"""Makes a batch's seal record and outcome columns from its state and the runs just stored
(None: no seal); see :meth:`RunStore.add_batch_with_runs`."""


class RunLabels(BaseModel):
    """The failure labels one annotator (or the adjudication) gave one run."""

    batch_id: str
    run_id: str
    annotator: str
    """Who labelled: an annotator id, or the adjudicator's id for an adjudicated set."""
    adjudicated: bool = False
    """True for the adjudicated (final) labels of the run."""
    taxonomy: str
    """``name@version`` of the taxonomy the labels belong to."""
    labels: list[str]
    """One or more contributing failure labels."""
    note: str = ""
    source: str = ""
    """Where the labels came from (``file:line``)."""
    created_at: datetime


class StartedTry(BaseModel):
    """A try of an in-process batch marked as it started (see :meth:`RunStore.mark_started`)."""

    run_id: str
    task_id: str
    attempt: int
    retry: int
    retry_of: str | None
    seed: int
    started_at: datetime
    pid: int
    host: str
    cause: str | None = None
    """What the agent called that ended the process (``os._exit(7)``), written as it called
    it (:func:`note_exit_cause`); none when the process was ended from outside."""
    grading: bool = False
    """The call was made by the try's grading (a check), once no code of the agent's ran:
    the grader's failure, not the agent's crash."""


class Lease(BaseModel):
    """The process running a batch: refused to others while live."""

    batch_id: str
    pid: int
    host: str
    started_at: datetime
    heartbeat: datetime

    def holder(self) -> str:
        return (
            f"pid {self.pid} on {self.host} since {self.started_at:%Y-%m-%d %H:%M:%S} UTC "
            f"(last heartbeat {self.heartbeat:%H:%M:%S} UTC)"
        )

    def mine(self) -> bool:
        """Held by this process."""
        return (self.pid, self.host) == (os.getpid(), _hostname())

    def stale(self, now: datetime) -> bool:
        """Stale when its heartbeat is too old, or its process is gone from this host."""
        if now - self.heartbeat > LEASE_TIMEOUT:
            return True
        return self.host == _hostname() and not pid_alive(self.pid)


class BatchLeased(GroundstateError):
    """Another live process is running the batch."""

    def __init__(self, lease: Lease) -> None:
        self.lease = lease
        super().__init__(
            f"batch {lease.batch_id} is being run by {lease.holder()}; wait for it to finish "
            f"or stop it (a lease is taken over once its process is gone or its heartbeat is "
            f"older than {int(LEASE_TIMEOUT.total_seconds())} s)"
        )


def record_json(data: Any) -> str:
    """A record's canonical JSON as the store hashes it: sorted keys, no spaces, ASCII (unlike
    :func:`groundstate.spec.canonical.canonical_json`, any string survives, lone surrogates
    included)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def record_hash(text: str) -> str:
    """sha256 of a record's canonical JSON (sorted keys, ASCII: any string hashes)."""
    return _canonical_hash(json.loads(text))


def _canonical_hash(data: Any) -> str:
    """:func:`record_hash` of a record already parsed (by ``json.loads``: no value in it
    holds itself, so the encoder need not look for cycles)."""
    return hashlib.sha256(_PARSED_JSON(data).encode("ascii")).hexdigest()


_PARSED_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), check_circular=False).encode
""":func:`record_json` of parsed JSON, the same text: one encoder made once (not one per call,
as ``json.dumps`` with options makes), without the set of containers it is inside of, kept to
refuse a value that holds itself (which parsed JSON cannot)."""


def chain_link(previous: str, run_id: str, content: str, artifacts: str) -> str:
    """The chain hash of a run row: covers the previous row's, its record's and artifacts'."""
    return hashlib.sha256(
        json.dumps([previous, run_id, content, artifacts]).encode("ascii")
    ).hexdigest()


def chain_genesis(batch_id: str, batch_hash: str | None) -> str:
    return hashlib.sha256(f"batch:{batch_id}:{batch_hash or ''}".encode()).hexdigest()


def labels_genesis(batch_id: str, batch_hash: str | None) -> str:
    """Where a batch's labels chain starts: its own, so labels never link into the runs'."""
    return hashlib.sha256(f"labels:{batch_id}:{batch_hash or ''}".encode()).hexdigest()


@dataclass(frozen=True)
class _Side:
    """An append-only table of facts about a batch that every report reads, outside its
    record: hashed and chained per batch as labels are (``seq``, ``record_hash``,
    ``chain_hash``; the chain's length and head in *heads*), so a row added, replaced or
    edited by hand is named by :meth:`RunStore.verify`, and pinned by the seal."""

    table: str
    heads: str
    key: str
    """The column naming a row within its batch (in its chain link)."""
    text: str
    """SQL giving the row's hashed text (JSON)."""
    trigger: str
    """Its UPDATE trigger (left out while old rows are hashed)."""
    noun: str
    missing: ProblemKind
    broken: ProblemKind
    nouns: str | None = None
    """The noun's plural where adding "s" is wrong."""

    def genesis(self, batch_id: str, batch_hash: str | None) -> str:
        """Where a batch's chain in this table starts (its own, as for labels)."""
        return hashlib.sha256(f"{self.table}:{batch_id}:{batch_hash or ''}".encode()).hexdigest()

    def link(self, db: sqlite3.Connection, batch_id: str, key: object, text: str) -> _Link:
        """The place, record hash and chain hash of the row *key* (its hashed *text*) as the
        next link of its batch's chain; the chain's head moved on to it."""
        length, head = _head(db, self.heads, batch_id, self.genesis)
        content = _content_hash(text) or ""  # "": a text that is not JSON (an old row): altered
        head = chain_link(head, str(key), content, "")
        db.execute(
            f"INSERT OR REPLACE INTO {self.heads} VALUES (?, ?, ?)", (batch_id, length + 1, head)
        )
        return length + 1, content, head


_Link = tuple[int, str, str]
_SESSIONS = _Side(
    "sessions", "session_chains", "number", "record", _SESSIONS_UPDATED, "session",
    "sessions_missing", "sessions_altered",
)  # fmt: skip
_INVALID_TASKS = _Side(
    "invalid_tasks_added", "invalid_task_chains", "task_id", "json_array(task_id, created_at)",
    _INVALID_TASKS_UPDATED, "task named invalid by a resume", "batch_altered", "batch_altered",
    "tasks named invalid by a resume",
)  # fmt: skip
_SIDES = (_SESSIONS, _INVALID_TASKS)


def _head(
    db: sqlite3.Connection, table: str, batch_id: str, genesis: Callable[[str, str | None], str]
) -> tuple[int, str]:
    """A batch's chain in *table* (``chains``, ``label_chains``, ``session_chains``): its
    length and head, or
    ``(0, genesis)`` before its first link."""
    row = db.execute(f"SELECT length, head FROM {table} WHERE batch_id = ?", (batch_id,)).fetchone()
    if row is not None:
        return int(row[0]), str(row[1])
    batch = db.execute("SELECT record_hash FROM batches WHERE batch_id = ?", (batch_id,)).fetchone()
    return 0, genesis(batch_id, batch[0] if batch else None)


class RunStore:
    def __init__(self, path: Path = DEFAULT_STORE, *, create: bool = True) -> None:
        """Open the store at *path*; with ``create=False`` (reading commands) a missing store
        is an error naming *path*, and no folder or database is made."""
        self.path = Path(path)
        self._pending_seals: list[tuple[str, str, bytes]] = []
        """Seals made inside a reader's snapshot, written once it ends (:meth:`write_seal`)."""
        self.artifacts = self.path.parent / "artifacts"
        self._artifact_root = str(self.artifacts)
        journals = [self.path.with_name(self.path.name + end) for end in ("-wal", "-shm")]
        hide_from_sandboxes(self.path, *journals, self.artifacts)  # past attempts' records
        if self.path.is_dir():  # SQLite would say only "unable to open database file"
            raise StoreError(
                f"the run store {self.path} is a folder; give the store's database file "
                f"(such as {self.path / DEFAULT_STORE.name}) with --store"
            )
        if (no_store := _no_store(self.path, create)) is not None:
            raise StoreError(no_store)
        if not create and not self.path.is_file():
            way = in_the_way(self.path.parent)
            raise StoreError(
                f"no run store at {self.path}: {way}; give the store's file with --store"
                if way
                else f"no run store at {self.path}: nothing has been run here yet "
                "(`groundstate run` makes it), or give the store with --store"
            )
        if _left_empty(self.path, create):  # made a store by no command: it may be one emptied
            raise StoreError(
                f"{self.path} is an empty file, not a run store (a store emptied, or a file made "
                "by hand); give another --store, or delete it to start a new store there"
            )
        if (short := _cut_short(self.path)) is not None:  # SQLite would write on into it
            raise StoreError(
                f"the run store {self.path} is damaged: {short} ({DAMAGED}); nothing was "
                "written to it"
            )
        self.read_only = False
        """Opened for reading only (the store's file or folder cannot be written): reading
        commands work, nothing is written (no seal kept), writing raises StoreError."""
        if not create and not os.access(self.path, os.W_OK):  # SQLite would open it anyway
            self._open_read_only(None)
            return
        try:
            make_folder(self.path.parent)
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT)
            self._refuse_what_is_not_ours()
            _use_wal(self._db)
            # In WAL mode, NORMAL syncs at checkpoints, not at every commit: a commit
            # survives the process being killed, and an OS crash or power loss may roll back
            # the last commits whole (never part of one). A batch's lost tries rerun on resume.
            self._db.execute("PRAGMA synchronous=NORMAL")
            _make_new(self._db)
            self._db.executescript(_SCHEMA)
            self._duplicated = self._index_tries()
            _migrate(self._db)
            self._db.executescript(_SCHEMA_AFTER_MIGRATION)
            _stamp(self._db)
            if self._db.execute("PRAGMA user_version").fetchone()[0] != STORE_FORMAT:
                self._db.execute(f"PRAGMA user_version = {STORE_FORMAT}")
        except sqlite3.OperationalError as exc:
            full = _file_system_full(self.path)
            if create or not (_cannot_write(exc) or full):
                why = full or (_folder_refuses(self.path) if _cannot_write(exc) else "")
                why = why or _why(exc, self.path)
                raise StoreError(f"cannot open the run store {self.path}: {exc}{why}") from exc
            self._db.close()
            self._open_read_only(exc)
        except (OSError, sqlite3.Error) as exc:
            if isinstance(exc, sqlite3.Error):
                said, why = str(exc), _why(exc, self.path)
            else:  # the reason alone, not Python's "[Errno 20] ...: 'path'"
                said, why = os_reason(self.path, exc), _file_system_full(self.path)
            raise StoreError(f"cannot open the run store {self.path}: {said}{why}") from exc

    def _open_read_only(self, cause: sqlite3.Error | None) -> None:
        """A store on read-only media or owned by someone else is still read (``mode=ro``).
        In a folder where SQLite cannot make its shared-memory file the store is opened
        *immutable*, which ignores a write-ahead log: so a store whose log still holds
        commits is refused there, never read without them."""
        self.read_only, self._duplicated = True, "the store is read-only here"
        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        wal = self.path.with_name(self.path.name + "-wal")
        try:
            try:
                self._db = sqlite3.connect(
                    uri, uri=True, isolation_level=None, timeout=BUSY_TIMEOUT
                )
                self._db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            except sqlite3.OperationalError:
                if (_size(wal) or 0) > 0:
                    raise StoreError(
                        f"cannot read the run store {self.path}: it is read-only here and its "
                        f"write-ahead log {wal.name} still holds commits; open it once where it "
                        "can be written (or copy the folder) to fold them in"
                    ) from cause
                self._db = sqlite3.connect(
                    uri + "&immutable=1", uri=True, isolation_level=None, timeout=BUSY_TIMEOUT
                )
            self._refuse_what_is_not_ours()
            if missing := _columns(_current_schema()) - _columns(self._db) - _OPTIONAL:
                self._db.close()
                raise StoreError(
                    f"cannot read the run store {self.path}: it was made by an older "
                    f"groundstate (no {sorted(missing)[0]}) and is read-only here; open it once "
                    "where it can be written (or copy the folder) to migrate it"
                )
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open the run store {self.path}: {exc}{_why(exc, self.path)}"
            ) from exc

    def _refuse_what_is_not_ours(self) -> None:
        """Refuse another program's database, a newer store's, and one changed outside
        groundstate, reading all in one snapshot: read statement by statement, a store another
        process made meanwhile showed its stamp but not yet its tables (refused as dropped)."""
        self._db.execute("BEGIN")
        self._refuse_foreign_database()
        self._refuse_newer_format()
        self._refuse_altered_schema()
        self._db.execute("COMMIT")

    def _refuse_newer_format(self) -> None:
        """A store written by a newer groundstate (a higher format stamped in SQLite's
        ``user_version``) is neither read with this version's rules nor written to."""
        found = int(self._db.execute("PRAGMA user_version").fetchone()[0])
        if found > STORE_FORMAT:
            self._db.close()
            raise StoreError(
                f"the run store {self.path} has store format {found}, newer than this "
                f"groundstate reads (format {STORE_FORMAT}); upgrade groundstate to use it"
            )

    def _refuse_altered_schema(self) -> None:
        """A store whose tables were changed outside groundstate (:func:`_altered`: a table of
        records dropped, a column dropped or added) is neither read nor written: making the
        table again, empty, would hide what was lost, and every report would read the rest as
        whole."""
        if (problem := _altered(self._db)) is not None:
            self._db.close()
            raise StoreError(
                f"the run store {self.path} {problem}: it was changed outside groundstate (or "
                "damaged), and is neither read nor written; restore it from a copy, or give "
                "another --store"
            )

    def _refuse_foreign_database(self) -> None:
        """Another program's SQLite database given as ``--store`` is left exactly as it was:
        no tables added, no journal mode changed, no same-named table altered."""
        tables = [row[0] for row in self._db.execute("SELECT name FROM sqlite_master")]
        if tables and "batches" not in tables and _stamped(self._db) is None:
            self._db.close()
            shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
            raise StoreError(
                f"{self.path} is an SQLite database but not a run store (its tables: {shown}); "
                "give another --store"
            )

    def _index_tries(self) -> str | None:
        """Keep one row per try (the unique index); when rows duplicated by hand stop it
        being made, the first such try, for the message refusing writes."""
        try:
            self._db.execute(_ONE_ROW_PER_TRY)
        except sqlite3.IntegrityError:
            batch_id, task_id, attempt, retry = self._db.execute(
                "SELECT batch_id, task_id, attempt, retry FROM runs "
                "GROUP BY batch_id, task_id, attempt, retry HAVING COUNT(*) > 1 LIMIT 1"
            ).fetchone()
            return (
                f"batch {batch_id} holds task {task_id!r} attempt {attempt} try {retry} more "
                f"than once (a row duplicated by hand; `groundstate verify {batch_id}` names it)"
            )
        return None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing --------------------------------------------------------------------------

    def add_batch(self, batch: BatchInfo) -> None:
        text = batch.model_dump_json()
        with self._transaction() as db:
            db.execute(
                "INSERT INTO batches (batch_id, created_at, record, record_hash) "
                "VALUES (?, ?, ?, ?)",
                (batch.batch_id, batch.created_at.isoformat(), text, record_hash(text)),
            )

    def add_run(self, run: AgentRun, artifacts: dict[str, str]) -> AgentRun:
        """Store the artifacts, then commit the record naming them, chained, in one
        transaction."""
        return self.add_runs([(run, artifacts)])[0]

    def add_runs(self, tries: Sequence[tuple[AgentRun, dict[str, str]]]) -> list[AgentRun]:
        """Store several tries with one commit (one sync instead of one per try): all their
        artifacts first, then every record, chained in order, in one transaction. Each try
        is wholly stored or not at all: a crash leaves the group out, never part of a record.
        A duplicate try stores none of the group. Returns the records as stored (with their
        artifact locations)."""
        prepared = [prepare_run(run, artifacts) for run, artifacts in tries]
        self.add_prepared(prepared)
        return [row.run for row in prepared]

    def add_prepared(self, rows: Sequence[PreparedRun], *, leased: str | None = None) -> None:
        """:meth:`add_runs` for tries already prepared (:func:`prepare_run`). With *leased*,
        the group is stored only while this process holds that batch's lease, checked in the
        same transaction (:class:`BatchLeased` otherwise; a lease row removed by hand is
        put back, as :meth:`heartbeat` does)."""
        for row in rows:
            for _, digest, data in row.files:
                self._put(digest, data)
        heads: dict[str, tuple[int, str]] = {}
        with self._transaction() as db:
            if leased is not None:
                self._hold(db, leased, datetime.now(UTC).isoformat(), renew=False)
            for row in rows:
                batch_id = row.columns.batch_id
                length, head = heads.get(batch_id) or self._chain_head(db, batch_id)
                heads[batch_id] = (length + 1, self._insert_run(db, row, length + 1, head))
            db.executemany(
                "INSERT OR REPLACE INTO chains VALUES (?, ?, ?)",
                [(batch_id, length, head) for batch_id, (length, head) in heads.items()],
            )
            db.executemany(  # stored: no longer a try cut short
                "DELETE FROM started_tries WHERE run_id = ?", [(r.run.run_id,) for r in rows]
            )

    def _insert_run(self, db: sqlite3.Connection, row: PreparedRun, seq: int, head: str) -> str:
        """Insert one prepared record as link *seq* after *head*; return its chain hash."""
        run = row.columns
        chain = chain_link(head, run.run_id, row.content, row.hashes)
        try:
            db.execute(
                _INSERT_RUN,
                (
                    run.run_id,
                    run.batch_id,
                    run.task_id,
                    run.attempt,
                    run.retry,
                    run.terminal_reason,
                    int(run.success),
                    datetime.now(UTC).isoformat(),
                    row.text,
                    seq,
                    row.content,
                    row.hashes,
                    chain,
                ),
            )
        except sqlite3.IntegrityError as exc:
            if "UNIQUE constraint" not in str(exc):
                raise
            raise StoreError(
                f"batch {run.batch_id} already holds task {run.task_id!r} attempt "
                f"{run.attempt} try {run.retry}: another process is running this batch"
            ) from exc
        return chain

    def add_batch_with_runs(
        self,
        batch: BatchInfo,
        runs: Iterable[StoredRun],
        chunk: int = 10_000,
        *,
        seal: SealMaker | None = None,
    ) -> int:
        """Store a batch and all its runs (no artifacts) in one transaction: all or nothing.

        For bulk imports, where a commit per run costs a sync each: rows go in with
        ``executemany`` *chunk* at a time, chained as :meth:`add_run` chains them. Each run's
        ``text`` must already be canonical (:func:`record_json`), so it is hashed as is.
        Returns the number of runs stored; a duplicate (task, attempt, retry) raises
        :class:`StoreError` and stores nothing. With *seal*, the batch's seal (its record and
        outcome columns, made from the batch's state and the number of runs stored) is written
        in the same transaction (:mod:`groundstate.seal`).
        """
        batch_text = batch.model_dump_json()
        batch_hash = record_hash(batch_text)
        chained = _Chained(batch.batch_id, chain_genesis(batch.batch_id, batch_hash))
        with self._transaction() as db, _page_cache(db, _BULK_CACHE_KIB):
            db.execute(
                "INSERT INTO batches (batch_id, created_at, record, record_hash) "
                "VALUES (?, ?, ?, ?)",
                (batch.batch_id, batch.created_at.isoformat(), batch_text, batch_hash),
            )
            for rows in chained.chunks(runs, chunk):
                db.executemany(_INSERT_RUN, rows)
            if chained.length:
                db.execute(
                    "INSERT OR REPLACE INTO chains VALUES (?, ?, ?)",
                    (batch.batch_id, chained.length, chained.head),
                )
            if seal is not None:
                state = self.seal_state(batch.batch_id, stored=chained.length)
                if made := seal(state, chained.length):
                    now = datetime.now(UTC).isoformat()
                    db.execute(_INSERT_SEAL, (batch.batch_id, now, *made))
        return chained.length

    def _chain_head(self, db: sqlite3.Connection, batch_id: str) -> tuple[int, str]:
        return _head(db, "chains", batch_id, chain_genesis)

    def add_validation(self, key: str, record: dict[str, Any]) -> None:
        """Cache a task's validity, keyed by everything that could change it."""
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO validations VALUES (?, ?, ?)",
                (key, datetime.now(UTC).isoformat(), json.dumps(record)),
            )

    def validation(self, key: str) -> dict[str, Any] | None:
        rows = self._query("SELECT record FROM validations WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def add_labels(self, labelled: list[RunLabels]) -> None:
        """Store labels in one transaction. Rows are never replaced: a later row for the same
        run and annotator supersedes the earlier one when read, and both stay on record.

        Each batch's labels are hashed and chained like its runs (``seq``, ``record_hash``,
        ``chain_hash``; head and length in ``label_chains``), so :meth:`verify` names a label
        altered or deleted by hand."""
        with self._transaction() as db:
            for batch_id in dict.fromkeys(x.batch_id for x in labelled):
                length, head = self._labels_head(db, batch_id)
                rows = []
                for x in (x for x in labelled if x.batch_id == batch_id):
                    text = x.model_dump_json()
                    content = record_hash(text)
                    length += 1
                    head = chain_link(head, x.run_id, content, "")
                    rows.append(
                        (x.batch_id, x.run_id, x.annotator, int(x.adjudicated),
                         x.created_at.isoformat(), text, length, content, head)
                    )  # fmt: skip
                db.executemany(
                    "INSERT INTO labels (batch_id, run_id, annotator, adjudicated, created_at, "
                    "record, seq, record_hash, chain_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
                db.execute(
                    "INSERT OR REPLACE INTO label_chains VALUES (?, ?, ?)", (batch_id, length, head)
                )

    def _labels_head(self, db: sqlite3.Connection, batch_id: str) -> tuple[int, str]:
        return _head(db, "label_chains", batch_id, labels_genesis)

    def labels(self, batch_id: str, *, adjudicated: bool = False) -> list[RunLabels]:
        """The current labels of a batch's runs: the latest per run and annotator (for the
        adjudicated set, the latest per run), ordered by run then annotator."""
        rows = self._query(
            "SELECT record FROM labels WHERE batch_id = ? AND adjudicated = ? ORDER BY id",
            (batch_id, int(adjudicated)),
        )
        latest: dict[tuple[str, str], RunLabels] = {}
        for (text,) in rows:
            entry = _parse(text, RunLabels, f"labels of batch {batch_id}")
            latest[(entry.run_id, "" if adjudicated else entry.annotator)] = entry
        return sorted(latest.values(), key=lambda x: (x.run_id, x.annotator))

    def put_artifact(self, text: str) -> str:
        """Store *text* under its sha256, once, and return its location ``sha256:<digest>``.

        The text is written straight to its content-addressed name, created exclusively (no
        temporary file and rename per artifact: they cost more than the write). A name that
        already holds as many bytes as the text holds this text (the name is its hash), so
        nothing is written. Anything else there is a write cut short (a killed process) or one
        still under way in another process; it is replaced whole through a temporary file and
        a rename. Records are committed only after their artifacts are stored, so a committed
        record never names a partial file.
        """
        data = text.encode("utf-8")
        digest = sha256_bytes(data)
        self._put(digest, data)
        return f"sha256:{digest}"

    def _put(self, digest: str, data: bytes) -> None:
        """Store *data* under *digest* (see :meth:`put_artifact`): created exclusively first,
        since a new artifact is the common case (one system call fewer than looking first)."""
        target = os.path.join(self._artifact_root, digest[:2], digest[2:])
        try:
            try:
                _create(target, data)
            except FileExistsError:  # stored already, partial, or being written by another
                if _size(target) != len(data):
                    _replace(target, data)
        except OSError as exc:  # a full disk, a read-only folder: the user's to fix, no trace
            raise StoreError(
                f"cannot write an artifact to {self.artifacts}: {exc.strerror or exc}"
            ) from exc

    @contextmanager
    def _transaction(self, *, wait: bool = True) -> Iterator[sqlite3.Connection]:
        """A write transaction; *wait* ``False`` (a cache's write) gives up at once when
        another process holds the store's write lock, instead of waiting for it."""
        if self._duplicated is not None:
            raise StoreError(f"cannot write to the run store {self.path}: {self._duplicated}")
        try:
            with self._db:
                self._begin_write(wait)
                yield self._db
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot write to the run store {self.path}: {exc}{_why(exc, self.path)}"
            ) from exc

    def _begin_write(self, wait: bool) -> None:
        """``BEGIN IMMEDIATE``, waiting for another process's write up to
        :data:`BUSY_TIMEOUT` (none without *wait*); a wait past :data:`QUIET_WAIT` is said
        (:func:`say_waiting`) before it goes on: a lock left open by another process held a
        command for 30 s without a word."""
        quiet = min(QUIET_WAIT, BUSY_TIMEOUT) if wait else 0.0
        try:
            self._busy_timeout(quiet)
            self._db.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            if not wait or "locked" not in str(exc) or quiet >= BUSY_TIMEOUT:
                raise
            say_waiting(self.path, BUSY_TIMEOUT - quiet)
            self._busy_timeout(BUSY_TIMEOUT - quiet)
            self._db.execute("BEGIN IMMEDIATE")
        finally:
            self._busy_timeout(BUSY_TIMEOUT)

    def _cannot_read(self, exc: sqlite3.Error) -> StoreError:
        return StoreError(f"cannot read the run store {self.path}: {exc}{_why(exc, self.path)}")

    def _busy_timeout(self, seconds: float) -> None:
        self._db.execute(f"PRAGMA busy_timeout = {round(seconds * 1000)}")

    # --- tries started ---------------------------------------------------------------------

    def mark_started(self, batch_id: str, started: StartedTry) -> None:
        """Note, before it runs, a try that an in-process agent could end with the process
        (``os._exit``, a fatal signal): left behind by a process that ended during it, it is
        found by :meth:`started_tries` (a resume records it); storing the try removes it."""
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO started_tries VALUES (?, ?, ?)",
                (started.run_id, batch_id, started.model_dump_json()),
            )

    def forget_started(self, run_ids: Sequence[str]) -> None:
        """Remove the marks of tries that ended without being stored (an interrupt, a store
        error): not cut short by their process's end."""
        with self._transaction() as db:
            db.executemany("DELETE FROM started_tries WHERE run_id = ?", [(r,) for r in run_ids])

    def started_tries(self, batch_id: str) -> list[StartedTry]:
        """The tries of *batch_id* marked started and never stored (see :meth:`mark_started`);
        a mark that does not read as one is named in a :class:`StoreError`."""
        found = []
        rows = self._db.execute(
            "SELECT run_id, record FROM started_tries WHERE batch_id = ? ORDER BY rowid",
            (batch_id,),
        ).fetchall()
        for run_id, record in rows:
            try:
                found.append(StartedTry.model_validate_json(record))
            except ValueError as exc:
                raise StoreError(
                    f"the run store {self.path} holds an unreadable mark of a try started in "
                    f"batch {batch_id} (run {run_id}): {exc}"
                ) from exc
        return found

    # --- leases ---------------------------------------------------------------------------

    def acquire_lease(self, batch_id: str) -> Lease:
        """Lease *batch_id* to this process, or raise :class:`BatchLeased` naming the live
        holder. A stale lease (process gone, or heartbeat too old) is taken over."""
        now = datetime.now(UTC)
        mine = Lease(
            batch_id=batch_id,
            pid=os.getpid(),
            host=_hostname(),
            started_at=now,
            heartbeat=now,
        )
        with self._transaction() as db:
            held = self._lease(db, batch_id)
            theirs = held is not None and (held.pid, held.host) != (mine.pid, mine.host)
            if held is not None and theirs and not held.stale(now):
                raise BatchLeased(held)
            db.execute(
                "INSERT OR REPLACE INTO leases VALUES (?, ?, ?, ?, ?)",
                (batch_id, mine.pid, mine.host, now.isoformat(), now.isoformat()),
            )
        return mine

    def heartbeat(self, batch_id: str) -> None:
        """Renew this process's lease; raise :class:`BatchLeased` if another process took it
        over (this one stalled past the timeout), so it stores nothing more in the batch."""
        with self._transaction() as db:
            self._hold(db, batch_id, datetime.now(UTC).isoformat(), renew=True)

    def _hold(self, db: sqlite3.Connection, batch_id: str, now: str, *, renew: bool) -> None:
        """Check in transaction *db* that this process holds *batch_id*'s lease (its heartbeat
        set to *now* when *renew*); raise :class:`BatchLeased` if another process holds it.
        A lease row removed by hand is put back: this process still runs the batch."""
        me = (batch_id, os.getpid(), _hostname())
        if renew:
            held = db.execute(
                "UPDATE leases SET heartbeat = ? WHERE batch_id = ? AND pid = ? AND host = ?",
                (now, *me),
            ).rowcount
        else:
            held = (
                db.execute(
                    "SELECT 1 FROM leases WHERE batch_id = ? AND pid = ? AND host = ?", me
                ).fetchone()
                is not None
            )
        if held:
            return
        other = self._lease(db, batch_id)
        if other is not None:
            raise BatchLeased(other)
        db.execute("INSERT INTO leases VALUES (?, ?, ?, ?, ?)", (*me, now, now))

    def release_lease(self, batch_id: str) -> None:
        with self._transaction() as db:
            db.execute(
                "DELETE FROM leases WHERE batch_id = ? AND pid = ? AND host = ?",
                (batch_id, os.getpid(), _hostname()),
            )

    def lease(self, batch_id: str) -> Lease | None:
        return self._lease(self._db, batch_id)

    def _lease(self, db: sqlite3.Connection, batch_id: str) -> Lease | None:
        row = db.execute(
            "SELECT batch_id, pid, host, started_at, heartbeat FROM leases WHERE batch_id = ?",
            (batch_id,),
        ).fetchone()
        if row is None:
            return None
        keys = ("batch_id", "pid", "host", "started_at", "heartbeat")
        return Lease.model_validate(dict(zip(keys, row, strict=True)))

    # --- reading --------------------------------------------------------------------------

    def read_artifact(self, location: str) -> str:
        digest = location.removeprefix("sha256:")
        path = self._artifact_path(digest)
        try:
            # Bytes, decoded: a text-mode read would turn "\r\n" into "\n" and the
            # artifact (captured output may hold both) would no longer match its hash.
            data = path.read_bytes()
        except FileNotFoundError as exc:
            raise StoreError(f"artifact {location} is missing: no file {path}") from exc
        except OSError as exc:  # a directory, no permission, an I/O error: there, unreadable
            raise StoreError(
                f"artifact {location} is unreadable: {path}: {exc.strerror or exc}"
            ) from exc
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:  # the store writes UTF-8: the file was altered
            raise StoreError(
                f"artifact {location} is unreadable: {path} is not UTF-8 text (byte "
                f"0x{data[exc.start]:02x} at offset {exc.start})"
            ) from exc
        if sha256_text(text) != digest:
            raise StoreError(
                f"artifact {location} is corrupt (its content no longer matches its hash)"
            )
        return text

    def batch(self, batch_id: str | None = None) -> BatchInfo:
        """The batch *batch_id* names (:meth:`batch_id_for`: its id, a unique prefix of it, or
        its name), or the latest one."""
        if batch_id is None:
            rows = self._query("SELECT record FROM batches ORDER BY created_at DESC LIMIT 1", ())
        else:
            rows = self._query(
                "SELECT record FROM batches WHERE batch_id = ?", (self.batch_id_for(batch_id),)
            )
        if batch_id is None and not rows:
            raise StoreError(f"the run store {self.path} holds no batch yet")
        return self._with_added(_one(rows, BatchInfo, f"batch {batch_id}", self.path))

    def batch_id_for(self, given: str) -> str:
        """The id of the one batch *given* (a user's argument) names: its id; else a prefix of
        one id, or the name of one batch (its ``suite``, or its system's name: ``import-results
        --name``); else refused, each candidate named. Batch ids are hex, so ``compare a b``
        with batches named ``a`` and ``b`` read the batches whose ids start with those
        letters, maybe the other way round, without a word. Read from the table: a record
        that is no JSON has no name, and its id still counts."""
        require_id(given)
        if self._query("SELECT 1 FROM batches WHERE batch_id = ?", (given,)):
            return given
        rows = self._query(_BATCH_CANDIDATES, (*_prefixed(given), given, given))
        if len(rows) == 1:
            return str(rows[0][0])
        if not rows:
            raise StoreError(f"no batch {named_value(given)} in the run store {self.path}")
        listed = "; ".join(_candidate(given, *row) for row in rows[:_LISTED])
        more = f"; and {len(rows) - _LISTED} more" if len(rows) > _LISTED else ""
        raise StoreError(
            f"batch {given!r} is ambiguous: {len(rows)} batches match: {listed}{more}; give "
            "one's full id, or enough of it that no other id or name matches"
        )

    def batches(self) -> list[BatchInfo]:
        rows = self._query("SELECT record, batch_id FROM batches ORDER BY created_at", ())
        added = self._added(None)
        return [
            _with_invalid(_parse(r[0], BatchInfo, f"batch {r[1]}"), added.get(r[1], ()))
            for r in rows
        ]

    def add_invalid_tasks(self, batch_id: str, tasks: Iterable[str]) -> list[str]:
        """Name *tasks* invalid in batch *batch_id* from now on (tasks that failed validation
        when the batch was resumed with ``--allow-invalid``): every figure leaves them out, as
        those named when it started. Returns the tasks newly named."""
        named = set(tasks)
        if not named:
            return []
        batch = self.batch(batch_id)
        added = sorted(named - set(batch.invalid_tasks))
        if not added:
            return []
        now = datetime.now(UTC).isoformat()
        with self._transaction() as db:
            for task_id in added:
                text = record_json([task_id, now])
                db.execute(
                    "INSERT INTO invalid_tasks_added (batch_id, task_id, created_at, seq, "
                    "record_hash, chain_hash) VALUES (?, ?, ?, ?, ?, ?)",
                    (batch.batch_id, task_id, now, *_INVALID_TASKS.link(db, batch.batch_id,
                                                                        task_id, text)),
                )  # fmt: skip
        return added

    def _with_added(self, batch: BatchInfo) -> BatchInfo:
        """*batch* with the invalid tasks its resumes added (:meth:`add_invalid_tasks`) and
        its sessions (:meth:`sessions`)."""
        batch = _with_invalid(batch, self._added(batch.batch_id).get(batch.batch_id, ()))
        held = self.lease(batch.batch_id)
        live = held is not None and not held.mine() and not held.stale(datetime.now(UTC))
        return batch.model_copy(
            update={
                "sessions": self.sessions(batch.batch_id, batch),
                "running": held.holder() if live and held else None,
            }
        )

    def add_session(
        self, batch_id: str, executor: str, concurrency: int, validator_revision: int | None
    ) -> RunSession:
        """Record that this process begins running attempts of *batch_id* (it must hold the
        batch's lease): the next session number, and the chain link its first try will be.
        The first session recorded for a batch that holds tries already (started before
        sessions were recorded) is number 2: it is a resume."""
        with self._transaction() as db:
            now = datetime.now(UTC)
            self._hold(db, batch_id, now.isoformat(), renew=False)
            (recorded,) = db.execute(
                "SELECT COUNT(*) FROM sessions WHERE batch_id = ?", (batch_id,)
            ).fetchone()
            first_seq = self._chain_head(db, batch_id)[0] + 1
            session = RunSession(
                number=recorded + 1 + (not recorded and first_seq > 1),
                started_at=now,
                pid=os.getpid(),
                host=_hostname(),
                executor=executor,
                concurrency=concurrency,
                validator_revision=validator_revision,
                first_seq=first_seq,
            )
            text = session.stored()
            db.execute(
                "INSERT INTO sessions (batch_id, number, created_at, record, seq, record_hash, "
                "chain_hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (batch_id, session.number, now.isoformat(), text,
                 *_SESSIONS.link(db, batch_id, session.number, text)),
            )  # fmt: skip
        return session

    def run_sessions(self, batch_id: str) -> dict[str, int]:
        """Run id -> the number of the session that stored it, for the batch's runs stored
        once sessions were recorded (the others are left out)."""
        starts = [(s.first_seq, s.number) for s in self.sessions(batch_id)]
        if not starts:
            return {}
        rows = self._query("SELECT run_id, seq FROM runs WHERE batch_id = ?", (batch_id,))
        firsts = [first for first, _ in starts]
        found = {}
        for run_id, seq in rows:
            at = bisect.bisect_right(firsts, seq if seq is not None else 0) - 1
            if at >= 0:
                found[str(run_id)] = starts[at][1]
        return found

    def sessions(self, batch_id: str, batch: BatchInfo | None = None) -> list[RunSession]:
        """The batch's sessions in order, each with the tries it stored (links of the batch's
        chain from its ``first_seq`` to the next one's, less the tries outside its plan: no
        session stored those, and no figure counts them). Empty when none was recorded (a
        batch run before they were, an import, a read-only store made before the table).
        *batch*: the batch's record, when already read."""
        made = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sessions'"
        if not self._query(made, ()):  # a read-only store made before the table
            return []
        rows = self._query(
            "SELECT record FROM sessions WHERE batch_id = ? ORDER BY number", (batch_id,)
        )
        found = [_parse(r[0], RunSession, f"session of batch {batch_id}") for r in rows]
        if not found:
            return []
        if batch is None:
            where = "SELECT record FROM batches WHERE batch_id = ?"
            batch = _one(self._query(where, (batch_id,)), BatchInfo, f"batch {batch_id}", self.path)
        outside = json.dumps([row.run_id for row in self.outside_plan(batch)])
        ends: list[int | None] = [s.first_seq for s in found[1:]]
        for session, end in zip(found, [*ends, None][: len(found)], strict=True):
            [(tries, reruns)] = self._query(
                "SELECT COUNT(*), COALESCE(SUM(retry > 0), 0) FROM runs WHERE batch_id = ? "
                "AND seq >= ? AND (? IS NULL OR seq < ?) "
                "AND run_id NOT IN (SELECT value FROM json_each(?))",
                (batch_id, session.first_seq, end, end, outside),
            )
            session.tries, session.reruns = int(tries), int(reruns)
        return found

    def _added(self, batch_id: str | None) -> dict[str, list[str]]:
        """The tasks resumes named invalid, by batch (of *batch_id*, or of every batch)."""
        where, params = ("WHERE batch_id = ?", (batch_id,)) if batch_id else ("", ())
        try:
            rows = self._db.execute(
                f"SELECT batch_id, task_id FROM invalid_tasks_added {where}", params
            ).fetchall()
        except sqlite3.OperationalError:  # a read-only store made before the table: none
            return {}
        added: dict[str, list[str]] = {}
        for batch, task_id in rows:
            added.setdefault(batch, []).append(task_id)
        return added

    def batch_summaries(self) -> list[BatchSummary]:
        """Every batch, oldest first, with its stored and expected attempts and its status,
        read in one snapshot: a try another process stores meanwhile is in every figure of
        its batch or in none."""
        with self.snapshot():
            return self._batch_summaries()

    def _batch_summaries(self) -> list[BatchSummary]:
        counts = dict(
            self._query(
                "SELECT batch_id, COUNT(DISTINCT task_id || char(0) || attempt) FROM runs "
                "GROUP BY batch_id",
                (),
            )
        )
        invalid_last = self._invalid_last_tries()
        sessions = self._session_summaries()
        now = datetime.now(UTC)
        summaries = []
        for b in self.batches():
            stored = int(counts.get(b.batch_id, 0))
            pending = sum(
                n for retry, n in invalid_last.get(b.batch_id, []) if retry < b.max_retries
            )
            if outside := self.outside_plan(b):
                stored, pending = self._planned_counts(b, {row.run_id for row in outside})
            summary = _summary(b, stored, pending, self.lease(b.batch_id), now)
            update = sessions.get(b.batch_id, {}) | {"outside_plan": len(outside)}
            summaries.append(summary.model_copy(update=update))
        return summaries

    def outside_plan(self, batch: BatchInfo) -> list[OutsidePlan]:
        """The tries of *batch* outside its plan, in (task, attempt, retry) order: of a task
        it does not plan, and for a batch run here (:meth:`BatchInfo.plan_bounds`) an attempt
        past its attempts, a rerun past its policy's, or a rerun of a try that is not stored
        or was valid. Nothing in groundstate stores one (a hand edit or another program
        does); every figure leaves them out (:func:`groundstate.analysis.planned`: the rule of
        :mod:`groundstate.batchplan` on the records) and :meth:`verify` names each. Read from
        the indexed columns (one scan of the batch's index; :meth:`verify` names a row whose
        columns differ from its record)."""
        import numpy as np  # not at the top: a worker storing runs never needs it

        from groundstate.batchplan import Placed, placed, why_outside

        tasks, bounds = batch.planned_tasks(), batch.plan_bounds()
        present = self._query(
            "SELECT DISTINCT task_id FROM runs WHERE batch_id = ?", (batch.batch_id,)
        )
        strangers = [] if tasks is None else sorted({str(t) for (t,) in present} - tasks)
        if bounds is None and not strangers:  # only its tasks bound its plan
            return []
        rows = self._query(
            _MAYBE_OUTSIDE,
            (batch.batch_id, bounds[0] if bounds else 0, json.dumps(strangers), bounds is None),
        )
        if not rows:
            return []
        run_ids, task_ids, attempts, retries, reasons = zip(*rows, strict=True)
        names: dict[str, int] = {}
        task = np.fromiter((names.setdefault(str(t), len(names)) for t in task_ids), np.int64)
        kinds: dict[str, int] = {}
        reason = np.fromiter((kinds.setdefault(str(r), len(kinds)) for r in reasons), np.int64)
        invalid = np.array([not _valid_reason(r) for r in kinds], np.bool_)[reason]
        where = placed(
            list(names),
            task,
            np.array(attempts, np.int64),
            np.array(retries, np.int64),
            invalid,
            tasks,
            bounds,
        )
        found = [
            OutsidePlan(
                str(run_ids[i]), str(task_ids[i]), int(attempts[i]), int(retries[i]),
                why_outside(int(where[i]), bounds),
            )
            for i in np.flatnonzero(where != Placed.INSIDE).tolist()
        ]  # fmt: skip
        return sorted(found, key=lambda row: (row.task_id, row.attempt, row.retry, row.run_id))

    def _planned_counts(self, batch: BatchInfo, outside: set[str]) -> tuple[int, int]:
        """The attempts of *batch* with a try in its plan, and of those the attempts whose
        counted try is invalid with reruns left: the runs *outside* (run ids) left out."""
        last: dict[tuple[str, int], tuple[int, str]] = {}
        for run_id, task_id, attempt, retry, reason in self._query(
            f"SELECT run_id, task_id, {_KEYS}, terminal_reason FROM runs WHERE batch_id = ?",
            (batch.batch_id,),
        ):
            key = (str(task_id), int(attempt))
            if run_id not in outside and (key not in last or retry > last[key][0]):
                last[key] = (int(retry), str(reason))
        pending = sum(
            not _valid_reason(reason) and retry < batch.max_retries
            for retry, reason in last.values()
        )
        return len(last), pending

    def _session_summaries(self) -> dict[str, dict[str, Any]]:
        """Per batch with sessions recorded, its resumes and executors (:class:`BatchSummary`)."""
        if "record" not in _table_columns(self._db, "sessions"):  # read-only, from before
            return {}
        found: dict[str, dict[str, Any]] = {}
        for batch_id, number, executor in self._query(
            "SELECT batch_id, number, json_extract(record, '$.executor') FROM sessions "
            "WHERE json_valid(record) ORDER BY batch_id, number",
            (),
        ):
            summary = found.setdefault(batch_id, {"executors": []})
            summary["resumes"] = int(number) - 1
            if executor not in summary["executors"]:
                summary["executors"].append(str(executor))
        return found

    def _invalid_last_tries(self) -> dict[str, list[tuple[int, int]]]:
        """Per batch, (retry, attempts) of the attempts whose last try is invalid: those with
        reruns left under the batch's policy are still due (``analysis.reruns_pending``)."""
        found: dict[str, list[tuple[int, int]]] = {}
        # SQLite takes a bare column of a MAX() aggregate from the row holding the maximum
        rows = self._query(
            "SELECT batch_id, retry, COUNT(*) FROM (SELECT batch_id, MAX(retry) AS retry, "
            "terminal_reason AS reason FROM runs GROUP BY batch_id, task_id, attempt) "
            f"WHERE {_invalid('reason')} GROUP BY batch_id, retry",
            (),
        )
        for batch_id, retry, n in rows:
            found.setdefault(batch_id, []).append((int(retry), int(n)))
        return found

    def batch_ids(self) -> list[str]:
        """Every batch id, oldest first (readable or not)."""
        return [r[0] for r in self._query("SELECT batch_id FROM batches ORDER BY created_at", ())]

    def run(self, run_id: str) -> AgentRun:
        """The run with this id (a unique prefix is enough)."""
        rows = self._query(
            "SELECT record FROM runs WHERE run_id BETWEEN ? AND ?", _prefixed(run_id)
        )
        return _one(rows, AgentRun, f"run {named_value(run_id)}", self.path)

    def run_batch_id(self, run_id: str) -> str | None:
        """The batch of the run with this id (prefix), read from its row, not its record."""
        rows = self._query(
            "SELECT batch_id FROM runs WHERE run_id BETWEEN ? AND ?", _prefixed(run_id)
        )
        return str(rows[0][0]) if len(rows) == 1 else None

    def batches_of_runs(self, run_ids: list[str]) -> dict[str, str]:
        """Run id -> batch id for the given full run ids that are stored (exact match)."""
        return {run_id: key.batch_id for run_id, key in self.run_keys(run_ids).items()}

    def run_keys(self, run_ids: list[str]) -> dict[str, RunKey]:
        """Run id -> batch, task, attempt and verdict of the given full run ids that are
        stored (exact match), without reading the records."""
        found: dict[str, RunKey] = {}
        for start in range(0, len(run_ids), 500):  # SQLite caps the parameters of one query
            chunk = run_ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            rows = self._query(
                "SELECT run_id, batch_id, task_id, attempt, terminal_reason, success FROM runs "
                f"WHERE run_id IN ({marks})",
                tuple(chunk),
            )
            found.update({str(r[0]): _run_key(r) for r in rows})
        return found

    def runs(self, batch_id: str) -> list[AgentRun]:
        rows = self._query(
            "SELECT record, run_id FROM runs WHERE batch_id = ? ORDER BY task_id, attempt, retry",
            (batch_id,),
        )
        with _collector_paused():
            return [
                _parse(r[0], AgentRun, f"run {r[1]} of batch {batch_id}", batch_id) for r in rows
            ]

    def outcome_chunks(
        self, batch_id: str, size: int = 50_000, also: tuple[str, ...] = ()
    ) -> Iterator[list[list[Any]]]:
        """:meth:`outcome_rows` *size* rows at a time, so a million tries never sit in memory
        as Python lists at once. *also*: more record fields (``usage.input_tokens``), each
        row giving them after the outcome fields, before the judge errors."""
        fields = ", ".join(f"'$.{name}'" for name in (*_OUTCOME_FIELDS, *also))
        try:
            cursor = self._db.execute(
                f"SELECT json_insert(json_extract(record, {fields}), '$[#]', {JUDGE_ERRORS_SQL}) "
                "FROM runs WHERE batch_id = ? ORDER BY task_id, attempt, retry",
                (batch_id,),
            )
            while rows := cursor.fetchmany(size):
                yield json.loads("[" + ",".join(r[0] for r in rows) + "]")
        except sqlite3.Error as exc:
            raise self._cannot_read(exc) from exc

    def models_served(self, batch_id: str) -> Iterator[list[Any]]:
        """Each try's ``infrastructure_status.models_served`` (:mod:`groundstate.served`),
        of the tries that have one. A record whose text does not name it (most: a scripted
        agent, a model that names none) is not parsed for it."""
        served = "'$.infrastructure_status.models_served'"
        try:
            cursor = self._db.execute(
                f"SELECT json_extract(record, {served}) FROM runs WHERE batch_id = ? AND "
                f"{_NAMES_MODELS} AND CASE WHEN json_valid(record) THEN "
                f"json_type(record, {served}) END = 'array'",
                (batch_id,),
            )
            while rows := cursor.fetchmany(10_000):
                yield from (json.loads(r[0]) for r in rows)
        except sqlite3.Error as exc:
            raise self._cannot_read(exc) from exc

    def mistyped_outcome(self, batch_id: str) -> str | None:
        """The first run of the batch whose record's outcome fields (:meth:`outcome_rows`) are
        not of their JSON types (a hand edit), or None."""
        rows = self._query(
            f"SELECT run_id FROM runs WHERE batch_id = ? AND json_valid(record) AND ({_MISTYPED}) "
            "ORDER BY task_id, attempt, retry LIMIT 1",
            (batch_id,),
        )
        return str(rows[0][0]) if rows else None

    def seal_state(self, batch_id: str, *, stored: int | None = None) -> SealState:
        """What a batch's seal pins, read again: a few indexed lookups and one record hashed.

        *stored*: the batch was just made and its *stored* runs inserted by this connection's
        open write transaction, so they are the table's last rows: the count and highest rowid
        are taken as that, not scanned. (Any other row of the batch would make every later
        re-read differ: the seal would never hold, never hold falsely.)"""
        db = self._db
        chain = db.execute(
            "SELECT length, head FROM chains WHERE batch_id = ?", (batch_id,)
        ).fetchone()
        batch = db.execute("SELECT record FROM batches WHERE batch_id = ?", (batch_id,)).fetchone()
        edits = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'edits'").fetchone()
        if stored is None:
            runs, last = db.execute(
                "SELECT COUNT(*), MAX(rowid) FROM runs WHERE batch_id = ?", (batch_id,)
            ).fetchone()
        else:
            runs, last = stored, db.execute("SELECT MAX(rowid) FROM runs").fetchone()[0]
        sides = [
            db.execute(
                f"SELECT COUNT(*), COALESCE(MAX(rowid), 0) FROM {side.table} WHERE batch_id = ?",
                (batch_id,),
            ).fetchone()
            if _table_columns(db, side.table)  # not in a read-only store from before it
            else (0, 0)
            for side in _SIDES
        ]
        return SealState(
            length=int(chain[0]) if chain else 0,
            head=str(chain[1]) if chain else None,
            runs=int(runs),
            last_rowid=int(last or 0),
            batch_hash=_content_hash(batch[0]) if batch else None,
            edits=int(edits[0]) if edits else 0,
            schema_version=db.execute("PRAGMA schema_version").fetchone()[0],
            sides=[(int(n), int(last)) for n, last in sides],
        )

    def read_seal(self, batch_id: str) -> tuple[str, bytes] | None:
        """The seal's record (JSON) and its outcome columns, as stored; None if unsealed."""
        rows = self._query("SELECT rowid, record FROM seals WHERE batch_id = ?", (batch_id,))
        if not rows:
            return None
        try:  # read straight into one buffer: a plain SELECT copies tens of MB twice
            with self._db.blobopen("seals", "outcomes", rows[0][0], readonly=True) as blob:
                return str(rows[0][1]), blob.read()
        except sqlite3.Error as exc:
            raise self._cannot_read(exc) from exc

    def write_seal(self, batch_id: str, record: str, outcomes: bytes) -> None:
        """Keep a seal (a cache of a full check); a read-only store keeps none. Inside a
        :meth:`snapshot` it is written when the snapshot ends (a read transaction cannot
        write); it pins the snapshot's state, so rows stored meanwhile make it not hold."""
        if self.read_only:
            return
        if self._db.in_transaction:
            self._pending_seals.append((batch_id, record, outcomes))
            return
        # a cache: a store another process holds locked keeps none (the next command seals),
        # never failing the reading command that verified the batch in full
        # (nor waits for it: `report` of an unsealed batch waited 30 s on another's write)
        with suppress(StoreError), self._transaction(wait=False) as db:
            db.execute(_INSERT_SEAL, (batch_id, datetime.now(UTC).isoformat(), record, outcomes))

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside see one state of the store (a read transaction: WAL snapshot
        isolation), whatever other processes commit meanwhile. Inside another snapshot, it is
        that one. A reading command reads all it shows in one (``report``: the batch, its
        check, its outcome columns and its runs), so its views agree while another process
        is still storing tries."""
        if self._db.in_transaction:
            yield
            return
        try:
            self._db.execute("BEGIN")
        except sqlite3.Error as exc:
            raise self._cannot_read(exc) from exc
        try:
            yield
        except sqlite3.Error as exc:  # a damaged page met mid-read: one message, no trace
            raise self._cannot_read(exc) from exc
        finally:
            # Only reads happened: ending them cannot lose anything, and must not hide
            # the error that ended the block.
            with suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
        pending, self._pending_seals = self._pending_seals, []
        for seal in pending:
            self.write_seal(*seal)

    def outcome_rows(self, batch_id: str) -> list[list[Any]]:
        """Every try of a batch as ``[task_id, attempt, retry, terminal_reason, success, cost,
        latency, partial_score, judge_errors]``, in (task, attempt, retry) order: what
        statistics read, taken from the hashed records themselves (not the unhashed index
        columns) without validating whole ``AgentRun`` models, so a million attempts stay
        cheap."""
        return [row for rows in self.outcome_chunks(batch_id) for row in rows]

    def _stream(self, sql: str, params: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
        """Rows one at a time (the cursor fetches as it goes): memory stays flat."""
        try:
            yield from self._db.execute(sql, params)
        except sqlite3.Error as exc:
            raise self._cannot_read(exc) from exc

    def _query(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self._cannot_read(exc) from exc

    def _artifact_path(self, digest: str) -> Path:
        return self.artifacts / digest[:2] / digest[2:]

    # --- verifying ------------------------------------------------------------------------

    def verify(self, batch_id: str, artifacts_of: str | None = None) -> Verification:
        """Recompute every hash of a batch: its record, each run's record and artifacts
        (read back from disk), the chain, and the chain of its labels; name whatever is
        altered or missing.

        With *artifacts_of* (a run id), only that run's artifacts are read back; every record
        and chain link is still checked (they are in the database: cheap).

        Rows are streamed in chain order (the ``runs_by_seq`` index), so memory stays flat
        whatever the batch's size. A record whose stored bytes hash to its record hash is
        unaltered (its text is the canonical JSON that was hashed); only a record stored in
        another form (pydantic's field order, say) is parsed and re-serialised.

        One snapshot: a batch another process is still writing is checked as it stood at one
        commit, so its rows and its chain head agree (no record "deleted at the end").
        """
        with self.snapshot():
            return self._verify(batch_id, artifacts_of)

    def _verify(self, batch_id: str, artifacts_of: str | None) -> Verification:
        rows = self._query(
            "SELECT record, record_hash FROM batches WHERE batch_id = ?", (batch_id,)
        )
        if not rows:
            raise StoreError(f"no batch {named_value(batch_id)} in the run store {self.path}")
        batch_text, batch_hash = rows[0]
        found: list[Problem] = []
        if batch_hash is not None and _content_hash(batch_text) != batch_hash:
            unreadable = _parse_hashed(batch_text) is None
            found.append(
                Problem(
                    batch_id=batch_id,
                    kind="batch_altered",
                    detail=f"batch record unreadable ({_unreadable(batch_text)})"
                    if unreadable
                    else "batch record altered (its JSON no longer matches its hash)",
                )
            )
        checker = _ChainCheck(batch_id, chain_genesis(batch_id, batch_hash))
        hashed_from = self._hashed_from("runs", "rowid", batch_hash)
        in_rows: list[Problem] = []
        records = legacy = artifacts = 0
        for rowid, run_id, seq, record, content, hashes, chain, moved in self._stream(
            "SELECT rowid, run_id, seq, CAST(record AS BLOB), record_hash, artifact_hashes, "
            f"chain_hash, {_COLUMNS_DIFFER} FROM runs WHERE batch_id = ? ORDER BY seq, rowid",
            (batch_id,),
        ):
            records += 1
            if content is None:
                if rowid < hashed_from:
                    legacy += 1
                else:
                    in_rows.append(_unhashed(batch_id, run_id, "record"))
                continue
            named = []
            if not checker.fast(run_id, seq, content, hashes, chain):
                named = checker.row(run_id, seq, content, hashes, chain)
            if hashlib.sha256(record).hexdigest() != content or hashes not in ("{}", None):
                named += _record_problems(batch_id, run_id, record, content, hashes)
            # columns are named only on a row otherwise intact (else the edit is named already)
            in_rows += named or (
                [_columns_changed(batch_id, run_id)] if _columns_differ(moved, record) else []
            )
            if artifacts_of in (None, run_id) and hashes not in ("{}", None):
                problems, read = self._artifact_problems(batch_id, run_id, hashes)
                in_rows += problems
                artifacts += read
        if legacy:
            found.append(_unverifiable(batch_id, legacy, "records"))
        head = self._query("SELECT length, head FROM chains WHERE batch_id = ?", (batch_id,))
        found += in_rows + checker.end(head[0] if head else None) + self._copies(batch_id)
        found += self._outside_plan_problems(batch_id, batch_text)
        found += self._label_problems(batch_id, batch_hash)
        for side in _SIDES:
            found += self._side_problems(side, batch_id, batch_hash)
        return Verification(
            batch_id=batch_id,
            records=records,
            artifacts=artifacts,
            problems=found,
            chain_head=str(head[0][1]) if head else None,
        )

    def _hashed_from(self, table: str, rowid: str, batch_hash: str | None) -> float:
        """The *rowid* from which every row in *table* carries its hashes, so that one without
        is no row written before they were, but added by hand (altered): the table's first
        hashed row (every row stored since the store was migrated is hashed; infinity before
        any), and for runs any row of a batch stored under format 2 (its record hashed: run
        hashes came with batch hashes; labels were hashed later)."""
        if batch_hash is not None and table == "runs":
            return float("-inf")
        first = self._query(
            f"SELECT {rowid} FROM {table} WHERE record_hash IS NOT NULL ORDER BY {rowid} LIMIT 1",
            (),
        )
        return float(first[0][0]) if first else float("inf")

    def hand_edits(self) -> int:
        """How many UPDATE or DELETE of a run or batch row the ``edits`` log holds: groundstate
        makes none, so each is a hand edit (the whole store's, not one batch's; a forger can
        empty the log)."""
        return int(self._query("SELECT COUNT(*) FROM edits", ())[0][0])

    def _copies(self, batch_id: str) -> list[Problem]:
        """Tries stored more than once. Only a hand edit makes one (the unique index refuses
        it; a forger drops the index, then appends the copy to the chain with every hash
        right), and statistics would count it twice."""
        rows = self._query(
            "SELECT task_id, attempt, retry, COUNT(*) FROM runs WHERE batch_id = ? "
            "GROUP BY task_id, attempt, retry HAVING COUNT(*) > 1",
            (batch_id,),
        )
        return [
            Problem(
                batch_id=batch_id,
                kind="record_altered",
                detail=f"task {task!r} attempt {attempt} try {retry} is stored {count} times "
                "(a try is stored once: copies were added by hand)",
            )
            for task, attempt, retry, count in rows
        ]

    def _outside_plan_problems(self, batch_id: str, batch_text: str) -> list[Problem]:
        """One problem per try outside the batch's plan (:meth:`outside_plan`); none when
        its record does not parse (named as altered already)."""
        try:
            batch = BatchInfo.model_validate_json(batch_text)
        except ValidationError:
            return []
        return [
            Problem(
                batch_id=batch_id,
                run_id=row.run_id,
                kind="outside_plan",
                detail=f"task {row.task_id!r} attempt {row.attempt} try {row.retry} is outside "
                f"the batch's plan ({row.why}): added by hand or by another program, left out "
                "of every figure",
            )
            for row in self.outside_plan(batch)
        ]

    def _label_problems(self, batch_id: str, batch_hash: str | None) -> list[Problem]:
        """The labels chain of a batch: each labels row against its hash, its indexed columns
        against its record, the links, and the head (labels are few: each is parsed)."""
        checker = _ChainCheck(
            batch_id,
            labels_genesis(batch_id, batch_hash),
            noun="labels row",
            missing="labels_missing",
            broken="labels_altered",
            heads="label_chains",
        )
        hashed_from = self._hashed_from("labels", "id", batch_hash)
        found: list[Problem] = []
        legacy = 0
        for row_id, run_id, annotator, adjudicated, seq, text, content, chain in self._stream(
            "SELECT id, run_id, annotator, adjudicated, seq, record, record_hash, chain_hash "
            "FROM labels WHERE batch_id = ? ORDER BY seq, id",
            (batch_id,),
        ):
            if content is None:
                if row_id < hashed_from:
                    legacy += 1
                else:
                    found.append(_unhashed(batch_id, run_id, "labels row", "labels_altered"))
                continue
            found += checker.row(run_id, seq, content, "", chain)
            columns = {"batch_id": batch_id, "run_id": run_id, "annotator": annotator}
            found += _labels_row_problems(columns, bool(adjudicated), text, content)
        head = self._query("SELECT length, head FROM label_chains WHERE batch_id = ?", (batch_id,))
        if legacy:
            found.append(_unverifiable(batch_id, legacy, "labels rows"))
        return found + checker.end(head[0] if head else None)

    def _side_problems(self, side: _Side, batch_id: str, batch_hash: str | None) -> list[Problem]:
        """A batch's chain in a side table (sessions, tasks named invalid by resumes): each row
        against its hash, the links (which hold its key column) and the head. A store opened
        read-only from before these rows were hashed cannot be checked: they are unverifiable."""
        columns = _table_columns(self._db, side.table)
        if "record_hash" not in columns:
            count = self._query(
                f"SELECT COUNT(*) FROM {side.table} WHERE batch_id = ?", (batch_id,)
            )[0][0] if columns else 0  # fmt: skip
            why = "recorded before they were hashed; the store hashes them where it can be written"
            return [_unverifiable(batch_id, count, f"{side.table} rows", why)] if count else []
        checker = _ChainCheck(
            batch_id,
            side.genesis(batch_id, batch_hash),
            noun=side.noun,
            nouns=side.nouns,
            missing=side.missing,
            broken=side.broken,
            heads=side.heads,
        )
        found: list[Problem] = []
        for key, seq, text, content, chain in self._stream(
            f"SELECT {side.key}, seq, {side.text}, record_hash, chain_hash FROM {side.table} "
            "WHERE batch_id = ? ORDER BY seq, rowid",
            (batch_id,),
        ):
            named: list[tuple[ProblemKind, str]] = []
            if content is None:  # every row is hashed (old ones when the store migrated)
                named.append((side.broken, "without hashes (added by hand)"))
            else:
                named += [
                    (p.kind, p.detail) for p in checker.row(str(key), seq, content, "", chain)
                ]
                if _content_hash(text) != content:
                    named.append((side.broken, "altered (no longer matches its hash)"))
            what = f"{side.noun} {key!r}" if isinstance(key, str) else f"{side.noun} {key}"
            found += [Problem(batch_id=batch_id, kind=k, detail=f"{what}: {d}") for k, d in named]
        head = self._query(f"SELECT length, head FROM {side.heads} WHERE batch_id = ?", (batch_id,))
        return found + checker.end(head[0] if head else None)

    def _artifact_problems(
        self, batch_id: str, run_id: str, hashes: str | None
    ) -> tuple[list[Problem], int]:
        try:
            named = json.loads(hashes or "{}")
        except ValueError:
            return [], 0  # the chain check already names the altered column
        found = []
        for name, digest in sorted(named.items()):
            try:
                self.read_artifact(f"sha256:{digest}")
            except StoreError as exc:
                message = str(exc)
                missing = " is missing: " in message
                kind: ProblemKind = "artifact_missing" if missing else "artifact_altered"
                what = (
                    "missing"
                    if missing
                    else "edited"
                    if " is corrupt " in message
                    else message.partition(" is ")[2]  # unreadable: the file and the reason
                )
                found.append(
                    Problem(
                        batch_id=batch_id,
                        run_id=run_id,
                        kind=kind,
                        detail=f"artifact {name} (sha256:{digest[:12]}) {what}",
                    )
                )
        return found, len(named)


class _ChainCheck:
    """Walks a batch's hashed rows (runs, or labels) in insertion order, relinking the chain
    as it goes."""

    def __init__(
        self,
        batch_id: str,
        genesis: str,
        *,
        noun: str = "record",
        nouns: str | None = None,
        missing: ProblemKind = "record_missing",
        broken: ProblemKind = "chain_broken",
        heads: str = "chains",
    ) -> None:
        self.batch_id, self.heads = batch_id, heads
        self.previous = genesis
        self.seq = 0
        self.noun, self.nouns, self.missing, self.broken = noun, nouns, missing, broken
        self.prefix = "" if noun == "record" else f"{noun} "

    def fast(
        self, run_id: str, seq: int | None, content: str, hashes: str | None, chain: str | None
    ) -> bool:
        """Whether the row is the next link, unaltered, by the quick route (the link's JSON
        spelled by hand): True moves on; False means :meth:`row` must look (it is exact)."""
        if seq != self.seq + 1:
            return False
        spelled = f'["{self.previous}", "{run_id}", "{content}", "{hashes}"]'
        if hashlib.sha256(spelled.encode("utf-8", "replace")).hexdigest() != chain:
            return False  # altered, or characters json.dumps would escape: row() decides
        self.previous, self.seq = chain, seq
        return True

    def row(
        self, run_id: str, seq: int | None, content: str, hashes: str | None, chain: str | None
    ) -> list[Problem]:
        found = []
        expected = (seq or 0) - self.seq - 1
        if expected > 0:
            found.append(
                self._missing(
                    run_id, f"{counted(expected, self.noun, self.nouns)} deleted before this one"
                )
            )
        elif chain != chain_link(self.previous, run_id, content, hashes or ""):
            found.append(
                Problem(
                    batch_id=self.batch_id,
                    run_id=run_id,
                    kind=self.broken,
                    detail=f"{self.prefix}chain broken (its hashes or the row before it were "
                    "altered)",
                )
            )
        self.previous, self.seq = chain or "", seq or self.seq + 1
        return found

    def end(self, head: tuple[Any, ...] | None) -> list[Problem]:
        if head is None:
            if self.seq == 0:
                return []
            return [self._missing(None, f"chain head missing (the {self.heads} row was deleted)")]
        length, last = int(head[0]), str(head[1])
        if length > self.seq:
            gone = counted(length - self.seq, self.noun, self.nouns)
            return [self._missing(None, f"{gone} deleted at the end")]
        if length < self.seq or last != self.previous:
            return [
                Problem(
                    batch_id=self.batch_id,
                    kind=self.broken,
                    detail=f"{self.prefix}chain head does not match its last {self.noun}",
                )
            ]
        return []

    def _missing(self, run_id: str | None, detail: str) -> Problem:
        return Problem(batch_id=self.batch_id, run_id=run_id, kind=self.missing, detail=detail)


def _columns_changed(batch_id: str, run_id: str) -> Problem:
    return Problem(
        batch_id=batch_id,
        run_id=run_id,
        kind="record_altered",
        detail="its run id, batch, task, attempt, retry, terminal reason or success columns "
        "were changed (they no longer match its record)",
    )


def _unhashed(
    batch_id: str, run_id: str, noun: str, kind: ProblemKind = "record_altered"
) -> Problem:
    return Problem(
        batch_id=batch_id,
        run_id=run_id,
        kind=kind,
        detail=f"{noun} without hashes where every row is hashed (added by hand, not written "
        f"before store format {STORE_FORMAT})",
    )


def _unverifiable(batch_id: str, count: int, what: str, why: str = "") -> Problem:
    why = why or f"written before store format {STORE_FORMAT}"
    return Problem(
        batch_id=batch_id, kind="unverifiable", detail=f"{count} {what} unverifiable ({why})"
    )


def _use_wal(db: sqlite3.Connection) -> None:
    """Put the store in write-ahead-log mode. Switching a file's mode needs it alone, and
    SQLite answers "database is locked" at once, not after its busy timeout, to a process
    switching a new store while another opens it (two runs started together): so wait here,
    up to the same timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(random.uniform(0.005, 0.05))


EXIT_CAUSE_TIMEOUT = 10.0
"""Seconds a process-ending call waits for the store to note its cause before it goes on."""


def note_exit_cause(
    path: Path, run_ids: Sequence[str], cause: str, *, undo: bool = False, grading: bool = False
) -> None:
    """Write *cause* onto the marks of the tries *run_ids* (see :meth:`RunStore.mark_started`)
    that name none yet (*grading*: made by their checks), in a transaction of its own on a
    connection of its own (the caller is about to end the process, from any thread); with
    *undo*, take it back where it is *cause* (the call did not end the process)."""
    db = sqlite3.connect(path, isolation_level=None, timeout=EXIT_CAUSE_TIMEOUT)
    try:
        db.execute("BEGIN IMMEDIATE")
        for run_id in run_ids:
            row = db.execute(
                "SELECT record FROM started_tries WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is None:
                continue
            record = json.loads(row[0])
            if record.get("cause") != (cause if undo else None):
                continue
            record["cause"] = None if undo else cause
            record["grading"] = grading and not undo
            db.execute(
                "UPDATE started_tries SET record = ? WHERE run_id = ?",
                (json.dumps(record), run_id),
            )
        db.execute("COMMIT")
    finally:
        db.close()


def _migrate(db: sqlite3.Connection) -> None:
    """Add the format-2 columns to a store made before them; old rows stay as they are, but
    for the side tables' (:func:`_hash_old_rows`)."""
    sides = {side.table: side for side in _SIDES}
    for table, columns in _MIGRATIONS.items():
        have = _table_columns(db, table)
        if table in sides and not have >= {c.split()[0] for c in columns}:
            _hash_old_rows(db, sides[table])
            continue
        for column in columns:
            if column.split()[0] not in have:
                try:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
                except sqlite3.OperationalError as exc:  # another process migrated first
                    if "duplicate column" not in str(exc):
                        raise


def _table_columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _hash_old_rows(db: sqlite3.Connection, side: _Side) -> None:
    """Give a side table its hash columns, and its rows recorded before them (a store of the
    thirteenth round: sessions were new, and neither they nor the tasks named invalid by
    resumes were hashed) their hashes and chain as they stand, in one transaction: from then
    on every row is hashed, so one without hashes was added by hand (never "unverifiable").
    The fill is no hand edit: the update trigger is left out while it runs."""
    db.execute("BEGIN IMMEDIATE")
    try:
        have = _table_columns(db, side.table)  # again: another process may have done it
        for column in _MIGRATIONS[side.table]:
            if column.split()[0] not in have:
                db.execute(f"ALTER TABLE {side.table} ADD COLUMN {column}")
        trigger = side.trigger.split()[5]  # CREATE TRIGGER IF NOT EXISTS <name> ...
        db.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        old = db.execute(
            f"SELECT rowid, batch_id, {side.key}, {side.text} FROM {side.table} "
            "WHERE record_hash IS NULL ORDER BY batch_id, rowid"
        ).fetchall()
        for rowid, batch_id, key, text in old:
            db.execute(
                f"UPDATE {side.table} SET seq = ?, record_hash = ?, chain_hash = ? WHERE rowid = ?",
                (*side.link(db, batch_id, key, text), rowid),
            )
        db.execute(side.trigger)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _with_invalid(batch: BatchInfo, added: Iterable[str]) -> BatchInfo:
    """*batch* naming the tasks in *added* invalid too (as a resume found them)."""
    invalid = sorted({*batch.invalid_tasks, *added})
    if invalid == sorted(batch.invalid_tasks):
        return batch
    return batch.model_copy(update={"invalid_tasks": invalid})


_OPTIONAL = {"invalid_tasks_added.batch_id", "invalid_tasks_added.task_id",
             "invalid_tasks_added.created_at", "sessions.batch_id", "sessions.number",
             "sessions.created_at", "sessions.record", "sessions.seq", "sessions.record_hash",
             "sessions.chain_hash", "session_chains.batch_id", "session_chains.length",
             "session_chains.head", "invalid_tasks_added.seq", "invalid_tasks_added.record_hash",
             "invalid_tasks_added.chain_hash", "invalid_task_chains.batch_id",
             "invalid_task_chains.length", "invalid_task_chains.head", "started_tries.run_id",
             "started_tries.batch_id", "started_tries.record"}  # fmt: skip
"""Columns a store made before them is read without (a read-only one cannot gain them):
without those tables, no resume added an invalid task, and no session was recorded."""


def _make_new(db: sqlite3.Connection) -> None:
    """Give a new store (no ``batches`` table) every table, index and trigger of this version,
    stamped, in one transaction: made statement by statement, a store opened by another
    process meanwhile (two ``run``s started on a fresh ``--store``) was seen half made, and
    refused as one whose tables were dropped (:func:`_altered`)."""
    if _has_batches(db):
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        if not _has_batches(db):  # not made by another process while this one waited
            for (sql,) in _current_schema().execute(
                "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite%' "
                "ORDER BY rowid"
            ):
                db.execute(sql)
            db.execute(_ONE_ROW_PER_TRY)
            _stamp(db)
            db.execute(f"PRAGMA user_version = {STORE_FORMAT}")
        db.execute("COMMIT")
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")


def _has_batches(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = 'batches'").fetchone() is not None


@functools.cache
def _current_schema() -> sqlite3.Connection:
    """An empty store of this version's schema, in memory: what a read-only store is
    compared with (it cannot be migrated)."""
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.executescript(_SCHEMA)
    _migrate(db)
    db.executescript(_SCHEMA_AFTER_MIGRATION)
    return db


_GENERATIONS = (
    ("batches", "runs", "validations"),
    ("chains", "leases"),  # store format 2
    ("labels",),
    ("label_chains", "edits", "seals"),
    ("invalid_tasks_added",),
    ("sessions",),
    ("session_chains",),
    ("invalid_task_chains",),
    ("started_tries",),
)
"""The store's tables in the order groundstate added them. Every open makes those a store
lacks, so a store with a table has every table added before it, unless one was
dropped. Since the fiftieth round a store is stamped with how many of these generations it
has (:data:`_TABLES_STAMP`): a table of them missing, the newest too, is one dropped."""
_TABLES_STAMP = 0x47530000
"""``PRAGMA application_id`` of a store: this (``GS``) plus the number of :data:`_GENERATIONS`
of tables it was given. A store's tables are not made again, empty, when one is missing (a
seal or lease table included: a store missing any table it had was changed outside
groundstate or damaged, and is refused, not read as whole); the stamp tells a table dropped
from one of a store made before the table was."""


def _stamped(db: sqlite3.Connection) -> int | None:
    """How many :data:`_GENERATIONS` of tables *db* was given, by its stamp; None unstamped
    (a store made before the fiftieth round)."""
    found = int(db.execute("PRAGMA application_id").fetchone()[0])
    return found - _TABLES_STAMP if found >> 16 == _TABLES_STAMP >> 16 else None


def _stamp(db: sqlite3.Connection) -> None:
    """Stamp *db*, which has every table of this version, with their :data:`_GENERATIONS`."""
    if (_stamped(db) or 0) < len(_GENERATIONS):
        db.execute(f"PRAGMA application_id = {_TABLES_STAMP + len(_GENERATIONS)}")


def _altered(db: sqlite3.Connection) -> str | None:
    """What in *db*'s tables no groundstate made, as the end of a sentence naming the store;
    ``None`` for a new store or one made by this or an older groundstate (which opening
    migrates). Refused: a table missing that its stamp says it had, or (unstamped) beside a
    table added after it, or (in a store stamped format 2) one of the tables format
    2 began with; a column of groundstate's tables that no version made (an insert would
    leave it empty, or fail on it); a column missing that no migration adds (or, in a store
    stamped format 2, one format 2 added)."""
    have = _columns(db)
    tables = {column.split(".")[0] for column in have}
    if "batches" not in tables:  # a new store (another program's database is refused before)
        return None if _stamped(db) is None else "has no table 'batches', which it had (dropped?)"
    if (missing_table := _table_missing(db, tables)) is not None:
        return missing_table
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    want = _columns(_current_schema())  # never closed: it is shared (functools.cache)
    ours = {column.split(".")[0] for column in want}
    if extra := sorted(c for c in have - want if c.split(".")[0] in ours):
        return f"has a column {extra[0]} that groundstate does not make"
    added = {f"{t}.{c.split()[0]}" for t, columns in _MIGRATIONS.items() for c in columns}
    if version >= STORE_FORMAT:
        added = {c for c in added if c.split(".")[0] not in ("batches", "runs")}
    if missing := sorted(c for c in want - have - added if c.split(".")[0] in tables):
        stamp = f" (its store format {version} has it)" if version >= STORE_FORMAT else ""
        return f"has no column {missing[0]}{stamp}"
    return None


def _table_missing(db: sqlite3.Connection, tables: set[str]) -> str | None:
    """Which table of its :data:`_GENERATIONS` a store with *tables* lacks, as the end of a
    sentence naming the store; None when it lacks only tables added after it was made.
    Unstamped, a table is known dropped only beside one added after it: a store from before
    the stamp lacking every table of its newest generation (``started_tries``) cannot be told
    from one made before that generation, and gains it empty; nor can one lacking a table
    made in the same generation as one it has (older stores were made so: ``batches`` and
    ``runs`` without ``validations``), which gains it too."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    given = _stamped(db)
    newest = max(i for i, names in enumerate(_GENERATIONS) for t in names if t in tables)
    for i, names in enumerate(_GENERATIONS):
        for table in (t for t in names if t not in tables):
            if given is not None and i < given:
                return f"has no table {table!r}, which it had (dropped?)"
            if i < newest:
                later = next(t for t in _GENERATIONS[newest] if t in tables)
                return f"has no table {table!r}, though it has {later!r}, added after it (dropped?)"
            if version >= STORE_FORMAT and i <= 1:
                return f"has no table {table!r}, which its store format {version} has"
    return None


def _columns(db: sqlite3.Connection) -> set[str]:
    """Every ``table.column`` of *db*'s tables."""
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {f"{t}.{c[1]}" for t in tables for c in db.execute(f"PRAGMA table_info('{t}')")}


_BATCH_CANDIDATES = """
SELECT batch_id, created_at, suite, system FROM (
    SELECT batch_id, created_at,
        CASE WHEN json_valid(record) THEN json_extract(record, '$.suite') END AS suite,
        CASE WHEN json_valid(record) THEN json_extract(record, '$.system_spec.name') END
            AS system
    FROM batches
) WHERE batch_id BETWEEN ? AND ? OR suite = ? OR system = ? ORDER BY created_at
"""
"""Batches whose id starts with a text, or that are named so (:meth:`RunStore.batch_id_for`)."""

_LISTED = 5
"""Candidates an ambiguous batch argument lists."""


def _candidate(given: str, batch_id: str, created_at: str, suite: Any, system: Any) -> str:
    """One batch an ambiguous argument matches: why, and what tells it from the others."""
    why = f"id starts with {given!r}" if batch_id.startswith(given) else f"named {given!r}"
    names = f"suite {suite!r}" + (f", system {system!r}" if system != suite else "")
    return f"{batch_id} ({why}; {names}; created {created_at})"


def _prefixed(prefix: str) -> tuple[str, str]:
    """The id range that starts with *prefix*, exactly (``BETWEEN``): LIKE would read ``%``
    and ``_`` typed by a user as wildcards (``report %`` picking some batch) and ignore case;
    the range also uses the primary key's index."""
    require_id(prefix)
    return prefix, prefix + chr(0x10FFFF)


def require_id(prefix: str) -> str:
    """*prefix*, refused when empty (``show "$RUN"`` with RUN unset): it would pick a store's
    only run or batch without a word."""
    if not prefix:
        raise StoreError("an empty id names nothing: give an id, or a prefix of one")
    return prefix


def say_waiting(path: Path, seconds: float) -> None:
    """Log (:data:`LOG`, a warning) that a write to the store at *path* waits for another
    process's."""
    LOG.warning(
        "waiting up to %.0f s for the run store %s: another process holds its write lock "
        "(a run storing tries, or a lock left open)",
        seconds,
        path,
    )


def _cannot_write(exc: sqlite3.OperationalError) -> bool:
    """SQLite's ways of saying the store's file or folder may not be written here."""
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open database" in text


DAMAGED = (
    "its file was cut short or overwritten, say copied while a batch was stored: restore it "
    "from a backup, or give another --store"
)
"""What a store SQLite finds damaged (or :func:`_cut_short` does) is told to do."""


def _cut_short(path: Path) -> str | None:
    """How the SQLite file at *path* is cut short, read from its header (a part page at its
    end, or fewer pages than the header counts), or ``None``: SQLite opens such a file and
    a write goes on into it (a whole batch stored), where every read then fails as
    "database disk image is malformed". The count is taken only with no write-ahead log
    beside the file (none is open on it), when the file holds every page."""
    try:
        with path.open("rb") as handle:
            header = handle.read(100)
        size = path.stat().st_size
    except OSError:
        return None
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        return None
    page = int.from_bytes(header[16:18], "big")
    page = 65536 if page == 1 else page
    if page < 512 or page & (page - 1):
        return None
    if size % page:
        return f"its size ({size} bytes) is not a whole number of its {page}-byte pages"
    counted = int.from_bytes(header[28:32], "big")
    count_valid = header[24:28] == header[92:96]
    wal = path.with_name(path.name + "-wal")
    if count_valid and counted * page > size and not (wal.exists() or wal.is_symlink()):
        return f"it holds {size // page} of the {counted} pages its header counts"
    return None


def _no_store(path: Path, create: bool) -> str | None:
    """Why *path* is refused before SQLite opens it, or ``None``: something there that is no
    file (opening a FIFO waits for a writer for ever; a reading command said "nothing has been
    run here yet"); a write-ahead log beside no database, or an empty one (SQLite would make a
    new store there and delete the log, the only copy of its commits); a link to nowhere, for
    a reading command or where its target's folder is missing too (SQLite says only "unable to
    open database file")."""
    try:
        mode: int | None = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # SQLite: "unable to open database file"
            return f"the run store {path} is {LINK_LOOP}; give another --store"
        return None  # SQLite's own reason names it
    except ValueError:
        return None
    if mode is not None and not stat.S_ISREG(mode):
        return f"the run store {path} is {not_regular(mode)}; give another --store"
    wal = path.with_name(path.name + "-wal")
    if not _size(path) and (logged := _size(wal) or 0) > 0:
        state = "missing" if mode is None else "an empty file"
        return (
            f"the run store {path} is {state}, but its write-ahead log {wal.name} beside it "
            f"holds {logged} bytes of commits: the database file was moved, deleted or "
            f"emptied; put it back beside the log (or move {wal.name} away to start a new "
            "store); nothing was written"
        )
    link = dangling_link(path) if mode is None else None
    if link is not None and (not create or not path.resolve().parent.is_dir()):
        return f"no run store at {path}: it is {link}; give the store's file with --store"
    return None


def _why(exc: sqlite3.Error, path: Path) -> str:
    """What SQLite's reason for a failed read or write leaves out, in parentheses, or ``""``."""
    if "malformed" in str(exc):
        return f" ({DAMAGED})"
    if "locked" in str(exc):
        return (
            f" (another process kept a write open on it for {BUSY_TIMEOUT:g} s: try again "
            "when it is done)"
        )
    return _file_system_full(path)


def _folder_refuses(path: Path) -> str:
    """`` (its folder F cannot be written: REASON)`` when no file can be made beside the store
    at *path*, else ``""``: SQLite says only "unable to open database file" when it cannot
    make the store (or its journal) there (a read-only or immutable folder, one owned by
    another user)."""
    try:
        with tempfile.TemporaryFile(dir=path.parent):
            return ""
    except OSError as exc:
        return f" (its folder {path.parent} cannot be written: {exc.strerror or exc})"


def _file_system_full(path: Path) -> str:
    """`` (its file system is full)`` when the store's folder has no free block left, else
    ``""``: SQLite says only "disk I/O error" when it cannot make its shared-memory file."""
    try:
        stats = os.statvfs(path.parent)
    except (OSError, AttributeError):  # no such folder, or no statvfs (Windows)
        return ""
    return " (its file system is full)" if stats.f_bavail == 0 else ""


_MAKING = 2.0
"""Seconds a command that makes a store waits for an empty file at its path to be written:
another process may be making the store there (SQLite makes the file, then writes it)."""


def _left_empty(path: Path, create: bool) -> bool:
    """Whether the file at *path* is empty (and stays so *create*: see :data:`_MAKING`): no
    run store, for every command alike. Making one in it (as ``import-results`` and ``run``
    did) hid a store emptied by a failed copy behind a new one, which reading commands
    refused as no store."""
    waited = 0.0
    while _size(path) == 0:
        if not create or waited >= _MAKING:
            return True
        time.sleep(0.05)
        waited += 0.05
    return False


def _size(path: str | Path) -> int | None:
    """The size of the file at *path*, or None when there is none (a file in the way of its
    folder included: the open names it, see :func:`~groundstate.paths.in_the_way`)."""
    try:
        return os.stat(path).st_size
    except (FileNotFoundError, NotADirectoryError):
        return None


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)


def _create(target: str, data: bytes) -> None:
    """Write *data* to a new file *target* (its folder made if needed), readable by this user
    only, as the temporary files artifacts were once renamed from; FileExistsError when
    *target* exists."""
    try:
        fd = os.open(target, _NEW_FILE, 0o600)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        fd = os.open(target, _NEW_FILE, 0o600)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _replace(target: str, data: bytes) -> None:
    """Replace whatever is at *target* with *data* at once: readers see the old file or the
    whole new one."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".tmp-")
    try:
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except OSError:
        os.unlink(tmp)  # a full disk: no temporary file left behind
        raise


@functools.cache
def _hostname() -> str:
    """This machine's name, as leases record it (asked once: it is a system call)."""
    return socket.gethostname()


def _summary(
    batch: BatchInfo, stored: int, pending: int, lease: Lease | None, now: datetime
) -> BatchSummary:
    imported = batch.source != "groundstate"
    expected = stored if imported else batch.attempts * len(batch.task_revisions)
    pending = 0 if imported else pending
    status: BatchStatus = (
        "imported"
        if imported
        else "running"
        if lease is not None and not lease.stale(now)
        else "empty"
        if stored == 0
        else "complete"
        if stored >= expected and not pending
        else "incomplete"
    )
    return BatchSummary(
        batch_id=batch.batch_id,
        created_at=batch.created_at,
        suite=batch.suite,
        suite_path=batch.suite_path,
        system_spec_hash=batch.system_spec_hash,
        source=batch.source,
        attempts_stored=stored,
        attempts_expected=expected,
        reruns_pending=pending,
        status=status,
    )


def _content_hash(text: str) -> str | None:
    parsed = _parse_hashed(text)
    return None if parsed is None else parsed[1]


class _KeyTwice(Exception):
    """A JSON object writes a key twice (:func:`_keys_once`)."""


def _keys_once(items: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` refusing a key written twice in one object. A record's hash is
    of the parsed record (Python keeps a key's last value) while SQLite's ``json_extract``,
    which reads the outcome columns and compares the indexed ones, takes the first: an edit
    adding ``"success": true`` before the real field would flip a verdict under a hash that
    still matches."""
    found = dict(items)
    if len(found) < len(items):
        raise _KeyTwice
    return found


def _parse_hashed(text: str) -> tuple[Any, str] | None:
    """*text* parsed and its :func:`record_hash`, from one parse (a check needs both: parsing
    a run record twice was a seventh of verifying it); None when *text* is not JSON, or
    writes a key of an object twice (:func:`_keys_once`: not the record its hash is of)."""
    try:
        data = json.loads(text, object_pairs_hook=_keys_once)
        return data, _canonical_hash(data)
    except (ValueError, _KeyTwice, RecursionError):  # RecursionError: nested too deeply
        return None


def _unreadable(record: bytes | str) -> str:
    """Why a stored record is unreadable, naming the byte, the place or the key (the error
    path only: parsed once more to say where)."""
    if isinstance(record, str):
        record = record.encode("utf-8", "surrogatepass")
    try:
        text = record.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8: byte 0x{record[exc.start]:02x} at offset {exc.start}"
    try:
        json.loads(text, object_pairs_hook=_key_named)
    except json.JSONDecodeError as exc:
        return f"its JSON does not parse: {exc.msg} at offset {exc.pos}"
    except _KeyTwice as exc:
        return f"its JSON writes the key {exc.args[0]!r} twice in one object"
    except (ValueError, RecursionError) as exc:
        return f"its JSON does not parse: {exc}"
    return "its JSON does not parse"


def _key_named(items: list[tuple[str, Any]]) -> dict[str, Any]:
    """:func:`_keys_once`, naming the key written twice."""
    seen: set[str] = set()
    for key, _ in items:
        if key in seen:
            raise _KeyTwice(key)
        seen.add(key)
    return dict(items)


def _record_problems(
    batch_id: str, run_id: str, record: bytes, content: str, hashes: str | None
) -> list[Problem]:
    """A record that is not canonical text matching its hash, or that names artifacts: parse
    it, hash its canonical form, and hold its artifact names to the stored artifact hashes."""
    try:
        text = record.decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    parsed = _parse_hashed(text)
    if parsed is None:
        return [
            Problem(
                batch_id=batch_id,
                run_id=run_id,
                kind="record_unreadable",
                detail=f"record unreadable ({_unreadable(record)})",
            )
        ]
    data, recomputed = parsed
    if recomputed != content:
        return [
            Problem(
                batch_id=batch_id,
                run_id=run_id,
                kind="record_altered",
                detail="record altered (its JSON no longer matches its hash)",
            )
        ]
    if hashes is not None and _artifact_names(data) != hashes:
        return [
            Problem(
                batch_id=batch_id,
                run_id=run_id,
                kind="record_altered",
                detail="record names other artifacts than its stored artifact hashes",
            )
        ]
    return []


def _artifact_names(data: Any) -> str | None:
    """The ``artifact_hashes`` column that a parsed record's artifact locations make; None
    when they are not a mapping (edited by hand: then they match no column)."""
    locations = (data.get("artifact_locations") if isinstance(data, dict) else None) or {}
    if not isinstance(locations, dict):
        return None
    return json.dumps({k: str(v).removeprefix("sha256:") for k, v in sorted(locations.items())})


def _labels_row_problems(
    columns: dict[str, str], adjudicated: bool, text: str, content: str
) -> list[Problem]:
    """A labels row against its hash, and its indexed columns (what ``labels()`` filters on)
    against its record."""
    where = f"labels by {columns['annotator']}"
    problem = Problem(
        batch_id=columns["batch_id"],
        run_id=columns["run_id"],
        kind="labels_altered",
        detail=f"{where} altered (its JSON no longer matches its hash)",
    )
    parsed = _parse_hashed(text)
    if parsed is None:
        return [problem.model_copy(update={"detail": f"{where} unreadable ({_unreadable(text)})"})]
    if parsed[1] != content:
        return [problem]
    data = parsed[0] if isinstance(parsed[0], dict) else {}  # not an object: no columns
    stored = {name: data.get(name) for name in columns} | {"adjudicated": data.get("adjudicated")}
    if stored != columns | {"adjudicated": adjudicated}:
        detail = f"{where}: its batch, run, annotator or adjudicated columns were changed"
        return [problem.model_copy(update={"detail": detail})]
    return []


def parse_stored(texts: Iterable[str]) -> list[AgentRun]:
    """The records stored as *texts* (the :attr:`PreparedRun.text` of each): what
    :meth:`RunStore.runs` would read back, without reading it."""
    with _collector_paused():
        return [AgentRun.model_validate_json(text, strict=True) for text in texts]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off while many records are parsed. Parsing makes
    no reference cycles, yet its allocations set off collection after collection, each scanning
    the live objects again: with a loaded suite and a batch in memory they doubled the cost of
    reading records back. Process-wide (the collector is); a collector already off stays off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _run_key(row: Sequence[Any]) -> RunKey:
    """A run's indexed columns as stored, strictly: a hand-edited column of another type (a
    success ``'false'`` or ``2``, an attempt ``'1'``) is an error naming the run and column,
    never read as ``True`` or ``1``."""
    names = ("batch_id", "task_id", "attempt", "terminal_reason", "success")
    kinds = (str, str, int, str, int)
    for name, kind, value in zip(names, kinds, row[1:], strict=True):
        if type(value) is not kind or (name == "success" and value not in (0, 1)):
            raise StoreError(
                f"run {row[0]} is unreadable (corrupt column {name}: {value!r} is not "
                f"{'0 or 1' if name == 'success' else 'an integer' if kind is int else 'text'})"
                f"; `groundstate verify` checks the whole batch"
            )
    return RunKey(row[1], row[2], row[3], row[4], row[5] == 1)


def _parse(text: str, model: type[M], what: str, batch_id: str | None = None) -> M:
    """A stored record, strictly: a field of another JSON type (a hand-edited ``"1"`` or
    ``"true"``) is an error naming it, never read as 1 or True."""
    try:
        return model.model_validate_json(text, strict=True)
    except ValidationError as exc:
        hint = f"; `groundstate verify {batch_id}` checks the whole batch" if batch_id else ""
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        raise StoreError(
            f"{what} is unreadable (corrupt record: {field + ': ' if field else ''}"
            f"{error['msg']}){hint}"
        ) from exc


def _one(rows: list[tuple[Any, ...]], model: type[M], what: str, store: Path) -> M:
    if not rows:
        raise StoreError(f"no {what} in the run store {store}")
    if len(rows) > 1:
        raise StoreError(f"{what} is ambiguous: {len(rows)} records match; give more characters")
    return _parse(rows[0][0], model, what)
