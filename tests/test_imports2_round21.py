"""Other harnesses' result files, twenty-first round, second pass.

The class: a results file was read whole when only one of its records is needed at a time,
so its size, not its records', decided the memory an import took. An Inspect ``.json`` log
(samples inline), a τ² results file (simulations with their conversations) and a τ-bench list
(results with their trajectories) were parsed whole: a 200 MB log took 650 MB, one of 1 GiB
several GB, and one past 1 GiB was refused. They are now walked value by value
(``importers.stream``), each record within its own limit, and held to the rules a whole parse
holds them to (valid JSON, UTF-8, no key twice, nothing after the document); a file's format is
told from its top-level keys without reading its records.

Also: τ-bench's first ``run.py`` kept its checks at the top of ``info`` and gave a reward of 0
only when one failed: a 0 beside every check passed (an edit failing an attempt its own checks
passed) is refused, as it is in ``reward_info``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundstate.errors import SpecError
from groundstate.importers import compressed, detect_format, inspect_log, stream
from tests.test_imports_formats import EXPORTED, Store, cli, log, sample, tau, write_json
from tests.test_imports_tau2_versions import simulation

BENCH = Path(__file__).resolve().parent.parent / "bench" / "import_json_log.py"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _scored(value: Any) -> dict[str, Any]:
    return {"match": {"value": value}}


def _samples(count: int) -> list[dict[str, Any]]:
    return [sample(f"s{i}", 1, _scored("C" if i % 2 else "I")) for i in range(count)]


# --- memory: a large document is read record by record ------------------------------------------


def _peak(tmp_path: Path, megabytes: int, kind: str, one_line: bool) -> int:
    """The import's peak memory over the child's start (KiB), by ``bench/import_json_log.py``
    (the format detected, as a user's import detects it)."""
    folder = tmp_path / f"{kind}-{megabytes}"
    folder.mkdir()
    done = subprocess.run(
        [sys.executable, str(BENCH), "--megabytes", str(megabytes), "--format", kind,
         "--dir", str(folder), *(["--one-line"] if one_line else [])],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.splitlines()[-1])
    assert figures["exit"] == 0 and figures["file_bytes"] > megabytes * 800_000, figures
    return int(figures["peak_kib"]) - int(figures["before_kib"])


@pytest.mark.parametrize(
    ("kind", "one_line"), [("inspect", False), ("tau2-bench", False), ("inspect", True)]
)
def test_a_large_json_document_is_imported_in_bounded_memory(
    tmp_path: Path, kind: str, one_line: bool
) -> None:
    """A 120 MB document took more than 350 MB over what a 1 MB one took (parsed whole: its
    bytes, its text and its objects; on one line, telling its format read 64 MiB of its first
    line and parsed it); read record by record (500 KB each) it takes a few MB more. The
    bound, 40 MB, is a third of the file."""
    small = _peak(tmp_path, 1, kind, one_line)
    large = _peak(tmp_path, 120, kind, one_line)
    assert large - small < 40_000, (small, large)


# --- the reader: the same values and errors as a whole parse -------------------------------------


def _walked(text: str, chunk: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """*text* read by a :class:`stream.JsonStream` reading *chunk* characters at a time: an
    object member by member (a list member element by element), else one value."""
    monkeypatch.setattr(stream, "CHUNK", chunk)
    path = tmp_path / "doc.json"
    path.write_text(text, encoding="utf-8")
    with stream.json_stream(path, 1 << 20) as reader:
        if reader.peek() != "{":
            value = reader.value()
        else:
            value = {}
            for key in reader.members():
                value[key] = list(reader.elements(key)) if reader.peek() == "[" else reader.value()
        reader.end()
    return value


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=4),
    max_leaves=25,
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    document=st.dictionaries(st.text(max_size=6), JSON, max_size=5) | JSON,
    chunk=st.integers(1, 9),
    indent=st.sampled_from([None, 0, 2]),
    ascii_only=st.booleans(),
)
def test_the_stream_reads_what_a_whole_parse_reads(
    document: Any, chunk: int, indent: int | None, ascii_only: bool,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:  # fmt: skip
    """Every value cut by the window's end at every place (a number, a literal, an escape, a
    surrogate pair split) reads as ``json.loads`` reads it."""
    text = json.dumps(document, indent=indent, ensure_ascii=ascii_only)
    with pytest.MonkeyPatch.context() as monkeypatch:
        walked = _walked(text, chunk, monkeypatch, tmp_path_factory.mktemp("doc"))
    assert walked == json.loads(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2,]}', '{"a": [1 2]}', '{"a": tru}', '{"a": 1}\n{"b": 2}', '{"a": 1,}',
        '{"a": "x\ny"}', '{"a": [1, 2]', '{"a": "abc', '{"a" 1}', '[1, 2]]', '{"a": 1e}',
        '{"a": [{"b": 1}]}\n\n   x',
    ],
)  # fmt: skip
@pytest.mark.parametrize("chunk", [1, 3, 1 << 20])
def test_the_stream_refuses_what_a_whole_parse_refuses_at_its_line(
    text: str, chunk: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Broken JSON is named as such on the line a whole parse names (a window's end is not
    taken for the document's)."""
    with pytest.raises(json.JSONDecodeError) as whole:
        json.loads(text)
    with pytest.raises(SpecError) as walked:
        _walked(text, chunk, monkeypatch, tmp_path)
    assert walked.value.reason.startswith("not valid JSON: ")
    assert str(walked.value.path).endswith(f"doc.json:{whole.value.lineno}")


@pytest.mark.parametrize("chunk", [2, 1 << 20])
def test_a_key_given_twice_inside_a_record_is_named_where_it_sits(
    chunk: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    text = '{"samples": [{"id": 1}, {"id": 2, "scores": {"m": 1, "m": 2}}]}'
    with pytest.raises(SpecError) as walked:
        _walked(text, chunk, monkeypatch, tmp_path)
    assert walked.value.field == "samples[1].scores.m"
    with pytest.raises(SpecError) as top:
        _walked('{"samples": [], "status": "x", "samples": []}', chunk, monkeypatch, tmp_path)
    assert top.value.field == "samples"


# --- Inspect .json logs -------------------------------------------------------------------------


def test_an_inspect_json_log_past_the_whole_document_limit_is_imported(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log past 1 GiB was refused ("convert it to .eval"), and its format could not be told
    without reading it whole; now it is read sample by sample."""
    path = write_json(tmp_path / "log.json", log(_samples(20)))
    monkeypatch.setattr(compressed, "INFLATED_LIMIT", 1000)
    assert detect_format(path) == "inspect"
    batch = store.imported(path)
    assert len(store.runs(batch)) == 20


def test_an_inspect_json_sample_past_the_record_limit_is_refused(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each sample of a ``.json`` log is held to the limit an ``.eval`` member is held to (a
    sample of gigabytes took that many times its size in memory); the others are not."""
    samples = _samples(3)
    samples[1]["messages"] = [{"role": "user", "content": "x" * 5000}]
    path = write_json(tmp_path / "log.json", log(samples))
    monkeypatch.setattr(inspect_log, "MEMBER_LIMIT", 4000)
    err = store.refused(path)
    assert "log.json: samples[1]: more than 4000 characters" in err, err
    samples[1]["messages"] = []
    store.imported(write_json(tmp_path / "log.json", log(samples)))  # control


def test_an_inspect_json_log_written_in_another_key_order_reads_the_same(
    store: Store, tmp_path: Path
) -> None:
    """Inspect writes its samples after the eval spec; a log whose ``eval`` comes after them
    (rewritten by a tool that sorts keys) still tells our export's log from another's, and
    ``status`` after them still warns."""
    own = {"groundstate": {"terminal_reason": "agent_failure/budget", "success": False}}
    samples = [sample("a", 1, _scored("C"), metadata=own), sample("b", 1, _scored("I"))]
    data = log(samples, status="started", spec=EXPORTED)
    path = tmp_path / "log.json"
    path.write_text(json.dumps(data, sort_keys=True, indent=1))  # status after the samples
    code, _, err = cli("import-results", str(path), "--name", "x", "--store", str(store.path))
    assert code == 0 and "the log's status is 'started'" in err, err
    batch = store.imported(path)
    assert store.runs(batch) == {
        ("a", 1, 0): ("agent_failure/budget", None),
        ("b", 1, 0): ("agent_failure/incorrect", None),
    }
    moved = {k: v for k, v in data.items() if k not in ("eval", "status")}
    moved.update(eval=EXPORTED, status="started")  # both after the samples
    path.write_text(json.dumps(moved))
    assert store.runs(store.imported(path)) == store.runs(batch)


@pytest.mark.parametrize(
    ("tail", "said"),
    [
        (', "samples": []}', "samples: the key appears twice"),
        ("}\n{}", "not valid JSON: Extra data"),
        ("", "not valid JSON"),
    ],
)
def test_an_inspect_json_log_broken_after_its_samples_is_refused(
    store: Store, tmp_path: Path, tail: str, said: str
) -> None:
    """A whole parse refused these; read sample by sample, they are still refused (the walk
    goes on to the document's end)."""
    text = json.dumps(log(_samples(3)))[:-1] + tail
    path = tmp_path / "log.json"
    path.write_text(text)
    assert said in store.refused(path)


# --- τ² and τ-bench ------------------------------------------------------------------------------


def test_tau2_results_past_the_whole_document_limit_are_imported(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """τ²'s results file was read whole (its conversations: hundreds of MB for a large run)
    and refused past 1 GiB. Keys τ² writes before its simulations are read; ``tasks`` written
    after them still warns of the task with no simulation."""
    sims = [simulation(f"s{i}", str(i % 4), i // 4, 1.0 if i % 3 else 0.0) for i in range(12)]
    tasks = [{"id": str(i)} for i in range(5)]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"info": {"num_trials": 3}, "simulations": sims, "tasks": tasks}))
    monkeypatch.setattr(compressed, "INFLATED_LIMIT", 1000)
    assert detect_format(path) == "tau2-bench"
    code, out, err = cli("import-results", str(path), "--name", "x", "--store", str(store.path))
    assert code == 0 and "1 of the 5 tasks it lists has no simulation ('4')" in err, err
    assert len(store.runs(out.strip().splitlines()[-1].removeprefix("batch "))) == 12


def test_a_tau2_simulation_past_the_record_limit_is_refused(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sims = [simulation("a", "1", 0), simulation("b", "1", 1, messages=["x" * 5000])]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"info": {}, "tasks": [], "simulations": sims}))
    monkeypatch.setattr(stream, "RECORD_LIMIT", 4000)
    monkeypatch.setattr("groundstate.importers.tau.RECORD_LIMIT", 4000)
    # since the twenty-fifth round a simulation is read member by member (its messages' text
    # read past), so the value past the limit is named: a message, here
    err = store.refused(path)
    assert "results.json: simulations[1].messages[0]: more than 4000 characters" in err


def test_a_tau_bench_list_past_the_whole_document_limit_is_imported(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = [tau(i % 5, i // 5, 1.0 if i % 2 else 0.0) for i in range(20)]
    path = write_json(tmp_path / "tau.json", items)
    monkeypatch.setattr(compressed, "INFLATED_LIMIT", 1000)
    batch = store.imported(path)
    assert len(store.runs(batch)) == 20
    path.write_text(json.dumps(items)[:-1])  # control: cut short
    assert "tau.json:1: not valid JSON" in store.refused(path)


# --- τ-bench's first run.py: its checks at the top of info ----------------------------------------


@pytest.mark.parametrize(
    "info",
    [
        {"r_actions": True, "gt_data_hash": "h"},
        {"r_actions": True, "r_outputs": True, "outputs": {"42": True}},
        {"r_actions": 1.0, "r_outputs": 1.0},
    ],
)
def test_a_first_run_py_failure_its_checks_passed_is_refused(
    store: Store, tmp_path: Path, info: dict[str, Any]
) -> None:
    """The first ``run.py`` set the reward to 0 when the database hash differed or an output
    was not told, and kept ``r_actions`` (and ``r_outputs``) at the top of ``info``: a 0 beside
    every check passed failed an attempt its own checks passed."""
    items = [tau(0, 0, 1.0, {"r_actions": True}), tau(0, 1, 0.0, info)]
    err = store.refused(write_json(tmp_path / "tau.json", items))
    assert "tau.json:2: reward: 0.0, but info.r_actions" in err and "every check, passed" in err


def test_first_run_py_failures_its_checks_explain_import(store: Store, tmp_path: Path) -> None:
    """Controls: a 0 beside a failed ``r_actions`` (the state), beside an output not told, and
    a result without checks (the episode never ended)."""
    items = [
        tau(0, 0, 0.0, {"r_actions": False, "gt_data_hash": "h"}),
        tau(0, 1, 0.0, {"r_actions": True, "r_outputs": False, "outputs": {"42": False}}),
        tau(0, 2, 1.0, {"r_actions": True, "r_outputs": True, "outputs": {"42": True}}),
        tau(1, 0, 0.0, {}),
    ]
    batch = store.imported(write_json(tmp_path / "tau.json", items))
    assert store.runs(batch) == {
        ("0", 1, 0): ("agent_failure/incorrect_state", None),
        ("0", 2, 0): ("agent_failure/communication", None),
        ("0", 3, 0): ("success", None),
        ("1", 1, 0): ("agent_failure/incorrect", None),
    }
