"""Printed figures rounded by one documented rule, re-computed outside it (twentieth round).

The reference here rounds exact fractions (``fractions.Fraction``; pass@k = 1 - C(n-c,k)/C(n,k)
and pass^k = C(c,k)/C(n,k) per task, weighted means over the tasks with a counted attempt) to
three decimals half away from zero, as docs/statistics.md ("Printed figures") says every report
does: 9/16 prints 0.563. Python's formatting rounded the binary float half to even, so a tie
printed by accident of representation: 9/16 and 1/16 (exact in binary) as 0.562 and 0.062,
0.1625 (stored a little above) as 0.163, and a mean of 9/16 computed a little below 0.5625 as
0.562 under any tie rule. Batches with many ties (attempts in powers of two, weights 1, 2, 4)
are imported and reported through the CLI, as text and HTML, and each suite value, pass@k and
pass^k row and comparison difference is checked against the reference.
"""

from __future__ import annotations

import html
import json
import math
import random
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from groundstate.report import numbers
from tests.test_stats_independent import cli, import_text

# --- the reference --------------------------------------------------------------------------


def half_up(value: Fraction, digits: int = 3, *, sign: bool = False) -> str:
    """*value* to *digits* decimals, a tie away from zero, from the exact fraction."""
    scaled = abs(value) * 10**digits
    units = math.floor(scaled + Fraction(1, 2))
    whole, part = divmod(units, 10**digits)
    text = f"{whole}.{part:0{digits}d}"
    negative = value < 0 and units > 0
    return ("-" if negative else "+" if sign else "") + text


def shown(value: Fraction) -> str:
    """A rate or probability as the reports print it: never 0.000 or 1.000 for a value that
    is neither."""
    text = half_up(value)
    if value > 0 and text == "0.000":
        return "<0.001"
    if value < 1 and text == "1.000":
        return ">0.999"
    return text


def pass_at(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def pass_hat(n: int, c: int, k: int) -> Fraction:
    return Fraction(math.comb(c, k), math.comb(n, k))


Cells = dict[str, tuple[int, int, int, int]]
"""task -> (weight, valid attempts n, successes c, invalid attempts)."""


def weighted(cells: Cells, value: Any, view: str = "valid") -> Fraction:
    """The weighted mean of *value*(n, c) over the tasks with a counted attempt in *view*
    (strict: the invalid attempts count as failures)."""
    used = [(w, n + bad * (view == "strict"), c) for w, n, c, bad in cells.values()]
    used = [cell for cell in used if cell[1]]
    total = sum((Fraction(w) * value(n, c) for w, n, c in used), Fraction(0))
    return total / sum(Fraction(w) for w, _, _ in used)


def as_rows(cells: Cells, prefix: str = "") -> str:
    out = ["task_id,attempt,retry,success,terminal_reason,weight"]
    for task, (w, n, c, bad) in cells.items():
        for j in range(n + bad):
            ok = j < c
            reason = "success" if ok else "agent_failure" if j < n else "environment_failure"
            out.append(f"{prefix}{task},{j},0,{str(ok).lower()},{reason},{w}")
    return "\n".join(out) + "\n"


def tie_batch(seed: int) -> Cells:
    """1 to 7 tasks of 2, 4, 8 or 16 attempts at weights 1, 2, 4: sums of dyadic values,
    so many suite values fall on a tie at the third decimal. Some attempts are invalid (a
    task may have no valid one: left out of the valid view, named, failures in the strict)."""
    rng = random.Random(seed)
    cells: Cells = {}
    for i in range(rng.randint(1, 7)):
        n = rng.choice([2, 4, 8, 16, 16])
        bad = rng.choice([0, 0, 0, n // 2, n])
        cells[f"t{i}"] = (rng.choice([1, 1, 2, 4]), n - bad, rng.randint(0, n - bad), bad)
    if not any(n for _, n, _, _ in cells.values()):
        cells["t0"] = (1, 1, 1, 0)
    return cells


def reported(tmp: Path, batch: str) -> tuple[dict[str, Any], str, str]:
    store = str(tmp / "s.db")
    code, out, err = cli("report", batch, "--json", "--store", store)
    assert code in (0, 3), err
    data = json.loads(out)
    code, text, err = cli("report", batch, "--store", store, "--html", str(tmp / "r.html"))
    assert code in (0, 3), err
    page = (tmp / "r.html").read_text(encoding="utf-8")
    page = re.sub(r"<(style|script)\b.*?</\1>", " ", page, flags=re.S)
    page = html.unescape(re.sub(r"<[^>]+>", " ", page))
    return data, re.sub(r"\s+", " ", text), re.sub(r"\s+", " ", page)


# --- the rule, value by value ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (9 / 16, "0.563"),  # a tie exact in binary: half to even printed 0.562
        (1 / 16, "0.063"),
        (13 / 16, "0.813"),
        (0.1625, "0.163"),  # stored above the tie: the same either way
        (0.5624999999999999, "0.563"),  # 9/16 as a weighted mean may come out
        (0.5624, "0.562"),  # control: not a tie
        (0.56251, "0.563"),
        (0.99951, ">0.999"),  # control: never 1.000 for a value below 1
        (0.9994999999999999, ">0.999"),  # a tie at 0.9995 rounds to 1.000: not shown as 1
        (0.00049999, "<0.001"),
        (0.0004999999999999, "0.001"),  # 0.0005 within float noise: the tie, rounded up
        (0.0005, "0.001"),
        (1.0, "1.000"),
        (0.0, "0.000"),
    ],
)
def test_an_estimate_rounds_half_away_from_zero(value: float, want: str) -> None:
    assert numbers.fraction(value) == want


def test_every_formatter_rounds_a_tie_alike() -> None:
    assert numbers.signed(-9 / 16) == "-0.563"
    assert numbers.signed(9 / 16) == "+0.563"
    assert numbers.share(1 / 16) == "6.3%"  # 6.25%
    assert numbers.share(0.0625 + 1e-17) == "6.3%"
    assert numbers.interval(0.0625, 0.5625) == "[0.062, 0.563]"  # ends outward (round 21)
    assert numbers.interval(-0.5625, 0.0625, difference=True) == "[-0.563, +0.063]"
    assert numbers.p_value(0.000125, 0.05) == "0.00013"  # two significant digits
    assert numbers.p_value(0.0625, 0.05) == "0.063"
    assert numbers.amount(0.00125, 4) == "0.0013"  # cost
    assert numbers.amount(2.5625, 3) == "2.563"  # latency
    assert numbers.amount(0.000045, 4) == "4.5e-05"  # control: still never 0.0000
    # A value apart from its bound stays on its side: 0.94975 is below 0.95.
    assert numbers.apart(0.94975, 0.95, 3) == "0.9498"
    assert numbers.apart(0.95, 0.95, 3) == "0.950"


# --- through the CLI ------------------------------------------------------------------------


def test_a_single_task_at_9_of_16_prints_0563_in_text_and_html(tmp_path: Path) -> None:
    cells: Cells = {"t0": (1, 16, 9, 0)}
    data, text, page = reported(tmp_path, import_text(tmp_path, as_rows(cells)))
    assert data["success_rate"]["estimate"] == 0.5625  # the JSON keeps the value
    assert "│ valid attempts │ 0.563 │" in text
    assert "pass^1 = 0.563 " in text
    assert "0.562" not in text
    assert "0.563 " in page and "0.562" not in page
    # k = n = 16 on a single task: pass@16 is 1, pass^16 is 0; k = 1 the rate.
    assert data["pass_at_k"]["16"]["estimate"] == 1.0
    assert data["pass_hat_k"]["16"]["estimate"] == 0.0
    assert data["pass_at_k"]["1"]["ci_low"] is None  # one task: no interval, not [v, v]


@pytest.mark.parametrize("seed", range(24))
def test_every_printed_suite_value_is_the_exact_fraction_rounded(tmp_path: Path, seed: int) -> None:
    cells = tie_batch(seed)
    data, text, page = reported(tmp_path, import_text(tmp_path, as_rows(cells)))
    rate = weighted(cells, lambda n, c: Fraction(c, n))
    assert data["success_rate"]["estimate"] == pytest.approx(float(rate), abs=1e-12)
    assert f"│ valid attempts │ {shown(rate)} │" in text
    assert f"pass^1 = {shown(rate)} " in text
    strict = weighted(cells, lambda n, c: Fraction(c, n), "strict")
    assert f"│ invalid = failure │ {shown(strict)} │" in text
    if any(bad for *_, bad in cells.values()):
        assert f"· {shown(strict)} " in text  # beside pass^1 of the valid view
    excluded = [task for task, (_, n, _, _) in cells.items() if not n]
    assert data["summary"]["views"]["valid"]["excluded_tasks"] == excluded
    if excluded:
        said = "tasks with no valid attempt, left out of the valid-attempts numbers: "
        assert said + ", ".join(excluded) in text
    kmax = min(n for _, n, _, _ in cells.values() if n)
    assert data["summary"]["views"]["valid"]["kmax"] == kmax
    for k in range(1, kmax + 1):
        at = weighted(cells, lambda n, c, k=k: pass_at(n, c, k))
        hat = weighted(cells, lambda n, c, k=k: pass_hat(n, c, k))
        row = f"│ {k} │ {shown(at)} │"
        assert row in text, (row, float(at))
        assert re.search(rf"│ {k} │ [^│]+│[^│]+│ {re.escape(shown(hat))} │", text), (k, hat)
        assert f"{k} {shown(at)} " in page, (k, float(at))
        assert f" {shown(hat)} " in page


def test_a_compared_difference_on_a_tie_prints_it_half_away_from_zero(tmp_path: Path) -> None:
    """Two batches of the same six tasks, b 9/16 below a on every task: the difference is
    -0.5625 exactly on every task (so the paired interval is the exact bound, not [v, v])."""
    a: Cells = {f"t{i}": (1, 16, 16, 0) for i in range(6)}
    b: Cells = {f"t{i}": (1, 16, 7, 0) for i in range(6)}
    store = str(tmp_path / "s.db")
    ids = [import_text(tmp_path, as_rows(cells), name) for name, cells in (("a", a), ("b", b))]
    args = ["compare", *ids, "--store", store]
    code, out, err = cli(*args, "--json")
    assert code == 0, err
    rate = json.loads(out)["metrics"]["valid"]["success_rate"]
    assert rate["difference"]["estimate"] == -0.5625
    low, high = rate["difference"]["ci_low"], rate["difference"]["ci_high"]
    assert low is not None and high is not None and low < -0.5625 < high
    code, text, err = cli(*args, "--html", str(tmp_path / "c.html"))
    assert code == 0, err
    page = html.unescape(re.sub(r"<[^>]+>", " ", (tmp_path / "c.html").read_text("utf-8")))
    for shown_text in (" ".join(text.split()), " ".join(page.split())):
        assert "-0.563" in shown_text and "-0.562" not in shown_text
        assert " 0.438 " in shown_text  # b's rate 7/16 = 0.4375


def test_the_docs_state_the_rounding_rule() -> None:
    docs = (Path(__file__).parents[1] / "docs" / "statistics.md").read_text(encoding="utf-8")
    docs = " ".join(docs.split())
    assert "half away from zero" in docs and "9/16 prints 0.563" in docs


# --- p-values at the extremes ---------------------------------------------------------------


def test_a_p_value_that_underflows_is_the_floor_never_0() -> None:
    from groundstate.rounding import SMALLEST_P
    from groundstate.stats import Outcome, compare, fisher_p

    assert fisher_p(0, 600, 600, 600) == SMALLEST_P  # was 0.0
    assert fisher_p(0, 4, 4, 4) == pytest.approx(2 / 70)  # control

    def side(cells: list[tuple[int, int]], prefix: str = "t") -> list[Outcome]:
        return [
            Outcome(f"{prefix}{i}", j, j < c) for i, (n, c) in enumerate(cells) for j in range(n)
        ]

    # 1,200 tasks, every one moved from 0/2 to 2/2 but one: the t test (t near 1,200) and the
    # sign-test bound (2 * 0.5^1200) both underflowed to 0.0.
    a = side([(2, 0)] * 1200)
    b = side([(2, 2)] * 1199 + [(2, 1)])
    found = compare(a, b, n_boot=0)
    for d in found.differences:
        assert d.p_value is not None and d.p_value >= SMALLEST_P, (d.name, d.p_value)
    assert found.find("pass_at_k", k=2).p_value == SMALLEST_P  # every task at +1: the bound
    unpaired = compare(a, side([(2, 2)] * 1199 + [(2, 1)], "u"), n_boot=0)
    assert unpaired.mode == "unpaired"
    assert unpaired.find("success_rate").p_value == SMALLEST_P


def test_a_p_value_at_the_floor_prints_as_below_it() -> None:
    assert numbers.p_value(1e-300, 0.05) == "<1e-300"
    assert numbers.p_value(2.5e-299, 0.05) == "2.5e-299"  # control: a value is printed
    assert numbers.p_value(1.0, 0.05) == "1.000"


def test_a_per_task_p_value_that_underflowed_prints_below_the_floor(tmp_path: Path) -> None:
    """One task of 600 attempts a side, 0/600 against 600/600: Fisher's p underflowed to 0,
    printed "0" in the per-task table and given as 0 in the JSON."""
    a: Cells = {"t0": (1, 600, 0, 0), "t1": (1, 4, 2, 0)}
    b: Cells = {"t0": (1, 600, 600, 0), "t1": (1, 4, 2, 0)}
    store = str(tmp_path / "s.db")
    ids = [import_text(tmp_path, as_rows(cells), name) for name, cells in (("a", a), ("b", b))]
    code, out, err = cli("compare", *ids, "--store", store, "--json")
    assert code == 0, err
    rows = {row["task_id"]: row for row in json.loads(out)["per_task"]}
    assert rows["t0"]["p_value"] > 0 and rows["t0"]["q_value"] > 0
    assert rows["t0"]["changed"]
    code, text, err = cli("compare", *ids, "--store", store, "--html", str(tmp_path / "c.html"))
    assert code == 0, err
    row = next(line for line in text.splitlines() if "│ t0 " in line)
    assert "<1e-300" in row and "│ 0 " not in row
    page = html.unescape((tmp_path / "c.html").read_text("utf-8"))
    assert "<1e-300" in page


def test_a_p_value_kept_just_below_the_level_prints_on_its_side() -> None:
    """An unpaired p-value whose shown interval excludes 0 is kept below 0.05, as the float
    just below it where the search ends on the level: it printed "0.050", beside an interval
    that excludes 0, as if it were not below."""
    below, above = math.nextafter(0.05, 0), math.nextafter(0.05, 1)
    assert numbers.p_value(below, 0.05) == "<0.050"
    assert numbers.p_value(above, 0.05) == ">0.050"
    assert numbers.p_value(0.05, 0.05) == "0.050"  # control: at the level, as it is
    assert numbers.p_value(0.0495, 0.05) == "0.0495"  # control: decimals tell it apart


def test_every_rate_of_up_to_4000_attempts_prints_its_exact_fraction_rounded() -> None:
    """c/n and weighted means of two such rates, computed in floats as the library does,
    print as their exact fractions rounded half away from zero."""
    rng = random.Random(20)
    for _ in range(20_000):
        n = rng.choice([2, 4, 8, 16, 32, 40, 80, 400, 4000, rng.randint(1, 4000)])
        c = rng.randint(0, n)
        assert numbers.fraction(c / n) == shown(Fraction(c, n)), (c, n)
        m, w = rng.randint(1, 64), rng.choice([1, 2, 3, 4])
        d = rng.randint(0, m)
        mean = (c / n + w * (d / m)) / (1 + w)
        want = (Fraction(c, n) + w * Fraction(d, m)) / (1 + w)
        assert numbers.fraction(mean) == shown(want), (c, n, d, m, w)
        moved = Fraction(c, n) - Fraction(d, m)
        if abs(moved) >= Fraction(1, 2000):  # smaller: more decimals, never "+0.000"
            assert numbers.signed(c / n - d / m) == half_up(moved, sign=True), (c, n, d, m)
