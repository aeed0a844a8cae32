"""Which stored tries are of a batch's plan: the one rule, read by the store and the reports.

A try is of the plan of *tasks* (None: any task) and *bounds* (attempts per task, reruns its
policy allows an invalid try; None: any attempt and retry) when its task is planned, its
attempt is 1 to *attempts*, its retry 0 to *reruns*, and a rerun with retry *n* follows *n*
invalid tries 0 to *n* - 1 of its attempt. Nothing in groundstate stores a try outside (a
hand edit or another program does): no figure counts one, and ``verify`` names each.
:meth:`RunStore.outside_plan` applies the rule to the store's columns,
:func:`groundstate.analysis.planned` to the records' (a batch's *tasks* and *bounds*:
:meth:`BatchInfo.planned_tasks`, :meth:`BatchInfo.plan_bounds`).

A first try (retry 0) of attempt 1 to *attempts* of a planned task is inside whatever else
is stored: it follows no try. So the store reads only the attempts holding another try to
find those outside (one indexed scan; a test holds :func:`placed` to this).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum

import numpy as np
import numpy.typing as npt

from groundstate.rounding import counted


class Placed(IntEnum):
    """Where a try stands against its batch's plan: inside, or why it is outside."""

    INSIDE = 0
    TASK = 1
    ATTEMPT = 2
    RETRY = 3
    NOT_A_RERUN = 4


def placed(
    task_ids: Sequence[str],
    task: npt.NDArray[np.int64],
    attempt: npt.NDArray[np.int64],
    retry: npt.NDArray[np.int64],
    invalid: npt.NDArray[np.bool_],
    tasks: set[str] | None,
    bounds: tuple[int, int] | None,
) -> npt.NDArray[np.int8]:
    """Each row's :class:`Placed` code: rows given as codes into *task_ids*, with their
    attempt, retry and whether the try is invalid, in any order."""
    known = [True] * len(task_ids) if tasks is None else [t in tasks for t in task_ids]
    codes = np.where(np.array(known, dtype=np.bool_)[task], Placed.INSIDE, Placed.TASK)
    if bounds is None or not len(task):
        return codes.astype(np.int8)
    attempts, reruns = bounds
    keys = (retry, attempt, task)
    order = np.arange(len(task)) if in_order(task, attempt, retry) else np.lexsort(keys)
    t, a, r = task[order], attempt[order], retry[order]
    bad = invalid[order] & (r >= 0)
    first = np.r_[True, (t[1:] != t[:-1]) | (a[1:] != a[:-1])]
    # invalid tries before each row, in all, then within its attempt (``before`` rises)
    before: npt.NDArray[np.int64] = np.cumsum(bad, dtype=np.int64) - bad
    earlier = before - np.maximum.accumulate(np.where(first, before, 0))
    why = np.select(
        [(a < 1) | (a > attempts), (r < 0) | (r > reruns), (r > 0) & (earlier != r)],
        [Placed.ATTEMPT, Placed.RETRY, Placed.NOT_A_RERUN],
        Placed.INSIDE,
    )
    found = np.empty(len(task), dtype=np.int8)
    found[order] = why
    return np.where(codes == Placed.INSIDE, found, codes).astype(np.int8)


def why_outside(code: int, bounds: tuple[int, int] | None) -> str:
    """Why a try with :class:`Placed` *code* (not ``INSIDE``) is outside, for a person."""
    attempts, reruns = bounds or (0, 0)
    return {
        Placed.TASK: "a task the batch does not plan",
        Placed.ATTEMPT: f"the batch plans attempts 1 to {attempts}",
        Placed.RETRY: f"its policy allows {counted(reruns, 'rerun')} of an invalid try",
        Placed.NOT_A_RERUN: "a rerun of a try not stored or valid: only invalid tries are rerun",
    }[Placed(code)]


def in_order(
    task: npt.NDArray[np.int64], attempt: npt.NDArray[np.int64], retry: npt.NDArray[np.int64]
) -> bool:
    """Whether rows are already in (task, attempt, retry) order, as the store returns them."""
    same_task = task[1:] == task[:-1]
    same_attempt = same_task & (attempt[1:] == attempt[:-1])
    return bool(
        np.all(task[1:] >= task[:-1])
        and np.all(~same_task | (attempt[1:] >= attempt[:-1]))
        and np.all(~same_attempt | (retry[1:] >= retry[:-1]))
    )
