"""The τ²-bench retail files an import reads, as typed models.

Only the fields the importer uses are modelled; τ² adds fields over time, so unknown ones are
ignored rather than refused. A missing file or a field of the wrong shape is a
:class:`~groundstate.errors.SpecError` naming the file and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from groundstate.errors import SpecError

FILES = ("db.json", "tasks.json", "policy.md")
"""The files an import needs; ``tools_interface.json`` and ``split_tasks.json`` are optional."""


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Action(_Loose):
    """One gold action: a tool call of the reference trajectory."""

    action_id: str = ""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    compare_args: list[str] | None = None
    """The arguments τ² compares when it checks the action (``None``: all of them)."""


class EvaluationCriteria(_Loose):
    actions: list[Action] = Field(default_factory=list)
    communicate_info: list[str] | None = None
    """Strings τ² requires in some agent message."""
    nl_assertions: list[str] | None = None
    """Statements τ² grades with a language-model judge."""
    reward_basis: list[str] = Field(default_factory=list)


class Instructions(_Loose):
    task_instructions: str | None = None
    reason_for_call: str = ""
    known_info: str | None = None
    unknown_info: str | None = None


class UserScenario(_Loose):
    instructions: Instructions


class Issue(_Loose):
    """A problem τ²'s maintainers recorded against a task."""

    title: str
    status: str = ""


class Tau2Task(_Loose):
    id: str
    user_scenario: UserScenario
    evaluation_criteria: EvaluationCriteria
    issues: list[Issue] = Field(default_factory=list)


@dataclass(frozen=True)
class Source:
    """A τ² retail data folder, read."""

    root: Path
    db: dict[str, Any]
    tasks: list[Tau2Task]
    policy: str
    splits: dict[str, list[str]]


def load_source(root: Path) -> Source:
    """Read a τ² retail data folder (``db.json``, ``tasks.json``, ``policy.md``...)."""
    root = Path(root)
    for name in FILES:
        if not (root / name).is_file():
            raise SpecError(root / name, None, "missing: not a τ²-bench retail data folder")
    db = _json(root / "db.json")
    for table in ("users", "orders", "products"):
        if not isinstance(db, dict) or not isinstance(db.get(table), dict):
            raise SpecError(root / "db.json", table, "expected an object of records")
    raw_tasks = _json(root / "tasks.json")
    if not isinstance(raw_tasks, list):
        raise SpecError(root / "tasks.json", None, "expected a list of tasks")
    tasks = [_task(root / "tasks.json", i, raw) for i, raw in enumerate(raw_tasks)]
    splits_file = root / "split_tasks.json"
    splits = _json(splits_file) if splits_file.is_file() else {}
    return Source(
        root=root,
        db=db,
        tasks=tasks,
        policy=(root / "policy.md").read_text(encoding="utf-8"),
        splits=splits if isinstance(splits, dict) else {},
    )


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpecError(path, None, f"not readable JSON: {exc}") from exc


def _task(path: Path, index: int, raw: Any) -> Tau2Task:
    try:
        return Tau2Task.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise SpecError(path, f"[{index}].{where}", error["msg"]) from exc
