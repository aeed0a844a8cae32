"""Eighth statistics audit: every printed statistic against an outside re-computation.

The references here are written from docs/statistics.md and the chapter alone: the
bootstrap as "tasks resampled with replacement" (numpy's seeded draw of the counted tasks),
the comparison's intervals, tests and counts as the doc states them, and the printed text
parsed back and held to the JSON it came from.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from math import comb
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from groundstate.stats import Outcome, compare, summarize
from tests.test_stats_independent import cli, import_text, report
from tests.test_stats_views import html_tables, rows_of, text_report


def attempts(task: str, ends: str, partial: float | None = None) -> list[Outcome]:
    """One outcome per letter: s success, f failure, i invalid (an environment failure)."""
    return [
        Outcome(
            task,
            j,
            end == "s",
            valid=end != "i",
            terminal_reason={"s": "success", "f": "agent_failure", "i": "environment_failure"}[end],
            partial_score=None if end == "i" else partial,
        )
        for j, end in enumerate(ends)
    ]


# --- the bootstrap resamples the tasks a figure counts -------------------------------------


def ref_bootstrap(values: list[float], seed: int, n_boot: int) -> tuple[float, float]:
    """Percentile interval of the mean when the T tasks are drawn with replacement."""
    v = np.asarray(values)
    draws = np.random.default_rng(seed).integers(0, len(v), size=(n_boot, len(v)))
    means = v[draws].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def test_the_valid_views_bootstrap_resamples_only_its_own_tasks() -> None:
    """Five counted tasks and twenty whose every attempt was invalid: the valid view's second
    opinion is the bootstrap of its five tasks. Drawing 25 rows and ignoring the invalid ones
    resampled a random number of tasks (some draws held one), and the interval of rates
    0, 0.25, 0.5, 1, 1 reached 1."""
    counted = [
        attempts(f"t{i}", ends) for i, ends in enumerate(["ffff", "sfff", "ssff", "ssss", "ssss"])
    ]
    broken = [attempts(f"x{i:02}", "iiii") for i in range(20)]
    records = [o for task in counted + broken for o in task]
    got = summarize(records, n_boot=400).views["valid"].success_rate
    assert got is not None and got.n_tasks == 5
    want = ref_bootstrap([0.0, 0.25, 0.5, 1.0, 1.0], seed=0, n_boot=400)
    assert (got.boot_low, got.boot_high) == (pytest.approx(want[0], abs=1e-6),
                                             pytest.approx(want[1], abs=1e-6))  # fmt: skip
    # The same as a batch without those tasks at all.
    alone = summarize([o for task in counted for o in task], n_boot=400).views["valid"]
    assert alone.success_rate is not None
    assert (got.boot_low, got.boot_high) == (alone.success_rate.boot_low,
                                             alone.success_rate.boot_high)  # fmt: skip


def test_a_compared_partial_score_is_bootstrapped_over_the_tasks_scored_on_both_sides() -> None:
    """Eight tasks compared, five with rubrics on both sides: the partial score's difference
    resamples those five, not a random number of them among eight rows."""
    a, b = [], []
    scores = [(0.2, 0.9), (0.5, 0.5), (0.1, 0.6), (0.9, 0.3), (0.4, 1.0)]
    for i, (pa, pb) in enumerate(scores):
        a += attempts(f"t{i}", "sfsf", pa)
        b += attempts(f"t{i}", "ssff", pb)
    for i in range(3):  # no rubric
        a += attempts(f"u{i}", "ffff")
        b += attempts(f"u{i}", "sfss")
    got = compare(a, b, n_boot=400).find("partial_score").difference
    want = ref_bootstrap([pb - pa for pa, pb in scores], seed=0, n_boot=400)
    assert (got.boot_low, got.boot_high) == (pytest.approx(want[0], abs=1e-6),
                                             pytest.approx(want[1], abs=1e-6))  # fmt: skip


# --- a printed interval is never zero-width, and reads the same in every view --------------


def bounds_of(text: str) -> tuple[float, float]:
    """The two bounds of a printed interval ``[low, high]`` (a trailing "bound" allowed)."""
    low, high = text.split("]")[0].strip("[").split(", ")
    return float(low), float(high)


def check_printed(text: str, estimate: dict[str, Any], lo: float = 0.0, hi: float = 1.0) -> None:
    """*text* prints the JSON interval of *estimate*: apart, holding the estimate, each bound
    the JSON's rounded (never more than half a unit of its last printed decimal away), and
    a bound that is not at an end of the range never printed as that end."""
    low, high = bounds_of(text)
    assert low < high, text
    assert low <= estimate["estimate"] <= high or math.isclose(
        estimate["estimate"], low if estimate["estimate"] < low else high, abs_tol=5e-4
    )
    for shown, stored in ((low, estimate["ci_low"]), (high, estimate["ci_high"])):
        printed = text.split("]")[0].strip("[").split(", ")[shown == high]
        decimals = len(printed.split(".")[1])
        assert abs(shown - stored) <= 0.5 * 10.0**-decimals + 1e-15, (text, stored)
        assert stored in (lo, hi) or shown not in (lo, hi), (text, stored)


def partial_rows(scores: list[float]) -> str:
    rows = ["task_id,attempt,success,partial_score"]
    rows += [f"t{i},0,{int(score > 0.7)},{score!r}" for i, score in enumerate(scores)]
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize(
    "scores",
    [
        [0.5, 0.5001, 0.5002, 0.50005, 0.50015],  # [0.49996, 0.50024]: "[0.500, 0.500]"
        [0.9999, 0.99995, 1.0, 0.99992, 0.99998],  # ">0.999 [1.000, 1.000]"
        [0.0001, 0.00005, 0.0, 0.00008, 0.00002],  # "<0.001 [0.000, 0.000]"
    ],
)
def test_a_narrow_interval_prints_apart_and_alike_in_the_terminal_and_html(
    tmp_path: Path, scores: list[float]
) -> None:
    """Five tasks whose partial scores differ in the fourth decimal: the interval is narrower
    than the third decimal, and three decimals printed it as zero-width (the rule never
    gives one), and near 1 as [1.000, 1.000] beside an estimate of ">0.999"."""
    batch_id = import_text(tmp_path, partial_rows(scores))
    got = report(tmp_path, batch_id)["partial_score"]
    assert got["method"] == "agresti_coull_t_cr1" and got["ci_low"] < got["ci_high"]
    terminal = text_report(tmp_path / "s.db", batch_id)
    table = {r[0]: r for r in rows_of(terminal.split("partial score (")[1])[:2]}
    shown = table["valid attempts"][2]
    check_printed(shown, got)
    page = tmp_path / "r.html"
    cli("report", batch_id, "--store", str(tmp_path / "s.db"), "--html", str(page))
    (partial,) = [
        t for t in html_tables(page).tables["suite-numbers"] if t[0][1].startswith("partial")
    ]
    assert partial[1][1].split(" ", 1)[1] == shown  # the same text in both reports


def test_a_narrow_difference_prints_apart_and_alike_in_the_terminal_and_html(
    tmp_path: Path,
) -> None:
    """b's partial scores are a's plus 0.0001 (to within 2e-5): the difference's interval
    [+0.00008, +0.00012] printed as "[+0.0001, +0.0001]", each bound kept apart from 0
    but not from the other. Since the nineteenth round each end reaches at least the exact
    bound of every task at the highest (lowest) difference, so five tasks that nearly agree
    are no surer than five that agree exactly: the interval holds 0, and the terminal and
    HTML still print it alike."""
    a = [0.3, 0.5, 0.7, 0.2, 0.6]
    b = [x + 0.0001 + d for x, d in zip(a, [0.0, 1e-5, 2e-5, -1e-5, 0.0], strict=True)]
    first = import_text(tmp_path, partial_rows(a), name="a")
    second = import_text(tmp_path, partial_rows(b), name="b")
    store = str(tmp_path / "s.db")
    code, out, err = cli("compare", first, second, "--json", "--store", store)
    assert code == 0, err
    metric = json.loads(out)["metrics"]["valid"]["partial_score"]["difference"]
    r, moved = 0.025 ** (1 / 5), [y - x for x, y in zip(a, b, strict=True)]
    assert metric["method"] == "t_cr1"
    assert metric["ci_low"] == pytest.approx(-1 + (1 + max(moved)) * r)
    assert metric["ci_high"] == pytest.approx(1 - (1 - min(moved)) * r)
    code, out, err = cli("compare", first, second, "--store", store)
    assert code == 0, err
    (row,) = [r for r in rows_of(out.split("invalid attempts count")[0]) if r[0] == "partial_score"]
    check_printed(row[4], metric, -1.0, 1.0)
    assert bounds_of(row[4])[0] < 0 < bounds_of(row[4])[1]  # holds 0, as the interval does
    page = tmp_path / "c.html"
    cli("compare", first, second, "--store", store, "--html", str(page))
    cells = [r for t in html_tables(page).tables["metrics"] for r in t if r[0] == "partial_score"]
    assert cells[0][3].split(" ", 1)[1] == row[4]


# --- an unpaired comparison says what it compared ------------------------------------------


def test_an_unpaired_comparison_drops_no_task_and_does_not_call_itself_paired(
    tmp_path: Path,
) -> None:
    """Six tasks of a and seven of b, one shared: each batch is compared over all its own
    tasks, yet the JSON, terminal and HTML said "12 dropped", and the HTML page was headed
    "Paired comparison" with "differences are b - a over the 1 tasks both batches ran"."""
    a = ["task_id,attempt,success"] + [
        f"a{i},{j},{(i + j) % 2}" for i in range(6) for j in range(3)
    ]
    b = ["task_id,attempt,success", "a0,0,1"]
    b += [f"b{i},{j},{int((i + j) % 3 > 0)}" for i in range(7) for j in range(3)]
    first = import_text(tmp_path, "\n".join(a) + "\n", name="a")
    second = import_text(tmp_path, "\n".join(b) + "\n", name="b")
    store = str(tmp_path / "s.db")
    code, out, err = cli("compare", first, second, "--json", "--store", store)
    assert code == 0, err
    data = json.loads(out)
    assert data["mode"] == "unpaired" and data["dropped_tasks"] == 0
    difference = data["metrics"]["valid"]["success_rate"]["difference"]
    # every task of each side counted, a0 (in both) once: 6 + 8 - 1
    assert difference["n_tasks"] == 13
    page = tmp_path / "c.html"
    code, out, err = cli("compare", first, second, "--store", store, "--html", str(page))
    assert code == 0, err
    assert out.startswith("HTML report:")
    head = " ".join(out.split("\n")[1:3])
    assert "dropped" not in head and "1 task in both" in head
    assert "1 tasks in both" not in out and "1 tasks with" not in " ".join(out.split())
    text = page.read_text(encoding="utf-8")
    assert "Paired comparison" not in text and "UNPAIRED comparison:" in text
    assert "over the 1 tasks" not in text and "dropped" not in text


# --- the partial score's denominators are the attempts it is a mean of --------------------

PARTLY_SCORED = """task_id,attempt,success,terminal_reason,partial_score
t1,0,1,,1.0
t1,1,0,,
t1,2,0,,
t1,3,1,,0.5
t2,0,0,,0.25
t2,1,0,environment_failure,
"""


def test_the_partial_score_counts_the_attempts_that_carry_one(tmp_path: Path) -> None:
    """t1 has four valid attempts of which two carry a score (an import may score some): its
    partial score, 0.75, is a mean over two, but the report printed "attempts counted 4"
    beside it. Valid view: 2 + 1 scored attempts; strict: t2's invalid attempt scores 0
    and counts (2 + 2). Compared with itself, each side and the difference say the same."""
    batch_id = import_text(tmp_path, PARTLY_SCORED)
    got = report(tmp_path, batch_id)
    valid, strict = got["partial_score"], got["invalid_as_failure"]["partial_score"]
    assert valid["estimate"] == pytest.approx((0.75 + 0.25) / 2)
    assert strict["estimate"] == pytest.approx((0.75 + 0.125) / 2)
    assert (valid["attempts"], valid["min_n"], valid["max_n"]) == (3, 1, 2)
    assert (strict["attempts"], strict["min_n"], strict["max_n"]) == (4, 2, 2)
    rows = {row["task_id"]: row for row in got["tasks"]}
    assert [rows[t]["valid"]["scored"] for t in ("t1", "t2")] == [2, 1]
    assert [rows[t]["strict"]["scored"] for t in ("t1", "t2")] == [2, 2]
    assert got["success_rate"]["attempts"] == 5  # the binary result counts every attempt
    terminal = text_report(tmp_path / "s.db", batch_id)
    table = {r[0]: r for r in rows_of(terminal.split("partial score (")[1])[:2]}
    assert table["valid attempts"][5] == "3" and table["invalid = failure"][5] == "4"
    code, out, err = cli("compare", batch_id, batch_id, "--json", "--store", str(tmp_path / "s.db"))
    assert code == 0, err
    for view, attempts in (("valid", 3), ("strict", 4)):
        metric = json.loads(out)["metrics"][view]["partial_score"]
        assert (metric["a"]["attempts"], metric["b"]["attempts"]) == (attempts, attempts)
        assert metric["difference"]["attempts"] == 2 * attempts


# --- the paired comparison of every k, both views, against exact rationals ---------------


def ref_fisher(ac: int, an: int, bc: int, bn: int) -> Fraction:
    """Two-sided Fisher exact p: the hypergeometric tables at most as likely as observed."""
    total, wins = an + bn, ac + bc

    def chance(x: int) -> Fraction:
        return Fraction(comb(wins, x) * comb(total - wins, an - x), comb(total, an))

    seen = chance(ac)
    return sum((chance(x) for x in range(max(0, an - total + wins), min(an, wins) + 1)
                if chance(x) <= seen), Fraction(0))  # fmt: skip


def ref_bh(ps: list[float]) -> list[float]:
    """Benjamini-Hochberg q-values by their definition: min over j >= rank of m p_(j) / j."""
    m = len(ps)
    ranked = sorted(range(m), key=lambda i: ps[i])
    return [
        min(1.0, min(ps[ranked[j]] * m / (j + 1) for j in range(rank, m)))
        for rank in sorted(range(m), key=lambda r: ranked[r])
    ]


ENDS = st.lists(st.sampled_from("sfi"), min_size=1, max_size=5)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["ab", "ab", "a", "b"]), ENDS, ENDS), max_size=10))
def test_paired_differences_of_every_k_in_both_views_match_exact_rationals(
    spec: list[tuple[str, str, str]],
) -> None:
    """Tasks in one batch only, unequal attempts, invalid attempts anywhere: per view, the
    tasks with counted attempts on both sides are paired, k runs to the fewest of them on
    either side, and every pass@k and pass^k difference, its t interval and p (or the exact
    sign test when every task moved by the whole range) is the reference's; the per-task
    Fisher p and BH q are exact."""
    a_side = {f"t{i}": ea for i, (where, ea, _) in enumerate(spec) if "a" in where}
    b_side = {f"t{i}": eb for i, (where, _, eb) in enumerate(spec) if "b" in where}
    if not a_side or not b_side:
        return
    a = [o for t, ends in a_side.items() for o in attempts(t, ends)]
    b = [o for t, ends in b_side.items() for o in attempts(t, ends)]
    got = compare(a, b, n_boot=0)

    def nc(ends: str, view: str) -> tuple[int, int]:
        return (len(ends) - ends.count("i") if view == "valid" else len(ends)), ends.count("s")

    shared = sorted(a_side.keys() & b_side.keys())
    paired = [t for t in shared if nc(a_side[t], "valid")[0] and nc(b_side[t], "valid")[0]]
    assert got.paired_tasks == tuple(paired)
    cells = [(*nc(a_side[t], "valid")[::-1], *nc(b_side[t], "valid")[::-1]) for t in paired]
    ps = [float(ref_fisher(*cell)) for cell in cells]
    for change, p, q in zip(got.per_task, ps, ref_bh(ps), strict=True):
        assert change.p_value == pytest.approx(p, abs=1e-12)
        assert change.q_value == pytest.approx(q, abs=1e-12)
    if got.mode != "paired":
        return
    for view in ("valid", "strict"):
        rows = [t for t in shared if nc(a_side[t], view)[0] and nc(b_side[t], view)[0]]
        if not rows:
            continue
        k = min(min(nc(a_side[t], view)[0], nc(b_side[t], view)[0]) for t in rows)
        assert got.common_k[view] == k
        for metric, kk in [("success_rate", None)] + [
            (m, j) for m in ("pass_at_k", "pass_hat_k") for j in range(1, k + 1)
        ]:
            diffs = [
                ref_value(*nc(b_side[t], view), metric, kk)
                - ref_value(*nc(a_side[t], view), metric, kk)
                for t in rows
            ]
            d = got.find(metric, view, kk)
            check_difference(d, [float(x) for x in diffs], float(sum(diffs) / len(diffs)))


def ref_value(n: int, c: int, metric: str, k: int | None) -> Fraction:
    if k is None:
        return Fraction(c, n)
    if metric == "pass_hat_k":
        return Fraction(comb(c, k), comb(n, k))
    return 1 - Fraction(comb(n - c, k), comb(n, k))


def check_difference(d: Any, diffs: list[float], mean: float) -> None:
    """b - a over equally weighted tasks by the doc's rule: n/a below 5 tasks; every task at
    one value v: the exact bound and min(1, 2 / (1 + |v|)^T) (2 * 0.5^T at +-1; thirteenth
    round); else the t interval on T - 1 df, each end reaching at least the exact bound of
    every task at the highest (lowest) difference, and the paired t test's p, at least that
    bound's level (nineteenth round)."""
    t = len(diffs)
    assert d.difference.estimate == pytest.approx(mean, abs=1e-12) and d.difference.n_tasks == t
    if t < 5:
        assert d.difference.ci_low is None and d.p_value is None
        return
    r = 0.025 ** (1 / t)
    far = max(diffs) if mean > 0 else -min(diffs)
    bound_p = 1.0 if mean == 0 else min(1.0, 2 / (1 + far) ** t)
    if max(diffs) - min(diffs) <= 1e-12:
        assert d.difference.method == "exact_bound"
        assert d.p_value == pytest.approx(bound_p)
        assert d.difference.ci_low == pytest.approx(-1 + (1 + diffs[0]) * r, abs=1e-9)
        assert d.difference.ci_high == pytest.approx(1 - (1 - diffs[0]) * r, abs=1e-9)
    else:
        se = math.sqrt(math.fsum((x - mean) ** 2 for x in diffs) / (t * (t - 1)))
        q = scipy_stats.t.ppf(0.975, t - 1)
        assert d.difference.se == pytest.approx(se, rel=1e-9)
        p = max(2 * scipy_stats.t.sf(abs(mean / se), t - 1), bound_p)
        assert d.p_value == pytest.approx(p, rel=1e-7)
        low = min(max(-1.0, mean - q * se), -1 + (1 + max(diffs)) * r)
        high = max(min(1.0, mean + q * se), 1 - (1 - min(diffs)) * r)
        assert d.difference.ci_low == pytest.approx(low, abs=1e-9)
        assert d.difference.ci_high == pytest.approx(high, abs=1e-9)


def test_an_exact_bound_of_a_difference_is_marked_in_the_html_as_in_the_terminal(
    tmp_path: Path,
) -> None:
    """Six tasks failing every attempt in a and passing every one in b: b - a = +1 on each,
    an exact one-sided bound [0.025^(1/6) * 2 - 1, 1]. The terminal marked it "bound"; the
    HTML comparison printed it as a plain interval."""
    rows = "task_id,attempt,success\n"
    first = import_text(tmp_path, rows + "".join(f"t{i},0,0\n" for i in range(6)), name="a")
    second = import_text(tmp_path, rows + "".join(f"t{i},0,1\n" for i in range(6)), name="b")
    store, page = str(tmp_path / "s.db"), tmp_path / "c.html"
    code, out, err = cli("compare", first, second, "--store", store, "--html", str(page))
    assert code == 0, err
    low = f"+{2 * 0.025 ** (1 / 6) - 1:.3f}"
    (row,) = [r for r in rows_of(out.split("invalid attempts count")[0]) if r[0] == "success_rate"]
    assert row[4] == f"[{low}, +1.000] bound"
    cells = [r for t in html_tables(page).tables["metrics"] for r in t if r[0] == "success_rate"]
    assert cells[0][3] == f"+1.000 [{low}, +1.000] bound"


def test_the_reports_name_the_interval_rule_they_print(tmp_path: Path) -> None:
    """Near 0 the printed interval is the Agresti-Coull one, not estimate +- t * SE: the
    terminal's header and the HTML page described only "task-clustered SE, t quantile", so
    a reader recomputing that symmetric interval got another one."""
    rows = "task_id,attempt,success\n" + "".join(
        f"t{i},{j},{int(i == 0 and j == 0)}\n" for i in range(6) for j in range(2)
    )
    batch_id = import_text(tmp_path, rows)
    got = report(tmp_path, batch_id)["success_rate"]  # 1/12: one success in twelve
    half = scipy_stats.t.ppf(0.975, 5) * got["se"]
    assert got["ci_high"] > got["estimate"] + half + 0.05  # not the symmetric t interval
    terminal = " ".join(text_report(tmp_path / "s.db", batch_id).split())
    assert "intervals: Agresti-Coull on the effective n of the task-clustered SE" in terminal
    page = tmp_path / "r.html"
    cli("report", batch_id, "--store", str(tmp_path / "s.db"), "--html", str(page))
    assert "Agresti-Coull intervals on the effective number" in page.read_text(encoding="utf-8")
