"""Agreement between annotators (or graders): Cohen's kappa, Fleiss' kappa, Krippendorff's alpha.

Ratings come as a matrix: one row per unit (a run), one column per rater (an annotator, a
grader revision), ``None`` where a rater gave no rating. Each statistic says which units it
could use: Cohen's kappa needs exactly two raters and drops units either left blank; Fleiss'
kappa needs the same number of ratings on every unit and drops units missing any; only
Krippendorff's alpha (nominal) uses every unit with at least two ratings, whoever gave them.

A statistic is ``None`` where it is undefined (every rating in one category: chance agreement
is 1 and there is nothing to correct for), never a made-up 0 or 1. What the commands show is
:func:`reportable`: a kappa or alpha over fewer than :data:`MIN_UNITS` units is withheld too,
with the reason (one pair the graders disagree on is Cohen's 0 and Fleiss' -1: no measure of
either grader), as an interval is below ``MIN_TASKS`` tasks.

Multi-label annotation (several failure labels per run) is scored label by label, each label as
present/absent, and overall by pooling those binary decisions over labels; the exact-set
agreement treats each run's whole label set as one nominal category. Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

MIN_UNITS = 5
"""Fewer units than this and :func:`reportable` withholds a kappa or alpha (None, with a note):
the number the interval rule asks of tasks (``groundstate.stats.intervals.MIN_TASKS``)."""

Rating = Hashable | None
Ratings = Sequence[Sequence[Rating]]
"""Rows are units, columns raters; ``None`` is a missing rating."""


@dataclass(frozen=True)
class Agreement:
    """Every statistic the ratings support, with the units each one used."""

    raters: int
    units: int
    """Units with at least one rating."""
    percent_agreement: float | None
    """Observed agreement, no chance correction: the share of agreeing pairs of ratings
    within units, a unit's pairs weighted 1/(m - 1) for its m ratings (Krippendorff's
    observed agreement; with two raters, the share of units they agree on)."""
    cohen_kappa: float | None
    """Two raters only; over units both rated."""
    cohen_units: int
    fleiss_kappa: float | None
    """Over units every rater rated."""
    fleiss_units: int
    krippendorff_alpha: float | None
    """Nominal; over every unit with two or more ratings (missing ratings allowed)."""
    alpha_units: int
    note: str | None = None
    """Why a statistic is withheld though defined (:func:`reportable`), or None."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- the three statistics ------------------------------------------------------------------


def cohen_kappa(ratings: Ratings) -> float | None:
    """Cohen's kappa of two raters: (p_o - p_e) / (1 - p_e), over units both rated."""
    pairs = [(row[0], row[1]) for row in _rows(ratings, width=2) if None not in row]
    if not pairs:
        return None
    categories = _categories([v for pair in pairs for v in pair])
    codes = np.array([[categories[first], categories[second]] for first, second in pairs])
    table = np.zeros((len(categories), len(categories)))
    np.add.at(table, (codes[:, 0], codes[:, 1]), 1.0)
    table /= table.sum()
    observed = float(np.trace(table))
    chance = float(table.sum(axis=1) @ table.sum(axis=0))
    return _chance_corrected(observed, chance)


def fleiss_kappa(ratings: Ratings) -> float | None:
    """Fleiss' kappa over the units every rater rated (a fixed number of raters per unit)."""
    complete = [row for row in _rows(ratings) if None not in row]
    if not complete or len(complete[0]) < 2:
        return None
    return fleiss_kappa_counts(_count_table(complete))


def fleiss_kappa_counts(counts: npt.ArrayLike) -> float | None:
    """Fleiss' kappa from a units x categories table of how many raters chose each category.

    Every row must sum to the same number of raters n >= 2 (Fleiss 1971).
    """
    table = np.asarray(counts, dtype=float)
    if table.ndim != 2 or table.shape[0] == 0:
        raise ValueError("counts must be a non-empty units x categories table")
    per_unit = table.sum(axis=1)
    n = per_unit[0]
    if n < 2 or not np.all(per_unit == n):
        raise ValueError("every unit needs the same number of ratings, at least two")
    observed = float(np.mean(((table**2).sum(axis=1) - n) / (n * (n - 1))))
    shares = table.sum(axis=0) / table.sum()
    return _chance_corrected(observed, float(shares @ shares))


def krippendorff_alpha(ratings: Ratings) -> float | None:
    """Krippendorff's alpha for nominal data; missing ratings allowed (Krippendorff 2011).

    alpha = 1 - (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c n_k, from the coincidence
    matrix o of the pairable units (two or more ratings).
    """
    coincidences = _coincidences(ratings)
    if coincidences is None:
        return None
    totals = coincidences.sum(axis=1)
    n = totals.sum()
    disagreeing = coincidences.sum() - np.trace(coincidences)
    expected = n**2 - float(totals @ totals)
    if expected == 0:
        return None  # one category only: no variation to agree about
    return float(1 - (n - 1) * disagreeing / expected)


def percent_agreement(ratings: Ratings) -> float | None:
    """Observed agreement: agreeing pairs of ratings within units, each unit's pairs weighted
    1/(m - 1) for its m ratings (so a unit counts by its ratings), missing ratings skipped."""
    coincidences = _coincidences(ratings)
    if coincidences is None:
        return None
    return float(np.trace(coincidences) / coincidences.sum())


def agreement(ratings: Ratings) -> Agreement:
    """All the statistics the ratings support, with how many units each used."""
    rows = _rows(ratings)
    raters = len(rows[0]) if rows else 0
    rated = [row for row in rows if any(v is not None for v in row)]
    both = [row for row in rows if None not in row]
    return Agreement(
        raters=raters,
        units=len(rated),
        percent_agreement=percent_agreement(rows),
        cohen_kappa=cohen_kappa(rows) if raters == 2 else None,
        cohen_units=len(both) if raters == 2 else 0,
        fleiss_kappa=fleiss_kappa(rows),
        fleiss_units=len(both) if raters >= 2 else 0,
        krippendorff_alpha=krippendorff_alpha(rows),
        alpha_units=sum(sum(v is not None for v in row) >= 2 for row in rows),
    )


def reportable(found: Agreement) -> Agreement:
    """*found* with each kappa or alpha over fewer than :data:`MIN_UNITS` units withheld (None)
    and named in ``note``: ``n/a: Cohen's kappa (1 unit), Fleiss' kappa (1 unit), Krippendorff's
    alpha (1 unit): each needs at least 5 units``. A statistic already None stays None."""
    statistics = (
        ("cohen_kappa", "Cohen's kappa", found.cohen_units),
        ("fleiss_kappa", "Fleiss' kappa", found.fleiss_units),
        ("krippendorff_alpha", "Krippendorff's alpha", found.alpha_units),
    )
    few = [(field, name, units) for field, name, units in statistics
           if getattr(found, field) is not None and units < MIN_UNITS]  # fmt: skip
    if not few:
        return found
    named = ", ".join(f"{name} ({units} unit{'s' * (units != 1)})" for _, name, units in few)
    note = f"n/a: {named}: {'each needs' if len(few) > 1 else 'needs'} at least {MIN_UNITS} units"
    withheld: dict[str, Any] = {field: None for field, _, _ in few}
    return replace(found, note=note, **withheld)


# --- multi-label annotation ---------------------------------------------------------------


@dataclass(frozen=True)
class LabelAgreement:
    """Agreement on one failure label, taken as present/absent on each run."""

    label: str
    positives: int
    """Ratings that gave the label (over all raters and units)."""
    agreement: Agreement


@dataclass(frozen=True)
class MultiLabelAgreement:
    """Per label, pooled over labels, and on whole label sets."""

    annotators: tuple[str, ...]
    units: int
    per_label: tuple[LabelAgreement, ...]
    overall: Agreement
    """Every (run, label) present/absent decision pooled into one binary rating task."""
    exact_set: Agreement
    """Each run's whole label set as one nominal category."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def multilabel_agreement(
    labelled: Mapping[str, Mapping[str, frozenset[str]]], labels: Sequence[str]
) -> MultiLabelAgreement:
    """Agreement of annotators who gave each unit a set of labels.

    *labelled* maps unit -> annotator -> the labels that annotator gave; an annotator absent
    from a unit's mapping did not rate it (a missing rating, not an empty set).
    """
    annotators = tuple(sorted({a for sets in labelled.values() for a in sets}))
    units = sorted(labelled)

    def binary(label: str) -> list[list[Rating]]:
        return [
            [label in labelled[u][a] if a in labelled[u] else None for a in annotators]
            for u in units
        ]

    per_label = tuple(
        LabelAgreement(
            label=label,
            positives=sum(label in s for u in units for s in labelled[u].values()),
            agreement=agreement(binary(label)),
        )
        for label in labels
    )
    pooled = [row for label in labels for row in binary(label)]
    sets = [[labelled[u].get(a) for a in annotators] for u in units]
    return MultiLabelAgreement(
        annotators=annotators,
        units=len(units),
        per_label=per_label,
        overall=agreement(pooled),
        exact_set=agreement(sets),
    )


# --- helpers --------------------------------------------------------------------------------


def _rows(ratings: Ratings, width: int | None = None) -> list[tuple[Rating, ...]]:
    rows = [tuple(row) for row in ratings]
    widths = {len(row) for row in rows}
    if len(widths) > 1:
        raise ValueError(f"every unit needs one entry per rater; got widths {sorted(widths)}")
    if width is not None and rows and len(rows[0]) != width:
        raise ValueError(f"this statistic needs exactly {width} raters, got {len(rows[0])}")
    return rows


def _categories(values: Sequence[Hashable]) -> dict[Hashable, int]:
    return {value: i for i, value in enumerate(dict.fromkeys(values))}


def _coincidences(ratings: Ratings) -> npt.NDArray[np.float64] | None:
    """Krippendorff's coincidence matrix over pairable units, or None if there are none."""
    pairable = [[v for v in row if v is not None] for row in _rows(ratings)]
    pairable = [values for values in pairable if len(values) >= 2]
    if not pairable:
        return None
    # Each unit adds (c c^T - diag c) / (m - 1) for its category counts c and m ratings; summed
    # over units at once, as matrix products (a Python loop of outer products took seconds for
    # the 100,000 attempts of one batch's verdicts).
    counts = _count_table(pairable)
    shares = counts / (counts.sum(axis=1) - 1)[:, None]
    matrix: npt.NDArray[np.float64] = counts.T @ shares - np.diag(shares.sum(axis=0))
    return matrix


def _count_table(rows: Sequence[Sequence[Hashable]]) -> npt.NDArray[np.float64]:
    """Units x categories: how many of each unit's ratings (none missing) fall in each
    category."""
    values = [v for row in rows for v in row]
    categories = _categories(values)
    codes = np.fromiter((categories[v] for v in values), dtype=np.int64, count=len(values))
    units = np.repeat(np.arange(len(rows)), [len(row) for row in rows])
    table = np.zeros((len(rows), len(categories)))
    np.add.at(table, (units, codes), 1.0)
    return table


def _chance_corrected(observed: float, chance: float) -> float | None:
    # Chance agreement is 1 only when every rating is in one category (then kappa is
    # undefined). A relative tolerance would also call a rare category undefined: one run
    # both raters label "bug" among 200,000 "ok" ones has chance 1 - 1e-5 and kappa 1.
    if chance >= 1.0 - 1e-12:
        return None
    return (observed - chance) / (1 - chance)
