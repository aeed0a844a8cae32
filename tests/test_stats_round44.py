"""Statistics audit, forty-fourth round: an outside evaluator's re-computation of every figure
``report --json`` and ``compare --json`` print for batches the runner really stored.

The reference here is written from the chapter (``shared/reference/evaluating-agents.txt``)
and docs/statistics.md alone, in exact rationals (``fractions.Fraction``, ``math.comb``): the
counted try of an attempt is its last retry; environment and grader failures are invalid
(out of the valid view, failures in the strict view); every other end, harness compatibility
failures included, counts against the system; a suite value is the weighted mean of per-task
values over the tasks with a counted attempt; the curves run to the fewest counted attempts of
any task; the invalid-try flag is over every try, reruns included. Its input is the store's
raw records (SQLite rows read here, not through the store's API), so the runner, the store,
the seal, counting, estimators, intervals and JSON are all under test.

Found in this round: ``compare`` said nothing of either side's invalid tries. A comparison of
a batch whose invalid tries exceeded its declared ``max_invalid_rate`` (37% of tries against
20%: its own report says FLAGGED) printed its differences and p-values with no word of it,
nor of how many attempts each side lost to environment failures and reruns. Now each side's
flag and denominators are notes (text, HTML, JSON) and ``compare --json`` carries each side's
``tries`` block and ``invalid_rate_flagged_<side>``, as ``report --json`` does.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import math
import signal
import sqlite3
from collections import Counter, defaultdict
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

import groundstate
from groundstate.interrupts import Interrupted
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.spec.suite import load_suite
from groundstate.spec.system import InvalidRunPolicy, load_system
from groundstate.stats import Outcome, compare, suite_pass_hat_k, summarize, task_counts
from groundstate.store import RunStore
from groundstate.testing import FaultyEnvironments
from tests.test_stats_independent import cli, import_text

EXAMPLES = Path(groundstate.__file__).resolve().parents[2] / "examples"
INVALID = ("environment_failure", "grader_failure")
TASKS = (
    "cancel-one-item", "cancel-pending-order", "card-number-request", "change-order-address",
    "refund-socks", "refund-declined", "exchange-shoe-size",
)  # fmt: skip

# --- the reference -------------------------------------------------------------------------


def ref_at(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def ref_hat(n: int, c: int, k: int) -> Fraction:
    return Fraction(math.comb(c, k), math.comb(n, k))


def invalid(reason: str) -> bool:
    return reason.split("/")[0] in INVALID


def last_tries(tries: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    """The counted try of each (task, attempt): its last retry."""
    last: dict[tuple[str, int], dict[str, Any]] = {}
    for t in sorted(tries, key=lambda t: t["retry"]):
        last[t["task_id"], t["attempt"]] = t
    return last


def cells(tries: list[dict[str, Any]]) -> dict[str, tuple[int, int, int]]:
    """Per task: (counted attempts, invalid ones, valid successes)."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for (task, _), t in last_tries(tries).items():
        cell = out[task]
        cell[0] += 1
        cell[1] += invalid(t["terminal_reason"])
        cell[2] += bool(t["success"]) and not invalid(t["terminal_reason"])
    return {task: (a, i, c) for task, (a, i, c) in out.items()}


def n_of(cell: tuple[int, int, int], view: str) -> int:
    return cell[0] if view == "strict" else cell[0] - cell[1]


def weighted(values: list[Fraction], weights: list[float]) -> Fraction:
    total = sum((Fraction(w) * v for w, v in zip(weights, values, strict=True)), Fraction(0))
    return total / sum(Fraction(w) for w in weights)


def cr1(values: list[float], weights: list[float]) -> float:
    t, total = len(values), math.fsum(weights)
    mean = math.fsum(w * v for w, v in zip(weights, values, strict=True)) / total
    spread = math.fsum(w * w * (v - mean) ** 2 for w, v in zip(weights, values, strict=True))
    return math.sqrt(spread) / total * math.sqrt(t / (t - 1))


def agresti_coull(u: float, se: float, df: float) -> tuple[float, float]:
    q = float(scipy_stats.t.ppf(0.975, df))
    n_eff = u * (1 - u) / se**2
    centre = (u * n_eff + q * q / 2) / (n_eff + q * q)
    half = q * math.sqrt(centre * (1 - centre) / (n_eff + q * q))
    return max(0.0, centre - half), min(1.0, centre + half)


def check_level(
    got: dict[str, Any], values: list[Fraction], weights: list[float], what: str
) -> None:
    """The estimate exactly; with a spread and 5+ tasks the CR1 SE and T - 1 df, the
    Agresti-Coull interval where no widening note applies, never narrower where one does."""
    want = weighted(values, weights)
    assert got["estimate"] == pytest.approx(float(want), abs=1e-12), what
    assert got["n_tasks"] == len(values), what
    if len(values) < 5:
        assert (got["ci_low"], got["ci_high"], got["method"]) == (None, None, "none"), what
        return
    assert got["ci_low"] < got["ci_high"], what  # never zero width
    assert got["ci_low"] <= got["estimate"] <= got["ci_high"], what
    if len(set(values)) == 1:
        assert got["method"] == "exact_bound" and got["se"] is None, what
        return
    se = cr1([float(v) for v in values], weights)
    assert got["se"] == pytest.approx(se, rel=1e-9) and got["df"] == len(values) - 1, what
    low, high = agresti_coull(float(want), se, len(values) - 1)
    if got["note"] == "":
        assert (got["ci_low"], got["ci_high"]) == pytest.approx((low, high), abs=1e-9), what
    else:  # widened along the curve or to the exact bound: only ever wider
        assert got["ci_low"] <= low + 1e-9 and got["ci_high"] >= high - 1e-9, what


def check_report(rep: dict[str, Any], tries: list[dict[str, Any]], max_rate: float) -> None:
    table = cells(tries)
    final = last_tries(tries)
    n_invalid = sum(invalid(t["terminal_reason"]) for t in final.values())
    assert (rep["valid_attempts"], rep["invalid_attempts"]) == (len(final) - n_invalid, n_invalid)
    assert rep["terminal_reasons"] == dict(Counter(t["terminal_reason"] for t in final.values()))
    bad_tries = sum(invalid(t["terminal_reason"]) for t in tries)
    assert rep["tries"]["tries"] == len(tries) and rep["tries"]["invalid_tries"] == bad_tries
    assert rep["tries"]["flagged"] is (bad_tries / len(tries) > max_rate)
    assert rep["tries"]["max_invalid_rate"] == max_rate
    rows = {row["task_id"]: row for row in rep["tasks"]}
    assert set(rows) == set(table)
    for task, (attempts, bad, wins) in table.items():
        row = rows[task]
        assert (row["attempts"], row["invalid"]) == (attempts, bad), task
        assert (row["valid"]["n"], row["valid"]["c"]) == (attempts - bad, wins), task
        assert (row["strict"]["n"], row["strict"]["c"]) == (attempts, wins), task
    for view, block in (("valid", rep), ("strict", rep["invalid_as_failure"])):
        used = sorted(t for t in table if n_of(table[t], view) > 0)
        assert sorted(rep["summary"]["views"][view]["excluded_tasks"]) == sorted(
            set(table) - set(used)
        )
        kmax = min(n_of(table[t], view) for t in used)
        assert rep["k_limits"][view]["kmax"] == kmax
        weights = [1.0] * len(used)
        ns = [(n_of(table[t], view), table[t][2]) for t in used]
        rate = block["success_rate"]
        check_level(rate, [Fraction(c, n) for n, c in ns], weights, f"{view} rate")
        assert rate["attempts"] == sum(n for n, _ in ns)
        assert sorted(map(int, block["pass_at_k"])) == list(range(1, kmax + 1))
        for k in range(1, kmax + 1):
            at = [ref_at(n, c, k) for n, c in ns]
            hat = [ref_hat(n, c, k) for n, c in ns]
            check_level(block["pass_at_k"][str(k)], at, weights, f"{view} pass@{k}")
            check_level(block["pass_hat_k"][str(k)], hat, weights, f"{view} pass^{k}")


# --- real batches: the example suite, a faulty environment, reruns, a resume ----------------


def raw_tries(store: Path, batch_id: str) -> list[dict[str, Any]]:
    """Every stored try of *batch_id*, read from the database's rows as an outsider would."""
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT record FROM runs WHERE batch_id = ?", (batch_id,)).fetchall()
    return [json.loads(row[0]) for row in rows]


def run_batch(
    store: Path, *, system: str, attempts: int, rate: float, retries: int, stop_after: int = 0
) -> str:
    """A batch of the retail example's TASKS under *system*, its environments broken at
    *rate*; stopped by SIGINT after *stop_after* tries and resumed (0: not stopped)."""
    suite = load_suite(EXAMPLES / "retail")
    suite.config = suite.config.model_copy(update={"canary": None})
    policy = InvalidRunPolicy(max_retries=retries, max_invalid_rate=0.2)
    spec = load_system(EXAMPLES / "systems" / f"{system}.yaml")
    spec = spec.model_copy(update={"invalid_run_policy": policy})
    config = BatchConfig(attempts=attempts, seed=5, tasks=TASKS)
    with RunStore(store) as runs:
        runner = BatchRunner(suite, spec, runs, make_env=FaultyEnvironments(rate, seed=3))
        if stop_after:
            stored = [0]

            def stop(_: Any) -> None:
                stored[0] += 1
                if stored[0] == stop_after:
                    runner.interrupt.signum = signal.SIGINT

            runner.on_run = stop
            with pytest.raises(Interrupted):
                asyncio.run(runner.start(config))
            again = BatchRunner(suite, spec, runs, make_env=FaultyEnvironments(rate, seed=4))
            asyncio.run(again.resume(str(runner.batch_id), preflight=False))
        else:
            asyncio.run(runner.start(config))
    assert runner.batch_id is not None
    return runner.batch_id


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str, str]:
    """A store with three batches: careful, resumed, with reruns (a); careful with no fault
    (b); careful, one attempt, half the environments broken and no reruns (c)."""
    store = tmp_path_factory.mktemp("real") / "runs.db"
    a = run_batch(store, system="careful", attempts=3, rate=0.35, retries=1, stop_after=8)
    b = run_batch(store, system="careful", attempts=2, rate=0.0, retries=1)
    c = run_batch(store, system="careful", attempts=1, rate=0.5, retries=0)
    return store, a, b, c


def cli_json(*args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = cli(*args, "--json")
    return code, json.loads(out), err


def test_a_resumed_batch_with_reruns_matches_the_reference(
    stored: tuple[Path, str, str, str],
) -> None:
    store, a, b, c = stored
    for batch in (a, b, c):
        tries = raw_tries(store, batch)
        code, rep, err = cli_json("report", batch, "--store", str(store))
        assert code == 0, err
        check_report(rep, tries, 0.2)
    tries = raw_tries(store, a)
    assert any(t["retry"] for t in tries)  # reruns happened
    code, rep, _ = cli_json("report", a, "--store", str(store))
    assert rep["provenance"]["resumes"] == 1
    sessions = rep["provenance"]["sessions"]
    assert sum(s["tries"] for s in sessions) == len(tries)
    assert sum(s["reruns"] for s in sessions) == sum(t["retry"] > 0 for t in tries)
    assert rep["missing_attempts"] is None  # the resume completed it


def check_paired(cmp: dict[str, Any], a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    ca, cb = cells(a), cells(b)
    both = sorted(set(ca) & set(cb))
    valid = [t for t in both if n_of(ca[t], "valid") and n_of(cb[t], "valid")]
    assert cmp["mode"] == "paired" and cmp["paired_tasks"] == valid
    for view in ("valid", "strict"):
        tasks = [t for t in both if n_of(ca[t], view) and n_of(cb[t], view)]
        common = min(min(n_of(ca[t], view), n_of(cb[t], view)) for t in tasks)
        assert cmp["common_k"][view] == common
        metrics = cmp["metrics"][view]
        for k in range(1, common + 1):
            for name, f in ((f"pass_at_{k}", ref_at), (f"pass_hat_{k}", ref_hat)):
                va = [f(n_of(ca[t], view), ca[t][2], k) for t in tasks]
                vb = [f(n_of(cb[t], view), cb[t][2], k) for t in tasks]
                got = metrics[name]
                ones = [1.0] * len(tasks)
                assert got["a"]["estimate"] == pytest.approx(float(weighted(va, ones)), abs=1e-12)
                assert got["b"]["estimate"] == pytest.approx(float(weighted(vb, ones)), abs=1e-12)
                d = weighted(vb, ones) - weighted(va, ones)
                assert got["difference"]["estimate"] == pytest.approx(float(d), abs=1e-12)
                assert got["difference"]["n_tasks"] == len(tasks)
                moved = [float(y - x) for x, y in zip(va, vb, strict=True)]
                if len(set(moved)) > 1:
                    se = cr1(moved, ones)
                    assert got["difference"]["se"] == pytest.approx(se, rel=1e-9)
                    t_test = 2 * scipy_stats.t.sf(abs(float(d)) / se, len(tasks) - 1)
                    assert got["p_value"] >= t_test * (1 - 1e-9)  # at least the t test's
    for row in cmp["per_task"]:
        t = row["task_id"]
        cell_a, cell_b = ca[t], cb[t]
        assert (row["a_c"], row["a_n"]) == (cell_a[2], n_of(cell_a, "valid"))
        assert (row["b_c"], row["b_n"]) == (cell_b[2], n_of(cell_b, "valid"))
        table = [[row["a_c"], row["a_n"] - row["a_c"]], [row["b_c"], row["b_n"] - row["b_c"]]]
        assert row["p_value"] == pytest.approx(scipy_stats.fisher_exact(table).pvalue, abs=1e-9)


def test_comparisons_of_real_batches_match_the_reference(
    stored: tuple[Path, str, str, str],
) -> None:
    """Unequal attempts (3 against 2), reruns on one side only, a resumed side."""
    store, a, b, _ = stored
    for x, y in ((a, b), (b, a)):
        code, cmp, err = cli_json("compare", x, y, "--store", str(store))
        assert code == 0, err
        check_paired(cmp, raw_tries(store, x), raw_tries(store, y))


# --- compare states each side's invalid tries ----------------------------------------------


def flag_of(tries: list[dict[str, Any]], max_rate: float) -> bool:
    return sum(invalid(t["terminal_reason"]) for t in tries) / len(tries) > max_rate


def test_compare_names_a_side_whose_invalid_tries_exceed_its_policy(
    stored: tuple[Path, str, str, str], tmp_path: Path
) -> None:
    """c lost half its environments with no rerun: its report says FLAGGED, and compare
    printed its differences without a word of it."""
    store, _, b, c = stored
    tries_c = raw_tries(store, c)
    assert flag_of(tries_c, 0.2) and not flag_of(raw_tries(store, b), 0.2)
    code, rep_c, _ = cli_json("report", c, "--store", str(store))
    code, cmp, err = cli_json("compare", b, c, "--store", str(store))
    assert code == 0, err
    assert cmp["tries_b"] == rep_c["tries"] and cmp["invalid_rate_flagged_b"] is True
    assert cmp["invalid_rate_flagged_a"] is False
    bad = sum(invalid(t["terminal_reason"]) for t in tries_c)
    flagged = [n for n in cmp["notes"] if n.startswith(f"b ({c}) FLAGGED")]
    assert len(flagged) == 1 and f"({bad} of {len(tries_c)}: " in flagged[0]
    assert not any(n.startswith(f"a ({b}) FLAGGED") for n in cmp["notes"])
    final = last_tries(tries_c)
    lost = sum(invalid(t["terminal_reason"]) for t in final.values())
    said = " ".join(cmp["notes"])
    assert f"b ({c}): {len(final) - lost} valid and {lost} invalid attempt" in said
    # the text and the HTML page say it too
    page = tmp_path / "c.html"
    code, text, err = cli("compare", b, c, "--store", str(store), "--html", str(page))
    assert code == 0, err
    assert f"b ({c}) FLAGGED: invalid tries exceed" in " ".join(text.split())
    assert f"b ({c}) FLAGGED: invalid tries exceed" in page.read_text(encoding="utf-8")


def test_a_resumed_side_with_reruns_states_its_tries_and_is_flagged_only_past_its_rate(
    stored: tuple[Path, str, str, str],
) -> None:
    store, a, b, _ = stored
    tries_a = raw_tries(store, a)
    code, cmp, err = cli_json("compare", b, a, "--store", str(store))
    assert code == 0, err
    assert cmp["invalid_rate_flagged_b"] is flag_of(tries_a, 0.2)
    assert cmp["tries_b"]["tries"] == len(tries_a) > len(last_tries(tries_a))
    said = " ".join(cmp["notes"])
    assert f"{len(tries_a)} tries in all" in said
    assert ("FLAGGED" in said) is flag_of(tries_a, 0.2)


def test_batches_without_an_invalid_try_get_no_invalid_note(
    stored: tuple[Path, str, str, str],
) -> None:
    """False-positive guard: b has no invalid try; comparing it with itself adds no note."""
    store, _, b, _ = stored
    code, cmp, err = cli_json("compare", b, b, "--store", str(store))
    assert code == 0, err
    assert cmp["tries_a"]["invalid_tries"] == 0 and not cmp["invalid_rate_flagged_a"]
    assert not any("invalid" in note or "FLAGGED" in note for note in cmp["notes"])


ENDS = ("success", "agent_failure/incorrect_state", "harness_compatibility_failure",
        "environment_failure/setup", "grader_failure")  # fmt: skip


@st.composite
def imported_tries(draw: st.DrawFn) -> list[tuple[str, int, int, str]]:
    """Rows (task, attempt, retry, end) of 5-7 tasks, 1-3 attempts each, an invalid try
    followed by up to two reruns."""
    rows = []
    for task in range(draw(st.integers(5, 7))):
        for attempt in range(draw(st.integers(1, 3))):
            for retry in range(3):
                end = draw(st.sampled_from(ENDS))
                rows.append((f"t{task}", attempt, retry, end))
                if not invalid(end) or not draw(st.booleans()):
                    break
    return rows


def as_csv(rows: list[tuple[str, int, int, str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["task_id", "attempt", "retry", "success", "terminal_reason"])
    for task, attempt, retry, end in rows:
        writer.writerow([task, attempt, retry, str(end == "success").lower(), end])
    return out.getvalue()


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(a=imported_tries(), b=imported_tries())
def test_compare_flags_each_side_as_its_tries_say(
    tmp_path_factory: pytest.TempPathFactory,
    a: list[tuple[str, int, int, str]],
    b: list[tuple[str, int, int, str]],
) -> None:
    """Imports declare no policy: the default 0.1 applies, over every try (reruns included),
    never over the counted attempts alone."""
    tmp = tmp_path_factory.mktemp("h")
    ids = import_text(tmp, as_csv(a), "a"), import_text(tmp, as_csv(b), "b")
    code, cmp, err = cli_json("compare", *ids, "--store", str(tmp / "s.db"))
    assert code in (0, 3), err  # 3: a side whose every attempt is invalid
    for side, rows, batch in (("a", a, ids[0]), ("b", b, ids[1])):
        bad = sum(invalid(end) for *_, end in rows)
        flagged = bad / len(rows) > 0.1
        assert cmp[f"tries_{side}"]["tries"] == len(rows)
        assert cmp[f"tries_{side}"]["invalid_tries"] == bad
        assert cmp[f"invalid_rate_flagged_{side}"] is flagged
        assert any(n.startswith(f"{side} ({batch}) FLAGGED") for n in cmp["notes"]) is flagged
        # the denominators note is over the tasks compared (forty-fifth round): the shared
        # ones when paired, the side's own when unpaired
        compared = {*cmp["paired_tasks"], *cmp["excluded_tasks"]}
        if cmp["mode"] == "unpaired":
            compared |= set(cmp[f"only_in_{side}"])
        bad_compared = sum(invalid(end) for task, *_, end in rows if task in compared)
        assert any(n.startswith(f"{side} ({batch}): ") and "tries in all" in n
                   for n in cmp["notes"]) is bool(bad_compared)  # fmt: skip


# --- edge cases of the library's estimates -------------------------------------------------


def outcomes(cells_: dict[str, tuple[int, int, int]]) -> list[Outcome]:
    """Per task (attempts, invalid, successes): invalid attempts first, then successes."""
    out = []
    for task, (n, bad, wins) in cells_.items():
        for j in range(n):
            end = "environment_failure" if j < bad else "agent_failure"
            if j >= bad and j - bad < wins:
                end = "success"
            out.append(Outcome(task, j, end == "success", valid=j >= bad, terminal_reason=end))
    return out


@pytest.mark.parametrize(
    "cells_",
    [
        {"t": (1, 0, 1)},  # one task, one attempt
        {f"t{i}": (3, 0, 3) for i in range(10)},  # every attempt passes
        {f"t{i}": (3, 0, 0) for i in range(10)},  # none passes
        {"lone": (2, 2, 0), **{f"t{i}": (4, i % 2, i % 4) for i in range(6)}},  # one all invalid
        {"short": (1, 0, 1), **{f"t{i}": (5, 0, i) for i in range(6)}},  # unequal attempts
    ],
)
def test_summaries_at_the_edges_match_the_reference(
    cells_: dict[str, tuple[int, int, int]],
) -> None:
    found = summarize(outcomes(cells_), n_boot=0)
    for view in ("valid", "strict"):
        got = found.views[view].to_dict()
        used = {t: c for t, c in cells_.items() if n_of(c, view)}
        kmax = min(n_of(c, view) for c in used.values())
        assert got["kmax"] == kmax and got["n_tasks"] == len(used)
        ns = [(n_of(c, view), c[2]) for c in used.values()]
        ones = [1.0] * len(ns)
        check_level(got["success_rate"], [Fraction(c, n) for n, c in ns], ones, view)
        for k in range(1, kmax + 1):
            check_level(got["pass_at_k"][k], [ref_at(n, c, k) for n, c in ns], ones, f"@{k}")
            check_level(got["pass_hat_k"][k], [ref_hat(n, c, k) for n, c in ns], ones, f"^{k}")
        assert set(got["pass_at_k"]) == set(range(1, kmax + 1))  # never past the fewest n
    # k above a task's counted attempts is refused, never extrapolated
    counts = task_counts(outcomes(cells_))
    with pytest.raises(ValueError, match="outside 1"):
        suite_pass_hat_k(counts, max(c.n for c in counts) + 1)


def test_a_comparison_of_disjoint_task_sets_pairs_nothing_and_says_so() -> None:
    a = outcomes({f"a{i}": (3, 0, i % 4) for i in range(6)})
    b = outcomes({f"b{i}": (2, 0, i % 3) for i in range(6)})
    found = compare(a, b, n_boot=0)
    assert found.mode == "unpaired" and found.paired_tasks == ()
    assert found.only_in_a == tuple(f"a{i}" for i in range(6))
    rate = found.find("success_rate")
    want = weighted([Fraction(i % 3, 2) for i in range(6)], [1.0] * 6) - weighted(
        [Fraction(i % 4, 3) for i in range(6)], [1.0] * 6
    )
    assert rate.difference.estimate == pytest.approx(float(want), abs=1e-12)
    assert rate.difference.n_tasks == 12 and rate.difference.attempts == 18 + 12
