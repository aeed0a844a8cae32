"""From stored runs to statistics: which records count, and as what.

The JSON of ``report --json`` and ``compare --json`` is built here; its schema is
documented in docs/statistics.md.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from groundstate.batchplan import Placed, in_order, placed
from groundstate.errors import StoreError
from groundstate.records import INVALID_REASONS, AgentRun
from groundstate.report.numbers import (
    denominators_text,
    flagged_text,
    incomplete_text,
    judge_error_text,
    session_text,
    validation_text,
)
from groundstate.stats import (
    DEFAULT_FDR,
    VIEWS,
    AttemptColumns,
    Comparison,
    Difference,
    Estimate,
    Outcome,
    Summary,
    TaskCounts,
    TaskInfo,
    View,
    ViewSummary,
    compare_counts,
    count_columns,
    distribution,
    summary_of,
)
from groundstate.store import BatchInfo

DEFAULT_MAX_INVALID_RATE = 0.1
"""Used for batches stored without a declared policy (e.g. imported results)."""


def final_runs(runs: list[AgentRun]) -> list[AgentRun]:
    """The last try of each (task, attempt): invalid tries that were rerun do not count twice."""
    latest: dict[tuple[str, int], AgentRun] = {}
    for run in sorted(runs, key=lambda r: r.retry):
        latest[(run.task_id, run.attempt)] = run
    return sorted(latest.values(), key=lambda r: (r.task_id, r.attempt))


def outcomes(batch: BatchInfo, runs: list[AgentRun]) -> list[Outcome]:
    """One statistical outcome per attempt slot of the batch.

    A task revision of 0 (how an import without revisions stores its tasks) becomes ""
    (unversioned), so pairing it with a versioned batch is caught by the comparison. Tasks
    that failed validation and ran anyway are left out, as from every figure
    (:func:`headline_tries`), and tries outside the batch's plan (:func:`planned`).
    """
    return [
        Outcome(
            task_id=run.task_id,
            attempt=run.attempt,
            success=run.success,
            valid=run.valid,
            terminal_reason=run.terminal_reason,
            weight=batch.task_weights.get(run.task_id, 1.0),
            slice_labels=tuple(batch.task_slices.get(run.task_id, ())),
            horizon=batch.task_horizons.get(run.task_id),
            cost=run.cost,
            latency=run.latency,
            task_revision=str(batch.task_revisions.get(run.task_id) or ""),
            partial_score=run.partial_score,
        )
        for run in counted_runs(batch, runs)
    ]


def counted_runs(batch: BatchInfo, runs: Sequence[AgentRun]) -> list[AgentRun]:
    """The try each figure counts of each attempt of *batch*, by task and attempt: the last
    try of each attempt of its plan (:func:`planned`), the tasks that failed validation and
    ran anyway left out (:func:`headline_tries`). Every reader of stored runs that counts or
    draws attempts (sample-failures, agreement, label agreement) reads these, so its
    denominator is the headline's."""
    left_out = set(batch.invalid_tasks)
    return [run for run in final_runs(planned_runs(batch, runs)) if run.task_id not in left_out]


def not_counted(batch: BatchInfo, runs: Sequence[AgentRun]) -> dict[str, str]:
    """Why each try of *runs* that :func:`counted_runs` leaves out is left out, by run id: the
    one rule's reasons, for a command that must refuse or mark such a try (``runs``,
    ``labels import``)."""
    counted = {run.run_id for run in counted_runs(batch, runs)}
    inside = {run.run_id for run in planned_runs(batch, runs)}
    return {
        run.run_id: "outside the batch's plan (`groundstate verify` names it)"
        if run.run_id not in inside
        else "its task failed validation: it is in no figure"
        if run.task_id in batch.invalid_tasks
        else "an invalid try that a rerun replaced"
        for run in runs
        if run.run_id not in counted
    }


@dataclass(frozen=True)
class OutcomeTable:
    """Every try of a batch as columns: read from the records by
    :meth:`RunStore.outcome_rows`, or taken from ``AgentRun`` objects. Task ids and terminal
    reasons are integer codes into their distinct values, so statistics over a million
    attempts never sort strings or build a Python object per attempt."""

    task_ids: tuple[str, ...]
    task: npt.NDArray[np.int64]
    attempt: npt.NDArray[np.int64]
    retry: npt.NDArray[np.int64]
    reasons: tuple[str, ...]
    reason: npt.NDArray[np.int64]
    success: npt.NDArray[np.bool_]
    cost: npt.NDArray[np.float64]
    latency: npt.NDArray[np.float64]
    partial: npt.NDArray[np.float64]
    """NaN where a run has no partial score."""
    judge_errors: npt.NDArray[np.int64]
    """Judged assertions of each try whose judge could not judge
    (:attr:`AgentRun.judge_errors`)."""

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[Any]]) -> OutcomeTable:
        """From ``(task_id, attempt, retry, terminal_reason, success, cost, latency,
        partial_score[, judge_errors])`` rows (no judge errors when the ninth is left out, as
        in an import's rows)."""
        return cls.from_chunks([rows])

    @classmethod
    def from_chunks(cls, chunks: Iterable[Sequence[Sequence[Any]]]) -> OutcomeTable:
        """From rows arriving in chunks (:meth:`RunStore.outcome_chunks`): each chunk becomes
        arrays before the next is read, so memory holds columns, not a million row lists."""
        columns = OutcomeColumns()
        for rows in chunks:
            columns.add(rows)
        return columns.table()

    def to_bytes(self) -> bytes:
        """The table as bytes (a JSON header with the distinct task ids and reasons, then each
        column's little-endian values): what a batch's seal keeps, about 49 bytes a try."""
        header = json.dumps(
            {"rows": len(self), "task_ids": self.task_ids, "reasons": self.reasons}
        ).encode()
        header += b" " * (-len(header) % 8)  # columns start 8-byte aligned: read in place
        # Joined from the arrays' own buffers: a column already in its stored type is not
        # copied before the one copy into the result (tens of MB for a million tries).
        columns = [
            np.ascontiguousarray(getattr(self, name), _PACKED[name]).data for name in _ROW_COLUMNS
        ]
        return b"".join([len(header).to_bytes(8, "little"), header, *columns])

    @classmethod
    def from_bytes(cls, data: bytes) -> OutcomeTable:
        """The table :meth:`to_bytes` wrote (``ValueError`` if *data* is not one)."""
        size = int.from_bytes(data[:8], "little")
        header = json.loads(data[8 : 8 + size])
        rows, offset = int(header["rows"]), 8 + size
        column: dict[str, npt.NDArray[Any]] = {}
        for name in _ROW_COLUMNS:
            packed = np.dtype(_PACKED[name])
            # A column stored in its own type, aligned, stays a view of *data* (read-only).
            stored = np.frombuffer(data, packed, rows, offset)
            column[name] = np.require(stored, _DTYPES[name], ["ALIGNED"])
            offset += rows * packed.itemsize
        if offset != len(data):
            raise ValueError(f"outcome table of {rows} rows is {len(data)} bytes, not {offset}")
        return cls(tuple(header["task_ids"]), reasons=tuple(header["reasons"]), **column)

    @classmethod
    def from_runs(cls, runs: Sequence[AgentRun]) -> OutcomeTable:
        rows = [
            (r.task_id, r.attempt, r.retry, r.terminal_reason, r.success, r.cost, r.latency,
             r.partial_score, r.judge_errors)
            for r in runs
        ]  # fmt: skip
        try:
            return cls.from_rows(rows)
        except ValueError as exc:  # a record edited past what its columns hold (an attempt 1e30)
            bad = next((r for r, row in zip(runs, rows, strict=True) if _unfit(row)), runs[0])
            raise StoreError(
                f"run {bad.run_id} of batch {bad.batch_id} is unreadable ({exc}); "
                f"`groundstate verify {bad.batch_id}` checks the whole batch"
            ) from None

    def __len__(self) -> int:
        return len(self.task)

    def valid(self) -> npt.NDArray[np.bool_]:
        """Same rule as ``AgentRun.valid``, decided once per distinct reason."""
        ok = np.array([r.split("/")[0] not in INVALID_REASONS for r in self.reasons], bool)
        return ok[self.reason] if len(self) else np.zeros(0, dtype=np.bool_)

    def reason_counts(self) -> dict[str, int]:
        tally = np.bincount(self.reason, minlength=len(self.reasons))
        return {r: int(n) for r, n in zip(self.reasons, tally.tolist(), strict=True) if n}

    def in_store_order(self) -> OutcomeTable:
        """The rows in (task, attempt, retry) order, as :meth:`RunStore.outcome_chunks` reads
        them (task codes follow sorted task ids, so sorting codes sorts ids)."""
        if len(self) == 0 or in_order(self.task, self.attempt, self.retry):
            return self
        return self._take(np.lexsort((self.retry, self.attempt, self.task)))

    def split(self, tasks: Iterable[str]) -> tuple[OutcomeTable, OutcomeTable]:
        """The rows of tasks other than *tasks*, and the rows of *tasks* (same codes)."""
        names = set(tasks)
        if not names & set(self.task_ids):
            return self, self._take(slice(0, 0))
        picked = np.array([t in names for t in self.task_ids], dtype=np.bool_)[self.task]
        return self._take(~picked), self._take(picked)

    def _take(self, rows: Any) -> OutcomeTable:
        """The table of the rows *rows* selects (an index array, a mask or a slice)."""
        return replace(self, **{name: getattr(self, name)[rows] for name in _ROW_COLUMNS})

    def final(self) -> OutcomeTable:
        """The last try of each (task, attempt), as :func:`final_runs` picks it."""
        if len(self) == 0:
            return self
        if in_order(self.task, self.attempt, self.retry):
            last = _last_tries(self.task, self.attempt)
            if bool(last.all()):
                return self  # no reruns, already in order: nothing to copy
            keep = np.flatnonzero(last)
        else:
            order = np.lexsort((self.retry, self.attempt, self.task))
            keep = order[_last_tries(self.task[order], self.attempt[order])]
        return self._take(keep)


class OutcomeColumns:
    """Rows of ``(task_id, attempt, retry, terminal_reason, success, cost, latency,
    partial_score[, judge_errors])`` gathered chunk by chunk into the columns of an
    :class:`OutcomeTable`: what :meth:`OutcomeTable.from_chunks` reads from the store, and
    what an import gathers from the rows it stores (for the batch's seal)."""

    def __init__(self) -> None:
        self._tasks: dict[str, int] = {}
        self._reasons: dict[str, int] = {}
        self._parts: dict[str, list[npt.NDArray[Any]]] = {name: [] for name in _ROW_COLUMNS}

    def add(self, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        columns = list(zip(*rows, strict=True))
        if len(columns) == len(_ROW_COLUMNS) - 1:  # no judge errors given: an import's rows
            columns.append((0,) * len(rows))
        task, attempt, retry, reason, success, cost, latency, partial, judged = columns
        parts = self._parts
        parts["task"].append(_codes(task, self._tasks, "task_id"))
        parts["reason"].append(_codes(reason, self._reasons, "terminal_reason"))
        parts["attempt"].append(_typed(attempt, "attempt"))
        parts["retry"].append(_typed(retry, "retry"))
        parts["success"].append(_typed(success, "success"))
        parts["cost"].append(_typed(cost, "cost"))
        parts["latency"].append(_typed(latency, "latency"))
        parts["partial"].append(_typed(partial, "partial_score"))
        parts["judge_errors"].append(_typed(judged, "judge_errors"))

    def table(self) -> OutcomeTable:
        """The rows added so far, in the order added; task ids and reasons coded in sorted
        order (what the store's read gives, whatever order the rows came in). The rows are
        handed over: each column's chunks are released once joined, and the builder is
        empty afterwards (a million rows are never held twice)."""
        task_ids, task_order = _sorted_codes(self._tasks)
        reason_ids, reason_order = _sorted_codes(self._reasons)
        column = {}
        for name in _ROW_COLUMNS:
            column[name] = _joined(self._parts[name], _DTYPES[name])
            self._parts[name] = []
        self._tasks, self._reasons = {}, {}
        return OutcomeTable(
            task_ids,
            task_order[column["task"]],
            column["attempt"],
            column["retry"],
            reason_ids,
            reason_order[column["reason"]],
            column["success"],
            column["cost"],
            column["latency"],
            column["partial"],
            column["judge_errors"],
        )


_ROW_COLUMNS = (
    "task", "attempt", "retry", "reason", "success", "cost", "latency", "partial", "judge_errors",
)  # fmt: skip
_DTYPES: dict[str, type[np.generic]] = {
    "task": np.int64, "attempt": np.int64, "retry": np.int64, "reason": np.int64,
    "success": np.bool_, "cost": np.float64, "latency": np.float64, "partial": np.float64,
    "judge_errors": np.int64,
}  # fmt: skip
_PACKED = {
    "task": "<i4", "attempt": "<i8", "retry": "<i4", "reason": "<i4",
    "success": "|b1", "cost": "<f8", "latency": "<f8", "partial": "<f8", "judge_errors": "<i4",
}  # fmt: skip
"""How :meth:`OutcomeTable.to_bytes` stores each column (codes fit 32 bits: at most 2**31
distinct tasks or reasons)."""


def _codes(values: Sequence[str], index: dict[str, int], field: str) -> npt.NDArray[np.int64]:
    """Each value's code in order of first appearance (*index* grows as new values come);
    ``ValueError`` naming *field* if a value is not text."""
    known = len(index)
    codes = np.fromiter(
        (index.setdefault(v, len(index)) for v in values), dtype=np.int64, count=len(values)
    )
    if len(index) > known and not all(type(v) is str for v in list(index)[known:]):
        kinds = sorted({type(v).__name__ for v in index if type(v) is not str})
        raise ValueError(f"{field} holds {', '.join(kinds)}, not text")
    return codes


_NUMBER = (int, float, type(None))
_TYPES: dict[str, tuple[type, ...]] = {
    "attempt": (int,), "retry": (int,), "judge_errors": (int,), "success": (bool,),
    "cost": _NUMBER, "latency": _NUMBER, "partial_score": _NUMBER,
}  # fmt: skip
"""What each outcome field holds (JSON integers, booleans, numbers or null): a hand-edited
``"1"`` or ``"true"`` is text, never read as 1 or True."""
_KINDS = {"attempt": "i", "retry": "i", "judge_errors": "i", "success": "b"}
"""The numpy kind of each column of :data:`_TYPES` (numbers: ``i`` or ``f``)."""


def _typed(values: Sequence[Any], field: str) -> npt.NDArray[Any]:
    """*values* as the column of *field* (a number's None is NaN); ``ValueError`` naming the
    field if a value is of another type. The type is the one numpy infers for the column, as
    fast as converting it: integers and text make text; numbers and None make objects, then
    looked at one by one."""
    allowed = _TYPES[field]
    column = np.array(values)
    kinds = _KINDS.get(field, "if")
    if column.dtype.kind == "u" and kinds == "i":  # 2**63 and up: unsigned, not the store's
        raise ValueError(f"{field} holds an integer beyond 64 bits")
    if column.dtype.kind == "O" and set(map(type, values)) <= set(allowed):
        if kinds == "i":  # integers numpy could not hold in 64 bits
            raise ValueError(f"{field} holds an integer beyond 64 bits")
        try:
            column = column.astype(np.float64)  # numbers and None
        except OverflowError:
            raise ValueError(f"{field} holds a number beyond a float's range") from None
    if len(column) and column.dtype.kind not in kinds:
        found = sorted({type(v).__name__ for v in values if type(v) not in allowed})
        expected = " or ".join(t.__name__ for t in allowed)
        raise ValueError(f"{field} holds {', '.join(found) or column.dtype}, not {expected}")
    return column.astype({"i": np.int64, "b": np.bool_}.get(kinds, np.float64), copy=False)


def _unfit(row: Sequence[Any]) -> bool:
    """Whether one row's outcome fields do not fit their columns (the error path only)."""
    try:
        OutcomeTable.from_rows([row])
    except ValueError:
        return True
    return False


def _sorted_codes(index: dict[str, int]) -> tuple[tuple[str, ...], npt.NDArray[np.int64]]:
    """The distinct values sorted, and a map from first-appearance code to sorted code."""
    names = tuple(sorted(index))
    order = np.empty(len(names), dtype=np.int64)
    order[[index[name] for name in names]] = np.arange(len(names))
    return names, order


def _joined(parts: list[npt.NDArray[Any]], dtype: type[np.generic]) -> npt.NDArray[Any]:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def _last_tries(
    task: npt.NDArray[np.int64], attempt: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    """Rows in (task, attempt, retry) order that are the last try of their attempt."""
    last: npt.NDArray[np.bool_] = np.r_[
        (task[1:] != task[:-1]) | (attempt[1:] != attempt[:-1]), True
    ]
    return last


def task_infos(batch: BatchInfo) -> dict[str, TaskInfo]:
    """What each task of *batch* declares; revision 0 (an unversioned import) becomes ""."""
    ids = set(batch.task_revisions) | set(batch.task_weights) | set(batch.task_slices)
    return {
        task_id: TaskInfo(
            weight=batch.task_weights.get(task_id, 1.0),
            labels=tuple(batch.task_slices.get(task_id, ())),
            horizon=batch.task_horizons.get(task_id),
            revision=str(batch.task_revisions.get(task_id) or ""),
        )
        for task_id in ids
    }


def _table(runs: Sequence[AgentRun] | OutcomeTable) -> OutcomeTable:
    return runs if isinstance(runs, OutcomeTable) else OutcomeTable.from_runs(runs)


def planned(
    batch: BatchInfo, runs: Sequence[AgentRun] | OutcomeTable
) -> tuple[OutcomeTable, OutcomeTable]:
    """The tries of *batch*'s plan, and those outside it (:meth:`BatchInfo.plan_bounds`: a
    task it does not plan, an attempt past its attempts, a rerun past its policy's or of a
    try not stored or valid). Nothing in groundstate stores one outside (a hand edit or
    another program does): no figure counts them, and ``verify`` names each
    (:meth:`RunStore.outside_plan`)."""
    table = _table(runs)
    inside = _inside(batch, table)
    if bool(inside.all()):
        return table, table._take(slice(0, 0))
    return table._take(inside), table._take(~inside)


def _inside(batch: BatchInfo, table: OutcomeTable) -> npt.NDArray[np.bool_]:
    """Which rows of *table* are tries of *batch*'s plan (:func:`groundstate.batchplan.placed`)."""
    where = placed(
        table.task_ids,
        table.task,
        table.attempt,
        table.retry,
        ~table.valid(),
        batch.planned_tasks(),
        batch.plan_bounds(),
    )
    inside: npt.NDArray[np.bool_] = where == Placed.INSIDE
    return inside


def planned_runs(batch: BatchInfo, runs: Sequence[AgentRun]) -> list[AgentRun]:
    """The runs of *runs* in *batch*'s plan (:func:`planned`), in their order."""
    inside = _inside(batch, OutcomeTable.from_runs(runs))
    return [run for run, keep in zip(runs, inside.tolist(), strict=True) if keep]


def headline_tries(
    batch: BatchInfo, runs: Sequence[AgentRun] | OutcomeTable
) -> tuple[OutcomeTable, OutcomeTable]:
    """The tries every figure counts, and those of the tasks that failed validation and ran
    anyway (``run --allow-invalid``): those are reported apart (``invalid_tasks_results``),
    never in the headline, reasons, cost or invalid-try rates, since a task proved unsolvable
    or ungradable says nothing about the system. Tries outside the batch's plan are in
    neither (:func:`planned`)."""
    return planned(batch, runs)[0].split(batch.invalid_tasks)


@dataclass(frozen=True)
class Counted:
    """A batch's counted attempts: the summary and the per-task counts it was built from."""

    summary: Summary
    counts: dict[View, list[TaskCounts]]
    valid_attempts: int
    invalid_attempts: int
    final: OutcomeTable
    """The counted try of each attempt (tasks that failed validation left out)."""


def _final_counts(
    batch: BatchInfo, runs: Sequence[AgentRun] | OutcomeTable
) -> tuple[OutcomeTable, npt.NDArray[np.bool_], dict[View, list[TaskCounts]]]:
    """The final try of each attempt of the tasks that count (:func:`headline_tries`), which
    of them are valid, and the per-task counts."""
    final = headline_tries(batch, runs)[0].final()
    valid = final.valid()
    return final, valid, _counts(batch, final, valid)


def _counts(
    batch: BatchInfo, final: OutcomeTable, valid: npt.NDArray[np.bool_]
) -> dict[View, list[TaskCounts]]:
    columns = AttemptColumns(final.task_ids, final.task, valid, final.success, final.partial)
    return count_columns(columns, task_infos(batch))


def count_batch(
    batch: BatchInfo,
    runs: Sequence[AgentRun] | OutcomeTable,
    *,
    seed: int = 0,
    k_over_supporting: bool = False,
) -> Counted:
    """Statistics of the final try of each attempt, computed on columns."""
    final, valid, counts = _final_counts(batch, runs)
    by_reason = final.reason_counts()
    summary = summary_of(
        counts,
        reasons=by_reason,
        invalid_reasons={r: n for r, n in by_reason.items() if r.split("/")[0] in INVALID_REASONS},
        cost=final.cost,
        latency=final.latency,
        successes=int(np.sum(final.success & valid)),
        seed=seed,
        k_over_supporting=k_over_supporting,
    )
    return Counted(summary, counts, int(valid.sum()), int((~valid).sum()), final)


def summarize_batch(
    batch: BatchInfo,
    runs: Sequence[AgentRun] | OutcomeTable,
    *,
    seed: int = 0,
    k_over_supporting: bool = False,
) -> Summary:
    return count_batch(batch, runs, seed=seed, k_over_supporting=k_over_supporting).summary


def tries(batch: BatchInfo, runs: Sequence[AgentRun] | OutcomeTable) -> dict[str, Any]:
    """Every try, reruns included: how often attempts came out invalid, by reason, whether
    that exceeds the batch's declared ``max_invalid_rate`` (flagged in every report), and
    what all tries cost (the summary's cost is over counted attempts: a rerun was paid for
    too; None when the sum is beyond the largest float or no cost is known), with the tries
    whose cost is not known (``cost_unknown``: left out of the sum, never counted as 0).
    Tasks that failed validation are left out, as from every figure (:func:`headline_tries`)."""
    table = headline_tries(batch, runs)[0]
    invalid: Counter[str] = Counter()
    for reason, n in table.reason_counts().items():
        if reason.split("/")[0] in INVALID_REASONS:
            invalid[reason.split("/")[0]] += n
    total = len(table)
    spent = distribution(table.cost)
    threshold = float(batch.invalid_run_policy.get("max_invalid_rate", DEFAULT_MAX_INVALID_RATE))
    return {
        "tries": total,
        "invalid_tries": sum(invalid.values()),
        "invalid_rate_by_reason": {k: v / total for k, v in sorted(invalid.items())},
        "max_invalid_rate": threshold,
        "flagged": total > 0 and sum(invalid.values()) / total > threshold,
        "cost": spent.total,
        "cost_unknown": spent.unknown,
    }


def batch_report(
    batch: BatchInfo,
    runs: Sequence[AgentRun] | OutcomeTable,
    *,
    seed: int = 0,
    k_over_supporting: bool = False,
) -> dict[str, Any]:
    """The machine-readable report of a batch: headline numbers of both views with their
    denominators and intervals, the k limits, and the per-task table it was computed from.
    ``no_estimate`` says why a finished batch has no estimate at all (:func:`no_estimate`),
    null when it has one: no figure of it is then an estimate (``run`` and ``report`` exit 3)."""
    whole, outside = planned(batch, runs)
    table, apart = whole.split(batch.invalid_tasks)
    counted = count_batch(batch, table, seed=seed, k_over_supporting=k_over_supporting)
    summary = counted.summary
    valid, strict = summary.views["valid"], summary.views["strict"]
    attempt_tries = tries(batch, table)
    per_task = task_table(counted.counts)
    return {
        "batch_id": batch.batch_id,
        "suite": batch.suite,
        **suite_decision(batch),
        "system_spec_hash": batch.system_spec_hash,
        "n_tasks": valid.n_tasks,
        "attempts_per_task": batch.attempts,
        "executor": batch.executor,
        "concurrency": batch.concurrency,
        "valid_attempts": counted.valid_attempts,
        "invalid_attempts": counted.invalid_attempts,
        "terminal_reasons": summary.terminal_reasons,
        "success_rate": _interval(valid.success_rate),
        "pass_at_k": {k: _interval(e) for k, e in valid.pass_at_k.items()},
        "pass_hat_k": {k: _interval(e) for k, e in valid.pass_hat_k.items()},
        "partial_score": _interval(valid.partial_score),
        "invalid_as_failure": {
            "success_rate": _interval(strict.success_rate),
            "pass_at_k": {k: _interval(e) for k, e in strict.pass_at_k.items()},
            "pass_hat_k": {k: _interval(e) for k, e in strict.pass_hat_k.items()},
            "partial_score": _interval(strict.partial_score),
        },
        "k_limits": {name: _k_limits(view) for name, view in summary.views.items()},
        "methods": summary.methods,
        "tasks": per_task,
        "tries": attempt_tries,
        "invalid_rate_flagged": attempt_tries["flagged"],
        "invalid_tasks_run": batch.invalid_tasks,
        "invalid_tasks_results": invalid_task_results(batch, apart),
        "missing_attempts": missing_attempts(batch, whole.final()),
        "no_estimate": _no_estimate(batch, whole),
        "outside_plan": len(outside),
        "judge_errors": judge_errors(counted.final),
        "provenance": provenance(batch),
        "summary": summary.to_dict(),
    }


def provenance(batch: BatchInfo) -> dict[str, Any]:
    """How the batch was produced, from its sessions (:class:`~groundstate.store.RunSession`:
    its start, then each resume): each with its process, executor, concurrency, validator
    revision and the tries it stored; ``resumes`` (None: sessions not recorded, as for batches
    run before they were, and imports); ``unrecorded``: the tries stored before the first
    session recorded, with the executor the batch started on (a batch started before sessions
    were recorded, then resumed; None when there are none); the executors used, in order (the
    unrecorded start's first); ``validation`` (of the recorded sessions):
    ``proven`` (every session proved its tasks first), ``not_proven`` (none did),
    ``partly_proven``, or ``not_recorded``; and ``stale_validation``: a session proved them
    under an older validator revision than the current one; ``running``: the live process
    running the batch as it was read (its figures are of the tries stored so far), or None."""
    sessions = [s.model_dump(mode="json") for s in batch.sessions]
    revisions = sorted({r for s in batch.sessions if (r := s.validator_revision) is not None})
    current = _validator_revision() if revisions else None
    proven = sum(s.validator_revision is not None for s in batch.sessions)
    earlier = batch.sessions[0].first_seq - 1 if batch.sessions else 0
    unrecorded = {"tries": earlier, "executor": batch.executor} if earlier else None
    executors = [batch.executor] if unrecorded else []
    return {
        "sessions": sessions,
        "resumes": batch.sessions[-1].number - 1 if sessions else None,
        "unrecorded": unrecorded,
        "executors": list(dict.fromkeys([*executors, *(s.executor for s in batch.sessions)])),
        "validation": (
            "not_recorded"
            if not sessions
            else "proven"
            if proven == len(sessions)
            else "partly_proven"
            if proven
            else "not_proven"
        ),
        "validator_revisions": revisions,
        "current_validator_revision": current,
        "stale_validation": current is not None and revisions[0] < current,
        "running": batch.running,
    }


def _validator_revision() -> int:
    """The current validator revision, imported only for batches that recorded one (the
    validation package is heavy)."""
    from groundstate.validation.suite import VALIDATOR_REVISION

    return VALIDATOR_REVISION


def judge_errors(final: OutcomeTable) -> dict[str, Any]:
    """The judged assertions that could not judge among *final*, the counted try of each
    attempt. Such an attempt stays valid (a judged verdict never decides ``success``), so no
    invalid rate shows them: every report states them apart (JSON, terminal, HTML, compare).
    ``attempts`` with at least one, of ``counted_attempts``; ``errors`` in all; ``by_task``:
    attempts with one, per task."""
    hit = final.judge_errors > 0
    per_task = np.bincount(final.task[hit], minlength=len(final.task_ids)).tolist()
    return {
        "attempts": int(hit.sum()),
        "counted_attempts": len(final),
        "errors": int(final.judge_errors.sum()),
        "by_task": {task: n for task, n in zip(final.task_ids, per_task, strict=True) if n},
    }


def invalid_task_results(batch: BatchInfo, apart: OutcomeTable) -> list[dict[str, Any]]:
    """The per-task table (:func:`task_table`) of the tasks that failed validation and ran
    anyway, from their tries: reported apart from every figure."""
    final = apart.final()
    return task_table(_counts(batch, final, final.valid()))


def missing_attempts(batch: BatchInfo, final: OutcomeTable) -> dict[str, Any] | None:
    """What an unfinished batch (interrupted, never resumed) lacks of its plan, from *final*,
    the counted try of each stored attempt: the attempts not stored, the planned tasks with
    none (absent from every denominator, so the numbers are not the suite's), and the
    attempts whose counted try is invalid with reruns left under the batch's policy (the
    batch stopped before rerunning them: a resume does, so they count as invalid only for
    now). None when complete, and for imported batches, whose plan is only the rows they
    brought. Every report states it (JSON, terminal and HTML)."""
    if batch.source != "groundstate":
        return None
    planned = batch.attempts * len(batch.task_revisions)
    missing = planned - len(final)
    pending = reruns_pending(batch, final)
    if missing <= 0 and not pending:
        return None
    stored = {final.task_ids[i] for i in np.unique(final.task)} if len(final) else set()
    return {
        "count": max(missing, 0),
        "planned": planned,
        "tasks_without_any": sorted(set(batch.task_revisions) - stored),
        "reruns_pending": pending,
    }


def no_estimate(batch: BatchInfo, runs: Sequence[AgentRun] | OutcomeTable) -> str | None:
    """Why the finished *batch* has no estimate at all, or None: none of the attempts every
    figure counts (:func:`headline_tries`) is valid, because each is invalid, or because there
    is none (every task failed validation and ran anyway, ``run --allow-invalid``: 0 valid and
    0 invalid attempts). A batch still running, or stopped with attempts to run or rerun, is
    reported as such (None): a resume may give it valid attempts. ``run``, ``report`` and
    ``compare`` (each side) exit 3 on it."""
    return _no_estimate(batch, planned(batch, runs)[0])


def _no_estimate(batch: BatchInfo, whole: OutcomeTable) -> str | None:
    """:func:`no_estimate` of the batch's planned tries *whole* (:func:`planned`)."""
    from groundstate.rounding import counted  # a local name elsewhere in this module

    if batch.running or missing_attempts(batch, whole.final()) is not None:
        return None
    final = whole.split(batch.invalid_tasks)[0].final()
    if final.valid().any():
        return None
    if len(final):
        return f"every attempt is invalid ({counted(len(final), 'attempt')})"
    if not batch.invalid_tasks:
        return "no attempt counts"
    ran = ", ".join(batch.invalid_tasks)
    return f"no attempt counts: every task failed validation and ran anyway ({ran})"


def reruns_pending(batch: BatchInfo, final: OutcomeTable) -> int:
    """Attempts of *final* (the counted try of each) that are invalid with reruns left under
    *batch*'s policy: the rule :class:`~groundstate.runner.BatchRunner` reruns by."""
    return int(np.sum(~final.valid() & (final.retry < batch.max_retries)))


def suite_decision(batch: BatchInfo) -> dict[str, Any]:
    """The decision the batch's suite serves and its task population (None: not declared)."""
    return {"decision": batch.decision, "population": batch.population}


def _interval(estimate: Estimate | None) -> dict[str, Any] | None:
    return None if estimate is None else estimate.to_dict()


def _k_limits(view: ViewSummary) -> dict[str, Any]:
    return {
        "kmax": view.kmax,
        "limited_by": [{"task_id": task, "n": n} for task, n in view.k_limited_by],
        "beyond": {k: beyond.to_dict() for k, beyond in view.beyond_k.items()},
    }


def task_table(counts: dict[View, list[TaskCounts]]) -> list[dict[str, Any]]:
    """One row per task with the denominators of both views: enough to recompute every
    suite value of the report without the store."""
    return [
        {
            "task_id": valid.task_id,
            # as the batch stores it (TaskCounts keeps it as text, "" for unversioned)
            "revision": int(valid.revision) if valid.revision else None,
            "weight": valid.weight,
            "labels": list(valid.labels),
            "horizon": valid.horizon,
            "attempts": strict.n,
            "invalid": valid.invalid,
            "valid": {"n": valid.n, "c": valid.c, "partial": valid.partial, "scored": valid.scored},
            "strict": {
                "n": strict.n,
                "c": strict.c,
                "partial": strict.partial,
                "scored": strict.scored,
            },
        }
        for valid, strict in zip(counts["valid"], counts["strict"], strict=True)
    ]


# --- comparison ------------------------------------------------------------------------------


def batch_mismatches(a: BatchInfo, b: BatchInfo) -> list[str]:
    """Batch-level reasons two batches are not the same evaluation (task-level ones are
    found by :func:`groundstate.stats.compare`). An imported batch's suite hash is the hash
    of its results file, so only batches run here are held to the same suite hash."""
    if a.source == b.source == "groundstate" and a.suite_hash != b.suite_hash:
        return [f"suite_hash differs ({a.suite_hash[:12]} vs {b.suite_hash[:12]})"]
    return []


def compare_batches(
    a: BatchInfo,
    a_runs: Sequence[AgentRun] | OutcomeTable,
    b: BatchInfo,
    b_runs: Sequence[AgentRun] | OutcomeTable,
    *,
    seed: int = 0,
    fdr: float = DEFAULT_FDR,
    allow_mismatch: bool = False,
) -> Comparison:
    """Comparison of two batches on their shared tasks; refuses different revisions, suites
    or versioning unless *allow_mismatch* (then the comparison lists them). A batch that
    lacks planned attempts is named in the notes, as its own report names it."""
    # A task that failed validation in either batch is left out of both: its figures are
    # not evidence about either system (each report gives them apart).
    left_out = sorted({*a.invalid_tasks, *b.invalid_tasks})
    a_table, b_table = planned(a, a_runs)[0], planned(b, b_runs)[0]
    comparison = compare_counts(
        _final_counts(a, a_table.split(left_out)[0])[2],
        _final_counts(b, b_table.split(left_out)[0])[2],
        seed=seed,
        fdr=fdr,
        allow_mismatch=allow_mismatch,
        batch_mismatches=batch_mismatches(a, b),
    )
    notes = [
        note
        for side, batch, table in (("a", a, a_table), ("b", b, b_table))
        if (note := _incomplete_note(side, batch, table.final())) is not None
    ]
    for side, batch, table in (("a", a, a_table), ("b", b, b_table)):
        spent = tries(batch, table)
        if flagged := flagged_text(spent):
            notes.append(f"{side} ({batch.batch_id}) FLAGGED: {flagged}: not a verdict")
        kept, some = _compared_tries(batch, table, _compared_tasks(comparison, side))
        final = kept.final()
        valid = final.valid()
        counts = denominators_text(
            int(valid.sum()), int((~valid).sum()), tries(batch, kept), tasks=some
        )
        for text in (counts, judge_error_text(judge_errors(final), tasks=some)):
            if text:
                notes.append(f"{side} ({batch.batch_id}): {text}")
        block = provenance(batch)
        notes += [
            f"{side} ({batch.batch_id}) {what}: {text}"
            for what, text in (("ran", session_text(block)), ("validation", validation_text(block)))
            if text
        ]
    if left_out:
        notes.append(
            "tasks that failed validation and ran anyway (run --allow-invalid), left out of "
            f"both sides: {', '.join(left_out)}"
        )
    if not notes:
        return comparison
    return replace(comparison, notes=(*comparison.notes, *notes))


def _compared_tasks(comparison: Comparison, side: str) -> set[str]:
    """The tasks of *side* the comparison's figures are over: the shared ones when paired,
    the side's own when unpaired (tasks that failed validation in either batch left out)."""
    shared = {*comparison.paired_tasks, *comparison.excluded_tasks}
    if comparison.mode == "paired":
        return shared
    return shared | set(comparison.only_in_a if side == "a" else comparison.only_in_b)


def _compared_tries(
    batch: BatchInfo, table: OutcomeTable, compared: set[str]
) -> tuple[OutcomeTable, tuple[int, int] | None]:
    """A side's counted tries over the *compared* tasks, not the whole batch, and (when that
    leaves some out) how many of its tasks they are: a batch of 10 tasks compared on the 5 it
    shares with the other side states the attempts, tries and judge errors of those 5
    (:func:`denominators_text`, :func:`judge_error_text`), and says so."""
    ours = headline_tries(batch, table)[0]
    present = {ours.task_ids[i] for i in np.unique(ours.task)}
    some = None if compared >= present else (len(present & compared), len(present))
    return ours.split(present - compared)[0], some


def _incomplete_note(side: str, batch: BatchInfo, final: OutcomeTable) -> str | None:
    missing = missing_attempts(batch, final)
    if missing is None:
        return None
    running = f" (being run by {batch.running}: these are the tries stored so far)"
    return (
        f"{side} ({batch.batch_id}) is incomplete{running if batch.running else ''}: "
        f"{incomplete_text(missing)}"
    )


def comparison_report(a: BatchInfo, b: BatchInfo, comparison: Comparison) -> dict[str, Any]:
    """The machine-readable comparison: per view and metric, both sides, b - a with its
    interval and test, and the per-task exact tests."""
    metrics: dict[str, dict[str, Any]] = {view: {} for view in VIEWS}
    for d in comparison.differences:
        metrics[d.view][d.name] = _difference(d)
    return {
        "batch_a": a.batch_id,
        "batch_b": b.batch_id,
        "decision_a": suite_decision(a),
        "decision_b": suite_decision(b),
        "mode": comparison.mode,
        "paired_tasks": list(comparison.paired_tasks),
        "only_in_a": list(comparison.only_in_a),
        "only_in_b": list(comparison.only_in_b),
        "excluded_tasks": list(comparison.excluded_tasks),
        "invalid_tasks": sorted({*a.invalid_tasks, *b.invalid_tasks}),
        "dropped_tasks": comparison.dropped_tasks,
        "common_k": comparison.common_k,
        "metrics": metrics,
        "per_task_test": {
            "method": comparison.methods["per_task_test"],
            "multiple_comparisons": comparison.methods["multiple_comparisons"],
            "fdr": comparison.fdr,
            "tested": len(comparison.per_task),
            "changed": len(comparison.changed),
        },
        "changed_tasks": [change.task_id for change in comparison.changed],
        "per_task": [change.to_dict() for change in comparison.per_task],
        "mismatches": list(comparison.mismatches),
        "notes": list(comparison.notes),
        "methods": comparison.methods,
    }


def _difference(d: Difference) -> dict[str, Any]:
    return {
        "metric": d.metric,
        "k": d.k,
        "a": d.a.to_dict(),
        "b": d.b.to_dict(),
        "difference": d.difference.to_dict(),
        "statistic": d.statistic,
        "p_value": d.p_value,
    }
