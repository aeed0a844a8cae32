"""Results from other harnesses, stored as batches that report and compare like any other.

Formats (``--format``, or detected from the file):

- ``csv`` / ``jsonl``: our row format, one attempt per row (:mod:`.table`);
- ``tau-bench``: τ-bench (v1) results, a JSON list of ``{task_id, reward, info, traj, trial}``;
- ``tau2-bench``: τ²-bench results, ``{info, tasks, simulations: [...]}``;
- ``inspect``: Inspect AI logs, ``.eval`` archives or ``.json`` logs;
- ``swe-bench``: SWE-bench reports: a run's (``resolved_ids``, ``unresolved_ids``, ...), a 1.x
  model report (``no_generation``, ``generated``, ``applied``, ``resolved`` ...), instances'
  ``report.json``;
- ``harbor``: Harbor trial ``result.json`` files, or a job directory of them;
- ``terminal-bench``: Terminal-Bench runs' ``results.json`` (``results``: one entry per trial);
- ``appworld``: AppWorld evaluations (``aggregate``, ``individual``).

An imported batch has no traces or states: statistics and comparisons apply to it, state
checks do not. How each format's verdicts and ends map onto our terminal reasons, and what is
lost, is in ``docs/interop.md``.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from groundstate.errors import SpecError
from groundstate.importers.appworld import AppWorldSource, aggregate_only
from groundstate.importers.batch import ImportReport, store_import
from groundstate.importers.compressed import DAMAGED, damaged, name_suffix, open_bytes
from groundstate.importers.harbor import JOB_KEYS, TRIAL_KEYS, HarborSource
from groundstate.importers.inspect_log import InspectSource
from groundstate.importers.rows import (
    TERMINAL_PREFIXES,
    UTF16_MARKS,
    ErrorPolicy,
    ImportedRow,
    ResultSource,
    not_utf8,
    nul_reason,
    read_json,
)
from groundstate.importers.stream import RECORD_LIMIT, JsonStream, TooLarge, json_stream
from groundstate.importers.swebench import (
    INSTANCE_KEYS,
    SweBenchSource,
    logs_folder,
    swe_bench_report,
    terminal_bench,
)
from groundstate.importers.table import COLUMNS, LINE_LIMIT, TableSource, header_delimiter
from groundstate.importers.tau import Tau2Source, TauSource
from groundstate.importers.terminalbench import TerminalBenchSource, is_trial
from groundstate.spec.files import optional_file, regular_file
from groundstate.store import BatchInfo, RunStore

Format = Literal[
    "csv", "jsonl", "tau-bench", "tau2-bench", "inspect", "swe-bench", "harbor",
    "terminal-bench", "appworld",
]  # fmt: skip
FORMATS: tuple[Format, ...] = (
    "csv", "jsonl", "tau-bench", "tau2-bench", "inspect", "swe-bench", "harbor",
    "terminal-bench", "appworld",
)  # fmt: skip


class ImportOptions(BaseModel):
    """How to read a results file."""

    format: Format | None = None
    """``None``: detect it from the file."""
    errors: ErrorPolicy = "agent"
    """Attempts that ended in an unattributed exception: ``agent`` counts them against the
    system (``agent_failure/crashed``), ``environment`` makes them invalid."""
    scorer: str | None = None
    """Inspect logs: the score that decides each sample's verdict; Harbor: the reward key
    (required when several)."""


def open_source(path: Path, options: ImportOptions | None = None) -> ResultSource:
    """The reader for *path* in its given or detected format. *path* is checked first, before
    any byte of it is read: a file that is not a regular one (a named pipe, waited on for ever
    in any format; a socket; a link to nowhere, named with its target), or an empty one, is
    refused here, the one place every import passes."""
    options = options or ImportOptions()
    if not path.is_dir():
        regular_file(path)
    _refuse_empty(path)
    kind = options.format or detect_format(path)
    _options_read(path, kind, options)
    if kind in ("csv", "jsonl"):
        return TableSource(path, kind)
    if kind == "tau-bench":
        return TauSource(path, options.errors)
    if kind == "tau2-bench":
        return Tau2Source(path)
    if kind == "swe-bench":
        return SweBenchSource(path, options.errors)
    if kind == "harbor":
        return HarborSource(path, options.errors, options.scorer)
    if kind == "terminal-bench":
        return TerminalBenchSource(path, options.errors)
    if kind == "appworld":
        return AppWorldSource(path)
    return InspectSource(path, options.errors, options.scorer)


SCORED: tuple[Format, ...] = ("inspect", "harbor")
"""The formats whose files may grade an attempt several ways, one chosen by ``--scorer``."""
UNATTRIBUTED: tuple[Format, ...] = ("tau-bench", "inspect", "swe-bench", "harbor", "terminal-bench")
"""The formats that record exceptions without saying whose they are, which ``--errors``
decides; the others say how every attempt ended (a row's terminal reason, τ²'s ends)."""


def _options_read(path: Path, kind: Format, options: ImportOptions) -> None:
    """An option *kind*'s reader never reads is refused: ignored, ``--errors environment`` or a
    ``--scorer`` would be a policy the batch says it followed and did not."""
    if options.scorer is not None and kind not in SCORED:
        raise SpecError(
            path, "--scorer", f"read for Inspect logs and Harbor results only; a {kind} file "
            "grades each attempt one way: leave it out",
        )  # fmt: skip
    if options.errors == "environment" and kind not in UNATTRIBUTED:
        raise SpecError(
            path, "--errors", f"read for τ-bench, Inspect, SWE-bench, Harbor and Terminal-Bench "
            "results only; "
            f"a {kind} file says how every attempt ended: leave it out",
        )  # fmt: skip


def detect_format(path: Path) -> Format:
    """The format of *path*: by suffix for row files and archives, else by its first bytes
    (``[``: τ-bench; an object with ``simulations``: τ²-bench; with ``eval`` and ``samples``:
    an Inspect log; with ``resolved_ids`` and ``unresolved_ids``, or 1.x's ``no_generation``,
    ``generated``, ``applied`` and ``resolved``, or ``{instance_id: {resolved, ...}}``: a
    SWE-bench report; with
    ``trial_name`` and ``task_name``, or ``n_total_trials`` and ``stats``: a Harbor result;
    with ``results`` listed beside ``resolved_ids`` and ``unresolved_ids``: Terminal-Bench
    results; with ``aggregate`` and ``individual``: an AppWorld evaluation; one object per
    line: JSON Lines). A folder holding a Harbor ``result.json`` is a Harbor job (or trial); one
    of instance folders with a ``report.json`` or ``run_instance.log``, a SWE-bench model's
    logs."""
    named = _named_format(path)
    if named is not None:
        return named
    if path.is_dir() and (folder := _folder_format(path)) is not None:
        return folder
    if path.is_dir() and (jobs := [p for p in sorted(path.iterdir()) if _harbor_folder(p)]):
        raise SpecError(path, None, f"a folder of Harbor jobs: give one job's folder ({jobs[0]})")
    if path.is_dir() and (models := [p for p in sorted(path.iterdir()) if logs_folder(p)]):
        raise SpecError(
            path, None, f"a SWE-bench run's logs, a folder per model: give one ({models[0]})"
        )
    if path.is_dir():  # τ²'s "dir" format is a folder: its index is the file to give
        inside = " (give its results.json)" if (path / "results.json").is_file() else ""
        raise SpecError(path, None, f"a folder, not a results file{inside}")
    regular_file(path)  # missing, a link to nowhere, a named pipe: said as what it is
    if zipfile.is_zipfile(path):
        return "inspect"
    return _sniff(path)


def _named_format(path: Path) -> Format | None:
    """The format *path*'s suffix names, if any."""
    suffix = name_suffix(path)  # rows.csv.gz: a CSV
    if suffix in (".csv", ".tsv", ".tab"):  # the reader tells the separator from the header
        return "csv"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".eval":  # even a truncated archive, so its error names what it is
        return "inspect"
    return None


def _sniff(path: Path) -> Format:
    try:
        head = _head(path, line=False)
        if head.startswith(b"{"):
            with contextlib.suppress(SpecError):  # a broken document: named further on
                streamed = _streamed_format(path)  # before a long first line is read whole
                if streamed is not None:
                    return streamed
            head = _head(path)
    except DAMAGED as exc:
        raise SpecError(path, None, damaged(path, exc)) from None
    if head.startswith(b"PK"):  # a zip archive is_zipfile could not read: a damaged .eval
        return "inspect"
    if head.startswith(b"["):
        _refuse_foreign(path, _first_element(path))
        return "tau-bench"
    first = _BREAK.split(head, 1)[0]
    if not head.startswith(b"{"):
        if header_delimiter(
            first.decode("utf-8", "replace")
        ):  # a row file's header, whatever the file is named
            return "csv"
        raise SpecError(
            path, None, "cannot tell its format: give --format (" + ", ".join(FORMATS) + ")"
        )
    try:
        row = json.loads(first)
    except (ValueError, RecursionError):
        row = None  # a JSON document over several lines: look inside it
    if isinstance(row, dict) and not {"simulations", "simulation_index", "samples"} & set(row):
        found = _object_format(row)
        if found is not None and (
            found == "terminal-bench" or not isinstance(row.get("task_id"), str | int)
        ):
            return found  # a report on one line, not a row of ours (Harbor's task_id: an object)
        _refuse_foreign(path, row)
        return "jsonl"
    return _document_format(path)


def _head(path: Path, *, line: bool = True) -> bytes:
    """The first 64 KiB of *path* (decompressed), without a byte-order mark or leading white
    space, and (with *line*) the rest of its first line when it starts an object."""
    with open_bytes(path) as handle:
        head = handle.read(1 << 16)
        if head.startswith(UTF16_MARKS):
            raise SpecError(path, None, not_utf8(path))
        nul = None if head.startswith(b"PK") else nul_reason(head[:64].decode("latin-1"))
        if nul is not None:  # a zip archive (an Inspect .eval) holds NULs; text does not
            raise SpecError(path, None, nul)
        head = head.removeprefix(b"\xef\xbb\xbf").lstrip()
        if line and head.startswith(b"{") and not _BREAK.search(head):  # a line past the head
            head += _first_line(handle)
    return head


_BREAK = re.compile(rb"\r\n|\r|\n")
"""A line break: JSON Lines and CSV files come with any of the three (old Mac tools write
``\r`` alone); none can sit inside a JSON string unescaped."""


def _first_line(handle: io.BufferedIOBase) -> bytes:
    """The rest of the first line, whichever break ends it (``readline`` knows ``\n`` only:
    a file broken by ``\r`` alone would be read whole)."""
    line = bytearray()
    while len(line) <= LINE_LIMIT and (chunk := handle.read(1 << 16)):
        line += chunk
        if _BREAK.search(chunk):
            break
    return bytes(line)


def _document_format(path: Path) -> Format:
    streamed = _streamed_format(path)
    if streamed is not None:
        return streamed
    data = read_json(path)
    found = _object_format(data)
    if found is not None:
        return found
    _refuse_foreign(path, data)
    raise SpecError(
        path, None, "cannot tell its format: give --format (" + ", ".join(FORMATS) + ")"
    )


def _streamed_format(path: Path) -> Format | None:
    """The format of a document read by its reader value by value (an Inspect ``.json`` log,
    a τ² results file, Terminal-Bench results, an AppWorld evaluation, a Harbor result), told
    from its top-level keys as they come, without reading the samples, simulations, trials,
    tasks or rollouts that make it large (read whole, a log of a gigabyte took several GB of
    memory here before its reader read it again)."""
    keys: set[str] = set()
    trials = False
    task: Any = None
    with json_stream(path, RECORD_LIMIT) as stream:
        if stream.peek() != "{":
            return None
        for key in stream.members():
            keys.add(key)
            if key in ("simulations", "simulation_index"):
                return "tau2-bench"  # the monolithic form, or the "dir" form's results.json
            if {"eval", "samples"} <= keys:
                return "inspect"
            trials |= key == "results"  # not a list: its reader says so (SWE-bench has none)
            if key == "task_id" and stream.peek() not in ("{", "["):
                task = stream.value(key)  # a row of ours names its task so (Harbor: an object)
                continue
            try:
                if len(keys) > 1 or stream.peek() != "{":
                    stream.skip(key)
                elif _instance_report(stream, key):  # read past, whatever it is
                    return "swe-bench"  # {instance_id: report.json's verdict, ...}
            except TooLarge:  # a value no record of theirs holds: read whole, as before
                return None
    if trials and keys >= SWE_BENCH_KEYS:  # as terminal_bench() tells it from the whole
        return "terminal-bench"
    if keys >= APPWORLD_KEYS and _object_format(dict.fromkeys(keys)) == "appworld":
        return "appworld"  # told by its keys alone, as from the whole
    if _object_format(dict.fromkeys(keys)) == "harbor" and not isinstance(task, str | int):
        return "harbor"  # by its keys alone, as from the whole (or a first line: _sniff)
    return None


def _instance_report(stream: JsonStream, key: str) -> bool:
    """The object that comes next (the document's first value, at *key*) is an instance's
    ``report.json`` entry, as :func:`swebench.instance_reports` tells it: its keys are read,
    its values (a report's ``tests_status``: every test's name) read past."""
    inner: set[str] = set()
    for name in stream.members(key):
        inner.add(name)
        stream.skip(f"{key}.{name}")
    return len(inner & INSTANCE_KEYS) >= 2


SWE_BENCH_KEYS = frozenset({"resolved_ids", "unresolved_ids"})
"""What marks a SWE-bench run report (``make_run_report``'s lists)."""
APPWORLD_KEYS = frozenset({"aggregate", "individual"})
"""What marks an AppWorld evaluation (``Metric.compute_metrics``)."""
OBJECT_FORMATS: tuple[tuple[frozenset[str], Format], ...] = (
    (SWE_BENCH_KEYS, "swe-bench"),
    (TRIAL_KEYS, "harbor"),
    (JOB_KEYS, "harbor"),
    (APPWORLD_KEYS, "appworld"),
)
"""The keys that mark a JSON object of each format read as one document."""


def _object_format(data: Any) -> Format | None:
    if not isinstance(data, dict):
        return None
    if terminal_bench(data) or is_trial(data):  # before SWE-bench, whose lists it has too
        return "terminal-bench"
    for keys, kind in OBJECT_FORMATS:
        if set(data) >= keys:
            return kind
    if aggregate_only(data):  # AppWorld's figures without tasks: its reader says what lacks
        return "appworld"
    if swe_bench_report(data):  # 1.x's nested lists, or {instance_id: report.json's verdict}
        return "swe-bench"
    return None


def _harbor_folder(path: Path) -> bool:
    """*path* holds a Harbor job's (or trial's) ``result.json``."""
    inside = path / "result.json"
    if not path.is_dir() or not inside.is_file():
        return False
    try:
        with inside.open("rb") as handle:
            head = handle.read(1 << 16)
    except OSError:
        return False
    return any(f'"{key}"'.encode() in head for key in ("n_total_trials", "trial_name"))


FOREIGN = (
    ({"instance_id", "model_patch"}, "SWE-bench predictions (patches, not results)"),
    (
        {"resolved", "no_generation", "no_logs"},
        "a SWE-bench/experiments results.json (it names the resolved instances only: the "
        "unresolved are the dataset's others, which it does not list)",
    ),
)
"""Keys that mark other harnesses' files this reader has no format for."""


class ForeignFormat(SpecError):
    """A file of a harness no reader here knows."""

    def __init__(self, path: Path, what: str) -> None:
        self.what = f"{what}, which import-results does not read"
        convert = "convert it to the row format (CSV or JSON Lines: task_id, attempt, success)"
        super().__init__(path, None, f"looks like {self.what}: {convert}")


def _refuse_foreign(path: Path, data: Any) -> None:
    """A file of a harness no reader here knows is named for what it is: "give --format" would
    send its user to formats none of which fits."""
    if not isinstance(data, dict) or "task_id" in data:  # a row of ours, whatever else
        return
    inner = [v for v in data.values() if isinstance(v, dict)][:1]  # {instance_id: report}
    for keys, what in FOREIGN:
        if any(keys <= set(part) for part in (data, *inner)):
            raise ForeignFormat(path, what)


def _first_element(path: Path) -> Any:
    """The first element of the JSON list *path* holds (``None`` when it has none, or is
    broken: its reader names that): a list of another harness's records (SWE-bench
    predictions, as a list) is named for what it is, not refused by the τ-bench reader for
    the first field it misses."""
    with contextlib.suppress(SpecError), json_stream(path, RECORD_LIMIT) as stream:
        for element in stream.elements():
            return element
    return None


def import_file(
    path: Path, name: str, store: RunStore | Path, options: ImportOptions | None = None
) -> ImportReport:
    """Store every attempt of *path* as one batch named *name* (all or nothing). *store* may
    be a store's folder: it is opened (made, if need be) only once *path* is found to be a
    file to read, so a refused file leaves no store behind."""
    options = options or ImportOptions()
    try:
        source = open_source(path, options)  # checks path before a byte of it is read
        if isinstance(store, RunStore):
            return store_import(source, name, store)
        with RunStore(store) as opened:
            return store_import(source, name, opened)
    except SpecError as exc:
        named = None if options.format else _named_format(path)
        looks = _looks_like(path, options.format or named)
        if looks is None and options.format is None and named is None:
            unknown = _unknown_object(path)
            if unknown is not None:
                reason = f"{exc.reason} ({unknown})"
                raise SpecError(exc.path, exc.field, reason, line=exc.line) from None
        if looks is None:
            raise
        used = f"--format {options.format}" if options.format else f"{named} as its name says"
        what = "folder" if path.is_dir() else "file"
        hint = f"{exc.reason} (the {what} looks like {looks}, not {used})"
        raise SpecError(exc.path, exc.field, hint, line=exc.line) from None


def _refuse_empty(path: Path) -> None:
    """An empty file (or white space, a byte-order mark, compressed nothing) is named so, under
    any format: "cannot tell its format" or "no result rows" would send the user looking for
    a format or rows that are not there."""
    if not path.is_file():
        return
    unread: tuple[type[BaseException], ...] = (SpecError, *DAMAGED)
    try:  # streamed: a minified document on one line is not read whole
        with open_bytes(path) as handle:
            chunk = handle.read(1 << 16).removeprefix(b"\xef\xbb\xbf")
            while chunk and not chunk.strip():
                chunk = handle.read(1 << 16)
    except unread:  # what the reader will name itself
        return
    if not chunk:
        raise SpecError(
            path, None, "the file is empty (nothing but white space): nothing to import"
        )


LOOKS = {
    "csv": "rows of a CSV (a header naming task_id): give --format csv",
    "jsonl": "JSON Lines rows: give --format jsonl",
    "tau-bench": "τ-bench results (a JSON list): give --format tau-bench",
    "tau2-bench": "τ²-bench results (an object with simulations): give --format tau2-bench",
    "inspect": "an Inspect AI log: give --format inspect",
    "swe-bench": "a SWE-bench report: give --format swe-bench",
    "harbor": "a Harbor result or job: give --format harbor",
    "terminal-bench": "Terminal-Bench results: give --format terminal-bench",
    "appworld": "an AppWorld evaluation: give --format appworld",
}
"""What a file that another reader refused looks like, by its content."""


def _looks_like(path: Path, given: Format | None) -> str | None:
    """When *path* was refused under the *given* format and its content says it is another
    format, what it looks like (the reader's own error alone, "no result rows" from a JSON
    list read as CSV, would not say that the format was wrong). Content only: a suffix may lie."""
    if given is None or not (path.is_file() or path.is_dir()):  # a named pipe: not read
        return None
    try:
        found: Format | None
        if path.is_dir():
            found = _folder_format(path)
        else:
            found = "inspect" if zipfile.is_zipfile(path) else _sniff(path)
    except ForeignFormat as exc:
        return exc.what
    except (SpecError, OSError):
        return None
    if found == "jsonl" and not _names_a_task(path):
        return None  # one object on one line that is no row of ours: not a format to suggest
    return LOOKS[found] if found is not None and found != given else None


def _unknown_object(path: Path) -> str | None:
    """Why a file detected as JSON Lines may be none: its first line is an object of keys no
    format here has and without a ``task_id`` (another harness's result, a config file), read
    as rows of ours for want of another, whose error alone ("task_id: required") would not
    say so. ``None``: not such a file."""
    unread: tuple[type[BaseException], ...] = (
        ValueError, RecursionError, SpecError, OSError, *DAMAGED
    )  # fmt: skip
    try:
        jsonl = path.is_file() and detect_format(path) == "jsonl"
        first = json.loads(_BREAK.split(_head(path), 1)[0]) if jsonl else None
    except unread:
        return None
    if not isinstance(first, dict) or "task_id" in first:
        return None
    keys = ", ".join(map(repr, list(first)[:5])) + (", ..." if len(first) > 5 else "")
    return (
        f"read as JSON Lines rows of ours, one object a line, for want of a format it matches: "
        f"its first object ({keys or 'no keys'}) is of no results format known here; if it is "
        "one, give --format (" + ", ".join(FORMATS) + ")"
    )


def _names_a_task(path: Path) -> bool:
    """The first line of *path* is an object with a ``task_id`` of its own, as every row of
    ours is (a results document written on one line is not a row because it is one line)."""
    unread: tuple[type[BaseException], ...] = (ValueError, RecursionError, SpecError, *DAMAGED)
    try:
        first = json.loads(_BREAK.split(_head(path), 1)[0])
    except unread:
        return False
    return isinstance(first, dict) and "task_id" in first


def _folder_format(path: Path) -> Format | None:
    """The format of the folder *path*, if it is one a reader takes (a Harbor job, a SWE-bench
    model's logs). A ``result.json`` in it that is no regular file (a link to nowhere) is
    refused, naming it: read as absent, the job's folder was "a folder of Harbor jobs". So is
    one beside Harbor trials' folders that does not read as a job's (cut short, emptied):
    "a folder of Harbor jobs" named a trial's folder, not the file at fault."""
    if optional_file(path / "result.json") and _harbor_folder(path):
        return "harbor"
    if (path / "result.json").is_file() and any(_harbor_folder(p) for p in path.iterdir()):
        return "harbor"  # a job whose own result.json is cut or damaged: its reader names it
    return "swe-bench" if logs_folder(path) else None


def import_results(path: Path, name: str, store: RunStore) -> BatchInfo:
    """Store the rows of *path* as a batch named *name*; returns the batch."""
    return import_file(path, name, store).batch


def read_rows(path: Path, options: ImportOptions | None = None) -> list[ImportedRow]:
    """Every row of *path*, checked (for small files and tests; imports stream instead)."""
    rows = list(open_source(path, options).rows())
    if not rows:
        raise SpecError(path, None, "no result rows")
    return rows


__all__ = [
    "COLUMNS",
    "FORMATS",
    "TERMINAL_PREFIXES",
    "Format",
    "ImportOptions",
    "ImportReport",
    "ImportedRow",
    "detect_format",
    "import_file",
    "import_results",
    "open_source",
    "read_rows",
]
