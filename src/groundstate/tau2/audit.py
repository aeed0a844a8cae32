"""The audit of a converted τ² suite: what validation proved about each task, in figures.

For every τ² task it says whether the converted task is *proven* (every validation check
passed), whether a do-nothing agent or an agent that only claims to have acted passes it,
which near misses of its oracle survive grading (by mutation class), which calls the importer
had to add to τ²'s gold list, and, for a task that could not be converted, why.

Straw agents: validation runs them on every task whose oracle changes the state; on a task
whose correct outcome is no change it does not (they pass by design unless the task requires
the agent to say something), so the audit runs them there itself.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, Field

from groundstate.agents.base import Session
from groundstate.agents.python import FunctionAgent
from groundstate.spec.suite import Suite
from groundstate.tau2.importer import ImportReport
from groundstate.validation import SuiteValidity, TaskValidity
from groundstate.validation.replay import Proof

CLAIM = "I have completed your request."
"""What the claims-only agent says (validation's own straw agent says the same)."""


class TaskAudit(BaseModel):
    task_id: str
    proven: bool
    """Every validation check passed (mutation survivors are listed, not failed, under
    ``mutation_testing: report``)."""
    failed_checks: dict[str, str] = Field(default_factory=dict)
    expect_no_change: bool
    do_nothing_passes: bool
    claims_only_passes: bool
    survivors: list[str] = Field(default_factory=list)
    """Undeclared surviving mutants (empty when mutation testing was off)."""
    mutation_score: float | None = None
    added_calls: list[str] = Field(default_factory=list)
    """Reads the importer added to τ²'s gold list (see groundstate.tau2.replay)."""
    notes: list[str] = Field(default_factory=list)


class Tau2Audit(BaseModel):
    source_tasks: int
    unconverted: dict[str, str] = Field(default_factory=dict)
    """τ² task id -> why it could not be converted."""
    tasks: list[TaskAudit]
    mutation_tested: bool

    @property
    def proven(self) -> list[str]:
        return [t.task_id for t in self.tasks if t.proven]

    @property
    def not_proven(self) -> dict[str, str]:
        """Task id -> the checks it failed, with their evidence."""
        return {
            t.task_id: "; ".join(f"{name}: {detail}" for name, detail in t.failed_checks.items())
            for t in self.tasks
            if not t.proven
        }

    def passed_by(self, straw: str) -> list[str]:
        """Tasks a straw agent (``do_nothing`` or ``claims_only``) passes."""
        return [t.task_id for t in self.tasks if getattr(t, f"{straw}_passes")]

    @property
    def with_survivors(self) -> list[str]:
        return [t.task_id for t in self.tasks if t.survivors]

    def survivors_by_class(self) -> dict[str, int]:
        counts = Counter(s.split(":")[0] for t in self.tasks for s in t.survivors)
        return dict(sorted(counts.items()))

    def completed(self) -> list[str]:
        """Tasks whose gold list the importer completed with reads."""
        return [t.task_id for t in self.tasks if t.added_calls]


def audit_suite(suite: Suite, validity: SuiteValidity, report: ImportReport) -> Tau2Audit:
    """The audit of *suite* (as imported by *report*) from its validation *validity*."""
    notes = {n.task_id: n.notes for n in report.notes if n.task_id is not None}
    tasks = [_task_audit(suite, v, notes.get(v.task_id, [])) for v in validity.tasks]
    return Tau2Audit(
        source_tasks=report.source_tasks,
        unconverted=report.unconverted,
        tasks=tasks,
        mutation_tested=any(v.mutation is not None for v in validity.tasks),
    )


def _task_audit(suite: Suite, validity: TaskValidity, notes: list[str]) -> TaskAudit:
    task = suite.tasks[validity.task_id]
    do_nothing, claims = _straw_verdicts(suite, validity)
    mutation = validity.mutation
    return TaskAudit(
        task_id=validity.task_id,
        proven=validity.valid,
        failed_checks={c.name: c.detail for c in validity.failures},
        expect_no_change=task.expect_no_change,
        do_nothing_passes=do_nothing,
        claims_only_passes=claims,
        survivors=[s.id for s in mutation.undeclared] if mutation else [],
        mutation_score=mutation.score if mutation else None,
        added_calls=[n.removeprefix("added ") for n in notes if n.startswith("added ")],
        notes=[n for n in notes if not n.startswith("added ")],
    )


def _straw_verdicts(suite: Suite, validity: TaskValidity) -> tuple[bool, bool]:
    """Whether the do-nothing and the claims-only agent pass the task."""
    task = suite.tasks[validity.task_id]
    if not task.expect_no_change:
        detail = validity.check("discriminating").detail
        return (
            "the do-nothing agent passes" in detail,
            "the claims-without-acting agent passes" in detail,
        )
    proof = Proof(suite, task)
    return (
        proof.run_agent(FunctionAgent(_do_nothing)).success,
        proof.run_agent(FunctionAgent(_claims_without_acting)).success,
    )


async def _do_nothing(session: Session) -> None:
    return None


async def _claims_without_acting(session: Session) -> str:
    await session.say(CLAIM)
    return CLAIM


def summary_lines(audit: Tau2Audit) -> list[str]:
    """The audit's figures, one per line, as the CLI prints them."""
    total = len(audit.tasks)
    lines = [
        f"τ² tasks: {audit.source_tasks}; converted: {total}; "
        f"not converted: {len(audit.unconverted)}",
        f"proven: {len(audit.proven)} of {total}",
        f"do-nothing agent passes: {len(audit.passed_by('do_nothing'))} "
        f"({', '.join(audit.passed_by('do_nothing')) or 'none'})",
        f"claims-only agent passes: {len(audit.passed_by('claims_only'))} "
        f"({', '.join(audit.passed_by('claims_only')) or 'none'})",
        f"gold lists completed with reads: {len(audit.completed())}",
    ]
    if audit.mutation_tested:
        by_class = ", ".join(f"{k} {v}" for k, v in audit.survivors_by_class().items())
        lines.append(
            f"tasks with surviving mutants: {len(audit.with_survivors)} "
            f"(survivors by class: {by_class or 'none'})"
        )
    lines += [f"not converted: τ² task {tid}: {why}" for tid, why in audit.unconverted.items()]
    lines += [f"not proven: {tid}: {why}" for tid, why in audit.not_proven.items()]
    return lines


def to_dict(audit: Tau2Audit) -> dict[str, Any]:
    """The audit as JSON-ready data, its derived lists included."""
    return audit.model_dump() | {
        "proven": audit.proven,
        "not_proven": audit.not_proven,
        "do_nothing_passes": audit.passed_by("do_nothing"),
        "claims_only_passes": audit.passed_by("claims_only"),
        "with_survivors": audit.with_survivors,
        "survivors_by_class": audit.survivors_by_class(),
        "completed": audit.completed(),
    }
