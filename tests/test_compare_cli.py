"""`compare` and `report` through the CLI: pairing, fallbacks, refusals, k limits, task tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundstate.analysis import batch_mismatches, compare_batches
from groundstate.cli import main
from groundstate.records import AgentRun
from groundstate.stats import RevisionMismatch
from groundstate.store import RunStore


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _import(tmp_path: Path, name: str, results: dict[str, str], revision: int = 0) -> str:
    """Import rows spelled S (success), F (failure), E (environment failure) per task."""
    reasons = {
        "S": ("1", "success"),
        "F": ("0", "agent_failure"),
        "E": ("0", "environment_failure"),
    }
    lines = ["task_id,attempt,success,terminal_reason,task_revision"]
    for task, marks in results.items():
        for attempt, mark in enumerate(marks, start=1):
            success, reason = reasons[mark]
            lines.append(f"{task},{attempt},{success},{reason},{revision}")
    path = tmp_path / f"{name}.csv"
    path.write_text("\n".join(lines) + "\n")
    code, out, err = _invoke(
        "import-results", str(path), "--name", name, "--store", _store(tmp_path)
    )
    assert code == 0, err
    return out.strip().splitlines()[-1].removeprefix("batch ")


def _store(tmp_path: Path) -> str:
    return str(tmp_path / "runs.db")


def _json(tmp_path: Path, *args: str) -> dict[str, object]:
    code, out, err = _invoke(*args, "--json", "--store", _store(tmp_path))
    assert code == 0, err
    data: dict[str, object] = json.loads(out)
    return data


SIX = {f"t{i}": marks for i, marks in enumerate(["SSFF", "SFFF", "SSSS", "FFFF", "SSSF", "SFSF"])}


def test_compare_json_carries_every_metric_both_views_and_the_methods(tmp_path: Path) -> None:
    better = {task: "S" + marks[1:] for task, marks in SIX.items()}
    a, b = _import(tmp_path, "a", SIX), _import(tmp_path, "b", better)
    data = _json(tmp_path, "compare", a, b, "--seed", "5")
    metrics = data["metrics"]
    assert isinstance(metrics, dict)
    assert set(metrics["valid"]) == {"success_rate"} | {
        f"pass_{kind}_{k}" for kind in ("at", "hat") for k in range(1, 5)
    }
    rate = metrics["valid"]["success_rate"]
    # Only t3 (FFFF -> SFFF) changes: +0.25 on one task of six.
    assert rate["difference"]["estimate"] == pytest.approx(0.25 / 6)
    assert rate["difference"]["method"] == "t_cr1" and rate["difference"]["df"] == 5
    assert rate["a"]["method"] == "agresti_coull_t_cr1"
    assert 0 < rate["p_value"] < 1 and rate["statistic"] > 0
    assert rate["difference"]["boot_low"] is not None
    assert data["methods"] == {
        "interval": "agresti_coull_t_cr1", "confidence": 0.95, "min_tasks": 5,
        "bootstrap": "cluster_bootstrap_percentile", "seed": 5, "n_boot": 2000,
        "test": "t_cr1", "per_task_test": "fisher_exact_two_sided",
        "multiple_comparisons": "benjamini_hochberg", "fdr": 0.05,
    }  # fmt: skip
    assert data["per_task_test"] == {
        "method": "fisher_exact_two_sided", "multiple_comparisons": "benjamini_hochberg",
        "fdr": 0.05, "tested": 6, "changed": 0,
    }  # fmt: skip
    code, out, _ = _invoke("compare", a, b, "--store", _store(tmp_path))
    assert code == 0 and "paired by task" in out and "0 of 6 tasks changed" in out
    assert "within attempt noise" in out


def test_disjoint_batches_compare_unpaired_without_a_traceback(tmp_path: Path) -> None:
    a = _import(tmp_path, "a", SIX)
    b = _import(tmp_path, "b", {f"u{i}": marks for i, marks in enumerate(SIX.values())})
    data = _json(tmp_path, "compare", a, b)
    assert data["mode"] == "unpaired" and data["paired_tasks"] == []
    # unpaired: every task of each batch is compared, none dropped (round 8: 12 was printed)
    assert data["dropped_tasks"] == 0 and len(data["only_in_a"]) == len(data["only_in_b"]) == 6
    assert data["metrics"]["valid"]["success_rate"]["difference"]["method"] == "mover"
    code, out, err = _invoke("compare", a, b, "--store", _store(tmp_path))
    assert code == 0 and "Traceback" not in out + err
    assert "UNPAIRED" in out


def test_one_task_each_compares_with_intervals_na(tmp_path: Path) -> None:
    a, b = _import(tmp_path, "a", {"x": "SF"}), _import(tmp_path, "b", {"y": "SS"})
    code, out, err = _invoke("compare", a, b, "--store", _store(tmp_path))
    assert code == 0 and "Traceback" not in err
    assert "n/a" in out
    data = _json(tmp_path, "compare", a, b)
    assert data["metrics"]["valid"]["success_rate"]["difference"]["ci_low"] is None


def test_unversioned_import_against_a_versioned_batch_is_refused_then_warned(
    tmp_path: Path,
) -> None:
    a = _import(tmp_path, "a", SIX, revision=0)
    b = _import(tmp_path, "b", SIX, revision=3)
    code, _, err = _invoke("compare", a, b, "--store", _store(tmp_path))
    assert code == 2 and "Traceback" not in err
    assert "batch a does not version 6 tasks" in err and "--allow-mismatch" in err
    code, _, err = _invoke("compare", a, b, "--allow-mismatch", "--store", _store(tmp_path))
    assert code == 0
    assert "WARNING: not the same evaluation: batch a does not version 6 tasks" in err
    data = _json(tmp_path, "compare", a, b, "--allow-mismatch")
    assert data["mismatches"] == [
        "batch a does not version 6 tasks the other batch versions (an unversioned import?): "
        "t0, t1, t2, t3, t4, t5"
    ]


def test_report_json_has_a_task_table_that_rebuilds_the_numbers(tmp_path: Path) -> None:
    batch = _import(tmp_path, "a", {**SIX, "t6": "SESE"})
    data = _json(tmp_path, "report", batch)
    rows = {row["task_id"]: row for row in data["tasks"]}  # type: ignore[attr-defined]
    assert rows["t6"] == {
        "task_id": "t6", "revision": None, "weight": 1.0, "labels": [], "horizon": None,
        "attempts": 4, "invalid": 2,
        "valid": {"n": 2, "c": 2, "partial": None, "scored": 0},
        "strict": {"n": 4, "c": 2, "partial": None, "scored": 0},
    }  # fmt: skip
    for view, key in (("valid", data), ("strict", data["invalid_as_failure"])):
        rates = [r[view]["c"] / r[view]["n"] for r in rows.values()]
        assert key["success_rate"]["estimate"] == pytest.approx(sum(rates) / len(rates))  # type: ignore[index]
    assert data["methods"]["min_tasks"] == 5  # type: ignore[index]


def test_k_limits_are_named_and_higher_k_reported_over_supporting_tasks(tmp_path: Path) -> None:
    batch = _import(tmp_path, "a", {**SIX, "t6": "SESE"})
    data = _json(tmp_path, "report", batch)
    limits = data["k_limits"]["valid"]  # type: ignore[index]
    assert limits["kmax"] == 2 and limits["limited_by"] == [{"task_id": "t6", "n": 2}]
    assert limits["beyond"] == {}
    assert set(data["pass_hat_k"]) == {"1", "2"}  # type: ignore[arg-type]
    data = _json(tmp_path, "report", batch, "--k-over-supporting")
    beyond = data["k_limits"]["valid"]["beyond"]  # type: ignore[index]
    assert set(beyond) == {"3", "4"}
    assert beyond["4"]["excluded_tasks"] == ["t6"]
    # pass^4 over the six four-attempt tasks: only t2 (SSSS) scores 1.
    assert beyond["4"]["pass_hat_k"]["estimate"] == pytest.approx(1 / 6)
    code, out, _ = _invoke("report", batch, "--k-over-supporting", "--store", _store(tmp_path))
    assert code == 0 and "k stops at 2" in out and "t6 (2)" in out and "4*" in out


def test_batches_run_on_different_suites_are_not_the_same_evaluation(tmp_path: Path) -> None:
    a = _import(tmp_path, "a", SIX)
    with RunStore(Path(_store(tmp_path))) as store:
        imported = store.batch(a)
    ran = imported.model_copy(update={"source": "groundstate", "suite_hash": "1" * 64})
    other = ran.model_copy(update={"suite_hash": "2" * 64})
    assert batch_mismatches(ran, other) == ["suite_hash differs (111111111111 vs 222222222222)"]
    assert batch_mismatches(ran, ran) == []
    # An import's suite hash is its results file's: two imports are not held to it.
    assert batch_mismatches(imported, imported.model_copy(update={"suite_hash": "3" * 64})) == []
    runs = store_runs(tmp_path, a)
    with pytest.raises(RevisionMismatch, match="suite_hash differs"):
        compare_batches(ran, runs, other, runs)
    allowed = compare_batches(ran, runs, other, runs, allow_mismatch=True)
    assert allowed.mismatches == ("suite_hash differs (111111111111 vs 222222222222)",)


def store_runs(tmp_path: Path, batch_id: str) -> list[AgentRun]:
    with RunStore(Path(_store(tmp_path))) as store:
        return store.runs(batch_id)
