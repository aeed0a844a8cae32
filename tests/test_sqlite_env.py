"""The SQLite environment: fixtures, state hash, reset, views, permissions and health."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import assume, given
from hypothesis import strategies as st

from groundstate.environments import sqlite_live
from groundstate.environments.base import Environment, diff_snapshots
from groundstate.environments.sqlite import SqliteEnvironment, read_table_hashes
from groundstate.errors import EnvironmentFailure, PermissionDenied
from groundstate.spec.task import Permissions

CLOCK = datetime(2024, 3, 1, 9, 30)

SCHEMA = """
CREATE TABLE customers (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL);
CREATE TABLE payment_cards (id INTEGER PRIMARY KEY, customer_id INTEGER, number TEXT);
CREATE TABLE orders (order_id TEXT PRIMARY KEY, customer_id INTEGER, status TEXT);
CREATE TABLE order_items (order_id TEXT, line INTEGER, sku TEXT, quantity INTEGER,
                          PRIMARY KEY (order_id, line));
CREATE TABLE notes (body TEXT);
CREATE VIEW card_numbers AS SELECT number FROM payment_cards;
"""

ROWS: dict[str, list[dict[str, Any]]] = {
    "customers": [{"id": 1, "name": "Ada"}, {"id": 2, "name": "Grace"}],
    "payment_cards": [{"id": 1, "customer_id": 1, "number": "4111111111111111"}],
    "orders": [
        {"order_id": "o1", "customer_id": 1, "status": "shipped"},
        {"order_id": "o2", "customer_id": 2, "status": "pending"},
    ],
    "order_items": [
        {"order_id": "o1", "line": 1, "sku": "pen", "quantity": 2},
        {"order_id": "o1", "line": 2, "sku": "ink", "quantity": 1},
    ],
    "notes": [{"body": "call back"}],
}

RESTRICTED = Permissions(tables={"payment_cards": "none", "customers": "read"})


def write_sql_fixture(path: Path) -> Path:
    inserts = [
        f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join(map(_sql, row.values()))});"
        for table, rows in ROWS.items()
        for row in rows
    ]
    path.write_text(SCHEMA + "\n".join(inserts), encoding="utf-8")
    return path


def _sql(value: object) -> str:
    return f"'{value}'" if isinstance(value, str) else str(value)


@pytest.fixture
def fixture_file(tmp_path: Path) -> Path:
    return write_sql_fixture(tmp_path / "shop.sql")


@pytest.fixture
def env(fixture_file: Path) -> Iterator[SqliteEnvironment]:
    with SqliteEnvironment(fixture_file, clock=CLOCK) as environment:
        yield environment


@pytest.fixture
def restricted(fixture_file: Path) -> Iterator[SqliteEnvironment]:
    with SqliteEnvironment(fixture_file, clock=CLOCK, permissions=RESTRICTED) as environment:
        yield environment


# --- fixtures ------------------------------------------------------------------------------


def test_satisfies_environment_protocol(env: SqliteEnvironment) -> None:
    environment: Environment = env
    assert environment.name == "sqlite"


def test_sql_fixture_builds_rows_and_clock(env: SqliteEnvironment) -> None:
    names = env.evaluator_view().query("SELECT name FROM customers ORDER BY id")
    assert names == [("Ada",), ("Grace",)]
    assert env.now() == CLOCK
    assert set(env.snapshot().tables) == set(ROWS)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_data_fixture_builds_the_same_state_as_sql(
    env: SqliteEnvironment, tmp_path: Path, suffix: str
) -> None:
    data = {"schema": SCHEMA, "rows": ROWS}
    text = yaml.safe_dump(data) if suffix == ".yaml" else json.dumps(data)
    path = tmp_path / f"shop{suffix}"
    path.write_text(text, encoding="utf-8")
    with SqliteEnvironment(path, clock=CLOCK, workdir=tmp_path / "data-env") as other:
        assert other.state_hash() == env.state_hash()


def test_yaml_dates_are_stored_as_iso_text(tmp_path: Path) -> None:
    path = tmp_path / "dates.yaml"
    path.write_text("schema: CREATE TABLE d (day TEXT);\nrows: {d: [{day: 2024-03-01}]}\n")
    with SqliteEnvironment(path, clock=CLOCK) as environment:
        assert environment.evaluator_view().query("SELECT day FROM d") == [("2024-03-01",)]


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("missing.sql", None, "No such file"),
        ("broken.sql", "CREATE TABLE t (", "incomplete input"),
        ("unknown.yaml", "schema: CREATE TABLE t (a);\nrows: {ghost: [{a: 1}]}", "no such table"),
        ("shape.yaml", "rows: {}", "schema"),
        ("twice.yaml", "schema: CREATE TABLE t (a);\nschema: CREATE TABLE u (a);", "duplicate"),
        ("loop.yaml", "schema: CREATE TABLE t (a);\nrows: &r {t: [*r]}", "contains it"),
        ("fixture.csv", "a,b", "expected a .sql"),
    ],
)
def test_bad_fixture_is_an_environment_failure_naming_the_file(
    tmp_path: Path, name: str, content: str | None, reason: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(EnvironmentFailure, match=reason) as failure:
        SqliteEnvironment(path, clock=CLOCK)
    assert str(path) in str(failure.value)


def test_close_removes_the_working_directory_it_created(
    fixture_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_live, "POOL_SIZE", 0)  # nothing is kept for the next one
    environment = SqliteEnvironment(fixture_file, clock=CLOCK)
    workdir = Path(environment.health()["database"]).parent
    environment.close()
    assert not workdir.exists()


def test_a_pooled_working_directory_is_removed_when_the_pool_lets_it_go(
    fixture_file: Path,
) -> None:
    sqlite_live.POOL.drain()
    environment = SqliteEnvironment(fixture_file, clock=CLOCK)
    workdir = Path(environment.health()["database"]).parent
    environment.close()
    assert workdir.exists() and len(sqlite_live.POOL) == 1
    sqlite_live.POOL.drain()
    assert not workdir.exists()


# --- state hash ----------------------------------------------------------------------------

cells = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(alphabet=st.characters(exclude_categories=["Cs"])),
    st.binary(),
)
keyed_rows = st.lists(st.tuples(st.integers(0, 10**6), cells), unique_by=lambda row: row[0])


def hash_of(rows: list[tuple[int, Any]], *, vacuum: bool = False) -> str:
    """The state hash of a database holding *rows* in a keyed and in a keyless table."""
    connection = sqlite3.connect(":memory:")
    try:
        connection.executescript(
            "CREATE TABLE keyed (id INTEGER PRIMARY KEY, v); CREATE TABLE bag (v);"
        )
        connection.executemany("INSERT INTO keyed VALUES (?, ?)", rows)
        connection.executemany("INSERT INTO bag VALUES (?)", [(value,) for _, value in rows])
        if vacuum:
            connection.commit()
            connection.execute("VACUUM")
        return json.dumps(read_table_hashes(connection), sort_keys=True)
    finally:
        connection.close()


@given(rows=keyed_rows, data=st.data())
def test_hash_ignores_insertion_order_and_vacuum(rows: list[tuple[int, Any]], data: Any) -> None:
    shuffled = data.draw(st.permutations(rows))
    assert hash_of(rows) == hash_of(shuffled, vacuum=True)


@given(rows=keyed_rows.filter(bool), data=st.data())
def test_hash_changes_on_any_single_value_change(rows: list[tuple[int, Any]], data: Any) -> None:
    index = data.draw(st.integers(0, len(rows) - 1))
    key, old = rows[index]
    new = data.draw(cells)
    assume((type(new), new) != (type(old), old))
    changed = [*rows[:index], (key, new), *rows[index + 1 :]]
    assert hash_of(changed) != hash_of(rows)


def test_hash_distinguishes_storage_classes() -> None:
    values = [1, 1.0, "1", None, b"1"]
    assert len({hash_of([(1, value)]) for value in values}) == len(values)


def test_hash_covers_the_clock_but_the_snapshot_does_not(env: SqliteEnvironment) -> None:
    before, snapshot = env.state_hash(), env.snapshot()
    env.advance_clock(90)
    assert env.now() == CLOCK + timedelta(seconds=90)
    assert env.state_hash() != before
    assert env.snapshot() == snapshot


# --- reset and views -----------------------------------------------------------------------


def insert_customer(env: SqliteEnvironment, name: str) -> int | None:
    with env.tool_transaction():
        return env.agent_db.execute("INSERT INTO customers (name) VALUES (?)", (name,)).lastrowid


def test_reset_restores_rows_clock_and_autoincrement_counter(env: SqliteEnvironment) -> None:
    initial = env.state_hash()
    first_id = insert_customer(env, "Linus")
    with env.tool_transaction():
        env.agent_db.execute("DELETE FROM customers WHERE id = ?", (first_id,))
    env.advance_clock(3600)
    assert env.snapshot() == env.initial_view().snapshot()  # same rows, yet not the same state
    assert env.state_hash() != initial

    assert env.reset() == initial
    assert env.now() == CLOCK
    assert insert_customer(env, "Linus") == first_id == 3


def test_evaluator_view_cannot_write(env: SqliteEnvironment) -> None:
    view = env.evaluator_view()
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        view.query("UPDATE orders SET status = 'refunded'")
    assert view.query("SELECT status FROM orders WHERE order_id = 'o1'") == [("shipped",)]


def test_initial_view_keeps_s0_while_the_evaluator_sees_changes(env: SqliteEnvironment) -> None:
    with env.tool_transaction():
        env.agent_db.execute("UPDATE orders SET status = 'refunded' WHERE order_id = 'o1'")
    sql = "SELECT status FROM orders WHERE order_id = 'o1'"
    assert env.initial_view().query(sql) == [("shipped",)]
    assert env.evaluator_view().query(sql) == [("refunded",)]


def test_initial_snapshot_is_what_the_initial_file_holds_and_a_copy_each_time(
    env: SqliteEnvironment,
) -> None:
    s0 = env.snapshot()  # the live file, just reset: read from the database
    with env.tool_transaction():
        env.agent_db.execute("UPDATE orders SET status = 'refunded' WHERE order_id = 'o1'")
    first = env.initial_view().snapshot()
    assert first == s0 and first != env.snapshot()
    key = next(iter(first.tables["orders"].rows))
    first.tables["orders"].rows[key]["status"] = "edited by a check"
    first.tables.pop("customers")
    again = env.initial_view().snapshot()
    assert "customers" in again.tables
    assert again.tables["orders"].rows[key]["status"] != "edited by a check"


def test_diff_matches_rows_by_primary_key(env: SqliteEnvironment) -> None:
    with env.tool_transaction():
        db = env.agent_db
        db.execute("INSERT INTO orders VALUES ('o3', 2, 'pending')")
        db.execute("DELETE FROM orders WHERE order_id = 'o2'")
        db.execute("UPDATE order_items SET quantity = 5 WHERE order_id = 'o1' AND line = 2")
        db.execute("UPDATE notes SET body = 'done'")
    diff = diff_snapshots(env.initial_view().snapshot(), env.evaluator_view().snapshot())

    assert set(diff.tables) == {"orders", "order_items", "notes"}
    assert diff.tables["orders"].added == [
        {"order_id": "o3", "customer_id": 2, "status": "pending"}
    ]
    assert [row["order_id"] for row in diff.tables["orders"].removed] == ["o2"]
    [item] = diff.tables["order_items"].changed
    assert (item.key, item.columns) == (["o1", 2], ["quantity"])
    [note] = diff.tables["notes"].changed
    assert (note.key, note.after) == (1, {"rowid": 1, "body": "done"})


# --- the agent's transactions and permissions ----------------------------------------------


def test_allowed_writes_commit_and_name_the_changed_tables(env: SqliteEnvironment) -> None:
    with env.tool_transaction() as effects:
        env.agent_db.execute("INSERT INTO orders VALUES ('o3', 1, 'pending')")
        env.agent_db.execute("UPDATE order_items SET quantity = 3 WHERE line = 1")
        env.agent_db.execute("SELECT * FROM customers").fetchall()
    assert effects.changed_tables == ["order_items", "orders"]
    assert effects.denied == []
    assert env.evaluator_view().query("SELECT count(*) FROM orders") == [(3,)]


def test_exception_inside_the_transaction_rolls_back(env: SqliteEnvironment) -> None:
    before = env.state_hash()
    with pytest.raises(ValueError, match="tool bug"), env.tool_transaction() as effects:
        env.agent_db.execute("INSERT INTO orders VALUES ('o3', 1, 'pending')")
        raise ValueError("tool bug")
    assert env.state_hash() == before
    assert effects.changed_tables == []


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT number FROM payment_cards",
        "SELECT count(*) FROM payment_cards",
        "SELECT * FROM card_numbers",
    ],
)
def test_reading_a_hidden_table_is_denied(restricted: SqliteEnvironment, sql: str) -> None:
    before = restricted.state_hash()
    db = restricted.agent_db
    with (
        pytest.raises(PermissionDenied, match="read payment_cards") as denied,
        restricted.tool_transaction() as effects,
    ):
        db.execute("INSERT INTO orders VALUES ('o3', 1, 'pending')")
        db.execute(sql).fetchall()
    assert isinstance(denied.value.__cause__, sqlite3.DatabaseError)
    assert effects.denied == ["read payment_cards"]
    assert restricted.state_hash() == before


def test_writing_a_read_only_table_is_denied(restricted: SqliteEnvironment) -> None:
    before = restricted.state_hash()
    with (
        pytest.raises(PermissionDenied, match="write customers"),
        restricted.tool_transaction() as effects,
    ):
        restricted.agent_db.execute("UPDATE customers SET name = 'Eve'")
    assert effects.denied == ["write customers"]
    assert restricted.state_hash() == before
    assert restricted.evaluator_view().query("SELECT name FROM customers WHERE id = 1") == [
        ("Ada",)
    ]


def test_a_swallowed_denial_still_denies_the_whole_call(restricted: SqliteEnvironment) -> None:
    before = restricted.state_hash()
    denied = pytest.raises(PermissionDenied, match="write customers")
    with denied, restricted.tool_transaction() as effects:
        with pytest.raises(sqlite3.DatabaseError):
            restricted.agent_db.execute("DELETE FROM customers")
        restricted.agent_db.execute("INSERT INTO orders VALUES ('o3', 1, 'pending')")
    assert effects.denied == ["write customers"]
    assert effects.changed_tables == []
    assert restricted.state_hash() == before


@pytest.mark.parametrize(
    ("sql", "denial"),
    [
        ("UPDATE _groundstate_meta SET value = '2030-01-01'", "write _groundstate_meta"),
        ("UPDATE sqlite_sequence SET seq = 0", "write sqlite_sequence"),
        ("DROP TABLE orders", "drop table orders"),
        ("CREATE TABLE loot (x)", "create table loot"),
        ("ALTER TABLE orders ADD COLUMN x", "alter table orders"),
        ("ATTACH ':memory:' AS other", "attach :memory:"),
        ("PRAGMA foreign_keys = OFF", "pragma foreign_keys"),
        ("COMMIT", "transaction COMMIT"),
        ("DELETE FROM temp._gs_writes", "write _gs_writes"),
    ],
)
def test_the_agent_cannot_touch_the_harness_schema_or_transaction(
    env: SqliteEnvironment, sql: str, denial: str
) -> None:
    with env.tool_transaction():  # the harness's own BEGIN/COMMIT have now run on this connection
        pass
    before = env.state_hash()
    with pytest.raises(PermissionDenied) as denied, env.tool_transaction() as effects:
        env.agent_db.execute("INSERT INTO orders VALUES ('o3', 1, 'pending')")
        env.agent_db.execute(sql)
    assert effects.denied == [denial], denied.value
    assert env.state_hash() == before


def test_the_agent_may_introspect_the_schema(env: SqliteEnvironment) -> None:
    with env.tool_transaction() as effects:
        columns = env.agent_db.execute("SELECT name FROM pragma_table_info('orders')").fetchall()
        env.agent_db.execute("PRAGMA table_info(customers)").fetchall()
    assert columns == [("order_id",), ("customer_id",), ("status",)]
    assert effects.denied == []


# --- health --------------------------------------------------------------------------------


def test_health_reports_a_broken_database_and_reset_repairs_it(env: SqliteEnvironment) -> None:
    initial = env.state_hash()
    report = env.health()
    assert (report["ok"], report["integrity"], report["evaluator_readable"]) == (True, "ok", True)

    env.break_database()
    report = env.health()
    assert report["ok"] is False
    assert "not a database" in report["error"]
    with pytest.raises(EnvironmentFailure, match="not a database"):
        env.state_hash()

    assert env.reset() == initial
    assert env.health()["ok"] is True
