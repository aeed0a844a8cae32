"""Results from elsewhere, and the paired comparison of two batches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundstate.cli import main


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _import(tmp_path: Path, name: str, text: str, suffix: str = ".csv") -> str:
    path = tmp_path / f"{name}{suffix}"
    path.write_text(text)
    code, out, err = _invoke(
        "import-results", str(path), "--name", name, "--store", str(tmp_path / "runs.db")
    )
    assert code == 0, err
    last = out.strip().splitlines()[-1]
    assert last.startswith("batch ")
    return last.removeprefix("batch ")


def _csv(rates: dict[str, list[int]], revision: int = 0) -> str:
    lines = ["task_id,attempt,success,cost,latency,slice_labels,task_revision"]
    for task, results in rates.items():
        for attempt, ok in enumerate(results, start=1):
            lines.append(f"{task},{attempt},{ok},0.5,2.0,short;{task[0]},{revision}")
    return "\n".join(lines) + "\n"


A = {"t1": [1, 1, 0, 0], "t2": [0, 0, 0, 0], "t3": [1, 1, 1, 1], "t4": [0, 1, 0, 0]}
B = {"t1": [1, 1, 0, 0], "t2": [1, 1, 0, 0], "t3": [1, 1, 1, 1], "t4": [1, 1, 1, 1]}


def test_imported_batch_reports_like_any_other(tmp_path: Path) -> None:
    batch = _import(tmp_path, "other-harness", _csv(A))
    code, out, _ = _invoke("report", batch, "--json", "--store", str(tmp_path / "runs.db"))
    assert code == 0
    data = json.loads(out)
    assert (data["n_tasks"], data["valid_attempts"], data["invalid_attempts"]) == (4, 16, 0)
    assert data["pass_hat_k"]["1"]["estimate"] == pytest.approx((0.5 + 0 + 1 + 0.25) / 4)
    assert data["pass_at_k"]["4"]["estimate"] == pytest.approx(3 / 4)
    assert data["pass_hat_k"]["4"]["estimate"] == pytest.approx(1 / 4)
    assert set(data["pass_at_k"]) == {"1", "2", "3", "4"}
    assert data["summary"]["views"]["valid"]["by_label"]["short"]["n_tasks"] == 4


def test_jsonl_with_invalid_attempts(tmp_path: Path) -> None:
    rows = [
        {"task_id": "t1", "attempt": 1, "success": True},
        {
            "task_id": "t1",
            "attempt": 2,
            "success": False,
            "terminal_reason": "environment_failure/db",
        },
        {"task_id": "t2", "attempt": 1, "success": 0},
        {"task_id": "t2", "attempt": 2, "success": 1, "slice_labels": ["long"]},
    ]
    text = "\n".join(json.dumps(r) for r in rows) + "\n"
    batch = _import(tmp_path, "jsonl", text, ".jsonl")
    _, out, _ = _invoke("report", batch, "--json", "--store", str(tmp_path / "runs.db"))
    data = json.loads(out)
    assert (data["valid_attempts"], data["invalid_attempts"]) == (3, 1)
    assert data["success_rate"]["estimate"] == pytest.approx((1.0 + 0.5) / 2)
    assert data["invalid_as_failure"]["success_rate"]["estimate"] == pytest.approx((0.5 + 0.5) / 2)
    assert data["terminal_reasons"]["environment_failure/db"] == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "task_id,attempt,success\nt1,1,maybe\n",
            "results.csv:2: success: Input should be a valid boolean",
        ),
        ("task_id,attempt,success\nt1,,1\n", "results.csv:2: attempt:"),
        ("task_id,attempt,success\nt1,1,1\nt1,1,0\n", "attempt 1 appears twice"),
        ("task_id,attempt,success,terminal_reason\nt1,1,1,agent_failure\n", "contradicts"),
        (
            "task_id,attempt,success,terminal_reason\nt1,1,0,oops\n",
            "unknown terminal reason 'oops'",
        ),
        ("task_id,attempt,success\n", "no result rows"),
    ],
)
def test_malformed_results_are_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "results.csv"
    path.write_text(text)
    code, _, err = _invoke(
        "import-results", str(path), "--name", "x", "--store", str(tmp_path / "r.db")
    )
    assert code == 2
    assert message in err and "Traceback" not in err


def test_paired_comparison_with_a_known_answer(tmp_path: Path) -> None:
    a, b = _import(tmp_path, "a", _csv(A)), _import(tmp_path, "b", _csv(B))
    code, out, _ = _invoke("compare", a, b, "--json", "--store", str(tmp_path / "runs.db"))
    assert code == 0
    data = json.loads(out)
    assert data["mode"] == "paired" and data["common_k"] == {"valid": 4, "strict": 4}
    metric = data["metrics"]["valid"]["success_rate"]
    assert metric["difference"]["estimate"] == pytest.approx((0.5 + 0.75) / 4)
    # Four tasks are too few for an interval: said, not printed as a number.
    assert metric["difference"]["ci_low"] is None and metric["p_value"] is None
    assert metric["difference"]["note"] == "n/a: 4 tasks, intervals need at least 5"
    assert data["metrics"]["valid"]["pass_hat_4"]["difference"]["estimate"] == pytest.approx(1 / 4)
    assert data["changed_tasks"] == []  # 0/4 -> 2/4 and 1/4 -> 4/4 are not significant
    assert data["methods"]["seed"] == 0 and data["methods"]["test"] == "t_cr1"
    again = json.loads(_invoke("compare", a, b, "--json", "--store", str(tmp_path / "runs.db"))[1])
    assert again == data  # seeded: the same records give the same numbers
    code, out, _ = _invoke("compare", a, b, "--store", str(tmp_path / "runs.db"))
    assert code == 0 and "+0.313" in out and "0 of 4 tasks changed" in out  # 5/16 rounds up


def test_comparing_a_batch_with_itself_is_exactly_zero(tmp_path: Path) -> None:
    a = _import(tmp_path, "a", _csv(A))
    data = json.loads(_invoke("compare", a, a, "--json", "--store", str(tmp_path / "runs.db"))[1])
    metric = data["metrics"]["valid"]["pass_hat_1"]["difference"]
    assert (metric["estimate"], metric["se"]) == (0, None)  # no spread: no known SE
    assert data["changed_tasks"] == []


def test_compare_refuses_different_task_revisions(tmp_path: Path) -> None:
    a, b = _import(tmp_path, "a", _csv(A, revision=1)), _import(tmp_path, "b", _csv(B, revision=2))
    code, _, err = _invoke("compare", a, b, "--store", str(tmp_path / "runs.db"))
    assert code == 2
    assert "t1" in err and "t4" in err and "revision" in err
