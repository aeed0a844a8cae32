"""Thirty-third round: grader agreement over the pairs both sides judged, and sample-failures
with nothing to sample.

- ``agreement`` counted an attempt invalid on both sides ("invalid" against "invalid") as
  agreeing and one invalid on one side as a disagreement: nine pairs invalid on both sides and
  one valid pair the graders disagree on printed "share agreeing 0.900". An invalid attempt
  was graded by no one (every other figure leaves it out of its denominator): the agreement is
  now over the judged pairs (valid on both sides), the others counted and listed apart, the
  share has the interval rule's interval (tasks as clusters), and with no judged pair the
  command exits 3 (no estimate). Every figure is recomputed here by hand.
- ``sample-failures`` of a batch with no valid attempt exited 2 ("no valid failed runs"), as for
  a batch whose attempts all passed: it has no estimate, exit 3 as ``report``; the other says
  "nothing to sample" with the batch's counts.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from groundstate.diagnosis import verdict_agreement
from groundstate.records import AgentRun

from .test_stats_round24 import Row, cli, imported

ENV = "environment_failure/x"


def _store(tmp_path: Path) -> list[str]:
    return ["--store", str(tmp_path / "s.db")]


def _agreement(tmp_path: Path, a: list[Row], b: list[Row], *extra: str) -> tuple[int, str, str]:
    first, second = imported(tmp_path, a, "a"), imported(tmp_path, b, "b")
    return cli("agreement", first, second, *extra, *_store(tmp_path))


def _json(tmp_path: Path, a: list[Row], b: list[Row], *extra: str) -> dict[str, Any]:
    code, out, err = _agreement(tmp_path, a, b, "--json", *extra)
    assert code == 0, err
    found: dict[str, Any] = json.loads(out)
    return found


# --- the defect: invalid pairs counted as agreeing ---------------------------------------------

NINE_INVALID = [Row(t, i, ENV) for t in "abcde" for i in range(2)][:-1]
"""Nine attempts invalid (on both sides, below), and the tenth (task e, attempt 2) valid."""
A_ONE = [*NINE_INVALID, Row("e", 1, "success")]
B_ONE = [*NINE_INVALID, Row("e", 1, "agent_failure/x")]


def test_pairs_invalid_on_both_sides_are_no_agreement(tmp_path: Path) -> None:
    """Fails on the old code: "share agreeing 0.900" (9 of 10, the invalid pairs agreeing)."""
    code, out, err = _agreement(tmp_path, A_ONE, B_ONE)
    assert code == 0, err
    assert "0.900" not in out
    assert "share agreeing 0.000 over 1 judged pair (1 task), 95% interval n/a: 1 task" in out
    assert "1 judged by both; 9 invalid on both sides, 0 on one side (A 0, B 0)" in out
    assert "disagree: e attempt 2: A true" in out


def test_the_json_carries_every_count(tmp_path: Path) -> None:
    """Fails on the old code: no ``judged``, ``invalid_*`` or ``share``; agreement 0.9."""
    found = _json(tmp_path, A_ONE, B_ONE)
    assert (found["paired"], found["judged"], found["invalid_both"]) == (10, 1, 9)
    assert (found["invalid_a_only"], found["invalid_b_only"], found["one_sided"]) == (0, 0, [])
    assert found["agreement"]["percent_agreement"] == 0.0 and found["agreement"]["units"] == 1
    assert found["share"]["estimate"] == 0.0 and found["share"]["attempts"] == 1
    assert found["share"]["ci_low"] is None and "1 task" in found["share"]["note"]
    assert found["confusion"] == {"true": {"false": 1}}


def test_a_pair_invalid_on_one_side_is_no_disagreement(tmp_path: Path) -> None:
    """Fails on the old code: "invalid" against "true" was counted a disagreement (share 0.5,
    kappa 0 of two pairs); it is one pair judged, agreeing, and one listed apart."""
    a = [Row("t", 0, "success"), Row("t", 1, "success")]
    b = [Row("t", 0, "success"), Row("t", 1, ENV)]
    found = _json(tmp_path, a, b)
    assert (found["judged"], found["invalid_a_only"], found["invalid_b_only"]) == (1, 0, 1)
    assert found["agreement"]["percent_agreement"] == 1.0 and found["disagreements"] == []
    (one,) = found["one_sided"]
    assert (one["task_id"], one["attempt"], one["a"], one["b"]) == ("t", 2, "true", "invalid")
    (tmp_path / "text").mkdir()
    code, out, _ = _agreement(tmp_path / "text", a, b)
    assert code == 0 and "not judged: t attempt 2: A true" in out and "B invalid" in out
    assert "0 invalid on both sides, 1 on one side (A 0, B 1)" in out


@pytest.mark.parametrize("on", ["terminal_reason", "reason_class"])
def test_invalid_pairs_are_left_out_on_every_field(tmp_path: Path, on: str) -> None:
    """Fails on the old code: two harness failures with one reason "agreed" on it."""
    found = _json(tmp_path, A_ONE, B_ONE, "--on", on)
    assert (found["judged"], found["invalid_both"]) == (1, 9)
    assert found["agreement"]["percent_agreement"] == 0.0
    assert ENV not in json.dumps(found["confusion"]) and "environment_failure" not in str(
        found["confusion"]
    )


@pytest.mark.parametrize("extra", [[], ["--json"], ["--on", "terminal_reason"]])
def test_no_pair_judged_by_both_sides_is_no_estimate(tmp_path: Path, extra: list[str]) -> None:
    """Fails on the old code (exit 0, "share agreeing 0.000" of pairs no grader judged): each
    side has valid attempts (an estimate of its own), but never on the same attempt."""
    a = [Row(t, i, "success" if t == "a" else ENV) for t in "ab" for i in range(2)]
    b = [Row(t, i, "success" if t == "b" else ENV) for t in "ab" for i in range(2)]
    code, out, err = _agreement(tmp_path, a, b, *extra)
    assert code == 3, err
    # --json prints the counts and why since the thirty-fourth round (tests/test_tidy_round34.py)
    assert out == "" if "--json" not in extra else json.loads(out)["judged"] == 0
    assert err.startswith(
        "error: no paired attempt was judged by both sides (0 invalid on both sides, 4 on one "
        "side (A 2, B 2)): the agreement of A and B (batch "
    ), err
    assert err.endswith(" has no estimate (exit 3)\n")


def test_one_judged_pair_is_an_estimate(tmp_path: Path) -> None:
    """The control: one pair judged by both is enough, however many are not."""
    code, _, err = _agreement(tmp_path, A_ONE, A_ONE)
    assert code == 0 and "no estimate" not in err, err


# --- every figure recomputed -------------------------------------------------------------------


def _mixed(seed_rows: list[tuple[str, str, str]]) -> tuple[list[Row], list[Row]]:
    """Rows of two graders from (task, a's end, b's end) per attempt, in order."""
    a, b, seen = [], [], Counter[str]()
    for task, x, y in seed_rows:
        a.append(Row(task, seen[task], x))
        b.append(Row(task, seen[task], y))
        seen[task] += 1
    return a, b


S, F, I = "success", "agent_failure/x", ENV  # noqa: E741
# 8 tasks, 4 attempts valid on both sides each (equal weights), plus invalid pairs of every
# kind on extra attempts; the graders disagree on a few judged pairs
DESIGN = [
    ("t1", S, S), ("t1", S, S), ("t1", F, F), ("t1", S, F), ("t1", I, I), ("t1", I, S),
    ("t2", F, F), ("t2", F, F), ("t2", F, S), ("t2", S, S), ("t2", S, I),
    ("t3", S, S), ("t3", S, S), ("t3", S, S), ("t3", S, S), ("t3", I, I), ("t3", I, I),
    ("t4", F, F), ("t4", F, F), ("t4", S, S), ("t4", F, F),
    ("t5", S, F), ("t5", F, S), ("t5", S, S), ("t5", F, F), ("t5", I, F),
    ("t6", S, S), ("t6", F, F), ("t6", S, S), ("t6", S, S),
    ("t7", F, F), ("t7", F, F), ("t7", F, F), ("t7", S, F), ("t7", F, I),
    ("t8", S, S), ("t8", S, S), ("t8", F, F), ("t8", S, S), ("t8", I, I),
]  # fmt: skip


def _by_hand() -> dict[str, Any]:
    judged = [(t, x == S, y == S) for t, x, y in DESIGN if I not in (x, y)]
    n = len(judged)
    agree = sum(x == y for _, x, y in judged)
    p_o = Fraction(agree, n)
    a_true = sum(x for _, x, _ in judged)
    b_true = sum(y for _, _, y in judged)
    p_e = Fraction(a_true * b_true + (n - a_true) * (n - b_true), n * n)  # Cohen's chance
    pooled = Fraction(a_true + b_true, 2 * n)
    p_e_scott = pooled**2 + (1 - pooled) ** 2  # Fleiss' kappa of two raters: Scott's pi
    values = 2 * n  # Krippendorff: 2n pairable values, each disagreement 2 coincidences
    n_true = a_true + b_true
    expected = values**2 - n_true**2 - (values - n_true) ** 2
    alpha = 1 - Fraction((values - 1) * 2 * (n - agree), expected)
    # the share's interval: CR1 of the pooled ratio, tasks as clusters (4 pairs each), the
    # Agresti-Coull interval on its effective trials with t(T-1), widened to the exact bounds
    tasks = sorted({t for t, _, _ in judged})
    sizes = [sum(u == t for u, _, _ in judged) for t in tasks]
    agreeing = [sum(u == t and x == y for u, x, y in judged) for t in tasks]
    r = agree / n
    big_t = len(tasks)
    se = math.sqrt(sum((y - r * m) ** 2 for y, m in zip(agreeing, sizes, strict=True))
                   * big_t / (big_t - 1)) / n  # fmt: skip
    q = float(stats.t.ppf(0.975, big_t - 1))
    n_eff = r * (1 - r) / se**2
    total = n_eff + q**2
    centre = (r * n_eff + q**2 / 2) / total
    half = q * math.sqrt(centre * (1 - centre) / total)
    reach = 0.025 ** (1 / big_t)
    shares = [y / m for y, m in zip(agreeing, sizes, strict=True)]
    low = min(max(0.0, centre - half), max(shares) * reach)
    high = max(min(1.0, centre + half), 1 - (1 - min(shares)) * reach)
    return {
        "n": n, "share": p_o, "kappa": (p_o - p_e) / (1 - p_e),
        "fleiss": (p_o - p_e_scott) / (1 - p_e_scott), "alpha": alpha, "se": se,
        "low": low, "high": high, "sizes": sizes, "tasks": big_t,
    }  # fmt: skip


def test_every_figure_matches_a_recomputation_by_hand(tmp_path: Path) -> None:
    """Fails on the old code (the invalid pairs were in every figure, and no interval)."""
    want = _by_hand()
    assert set(want["sizes"]) == {4}  # equal weights: the t quantile on T - 1
    a, b = _mixed(DESIGN)
    found = _json(tmp_path, a, b)
    assert found["judged"] == want["n"] == 32
    pairs = [(x, y) for _, x, y in DESIGN]
    assert found["invalid_both"] == pairs.count((I, I)) == 4
    assert found["invalid_a_only"] == sum(x == I != y for x, y in pairs) == 2
    assert found["invalid_b_only"] == sum(y == I != x for x, y in pairs) == 2
    assert found["paired"] == len(DESIGN)
    got = found["agreement"]
    assert got["percent_agreement"] == pytest.approx(float(want["share"]), abs=1e-12)
    assert got["cohen_kappa"] == pytest.approx(float(want["kappa"]), abs=1e-12)
    assert got["fleiss_kappa"] == pytest.approx(float(want["fleiss"]), abs=1e-12)
    assert got["krippendorff_alpha"] == pytest.approx(float(want["alpha"]), abs=1e-12)
    assert got["cohen_units"] == got["fleiss_units"] == got["alpha_units"] == 32
    share = found["share"]
    assert share["estimate"] == pytest.approx(float(want["share"]), abs=1e-12)
    assert (share["n_tasks"], share["attempts"], share["df"]) == (8, 32, 7)
    assert share["se"] == pytest.approx(want["se"], rel=1e-9)
    assert share["ci_low"] == pytest.approx(want["low"], abs=1e-9)
    assert share["ci_high"] == pytest.approx(want["high"], abs=1e-9)
    assert sum(sum(row.values()) for row in found["confusion"].values()) == 32
    assert len(found["disagreements"]) == 32 - round(want["share"] * 32)
    assert len(found["one_sided"]) == 4


def test_the_text_names_the_denominator_and_the_interval(tmp_path: Path) -> None:
    want = _by_hand()
    a, b = _mixed(DESIGN)
    code, out, err = _agreement(tmp_path, a, b)
    assert code == 0, err
    shown = f"{float(want['share']):.3f}"
    assert f"share agreeing {shown} over 32 judged pairs (8 tasks), 95% interval [" in out
    low, high = (float(x) for x in out.split("95% interval [")[1].split("]")[0].split(", "))
    assert low <= want["low"] + 1e-12 and high >= want["high"] - 1e-12  # rounded outward
    assert low > want["low"] - 1e-3 and high < want["high"] + 1e-3
    assert "32 judged by both; 4 invalid on both sides, 4 on one side (A 2, B 2)" in out


def test_unequal_tasks_weigh_by_their_judged_pairs(tmp_path: Path) -> None:
    """The share is the pooled share of pairs (not a mean of task shares), its CR1 SE the
    ratio estimator's, its degrees of freedom Kish's effective number of tasks less 1."""
    design = (
        [("big", S, S)] * 9
        + [("big", S, F)]
        + [(f"s{i}", x, y) for i, (x, y) in enumerate([(S, F), (S, S), (F, F), (S, F), (S, S)])]
    )
    a, b = _mixed(design)
    share = _json(tmp_path, a, b)["share"]
    sizes = [10, 1, 1, 1, 1, 1]
    agreeing = [9, 0, 1, 1, 0, 1]
    r = Fraction(12, 15)
    assert share["estimate"] == pytest.approx(float(r), abs=1e-12)  # mean of shares: 0.55
    se = math.sqrt(sum((y - float(r) * m) ** 2 for y, m in zip(agreeing, sizes, strict=True))
                   * 6 / 5) / 15  # fmt: skip
    assert share["se"] == pytest.approx(se, rel=1e-9)
    assert share["df"] == pytest.approx(15**2 / sum(m * m for m in sizes) - 1, rel=1e-9)


def test_library_leaves_invalid_runs_out(tmp_path: Path) -> None:
    """``verdict_agreement`` itself: the counts add up to the pairs."""
    a, b = _mixed(DESIGN)
    runs_a = _runs(tmp_path, a, "la")
    runs_b = _runs(tmp_path, b, "lb")
    result = verdict_agreement(runs_a, runs_b)
    assert result.paired == (
        result.judged + result.invalid_both + result.invalid_a_only + result.invalid_b_only
    )
    assert result.agreement.units == result.judged and result.share is not None
    assert all("invalid" not in (d["a"], d["b"]) for d in result.disagreements)


def _runs(tmp_path: Path, rows: list[Row], name: str) -> list[AgentRun]:
    from groundstate.store import RunStore

    batch = imported(tmp_path, rows, name)
    with RunStore(tmp_path / "s.db", create=False) as store:
        return store.runs(store.batch(batch).batch_id)


# --- sample-failures with nothing to sample -------------------------------------------------


def test_sample_failures_of_a_batch_without_a_valid_attempt_exits_3(tmp_path: Path) -> None:
    """Fails on the old code: exit 2, "no valid failed runs to sample", as for a batch whose
    every attempt passed; it has no estimate, as ``report`` says."""
    batch = imported(tmp_path, [Row(t, i, ENV) for t in "ab" for i in range(2)], "broken")
    out_dir = tmp_path / "sheet"
    code, out, err = cli("sample-failures", batch, "--n", "3", "--out", str(out_dir),
                         *_store(tmp_path))  # fmt: skip
    assert code == 3 and out == "", err
    assert err == (
        f"error: every attempt is invalid (4 attempts): batch {batch} (nothing to sample) has "
        "no estimate (exit 3)\n"
    )
    assert not out_dir.exists()


@pytest.mark.parametrize(
    ("rows", "said"),
    [
        ([Row(t, i, S) for t in "ab" for i in range(2)], "4 succeeded and 0 are invalid"),
        ([Row("a", 0, S), Row("a", 1, ENV), Row("b", 0, S)], "2 succeeded and 1 is invalid"),
    ],
)
def test_sample_failures_with_no_failure_says_there_is_nothing_to_sample(
    tmp_path: Path, rows: list[Row], said: str
) -> None:
    """Fails on the old code: "no valid failed runs to sample", without the counts."""
    batch = imported(tmp_path, rows, "passed")
    out_dir = tmp_path / "sheet"
    code, out, err = cli("sample-failures", batch, "--n", "3", "--out", str(out_dir),
                         *_store(tmp_path))  # fmt: skip
    assert code == 2 and out == "", err
    total = len(rows)
    assert (
        f"error: nothing to sample: batch {batch} has no valid failed runs to sample (of its "
        f"{total} counted attempts, {said})" in err
    ), err
    assert not (out_dir / "sheet.csv").exists()
