"""Terminal-Bench results: the ``results.json`` that ``tb run`` writes for a run.

A run's ``runs/<run_id>/results.json`` is a ``BenchmarkResults``: ``id``, ``results`` (one
``TrialResults`` per trial: ``trial_name``, ``task_id``, ``is_resolved``, ``failure_mode``,
``total_input_tokens``, ``total_output_tokens``, ``agent_started_at``, ``agent_ended_at`` ...)
and the figures computed from them (``resolved_ids``, ``unresolved_ids``, ``accuracy``,
``pass_at_k``). A trial is one attempt of its task; its name is
``<task>.<attempt>-of-<n_attempts>.<run_id>``, and the attempt number is its label. The
trials are read one at a time (:mod:`.stream`): a run's file grows with its trials and their
test results, and was read whole before.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
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
    as_text,
    checked,
    count,
    duration,
    mapping,
    planned,
    read_json_object,
    respelled,
    task_key,
)
from groundstate.importers.stream import RECORD_LIMIT, json_stream
from groundstate.records import INVALID_REASONS
from groundstate.rounding import counted
from groundstate.spec.files import optional_file

NORMAL = ("unset", "none")
"""Failure modes of a trial that ended normally (``unset``: the default, ``none``: the tests
ran): its tests decide (``is_resolved``)."""
TERMINAL_BENCH_ENDS: dict[str, str] = {
    "agent_timeout": "agent_failure/time_limit",
    "context_length_exceeded": "harness_compatibility_failure/context_window",
    "output_length_exceeded": "harness_compatibility_failure/output_limit",
    "fatal_llm_parse_error": "harness_compatibility_failure/parse_error",
}
"""A trial's ``failure_mode`` (``terminal_bench/agents/failure_mode.py``) -> ours, fixed before
any file is read. The failure decides before the tests: Terminal-Bench still runs them after
an agent timeout, and counts what they say; here, as for Harbor (its successor), the first
stop decides. ``fatal_llm_parse_error``: the model kept answering in a form the agent could
not parse (the pairing's, as a context window is)."""
UNGRADED_MODES = ("test_timeout", "parse_error")
"""Failure modes of tests that could not grade the final state (they timed out, or their
output could not be parsed): an agent can provoke that as a broken test can, so they follow
``--errors`` (``agent_failure/ungraded`` or ``grader_failure``), as a Harbor verifier's
errors do."""
UNATTRIBUTED = ("unknown_agent_error", "agent_installation_failed", "unknown")
"""Failure modes Terminal-Bench sets without saying whose the failure was
(``agent_installation_failed``: the install is the system's own script, run in the task's
container; ``unknown``: declared, never set): they follow ``--errors``, as does a mode not
known here (with a warning)."""
PASSED = "passed"
"""A test's status in ``parser_results`` when it passed (``UnitTestStatus.PASSED``)."""
STATUSES = (PASSED, "failed")
"""Every status ``parser_results`` holds (``UnitTestStatus``: a pytest skip or xfail is
written ``passed``, an error ``failed``)."""


def _tests(where: str, given: Any, resolved: bool | None) -> dict[str, Any] | None:
    """The trial's ``parser_results`` (test -> ``passed``/``failed``, Terminal-Bench's two
    ``UnitTestStatus`` values: any other is none it wrote), checked against its
    ``is_resolved``, which Terminal-Bench computes from them (``_is_resolved``: every test
    passed) whatever the trial's ``failure_mode`` (after an agent's failure the tests still
    run, and both are written): a trial that says otherwise is a file it did not write, and
    was decided by ``is_resolved`` alone (an edited ``true`` passed a trial whose tests
    failed). Test results beside an ``is_resolved`` of null are none it wrote either (it sets
    both together). ``None``: not given. Terminal-Bench also calls a trial with no test
    results (``{}``: the test output held no status line, which the system under test can
    bring about) resolved; the caller reads that as ungraded."""
    if given is None:
        return None
    tests = mapping(where, "parser_results", given)
    for name, status in tests.items():
        if status not in STATUSES:
            raise SpecError(
                where, f"parser_results.{name}", f"must be 'passed' or 'failed' (Terminal-"
                f"Bench's test statuses), got {status!r}",
            )  # fmt: skip
    if resolved is None:
        if tests:
            raise SpecError(
                where, "is_resolved", f"null, but parser_results holds {len(tests)} test "
                "results: Terminal-Bench sets is_resolved from them whenever it has them",
            )  # fmt: skip
        return tests
    failed = [name for name, status in tests.items() if status != PASSED]
    if resolved and failed:
        raise SpecError(
            where, f"parser_results.{failed[0]}", f"{tests[failed[0]]!r}, but is_resolved is "
            "true: Terminal-Bench resolves a trial only when every test passed",
        )  # fmt: skip
    if not resolved and tests and not failed:
        raise SpecError(
            where, "is_resolved",
            ("false, but the one test" if len(tests) == 1 else f"false, but all {len(tests)} tests")
            + " in parser_results passed: Terminal-Bench resolves such a trial",
        )  # fmt: skip
    return tests


KNOWN_MODES = (*NORMAL, *TERMINAL_BENCH_ENDS, *UNGRADED_MODES, *UNATTRIBUTED)
"""Every ``failure_mode`` read by name (``FailureMode``'s values, all lower case)."""


def _mode(where: str, trial: dict[str, Any]) -> str:
    """The trial's ``failure_mode``: required (``tb run`` writes it for every trial, ``unset``
    when nothing failed: one left out would read as a normal end, decided by ``is_resolved``),
    text, and not another spelling of a known mode (``"PARSE_ERROR"``, ``"Parse_Error "`` is
    none it writes: read as a mode not known here it followed ``--errors`` as a crash). A mode
    of another spelling altogether is one of a later version: its warning says so."""
    if "failure_mode" not in trial:
        raise SpecError(
            where, "failure_mode", "required: tb run writes every trial's failure_mode ('unset' "
            "when nothing failed); left out, the trial would read as one that ended normally",
        )  # fmt: skip
    mode = trial["failure_mode"]
    if not isinstance(mode, str):
        raise SpecError(where, "failure_mode", f"must be text, got {mode!r}")
    if (spelled := respelled(mode, KNOWN_MODES)) is not None:
        raise SpecError(
            where, "failure_mode", f"{mode!r} is not how Terminal-Bench writes {spelled!r} (its "
            "failure modes are lower case): a file it did not write",
        )  # fmt: skip
    return mode


def _ungraded(where: str, mode: str, resolved: bool | None, tests: Any) -> None:
    """A trial whose tests timed out or whose test output could not be parsed has no verdict:
    ``tb run`` returns it before it parses the tests or sets ``is_resolved``, so both are
    null. One that gives either is a file it did not write (an edited ``parse_error`` beside
    ``is_resolved: true`` was in ``resolved_ids`` and ``n_resolved``, Terminal-Bench's own
    figures, and a failure or an invalid attempt here: which to believe is no guess for this
    reader)."""
    if resolved is not None:
        field, said = "is_resolved", json.dumps(resolved)
    elif tests is not None:
        field, said = "parser_results", f"{len(tests)} test results"
    else:
        return
    raise SpecError(
        where, field, f"{said}, but failure_mode is {mode!r}: tb run stops such a trial "
        "before its tests are parsed and writes it with is_resolved and parser_results null",
    )  # fmt: skip


TRIAL_KEYS = frozenset({"trial_name", "task_id", "is_resolved", "failure_mode"})
"""What marks one trial's ``results.json`` (``runs/<run>/<task>/<trial>/results.json``)."""
ATTEMPT = re.compile(r"\.(\d+)-of-(\d+)(?:\.|$)")
"""The attempt number and the run's ``n_attempts`` in a trial's name (``hello.2-of-3.run-1``):
``tb run`` names a trial ``<task>.<attempt>-of-<n_attempts>.<run_id>`` for each attempt in
``range(1, n_attempts + 1)`` (``Harness._get_trial_name``)."""


LISTED: Any = object()
"""What :attr:`TerminalBenchSource._run` holds for a ``results`` list, read by ``rows``."""


@dataclass(frozen=True, slots=True)
class _Seen:
    """What the run's figures are checked against, of one trial read."""

    name: str
    """The trial's name, as written (``repr``: two trials of one name are told apart)."""
    task: Any
    resolved: bool
    attempt: tuple[int, int] | None
    """The attempt number and the run's ``n_attempts`` its name gives (``None``: none)."""
    invalid: str | None = None
    """How the trial ended when that makes it invalid here (``parse_error``, ``not graded``)."""
    stopped: str | None = None
    """The failure mode of a trial that mode decided though its tests passed."""


@dataclass
class TerminalBenchSource:
    """A Terminal-Bench run's ``results.json``."""

    path: Path
    errors: ErrorPolicy = "agent"
    format: str = "terminal-bench"
    _seen: list[_Seen] | None = field(default=None, repr=False)
    """The trials :meth:`rows` read, for the figures (``None``: not read yet)."""

    @cached_property
    def _run(self) -> dict[str, Any]:
        """Every top-level key, a ``results`` list kept as :data:`LISTED` (its trials are read
        one at a time by :meth:`rows`; the figures ``tb run`` writes come after it)."""
        run: dict[str, Any] = {}
        with json_stream(self.path, RECORD_LIMIT) as stream:
            if stream.peek() != "{":
                return read_json_object(self.path, "a Terminal-Bench results file")
            for key in stream.members():
                if key == "results" and stream.peek() == "[":
                    stream.skip(key)
                    run[key] = LISTED
                else:
                    run[key] = stream.value(key)
            stream.end()
        return run

    @cached_property
    def _metadata(self) -> _Plan | None:
        """What the run planned, from the ``run_metadata.json`` ``tb run`` writes beside its
        ``results.json`` (``RunMetadata``: ``task_ids``, the tasks it ran, and ``n_attempts``;
        ``run_id``); ``None``: no such file (or a trial's own file given)."""
        file = self.path.parent / METADATA
        if is_trial(self._run) or not optional_file(file):  # a link to nowhere: refused
            return None
        data = read_json_object(file, "a Terminal-Bench run_metadata.json")
        where = str(file)
        attempts, tasks = planned(
            where, "n_attempts", data.get("n_attempts"), "task_ids", data.get("task_ids"),
            repeated="tb run runs a task n_attempts times, whatever the list says, so the plan "
            "is not this",
        )  # fmt: skip
        run_id = data.get("run_id")
        return _Plan(where, tasks, attempts, run_id if isinstance(run_id, str) else None)

    def _trials(self) -> Iterator[Any]:
        """The run's trials, one at a time (a trial's own file: that trial)."""
        if is_trial(self._run):
            yield self._run
            return
        trials = self._run.get("results")
        if trials is not LISTED:
            raise SpecError(self.path, "results", f"must be a list of trials, got {trials!r}")
        with json_stream(self.path, RECORD_LIMIT) as stream:
            for key in stream.members():
                if key == "results":
                    yield from stream.elements(key)

    def rows(self) -> Iterator[ImportedRow]:
        seen: list[_Seen] = []
        once = OnceEach("trial")
        planned: tuple[int, int, str] | None = None  # n_attempts, the first to say it, run id
        plan = self._metadata
        tried: Counter[Any] = Counter()  # each task's trials so far
        for index, given in enumerate(self._trials(), start=1):
            where = self.place(index)
            row = self._row(index, where, given)
            trial = mapping(where, "trial", given)
            once.check(self.place(index), "id", trial.get("id"), trial.get("trial_name"))
            name = str(trial["trial_name"])  # text: _row checked it
            attempt = _attempt(self.place(index), name)
            _of_task(self.place(index), name, trial.get("task_id"))
            if plan is not None:
                plan.check(self.place(index), name, attempt)
                plan.within(self.place(index), trial.get("task_id"), tried)
            if attempt is not None and planned is None:
                planned = (attempt[1], index, _run_of(name))
            elif attempt is not None and planned is not None:
                _same_run(self.place(index), name, attempt[1], planned, self.place(planned[1]))
            resolved = trial.get("is_resolved") is True
            invalid = row.terminal_reason.split("/")[0] in INVALID_REASONS
            end = (row.mapped or "").split(" -> ")[0] if invalid else None
            mode = _mode(where, trial)
            stopped = mode if resolved and not invalid and mode not in NORMAL else None
            seen.append(_Seen(repr(trial.get("trial_name")), trial.get("task_id"), resolved,
                              attempt, end, stopped))  # fmt: skip
            yield row
        self._seen = seen

    def _row(self, line: int, where: str, given: Any) -> ImportedRow:
        trial = mapping(where, "trial", given)
        if not trial:
            raise SpecError(where, "trial", "must be a trial (trial_name, task_id, ...)")
        name = checked(where, "trial_name", as_text, trial.get("trial_name"))
        attempt = _attempt(where, name)
        mode = _mode(where, trial)
        if "is_resolved" not in trial:  # Terminal-Bench writes it, null when never graded
            raise SpecError(
                where, "is_resolved", "required: true, false or null (a trial without it is "
                "not one Terminal-Bench wrote, and read as never graded it would be invalid)",
            )  # fmt: skip
        resolved = trial.get("is_resolved")
        if resolved is not None and not isinstance(resolved, bool):
            raise SpecError(where, "is_resolved", f"must be true, false or null, got {resolved!r}")
        given = [trial.get(k) for k in ("total_input_tokens", "total_output_tokens")]
        tokens = (count(where, "total_input_tokens", given[0]),
                  count(where, "total_output_tokens", given[1]))  # fmt: skip
        agent = [trial.get(k) for k in ("agent_started_at", "agent_ended_at")]
        tests = _tests(where, trial.get("parser_results"), resolved)  # whatever the mode
        if mode in UNGRADED_MODES:
            _ungraded(where, mode, resolved, tests)
        common: dict[str, Any] = {
            "line": line,
            "task_id": task_key(where, "task_id", trial.get("task_id")),
            "label": attempt[0] if attempt else name,
            "tokens": None if given == [None, None] else tokens,
            "latency": duration(where, "agent_started_at", *agent),
            "origin": {"trial_name": name, "failure_mode": mode, "is_resolved": resolved},
        }
        if mode not in NORMAL:
            if mode in TERMINAL_BENCH_ENDS:
                reason = TERMINAL_BENCH_ENDS[mode]
            else:
                reason = (UNGRADED if mode in UNGRADED_MODES else ERROR_REASONS)[self.errors]
            known = mode in KNOWN_MODES
            return ImportedRow(
                **common, success=False, terminal_reason=reason, mapped=f"{mode} -> {reason}",
                unmapped=None if known else f"failure_mode {mode!r} is not one known here: "
                f"{reason}, by --errors",
            )  # fmt: skip
        if resolved is None:  # the tests never gave a verdict: not a failure of the agent
            return ImportedRow(
                **common, success=False, terminal_reason="grader_failure",
                mapped="not graded -> grader_failure",
            )  # fmt: skip
        if tests == {} and resolved:  # no test gave a verdict: not a pass
            reason = UNGRADED[self.errors]
            return ImportedRow(
                **common, success=False, terminal_reason=reason,
                mapped=f"resolved with no test results -> {reason}",
            )  # fmt: skip
        reason = "success" if resolved else "agent_failure/incorrect"
        return ImportedRow(
            **common, success=resolved, terminal_reason=reason,
            mapped=f"{'resolved' if resolved else 'unresolved'} -> {reason}",
        )  # fmt: skip

    def place(self, line: int) -> str:
        return str(self.path) if is_trial(self._run) else f"{self.path}:results[{line - 1}]"

    def warnings(self) -> list[str]:
        """The trials invalid here, named (:func:`_invalid`); a run whose figures contradict
        its trials is refused (called once every trial was read, before anything is
        stored)."""
        if self._seen is None:  # the trials not read yet: read (and checked) now
            deque(self.rows(), maxlen=0)
        invalid = _invalid(self.path, self._seen or []) + self._stopped()
        return invalid if is_trial(self._run) else self._check_figures() + invalid

    def _stopped(self) -> list[str]:
        """The trials a failure mode decided though their tests passed, named in one warning
        (:class:`StoppedRewards`): Terminal-Bench's accuracy counts them resolved."""
        stops = StoppedRewards(
            "Terminal-Bench's own accuracy counts (it runs the tests after an agent timeout, "
            "and resolves a trial by them alone)",
            counts=True,
        )
        for trial in self._seen or []:
            if trial.stopped is not None:
                stops.note(f"trial {trial.name}", f"{trial.stopped}, is_resolved true")
        return stops.warnings(self.path)

    def _check_figures(self) -> list[str]:
        """The figures ``tb run`` computes from the trials (``BenchmarkResults``: the task id
        of each resolved trial and of each other one, and their counts), where the file gives
        them, must be the trials': a file whose figures say otherwise was edited or cut, and
        which of the two to believe is not this reader's to guess (refused). An ``accuracy``
        other than the resolved share of the trials is named in a warning. A trial given
        twice is left to the attempts' check, which names both places."""
        trials = self._seen or []
        if len({t.name for t in trials}) < len(trials):
            return []
        warnings = _unrun(self.path, trials, self._metadata)
        resolved = Counter(_hashable(t.task) for t in trials if t.resolved)
        other = Counter(_hashable(t.task) for t in trials if not t.resolved)
        for name, expected in (("resolved_ids", resolved), ("unresolved_ids", other)):
            given = self._run.get(name)
            if given is None:
                continue
            if not isinstance(given, list) or not all(isinstance(i, str | int) for i in given):
                raise SpecError(self.path, name, f"must be a list of task ids, got {given!r}")
            if Counter(_hashable(i) for i in given) != expected:
                raise SpecError(
                    self.path, name, f"lists {_listed(Counter(map(_hashable, given)))}, but the "
                    f"trials give {_listed(expected)}: the file was edited or cut",
                )  # fmt: skip
        for name, expected_count in (
            ("n_resolved", resolved.total()),
            ("n_unresolved", other.total()),
        ):
            given = count(str(self.path), name, self._run.get(name))  # "1" is no count tb writes
            if given is not None and given != expected_count:
                raise SpecError(
                    self.path, name, f"{given!r}, but {expected_count} trials are counted so: "
                    "the file was edited or cut",
                )  # fmt: skip
        accuracy = self._run.get("accuracy")
        share = resolved.total() / len(trials) if trials else 0.0
        if accuracy is not None and not _is_number(accuracy):
            warnings.append(
                f"{self.path}: accuracy is {accuracy!r}, not a number (tb run writes a JSON "
                "number): not checked; the figures here are the trials'"
            )
        elif accuracy is not None and not _near(accuracy, share):
            warnings.append(
                f"{self.path}: accuracy is {accuracy!r}, but {resolved.total()} of "
                f"{len(trials)} trials are resolved ({share:.6g}): the figures here are the "
                "trials'"
            )
        return warnings + _pass_at_k(self.path, self._run.get("pass_at_k"), trials)

    def system(self) -> dict[str, Any]:
        return {"harness": "terminal-bench", "run_id": self._run.get("id"), "errors": self.errors}


def _is_number(value: Any) -> bool:
    """*value* is a JSON number, as ``tb run`` writes its figures (not text, not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _near(given: Any, computed: float) -> bool:
    """*given* is a number and *computed*, to a float's rounding."""
    return _is_number(given) and abs(given - computed) <= 1e-9


def _pass_at_k(path: Path, given: Any, trials: list[_Seen]) -> list[str]:
    """The ``pass_at_k`` figures ``tb run`` computes from the trials (``BenchmarkResults``: for
    each k, the mean over the tasks with k trials or more of the unbiased estimator
    ``1 - C(n - c, k) / C(n, k)``, n trials, c of them resolved) that the trials give
    otherwise, named in one warning: the figures here are the trials'. A key that is not a
    k (a whole number from 1), or a figure ``null``, is left alone."""
    if not isinstance(given, dict):
        return []
    tasks: dict[Any, list[bool]] = {}
    for trial in trials:
        tasks.setdefault(_hashable(trial.task), []).append(trial.resolved)
    differ = []
    for key, value in given.items():
        if value is None or not re.fullmatch(r"[1-9][0-9]{0,5}", key):
            continue
        k = int(key)
        held = [
            1 - math.comb(len(r) - sum(r), k) / math.comb(len(r), k)
            for r in tasks.values()
            if len(r) >= k
        ]
        if not _is_number(value):
            differ.append(f"pass@{k} {value!r}, not a number (not checked)")
        elif not held:
            differ.append(f"pass@{k} {value!r}, but no task has {k} trials")
        elif not _near(value, figure := math.fsum(held) / len(held)):
            differ.append(f"pass@{k} {value!r}, but the trials give {figure:.6g}")
    if not differ:
        return []
    return [
        f"{path}: pass_at_k gives {'; '.join(differ)}: the figures here are the trials' (the "
        "figure was changed, or trials taken out or changed, after the run)"
    ]


def _attempt(where: str, name: str) -> tuple[int, int] | None:
    """The attempt number and the run's ``n_attempts`` a trial's name gives (``None``: a name
    of no such form, whose label is the name). An attempt outside 1 to ``n_attempts`` is none
    ``tb run`` wrote: read as given it would be an attempt past the run's count, or one
    numbered from 0 beside 1 to n."""
    found = ATTEMPT.search(name)
    if found is None:
        return None
    number, planned = int(found.group(1)), int(found.group(2))
    if not 1 <= number <= planned:
        raise SpecError(
            where, "trial_name", f"{name!r} is attempt {number} of {planned}: tb run names "
            "its trials <task>.<attempt>-of-<n_attempts>.<run_id> for attempts 1 to "
            "n_attempts, so this trial is none it wrote",
        )  # fmt: skip
    return number, planned


def _run_of(name: str) -> str:
    """The run id a trial's name ends with (``hello.2-of-3.<run_id>``; empty: none)."""
    found = ATTEMPT.search(name)
    return "" if found is None else name[found.end() :]


def _same_run(where: str, name: str, attempts: int, first: tuple[int, int, str], at: str) -> None:
    """A trial is of the run the file's first named trial is of: one tb run has one
    ``n_attempts`` and one run id, which ends every trial's name. Trials of two runs merged
    in one file (the same task's attempt 1 from one, attempt 2 from another: two systems or
    two configurations, perhaps) read as one run's attempts."""
    if attempts != first[0]:
        raise SpecError(
            where, "trial_name", f"{name!r} is of {attempts} attempts, but {at} is of "
            f"{first[0]}: one tb run has one n_attempts (merged runs are imported one at a time)",
        )  # fmt: skip
    if _run_of(name) != first[2]:
        raise SpecError(
            where, "trial_name", f"{name!r} is of run {_run_of(name)!r}, but {at} is of run "
            f"{first[2]!r}: one tb run names every trial with its run id (merged runs are "
            "imported one at a time)",
        )  # fmt: skip


def _of_task(where: str, name: str, task: Any) -> None:
    """A trial named ``<task>.<k>-of-<n>...`` is of that task: one whose ``task_id`` is another
    is none ``tb run`` wrote (its results copied or edited across tasks), and read as given
    its verdict would count for a task that may never have run it."""
    found = ATTEMPT.search(name)
    if found is None or not isinstance(task, str | int) or isinstance(task, bool):
        return
    named = name[: found.start()]
    if named != str(task):
        raise SpecError(
            where, "task_id", f"{task!r}, but its trial_name {name!r} is of task {named!r}: "
            "tb run names each trial after its task, so this trial's task is unclear",
        )  # fmt: skip


METADATA = "run_metadata.json"
"""What ``tb run`` writes beside a run's ``results.json``: the run's plan."""


@dataclass(frozen=True)
class _Plan:
    """A run's ``run_metadata.json``: its tasks and attempts (``None``: not given)."""

    where: str
    tasks: list[str] | None
    attempts: int | None
    run_id: str | None

    def check(self, at: str, name: str, attempt: tuple[int, int] | None) -> None:
        """A trial is of this run: its name's ``n_attempts`` and run id are the plan's."""
        if attempt is not None and self.attempts is not None and attempt[1] != self.attempts:
            raise SpecError(
                at, "trial_name", f"{name!r} is of {attempt[1]} attempts, but {self.where} "
                f"plans n_attempts {self.attempts}: a trial of another run, or another plan",
            )  # fmt: skip
        rest = _run_of(name)
        if self.run_id is not None and rest and rest != self.run_id:
            raise SpecError(
                at, "trial_name", f"{name!r} is of run {rest!r}, but {self.where} is of run "
                f"{self.run_id!r} (run_id): a trial of another run",
            )  # fmt: skip

    def within(self, at: str, task: Any, tried: Counter[Any]) -> None:
        """A task holds at most ``n_attempts`` trials (*tried*: each task's trials before this
        one, this one's counted here): trials not named ``k-of-n`` have no attempt number for
        the batch's check, and one past the plan would be an attempt the run never made."""
        key = _hashable(task)
        tried[key] += 1
        if self.attempts is not None and tried[key] > self.attempts:
            raise SpecError(
                at, "task_id", f"{task!r} has {tried[key]} trials here, but {self.where} plans "
                f"n_attempts {self.attempts}: a trial of another run, or one given twice",
            )  # fmt: skip


def _unrun(path: Path, trials: list[_Seen], plan: _Plan | None = None) -> list[str]:
    """The attempts the run planned (each task's trials name ``n_attempts``; a
    ``run_metadata.json`` beside the file gives its ``task_ids`` and ``n_attempts``) that it
    does not hold: a run stopped before its end, or trials taken out of its file. Named, as
    their tasks have fewer attempts. Without the run's metadata a task with no trial at all
    is not known here; with it, such a task is named, and a task it does not list too."""
    listed = None if plan is None else plan.tasks
    numbered: dict[Any, set[int]] = {}
    held = Counter(_hashable(t.task) for t in trials)
    present = set(held)
    planned = 0 if plan is None or plan.attempts is None else plan.attempts
    for t in trials:
        if t.attempt is not None:
            numbered.setdefault(_hashable(t.task), set()).add(t.attempt[0])
            planned = t.attempt[1]
    tasks = list(numbered)
    if plan is not None and plan.attempts is not None:  # every task's count is planned
        tasks = list(held)
    if listed is not None:
        planned = planned or 1  # trials not named k-of-n: at least one each
        tasks = listed + [task for task in held if task not in set(listed)]

    def _lost(task: Any, n: int) -> bool:
        """Attempt *n* of *task* is not held: by its number when its trials are named k-of-n,
        else by their count (the trials held are its first attempts)."""
        if task in numbered:
            return n not in numbered[task]
        return n > held[task]

    lost = [(task, n) for task in tasks for n in range(1, planned + 1) if _lost(task, n)]
    warnings = []
    if lost:
        named = ", ".join(f"{task!r} attempt {n}" for task, n in lost[:5])
        more = f" and {len(lost) - 5} more" if len(lost) > 5 else ""
        shown = counted(len(tasks), "task")
        if listed is not None:
            plans = f"{METADATA} plans ({shown} of its task_ids and the trials'"
        elif plan is not None and plan.attempts is not None:
            plans = f"{METADATA} plans ({shown} with trials"
        else:
            plans = f"its trial names plan ({shown}"
        warnings.append(
            f"{path}: {len(lost)} of the {len(tasks) * planned} trials {plans} x n_attempts "
            f"{planned}) are not in results: {named}{more}: not imported, so their tasks have "
            "fewer attempts (a task with no trial is in no figure), and a missing attempt is "
            "in no denominator"
        )
    if listed is not None:
        extra = sorted({str(task) for task in present if task not in set(listed)})
        if extra:
            shown = ", ".join(map(repr, extra[:5])) + (" ..." if len(extra) > 5 else "")
            warnings.append(
                f"{path}: {counted(len(extra), 'task')} with trials "
                f"{'is' if len(extra) == 1 else 'are'} not among {plan and plan.where} "
                f"task_ids ({shown}): imported as given"
            )
    return warnings


def _invalid(path: Path, trials: list[_Seen]) -> list[str]:
    """The trials that are invalid here (an ungraded end under ``--errors environment``, a
    trial never graded), named: Terminal-Bench's accuracy counts each as unresolved, and here
    they are in no denominator of the valid attempts. ``tb run`` writes ``parse_error`` over
    the agent's own failure mode (it sets the mode when the tests' output cannot be parsed,
    whatever the agent did), so such a trial may hide an agent's timeout or error."""
    ends = Counter(t.invalid for t in trials if t.invalid)
    if not ends:
        return []
    shown = ", ".join(f"{end} x{n}" for end, n in sorted(ends.items()))
    them = "it" if ends.total() == 1 else "them"
    masked = (
        "; tb run writes parse_error over the agent's own failure mode (an agent_timeout, an "
        "agent error), so a parse_error trial may hide one: --errors agent counts them against "
        "the system" if "parse_error" in ends else ""
    )  # fmt: skip
    return [
        f"{path}: {counted(ends.total(), 'trial')} {'is' if ends.total() == 1 else 'are'} "
        f"invalid here ({shown}), in no denominator of the valid attempts (Terminal-Bench's "
        f"accuracy counts {them} unresolved, as the report's 'invalid = failure' view "
        f"does){masked}"
    ]


def _hashable(value: Any) -> Any:
    return value if isinstance(value, str | int) else repr(value)


def _listed(ids: Counter[Any]) -> str:
    shown = [f"{i!r}" + (f" x{n}" if n > 1 else "") for i, n in sorted(ids.items(), key=str)]
    return "[" + ", ".join(shown[:5]) + (", ..." if len(shown) > 5 else "") + "]"


def is_trial(data: Any) -> bool:
    """*data* is one Terminal-Bench trial's results (a ``TrialResults``), not a row of ours
    (which gives ``attempt`` and ``success``)."""
    return (
        isinstance(data, dict)
        and set(data) >= TRIAL_KEYS
        and not {"attempt", "success"} & set(data)
    )
