"""The proofs a task must pass before its results are trusted (DESIGN principle 6).

A runnable task is not automatically a valid task. Each check below answers one question the
reference chapter asks of a task, with evidence:

``reset``
    Does the fixture build to the declared initial state, the same way twice and whatever the
    seed, and does reset restore it after an attempt changed rows, the clock and an
    AUTOINCREMENT counter?
``solvable``
    Does every oracle solution pass?
``other_routes``
    Does every alternative solution pass (the grader accepts more than the author's route)?
``discriminating``
    Do known-bad solutions fail, each for its declared reason, and do a do-nothing agent, an
    agent that only claims success and one that says the oracle's words without its tool calls
    fail? A task whose correct outcome is "no change" must say
    so and show instead that a harmful change fails.
``grader_sensitivity``
    Does the task fail when any state-changing step of the oracle is left out, when any
    table the oracle changed is put back as it was in its final state, and when any one of
    several rows it changed in a table is? If not, some change the oracle makes is checked by
    no assertion: a grader gap.
``grader_determinism``
    Does grading the final state of each oracle and alternative several times give the same
    verdict (the second and third time with chance near its lowest, then its highest values and
    the wall clock at the start, then the end of the century, so a verdict left to chance or
    read off the date is caught every time, :mod:`~groundstate.validation.skew`; and once more
    in another process under another ``PYTHONHASHSEED``, :mod:`.hash_order`), do two
    replays of each reach the same state, and does a replay as a batch's later attempt (after
    the proof's other replays, with the tools' chance and wall clock at each end of their
    range) get the first replay's verdict and state?
``mutation``
    Does every near miss of the oracle fail (grader mutation testing,
    :mod:`~groundstate.validation.mutation`): a wrong argument, a dropped or late check, a
    confirmation naming other values, a user-only value taken from a tool, a forbidden write
    undone, a repeated write, a false final reply? Survivors fail the task unless it declares
    them in ``equivalent_mutants``, or the suite sets ``mutation_testing: report`` (or ``off``).
``tool_robustness``
    Do the task's tools hold under any call their JSON Schemas allow
    (:mod:`~groundstate.validation.robustness`)? Hypothesis generates up to 50 seeded calls
    per tool, each on a freshly reset environment; a tool that raises anything but a
    ``ToolError`` or ``PermissionDenied`` (an invalid attempt an agent could cause at will)
    fails the task, reported with the minimal failing call, unless the suite sets
    ``tool_robustness: report`` (or ``off``).
``judge_agreement``
    Does every judged assertion (``judge:``) agree with the suite's human-labelled set for it,
    Cohen's kappa at least the assertion's ``min_agreement``
    (:mod:`~groundstate.validation.judges`)? Passes trivially for a task without judges.
``exercised``
    Did every outcome assertion and hard constraint fail in at least one of the replays above
    (a known-bad, a straw agent, an oracle step left out or a table put back, a mutant, a
    labelled item of a judge)? One that none of them failed may be always true: the task
    would look valid with a check that checks nothing. Listed as a warning (``exercised_checks:
    report``, the default), or failed (``required``, or ``validate --strict``). A constraint
    of the suite's constraint sets is asked of the suite as a whole: it is reported when no
    replay of any task that includes it made it fail (and, under ``required``, fails each of
    those tasks: :func:`~groundstate.validation.suite.validate_suite` judges it).
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable, Iterator
from contextlib import (
    AbstractContextManager,
    ExitStack,
    closing,
    contextmanager,
    nullcontext,
    suppress,
)
from pathlib import Path

from groundstate.agents.base import Session
from groundstate.environments.base import Environment
from groundstate.environments.registry import build_environment
from groundstate.episode import EnvironmentFactory, Verdict, default_environment
from groundstate.errors import SpecError
from groundstate.records import JUDGED, AgentRun, CheckResult
from groundstate.rounding import counted, inflected
from groundstate.spec.canonical import canonical_json, hash_path
from groundstate.spec.constraint_sets import own_constraints
from groundstate.spec.solution import Solution, Step
from groundstate.spec.suite import Suite
from groundstate.spec.task import AgentTask
from groundstate.testing import FunctionAgent
from groundstate.trace import MessageEvent, ToolCallEvent
from groundstate.users import NO
from groundstate.validation import hash_order
from groundstate.validation.judges import check_judge_agreement
from groundstate.validation.mutation import NothingToMutate, judge, mutation_test
from groundstate.validation.probes import mutate_like_an_agent, observe, unrestored_after_reset
from groundstate.validation.replay import (
    SEED,
    Around,
    Proof,
    describe_run,
    result_line,
    shorten,
    trace_line,
    verdict_line,
)
from groundstate.validation.results import CheckOutcome, TaskValidity
from groundstate.validation.robustness import CALLS_PER_TOOL, ToolCrash, find_crash
from groundstate.validation.skew import (
    CLOCK_ENDS,
    elsewhere,
    files_dated,
    fresh_checks,
    fresh_tools,
    listings_reversed,
    offline,
    outside_reads,
    retimed,
    rows_reversed,
    skewed,
    suite_namespaces,
    time_zone,
    tool_namespaces,
)
from groundstate.workdirs import scratch_dir

Finding = tuple[bool, str]
"""A check's verdict and its evidence."""

OTHER_SEEDS = (1, 2**31 - 1)
"""Seeds ``reset`` is also checked with: a batch's attempts reset with seeds of their own."""
GRADINGS = 3
"""How many times ``grader_determinism`` grades the same final state."""
GRADINGS_VARY = (
    "the gradings: as an attempt is graded (after a replay with the tools imported anew for the "
    "task); then with chance low, the wall clock at 2000-01-01 in a time zone of UTC+14 (summer "
    "time), no environment variable set, on a machine named groundstate-low (its process, user "
    "and processors numbered low, the user's home /home/groundstate-low, a folder for temporary "
    "files of its own, the de_DE locale, sys.argv ['groundstate-low'], the suite's files last "
    "changed at 2000-01-01), the network off, the trace's times and durations 1000 times "
    "shorter, the rows of queries without ORDER BY and the suite's folders listed in reverse "
    "order; then with chance high, the clock at 2099-12-31 in UTC-12, every environment "
    "variable set, on a machine named groundstate-high (the ja_JP locale, the files last changed "
    "at 2099-12-31), the network off, every call an hour "
    "longer and an hour between events, "
    "the check files imported anew (nothing earlier gradings left), objects numbered by id() in "
    "reverse order and another working folder"
)
"""What differs between those gradings, for the reader of a disagreement."""
GRADING_PAUSE = 0.01
"""Seconds between those gradings, so a grader reading the wall clock sees it move."""
CLAIM = "I have completed your request."
OFF_SCHEMA = frozenset({"invalid_arguments", "unknown_tool"})
"""The gateway's refusals of a call no agent can make as written."""
GRADED_FAILURES = frozenset({"agent_failure/incorrect_state", "agent_failure/constraint_violation"})
"""The terminal reasons of an attempt graded on the state its whole trajectory left: what a
known-bad declaring an outcome or a constraint must end with."""
_REBUILDS = itertools.count(1)


def validate_task(
    suite: Suite, task_id: str, *, make_env: EnvironmentFactory = default_environment
) -> TaskValidity:
    """Run every check on one task. *make_env* builds its environments (a seam for tests)."""
    if task_id not in suite.tasks:
        raise SpecError(suite.shown(suite.root / "tasks"), None, f"no task {task_id!r}")
    proof = Proof(suite, suite.tasks[task_id], make_env)
    checks = [_guarded(name, check, proof) for name, check in CHECKS.items()]
    valid = all(check.passed for check in checks)
    return TaskValidity(
        task_id=task_id,
        checks=checks,
        mutation=proof.mutation,
        unexercised=proof.unexercised,
        shared_failed=proof.shared_failed,
        settled=valid or not proof.unsettled,
    )


def _guarded(name: str, check: Callable[[Proof], Finding], proof: Proof) -> CheckOutcome:
    try:
        passed, detail = check(proof)
    except Exception as exc:  # one broken proof must not hide the evidence of the others
        passed, detail = False, f"could not be checked: {type(exc).__name__}: {exc}"
        proof.unsettled = True
    return CheckOutcome(name=name, passed=passed, detail=detail)


# --- reset -----------------------------------------------------------------------------------


def check_reset(proof: Proof) -> Finding:
    task, suite = proof.task, proof.suite
    with closing(proof.make_env(task, suite)) as env:
        built = env.reset(seed=SEED)
        problems, words = _declared_hash(task, built)
        again = _rebuilt_hash(proof)
        if again != built:
            problems.append(f"two fresh builds differ ({built[:12]} vs {again[:12]})")
        problems += _seed_problems(env, built)
        before = observe(env)
        changes = mutate_like_an_agent(env)
        unrestored = unrestored_after_reset(env, built, before, seed=SEED)
        if unrestored is not None:
            problems.append(f"after an attempt-like change ({', '.join(changes)}) {unrestored}")
    if problems:
        return False, "; ".join(problems)
    return True, f"{words}; two fresh builds agree; reset restored it after: {', '.join(changes)}"


def _seed_problems(env: Environment, built: str) -> list[str]:
    """Whether a reset with another seed builds another state; *env* is left reset with
    :data:`~groundstate.validation.replay.SEED`.

    Every proof resets with one seed, but each attempt of a batch resets with a seed of its
    own (``derive_seed``): an environment whose state follows the seed starts those attempts
    from a state no oracle, known-bad or mutant was replayed on (with a declared hash, every
    attempt but seed 0's fails its reset check)."""
    problems = []
    for seed in OTHER_SEEDS:
        seeded = env.reset(seed=seed)
        if seeded != built:
            problems.append(
                f"a reset with seed {seed} gives state {seeded[:12]}, not {built[:12]} (seed "
                f"{SEED}): each attempt of a batch resets with a seed of its own, so it would "
                "start from a state no proof covered; build the same state for every seed"
            )
            break
    restored = env.reset(seed=SEED)
    if restored != built:
        problems.append(
            f"a reset with seed {SEED} after one with another seed gives {restored[:12]}, "
            f"not {built[:12]}: the other seed's reset left state behind"
        )
    return problems


def _rebuilt_hash(proof: Proof) -> str:
    """The initial state hash of a second build of the fixture, made from scratch.

    Environments may cache a fixture's build per process; a copy in a new folder, with a
    whitespace tail no earlier copy had, has a new path and new content, so no cache keyed on
    either can answer for it, and the fixture really is built twice.
    """
    fixture = proof.suite.fixture_path(proof.task)
    with scratch_dir("groundstate-rebuild-") as folder:
        copy = Path(folder) / fixture.name
        if fixture.is_dir():  # a new path is enough: a folder's cache is keyed by path too
            shutil.copytree(fixture, copy, symlinks=True)
        else:
            copy.write_bytes(fixture.read_bytes() + b"\n" * next(_REBUILDS))
        task, config = proof.task, proof.suite.config
        with build_environment(
            config.environment,
            copy,
            clock=task.clock,
            permissions=task.permissions,
            options=config.environment_options,
        ) as env:
            return env.reset(seed=SEED)


def _declared_hash(task: AgentTask, built: str) -> tuple[list[str], str]:
    """Problems with the declared initial state hash, and how to describe it if there are none."""
    declared = task.reset_check.initial_state_hash
    if declared is None:
        return [], (
            f"initial state {built} is undeclared (pin it as reset_check.initial_state_hash)"
        )
    if declared != built:
        return [f"the fixture builds to {built}, but the task declares {declared}"], ""
    return [], f"initial state {built[:12]} as declared"


# --- solutions -------------------------------------------------------------------------------


def check_solvable(proof: Proof) -> Finding:
    oracles = proof.of_kind("oracle")
    if not oracles:
        return False, (
            f"no oracle solution: add solutions/{proof.task.task_id}/oracle.yaml, "
            "a trajectory that passes"
        )
    return _all_pass(proof, oracles)


def check_other_routes(proof: Proof) -> Finding:
    alternatives = proof.of_kind("alternative")
    if not alternatives:
        return True, "none declared"
    return _all_pass(proof, alternatives)


def _all_pass(proof: Proof, solutions: dict[str, Solution]) -> Finding:
    runs = {name: proof.run(name) for name in solutions}
    failing = [
        f"{name} fails: {describe_run(run)} [trace: {trace_line(run)}]"
        for name, run in runs.items()
        if not run.success
    ] + [
        f"{name} {problem}"
        for name, run in runs.items()
        if run.success and (problem := _against_the_user(run) or _off_schema(run)) is not None
    ]
    if failing:
        return False, "; ".join(failing)
    return True, ", ".join(
        f"{name} passes ({counted(len(solutions[name].steps), 'step')})" for name in runs
    )


def _off_schema(run: AgentRun) -> str | None:
    """The first call of a passing solution the gateway refused as no call of the task's
    tools (arguments its JSON Schema refuses, or a tool the task does not offer), or None.

    No agent can make that call as written, so a route that passes with it is not one an
    agent could take (``groundstate check`` refuses such an oracle or alternative before any
    proof; this holds the Python API, and refusals no schema states, such as integers past
    int64, to the same rule). A known-bad may replay a refused call: agents make them.
    """
    for event in run.observation_action_log:
        if isinstance(event, ToolCallEvent) and event.error_class in OFF_SCHEMA:
            return (
                f"passes with a call no agent can make: its call at step {event.step}, "
                f"{event.tool}, was refused ({event.error_class}: "
                f"{shorten(event.error or '', 200)}); fix it to one the tool's schema allows"
            )
    return None


def _against_the_user(run: AgentRun) -> str | None:
    """How a passing solution went against its simulated user, or None.

    A solution that changes the state after the user declined (``user.confirms: false``)
    passes only because the grader does not check the user's answer: no agent that follows
    the user could take that route, so it proves nothing about the task.
    """
    declined: MessageEvent | None = None
    for event in run.observation_action_log:
        if isinstance(event, MessageEvent) and event.role == "user" and event.text == NO:
            declined = declined or event
        elif declined is not None and isinstance(event, ToolCallEvent) and event.changed_tables:
            return (
                f"passes, but the user declined at step {declined.step} ({NO!r}) and it then "
                f"changed {', '.join(event.changed_tables)} with {event.tool}: it does not "
                "follow the task's user (user.confirms), so it proves nothing"
            )
    return None


# --- discriminating --------------------------------------------------------------------------


def check_discriminating(proof: Proof) -> Finding:
    problems, notes = _known_bad(proof)
    if proof.task.expect_no_change or _oracle_changes_nothing(proof):
        more_problems, more_notes = _no_change_case(proof)
    else:
        more_problems, more_notes = _straw_agents(proof)
    problems += more_problems
    if problems:
        return False, "; ".join(problems)
    return True, "; ".join(notes + more_notes)


def _known_bad(proof: Proof) -> tuple[list[str], list[str]]:
    problems, notes = [], []
    for name, solution in proof.of_kind("known_bad").items():
        fails_by = solution.fails_by or "outcome"
        problem = fails_as_declared(proof.task, proof.run(name), fails_by)
        if problem is None:
            notes.append(f"{name} fails by {fails_by}")
        else:
            problems.append(f"known-bad {name} {problem}")
    return problems, notes


def fails_as_declared(task: AgentTask, run: AgentRun, fails_by: str) -> str | None:
    """Why *run* does not fail the way ``fails_by`` declares, or None when it does."""
    if run.success:
        return "passes"
    if not run.valid:
        return f"gets no verdict: {describe_run(run)}"
    graded = fails_by == "outcome" or fails_by.startswith(("outcome:", "constraint:"))
    if graded and run.terminal_reason not in GRADED_FAILURES:
        return (
            f"is stopped before its script ends ({describe_run(run)}): the {fails_by} it "
            "declares then fails on a state the script never finished (a stop is no proof "
            "the grader catches the bad outcome); shorten it, or declare that terminal reason"
        )
    if fails_by == "outcome":
        held = any(failed_by_state(run.outcome_assertion_results))
    elif fails_by.startswith("outcome:"):
        assertion_id = fails_by.removeprefix("outcome:")
        found = [r for r in run.outcome_assertion_results if r.id == assertion_id]
        if not found:
            return f"declares {fails_by}, but the task has no outcome assertion {assertion_id!r}"
        if found[0].kind == JUDGED:
            return (
                f"declares {fails_by}, a judged assertion, which never decides success: a "
                "known-bad failing by it alone passes; name an assertion that reads the state"
            )
        held = not found[0].passed
    elif fails_by.startswith("constraint:"):
        constraint_id = fails_by.removeprefix("constraint:")
        found = [r for r in run.constraint_results if r.id == constraint_id]
        if not found:
            return f"declares {fails_by}, but the task has no constraint {constraint_id!r}"
        held = not found[0].passed
    else:
        held = run.terminal_reason == fails_by
    return None if held else f"fails for another reason than {fails_by}: {describe_run(run)}"


def failed_by_state(results: list[CheckResult]) -> list[str]:
    """The ids of the outcome assertions of *results* that failed by their verdict and decide
    success. A judged assertion's verdict (kind ``judge``) is reported beside ``success`` and
    never decides it, so its failure is no proof the state is checked (an attempt it alone
    fails succeeds); nor is a check's error (the attempt gets no verdict, and is rerun)."""
    return [r.id for r in results if not r.passed and r.error is None and r.kind != JUDGED]


def _oracle_changes_nothing(proof: Proof) -> bool:
    runs = [proof.run(name) for name in proof.of_kind("oracle")]
    return any(run.success and run.initial_state_hash == run.final_state_hash for run in runs)


def _no_change_case(proof: Proof) -> tuple[list[str], list[str]]:
    """A no-change task is passed by doing nothing; it must show that harm fails instead."""
    problems: list[str] = []
    if not proof.task.expect_no_change:
        problems.append(
            "the oracle leaves the state unchanged, so a do-nothing agent passes: declare "
            "expect_no_change: true and add a known-bad solution that changes the state and fails"
        )
    changing = [name for name in proof.of_kind("oracle") if _changes_state(proof.run(name))]
    if proof.task.expect_no_change and changing:
        problems.append(f"declares expect_no_change, but oracle {', '.join(changing)} changes it")
    harmful = [
        name
        for name in proof.of_kind("known_bad")
        if _changes_state(proof.run(name)) and not proof.run(name).success
    ]
    # The change is the harm: an outcome assertion must see it, or an agent making it by a
    # route no constraint names passes (the outcome holds on a changed state).
    seen = [name for name in harmful if failed_by_state(proof.run(name).outcome_assertion_results)]
    if not harmful:
        problems.append("no known-bad solution changes the state and fails")
    elif not seen:
        unseen = "; ".join(f"{name} ({_held(proof.run(name))})" for name in harmful)
        problems.append(
            "every outcome assertion passes for the known-bad solutions that change the state, "
            f"which fail by constraints alone: {unseen}; none checks that nothing changed "
            "(a state_diff: {} does)"
        )
    note = f"harmful {', '.join(seen)} changes the state and fails (correct outcome: no change)"
    return problems, [note]


def _changes_state(run: AgentRun) -> bool:
    return run.final_state_hash is not None and run.initial_state_hash != run.final_state_hash


def _held(run: AgentRun) -> str:
    """The outcome assertions that held for a straw agent, named so the author knows which
    ones to make read the change."""
    held = [r.id for r in run.outcome_assertion_results if r.passed]
    if not held:
        return "no outcome assertion"
    n = len(held)
    return f"{inflected(n, 'outcome assertion')} {', '.join(held)} {inflected(n, 'holds', 'hold')}"


async def _do_nothing(session: Session) -> None:
    return None


async def _claims_without_acting(session: Session) -> str:
    await session.say(CLAIM)
    return CLAIM


def _straw_agents(proof: Proof) -> tuple[list[str], list[str]]:
    problems, notes = [], []
    for label, agent in (
        ("do-nothing agent", FunctionAgent(_do_nothing)),
        ("claims-without-acting agent", FunctionAgent(_claims_without_acting)),
    ):
        run = proof.run_agent(agent)
        if run.success:
            problems.append(f"the {label} passes ({_held(run)})")
        elif not run.valid:
            problems.append(f"the {label} gets no verdict: {describe_run(run)}")
        elif not failed_by_state(run.outcome_assertion_results):
            # failed by a constraint alone (or a judge, which decides nothing): the outcome
            # the task wants is not checked
            problems.append(
                f"every outcome assertion passes for the {label} ({run.terminal_reason} "
                f"only): none checks the change the oracle makes ({_held(run)})"
            )
        else:
            notes.append(f"{label} fails ({run.terminal_reason})")
    words = _oracle_words(proof)
    if words:  # a grader that reads only what the agent said passes the oracle's words alone
        run = proof.run_steps(words)
        label = "oracle's-words agent (its messages and final reply, no tool calls)"
        if run.success:
            problems.append(f"the {label} passes: the grader reads the reply, not the state")
        elif not run.valid:
            problems.append(f"the {label} gets no verdict: {describe_run(run)}")
        else:
            notes.append(f"{label} fails ({run.terminal_reason})")
    return problems, notes


def _oracle_words(proof: Proof) -> list[Step]:
    """The first oracle's messages and final reply, without its tool calls."""
    oracles = proof.of_kind("oracle")
    if not oracles:
        return []
    steps = next(iter(oracles.values())).steps
    return [step for step in steps if step.call is None]


# --- the grader ------------------------------------------------------------------------------


def check_grader_sensitivity(proof: Proof) -> Finding:
    oracles = proof.of_kind("oracle")
    if not oracles:
        return False, "no oracle to replay"
    problems: list[str] = []
    notes: list[str] = []
    for name, solution in oracles.items():
        run = proof.run(name)
        if not run.success:
            problems.append(f"{name} does not pass, so leaving out its steps proves nothing")
            continue
        for index, event in state_changing_steps(solution, run):
            is_problem, text = _leave_out(proof, name, solution, index, event)
            (problems if is_problem else notes).append(text)
        for is_problem, text in _restore_each_table(proof, name, solution, run):
            (problems if is_problem else notes).append(text)
    if problems:
        return False, "; ".join(problems)
    if not notes:
        return True, "the oracle changes no state: no step to leave out"
    return True, "leaving out any state-changing step fails the task: " + "; ".join(notes)


def state_changing_steps(solution: Solution, run: AgentRun) -> list[tuple[int, ToolCallEvent]]:
    """(index in ``solution.steps``, trace event) of each call that changed a table."""
    call_steps = [i for i, step in enumerate(solution.steps) if step.call is not None]
    calls = [e for e in run.observation_action_log if isinstance(e, ToolCallEvent)]
    return [(i, e) for i, e in zip(call_steps, calls, strict=False) if e.changed_tables]


def _leave_out(
    proof: Proof, name: str, solution: Solution, index: int, event: ToolCallEvent
) -> tuple[bool, str]:
    """Replay *solution* without step *index*: (is it a problem, what happened)."""
    without = proof.run_steps(solution.steps[:index] + solution.steps[index + 1 :])
    step = f"step {index + 1} of {name}, {event.tool}({shorten(canonical_json(event.args), 80)})"
    if without.success:
        return True, (
            f"grader gap: {step} changes {', '.join(event.changed_tables)}, yet the task "
            "passes without it (no assertion checks that change)"
        )
    if not without.valid:
        return True, f"without {step} the replay gets no verdict: {describe_run(without)}"
    return False, f"without {step}: {without.terminal_reason}"


def _restore_each_table(
    proof: Proof, name: str, solution: Solution, run: AgentRun
) -> list[tuple[bool, str]]:
    """Grade the oracle's final state with each table it changed put back as it was, the
    others left as the oracle left them: (is it a problem, what happened) per table; then,
    in a table whose change is checked and where it changed several rows, with each of those
    rows put back alone (up to :data:`ROW_PROBES` of them).

    Leaving out a step leaves out every table it changes: a ``refund`` call that marks the
    order and adds the refund's row fails without it when one of the two is checked, and the
    other may be checked by nothing (an agent reaching the order's mark by another tool, with
    no refund made, passes). Likewise within a table: a transfer that debits one account and
    credits another, graded on the credit alone, passes an agent that credits it from nowhere.
    A kind that cannot put one collection or row back (its environment has no
    ``restore_collection`` or ``restore_rows``, or raises NotImplementedError from it) is
    not probed so."""
    written: dict[str, dict[str, None]] = {}
    for event in run.observation_action_log:
        if isinstance(event, ToolCallEvent):
            for table in event.changed_tables:
                written.setdefault(table, {})
            for write in event.writes:
                written.setdefault(write.table, {})[canonical_json(write.key)] = None
    found = []
    for table in sorted(written):
        failed = _restored_verdict(proof, solution, run, table, None)
        if failed is None:
            continue  # the kind cannot, or the table ended as it began
        if isinstance(failed, str):
            found.append((True, f"with {table} as it was, {name}'s final state {failed}"))
            continue
        if not failed:
            found.append(
                (
                    True,
                    f"grader gap: {name} changes {table}, yet its final state passes with "
                    f"{table} put back as it was (no assertion checks that table's change)",
                )
            )
            continue
        found.append((False, f"with {table} as it was: {', '.join(failed)} fail"))
        if _graded(proof, solution, run, _clearing(table), evidence=False) == []:
            found.append(
                (
                    True,
                    f"grader gap: {name}'s final state passes with every row of {table} "
                    f"deleted (its assertions say what {table} must not hold, not what it "
                    "must: an agent deleting the rows instead of changing them passes)",
                )
            )
        rows = list(written[table]) if len(written[table]) > 1 else []
        for key in rows[:ROW_PROBES]:
            failed = _restored_verdict(proof, solution, run, table, key)
            if isinstance(failed, str):
                found.append((True, f"with the row {key} of {table} as it was, {failed}"))
            elif failed == []:
                found.append(
                    (
                        True,
                        f"grader gap: {name} changes the row {key} of {table}, yet its final "
                        f"state passes with that row put back as it was (no assertion checks "
                        "that row's change)",
                    )
                )
    return found


ROW_PROBES = 8
"""At most this many rows of one table are put back one at a time by ``grader_sensitivity``."""


def _restored_verdict(
    proof: Proof, solution: Solution, run: AgentRun, table: str, key: str | None
) -> list[str] | str | None:
    """The checks that fail on the oracle's final state with *table* (or only its row *key*)
    put back as it was, as an attempt leaving it so would fail by them (a judge decides
    nothing); why that state gets no verdict, when a check deciding it raised; None when the
    kind cannot put it back or that changed nothing."""
    return _graded(proof, solution, run, lambda restored: _restoring(table, restored, key))


def _graded(
    proof: Proof,
    solution: Solution,
    run: AgentRun,
    setting: Callable[[list[str]], Around],
    *,
    evidence: bool = True,
) -> list[str] | str | None:
    """As :func:`_restored_verdict`, for the oracle's final state changed by
    ``setting(changed)``'s grading setting (which notes in *changed* what it changed, where
    the kind can); unless *evidence*, the checks failing it are not taken as exercised."""
    changed: list[str] = []
    verdict = proof.regrade(solution.steps, 1, 0.0, setting(changed), evidence=evidence)[0]
    if not changed or verdict.final_state_hash == run.final_state_hash:
        return None
    checks = verdict.assertions + verdict.constraints
    raised = [r for r in checks if r.error is not None and r.kind != JUDGED]
    if raised:  # an attempt leaving it so is a grader failure: rerun, never failed
        return (
            "gets no verdict: "
            + "; ".join(f"{r.id} raised {shorten(r.error or '', 120)}" for r in raised)
            + " (an agent leaving that state makes its attempt invalid; the check must fail it)"
        )
    return failed_by_state(verdict.assertions) + [r.id for r in verdict.constraints if not r.passed]


def _clearing(table: str) -> Callable[[list[str]], Around]:
    """A grading's setting that first deletes every row of *table*, where the kind can
    (``clear_collection``; then noted in the list it is given)."""

    def setting(cleared: list[str]) -> Around:
        @contextmanager
        def around(_: int, env: Environment) -> Iterator[None]:
            with suppress(NotImplementedError):
                if (clear := getattr(env, "clear_collection", None)) is not None:
                    clear(table)
                    cleared.append(table)
            yield

        return around

    return setting


def _restoring(table: str, restored: list[str], key: str | None = None) -> Around:
    """A grading's setting (see :meth:`Proof.regrade`) that first puts *table* (or only its
    row *key*) back as the initial state has it, where the kind can (then noted in
    *restored*)."""

    @contextmanager
    def around(_: int, env: Environment) -> Iterator[None]:
        with suppress(NotImplementedError):
            if key is None and (whole := getattr(env, "restore_collection", None)) is not None:
                whole(table)
                restored.append(table)
            elif key is not None and (rows := getattr(env, "restore_rows", None)) is not None:
                rows(table, [key])
                restored.append(table)
        yield

    return around


def check_grader_determinism(proof: Proof) -> Finding:
    oracles = proof.of_kind("oracle")
    if not oracles:
        return False, "no oracle to replay"
    suite = proof.suite

    def setting(n: int, env: Environment) -> AbstractContextManager[object]:
        """The first grading as an attempt's; then chance, the wall clock and the
        environment variables at their low end, with unordered rows reversed, then their
        high end, with the check files imported anew, in another working folder; the
        network off for the suite's code in both: a verdict drawn by chance, read off the
        date or an environment variable, fetched from a service, resting on an order no query
        asked for, on what earlier gradings left in a module or on the folder ``validate``
        started in disagrees between those gradings every time (not only when unlucky)."""
        if n == 0:
            return nullcontext()
        with ExitStack() as stack:  # closed here if one fails to start (the time zone back)
            stack.enter_context(time_zone(n % 2 == 0))  # first: the skewed clock starts in it
            if n == 1:
                stack.enter_context(rows_reversed(env))
            else:
                stack.enter_context(fresh_checks(suite.checks, suite.root, high=True))
            namespaces = suite_namespaces(suite.checks.values(), suite.root)
            if n == 1:
                stack.enter_context(listings_reversed(namespaces, env))
            # before the skew: the os module the suite's code is given looks up as watched
            stack.enter_context(outside_reads(namespaces, suite.root, outside, env))
            stack.enter_context(files_dated(namespaces, suite.root, n % 2 == 0, env, asked))
            stack.enter_context(skewed(n % 2 == 0, namespaces, asked=asked))
            stack.enter_context(offline(namespaces, env))
            if n == 2:  # last: the namespaces are found from the suite's folder
                stack.enter_context(elsewhere())
            return stack.pop_all()

    # Every route that must pass: a check may draw only on the state one of them reaches.
    routes = {**oracles, **proof.of_kind("alternative")}
    outside: dict[str, None] = {}  # files the suite's checks read from outside the suite
    asked: dict[str, None] = {}  # what of the skewed machine the suite's code read
    problems: list[str] = []
    agreed: list[str] = []
    graded: dict[str, str] = {}  # each route's first grading, for the other hash seed's
    # Another process grades each route under another PYTHONHASHSEED, beside these gradings.
    same_kind = proof.make_env is default_environment  # a factory of its own: not in a child
    other_seed: dict[str, str] | str = {}
    # (The suite's child, when a suite or a batch's tasks are validated; else one of its own.)
    with ExitStack() as stack:
        task_id = proof.task.task_id
        child = stack.enter_context(hash_order.grading(suite, task_id)) if same_kind else None
        # The replays have the tools imported anew (once per task: an import costs as much as
        # a few replays), so state their module keeps between attempts is not there to lean on.
        with fresh_tools(suite) as cold:
            for name, solution in routes.items():
                verdicts = proof.regrade(
                    solution.steps,
                    GRADINGS,
                    GRADING_PAUSE,
                    setting,
                    lambda n, events: retimed(events, n % 2 == 0) if n else events,
                    cold,
                )
                graded[name] = verdict_line(verdicts[0])
                found = _regrading_problems(proof, name, verdicts, list(asked))
                asked.clear()
                problems += [f"{name}: {p}" if len(routes) > 1 else p for p in found]
                if not found:
                    agreed.append(
                        f"{GRADINGS} gradings of {name}'s final state agree: "
                        + verdict_line(verdicts[0])
                    )
        if child is not None:
            other_seed = child.result(task_id)
    if outside:
        problems.append(
            f"a check reads {', '.join(sorted(outside))}, outside the suite's folder (opened, "
            "attached by SQL, listed, or looked up: whether it exists, its size or time): its "
            "verdict rests on a file another machine lacks or holds otherwise, and which the "
            "validity cache does not hash (put it in the suite, opened from the check's "
            "__file__)"
        )
    problems += _other_hash_seed(graded, other_seed, agreed)
    # after the loop: the fresh tools' module is no longer in sys.modules, as in a batch
    problems += [
        p for name, solution in routes.items() for p in _later_attempt(proof, name, solution)
    ]
    if problems:
        return False, "; ".join(problems)
    return True, "; ".join(agreed)


def _regrading_problems(
    proof: Proof, name: str, verdicts: list[Verdict], asked: list[str]
) -> list[str]:
    """What the gradings of one replay of solution *name* show is not deterministic (*asked*:
    what of the skewed machine the suite's code read in those gradings)."""
    problems = []
    if len({verdict_line(v) for v in verdicts}) > 1:
        read = f" (the suite's code read {', '.join(asked)})" if asked else ""
        problems.append(
            f"{GRADINGS} gradings of one final state disagree: {_disagreement(verdicts)}; "
            f"{GRADINGS_VARY}{read}"
        )
    first = proof.run(name)
    graded = [result_line(r) for r in first.outcome_assertion_results + first.constraint_results]
    again = [result_line(r) for r in verdicts[0].assertions + verdicts[0].constraints]
    if first.valid and graded != again:  # a check that passes only the first time it is called
        problems.append(
            f"{name}'s attempt and a replay of it are graded differently "
            f"({', '.join(sorted(set(graded) - set(again)))} vs "
            f"{', '.join(sorted(set(again) - set(graded)))}): the verdict depends on earlier "
            "gradings or runs (state kept in a module, a cache or a file)"
        )
    earlier = first.final_state_hash
    now = verdicts[0].final_state_hash
    if earlier is not None and earlier != now:
        problems.append(
            f"two replays of {name} reach different states ({earlier[:12]} vs {now[:12]}): "
            "something besides the fixture, the clock and the steps moves the state (the "
            "second replay has the tools imported anew: state their module keeps between "
            "attempts, as a first attempt of a batch has none)"
        )
    return problems


def _other_hash_seed(
    graded: dict[str, str], found: dict[str, str] | str, agreed: list[str]
) -> list[str]:
    """Where the child process's grading of each route (:mod:`.hash_order`) differs from
    this process's first one; why there is none is said beside what *agreed*."""
    if isinstance(found, str):
        agreed.append(f"not graded under another PYTHONHASHSEED: {found}")
        return []
    return [
        f"{name} graded in another process (PYTHONHASHSEED {hash_order.hash_seed()}) gives "
        f"{found[name]}, here {line}: its verdict rests on the order a set (or a dict keyed "
        "by it) of strings iterates in, which every Python process draws anew; sort it"
        for name, line in graded.items()
        if name in found and found[name] != line
    ]


LATER_ATTEMPTS_VARY = (
    "replayed again in this process after every replay so far, with the tools' chance near "
    "its {end} values and their wall clock at {clock}"
)
"""How :func:`_later_attempt` replays a route, for the reader of a disagreement."""


def _later_attempt(proof: Proof, name: str, solution: Solution) -> list[str]:
    """Whether route *name*, replayed again as a batch's later attempt would be, gets the
    verdict and reaches the state of its first replay.

    A batch runs many attempts in one process, each on a reset environment but with the
    tools' modules as earlier attempts left them (a counter, a cache of rows reset put back,
    a flag set by a call), and each at its own moment, with its own draws of chance. The
    first replay of the proof and the replay with the tools imported anew both start from
    fresh modules, at one moment: a route that passes only then (a tool that refuses a
    second refund it remembers, or fails one call in ten) passes validation and fails a
    batch's attempts by luck. So the route is replayed twice more after all the replays
    before it, the tools drawing chance near its lowest, then its highest values, with their
    wall clock at the start, then the end of the century
    (:func:`~groundstate.validation.skew.skewed`)."""
    first = _attempt_line(proof.run(name))
    namespaces = tool_namespaces(proof.suite)
    for high in (False, True):
        with skewed(high, namespaces, process_wide=False):
            again = proof.run_steps(solution.steps)
        if _attempt_line(again) != first:
            how = LATER_ATTEMPTS_VARY.format(
                end="highest" if high else "lowest", clock=CLOCK_ENDS[high].isoformat(" ")
            )
            return [
                f"a later attempt of {name} ({how}) ends {_attempt_line(again)} "
                f"[{shorten(describe_run(again), 300)}], where its first replay ended {first}: "
                "its outcome rests on what the tools keep between attempts (a module's "
                "global, a cache reset does not clear) or on chance or the wall clock they "
                "read, so a batch's attempts would get other verdicts; keep a tool's state in "
                "the environment, and take dates from ctx.now()"
            ]
    return []


def _attempt_line(run: AgentRun) -> str:
    """A run's terminal reason, final state and each check's result, as one line."""
    results = run.outcome_assertion_results + run.constraint_results
    state = (run.final_state_hash or "none")[:12]
    return f"{run.terminal_reason} (state {state}: {', '.join(map(result_line, results))})"


def _disagreement(verdicts: list[Verdict]) -> str:
    """The checks whose result changed between gradings, with each grading's result."""
    columns: dict[str, list[str]] = {}
    for verdict in verdicts:
        for result in verdict.assertions + verdict.constraints:
            columns.setdefault(result.id, []).append("pass" if result.passed else "fail")
    changed = [
        f"{check_id} gave {', '.join(words)}"
        for check_id, words in columns.items()
        if len(set(words)) > 1
    ]
    return "; ".join(changed) or "the final state changed while it was graded"


# --- grader mutation testing ----------------------------------------------------------------


def check_mutation(proof: Proof) -> Finding:
    mode = proof.suite.config.mutation_testing
    if mode == "off":
        return True, "off (the suite sets mutation_testing: off)"
    try:
        proof.mutation = mutation_test(proof)
    except NothingToMutate as exc:
        return False, str(exc)
    return judge(proof.mutation, mode)


_ROBUSTNESS: dict[str, ToolCrash | None] = {}
"""Robustness verdicts by tool, fixture, clock and permissions: tasks sharing them share one
(in this process; tasks of a copy of a suite too, see :func:`_robustness`)."""


def check_tool_robustness(proof: Proof) -> Finding:
    mode = proof.suite.config.tool_robustness
    if mode == "off":
        return True, "off (the suite sets tool_robustness: off)"
    task = proof.task
    crashes = [
        crash
        for name in dict.fromkeys(task.available_tools)
        if (crash := _robustness(proof, name)) is not None
    ]
    tried = f"{counted(len(set(task.available_tools)), 'tool')}, up to {CALLS_PER_TOOL} calls each"
    if not crashes:
        return True, f"no crash in {tried}"
    found = "; ".join(crash.describe() for crash in crashes)
    if mode == "report":
        return True, f"crashes reported, not failed (tool_robustness: report): {found}"
    verb = "crashes" if len(crashes) == 1 else "crash"
    return False, f"{counted(len(crashes), 'tool')} {verb} on schema-valid calls ({tried}): {found}"


def _robustness(proof: Proof, name: str) -> ToolCrash | None:
    task, suite = proof.task, proof.suite
    fixture = suite.fixture_path(task)
    tools = suite.tools_digest
    # A SQLite build is its fixture's content and the tools their code: a copy of a suite
    # (regress, a test's edited copy) shares the verdicts. Other kinds' options may name
    # other files of the suite, and code without a digest is known only by where it is.
    shared = suite.config.environment == "sqlite" and tools is not None
    key = canonical_json(
        [
            fixture.suffix if shared else str(fixture.resolve()),
            hash_path(fixture),
            tools,
            name,
            task.clock.isoformat(),
            task.permissions.model_dump(mode="json"),
            proof.make_env is default_environment,
            # the kind the default environment builds, with its options
            suite.config.environment,
            suite.config.environment_options,
        ]
    )
    if key not in _ROBUSTNESS or proof.make_env is not default_environment:
        _ROBUSTNESS[key] = find_crash(suite.tools[name], lambda: proof.make_env(task, suite))
    return _ROBUSTNESS[key]


def check_exercised(proof: Proof) -> Finding:
    """Runs last: it reads what every replay of the checks before it saw fail."""
    mode = proof.suite.config.exercised_checks
    if mode == "off":
        return True, "off (the suite sets exercised_checks: off)"
    own, shared = check_ids(proof.task, proof.suite)
    proof.unexercised = [name for name in own if name not in proof.seen_failing]
    proof.shared_failed = {name: name in proof.seen_failing for name in shared}
    sets = f"; {len(shared)} from the suite's constraint sets, judged over the suite" * bool(shared)
    if not proof.unexercised:
        each = f"each of the task's {len(own)} checks" if len(own) > 1 else "its one check"
        return True, f"{each} failed in a replay{sets}"
    found = f"{len(proof.unexercised)} of {counted(len(own), 'check')} never failed in a replay: "
    found += ", ".join(proof.unexercised)
    if mode == "report":
        return True, f"warning: {found} ({REPORTED})"
    return False, f"{found} ({UNEXERCISED})"


REPORTED = (
    "the task is valid only because exercised_checks is report, the default: a check no "
    "replay made fail may be always true (a Python check that catches its own assertion and "
    "returns True passes every state) and then proves nothing; exercised_checks: required, "
    "or validate --strict, makes the task invalid"
)
"""Why a task with a check never seen failing is still valid, said in its warning."""
UNEXERCISED = (
    "no replay of validation (the known-bad solutions, the do-nothing, claims-only and "
    "oracle's-words agents, the oracle with a step left out or a table put back, the mutants) "
    "made it fail, so it may be always true and a wrong outcome could pass it; add a known-bad "
    "solution it alone fails (fails_by: outcome:<id> or constraint:<id>), or remove it"
)
"""Why a check never seen failing is reported, and what to do about it."""


def check_ids(task: AgentTask, suite: Suite) -> tuple[list[str], list[str]]:
    """The task's own checks (its outcome assertions and its own hard constraints), and the
    constraints its suite's constraint sets give it, as ``outcome:<id>`` and
    ``constraint:<id>`` (the words of ``fails_by``).

    A set's constraint is the same check in every task that includes it, and most of them
    cannot fail in most tasks (a rule about refunds in a task with no refund): whether one can
    fail is asked of the suite's replays together (:attr:`SuiteValidity.unexercised_shared`)."""
    mine = own_constraints(task, suite.config.constraint_sets)
    included = task.hard_process_constraints[: len(task.hard_process_constraints) - len(mine)]
    own = [f"outcome:{a.id}" for a in task.outcome_assertions]
    return own + [f"constraint:{c.id}" for c in mine], [f"constraint:{c.id}" for c in included]


CHECKS: dict[str, Callable[[Proof], Finding]] = {
    "reset": check_reset,
    "solvable": check_solvable,
    "other_routes": check_other_routes,
    "discriminating": check_discriminating,
    "grader_sensitivity": check_grader_sensitivity,
    "grader_determinism": check_grader_determinism,
    "mutation": check_mutation,
    "tool_robustness": check_tool_robustness,
    "judge_agreement": check_judge_agreement,
    "exercised": check_exercised,
}
"""Every check, in the order they are reported."""
