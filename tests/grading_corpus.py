"""A corpus of retail traces and the constraint verdicts the grader gave them, for
test_grading_equivalence.py: speed work on the grader must not change one verdict.

The traces are the replays of every stored solution of examples/retail (oracles, known-bad
and alternatives), a spread of the near misses the mutation generator makes of each oracle,
and attempts of the rule-based careful and hasty agents (examples/systems). The expected
results were written by the grader as it stood before the trace index and the batched checks
(``python -m tests.grading_corpus`` writes the file again, ``--regrade`` only its verdicts for
the same traces; only do either on purpose).
"""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundstate.agents.python import load_agent
from groundstate.agents.scripted import ScriptedAgent
from groundstate.environments.base import StateDiff
from groundstate.episode import AttemptInfo, default_environment, run_attempt
from groundstate.grading.constraints import evaluate_constraints
from groundstate.grading.outcome import States
from groundstate.records import AgentRun, CheckResult
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.system import SystemSpec, load_system
from groundstate.testing import scripted_system
from groundstate.trace import AgentEvent, TraceEvent, agent_events, dump_jsonl, load_jsonl
from groundstate.validation.mutation import NothingToMutate, generate
from groundstate.validation.replay import Proof

HERE = Path(__file__).parent
EXAMPLES = HERE.parent / "examples"
CORPUS = HERE / "golden" / "retail_grading.jsonl.gz"
MUTANTS_PER_TASK = 14
AGENT_ATTEMPTS = 3


@dataclass(frozen=True)
class Case:
    task_id: str
    label: str
    """Where the trace came from: ``solution:<name>``, ``mutant:<id>``, ``careful:<n>``..."""
    events: list[AgentEvent]
    expected: list[dict[str, Any]]
    """The constraint results, as JSON."""


def load_cases() -> list[Case]:
    with gzip.open(CORPUS, "rt", encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    return [
        Case(row["task"], row["label"], agent_events(load_jsonl(row["trace"])), row["expected"])
        for row in rows
    ]


def constraint_results(suite: Suite, cases: list[Case]) -> Iterator[list[CheckResult]]:
    """Each case's constraint verdicts, graded against its task's initial state."""
    by_task: dict[str, list[Case]] = {}
    for case in cases:
        by_task.setdefault(case.task_id, []).append(case)
    for task_id, group in by_task.items():
        task = suite.tasks[task_id]
        with default_environment(task, suite) as env:
            env.reset(seed=0)
            s0 = env.snapshot()
            view = env.initial_view()
            for case in group:
                trace: list[TraceEvent] = list(case.events)
                states = States(view, view, s0, StateDiff(), suite.root, trace)
                yield evaluate_constraints(task.hard_process_constraints, trace, states)


def failing(suite: Suite, task: str, events: list[Any]) -> list[str]:
    """The ids of *task*'s constraints the trace *events* fails (none may be a grader
    error): for near-miss traces written in a test."""
    [results] = constraint_results(suite, [Case(task, "probe", events, [])])
    assert [r.id for r in results if r.error is not None] == []
    return [r.id for r in results if not r.passed]


def _runs(suite: Suite) -> Iterator[tuple[str, str, AgentRun]]:
    loop = asyncio.new_event_loop()
    scripted = scripted_system()

    def attempt(task_id: str, system: SystemSpec, agent: Any, seed: int) -> AgentRun:
        info = AttemptInfo(run_id=f"{task_id}-{seed}", batch_id="corpus", attempt=1, seed=seed)
        out = loop.run_until_complete(run_attempt(suite.tasks[task_id], suite, system, agent, info))
        return out.run

    for task_id, task in sorted(suite.tasks.items()):
        for name, solution in sorted(suite.solutions.get(task_id, {}).items()):
            agent = ScriptedAgent(solution.steps)
            yield task_id, f"solution:{name}", attempt(task_id, scripted, agent, 0)
        try:
            mutants, _ = generate(Proof(suite, task))
        except NothingToMutate:
            mutants = []
        stride = max(1, len(mutants) // MUTANTS_PER_TASK)
        for mutant in mutants[::stride][:MUTANTS_PER_TASK]:
            agent = ScriptedAgent(list(mutant.steps))
            yield task_id, f"mutant:{mutant.id}", attempt(task_id, scripted, agent, 0)
        for kind in ("careful", "hasty"):
            system = load_system(EXAMPLES / "systems" / f"{kind}.yaml")
            for seed in range(AGENT_ATTEMPTS):
                yield task_id, f"{kind}:{seed}", attempt(task_id, system, load_agent(system), seed)


def _write(rows: list[dict[str, Any]]) -> None:
    """The corpus file, the same bytes for the same rows (no file name or time in its header)."""
    text = "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows)
    with open(CORPUS, "wb") as raw, gzip.GzipFile("", "wb", 9, raw, mtime=0) as out:
        out.write(text.encode("utf-8"))


def write_corpus() -> None:
    suite = load_suite(EXAMPLES / "retail")
    rows = [
        {
            "task": task_id,
            "label": label,
            "trace": dump_jsonl(agent_events(run.observation_action_log)),
            "expected": [r.model_dump(mode="json") for r in run.constraint_results],
        }
        for task_id, label, run in _runs(suite)
    ]
    _write(rows)
    print(f"{len(rows)} traces written to {CORPUS}")


def regrade_corpus() -> None:
    """Write the corpus again with the same traces and the current grader's verdicts: for a
    grader fix that makes an old verdict right (say which, and why, in the commit)."""
    with gzip.open(CORPUS, "rt", encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    cases = load_cases()
    results = constraint_results(load_suite(EXAMPLES / "retail"), cases)
    changed = 0
    for row, found in zip(rows, results, strict=True):
        expected = [r.model_dump(mode="json") for r in found]
        changed += expected != row["expected"]
        row["expected"] = expected
    _write(rows)
    print(f"{changed} of {len(rows)} traces regraded differently in {CORPUS}")


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--regrade"]:
        regrade_corpus()
    else:
        write_corpus()
