"""Fixtures with virtual tables (FTS5, R-tree): built, reset, searched and written by tools,
hashed once, and still fenced by the agent connection's authorizer."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import PermissionDenied
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.task import Permissions
from groundstate.tools import ToolContext, load_tools
from groundstate.validation import validate_task
from tests.conftest import BANK

SEARCH_FIXTURE = """
CREATE VIRTUAL TABLE docs USING fts5(title, body);
INSERT INTO docs(rowid, title, body) VALUES
  (1, 'fees', 'wire transfer fees are waived for members'),
  (2, 'pins', 'never share your pin with anyone');
CREATE VIRTUAL TABLE branches USING rtree(id, min_x, max_x, min_y, max_y);
INSERT INTO branches VALUES (1, 0, 1, 0, 1), (2, 5, 6, 5, 6);
CREATE TABLE docs_notes (id INTEGER PRIMARY KEY, note TEXT);
"""

SEARCH_TOOLS = '''

@tool
def search_docs(ctx: ToolContext, query: str) -> list[Any]:
    """Search the help pages."""
    sql = (
        "SELECT rowid, title, bm25(docs), highlight(docs, 1, '[', ']'), "
        "snippet(docs, 1, '[', ']', '...', 4) FROM docs WHERE docs MATCH ? ORDER BY rank"
    )
    return [list(row) for row in ctx.db.execute(sql, (query,)).fetchall()]


@tool
def add_doc(ctx: ToolContext, title: str, body: str) -> int:
    """Add a help page."""
    cursor = ctx.db.execute("INSERT INTO docs(title, body) VALUES (?, ?)", (title, body))
    return int(cursor.lastrowid)
'''

SHADOW_TABLES = ("docs_data", "docs_idx", "docs_content", "docs_docsize", "docs_config")


@pytest.fixture
def suite(tmp_path: Path) -> Suite:
    """The bank suite with a help-page search table, a search tool, and an oracle that uses it."""
    root = tmp_path / "bank"
    shutil.copytree(BANK, root)
    with (root / "fixtures" / "bank.sql").open("a") as fixture:
        fixture.write(SEARCH_FIXTURE)
    with (root / "tools.py").open("a") as tools:
        tools.write(SEARCH_TOOLS)
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text())
    task["available_tools"] += ["search_docs", "add_doc"]
    task["permissions"]["tables"]["docs"] = "read"
    task_file.write_text(yaml.safe_dump(task))
    oracle = root / "solutions" / "transfer" / "oracle.yaml"
    solution = yaml.safe_load(oracle.read_text())
    solution["steps"].insert(0, {"call": "search_docs", "args": {"query": "fees"}})
    oracle.write_text(yaml.safe_dump(solution))
    return load_suite(root)


@pytest.fixture
def env(suite: Suite) -> Iterator[SqliteEnvironment]:
    """The suite's fixture with the docs table writable (the task's own makes it read-only)."""
    task = suite.tasks["transfer"]
    with SqliteEnvironment(suite.fixture_path(task), clock=task.clock) as environment:
        environment.reset()
        yield environment


def _tool(suite: Suite, name: str) -> object:
    return load_tools(suite.root / "tools.py")[name].fn


def _agent(env: SqliteEnvironment, sql: str) -> list[tuple[object, ...]]:
    with env.tool_transaction():
        return env.agent_db.execute(sql).fetchall()


def test_the_oracle_searches_and_resets_restore_the_search_table(suite: Suite) -> None:
    validity = validate_task(suite, "transfer")
    assert validity.check("solvable").passed, validity.check("solvable").detail
    reset = validity.check("reset")
    assert reset.passed, reset.detail
    # docs is read-only in the task; the R-tree's row is read first, then deleted by rowid
    # (it cannot delete rows while a subquery of the same statement reads it).
    assert "could not delete a row of docs" in reset.detail
    assert "deleted a row of branches" in reset.detail


def test_a_tool_searches_with_ranking_and_highlights(suite: Suite, env: SqliteEnvironment) -> None:
    search = _tool(suite, "search_docs")
    with env.tool_transaction() as effects:
        hits = search(ToolContext(env), "pin")  # type: ignore[operator]
    assert [(hit[0], hit[1]) for hit in hits] == [(2, "pins")]
    assert hits[0][3] == "never share your [pin] with anyone"
    assert "[pin]" in hits[0][4] and isinstance(hits[0][2], float)
    assert effects.writes == [] and effects.changed_tables == []
    assert _agent(env, "SELECT id FROM branches WHERE min_x >= 4") == [(2,)]


def test_a_write_through_a_tool_is_in_the_diff_the_view_and_undone_by_reset(
    suite: Suite, env: SqliteEnvironment
) -> None:
    initial = env.state_hash()
    add = _tool(suite, "add_doc")
    with env.tool_transaction() as effects:
        rowid = add(ToolContext(env), "limits", "daily transfer limit")  # type: ignore[operator]
    assert effects.changed_tables == ["docs"]
    [write] = effects.writes
    assert (write.table, write.key, write.before) == ("docs", rowid, None)
    assert write.after == {"rowid": rowid, "title": "limits", "body": "daily transfer limit"}
    view = env.evaluator_view()
    assert view.query("SELECT rowid FROM docs WHERE docs MATCH 'limit'") == [(rowid,)]
    assert len(env.snapshot().tables["docs"].rows) == 3
    assert env.state_hash() != initial
    assert env.reset() == initial
    assert view_rows(env) == [(1,), (2,)]


def view_rows(env: SqliteEnvironment) -> list[tuple[object, ...]]:
    return env.evaluator_view().query("SELECT rowid FROM docs WHERE docs MATCH 'pin OR fees'")


def test_the_state_hash_covers_the_search_table_once(env: SqliteEnvironment) -> None:
    hashes = env.table_hashes()
    assert {"docs", "branches"} <= set(hashes)
    assert not set(hashes) & {*SHADOW_TABLES, "branches_node", "branches_rowid"}
    assert set(env.snapshot().tables) == {
        "accounts",
        "transfers",
        "audit",
        "docs",
        "branches",
        "docs_notes",
    }
    # An edit of the content changes the hash; an index rebuild (same content) does not.
    before = env.state_hash()
    _agent(env, "INSERT INTO docs(docs) VALUES ('optimize')")
    assert env.state_hash() == before
    _agent(env, "UPDATE docs SET body = 'fees waived' WHERE rowid = 1")
    assert env.state_hash() != before


@pytest.mark.parametrize("shadow", SHADOW_TABLES)
def test_a_read_only_search_table_has_read_only_shadow_tables(
    suite: Suite, tmp_path: Path, shadow: str
) -> None:
    task = suite.tasks["transfer"]
    permissions = Permissions(tables={"docs": "read"})
    fixture = suite.fixture_path(task)
    with SqliteEnvironment(fixture, clock=task.clock, permissions=permissions) as env:
        before = env.reset()
        assert _agent(env, "SELECT rowid FROM docs WHERE docs MATCH 'pin'") == [(2,)]
        for sql in (f"DELETE FROM {shadow}", "INSERT INTO docs(title, body) VALUES ('a', 'b')"):
            with pytest.raises(PermissionDenied, match="write"):
                _agent(env, sql)
        assert env.state_hash() == before


def test_a_table_named_like_a_shadow_table_keeps_its_own_permissions(suite: Suite) -> None:
    task = suite.tasks["transfer"]
    permissions = Permissions(tables={"docs": "read"})
    fixture = suite.fixture_path(task)
    with SqliteEnvironment(fixture, clock=task.clock, permissions=permissions) as env:
        with env.tool_transaction() as effects:
            env.agent_db.execute("INSERT INTO docs_notes VALUES (1, 'a note')")
        assert effects.changed_tables == ["docs_notes"]


def test_a_hidden_search_table_hides_its_shadow_tables(suite: Suite) -> None:
    task = suite.tasks["transfer"]
    permissions = Permissions(tables={"docs": "none"})
    with SqliteEnvironment(
        suite.fixture_path(task), clock=task.clock, permissions=permissions
    ) as env:
        for sql in ("SELECT * FROM docs_content", "SELECT * FROM docs WHERE docs MATCH 'pin'"):
            with pytest.raises(PermissionDenied, match="read"):
                _agent(env, sql)


@pytest.mark.parametrize(
    ("sql", "denial"),
    [
        ("SELECT name FROM sqlite_master", "read sqlite_master"),
        ("SELECT name FROM dbstat", "read dbstat"),
        ("SELECT fts3_tokenizer('simple')", "function fts3_tokenizer"),
        ("SELECT rtreenode(2, data) FROM branches_node", "function rtreenode"),
        ("SELECT rtreecheck('branches')", "function rtreecheck"),
    ],
)
def test_side_channels_stay_denied_next_to_virtual_tables(
    env: SqliteEnvironment, sql: str, denial: str
) -> None:
    with pytest.raises(PermissionDenied, match=denial):
        _agent(env, sql)


def test_the_sqlite_build_has_fts5_and_rtree() -> None:
    options = {row[0] for row in sqlite3.connect(":memory:").execute("PRAGMA compile_options")}
    assert {"ENABLE_FTS5", "ENABLE_RTREE"} <= options
