"""Inspect AI logs: ``.eval`` archives and ``.json`` logs.

A ``.eval`` file is a zip archive: ``_journal/start.json`` (the eval spec and plan),
``samples/<id>_epoch_<epoch>.json`` (one per sample and epoch), ``_journal/summaries/<n>.json``
and, once finished, ``header.json`` (spec, plan, status, results, stats), ``summaries.json``
and ``reductions.json``. A ``.json`` log is the same ``EvalLog`` as one object with its
``samples`` inline. Each sample has ``id``, ``epoch`` (1-based), ``scores`` (scorer name ->
``{value, answer, explanation, metadata}``), ``error``, ``limit``, ``total_time`` ...; samples
are read from the archive one at a time.
"""

from __future__ import annotations

import contextlib
import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from groundstate.errors import SpecError
from groundstate.importers.rows import (
    ERROR_REASONS,
    ErrorPolicy,
    ImportedRow,
    check_reason,
    integer,
    mapping,
    number,
    read_json,
    reward_kind,
    reward_verdict,
    task_key,
)

SCORE_VALUES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
"""Inspect's letter grades (correct, incorrect, partial, no answer) as rewards."""
WORD_VALUES = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}
"""Words Inspect's own ``value_to_float`` reads as rewards (any case), as do numbers in text."""
RETRIED_ERROR = "environment_failure/harness_error"
"""An error Inspect retried (``error_retries``, with ``--retry-on-error``): an invalid try
before the sample's final one, whatever ``--errors`` says, since Inspect itself reran it and
scored only the last try."""
LIMITS = {
    "message": "agent_failure/step_limit",
    "time": "agent_failure/time_limit",
    "working": "agent_failure/time_limit",
    "token": "agent_failure/budget",
    "cost": "agent_failure/budget",
    "context": "harness_compatibility_failure/context_window",
    "custom": "agent_failure/limit",
    "operator": "environment_failure/operator",
}
"""A sample's ``limit.type`` -> ours. A limit decides before the score, as our own stops do
(Inspect still scores the state a limited sample left). ``operator``: a person stopped the
sample, not the agent's doing (invalid)."""
OWN_METADATA = "groundstate"
"""The sample metadata key under which ``groundstate export --format inspect`` keeps a run's
own verdict; when present it is read back as is."""


@dataclass
class InspectSource:
    """An Inspect AI log (``.eval`` archive or ``.json``)."""

    path: Path
    errors: ErrorPolicy = "agent"
    scorer: str | None = None
    """The score that decides the verdict (``NAME``, or ``NAME.KEY`` for one entry of a score
    whose value is a dict); needed when samples carry several."""
    format: str = "inspect"

    def rows(self) -> Iterator[ImportedRow]:
        self._header()  # an archive without one is not an Inspect log, whatever else it holds
        for index, (where, sample) in enumerate(self._samples(), start=1):
            sample = mapping(where, "sample", sample)
            row = self._row(where, index, sample)
            retried = _retried_errors(where, sample.get("error_retries"))
            for retry, message in enumerate(retried):
                yield ImportedRow(
                    line=index, task_id=row.task_id, label=row.label, success=False,
                    terminal_reason=RETRIED_ERROR, retry=retry, origin={"error": message},
                    mapped=f"error_retries -> {RETRIED_ERROR}",
                )  # fmt: skip
            yield replace(row, retry=len(retried)) if retried else row

    def system(self) -> dict[str, Any]:
        spec = mapping(str(self.path), "eval", self._header().get("eval"))
        return {
            "harness": "inspect_ai",
            "task": spec.get("task"),
            "model": spec.get("model"),
            "eval_id": spec.get("eval_id"),
            "created": spec.get("created"),
            "errors": self.errors,
            "scorer": self.scorer,
        }

    def _header(self) -> dict[str, Any]:
        if not self._is_archive():
            return mapping(str(self.path), "log", read_json(self.path))
        with self._archive() as archive:
            names = set(archive.namelist())
            for name in ("header.json", "_journal/start.json"):
                if name in names:
                    return mapping(f"{self.path}!{name}", "log", _member(self.path, archive, name))
        raise SpecError(
            self.path, None, "no header.json or _journal/start.json: not an Inspect log"
        )

    def _is_archive(self) -> bool:
        """A zip archive; a damaged one (a ``.eval`` name, or a zip's first bytes) is named
        as such, not read as broken JSON."""
        if zipfile.is_zipfile(self.path):
            return True
        try:
            with self.path.open("rb") as handle:
                zipped = handle.read(2) == b"PK"
        except OSError as exc:
            raise SpecError(self.path, None, f"cannot read: {exc.strerror}") from None
        if zipped or self.path.suffix.lower() == ".eval":
            raise SpecError(
                self.path, None, "not a readable .eval archive (a zip file): truncated or damaged?"
            )
        return False

    def _samples(self) -> Iterator[tuple[str, Any]]:
        if not self._is_archive():
            log = self._header()
            samples = log.get("samples")
            if not isinstance(samples, list):
                status = log.get("status")
                raise SpecError(
                    self.path,
                    "samples",
                    f"an Inspect .json log lists its samples here; this one (status {status!r}) "
                    f"has {'none' if samples is None else type(samples).__name__}",
                )
            for index, sample in enumerate(samples):
                yield f"{self.path}:samples[{index}]", sample
            return
        with self._archive() as archive:
            for name in archive.namelist():
                if name.startswith("samples/") and name.endswith(".json"):
                    yield f"{self.path}!{name}", _member(self.path, archive, name)

    def _archive(self) -> zipfile.ZipFile:
        try:
            return zipfile.ZipFile(self.path)
        except (OSError, zipfile.BadZipFile) as exc:
            raise SpecError(self.path, None, f"not a readable .eval archive: {exc}") from None

    def _row(self, where: str, index: int, sample: dict[str, Any]) -> ImportedRow:
        common: dict[str, Any] = {
            "line": index,
            "task_id": task_key(where, "id", sample.get("id")),
            "label": integer(where, "epoch", sample.get("epoch")),
            "latency": _seconds(where, sample.get("total_time")),
        }
        own = (
            sample.get("metadata", {}).get(OWN_METADATA)
            if isinstance(sample.get("metadata"), dict)
            else None
        )
        if isinstance(own, dict):
            return _own_row(where, common, own)
        error = sample.get("error")
        if error:
            reason = ERROR_REASONS[self.errors]
            message = error.get("message") if isinstance(error, dict) else str(error)
            return ImportedRow(
                **common,
                success=False,
                terminal_reason=reason,
                origin={"error": message},
                mapped=f"error -> {reason}",
            )
        return self._scored_row(where, common, sample)

    def _scored_row(
        self, where: str, common: dict[str, Any], sample: dict[str, Any]
    ) -> ImportedRow:
        limit = mapping(where, "limit", sample.get("limit")).get("type")
        name, score = self._score(where, mapping(where, "scores", sample.get("scores")))
        value = None if score is None else self._value(where, name, score.get("value"))
        origin = {"limit": limit, "score": {name: value}} if name else {"limit": limit}
        if limit is not None:
            reason = LIMITS.get(str(limit))
            if reason is not None:
                return ImportedRow(
                    **common, success=False, terminal_reason=reason, origin=origin,
                    mapped=f"limit {limit} -> {reason}",
                )  # fmt: skip
        if score is None:
            return ImportedRow(
                **common, success=False, terminal_reason="grader_failure", origin=origin,
                mapped="no score -> grader_failure",
                unmapped=f"limit {limit!r} has no mapping" if limit is not None else None,
            )  # fmt: skip
        reward = _reward(where, name, value)
        verdict = reward_verdict(reward, "agent_failure/incorrect")
        named = isinstance(value, str) and (value in SCORE_VALUES or value.lower() in WORD_VALUES)
        grade = value if named else reward_kind(reward)  # few distinct keys
        return ImportedRow(
            **common,
            success=verdict.success,
            terminal_reason=verdict.terminal_reason,
            partial_score=verdict.partial_score,
            origin=origin,
            mapped=f"score {grade} -> {verdict.terminal_reason}",
            unmapped=f"limit {limit!r} has no mapping; decided by its score" if limit else None,
        )

    def _score(
        self, where: str, scores: dict[str, Any]
    ) -> tuple[str | None, dict[str, Any] | None]:
        if self.scorer is not None:
            name = _scorer_name(self.scorer, scores)
            found = scores.get(name)
            return name, None if found is None else mapping(where, f"scores.{name}", found)
        if len(scores) > 1:
            names = ", ".join(sorted(scores))
            raise SpecError(where, "scores", f"several scorers ({names}): choose one with --scorer")
        for name, score in scores.items():
            return name, mapping(where, f"scores.{name}", score)
        return None, None

    def _value(self, where: str, name: str | None, value: Any) -> Any:
        """The score's value, or the ``--scorer NAME.KEY`` entry of a dict value."""
        if not isinstance(value, dict):
            return value
        key = self.scorer[len(f"{name}.") :] if self.scorer and self.scorer != name else None
        if key is None or key not in value:
            keys = ", ".join(sorted(map(str, value)))
            raise SpecError(
                where,
                f"scores.{name}.value",
                f"a value per key ({keys}): choose one with --scorer {name}.KEY",
            )
        return value[key]


def _scorer_name(scorer: str, scores: dict[str, Any]) -> str:
    """The scorer *scorer* names: ``NAME``, or ``NAME.KEY`` for a key of a dict value."""
    name, dot, _ = scorer.rpartition(".")
    return name if dot and scorer not in scores and name in scores else scorer


def _own_row(where: str, common: dict[str, Any], own: dict[str, Any]) -> ImportedRow:
    """A sample written by ``groundstate export``: its verdict is ours already."""
    field = f"metadata.{OWN_METADATA}"
    success = own.get("success")
    reason = own.get("terminal_reason")
    if not isinstance(success, bool) or not isinstance(reason, str):
        raise SpecError(where, field, "needs success (true/false) and terminal_reason (text)")
    partial = own.get("partial_score")
    return ImportedRow(
        **{**common, "label": own.get("attempt_label", common["label"])},
        success=success,
        terminal_reason=check_reason(where, reason, success),
        partial_score=None if partial is None else number(where, "partial_score", partial),
        cost=number(where, "cost", own.get("cost", 0.0)),
        retry=integer(where, "retry", own.get("retry", 0)),
        task_revision=integer(where, "task_revision", own.get("task_revision", 0)),
        weight=number(where, "weight", own.get("weight", 1.0)),
        horizon=None if own.get("horizon") is None else integer(where, "horizon", own["horizon"]),
        slice_labels=tuple(str(v) for v in own.get("slice_labels") or ()),
        mapped="groundstate verdict -> kept",
    )


def _reward(where: str, name: str | None, value: Any) -> float:
    if isinstance(value, str) and value in SCORE_VALUES:
        return SCORE_VALUES[value]
    if isinstance(value, str) and value.strip().lower() in WORD_VALUES:
        return WORD_VALUES[value.strip().lower()]
    if isinstance(value, str):
        with contextlib.suppress(ValueError):  # a number in text, as Inspect reads it
            value = float(value)
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and 0.0 <= value <= 1.0:
        return float(value)
    raise SpecError(
        where,
        f"scores.{name}.value",
        f"{value!r} is not a verdict (C, I, P, N, yes/no, true/false or a number in [0, 1]); "
        "choose another --scorer",
    )


def _seconds(where: str, value: Any) -> float:
    return 0.0 if value is None else number(where, "total_time", value)


def _member(path: Path, archive: zipfile.ZipFile, name: str) -> Any:
    try:
        return json.loads(archive.read(name))
    except (ValueError, RecursionError) as exc:  # bad JSON or UTF-8, too deep, a huge int
        raise SpecError(f"{path}!{name}", None, f"not valid JSON: {exc}") from None
    except (OSError, zipfile.BadZipFile) as exc:
        raise SpecError(f"{path}!{name}", None, f"cannot read from the archive: {exc}") from None


def _retried_errors(where: str, value: Any) -> list[str]:
    """The messages of the errors Inspect retried before the sample's final try."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise SpecError(where, "error_retries", f"must be a list, got {type(value).__name__}")
    return [str(e.get("message") if isinstance(e, dict) else e) for e in value]
