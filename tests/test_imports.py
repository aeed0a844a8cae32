"""import-results on our row format: attempt labels as given, weight and horizon, named
problems, warnings, --json, and one all-or-nothing transaction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.importers import import_file
from groundstate.store import RunStore


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _import(tmp_path: Path, text: str, suffix: str = ".csv", *extra: str) -> tuple[str, str]:
    """Import *text*; returns (batch id, stderr)."""
    path = tmp_path / f"results{suffix}"
    path.write_text(text)
    code, out, err = _invoke(
        "import-results", str(path), "--name", "x", "--store", str(tmp_path / "r.db"), *extra
    )
    assert code == 0, err
    return out.strip().splitlines()[-1].removeprefix("batch "), err


def _report(tmp_path: Path, batch: str) -> dict:  # type: ignore[type-arg]
    code, out, err = _invoke("report", batch, "--json", "--store", str(tmp_path / "r.db"))
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def _refused(tmp_path: Path, text: str, suffix: str = ".csv") -> str:
    path = tmp_path / f"results{suffix}"
    path.write_text(text)
    store = tmp_path / "r.db"
    code, out, err = _invoke("import-results", str(path), "--name", "x", "--store", str(store))
    assert code == 2, out
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    with RunStore(store) as run_store:
        assert run_store.batch_ids() == []  # all or nothing
    return err


def test_zero_based_trials_become_attempts_one_to_n_and_keep_their_label(tmp_path: Path) -> None:
    rows = ["task_id,attempt,success"] + [
        f"t{t},{trial},{int(trial < t + 1)}" for t in range(2) for trial in range(4)
    ]
    path = tmp_path / "tau.csv"
    path.write_text("\n".join(rows) + "\n")
    code, out, _ = _invoke(
        "import-results", str(path), "--name", "x", "--store", str(tmp_path / "r.db")
    )
    assert code == 0
    assert "attempt labels: integers 0..3: attempt = label + 1" in out
    data = _report(tmp_path, out.strip().splitlines()[-1].removeprefix("batch "))
    assert data["attempts_per_task"] == 4 and set(data["pass_at_k"]) == {"1", "2", "3", "4"}
    assert data["success_rate"]["estimate"] == pytest.approx((1 / 4 + 2 / 4) / 2)
    with RunStore(tmp_path / "r.db") as store:
        runs = store.runs(store.batch().batch_id)
    assert [(r.attempt, r.infrastructure_status["attempt_label"]) for r in runs[:4]] == [
        (1, 0), (2, 1), (3, 2), (4, 3)
    ]  # fmt: skip


def test_one_based_labels_are_kept_and_gaps_stay_gaps(tmp_path: Path) -> None:
    batch, _ = _import(tmp_path, "task_id,attempt,success\nt1,1,1\nt1,3,0\nt2,2,1\n")
    with RunStore(tmp_path / "r.db") as store:
        assert [(r.task_id, r.attempt) for r in store.runs(batch)] == [
            ("t1", 1), ("t1", 3), ("t2", 2)
        ]  # fmt: skip
        assert store.batch(batch).attempts == 3


def test_text_labels_are_numbered_per_task_in_file_order(tmp_path: Path) -> None:
    rows = [
        {"task_id": "a", "attempt": "run-z", "success": True},
        {"task_id": "b", "attempt": 7, "success": False},
        {"task_id": "a", "attempt": "run-b", "success": False},
        {"task_id": "b", "attempt": "seven", "success": True},
    ]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    batch, _ = _import(tmp_path, text, ".jsonl")
    with RunStore(tmp_path / "r.db") as store:
        stored = {
            (r.task_id, r.infrastructure_status["attempt_label"]): r.attempt
            for r in store.runs(batch)
        }
        assert store.batch(batch).attempts == 2
    assert stored == {("a", "run-z"): 1, ("a", "run-b"): 2, ("b", 7): 1, ("b", "seven"): 2}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "task_id,attempt,success\nt1,0,1\nt2,0,1\nt1,0,0\n",
            "results.csv:4: attempt: task 't1' attempt 0 appears twice (also on line 2)",
        ),
        (
            "task_id,attempt,success\nt1,a,1\nt1,a,0\n",
            "results.csv:3: attempt: task 't1' attempt a appears twice (also on line 2)",
        ),
        (
            "task_id,attempt,success,weight\nt1,0,1,2\nt1,1,1,3\n",
            "results.csv:3: weight: 3.0 contradicts 2.0 given for the same task on line 2",
        ),
        (
            "task_id,attempt,success,horizon\nt1,0,1,4\nt1,1,1,5\n",
            "results.csv:3: horizon: 5 contradicts 4",
        ),
        (
            "task_id,attempt,success,weight\nt1,0,1,-1\n",
            "results.csv:2: weight: must be positive, got -1.0",
        ),
        (
            "task_id,attempt,success,weight\nt1,0,1,heavy\n",
            "results.csv:2: weight: must be a number, got 'heavy'",
        ),
        (
            "task_id,attempt,success,horizon\nt1,0,1,0\n",
            "results.csv:2: horizon: must be at least 1, got 0",
        ),
        (
            "task_id,attempt,success,partial_score\nt1,0,0,1.5\n",
            "results.csv:2: partial_score: must be in [0, 1]",
        ),
        ("task_id,attempt,success,retry\nt1,0,0,-1\n", "results.csv:2: retry: must be at least 0"),
        (
            "task_id,attempt,success,cost\nt1,0,0,nan\n",
            "results.csv:2: cost: must be a finite number",
        ),
        ("task_id,attempt\nt1,0\n", "results.csv:2: success: required, and missing or blank"),
        ("task_id,attempt,success\nt1,0,1,extra\n", "results.csv:2: more cells than the header"),
        (
            "task_id,attempt,success,slice_labels\nt1,0,1,[oops\n",
            "results.csv:2: slice_labels: not a JSON list",
        ),
    ],
)
def test_row_problems_name_file_line_and_field(tmp_path: Path, text: str, message: str) -> None:
    assert message in _refused(tmp_path, text)


def test_jsonl_problems_name_the_line(tmp_path: Path) -> None:
    text = '{"task_id": "t1", "attempt": 0, "success": true}\n\n{"task_id": "t1", "attempt": 1,\n'
    assert "results.jsonl:3: not valid JSON" in _refused(tmp_path, text, ".jsonl")
    text = '{"task_id": "t1", "attempt": 0, "success": true}\n[1, 2]\n'
    assert "results.jsonl:2: each line must be a JSON object" in _refused(tmp_path, text, ".jsonl")
    text = '{"task_id": "t1", "attempt": true, "success": true}\n'
    assert "results.jsonl:1: attempt: must be an integer or a text label" in _refused(
        tmp_path, text, ".jsonl"
    )


def test_weights_and_horizons_are_used_by_the_statistics(tmp_path: Path) -> None:
    text = (
        "task_id,attempt,success,weight,horizon\n"
        "easy,0,1,1,2\neasy,1,1,,\n"  # a blank cell inherits the task's value
        "hard,0,0,3,14\nhard,1,1,3,14\n"
    )
    data = _report(tmp_path, _import(tmp_path, text)[0])
    assert data["success_rate"]["estimate"] == pytest.approx((1 * 1.0 + 3 * 0.5) / 4)
    horizons = data["summary"]["views"]["valid"]["by_horizon"]
    assert horizons["1-3"]["n_tasks"] == 1 and horizons["13+"]["n_tasks"] == 1
    assert "unknown" not in horizons  # every task declared its horizon


def test_unknown_columns_get_one_warning_line_naming_them(tmp_path: Path) -> None:
    text = "task_id,attempt,success,model,notes\nt1,0,1,gpt,ok\nt1,1,0,gpt,\n"
    _, err = _import(tmp_path, text)
    assert err.strip().splitlines() == [
        f"warning: {tmp_path / 'results.csv'}: ignored columns no field reads: model, notes"
    ]


def test_json_flag_prints_one_document_and_keeps_warnings_on_stderr(tmp_path: Path) -> None:
    path = tmp_path / "results.csv"
    path.write_text("task_id,attempt,success,seed\nt1,0,1,3\nt2,0,0,4\n")
    code, out, err = _invoke(
        "import-results", str(path), "--name", "sys-a", "--json", "--store", str(tmp_path / "r.db")
    )
    assert code == 0 and "ignored columns no field reads: seed" in err
    data = json.loads(out)
    assert (data["name"], data["format"], data["runs"], data["tasks"]) == ("sys-a", "csv", 2, 2)
    assert data["ignored_columns"] == ["seed"] and data["warnings"]
    assert data["attempt_labels"].endswith("attempt = label + 1")
    assert len(data["batch_id"]) == 12


def test_retries_count_once_and_show_in_the_tries(tmp_path: Path) -> None:
    text = (
        "task_id,attempt,success,terminal_reason,retry\n"
        "t1,0,0,environment_failure/setup,0\nt1,0,1,success,1\nt1,1,0,agent_failure,0\n"
    )
    data = _report(tmp_path, _import(tmp_path, text)[0])
    assert (data["valid_attempts"], data["invalid_attempts"]) == (2, 0)
    assert data["tries"]["tries"] == 3 and data["tries"]["invalid_tries"] == 1


def test_stored_records_verify_and_read_back_exactly(tmp_path: Path) -> None:
    rows = [
        {"task_id": "naïve ✓ \u2028", "attempt": 0, "success": False, "cost": 0.1,
         "latency": 2.5, "partial_score": 0.25, "terminal_reason": "agent_failure/step_limit",
         "task_revision": 3, "slice_labels": ["a;b", "c"]},
        {"task_id": "t%s", "attempt": 1, "success": True, "cost": 1e-9, "latency": 0},
    ]  # fmt: skip
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with RunStore(tmp_path / "r.db") as store:
        report = import_file(path, "x", store)
        assert store.verify(report.batch.batch_id).ok
        first, second = store.runs(report.batch.batch_id)
        batch = store.batch(report.batch.batch_id)
    assert (first.task_id, first.cost, first.latency, first.partial_score) == (
        "naïve ✓ \u2028", 0.1, 2.5, 0.25
    )  # fmt: skip
    assert (first.task_revision, first.terminal_reason, first.attempt) == (
        3,
        "agent_failure/step_limit",
        1,
    )
    assert batch.task_slices["naïve ✓ \u2028"] == ["a;b", "c"]
    assert (second.task_id, second.cost, second.success, second.attempt) == ("t%s", 1e-9, True, 2)


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    assert "no result rows" in _refused(tmp_path, "task_id,attempt,success\n")


def test_spreadsheet_csv_with_a_byte_order_mark_and_an_explicit_format(tmp_path: Path) -> None:
    path = tmp_path / "export.txt"
    path.write_bytes(b"\xef\xbb\xbftask_id,attempt,success\r\nt1,0,1\r\nt1,1,0\r\n")
    code, out, err = _invoke(
        "import-results",
        str(path),
        "--name",
        "x",
        "--format",
        "csv",
        "--store",
        str(tmp_path / "r.db"),
    )
    assert code == 0 and err == "", err
    assert "imported 2 attempts of 1 task as" in out


def test_a_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "results.csv"
    path.write_bytes(b"task_id,attempt,success\nt\xe9,0,1\n")
    code, _, err = _invoke(
        "import-results", str(path), "--name", "x", "--store", str(tmp_path / "r.db")
    )
    assert code == 2 and "results.csv: not UTF-8 text" in err
