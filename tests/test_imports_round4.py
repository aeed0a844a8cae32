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
import zipfile
from pathlib import Path
from typing import Any

import pytest

from groundstate.importers import inspect_log
from tests.test_imports_formats import EVAL, PLAN, Store, log, sample, write_eval, write_json


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
            f'{{"simulations":[{{{SIM},"task_id":"{LONE}","reward_info":{{}}}}]}}',
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
    data = log([sample("a", 1, {"m": {"value": "C"}}, metadata={"groundstate": own})])
    err = store.refused(write_json(tmp_path / "own.json", data))
    assert f"own.json:samples[0]: metadata.groundstate: {field}:" in err


def test_own_verdicts_that_are_valid_are_kept(store: Store, tmp_path: Path) -> None:
    samples = [
        sample("a", 1, {"m": {"value": "I"}}, metadata={"groundstate": _own()}),
        sample("a", 2, {"m": {"value": "C"}}, metadata={"groundstate": _own(
            attempt=2, success=False, terminal_reason="environment_failure/x")}),
    ]  # fmt: skip
    batch = store.imported(write_json(tmp_path / "own.json", log(samples)))
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


_ = (EVAL, PLAN)
