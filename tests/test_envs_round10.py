"""Tenth environments audit: the state a check reads is the state hashed, diffed and reset."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from groundstate.environments.base import diff_snapshots
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.environments.sqlite_writes import IMAGE
from groundstate.environments.workspace import WorkspaceEnvironment
from groundstate.errors import PermissionDenied, ToolError

CLOCK = datetime(2024, 1, 1, tzinfo=UTC)


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[WorkspaceEnvironment]:
    repo = tmp_path / "suite" / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / ".gitignore").write_text("build/\n*.log\n")
    (repo / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    with WorkspaceEnvironment(repo, clock=CLOCK, options={"sandbox": "none"}) as env:
        env.reset()
        yield env


def test_a_view_lists_plain_paths(workspace: WorkspaceEnvironment) -> None:
    # files() gave the snapshot's keys, JSON text ('"src/calc.py"'): `path in files()` was
    # always false.
    view = workspace.evaluator_view()
    assert view.files() == [".gitignore", "src/calc.py"]
    assert workspace.initial_view().files() == [".gitignore", "src/calc.py"]


def test_a_view_reads_no_file_the_state_leaves_out(workspace: WorkspaceEnvironment) -> None:
    """An ignored file is not state: the hash, the diff and the hidden tests' checkout do not
    hold it, so a check must not pass on it either (it read the live tree)."""
    before = workspace.state_hash()
    with workspace.tool_transaction():
        workspace.handle.write("build/answer.txt", "42\n")
        workspace.handle.write("run.log", "all tests passed\n")
        os.symlink("calc.py", workspace.root / "src" / "alias.py")  # a state link, to state
        os.symlink("../build/answer.txt", workspace.root / "src" / "answer.txt")
    assert workspace.state_hash() != before  # the links are state
    view = workspace.evaluator_view()
    for path in ("build/answer.txt", "run.log", "src/answer.txt"):
        with pytest.raises(FileNotFoundError):
            view.read(path)
    assert view.read("src/alias.py") == view.read("src/calc.py")
    assert "build/answer.txt" not in view.files() and "src/answer.txt" in view.files()


NUL_FIXTURE = """
CREATE TABLE notes (id TEXT PRIMARY KEY, body TEXT);
CREATE TABLE tags (name TEXT PRIMARY KEY) WITHOUT ROWID;
INSERT INTO notes VALUES ('a', 'hello');
INSERT INTO tags VALUES ('x');
"""


@pytest.mark.parametrize(
    ("sql", "value"),
    [
        ("INSERT INTO notes VALUES (?, 'new')", "a\x00b"),  # a key holding NUL
        ("UPDATE notes SET body = ? WHERE id = 'a'", "hello\x00world"),
        ("UPDATE notes SET id = ? WHERE id = 'a'", "a\x00"),
        ("INSERT OR REPLACE INTO tags VALUES (?)", "x\x00y"),
        ("UPDATE notes SET body = ? WHERE id = 'a'", "\x00"),
    ],
)
def test_a_text_holding_nul_is_written_and_diffed_whole(
    tmp_path: Path, sql: str, value: str
) -> None:
    """SQLite's quote(), which logged each written cell, ends a text at its first NUL: the
    write went unrecorded (the text before the NUL was unchanged), and a row keyed by such a
    text was read back by the wrong key, so the diff left it out while the hash saw it."""
    fixture = tmp_path / "notes.sql"
    fixture.write_text(NUL_FIXTURE)
    with SqliteEnvironment(fixture, clock=datetime(2024, 1, 1)) as env:
        initial = env.reset()
        with env.tool_transaction() as effects:
            env.agent_db.execute(sql, (value,))
        assert env.state_hash() != initial
        whole = diff_snapshots(env.initial_snapshot(), env.snapshot())  # every row read
        assert env.diff_from_initial() == whole and not whole.is_empty()
        after = [write.after for write in effects.writes if write.after is not None]
        assert any(value in row.values() for row in after), effects.writes


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE notes SET body = CAST(x'ff' AS TEXT)",
        "INSERT INTO notes VALUES (CAST(x'c3' AS TEXT), 'key not UTF-8')",
        "INSERT INTO tags VALUES (CAST(x'00ff' AS TEXT))",
    ],
)
def test_text_that_is_not_utf8_is_the_agents_error_and_undone(tmp_path: Path, sql: str) -> None:
    """The harness could not read such a text back (its writes, hash, snapshots): the call
    crashed, an environment failure (an invalid attempt) the agent's SQL caused."""
    fixture = tmp_path / "notes.sql"
    fixture.write_text(NUL_FIXTURE)
    with SqliteEnvironment(fixture, clock=datetime(2024, 1, 1)) as env:
        initial = env.reset()
        with pytest.raises(ToolError, match="not valid UTF-8"), env.tool_transaction():
            env.agent_db.execute(sql)
        assert env.state_hash() == initial and env.diff_from_initial().is_empty()
        with env.tool_transaction() as effects:  # the environment goes on
            env.agent_db.execute("UPDATE notes SET body = 'fine'")
        assert [write.key for write in effects.writes] == ["a"]


EXACT = -6.4402151411858995e298
ROUNDED = -6.4402151411859e298  # what SQLite's quote() writes for EXACT (15 digits)


@pytest.mark.parametrize(
    ("sql", "value"),
    [
        ("INSERT INTO r VALUES (?, 0.5)", EXACT),  # a REAL key quote() rounds
        ("UPDATE r SET v = ? WHERE id = 1.0", EXACT),  # over the value it rounds to
    ],
)
def test_a_real_is_written_and_diffed_exactly(tmp_path: Path, sql: str, value: float) -> None:
    """quote() rounds some REALs to 15 digits: a write of one over its rounded form was no
    write, and a row keyed by one was read back by the rounded key, missing from the diff."""
    assert EXACT != ROUNDED
    fixture = tmp_path / "reals.yaml"
    fixture.write_text(
        "schema: CREATE TABLE r (id REAL PRIMARY KEY, v REAL);\n"
        f"rows: {{r: [{{id: 1.0, v: {ROUNDED!r}}}, {{id: 2.0, v: 0.0}}]}}\n"
    )
    with SqliteEnvironment(fixture, clock=datetime(2024, 1, 1)) as env:
        initial = env.reset()
        with env.tool_transaction() as effects:
            env.agent_db.execute(sql, (value,))
        assert env.state_hash() != initial
        whole = diff_snapshots(env.initial_snapshot(), env.snapshot())
        assert env.diff_from_initial() == whole and not whole.is_empty()
        (write,) = effects.writes
        assert write.after is not None
        assert value in write.after.values()


def test_files_in_a_nested_repository_are_in_the_diff(
    workspace: WorkspaceEnvironment, tmp_path: Path
) -> None:
    """`git add` skips (exit 0) the files of a folder holding its own .git: after a command's
    `git init src`, the change to src/ was state (hash, writes) but missing from the diff, so
    the hidden tests' checkout ran on the base's files."""
    src = workspace.root / "src"
    with workspace.tool_transaction() as effects:
        subprocess.run(
            ["git", "init", "-q", str(src)], check=True, env={"PATH": os.environ["PATH"]}
        )
        workspace.handle.write("src/calc.py", "def add(a, b):\n    return a + b\n")
        workspace.handle.write("src/extra.py", "X = 1\n")
        os.symlink("calc.py", src / "alias.py")
    assert [w.key for w in effects.writes] == ["src/alias.py", "src/calc.py", "src/extra.py"]
    view = workspace.evaluator_view()
    checkout = tmp_path / "checkout"
    view.checkout(checkout)
    assert (checkout / "src" / "calc.py").read_text().endswith("a + b\n")
    assert (checkout / "src" / "extra.py").read_text() == "X = 1\n"
    assert os.readlink(checkout / "src" / "alias.py") == "calc.py"
    listed = sorted(
        p.relative_to(checkout).as_posix() for p in checkout.rglob("*") if not p.is_dir()
    )
    assert listed == view.files()


def test_a_tool_cannot_redefine_the_harness_functions_the_write_log_calls(
    tmp_path: Path,
) -> None:
    fixture = tmp_path / "reals.sql"
    fixture.write_text("CREATE TABLE r (id REAL PRIMARY KEY, v REAL);")
    with SqliteEnvironment(fixture, clock=datetime(2024, 1, 1)) as env:
        initial = env.reset()
        with pytest.raises(PermissionDenied, match="harness"), env.tool_transaction():
            env.agent_db.create_function(IMAGE, -1, lambda *values: "[]")
            env.agent_db.execute("INSERT INTO r VALUES (2.5, 1.5)")
        assert env.state_hash() == initial
        with env.tool_transaction() as effects:
            env.agent_db.execute("INSERT INTO r VALUES (2.5, 1.5)")
        assert [write.after for write in effects.writes] == [{"id": 2.5, "v": 1.5}]


@pytest.mark.parametrize("attributes", [None, "*.txt text eol=lf\n", "* ident\n"])
def test_the_checkout_holds_the_states_bytes(
    workspace: WorkspaceEnvironment, tmp_path: Path, attributes: str | None
) -> None:
    """git's output was read with universal newlines: the diff's CRLF became LF and a lone CR
    a line break, so the hidden tests' checkout held other bytes than the state; and a
    .gitattributes the agent wrote made `git add` stage converted bytes."""
    contents = {"crlf.txt": b"one\r\ntwo\r\n", "cr.txt": b"x\ry\r", "id.txt": b"$Id: kept $\n"}
    with workspace.tool_transaction():
        if attributes is not None:
            workspace.handle.write(".gitattributes", attributes)
        for name, data in contents.items():
            (workspace.root / name).write_bytes(data)
    checkout = tmp_path / "checkout"
    workspace.evaluator_view().checkout(checkout)
    assert {name: (checkout / name).read_bytes() for name in contents} == contents
