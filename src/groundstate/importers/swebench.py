"""SWE-bench reports, in the three forms SWE-bench has written results in.

- The run report ``swebench.harness.run_evaluation`` writes at the end of a run (2.x on,
  ``<model>.<run_id>.json``, written by ``make_run_report``): lists of instance ids by outcome,
  ``resolved_ids``, ``unresolved_ids``, ``empty_patch_ids``, ``error_ids`` (and
  ``incomplete_ids``, instances with no prediction; from 5.x ``infra_failure_ids``, instances
  whose logs match a signature of a broken environment, advisory: they stay in their list).
- The model report of SWE-bench 1.x (``swebench.metrics.report.get_model_report``): lists that
  nest (``generated`` holds every instance with a patch, ``with_logs`` those evaluated,
  ``applied`` those whose tests ran, ``resolved`` those that passed; ``no_generation``,
  ``no_apply``, ``install_fail``, ``reset_failed``, ``test_errored``, ``test_timeout`` say
  where the others stopped).
- Per-instance reports (``get_eval_report``'s ``report.json``: ``{instance_id: {patch_is_None,
  patch_exists, patch_successfully_applied, resolved, tests_status}}``), one or several in one
  object, or a model's folder of a run's logs (``logs/run_evaluation/<run_id>/<model>/``: a
  folder per instance, with its ``report.json`` when its evaluation ended).

Each instance is one attempt of the task named by its id; SWE-bench runs an instance once, so
every attempt is labelled 1.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
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
    amount,
    count,
    read_json_object,
    task_key,
)
from groundstate.importers.stream import RECORD_LIMIT, JsonStream, json_stream
from groundstate.rounding import counted
from groundstate.spec.files import optional_file

End = str | Mapping[str, str]
"""A terminal reason, or the policy (:data:`ERROR_REASONS`, :data:`UNGRADED`) whose entry
for ``--errors`` is one."""

SWE_BENCH_ENDS: dict[str, End] = {
    "resolved_ids": "success",
    "unresolved_ids": "agent_failure/unresolved",
    "empty_patch_ids": "agent_failure/empty_patch",
    "error_ids": ERROR_REASONS,
}
"""Each list of the run report and the terminal reason of its instances, fixed before any file
is read. ``unresolved``: the patch applied and the issue's tests did not pass. ``empty_patch``:
the system gave no patch (SWE-bench counts both unresolved). ``error_ids`` follow
``--errors``: SWE-bench puts there an instance whose evaluation wrote no report, which is a
patch that would not apply (the system's) as much as a container that failed (the
harness's); the file cannot tell them apart, and SWE-bench counts them unresolved."""
COUNTS = {
    "resolved_ids": "resolved_instances",
    "unresolved_ids": "unresolved_instances",
    "empty_patch_ids": "empty_patch_instances",
    "error_ids": "error_instances",
    "infra_failure_ids": "infra_failure_instances",
    "ambiguous_failure_ids": "ambiguous_failure_instances",
    "submitted_ids": "submitted_instances",
    "completed_ids": "completed_instances",
}
"""The count the report gives beside each list (``make_run_report`` writes both)."""
ADVISORY = frozenset({"submitted_ids", "completed_ids"})
"""Lists that decide no outcome: their counts are compared only when the list is given."""
INFRA_FAILURE = "environment_failure/infrastructure"
"""An instance of ``infra_failure_ids`` under ``--errors environment``. SWE-bench flags it from
its logs (an out-of-memory kill, a Docker daemon error, an unreachable host) and leaves it in
its list, counted unresolved: advisory, as those logs hold the output of the tests the patch
runs, which a patch can make say anything. So it follows ``--errors``."""

SWE_BENCH_1_ENDS: dict[str, End] = {
    "no_generation": "agent_failure/empty_patch",
    "no_apply": "agent_failure/patch_not_applied",
    "install_fail": "environment_failure/setup",
    "reset_failed": "environment_failure/reset",
    "resolved": "success",
    "applied": "agent_failure/unresolved",
    "test_timeout": UNGRADED,
    "test_errored": UNGRADED,
    "with_logs": ERROR_REASONS,
    "generated": ERROR_REASONS,
}
"""Each list of a 1.x model report and the terminal reason of an instance it holds, in the
order that decides: an instance is in several lists (they nest), and the first list here that
holds it decides. ``no_apply``: the patch would not apply, even trimmed (the system's).
``install_fail``, ``reset_failed``: the testbed could not install the repository or reset it
to its commit, before the patch was applied (invalid, whatever ``--errors`` says). ``resolved``
and ``applied`` decide before ``test_timeout`` and ``test_errored``: 1.x lists an instance
whose tests stopped there as well when their output was read (its checks ran on what the
tests printed). Tests that stopped with no output read follow ``--errors`` as a grader's
error; an instance with a log and no test output read (the run stopped) or with no log at all
(never evaluated) as an unattributed error."""
NESTED = {
    "no_apply": "with_logs",
    "install_fail": "with_logs",
    "reset_failed": "with_logs",
    "test_timeout": "with_logs",
    "test_errored": "with_logs",
    "applied": "with_logs",
    "resolved": "applied",
    "with_logs": "generated",
}
"""The list each list of a 1.x model report lies within (``get_model_report`` adds an
instance to ``generated``, then ``with_logs``, then ``applied``, then ``resolved``)."""
SWE_BENCH_1_KEYS = frozenset({"no_generation", "generated", "applied", "resolved"})
"""What marks a 1.x model report (every version of ``get_model_report`` since April 2024
writes these)."""
ALIASES = {"no_generation": "none"}
"""Lists named otherwise by 1.x before April 2024, which wrote a report per repository
(``{repo: {none, generated, with_logs, applied, resolved}}``, ``none``: no patch)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """One instance's outcome as a report gives it."""

    where: str
    instance: str
    end: End
    origin: dict[str, Any]
    mapped: str
    """The field that decided, for the import report (``resolved_ids``)."""
    cost: float | None = None
    """Dollars, where the report gives them (``per_instance_details.json``)."""


@dataclass
class SweBenchSource:
    """A SWE-bench run report, 1.x model report, or per-instance report(s)."""

    path: Path
    errors: ErrorPolicy = "agent"
    format: str = "swe-bench"
    _outside: list[str] = field(default_factory=list)
    """Submitted instances outside the run (``--instance_ids``), named in a warning."""

    @cached_property
    def _report(self) -> dict[str, Any]:
        report = _read_report(self.path)
        if terminal_bench(report):
            raise SpecError(
                self.path, "results", "a Terminal-Bench results file, not a SWE-bench run "
                "report: its resolved_ids list a task per trial, and its errors (failure_mode) "
                "are among the unresolved",
            )  # fmt: skip
        return report

    @cached_property
    def kind(self) -> str:
        """``run``, ``model`` (1.x), ``instance`` or ``folder``; anything else is refused,
        naming what a SWE-bench report has."""
        if self.path.is_dir():
            return "folder"
        if {"resolved_ids", "unresolved_ids"} <= set(self._report):
            return "run"
        if model_report(self._report) or model_report_by_repo(self._report):
            return "model"
        if instance_reports(self._report):
            return "instance"
        if resolved_only(self._report):
            raise SpecError(self.path, None, RESOLVED_ONLY)
        raise SpecError(
            self.path, None, "not a SWE-bench report: a run report has resolved_ids and "
            "unresolved_ids, a 1.x model report no_generation, generated, applied and "
            "resolved (before April 2024: {repo: {none, generated, ...}}), an instance's "
            "report.json {instance_id: {resolved, ...}}",
        )  # fmt: skip

    @cached_property
    def _outcomes(self) -> list[Outcome]:
        read = {
            "run": self._run,
            "model": self._model,
            "instance": lambda: self._instances(self._report),
            "folder": self._folder,
        }
        return read[self.kind]()

    def _run(self) -> list[Outcome]:
        """The run report: each instance in one list, ``infra_failure_ids`` among them."""
        flagged = "SWE-bench flags an instance it counted unresolved or errored"
        infra = set(self._listed("infra_failure_ids", ("unresolved_ids", "error_ids"), flagged))
        self._listed("ambiguous_failure_ids", ("unresolved_ids", "error_ids"), flagged)
        reasons = self._report.get("failure_reasons")
        if not isinstance(reasons, dict):
            reasons = {}
        outcomes = []
        for name, instances in self._lists(SWE_BENCH_ENDS).items():
            for instance, where in instances.items():
                origin: dict[str, Any] = {"list": name}
                end = SWE_BENCH_ENDS[name]
                if instance in reasons:
                    origin["failure_reason"] = reasons[instance]
                if instance in infra:
                    origin["infra_failure"] = True
                    end = {"agent": _reason(end, "agent"), "environment": INFRA_FAILURE}
                outcomes.append(Outcome(where, instance, end, origin, name))
        self._listed(
            "completed_ids", ("resolved_ids", "unresolved_ids", "error_ids"), "SWE-bench counts "
            "an instance completed when its evaluation wrote a report, which decides it",
        )  # fmt: skip
        self._apart("incomplete_ids", tuple(SWE_BENCH_ENDS))
        self._submitted(outcomes)
        return outcomes

    def _submitted(self, outcomes: list[Outcome]) -> None:
        """``submitted_ids`` (every prediction given, ``make_run_report``'s ``predictions``)
        against the outcome lists, which SWE-bench fills from the predictions only: an
        instance with an outcome was submitted, and one without a prediction
        (``incomplete_ids``) was not. An instance submitted and in no list is one the run
        was not asked for (``--instance_ids``: it is outside ``total_instances``); when the
        lists fall short of ``total_instances`` it is an outcome cut from the file, which
        would leave the attempt out of every denominator."""
        if "submitted_ids" not in self._report:
            return
        given = self._ids("submitted_ids")
        submitted = {task_key(f"{self.path}:submitted_ids[{i}]", "submitted_ids", v): i
                     for i, v in enumerate(given)}  # fmt: skip
        for outcome in outcomes:
            if outcome.instance not in submitted:
                raise SpecError(
                    outcome.where, outcome.mapped, f"instance {outcome.instance!r} is not in "
                    "submitted_ids: SWE-bench gives an outcome only to a submitted prediction",
                )  # fmt: skip
        for index, value in enumerate(self._ids("incomplete_ids")):
            if str(value) in submitted:
                raise SpecError(
                    f"{self.path}:incomplete_ids[{index}]", "incomplete_ids", f"instance "
                    f"{value!r} is also in submitted_ids: SWE-bench lists an instance there "
                    "when it has no prediction",
                )  # fmt: skip
        listed = {o.instance for o in outcomes}
        unlisted = [instance for instance in submitted if instance not in listed]
        total = count(str(self.path), "total_instances", self._report.get("total_instances"))
        held = len(outcomes) + len(self._ids("incomplete_ids"))
        if unlisted and (total is None or held < total):
            first = unlisted[0]
            short = "no total_instances" if total is None else f"total_instances is {total}"
            raise SpecError(
                f"{self.path}:submitted_ids[{submitted[first]}]", "submitted_ids",
                f"instance {first!r} was submitted but is in no outcome list, and {short} "
                f"while the lists hold {held}: SWE-bench gives every submitted instance of "
                "the run an outcome (was it cut from the file?)",
            )  # fmt: skip
        self._outside = unlisted

    def _listed(self, name: str, within: tuple[str, ...], why: str) -> list[str]:
        """The instances of the list *name* that says more of some instances (advisory flags,
        ``completed_ids``), each of which must be in one of *within* (*why*: the rule that
        puts it there)."""
        ids = self._ids(name)
        allowed = {str(i) for part in within for i in self._ids(part)}
        for index, value in enumerate(ids):
            where = f"{self.path}:{name}[{index}]"
            if task_key(where, name, value) not in allowed:
                raise SpecError(
                    where, name, f"instance {value!r} is in none of {', '.join(within)}: {why}"
                )
        return [str(i) for i in ids]

    def _apart(self, name: str, lists: tuple[str, ...]) -> None:
        """The instances of *name* (``incomplete_ids``: no prediction, so never evaluated) are
        in none of *lists*: one there too was stored with that outcome while the warning said
        it had none, and it was counted twice against ``total_instances``."""
        held = {str(i): part for part in lists for i in self._ids(part)}
        for index, value in enumerate(self._ids(name)):
            where = f"{self.path}:{name}[{index}]"
            if task_key(where, name, value) in held:
                raise SpecError(
                    where, name, f"instance {value!r} is also in {held[str(value)]}: SWE-bench "
                    "lists an instance without a prediction there only (one instance has one "
                    "outcome)",
                )  # fmt: skip

    def _model(self) -> list[Outcome]:
        """The 1.x model report: the first list of :data:`SWE_BENCH_1_ENDS` holding an
        instance decides it, after checking that the lists nest as 1.x wrote them."""
        places: dict[str, dict[str, str]] = {}  # instance -> list -> where
        for prefix, section in self._sections():
            lists = self._lists(SWE_BENCH_1_ENDS, exclusive=False, section=section, prefix=prefix)
            for name, instances in lists.items():
                for instance, where in instances.items():
                    if instance in places and name in places[instance]:
                        raise SpecError(
                            where, name, f"instance {instance!r} is also listed at "
                            f"{places[instance][name]}",
                        )  # fmt: skip
                    places.setdefault(instance, {})[name] = where
        outcomes = []
        for instance, held in places.items():
            _nested(instance, held)
            decided = next(n for n in SWE_BENCH_1_ENDS if n in held)
            origin = {"lists": list(held)}
            outcomes.append(
                Outcome(held[decided], instance, SWE_BENCH_1_ENDS[decided], origin, decided)
            )
        return outcomes

    def _sections(self) -> list[tuple[str, dict[str, Any]]]:
        """The lists of a 1.x model report: the whole report, or (before April 2024) each
        repository's, with the prefix that names its place."""
        if model_report(self._report):
            return [("", self._report)]
        return [(f"{repo}.", part) for repo, part in self._report.items()]

    def _instances(self, reports: dict[str, Any], file: Path | None = None) -> list[Outcome]:
        outcomes = []
        for instance, report in reports.items():
            where = f"{file or self.path}:{instance}"
            key = task_key(where, "instance_id", instance)
            end, field = _instance_end(where, report)
            origin = {field: report[field]} if field in report else {}
            if "api_calls" in report:
                origin["api_calls"] = report["api_calls"]
            cost = report.get("cost")
            cost = None if cost is None else amount(where, "cost", cost)
            if report.get("infra_failure") is True:
                origin["infra_failure"] = report.get("infra_failure_reason", True)
                if end is ERROR_REASONS or end is UNGRADED:
                    end = {"agent": _reason(end, "agent"), "environment": INFRA_FAILURE}
            outcomes.append(Outcome(where, key, end, origin, field, cost))
        return outcomes

    def _folder(self) -> list[Outcome]:
        """A model's folder of a run's logs: each instance folder's ``report.json``; one with
        a log and no report, or an empty one, is an evaluation that raised (SWE-bench's
        ``error_ids``)."""
        outcomes = []
        for folder in self._instance_folders():
            file = folder / "report.json"
            if not optional_file(file):  # a link to nowhere is no evaluation that raised
                origin = {"report": "missing"}
                where = str(folder / "run_instance.log")
                outcomes.append(Outcome(where, folder.name, ERROR_REASONS, origin, "no report"))
                continue
            if _empty(file):  # opened and never written: make_run_report's error_ids too
                origin = {"report": "empty"}
                outcomes.append(
                    Outcome(str(file), folder.name, ERROR_REASONS, origin, "empty report")
                )
                continue
            report = _read_report(file, "an instance's report.json")  # without tests_status
            if list(report) != [folder.name]:
                raise SpecError(
                    file, None, f"the report of {folder.name!r} holds {sorted(report)}: one "
                    "instance's report, under its id, in its folder",
                )  # fmt: skip
            outcomes.extend(self._instances(report, file))
        if not outcomes:
            raise SpecError(
                self.path, None, "a folder without instance folders (a SWE-bench run's "
                "logs/run_evaluation/<run_id>/<model>/ holds <instance_id>/report.json)",
            )  # fmt: skip
        return outcomes

    def _instance_folders(self) -> list[Path]:
        """The instance folders of a model's logs: those SWE-bench began to evaluate."""
        return [
            p for p in sorted(self.path.iterdir())
            if p.is_dir() and any(os.path.lexists(p / name) for name in INSTANCE_FILES)
        ]  # fmt: skip

    def digest(self) -> str:
        """The content the batch comes from: the file's, or each instance's report by name
        (and the folders without one)."""
        if self.kind != "folder":
            with self.path.open("rb") as handle:
                return hashlib.file_digest(handle, "sha256").hexdigest()
        digest = hashlib.sha256()
        for folder in self._instance_folders():
            file = folder / "report.json"
            digest.update(folder.name.encode() + b"\0")
            if file.is_file():
                with file.open("rb") as handle:  # in chunks: a report lists every test
                    digest.update(hashlib.file_digest(handle, "sha256").digest())
        return digest.hexdigest()

    def _lists(
        self,
        ends: Mapping[str, End],
        *,
        exclusive: bool = True,
        section: dict[str, Any] | None = None,
        prefix: str = "",
    ) -> dict[str, dict[str, str]]:
        """Each list of *ends* the report (or its *section*) has: its instances and where each
        sits. An instance twice in one list is refused, and in two lists when they are
        *exclusive*."""
        seen: dict[str, str] = {}
        lists: dict[str, dict[str, str]] = {}
        for name in ends:
            lists[name] = {}
            key = _key(self._report if section is None else section, name)
            for index, value in enumerate(self._ids(name, section, prefix)):
                where = f"{self.path}:{prefix}{key}[{index}]"
                instance = task_key(where, name, value)
                if instance in lists[name]:
                    raise SpecError(where, name, f"instance {instance!r} is listed twice")
                if exclusive and instance in seen:
                    raise SpecError(
                        where, name, f"instance {instance!r} is also in {seen[instance]}: one "
                        "instance has one outcome",
                    )  # fmt: skip
                seen[instance] = name
                lists[name][instance] = where
        return lists

    def _ids(self, name: str, section: dict[str, Any] | None = None, prefix: str = "") -> list[Any]:
        section = self._report if section is None else section
        key = _key(section, name)
        ids = section.get(key, [])
        if not isinstance(ids, list):
            raise SpecError(self.path, prefix + key, f"must be a list of instance ids, got {ids!r}")
        given = section.get(COUNTS.get(name, ""))
        if name in ADVISORY and key not in section:
            given = None  # a count kept beside a list trimmed away: nothing to compare
        if given is not None and count(str(self.path), COUNTS[name], given) != len(ids):
            raise SpecError(
                self.path,
                COUNTS[name],
                f"{given!r}, but {name} lists {counted(len(ids), 'instance')}",
            )
        return ids

    def rows(self) -> Iterator[ImportedRow]:
        for line, outcome in enumerate(self._outcomes, start=1):
            reason = _reason(outcome.end, self.errors)
            yield ImportedRow(
                line=line,
                task_id=outcome.instance,
                label=1,
                success=reason == "success",
                terminal_reason=reason,
                cost=outcome.cost,
                origin=outcome.origin,
                mapped=f"{outcome.mapped} -> {reason}",
            )

    def place(self, line: int) -> str:
        return self._outcomes[line - 1].where

    def warnings(self) -> list[str]:
        found = (
            self._incomplete(), self._unlisted(), self._flagged(), self._unread(), self._unrun(),
            self._not_run(),
        )  # fmt: skip
        return [w for w in found if w]

    def _unlisted(self) -> str | None:
        """A run report whose lists do not add up to its ``total_instances``: SWE-bench puts
        each instance of the dataset in one list (``incomplete_ids``: no prediction), so the
        others were cut from the file, and its resolved rate is over a total they are in."""
        given = self._report.get("total_instances") if self.kind == "run" else None
        if given is None:
            return None
        # a total that is no count (NaN, 1e30, text) would silently skip this check
        total = count(str(self.path), "total_instances", given)
        if total is None:
            return None
        missing = self._report.get("incomplete_ids")
        held = len(self._outcomes) + (len(missing) if isinstance(missing, list) else 0)
        if held == total:
            return None
        return (
            f"{self.path}: total_instances is {total}, but its lists (resolved_ids, "
            f"unresolved_ids, empty_patch_ids, error_ids, incomplete_ids) hold {held}: "
            + (f"{counted(total - held, 'instance')} "
               f"{'is' if total - held == 1 else 'are'} in no list, so no score counts them"
               if held < total else "the lists hold instances of another run too?")
        )  # fmt: skip

    def _unrun(self) -> str | None:
        """What a folder of logs does not hold."""
        if self.kind != "folder":
            return None
        return (
            f"{self.path}: a folder of logs holds the instances SWE-bench evaluated: those "
            "with an empty patch (which it does not run) or no prediction are not in the "
            "batch, so no score counts them (the run report lists them)"
        )

    def _not_run(self) -> str | None:
        """Submitted instances the run was not asked for (``--instance_ids``)."""
        outside = self._outside
        if not outside:
            return None
        return (
            f"{self.path}: {counted(len(outside), 'submitted instance')} "
            f"{'is' if len(outside) == 1 else 'are'} outside the run's "
            f"{self._report.get('total_instances')} instances ({_shown(outside)}; run with "
            "--instance_ids?): not evaluated, so not in the batch"
        )

    def _incomplete(self) -> str | None:
        """Instances of the dataset the run has no outcome for: SWE-bench's own score is over
        ``total_instances``; here they are in no denominator."""
        missing = self._report.get("incomplete_ids") if self.kind == "run" else None
        if not isinstance(missing, list) or not missing:
            return None
        return (
            f"{self.path}: {counted(len(missing), 'instance')} had no prediction (incomplete_ids: "
            f"{_shown(missing)}): they are not in the batch, so no score counts them "
            "(SWE-bench's own resolved rate is over total_instances)"
        )

    def _flagged(self) -> str | None:
        """Instances SWE-bench flagged as likely infrastructure failures."""
        flagged = [o.instance for o in self._outcomes if o.origin.get("infra_failure")]
        if not flagged:
            return None
        how = (
            "invalid (--errors environment)" if self.errors == "environment" else "as their "
            "outcome says, as SWE-bench counts them (--errors environment makes them invalid)"
        )  # fmt: skip
        return (
            f"{self.path}: {counted(len(flagged), 'instance')} SWE-bench flagged as likely "
            f"infrastructure failures ({_shown(flagged)}): counted {how}"
        )

    def _unread(self) -> str | None:
        """Lists of a 1.x model report this reader does not know: never dropped silently."""
        if self.kind != "model":
            return None
        known = {*SWE_BENCH_1_ENDS, *ALIASES.values()}
        unknown = sorted(
            {k for _, part in self._sections() for k, v in part.items()
             if isinstance(v, list) and k not in known}
        )  # fmt: skip
        if not unknown:
            return None
        return (
            f"{self.path}: lists no rule reads ({', '.join(unknown)}): their instances are "
            "decided by the lists known here"
        )

    def system(self) -> dict[str, Any]:
        return {
            "harness": "swe-bench",
            "report": self.kind,
            "errors": self.errors,
            "schema_version": self._report.get("schema_version") if self.kind == "run" else None,
            "total_instances": self._report.get("total_instances") if self.kind == "run" else None,
            "model": self.path.name if self.kind == "folder" else None,
        }


def _read_report(path: Path, what: str = "a SWE-bench report") -> dict[str, Any]:
    """The report, read value by value (:mod:`.stream`), each instance's report kept without
    its ``tests_status`` (every test's name: the bulk of a report, which decides nothing
    here; a file of a run's reports merged took several times its size in memory, read
    whole). Instances' reports one object per line (``jq -c . */report.json``) or one after
    another (``cat */report.json``) are merged, an instance given twice refused."""
    with json_stream(path, RECORD_LIMIT) as stream:
        if stream.peek() != "{":
            return read_json_object(path, what)  # names what it is instead
        first = stream.line
        report = _object(stream)
        if not instance_reports(report):
            stream.end()
            return report
        seen = dict.fromkeys(report, first)
        while stream.peek():
            number = stream.line
            where = f"{path}:{number}"
            if stream.peek() != "{":
                kind = type(stream.value()).__name__
                raise SpecError(where, None, f"must be an object of instances' reports, got {kind}")
            for instance, entry in _object(stream).items():
                if instance in report:
                    raise SpecError(
                        where, instance, f"the instance's report is also on line {seen[instance]}"
                    )
                seen[instance] = number
                report[instance] = entry
    return report


def _object(stream: JsonStream) -> dict[str, Any]:
    """The object that comes next, member by member, instances' reports slimmed."""
    return {key: _slimmed(stream, key) for key in stream.members()}


def _slimmed(stream: JsonStream, at: str) -> Any:
    """The value that comes next (at *at*), an object without the value of its
    ``tests_status`` (its key kept: it marks an instance's report as one), which is read past
    and never held: every test's name, the bulk of a report, which nothing here reads (read
    whole and then dropped, an instance's report took several times its size)."""
    if stream.peek() != "{":
        return stream.value(at)
    value: dict[str, Any] = {}
    for key in stream.members(at):
        if key == "tests_status":
            stream.skip(f"{at}.{key}")
            value[key] = None
        else:
            value[key] = stream.value(f"{at}.{key}")
    return value


def _empty(file: Path) -> bool:
    """*file* holds nothing but white space: ``run_instance`` opens ``report.json`` for
    writing before it writes the report, so an evaluation that stopped between the two leaves
    it so, and ``make_run_report`` counts such an instance in ``error_ids``."""
    with file.open("rb") as handle:
        return not handle.read(1 << 16).strip() and not handle.read(1)


def _nested(instance: str, held: dict[str, str]) -> None:
    """*instance*'s lists of a 1.x model report (*held*: each list and where it sits there)
    nest as ``get_model_report`` writes them."""
    if "no_generation" in held and len(held) > 1:
        others = ", ".join(sorted(set(held) - {"no_generation"}))
        raise SpecError(
            held["no_generation"], "no_generation", f"instance {instance!r} has no patch and "
            f"is also in {others}: the lists contradict each other",
        )  # fmt: skip
    for name, where in held.items():
        outer = NESTED.get(name)
        if outer is not None and outer not in held:
            raise SpecError(
                where, name, f"instance {instance!r} is not in {outer}, which holds every "
                f"instance of {name} (1.x's lists nest)",
            )  # fmt: skip


RESOLVED_ONLY = (
    "a SWE-bench/experiments results.json (resolved, no_generation, no_logs): it names the "
    "resolved instances only, the unresolved being the dataset's others, which it does not "
    "list, so a batch of it would count no failure: convert it, with the dataset's instance "
    "ids, to the row format (CSV or JSON Lines: task_id, attempt, success)"
)
"""Why the leaderboard's ``results/results.json`` is refused."""


def resolved_only(data: Any) -> bool:
    """*data* is a SWE-bench/experiments ``results/results.json`` (lists of the resolved
    instances and of those without a patch or logs; the unresolved are not named)."""
    return isinstance(data, dict) and {"resolved", "no_generation", "no_logs"} <= set(data)


INSTANCE_FIELDS = ("patch_is_None", "patch_exists", "patch_successfully_applied", "resolved")
"""The verdict fields of an instance's ``report.json`` (``get_eval_report``), all booleans."""
INSTANCE_KEYS = frozenset({*INSTANCE_FIELDS, "tests_status", "cost", "api_calls"})
"""What an instance's entry holds: ``report.json``'s fields, or a leaderboard
``per_instance_details.json``'s (``{resolved, cost, api_calls}``)."""


def _instance_end(where: str, report: Any) -> tuple[End, str]:
    """How an instance's ``report.json`` entry ended, and the field that says so: no patch,
    tests whose output could not be read (``patch_successfully_applied`` false: SWE-bench
    found no test output between its markers, or a marker of a failed apply, reset, error or
    timeout; a grader's error, which ``--errors`` decides), resolved, or not."""
    if not isinstance(report, dict):
        raise SpecError(where, None, f"must be an instance's report (an object), got {report!r}")
    if "resolved" not in report:
        raise SpecError(where, "resolved", "required: true or false")
    for name in INSTANCE_FIELDS:
        value = report.get(name)
        if name in report and not isinstance(value, bool):
            raise SpecError(where, name, f"must be true or false, got {value!r}")
    if report.get("patch_is_None") or report.get("patch_exists") is False:
        if report["resolved"]:
            raise SpecError(where, "resolved", "true for an instance without a patch")
        return "agent_failure/empty_patch", "patch_exists"
    if report.get("patch_successfully_applied") is False:
        if report["resolved"]:
            raise SpecError(where, "resolved", "true, but patch_successfully_applied is false")
        return UNGRADED, "patch_successfully_applied"
    return ("success" if report["resolved"] else "agent_failure/unresolved"), "resolved"


def instance_reports(data: Any) -> bool:
    """*data* is one or several instances' ``report.json`` (``{instance_id: {resolved, ...}}``)
    or a leaderboard's ``per_instance_details.json``: its first entry an object with two of
    :data:`INSTANCE_KEYS`."""
    if not isinstance(data, dict) or not data:
        return False
    first = next(iter(data.values()))
    return isinstance(first, dict) and len(set(first) & INSTANCE_KEYS) >= 2


def model_report(data: Any) -> bool:
    """*data* is a 1.x model report (``get_model_report``, April 2024 on)."""
    return isinstance(data, dict) and set(data) >= SWE_BENCH_1_KEYS


def model_report_by_repo(data: Any) -> bool:
    """*data* is a 1.x model report by repository (before April 2024): each value the lists of
    one repository, ``none`` for no patch."""
    keys = {"none", "generated", "applied", "resolved"}
    return (
        isinstance(data, dict)
        and bool(data)
        and all(isinstance(v, dict) and keys <= set(v) for v in data.values())
    )


def swe_bench_report(data: Any) -> bool:
    """*data* is a SWE-bench report that no run report's keys mark: a 1.x model report, or
    instances' ``report.json``."""
    return model_report(data) or model_report_by_repo(data) or instance_reports(data)


INSTANCE_FILES = ("report.json", "run_instance.log")
"""What an instance folder SWE-bench began to evaluate holds (either, as a file or a link: one to
nowhere is refused by the reader, naming its target, not skipped)."""


def logs_folder(path: Path) -> bool:
    """*path* is a model's folder of a SWE-bench run's logs: an instance folder in it holds a
    ``report.json`` or a ``run_instance.log``."""
    return path.is_dir() and any(
        p.is_dir() and any(os.path.lexists(p / name) for name in INSTANCE_FILES)
        for p in path.iterdir()
    )


def terminal_bench(data: Any) -> bool:
    """*data* is a Terminal-Bench ``tb run`` results file (``BenchmarkResults``): it has
    ``resolved_ids`` and ``unresolved_ids`` too, computed from its ``results`` (one entry per
    trial), which a SWE-bench run report never has."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("results"), list)
        and ({"resolved_ids", "unresolved_ids"} <= set(data))
    )


def _key(section: dict[str, Any], name: str) -> str:
    """The key *section* gives the list *name* under (its older name, if that is the one)."""
    old = ALIASES.get(name)
    return old if old is not None and old in section and name not in section else name


def _reason(end: End, errors: ErrorPolicy) -> str:
    return end if isinstance(end, str) else end[errors]


def _shown(ids: list[Any]) -> str:
    shown = ", ".join(repr(str(i)) for i in ids[:5])
    return shown + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
