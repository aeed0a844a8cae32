"""Forty-first round: the statistics re-computed from scratch, through the library and the CLI.

The reference below is written from the chapter (``shared/reference/evaluating-agents.txt``:
per task pass@k = 1 - C(n-c,k)/C(n,k), pass^k = C(c,k)/C(n,k), averaged with the declared
task weights, repetitions nested in tasks) and docs/statistics.md alone (which attempts count
in which view, the interval rule, the curve and one-value widening, the bootstrap's documented
draws, the paired t test, Fisher's exact test and Benjamini-Hochberg). It uses exact rationals,
``math.comb`` and brute-force enumeration of k-subsets where it can, and ``scipy.stats`` only
for Student's t. Batches are generated from fixed seeds (``random.Random``): unequal attempt
counts, tasks with no valid attempt, all-pass and all-fail tasks, retried attempts (the last
try counts), attempts that stay invalid, harness compatibility failures (they count against
the system), weights, and they go through ``import-results`` and ``report --json`` /
``compare --json``, so the importer, the store and the JSON are under test with the numbers.
"""

from __future__ import annotations

import csv
import functools
import io
import itertools
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
from scipy import stats as scipy_stats

from groundstate.cli import main
from groundstate.stats import Outcome, compare, pass_at_k, pass_curves, pass_hat_k, summarize

ALPHA = 0.05
INVALID = ("environment_failure", "grader_failure")
ENDS = (
    "success",
    "agent_failure/incorrect_state",
    "harness_compatibility_failure/tool_protocol",
    "environment_failure/setup",
    "grader_failure/crash",
)
TOL = 1e-9


# --- the reference: per task ---------------------------------------------------------------


def ref_at(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def ref_hat(n: int, c: int, k: int) -> Fraction:
    return Fraction(math.comb(c, k), math.comb(n, k))


def by_subsets(n: int, c: int, k: int) -> tuple[Fraction, Fraction]:
    """Share of the k-subsets of n attempts (the first c successes) holding a success, and
    holding only successes: what the estimators are the unbiased form of."""
    subsets = list(itertools.combinations(range(n), k))
    some = sum(min(s) < c for s in subsets)
    every = sum(max(s) < c for s in subsets)
    return Fraction(some, len(subsets)), Fraction(every, len(subsets))


def valid_end(end: str) -> bool:
    return end.split("/")[0] not in INVALID


@dataclass
class Task:
    task_id: str
    weight: float
    tries: list[list[str]]
    """Each attempt's tries in order; the last one is counted."""

    def n_c(self, view: str) -> tuple[int, int]:
        ends = [t[-1] for t in self.tries]
        n = sum(valid_end(e) for e in ends) if view == "valid" else len(ends)
        return n, sum(e == "success" for e in ends)


# --- the reference: suite values and intervals --------------------------------------------


def t_q(df: float) -> float:
    return float(scipy_stats.t.ppf(1 - ALPHA / 2, df))


def kish_df(w: list[float]) -> float:
    t = len(w)
    eff = sum(w) ** 2 / sum(x * x for x in w)
    return t - 1 if eff >= t - 1e-9 else eff - 1


def cr1(values: list[float], w: list[float]) -> float:
    t = len(values)
    mean = sum(v * x for v, x in zip(values, w, strict=True)) / sum(w)
    spread = sum(x * x * (v - mean) ** 2 for v, x in zip(values, w, strict=True))
    return math.sqrt(spread) / sum(w) * math.sqrt(t / (t - 1))


def reach(w: list[float]) -> float:
    """The weighted mean of task means m_i = min(1, s / w_i) at which their product, the
    largest chance every task is at the top, is alpha / 2 (docs: *Every task has the same
    value*); found by bisection on s. Equal weights: (alpha / 2)^(1/T)."""
    lo, hi = 0.0, max(w)
    for _ in range(200):
        s = (lo + hi) / 2
        if math.prod(min(1.0, s / x) for x in w) > ALPHA / 2:
            hi = s
        else:
            lo = s
    return sum(min(x, hi) for x in w) / sum(w)


def top_chance(w: list[float], mean: float) -> float:
    """The largest product of task means m_i in [0, 1] whose weighted mean is *mean*:
    m_i = min(1, s / w_i), s found by bisection (with equal weights mean^T)."""
    lo, hi = 0.0, max(w)
    for _ in range(200):
        s = (lo + hi) / 2
        if sum(min(x, s) for x in w) / sum(w) < mean:
            lo = s
        else:
            hi = s
    return math.prod(min(1.0, hi / x) for x in w)


@dataclass
class Ref:
    estimate: Fraction
    low: float | None
    high: float | None
    se: float | None
    df: float | None
    method: str


def level(values: list[Fraction], w: list[float], *, difference: bool = False) -> Ref:
    """A level's (or with *difference* a paired difference's) interval rule, from the docs."""
    wf = [Fraction(x) for x in w]
    est = sum((v * x for v, x in zip(values, wf, strict=True)), Fraction(0)) / sum(wf)
    lo, hi = (-1.0, 1.0) if difference else (0.0, 1.0)
    fv = [float(v) for v in values]
    agree = max(fv) - min(fv) <= 1e-12
    if len(values) < 5:  # no interval; an SE where two or more tasks spread
        return Ref(est, None, None, None if agree or len(fv) < 2 else cr1(fv, w), None, "none")
    r = reach(w)
    if agree:
        v = fv[0]
        return Ref(est, lo + (v - lo) * r, hi - (hi - v) * r, None, None, "exact_bound")
    se, df = cr1(fv, w), kish_df(w)
    q, u = t_q(df), float(est)
    if difference:
        low, high = max(-1.0, u - q * se), min(1.0, u + q * se)
        method = "t_cr1"
    else:
        n_eff = u * (1 - u) / se**2
        centre = (u * n_eff + q * q / 2) / (n_eff + q * q)
        half = q * math.sqrt(centre * (1 - centre) / (n_eff + q * q))
        low, high = max(0.0, centre - half), min(1.0, centre + half)
        method = "agresti_coull_t_cr1"
    # near agreement: at least as far as the exact bound of every task at the top / bottom
    low = min(low, lo + (max(fv) - lo) * r)
    high = max(high, hi - (hi - min(fv)) * r)
    return Ref(est, low, high, se, df, method)


def view_cells(tasks: list[Task], view: str) -> list[tuple[Task, int, int]]:
    cells = [(t, *t.n_c(view)) for t in sorted(tasks, key=lambda t: t.task_id)]
    return [(t, n, c) for t, n, c in cells if n > 0]


def ref_view(tasks: list[Task], view: str) -> dict[str, Any]:
    """Success rate, pass@k and pass^k for k = 1..kmax with the curve and one-value
    widening, and pass@k / pass^k above kmax over the tasks that support each k."""
    cells = view_cells(tasks, view)
    if not cells:
        return {"kmax": 0}
    w = [t.weight for t, _, _ in cells]
    kmax = min(n for _, n, _ in cells)
    at = {k: level([ref_at(n, c, k) for _, n, c in cells], w) for k in range(1, kmax + 1)}
    hat = {k: level([ref_hat(n, c, k) for _, n, c in cells], w) for k in range(1, kmax + 1)}
    for k in range(kmax - 1, 0, -1):  # along the curve
        if at[k].low is not None:
            at[k].low = min(at[k].low, at[k + 1].low)  # type: ignore[type-var]
            hat[k].high = max(hat[k].high, hat[k + 1].high)  # type: ignore[type-var]
    rate = level([Fraction(c, n) for _, n, c in cells], w)
    if rate.low is not None:  # one value, one interval
        low = min(rate.low, at[1].low, hat[1].low)  # type: ignore[type-var]
        high = max(rate.high, at[1].high, hat[1].high)  # type: ignore[type-var]
        for one in (rate, at[1], hat[1]):
            one.low, one.high = low, high
    beyond = {}
    for k in range(kmax + 1, max(n for _, n, _ in cells) + 1):
        kept = [(t, n, c) for t, n, c in cells if n >= k]
        kw = [t.weight for t, _, _ in kept]
        beyond[k] = (
            level([ref_at(n, c, k) for _, n, c in kept], kw),
            level([ref_hat(n, c, k) for _, n, c in kept], kw),
            sorted(t.task_id for t, n, _ in cells if n < k),
        )
    return {"kmax": kmax, "rate": rate, "at": at, "hat": hat, "beyond": beyond, "cells": cells}


@functools.cache
def multiplicities(seed: int, n_boot: int, tasks: int) -> np.ndarray:
    """How often each task is drawn in each resample: rows of default_rng(seed).integers(0,
    T, (n_boot, T)) counted task by task."""
    draws = np.random.default_rng(seed).integers(0, tasks, size=(n_boot, tasks))
    counts = np.zeros((n_boot, tasks), dtype=np.int64)
    for task in range(tasks):
        counts[:, task] = (draws == task).sum(axis=1)
    return counts


def ref_bootstrap(
    values: list[Fraction], w: list[float], seed: int, n_boot: int
) -> tuple[float, float]:
    """docs/statistics.md, *Second opinion*: each resample's weighted mean by multiplicities
    (sum m_i w_i v_i / sum m_i w_i, in double precision: within about 1e-16 of the exact
    fraction), percentiles 2.5 and 97.5 with linear interpolation."""
    m = multiplicities(seed, n_boot, len(values)).astype(np.float64)
    weights = np.array(w, dtype=np.float64)
    top = m @ (weights * np.array([float(v) for v in values]))
    means = sorted((top / (m @ weights)).tolist())
    return percentile(means, 0.025), percentile(means, 0.975)


def percentile(ordered: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default, R's type 7)."""
    at = q * (len(ordered) - 1)
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def boot_ks(kmax: int) -> set[int]:
    marks = {1, 2, 3, 5, 10, 20, 50, 100, 200, 500, kmax}
    return {k for k in marks if k <= kmax}


def check(got: dict[str, Any], ref: Ref, what: str) -> None:
    exact = ref.estimate
    assert got["estimate"] == pytest.approx(float(exact), abs=1e-12), what
    # the side of 0 and 1 is exact
    assert (got["estimate"] == 1.0) == (exact == 1), what
    assert (got["estimate"] == 0.0) == (exact == 0), what
    assert got["method"] == ref.method, (what, got["note"])
    for key, want in (("ci_low", ref.low), ("ci_high", ref.high), ("se", ref.se), ("df", ref.df)):
        if want is None:
            assert got[key] is None, (what, key)
        else:
            assert got[key] == pytest.approx(want, abs=TOL), (what, key, got["note"])
    if got["ci_low"] is not None:
        assert got["ci_low"] <= got["estimate"] <= got["ci_high"], what
        assert got["ci_low"] < got["ci_high"], what  # never zero-width


# --- batches ------------------------------------------------------------------------------


def make_batch(rng: random.Random, names: list[str] | None = None) -> list[Task]:
    names = names or [f"t{i}" for i in range(rng.randint(1, 11))]
    equal = rng.random() < 0.5
    tasks = []
    for name in names:
        kind = rng.choice(["mixed", "mixed", "pass", "fail", "invalid", "mixed"])
        p = rng.random()
        n = rng.choice([1, 2, 3, 4, 5, 6, 8, 12])
        tries = []
        for _ in range(n):
            end = {"pass": "success", "fail": ENDS[rng.choice([1, 2])],
                   "invalid": ENDS[rng.choice([3, 4])]}.get(kind)  # fmt: skip
            if end is None:
                end = "success" if rng.random() < p else rng.choice(ENDS[1:])
            before = [rng.choice(ENDS[3:]) for _ in range(rng.choice([0, 0, 0, 1, 2]))]
            tries.append([*before, end])
        weight = 1.0 if equal else rng.choice([0.5, 1.0, 2.0, 3.25])
        tasks.append(Task(name, weight, tries))
    return tasks


def as_csv(tasks: list[Task]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["task_id", "attempt", "retry", "success", "terminal_reason", "weight"])
    for t in tasks:
        for attempt, tries in enumerate(t.tries, 1):
            for retry, end in enumerate(tries):
                writer.writerow([t.task_id, attempt, retry, str(end == "success").lower(), end,
                                 t.weight])  # fmt: skip
    return out.getvalue()


def outcomes(tasks: list[Task]) -> list[Outcome]:
    return [
        Outcome(t.task_id, a, tries[-1] == "success", valid_end(tries[-1]), tries[-1], t.weight)
        for t in tasks
        for a, tries in enumerate(t.tries, 1)
    ]


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def imported(tmp: Path, tasks: list[Task], name: str) -> str:
    path = tmp / f"{name}.csv"
    path.write_text(as_csv(tasks), encoding="utf-8")
    code, out, err = cli("import-results", str(path), "--name", name, "--store", str(tmp / "s.db"))
    assert code == 0, err
    return out.strip().splitlines()[-1].removeprefix("batch ")


def report(tmp: Path, batch: str, *extra: str) -> dict[str, Any]:
    code, out, err = cli("report", batch, "--json", "--store", str(tmp / "s.db"), *extra)
    data: dict[str, Any] = json.loads(out)
    assert code == 0 or (code == 3 and not data["valid_attempts"]), err
    return data


# --- per-task estimators ------------------------------------------------------------------


def test_estimators_are_the_share_of_k_subsets_for_every_small_case() -> None:
    for n in range(1, 9):
        for c in range(n + 1):
            at, hat = pass_curves([n], [c], n)
            for k in range(1, n + 1):
                some, every = by_subsets(n, c, k)
                assert some == ref_at(n, c, k) and every == ref_hat(n, c, k)
                assert pass_at_k(n, c, k) == float(some) and pass_hat_k(n, c, k) == float(every)
                assert at[0, k - 1] == pytest.approx(float(some), rel=1e-14, abs=0)
                assert hat[0, k - 1] == pytest.approx(float(every), rel=1e-14, abs=0)


def test_k_equal_1_is_the_success_rate_and_the_curves_are_monotone() -> None:
    rng = random.Random(41)
    for _ in range(200):
        n = rng.randint(1, 60)
        c = rng.randint(0, n)
        at, hat = pass_curves([n], [c], n)
        assert at[0, 0] == hat[0, 0] == c / n == pass_at_k(n, c, 1) == pass_hat_k(n, c, 1)
        assert np.all(np.diff(at[0]) >= 0) and np.all(np.diff(hat[0]) <= 0)
        # at k = n: pass@n is 1 unless every attempt failed, pass^n 0 unless all passed
        assert at[0, n - 1] == (1.0 if c else 0.0) and hat[0, n - 1] == (1.0 if c == n else 0.0)


@pytest.mark.parametrize("c", [0, 1, 2, 17, 500_000, 999_983, 999_999, 1_000_000])
def test_a_million_attempts_neither_overflow_nor_lose_precision(c: int) -> None:
    n = 1_000_000
    ks = [1, 2, 3, 10, 57, 100]
    at, hat = pass_curves([n], [c], 100)
    for k in ks:
        for got, want in ((at[0, k - 1], ref_at(n, c, k)), (hat[0, k - 1], ref_hat(n, c, k))):
            if want in (0, 1):
                assert got == want
            else:
                assert 0 < got < 1 and abs(Fraction(got) - want) <= want * Fraction(1, 10**13)
    # the scalar estimators, also either side of where pass@k reaches 1 (k > n - c) and
    # pass^k 0 (k > c), where those k are small enough for exact binomials to be quick
    edges = {k for m in (n - c, c) if 0 < m < 1000 for k in (m, m + 1)}
    for k in sorted({1, 999, n} | edges):
        want_at, want_hat = ref_at(n, c, k), ref_hat(n, c, k)
        assert pass_at_k(n, c, k) == pytest.approx(float(want_at), rel=1e-15)
        assert (pass_at_k(n, c, k) == 1.0) == (want_at == 1)
        assert (pass_hat_k(n, c, k) == 0.0) == (want_hat == 0)


def test_k_outside_1_to_n_is_refused_not_extrapolated() -> None:
    for n, c, k in ((3, 1, 4), (3, 1, 0), (0, 0, 1), (2, 3, 1), (2, -1, 1)):
        with pytest.raises(ValueError):
            pass_at_k(n, c, k)
        with pytest.raises(ValueError):
            pass_hat_k(n, c, k)
    # a task with fewer attempts than k has no value there, never a guess
    at, hat = pass_curves([2, 5], [1, 3], 4)
    assert np.isnan(at[0, 2:]).all() and np.isnan(hat[0, 2:]).all()
    assert not np.isnan(at[1]).any()


# --- one batch through the CLI --------------------------------------------------------------


def check_view(
    got: dict[str, Any], view_json: dict[str, Any], ref: dict[str, Any], what: str
) -> None:
    """*got*: the report's figures of a view (success_rate, pass_at_k, pass_hat_k);
    *view_json*: summary.views.<view> (kmax, beyond_k)."""
    if not ref["kmax"]:
        assert got["success_rate"] is None and got["pass_at_k"] == {}, what
        return
    assert view_json["kmax"] == ref["kmax"], what
    assert view_json["n_tasks"] == len(ref["cells"]), what
    check(got["success_rate"], ref["rate"], f"{what} rate")
    assert sorted(map(int, got["pass_at_k"])) == list(range(1, ref["kmax"] + 1)), what
    for k in range(1, ref["kmax"] + 1):
        at, hat = got["pass_at_k"][str(k)], got["pass_hat_k"][str(k)]
        check(at, ref["at"][k], f"{what} pass@{k}")
        check(hat, ref["hat"][k], f"{what} pass^{k}")
        assert at["attempts"] == sum(n for _, n, _ in ref["cells"]), what
    # k = 1: one value, one float, one interval
    one = [got["success_rate"], got["pass_at_k"]["1"], got["pass_hat_k"]["1"]]
    for key in ("estimate", "ci_low", "ci_high", "se", "df"):
        assert one[0][key] == one[1][key] == one[2][key], (what, key)
    curve_at = [got["pass_at_k"][str(k)] for k in range(1, ref["kmax"] + 1)]
    curve_hat = [got["pass_hat_k"][str(k)] for k in range(1, ref["kmax"] + 1)]
    assert all(x["estimate"] <= y["estimate"] for x, y in itertools.pairwise(curve_at)), what
    assert all(x["estimate"] >= y["estimate"] for x, y in itertools.pairwise(curve_hat)), what
    if curve_at[0]["ci_low"] is not None:
        assert all(x["ci_low"] <= y["ci_low"] for x, y in itertools.pairwise(curve_at)), what
        assert all(x["ci_high"] >= y["ci_high"] for x, y in itertools.pairwise(curve_hat)), what
    beyond = view_json["beyond_k"]
    assert sorted(map(int, beyond)) == sorted(ref["beyond"]), what
    for k, (at_ref, hat_ref, excluded) in ref["beyond"].items():
        found = beyond[str(k)]
        check(found["pass_at_k"], at_ref, f"{what} pass@{k}*")
        check(found["pass_hat_k"], hat_ref, f"{what} pass^{k}*")
        assert sorted(found["excluded_tasks"]) == excluded, what


def check_bootstrap(got: dict[str, Any], ref: dict[str, Any], seed: int, what: str) -> None:
    if not ref["kmax"]:
        return
    cells = ref["cells"]
    w = [t.weight for t, _, _ in cells]
    figures = [("rate", got["success_rate"], [Fraction(c, n) for _, n, c in cells])]
    for k in boot_ks(ref["kmax"]):
        figures.append(
            (f"pass@{k}", got["pass_at_k"][str(k)], [ref_at(n, c, k) for _, n, c in cells])
        )
        figures.append(
            (f"pass^{k}", got["pass_hat_k"][str(k)], [ref_hat(n, c, k) for _, n, c in cells])
        )
    for name, found, values in figures:
        if found["method"] != "agresti_coull_t_cr1":
            assert found["boot_low"] is None and found["boot_high"] is None, (what, name)
            continue
        low, high = ref_bootstrap(values, w, seed, 2000)
        assert found["boot_low"] == pytest.approx(low, abs=1e-12), (what, name)
        assert found["boot_high"] == pytest.approx(high, abs=1e-12), (what, name)
    others = [k for k in range(1, ref["kmax"] + 1) if k not in boot_ks(ref["kmax"])]
    for k in others:
        assert got["pass_at_k"][str(k)]["boot_low"] is None, (what, k)


def strict_of(data: dict[str, Any]) -> dict[str, Any]:
    return data["invalid_as_failure"]


@pytest.mark.parametrize("seed", range(14))
def test_report_json_matches_the_reference(tmp_path: Path, seed: int) -> None:
    rng = random.Random(4100 + seed)
    tasks = make_batch(rng, [f"t{i}" for i in range(rng.choice([2, 5, 6, 9, 12]))])
    boot_seed = rng.randint(0, 10**6)
    data = report(tmp_path, imported(tmp_path, tasks, "x"), "--k-over-supporting",
                  "--seed", str(boot_seed))  # fmt: skip
    views = data["summary"]["views"]
    for view, got in (("valid", data), ("strict", strict_of(data))):
        ref = ref_view(tasks, view)
        check_view(got, views[view], ref, f"seed {seed} {view}")
        check_bootstrap(got, ref, boot_seed, f"seed {seed} {view}")
    # denominators: counted tries only, invalid ones apart, tasks with no valid attempt out
    ends = [tries[-1] for t in tasks for tries in t.tries]
    assert data["valid_attempts"] == sum(map(valid_end, ends))
    assert data["invalid_attempts"] == len(ends) - data["valid_attempts"]
    assert data["n_tasks"] == len(view_cells(tasks, "valid"))
    assert data["tries"]["tries"] == sum(len(tries) for t in tasks for tries in t.tries)
    table = {row["task_id"]: row for row in data["tasks"]}
    for t in tasks:
        for view in ("valid", "strict"):
            n, c = t.n_c(view)
            assert (table[t.task_id][view]["n"], table[t.task_id][view]["c"]) == (n, c)


def test_the_library_gives_what_the_cli_gives(tmp_path: Path) -> None:
    rng = random.Random(4141)
    for round_ in range(4):
        tasks = make_batch(rng, [f"t{i}" for i in range(7)])
        tmp = tmp_path / str(round_)
        tmp.mkdir()
        data = report(tmp, imported(tmp, tasks, "x"))
        summary = summarize(outcomes(tasks), seed=0).to_dict()
        got = json.loads(json.dumps(summary))  # keys as the JSON has them
        assert got["views"] == data["summary"]["views"]


# --- edge batches -------------------------------------------------------------------------


def test_harness_compatibility_failures_count_against_the_system_and_invalid_ones_do_not(
    tmp_path: Path,
) -> None:
    """The chapter: compatibility failures belong to the system and must not disappear;
    environment and grader failures are invalid (rerun, their rates reported)."""
    tasks = [Task(f"t{i}", 1.0, [["success"], ["harness_compatibility_failure/x"],
                                  ["environment_failure/setup"], ["grader_failure"]])
             for i in range(5)]  # fmt: skip
    data = report(tmp_path, imported(tmp_path, tasks, "x"))
    assert data["success_rate"]["estimate"] == 0.5  # 1 of 2 valid
    assert strict_of(data)["success_rate"]["estimate"] == 0.25  # 1 of 4
    assert data["valid_attempts"] == 10 and data["invalid_attempts"] == 10
    assert data["summary"]["views"]["valid"]["kmax"] == 2


def test_a_task_with_no_valid_attempt_leaves_the_valid_view_but_fails_in_the_strict_view(
    tmp_path: Path,
) -> None:
    tasks = [Task(f"t{i}", 1.0, [["success"], ["success"]]) for i in range(5)]
    tasks.append(Task("z", 1.0, [["environment_failure/a", "grader_failure/b"]] * 3))
    data = report(tmp_path, imported(tmp_path, tasks, "x"))
    assert data["n_tasks"] == 5
    assert data["summary"]["views"]["valid"]["excluded_tasks"] == ["z"]
    assert data["success_rate"]["estimate"] == 1.0
    assert data["success_rate"]["method"] == "exact_bound"
    strict = strict_of(data)
    assert strict["success_rate"]["estimate"] == pytest.approx(5 / 6, abs=1e-15)
    assert data["summary"]["views"]["strict"]["kmax"] == 2  # z's 3 attempts, the others' 2
    # every try of z was invalid and is counted as such in the try counts
    assert data["tries"]["invalid_tries"] == 6


def test_every_attempt_invalid_has_no_estimate_and_says_so(tmp_path: Path) -> None:
    tasks = [Task(f"t{i}", 1.0, [["environment_failure/x"]] * 2) for i in range(5)]
    code, out, err = cli("report", imported(tmp_path, tasks, "x"), "--json",
                         "--store", str(tmp_path / "s.db"))  # fmt: skip
    data = json.loads(out)
    assert "every attempt is invalid" in err
    assert code == 3 and data["success_rate"] is None and data["pass_at_k"] == {}
    assert strict_of(data)["success_rate"]["estimate"] == 0.0


def test_retries_count_once_and_the_last_try_decides(tmp_path: Path) -> None:
    """A rerun replaces the invalid try before it: n counts the attempt once."""
    tasks = [Task(f"t{i}", 1.0, [["environment_failure/x", "grader_failure", "success"],
                                  ["environment_failure/x", "agent_failure/y"],
                                  ["environment_failure/x"]])
             for i in range(6)]  # fmt: skip
    data = report(tmp_path, imported(tmp_path, tasks, "x"))
    row = data["tasks"][0]
    assert row["valid"] == {"n": 2, "c": 1, "partial": None, "scored": 0}
    assert row["strict"]["n"] == 3 and row["strict"]["c"] == 1
    assert data["tries"]["tries"] == 36 and data["tries"]["invalid_tries"] == 24
    assert data["success_rate"]["estimate"] == 0.5
    assert strict_of(data)["pass_hat_k"]["3"]["estimate"] == 0.0


# --- comparisons --------------------------------------------------------------------------


def ref_fisher(a_c: int, a_n: int, b_c: int, b_n: int) -> float:
    """Two-sided: the tables with both margins, at most as likely as the observed one."""
    wins, total = a_c + b_c, a_n + b_n

    def prob(x: int) -> Fraction:
        return Fraction(
            math.comb(wins, x) * math.comb(total - wins, a_n - x), math.comb(total, a_n)
        )

    observed = prob(a_c)
    support = range(max(0, a_n - (total - wins)), min(a_n, wins) + 1)
    return float(min(Fraction(1), sum(p for p in map(prob, support) if p <= observed)))


def ref_bh(ps: list[float]) -> list[float]:
    """q of p: the least m p_(j) / j over the ranks j at or above p's (ties: the highest)."""
    m, ranked = len(ps), sorted(ps)
    rank = {p: max(j for j, x in enumerate(ranked, 1) if x == p) for p in ps}
    return [min(1.0, min(x * m / rank[x] for x in ps if x >= p)) for p in ps]


def ref_paired(a: list[Task], b: list[Task], view: str) -> dict[str, Any]:
    bb = {t.task_id: t for t in b}
    pairs = [(t, bb[t.task_id]) for t in sorted(a, key=lambda t: t.task_id) if t.task_id in bb]
    cells = [(x, *x.n_c(view), *y.n_c(view)) for x, y in pairs]
    cells = [cell for cell in cells if cell[1] and cell[3]]
    k = min(min(an, bn) for _, an, _, bn, _ in cells)
    w = [x.weight for x, *_ in cells]
    out: dict[str, Any] = {"common_k": k}
    metrics = {"success_rate": lambda n, c: Fraction(c, n)}
    for j in range(1, k + 1):
        metrics[f"pass_at_{j}"] = lambda n, c, j=j: ref_at(n, c, j)
        metrics[f"pass_hat_{j}"] = lambda n, c, j=j: ref_hat(n, c, j)
    boot = {"success_rate"} | {f"pass_{x}_{j}" for x in ("at", "hat") for j in boot_ks(k)}
    for name, f in metrics.items():
        d = [f(bn, bc) - f(an, ac) for _, an, ac, bn, bc in cells]
        ref = level(d, w, difference=True)
        drawn = ref.method == "t_cr1" and name in boot
        out[f"boot {name}"] = ref_bootstrap(d, w, 0, 2000) if drawn else None
        fd = [float(x) for x in d]
        if ref.method == "t_cr1":
            assert ref.se is not None and ref.df is not None
            t = float(ref.estimate) / ref.se
            p = 2 * float(scipy_stats.t.sf(abs(t), ref.df))
            v = max(fd) if ref.estimate > 0 else -min(fd)
            near = 2 * top_chance(w, 1 / (1 + v)) if ref.estimate != 0 else 1.0
            out[name] = (ref, t, max(p, min(1.0, near)))
        elif ref.method == "exact_bound":
            near = 2 * top_chance(w, 1 / (1 + abs(fd[0])))
            out[name] = (ref, None, min(1.0, near) if fd[0] else 1.0)
        else:
            out[name] = (ref, None, None)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_paired_compare_json_matches_the_reference(tmp_path: Path, seed: int) -> None:
    rng = random.Random(4200 + seed)
    names = [f"t{i}" for i in range(rng.choice([5, 7, 10]))]
    a = make_batch(rng, names)
    b = make_batch(rng, names)
    weights = {t.task_id: t.weight for t in a}  # one weight on both sides: else refused
    for t in b:
        t.weight = weights[t.task_id]
        if all(not valid_end(tries[-1]) for tries in t.tries):
            t.tries[0] = ["success"]
    for t in a:
        if all(not valid_end(tries[-1]) for tries in t.tries):
            t.tries[0] = ["agent_failure/x"]
    batch_a, batch_b = imported(tmp_path, a, "a"), imported(tmp_path, b, "b")
    code, out, err = cli("compare", batch_a, batch_b, "--json", "--store", str(tmp_path / "s.db"))
    assert code == 0, err
    data = json.loads(out)
    assert data["mode"] == "paired"
    drawn_any: list[bool] = []
    for view in ("valid", "strict"):
        ref = ref_paired(a, b, view)
        assert data["common_k"][view] == ref["common_k"]
        metrics = data["metrics"][view]
        for name, (want, t, p) in ((k, v) for k, v in ref.items() if k in metrics):
            got = metrics[name]["difference"]
            boot = ref[f"boot {name}"]
            drawn_any.append(boot is not None)
            assert (got["boot_low"], got["boot_high"]) == pytest.approx(boot or (None, None))
            check(got, want, f"seed {seed} {view} {name}")
            if t is None:
                assert metrics[name]["statistic"] is None
            else:
                assert metrics[name]["statistic"] == pytest.approx(t, rel=1e-9)
            if p is None:
                assert metrics[name]["p_value"] is None
            else:
                assert metrics[name]["p_value"] == pytest.approx(p, rel=1e-9, abs=1e-300)
            # the interval excludes 0 exactly when p < 0.05
            if got["ci_low"] is not None and p is not None:
                assert (got["ci_low"] > 0 or got["ci_high"] < 0) == (
                    metrics[name]["p_value"] < 0.05
                )
        # k = 1 is one value on each side and in the difference, its test included
        ones = [metrics[name] for name in ("success_rate", "pass_at_1", "pass_hat_1")]
        for key in ("a", "b", "difference"):
            fields = [{f: m[key][f] for f in ("estimate", "ci_low", "ci_high", "se")} for m in ones]
            assert fields[0] == fields[1] == fields[2], (view, key)
        assert ones[0]["p_value"] == ones[1]["p_value"] == ones[2]["p_value"]
        # each side's curves keep their direction, ends included
        for side in ("a", "b"):
            at = [metrics[f"pass_at_{j}"][side] for j in range(1, ref["common_k"] + 1)]
            hat = [metrics[f"pass_hat_{j}"][side] for j in range(1, ref["common_k"] + 1)]
            assert all(x["estimate"] <= y["estimate"] for x, y in itertools.pairwise(at))
            assert all(x["estimate"] >= y["estimate"] for x, y in itertools.pairwise(hat))
            if at[0]["ci_low"] is not None:
                assert all(x["ci_low"] <= y["ci_low"] for x, y in itertools.pairwise(at))
                assert all(x["ci_high"] >= y["ci_high"] for x, y in itertools.pairwise(hat))
    assert any(drawn_any) or not any(
        m["difference"]["method"] == "t_cr1" for v in data["metrics"].values() for m in v.values()
    )
    # per-task Fisher tests on valid attempts, adjusted by Benjamini-Hochberg
    bb = {t.task_id: t for t in b}
    rows = {r["task_id"]: r for r in data["per_task"]}
    tested = [t for t in a if t.n_c("valid")[0] and bb[t.task_id].n_c("valid")[0]]
    ps = []
    for t in tested:
        (an, ac), (bn, bc) = t.n_c("valid"), bb[t.task_id].n_c("valid")
        p = ref_fisher(ac, an, bc, bn)
        ps.append(p)
        assert (rows[t.task_id]["a_c"], rows[t.task_id]["a_n"]) == (ac, an)
        assert rows[t.task_id]["p_value"] == pytest.approx(p, rel=1e-9)
    for t, q in zip(tested, ref_bh(ps), strict=True):
        assert rows[t.task_id]["q_value"] == pytest.approx(q, rel=1e-9)
        assert rows[t.task_id]["changed"] == (q <= 0.05)


def test_compare_of_a_batch_with_itself_moves_nothing_and_rejects_nothing() -> None:
    rng = random.Random(77)
    tasks = make_batch(rng, [f"t{i}" for i in range(8)])
    found = compare(outcomes(tasks), outcomes(tasks))
    for d in found.differences:
        if d.difference.ci_low is None:
            continue
        assert d.difference.estimate == 0.0 and d.p_value == 1.0
        assert d.difference.ci_low < 0 < d.difference.ci_high
    assert not any(c.changed for c in found.per_task)


# --- gates ----------------------------------------------------------------------------------


def gate_verdicts(tmp: Path, tasks: list[Task], *gates: str) -> tuple[int, list[dict[str, Any]]]:
    args = [a for g in gates for a in ("--fail-under", g)]
    code, out, _ = cli("report", imported(tmp, tasks, "x"), "--json",
                       "--store", str(tmp / "s.db"), *args)  # fmt: skip
    verdicts: list[dict[str, Any]] = json.loads(out)["fail_under"]
    return code, verdicts


def test_a_gate_is_decided_on_the_exact_value_not_a_float_within_a_tolerance(
    tmp_path: Path,
) -> None:
    """pass@30 of 50 successes in 100 attempts is 1 - C(50,30)/C(100,30) = 1 - 1.6e-12: not
    1, and the report prints it ">0.999"; the gate pass@30=1 passed it (a tolerance of
    1e-9 below the threshold)."""
    tasks = [Task(f"t{i}", 1.0, [["success"]] * 50 + [["agent_failure/x"]] * 50) for i in range(5)]
    assert ref_at(100, 50, 30) < 1
    gates = ("pass@30=1", "pass@30=0.99999999999", "success_rate=0.5", "pass^2=0.2475",
             "pass^2=0.2474")  # fmt: skip
    code, verdicts = gate_verdicts(tmp_path, tasks, *gates)
    assert [v["passed"] for v in verdicts] == [False, True, True, False, True]
    assert ref_hat(100, 50, 2) == Fraction(2450, 9900)  # 0.24747...: below 0.2475
    assert code == 4


@pytest.mark.parametrize("seed", range(6))
def test_gates_at_the_exact_value_pass_and_just_above_it_fail(tmp_path: Path, seed: int) -> None:
    """A weighted mean whose float lands a hair below its exact value (1/10 + 2/10 ...) still
    passes a gate set at that value; one a hair above the exact value fails."""
    rng = random.Random(4300 + seed)
    tasks = [Task(f"t{i}", rng.choice([1.0, 0.1, 0.3, 2.5]),
                  [["success"]] * (c := rng.randint(0, 10)) + [["agent_failure/x"]] * (10 - c))
             for i in range(rng.randint(5, 9))]  # fmt: skip
    # each weight the decimal it is written as (since the forty-ninth round; the binary
    # rational of the float 0.1 put a mean of exactly 0.4 a hair below a gate at 0.4)
    w = [Fraction(repr(t.weight)) for t in tasks]
    exact = sum(Fraction(t.n_c("valid")[1], 10) * x for t, x in zip(tasks, w, strict=True)) / sum(w)
    at = f"success_rate={float(exact)!r}"
    above = f"success_rate={math.nextafter(float(exact), 2)!r}"
    _, verdicts = gate_verdicts(tmp_path, tasks, at, above)
    # the threshold as written is the float nearest the exact value: at or below it, or above
    nearest = Fraction(repr(float(exact)))
    assert verdicts[0]["passed"] == (exact >= nearest)
    assert verdicts[1]["passed"] is False


# --- slices, partial scores, unpaired comparisons -------------------------------------------


def ref_slice(cells: list[tuple[Task, int, int]]) -> tuple[Ref, dict[int, Ref]] | None:
    """A slice's success rate and pass^k curve up to its own k, with the curve and one-value
    widening (pass@1's curve bounds the one value though pass@k is not shown)."""
    if not cells:
        return None
    w = [t.weight for t, _, _ in cells]
    kmax = min(n for _, n, _ in cells)
    at = {k: level([ref_at(n, c, k) for _, n, c in cells], w) for k in range(1, kmax + 1)}
    hat = {k: level([ref_hat(n, c, k) for _, n, c in cells], w) for k in range(1, kmax + 1)}
    for k in range(kmax - 1, 0, -1):
        if at[k].low is not None:
            at[k].low = min(at[k].low, at[k + 1].low)  # type: ignore[type-var]
            hat[k].high = max(hat[k].high, hat[k + 1].high)  # type: ignore[type-var]
    rate = level([Fraction(c, n) for _, n, c in cells], w)
    if rate.low is not None:
        low = min(rate.low, at[1].low, hat[1].low)  # type: ignore[type-var]
        high = max(rate.high, at[1].high, hat[1].high)  # type: ignore[type-var]
        for one in (rate, hat[1]):
            one.low, one.high = low, high
    return rate, hat


@pytest.mark.parametrize("seed", range(6))
def test_slices_match_the_reference(seed: int) -> None:
    rng = random.Random(4400 + seed)
    tasks = make_batch(rng, [f"t{i:02d}" for i in range(rng.randint(6, 16))])
    labels = {t.task_id: tuple(sorted(rng.sample(["easy", "hard", "db"], rng.randint(0, 2))))
              for t in tasks}  # fmt: skip
    horizons = {t.task_id: rng.choice([None, 1, 3, 4, 8, 12, 13, 40]) for t in tasks}
    records = [
        Outcome(
            t.task_id,
            a,
            tries[-1] == "success",
            valid_end(tries[-1]),
            tries[-1],
            t.weight,
            labels[t.task_id],
            horizons[t.task_id],
        )
        for t in tasks
        for a, tries in enumerate(t.tries, 1)
    ]
    found = summarize(records, n_boot=0)

    def bucket(h: int | None) -> str:
        if h is None:
            return "unknown"
        return "1-3" if h <= 3 else "4-7" if h <= 7 else "8-12" if h <= 12 else "13+"

    for view in ("valid", "strict"):
        got = found.views[view]
        cells = view_cells(tasks, view)
        keys = {
            "by_label": lambda t: labels[t.task_id],
            "by_horizon": lambda t: (bucket(horizons[t.task_id]),),
        }
        for table, key_of in keys.items():
            slices: dict[str, list[Task]] = {}
            for t in tasks:
                for key in key_of(t):
                    slices.setdefault(key, []).append(t)
            assert set(getattr(got, table)) == set(slices), (view, table)
            for key, members in slices.items():
                mine = getattr(got, table)[key]
                ids = {t.task_id for t in members}
                counted = [cell for cell in cells if cell[0].task_id in ids]
                assert mine.n_tasks == len(members)
                assert sorted(mine.excluded_tasks) == sorted(
                    ids - {t.task_id for t, _, _ in counted}
                )
                ref = ref_slice(counted)
                if ref is None:
                    assert mine.success_rate is None and mine.kmax == 0
                    continue
                rate, hat = ref
                check(mine.success_rate.to_dict(), rate, f"{view} {key} rate")
                assert sorted(mine.pass_hat_k) == sorted(hat)
                for k, want in hat.items():
                    check(mine.pass_hat_k[k].to_dict(), want, f"{view} {key} pass^{k}")


def test_partial_scores_are_task_means_over_scored_attempts_in_both_views() -> None:
    rng = random.Random(4500)
    records, per_task = [], {}
    for i in range(8):
        scores = []
        for a in range(1, rng.randint(2, 6)):
            end = rng.choice(ENDS)
            score = (
                None if rng.random() < 0.2 or not valid_end(end) else rng.choice([0, 0.25, 0.5, 1])
            )
            records.append(Outcome(f"t{i}", a, end == "success", valid_end(end), end, 1.0,
                                   partial_score=score))  # fmt: skip
            scores.append((valid_end(end), score))
        per_task[f"t{i}"] = scores
    found = summarize(records, n_boot=0)
    for view in ("valid", "strict"):
        values, ns = [], []
        for scores in per_task.values():
            kept = [Fraction(s) for ok, s in scores if ok and s is not None]
            bad = sum(not ok for ok, _ in scores)
            if view == "strict" and (kept or bad):
                values.append(sum(kept, Fraction(0)) / (len(kept) + bad))
                ns.append(len(kept) + bad)
            elif view == "valid" and kept:
                values.append(sum(kept, Fraction(0)) / len(kept))
                ns.append(len(kept))
        got = found.views[view].partial_score
        assert got is not None
        check(got.to_dict(), level(values, [1.0] * len(values)), f"{view} partial")
        assert got.attempts == sum(ns)


def test_unpaired_comparison_differs_by_the_two_sides_means_and_tests_by_its_interval() -> None:
    rng = random.Random(4600)
    for _ in range(6):
        a = make_batch(rng, [f"a{i}" for i in range(rng.randint(5, 9))])
        b = make_batch(rng, [f"b{i}" for i in range(rng.randint(5, 9))])
        for t in a + b:
            t.weight = 1.0
            if not any(valid_end(tries[-1]) for tries in t.tries):
                t.tries[0] = ["success"]
        found = compare(outcomes(a), outcomes(b), n_boot=0)
        assert found.mode == "unpaired"
        for d in found.differences:
            if d.metric == "partial_score":
                continue
            va, vb = ref_view(a, d.view), ref_view(b, d.view)
            if d.metric == "success_rate":
                want = vb["rate"].estimate - va["rate"].estimate
            else:
                key = "at" if d.metric == "pass_at_k" else "hat"
                assert d.k is not None
                want = vb[key][d.k].estimate - va[key][d.k].estimate
            assert d.difference.estimate == pytest.approx(float(want), abs=1e-12)
            assert d.difference.method == "mover"
            if d.p_value is not None and d.difference.ci_low is not None:
                excludes = d.difference.ci_low > 0 or d.difference.ci_high < 0
                assert excludes == (d.p_value < 0.05), (d.name, d.p_value)
                # each side's own interval is the one the square-and-add starts from
                assert d.difference.ci_low <= float(want) <= d.difference.ci_high


# --- coverage, as docs/statistics.md claims it ------------------------------------------------


def beta_moment(a: float, b: float, extra_b: int) -> float:
    """E[(1 - p)^m] for p ~ Beta(a, b): B(a, b + m) / B(a, b), by lgamma."""

    def log_beta(x: float, y: float) -> float:
        return math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)

    return math.exp(log_beta(a, b + extra_b) - log_beta(a, b))


def test_skewed_pass_at_k_and_paired_differences_cover_as_documented() -> None:
    """docs/statistics.md: pass@3 and pass@10 of 20 attempts at 10 tasks of Beta(2, 1.5)
    cover 0.988 and 0.995 as reported; a paired difference (b's task probability p^0.7)
    0.975. 300 seeded suites each; asserted at 0.95 or more (the docs' 95% level)."""
    rng = np.random.default_rng(41)
    truth = {k: 1 - beta_moment(2.0, 1.5, k) for k in (3, 10)}
    # E[p^0.7] - E[p] for p ~ Beta(2, 1.5): B(2.7, 1.5) / B(2, 1.5) - 2 / 3.5
    moved = (
        math.exp(math.lgamma(2.7) + math.lgamma(3.5) - math.lgamma(4.2) - math.lgamma(2.0))
        - 2 / 3.5
    )
    hits = {3: 0, 10: 0, "paired": 0}
    suites = 300

    def batch(ps: np.ndarray, attempts: int) -> list[Outcome]:
        wins = rng.random((len(ps), attempts)) < ps[:, None]
        return [
            Outcome(f"t{i}", j + 1, bool(x), True, "success" if x else "agent_failure")
            for i, row in enumerate(wins.tolist())
            for j, x in enumerate(row)
        ]

    for _ in range(suites):
        ps = rng.beta(2.0, 1.5, 10)
        view = summarize(batch(ps, 20), n_boot=0).views["valid"]
        for k in (3, 10):
            e = view.pass_at_k[k]
            assert e.ci_low is not None and e.ci_high is not None
            hits[k] += e.ci_low <= truth[k] <= e.ci_high
        d = compare(batch(ps, 4), batch(ps**0.7, 4), n_boot=0).success_rate_difference
        assert d.ci_low is not None and d.ci_high is not None
        hits["paired"] += d.ci_low <= moved <= d.ci_high
    assert truth[10] == pytest.approx(0.9739, abs=1e-4) and moved == pytest.approx(0.0904, abs=1e-4)
    for name, count in hits.items():
        assert count / suites >= 0.95, (name, count / suites)


def test_a_gate_leaves_out_tasks_that_failed_validation_as_the_figures_do(tmp_path: Path) -> None:
    rows = ["task_id,attempt,success,invalid_task"]
    rows += [f"t{i},{a},true," for i in range(5) for a in (1, 2)]
    rows += [f"bad,{a},false,true" for a in (1, 2)]
    path = tmp_path / "x.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    store = str(tmp_path / "s.db")
    code, out, err = cli("import-results", str(path), "--name", "x", "--store", store)
    assert code == 0, err
    code, out, err = cli("report", "--json", "--store", store, "--fail-under", "pass^2=1")
    data = json.loads(out)
    assert data["invalid_tasks_run"] == ["bad"] and data["pass_hat_k"]["2"]["estimate"] == 1.0
    assert data["fail_under"][0]["passed"] is True and code == 0, err


def test_a_failed_gate_whose_float_is_its_threshold_is_not_printed_as_the_threshold() -> None:
    """Decided exactly below 0.95, a mean whose nearest float is 0.95 printed "0.950 is below
    0.95"; it prints a value below the threshold, as every other failed gate does."""
    from groundstate.gates import failure_line

    line = failure_line({"metric": "success_rate", "threshold": 0.95, "value": 0.95})
    shown = line.removeprefix("success_rate = ").split(" is below")[0]
    assert float(shown) < 0.95 and line.endswith("is below 0.95")
    line = failure_line({"metric": "pass@2", "threshold": 0.6, "value": 0.5})
    assert line == "pass@2 = 0.500 is below 0.6"
