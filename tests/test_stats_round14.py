"""Statistics audit, fourteenth round: every figure recomputed independently on edge cases.

Each test names the defect it pins; the reference values are computed here, in plain Python
or scipy, never through the code under test."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from groundstate.stats import Outcome, compare, summarize
from tests.test_compare_cli import _import, _invoke, _json, _store

# --- 1. a spread of 0 between tasks is no known SE of 0 ----------------------------------------


def test_an_exact_bound_carries_no_se_and_prints_none(tmp_path: Path) -> None:
    """Identical batches (every task difference 0) printed "SE 0.000" beside the exact bound
    [-0.264, +0.264], and a level with every task at 1 "SE 0.000" beside [0.541, 1]: a
    certainty the bound denies. A spread of 0 between tasks is the sample's, so no SE is
    given (JSON null, "n/a" in the text), below five tasks too; a spread keeps its SE."""
    flat = [Outcome(f"t{i}", j, True) for i in range(6) for j in range(4)]
    rate = summarize(flat, n_boot=0).views["valid"].success_rate
    assert rate is not None and rate.method == "exact_bound" and rate.se is None
    few = summarize(flat[:12], n_boot=0).views["valid"].success_rate  # 3 tasks, all at 1
    assert few is not None and few.ci_low is None and few.se is None
    spread = [Outcome(f"t{i}", j, j <= i % 4) for i in range(6) for j in range(4)]
    rates = [min(i % 4 + 1, 4) / 4 for i in range(6)]
    got = summarize(spread, n_boot=0).views["valid"].success_rate
    assert got is not None and got.se == pytest.approx(np.std(rates, ddof=1) / math.sqrt(6))
    same = compare(spread, spread, n_boot=0).find("success_rate").difference
    assert same.method == "exact_bound" and same.se is None

    marks = {f"t{i}": "SSFF" if i % 2 else "SFFF" for i in range(6)}
    a, b = _import(tmp_path, "a", marks), _import(tmp_path, "b", marks)
    data = _json(tmp_path, "compare", a, b)
    difference = data["metrics"]["valid"]["success_rate"]["difference"]  # type: ignore[index]
    assert difference["method"] == "exact_bound" and difference["se"] is None
    code, out, err = _invoke("compare", a, b, "--store", _store(tmp_path))
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.lstrip("│ ").startswith("success_rate"))
    assert "0.000 " not in row.replace("+0.000", "") and "n/a" in row
