"""Statistics audit, forty-ninth round: an independent re-computation of what ``report``,
``report --json``, ``compare`` and ``--fail-under`` print, from the chapter's estimators
(``shared/reference/evaluating-agents.txt``) and docs/statistics.md alone, in exact rationals
(``fractions.Fraction``, ``math.comb``), through ``import-results`` into a real SQLite store.

Classes of defect fixed:

* **Declared weights taken as binary rationals.** A task weight is a decimal written in
  suite.yaml or an imported file (0.1, 0.3); the exact means behind every printed figure and
  every gate took it as the binary rational its float is (0.1000000000000000055...). Weights
  0.1 and 0.3 on success rates 1/4 and 1/2 mean exactly 0.4375: the report printed "0.437"
  (its JSON nudged to 0.437499999999125 to print so) and ``--fail-under success_rate=0.4375``
  failed the batch, where a re-computation from the declared weights prints "0.438" and finds
  the threshold met. The same held for pass@k, pass^k, slices, and both sides and the
  difference of ``compare``.

Checked and found right (kept as tests of the class): a paired difference's bootstrap in
``compare`` is the documented recipe over the tasks it pairs (now documented for ``compare``).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import random
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.report.numbers import fraction, signed
from groundstate.stats import Outcome, compare, summarize

# --- the reference ---------------------------------------------------------------------------


def ref_at(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def ref_hat(n: int, c: int, k: int) -> Fraction:
    return Fraction(math.comb(c, k), math.comb(n, k))


def ref_rate(n: int, c: int, k: int) -> Fraction:
    return Fraction(c, n)


def weighted(cells: list[tuple[int, int, str]], value: Any, k: int) -> Fraction:
    """The weighted mean of a per-task estimator over (n, c, declared weight) cells."""
    weights = [Fraction(w) for _, _, w in cells]
    total = sum((x * value(n, c, k) for x, (n, c, _) in zip(weights, cells, strict=True)))
    return Fraction(total) / sum(weights)


def half_up(value: Fraction, digits: int = 3) -> str:
    """*value* to *digits* decimals, half away from zero, as docs/statistics.md prints it
    (strictly between 0 and 1 never "0.000" nor "1.000")."""
    scaled = math.floor(abs(value) * 10**digits + Fraction(1, 2))
    if value > 0 and scaled == 0:
        return "<0.001"
    if value < 1 and scaled == 10**digits:
        return ">0.999"
    return format(Decimal(scaled).scaleb(-digits), f".{digits}f")


def signed_half_up(value: Fraction) -> str:
    scaled = math.floor(abs(value) * 1000 + Fraction(1, 2))
    return ("-" if value < 0 and scaled else "+") + format(Decimal(scaled).scaleb(-3), ".3f")


# --- the product, through the CLI ------------------------------------------------------------


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env={"COLUMNS": "300"})
    return result.exit_code, result.stdout, result.stderr


def as_csv(cells: list[tuple[int, int, str]], prefix: str = "t") -> str:
    """One row per attempt: task i has n attempts, the first c successes, weight as written."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["task_id", "attempt", "retry", "success", "terminal_reason", "weight"])
    for i, (n, c, w) in enumerate(cells):
        for attempt in range(n):
            won = attempt < c
            reason = "success" if won else "agent_failure"
            writer.writerow([f"{prefix}{i}", attempt, 0, str(won).lower(), reason, w])
    return out.getvalue()


def imported(tmp: Path, cells: list[tuple[int, int, str]], name: str = "x") -> str:
    path = tmp / f"{name}.csv"
    path.write_text(as_csv(cells), encoding="utf-8")
    code, out, err = cli("import-results", str(path), "--name", name, "--store", str(tmp / "s.db"))
    assert code == 0, err
    return out.strip().splitlines()[-1].removeprefix("batch ")


def outcomes(cells: list[tuple[int, int, str]]) -> list[Outcome]:
    return [
        Outcome(f"t{i}", attempt, attempt < c, weight=float(w))
        for i, (n, c, w) in enumerate(cells)
        for attempt in range(n)
    ]


# --- declared weights ------------------------------------------------------------------------

TIE = [(4, 1, "0.1"), (2, 1, "0.3")]
"""Rates 1/4 and 1/2 at weights 0.1 and 0.3: exactly 0.4375, a rounding tie."""


def test_a_mean_over_decimal_weights_prints_as_the_declared_weights_give(tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    batch = imported(tmp_path, TIE)
    want = weighted(TIE, ref_rate, 1)
    assert want == Fraction(7, 16)
    code, out, err = cli("report", batch, "--json", "--store", store)
    data = json.loads(out)
    assert data["success_rate"]["estimate"] == pytest.approx(0.4375, abs=1e-15)
    assert fraction(data["success_rate"]["estimate"]) == "0.438" == half_up(want)
    code, text, err = cli("report", batch, "--store", store)
    assert code == 0, err
    assert "0.437" not in text and "│ 0.438" in text


def test_a_gate_at_the_exact_mean_of_decimal_weights_passes(tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    batch = imported(tmp_path, TIE)
    code, _, err = cli("report", batch, "--store", store, "--fail-under", "success_rate=0.4375")
    assert code == 0, err
    code, _, err = cli("report", batch, "--store", store, "--fail-under", "pass@1=0.4375")
    assert code == 0, err
    # honest: a hair above the mean still fails
    code, _, err = cli("report", batch, "--store", store, "--fail-under", "success_rate=0.43751")
    assert code == 4 and "below 0.43751" in err


WEIGHTS = ("0.1", "0.3", "0.7", "2.3")
CELLS = [(n, c) for n in range(1, 5) for c in range(n + 1)]


def pairs() -> list[list[tuple[int, int, str]]]:
    """Every batch of two tasks of at most 4 attempts at two of :data:`WEIGHTS`: over so few
    cells rounding ties are common."""
    return [
        [(n1, c1, w1), (n2, c2, w2)]
        for (n1, c1), (n2, c2) in itertools.combinations(CELLS, 2)
        for w1, w2 in itertools.permutations(WEIGHTS, 2)
    ]


def misprinted(cells: list[tuple[int, int, str]], found: dict[tuple[str, int], float]) -> list:
    """The figures of *found* ((estimator, k) -> estimate) that print otherwise than the
    exact mean over the declared weights."""
    value = {"rate": ref_rate, "at": ref_at, "hat": ref_hat}
    return [
        (cells, name, k, fraction(estimate), half_up(weighted(cells, value[name], k)))
        for (name, k), estimate in found.items()
        if fraction(estimate) != half_up(weighted(cells, value[name], k))
    ]


def test_every_figure_of_a_summary_prints_as_the_declared_weights_give() -> None:
    wrong = []
    for cells in random.Random(7).sample(pairs(), 400):
        view = summarize(outcomes(cells), n_boot=1).views["valid"]
        assert view.success_rate is not None
        found = {("rate", 1): view.success_rate.estimate}
        for k in range(1, view.kmax + 1):
            found["at", k], found["hat", k] = (
                view.pass_at_k[k].estimate,
                view.pass_hat_k[k].estimate,
            )
        wrong += misprinted(cells, found)
    assert not wrong, f"{len(wrong)} misprinted, e.g. {wrong[:3]}"


def test_a_comparison_prints_each_side_and_the_difference_as_declared() -> None:
    wrong = []
    rng = random.Random(49)
    for a in rng.sample(pairs(), 300):
        b = [(n, rng.randint(0, n), w) for n, _, w in a]
        for d in compare(outcomes(a), outcomes(b), n_boot=1).differences:
            if d.view != "valid" or d.metric == "partial_score":
                continue
            name = {"success_rate": "rate", "pass_at_k": "at", "pass_hat_k": "hat"}[d.metric]
            k = d.k or 1
            wrong += misprinted(a, {(name, k): d.a.estimate})
            wrong += misprinted(b, {(name, k): d.b.estimate})
            estimator = {"rate": ref_rate, "at": ref_at, "hat": ref_hat}[name]
            moved = weighted(b, estimator, k) - weighted(a, estimator, k)
            if abs(moved) >= Fraction(1, 1000) and signed(d.difference.estimate) != (
                signed_half_up(moved)
            ):
                wrong.append((a, b, name, k, signed(d.difference.estimate), moved))
    assert not wrong, f"{len(wrong)} misprinted, e.g. {wrong[:3]}"


def test_compare_and_the_html_page_print_the_declared_weights_mean(tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    a = imported(tmp_path, TIE, "a")
    later = [(4, 2, "0.1"), (2, 1, "0.3")]  # exactly 0.5: b - a is exactly 0.0625, a tie
    b = imported(tmp_path, later, "b")
    moved = weighted(later, ref_rate, 1) - weighted(TIE, ref_rate, 1)
    assert signed_half_up(moved) == "+0.063"
    code, out, err = cli("compare", a, b, "--json", "--store", store)
    rate = json.loads(out)["metrics"]["valid"]["success_rate"]
    assert fraction(rate["a"]["estimate"]) == "0.438"
    assert signed(rate["difference"]["estimate"]) == "+0.063"
    code, text, err = cli("compare", a, b, "--store", store)
    row = next(line for line in text.splitlines() if line.startswith("│ success_rate"))
    assert [cell.strip() for cell in row.split("│")[2:5]] == ["0.438", "0.500", "+0.063"]
    page = tmp_path / "r.html"
    code, _, err = cli("report", a, "--store", store, "--html", str(page))
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    assert "0.438" in html and "0.437" not in html


def test_a_paired_differences_bootstrap_is_the_documented_recipe() -> None:
    """docs/statistics.md: the tasks a figure pairs, in order of task id, drawn as
    ``default_rng(seed).integers(0, T, size=(n_boot, T))``; each row's weighted mean of b - a
    (a's weights); the 2.5 and 97.5 percentiles. Each side's estimate carries none."""
    a = [(4, 1, "0.1"), (3, 2, "0.3"), (4, 4, "1"), (2, 0, "2.3"), (4, 3, "0.7"), (3, 1, "1")]
    b = [(4, 3, "0.1"), (3, 3, "0.3"), (4, 2, "1"), (2, 1, "2.3"), (4, 4, "0.7"), (3, 1, "1")]
    found = compare(outcomes(a), outcomes(b), seed=11, n_boot=500)
    d = next(x for x in found.differences if x.view == "valid" and x.metric == "success_rate")
    moved = [Fraction(y, n) - Fraction(x, n) for (n, x, _), (_, y, _) in zip(a, b, strict=True)]
    weights = [Fraction(w) for _, _, w in a]
    draws = np.random.default_rng(11).integers(0, len(a), size=(500, len(a)))
    means = []
    for row in draws:
        times = np.bincount(row, minlength=len(a)).tolist()
        top = sum(m * w * v for m, w, v in zip(times, weights, moved, strict=True))
        means.append(float(top / sum(m * w for m, w in zip(times, weights, strict=True))))
    low, high = np.percentile(means, [2.5, 97.5])
    assert d.difference.boot_low == pytest.approx(low, abs=1e-12)
    assert d.difference.boot_high == pytest.approx(high, abs=1e-12)
    assert d.a.boot_low is None and d.b.boot_high is None
