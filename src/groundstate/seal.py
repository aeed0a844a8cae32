"""The verification seal: what lets ``report`` and ``compare`` skip re-hashing a large batch.

A full check (:meth:`RunStore.verify`: every record hash, chain link and artifact) of a batch
of a million attempts takes seconds, and reading its outcome fields out of the JSON records
takes more. So when a full check finds *nothing* wrong (no problem, not even an unverifiable
old row), the reading commands store a **seal** for the batch, in the same read snapshot:

- the batch's chain length and head (its ``chains`` row) and its number of run rows;
- the batch record's hash;
- the high-water mark of the ``edits`` log (triggers log every UPDATE and DELETE of a run or
  batch row: nothing in groundstate does either), and the highest rowid among the batch's
  runs (an INSERT OR REPLACE deletes without firing a trigger, but its new row gets a higher
  rowid);
- SQLite's schema cookie (dropping or changing a trigger, or any schema edit, changes it);
- the number of the batch's sessions (its start and each resume: what every report says of
  how it ran) and of the tasks its resumes named invalid (they leave every figure), and the
  highest rowid of each (a row added or replaced by hand shows);
- the batch's outcome columns (task, attempt, retry, terminal reason, success, cost, latency,
  partial score and judge errors of every try, about 49 bytes a try) and their sha256.

The next ``report`` or ``compare`` re-reads those facts (a few indexed lookups, one record
hashed) and the columns' hash; if all match, the statistics are computed from the sealed
columns, the output says ``"check": "seal"`` with the time of the full check, and nothing is
re-hashed. If anything differs (new runs, a hand edit, a schema change, a damaged seal), the
seal is ignored, never reported as tampering: the command runs the full check, names what it
finds, and seals again only if it finds nothing. A seal damaged in itself (record unreadable or
another batch's, columns not matching their hash) is named by a ``seal_damaged`` problem, which
is not an alteration (exit 0): the user learns the cache broke, the figures are the full check's.

What a holding seal shows: since the full check, no run or batch row of the store was
updated, deleted or replaced through SQLite (the ``sqlite3`` shell, Python, any client: the
triggers are in the file), no row was added to the batch, its chain head is the one checked,
the schema (triggers included) is unchanged, and the numbers are those of the records as they
were verified. What it does not show: bytes changed in the file outside SQLite (a disk fault,
an editor working on the file), artifact files deleted or edited since (the full check reads
them back), an INSERT OR REPLACE that names the replaced row's own rowid, and a deliberate
forger who also rewrites the ``edits`` log, the schema cookie (``PRAGMA schema_version``) or
the seal itself; there is no secret key here, as for the hashes (docs/reliability.md).
``groundstate verify`` never uses the seal, nor writes it: it always checks in full.

An import seals its batch itself (:func:`import_seal`), in the transaction that stores the
runs: it computed every record's text, hash and chain link from the values it gathers into
the outcome columns, so the first ``report`` after ``import-results`` needs no full check.
Such a seal says ``"sealed_by": "import"``: the records were written, hashed and sealed
together, not read back; from then on it pins and re-checks exactly what a full check's seal
does, and anything that breaks it means a full check.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ValidationError

from groundstate.analysis import OutcomeColumns, OutcomeTable
from groundstate.errors import StoreError
from groundstate.store import Problem, RunStore, SealMaker, SealState, Verification

SEAL_FORMAT = 4
"""Bumped when what a seal pins changes: seals of another format are ignored (a full check).
2: the outcome columns count each try's judge errors. 3: the batch's sessions and the tasks
its resumes named invalid (their count and highest rowid) are pinned. 4: a full check names
tries outside the batch's plan (an earlier one sealed a batch holding them)."""


class Seal(BaseModel):
    """A batch verified in full, and what to re-check cheaply instead (stored in ``seals``)."""

    format: int = SEAL_FORMAT
    batch_id: str
    sealed_at: datetime
    """When the full check that found nothing wrong ran."""
    state: SealState
    """The batch's cheap facts at that check."""
    records: int
    """Run rows the full check read (or the import stored)."""
    outcomes_sha256: str
    """sha256 of the sealed outcome columns (:meth:`OutcomeTable.to_bytes`)."""
    by: Literal["full_check", "import"] = "full_check"
    """``full_check``: a full check of the stored records found nothing wrong. ``import``:
    the import wrote the seal with the records, in one transaction, from the values it
    hashed and chained into them (no full check has read the records back yet)."""


def holding_seal(store: RunStore, batch_id: str) -> tuple[Seal, OutcomeTable] | None:
    """The batch's seal and sealed outcome columns, if it still holds; otherwise None."""
    held = _read_seal(store, batch_id)
    return held if isinstance(held, tuple) else None


def _read_seal(store: RunStore, batch_id: str) -> tuple[Seal, OutcomeTable] | str | None:
    """The batch's holding seal and sealed columns; or why the seal itself is damaged (its
    record unreadable, another batch's, its columns not those it hashed): a cache that no
    longer matches itself, named so; or None (no seal, one of another format, or one the
    batch no longer matches: new runs or an edit, which the full check names)."""
    stored = store.read_seal(batch_id)
    if stored is None:
        return None
    record, outcomes = stored
    try:
        seal = Seal.model_validate_json(record)
    except ValidationError as exc:
        return f"its record does not parse ({exc.errors()[0]['msg']})"
    if seal.format != SEAL_FORMAT:
        return None
    if seal.batch_id != batch_id:
        return f"it names batch {seal.batch_id!r}"
    if store.seal_state(batch_id) != seal.state:
        return None
    if hashlib.sha256(outcomes).hexdigest() != seal.outcomes_sha256:
        return "its outcome columns do not match their hash"
    try:
        return seal, OutcomeTable.from_bytes(outcomes)
    except ValueError as exc:
        return f"its outcome columns do not read ({exc})"


def verified_outcomes(
    store: RunStore, batch_id: str, *, use_seal: bool = True
) -> tuple[Verification, OutcomeTable]:
    """The integrity check of a batch and its outcome columns: from a holding seal, or from a
    full check and the records (then sealed if the check found nothing at all)."""
    held = _read_seal(store, batch_id) if use_seal else None
    if isinstance(held, tuple):
        seal, table = held
        check = Verification(
            batch_id=batch_id,
            records=seal.records,
            artifacts=0,
            check="seal",
            sealed_at=seal.sealed_at,
            sealed_by=seal.by,
        )
        return check, table
    check, sealed = full_check(store, batch_id)
    if isinstance(held, str):  # the figures are the full check's: right, but say so
        damaged = f"its verification seal is damaged ({held}): checked in full instead"
        check.problems.append(Problem(batch_id=batch_id, kind="seal_damaged", detail=damaged))
    if sealed is not None:
        return check, sealed
    # Something is wrong or unverifiable: the numbers still come from the records as they
    # are now, and the caller marks them with the problems; a record that cannot be read at
    # all stops the command, naming what the check found.
    try:
        return check, outcome_table(store, batch_id)
    except StoreError as exc:
        found = "; ".join(problem.line() for problem in check.altered)
        raise StoreError(f"{exc} ({found})" if found else str(exc)) from exc


def full_check(store: RunStore, batch_id: str) -> tuple[Verification, OutcomeTable | None]:
    """:meth:`RunStore.verify` in full, sealing the batch if it found nothing at all: the
    facts, the check and the outcome columns are read in one snapshot, so a row edited while
    the check runs is never sealed as verified. The columns are None if not sealed."""
    with store.snapshot():
        state = store.seal_state(batch_id)
        check = store.verify(batch_id)
        table = None if check.problems else outcome_table(store, batch_id)
    if table is not None:
        write_seal(store, check, state, table)
    return check, table


def outcome_table(store: RunStore, batch_id: str) -> OutcomeTable:
    """The batch's outcome columns, read from its records. A record whose outcome fields are
    not of their types (edited by hand, with or without its hashes made again) stops the
    reading command with one line naming it, never a traceback."""
    try:
        return OutcomeTable.from_chunks(store.outcome_chunks(batch_id))
    except (TypeError, ValueError, OverflowError) as exc:
        run_id = store.mistyped_outcome(batch_id)
        where = f"run {run_id} of batch {batch_id}" if run_id else f"a run of batch {batch_id}"
        raise StoreError(
            f"{where} is unreadable (its outcome fields are not of their types: {exc}); "
            f"`groundstate verify {batch_id}` checks the whole batch"
        ) from exc


def write_seal(store: RunStore, check: Verification, state: SealState, table: OutcomeTable) -> None:
    store.write_seal(check.batch_id, *sealed(check.batch_id, state, check.records, table))


def sealed(
    batch_id: str,
    state: SealState,
    records: int,
    table: OutcomeTable,
    by: Literal["full_check", "import"] = "full_check",
) -> tuple[str, bytes]:
    """A seal's record (JSON) and outcome columns, as :meth:`RunStore.write_seal` keeps them."""
    outcomes = table.to_bytes()
    seal = Seal(
        batch_id=batch_id,
        sealed_at=datetime.now(UTC),
        state=state,
        records=records,
        outcomes_sha256=hashlib.sha256(outcomes).hexdigest(),
        by=by,
    )
    return seal.model_dump_json(), outcomes


def import_seal(batch_id: str, columns: OutcomeColumns) -> SealMaker:
    """The seal an import writes with its runs (:meth:`RunStore.add_batch_with_runs`): the
    outcome columns it gathered from the rows it stored, in the store's order. None (no
    seal; the first report checks in full) unless the batch holds exactly the rows stored,
    chained."""

    def make(state: SealState, stored: int) -> tuple[str, bytes] | None:
        table = columns.table().in_store_order()
        if not stored or state.runs != stored or state.length != stored or len(table) != stored:
            return None
        return sealed(batch_id, state, stored, table, by="import")

    return make
