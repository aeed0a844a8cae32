"""Run records: one ``AgentRun`` per attempt, with the reference chapter's field names."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field

from groundstate.trace import RECORDABLE, TraceEvent, recordable

FORMAT_VERSION = 2
"""1: the first format. 2: trace messages carry ``final`` and tool calls their row-level
``writes`` (both defaulted when a format-1 record is read)."""
INVALID_REASONS = ("environment_failure", "grader_failure")
"""Terminal reasons that make an attempt invalid: rerun under the batch's policy, never scored."""
JUDGED = "judge"
"""The kind of an outcome assertion judged rather than read from state: its verdict never
decides ``success``, so a judge that could not judge leaves the attempt valid (its ``error``
set), and every report counts such judge errors (:attr:`AgentRun.judge_errors`)."""


_new, _set = object.__new__, object.__setattr__  # bound once: CheckResult.trusted is hot


class CheckResult(BaseModel):
    """The verdict of one outcome assertion or hard constraint, with its evidence."""

    id: str
    kind: str
    passed: bool
    evidence: Annotated[dict[str, Any], RECORDABLE] = Field(default_factory=dict)
    """May quote the agent's text."""
    error: Annotated[str | None, RECORDABLE] = None
    """Set when the check itself could not be evaluated: a grader failure, but for a judged
    assertion (kind ``judge``), whose error leaves the attempt to the other checks."""

    @classmethod
    def trusted(
        cls,
        id: str,
        kind: str,
        passed: bool,
        evidence: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> CheckResult:
        """The model ``CheckResult(...)`` gives, built without validating: for the grader's own
        results, whose values already have the fields' types (a few times cheaper, and a task
        makes dozens per attempt). Evidence and error still go through :func:`recordable`;
        omitted ones are unset, as in the constructor."""
        given = {"id", "kind", "passed"}
        if evidence is not None:
            given.add("evidence")
        if error is not None:
            given.add("error")
        # What BaseModel.model_construct sets, without its per-field alias lookups.
        result = _new(cls)
        _set(
            result,
            "__dict__",
            {
                "id": id,
                "kind": kind,
                "passed": passed,
                "evidence": recordable(evidence) if evidence else {},
                "error": None if error is None else recordable(error),
            },
        )
        _set(result, "__pydantic_fields_set__", given)
        _set(result, "__pydantic_extra__", None)
        _set(result, "__pydantic_private__", None)
        return result


class Usage(BaseModel):
    input_tokens: int | None = 0
    """``None`` when unknown (an imported file that does not count it), never 0 for that."""
    output_tokens: int | None = 0
    """``None`` when unknown, as ``input_tokens``."""


class CountedUsage(Usage):
    """The tokens an attempt run here reports: counted from 0, always known."""

    input_tokens: int = 0
    output_tokens: int = 0


class AgentRun(BaseModel):
    """The record of one attempt."""

    format_version: int = FORMAT_VERSION
    run_id: str
    batch_id: str
    task_id: str
    task_revision: int
    grader_revision: str
    system_spec_hash: str
    attempt: int
    """1-based attempt number within the task."""
    seed: int
    retry: int = 0
    """0 for the first try of an attempt; n for its n-th rerun after an invalid try."""
    retry_of: str | None = None
    """The run id of the invalid try this run reruns."""
    started_at: datetime
    initial_state_hash: str | None
    observation_action_log: list[TraceEvent]
    final_state_hash: str | None
    terminal_reason: str
    """``success``, ``agent_failure/<sub>``, ``harness_compatibility_failure``,
    ``environment_failure/<sub>`` or ``grader_failure``."""
    success: bool
    """Required success ``Y = G * prod(C_j)``."""
    outcome_assertion_results: list[CheckResult]
    constraint_results: list[CheckResult]
    partial_score: float | None
    """Weighted rubric score in [0, 1], reported beside ``success``, never instead of it."""
    cost: float | None
    """Dollars; ``None`` when unknown (an imported file that gives none), never 0 for that."""
    usage: Usage = Field(default_factory=Usage)
    latency: float | None
    """Wall-clock seconds of the attempt, reset to grading; ``None`` when unknown."""
    final_message: Annotated[str | None, RECORDABLE] = None
    infrastructure_status: Annotated[dict[str, Any], RECORDABLE]
    """Health probes before and after, and the exception behind any invalid attempt."""
    artifact_locations: dict[str, str]
    """Artifact name -> ``sha256:<digest>`` in the run store."""

    @property
    def valid(self) -> bool:
        return self.terminal_reason.split("/")[0] not in INVALID_REASONS

    @property
    def judge_errors(self) -> int:
        """Judged assertions whose judge could not judge (the store's outcome columns count
        them alike: :data:`groundstate.store.JUDGE_ERRORS_SQL`)."""
        return sum(r.kind == JUDGED and r.error is not None for r in self.outcome_assertion_results)
