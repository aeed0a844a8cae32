"""What validation reports: one named check per proof, with the evidence behind its verdict."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field


class CheckOutcome(BaseModel):
    """One proof about a task (``reset``, ``solvable``, ...), and the evidence for its verdict."""

    model_config = ConfigDict(frozen=True)

    name: str
    passed: bool
    detail: str
    """Evidence a reader can act on: hashes, run verdicts, the steps or checks at fault."""


class MutantRecord(BaseModel):
    """A generated mutant that was not killed: a survivor, or one whose replay got no verdict."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    id: str
    mutant_class: str = Field(alias="class")
    """The operator that made it (``arg``, ``drop``, ``move``, ...)."""
    description: str
    """What differs from the oracle, in one line."""
    equivalent: str | None = None
    """A survivor the task declares equivalent: the declared reason."""
    reason: str | None = None
    """A mutant that got no verdict: its terminal reason and evidence."""


class ClassCounts(BaseModel):
    """How the mutants of one operator fared."""

    model_config = ConfigDict(frozen=True)

    generated: int = 0
    killed: int = 0
    errors: int = 0
    survived: int = 0

    def __add__(self, other: ClassCounts) -> ClassCounts:
        return ClassCounts(
            generated=self.generated + other.generated,
            killed=self.killed + other.killed,
            errors=self.errors + other.errors,
            survived=self.survived + other.survived,
        )


class MutationFigures(BaseModel):
    """The result of grader mutation testing on one task (or summed over a suite)."""

    model_config = ConfigDict(frozen=True)

    generated: int
    """Distinct mutants replayed (after the cap)."""
    killed: int
    """Mutants that failed as an agent would (``agent_failure/...``)."""
    errors: int
    """Mutants whose replay got no verdict (``environment_failure``, ``grader_failure``)."""
    per_class: dict[str, ClassCounts]
    """Counts per operator, every operator listed (zero when it generated nothing)."""
    survivors: list[MutantRecord] = Field(default_factory=list)
    """Mutants that passed, declared equivalents included (with their reason)."""
    errored: list[MutantRecord] = Field(default_factory=list)
    stale_equivalents: list[str] = Field(default_factory=list)
    """Declared equivalent mutants that no longer survive (killed, or not generated)."""
    candidates: int | None = None
    """Set when the cap cut the mutants: how many distinct ones there were."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def equivalent(self) -> int:
        """Survivors the task declares equivalent (correct behaviour, not grader gaps)."""
        return sum(s.equivalent is not None for s in self.survivors)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def score(self) -> float | None:
        """The mutation score: killed / (generated - declared equivalents), as mutation testing
        defines it; 1.0 means every mutant is killed or declared equivalent. None when there is
        nothing to kill."""
        counted = self.generated - self.equivalent
        return self.killed / counted if counted else None

    @property
    def undeclared(self) -> list[MutantRecord]:
        """Survivors the task does not declare equivalent."""
        return [s for s in self.survivors if s.equivalent is None]

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True)


class TaskValidity(BaseModel):
    """Every check of one task; the task is valid only when each of them passed."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    checks: list[CheckOutcome]
    mutation: MutationFigures | None = None
    """Grader mutation testing's figures (None when it is off or could not run)."""
    unexercised: list[str] | None = None
    """The task's own outcome assertions (``outcome:<id>``) and hard constraints
    (``constraint:<id>``) no replay of the proof saw fail, which may be always true (None when
    the suite sets ``exercised_checks: off``)."""
    shared_failed: dict[str, bool] | None = None
    """Each constraint the suite's constraint sets give the task, and whether a replay of the
    proof saw it fail (:attr:`SuiteValidity.unexercised_shared` reads them together)."""
    settled: bool = Field(default=True, exclude=True)
    """False for an invalid task whose proof met a replay with no verdict (an environment or
    grader failure: a tool past its time limit on a busy machine) or a check that raised:
    its failure may be the machine's, so it is not cached, and is proven again next time."""

    @property
    def valid(self) -> bool:
        return all(check.passed for check in self.checks)

    @property
    def failures(self) -> list[CheckOutcome]:
        return [check for check in self.checks if not check.passed]

    @property
    def warnings(self) -> list[str]:
        """What a reader should act on though the task is not failed for it: checks never seen
        failing, under ``exercised_checks: report``."""
        exercised = next((c for c in self.checks if c.name == "exercised"), None)
        if not self.unexercised or exercised is None or not exercised.passed:
            return []
        return [exercised.detail]

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
            "mutation": self.mutation.to_dict() if self.mutation is not None else None,
            "unexercised": self.unexercised,
            "shared_failed": self.shared_failed,
            "warnings": self.warnings,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskValidity:
        """Read back :meth:`to_dict` (``valid``, ``warnings`` and ``score`` are derived, so not
        read)."""
        return cls.model_validate(
            {
                "task_id": data["task_id"],
                "checks": data["checks"],
                "mutation": data.get("mutation"),
                "unexercised": data.get("unexercised"),
                "shared_failed": data.get("shared_failed"),
            }
        )


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

    @property
    def unexercised_shared(self) -> list[str]:
        """The constraints of the suite's constraint sets that no replay of any task including
        them saw fail (judged over the tasks validated together): each may be always true."""
        seen: dict[str, bool] = {}
        for task in self.tasks:
            for name, failed in (task.shared_failed or {}).items():
                seen[name] = seen.get(name, False) or failed
        return [name for name, failed in seen.items() if not failed]

    @property
    def mutation(self) -> MutationFigures | None:
        """Mutation figures summed over the tasks that have them (None if none has)."""
        figures = [task.mutation for task in self.tasks if task.mutation is not None]
        if not figures:
            return None
        classes = list(figures[0].per_class)
        return MutationFigures(
            generated=sum(f.generated for f in figures),
            killed=sum(f.killed for f in figures),
            errors=sum(f.errors for f in figures),
            per_class={
                name: sum((f.per_class.get(name, ClassCounts()) for f in figures), ClassCounts())
                for name in classes
            },
            survivors=[s for f in figures for s in f.survivors],
        )

    def to_dict(self) -> dict[str, Any]:
        mutation = self.mutation
        totals = {"generated", "killed", "errors", "equivalent", "score", "per_class"}
        return {
            "suite": self.suite,
            "suite_hash": self.suite_hash,
            "tasks": [task.to_dict() for task in self.tasks],
            "mutation": None if mutation is None else mutation.model_dump(include=totals),
            "unexercised_shared": self.unexercised_shared,
        }
