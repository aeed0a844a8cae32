"""Twenty-second round: every printed suite value against an outside re-computation in exact
rationals, over generated batches with huge n, unequal n, k above some tasks' n, tasks with no
counted attempt, all-pass and all-fail tasks and harness failures.

The class fixed: which side of 0 and 1 a value is on was read from its float. pass@60 of 600
successes in 1,200 attempts is 1 - C(600,60)/C(1200,60) = 1 - 1e-181, which rounds to the
float 1.0; pass^590 is below the smallest float and rounds to 0.0; a weighted mean of four
1.0 and one 0.9999999999999999 is 1.0. The reports printed "1.000" and "0.000" for values the
exact fractions print ">0.999" and "<0.001" (docs/statistics.md: a value strictly between 0
and 1 never prints as either). The reference below is plain Python: ``math.comb`` and
``Fraction``, rounded half up by hand, written from the chapter and the docs alone.
"""

from __future__ import annotations

import csv
import json
import math
import random
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.report.numbers import fraction, signed
from groundstate.rounding import faithful, rounded
from groundstate.stats import (
    Outcome,
    compare,
    make_estimate,
    pass_curves,
    suite_pass_at_k,
    summarize,
    task_counts,
)

FAIL = "agent_failure/incorrect_state"
INVALID = "environment_failure/setup"
HARNESS = "harness_compatibility_failure/context_window"


# --- the reference ----------------------------------------------------------------------------


def ref_at(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def ref_hat(n: int, c: int, k: int) -> Fraction:
    return Fraction(math.comb(c, k), math.comb(n, k))


def ref_printed(value: Fraction) -> str:
    """The documented print of a rate: three decimals rounded half up, but a value strictly
    between 0 and 1 never as 0.000 or 1.000."""
    thousandths = math.floor(value * 1000 + Fraction(1, 2))
    if 0 < value < 1 and thousandths == 0:
        return "<0.001"
    if 0 < value < 1 and thousandths == 1000:
        return ">0.999"
    return f"{thousandths // 1000}.{thousandths % 1000:03d}"


def ref_mean(values: list[Fraction], weights: list[Fraction]) -> Fraction:
    return sum((v * w for v, w in zip(values, weights, strict=True)), Fraction(0)) / sum(weights)


@dataclass
class Task:
    task_id: str
    weight: Fraction
    ends: list[str]
    """The terminal reason of each attempt."""

    def n_c(self, view: str) -> tuple[int, int]:
        counted = [e for e in self.ends if view == "strict" or e != INVALID]
        return len(counted), counted.count("success")


def curve(tasks: list[Task], view: str, k: int, kind: str) -> tuple[Fraction, list[str]]:
    """The suite value at k over the counted tasks with at least k attempts, and the ids of
    the counted tasks left out."""
    over = [t for t in tasks if t.n_c(view)[0] >= k]
    est = ref_at if kind == "at" else ref_hat
    values = [est(*t.n_c(view), k) for t in over]
    left = sorted(t.task_id for t in tasks if 0 < t.n_c(view)[0] < k)
    return ref_mean(values, [t.weight for t in over]), left


def checked_ks(tasks: list[Task], view: str, top: int) -> list[int]:
    """The k a test re-computes: 1 to 12, every 37th, the last, and each side of every
    task's n - c and c (where its pass@k reaches 1 and its pass^k reaches 0)."""
    ks = {*range(1, 13), *range(1, top + 1, 37), top}
    for t in tasks:
        n, c = t.n_c(view)
        ks |= {n - c, n - c + 1, c, c + 1}
    return sorted(k for k in ks if 1 <= k <= top)


def generated(seed: int) -> list[Task]:
    """Five to eight tasks: small unequal n, one or two of 1,200 attempts whose successes sit
    near 0, n/2 or n, all-pass and all-fail tasks, a task whose every attempt was invalid and
    harness failures (failures in both views), with weights."""
    rng = random.Random(seed)
    tasks = []
    for i in range(rng.randint(5, 8)):
        shape = rng.choice(["small", "small", "small", "huge", "all", "none", "invalid"])
        n = 1200 if shape == "huge" else rng.randint(1, 6)
        if shape == "huge":
            c = rng.choice([1, 2, 600, 1198, 1199, rng.randint(1, 1199)])
        else:
            c = {"all": n, "none": 0, "invalid": 0}.get(shape, rng.randint(0, n))
        ends = ["success"] * c + [rng.choice([FAIL, FAIL, HARNESS]) for _ in range(n - c)]
        if shape == "invalid":
            ends = [INVALID] * n
        else:
            ends += [INVALID] * rng.choice([0, 0, 1])
        rng.shuffle(ends)
        tasks.append(Task(f"t{i}", Fraction(rng.choice([1, 1, 2, 3]), rng.choice([1, 2])), ends))
    if all(t.n_c("valid")[0] == 0 for t in tasks):
        tasks.append(Task("ok", Fraction(1), ["success", FAIL]))
    return tasks


def as_csv(tasks: list[Task], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["task_id", "attempt", "success", "terminal_reason", "weight"])
        for t in tasks:
            for attempt, end in enumerate(t.ends):
                writer.writerow([t.task_id, attempt, str(end == "success").lower(), end,
                                 float(t.weight)])  # fmt: skip


def cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.stderr
    return result.stdout


def imported(tmp: Path, tasks: list[Task]) -> str:
    as_csv(tasks, tmp / "b.csv")
    out = cli("import-results", str(tmp / "b.csv"), "--name", "x", "--store", str(tmp / "s.db"))
    return out.strip().splitlines()[-1].removeprefix("batch ")


# --- generated batches through the CLI -----------------------------------------------------


def check_estimate(got: dict[str, Any], exact: Fraction) -> None:
    """The JSON value is the exact one to float precision, on the same side of 0 and 1, and
    prints as the exact fraction prints."""
    assert got["estimate"] == pytest.approx(float(exact), rel=1e-9, abs=1e-300)
    assert (got["estimate"] == 0) == (exact == 0) and (got["estimate"] == 1) == (exact == 1)
    assert fraction(got["estimate"]) == ref_printed(exact), (got["estimate"], float(exact))


def table_rows(text: str) -> dict[str, list[str]]:
    """The rows of the text report's pass@k table of the valid view, by k."""
    part = text.split("capability (pass@k) and reliability (pass^k), valid attempts", 1)[1]
    part = part.split("capability (pass@k)", 1)[0]
    rows = {}
    for line in part.splitlines():
        cells = [c.strip() for c in re.split("[│┃]", line)[1:-1]]
        if cells and re.fullmatch(r"\d+\*?", cells[0]):
            rows[cells[0].rstrip("*")] = cells
    return rows


@pytest.mark.parametrize("seed", range(8))
def test_every_suite_value_of_a_generated_batch_is_the_exact_one(tmp_path: Path, seed: int) -> None:
    tasks = generated(seed)
    batch = imported(tmp_path, tasks)
    store = str(tmp_path / "s.db")
    got = json.loads(cli("report", batch, "--json", "--store", store, "--k-over-supporting"))
    for view, block in (("valid", got), ("strict", got["invalid_as_failure"])):
        counted = [t for t in tasks if t.n_c(view)[0] > 0]
        excluded = sorted(t.task_id for t in tasks if t.n_c(view)[0] == 0)
        assert got["summary"]["views"][view]["excluded_tasks"] == excluded  # visible, not dropped
        kmax = min(t.n_c(view)[0] for t in counted)
        top = max(t.n_c(view)[0] for t in counted)
        assert got["k_limits"][view]["kmax"] == kmax
        rates = [Fraction(t.n_c(view)[1], t.n_c(view)[0]) for t in counted]
        check_estimate(block["success_rate"], ref_mean(rates, [t.weight for t in counted]))
        assert block["success_rate"]["attempts"] == sum(t.n_c(view)[0] for t in counted)
        assert block["success_rate"]["n_tasks"] == len(counted)
        ks = checked_ks(tasks, view, top)
        for k in (k for k in ks if k <= kmax):
            check_estimate(block["pass_at_k"][str(k)], curve(tasks, view, k, "at")[0])
            check_estimate(block["pass_hat_k"][str(k)], curve(tasks, view, k, "hat")[0])
        beyond = got["k_limits"][view]["beyond"]
        assert sorted(map(int, beyond)) == list(range(kmax + 1, top + 1))
        for k in (k for k in ks if k > kmax):
            at, left = curve(tasks, view, k, "at")
            check_estimate(beyond[str(k)]["pass_at_k"], at)
            check_estimate(beyond[str(k)]["pass_hat_k"], curve(tasks, view, k, "hat")[0])
            assert beyond[str(k)]["excluded_tasks"] == left
    # The text prints the same figures (every tenth k of a long curve, to keep it quick).
    text = cli("report", batch, "--store", store, "--k-over-supporting")
    rows = table_rows(text)
    top = max(t.n_c("valid")[0] for t in tasks)
    for k in sorted({*range(1, min(top, 12) + 1), *range(1, top + 1, 97), top}):
        assert rows[str(k)][1] == ref_printed(curve(tasks, "valid", k, "at")[0]), k
        assert rows[str(k)][3] == ref_printed(curve(tasks, "valid", k, "hat")[0]), k


def test_a_pass_at_k_short_of_certain_prints_below_1_in_text_html_and_json(
    tmp_path: Path,
) -> None:
    """Five tasks of 1,200 attempts with 600 to 604 successes: pass@k is below 1 up to
    k = 600 (task t0 has 600 failures) and pass^k above 0 up to k = 604."""
    tasks = [Task(f"t{i}", Fraction(1), ["success"] * (600 + i) + [FAIL] * (600 - i))
             for i in range(5)]  # fmt: skip
    batch = imported(tmp_path, tasks)
    store = str(tmp_path / "s.db")
    got = json.loads(cli("report", batch, "--json", "--store", store))
    text = cli("report", batch, "--store", store)
    html_path = tmp_path / "r.html"
    cli("report", batch, "--store", store, "--html", str(html_path))
    page = html_path.read_text(encoding="utf-8")
    rows = table_rows(text)
    for k, at, hat in ((60, ">0.999", "<0.001"), (590, ">0.999", "<0.001"),
                       (600, ">0.999", "<0.001"), (601, "1.000", "<0.001"),
                       (604, "1.000", "<0.001"), (605, "1.000", "0.000")):  # fmt: skip
        assert ref_printed(curve(tasks, "valid", k, "at")[0]) == at
        assert ref_printed(curve(tasks, "valid", k, "hat")[0]) == hat
        assert fraction(got["pass_at_k"][str(k)]["estimate"]) == at
        assert fraction(got["pass_hat_k"][str(k)]["estimate"]) == hat
        assert (rows[str(k)][1], rows[str(k)][3]) == (at, hat)
        cells = re.search(rf'<tr><td class="n">{k}</td>(.*?)</tr>', page)
        assert cells, k
        shown = re.findall(r'<span class="est">([^<]*)</span>', cells.group(1))
        assert shown == [at.replace(">", "&gt;"), hat.replace("<", "&lt;")], shown
    # the exact bound's note says the tasks are near 1, not at it, where they are not at it
    assert got["pass_at_k"]["60"]["note"].startswith("all 5 tasks within 1e-12 of 1.000")
    assert got["pass_at_k"]["605"]["note"].startswith("all 5 tasks have the value 1.000")


# --- the parts alone --------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "c"), [(1200, 600), (1000, 500), (1200, 1), (1200, 1199),
                                       (3000, 1500), (40, 39), (5, 0), (5, 5)])  # fmt: skip
def test_each_task_value_is_on_the_side_of_0_and_1_its_exact_value_is(n: int, c: int) -> None:
    at, hat = pass_curves([n], [c], n)
    for k in range(1, n + 1, max(1, n // 300)):
        exact_at, exact_hat = ref_at(n, c, k), ref_hat(n, c, k)
        for value, exact in ((at[0, k - 1], exact_at), (hat[0, k - 1], exact_hat)):
            assert (value == 0, value == 1) == (exact == 0, exact == 1), (k, value)
            assert 0 <= value <= 1
            assert value == pytest.approx(float(exact), rel=1e-9, abs=1e-300)


def test_a_mean_of_values_not_all_at_an_end_is_not_at_it() -> None:
    below = np.nextafter(1.0, 0.0)
    top = make_estimate(np.array([below, 1.0, 1.0, 1.0, 1.0]), np.ones(5), [9] * 5)
    assert top.estimate < 1 and fraction(top.estimate) == ">0.999"
    bottom = make_estimate(np.array([5e-324, 0.0, 0.0, 0.0, 0.0]), np.ones(5), [9] * 5)
    assert bottom.estimate > 0 and fraction(bottom.estimate) == "<0.001"
    # the heavy weight of a task at 1 does not round the light one away
    heavy = make_estimate(np.array([0.999, 1.0, 1.0, 1.0, 1.0]), np.array([1e-17, 1, 1, 1, 1]),
                          [9] * 5)  # fmt: skip
    assert heavy.estimate < 1
    # controls: all at an end stay at it; a difference likewise off -1 and +1
    assert make_estimate(np.ones(5), np.ones(5), [9] * 5).estimate == 1.0
    assert make_estimate(np.zeros(5), np.ones(5), [9] * 5).estimate == 0.0
    diff = make_estimate(np.array([1.0, 1.0, 1.0, 1.0, below]), np.ones(5), [9] * 5,
                         difference=True)  # fmt: skip
    assert diff.estimate < 1
    plain = make_estimate(np.array([0.25, 0.5, 0.75, 1.0, 0.0]), np.ones(5), [9] * 5)
    assert plain.estimate == 0.5


def test_the_docs_say_the_side_is_decided_exactly() -> None:
    docs = (Path(__file__).parents[1] / "docs" / "statistics.md").read_text(encoding="utf-8")
    assert "decided exactly, not by its float" in docs


def test_a_value_next_to_a_rounding_tie_prints_on_its_exact_side() -> None:
    """pass@40 of a task of 1,200 attempts with 1,000 successes is 1 - 1e-31; weighted 207
    against 193 for a task at 0, the mean is 0.5175 - 5e-32, which no float tells from the
    tie 0.5175: it printed "0.518", the exact fraction prints "0.517". At 1 - 1e-181 likewise;
    a mean at the tie itself still prints half up."""
    outcomes = [Outcome("a", i, i < 1000, weight=207.0) for i in range(1200)]
    outcomes += [Outcome("b", i, False, weight=193.0) for i in range(40)]
    exact = ref_mean([ref_at(1200, 1000, 40), Fraction(0)], [Fraction(207), Fraction(193)])
    assert ref_printed(exact) == "0.517"
    got = summarize(outcomes, n_boot=0).views["valid"].pass_at_k[40].estimate
    assert fraction(got) == "0.517" and got == pytest.approx(float(exact), rel=1e-11)
    counts = task_counts(outcomes)
    assert fraction(suite_pass_at_k(counts, 40).estimate) == "0.517"
    # controls: the rate 1000/1200 * 207/400 = 0.43125 (no tie) and 9/16 (a tie, half up)
    rate = summarize(outcomes, n_boot=0).views["valid"].success_rate
    assert rate is not None and fraction(rate.estimate) == "0.431"
    assert ref_printed(ref_mean([Fraction(1000, 1200), Fraction(0)],
                                [Fraction(207), Fraction(193)])) == "0.431"  # fmt: skip
    tie = [Outcome("a", i, i < 9, weight=1.0) for i in range(16)]
    assert fraction(summarize(tie, n_boot=0).views["valid"].pass_at_k[1].estimate) == "0.563"


@pytest.mark.parametrize(("value", "exact", "want"), [
    (0.5175, Fraction(5175, 10000) - Fraction(1, 10**40), 0.517),
    (0.5175, Fraction(5175, 10000), 0.518),
    (0.5174999999999459, Fraction(5174999999999459, 10**16), 0.517),
    (0.0005, Fraction(5, 10000) - Fraction(1, 10**30), 0.0),
    (0.9995, Fraction(9995, 10000) + Fraction(1, 10**30), 1.0),
    (0.25, Fraction(1, 4), 0.25),
])  # fmt: skip
def test_faithful_rounds_as_the_rational_does(value: float, exact: Fraction, want: float) -> None:
    got = faithful(value, lambda: exact)
    assert rounded(got, 3) == want
    assert got == pytest.approx(float(exact), rel=1e-11)


def test_faithful_computes_the_rational_only_next_to_a_tie() -> None:
    def refuse() -> Fraction:
        raise AssertionError("not next to a tie")

    assert faithful(0.5174, refuse) == 0.5174
    assert math.isnan(faithful(math.nan, refuse))
    assert faithful(0.123456, refuse) == 0.123456


@pytest.mark.parametrize("paired", [True, False])
def test_compare_prints_each_side_as_its_exact_rational(paired: bool) -> None:
    """The near-tie batch above as one side of a comparison, paired (the same tasks) and
    unpaired (no task in common): each side's pass@40 prints "0.517", as in ``report``."""
    a = [Outcome("a", i, i < 1000, weight=207.0) for i in range(1200)]
    a += [Outcome("b", i, False, weight=193.0) for i in range(40)]
    b = a if paired else [Outcome(f"{o.task_id}2", o.attempt, o.success, weight=o.weight)
                          for o in a]  # fmt: skip
    found = compare(a, b, n_boot=0)
    assert found.mode == ("paired" if paired else "unpaired")
    d = next(d for d in found.differences
             if (d.metric, d.k, d.view) == ("pass_at_k", 40, "valid"))  # fmt: skip
    assert fraction(d.a.estimate) == fraction(d.b.estimate) == "0.517"


# --- cost, latency and denominators beside the suite values -----------------------------------


def ref_decimals(value: Fraction, digits: int) -> str:
    """*value* >= 0 with *digits* decimals, rounded half up."""
    units = math.floor(value * 10**digits + Fraction(1, 2))
    return f"{units // 10**digits}.{units % 10**digits:0{digits}d}"


def ref_p90(values: list[Fraction]) -> Fraction:
    """numpy's default (R's type 7): linear between the order statistics around 0.9 (n - 1)."""
    ordered = sorted(values)
    h = Fraction(9, 10) * (len(ordered) - 1)
    low = math.floor(h)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (h - low) * (ordered[high] - ordered[low])


def ref_median(values: list[Fraction]) -> Fraction:
    ordered, half = sorted(values), len(values) // 2
    return ordered[half] if len(values) % 2 else (ordered[half - 1] + ordered[half]) / 2


@pytest.mark.parametrize("seed", range(3))
def test_cost_latency_and_denominators_match_the_reference(tmp_path: Path, seed: int) -> None:
    """Costs of four decimals (means and medians land on ties of the fifth) and latencies of
    three, some not known; invalid attempts in every figure's denominator they belong to."""
    rng = random.Random(seed)
    rows, costs, latencies, ends = [], [], [], []
    for t in range(rng.randint(5, 9)):
        for attempt in range(rng.randint(1, 5)):
            end = rng.choice(["success", "success", FAIL, HARNESS, INVALID])
            cost = None if rng.random() < 0.15 else Fraction(rng.randint(1, 99999), 10**4)
            latency = Fraction(rng.randint(1, 99999), 10**3)
            shown_cost = "" if cost is None else str(float(cost))
            rows.append([f"t{t}", attempt, str(end == "success").lower(), end, shown_cost,
                         str(float(latency))])  # fmt: skip
            costs.append(cost)
            latencies.append(latency)
            ends.append(end)
    with (tmp_path / "b.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["task_id", "attempt", "success", "terminal_reason", "cost", "latency"])
        writer.writerows(rows)
    out = cli("import-results", str(tmp_path / "b.csv"), "--name", "x", "--store",
              str(tmp_path / "s.db"))  # fmt: skip
    batch = out.strip().splitlines()[-1].removeprefix("batch ")
    got = json.loads(cli("report", batch, "--json", "--store", str(tmp_path / "s.db")))
    summary = got["summary"]
    known = [c for c in costs if c is not None]
    assert summary["cost"]["unknown"] == len(costs) - len(known)
    assert summary["cost"]["total"] == pytest.approx(float(sum(known)), rel=1e-12)
    for name, values in (("cost", known), ("latency", latencies)):
        mean = sum(values, Fraction(0)) / len(values)
        assert summary[name]["mean"] == pytest.approx(float(mean), rel=1e-12)
        assert summary[name]["median"] == pytest.approx(float(ref_median(values)), rel=1e-12)
        assert summary[name]["p90"] == pytest.approx(float(ref_p90(values)), rel=1e-12)
    successes = ends.count("success")
    if len(known) < len(costs) or not successes:
        assert summary["cost_per_success"] is None  # a sum over the known would understate it
    else:
        assert summary["cost_per_success"] == pytest.approx(float(sum(known) / successes))
    invalid = ends.count(INVALID)
    assert (got["valid_attempts"], got["invalid_attempts"]) == (len(ends) - invalid, invalid)
    assert summary["invalid"]["rate"] == pytest.approx(invalid / len(ends))
    # harness failures count against the system in both views: never dropped, never invalid
    assert got["terminal_reasons"].get(HARNESS, 0) == ends.count(HARNESS)
    # the text prints the exact figures, rounded half up
    text = " ".join(cli("report", batch, "--store", str(tmp_path / "s.db")).split())
    mean_cost = sum(known, Fraction(0)) / len(known)
    want = (f"cost per attempt: mean {ref_decimals(mean_cost, 4)}, median "
            f"{ref_decimals(ref_median(known), 4)}, p90 "
            f"{ref_decimals(ref_p90(known), 4)}")  # fmt: skip
    assert want in text, text[-800:]
    mean_latency = sum(latencies, Fraction(0)) / len(latencies)
    want = (f"latency per attempt: mean {ref_decimals(mean_latency, 3)}s, median "
            f"{ref_decimals(ref_median(latencies), 3)}s, p90 "
            f"{ref_decimals(ref_p90(latencies), 3)}s")  # fmt: skip
    assert want in text, text[-800:]


@pytest.mark.parametrize("paired", [True, False])
def test_a_compared_difference_next_to_a_tie_prints_as_its_exact_rational(paired: bool) -> None:
    """b fails every attempt of the near-tie batch's tasks: b - a is -(0.5175 - 5e-32), which
    prints "-0.517" (half away from zero); the float -0.5175 printed "-0.518"."""
    a = [Outcome("a", i, i < 1000, weight=207.0) for i in range(1200)]
    a += [Outcome("b", i, False, weight=193.0) for i in range(40)]
    b = [Outcome(o.task_id if paired else f"{o.task_id}2", o.attempt, False, weight=o.weight)
         for o in a]  # fmt: skip
    found = compare(a, b, n_boot=0)
    d = next(d for d in found.differences
             if (d.metric, d.k, d.view) == ("pass_at_k", 40, "valid"))  # fmt: skip
    assert signed(d.difference.estimate) == "-0.517"
    assert fraction(d.b.estimate) == "0.000"
