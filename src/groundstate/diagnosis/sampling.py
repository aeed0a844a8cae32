"""Sampling failed runs for independent adjudication, and the labelling sheet they go into.

Only valid failed attempts are sampled (the counted try of each attempt, ``success`` false,
terminal reason neither ``environment_failure`` nor ``grader_failure``): invalid attempts are
harness problems with their own evidence, not failures of the agent to diagnose.

The sample is stratified by terminal reason and slice (the task's slice labels together), so
rare kinds of failure are seen: every stratum gets one run when the sample has room for all of
them, and the rest is shared in proportion to stratum size. With fewer places than strata,
the largest strata get one each. Everything is drawn from a seeded generator: the same batch,
``n`` and seed give the same sheet.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import yaml
from pydantic import BaseModel, Field

from groundstate.analysis import counted_runs
from groundstate.diagnosis.taxonomy import TAXONOMY_FILE, FailureTaxonomy
from groundstate.errors import GroundstateError
from groundstate.paths import make_folder
from groundstate.records import AgentRun
from groundstate.report.html_text import environment
from groundstate.rounding import counted, inflected
from groundstate.spec.files import YamlDumper
from groundstate.store import BatchInfo

SHEET_FIELDS = (
    "run_id",
    "batch_id",
    "task_id",
    "attempt",
    "terminal_reason",
    "slices",
    "failed_checks",
    "labels",
    "note",
)
"""Columns of ``sheet.csv``; annotators fill ``labels`` (separated by ``;``) and ``note``."""

SHOWN_ONLY = ("task_id", "terminal_reason", "slices", "failed_checks")
"""Columns of ``sheet.csv`` that annotators read and ``labels import`` ignores: text from the
run (a task id, a slice label) that a spreadsheet would run as a formula is defused there."""
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What makes a spreadsheet treat a cell as a formula (OWASP's CSV injection list)."""


class SheetRow(BaseModel):
    """One sampled run in the labelling sheet."""

    run_id: str
    batch_id: str
    task_id: str
    attempt: int
    terminal_reason: str
    slices: list[str]
    stratum: str
    failed_checks: list[str]
    """Ids of the outcome assertions and constraints the run failed."""
    labels: list[str] = Field(default_factory=list)
    """Left empty for the annotator."""
    note: str = ""


def failed_runs(batch: BatchInfo, runs: Sequence[AgentRun]) -> list[AgentRun]:
    """The valid failed attempts of *batch* (the try each figure counts of each:
    :func:`~groundstate.analysis.counted_runs`), ordered by task and attempt."""
    return [r for r in counted_runs(batch, runs) if r.valid and not r.success]


Stratum = tuple[str, tuple[str, ...]]
"""A run's terminal reason and its task's sorted slice labels."""
S = TypeVar("S")


def stratum_of(batch: BatchInfo, run: AgentRun) -> Stratum:
    """The stratum a run is drawn from. A tuple, not the text :func:`stratum` shows: slice
    labels may hold ``,`` or be ``-``, and two strata must never be drawn as one."""
    return run.terminal_reason, tuple(sorted(batch.task_slices.get(run.task_id, [])))


def stratum(batch: BatchInfo, run: AgentRun) -> str:
    """``terminal_reason | slice labels`` of a run (``-`` for a task without slices)."""
    reason, slices = stratum_of(batch, run)
    return f"{reason} | {','.join(slices) or '-'}"


def allocate(sizes: dict[S, int], n: int, order: Sequence[S]) -> dict[S, int]:
    """Places per stratum: one each if they fit, the rest by largest proportional deficit.

    *order* breaks ties (a seeded shuffle of the strata). Never more than a stratum holds.
    """
    total = sum(sizes.values())
    n = min(n, total)
    ranked = sorted(order, key=lambda s: -sizes[s])  # stable: ties keep the seeded order
    places = {s: 0 for s in sizes}
    for s in ranked[:n]:
        places[s] = 1
    for _ in range(n - sum(places.values())):
        open_strata = [s for s in ranked if places[s] < sizes[s]]
        best = max(open_strata, key=lambda s: sizes[s] * n / total - places[s])
        places[best] += 1
    return places


def sample_failures(
    batch: BatchInfo, runs: Sequence[AgentRun], n: int, seed: int
) -> list[AgentRun]:
    """Draw up to *n* valid failed runs, stratified by terminal reason and slice."""
    if n < 1:
        raise GroundstateError(f"--n must be at least 1, got {n}")
    if seed < 0:  # numpy's generators take no negative seed
        raise GroundstateError(f"--seed must be 0 or more, got {seed}")
    groups: dict[Stratum, list[AgentRun]] = {}
    for run in failed_runs(batch, runs):
        groups.setdefault(stratum_of(batch, run), []).append(run)
    if not groups:
        tries = counted_runs(batch, runs)
        passed = sum(r.valid for r in tries)  # none valid failed: each valid one succeeded
        raise GroundstateError(
            f"nothing to sample: batch {batch.batch_id} has no valid failed runs to sample (of "
            f"its {counted(len(tries), 'counted attempt')}, {passed} succeeded and "
            f"{len(tries) - passed} {inflected(len(tries) - passed, 'is', 'are')} invalid)"
        )
    rng = np.random.default_rng(seed)
    keys = sorted(groups)
    order = [keys[i] for i in rng.permutation(len(keys))]
    places = allocate({k: len(v) for k, v in groups.items()}, n, order)
    chosen: list[AgentRun] = []
    for key in keys:
        picks = rng.choice(len(groups[key]), size=places[key], replace=False)
        chosen += [groups[key][i] for i in sorted(picks)]
    return sorted(chosen, key=lambda r: (r.task_id, r.attempt))


def sheet_rows(batch: BatchInfo, sample: Sequence[AgentRun]) -> list[SheetRow]:
    return [
        SheetRow(
            run_id=run.run_id,
            batch_id=run.batch_id,
            task_id=run.task_id,
            attempt=run.attempt,
            terminal_reason=run.terminal_reason,
            slices=sorted(batch.task_slices.get(run.task_id, [])),
            stratum=stratum(batch, run),
            failed_checks=[
                c.id
                for c in [*run.outcome_assertion_results, *run.constraint_results]
                if not c.passed
            ],
        )
        for run in sample
    ]


# --- writing the sheet ------------------------------------------------------------------------


def write_sheet(
    out: Path, batch: BatchInfo, sample: Sequence[AgentRun], taxonomy: FailureTaxonomy
) -> list[Path]:
    """Write ``sheet.csv``, ``sheet.jsonl``, ``sheet.html`` and the taxonomy into *out*.

    Refuses to write over an existing sheet (annotators may already be filling it in) or
    taxonomy file (``--out`` a suite folder would rewrite the suite's own).
    """
    out = Path(out)
    paths = [out / "sheet.csv", out / "sheet.jsonl", out / "sheet.html", out / TAXONOMY_FILE]
    existing = [p for p in paths if p.exists()]
    if existing:
        raise GroundstateError(f"{existing[0]} exists: choose another --out folder")
    rows = sheet_rows(batch, sample)
    try:
        make_folder(out)
        _write_csv(paths[0], rows)
        paths[1].write_text("".join(r.model_dump_json() + "\n" for r in rows), "utf-8")
        paths[2].write_text(render_sheet(batch, sample, rows, taxonomy), "utf-8")
        taxonomy_yaml = yaml.dump(
            taxonomy.model_dump(mode="json"), Dumper=YamlDumper, sort_keys=False
        )
        paths[3].write_text(taxonomy_yaml, "utf-8")
    except OSError as exc:
        raise GroundstateError(f"cannot write the sheet into {out}: {exc.strerror}") from None
    return paths


def _write_csv(path: Path, rows: list[SheetRow]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=SHEET_FIELDS)
        writer.writeheader()
        for row in rows:
            data = row.model_dump()
            data["slices"] = ";".join(row.slices)
            data["failed_checks"] = ";".join(row.failed_checks)
            data["labels"] = ""
            for key in SHOWN_ONLY:
                data[key] = defused(str(data[key]))
            writer.writerow({k: data[k] for k in SHEET_FIELDS})


def defused(text: str) -> str:
    """*text* with a leading apostrophe when a spreadsheet would evaluate it as a formula
    (``sheet.jsonl`` keeps the text as it is)."""
    return "'" + text if text.startswith(FORMULA_START) else text


def render_sheet(
    batch: BatchInfo,
    sample: Sequence[AgentRun],
    rows: Sequence[SheetRow],
    taxonomy: FailureTaxonomy,
) -> str:
    """The labelling page: the taxonomy, then each run's trajectory and grader evidence.

    Every value from a run is escaped (autoescape: agent text can hold markup) and its
    bidirectional controls closed (:mod:`groundstate.report.html_text`).
    """
    template = environment().from_string(
        files("groundstate.diagnosis").joinpath("sheet.html.j2").read_text("utf-8")
    )
    return template.render(
        batch=batch,
        taxonomy=taxonomy,
        runs=[_run_view(run, row) for run, row in zip(sample, rows, strict=True)],
    )


def _run_view(run: AgentRun, row: SheetRow) -> dict[str, Any]:
    return {
        "row": row,
        "checks": [
            {
                "id": c.id,
                "kind": c.kind,
                "passed": c.passed,
                "error": c.error,
                "evidence": _pretty(c.evidence),
            }
            for c in [*run.outcome_assertion_results, *run.constraint_results]
        ],
        "events": [_event_view(e.model_dump(mode="json")) for e in run.observation_action_log],
        "final_message": run.final_message,
    }


def _event_view(event: dict[str, Any]) -> dict[str, Any]:
    kind = event.get("kind", "event")
    if kind == "message":
        return {"step": event["step"], "kind": f"{event['role']} says", "body": event["text"]}
    if kind == "tool_call":
        outcome = "ok" if event["ok"] else f"error ({event.get('error_class')})"
        body = f"{event['tool']}({_pretty(event['args'])}) -> {outcome}\n" + _pretty(
            event["output"] if event["ok"] else event["error"]
        )
        return {"step": event["step"], "kind": "tool call", "body": body}
    return {"step": event.get("step"), "kind": kind, "body": _pretty(event)}


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)
