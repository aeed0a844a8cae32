"""Twenty-fourth round: an independent re-computation of every figure ``report --json`` and
``compare --json`` carry, on generated stores with awkward shapes, and the fix it found.

The class fixed: a figure of the strict view ("invalid = failure") lost the invalid attempts
it is defined to count. An invalid attempt scores 0 partial credit there, and a task whose
every attempt was invalid scored 0 (when the batch has rubrics), but a task with invalid
attempts and one valid attempt the file gave no score dropped out of the strict partial score
altogether: one more (valid, unscored) attempt took two zeros out of the mean. Five tasks,
four at 0.6 and one with three attempts (one unscored, two invalid), printed a strict partial
score of 0.600 over 4 tasks with no interval, the valid view's figure, where the definition
gives 0.480 over 5 tasks with an interval. ``compare``'s strict partial-score difference
dropped the same task.

The reference is plain Python written from the chapter (``shared/reference/
evaluating-agents.txt``) and docs/statistics.md alone: ``math.comb`` and ``Fraction`` for the
estimators, the documented interval rule re-implemented (Agresti-Coull on the effective n of
the CR1 SE, t quantile on T - 1 or Kish's df, the exact reach ``0.025^(1/T)`` or its weighted
form found by bisection, near agreement, along the curve, one value for the success rate,
pass@1 and pass^1; the paired t interval and p-value with the exact bound's floor; Newcombe's
square-and-add), scipy only for Student's t.
"""

from __future__ import annotations

import csv
import json
import math
import random
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from scipy import stats as scipy_stats

from groundstate.cli import main
from groundstate.stats import Outcome, compare, summarize, task_counts

INVALID = ("environment_failure", "grader_failure")
TOL = 1e-9

# --- the reference ----------------------------------------------------------------------------


def is_invalid(reason: str) -> bool:
    return reason.split("/")[0] in INVALID


def ref_at(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def ref_hat(n: int, c: int, k: int) -> Fraction:
    return Fraction(math.comb(c, k), math.comb(n, k))


def ref_reach(weights: list[float]) -> float:
    """The exact one-sided reach: the smallest weighted mean of task means m_i in [0, 1]
    at which every task can be at the top with chance 0.025. The chance is largest with
    m_i = min(1, t / w_i) (Lagrange), so bisect on t; 0.025^(1/T) with equal weights."""
    lo, hi = 0.0, max(weights)
    for _ in range(200):
        mid = (lo + hi) / 2
        if math.prod(min(1.0, mid / w) for w in weights) < 0.025:
            lo = mid
        else:
            hi = mid
    return sum(w * min(1.0, hi / w) for w in weights) / sum(weights)


def ref_top_chance(weights: list[float], mean: float) -> float:
    """The largest chance that every task is at the top at weighted mean *mean*."""
    lo, hi = 0.0, max(weights)
    for _ in range(200):
        mid = (lo + hi) / 2
        if sum(w * min(1.0, mid / w) for w in weights) / sum(weights) < mean:
            lo = mid
        else:
            hi = mid
    return math.prod(min(1.0, hi / w) for w in weights)


def ref_df(weights: list[float]) -> float:
    tasks = len(weights)
    effective = math.fsum(weights) ** 2 / math.fsum(w * w for w in weights)
    return tasks - 1 if effective >= tasks - 1e-9 else effective - 1


Level = tuple[float, float | None, float | None]


def ref_level(values: list[float], weights: list[float] | None = None) -> Level:
    """(estimate, low, high) of a weighted mean of values in [0, 1] under the level rule."""
    w = weights or [1.0] * len(values)
    tasks, total = len(values), math.fsum(w)
    mean = math.fsum(v * x for v, x in zip(values, w, strict=True)) / total
    if tasks < 5:
        return mean, None, None
    reach = ref_reach(w)
    if max(values) - min(values) <= 1e-12:
        v = values[0]
        return mean, v * reach, 1 - (1 - v) * reach
    spread = math.fsum(x * x * (v - mean) ** 2 for v, x in zip(values, w, strict=True))
    se = math.sqrt(spread) / total * math.sqrt(tasks / (tasks - 1))
    q = float(scipy_stats.t.ppf(0.975, ref_df(w)))
    n_eff = mean * (1 - mean) / se**2
    centre = (mean * n_eff + q * q / 2) / (n_eff + q * q)
    half = q * math.sqrt(centre * (1 - centre) / (n_eff + q * q))
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    return mean, min(low, max(values) * reach), max(high, 1 - (1 - min(values)) * reach)


def ref_curves(ns: list[int], cs: list[int], kmax: int, weights: list[float] | None = None
               ) -> dict[tuple[str, int], Level]:  # fmt: skip
    """Success rate, pass@k and pass^k for k = 1..kmax: each k's rule, then along the curve
    (pass@k's lower end the lowest at k or above, pass^k's upper end the highest), then one
    interval for the success rate, pass@1 and pass^1 (the widest ends of the three)."""
    raw: dict[tuple[str, int], Level] = {
        ("rate", 0): ref_level([c / n for n, c in zip(ns, cs, strict=True)], weights)
    }
    for k in range(1, kmax + 1):
        for name, f in (("at", ref_at), ("hat", ref_hat)):
            values = [float(f(n, c, k)) for n, c in zip(ns, cs, strict=True)]
            raw[name, k] = ref_level(values, weights)
    if raw["rate", 0][1] is None:
        return raw
    out = dict(raw)
    for k in range(1, kmax + 1):
        est, low, high = raw["at", k]
        out["at", k] = (est, min(raw["at", j][1] for j in range(k, kmax + 1)), high)  # type: ignore[type-var]
        est, low, high = raw["hat", k]
        out["hat", k] = (est, low, max(raw["hat", j][2] for j in range(k, kmax + 1)))  # type: ignore[type-var]
    trio = [out["rate", 0], out["at", 1], out["hat", 1]]
    low = min(x[1] for x in trio)  # type: ignore[type-var]
    high = max(x[2] for x in trio)  # type: ignore[type-var]
    for key in (("rate", 0), ("at", 1), ("hat", 1)):
        out[key] = (out[key][0], low, high)
    return out


def ref_paired(ds: list[float], weights: list[float]) -> tuple[float, Any, Any, Any]:
    """(estimate, low, high, p) of a paired difference b - a."""
    tasks, total = len(ds), math.fsum(weights)
    mean = math.fsum(d * w for d, w in zip(ds, weights, strict=True)) / total
    if tasks < 5:
        return mean, None, None, None
    reach = ref_reach(weights)
    if max(ds) - min(ds) <= 1e-12:
        v = ds[0]
        p = min(1.0, 2 * ref_top_chance(weights, 1 / (1 + abs(v))))
        return mean, -1 + (v + 1) * reach, 1 - (1 - v) * reach, p
    spread = math.fsum(w * w * (d - mean) ** 2 for d, w in zip(ds, weights, strict=True))
    se = math.sqrt(spread) / total * math.sqrt(tasks / (tasks - 1))
    df = ref_df(weights)
    q = float(scipy_stats.t.ppf(0.975, df))
    low = min(max(-1.0, mean - q * se), -1 + (1 + max(ds)) * reach)
    high = max(min(1.0, mean + q * se), 1 - (1 - min(ds)) * reach)
    p = 2 * float(scipy_stats.t.sf(abs(mean / se), df))
    far = max(ds) if mean > 0 else -min(ds) if mean < 0 else None
    if far is not None:
        p = max(p, min(1.0, 2 * ref_top_chance(weights, 1 / (1 + far))))
    return mean, low, high, p


def ref_partials(rows: list[Row], view: str) -> dict[str, float]:
    """Each task's partial score: the mean over its counted valid attempts carrying a score;
    in the strict view its invalid attempts score 0 too, whenever the batch has rubrics."""
    rubrics = any(not is_invalid(r.end) and r.score is not None for r in rows)
    found = {}
    for task in sorted({r.task for r in rows}):
        mine = [r for r in rows if r.task == task]
        scores = [r.score for r in mine if not is_invalid(r.end) and r.score is not None]
        bad = sum(is_invalid(r.end) for r in mine)
        if view == "strict" and rubrics:
            scores += [0.0] * bad
        if scores:
            found[task] = math.fsum(scores) / len(scores)  # type: ignore[arg-type]
    return found


# --- stores through the CLI -------------------------------------------------------------------


class Row:
    def __init__(self, task: str, attempt: int, end: str, weight: float = 1.0,
                 score: float | None = None) -> None:  # fmt: skip
        self.task, self.attempt, self.end, self.weight, self.score = (
            task, attempt, end, weight, score
        )  # fmt: skip


def counts(rows: list[Row], view: str) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    for r in rows:
        n, c = found.get(r.task, (0, 0))
        counted = view == "strict" or not is_invalid(r.end)
        found[r.task] = (n + counted, c + (r.end == "success"))
    return {t: nc for t, nc in found.items() if nc[0] > 0}


def generated(rng: random.Random, tasks: int, attempts: list[int], kind: str,
              prefix: str = "t", weights: tuple[float, ...] = (1.0,)) -> list[Row]:  # fmt: skip
    rows = []
    for t in range(tasks):
        chance = {
            "all-pass": 1.0,
            "all-fail": 0.0,
            "high": rng.betavariate(20, 1),
            "mixed": rng.choice([0.0, 1.0, rng.random(), 0.9]),
        }.get(kind, rng.random())
        weight = rng.choice(weights)
        for attempt in range(rng.choice(attempts)):
            if rng.random() < 0.08:
                end = rng.choice(["environment_failure/setup", "grader_failure"])
            else:
                end = "success" if rng.random() < chance else "agent_failure/step_limit"
            rows.append(Row(f"{prefix}{t:03d}", attempt, end, weight))
    return rows


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def imported(tmp: Path, rows: list[Row], name: str) -> str:
    path = tmp / f"{name}.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["task_id", "attempt", "success", "terminal_reason", "weight",
                         "partial_score"])  # fmt: skip
        for r in rows:
            score = "" if r.score is None else r.score
            writer.writerow([r.task, r.attempt, str(r.end == "success").lower(), r.end,
                             r.weight, score])  # fmt: skip
    code, out, err = cli("import-results", str(path), "--name", "s", "--store", str(tmp / "s.db"))
    assert code == 0, err
    return out.strip().splitlines()[-1].removeprefix("batch ")


def as_json(tmp: Path, *args: str) -> dict[str, Any]:
    code, out, err = cli(*args, "--json", "--store", str(tmp / "s.db"))
    assert code in (0, 3), err  # 3: invalid tries flagged; the figures are still printed
    found: dict[str, Any] = json.loads(out)
    return found


def mismatches(got: dict[str, Any], want: Level, what: str) -> list[str]:
    est, low, high = want
    found = []
    if abs(got["estimate"] - est) > TOL:
        found.append(f"{what}: estimate {got['estimate']} != {est}")
    for key, value in (("ci_low", low), ("ci_high", high)):
        mine = got[key]
        if (mine is None) != (value is None) or (
            mine is not None and value is not None and abs(mine - value) > TOL
        ):
            found.append(f"{what}: {key} {mine} != {value} ({got['note']})")
    return found


def report_mismatches(report: dict[str, Any], rows: list[Row]) -> list[str]:
    """Every suite value of both views (and beyond the common k) against the reference."""
    found: list[str] = []
    weight = {r.task: r.weight for r in rows}
    for view in ("valid", "strict"):
        summary = report["summary"]["views"][view]
        nc = counts(rows, view)
        ids = sorted(nc)
        ns, cs, ws = [nc[t][0] for t in ids], [nc[t][1] for t in ids], [weight[t] for t in ids]
        kmax = min(ns)
        assert summary["kmax"] == kmax and summary["n_tasks"] == len(ids), view
        assert list(summary["excluded_tasks"]) == sorted({r.task for r in rows} - set(ids)), view
        ref = ref_curves(ns, cs, kmax, ws)
        found += mismatches(summary["success_rate"], ref["rate", 0], f"{view} rate")
        for k in range(1, kmax + 1):
            for metric, name in (("pass_at_k", "at"), ("pass_hat_k", "hat")):
                got = summary[metric][str(k)]
                found += mismatches(got, ref[name, k], f"{view} {metric}[{k}]")
                assert (got["n_tasks"], got["attempts"]) == (len(ids), sum(ns))
                assert (got["min_n"], got["max_n"]) == (min(ns), max(ns))
        for k_text, beyond in summary["beyond_k"].items():
            k = int(k_text)
            keep = [i for i, n in enumerate(ns) if n >= k]
            assert list(beyond["excluded_tasks"]) == [ids[i] for i in range(len(ids)) if ns[i] < k]
            for metric, f in (("pass_at_k", ref_at), ("pass_hat_k", ref_hat)):
                values = [float(f(ns[i], cs[i], k)) for i in keep]
                got = beyond[metric]
                found += mismatches(got, ref_level(values, [ws[i] for i in keep]),
                                    f"{view} beyond {metric}[{k}]")  # fmt: skip
                assert got["n_tasks"] == len(keep) and got["attempts"] == sum(ns[i] for i in keep)
    return found


# --- the fix: the strict partial score counts every invalid attempt ---------------------------


def _one_unscored_task() -> list[Row]:
    rows = []
    for t in range(1, 5):
        rows += [Row(f"t{t}", 0, "success", score=0.8),
                 Row(f"t{t}", 1, "agent_failure/x", score=0.4)]  # fmt: skip
    return [
        *rows,
        Row("t5", 0, "agent_failure/x"),  # valid, no score
        Row("t5", 1, "environment_failure/x"),
        Row("t5", 2, "environment_failure/x"),
    ]


def test_strict_partial_score_keeps_a_task_with_an_unscored_valid_attempt(tmp_path: Path) -> None:
    """Fails on the old code: the strict view gave 0.600 over 4 tasks (no interval), the
    valid view's figure, where t5's two invalid attempts score 0: 0.480 over 5 tasks."""
    rows = _one_unscored_task()
    got = as_json(tmp_path, "report", imported(tmp_path, rows, "a"))
    valid, strict = got["partial_score"], got["invalid_as_failure"]["partial_score"]
    assert (valid["estimate"], valid["n_tasks"]) == (pytest.approx(0.6), 4)
    assert (strict["estimate"], strict["n_tasks"]) == (pytest.approx(0.48), 5)
    assert strict["attempts"] == 10  # 4 x 2 scored, t5's 2 invalid
    want = ref_level(list(ref_partials(rows, "strict").values()))
    assert mismatches(strict, want, "strict partial") == []
    t5 = next(t for t in got["tasks"] if t["task_id"] == "t5")
    assert t5["strict"]["partial"] == 0.0 and t5["strict"]["scored"] == 2
    assert t5["valid"]["partial"] is None and t5["valid"]["scored"] == 0


def test_strict_partial_score_prints_the_same_in_text_and_html(tmp_path: Path) -> None:
    """Fails on the old code: the text and page showed 0.600 and n/a for the strict view."""
    batch = imported(tmp_path, _one_unscored_task(), "a")
    page = tmp_path / "r.html"
    code, out, err = cli("report", batch, "--store", str(tmp_path / "s.db"), "--html", str(page))
    assert code == 0, err
    strict = [line for line in out.splitlines() if "invalid = failure" in line]
    assert any("0.480" in line and "[0.208, 0.764]" in line for line in strict), strict
    html = re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8"))
    assert "0.480" in html and "[0.208, 0.764]" in html


def test_one_more_valid_attempt_never_removes_a_tasks_invalid_zeros() -> None:
    """Fails on the old code: three invalid attempts scored 0 in the strict view, but one
    more (valid, unscored) attempt took the task out of the strict partial score."""
    scored = [Outcome(f"s{i}", 0, True, partial_score=0.5) for i in range(4)]
    invalid = [Outcome("x", j, False, valid=False, terminal_reason="grader_failure")
               for j in range(3)]  # fmt: skip
    before = {t.task_id: t for t in task_counts(scored + invalid, "strict")}
    after = {t.task_id: t for t in task_counts(
        [*scored, *invalid, Outcome("x", 3, False, terminal_reason="agent_failure/x")], "strict"
    )}  # fmt: skip
    assert before["x"].partial == 0.0 and before["x"].scored == 3
    assert after["x"].partial == 0.0 and after["x"].scored == 3
    assert {t.task_id: t.partial for t in task_counts(scored + invalid, "valid")}["x"] is None


def test_no_rubric_anywhere_gives_no_partial_score_in_either_view() -> None:
    """Control: invalid attempts alone never create a partial score."""
    outcomes = [Outcome(f"t{i}", j, j == 0, valid=j != 2,
                        terminal_reason="success" if j == 0 else
                        ("environment_failure" if j == 2 else "agent_failure/x"))
                for i in range(6) for j in range(3)]  # fmt: skip
    for view in summarize(outcomes, n_boot=0).views.values():
        assert view.partial_score is None


@pytest.mark.parametrize("seed", range(6))
def test_partial_scores_of_generated_batches_match_the_reference(tmp_path: Path, seed: int) -> None:
    """Fails on the old code for seeds with a task whose valid attempts are unscored beside
    invalid ones: every partial score of both views, with its interval, re-computed."""
    rng = random.Random(seed)
    rows = []
    for t in range(rng.choice([6, 8, 12])):
        base = rng.choice([1.0, 0.0, 0.95, rng.random()])
        unscored = t % 3 == 0
        for attempt in range(rng.choice([2, 3, 4])):
            bad = attempt > 0 and rng.random() < 0.3
            end = (
                "grader_failure"
                if bad
                else ("success" if rng.random() < base else "agent_failure/x")
            )
            near = min(1.0, max(0.0, base + rng.uniform(-0.1, 0.1)))
            score = None if bad or unscored else round(near, 3)
            rows.append(Row(f"t{t:02d}", attempt, end, score=score))
    got = as_json(tmp_path, "report", imported(tmp_path, rows, "a"))
    for view in ("valid", "strict"):
        block = got["summary"]["views"][view]["partial_score"]
        per_task = ref_partials(rows, view)
        assert block["n_tasks"] == len(per_task), view
        assert mismatches(block, ref_level(list(per_task.values())), view) == []


def test_compare_strict_partial_difference_keeps_the_task(tmp_path: Path) -> None:
    """Fails on the old code: the strict view's paired partial-score difference dropped the
    task whose valid attempts were unscored on one side (5 tasks paired where 6 are)."""
    rng = random.Random(3)
    a, b = [], []
    for t in range(6):
        for attempt in range(2):
            a.append(Outcome(f"t{t}", attempt, True, partial_score=round(rng.random(), 2)))
            b.append(Outcome(f"t{t}", attempt, True, partial_score=round(rng.random(), 2)))
    b[-1] = Outcome("t5", 1, False, valid=False, terminal_reason="environment_failure")
    b[-2] = Outcome("t5", 0, False, terminal_reason="agent_failure/x")  # valid, unscored
    found = compare(a, b, n_boot=0)
    for view, tasks in (("valid", 5), ("strict", 6)):
        d = found.find("partial_score", view).difference
        assert d.n_tasks == tasks, view
        rows_a = [Row(o.task_id, o.attempt, o.terminal_reason, score=o.partial_score) for o in a]
        rows_b = [Row(o.task_id, o.attempt, o.terminal_reason, score=o.partial_score) for o in b]
        pa, pb = ref_partials(rows_a, view), ref_partials(rows_b, view)
        shared = sorted(set(pa) & set(pb))
        want = ref_paired([pb[t] - pa[t] for t in shared], [1.0] * len(shared))
        got = (d.estimate, d.ci_low, d.ci_high, found.find("partial_score", view).p_value)
        assert got == pytest.approx(want, abs=TOL), view


# --- controls: report --json re-computed on awkward shapes -------------------------------------


SHAPES = [
    # (tasks, attempts per task, population, weights)
    (1, [1], "uniform", (1.0,)),  # one task, one attempt
    (2, [3], "all-pass", (1.0,)),
    (5, [4], "all-pass", (1.0,)),  # n/n everywhere: the exact one-sided bound
    (6, [3], "all-fail", (1.0,)),  # 0/n everywhere
    (7, [2, 2], "mixed", (1.0,)),  # ties
    (10, [1, 2, 3, 4], "mixed", (1.0,)),  # uneven attempts, k above some tasks' n
    (12, [3, 5, 8], "high", (1.0,)),
    (9, [2, 4, 6], "uniform", (0.5, 1.0, 3.0, 10.0)),  # weights: Kish df, weighted reach
    (500, [1, 2, 3, 4], "uniform", (1.0,)),
]


@pytest.mark.parametrize(("tasks", "attempts", "kind", "weights"), SHAPES)
def test_report_json_recomputed(
    tmp_path: Path, tasks: int, attempts: list[int], kind: str, weights: tuple[float, ...]
) -> None:
    """Control: every suite value and interval of both views, at every k and beyond the
    common k (each over the tasks with at least k attempts, the rest named)."""
    rows = generated(random.Random(tasks), tasks, attempts, kind, weights=weights)
    got = as_json(tmp_path, "report", imported(tmp_path, rows, "a"), "--k-over-supporting")
    assert report_mismatches(got, rows) == []
    assert got["valid_attempts"] == sum(not is_invalid(r.end) for r in rows)
    assert got["invalid_attempts"] == sum(is_invalid(r.end) for r in rows)


def test_all_pass_and_all_fail_batches_get_the_exact_bounds(tmp_path: Path) -> None:
    """Control: n/n on every task of T gives [0.025^(1/T), 1], 0/n gives [0, 1 - that]."""
    for kind, tasks in (("all-pass", 8), ("all-fail", 12)):
        rows = [r for r in generated(random.Random(1), tasks, [4], kind) if not is_invalid(r.end)]
        summary = as_json(tmp_path, "report", imported(tmp_path, rows, kind))["success_rate"]
        reach = 0.025 ** (1 / tasks)
        want = (1.0, reach, 1.0) if kind == "all-pass" else (0.0, 0.0, 1 - reach)
        got = (summary["estimate"], summary["ci_low"], summary["ci_high"])
        assert got == pytest.approx(want, abs=1e-12) and summary["method"] == "exact_bound"


@pytest.mark.parametrize("seed", range(4))
def test_paired_compare_json_recomputed(tmp_path: Path, seed: int) -> None:
    """Control: every paired difference of both views (estimate, interval, p-value), with
    weights, uneven attempts, invalid attempts and ties."""
    rng = random.Random(seed)
    tasks = rng.choice([5, 7, 10, 20])
    weights = ((1.0,), (0.5, 1.0, 4.0))[seed % 2]
    a = generated(rng, tasks, [1, 2, 3], rng.choice(["mixed", "uniform", "high"]), weights=weights)
    weight = {r.task: r.weight for r in a}
    kind_b = rng.choice(["mixed", "all-pass", "uniform"])
    b = [
        Row(r.task, r.attempt, r.end, weight[r.task]) for r in generated(rng, tasks, [2, 3], kind_b)
    ]
    got = as_json(tmp_path, "compare", imported(tmp_path, a, "a"), imported(tmp_path, b, "b"))
    assert got["mode"] == "paired"
    for view in ("valid", "strict"):
        ca, cb = counts(a, view), counts(b, view)
        shared = sorted(set(ca) & set(cb))
        for name, metric in got["metrics"][view].items():
            if name == "success_rate":
                f = lambda n, c: Fraction(c, n)  # noqa: E731
            else:
                kind, k = name.rsplit("_", 1)
                f = (lambda n, c, k=int(k), g=ref_at if kind == "pass_at" else ref_hat:  # noqa: E731
                     g(n, c, k))  # fmt: skip
            ds = [float(f(*cb[t]) - f(*ca[t])) for t in shared]
            want = ref_paired(ds, [weight[t] for t in shared])
            d = metric["difference"]
            found = (d["estimate"], d["ci_low"], d["ci_high"], metric["p_value"])
            for mine, theirs in zip(found, want, strict=True):
                assert (mine is None) == (theirs is None), (view, name)
                assert mine is None or mine == pytest.approx(theirs, rel=1e-7, abs=1e-9), (
                    view,
                    name,
                )


@pytest.mark.parametrize("seed", range(4))
def test_unpaired_compare_is_the_square_and_add_of_the_sides_shown(
    tmp_path: Path, seed: int
) -> None:
    """Control: disjoint batches: each difference's interval is Newcombe's square-and-add
    of the two sides' printed intervals, and its p-value is below 0.05 exactly when that
    interval excludes 0."""
    rng = random.Random(seed)
    a = generated(rng, rng.choice([5, 6, 10]), [1, 2, 3], rng.choice(["all-pass", "mixed", "high"]))
    b = generated(rng, rng.choice([5, 8]), [2, 4], rng.choice(["uniform", "all-fail"]), prefix="u")
    got = as_json(tmp_path, "compare", imported(tmp_path, a, "a"), imported(tmp_path, b, "b"))
    assert got["mode"] == "unpaired"
    for view in ("valid", "strict"):
        for name, metric in got["metrics"][view].items():
            sa, sb, d = metric["a"], metric["b"], metric["difference"]
            if sa["ci_low"] is None or sb["ci_low"] is None:
                assert d["ci_low"] is None, (view, name)
                continue
            est = sb["estimate"] - sa["estimate"]
            low = est - math.hypot(sb["estimate"] - sb["ci_low"], sa["ci_high"] - sa["estimate"])
            high = est + math.hypot(sb["ci_high"] - sb["estimate"], sa["estimate"] - sa["ci_low"])
            assert (d["estimate"], d["ci_low"], d["ci_high"]) == pytest.approx(
                (est, max(-1.0, low), min(1.0, high)), abs=TOL
            ), (view, name)
            excludes = d["ci_low"] > 0 or d["ci_high"] < 0
            assert (metric["p_value"] < 0.05) == excludes, (view, name)


def test_level_rule_covers_in_a_seeded_simulation() -> None:
    """Control: the documented rule's 95% interval holds the population's mean success rate
    and pass^2 in at least 93% of 300 seeded suites of 10 tasks x 4 attempts, for a middle
    population, one near 1, and one at exactly 1 (n/n: the exact bound must always hold 1)."""
    rng = random.Random(24)
    populations = {
        "beta(2,2)": lambda: rng.betavariate(2, 2),
        "beta(20,1)": lambda: rng.betavariate(20, 1),
        "one": lambda: 1.0,
    }
    for name, draw in populations.items():
        held = {"rate": 0, "hat2": 0}
        truth = {"rate": 0.0, "hat2": 0.0}
        if name == "beta(2,2)":  # E[p] = 0.5, E[p^2] = Var + mean^2 = 0.05 + 0.25
            truth = {"rate": 0.5, "hat2": 0.3}
        elif name == "beta(20,1)":  # E[p] = 20/21, E[p^2] = 20/22
            truth = {"rate": 20 / 21, "hat2": 20 / 22}
        else:
            truth = {"rate": 1.0, "hat2": 1.0}
        suites = 300
        for _ in range(suites):
            outcomes = []
            for t in range(10):
                p = draw()
                outcomes += [Outcome(f"t{t}", j, rng.random() < p) for j in range(4)]
            view = summarize(outcomes, n_boot=0).views["valid"]
            for key, est in (("rate", view.success_rate), ("hat2", view.pass_hat_k[2])):
                assert est is not None and est.ci_low is not None and est.ci_high is not None
                held[key] += est.ci_low <= truth[key] <= est.ci_high
        for key, count in held.items():
            assert count / suites >= (1.0 if name == "one" else 0.93), (name, key, count)


def test_slices_recomputed(tmp_path: Path) -> None:
    """Control: each label slice's success rate and pass^k (its own common k, along its curve,
    one value at k = 1) over the slice's counted tasks."""
    rng = random.Random(5)
    path = tmp_path / "s.csv"
    labels: dict[str, list[str]] = {}
    rows = generated(rng, 14, [1, 2, 3, 5], "mixed")
    for r in rows:
        labels.setdefault(
            r.task, sorted(rng.sample(["a", "b", "c"], 1 + sum(map(ord, r.task)) % 2))
        )
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["task_id", "attempt", "success", "terminal_reason", "slice_labels"])
        for r in rows:
            writer.writerow([r.task, r.attempt, str(r.end == "success").lower(), r.end,
                             ";".join(labels[r.task])])  # fmt: skip
    code, _, err = cli(
        "import-results", str(path), "--name", "s", "--store", str(tmp_path / "s.db")
    )
    assert code == 0, err
    got = as_json(tmp_path, "report")
    for view in ("valid", "strict"):
        nc = counts(rows, view)
        for label, block in got["summary"]["views"][view]["by_label"].items():
            members = sorted(t for t in labels if label in labels[t])
            assert block["n_tasks"] == len(members)
            used = [t for t in members if t in nc]
            ns, cs = [nc[t][0] for t in used], [nc[t][1] for t in used]
            kmax = min(ns)
            assert block["kmax"] == kmax
            ref = ref_curves(ns, cs, kmax)
            assert mismatches(block["success_rate"], ref["rate", 0], label) == []
            for k in range(1, kmax + 1):
                assert mismatches(block["pass_hat_k"][str(k)], ref["hat", k], label) == []


def test_summaries_of_many_shapes_match_the_reference() -> None:
    """Control: 60 seeded batches through the library (5 to 40 tasks, 1 to 12 attempts,
    invalid attempts, tasks at 0, 1, 0.01 and 0.99, weights 1e-3 to 7): every suite value and
    interval of both views, at every k up to the common k and beyond it."""
    for seed in range(60):
        rng = random.Random(seed)
        weights = rng.choice([(1.0,), (1.0, 2.0), (0.1, 1.0, 7.0), (1e-3, 1.0)])
        rows = []
        for t in range(rng.choice([5, 6, 9, 15, 40])):
            weight, chance = rng.choice(weights), rng.choice([0, 1, rng.random(), 0.99, 0.01])
            for attempt in range(rng.choice([1, 2, 3, 5, 8, 12])):
                end = (
                    "grader_failure"
                    if rng.random() < 0.1
                    else ("success" if rng.random() < chance else "agent_failure/x")
                )
                rows.append(Row(f"t{t:02d}", attempt, end, weight))
        outcomes = [
            Outcome(r.task, r.attempt, r.end == "success", valid=not is_invalid(r.end),
                    terminal_reason=r.end, weight=r.weight)
            for r in rows
        ]  # fmt: skip
        summary = summarize(outcomes, n_boot=0, k_over_supporting=True).to_dict()
        report = {"summary": json.loads(json.dumps(summary))}  # keys as in the JSON
        assert report_mismatches(report, rows) == [], seed


@pytest.mark.parametrize("seed", range(3))
def test_bootstrap_second_opinion_is_where_and_what_the_docs_say(tmp_path: Path, seed: int) -> None:
    """Control: the percentile bootstrap ends lie within the task values; they are null where
    the rule gives an exact bound or n/a, present at k = 1, 2, 3, 5, 10 and the common k where
    the rule has a spread, and one for the success rate, pass@1 and pass^1 (one value)."""
    rng = random.Random(seed)
    rows = generated(rng, rng.choice([6, 12, 30]), [2, 4, 6], rng.choice(["mixed", "uniform"]))
    got = as_json(tmp_path, "report", imported(tmp_path, rows, "a"))
    for view in ("valid", "strict"):
        summary = got["summary"]["views"][view]
        nc = counts(rows, view)
        ns, cs = [n for n, _ in nc.values()], [c for _, c in nc.values()]
        trio = [summary["success_rate"], summary["pass_at_k"]["1"], summary["pass_hat_k"]["1"]]
        assert len({(e["boot_low"], e["boot_high"]) for e in trio}) == 1, view
        kmax = summary["kmax"]
        for k in range(1, kmax + 1):
            for metric, f in (("pass_at_k", ref_at), ("pass_hat_k", ref_hat)):
                e = summary[metric][str(k)]
                values = [float(f(n, c, k)) for n, c in zip(ns, cs, strict=True)]
                if e["method"] in ("exact_bound", "none"):
                    assert e["boot_low"] is None and e["boot_high"] is None, (view, metric, k)
                elif k in (1, 2, 3, 5, 10, kmax):
                    assert e["boot_low"] is not None, (view, metric, k)
                if e["boot_low"] is not None:
                    assert min(values) - 1e-6 <= e["boot_low"] <= e["boot_high"]
                    assert e["boot_high"] <= max(values) + 1e-6
