"""Constraint sets: named lists of hard constraints that a suite states once for many tasks.

``suite.yaml`` defines them (``constraint_sets: {policy: [...]}``); a task file lists the ones
it includes (``constraint_sets: [policy]``). At load the sets' constraints are put before the
task's own, so an ``AgentTask`` always carries the whole, expanded list: that list is what the
grader evaluates and what its ``grader_revision`` hashes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator

from groundstate.errors import SpecError
from groundstate.spec.constraints import HardConstraint
from groundstate.spec.strict import ids_defined_once
from groundstate.spec.task import AgentTask

SUITE_FILE = "suite.yaml"


def _unique_ids(constraints: list[HardConstraint]) -> list[HardConstraint]:
    ids_defined_once(constraints, "constraint id")
    return constraints


ConstraintSet = Annotated[list[HardConstraint], AfterValidator(_unique_ids)]
"""The constraints of one set, in order; ids unique within it."""

ConstraintSets = dict[str, ConstraintSet]


def include_sets(data: dict[str, Any], sets: ConstraintSets, task_file: Path) -> dict[str, Any]:
    """The task's raw fields with its sets' constraints added, ready to validate as a task.

    The set constraints (already validated) go *after* the task's own here, so that a
    validation error in the task's own constraints names its index in the task file;
    ``sets_first`` restores the documented order once the task is valid.
    """
    names = _listed_names(data.get("constraint_sets", []), sets, task_file)
    own = data.get("hard_process_constraints", [])
    if not isinstance(own, list):
        return data  # malformed: the task's validation reports it
    included = [(name, i, c) for name in names for i, c in enumerate(sets[name])]
    _check_ids_once(own, included, task_file)
    if not included:
        return data
    return {**data, "hard_process_constraints": [*own, *(c for _, _, c in included)]}


def sets_first(task: AgentTask, sets: ConstraintSets) -> AgentTask:
    """The task validated from ``include_sets``' fields, its set constraints moved first."""
    constraints = task.hard_process_constraints
    own = len(constraints) - _included_count(task, sets)
    return task.model_copy(
        update={"hard_process_constraints": [*constraints[own:], *constraints[:own]]}
    )


def own_constraints(task: AgentTask, sets: ConstraintSets) -> list[HardConstraint]:
    """The constraints a loaded task states itself (after those of its sets)."""
    return task.hard_process_constraints[_included_count(task, sets) :]


def _included_count(task: AgentTask, sets: ConstraintSets) -> int:
    return sum(len(sets[name]) for name in task.constraint_sets)


def _listed_names(value: Any, sets: ConstraintSets, task_file: Path) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise SpecError(task_file, "constraint_sets", "expected a list of constraint set names")
    for i, name in enumerate(value):
        if name not in sets:
            known = ", ".join(sets) if sets else "none"
            raise SpecError(
                task_file,
                "constraint_sets",
                f"unknown constraint set {name!r} ({SUITE_FILE} defines: {known})",
            )
        if name in value[:i]:
            raise SpecError(task_file, "constraint_sets", f"constraint set {name!r} listed twice")
    return value


def _check_ids_once(
    own: list[Any], included: list[tuple[str, int, HardConstraint]], task_file: Path
) -> None:
    """A constraint id is defined once in the expanded list; an error names both places."""
    origins: dict[str, str] = {}
    for name, i, constraint in included:
        here = f"constraint set {name!r} ({SUITE_FILE}: constraint_sets.{name}[{i}])"
        if constraint.id in origins:
            raise SpecError(
                task_file,
                "constraint_sets",
                f"constraint id {constraint.id!r} is defined twice: in "
                f"{origins[constraint.id]} and in {here}",
            )
        origins[constraint.id] = here
    for i, raw in enumerate(own):
        constraint_id = raw.get("id") if isinstance(raw, dict) else None
        if not isinstance(constraint_id, str):
            continue  # the task's validation reports a missing or malformed id
        here = f"hard_process_constraints[{i}]"
        if constraint_id in origins:
            raise SpecError(
                task_file,
                f"{here}.id",
                f"constraint id {constraint_id!r} is defined twice: in "
                f"{origins[constraint_id]} and in {here}",
            )
        origins[constraint_id] = here
