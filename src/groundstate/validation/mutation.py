"""Grader mutation testing: near misses of every oracle must fail.

The probes of ``grader_sensitivity`` only leave whole oracle steps out. Mutation testing asks
more of a grader: from each passing oracle, :mod:`~groundstate.validation.mutants` generates
near-miss trajectories (a wrong argument, a missing or late check, a confirmation that names
other values or asks about another kind of change, a value taken from a tool instead of the
user, a forbidden write undone, a repeated write, a false final reply), and each is replayed
as a full attempt. A mutant is

- **killed** when its attempt fails as an agent's would (``agent_failure/...`` or
  ``harness_compatibility_failure``);
- an **error** when its attempt gets no verdict (``environment_failure/...``,
  ``grader_failure``): reported, neither killed nor surviving;
- a **survivor** when it passes: the grader accepts a trajectory that differs from the oracle
  in a way that is usually a mistake. A task declares the survivors that are correct after all
  in ``equivalent_mutants``, each with a reason.

Identical mutants are replayed once. At most :data:`MAX_MUTANTS` are replayed per task, taken
from the operators in turn so that every operator is represented when the cap bites.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from contextlib import closing
from dataclasses import replace

from groundstate.records import AgentRun
from groundstate.report.numbers import fraction
from groundstate.rounding import counted
from groundstate.spec.canonical import canonical_json
from groundstate.spec.solution import Step
from groundstate.spec.strict import MAX_SECONDS, MAX_STEPS
from groundstate.validation.fixture_values import FixtureValues
from groundstate.validation.mutants import (
    CLASSES,
    OPERATORS,
    Context,
    Mutant,
    oracle_of,
    respell_mutants,
)
from groundstate.validation.replay import SEED, Proof, describe_run
from groundstate.validation.results import ClassCounts, MutantRecord, MutationFigures

MAX_MUTANTS = 200
"""The most mutants replayed per task (a replay takes some 5-20 ms)."""
KILLING_REASONS = ("agent_failure", "harness_compatibility_failure")
"""Terminal reasons that kill a mutant: the attempt failed as an agent's would."""


LIMITS = frozenset({"agent_failure/step_limit", "agent_failure/time_limit", "agent_failure/budget"})
"""Terminal reasons of an attempt stopped for its length or cost: a mutant stopped so was not
graded, and its stop is no proof the grader catches it (the same near miss made in fewer
steps, by an agent reading less, is graded). It is replayed with the limits lifted."""
LIFTED_TIME = 4
"""How many times the task's time limit a mutant stopped by a limit is replayed with."""
PAST_LIMITS = (
    "stopped by the task's step or time limit, it passes when replayed past them: "
    "the limit, not the grader, stopped it"
)
"""Added to the description of a survivor found past the limits, for the author."""


class NothingToMutate(Exception):
    """No oracle passes, so no near miss of one proves anything."""


def generate(proof: Proof) -> tuple[list[Mutant], int]:
    """The distinct mutants of every passing oracle of the task, capped; and how many there were.

    Raises :class:`NothingToMutate` when the task has no oracle or one of them fails.
    """
    oracles = proof.of_kind("oracle")
    if not oracles:
        raise NothingToMutate("no oracle to mutate")
    with closing(proof.make_env(proof.task, proof.suite)) as env:
        env.reset(seed=SEED)
        fixture = FixtureValues(env.snapshot())
    per_class: dict[str, list[Mutant]] = {name: [] for name in CLASSES}
    known = {_key(s.steps) for s in proof.solutions.values() if s.kind != "known_bad"}
    ids: set[str] = set()
    for name, solution in oracles.items():
        run = proof.run(name)
        if not run.success:
            raise NothingToMutate(f"{name} does not pass, so its mutants prove nothing")
        ctx = Context(oracle_of(name, solution.steps, run), proof.task, proof.suite.tools, fixture)
        for operator in OPERATORS.values():
            _add(operator(ctx), per_class, known, ids)
    for name, solution in proof.of_kind("known_bad").items():
        if (solution.fails_by or "").startswith("constraint:"):
            _add(respell_mutants(name, solution.steps), per_class, known, ids)
    distinct = sum(len(mutants) for mutants in per_class.values())
    return _take_in_turn(list(per_class.values()), MAX_MUTANTS), distinct


def _add(
    mutants: Iterable[Mutant], per_class: dict[str, list[Mutant]], known: set[str], ids: set[str]
) -> None:
    """Keep each new mutant under its class; a correct route or a repeat is no near miss."""
    for mutant in mutants:
        key = _key(mutant.steps)
        if key not in known and mutant.id not in ids:
            known.add(key)
            ids.add(mutant.id)
            per_class[mutant.mutant_class].append(mutant)


def _key(steps: Iterable[Step]) -> str:
    return canonical_json([step.model_dump(exclude_defaults=True) for step in steps])


def _take_in_turn(groups: Sequence[list[Mutant]], limit: int) -> list[Mutant]:
    """Up to *limit* mutants, one of each group in turn, kept in generation order."""
    rounds = itertools.zip_longest(*groups)
    chosen = {id(m) for m in itertools.islice((m for r in rounds for m in r if m), limit)}
    return [m for group in groups for m in group if id(m) in chosen]


def mutation_test(proof: Proof) -> MutationFigures:
    """Generate the task's mutants, replay each, and count them."""
    mutants, distinct = generate(proof)
    declared = {e.mutant: e.reason for e in proof.task.equivalent_mutants}
    oracle_states = {proof.run(name).final_state_hash for name in proof.of_kind("oracle")}
    counts = {name: ClassCounts() for name in CLASSES}
    survivors: list[MutantRecord] = []
    errored: list[MutantRecord] = []
    for mutant in mutants:
        run = proof.run_steps(list(mutant.steps))
        record = MutantRecord(
            id=mutant.id, mutant_class=mutant.mutant_class, description=mutant.description
        )
        if run.terminal_reason in LIMITS:  # stopped, not graded: the grader's verdict is asked
            run = _past_the_limits(proof, list(mutant.steps))
            if run.success:
                record = record.model_copy(
                    update={"description": f"{record.description}; {PAST_LIMITS}"}
                )
        if run.success:
            outcome = ClassCounts(generated=1, survived=1)
            reason = declared.get(mutant.id)
            if reason is None and _changed_nothing(mutant, run, oracle_states):
                reason = REFUSED_EXTRA
            survivors.append(record.model_copy(update={"equivalent": reason}))
        elif run.terminal_reason.split("/")[0] in KILLING_REASONS and (
            run.terminal_reason not in LIMITS
        ):
            outcome = ClassCounts(generated=1, killed=1)
        else:
            outcome = ClassCounts(generated=1, errors=1)
            errored.append(record.model_copy(update={"reason": describe_run(run)}))
        counts[mutant.mutant_class] += outcome
    surviving = {s.id for s in survivors}
    return MutationFigures(
        generated=len(mutants),
        killed=sum(c.killed for c in counts.values()),
        errors=len(errored),
        per_class=counts,
        survivors=survivors,
        errored=errored,
        stale_equivalents=[m for m in declared if m not in surviving],
        candidates=distinct if distinct > len(mutants) else None,
    )


REFUSED_EXTRA = "the unasked call was refused: the final state is the oracle's (equivalent)"
"""Why an ``extra`` mutant that changed nothing is equivalent without a declaration: the
tool refused the unasked write (the room taken, the record locked), so no grader of the
state can tell it from the oracle, and a suite's authors need not list every such call."""


def _changed_nothing(mutant: Mutant, run: AgentRun, oracle_states: set[str | None]) -> bool:
    """An ``extra`` near miss whose final state is an oracle's: its unasked write was refused."""
    return (
        mutant.mutant_class == "extra"
        and run.final_state_hash is not None
        and run.final_state_hash in oracle_states
    )


def _past_the_limits(proof: Proof, steps: list[Step]) -> AgentRun:
    """A replay of *steps* with the task's step limit lifted and its time limit
    :data:`LIFTED_TIME` times longer, so that the grader, not a stop, gives the verdict.

    A mutant adds steps to the oracle (a repeated write, a confirmation asked again): a task
    whose ``step_limit`` is the oracle's length had every such mutant "killed" by the step
    limit, with a grader that accepts the near miss (a score of 1.00 for a grader that
    counts no transfers). A replay still stopped is a mutant without a verdict."""
    task = proof.task
    lifted = task.model_copy(
        update={
            "step_limit": MAX_STEPS,
            "time_limit": min(MAX_SECONDS, task.time_limit * LIFTED_TIME),
        }
    )
    unlimited = replace(proof, task=lifted, _runs={})
    run = unlimited.run_steps(steps)
    proof.unsettled |= unlimited.unsettled
    proof.seen_failing |= unlimited.seen_failing
    return run


def judge(figures: MutationFigures, mode: str) -> tuple[bool, str]:
    """The ``mutation`` check's verdict and detail under the suite's ``mutation_testing``.

    ``required`` fails on any survivor not declared equivalent; ``report`` lists them and
    passes. Errors and stale declarations are reported, never failed on.
    """
    parts = [summary(figures)]
    undeclared = figures.undeclared
    if undeclared:
        listed = "; ".join(f"{s.id} ({s.description})" for s in undeclared)
        parts.append(f"{counted(len(undeclared), 'surviving mutant')}: {listed}")
    equivalent = [s for s in figures.survivors if s.equivalent is not None]
    if equivalent:
        listed = "; ".join(f"{s.id} ({s.equivalent})" for s in equivalent)
        parts.append(f"declared equivalent: {listed}")
    if figures.errored:
        listed = "; ".join(f"{s.id}: {s.reason}" for s in figures.errored)
        parts.append(f"no verdict (neither killed nor surviving): {listed}")
    if figures.stale_equivalents:
        parts.append(
            "warning: declared equivalent but no longer surviving (remove from "
            f"equivalent_mutants): {', '.join(figures.stale_equivalents)}"
        )
    if undeclared and mode == "report":
        parts.append("not failed: the suite sets mutation_testing: report")
    return not (undeclared and mode == "required"), "; ".join(parts)


def summary(figures: MutationFigures) -> str:
    """One line: the score, what was killed of what, and each operator's share. A score
    below 1 never prints as 1.00 (``>0.99``: 518 of 520 killed is not all)."""
    score = "n/a" if figures.score is None else fraction(figures.score, 2)
    classes = ", ".join(
        f"{name} {counts.killed}/{counts.generated}" for name, counts in figures.per_class.items()
    )
    capped = (
        f" (capped: {figures.generated} of {figures.candidates} distinct mutants replayed)"
        if figures.candidates is not None
        else ""
    )
    equivalent = f", {figures.equivalent} declared equivalent" if figures.equivalent else ""
    return (
        f"score {score}: {figures.killed} of {counted(figures.generated, 'mutant')} killed"
        f"{equivalent}, {figures.errors} without a verdict{capped} "
        f"(killed/generated by class: {classes})"
    )
