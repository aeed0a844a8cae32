"""Agreement between two graders (or grader revisions) on the same attempts.

Two batches are paired attempt by attempt, (task, attempt number), over the counted try of
each: for a grader revision checked against the previous one, :func:`regrade` replays a
batch's recorded trajectories under the suite's current grader, or run the same system with
the same seed under each revision, or import both graders' verdicts on one set of runs. The
comparison is on the verdict (``success``: ``true`` or ``false``), the terminal reason, or its
class (before ``/``).

Only attempts both sides judged count: an invalid attempt (an environment or harness failure)
was graded by no one, so "invalid" against "invalid" is no agreement of two graders, and
"invalid" against a verdict no disagreement of theirs. Such pairs are counted apart (invalid
on both sides, on A's side only, on B's) and listed, as every other figure leaves invalid
attempts out of its denominator (pass@k, the success rate). The share agreeing carries the
interval rule of :mod:`groundstate.stats.intervals`, tasks as clusters: two graders' verdicts
on the attempts of one task stand or fall together (a grader bug is one task's, all of its
attempts).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from groundstate.agents.scripted import ScriptedAgent
from groundstate.agreement import Agreement, agreement
from groundstate.analysis import final_runs
from groundstate.errors import GroundstateError
from groundstate.records import AgentRun
from groundstate.spec.suite import Suite
from groundstate.spec.system import SystemSpec
from groundstate.stats.intervals import Estimate, make_estimate, printed_exactly
from groundstate.testing import attempt, scripted_system
from groundstate.trace import MessageEvent
from groundstate.users import RecordedUser
from groundstate.validation.regress import observed_trajectory

Field = Literal["success", "terminal_reason", "reason_class"]
FIELDS: tuple[Field, ...] = ("success", "terminal_reason", "reason_class")


@dataclass(frozen=True)
class VerdictAgreement:
    """How often two graders agree on the attempts both judged, chance-corrected."""

    on: str
    paired: int
    """(task, attempt) pairs in both batches: ``judged`` + ``invalid_both`` +
    ``invalid_a_only`` + ``invalid_b_only``."""
    judged: int
    """Paired attempts valid on both sides: every figure below is over these."""
    invalid_both: int
    invalid_a_only: int
    invalid_b_only: int
    only_in_a: int
    only_in_b: int
    share: Estimate | None
    """The share of judged pairs agreeing (``agreement.percent_agreement``) with its interval
    (tasks as clusters, each task weighted by its judged pairs); None with no judged pair."""
    agreement: Agreement
    confusion: dict[str, dict[str, int]]
    """A's value -> B's value -> judged attempts."""
    disagreements: list[dict[str, Any]]
    """Each judged attempt the two graders disagree on: task, attempt, both values, both run
    ids."""
    one_sided: list[dict[str, Any]]
    """Each paired attempt invalid on one side only (as ``disagreements``): not judged."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def verdict(run: AgentRun, on: Field) -> str:
    """*run*'s value on *on*. An invalid attempt has no verdict: on ``success`` it is
    ``invalid``, never ``false`` (a harness failure is no grader's call to agree with, nor
    to disagree with: :func:`verdict_agreement` leaves it out of every figure)."""
    if on == "success":
        return str(run.success).lower() if run.valid else "invalid"
    if on == "terminal_reason":
        return run.terminal_reason
    return run.terminal_reason.split("/")[0]


def verdict_agreement(
    a_runs: Sequence[AgentRun],
    b_runs: Sequence[AgentRun],
    on: Field = "success",
    *,
    refuse_unpaired: bool = True,
) -> VerdictAgreement:
    """Pair *a_runs* and *b_runs* by (task, attempt) and measure agreement on *on* over the
    pairs both sides judged (valid on both: module docstring). Two sets of runs that share
    no (task, attempt) are refused, unless *refuse_unpaired* is false (the counts of a side
    with no estimate: nothing paired, ``share`` None)."""
    a = {(r.task_id, r.attempt): r for r in final_runs(list(a_runs))}
    b = {(r.task_id, r.attempt): r for r in final_runs(list(b_runs))}
    shared = sorted(a.keys() & b.keys())
    if not shared and refuse_unpaired:
        raise GroundstateError("the two batches share no (task, attempt): nothing to pair")
    judged = [k for k in shared if a[k].valid and b[k].valid]
    pairs = [(verdict(a[k], on), verdict(b[k], on)) for k in judged]
    confusion: dict[str, dict[str, int]] = {}
    for (x, y), count in sorted(Counter(pairs).items()):
        confusion.setdefault(x, {})[y] = count

    def listed(keys: Sequence[tuple[str, int]], keep: Any) -> list[dict[str, Any]]:
        return [
            {"task_id": k[0], "attempt": k[1], "a": verdict(a[k], on), "b": verdict(b[k], on),
             "a_run": a[k].run_id, "b_run": b[k].run_id}
            for k in keys
            if keep(k)
        ]  # fmt: skip

    return VerdictAgreement(
        on=on,
        paired=len(shared),
        judged=len(judged),
        invalid_both=sum(not a[k].valid and not b[k].valid for k in shared),
        invalid_a_only=sum(not a[k].valid and b[k].valid for k in shared),
        invalid_b_only=sum(a[k].valid and not b[k].valid for k in shared),
        only_in_a=len(a.keys() - b.keys()),
        only_in_b=len(b.keys() - a.keys()),
        share=_share(judged, pairs),
        agreement=agreement([list(p) for p in pairs]),
        confusion=confusion,
        disagreements=listed(judged, lambda k: verdict(a[k], on) != verdict(b[k], on)),
        one_sided=listed(shared, lambda k: a[k].valid != b[k].valid),
    )


def _share(judged: Sequence[tuple[str, int]], pairs: Sequence[tuple[str, str]]) -> Estimate | None:
    """The share of the *judged* pairs whose two values agree, with the interval rule's
    interval over tasks (each task's share weighted by its judged pairs: the weighted mean is
    the pooled share and its clustered SE the ratio estimator's), or None without a pair."""
    if not judged:
        return None
    tasks: dict[str, list[int]] = {}
    for (task, _), (x, y) in zip(judged, pairs, strict=True):
        tasks.setdefault(task, []).append(x == y)
    sizes = [len(v) for v in tasks.values()]
    shares = [sum(v) / len(v) for v in tasks.values()]
    found = make_estimate(np.asarray(shares), np.asarray(sizes, dtype=float), sizes)
    agreeing = sum(x == y for x, y in pairs)
    return printed_exactly(found, lambda: Fraction(agreeing, len(pairs)))


def regrade(
    runs: Sequence[AgentRun], suite: Suite, system: SystemSpec | None = None
) -> list[AgentRun]:
    """Replay each valid counted attempt's recorded trajectory on *suite* as it is now and
    grade it with the suite's current grader: the same behaviour under another grader.

    The replay is scripted (the recorded tool calls, with their arguments as recorded, an
    object or not, and messages, like ``validate`` replays solutions), under *system* (the
    one the runs were made by) as far as a script can be (see :func:`replay_system`), so a
    failure a script cannot reproduce (a time limit, a crash) may come out differently for
    that reason; invalid attempts and tasks the suite no longer has are left out. The user
    answers with the replies the run recorded (:class:`~groundstate.users.RecordedUser`),
    whoever played it: a model-driven user's conversation was replayed with the scripted
    user's answers, a conversation the graders never saw. Replayed records keep the task and
    attempt number of the run they replay.
    """
    imported = next((r for r in runs if r.infrastructure_status.get("imported")), None)
    if imported is not None:  # no trajectory: a replay of nothing would "disagree" everywhere
        raise GroundstateError(
            f"run {imported.run_id} was imported from another harness: it has no recorded "
            "trajectory to regrade; compare two batches instead"
        )
    replaying = replay_system(system)
    replayed = []
    for run in final_runs(list(runs)):
        if run.valid and run.task_id in suite.tasks:
            replay = ScriptedAgent(observed_trajectory(run), to_the_end=True)
            user = RecordedUser(recorded_replies(run))
            again = attempt(suite, run.task_id, replay, system=replaying, user=user).run
            replayed.append(again.model_copy(update={"attempt": run.attempt}))
    if not replayed:
        raise GroundstateError(f"no valid attempt of a task of suite {suite.name!r} to regrade")
    return replayed


def recorded_replies(run: AgentRun) -> list[str | None]:
    """The user's replies in *run*'s trace, in order (``None``: the user had left): each
    user message recorded at the step of an agent message (not the opening request)."""
    messages = [e for e in run.observation_action_log if isinstance(e, MessageEvent)]
    asked = {e.step for e in messages if e.role == "agent" and not e.final}
    return [e.text for e in messages if e.role == "user" and e.step in asked]


def replay_system(system: SystemSpec | None) -> SystemSpec:
    """The scripted system trajectories of *system* are replayed under: its budgets (its step
    limit, token and cost budgets stopped some of them: replayed under the task's limits
    alone, such an attempt went on to another verdict; not its time limit, which a script
    cannot reproduce) and its user when that is scripted (what the record names; the replies
    are the recorded ones, see :func:`regrade`)."""
    scripted = scripted_system("regrade")
    if system is None:
        return scripted
    budgets = system.budgets.model_copy(update={"time_limit": None})
    user = system.user_simulator if system.user_simulator.kind == "scripted" else None
    return scripted.model_copy(
        update={"budgets": budgets, "user_simulator": user or scripted.user_simulator}
    )
