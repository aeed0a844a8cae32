"""Inspect AI logs: ``.eval`` archives and ``.json`` logs.

A ``.eval`` file is a zip archive: ``_journal/start.json`` (the eval spec and plan),
``samples/<id>_epoch_<epoch>.json`` (one per sample and epoch), ``_journal/summaries/<n>.json``
and, once finished, ``header.json`` (spec, plan, status, results, stats), ``summaries.json``
and ``reductions.json``. A ``.json`` log is the same ``EvalLog`` as one object with its
``samples`` inline. Each sample has ``id``, ``epoch`` (1-based), ``scores`` (scorer name ->
``{value, answer, explanation, metadata}``), ``error``, ``limit``, ``total_time`` ...; samples
are read one at a time, from the archive or from the ``.json`` log (:mod:`.stream`).
"""

from __future__ import annotations

import contextlib
import lzma
import math
import re
import statistics
import struct
import sys
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeGuard

if sys.version_info >= (3, 14):
    import zipfile

    from compression.zstd import ZstdDecompressor, ZstdError
else:  # Zstandard members (Inspect's default since April 2026) need PEP 784's backport
    from backports.zstd import ZstdDecompressor, ZstdError, zipfile

from groundstate.errors import SpecError
from groundstate.importers.compressed import DAMAGED, compression, damaged, open_bytes
from groundstate.importers.rows import (
    ERROR_REASONS,
    INTEGER_LIMIT,
    UNGRADED,
    ErrorPolicy,
    ImportedRow,
    OnceEach,
    StoppedRewards,
    Tokens,
    amount,
    as_reward,
    count,
    integer,
    mapping,
    parse_json,
    planned,
    raised,
    reward_kind,
    reward_verdict,
    task_key,
    total,
)
from groundstate.importers.stream import json_stream
from groundstate.importers.table import COLUMNS, parse_row
from groundstate.rounding import counted

SCORE_VALUES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
"""Inspect's letter grades (correct, incorrect, partial, no answer) as rewards."""
WORD_VALUES = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}
"""Words Inspect's own ``value_to_float`` reads as rewards (any case, but no space around
them: it lowers the value and compares), as do numbers in text (:func:`_numeral`)."""
RETRIED_ERROR = "environment_failure/harness_error"
"""An error Inspect retried (``error_retries``, with ``--retry-on-error``): an invalid try
before the sample's final one, whatever ``--errors`` says, since Inspect itself reran it and
scored only the last try."""
LIMITS = {
    "message": "agent_failure/step_limit",
    "turn": "agent_failure/step_limit",
    "time": "agent_failure/time_limit",
    "working": "agent_failure/time_limit",
    "token": "agent_failure/budget",
    "cost": "agent_failure/budget",
    "context": "harness_compatibility_failure/context_window",
    "custom": "agent_failure/limit",
    "operator": "environment_failure/operator",
}
"""A sample's ``limit.type`` -> ours. A limit decides before the score, as our own stops do
(Inspect still scores the state a limited sample left). ``turn``: model generations.
``operator``: a person stopped the sample, not the agent's doing (invalid). A type not here
(a newer Inspect's) is :data:`OTHER_LIMIT`: a limit is never a normal end."""
OTHER_LIMIT = "agent_failure/limit"
INVALIDATED = "environment_failure/invalidated"
"""A sample someone marked invalid after the run (Inspect's ``invalidation``, from
``invalidate_samples``; eval sets rerun such samples, as they do errors): an invalid attempt,
counted as a failure by the strict view, so marking a sample can never raise that score."""
CANCELLED = "environment_failure/cancelled"
"""A sample whose error is a cancellation (Inspect records ``CancelledError(...)`` or
``Cancelled()`` when a sibling sample failed or the eval was torn down; its own viewer shows
such a sample as cancelled, not errored): not the agent's doing, whatever ``--errors`` says."""
CANCELLATIONS = ("CancelledError(", "Cancelled(")
"""How Inspect's ``is_cancellation_message`` recognises a cancellation's message."""
LOG_VERSION = 2
"""The newest Inspect log schema known here (``LOG_SCHEMA_VERSION`` in Inspect); a newer one is
read by its rules with a warning (a log without one is read as Inspect reads it: current)."""
OWN_METADATA = "groundstate"
"""The sample metadata key under which ``groundstate export --format inspect`` keeps a run's
own verdict; when present it is read back as is."""
EARLIER_TRIES = "earlier_tries"
"""The key, in :data:`OWN_METADATA`, of the invalid tries the run reran (in the row format):
read back instead of the sample's ``error_retries``, which say less (no reason, cost)."""


@dataclass
class InspectSource:
    """An Inspect AI log (``.eval`` archive or ``.json``)."""

    path: Path
    errors: ErrorPolicy = "agent"
    scorer: str | None = None
    """The score that decides the verdict (``NAME``, or ``NAME.KEY`` for one entry of a score
    whose value is a dict); needed when samples carry several."""
    format: str = "inspect"
    _scores_seen: set[str] = field(default_factory=set)
    """The score names the samples carry (for a ``--scorer`` no sample has)."""
    _chosen_seen: bool = False
    _read: int = 0
    """Samples read (each epoch of a sample is one)."""
    _unscored: int = 0
    """Samples that reached scoring (no error, no limit) without any score."""
    _nan: int = 0
    """Samples whose deciding score is NaN (``Score.unscored()``: no verdict)."""
    _invalidated: int = 0
    """Samples marked invalid after the run (named in a warning)."""
    _superseded: int = 0
    """Sample members written again under the same name (the last one is read)."""
    _members: list[str] | None = None
    """The archive's sample members in the order read (for :meth:`place`, on an error)."""
    _log: dict[str, Any] | None = None
    """The header (of a ``.json`` log: the whole log), read once."""
    _foreign_own: int = 0
    """Samples carrying :data:`OWN_METADATA` in a log our export did not write (ignored)."""
    _edited: int = 0
    """Samples whose deciding score was edited after the run (named in a warning)."""
    _stopped: StoppedRewards = field(
        default_factory=lambda: StoppedRewards(
            "Inspect's own metrics count (it scores the state a limited sample left)",
            counts=True,
        )
    )
    """Samples a limit decided whose score gives credit (named in a warning)."""
    _logged: set[tuple[str, int]] = field(default_factory=set)
    """The (sample id, epoch) of each sample read: what the log's own lists of its samples
    (summaries, early stops) are checked against."""
    _unlisted: list[tuple[str, int]] = field(default_factory=list)
    """The (sample id, epoch) of each sample held that a finished archive's
    ``summaries.json`` does not list (named in a warning)."""
    _values: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    """An archive's samples' score values by scorer, by (sample id, epoch): what its
    ``summaries.json`` is checked against."""
    _epochs: dict[tuple[str, str | None], dict[str, list[float]]] = field(default_factory=dict)
    """By score (a scorer, ``(name, None)``, or a key of its dict values, ``(name, key)``)
    and sample id, the sample's epochs' scores as Inspect's metrics read them
    (:func:`_metric_float`): what the header's ``accuracy`` and ``mean`` are checked against
    (:meth:`_metrics_warnings`)."""
    _unread: set[tuple[str, str | None]] = field(default_factory=set)
    """The scores of :attr:`_epochs` with a value Inspect's metrics do not read as a number
    (a list; a dict, read whole): their figures are not recomputed."""
    _rescored: list[tuple[str, int, str, Any, Any]] = field(default_factory=list)
    """(sample id, epoch, scorer, the summary's value, the sample's) of each score a finished
    archive's ``summaries.json`` gives otherwise than its sample (named in a warning)."""

    def rows(self) -> Iterator[ImportedRow]:
        self._header()  # an archive without one is not an Inspect log, whatever else it holds
        yield from self._rows()
        if not self._read:  # else "no result rows", which says nothing of why
            raise SpecError(
                self.path, "samples", f"the log holds no samples (status "
                f"{self._header().get('status', 'started')!r}): run with --no-log-samples, or "
                "stopped before any sample was written; its summary figures are no attempts",
            )  # fmt: skip
        self._check_listed()
        if self.scorer is None and len(self._scores_seen) > 1:
            # each sample was decided by its own scorer: no one scorer's figure
            names = ", ".join(sorted(self._scores_seen))
            raise SpecError(
                self.path, "scores", f"samples are scored by different scorers ({names}): "
                "choose the one that decides with --scorer",
            )  # fmt: skip
        if self.scorer is not None and self._scores_seen and not self._chosen_seen:
            # else every sample would be a grader failure: all invalid, exit 0
            names = ", ".join(sorted(self._scores_seen))
            have = f"they have {names}"
            raise SpecError(self.path, "--scorer", f"no sample has {self.scorer!r} ({have})")
        if self._unscored and not self._scores_seen:  # else a batch of grader failures
            raise SpecError(
                self.path,
                "scores",
                f"no sample has a score ({self._unscored} ended without an error or a limit): "
                "was the eval run with --no-score? Score the log first (inspect score)",
            )

    def warnings(self) -> list[str]:
        header = self._header()
        status = header.get("status", "started")
        results = header.get("results")
        completed = results.get("completed_samples") if isinstance(results, dict) else None
        warnings = []
        stopped = _early_stops(results)
        if stopped:
            warnings.append(_stopped_early(self.path, results, stopped))
        unrun = self._unrun(stopped)
        if status != "success":
            warnings.append(
                f"{self.path}: the log's status is {status!r}, not 'success': Inspect stopped "
                "before every sample was run, and only the samples written are imported"
                + (f" ({unrun})" if unrun else "")
            )
        elif isinstance(completed, int) and self._read < completed:
            warnings.append(
                f"{self.path}: results.completed_samples is {completed} but the log holds "
                f"{counted(self._read, 'sample')}: the missing ones are not imported"
            )
        elif (missing := self._missing(results, len(stopped))) is not None:
            warnings.append(missing)
        elif unrun:
            warnings.append(
                f"{self.path}: {unrun}: they are not imported, so their tasks have fewer "
                "attempts, and a missing attempt is in no denominator"
            )
        if (unplanned := self._unplanned()) is not None:
            warnings.append(unplanned)
        if self._unlisted:
            warnings.append(self._unlisted_warning())
        if self._rescored:
            warnings.append(self._rescored_warning())
        if status == "success" and not self._exported and not self._invalidated:
            warnings.extend(self._metrics_warnings(results))
        if self._nan:
            warnings.append(
                f"{self.path}: {counted(self._nan, 'sample')} scored NaN (Inspect's "
                "Score.unscored(): the scorer gave no verdict, and Inspect's metrics leave "
                "such samples out): imported as grader_failure, invalid attempts, out of the "
                "valid attempts' rates as out of Inspect's, and failures in the strict view"
            )
        if self._unscored:  # with none scored at all, rows() refused the log
            warnings.append(self._unscored_warning())
        if self._edited:
            warnings.append(
                f"{self.path}: {counted(self._edited, 'sample')} "
                f"{'has' if self._edited == 1 else 'have'} a deciding score edited after the "
                "run (Inspect's edit_score): read as edited, as Inspect's metrics read them; "
                "the scorer's own value, and who edited it and why, are kept in origin.edited"
            )
        version = header.get("version")
        if version is not None and version not in range(1, LOG_VERSION + 1):
            warnings.append(
                f"{self.path}: log version {version!r} is not one this reader knows (1 to "
                f"{LOG_VERSION}): its samples were read by version {LOG_VERSION}'s rules"
            )
        if self._superseded:
            warnings.append(
                f"{self.path}: {counted(self._superseded, 'sample record')} "
                f"{'was' if self._superseded == 1 else 'were'} written again (a "
                "requeued sample): the last of each is read, as Inspect reads it"
            )
        if self._foreign_own:
            warnings.append(
                f"{self.path}: {counted(self._foreign_own, 'sample')} "
                f"carr{'ies' if self._foreign_own == 1 else 'y'} metadata.{OWN_METADATA}, "
                "which only groundstate's export writes, in a log it did not write (no "
                f"eval.metadata.{OWN_METADATA}): ignored, as a solver can write a sample's "
                "metadata; their scores decide"
            )
        if self._invalidated:
            warnings.append(
                f"{self.path}: {counted(self._invalidated, 'sample')} "
                f"{'was' if self._invalidated == 1 else 'were'} invalidated after the run: "
                f"stored as invalid ({INVALIDATED}), failures in the strict view"
            )
        return warnings + self._stopped.warnings(self.path)

    def _check_listed(self) -> None:
        """The samples the log lists, against those it holds. An archive's summaries
        (``summaries.json`` once finished, else the journal's ``_journal/summaries/<n>.json``)
        list every sample Inspect wrote, errored ones too, with or without ``results``
        (absent when no sample was scored): a sample listed and not held is a record lost
        or taken out, which would leave its attempt (often a failure) out of every
        denominator. A sample held and also among the early stops (which Inspect never runs,
        so never logs) is a log that contradicts itself. Either is refused: which to believe
        is not this reader's to guess."""
        listed: dict[tuple[str, int], dict[str, Any]] = {}
        for where, sample_id, epoch, summary in self._listed():
            listed[sample_id, epoch] = summary
            if (sample_id, epoch) not in self._logged:
                raise SpecError(
                    where, "id", f"sample {sample_id!r} epoch {epoch} is listed, but the "
                    f"archive holds no record of it (samples/{sample_id}_epoch_{epoch}.json): "
                    "a sample record lost or taken out would leave its attempt out of every "
                    "denominator",
                )  # fmt: skip
        if listed and self._finished_list():  # a journal's may lag its samples (a crash)
            self._unlisted = sorted(self._logged - listed.keys(), key=str)
            self._rescored = list(_rescored(listed, self._values))
        self._values = {}
        results = self._header().get("results")
        for index, stop in enumerate(_early_stops(results)):
            where = f"{self.path}:results.early_stopping.early_stops[{index}]"
            key = _stop_key(where, stop)
            if key is not None and key in self._logged:
                raise SpecError(
                    where, "id",
                    f"sample {key[0]!r} epoch {key[1]} is listed as stopped early (never run), "
                    "but the log holds its record: the log contradicts itself",
                )  # fmt: skip

    def _finished_list(self) -> bool:
        """The archive lists its samples in ``summaries.json``, which Inspect writes once
        the eval ends, every sample it wrote in it."""
        with self._archive() as archive:
            return _summary_members(archive) == [SUMMARIES]

    def _listed(self) -> Iterator[tuple[str, str, int, dict[str, Any]]]:
        """An archive's sample summaries: where each is, its sample's id and epoch, and the
        summary (none for a ``.json`` log, whose samples are its only list of them)."""
        if not self._is_archive():
            return
        with self._archive() as archive:
            for member in _summary_members(archive):
                listed = _member(self.path, archive, member)
                if not isinstance(listed, list):
                    kind = type(listed).__name__
                    raise SpecError(f"{self.path}!{member}", None, f"a list of sample "
                                    f"summaries, got {kind}")  # fmt: skip
                for index, summary in enumerate(listed):
                    where = f"{self.path}!{member}[{index}]"
                    summary = mapping(where, "summary", summary)
                    sample_id = task_key(where, "id", summary.get("id"))
                    epoch = _epoch(where, summary.get("epoch"), summary.get("id"))
                    yield where, sample_id, epoch, summary

    def _missing(self, results: Any, stopped: int) -> str | None:
        """What a finished log says it ran and does not hold: ``results.total_samples`` (its
        samples times its epochs) less the samples stopped early is the samples it logged. A
        sample errored under ``--fail-on-error`` false is logged as well, so only a lost
        record (a member or a sample cut out of the file) makes the difference."""
        given = results.get("total_samples") if isinstance(results, dict) else None
        if not isinstance(given, int) or isinstance(given, bool) or given <= 0:
            return None  # none given (older logs), or an odd one: nothing to compare with
        ran = given - stopped
        if self._read < ran:
            return (
                f"{self.path}: results.total_samples is {given}"
                f"{f' ({stopped} stopped early)' if stopped else ''} but the log holds "
                f"{counted(self._read, 'sample')}: the {ran - self._read} missing are not "
                "imported, so their tasks have fewer attempts"
            )
        if self._read > ran:
            return (
                f"{self.path}: the log holds {counted(self._read, 'sample')}, more than the "
                f"{ran} its results.total_samples ({given}"
                f"{f', less {stopped} stopped early' if stopped else ''}) says were run: "
                "samples added to the log after its run are imported as given"
            )
        return None

    def _unscored_warning(self) -> str:
        """The samples that ended normally (no error, no limit) without the deciding score: a
        scorer that returns ``None`` gives none (Inspect's metrics leave the sample out), as
        does a log scored by another scorer for some samples. Out of the valid attempts'
        rates, as a NaN score is, and so named as it is, not left to the mapping's counts."""
        chosen = f"from --scorer {self.scorer}" if self.scorer else "at all"
        return (
            f"{self.path}: {counted(self._unscored, 'sample')} ended without an error or a "
            f"limit and with no score {chosen}: imported as grader_failure, invalid attempts, "
            "out of the valid attempts' rates as out of Inspect's, and failures in the strict "
            "view"
        )

    def _unlisted_warning(self) -> str:
        """The samples held that the archive's ``summaries.json`` does not list: Inspect lists
        every sample it writes there, so each was added to the archive after the run (a
        sample member written in, a success as easily as a failure)."""
        named = [f"{i!r} epoch {e}" for i, e in self._unlisted[:5]]
        more = len(self._unlisted) - len(named)
        shown = ", ".join(named) + (f" and {more} more" if more else "")
        one = len(self._unlisted) == 1
        return (
            f"{self.path}: {counted(len(self._unlisted), 'sample')} held "
            f"{'is' if one else 'are'} not in the archive's {SUMMARIES} ({shown}), which lists "
            "every sample Inspect wrote: added to the log after its run; imported as given"
        )

    def _rescored_warning(self) -> str:
        """The scores a finished archive's ``summaries.json`` gives otherwise than its samples.
        Inspect writes each summary from its sample, and reads (and rescores, and edits) the
        samples: the sample's score is read, and the disagreement named, never settled
        silently (one of them was changed after the run, a success as easily as a failure)."""
        named = [
            f"{i!r} epoch {e}: {name} {listed!r} in the summary, {held!r} in the sample"
            for i, e, name, listed, held in self._rescored[:5]
        ]
        more = len(self._rescored) - len(named)
        task = _part(self._header(), "eval").get("task")
        one = len(self._rescored) == 1
        return (
            f"{self.path}: {counted(len(self._rescored), 'score')} of task {task!r} in the "
            f"archive's {SUMMARIES} {'differs' if one else 'differ'} from the sample's own ("
            + "; ".join(named)
            + (f"; and {more} more" if more else "")
            + "): each sample's score is read, as Inspect reads it (a summary is a copy made "
            "from its sample), but one of the two was changed after the run"
        )

    def _add_epochs(self, sample_id: str, values: dict[str, Any]) -> None:
        """Add a sample's scores, read as Inspect's metrics read them, to its sample's epochs:
        each scorer's value, or each key's of a dict value (Inspect's metrics of a dict
        score are computed key by key, each logged under the key's name). Read as metrics
        read them, not as verdicts: a ``steps`` score of 3 counts 3 in Inspect's mean,
        and left out, the figure recomputed from the other samples was named as changed."""
        for name, value in values.items():
            if isinstance(value, dict):
                self._unread.add((name, None))  # no figure of the value whole
            parts = value.items() if isinstance(value, dict) else [(None, value)]
            for key, part in parts:
                read = _metric_float(part)
                if read is None:
                    self._unread.add((name, key))
                elif not math.isnan(read):  # Inspect's metrics leave an unscored sample out
                    self._epochs.setdefault((name, key), {}).setdefault(sample_id, []).append(read)

    def _mixed(self, score: tuple[str, str | None]) -> bool:
        """*score* has a value Inspect's metrics read as no number, or is a key of a scorer
        that also gives values that are no dict: no one figure was computed from them."""
        if score in self._unread:
            return True
        return score[1] is not None and (score[0], None) in self._epochs

    def _metrics_warnings(self, results: Any) -> Iterator[str]:
        """The header's ``accuracy`` or ``mean`` of a scorer that the samples held give
        otherwise: Inspect computes them from the samples (each sample's epochs reduced by the
        entry's ``reducer``, :func:`reduced`, then the mean of those), so the samples decide,
        and the figure that disagrees is named, not trusted (a summary edited, or samples
        taken out or edited after the run). A reducer not known here (a custom one, or a
        threshold reducer over partial scores) is not recomputed, and said so
        (:meth:`_unchecked`); other metrics are not recomputed."""
        given = results.get("scores") if isinstance(results, dict) else None
        task = _part(self._header(), "eval").get("task")
        for entry in given if isinstance(given, list) else []:
            if not isinstance(entry, dict):
                continue
            name, metrics = _score_label(entry), _part(entry, "metrics")
            score = _score_key(entry)
            samples = None if score is None or self._mixed(score) else self._epochs.get(score)
            reducer = entry.get("reducer")
            if not samples or not isinstance(reducer, str | None):
                continue
            spans = [reduced(reducer, epochs) for epochs in samples.values()]
            if any(span is None for span in spans):
                yield from self._unchecked(task, name, metrics, reducer, samples)
                continue
            low = math.fsum(span[0] for span in spans if span) / len(spans)
            high = math.fsum(span[1] for span in spans if span) / len(spans)
            for metric in ("accuracy", "mean"):
                value = _part(metrics, metric).get("value")
                if value is not None and not _a_number(value):
                    yield (
                        f"{self.path}: results.scores of task {task!r} give {name} {metric} "
                        f"{value!r}, not a number (Inspect writes a JSON number): not checked "
                        "against the samples (the samples are read, as always)"
                    )
                if not _a_number(value):
                    continue
                if not _within(value, low, high):
                    held = f"{low:.6g}" if low == high else f"{low:.6g} to {high:.6g}"
                    yield (
                        f"{self.path}: results.scores of task {task!r} give {name} {metric} "
                        f"{value!r}, but the {counted(len(samples), 'sample')} held score "
                        f"{held}: the samples are read (the figure is computed from them, "
                        f"each sample's epochs by {_reducing(reducer)}), and the figure was "
                        "changed, or samples taken out or changed, after the run"
                    )

    def _unchecked(
        self, task: Any, name: object, metrics: dict[str, Any], reducer: str | None,
        samples: dict[str, list[float]],
    ) -> Iterator[str]:  # fmt: skip
        """The header's ``accuracy`` or ``mean`` of a scorer whose reducer is not recomputed
        here, said to be unchecked: a figure passed over in silence reads as one checked."""
        given = [
            f"{metric} {value!r}"
            for metric in ("accuracy", "mean")
            if (value := _part(metrics, metric).get("value")) is not None
        ]
        if given:
            yield (
                f"{self.path}: results.scores of task {task!r} give {name} {' and '.join(given)}"
                f" reduced by {reducer!r}, {_not_recomputed(reducer, samples)}: the figure was "
                "not checked against the samples (the samples are read, as always)"
            )

    def _plan(self) -> tuple[int | None, list[str] | None, int | None]:
        """What the log's header says the eval would run: its epochs
        (``eval.config.epochs``), its samples' ids (``eval.dataset.sample_ids``, after
        ``--limit`` and ``--sample-id``) and how many (those ids, or ``eval.dataset.samples``
        when neither option was given: it counts the dataset before either). ``None``: not
        given (older logs)."""
        spec = _part(self._header(), "eval")
        config, dataset = _part(spec, "config"), _part(spec, "dataset")
        where = f"{self.path}:eval"
        epochs, ids = planned(
            where, "config.epochs", config.get("epochs"), "dataset.sample_ids",
            dataset.get("sample_ids"),
        )  # fmt: skip
        if ids is not None:
            return epochs, ids, len(ids)
        size = dataset.get("samples")
        sliced = config.get("limit") is not None or config.get("sample_id") is not None
        if size is None or sliced:
            return epochs, None, None
        return epochs, None, count(where, "dataset.samples", size)  # a negative one: refused

    def _unrun(self, stopped: list[Any]) -> str | None:
        """The attempts the header planned (its samples times its epochs, less those stopped
        early) that the log does not hold, named; ``None``: none, or no plan given. Checked
        whether or not the log has ``results`` (none when no sample was scored: every
        sample errored, or the eval was cancelled), whose ``total_samples`` says the same."""
        epochs, ids, size = self._plan()
        if epochs is None or size is None:
            return None
        at = f"{self.path}:results.early_stopping.early_stops"
        stops = {key for i, stop in enumerate(stopped) if (key := _stop_key(f"{at}[{i}]", stop))}
        if ids is None:  # only a count: the attempts the log holds of the epochs planned
            held = sum(epoch <= epochs for _, epoch in self._logged)
            short = size * epochs - len(stops) - held
            if short <= 0:
                return None
            return (
                f"{short} of the {size * epochs} attempts its header plans (eval.dataset."
                f"samples {size} x eval.config.epochs {epochs}) are not in the log"
            )
        planned = [(i, e) for e in range(1, epochs + 1) for i in dict.fromkeys(ids)]
        lost = [key for key in planned if key not in self._logged and key not in stops]
        if not lost:
            return None
        named = [f"{i!r} epoch {e}" for i, e in lost[:5]]
        shown = ", ".join(named) + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
        return (
            f"{len(lost)} of the {len(planned)} attempts its header plans "
            f"(eval.dataset.sample_ids x eval.config.epochs {epochs}) are not in the log: "
            f"{shown}"
        )

    def _unplanned(self) -> str | None:
        """The samples held whose id the header's ``eval.dataset.sample_ids`` does not list:
        a ``SampleSource`` adds samples while the eval runs (not listed there), a file
        edited after the run does too; named, as the count past ``total_samples`` is."""
        _, ids, _ = self._plan()
        if ids is None:
            return None
        known = set(ids)
        extra = sorted({str(i) for i, _ in self._logged if i not in known})
        if not extra:
            return None
        shown = ", ".join(map(repr, extra[:5])) + (" ..." if len(extra) > 5 else "")
        return (
            f"{self.path}: {counted(len(extra), 'sample id')} {'is' if len(extra) == 1 else 'are'} "
            "not among eval.dataset.sample_ids "
            f"({shown}): added while the eval ran (a SampleSource) or to the log after it; "
            "imported as given"
        )

    def _rows(self) -> Iterator[ImportedRow]:
        once = OnceEach("sample run")  # Inspect's uuid: one per sample and epoch
        epochs, archive = self._plan()[0], self._is_archive()
        for index, (where, sample) in enumerate(self._samples(), start=1):
            self._read = index
            sample = mapping(where, "sample", sample)
            once.check(where, "uuid", sample.get("uuid"), (sample.get("id"), sample.get("epoch")))
            row = self._row(where, index, sample)  # counts a foreign verdict it ignores
            epoch = _epoch(where, sample.get("epoch"))
            if epochs is not None and epoch > epochs:
                raise SpecError(
                    where, "epoch", f"{epoch}, past the {counted(epochs, 'epoch')} of the log's "
                    f"header (eval.config.epochs): Inspect runs epochs 1 to {epochs}, so this "
                    "sample was added to the log after its run, and would be an attempt too many",
                )  # fmt: skip
            self._logged.add((row.task_id, epoch))
            values = _score_values(where, sample)
            if archive:
                self._values[row.task_id, epoch] = values
            self._add_epochs(row.task_id, values)
            own = _own(sample) if self._exported else None
            if own is not None and isinstance(own.get(EARLIER_TRIES), list):
                yield from _earlier_tries(where, row, own[EARLIER_TRIES])
                yield row
                continue
            retried = _retried_errors(where, sample.get("error_retries"))
            for retry, message in enumerate(retried):
                yield ImportedRow(
                    line=index, task_id=row.task_id, label=row.label, success=False,
                    terminal_reason=RETRIED_ERROR, retry=retry, origin={"error": message},
                    mapped=f"error_retries -> {RETRIED_ERROR}",
                )  # fmt: skip
            yield replace(row, retry=len(retried)) if retried else row

    def place(self, line: int) -> str:
        if not self._is_archive():
            return f"{self.path}:samples[{line - 1}]"
        if self._members is None:
            with self._archive() as archive:
                self._members = _sample_members(archive)
        return f"{self.path}!{self._members[line - 1]}"

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
        if self._log is None:
            self._log = self._read_header()
        return self._log

    def _read_header(self) -> dict[str, Any]:
        if not self._is_archive():
            return self._json_header()
        with self._archive() as archive:
            names = set(archive.namelist())
            for name in ("header.json", "_journal/start.json"):
                if name in names:
                    return mapping(f"{self.path}!{name}", "log", _member(self.path, archive, name))
        held = ", ".join(sorted(names)[:3]) + (", ..." if len(names) > 3 else "")
        raise SpecError(
            self.path, None, f"a zip archive holding {held or 'nothing'}, with no header.json "
            "or _journal/start.json: not an Inspect log (unzip it and import the file it holds)",
        )  # fmt: skip

    def _is_archive(self) -> bool:
        """A zip archive; a damaged one (a ``.eval`` name, or a zip's first bytes) is named
        as such, not read as broken JSON. A ``.json`` log renamed ``.eval`` is read as JSON."""
        if zipfile.is_zipfile(self.path):
            return True
        try:
            with open_bytes(self.path) as handle:  # a .json log kept compressed
                head = handle.read(1 << 10).removeprefix(b"\xef\xbb\xbf").lstrip()
        except DAMAGED as exc:
            raise SpecError(self.path, None, damaged(self.path, exc)) from None
        zipped, json_log = head.startswith(b"PK"), head.startswith(b"{")
        if zipped and (kind := compression(self.path)) is not None:  # an archive's a seek away
            raise SpecError(
                self.path, None, f"an .eval archive compressed with {kind}: decompress it "
                "(an .eval archive is compressed inside; it is read as Inspect wrote it)",
            )  # fmt: skip
        if zipped or (self.path.suffix.lower() == ".eval" and not json_log):  # a .json log
            raise SpecError(
                self.path, None, "not a readable .eval archive (a zip file): truncated or damaged?"
            )
        return False

    def _samples(self) -> Iterator[tuple[str, Any]]:
        if not self._is_archive():
            yield from self._json_samples()
            return
        with self._archive() as archive:
            names = _sample_members(archive)
            self._superseded = sum(map(_is_sample, archive.namelist())) - len(names)
            for name in names:
                sample = _member(self.path, archive, name)
                yield f"{self.path}!{name}", _with_metadata(self.path, archive, name, sample)

    def _json_header(self) -> dict[str, Any]:
        """A ``.json`` log's every top-level key but its samples, read without them: they are
        read one at a time by :meth:`_json_samples`. The keys Inspect writes after its samples
        (``reductions``, ``location``) are added as that walk passes them, unless a sample's
        reading needs one (``eval``, to tell our export's log): then this walk reads past the
        samples to it."""
        header: dict[str, Any] = {}
        with json_stream(self.path, MEMBER_LIMIT) as stream:
            if stream.peek() != "{":
                return mapping(str(self.path), "log", stream.value())
            for key in stream.members():
                if key == "samples" and "eval" in header:
                    return header  # the samples and what follows: read by _json_samples
                if key == "samples":
                    stream.skip(key)
                else:
                    header[key] = stream.value(key)
        return header

    def _json_samples(self) -> Iterator[tuple[str, Any]]:
        """A ``.json`` log's samples, each parsed on its own (a log of a gigabyte took several
        GB of memory read whole), each within :data:`MEMBER_LIMIT` as an archive's member is;
        the whole document is still checked as a whole parse checks it."""
        header, found = self._header(), False
        with json_stream(self.path, MEMBER_LIMIT) as stream:
            for key in stream.members():
                if key != "samples":
                    header.setdefault(key, stream.value(key))  # past the samples: see above
                    continue
                found = True
                if stream.peek() != "[":
                    samples = stream.value(key)
                    status = header.get("status")
                    raise SpecError(
                        self.path, "samples", f"an Inspect .json log lists its samples here; "
                        f"this one (status {status!r}) has "
                        f"{'none' if samples is None else type(samples).__name__}",
                    )  # fmt: skip
                for index, sample in enumerate(stream.elements("samples")):
                    yield f"{self.path}:samples[{index}]", sample
            stream.end()
        if not found:
            status = header.get("status")
            raise SpecError(
                self.path, "samples", f"an Inspect .json log lists its samples here; this one "
                f"(status {status!r}) has none",
            )  # fmt: skip

    def _own(self, sample: dict[str, Any]) -> dict[str, Any] | None:
        """The verdict our export kept in *sample*, read only from a log our export wrote (its
        eval's metadata names the batch): any other log's sample metadata is the solver's to
        write, so an agent could set its own verdict there."""
        own = _own(sample)
        if own is None or self._exported:
            return own
        self._foreign_own += 1
        return None

    @property
    def _exported(self) -> bool:
        """The log was written by ``groundstate export``."""
        spec = self._header().get("eval")
        metadata = spec.get("metadata") if isinstance(spec, dict) else None
        return isinstance(metadata, dict) and isinstance(metadata.get(OWN_METADATA), dict)

    def _archive(self) -> zipfile.ZipFile:
        try:
            return zipfile.ZipFile(self.path)
        except (OSError, zipfile.BadZipFile) as exc:
            raise SpecError(self.path, None, f"not a readable .eval archive: {exc}") from None

    def _row(self, where: str, index: int, sample: dict[str, Any]) -> ImportedRow:
        scoring = _scoring(sample)
        common: dict[str, Any] = {
            "line": index,
            "task_id": task_key(where, "id", sample.get("id")),
            "label": _epoch(where, sample.get("epoch"), sample.get("id")),
            "latency": _latency(where, sample, scoring),
            "cost": _cost(where, sample),
            "tokens": _tokens(where, sample),
        }
        invalidation = sample.get("invalidation")
        if invalidation is not None:
            marked = mapping(where, "invalidation", invalidation)
            self._invalidated += 1
            return ImportedRow(
                **common, success=False, terminal_reason=INVALIDATED,
                origin={"invalidation": {k: marked.get(k) for k in ("author", "reason")}},
                mapped=f"invalidation -> {INVALIDATED}",
            )  # fmt: skip
        own = self._own(sample)
        if own is not None:
            return _own_row(where, common, own)
        error = sample.get("error")
        # a scorer's error, if any: its events say so, or a limit stopped the solvers before
        # it (Inspect records a limit only when it ends the solvers, so a later error came
        # from scoring; read by --errors, a limit failure became an invalid attempt)
        graded = (scoring is not None and scoring.raised) or _limit(where, sample) is not None
        if raised(error):
            message = error.get("message") if isinstance(error, dict) else str(error)
            cancelled = isinstance(message, str) and message.startswith(CANCELLATIONS)
            if graded and not cancelled and self._decided(where, sample):
                row = self._scored_row(where, common, sample)  # the error kept beside it
                return replace(row, origin={**(row.origin or {}), "error": message,
                                            "raised_by": "scorer"})  # fmt: skip
            reason = (
                CANCELLED if cancelled else (UNGRADED if graded else ERROR_REASONS)[self.errors]
            )
            return ImportedRow(
                **common,
                success=False,
                terminal_reason=reason,
                origin={"error": message, **({"raised_by": "scorer"} if graded else {})},
                mapped=f"{'scorer error' if graded else 'error'} -> {reason}",
            )
        return self._scored_row(where, common, sample)

    def _decided(self, where: str, sample: dict[str, Any]) -> bool:
        """A sample whose scoring raised was decided before: by a limit (its first stop), or
        by the deciding score, given by a scorer that finished before another raised (Inspect
        keeps such scores, and its metrics count them)."""
        if _limit(where, sample) is not None:
            return True
        return self._score(where, _scores(where, sample))[1] is not None

    def _scored_row(
        self, where: str, common: dict[str, Any], sample: dict[str, Any]
    ) -> ImportedRow:
        limit = _limit(where, sample)
        name, score = self._score(where, _scores(where, sample))
        if limit is not None:  # the limit decides: the score, kept as given, is not read
            given = None if score is None else score.get("value")
            self._credited(where, limit, name, given)
            origin: dict[str, Any] = {"limit": limit}
            if name:
                origin["score"] = {name: given}
            reason = LIMITS.get(limit, OTHER_LIMIT)
            return ImportedRow(
                **common, success=False, terminal_reason=reason, origin=origin,
                mapped=f"limit {limit} -> {reason}",
                unmapped=None if limit in LIMITS else f"limit {limit!r} is not one known "
                f"here: {OTHER_LIMIT}, not its score",
            )  # fmt: skip
        value = None if score is None else self._value(where, name, score.get("value"))
        origin = {"limit": None, "score": {name: value}} if name else {"limit": None}
        edited = None if score is None else _edited(where, name, score)
        if edited is not None:
            self._edited += 1
            origin["edited"] = edited
        if score is None:
            self._unscored += 1
            return ImportedRow(
                **common, success=False, terminal_reason="grader_failure", origin=origin,
                mapped="no score -> grader_failure",
            )  # fmt: skip
        if isinstance(value, float) and math.isnan(value):
            # Inspect's Score.unscored(): the scorer could render no verdict (a grader model's
            # unreadable reply, say); its metrics leave the sample out, as ours leave out an
            # invalid attempt. Its reason is kept, and the count named in a warning.
            self._nan += 1
            why = score.get("explanation")
            return ImportedRow(
                **common, success=False, terminal_reason="grader_failure",
                origin={**origin, "score": {name: "NaN"},
                        **({"explanation": why} if isinstance(why, str) else {})},
                mapped="score NaN (unscored: no verdict) -> grader_failure",
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
            reward=reward,
            origin=origin,
            mapped=f"score {grade} -> {verdict.terminal_reason}",
        )

    def _credited(self, where: str, limit: str, name: str | None, given: Any) -> None:
        """Note a limited sample whose score, read as any other's, gives credit."""
        with contextlib.suppress(SpecError):  # not read: a value of no verdict gives none
            reward = _reward(where, name, self._value(where, name, given))
            if reward:
                self._stopped.note(where, f"limit {limit}, score {given!r}")

    def _score(
        self, where: str, scores: dict[str, Any]
    ) -> tuple[str | None, dict[str, Any] | None]:
        self._scores_seen.update(scores)
        if self.scorer is not None:
            name = _scorer_name(self.scorer, scores)
            found = scores.get(name)
            self._chosen_seen |= found is not None
            return name, None if found is None else mapping(where, f"scores.{name}", found)
        if len(scores) > 1:
            names = ", ".join(sorted(scores))
            raise SpecError(where, "scores", f"several scorers ({names}): choose one with --scorer")
        for name, score in scores.items():
            return name, mapping(where, f"scores.{name}", score)
        return None, None

    def _value(self, where: str, name: str | None, value: Any) -> Any:
        """The score's value, or the ``--scorer NAME.KEY`` entry of a dict value (for a list
        value, ``NAME.INDEX``: Inspect's values may be either)."""
        key = self.scorer[len(f"{name}.") :] if self.scorer and self.scorer != name else None
        if not isinstance(value, dict | list):
            if key is not None:  # read as the entry's value, a scalar decided every sample
                raise SpecError(
                    where, f"scores.{name}.value", f"{value!r}, one value, not a value per key "
                    f"or position: --scorer {self.scorer} names an entry it does not have "
                    f"(--scorer {name} reads it whole)",
                )  # fmt: skip
            return value
        if isinstance(value, list):
            entries = dict(enumerate(value))
            index = int(key) if key is not None and key.isdigit() else None
            if index in entries:
                return entries[index]
            keys, kind, choice = f"0 to {len(value) - 1}" if value else "none", "position", "INDEX"
        elif key is not None and key in value:
            return value[key]
        else:
            keys, kind, choice = ", ".join(sorted(map(str, value))), "key", "KEY"
        raise SpecError(
            where,
            f"scores.{name}.value",
            f"a value per {kind} ({keys}): choose one with --scorer {name}.{choice}",
        )


def _edited(where: str, name: str | None, score: dict[str, Any]) -> dict[str, Any] | None:
    """Who edited the deciding score after the run, why, and the scorer's own value, when
    anyone did (``None`` otherwise). Inspect's ``edit_score`` changes ``value`` in place and
    keeps the scorer's original as the first entry of ``history`` (no ``provenance``), each
    edit after it with its ``provenance`` (``author``, ``reason``, ``timestamp``); Inspect's
    metrics read the edited value, as this reader does, but never silently: a person, not
    the scorer, decided it."""
    history = score.get("history")
    if history is None or history == []:
        return None
    if not isinstance(history, list):
        kind = type(history).__name__
        raise SpecError(where, f"scores.{name}.history", f"must be a list of edits, got {kind}")
    edits = [mapping(where, f"scores.{name}.history[{i}]", e) for i, e in enumerate(history)]
    made = [
        mapping(where, f"scores.{name}.history[{i}].provenance", e["provenance"])
        for i, e in enumerate(edits)
        if e.get("provenance") is not None
    ]
    if not made:
        return None  # the scorer's own value only (an edit undone, or none made)
    original = edits[0].get("value") if edits[0].get("provenance") is None else None
    last = made[-1]
    return {"original": original, "author": last.get("author"), "reason": last.get("reason"),
            "edits": len(made)}  # fmt: skip


def _part(data: dict[str, Any], key: str) -> dict[str, Any]:
    """``data[key]`` when it is an object, else empty (a part not given says nothing)."""
    part = data.get(key)
    return part if isinstance(part, dict) else {}


def _early_stops(results: Any) -> list[Any]:
    """The samples an early-stopping manager stopped before they ran
    (``results.early_stopping.early_stops``, each ``{id, epoch, reason}``): Inspect logs no
    sample for them, so they are no attempts, and their tasks hold fewer epochs than the
    eval ran. What is not a list of them (older logs: none) says nothing."""
    summary = results.get("early_stopping") if isinstance(results, dict) else None
    stops = summary.get("early_stops") if isinstance(summary, dict) else None
    return stops if isinstance(stops, list) else []


def _stop_key(where: str, stop: Any) -> tuple[str, int] | None:
    """An early stop's sample id (as a task key) and epoch, read as a sample's (``2.0`` is
    epoch 2, ``1.5`` refused); ``None`` when it names none (no id, or an epoch that is no
    number)."""
    if not isinstance(stop, dict):
        return None
    sample_id, epoch = stop.get("id"), stop.get("epoch")
    if isinstance(sample_id, bool) or not isinstance(sample_id, str | int) or sample_id == "":
        return None
    if isinstance(epoch, bool) or not isinstance(epoch, int | float):
        return None
    return task_key("", "id", sample_id), _epoch(where, epoch, sample_id)


SUMMARIES = "summaries.json"
JOURNAL_SUMMARY = re.compile(r"_journal/summaries/(\d+)\.json")


def _summary_members(archive: zipfile.ZipFile) -> list[str]:
    """The members listing the archive's samples: ``summaries.json`` (written when the eval
    finished), else the journal's, in the order written (an unfinished log)."""
    names = archive.namelist()
    if SUMMARIES in names:
        return [SUMMARIES]
    journal = {int(m.group(1)): name for name in names if (m := JOURNAL_SUMMARY.fullmatch(name))}
    return [journal[n] for n in sorted(journal)]


def _stopped_early(path: Path, results: Any, stopped: list[Any]) -> str:
    """The warning naming the samples an early-stopping manager never ran."""
    summary = results["early_stopping"]
    manager = summary.get("manager")
    named = [
        f"{stop.get('id')!r} epoch {stop.get('epoch')}"
        for stop in stopped
        if isinstance(stop, dict)
    ]
    shown = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
    return (
        f"{path}: {counted(len(stopped), 'sample')} "
        f"{'was' if len(stopped) == 1 else 'were'} stopped early"
        f"{f' by {manager!r}' if isinstance(manager, str) else ''} before they ran ({shown}): "
        "no attempts, so not imported: their tasks have fewer attempts than the eval's epochs, "
        "and a task stopped in every epoch is in no denominator"
    )


def _epoch(where: str, value: Any, sample_id: Any = None) -> int:
    """The sample's epoch: Inspect numbers epochs from 1 (``range(1, epochs + 1)``); a 0 or
    less is a file it did not write, and would have been read as an attempt shifted by one.
    A whole number written as a float (``2.0``) is that epoch, as Inspect's own reader (its
    pydantic ``int``) takes it; ``1.5`` is no epoch, and is refused naming *sample_id*: read
    as either neighbour, it would be an attempt of another epoch, or one given twice."""
    if isinstance(value, float) and math.isfinite(value) and not value.is_integer():
        of = "" if sample_id is None else f" (sample {sample_id!r})"
        raise SpecError(
            where, "epoch", f"must be an integer (Inspect numbers epochs 1, 2, 3 ...; 2.0 is "
            f"read as 2), got {value!r}{of}: no epoch of the eval",
        )  # fmt: skip
    epoch = integer(where, "epoch", value)
    if epoch < 1:
        raise SpecError(
            where, "epoch", f"must be 1 or more (Inspect numbers epochs from 1), got {epoch}"
        )
    return epoch


def _limit(where: str, sample: dict[str, Any]) -> str | None:
    """The type of the limit that stopped the sample (``limit.type``), ``None`` when none did.
    A limit given without its type (``{}``, ``{"type": null}``), which Inspect's
    ``EvalSampleLimit`` never writes, is refused: read as no limit, a sample a limit stopped
    was decided by the score of the state it left."""
    given = sample.get("limit")
    if given is None:
        return None
    kind = mapping(where, "limit", given).get("type")
    if not isinstance(kind, str) or not kind.strip():
        raise SpecError(
            where, "limit.type", f"required: the kind of limit that stopped the sample (message, "
            f"token, time, working ...), got {kind!r}",
        )  # fmt: skip
    return kind


def _sample_members(archive: zipfile.ZipFile) -> list[str]:
    """The archive's sample members, each name once: Inspect re-logs a requeued sample as a
    second member of the same name, which supersedes the first (a read by name gets the
    last, as Inspect's own reader does)."""
    return [name for name in dict.fromkeys(archive.namelist()) if _is_sample(name)]


def _is_sample(name: str) -> bool:
    """An archive member holding a sample: ``samples/<id>_epoch_<n>.json``, or the shell of a
    sample Inspect stored in chunks (``samples/<id>_epoch_<n>/sample.json``, beside its
    ``metadata.json``, ``messages/0.json``, ``events/0.json`` ...)."""
    if not name.startswith("samples/") or not name.endswith(".json"):
        return False
    chunk = _CHUNKED.fullmatch(name)
    return chunk is None or chunk.group(2) == "sample.json"


_CHUNKED = re.compile(
    r"(samples/.+_epoch_\d+)/(sample\.json|metadata\.json|skeleton\.json"
    r"|(?:messages|events|calls|attachments)/(?:\d+|stats|uuids)\.json)"
)
"""A member of a chunked sample: its prefix and its part (only Inspect's part names: a sample
id may hold ``/``, so ``samples/a/b_epoch_1.json`` is a sample of its own)."""


def _with_metadata(path: Path, archive: zipfile.ZipFile, name: str, sample: Any) -> Any:
    """A chunked sample's shell with its metadata, which Inspect keeps apart (when any), and
    its events, read chunk by chunk as they are needed (where its scoring began)."""
    chunk = _CHUNKED.fullmatch(name)
    if chunk is None or not isinstance(sample, dict):
        return sample
    prefix = chunk.group(1)
    chunks = sorted(
        (int(found.group(1)), member)
        for member in archive.namelist()
        if (found := re.fullmatch(re.escape(prefix) + r"/events/(\d+)\.json", member))
    )
    if chunks and not sample.get("events"):
        sample = {**sample, "events": _chunked_events(path, archive, [m for _, m in chunks])}
    metadata = f"{prefix}/metadata.json"
    try:
        archive.getinfo(metadata)
    except KeyError:
        return sample
    return {**sample, "metadata": _member(path, archive, metadata)}


def _chunked_events(path: Path, archive: zipfile.ZipFile, members: list[str]) -> Iterator[Any]:
    """The events of a chunked sample, chunk after chunk (each a list of events)."""
    for member in members:
        events = _member(path, archive, member)
        if not isinstance(events, list):
            raise SpecError(f"{path}!{member}", None, "an events chunk is a list of events")
        yield from events


def _scores(where: str, sample: dict[str, Any]) -> dict[str, Any]:
    """The sample's scores; logs of Inspect's first format hold one ``score`` instead (which
    Inspect's own reader moves into ``scores`` as well)."""
    if "score" not in sample or sample["score"] is None:
        return mapping(where, "scores", sample.get("scores"))
    if sample.get("scores"):
        raise SpecError(where, "score", "given beside scores: which of them decides?")
    return {"score": sample["score"]}


def _score_values(where: str, sample: dict[str, Any]) -> dict[str, Any]:
    """The value of each score *sample* gives, by scorer (none when its scores are not
    readable: the sample's reading names that)."""
    with contextlib.suppress(SpecError):
        scores = _scores(where, sample)
        return {n: s["value"] for n, s in scores.items() if isinstance(s, dict) and "value" in s}
    return {}


def _rescored(
    listed: dict[tuple[str, int], dict[str, Any]], held: dict[tuple[str, int], dict[str, Any]]
) -> Iterator[tuple[str, int, str, Any, Any]]:
    """Each score a summary gives a value other than its sample's (sample id, epoch, scorer,
    the summary's value, the sample's); a scorer only one of them gives is not compared (a
    summary Inspect thinned, an older one without scores)."""
    for key, summary in listed.items():
        given = summary.get("scores")
        if not isinstance(given, dict):
            continue
        values = held.get(key, {})
        for name, score in given.items():
            known = isinstance(score, dict) and "value" in score and name in values
            if known and not _same_value(score["value"], values[name]):
                yield key[0], key[1], name, score["value"], values[name]


_COUNTED = re.compile(r"(at_least|pass_at)_([1-9][0-9]{0,5})")
"""The reducers whose name carries their ``k`` (``at_least(3)`` is logged ``at_least_3``)."""


def reduced(reducer: str | None, epochs: list[float]) -> tuple[float, float] | None:
    """The value Inspect's *reducer* gives a sample's *epochs* (its scores as floats, NaN left
    out as Inspect leaves it out), as the lowest and highest it can be (``mode`` of a tie
    takes whichever Inspect met first, an order the log does not keep); ``None``: a reducer
    not recomputed here. ``at_least_k`` and ``pass_at_k`` count the epochs scoring at least
    their threshold, which the log does not give (1.0 by default): recomputed only when every
    score is 0 or 1, which any threshold in (0, 1] counts alike; ``pass_at_k`` of fewer than
    k epochs is NaN to Inspect (not recomputed)."""
    if reducer in (None, "mean"):
        mean = math.fsum(epochs) / len(epochs)
        return mean, mean
    if reducer in ("median", "max"):
        value = statistics.median(epochs) if reducer == "median" else max(epochs)
        return value, value
    if reducer == "mode":
        counts = Counter(epochs)
        most = max(counts.values())
        tied = [value for value, n in counts.items() if n == most]
        return min(tied), max(tied)
    counted_k = _COUNTED.fullmatch(reducer or "")
    if counted_k is None or any(value not in (0.0, 1.0) for value in epochs):
        return None
    k, n, correct = int(counted_k[2]), len(epochs), epochs.count(1.0)
    if counted_k[1] == "at_least":
        value = float(correct >= k)
    elif n < k:
        return None
    else:
        value = 1.0 - math.comb(n - correct, k) / math.comb(n, k)
    return value, value


def _a_number(value: Any) -> TypeGuard[float]:
    """*value* is a JSON number, as Inspect writes a metric's value (not text, not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _not_recomputed(reducer: str | None, samples: dict[str, list[float]]) -> str:
    """Why :func:`reduced` does not recompute *reducer* over *samples*' epochs."""
    counted_k = _COUNTED.fullmatch(reducer or "")
    if counted_k is None:
        return "a reducer of one's own, not recomputed here"
    k = int(counted_k[2])
    if any(value not in (0.0, 1.0) for epochs in samples.values() for value in epochs):
        return (
            "over partial scores, whose threshold (1.0 unless the task set another) the log "
            "does not give"
        )
    return f"of a sample with fewer than {k} epochs (NaN to Inspect)"


def _within(value: float, low: float, high: float) -> bool:
    """*value* is a figure from *low* to *high*, to a float's rounding."""
    close = math.isclose(value, low, rel_tol=1e-6, abs_tol=1e-9) or math.isclose(
        value, high, rel_tol=1e-6, abs_tol=1e-9
    )
    return close or low <= value <= high


def _reducing(reducer: str | None) -> str:
    """How a sample's epochs were reduced, for the warning."""
    return "their mean" if reducer in (None, "mean") else f"the reducer {reducer!r}"


def _same_value(a: Any, b: Any) -> bool:
    """*a* and *b* are one score value (NaN, Inspect's no verdict, is one value here)."""
    nan = isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
    return nan or bool(a == b)


def _scorer_name(scorer: str, scores: dict[str, Any]) -> str:
    """The scorer *scorer* names: ``NAME``, or ``NAME.KEY`` for a key of a dict value."""
    name, dot, _ = scorer.rpartition(".")
    return name if dot and scorer not in scores and name in scores else scorer


def _own(sample: dict[str, Any]) -> dict[str, Any] | None:
    """The verdict ``groundstate export`` kept in the sample's metadata, if any."""
    metadata = sample.get("metadata")
    own = metadata.get(OWN_METADATA) if isinstance(metadata, dict) else None
    return own if isinstance(own, dict) else None


def _earlier_tries(where: str, row: ImportedRow, tries: list[Any]) -> Iterator[ImportedRow]:
    """The invalid tries an exported run reran, read by the row format's rules."""
    for index, given in enumerate(tries):
        place = f"{where}: metadata.{OWN_METADATA}.{EARLIER_TRIES}[{index}]"
        columns = {k: v for k, v in mapping(place, "try", given).items() if k in COLUMNS}
        columns.update(task_id=row.task_id, attempt=row.label)
        earlier = parse_row(place, row.line, columns)
        yield replace(earlier, mapped="groundstate verdict -> kept")


def _own_row(where: str, common: dict[str, Any], own: dict[str, Any]) -> ImportedRow:
    """A sample written by ``groundstate export``: its verdict is ours already, in the row
    format's columns, read by the row format's own rules (a weight of -1 or a retry of -3
    is refused as it would be in a CSV)."""
    columns = {key: value for key, value in own.items() if key in COLUMNS}
    columns["task_id"] = common["task_id"]
    columns.setdefault("attempt", own.get("attempt_label", common["label"]))
    columns.setdefault("latency", common["latency"])
    row = parse_row(f"{where}: metadata.{OWN_METADATA}", common["line"], columns)
    return replace(row, mapped="groundstate verdict -> kept")


def _reward(where: str, name: str | None, value: Any) -> float:
    if isinstance(value, str) and value in SCORE_VALUES:
        return SCORE_VALUES[value]
    if isinstance(value, str) and value.lower() in WORD_VALUES:
        return WORD_VALUES[value.lower()]
    if isinstance(value, str) and _numeral(value):
        with contextlib.suppress(ValueError):  # a number in text, as Inspect reads it
            value = float(value)
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        with contextlib.suppress(ValueError):
            return as_reward(value)
    raise SpecError(
        where,
        f"scores.{name}.value",
        f"{value!r} is not a verdict (C, I, P, N, yes/no, true/false or a number in [0, 1])"
        + (", and Inspect's own metrics read it as 0" if isinstance(value, str) else "")
        + "; choose another --scorer",
    )


def _metric_float(value: Any) -> float | None:
    """*value* as Inspect's metrics read a score (``value_to_float``): a number as it is,
    NaN included (an unscored sample, which they leave out), a bool as 0 or 1, its letter
    grades, yes/no and true/false in any case, a numeral; other text as 0 (Inspect warns and
    reads 0). ``None``: a value they do not read as one number (a dict or a list), or one
    past :data:`INTEGER_LIMIT` (an infinity, a ``1e308`` whose sums overflow): not
    recomputed."""
    if isinstance(value, int | float):  # a bool too
        read = float(value)
    elif not isinstance(value, str):
        return None
    elif value in SCORE_VALUES or value.lower() in WORD_VALUES:
        return SCORE_VALUES.get(value, WORD_VALUES.get(value.lower()))
    elif not _numeral(value):
        return 0.0
    else:
        try:
            read = float(value)
        except ValueError:  # "1.2.3": Inspect's float() raises, no figure was computed
            return None
    return None if abs(read) > INTEGER_LIMIT else read


def _score_key(entry: dict[str, Any]) -> tuple[str, str | None] | None:
    """The score a header's ``results.scores`` entry was computed from: its scorer's values
    (``name``, which is the scorer's), or, for an entry whose ``scorer`` is another name,
    that scorer's values under the key ``name`` (Inspect logs a dict score's metrics per
    key, each entry named by its key); ``None``: an entry naming none."""
    name, scorer = entry.get("name"), entry.get("scorer")
    if not isinstance(name, str):
        return None
    return (name, None) if not isinstance(scorer, str) or scorer == name else (scorer, name)


def _score_label(entry: dict[str, Any]) -> str:
    """How a warning names a header entry's score: ``NAME``, or ``NAME.KEY`` (as
    ``--scorer`` names a key of a dict score)."""
    score = _score_key(entry)
    if score is None:
        return repr(entry.get("name"))
    return score[0] if score[1] is None else f"{score[0]}.{score[1]}"


def _numeral(text: str) -> bool:
    """*text* is a number Inspect's ``value_to_float`` reads as one: digits with dots
    (``value.replace(".", "").isnumeric()``). Any other text it reads as 0, a failure, with a
    warning: ``" yes"``, ``"1e0"``, ``"+1"`` or ``" 1"`` read as 1 here (Python's ``float``
    takes them) passed samples Inspect's own metrics failed; they are refused as no verdict.
    Digits of other scripts, which Inspect reads, are refused too: none of its scorers
    writes them, and no file of ours holds them as numbers."""
    digits = text.replace(".", "")
    return digits.isascii() and digits.isdigit()


GRADER = "grader"
"""The model role Inspect's model-graded scorers call their model under (``model_graded_qa``,
``model_graded_fact``: ``model_role="grader"``). A sample's ``model_usage`` is taken after
scoring, so it holds the grader's calls too; ``role_usage`` counts them apart."""


def _grader(where: str, sample: dict[str, Any]) -> dict[str, Any] | None:
    """The grader's usage in *sample* (``role_usage.grader``), if it has one."""
    roles = mapping(where, "role_usage", sample.get("role_usage"))
    return None if roles.get(GRADER) is None else mapping(where, "role_usage.grader", roles[GRADER])


def _cost(where: str, sample: dict[str, Any]) -> float | None:
    """The sample's cost: the ``total_cost`` of each model it used (Inspect's ``ModelUsage``,
    in dollars), less its grader's (not the system's). Not known (``None``, never 0) when the
    log gives no ``model_usage`` or a model it used (or the grader) has no price (older logs, a
    model without prices), nor when it is empty (``{}``: no model's usage was counted, as
    Inspect writes by default and our export writes for a run whose usage is not known; its
    tokens are not known either): a sum over the priced models only would understate it."""
    usage = sample.get("model_usage")
    prices = [
        None if price is None else amount(where, f"model_usage.{model}.total_cost", price)
        for model, used in mapping(where, "model_usage", usage).items()
        for price in [used.get("total_cost") if isinstance(used, dict) else None]
    ]
    if not prices or None in prices:
        return None
    total = sum(price for price in prices if price is not None)
    grader = _grader(where, sample)
    if grader is None:
        return total
    price = grader.get("total_cost")
    if price is None:
        return None
    return max(0.0, total - amount(where, "role_usage.grader.total_cost", price))


def _tokens(where: str, sample: dict[str, Any]) -> Tokens | None:
    """Input and output tokens over the models the sample used (``ModelUsage``), less its
    grader's; ``None`` when the log counts none, and either ``None`` when a model's usage
    leaves it out. Input tokens include cached ones, as our own adapters count them: Inspect's
    ``input_tokens`` leaves out cache reads and writes for some providers (Anthropic's) and not
    for others (OpenAI's), so they are ``total_tokens`` less the output, or without a total the
    input plus the cache counts (a cache count left out: none read or written)."""
    counted = [
        (f"model_usage.{model}", used)
        for model, used in mapping(where, "model_usage", sample.get("model_usage")).items()
        if isinstance(used, dict)
    ]
    if not counted:
        return None
    pairs = [_model_tokens(where, name, used) for name, used in counted]
    grader = _grader(where, sample)
    graded = (0, 0) if grader is None else _model_tokens(where, "role_usage.grader", grader)
    return _less(total(p[0] for p in pairs), graded[0]), _less(
        total(p[1] for p in pairs), graded[1]
    )


def _less(used: int | None, graded: int | None) -> int | None:
    return None if used is None or graded is None else max(0, used - graded)


def _model_tokens(where: str, name: str, used: dict[str, Any]) -> Tokens:
    output = count(where, f"{name}.output_tokens", used.get("output_tokens"))
    whole = count(where, f"{name}.total_tokens", used.get("total_tokens"))
    given = count(where, f"{name}.input_tokens", used.get("input_tokens"))  # checked either way
    if output is not None and whole is not None and whole >= output and whole > 0:
        return whole - output, output
    cached = [
        count(where, f"{name}.{key}", used.get(key)) or 0
        for key in ("input_tokens_cache_read", "input_tokens_cache_write")
    ]
    return total([given, *cached]), output


@dataclass(frozen=True, slots=True)
class Scoring:
    """Where a sample's scoring began in its events."""

    index: int
    """The position of the event that began it in ``events``."""
    working_start: Any
    """The sample's working time when it began, as the event gives it."""
    raised: bool
    """The sample's error was raised after it began: no ``error`` event came before it."""


SCORING_SPANS = ("scorers", "scorer")
"""The span types Inspect opens to score a sample: ``scorers`` around all of them (since May
2025), ``scorer`` around each (as the only one before); older logs mark each scorer with a
``step`` event of type ``scorer``. A solver that scores (``inspect_ai.scorer.score``) opens
none."""


def _scoring(sample: dict[str, Any]) -> Scoring | None:
    """Where *sample*'s scoring began, if its log kept its events and it was scored. Inspect
    scores a sample only when its solvers ended without an error, or (``--score-on-error``)
    after recording their error as an ``error`` event: an error with none before scoring
    began was raised by a scorer (or by scoring's time limit)."""
    events = sample.get("events")
    if not isinstance(events, list | Iterator):  # a chunked sample's: read as needed
        return None
    errored = False
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            continue
        kind = event.get("event")
        errored |= kind == "error"
        if (kind == "span_begin" and event.get("type") in SCORING_SPANS) or (
            kind == "step" and event.get("action") == "begin" and event.get("type") == "scorer"
        ):
            return Scoring(index, event.get("working_start"), raised=not errored)
    return None


def _latency(where: str, sample: dict[str, Any], scoring: Scoring | None) -> float | None:
    """The agent's working time: the sample's working time when its scoring began (where its
    events say), else its ``working_time``, else its ``total_time``; not known without any.
    Inspect takes both times after scoring (a model-graded scorer's calls, a test suite run in
    the sandbox: the grader's time, not the system's), and its working time leaves out what
    the sample waited for (rate limits, connection slots), as ours leaves out queueing."""
    given = [("working_time", sample.get("working_time")), ("total_time", sample.get("total_time"))]
    if scoring is not None:
        given.insert(0, (f"events[{scoring.index}].working_start", scoring.working_start))
    times = [amount(where, field, value) for field, value in given if value is not None]
    return times[0] if times else None


ARCHIVE_ERRORS = (
    OSError, EOFError, zipfile.BadZipFile, zlib.error, lzma.LZMAError, ZstdError,
    NotImplementedError, RuntimeError,
)  # fmt: skip
"""What reading a damaged member raises: a bad CRC, a corrupt deflate, LZMA or Zstandard stream,
an unsupported compression method (``NotImplementedError``), an encrypted member
(``RuntimeError``); each is a damaged archive, not a traceback."""
MEMBER_LIMIT = 1 << 28
"""The largest archive member read (uncompressed bytes, as its header declares; zipfile stops
at the declared size, and a size understated fails its checksum). A sample's transcript is
megabytes; parsed, a member takes several times its size in memory, so 256 MiB (a few GB
parsed) is the most read, not the gigabyte (5 to 10 GB parsed) read before. A ``.json`` log's
sample is held to the same number of characters."""


def _member(path: Path, archive: zipfile.ZipFile, name: str) -> Any:
    info = archive.getinfo(name)
    if info.file_size > MEMBER_LIMIT:
        raise SpecError(
            f"{path}!{name}", None, f"{info.file_size} bytes uncompressed, over the "
            f"{MEMBER_LIMIT} read",
        )  # fmt: skip
    try:
        data = _zstandard(path, info) if info.compress_type == ZSTANDARD else archive.read(info)
    except ARCHIVE_ERRORS as exc:
        raise SpecError(f"{path}!{name}", None, f"cannot read from the archive: {exc}") from None
    return parse_json(data, f"{path}!{name}", at_line=False)


ZSTANDARD = 93
"""Zip's compression method number for Zstandard (APPNOTE 4.4.5)."""
LOCAL_HEADER = struct.Struct("<4s22xHH")
"""A zip member's local header: its signature, then (past the fields the central directory
repeats) the lengths of its name and extra field, which the compressed data follows."""


def _zstandard(path: Path, info: zipfile.ZipInfo) -> bytes:
    """A Zstandard member, read frame after frame: Inspect splits a member into frames of
    200 MiB of input each (its viewer's decoder overflows on larger ones), and ``zipfile``
    stops at the end of the first frame, so a multi-frame member failed its CRC-32. Read no
    further than its declared size, and checked against that size and its CRC-32 as
    ``zipfile`` checks every other member."""
    if info.flag_bits & 0x1:
        raise RuntimeError("the member is encrypted")
    with path.open("rb") as raw:
        raw.seek(info.header_offset)
        head = raw.read(LOCAL_HEADER.size)
        if len(head) < LOCAL_HEADER.size or head[:4] != b"PK\x03\x04":
            raise zipfile.BadZipFile("bad local file header")
        _, name_length, extra_length = LOCAL_HEADER.unpack(head)
        raw.seek(name_length + extra_length, 1)
        packed = raw.read(info.compress_size)
    if len(packed) < info.compress_size:
        raise EOFError("the archive ends inside the member")
    data = bytearray()
    while packed and len(data) <= info.file_size:
        frame = ZstdDecompressor()
        data += frame.decompress(packed, info.file_size + 1 - len(data))
        if not frame.eof and len(data) <= info.file_size:
            raise ZstdError("the last Zstandard frame is cut short")
        packed = frame.unused_data
    if len(data) < info.file_size:
        raise EOFError(f"{len(data)} bytes, not the {info.file_size} declared")
    data = data[: info.file_size]  # past the declared size: its checksum then fails
    if zlib.crc32(data) != info.CRC:
        raise zipfile.BadZipFile(f"Bad CRC-32 for file {info.filename!r}")
    return bytes(data)


def _retried_errors(where: str, value: Any) -> list[str]:
    """The messages of the errors Inspect retried before the sample's final try."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise SpecError(where, "error_retries", f"must be a list, got {type(value).__name__}")
    return [str(e.get("message") if isinstance(e, dict) else e) for e in value]
