"""Printed intervals hold the computed ones, and `plan` prints by the reports' rule
(twenty-first round).

Interval ends were rounded to nearest, like an estimate: ten tasks all at 1 have the exact
bound [0.025^(1/10), 1] = [0.69150, 1], printed "[0.692, 1.000]", an interval narrower than the
one computed (a reader re-computing it finds 0.6915 outside the printed interval). Now a lower
end is rounded down and an upper end up (docs/statistics.md, "Rounding"), so the printed
interval holds the computed one and the printed estimate. The reference here is the documented
formula in exact fractions (``Fraction``), floored and ceiled by hand. ``plan`` printed its
figures in formats of its own: a power of 0.9996 as "1.00", variance reductions through
Python's half-to-even ``.2e``.
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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundstate.report import numbers
from tests.test_stats_independent import RefTask, as_csv, batches, cli, import_text
from tests.test_stats_round20 import Cells, as_rows, half_up, reported, shown

# --- the reference --------------------------------------------------------------------------


def outward(value: Fraction, digits: int, up: bool) -> Fraction:
    """*value* rounded toward plus (*up*) or minus infinity to *digits* decimals, exactly."""
    scaled = value * 10**digits
    return Fraction(math.ceil(scaled) if up else math.floor(scaled), 10**digits)


def snapped(value: float) -> Fraction:
    """A computed end read to 12 significant digits (float noise is not a digit), exactly."""
    return Fraction(f"{value:.12g}")


def holds(text: str, low: float, high: float) -> bool:
    """Whether the printed interval *text* holds [low, high] (each end read as above; within
    float noise of -1, 0 or 1 an end is that value), and each printed end lies within one
    unit of its last decimal of the computed end."""
    ends = text.strip("[]").split(", ")
    (a, b), places = map(Fraction, ends), [len(e.split(".")[1]) for e in ends]
    unit = [Fraction(1, 10**p) for p in places]
    # each end read to 12 significant digits, or past them (12 decimals and more) as it is
    low, high = (next((m for m in (-1.0, 0.0, 1.0) if abs(v - m) < 1e-12), v) for v in (low, high))
    lows, highs = (snapped(low), Fraction(low)), (snapped(high), Fraction(high))
    return any(a <= lo < a + unit[0] for lo in lows) and any(b - unit[1] < hi <= b for hi in highs)


def exact_reach(tasks: int) -> float:
    """0.025^(1/T): the documented exact bound's reach for T tasks of equal weight."""
    return float(0.025 ** (1 / tasks))


# --- the formatter alone --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("low", "high", "difference", "want"),
    [
        (0.6915028921812392, 1.0, False, "[0.691, 1.000]"),  # ten tasks at 1: was 0.692
        (0.0, 0.3084971078187608, False, "[0.000, 0.309]"),  # ten tasks at 0: was 0.308
        (0.6926, 0.8, False, "[0.692, 0.800]"),  # was [0.693, 0.800]
        (0.2, 0.3074, False, "[0.200, 0.308]"),  # was [0.200, 0.307]
        (-0.1234, 0.5671, True, "[-0.124, +0.568]"),  # was [-0.123, +0.567]
        (0.1234, 0.5679, True, "[+0.123, +0.568]"),
        (-0.5679, -0.1231, True, "[-0.568, -0.123]"),
        (0.6919999999999999, 0.8000000000000002, False, "[0.692, 0.800]"),  # float noise
        (0.0004, 0.5, False, "[0.0004, 0.500]"),  # control: never printed as 0
        (0.5, 0.9996, False, "[0.500, 0.9996]"),  # control: never printed as 1
        (0.0004, 0.02, True, "[+0.0004, +0.020]"),  # control: never printed as 0
        (-0.99996, -0.5, True, "[-0.99996, -0.500]"),
        (0.49996, 0.50024, False, "[0.499, 0.501]"),  # outward ends print apart at 3
        (0.5, 0.75, False, "[0.500, 0.750]"),  # control: exact ends unchanged
    ],
)
def test_interval_ends_are_rounded_outward(
    low: float, high: float, difference: bool, want: str
) -> None:
    assert numbers.interval(low, high, difference=difference) == want


@settings(max_examples=400, deadline=None)
@given(
    st.floats(0, 1, allow_nan=False),
    st.floats(0, 1, allow_nan=False),
    st.booleans(),
)
def test_a_printed_interval_holds_the_computed_one(x: float, y: float, difference: bool) -> None:
    low, high = sorted((x, y))
    if difference:
        low, high = 2 * low - 1, 2 * high - 1
    if high - low < 1e-9:  # a zero-width interval is never shown (docs/statistics.md)
        return
    text = numbers.interval(low, high, difference=difference)
    assert holds(text, low, high), (low, high, text)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 4000), st.data())
def test_a_printed_estimate_lies_inside_its_printed_interval(n: int, data: st.DataObject) -> None:
    """The estimate is rounded to nearest, its ends outward: an estimate inside its interval
    prints inside it (rounded to nearest, an end and the estimate could cross)."""
    c = data.draw(st.integers(0, n))
    value = Fraction(c, n)
    below = data.draw(st.fractions(0, value)) if c else Fraction(0)
    above = data.draw(st.fractions(value, 1)) if c < n else Fraction(1)
    if above - below < Fraction(1, 10**9):
        return
    text = numbers.interval(float(below), float(above))
    a, b = map(float, text.strip("[]").split(", "))
    printed = numbers.fraction(float(value))
    if printed[0] not in "<>":
        assert a <= float(printed) <= b, (float(below), float(value), float(above), text)


# --- through the CLI: the documented exact bound, re-computed -------------------------------


@pytest.mark.parametrize("tasks", [5, 8, 10, 17, 30])
def test_all_pass_and_all_fail_print_the_exact_bound_outward(tmp_path: Path, tasks: int) -> None:
    """T tasks all at 1 (or 0): the exact bound [0.025^(1/T), 1] (or [0, 1 - 0.025^(1/T)]),
    its inner end rounded away from the estimate, in the text, the HTML and the JSON's note."""
    r = Fraction(exact_reach(tasks))
    for cells, want in (
        ({f"t{i}": (1, 3, 3, 0) for i in range(tasks)}, (outward(r, 3, False), Fraction(1))),
        ({f"t{i}": (1, 3, 0, 0) for i in range(tasks)}, (Fraction(0), outward(1 - r, 3, True))),
    ):
        case = tmp_path / f"{want[0]}".replace("/", "_")
        case.mkdir()
        data, text, page = reported(case, import_text(case, as_rows(cells)))
        rate = data["success_rate"]
        assert rate["method"] == "exact_bound"
        assert rate["ci_low"] == pytest.approx(float(want[0] and r), abs=5e-4)
        printed = f"[{half_up(want[0])}, {half_up(want[1])}]"
        assert printed in text and printed in page, (printed, text[:2000])
        assert holds(printed, rate["ci_low"], rate["ci_high"])


def json_intervals(block: Any) -> list[tuple[float, float, bool]]:
    """Every (ci_low, ci_high, is a difference) of a report or comparison's JSON."""
    found: list[tuple[float, float, bool]] = []
    if isinstance(block, dict):
        if block.get("ci_low") is not None and block.get("ci_high") is not None:
            difference = block.get("method") in ("t_cr1", "mover") or block["ci_low"] < 0
            found.append((block["ci_low"], block["ci_high"], difference))
        for value in block.values():
            found += json_intervals(value)
    elif isinstance(block, list):
        for value in block:
            found += json_intervals(value)
    return found


INTERVAL = re.compile(r"\[([+-]?\d\.\d+), ([+-]?\d\.\d+)\]")


def printed_intervals(text: str) -> list[str]:
    return [m.group(0) for m in INTERVAL.finditer(text)]


def held_by_some(text: str, computed: list[tuple[float, float, bool]]) -> bool:
    return any(holds(text, lo, hi) for lo, hi, _ in computed)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(tasks=batches(), extra=st.integers(0, 6))
def test_every_printed_interval_of_a_report_holds_a_computed_one(
    tmp_path_factory: Any, tasks: Any, extra: int
) -> None:
    """Generated imported batches (different attempt counts, invalid attempts and reruns,
    tasks with no valid attempt, weights, partial scores), padded with tasks at 1 so that
    many have an interval: every interval the text and the HTML print holds an interval of
    the JSON, its ends within one printed unit."""
    tasks = list(tasks) + [
        RefTask(f"pad{i}", 1.0, [["success"]] * 2, [None, None]) for i in range(extra)
    ]
    tmp = tmp_path_factory.mktemp("b")
    data, text, page = reported(tmp, import_text(tmp, as_csv(tasks)))
    computed = json_intervals(data)
    # and the k above the common k, each over the tasks with at least k counted attempts
    store = str(tmp / "s.db")
    code, out, err = cli(
        "report", data["batch_id"], "--json", "--k-over-supporting", "--store", store
    )
    assert code in (0, 3), err
    computed += json_intervals(json.loads(out))
    code, beyond, err = cli("report", data["batch_id"], "--k-over-supporting", "--store", store)
    assert code in (0, 3), err
    text += " " + " ".join(beyond.split())
    for shown_text in (text, page):
        for interval_text in printed_intervals(shown_text):
            assert held_by_some(interval_text, computed), (interval_text, computed)


@pytest.mark.parametrize(("seed", "other"), [(21, "t"), (22, "t"), (21, "u"), (23, "u")])
def test_every_printed_interval_of_a_comparison_holds_a_computed_one(
    tmp_path: Path, seed: int, other: str
) -> None:
    """Paired (the same tasks) and unpaired (other tasks: square-and-add) comparisons, in
    the text and the HTML page."""
    rng = random.Random(seed)
    sides: list[Cells] = [
        {
            f"t{i}": (rng.choice([1, 2]), 4, rng.randint(0, 4), rng.choice([0, 0, 1]))
            for i in range(9)
        },
        {f"{other}{i}": (1, 4, rng.randint(1, 4), 0) for i in range(9)},
    ]
    ids = [import_text(tmp_path, as_rows(c), name) for name, c in zip("ab", sides, strict=True)]
    args = ["compare", *ids, "--store", str(tmp_path / "s.db")]
    code, out, err = cli(*args, "--json", "--allow-mismatch")
    assert code == 0, err
    computed = json_intervals(json.loads(out))
    code, text, err = cli(*args, "--allow-mismatch", "--html", str(tmp_path / "c.html"))
    assert code == 0, err
    page = html.unescape(re.sub(r"<[^>]+>", " ", (tmp_path / "c.html").read_text("utf-8")))
    found = printed_intervals(" ".join(text.split())) + printed_intervals(" ".join(page.split()))
    assert found
    for interval_text in found:
        assert held_by_some(interval_text, computed), interval_text


# --- plan ---------------------------------------------------------------------------------


def test_plan_prints_powers_and_rates_by_the_reports_rule(tmp_path: Path) -> None:
    """A power of 0.9996 is not certain: it printed "1.00"; a pilot's mean rate prints as
    every rate does; the variance reductions are rounded half away from zero."""
    rng = random.Random(5)
    cells: Cells = {f"t{i}": (1, 4, rng.randint(0, 4), 0) for i in range(12)}
    batch = import_text(tmp_path, as_rows(cells))
    store = str(tmp_path / "s.db")
    code, out, err = cli("plan", batch, "--delta", "0.3", "--json", "--store", store)
    assert code == 0, err
    plan = json.loads(out)
    code, text, err = cli("plan", batch, "--delta", "0.3", "--store", store)
    assert code == 0, err
    flat = " ".join(text.split())
    powers = [v for row in plan["power_grid"].values() for v in row.values()]
    assert any(0.9995 <= v < 1 for v in powers), powers  # the case that printed "1.00"
    for row in plan["power_grid"].values():
        cells_text = " │ ".join(shown(Fraction(v)) for v in row.values())
        assert cells_text in flat, (cells_text, flat)
    mean = plan["components"][0]["mean"]
    assert f"│ {shown(Fraction(mean))} │" in flat
    m = plan["marginal"]
    for value in (m["one_more_attempt"], m["per_run_attempt"], m["one_more_task"]):
        exact = snapped(value)
        exponent = math.floor(math.log10(exact))
        mantissa = half_up(exact / Fraction(10) ** exponent, 2)
        assert f"{mantissa}e{exponent:+03d}" in flat, (value, flat)


def test_the_docs_state_that_interval_ends_round_outward() -> None:
    docs = " ".join((Path(__file__).parents[1] / "docs" / "statistics.md").read_text().split())
    assert "lower end is rounded down" in docs and "[0.691, 1]" in docs
    assert "[0.692, 1]" not in docs
