"""Twenty-fifth round: independent re-computations of the figures earlier rounds checked only
by their properties, and the fixes they found.

* The bootstrap second opinion (``boot_low``, ``boot_high``) was checked only to lie within
  the task values. Re-computed here from the documented draws (docs/statistics.md, *Second
  opinion*: ``numpy.random.default_rng(seed).integers(0, T, size=(n_boot, T))`` over the
  tasks a figure counts in order of task id, each row's weighted mean in exact fractions,
  ``numpy.percentile`` at 2.5 and 97.5), it disagreed by 1e-8 to 1e-7: the means were summed
  in single precision (23/35 gave 0.6571428775787354). They are double now.
* The unpaired p-value was checked only against its own interval (below 0.05 exactly when
  the interval excludes 0). Re-computed here from its documented definition (the smallest
  alpha whose level 1 - alpha square-and-add interval, each side's interval at that level
  under the level rule, along its curve and as one value, excludes 0), by bisection on a
  plain reference written from the docs.
"""

from __future__ import annotations

import math
import random
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats

from groundstate.stats import Outcome, summarize
from tests.test_stats_round24 import (
    Row,
    as_json,
    cli,
    counts,
    generated,
    imported,
    ref_at,
    ref_hat,
    ref_partials,
)

# --- the bootstrap, re-computed from its documented draws -------------------------------------


def ref_boot(values: list[Fraction], weights: list[float], seed: int, n_boot: int = 2000
             ) -> tuple[float, float]:  # fmt: skip
    """Percentile ends of the weighted mean over resampled tasks, each mean in exact
    fractions from the documented draws."""
    tasks = len(values)
    draws = np.random.default_rng(seed).integers(0, tasks, size=(n_boot, tasks))
    ws = [Fraction(w) for w in weights]
    means = []
    for row in draws:
        times = np.bincount(row, minlength=tasks).tolist()
        num = sum((m * w * v for m, w, v in zip(times, ws, values, strict=True)), Fraction(0))
        den = sum((m * w for m, w in zip(times, ws, strict=True)), Fraction(0))
        means.append(float(num / den))
    low, high = np.percentile(np.array(means), [2.5, 97.5])
    return float(low), float(high)


def boot_mismatches(summary: dict[str, Any], nc: dict[str, tuple[int, int]],
                    weight: dict[str, float], seed: int) -> list[str]:  # fmt: skip
    ids = sorted(nc)
    ws = [weight[t] for t in ids]
    found = []
    rates = [Fraction(nc[t][1], nc[t][0]) for t in ids]
    wanted = [("success_rate", summary["success_rate"], rates)]
    for k_text in summary["pass_at_k"]:
        k = int(k_text)
        for metric, f in (("pass_at_k", ref_at), ("pass_hat_k", ref_hat)):
            e = summary[metric][k_text]
            wanted.append((f"{metric}[{k}]", e, [f(*nc[t], k) for t in ids]))
    for what, e, values in wanted:
        if e["boot_low"] is None:
            continue
        low, high = ref_boot(values, ws, seed)
        if abs(e["boot_low"] - low) > 1e-12 or abs(e["boot_high"] - high) > 1e-12:
            found.append(f"{what}: [{e['boot_low']}, {e['boot_high']}] != [{low}, {high}]")
    return found


@pytest.mark.parametrize("seed", range(4))
def test_bootstrap_ends_match_a_recomputation_from_the_documented_draws(
    tmp_path: Path, seed: int
) -> None:
    """Every boot_low and boot_high of both views of ``report --json --seed S`` (weights,
    uneven attempts, invalid attempts) against the documented draws in exact fractions."""
    rng = random.Random(100 + seed)
    tasks = rng.choice([6, 9, 14])
    rows = generated(rng, tasks, [2, 3, 5, 6], "uniform", weights=(1.0, 0.3, 2.5))
    got = as_json(tmp_path, "report", imported(tmp_path, rows, "a"), "--seed", str(seed))
    weight = {r.task: r.weight for r in rows}
    checked = 0
    for view in ("valid", "strict"):
        summary = got["summary"]["views"][view]
        assert boot_mismatches(summary, counts(rows, view), weight, seed) == [], view
        checked += summary["success_rate"]["boot_low"] is not None
    assert checked  # the case has a bootstrap to check


def test_bootstrap_of_the_valid_view_draws_over_its_own_tasks(tmp_path: Path) -> None:
    """A task with no valid attempt is out of the valid view: its figures resample the other
    tasks (their own draws from the same seed), the strict view's all of them."""
    rows = []
    for t, (c, n) in enumerate([(1, 4), (3, 4), (0, 4), (4, 4), (2, 4), (1, 4), (2, 4)]):
        rows += [Row(f"t{t}", a, "success" if a < c else "agent_failure/x") for a in range(n)]
    rows += [Row("t9", a, "environment_failure/setup") for a in range(4)]
    got = as_json(tmp_path, "report", imported(tmp_path, rows, "a"), "--seed", "7")
    weight = {r.task: 1.0 for r in rows}
    for view in ("valid", "strict"):
        summary = got["summary"]["views"][view]
        assert summary["n_tasks"] == (7 if view == "valid" else 8)
        assert boot_mismatches(summary, counts(rows, view), weight, 7) == [], view


def test_bootstrap_of_the_library_matches_with_heavy_and_tiny_weights() -> None:
    """``stats.summarize`` with weights 1e-3 to 1e3: the same re-computation."""
    rng = random.Random(3)
    outcomes, nc, weight = [], {}, {}
    for t in range(11):
        task, w = f"t{t:02d}", rng.choice([1e-3, 1.0, 1e3, 7.0])
        n = rng.choice([3, 4])
        c = rng.randint(0, n)
        nc[task], weight[task] = (n, c), w
        outcomes += [Outcome(task, a, a < c, weight=w) for a in range(n)]
    summary = summarize(outcomes, seed=11).to_dict()["views"]["valid"]
    summary = {key: ({str(k): v for k, v in value.items()} if isinstance(value, dict)
                     and key in ("pass_at_k", "pass_hat_k") else value)
               for key, value in summary.items()}  # fmt: skip
    assert boot_mismatches(summary, nc, weight, 11) == []


# --- the unpaired p-value, re-computed from its documented test -------------------------------


def ref_reach_at(weights: list[float], alpha: float) -> float:
    """The exact one-sided reach at level alpha / 2: the smallest weighted mean at which
    every task can be at the top with chance alpha / 2 (bisection; (alpha/2)^(1/T) with
    equal weights)."""
    lo, hi = 0.0, max(weights)
    for _ in range(200):
        mid = (lo + hi) / 2
        if math.prod(min(1.0, mid / w) for w in weights) < alpha / 2:
            lo = mid
        else:
            hi = mid
    return sum(w * min(1.0, hi / w) for w in weights) / sum(weights)


def ref_df(weights: list[float]) -> float:
    tasks = len(weights)
    effective = math.fsum(weights) ** 2 / math.fsum(w * w for w in weights)
    return tasks - 1 if effective >= tasks - 1e-9 else effective - 1


def ref_level_at(values: list[float], weights: list[float], alpha: float
                 ) -> tuple[float, float, float]:  # fmt: skip
    """(estimate, low, high) of a level at 1 - alpha under the documented rule (at least 5
    tasks): the exact bound where every task agrees, else Agresti-Coull on the CR1 SE's
    effective n with t(1 - alpha/2, df), reaching the exact bounds of every task at the
    highest (lowest) value."""
    tasks, total = len(values), math.fsum(weights)
    mean = math.fsum(v * w for v, w in zip(values, weights, strict=True)) / total
    reach = ref_reach_at(weights, alpha)
    if max(values) - min(values) <= 1e-12:
        return mean, values[0] * reach, 1 - (1 - values[0]) * reach
    spread = math.fsum(w * w * (v - mean) ** 2 for v, w in zip(values, weights, strict=True))
    se = math.sqrt(spread) / total * math.sqrt(tasks / (tasks - 1))
    q = float(scipy_stats.t.ppf(1 - alpha / 2, ref_df(weights)))
    n_eff = mean * (1 - mean) / se**2
    centre = (mean * n_eff + q * q / 2) / (n_eff + q * q)
    half = q * math.sqrt(centre * (1 - centre) / (n_eff + q * q))
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    return mean, min(low, max(values) * reach), max(high, 1 - (1 - min(values)) * reach)


def ref_side_at(ns: list[int], cs: list[int], weights: list[float], kmax: int, alpha: float
                ) -> dict[str, tuple[float, float, float]]:  # fmt: skip
    """One side's success rate, pass@k and pass^k (k = 1..kmax) at 1 - alpha: each k's
    rule, along the curve, one interval for the success rate, pass@1 and pass^1."""
    raw = {"success_rate": ref_level_at([c / n for n, c in zip(ns, cs, strict=True)],
                                        weights, alpha)}  # fmt: skip
    for k in range(1, kmax + 1):
        for name, f in (("pass_at", ref_at), ("pass_hat", ref_hat)):
            values = [float(f(n, c, k)) for n, c in zip(ns, cs, strict=True)]
            raw[f"{name}_{k}"] = ref_level_at(values, weights, alpha)
    out = dict(raw)
    for k in range(1, kmax + 1):
        est, _, high = raw[f"pass_at_{k}"]
        out[f"pass_at_{k}"] = (est, min(raw[f"pass_at_{j}"][1] for j in range(k, kmax + 1)), high)
        est, low, _ = raw[f"pass_hat_{k}"]
        out[f"pass_hat_{k}"] = (est, low, max(raw[f"pass_hat_{j}"][2] for j in range(k, kmax + 1)))
    trio = [out["success_rate"], out["pass_at_1"], out["pass_hat_1"]]
    low, high = min(x[1] for x in trio), max(x[2] for x in trio)
    for key in ("success_rate", "pass_at_1", "pass_hat_1"):
        out[key] = (out[key][0], low, high)
    return out


Side = tuple[list[int], list[int], list[float]]


def ref_unpaired_p(a: Side, b: Side, kmax: int, name: str) -> float:
    """The smallest alpha whose square-and-add interval of b - a excludes 0 (bisection on
    log alpha); 1 where even the narrowest (alpha near 1) does not."""

    def excludes(alpha: float) -> bool:
        ea, la, ua = ref_side_at(*a, kmax, alpha)[name]
        eb, lb, ub = ref_side_at(*b, kmax, alpha)[name]
        d = eb - ea
        low = d - math.hypot(eb - lb, ua - ea)
        high = d + math.hypot(ub - eb, ea - la)
        return low > 0 or high < 0

    lo, hi = math.log(1e-300), math.log1p(-1e-12)
    if not excludes(math.exp(hi)):
        return 1.0
    if excludes(math.exp(lo)):
        return 1e-300
    for _ in range(60):
        mid = (lo + hi) / 2
        if excludes(math.exp(mid)):
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


def side_of(rows: list[Row], view: str) -> Side:
    nc = counts(rows, view)
    weight = {r.task: r.weight for r in rows}
    ids = sorted(nc)
    return [nc[t][0] for t in ids], [nc[t][1] for t in ids], [weight[t] for t in ids]


@pytest.mark.parametrize("seed", range(5))
def test_unpaired_p_values_match_a_recomputation_of_their_test(tmp_path: Path, seed: int) -> None:
    """Every unpaired p-value of both views (disjoint batches, uneven attempts, invalid
    attempts, weights) against the documented test re-computed by bisection."""
    rng = random.Random(200 + seed)
    weights = ((1.0,), (0.5, 1.0, 3.0))[seed % 2]
    a = generated(rng, rng.choice([5, 6, 9]), [2, 3], rng.choice(["high", "mixed", "uniform"]),
                  weights=weights)  # fmt: skip
    b = generated(rng, rng.choice([5, 7]), [2, 4], rng.choice(["uniform", "mixed"]), prefix="u",
                  weights=weights)  # fmt: skip
    got = as_json(tmp_path, "compare", imported(tmp_path, a, "a"), imported(tmp_path, b, "b"))
    assert got["mode"] == "unpaired"
    checked = 0
    for view in ("valid", "strict"):
        kmax = got["common_k"][view]
        for name, metric in got["metrics"][view].items():
            if metric["p_value"] is None or name == "partial_score":
                continue
            want = ref_unpaired_p(side_of(a, view), side_of(b, view), kmax, name)
            assert metric["p_value"] == pytest.approx(want, rel=1e-6), (view, name)
            checked += 1
    assert checked >= 4


def test_unpaired_p_value_of_an_exact_bound_side_matches(tmp_path: Path) -> None:
    """A side whose every task passed (its exact bound at every level) against a middling
    one, and a near-tie: the re-computed test agrees, the tie's p-value is 1."""
    a = [Row(f"t{t}", j, "success") for t in range(6) for j in range(2)]
    b = [Row(f"u{t}", j, "success" if (t + j) % 3 else "agent_failure/x")
         for t in range(8) for j in range(2)]  # fmt: skip
    got = as_json(tmp_path, "compare", imported(tmp_path, a, "a"), imported(tmp_path, b, "b"))
    assert got["mode"] == "unpaired"
    for name, metric in got["metrics"]["valid"].items():
        want = ref_unpaired_p(side_of(a, "valid"), side_of(b, "valid"), 2, name)
        assert metric["p_value"] == pytest.approx(want, rel=1e-6), name


def test_unpaired_tie_has_p_one(tmp_path: Path) -> None:
    """Both sides at the same value (each task 1 of 2 on both): no difference, p = 1."""
    a = [Row(f"t{t}", j, "success" if j else "agent_failure/x") for t in range(5) for j in range(2)]
    b = [Row(f"u{t}", j, "success" if j else "agent_failure/x") for t in range(6) for j in range(2)]
    got = as_json(tmp_path, "compare", imported(tmp_path, a, "a"), imported(tmp_path, b, "b"))
    metric = got["metrics"]["valid"]["success_rate"]
    assert metric["difference"]["estimate"] == 0 and metric["p_value"] == 1.0


# --- counts print in the number they take -----------------------------------------------------

ONE_OF = re.compile(r"(?<![\d./])1 (tasks|attempts|tries|reruns|counted attempts|shared tasks)\b")


def test_one_of_anything_is_singular_in_every_report(tmp_path: Path) -> None:
    """A batch of one task with one attempt and one unpriced try, its page, and comparisons
    of one shared task: no "1 tries", "1 attempts" or "1 tasks" anywhere (the footer said
    "1 tries in all", the page "1 tasks x 1 attempts", compare "0 of 1 tasks changed")."""
    path = tmp_path / "one.csv"
    path.write_text("task_id,attempt,success,terminal_reason,cost\nt0,0,true,success,\n")
    code, out, err = cli("import-results", str(path), "--name", "s", "--store",
                         str(tmp_path / "s.db"))  # fmt: skip
    assert code == 0, err
    assert "imported 1 attempt of 1 task as" in out
    one = out.strip().splitlines()[-1].removeprefix("batch ")
    two = imported(tmp_path, [Row("t0", j, "success") for j in range(2)], "two")
    store = ("--store", str(tmp_path / "s.db"))
    texts = [out]
    for args in (("report", one), ("compare", one, two), ("compare", two, one), ("batches",)):
        code, out, err = cli(*args, *store)
        assert code in (0, 3), err
        texts.append(out + err)
    page = tmp_path / "one.html"
    assert cli("report", one, "--html", str(page), *store)[0] in (0, 3)
    texts.append(page.read_text(encoding="utf-8"))
    pair = tmp_path / "pair.html"
    assert cli("compare", one, two, "--html", str(pair), *store)[0] == 0
    texts.append(pair.read_text(encoding="utf-8"))
    flat = " ".join(" ".join(texts).split())
    assert ONE_OF.findall(flat) == []
    assert "1 try in all" in flat and "1 task \u00d7 1 attempt" in flat
    assert "0 of 1 task changed" in flat


def test_counted_takes_the_number() -> None:
    from groundstate.rounding import counted  # new in this round

    assert [counted(n, "try", "tries") for n in (0, 1, 2)] == ["0 tries", "1 try", "2 tries"]
    assert counted(1, "planned attempt") == "1 planned attempt"
    assert counted(3, "task") == "3 tasks"


def test_unpaired_partial_score_p_value_matches(tmp_path: Path) -> None:
    """The partial score's unpaired p-value (no curve, no one value: the level rule alone),
    both views, with invalid attempts scored 0 in the strict one."""
    rng = random.Random(9)
    a, b = [], []
    for rows, prefix, lift in ((a, "t", 0.0), (b, "u", 0.25)):
        for t in range(rng.choice([6, 8])):
            for j in range(3):
                end = "grader_failure" if rng.random() < 0.1 else "agent_failure/x"
                score = None if end == "grader_failure" else round(min(1.0, rng.random() + lift), 2)
                rows.append(Row(f"{prefix}{t}", j, end, score=score))
    got = as_json(tmp_path, "compare", imported(tmp_path, a, "a"), imported(tmp_path, b, "b"))
    assert got["mode"] == "unpaired"
    for view in ("valid", "strict"):
        metric = got["metrics"][view]["partial_score"]
        pa, pb = ref_partials(a, view), ref_partials(b, view)

        def excludes(alpha: float, pa: dict[str, float] = pa, pb: dict[str, float] = pb) -> bool:
            ea, la, ua = ref_level_at(list(pa.values()), [1.0] * len(pa), alpha)
            eb, lb, ub = ref_level_at(list(pb.values()), [1.0] * len(pb), alpha)
            d = eb - ea
            return d - math.hypot(eb - lb, ua - ea) > 0 or d + math.hypot(ub - eb, ea - la) < 0

        lo, hi = math.log(1e-300), math.log1p(-1e-12)
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if excludes(math.exp(mid)) else (mid, hi)
        assert metric["p_value"] == pytest.approx(math.exp(hi), rel=1e-6), view
        assert 1e-6 < metric["p_value"] < 0.9, view  # a test that decides something
