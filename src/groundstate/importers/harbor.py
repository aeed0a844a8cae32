"""Harbor results: a trial's ``result.json``, or a job directory of them.

Harbor (``harbor run``) writes a job directory: ``<job>/result.json`` (a ``JobResult``:
``id``, ``started_at``, ``n_total_trials``, ``stats``; written without its trials) and, per
trial, ``<job>/<trial_name>/result.json`` (a ``TrialResult``: ``task_name``, ``trial_name``,
``task_checksum``, ``agent_info``, ``agent_result``, ``verifier_result: {rewards}``,
``exception_info: {exception_type, exception_message, ...}``, ``started_at``,
``agent_execution``, ...). Each trial is one attempt of its task; the trial name is the
attempt label (a job's ``n_attempts`` trials of a task are numbered in the order they
started). A retried trial's folder is deleted by Harbor before the retry: only the last try
is on disk.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from functools import cached_property
from pathlib import Path
from typing import Any

from groundstate.errors import SpecError
from groundstate.importers.rows import (
    ERROR_REASONS,
    UNGRADED,
    ErrorPolicy,
    ImportedRow,
    OnceEach,
    StoppedRewards,
    Tokens,
    amount,
    as_reward,
    as_text,
    checked,
    count,
    duration,
    integer,
    mapping,
    planned,
    read_json_object,
    reward_kind,
    reward_verdict,
    task_key,
    total,
)
from groundstate.importers.stream import RECORD_LIMIT, JsonStream, json_stream
from groundstate.paths import dangling_link
from groundstate.rounding import counted
from groundstate.spec.files import optional_file

CANCELLED = "environment_failure/cancelled"
HARBOR_EXCEPTIONS: dict[str, str | None] = {
    "CancelledError": CANCELLED,
    "AgentTimeoutError": "agent_failure/time_limit",
    "EnvironmentStartTimeoutError": "environment_failure/setup_timeout",
    "SandboxBuildFailedError": "environment_failure/setup",
    "ContextLengthExceededError": "harness_compatibility_failure/context_window",
    "ContextWindowExceededError": "harness_compatibility_failure/context_window",
    "OutputTokenExceededError": "harness_compatibility_failure/output_limit",
    "OutputLengthExceededError": "harness_compatibility_failure/output_limit",
    "AgentSafetyRefusalError": "agent_failure/refused",
    "VerifierTimeoutError": None,
    "RewardFileNotFoundError": None,
    "RewardFileEmptyError": None,
    "VerifierOutputParseError": None,
    "AddTestsDirError": None,
    "DownloadVerifierDirError": None,
}
"""A trial's ``exception_info.exception_type`` -> ours, fixed before any file is read (types
from ``harbor/trial/errors.py``, ``harbor/verifier/verifier.py``, ``harbor/llms/base.py``,
``harbor/agents/installed/base.py`` and ``harbor/environments/base.py``). The exception decides
before the reward: Harbor still runs the verifier after an agent timeout (or a non-zero
agent exit), and its mean and pass@k count that reward as any other; here the first stop
decides, as the reference chapter's taxonomy has it (an agent that times out fails) and as
every format here reads a stop: a failure by its end, its reward counted as 0 (kept in the
origin; :class:`StoppedRewards` names such trials in one warning, the figures' difference
from Harbor's own). A model's response over its configured output limit
is the pairing's, as a context window is; a provider's safety refusal is the model's own answer
("a real reward 0 outcome", Harbor's docstring says), never an invalid try, whatever
``--errors`` says. ``None``: the verifier could not grade the final
state (it timed out, wrote no or an unreadable reward file, or its tests could not be copied in
or its output out); an agent can provoke that as easily as a broken test can, so it follows
``--errors`` (``agent``: ``agent_failure/ungraded``; ``environment``: ``grader_failure``). Any
other type (a non-zero agent exit; a provider's API error, which Harbor tells from the agent's
own output; an agent install that timed out: the install is the system's own script, run in
the task's container; a failed healthcheck, which a multi-step task runs again after the
agent's earlier steps) is an exception the file does not attribute: it follows ``--errors`` as
in every format."""

AGENT_OUTPUT_EXCEPTIONS: dict[str, str] = {
    "AgentAuthenticationError": "environment_failure/authentication",
    "ApiKeyRejectedError": "environment_failure/authentication",
    "ModelNotFoundError": "environment_failure/model_not_found",
    "ApiUsageLimitError": "environment_failure/usage_limit",
}
"""Types that name a failure of the evaluation's setup (credentials the provider refused, a
model it does not have, an account out of quota) -> ours under ``--errors environment``.
Harbor tells each from the text of the agent's failed command (``ERROR_PATTERNS``, matched
over its stdout and stderr: "Not logged in", "Cannot use this model", "Quota exceeded."),
text the system under test prints and could print on purpose: a trial is infrastructure-invalid
only on evidence the harness produced, so these follow ``--errors`` as every unattributed
exception does (``agent``: ``agent_failure/crashed``), keeping their name when the evaluator
vouches for the setup's failure."""


@dataclass(frozen=True)
class _Trial:
    """What a job needs of each of its trials before any row is made (their order, each
    trial's id once, datasets, versions, reward keys, the system), held for every trial in
    place of the trial itself."""

    where: str
    started: str
    name: str
    id: Any
    dataset: str
    source: Any
    task: str
    filtered_as: tuple[str, ...]
    """The names a job's dataset filters match the task by (:func:`_filtered_as`)."""
    checksum: str
    reward_key: str | None
    """Its rewards' only key (``None``: none, or several)."""
    agent: tuple[tuple[str, Any], ...]
    job_id: Any
    """The job its config names (``config.job_id``; ``None``: not given)."""
    system: tuple[str, str] | SpecError
    """(agent, model), or why the trial names none."""
    row: ImportedRow | SpecError
    """Its row (its task not yet qualified by its dataset, its line not yet its place), or
    why it has none: raised when the trial's turn comes, as it was when trials were read
    twice."""

    @classmethod
    def of(cls, where: str, trial: dict[str, Any], source: HarborSource) -> _Trial:
        verified = trial.get("verifier_result")
        rewards = verified.get("rewards") if isinstance(verified, dict) else None
        keys = list(rewards) if isinstance(rewards, dict) else []
        agent = trial.get("agent_info")
        return cls(
            where=where,
            started=_started(trial),
            name=str(trial.get("trial_name")),
            id=trial.get("id"),
            dataset=_dataset(trial),
            source=trial.get("source"),
            task=str(trial.get("task_name")),
            filtered_as=_filtered_as(trial),
            checksum=str(trial.get("task_checksum")),
            reward_key=keys[0] if len(keys) == 1 else None,
            agent=tuple(agent.items()) if isinstance(agent, dict) else (),
            job_id=_job_id(trial),
            system=_held(_system_of, where, trial),
            row=_held(source._row, where, trial),
        )


@dataclass
class HarborSource:
    """A Harbor trial ``result.json``, a job's ``result.json``, or a job directory."""

    path: Path
    errors: ErrorPolicy = "agent"
    scorer: str | None = None
    """The reward key that decides, when a trial's rewards have several."""
    format: str = "harbor"
    _stopped: StoppedRewards = field(
        default_factory=lambda: StoppedRewards(
            "Harbor's own mean and pass@k count (its trial runs the verifier after an agent "
            "timeout or a non-zero exit, and its metrics read the reward alone)",
            counts=True,
        ),
        repr=False,
    )

    @cached_property
    def _top(self) -> tuple[Path, dict[str, Any]]:
        """The result file given (a folder: its ``result.json``) and its content."""
        file = self.path / "result.json" if self.path.is_dir() else self.path
        if self.path.is_dir() and not optional_file(file):  # a link to nowhere: named
            raise SpecError(
                self.path, None, "a folder without result.json (a Harbor job holds one)"
            )
        return file, read_result(file)

    @property
    def _job(self) -> dict[str, Any] | None:
        _, data = self._top
        return None if is_trial(data) else data

    @cached_property
    def _trials(self) -> list[_Trial]:
        """Each trial's :class:`_Trial`, in the order they started (then by name). A job's
        trial files are read once, each for what the whole job needs and its row: the trials
        themselves held, a large job's trials took memory in proportion to them, and read
        again for their rows, the time of a second parse (2.6 s to 3.7 s for 95 MB)."""
        file, data = self._top
        if is_trial(data):
            return [_Trial.of(str(file), data, self)]
        for key in ("n_total_trials", "stats"):
            if key not in data:
                raise SpecError(file, key, "required: a Harbor job result has it")
        files = _trial_files(file)
        found = [_Trial.of(str(f), mapping(str(f), "trial", read_result(f)), self) for f in files]
        if not found:
            inline = data.get("trial_results")
            if not isinstance(inline, list) or not inline:
                raise SpecError(
                    file, "trial_results", "a Harbor job result keeps counts, not each trial's "
                    "reward: give the job directory, with its <trial>/result.json files",
                )  # fmt: skip
            for i, trial in enumerate(inline):
                where = f"{file}:trial_results[{i}]"
                found.append(_Trial.of(where, mapping(where, "trial", trial), self))
        found.sort(key=lambda trial: (trial.started, trial.name))
        once = OnceEach("trial")  # one trial in two files: a copied folder, read twice
        for trial in found:
            once.check(trial.where, "id", trial.id)
        return found

    def _one_reward_key(self) -> None:
        """Without ``--scorer``, every trial's reward must have one key, the same for the whole
        job: trials graded ``{reward: 1}`` and ``{accuracy: 1}`` were each decided by their own
        key (two successes), where Harbor's mean counts a key a trial lacks as 0 (0.5 each)."""
        first: tuple[str, str] | None = None
        for trial in self._trials:
            key = trial.reward_key
            if key is None:
                continue  # several keys in one trial: its row says so
            first = first or (key, trial.where)
            if key != first[0]:
                raise SpecError(
                    trial.where, "verifier_result.rewards", f"reward {key!r}, but {first[1]} "
                    f"gives {first[0]!r}: choose the one that decides with --scorer KEY",
                )  # fmt: skip

    def rows(self) -> Iterator[ImportedRow]:
        if self.scorer is None:
            self._one_reward_key()
        systems: dict[tuple[str, str], str] = {}
        for index, held in enumerate(self._trials, start=1):
            where, system = held.where, _raised(held.system)
            systems.setdefault(system, where)
            if len(systems) > 1:
                (first, at), *_ = systems.items()
                raise SpecError(
                    where, "agent_info", f"agent {system[0]!r} with model {system[1]!r}, but "
                    f"{at} ran {first[0]!r} with {first[1]!r}: a batch is one system; import "
                    "each agent's trials apart",
                )  # fmt: skip
            row = _raised(held.row)
            task = row.task_id
            if len(self._datasets) > 1:  # Harbor's evals are per dataset: a name may recur
                task = task_key(where, "source", f"{held.dataset}/{task}")
            if self._lock is not None:
                digest = self._lock.digest(held)
                row = replace(row, origin={**(row.origin or {}), "task_digest": digest})
            yield replace(row, line=index, task_id=task)

    def _row(self, where: str, trial: dict[str, Any]) -> ImportedRow:
        task = task_key(where, "task_name", trial.get("task_name"))
        label = checked(where, "trial_name", _name, trial.get("trial_name"))
        _written(where, trial)
        verified = mapping(where, "verifier_result", trial.get("verifier_result"))
        rewards = mapping(where, "verifier_result.rewards", verified.get("rewards"))
        if not rewards:
            _graded_otherwise(where, verified)
        reward = self._reward(where, rewards) if rewards else None
        field, failure = _exception(where, trial)
        kind = None if failure is None else failure.get("exception_type")
        if failure is not None and not isinstance(kind, str):
            raise SpecError(where, f"{field}.exception_type", f"required: text, got {kind!r}")
        cost, tokens = _usage(where, trial)
        origin = {
            "trial_name": label,
            "rewards": rewards or None,
            "exception_type": kind,
            "exception_message": None if failure is None else failure.get("exception_message"),
            "exception_at": field if failure is not None else None,
            "task_checksum": trial.get("task_checksum"),
        }
        common: dict[str, Any] = {
            "line": 0,  # its place, once every trial is read
            "task_id": task,
            "label": label,
            "cost": cost,
            "tokens": tokens,
            "latency": _latency(where, trial),
            "origin": origin,
        }
        shown = "none" if reward is None else reward_kind(reward)
        if kind is not None:
            reason = self._exception_reason(kind)
            invalid = reason.split("/")[0] in ("environment_failure", "grader_failure")
            trial_at = f"{where}: trial {label}"
            return ImportedRow(
                **common,
                success=False,
                terminal_reason=reason,
                reward=None if invalid else self._stopped.reward(trial_at, kind, reward),
                mapped=f"{kind} (reward {shown}) -> {reason}",
            )
        if reward is None:  # never graded: a missing reward is not 0
            _steps_graded(where, trial)
            return ImportedRow(
                **common,
                success=False,
                terminal_reason="grader_failure",
                mapped="no verifier reward -> grader_failure",
            )
        verdict = reward_verdict(reward, "agent_failure/incorrect")
        return ImportedRow(
            **common,
            success=verdict.success,
            terminal_reason=verdict.terminal_reason,
            partial_score=verdict.partial_score,
            reward=reward,
            mapped=f"reward {shown} -> {verdict.terminal_reason}",
        )

    def _exception_reason(self, kind: str) -> str:
        if kind in HARBOR_EXCEPTIONS:
            return HARBOR_EXCEPTIONS[kind] or UNGRADED[self.errors]
        if kind in AGENT_OUTPUT_EXCEPTIONS and self.errors == "environment":
            return AGENT_OUTPUT_EXCEPTIONS[kind]
        return ERROR_REASONS[self.errors]

    def _reward(self, where: str, rewards: dict[str, Any]) -> float:
        """The reward that decides: the only one, or the one ``--scorer`` names."""
        if self.scorer is None and len(rewards) == 1:
            ((key, value),) = rewards.items()
        elif self.scorer is None:
            keys = ", ".join(sorted(rewards))
            raise SpecError(
                where, "verifier_result.rewards", f"several rewards ({keys}): choose the one "
                "that decides with --scorer KEY",
            )  # fmt: skip
        elif self.scorer in rewards:
            key, value = self.scorer, rewards[self.scorer]
        else:
            keys = ", ".join(sorted(rewards))
            raise SpecError(
                where, "verifier_result.rewards", f"no reward {self.scorer!r} (--scorer); it "
                f"has {keys}",
            )  # fmt: skip
        return checked(where, f"verifier_result.rewards.{key}", as_reward, value)

    def place(self, line: int) -> str:
        return self._trials[line - 1].where

    def digest(self) -> str:
        """The content the batch comes from: the job's result and each trial's, by name."""
        file, _ = self._top
        digest = hashlib.sha256()
        files = [file] + ([] if self._job is None else _trial_files(file))
        for each in files:
            digest.update(str(each.relative_to(file.parent)).encode() + b"\0")
            with each.open("rb") as handle:  # in chunks: a trial's file runs to hundreds of MB
                digest.update(hashlib.file_digest(handle, "sha256").digest())
        return digest.hexdigest()

    def warnings(self) -> list[str]:
        """Trials the job counts and the directory does not hold, and retries Harbor made; a
        job holding more trials than it counts is refused (called once every trial was read,
        before anything is stored: a trial given twice is named first, by the attempts'
        check)."""
        job = self._job
        stopped = self._stopped.warnings(self._top[0])
        if job is None:
            return stopped + self._versions()
        file, _ = self._top
        _within_plan(file, job, self._trials)
        warnings = self._per_task(file, job) + self._taskless(file) + self._filtered()
        if (restated := _restated(file, job, self._trials)) is not None:
            warnings.append(restated)
        if self._lock is not None:
            warnings += self._lock.check(file, job, self._trials)
        elif (file.parent / "lock.json").is_file() and not is_trial(self._top[1]):
            warnings.append(
                f"{file.parent / 'lock.json'}: no trials list (another Harbor version's "
                "shape): not read; the trials are checked against config.json alone"
            )
        total = _number(job.get("n_total_trials"))
        held = len(self._trials)
        if total is not None and held < total:
            warnings.append(
                f"{file}: n_total_trials is {total}, but {counted(held, 'trial')} "
                f"{'has' if held == 1 else 'have'} a result (the "
                "others were pending, running or lost): they are not in the batch, so no "
                "score counts them"
            )
        unfinished = [
            folder.name
            for folder in sorted(file.parent.iterdir())
            if folder.is_dir() and (folder / "config.json").is_file()
            and not (folder / "result.json").is_file()
        ]  # fmt: skip
        if unfinished:
            warnings.append(
                f"{file.parent}: {counted(len(unfinished), 'trial folder')} without result.json "
                f"({', '.join(unfinished[:5])}): unfinished, not imported"
            )
        stats = job.get("stats")
        retries = _number(stats.get("n_retries")) if isinstance(stats, dict) else None
        if retries:
            warnings.append(
                f"{file}: Harbor retried {counted(retries, 'trial')} and kept only each one's "
                "last try: the earlier tries are in no count here"
            )
        return warnings + stopped + self._versions()

    def _per_task(self, file: Path, job: dict[str, Any]) -> list[str]:
        """Each task's trials against the job's ``n_attempts`` (its ``config.json``, the
        ``JobConfig`` Harbor writes beside ``result.json``: it runs every task that many
        times). More is refused as more than ``n_total_trials`` is (trials of another job, or
        copied in: attempts the job never ran); fewer is named, task by task (the missing
        attempts are in no denominator: the task's score is over the attempts it holds)."""
        if self._config is None:
            return []
        where, data = self._config
        each, _ = planned(where, "n_attempts", data.get("n_attempts"), "tasks", None)
        if each is None:
            return []
        total = _number(job.get("n_total_trials"))
        if total is not None and total % each:
            raise SpecError(
                where, "n_attempts", f"{each}, but {file} gives n_total_trials {total}, no "
                "multiple of it (Harbor runs each task n_attempts times): the two are of "
                "different jobs",
            )  # fmt: skip
        tasks: dict[str, list[_Trial]] = {}
        for trial in self._trials:
            tasks.setdefault(self._task_of(trial), []).append(trial)
        if len({(t.task, t.name) for t in self._trials}) < len(self._trials):
            return []  # a trial given twice: the attempts' check names both places
        for task, trials in tasks.items():
            if len(trials) > each:
                extra = _extra(job.get("id"), trials, each)
                raise SpecError(
                    where, "n_attempts", f"{each}, but task {task!r} has {len(trials)} trials "
                    f"with a result ({extra}): a job runs each task n_attempts times; import "
                    "each job's own folder",
                )  # fmt: skip
        short = [(task, len(trials)) for task, trials in tasks.items() if len(trials) < each]
        if not short:
            return []
        shown = ", ".join(f"{task!r} {n} of {each}" for task, n in short[:5])
        more = f" and {len(short) - 5} more" if len(short) > 5 else ""
        return [
            f"{where}: n_attempts is {each}, but {counted(len(short), 'task')} "
            f"{'has' if len(short) == 1 else 'have'} fewer trials with a result ({shown}{more}): "
            "their missing attempts are in no denominator, so those tasks are scored over "
            "fewer attempts"
        ]

    @cached_property
    def _config(self) -> tuple[str, dict[str, Any]] | None:
        """The job's ``config.json`` beside its ``result.json`` (Harbor's ``JobConfig``) and
        its content; ``None`` when there is none."""
        file, _ = self._top
        config = file.parent / "config.json"
        if not optional_file(config):  # a link to nowhere is refused, not a job without one
            return None
        return str(config), read_json_object(config, "a Harbor job config.json")

    @cached_property
    def _lock(self) -> _Lock | None:
        """The job's ``lock.json`` beside its ``result.json`` (Harbor's ``JobLock``), read;
        ``None`` when there is none, or the file given is one trial's."""
        file, data = self._top
        lock = file.parent / "lock.json"
        if is_trial(data) or not optional_file(lock):
            return None
        return _Lock.read(lock)

    def _taskless(self, file: Path) -> list[str]:
        """The tasks the job's ``config.json`` lists (``tasks``: each a local task's ``path``,
        whose folder name is the task's name) with no trial in the folder: no score counts
        them, though the job was to run them (``n_total_trials`` alone gave their number, not
        their names)."""
        if self._config is None:
            return []
        where, data = self._config
        listed = data["tasks"] if isinstance(data.get("tasks"), list) else []
        names = [_listed_name(task) for task in listed]
        ran = {name for trial in self._trials for name in trial.filtered_as}
        missing = [name for name in dict.fromkeys(names) if name and name not in ran]
        if not missing:
            return []
        shown = ", ".join(map(repr, missing[:5]))
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        return [
            f"{where}: tasks lists {counted(len(missing), 'task')} with no trial in the "
            f"job's folder ({shown}{more}): they are not in the batch, so no score counts them"
        ]

    def _filtered(self) -> list[str]:
        """Each trial against the filters of its dataset in the job's ``config.json``
        (``datasets[i]``: ``task_names`` and ``exclude_task_names``, glob patterns Harbor
        matches against each task's name, then ``n_tasks``, the most tasks it takes of what
        is left). A trial of a task its dataset's filters leave out, or a dataset holding
        trials of more tasks than its ``n_tasks``, is refused as trials past ``n_attempts``
        are (another job's, or copied in: read, each would be a task, or an attempt, the job
        never ran, in the denominator). Tasks its ``task_names`` name literally (no glob)
        with no trial are named; a dataset whose tasks only a registry or a dataset folder
        lists is said so when trials are missing."""
        if self._config is None:
            return []
        where, data = self._config
        plans = _dataset_plans(where, data.get("datasets"))
        by_name: dict[str, list[_Plan]] = {}
        for plan in plans:
            if plan.source is not None:
                by_name.setdefault(plan.source, []).append(plan)
        tasks: dict[int, dict[str, _Trial]] = {}  # each plan's tasks, each task's first trial
        for trial in self._trials:
            mine = by_name.get(trial.dataset, [])
            if len(mine) != 1:
                continue  # no dataset of that name (a task given by path), or two: not told
            plan = mine[0]
            plan.check(trial)
            tasks.setdefault(plan.index, {}).setdefault(trial.task, trial)
        warnings: list[str] = []
        unnamed = 0
        for plan in plans:
            if plan.source is None or len(by_name[plan.source]) > 1:
                unnamed += 1  # its trials are not told from another dataset's
                continue
            ran = tasks.get(plan.index, {})
            plan.within(ran)
            missing = plan.missing(ran)
            if missing is None:
                unnamed += 1
            elif missing:
                shown = ", ".join(map(repr, missing[:5]))
                more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
                warnings.append(
                    f"{where}: datasets[{plan.index}].task_names names "
                    f"{counted(len(missing), 'task')} with no trial in the job's folder "
                    f"({shown}{more}): they are not in the batch, so no score counts them"
                )
        total = _number(self._top[1].get("n_total_trials"))
        if unnamed and total and len(self._trials) < total and self._lock is None:
            warnings.append(
                f"{where}: the job ran {counted(unnamed, 'dataset')}, whose tasks a "
                "registry or a dataset folder lists, not this file: which of their tasks have "
                "no trial cannot be told here"
            )
        return warnings

    def _task_of(self, trial: _Trial) -> str:
        """The trial's task as its rows name it (qualified by its dataset when there are
        several)."""
        return f"{trial.dataset}/{trial.task}" if len(self._datasets) > 1 else trial.task

    @cached_property
    def _datasets(self) -> list[str]:
        """The datasets (``source``) the trials come from, in the order first met."""
        return list(dict.fromkeys(trial.dataset for trial in self._trials))

    def _versions(self) -> list[str]:
        """Tasks whose trials ran different versions of them (``task_checksum``), and the
        datasets that qualify task names when there are several."""
        checksums: dict[str, set[str]] = {}
        several = len(self._datasets) > 1
        for trial in self._trials:
            task = self._task_of(trial)
            checksums.setdefault(task, set()).add(trial.checksum)
        changed = sorted(task for task, seen in checksums.items() if len(seen) > 1)
        warnings = []
        if several:
            warnings.append(
                f"{self.path}: trials of {len(self._datasets)} datasets "
                f"({', '.join(map(repr, self._datasets[:5]))}): task ids are "
                "<dataset>/<task_name>, as Harbor keeps each dataset's tasks apart"
            )
        if changed:
            warnings.append(
                f"{self.path}: {counted(len(changed), 'task')} ran in more than one version "
                f"(task_checksum differs: {', '.join(map(repr, changed[:5]))}): their attempts "
                "are not of one task"
            )
        return warnings

    def system(self) -> dict[str, Any]:
        _, data = self._top
        first = self._trials[0] if self._trials else None
        agent: dict[str, Any] = {} if first is None else dict(first.agent)
        model = agent.get("model_info")
        return {
            "harness": "harbor",
            "errors": self.errors,
            "scorer": self.scorer,
            "job_id": None if self._job is None else data.get("id"),
            "n_total_trials": None if self._job is None else data.get("n_total_trials"),
            "agent": {"name": agent.get("name"), "version": agent.get("version")},
            "model": model if isinstance(model, dict) else None,
            "dataset": None if first is None else first.source,
        } | ({} if self._lock is None else {"harbor": self._lock.harbor})


GLOB = frozenset("*?[")
"""What makes a name in ``task_names`` a pattern (Harbor matches them with ``fnmatch``)."""


@dataclass(frozen=True)
class _Plan:
    """One of a job config's ``datasets``: what of its tasks the job was to run."""

    where: str
    index: int
    source: str | None
    """The ``source`` its trials carry (its ``name``, or a local dataset's folder name);
    ``None``: not told by the config (a dataset read from a repository names itself)."""
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    n_tasks: int | None

    def _field(self, name: str) -> str:
        return f"datasets[{self.index}].{name}"

    def check(self, trial: _Trial) -> None:
        """Refuse *trial* when this dataset's filters leave its task out."""
        names = trial.filtered_as
        if self.include and not any(fnmatchcase(n, p) for n in names for p in self.include):
            raise SpecError(
                self.where, self._field("task_names"), f"{list(self.include)!r}, but "
                f"{trial.where} is a trial of task {trial.task!r}, which none of them names: "
                "a job runs only the tasks its filters keep (a trial of another job, or "
                "copied in); import each job's own folder",
            )  # fmt: skip
        for pattern in self.exclude:
            if any(fnmatchcase(name, pattern) for name in names):
                raise SpecError(
                    self.where, self._field("exclude_task_names"), f"{pattern!r} leaves task "
                    f"{trial.task!r} out, but {trial.where} is a trial of it: a job runs only "
                    "the tasks its filters keep (a trial of another job, or copied in); import "
                    "each job's own folder",
                )  # fmt: skip

    def within(self, ran: dict[str, _Trial]) -> None:
        """Refuse a dataset whose trials are of more tasks than its ``n_tasks``."""
        if self.n_tasks is None or self.n_tasks < 0 or len(ran) <= self.n_tasks:
            return
        extra = [trial.where for trial in list(ran.values())[self.n_tasks :]]
        shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        raise SpecError(
            self.where, self._field("n_tasks"), f"{self.n_tasks}, but the job's folder holds "
            f"trials of {counted(len(ran), 'task')} of dataset {self.source!r} (the tasks "
            f"whose first trial started last: {shown}): a job runs at most n_tasks of a "
            "dataset's tasks; import each job's own folder",
        )  # fmt: skip

    def missing(self, ran: dict[str, _Trial]) -> list[str] | None:
        """The tasks ``task_names`` names literally with no trial; ``None`` when which tasks
        the job was to run only its registry or dataset folder tells (no names, a glob, or
        an ``n_tasks`` that keeps some of them in the registry's order)."""
        if not self.include or any(GLOB & set(name) for name in self.include):
            return None
        names = [
            name for name in dict.fromkeys(self.include)
            if not any(fnmatchcase(name, pattern) for pattern in self.exclude)
        ]  # fmt: skip
        if self.n_tasks is not None and not 0 <= len(names) <= self.n_tasks:
            return None
        seen = {name for trial in ran.values() for name in trial.filtered_as}
        return [name for name in names if name not in seen]


@dataclass(frozen=True)
class _Lock:
    """A job's ``lock.json`` (Harbor's ``JobLock``, ``harbor/models/job/lock.py``: the inputs
    the job resolved before any trial ran): ``trials``, one ``TrialLock`` per trial it planned
    (every task ``n_attempts`` times, ``n_total_trials`` in all), each naming its task
    (``task.name``: its ``task_id``'s name, a local task's folder, a package's
    ``<org>/<name>``) and that task's content (``task.digest``, ``sha256:<hex>``); and
    ``harbor: {version, git_commit_hash}``, the harness that ran. Unlike ``config.json`` it
    names the tasks of every dataset, a registry's too, so which planned trials have no
    result is told by name; a trial it does not plan is refused. ``task.digest`` is not
    compared with the trials' ``task_checksum``: Harbor computes them differently (the lock's
    is its packager's content hash, or a registry package's own, prefixed ``sha256:``; a
    trial's is ``Task.checksum``, ``dirhash`` of the whole task folder), so one task's two
    differ by design, and a mismatch says nothing about which task ran."""

    where: str
    planned: dict[str, int]
    """Each task's name -> the trials planned of it."""
    digests: dict[str, tuple[str, ...]]
    """Each task's name -> the ``task.digest`` values its planned trials give."""
    harbor: dict[str, Any]

    @classmethod
    def read(cls, path: Path) -> _Lock | None:
        """The lock at *path*; ``None`` for a lock with no ``trials`` (another shape)."""
        where = str(path)
        data = read_json_object(path, "a Harbor job lock.json")
        if "trials" not in data:  # another Harbor version's lock: not ours to refuse
            return None
        trials = data.get("trials")
        if not isinstance(trials, list):
            raise SpecError(
                path, "trials", f"required: a list (a Harbor lock.json holds one entry per "
                f"trial the job planned), got {type(trials).__name__}",
            )  # fmt: skip
        planned: dict[str, int] = {}
        digests: dict[str, dict[str, None]] = {}
        for index, each in enumerate(trials):
            at = f"trials[{index}]"
            task = mapping(where, f"{at}.task", mapping(where, at, each).get("task"))
            name, digest = task.get("name"), task.get("digest")
            if not isinstance(name, str) or not name.strip():
                raise SpecError(path, f"{at}.task.name", f"required: the task's name, got {name!r}")
            if digest is not None and not isinstance(digest, str):
                raise SpecError(path, f"{at}.task.digest", f"must be text, got {digest!r}")
            planned[name] = planned.get(name, 0) + 1
            if digest is not None:
                digests.setdefault(name, {})[digest] = None
        harbor = mapping(where, "harbor", data.get("harbor"))
        return cls(
            where,
            planned,
            {name: tuple(seen) for name, seen in digests.items()},
            {"version": harbor.get("version"), "git_commit_hash": harbor.get("git_commit_hash")},
        )

    def name_of(self, trial: _Trial) -> str | None:
        """The planned task *trial* is of (by the name Harbor's lock gives it); ``None``: none."""
        return next((name for name in trial.filtered_as if name in self.planned), None)

    def digest(self, trial: _Trial) -> str | None:
        """The content of *trial*'s task the lock names, when it names one."""
        seen = self.digests.get(self.name_of(trial) or "", ())
        return seen[0] if len(seen) == 1 else None

    def check(self, file: Path, job: dict[str, Any], trials: list[_Trial]) -> list[str]:
        """Refuse trials the lock does not plan (of a task it does not name, or past the
        number it plans of a task: another job's, or copied in; read, each would be an
        attempt the job never ran, in a denominator) and a lock of another job (not
        ``n_total_trials`` entries); name the planned trials with no result."""
        total = _number(job.get("n_total_trials"))
        count = sum(self.planned.values())
        if total is not None and count != total:
            raise SpecError(
                self.where, "trials", f"{counted(count, 'trial')}, but {file} gives "
                f"n_total_trials {total} (Harbor locks each trial it plans): the two are of "
                "different jobs",
            )  # fmt: skip
        held: dict[str, int] = {}
        for trial in trials:
            name = self.name_of(trial)
            if name is None:
                raise SpecError(
                    self.where, "trials", f"plans no trial of task {trial.task!r}, but "
                    f"{trial.where} is one: a job runs only the trials it locked (a trial of "
                    "another job, or copied in); import each job's own folder",
                )  # fmt: skip
            held[name] = held.get(name, 0) + 1
            if held[name] > self.planned[name]:
                raise SpecError(
                    self.where, "trials", f"plans {counted(self.planned[name], 'trial')} of "
                    f"task {name!r}, but the job's folder holds more ({trial.where} started "
                    "last): a job runs only the trials it locked; import each job's own folder",
                )  # fmt: skip
        warnings = []
        short = [(n, held.get(n, 0), k) for n, k in self.planned.items() if held.get(n, 0) < k]
        if short:
            shown = ", ".join(f"{name!r} {got} of {k}" for name, got, k in short[:5])
            more = f" and {len(short) - 5} more" if len(short) > 5 else ""
            missing = sum(k - got for _, got, k in short)
            warnings.append(
                f"{self.where}: the job locked {counted(count, 'trial')}; "
                f"{counted(missing, 'trial')} of {counted(len(short), 'task')} "
                f"{'has' if missing == 1 else 'have'} no result ({shown}{more}): they are "
                "not in the batch, so no score counts them"
            )
        changed = sorted(name for name, seen in self.digests.items() if len(seen) > 1)
        if changed:
            warnings.append(
                f"{self.where}: {counted(len(changed), 'task')} locked in more than one "
                f"version (task.digest differs: {', '.join(map(repr, changed[:5]))})"
            )
        return warnings


def _listed_name(task: Any) -> str | None:
    """The name of a task a job config's ``tasks`` lists (a ``TaskConfig``), as its trials'
    ``task_id`` gives it: a local or git task's folder name, a package task's ``name``
    (``<org>/<name>``); ``None`` for an entry of neither form."""
    if not isinstance(task, dict):
        return None
    path, name = task.get("path"), task.get("name")
    if isinstance(path, str) and Path(path).name:
        return Path(path).name
    return name if isinstance(name, str) and name else None


def _filtered_as(trial: dict[str, Any]) -> tuple[str, ...]:
    """The name Harbor's dataset filters match a trial's task by: its ``task_id``'s
    (``get_name``: a local or git task's folder name, a package task's ``<org>/<name>``),
    which the trial's ``task_name`` need not be (a ``task.toml`` may name the task
    otherwise). A trial without a ``task_id`` of those forms: its ``task_name``, or that
    name's last part (a ``<org>/<name>``), either matching."""
    given = trial.get("task_id")
    if isinstance(given, dict):
        path, org, name = given.get("path"), given.get("org"), given.get("name")
        if isinstance(path, str) and Path(path).name:
            return (Path(path).name,)
        if isinstance(org, str) and isinstance(name, str) and org and name:
            return (f"{org}/{name}",)
    task = str(trial.get("task_name"))
    return tuple(dict.fromkeys((task, task.rsplit("/", 1)[-1])))


def _dataset_plans(where: str, given: Any) -> list[_Plan]:
    """The job config's ``datasets``, each's filters checked (a list of text, a count)."""
    if given is None:
        return []
    if not isinstance(given, list):
        raise SpecError(where, "datasets", f"must be a list, got {type(given).__name__}")
    plans = []
    for index, dataset in enumerate(given):
        at = f"datasets[{index}]"
        dataset = mapping(where, at, dataset)
        filters = []
        for key in ("task_names", "exclude_task_names"):
            names = dataset.get(key)
            if names is not None and (
                not isinstance(names, list) or not all(isinstance(n, str) for n in names)
            ):
                raise SpecError(where, f"{at}.{key}", f"must be a list of names, got {names!r}")
            filters.append(tuple(names or ()))
        n_tasks = dataset.get("n_tasks")
        if n_tasks is not None:
            n_tasks = integer(where, f"{at}.n_tasks", n_tasks)
        name, path = dataset.get("name"), dataset.get("path")
        source = None
        if dataset.get("repo") is None and isinstance(name, str) and name:
            source = name
        elif dataset.get("repo") is None and isinstance(path, str) and Path(path).name:
            source = Path(path).name  # Harbor's source: the folder's name
        plans.append(_Plan(where, index, source, filters[0], filters[1], n_tasks))
    return plans


def _trial_files(file: Path) -> list[Path]:
    """The trials' ``result.json`` files beside the job's *file*, each a regular file: a named
    pipe among them was waited on for ever. A trial's ``result.json`` that is a link to
    nowhere, or a link to nowhere named as Harbor names a trial's folder (``<task>__<id>``),
    is refused naming the link and its target (a glob skips both: the trial was
    "unfinished", out of every count)."""
    files = []
    for each in sorted(file.parent.iterdir()):
        if each.is_dir():
            if optional_file(each / "result.json"):
                files.append(each / "result.json")
        elif "__" in each.name and (gone := dangling_link(each)) is not None:
            raise SpecError(each, None, f"{gone} (a trial's folder, by its name)")
    return files


def _within_plan(file: Path, job: dict[str, Any], trials: list[_Trial]) -> None:
    """A job holds at most the trials it planned (``n_total_trials``: its tasks times
    ``n_attempts``, fixed when it starts; a retry replaces its trial's folder): more is a
    folder holding another job's trials too, or trials copied in, and which of them are this
    job's is not this reader's to guess (read as given, each task's denominator would grow by
    attempts the job never ran). Refused, naming the trials that started last (those most
    likely added), the first a trial whose ``config.job_id`` is not the job's ``id``."""
    total = job.get("n_total_trials")
    if total is None:
        return
    if isinstance(total, bool) or not isinstance(total, int) or total < 0:
        raise SpecError(file, "n_total_trials", f"must be a count, got {total!r}")
    if len(trials) <= total or len({(t.task, t.name) for t in trials}) < len(trials):
        return  # a trial given twice: the attempts' check names both places
    raise SpecError(
        file, "n_total_trials", f"{total}, but the job's folder holds {len(trials)} trials "
        f"with a result ({_extra(job.get('id'), trials, total)}): a job never holds more "
        "trials than it planned; import each job's own folder",
    )  # fmt: skip


def _extra(own: Any, trials: list[_Trial], planned: int) -> str:
    """The trials past *planned* (in the order they started) most likely added: those whose
    ``config.job_id`` is not the job's *own* id, else those that started last."""
    foreign = [t.where for t in trials if None not in (own, t.job_id) and t.job_id != own]
    extra = foreign or [t.where for t in trials[planned:]]
    shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
    return f"{'of another job' if foreign else 'started last'}: {shown}"


TRIAL_KEYS = frozenset({"trial_name", "task_name"})
JOB_KEYS = frozenset({"n_total_trials", "stats"})


UNREAD = ("rollout_details", "metadata")
"""What an ``AgentContext`` (a trial's, or a step's, ``agent_result``) holds that decides
nothing here: each model call's token ids and log-probabilities (kept for reinforcement
learning), and the agent's own notes; the bulk of a trial's file."""


def read_result(path: Path) -> dict[str, Any]:
    """A Harbor result file (a trial's or a job's), read value by value (:mod:`.stream`)
    with the values of :data:`UNREAD` read past, not held (their keys kept, as ``None``):
    a trial's file, mostly its rollouts, runs to hundreds of MB, and read whole it took
    several times that in memory before those values were dropped. The file is held to a
    whole parse's rules (cut short, a key twice, data after it: refused naming the line or
    the field)."""
    with json_stream(path, RECORD_LIMIT) as stream:
        if stream.peek() != "{":
            return read_json_object(path, "a Harbor result")  # names what it is instead
        result: dict[str, Any] = {}
        for key in stream.members():
            if key == "step_results" and stream.peek() == "[":
                result[key] = [_result_read(stream, at) for at in stream.places(key)]
            else:
                result[key] = _member(stream, key, key)
        stream.end()
    return result


def _result_read(stream: JsonStream, at: str) -> Any:
    """A step's result (one of ``step_results``), its ``agent_result`` read as a trial's is."""
    if stream.peek() != "{":
        return stream.value(at)
    return {key: _member(stream, key, f"{at}.{key}") for key in stream.members(at)}


def _member(stream: JsonStream, key: str, at: str) -> Any:
    """The value of *key* (at *at*): an ``agent_result`` object without its :data:`UNREAD`
    values, anything else whole."""
    if key != "agent_result" or stream.peek() != "{":
        return stream.value(at)
    context: dict[str, Any] = {}
    for name in stream.members(at):
        if name in UNREAD:
            stream.skip(f"{at}.{name}")  # down to its token ids, one list at a time
            context[name] = None
        else:
            context[name] = stream.value(f"{at}.{name}")
    return context


def is_trial(data: Any) -> bool:
    """*data* is a Harbor ``TrialResult`` (not a ``JobResult``)."""
    return isinstance(data, dict) and set(data) >= TRIAL_KEYS


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"required: the trial's name, got {value!r}")
    return as_text(value)


VERIFIER_KEYS = frozenset({"rewards", "aggregate_window_start", "aggregate_window_end"})
"""The keys of Harbor's ``VerifierResult`` (the window keys: a multi-turn fork's)."""


def _graded_otherwise(where: str, verified: dict[str, Any]) -> None:
    """A ``verifier_result`` without ``rewards`` is a trial never graded only when it holds
    nothing else: one that grades in another form (``{"reward": 1.0}``, as tools around
    Harbor write it) was read as never graded, its reward dropped and the attempt invalid."""
    other = sorted(set(verified) - VERIFIER_KEYS)
    if other:
        raise SpecError(
            where, f"verifier_result.{other[0]}", f"given ({verified[other[0]]!r}) where "
            "verifier_result has no rewards: Harbor grades as rewards: {KEY: value}; a trial "
            "graded in another form is not read as never graded: convert it",
        )  # fmt: skip


def _steps_graded(where: str, trial: dict[str, Any]) -> None:
    """A multi-step trial that ended without an exception and without a reward is never
    graded only when none of its steps is: Harbor aggregates its steps' rewards into the
    trial's, so graded steps under an ungraded trial are a file it did not write."""
    for index, step in enumerate(_steps(where, trial)):
        graded = step.get("verifier_result")
        if isinstance(graded, dict) and graded.get("rewards"):
            raise SpecError(
                where, f"step_results[{index}].verifier_result.rewards", "a step is graded "
                "where the trial is not (Harbor aggregates its steps' rewards into the "
                "trial's verifier_result): which reward decides would be a guess",
            )  # fmt: skip


WRITTEN = ("verifier_result", "exception_info")
"""What decides a trial, which Harbor writes for every trial (``TrialResult.model_dump_json``,
``null`` when there is none)."""


def _written(where: str, trial: dict[str, Any]) -> None:
    """A trial without :data:`WRITTEN` is none Harbor wrote: one stripped of its
    ``exception_info`` read as never graded (``grader_failure``, out of every denominator),
    though it raised and ``--errors agent`` counts it against the system."""
    for key in WRITTEN:
        if key not in trial:
            raise SpecError(
                where, key, "required (null when there is none): Harbor writes every trial's "
                "verifier_result and exception_info; without it, what decides the trial is "
                "a guess",
            )  # fmt: skip


def _exception(where: str, trial: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """Where the trial's first exception is and what it says: the trial's own, else the first
    step's of a multi-step trial (Harbor records a step's exception on the step only and
    still aggregates the steps' rewards into the trial's, so a step that timed out would
    otherwise be decided by that reward)."""
    if trial.get("exception_info") is not None:
        return "exception_info", mapping(where, "exception_info", trial["exception_info"])
    for index, step in enumerate(_steps(where, trial)):
        field = f"step_results[{index}].exception_info"
        if step.get("exception_info") is not None:
            return field, mapping(where, field, step["exception_info"])
    return "exception_info", None


def _steps(where: str, trial: dict[str, Any]) -> list[dict[str, Any]]:
    """A multi-step trial's ``step_results`` (none: ``[]``). Not a list of objects is refused:
    skipped, a step's exception would be lost and the trial decided by its reward."""
    steps = trial.get("step_results")
    if steps is None:
        return []
    if not isinstance(steps, list):
        raise SpecError(where, "step_results", f"must be a list, got {type(steps).__name__}")
    for index, step in enumerate(steps):
        if not isinstance(step, dict):
            raise SpecError(
                where, f"step_results[{index}]", f"must be an object, got {type(step).__name__}"
            )
    return steps


def _restated(file: Path, job: dict[str, Any], trials: list[_Trial]) -> str | None:
    """The job's ``stats.evals`` (``JobStats.increment``: each trial's name under each of its
    rewards' values, ``reward_stats: {key: {value: [trial names]}}``, and under its
    exception's type, ``exception_stats: {type: [trial names]}``) naming a trial the
    directory holds under a value or an exception its own ``result.json`` does not give:
    named in one warning (each trial's result is read; the stats were changed, or the trial
    changed, after the job). A trial the stats name and the directory does not hold is left
    to the count of trials, and a trial the stats do not name is not looked for (a job still
    running writes its stats as trials end)."""
    stats = job.get("stats")
    evals = stats.get("evals") if isinstance(stats, dict) else None
    held = {t.name: t.row.origin or {} for t in trials if isinstance(t.row, ImportedRow)}
    differ: list[str] = []
    for entry in evals.values() if isinstance(evals, dict) else ():
        if not isinstance(entry, dict):
            continue
        for key, values in _entries(entry.get("reward_stats")):
            for value, name in _entries(values):
                given = (held[name].get("rewards") or {}).get(key) if name in held else value
                if not _same_reward(value, given):
                    differ.append(f"{name!r} {key} {value} in the stats, {given!r} in its result")
        for kind, name in _entries(entry.get("exception_stats")):
            given = held[name].get("exception_type") if name in held else kind
            if given != kind:
                differ.append(f"{name!r} {kind} in the stats, exception {given!r} in its result")
    if not differ:
        return None
    more = f"; and {len(differ) - 5} more" if len(differ) > 5 else ""
    return (
        f"{file}: stats.evals names trials otherwise than their own result.json "
        f"({'; '.join(differ[:5])}{more}): each trial's result is read, and the stats were "
        "changed, or trials changed, after the job"
    )


def _entries(given: Any) -> Iterator[tuple[str, Any]]:
    """(key, each item) of a ``{key: [items]}`` of Harbor's stats; (key, value) of a
    ``{key: {...}}``; nothing of another shape (left unread)."""
    if not isinstance(given, dict):
        return
    for key, items in given.items():
        if isinstance(items, dict):
            yield key, items
        elif isinstance(items, list):
            yield from ((key, item) for item in items if isinstance(item, str))


def _same_reward(written: str, value: Any) -> bool:
    """A reward value as a key of ``reward_stats`` (JSON text: ``"1.0"``, ``"1"``) is *value*
    (*written* itself: a trial not held); a key that is no number is not compared."""
    if value == written:
        return True
    try:
        number = float(written)
    except ValueError:
        return True
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    return math.isclose(number, value, rel_tol=1e-9, abs_tol=1e-12)


def _dataset(trial: dict[str, Any]) -> str:
    """The dataset a trial's task is from, as Harbor's stats name it (``source``, or
    ``adhoc`` for a task given by path)."""
    source = trial.get("source")
    return source if isinstance(source, str) and source else "adhoc"


def _held(read: Callable[[str, dict[str, Any]], Any], where: str, trial: dict[str, Any]) -> Any:
    """What *read* makes of *trial*, or the :class:`SpecError` it raised (held: raised in its
    turn, a later trial's fault is not named before an earlier one's)."""
    try:
        return read(where, trial)
    except SpecError as error:
        return error


def _raised(held: Any) -> Any:
    if isinstance(held, SpecError):
        raise held
    return held


def _job_id(trial: dict[str, Any]) -> Any:
    config = trial.get("config")
    return config.get("job_id") if isinstance(config, dict) else None


def _started(trial: dict[str, Any]) -> str:
    started = trial.get("started_at")
    return started if isinstance(started, str) else ""


def _system_of(where: str, trial: dict[str, Any]) -> tuple[str, str]:
    """(agent name, model name) of a trial: what Harbor's stats key its evals by."""
    agent = mapping(where, "agent_info", trial.get("agent_info"))
    model = mapping(where, "agent_info.model_info", agent.get("model_info"))
    return str(agent.get("name")), str(model.get("name"))


def _usage(where: str, trial: dict[str, Any]) -> tuple[float | None, Tokens | None]:
    """Cost and tokens as Harbor sums them (``TrialResult.compute_token_cost_totals``): the
    trial's ``agent_result``, or a multi-step trial's steps' ``agent_result`` each."""
    single = trial.get("agent_result")
    if single is not None:
        contexts = [("agent_result", mapping(where, "agent_result", single))]
    else:
        given = [
            (f"step_results[{i}].agent_result", step["agent_result"])
            for i, step in enumerate(_steps(where, trial))
            if step.get("agent_result") is not None
        ]
        contexts = [(name, mapping(where, name, context)) for name, context in given]
    costs = [c.get("cost_usd") for _, c in contexts]
    cost = None
    if contexts and all(value is not None for value in costs):  # one unpriced: not known
        cost = sum(amount(where, f"{n}.cost_usd", c.get("cost_usd")) for n, c in contexts)
    if not contexts:
        return cost, None
    tokens = (  # a context that leaves a count out (null): the sum is not known
        total(count(where, f"{n}.n_input_tokens", c.get("n_input_tokens")) for n, c in contexts),
        total(count(where, f"{n}.n_output_tokens", c.get("n_output_tokens")) for n, c in contexts),
    )
    return cost, tokens


def _latency(where: str, trial: dict[str, Any]) -> float | None:
    """The agent's own time (``agent_execution``), not the environment's setup or the
    verifier's: a multi-step trial's steps' summed (Harbor times each step's agent phase on the
    step, and none on the trial); ``None`` when no agent phase finished."""
    if trial.get("agent_execution") is not None:
        return _duration(where, "agent_execution", trial["agent_execution"])
    timed = [
        _duration(where, f"step_results[{index}].agent_execution", step["agent_execution"])
        for index, step in enumerate(_steps(where, trial))
        if step.get("agent_execution") is not None
    ]
    return None if not timed or None in timed else sum(t for t in timed if t is not None)


def _duration(where: str, name: str, timing: Any) -> float | None:
    """The seconds between a phase's ``started_at`` and ``finished_at``; ``None`` when it did
    not finish."""
    timing = mapping(where, name, timing)
    return duration(where, name, timing.get("started_at"), timing.get("finished_at"))


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
