"""Twenty-fourth round, imports: a value read past is never held whole, and a Harbor result is
read value by value.

- A Harbor trial's ``result.json`` was read whole (and, given alone, read whole a second time
  to tell its format): an RL run's trial keeps in ``agent_result.rollout_details`` every token
  id and log-probability of every model call (``RolloutDetail``: ``prompt_token_ids``,
  ``completion_token_ids``, ``logprobs``, a list per call), most of a file of hundreds of MB,
  which nothing here reads. It is now read value by value, those values read past.
- Reading a value past (:meth:`JsonStream.skip`: a record's unread field, a document's key
  while its format is told) parsed each element of a list whole: one ``RolloutDetail`` holds
  every call's ids, so its element was all of it. A list or object longer than the window
  read is now walked down to what the window holds (a list of numbers alone parsed whole).
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import groundstate.importers.stream as stream
from groundstate.errors import SpecError
from groundstate.importers import detect_format, import_file, open_source
from groundstate.importers.stream import RECORD_LIMIT, json_stream
from groundstate.store import RunStore
from tests.test_imports2_round21 import JSON
from tests.test_imports_formats import Store, log, sample, write_json
from tests.test_imports_harbor import job, trial
from tests.test_imports_round14 import tb_run, tb_trial
from tests.test_imports_tau2_versions import monolithic, simulation


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


CALLS = 12
"""Model calls in a rolled-out trial (one ``RolloutDetail`` holds them all)."""


def _rollout(tokens: int) -> list[dict[str, Any]]:
    """A trial's ``rollout_details`` as Harbor's Terminus-2 keeps it for RL: one
    ``RolloutDetail`` for the main agent, a list per model call in each field (a call's prompt
    ids grow with the conversation)."""
    return [{
        "prompt_token_ids": [list(range(1000, 1000 + tokens * (c + 1) // CALLS))
                             for c in range(CALLS)],
        "completion_token_ids": [list(range(tokens // CALLS)) for _ in range(CALLS)],
        "logprobs": [[-0.015625] * (tokens // CALLS) for _ in range(CALLS)],
    }]  # fmt: skip


def _rolled_out(task: str, name: str, reward: float, tokens: int, **fields: Any) -> dict[str, Any]:
    made = trial(task, name, {"reward": reward}, **fields)
    notes = {"n_episodes": CALLS, "summaries": ["s" * 50] * 200}
    made["agent_result"] = {**made["agent_result"], "rollout_details": _rollout(tokens),
                            "metadata": notes}  # fmt: skip
    return made


def _peak(read: Callable[[], Any]) -> tuple[Any, int]:
    """What *read* returns, and the most memory it held at once."""
    tracemalloc.start()
    try:
        result = read()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


TOKENS = 60_000
"""About 700,000 numbers in all (each call's prompt ids grow to TOKENS): parsed whole, more
than 25 MB; read value by value, a call's list at a time, a few MB."""


# --- Harbor: a trial's result read value by value ------------------------------------------


def test_a_harbor_trial_given_alone_is_read_without_holding_its_rollouts(tmp_path: Path) -> None:
    """A trial's ``result.json`` given alone was read whole twice (to tell its format, then
    to import it), its rollouts with it."""
    path = write_json(tmp_path / "result.json", _rolled_out("t", "t__a", 1.0, TOKENS))
    with RunStore(tmp_path / "h.db") as runs:
        report, peak = _peak(lambda: import_file(path, "x", runs))
        rows = runs.runs(report.batch.batch_id)
    assert [(r.task_id, r.success) for r in rows] == [("t", True)]
    assert peak < 12_000_000, peak


def test_telling_a_harbor_result_reads_none_of_its_rollouts_whole(tmp_path: Path) -> None:
    """Its format was told by reading it whole (no streamed reader knew its keys), indented
    as Harbor writes it or on one line."""
    made = _rolled_out("t", "t__a", 1.0, TOKENS)
    for path, text in ((tmp_path / "indented.json", json.dumps(made, indent=4)),
                       (tmp_path / "line.json", json.dumps(made))):  # fmt: skip
        path.write_text(text)
        found, peak = _peak(lambda path=path: detect_format(path))  # type: ignore[misc]
        assert found == "harbor"
        assert peak < 12_000_000, (path.name, peak)


def test_a_harbor_jobs_trials_are_read_without_holding_their_rollouts(tmp_path: Path) -> None:
    """A job's trials were each read whole, then slimmed: the peak was one whole trial."""
    trials = [_rolled_out(f"t{i % 2}", f"t{i % 2}__{i}", i % 2, TOKENS, minute=i) for i in range(3)]
    folder = job(tmp_path / "job", trials)
    with RunStore(tmp_path / "h.db") as runs:
        report, peak = _peak(lambda: import_file(folder, "x", runs))
        rows = runs.runs(report.batch.batch_id)
    assert sorted((r.task_id, r.success) for r in rows) == [
        ("t0", False), ("t0", False), ("t1", True)
    ]  # fmt: skip
    assert peak < 12_000_000, peak


def test_a_trial_read_value_by_value_gives_what_it_gave_whole(tmp_path: Path) -> None:
    """Control: verdict, cost, tokens, latency and the system, a multi-step trial's steps (each
    with its rollout) included; the unread values' keys kept, as ``None``."""
    stepped = trial("s", "s__1", {"reward": 1}, minute=5, agent_result=None,
                    step_results=[{"step_name": "a", "agent_result": {
                        "n_input_tokens": 5, "n_output_tokens": 1, "cost_usd": 0.5,
                        "rollout_details": _rollout(600), "metadata": {"x": [1, {"y": 2}]}},
                        "verifier_result": {"rewards": {"reward": 1}},
                        "exception_info": None}])  # fmt: skip
    folder = job(tmp_path / "job", [_rolled_out("t", "t__1", 0.0, 600), stepped])
    source = open_source(folder)
    rows = {r.label: (r.success, r.terminal_reason, r.cost, r.tokens) for r in source.rows()}
    assert rows == {
        "t__1": (False, "agent_failure/incorrect", 0.25, (1200, 300)),
        "s__1": (True, "success", 0.5, (5, 1)),
    }
    assert source.system()["agent"] == {"name": "terminus-2", "version": "1.0"}
    from groundstate.importers.harbor import read_result

    read = read_result(folder / "t__1" / "result.json")
    assert read["agent_result"]["rollout_details"] is None
    assert read["agent_result"]["n_output_tokens"] == 300
    step = read_result(folder / "s__1" / "result.json")["step_results"][0]
    assert step["agent_result"]["metadata"] is None and step["agent_result"]["cost_usd"] == 0.5


def test_a_harbor_result_read_value_by_value_is_held_to_a_whole_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control: what is read past is still read (a key twice in a rollout, a broken number,
    a file cut short, data after it: refused, naming the field or the line), under a window
    that cuts every value."""
    monkeypatch.setattr(stream, "CHUNK", 64)
    text = json.dumps(_rolled_out("t", "t__a", 1.0, 120), indent=2)
    doubled = text.replace('"logprobs": [', '"logprobs": [], "logprobs": [', 1)
    cases = {
        "doubled": (doubled, "agent_result.rollout_details[0].logprobs"),
        "number": (text.replace("1005,", "10-05,", 1), "not valid JSON"),
        "cut": (text[: len(text) * 2 // 3], "not valid JSON"),
        "after": (text + "\n{}", "Extra data"),
    }
    for name, (content, said) in cases.items():
        path = tmp_path / name / "result.json"
        path.parent.mkdir()
        path.write_text(content)
        with pytest.raises(SpecError) as caught:
            list(open_source(path).rows())
        assert said in str(caught.value), (name, str(caught.value))


def test_a_row_of_ours_naming_a_trial_is_still_a_row(tmp_path: Path) -> None:
    """Control: a JSON Lines row of ours with ``trial_name`` and ``task_name`` beside its
    ``task_id`` (text) is a row, as it was, not a Harbor trial."""
    path = tmp_path / "rows"
    row = {"task_id": "a", "attempt": 0, "success": True, "trial_name": "x", "task_name": "a"}
    path.write_text(json.dumps(row) + "\n" + json.dumps({**row, "attempt": 1}) + "\n")
    assert detect_format(path) == "jsonl"


# --- reading a value past -------------------------------------------------------------------


def test_a_value_read_past_is_never_held_whole(tmp_path: Path) -> None:
    """A list whose one element holds every token id was parsed whole to read it past."""
    path = write_json(tmp_path / "doc.json", {"skipped": _rollout(TOKENS), "kept": [1, 2]})

    def read() -> Any:
        with json_stream(path, RECORD_LIMIT) as doc:
            kept = {}
            for key in doc.members():
                if key == "kept":
                    kept[key] = doc.value(key)
            doc.end()
        return kept

    kept, peak = _peak(read)
    assert kept == {"kept": [1, 2]}
    assert peak < 12_000_000, peak


def test_a_value_too_deep_to_walk_is_refused_by_name(tmp_path: Path) -> None:
    """Control: walked down, a value nested past what Python recurses into is refused as a
    whole parse refuses it."""
    path = tmp_path / "doc.json"
    path.write_text('{"a": ' + "[" * 200_000 + "]" * 200_000 + ', "b": 1}')
    with pytest.raises(SpecError) as caught, json_stream(path, RECORD_LIMIT) as doc:
        for _ in doc.members():
            pass
    assert "nested too deeply" in str(caught.value)


def _formats(tmp_path: Path) -> dict[str, Path]:
    """A file of each streamed format."""
    inspect = write_json(tmp_path / "log.json", log(
        [sample(i, e, {"match": {"value": "C" if (i + e) % 2 else "I"}}) for i in (1, 2)
         for e in (1, 2)]))  # fmt: skip
    tau2 = monolithic(tmp_path, [simulation(f"s{i}", str(i % 2), i // 2, float(i % 3 == 0),
                                            messages=[{"role": "user", "content": "[{"}])
                                 for i in range(4)])  # fmt: skip
    bench = write_json(tmp_path / "tb.json", tb_run(
        [tb_trial("h", 1, True), tb_trial("h", 2, False), tb_trial("g", 1, True)]))  # fmt: skip
    tau = write_json(tmp_path / "tau.json", [
        {"task_id": t, "reward": float(t == n), "info": {"x": [[1], {"y": "]"}]},
         "traj": [{"role": "user", "content": "[{]"}] * 5, "trial": n}
        for t in range(2) for n in range(2)])  # fmt: skip
    harbor = job(tmp_path / "job", [_rolled_out("t", "t__1", 1.0, 240),
                                    _rolled_out("t", "t__2", 0.0, 240, minute=1)])  # fmt: skip
    return {"inspect": inspect, "tau2": tau2, "tb": bench, "tau": tau, "harbor": harbor}


def test_every_streamed_format_reads_the_same_through_a_window_that_cuts_every_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control: a window of 64 characters (every value longer, so walked or grown) gives
    every format the rows the default window gives."""
    files = _formats(tmp_path)

    def rows() -> dict[str, list[tuple[str, Any, bool, str]]]:
        return {name: [(r.task_id, r.label, r.success, r.terminal_reason)
                       for r in open_source(path).rows()]
                for name, path in files.items()}  # fmt: skip

    wide = rows()
    monkeypatch.setattr(stream, "CHUNK", 64)
    assert rows() == wide
    assert all(wide.values()) and len(wide["harbor"]) == 2


def test_a_large_harbor_trial_is_imported_in_bounded_memory(tmp_path: Path) -> None:
    """A 40 MB trial (its rollout: every model call's token ids) took more than 250 MB over
    what a 1 MB one took (read whole to tell its format, then again to import it); read value
    by value, a call's list at a time, a few MB more. The bound, 20 MB, is half the file
    (``bench/import_json_log.py --format harbor``)."""
    from tests.test_imports2_round21 import _peak as child_peak

    small = child_peak(tmp_path, 1, "harbor", False)
    large = child_peak(tmp_path, 40, "harbor", False)
    assert large - small < 20_000, (small, large)


# --- reading past: the rules of a whole parse, whatever the window --------------------------


def _skipped(text: str, chunk: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """The keys of *text*'s object, every value read past (a value other than an object:
    read past), by a stream reading *chunk* characters at a time."""
    monkeypatch.setattr(stream, "CHUNK", chunk)
    path = tmp_path / "doc.json"
    path.write_text(text, encoding="utf-8")
    with json_stream(path, 1 << 20) as reader:
        keys = list(reader.members()) if reader.peek() == "{" else reader.skip()
        reader.end()
    return keys


@settings(max_examples=200, deadline=None)
@given(
    document=st.dictionaries(st.text(max_size=6), JSON, max_size=5) | JSON,
    chunk=st.integers(1, 9),
    indent=st.sampled_from([None, 0, 2]),
)
def test_reading_past_any_value_ends_where_a_whole_parse_ends(
    document: Any, chunk: int, indent: int | None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Every value read past, cut by the window anywhere (walked, grown, parsed in place),
    leaves the stream where the value ends."""
    text = json.dumps(document, indent=indent)
    with pytest.MonkeyPatch.context() as monkeypatch:
        keys = _skipped(text, chunk, monkeypatch, tmp_path_factory.mktemp("doc"))
    assert keys == (list(document) if isinstance(document, dict) else None)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [[1, 2,]]}', '{"a": [{"b": [1 2]}]}', '{"a": [tru]}', '{"a": [1, 2], "b": [[3]',
        '{"a": {"b": [1, 2], }}', '{"a": ["x\ny"]}', '{"a": [[1,\n2],\n[3,, 4]]}',
        '{"a": [1, 2]]}', '{"a": [{"b": 1e}]}', '{"a": [[[]]]}\n\n   x',
    ],
)  # fmt: skip
@pytest.mark.parametrize("chunk", [1, 3, 1 << 20])
def test_reading_past_refuses_what_a_whole_parse_refuses_at_its_line(
    text: str, chunk: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Control: broken JSON inside a value read past is named on the line a whole parse names."""
    with pytest.raises(json.JSONDecodeError) as whole:
        json.loads(text)
    with pytest.raises(SpecError) as walked:
        _skipped(text, chunk, monkeypatch, tmp_path)
    assert walked.value.reason.startswith("not valid JSON: ")
    assert str(walked.value.path).endswith(f"doc.json:{whole.value.lineno}")


@pytest.mark.parametrize("chunk", [2, 1 << 20])
def test_a_key_given_twice_inside_a_value_read_past_is_named_where_it_sits(
    chunk: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Control: walked or parsed in place, the key is named by its path."""
    text = '{"samples": [{"id": 1}, {"id": 2, "scores": {"m": [1], "m": [2]}}], "x": 1}'
    with pytest.raises(SpecError) as walked:
        _skipped(text, chunk, monkeypatch, tmp_path)
    assert walked.value.field == "samples[1].scores.m"


# --- a record's own id given twice ------------------------------------------------------------


def test_a_simulation_given_twice_is_refused(store: Store, tmp_path: Path) -> None:
    """τ² gives each simulation a unique ``id``: one given twice under another trial number (two
    files' lists merged, a record pasted and renumbered) was two attempts."""
    sims = [simulation("sim-a", "1", 0), simulation("sim-b", "1", 1, 0.0),
            simulation("sim-a", "1", 2)]  # fmt: skip
    err = store.refused(monolithic(tmp_path, sims))
    assert "results.json:simulations[2]: id: simulation sim-a is also at" in err
    assert "simulations[0]" in err


def test_a_simulation_given_twice_under_its_own_label_is_named_by_the_batch(
    store: Store, tmp_path: Path
) -> None:
    """The same simulation under the same task and trial is left to the batch's check, which
    names the attempt; the id's check does not speak first."""
    sims = [simulation("sim-a", "1", 0), simulation("sim-a", "1", 0, 0.0)]
    err = store.refused(monolithic(tmp_path, sims))
    assert "simulations[1]: attempt: task '1' attempt 0 appears twice" in err
    assert "is also at" not in err


def test_a_harbor_trial_id_twice_under_another_name_is_refused(
    store: Store, tmp_path: Path
) -> None:
    """Harbor's check runs before any row and takes no label: a trial's id in two files is
    refused whatever each names its trial."""
    folder = job(tmp_path / "job", [trial("t", "t__a", {"reward": 1.0}, id="same-id")])
    (folder / "other").mkdir()
    write_json(folder / "other" / "result.json", trial("t", "t__b", {"reward": 1.0}, id="same-id"))
    assert "id: trial same-id is also at" in store.refused(folder)


def test_an_inspect_sample_run_given_twice_is_refused(store: Store, tmp_path: Path) -> None:
    """Inspect gives each sample's run (a sample in an epoch) its own ``uuid``: a run given
    twice under another epoch was two attempts."""
    first = sample(1, 1, {"match": {"value": "C"}})
    again = {**first, "epoch": 2}
    err = store.refused(write_json(tmp_path / "log.json", log([first, again])))
    assert "log.json:samples[1]: uuid: sample run u-1-1 is also at" in err


def test_a_terminal_bench_trial_given_twice_is_refused(store: Store, tmp_path: Path) -> None:
    """A ``tb run`` trial's ``id`` (a uuid4) given twice under another trial name was two
    attempts."""
    first = tb_trial("h", 1, True)
    again = {**first, "trial_name": first["trial_name"].replace(".1-of-2", ".2-of-2")}
    err = store.refused(write_json(tmp_path / "results.json", tb_run([first, again])))
    assert f"id: trial {first['id']} is also at" in err


def test_records_without_ids_or_with_their_own_still_import(store: Store, tmp_path: Path) -> None:
    """Control: ids each given once, or not given (an Inspect log before ``uuid``, a τ²
    simulation written by a script of its own), import as before."""
    sims = [simulation(f"sim-{i}", str(i % 2), i // 2) for i in range(4)]
    assert len(store.runs(store.imported(monolithic(tmp_path, sims)))) == 4
    bare = [{k: v for k, v in simulation("x", "1", n).items() if k != "id"} for n in range(2)]
    folder = tmp_path / "bare"
    folder.mkdir()
    assert len(store.runs(store.imported(monolithic(folder, bare)))) == 2
    samples = [{**sample(i, e, {"match": {"value": "C"}}), "uuid": None}
               for i in (1, 2) for e in (1, 2)]  # fmt: skip
    assert len(store.runs(store.imported(write_json(tmp_path / "log.json", log(samples))))) == 4
