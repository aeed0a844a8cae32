"""Fourth audit of ``import-results``: other harnesses' files as real-world writers and
damaged copies leave them. Every malformed file is one line naming the file, the record and
the field (exit 2), and leaves the store exactly as it was; every valid one imports to the
verdicts and statistics its own harness reports.

Classes: keys given twice in one JSON object, nesting too deep to read, text that cannot be
stored (lone surrogates), integers beyond what JSON readers hold exactly, negative costs and
durations, groundstate's own verdicts read back from an Inspect log by laxer rules than the row
format's, oversized archive members, unfinished Inspect logs, the same file imported twice, an
import killed half-way, and the statistics recomputed as each harness computes them.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import zipfile
from math import comb
from pathlib import Path
from typing import Any

import pytest

from groundstate.importers import batch as import_batch
from groundstate.importers import import_file, inspect_log
from groundstate.store import RunStore
from tests.test_imports_formats import (
    EVAL,
    EXPORTED,
    Store,
    cli,
    log,
    sample,
    write_eval,
    write_json,
)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def tau_result(task_id: Any, trial: Any, reward: Any, **info: Any) -> dict[str, Any]:
    return {"task_id": task_id, "reward": reward, "info": info, "traj": [], "trial": trial}


def tau2_file(simulations: list[Any]) -> dict[str, Any]:
    return {"timestamp": "t", "info": {"max_steps": 50}, "tasks": [], "simulations": simulations}


def simulation(task_id: Any, trial: Any, reward: Any, **fields: Any) -> dict[str, Any]:
    out = {
        "id": f"sim-{task_id}-{trial}", "task_id": task_id, "trial": trial,
        "termination_reason": "user_stop", "reward_info": {"reward": reward},
        "agent_cost": 0.01, "duration": 2.0, "messages": [],
    }  # fmt: skip
    out.update(fields)
    return out


# --- keys given twice ------------------------------------------------------------------------


def _raw(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


GOOD_SAMPLE = json.dumps(sample("a", 1, {"m": {"value": "C"}}))


ROW = '"task_id":"t","attempt":1'
TAU = '"task_id":1,"trial":0'
SIM = '"id":"s","trial":0,"termination_reason":"user_stop"'
SAMPLES = '{"version":2,"status":"success","eval":{},"samples":[{"epoch":1,'


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("r.jsonl", f'{{{ROW},"success":true,"success":false}}', "r.jsonl:1: success"),
        (
            "r2.jsonl",
            f'{{{ROW},"success":true}}\n{{"task_id":"t","task_id":"u","attempt":2,"success":1}}',
            "r2.jsonl:2: task_id",
        ),
        (
            "tau.json",
            f'[{{{TAU},"reward":1.0,"info":{{}}}},{{{TAU},"reward":1,"reward":0,"info":{{}}}}]',
            "tau.json: [1].reward",
        ),
        (
            "tau_info.json",
            f'[{{{TAU},"reward":0.0,"info":{{"error":null,"error":"boom"}}}}]',
            "tau_info.json: [0].info.error",
        ),
        (
            "tau2.json",
            f'{{"simulations":[{{{SIM},"task_id":"1","reward_info":{{"reward":0,"reward":1}}}}]}}',
            "tau2.json: simulations[0].reward_info.reward",
        ),
        (
            "log.json",
            SAMPLES + '"id":"a","scores":{"m":{"value":"I","value":"C"}}}]}',
            "log.json: samples[0].scores.m.value",
        ),
    ],
)
def test_a_key_given_twice_is_refused_naming_where(
    store: Store, tmp_path: Path, name: str, text: str, where: str
) -> None:
    """Python's json keeps the last of two equal keys: ``success`` true then false imported as
    a failure, a reward 1 then 0 as 0, without a word. A CSV naming a column twice is already
    refused; the JSON forms are now too, naming the record and the key."""
    err = store.refused(_raw(tmp_path / name, text))
    assert where in err and "appears twice" in err


def test_a_key_given_twice_in_an_eval_member_names_the_member(store: Store, tmp_path: Path) -> None:
    path = write_eval(tmp_path / "log.eval", [sample("a", 1, {"m": {"value": "C"}})])
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("samples/b_epoch_1.json", GOOD_SAMPLE[:-1] + ', "epoch": 2}')
    err = store.refused(path)
    assert "log.eval!samples/b_epoch_1.json: epoch: the key appears twice" in err


def test_equal_keys_in_different_objects_are_fine(store: Store, tmp_path: Path) -> None:
    path = _raw(
        tmp_path / "ok.json",
        json.dumps([tau_result(1, 0, 1.0, reward_info={"reward": 1.0}), tau_result(1, 1, 0.0)]),
    )
    batch = store.imported(path)
    assert store.runs(batch) == {
        ("1", 1, 0): ("success", None),
        ("1", 2, 0): ("agent_failure/incorrect", None),
    }


# --- nesting too deep ------------------------------------------------------------------------

DEEP = "[" * 50_000 + "]" * 50_000


@pytest.mark.parametrize(
    ("name", "text", "extra"),
    [
        ("deep.jsonl", '{"task_id":"t","attempt":1,"success":true,"x":' + DEEP + "}\n", ()),
        ("deep.json", "[" + DEEP + "]", ("--format", "tau-bench")),
        ("deep2.json", '{"simulations":[' + DEEP + "]}", ()),
        ("deep.csv", 'task_id,attempt,success,slice_labels\nt,1,true,"' + DEEP + '"\n', ()),
    ],
)
def test_nesting_too_deep_to_read_is_one_line(
    store: Store, tmp_path: Path, name: str, text: str, extra: tuple[str, ...]
) -> None:
    """A ``RecursionError`` traceback (exit 1) before; now one line, exit 2."""
    err = store.refused(_raw(tmp_path / name, text), *extra)
    assert "nested too deeply" in err


def test_nesting_too_deep_in_an_eval_member(store: Store, tmp_path: Path) -> None:
    path = write_eval(tmp_path / "deep.eval", [sample("a", 1, {"m": {"value": "C"}})])
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("samples/b_epoch_1.json", DEEP)
    assert "deep.eval!samples/b_epoch_1.json: not readable JSON: nested too deeply" in (
        store.refused(path)
    )


# --- text that cannot be stored --------------------------------------------------------------

LONE = "\\ud800"  # as JSON writes it: legal JSON, no valid Unicode


@pytest.mark.parametrize(
    ("name", "text", "field"),
    [
        ("id.jsonl", f'{{"task_id":"t{LONE}","attempt":1,"success":true}}', "task_id"),
        (
            "why.jsonl",
            f'{{{ROW},"success":0,"terminal_reason":"agent_failure/{LONE}"}}',
            "terminal_reason",
        ),
        ("label.jsonl", f'{{"task_id":"t","attempt":"trial-{LONE}","success":true}}', "attempt"),
        ("slice.jsonl", f'{{{ROW},"success":true,"slice_labels":["a{LONE}"]}}', "slice_labels"),
        ("slice2.jsonl", f'{{{ROW},"success":true,"slice_labels":"a;b{LONE}"}}', "slice_labels"),
        ("column.jsonl", f'{{{ROW},"success":true,"note{LONE}":1}}', "column name"),
        ("tau.json", f'[{{"task_id":"t{LONE}","trial":0,"reward":1.0,"info":{{}}}}]', "task_id"),
        (
            "tau2.json",
            f'{{"simulations":[{{{SIM},"task_id":"{LONE}","reward_info":null}}]}}',
            "task_id",
        ),
        ("log.json", SAMPLES + f'"id":"a{LONE}","scores":{{}}}}]}}', "id"),
    ],
)
def test_text_that_cannot_be_stored_is_refused_naming_the_field(
    store: Store, tmp_path: Path, name: str, text: str, field: str
) -> None:
    """A lone surrogate in a task id, reason, label, slice or column name crashed the store
    with a ``UnicodeEncodeError`` traceback (exit 1)."""
    err = store.refused(_raw(tmp_path / name, text))
    assert f": {field}: not valid Unicode text" in err


def test_surrogate_pairs_are_text_and_import(store: Store, tmp_path: Path) -> None:
    path = _raw(
        tmp_path / "emoji.jsonl", '{"task_id":"t\\ud83d\\ude00","attempt":1,"success":true}\n'
    )
    assert store.runs(store.imported(path)) == {("t\U0001f600", 1, 0): ("success", None)}


# --- integers beyond what JSON holds exactly -------------------------------------------------


HUGE = 99999999999999999999


@pytest.mark.parametrize(
    ("name", "text", "field"),
    [
        (
            "a.jsonl",
            f'{{{ROW},"success":1}}\n{{"task_id":"t","attempt":{2**63},"success":1}}',
            "attempt",
        ),
        ("b.jsonl", f'{{{ROW},"success":true,"retry":{HUGE}}}', "retry"),
        ("c.csv", f"task_id,attempt,success,task_revision\nt,1,true,{HUGE}\n", "task_revision"),
        ("d.csv", f"task_id,attempt,success,horizon\nt,1,true,{2**64 + 1}\n", "horizon"),
        ("e.csv", f"task_id,attempt,success\nt,-{HUGE},true\n", "attempt"),
        ("tau.json", f'[{{"task_id":1,"trial":{HUGE},"reward":1.0,"info":{{}}}}]', "trial"),
        ("log.json", SAMPLES.replace(":1,", f":{HUGE},") + '"id":"a","scores":{}}]}', "epoch"),
    ],
)
def test_integers_beyond_two_to_the_53_are_refused(
    store: Store, tmp_path: Path, name: str, text: str, field: str
) -> None:
    """An attempt, retry, revision or horizon beyond 64 bits was an ``OverflowError``
    traceback, or was stored and labelled ``attempt = label - 99999999999999999999998``."""
    err = store.refused(_raw(tmp_path / name, text))
    assert f": {field}: must be an integer between -2^53 and 2^53" in err


def test_the_largest_exact_integers_still_import(store: Store, tmp_path: Path) -> None:
    big = 2**53
    path = _raw(
        tmp_path / "big.jsonl",
        f'{{"task_id":"t","attempt":{big},"success":true}}\n'
        f'{{"task_id":"t","attempt":"{big - 1}","success":false}}\n',
    )
    assert store.runs(store.imported(path)) == {
        ("t", 1, 0): ("agent_failure", None),
        ("t", 2, 0): ("success", None),
    }


# --- negative costs and durations ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data", "field"),
    [
        ("c.jsonl", {"task_id": "t", "attempt": 1, "success": True, "cost": -0.5}, "cost"),
        ("l.jsonl", {"task_id": "t", "attempt": 1, "success": True, "latency": -2}, "latency"),
        ("tau2.json", tau2_file([simulation("1", 0, 1.0, agent_cost=-1.0)]), "agent_cost"),
        ("tau2b.json", tau2_file([simulation("1", 0, 1.0, duration=-3.0)]), "duration"),
        ("log.json", log([sample("a", 1, {"m": {"value": "C"}}, total_time=-1.5)]), "total_time"),
    ],
)
def test_a_negative_cost_or_duration_is_refused(
    store: Store, tmp_path: Path, name: str, data: Any, field: str
) -> None:
    """A cost of -0.5 was stored and lowered the batch's mean cost per attempt and per
    success below what was spent."""
    text = json.dumps(data) + "\n" if name.endswith(".jsonl") else json.dumps(data)
    err = store.refused(_raw(tmp_path / name, text))
    assert f": {field}: must not be negative" in err


def test_zero_and_negative_zero_costs_import(store: Store, tmp_path: Path) -> None:
    path = _raw(
        tmp_path / "z.jsonl",
        '{"task_id":"t","attempt":1,"success":true,"cost":-0.0,"latency":0}\n',
    )
    assert store.report(store.imported(path))["summary"]["cost"]["mean"] == 0.0


# --- groundstate's own verdicts in an Inspect log ---------------------------------------------


def _own(**fields: Any) -> dict[str, Any]:
    base = {"attempt": 1, "success": True, "terminal_reason": "success", "cost": 0.1,
            "latency": 1.0, "partial_score": None, "retry": 0, "slice_labels": [],
            "task_revision": 0, "weight": 1.0, "horizon": None, "run_id": "r"}  # fmt: skip
    return {**base, **fields}


@pytest.mark.parametrize(
    ("own", "field"),
    [
        (_own(weight=-1), "weight"),
        (_own(weight=0), "weight"),
        (_own(retry=-3), "retry"),
        (_own(task_revision=-2), "task_revision"),
        (_own(cost=-1), "cost"),
        (_own(horizon=0), "horizon"),
        (_own(partial_score=1.5), "partial_score"),
        (_own(slice_labels={"a": 1}), "slice_labels"),
        (_own(attempt=True), "attempt"),
        (_own(success="yes please"), "success"),
        (_own(success=False, terminal_reason="success"), "terminal_reason"),
    ],
)
def test_own_verdicts_read_back_by_the_row_formats_rules(
    store: Store, tmp_path: Path, own: dict[str, Any], field: str
) -> None:
    """``export --format inspect`` keeps each run's verdict in the sample's metadata; reading
    it back took a weight of -1, a retry of -3 or a revision of -2 as given (the row format
    refuses each)."""
    data = log([sample("a", 1, {"m": {"value": "C"}}, metadata={"groundstate": own})],
               spec=EXPORTED)  # fmt: skip
    err = store.refused(write_json(tmp_path / "own.json", data))
    assert f"own.json:samples[0]: metadata.groundstate: {field}:" in err


def test_own_verdicts_that_are_valid_are_kept(store: Store, tmp_path: Path) -> None:
    samples = [
        sample("a", 1, {"m": {"value": "I"}}, metadata={"groundstate": _own()}),
        sample("a", 2, {"m": {"value": "C"}}, metadata={"groundstate": _own(
            attempt=2, success=False, terminal_reason="environment_failure/x")}),
    ]  # fmt: skip
    batch = store.imported(write_json(tmp_path / "own.json", log(samples, spec=EXPORTED)))
    assert store.runs(batch) == {
        ("a", 1, 0): ("success", None),
        ("a", 2, 0): ("environment_failure/x", None),
    }
    assert store.report(batch)["success_rate"]["estimate"] == 1.0


# --- oversized archive members ---------------------------------------------------------------


def test_an_archive_member_over_the_limit_is_not_read(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A zip bomb (a sample declaring gigabytes) was read whole into memory."""
    monkeypatch.setattr(inspect_log, "MEMBER_LIMIT", 4096)
    path = write_eval(tmp_path / "big.eval", [sample("a", 1, {"m": {"value": "C"}})])
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "samples/b_epoch_1.json", GOOD_SAMPLE[:-1] + ', "pad": "' + " " * 9000 + '"}'
        )
    assert "big.eval!samples/b_epoch_1.json: " in store.refused(path)
    assert "over the 4096 read" in store.refused(path)


# --- choosing a scorer no sample has; logs Inspect did not finish ----------------------------


def test_a_scorer_no_sample_has_is_refused(store: Store, tmp_path: Path) -> None:
    """``--scorer acuracy`` (a typo) made every sample a ``grader_failure``: the whole batch
    invalid, exit 0."""
    scores = {"match": {"value": "C"}, "judge": {"value": {"a": 1, "b": 0}}}
    path = write_json(tmp_path / "log.json", log([sample("a", 1, scores)]))
    assert "--scorer: no sample has 'macth' (they have judge, match)" in store.refused(
        path, "--scorer", "macth"
    )
    assert "no sample has 'judg.a'" in store.refused(path, "--scorer", "judg.a")
    assert store.runs(store.imported(path, "--scorer", "judge.a")) == {
        ("a", 1, 0): ("success", None)
    }


def test_a_scorer_some_samples_lack_is_a_grader_failure_for_those(
    store: Store, tmp_path: Path
) -> None:
    samples = [sample("a", 1, {"m": {"value": "C"}, "n": {"value": "I"}}),
               sample("b", 1, {"n": {"value": "C"}})]  # fmt: skip
    batch = store.imported(write_json(tmp_path / "log.json", log(samples)), "--scorer", "m")
    assert store.runs(batch) == {
        ("a", 1, 0): ("success", None),
        ("b", 1, 0): ("grader_failure", None),
    }


@pytest.mark.parametrize("status", ["cancelled", "error", "started"])
def test_an_unfinished_inspect_log_is_imported_with_a_warning(
    store: Store, tmp_path: Path, status: str
) -> None:
    """A cancelled or failed eval holds only the samples it finished: imported silently, a
    task could look as if it had been run fewer times by design."""
    path = write_json(tmp_path / "log.json", log([sample("a", 1, {"m": {"value": "C"}})], status))
    code, _, err = cli("import-results", str(path), "--name", "x", "--store", str(store.path))
    assert code == 0
    assert f"warning: {path}: the log's status is {status!r}, not 'success'" in err


def test_an_eval_archive_without_its_header_warns_as_unfinished(
    store: Store, tmp_path: Path
) -> None:
    path = write_eval(
        tmp_path / "log.eval", [sample("a", 1, {"m": {"value": "C"}})], finished=False
    )
    code, _, err = cli("import-results", str(path), "--name", "x", "--store", str(store.path))
    assert code == 0 and "status is 'started'" in err
    finished = write_eval(tmp_path / "done.eval", [sample("a", 1, {"m": {"value": "C"}})])
    code, _, err = cli("import-results", str(finished), "--name", "x", "--store", str(store.path))
    assert code == 0 and err == ""


def test_unstorable_text_in_what_a_file_says_about_the_system_is_escaped(
    store: Store, tmp_path: Path
) -> None:
    """A lone surrogate in the log's model name crashed serialising the batch (exit 1)."""
    data = log([sample("a", 1, {"m": {"value": "C"}})])
    data["eval"] = {**EVAL, "model": "openai/gpt-\ud800"}
    path = _raw(tmp_path / "log.json", json.dumps(data))  # escaped: legal JSON
    batch = store.imported(path)
    with RunStore(store.path) as opened:
        assert opened.batch(batch).system_spec["model"] == "openai/gpt-\\ud800"


def test_a_batch_name_that_is_not_text_is_a_usage_error(store: Store, tmp_path: Path) -> None:
    path = _raw(tmp_path / "r.csv", "task_id,attempt,success\nt,1,true\n")
    code, _, err = cli("import-results", str(path), "--name", "x\udcff", "--store", str(store.path))
    assert code == 2 and "--name" in err and "UTF-8" in err and "Traceback" not in err


# --- the same file imported twice ------------------------------------------------------------


def _tau_file(tmp_path: Path) -> Path:
    return write_json(
        tmp_path / "tau.json",
        [tau_result(t, i, float((t + i) % 2)) for t in range(3) for i in range(2)],
    )


def _tau2(tmp_path: Path) -> Path:
    return write_json(
        tmp_path / "tau2.json", tau2_file([simulation("1", 0, 1.0), simulation("2", 0, 0.5)])
    )


def _inspect(tmp_path: Path) -> Path:
    return write_eval(
        tmp_path / "log.eval", [sample("a", e, {"m": {"value": "CI"[e - 1]}}) for e in (1, 2)]
    )


def _rows(tmp_path: Path) -> Path:
    return _raw(
        tmp_path / "rows.csv", "task_id,attempt,success,cost\nt,0,true,0.5\nt,1,false,0.25\n"
    )


@pytest.mark.parametrize("write", [_tau_file, _tau2, _inspect, _rows])
def test_importing_the_same_file_again_stores_nothing_new(
    store: Store, tmp_path: Path, write: Any
) -> None:
    """Each repeat was a second batch of the same attempts: ``batches`` listed it twice and
    ``compare`` took the copy for another system."""
    path = write(tmp_path)
    first = store.imported(path)
    before = store.batches()
    code, out, err = cli(
        "import-results", str(path), "--name", "x", "--store", str(store.path), "--json"
    )
    assert code == 0, err
    again = json.loads(out)
    assert again["batch_id"] == first and again["already_stored"] is True
    assert store.batches() == before
    code, out, _ = cli("import-results", str(path), "--name", "x", "--store", str(store.path))
    assert "already imported" in out and out.strip().endswith(f"batch {first}")


def test_another_name_other_options_or_other_content_is_a_new_batch(
    store: Store, tmp_path: Path
) -> None:
    path = _tau_file(tmp_path)
    first = store.imported(path)
    renamed = cli("import-results", str(path), "--name", "y", "--store", str(store.path))
    assert renamed[0] == 0 and "already" not in renamed[1]
    other_policy = store.imported(path, "--errors", "environment")
    assert other_policy != first
    path.write_text(path.read_text().replace("1.0", "0.0", 1))
    assert store.imported(path) not in (first, other_policy)
    assert len(store.batches()) == 5  # the earlier one, and four imports


def test_a_new_batch_id_never_takes_an_existing_one(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A random id equal to a stored batch's made the store refuse the batch, reported as
    "an attempt appears twice"."""
    taken = iter([store.earlier, store.earlier, "0123456789ab"])
    monkeypatch.setattr(
        import_batch.secrets,
        "token_hex",
        lambda n=16: next(taken) if n == 6 else os.urandom(n).hex(),
    )
    with RunStore(store.path) as opened:
        report = import_file(_rows(tmp_path), "x", opened)
    assert report.batch.batch_id == "0123456789ab"
    assert store.runs("0123456789ab") == {
        ("t", 1, 0): ("success", None),
        ("t", 2, 0): ("agent_failure", None),
    }


# --- an import killed half-way ---------------------------------------------------------------

KILLED_HALF_WAY = """
import os, signal, sys
from groundstate.store import RunStore
from groundstate.cli import main

stored = RunStore.add_batch_with_runs

def add(self, batch, runs, chunk=10_000, *, seal=None):
    def dying():
        for index, run in enumerate(runs):
            if index == 25:  # two chunks of ten written in the open transaction
                os.kill(os.getpid(), signal.SIGKILL)
            yield run
    return stored(self, batch, dying(), 10, seal=seal)

RunStore.add_batch_with_runs = add
main(["import-results", sys.argv[1], "--name", "x", "--store", sys.argv[2]])
"""


def test_an_import_killed_half_way_leaves_the_store_as_it_was(store: Store, tmp_path: Path) -> None:
    rows = "".join(f"t{i % 7},{i // 7},{'true' if i % 3 else 'false'}\n" for i in range(70))
    path = _raw(tmp_path / "many.csv", "task_id,attempt,success\n" + rows)
    before = store.batches()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", KILLED_HALF_WAY, str(path), str(store.path)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == -9, done.stderr
    assert store.batches() == before
    with RunStore(store.path) as opened:
        assert all(opened.verify(b).ok for b in before)
        assert len(list(opened.runs(store.earlier))) == 2
    batch = store.imported(path)  # and the same file imports whole afterwards
    assert len(store.runs(batch)) == 70


# --- the statistics each harness reports, recomputed --------------------------------------------


def _tau_pass_hat(results: list[dict[str, Any]], k: int) -> float:
    """τ-bench's own ``display_metrics``: per task c successes (reward within 1e-6 of 1) of
    ``num_trials`` (the distinct trials in the file), pass^k = mean C(c, k) / C(n, k)."""
    trials = len({r["trial"] for r in results})
    successes: dict[Any, int] = {}
    for r in results:
        successes[r["task_id"]] = successes.get(r["task_id"], 0) + (
            1 - 1e-6 <= r["reward"] <= 1 + 1e-6
        )
    return sum(comb(c, k) / comb(trials, k) for c in successes.values()) / len(successes)


def test_tau_bench_statistics_are_tau_benchs_own(store: Store, tmp_path: Path) -> None:
    """Rewards near 1 (τ-bench's tolerance), exactly 0, -0.0, errors scored 0: pass^k and the
    average reward as τ-bench's ``run.py`` prints them."""
    rewards = [1.0, 0.9999995, 1.0000004, 0.0, -0.0, 0.999, 1.0, 0.0]
    results = [
        tau_result(t, i, rewards[(3 * t + i) % len(rewards)]) for t in range(6) for i in range(4)
    ]
    results[5] = tau_result(1, 1, 0.0, error="RateLimitError")
    got = store.report(store.imported(write_json(tmp_path / "tau.json", results)))
    for k in (1, 2, 3, 4):
        assert got["pass_hat_k"][str(k)]["estimate"] == pytest.approx(
            _tau_pass_hat(results, k), abs=1e-12
        )
    mean_reward = sum(r["reward"] for r in results) / len(results)
    assert got["partial_score"]["estimate"] == pytest.approx(mean_reward, abs=1e-6)


def test_partial_scores_are_the_mean_reward_the_other_harness_reports(
    store: Store, tmp_path: Path
) -> None:
    """A file with partial rewards kept them only on the partially rewarded attempts, so the
    batch's partial score averaged 0.5 and 0.25 and left out every 0 and 1: 0.375 where
    Inspect's accuracy (and τ²'s average reward) is 0.4375."""
    samples = [
        sample(t, 1, {"m": {"value": v}})
        for t, v in zip("abcd", ["C", "I", "P", 0.25], strict=True)
    ]
    inspect = store.report(store.imported(write_json(tmp_path / "log.json", log(samples))))
    assert inspect["success_rate"]["estimate"] == 0.25
    assert inspect["partial_score"]["estimate"] == pytest.approx((1 + 0 + 0.5 + 0.25) / 4)
    sims = [simulation(t, 0, r) for t, r in zip("abcd", [1.0, 0.0, 0.5, 0.25], strict=True)]
    sims.append(simulation("e", 0, 0.0, termination_reason="user_error"))  # invalid
    tau2 = store.report(store.imported(write_json(tmp_path / "tau2.json", tau2_file(sims))))
    assert tau2["partial_score"]["estimate"] == pytest.approx(0.4375)
    assert tau2["invalid_as_failure"]["partial_score"]["estimate"] == pytest.approx(1.75 / 5)


def test_files_without_partial_rewards_keep_no_partial_score(store: Store, tmp_path: Path) -> None:
    samples = [sample(t, 1, {"m": {"value": v}}) for t, v in zip("ab", ["C", "I"], strict=True)]
    got = store.report(store.imported(write_json(tmp_path / "log.json", log(samples))))
    assert got["partial_score"] is None


# --- tables as spreadsheets and data-frame libraries write them -------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "task_id;attempt;success;cost\nt;0;true;0.5\nt;1;false;\nu;0;1;\n",  # a ';' locale
        "task_id\tattempt\tsuccess\nt\t0\ttrue\nt\t1\tfalse\nu\t0\t1\n",  # a "text" export
        "task_id,attempt,success\nt,0,true\nt,1,false\nu,0,1\n,,\n,,\n",  # trailing empty rows
        "\n\ntask_id,attempt,success\nt,0,true\n\nt,1,false\nu,0,1\n",  # blank lines
        "task_id,attempt,success\r\nt,0,true\r\nt,1,false\r\nu,0,1\r\n",
        "task_id,attempt,success\nt,0.0,1.0\nt,1.0,0.0\nu,0.0,1.0\n",  # integers kept as floats
    ],
)
def test_spreadsheet_and_data_frame_variants_import_as_meant(
    store: Store, tmp_path: Path, text: str
) -> None:
    """Each was refused ("task_id: required, and missing or blank", "more cells than the
    header has columns", "Input should be a valid boolean ... got '1.0'")."""
    path = _raw(tmp_path / "r.csv", text)
    assert store.runs(store.imported(path)) == {
        ("t", 1, 0): ("success", None),
        ("t", 2, 0): ("agent_failure", None),
        ("u", 1, 0): ("success", None),
    }


def test_a_semicolon_file_keeps_its_line_numbers_in_errors(store: Store, tmp_path: Path) -> None:
    path = _raw(tmp_path / "r.csv", "\ntask_id;attempt;success\nt;0;true\nt;1;maybe\n")
    assert "r.csv:4: success: Input should be a valid boolean" in store.refused(path)


def test_an_unnamed_column_is_named_in_the_warning(store: Store, tmp_path: Path) -> None:
    path = _raw(tmp_path / "r.csv", "task_id,attempt,success,\nt,0,true,x\n")
    code, _, err = cli("import-results", str(path), "--name", "x", "--store", str(store.path))
    assert code == 0 and "ignored columns no field reads: (unnamed column 4)" in err


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ([1.0, 2.0], {("t", 1, 0), ("t", 2, 0)}),
        (["1.0", "2"], {("t", 1, 0), ("t", 2, 0)}),
        (["0", "2.0"], {("t", 1, 0), ("t", 3, 0)}),  # integers: gaps kept
        (["1e400", "x"], {("t", 1, 0), ("t", 2, 0)}),  # text labels
    ],
)
def test_integral_float_labels_are_integers(
    store: Store, tmp_path: Path, labels: list[Any], expected: set[Any]
) -> None:
    text = "".join(
        json.dumps({"task_id": "t", "attempt": label, "success": True}) + "\n" for label in labels
    )
    assert set(store.runs(store.imported(_raw(tmp_path / "r.jsonl", text)))) == expected


def test_the_same_attempt_as_1_and_1_0_is_refused(store: Store, tmp_path: Path) -> None:
    """ "1" and "1.0" were two attempts (text labels), one success and one failure."""
    path = _raw(tmp_path / "r.csv", "task_id,attempt,success\nt,1,true\nt,1.0,false\n")
    assert "r.csv:3: attempt: task 't' attempt 1 appears twice" in store.refused(path)


# --- Inspect logs of other versions and settings ---------------------------------------------


def test_an_older_log_with_one_score_per_sample_imports(store: Store, tmp_path: Path) -> None:
    """Inspect's first log format has ``score`` (one) where later ones have ``scores``: every
    sample was a ``grader_failure`` (all invalid, exit 0)."""
    samples = [
        {"id": "a", "epoch": 1, "input": "q", "target": "t", "score": {"value": "C"}},
        {"id": "a", "epoch": 2, "input": "q", "target": "t", "score": {"value": "I"}},
    ]
    batch = store.imported(write_json(tmp_path / "old.json", log(samples)))
    assert store.runs(batch) == {
        ("a", 1, 0): ("success", None),
        ("a", 2, 0): ("agent_failure/incorrect", None),
    }
    both = [{**samples[0], "scores": {"m": {"value": "I"}}}]
    err = store.refused(write_json(tmp_path / "both.json", log(both)))
    assert "both.json:samples[0]: score: given beside scores" in err


def test_a_log_that_was_never_scored_is_refused(store: Store, tmp_path: Path) -> None:
    """``inspect eval --no-score`` writes samples without scores: each was a grader failure,
    a batch with no valid attempt, exit 0."""
    samples = [
        sample("a", 1, None),
        sample("b", 1, {}),
        sample("c", 1, None, error={"message": "x"}),
    ]
    err = store.refused(write_json(tmp_path / "log.json", log(samples)))
    assert "log.json: scores: no sample has a score (2 ended without an error or a limit)" in err


def test_a_log_whose_samples_all_errored_or_hit_limits_imports(
    store: Store, tmp_path: Path
) -> None:
    samples = [
        sample("a", 1, None, error={"message": "RateLimitError"}),
        sample("b", 1, None, limit={"type": "message", "limit": 5}),
    ]
    assert store.runs(store.imported(write_json(tmp_path / "log.json", log(samples)))) == {
        ("a", 1, 0): ("agent_failure/crashed", None),
        ("b", 1, 0): ("agent_failure/step_limit", None),
    }


def test_inspect_accuracy_over_epochs_is_the_success_rate(store: Store, tmp_path: Path) -> None:
    """Inspect reduces each sample's epochs by their mean and averages the samples: with C/I
    scores that is our task-averaged success rate, also with unequal epochs."""
    grades = {"a": "CCI", "b": "II", "c": "CICC", "d": "C", "e": "ICI", "f": "CC"}
    samples = [
        sample(task, epoch, {"m": {"value": grade}})
        for task, row in grades.items()
        for epoch, grade in enumerate(row, start=1)
    ]
    got = store.report(store.imported(write_json(tmp_path / "log.json", log(samples))))
    accuracy = sum(row.count("C") / len(row) for row in grades.values()) / len(grades)
    assert got["success_rate"]["estimate"] == pytest.approx(accuracy, abs=1e-12)


def test_a_folder_is_named_as_one(store: Store, tmp_path: Path) -> None:
    """τ²'s "dir" format is a folder; giving the folder said "no such file"."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "results.json").write_text("{}")
    assert "run: a folder, not a results file (give its results.json)" in store.refused(folder)


def test_samples_missing_from_a_finished_log_are_warned_of(store: Store, tmp_path: Path) -> None:
    """A finished archive whose header counts more completed samples than it holds (members
    lost in a copy or removed) imported the rest without a word."""
    path = write_eval(tmp_path / "log.eval", [sample("a", 1, {"m": {"value": "C"}})])
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    header = json.loads(members["header.json"])
    header["results"] = {"total_samples": 3, "completed_samples": 3, "scores": []}
    members["header.json"] = json.dumps(header).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    code, _, err = cli("import-results", str(path), "--name", "x", "--store", str(store.path))
    assert code == 0
    assert "results.completed_samples is 3 but the log holds 1 sample" in err


def test_integer_columns_written_as_floats_are_read(store: Store, tmp_path: Path) -> None:
    """A data-frame library writes an integer column with blank cells as floats (``3.0``):
    horizon, retry and revision were refused ("must be an integer, got '3.0'")."""
    text = (
        "task_id,attempt,success,terminal_reason,retry,task_revision,horizon\n"
        "t,0.0,0.0,environment_failure,0.0,2.0,3.0\n"
        "t,0.0,1.0,success,1.0,,\n"
        "u,0.0,1.0,success,,,\n"
    )
    batch = store.imported(_raw(tmp_path / "r.csv", text))
    assert store.runs(batch) == {
        ("t", 1, 0): ("environment_failure", None),
        ("t", 1, 1): ("success", None),
        ("u", 1, 0): ("success", None),
    }
    with RunStore(store.path) as opened:
        info = opened.batch(batch)
    assert (info.task_revisions["t"], info.task_horizons["t"]) == (2, 3)
    half = _raw(tmp_path / "h.csv", "task_id,attempt,success,horizon\nt,0,1,2.5\n")
    assert "h.csv:2: horizon: must be an integer, got 2.5" in store.refused(half)
    tau = write_json(tmp_path / "tau.json", [tau_result(1, 0.0, 1.0), tau_result(1, 1.0, 0.0)])
    assert set(store.runs(store.imported(tau))) == {("1", 1, 0), ("1", 2, 0)}


def test_a_corrupt_batch_record_elsewhere_does_not_stop_an_import(
    store: Store, tmp_path: Path
) -> None:
    """Looking for an earlier import of the same file reads every batch record; one corrupt
    record must not refuse an import that does not need it."""
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE batches SET record = '{' WHERE batch_id = ?", (store.earlier,))
    path = _raw(tmp_path / "r.csv", "task_id,attempt,success\nt,1,true\n")
    code, out, err = cli("import-results", str(path), "--name", "y", "--store", str(store.path))
    assert code == 0, err
    assert store.runs(out.strip().splitlines()[-1].removeprefix("batch ")) == {
        ("t", 1, 0): ("success", None)
    }
