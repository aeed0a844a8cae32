"""SWE-bench run reports: the JSON ``swebench.harness.run_evaluation`` writes at the end of a run
(``<model>.<run_id>.json``, written by ``make_run_report``).

The report sorts each instance of the dataset into lists of ids: ``resolved_ids``,
``unresolved_ids``, ``empty_patch_ids``, ``error_ids`` (and ``incomplete_ids``, instances with
no prediction). Each listed instance is one attempt of the task named by its id; SWE-bench
runs an instance once, so every attempt is labelled 1.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from groundstate.errors import SpecError
from groundstate.importers.rows import (
    ERROR_REASONS,
    ErrorPolicy,
    ImportedRow,
    as_integer,
    read_json_object,
    task_key,
)

SWE_BENCH_ENDS: dict[str, str | None] = {
    "resolved_ids": "success",
    "unresolved_ids": "agent_failure/unresolved",
    "empty_patch_ids": "agent_failure/empty_patch",
    "error_ids": None,
}
"""Each list of the report and the terminal reason of its instances, fixed before any file is
read. ``unresolved``: the patch applied and the issue's tests did not pass. ``empty_patch``:
the system gave no patch (SWE-bench counts both unresolved). ``error_ids`` follow
``--errors``: SWE-bench puts there an instance whose evaluation wrote no report, which is a
patch that would not apply (the system's) as much as a container that failed (the
harness's); the file cannot tell them apart, and SWE-bench counts them unresolved."""
COUNTS = {
    "resolved_ids": "resolved_instances",
    "unresolved_ids": "unresolved_instances",
    "empty_patch_ids": "empty_patch_instances",
    "error_ids": "error_instances",
}
"""The count the report gives beside each list (``make_run_report`` writes both)."""


@dataclass
class SweBenchSource:
    """A SWE-bench run report."""

    path: Path
    errors: ErrorPolicy = "agent"
    format: str = "swe-bench"

    @cached_property
    def _report(self) -> dict[str, Any]:
        report = read_json_object(self.path, "a SWE-bench run report")
        if terminal_bench(report):
            raise SpecError(
                self.path, "results", "a Terminal-Bench results file, not a SWE-bench run "
                "report: its resolved_ids list a task per trial, and its errors (failure_mode) "
                "are among the unresolved",
            )  # fmt: skip
        return report

    @cached_property
    def _attempts(self) -> list[tuple[str, str, str]]:
        """(where, instance id, list it is in), in the report's order of lists."""
        seen: dict[str, str] = {}
        attempts = []
        for name in SWE_BENCH_ENDS:
            ids = self._ids(name)
            for index, value in enumerate(ids):
                where = f"{self.path}:{name}[{index}]"
                instance = task_key(where, name, value)
                if instance in seen:
                    raise SpecError(
                        where, name, f"instance {instance!r} is also in {seen[instance]}: one "
                        "instance has one outcome",
                    )  # fmt: skip
                seen[instance] = name
                attempts.append((where, instance, name))
        return attempts

    def _ids(self, name: str) -> list[Any]:
        ids = self._report.get(name, [])
        if not isinstance(ids, list):
            raise SpecError(self.path, name, f"must be a list of instance ids, got {ids!r}")
        given = self._report.get(COUNTS[name])
        if given is not None and _count(given) != len(ids):
            raise SpecError(
                self.path, COUNTS[name], f"{given!r}, but {name} lists {len(ids)} instances"
            )
        return ids

    def rows(self) -> Iterator[ImportedRow]:
        for line, (_, instance, name) in enumerate(self._attempts, start=1):
            reason = SWE_BENCH_ENDS[name] or ERROR_REASONS[self.errors]
            yield ImportedRow(
                line=line,
                task_id=instance,
                label=1,
                success=reason == "success",
                terminal_reason=reason,
                origin={"list": name},
                mapped=f"{name} -> {reason}",
            )

    def place(self, line: int) -> str:
        return self._attempts[line - 1][0]

    def warnings(self) -> list[str]:
        """Instances of the dataset the run has no outcome for: SWE-bench's own score is over
        ``total_instances``; here they are in no denominator."""
        missing = self._report.get("incomplete_ids")
        if not isinstance(missing, list) or not missing:
            return []
        shown = ", ".join(repr(str(i)) for i in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        return [
            f"{self.path}: {len(missing)} instance(s) had no prediction (incomplete_ids: "
            f"{shown}{more}): they are not in the batch, so no score counts them (SWE-bench's "
            "own resolved rate is over total_instances)"
        ]

    def system(self) -> dict[str, Any]:
        return {
            "harness": "swe-bench",
            "errors": self.errors,
            "schema_version": self._report.get("schema_version"),
            "total_instances": self._report.get("total_instances"),
        }


def terminal_bench(data: Any) -> bool:
    """*data* is a Terminal-Bench ``tb run`` results file (``BenchmarkResults``): it has
    ``resolved_ids`` and ``unresolved_ids`` too, computed from its ``results`` (one entry per
    trial), which a SWE-bench run report never has."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("results"), list)
        and ({"resolved_ids", "unresolved_ids"} <= set(data))
    )


def _count(value: Any) -> int | None:
    try:
        return as_integer(value)
    except ValueError:
        return None
