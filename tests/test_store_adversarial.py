"""The run store under an outside team's attacks on the file itself: damaged pages, a cut
file, a write-ahead log left by a crash, a store from a newer groundstate, a store that may
not be written here. Every reading command either reads every stored record or stops with one
clear line (exit 2), never a traceback, and never changes the file it refuses."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.records import AgentRun
from groundstate.store import STORE_FORMAT, BatchInfo, RunStore

from .test_store_integrity import _OLD_SCHEMA, _batch


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def _readers(store: Path, batch: BatchInfo) -> list[list[str]]:
    """Every command that only reads a store."""
    where = ["--store", str(store)]
    return [
        ["report", *where],
        ["verify", *where],
        ["batches", *where],
        ["runs", batch.batch_id, *where],
    ]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, BatchInfo]:
    store = tmp_path_factory.mktemp("made") / "runs.db"
    return store, _batch(store, attempts=3)


def _copy(made: tuple[Path, BatchInfo], to: Path) -> Path:
    shutil.copytree(made[0].parent, to)
    return to / made[0].name


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("damage", ["pages", "truncated", "header"])
def test_a_damaged_store_file_is_one_clear_error_in_every_reader(
    made: tuple[Path, BatchInfo], tmp_path: Path, damage: str
) -> None:
    store = _copy(made, tmp_path / "s")
    data = bytearray(store.read_bytes())
    noise = random.Random(7).randbytes(3 * 4096)
    if damage == "pages":  # the runs table's pages overwritten (a bad disk block, a bad copy)
        with sqlite3.connect(store) as db:
            size = db.execute("PRAGMA page_size").fetchone()[0]
            sql = "SELECT rootpage FROM sqlite_master WHERE name = 'runs'"
            (root,) = db.execute(sql).fetchone()
        data[(root - 1) * size : root * size] = noise[:size]
    elif damage == "truncated":  # a copy cut short
        del data[len(data) // 2 :]
    else:  # the file's first page gone
        data[:100] = noise[:100]
    store.write_bytes(bytes(data))
    # `batches` reads the batch rows and chain heads only: damage to the runs table is for
    # the commands that read runs to find.
    readers = _readers(store, made[1])
    for args in readers if damage != "pages" else [r for r in readers if r[0] != "batches"]:
        code, out, err = _invoke(*args)
        assert code == 2, (args, out, err)
        assert "Traceback" not in out + err
        said = ("malformed", "not a database", "is damaged")  # damaged: cut short (round 25)
        assert str(store) in err and any(word in err for word in said), err


def _crash_after_a_batch(store: Path) -> str:
    """A process that stores a whole batch in *store* and dies without closing it: its
    commits are only in the -wal file (no checkpoint yet), as a killed batch leaves them."""
    script = """
import asyncio, os, sys
from collections.abc import Iterator
from pathlib import Path
from groundstate.runner import BatchConfig, BatchRunner
from groundstate.spec.suite import load_suite
from groundstate.spec.system import load_system
from groundstate.store import RunStore
from tests.conftest import BANK, BANK_SYSTEM
runner = BatchRunner(load_suite(BANK), load_system(BANK_SYSTEM), RunStore(Path(sys.argv[1])))
print(asyncio.run(runner.start(BatchConfig(attempts=2))).batch.batch_id, flush=True)
os._exit(0)  # killed: the store is never closed, so never checkpointed
"""
    root = Path(__file__).parents[1]
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    done = subprocess.run(
        [sys.executable, "-c", script, str(store)], cwd=root, env=env, capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    assert store.with_name(store.name + "-wal").stat().st_size > 0
    return done.stdout.strip()


def test_a_write_ahead_log_left_by_a_crash_is_read_not_lost(
    made: tuple[Path, BatchInfo], tmp_path: Path
) -> None:
    """A process killed after its commits leaves them in the -wal file only: the next reader
    sees every one of them."""
    store = _copy(made, tmp_path / "s")
    batch_id = _crash_after_a_batch(store)
    code, out, _ = _invoke("verify", batch_id, "--store", str(store))
    assert code == 0 and f"batch {batch_id}: 2 records" in out, out
    code, out, _ = _invoke("batches", "--store", str(store))
    assert made[1].batch_id in out and batch_id in out


def test_a_store_of_a_newer_format_is_refused_and_left_as_it_was(
    made: tuple[Path, BatchInfo], tmp_path: Path
) -> None:
    store = _copy(made, tmp_path / "s")
    with sqlite3.connect(store) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == STORE_FORMAT  # stamped
        db.execute(f"PRAGMA user_version = {STORE_FORMAT + 1}")
    before = _digest(store)
    for args in _readers(store, made[1]):
        code, out, err = _invoke(*args)
        assert code == 2, (args, out, err)
        assert f"store format {STORE_FORMAT + 1}" in err and "upgrade groundstate" in err
    with pytest.raises(Exception, match="newer than this groundstate"):
        RunStore(store)  # a writer is refused too
    assert _digest(store) == before


def _read_only(target: Path) -> list[str] | None:
    """A command prefix under which *target* (a folder and all in it, or one file) cannot be
    written, or None if this machine offers none: permissions for a user, a read-only bind
    mount for root."""
    if os.geteuid() != 0:
        for path in [target, *(target.iterdir() if target.is_dir() else [])]:
            path.chmod(0o555 if path.is_dir() else 0o444)
        return []
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    mount = f"mount --bind {target} {target} && mount -o remount,bind,ro {target}"
    probe = subprocess.run([unshare, "-m", "sh", "-c", f"{mount} && ! test -w {target}"])
    return None if probe.returncode else [unshare, "-m", "sh", "-c", mount + ' && exec "$@"', "-"]


@pytest.mark.parametrize("journal", ["checkpointed", "log_left", "old_format", "file_only"])
def test_a_store_in_a_read_only_folder_or_file_is_read_but_never_written(
    made: tuple[Path, BatchInfo], tmp_path: Path, journal: str
) -> None:
    store = _copy(made, tmp_path / "s")
    if journal == "log_left":  # commits still in the log: reading without them would lose them
        _crash_after_a_batch(store)
        store.with_name("runs.db-shm").unlink()
    if journal == "old_format":  # a store from before format 2: it cannot be migrated here
        store.unlink()
        with sqlite3.connect(store) as db:
            db.executescript(_OLD_SCHEMA)
            db.execute("INSERT INTO batches VALUES (?, '2020', '{}')", (made[1].batch_id,))
    prefix = _read_only(store if journal == "file_only" else store.parent)
    if prefix is None:
        pytest.skip("no way to make a read-only folder on this machine")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [*prefix, sys.executable, "-m", "groundstate", *args]
        return subprocess.run(command, capture_output=True, text=True, env=env)

    try:
        for args in _readers(store, made[1]):
            done = cli(*args)
            assert "Traceback" not in done.stdout + done.stderr
            if journal in ("log_left", "old_format"):
                assert done.returncode == 2, (args, done.stderr)
                reason = "write-ahead log" if journal == "log_left" else "older groundstate"
                assert reason in done.stderr and str(store) in done.stderr
            else:
                assert done.returncode == 0, (args, done.stdout, done.stderr)
        if journal == "checkpointed":
            assert "all verify" in cli("verify", "--store", str(store)).stdout
            assert not store.with_name("runs.db-wal").exists()
        if journal == "file_only":  # the folder can be written, the file not: no seal kept
            assert "all verify" in cli("verify", "--store", str(store)).stdout
            assert not sqlite3.connect(store).execute("SELECT COUNT(*) FROM seals").fetchone()[0]
    finally:
        store.parent.chmod(0o755)
        store.chmod(0o644)


@pytest.mark.parametrize("typed", ["%", "_", "%%", "_" * 12, "[a-f]*"])
def test_wildcards_typed_as_an_id_match_nothing(made: tuple[Path, BatchInfo], typed: str) -> None:
    """An id prefix is taken literally: `report %` does not pick some batch, `show _` no run."""
    store, batch = made
    for args, what in [(["report", typed], "batch"), (["show", typed], "run")]:
        code, _, err = _invoke(*args, "--store", str(store))
        assert code == 2 and f"no {what} {typed}" in err, err
    code, out, _ = _invoke("report", batch.batch_id[:4], "--store", str(store))
    assert code == 0 and batch.batch_id in out  # a true prefix still finds it


_NASTY = [
    "nul\x00inside",
    "\x00",
    "crlf\r\nand\rcr",
    "\u2028line\u2029para\u0085nel",
    "\ufeffbom \U0001f600 e\u0301 \u202eRTL",
    "\x1b[31mred\x1b[0m\x07",
    "tab\tand \\u0000 as text",
    "",
]


@pytest.mark.parametrize("text", _NASTY)
def test_every_stored_text_field_round_trips_byte_for_byte(
    made: tuple[Path, BatchInfo], tmp_path: Path, text: str
) -> None:
    """NUL, line separators, escapes, BOMs and combining marks in the final reply, a tool's
    name, arguments (keys too), output and error, a message, a check's detail and the
    infrastructure status come back from the store exactly, and verify still holds."""
    store = _copy(made, tmp_path / "s")
    with RunStore(store) as runs:
        run = runs.runs(made[1].batch_id)[0]
        log = [
            {"kind": "message", "role": "agent", "text": text, "step": 0, "at": 0.0},
            {
                "kind": "tool_call", "step": 1, "tool": text, "args": {text: [text]}, "ok": False,
                "output": {"rows": [[text]]}, "error": text, "duration_ms": 1.0, "at": 0.1,
            },
        ]  # fmt: skip
        # in a batch of its own, planning it: a try past a batch's plan is named by verify
        runs.add_batch(made[1].model_copy(update={"batch_id": "nasty0batch"}))
        data = run.model_dump(mode="json")
        data |= {"run_id": run.run_id + "x", "batch_id": "nasty0batch", "final_message": text}
        data |= {"observation_action_log": log, "infrastructure_status": {text: text}}
        data["outcome_assertion_results"][0]["detail"] = text
        stored = runs.add_run(AgentRun.model_validate(data), {"trace.jsonl": text})
        artifact = stored.artifact_locations["trace.jsonl"]
    with RunStore(store, create=False) as runs:
        back = runs.run(stored.run_id)
        assert back == stored
        assert back.model_dump_json() == stored.model_dump_json()
        assert back.final_message == text and back.infrastructure_status == {text: text}
        assert runs.read_artifact(artifact) == text
        assert runs.verify("nasty0batch").ok
    for shown in (["--json"], []):
        code, out, err = _invoke("show", stored.run_id, *shown, "--store", str(store))
        assert code == 0 and "Traceback" not in out + err, err
    code, out, _ = _invoke("show", stored.run_id, "--json", "--store", str(store))
    assert json.loads(out)["final_message"] == text


def test_verify_while_another_process_stores_sees_one_commit(
    made: tuple[Path, BatchInfo], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A try committed by a running batch between verify reading the rows and reading the
    chain head is not a record "deleted at the end": verify reads one snapshot."""
    store = _copy(made, tmp_path / "s")
    batch_id = made[1].batch_id
    with RunStore(store) as reader, RunStore(store) as writer:
        run = writer.runs(batch_id)[0]
        extra = run.model_copy(update={"run_id": run.run_id + "x", "attempt": 99})
        stream = reader._stream
        written: list[AgentRun] = []

        def rows_then_a_commit(
            sql: str, params: tuple[object, ...]
        ) -> Iterator[tuple[object, ...]]:
            yield from stream(sql, params)
            if "FROM runs" in sql and not written:  # the batch moves on meanwhile
                written.append(writer.add_run(extra, {"trace.jsonl": "x"}))

        monkeypatch.setattr(reader, "_stream", rows_then_a_commit)
        before = reader.verify(batch_id)
        assert written and before.ok, before.problems
        after = reader.verify(batch_id)  # the try (past the plan: named so) is read now
        assert [p.kind for p in after.problems] == ["outside_plan"]
        assert after.records == before.records + 1


def test_a_reading_command_on_an_empty_file_leaves_it_empty(tmp_path: Path) -> None:
    """`report --store empty.db` (a file made by `touch`) is refused, not made a store."""
    empty = tmp_path / "empty.db"
    empty.touch()
    for command in ("report", "verify", "batches"):
        code, _, err = _invoke(command, "--store", str(empty))
        assert code == 2 and f"{empty} is an empty file" in err, err
    assert empty.stat().st_size == 0 and not (tmp_path / "artifacts").exists()
