"""Agreement statistics against published worked examples and hand-computed values."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundstate.agreement import (
    agreement,
    cohen_kappa,
    fleiss_kappa,
    fleiss_kappa_counts,
    krippendorff_alpha,
    multilabel_agreement,
    percent_agreement,
)

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: four observers,
# twelve units, missing values; nominal alpha = 0.743.
_ = None
KRIPPENDORFF_2011 = [  # rows: observers A-D; columns: units 1-12
    [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
    [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
]
BY_UNIT = [list(unit) for unit in zip(*KRIPPENDORFF_2011, strict=True)]

# Fleiss (1971) as tabulated on Wikipedia ("Fleiss' kappa", worked example): 10 subjects,
# 14 raters, 5 categories; kappa = 0.210.
FLEISS_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_krippendorff_worked_example_with_missing_ratings() -> None:
    assert krippendorff_alpha(BY_UNIT) == pytest.approx(0.743, abs=5e-4)


def test_krippendorff_ignores_a_unit_with_a_single_rating() -> None:
    # unit 12 has one rating: it is not pairable, so changing it changes nothing
    changed = [row[:] for row in BY_UNIT]
    changed[11][1] = 1
    assert krippendorff_alpha(changed) == krippendorff_alpha(BY_UNIT)


def test_fleiss_wikipedia_example() -> None:
    assert fleiss_kappa_counts(FLEISS_TABLE) == pytest.approx(0.210, abs=5e-4)


def test_fleiss_from_ratings_matches_the_count_table() -> None:
    ratings = [[c for c, n in enumerate(row) for _ in range(n)] for row in FLEISS_TABLE]
    assert fleiss_kappa(ratings) == pytest.approx(fleiss_kappa_counts(FLEISS_TABLE))


def test_fleiss_rejects_unequal_numbers_of_raters() -> None:
    with pytest.raises(ValueError, match="same number of ratings"):
        fleiss_kappa_counts([[2, 1], [1, 1]])


def test_cohen_wikipedia_example() -> None:
    # 50 proposals: both yes 20, A yes / B no 5, A no / B yes 10, both no 15 -> kappa 0.4
    pairs = [["y", "y"]] * 20 + [["y", "n"]] * 5 + [["n", "y"]] * 10 + [["n", "n"]] * 15
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    assert percent_agreement(pairs) == pytest.approx(0.7)


def test_cohen_drops_units_either_rater_left_blank() -> None:
    pairs = [["y", "y"]] * 20 + [["y", "n"]] * 5 + [["n", "y"]] * 10 + [["n", "n"]] * 15
    assert cohen_kappa([*pairs, ["y", None], [None, "n"]]) == pytest.approx(0.4)


def test_cohen_needs_exactly_two_raters() -> None:
    with pytest.raises(ValueError, match="exactly 2 raters"):
        cohen_kappa([[1, 1, 1]])


def test_two_raters_complete_data_alpha_is_scotts_pi_with_small_sample_correction() -> None:
    # hand-computed: 10 units, categories a/b; pi = 1 - Do/De, alpha = 1 - (n-1) Do' / De'
    a = list("aaaaabbbbb")
    b = list("aaaabbbbba")
    rows = [list(p) for p in zip(a, b, strict=True)]
    # 8 of 10 units agree: 4 disagreeing ordered pairs; values a 10, b 10 of n = 20
    expected_alpha = 1 - (20 - 1) * 4 / (20**2 - 10**2 - 10**2)
    assert krippendorff_alpha(rows) == pytest.approx(expected_alpha)
    assert cohen_kappa(rows) == pytest.approx((0.8 - 0.5) / 0.5)  # marginals 5/5 and 5/5


def test_perfect_and_systematically_opposed_raters() -> None:
    same = [["x", "x"], ["y", "y"], ["x", "x"], ["z", "z"]]
    assert cohen_kappa(same) == pytest.approx(1.0)
    assert krippendorff_alpha(same) == pytest.approx(1.0)
    opposed = [[True, False], [False, True]] * 5
    assert cohen_kappa(opposed) == pytest.approx(-1.0)
    assert krippendorff_alpha(opposed) is not None
    assert krippendorff_alpha(opposed) < 0  # type: ignore[operator]


def test_one_category_only_is_undefined_not_perfect() -> None:
    rows = [["a", "a"], ["a", "a"]]
    assert cohen_kappa(rows) is None
    assert fleiss_kappa(rows) is None
    assert krippendorff_alpha(rows) is None
    assert percent_agreement(rows) == 1.0


def test_agreement_names_the_units_each_statistic_used() -> None:
    result = agreement([["a", "a"], ["a", "b"], ["b", None], [None, None], ["b", "b"]])
    assert (result.units, result.cohen_units, result.fleiss_units, result.alpha_units) == (
        4,
        3,
        3,
        3,
    )
    assert result.cohen_kappa is not None


def test_agreement_with_three_raters_has_no_cohen_kappa() -> None:
    result = agreement(BY_UNIT)
    assert result.cohen_kappa is None
    assert result.krippendorff_alpha == pytest.approx(0.743, abs=5e-4)
    # Fleiss over the units all four rated: units 2-9
    assert result.fleiss_units == 8


def test_multilabel_per_label_overall_and_exact_set() -> None:
    labelled = {
        "r1": {"ann": frozenset({"planning"}), "bob": frozenset({"planning"})},
        "r2": {"ann": frozenset({"planning", "recovery"}), "bob": frozenset({"planning"})},
        "r3": {"ann": frozenset({"perception"}), "bob": frozenset({"recovery"})},
        "r4": {"ann": frozenset({"recovery"})},  # bob did not rate r4: missing, not empty
    }
    labels = ["perception", "planning", "recovery"]
    result = multilabel_agreement(labelled, labels)
    planning = next(x for x in result.per_label if x.label == "planning")
    assert planning.positives == 4
    assert planning.agreement.percent_agreement == 1.0
    assert planning.agreement.cohen_units == 3  # r4 left out
    recovery = next(x for x in result.per_label if x.label == "recovery")
    # r1 (no, no) r2 (yes, no) r3 (no, yes): 1 of 3 agree
    assert recovery.agreement.percent_agreement == pytest.approx(1 / 3)
    # pooled over labels: 9 pairable binary decisions, 6 agree (perception 2/3 + 3/3 + 1/3)
    assert result.overall.percent_agreement == pytest.approx(6 / 9)
    assert result.exact_set.percent_agreement == pytest.approx(1 / 3)
    assert result.annotators == ("ann", "bob")


def test_random_raters_agree_about_chance() -> None:
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 3, size=(2000, 2)).tolist()
    assert abs(cohen_kappa(rows) or 0) < 0.05
    assert abs(krippendorff_alpha(rows) or 0) < 0.05


# --- properties -------------------------------------------------------------------------------

_unit = st.lists(st.sampled_from("abc"), min_size=3, max_size=3)
_table = st.lists(_unit, min_size=2, max_size=15)


def _scotts_pi(rows: list[list[str]]) -> float | None:
    """Scott's pi, computed independently: pooled marginals for chance agreement."""
    values = [v for row in rows for v in row]
    chance = sum((values.count(c) / len(values)) ** 2 for c in set(values))
    observed = sum(a == b for a, b in rows) / len(rows)
    return None if chance == 1 else (observed - chance) / (1 - chance)


@settings(max_examples=40, deadline=None)
@given(_table)
def test_alpha_is_scotts_pi_corrected_for_sample_size(table: list[list[str]]) -> None:
    rows = [row[:2] for row in table]
    pi, alpha = _scotts_pi(rows), krippendorff_alpha(rows)
    if pi is None:
        assert alpha is None
    else:
        n = 2 * len(rows)
        assert alpha == pytest.approx(1 - (1 - pi) * (n - 1) / n)


@settings(max_examples=40, deadline=None)
@given(_table, st.permutations(range(3)), st.randoms(use_true_random=False))
def test_statistics_ignore_rater_order_unit_order_and_category_names(
    table: list[list[str]], raters: list[int], rnd: Any
) -> None:
    renamed = {"a": "x", "b": "a", "c": "q"}
    shuffled = [[renamed[row[i]] for i in raters] for row in table]
    rnd.shuffle(shuffled)
    for statistic in (fleiss_kappa, krippendorff_alpha, percent_agreement):
        before, after = statistic(table), statistic(shuffled)
        assert (before is None) == (after is None)
        if before is not None:
            assert after == pytest.approx(before)
    pairs = [row[:2] for row in table]
    swapped = [[b, a] for a, b in pairs]
    kappa = cohen_kappa(pairs)
    assert cohen_kappa(swapped) == (None if kappa is None else pytest.approx(kappa))


def test_fleiss_drops_a_partly_rated_unit_rather_than_miscounting_it() -> None:
    complete = [["a", "a", "b"], ["b", "b", "b"], ["a", "b", "a"]]
    assert fleiss_kappa([*complete, ["a", None, "a"]]) == fleiss_kappa(complete)
    assert krippendorff_alpha([*complete, ["a", None, "a"]]) != krippendorff_alpha(complete)
