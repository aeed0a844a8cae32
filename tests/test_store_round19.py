"""Run store, nineteenth audit: a damaged seal is named (not rebuilt silently); usage a file or
a provider did not report is not known (``null``), never 0, in every reader and writer; other
harnesses' result files, malformed or unusual, are imported exactly or refused by name, and a
refused file stores nothing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.records import AgentRun, Usage
from groundstate.spec.suite import Suite


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def _rows_file(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _imported(tmp_path: Path, rows: list[dict[str, object]], name: str = "sys") -> tuple[Path, str]:
    store = tmp_path / "runs.db"
    source = _rows_file(tmp_path / f"{name}.jsonl", rows)
    code, out, err = _invoke(
        "import-results", str(source), "--name", name, "--json", "--store", str(store)
    )
    assert code == 0, out + err
    return store, json.loads(out)["batch_id"]


ROWS: list[dict[str, object]] = [
    {"task_id": f"t{t}", "attempt": a, "success": (t + a) % 3 == 0, "cost": 0.5}
    for t in range(4)
    for a in (1, 2, 3)
]


# --- a damaged seal is named ----------------------------------------------------------------------

DAMAGES = {
    "record garbage": "UPDATE seals SET record = '{not json'",
    "record of another batch": "UPDATE seals SET record = json_set(record, '$.batch_id', 'zz')",
    "columns cut": "UPDATE seals SET outcomes = substr(outcomes, 1, 20)",
    "columns changed": "UPDATE seals SET outcomes = zeroblob(length(outcomes))",
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_seal_is_named_by_every_reading_command(tmp_path: Path, damage: str) -> None:
    """Found here: a seal whose record or columns were damaged was recomputed with no word
    (the figures right, from a full check). Each reading command now warns, naming the batch,
    exit 0 (nothing in the records is altered), in text, JSON and HTML alike; the full check
    then seals again, and the next command is silent."""
    store, batch = _imported(tmp_path, ROWS)
    code, clean, err = _invoke("report", batch, "--json", "--store", str(store))
    assert code == 0 and err == "", err
    commands = [
        ("report", batch, "--json"),
        ("report", batch),
        ("report", batch, "--html", str(tmp_path / "r.html")),
        ("runs", batch),
        ("batches",),
        ("compare", batch, batch),
    ]
    for command in commands:
        db = sqlite3.connect(store)
        with db:
            db.execute(DAMAGES[damage])
        db.close()
        code, out, err = _invoke(*command, "--store", str(store))
        assert code == 0 and "Traceback" not in out + err, (command, out + err)
        assert f"warning: batch {batch}: its verification seal is damaged" in err, (command, err)
        if command == ("report", batch, "--json"):
            data, before = json.loads(out), json.loads(clean)
            assert data["integrity"]["verified"] is True
            assert any("seal is damaged" in p for p in data["integrity"]["problems"])
            for key in ("summary", "tries"):
                assert data[key] == before[key]
        if "--html" in command:
            page = (tmp_path / "r.html").read_text(encoding="utf-8")
            assert "verification seal of this batch" in page and "ALTERED" not in page
    code, out, err = _invoke("report", batch, "--json", "--store", str(store))
    assert code == 0 and err == "" and json.loads(out)["integrity"]["check"] == "seal", err


def test_a_stale_seal_of_a_grown_batch_is_not_called_damaged(tmp_path: Path) -> None:
    """A seal the batch no longer matches (a run row edited) is not a damaged seal: the full
    check names the edit, and nothing is said of the seal."""
    store, batch = _imported(tmp_path, ROWS)
    db = sqlite3.connect(store)
    with db:
        db.execute(
            "UPDATE runs SET success = 1 - success WHERE rowid = (SELECT min(rowid) FROM runs)"
        )
    db.close()
    code, _, err = _invoke("report", batch, "--store", str(store))
    assert code == 1 and "seal" not in err and "warning" in err, err


# --- usage not reported is not known, never 0 ---------------------------------------------------


def test_a_failed_model_call_try_records_its_usage_as_not_known(
    monkeypatch: pytest.MonkeyPatch,
    retail: Suite,
) -> None:
    """Found here: a try the API answered with an error was recorded with 0 tokens and cost
    0, as if the provider had said it used none (a timed-out request may be billed). It is
    now not known (``null``); the answered calls are counted as before, so a budget still
    applies and the attempt still succeeds."""
    from groundstate.testing import Fail

    from .model_harness import PROVIDERS, _harness
    from .test_models_round17 import _oracle
    from .test_models_round18 import _calls, _run

    for provider in PROVIDERS:
        harness = _harness(provider, monkeypatch, retail)
        run = _run(harness, [Fail(500, "oops"), *_oracle(retail)], max_tokens=10**6)
        assert run.terminal_reason == "success", run.infrastructure_status
        failed = [c for c in _calls(run) if c.error is not None]
        answered = [c for c in _calls(run) if c.error is None]
        assert len(failed) == 1
        usage = failed[0].usage
        assert (usage.input_tokens, usage.output_tokens, usage.cost) == (None, None, None)
        assert run.usage.input_tokens == sum(c.usage.input_tokens or 0 for c in answered) > 0


def _with_usage(
    run: AgentRun, tokens: tuple[int | None, int | None], cost: float | None
) -> AgentRun:
    return run.model_copy(
        update={"usage": Usage(input_tokens=tokens[0], output_tokens=tokens[1]), "cost": cost}
    )


def test_a_replay_reports_usage_the_record_does_not_know_as_not_known(bank: Suite) -> None:
    """Found here: ``observed_trajectory`` (regrade, regression cases) read a usage the record
    does not know as 0, so a replay under a token or cost budget ran on as if nothing was
    spent, where the run itself was stopped (the budget could not be checked)."""
    from groundstate.agents.scripted import RecordedUsage
    from groundstate.testing import attempt, run_solution
    from groundstate.validation.regress import observed_trajectory

    task_id, solutions = next(iter(bank.solutions.items()))
    base = run_solution(bank, task_id, next(iter(solutions)))
    replayed = {
        "unknown": _with_usage(base, (None, None), None),
        "known": _with_usage(base, (120, 30), 0.25),
        "nothing": _with_usage(base, (0, 0), 0.0),
    }
    usage = {
        name: [s for s in observed_trajectory(run) if isinstance(s, RecordedUsage)]
        for name, run in replayed.items()
    }
    assert usage == {
        "unknown": [RecordedUsage(None, None, None)],
        "known": [RecordedUsage(120, 30, 0.25)],
        "nothing": [],
    }
    from groundstate.agents.scripted import ScriptedAgent
    from groundstate.testing import scripted_system

    plain = scripted_system()
    system = plain.model_copy(
        update={"budgets": plain.budgets.model_copy(update={"max_tokens": 10**6})}
    )
    agent = ScriptedAgent(observed_trajectory(replayed["unknown"]))
    again = attempt(bank, task_id, agent, system=system).run
    assert again.terminal_reason == "harness_compatibility_failure", again.infrastructure_status
    assert again.usage.input_tokens is None and again.cost is None


def test_an_attempt_lost_with_its_worker_does_not_claim_it_spent_nothing(bank: Suite) -> None:
    """Found here: an attempt whose worker was killed (or died) was recorded as having used 0
    tokens at cost 0: what it spent went with the worker. Now not known; the reports leave it
    out of the cost and count it as such."""
    from datetime import UTC, datetime

    from groundstate.episode import AttemptInfo, lost_attempt
    from groundstate.testing import scripted_system

    task = next(iter(bank.tasks.values()))
    info = AttemptInfo(run_id="r1", batch_id="b1", attempt=1, seed=0)
    run = lost_attempt(
        task, scripted_system(), info, RuntimeError("worker died"), "agent",
        {"exitcode": -9}, datetime.now(UTC), 1.5,
    ).run  # fmt: skip
    assert (run.usage.input_tokens, run.usage.output_tokens, run.cost) == (None, None, None)
    assert AgentRun.model_validate_json(run.model_dump_json()) == run


def _without_mark(monkeypatch: pytest.MonkeyPatch) -> None:
    """Imports made as before the nineteenth round: no ``unknown_usage`` in ``system_spec``."""
    import groundstate.importers.batch as importing
    from groundstate.store import UNKNOWN_USAGE_KEY

    made = importing._batch

    def unmarked(*args: object, **kwargs: object) -> object:
        batch = made(*args, **kwargs)  # type: ignore[arg-type]
        spec = {k: v for k, v in batch.system_spec.items() if k != UNKNOWN_USAGE_KEY}
        return batch.model_copy(update={"system_spec": spec})

    monkeypatch.setattr(importing, "_batch", unmarked)


TOKENS: list[dict[str, object]] = [
    {"task_id": "a", "attempt": 1, "success": True, "input_tokens": 0, "output_tokens": 0},
    {"task_id": "a", "attempt": 2, "success": False, "input_tokens": 120, "output_tokens": 30},
    {"task_id": "b", "attempt": 1, "success": True, "input_tokens": 7, "output_tokens": 0},
    {"task_id": "b", "attempt": 2, "success": True},
]


def test_an_import_older_than_the_unknown_usage_rule_is_read_as_not_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Left since the sixteenth round: a batch imported before then holds 0 where its file
    gave no token count, nothing tells that 0 from a true one, and importing the same file
    again returned the old batch. Such a batch (no ``unknown_usage`` mark) now has its 0
    counts exported as not known with a warning naming it, and importing the file again
    stores it anew (a warning naming the old batch)."""
    with monkeypatch.context() as patch:
        _without_mark(patch)
        store, old = _imported(tmp_path, TOKENS)
    out_file = tmp_path / "old.jsonl"
    code, out, err = _invoke(
        "export", old, "--format", "jsonl", "--out", str(out_file), "--store", str(store)
    )
    assert code == 0 and f"warning: batch {old} was imported before" in err, err
    assert "the 0 token counts of 2 tries" in err, err
    exported = [json.loads(line) for line in out_file.read_text().splitlines()]
    tokens = {
        (r["task_id"], r["attempt"]): (r["input_tokens"], r["output_tokens"]) for r in exported
    }
    assert tokens == {
        ("a", 1): (None, None),
        ("a", 2): (120, 30),
        ("b", 1): (7, None),
        ("b", 2): (None, None),
    }
    inspect = tmp_path / "old.eval"
    code, _, _ = _invoke(
        "export", old, "--format", "inspect", "--out", str(inspect), "--store", str(store)
    )
    assert code == 0
    import zipfile

    with zipfile.ZipFile(inspect) as archive:
        samples = {
            (s["id"], s["epoch"]): s
            for s in (
                json.loads(archive.read(n)) for n in archive.namelist() if n.startswith("samples/")
            )
        }
    usage = [
        next(iter(s["model_usage"].values()), {}) if s["model_usage"] else {}
        for s in samples.values()
    ]
    assert not any(u.get("input_tokens") == 0 or u.get("output_tokens") == 0 for u in usage)
    assert any(u.get("input_tokens") == 120 for u in usage)
    # the file imported again: stored anew under the current rule, its true 0s kept
    code, out, err = _invoke(
        "import-results",
        str(tmp_path / "sys.jsonl"),
        "--name",
        "sys",
        "--json",
        "--store",
        str(store),
    )
    assert code == 0 and f"batch {old} imported this file under this name before" in err, err
    new = json.loads(out)["batch_id"]
    assert new != old and not json.loads(out)["already_stored"]
    code, _, err = _invoke(
        "export", new, "--format", "jsonl", "--out", str(out_file), "--store", str(store)
    )
    assert code == 0 and "warning" not in err, err
    exported = [json.loads(line) for line in out_file.read_text().splitlines()]
    tokens = {
        (r["task_id"], r["attempt"]): (r["input_tokens"], r["output_tokens"]) for r in exported
    }
    assert tokens == {
        ("a", 1): (0, 0),
        ("a", 2): (120, 30),
        ("b", 1): (7, 0),
        ("b", 2): (None, None),
    }
    # and once more: the current import is returned, nothing stored again
    code, out, err = _invoke(
        "import-results",
        str(tmp_path / "sys.jsonl"),
        "--name",
        "sys",
        "--json",
        "--store",
        str(store),
    )
    assert code == 0 and json.loads(out)["already_stored"] and json.loads(out)["batch_id"] == new


def test_usage_not_known_stays_not_known_through_an_inspect_export(tmp_path: Path) -> None:
    """Found here: a run whose usage is not known was exported with an empty ``model_usage``
    (right), and Inspect's importer read an empty ``model_usage`` as cost 0 (tokens not known,
    cost known and free). Now an empty one is not known in cost too, and a known 0 is written
    as 0, so both come back as they were."""
    from groundstate.store import RunStore

    rows = [
        {"task_id": "a", "attempt": 1, "success": True},
        {"task_id": "a", "attempt": 2, "success": False, "cost": 0.0, "input_tokens": 0,
         "output_tokens": 0},
        {"task_id": "a", "attempt": 3, "success": True, "cost": 0.5, "input_tokens": 9,
         "output_tokens": 4},
    ]  # fmt: skip
    store, batch = _imported(tmp_path, rows)
    log = tmp_path / "out.eval"
    code, _, err = _invoke(
        "export", batch, "--format", "inspect", "--out", str(log), "--store", str(store)
    )
    assert code == 0, err
    code, out, err = _invoke(
        "import-results", str(log), "--name", "back", "--json", "--store", str(store)
    )
    assert code == 0, err
    with RunStore(store) as opened:
        back = {
            r.attempt: (r.cost, r.usage.input_tokens, r.usage.output_tokens)
            for r in opened.runs(json.loads(out)["batch_id"])
        }
    assert back == {1: (None, None, None), 2: (0.0, 0, 0), 3: (0.5, 9, 4)}


# --- other harnesses' files, malformed or unusual ---------------------------------------------

FIXTURES = Path(__file__).parent / "fixtures" / "interop"
TB_RESULTS = {
    "id": "run",
    "results": [
        {"id": "t1.1", "trial_name": "t1.1-of-1", "task_id": "t1", "is_resolved": True,
         "failure_mode": "unset", "parser_results": {"a": "passed"}},
        {"id": "t2.1", "trial_name": "t2.1-of-1", "task_id": "t2", "is_resolved": False,
         "failure_mode": "unset", "parser_results": {"a": "failed"}},
    ],
    "n_resolved": 1, "n_unresolved": 1, "resolved_ids": ["t1"], "unresolved_ids": ["t2"],
    "accuracy": 0.5,
}  # fmt: skip


def _bases() -> dict[str, bytes]:
    from .test_imports_formats import log, sample
    from .test_imports_round15 import RUN_5X

    samples = [
        sample(1, 1, {"m": {"value": "C"}}), sample(1, 2, {"m": {"value": "I"}}),
        sample("b", 1, {"m": {"value": 1.0}}), sample("b", 2, {"m": {"value": False}}),
    ]  # fmt: skip
    return {
        "tau.json": (FIXTURES / "tau_results.json").read_bytes(),
        "tau2.json": (FIXTURES / "tau2_results.json").read_bytes(),
        "log.json": json.dumps(log(samples), indent=1).encode(),
        "rows.jsonl": b'{"task_id": "t1", "attempt": 1, "success": true}\n'
        b'{"task_id": "t1", "attempt": 2, "success": false}\n',
        "rows.csv": b"task_id,attempt,success\nt1,1,true\nt1,2,false\n",
        "swe.json": json.dumps(RUN_5X, indent=1).encode(),
        "tb.json": json.dumps(TB_RESULTS, indent=1).encode(),
    }


def _same_bytes(kind: str, data: bytes) -> bytes:
    """*data* written another way that means the same file."""
    import bz2
    import gzip

    crlf = data.replace(b"\n", b"\r\n")
    return {
        "bom": b"\xef\xbb\xbf" + data,
        "crlf": crlf,
        "gzip": gzip.compress(data),
        "bom-gzip": gzip.compress(b"\xef\xbb\xbf" + data),
        "crlf-bzip2": bz2.compress(crlf),
        "blank-lines": b"  \n" + data + b"\n\n  ",
    }[kind]


def _damaged_bytes(kind: str, data: bytes) -> bytes:
    import io
    import zipfile

    if kind == "zip":
        held = io.BytesIO()
        with zipfile.ZipFile(held, "w") as archive:
            archive.writestr("results.json", data)
        return held.getvalue()
    return {
        "utf-16": data.decode().encode("utf-16"),
        "cut": data[: len(data) * 2 // 3],
        "empty": b"",
        "nul": data + b"\x00",
    }[kind]


def _stored(store_path: Path, batch: str) -> list[tuple[str, int, int, str, float | None]]:
    from groundstate.store import RunStore

    with RunStore(store_path) as opened:
        assert opened.verify(batch).ok
        return sorted(
            (r.task_id, r.attempt, r.retry, r.terminal_reason, r.partial_score)
            for r in opened.runs(batch)
        )


@pytest.mark.parametrize("name", sorted(_bases()))
def test_a_file_written_another_way_imports_as_the_file_it_is(tmp_path: Path, name: str) -> None:
    """A byte-order mark, CRLF line ends, compression, blank lines around the document: the
    same runs as the plain file, in every format (checked and found sound)."""
    from .test_imports_formats import Store

    store = Store(tmp_path)
    plain = tmp_path / name
    plain.write_bytes(_bases()[name])
    expected = _stored(store.path, store.imported(plain))
    assert expected
    for kind in ("bom", "crlf", "gzip", "bom-gzip", "crlf-bzip2", "blank-lines"):
        path = tmp_path / kind / name
        path.parent.mkdir()
        path.write_bytes(_same_bytes(kind, plain.read_bytes()))
        assert _stored(store.path, store.imported(path)) == expected, kind


@pytest.mark.parametrize("name", sorted(_bases()))
def test_a_damaged_file_is_refused_naming_it_and_stores_nothing(tmp_path: Path, name: str) -> None:
    """UTF-16, a results file zipped, cut short, empty, or with a NUL byte after it: refused
    in one line naming the file (and the line, where there is one), exit 2, no batch stored
    and the batch stored before intact."""
    from .test_imports_formats import Store

    store = Store(tmp_path)
    for kind in ("utf-16", "zip", "cut", "empty", "nul"):
        path = tmp_path / kind / name
        path.parent.mkdir()
        path.write_bytes(_damaged_bytes(kind, _bases()[name]))
        err = store.refused(path)
        if kind == "empty":
            assert "is empty" in err, err
        if kind == "zip":
            assert "zip" in err, err


INSPECT_NAMED = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}


def _inspect_value(value: object) -> float | str | None:
    """A score value as Inspect's ``value_to_float`` reads it, written apart from the
    importer: a float, ``"nan"`` (the scorer gave none) or None (not a verdict: refused)."""
    import math

    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, bool | int | float):
        number = float(value)
    elif isinstance(value, str) and value in INSPECT_NAMED:
        number = INSPECT_NAMED[value]
    elif isinstance(value, str) and value.lower() in ("yes", "true", "no", "false"):
        number = 1.0 if value.lower() in ("yes", "true") else 0.0
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) and 0 <= number <= 1 else None


SCORE_VALUES: list[object] = [
    "C", "I", "P", "N", "yes", "no", "true", "false", "1", "0", "1.0", "0.5", ".5", True,
    False, 1, 0, 0.25, 0.999999, "c", "", " C", "correct", "NaN", None, 2, -1, 10**30,
    float("inf"), float("nan"), [1], {"k": 1},
]  # fmt: skip


def test_inspect_score_values_of_every_type_import_as_inspect_reads_them(tmp_path: Path) -> None:
    """Scores as text, letters, booleans, None, NaN, Infinity, huge integers, a list, a dict:
    each sample is imported with the verdict Inspect's own reading gives it (1: success; in
    between: a partial score; NaN: never graded), or the file is refused naming the sample and
    the field; nothing is stored for a refused file."""
    from .test_imports_formats import Store, log, sample

    store = Store(tmp_path)
    for number, value in enumerate(SCORE_VALUES):
        samples = [sample(1, 1, {"m": {"value": value}}), sample(1, 2, {"m": {"value": "C"}})]
        path = tmp_path / f"v{number}.json"
        path.write_text(
            json.dumps(log(samples)), encoding="utf-8"
        )  # NaN, Infinity as Python writes them
        expected = _inspect_value(value)
        if expected is None:
            err = store.refused(path)
            assert "samples[0]" in err and "scores.m.value" in err, (value, err)
            continue
        (first, second) = sorted(store.runs(store.imported(path)).items())
        # a value between 0 and 1 makes the batch's partial scores known (each sample's value)
        graded = isinstance(expected, float) and 0 < expected < 1
        assert second[1] == ("success", 1.0 if graded else None), value
        reason, partial = first[1]
        if expected == "nan":
            assert (reason, partial) == ("grader_failure", None), value
        elif expected == 1.0:
            assert (reason, partial) == ("success", None), value
        else:
            assert reason.startswith("agent_failure/"), value
            assert partial == (expected if graded else None), (value, partial)


def _tb(**edits: object) -> dict[str, object]:
    import copy

    data = copy.deepcopy(TB_RESULTS)
    data.update(edits)
    return data


@pytest.mark.parametrize(
    ("edits", "field"),
    [
        (
            {"resolved_ids": ["t1", "t2"]},
            "resolved_ids: lists ['t1', 't2'], but the trials give ['t1']",
        ),
        ({"unresolved_ids": []}, "unresolved_ids: lists [], but the trials give ['t2']"),
        ({"n_resolved": 2}, "n_resolved: 2, but 1 trials are counted so"),
        ({"n_unresolved": True}, "n_unresolved: must be an integer, got True"),  # round 52
        ({"resolved_ids": "t1"}, "resolved_ids: must be a list of task ids"),
    ],
)
def test_terminal_bench_figures_that_contradict_the_trials_are_refused(
    tmp_path: Path, edits: dict[str, object], field: str
) -> None:
    """Found here: a Terminal-Bench ``results.json`` whose ``resolved_ids`` (or the other
    figures ``tb run`` computes from the trials) said another thing than its trials was
    imported without a word, by the trials alone: an edited or cut file. It is now refused
    naming the field; an ``accuracy`` that disagrees is named in a warning."""
    from .test_imports_formats import Store

    store = Store(tmp_path)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_tb(**edits)), encoding="utf-8")
    assert field in store.refused(path)


def test_terminal_bench_accuracy_that_disagrees_is_named(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_tb(accuracy=1.0)), encoding="utf-8")
    code, _, err = _invoke(
        "import-results", str(path), "--name", "tb", "--store", str(tmp_path / "s.db")
    )
    assert code == 0 and "accuracy is 1.0, but 1 of 2 trials are resolved (0.5)" in err, err
    path.write_text(json.dumps(_tb()), encoding="utf-8")
    code, _, err = _invoke(
        "import-results", str(path), "--name", "tb2", "--store", str(tmp_path / "s.db")
    )
    assert code == 0 and err == "", err


@pytest.mark.parametrize("total", [10**30, float("nan"), "many", -4])
def test_a_swe_bench_total_that_is_no_count_is_refused(tmp_path: Path, total: object) -> None:
    """Found here: a run report's ``total_instances`` of NaN or beyond 2^53 silently skipped
    the check that its lists hold every instance of the run (the warning of the sixteenth
    round); it is now refused naming the field."""
    from .test_imports_formats import Store
    from .test_imports_round15 import RUN_5X

    store = Store(tmp_path)
    path = tmp_path / "report.json"
    path.write_text(json.dumps({**RUN_5X, "total_instances": total}), encoding="utf-8")
    assert "total_instances: must" in store.refused(path)


def test_a_cost_sum_over_attempts_some_not_known_says_how_many_in_every_view(
    tmp_path: Path,
) -> None:
    """The rule for sums over attempts with some usage not known (checked and found sound):
    the known ones are summed and the count of the others is given beside it, the same in the
    text, the JSON and the HTML report; never counted as 0 (the mean is over the known)."""
    rows = [
        {"task_id": "a", "attempt": 1, "success": True, "cost": 0.5},
        {"task_id": "a", "attempt": 2, "success": False},
        {"task_id": "b", "attempt": 1, "success": True, "cost": 0.25},
        {"task_id": "b", "attempt": 2, "success": True},
    ]
    store, batch = _imported(tmp_path, rows)
    code, out, _ = _invoke("report", batch, "--json", "--store", str(store))
    data = json.loads(out)
    assert code == 0
    assert data["summary"]["cost"]["unknown"] == data["tries"]["cost_unknown"] == 2
    assert data["summary"]["cost"]["total"] == pytest.approx(0.75)
    assert data["summary"]["cost"]["mean"] == pytest.approx(0.375)
    page = tmp_path / "r.html"
    code, text, _ = _invoke("report", batch, "--html", str(page), "--store", str(store))
    assert code == 0 and "2 with no cost" in text
    assert "2 with no cost" in page.read_text(encoding="utf-8")
