"""The tamper-evident store: verify, report and show name what is altered or missing."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.spec.suite import load_suite
from groundstate.spec.system import load_system
from groundstate.store import BatchInfo, RunStore, record_hash

from .conftest import BANK, BANK_SYSTEM

_OLD_SCHEMA = """
CREATE TABLE batches (batch_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, record TEXT NOT NULL);
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, batch_id TEXT NOT NULL REFERENCES batches(batch_id),
    task_id TEXT NOT NULL, attempt INTEGER NOT NULL, retry INTEGER NOT NULL,
    terminal_reason TEXT NOT NULL, success INTEGER NOT NULL, created_at TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE UNIQUE INDEX runs_by_batch ON runs(batch_id, task_id, attempt, retry);
"""


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def _batch(store: Path, attempts: int = 4) -> BatchInfo:
    with RunStore(store) as runs:
        runner = BatchRunner(load_suite(BANK), load_system(BANK_SYSTEM), runs)
        return asyncio.run(runner.start(BatchConfig(attempts=attempts))).batch


def _sql(store: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with sqlite3.connect(store) as db:
        return db.execute(sql, params).fetchall()


def _in_order(store: Path, batch_id: str) -> list[AgentRun]:
    rows = _sql(store, "SELECT record FROM runs WHERE batch_id = ? ORDER BY seq", (batch_id,))
    return [AgentRun.model_validate_json(r[0]) for r in rows]


def _flip_success(store: Path, run: AgentRun) -> None:
    (text,) = _sql(store, "SELECT record FROM runs WHERE run_id = ?", (run.run_id,))[0]
    was = json.dumps(run.success)
    flipped = text.replace(f'"success":{was}', f'"success":{json.dumps(not run.success)}')
    assert flipped != text
    _sql(store, "UPDATE runs SET record = ? WHERE run_id = ?", (flipped, run.run_id))


def _artifact(store: Path, run: AgentRun, name: str = "trace.jsonl") -> Path:
    digest = run.artifact_locations[name].removeprefix("sha256:")
    return store.parent / "artifacts" / digest[:2] / digest[2:]


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, BatchInfo, list[AgentRun]]:
    store = tmp_path / "runs.db"
    batch = _batch(store)
    return store, batch, _in_order(store, batch.batch_id)


def test_a_clean_batch_verifies_everywhere(stored: tuple[Path, BatchInfo, list[AgentRun]]) -> None:
    store, batch, runs = stored
    code, out, err = _invoke("verify", "--store", str(store))
    assert code == 0, out + err
    assert f"batch {batch.batch_id}: {len(runs)} records" in out and "all verify" in out
    with RunStore(store) as opened:
        check = opened.verify(batch.batch_id)
    assert check.ok and check.problems == [] and check.artifacts >= len(runs)
    code, _, err = _invoke("report", "--store", str(store))
    assert code == 0 and "warning" not in err
    code, _, err = _invoke("show", runs[1].run_id, "--store", str(store))
    assert code == 0 and "warning" not in err


def test_flipping_success_is_named_by_verify_report_and_show(
    stored: tuple[Path, BatchInfo, list[AgentRun]],
) -> None:
    store, batch, runs = stored
    victim = runs[2]
    _flip_success(store, victim)
    code, out, _ = _invoke("verify", batch.batch_id[:6], "--store", str(store))
    assert code == 1
    assert f"record_altered: run {victim.run_id}: record altered" in out
    assert out.count("record_altered") == 1  # the neighbours still verify
    code, out, _ = _invoke("verify", "--json", "--store", str(store))
    (checked,) = json.loads(out)
    assert code == 1 and checked["verified"] is False
    assert [(p["kind"], p["run_id"]) for p in checked["problems"]] == [
        ("record_altered", victim.run_id)
    ]
    code, out, err = _invoke("report", "--store", str(store))
    assert code == 1
    assert f"warning: run {victim.run_id}: record altered" in err
    assert "ALTERED" in out  # the rendered report is marked
    code, out, err = _invoke("report", "--json", "--store", str(store))
    assert code == 1 and json.loads(out)["integrity"]["verified"] is False
    code, out, err = _invoke("show", victim.run_id[:10], "--store", str(store))
    assert code == 1 and f"run {victim.run_id}: record altered" in err and "ALTERED" in out
    code, _, err = _invoke("show", runs[0].run_id, "--store", str(store))
    assert code == 0 and err == ""  # an untouched run of the same batch shows clean
    code, _, err = _invoke("compare", batch.batch_id, batch.batch_id, "--store", str(store))
    assert code == 1 and f"warning: run {victim.run_id}: record altered" in err


def test_reformatting_a_record_without_changing_it_still_verifies(
    stored: tuple[Path, BatchInfo, list[AgentRun]],
) -> None:
    store, batch, runs = stored
    (text,) = _sql(store, "SELECT record FROM runs WHERE run_id = ?", (runs[0].run_id,))[0]
    pretty = json.dumps(json.loads(text), indent=4)  # same content: the hash is canonical
    _sql(store, "UPDATE runs SET record = ? WHERE run_id = ?", (pretty, runs[0].run_id))
    code, out, _ = _invoke("verify", batch.batch_id, "--store", str(store))
    assert code == 0, out


def test_rehashing_an_edited_record_breaks_the_chain(
    stored: tuple[Path, BatchInfo, list[AgentRun]],
) -> None:
    """An editor who also recomputes the record's own hash is caught by the chain."""
    store, _, runs = stored
    victim = runs[1]
    _flip_success(store, victim)
    (text,) = _sql(store, "SELECT record FROM runs WHERE run_id = ?", (victim.run_id,))[0]
    _sql(
        store,
        "UPDATE runs SET record_hash = ? WHERE run_id = ?",
        (record_hash(text), victim.run_id),
    )
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 1
    assert f"chain_broken: run {victim.run_id}" in out and "record_altered" not in out


def test_deleted_and_edited_artifacts_are_named(
    stored: tuple[Path, BatchInfo, list[AgentRun]],
) -> None:
    store, _, runs = stored
    edited, deleted = runs[0], runs[3]
    target = _artifact(store, edited)
    target.write_text(target.read_text() + "\n", encoding="utf-8")
    _artifact(store, deleted).unlink()
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 1
    assert f"artifact_altered: run {edited.run_id}: artifact trace.jsonl" in out
    assert f"artifact_missing: run {deleted.run_id}: artifact trace.jsonl" in out
    code, _, err = _invoke("report", "--store", str(store))
    assert code == 1 and "edited" in err and "missing" in err
    code, _, err = _invoke("show", deleted.run_id, "--store", str(store))
    assert code == 1 and f"run {deleted.run_id}: artifact trace.jsonl" in err
    assert "edited" not in err  # show names the problems of its run, not its neighbours'


def test_deleted_records_are_named_in_the_middle_and_at_the_end(
    stored: tuple[Path, BatchInfo, list[AgentRun]],
) -> None:
    store, _, runs = stored
    _sql(store, "DELETE FROM runs WHERE run_id = ?", (runs[1].run_id,))
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 1
    assert f"record_missing: run {runs[2].run_id}: 1 record deleted before this one" in out
    _sql(store, "DELETE FROM runs WHERE run_id = ?", (runs[-1].run_id,))
    code, out, err = _invoke("verify", "--store", str(store))
    assert "1 record deleted at the end" in out
    code, _, err = _invoke("report", "--store", str(store))
    assert code == 1 and "deleted" in err


def test_an_edited_batch_record_is_named(
    stored: tuple[Path, BatchInfo, list[AgentRun]],
) -> None:
    store, batch, _ = stored
    (text,) = _sql(store, "SELECT record FROM batches")[0]
    edited = text.replace('"attempts":4', '"attempts":2')
    assert edited != text
    _sql(store, "UPDATE batches SET record = ?", (edited,))
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 1 and f"batch_altered: batch {batch.batch_id}: batch record altered" in out


def test_rows_from_before_the_hashes_are_unverifiable_not_tampered(
    stored: tuple[Path, BatchInfo, list[AgentRun]], tmp_path: Path
) -> None:
    store, batch, runs = stored
    old = tmp_path / "old" / "runs.db"
    old.parent.mkdir()
    with sqlite3.connect(old) as db:
        db.executescript(_OLD_SCHEMA)
        batches = _sql(store, "SELECT batch_id, created_at, record FROM batches")
        db.executemany("INSERT INTO batches VALUES (?, ?, ?)", batches)
        db.executemany(
            "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            _sql(
                store,
                "SELECT run_id, batch_id, task_id, attempt, retry, terminal_reason, success, "
                "created_at, record FROM runs WHERE run_id != ?",
                (runs[-1].run_id,),
            ),
        )
    code, out, _ = _invoke("verify", "--store", str(old))
    assert code == 0, out  # migrated in place; nothing is called tampered
    assert f"{len(runs) - 1} records unverifiable (written before store format 2)" in out
    code, _, err = _invoke("report", "--store", str(old))
    assert code == 0 and "note:" in err and "unverifiable" in err
    # a resume appends hashed records to the old batch; those verify
    code, out, err = _invoke(
        "run",
        str(BANK),
        "--system",
        str(BANK_SYSTEM),
        "--resume",
        batch.batch_id,
        "--json",
        "--store",
        str(old),
    )
    assert code == 0, err
    with RunStore(old) as opened:
        check = opened.verify(batch.batch_id)
        assert len(opened.runs(batch.batch_id)) == len(runs)
    assert check.ok and [p.kind for p in check.problems] == ["unverifiable"]


def test_a_corrupt_record_gives_a_clear_message_everywhere(
    stored: tuple[Path, BatchInfo, list[AgentRun]],
) -> None:
    store, batch, runs = stored
    victim = runs[1]
    _sql(store, "UPDATE runs SET record = '{\"run_id\": ' WHERE run_id = ?", (victim.run_id,))
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 1 and f"record_unreadable: run {victim.run_id}" in out
    for args in (
        ("report",),
        ("show", victim.run_id),
        ("compare", batch.batch_id, batch.batch_id),
        ("run", str(BANK), "--system", str(BANK_SYSTEM), "--resume", batch.batch_id),
    ):
        code, _, err = _invoke(*args, "--store", str(store))
        assert code == 2, (args, err)
        assert f"run {victim.run_id}" in err and "unreadable" in err, (args, err)
        assert "Traceback" not in err


def test_an_empty_batch_gives_a_clear_message_and_resumes(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    batch = _batch(store, attempts=3)
    _sql(store, "DELETE FROM runs")
    _sql(store, "DELETE FROM chains")  # as if it stopped before its first attempt was stored
    for args in (("report", batch.batch_id), ("compare", batch.batch_id, batch.batch_id)):
        code, _, err = _invoke(*args, "--store", str(store))
        assert code == 2 and f"batch {batch.batch_id} has no stored runs" in err, err
        assert "--resume" in err
    code, out, err = _invoke(
        "run",
        str(BANK),
        "--system",
        str(BANK_SYSTEM),
        "--resume",
        batch.batch_id,
        "--json",
        "--store",
        str(store),
    )
    assert code == 0, err
    assert len(json.loads(out)["runs"]) == 3
    code, out, _ = _invoke("verify", "--store", str(store))
    assert code == 0, out


def test_resume_names_altered_records_before_it_runs(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    batch = _batch(store, attempts=4)
    runs = _in_order(store, batch.batch_id)
    _flip_success(store, runs[0])
    _sql(store, "DELETE FROM runs WHERE run_id = ?", (runs[-1].run_id,))
    code, out, err = _invoke(
        "run",
        str(BANK),
        "--system",
        str(BANK_SYSTEM),
        "--resume",
        batch.batch_id,
        "--json",
        "--store",
        str(store),
    )
    assert code == 0, err
    assert f"warning: run {runs[0].run_id}: record altered" in err
    assert "deleted at the end" in err
    assert len(json.loads(out)["runs"]) == 4  # the deleted attempt was run again


def test_show_neutralises_control_characters_and_markup(tmp_path: Path) -> None:
    agent = tmp_path / "noisy_agent.py"
    agent.write_text(
        "class Noisy:\n"
        "    async def run(self, session):\n"
        "        await session.say('\\x1b[2J\\x1b[31mRED [bold]x[/bold] \\u202egnp.exe\\r')\n"
        "        return '\\x1b]0;owned\\x07done\\x9b'\n"
        "def noisy(**params):\n"
        "    return Noisy()\n"
    )
    system = tmp_path / "noisy.yaml"
    system.write_text(
        BANK_SYSTEM.read_text()
        .replace("bank_agent.py:bank_agent", f"{agent}:noisy")
        .replace("params: {fault_rate: 0.5}", "params: {}")
    )
    store = tmp_path / "runs.db"
    with RunStore(store) as runs:
        runner = BatchRunner(load_suite(BANK), load_system(system), runs)
        bank = runner.suite
        bank.config = bank.config.model_copy(update={"canary": None})
        result = asyncio.run(runner.start(BatchConfig(attempts=1)))
    run_id = result.runs[0].run_id
    code, out, err = _invoke("show", run_id, "--store", str(store))
    assert code == 0, err
    for raw in ("\x1b", "\x07", "\r", "\u202e", "\x9b"):
        assert raw not in out
    assert "\\x1b[2J\\x1b[31mRED [bold]x[/bold]" in out  # shown, escaped, markup left literal
    assert "\\u202egnp.exe" in out and "\\x07done" in out


def test_the_terminal_report_shows_imported_text_as_written(tmp_path: Path) -> None:
    rows = tmp_path / "results.jsonl"
    hostile = "t\x1b[2J[bold red]x[/bold red]"
    lines = [
        {
            "task_id": hostile,
            "attempt": 1,
            "success": False,
            "slice_labels": ["s\x1b]0;t\x07"],
        },
        {"task_id": "plain", "attempt": 1, "success": True},
    ]
    rows.write_text("".join(json.dumps(line) + "\n" for line in lines))
    store = str(tmp_path / "runs.db")
    code, _, err = _invoke("import-results", str(rows), "--name", "other", "--store", store)
    assert code == 0, err
    code, out, err = _invoke("report", "--store", store)
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out
    assert "[bold red]x[/bold red]" in out  # markup shown literally, not interpreted
