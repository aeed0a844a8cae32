"""Row-level write history: the SQLite environment records what each call did to each row.

The real environment and gateway, with a fixture that has the awkward cases: composite keys,
tables without a primary key, unique columns (``INSERT OR REPLACE``), cascading foreign keys,
a fixture trigger, REAL and BLOB values, a wide table.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundstate.environments.base import CallEffects, RowWrite, diff_snapshots
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import PermissionDenied, ToolError
from groundstate.gateway import ToolGateway
from groundstate.grading.constraints import evaluate_constraints
from groundstate.spec.task import Permissions
from groundstate.tools import ToolContext, tool
from groundstate.trace import ToolCallEvent, TraceEvent, dump_jsonl, load_jsonl

from .test_sqlite_env import CLOCK
from .trace_builder import constraint

WIDE = 70  # more columns than one SQLite function call takes arguments
SCHEMA = f"""
CREATE TABLE customers (id TEXT PRIMARY KEY, email TEXT UNIQUE, name TEXT);
CREATE TABLE orders (order_id TEXT PRIMARY KEY, customer_id TEXT REFERENCES customers(id)
                     ON DELETE CASCADE, status TEXT, total REAL, line1 TEXT);
CREATE TABLE items (order_id TEXT, line INTEGER, sku TEXT, PRIMARY KEY (order_id, line));
CREATE TABLE notes (body TEXT, photo BLOB);
CREATE TABLE audit (id INTEGER PRIMARY KEY, what TEXT);
CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT, slot INTEGER UNIQUE);
CREATE TABLE secrets (k TEXT PRIMARY KEY, v TEXT);
CREATE TABLE wide ({", ".join(f"c{i} INTEGER" for i in range(WIDE))});
CREATE TRIGGER audit_cancel AFTER UPDATE OF status ON orders WHEN NEW.status = 'cancelled'
BEGIN INSERT INTO audit (what) VALUES ('cancelled ' || NEW.order_id); END;
INSERT INTO customers VALUES ('C-1', 'ada@example.com', 'Ada'), ('C-2', 'bo@example.com', 'Bo');
INSERT INTO orders VALUES ('O-1', 'C-1', 'pending', 35.5, '12 Elm St'),
                          ('O-2', 'C-2', 'pending', 10.0, '1 Oak Ave');
INSERT INTO items VALUES ('O-1', 1, 'pen'), ('O-1', 2, 'ink');
INSERT INTO notes VALUES ('call back', x'00ff');
INSERT INTO settings VALUES ('theme', 'dark', 1), ('lang', 'en', 2);
INSERT INTO secrets VALUES ('pin', '1234');
INSERT INTO wide VALUES ({", ".join(str(i) for i in range(WIDE))});
"""
ADA = {"id": "C-1", "email": "ada@example.com", "name": "Ada"}
O1 = {
    "order_id": "O-1",
    "customer_id": "C-1",
    "status": "pending",
    "total": 35.5,
    "line1": "12 Elm St",
}


@pytest.fixture
def env(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    fixture = tmp_path / "shop.sql"
    fixture.write_text(SCHEMA)
    permissions = Permissions(tables={"secrets": "none"})
    with SqliteEnvironment(fixture, clock=CLOCK, permissions=permissions) as environment:
        yield environment


def _call(env: SqliteEnvironment, *statements: str | tuple[str, tuple[Any, ...]]) -> CallEffects:
    with env.tool_transaction() as effects:
        for statement in statements:
            sql, params = statement if isinstance(statement, tuple) else (statement, ())
            env.agent_db.execute(sql, params)
    return effects


def _write(table: str, key: Any, before: Any, after: Any) -> RowWrite:
    return RowWrite(table=table, key=key, before=before, after=after)


# --- what is recorded ---------------------------------------------------------------------


def test_an_update_records_the_row_before_and_after(env: SqliteEnvironment) -> None:
    effects = _call(env, "UPDATE orders SET line1 = '48 Larch Ln' WHERE order_id = 'O-1'")
    assert effects.writes == [_write("orders", "O-1", O1, O1 | {"line1": "48 Larch Ln"})]
    assert effects.writes[0].columns == ["line1"]
    assert effects.changed_tables == ["orders"]


def test_inserts_and_deletes_have_no_before_or_no_after(env: SqliteEnvironment) -> None:
    effects = _call(
        env,
        "INSERT INTO items VALUES ('O-2', 1, 'cap')",
        "DELETE FROM items WHERE order_id = 'O-1' AND line = 2",
    )
    assert effects.writes == [
        _write("items", ["O-2", 1], None, {"order_id": "O-2", "line": 1, "sku": "cap"}),
        _write("items", ["O-1", 2], {"order_id": "O-1", "line": 2, "sku": "ink"}, None),
    ]


def test_a_table_without_a_primary_key_is_keyed_by_rowid(env: SqliteEnvironment) -> None:
    effects = _call(env, "UPDATE notes SET body = 'done'")
    row = {"rowid": 1, "body": "call back", "photo": b"\x00\xff"}  # a BLOB as bytes, as in diffs
    assert effects.writes == [_write("notes", 1, row, row | {"body": "done"})]


def test_values_are_recorded_exactly(env: SqliteEnvironment) -> None:
    effects = _call(
        env, "UPDATE orders SET total = 0.1 + 0.2, customer_id = NULL WHERE order_id = 'O-1'"
    )
    after = effects.writes[0].after
    assert after is not None
    assert after["total"] == 0.1 + 0.2 and after["total"] != 0.3  # not rounded to 15 digits
    assert after["customer_id"] is None
    texts = _call(
        env, "UPDATE orders SET line1 = 'O''Brien''s', status = '007' WHERE order_id = 'O-2'"
    )
    assert texts.writes[0].after is not None
    assert (texts.writes[0].after["line1"], texts.writes[0].after["status"]) == ("O'Brien's", "007")
    assert env.snapshot().tables["orders"].rows['"O-1"'] == after  # as snapshots read it
    numbers = _call(env, "UPDATE wide SET c0 = 9007199254740993, c1 = '1'")
    assert numbers.writes[0].after is not None
    assert numbers.writes[0].after["c0"] == 9007199254740993  # beyond a double's precision
    assert numbers.writes[0].after["c1"] == 1  # INTEGER affinity, as SQLite stored it


def test_a_wide_table_is_recorded_whole(env: SqliteEnvironment) -> None:
    effects = _call(env, "UPDATE wide SET c69 = -1")
    assert effects.writes[0].before == {f"c{i}": i for i in range(WIDE)} | {"rowid": 1}
    assert effects.writes[0].columns == ["c69"]


def test_writes_within_one_call_are_netted_per_row(env: SqliteEnvironment) -> None:
    twice = _call(
        env,
        "UPDATE orders SET status = 'processing' WHERE order_id = 'O-1'",
        "UPDATE orders SET status = 'shipped' WHERE order_id = 'O-1'",
    )
    assert twice.writes == [_write("orders", "O-1", O1, O1 | {"status": "shipped"})]
    back_and_forth = _call(
        env,
        "INSERT INTO items VALUES ('O-2', 9, 'tmp')",
        "DELETE FROM items WHERE line = 9",
        "UPDATE customers SET name = 'X' WHERE id = 'C-1'",
        "UPDATE customers SET name = 'Ada' WHERE id = 'C-1'",
        "UPDATE customers SET name = name",  # a write that changes nothing
    )
    assert back_and_forth.writes == []
    assert back_and_forth.changed_tables == ["customers", "items"]  # written all the same


def test_changing_a_key_moves_the_row(env: SqliteEnvironment) -> None:
    effects = _call(env, "UPDATE items SET line = 3 WHERE order_id = 'O-1' AND line = 2")
    old = {"order_id": "O-1", "line": 2, "sku": "ink"}
    assert effects.writes == [
        _write("items", ["O-1", 2], old, None),
        _write("items", ["O-1", 3], None, old | {"line": 3}),
    ]


def test_insert_or_replace_records_the_replaced_rows(env: SqliteEnvironment) -> None:
    theme = {"name": "theme", "value": "dark", "slot": 1}
    lang = {"name": "lang", "value": "en", "slot": 2}
    same_key = _call(env, "INSERT OR REPLACE INTO settings VALUES ('theme', 'light', 1)")
    assert same_key.writes == [_write("settings", "theme", theme, theme | {"value": "light"})]
    # A new key that takes lang's slot: SQLite deletes lang without firing a delete trigger.
    other_key = _call(env, "INSERT OR REPLACE INTO settings VALUES ('tz', 'UTC', 2)")
    tz = {"name": "tz", "value": "UTC", "slot": 2}
    assert other_key.writes == [
        _write("settings", "tz", None, tz),
        _write("settings", "lang", lang, None),
    ]
    light = theme | {"value": "light"}
    moved = _call(env, "UPDATE OR REPLACE settings SET slot = 2 WHERE name = 'theme'")
    assert moved.writes == [
        _write("settings", "theme", light, light | {"slot": 2}),
        _write("settings", "tz", tz, None),
    ]


def test_cascading_deletes_are_recorded(env: SqliteEnvironment) -> None:
    effects = _call(env, "INSERT OR REPLACE INTO customers VALUES ('C-1', 'ada@new.org', 'Ada')")
    # Replacing a row deletes it, and the delete cascades to Ada's order.
    assert _write("orders", "O-1", O1, None) in effects.writes
    assert _write("customers", "C-1", ADA, ADA | {"email": "ada@new.org"}) in effects.writes
    assert len(effects.writes) == 2


def test_upserts_and_ignored_inserts(env: SqliteEnvironment) -> None:
    upsert = _call(
        env,
        "INSERT INTO customers VALUES ('C-1', 'x@y.z', 'Ada L') "
        "ON CONFLICT(id) DO UPDATE SET name = excluded.name",
    )
    assert upsert.writes == [_write("customers", "C-1", ADA, ADA | {"name": "Ada L"})]
    ignored = _call(env, "INSERT OR IGNORE INTO customers VALUES ('C-2', 'z@z.z', 'Z')")
    assert ignored.writes == []


def test_a_fixture_trigger_s_writes_are_recorded(env: SqliteEnvironment) -> None:
    effects = _call(env, "UPDATE orders SET status = 'cancelled' WHERE order_id = 'O-2'")
    assert effects.denied == []
    assert [(w.table, w.key, w.after) for w in effects.writes][1] == (
        "audit",
        1,
        {"id": 1, "what": "cancelled O-2"},
    )


# --- what is not recorded, and who cannot see it ------------------------------------------


def test_denied_and_rolled_back_calls_record_no_writes(env: SqliteEnvironment) -> None:
    with pytest.raises(PermissionDenied), env.tool_transaction() as denied:
        env.agent_db.execute("UPDATE orders SET status = 'x'")
        env.agent_db.execute("UPDATE secrets SET v = '0000'")
    assert denied.writes == [] and denied.changed_tables == []
    with pytest.raises(ToolError), env.tool_transaction() as refused:
        env.agent_db.execute("UPDATE orders SET status = 'x'")
        raise ToolError("no such order")
    assert refused.writes == []
    # Nothing left over in the log: the next call reports only its own write.
    after = _call(env, "UPDATE customers SET name = 'Bo B' WHERE id = 'C-2'")
    assert [w.table for w in after.writes] == ["customers"]


@pytest.mark.parametrize(
    ("sql", "denial"),
    [
        ("SELECT * FROM temp._gs_writes", "read _gs_writes"),
        ("SELECT * FROM _gs_writes", "read _gs_writes"),
        ("SELECT sql FROM sqlite_temp_master", "read sqlite_temp_master"),
        ("INSERT INTO temp._gs_writes (op) VALUES ('x')", "write _gs_writes"),
        ("DROP TRIGGER temp._gs_writes_1_update", "drop temp trigger _gs_writes_1_update"),
    ],
)
def test_the_agent_can_neither_see_nor_touch_the_log(
    env: SqliteEnvironment, sql: str, denial: str
) -> None:
    with pytest.raises(PermissionDenied), env.tool_transaction() as effects:
        env.agent_db.execute("UPDATE orders SET status = 'x'")
        env.agent_db.execute(sql).fetchall()
    assert effects.denied == [denial]


def test_the_log_never_changes_the_state_hash(env: SqliteEnvironment) -> None:
    initial = env.reset()
    _call(env, "UPDATE orders SET line1 = 'elsewhere' WHERE order_id = 'O-1'")
    _call(env, "UPDATE orders SET line1 = '12 Elm St' WHERE order_id = 'O-1'")
    assert env.state_hash() == initial
    assert not any(name.startswith("_gs") for name in env.table_hashes())


def test_the_work_scales_with_rows_written_not_table_size(tmp_path: Path) -> None:
    """Counted in SQLite virtual-machine steps (every harness statement of a call runs on the
    agent's connection), not in seconds: the count is exact on a loaded machine."""

    def steps(rows: int, statement: str) -> int:
        fixture = tmp_path / f"big{rows}.sql"
        inserts = "".join(f"INSERT INTO t VALUES ({i}, 'u{i}', 0);\n" for i in range(rows))
        fixture.write_text(f"CREATE TABLE t (id INTEGER PRIMARY KEY, u TEXT UNIQUE, v);\n{inserts}")
        with SqliteEnvironment(fixture, clock=CLOCK) as environment:
            _call(environment, (statement, (-1,)))  # the first call's one-off set-up is not counted
            counted = [0]

            def count() -> int:
                counted[0] += 1
                return 0

            sqlite3.Connection.set_progress_handler(
                environment.agent_db, count, 1
            )  # past the refusal
            effects = _call(environment, (statement, (1,)))
            assert len(effects.writes) == 1
            return counted[0]

    indexed = "UPDATE t SET v = ? WHERE id = 7"
    assert steps(200_000, indexed) == steps(10, indexed)
    # The counter sees the work: a statement that scans the table costs far more at 200,000 rows.
    scan = "UPDATE t SET v = ? WHERE u = 'u7' OR v < -5"
    assert steps(200_000, scan) > 100 * steps(10, scan)


# --- through the gateway, into the trace and the constraints ------------------------------


@tool
def run_sql(ctx: ToolContext, statement: str) -> int:
    """Run one statement (a stand-in for any tool that writes)."""
    return int(ctx.db.execute(statement).rowcount)


def _gateway_trace(env: SqliteEnvironment, *statements: str) -> list[TraceEvent]:
    events: list[TraceEvent] = []
    gateway = ToolGateway({"run_sql": run_sql}, env, events.append, lambda: 0.0)
    for step, statement in enumerate(statements, start=1):
        gateway.call(step, "run_sql", {"statement": statement})
    return events


def test_a_write_undone_later_fails_never_writes_and_no_undo_with_an_empty_diff(
    env: SqliteEnvironment,
) -> None:
    s0 = env.snapshot()
    events = _gateway_trace(
        env,
        "UPDATE orders SET line1 = '48 Larch Ln' WHERE order_id = 'O-1'",
        "UPDATE orders SET line1 = '12 Elm St' WHERE order_id = 'O-1'",
    )
    assert diff_snapshots(s0, env.snapshot()).is_empty()
    call = events[0]
    assert isinstance(call, ToolCallEvent) and call.writes[0].after == O1 | {"line1": "48 Larch Ln"}
    rules = [
        constraint(
            id="keep", never={"writes": {"table": "orders", "key": "O-1", "columns": ["line1"]}}
        ),
        constraint(id="no-undo", no_undo={"tables": ["orders"]}),
        constraint(id="status", never={"writes": {"table": "orders", "columns": ["status"]}}),
    ]
    keep, no_undo, status = evaluate_constraints(rules, events)
    assert not keep.passed and keep.evidence["offending_step"]["step"] == 1
    assert not no_undo.passed and no_undo.evidence["undone_step"]["step"] == 1
    assert no_undo.evidence["offending_step"]["step"] == 2
    assert status.passed
    assert load_jsonl(dump_jsonl(events)) == events  # the writes survive storage


def test_a_refused_call_in_the_trace_has_no_writes(env: SqliteEnvironment) -> None:
    events = _gateway_trace(env, "UPDATE orders SET status = 'x'", "UPDATE secrets SET v = '0'")
    assert [isinstance(e, ToolCallEvent) and e.ok for e in events] == [True, False]
    refused = events[1]
    assert isinstance(refused, ToolCallEvent) and refused.writes == []
    assert refused.error_class in ("permission_denied", "tool_error")
    with pytest.raises(sqlite3.Error):  # the real database refused it too
        env.agent_db.execute("SELECT * FROM secrets").fetchall()


# --- the harness's own statements per call ---------------------------------------------------


def _traced(env: SqliteEnvironment, *statements: str) -> tuple[list[str], CallEffects]:
    """The statements a call ran on the agent connection besides its tool's, and its effects."""
    seen: list[str] = []
    connection = env.agent_db
    sqlite3.Connection.set_trace_callback(connection, seen.append)  # past the watch: a test's
    try:
        effects = _call(env, *statements)
    finally:
        sqlite3.Connection.set_trace_callback(connection, None)
    tools = set(statements)
    return [sql for sql in seen if sql not in tools and not sql.startswith("--")], effects


def test_a_read_only_call_after_a_quiet_one_runs_two_statements_of_the_harness(
    env: SqliteEnvironment,
) -> None:
    _call(env, "SELECT 1")  # installs the log
    own, _ = _traced(env, "SELECT * FROM orders")
    assert own == ["BEGIN", "COMMIT"], own  # no row written: the log is not read
    # A call that wrote reads and clears the log at once, then (changes() must read 0 at the
    # next call) deletes nothing from it, inside its own transaction (twenty-eighth round:
    # the next call ran that DELETE first, in a transaction of its own).
    own, _ = _traced(env, "UPDATE orders SET status = 'x'")
    assert len(own) == 4 and own[1].startswith("DELETE FROM temp._gs_writes RETURNING"), own
    assert own[2] == "DELETE FROM temp._gs_writes" and own[3] == "COMMIT", own
    own, _ = _traced(env, "SELECT * FROM orders")
    assert own == ["BEGIN", "COMMIT"], own


@pytest.mark.parametrize(
    "before",
    [
        ["UPDATE orders SET status = 'x'"],  # two rows
        ["SELECT * FROM orders"],
        ["INSERT OR IGNORE INTO customers VALUES ('C-1', 'x@example.com', 'X')"],  # 'pre' only
        ["UPDATE orders SET status = status"],  # written, the same values
        ["UPDATE orders SET status = 'x' WHERE order_id = 'none'"],  # no row
    ],
)
def test_every_call_starts_with_changes_0_and_an_empty_log(
    env: SqliteEnvironment, before: list[str]
) -> None:
    """Whatever the previous call did, the next sees changes() 0, as a new connection would,
    and reports only its own writes."""
    for _ in range(2):
        _call(env, *before)
        with env.tool_transaction() as effects:
            assert env.agent_db.execute("SELECT changes()").fetchone() == (0,)
            env.agent_db.execute("UPDATE customers SET name = 'B' WHERE id = 'C-2'")
        assert [(w.table, w.key) for w in effects.writes] == [("customers", "C-2")]
        _call(env, "UPDATE customers SET name = 'Bo' WHERE id = 'C-2'")


@pytest.mark.parametrize("failure", ["tool error", "denied", "written outside a call"])
def test_after_a_failed_call_or_a_write_outside_one_the_log_is_emptied(
    env: SqliteEnvironment, failure: str
) -> None:
    _call(env, "SELECT 1")  # the log installed and known empty
    if failure == "written outside a call":  # refused: the connection answers only its calls
        with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
            env.agent_db.execute("UPDATE orders SET status = 'x' WHERE order_id = 'O-2'")
    else:
        with pytest.raises((ToolError, PermissionDenied)), env.tool_transaction():
            env.agent_db.execute("UPDATE orders SET status = 'x'")
            if failure == "denied":
                env.agent_db.execute("SELECT * FROM secrets")
            raise ToolError("no such order")
    effects = _call(env, "UPDATE customers SET name = 'B' WHERE id = 'C-2'")
    assert [(w.table, w.key) for w in effects.writes] == [("customers", "C-2")]
    with env.tool_transaction():
        assert env.agent_db.execute("SELECT changes()").fetchone() == (0,)
