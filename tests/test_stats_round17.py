"""Seventeenth round, statistics: a level's interval near agreement, recomputed from outside.

The interval rule gave every task at one value the exact bound (ten tasks at 1: [0.692, 1])
but nine at 1 and one at 0.999 the Agresti-Coull interval on their tiny spread, [0.9992, 1]:
a worse batch claimed a far higher lower end, and a partial score near 1 (which no pass@k
curve bounds) missed wherever a suite drew none of a population's few low tasks. Each end
now reaches at least as far as the exact bound of every task at the highest value (lower
end) or at the lowest (upper end).

The reference below is written from docs/statistics.md alone: exact rationals and k-subset
enumeration for the estimators, the interval rule in plain Python (the exact reach by
bisection on the largest product of task means), Newcombe's square-and-add with its p-value
found by a root finder.
"""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as scipy_stats

from groundstate.report.numbers import interval as shown_interval
from groundstate.stats import (
    Outcome,
    compare,
    interval_rule,
    make_estimate,
    pass_at_k,
    pass_hat_k,
    summarize,
    unpaired_difference,
)
from tests.test_stats_independent import cli, import_text

# --- the reference -----------------------------------------------------------------------------


def ref_pass_at(n: int, c: int, k: int) -> Fraction:
    """pass@k by enumerating every k-subset of n attempts (c of them successes)."""
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(outcomes, k))
    return Fraction(sum(any(s) for s in subsets), len(subsets))


def ref_pass_hat(n: int, c: int, k: int) -> Fraction:
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(outcomes, k))
    return Fraction(sum(all(s) for s in subsets), len(subsets))


def ref_reach(weights: list[float], alpha: float = 0.05) -> float:
    """The weighted mean of task means at which every task can be at the top with chance
    at most alpha / 2 (the largest such chance: the product of min(1, t / w_i))."""
    low, high = 0.0, max(weights)
    for _ in range(200):
        t = (low + high) / 2
        chance = math.prod(min(1.0, t / w) for w in weights)
        low, high = (t, high) if chance < alpha / 2 else (low, t)
    return sum(min(w, high) for w in weights) / sum(weights)


def ref_rule(
    values: list[float], weights: list[float] | None = None, alpha: float = 0.05
) -> tuple[float, float] | None:
    """docs/statistics.md's rule for a level: n/a below 5 tasks; every task at one value v:
    [v r, 1 - (1 - v) r]; else Agresti-Coull on n_eff = u(1-u)/SE^2 with t on T - 1 df (or
    Kish's effective number of tasks - 1), each end reaching at least max(values) r below and
    1 - (1 - min(values)) r above (seventeenth round)."""
    w = weights or [1.0] * len(values)
    tasks, total = len(values), math.fsum(w)
    if tasks < 5:
        return None
    reach = ref_reach(w, alpha)
    if max(values) - min(values) <= 1e-12:
        return values[0] * reach, 1 - (1 - values[0]) * reach
    mean = math.fsum(x * v for x, v in zip(w, values, strict=True)) / total
    spread = math.fsum(x * x * (v - mean) ** 2 for x, v in zip(w, values, strict=True))
    se = math.sqrt(spread) / total * math.sqrt(tasks / (tasks - 1))
    kish = total**2 / math.fsum(x * x for x in w)
    df = tasks - 1 if kish >= tasks - 1e-9 else kish - 1
    q = float(scipy_stats.t.isf(alpha / 2, df))
    n_eff = mean * (1 - mean) / se**2
    centre = (mean * n_eff + q * q / 2) / (n_eff + q * q)
    half = q * math.sqrt(centre * (1 - centre) / (n_eff + q * q))
    low = min(max(0.0, centre - half), max(values) * reach)
    high = max(min(1.0, centre + half), 1 - (1 - min(values)) * reach)
    return low, high


def ref_mover(a: list[float], b: list[float], alpha: float = 0.05) -> tuple[float, float]:
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    ra, rb = ref_rule(a, alpha=alpha), ref_rule(b, alpha=alpha)
    assert ra is not None and rb is not None
    (la, ua), (lb, ub) = ra, rb
    d = mb - ma
    return max(-1.0, d - math.hypot(mb - lb, ua - ma)), min(1.0, d + math.hypot(ub - mb, ma - la))


def ref_mover_p(a: list[float], b: list[float]) -> float:
    d = sum(b) / len(b) - sum(a) / len(a)

    def gap(log_alpha: float) -> float:
        low, high = ref_mover(a, b, math.exp(log_alpha))
        return low if d > 0 else -high

    if gap(math.log1p(-1e-12)) <= 0:
        return 1.0
    return math.exp(optimize.brentq(gap, math.log(1e-300), math.log1p(-1e-12), xtol=1e-12))


# --- 1. the interval near agreement --------------------------------------------------------


def test_nine_tasks_at_1_and_one_at_0999_are_no_surer_than_ten_at_1() -> None:
    flat = interval_rule(np.ones(10), np.ones(10))
    near = interval_rule(np.array([1.0] * 9 + [0.999]), np.ones(10))
    assert flat.method == "exact_bound" and flat.low == pytest.approx(0.025 ** (1 / 10))
    assert near.method == "agresti_coull_t_cr1" and near.se is not None
    assert near.low is not None and near.low <= flat.low  # was 0.9992
    assert near.low == pytest.approx(0.025 ** (1 / 10), abs=1e-12)
    assert "exact bound of every task at the highest value, 1.000" in near.note
    # ten tasks between 0.5 and 0.51 beside ten at 0.5 exactly: both ends reach out alike
    tight = interval_rule(np.linspace(0.5, 0.51, 10), np.ones(10))
    half = interval_rule(np.full(10, 0.5), np.ones(10))
    assert tight.low == pytest.approx(0.51 * 0.025 ** (1 / 10))
    assert tight.high == pytest.approx(1 - 0.5 * 0.025 ** (1 / 10))
    assert half.low is not None and tight.low is not None
    assert abs(tight.low - half.low) < 0.01 and "lowest value, 0.500" in tight.note


@pytest.mark.parametrize("value", [1.0, 0.0, 0.5, 0.97, 1e-4])
def test_the_interval_goes_to_the_exact_bound_as_the_tasks_come_to_agree(value: float) -> None:
    """Continuity at agreement: a spread shrinking to 0 gives ends approaching the exact
    bound, never an interval collapsing onto the estimate."""
    flat = interval_rule(np.full(8, value), np.ones(8))
    assert flat.low is not None and flat.high is not None
    for eps in (1e-3, 1e-6, 1e-9):
        moved = np.full(8, value)
        moved[0] = value - eps if value > 0.5 else value + eps
        near = interval_rule(moved, np.ones(8))
        assert near.low is not None and near.high is not None
        assert near.low == pytest.approx(flat.low, abs=2 * eps)
        assert near.high == pytest.approx(flat.high, abs=2 * eps)


def test_random_levels_match_the_reference_rule() -> None:
    """Equal and unequal weights, 5 to 40 tasks, values spread, clustered near an end, at
    one value, and 0/1: the rule is the reference's to 1e-9, its ends reach the exact
    bounds of every task at the highest and lowest value, and it never has zero width."""
    rng = np.random.default_rng(1717)
    for trial in range(300):
        tasks = int(rng.integers(5, 41))
        kind = trial % 5
        if kind == 0:
            values = rng.random(tasks)
        elif kind == 1:
            values = 1 - rng.exponential(1e-3, tasks).clip(0, 1)
        elif kind == 2:
            values = rng.exponential(1e-3, tasks).clip(0, 1)
        elif kind == 3:
            values = rng.integers(0, 2, tasks).astype(float)
        else:
            values = np.full(tasks, float(rng.choice([0.0, 0.25, 1.0])))
        weights = rng.choice([1.0, 2.0, 0.5, 3.25], tasks) if trial % 2 else np.ones(tasks)
        got = interval_rule(values, weights)
        want = ref_rule(values.tolist(), weights.tolist())
        assert want is not None and got.low is not None and got.high is not None
        assert (got.low, got.high) == pytest.approx(want, abs=1e-9), (values, weights)
        assert got.low < got.high
        reach = ref_reach(weights.tolist())
        assert got.low <= values.max() * reach + 1e-9
        assert got.high >= 1 - (1 - values.min()) * reach - 1e-9


def _partial_suite(rng: np.random.Generator, tasks: int) -> list[Outcome]:
    """90% of tasks near 1 (Beta(50, 1)), 10% anywhere below 0.5; four attempts a task, each
    scored around its task's score."""
    score = np.where(rng.random(tasks) < 0.1, rng.uniform(0, 0.5, tasks), rng.beta(50, 1, tasks))
    out = []
    for i, s in enumerate(score.tolist()):
        s = min(max(s, 1e-9), 1 - 1e-9)
        for j, x in enumerate(rng.beta(50 * s, 50 * (1 - s), 4).tolist()):
            out.append(Outcome(f"t{i}", j, x > 0.99, partial_score=x))
    return out


def test_a_partial_score_near_1_covers_at_10_tasks() -> None:
    """Fixed seed: 10 tasks from a population 90% near 1 and 10% below 0.5 (truth 0.9074).
    The rule alone (Agresti-Coull on the task values) covered about 0.65: a suite that drew
    none of the low tasks showed a tiny spread. As reported it covers."""
    truth = 0.9 * 50 / 51 + 0.1 * 0.25
    rng = np.random.default_rng(17)
    suites, held, alone = 300, 0, 0
    for _ in range(suites):
        outcomes = _partial_suite(rng, 10)
        partial = summarize(outcomes, n_boot=0).views["valid"].partial_score
        assert partial is not None and partial.ci_low is not None and partial.ci_high is not None
        held += partial.ci_low <= truth <= partial.ci_high
        values = [
            float(np.mean([o.partial_score for o in outcomes if o.task_id == f"t{i}"]))
            for i in range(10)
        ]
        u = sum(values) / len(values)
        se = float(np.std(values, ddof=1)) / math.sqrt(len(values))
        q = float(scipy_stats.t.isf(0.025, len(values) - 1))
        n_eff = u * (1 - u) / se**2
        centre = (u * n_eff + q * q / 2) / (n_eff + q * q)
        half = q * math.sqrt(centre * (1 - centre) / (n_eff + q * q))
        alone += centre - half <= truth <= centre + half
    assert alone / suites < 0.8  # the rule alone, as through the sixteenth round
    assert held / suites >= 0.95


# --- 2. generated batches against the reference --------------------------------------------


def _batch(rng: np.random.Generator, tasks: int) -> list[Outcome]:
    """Unequal attempts (1 to 7), invalid attempts, a task whose every attempt is invalid,
    all-pass and all-fail tasks, partial scores at 0, 1 and near them, some tasks unscored."""
    out = []
    for i in range(tasks):
        n = int(rng.integers(1, 8))
        style = int(rng.integers(0, 5))
        scored = rng.random() < 0.7
        for j in range(n):
            invalid = style == 4 or rng.random() < 0.15
            success = {0: True, 1: False}.get(style, bool(rng.random() < 0.6))
            score = float(rng.choice([0.0, 1.0, 1e-9, 1 - 1e-9, 0.5, rng.random()]))
            out.append(
                Outcome(
                    f"t{i}",
                    j,
                    success and not invalid,
                    valid=not invalid,
                    terminal_reason="environment_failure" if invalid else "success",
                    partial_score=score if scored and not invalid else None,
                )
            )
    return out


def _ref_counts(outcomes: list[Outcome], view: str) -> dict[str, tuple[int, int, list[float]]]:
    """(counted attempts, valid successes, the scores the task's partial score averages) per
    task: the valid view counts valid attempts and their scores; the strict view every
    attempt, an invalid one scoring 0 in a task with a scored attempt, and a task with invalid
    attempts and no scored valid one scoring 0 over them when some task of the batch carries a
    score (the docs; until the twenty-fourth round only a task whose every attempt was
    invalid)."""
    rubrics = any(o.valid and o.partial_score is not None for o in outcomes)
    found: dict[str, tuple[int, int, list[float]]] = {}
    for task in dict.fromkeys(o.task_id for o in outcomes):
        mine = [o for o in outcomes if o.task_id == task]
        valid = [o for o in mine if o.valid]
        scores = [o.partial_score for o in valid if o.partial_score is not None]
        if view == "valid":
            found[task] = (len(valid), sum(o.success for o in valid), scores)
            continue
        bad = len(mine) - len(valid)
        if scores or (bad and rubrics):
            scores = scores + [0.0] * bad
        found[task] = (len(mine), sum(o.success for o in valid), scores)
    return found


@pytest.mark.parametrize("tasks", [1, 2, 5, 9, 30])
def test_generated_batches_match_the_reference(tasks: int) -> None:
    rng = np.random.default_rng(tasks)
    for _ in range(6):
        outcomes = _batch(rng, tasks)
        summary = summarize(outcomes, n_boot=0)
        for view in ("valid", "strict"):
            got = summary.views[view]
            counts = _ref_counts(outcomes, view)
            used = {t: v for t, v in counts.items() if v[0] > 0}
            assert got.n_tasks == len(used)
            assert set(got.excluded_tasks) == set(counts) - set(used)
            if not used:
                assert got.success_rate is None and got.pass_at_k == {}
                continue
            kmax = min(n for n, _, _ in used.values())
            assert got.kmax == kmax
            assert got.success_rate is not None
            assert got.success_rate.attempts == sum(n for n, _, _ in used.values())
            rate = float(sum(Fraction(c, n) for n, c, _ in used.values()) / len(used))
            assert got.success_rate.estimate == pytest.approx(rate, abs=1e-12)
            for k in range(1, kmax + 1):
                at = sum(ref_pass_at(n, c, k) for n, c, _ in used.values()) / len(used)
                hat = sum(ref_pass_hat(n, c, k) for n, c, _ in used.values()) / len(used)
                assert got.pass_at_k[k].estimate == pytest.approx(float(at), abs=1e-12)
                assert got.pass_hat_k[k].estimate == pytest.approx(float(hat), abs=1e-12)
                # the shown interval only widens the rule's own on the k's task values
                own = ref_rule([float(ref_pass_at(n, c, k)) for n, c, _ in used.values()])
                shown = got.pass_at_k[k]
                if own is None:
                    assert shown.ci_low is None
                else:
                    assert shown.ci_low is not None and shown.ci_high is not None
                    assert shown.ci_low <= own[0] + 1e-9 and shown.ci_high >= own[1] - 1e-9
            _check_partial(got.partial_score, used)


def _check_partial(got: Any, used: dict[str, tuple[int, int, list[float]]]) -> None:
    scored = [scores for _, _, scores in used.values() if scores]
    if not scored:
        assert got is None
        return
    values = [math.fsum(s) / len(s) for s in scored]
    assert got.n_tasks == len(values)
    assert got.attempts == sum(len(s) for s in scored)
    assert got.estimate == pytest.approx(math.fsum(values) / len(values), abs=1e-12)
    want = ref_rule(values)
    if want is None:
        assert got.ci_low is None and got.ci_high is None and got.note.startswith("n/a")
    else:
        assert (got.ci_low, got.ci_high) == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("n", range(1, 8))
def test_estimators_equal_subset_enumeration_including_k_at_and_above_n(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(float(ref_pass_at(n, c, k)), abs=1e-15)
            assert pass_hat_k(n, c, k) == pytest.approx(float(ref_pass_hat(n, c, k)), abs=1e-15)
        with pytest.raises(ValueError):
            pass_at_k(n, c, n + 1)
        with pytest.raises(ValueError):
            pass_hat_k(n, c, n + 1)


# --- 3. compare: an unpaired side near agreement, at every level ---------------------------


def _scored(prefix: str, values: list[float]) -> list[Outcome]:
    return [Outcome(f"{prefix}{i}", 0, v == 1, partial_score=v) for i, v in enumerate(values)]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([1.0] * 6 + [0.999], [0.6, 0.9, 0.7, 1.0, 0.8, 0.5]),
        ([0.5, 0.501, 0.5, 0.502, 0.5], [0.9, 0.95, 1.0, 0.97, 0.99, 1.0]),
        ([0.0, 0.001, 0.0, 0.0, 0.0, 0.0], [0.2, 0.0, 0.5, 0.1, 0.3]),
    ],
)
def test_an_unpaired_partial_score_near_agreement_matches_the_reference(
    a: list[float], b: list[float]
) -> None:
    """The square-and-add of the two sides' intervals, each reaching its exact bound at its
    highest and lowest value at every level, and the p-value it inverts to."""
    found = compare(_scored("a", a), _scored("b", b), n_boot=0)
    assert found.mode == "unpaired"
    d = found.find("partial_score")
    assert d.difference.method == "mover"
    assert (d.difference.ci_low, d.difference.ci_high) == pytest.approx(ref_mover(a, b), abs=1e-9)
    assert d.p_value == pytest.approx(ref_mover_p(a, b), rel=1e-6)
    excludes = d.difference.ci_low > 0 or d.difference.ci_high < 0  # type: ignore[operator]
    assert excludes == (d.p_value < 0.05)


# --- 4. one batch, three outputs --------------------------------------------------------------


def test_text_json_and_html_show_the_same_widened_partial_score(tmp_path: Path) -> None:
    """A batch of nine tasks whose partial score is 1 and one at 0.999: the JSON's interval
    is the exact bound's, and the terminal and HTML reports print that interval with its
    denominators (the tasks and the scored attempts), not the former [0.9992, 1]."""
    rows = ["task_id,attempt,success,partial_score"]
    rows += [f"t{i},{j},true,1.0" for i in range(9) for j in range(2)]
    rows += ["t9,0,true,1.0", "t9,1,false,0.998"]
    batch = import_text(tmp_path, "\n".join(rows) + "\n")
    store = str(tmp_path / "s.db")
    code, out, err = cli("report", batch, "--json", "--store", store)
    assert code == 0, err
    partial = json.loads(out)["partial_score"]
    assert partial["ci_low"] == pytest.approx(0.025 ** (1 / 10))
    assert "highest value, 1.000" in partial["note"]
    assert (partial["n_tasks"], partial["attempts"]) == (10, 20)
    text = shown_interval(partial["ci_low"], partial["ci_high"])
    code, terminal, err = cli("report", batch, "--store", store)
    assert code == 0, err
    html_path = tmp_path / "r.html"
    code, _, err = cli("report", batch, "--html", str(html_path), "--store", store)
    assert code == 0, err
    html = html_path.read_text(encoding="utf-8")
    for page in (terminal, html):
        assert text in page, text
        assert "[0.9992" not in page


def test_unpaired_difference_of_estimates_alone_agrees_with_compare() -> None:
    """A caller of the library gives the two sides' estimates alone: the highest value a
    widened end was built on is read back from the interval shown, so the interval and its
    p-value are compare's."""
    a, b = [1.0] * 6 + [0.999], [0.6, 0.9, 0.7, 1.0, 0.8, 0.5]
    ea = make_estimate(np.array(a), np.ones(7), [1] * 7)
    eb = make_estimate(np.array(b), np.ones(6), [1] * 6)
    alone = unpaired_difference(ea, eb)
    found = compare(_scored("a", a), _scored("b", b), n_boot=0).find("partial_score")
    assert (alone.ci_low, alone.ci_high) == pytest.approx(
        (found.difference.ci_low, found.difference.ci_high), abs=1e-12
    )
    assert (alone.ci_low, alone.ci_high) == pytest.approx(ref_mover(a, b), abs=1e-9)
