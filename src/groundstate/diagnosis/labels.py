"""Label files: what annotators (and the adjudication) say about sampled runs.

A label file is the labelling sheet filled in: ``sheet.csv`` (column ``labels``, several
labels separated by ``;``) or ``sheet.jsonl`` (``"labels": [...]``), one row per run, with an
optional ``note``. A row whose labels are empty was not labelled: it is a missing rating, not
a claim that nothing went wrong. Every problem names ``file:line``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from groundstate.agreement import Agreement, MultiLabelAgreement, multilabel_agreement
from groundstate.diagnosis.taxonomy import (
    EVALUATOR_DEFECT,
    TAXONOMY_FILE,
    FailureTaxonomy,
    load_taxonomy,
)
from groundstate.errors import GroundstateError
from groundstate.records import AgentRun
from groundstate.store import RunLabels, RunStore


class LabelFileError(GroundstateError):
    """A label file is malformed: names the file, the line and the reason."""

    def __init__(self, path: Path, line: int | None, reason: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {reason}")


@dataclass(frozen=True)
class LabelRow:
    """One labelled run read from a file."""

    run_id: str
    labels: tuple[str, ...]
    note: str
    line: int


def read_label_file(path: Path, taxonomy: FailureTaxonomy) -> list[LabelRow]:
    """The labelled rows of a CSV or JSONL file, each validated against *taxonomy*."""
    path = Path(path)
    rows: list[LabelRow] = []
    seen: dict[str, int] = {}
    for line, raw in _raw_rows(path):
        row = _row(path, line, raw, taxonomy)
        if row.run_id in seen:
            raise LabelFileError(
                path, line, f"run {row.run_id} is labelled twice (first on line {seen[row.run_id]})"
            )
        seen[row.run_id] = line
        if row.labels:
            rows.append(row)
    if not rows:
        raise LabelFileError(path, None, "no row has labels: nothing to import")
    return rows


def _raw_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LabelFileError(path, None, f"cannot read it: {exc}") from None
    if path.suffix.lower() == ".csv":
        yield from _csv_rows(path, text)
    elif path.suffix.lower() in (".jsonl", ".json"):
        yield from _jsonl_rows(path, text)
    else:
        raise LabelFileError(path, None, "expected a .csv or .jsonl file")


def _csv_rows(path: Path, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    reader = csv.DictReader(text.splitlines())
    missing = {"run_id", "labels"} - set(reader.fieldnames or ())
    if missing:
        raise LabelFileError(path, 1, f"missing column(s): {', '.join(sorted(missing))}")
    for raw in reader:
        labels = [x.strip() for x in (raw.get("labels") or "").split(";") if x.strip()]
        yield reader.line_num, {**raw, "labels": labels}


def _jsonl_rows(path: Path, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    for line, content in enumerate(text.splitlines(), start=1):
        if not content.strip():
            continue
        try:
            raw = json.loads(content)
        except ValueError as exc:
            raise LabelFileError(path, line, f"not JSON: {exc}") from None
        if not isinstance(raw, dict):
            raise LabelFileError(path, line, "expected a JSON object per line")
        yield line, raw


def _row(path: Path, line: int, raw: Mapping[str, Any], taxonomy: FailureTaxonomy) -> LabelRow:
    run_id, labels, note = raw.get("run_id"), raw.get("labels"), raw.get("note") or ""
    if not isinstance(run_id, str) or not run_id.strip():
        raise LabelFileError(path, line, "run_id is missing")
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        raise LabelFileError(path, line, "labels must be a list of label ids")
    unknown = [x for x in labels if x not in taxonomy.ids]
    if unknown:
        raise LabelFileError(
            path,
            line,
            f"label {unknown[0]!r} is not in taxonomy {taxonomy.ref} "
            f"(known: {', '.join(taxonomy.ids)})",
        )
    if len(set(labels)) != len(labels):
        raise LabelFileError(path, line, "a label is given twice")
    if not isinstance(note, str):
        raise LabelFileError(path, line, "note must be text")
    return LabelRow(run_id.strip(), tuple(sorted(labels)), note, line)


def sheet_taxonomy(path: Path, override: Path | None = None) -> FailureTaxonomy:
    """*override* if given, else the ``taxonomy.yaml`` that ``sample-failures`` wrote beside
    the sheet: labels are validated against what the annotators were shown."""
    beside = Path(path).parent / TAXONOMY_FILE
    if override is None and not beside.is_file():
        raise GroundstateError(
            f"no {TAXONOMY_FILE} beside {path}: pass --taxonomy (sample-failures writes one "
            "into the sheet folder)"
        )
    return load_taxonomy(override or beside)


def import_labels(
    path: Path,
    store: RunStore,
    *,
    annotator: str,
    taxonomy: FailureTaxonomy,
    adjudicated: bool = False,
) -> list[RunLabels]:
    """Read, validate and store a label file in one transaction; nothing is stored from a
    file with any error. Returns what was stored."""
    rows = read_label_file(path, taxonomy)
    batches = store.batches_of_runs([row.run_id for row in rows])
    records = label_records(
        path, rows, batches, annotator=annotator, taxonomy=taxonomy, adjudicated=adjudicated
    )
    store.add_labels(records)
    return records


def adjudicated_defects(store: RunStore, batch_id: str) -> list[AgentRun]:
    """The runs of a batch whose adjudicated labels include ``evaluator_defect``."""
    defects = [
        store.run(x.run_id)
        for x in store.labels(batch_id, adjudicated=True)
        if EVALUATOR_DEFECT in x.labels
    ]
    if not defects:
        raise GroundstateError(f"no run of batch {batch_id} is adjudicated {EVALUATOR_DEFECT}")
    return defects


def label_records(
    path: Path,
    rows: list[LabelRow],
    batches: Mapping[str, str],
    *,
    annotator: str,
    taxonomy: FailureTaxonomy,
    adjudicated: bool = False,
) -> list[RunLabels]:
    """Store records for *rows*; *batches* maps every known run id to its batch."""
    if not annotator.strip():
        raise GroundstateError("--annotator must not be empty")
    now = datetime.now(UTC)
    records = []
    for row in rows:
        if row.run_id not in batches:
            raise LabelFileError(path, row.line, f"no run {row.run_id} in the store")
        records.append(
            RunLabels(
                batch_id=batches[row.run_id],
                run_id=row.run_id,
                annotator=annotator.strip(),
                adjudicated=adjudicated,
                taxonomy=taxonomy.ref,
                labels=list(row.labels),
                note=row.note,
                source=f"{path}:{row.line}",
                created_at=now,
            )
        )
    return records


def label_agreement(labelled: list[RunLabels], taxonomy: FailureTaxonomy) -> MultiLabelAgreement:
    """Agreement of the annotators' labels of one batch, per label and overall."""
    other = sorted({x.taxonomy for x in labelled} - {taxonomy.ref})
    if other:
        raise GroundstateError(
            f"labels were given under taxonomy {', '.join(other)}, not {taxonomy.ref}: "
            "agreement is only measured within one taxonomy version"
        )
    by_run: dict[str, dict[str, frozenset[str]]] = {}
    for entry in labelled:
        by_run.setdefault(entry.run_id, {})[entry.annotator] = frozenset(entry.labels)
    if len({a for sets in by_run.values() for a in sets}) < 2:
        raise GroundstateError(
            "agreement needs labels from at least two annotators; import another annotator's "
            "sheet with `groundstate labels import FILE --annotator ID`"
        )
    return multilabel_agreement(by_run, taxonomy.ids)


def against_adjudication(
    labelled: list[RunLabels], adjudicated: list[RunLabels], taxonomy: FailureTaxonomy
) -> dict[str, Agreement]:
    """Each annotator against the adjudicated labels, pooled over labels (present/absent), on
    the runs both labelled: how often an annotator's call survived adjudication."""
    final = {x.run_id: frozenset(x.labels) for x in adjudicated if x.taxonomy == taxonomy.ref}
    found: dict[str, Agreement] = {}
    for annotator in sorted({x.annotator for x in labelled}):
        pairs = {
            x.run_id: {"annotator": frozenset(x.labels), "adjudicated": final[x.run_id]}
            for x in labelled
            if x.annotator == annotator and x.run_id in final
        }
        if pairs:
            found[annotator] = multilabel_agreement(pairs, taxonomy.ids).overall
    return found
