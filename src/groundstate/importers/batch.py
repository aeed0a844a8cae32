"""From imported rows to a stored batch: the file read once, the store written in one transaction.

Pass 1 checks every row, gathers what the batch record needs (each task's revision, weight,
horizon and slices, the attempt labels in use) and spools what pass 2 needs of each row to a
temporary file; pass 2 builds each run record from the spool and streams it into the store.
Memory grows with the number of tasks, not rows (text attempt labels excepted: their
numbering is kept per task). Nothing is stored unless every row is.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import marshal
import re
import secrets
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel

from groundstate.analysis import OutcomeColumns
from groundstate.errors import SpecError, StoreError, named_value
from groundstate.importers.rows import ImportedRow, IntegerKey, ResultSource, Tokens
from groundstate.importers.table import COLUMNS
from groundstate.lookalike import skeleton
from groundstate.records import INVALID_REASONS, JUDGED, AgentRun, CheckResult
from groundstate.rounding import counted
from groundstate.seal import import_seal
from groundstate.spec.strict import did_you_mean
from groundstate.store import (
    UNKNOWN_USAGE_KEY,
    UNKNOWN_USAGE_MARK,
    BatchInfo,
    RunStore,
    StoredRun,
    record_json,
)
from groundstate.trace import recordable


class ImportReport(BaseModel):
    """What an import stored and what it had to map, keep or leave out."""

    batch: BatchInfo
    format: str
    """``csv``, ``jsonl``, ``tau-bench``, ``tau2-bench``, ``inspect``, ``swe-bench``,
    ``harbor`` or ``appworld``."""
    runs: int
    """Run records stored (retries included)."""
    attempts: int = 0
    """Attempts the records make (a rerun of an invalid try is the same attempt again)."""
    tasks: int
    attempt_labels: str
    """How the file's attempt labels became attempt numbers."""
    mapped: dict[str, int]
    """Foreign verdicts and ends and what they became (``"max_steps -> agent_failure/
    step_limit"``), with their counts."""
    unmapped: dict[str, int]
    """Values no rule maps, with their counts (each also a warning)."""
    ignored_columns: list[str]
    warnings: list[str]
    """One line each, for stderr."""
    seconds: float
    already_stored: bool = False
    """The same file (by content), under the same name and options, was imported before as
    :attr:`batch`, read as it is read now: nothing was stored again (an import repeated is
    not a second batch that ``compare`` or ``batches`` would take for another system). One
    an earlier importer read otherwise is not returned: the file is stored anew, named."""


@dataclass(slots=True)
class _Task:
    """What the rows of one task declare about it; blanks inherit from the other rows."""

    revision: int | None = None
    weight: float | None = None
    horizon: int | None = None
    slices: tuple[str, ...] | None = None
    invalid: bool | None = None
    """Failed validation and ran anyway (the batch's ``invalid_tasks``)."""
    attempts: int = 0
    """Attempts: rows that are first tries (``retry`` 0), and attempts given only by reruns."""
    last: tuple[Any, ...] = ()
    """The declarations of the task's previous row."""
    lines: dict[str, int] = field(default_factory=dict)
    """The line that first declared each attribute, for a conflict's message."""
    integer: bool = False
    """The file gave the task's id as an integer (:class:`IntegerKey`), on :attr:`first`."""
    first: int = 0
    """The line of the task's first row."""

    def declare(self, source: ResultSource, line: int, name: str, value: Any) -> None:
        if value is None:
            return
        held = getattr(self, name)
        if held is None:
            setattr(self, name, value)
            self.lines[name] = line
        elif held != value:
            column = _COLUMN_OF.get(name, name)
            raise SpecError(
                source.place(line),
                column,
                f"{value!r} contradicts {held!r} given for the same task "
                f"{_at(source, self.lines[name])} (a task has one {column})",
            )


_COLUMN_OF = {"revision": "task_revision", "slices": "slice_labels", "invalid": "invalid_task"}
"""The row format's column of each task attribute, for a conflict's message."""


@dataclass
class _Plan:
    """Pass 1: everything the batch record and the attempt numbering need."""

    tasks: dict[str, _Task] = field(default_factory=dict)
    rows: int = 0
    text_labels: bool = False
    lowest: int | None = None
    highest: int | None = None
    first: int | None = None
    """The label of a run's first attempt (:func:`first_label`), once every row is read."""
    ignored: set[str] = field(default_factory=set)
    mapped: Counter[str] = field(default_factory=Counter)
    unmapped: Counter[str] = field(default_factory=Counter)
    reruns: set[tuple[str, int | str]] = field(default_factory=set)
    """(task, label) of the attempts with a rerun (``retry`` > 0), checked in pass 2."""
    graded: bool = False
    """Some reward is partial (strictly between 0 and 1): every reward is a partial score."""
    shown: dict[str, str] = field(default_factory=dict)
    """An id's :func:`~groundstate.lookalike.skeleton`, when it is not the id itself -> the
    first id with it (an id that is its own skeleton, in :attr:`tasks`, is its own key: most
    ids, small letters, digits and hyphens, are, and a map of them all would double what a
    file of many tasks holds)."""
    lookalikes: list[tuple[str, str]] = field(default_factory=list)
    """Pairs of ids (the earlier, the later) that read alike and are two tasks."""

    def add(self, source: ResultSource, row: ImportedRow) -> None:
        self.rows += 1
        self.graded |= row.reward is not None and 0.0 < row.reward < 1.0
        if row.retry > 0:
            self.reruns.add((str(row.task_id), row.label))
        task = self.tasks.get(row.task_id)
        integer = type(row.task_id) is IntegerKey
        if task is None:
            task = self.tasks[str(row.task_id)] = _Task(integer=integer, first=row.line)
            self._compare_shown(str(row.task_id))
        elif integer != task.integer:  # 1 and "1": two ids to the file's harness, not one
            kinds = ("an integer", "text") if integer else ("text", "an integer")
            raise SpecError(
                source.place(row.line),
                "task_id",
                f"task id {row.task_id!r} is given as {kinds[0]} here and as {kinds[1]} "
                f"{_at(source, task.first)}: two different ids to the harness that wrote the "
                "file, which would be read as one task",
            )
        declared = (row.task_revision, row.weight, row.horizon, row.slice_labels, row.invalid_task)
        if declared != task.last:  # the usual row repeats its task's last: nothing to check
            for name, value in zip(_DECLARED, declared, strict=True):
                task.declare(source, row.line, name, value)
            task.last = declared
        task.attempts += row.retry == 0
        if isinstance(row.label, int):
            self.lowest = row.label if self.lowest is None else min(self.lowest, row.label)
            self.highest = row.label if self.highest is None else max(self.highest, row.label)
        else:
            self.text_labels = True
        if row.ignored:
            self.ignored.update(row.ignored)
        if row.mapped:
            self.mapped[row.mapped] += 1
        if row.unmapped:
            self.unmapped[row.unmapped] += 1

    def _compare_shown(self, task_id: str) -> None:
        """Note *task_id*, a new task's, if an earlier task's id shows as it does."""
        key = skeleton(task_id)
        if key == task_id:  # shows as written: only an id that does not can look like it
            earlier = self.shown.get(key)
        else:
            earlier = self.shown.setdefault(key, task_id)
            if earlier == task_id:
                earlier = key if key in self.tasks else None
        if earlier is not None:
            self.lookalikes.append((earlier, task_id))


def _lookalikes(source: ResultSource, plan: _Plan) -> str | None:
    """The warning for task ids that show alike and are stored as two tasks (the store, and
    the file's harness, compare ids as written): a file merged from two machines, ids edited
    by hand or pasted from another script's keyboard would split one task's attempts, and
    every rate with them, without a sign in the report, where both read as one name. Ids are
    compared by :func:`~groundstate.lookalike.skeleton`."""
    if not plan.lookalikes:
        return None
    pairs = "; ".join(  # escaped: "é" and "e" with an accent show as one in a repr
        f"{a!a} ({_at(source, plan.tasks[a].first)}) and {b!a} ({_at(source, plan.tasks[b].first)})"
        for a, b in plan.lookalikes[:5]
    )
    more = len(plan.lookalikes) - 5
    return (
        f"{source.path}: task ids that show alike differ only in letter case, in letters of "
        "another script drawn like Latin ones (a Cyrillic or Greek o), in their Unicode form, "
        f"in characters that do not show or in spaces at either end ({pairs}"
        f"{f'; {more} more pairs' if more > 0 else ''}): kept as different tasks, as "
        "written, each with its own attempts and rates; if they are one task, write its id "
        "one way"
    )


_DECLARED = ("revision", "weight", "horizon", "slices", "invalid")
"""What a row declares about its task, in the order :meth:`_Plan.add` reads it."""


class _Attempts:
    """Attempt numbers from labels, one rule for the whole file.

    All labels integers: ``attempt = label - first + 1`` (0-based trials become 1..n, 1-based
    epochs stay as they are, gaps are kept, a first attempt every task lacks too: see
    :func:`first_label`). Any text label: every label is text, numbered per task in the order
    the file first gives it.
    """

    def __init__(self, source: ResultSource, plan: _Plan) -> None:
        self.source = source
        self.offset = None if plan.text_labels else 1 - (plan.first or 0)
        self.numbers: dict[str, dict[str, int]] = {}
        self.seen: dict[str, dict[tuple[str, int], int]] = {}
        if self.offset is None:
            self.rule = "text labels: numbered 1, 2, ... per task in the order first given"
        elif self.offset == 0:
            self.rule = f"integers {plan.lowest}..{plan.highest}: attempt = label"
        else:
            sign = "+" if self.offset > 0 else "-"
            self.rule = (
                f"integers {plan.lowest}..{plan.highest}: attempt = label {sign} {abs(self.offset)}"
            )

    def number(self, line: int, task_id: str, label: int | str, retry: int) -> int:
        if self.offset is not None:
            return int(label) + self.offset
        text = str(label)
        numbers = self.numbers.setdefault(task_id, {})
        attempt = numbers.setdefault(text, len(numbers) + 1)
        seen = self.seen.setdefault(task_id, {})
        if (text, retry) in seen:
            raise _duplicate(self.source, line, task_id, label, retry, seen[text, retry])
        seen[text, retry] = line
        return attempt


def _duplicate(
    source: ResultSource, line: int, task_id: str, label: int | str, retry: int, first: int
) -> SpecError:
    again = f" retry {retry}" if retry else ""
    return SpecError(
        source.place(line),
        "attempt",
        f"task {task_id!r} attempt {label}{again} appears twice (also {_at(source, first)})",
    )


def _at(source: ResultSource, line: int) -> str:
    """Where another row was read, after the place of the one named: ``on line 2`` in a row
    file, else its own place (``at run.eval!samples/3_epoch_1.json``: an archive has no
    lines, a τ² simulation may sit in a file of its own, and ``tau.json:2`` is the second
    result of a list, not its second line)."""
    place = source.place(line)
    return f"on line {line}" if source.format in ("csv", "jsonl") else f"at {place}"


def store_import(source: ResultSource, name: str, store: RunStore) -> ImportReport:
    """Check every row of *source*, then store them all as one batch named *name*.

    Pass 1 reads the file once, checking each row and keeping what pass 2 needs of it in a
    temporary spool (so the file is parsed once); pass 2 streams the spool into the store.
    """
    started = time.perf_counter()
    plan = _Plan()
    with tempfile.TemporaryFile() as spool:
        chunk: list[_Kept] = []
        for row in source.rows():
            plan.add(source, row)
            chunk.append(_kept(row))
            if len(chunk) == _SPOOL_CHUNK:
                _spool(spool, chunk)
        _spool(spool, chunk)
        if not plan.rows:
            raise SpecError(source.path, None, "no result rows")
        for task_id, count in _rerun_only(_unspool(spool), plan.reruns).items():
            plan.tasks[task_id].attempts += count
        plan.first = first_label(source.format, plan)
        # What the file says of itself is read before anything is stored: a file it refuses
        # stores nothing, as with a bad row
        warnings = source.warnings()
        attempts = _Attempts(source, plan)
        known = _stored_batches(store)
        batch = _batch(source, name, plan, {b.batch_id for b in known})
        now = functools.cache(functools.partial(_task_digests, spool, source, plan))
        reread = []
        for old in _same_imports(known, batch):
            changed = _read_otherwise(old, batch) or _records_otherwise(store, old, now())
            if not changed:
                report = _report(source, plan, old, attempts, plan.rows, 0.0, warnings)
                return report.model_copy(update={"already_stored": True})
            reread.append(_reread(old, changed))
        warnings += reread
        warnings += [_superseded(old) for old in _legacy_imports(known, batch)]
        columns = OutcomeColumns()
        reruns = _Reruns(source, plan.reruns) if plan.reruns else None
        runs = _records(_unspool(spool), batch, attempts, columns, reruns, graded=plan.graded)
        try:
            stored = store.add_batch_with_runs(
                batch, runs, seal=import_seal(batch.batch_id, columns)
            )
        except StoreError as exc:
            if "UNIQUE constraint" in str(exc.__cause__):
                raise _first_duplicate(source, _unspool(spool), attempts) from None
            raise
    seconds = time.perf_counter() - started
    return _report(source, plan, batch, attempts, stored, seconds, warnings)


_SPOOL_CHUNK = 4096
"""Rows per ``marshal`` record in the spool (one call per row costs more than the row)."""
_Kept = tuple[
    int, str, int | str, int, str, bool, float | None, float | None, float | None,
    dict[str, Any] | None, float | None, Tokens | None, int,
]  # fmt: skip
"""What pass 2 needs of a row: line, task id, label, retry, terminal reason, success,
partial score, cost, latency, origin, reward, tokens, judge errors (a plain tuple:
``marshal`` writes it fast)."""


def _rerun_only(kept: Iterator[_Kept], reruns: set[tuple[str, int | str]]) -> Counter[str]:
    """Per task, the attempts whose every try in the file is a rerun (``retry`` > 0: an export
    keeps only the counted try), which the count of first tries leaves out (a task with one
    attempt rerun twice counted 0 attempts). The spool is read again only when a file has
    reruns, holding only those."""
    if not reruns:
        return Counter()
    first = {(row[1], row[2]) for row in kept if row[3] == 0 and (row[1], row[2]) in reruns}
    return Counter(task_id for task_id, _ in reruns - first)


def _kept(row: ImportedRow) -> _Kept:
    origin = None if row.origin is None else recordable(row.origin)
    return (  # the task id as plain text: marshal takes no IntegerKey, and the store stores text
        row.line, str(row.task_id), row.label, row.retry, row.terminal_reason, row.success,
        row.partial_score, row.cost, row.latency, origin, row.reward, row.tokens,
        row.judge_errors,
    )  # fmt: skip


def _spool(spool: IO[bytes], chunk: list[_Kept]) -> None:
    data = marshal.dumps(chunk)
    spool.write(len(data).to_bytes(8, "little"))
    spool.write(data)
    chunk.clear()


def _unspool(spool: IO[bytes]) -> Iterator[_Kept]:
    """The spooled rows in order (``marshal.load`` on a file reads in small pieces: slow)."""
    spool.seek(0)
    while size := int.from_bytes(spool.read(8), "little"):
        yield from marshal.loads(spool.read(size))


def _batch(source: ResultSource, name: str, plan: _Plan, taken: set[str]) -> BatchInfo:
    digest = _content_hash(source)
    tasks = plan.tasks
    batch_id = secrets.token_hex(6)
    while batch_id in taken:  # 48 random bits: rare, but the store would refuse the batch
        batch_id = secrets.token_hex(6)
    return BatchInfo(
        batch_id=batch_id,
        created_at=datetime.now(UTC),
        suite=name,
        suite_path=str(source.path),
        suite_hash=digest,
        system_spec_hash=f"imported:{digest[:16]}",
        system_spec=recordable(  # a model name may hold a lone surrogate, as any JSON text
            {
                "name": name,
                "imported_from": str(source.path),
                "format": source.format,
                **source.system(),
                UNKNOWN_USAGE_KEY: UNKNOWN_USAGE_MARK,
            }
        ),
        attempts=_most_attempts(plan),
        seed=0,
        task_revisions={t: p.revision or 0 for t, p in tasks.items()},
        task_weights={t: p.weight or 1.0 for t, p in tasks.items()},
        task_slices={t: list(p.slices or ()) for t, p in tasks.items()},
        task_horizons={t: p.horizon for t, p in tasks.items() if p.horizon is not None},
        invalid_tasks=sorted(t for t, p in tasks.items() if p.invalid),
        source="imported",
    )


def _stored_batches(store: RunStore) -> list[BatchInfo]:
    """The store's batches, or none when one record is unreadable: an import does not need
    them (``verify`` names the corrupt one), only the check for a repeated import does."""
    try:
        return store.batches()
    except StoreError:
        return []


def _same_imports(known: list[BatchInfo], batch: BatchInfo) -> list[BatchInfo]:
    """The earlier imports of the same file content under the same name and options."""
    return [
        earlier
        for earlier in known
        if earlier.source == "imported"
        and earlier.suite_hash == batch.suite_hash
        and earlier.system_spec == batch.system_spec
    ]


def _read_otherwise(earlier: BatchInfo, batch: BatchInfo) -> list[str]:
    """How an earlier import of the same file, name and options read it otherwise than this
    one (an importer since changed: τ-bench trials 1 and 2 were attempts 1 and 2 of a run of
    2 before the fiftieth round, attempts 2 and 3 of 3 since), as the batch records it: the
    run's attempts and each task's revision, weight, slices and horizon. Returning it as
    this import would give an import's report the rule of one reading and the records of
    another. The attempts' own records are compared next (:func:`_records_otherwise`); not
    compared: the invalid tasks (a resume adds to them)."""
    changed = []
    if earlier.attempts != batch.attempts:
        changed.append(f"{earlier.attempts} attempts a task then, {batch.attempts} now")
    if set(earlier.task_revisions) != set(batch.task_revisions):
        tasks = counted(len(earlier.task_revisions), "task")
        changed.append(f"{tasks} then, {len(batch.task_revisions)} now")
    else:
        for name in ("task_revisions", "task_weights", "task_slices", "task_horizons"):
            if getattr(earlier, name) != getattr(batch, name):
                changed.append(f"its {name} differ")
    return changed


def _records_otherwise(store: RunStore, earlier: BatchInfo, now: dict[str, int]) -> list[str]:
    """How the records an earlier import of the same file stored differ from the ones this
    import would store, compared task by task (:func:`_task_digests`): an earlier importer
    that ended one attempt otherwise (``max_steps`` read as another end), with the same
    counts, would otherwise have its batch returned as today's reading. Records the store
    cannot read are read otherwise too (``verify`` names why)."""
    stored = _stored_digests(store, earlier.batch_id)
    if stored is None:
        return ["its records cannot be read"]
    differ = sorted(
        task for task in now.keys() | stored.keys() if now.get(task) != stored.get(task)
    )
    if not differ:
        return []
    shown = ", ".join(repr(task) for task in differ[:3])
    more = f" and {len(differ) - 3} more" if len(differ) > 3 else ""
    return [
        f"the records of {counted(len(differ), 'task')} differ ({shown}{more}): an attempt's "
        "end, success, score, cost, latency or tokens"
    ]


def _task_digests(spool: IO[bytes], source: ResultSource, plan: _Plan) -> dict[str, int]:
    """Each task's records as this import reads them, as a digest (:func:`_try_digest`): the
    same whatever order the file gives its rows in. Memory grows with tasks, not rows."""
    attempts = _Attempts(source, plan)  # its own: text labels are numbered as first met
    digests: dict[str, int] = {}
    for row in _unspool(spool):
        line, task_id, label, retry, reason, success, partial, cost, latency = row[:9]
        _, reward, tokens, judged = row[9:]
        if plan.graded and partial is None:
            partial = _credit(reward, success, reason)
        given, made = (None, None) if tokens is None else tokens
        attempt = attempts.number(line, task_id, label, retry)
        fields = (attempt, retry, reason, success, cost, latency, partial, judged, given, made)
        digests[task_id] = (digests.get(task_id, 0) + _try_digest(fields)) % _DIGEST_MODULUS
    return digests


def _stored_digests(store: RunStore, batch_id: str) -> dict[str, int] | None:
    """:func:`_task_digests` of a stored batch, from its records; None if one is unreadable."""
    digests: dict[str, int] = {}
    try:
        for rows in store.outcome_chunks(batch_id, also=_USAGE_FIELDS):
            for task_id, attempt, retry, reason, success, *measured, given, made, judged in rows:
                fields = (attempt, retry, reason, success, *measured, judged, given, made)
                digest = digests.get(task_id, 0) + _try_digest(tuple(fields))
                digests[task_id] = digest % _DIGEST_MODULUS
    except (StoreError, TypeError, ValueError):
        return None
    return digests


_USAGE_FIELDS = ("usage.input_tokens", "usage.output_tokens")
_DIGEST_MODULUS = 1 << 128
"""Try digests are summed modulo this: a task's digest does not depend on the rows' order."""


def _try_digest(fields: tuple[Any, ...]) -> int:
    """One try's digest: attempt, retry, terminal reason, success, cost, latency, partial
    score, judge errors and tokens, as the store keeps them (numbers as floats or integers,
    so a cost of 5 and of 5.0 are one). A field not of its JSON type (a record edited by
    hand: ``"success": "false"``, ``"cost": "5"``) is ``TypeError``, never read as another."""
    attempt, retry, reason, success, cost, latency, partial, judged, given, made = fields
    if not isinstance(success, bool) or not isinstance(reason, str):
        raise TypeError(f"success {success!r}, terminal reason {reason!r}")
    plain = (
        _whole(attempt), _whole(retry), reason, success, _real(cost), _real(latency),
        _real(partial), _whole(judged), _whole(given), _whole(made),
    )  # fmt: skip
    text = repr(plain).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(text, digest_size=16).digest(), "little")


def _real(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"not a number: {value!r}")
    return float(value)


def _whole(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"not an integer: {value!r}")
    return value


def _reread(earlier: BatchInfo, changed: list[str]) -> str:
    return (
        f"batch {earlier.batch_id} imported this file under this name and options before, "
        f"read otherwise by an earlier version of this importer ({'; '.join(changed)}): this "
        "import stores it as read now; use the new batch (the earlier one stays as stored, "
        "and is no longer returned for this file)"
    )


def _legacy_imports(known: list[BatchInfo], batch: BatchInfo) -> list[BatchInfo]:
    """Earlier imports of the same file, name and options made before token counts a file
    leaves out were stored as not known (:attr:`BatchInfo.legacy_usage`): an import again does not
    return them (as it returns one of :func:`_same_imports`) but stores the file anew, saying so."""
    current = {k: v for k, v in batch.system_spec.items() if k != UNKNOWN_USAGE_KEY}
    return [
        earlier
        for earlier in known
        if earlier.legacy_usage
        and earlier.suite_hash == batch.suite_hash
        and earlier.system_spec == current
    ]


def _superseded(earlier: BatchInfo) -> str:
    return (
        f"batch {earlier.batch_id} imported this file under this name before token counts a "
        "file leaves out were stored as not known (its 0 tokens may be not known): this "
        "import stores them as not known; use the new batch"
    )


def _most_attempts(plan: _Plan) -> int:
    """The largest attempt number: from the integer labels' range (from the run's first
    label), or for text labels the most first tries any task has."""
    if plan.text_labels or plan.first is None or plan.highest is None:
        return max(task.attempts for task in plan.tasks.values())
    return plan.highest - plan.first + 1


FIRST_LABELS = {"tau-bench": 0, "tau2-bench": 0, "inspect": 1, "terminal-bench": 1}
"""The label a format gives a run's first attempt: τ-bench and τ² number trials from 0,
Inspect epochs and ``tb run``'s attempts (``hello.1-of-3``) from 1."""


def first_label(format_name: str, plan: _Plan) -> int | None:
    """The label of a run's first attempt, from which attempts are numbered: the format's
    own (:data:`FIRST_LABELS`), else the lowest label given (a row file's labels are its
    writer's, from 0, from 1 or from a run number: none is known to be lost).

    Numbered from the lowest label given, τ-bench trials 1 and 2 of every task (trial 0
    lost) were attempts 1 and 2 of a run of 2 without a word, where trials 0 and 2 (trial 1
    lost) were attempts 1 and 3 of a run of 3, with a warning: the same loss, told one way."""
    if plan.text_labels or plan.lowest is None:
        return None
    return min(FIRST_LABELS.get(format_name, plan.lowest), plan.lowest)


def _content_hash(source: ResultSource) -> str:
    """What the batch was read from: the file's hash, or a source's own ``digest()`` when it
    reads a folder of files (a Harbor job)."""
    digest = getattr(source, "digest", None)
    return str(digest()) if callable(digest) else _file_hash(source.path)


def _file_hash(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _records(
    kept: Iterator[_Kept],
    batch: BatchInfo,
    attempts: _Attempts,
    columns: OutcomeColumns,
    reruns: _Reruns | None = None,
    *,
    graded: bool = False,
) -> Iterator[StoredRun]:
    """Each row's run record, its outcome fields gathered into *columns* on the way (the
    values the record text is made of: the batch's seal keeps them). *reruns* are checked
    at the end, inside the store's transaction. *graded*: every reward is kept as a partial
    score (in [0, 1]), not only the partial ones."""
    text = _RecordText(_template(batch))
    revisions = batch.task_revisions
    outcomes: list[tuple[Any, ...]] = []
    for (
        line,
        task_id,
        label,
        retry,
        reason,
        success,
        partial,
        cost,
        latency,
        origin,
        reward,
        tokens,
        judged,
    ) in kept:
        if graded and partial is None:
            partial = _credit(reward, success, reason)
        attempt = attempts.number(line, task_id, label, retry)
        if reruns is not None and (task_id, label) in reruns.attempts:
            reruns.note(task_id, attempt, retry, reason, line)
        outcomes.append((task_id, attempt, retry, reason, success, cost, latency, partial, judged))
        if len(outcomes) == _COLUMN_CHUNK:
            columns.add(outcomes)
            outcomes = []
        run_id = secrets.token_hex(16)
        if origin is None:
            status = f'{{"attempt_label":{_scalar(label)},"imported":true}}'
        else:
            status = _ENCODER.encode({"attempt_label": label, "imported": True, "origin": origin})
        values = (  # encoded, in _VARYING's order
            str(attempt),
            _amount(cost),
            status,
            _amount(latency),
            _judge_errors(judged),
            "null" if partial is None else repr(partial),
            str(retry),
            f'"{run_id}"',  # hex: nothing to escape
            "true" if success else "false",
            encode_basestring_ascii(task_id),
            str(revisions[task_id]),
            encode_basestring_ascii(reason),
            _usage(tokens),
        )
        yield StoredRun(run_id, task_id, attempt, retry, reason, success, text.render(values))
    columns.add(outcomes)
    if reruns is not None:
        reruns.check()


def _credit(reward: float | None, success: bool, reason: str) -> float | None:
    """An attempt's partial score in a file with partial rewards: its reward; a valid failure
    the file gave no reward (an Inspect error or limit, a τ² end without a grade) earned none,
    0; it is in the success rate's denominator, and left out of the partial score's it let a
    crash raise that score (a task that only crashed dropped out of it). Invalid attempts
    carry none."""
    if reward is not None:
        return min(1.0, max(0.0, reward))
    if success or reason.split("/")[0] in INVALID_REASONS:
        return None
    return 0.0


class _Reruns:
    """Only an invalid try may be rerun (the predeclared policy): the last try of an attempt
    is the one that counts, so a rerun of a valid try could replace a failure by a success.
    Earlier tries may be missing (an export keeps only the counted one). Only the attempts
    with a rerun are held."""

    def __init__(self, source: ResultSource, attempts: set[tuple[str, int | str]]) -> None:
        self.source = source
        self.attempts = attempts
        self.tries: dict[tuple[str, int], list[tuple[int, str, int]]] = {}

    def note(self, task_id: str, attempt: int, retry: int, reason: str, line: int) -> None:
        self.tries.setdefault((task_id, attempt), []).append((retry, reason, line))

    def check(self) -> None:
        for (task_id, attempt), tries in self.tries.items():
            tries.sort()
            for (retry, reason, line), (later, _, later_line) in itertools.pairwise(tries):
                if reason.split("/")[0] not in INVALID_REASONS:
                    raise SpecError(
                        self.source.place(later_line),
                        "retry",
                        f"task {task_id!r} attempt {attempt}: retry {later} reruns a valid try "
                        f"(retry {retry} {_at(self.source, line)} ended {reason}); only "
                        "environment and grader failures are rerun, else a failure could be "
                        "replaced by a success",
                    )


_COLUMN_CHUNK = 50_000
"""Rows gathered as Python tuples before they become column arrays."""


_VARYING = (
    "attempt", "cost", "infrastructure_status", "latency", "outcome_assertion_results",
    "partial_score", "retry", "run_id", "success", "task_id", "task_revision", "terminal_reason",
    "usage",
)  # fmt: skip
"""The fields of an imported record that vary by row, in sorted order: the order in which
the canonical text holds them."""
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
"""Encodes as :func:`groundstate.store.record_json` does."""


class _RecordText:
    """A record's canonical text, row after row, without encoding the whole record each time.

    The template is encoded once with a marker in each varying field; the text between the
    markers is constant, so a row only fills in its own encoded values. The result is exactly
    ``record_json(record)`` (tested; the store's ``verify`` recomputes it and would name any
    difference).
    """

    _MARK = re.compile(r'"\\u0000(\d+)\\u0000"')

    def __init__(self, template: dict[str, Any]) -> None:
        marked = {**template, **{name: f"\0{i}\0" for i, name in enumerate(_VARYING)}}
        text = record_json(marked)
        order = [int(found.group(1)) for found in self._MARK.finditer(text)]
        if order != list(range(len(_VARYING))):
            raise AssertionError(f"record fields out of order: {order}")
        self._format = "%s".join(piece.replace("%", "%%") for piece in self._MARK.split(text)[::2])

    def render(self, values: tuple[str, ...]) -> str:
        return self._format % values


def _usage(tokens: Tokens | None) -> str:
    """``AgentRun.usage`` as the store encodes it: a count the file leaves out is ``null``
    (not known), never 0."""
    given, made = (None, None) if tokens is None else tokens
    return f'{{"input_tokens":{_count(given)},"output_tokens":{_count(made)}}}'


def _count(value: int | None) -> str:
    return "null" if value is None else str(int(value))


@functools.cache
def _column(name: str) -> str:
    """A column's name as a warning names it: quoted when it has spaces (3,000 characters of
    words are then shortened), but for a header cell left empty, named by its place."""
    return name if name.startswith("(unnamed column ") else named_value(name)


def _judge_errors(count: int) -> str:
    """``outcome_assertion_results`` of an imported run whose file counts *count* judge
    errors (an export of a batch run here): that many judged results whose judge could not
    judge, so the store's outcome columns (:data:`groundstate.store.JUDGE_ERRORS_SQL`) and
    every report count them as the batch exported did. The verdicts themselves are not in
    the row format."""
    results = [
        CheckResult(id=f"judge_error_{i}", kind=JUDGED, passed=False, error=_UNKNOWN_JUDGE)
        for i in range(1, count + 1)
    ]
    return record_json([r.model_dump(mode="json") for r in results])


_UNKNOWN_JUDGE = "the judge could not judge (imported: its error is not in the file)"


def _amount(value: float | None) -> str:
    """A cost or latency as JSON: ``null`` when the file gives none (not known, never 0)."""
    return "null" if value is None else repr(value)


def _scalar(value: int | str) -> str:
    """An attempt label as JSON: an integer, or text (ASCII-escaped, as the store writes)."""
    return encode_basestring_ascii(value) if isinstance(value, str) else str(value)


def _template(batch: BatchInfo) -> dict[str, Any]:
    """An imported ``AgentRun`` as JSON, built once through the model so every field and
    default is the model's own; each row then replaces only what it says."""
    run = AgentRun(
        run_id="",
        batch_id=batch.batch_id,
        task_id="",
        task_revision=0,
        grader_revision="imported",
        system_spec_hash=batch.system_spec_hash,
        attempt=1,
        seed=0,
        started_at=batch.created_at,
        initial_state_hash=None,
        observation_action_log=[],
        final_state_hash=None,
        terminal_reason="success",
        success=True,
        outcome_assertion_results=[],
        constraint_results=[],
        partial_score=None,
        cost=0.0,
        latency=0.0,
        infrastructure_status={},
        artifact_locations={},
    )
    return run.model_dump(mode="json")


def _first_duplicate(source: ResultSource, kept: Iterator[_Kept], attempts: _Attempts) -> SpecError:
    """The store refused a repeated (task, attempt, retry): find its lines (error path only,
    so holding every key here is fine)."""
    seen: dict[tuple[str, int, int], int] = {}
    for line, task_id, label, retry, *_ in kept:
        key = (task_id, attempts.number(line, task_id, label, retry), retry)
        if key in seen:
            return _duplicate(source, line, task_id, label, retry, seen[key])
        seen[key] = line
    return SpecError(source.path, "attempt", "an attempt appears twice")


def _skipped_labels(source: ResultSource, plan: _Plan, most: int) -> str | None:
    """Integer labels spanning more attempts than any task has: every task lacks one (τ-bench
    trials 0 and 2 of each task, trial 1 of none; trials 1 and 2, trial 0 of none), an
    attempt missing that the warning on tasks with fewer attempts than others does not see
    (each has as many)."""
    if plan.text_labels or plan.first is None or plan.lowest is None or plan.highest is None:
        return None
    span = plan.highest - plan.first + 1
    if most >= span:
        return None
    lost, first = "a lost trial or epoch", ""
    if plan.lowest > plan.first:
        lost += f"; none is labelled {_below(plan)}"
        first = f", from {plan.first} as {source.format} numbers a run's attempts"
    return (
        f"{source.path}: attempt labels run from {plan.lowest} to {plan.highest}{first} "
        f"({span} attempts), but no task has more than {most}: every task lacks an attempt of "
        f"that range ({lost}), which is in no denominator"
    )


def _below(plan: _Plan) -> str:
    """The labels below the lowest given, from the run's first: ``0`` or ``1 to 3``."""
    assert plan.first is not None and plan.lowest is not None
    last = plan.lowest - 1
    return str(last) if last == plan.first else f"{plan.first} to {last}"


def _report(
    source: ResultSource,
    plan: _Plan,
    batch: BatchInfo,
    attempts: _Attempts,
    stored: int,
    seconds: float,
    warnings: list[str],
) -> ImportReport:
    warnings = list(warnings)
    counts = [task.attempts for task in plan.tasks.values()]
    if min(counts) < max(counts):  # an interrupted run, a lost file: said, not silent
        fewer = sum(count < max(counts) for count in counts)
        warnings.append(
            f"{source.path}: tasks have {min(counts)} to {max(counts)} attempts ({fewer} of "
            f"{len(counts)} fewer than {max(counts)}): a missing attempt is in no denominator, "
            "and pass@k and pass^k stop at the fewest valid attempts a task has"
        )
    if (skipped := _skipped_labels(source, plan, max(counts))) is not None:
        warnings.append(skipped)
    if (lookalikes := _lookalikes(source, plan)) is not None:
        warnings.append(lookalikes)
    if plan.ignored:
        names = ", ".join(_column(n) + did_you_mean(n, COLUMNS) for n in sorted(plan.ignored))
        warnings.append(f"{source.path}: ignored columns no field reads: {names}")
    for what, count in sorted(plan.unmapped.items()):
        warnings.append(f"{source.path}: {counted(count, 'attempt')}: {what}")
    return ImportReport(
        batch=batch,
        format=source.format,
        runs=stored,
        attempts=sum(counts),
        tasks=len(plan.tasks),
        attempt_labels=attempts.rule,
        mapped=dict(sorted(plan.mapped.items())),
        unmapped=dict(sorted(plan.unmapped.items())),
        ignored_columns=sorted(plan.ignored),
        warnings=warnings,
        seconds=round(seconds, 3),
    )
