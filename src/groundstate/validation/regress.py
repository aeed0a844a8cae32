"""Regression cases: a stored failing run becomes a task skeleton with its trajectory as known-bad.

The new task copies the original's contract (fixture, clock, request, user, tools,
permissions, constraints, limits and outcome assertions) and records where it came from;
``solutions/<new_id>/bad_observed.yaml`` replays what the agent did, declared to fail the way
the run failed. The original's oracle and alternative solutions are copied too, so
``groundstate validate`` can prove at once that the task is still solvable and that the
observed trajectory keeps failing. The author then reviews the assertions: the skeleton says
what went wrong once, not yet what this case must check.

A run adjudicated as an *evaluator defect* (the agent did acceptably, the grader failed it
wrongly) becomes the opposite case: ``solutions/<new_id>/alt_observed.yaml`` replays the
trajectory as an alternative solution that must pass, so ``groundstate validate`` fails until
the grader is repaired to accept it (see docs/diagnosis.md).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, TypeGuard

import yaml

from groundstate.agents.scripted import RecordedCall, RecordedGiveUp, RecordedUsage, Replayed
from groundstate.errors import GroundstateError
from groundstate.paths import make_folder
from groundstate.records import AgentRun
from groundstate.rounding import counted
from groundstate.spec.canonical import hash_path
from groundstate.spec.code import code_files
from groundstate.spec.files import YamlDumper, load_model
from groundstate.spec.solution import Solution, Step
from groundstate.spec.suite import (
    BUILTIN,
    Suite,
    SuiteConfig,
    grader_code_files,
    judge_prompt_files,
    load_suite,
)
from groundstate.spec.task import AgentTask, JudgeAssertion, TestsAssertion
from groundstate.trace import MessageEvent, ToolCallEvent

OBSERVED = "bad_observed"
"""The name of the solution that replays the observed trajectory."""
OBSERVED_ACCEPTABLE = "alt_observed"
"""The name of the solution that replays a trajectory a grader wrongly failed."""
STEP_LIMIT_FILLER = "(the next action, which the step limit stopped)"

_REPLAYABLE = {
    "agent_failure/incorrect_state",
    "agent_failure/constraint_violation",
    "agent_failure/prohibited_action",
    "agent_failure/step_limit",
}
"""Terminal reasons a scripted replay of the trace reproduces."""


class RegressionRefused(GroundstateError):
    """This run cannot become a regression case (it succeeded, was invalid, or would clash)."""


def regress(run: AgentRun, suite: Suite, *, into: Path, evaluator_defect: bool = False) -> Path:
    """Turn the failing *run* of a task of *suite* into a new task in the suite at *into*.

    *into* may be the original suite or another suite folder (made if it does not exist);
    files the case needs (fixture, tools, checks) are copied there, and refused if a
    different file of that name is already there. Returns the new task file. A case that
    fails (its copy does not load, say) leaves nothing behind: every file and folder made
    for it is removed, a new suite folder with them.

    With *evaluator_defect* (the run was adjudicated a grader defect), the observed
    trajectory is an alternative solution the repaired grader must pass, not a known-bad one.
    """
    task = _original_task(run, suite)
    kind = "defect" if evaluator_defect else "regress"
    new_id = f"{task.task_id}-{kind}-{run.run_id[:8]}"
    target = Path(into)
    task_file = target / "tasks" / f"{new_id}.yaml"
    if task_file.exists():
        raise RegressionRefused(f"{task_file} exists: run {run.run_id} was regressed already")
    made = _Made()
    try:
        _prepare_suite(suite, task, target, made)
        solutions = target / "solutions" / new_id
        _write_case(run, suite, task, task_file, solutions, evaluator_defect, made)
        load_suite(target)
    except BaseException:
        made.undo()
        raise
    return task_file


class _Made:
    """The files and folders a regression made, in order, so a failed one removes them all:
    a half-made suite (its suite.yaml and copies without the case) otherwise stayed behind,
    and loaded as a suite."""

    def __init__(self) -> None:
        self._paths: list[Path] = []

    def folder(self, path: Path) -> None:
        """Make *path* and its missing parents, noting each one made."""
        missing = [p for p in [path, *path.parents] if not os.path.lexists(p)]
        make_folder(path)
        self._paths += reversed(missing)

    def file(self, path: Path) -> Path:
        """Note *path*, about to be written (its folder made first)."""
        self.folder(path.parent)
        if not os.path.lexists(path):
            self._paths.append(path)
        return path

    def undo(self) -> None:
        for path in reversed(self._paths):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        self._paths = []


def observed_fails_by(run: AgentRun) -> str:
    """How the observed trajectory is declared to fail, from the run's terminal reason.

    A constraint violation names the first failed constraint. A failure a script cannot
    reproduce (time limit, crash, giving up...) is declared by the wrong state it left, when
    it left one, since that is what a replay can show.
    """
    reason = run.terminal_reason
    failed_constraints = [r.id for r in run.constraint_results if not r.passed]
    if reason == "agent_failure/incorrect_state":
        return "outcome"
    if reason == "agent_failure/constraint_violation" and failed_constraints:
        return f"constraint:{failed_constraints[0]}"
    if reason not in _REPLAYABLE and any(not r.passed for r in run.outcome_assertion_results):
        return "outcome"
    return reason


def observed_steps(run: AgentRun) -> list[Step]:
    """The agent's tool calls and messages, in order, as scripted steps (a call whose
    arguments are not an object, which a step cannot hold, left out)."""
    return [step for step in observed_trajectory(run) if isinstance(step, Step)]


def observed_trajectory(run: AgentRun) -> list[Replayed]:
    """The agent's tool calls and messages, in order, for a :class:`ScriptedAgent` to replay:
    a call whose arguments are not an object as a :class:`RecordedCall`; then the run's
    usage (a replay under its budgets stops as it did) and its giving up, if it gave up."""
    steps: list[Replayed] = []
    for event in run.observation_action_log:
        if isinstance(event, ToolCallEvent):
            scriptable = isinstance(event.args, dict)
            steps.append(
                Step(call=event.tool, args=event.args)
                if scriptable
                else RecordedCall(event.tool, event.args)
            )
        elif _spoken(event):
            steps.append(Step(say=event.text))
    if run.terminal_reason == "agent_failure/step_limit":
        steps.append(Step(say=STEP_LIMIT_FILLER))  # the attempt that hit the limit
    usage = run.usage
    figures = (usage.input_tokens, usage.output_tokens, run.cost)
    if any(figure is None or figure for figure in figures):  # not known is reported so, not 0
        steps.append(RecordedUsage(*figures))
    if run.terminal_reason == "agent_failure/gave_up":
        steps.append(RecordedGiveUp(_stop_message(run)))
    if run.final_message is not None:
        steps.append(Step(finish=run.final_message))
    return steps


def _stop_message(run: AgentRun) -> str:
    """The message of the stop that ended *run* (the reason an agent gave up), or ``""``."""
    exception = run.infrastructure_status.get("exception")
    message = exception.get("message") if isinstance(exception, dict) else None
    return message if isinstance(message, str) else ""


def _spoken(event: object) -> TypeGuard[MessageEvent]:
    """An agent message during the conversation (the final reply is a ``finish`` step)."""
    return (
        isinstance(event, MessageEvent)
        and event.role == "agent"
        and event.text is not None
        and not event.final
    )


def _original_task(run: AgentRun, suite: Suite) -> AgentTask:
    if run.success:
        raise RegressionRefused(
            f"run {run.run_id} succeeded: only failing runs become regression cases"
        )
    if not run.valid:
        raise RegressionRefused(
            f"run {run.run_id} is invalid ({run.terminal_reason}): it shows a harness problem, "
            "not an agent failure; repair the environment or grader and rerun"
        )
    if run.task_id not in suite.tasks:
        raise RegressionRefused(f"suite {suite.name!r} has no task {run.task_id!r}")
    return suite.tasks[run.task_id]


# --- the target suite ------------------------------------------------------------------------


def _prepare_suite(suite: Suite, task: AgentTask, target: Path, made: _Made) -> None:
    """Make sure the suite at *target* has every file the new task needs, identical."""
    if os.path.realpath(target) == os.path.realpath(suite.root):  # realpath: loops too
        return
    if os.path.lexists(target) and not target.is_dir():
        what = "a file" if target.exists() else "a link that leads to no folder"
        raise RegressionRefused(f"{target} is {what}, not a suite folder")
    if not (target / "suite.yaml").is_file():
        _scaffold(suite, target, made)
    config = load_model(target / "suite.yaml", SuiteConfig)
    ran_on = (suite.config.environment, suite.config.environment_options)
    if (config.environment, config.environment_options) != ran_on:
        raise RegressionRefused(
            f"the suite at {target} runs its tasks on environment {config.environment!r} "
            f"with options {config.environment_options}, task {task.task_id} on "
            f"{ran_on[0]!r} with {ran_on[1]}: the case would be proven on another "
            "environment than the run's; regress into the original suite or another folder"
        )
    if suite.config.tools != config.tools or not config.tools.startswith(BUILTIN):
        _same_code(suite.root / suite.config.tools, target / config.tools, made)
    # where the target suite looks for it (its own fixtures folder), not where the original does
    copy = Path(os.path.normpath(target / config.fixtures / task.initial_state_fixture))
    _same_file(suite.fixture_path(task), copy, made)
    code = grader_code_files(task)
    for name in _needed_files(suite, task):
        (_same_code if name in code else _same_file)(suite.root / name, target / name, made)


def _same_code(source: Path, copy: Path, made: _Made) -> None:
    """:func:`_same_file` for a Python file and the sibling modules it imports, each beside
    the copy as it is beside *source*: without them a suite whose tools or checks import a
    helper module of theirs could not be regressed into another suite (it did not load)."""
    _same_file(source, copy, made)
    for sibling in code_files(source)[1:]:
        _same_file(sibling, copy.parent / sibling.relative_to(source.parent), made)


def _scaffold(suite: Suite, target: Path, made: _Made) -> None:
    config = {
        "name": f"{suite.name}-regressions",
        "description": f"Regression cases from failing runs of the {suite.name} suite.",
        "environment": suite.config.environment,
        "tools": suite.config.tools,
    }
    if suite.config.mutation_testing != "required":  # the same grader lets the same mutants by
        config["mutation_testing"] = suite.config.mutation_testing
    if suite.config.tool_robustness != "required":  # the same tools crash the same way
        config["tool_robustness"] = suite.config.tool_robustness
    if suite.config.exercised_checks != "report":  # a suite that fails untested checks still does
        config["exercised_checks"] = suite.config.exercised_checks
    for key in ("fixtures", "environment_options"):  # a workspace suite's (non-default)
        if key in suite.config.model_fields_set:
            config[key] = getattr(suite.config, key)
    if suite.config.policy is not None:
        config["policy"] = suite.config.policy
        _same_file(suite.root / suite.config.policy, target / suite.config.policy, made)
    made.file(target / "suite.yaml").write_text(
        yaml.dump(config, Dumper=YamlDumper, sort_keys=False), "utf-8"
    )


def _needed_files(suite: Suite, task: AgentTask) -> list[str]:
    """The files (or folders: hidden tests) the task needs besides its fixture, by the same
    name in any suite."""
    labels = {a.labels for a in task.outcome_assertions if isinstance(a, JudgeAssertion)}
    hidden = {
        a.tests.path
        for a in task.outcome_assertions
        if isinstance(a, TestsAssertion) and a.tests.path is not None
    }
    return sorted(grader_code_files(task) | judge_prompt_files(task) | labels | hidden)


def _same_file(source: Path, copy: Path, made: _Made) -> None:
    if not copy.exists():
        made.file(copy)
        if source.is_dir():
            shutil.copytree(source, copy, symlinks=True)
        else:
            shutil.copyfile(source, copy)
    elif hash_path(copy) != hash_path(source):
        raise RegressionRefused(
            f"{copy} differs from {source}, which the regression case needs; "
            "regress into the original suite or reconcile the two files"
        )


# --- the new task and its solutions ----------------------------------------------------------


def _write_case(
    run: AgentRun,
    suite: Suite,
    task: AgentTask,
    task_file: Path,
    solutions: Path,
    evaluator_defect: bool,
    made: _Made,
) -> None:
    new_id = task_file.stem
    made.file(task_file).write_text(_task_yaml(run, task, new_id, evaluator_defect), "utf-8")
    for name, solution in suite.solutions.get(task.task_id, {}).items():
        if solution.kind != "known_bad":  # the original's routes still solve the copy
            source = suite.root / "solutions" / task.task_id / f"{name}.yaml"
            shutil.copyfile(source, made.file(solutions / f"{name}.yaml"))
    if evaluator_defect:
        observed = made.file(solutions / f"{OBSERVED_ACCEPTABLE}.yaml")
        observed.write_text(_acceptable_yaml(run), "utf-8")
    else:
        made.file(solutions / f"{OBSERVED}.yaml").write_text(_solution_yaml(run), "utf-8")


def _task_yaml(run: AgentRun, task: AgentTask, new_id: str, evaluator_defect: bool) -> str:
    # The constraints are written out expanded, so the case is complete in any suite it goes
    # into; listing the constraint sets as well would include their constraints twice.
    derived = {"grader_revision", "grader_test_manifest", "constraint_sets"}
    data: dict[str, Any] = task.model_dump(mode="json", exclude=derived, exclude_defaults=True)
    extra = ["regression", "evaluator-defect"] if evaluator_defect else ["regression"]
    data.update(
        task_id=new_id,
        task_revision=1,
        source=_provenance(run, task, evaluator_defect),
        # a regression of a regression task is labelled "regression" once
        slice_labels=list(dict.fromkeys([*task.slice_labels, *extra])),
    )
    review = (
        "\n# REVIEW: copied from task {task}, whose grader wrongly failed the observed run."
        "\n# Repair them (here and in {task}) until validate passes alt_observed."
        if evaluator_defect
        else "\n# REVIEW: copied from task {task}. Keep, tighten or replace them so they"
        "\n# state what this case must get right, not only what went wrong once."
    )
    body = _dump(data).replace(
        "\noutcome_assertions:",
        review.format(task=task.task_id) + "\noutcome_assertions:",
    )
    return _header(run, task, evaluator_defect) + body


def _provenance(run: AgentRun, task: AgentTask, evaluator_defect: bool = False) -> str:
    what = "evaluator defect adjudicated on" if evaluator_defect else "regression of"
    return (
        f"{what} run {run.run_id} (batch {run.batch_id}, system "
        f"{run.system_spec_hash}, task {task.task_id} r{run.task_revision}, grader "
        f"{run.grader_revision}): {run.terminal_reason}"
    )


def _header(run: AgentRun, task: AgentTask, evaluator_defect: bool = False) -> str:
    lines = [
        f"Regression case from run {run.run_id} of task {task.task_id},",
        f"which ended {run.terminal_reason}.",
        f"solutions/<this task>/{OBSERVED}.yaml replays what the agent did there.",
        "Review the outcome assertions, then run `groundstate validate` on this suite.",
    ]
    if evaluator_defect:
        lines[2:] = [
            "Adjudicated as an evaluator defect: the agent's route was acceptable.",
            f"solutions/<this task>/{OBSERVED_ACCEPTABLE}.yaml replays it as an alternative that",
            "must pass: `groundstate validate` fails on this task until the grader is repaired.",
        ]
    if run.task_revision != task.task_revision or run.grader_revision != task.grader_revision:
        lines.append(
            f"Note: the run was graded under task r{run.task_revision} / grader "
            f"{run.grader_revision}; the task is now r{task.task_revision} / grader "
            f"{task.grader_revision}."
        )
    return "".join(f"# {line}\n" for line in lines)


def _solution_yaml(run: AgentRun) -> str:
    description = f"observed in run {run.run_id} (batch {run.batch_id}): {run.terminal_reason}"
    unscriptable = sum(
        isinstance(e, ToolCallEvent) and not isinstance(e.args, dict)
        for e in run.observation_action_log
    )
    if unscriptable:  # a step's arguments are an object; these calls were refused anyway
        description += f" ({counted(unscriptable, 'call')} with non-object arguments left out)"
    solution = Solution(
        kind="known_bad",
        description=description,
        fails_by=observed_fails_by(run),
        steps=observed_steps(run),
    )
    header = f"# The trajectory of run {run.run_id}, replayed as a known-bad solution.\n"
    return header + _dump(solution.model_dump(mode="json", exclude_defaults=True))


def _acceptable_yaml(run: AgentRun) -> str:
    solution = Solution(
        kind="alternative",
        description=f"observed in run {run.run_id} (batch {run.batch_id}), which the grader "
        f"failed as {run.terminal_reason}; adjudicated an evaluator defect",
        steps=observed_steps(run),
    )
    header = (
        f"# The trajectory of run {run.run_id}, adjudicated acceptable: the grader must pass it.\n"
    )
    return header + _dump(solution.model_dump(mode="json", exclude_defaults=True))


def _dump(data: dict[str, Any]) -> str:
    return yaml.dump(
        data,
        Dumper=YamlDumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
        default_flow_style=None,
    )
