"""One τ² task as a groundstate task: replay its gold actions, then describe what they did.

The expected outcome is not copied from τ² (it has none: τ² replays the gold actions and
compares database hashes); it is the state diff our tools produce when the importer replays
the same actions on the task's fixture, asserted with ``nothing_else_changed``, which is the
same comparison. Gold actions that do not fit the tools' documented interface make the task
unconvertible, with the reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema

from groundstate.environments.base import StateDiff, TableDiff, diff_snapshots
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import GroundstateError
from groundstate.spec.task import TASK_ID_PATTERN
from groundstate.tau2.fixture import fixture_from_db
from groundstate.tau2.oracle import final_reply, oracle_steps, user_knowledge
from groundstate.tau2.policy import communicate_constraints
from groundstate.tau2.replay import Replayed, replay_completed
from groundstate.tau2.replay import call as replay_call
from groundstate.tau2.retail_checks import ONCE_PER_ORDER, WRITE_TOOLS
from groundstate.tau2.source import Action, EvaluationCriteria, Tau2Task
from groundstate.tau2.world import World, scenario_text, world_products, world_users
from groundstate.tools import Tool

CLOCK = datetime(2024, 5, 15, 12, 0, 0, tzinfo=UTC)
"""τ²'s retail tools never read the time; a fixed clock keeps every reset identical."""
LOOSE_COLUMNS = {"transfers": ["summary"]}
"""Columns an assertion leaves free: a transfer's summary is the agent's own words."""


class Unconvertible(GroundstateError):
    """A τ² task that cannot become a groundstate task; the message says why."""


@dataclass
class Converted:
    """A converted task: the files to write (its fixture is written already) and what the
    conversion noticed."""

    task_id: str
    task: dict[str, Any]
    solutions: dict[str, dict[str, Any]]
    header: list[str]
    """Comment lines for the top of the task file: the τ² scenario and judge statements."""
    notes: list[str] = field(default_factory=list)


TASK_ID = re.compile(TASK_ID_PATTERN)
GRADED_STATE = {"DB", "ENV_ASSERTION"}
"""τ²'s reward components that compare the final database, which the state diff restates."""
GRADED_TALK = {"COMMUNICATE", "NL_ASSERTION"}
"""τ²'s components that grade what the agent says: ``communicate_info`` stands for both."""


def task_id_of(task: Tau2Task) -> str:
    """``retail-007`` for τ² task ``7`` (ASCII digits only: ``int`` reads other scripts'
    digits too: Arabic-Indic seven would become task 7's id)."""
    numbered = task.id.isascii() and task.id.isdigit()
    return f"retail-{int(task.id):03d}" if numbered else f"retail-{task.id}"


def unconvertible_because(task: Tau2Task) -> str | None:
    """Why *task* cannot be stated faithfully as a groundstate task, before anything runs:
    what τ² grades or sets up that the conversion would silently leave out or add."""
    if not TASK_ID.match(task_id_of(task)):
        return f"its id {task.id!r} cannot name a task (letters, digits, '_', '.', '-')"
    if task.initial_state:
        return "τ² changes its database before the conversation (initial_state)"
    if not task.user_scenario.instructions.reason_for_call.strip():
        return "its reason_for_call is empty, so the user would open with an empty message"
    criteria = task.evaluation_criteria
    basis = set(criteria.reward_basis)
    unknown = sorted(basis - GRADED_STATE - GRADED_TALK)
    if unknown:
        return f"τ² grades it by {', '.join(unknown)}, which the conversion does not state"
    if not basis & GRADED_STATE:
        return f"τ² does not grade its database (reward_basis {sorted(basis)})"
    if "ENV_ASSERTION" in basis and criteria.env_assertions:
        return "τ² grades it by environment assertions, which the conversion does not state"
    return None


def graded_communication(criteria: EvaluationCriteria) -> list[str]:
    """The ``communicate_info`` strings τ² grades: with ``COMMUNICATE`` in the reward basis;
    with ``NL_ASSERTION`` when there are judge statements (retail's restate the strings, and
    the strings are their deterministic part). Otherwise τ² never reads them, and an agent
    that keeps them to itself passes (tasks 30-32 of the retail data)."""
    basis = set(criteria.reward_basis)
    judged = "NL_ASSERTION" in basis and bool(criteria.nl_assertions)
    return list(criteria.communicate_info or []) if "COMMUNICATE" in basis or judged else []


def convert_task(
    db: dict[str, Any],
    task: Tau2Task,
    tools: dict[str, Tool],
    *,
    fixture_path: Path,
    world: World,
    splits: dict[str, list[str]],
) -> Converted:
    """Convert one task; *fixture_path* is where its fixture will be written (and replayed)."""
    reason = unconvertible_because(task)
    if reason is not None:
        raise Unconvertible(reason)
    _check_actions(task.evaluation_criteria.actions, tools)
    users = world_users(db, task, world)
    products = None if world == "full" else world_products(db, task)
    fixture = fixture_from_db(db, users, products)
    fixture_path.write_text(json.dumps(fixture), encoding="utf-8")
    with SqliteEnvironment(fixture_path, clock=CLOCK) as env:
        initial_hash = env.state_hash()
        s0 = env.snapshot()
        replayed = replay_completed(
            env,
            tools,
            task.evaluation_criteria.actions,
            db=db,
            opening=task.user_scenario.instructions.reason_for_call,
            scenario=scenario_text(task),
        )
        diff = diff_snapshots(s0, env.snapshot())
        equivalents = _repeat_equivalents(env, tools, replayed)
    state = {"initial_state_fixture": fixture_path.name, "initial_state_hash": initial_hash}
    return _assemble(task, replayed, diff, equivalents, state, splits)


def _assemble(
    task: Tau2Task,
    replayed: list[Replayed],
    diff: StateDiff,
    equivalents: dict[int, str],
    state: dict[str, str],
    splits: dict[str, list[str]],
) -> Converted:
    instructions = task.user_scenario.instructions
    knowledge, notes = user_knowledge(replayed)
    communicate = task.evaluation_criteria.communicate_info or []
    graded = graded_communication(task.evaluation_criteria)
    steps = oracle_steps(replayed, knowledge, communicate)
    no_change = diff.is_empty()
    body: dict[str, Any] = {
        "task_id": task_id_of(task),
        "task_revision": 1,
        "source": f"τ²-bench retail task {task.id} (sierra-research/tau2-bench, MIT)",
        "slice_labels": _slices(task, replayed, splits),
        "initial_state_fixture": state["initial_state_fixture"],
        "clock": CLOCK.isoformat(),
        "reset_check": {"initial_state_hash": state["initial_state_hash"]},
        "user_request": instructions.reason_for_call.strip(),
        "user": {
            "knowledge": knowledge,
            "confirms": True,
            "instructions": user_instructions(task),
        },
        "available_tools": [],  # filled by the suite writer: every tool of the suite
        "constraint_sets": ["policy"],
        "hard_process_constraints": communicate_constraints(graded),
        "step_limit": max(40, 3 * len(steps)),
        "time_limit": 300,
        "outcome_assertions": [_diff_assertion(diff)],
        "expect_no_change": no_change,
        "equivalent_mutants": [
            {
                "mutant": f"repeat:step{_step_of(steps, index)}:{replayed[index].action.name}",
                "reason": reason,
            }
            for index, reason in sorted(equivalents.items())
        ],
    }
    solutions = {"oracle": {"kind": "oracle", "description": "τ²'s gold actions", "steps": steps}}
    if no_change:
        solutions["bad_needless_transfer"] = _needless_transfer(steps, communicate)
    notes += [
        f"gold action {r.action.action_id or r.action.name} fails: {r.error}"
        for r in replayed
        if not r.ok and not r.added
    ]
    notes += [f"added {_call_text(r)}" for r in replayed if r.added]
    if len(graded) < len(communicate):
        notes.append("communicate_info not graded: τ² does not grade it for this task")
    return Converted(
        task_id=body["task_id"],
        task=body,
        solutions=solutions,
        header=_header(task),
        notes=notes,
    )


# --- replaying gold actions ---------------------------------------------------------------


def _check_actions(actions: list[Action], tools: dict[str, Tool]) -> None:
    """Each gold action names a tool and fits its parameters' schema: an order id given as a
    number or a list would fail the suite's own checks of the oracle (or crash the replay)."""
    for action in actions:
        if action.name not in tools:
            raise Unconvertible(f"gold action {action.name!r} is not a documented tool")
        schema = tools[action.name].parameters
        expected = set(schema.get("properties", {}))
        extra = sorted(set(action.arguments) - expected)
        missing = sorted(expected - set(action.arguments))
        if extra or missing:
            raise Unconvertible(
                f"gold action {action.name} does not fit its interface "
                f"(unknown arguments {extra}, missing {missing})"
            )
        error = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(schema).iter_errors(action.arguments)
        )
        if error is not None:
            where = ".".join(str(part) for part in error.absolute_path) or "arguments"
            raise Unconvertible(
                f"gold action {action.name} does not fit its interface ({where}: {error.message})"
            )


def _repeat_equivalents(
    env: SqliteEnvironment, tools: dict[str, Tool], replayed: list[Replayed]
) -> dict[int, str]:
    """Writes whose immediate repetition changes nothing, by index, with the reason.

    Validation's ``repeat`` mutant makes a write twice in a row. When our tools refuse the
    second call, or it writes the same values again, the final state is the oracle's and the
    mutant survives as a matter of course: it is declared equivalent, with the tool's answer.
    Not a second call of a tool that changes an order once (an address, payment method or
    item change, an exchange), made or refused: the policy's ``changed-once-per-order`` kills
    it.
    """
    found = {}
    for index, done in enumerate(replayed):
        if not (done.ok and done.action.name in WRITE_TOOLS - set(ONCE_PER_ORDER)):
            continue
        env.reset()
        for earlier in replayed[: index + 1]:
            replay_call(env, tools, earlier.action)
        again = replay_call(env, tools, done.action)
        if not again.ok:
            found[index] = f"the tool refuses the repeated call ({again.error})"
        elif not again.wrote:
            found[index] = "the repeated call writes the same values again: nothing changes"
    return found


def _call_text(done: Replayed) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in done.action.arguments.items())
    return f"{done.action.name}({args})"


def _step_of(steps: list[dict[str, Any]], action_index: int) -> int:
    """The 1-based oracle step of the *action_index*-th call (validation's numbering)."""
    calls = [i for i, step in enumerate(steps) if "call" in step]
    return calls[action_index] + 1


# --- describing the outcome ---------------------------------------------------------------


def _diff_assertion(diff: StateDiff) -> dict[str, Any]:
    return {
        "id": "gold-state",
        "description": "The state τ²'s gold actions leave (replayed with these tools), and "
        "nothing else changed."
        if not diff.is_empty()
        else "Nothing changes.",
        "state_diff": {name: _table(name, table) for name, table in diff.tables.items()},
        "nothing_else_changed": True,
    }


def _table(name: str, table: TableDiff) -> dict[str, Any]:
    loose = LOOSE_COLUMNS.get(name, [])
    change: dict[str, Any] = {}
    if table.added:
        change["added"] = [
            {k: v for k, v in row.items() if k not in loose and k != "transfer_id"}
            for row in table.added
        ]
    if table.removed:
        raise Unconvertible(f"the gold actions remove rows of {name}")
    if table.changed:
        change["changed"] = [
            {"key": row.key, "set": {c: row.after[c] for c in row.columns}} for row in table.changed
        ]
    return change


# --- the rest of the task -----------------------------------------------------------------


def _slices(task: Tau2Task, replayed: list[Replayed], splits: dict[str, list[str]]) -> list[str]:
    writes = sorted({r.action.name for r in replayed if r.wrote and r.action.name in WRITE_TOOLS})
    labels = [f"split:{name}" for name, ids in sorted(splits.items()) if task.id in ids]
    labels += writes or ["no-write"]
    if any(r.action.name == "transfer_to_human_agents" for r in replayed):
        labels.append("transfer")
    if graded_communication(task.evaluation_criteria):
        labels.append("communicate")
    return labels


def _needless_transfer(steps: list[dict[str, Any]], communicate: list[str]) -> dict[str, Any]:
    """The known-bad a no-change task needs: a change where none is due (a needless hand-over)."""
    return {
        "kind": "known_bad",
        "description": "Does what the oracle does, then hands the user to a human anyway.",
        "fails_by": "outcome",
        "steps": [
            *steps[:-1],
            {"call": "transfer_to_human_agents", "args": {"summary": "The user needs help."}},
            {"finish": final_reply(communicate)},
        ],
    }


def user_instructions(task: Tau2Task) -> str:
    """τ²'s user instructions, labelled as τ²'s user simulator is given them: what a
    model-driven user (``user_simulator: {kind: model}``) plays; the scripted user ignores it."""
    i = task.user_scenario.instructions
    parts = [
        ("Reason for call", i.reason_for_call),
        ("Known info", i.known_info),
        ("Unknown info", i.unknown_info),
        ("Task instructions", i.task_instructions),
    ]
    return "\n".join(f"{label}: {text.strip()}" for label, text in parts if text and text.strip())


def _header(task: Tau2Task) -> list[str]:
    i = task.user_scenario.instructions
    criteria = task.evaluation_criteria
    lines = [
        f"Converted from τ²-bench retail task {task.id} by `groundstate import-tau2`.",
        "The simulated user's instructions in τ² (a scripted user gives only `user.knowledge`",
        "and says yes to confirmations):",
        f"  reason_for_call: {i.reason_for_call}",
        f"  known_info: {i.known_info}",
        f"  unknown_info: {i.unknown_info}",
        f"  task_instructions: {i.task_instructions}",
    ]
    lines += [f"τ² judge statement (not graded here): {s}" for s in criteria.nl_assertions or []]
    if criteria.communicate_info and not graded_communication(criteria):
        lines.append(f"τ² communicate_info, which τ² does not grade: {criteria.communicate_info}")
    lines += [f"τ² issue ({issue.status}): {issue.title}" for issue in task.issues]
    return lines
