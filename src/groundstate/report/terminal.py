"""Terminal rendering of batches and runs (rich)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from groundstate.environments.base import RowWrite
from groundstate.errors import one_line, printable
from groundstate.records import AgentRun, CheckResult
from groundstate.report.numbers import (
    APART,
    LINE_LIMIT,
    NO_VALID_FIGURE,
    amount,
    clipped,
    counted_of,
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
    signed,
    validation_text,
)
from groundstate.rounding import counted
from groundstate.store import BatchInfo
from groundstate.trace import MessageEvent, ModelCallEvent


def shown(text: str, limit: int = LINE_LIMIT) -> str:
    """A value from a run or a file on one line: cut (:func:`clipped`), then :func:`one_line`.
    Every value the terminal reports print goes through it or :func:`indented`."""
    return one_line(clipped(text, limit))


def quoted(text: str, limit: int = LINE_LIMIT) -> str:
    """A one-line value inside rich markup: :func:`shown`, then its brackets escaped."""
    return escape(shown(text, limit))


def indented(text: str, prefix: str = "  ") -> str:
    """Multi-line *text*, cut (:func:`clipped`) and escaped by :func:`printable`, each line
    under *prefix*."""
    return "\n".join(prefix + line for line in printable(clipped(text)).split("\n"))


def batch_table(batch: BatchInfo, runs: list[AgentRun]) -> RenderableType:
    """The per-task table, laid out for the width it is printed at (see :class:`Fitted`):
    of the tries in the batch's plan (:func:`~groundstate.analysis.planned`)."""
    from groundstate.analysis import planned_runs

    # Grouped once: scanning every run for every task was quadratic (minutes at 20,000 tasks).
    by_task: dict[str, list[AgentRun]] = {}
    for run in planned_runs(batch, runs):
        by_task.setdefault(run.task_id, []).append(run)
    rows = [
        _task_row(batch, task_id, by_task.get(task_id, []))
        for task_id in sorted(batch.task_revisions)
    ]
    title = quoted(
        f"batch {batch.batch_id} · suite {batch.suite} · "
        f"system {batch.system_spec_hash[:12]}{_where(batch)}"
    )
    # Under the table, not its caption: a caption wraps to the (compact) table's width.
    caption = Text("\n".join(map(shown, decision_lines(batch.decision, batch.population))))
    return Fitted(lambda width: Group(_batch_table(title, rows, width), caption))


_Row = tuple[str, str, str, str, list[str]]
"""A task's id, slices, successes / valid, invalid, and one line per terminal reason."""


def _task_row(batch: BatchInfo, task_id: str, task_runs: list[AgentRun]) -> _Row:
    valid = [r for r in task_runs if r.valid]
    reasons = Counter(r.terminal_reason for r in task_runs)
    # listed, but counted in no figure: marked, as the JSON keeps it apart
    mark = f" ({APART})" if task_id in batch.invalid_tasks else ""
    return (
        shown(task_id) + mark,
        shown(", ".join(batch.task_slices.get(task_id, []))),
        f"{sum(r.success for r in valid)} / {len(valid)}",
        str(len(task_runs) - len(valid)),
        [shown(f"{reason} x{n}") for reason, n in sorted(reasons.items())],
    )


_GAP = 2
"""Columns between two columns of the compact table."""
_SLICES_MIN = 8


def _batch_table(title: str, rows: list[_Row], width: int) -> Table:
    """The task id and each terminal reason on one line whenever they fit the width: the
    slices column folds first and is left out (the slices table has them) before either of
    them would fold. Nothing is ever cut off: a column that cannot fit folds."""
    task = max([len("task"), *(len(r[0]) for r in rows)])
    reason = max([len("terminal reasons"), *(len(line) for r in rows for line in r[4])])
    counts = max(len("ok /"), *(len(r[2]) for r in rows)) + len("valid") + 3 * _GAP
    fits = task + reason + counts <= width
    with_slices = task + reason + counts + _SLICES_MIN + _GAP <= width
    table = Table(
        title=title,
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        show_edge=False,
    )
    table.add_column("task", no_wrap=fits, overflow="fold", min_width=task if fits else None)
    if with_slices:
        table.add_column("slices", overflow="fold")
    table.add_column("ok /\nvalid", no_wrap=True)  # successes / valid attempts
    table.add_column("invalid\ntries", no_wrap=True)  # reruns included, as the HTML table
    table.add_column(  # of every try, as the invalid tries beside it (the reason table: counted)
        "every try's\nterminal reasons",
        no_wrap=fits,
        overflow="fold",
        min_width=reason if fits else None,
    )
    for task_id, slices, ratio, invalid, reasons in rows:
        cells: list[RenderableType] = [Text(task_id)]
        cells += [Text(slices)] if with_slices else []
        cells += [ratio, invalid]
        table.add_row(*cells, Text("\n".join(reasons)))
    return table


class Fitted:
    """A table built when it is drawn, for the width it is drawn at."""

    def __init__(self, build: Callable[[int], RenderableType]) -> None:
        self._build = build

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self._build(options.max_width)


def decision_lines(decision: str | None, population: dict[str, str] | None) -> list[str]:
    """What the numbers are for: the suite's deployment decision and task population."""
    if decision is None and population is None:
        return ["decision: not declared (add decision: and population: to suite.yaml)"]
    lines = [f"decision: {decision or 'not declared'}"]
    if population is None:
        return [*lines, "population: not declared"]
    return [
        *lines,
        f"population: {population.get('description', '')}",
        f"sampled: {population.get('sampling', '')}",
    ]


def _where(batch: BatchInfo) -> str:
    """Where the attempts ran, when the batch recorded it: where it started (a resume may run
    on another executor; the batch keeps the start's)."""
    if batch.executor is None:
        return ""
    return f" · started on executor {batch.executor} · concurrency {batch.concurrency}"


def _plain(text: str) -> Text:
    """A cell shown as written: imported batches carry task ids and reasons from any file."""
    return Text(shown(text))


def print_run(console: Console, run: AgentRun) -> None:
    reason = quoted(run.terminal_reason)
    verdict = "[green]success[/]" if run.success else f"[red]{reason}[/]"
    console.print(
        shown(
            f"run {run.run_id} · task {run.task_id} r{run.task_revision} · attempt {run.attempt}"
        ),
        markup=False,
    )
    console.print(f"verdict: {verdict}   partial score: {_score(run.partial_score)}")
    console.print(
        f"system {run.system_spec_hash[:12]} · grader {run.grader_revision} · seed {run.seed}"
    )
    console.print(f"state {_short(run.initial_state_hash)} → {_short(run.final_state_hash)}")
    # As the HTML run view and the report print them: 0.00004 is not "cost 0.0000".
    console.print(f"cost {_cost(run.cost)} · latency {_seconds(run.latency)}")
    _print_checks(console, "outcome assertions", run.outcome_assertion_results)
    _print_checks(console, "hard constraints", run.constraint_results)
    exception = run.infrastructure_status.get("exception")
    if exception:
        detail = f"{exception.get('stage')}: {exception.get('type')}: {exception.get('message')}"
        console.print(f"[bold]exception[/] at {quoted(detail)}")
    console.print("[bold]trace[/]")
    for event in run.observation_action_log:
        console.print(_event_line(event), markup=False, highlight=False)


def _print_checks(console: Console, title: str, results: list[CheckResult]) -> None:
    console.print(f"[bold]{title}[/]" + ("" if results else ": none"))
    for result in results:
        mark = "error" if result.error else ("pass" if result.passed else "FAIL")
        console.print(shown(f"  {mark:5} {result.id} ({result.kind})"), markup=False)
        detail = result.error or _evidence(result.evidence)
        if detail and not result.passed:
            console.print(indented(detail, " " * 8), markup=False, highlight=False)


def _evidence(evidence: dict[str, Any]) -> str:
    shown = {k: v for k, v in evidence.items() if k != "diff"}
    return json.dumps(shown, default=str)[:600] if shown else ""


_UNDER = " " * 9
"""Where a trace event's further lines start: under its text, never at a line's start."""


def _event_line(event: Any) -> str:
    """The event as shown: one line, but for a message's own lines and a call's row writes."""
    if isinstance(event, ModelCallEvent):
        return _model_call_line(event)
    if isinstance(event, MessageEvent):
        text = "(left the conversation)" if event.text is None else event.text
        role = "final" if event.final else event.role
        # The message's own lines under its first, indented: none can pass for ours.
        return f"  [{event.step:>2}] {one_line(role):5} " + indented(text, _UNDER)[len(_UNDER) :]
    outcome = (
        json.dumps(event.output, default=str) if event.ok else f"{event.error_class}: {event.error}"
    )
    changed = f"  changed {','.join(event.changed_tables)}" if event.changed_tables else ""
    call = f"{event.tool}({json.dumps(event.args)})"
    head = shown(f"  [{event.step:>2}] call  {call} → {outcome[:300]}{changed}")
    return head + "".join(f"\n{_UNDER}{shown(_write_line(w))}" for w in event.writes)


def _model_call_line(event: ModelCallEvent) -> str:
    """One model request: what came back (or the error), tokens, cost and latency."""
    head = f"  [{event.step:>2}] model {event.model} (try {event.try_number})"
    timing = f"{event.latency_ms:.0f} ms"
    if event.error is not None:
        error = event.error
        status = f" HTTP {error.status_code}" if error.status_code is not None else ""
        request = f" [{error.request_id}]" if error.request_id else ""
        return shown(f"{head} → {error.kind}{status}{request}: {error.message[:200]} ({timing})")
    answer = event.response
    parts = [f"{c.name}({c.arguments[:120]})" for c in (answer.tool_calls if answer else [])]
    if answer is not None and answer.text:
        parts.append(json.dumps(answer.text[:200]))
    usage = event.usage
    known = usage.input_tokens is not None and usage.output_tokens is not None
    tokens = f"{usage.input_tokens} in / {usage.output_tokens} out" if known else "usage not known"
    if usage.cost:
        tokens += f", cost {amount(usage.cost, 6)}"  # 1e-7 is not "0.000000"
    return shown(f"{head} → {'; '.join(parts) or '(empty)'} ({tokens}, {timing})")


def _write_line(write: RowWrite) -> str:
    where = f"{write.table} {json.dumps(write.key, default=str)}"
    if write.before is None:
        return f"wrote {where}: inserted"
    if write.after is None:
        return f"wrote {where}: deleted"
    before, after = write.before, write.after
    values = ", ".join(f"{c} {_json(before.get(c))} → {_json(after.get(c))}" for c in write.columns)
    return f"wrote {where}: {values}"


def _json(value: Any) -> str:
    return json.dumps(value, default=str)


def _score(value: float | None) -> str:
    """A run's partial score as the reports print rates: 0.996 is not "1.00" (nor 0.004 "0.00")."""
    return "n/a" if value is None else fraction(value)


def _short(value: str | None) -> str:
    return value[:12] if value else "none"


def summary_tables(report: dict[str, Any]) -> list[Table]:
    """Headline numbers (both views) and the pass@k / pass^k table with intervals."""
    headline = _view_table(f"suite ({_rule(report)})", "success rate", report, "success_rate")
    tables = [headline]
    if report["partial_score"] or report["invalid_as_failure"]["partial_score"]:
        # In report --json and compare since issue 11; the reports showed only the runs' own.
        title = "partial score (the rubric's weighted mean, beside the binary result)"
        tables.append(_view_table(title, "partial score", report, "partial_score"))
    curves = _table(
        "capability (pass@k) and reliability (pass^k), valid attempts",
        ("k", "pass@k", "interval", "pass^k", "interval", "tasks"),
    )
    for k, at_k in report["pass_at_k"].items():
        hat_k = report["pass_hat_k"][k]
        curves.add_row(
            str(k), fraction(at_k["estimate"]), _ci(at_k), fraction(hat_k["estimate"]), _ci(hat_k),
            str(at_k["n_tasks"]),
        )  # fmt: skip
    if not report["pass_at_k"]:
        curves.add_row("-", "n/a", "n/a", "n/a", "n/a", "0")
        curves.caption = "pass@k and pass^k cannot be computed: no task has a valid attempt"
    for k, beyond in report["k_limits"]["valid"]["beyond"].items():
        at_k, hat_k = beyond["pass_at_k"], beyond["pass_hat_k"]
        curves.add_row(
            f"{k}*", fraction(at_k["estimate"]), _ci(at_k), fraction(hat_k["estimate"]), _ci(hat_k),
            f"{at_k['n_tasks']} (without {len(beyond['excluded_tasks'])})",
        )  # fmt: skip
    return [*tables, curves, _slice_table(report), _reason_table(report)]


def _table(title: str, columns: tuple[str, ...]) -> Table:
    """A summary table whose cells fold when the terminal is narrow, never cut to "…": two
    slices ``refund_policy_v2_alpha`` and ``..._beta`` must not both read ``refund…``, nor
    an interval lose its upper bound."""
    table = Table(title=title)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _view_table(title: str, name: str, report: dict[str, Any], metric: str) -> Table:
    """*metric* in both views, with its interval and denominators."""
    table = _table(title, ("view", name, "interval", "SE", "tasks", "attempts counted", "note"))
    views = (("valid attempts", report), ("invalid = failure", report["invalid_as_failure"]))
    for view_name, view in views:
        value = view[metric]
        if value is None:  # a view row left out read as if the view had not been computed
            table.add_row(view_name, "n/a", "n/a", "n/a", "0", "0", _none_counted(metric))
            continue
        table.add_row(
            view_name,
            fraction(value["estimate"]),
            _ci(value),
            _maybe(value["se"]),
            str(value["n_tasks"]),
            str(value["attempts"]),
            _plain(value["note"]),
        )
    return table


def _none_counted(metric: str) -> str:
    """Why a view has no value of *metric*."""
    if metric == "partial_score":
        return "cannot be computed: no counted attempt carries a partial score"
    return "cannot be computed: no task has a counted attempt"


def _rule(report: dict[str, Any]) -> str:
    """How the printed intervals are made, enough to recompute them: the symmetric
    estimate +- t * SE it once named is not the interval printed near 0 and 1."""
    methods = report["methods"]
    return (
        f"{methods['confidence']:.0%} intervals: Agresti-Coull on the effective n of the "
        "task-clustered SE, t quantile on T-1 df (effective T if weighted); an exact bound "
        f"where every task has one value; n/a below {methods['min_tasks']} tasks"
    )


def k_limit_lines(report: dict[str, Any]) -> list[str]:
    """Which tasks stop each view's pass@k / pass^k curve, and what --k-over-supporting left out."""
    lines = []
    for view, limits in report["k_limits"].items():
        short = limits["limited_by"]
        if short:
            named = ", ".join(f"{t['task_id']} ({t['n']})" for t in short[:8])
            more = f" and {len(short) - 8} more" if len(short) > 8 else ""
            lines.append(
                f"{view} view: k stops at {limits['kmax']}; tasks with fewer counted attempts "
                f"than the most any task has: {named}{more}"
            )
        for k, beyond in limits["beyond"].items():
            left = ", ".join(beyond["excluded_tasks"])
            line = f"{view} view, k={k}*: over the tasks with at least {k} attempts; without {left}"
            if view != "valid":  # the valid view's are rows of the pass@k table; these no row shows
                at, hat = beyond["pass_at_k"], beyond["pass_hat_k"]
                line += (
                    f": pass@{k} = {fraction(at['estimate'])} {_said(at)}, pass^{k} = "
                    f"{fraction(hat['estimate'])} {_said(hat)} over {_over(at)}"
                )
            lines.append(line)
    return lines


def _slice_table(report: dict[str, Any]) -> Table:
    table = _table(
        "slices (valid attempts)",
        (
            "by",
            "slice",
            "tasks",
            "success rate",
            "interval",
            "pass^k (k)",
            "attempts",
            "note",
        ),
    )
    view = report["summary"]["views"]["valid"]
    for by, key in (("label", "by_label"), ("horizon", "by_horizon")):
        for name, part in view[key].items():
            rate = part["success_rate"]
            tasks = counted_of(part["n_tasks"], len(part["excluded_tasks"]))
            if rate is None:
                table.add_row(by, _plain(name), tasks, "no valid attempts", "", "", "0", "")
                continue
            kmax = part["kmax"]
            hat = part["pass_hat_k"][kmax]
            table.add_row(
                by,
                _plain(name),
                tasks,
                fraction(rate["estimate"]),
                _ci(rate),
                f"{fraction(hat['estimate'])} {_ci(hat)} ({kmax})",
                str(rate["attempts"]),
                _plain(rate["note"]),
            )
    return table


def _reason_table(report: dict[str, Any]) -> Table:
    table = _table(
        "terminal reasons (the counted try of each attempt)",
        ("terminal reason", "attempts", "share"),
    )
    reasons = report["terminal_reasons"]
    total = sum(reasons.values()) or 1
    for reason, count in sorted(reasons.items(), key=lambda item: -item[1]):
        table.add_row(_plain(reason), str(count), share(count / total))
    return table


def report_footer(report: dict[str, Any]) -> str:
    tries = report["tries"]
    rates = (
        ", ".join(f"{k} {share(v)}" for k, v in tries["invalid_rate_by_reason"].items()) or "none"
    )
    line = _headline(report) + "\n"
    line += (
        f"{report['valid_attempts']} valid and {report['invalid_attempts']} invalid attempts; "
        f"{counted(tries['tries'], 'try', 'tries')} in all, invalid by reason: {rates}"
    )
    summary = report["summary"]
    if excluded := summary["views"]["valid"]["excluded_tasks"]:  # the HTML names them too
        line += "\ntasks with no valid attempt, left out of the valid-attempts numbers: " + quoted(
            ", ".join(excluded)
        )
    if tries["tries"] > report["valid_attempts"] + report["invalid_attempts"]:
        line += (
            f"\ncost of all tries, reruns included: {_cost(tries['cost'])}"
            f"{_unpriced(tries.get('cost_unknown', 0), tries['tries'])} (counted attempts: "
            f"{_cost(summary['cost']['total'])})"
        )
    cost, latency, per_success = summary["cost"], summary["latency"], summary["cost_per_success"]
    line += (
        f"\ncost per attempt: mean {_cost(cost['mean'])}, median "
        f"{_cost(cost['median'])}, p90 {_cost(cost['p90'])}; per success "
        f"{_cost(per_success)} · latency per attempt: mean {_seconds(latency['mean'])}, "
        f"median {_seconds(latency['median'])}, p90 {_seconds(latency['p90'])}"
    )
    if unknown := unknown_amounts(summary):
        line += f"\n{unknown}"
    for limit in k_limit_lines(report):
        line += "\n" + quoted(limit)
    if report["invalid_tasks_run"]:
        names = quoted(", ".join(report["invalid_tasks_run"]))
        results = quoted(invalid_task_text(report.get("invalid_tasks_results", [])))
        line += (
            f"\n[bold red]RAN INVALID TASKS (--allow-invalid): {names}; left out of every "
            f"figure above[/]{': ' + results if results else ''}"
        )
    if report["invalid_rate_flagged"]:
        line += f"\n[bold red]FLAGGED: {quoted(flagged_text(tries))}[/]"
    if outside := outside_plan_text(report.get("outside_plan", 0)):
        line += f"\n[bold red]OUTSIDE THE PLAN: {quoted(outside)}[/]"
    if judged := judge_error_text(report["judge_errors"]):
        line += f"\n[bold yellow]JUDGE ERRORS: {quoted(judged)}[/]"
    another, spelled = served_texts(report.get("models_served", []))
    if another:
        line += (
            f"\n[bold yellow]ANOTHER MODEL SERVED: {quoted(another)}: as the answers name their"
            " model (their word, not verified)[/]"
        )
    if spelled:
        line += f"\nmodels served as requested, spelled otherwise: {quoted(spelled)}"
    if ran := session_text(report["provenance"]):
        line += f"\nRESUMED: {quoted(ran)}"
    if unproven := validation_text(report["provenance"]):
        line += f"\n[bold yellow]VALIDATION: {quoted(unproven)}[/]"
    running = report["provenance"]["running"]
    if running:  # a resume would be refused: the batch is not stopped, it is under way
        line += (
            f"\n[bold red]RUNNING: the batch is being run by {quoted(running)}; the figures "
            "are of the tries stored so far[/]"
        )
    if missing := report.get("missing_attempts"):
        resume = f"; complete it with groundstate run ... --resume {quoted(report['batch_id'])}"
        line += (
            f"\n[bold red]INCOMPLETE: {quoted(incomplete_text(missing))}"
            f"{'' if running else resume}[/]"
        )
    return line


def _headline(report: dict[str, Any]) -> str:
    """pass^1 on valid attempts, and, when any attempt is invalid, counting invalid as failed;
    each with the tasks and attempts it is over (the two views differ in both)."""
    valid = report["pass_hat_k"].get(1)
    line = "pass^1: no valid attempts"
    if not report["tasks"] and report["invalid_tasks_run"]:
        line = "pass^1: no task to count: every task that ran failed validation"
    if valid is not None:
        line = f"pass^1 = {fraction(valid['estimate'])} {_said(valid)} over {_over(valid)}"
    strict = report["invalid_as_failure"]["success_rate"]
    if report["invalid_attempts"] and strict is not None:
        line += (
            f" (valid attempts only) · {fraction(strict['estimate'])} {_said(strict)} over "
            f"{_over(strict)}, counting "
            f"{counted(report['invalid_attempts'], 'invalid attempt')} as failures"
        )
    return line


def _over(estimate: dict[str, Any]) -> str:
    tasks, attempts = estimate["n_tasks"], estimate["attempts"]
    return f"{tasks} task{'s' * (tasks != 1)}, {attempts} attempt{'s' * (attempts != 1)}"


def _ci(estimate: dict[str, Any], difference: bool = False) -> str:
    """The interval, "n/a" when the rule gives none, marked when it is an exact bound; a
    difference's bounds signed and never a non-zero bound as 0."""
    if estimate["ci_low"] is None:
        return "n/a"
    text = interval(estimate["ci_low"], estimate["ci_high"], difference=difference)
    return text + (" bound" if estimate["method"] == "exact_bound" else "")


def _said(estimate: dict[str, Any]) -> str:
    """The interval, or why there is none."""
    return _ci(estimate) if estimate["ci_low"] is not None else f"({estimate['note']})"


def _maybe(value: float | None) -> str:
    return "n/a" if value is None else amount(value, 3)


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{amount(value, 3)}s"


def unknown_amounts(summary: dict[str, Any]) -> str:
    """A line naming the counted attempts whose cost or latency the records do not know (left
    out of those figures, never counted as 0), or ``""``."""
    parts = [
        f"{summary[name].get('unknown', 0)} with no {name}"
        for name in ("cost", "latency")
        if summary[name].get("unknown", 0)
    ]
    if not parts:
        return ""
    return (
        f"of {counted(summary['attempts'], 'counted attempt')}, {' and '.join(parts)} (not known: "
        "left out of those figures, not counted as 0)"
    )


def _unpriced(unknown: int, tries: int) -> str:
    """`` (over N of M tries: K with no cost)`` when some tries' cost is not known."""
    over = f"{tries - unknown} of {counted(tries, 'try', 'tries')}"
    return f" (over {over}: {unknown} with no cost)" if unknown else ""


def _cost(value: float | None) -> str:
    """Costs with the four decimals the HTML report shows them with."""
    return "n/a" if value is None else amount(value, 4)


def _p(value: float | None, alpha: float) -> str:
    return "n/a" if value is None else p_value(value, alpha)


SHOWN_K = 10
"""Beyond this common k, the text shows a few k (every k is in --json)."""


def comparison_tables(console: Console, data: dict[str, Any]) -> None:
    """Each view's differences b - a with interval, SE, t and p; then the tested task changes."""
    console.print(_comparison_head(data), markup=False, highlight=False)
    for side in ("a", "b"):
        stated = data.get(f"decision_{side}") or {}
        lines = decision_lines(stated.get("decision"), stated.get("population"))
        console.print(shown(f"{side}: " + " · ".join(lines)), markup=False, highlight=False)
    for note in data["notes"]:
        console.print(f"[bold yellow]{quoted(note)}[/]")
    for view, title in (
        ("valid", "valid attempts"),
        ("strict", "invalid attempts count as failures"),
    ):
        if data["metrics"][view]:
            console.print(_difference_table(data, view, title))
        else:
            console.print(f"{title}: {NO_VALID_FIGURE}", markup=False, highlight=False)
    _print_changes(console, data)
    for side in ("only_in_a", "only_in_b", "excluded_tasks"):
        if data[side]:
            names = shown(", ".join(data[side]))
            console.print(f"{side.replace('_', ' ')}: {names}", markup=False, highlight=False)


def _comparison_head(data: dict[str, Any]) -> str:
    shared = len(data["paired_tasks"])
    line = f"batch {data['batch_b']} against batch {data['batch_a']} (b - a), "
    if data["mode"] != "paired":  # nothing dropped: each batch over its own tasks (the note)
        return line + (
            f"UNPAIRED (too few shared tasks): each batch over its own tasks; {shared} "
            f"task{'s' * (shared != 1)} in both with valid attempts"
        )
    line += f"paired by task: {shared} task{'s' * (shared != 1)} in both with valid attempts"
    if data["dropped_tasks"]:
        line += (
            f", {data['dropped_tasks']} dropped ({len(data['only_in_a'])} only in a, "
            f"{len(data['only_in_b'])} only in b, {len(data['excluded_tasks'])} without valid "
            "attempts on one side)"
        )
    if data["excluded_tasks"]:  # the strict view pairs them: their invalid attempts count
        line += "; the strict view also counts the tasks without valid attempts, as failures"
    return line


def _difference_table(data: dict[str, Any], view: str, title: str) -> Table:
    methods = data["methods"]
    how = (
        "paired, task-clustered SE, each end at least the exact bound of every task at the "
        "highest (lowest) difference; p from the paired t test, at least that bound's"
    )
    if data["mode"] != "paired":
        how = "UNPAIRED: Newcombe's square-and-add of each side's own interval"
    table = _table(
        f"{title}: b - a, {methods['confidence']:.0%} interval ({how})",
        ("metric", "a", "b", "b - a", "interval", "SE", "t", "p", "tasks", "note"),
    )
    for name, m in _shown(data["metrics"][view], data["common_k"][view]):
        a, b, d = m["a"], m["b"], m["difference"]
        p = _p(m["p_value"], 1 - methods["confidence"])  # apart from alpha: not 0.050 for 0.0495
        table.add_row(
            name, fraction(a["estimate"]), fraction(b["estimate"]), signed(d["estimate"]),
            _ci(d, difference=True), _maybe(d["se"]), _maybe(m["statistic"]), p,
            str(d["n_tasks"]), _plain(d["note"]),
        )  # fmt: skip
    return table


def _shown(metrics: dict[str, Any], common_k: int) -> list[tuple[str, Any]]:
    """Every metric when the common k is small; otherwise k = 1, 2, 5, 10, ... and the last."""
    keep = set(range(1, common_k + 1))
    if common_k > SHOWN_K:
        keep = {k for k in (1, 2, 3, 5, 10, 20, 50, 100) if k <= common_k} | {common_k}
    return [(name, m) for name, m in metrics.items() if m["k"] is None or m["k"] in keep]


def _print_changes(console: Console, data: dict[str, Any]) -> None:
    test = data["per_task_test"]
    head = (
        f"per-task changes: Fisher's exact test on each task, Benjamini-Hochberg at FDR "
        f"{test['fdr']:g}: {test['changed']} of {counted(test['tested'], 'task')} changed"
    )
    console.print(head, markup=False, highlight=False)
    if not test["changed"]:
        console.print("(other per-task differences are within attempt noise: not findings)")
        return
    changed = _table(
        "tasks that changed (surviving the FDR control)", ("task", "a", "b", "b - a", "p", "q")
    )
    for task in data["per_task"]:
        if task["changed"]:
            changed.add_row(
                _plain(task["task_id"]),
                f"{task['a_c']}/{task['a_n']}",
                f"{task['b_c']}/{task['b_n']}",
                signed(task["difference"]),
                _p(task["p_value"], test["fdr"]),
                _p(task["q_value"], test["fdr"]),
            )
    console.print(changed)
