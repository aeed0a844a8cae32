"""Other harnesses' result files, nineteenth round.

Numbers given as text. Every harness whose JSON we read writes its numbers as JSON numbers:
τ-bench ``EnvRunResult.model_dump()`` (``reward: float``, ``trial: int``), τ²-bench
``Results.model_dump_json()`` (``RewardInfo.reward: float``, ``agent_cost: float``),
Inspect's ``EvalSample`` (``epoch: int``, ``ModelUsage`` integers), Terminal-Bench's
``TrialResults`` (``total_input_tokens: int``), Harbor's ``TrialResult`` (``rewards: dict[str,
float | int]``, ``cost_usd: float``), SWE-bench's ``make_run_report`` (``json.dump`` of ints),
AppWorld's ``TestTracker.to_dict()`` (``num_tests: int``). A ``"1"`` in those places is a file
no harness wrote (edited, or made by hand): it was read as the number, so a quoted ``"1"``
passed a task no run passed. It is now refused, naming the file, the record and the field,
and nothing is stored. Two places keep text: an Inspect score value (``Value`` includes
``str``, and Inspect's own ``value_to_float`` reads ``"0.5"`` as 0.5) and the row format
(CSV cells are text).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.test_imports_formats import Store, log, sample, tau, write_json
from tests.test_imports_harbor import evaluation, tracker, trial
from tests.test_imports_round11 import SWE_REPORT
from tests.test_imports_round14 import tb_run, tb_trial
from tests.test_imports_tau2_versions import simulation


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _tau(tmp: Path, **edit: Any) -> Path:
    items = [tau(3, 0, 1.0), tau(3, 1, 0.0)]
    items[1].update(edit)
    return write_json(tmp / "tau.json", items)


def _tau2(tmp: Path, **edit: Any) -> Path:
    sims = [simulation("a1", "1", 0), simulation("a2", "1", 1, 0.0)]
    sims[1].update(edit)
    return write_json(tmp / "results.json", {"info": {}, "tasks": [], "simulations": sims})


def _inspect(tmp: Path, **edit: Any) -> Path:
    samples = [sample(1, 1, {"m": {"value": "C"}}), sample(1, 2, {"m": {"value": "I"}})]
    samples[1].update(edit)
    return write_json(tmp / "log.json", log(samples))


def _tb(tmp: Path, **edit: Any) -> Path:
    trials = [tb_trial("hello", 1, True), tb_trial("hello", 2, False, **edit)]
    return write_json(tmp / "results.json", tb_run(trials))


def _harbor(tmp: Path, rewards: Any = None, **edit: Any) -> Path:
    return write_json(tmp / "result.json", trial("t", "t__a", rewards or {"reward": 0.0}, **edit))


def _swe(tmp: Path, **edit: Any) -> Path:
    return write_json(tmp / "gpt-4o.run1.json", {**SWE_REPORT, **edit})


def _appworld(tmp: Path, **edit: Any) -> Path:
    individual = {"82e2fac_1": tracker(True, 2, 0), "82e2fac_2": {**tracker(False, 1, 1), **edit}}
    return write_json(tmp / "evaluation.json", evaluation(individual))


USAGE = {"gpt-4o": {"input_tokens": "10", "output_tokens": 2, "total_tokens": 12}}
AGENT_RESULT = {"n_input_tokens": 10, "n_output_tokens": 2, "cost_usd": "0.25"}

QUOTED = [  # (file, its record, the field, the text)
    ("tau", lambda t: _tau(t, reward="1"), "tau.json:2:", "reward", "'1'"),
    ("tau", lambda t: _tau(t, reward="1.0"), "tau.json:2:", "reward", "'1.0'"),
    ("tau", lambda t: _tau(t, trial="1"), "tau.json:2:", "trial", "'1'"),
    ("tau2", lambda t: _tau2(t, reward_info={"reward": "1"}), "simulations[1]",
     "reward_info.reward", "'1'"),
    ("tau2", lambda t: _tau2(t, trial="1"), "simulations[1]", "trial", "'1'"),
    ("tau2", lambda t: _tau2(t, agent_cost="0.5"), "simulations[1]", "agent_cost", "'0.5'"),
    ("inspect", lambda t: _inspect(t, epoch="2"), "samples[1]", "epoch", "'2'"),
    ("inspect", lambda t: _inspect(t, model_usage=USAGE), "samples[1]",
     "input_tokens", "'10'"),
    ("terminal-bench", lambda t: _tb(t, total_input_tokens="1000"), "results[1]",
     "total_input_tokens", "'1000'"),
    ("harbor", lambda t: _harbor(t, {"reward": "1"}), "", "verifier_result.rewards.reward",
     "'1'"),
    ("harbor", lambda t: _harbor(t, agent_result=AGENT_RESULT), "", "cost_usd", "'0.25'"),
    ("swe-bench", lambda t: _swe(t, total_instances="6"), "", "total_instances", "'6'"),
    ("appworld", lambda t: _appworld(t, num_tests="2"), "82e2fac_2", "num_tests", "'2'"),
    ("appworld", lambda t: _appworld(t, difficulty="1"), "82e2fac_2", "difficulty", "'1'"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("make", "record", "field", "text"),
    [q[1:] for q in QUOTED],
    ids=[f"{q[0]}-{q[3]}-{q[4]}" for q in QUOTED],
)
def test_a_number_given_as_text_in_a_harness_file_is_refused(
    store: Store, tmp_path: Path, make: Any, record: str, field: str, text: str
) -> None:
    path = make(tmp_path)
    err = store.refused(path)  # one line, names the file, nothing stored, earlier batch intact
    assert field in err and text in err and "written as a JSON" in err, err
    assert record in err, err


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda t: _tau(t, reward=1), "reward"),
        (lambda t: _tau2(t, agent_cost=0.5), "agent_cost"),
        (lambda t: _harbor(t, {"reward": 1}), "reward"),
        (lambda t: _appworld(t, num_tests=2.0), "num_tests"),  # an integer kept as a float
    ],
)
def test_the_same_numbers_written_as_numbers_import(
    store: Store, tmp_path: Path, make: Any, field: str
) -> None:
    """The controls: the files above, the field a JSON number, import."""
    store.imported(make(tmp_path))


def test_an_inspect_score_value_given_as_text_is_read_as_inspect_reads_it(
    store: Store, tmp_path: Path
) -> None:
    """Inspect's ``Value`` includes ``str`` and its ``value_to_float`` reads a number in text:
    a scorer that returns ``"0.5"`` wrote that file, so it keeps being read (0.5, partial)."""
    samples = [sample(1, 1, {"m": {"value": "1"}}), sample(1, 2, {"m": {"value": "0.5"}})]
    batch = store.imported(write_json(tmp_path / "log.json", log(samples)))
    assert store.runs(batch) == {
        ("1", 1, 0): ("success", 1.0),
        ("1", 2, 0): ("agent_failure/incorrect", 0.5),
    }


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_the_row_format_keeps_reading_numbers_in_text(
    store: Store, tmp_path: Path, suffix: str
) -> None:
    """A CSV holds only text; a JSON Lines row of the same columns is read the same."""
    path = tmp_path / f"rows.{suffix}"
    if suffix == "csv":
        path.write_text("task_id,attempt,success,cost,partial_score\nt,1,false, 0.5 ,0.25\n")
    else:
        row = {"task_id": "t", "attempt": "1", "success": False, "cost": " 0.5 ",
               "partial_score": "0.25"}  # fmt: skip
        path.write_text(json.dumps(row) + "\n")
    batch = store.imported(path)
    assert store.runs(batch) == {("t", 1, 0): ("agent_failure", 0.25)}
