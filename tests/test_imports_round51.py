"""Fifty-first round: imports.

Classes of defect fixed:

- **A file an earlier importer read otherwise was returned as stored then.** Imports are
  idempotent by file (content, name and options), so τ-bench trials 1 and 2 of every task,
  imported before the fiftieth round as attempts 1 and 2 of a run of 2, imported again came
  back as that batch ("already imported"), with the report of today's reading ("attempt =
  label + 1") over the records of the old one. The batch an earlier import stored is
  compared with what this one would store (the run's attempts; each task's revision, weight,
  slices and horizon); one read otherwise is not returned: the file is stored anew and the
  old batch named in a warning. Imported once more, the new batch is returned as before.
- **Inspect figures of a reducer other than the mean were not checked.** A header's
  ``results.scores`` entry reduced by ``max``, ``median``, ``mode``, ``at_least_k`` or
  ``pass_at_k`` was passed over, whatever figure it gave (a ``max`` accuracy of 0.25 where
  the samples' best epochs give 0.5). Each reducer is recomputed from the samples' epochs as
  Inspect computes it (a tie of ``mode`` either way; ``at_least_k`` and ``pass_at_k`` over
  scores of 0 or 1 only, whose threshold the log does not give); a figure it does not give
  is named, as the mean's was.
- **Terminal-Bench's ``pass_at_k`` was not recomputed from its trials.** A run's
  ``pass_at_k`` figures (the mean over tasks of the unbiased estimator) that its trials do
  not give, or a k no task has trials for, were passed over; they are named in a warning,
  as an ``accuracy`` other than the trials' was.
- **A Harbor job's ``stats.evals`` were not compared with its trials.** ``reward_stats``
  (each trial's name under its reward's value) and ``exception_stats`` (under its
  exception's type) naming a trial under a value or an exception its own ``result.json``
  does not give were passed over; they are named in a warning (the trials are read).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from groundstate.importers import batch as batch_module
from groundstate.store import RunStore
from tests.test_imports_formats import Store, cli, log, sample, write_json
from tests.test_imports_harbor import job, trial
from tests.test_imports_round14 import tb_run, tb_trial
from tests.test_imports_round43 import _imported, _reasons


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


# --- a file an earlier importer read otherwise --------------------------------------------


def _tau(trials: list[int]) -> list[dict[str, Any]]:
    return [{"task_id": task, "reward": 1.0, "info": {}, "traj": [], "trial": trial}
            for task in (0, 1) for trial in trials]  # fmt: skip


def _import_json(store: Store, path: Path) -> tuple[dict[str, Any], str]:
    code, out, err = cli("import-results", str(path), "--name", "x", "--json",
                         "--store", str(store.path))  # fmt: skip
    assert code == 0, err
    return json.loads(out), err


def _reread(err: str) -> list[str]:
    return [line for line in err.splitlines() if "read otherwise by an earlier" in line]


def _old_numbering(monkeypatch: pytest.MonkeyPatch) -> None:
    """The importer before the fiftieth round: attempts numbered from the lowest label."""
    monkeypatch.setattr(
        batch_module, "first_label", lambda _format, plan: None if plan.text_labels else plan.lowest
    )


def _attempts_of(store: Store, batch: str) -> int:
    with RunStore(store.path) as runs:
        return runs.batch(batch).attempts


def test_a_file_numbered_otherwise_before_is_stored_anew(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_json(tmp_path / "t.json", _tau([1, 2]))
    with monkeypatch.context() as patched:
        _old_numbering(patched)
        old, _ = _import_json(store, path)
    assert set(_reasons(store, old["batch_id"])) == {(t, a) for t in ("0", "1") for a in (1, 2)}
    new, err = _import_json(store, path)
    assert not new["already_stored"] and new["batch_id"] != old["batch_id"]
    (line,) = _reread(err)
    assert f"batch {old['batch_id']} imported this file" in line
    assert "2 attempts a task then, 3 now" in line and "use the new batch" in line
    assert set(_reasons(store, new["batch_id"])) == {(t, a) for t in ("0", "1") for a in (2, 3)}
    assert _attempts_of(store, new["batch_id"]) == 3
    assert "attempt = label + 1" in new["attempt_labels"]
    # once more: the batch read as now is returned, nothing stored, nothing said
    again, err = _import_json(store, path)
    assert again["already_stored"] and again["batch_id"] == new["batch_id"]
    assert _reread(err) == []


def test_the_plain_report_says_it_is_stored_anew(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = log([sample(1, e, {"match": {"value": "C"}}) for e in (2, 3)])
    path = write_json(tmp_path / "l.json", data)
    with monkeypatch.context() as patched:
        _old_numbering(patched)
        old = store.imported(path)
    code, out, err = cli("import-results", str(path), "--name", "x", "--store", str(store.path))
    assert code == 0 and "already imported" not in out and out.startswith("imported ")
    assert len(_reread(err)) == 1 and old in err
    assert out.strip().splitlines()[-1] != f"batch {old}"


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("t.json", _tau([0, 1])),
        ("t2.json", _tau([1, 2])),  # a first trial lost, read alike both times
        ("l.json", log([sample(1, 1, {"match": {"value": "C"}})])),
    ],
)
def test_a_file_read_alike_is_returned_as_before(
    store: Store, tmp_path: Path, name: str, data: Any
) -> None:
    path = write_json(tmp_path / name, data)
    first, _ = _import_json(store, path)
    again, err = _import_json(store, path)
    assert again["already_stored"] and again["batch_id"] == first["batch_id"]
    assert _reread(err) == []


def test_a_row_file_read_alike_is_returned_as_before(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("task_id,attempt,success,weight\nt1,3,true,2\nt1,4,false,2\nt2,3,true,\n")
    first, _ = _import_json(store, path)
    again, err = _import_json(store, path)
    assert again["already_stored"] and again["batch_id"] == first["batch_id"]
    assert _reread(err) == [] and len(store.batches()) == 2  # the store's own and this


def test_a_batch_with_invalid_tasks_added_is_still_the_same_reading(
    store: Store, tmp_path: Path
) -> None:
    """A resume's invalid tasks are added to a batch after it was stored: not a reading."""
    path = write_json(tmp_path / "t.json", _tau([0, 1]))
    first, _ = _import_json(store, path)
    with RunStore(store.path) as runs:
        runs.add_invalid_tasks(first["batch_id"], ["0"])
    again, err = _import_json(store, path)
    assert again["already_stored"] and again["batch_id"] == first["batch_id"]
    assert _reread(err) == []


def _info(store: Store, tmp_path: Path) -> Any:
    batch = store.imported(write_json(tmp_path / "t.json", _tau([0, 1])))
    with RunStore(store.path) as runs:
        return runs.batch(batch)


@pytest.mark.parametrize(
    ("update", "said"),
    [
        ({"attempts": 5}, "5 attempts a task then, 2 now"),
        ({"task_revisions": {"0": 0}}, "1 task then, 2 now"),
        ({"task_weights": {"0": 1.0, "1": 2.0}}, "its task_weights differ"),
        ({"task_slices": {"0": ["a"], "1": []}}, "its task_slices differ"),
        ({"task_horizons": {"0": 3}}, "its task_horizons differ"),
    ],
)
def test_each_difference_of_reading_is_named(
    store: Store, tmp_path: Path, update: dict[str, Any], said: str
) -> None:
    now = _info(store, tmp_path)
    then = now.model_copy(update=update)
    assert batch_module._read_otherwise(now, now) == []
    assert said in batch_module._read_otherwise(then, now)


# --- Inspect reducers other than the mean -----------------------------------------------


def _results(entries: list[tuple[str | None, float]], name: str = "match") -> dict[str, Any]:
    return {"scores": [
        {"name": name, "scorer": name, "reducer": reducer, "params": {}, "metrics": {
            "accuracy": {"name": "accuracy", "value": value, "params": {}},
            "stderr": {"name": "stderr", "value": 0.5, "params": {}}}}
        for reducer, value in entries
    ]}  # fmt: skip


def _epochs(*per_sample: list[Any]) -> list[dict[str, Any]]:
    return [sample(i, epoch, {"match": {"value": value}})
            for i, values in enumerate(per_sample, start=1)
            for epoch, value in enumerate(values, start=1)]  # fmt: skip


def _metric_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "results.scores of task" in line]


def _checked(
    store: Store, tmp_path: Path, samples: list[dict[str, Any]], entries: list[Any]
) -> list[str]:
    data = log(samples)
    data["results"] = _results(entries)
    _, err = _imported(store, write_json(tmp_path / f"l{len(list(tmp_path.iterdir()))}.json", data))
    return _metric_lines(err)


HELD = (["C", "I", "I"], ["C", "C", "I"], ["I", "I", "I"])
"""Three samples of three epochs: their mean 1/3, 2/3, 0; max 1, 1, 0; median and mode 0,
1, 0; at least 2 correct 0, 1, 0; pass@2 2/3, 1, 0."""


@pytest.mark.parametrize(
    ("reducer", "right", "wrong"),
    [
        ("max", 2 / 3, 1 / 3),  # the figure of the mean, under max
        ("median", 1 / 3, 2 / 3),
        ("mode", 1 / 3, 1 / 9),
        ("at_least_2", 1 / 3, 1.0),
        ("at_least_3", 0.0, 1 / 3),
        ("pass_at_2", 5 / 9, 2 / 3),
        ("pass_at_3", 2 / 3, 1 / 3),
        ("pass_at_1", 1 / 3, 1.0),
    ],
)
def test_each_reducer_is_recomputed_from_the_epochs(
    store: Store, tmp_path: Path, reducer: str, right: float, wrong: float
) -> None:
    assert _checked(store, tmp_path, _epochs(*HELD), [(reducer, right)]) == []
    (line,) = _checked(store, tmp_path, _epochs(*HELD), [(reducer, wrong)])
    assert f"give match accuracy {wrong!r}" in line and "the 3 samples held score" in line
    assert f"the reducer {reducer!r}" in line


def test_a_mode_tied_takes_either_value(store: Store, tmp_path: Path) -> None:
    """C, I: a tie, which Inspect settles by the epoch it met first (the log does not keep
    the order it reduced in): 0 or 1 are both the samples', 2 is not."""
    held = _epochs(["C", "I"], ["C", "C"])
    assert _checked(store, tmp_path, held, [("mode", 0.5)]) == []
    assert _checked(store, tmp_path, held, [("mode", 1.0)]) == []
    (line,) = _checked(store, tmp_path, held, [("mode", 0.25)])
    assert "score 0.5 to 1" in line


def test_several_reducers_of_one_scorer_are_each_checked(store: Store, tmp_path: Path) -> None:
    entries = [("mean", 1 / 3), ("max", 2 / 3), ("median", 1 / 3), ("pass_at_2", 5 / 9)]
    assert _checked(store, tmp_path, _epochs(*HELD), entries) == []
    entries[1] = ("max", 1 / 3)
    (line,) = _checked(store, tmp_path, _epochs(*HELD), entries)
    assert "'max'" in line


@pytest.mark.parametrize(
    ("reducer", "held"),
    [
        ("best_of", HELD),  # a reducer of its own: not Inspect's
        ("pass_at_4", HELD),  # fewer epochs than k: NaN to Inspect
        ("at_least_2", (["C", "P", "I"], ["C", "C", "I"])),  # a partial score (P is 0.5)
        ("pass_at_2", ([0.7, 1, 0], [1, 1, 0])),
        ("at_least_", HELD),
        (7, HELD),
    ],
)
def test_figures_of_reducers_not_recomputed_say_nothing(
    store: Store, tmp_path: Path, reducer: Any, held: Any
) -> None:
    lines = _checked(store, tmp_path, _epochs(*held), [(reducer, 0.123)])
    if isinstance(reducer, str):  # round 52: said to be unchecked, not passed over in silence
        (line,) = lines
        assert "0.123" in line and "not checked against the samples" in line
    else:
        assert lines == []


def test_the_reducers_match_inspects_definitions() -> None:
    """Independently of the import: Inspect's pass@k is 1 - prod(1 - k / arange(n-c+1, n+1))."""
    from groundstate.importers.inspect_log import reduced  # new in this round

    for n in range(1, 7):
        for c in range(n + 1):
            for k in range(1, n + 1):
                epochs = [1.0] * c + [0.0] * (n - c)
                product = math.prod(1 - k / i for i in range(n - c + 1, n + 1))
                expected = 1.0 if n - c < k else 1 - product
                (low, high) = reduced(f"pass_at_{k}", epochs) or (None, None)
                assert low == high and math.isclose(low or 0, expected, abs_tol=1e-12)
                assert reduced(f"at_least_{k}", epochs) == (float(c >= k),) * 2
    assert reduced("median", [0.0, 0.5, 1.0, 1.0]) == (0.75, 0.75)
    assert reduced("max", [0.25, 0.5]) == (0.5, 0.5)
    assert reduced("mode", [0.5, 0.5, 1.0]) == (0.5, 0.5)
    assert reduced("pass_at_2", [1.0]) is None and reduced("unknown", [1.0]) is None


# --- Terminal-Bench pass_at_k -------------------------------------------------------------


def _tb(pass_at_k: dict[str, Any]) -> dict[str, Any]:
    """hello resolved once of two, fix never: pass@2 is (1 + 0) / 2, accuracy 1/4."""
    trials = [tb_trial("hello", 1, True), tb_trial("hello", 2, False),
              tb_trial("fix", 1, False), tb_trial("fix", 2, False)]  # fmt: skip
    return {**tb_run(trials), "accuracy": 0.25, "pass_at_k": pass_at_k}


def _pass_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "pass_at_k gives" in line]


@pytest.mark.parametrize(
    "given",
    [
        {},
        {"2": 0.5},
        {"2": 0.5000000000000001},
        {"1": 0.25, "2": 0.5},
        {"2": None},
        {"x": 3},
        {"²": 1},
        {"02": 0.5},
    ],
)
def test_pass_at_k_the_trials_give_says_nothing(
    store: Store, tmp_path: Path, given: dict[str, Any]
) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_tb(given), ensure_ascii=False))
    _, err = _imported(store, path)
    assert _pass_lines(err) == [] and "accuracy is" not in err


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"2": 1.0}, "pass@2 1.0, but the trials give 0.5"),
        ({"2": 0.0}, "pass@2 0.0, but the trials give 0.5"),
        ({"4": 0.5}, "pass@4 0.5, but no task has 4 trials"),
        ({"1": 0.5, "2": 1.0}, "pass@1 0.5, but the trials give 0.25; pass@2 1.0, but"),
        ({"2": "0.5"}, "pass@2 '0.5', not a number"),  # round 52: text, not a figure
    ],
)
def test_pass_at_k_the_trials_do_not_give_is_named(
    store: Store, tmp_path: Path, given: dict[str, Any], said: str
) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_tb(given)))
    batch, err = _imported(store, path)
    (line,) = _pass_lines(err)
    assert str(path) in line and said in line
    assert _reasons(store, batch)[("hello", 1)] == "success"  # the trials decide


def test_pass_at_k_over_tasks_of_unequal_trials(store: Store, tmp_path: Path) -> None:
    """Terminal-Bench averages over the tasks with k trials or more: hello (2 trials, 1
    resolved) alone for k = 2, fix's one trial left out."""
    trials = [tb_trial("hello", 1, True), tb_trial("hello", 2, False), tb_trial("fix", 1, True)]
    data = {**tb_run(trials), "accuracy": 2 / 3, "pass_at_k": {"2": 1.0}}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    _, err = _imported(store, path)
    assert _pass_lines(err) == []


# --- Harbor stats.evals ------------------------------------------------------------------


def _harbor(tmp_path: Path, evals: dict[str, Any]) -> Path:
    trials = [trial("hello", "hello__a", {"reward": 1.0}, minute=1),
              trial("hello", "hello__b", {"reward": 0.0}, minute=2),
              trial("fix", "fix__a", None, "AgentTimeoutError", minute=3)]  # fmt: skip
    folder = job(tmp_path / "job", trials)
    data = json.loads((folder / "result.json").read_text())
    data["stats"]["evals"] = evals
    write_json(folder / "result.json", data)
    return folder


def _evals(rewards: dict[str, list[str]], exceptions: dict[str, list[str]]) -> dict[str, Any]:
    """One eval, keyed as Harbor keys it (``agent__model__dataset``)."""
    return {"terminus-2__claude-sonnet-4__terminal-bench": {
        "n_trials": 2, "n_errors": 1, "metrics": [{"mean": 1 / 3}],
        "reward_stats": {"reward": rewards}, "exception_stats": exceptions}}  # fmt: skip


def _restated(err: str) -> list[str]:
    return [line for line in err.splitlines() if "stats.evals names trials" in line]


@pytest.mark.parametrize(
    ("rewards", "exceptions"),
    [
        ({"1.0": ["hello__a"], "0.0": ["hello__b"]}, {"AgentTimeoutError": ["fix__a"]}),
        ({"1": ["hello__a"], "0": ["hello__b"]}, {}),  # an int reward's key
        ({"1.0": ["hello__a"]}, {}),  # a trial the stats do not name yet
        ({"1.0": ["hello__a", "gone__x"]}, {"Cancelled": ["gone__y"]}),  # not held
        ({"high": ["hello__a"]}, {}),  # no number: not compared
    ],
)
def test_harbor_stats_the_trials_give_say_nothing(
    store: Store, tmp_path: Path, rewards: dict[str, list[str]], exceptions: dict[str, Any]
) -> None:
    _, err = _imported(store, _harbor(tmp_path, _evals(rewards, exceptions)))
    assert _restated(err) == []


@pytest.mark.parametrize(
    ("rewards", "exceptions", "said"),
    [
        ({"1.0": ["hello__a", "hello__b"]}, {}, "'hello__b' reward 1.0 in the stats, 0.0 in"),
        ({"0.0": ["hello__a"]}, {}, "'hello__a' reward 0.0 in the stats, 1.0 in its result"),
        ({"1.0": ["fix__a"]}, {}, "'fix__a' reward 1.0 in the stats, None in its result"),
        (
            {},
            {"AgentTimeoutError": ["hello__a"]},
            "'hello__a' AgentTimeoutError in the stats, exception None",
        ),
        ({}, {"VerifierTimeoutError": ["fix__a"]}, "exception 'AgentTimeoutError' in its"),
    ],
)
def test_harbor_stats_the_trials_do_not_give_are_named(
    store: Store, tmp_path: Path, rewards: dict[str, list[str]], exceptions: Any, said: str
) -> None:
    batch, err = _imported(store, _harbor(tmp_path, _evals(rewards, exceptions)))
    (line,) = _restated(err)
    assert said in line and str(tmp_path / "job" / "result.json") in line
    assert _reasons(store, batch)[("hello", 1)] == "success"  # each trial's result decides
