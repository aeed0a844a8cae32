"""Release gates for CI: ``--fail-under METRIC=VALUE`` checked against a batch's report.

A gate reads the headline estimate (valid attempts, as the report shows it first), never an
interval bound: a gate on ``ci_low`` would punish small suites for their size, and that is a
choice the user should make with a larger threshold, not one made for them. A metric the
batch cannot estimate (``pass^3`` from two attempts) fails its gate: a CI gate that passes
because nothing was measured would be worse than none. So does every gate of an unfinished
batch (planned attempts not stored, or invalid ones with reruns due): what was not run is in
no denominator, and the tasks left are not the suite.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from pydantic import BaseModel

from groundstate.errors import GroundstateError
from groundstate.report.numbers import apart, fraction, incomplete_text
from groundstate.stats.intervals import exact_mean

EXIT_BELOW_GATE = 4
"""``run`` and ``report`` exit 4 when a ``--fail-under`` metric is below its threshold
(3 is reserved for too many invalid tries, which takes precedence: those numbers are not a
verdict at all)."""

_METRIC = re.compile(r"^(success_rate|pass@([0-9]+)|pass\^([0-9]+))$")

MAX_K = 100_000
"""The largest k of a gate: ``run --attempts``'s bound (``pass^00`` was k = 0, and a k of
5,000 digits a traceback, Python making no such integer)."""


_ROUNDING = 1e-9
"""Without a per-task table to decide exactly (:meth:`Gate.passes`), an estimate equal to its
threshold passes even when averaging left it a hair below."""


class BadGate(GroundstateError):
    """A ``--fail-under`` option that cannot be read."""


class Gate(BaseModel):
    """One threshold: the batch fails when *metric* is below *threshold*."""

    metric: str
    """``success_rate``, ``pass@K`` or ``pass^K`` (K a whole number of attempts)."""
    threshold: float
    """Between 0 and 1."""

    @property
    def k(self) -> int | None:
        match = _METRIC.match(self.metric)
        assert match is not None
        found = match.group(2) or match.group(3)
        return int(found) if found else None

    def value(self, report: dict[str, Any]) -> float | None:
        """The metric's estimate in a :func:`~groundstate.analysis.batch_report`, if any."""
        if self.metric == "success_rate":
            estimate = report["success_rate"]
        else:
            table = report["pass_at_k" if self.metric.startswith("pass@") else "pass_hat_k"]
            estimate = table.get(self.k) or table.get(str(self.k))
        return None if estimate is None else float(estimate["estimate"])

    def passes(self, value: float, report: dict[str, Any]) -> bool:
        """Whether the estimate *value* reaches the threshold, decided on the exact rational
        the report's per-task table gives (valid view: the weighted mean of each task's c/n,
        pass@k or pass^k) against the threshold as written. A float with a tolerance let
        pass@30 = 1 - 1.6e-12 (five tasks of 50 successes in 100 attempts, which the report
        prints ">0.999") pass the gate ``pass@30=1``; a mean that is exactly the threshold
        but a hair below it as a float still passes."""
        exact = self.exact(report)
        if exact is None:
            return value >= self.threshold - _ROUNDING
        return exact >= Fraction(repr(self.threshold))

    def exact(self, report: dict[str, Any]) -> Fraction | None:
        """The metric as a rational from ``report["tasks"]`` (None without that table)."""
        rows = [t for t in report.get("tasks") or () if t["valid"]["n"] > 0]
        if not rows:
            return None
        name = "rate" if self.k is None else "at" if self.metric.startswith("pass@") else "hat"
        ns, cs = [t["valid"]["n"] for t in rows], [t["valid"]["c"] for t in rows]
        return exact_mean(ns, cs, [t["weight"] for t in rows], name, self.k or 1)


def parse_gate(text: str) -> Gate:
    """``pass^2=0.5`` as a :class:`Gate`; anything else is a :class:`BadGate` naming it."""
    metric, sep, value = text.partition("=")
    metric = metric.strip()
    match = _METRIC.match(metric)
    if not sep or match is None:
        raise BadGate(
            f"--fail-under {text!r}: expected METRIC=VALUE with METRIC one of success_rate, "
            "pass@K, pass^K (e.g. success_rate=0.8, pass^2=0.5)"
        )
    k = match.group(2) or match.group(3) or "1"
    if len(k) > len(str(MAX_K)) or not 1 <= int(k) <= MAX_K:  # 10^5000 is no int() Python makes
        raise BadGate(f"--fail-under {text!r}: k must be 1 to {MAX_K:,} (attempts per task)")
    try:
        threshold = float(value)
    except ValueError:
        raise BadGate(f"--fail-under {text!r}: {value.strip()!r} is not a number") from None
    if not 0.0 <= threshold <= 1.0:
        raise BadGate(f"--fail-under {text!r}: the threshold must be between 0 and 1")
    return Gate(metric=metric, threshold=threshold)


def check_attempts(gates: list[Gate], attempts: int) -> None:
    """Refuse, before a batch runs, a gate on pass@k or pass^k with k above the attempts."""
    for gate in gates:
        if gate.k is not None and gate.k > attempts:
            raise BadGate(
                f"--fail-under {gate.metric}: k = {gate.k} needs at least {gate.k} attempts "
                f"per task (--attempts is {attempts})"
            )


def gate_results(gates: list[Gate], report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each gate with the batch's value and whether it passed. An unestimated metric fails,
    and so does every gate of an unfinished batch (``missing_attempts``: planned attempts not
    stored, or invalid ones with reruns due): its numbers leave out what was not run, so a
    batch stopped before its hard tasks would pass. ``incomplete`` says why (None if not)."""
    missing = report.get("missing_attempts")
    incomplete = f"the batch is incomplete: {incomplete_text(missing)}" if missing else None
    results = []
    for gate in gates:
        value = gate.value(report)
        results.append(
            {
                "metric": gate.metric,
                "threshold": gate.threshold,
                "value": value,
                "passed": incomplete is None and value is not None and gate.passes(value, report),
                "incomplete": incomplete,
                "unestimated": None if value is not None else _why_unestimated(gate, report),
            }
        )
    return results


def _why_unestimated(gate: Gate, report: dict[str, Any]) -> str:
    """Why the batch has no value for *gate*: no valid attempt at all, or a k above the
    common k (which tasks stop it, as the report's k limits name them)."""
    limits = report.get("k_limits", {}).get("valid", {})
    kmax = limits.get("kmax", 0)
    if not kmax:
        return "no task has a valid attempt"
    short = ", ".join(f"{t['task_id']} ({t['n']})" for t in limits.get("limited_by", [])[:5])
    return f"k stops at {kmax} in the valid view" + (
        f"; tasks with fewer valid attempts: {short}" if short else ""
    )


def failure_line(result: dict[str, Any]) -> str:
    """One line for a failed gate."""
    threshold = f"{result['threshold']:g}"
    if result["value"] is None:
        why = f": {result['unestimated']}" if result.get("unestimated") else ""
        return f"{result['metric']} could not be estimated (gate {threshold}){why}"
    if result.get("incomplete"):
        return (
            f"{result['metric']} = {fraction(result['value'])} is not a verdict (gate "
            f"{threshold}): {result['incomplete']}"
        )
    # A value below its threshold exactly (:meth:`Gate.passes`) whose float is not: printed
    # as the float just below, never "0.950 is below 0.95".
    below = min(result["value"], math.nextafter(result["threshold"], -math.inf))
    value = apart(below, result["threshold"], 3)  # never "0.950 is below 0.95"
    return f"{result['metric']} = {value} is below {threshold}"
