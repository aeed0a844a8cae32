"""Fifty-second round: imports.

Classes of defect fixed:

- **A file an earlier importer read otherwise, with the same counts, was returned as stored
  then.** Round 51 compared the batch an earlier import stored (its attempts, tasks and
  their revisions, weights, slices and horizons) with the one this import would store, but
  not the attempts' own records: an earlier importer that ended one attempt otherwise (a
  τ-bench error read as a plain failure, a ``max_steps`` read as another end), scored it
  otherwise or counted its tokens otherwise came back as ``already imported``, its records
  given as today's reading. Each task's records (every try's attempt, retry, end, success,
  cost, latency, partial score, judge errors and tokens) are compared now, as a digest
  (memory grows with tasks, not rows); a batch whose records differ, or cannot be read, is
  not returned: the file is stored anew and the earlier batch named, as round 51 does for
  counts. A file read alike (text labels, reruns, partial scores, costs and tokens) is
  returned as before.
- **An Inspect figure of a reducer not recomputed here passed in silence.** A header's
  ``accuracy`` or ``mean`` reduced by a reducer of one's own (``best_of``), by
  ``at_least_k`` or ``pass_at_k`` over partial scores (their threshold is not in the log) or
  by ``pass_at_k`` of a sample with fewer than k epochs was passed over, whatever it said:
  an import's silence read as a figure checked. It is named now as not checked, with why.
- **A summary figure written as text was passed in silence or named for what it is not.**
  An Inspect header's ``accuracy`` of ``"0.5"`` said nothing; Terminal-Bench's
  ``accuracy`` or ``pass_at_k`` of ``"0.5"`` was named as disagreeing with the trials'
  0.5, and its ``n_resolved`` of ``"1"`` refused as "edited or cut" beside 1 trial
  resolved. A figure that is no JSON number is named as such now (a warning: figures are
  checked, not read), and a count as text is refused as SWE-bench's is (a quoted integer
  is from a file ``tb run`` did not write).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from groundstate.importers import batch as batch_module
from tests.test_imports_formats import Store, cli, log, sample, write_json
from tests.test_imports_round14 import tb_run, tb_trial


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _import_json(store: Store, path: Path) -> tuple[dict[str, Any], str]:
    code, out, err = cli("import-results", str(path), "--name", "x", "--json",
                         "--store", str(store.path))  # fmt: skip
    assert code == 0, err
    return json.loads(out), err


def _reread(err: str) -> list[str]:
    return [line for line in err.splitlines() if "read otherwise by an earlier" in line]


# --- the records of an earlier import ------------------------------------------------------


def _tau() -> list[dict[str, Any]]:
    return [{"task_id": task, "reward": 1.0, "info": {}, "traj": [], "trial": trial}
            for task in (0, 1, 2) for trial in (0, 1)]  # fmt: skip


_KEPT = {"reason": 4, "success": 5, "partial": 6, "cost": 7, "latency": 8, "tokens": 11,
         "judged": 12}  # fmt: skip
"""Where :func:`batch._kept`'s tuple holds each field."""


def _earlier_importer(
    monkeypatch: pytest.MonkeyPatch, changes: dict[str, Any], task: str = "1", label: int = 1
) -> None:
    """An earlier version of the importer, that read one attempt (of *task*, *label*)
    otherwise: its kept row's *changes*."""
    kept = batch_module._kept

    def other(row: Any) -> Any:
        out = list(kept(row))
        if out[1] == task and out[2] == label:
            for name, value in changes.items():
                out[_KEPT[name]] = value
        return tuple(out)

    monkeypatch.setattr(batch_module, "_kept", other)


@pytest.mark.parametrize(
    "changes",
    [
        {"reason": "agent_failure/step_limit", "success": False},  # another end, same counts
        {"reason": "agent_failure/wrong_state"},  # only the end's cause
        {"success": False, "reason": "agent_failure"},
        {"cost": 0.25},
        {"latency": 3.5},
        {"partial": 0.5},
        {"tokens": (10, 20)},
        {"judged": 1},
    ],
)
def test_an_earlier_importers_other_record_is_stored_anew(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, changes: dict[str, Any]
) -> None:
    path = write_json(tmp_path / "t.json", _tau())
    with monkeypatch.context() as patched:
        _earlier_importer(patched, changes)
        old, _ = _import_json(store, path)
    new, err = _import_json(store, path)
    assert not new["already_stored"] and new["batch_id"] != old["batch_id"]
    (line,) = _reread(err)
    assert f"batch {old['batch_id']} imported this file" in line
    assert "the records of 1 task differ ('1')" in line and "use the new batch" in line
    assert new["attempts"] == old["attempts"] == 6  # the counts alike: only records tell
    # once more: the batch read as now is returned, nothing said
    again, err = _import_json(store, path)
    assert again["already_stored"] and again["batch_id"] == new["batch_id"]
    assert _reread(err) == []


def test_the_tasks_whose_records_differ_are_named_a_few(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = "task_id,attempt,success\n" + "".join(f"t{i},1,true\n" for i in range(6))
    path = tmp_path / "r.csv"
    path.write_text(rows)
    with monkeypatch.context() as patched:
        kept = batch_module._kept
        patched.setattr(batch_module, "_kept", lambda row: (*kept(row)[:5], False, *kept(row)[6:]))
        _import_json(store, path)
    _, err = _import_json(store, path)
    (line,) = _reread(err)
    assert "the records of 6 tasks differ ('t0', 't1', 't2' and 3 more)" in line


def _inspect_rich() -> dict[str, Any]:
    """Partial scores, an errored epoch, costs and tokens: every field the digest reads."""
    usage = {"gpt-4o": {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150}}
    samples = [
        sample(1, 1, {"match": {"value": 0.25}}, model_usage=usage, total_time=2.5),
        sample(1, 2, {"match": {"value": 1}}, model_usage=usage),
        sample(2, 1, {"match": {"value": 0}}),
        sample(2, 2, None, error={"message": "boom", "traceback": ""}),
    ]
    return log(samples)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("r.csv", "task_id,attempt,success,cost,latency,input_tokens,output_tokens,judge_errors\n"
                  "t1,a,true,0.1,2,10,3,0\nt1,b,false,5,1.25,,,1\nt2,a,false,,,7,,0\n"),
        ("r2.csv", "task_id,attempt,retry,success,terminal_reason,partial_score\n"
                   "t1,0,0,false,environment_failure,\nt1,0,1,true,success,0.75\n"
                   "t2,0,0,false,agent_failure,0.5\n"),
        ("l.json", json.dumps(_inspect_rich())),
        ("t.json", json.dumps(_tau())),
    ],
)  # fmt: skip
def test_a_file_read_alike_is_returned_as_before(
    store: Store, tmp_path: Path, name: str, text: str
) -> None:
    """Text labels, reruns, partial scores (credited to a failure), costs, latencies, tokens
    and judge errors read back from the store as this import reads them: one reading."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    first, _ = _import_json(store, path)
    again, err = _import_json(store, path)
    assert again["already_stored"] and again["batch_id"] == first["batch_id"]
    assert _reread(err) == []


def _edit(store: Store, batch: str, sql: str) -> None:
    with sqlite3.connect(store.path) as db:
        db.execute(f"UPDATE runs SET record = {sql} WHERE batch_id = ? AND task_id = '2'", (batch,))


@pytest.mark.parametrize(
    ("sql", "said"),
    [
        ("json_set(record, '$.success', json('false'))", "the records of 1 task differ ('2')"),
        ("json_set(record, '$.cost', 'a lot')", "its records cannot be read"),
        ("json_set(record, '$.cost', '0')", "its records cannot be read"),  # text, not 0
        ("json_set(record, '$.success', 'true')", "its records cannot be read"),
        ("json_set(record, '$.usage.input_tokens', 1.0)", "its records cannot be read"),
        ("'not json'", "its records cannot be read"),
    ],
)
def test_a_stored_batch_changed_since_is_not_returned(
    store: Store, tmp_path: Path, sql: str, said: str
) -> None:
    """Records changed in the store after the import (by hand, or damaged) are not this
    file's reading: the file is stored anew (``verify`` names the change)."""
    path = write_json(tmp_path / "t.json", _tau())
    first, _ = _import_json(store, path)
    _edit(store, first["batch_id"], sql)
    again, err = _import_json(store, path)
    assert not again["already_stored"] and again["batch_id"] != first["batch_id"]
    (line,) = _reread(err)
    assert said in line


def test_a_large_file_is_compared_in_time(store: Store, tmp_path: Path) -> None:
    import time

    rows = "task_id,attempt,success,cost\n" + "".join(
        f"t{i % 500},{i // 500},{'true' if i % 3 else 'false'},{i / 7}\n" for i in range(20_000)
    )
    path = tmp_path / "big.csv"
    path.write_text(rows)
    first, _ = _import_json(store, path)
    started = time.perf_counter()
    again, _ = _import_json(store, path)
    assert again["already_stored"] and again["batch_id"] == first["batch_id"]
    assert time.perf_counter() - started < 30


# --- Inspect figures of reducers not recomputed ---------------------------------------------


def _results(reducer: Any, value: float, metric: str = "accuracy") -> dict[str, Any]:
    metrics = {metric: {"name": metric, "value": value, "params": {}},
               "stderr": {"name": "stderr", "value": 0.5, "params": {}}}  # fmt: skip
    entry = {"name": "match", "scorer": "match", "reducer": reducer, "params": {}}
    return {"scores": [{**entry, "metrics": metrics}]}


def _lines(store: Store, tmp_path: Path, per_sample: list[list[Any]], results: Any) -> list[str]:
    samples = [sample(i, epoch, {"match": {"value": value}})
               for i, values in enumerate(per_sample, start=1)
               for epoch, value in enumerate(values, start=1)]  # fmt: skip
    data = log(samples)
    data["results"] = results
    path = write_json(tmp_path / f"l{len(list(tmp_path.iterdir()))}.json", data)
    code, _, err = cli("import-results", str(path), "--name", "x", "--store", str(store.path))
    assert code == 0, err
    return [line for line in err.splitlines() if "results.scores of task" in line]


@pytest.mark.parametrize(
    ("reducer", "held", "why"),
    [
        ("best_of", [["C", "I"], ["I", "I"]], "a reducer of one's own"),
        ("my_pkg/majority", [["C", "I"], ["I", "I"]], "a reducer of one's own"),
        ("at_least_", [["C", "I"], ["I", "I"]], "a reducer of one's own"),
        ("at_least_2", [["C", "P", "I"], ["C", "C", "I"]], "over partial scores"),
        ("pass_at_2", [[0.7, 1, 0], [1, 1, 0]], "whose threshold"),
        ("pass_at_4", [["C", "I"], ["I", "I"]], "fewer than 4 epochs"),
    ],
)
@pytest.mark.parametrize("metric", ["accuracy", "mean"])
def test_a_figure_not_recomputed_is_said_to_be_unchecked(
    store: Store, tmp_path: Path, reducer: str, held: list[list[Any]], why: str, metric: str
) -> None:
    (line,) = _lines(store, tmp_path, held, _results(reducer, 0.123, metric))
    assert f"give match {metric} 0.123 reduced by {reducer!r}" in line
    assert why in line and "not checked against the samples" in line
    assert str(tmp_path) in line


@pytest.mark.parametrize(
    ("reducer", "held", "value"),
    [
        ("mean", [["C", "I"], ["I", "I"]], 0.25),
        (None, [["C", "I"], ["I", "I"]], 0.25),
        ("max", [["C", "I"], ["I", "I"]], 0.5),
        ("at_least_2", [["C", "C"], ["C", "I"]], 0.5),
        ("pass_at_2", [["C", "I"], ["I", "I"]], 0.5),
    ],
)
def test_a_figure_recomputed_and_right_says_nothing(
    store: Store, tmp_path: Path, reducer: Any, held: list[list[Any]], value: float
) -> None:
    assert _lines(store, tmp_path, held, _results(reducer, value)) == []


@pytest.mark.parametrize(
    "results",
    [
        None,
        {"scores": [{"name": "match", "reducer": "best_of", "metrics": {}}]},  # no figure
        {
            "scores": [
                {"name": "other", "reducer": "best_of", "metrics": {"accuracy": {"value": 0.5}}}
            ]
        },
        {"scores": [{"name": "match", "reducer": 7, "metrics": {"accuracy": {"value": 0.5}}}]},
    ],
)
def test_no_figure_of_a_scorer_held_says_nothing(
    store: Store, tmp_path: Path, results: Any
) -> None:
    assert _lines(store, tmp_path, [["C", "I"], ["I", "I"]], results) == []


# --- summary figures written as text ---------------------------------------------------


@pytest.mark.parametrize("value", ["0.25", True, [0.25]])
def test_an_inspect_figure_as_text_is_named(store: Store, tmp_path: Path, value: Any) -> None:
    (line,) = _lines(store, tmp_path, [["C", "I"], ["I", "I"]], _results("mean", value))
    assert f"give match accuracy {value!r}, not a number" in line and "not checked" in line


def test_a_figure_as_text_of_a_reducer_not_recomputed_is_said_to_be_unchecked(
    store: Store, tmp_path: Path
) -> None:
    (line,) = _lines(store, tmp_path, [["C", "I"], ["I", "I"]], _results("best_of", "0.5"))
    assert "give match accuracy '0.5' reduced by 'best_of'" in line and "not checked" in line


def _tb(store: Store, tmp_path: Path, **edit: Any) -> tuple[int, str]:
    run = tb_run([tb_trial("hello", 1, True), tb_trial("hello", 2, False)])
    run.update({"accuracy": 0.5, "pass_at_k": {"2": 1.0}, **edit})
    folder = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    path = write_json(folder / "results.json", run)
    code, _, err = cli("import-results", str(path), "--name", "x", "--store", str(store.path))
    return code, err


def _warned(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning: ")]


@pytest.mark.parametrize("value", ["0.5", True])
def test_a_terminal_bench_accuracy_as_text_is_named_as_such(
    store: Store, tmp_path: Path, value: Any
) -> None:
    code, err = _tb(store, tmp_path, accuracy=value)
    (line,) = _warned(err)
    assert code == 0 and f"accuracy is {value!r}, not a number" in line and "but" not in line


def test_a_terminal_bench_pass_at_k_as_text_is_named_as_such(store: Store, tmp_path: Path) -> None:
    code, err = _tb(store, tmp_path, pass_at_k={"2": "1.0", "1": 0.5})
    (line,) = _warned(err)
    assert code == 0 and "pass@2 '1.0', not a number" in line and "pass@1" not in line


@pytest.mark.parametrize(("field", "value"), [("n_resolved", "1"), ("n_unresolved", "1")])
def test_a_terminal_bench_count_as_text_is_refused_as_text(
    store: Store, tmp_path: Path, field: str, value: Any
) -> None:
    code, err = _tb(store, tmp_path, **{field: value})
    assert code == 2 and "Traceback" not in err and "results.json" in err
    assert f"{field}: must be an integer written as a JSON integer, got text '1'" in err


@pytest.mark.parametrize(("field", "value"), [("n_resolved", True), ("n_resolved", 2)])
def test_a_terminal_bench_count_otherwise_is_still_refused(
    store: Store, tmp_path: Path, field: str, value: Any
) -> None:
    code, err = _tb(store, tmp_path, **{field: value})
    assert code == 2 and f"{field}: " in err and "Traceback" not in err


def test_terminal_bench_figures_as_written_say_nothing(store: Store, tmp_path: Path) -> None:
    code, err = _tb(store, tmp_path, n_resolved=1.0)  # an integer written as a float: read
    assert code == 0 and _warned(err) == []
    code, err = _tb(store, tmp_path)
    assert code == 0 and _warned(err) == []
