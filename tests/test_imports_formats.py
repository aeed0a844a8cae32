"""Other harnesses' result files as those tools write them, with the variations they emit,
and damaged ones: each imports to the verdicts its own scoring implies, or fails with one
line naming the file, the place and the field, storing nothing and leaving earlier batches
intact.

Inspect AI: ``EvalLog`` as a ``.json`` log and as a ``.eval`` archive (``_journal/start.json``,
``samples/<id>_epoch_<n>.json``, ``header.json`` once finished), per ``inspect_ai/log/_log.py``.
τ-bench (v1): the list ``run.py`` dumps, ``{task_id, reward, info, traj, trial}``, with
``info.reward_info`` from ``Env.calculate_reward`` (``RewardActionInfo`` /
``RewardOutputInfo``) or ``info.error`` when the attempt raised.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.store import RunStore

EVAL = {
    "eval_id": "e1",
    "run_id": "r1",
    "created": "2025-01-01T00:00:00+00:00",
    "task": "ctf",
    "task_id": "ctf@1",
    "task_version": 0,
    "dataset": {"name": "d"},
    "model": "openai/gpt-4o",
    "config": {},
}
"""An eval spec that says nothing of what the eval planned (no ``dataset.sample_ids`` or
``samples``, no ``config.epochs``), so the samples a test writes are the whole plan; the
tests of a plan (``tests/test_imports_round26.py``) give one."""
EXPORTED = {**EVAL, "metadata": {"groundstate": {"batch_id": "b1"}}}
"""An eval spec as ``groundstate export`` writes it: only such a log's sample metadata verdicts
are read (any other log's sample metadata is the solver's to write)."""
PLAN = {"name": "plan", "steps": [], "config": {}}


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def sample(sample_id: Any, epoch: int, scores: Any, **fields: Any) -> dict[str, Any]:
    """An ``EvalSample`` with every field Inspect writes; *fields* replace or (as ``None``
    with ``drop=True``) remove some."""
    out: dict[str, Any] = {
        "id": sample_id, "epoch": epoch, "input": "q", "target": "a", "messages": [],
        "output": {"model": "gpt-4o", "choices": []}, "scores": scores, "metadata": {},
        "store": {}, "events": [], "model_usage": {}, "total_time": 1.5, "working_time": 1.0,
        "uuid": f"u-{sample_id}-{epoch}", "error": None, "error_retries": [],
        "attachments": {}, "limit": None,
    }  # fmt: skip
    out.update(fields)
    return out


def minimal(sample_id: Any, epoch: int, value: Any) -> dict[str, Any]:
    """Only the required fields (older Inspect versions omit the optional ones)."""
    return {"id": sample_id, "epoch": epoch, "input": "q", "target": "a",
            "scores": {"match": {"value": value}}}  # fmt: skip


def log(samples: Any, status: str = "success", spec: dict[str, Any] = EVAL) -> dict[str, Any]:
    return {"version": 2, "status": status, "eval": spec, "plan": PLAN, "results": None,
            "stats": {}, "error": None, "samples": samples}  # fmt: skip


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def write_eval(
    path: Path, samples: list[dict[str, Any]], *, finished: bool = True,
    spec: dict[str, Any] = EVAL,
) -> Path:  # fmt: skip
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("_journal/start.json", json.dumps({"version": 2, "eval": spec,
                                                            "plan": PLAN}))  # fmt: skip
        for s in samples:
            archive.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        if finished:
            header = log(None, spec=spec)
            del header["samples"]
            archive.writestr("header.json", json.dumps(header))
            archive.writestr("summaries.json", "[]")
    return path


class Store:
    """A store with one earlier batch in it, to show a refused import leaves it intact."""

    def __init__(self, tmp: Path) -> None:
        self.path = tmp / "s.db"
        rows = tmp / "earlier.csv"
        rows.write_text("task_id,attempt,success\nt1,0,true\nt1,1,false\n")
        self.earlier = self.imported(rows)

    def imported(self, path: Path, *extra: str) -> str:
        code, out, err = cli("import-results", str(path), "--name", "x",
                             "--store", str(self.path), *extra)  # fmt: skip
        assert code == 0, err
        return out.strip().splitlines()[-1].removeprefix("batch ")

    def batches(self) -> list[str]:
        with RunStore(self.path) as store:
            return [b.batch_id for b in store.batches()]

    def refused(self, path: Path, *extra: str) -> str:
        before = self.batches()
        code, out, err = cli("import-results", str(path), "--name", "x",
                             "--store", str(self.path), *extra)  # fmt: skip
        assert code == 2, (out, err)
        assert "Traceback" not in err and err.startswith("error: ") and len(err.splitlines()) == 1
        assert str(path) in err  # names the file
        assert self.batches() == before and self.earlier in before
        with RunStore(self.path) as store:
            assert all(store.verify(batch).ok for batch in before)
        return err

    def runs(self, batch: str) -> dict[tuple[str, int, int], tuple[str, float | None]]:
        with RunStore(self.path) as store:
            assert store.verify(batch).ok
            return {
                (r.task_id, r.attempt, r.retry): (r.terminal_reason, r.partial_score)
                for r in store.runs(batch)
            }

    def report(self, batch: str) -> dict[str, Any]:
        code, out, err = cli("report", batch, "--json", "--store", str(self.path))
        data: dict[str, Any] = json.loads(out)
        # 3: a finished batch whose every attempt is invalid has no estimate
        assert code == (3 if data["invalid_attempts"] and not data["valid_attempts"] else 0), err
        return data


# --- Inspect AI ------------------------------------------------------------------------------

VARIED = [
    sample(1, 1, {"match": {"value": "C", "answer": "x", "explanation": "ok"}}),
    sample(1, 2, {"match": {"value": "I"}}),
    sample("tâche-ü", 1, {"match": {"value": True}}),
    sample("tâche-ü", 2, {"match": {"value": 0}}),
    sample("任务 2", 1, {"match": {"value": "P"}}),
    sample("任务 2", 2, {"match": {"value": 0.25}}),
    sample("n", 1, {"match": {"value": "N"}}),
    sample("n", 2, {"match": {"value": 1.0}}),
    sample("w", 1, {"match": {"value": "yes"}}),  # words value_to_float reads
    sample("w", 2, {"match": {"value": "0.5"}}),
    sample(
        "e", 1, None, error={"message": "RateLimitError", "traceback": "", "traceback_ansi": ""}
    ),
    sample("e", 2, {"match": {"value": "C"}}, limit={"type": "message", "limit": 30}),
]
EXPECTED = {  # a file with partial rewards: every graded attempt keeps its reward
    ("1", 1, 0): ("success", 1.0),
    ("1", 2, 0): ("agent_failure/incorrect", 0.0),
    ("tâche-ü", 1, 0): ("success", 1.0),
    ("tâche-ü", 2, 0): ("agent_failure/incorrect", 0.0),
    ("任务 2", 1, 0): ("agent_failure/incorrect", 0.5),
    ("任务 2", 2, 0): ("agent_failure/incorrect", 0.25),
    ("n", 1, 0): ("agent_failure/incorrect", 0.0),
    ("n", 2, 0): ("success", 1.0),
    ("w", 1, 0): ("success", 1.0),
    ("w", 2, 0): ("agent_failure/incorrect", 0.5),
    ("e", 1, 0): ("agent_failure/crashed", 0.0),  # a valid failure without a reward earned 0
    ("e", 2, 0): ("agent_failure/step_limit", 0.0),  # the limit decides, not the score
}


@pytest.mark.parametrize("kind", ["json", "eval", "eval-unfinished", "json-minimal"])
def test_inspect_logs_in_every_form_give_the_same_verdicts(tmp_path: Path, kind: str) -> None:
    store = Store(tmp_path)
    if kind == "json":
        path = write_json(tmp_path / "log.json", log(VARIED))
    elif kind == "json-minimal":
        samples = [minimal(s["id"], s["epoch"], s["scores"]["match"]["value"])
                   for s in VARIED if s["scores"] and not s["limit"]]  # fmt: skip
        path = write_json(tmp_path / "log.json", log(samples))
    else:  # an interrupted eval has no header.json yet: the journal's start stands in
        path = write_eval(tmp_path / "log.eval", VARIED, finished=kind == "eval")
    runs = store.runs(store.imported(path))
    expected = (
        EXPECTED
        if kind != "json-minimal"
        else {key: value for key, value in EXPECTED.items() if key[0] != "e"}
    )
    assert runs == expected


def test_inspect_errors_as_invalid_change_the_denominators_not_the_successes(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path)
    path = write_json(tmp_path / "log.json", log(VARIED))
    got = store.report(store.imported(path, "--errors", "environment"))
    assert (got["valid_attempts"], got["invalid_attempts"]) == (11, 1)
    e = next(row for row in got["tasks"] if row["task_id"] == "e")
    assert (e["valid"]["n"], e["strict"]["n"], e["invalid"]) == (1, 2, 1)


def test_inspect_retried_errors_become_invalid_tries_before_the_final_one(
    tmp_path: Path,
) -> None:
    """``--retry-on-error``: Inspect keeps the earlier errors in ``error_retries`` and scores
    the last try. They are tries the invalid rate must count, not lost."""
    store = Store(tmp_path)
    retried = [{"message": "APIConnectionError", "traceback": "", "traceback_ansi": ""},
               {"message": "503 Service Unavailable"}]  # fmt: skip
    samples = [sample("a", 1, {"m": {"value": "C"}}, error_retries=retried),
               sample("a", 2, {"m": {"value": "I"}})]  # fmt: skip
    batch = store.imported(write_json(tmp_path / "log.json", log(samples)))
    assert store.runs(batch) == {
        ("a", 1, 0): ("environment_failure/harness_error", None),
        ("a", 1, 1): ("environment_failure/harness_error", None),
        ("a", 1, 2): ("success", None),
        ("a", 2, 0): ("agent_failure/incorrect", None),
    }
    got = store.report(batch)
    assert (got["valid_attempts"], got["invalid_attempts"]) == (2, 0)
    assert (got["tries"]["tries"], got["tries"]["invalid_tries"]) == (4, 2)
    assert got["success_rate"]["estimate"] == 0.5


def test_inspect_several_scorers_and_dict_values(tmp_path: Path) -> None:
    store = Store(tmp_path)
    two = [sample("a", 1, {"match": {"value": "C"}, "judge": {"value": {"acc": 1, "f1": 0.4}}}),
           sample("a", 2, {"match": {"value": "I"}})]  # fmt: skip
    path = write_json(tmp_path / "log.json", log(two))
    err = store.refused(path)
    assert "samples[0]: scores: several scorers (judge, match)" in err
    assert store.runs(store.imported(path, "--scorer", "match")) == {
        ("a", 1, 0): ("success", None),
        ("a", 2, 0): ("agent_failure/incorrect", None),
    }
    err = store.refused(path, "--scorer", "judge")
    assert "scores.judge.value: a value per key (acc, f1)" in err
    # A sample without the chosen scorer was never scored by it: invalid, not a failure.
    assert store.runs(store.imported(path, "--scorer", "judge.f1")) == {
        ("a", 1, 0): ("agent_failure/incorrect", 0.4),
        ("a", 2, 0): ("grader_failure", None),
    }


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"epoch": "one"}, "epoch: must be an integer"),
        ({"epoch": None}, "epoch: must be an integer"),
        ({"id": None}, "id: required: a task id"),
        ({"id": True}, "id: required: a task id"),
        ({"id": ""}, "id: required: a task id"),
        ({"scores": [1]}, "scores: must be an object"),
        ({"scores": {"match": "C"}}, "scores.match: must be an object"),
        ({"scores": {"match": {"value": [1, 0]}}}, "scores.match.value: a value per position"),
        ({"scores": {"match": {"value": 5}}}, "scores.match.value: 5 is not a verdict"),
        ({"scores": {"match": {"value": "maybe"}}}, "scores.match.value: 'maybe' is not a verdict"),
        ({"scores": {"match": {"value": None}}}, "scores.match.value: None is not a verdict"),
        ({"total_time": "slow"}, "total_time: must be a number"),
        ({"limit": "time"}, "limit: must be an object"),
        ({"error_retries": "boom"}, "error_retries: must be a list"),
    ],
)
def test_inspect_sample_of_the_wrong_shape_is_named(
    tmp_path: Path, change: dict[str, Any], field: str
) -> None:
    store = Store(tmp_path)
    bad = {**sample("a", 2, {"match": {"value": "C"}}), **change}
    samples = [sample("a", 1, {"match": {"value": "C"}}), bad]
    assert f"log.json:samples[1]: {field}" in store.refused(
        write_json(tmp_path / "log.json", log(samples))
    )
    err = store.refused(write_eval(tmp_path / "log.eval", samples))
    assert "log.eval!samples/" in err and f": {field}" in err


def test_damaged_inspect_files_are_named(tmp_path: Path) -> None:
    store = Store(tmp_path)
    whole = write_eval(tmp_path / "whole.eval", VARIED).read_bytes()
    for name, data in [("cut.eval", whole[: len(whole) // 2]), ("cut.log", whole[:300])]:
        path = tmp_path / name
        path.write_bytes(data)
        assert "not a readable .eval archive" in store.refused(path)
    text = json.dumps(log(VARIED))
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    assert "not valid JSON" in store.refused(cut, "--format", "inspect")
    assert "(status 'error') has none" in store.refused(
        write_json(tmp_path / "empty.json", log(None, status="error"))
    )
    assert "the log holds no samples" in store.refused(write_eval(tmp_path / "none.eval", []))
    with zipfile.ZipFile(tmp_path / "bad.eval", "w") as archive:
        archive.writestr("header.json", json.dumps({**log(None), "samples": None}))
        archive.writestr("samples/a_epoch_1.json", '{"id": "a", "epoch": 1, "scores": {')
    assert "bad.eval!samples/a_epoch_1.json: not valid JSON" in store.refused(tmp_path / "bad.eval")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as archive:
        archive.writestr("data.txt", "hello")
    assert "not an Inspect log" in store.refused(tmp_path / "other.zip")


def test_a_duplicated_sample_is_refused(tmp_path: Path) -> None:
    store = Store(tmp_path)
    path = write_json(tmp_path / "log.json", log([VARIED[0], VARIED[1], VARIED[0]]))
    assert "appears twice" in store.refused(path)


# --- τ-bench (v1) ----------------------------------------------------------------------------


def tau(task_id: Any, trial: Any, reward: Any, info: dict[str, Any] | None = None) -> Any:
    return {"task_id": task_id, "reward": reward, "info": info or {}, "traj": [], "trial": trial}


def reward_info(reward: float, **detail: Any) -> dict[str, Any]:
    """``info`` as ``Env.step`` leaves it on the final step."""
    return {"task": {"user_id": "u", "actions": [], "instruction": "i", "outputs": []},
            "source": "user", "user_cost": 0.01,
            "reward_info": {"reward": reward, "info": detail, "actions": []}}  # fmt: skip


def test_tau_bench_failures_are_attributed_by_the_checks_that_failed(tmp_path: Path) -> None:
    """τ-bench checks the database hash and then, for tasks with outputs, overwrites the
    detail with ``r_outputs``: r_outputs 1 on a failed attempt means the database was wrong."""
    store = Store(tmp_path)
    results = [
        tau(0, 0, 1.0, reward_info(1.0, r_actions=True, gt_data_hash="h")),
        tau(0, 1, 0.0, reward_info(0.0, r_actions=False, gt_data_hash="h")),
        tau(0, 2, 0.0, reward_info(0.0, r_actions=0.0, gt_data_hash="h")),
        tau(1, 0, 0.0, reward_info(0.0, r_outputs=1.0, outputs={"42": True})),
        tau(1, 1, 0.0, reward_info(0.0, r_outputs=0.0, outputs={"42": False})),
        tau(1, 2, 1.0, reward_info(1.0, r_outputs=1.0, outputs={"42": True})),
        tau(2, 0, 0.0, {"error": "litellm.RateLimitError: 429", "traceback": "Traceback ..."}),
        tau(2, 1, 0.0, {}),
        tau(2, 2, 0.5, reward_info(0.5)),
    ]
    runs = store.runs(store.imported(write_json(tmp_path / "tau.json", results)))
    assert runs == {
        ("0", 1, 0): ("success", 1.0),
        ("0", 2, 0): ("agent_failure/incorrect_state", 0.0),
        ("0", 3, 0): ("agent_failure/incorrect_state", 0.0),
        ("1", 1, 0): ("agent_failure/incorrect_state", 0.0),
        ("1", 2, 0): ("agent_failure/communication", 0.0),
        ("1", 3, 0): ("success", 1.0),
        ("2", 1, 0): ("agent_failure/crashed", 0.0),  # τ-bench scores it 0
        ("2", 2, 0): ("agent_failure/incorrect", 0.0),
        ("2", 3, 0): ("agent_failure/incorrect", 0.5),
    }


def test_tau_bench_with_errors_invalid_and_unequal_trials(tmp_path: Path) -> None:
    store = Store(tmp_path)
    results = [tau(t, i, 1.0 if (t + i) % 2 else 0.0) for t in range(6) for i in range(t % 3 + 2)]
    results.append(tau(0, 9, 0.0, {"error": "timeout"}))
    got = store.report(
        store.imported(write_json(tmp_path / "tau.json", results), "--errors", "environment")
    )
    assert (got["valid_attempts"], got["invalid_attempts"]) == (len(results) - 1, 1)
    assert got["k_limits"]["valid"]["kmax"] == 2
    assert [row["valid"]["n"] for row in got["tasks"]] == [2, 3, 4, 2, 3, 4]
    assert got["tasks"][0]["strict"]["n"] == 3


@pytest.mark.parametrize(
    ("results", "message"),
    [
        ([tau(0, 1.5, 1.0)], "tau.json:1: trial: must be an integer"),
        ([tau(0, 0, 1.0), tau(0, "x", 1.0)], "tau.json:2: trial: must be an integer"),
        ([tau(0, 0, "high")], "tau.json:1: reward: must be a number"),
        ([tau(0, 0, None)], "tau.json:1: reward: must be a number"),
        ([tau(None, 0, 1.0)], "tau.json:1: task_id: required"),
        ([tau(0, 0, 1.0), 5], "tau.json:2: result: must be an object"),
        ([tau(0, 0, 1.0, [1])], "tau.json:1: info: must be an object"),  # type: ignore[arg-type]
        ([tau(0, 0, 1.0), tau(0, 0, 0.0)], "appears twice"),
        ([], "no result rows"),
    ],
)
def test_tau_bench_malformed_results_are_named(
    tmp_path: Path, results: list[Any], message: str
) -> None:
    store = Store(tmp_path)
    assert message in store.refused(write_json(tmp_path / "tau.json", results))


def test_tau_bench_damaged_or_odd_files(tmp_path: Path) -> None:
    store = Store(tmp_path)
    text = json.dumps([tau(0, 0, 1.0), tau(0, 1, 0.0)], indent=2)
    cut = tmp_path / "cut.json"
    cut.write_text(text[:-20])
    assert "not valid JSON" in store.refused(cut)
    nan = tmp_path / "nan.json"
    nan.write_text(text.replace("0.0", "NaN"))  # Python's json writes NaN
    assert "reward: must be a finite number" in store.refused(nan)
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode())  # written by a Windows editor
    assert store.runs(store.imported(bom)) == {
        ("0", 1, 0): ("success", None),
        ("0", 2, 0): ("agent_failure/incorrect", None),
    }
    latin = tmp_path / "latin.json"
    latin.write_bytes(json.dumps([tau("tâche", 0, 1.0)], ensure_ascii=False).encode("latin-1"))
    assert "not UTF-8" in store.refused(latin, "--format", "tau-bench")


# --- reruns ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tries",
    [
        ["agent_failure", "success"],  # a failure rerun until it passes
        ["success", "agent_failure"],
        ["environment_failure/setup", "agent_failure", "success"],
        ["harness_compatibility_failure/tools", "success"],  # counts against the system
    ],
)
def test_a_rerun_of_a_valid_try_is_refused(tmp_path: Path, tries: list[str]) -> None:
    """The last try counts, so rerunning a valid try could replace a failure by a success:
    only environment and grader failures are rerun (the predeclared policy)."""
    store = Store(tmp_path)
    rows = ["task_id,attempt,retry,success,terminal_reason", "b,0,0,true,success"]
    rows += [f"a,0,{r},{str(e == 'success').lower()},{e}" for r, e in enumerate(tries)]
    path = tmp_path / "r.csv"
    path.write_text("\n".join(rows) + "\n")
    assert "retry: task 'a' attempt 1: retry" in store.refused(path)
    assert "reruns a valid try" in store.refused(path)


def test_reruns_of_invalid_tries_and_missing_earlier_tries_are_kept(tmp_path: Path) -> None:
    store = Store(tmp_path)
    rows = ["task_id,attempt,retry,success,terminal_reason",
            "a,0,1,true,success", "a,0,0,false,grader_failure",  # any row order
            "a,1,2,false,agent_failure",  # an export keeps only the counted try
            "a,2,0,false,environment_failure/setup",
            "a,2,1,false,environment_failure/reset"]  # fmt: skip
    path = tmp_path / "r.csv"
    path.write_text("\n".join(rows) + "\n")
    got = store.report(store.imported(path))
    assert (got["valid_attempts"], got["invalid_attempts"]) == (2, 1)
    assert (got["tries"]["tries"], got["tries"]["invalid_tries"]) == (5, 3)


def test_a_column_named_twice_is_refused(tmp_path: Path) -> None:
    """Two ``success`` cells that disagree: neither may silently count."""
    store = Store(tmp_path)
    path = tmp_path / "r.csv"
    path.write_text("task_id,attempt,success,cost,success\na,0,true,0.1,false\n")
    assert "r.csv:1: success: the column appears twice in the header" in store.refused(path)
    path.write_text("task_id,attempt,success,,\na,0,true,,\n")  # blank names: ignored columns
    assert store.imported(path)
