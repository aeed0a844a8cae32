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
from math import comb
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
    "make",
    [
        lambda t: _tau(t, reward=True),
        lambda t: _tau2(t, reward_info={"reward": True}),
        lambda t: _harbor(t, {"reward": True}),
    ],
    ids=["tau", "tau2", "harbor"],
)
def test_a_boolean_reward_is_refused(store: Store, tmp_path: Path, make: Any) -> None:
    """Their rewards are ``float`` fields dumped by pydantic (a ``True`` given to the model is
    written ``1.0``): a ``true`` in the file was not written by the harness."""
    err = store.refused(make(tmp_path))
    assert "reward: must be a number, got True" in err, err


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


# --- audit: each real shape gives the figures its attempts say --------------------------------
# For each format a small file as its writer lays it out (trials/epochs, errors, cancelled or
# infrastructure-failed attempts, retries), the outcome of each valid attempt written down by
# hand, and pass^k, pass@k and the success rate recomputed here from those outcomes alone.


def _pass_hat(outcomes: dict[str, list[bool]], k: int) -> float:
    """τ-bench's unbiased pass^k: the mean over tasks of C(c, k) / C(n, k)."""
    return sum(comb(sum(o), k) / comb(len(o), k) for o in outcomes.values()) / len(outcomes)


def _pass_at(outcomes: dict[str, list[bool]], k: int) -> float:
    return sum(1 - comb(len(o) - sum(o), k) / comb(len(o), k) for o in outcomes.values()) / len(
        outcomes
    )


ERROR = {"message": "RuntimeError('boom')", "traceback": "Traceback ...",
         "traceback_ansi": "Traceback ..."}  # fmt: skip
CANCELLED = {**ERROR, "message": "CancelledError()"}


def _inspect_log(tmp: Path) -> Path:
    """Three epochs; an errored sample (the solver raised: the agent's crash, counted), a
    cancelled one (invalid), one whose first try Inspect retried (an invalid try)."""
    samples = [
        sample("a", 1, {"m": {"value": "C"}}), sample("a", 2, {"m": {"value": "I"}}),
        sample("a", 3, {"m": {"value": "C"}}),
        sample("b", 1, {"m": {"value": "C"}}), sample("b", 2, {}, error=ERROR),
        sample("b", 3, {}, error=CANCELLED),
        sample("c", 1, {"m": {"value": "C"}}, error_retries=[ERROR]),
        sample("c", 2, {"m": {"value": 1.0}}), sample("c", 3, {"m": {"value": 0.5}}),
    ]  # fmt: skip
    return write_json(tmp / "log.json", log(samples))


def _tau2_run(tmp: Path) -> Path:
    """τ² ``Results``: trials 0..2; an infrastructure error and a user-simulator error
    (invalid), the step limit and a partial reward (failures, counted)."""
    sims = [
        simulation("s1", "1", 0), simulation("s2", "1", 1, 0.0), simulation("s3", "1", 2),
        simulation("s4", "2", 0, 0.0, termination_reason="infrastructure_error"),
        simulation("s5", "2", 1), simulation("s6", "2", 2, 0.0, termination_reason="max_steps"),
        simulation("s7", "3", 0, 0.5), simulation("s8", "3", 1),
        simulation("s9", "3", 2, 0.0, termination_reason="user_error"),
    ]  # fmt: skip
    return write_json(tmp / "results.json", {"info": {}, "tasks": [], "simulations": sims})


def _tau_run(tmp: Path) -> Path:
    """τ-bench ``EnvRunResult``s: trials 0..1, one raised in ``run.py`` (``info.error``, the
    agent's crash under the default ``--errors agent``)."""
    raised = {"error": "ValueError('x')", "traceback": "Traceback ..."}
    items = [tau(0, 0, 1.0), tau(0, 1, 1.0), tau(1, 0, 0.0), tau(1, 1, 0.0, raised),
             tau(2, 0, 1.0), tau(2, 1, 0.0)]  # fmt: skip
    return write_json(tmp / "tau.json", items)


def _harbor_job(tmp: Path) -> Path:
    """A Harbor job: per task two trials; one cancelled (invalid), one timed out (counted),
    one whose container never came up (invalid)."""
    job = tmp / "job"
    job.mkdir()
    trials = [
        trial("t", "t__a", {"reward": 1.0}), trial("t", "t__b", {"reward": 0.0}),
        trial("u", "u__a", None, "CancelledError"), trial("u", "u__b", {"reward": 1.0}),
        trial("v", "v__a", {"reward": 1.0}, "AgentTimeoutError"),
        trial("v", "v__b", None, "EnvironmentStartTimeoutError"),
        trial("v", "v__c", {"reward": 1}),
    ]  # fmt: skip
    write_json(job / "result.json", {"id": "j", "n_total_trials": len(trials), "stats": {}})
    for each in trials:
        (job / each["trial_name"]).mkdir()
        write_json(job / each["trial_name"] / "result.json", each)
    return job


def _tb_results(tmp: Path) -> Path:
    """``tb run``: two trials per task; an agent timeout whose tests passed (the timeout
    decides), a trial never graded (invalid)."""
    trials = [
        tb_trial("hello", 1, True), tb_trial("hello", 2, True, "agent_timeout"),
        tb_trial("fix", 1, False), tb_trial("fix", 2, True),
        tb_trial("sum", 1, None), tb_trial("sum", 2, True),
    ]  # fmt: skip
    return write_json(tmp / "results.json", tb_run(trials))


AUDIT = {  # format: (file, valid outcomes per task in attempt order, invalid attempts)
    "inspect": (_inspect_log, {"a": [True, False, True], "b": [True, False],
                               "c": [True, True, False]}, 1),  # and the retried try
    "tau2-bench": (_tau2_run, {"1": [True, False, True], "2": [True, False],
                               "3": [False, True]}, 2),
    "tau-bench": (_tau_run, {"0": [True, True], "1": [False, False], "2": [True, False]}, 0),
    "harbor": (_harbor_job, {"t": [True, False], "u": [True], "v": [False, True]}, 2),
    "terminal-bench": (_tb_results, {"hello": [True, False], "fix": [False, True],
                                     "sum": [True]}, 1),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(AUDIT))
def test_a_real_shape_gives_the_figures_its_attempts_say(
    store: Store, tmp_path: Path, name: str
) -> None:
    make, outcomes, invalid = AUDIT[name]
    batch = store.imported(make(tmp_path))
    runs = store.runs(batch)
    stored: dict[str, list[bool]] = {}
    for (task, _, _), (reason, _) in sorted(runs.items()):
        if not reason.startswith(("environment_failure", "grader_failure")):
            stored.setdefault(task, []).append(reason == "success")
    assert stored == outcomes  # success per valid attempt, in attempt order
    report = store.report(batch)
    valid = sum(len(o) for o in outcomes.values())
    assert (report["valid_attempts"], report["invalid_attempts"]) == (valid, invalid)
    retried = 1 if name == "inspect" else 0  # an invalid try before the attempt's last
    assert report["tries"]["invalid_tries"] == invalid + retried
    assert report["success_rate"]["estimate"] == pytest.approx(  # each task weighs the same
        sum(sum(o) / len(o) for o in outcomes.values()) / len(outcomes)
    )
    fewest = min(len(o) for o in outcomes.values())
    for k in range(1, fewest + 1):
        assert report["pass_hat_k"][str(k)]["estimate"] == pytest.approx(_pass_hat(outcomes, k))
        assert report["pass_at_k"][str(k)]["estimate"] == pytest.approx(_pass_at(outcomes, k))
    assert all(int(k) <= fewest for k in report["pass_hat_k"])  # stops at the fewest attempts
