"""Bad input, twenty-fifth round: the library writing on stderr, and paths under a file given
to commands that read.

- A write waiting for another process's lock on the store printed its line on stderr from the
  library (``store.say_waiting``): a program using the library could not silence it. It is
  now a warning of the logger ``groundstate.store``, which prints nothing unless the caller
  gives it a handler; the command still says it on stderr (``tests/test_malformed_round24.py``).
- A file to read under a name that is a file (``import-results notes.txt/r.jsonl``, ``system
  hash notes.txt/s.yaml``, ``labels import ... --taxonomy notes.txt/t.yaml``) said "cannot
  read: Not a directory", naming neither the file in the way nor that it should be a folder;
  ``--store notes.txt/x.db`` of a reading command said "nothing has been run here yet";
  ``check-env --fixture notes.txt/f.sql`` said "fixture file not found"; ``import-tau2
  notes.txt`` said its ``db.json`` is missing. Each names the file in the way now.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from groundstate.errors import SpecError
from groundstate.spec.files import read_text
from tests.cli_workspace import STORE, assert_refused, digest, groundstate, make_workspace

# --- the store's waiting line ---------------------------------------------------------------

_LIBRARY_CALLER = textwrap.dedent(
    """
    import sqlite3, sys
    from contextlib import closing
    from pathlib import Path
    import groundstate.store as store_module
    from groundstate.store import BatchInfo, RunStore

    store_module.QUIET_WAIT = 0.2
    store_module.BUSY_TIMEOUT = 60.0
    path = Path(sys.argv[1])
    with RunStore(path) as store:
        batch = store.batch(store.batch_ids()[0])
        copied = BatchInfo.model_validate({**batch.model_dump(), "batch_id": "another"})
        holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        with closing(holder):
            holder.execute("BEGIN IMMEDIATE")
            import threading
            threading.Timer(1.0, holder.execute, ("ROLLBACK",)).start()
            store.add_batch(copied)
    print("stored", "another" in RunStore(path, create=False).batch_ids())
    """
)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_workspace(tmp_path_factory.mktemp("ws"))


def test_a_library_caller_waiting_for_the_lock_is_not_written_to(workspace: Path) -> None:
    """A program using the library, its logging not set up, writes while another connection
    holds the lock past the quiet wait: the write waits and is stored, and nothing is printed
    on stderr (the old code printed the "waiting" line from the library)."""
    done = subprocess.run(
        [sys.executable, "-c", _LIBRARY_CALLER, str(workspace / STORE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stored True"
    assert done.stderr == ""


def test_the_waiting_line_is_a_warning_of_the_store_logger(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A caller who wants the line gets it through logging: a warning of
    ``groundstate.store`` naming the store (the old code only printed it)."""
    from groundstate.store import say_waiting

    with caplog.at_level(logging.WARNING, logger="groundstate.store"):
        say_waiting(tmp_path / "runs.db", 28)
    [record] = [r for r in caplog.records if r.name == "groundstate.store"]
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith(f"waiting up to 28 s for the run store {tmp_path}")


def test_the_command_does_not_leave_its_handler_behind(tmp_path: Path) -> None:
    """The command prints the store's warnings while it runs, and only then: called
    in-process (a test runner's call), it leaves the logger as it found it."""
    from click.testing import CliRunner

    from groundstate.cli import main

    logger = logging.getLogger("groundstate.store")
    handlers, propagate = list(logger.handlers), logger.propagate
    CliRunner().invoke(main, ["batches", "--store", str(tmp_path / "none.db")])
    assert logger.handlers == handlers and logger.propagate == propagate


# --- a path under a file, read -------------------------------------------------------------


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("notes\n")
    (tmp_path / "w").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    "args",
    [
        ("import-results", "notes.txt/r.jsonl", "--name", "x", "--store", "w/s.db"),
        ("import-results", "notes.txt/deeper/r.jsonl", "--name", "x", "--store", "w/s.db"),
        ("system", "hash", "notes.txt/s.yaml"),
        ("batches", "--store", "notes.txt/x.db"),
        ("report", "--store", "notes.txt/x.db"),
        ("verify", "--store", "notes.txt/deeper/x.db"),
        ("check-env", "--fixture", "notes.txt/f.sql"),
        ("import-tau2", "notes.txt", "--into", "w/out"),
        ("import-tau2", "notes.txt/data", "--into", "w/out"),
        ("labels", "import", "w/l.csv", "--annotator", "a", "--taxonomy", "notes.txt/t.yaml"),
    ],
)
def test_a_path_to_read_under_a_file_names_the_file_in_the_way(
    folder: Path, args: tuple[str, ...]
) -> None:
    """The old code: "cannot read: Not a directory", "nothing has been run here yet", "fixture
    file not found" or "db.json: missing"; none named ``notes.txt`` as the file in the way."""
    (folder / "w" / "l.csv").write_text("run_id,labels\n")
    refused = groundstate(*args, cwd=folder)
    assert refused.code == 2, refused.text
    assert_refused(refused, "notes.txt is a file, not a folder")
    assert "Not a directory" not in refused.text
    assert (folder / "notes.txt").read_text() == "notes\n"


def test_a_store_under_a_file_is_not_made_by_a_reading_command(folder: Path) -> None:
    """Control: nothing is made, and the file in the way is left alone."""
    before = digest(folder / "notes.txt")
    groundstate("batches", "--store", "notes.txt/x.db", cwd=folder)
    assert digest(folder / "notes.txt") == before
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt", "w"]


def test_a_spec_file_under_a_file_names_it(folder: Path) -> None:
    with pytest.raises(SpecError) as refused:
        read_text(folder / "notes.txt" / "task.yaml")
    assert f"{folder / 'notes.txt'} is a file, not a folder" in str(refused.value)


def test_in_the_way_names_the_first_name_that_is_no_folder(folder: Path) -> None:
    from groundstate.paths import in_the_way

    (folder / "link").symlink_to(folder / "missing")
    assert in_the_way(folder / "notes.txt" / "a" / "b") == (
        f"{folder / 'notes.txt'} is a file, not a folder"
    )
    link = in_the_way(folder / "link" / "a")
    assert link == f"{folder / 'link'} is a link to no folder, not a folder"
    assert in_the_way(folder / "w" / "new" / "newer") is None  # missing folders are no bar


def test_os_reason_keeps_other_reasons(folder: Path) -> None:
    """Control: a reason other than "Not a directory" is Python's, unchanged."""
    from groundstate.paths import os_reason

    try:
        (folder / "missing.txt").read_text()
    except OSError as exc:
        assert os_reason(folder / "missing.txt", exc) == "No such file or directory"
    else:  # pragma: no cover
        raise AssertionError("read a missing file")


# --- a store cut short ---------------------------------------------------------------------


def _cut(store: Path, size: int) -> None:
    """*store* checkpointed (its write-ahead log folded in and removed), then cut to *size*."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(store)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("PRAGMA journal_mode=DELETE")
    data = store.read_bytes()
    store.write_bytes(data[:size])


@pytest.mark.parametrize("short", [1000, 4096])
def test_a_store_cut_short_is_refused_before_a_write(
    workspace: Path, tmp_path: Path, short: int
) -> None:
    """A store copied while a batch was stored (its last page, or part of it, missing):
    SQLite opened it and ``import-results`` stored a whole batch into it, which no reading
    command could then read ("database disk image is malformed"). It is refused now, naming
    the damage, and the file is left as it was."""
    import shutil

    shutil.copytree(workspace, tmp_path / "w")
    root = tmp_path / "w"
    store = root / STORE
    _cut(store, store.stat().st_size - short)
    before = store.read_bytes()
    refused = groundstate(
        "import-results", "results.jsonl", "--name", "more", "--store", STORE, cwd=root
    )
    assert_refused(refused, f"the run store {STORE} is damaged", "restore it from a backup")
    assert "nothing was written to it" in refused.err
    assert store.read_bytes() == before
    assert not (root / (STORE + "-wal")).exists()
    read = groundstate("batches", "--store", STORE, cwd=root)
    assert_refused(read, f"the run store {STORE} is damaged")


def test_a_whole_store_is_not_taken_for_cut_short(workspace: Path, tmp_path: Path) -> None:
    """Control: a store checkpointed whole, and one open with its write-ahead log, are read
    as before."""
    import shutil

    shutil.copytree(workspace, tmp_path / "w")
    _cut(tmp_path / "w" / STORE, 10**9)
    read = groundstate("batches", "--store", STORE, cwd=tmp_path / "w")
    assert read.code == 0, read.text
    assert "damaged" not in read.text
    added = groundstate(
        "import-results", "results.jsonl", "--name", "more", "--store", STORE, cwd=tmp_path / "w"
    )
    assert added.code == 0, added.text


def test_a_malformed_store_says_what_to_do(tmp_path: Path) -> None:
    """SQLite's "database disk image is malformed" alone gave no way on: the line now says
    the file is damaged and to restore it."""
    import sqlite3

    from groundstate.store import _why

    said = _why(sqlite3.DatabaseError("database disk image is malformed"), tmp_path / "s.db")
    assert "cut short or overwritten" in said and "restore it from a backup" in said


# --- task files --------------------------------------------------------------------------


def test_a_task_written_in_json_is_not_passed_over(workspace: Path, tmp_path: Path) -> None:
    """``tasks/extra.json`` holding a task: the old code ran the suite without it and
    without a word; a JSON file beside the tasks that is no task (a check's data) is still
    left alone."""
    import json
    import shutil

    from groundstate.spec.suite import scan_suite

    suite = tmp_path / "retail"
    shutil.copytree(workspace / "retail", suite)
    (suite / "tasks" / "extra.json").write_text(json.dumps({"task_id": "extra"}))
    (suite / "tasks" / "expected.json").write_text(json.dumps({"A": 70}))
    _, errors = scan_suite(suite)
    said = [str(error) for error in errors]
    assert any("extra.json" in e and "task files end in .yaml" in e for e in said), said
    assert not any("expected.json" in e for e in said), said


@pytest.mark.parametrize("clock", ["9999-12-31T23:59:59Z", "9000-01-01T00:00:00Z"])
def test_a_clock_with_no_room_to_move_is_refused_at_load(
    workspace: Path, tmp_path: Path, clock: str
) -> None:
    """``clock: 9999-12-31T23:59:59Z`` passed ``check``; validating the task then failed with
    "OverflowError: date value out of range" as the reset check moved the clock."""
    import shutil

    shutil.copytree(workspace, tmp_path / "w")
    task = tmp_path / "w" / "retail" / "tasks" / "refund-socks.yaml"
    text = task.read_text()
    task.write_text(text.replace("clock: 2025-06-16T15:00:00Z", f"clock: {clock}"))
    checked = groundstate("check", "retail", cwd=tmp_path / "w")
    assert checked.code == 2, checked.text
    assert "refund-socks.yaml:7: clock:" in checked.text and "is too late" in checked.text
    assert "Traceback" not in checked.text


def test_a_clock_far_ahead_with_room_is_kept(workspace: Path, tmp_path: Path) -> None:
    """Control: a clock centuries ahead, with room to move, loads."""
    import shutil

    from groundstate.spec.suite import scan_suite

    shutil.copytree(workspace / "retail", tmp_path / "retail")
    task = tmp_path / "retail" / "tasks" / "refund-socks.yaml"
    task.write_text(task.read_text().replace("2025-06-16T15:00:00Z", "8999-06-16T15:00:00Z"))
    _, errors = scan_suite(tmp_path / "retail")
    assert not [e for e in errors if "clock" in str(e)], errors
