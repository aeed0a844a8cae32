"""Commands that plan batches and diagnose failures (plan, agreement, sample-failures, labels)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from groundstate.cli import STORE_OPTION, console, main, said, seed_option
from groundstate.cli.integrity import EXIT_ALTERED, warn
from groundstate.errors import GroundstateError
from groundstate.rounding import counted, decimals, rounded

if TYPE_CHECKING:  # the library is imported inside each command: a quick --help
    from rich.console import Console
    from rich.table import Table

    from groundstate.agreement import Agreement, MultiLabelAgreement
    from groundstate.diagnosis import FailureTaxonomy
    from groundstate.diagnosis.verdicts import Field, VerdictAgreement
    from groundstate.planning import Plan
    from groundstate.records import AgentRun
    from groundstate.spec.system import SystemSpec
    from groundstate.stats.intervals import Estimate
    from groundstate.store import BatchInfo, RunLabels, RunStore

VERDICT_FIELDS = ("success", "terminal_reason", "reason_class")
"""``groundstate.diagnosis.verdicts.FIELDS``, spelled here so that ``agreement --help`` need not
import the diagnosis (tests/test_startup.py holds the two equal)."""

TAXONOMY_OPTION = click.option(
    "--taxonomy",
    "taxonomy_file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Failure taxonomy file (default: see the command's help).",
)


def _read_batches(
    store: Path, batch_ids: tuple[str, ...]
) -> list[tuple[BatchInfo, list[AgentRun]]]:
    """Each batch and its runs, verified first (altered records are named on stderr)."""
    from groundstate.store import RunStore

    read = []
    # one snapshot: the runs read are those verified, while another process runs the batch
    with RunStore(store, create=False) as run_store, run_store.snapshot():
        for batch_id in batch_ids:
            batch = _verified_batch(run_store, batch_id)
            read.append((batch, run_store.runs(batch.batch_id)))
    return read


def _system_of(batch: BatchInfo) -> SystemSpec | None:
    """The system *batch* ran, as stored; None for one that is not a system file's (an
    imported batch's, whose runs ``regrade`` refuses, naming them)."""
    from pydantic import ValidationError

    from groundstate.spec.system import SystemSpec

    try:
        return SystemSpec.model_validate(batch.system_spec)
    except ValidationError:
        return None


def _verified_batch(run_store: RunStore, batch_id: str) -> BatchInfo:
    """The batch, once its records and labels verify; altered ones are named on stderr and
    end the command (exit 1): no number or regression case is made from them."""
    batch = run_store.batch(batch_id)
    if warn(run_store.verify(batch.batch_id)):
        click.echo(f"error: records of batch {batch.batch_id} are altered", err=True)
        sys.exit(EXIT_ALTERED)
    return batch


# --- plan -------------------------------------------------------------------------------------


@main.command("plan")
@click.argument("batch_ids", nargs=-1, required=True, metavar="BATCH [BATCH_B]")
@click.option(
    "--delta", type=float, default=0.05, show_default=True, help="Difference to detect, in (0, 1]."
)
@click.option(
    "--power", type=float, default=0.8, show_default=True, help="Power wanted, in (0, 1)."
)
@click.option(
    "--alpha", type=float, default=0.05, show_default=True, help="Two-sided level, in (0, 1)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@STORE_OPTION
def plan_command(
    batch_ids: tuple[str, ...], delta: float, power: float, alpha: float, as_json: bool, store: Path
) -> None:
    """Plan the next batch from a pilot BATCH (or a pair: paired differences).

    Prints the between- and within-task variance, the intra-class correlation and design
    effect, the tasks needed per number of attempts to detect --delta with --power, a power
    grid, and what one more attempt per task buys against one more task. A finished pilot
    with no valid attempt has no estimate to plan from: exit 3, as ``report``.
    """
    from groundstate.analysis import no_estimate, outcomes
    from groundstate.cli.runs import exit_without_estimate, warn_same_batch
    from groundstate.planning import plan
    from groundstate.stats import TaskCounts, task_counts

    if len(batch_ids) > 2:
        raise click.UsageError("plan takes one pilot batch or two")
    read = _read_batches(store, batch_ids)
    warn_same_batch(
        batch_ids, [b for b, _ in read], "paired with itself: every paired difference is 0"
    )
    # every attempt invalid: "the pilot has 0 tasks with a valid attempt", exit 2, as for a
    # pilot too small; it has no estimate at all, as report says (exit 3)
    names = ["the pilot"] if len(read) == 1 else ["pilot A", "pilot B"]
    exit_without_estimate(
        [(f"{name} (batch {b.batch_id})", no_estimate(b, runs))
         for name, (b, runs) in zip(names, read, strict=True)]
    )  # fmt: skip
    pilots: list[list[TaskCounts]] = [
        task_counts(outcomes(batch, runs), "valid") for batch, runs in read
    ]
    result = plan(pilots, delta=delta, power=power, alpha=alpha)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        _print_plan(console(), result)


def _print_plan(out: Console, result: Plan) -> None:
    from rich.table import Table

    from groundstate.planning import testable
    from groundstate.report.numbers import amount, fraction, given
    from groundstate.report.terminal import quoted
    from groundstate.stats import MIN_TASKS

    parts = Table(title="variance components (per attempt, valid attempts)")
    for column in ("pilot", "tasks", "attempts/task", "mean", "between", "within", "ICC", "deff"):
        parts.add_column(column)
    for i, c in enumerate(result.components):
        icc = "n/a" if c.icc is None else fraction(c.icc)
        parts.add_row(
            "AB"[i], str(c.n_tasks), decimals(c.attempts, 1), fraction(c.mean),
            amount(c.between, 4), amount(c.within, 4), icc, decimals(c.design_effect, 2),
        )  # fmt: skip
    out.print(parts)
    d = result.difference
    kind = "paired differences of the two pilots" if d.paired_pilot else "assumed from one pilot"
    out.print(
        f"difference variance ({kind}): between {amount(d.between, 4)}, "
        f"within {amount(d.within, 4)}; "
        f"Var(mean diff) = {decimals(d.weight_inflation, 2)} x (between/T + within/(T K))"
    )
    needed = Table(
        title=f"tasks needed to detect {given(result.delta)} with power {given(result.power)} "
        f"(paired t test, two-sided alpha {given(result.alpha)})"
    )
    needed.add_column("attempts per task (K)")
    needed.add_column("tasks (T)")
    needed.add_column("runs per system (T x K)")
    for k, t in result.tasks_needed.items():
        needed.add_row(str(k), str(t), str(t * k))
    out.print(needed)
    grid = Table(title="power by tasks (rows) and attempts per task (columns)")
    ks = sorted(next(iter(result.power_grid.values())))
    grid.add_column("T")
    for k in ks:
        grid.add_column(f"K={k}")
    untestable = [t for t in result.power_grid if not testable(result.difference, t)]
    for t, row in result.power_grid.items():
        grid.add_row(str(t), *("n/a" if t in untestable else fraction(row[k]) for k in ks))
    out.print(grid)
    if untestable:  # 0.000 read as a power rounded down: compare can never reject there
        out.print(
            f"n/a: T={', '.join(map(str, untestable))}: compare gives no p-value over fewer than "
            f"{MIN_TASKS} tasks (or without a degree of freedom), so a batch that size "
            "detects nothing (power 0 in --json)"
        )
    m = result.marginal
    out.print(
        f"at the pilot's design (T={m.tasks}, K={m.attempts}): one more attempt per task cuts "
        f"the variance by {_small(m.one_more_attempt)} ({_small(m.per_run_attempt)} per run), "
        f"one more task by {_small(m.one_more_task)} ({_small(m.per_run_task)} per run): add "
        f"{m.better}s"
    )
    for line in result.warnings:
        out.print(f"[yellow]warning:[/] {quoted(line)}")  # it names task ids


def _small(value: float) -> str:
    """A variance reduction in exponent form with three significant digits, rounded as every
    figure is (:mod:`groundstate.rounding`; Python's ``.2e`` rounded the binary float half to
    even)."""
    return f"{rounded(value, 3, significant=True):.2e}"


# --- grader agreement -------------------------------------------------------------------------


@main.command("agreement")
@click.argument("batch_a")
@click.argument("batch_b", required=False)
@click.option(
    "--regrade",
    "regrade_suite",
    type=click.Path(path_type=Path),
    default=None,
    help="Instead of BATCH_B: replay BATCH_A's trajectories under this suite's current grader.",
)
@click.option(
    "--on",
    type=click.Choice(VERDICT_FIELDS),
    default="success",
    show_default=True,
    help="Compare verdicts, terminal reasons, or reason classes (before the '/').",
)
@click.option("--json", "as_json", is_flag=True, help="Print the agreement as JSON.")
@STORE_OPTION
def agreement_command(
    batch_a: str,
    batch_b: str | None,
    regrade_suite: Path | None,
    on: Field,
    as_json: bool,
    store: Path,
) -> None:
    """Agreement of two graders on the same attempts, paired by (task, attempt): BATCH_A
    against BATCH_B, or BATCH_A's stored verdicts against a replay of its recorded
    trajectories under the current grader of --regrade SUITE (a grader revision against
    the one that graded the batch).

    Every figure is over the judged pairs: attempts valid on both sides (an invalid attempt
    was graded by no one); pairs invalid on one side or both are counted and listed apart.
    Prints the share agreeing with its 95% interval (tasks as clusters), Cohen's kappa,
    Krippendorff's alpha, the confusion table and each attempt the two disagree on. A
    finished batch with no valid attempt (every attempt invalid, or every task failed
    validation), or no pair judged by both, gives nothing to agree on: exit 3, as ``report``
    (--json still prints the counts, share null, and why in ``no_estimate``). A kappa or alpha
    over fewer than 5 judged pairs is n/a, with the reason (JSON: null and ``note``).
    """
    from rich.table import Table

    from groundstate.agreement import reportable
    from groundstate.analysis import counted_runs, no_estimate
    from groundstate.cli.runs import exit_without_estimate, warn_same_batch
    from groundstate.diagnosis import regrade, verdict_agreement
    from groundstate.report.terminal import quoted
    from groundstate.spec.suite import load_suite

    if (batch_b is None) == (regrade_suite is None):
        raise click.UsageError("give BATCH_B or --regrade SUITE (one of them)")
    ids = (batch_a,) if batch_b is None else (batch_a, batch_b)
    stored = _read_batches(store, ids)
    warn_same_batch(
        ids, [b for b, _ in stored], "paired with itself: each attempt agrees with itself"
    )
    # before any pairing: the verdicts of invalid attempts only ("invalid" against "invalid")
    # made "share agreeing 1.000", exit 0
    sides = zip(("A", "B"), stored, strict=False)  # one side under --regrade
    reasons = [
        (f"side {side} (batch {b.batch_id})", no_estimate(b, runs)) for side, (b, runs) in sides
    ]
    without: list[tuple[str, str | None]] = [(name, why) for name, why in reasons if why]
    # each side's counted tries, as its report counts them (its plan, valid tasks, last tries)
    read = [(b, counted_runs(b, runs)) for b, runs in stored]
    (batch, a_runs), b_runs = read[0], read[-1][1]
    if batch_b is None:  # nothing valid to replay on a side with no estimate
        suite = None if without else load_suite(regrade_suite or Path())
        b_runs = [] if suite is None else regrade(a_runs, suite, _system_of(batch))
    paired = verdict_agreement(a_runs, b_runs, on, refuse_unpaired=not without)
    # a kappa or alpha over fewer than 5 judged pairs is n/a, with why: one pair the graders
    # disagree on printed Cohen's 0.000 and Fleiss' -1.000
    result = replace(paired, agreement=reportable(paired.agreement))
    if result.share is None and not without:  # every paired attempt invalid on one side or both
        found = [b.batch_id for b, _ in stored]
        named = "" if batch_b is None else f" (batch {found[0]} and batch {found[-1]})"
        why = f"no paired attempt was judged by both sides ({_unjudged(result)})"
        without = [(f"the agreement of A and B{named}", why)]
    if as_json:  # as report --json: the counts, and why there is no estimate (or null)
        data = result.to_dict()
        data["no_estimate"] = "; ".join(f"{name}: {why}" for name, why in without) or None
        click.echo(json.dumps(data, indent=2))
    exit_without_estimate(without)
    share = result.share
    if as_json or share is None:
        return
    out = console()
    out.print(
        f"{counted(result.paired, 'attempt')} paired on {on} ({result.only_in_a} only in A, "
        f"{result.only_in_b} only in B): {result.judged} judged by both; {_unjudged(result)}"
    )
    out.print(_share_line(share, result.judged))
    title = f"A against B, over the {counted(result.judged, 'judged pair')}"
    _print_agreement(out, title, [(on, None, result.agreement)], "compared on")
    confusion = Table(title="confusion of the judged pairs (rows: A, columns: B)")
    values = sorted({*result.confusion, *(y for row in result.confusion.values() for y in row)})
    confusion.add_column("A \\ B", overflow="fold")
    for value in values:
        confusion.add_column(quoted(value), overflow="fold")
    for x in values:
        row = result.confusion.get(x, {})
        confusion.add_row(quoted(x), *(str(row.get(y, 0)) for y in values))
    out.print(confusion)
    for what, listed in (("disagree", result.disagreements), ("not judged", result.one_sided)):
        for d in listed:
            out.print(
                quoted(f"{what}: {d['task_id']} attempt {d['attempt']}: A {d['a']} ({d['a_run']}), "
                       f"B {d['b']} ({d['b_run']})")
            )  # fmt: skip


def _unjudged(result: VerdictAgreement) -> str:
    """The paired attempts left out of the agreement, and why: ``9 invalid on both sides, 1
    on one side (A 0, B 1)``."""
    one = result.invalid_a_only + result.invalid_b_only
    return (
        f"{result.invalid_both} invalid on both sides, {one} on one side "
        f"(A {result.invalid_a_only}, B {result.invalid_b_only})"
    )


def _share_line(share: Estimate, judged: int) -> str:
    """``share agreeing 0.900 over 10 judged pairs (2 tasks), 95% interval n/a: ...``."""
    from groundstate.report.numbers import interval

    if share.ci_low is None or share.ci_high is None:
        where = share.note or "n/a"
    else:
        where = interval(share.ci_low, share.ci_high) + (f" ({share.note})" if share.note else "")
    return (
        f"share agreeing {_number(share.estimate)} over {counted(judged, 'judged pair')} "
        f"({counted(share.n_tasks, 'task')}), 95% interval {where}"
    )


def _print_agreement(
    out: Console,
    title: str,
    rows: Sequence[tuple[str, int | None, Agreement]],
    first: str = "label",
) -> None:
    """The table, then why each n/a it shows is withheld though defined (fewer than 5 units:
    ``agreement.reportable``), a line per row that has one."""
    from groundstate.report.terminal import quoted

    out.print(_agreement_table(title, rows, first))
    for name, _, a in rows:
        if a.note is not None:
            out.print(quoted(f"{name}: {a.note}" if len(rows) > 1 else a.note), soft_wrap=True)


def _agreement_table(
    title: str, rows: Sequence[tuple[str, int | None, Agreement]], first: str = "label"
) -> Table:
    from rich.table import Table

    from groundstate.report.terminal import quoted

    table = Table(title=quoted(title))  # annotator ids are anyone's text, not markup
    columns = (
        first,
        "positives",
        "units",
        "share agreeing",
        "Cohen kappa",
        "Fleiss kappa",
        "Kripp. alpha",
    )
    for column in columns:
        table.add_column(column, overflow="fold")  # labels, annotators: never cut
    for name, positives, a in rows:
        table.add_row(
            quoted(name),
            "" if positives is None else str(positives),
            str(a.units),
            _number(a.percent_agreement),
            _number(a.cohen_kappa, a.cohen_units),
            _number(a.fleiss_kappa, a.fleiss_units),
            _number(a.krippendorff_alpha, a.alpha_units),
        )
    return table


def _number(value: float | None, units: int | None = None) -> str:
    """An agreement (or kappa, alpha) with three decimals, as reports print rates: one that is
    not perfect never prints as 1.000 (9,999 of 10,000 runs agreeing is ``>0.999``), nor a
    kappa below chance as 0 or -1 (-0.0004 is not "-0.000", -0.99996 not "-1.000")."""
    from groundstate.report.numbers import fraction

    if value is None:
        return "n/a"
    shown = fraction(value) if value >= 0 else _negative(fraction(-value))
    return shown + ("" if units is None else f" ({units})")


def _negative(magnitude: str) -> str:
    """A value below 0 from :func:`fraction` of its magnitude: ``<0.001`` is ``>-0.001``."""
    if magnitude[0] in "<>":
        return {"<": ">", ">": "<"}[magnitude[0]] + "-" + magnitude[1:]
    return "-" + magnitude


# --- sampling failures ------------------------------------------------------------------------


@main.command("sample-failures")
@click.argument("batch_id")
@click.option(
    "--n", "n", type=click.IntRange(min=1), required=True, help="Runs to sample (all, if fewer)."
)
@seed_option("Sampling seed.")
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="Folder for sheet.csv, sheet.jsonl, sheet.html and taxonomy.yaml.",
)
@TAXONOMY_OPTION
@STORE_OPTION
def sample_failures_command(
    batch_id: str, n: int, seed: int, out: Path, taxonomy_file: Path | None, store: Path
) -> None:
    """Draw N failed runs of BATCH_ID, stratified by terminal reason and slice, into a
    labelling sheet (CSV, JSONL, and an HTML page with each trajectory and its evidence).

    The taxonomy is --taxonomy, else the suite's taxonomy.yaml, else the shipped default; a
    copy is written beside the sheet. A finished batch with no valid attempt has nothing to
    sample and no estimate: exit 3, as ``report``; one whose valid attempts all succeeded,
    exit 2 ("nothing to sample"), and no sheet is written."""
    from groundstate.analysis import no_estimate
    from groundstate.cli.runs import exit_without_estimate
    from groundstate.diagnosis import failed_runs, sample_failures, write_sheet
    from groundstate.store import refuse_output

    refuse_output(store, out, "--out", folder=True)  # its artifacts: the sheet is no evidence
    ((batch, runs),) = _read_batches(store, (batch_id,))
    # a batch with no valid attempt has no failure to sample, as it has no estimate: exit 3
    # as report (it exited 2, "no valid failed runs", as for a batch whose attempts all passed)
    exit_without_estimate(
        [(f"batch {batch.batch_id} (nothing to sample)", no_estimate(batch, runs))]
    )
    taxonomy = _taxonomy(batch, taxonomy_file)
    sample = sample_failures(batch, runs, n, seed)
    paths = write_sheet(out, batch, sample, taxonomy)
    failed = len(failed_runs(batch, runs))
    if batch.source != "groundstate":
        click.echo(
            f"warning: batch {batch.batch_id} was imported: its runs have no trajectory or "
            "grader evidence, so the sheet shows their verdicts only",
            err=True,
        )
    click.echo(f"sampled {len(sample)} of {failed} valid failed runs (seed {seed})")
    click.echo(f"taxonomy {taxonomy.ref}: {', '.join(taxonomy.ids)}")
    for path in paths:
        click.echo(f"wrote {path}")


def _taxonomy(batch: BatchInfo, taxonomy_file: Path | None) -> FailureTaxonomy:
    """--taxonomy if given, else the batch's suite's taxonomy.yaml, else the default."""
    from groundstate.diagnosis import default_taxonomy, load_taxonomy, suite_taxonomy

    if taxonomy_file is not None:
        return load_taxonomy(taxonomy_file)
    suite = Path(batch.suite_path)
    if batch.source != "groundstate" or not suite.is_dir():
        where = (
            "was imported (it has no suite folder)"
            if batch.source != "groundstate"
            else f"has its suite folder {suite} elsewhere"
        )
        click.echo(
            f"warning: batch {batch.batch_id} {where}; using the default taxonomy (pass "
            "--taxonomy to choose)",
            err=True,
        )
        return default_taxonomy()
    return suite_taxonomy(suite)


# --- labels -----------------------------------------------------------------------------------


@main.group("labels")
def labels_group() -> None:
    """Import failure labels, measure their agreement, record the adjudication."""


@labels_group.command("import")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--annotator", required=True, help="Who gave these labels.")
@TAXONOMY_OPTION
@STORE_OPTION
def labels_import(file: Path, annotator: str, taxonomy_file: Path | None, store: Path) -> None:
    """Store one annotator's labels from a filled-in sheet (sheet.csv or sheet.jsonl),
    validated against --taxonomy or the taxonomy.yaml beside FILE."""
    stored = _store_labels(file, annotator, taxonomy_file, store, adjudicated=False)
    click.echo(f"stored labels of {counted(len(stored), 'run')} by {annotator!r}")


@labels_group.command("adjudicate")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--adjudicator", default="adjudicated", show_default=True, help="Who decided.")
@TAXONOMY_OPTION
@STORE_OPTION
def labels_adjudicate(
    file: Path, adjudicator: str, taxonomy_file: Path | None, store: Path
) -> None:
    """Record the adjudicated labels (the final set) from a sheet; a later adjudication of a
    run supersedes an earlier one. Runs adjudicated evaluator_defect feed `labels regress`.
    The taxonomy is --taxonomy or the taxonomy.yaml beside FILE."""
    from groundstate.diagnosis import EVALUATOR_DEFECT

    stored = _store_labels(file, adjudicator, taxonomy_file, store, adjudicated=True)
    defects = sum(EVALUATOR_DEFECT in x.labels for x in stored)
    click.echo(f"recorded the adjudicated labels of {counted(len(stored), 'run')}")
    if defects:
        batches = " ".join(sorted({x.batch_id for x in stored if EVALUATOR_DEFECT in x.labels}))
        click.echo(
            f"{counted(defects, 'evaluator defect')}: "
            f"`groundstate labels regress {batches} --into DIR` turns them into regression cases"
        )


def _store_labels(
    file: Path, annotator: str, taxonomy_file: Path | None, store: Path, *, adjudicated: bool
) -> list[RunLabels]:
    from groundstate.diagnosis import import_labels, sheet_taxonomy
    from groundstate.store import RunStore

    taxonomy = sheet_taxonomy(file, taxonomy_file)
    with RunStore(store, create=False) as run_store:
        return import_labels(
            file, run_store, annotator=annotator, taxonomy=taxonomy, adjudicated=adjudicated
        )


@labels_group.command("agreement")
@click.argument("batch_id")
@click.option("--json", "as_json", is_flag=True, help="Print the agreement as JSON.")
@TAXONOMY_OPTION
@STORE_OPTION
def labels_agreement(batch_id: str, as_json: bool, taxonomy_file: Path | None, store: Path) -> None:
    """Agreement of the annotators' labels on BATCH_ID's runs, per label and overall.

    Each label is scored present/absent per run; "overall" pools those decisions over labels;
    "exact set" compares whole label sets. Cohen's kappa needs exactly two annotators. With
    an adjudication recorded, each annotator is also scored against it. The taxonomy is
    --taxonomy, else the suite's taxonomy.yaml, else the shipped default.
    """
    from groundstate.agreement import reportable
    from groundstate.analysis import counted_runs
    from groundstate.diagnosis import against_adjudication, label_agreement
    from groundstate.store import RunStore

    with RunStore(store, create=False) as run_store, run_store.snapshot():
        batch = _verified_batch(run_store, batch_id)
        figures = {r.run_id for r in counted_runs(batch, run_store.runs(batch.batch_id))}
        stored = run_store.labels(batch.batch_id)
        adjudicated = [
            x for x in run_store.labels(batch.batch_id, adjudicated=True) if x.run_id in figures
        ]
    # the runs the headline counts, as sample-failures draws them: not a rerun try or a task
    # that failed validation, labelled from a sheet made by hand
    labelled = [x for x in stored if x.run_id in figures]
    if len(labelled) < len(stored):
        click.echo(
            f"note: {counted(len(stored) - len(labelled), 'label')} of runs no figure counts "
            "(tries that were rerun, tasks that failed validation) left out",
            err=True,
        )
    if not labelled:
        raise GroundstateError(f"no labels stored for batch {batch.batch_id}")
    taxonomy = _taxonomy(batch, taxonomy_file)
    result = _reportable_labels(label_agreement(labelled, taxonomy))
    versus = {
        name: reportable(a)
        for name, a in against_adjudication(labelled, adjudicated, taxonomy).items()
    }
    if as_json:
        data = result.to_dict()
        data["against_adjudication"] = {k: v.to_dict() for k, v in versus.items()}
        click.echo(json.dumps(data, indent=2))
        return
    rows: list[tuple[str, int | None, Agreement]] = [
        (x.label, x.positives, x.agreement) for x in result.per_label
    ]
    rows += [("overall (pooled)", None, result.overall), ("exact set", None, result.exact_set)]
    title = (
        f"label agreement · batch {batch.batch_id} · {counted(result.units, 'run')} · annotators "
        f"{', '.join(result.annotators)}"
    )
    out = console()
    _print_agreement(out, title, rows)
    if versus:
        against = [(name, None, a) for name, a in versus.items()]
        _print_agreement(out, "each annotator against the adjudicated labels", against, "annotator")


def _reportable_labels(found: MultiLabelAgreement) -> MultiLabelAgreement:
    """*found* as shown: a kappa or alpha over fewer than 5 units n/a, with why, as in
    ``agreement`` (``groundstate.agreement.reportable``), per label, pooled and on sets."""
    from groundstate.agreement import reportable

    return replace(
        found,
        per_label=tuple(replace(x, agreement=reportable(x.agreement)) for x in found.per_label),
        overall=reportable(found.overall),
        exact_set=reportable(found.exact_set),
    )


@labels_group.command("regress")
@click.argument("batch_id")
@click.option(
    "--into",
    type=click.Path(path_type=Path),
    required=True,
    help="Suite folder to add the regression tasks to (made if missing).",
)
@click.option(
    "--suite",
    "suite_path",
    type=click.Path(path_type=Path),
    default=None,
    help="The batch's suite (default: the folder the batch recorded).",
)
@STORE_OPTION
def labels_regress(batch_id: str, into: Path, suite_path: Path | None, store: Path) -> None:
    """Turn each run of BATCH_ID adjudicated evaluator_defect into a regression case: a copy
    of its task whose observed trajectory is an alternative the repaired grader must pass.
    Exit 1 when a run could not be made one (each named on stderr) or the batch's records are
    altered."""
    from groundstate.diagnosis import adjudicated_defects
    from groundstate.spec.suite import load_suite
    from groundstate.store import RunStore
    from groundstate.validation.regress import RegressionRefused, regress

    with RunStore(store, create=False) as run_store:
        batch = _verified_batch(run_store, batch_id)
        defects = adjudicated_defects(run_store, batch.batch_id)
    if batch.source != "groundstate":
        raise GroundstateError(
            f"batch {batch.batch_id} was imported from another harness: its runs have no "
            "recorded trajectory to replay as a regression case"
        )
    suite = load_suite(suite_path or Path(batch.suite_path))
    refused = 0
    for run in defects:
        try:
            click.echo(regress(run, suite, into=into, evaluator_defect=True))
        except RegressionRefused as exc:
            refused += 1
            click.echo(f"skipped run {run.run_id}: {said(str(exc))}", err=True)
    if refused:
        sys.exit(1)
