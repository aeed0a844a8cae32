"""τ-bench (v1) and τ²-bench results files.

τ-bench writes a JSON list of ``{task_id, reward, info, traj, trial}`` (``trial`` 0-based;
``info.error`` when the attempt raised). τ²-bench writes ``{timestamp, info, tasks,
simulations}``, each simulation ``{id, task_id, trial, termination_reason, reward_info:
{reward, reward_breakdown, ...}, agent_cost, duration, messages, ...}``; its "dir" format
writes ``results.json`` with a ``simulation_index`` instead, and each simulation to
``simulations/<id>.json`` beside it. Both are read record by record (they hold full
conversations: a large run's file runs to hundreds of MB; :mod:`.stream`); the conversations
themselves are not imported.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from groundstate.errors import SpecError
from groundstate.importers.rows import (
    ERROR_REASONS,
    REWARD_TOLERANCE,
    ErrorPolicy,
    ImportedRow,
    OnceEach,
    StoppedRewards,
    Tokens,
    amount,
    as_integer,
    as_reward,
    as_text,
    checked,
    count,
    integer,
    lax,
    mapping,
    number,
    raised,
    read_json_object,
    respelled,
    reward_kind,
    reward_verdict,
    task_key,
    token_lists,
    total,
)
from groundstate.importers.stream import RECORD_LIMIT, JsonStream, json_stream
from groundstate.paths import dangling_link
from groundstate.rounding import counted
from groundstate.spec.files import regular_file

TAU2_ENDS: dict[str, str | None] = {
    "user_stop": None,
    "agent_stop": None,
    "max_steps": "agent_failure/step_limit",
    "timeout": "agent_failure/time_limit",
    "too_many_errors": "agent_failure/too_many_errors",
    "agent_error": "harness_compatibility_failure/agent_error",
    "user_error": "environment_failure/user_simulator",
    "infrastructure_error": "environment_failure/infrastructure",
    "context_window_exceeded": "harness_compatibility_failure/context_window",
    "unexpected_error": "environment_failure/unexpected_error",
}
"""τ²'s ``termination_reason`` -> ours. ``None``: a normal end, decided by the reward.
``agent_error`` is τ²'s verdict on a malformed agent message (empty, or text and tool calls
together): the model broke the protocol. ``user_error`` is the simulated user failing: an
instrument failure, invalid here (τ² scores it 0). ``context_window_exceeded`` counts against
the system (τ²'s metrics counted it too, until its ``NON_EVALUABLE_TERMINATION_REASONS`` left it
out with ``infrastructure_error``: a compatibility failure does not disappear here). An
``infrastructure_error`` is read further (``_tau2_infrastructure``): τ² writes every exception
its retries did not get past as one, a model's context overflow included."""

USER_SIMULATOR = "environment_failure/user_simulator"
LISTED: Any = object()
"""What :attr:`Tau2Source._results` holds for a ``simulations`` list it has not read (one
with a simulation or more, read by ``rows``)."""

_TAU2_STATE_CHECKS = ("DB", "ENV_ASSERTION")
_TAU2_FAILURES = {
    "DB": "agent_failure/incorrect_state",
    "ENV_ASSERTION": "agent_failure/incorrect_state",
    "ACTION": "agent_failure/expected_actions",
    "COMMUNICATE": "agent_failure/communication",
    "NL_ASSERTION": "agent_failure/communication",
}
"""A failed reward's first failing component (state checks first) names the sub-reason."""


ROW_ONLY = frozenset({"attempt", "success", "terminal_reason"})
"""Fields of our row format that a τ-bench result never has: an entry giving one is a row of
ours in a JSON list, whose ``success`` and ``attempt`` the τ-bench reader would not read."""


TAU_SCORES_0 = (
    "τ-bench scores 0 (an attempt that raised, or ran out of steps, has the reward of no final "
    "state)"
)
"""What τ-bench scores 0, for the warning naming stops read with a non-zero reward
(:class:`StoppedRewards`)."""


@dataclass
class TauSource:
    """A τ-bench (v1) results file."""

    path: Path
    errors: ErrorPolicy = "agent"
    format: str = "tau-bench"
    _stopped: StoppedRewards = field(default_factory=lambda: StoppedRewards(TAU_SCORES_0))

    def rows(self) -> Iterator[ImportedRow]:
        """Each result, read one at a time (with its trajectory, a large run's file runs to
        hundreds of MB)."""
        with json_stream(self.path, RECORD_LIMIT) as stream:
            if stream.peek() != "[":
                if stream.peek() != "{":
                    stream.value()  # a syntax error is named as such
                raise SpecError(self.path, None, "a τ-bench results file is a JSON list")
            for index, item in enumerate(stream.elements(), start=1):
                yield self._row(f"{self.path}:{index}", index, item)
            stream.end()

    def place(self, line: int) -> str:
        return f"{self.path}:{line}"  # the 1-based position in the list

    def warnings(self) -> list[str]:
        return self._stopped.warnings(self.path)

    def system(self) -> dict[str, Any]:
        return {"harness": "tau-bench", "errors": self.errors}

    def _row(self, where: str, index: int, item: Any) -> ImportedRow:
        item = mapping(where, "result", item)
        ours = sorted(ROW_ONLY & set(item))
        if ours:  # a JSON list of rows of ours: read so, its verdicts would be the reward's
            raise SpecError(
                where, ours[0], "not a τ-bench field (τ-bench gives reward and trial): rows of "
                "the row format go one object per line (JSON Lines, --format jsonl)",
            )  # fmt: skip
        if item.get("info") is None:
            raise SpecError(
                where, "info", "required: τ-bench writes it for every result (the task and "
                "its reward_info, or the error the attempt raised); without it an attempt that "
                "raised (reward 0, info.error) read as a plain failure, whatever --errors says",
            )  # fmt: skip
        info = item["info"]
        if isinstance(info, str) and info.startswith("Error: "):
            info = {"error": info.removeprefix("Error: ")}  # the first run.py, when it raised
        info = mapping(where, "info", info)
        reward = checked(where, "reward", as_reward, item.get("reward"))
        label, unlabelled = _tau_label(where, index, item)
        common: dict[str, Any] = {
            "line": index,
            "task_id": task_key(where, "task_id", item.get("task_id")),
            "label": label,
            "unmapped": unlabelled,
            "cost": _usage_cost(where, info.get("usage")),
            "tokens": _usage_tokens(where, info.get("usage")),
        }
        if raised(info.get("error")):
            error = str(info["error"])
            reason = _tau_error(error) or ERROR_REASONS[self.errors]
            return ImportedRow(
                **common,
                success=False,
                terminal_reason=reason,
                origin={"reward": reward, "error": error},
                reward=self._stopped.reward(where, "info.error", reward),
                mapped=f"info.error -> {reason}",
            )
        if "reward_info" in info and info["reward_info"] is None:
            # τ-bench sets reward_info when the episode ends; null: its loop ran out of steps
            return ImportedRow(
                **common,
                success=False,
                terminal_reason=STEP_LIMIT,
                origin={"reward": reward},
                reward=self._stopped.reward(where, "reward_info null", reward),
                mapped=f"reward_info null -> {STEP_LIMIT}",
            )
        checks = _tau_agrees(where, reward, info)
        verdict = reward_verdict(reward, _tau_failure(checks))
        return ImportedRow(
            **common,
            success=verdict.success,
            terminal_reason=verdict.terminal_reason,
            partial_score=verdict.partial_score,
            reward=reward,
            origin={"reward": reward},
            mapped=f"reward {reward_kind(reward)} -> {verdict.terminal_reason}",
        )


STEP_LIMIT = "agent_failure/step_limit"
"""A τ-bench episode that never ended: ``solve`` ran its ``max_num_steps`` (30) without the
user stopping or a terminating tool, and returned the last step's reward (0) with no
``reward_info``."""
CONTEXT_WINDOW = "harness_compatibility_failure/context_window"
"""An error saying the conversation outgrew the model's window (τ-bench's first agents
stopped on it, writing it to ``info.error``; as τ² has its own ``context_window_exceeded``)."""


def _usage_cost(where: str, usage: Any) -> float | None:
    """The agent's cost as τ-bench's first agents kept it (``info.usage.total_price``, in
    dollars); later versions write no agent cost (``None``: not known, never 0)."""
    price = usage.get("total_price") if isinstance(usage, dict) else None
    return None if price is None else amount(where, "info.usage.total_price", price)


def _usage_tokens(where: str, usage: Any) -> Tokens | None:
    """The agent's tokens as τ-bench's first agents kept them (``info.usage``'s
    ``prompt_tokens`` and ``completion_tokens``, a list of one count per model call)."""
    if not isinstance(usage, dict) or not {"prompt_tokens", "completion_tokens"} & set(usage):
        return None
    return (
        token_lists(where, "info.usage.prompt_tokens", usage.get("prompt_tokens")),
        token_lists(where, "info.usage.completion_tokens", usage.get("completion_tokens")),
    )


CONTEXT_ERRORS = ("context_length_exceeded", "ContextWindowExceededError")
"""How an error says the conversation outgrew the model's window: OpenAI's error code (the
first agents' check), and litellm's exception (later τ-bench agents call through litellm)."""


def _tau_error(error: str) -> str | None:
    """The reason an error message names, or ``None`` for an exception of any kind."""
    return CONTEXT_WINDOW if any(name in error for name in CONTEXT_ERRORS) else None


def _tau_label(where: str, index: int, item: dict[str, Any]) -> tuple[int | str, str | None]:
    """The attempt label, and a note when the result has no ``trial`` (a file written by a
    script of its own, or trimmed): it is labelled by its place in the list, and the file's
    results of a task are numbered in the order given (τ-bench writes trial after trial)."""
    if item.get("trial") is not None:
        return _trial(where, item["trial"]), None
    return f"result {index}", "τ-bench trial missing: attempts numbered in the order given"


def _trial(where: str, value: Any) -> int:
    """A result's ``trial``: τ-bench and τ² number a run's trials from 0
    (``range(num_trials)``); one below 0 is none they wrote."""
    trial = integer(where, "trial", value)
    if trial < 0:
        raise SpecError(
            where, "trial", f"must be 0 or more (trials are numbered from 0), got {trial}"
        )
    return trial


def _tau_checks(where: str, info: dict[str, Any]) -> tuple[str, dict[str, bool]]:
    """Where the result's checks sit (``info.reward_info.info``, or ``info`` in the first
    ``run.py``) and whether each of ``r_actions`` / ``r_outputs`` it holds passed. τ-bench
    writes them as 0/1 floats (``RewardActionInfo.r_actions: float``; the first ``run.py`` as
    booleans): a check in text or of another kind is a file it did not write, refused as its
    reward would be (read as a number, a ``"1"`` passed a check the run failed)."""
    scored = info.get("reward_info")
    detail = scored.get("info") if isinstance(scored, dict) else info  # first run.py: info
    place = "info.reward_info.info" if isinstance(scored, dict) else "info"
    if not isinstance(detail, dict):
        return place, {}
    return place, {
        name: _passed(where, f"{place}.{name}", detail[name])
        for name in ("r_actions", "r_outputs")
        if name in detail
    }


def _passed(where: str, name: str, check: Any) -> bool:
    """A τ-bench check's value says it passed: ``true``, or a number of 1 (``1.0``)."""
    if isinstance(check, bool):
        return check
    return checked(where, name, as_reward, check) >= 1 - REWARD_TOLERANCE


def _tau_failure(checks: dict[str, bool]) -> str:
    """τ-bench checks the final database hash (``r_actions``), then, for a task with outputs
    the agent had to tell the user, replaces that detail with ``r_outputs``. So ``r_outputs``
    of 1 on a failed attempt means every output was told and the database was wrong. The
    first ``run.py`` kept both, at the top of ``info``: a failed ``r_actions`` (the state)
    decides first, as τ²'s state checks do."""
    if "r_actions" in checks and not checks["r_actions"]:
        return "agent_failure/incorrect_state"  # the first run.py checked both: state first
    if "r_outputs" in checks:
        told = checks["r_outputs"]
        return "agent_failure/incorrect_state" if told else "agent_failure/communication"
    if "r_actions" in checks:
        return "agent_failure/incorrect_state"
    return "agent_failure/incorrect"


def _tau_agrees(where: str, reward: float, info: dict[str, Any]) -> dict[str, bool]:
    """The result's ``reward`` is its ``info.reward_info.reward`` (``solve`` returns
    ``EnvRunResult(reward=res.reward, info={..., "reward_info": res.info})``), and
    ``calculate_reward`` gives 1 only when every check passed (a database hash that differs,
    or an output never told, sets it to 0), and 0 only when one failed: a ``RewardActionInfo``
    (``r_actions`` alone) that passed gives 1 (a ``RewardOutputInfo``'s ``r_outputs`` of 1
    beside a reward of 0 is a wrong database, which it does not show); so does the first
    ``run.py``'s ``r_actions`` (and ``r_outputs``) at the top of ``info``, every one passed,
    as its ``calculate_reward`` set the reward to 0 only when one failed. A reward that says
    otherwise is a file τ-bench did not write (edited): read by its reward alone, a ``reward``
    of 1 passed an attempt its own checks failed, and a 0 failed one they passed. Returns the
    checks, read."""
    scored = info.get("reward_info")
    if isinstance(scored, dict) and scored.get("reward") is not None:
        given = number(where, "info.reward_info.reward", scored["reward"])
        if abs(given - reward) > REWARD_TOLERANCE:
            raise SpecError(
                where, "reward", f"{reward!r}, but info.reward_info.reward is {given!r}: "
                "τ-bench writes the same reward in both (the file was edited?)",
            )  # fmt: skip
    place, checks = _tau_checks(where, info)
    held = scored.get("info") if isinstance(scored, dict) else info
    detail: dict[str, Any] = held if isinstance(held, dict) else {}  # the checks' own place
    told = detail.get("outputs")
    if "r_outputs" in checks and isinstance(told, dict):
        missed = [output for output, found in told.items() if found is not True]
        if checks["r_outputs"] == bool(missed):  # r_outputs is 1 when every output was found
            said = f"{missed[0]!r} is {told[missed[0]]!r}" if missed else "every one was found"
            raise SpecError(
                where, f"{place}.r_outputs", f"{detail['r_outputs']!r}, but of its outputs "
                f"{said}: τ-bench gives 1 only when every output was told",
            )  # fmt: skip
    if reward_verdict(reward).success:
        for name, passed in checks.items():
            if not passed:
                raise SpecError(
                    where, f"{place}.{name}", f"{detail[name]!r} (a check that failed), but the "
                    f"reward is {reward!r}: τ-bench gives 1 only when every check passed",
                )  # fmt: skip
    elif isinstance(scored, dict) and list(checks) == ["r_actions"] and checks["r_actions"]:
        raise SpecError(
            where, "reward", f"{reward!r}, but {place}.r_actions is {detail['r_actions']!r} "
            "(the one check, passed): τ-bench gives 0 only when a check failed",
        )  # fmt: skip
    elif not isinstance(scored, dict) and "r_actions" in checks and all(checks.values()):
        # the first run.py: r_actions always, r_outputs beside it for a task with outputs,
        # and a reward of 0 when either failed (its reward is their product)
        shown = " and ".join(f"{place}.{name} {detail[name]!r}" for name in checks)
        raise SpecError(
            where, "reward", f"{reward!r}, but {shown} (every check, passed): τ-bench's first "
            "run.py gives 0 only when a check failed",
        )  # fmt: skip
    return checks


TAU2_SCORES_0 = "τ² scores 0 (every end but agent_stop and user_stop is never evaluated)"
"""What τ² scores 0, for the warning naming stops read with a non-zero reward
(:class:`StoppedRewards`)."""


@dataclass
class Tau2Source:
    """A τ²-bench results file: the monolithic JSON form, or the "dir" form's results.json.
    The monolithic form's simulations (conversations and all: hundreds of MB for a large
    run) are read one at a time, as are the "dir" form's files."""

    path: Path
    format: str = "tau2-bench"
    _held: Counter[str] = field(default_factory=Counter)
    """Simulations read, per task id (for the warnings)."""
    _first: dict[str, str] = field(default_factory=dict)
    """Where each task's first simulation is (named when the file's ``tasks`` does not)."""

    _last: tuple[str, int] | None = None
    """Where the highest trial number read is, and it (checked against ``info.num_trials``)."""
    _stopped: StoppedRewards = field(default_factory=lambda: StoppedRewards(TAU2_SCORES_0))

    @cached_property
    def _results(self) -> dict[str, Any]:
        """Every top-level key but ``simulations``, which is read by :meth:`rows` (τ² writes
        it last; keys after it are added as :meth:`rows` passes them). Whether the file lists
        any simulation is kept as :data:`LISTED` (the "dir" form writes ``[]`` or none)."""
        results: dict[str, Any] = {}
        with json_stream(self.path, RECORD_LIMIT) as stream:
            if stream.peek() != "{":
                return read_json_object(self.path, "a τ²-bench results file")  # says what it is
            for key in stream.members():
                if key != "simulations" or stream.peek() != "[":
                    results[key] = stream.value(key)
                elif any(True for _ in stream.places(key)):  # its first one left unread
                    results[key] = LISTED
                    break
                else:
                    results[key] = []
        return results

    def _num_trials(self) -> int | None:
        """``info.num_trials``, the trials τ² ran of each task (``range(num_trials)``), as a
        writer may give it (``4``, ``4.0``, ``"4"``); ``None`` when not given. The simulations
        are held to it: a value that is no count of 1 or more (``true``, ``2.5``, ``0``) is
        refused, as read as none it left every task's count unchecked."""
        value = _part(self._results, "info").get("num_trials")
        if value is None:
            return None
        trials = checked(str(self.path), "info.num_trials", lax(as_integer), value)
        if trials < 1:
            raise SpecError(
                self.path, "info.num_trials", f"must be a count of 1 or more (τ² runs each "
                f"task that many times), got {value!r}",
            )  # fmt: skip
        return trials

    @cached_property
    def _index(self) -> list[Any] | None:
        """The "dir" form's ``simulation_index``, when its simulations are files of their own."""
        listed = self._results.get("simulations")
        index = self._results.get("simulation_index")
        if isinstance(index, list) and index and not listed:  # [] as a placeholder too
            return index
        if isinstance(listed, list) or listed is LISTED:
            return None
        raise SpecError(
            self.path,
            "simulations",
            "a τ²-bench results file lists its simulations here (or in simulation_index)",
        )

    def _simulations(self) -> Iterator[tuple[str, Any]]:
        """Each simulation with where it was read."""
        if self._index is not None:
            yield from _dir_simulations(self.path, self._index)
            return
        with json_stream(self.path, RECORD_LIMIT) as stream:
            for key in stream.members():
                if key != "simulations":
                    self._results.setdefault(key, stream.value(key))  # τ² writes none
                    continue
                for i, place in enumerate(stream.places(key)):
                    yield f"{self.path}:simulations[{i}]", _simulation(stream, place)
            stream.end()

    def rows(self) -> Iterator[ImportedRow]:
        once = OnceEach("simulation")
        for index, (where, item) in enumerate(self._simulations(), start=1):
            row = _tau2_row(where, index, item, self._stopped)
            if isinstance(item, dict):
                once.check(where, "id", item.get("id"), (item.get("task_id"), item.get("trial")))
                self._held[str(item.get("task_id"))] += 1
                self._first.setdefault(str(item.get("task_id")), where)
            if isinstance(row.label, int) and (self._last is None or row.label > self._last[1]):
                self._last = (where, row.label)
            yield row

    def place(self, line: int) -> str:
        if self._index is None:
            return f"{self.path}:simulations[{line - 1}]"
        entry = self._index[line - 1]
        return str(self.path.parent / "simulations" / f"{entry.get('id')}.json")

    def warnings(self) -> list[str]:
        """Attempts the file says were run and does not hold: tasks of its ``tasks`` list
        without a simulation (left out of every denominator, not failed), and tasks with fewer
        simulations than ``info.num_trials`` (as τ²'s own metrics warn)."""
        held = self._held
        listed = self._results.get("tasks")
        if listed is not None and not isinstance(listed, list):
            kind = type(listed).__name__
            raise SpecError(self.path, "tasks", f"must be a list of tasks, got {kind}")
        ids = [str(t["id"]) for t in listed or () if isinstance(t, dict) and "id" in t]
        if ids and (foreign := [task for task in held if task not in set(ids)]):
            raise SpecError(
                self._first[foreign[0]], "task_id", f"{foreign[0]!r}, a task the file's tasks "
                f"list does not name ({counted(len(foreign), 'task')} so: {_some(foreign)}): "
                "τ² runs only the tasks it lists, so its simulations are of another run, or "
                "copied in, and read they would be attempts in no run's denominator",
            )  # fmt: skip
        warnings = self._stopped.warnings(self.path)
        if none := [task for task in ids if task not in held]:
            warnings.append(
                f"{self.path}: {len(none)} of the {counted(len(ids), 'task')} it lists "
                f"{'has' if len(none) == 1 else 'have'} no simulation "
                f"({_some(none)}): they are not in the batch, so no score counts them"
            )
        trials = self._num_trials()
        if trials is not None and (past := next(self._past(trials), None)) is not None:
            where, name, said = past
            raise SpecError(
                where, name, f"{said}, but info.num_trials is {trials}: τ² runs each task "
                f"num_trials times, numbered 0 to {trials - 1} (range(num_trials)), so this "
                "simulation is none this run made (copied in, or of another run): an attempt "
                "past the run's count",
            )  # fmt: skip
        if trials is not None and (fewer := [t for t, n in held.items() if n < trials]):
            warnings.append(
                f"{self.path}: info.num_trials is {trials}, but {counted(len(fewer), 'task')} "
                f"{'has' if len(fewer) == 1 else 'have'} fewer "
                f"simulations ({_some(sorted(fewer))}): the missing ones are not imported"
            )
        return warnings

    def _past(self, trials: int) -> Iterator[tuple[str, str, str]]:
        """Where a simulation is past *trials* (``info.num_trials``), the field that shows it
        and what it says: a trial numbered past the count, or a task with more simulations
        than the count (simulations without a ``trial`` count there too)."""
        if self._last is not None and self._last[1] >= trials:
            yield self._last[0], "trial", str(self._last[1])
        for task, n in self._held.items():
            if n > trials:
                yield self._first[task], "task_id", f"{task!r} has {n} simulations (the first here)"

    def system(self) -> dict[str, Any]:
        info = _part(self._results, "info")
        agent, user = _part(info, "agent_info"), _part(info, "user_info")
        environment = _part(info, "environment_info")
        return {
            "harness": "tau2-bench",
            "git_commit": info.get("git_commit"),
            "agent": {"implementation": agent.get("implementation"), "llm": agent.get("llm")},
            "user": {"implementation": user.get("implementation"), "llm": user.get("llm")},
            "domain": environment.get("domain_name"),
            "max_steps": info.get("max_steps"),
            "max_errors": info.get("max_errors"),
        }


def _part(data: dict[str, Any], key: str) -> dict[str, Any]:
    """``data[key]`` when it is an object, else empty: what a file says of its system is
    kept where it has the expected shape, never a reason to refuse its attempts."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _some(ids: list[str], shown: int = 5) -> str:
    """The first few of *ids*, quoted."""
    more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
    return ", ".join(repr(i) for i in ids[:shown]) + more


def _dir_simulations(path: Path, index: list[Any]) -> Iterator[tuple[str, Any]]:
    """τ²'s "dir" format: ``simulations/<id>.json`` beside results.json, one per index entry.
    The index and the files must agree, as τ² requires when it loads them: a missing file
    would otherwise leave an attempt out of every denominator without a word."""
    folder = path.parent / "simulations"
    ids = [entry.get("id") if isinstance(entry, dict) else None for entry in index]
    if (gone := dangling_link(folder)) is not None:  # not "no file for" every simulation
        raise SpecError(folder, None, gone)
    on_disk = {file.stem for file in folder.glob("*.json")} if folder.is_dir() else set()
    missing = [str(i) for i in ids if not isinstance(i, str) or i not in on_disk]
    extra = sorted(on_disk - {i for i in ids if isinstance(i, str)})
    if missing or extra:
        problems = [f"no file for {', '.join(missing)}"] if missing else []
        problems += [f"not in the index: {', '.join(extra)}"] if extra else []
        raise SpecError(folder, None, "does not match simulation_index: " + "; ".join(problems))
    if len(set(ids)) < len(ids):
        raise SpecError(path, "simulation_index", "names a simulation twice")
    for entry, simulation in zip(index, ids, strict=True):
        where = folder / f"{simulation}.json"
        regular_file(where)  # a named pipe would be waited on for ever
        with json_stream(where, RECORD_LIMIT) as stream:
            item = _simulation(stream, "")
            stream.end()
        _agrees(str(where), entry, item)
        yield str(where), item


MESSAGE_KEYS = frozenset({"role", "usage"})
"""What a simulation's message holds that is read here (:func:`_agent_tokens`): the rest (its
text, tool calls and results, the model's ``raw_data``) is the bulk of a run's file."""


def _simulation(stream: JsonStream, at: str) -> Any:
    """The simulation that comes next (at *at*), each of its ``messages`` kept with its
    :data:`MESSAGE_KEYS` only, the rest read past (checked as a whole parse checks it, not
    held): a long conversation's messages, each with the model's whole response, were held
    whole, the largest part of a simulation's memory."""
    if stream.peek() != "{":
        return stream.value(at)
    item: dict[str, Any] = {}
    for key in stream.members(at):
        field = f"{at}.{key}".lstrip(".")
        if key == "messages" and stream.peek() == "[":
            item[key] = [_message(stream, place) for place in stream.places(field)]
        else:
            item[key] = stream.value(field)
    return item


def _message(stream: JsonStream, at: str) -> Any:
    if stream.peek() != "{":
        return stream.value(at)
    message: dict[str, Any] = {}
    for key in stream.members(at):
        if key in MESSAGE_KEYS:
            message[key] = stream.value(f"{at}.{key}")  # another key: read past, not held
    return message


_INDEXED = {
    "id": ("id",),
    "task_id": ("task_id",),
    "trial": ("trial",),
    "termination_reason": ("termination_reason",),
    "reward": ("reward_info", "reward"),
}
"""What a τ² index entry repeats of its simulation (τ² builds the entry from it; its
leaderboard reads the index), and where the simulation file holds it."""


def _agrees(where: str, entry: dict[str, Any], item: Any) -> None:
    """A simulation file says what its index entry says of it: a file edited or rewritten apart
    from its index would give other numbers than τ²'s own summary of the same run. A value
    either one leaves out is not compared (the row's own checks name a missing one)."""
    for key, steps in _INDEXED.items():
        value = item
        for step in steps:
            value = value.get(step) if isinstance(value, dict) else None
        said = entry.get(key)
        if said is not None and value is not None and not _same(said, value):
            field = ".".join(steps)
            raise SpecError(where, field, f"{value!r}, but simulation_index says {said!r}")


def _same(said: Any, value: Any) -> bool:
    """Equal as numbers (``1`` and ``1.0``) or as text (a task id ``7`` and ``"7"``)."""
    numbers = [v for v in (said, value) if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(numbers) == 2:
        return float(said) == float(value)
    return str(said) == str(value)


def _tau2_end(where: str, end: Any) -> str:
    """The simulation's ``termination_reason``: text, and not another spelling of one τ²
    writes (its ``TerminationReason`` values, lower case): ``"MAX_STEPS"`` or ``"Max Steps"``,
    read as an end not known here, was decided by its reward, so an edited stop scored 1 was
    a success where ``max_steps`` is a failure. An end of another spelling altogether is a
    later version's: decided by its reward, with a warning."""
    if not isinstance(end, str):
        raise SpecError(where, "termination_reason", f"required: text, got {end!r}")
    if (spelled := respelled(end, TAU2_ENDS)) is not None:
        raise SpecError(
            where, "termination_reason", f"{end!r} is not how τ² writes {spelled!r} (its "
            "termination reasons are lower case): a file it did not write",
        )  # fmt: skip
    return end


def _tau2_row(where: str, index: int, item: Any, stopped: StoppedRewards) -> ImportedRow:
    item = mapping(where, "simulation", item)
    end = _tau2_end(where, item.get("termination_reason"))
    scored = _reward_info(where, item)
    reward = (
        None
        if "reward" not in scored
        else checked(where, "reward_info.reward", as_reward, scored["reward"])
    )
    success, reason, partial, unmapped = _tau2_verdict(where, end, reward, scored)
    if end == "infrastructure_error":
        reason = _tau2_infrastructure(where, item)
    hallucinated = _hallucinated(where, item)
    if hallucinated and not reason.startswith(("environment_failure", "grader_failure")):
        success, reason, partial = False, USER_SIMULATOR, None
    label, unlabelled = _tau2_label(where, index, item)
    cost, duration = item.get("agent_cost"), item.get("duration")
    scored_as = stopped.reward(where, end, reward) if TAU2_ENDS.get(end) else reward
    return ImportedRow(
        line=index,
        task_id=task_key(where, "task_id", item.get("task_id")),
        label=label,
        success=success,
        terminal_reason=reason,
        partial_score=partial,
        reward=None if reason == "grader_failure" else scored_as,  # else τ²'s own 0 for its error
        cost=None if cost is None else amount(where, "agent_cost", cost),
        latency=None if duration is None else amount(where, "duration", duration),
        tokens=_session_tokens(where, item.get("agent_usage"))
        or _agent_tokens(where, item.get("messages")),
        origin={"simulation_id": item.get("id"), "termination_reason": end, "reward": reward},
        mapped=f"{end} (reward {'none' if reward is None else reward_kind(reward)}"
        f"{', user simulator hallucinated' if hallucinated else ''}) -> {reason}",
        unmapped="; ".join(note for note in (unmapped, unlabelled) if note) or None,
    )


def _reward_info(where: str, item: dict[str, Any]) -> dict[str, Any]:
    """The simulation's ``reward_info``: ``null`` when τ² never evaluated it (read as
    ungraded), else a ``RewardInfo``, whose ``reward`` is required. τ² writes both for every
    simulation (``model_dump``): one stripped of either read as never graded, out of every
    denominator, whatever its reward was."""
    if "reward_info" not in item:
        raise SpecError(
            where, "reward_info", "required (null when never evaluated): τ² writes it for "
            "every simulation; without it the simulation read as never graded",
        )  # fmt: skip
    scored = mapping(where, "reward_info", item["reward_info"])
    if item["reward_info"] is not None and "reward" not in scored:
        raise SpecError(
            where, "reward_info.reward", "required: τ²'s RewardInfo always holds the reward "
            "(reward_info is null when the simulation was never evaluated)",
        )  # fmt: skip
    return scored


def _hallucinated(where: str, item: dict[str, Any]) -> bool:
    """τ²'s hallucination check (full-duplex runs) found the user simulator making up facts
    the task never gave it: τ² itself discards such a run and runs it again
    (``--hallucination-retries``), so it is the instrument's failure, not the agent's. A run
    never checked (``null``: text runs, or the last rerun once the retries ran out) is not."""
    check = mapping(where, "hallucination_check", item.get("hallucination_check"))
    found = check.get("hallucination_found", False)  # τ²'s default
    if not isinstance(found, bool):
        raise SpecError(
            where,
            "hallucination_check.hallucination_found",
            f"must be true or false, got {found!r}",
        )
    used = item.get("hallucination_retries_used")
    if used is not None:
        count(where, "hallucination_retries_used", used)
    return found


def _tau2_infrastructure(where: str, item: dict[str, Any]) -> str:
    """What an ``infrastructure_error`` was. τ² writes one for any exception its retries did
    not get past, with ``info.error_type`` (the exception's class), ``info.error`` and
    ``info.error_traceback``; τ²'s metrics leave them all out. A model's context window
    overflowing (litellm's ``ContextWindowExceededError``, raised again on every retry) is no
    broken service: the agent's model cannot hold the conversation, a compatibility failure
    that counts, unless the traceback's innermost τ² participant is the user simulator or the
    evaluator (the instrument's own model overflowed: invalid). An overflow no frame assigns
    counts (an exclusion needs evidence). An exception the agent's own code raised (the
    traceback's raise site, see ``_raised_by_agent``) is the agent's crash: a healthy machinery
    ran an agent that fell over. Anything else stays the infrastructure's."""
    info = mapping(where, "info", item.get("info"))
    said = {
        name: checked(where, f"info.{name}", as_text, info[name])
        for name in ("error_type", "error", "error_traceback")
        if info.get(name) is not None
    }
    paths = [p.replace("\\", "/") for p in FRAME.findall(said.get("error_traceback", ""))]
    named = " ".join((said.get("error_type", ""), said.get("error", "")))
    if not any(name in named for name in CONTEXT_ERRORS):
        return "agent_failure/crashed" if _raised_by_agent(paths) else INFRASTRUCTURE
    for path in reversed(paths):
        if "/tau2/user/" in path:
            return USER_SIMULATOR
        if "/tau2/evaluator/" in path:
            return "grader_failure"  # the evaluator's judge model, inside τ²'s run too
        if "/tau2/agent/" in path:
            break
    return CONTEXT_WINDOW


INFRASTRUCTURE = "environment_failure/infrastructure"
STDLIB = re.compile(r"/lib/python3[.\d]*/|/Lib/|^<")
"""A frame of Python's own library (or ``<frozen ...>``): it raises for whoever called it."""


def _raised_by_agent(paths: list[str]) -> bool:
    """The innermost frame that is not Python's own library is the agent's code: τ²'s
    ``tau2/agent/``, or a file outside τ² and outside installed packages (a custom agent). A
    frame of τ²'s other code (orchestrator, environment, user simulator, evaluator, its LLM
    client) or of an installed package (litellm, httpx: a provider failing) is not. No
    traceback: not known, not the agent's."""
    for path in reversed(paths):
        if "/tau2/" in path:
            return "/tau2/agent/" in path
        if "/site-packages/" in path or "/dist-packages/" in path:
            return False
        if not STDLIB.search(path):
            return True
    return False


FRAME = re.compile(r'File "([^"]+)"')
"""A frame's file in a Python traceback."""


def _agent_tokens(where: str, messages: Any) -> Tokens | None:
    """The agent's tokens: the ``usage`` (``prompt_tokens``, ``completion_tokens``) of each
    assistant message, as τ² records each model call (the user simulator's are its own);
    ``None`` when no assistant message counts any."""
    if not isinstance(messages, list):
        return None
    used = [
        (index, message["usage"])
        for index, message in enumerate(messages)
        if isinstance(message, dict)
        and message.get("role") == "assistant"
        and isinstance(message.get("usage"), dict)
    ]
    if not used:
        return None
    return _summed(where, "messages[{}].usage", used, ("prompt_tokens", "completion_tokens"))


def _session_tokens(where: str, usage: Any) -> Tokens | None:
    """The agent's tokens in a full-duplex (audio-native) run: ``agent_usage`` (τ²'s
    ``SessionUsage``), whose ``records`` are the provider's usage aggregated per provider,
    model and component, each with ``input_tokens`` and ``output_tokens`` (cached and audio
    tokens among them) where that component bills by tokens (a speech-to-text or
    text-to-speech leg counts seconds or characters instead). Such a run has no
    ``messages``: its turns are derived from ticks, which carry no usage. ``None``: no usage
    given, or no record counting tokens (not known, never 0)."""
    if usage is None:
        return None
    session = mapping(where, "agent_usage", usage)
    records = session.get("records", [])
    if not isinstance(records, list):
        raise SpecError(where, "agent_usage.records", f"must be a list, got {records!r}")
    counted = [
        (index, mapping(where, f"agent_usage.records[{index}]", record))
        for index, record in enumerate(records)
    ]
    keys = ("input_tokens", "output_tokens")
    counted = [(i, r) for i, r in counted if any(r.get(key) is not None for key in keys)]
    if not counted:
        return None
    return _summed(where, "agent_usage.records[{}]", counted, keys)


def _summed(
    where: str, path: str, used: list[tuple[int, dict[str, Any]]], keys: tuple[str, str]
) -> Tokens:
    """The two *keys* summed over *used* (index, usage), each value checked as a count named
    by *path* (formatted with the index) and its key."""
    first, second = (
        total(count(where, f"{path.format(i)}.{key}", u.get(key)) for i, u in used) for key in keys
    )
    return first, second


def _tau2_label(where: str, index: int, item: dict[str, Any]) -> tuple[int | str, str | None]:
    """The attempt label, and a note when τ² gave none: its ``trial`` is optional, and a run
    made outside its trial loop has none. The simulation's id (unique in a run) stands in."""
    if item.get("trial") is not None:
        return _trial(where, item["trial"]), None
    simulation = item.get("id")
    label = f"simulation {simulation}" if simulation else f"simulation at {index}"
    return label, "τ² trial missing: the attempt is labelled by its simulation id"


def _tau2_verdict(
    where: str, end: str, reward: float | None, scored: dict[str, Any]
) -> tuple[bool, str, float | None, str | None]:
    """(success, terminal reason, partial score, what could not be mapped). An abnormal end
    decides first, as our own rules do; a normal end is decided by the reward."""
    unmapped = None
    if end not in TAU2_ENDS:
        unmapped = f"τ² termination_reason {end!r} has no mapping; decided by its reward"
    stop = TAU2_ENDS.get(end)
    if stop is not None:  # never evaluated: its reward, if any, is no partial score
        return False, stop, None, None
    if _evaluation_failed(scored):
        return False, "grader_failure", None, unmapped  # τ² scored it 0 for its own error
    if reward is None:
        return False, "grader_failure", None, unmapped  # ended normally but never scored
    parts = _breakdown(where, reward, scored)
    failed = _components_agree(where, reward, scored, parts)
    if unknown := [name for name in parts if name not in COMPONENTS]:
        note = f"τ² reward component {unknown[0]!r} is none known here"
        unmapped = "; ".join(n for n in (unmapped, note) if n)
    verdict = reward_verdict(reward, _tau2_failure(failed))
    return verdict.success, verdict.terminal_reason, verdict.partial_score, unmapped


def _evaluation_failed(scored: dict[str, Any]) -> bool:
    """τ²'s evaluator, when grading itself raises (a replay diverging, its issue #387), scores
    the simulation 0 with ``info.error``: the grader failed, not the agent. A normal grade's
    ``info`` holds the components' details (``env``, ``nl``, ...), never ``error``."""
    info = scored.get("info")
    return isinstance(info, dict) and raised(info.get("error"))


def _breakdown(where: str, reward: float, scored: dict[str, Any]) -> dict[str, float]:
    """The reward's components (``reward_info.reward_breakdown``, ``{DB: 1.0, ACTION: 0.0}``),
    each a reward, and their product the reward: τ²'s evaluator multiplies the components of
    the task's ``reward_basis`` and records each (``evaluate_simulation``, as its
    ``recombine_rewards`` script does again). A reward its breakdown contradicts is a file τ²
    did not write (edited): a ``reward`` of 1 beside a ``DB`` of 0 passed an attempt whose
    database was wrong. No breakdown (``null``, ``{}``: a task without criteria) says
    nothing."""
    given = mapping(where, "reward_info.reward_breakdown", scored.get("reward_breakdown"))
    parts = {
        _component(where, "reward_info.reward_breakdown", name): checked(
            where, f"reward_info.reward_breakdown.{name}", as_reward, value
        )
        for name, value in given.items()
    }
    product = math.prod(parts.values())
    if parts and abs(product - reward) > REWARD_TOLERANCE:
        shown = ", ".join(f"{name} {value!r}" for name, value in parts.items())
        raise SpecError(
            where, "reward_info.reward", f"{reward!r}, but its reward_breakdown ({shown}) "
            f"multiplies to {product!r}: τ²'s reward is the product of its components",
        )  # fmt: skip
    return parts


COMPONENTS = ("DB", "ENV_ASSERTION", "NL_ASSERTION", "ACTION", "COMMUNICATE")
"""τ²'s ``RewardType``: the components a reward may multiply (``reward_basis``), each recorded
in ``reward_breakdown`` under this name."""
CHECKS = {
    "DB": ("db_check", "db_match", "db_reward"),
    "ENV_ASSERTION": ("env_assertions", "met", "reward"),
    "ACTION": ("action_checks", "action_match", "action_reward"),
    "COMMUNICATE": ("communicate_checks", "met", None),
    "NL_ASSERTION": ("nl_assertions", "met", None),
}
"""Where a ``RewardInfo`` records each component's own checks, the flag each check passed by,
and the check's own reward where it has one: the component's reward is 1 exactly when every
check passed (``db_check`` is one object, the others lists). τ²'s ``recombine_rewards`` script
recombines a reward from those rewards (``db_reward``, each ``reward``, each
``action_reward``), not from the flags: each is held to its flag."""
EVERY_CHECK = frozenset({"DB", "ENV_ASSERTION", "ACTION", "COMMUNICATE"})
"""The basis τ²'s ``all_ignore_basis`` evaluation writes whatever the task's was; its
breakdown still holds ``DB`` and ``ENV_ASSERTION`` only where the task's own basis did."""


def _component(where: str, name: str, value: Any) -> str:
    """A reward component's name as τ² writes it (``"DB"``); another spelling of one (``"db"``,
    ``"db_check"``, ``"env-assertion"``) is a file τ² did not write, refused (read, a failed
    ``"db"`` was no database failure, and a basis of ``"db"`` no database check). A name that
    is no spelling of one (a later version's component) is kept as given."""
    text = str(value)
    plain = re.sub(r"[^A-Z]", "", text.upper())
    for known, (check, _, _) in CHECKS.items():
        if text != known and plain in (known.replace("_", ""), check.replace("_", "").upper()):
            raise SpecError(
                where, f"{name}.{text}", f"τ² names this reward component {known!r} "
                f"(RewardType), not {text!r}",
            )  # fmt: skip
    return text


def _checks_passed(where: str, scored: dict[str, Any]) -> dict[str, bool]:
    """Whether each component's recorded checks all passed, for the components whose checks
    the ``RewardInfo`` holds (``null`` or ``[]``: none recorded, nothing said). A check's own
    reward that its flag contradicts (``action_match: true`` beside ``action_reward: 0``) is
    refused: τ²'s ``recombine_rewards`` multiplies the rewards, this reading the flags, and
    the two would give the same file two verdicts."""
    passed: dict[str, bool] = {}
    for component, (name, flag, scored_by) in CHECKS.items():
        held = scored.get(name)
        items = [held] if isinstance(held, dict) else held
        if not items:
            continue
        if not isinstance(items, list):
            raise SpecError(where, f"reward_info.{name}", f"must be a list, got {held!r}")
        flags = []
        for i, item in enumerate(items):
            at = f"reward_info.{name}" + ("" if isinstance(held, dict) else f"[{i}]")
            check = mapping(where, at, item)
            value = check.get(flag)
            if not isinstance(value, bool):
                raise SpecError(where, f"{at}.{flag}", f"must be true or false, got {value!r}")
            if scored_by is not None and check.get(scored_by) is not None:
                given = checked(where, f"{at}.{scored_by}", as_reward, check[scored_by])
                if (given >= 1 - REWARD_TOLERANCE) != value:
                    raise SpecError(
                        where, f"{at}.{scored_by}", f"{check[scored_by]!r}, but {flag} is "
                        f"{json.dumps(value)}: τ² scores a check that passed 1, any other 0",
                    )  # fmt: skip
            flags.append(value)
        passed[component] = all(flags)
    return passed


def _components_agree(
    where: str, reward: float, scored: dict[str, Any], parts: dict[str, float]
) -> list[str]:
    """The components that failed, after checking that the reward's record agrees with
    itself: each component in the breakdown scores what its own checks say (a ``DB`` of 1
    beside a ``db_check`` whose ``db_match`` is false passed an attempt whose database was
    wrong), and a component of the ``reward_basis`` whose checks failed is in the breakdown
    (τ² records every component it multiplies; left out, a failed database check beside a
    reward of 1 was read as a success). Without a breakdown the basis names what the reward
    multiplies."""
    passed = _checks_passed(where, scored)
    for name, value in parts.items():
        if name in passed and (value >= 1 - REWARD_TOLERANCE) != passed[name]:
            check, flag, _ = CHECKS[name]
            raise SpecError(
                where, f"reward_info.reward_breakdown.{name}", f"{value!r}, but its checks "
                f"(reward_info.{check}, by {flag}) {'all' if passed[name] else 'did not all'} "
                "pass: τ² scores a component 1 exactly when its checks all pass",
            )  # fmt: skip
    basis = _basis(where, scored.get("reward_basis"))
    outside = [name for name in parts if name not in basis]
    if basis and outside and len(outside) < len(parts):
        raise SpecError(
            where, f"reward_info.reward_breakdown.{outside[0]}", f"not in reward_basis "
            f"({', '.join(basis)}), beside components that are: τ² multiplies only the basis's "
            "components (its recombine_rewards recombines the reward from the basis alone); "
            "only a one-component evaluation (--evaluation-type communicate) records another",
        )  # fmt: skip
    failed = [name for name in basis if passed.get(name) is False and name not in parts]
    if parts and (left := [name for name in failed if not _ignored(basis, name)]):
        raise SpecError(
            where, "reward_info.reward_breakdown", f"leaves out {left[0]}, which reward_basis "
            f"counts and whose checks (reward_info.{CHECKS[left[0]][0]}) failed: τ² records "
            "each component it multiplies into the reward",
        )  # fmt: skip
    if parts:
        return [name for name, value in parts.items() if value < 1 - REWARD_TOLERANCE]
    if failed and reward_verdict(reward).success:
        raise SpecError(
            where, "reward_info.reward", f"{reward!r}, but reward_basis counts {failed[0]}, "
            f"whose checks (reward_info.{CHECKS[failed[0]][0]}) failed: τ²'s reward is 0 when "
            "a component it counts fails",
        )  # fmt: skip
    if basis and all(passed.get(name) for name in basis) and not reward_verdict(reward).success:
        shown = ", ".join(f"reward_info.{CHECKS[name][0]}" for name in basis if name in CHECKS)
        raise SpecError(
            where, "reward_info.reward", f"{reward!r}, but every component reward_basis "
            f"counts ({', '.join(basis)}) has its checks recorded and passed ({shown}): τ²'s "
            "reward is their product, 1 (as its recombine_rewards would recombine it)",
        )  # fmt: skip
    return failed


def _basis(where: str, value: Any) -> list[str]:
    """``reward_info.reward_basis``: the components the reward multiplies (``null``: none
    said, as for a premature end or a task without criteria)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise SpecError(where, "reward_info.reward_basis", f"must be a list, got {value!r}")
    return [_component(where, "reward_info.reward_basis", name) for name in value]


def _ignored(basis: list[str], name: str) -> bool:
    """*name* may be missing from the breakdown of an ``all_ignore_basis`` evaluation."""
    return set(basis) >= EVERY_CHECK and name in ("DB", "ENV_ASSERTION")


def _tau2_failure(failed: list[str]) -> str:
    for component in (*_TAU2_STATE_CHECKS, *_TAU2_FAILURES):
        if component in failed:
            return _TAU2_FAILURES[component]
    return "agent_failure/incorrect"
