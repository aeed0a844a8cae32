"""Constraints on the write history: ``never: {writes: ...}`` and ``no_undo``.

Writes are built by hand here; ``test_write_history`` records them from a real environment.
"""

from __future__ import annotations

from groundstate.environments.base import RowWrite

from .trace_builder import Trace, constraint, write

ORDER = {"order_id": "O-1020", "status": "pending", "line1": "12 Elm St", "city": "Atlanta"}
MOVED = ORDER | {"line1": "48 Larch Ln"}
NEVER_ADDRESS = constraint(
    id="keep-address",
    never={"writes": {"table": "orders", "key": "O-1020", "columns": ["line1", "city"]}},
)
NO_UNDO = constraint(id="no-undo", no_undo=None)


def _changed_then_restored() -> Trace:
    trace = Trace("change my default address")
    trace.call("update_order_address", writes=[write("orders", "O-1020", ORDER, MOVED)])
    return trace.call("update_order_address", writes=[write("orders", "O-1020", MOVED, ORDER)])


def test_a_write_undone_later_still_breaks_never_writes() -> None:
    result = _changed_then_restored().check(NEVER_ADDRESS)
    assert not result.passed
    assert result.evidence["offending_step"]["step"] == 1
    assert result.evidence["steps"] == [1, 2]


def test_writes_to_other_rows_or_columns_pass_never_writes() -> None:
    other_row = write("orders", "O-1019", ORDER | {"order_id": "O-1019"}, MOVED)
    other_column = write("orders", "O-1020", ORDER, ORDER | {"status": "cancelled"})
    wrong_type_key = write("customers", "O-1020", ORDER, MOVED)
    trace = Trace("hi").call("x", writes=[other_row, other_column, wrong_type_key])
    assert trace.check(NEVER_ADDRESS).passed


def test_never_writes_sees_inserts_and_deletes_as_writing_every_column() -> None:
    assert (
        not Trace()
        .call("x", writes=[write("orders", "O-1020", None, ORDER)])
        .check(NEVER_ADDRESS)
        .passed
    )
    assert (
        not Trace()
        .call("x", writes=[write("orders", "O-1020", ORDER, None)])
        .check(NEVER_ADDRESS)
        .passed
    )


def test_writes_keys_compare_exactly_and_composite_keys_are_lists() -> None:
    rule = constraint(id="k", never={"writes": {"table": "items", "key": ["O-1", 2]}})
    row = {"order_id": "O-1", "line": 2, "qty": 1}
    hit = write("items", ["O-1", 2], row, row | {"qty": 3})
    near = write("items", ["O-1", "2"], row, row | {"qty": 3})
    assert not Trace().call("x", writes=[hit]).check(rule).passed
    assert Trace().call("x", writes=[near]).check(rule).passed


def test_a_write_set_back_fails_no_undo_with_both_steps() -> None:
    result = _changed_then_restored().check(NO_UNDO)
    assert not result.passed
    evidence = result.evidence
    assert evidence["offending_step"]["step"] == 2 and evidence["undone_step"]["step"] == 1
    assert (evidence["table"], evidence["key"], evidence["column"]) == ("orders", "O-1020", "line1")
    assert evidence["value"] == "12 Elm St"


def test_changing_a_value_twice_without_returning_passes_no_undo() -> None:
    third = MOVED | {"line1": "7 Oak Ave"}
    trace = Trace("hi")
    trace.call("a", writes=[write("orders", "O-1020", ORDER, MOVED)])
    trace.call("b", writes=[write("orders", "O-1020", MOVED, third)])
    assert trace.check(NO_UNDO).passed
    trace.call("c", writes=[write("orders", "O-1020", third, ORDER)])  # back to the first
    assert not trace.check(NO_UNDO).passed


def test_inserted_then_deleted_and_deleted_then_reinserted_fail_no_undo() -> None:
    credit = {"id": 7, "amount": 1000}
    added: list[RowWrite] = [write("credits", 7, None, credit)]
    removed: list[RowWrite] = [write("credits", 7, credit, None)]
    inserted_then_deleted = Trace().call("add", writes=added).call("remove", writes=removed)
    result = inserted_then_deleted.check(NO_UNDO)
    assert not result.passed and result.evidence["column"] is None
    assert "deletes row 7 of credits" in result.evidence["problems"][0]
    deleted_then_reinserted = Trace().call("remove", writes=removed).call("add", writes=added)
    result = deleted_then_reinserted.check(NO_UNDO)
    assert not result.passed and "re-inserts row 7" in result.evidence["problems"][0]


def test_no_undo_watches_only_the_listed_tables() -> None:
    only_credits = constraint(id="n", no_undo={"tables": ["credits"]})
    assert _changed_then_restored().check(only_credits).passed
    assert not _changed_then_restored().check(constraint(id="n", no_undo={"tables": []})).passed
