"""Thirty-fourth round, tidiness: what a command prints when it has no figure to print.

- ``agreement --json`` that exited 3 (a side with no estimate, or no pair both sides judged)
  printed nothing on stdout, where ``report --json`` and ``compare --json`` print their JSON
  with why there is no estimate: it prints its counts (``judged``, ``invalid_both``, ...),
  ``share`` null and ``no_estimate`` (null when the agreement stands), and still exits 3.
- With one judged pair the graders disagree on, ``agreement`` printed Cohen's kappa 0.000 and
  Fleiss' kappa -1.000: a kappa or alpha over fewer than 5 units (the number the interval rule
  asks of tasks) is n/a, with the reason (JSON: null and ``note``); ``labels agreement`` too.
  Every figure at and above the threshold is recomputed here by hand.
- A Harbor trial whose ``result.json`` is a link to nowhere was "a trial folder without
  result.json (unfinished)" and left out of every count; a job whose ``result.json`` is one was
  "a folder of Harbor jobs"; a job ``config.json``, Terminal-Bench's ``run_metadata.json`` or a
  SWE-bench instance's ``report.json`` that is one was read as absent (no plan checked; the
  instance "crashed"); τ²'s ``simulations`` folder that is one was "no file for" each
  simulation. Each is refused, naming the link and its target.
- ``plan`` of a finished pilot with no valid attempt exited 2 ("the pilot has 0 tasks with a
  valid attempt"), as for a pilot too small: it has no estimate, exit 3 as ``report``.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from groundstate.stats.intervals import MIN_TASKS
from groundstate.store import RunLabels, RunStore

from .conftest import BANK
from .test_diagnosis import TAXONOMY
from .test_imports_formats import Store, write_json
from .test_imports_round14 import tb_run, tb_trial
from .test_imports_round15 import instance, logs
from .test_imports_round29 import _harbor, _trials
from .test_imports_tau2_versions import SIMULATIONS, dir_format
from .test_stats_round24 import Row, cli, imported
from .test_tidy_round29 import BROKEN, GOOD

ENV = "environment_failure/x"


def _store(tmp_path: Path) -> list[str]:
    return ["--store", str(tmp_path / "s.db")]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _refused(store: Store, path: Path) -> str:
    """``Store.refused`` for a file beside the one given (the error names that one)."""
    before = store.batches()
    code, out, err = cli("import-results", str(path), "--name", "x", "--store", str(store.path))
    assert code == 2 and out == "", (out, err)
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert store.batches() == before
    return err


# --- 1. agreement --json with no estimate prints its JSON ---------------------------------------


def test_agreement_json_of_batches_without_a_valid_attempt_says_why(tmp_path: Path) -> None:
    """Fails on the old code: exit 3 with nothing on stdout."""
    a, b = imported(tmp_path, BROKEN, "a"), imported(tmp_path, BROKEN, "b")
    code, out, err = cli("agreement", a, b, "--json", *_store(tmp_path))
    assert code == 3, err
    found = json.loads(out)
    assert (found["paired"], found["judged"], found["invalid_both"]) == (10, 0, 10)
    assert (found["invalid_a_only"], found["invalid_b_only"]) == (0, 0)
    assert found["share"] is None and found["confusion"] == {} and found["disagreements"] == []
    assert found["agreement"]["units"] == 0 and found["agreement"]["cohen_kappa"] is None
    why = "every attempt is invalid (10 attempts)"
    assert found["no_estimate"] == f"side A (batch {a}): {why}; side B (batch {b}): {why}"
    # the stderr lines are those without --json
    assert f"error: {why}: side A (batch {a}) has no estimate (exit 3)" in err
    assert f"error: {why}: side B (batch {b}) has no estimate (exit 3)" in err


@pytest.mark.parametrize("broken_side", ["A", "B"])
def test_agreement_json_with_one_side_without_an_estimate_counts_the_pairs(
    tmp_path: Path, broken_side: str
) -> None:
    """Fails on the old code: nothing on stdout."""
    good, broken = imported(tmp_path, GOOD, "good"), imported(tmp_path, BROKEN, "broken")
    pair = (broken, good) if broken_side == "A" else (good, broken)
    code, out, err = cli("agreement", *pair, "--json", *_store(tmp_path))
    assert code == 3, err
    found = json.loads(out)
    assert (found["paired"], found["judged"], found["invalid_both"]) == (10, 0, 0)
    one_sided = (found["invalid_a_only"], found["invalid_b_only"])
    assert one_sided == ((10, 0) if broken_side == "A" else (0, 10))
    assert len(found["one_sided"]) == 10 and found["share"] is None
    assert found["no_estimate"] == (
        f"side {broken_side} (batch {broken}): every attempt is invalid (10 attempts)"
    )


def test_agreement_json_with_no_pair_judged_by_both_says_why(tmp_path: Path) -> None:
    """Each side has an estimate, but A's valid attempts are B's invalid ones and the other
    way round. Fails on the old code: nothing on stdout."""
    a_rows = [Row(t, i, ENV if i else "success") for t in "abcde" for i in range(2)]
    b_rows = [Row(t, i, "success" if i else ENV) for t in "abcde" for i in range(2)]
    a, b = imported(tmp_path, a_rows, "a"), imported(tmp_path, b_rows, "b")
    code, out, err = cli("agreement", a, b, "--json", *_store(tmp_path))
    assert code == 3, err
    found = json.loads(out)
    assert (found["paired"], found["judged"], found["invalid_both"]) == (10, 0, 0)
    assert (found["invalid_a_only"], found["invalid_b_only"]) == (5, 5)
    why = (
        "no paired attempt was judged by both sides (0 invalid on both sides, 10 on one side "
        "(A 5, B 5))"
    )
    named = f"the agreement of A and B (batch {a} and batch {b})"
    assert found["no_estimate"] == f"{named}: {why}"
    assert err == f"error: {why}: {named} has no estimate (exit 3)\n"


def test_agreement_regrade_json_of_a_batch_without_an_estimate(tmp_path: Path) -> None:
    """--regrade of a batch with no valid attempt replays nothing: every attempt is A's only.
    Fails on the old code: nothing on stdout."""
    a = imported(tmp_path, BROKEN, "a")
    code, out, err = cli("agreement", a, "--regrade", str(BANK), "--json", *_store(tmp_path))
    assert code == 3, err
    found = json.loads(out)
    assert (found["paired"], found["only_in_a"], found["only_in_b"], found["judged"]) == (
        0,
        10,
        0,
        0,
    )
    why = "every attempt is invalid (10 attempts)"
    assert found["no_estimate"] == f"side A (batch {a}): {why}"
    assert err == f"error: {why}: side A (batch {a}) has no estimate (exit 3)\n"


def test_a_standing_agreement_says_no_estimate_null(tmp_path: Path) -> None:
    """Fails on the old code: no ``no_estimate`` field (report --json has it, null)."""
    mixed = [*BROKEN[:-1], Row("e", 1, "success")]
    a, b = imported(tmp_path, GOOD, "a"), imported(tmp_path, mixed, "b")
    code, out, err = cli("agreement", a, b, "--json", *_store(tmp_path))
    assert code == 0, err
    found = json.loads(out)
    assert found["no_estimate"] is None and found["judged"] == 1


@pytest.mark.parametrize("command", ["report", "compare", "agreement"])
def test_every_json_without_an_estimate_is_printed_and_exits_3(
    tmp_path: Path, command: str
) -> None:
    """The three commands the exit-status table names with a JSON: each prints it, says why,
    and exits 3 (agreement printed nothing before)."""
    good, broken = imported(tmp_path, GOOD, "good"), imported(tmp_path, BROKEN, "broken")
    ids = [broken] if command == "report" else [good, broken]
    code, out, err = cli(command, *ids, "--json", *_store(tmp_path))
    assert code == 3, err
    found = json.loads(out)
    field = "no_estimate_b" if command == "compare" else "no_estimate"
    assert "every attempt is invalid (10 attempts)" in found[field]
    assert "has no estimate (exit 3)" in err


# --- 2. kappa and alpha below 5 judged pairs: n/a ---------------------------------------------

A_VERDICTS = [True, False, True, True, False, True, False]
B_VERDICTS = [False, False, True, False, False, True, True]


def _by_hand(pairs: list[tuple[bool, bool]]) -> dict[str, Fraction | None]:
    """Cohen's kappa, Fleiss' kappa (two raters: Scott's pi) and Krippendorff's nominal alpha
    (two raters, nothing missing) from their textbook formulas, in exact fractions."""
    n = len(pairs)
    agree = Fraction(sum(x == y for x, y in pairs), n)
    a, b = Counter(x for x, _ in pairs), Counter(y for _, y in pairs)
    values = a.keys() | b.keys()
    cohen_e = sum(Fraction(a[v], n) * Fraction(b[v], n) for v in values)
    pooled = {v: Fraction(a[v] + b[v], 2 * n) for v in values}
    scott_e = sum(p * p for p in pooled.values())
    big_n = 2 * n
    totals = {v: a[v] + b[v] for v in values}
    disagreeing = 2 * sum(x != y for x, y in pairs)  # o_ck + o_kc for each disagreeing unit
    expected = big_n * big_n - sum(t * t for t in totals.values())

    def kappa(chance: Fraction) -> Fraction | None:
        return None if chance == 1 else (agree - chance) / (1 - chance)

    alpha = None if expected == 0 else 1 - Fraction((big_n - 1) * disagreeing, expected)
    return {"cohen_kappa": kappa(cohen_e), "fleiss_kappa": kappa(scott_e),
            "krippendorff_alpha": alpha}  # fmt: skip


def _judged(tmp_path: Path, n: int) -> tuple[str, str]:
    """Two batches with *n* judged pairs (one attempt of each of n tasks), the verdicts of
    A_VERDICTS and B_VERDICTS, and a task invalid on both sides (not judged)."""

    def rows(verdicts: list[bool]) -> list[Row]:
        found = [
            Row(f"t{i}", 0, "success" if v else "agent_failure/x")
            for i, v in enumerate(verdicts[:n])
        ]
        return [*found, Row("z", 0, ENV)]

    return imported(tmp_path, rows(A_VERDICTS), "a"), imported(tmp_path, rows(B_VERDICTS), "b")


def test_the_minimum_is_the_interval_rules() -> None:
    from groundstate.agreement import MIN_UNITS

    assert MIN_UNITS == MIN_TASKS == 5


def test_one_judged_pair_prints_no_kappa(tmp_path: Path) -> None:
    """Fails on the old code: "0.000 (1)" and "-1.000 (1)" (Cohen's and Fleiss' kappa of one
    pair the graders disagree on)."""
    a, b = _judged(tmp_path, 1)
    code, out, err = cli("agreement", a, b, *_store(tmp_path))
    assert code == 0, err
    assert "-1.000" not in out and "0.000 (1)" not in out
    assert out.count("│ n/a ") == 3, out  # Cohen, Fleiss, Krippendorff
    assert (
        "n/a: Cohen's kappa (1 unit), Fleiss' kappa (1 unit), Krippendorff's alpha (1 unit): "
        "each needs at least 5 units" in out
    )
    assert "share agreeing 0.000 over 1 judged pair" in out  # the share stands, no interval


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_below_five_judged_pairs_the_json_has_null_and_a_note(tmp_path: Path, n: int) -> None:
    """Fails on the old code: a number, and no ``note``."""
    a, b = _judged(tmp_path, n)
    code, out, err = cli("agreement", a, b, "--json", *_store(tmp_path))
    assert code == 0, err
    found = json.loads(out)["agreement"]
    assert found["cohen_kappa"] is None and found["fleiss_kappa"] is None
    assert found["krippendorff_alpha"] is None
    assert found["note"] is not None and f"({n} unit{'s' * (n != 1)})" in found["note"]
    assert "at least 5 units" in found["note"]
    pairs = list(zip(A_VERDICTS[:n], B_VERDICTS[:n], strict=True))
    assert found["percent_agreement"] == pytest.approx(sum(x == y for x, y in pairs) / n)


@pytest.mark.parametrize("n", [5, 6, 7])
def test_from_five_judged_pairs_every_figure_is_the_textbooks(tmp_path: Path, n: int) -> None:
    a, b = _judged(tmp_path, n)
    code, out, err = cli("agreement", a, b, "--json", *_store(tmp_path))
    assert code == 0, err
    found = json.loads(out)["agreement"]
    assert found.get("note") is None and found["cohen_units"] == n
    want = _by_hand(list(zip(A_VERDICTS[:n], B_VERDICTS[:n], strict=True)))
    for field, value in want.items():
        assert value is not None
        assert found[field] == pytest.approx(float(value), abs=1e-12), field


def test_an_undefined_kappa_stays_undefined_without_a_note(tmp_path: Path) -> None:
    """Two pairs both graders call success: every kappa undefined (chance 1), not withheld."""
    rows = [Row("t0", 0, "success"), Row("t1", 0, "success")]
    a, b = imported(tmp_path, rows, "a"), imported(tmp_path, rows, "b")
    code, out, _ = cli("agreement", a, b, "--json", *_store(tmp_path))
    found = json.loads(out)["agreement"]
    assert code == 0 and found.get("note") is None and found["cohen_kappa"] is None


def test_reportable_names_only_the_statistics_it_withholds() -> None:
    """Three raters, missing ratings: Fleiss' kappa over 3 complete units is withheld, alpha
    over 6 pairable units stands; Cohen's (two raters only) was None and is not named."""
    from groundstate.agreement import agreement, reportable

    rows = [["x", "x", "y"], ["y", "y", "y"], ["x", "y", "x"],
            ["x", None, "x"], ["y", "x", None], [None, "y", "y"]]  # fmt: skip
    raw = agreement(rows)
    found = reportable(raw)
    assert found.fleiss_kappa is None and found.krippendorff_alpha == raw.krippendorff_alpha
    assert found.note == "n/a: Fleiss' kappa (3 units): needs at least 5 units"
    assert reportable(agreement(rows * 2)).note is None


def test_labels_agreement_over_three_runs_has_no_kappa(tmp_path: Path) -> None:
    """Fails on the old code: per-label kappas over three runs. Pooled over the labels, the
    three runs give 3 x labels decisions: a figure, recomputed by hand."""
    batch = imported(tmp_path, [Row(t, 0, "agent_failure/x") for t in "abc"], "b")
    first, second = TAXONOMY.ids[:2]
    given = {"ann": [[first], [second], [first]], "bob": [[first], [first], [second]]}
    with RunStore(tmp_path / "s.db") as store:
        full = store.batch(batch).batch_id
        runs = sorted(store.runs(full), key=lambda r: r.task_id)
        store.add_labels([
            RunLabels(batch_id=full, run_id=run.run_id, annotator=who, adjudicated=False,
                      taxonomy=TAXONOMY.ref, labels=labels[i], created_at="2026-01-01T00:00:00Z")
            for who, labels in given.items() for i, run in enumerate(runs)
        ])  # fmt: skip
    code, out, err = cli("labels", "agreement", batch, "--json", *_store(tmp_path))
    assert code == 0, err
    data = json.loads(out)
    label = next(x["agreement"] for x in data["per_label"] if x["label"] == first)
    assert label["cohen_units"] == 3 and label["cohen_kappa"] is None
    assert label["note"] is not None and "(3 units)" in label["note"]
    assert data["exact_set"]["cohen_kappa"] is None and "(3 units)" in data["exact_set"]["note"]
    overall = data["overall"]
    assert overall["units"] == 3 * len(TAXONOMY.ids) and overall["note"] is None
    pairs = [
        (x in a, x in b)
        for x in TAXONOMY.ids
        for a, b in zip(given["ann"], given["bob"], strict=True)
    ]
    want = _by_hand(pairs)
    assert overall["cohen_kappa"] == pytest.approx(float(want["cohen_kappa"] or 0), abs=1e-12)
    code, text, _ = cli("labels", "agreement", batch, *_store(tmp_path))
    assert code == 0 and f"{first}: n/a: Cohen's kappa (3 units)" in text


# --- 3. links to nowhere in a results folder ---------------------------------------------------


def test_a_harbor_trial_result_that_links_to_nowhere_is_refused(
    store: Store, tmp_path: Path
) -> None:
    """Fails on the old code: imported without that trial ("1 trial folder without
    result.json ... unfinished")."""
    folder = _harbor(tmp_path / "job", _trials({"a": 2, "b": 2}), 2)
    trial = sorted(folder.glob("*/result.json"))[0]
    trial.unlink()
    trial.symlink_to("/gone/result.json")
    err = store.refused(folder)
    assert err == f"error: {trial}: a link to /gone/result.json, which does not exist\n"


def test_a_harbor_trial_folder_that_links_to_nowhere_is_refused(
    store: Store, tmp_path: Path
) -> None:
    """Fails on the old code: imported without that trial."""
    folder = _harbor(tmp_path / "job", _trials({"a": 2, "b": 2}), 2)
    trial = sorted(p for p in folder.iterdir() if p.is_dir())[0]
    shutil.rmtree(trial)
    trial.symlink_to("/gone/trial")
    err = store.refused(folder)
    assert f"{trial}: a link to /gone/trial, which does not exist (a trial's folder" in err


def test_other_links_to_nowhere_in_a_harbor_job_are_no_trial(store: Store, tmp_path: Path) -> None:
    """The control: a job.log linked to nowhere is no trial's folder; the job imports."""
    folder = _harbor(tmp_path / "job", _trials({"a": 2, "b": 2}), 2)
    (folder / "job.log").symlink_to("/gone/job.log")
    store.imported(folder)


def test_a_harbor_trial_result_that_links_to_a_file_is_read(store: Store, tmp_path: Path) -> None:
    folder = _harbor(tmp_path / "job", _trials({"a": 2, "b": 2}), 2)
    trial = sorted(folder.glob("*/result.json"))[0]
    kept = tmp_path / "kept.json"
    trial.rename(kept)
    trial.symlink_to(kept)
    code, out, err = cli("import-results", str(folder), "--name", "x", *_store(tmp_path))
    assert code == 0 and "unfinished" not in err and "imported 4 attempts" in out, err


@pytest.mark.parametrize("given", [[], ["--format", "harbor"]])
def test_a_harbor_job_result_that_links_to_nowhere_is_refused(
    store: Store, tmp_path: Path, given: list[str]
) -> None:
    """Fails on the old code: "a folder of Harbor jobs: give one job's folder (<a trial>)", or
    "a folder without result.json"."""
    folder = _harbor(tmp_path / "job", _trials({"a": 2}), 2)
    (folder / "result.json").unlink()
    (folder / "result.json").symlink_to("/gone/job.json")
    err = store.refused(folder, *given)
    assert (
        err == f"error: {folder / 'result.json'}: a link to /gone/job.json, which does not exist\n"
    )


def test_a_harbor_job_config_that_links_to_nowhere_is_refused(store: Store, tmp_path: Path) -> None:
    """Fails on the old code: imported without its n_attempts checked."""
    folder = _harbor(tmp_path / "job", _trials({"a": 2}), 2)
    (folder / "config.json").unlink()
    (folder / "config.json").symlink_to("/gone/config.json")
    err = store.refused(folder)
    assert (
        err
        == f"error: {folder / 'config.json'}: a link to /gone/config.json, which does not exist\n"
    )


def test_a_tau2_simulations_folder_that_links_to_nowhere_is_refused(
    store: Store, tmp_path: Path
) -> None:
    """Fails on the old code: "does not match simulation_index: no file for a1, a2"."""
    path = dir_format(tmp_path, SIMULATIONS[:2])
    simulations = tmp_path / "run" / "simulations"
    shutil.rmtree(simulations)
    simulations.symlink_to("/gone/simulations")
    err = _refused(store, path)
    assert err == f"error: {simulations}: a link to /gone/simulations, which does not exist\n"


def test_a_tau2_simulation_that_links_to_nowhere_is_refused(store: Store, tmp_path: Path) -> None:
    """The round-32 check, still made."""
    path = dir_format(tmp_path, SIMULATIONS[:2])
    simulation = tmp_path / "run" / "simulations" / f"{SIMULATIONS[1]['id']}.json"
    simulation.unlink()
    simulation.symlink_to("/gone/simulation.json")
    assert "a link to /gone/simulation.json, which does not exist" in _refused(store, path)


def test_terminal_bench_run_metadata_that_links_to_nowhere_is_refused(
    store: Store, tmp_path: Path
) -> None:
    """Fails on the old code: imported, the run's plan unchecked."""
    run = tmp_path / "run"
    run.mkdir()
    write_json(
        run / "results.json", tb_run([tb_trial("hello", 1, True), tb_trial("hello", 2, False)])
    )
    (run / "run_metadata.json").symlink_to("/gone/run_metadata.json")
    err = _refused(store, run / "results.json")
    link = run / "run_metadata.json"
    assert err == f"error: {link}: a link to /gone/run_metadata.json, which does not exist\n"


def test_a_swe_bench_report_that_links_to_nowhere_is_refused_not_crashed(
    store: Store, tmp_path: Path
) -> None:
    """Fails on the old code: the instance imported as an evaluation that raised
    (``agent_failure/crashed``), its report lost."""
    model = logs(tmp_path, a=instance(True), b=instance(False))
    report = model / "b" / "report.json"
    report.unlink()
    report.symlink_to("/gone/report.json")
    err = store.refused(model)
    assert err == f"error: {report}: a link to /gone/report.json, which does not exist\n"


def test_a_swe_bench_instance_with_only_a_lost_report_is_not_skipped(
    store: Store, tmp_path: Path
) -> None:
    """Fails on the old code: the instance folder (no log, a report linked to nowhere) was
    no instance at all, left out of the denominator."""
    model = logs(tmp_path, a=instance(True), b=instance(False))
    (model / "b" / "run_instance.log").unlink()
    report = model / "b" / "report.json"
    report.unlink()
    report.symlink_to("/gone/report.json")
    assert "a link to /gone/report.json, which does not exist" in store.refused(model)


# --- 4. plan of a pilot with no estimate ---------------------------------------------------------


def test_plan_of_a_pilot_without_a_valid_attempt_exits_3(tmp_path: Path) -> None:
    """Fails on the old code: exit 2, "the pilot has 0 tasks with a valid attempt"."""
    good, broken = imported(tmp_path, GOOD, "good"), imported(tmp_path, BROKEN, "broken")
    why = "every attempt is invalid (10 attempts)"
    code, out, err = cli("plan", broken, *_store(tmp_path))
    assert (code, out) == (3, ""), err
    assert err == f"error: {why}: the pilot (batch {broken}) has no estimate (exit 3)\n"
    code, out, err = cli("plan", good, broken, "--json", *_store(tmp_path))
    assert (code, out) == (3, ""), err
    assert err == f"error: {why}: pilot B (batch {broken}) has no estimate (exit 3)\n"


def test_plan_of_a_pilot_with_an_estimate_still_plans(tmp_path: Path) -> None:
    """The control: a mixed pilot (valid attempts on 5 tasks) is planned, exit 0."""
    rows = [Row(t, i, "success" if (i + ord(t)) % 3 else "agent_failure/x")
            for t in "abcdef" for i in range(3)]  # fmt: skip
    code, out, err = cli("plan", imported(tmp_path, rows, "p"), "--json", *_store(tmp_path))
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    assert data
