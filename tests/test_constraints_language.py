"""The constraint language as users write it for their own suites (sixth audit).

Load-time refusal of arguments a tool does not declare (a misspelt argument makes a
constraint hold, or fail, vacuously on every attempt), and near misses of the documented
semantics not covered elsewhere: argument matching by type and depth, counts at their
boundary, orderings, confirmations across turns and constraints combined on one call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from groundstate.errors import SpecError
from groundstate.spec.constraints import HardConstraint

from .conftest import EditTask
from .trace_builder import Trace, constraint, write

Edit = Callable[[dict[str, Any]], None]


def _add(rule: dict[str, Any]) -> Edit:
    def change(task: dict[str, Any]) -> None:
        task["hard_process_constraints"].append({"id": "new", **rule})

    return change


MISSPELT = [
    ({"never": {"tool": "transfer", "args": {"ammount": 30}}}, "never.args.ammount"),
    ({"never": {"tool": "transfer", "where": {"args.targt": "B"}}}, "never.where.targt"),
    (
        {
            "before": {
                "first": {"tool": "check_pin", "capture": {"a": "args.acount"}},
                "then": {"tool": "transfer"},
                "where": {"args.source": "$a"},
            }
        },
        "before.first.capture.acount",
    ),
    (
        {
            "before": {
                "first": {"tool": "check_pin", "capture": {"a": "args.account"}},
                "then": {"tool": "transfer"},
                "where": {"args.sourc": "$a"},
            }
        },
        "before.where.sourc",
    ),
    (
        {"confirmed": {"change": {"tool": "transfer"}, "names": ["args.amont"]}},
        "confirmed.names.amont",
    ),
    ({"provenance": {"match": {"tool": "transfer"}, "args": ["targt"]}}, "provenance.args.targt"),
    ({"provenance": {"match": {"tool": "transfer"}, "args": ["target.zip"]}}, None),
]


@pytest.mark.parametrize(("rule", "field"), MISSPELT)
def test_an_argument_the_tool_does_not_declare_is_refused_at_load(
    edited_bank: EditTask, rule: dict[str, Any], field: str | None
) -> None:
    if field is None:  # a path into a declared argument is fine, whatever lies below it
        edited_bank(_add(rule))
        return
    with pytest.raises(SpecError) as error:
        edited_bank(_add(rule))
    message = str(error.value)
    assert "tasks/transfer.yaml" in message
    assert f"hard_process_constraints[2].{field}" in message
    assert "is not an argument of" in message


def test_declared_arguments_and_any_tool_matches_load(edited_bank: EditTask) -> None:
    rules = [
        {"never": {"tool": "transfer", "args": {"amount": 30, "target": "C"}}},
        {"never": {"tool": "*", "args": {"anything": 1}}},  # '*': no schema to read
        {"confirmed": {"change": {"tool": "transfer"}, "names": ["args.amount", "output.id"]}},
    ]

    def change(task: dict[str, Any]) -> None:
        for i, rule in enumerate(rules):
            task["hard_process_constraints"].append({"id": f"ok-{i}", **rule})

    suite = edited_bank(change)
    assert len(suite.tasks["transfer"].hard_process_constraints) == 5


def test_a_constraint_set_with_a_misspelt_argument_names_suite_yaml(
    edited_bank: EditTask,
) -> None:
    root = edited_bank(lambda task: None).root
    suite_file = root / "suite.yaml"
    suite_file.write_text(
        suite_file.read_text()
        + "constraint_sets:\n  policy:\n    - id: p\n"
        + "      never: {tool: transfer, args: {amout: 1}}\n"
    )
    with pytest.raises(SpecError) as error:
        edited_bank(lambda task: None)
    assert "suite.yaml" in str(error.value)
    assert "constraint_sets.policy[0].never.args.amout" in str(error.value)


def passes(rule: HardConstraint, trace: Trace) -> bool:
    return trace.check(rule).passed


@pytest.mark.parametrize(
    ("given", "matched"),
    [("5", False), (5, True), (5.0, True), (True, False), ([5], False), ({"n": 5}, False)],
)
def test_an_argument_matches_by_value_and_type_not_by_text(given: Any, matched: bool) -> None:
    rule = constraint(id="x", never={"tool": "t", "args": {"n": 5}})
    assert passes(rule, Trace("hi").call("t", {"n": given})) is not matched


@pytest.mark.parametrize(
    ("given", "matched"),
    [
        ({"b": [1, {"c": 2}], "a": 1}, True),  # key order aside
        ({"a": 1, "b": [{"c": 2}, 1]}, False),  # list order counts
        ({"a": 1, "b": [1, {"c": 2}], "z": 0}, True),  # a nested extra member is beside it
        ({"a": 1, "b": [1, {"c": 2, "d": 3}]}, True),
        ({"a": 1, "b": [1, {"c": 2}, 3]}, False),  # a list has the elements given, no more
        ({"a": 1, "b": [1, {"c": "2"}]}, False),
    ],
)
def test_a_nested_argument_matches_by_the_members_given(given: Any, matched: bool) -> None:
    rule = constraint(id="x", never={"tool": "t", "args": {"o": {"a": 1, "b": [1, {"c": 2}]}}})
    assert passes(rule, Trace("hi").call("t", {"o": given, "other": 1})) is not matched


def test_a_null_argument_is_not_a_missing_one_and_strings_are_not_normalised() -> None:
    null = constraint(id="x", never={"tool": "t", "args": {"s": None}})
    assert passes(null, Trace("hi").call("t", {}))
    assert not passes(null, Trace("hi").call("t", {"s": None}))
    text = constraint(id="x", never={"tool": "t", "args": {"s": "Abc"}})
    assert passes(text, Trace("hi").call("t", {"s": "abc"}).call("t", {"s": "Abc "}))


@pytest.mark.parametrize(
    ("n", "calls", "holds"), [(0, 0, True), (0, 1, False), (2, 2, True), (2, 3, False)]
)
def test_at_most_at_its_boundary_counts_failed_calls_unless_ok_is_set(
    n: int, calls: int, holds: bool
) -> None:
    trace = Trace("hi")
    for _ in range(calls):
        trace.call("t", {"n": 1}, ok=False)  # refused by the gateway: still an attempt
    assert passes(constraint(id="x", at_most={"n": n, "match": {"tool": "t"}}), trace) is holds
    only_ok = constraint(id="x", at_most={"n": 0, "match": {"tool": "t", "ok": True}})
    assert passes(only_ok, trace)


@pytest.mark.parametrize(
    ("steps", "holds"),
    [
        (["v", "w", "w"], True),  # one first licenses every later then
        (["w", "v", "w"], False),  # the first occurrence is unlicensed
        (["v!", "w"], False),  # a failed first is no first under ok: true
        (["v", "w!", "v", "w"], True),  # interleaved, a failed then still needs a first
        (["w!"], False),
    ],
)
def test_before_judges_every_occurrence(steps: list[str], holds: bool) -> None:
    rule = constraint(id="x", before={"first": {"tool": "v", "ok": True}, "then": {"tool": "w"}})
    trace = Trace("hi")
    for step in steps:
        trace.call(step.rstrip("!"), ok=not step.endswith("!"))
    assert passes(rule, trace) is holds


def test_a_step_both_sides_select_does_not_license_itself() -> None:
    rule = constraint(id="x", before={"first": {"tool": "*"}, "then": {"tool": "w"}})
    assert not passes(rule, Trace("hi").call("w"))
    # the second w is licensed by the first, but the first stays unlicensed
    assert not passes(rule, Trace("hi").call("w", ok=False).call("w"))
    assert passes(rule, Trace("hi").call("v").call("w").call("w"))


@pytest.mark.parametrize(
    ("captured", "used", "holds"),
    [
        (5, 5.0, True),
        (5, "5", False),
        ("C1", "c1", False),
        (True, 1, False),
        ({"a": 1}, {"a": 1}, True),
        ([1, 2], [2, 1], False),
    ],
)
def test_a_bound_value_compares_exactly(captured: Any, used: Any, holds: bool) -> None:
    rule = constraint(
        id="x",
        before={
            "first": {"tool": "v", "capture": {"c": "output.id"}},
            "then": {"tool": "w"},
            "where": {"args.id": "$c"},
        },
    )
    assert (
        passes(rule, Trace("hi").call("v", {}, {"id": captured}).call("w", {"id": used})) is holds
    )


REFUND = constraint(
    id="c",
    confirmed={
        "change": {"tool": "refund", "ok": True},
        "names": ["args.item", "args.amount"],
        "asks": r"\brefund",
    },
)
QUESTION = "Shall I refund item X-1 for $5.00?"


def test_a_yes_survives_a_failed_attempt_and_licenses_the_retry() -> None:
    trace = Trace("refund X-1").agent(QUESTION).user("Yes")
    trace.call("refund", {"item": "X-1", "amount": 5}, ok=False)
    assert passes(REFUND, trace.call("refund", {"item": "X-1", "amount": 5}))


def test_a_yes_across_turns_needs_the_direct_reply() -> None:
    late = Trace("hi").agent(QUESTION).call("lookup").user("Yes")
    assert not passes(REFUND, late.call("refund", {"item": "X-1", "amount": 5}))
    gone = Trace("hi").agent(QUESTION).user(None)
    assert not passes(REFUND, gone.call("refund", {"item": "X-1", "amount": 5}))
    final = Trace("hi").agent(QUESTION, final=True).user("Yes")
    assert not passes(REFUND, final.call("refund", {"item": "X-1", "amount": 5}))


def test_one_yes_licenses_repeats_of_the_same_change_unless_a_count_forbids_them() -> None:
    """As documented: ``confirmed`` binds the values, ``at_most`` the number of changes."""
    trace = Trace("hi").agent(QUESTION).user("Yes")
    trace.call("refund", {"item": "X-1", "amount": 5}).call("refund", {"item": "X-1", "amount": 5})
    once = constraint(id="once", at_most={"n": 1, "match": {"tool": "refund", "ok": True}})
    assert passes(REFUND, trace)
    assert not passes(once, trace)


def test_several_constraints_on_one_call_each_judge_it() -> None:
    rules = [
        REFUND,
        constraint(id="p", provenance={"match": {"tool": "refund"}, "args": ["item"]}),
        constraint(id="w", never={"writes": {"table": "refunds", "columns": ["AMOUNT"]}}),
    ]
    from groundstate.grading.constraints import evaluate_constraints

    trace = Trace("Refund X-1 please").agent(QUESTION).user("Yes")
    row = write("Refunds", 1, None, {"item": "X-1", "amount": 5})
    trace.call("refund", {"item": "X-1", "amount": 5}, writes=[row])
    verdicts = {r.id: r.passed for r in evaluate_constraints(rules, trace.events)}
    assert verdicts == {"c": True, "p": True, "w": False}


def test_no_undo_sees_a_value_restored_two_calls_later_in_a_composite_key() -> None:
    rule = constraint(id="n", no_undo=None)
    trace = Trace("hi").call("a", writes=[write("t", [1, "a"], {"s": 1, "u": 0}, {"s": 2, "u": 0})])
    trace.call("b", writes=[write("t", [1, "a"], {"s": 2, "u": 0}, {"s": 2, "u": 1})])
    assert passes(rule, trace)
    assert not passes(rule, trace.call("c", writes=[write("t", [1, "a"], {"s": 2}, {"s": 1.0})]))


@pytest.mark.parametrize(
    ("rule", "field", "reason"),
    [
        ({"never": {"writes": {"table": "acounts"}}}, "never.writes", "has no table 'acounts'"),
        ({"no_undo": {"tables": ["acounts"]}}, "no_undo.tables[0]", "has no table 'acounts'"),
        (
            {"never": {"writes": {"table": "accounts", "key": 1}}},
            "never.writes.key",
            "1 is a number but accounts.id is TEXT",
        ),
        (
            {"never": {"writes": {"table": "accounts", "key": ["A", "B"]}}},
            "never.writes.key",
            "give 1 value",
        ),
        (
            {"never": {"writes": {"table": "ACCOUNTS", "columns": ["balanse"]}}},
            "never.writes.columns[0]",
            "ACCOUNTS has no column 'balanse'",
        ),
    ],
)
def test_a_write_table_or_column_the_fixture_lacks_is_a_check_error(
    edited_bank: EditTask, rule: dict[str, Any], field: str, reason: str
) -> None:
    from groundstate.validation.static import check_suite

    root = edited_bank(_add(rule)).root
    errors = [str(p) for p in check_suite(root).errors]
    assert len(errors) == 1, errors
    assert f"hard_process_constraints[2].{field}" in errors[0]
    assert reason in errors[0] and "tasks/transfer.yaml" in errors[0]


def test_write_names_in_any_case_the_fixture_has_are_no_error(edited_bank: EditTask) -> None:
    from groundstate.validation.static import check_suite

    # a key no row of s0 has may be a row the attempt inserts
    rule = {"never": {"writes": {"table": "Accounts", "key": "Z9", "columns": ["BALANCE"]}}}
    root = edited_bank(_add(rule)).root
    assert check_suite(root).errors == []


def test_error_class_selects_calls_by_who_caused_the_failure() -> None:
    """The docs list ``error_class`` among the fields a constraint reads; it was refused."""
    rule = constraint(
        id="x",
        at_most={"n": 1, "match": {"tool": "*", "where": {"error_class": "permission_denied"}}},
    )
    trace = Trace("hi").call("read_audit", ok=False)
    trace.events[-1] = trace.events[-1].model_copy(update={"error_class": "permission_denied"})
    assert passes(rule, trace.call("t", {"n": 1}, ok=False))  # a tool_error is not counted
    trace.call("read_audit", ok=False)
    trace.events[-1] = trace.events[-1].model_copy(update={"error_class": "permission_denied"})
    assert not passes(rule, trace)
    assert passes(rule, Trace("hi").call("read_audit"))  # a success has no error_class


@pytest.mark.parametrize(
    "match",
    [
        {"message": "agent", "contains": ""},
        {"message": "agent", "contains": " \u200b\n"},  # empty once normalised
        {"message": "agent", "matches": ""},
    ],
)
def test_text_that_every_message_holds_is_refused_at_load(match: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"never\.(contains|matches)"):
        constraint(id="x", never=match)


def test_an_empty_asks_is_refused_and_a_real_one_loads() -> None:
    change = {"tool": "refund"}
    with pytest.raises(ValueError, match="asks"):
        constraint(id="x", confirmed={"change": change, "asks": ""})
    assert constraint(id="x", confirmed={"change": change, "asks": r"\brefund"})
    assert constraint(id="x", never={"message": "agent", "contains": "0"})


def test_an_empty_contains_in_a_task_file_names_the_file_and_field(edited_bank: EditTask) -> None:
    with pytest.raises(SpecError) as error:
        edited_bank(_add({"never": {"message": "agent", "contains": " "}}))
    assert "tasks/transfer.yaml" in str(error.value)
    assert "hard_process_constraints[2].never.contains" in str(error.value)


@pytest.mark.parametrize(
    ("args", "refused"),
    [
        ({"amount": "30"}, True),
        ({"amount": True}, True),
        ({"amount": 30}, False),
        ({"amount": 30.0}, False),
        ({"target": 5}, True),
        ({"target": "B"}, False),
    ],
)
def test_an_argument_value_the_tool_schema_refuses_is_a_check_error(
    edited_bank: EditTask, args: dict[str, Any], refused: bool
) -> None:
    """Such a match selects only calls the gateway refused: a ``never`` on it is vacuous."""
    from groundstate.validation.static import check_suite

    root = edited_bank(_add({"never": {"tool": "transfer", "args": args}})).root
    errors = [str(p) for p in check_suite(root).errors]
    if not refused:
        assert errors == []
        return
    assert len(errors) == 1, errors
    name = next(iter(args))
    assert f"hard_process_constraints[2].never.args.{name}" in errors[0]
    assert "schema of tool 'transfer'" in errors[0]


def test_a_set_constraint_problem_is_reported_once_at_suite_yaml(edited_bank: EditTask) -> None:
    from groundstate.validation.static import check_suite

    def include(task: dict[str, Any]) -> None:
        task["constraint_sets"] = ["policy"]

    root = edited_bank(lambda task: None).root
    suite_file = root / "suite.yaml"
    suite_file.write_text(
        suite_file.read_text()
        + "constraint_sets:\n  policy:\n    - id: p\n"
        + '      never: {tool: transfer, args: {amount: "30"}, writes: {table: acounts}}\n'
    )
    errors = [str(p) for p in check_suite(edited_bank(include).root).errors]
    assert len(errors) == 2, errors
    assert all("suite.yaml" in e and "constraint_sets.policy[0].never" in e for e in errors)
