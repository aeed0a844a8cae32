"""Tenth audit of ``import-results``: the τ-bench files its own history wrote.

Classes: τ-bench results without ``trial``; the first ``run.py`` (June to September 2024:
``info`` the text ``"Error: ..."`` when an attempt raised, the checks' details and the agent's
``usage`` at the top of ``info``, a ``context_length_exceeded`` answer in ``info.error``); an
episode that ran out of steps (``reward_info`` null: its reward 0 is no verdict on the state).
"""

from __future__ import annotations

import json
import warnings
import zipfile
from pathlib import Path

import pytest

from groundstate.store import RunStore
from tests.test_imports_formats import EXPORTED, Store, cli, sample, write_eval, write_json
from tests.test_imports_round4 import tau_result


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _outcomes(store: Store, path: Path, *extra: str) -> dict[tuple[str, int, int], str]:
    return {key: reason for key, (reason, _) in store.runs(store.imported(path, *extra)).items()}


def test_tau_results_without_trial_are_numbered_in_order(store: Store, tmp_path: Path) -> None:
    """A result without ``trial`` refused the file ("trial: must be an integer, got None"):
    each is one attempt, numbered per task in the order given, with a warning."""
    results = [tau_result(0, 0, 1.0), tau_result(1, 0, 0.0), tau_result(0, 0, 0.0),
               tau_result(1, 0, 1.0), tau_result(0, 0, 1.0)]  # fmt: skip
    for result in results:
        del result["trial"]
    path = write_json(tmp_path / "tau.json", results)
    assert _outcomes(store, path) == {
        ("0", 1, 0): "success", ("1", 1, 0): "agent_failure/incorrect",
        ("0", 2, 0): "agent_failure/incorrect", ("1", 2, 0): "success", ("0", 3, 0): "success",
    }  # fmt: skip
    code, _, err = cli("import-results", str(path), "--name", "y", "--store", str(store.path))
    assert code == 0 and "5 attempts: τ-bench trial missing" in err


def test_tau_first_run_py_errors_are_errors(store: Store, tmp_path: Path) -> None:
    """τ-bench's first ``run.py`` wrote ``info: "Error: <message>"`` for an attempt that
    raised: the whole file was refused (info: must be an object, got str)."""
    results = [tau_result(0, 0, 1.0), tau_result(0, 1, 0.0)]
    results[1]["info"] = "Error: Rate limit reached"
    path = write_json(tmp_path / "tau.json", results)
    assert _outcomes(store, path) == {("0", 1, 0): "success", ("0", 2, 0): "agent_failure/crashed"}
    invalid = _outcomes(store, path, "--errors", "environment")
    assert invalid[("0", 2, 0)] == "environment_failure/harness_error"
    with RunStore(store.path) as opened:
        run = next(r for r in opened.runs(store.imported(path)) if r.attempt == 2)
    assert run.infrastructure_status["origin"]["error"] == "Rate limit reached"
    results[1]["info"] = "all fine"  # other text is no error of that run.py's
    err = store.refused(write_json(tmp_path / "text.json", results))
    assert "text.json:2: info: must be an object, got str" in err


def test_an_episode_out_of_steps_is_a_step_limit(store: Store, tmp_path: Path) -> None:
    """τ-bench leaves ``reward_info`` null when the episode never ended (its loop ran its 30
    steps): such a result was ``agent_failure/incorrect``, a verdict on a state never graded."""
    path = write_json(tmp_path / "tau.json", [tau_result(0, 0, 0.0, reward_info=None, task={})])
    assert _outcomes(store, path) == {("0", 1, 0): "agent_failure/step_limit"}


def test_tau_first_run_py_details_and_usage(store: Store, tmp_path: Path) -> None:
    """The first ``run.py`` kept the checks at the top of ``info`` (``r_actions`` a bool) and
    the agent's price in ``info.usage``: failures were all ``agent_failure/incorrect`` and
    every cost 0; a ``context_length_exceeded`` stop was the agent crashing."""
    usage = {"prompt_tokens": [10, 20], "completion_tokens": [5, 5], "total_price": 0.25}
    window = "Error code: 400 - {'error': {'code': 'context_length_exceeded'}}"
    results = [
        tau_result("a", 0, 0.0, data_hash="h", r_actions=False, gt_data_hash="g", usage=usage),
        tau_result("a", 1, 0.0, r_outputs=0, outputs={"10": False}, r_actions=True, usage=usage),
        tau_result("a", 2, 0.0, error=window, source="user", usage=usage),
        tau_result("a", 3, 1.0, data_hash="h", r_actions=True, usage=usage),
        tau_result("a", 4, 0.0, error="litellm.ContextWindowExceededError: too long", usage=usage),
        tau_result("a", 5, 0.0, r_outputs=0, r_actions=False, usage=usage),  # state first
    ]
    path = write_json(tmp_path / "tau.json", results)
    batch = store.imported(path)
    with RunStore(store.path) as opened:
        runs = {r.attempt: r for r in opened.runs(batch)}
    assert {n: r.terminal_reason for n, r in runs.items()} == {
        1: "agent_failure/incorrect_state", 2: "agent_failure/communication",
        3: "harness_compatibility_failure/context_window", 4: "success",
        5: "harness_compatibility_failure/context_window", 6: "agent_failure/incorrect_state",
    }  # fmt: skip
    assert {r.cost for r in runs.values()} == {0.25}
    results[0]["info"]["usage"]["total_price"] = -1
    err = store.refused(write_json(tmp_path / "bad.json", results[:1]))
    assert "bad.json:1: info.usage.total_price: must not be negative" in err


def test_every_inspect_limit_decides_before_the_score(store: Store, tmp_path: Path) -> None:
    """A ``turn`` limit (Inspect's model generations) or a limit type a newer Inspect adds
    was decided by the score Inspect still gives a limited sample: a ``C`` made it a pass."""
    samples = [
        sample("a", 1, {"m": {"value": "C"}}, limit={"type": "turn", "limit": 10}),
        sample("a", 2, {"m": {"value": "C"}}, limit={"type": "gpu_hours", "limit": 1}),
        sample("a", 3, {"m": {"value": "C"}}),
    ]
    path = write_eval(tmp_path / "run.eval", samples)
    assert _outcomes(store, path) == {
        ("a", 1, 0): "agent_failure/step_limit",
        ("a", 2, 0): "agent_failure/limit",
        ("a", 3, 0): "success",
    }
    code, _, err = cli("import-results", str(path), "--name", "y", "--store", str(store.path))
    assert code == 0 and "limit 'gpu_hours' is not one known here" in err


def test_a_requeued_sample_rewritten_in_the_archive_is_read_once(
    store: Store, tmp_path: Path
) -> None:
    """Inspect re-logs a requeued sample as a second archive member of the same name, the
    last superseding the first (its own reader reads each name once): the import refused the
    log ("attempt 1 appears twice")."""
    path = write_eval(tmp_path / "run.eval", [sample("a", 1, {"m": {"value": "C"}})])
    again = sample("b", 1, {"m": {"value": "I"}})
    with warnings.catch_warnings(), zipfile.ZipFile(path, "a") as archive:
        warnings.simplefilter("ignore")  # zipfile's "Duplicate name"
        archive.writestr("samples/b_epoch_1.json", json.dumps({**again, "error": {"m": 1}}))
        archive.writestr("samples/b_epoch_1.json", json.dumps(again))
    assert _outcomes(store, path) == {
        ("a", 1, 0): "success",
        ("b", 1, 0): "agent_failure/incorrect",
    }
    code, _, err = cli("import-results", str(path), "--name", "y", "--store", str(store.path))
    assert code == 0 and "1 sample record was written again" in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'task_id,attempt,success,terminal_reason\nt1,0,true,success\nt1,1,false,"agent_failure/incor',
            "cut.csv:3: not valid CSV: unexpected end of data (a quoted cell is never closed",
        ),
        ('task_id,attempt,success\nt1,0,"true"x\n', "cut.csv:2: not valid CSV"),
    ],
)
def test_a_csv_cut_inside_a_quoted_cell_is_refused(
    store: Store, tmp_path: Path, text: str, message: str
) -> None:
    """A row file cut inside a quoted cell was read as far as it went (``"agent_failure/incor``
    a reason like any other); text after a closing quote was glued to the cell."""
    path = tmp_path / "cut.csv"
    path.write_text(text, encoding="utf-8")
    assert message in store.refused(path)


def test_an_inspect_samples_cost_is_its_models_total_cost(store: Store, tmp_path: Path) -> None:
    """Inspect keeps each model's ``total_cost`` in the sample's ``model_usage``: every
    imported cost was 0 (a cost per success of 0 in the report)."""
    usage = {"openai/gpt-4o": {"input_tokens": 10, "output_tokens": 5, "total_cost": 0.25},
             "openai/gpt-4o-mini": {"input_tokens": 3, "total_cost": 0.05},
             "local/free": {"input_tokens": 3}}  # fmt: skip
    samples = [sample("a", 1, {"m": {"value": "C"}}, model_usage=usage),
               sample("a", 2, {"m": {"value": "I"}}, model_usage={})]  # fmt: skip
    batch = store.imported(write_eval(tmp_path / "run.eval", samples))
    with RunStore(store.path) as opened:
        # eleventh round: a model without a price makes the cost unknown (None), not free
        # nineteenth round: an empty model_usage counts no usage: not known, not free
        assert [r.cost for r in opened.runs(batch)] == [None, None]
    del usage["local/free"]
    batch = store.imported(write_eval(tmp_path / "priced.eval", samples))
    with RunStore(store.path) as opened:
        assert [r.cost for r in opened.runs(batch)] == [pytest.approx(0.3), None]
    samples[1]["model_usage"] = {"m": {"total_cost": "lots"}}
    err = store.refused(write_eval(tmp_path / "bad.eval", samples))
    assert "model_usage.m.total_cost: must be a number" in err


def test_a_chunked_sample_is_read_from_its_shell(store: Store, tmp_path: Path) -> None:
    """Inspect may store a large sample in chunks (``samples/<id>_epoch_<n>/sample.json``
    with ``metadata.json``, ``messages/0.json``, ``events/0.json`` beside it): every chunk was
    read as a sample ("sample: must be an object, got list")."""
    path = write_eval(tmp_path / "run.eval", [sample("a/b", 1, {"m": {"value": "C"}})],
                      spec=EXPORTED)  # fmt: skip
    shell = sample("big", 1, {"m": {"value": "C"}})
    own = {"attempt": 1, "success": False, "terminal_reason": "agent_failure/crashed"}
    with zipfile.ZipFile(path, "a") as archive:
        prefix = "samples/big_epoch_1"
        archive.writestr(f"{prefix}/sample.json", json.dumps({**shell, "metadata": None}))
        archive.writestr(f"{prefix}/metadata.json", json.dumps({"groundstate": own}))
        for part in ("messages/0.json", "events/0.json", "events/stats.json", "skeleton.json"):
            archive.writestr(f"{prefix}/{part}", "[]")
    assert _outcomes(store, path) == {
        ("a/b", 1, 0): "success",
        ("big", 1, 0): "agent_failure/crashed",  # its metadata, read from metadata.json
    }


def test_attempts_given_only_by_reruns_are_counted(store: Store, tmp_path: Path) -> None:
    """An attempt whose only try in the file is a rerun (an Inspect export keeps only the
    counted try) was no attempt in the per-task count: "tasks have 0 to 2 attempts" where each
    has 2, and a batch of text labels all rerun recorded 0 attempts per task."""
    path = tmp_path / "rows.csv"
    path.write_text(
        "task_id,attempt,success,terminal_reason,retry\nt1,a,true,success,2\n"
        "t1,b,false,agent_failure,0\nt2,a,true,success,0\nt2,b,true,success,0\n"
        "t3,a,true,success,1\nt3,b,true,success,1\nt3,b,false,environment_failure/x,0\n",
        encoding="utf-8",
    )
    code, _, err = cli("import-results", str(path), "--name", "y", "--store", str(store.path))
    assert code == 0 and "attempts" not in err
    path.write_text("task_id,attempt,success,terminal_reason,retry\nt1,a,true,success,1\n")
    batch = store.imported(path)
    with RunStore(store.path) as opened:
        assert opened.batch(batch).attempts == 1


def test_a_list_score_is_read_by_position(store: Store, tmp_path: Path) -> None:
    """An Inspect score value may be a list (``Value`` allows a sequence): such a log could
    not be imported at all ("not a verdict; choose another --scorer" with no other)."""
    samples = [sample("a", 1, {"m": {"value": ["C", 0.0]}}),
               sample("a", 2, {"m": {"value": ["I", 1.0]}})]  # fmt: skip
    path = write_eval(tmp_path / "run.eval", samples)
    err = store.refused(path)
    assert "scores.m.value: a value per position (0 to 1): choose one with --scorer m.INDEX" in err
    assert _outcomes(store, path, "--scorer", "m.0") == {
        ("a", 1, 0): "success", ("a", 2, 0): "agent_failure/incorrect",
    }  # fmt: skip
    assert _outcomes(store, path, "--scorer", "m.1")[("a", 1, 0)] == "agent_failure/incorrect"
    assert "position (0 to 1)" in store.refused(path, "--scorer", "m.2")


def test_a_limited_samples_score_is_not_read(store: Store, tmp_path: Path) -> None:
    """A limit decides: the score Inspect still gives a limited sample is kept, not read (a
    value of several entries asks for --scorer only where it decides)."""
    samples = [
        sample("a", 1, {"m": {"value": ["C", 1]}}, limit={"type": "time", "limit": 9}),
        sample("a", 2, {"m": {"value": {"x": "C"}}}, limit={"type": "turn", "limit": 9}),
    ]
    path = write_eval(tmp_path / "run.eval", samples)
    assert _outcomes(store, path) == {
        ("a", 1, 0): "agent_failure/time_limit", ("a", 2, 0): "agent_failure/step_limit",
    }  # fmt: skip
