"""Choosing the tasks of a suite that a batch runs (``run --task/--slice/-k``).

Each kind of criterion narrows the suite, and within a kind any match is enough: ``--task a
--task b --slice refunds`` runs the tasks ``a`` and ``b`` that are labelled ``refunds``. A name
that matches nothing is a mistake (a typo would otherwise run an empty or a different batch).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from groundstate.errors import GroundstateError, named_value
from groundstate.spec.suite import Suite

_WILDCARDS = frozenset("*?[")


class NoTasksSelected(GroundstateError):
    """A selection names an unknown task or slice, or leaves no task to run."""


def select_tasks(
    suite: Suite,
    *,
    task_ids: Sequence[str] = (),
    slices: Sequence[str] = (),
    patterns: Sequence[str] = (),
) -> tuple[str, ...] | None:
    """The ids of the chosen tasks, sorted; ``None`` when no criterion is given (all tasks).

    *task_ids* are exact ids; *slices* are slice labels; a pattern is a substring of the task
    id, or a shell-style wildcard (``refund_*``) when it holds ``*``, ``?`` or ``[``.
    """
    if not (task_ids or slices or patterns):
        return None
    blank = next((pattern for pattern in patterns if not pattern.strip()), None)
    if blank is not None:  # `-k "$PATTERN"` with the variable unset would run the whole suite
        raise NoTasksSelected(
            f"-k {blank!r}: a blank pattern matches every task; give part of a task id"
            " (or '*' for all)"
        )
    _check_known(suite, task_ids, slices)
    chosen = [
        task.task_id
        for task in suite.tasks.values()
        if (not task_ids or task.task_id in task_ids)
        and (not slices or set(slices) & set(task.slice_labels))
        and (not patterns or any(_matches(task.task_id, p) for p in patterns))
    ]
    if not chosen:
        described = _described(task_ids, slices, patterns)
        raise NoTasksSelected(f"no task of suite {suite.name!r} matches {described}")
    return tuple(sorted(chosen))


def _matches(task_id: str, pattern: str) -> bool:
    # A literal substring matches even when it holds wildcard characters: `-k 'refund[v2]'`
    # names the task `refund[v2]` (as a wildcard it means `refundv` or `refund2`).
    if pattern in task_id:
        return True
    return bool(_WILDCARDS & set(pattern)) and fnmatch.fnmatchcase(task_id, pattern)


def _check_known(suite: Suite, task_ids: Sequence[str], slices: Sequence[str]) -> None:
    unknown = sorted(set(task_ids) - set(suite.tasks))
    if unknown:
        raise NoTasksSelected(
            f"suite {suite.name!r} has no task {', '.join(map(repr, unknown))} "
            f"(its tasks: {', '.join(sorted(suite.tasks))})"
        )
    labels = {label for task in suite.tasks.values() for label in task.slice_labels}
    missing = sorted(set(slices) - labels)
    if missing:
        known = ", ".join(sorted(labels)) or "none"
        raise NoTasksSelected(
            f"suite {suite.name!r} has no slice {', '.join(map(repr, missing))} "
            f"(its slices: {known})"
        )


def _described(task_ids: Sequence[str], slices: Sequence[str], patterns: Sequence[str]) -> str:
    given = [("--task", task_ids), ("--slice", slices), ("-k", patterns)]
    return " ".join(f"{option} {named_value(v)}" for option, values in given for v in values)
