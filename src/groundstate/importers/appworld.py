"""AppWorld evaluations: ``experiments/outputs/<experiment>/evaluations/<dataset>.json``.

``appworld evaluate`` (``appworld.evaluator.evaluate_dataset``) writes ``{aggregate:
{task_goal_completion, scenario_goal_completion}, individual: {<task_id>: {success,
difficulty, num_tests, passes: [{requirement, label}], failures: [{requirement, trace,
label}]}}}`` (``TestTracker.to_dict`` per task). Each task is evaluated once per experiment:
every attempt is labelled 1. A task id is ``<scenario>_<n>`` (``task_id_to_generator_id``):
the tasks of one scenario are variants of one goal, and AppWorld's scenario goal completion
counts a scenario only when all of them succeed. The tasks are read one at a time
(:mod:`.stream`): each holds its failed tests' traces, and the file was read whole before.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from groundstate.errors import SpecError
from groundstate.importers.rows import (
    ImportedRow,
    as_integer,
    as_number,
    checked,
    integer,
    mapping,
    read_json_object,
    task_key,
)
from groundstate.importers.stream import RECORD_LIMIT, json_stream
from groundstate.rounding import counted

FAILURE = "agent_failure/incorrect_state"
"""AppWorld's tests check the apps' databases at the end (and the answer, against the
ground truth's): a failed test is a wrong final state."""


TASKS: Any = object()
"""What :attr:`AppWorldSource._evaluation` holds for an ``individual`` object (its tasks are
read one at a time by ``rows``)."""


@dataclass
class AppWorldSource:
    """An AppWorld evaluation file."""

    path: Path
    format: str = "appworld"
    _seen: list[tuple[str, str, bool]] | None = field(default=None, repr=False)
    """(where, task id, success) of each task :meth:`rows` read (``None``: not read yet)."""

    @cached_property
    def _evaluation(self) -> dict[str, Any]:
        """Every top-level key, an ``individual`` object kept as :data:`TASKS`."""
        evaluation: dict[str, Any] = {}
        with json_stream(self.path, RECORD_LIMIT) as stream:
            if stream.peek() != "{":
                return read_json_object(self.path, "an AppWorld evaluation")
            for key in stream.members():
                if key == "individual" and stream.peek() == "{":
                    stream.skip(key)
                    evaluation[key] = TASKS
                else:
                    evaluation[key] = stream.value(key)
            stream.end()
        return evaluation

    def _tasks(self) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """(where, task id, report) of each task, in the file's order, one at a time."""
        individual = self._evaluation.get("individual")
        if individual is None and (
            "aggregate" in self._evaluation or aggregate_only(self._evaluation)
        ):
            raise SpecError(
                self.path, "individual", "an aggregate only: the per-task results are needed "
                "(evaluate without aggregate_only, as `appworld evaluate` does)",
            )  # fmt: skip
        if individual is None:
            raise SpecError(self.path, "individual", "required: an AppWorld evaluation's tasks")
        if individual is not TASKS:
            mapping(str(self.path), "individual", individual)  # says what it is instead
        with json_stream(self.path, RECORD_LIMIT) as stream:
            for key in stream.members():
                if key != "individual":
                    continue
                for task_id in stream.members(key):
                    where = f"{self.path}:individual.{task_id}"
                    report = stream.value(f"{key}.{task_id}")
                    yield where, task_key(where, "task_id", task_id), mapping(where, "task", report)

    def rows(self) -> Iterator[ImportedRow]:
        seen: list[tuple[str, str, bool]] = []
        for index, (where, task_id, report) in enumerate(self._tasks(), start=1):
            row = _row(where, index, task_id, report)
            seen.append((where, task_id, row.success))
            yield row
        self._seen = seen

    def _read(self) -> list[tuple[str, str, bool]]:
        """The tasks :meth:`rows` read (read, and checked, now if they were not)."""
        if self._seen is None:
            deque(self.rows(), maxlen=0)
        return self._seen or []

    def place(self, line: int) -> str:
        return self._read()[line - 1][0]

    def warnings(self) -> list[str]:
        """The file's own figures recomputed from its tasks: a file edited after AppWorld wrote
        it (or a subset of its tasks) gives other numbers than it states."""
        aggregate = self._evaluation.get("aggregate")
        if not isinstance(aggregate, dict):
            return []
        tgc, sgc = self._completion()
        warnings = []
        for key, old, value in (
            ("task_goal_completion", "strict", tgc),
            ("scenario_goal_completion", "grouped_strict", sgc),
        ):
            stated = aggregate.get(key, aggregate.get(old))
            try:
                differs = stated is not None and abs(as_number(stated) - value) > 0.051
            except ValueError:
                differs = True
            if differs:
                warnings.append(
                    f"{self.path}: aggregate.{key} is {stated!r}, but its tasks give {value:.1f}"
                )
        return warnings

    def _completion(self) -> tuple[float, float]:
        """Task and scenario goal completion (percent) as AppWorld computes them."""
        scenarios: dict[str, list[bool]] = {}
        for _, task_id, success in self._read():
            scenarios.setdefault(scenario(task_id), []).append(success)
        tasks = [ok for oks in scenarios.values() for ok in oks]
        if not tasks:
            return 0.0, 0.0
        tgc = 100 * sum(tasks) / len(tasks)
        sgc = 100 * sum(all(oks) for oks in scenarios.values()) / len(scenarios)
        return round(tgc, 1), round(sgc, 1)

    def system(self) -> dict[str, Any]:
        tgc, sgc = self._completion()
        return {
            "harness": "appworld",
            "experiment": self.path.parent.parent.name,
            "dataset": self.path.stem,
            "task_goal_completion": tgc,
            "scenario_goal_completion": sgc,
        }


def aggregate_only(data: Any) -> bool:
    """*data* is an AppWorld evaluation's figures without its tasks: as ``aggregate_only``
    writes it, or an ``aggregate`` whose ``individual`` was left out."""
    if not isinstance(data, dict) or "individual" in data:
        return False
    nested = data.get("aggregate")
    figures = set(nested) if isinstance(nested, dict) else set(data)
    return "task_goal_completion" in figures or figures >= {"strict", "grouped_strict"}


def scenario(task_id: str) -> str:
    """The scenario a task is a variant of (AppWorld's ``task_id_to_generator_id``: the part
    before ``_``, a ``:tag`` left off)."""
    return task_id.split(":")[0].rsplit("_", 1)[0]


def _success(report: dict[str, Any]) -> Any:
    return report.get("success", report.get("passes_fully"))  # older files: passes_fully


def _row(where: str, index: int, task_id: str, report: dict[str, Any]) -> ImportedRow:
    success = _success(report)
    if not isinstance(success, bool):
        raise SpecError(where, "success", f"required: true or false, got {success!r}")
    passes, failures = _tests(where, report, "passes"), _tests(where, report, "failures")
    tests = report.get("num_tests")
    total = None if tests is None else integer(where, "num_tests", tests)
    if passes is not None and failures is not None:
        ran = len(passes) + len(failures)
        if total is not None and ran != total:
            raise SpecError(where, "num_tests", f"{total}, but passes and failures hold {ran}")
        if success != (not failures):  # AppWorld: every test passed
            raise SpecError(
                where, "success", f"{success}, but {len(failures)} of {counted(ran, 'test')} failed"
            )
    if success and (total == 0 or (total is None and passes == [] and failures == [])):
        raise SpecError(
            where, "success", "true, but no test ran ("
            + ("num_tests 0" if total == 0 else "passes and failures empty")
            + "): AppWorld's success is every test passing, so nothing graded this final "
            "state (each AppWorld task has tests: a task evaluated without them is none of its)",
        )  # fmt: skip
    _counts(where, report, success, total, passes, failures)
    difficulty = report.get("difficulty")
    level = None if difficulty is None else checked(where, "difficulty", as_integer, difficulty)
    reason = "success" if success else FAILURE
    partial = None if success else _credit(passes, failures)
    return ImportedRow(
        line=index,
        task_id=task_id,
        label=1,
        success=success,
        terminal_reason=reason,
        partial_score=partial,
        reward=1.0 if success else (partial or 0.0),
        slice_labels=None if level is None else (f"difficulty_{level}",),
        origin={
            "scenario": scenario(task_id),
            "passes": None if passes is None else len(passes),
            "failures": None if failures is None else len(failures),
            "failed": [f.get("requirement") for f in failures or () if isinstance(f, dict)][:5],
        },
        mapped=f"success {str(success).lower()} -> {reason}",
    )


def _counts(
    where: str,
    report: dict[str, Any],
    success: bool,
    total: int | None,
    passes: list[Any] | None,
    failures: list[Any] | None,
) -> None:
    """``pass_count`` and ``fail_count`` (``TestTracker``'s properties, which tools around
    AppWorld write beside or instead of the lists), where given, must be the tests': read
    past, a ``success`` beside a ``fail_count`` of 1 passed a task whose test failed."""
    given = {name: report.get(name) for name in ("pass_count", "fail_count")}
    if given == {"pass_count": None, "fail_count": None}:
        return
    counts = {k: None if v is None else integer(where, k, v) for k, v in given.items()}
    for name, listed in (("pass_count", passes), ("fail_count", failures)):
        if counts[name] is not None and listed is not None and counts[name] != len(listed):
            key = "passes" if name == "pass_count" else "failures"
            raise SpecError(where, name, f"{counts[name]}, but {key} holds {len(listed)}")
    passed, failed = counts["pass_count"], counts["fail_count"]
    if total is not None and passed is not None and failed is not None and passed + failed != total:
        raise SpecError(where, "num_tests", f"{total}, but pass_count and fail_count sum to "
                        f"{passed + failed}")  # fmt: skip
    wrong = (failed is not None and success != (failed == 0)) or (
        passed is not None and total is not None and success != (passed == total)
    )
    if wrong:
        raise SpecError(
            where, "success", f"{str(success).lower()}, but pass_count is {passed} and "
            f"fail_count {failed} of {total} tests: AppWorld's success is every test passing",
        )  # fmt: skip


def _tests(where: str, report: dict[str, Any], name: str) -> list[Any] | None:
    value = report.get(name)
    if value is not None and not isinstance(value, list):
        raise SpecError(where, name, f"must be a list of tests, got {type(value).__name__}")
    for index, test in enumerate(value or ()):  # TestTracker's: {requirement, label, ...}
        if not isinstance(test, dict) or not isinstance(test.get("requirement"), str):
            raise SpecError(
                where, f"{name}[{index}]", f"must be a test ({{requirement, label}}, as "
                f"AppWorld writes each), got {test!r}"[:300],
            )  # fmt: skip
    return value


def _credit(passes: list[Any] | None, failures: list[Any] | None) -> float | None:
    """A failed task's share of the tests it had to make pass: those a do-nothing run fails
    (``label`` ``no_op_fail``), each test a do-nothing run passes and this one broke
    (``no_op_pass``, "nothing else changed") counted as one more it missed, so a failure never
    earns full credit. Without labels, every test counts."""
    if passes is None or failures is None:
        return None
    tests = [(True, p) for p in passes] + [(False, f) for f in failures]
    labels = [t.get("label") if isinstance(t, dict) else None for _, t in tests]
    if "no_op_fail" in labels:
        counted = [ok for (ok, _), label in zip(tests, labels, strict=True)
                   if label == "no_op_fail" or (label == "no_op_pass" and not ok)]  # fmt: skip
    else:
        counted = [ok for ok, _ in tests]
    share = sum(counted) / len(counted) if counted else 0.0
    return share if 0.0 < share < 1.0 else None
