"""Bad input, twenty-fourth round: a store another process holds, paths a file is in the way
of, folders that refuse writes, and task files behind a link.

- A write to a store whose write lock another process held (a run storing tries, a lock left
  open) waited 30 s without a word before failing; ``report`` of a batch not yet sealed
  waited the same 30 s to write its seal, a cache it then gave up. A write now says on stderr,
  after a short quiet wait, that it waits and for which store; a seal is not waited for.
- An output path (``--html``, ``--out``, ``--store``) under a name that is a file was refused
  as "File exists" (no file of that name exists) or "Not a directory", naming neither the
  file in the way nor that it should be a folder. ``paths.make_folder`` names it.
- A new store in a folder that refuses files (immutable, read-only, another user's) was
  "unable to open database file": it now names the folder and the reason.
- A task file in a folder linked into ``tasks/`` (or a solution's folder) was passed over
  without a word, where one in a real subfolder is reported.
- A check file that does not import was reported twice by ``check`` of a suite given by a
  relative path, once under each spelling of its path.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from groundstate.spec.suite import scan_suite
from tests.cli_workspace import (
    COMMAND_SECONDS,
    STORE,
    TASK,
    assert_refused,
    digest,
    groundstate,
)

TASK_FILE = f"retail/tasks/{TASK}.yaml"
IMPORT = (sys.executable, "-m", "groundstate", "import-results", "results.jsonl")


def _batch_ids(root: Path) -> list[str]:
    with closing(sqlite3.connect(root / STORE)) as db:
        return [row[0] for row in db.execute("SELECT batch_id FROM batches ORDER BY batch_id")]


@contextmanager
def _write_lock_held(store: Path) -> Iterator[None]:
    """Another connection holding the store's write lock (``BEGIN IMMEDIATE``) until the
    block ends; WAL readers go on."""
    with closing(sqlite3.connect(store, isolation_level=None)) as holder:
        holder.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            holder.execute("ROLLBACK")


# --- a store another process holds --------------------------------------------------------


def test_a_write_waiting_for_another_process_says_so_then_goes_on(copy: Path) -> None:
    """``import-results`` while another process holds the write lock: a line on stderr names
    the store and says it waits (the old code said nothing for 30 s, then failed); once
    the lock is let go, the import is stored and nothing else changed."""
    before = _batch_ids(copy)
    with _write_lock_held(copy / STORE):
        command = subprocess.Popen(
            [*IMPORT, "--name", "while-locked", "--store", STORE],
            cwd=copy,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
        )
        try:
            assert command.stderr is not None
            said = command.stderr.readline()  # the old code: the "locked" error, after 30 s
            assert said.startswith("groundstate: waiting up to"), said
            assert f"for the run store {STORE}: another process holds its write lock" in said
        except BaseException:
            command.kill()
            command.wait()
            raise
    out, err = command.communicate(timeout=COMMAND_SECONDS)
    assert command.returncode == 0, out + err
    assert "Traceback" not in out + err
    after = _batch_ids(copy)
    assert len(after) == len(before) + 1 and set(before) <= set(after)


def test_report_of_an_unsealed_batch_does_not_wait_for_a_held_lock(copy: Path) -> None:
    """The seal ``report`` writes is a cache: with the write lock held it is skipped at once,
    not after the 30 s wait (an upper bound well under it: the command takes seconds)."""
    with closing(sqlite3.connect(copy / STORE)) as db, db:
        db.execute("DELETE FROM seals")
    with _write_lock_held(copy / STORE):
        started = time.monotonic()
        reported = groundstate("report", "--store", STORE, cwd=copy)
        took = time.monotonic() - started
    assert reported.code == 0, reported.text
    assert "waiting" not in reported.err and "cannot write" not in reported.text
    assert took < 25, took


def test_a_write_that_outwaits_the_lock_names_the_store_and_the_lock(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control: past the wait, the write fails naming the store and the lock (in-process,
    the wait shortened); nothing is stored."""
    import groundstate.store as store_module
    from groundstate.errors import StoreError
    from groundstate.store import BatchInfo, RunStore

    monkeypatch.setattr(store_module, "BUSY_TIMEOUT", 3.0)
    monkeypatch.setattr(store_module, "QUIET_WAIT", 0.5, raising=False)
    before = digest(copy / STORE)
    with RunStore(copy / STORE) as store:
        batch = store.batch(_batch_ids(copy)[0])
        copied = BatchInfo.model_validate({**batch.model_dump(), "batch_id": "another"})
        with _write_lock_held(copy / STORE), pytest.raises(StoreError) as refused:
            store.add_batch(copied)
    assert f"cannot write to the run store {copy / STORE}: database is locked" in str(refused.value)
    assert "another process kept a write open on it" in str(refused.value)
    assert digest(copy / STORE) == before


# --- a file in the way of a folder ---------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("report", "--html", "notes.txt/report.html"),
        ("report", "--html", "notes.txt/deeper/report.html"),
        ("compare", "BATCH", "BATCH", "--html", "notes.txt/compare.html"),
        ("export", "--format", "jsonl", "--out", "notes.txt/out.jsonl"),
        ("sample-failures", "BATCH", "--n", "1", "--out", "notes.txt/sheet"),
    ],
)
def test_an_output_path_under_a_file_names_the_file_in_the_way(
    copy: Path, args: tuple[str, ...]
) -> None:
    """The old code said "File exists" (``notes.txt/report.html`` does not) or "Not a
    directory"."""
    (copy / "notes.txt").write_text("mine\n")
    batch = _batch_ids(copy)[0]
    before = digest(copy / STORE)
    done = groundstate(*(batch if a == "BATCH" else a for a in args), "--store", STORE, cwd=copy)
    assert_refused(done, "notes.txt is a file, not a folder")
    assert "File exists" not in done.err
    assert (copy / "notes.txt").read_text() == "mine\n"
    assert digest(copy / STORE) == before


@pytest.mark.parametrize("command", ["import-results", "validate"])
def test_a_store_under_a_file_names_the_file_in_the_way(copy: Path, command: str) -> None:
    (copy / "notes.txt").write_text("mine\n")
    args = ["results.jsonl", "--name", "n"] if command == "import-results" else ["retail"]
    done = groundstate(command, *args, "--store", "notes.txt/runs.db", cwd=copy)
    assert_refused(done, "the run store notes.txt/runs.db", "notes.txt is a file, not a folder")
    assert (copy / "notes.txt").read_text() == "mine\n"


def test_make_folder_names_a_dangling_link_in_the_way(tmp_path: Path) -> None:
    from groundstate.paths import make_folder

    (tmp_path / "gone").symlink_to("nowhere")
    with pytest.raises(NotADirectoryError, match="gone is a link to no folder, not a folder"):
        make_folder(tmp_path / "gone" / "sub")


def test_make_folder_makes_what_is_missing(tmp_path: Path) -> None:
    """Control: the folders are made, an existing one is fine."""
    from groundstate.paths import make_folder

    make_folder(tmp_path / "a" / "b")
    make_folder(tmp_path / "a" / "b")
    assert (tmp_path / "a" / "b").is_dir()


# --- a folder that refuses writes ------------------------------------------------------------


@contextmanager
def _immutable(path: Path) -> Iterator[None]:
    """*path* made immutable (``chattr +i``): refused even to root, as this sandbox runs; a
    machine without chattr, or a file system or user that cannot set it, skips."""
    try:
        made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, timeout=30)
    except OSError as exc:
        pytest.skip(f"no chattr here: {exc}")
    if made.returncode != 0:
        pytest.skip(f"chattr +i refused here: {made.stderr.decode(errors='replace')}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True, timeout=30)


def test_a_new_store_in_a_folder_that_refuses_files_names_the_folder(copy: Path) -> None:
    """The old code: "cannot open the run store locked/runs.db: unable to open database file"."""
    (copy / "locked").mkdir()
    with _immutable(copy / "locked"):
        done = groundstate(
            "import-results", "results.jsonl", "--name", "n", "--store", "locked/runs.db", cwd=copy
        )
    assert_refused(done, "the run store locked/runs.db", "its folder locked cannot be written")
    assert list((copy / "locked").iterdir()) == []


def test_an_immutable_store_is_still_read_and_refuses_writes_in_one_line(copy: Path) -> None:
    """Control: a store file that cannot be written is read by reading commands, and a write
    is refused naming it; nothing changes."""
    before = digest(copy / STORE)
    with _immutable(copy / STORE):
        for journal in copy.glob(STORE + "-*"):
            os.remove(journal)  # checkpointed: a reader then needs no journal
        assert groundstate("verify", "--store", STORE, cwd=copy).code == 0
        done = groundstate(
            "import-results", "results.jsonl", "--name", "n", "--store", STORE, cwd=copy
        )
    assert_refused(done, f"cannot write to the run store {STORE}")
    assert digest(copy / STORE) == before


# --- task files behind a link ----------------------------------------------------------------


def _problems(root: Path) -> list[str]:
    return [str(problem) for problem in scan_suite(root)[1]]


def test_a_task_file_in_a_folder_linked_into_tasks_is_reported(copy: Path) -> None:
    (copy / "elsewhere").mkdir()
    (copy / "elsewhere" / "extra.yaml").write_text((copy / TASK_FILE).read_text())
    (copy / "retail/tasks/more").symlink_to(copy / "elsewhere")
    problems = _problems(copy / "retail")
    assert [p for p in problems if "more: not read: a link to a folder of YAML files" in p], (
        problems
    )
    checked = groundstate("check", "retail", cwd=copy)
    assert checked.code == 2 and "tasks/more: not read" in checked.out, checked.text


def test_a_solution_file_in_a_linked_folder_is_reported(copy: Path) -> None:
    (copy / "elsewhere").mkdir()
    oracle = copy / f"retail/solutions/{TASK}/oracle.yaml"
    (copy / "elsewhere" / "other.yaml").write_text(oracle.read_text())
    (copy / f"retail/solutions/{TASK}/more").symlink_to(copy / "elsewhere")
    problems = _problems(copy / "retail")
    assert [p for p in problems if f"{TASK}/more: not read: a link to a folder" in p], problems


def test_links_in_tasks_that_hold_no_yaml_are_left_alone(copy: Path) -> None:
    """Controls: a link to a folder without YAML files, a link to nowhere and a loop of links
    (named without ``.yaml``) in ``tasks/`` are no task files; a real subfolder is still
    reported as before."""
    (copy / "notes").mkdir()
    (copy / "notes" / "readme.txt").write_text("notes\n")
    (copy / "retail/tasks/notes").symlink_to(copy / "notes")
    (copy / "retail/tasks/gone").symlink_to("nowhere")
    (copy / "retail/tasks/loop").symlink_to("loop")
    assert _problems(copy / "retail") == []
    (copy / "retail/tasks/sub").mkdir()
    (copy / "retail/tasks/sub/x.yaml").write_text("task_id: x\n")
    assert [p for p in _problems(copy / "retail") if "not read: a subfolder of tasks/" in p]


def test_a_check_file_that_does_not_import_is_reported_once(copy: Path) -> None:
    """Named by suite.yaml's constraint sets (from the folder as given) and by a task's (from
    the absolute root), its error was printed twice, once under each spelling of its path."""
    checks = copy / "retail/checks.py"
    checks.write_text(checks.read_text() + "\n  x = 1\n")
    checked = groundstate("check", "retail", cwd=copy)
    assert checked.code == 2, checked.text
    said = [line for line in checked.out.splitlines() if "IndentationError" in line]
    assert len(said) == 1 and said[0].startswith("retail/checks.py:"), checked.text
    assert "1 error" in checked.err
