"""What validation reports: one named check per proof, with the evidence behind its verdict."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class CheckOutcome(BaseModel):
    """One proof about a task (``reset``, ``solvable``, ...), and the evidence for its verdict."""

    model_config = ConfigDict(frozen=True)

    name: str
    passed: bool
    detail: str
    """Evidence a reader can act on: hashes, run verdicts, the steps or checks at fault."""


class TaskValidity(BaseModel):
    """Every check of one task; the task is valid only when each of them passed."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    checks: list[CheckOutcome]

    @property
    def valid(self) -> bool:
        return all(check.passed for check in self.checks)

    @property
    def failures(self) -> list[CheckOutcome]:
        return [check for check in self.checks if not check.passed]

    def check(self, name: str) -> CheckOutcome:
        """The check called *name* (``KeyError`` if the task was not checked for it)."""
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "valid": self.valid,
            "checks": [check.model_dump() for check in self.checks],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskValidity:
        """Read back :meth:`to_dict` (``valid`` is derived, so it is not read)."""
        return cls(task_id=data["task_id"], checks=data["checks"])


class SuiteValidity(BaseModel):
    """The validity of every task of a suite, named by the suite's hash."""

    model_config = ConfigDict(frozen=True)

    suite: str
    suite_hash: str
    tasks: list[TaskValidity]

    @property
    def valid(self) -> bool:
        return all(task.valid for task in self.tasks)

    def task(self, task_id: str) -> TaskValidity:
        return next(task for task in self.tasks if task.task_id == task_id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "suite_hash": self.suite_hash,
            "tasks": [task.to_dict() for task in self.tasks],
        }
