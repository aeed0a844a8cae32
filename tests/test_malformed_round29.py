"""Bad input, twenty-ninth round: a store path that holds no usable database.

- A write-ahead log whose database is missing or empty (the database moved, deleted or
  emptied; only ``runs.db-wal`` copied): ``run`` made a new store there and SQLite deleted the
  log, the only copy of its commits, exit 0; a reading command said "nothing has been run here
  yet". Both now refuse it, exit 2, naming the log and what to do; the log is left as it was.
- A store that is a named pipe: ``run`` waited for ever (opening it waits for a writer); a
  reading command said "nothing has been run here yet". It is refused as what it is.
- A store that is a link to nowhere: a reading command said "nothing has been run here yet",
  ``run`` (the target's folder missing) "unable to open database file". Both name the link's
  target, as a spec file that is such a link already was.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.test_stats_round24 import cli

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _run(store: str) -> tuple[int, str]:
    code, _, err = cli("run", "demo", "--system", "demo/system.yaml", "--store", store)
    return code, err


def _batches(store: str) -> list[str]:
    code, out, err = cli("batches", "--store", store, "--json")
    assert code == 0, err
    return [b["batch_id"] for b in json.loads(out)]


def _log_with_commits(store: Path) -> bytes:
    """Leave commits in *store*'s write-ahead log, as a process killed before a checkpoint
    does, and return the log's bytes."""
    script = (
        "import os, sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "db.execute('PRAGMA wal_autocheckpoint=0')\n"
        'db.execute("INSERT INTO validations (key, created_at, record) "\n'
        "           \"VALUES ('k', 'now', '{}')\")\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(store)], check=True)
    wal = store.with_name(store.name + "-wal")
    assert wal.stat().st_size > 0
    return wal.read_bytes()


@pytest.mark.parametrize("db_state", ["missing", "an empty file"])
def test_a_log_without_its_database_is_refused_and_kept(demo: Path, db_state: str) -> None:
    """Fails on the old code: ``run`` exited 0 and the log was gone."""
    code, err = _run("s/runs.db")
    assert code == 0, err
    (earlier,) = _batches("s/runs.db")
    log = _log_with_commits(demo / "s" / "runs.db")
    os.replace(demo / "s" / "runs.db", demo / "runs.db.moved")
    (demo / "s" / "runs.db-shm").unlink(missing_ok=True)
    if db_state != "missing":
        (demo / "s" / "runs.db").write_bytes(b"")
    for command in (["run", "demo", "--system", "demo/system.yaml"], ["batches"], ["report"]):
        code, _, err = cli(*command, "--store", "s/runs.db")
        assert code == 2, (command, err)
        assert "Traceback" not in err
        assert err.startswith(f"error: the run store s/runs.db is {db_state}"), err
        assert "write-ahead log runs.db-wal" in err and "put it back" in err, err
    assert (demo / "s" / "runs.db-wal").read_bytes() == log
    assert (demo / "s" / "runs.db").exists() == (db_state != "missing")
    assert not (demo / "s" / "runs.db").exists() or (demo / "s" / "runs.db").stat().st_size == 0
    os.replace(demo / "runs.db.moved", demo / "s" / "runs.db")  # put back: every commit is read
    assert _batches("s/runs.db") == [earlier]
    with sqlite3.connect(demo / "s" / "runs.db") as db:
        assert db.execute("SELECT record FROM validations WHERE key = 'k'").fetchone() == ("{}",)


def test_an_empty_log_beside_no_database_is_no_store_to_keep(demo: Path) -> None:
    """The control: an empty log holds no commit, so a new store is made."""
    (demo / "s").mkdir()
    (demo / "s" / "runs.db-wal").write_bytes(b"")
    code, err = _run("s/runs.db")
    assert code == 0, err
    assert len(_batches("s/runs.db")) == 1


def test_a_store_that_is_a_named_pipe_is_refused_at_once(demo: Path) -> None:
    """Fails on the old code: ``run`` waited for a writer for ever (killed here after 60 s),
    ``batches`` said nothing had been run there."""
    os.mkfifo(demo / "pipe.db")
    env = {**os.environ, "PYTHONPATH": SRC}
    for command in (["run", "demo", "--system", "demo/system.yaml"], ["batches"]):
        done = subprocess.run(
            [sys.executable, "-m", "groundstate.cli", *command, "--store", "pipe.db"],
            capture_output=True, text=True, timeout=60, env=env,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert done.stderr == (
            "error: the run store pipe.db is not a regular file (a named pipe); give another "
            "--store\n"
        ), done.stderr


def test_a_store_that_is_a_link_to_nowhere_names_its_target(demo: Path) -> None:
    """Fails on the old code: "nothing has been run here yet" / "unable to open database
    file"."""
    target = demo / "gone" / "runs.db"
    os.symlink(target, demo / "link.db")
    for command in (["batches"], ["run", "demo", "--system", "demo/system.yaml"]):
        code, _, err = cli(*command, "--store", "link.db")
        assert code == 2 and "Traceback" not in err
        assert err == (
            f"error: no run store at link.db: it is a link to {target}, which does not "
            "exist; give the store's file with --store\n"
        ), err
    assert not (demo / "gone").exists()


def test_a_link_to_a_new_file_in_a_folder_that_is_there_still_makes_the_store(
    demo: Path,
) -> None:
    """The control: ``run`` makes the store the link leads to, as before."""
    (demo / "data").mkdir()
    os.symlink(demo / "data" / "runs.db", demo / "link.db")
    code, err = _run("link.db")
    assert code == 0, err
    assert (demo / "data" / "runs.db").is_file()
    code, _, err = cli("batches", "--store", "link.db")
    assert code == 0, err


# --- a file a field names that is there but no file: said as what it is, never "no file" ----


def _pipe(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _to_nowhere(path: Path) -> None:
    path.unlink()
    os.symlink("/gone/" + path.name, path)


@pytest.mark.parametrize(
    ("file", "make", "line"),
    [
        ("agent.py", _pipe, "demo/system.yaml:7: harness.orchestration_loop.entry: "
         "demo/agent.py: not a regular file (a named pipe)"),
        ("agent.py", _to_nowhere, "demo/system.yaml:7: harness.orchestration_loop.entry: "
         "demo/agent.py: a link to /gone/agent.py, which does not exist"),
        ("fixtures/library.sql", _pipe, "demo/tasks/renew-dune.yaml:6: initial_state_fixture: "
         "fixtures/library.sql: not a regular file (a named pipe)"),
        ("checks.py", _pipe, "demo/tasks/renew-dune.yaml:36: outcome_assertions[1].check: "
         "checks.py: not a regular file (a named pipe) (for 'checks.py:no_due_date_earlier')"),
    ],
)  # fmt: skip
def test_a_file_a_field_names_that_is_no_file_is_said_as_what_it_is(
    demo: Path, file: str, make: Any, line: str
) -> None:
    """Fails on the old code: "no file /tmp/.../demo/agent.py", "no file checks.py in the
    suite", for a file ``ls`` shows."""
    code, err = _run("s.db")
    assert code == 0, err
    (earlier,) = _batches("s.db")
    make(demo / "demo" / file)
    code, err = _run("s.db")
    assert code == 2 and "Traceback" not in err
    assert err == f"error: {line}\n", err
    assert _batches("s.db") == [earlier]


@pytest.mark.parametrize(
    ("file", "said"),
    [
        ("agent.py", "entry: no file demo/agent.py\n"),
        ("checks.py", "no file checks.py in the suite"),
    ],
)
def test_a_missing_file_a_field_names_is_still_no_file(demo: Path, file: str, said: str) -> None:
    """The control: nothing there is "no file", as before (the agent's now named as given,
    not in full)."""
    (demo / "demo" / file).unlink()
    code, err = _run("s.db")
    assert code == 2 and said in err, err


def test_a_results_file_that_is_a_named_pipe_is_said_so(demo: Path) -> None:
    """Fails on the old code: "no such file", for a file that is there."""
    os.mkfifo(demo / "results.jsonl")
    code, _, err = cli("import-results", "results.jsonl", "--name", "x", "--store", "s.db")
    assert code == 2 and err == "error: results.jsonl: not a regular file (a named pipe)\n", err
    assert not (demo / "s.db").exists()
