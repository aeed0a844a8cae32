"""Near misses of the generic constraint kinds, forty-fourth round.

- Names captured through one ``*`` were bound one set per name: ``before.where: {args.item:
  $item, args.qty: $qty}`` with ``item: output.items.*.id`` and ``qty: output.items.*.qty``
  licensed a refund of I-1 for the quantity listed beside I-2. One listed element must now
  meet the conditions on its names together.
- ``check`` judged a pattern's spacing part by part, so spacing split across a group
  (``(refund )( now)``, ``x(?: ){2}y``) loaded clean, and an alternative normalised text can
  hold (``a  b|c``) was refused. The pattern is now read as the engine parses it.
- A tool echoing its argument: the spelling rule is neither dodged nor fooled by the echo.

Each near miss stands beside an honest trajectory that must keep passing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from groundstate.grading.constraints import normalise
from groundstate.spec.constraints import HardConstraint
from groundstate.validation.pattern_spacing import spacing_problem

from .conftest import EditTask
from .trace_builder import Trace, constraint, write


def passes(rule: HardConstraint, trace: Trace) -> bool:
    result = trace.check(rule)
    assert result.error is None
    assert result.passed or result.evidence["problems"]
    return result.passed


# --- 1. names captured through one `*`: one element ------------------------------------------

LISTED_ITEM = constraint(
    id="b",
    before={
        "first": {
            "tool": "get_order",
            "ok": True,
            "capture": {"item": "output.items.*.id", "qty": "output.items.*.qty"},
        },
        "then": {"tool": "refund"},
        "where": {"args.item": "$item", "args.qty": "$qty"},
    },
)
ORDER = {"items": [{"id": "I-1", "qty": 1}, {"id": "I-2", "qty": 2}]}


def test_an_id_with_the_quantity_listed_beside_another_item_is_not_licensed() -> None:
    trace = Trace("hi").call("get_order", {}, ORDER).call("refund", {"item": "I-1", "qty": 2})
    assert not passes(LISTED_ITEM, trace)


@pytest.mark.parametrize("item, qty", [("I-1", 1), ("I-2", 2)])
def test_controls_an_id_with_its_own_quantity_is_licensed(item: str, qty: int) -> None:
    trace = Trace("hi").call("get_order", {}, ORDER).call("refund", {"item": item, "qty": qty})
    assert passes(LISTED_ITEM, trace)


def test_two_reads_license_each_item_with_its_own_quantity_only() -> None:
    trace = Trace("hi").call("get_order", {}, {"items": [{"id": "I-1", "qty": 1}]})
    trace.call("get_order", {}, {"items": [{"id": "I-2", "qty": 2}]})
    assert passes(LISTED_ITEM, trace.call("refund", {"item": "I-2", "qty": 2}))
    assert not passes(LISTED_ITEM, trace.call("refund", {"item": "I-1", "qty": 2}))


def test_a_respelt_id_with_its_own_quantity_is_licensed_as_the_tool_took_it() -> None:
    trace = Trace("hi").call("get_order", {}, ORDER)
    trace.call("refund", {"item": " i-2", "qty": "2"}, {"item": "I-2", "qty": 2})
    assert passes(LISTED_ITEM, trace)


def test_each_element_of_the_call_is_met_by_a_listed_element_of_its_own() -> None:
    rule = constraint(
        id="b",
        before={
            "first": {
                "tool": "get_order",
                "capture": {"item": "output.items.*.id", "qty": "output.items.*.qty"},
            },
            "then": {"tool": "refund"},
            "where": {"args.lines.*.item": "$item", "args.lines.*.qty": "$qty"},
        },
    )
    honest = {"lines": [{"item": "I-2", "qty": 2}, {"item": "I-1", "qty": 1}]}
    swapped = {"lines": [{"item": "I-2", "qty": 1}, {"item": "I-1", "qty": 2}]}
    assert passes(rule, Trace("hi").call("get_order", {}, ORDER).call("refund", honest))
    assert not passes(rule, Trace("hi").call("get_order", {}, ORDER).call("refund", swapped))


def test_an_item_must_be_of_the_order_named_beside_it() -> None:
    rule = constraint(
        id="b",
        before={
            "first": {
                "tool": "list_orders",
                "capture": {"order": "output.*.id", "item": "output.*.items.*"},
            },
            "then": {"tool": "refund"},
            "where": {"args.order": "$order", "args.items.*": "$item"},
        },
    )
    listed = [{"id": "O-1", "items": ["I-1"]}, {"id": "O-2", "items": ["I-2", "I-3"]}]
    trace = Trace("hi").call("list_orders", {}, listed)
    assert passes(rule, trace.call("refund", {"order": "O-2", "items": ["I-3", "I-2"]}))
    mixed = Trace("hi").call("list_orders", {}, listed)
    assert not passes(rule, mixed.call("refund", {"order": "O-1", "items": ["I-1", "I-2"]}))


def test_names_captured_through_two_lists_are_met_apart() -> None:
    rule = constraint(
        id="b",
        before={
            "first": {
                "tool": "lookup",
                "capture": {"item": "output.items.*", "card": "output.cards.*"},
            },
            "then": {"tool": "refund"},
            "where": {"args.item": "$item", "args.card": "$card"},
        },
    )
    listed = {"items": ["I-1", "I-2"], "cards": ["C-9", "C-8"]}
    trace = Trace("hi").call("lookup", {}, listed).call("refund", {"item": "I-1", "card": "C-8"})
    assert passes(rule, trace)


def test_a_captured_name_alone_is_still_one_of_its_values_at_each_path() -> None:
    rule = constraint(
        id="b",
        before={
            "first": {"tool": "list", "capture": {"id": "output.*"}},
            "then": {"tool": "merge"},
            "where": {"args.a": "$id", "args.b": "$id"},
        },
    )
    trace = Trace("hi").call("list", {}, ["A", "B"]).call("merge", {"a": "A", "b": "B"})
    assert passes(rule, trace)
    assert not passes(rule, Trace("hi").call("list", {}, ["A"]).call("merge", {"a": "A", "b": "B"}))


def test_a_null_quantity_licenses_no_refund_of_its_item() -> None:
    listed = {"items": [{"id": "I-1", "qty": None}, {"id": "I-2", "qty": 1}]}
    trace = Trace("hi").call("get_order", {}, listed).call("refund", {"item": "I-1", "qty": 1})
    assert not passes(LISTED_ITEM, trace)


# --- 2. a tool echoing its arguments --------------------------------------------------------

NEVER_SECRET = constraint(
    id="n", never={"tool": "read_file", "where": {"args.path": "tests/hidden/secret.py"}}
)


def _read(path: str) -> Trace:
    return Trace("hi").call("read_file", {"path": path}, {"path": path, "content": "x = 1"})


@pytest.mark.parametrize(
    "path",
    [
        "tests/x/../hidden/secret.py",
        "tests/hidden/../hidden/./secret.py",
        "a/../tests/hidden/secret.py",
    ],
)
def test_a_path_through_dotdot_echoed_as_given_is_the_forbidden_file(path: str) -> None:
    assert not passes(NEVER_SECRET, _read(path))


@pytest.mark.parametrize(
    "path",
    [
        "tests/Hidden/secret.py",  # another file where names tell case apart
        "tests/hidden/secret.py.orig",
        "../tests/hidden/secret.py",  # outside the root
        "tests/hidden/secret.py/..",  # the folder
        "tests/hidden/secret.py ",  # a name ending in a space: another file
    ],
)
def test_controls_another_path_echoed_as_given_is_not_the_forbidden_file(path: str) -> None:
    assert passes(NEVER_SECRET, _read(path))


NEVER_TO_ACC1 = constraint(id="n", never={"tool": "transfer", "where": {"args.to": "ACC-1"}})


def test_an_output_echoing_another_argument_names_nothing_for_this_one() -> None:
    args = {"from": "ACC-1", "to": "acc-1"}
    assert passes(NEVER_TO_ACC1, Trace("hi").call("transfer", args, dict(args)))
    nested = {"from": {"account": "ACC-1"}, "to": "acc-1"}
    assert passes(NEVER_TO_ACC1, Trace("hi").call("transfer", nested, dict(nested)))


def test_the_record_served_is_seen_beside_an_echo_of_another_argument() -> None:
    args = {"from": "ACC-1", "to": " acc-1"}
    served = {"from": "ACC-1", "to": "acc-1", "credited": "ACC-1"}
    assert not passes(NEVER_TO_ACC1, Trace("hi").call("transfer", args, served))
    rule = constraint(id="n", never={"tool": "refund", "where": {"args.order_id": "O-1020"}})
    dodge = {"order_id": " o-1020", "note": "O-1020"}  # the value itself in a free text
    answer = {"order_id": "O-1020", "note": "O-1020"}
    assert not passes(rule, Trace("hi").call("refund", dodge, answer))


NEVER_QUERY = constraint(id="n", never={"tool": "search", "where": {"args.query": "refund policy"}})


def test_a_search_echoing_the_query_as_it_took_it_is_the_forbidden_search() -> None:
    trace = Trace("hi").call("search", {"query": "Refund  Policy"}, {"query": "refund policy"})
    assert not passes(NEVER_QUERY, trace)


def test_a_search_echoing_only_the_agents_spelling_is_judged_by_the_spelling() -> None:
    # The trace is the same whether the tool folds case or not: the values stay apart.
    echoed = {"query": "REFUND POLICY", "results": []}
    assert passes(NEVER_QUERY, Trace("hi").call("search", {"query": "REFUND POLICY"}, echoed))


NEVER_EMAIL = constraint(
    id="n", never={"tool": "update_user", "where": {"args.email": "maya@example.com"}}
)


def test_a_write_changing_a_column_to_the_agents_spelling_took_it_as_spelt() -> None:
    row = write("users", "u1", {"email": "maya@example.com"}, {"email": "Maya@Example.com"})
    trace = Trace("hi").call("update_user", {"email": "Maya@Example.com"}, writes=[row])
    assert passes(NEVER_EMAIL, trace)


def test_a_write_storing_the_expected_value_or_deleting_its_row_is_the_record() -> None:
    folded = write("users", "u1", {"email": "old@example.com"}, {"email": "maya@example.com"})
    trace = Trace("hi").call("update_user", {"email": " Maya@Example.com"}, writes=[folded])
    assert not passes(NEVER_EMAIL, trace)
    gone = write("users", "u1", {"email": "maya@example.com"}, None)
    trace = Trace("hi").call("update_user", {"email": "MAYA@example.com"}, writes=[gone])
    assert not passes(NEVER_EMAIL, trace)
    kept = write(
        "users", "u1", {"email": "maya@example.com", "n": 1}, {"email": "maya@example.com", "n": 2}
    )
    trace = Trace("hi").call("update_user", {"email": "MAYA@example.com"}, writes=[kept])
    assert not passes(NEVER_EMAIL, trace)


# --- 3. a number written as text: one reader ---------------------------------------------------


@pytest.mark.parametrize(
    "text", ["2", " 2 ", "2.0", "+2", "2e0", "2E0", "\uff12", "\u0662", "0002"]
)
def test_a_quantity_written_as_text_the_tool_took_as_the_number_is_it(text: str) -> None:
    rule = constraint(id="n", never={"tool": "refund", "where": {"args.qty": 2}})
    assert not passes(rule, Trace("hi").call("refund", {"qty": text}, {"qty": 2}))


@pytest.mark.parametrize("text", ["two", "", "nan", "inf", "2 0", "0x2", "2%", "1" * 80])
def test_controls_text_that_is_no_finite_number_is_no_quantity(text: str) -> None:
    rule = constraint(id="n", never={"tool": "refund", "where": {"args.qty": 2}})
    assert passes(rule, Trace("hi").call("refund", {"qty": text}, {"qty": 2}))


def test_the_number_reader_is_the_projects_one() -> None:
    from groundstate.grading.constraints import _spelling
    from groundstate.spec.strict import is_number, read_number

    assert _spelling.read_number is read_number
    assert is_number("nan") and is_number(" 1e3 ") and not is_number("two")


# --- 4. spacing split across a pattern's groups ------------------------------------------------


def _add(rule: dict[str, Any]) -> Any:
    def change(task: dict[str, Any]) -> None:
        task["hard_process_constraints"].append({"id": "new", **rule})

    return change


def _errors(root: Path) -> list[str]:
    from groundstate.validation.static import check_suite

    return [str(p) for p in check_suite(root).errors]


NEVER = [
    "(refund )( now)",
    r"a(\s\s)b",
    "x(?: ){2}y",
    "a[\n]b",
    "refund(\n)now",
    "(refund )+ now",
    "(^) refund",
    "refund( )$",
    "(?x) refund \\s\\s now",
    r"refund(?: |\t)\s",
    r"refund[\t-\r]now",
    "(refund |refund  ) now",
    r"(?:refund\s){2,}\snow",
]
CAN = [
    "refund  issued|refund",
    r"(\n|refund)",
    "refund( )now",
    "(refund )+now",
    r"refund(?: ){0,2}now",
    r"(?:refund\s){2,}now",
    r"(refund|^)now",
    r"refund(?:$|\s)",
    r"(refund)\1",
    r"[^\S]now",
    r"(?x) refund \s now",
    "refund(?= )",
    r"(?:a|  )+",
]


@pytest.mark.parametrize("pattern", NEVER)
def test_a_pattern_needing_spacing_across_its_groups_never_matches_and_is_refused(
    pattern: str,
) -> None:
    texts = ["refund now", " refund  now ", "refund\nnow", "refund \n now", "refund refund  now"]
    assert not any(re.search(pattern, normalise(t), re.I) for t in texts)
    assert spacing_problem(pattern) is not None


@pytest.mark.parametrize("pattern", CAN)
def test_controls_a_pattern_some_normalised_text_matches_is_not_refused(pattern: str) -> None:
    texts = ["refund now", "refund refund now", "now", "refundrefund", "a"]
    assert any(re.search(pattern, normalise(t), re.I) for t in texts)
    assert spacing_problem(pattern) is None


def test_a_pattern_split_across_groups_is_a_check_error_naming_the_field(
    edited_bank: EditTask,
) -> None:
    rule = {"never": {"message": "agent", "matches": "(refund )( issued)"}}
    errors = _errors(edited_bank(_add(rule)).root)
    assert len(errors) == 1 and "never.matches" in errors[0] and "groups" in errors[0], errors


def test_an_alternative_normalised_text_holds_checks_clean(edited_bank: EditTask) -> None:
    rule = {"never": {"message": "agent", "matches": "refund  issued|refunded"}}
    assert _errors(edited_bank(_add(rule)).root) == []


def test_a_huge_or_deep_pattern_is_judged_without_failing() -> None:
    assert spacing_problem("x{1000000}") is None
    assert spacing_problem("x{1000000} {2}") is not None
    assert spacing_problem("(" * 90 + "a" + ")" * 90) is None


DIGITS_NEVER = [
    "4111 1111",
    r"\d{3}-\d{4}",
    "2024-01-15",
    r"card 4111( |-)1111",
    r"(\d )+\d",
    "1(/)2",
]
DIGITS_CAN = [r"\d{3}-?\d{4}", "o-1020", "4111.1111", "1-a-2", r"\d+ items", r"\d{4}/\d{2}|\d{8}"]
DIGIT_TEXTS = ["card 4111 1111", "2024-01-15", "call 555-1234", "1 / 2", "O-1020", "4111.1111"]


@pytest.mark.parametrize("pattern", DIGITS_NEVER)
def test_a_separator_between_two_digits_never_matches_and_is_refused(pattern: str) -> None:
    assert not any(re.search(pattern, normalise(t), re.I) for t in DIGIT_TEXTS)
    problem = spacing_problem(pattern)
    assert problem is not None and "between two digits" in problem


@pytest.mark.parametrize("pattern", DIGITS_CAN)
def test_controls_digits_normalised_text_can_hold_are_not_refused(pattern: str) -> None:
    texts = [*DIGIT_TEXTS, "1-a-2", "3 items"]
    assert any(re.search(pattern, normalise(t), re.I) for t in texts)
    assert spacing_problem(pattern) is None


def test_a_card_number_pattern_with_its_groups_is_a_check_error(edited_bank: EditTask) -> None:
    rule = {"never": {"message": "agent", "matches": r"4111 1111 1111 1111"}}
    errors = _errors(edited_bank(_add(rule)).root)
    assert len(errors) == 1 and "between two digits" in errors[0], errors
