"""The HTML report: one self-contained page per batch, and one per paired comparison.

A report is a single file that works offline and can be attached to a release decision:
inline CSS, inline SVG charts, one small inline script (it opens the run a link points to),
no fonts, scripts or images from elsewhere. This module turns records and statistics into
plain values for the templates in ``templates/``; the templates only lay them out.
Autoescaping is on for every template, because traces hold whatever text an agent wrote.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeGuard

import jinja2
from markupsafe import Markup
from pydantic import TypeAdapter, ValidationError

from groundstate.analysis import (
    headline_tries,
    invalid_task_results,
    judge_errors,
    missing_attempts,
    planned,
    planned_runs,
    provenance,
)
from groundstate.records import AgentRun, CheckResult
from groundstate.report.html_text import environment
from groundstate.report.numbers import (
    APART,
    NO_VALID_FIGURE,
    amount,
    counted_of,
    fixed,
    flagged_text,
    fraction,
    incomplete_text,
    interval,
    invalid_task_text,
    judge_error_text,
    outside_plan_text,
    p_value,
    served_texts,
    session_text,
    share,
    share_apart,
    signed,
    validation_text,
    weight,
)
from groundstate.rounding import counted
from groundstate.served import served_in_batch
from groundstate.stats import (
    EXACT_BOUND,
    VIEWS,
    Comparison,
    Difference,
    Estimate,
    SliceSummary,
    Summary,
    ViewSummary,
)
from groundstate.store import BatchInfo, Verification
from groundstate.trace import ToolCallEvent, TraceEvent

COMPACT_LIMIT = 100
"""JSON up to this many characters stays on one line."""
VIEW_TITLES = {"valid": "valid attempts only", "strict": "invalid attempts count as failures"}
MISSING = "\u2013"
"""Shown for a value that does not exist (an en dash)."""

_EVENT: TypeAdapter[TraceEvent] = TypeAdapter(TraceEvent)


@dataclass(frozen=True)
class Frame:
    """Geometry of one chart, in SVG user units."""

    width: int = 520
    height: int = 280
    left: int = 48
    right: int = 18
    top: int = 14
    bottom: int = 44

    @property
    def plot_width(self) -> int:
        return self.width - self.left - self.right

    @property
    def bottom_y(self) -> int:
        return self.height - self.bottom

    def y(self, value: float) -> float:
        """Probabilities run from the bottom (0) to the top (1) of the plot."""
        return round(self.top + (1 - value) * (self.bottom_y - self.top), 2)


FRAME = Frame()
DIFF_FRAME = Frame(width=240, height=40, left=14, right=14, top=4, bottom=16)


# --- public API ----------------------------------------------------------------------------


def render_batch(
    batch: BatchInfo,
    runs: list[AgentRun],
    summary: Summary,
    tries: Mapping[str, Any],
    integrity: Verification | None = None,
    served: list[dict[str, Any]] | None = None,
) -> str:
    """The report of one batch: header, curves, suite numbers, slices, reasons, tasks, runs;
    the models served, as ``report`` names them (:func:`groundstate.served.served_in_batch`).

    ``runs`` is every stored try (reruns of invalid tries included), ``summary`` the
    statistics over the final tries (:func:`groundstate.analysis.summarize_batch`) and
    ``tries`` the invalid-try counts over all of them (:func:`groundstate.analysis.tries`).
    ``integrity`` is the store's check of the batch (:meth:`groundstate.store.RunStore.verify`):
    when it did not verify, the page opens with an alert naming each problem and marks each
    altered run. ``served`` is what the command already read of the models served (the
    store's index for ``report``); without it the page reads them from ``runs``.
    """
    ordered = sorted(runs, key=lambda r: (r.task_id, r.attempt, r.retry))
    altered = _altered_runs(integrity)
    table = planned(batch, runs)[0]  # a try outside the plan is listed, marked, never counted
    missing = missing_attempts(batch, table.final())
    counted, apart = headline_tries(batch, table)
    if served is None:
        served = served_in_batch(run.infrastructure_status.get("models_served") for run in runs)
    another, spelled = served_texts(served)
    return _template("report.html.j2").render(
        another_model=another,
        spelled_model=spelled,
        invalid_tasks=invalid_task_text(invalid_task_results(batch, apart)),
        judged=judge_error_text(judge_errors(counted.final())),
        resumed=session_text(made := provenance(batch)),
        unproven=validation_text(made),
        batch=batch,
        summary=summary,
        header=_header(batch, summary, tries),
        missing=missing and incomplete_text(missing),
        outside=outside_plan_text(len(runs) - len(table)),
        views=_view_panels(summary),
        slices=_slice_rows(summary),
        reasons=_reason_rows(summary),
        invalid=_invalid_rows(summary, tries),
        tasks=_task_rows(batch, planned_runs(batch, ordered)),
        runs=[_run_view(run, altered.get(run.run_id, [])) for run in ordered],
        integrity=_integrity_view("this batch", integrity),
        altered_runs=altered,
        frame=FRAME,
        apart_mark=APART,
    )


def render_comparison(
    a: BatchInfo,
    b: BatchInfo,
    comparison: Comparison,
    integrity: Sequence[Verification | None] = (None, None),
) -> str:
    """The comparison b - a: per view, every metric's difference with its interval and
    test, the pass^k curves of both batches with their intervals, and the tested task
    changes. ``integrity`` holds the store's checks of a and b; a batch that did not verify
    is named, with its problems, in an alert at the top."""
    views = [
        {
            "view": view,
            "title": VIEW_TITLES[view],
            "rows": [(d, _difference_bar(d.difference)) for d in found],
            "chart": _pair_chart([d for d in found if d.metric == "pass_hat_k"]),
            "empty": None if found else NO_VALID_FIGURE,
        }
        for view in VIEWS
        for found in [[d for d in comparison.differences if d.view == view]]
    ]
    altered = [
        alert
        for name, check in zip(("a", "b"), integrity, strict=True)
        if (alert := _integrity_view(f"batch {name}", check))
    ]
    return _template("comparison.html.j2").render(
        a=a,
        b=b,
        comparison=comparison,
        views=views,
        altered=altered,
        frame=DIFF_FRAME,
        chart_frame=FRAME,
    )


def _pair_chart(curve: list[Difference]) -> dict[str, Any] | None:
    """pass^k against k for batch a and batch b, each with its interval band."""
    if not curve:
        return None
    kmax = max(d.k or 1 for d in curve)
    x = _x_scale(kmax)
    step = max(1, round(kmax / 10))
    return {
        "kmax": kmax,
        "series": [
            _series("a", "sys-a", {d.k or 1: d.a for d in curve}, x),
            _series("b", "sys-b", {d.k or 1: d.b for d in curve}, x),
        ],
        "x_ticks": [(x(k), k) for k in range(1, kmax + 1) if (k - 1) % step == 0 or k == kmax],
        "y_ticks": [(FRAME.y(v), f"{v:.2f}") for v in (0.0, 0.25, 0.5, 0.75, 1.0)],
    }


# --- integrity -------------------------------------------------------------------------------


def _integrity_view(subject: str, check: Verification | None) -> dict[str, Any] | None:
    """What the alert of a batch that did not verify shows; ``None`` when it verified (or was
    not checked). Every problem is listed, notes on unverifiable old rows included, as in
    ``report --json``. A batch that verified but whose seal was damaged (checked in full
    instead: the numbers are right) gets a note, as the text and JSON reports give it a
    warning."""
    if check is None or (check.ok and not any(p.kind == "seal_damaged" for p in check.problems)):
        return None
    return {
        "subject": subject,
        "batch_id": check.batch_id,
        "altered": not check.ok,
        "problems": [p.line() for p in check.problems],
    }


def _altered_runs(check: Verification | None) -> dict[str, list[str]]:
    """Each altered run's problems, by run id."""
    found: dict[str, list[str]] = {}
    for problem in check.altered if check else []:
        if problem.run_id:
            found.setdefault(problem.run_id, []).append(problem.detail)
    return found


# --- templates -------------------------------------------------------------------------------


@cache
def _environment() -> jinja2.Environment:
    env = environment(  # autoescape, bidirectional controls closed: see report.html_text
        loader=jinja2.PackageLoader("groundstate.report", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        counted=counted,
        counted_of=_counted_of,
        num=_num,
        est=_est,
        ci=_ci,
        p=_p,
        signed=signed,
        amount=_amount,
        seconds=_seconds,
        pct=_pct,
        pretty=_pretty,
        cell=_cell,
        short=_short,
    )
    env.globals.update(verdict=_verdict, run_label=_run_label)
    return env


def _template(name: str) -> jinja2.Template:
    return _environment().get_template(name)


def _counted_of(part: SliceSummary) -> str:
    return counted_of(part.n_tasks, len(part.excluded_tasks))


def _num(value: float | None, digits: int = 3) -> str:
    return MISSING if value is None else fixed(value, digits)


def _amount(value: float | None, digits: int = 4) -> str:
    """A cost (four decimals) or latency, as the terminal report prints it."""
    return MISSING if value is None else amount(value, digits)


def _seconds(value: float | None) -> str:
    """A latency per attempt, as the terminal report prints it."""
    return MISSING if value is None else f"{amount(value, 3)}s"


def _p(value: float | None, alpha: float) -> str:
    return MISSING if value is None else p_value(value, alpha)


def _ci(estimate: Estimate, difference: bool = False) -> str:
    """The interval as the terminal prints it (:func:`interval`), marked when it is an exact
    bound; the caller shows "n/a" where there is none."""
    text = interval(estimate.ci_low or 0.0, estimate.ci_high or 0.0, difference=difference)
    return text + (" bound" if estimate.method == EXACT_BOUND else "")


def _est(value: float | None) -> str:
    return MISSING if value is None else fraction(value)


def _pct(value: float | None) -> str:
    return MISSING if value is None else share(value)


def _pretty(value: Any) -> str:
    """Strings as written (newlines kept), anything else as JSON: on one line when it is
    short, indented otherwise (cut past :data:`TEXT_LIMIT`, as every value printed is)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > COMPACT_LIMIT and not isinstance(value, str):
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return text


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _short(value: str | None, length: int = 12) -> str:
    return value[:length] if value else "none"


def _verdict(run: AgentRun) -> str:
    """CSS class of a run: ``success``, ``failure`` (scored) or ``invalid`` (not scored)."""
    if not run.valid:
        return "invalid"
    return "success" if run.success else "failure"


def _run_label(run: AgentRun) -> str:
    return f"#{run.attempt}" + (f" retry {run.retry}" if run.retry else "")


# --- batch sections ---------------------------------------------------------------------------


def _view_panels(summary: Summary) -> list[dict[str, Any]]:
    return [
        {"view": view, "title": VIEW_TITLES.get(name, name), "chart": _chart(view)}
        for name, view in summary.views.items()
    ]


def _header(batch: BatchInfo, summary: Summary, tries: Mapping[str, Any]) -> dict[str, Any]:
    total = int(tries.get("tries", summary.attempts))
    invalid = int(tries.get("invalid_tries", summary.invalid.count))
    share = invalid / total if total else 0.0
    threshold = float(tries.get("max_invalid_rate", 0.1))
    return {
        "shape": _shape(batch, summary),
        # An import has no plan: its attempts per task are those it brought (1 to 3, not 3).
        "per_task": batch.attempts if batch.source == "groundstate" else _per_task(summary) or 0,
        # Flagged for exceeding the threshold: printed apart from it (10.04%, not 10.0%).
        "flagged_share": share_apart(share, threshold),
        "tries": total,
        "invalid_tries": invalid,
        "invalid_share": share,
        "alert": bool(tries.get("flagged", False)),
        # worded as the terminal report and compare's notes word it (report.numbers)
        "flagged_text": flagged_text(tries) if tries.get("flagged") else "",
        "threshold": threshold,
        "cost": tries.get("cost"),
        "cost_unknown": int(tries.get("cost_unknown", 0)),
        "reruns": total > summary.attempts,
    }


def _shape(batch: BatchInfo, summary: Summary) -> str:
    """Tasks by attempts as counted: "3 tasks \u00d7 3 attempts" only when every task has that
    many counted attempts (an imported batch with 2 or 3 per task, or an interrupted one,
    has not 9: it says how many it counted, and the range per task)."""
    spread = _per_task(summary)
    if spread is None:
        return f"{counted(summary.n_tasks, 'task')} \u00b7 no counted attempt"
    if spread == str(batch.attempts):
        return f"{counted(summary.n_tasks, 'task')} \u00d7 {counted(batch.attempts, 'attempt')}"
    return (
        f"{counted(summary.n_tasks, 'task')} \u00b7 {counted(summary.attempts, 'attempt')} "
        f"counted ({spread} per task)"
    )


def _per_task(summary: Summary) -> str | None:
    """Counted attempts per task: "3", or "1 to 3" when tasks differ (None: none counted)."""
    strict = summary.views.get("strict")
    rate = strict.success_rate if strict is not None else None
    if rate is None:
        return None
    return str(rate.min_n) if rate.min_n == rate.max_n else f"{rate.min_n} to {rate.max_n}"


def _chart(view: ViewSummary) -> dict[str, Any]:
    """pass@k and pass^k against k with their interval bands, as in the reference figure."""
    ks = list(range(1, view.kmax + 1))
    x = _x_scale(view.kmax)
    step = max(1, round(view.kmax / 10))
    return {
        "kmax": view.kmax,
        "series": [
            _series("pass@k", "at", view.pass_at_k, x),
            _series("pass^k", "hat", view.pass_hat_k, x),
        ],
        "x_ticks": [(x(k), k) for k in ks if (k - 1) % step == 0 or k == view.kmax],
        "y_ticks": [(FRAME.y(v), f"{v:.2f}") for v in (0.0, 0.25, 0.5, 0.75, 1.0)],
    }


def _x_scale(kmax: int) -> Callable[[int], float]:
    if kmax <= 1:
        return lambda k: FRAME.left + FRAME.plot_width / 2
    return lambda k: round(FRAME.left + (k - 1) / (kmax - 1) * FRAME.plot_width, 2)


def _series(
    name: str, css: str, values: Mapping[int, Estimate], x: Callable[[int], float]
) -> dict[str, Any]:
    """A line with its interval band; where the rule gives no interval the band closes on
    the line and no whisker is drawn."""
    ks = sorted(values)
    points = [
        {"k": k, "x": x(k), "y": FRAME.y(values[k].estimate), "estimate": values[k],
         "low_y": _y_or_none(values[k].ci_low), "high_y": _y_or_none(values[k].ci_high)}
        for k in ks
    ]  # fmt: skip
    upper = [f"{p['x']},{p['y'] if p['high_y'] is None else p['high_y']}" for p in points]
    lower = [f"{p['x']},{p['y'] if p['low_y'] is None else p['low_y']}" for p in reversed(points)]
    # Numbers only, made here: Markup, so no value's bound cuts a curve of 1,000 points.
    return {
        "name": name,
        "css": css,
        "points": points,
        "line": Markup(" ".join(f"{p['x']},{p['y']}" for p in points)),
        "band": Markup(" ".join(upper + lower)),
    }


def _y_or_none(value: float | None) -> float | None:
    return None if value is None else FRAME.y(value)


def _slice_rows(summary: Summary) -> list[dict[str, Any]]:
    """One row per slice, each view's value side by side (every view counts the same tasks,
    so they share slice keys)."""
    views = list(summary.views.values())
    return [
        {"kind": kind, "key": key, "cells": [getattr(v, attribute).get(key) for v in views]}
        for kind, attribute in (("label", "by_label"), ("horizon", "by_horizon"))
        for key in (getattr(views[0], attribute) if views else {})
    ]


def _reason_rows(summary: Summary) -> list[tuple[str, int, float]]:
    total = summary.attempts or 1
    return [(reason, n, n / total) for reason, n in summary.terminal_reasons.items()]


def _invalid_rows(summary: Summary, tries: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Invalid rates by reason, over final attempts and over every try (reruns included)."""
    try_rates: Mapping[str, float] = tries.get("invalid_rate_by_reason", {})
    reasons = sorted(set(summary.invalid.by_reason) | set(try_rates))
    return [
        {
            "reason": reason,
            "count": summary.invalid.by_reason.get(reason, 0),
            "rate": summary.invalid.rate_by_reason.get(reason, 0.0),
            "try_rate": try_rates.get(reason, 0.0),
        }
        for reason in reasons
    ]


def _task_rows(batch: BatchInfo, runs: list[AgentRun]) -> list[dict[str, Any]]:
    by_task: dict[str, list[AgentRun]] = {}
    for run in runs:
        by_task.setdefault(run.task_id, []).append(run)
    task_ids = sorted(set(batch.task_revisions) | set(by_task))
    return [_task_row(batch, task_id, by_task.get(task_id, [])) for task_id in task_ids]


def _task_row(batch: BatchInfo, task_id: str, runs: list[AgentRun]) -> dict[str, Any]:
    valid = [r for r in runs if r.valid]
    return {
        "task_id": task_id,
        # 0 is how an unversioned import stores its tasks: no revision, as the JSON's null
        "revision": batch.task_revisions.get(task_id) or None,
        "slices": batch.task_slices.get(task_id, []),
        "horizon": batch.task_horizons.get(task_id),
        "weight": weight(batch.task_weights.get(task_id, 1.0)),
        "apart": task_id in batch.invalid_tasks,
        "successes": sum(r.success for r in valid),
        "valid": len(valid),
        "invalid": len(runs) - len(valid),
        "reasons": sorted(Counter(r.terminal_reason for r in runs).items()),
        "runs": runs,
    }


# --- one run ---------------------------------------------------------------------------------


def _run_view(run: AgentRun, altered: list[str]) -> dict[str, Any]:
    """One run's section; *altered* lists what the store found wrong with its record."""
    outcomes = [_check_view(c) for c in run.outcome_assertion_results]
    constraints = [_check_view(c) for c in run.constraint_results]
    checks = outcomes + constraints
    diff = _recorded_diff(run.outcome_assertion_results)
    return {
        "run": run,
        "events": run.observation_action_log,
        "calls": sum(isinstance(e, ToolCallEvent) for e in run.observation_action_log),
        "changed_tables": _changed_tables(run.observation_action_log, diff),
        "diff": None if diff is None else _diff_view(diff),
        "outcomes": outcomes,
        "constraints": constraints,
        "checks_passed": sum(c["check"].passed for c in checks),
        "checks": len(checks),
        "exception": run.infrastructure_status.get("exception"),
        "altered": altered,
    }


def _recorded_diff(results: Iterable[CheckResult]) -> dict[str, Any] | None:
    """The state diff as a state_diff assertion recorded it, if the task has one."""
    for result in results:
        diff = result.evidence.get("diff")
        if result.kind == "state_diff" and isinstance(diff, dict):
            return diff
    return None


def _changed_tables(events: Iterable[TraceEvent], diff: Mapping[str, Any] | None) -> list[str]:
    tables = {t for e in events if isinstance(e, ToolCallEvent) for t in e.changed_tables}
    return sorted(tables | set((diff or {}).get("tables", {})))


def _diff_view(diff: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "added": _row_table(table.get("added", [])),
            "removed": _row_table(table.get("removed", [])),
            "changed": [_row_change(c) for c in table.get("changed", [])],
        }
        for name, table in sorted(diff.get("tables", {}).items())
    ]


def _row_table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    columns = list(dict.fromkeys(column for row in rows for column in row))
    return {"columns": columns, "rows": [[row.get(c) for c in columns] for row in rows]}


def _row_change(change: Mapping[str, Any]) -> dict[str, Any]:
    before, after = change.get("before", {}), change.get("after", {})
    columns = [c for c in dict.fromkeys([*before, *after]) if before.get(c) != after.get(c)]
    return {"key": change.get("key"), "cells": [(c, before.get(c), after.get(c)) for c in columns]}


def _check_view(check: CheckResult) -> dict[str, Any]:
    """Split evidence into the parts a reader looks for first; the rest is shown as JSON."""
    other = dict(check.evidence)
    other.pop("diff", None)  # shown once, as the run's state diff
    view: dict[str, Any] = {"check": check, "problems": other.pop("problems", None)}
    view["offending"] = _offending(other)
    view["tables"] = _rows_and_expected(other)
    view["other"] = other
    return view


def _rows_and_expected(evidence: dict[str, Any]) -> dict[str, Any] | None:
    """An SQL assertion's rows beside the expected rows, each row marked if the other lacks it."""
    rows, expected = evidence.get("rows"), evidence.get("expected")
    if not (_is_table(rows) and _is_table(expected)):
        return None
    del evidence["rows"], evidence["expected"]
    return {
        "rows": [(row, row in expected) for row in rows],
        "expected": [(row, row in rows) for row in expected],
    }


def _is_table(value: Any) -> TypeGuard[list[list[Any]]]:
    return isinstance(value, list) and all(isinstance(row, list) for row in value)


def _offending(evidence: dict[str, Any]) -> TraceEvent | None:
    if "offending_step" not in evidence:
        return None
    try:
        event = _EVENT.validate_python(evidence["offending_step"])
    except ValidationError:
        return None  # an unfamiliar shape stays in the generic evidence
    del evidence["offending_step"]
    return event


# --- comparison --------------------------------------------------------------------------------


def _difference_bar(difference: Estimate) -> dict[str, float | None]:
    """Positions of a difference and its interval (None when there is none) on a -1 .. 1 axis."""

    def x(value: float) -> float:
        clipped = min(1.0, max(-1.0, value))
        return round(DIFF_FRAME.left + (clipped + 1) / 2 * DIFF_FRAME.plot_width, 2)

    has = difference.ci_low is not None and difference.ci_high is not None
    return {
        "zero": x(0.0),
        "low": x(difference.ci_low) if has and difference.ci_low is not None else None,
        "high": x(difference.ci_high) if has and difference.ci_high is not None else None,
        "mid": x(difference.estimate),
    }
