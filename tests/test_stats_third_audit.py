"""Third statistics audit: what tests/test_stats_independent.py does not reach.

Each reference here is computed another way than the code under test (bisection instead of
the closed form, the CSV rows instead of the store).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundstate.stats import interval_rule
from groundstate.stats.intervals import exact_reach
from tests.test_stats_independent import ref_max_product, ref_reach

# --- the exact bound when every task is at the top, with unequal weights ---------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.25, 10.0, 100.0]), min_size=5, max_size=12))
def test_the_exact_bound_holds_for_any_weights(weights: list[float]) -> None:
    """At the lower bound, no task means of that weighted mean put every task at 1 with a
    chance above 0.025 (it would then not be a 97.5% bound), and the bound is tight."""
    reach = exact_reach(np.array(weights))
    assert ref_max_product(weights, reach) == pytest.approx(0.025, rel=1e-6)
    assert reach == pytest.approx(ref_reach(weights), abs=1e-9)
    low = interval_rule(np.ones(len(weights)), np.array(weights)).low
    assert low == pytest.approx(reach, abs=1e-12)
    # Every task at 0: the mirror image.
    high = interval_rule(np.zeros(len(weights)), np.array(weights)).high
    assert high == pytest.approx(1 - reach, abs=1e-12)


def test_kish_tasks_in_place_of_the_weights_were_not_a_bound() -> None:
    """The former rule, 0.025^(1/T_eff), let all tasks reach 1 with chance 0.036 at these
    weights: its 'exact' 97.5% bound held 96.4% of the time at best."""
    weights = [2.0, 10.0, 10.0, 10.0, 2.0, 3.25, 3.25, 2.0, 10.0, 3.25, 3.25]
    kish = math.fsum(weights) ** 2 / math.fsum(w * w for w in weights)
    assert ref_max_product(weights, 0.025 ** (1 / kish)) > 0.035
    low = interval_rule(np.ones(len(weights)), np.array(weights)).low
    assert low is not None and ref_max_product(weights, low) <= 0.025 + 1e-9
    # Equal weights: the textbook 0.025^(1/T).
    assert exact_reach(np.ones(10)) == pytest.approx(0.025**0.1)
