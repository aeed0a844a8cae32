"""Every figure the single-batch report prints, re-computed outside it (nineteenth round).

The reference here is written from the chapter (``shared/reference/evaluating-agents.txt``) and
docs/statistics.md: per task, pass@k = 1 - C(n-c,k)/C(n,k) and pass^k = C(c,k)/C(n,k) in exact
fractions, weighted means over the tasks with a counted attempt; the counted try of an attempt
is its last retry; environment and grader failures are invalid (out of the valid view, failures
in the strict view); harness compatibility failures count against the system; a cost not known
is left out of every cost figure and counted apart. Generated batches (unequal attempts, tasks
whose every attempt is invalid, retries, costs not known, weights) are imported through the CLI
and reported as JSON, as text and as HTML; each figure is checked in each.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
import random
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.report.numbers import amount, fraction, share

INVALID = ("environment_failure", "grader_failure")
ENDS = (
    "success",
    "success",
    "agent_failure/incorrect_state",
    "agent_failure/step_limit",
    "harness_compatibility_failure/context_window",
    "environment_failure/setup",
    "grader_failure",
)
COSTS = (None, 0.1, 0.25, 0.5, 0.00004, 3.0, 0.0)


@dataclass
class Try:
    reason: str
    cost: float | None
    latency: float | None
    partial: float | None = None


@dataclass
class Task:
    task_id: str
    weight: float
    attempts: list[list[Try]]
    labels: tuple[str, ...] = ()

    def counted(self) -> list[Try]:
        return [tries[-1] for tries in self.attempts]

    def n_c(self, view: str) -> tuple[int, int]:
        ends = self.counted()
        n = sum(not invalid(t.reason) for t in ends) if view == "valid" else len(ends)
        return n, sum(t.reason == "success" for t in ends)


def invalid(reason: str) -> bool:
    return reason.split("/")[0] in INVALID


def generated(seed: int) -> list[Task]:
    rng = random.Random(seed)
    tasks = []
    scored = rng.random() < 0.6
    for i in range(rng.randint(1, 7)):
        weight = rng.choice([1.0, 1.0, 2.0, 0.5])
        attempts = []
        all_invalid = rng.random() < 0.15
        for _ in range(rng.randint(1, 5)):
            tries = [Try(rng.choice(ENDS[5:]), rng.choice(COSTS), 1.0)
                     for _ in range(rng.choice([0, 0, 0, 1, 2]))]  # fmt: skip
            end = rng.choice(ENDS[5:] if all_invalid else ENDS)
            score = None if invalid(end) or not scored else rng.choice([None, 0.0, 0.25, 1.0])
            tries.append(Try(end, rng.choice(COSTS), rng.choice([None, 0.5, 2.0, 7.25]), score))
            attempts.append(tries)
        labels = tuple(sorted(rng.sample(["a", "b"], rng.randint(0, 2))))
        tasks.append(Task(f"t{i}", weight, attempts, labels))
    return tasks


def as_csv(tasks: list[Task]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["task_id", "attempt", "retry", "success", "terminal_reason", "weight",
                     "cost", "latency", "partial_score", "slice_labels"])  # fmt: skip
    for t in tasks:
        for attempt, tries in enumerate(t.attempts):
            for retry, x in enumerate(tries):
                writer.writerow([t.task_id, attempt, retry, str(x.reason == "success").lower(),
                                 x.reason, t.weight, "" if x.cost is None else x.cost,
                                 "" if x.latency is None else x.latency,
                                 "" if x.partial is None else x.partial,
                                 ";".join(t.labels)])  # fmt: skip
    return out.getvalue()


# --- the reference ---------------------------------------------------------------------------


def pass_at(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def pass_hat(n: int, c: int, k: int) -> Fraction:
    return Fraction(math.comb(c, k), math.comb(n, k))


def weighted(tasks: list[Task], view: str, value: Any) -> Fraction | None:
    """The weighted mean of *value*(n, c) over the tasks with a counted attempt in *view*."""
    used = [(Fraction(t.weight), *t.n_c(view)) for t in tasks if t.n_c(view)[0]]
    if not used:
        return None
    return sum((w * value(n, c) for w, n, c in used), Fraction(0)) / sum(w for w, _, _ in used)


def kmax(tasks: list[Task], view: str) -> int:
    return min((t.n_c(view)[0] for t in tasks if t.n_c(view)[0]), default=0)


def quantile(values: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default), by hand."""
    xs = sorted(values)
    h = (len(xs) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])


def spread(values: list[float | None]) -> dict[str, Any]:
    known = [v for v in values if v is not None]
    unknown = len(values) - len(known)
    if not known:
        return {"total": None if unknown else 0.0, "mean": None, "median": None, "p90": None,
                "unknown": unknown}  # fmt: skip
    total = sum(map(Fraction, known), Fraction(0))
    mean = float(total / len(known))
    middle, p90 = quantile(known, 0.5), quantile(known, 0.9)
    return {"total": float(total), "mean": mean, "median": middle, "p90": p90, "unknown": unknown}


def reference(tasks: list[Task]) -> dict[str, Any]:
    ends = [x for t in tasks for x in t.counted()]
    tries = [x for t in tasks for a in t.attempts for x in a]
    successes = sum(x.reason == "success" for x in ends)
    reasons = {r: sum(x.reason == r for x in ends) for r in sorted({x.reason for x in ends})}
    by_try: dict[str, int] = {}
    for x in tries:
        if invalid(x.reason):
            by_try[x.reason.split("/")[0]] = by_try.get(x.reason.split("/")[0], 0) + 1
    costs = [x.cost for x in ends]
    per_success = None
    if successes and None not in costs:
        per_success = float(sum(map(Fraction, costs), Fraction(0)) / successes)  # type: ignore[arg-type]
    return {
        "valid_attempts": sum(not invalid(x.reason) for x in ends),
        "invalid_attempts": sum(invalid(x.reason) for x in ends),
        "reasons": reasons,
        "tries": len(tries),
        "invalid_tries": sum(by_try.values()),
        "try_rates": {r: Fraction(n, len(tries)) for r, n in sorted(by_try.items())},
        "cost": spread(costs),
        "latency": spread([x.latency for x in ends]),
        "tries_cost": spread([x.cost for x in tries]),
        "per_success": per_success,
    }


# --- through the CLI -------------------------------------------------------------------------


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner(env={"COLUMNS": "400"}).invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def imported(tmp: Path, tasks: list[Task]) -> str:
    path = tmp / "rows.csv"
    path.write_text(as_csv(tasks), encoding="utf-8")
    code, out, err = cli("import-results", str(path), "--name", "g", "--store", str(tmp / "s.db"))
    assert code == 0, err
    return out.strip().splitlines()[-1].removeprefix("batch ")


def reports(tmp: Path, batch: str) -> tuple[dict[str, Any], str, str]:
    store = str(tmp / "s.db")
    code, out, err = cli("report", batch, "--json", "--store", store)
    assert code in (0, 3), err
    data = json.loads(out)
    code, text, err = cli("report", batch, "--store", store, "--html", str(tmp / "r.html"))
    assert code in (0, 3), err
    page = (tmp / "r.html").read_text(encoding="utf-8")
    page = re.sub(r"<(style|script)\b.*?</\1>", " ", page, flags=re.S)
    page = html.unescape(re.sub(r"<[^>]+>", " ", page))
    return data, re.sub(r"\s+", " ", text), re.sub(r"\s+", " ", page)


def close(got: float | None, want: float | None) -> bool:
    if got is None or want is None:
        return got is want
    return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)


SEEDS = range(40)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_printed_figure_matches_the_reference(tmp_path: Path, seed: int) -> None:
    tasks = generated(seed)
    ref = reference(tasks)
    data, text, page = reports(tmp_path, imported(tmp_path, tasks))

    # Counts, reasons and rates.
    assert data["valid_attempts"] == ref["valid_attempts"]
    assert data["invalid_attempts"] == ref["invalid_attempts"]
    assert data["terminal_reasons"] == ref["reasons"]
    assert data["tries"]["tries"] == ref["tries"]
    assert data["tries"]["invalid_tries"] == ref["invalid_tries"]
    for reason, rate in ref["try_rates"].items():
        assert data["tries"]["invalid_rate_by_reason"][reason] == pytest.approx(float(rate))
    assert (
        f"{ref['valid_attempts']} valid and {ref['invalid_attempts']} invalid attempts; "
        f"{ref['tries']} {'try' if ref['tries'] == 1 else 'tries'} in all" in text
    )
    counted = ref["valid_attempts"] + ref["invalid_attempts"]
    for reason, n in ref["reasons"].items():
        assert f"{reason} │ {n} │ {share(n / counted)}" in text
        assert f"{reason} {n} {share(n / counted)}" in page
    for reason, rate in ref["try_rates"].items():
        assert f"{reason} {share(float(rate))}" in text
    tried = share(ref["invalid_tries"] / ref["tries"])
    assert f"invalid tries {ref['invalid_tries']} ({tried})" in page

    # Cost and latency: a value not known is left out and counted apart, never 0.
    for name in ("cost", "latency"):
        got, want = data["summary"][name], ref[name]
        assert got["unknown"] == want["unknown"], name
        for field in ("total", "mean", "median", "p90"):
            assert close(got[field], want[field]), (name, field, got, want)
    assert close(data["summary"]["cost_per_success"], ref["per_success"])
    assert close(data["tries"]["cost"], ref["tries_cost"]["total"])
    assert data["tries"]["cost_unknown"] == ref["tries_cost"]["unknown"]
    cost = ref["cost"]

    def c4(v: float | None) -> str:
        return "n/a" if v is None else amount(v, 4)

    assert (
        f"cost per attempt: mean {c4(cost['mean'])}, median {c4(cost['median'])}, "
        f"p90 {c4(cost['p90'])}; per success {c4(ref['per_success'])}" in text
    )
    if cost["unknown"]:
        assert f"of {counted} counted attempts, {cost['unknown']} with no cost" in text
        assert f"Of {counted} counted attempts, {cost['unknown']} with no cost" in page

    # Suite values of both views, as each view prints them.
    for view, block in (("valid", data), ("strict", data["invalid_as_failure"])):
        rate = weighted(tasks, view, lambda n, c: Fraction(c, n))
        if rate is None:
            assert block["success_rate"] is None
            continue
        assert block["success_rate"]["estimate"] == pytest.approx(float(rate), abs=1e-12)
        for k in range(1, kmax(tasks, view) + 1):
            at = weighted(tasks, view, lambda n, c, k=k: pass_at(n, c, k))
            hat = weighted(tasks, view, lambda n, c, k=k: pass_hat(n, c, k))
            assert at is not None and hat is not None
            assert block["pass_at_k"][str(k)]["estimate"] == pytest.approx(float(at), abs=1e-12)
            assert block["pass_hat_k"][str(k)]["estimate"] == pytest.approx(float(hat), abs=1e-12)
            if view == "valid":
                row = f"│ {k} │ {fraction(float(at))} │"
                assert row in text, row
                assert f"{k} {fraction(float(at))} " in page
    valid = weighted(tasks, "valid", lambda n, c: Fraction(c, n))
    if valid is not None:
        assert f"pass^1 = {fraction(float(valid))} " in text
    strict = weighted(tasks, "strict", lambda n, c: Fraction(c, n))
    assert strict is not None
    if ref["invalid_attempts"]:
        assert f"· {fraction(float(strict))} " in text

    # The per-task tables: successes / valid attempts of each task, its invalid tries.
    for t in tasks:
        n, c = t.n_c("valid")
        bad = sum(invalid(x.reason) for a in t.attempts for x in a)
        assert re.search(rf"\b{t.task_id} +(?:[ab, ]+ +)?{c} / {n} +{bad}\b", text), t.task_id
        assert re.search(rf"\b{t.task_id}\b.*? {c} / {n} {bad} ", page), t.task_id


def partial(task: Task, view: str, rubrics: bool) -> Fraction | None:
    """Mean rubric score over the counted attempts that carry one; strict: each invalid one
    scores 0, and a task with invalid attempts and no scored valid one scores 0 where the
    batch has rubrics (until the twenty-fourth round: only one whose every attempt is invalid)."""
    ends = task.counted()
    scores = [Fraction(x.partial) for x in ends if not invalid(x.reason) and x.partial is not None]
    bad = sum(invalid(x.reason) for x in ends)
    if view == "valid":
        return sum(scores, Fraction(0)) / len(scores) if scores else None
    if scores or (bad and rubrics):
        return sum(scores, Fraction(0)) / (len(scores) + bad)
    return None


@pytest.mark.parametrize("seed", SEEDS)
def test_partial_scores_and_slices_print_the_reference(tmp_path: Path, seed: int) -> None:
    tasks = generated(seed)
    data, text, page = reports(tmp_path, imported(tmp_path, tasks))
    rubrics = any(x.partial is not None for t in tasks for x in t.counted())
    names = (("valid", "valid attempts", data), ("strict", "invalid = failure",
                                                  data["invalid_as_failure"]))  # fmt: skip
    for view, title, block in names:
        scored = [(p, Fraction(t.weight)) for t in tasks
                  if (p := partial(t, view, rubrics)) is not None]  # fmt: skip
        if not scored:
            assert block["partial_score"] is None
            continue
        mean = sum((p * w for p, w in scored), Fraction(0)) / sum(w for _, w in scored)
        assert block["partial_score"]["estimate"] == pytest.approx(float(mean), abs=1e-12)
        assert block["partial_score"]["n_tasks"] == len(scored)
        # its denominator: the attempts scored (strict: with the invalid ones, scored 0)
        attempts = 0
        for t in tasks:
            if partial(t, view, rubrics) is None:
                continue
            ends = t.counted()
            attempts += sum(not invalid(x.reason) and x.partial is not None for x in ends)
            attempts += sum(invalid(x.reason) for x in ends) if view == "strict" else 0
        assert block["partial_score"]["attempts"] == attempts
        assert re.search(rf"│ {title} │ {re.escape(fraction(float(mean)))} │ [^│]+│ [^│]+│ "
                         rf"{len(scored)} │ {attempts} │", text)  # fmt: skip

    # Slices: each label's tasks, and the horizon bucket "unknown" (every task here).
    slices = {("label", name): [t for t in tasks if name in t.labels]
              for name in sorted({x for t in tasks for x in t.labels})}  # fmt: skip
    slices[("horizon", "unknown")] = tasks
    for (by, name), members in slices.items():
        cells = []
        for view in ("valid", "strict"):
            used = [t for t in members if t.n_c(view)[0]]
            if not used:
                cells.append(None)
                continue
            rate = weighted(used, view, lambda n, c: Fraction(c, n))
            k = kmax(used, view)
            hat = weighted(used, view, lambda n, c, k=k: pass_hat(n, c, k))
            assert rate is not None and hat is not None
            attempts = sum(t.n_c(view)[0] for t in used)
            tasks_shown = str(len(members)) if len(used) == len(members) else (
                f"{len(used)} of {len(members)}")  # fmt: skip
            cells.append((tasks_shown, fraction(float(rate)), fraction(float(hat)), k, attempts))
        valid = cells[0]
        if valid is None:
            assert f"│ {by} │ {name} │" in text and "no valid attempts" in text
        else:
            shown, rate, hat, k, attempts = valid
            row = (rf"│ {by} +│ {name} +│ {shown} +│ {rate} +│ [^│]*│ {re.escape(hat)} [^│]*"
                   rf"\({k}\) +│ {attempts} +│")  # fmt: skip
            assert re.search(row, text), row
        for cell in cells:
            if cell is not None:
                shown, rate, hat, k, attempts = cell
                cell_text = rf"{shown} {re.escape(rate)} .*?{re.escape(hat)} .*?\({k}\) {attempts}"
                assert re.search(cell_text, page)


def test_the_per_task_tables_print_what_the_json_counts(tmp_path: Path) -> None:
    """A weight of 0.125 printed "0.12" in the HTML task table (1/3 as "0.33"), an unversioned
    task's revision "0" where the JSON says null, and a task that failed validation and ran
    (``invalid_task``) was listed in the text and HTML task tables like any counted task,
    though no figure counts it."""
    third = 1 / 3
    rows = ["task_id,attempt,success,terminal_reason,weight,invalid_task"]
    for i in range(5):
        w = (0.125, third, 1.0, 2.0, 1.0)[i]
        rows += [f"t{i},0,true,success,{w!r},false", f"t{i},1,{str(i % 2 == 0).lower()},"
                 f"{'success' if i % 2 == 0 else 'agent_failure/x'},{w!r},false"]  # fmt: skip
    rows += ["bad,0,true,success,1.0,true", "bad,1,true,success,1.0,true"]
    path = tmp_path / "rows.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    store = str(tmp_path / "s.db")
    code, out, err = cli("import-results", str(path), "--name", "w", "--store", store)
    assert code == 0, err
    data, text, page = reports(tmp_path, out.strip().splitlines()[-1].removeprefix("batch "))
    weights = {t["task_id"]: t["weight"] for t in data["tasks"]}
    assert weights["t0"] == 0.125 and weights["t1"] == third
    assert all(t["revision"] is None for t in data["tasks"])
    assert [t["task_id"] for t in data["invalid_tasks_results"]] == ["bad"]
    # Suite value from the printed weights and counts alone: the JSON's.
    printed = {"t0": (0.125, 2, 2), "t1": (third, 1, 2), "t2": (1.0, 2, 2), "t3": (2.0, 1, 2),
               "t4": (1.0, 2, 2)}  # fmt: skip
    for task, (w, c, n) in printed.items():
        said = re.escape(repr(w) if w in (0.125, third) else f"{w:.2f}")
        none = "\u2013 \u2013"  # no revision, no horizon
        assert re.search(rf"\b{task} {none} {said} {c} / {n} 0 ", page), task
    value = sum(Fraction(w) * Fraction(c, n) for w, c, n in printed.values()) / sum(
        Fraction(w) for w, _, _ in printed.values()
    )
    assert data["success_rate"]["estimate"] == pytest.approx(float(value), abs=1e-12)
    assert "bad (failed validation: in no figure)" in text
    assert "bad (failed validation: in no figure)" in page
    assert "0.12 " not in page.split("Tasks task", 1)[1].split("Runs", 1)[0]


@pytest.mark.parametrize("seed", range(12))
def test_the_text_prints_the_strict_views_figures_above_the_common_k(
    tmp_path: Path, seed: int
) -> None:
    """``report --k-over-supporting`` named the strict view's k above the common k in the
    text ("strict view, k=5*: over the tasks with at least 5 attempts") without a figure: the
    table shows the valid view's rows only. Each line now gives pass@k and pass^k over the
    tasks that support k, as the JSON does."""
    tasks = generated(seed)
    batch = imported(tmp_path, tasks)
    code, text, err = cli("report", batch, "--k-over-supporting", "--store", str(tmp_path / "s.db"))
    assert code in (0, 3), err
    text = re.sub(r"\s+", " ", text)
    top = max(t.n_c("strict")[0] for t in tasks)
    for k in range(kmax(tasks, "strict") + 1, top + 1):
        over = [t for t in tasks if t.n_c("strict")[0] >= k]
        at = weighted(over, "strict", lambda n, c, k=k: pass_at(n, c, k))
        hat = weighted(over, "strict", lambda n, c, k=k: pass_hat(n, c, k))
        assert at is not None and hat is not None
        attempts = sum(t.n_c("strict")[0] for t in over)
        assert f"strict view, k={k}*: over the tasks with at least {k} attempts" in text
        assert f": pass@{k} = {fraction(float(at))} " in text
        assert f", pass^{k} = {fraction(float(hat))} " in text
        tasks_said = f"{len(over)} task{'s' * (len(over) != 1)}, {attempts} attempts"
        assert tasks_said in text


def test_run_json_gives_the_denominators_and_limits_report_json_gives(tmp_path: Path) -> None:
    """``run --json`` printed pass@k and pass^k without the valid attempts they are over, the
    tasks that stop k, the attempts missing from the plan, or the partial score: a reader of
    the run's JSON could not check its figures. Now they are those of ``report --json``."""
    from .conftest import BANK, BANK_SYSTEM

    store = str(tmp_path / "s.db")
    code, out, err = cli("run", str(BANK), "--system", str(BANK_SYSTEM), "--attempts", "3",
                         "--json", "--store", store)  # fmt: skip
    assert code in (0, 3), err
    ran = json.loads(out)
    code, out, err = cli("report", ran["batch_id"], "--json", "--store", store)
    assert code in (0, 3), err
    reported = json.loads(out)
    for key in ("valid_attempts", "invalid_attempts", "k_limits", "missing_attempts",
                "partial_score", "success_rate", "pass_at_k", "pass_hat_k"):  # fmt: skip
        assert ran[key] == reported[key], key
    counted = [r for r in ran["runs"] if r["counted"]]
    valid = [r for r in counted if not invalid(r["terminal_reason"])]
    assert ran["valid_attempts"] == len(valid)
    assert ran["invalid_attempts"] == len(counted) - len(valid)


def said(estimate: dict[str, Any]) -> str:
    """An interval as every view prints it, from the JSON's ends."""
    from groundstate.report.numbers import interval

    if estimate["ci_low"] is None:
        return "n/a"
    text = interval(estimate["ci_low"], estimate["ci_high"])
    return text + (" bound" if estimate["method"] == "exact_bound" else "")


@pytest.mark.parametrize("seed", range(40, 60))
def test_the_text_and_html_print_the_json_intervals(tmp_path: Path, seed: int) -> None:
    """Each suite value's interval, in both views, and each pass@k and pass^k row: the text
    and the HTML print the JSON's ends (k = 1 shows the one interval of the success rate)."""
    tasks = generated(seed)
    data, text, page = reports(tmp_path, imported(tmp_path, tasks))
    views = (("valid attempts", data), ("invalid = failure", data["invalid_as_failure"]))
    for title, block in views:
        rate = block["success_rate"]
        if rate is None:
            continue
        assert f"│ {title} │ {fraction(rate['estimate'])} │ {said(rate)} │" in text
        assert f"{fraction(rate['estimate'])} {said(rate)}" in page
        one = (said(block["pass_at_k"]["1"]), said(block["pass_hat_k"]["1"]))
        assert one == (said(rate), said(rate))
    for k, at in data["pass_at_k"].items():
        hat = data["pass_hat_k"][k]
        row = (f"│ {k} │ {fraction(at['estimate'])} │ {said(at)} │ {fraction(hat['estimate'])} │ "
               f"{said(hat)} │ {at['n_tasks']} │")  # fmt: skip
        assert row in text, row
        assert (f"{k} {fraction(at['estimate'])} {said(at)} {fraction(hat['estimate'])} "
                f"{said(hat)} {at['n_tasks']} {at['attempts']}") in page  # fmt: skip


@pytest.mark.parametrize(("bad", "good"), [(1, 2400), (2400, 1)])
def test_the_share_of_invalid_tries_never_prints_as_none_or_all(
    tmp_path: Path, bad: int, good: int
) -> None:
    """One invalid try in 2,401 printed "0.0%" in the HTML's facts ("invalid tries 1 (0.0%)")
    where the text said "<0.1%", and 2,400 of 2,401 printed "100.0%" in the HTML and in the
    text's FLAGGED line: a share that is neither none nor all. Both now print it as every other
    share is printed, with more decimals only where it would print as the threshold."""
    rows = ["task_id,attempt,success,terminal_reason"]
    rows += [f"t{i % 7},{i // 7},false,environment_failure/setup" for i in range(bad)]
    rows += [f"u{i % 7},{i // 7},true,success" for i in range(good)]
    path = tmp_path / "rows.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    store = str(tmp_path / "s.db")
    code, out, err = cli("import-results", str(path), "--name", "s", "--store", store)
    assert code == 0, err
    data, text, page = reports(tmp_path, out.strip().splitlines()[-1].removeprefix("batch "))
    tries = data["tries"]
    assert (tries["tries"], tries["invalid_tries"]) == (bad + good, bad)
    said = share(bad / (bad + good))
    assert said in ("<0.1%", ">99.9%")
    assert f"invalid tries {bad} ({said})" in page
    assert f"environment_failure {said}" in text
    assert data["invalid_rate_flagged"] == (bad > good)
    if data["invalid_rate_flagged"]:
        # one wording in both (report.numbers.flagged_text, since the forty-fifth round)
        assert f"({bad} of {bad + good}: {said} > 10.0%)" in page
        assert f"({bad} of {bad + good}: {said} > 10.0%)" in text
    assert "(0.0%)" not in page and "100.0%" not in page.split("Runs", 1)[0]
