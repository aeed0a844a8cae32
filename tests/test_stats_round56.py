"""Statistics audit, fifty-sixth round: an outside re-computation of every figure
``report --json`` and ``compare --json`` print for small and awkward batches (k = 1, tasks
with fewer attempts than others, tasks at 0 and at every success, invalid tries and their
reruns, costs not known, one task, 1,000 tasks), from the chapter's estimators
(``shared/reference/evaluating-agents.txt``) in exact rationals and scipy's t, through
``import-results`` into a real store; and the library's inputs.

The figures agreed (kept as tests of the class). Classes of defect fixed, all in the inputs
of the library (``groundstate.stats``), which the reports' own path never gave:

* **An outcome's fields read loosely.** ``Outcome(..., success="false")`` counted as a
  success (numpy reads any non-empty text as true), as did ``success=2``; ``success=None``,
  a ``task_id`` of None or a terminal reason of None raised a bare ``TypeError`` from deep
  in the counting; an attempt of 0.5 or "a", a weight or cost given as text ("2") and a NaN
  cost or partial score (None is "not known") were taken. Each is now refused with a
  ``ValueError`` naming the task, the attempt and the field.
* **A failure given no terminal reason was counted as a ``success`` reason.** The default
  reason was ``"success"`` whatever the outcome: ``summarize`` of three failures reported
  ``terminal_reasons == {"success": 3}``, and three invalid attempts ``invalid.by_reason ==
  {"success": 3}``. The reason now defaults to the one the outcome implies (``success``,
  ``agent_failure``, ``environment_failure``), and an invalid outcome whose reason is no
  environment or grader failure (or a valid one whose reason is) is refused.
* **k, max_k, seed and n_boot that are no counts.** ``suite_pass_at_k(counts, 2.0)`` and
  ``summarize(..., max_k=2.0)`` ended in numpy's ``IndexError``; ``k=True`` was read as 1;
  ``seed=-1`` gave numpy's "expected non-negative integer" without naming the seed;
  ``n_boot=-1`` silently drew nothing. Each is refused naming the argument.
* **Counts that are no counts gave figures.** ``fisher_p(3, 2, 1, 2)`` (3 successes of 2)
  gave p = 1e-300, as if the tasks differed beyond doubt; ``pass_curves([2], [3], 1)`` a
  pass@1 of 1.5; ``benjamini_hochberg([2, 0.01])`` clipped a p-value of 2 and a NaN made
  every q-value NaN; ``invalid_stats`` of one invalid attempt in 0 divided by zero. Each is
  refused.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats as scipy_stats

from groundstate.cli import main
from groundstate.stats import (
    Outcome,
    benjamini_hochberg,
    bootstrap_interval,
    compare,
    fisher_p,
    invalid_stats,
    pass_at_k,
    pass_curves,
    pass_hat_k,
    suite_pass_at_k,
    suite_pass_hat_k,
    summarize,
    task_counts,
)

# --- the reference ---------------------------------------------------------------------------

INVALID = ("environment_failure", "grader_failure")


def ref_at(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def ref_hat(n: int, c: int, k: int) -> Fraction:
    return Fraction(math.comb(c, k), math.comb(n, k))


def ref_rate(n: int, c: int, k: int) -> Fraction:
    return Fraction(c, n)


def invalid(row: dict[str, Any]) -> bool:
    return str(row["reason"]).split("/")[0] in INVALID


def counted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The counted try of each attempt: its last retry."""
    last: dict[tuple[str, int], dict[str, Any]] = {}
    for row in sorted(rows, key=lambda r: r["retry"]):
        last[(row["task"], row["attempt"])] = row
    return list(last.values())


def cells(rows: list[dict[str, Any]], view: str) -> dict[str, tuple[int, int]]:
    """(n, c) per task with a counted attempt in the view."""
    out: dict[str, tuple[int, int]] = {}
    for row in counted(rows):
        if view == "valid" and invalid(row):
            continue
        n, c = out.get(row["task"], (0, 0))
        out[row["task"]] = (n + 1, c + int(row["success"] and not invalid(row)))
    return out


def level_interval(values: list[Fraction]) -> tuple[float, float, float]:
    """SE, and the Agresti-Coull interval on the CR1 SE's effective trials with t on T - 1
    degrees of freedom, each end at least the exact bound of every task at the highest
    (lowest) value, as docs/statistics.md gives them (equal weights)."""
    t = len(values)
    v = np.array([float(x) for x in values])
    u = float(sum(values) / t)
    se = float(np.sqrt(((v - u) ** 2).sum()) / t * math.sqrt(t / (t - 1)))
    q = float(scipy_stats.t.ppf(0.975, t - 1))
    n_eff = u * (1 - u) / se**2
    centre = (u * n_eff + q * q / 2) / (n_eff + q * q)
    half = q * math.sqrt(centre * (1 - centre) / (n_eff + q * q))
    reach = 0.025 ** (1 / t)
    low = min(max(0.0, centre - half), float(max(values)) * reach)
    high = max(min(1.0, centre + half), 1 - (1 - float(min(values))) * reach)
    return se, low, high


def check_level(name: str, got: dict[str, Any], values: list[Fraction]) -> None:
    """One estimate of the report against the reference values of its tasks."""
    t = len(values)
    mean = sum(values) / t
    assert got["estimate"] == pytest.approx(float(mean), abs=1e-12), name
    assert got["n_tasks"] == t, name
    if t < 5:
        assert (got["ci_low"], got["ci_high"], got["method"]) == (None, None, "none"), name
        return
    if len(set(values)) == 1:
        reach = 0.025 ** (1 / t)
        v = float(values[0])
        assert got["method"] == "exact_bound" and got["se"] is None, name
        assert got["ci_low"] == pytest.approx(v * reach, abs=1e-12), name
        assert got["ci_high"] == pytest.approx(1 - (1 - v) * reach, abs=1e-12), name
        return
    se, low, high = level_interval(values)
    assert got["se"] == pytest.approx(se, rel=1e-9), name
    assert got["df"] == pytest.approx(t - 1), name
    if "widened to pass" in got["note"] or "one value" in got["note"]:
        # widened along the curve: never narrower than the rule at this k
        assert got["ci_low"] <= low + 1e-12 and got["ci_high"] >= high - 1e-12, name
    else:
        assert (got["ci_low"], got["ci_high"]) == pytest.approx((low, high), abs=1e-9), name


# --- batches ---------------------------------------------------------------------------------


def generated(seed: int, tasks: int, most: int) -> list[dict[str, Any]]:
    """Rows of an imported batch: 1 to *most* attempts a task, some tries invalid and some
    of those rerun (a rerun may be invalid too, or never come), some costs not known, tasks
    that always pass and tasks that never do."""
    rnd = random.Random(seed)
    rows = []
    for i in range(tasks):
        p = rnd.choice([0.0, 1.0, rnd.random()])
        for attempt in range(rnd.randint(1, most)):
            retry = 0
            while True:
                bad = rnd.random() < 0.15 and retry < 2
                won = not bad and rnd.random() < p
                reason = (
                    rnd.choice(["environment_failure/x", "grader_failure"])
                    if bad
                    else "success"
                    if won
                    else rnd.choice(["agent_failure", "agent_failure/step_limit"])
                )
                cost = None if rnd.random() < 0.1 else round(rnd.random(), 4)
                latency = None if rnd.random() < 0.1 else round(10 * rnd.random(), 3)
                rows.append(dict(task=f"t{i:04d}", attempt=attempt, retry=retry, success=won,
                                 reason=reason, cost=cost, latency=latency))  # fmt: skip
                if not bad or rnd.random() < 0.3:
                    break
                retry += 1
    return rows


def shaped(spec: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """Task i has n attempts, the first c successes; no invalid try."""
    return [
        dict(task=f"t{i:04d}", attempt=a, retry=0, success=a < c,
             reason="success" if a < c else "agent_failure", cost=0.5, latency=1.0)
        for i, (n, c) in enumerate(spec)
        for a in range(n)
    ]  # fmt: skip


def as_csv(rows: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        ["task_id", "attempt", "retry", "success", "terminal_reason", "cost", "latency"]
    )
    for r in rows:
        blank = ["" if r[key] is None else r[key] for key in ("cost", "latency")]
        writer.writerow([r["task"], r["attempt"], r["retry"], str(r["success"]).lower(),
                         r["reason"], *blank])  # fmt: skip
    return out.getvalue()


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env={"COLUMNS": "300"})
    return result.exit_code, result.stdout, result.stderr


def imported(tmp: Path, rows: list[dict[str, Any]], name: str) -> str:
    path = tmp / f"{name}.csv"
    path.write_text(as_csv(rows), encoding="utf-8")
    code, out, err = cli("import-results", str(path), "--name", name, "--store", str(tmp / "s.db"))
    assert code == 0, err
    return out.strip().splitlines()[-1].removeprefix("batch ")


def report(tmp: Path, batch: str) -> dict[str, Any]:
    code, out, err = cli("report", batch, "--json", "--store", str(tmp / "s.db"))
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


# --- report --json, recomputed -----------------------------------------------------------------

BATCHES = {
    "uneven with reruns": lambda: generated(1, 7, 4),
    "twelve tasks": lambda: generated(2, 12, 6),
    "one task": lambda: generated(3, 1, 3),
    "k = 1": lambda: generated(4, 6, 1),
    "forty tasks": lambda: generated(5, 40, 5),
    "every task passed, uneven n": lambda: shaped([(3, 3), (5, 5), (2, 2), (4, 4), (6, 6), (1, 1)]),
    "every task failed": lambda: shaped([(3, 0), (5, 0), (2, 0), (4, 0), (6, 0)]),
    "eight tasks at one half": lambda: shaped([(4, 2)] * 8),
    "four tasks": lambda: shaped([(4, 1), (4, 2), (4, 3), (4, 4)]),
    "one task at 0 among 1s": lambda: shaped([(3, 3)] * 9 + [(3, 0)]),
}


def check_report(rows: list[dict[str, Any]], data: dict[str, Any]) -> None:
    for view in ("valid", "strict"):
        found = cells(rows, view)
        tasks = sorted(found)
        got = data["summary"]["views"][view]
        kmax = min(found[t][0] for t in tasks)
        assert got["kmax"] == kmax
        limited = sorted((found[t][0], t) for t in tasks if found[t][0] < max(found.values())[0])
        assert [(x["n"], x["task_id"]) for x in data["k_limits"][view]["limited_by"]] == limited
        check_level(f"{view} rate", got["success_rate"], [ref_rate(*found[t], 0) for t in tasks])
        assert sorted(map(int, got["pass_at_k"])) == list(range(1, kmax + 1))
        for k in range(1, kmax + 1):
            for name, ref in (("pass_at_k", ref_at), ("pass_hat_k", ref_hat)):
                values = [ref(*found[t], k) for t in tasks]
                check_level(f"{view} {name} {k}", got[name][str(k)], values)
                assert got[name][str(k)]["attempts"] == sum(found[t][0] for t in tasks)
    final = counted(rows)
    reasons: dict[str, int] = {}
    for row in final:
        reasons[row["reason"]] = reasons.get(row["reason"], 0) + 1
    assert data["terminal_reasons"] == reasons
    valid = sum(not invalid(r) for r in final)
    assert (data["valid_attempts"], data["invalid_attempts"]) == (valid, len(final) - valid)
    for key in ("cost", "latency"):
        known = np.array([r[key] for r in final if r[key] is not None], dtype=np.float64)
        figure = data["summary"][key]
        assert figure["unknown"] == len(final) - len(known)
        expected = (known.sum(), known.mean(), np.median(known), np.percentile(known, 90))
        assert (figure["total"], figure["mean"], figure["median"], figure["p90"]) == (
            pytest.approx(expected, abs=1e-12)
        )
    wins = sum(r["success"] and not invalid(r) for r in final)
    costs = [r["cost"] for r in final]
    per_success = None if None in costs or not wins else sum(costs) / wins
    assert data["summary"]["cost_per_success"] == pytest.approx(per_success, abs=1e-12)
    tries = data["tries"]
    assert (tries["tries"], tries["invalid_tries"]) == (len(rows), sum(map(invalid, rows)))
    assert tries["cost"] == pytest.approx(sum(r["cost"] or 0 for r in rows), abs=1e-12)
    assert tries["cost_unknown"] == sum(r["cost"] is None for r in rows)
    by_reason: dict[str, int] = {}
    for row in filter(invalid, rows):
        by_reason[row["reason"].split("/")[0]] = by_reason.get(row["reason"].split("/")[0], 0) + 1
    assert tries["invalid_rate_by_reason"] == pytest.approx(
        {reason: count / len(rows) for reason, count in by_reason.items()}
    )
    invalid_final = [r["reason"].split("/")[0] for r in final if invalid(r)]
    assert data["summary"]["invalid"]["by_reason"] == {
        reason: invalid_final.count(reason) for reason in sorted(set(invalid_final))
    }
    table = {row["task_id"]: row for row in data["tasks"]}
    for view in ("valid", "strict"):
        for task, (n, c) in cells(rows, view).items():
            assert (table[task][view]["n"], table[task][view]["c"]) == (n, c)


@pytest.mark.parametrize("name", sorted(BATCHES))
def test_every_figure_of_report_json_is_the_reference_recomputed(tmp_path: Path, name: str) -> None:
    rows = BATCHES[name]()
    batch = imported(tmp_path, rows, "x")
    check_report(rows, report(tmp_path, batch))


def test_a_thousand_tasks_are_reported_as_recomputed(tmp_path: Path) -> None:
    rnd = random.Random(5)
    spec = [(n, rnd.randint(0, n)) for n in (rnd.randint(1, 6) for _ in range(1000))]
    rows = shaped(spec)
    check_report(rows, report(tmp_path, imported(tmp_path, rows, "big")))


def test_a_paired_comparison_is_the_reference_recomputed(tmp_path: Path) -> None:
    """Each paired difference: b - a per task, its CR1 SE, the t statistic, a p-value at
    least the t test's, an interval at least the t interval; per task Fisher's exact test
    (scipy) and Benjamini-Hochberg."""
    a_rows, b_rows = generated(12, 12, 6), generated(112, 12, 6)
    a, b = imported(tmp_path, a_rows, "a"), imported(tmp_path, b_rows, "b")
    code, out, err = cli("compare", a, b, "--json", "--store", str(tmp_path / "s.db"))
    assert code == 0, err
    data = json.loads(out)
    assert data["mode"] == "paired"
    refs = {"success_rate": ref_rate, "pass_at_k": ref_at, "pass_hat_k": ref_hat}
    for view in ("valid", "strict"):
        ca, cb = cells(a_rows, view), cells(b_rows, view)
        shared = sorted(ca.keys() & cb.keys())
        assert data["common_k"][view] == min(min(ca[t][0], cb[t][0]) for t in shared)
        for name, metric in data["metrics"][view].items():
            ref = refs[metric["metric"]]
            moved = [ref(*cb[t], metric["k"] or 0) - ref(*ca[t], metric["k"] or 0) for t in shared]
            mean = float(sum(moved) / len(moved))
            diff = metric["difference"]
            assert diff["estimate"] == pytest.approx(mean, abs=1e-12), name
            if len(set(moved)) == 1:
                continue
            values = np.array([float(x) for x in moved])
            se = values.std(ddof=1) / math.sqrt(len(values))
            t = mean / se
            assert diff["se"] == pytest.approx(se, rel=1e-9), name
            assert metric["statistic"] == pytest.approx(t, rel=1e-9), name
            p = 2 * scipy_stats.t.sf(abs(t), len(values) - 1)
            assert metric["p_value"] >= p * (1 - 1e-9), name
            q = scipy_stats.t.ppf(0.975, len(values) - 1)
            assert diff["ci_low"] <= max(-1.0, mean - q * se) + 1e-12, name
            assert diff["ci_high"] >= min(1.0, mean + q * se) - 1e-12, name
    ca, cb = cells(a_rows, "valid"), cells(b_rows, "valid")
    shared = sorted(ca.keys() & cb.keys())
    ps = [
        scipy_stats.fisher_exact([[ca[t][1], ca[t][0] - ca[t][1]], [cb[t][1], cb[t][0] - cb[t][1]]])
        .pvalue
        for t in shared
    ]  # fmt: skip
    order = sorted(range(len(ps)), key=ps.__getitem__)
    qs, running = [0.0] * len(ps), 1.0
    for rank in range(len(ps), 0, -1):
        running = min(running, ps[order[rank - 1]] * len(ps) / rank)
        qs[order[rank - 1]] = running
    got = {row["task_id"]: row for row in data["per_task"]}
    assert sorted(got) == shared
    for task, p, q in zip(shared, ps, qs, strict=True):
        assert (got[task]["p_value"], got[task]["q_value"]) == pytest.approx((p, q), rel=1e-9)


def test_an_unpaired_difference_is_the_square_and_add_of_the_sides_shown(tmp_path: Path) -> None:
    a_rows = generated(51, 8, 4)
    b_rows = [{**row, "task": "u" + row["task"]} for row in generated(151, 9, 4)]
    a, b = imported(tmp_path, a_rows, "a"), imported(tmp_path, b_rows, "b")
    code, out, err = cli("compare", a, b, "--json", "--store", str(tmp_path / "s.db"))
    assert code == 0, err
    data = json.loads(out)
    assert data["mode"] == "unpaired"
    checked = 0
    for view in ("valid", "strict"):
        for name, metric in data["metrics"][view].items():
            sa, sb, diff = metric["a"], metric["b"], metric["difference"]
            if sa["ci_low"] is None or sb["ci_low"] is None:
                continue
            d = sb["estimate"] - sa["estimate"]
            low = d - math.hypot(sb["estimate"] - sb["ci_low"], sa["ci_high"] - sa["estimate"])
            high = d + math.hypot(sb["ci_high"] - sb["estimate"], sa["estimate"] - sa["ci_low"])
            assert (diff["estimate"], diff["ci_low"], diff["ci_high"]) == pytest.approx(
                (d, max(-1.0, low), min(1.0, high)), abs=1e-9
            ), name
            assert (metric["p_value"] < 0.05) == (low > 0 or high < 0), name
            checked += 1
    assert checked >= 6


# --- the library's inputs --------------------------------------------------------------------

BASE = [Outcome(f"t{i}", a, a < i % 3) for i in range(6) for a in range(3)]


def rate_with(extra: Outcome) -> float:
    estimate = summarize([*BASE, extra], n_boot=0).views["valid"].success_rate
    assert estimate is not None
    return estimate.estimate


@pytest.mark.parametrize("success", ["false", "true", "0", 2, 1, 0, None, 1.0])
def test_a_success_that_is_no_truth_value_is_refused(success: Any) -> None:
    with pytest.raises(ValueError, match=r"task 'x' attempt 0: success must be True or False"):
        Outcome("x", 0, success)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"task_id": None}, "task_id must be text"),
        ({"task_id": 3}, "task_id must be text"),
        ({"attempt": 0.5}, "attempt must be an integer"),
        ({"attempt": "a"}, "attempt must be an integer"),
        ({"attempt": True}, "attempt must be an integer"),
        ({"valid": "yes"}, "valid must be True or False"),
        ({"terminal_reason": None}, "terminal_reason must be text"),
        ({"weight": "2"}, "weight must be a number"),
        ({"weight": None}, "weight must be a number"),
        ({"cost": "1"}, "cost must be a number"),
        ({"cost": math.nan}, "cost must be a number"),
        ({"latency": True}, "latency must be a number"),
        ({"partial_score": math.nan}, "partial_score must be a number"),
    ],
)
def test_an_outcome_field_of_the_wrong_kind_is_refused_by_name(
    fields: dict[str, Any], named: str
) -> None:
    given: dict[str, Any] = {"task_id": "x", "attempt": 0, "success": False, **fields}
    with pytest.raises(ValueError, match=named):
        Outcome(**given)


def test_honest_outcomes_of_every_accepted_kind_count_as_before() -> None:
    honest = [
        Outcome("x", np.int64(0), np.bool_(True), cost=np.float64(0.5), latency=2),
        Outcome("x", 1, False, terminal_reason="agent_failure/step_limit", cost=None),
        Outcome("x", 2, False, valid=False, terminal_reason="grader_failure", latency=None),
        Outcome("x", 3, np.bool_(False), valid=np.bool_(False), partial_score=None),
        Outcome("y", 0, True, weight=2, partial_score=1, terminal_reason="success"),
        Outcome("y", 1, True, valid=False, weight=2.0),  # an invalid try's verdict: nothing
    ]
    summary = summarize(honest, n_boot=0)
    assert summary.terminal_reasons == {
        "agent_failure/step_limit": 1,
        "environment_failure": 2,
        "grader_failure": 1,
        "success": 2,
    }
    valid = summary.views["valid"].success_rate
    assert valid is not None and valid.estimate == pytest.approx((1 / 2 + 2 * 1) / 3)
    assert summary.invalid.by_reason == {"environment_failure": 2, "grader_failure": 1}
    assert summary.cost.unknown == 1 and summary.cost.total == 0.5


def test_an_outcome_without_a_reason_is_counted_by_the_reason_it_implies() -> None:
    """The default reason was "success": three failures were reported as three successes
    in ``terminal_reasons`` and three invalid attempts as invalid "by reason success"."""
    failures = summarize([Outcome(f"t{i}", 0, False) for i in range(3)], n_boot=0)
    assert failures.terminal_reasons == {"agent_failure": 3}
    broken = summarize([Outcome(f"t{i}", 0, False, valid=False) for i in range(3)], n_boot=0)
    assert broken.terminal_reasons == {"environment_failure": 3}
    assert broken.invalid.by_reason == {"environment_failure": 3}
    passed = summarize([Outcome(f"t{i}", 0, True) for i in range(3)], n_boot=0)
    assert passed.terminal_reasons == {"success": 3}
    assert Outcome("t", 0, False).terminal_reason == "agent_failure"


@pytest.mark.parametrize(
    ("valid", "reason"),
    [
        (True, "environment_failure"),
        (True, "grader_failure"),
        (True, "environment_failure/reset"),
        (False, "success"),
        (False, "agent_failure"),
        (False, "harness_compatibility_failure/context_window"),
    ],
)
def test_an_outcome_whose_validity_contradicts_its_reason_is_refused(
    valid: bool, reason: str
) -> None:
    with pytest.raises(ValueError, match=r"task 'x' attempt 0: valid=.* contradicts"):
        Outcome("x", 0, False, valid=valid, terminal_reason=reason)


def test_a_text_success_no_longer_counts_as_a_success() -> None:
    """``success="false"`` raised the suite's success rate from 1/3 (the honest False) to
    3/7, as a success."""
    assert rate_with(Outcome("x", 0, False)) == pytest.approx(2 / 7)
    with pytest.raises(ValueError, match="success must be True or False"):
        rate_with(Outcome("x", 0, "false"))


@pytest.mark.parametrize("k", [2.0, 1.5, True, "2", None])
def test_a_k_that_is_no_count_is_refused_by_name(k: Any) -> None:
    counts = task_counts(BASE)
    for single in (suite_pass_at_k, suite_pass_hat_k):
        with pytest.raises(ValueError, match=r"^k must be an integer of at least 1, got "):
            single(counts, k)
    for scalar in (pass_at_k, pass_hat_k):
        with pytest.raises(ValueError):
            scalar(4, 2, k)


@pytest.mark.parametrize("max_k", [2.0, 1.5, True, "2"])
def test_a_max_k_that_is_no_count_is_refused_by_name(max_k: Any) -> None:
    with pytest.raises(ValueError, match=r"^max_k must be an integer of at least 1, got "):
        summarize(BASE, max_k=max_k, n_boot=0)


def test_a_k_or_max_k_below_1_is_still_refused() -> None:
    counts = task_counts(BASE)
    for k in (0, -1, 4):
        with pytest.raises(ValueError, match=rf"k={k} outside 1\.\.3|k must be an integer"):
            suite_pass_at_k(counts, k)
    with pytest.raises(ValueError, match="max_k must be"):
        summarize(BASE, max_k=0, n_boot=0)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"seed": -1}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"n_boot": -1}, "n_boot"),
        ({"n_boot": 2.0}, "n_boot"),
        ({"n_boot": True}, "n_boot"),
    ],
)
def test_a_seed_or_number_of_resamples_that_is_no_count_is_refused(
    fields: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValueError, match=rf"^{named} must be an integer of at least 0, got "):
        summarize(BASE, **fields)
    with pytest.raises(ValueError, match=rf"^{named} must be an integer of at least 0, got "):
        compare(BASE, BASE, **fields)


def test_honest_k_seed_and_resamples_of_numpy_integers_are_taken() -> None:
    counts = task_counts(BASE)
    assert suite_pass_at_k(counts, np.int64(2)).estimate == pytest.approx(
        float(sum(ref_at(3, i % 3, 2) for i in range(6)) / 6)
    )
    summary = summarize(BASE, max_k=np.int64(2), seed=np.uint32(3), n_boot=np.int64(50))
    assert summary.views["valid"].kmax == 2
    assert summarize(BASE, n_boot=0).views["valid"].success_rate is not None
    assert pass_hat_k(np.int64(4), np.int64(2), np.int64(2)) == pytest.approx(1 / 6)


@pytest.mark.parametrize(
    "counts", [(3, 2, 1, 2), (-1, 2, 1, 2), (1, 2, 3, 2), (1.5, 2, 1, 2), (1, 2, 1, -2)]
)
def test_fisher_of_counts_that_are_no_counts_is_refused(counts: tuple[Any, ...]) -> None:
    """3 successes of 2 gave p = 1e-300, the smallest p-value there is."""
    with pytest.raises(ValueError):
        fisher_p(*counts)


def test_fisher_of_honest_counts_is_scipys() -> None:
    for a_c, a_n, b_c, b_n in [(0, 4, 4, 4), (2, 4, 2, 4), (0, 0, 1, 3), (3, 10, 9, 10)]:
        expected = scipy_stats.fisher_exact([[a_c, a_n - a_c], [b_c, b_n - b_c]]).pvalue
        assert fisher_p(a_c, a_n, b_c, b_n) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("ps", [[2.0, 0.01], [math.nan, 0.01], [-0.1, 0.5]])
def test_benjamini_hochberg_of_no_p_values_is_refused(ps: list[float]) -> None:
    with pytest.raises(ValueError, match=r"p-values must lie in \[0, 1\]"):
        benjamini_hochberg(ps)


def test_benjamini_hochberg_of_honest_p_values_is_unchanged() -> None:
    assert benjamini_hochberg([0.01, 0.04, 0.03, 1.0, 0.0]) == pytest.approx(
        [0.025, 0.05, 0.05, 1.0, 0.0]
    )
    assert benjamini_hochberg([]) == []


def test_pass_curves_of_counts_that_are_no_counts_are_refused() -> None:
    """3 successes of 2 gave a pass@1 of 1.5."""
    for n, c in (([2], [3]), ([2], [-1]), ([2.5], [1])):
        with pytest.raises(ValueError, match="0 <= c <= n"):
            pass_curves(n, c, 1)
    with pytest.raises(ValueError, match="kmax must be an integer"):
        pass_curves([4], [2], 1.5)
    at, hat = pass_curves([4, 2], [2, 2], 3)
    assert at[0].tolist() == pytest.approx([0.5, 5 / 6, 1.0])
    assert hat[1, :2].tolist() == [1.0, 1.0] and math.isnan(hat[1, 2])


def test_invalid_stats_of_more_invalid_attempts_than_attempts_is_refused() -> None:
    with pytest.raises(ValueError, match="1 invalid attempts of 0"):
        invalid_stats({"environment_failure": 1}, 0)
    assert invalid_stats({}, 0).rate == 0.0
    assert invalid_stats({"grader_failure": 1}, 4).rate_by_reason == {"grader_failure": 0.25}


def test_a_bootstrap_interval_of_no_resamples_is_refused() -> None:
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_interval([0.5, 1.0], [1.0, 1.0], n_boot=-1)
    with pytest.raises(ValueError, match="n_boot >= 1"):
        bootstrap_interval([0.5, 1.0], [1.0, 1.0], n_boot=0)
    low, high = bootstrap_interval([0.0, 1.0, 0.5], [1.0, 1.0, 1.0], n_boot=200)
    assert 0.0 <= low <= high <= 1.0
