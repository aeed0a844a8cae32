"""Label files: what annotators (and the adjudication) say about sampled runs.

A label file is the labelling sheet filled in: ``sheet.csv`` (column ``labels``, several
labels separated by ``;``) or ``sheet.jsonl`` (``"labels": [...]``), one row per run, with an
optional ``note``. A row whose labels are empty was not labelled: it is a missing rating, not
a claim that nothing went wrong. Every problem names ``file:line``.

Sheets come back from spreadsheets: a byte-order mark, UTF-16, CRLF, ``;`` or tab as the
delimiter, header names in another case, trailing rows of empty cells and notes over several
lines are read as meant. What would silently put a label on the wrong run is refused: more
cells than the header has columns (an unquoted ``a,b``), a column named twice, a row whose
``task_id``, ``attempt`` or ``terminal_reason`` is not its run's (rows scrambled, or another
store), runs of several batches in one file, and labels for a run that succeeded.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from groundstate.agreement import Agreement, MultiLabelAgreement, multilabel_agreement
from groundstate.diagnosis.sampling import defused
from groundstate.diagnosis.taxonomy import (
    EVALUATOR_DEFECT,
    TAXONOMY_FILE,
    FailureTaxonomy,
    load_taxonomy,
)
from groundstate.errors import GroundstateError
from groundstate.paths import os_reason
from groundstate.records import AgentRun
from groundstate.rounding import inflected
from groundstate.store import RunKey, RunLabels, RunStore

LABEL_SEPARATOR = re.compile(r"[;,\s]+")
"""Between labels in a ``labels`` cell: label ids are identifiers, so ``;``, ``,`` and spaces
cannot be part of one."""
SHOWN = ("task_id", "attempt", "terminal_reason")
"""Sheet columns checked against the run a row names, when the file has them: a mismatch is
a row moved apart from its run id, or a store that changed since the sheet was made."""
DELIMITERS = (",", ";", "\t")
"""CSV delimiters tried on the header (spreadsheets in many locales write ``;``)."""


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
    shown: Mapping[str, str] = field(default_factory=dict)
    """The row's ``task_id``, ``attempt`` and ``terminal_reason`` cells as given (when not
    blank)."""


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
    text = _text(path)
    if path.suffix.lower() in (".csv", ".tsv", ".txt"):  # .txt: a spreadsheet's "text"
        yield from _csv_rows(path, text)
    elif path.suffix.lower() in (".jsonl", ".json"):
        yield from _jsonl_rows(path, text)
    elif path.suffix.lower() in (".xlsx", ".xls", ".ods"):
        raise LabelFileError(path, None, "a spreadsheet workbook: save the sheet as CSV UTF-8")
    else:
        raise LabelFileError(path, None, "expected a .csv (or .tsv, .txt) or .jsonl file")


def _text(path: Path) -> str:
    """The file's text: UTF-8 (a byte-order mark skipped), or UTF-16 with its mark (what a
    spreadsheet's "Unicode text" writes)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LabelFileError(path, None, f"cannot read it: {os_reason(path, exc)}") from None
    utf16 = data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    try:
        return data.decode("utf-16" if utf16 else "utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LabelFileError(
            path, None, f"not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start}): "
            "save it as UTF-8 (a spreadsheet's \"CSV UTF-8\")"
        ) from None  # fmt: skip


def _csv_rows(path: Path, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    # newline="": a quoted note keeps its line breaks (and U+2028), and line numbers count
    # the file's lines, not the pieces str.splitlines would make.
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(text), strict=True)
    try:
        header = [name.strip().lower() for name in next(reader, [])]
        _check_header(path, header)
        for cells in reader:
            if len(cells) > len(header):
                raise LabelFileError(
                    path, reader.line_num, f"{len(cells)} cells, but the header has "
                    f"{len(header)} columns (labels with ',' between them must be quoted)"
                )  # fmt: skip
            if any(cell.strip() for cell in cells):  # a spreadsheet's trailing empty rows
                raw = dict(zip(header, cells, strict=False))  # a short row: the rest is blank
                yield reader.line_num, {**raw, "labels": _split(raw.get("labels") or "")}
    except csv.Error as exc:
        raise LabelFileError(path, reader.line_num, f"not valid CSV: {exc}") from None


def _delimiter(text: str) -> str:
    """The delimiter whose split of the first line names both ``run_id`` and ``labels``."""
    first = re.split(r"\r\n|\r|\n", text, maxsplit=1)[0]
    for delimiter in DELIMITERS:
        names = {name.strip().lower() for name in first.split(delimiter)}
        if {"run_id", "labels"} <= {name.strip('"') for name in names}:
            return delimiter
    return ","


def _check_header(path: Path, header: list[str]) -> None:
    missing = {"run_id", "labels"} - set(header)
    if missing:
        names = ", ".join(sorted(missing))
        raise LabelFileError(path, 1, f"missing {inflected(len(missing), 'column')}: {names}")
    twice = sorted({name for name in header if name and header.count(name) > 1})
    if twice:  # which of the two cells would count? neither, silently
        raise LabelFileError(path, 1, f"column {twice[0]!r} appears twice in the header")


def _split(cell: str) -> list[str]:
    return [label for label in LABEL_SEPARATOR.split(cell) if label]


def _jsonl_rows(path: Path, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    if text.lstrip().startswith("["):  # a tool's "save as JSON": one array, not one per line
        raise LabelFileError(
            path, None, "a JSON array: labels are read as JSON Lines, one object per line "
            "(`jq -c '.[]' FILE` converts it)"
        )  # fmt: skip
    # "\n" only: U+2028 and other breaks str.splitlines knows may sit inside a JSON string
    for line, content in enumerate(text.split("\n"), start=1):
        if not content.strip():
            continue
        try:
            raw = json.loads(content, object_pairs_hook=_once)
        except ValueError as exc:
            raise LabelFileError(path, line, f"not JSON: {exc}") from None
        except RecursionError:
            raise LabelFileError(path, line, "not JSON: nested too deeply") from None
        if not isinstance(raw, dict):
            raise LabelFileError(path, line, "expected a JSON object per line")
        yield line, {**raw, "labels": [] if raw.get("labels") is None else raw["labels"]}


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different (of two ``labels``, which would count?)."""
    keys = [key for key, _ in pairs]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise ValueError(f"key {twice[0]!r} appears twice in the object")
    return dict(pairs)


def _row(path: Path, line: int, raw: Mapping[str, Any], taxonomy: FailureTaxonomy) -> LabelRow:
    run_id, labels, note = raw.get("run_id"), raw.get("labels"), raw.get("note") or ""
    if not isinstance(run_id, str) or not run_id.strip():
        raise LabelFileError(path, line, "run_id is missing (or not text)")
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        raise LabelFileError(path, line, "labels must be a list of label ids")
    # ids are lower-case identifiers: "Planning " (a spreadsheet's capital) can only mean one
    labels = [x.strip().lower() for x in labels if x.strip()]
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
    shown = {k: str(raw[k]) for k in SHOWN if raw.get(k) is not None and str(raw[k]).strip()}
    return LabelRow(run_id.strip(), tuple(sorted(labels)), note, line, shown)


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
    from groundstate.analysis import not_counted

    rows = read_label_file(path, taxonomy)
    with store.snapshot():
        runs = store.run_keys([row.run_id for row in rows])
        records = label_records(
            path, rows, runs, annotator=annotator, taxonomy=taxonomy, adjudicated=adjudicated
        )
        batch = store.batch(records[0].batch_id)
        left_out = not_counted(batch, store.runs(batch.batch_id))
    for row in rows:  # a label no agreement or sample counts: not a run the sheet drew
        if row.run_id in left_out:
            raise LabelFileError(
                path, row.line, f"run {row.run_id} is not counted ({left_out[row.run_id]}): "
                "labels are for the runs every figure counts (`groundstate runs` marks them)"
            )  # fmt: skip
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
    runs: Mapping[str, RunKey],
    *,
    annotator: str,
    taxonomy: FailureTaxonomy,
    adjudicated: bool = False,
) -> list[RunLabels]:
    """Store records for *rows*; *runs* holds every stored run the rows may name."""
    if not annotator.strip():
        raise GroundstateError("--annotator (or --adjudicator) must not be empty")
    first: tuple[str, int] | None = None  # the file's batch, and the line that set it
    for row in rows:
        run = _labelled_run(path, row, runs)
        first = first or (run.batch_id, row.line)
        if run.batch_id != first[0]:
            raise LabelFileError(
                path, row.line, f"run {row.run_id} is of batch {run.batch_id}, the run on "
                f"line {first[1]} of batch {first[0]}: a sheet labels the runs of one batch"
            )  # fmt: skip
    now = datetime.now(UTC)
    return [
        RunLabels(
            batch_id=runs[row.run_id].batch_id,
            run_id=row.run_id,
            annotator=annotator.strip(),
            adjudicated=adjudicated,
            taxonomy=taxonomy.ref,
            labels=list(row.labels),
            note=row.note,
            source=f"{path}:{row.line}",
            created_at=now,
        )
        for row in rows
    ]


def _labelled_run(path: Path, row: LabelRow, runs: Mapping[str, RunKey]) -> RunKey:
    """The stored run a row names, if the row may label it."""
    run = runs.get(row.run_id)
    if run is None:
        raise LabelFileError(path, row.line, f"no run {row.run_id} in the store")
    if run.success:
        raise LabelFileError(
            path, row.line, f"run {row.run_id} succeeded: failure labels are for failed runs"
        )
    actual = {
        "task_id": run.task_id,
        "attempt": str(run.attempt),
        "terminal_reason": run.terminal_reason,
    }
    for column, given in row.shown.items():
        if not _same_cell(given, actual[column]):
            raise LabelFileError(
                path, row.line, f"{column} {given!r} is not run {row.run_id}'s "
                f"({actual[column]!r}): were the rows reordered apart from their run ids, or "
                "is this another store than the sheet's?"
            )  # fmt: skip
    return run


def _same_cell(given: str, actual: str) -> bool:
    """A sheet cell names *actual*: as written, defused (a leading ``'``), or as a number a
    spreadsheet rewrote (``007`` saved as ``7``)."""
    if given.strip() in (actual.strip(), defused(actual).strip()):
        return True
    try:
        return float(given) == float(actual)
    except ValueError:
        return False


def label_agreement(labelled: list[RunLabels], taxonomy: FailureTaxonomy) -> MultiLabelAgreement:
    """Agreement of the annotators' labels of one batch, per label and overall."""
    _check_taxonomy(labelled, taxonomy)
    by_run: dict[str, dict[str, frozenset[str]]] = {}
    for entry in labelled:
        by_run.setdefault(entry.run_id, {})[entry.annotator] = frozenset(entry.labels)
    if len({a for sets in by_run.values() for a in sets}) < 2:
        raise GroundstateError(
            "agreement needs labels from at least two annotators; import another annotator's "
            "sheet with `groundstate labels import FILE --annotator ID`"
        )
    return multilabel_agreement(by_run, taxonomy.ids)


def _check_taxonomy(labelled: list[RunLabels], taxonomy: FailureTaxonomy) -> None:
    """Refuse to measure labels against a taxonomy they were not given under: another
    version, or the same version edited since (a label it no longer has)."""
    other = sorted({x.taxonomy for x in labelled} - {taxonomy.ref})
    unknown = sorted({label for x in labelled for label in x.labels} - set(taxonomy.ids))
    if not other and not unknown:
        return
    sheets = sorted({str(Path(x.source.rpartition(":")[0]).parent / TAXONOMY_FILE)
                     for x in labelled if x.source})  # fmt: skip
    hint = f" (sample-failures wrote it beside the sheet: {', '.join(sheets)})" if sheets else ""
    if other:
        found = f"labels were given under taxonomy {', '.join(other)}, not {taxonomy.ref}"
    else:
        found = (
            f"stored {inflected(len(unknown), 'label')} {', '.join(unknown)}"
            f" {inflected(len(unknown), 'is', 'are')} not in taxonomy {taxonomy.ref} as given"
            " here: the taxonomy was edited without a new version"
        )
    raise GroundstateError(
        f"{found}: agreement is only measured within one taxonomy version; pass --taxonomy "
        f"with the one the labels were given under{hint}"
    )


def against_adjudication(
    labelled: list[RunLabels], adjudicated: list[RunLabels], taxonomy: FailureTaxonomy
) -> dict[str, Agreement]:
    """Each annotator against the adjudicated labels, pooled over labels (present/absent), on
    the runs both labelled: how often an annotator's call survived adjudication."""
    same = [x for x in adjudicated if x.taxonomy == taxonomy.ref]  # others are not pooled
    _check_taxonomy(same, taxonomy)
    final = {x.run_id: frozenset(x.labels) for x in same}
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
