"""Twenty-third round: the same value is the same float on every route, and an outside
re-computation of ``report --json``, ``compare --json`` and ``plan --json`` on generated batches.

The class fixed: one value reached by two routes came out as two floats.

- ``pass_at_k`` / ``pass_hat_k`` (the library's scalar estimators) rounded the exact rational
  to the nearest float, so pass@60 of 600 successes in 1,200 attempts (1 - 1e-181) was 1.0 and
  pass^590 (below the smallest float) 0.0, while the reports' curves (``pass_curves``) keep a
  value strictly between 0 and 1 one ulp inside (``0.9999999999999999``, ``5e-324``): the
  library claimed a certainty the report denied, for the same counts.
- pass@1 is c/n, as pass^1 and the success rate are, but the curve computed it as
  1 - exp(log(1 - c/n)): 0.24999999999999997 for one success in four attempts. A report gave
  the success rate 0.25 and pass@1 0.24999999999999997 (interval ends a few ulps apart too),
  and ``compare`` gave the success rate's and pass@1's differences different t statistics
  and p-values, where the docs say they are one value.

The reference is plain Python (``math.comb``, ``Fraction``; scipy, already a dependency, only
for the t and noncentral t distributions and Fisher's exact test), written from the chapter
(``shared/reference/evaluating-agents.txt``) and docs/statistics.md alone.
"""

from __future__ import annotations

import csv
import json
import math
import random
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from groundstate.cli import main
from groundstate.stats import Outcome, pass_at_k, pass_curves, pass_hat_k, summarize

SMALLEST = math.nextafter(0.0, 1.0)
BELOW_ONE = math.nextafter(1.0, 0.0)
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


# --- the reference ----------------------------------------------------------------------------


def ref_at(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def ref_hat(n: int, c: int, k: int) -> Fraction:
    return Fraction(math.comb(c, k), math.comb(n, k))


def ref_float(value: Fraction) -> float:
    """The documented float of a value in [0, 1]: the nearest, except that a value strictly
    between 0 and 1 is never given as 0.0 or 1.0 (one ulp inside instead)."""
    if 0 < value < 1:
        return min(max(float(value), SMALLEST), BELOW_ONE)
    return float(value)


def is_invalid(reason: str) -> bool:
    return reason.split("/")[0] in INVALID


@dataclass
class Task:
    task_id: str
    weight: float
    ends: list[str]
    """The counted end of each attempt, in attempt order."""

    def n_c(self, view: str) -> tuple[int, int]:
        n = len(self.ends) if view == "strict" else sum(not is_invalid(e) for e in self.ends)
        return n, sum(e == "success" for e in self.ends)


def ref_value(metric: str, n: int, c: int, k: int | None) -> Fraction:
    if metric == "success_rate":
        return Fraction(c, n)
    assert k is not None
    return ref_at(n, c, k) if metric == "pass_at_k" else ref_hat(n, c, k)


def ref_mean(values: list[Fraction], weights: list[float]) -> Fraction:
    w = [Fraction(x) for x in weights]
    return sum((v * x for v, x in zip(values, w, strict=True)), Fraction(0)) / sum(w)


def ref_se(values: list[float], weights: list[float]) -> float:
    """Task-clustered (CR1) standard error of a weighted mean, by its definition."""
    t = len(values)
    total = math.fsum(weights)
    mean = math.fsum(v * w for v, w in zip(values, weights, strict=True)) / total
    spread = math.fsum(w * w * (v - mean) ** 2 for v, w in zip(values, weights, strict=True))
    return math.sqrt(spread) / total * math.sqrt(t / (t - 1))


def ref_df(weights: list[float]) -> float:
    """Kish's effective number of tasks less 1 (T - 1 with equal weights)."""
    return math.fsum(weights) ** 2 / math.fsum(w * w for w in weights) - 1


def ref_fisher(a_c: int, a_n: int, b_c: int, b_n: int) -> float:
    return float(scipy_stats.fisher_exact([[a_c, a_n - a_c], [b_c, b_n - b_c]]).pvalue)


def ref_bh(ps: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (step-up, monotone, at most 1)."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    out = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, ps[i] * m / rank)
        out[i] = running
    return out


# --- batches through the CLI --------------------------------------------------------------------


def generated(seed: int, ids: list[str], lift: float = 0.0) -> list[Task]:
    rng = random.Random(seed)
    tasks = []
    for task_id in ids:
        chance = rng.random()
        ends = []
        for _ in range(rng.choice([1, 2, 3, 4, 4, 5, 6])):
            roll = rng.random()
            if roll < 0.12:
                ends.append(rng.choice(ENDS[4:]))
            else:
                won = rng.random() < min(1.0, chance + lift)
                ends.append("success" if won else rng.choice(ENDS[2:4]))
        # a task's weight is its own (compare refuses weights that differ between batches)
        tasks.append(Task(task_id, (1.0, 2.0, 0.5)[sum(map(ord, task_id)) % 3], ends))
    return tasks


def write_csv(path: Path, tasks: list[Task], *, shuffle: int | None = None) -> None:
    rows = [
        [t.task_id, attempt, str(end == "success").lower(), end, t.weight]
        for t in tasks
        for attempt, end in enumerate(t.ends)
    ]
    if shuffle is not None:
        random.Random(shuffle).shuffle(rows)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["task_id", "attempt", "success", "terminal_reason", "weight"])
        writer.writerows(rows)


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def imported(tmp: Path, tasks: list[Task], name: str, *, shuffle: int | None = None) -> str:
    path = tmp / f"{name}.csv"
    write_csv(path, tasks, shuffle=shuffle)
    code, out, err = cli("import-results", str(path), "--name", "s", "--store", str(tmp / "s.db"))
    assert code == 0, err
    return out.strip().splitlines()[-1].removeprefix("batch ")


def as_json(tmp: Path, *args: str) -> dict[str, Any]:
    code, out, err = cli(*args, "--json", "--store", str(tmp / "s.db"))
    assert code in (0, 3, 4), err  # 3: invalid tries flagged; the figures are still printed
    found: dict[str, Any] = json.loads(out)
    return found


# --- the scalar estimators: the curves' rule ---------------------------------------------------


def test_scalar_estimators_keep_a_value_inside_as_the_curves_do() -> None:
    """Fails on the old code: 1.0 and 0.0 for values strictly between."""
    assert float(ref_at(1200, 600, 60)) == 1.0  # the nearest float is the end...
    assert pass_at_k(1200, 600, 60) == BELOW_ONE  # ...which the value is not
    assert float(ref_hat(1200, 600, 590)) == 0.0
    assert pass_hat_k(1200, 600, 590) == SMALLEST
    at, hat = pass_curves([1200], [600], 600)
    assert at[0, 59] == pass_at_k(1200, 600, 60)
    assert hat[0, 589] == pass_hat_k(1200, 600, 590)


def test_scalar_estimators_reach_an_end_only_where_the_value_is_at_it() -> None:
    """Control: pass@k is 1 exactly when k > n - c, pass^k 0 exactly when k > c."""
    assert pass_at_k(1200, 600, 601) == 1.0
    assert pass_hat_k(1200, 600, 601) == 0.0
    assert pass_at_k(5, 0, 5) == 0.0 and pass_hat_k(5, 5, 5) == 1.0
    assert pass_at_k(4, 1, 1) == 0.25 == pass_hat_k(4, 1, 1)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 3000), c_share=st.floats(0, 1), k_share=st.floats(0, 1))
def test_scalar_estimators_are_the_documented_float_of_the_rational(
    n: int, c_share: float, k_share: float
) -> None:
    c = min(n, round(c_share * n))
    k = max(1, min(n, round(k_share * n)))
    assert pass_at_k(n, c, k) == ref_float(ref_at(n, c, k))
    assert pass_hat_k(n, c, k) == ref_float(ref_hat(n, c, k))
    at, hat = pass_curves([n], [c], k)
    # the curve is a running product (a few ulps per step), but on the same side of 0 and 1
    for curve, exact in ((at, ref_at(n, c, k)), (hat, ref_hat(n, c, k))):
        value = float(curve[0, k - 1])
        assert (value == 0.0) == (exact == 0) and (value == 1.0) == (exact == 1)
        assert value == pytest.approx(float(exact), rel=1e-11, abs=1e-300)


# --- one value, one float ------------------------------------------------------------------------


def test_pass_at_1_is_the_success_rate_float_for_every_count() -> None:
    """Fails on the old code: pass@1 of 1 in 4 was 0.24999999999999997."""
    for n in range(1, 121):
        c = np.arange(n + 1)
        at, hat = pass_curves(np.full(n + 1, n), c, 1)
        assert at[:, 0].tolist() == (c / n).tolist() == hat[:, 0].tolist(), n


def test_summary_gives_the_success_rate_pass_at_1_and_pass_hat_1_one_float() -> None:
    """Fails on the old code: 0.25 beside 0.24999999999999997, and two interval ends."""
    outcomes = [
        Outcome(f"t{i}", attempt, attempt < 1 + i % 2) for i in range(7) for attempt in range(4)
    ]
    for view in summarize(outcomes, n_boot=200).views.values():
        same = [view.success_rate, view.pass_at_k[1], view.pass_hat_k[1]]
        assert all(e is not None for e in same)
        assert len({(e.estimate, e.ci_low, e.ci_high, e.se) for e in same if e}) == 1
        assert same[0] is not None and same[0].estimate == float(ref_mean(
            [Fraction(1 + i % 2, 4) for i in range(7)], [1.0] * 7
        ))  # fmt: skip


def test_compare_gives_one_value_one_difference_statistic_and_p(tmp_path: Path) -> None:
    """Fails on the old code: pass@1's difference (-0.011574074074074075 against the success
    rate's -0.011574074074074056), t and p differed from the success rate's. Per task
    (attempts, a's successes, b's successes); the old curve missed c/n by an ulp for 2 of 8,
    4 of 9 and 1 of 6."""
    shape = [(3, 3, 3), (3, 2, 1), (8, 0, 2), (9, 4, 0), (8, 2, 7), (6, 1, 0)]
    ids = [f"t{i}" for i in range(len(shape))]
    a, b = (
        [Task(t, 1.0, ["success"] * row[side] + [ENDS[2]] * (row[0] - row[side]))
         for t, row in zip(ids, shape, strict=True)]
        for side in (1, 2)
    )  # fmt: skip
    batch_a, batch_b = imported(tmp_path, a, "a"), imported(tmp_path, b, "b")
    got = as_json(tmp_path, "compare", batch_a, batch_b)
    for view in ("valid", "strict"):
        metrics = got["metrics"][view]
        seen = {
            json.dumps([metrics[name][side] for side in ("a", "b", "difference")]
                       + [metrics[name]["statistic"], metrics[name]["p_value"]])
            for name in ("success_rate", "pass_at_1", "pass_hat_1")
        }  # fmt: skip
        assert len(seen) == 1, view


# --- report --json against the reference ------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_report_json_recomputed_with_k_over_supporting(tmp_path: Path, seed: int) -> None:
    """Control: every suite value, k limit, beyond-k value and its excluded tasks, count of
    terminal reasons and invalid rate, re-computed from the rows; tasks whose attempts are
    all invalid are named, not dropped; figures do not depend on the rows' order."""
    ids = [f"task-{i:02d}" for i in range(9)]
    tasks = generated(seed, ids)
    tasks.append(Task("all-invalid", 1.0, ["environment_failure/setup", "grader_failure"]))
    got = as_json(tmp_path, "report", imported(tmp_path, tasks, "r"), "--k-over-supporting")
    shuffled = as_json(
        tmp_path, "report", imported(tmp_path, tasks, "r2", shuffle=seed), "--k-over-supporting"
    )
    assert json.dumps(got["summary"], sort_keys=True) == json.dumps(
        shuffled["summary"], sort_keys=True
    )
    reasons: dict[str, int] = {}
    for t in tasks:
        for end in t.ends:
            reasons[end] = reasons.get(end, 0) + 1
    assert got["terminal_reasons"] == dict(sorted(reasons.items()))
    counted = sum(len(t.ends) for t in tasks)
    invalid = sum(is_invalid(e) for t in tasks for e in t.ends)
    assert got["summary"]["invalid"]["count"] == invalid == got["invalid_attempts"]
    assert got["summary"]["invalid"]["rate"] == pytest.approx(invalid / counted, rel=1e-15)
    assert got["valid_attempts"] == counted - invalid
    for view, key in (("valid", "valid"), ("strict", "strict")):
        summary = got["summary"]["views"][view]
        used = [t for t in tasks if t.n_c(view)[0] > 0]
        assert summary["n_tasks"] == len(used)
        assert summary["excluded_tasks"] == sorted(t.task_id for t in tasks if t.n_c(view)[0] == 0)
        ns = [t.n_c(view)[0] for t in used]
        kmax = min(ns)
        limits = got["k_limits"][key]
        assert limits["kmax"] == summary["kmax"] == kmax
        assert [(x["task_id"], x["n"]) for x in limits["limited_by"]] == sorted(
            ((t.task_id, t.n_c(view)[0]) for t in used if t.n_c(view)[0] < max(ns)),
            key=lambda item: (item[1], item[0]),
        )
        weights = [t.weight for t in used]
        rate = ref_mean([Fraction(*reversed(t.n_c(view))) for t in used], weights)
        assert summary["success_rate"]["estimate"] == pytest.approx(float(rate), rel=1e-11)
        for k in range(1, kmax + 1):
            for metric, name in (("pass_at_k", "at"), ("pass_hat_k", "hat")):
                values = [ref_value(metric, *t.n_c(view), k) for t in used]
                found = summary[metric][str(k)]
                assert found["estimate"] == pytest.approx(float(ref_mean(values, weights)),
                                                          rel=1e-11, abs=1e-300)  # fmt: skip
                assert found["n_tasks"] == len(used) and found["attempts"] == sum(ns)
                assert (found["min_n"], found["max_n"]) == (min(ns), max(ns)), name
        assert sorted(int(k) for k in summary["beyond_k"]) == list(range(kmax + 1, max(ns) + 1))
        for k_text, beyond in summary["beyond_k"].items():
            k = int(k_text)
            over = [t for t in used if t.n_c(view)[0] >= k]
            assert beyond["excluded_tasks"] == sorted(
                t.task_id for t in used if t.n_c(view)[0] < k
            )  # named, never silently dropped
            for metric in ("pass_at_k", "pass_hat_k"):
                values = [ref_value(metric, *t.n_c(view), k) for t in over]
                expect = ref_mean(values, [t.weight for t in over])
                assert beyond[metric]["n_tasks"] == len(over)
                assert beyond[metric]["estimate"] == pytest.approx(float(expect), rel=1e-11)
        for found in (summary["success_rate"], *summary["pass_at_k"].values(),
                      *summary["pass_hat_k"].values()):  # fmt: skip
            for field in ("estimate", "ci_low", "ci_high", "se", "df"):
                value = found[field]
                assert value is None or math.isfinite(value)


# --- compare --json against the reference -----------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_compare_json_recomputed(tmp_path: Path, seed: int) -> None:
    """Control: pairing, per-task Fisher p-values and Benjamini-Hochberg q-values, and each
    paired metric's sides, difference, CR1 SE, Kish df and t statistic, from the rows."""
    ids = [f"task-{i:02d}" for i in range(12)]
    a = generated(100 + seed, ids[:11])
    b = generated(200 + seed, ids[1:], lift=0.2)
    b.append(Task("only-b-invalid", 1.0, ["environment_failure/setup"]))
    got = as_json(tmp_path, "compare", imported(tmp_path, a, "a"), imported(tmp_path, b, "b"))
    by_a, by_b = {t.task_id: t for t in a}, {t.task_id: t for t in b}
    shared = sorted(
        t for t in set(by_a) & set(by_b) if by_a[t].n_c("valid")[0] and by_b[t].n_c("valid")[0]
    )
    assert got["mode"] == "paired" and got["paired_tasks"] == shared
    assert got["only_in_a"] == sorted(set(by_a) - set(by_b))
    assert got["only_in_b"] == sorted(set(by_b) - set(by_a))
    assert got["excluded_tasks"] == sorted(set(by_a) & set(by_b) - set(shared))
    assert got["dropped_tasks"] == sum(len(got[key]) for key in
                                       ("only_in_a", "only_in_b", "excluded_tasks"))  # fmt: skip
    assert got["per_task_test"]["tested"] == len(shared)
    rows = {row["task_id"]: row for row in got["per_task"]}
    assert sorted(rows) == shared
    ps = []
    for task_id in shared:
        (a_n, a_c), (b_n, b_c) = by_a[task_id].n_c("valid"), by_b[task_id].n_c("valid")
        row = rows[task_id]
        assert (row["a_n"], row["a_c"], row["b_n"], row["b_c"]) == (a_n, a_c, b_n, b_c)
        ps.append(ref_fisher(a_c, a_n, b_c, b_n))
        assert row["p_value"] == pytest.approx(ps[-1], rel=1e-9)
    for task_id, q in zip(shared, ref_bh(ps), strict=True):
        assert rows[task_id]["q_value"] == pytest.approx(q, rel=1e-9)
        assert rows[task_id]["changed"] == (q <= got["per_task_test"]["fdr"])
    for view in ("valid", "strict"):
        # the strict view still pairs a task without a valid attempt on a side (its invalid
        # attempts count as failures): docs/statistics.md
        pairs = [(by_a[t], by_b[t]) for t in sorted(set(by_a) & set(by_b))
                 if by_a[t].n_c(view)[0] and by_b[t].n_c(view)[0]]  # fmt: skip
        common = min(min(x.n_c(view)[0], y.n_c(view)[0]) for x, y in pairs)
        assert got["common_k"][view] == common
        weights = [x.weight for x, _ in pairs]
        for name, found in got["metrics"][view].items():
            metric, k = found["metric"], found["k"]
            if metric == "partial_score":
                continue
            assert k is None or 1 <= k <= common, name
            a_values = [ref_value(metric, *x.n_c(view), k) for x, _ in pairs]
            b_values = [ref_value(metric, *y.n_c(view), k) for _, y in pairs]
            moved = [y - x for x, y in zip(a_values, b_values, strict=True)]
            for side, values in (("a", a_values), ("b", b_values), ("difference", moved)):
                expect = float(ref_mean(values, weights))
                # a value within a millionth of a rounding tie is moved to print as its
                # rational does (docs/statistics.md, "Rounding"): at most about 1e-12
                assert found[side]["estimate"] == pytest.approx(expect, rel=1e-11, abs=1e-14)
                assert found[side]["n_tasks"] == len(pairs)
            diff = found["difference"]
            if diff["method"] != "t_cr1":
                continue
            se = ref_se([float(v) for v in moved], weights)
            assert diff["se"] == pytest.approx(se, rel=1e-9)
            assert diff["df"] == pytest.approx(ref_df(weights), rel=1e-12)
            statistic = float(ref_mean(moved, weights)) / se
            assert found["statistic"] == pytest.approx(statistic, rel=1e-9)
            t_p = 2 * float(scipy_stats.t.sf(abs(statistic), ref_df(weights)))
            # at least the t test's p (a floor from the exact bound may raise it: the docs)
            assert found["p_value"] >= t_p * (1 - 1e-9)


# --- plan against the reference ---------------------------------------------------------------


def ref_components(tasks: list[Task]) -> tuple[float, float]:
    """Method-of-moments between- and within-task variance of one pilot (valid view)."""
    used = [t.n_c("valid") for t in tasks if t.n_c("valid")[0] > 0]
    within_parts = [Fraction(c, n) * (1 - Fraction(c, n)) * Fraction(n, n - 1)
                    for n, c in used if n >= 2]  # fmt: skip
    within = sum(within_parts, Fraction(0)) / len(within_parts)
    rates = [Fraction(c, n) for n, c in used]
    mean = sum(rates, Fraction(0)) / len(rates)
    spread = sum(((r - mean) ** 2 for r in rates), Fraction(0)) / (len(rates) - 1)
    sampling = sum((within / n for n, _ in used), Fraction(0)) / len(used)
    return max(0.0, float(spread - sampling)), float(within)


def ref_power(between: float, within: float, inflation: float, tasks: int, attempts: int,
              delta: float, alpha: float) -> float:  # fmt: skip
    df = tasks / inflation - 1
    if tasks < 5 or df <= 0:
        return 0.0
    se = math.sqrt(inflation * (between / tasks + within / (tasks * attempts)))
    critical = float(scipy_stats.t.ppf(1 - alpha / 2, df))
    shift = delta / se
    nct = scipy_stats.nct(df, shift)
    return float(nct.sf(critical) + nct.cdf(-critical))


@pytest.mark.parametrize("seed", range(2))
def test_plan_json_recomputed(tmp_path: Path, seed: int) -> None:
    """Control: variance components, the weight inflation, the smallest T per K with the
    power (the noncentral t of the paired t test), and the power grid."""
    tasks = generated(300 + seed, [f"task-{i:02d}" for i in range(14)])
    got = as_json(tmp_path, "plan", imported(tmp_path, tasks, "p"), "--delta", "0.2")
    between, within = ref_components(tasks)
    (parts,) = got["components"]
    assert parts["between"] == pytest.approx(between, rel=1e-9, abs=1e-15)
    assert parts["within"] == pytest.approx(within, rel=1e-9)
    used = [t for t in tasks if t.n_c("valid")[0] > 0]
    weights = [t.weight for t in used]
    inflation = len(weights) / (math.fsum(weights) ** 2 / math.fsum(w * w for w in weights))
    difference = got["difference"]
    assert difference["weight_inflation"] == pytest.approx(inflation, rel=1e-12)
    assert difference["between"] == pytest.approx(2 * between, rel=1e-9, abs=1e-15)
    assert difference["within"] == pytest.approx(2 * within, rel=1e-9)
    b, w = 2 * between, 2 * within
    for k_text, needed in got["tasks_needed"].items():
        k = int(k_text)
        assert ref_power(b, w, inflation, needed, k, 0.2, 0.05) >= 0.8 - 1e-9
        if needed > 5:
            assert ref_power(b, w, inflation, needed - 1, k, 0.2, 0.05) < 0.8 + 1e-9
    for t_text, row in got["power_grid"].items():
        for k_text, power in row.items():
            expect = ref_power(b, w, inflation, int(t_text), int(k_text), 0.2, 0.05)
            assert power == pytest.approx(expect, abs=1e-7)


@pytest.mark.parametrize(("sizes", "design"), [((2, 3), 3), ((3, 4), 4), ((6, 7), 7)])
def test_plan_rounds_the_pilots_attempts_per_task_half_up(
    tmp_path: Path, sizes: tuple[int, int], design: int
) -> None:
    """Fails on the old code for 2.5 and 6.5 (Python's round: K = 2 and 6, half to even;
    3.5 gave 4): the pilot's design K is its mean attempts per task rounded as every figure
    is, half up, in the grid of tasks needed and in the marginal values."""
    rng = random.Random(sum(sizes))
    tasks = []
    for i in range(12):
        n = sizes[i % 2]
        wins = rng.randint(0, n)
        tasks.append(Task(f"t{i:02d}", 1.0, ["success"] * wins + [ENDS[2]] * (n - wins)))
    got = as_json(tmp_path, "plan", imported(tmp_path, tasks, "p"), "--delta", "0.3")
    assert got["components"][0]["attempts"] == (sizes[0] + sizes[1]) / 2
    assert got["marginal"]["attempts"] == design
    assert str(design) in got["tasks_needed"]


# --- a large batch, counted as columns -----------------------------------------------------------


def test_a_large_batch_counted_as_columns_matches_the_exact_means() -> None:
    """Control: 3,000 tasks (1,000 of them with 120 attempts, the rest 200; every 7th attempt
    of some tasks invalid), 560,000 attempts made as columns (no object per attempt), against
    exact means at k = 1, 2 and the common k; pass@1 is the success rate's float."""
    from groundstate.stats import AttemptColumns, TaskInfo, count_columns, summary_of

    ns = np.where(np.arange(3000) % 3 == 0, 120, 200)
    task = np.repeat(np.arange(3000), ns)
    slot = np.concatenate([np.arange(n) for n in ns])
    wins_per_task = (np.arange(3000) * 37) % 121
    success = slot < wins_per_task[task]
    valid = ~((task % 5 == 1) & (slot % 7 == 6))
    ids = tuple(f"t{i:04d}" for i in range(3000))
    columns = AttemptColumns(ids, task.astype(np.int64), valid, success,
                             np.full(len(task), np.nan))  # fmt: skip
    counts = count_columns(columns, {i: TaskInfo() for i in ids})
    summary = summary_of(
        counts, reasons={}, invalid_reasons={}, cost=np.zeros(len(task)),
        latency=np.zeros(len(task)), successes=int((success & valid).sum()), n_boot=100,
    )  # fmt: skip
    for view, view_counts in counts.items():
        got = summary.views[view]
        nc = [(t.n, t.c) for t in view_counts]
        assert got.kmax == min(n for n, _ in nc) and got.n_tasks == 3000
        exact_rate = sum((Fraction(c, n) for n, c in nc), Fraction(0)) / len(nc)
        assert got.success_rate is not None
        assert got.success_rate.estimate == pytest.approx(float(exact_rate), rel=1e-12)
        assert got.pass_at_k[1].estimate == got.success_rate.estimate
        assert got.pass_hat_k[1].estimate == got.success_rate.estimate
        for k in (2, got.kmax):
            exact_at = sum((ref_at(n, c, k) for n, c in nc), Fraction(0)) / len(nc)
            exact_hat = sum((ref_hat(n, c, k) for n, c in nc), Fraction(0)) / len(nc)
            assert got.pass_at_k[k].estimate == pytest.approx(float(exact_at), rel=1e-11)
            assert got.pass_hat_k[k].estimate == pytest.approx(float(exact_hat), rel=1e-11)
        for estimate in (got.success_rate, *got.pass_at_k.values(), *got.pass_hat_k.values()):
            assert estimate.ci_low is not None and estimate.ci_high is not None
            assert estimate.ci_low <= estimate.estimate <= estimate.ci_high
