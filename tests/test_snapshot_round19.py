"""Nineteenth round: the copy of the initial snapshot a check asks for (``s0.snapshot()``) is
lent from check to check (``groundstate.copies.Lender``) only while no check edits or keeps it."""

from __future__ import annotations

import threading
import uuid
import weakref
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from groundstate.copies import Lender
from groundstate.environments.base import Snapshot, StateDiff
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.grading.outcome import States, within_limits
from tests.conftest import BLOCK

CLOCK = datetime(2024, 3, 1, 9, 30)
KEPT: list[Any] = []


@pytest.fixture
def env(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    """A fixture build of its own (a row no other test has): its lender starts empty."""
    fixture = tmp_path / "lent.sql"
    fixture.write_text(
        "CREATE TABLE items (id TEXT PRIMARY KEY, price REAL, blob BLOB, note);\n"
        "CREATE TABLE log (line TEXT);\n"
        "INSERT INTO items VALUES ('x', 1.0, x'00ff', 1), ('a', 2.5, NULL, 'one');\n"
        f"INSERT INTO log VALUES ('{uuid.uuid4()}'), ('second');\n",
        encoding="utf-8",
    )
    with SqliteEnvironment(fixture, clock=CLOCK) as environment:
        environment.reset()
        yield environment
    KEPT.clear()


def _typed(snapshot: Snapshot) -> list[Any]:
    """Everything a snapshot holds, in order, each value with its type (1 == 1.0 == True)."""
    return [
        (
            name,
            type(table),
            list(table.columns),
            list(table.key),
            sorted(table.model_fields_set),
            [(k, [(c, type(v), v) for c, v in row.items()]) for k, row in table.rows.items()],
        )
        for name, table in snapshot.tables.items()
    ] + [type(snapshot), sorted(snapshot.model_fields_set)]


def _run(env: SqliteEnvironment, *checks: Callable[[States], Any]) -> list[Any]:
    states = States(
        env.initial_view(), env.evaluator_view(), env.initial_snapshot(), StateDiff(), Path(".")
    )
    calls = [(check, BLOCK, f"check-{n}") for n, check in enumerate(checks)]
    return [returned.result() for returned in within_limits(calls, states)]


def _seen(into: list[Any]) -> Callable[[States], bool]:
    """A reading check: it notes the copy's identity and content, and keeps nothing."""

    def reads(states: States) -> bool:
        snapshot = states.s0.snapshot()
        into.append((id(snapshot), _typed(snapshot)))
        return True

    return reads


def test_reading_checks_share_one_copy_and_see_the_initial_state(env: SqliteEnvironment) -> None:
    seen: list[Any] = []
    _run(env, *[_seen(seen)] * 3)
    _run(env, _seen(seen))  # the next attempt's check too
    pristine = _typed(env.initial_snapshot())
    assert len({ident for ident, _ in seen}) == 1
    assert all(typed == pristine for _, typed in seen)


def _set_cell(s: Snapshot) -> None:
    s.tables["items"].rows['"x"']["price"] = 9.0


def _put_back_cell(s: Snapshot) -> None:
    row = s.tables["items"].rows['"x"']
    row["price"], row["price"] = 7.0, row["price"]


def _equal_other_object(s: Snapshot) -> None:
    row = s.tables["items"].rows['"x"']
    row["note"] = True  # 1 == True: an equal value of another type
    row["blob"] = bytes(row["blob"])  # an equal bytes, another object


def _pop_reinsert_row(s: Snapshot) -> None:
    rows = s.tables["items"].rows
    rows['"x"'] = rows.pop('"x"')  # the order changed, the content not


def _drop_table(s: Snapshot) -> None:
    del s.tables["log"]


def _add_row(s: Snapshot) -> None:
    s.tables["log"].rows["99"] = {"rowid": 99, "line": "added"}


def _replace_row(s: Snapshot) -> None:
    rows = s.tables["items"].rows
    rows['"a"'] = dict(rows['"a"'])


def _reverse_twice(s: Snapshot) -> None:
    s.tables["items"].columns.reverse()
    s.tables["items"].columns.reverse()


def _append_pop(s: Snapshot) -> None:
    s.tables["items"].key.append("x")
    s.tables["items"].key.pop()


def _field_set_back(s: Snapshot) -> None:
    table = s.tables["items"]
    columns = table.columns
    table.columns = ["other"]
    table.columns = columns


def _fields_set(s: Snapshot) -> None:
    s.tables["items"].model_fields_set.discard("rows")


def _fields_set_back(s: Snapshot) -> None:
    fields = s.tables["items"].model_fields_set
    fields.discard("rows")
    fields.add("rows")


def _attribute_deleted(s: Snapshot) -> None:
    del s.tables["items"].__dict__["key"]


def _swap_tables(s: Snapshot) -> None:
    s.tables = dict(s.tables)


def _class_swapped(s: Snapshot) -> None:
    class Other(Snapshot):
        pass

    object.__setattr__(s, "__class__", Other)


def _cleared(s: Snapshot) -> None:
    s.tables["log"].rows.clear()


EDITS = [
    _set_cell,
    _put_back_cell,
    _equal_other_object,
    _pop_reinsert_row,
    _drop_table,
    _add_row,
    _replace_row,
    _reverse_twice,
    _append_pop,
    _field_set_back,
    _fields_set,
    _fields_set_back,
    _attribute_deleted,
    _swap_tables,
    _class_swapped,
    _cleared,
]


@pytest.mark.parametrize("edit", EDITS, ids=[e.__name__ for e in EDITS])
def test_an_edit_to_a_checks_copy_never_reaches_the_next_check(
    env: SqliteEnvironment, edit: Callable[[Snapshot], None]
) -> None:
    seen: list[Any] = []
    edited: list[int] = []

    def edits(states: States) -> bool:
        snapshot = states.s0.snapshot()
        edited.append(id(snapshot))
        edit(snapshot)
        return True

    _run(env, _seen(seen), edits, _seen(seen), _seen(seen))
    _run(env, _seen(seen))  # the next attempt
    pristine = _typed(env.initial_snapshot())
    assert [typed for _, typed in seen] == [pristine] * 4
    assert seen[0][0] == edited[0]  # the reader's copy was lent to the editor


def _global(s: Snapshot) -> Callable[[], None]:
    KEPT.append(s)
    return lambda: s.tables["items"].rows.clear()


def _a_row(s: Snapshot) -> Callable[[], None]:
    row = s.tables["items"].rows['"x"']
    KEPT.append(row)
    return lambda: row.update(price=-1)


def _a_list(s: Snapshot) -> Callable[[], None]:
    columns = s.tables["items"].columns
    KEPT.append(columns)
    return lambda: columns.append("added")


def _an_iterator(s: Snapshot) -> Callable[[], None]:
    rows = iter(s.tables["items"].rows.values())
    KEPT.append(rows)
    return lambda: next(rows).clear()


def _a_bound_method(s: Snapshot) -> Callable[[], None]:
    add = s.tables["items"].rows.setdefault
    KEPT.append(add)
    return lambda: add("new", {})


def _a_weak_reference(s: Snapshot) -> Callable[[], None]:
    table = weakref.ref(s.tables["items"])
    KEPT.append(table)
    # Dead once the copy is dropped (it was not lent on); it would live in a lent copy.
    return lambda: table() is None or setattr(table(), "key", ["changed"])


def _fields(s: Snapshot) -> Callable[[], None]:
    fields = s.tables["log"].model_fields_set
    KEPT.append(fields)
    return lambda: fields.clear()


def _a_closure(s: Snapshot) -> Callable[[], None]:
    def later() -> None:
        s.tables["log"].rows.clear()

    return later


KEEPS = [_global, _a_row, _a_list, _an_iterator, _a_bound_method, _a_weak_reference, _fields]
KEEPS.append(_a_closure)


@pytest.mark.parametrize("keep", KEEPS, ids=[k.__name__ for k in KEEPS])
def test_a_check_keeping_a_reference_makes_the_next_get_a_copy_of_its_own(
    env: SqliteEnvironment, keep: Callable[[Snapshot], Callable[[], None]]
) -> None:
    """What the first check kept is edited after the second got its copy: not in it."""
    later: list[Snapshot] = []
    edits: list[Callable[[], None]] = []

    def keeps(states: States) -> bool:
        edits.append(keep(states.s0.snapshot()))
        return True

    def reads(states: States) -> bool:
        later.append(states.s0.snapshot())
        return True

    _run(env, keeps, reads)
    edits[0]()
    assert _typed(later[0]) == _typed(env.initial_snapshot())


def test_a_thread_a_check_left_edits_only_its_own_copy(env: SqliteEnvironment) -> None:
    go, done = threading.Event(), threading.Event()
    later: list[Snapshot] = []

    def leaves_a_thread(states: States) -> bool:
        snapshot = states.s0.snapshot()

        def edit() -> None:
            go.wait(BLOCK)
            snapshot.tables["items"].rows.clear()
            done.set()

        threading.Thread(target=edit, daemon=True).start()
        return True

    def keeps(states: States) -> bool:
        later.append(states.s0.snapshot())
        return True

    try:
        _run(env, leaves_a_thread, keeps)
    finally:
        go.set()
        assert done.wait(BLOCK)
    assert _typed(later[0]) == _typed(env.initial_snapshot())


def test_the_return_value_and_a_raising_check_keep_their_copies(env: SqliteEnvironment) -> None:
    mine: list[int] = []
    seen: list[Any] = []

    def returns_it(states: States) -> Snapshot:
        snapshot = states.s0.snapshot()
        mine.append(id(snapshot))
        return snapshot

    def raises(states: States) -> None:
        snapshot = states.s0.snapshot()
        mine.append(id(snapshot))
        raise ValueError(snapshot.tables["items"].rows.clear())

    results = within_limits(
        [(returns_it, BLOCK, "a"), (raises, BLOCK, "b"), (_seen(seen), BLOCK, "c")],
        States(
            env.initial_view(), env.evaluator_view(), env.initial_snapshot(), StateDiff(), Path(".")
        ),
    )
    returned = results[0].result()
    with pytest.raises(ValueError):
        results[1].result()
    assert seen[0][0] not in mine and mine[0] != mine[1]
    assert seen[0][1] == _typed(env.initial_snapshot()) == _typed(returned)


def test_two_snapshots_in_one_check_are_copies_of_their_own(env: SqliteEnvironment) -> None:
    def compares(states: States) -> bool:
        first, second = states.s0.snapshot(), states.s0.snapshot()
        first.tables["items"].rows.clear()
        return first is not second and len(second.tables["items"].rows) == 2

    assert _run(env, compares, compares) == [True, True]


def test_a_lender_whose_callers_edit_stops_guarding_and_still_copies() -> None:
    made: list[dict[str, list[int]]] = []

    def fresh() -> dict[str, list[int]]:
        made.append({"a": [1, 2]})
        return made[-1]

    lender = Lender(fresh)
    loans = []
    for _ in range(20):
        value, loan = lender.lend()
        assert value == {"a": [1, 2]}
        value["a"].append(3)  # every caller edits its copy
        del value
        loans.append(loan is not None)
        if loan is not None:
            loan.settle()
    assert len(made) == 20 and loans[0] and not loans[-1]  # a fresh copy each, unguarded


def test_a_lender_lends_one_copy_to_readers_and_bytes_are_watched() -> None:
    lender = Lender(lambda: {"blob": b"\x00", "rows": [{"k": 1}]})
    value, loan = lender.lend()
    first = id(value)
    del value
    assert loan is not None
    loan.settle()
    again, loan = lender.lend()
    assert id(again) == first and loan is not None


def _lenders_in_a_forked_child() -> int:
    import os

    from groundstate.environments import sqlite

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report how many lenders it inherited, then leave at once
        os.write(write, str(len(sqlite._SNAPSHOT_COPIES)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as answer:
        return int(answer.read())


def test_a_forked_child_starts_with_lenders_of_its_own(env: SqliteEnvironment) -> None:
    from groundstate.environments import sqlite

    _run(env, _seen([]))
    assert sqlite._SNAPSHOT_COPIES  # this process lends
    assert _lenders_in_a_forked_child() == 0
